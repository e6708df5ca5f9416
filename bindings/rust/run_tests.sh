#!/usr/bin/env bash
# Tests of the Rust crate (bindings/rust, docs/rust.md), run by CTest as `rust_crate`:
#   1. builds the crate, its tests and examples (no compiler warnings allowed) and runs
#      `cargo test --offline`;
#   2. runs each example in a scratch directory holding model.onnx (tiny_cnn) and checks its exit
#      status and a key line of its output, expecting what this machine's EPs make of it (an EP
#      `onyx providers --json` reports unusable is skipped, or makes the program fail);
#   3. builds and runs docs/rust.md's Rust blocks that start with "// doc-example";
#   4. when the `ort` crate's "Execution providers" page is present (ONYX_SEED_PAGE, else
#      REPO_DIR/../shared/seed/execution-providers.mdx), extracts its Rust examples, changes the
#      crate name (ort -> onyx) and anyhow::Result<()> to a std error type, builds them against
#      this crate and runs each, checking it does what the page says given this machine's EPs.
# Skipped (77) when cargo is not installed. Nothing is written into the source tree: cargo's
# output goes to TARGET_DIR, scratch projects to a temporary directory.
# Usage: run_tests.sh REPO_DIR LIB_DIR TARGET_DIR   (LIB_DIR: where libonyx.so and the onyx CLI are)
set -uo pipefail
if [ $# -ne 3 ]; then
  echo "usage: $0 REPO_DIR LIB_DIR TARGET_DIR" >&2
  exit 2
fi
REPO=$(cd "$1" && pwd)
LIB=$(cd "$2" && pwd)
mkdir -p "$3"
TARGET=$(cd "$3" && pwd)
CRATE=$REPO/bindings/rust
MODEL=$REPO/examples/models/tiny_cnn.onnx

if ! command -v cargo >/dev/null 2>&1 && [ -x "${HOME:-}/.cargo/bin/cargo" ]; then
  PATH=$HOME/.cargo/bin:$PATH
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "skipped: cargo not found (install Rust to test the crate in bindings/rust)"
  exit 77
fi
export ONYX_LIB_DIR=$LIB CARGO_TARGET_DIR=$TARGET
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# ---- 1. build (warning-free) and cargo test -------------------------------------------------
cd "$CRATE" || exit 1
if ! cargo build --offline --all-targets 2>&1 | tee "$TMP/build.log"; then
  echo "FAIL: cargo build"
  exit 1
fi
if grep -E '^warning' "$TMP/build.log"; then
  fail "the crate, its tests or its examples build with warnings"
fi
cargo test --offline >"$TMP/test.log" 2>&1
rc=$?
if [ $rc -ne 0 ]; then
  cat "$TMP/test.log"
  echo "FAIL: cargo test (exit status $rc)"
  exit 1
fi
grep -E '^(test |test result)' "$TMP/test.log"
echo "ok   cargo test"

# ---- what this machine's EPs can do ---------------------------------------------------------
PROVIDERS=""
if [ -x "$LIB/onyx" ]; then
  PROVIDERS=$("$LIB/onyx" providers --json 2>/dev/null || true)
fi
EXAMPLES=$TARGET/debug/examples
# usable NAME: whether EP NAME is usable here (from `onyx providers --json`, else from the crate).
usable() {
  local u
  u=$(grep -oE "\"name\":\"$1\",\"built\":(true|false),\"loadable\":(true|false),\"usable\":(true|false)" <<<"$PROVIDERS" |
      sed -E 's/.*"usable":(true|false)$/\1/')
  if [ -z "$u" ]; then
    u=$("$EXAMPLES/availability" "$MODEL" cpu 2>/dev/null | awk -v n="$1" '$1 == n { sub("usable=", "", $2); print $2 }')
  fi
  [ "$u" = true ]
}
for ep in cpu xnnpack onednn cuda tensorrt coreml; do
  if usable "$ep"; then echo "     ep $ep: usable"; else echo "     ep $ep: not usable here"; fi
done
usable cpu || fail "the CPU EP is not reported usable"

# ---- 2. the crate's examples -----------------------------------------------------------------
RUN=$TMP/run
mkdir -p "$RUN"
cp "$MODEL" "$RUN/model.onnx"
# run_example NAME WANT_RC PATTERN [ARGS...]: runs the example in $RUN (model.onnx there) and
# checks its exit status (0, or "fail" for any non-zero one) and that stdout+stderr match PATTERN.
run_example() {
  local name=$1 want=$2 pattern=$3 rc
  shift 3
  (cd "$RUN" && "$EXAMPLES/$name" "$@") >"$TMP/out" 2>&1
  rc=$?
  if { [ "$want" = fail ] && [ $rc -eq 0 ]; } || { [ "$want" != fail ] && [ $rc -ne "$want" ]; }; then
    cat "$TMP/out"
    fail "example $name $*: exit status $rc, expected $want"
  elif ! grep -Eq -- "$pattern" "$TMP/out"; then
    cat "$TMP/out"
    fail "example $name $*: no line matching '$pattern'"
  else
    echo "ok   example $name $* (exit $rc; '$pattern')"
  fi
}
if usable xnnpack; then on_xnnpack=xnnpack; else on_xnnpack=cpu; fi
run_example single_ep 0 "^  /features/features.0/Conv +Conv +on $on_xnnpack$"
run_example fallback 0 '^  ep tensorrt +Skipped \(Session\): not built'
if usable cuda; then
  run_example fallback 0 '^  ep cuda +Registered'
  run_example error_on_failure 0 '^placement: '
  run_example register 0 '^placement: '
else
  run_example fallback 0 '^  ep cuda +Skipped \(Session\): '
  if usable onednn; then run_example fallback 0 '^placement: onednn: '; fi
  run_example error_on_failure fail "cannot register execution provider 'cuda'"
  run_example register 1 "^could not register the EP: .*'cuda'"
fi
run_example error_on_failure 0 '^placement: cpu: ' model.onnx cpu
run_example error_on_failure fail "unknown execution provider 'no_such_ep'" model.onnx no_such_ep
run_example register 0 '^placement: cpu: ' model.onnx cpu
run_example ep_options 0 '^  ep coreml +Skipped: not built'
if usable xnnpack; then run_example ep_options 0 '^  ep xnnpack +Registered: threads=1 quantized=false$'; fi
run_example ep_options 0 '^  ep cpu +Registered: prefer_nhwc=false half_in_float=true$'
run_example availability 1 '^the tensorrt EP is not usable here: not built'
run_example availability 0 '^cuda +usable=(true|false) ' model.onnx cpu
run_example availability 0 '^placement: cpu: ' model.onnx cpu
run_example environment 0 '^environment committed: true$'
if usable xnnpack; then run_example environment 0 '^  ep xnnpack +Registered \(Environment\)'; fi
run_example run_model 0 '^result probabilities float\[1, 10\]: ([0-9]\.[0-9]{5} ?){5} \(sum 1\.0000\)$'
run_example run_model 0 '^input  image +float\[batch,3,32,32\]$'
run_example run_model fail 'code: Io, message: "cannot open .*no_such_model\.onnx' no_such_model.onnx

# ---- scratch project depending on the crate (for 3 and 4) -------------------------------------
# new_project DIR: a binary crate with a path dependency on onyx and an rpath to libonyx (taken
# from DEP_ONYX_LIB_DIR, which the onyx crate's build script hands to its dependents).
new_project() {
  mkdir -p "$1/src" "$1/examples"
  cat >"$1/Cargo.toml" <<EOF
[package]
name = "$(basename "$1")"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
onyx = { path = "$CRATE" }

[workspace]
EOF
  cat >"$1/build.rs" <<'EOF'
fn main() {
    if let Ok(dir) = std::env::var("DEP_ONYX_LIB_DIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
}
EOF
  echo 'fn main() {}' >"$1/src/main.rs"
}

# ---- 3. docs/rust.md's examples --------------------------------------------------------------
DOCS=$TMP/onyx_docs_examples
new_project "$DOCS"
awk -v dir="$DOCS/examples" '
  /^```rust/ { inblock = 1; file = ""; next }
  /^```/ && inblock { inblock = 0; if (file != "") close(file); next }
  inblock && file == "" && /^\/\/ doc-example/ { n++; file = dir "/doc_" n ".rs" }
  inblock && file != "" { print > file }
' "$REPO/docs/rust.md"
ndocs=$(find "$DOCS/examples" -name 'doc_*.rs' | wc -l)
if [ "$ndocs" -eq 0 ]; then
  fail "no '// doc-example' Rust blocks in docs/rust.md"
elif ! (cd "$DOCS" && cargo build --offline --examples) >"$TMP/docs.log" 2>&1; then
  cat "$TMP/docs.log"
  fail "docs/rust.md's examples do not build"
else
  grep -E '^warning' "$TMP/docs.log" && fail "docs/rust.md's examples build with warnings"
  for f in "$DOCS"/examples/doc_*.rs; do
    n=$(basename "$f" .rs)
    if (cd "$RUN" && "$TARGET/debug/examples/$n" model.onnx) >"$TMP/out" 2>&1; then
      echo "ok   docs/rust.md example $n"
    else
      cat "$TMP/out"
      fail "docs/rust.md example $n"
    fi
  done
fi

# ---- 4. the ort page's examples ----------------------------------------------------------------
PAGE=${ONYX_SEED_PAGE:-$REPO/../shared/seed/execution-providers.mdx}
if [ ! -f "$PAGE" ]; then
  echo "skipped: the ort page's examples (no $PAGE; set ONYX_SEED_PAGE to check them)"
else
  SEED=$TMP/onyx_ort_page_examples
  new_project "$SEED"
  awk -v dir="$SEED/examples" '
    /^[ \t]*```rust/ { inblock = 1; n++; file = dir "/page_" n ".rs"; next }
    /^[ \t]*```/ && inblock { inblock = 0; close(file); next }
    inblock { print > file }
  ' "$PAGE"
  for f in "$SEED"/examples/page_*.rs; do
    [ -e "$f" ] || continue
    sed -i -E -e 's/\bort::/onyx::/g' -e 's/anyhow::Result<\(\)>/Result<(), Box<dyn std::error::Error>>/g' "$f"
  done
  npage=$(find "$SEED/examples" -name 'page_*.rs' | wc -l)
  echo "     $npage Rust examples in $(basename "$PAGE")"
  [ "$npage" -eq 7 ] || fail "expected 7 Rust examples in the page, found $npage"
  if ! (cd "$SEED" && cargo build --offline --examples) >"$TMP/seed.log" 2>&1; then
    cat "$TMP/seed.log"
    fail "the page's examples do not build against the crate"
  else
    # Unused `session` bindings are the page's own; a must-use value left unused would be ours.
    if grep -E '^warning' "$TMP/seed.log" | grep -vE 'unused variable|generated [0-9]+ warnings?'; then
      fail "the page's examples build with warnings that the crate causes"
    fi
    for f in "$SEED"/examples/page_*.rs; do
      n=$(basename "$f" .rs)
      # What the page says it does, given this machine: an EP it insists on (error_on_failure, or
      # a check that exits 1 with a message) decides the outcome; others fall back silently.
      ep=$(grep -oE '(ep::)?[A-Za-z]+::default\(\)' "$f" | head -1 | sed -E 's/^ep:://; s/::default\(\)$//' | tr 'A-Z' 'a-z')
      if grep -q 'error_on_failure' "$f"; then
        kind="$ep with error_on_failure"
        if usable "$ep"; then want=0 pattern='.*'; else want=fail pattern="'$ep'"; fi
      elif grep -q 'process::exit(1)' "$f"; then
        kind="$ep checked, exit 1 if it fails"
        message=$(grep -oE 'eprintln!\("[^"]*"\)' "$f" | head -1 | sed -E 's/^eprintln!\("(.*)"\)$/\1/')
        if usable "$ep"; then want=0 pattern='.*'; else want=1 pattern="^$(sed 's/[][\.*^$(){}+?|/]/\\&/g' <<<"$message")$"; fi
      elif grep -q 'onyx::init()' "$f"; then
        kind="environment default $ep"
        if usable "$ep"; then want=0 pattern='.*'; else want=0 pattern="execution provider '$ep' skipped"; fi
      else
        kind="$(grep -oE '[A-Za-z]+::default\(\)' "$f" | sed 's/::default()//' | paste -sd, -) (fallback)"
        want=0 pattern='.*'
      fi
      (cd "$RUN" && "$TARGET/debug/examples/$n") >"$TMP/out" 2>&1
      rc=$?
      if { [ "$want" = fail ] && [ $rc -eq 0 ]; } || { [ "$want" != fail ] && [ $rc -ne "$want" ]; }; then
        cat "$TMP/out"
        fail "page example $n ($kind): exit status $rc, expected $want"
      elif ! grep -Eq -- "$pattern" "$TMP/out"; then
        cat "$TMP/out"
        fail "page example $n ($kind): no line matching '$pattern'"
      else
        echo "ok   page example $n ($kind): exit $rc$([ -s "$TMP/out" ] && printf '; %s' "$(tail -1 "$TMP/out")")"
      fi
    done
  fi
fi

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all Rust crate checks passed"
