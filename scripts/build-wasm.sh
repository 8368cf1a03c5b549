#!/usr/bin/env bash
# Builds the wasm core for the web app: crate `neuronscope` → wasm32 → wasm-bindgen (--target web)
# into www/public/pkg, which Vite copies into www/dist/pkg. Installs the rust wasm target and
# wasm-bindgen-cli (pinned to the crate's wasm-bindgen version) only when missing. No wasm-pack.
set -euo pipefail
cd "$(dirname "$0")/.."

WB_VERSION=0.2.130
export PATH="$HOME/.cargo/bin:$PATH"

if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  echo "build-wasm: adding rust target wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi
if ! command -v wasm-bindgen >/dev/null 2>&1 || [[ "$(wasm-bindgen --version 2>/dev/null)" != *"$WB_VERSION"* ]]; then
  echo "build-wasm: installing wasm-bindgen-cli $WB_VERSION"
  cargo install wasm-bindgen-cli --version "$WB_VERSION"
fi

# wasm-release: release with fat LTO and one codegen unit (a wasm build is linked once, so the
# slower link pays off; native builds keep thin LTO). Another profile: NEURONSCOPE_WASM_PROFILE.
PROFILE="${NEURONSCOPE_WASM_PROFILE:-wasm-release}"
# 128-bit SIMD for the wasm target only (Chromium ≥ 91, Firefox ≥ 89, Safari ≥ 16.4); native
# builds are untouched. Set CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS to override.
export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="${CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS--C target-feature=+simd128}"
# The crate is an rlib for native builds; the cdylib the browser needs is requested here only.
if [[ "$PROFILE" == dev ]]; then
  cargo rustc -p neuronscope --lib --target wasm32-unknown-unknown --crate-type cdylib
else
  cargo rustc -p neuronscope --lib --profile "$PROFILE" --target wasm32-unknown-unknown --crate-type cdylib
fi

TARGET_DIR="$(cargo metadata --format-version 1 --no-deps 2>/dev/null | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
TARGET_DIR="${TARGET_DIR:-target}"
# cargo writes the dev profile to debug/.
OUT_DIR="$PROFILE"
[[ "$PROFILE" == dev ]] && OUT_DIR=debug
WASM="$TARGET_DIR/wasm32-unknown-unknown/$OUT_DIR/neuronscope.wasm"
rm -rf www/public/pkg
wasm-bindgen --target web --out-dir www/public/pkg "$WASM"
# Binaryen's optimiser (npm devDependency `binaryen`, not a system package) after wasm-bindgen,
# which rewrites the module: opt-in with NEURONSCOPE_WASM_OPT=1 (npm's binaryen is itself
# compiled to JS/wasm and takes minutes on the 8 MB module); never for dev builds.
WASM_OPT=node_modules/.bin/wasm-opt
if [[ "$PROFILE" != dev && "${NEURONSCOPE_WASM_OPT:-0}" == 1 && -x "$WASM_OPT" ]]; then
  BG=www/public/pkg/neuronscope_bg.wasm
  "$WASM_OPT" -O3 --enable-simd --enable-bulk-memory --enable-nontrapping-float-to-int \
    --enable-sign-ext --enable-mutable-globals --enable-reference-types --enable-multivalue \
    "$BG" -o "$BG.opt"
  mv "$BG.opt" "$BG"
  echo "build-wasm: wasm-opt -O3 applied"
fi
echo "build-wasm: wrote www/public/pkg ($(du -sh www/public/pkg | cut -f1))"
