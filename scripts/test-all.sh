#!/usr/bin/env bash
# Every test of the project (the README's test command runs this via `npm test`):
# hygiene (rustfmt, clippy, strict TypeScript), Rust unit + golden/integration tests on
# ../shared/samples, the wasm + web build, a pyarrow read of our Parquet, and the browser tests.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

step() { printf '\n=== %s\n' "$*"; }

if [ ! -d ../shared/samples ]; then
  echo "test: ../shared/samples is missing (the tests read real captures from there)" >&2
  exit 1
fi

step "cargo fmt --check"
cargo fmt --all -- --check
step "cargo clippy -D warnings (native and wasm32)"
cargo clippy --all-targets -- -D warnings
cargo clippy --lib --target wasm32-unknown-unknown -- -D warnings
step "TypeScript (strict)"
npm run --silent typecheck

step "Rust tests (unit, golden against AWS JSON exports, pairing, samples)"
cargo test --profile ci -- --nocapture

step "Parquet written by the CLI opens in pyarrow"
rm -rf target/pq && mkdir -p target/pq
./target/ci/neuronscope convert ../shared/samples/allenkchau-trainium-kernel-fusion/profiling/artifacts/fused_bf16_s512 -o target/pq/fused >/dev/null
./target/ci/neuronscope convert ../shared/samples/KevGomes-nki-moe-megakernel/output/i-0af76a70a6d3864dd_pid_713479 -o target/pq/kev >/dev/null
python3 tests/parquet_check.py target/pq

step "wasm + web build"
npm run --silent build

step "browser tests (Playwright + Debian chromium)"
npm run --silent test:browser
