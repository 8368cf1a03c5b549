#!/usr/bin/env bash
# Installs what neuronscope's build and tests need, skipping what is already there:
# Debian chromium (browser tests), the wasm32 Rust target, wasm-bindgen-cli (pinned to the
# wasm-bindgen crate version), rustfmt/clippy, pyarrow and duckdb (Parquet cross-checks) and npm
# packages. `npm test` (scripts/test-all.sh) runs it first, so a fresh machine needs nothing else;
# a second run only checks. (`npm start` installs what the build needs itself: start.sh, build-wasm.sh.)
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

# Python readers the tests use: pyarrow (an independent Parquet reader) and duckdb (the dataset
# of many captures read as one, tests/dataset_check.py).
for mod in pyarrow duckdb; do
  python3 -c "import $mod" 2>/dev/null || python3 -m pip install -q "$mod" || {
    echo "setup: could not install the Python package $mod (python3 -m pip install $mod)" >&2
    exit 1
  }
done

if [ package-lock.json -nt node_modules/.package-lock.json ] || [ ! -d node_modules ]; then
  npm ci --no-audit --no-fund
fi
