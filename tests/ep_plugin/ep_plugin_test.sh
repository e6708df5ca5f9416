#!/usr/bin/env bash
# The example EP plugin (examples/ep_plugin, vecfuse) as a vendor builds it: a separate CMake
# project, compiled with clang against the *installed* onyx's EP SDK only
# (find_package(onyx COMPONENTS ep_sdk)), installed beside libonyx, then found by name by the
# installed onyx CLI: listed by `providers`, its nodes placed on it by `explain`, and the outputs
# of `run` (fused groups, then one kernel per node) matching numpy's; its custom op Swish runs when
# the plugin is registered, and a session that does not register it fails naming the plugin. Also
# loaded from elsewhere through $ONYX_EP_PATH and through the option module_path.
# Usage: ep_plugin_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
BUILD=$1
SRC=$2
PY=/usr/bin/python3
if ! command -v clang >/dev/null; then echo "skipped: no clang (scripts/setup.sh installs it)"; exit 77; fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
PREFIX=$TMP/prefix
cmake --install "$BUILD" --prefix "$PREFIX" >/dev/null
ONYX=$PREFIX/bin/onyx

# The vendor's build: its own project, clang, the installed package and nothing of the source tree.
CC=clang cmake -S "$SRC/examples/ep_plugin" -B "$TMP/vecfuse" -G Ninja -DCMAKE_PREFIX_PATH="$PREFIX" \
  -DCMAKE_BUILD_TYPE=Release >"$TMP/configure.log" || { cat "$TMP/configure.log"; exit 1; }
grep -q "clang" "$TMP/vecfuse/CMakeCache.txt" || { echo "FAIL: the plugin was not built with clang"; exit 1; }
cmake --build "$TMP/vecfuse" >"$TMP/build.log" 2>&1 || { cat "$TMP/build.log"; exit 1; }
if nm -D --undefined-only "$TMP/vecfuse/libonyx_ep_vecfuse.so" | grep -qi onyx; then
  echo "FAIL: the plugin links against onyx symbols:"; nm -D --undefined-only "$TMP/vecfuse/libonyx_ep_vecfuse.so" | grep -i onyx; exit 1
fi
cmake --install "$TMP/vecfuse" >/dev/null
echo "ok   vecfuse built with clang against the installed EP SDK and installed beside libonyx"

"$PY" "$SRC/tests/ep_plugin/make_model.py" "$TMP/m"
MODEL=$TMP/m/model.onnx

"$ONYX" providers --json | "$PY" -c "
import json, sys
p = {e['name']: e for e in json.load(sys.stdin)}
v = p.get('vecfuse')
assert v and v['built'] and v['loadable'] and v['usable'], v
assert [o['key'] for o in v['options']] == ['fuse', 'min_group_nodes'], v['options']
print('ok   providers lists vecfuse:', v['version'])"

"$ONYX" explain "$MODEL" --ep vecfuse --json | "$PY" -c "
import json, sys
d = json.load(sys.stdin)
eps = {n['name']: n['ep'] for n in d['nodes']}
want = {'matmul': 'cpu', 'add': 'vecfuse', 'mul': 'vecfuse', 'relu': 'vecfuse', 'sub': 'vecfuse', 'tanh': 'vecfuse',
        'sigmoid': 'vecfuse', 'max': 'vecfuse'}
assert eps == want, eps
mm = [n for n in d['nodes'] if n['name'] == 'matmul'][0]
assert 'vecfuse has no kernel for MatMul' in json.dumps(mm), mm
print('ok   explain:', d['summary'])"

check_run() {  # NAME ONYX-ARGS...
  local name=$1
  shift
  rm -rf "$TMP/out"
  "$@" --inputs "$TMP/m/test_data_set_0" --save "$TMP/out" >/dev/null
  "$PY" "$SRC/tests/models/compare.py" "$TMP/out" "$TMP/m/test_data_set_0" --rtol 1e-5 >/dev/null \
    || { "$PY" "$SRC/tests/models/compare.py" "$TMP/out" "$TMP/m/test_data_set_0" --rtol 1e-5; echo "FAIL: $name"; exit 1; }
  echo "ok   $name: outputs match numpy's"
}
check_run "run on vecfuse (fused groups)" "$ONYX" run "$MODEL" --ep vecfuse --require-ep
check_run "run on vecfuse (fuse=false, a kernel per node)" "$ONYX" run "$MODEL" --ep vecfuse --require-ep --ep-option vecfuse.fuse=false

# The custom op: runs on vecfuse; without it the model fails to load, naming the plugin to register.
CUSTOM=$TMP/m/custom
rm -rf "$TMP/out"
"$ONYX" run "$CUSTOM/model.onnx" --ep vecfuse --require-ep --inputs "$CUSTOM/test_data_set_0" --save "$TMP/out" >/dev/null
"$PY" "$SRC/tests/models/compare.py" "$TMP/out" "$CUSTOM/test_data_set_0" --rtol 1e-5 >/dev/null || { echo "FAIL: Swish outputs"; exit 1; }
"$ONYX" explain "$CUSTOM/model.onnx" --ep vecfuse --json | "$PY" -c "
import json, sys
d = json.load(sys.stdin)
assert all(n['ep'] == 'vecfuse' for n in d['nodes']), d['nodes']"
echo "ok   the custom op com.example.vecfuse::Swish runs on vecfuse: outputs match numpy's"
if "$ONYX" run "$CUSTOM/model.onnx" >/dev/null 2>"$TMP/err"; then echo "FAIL: the custom op ran without its plugin"; exit 1; fi
grep -q "onyx does not know the operator com.example.vecfuse::Swish (a custom op, implemented by the EP plugin 'vecfuse' (.*libonyx_ep_vecfuse.so), which this session did not register" "$TMP/err" \
  || { echo "FAIL: the message does not name the plugin: $(cat "$TMP/err")"; exit 1; }
echo "ok   without --ep vecfuse the custom-op model fails, naming the plugin: $(sed -n 1p "$TMP/err" | cut -c1-160)..."

# From a folder of its own: through $ONYX_EP_PATH, and through module_path.
mkdir -p "$TMP/elsewhere"
mv "$PREFIX"/lib*/libonyx_ep_vecfuse.so "$TMP/elsewhere/"
if "$ONYX" run "$MODEL" --ep vecfuse --require-ep >/dev/null 2>"$TMP/err"; then echo "FAIL: ran without the plugin"; exit 1; fi
grep -q "unknown execution provider 'vecfuse'.*no plugin libonyx_ep_vecfuse.so" "$TMP/err" \
  || { echo "FAIL: missing plugin not reported: $(cat "$TMP/err")"; exit 1; }
check_run "run through \$ONYX_EP_PATH" env ONYX_EP_PATH="$TMP/elsewhere" "$ONYX" run "$MODEL" --ep vecfuse --require-ep
check_run "run through module_path" "$ONYX" run "$MODEL" --ep vecfuse --require-ep \
  --ep-option "vecfuse.module_path=$TMP/elsewhere/libonyx_ep_vecfuse.so"
