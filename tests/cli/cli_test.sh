#!/usr/bin/env bash
# CLI contract: exit codes, error messages, --json shapes. Usage: cli_test.sh ONYX_BINARY REPO_DIR
set -u
ONYX=$1
REPO=$2
MODEL=$REPO/examples/models/tiny_normalize.onnx
DATA=$REPO/examples/models/tiny_normalize_test_data
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0

check() {  # check NAME EXPECTED_RC PATTERN CMD...
  local name=$1 want=$2 pattern=$3
  shift 3
  "$@" >"$TMP/out" 2>"$TMP/err"
  local rc=$?
  if [ "$rc" -ne "$want" ]; then
    echo "FAIL $name: exit $rc, expected $want"; cat "$TMP/err"; failures=$((failures + 1)); return
  fi
  if [ -n "$pattern" ] && ! grep -qE -- "$pattern" "$TMP/out" "$TMP/err"; then
    echo "FAIL $name: output does not match /$pattern/"; cat "$TMP/out" "$TMP/err"; failures=$((failures + 1)); return
  fi
  echo "ok   $name"
}

check_absent() {  # check_absent NAME PATTERN CMD...: exit 0 and no line of stdout or stderr matches
  local name=$1 pattern=$2
  shift 2
  "$@" >"$TMP/out" 2>"$TMP/err"
  local rc=$?
  if [ "$rc" -ne 0 ]; then echo "FAIL $name: exit $rc"; cat "$TMP/err"; failures=$((failures + 1)); return; fi
  if grep -qE -- "$pattern" "$TMP/out" "$TMP/err"; then
    echo "FAIL $name: output matches /$pattern/"; grep -E -- "$pattern" "$TMP/out" "$TMP/err"; failures=$((failures + 1)); return
  fi
  echo "ok   $name"
}

check info 0 "tiny_normalize|inputs" "$ONYX" info "$MODEL"
check info-json 0 '"inputs":\[\{"name":"x"' "$ONYX" info "$MODEL" --json
check run-inputs 0 "outputs:" "$ONYX" run "$MODEL" --inputs "$DATA" --save "$TMP/saved"
[ -f "$TMP/saved/output_0.pb" ] && echo "ok   run-save" || { echo "FAIL run-save: no output_0.pb"; failures=$((failures + 1)); }
check run-random-dim 0 "float\[6,3\]" "$ONYX" run "$MODEL" --dim batch=3
check run-runs 0 '"runs":5' "$ONYX" run "$MODEL" --inputs "$DATA" --runs 5 --json
# The model as onyx runs it, written after the optimizer, runs again (as onyx's own ONNX file).
check run-save-optimized 0 "outputs:" "$ONYX" run "$MODEL" --inputs "$DATA" --save-optimized "$TMP/optimized.onnx"
check run-optimized 0 "outputs:" "$ONYX" run "$TMP/optimized.onnx" --inputs "$DATA"
check run-save-optimized-unwritable 1 "cannot write the optimized model" "$ONYX" run "$MODEL" --save-optimized "$TMP/no/such/dir.onnx"
# Maps: ZipMap's sequence of maps in the summary, in --json, saved and read back as an input of
# the same type would be (a SequenceProto of MapProtos).
CLS=$REPO/examples/models/tiny_classifier.onnx
check run-zipmap 0 "map\(string, float\) of 3 \{'cat': " "$ONYX" run "$CLS"
check run-zipmap-json 0 '"name":"probabilities","summary":"sequence of 1 maps.*","kind":"sequence_of_maps"' "$ONYX" run "$CLS" --json
check run-zipmap-save 0 "outputs:" "$ONYX" run "$CLS" --save "$TMP/zip"
check info-map-kind 0 '"name":"probabilities","type":"seq\(map\(string, float\)\)"' "$ONYX" info "$CLS" --json
check run-once 0 "latency: .* ms \(first run" "$ONYX" run "$MODEL" --inputs "$DATA" --runs 1
check run-runs-bad 1 "--runs must be between 1" "$ONYX" run "$MODEL" --runs 0
check bench-json 0 '"median_ms":.*"p90_ms":.*"min_ms":.*"load_ms":.*"peak_rss_mb":' "$ONYX" bench "$MODEL" --runs 5 --warmup 1 --json

# --runs N: the runs after the first are summarised as what they are (not "second run" unless N = 2).
check run-runs-two 0 "ms first run .*, [0-9.]+ ms second run$" "$ONYX" run "$MODEL" --inputs "$DATA"
check run-runs-five 0 "ms first run .*, [0-9.]+ ms median of the 4 runs after it \(min [0-9.]+ ms\)$" "$ONYX" run "$MODEL" --inputs "$DATA" --runs 5
check_absent run-runs-five-wording "second run" "$ONYX" run "$MODEL" --inputs "$DATA" --runs 5
check run-runs-five-json 0 '"second_run_ms":[0-9.e-]+,"later_runs_median_ms":[0-9.e-]+,"runs":5' "$ONYX" run "$MODEL" --inputs "$DATA" --runs 5 --json

# --dim: NAME=N for a named dim, INPUT:AXIS=N for any dim of one input (unnamed_dim.onnx: x is
# float[batch,?,4]); an unknown name or input is an error listing the known ones.
UNNAMED=$REPO/tests/cli/data/unnamed_dim.onnx
check dim-unnamed 0 "x +float\[2,5,4\]" "$ONYX" run "$UNNAMED" --dim x:1=5 --dim batch=2
check dim-unnamed-json 0 '"shape":\[1,7,4\]' "$ONYX" run "$UNNAMED" --dim x:1=7 --json
check dim-named-axis 0 "x +float\[3,1,4\]" "$ONYX" run "$UNNAMED" --dim x:0=3 --dim x:1=1
check dim-unknown-name 1 "--dim nope=3: no input of the model has a dim named 'nope' \(named dims: batch; inputs: x float\[batch,\?,4\]" \
  "$ONYX" run "$UNNAMED" --dim nope=3
check dim-unknown-name-bench 1 "no input of the model has a dim named 'btach' \(named dims: batch;" "$ONYX" bench "$MODEL" --dim btach=2 --runs 1
check dim-unknown-name-explain 1 "no input of the model has a dim named 'btach'" "$ONYX" explain "$MODEL" --dim btach=2
check dim-unknown-input 1 "--dim q:1=2: the model has no input named 'q' \(inputs: x float\[batch,\?,4\]\)" "$ONYX" run "$UNNAMED" --dim q:1=2
check dim-fixed 1 "dim 2 of input 'x' \(float\[batch,\?,4\]\) is fixed at 4 by the model" "$ONYX" run "$UNNAMED" --dim x:2=5
check dim-rank 1 "input 'x' \(float\[batch,\?,4\]\) has rank 3 \(axes 0 to 2\)" "$ONYX" run "$UNNAMED" --dim x:3=1
check dim-negative 1 "--dim batch=-1: N must be a non-negative integer" "$ONYX" run "$UNNAMED" --dim batch=-1
# Symbolic dims left unset: a note on stderr before the run says which ones are 1.
check dim-note-named 0 "^note: dim 'batch' of input 'x' not set \(--dim batch=N\); using 1$" "$ONYX" run "$MODEL"
check dim-note-unnamed 0 "^note: dim 1 of input 'x' \(float\[2,\?,4\]\) not set \(--dim x:1=N\); using 1$" "$ONYX" run "$UNNAMED" --dim batch=2
check_absent dim-note-none "^note:" "$ONYX" run "$UNNAMED" --dim batch=2 --dim x:1=3
check_absent dim-note-inputs "^note:" "$ONYX" run "$MODEL" --inputs "$DATA"
"$ONYX" run "$MODEL" --json >"$TMP/out" 2>"$TMP/err"
grep -q "^note: dim 'batch' of input 'x'" "$TMP/err" && ! grep -q "note:" "$TMP/out" && echo "ok   dim-note-on-stderr-with-json" \
  || { echo "FAIL dim-note-on-stderr-with-json"; failures=$((failures + 1)); }

# info reads the file with the loader alone: a model with an op no EP runs still shows its metadata.
CUSTOM=$REPO/tests/cli/data/custom_op.onnx
check info-custom-op 0 "com.example::Frobnicate +1" "$ONYX" info "$CUSTOM"
check info-custom-op-json 0 '"opsets":\{"ai.onnx":17,"com.example":1\},"inputs":\[\{"name":"x","type":"float\[n,3\]".*"op_counts":\{"com.example::Frobnicate":1\},"nodes":1' \
  "$ONYX" info "$CUSTOM" --json
check run-custom-op 1 "Frobnicate" "$ONYX" run "$CUSTOM"

head -c 200 "$MODEL" >"$TMP/truncated.onnx"
check truncated-model 1 "error .*InvalidModel" "$ONYX" run "$TMP/truncated.onnx"
cp "$MODEL" "$TMP/corrupt.onnx"
printf '\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff' | dd of="$TMP/corrupt.onnx" bs=1 seek=20 conv=notrunc 2>/dev/null
check corrupt-model 1 "error" "$ONYX" run "$TMP/corrupt.onnx"
echo "not an onnx model" >"$TMP/text.onnx"
check text-file 1 "error .*InvalidModel" "$ONYX" info "$TMP/text.onnx"
check missing-file 1 "cannot open" "$ONYX" run "$TMP/nope.onnx"
check wrong-shape 1 "has shape \[4,5\] but the model expects \[batch,6\]" "$ONYX" run "$MODEL" --inputs "$REPO/tests/cli/data/wrong_shape"
check wrong-type 1 "has type int64 but the model expects float" "$ONYX" run "$MODEL" --inputs "$REPO/tests/cli/data/wrong_type"
check bad-option 1 "unknown option" "$ONYX" run "$MODEL" --frobnicate
check bad-dim 1 "--dim expects NAME=N" "$ONYX" run "$MODEL" --dim batch
check unknown-command 1 "unknown command" "$ONYX" frobnicate

# Execution providers.
check providers 0 "^cpu +yes +yes +yes" "$ONYX" providers
check providers-json 0 '"name":"cpu","built":true,"loadable":true,"usable":true,"reason":"","version":' "$ONYX" providers --json
check providers-not-built 0 '"name":"tensorrt","built":false,"loadable":false,"usable":false,"reason":"not built into this onyx \(CMake option ONYX_EP_TENSORRT\)"' "$ONYX" providers --json
check explain 0 "summary: cpu: 6 nodes; 0 copies" "$ONYX" explain "$MODEL"
check explain-json 0 '"nodes":\[\{"name":"center","op_type":"Sub","ep":"cpu","device":"cpu:0","region":-1,"declined":\[\]\}' "$ONYX" explain "$MODEL" --json
check explain-json-copies 0 '"copies":\[\],"summary":"cpu: 6 nodes; 0 copies"' "$ONYX" explain "$MODEL" --json
check explain-dot 0 "digraph onyx" "$ONYX" explain "$MODEL" --dot
check ep-skipped 0 "outputs:" "$ONYX" run "$MODEL" --ep tensorrt,cpu --inputs "$DATA"
check ep-required 1 "'tensorrt' .*could not be registered: not built into this onyx" "$ONYX" run "$MODEL" --ep tensorrt --require-ep
check ep-unknown 1 "unknown execution provider 'nope'" "$ONYX" run "$MODEL" --ep nope
check strict 1 "CPU fallback is disabled" "$ONYX" run "$MODEL" --strict
# A malformed EP option is an error naming the EP, the key and what is accepted (no --require-ep
# needed: a typo is not a missing EP); an unavailable EP is still skipped whatever its options.
check ep-option-unknown-key 1 "execution provider 'cpu' has no option 'foo' \(options: prefer_nhwc, half_in_float\)" \
  "$ONYX" run "$MODEL" --ep cpu --ep-option cpu.foo=1
check ep-option-bad-value 1 "execution provider 'cpu': option 'prefer_nhwc' must be bool \(true, false, 1 or 0\), got 'two'" \
  "$ONYX" run "$MODEL" --ep cpu --ep-option cpu.prefer_nhwc=two
check ep-option-unavailable-ep 0 "outputs:" "$ONYX" run "$MODEL" --ep tensorrt --ep-option tensorrt.no_such_key=1 --inputs "$DATA"
# The CPU EP's options apply to it when --ep does not list it (it is always there); another EP's
# options need that EP in --ep.
check ep-option-implicit-cpu 0 '"registration":\[\{"name":"cpu","source":"session","outcome":"registered".*"options":\{"prefer_nhwc":"false"' \
  "$ONYX" explain "$REPO/examples/models/tiny_cnn.onnx" --ep-option cpu.prefer_nhwc=false --json
check_absent ep-option-implicit-cpu-nchw "NHWC" "$ONYX" explain "$REPO/examples/models/tiny_cnn.onnx" --ep-option cpu.prefer_nhwc=false
check ep-option-implicit-cpu-bad 1 "execution provider 'cpu' has no option 'prefer_nchw'" "$ONYX" run "$MODEL" --ep-option cpu.prefer_nchw=1
check ep-option-not-listed 1 "--ep-option onednn.threads=1: 'onednn' is not one of the EPs given with --ep \(tensorrt\)" \
  "$ONYX" run "$MODEL" --ep tensorrt --ep-option onednn.threads=1
check bench-per-node 0 "slowest nodes" "$ONYX" bench "$MODEL" --runs 2 --warmup 0 --per-node
check bench-profile 0 "profile: .*3 runs" "$ONYX" bench "$MODEL" --runs 2 --warmup 0 --profile "$TMP/trace.json" --profile-runs 3
check bench-profile-runs 0 "medians of 4 profiled runs" "$ONYX" bench "$MODEL" --runs 2 --warmup 0 --per-node --profile-runs 4
check bench-profile-runs-bad 1 "--profile-runs must be >= 1" "$ONYX" bench "$MODEL" --runs 2 --per-node --profile-runs 0
grep -q '"traceEvents":\[{"name":"center","cat":"Sub","ph":"X"' "$TMP/trace.json" && grep -q '"ep":"cpu","device":"cpu:0"' "$TMP/trace.json" \
  && echo "ok   profile-trace" || { echo "FAIL profile-trace: $(head -c 300 "$TMP/trace.json")"; failures=$((failures + 1)); }
# One event per node and profiled run: three runs hold three times the events of one.
events3=$(grep -o '"ph":"X"' "$TMP/trace.json" | wc -l)
"$ONYX" bench "$MODEL" --runs 1 --warmup 0 --profile "$TMP/trace1.json" --profile-runs 1 >/dev/null 2>&1
events1=$(grep -o '"ph":"X"' "$TMP/trace1.json" | wc -l)
[ "$events1" -gt 0 ] && [ "$events3" -eq $((3 * events1)) ] && echo "ok   profile-trace-runs" \
  || { echo "FAIL profile-trace-runs: $events3 events in 3 runs, $events1 in one"; failures=$((failures + 1)); }

# Help: `onyx --help` (each command's synopsis) and `onyx CMD --help` list every option the
# command's parser accepts, and every option they show is accepted.
"$ONYX" --help >"$TMP/help" 2>&1 || { echo "FAIL help: onyx --help exits non-zero"; failures=$((failures + 1)); }
declare -A OPTIONS=(
  [info]="--json"
  [run]="--inputs --save --dim --threads --int-max --seed --ep --ep-option --runs --json --quiet --require-ep --strict"
  [bench]="--runs --warmup --threads --dim --inputs --int-max --ep --ep-option --profile --profile-runs --json --no-progress --per-node --require-ep --strict"
  [explain]="--dim --threads --ep --ep-option --json --dot --require-ep --strict"
  [providers]="--json"
  [ops]="--json --markdown"
)
for cmd in info run bench explain providers ops; do
  # The command's synopsis in `onyx --help`: its first line to the line before its summary.
  awk -v c="$cmd" '$0 ~ "^  " c "( |$)" { on = 1; print; next } on && /^      [^ ]/ { exit } on { print }' "$TMP/help" >"$TMP/synopsis_$cmd"
  missing=""
  for o in ${OPTIONS[$cmd]}; do
    grep -qE -- "${o}([^a-z-]|$)" "$TMP/synopsis_$cmd" || missing="$missing $o (onyx --help)"
  done
  if ! "$ONYX" "$cmd" --help >"$TMP/help_$cmd" 2>&1; then
    echo "FAIL help-$cmd:$missing; onyx $cmd --help exits non-zero: $(head -c 200 "$TMP/help_$cmd")"; failures=$((failures + 1)); continue
  fi
  for o in ${OPTIONS[$cmd]}; do
    grep -qE -- "${o}([^a-z-]|$)" "$TMP/help_$cmd" || missing="$missing $o (onyx $cmd --help)"
  done
  for o in $(grep -oE -- "--[a-z][a-z-]*" "$TMP/help_$cmd" | sort -u); do
    [ "$o" = "--help" ] && continue
    "$ONYX" "$cmd" "$o" >/dev/null 2>"$TMP/err"
    grep -q "unknown option" "$TMP/err" && missing="$missing $o (shown but not accepted)"
  done
  [ -z "$missing" ] && echo "ok   help-$cmd" || { echo "FAIL help-$cmd:$missing"; failures=$((failures + 1)); }
done
check help-command 0 "usage: onyx explain MODEL \[options\]" "$ONYX" help explain

# Operators: the table, JSON, and docs/operators.md generated from the same data.
check ops 0 "^ai.onnx +Conv +1,11,22 +all" "$ONYX" ops
check ops-json 0 '\{"domain":"ai.onnx","op":"Add","versions":\[1,6,7,13,14\],"cpu_versions":\[1,6,7,13,14\],"cpu_types":\["input 0: ' "$ONYX" ops --json
"$ONYX" ops --markdown > "$TMP/operators.md"
if diff -q "$TMP/operators.md" "$REPO/docs/operators.md" >/dev/null; then echo "ok   docs/operators.md is current"; else
  echo "FAIL docs/operators.md is stale: regenerate with onyx ops --markdown > docs/operators.md"
  diff "$TMP/operators.md" "$REPO/docs/operators.md" | head -20; failures=$((failures + 1)); fi

# ImageDecoder without its codec module (a copy of the CLI and libonyx alone): PPM still decodes,
# PNG is a NotImplemented error naming where the module was looked for; providers says so.
BIN=$(dirname "$ONYX")
if ls "$BIN"/libonyx_image_codecs.so >/dev/null 2>&1; then
  check codecs-providers 0 "image codecs \(ImageDecoder\): bmp, pnm built in; png, " "$ONYX" providers
  mkdir -p "$TMP/nocodecs" && cp -a "$ONYX" "$BIN"/libonyx.so* "$TMP/nocodecs/"
  check codecs-missing-providers 0 "no others: libonyx_image_codecs.so could not be loaded \(tried $TMP/nocodecs/libonyx_image_codecs.so: no such file" \
    env LD_LIBRARY_PATH="$TMP/nocodecs" ONYX_EP_PATH= "$TMP/nocodecs/$(basename "$ONYX")" providers
  check codecs-missing-ppm 0 "image +float\[1,3,3,4\]" env LD_LIBRARY_PATH="$TMP/nocodecs" ONYX_EP_PATH= \
    "$TMP/nocodecs/$(basename "$ONYX")" run "$REPO/examples/models/decode_image.onnx" --inputs "$REPO/examples/models/decode_image_test_data"
  /usr/bin/python3 - "$TMP/png_in" <<'PY'
import os, struct, sys, zlib
d = sys.argv[1]; os.makedirs(d, exist_ok=True)
def chunk(t, b): return struct.pack(">I", len(b)) + t + b + struct.pack(">I", zlib.crc32(t + b))
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)) + \
      chunk(b"IDAT", zlib.compress(b"\x00\x01\x02\x03")) + chunk(b"IEND", b"")
# TensorProto: dims (field 1), data_type UINT8 = 2 (field 2), name (field 8), raw_data (field 9)
def varint(v):
    out = b""
    while True:
        b = v & 127; v >>= 7
        out += bytes([b | (128 if v else 0)])
        if not v: return out
t = b"\x08" + varint(len(png)) + b"\x10\x02" + b"\x42\x0bimage_bytes" + b"\x4a" + varint(len(png)) + png
open(os.path.join(d, "input_0.pb"), "wb").write(t)
PY
  check codecs-png 0 "image +float\[1,3,1,1\]" "$ONYX" run "$REPO/examples/models/decode_image.onnx" --inputs "$TMP/png_in"
  check codecs-missing-png 1 "NotImplemented.*need the image codec module: libonyx_image_codecs.so could not be loaded" \
    env LD_LIBRARY_PATH="$TMP/nocodecs" ONYX_EP_PATH= "$TMP/nocodecs/$(basename "$ONYX")" run \
    "$REPO/examples/models/decode_image.onnx" --inputs "$TMP/png_in"
else
  echo "skip codecs: this build has no libonyx_image_codecs.so (no codec library found at build time)"
fi

if [ "$failures" -ne 0 ]; then echo "$failures CLI checks failed"; exit 1; fi
echo "all CLI checks passed"
