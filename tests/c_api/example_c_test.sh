#!/usr/bin/env bash
# Runs the C API example (examples/c/run_model.c) on a model and checks what it prints: the model's
# input and output, the first output's shape and values (a softmax: they sum to 1), the placement
# report; and, on a missing file, onyx's message with exit status 1.
# Usage: example_c_test.sh EXAMPLE MODEL (MODEL: examples/models/tiny_cnn.onnx)
set -euo pipefail
EXAMPLE=$1
MODEL=$2
ERR=$(mktemp)
trap 'rm -f "$ERR"' EXIT
out=$("$EXAMPLE" "$MODEL")
echo "$out"
expect() {
  grep -Eq -- "$1" <<<"$out" || { echo "FAIL: no line matching '$1'"; exit 1; }
}
expect '^onyx [0-9]+\.[0-9]+\.[0-9]+, C API version [0-9]+$'
expect '^input +image +float\[batch,3,32,32\]$'
expect '^output +probabilities +float\[batch,10\]$'
expect '^result probabilities float\[1,10\]:( [0-9]\.[0-9]{5}){5} \.\.\.$'
expect '^result sum 1\.0000$'
expect '^placement: cpu: [0-9]+ nodes'
expect '^node .*Conv +on cpu$'
if grep -E '^node ' <<<"$out" | grep -vq ' on cpu$'; then
  echo "FAIL: a node not on the CPU EP"; exit 1
fi
echo "ok   example output"

missing=$(dirname "$MODEL")/no_such_model.onnx
if "$EXAMPLE" "$missing" >/dev/null 2>"$ERR"; then
  echo "FAIL: the example succeeded on a missing file"; exit 1
fi
grep -q "^error: IoError: .*no_such_model.onnx" "$ERR" || { echo "FAIL: missing-file message: $(cat "$ERR")"; exit 1; }
echo "ok   a missing model gives onyx's message and exit status 1"
