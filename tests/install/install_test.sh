#!/usr/bin/env bash
# Installs onyx into a temporary prefix, then builds the examples (C++, and C through the C API)
# against the installed package twice — with CMake's find_package(onyx) and with pkg-config — and
# runs them.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
BUILD=$1
SRC=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
PREFIX=$TMP/prefix

cmake --install "$BUILD" --prefix "$PREFIX" >/dev/null
test -f "$PREFIX/include/onyx/onyx.hpp"
test -f "$PREFIX/include/onyx/c_api.h"
test -x "$PREFIX/bin/onyx"
LIBDIR=$(dirname "$(find "$PREFIX" -name 'libonyx.so' | head -n 1)")

# find_package(onyx)
cmake -S "$SRC/examples" -B "$TMP/ex" -G Ninja -DCMAKE_PREFIX_PATH="$PREFIX" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$TMP/ex" >/dev/null
LD_LIBRARY_PATH="$LIBDIR" "$TMP/ex/onyx_example_run_model" "$SRC/examples/models/tiny_normalize.onnx" \
  "$SRC/examples/models/tiny_normalize_test_data" >/dev/null
LD_LIBRARY_PATH="$LIBDIR" "$TMP/ex/onyx_example_c_run_model" "$SRC/examples/models/tiny_cnn.onnx" >/dev/null
echo "ok   find_package(onyx) build runs (C++ and C examples)"

# A consumer project that sets no C++ standard of its own: onyx::onyx carries C++20 (the headers
# need it), so find_package(onyx) + target_link_libraries(app PRIVATE onyx::onyx) is all it takes.
mkdir -p "$TMP/consumer"
cat >"$TMP/consumer/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.16)
project(onyx_consumer LANGUAGES CXX)
find_package(onyx REQUIRED)
add_executable(app main.cpp)
target_link_libraries(app PRIVATE onyx::onyx)
CMAKE
cp "$SRC/examples/run_model.cpp" "$TMP/consumer/main.cpp"
cmake -S "$TMP/consumer" -B "$TMP/consumer/build" -G Ninja -DCMAKE_PREFIX_PATH="$PREFIX" -DCMAKE_BUILD_TYPE=Release >/dev/null
if ! cmake --build "$TMP/consumer/build" >"$TMP/consumer.log" 2>&1; then
  echo "FAIL: a project that sets no C++ standard does not build against onyx::onyx:"; tail -n 20 "$TMP/consumer.log"; exit 1
fi
LD_LIBRARY_PATH="$LIBDIR" "$TMP/consumer/build/app" "$SRC/examples/models/tiny_normalize.onnx" \
  "$SRC/examples/models/tiny_normalize_test_data" >/dev/null
echo "ok   a consumer that sets no C++ standard builds against onyx::onyx and runs"

# pkg-config
PKG_CONFIG_PATH="$LIBDIR/pkgconfig" pkg-config --exists onyx
g++ -O1 "$SRC/examples/run_model.cpp" $(PKG_CONFIG_PATH="$LIBDIR/pkgconfig" pkg-config --cflags --libs onyx) -o "$TMP/pc_example"
LD_LIBRARY_PATH="$LIBDIR" "$TMP/pc_example" "$SRC/examples/models/tiny_normalize.onnx" \
  "$SRC/examples/models/tiny_normalize_test_data" >/dev/null
# The C example with a C compiler: the include path alone (Cflags' -std=c++20 is for C++).
cc -std=c99 -O1 "$SRC/examples/c/run_model.c" $(PKG_CONFIG_PATH="$LIBDIR/pkgconfig" pkg-config --cflags-only-I --libs onyx) \
  -o "$TMP/pc_example_c"
LD_LIBRARY_PATH="$LIBDIR" "$TMP/pc_example_c" "$SRC/examples/models/tiny_cnn.onnx" >/dev/null
echo "ok   pkg-config build runs (C++ and C examples)"

# The installed CLI finds its library through its rpath.
"$PREFIX/bin/onyx" info "$SRC/examples/models/tiny_normalize.onnx" >/dev/null
echo "ok   installed onyx CLI runs"

# EP modules install beside libonyx and are found there; a hidden (deleted) module is skipped with
# the paths tried, or is an error with --require-ep.
for m in $(ls "$LIBDIR" | grep -E '^libonyx_ep_.*\.so$' | sed -e 's/^libonyx_ep_//' -e 's/\.so$//'); do
  "$PREFIX/bin/onyx" providers --json | grep -q "\"name\":\"$m\",\"built\":true,\"loadable\":true" \
    || { echo "FAIL: installed module $m is not loadable"; exit 1; }
  echo "ok   installed module $m loads"
done
if [ -f "$LIBDIR/libonyx_ep_onednn.so" ]; then
  rm "$LIBDIR/libonyx_ep_onednn.so"
  out=$("$PREFIX/bin/onyx" explain "$SRC/examples/models/tiny_normalize.onnx" --ep onednn 2>&1)
  echo "$out" | grep -q "onednn *skipped.*libonyx_ep_onednn.so could not be loaded (tried $LIBDIR/libonyx_ep_onednn.so: no such file" \
    || { echo "FAIL: hidden module not reported: $out"; exit 1; }
  if "$PREFIX/bin/onyx" run "$SRC/examples/models/tiny_normalize.onnx" --ep onednn --require-ep >/dev/null 2>"$TMP/err"; then
    echo "FAIL: --require-ep succeeded without the module"; exit 1
  fi
  grep -q "'onednn' (requested by the session with error_on_failure) could not be registered" "$TMP/err" \
    || { echo "FAIL: --require-ep message: $(cat "$TMP/err")"; exit 1; }
  echo "ok   hidden onednn module: skipped silently, an error with --require-ep"
fi
