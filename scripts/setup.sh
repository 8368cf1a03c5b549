#!/usr/bin/env bash
# Installs what neuronscope's build and tests need, skipping what is already there:
# Debian chromium (browser tests), the wasm32 Rust target, wasm-bindgen-cli (pinned to the
# wasm-bindgen crate version), rustfmt/clippy, pyarrow (Parquet cross-check) and npm packages.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then SUDO=sudo; fi

if ! [ -x /usr/bin/chromium ]; then
  echo "setup: installing chromium (apt)"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
fi

rustup target list --installed 2>/dev/null | grep -q '^wasm32-unknown-unknown$' \
  || rustup target add wasm32-unknown-unknown
rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy
rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt

WBG_VERSION=0.2.130
if ! wasm-bindgen --version 2>/dev/null | grep -q "$WBG_VERSION"; then
  echo "setup: building wasm-bindgen-cli $WBG_VERSION (a few minutes)"
  cargo install -q wasm-bindgen-cli --version "$WBG_VERSION"
fi

python3 -c 'import pyarrow' 2>/dev/null || python3 -m pip install -q pyarrow

if [ package-lock.json -nt node_modules/.package-lock.json ] || [ ! -d node_modules ]; then
  npm ci --no-audit --no-fund
fi
