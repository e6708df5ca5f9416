#!/usr/bin/env bash
# Session creation with and without the OpenVINO EP's compiled-model cache (option cache_dir):
# `onyx explain MODEL --ep openvino` (loads the model, makes the session, compiles its regions)
# timed RUNS times each way; prints the medians. The cache is filled by one untimed run first.
# Usage: bench/openvino_cache_bench.sh ONYX_BINARY RUNS MODEL...
set -euo pipefail
ONYX=$1
RUNS=$2
shift 2
CACHE=$(mktemp -d)
trap 'rm -rf "$CACHE"' EXIT
median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
timed() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null; t1=$(date +%s.%N); echo "$t1 - $t0" | bc; }
printf '| model | cpu EP only (s) | openvino, no cache (s) | openvino, cached (s) | cached / no cache |\n|---|---|---|---|---|\n'
for m in "$@"; do
  "$ONYX" explain "$m" --ep openvino --ep-option "openvino.cache_dir=$CACHE" >/dev/null  # fills the cache
  cpu=$(for _ in $(seq "$RUNS"); do timed "$ONYX" explain "$m"; done | median)
  cold=$(for _ in $(seq "$RUNS"); do timed "$ONYX" explain "$m" --ep openvino; done | median)
  warm=$(for _ in $(seq "$RUNS"); do timed "$ONYX" explain "$m" --ep openvino --ep-option "openvino.cache_dir=$CACHE"; done | median)
  printf '| %s | %.2f | %.2f | %.2f | %.2f |\n' "$(basename "$(dirname "$m")")" "$cpu" "$cold" "$warm" "$(echo "$warm / $cold" | bc -l)"
done
