#!/usr/bin/env bash
# Compiles (and runs) every C++ block in docs/*.md that starts with "// doc-example: NAME", and
# every C block (```c, the C API) that starts with "/* doc-example: NAME */" (C99, with cc).
# Each runs with MODEL as its argument, or with the model named by "model=FILE" on that line
# (FILE beside MODEL, in examples/models).
# Usage: doc_examples_test.sh SOURCE_DIR INCLUDE_DIR LIB_DIR MODEL
set -euo pipefail
SRC=$1
INC=$2
LIB=$3
MODEL=$4
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
count=0
for doc in "$SRC"/docs/*.md; do
  awk -v dir="$TMP" -v base="$(basename "$doc" .md)" '
    /^```cpp/ { inblock = 1; lang = "cpp"; file = ""; next }
    /^```c$/ { inblock = 1; lang = "c"; file = ""; next }
    /^```/ && inblock { inblock = 0; if (file != "") close(file); next }
    inblock && file == "" && lang == "cpp" && /\/\/ doc-example:/ { n++; file = dir "/" base "_" n ".cpp" }
    inblock && file == "" && lang == "c" && /\/\* doc-example:/ { n++; file = dir "/" base "_" n ".c" }
    inblock && file != "" { print > file }
  ' "$doc"
done
for f in "$TMP"/*.cpp "$TMP"/*.c; do
  [ -e "$f" ] || continue
  count=$((count + 1))
  bin=${f%.*}
  case $f in
    *.c) cc -std=c99 -O1 -I"$INC" "$f" -L"$LIB" -lonyx -lm -Wl,-rpath,"$LIB" -o "$bin" ;;
    *) g++ -std=c++20 -O1 -I"$INC" "$f" -L"$LIB" -lonyx -Wl,-rpath,"$LIB" -o "$bin" ;;
  esac
  model=$MODEL
  other=$(sed -n '1s/.*doc-example:.*model=\([^ ]*\).*/\1/p' "$f")
  [ -z "$other" ] || model=$(dirname "$MODEL")/$other
  "$bin" "$model"
  echo "ok   $(basename "$f")"
done
[ "$count" -gt 0 ] || { echo "no doc examples found"; exit 1; }
echo "$count doc examples compiled and ran"
