#!/usr/bin/env bash
# Makes the com.microsoft node tests, single-node models whose expected outputs ONNX Runtime
# computes, with the Python of the ONNX Runtime venv (.cache/ort-venv):
#   .cache/contrib-node-tests/node      the quantized ops (tests/conformance/make_contrib_tests.py)
#   .cache/transformer-node-tests/node  the transformer ops (tests/conformance/make_transformer_tests.py
#                                       and its case modules transformer_cases_*.py)
# Idempotent: a set is made again only when its generator or the onnxruntime version changes.
# Never fails: without the venv it says so, and the CTests conformance_cpu_contrib and
# conformance_cpu_transformer skip (saying why) while their data is missing.
set -uo pipefail
cd "$(dirname "$0")/../.."
PY=.cache/ort-venv/bin/python
mkdir -p .cache
if [ ! -x "$PY" ] || ! "$PY" -c "import onnxruntime, onnx, numpy" 2>/dev/null; then
  echo "com.microsoft node tests: not generated (no ONNX Runtime venv in .cache/ort-venv; the conformance_cpu_contrib and conformance_cpu_transformer tests will be skipped)"
  exit 0
fi
ORT_VERSION=$("$PY" -c 'import onnxruntime; print(onnxruntime.__version__)')

# generate SET GENERATOR [SOURCES...]: .cache/SET-node-tests from GENERATOR (stamped with the hash of
# the generator and the SOURCES it imports).
generate() {
  local set=$1 gen=$2
  shift 2
  local data=.cache/$set-node-tests log=.cache/$set-node-tests.log
  local stamp
  stamp="onnxruntime $ORT_VERSION generator $(cat "$gen" "$@" | sha256sum | cut -c1-16)"
  if [ -f "$data/.complete" ] && [ "$(cat "$data/.complete")" = "$stamp" ]; then
    echo "$set node tests: $data present ($stamp)"
    return
  fi
  rm -rf "$data"
  if "$PY" "$gen" "$data" >"$log" 2>&1; then
    echo "$stamp" >"$data/.complete"
    echo "$set node tests: $(tail -1 "$log")"
  else
    rm -rf "$data"
    echo "$set node tests: not generated (the conformance_cpu_$set test will be skipped); see $log:"
    tail -5 "$log"
  fi
}

generate contrib tests/conformance/make_contrib_tests.py tests/conformance/transformer_common.py
generate transformer tests/conformance/make_transformer_tests.py tests/conformance/transformer_common.py tests/conformance/transformer_cases_*.py
exit 0
