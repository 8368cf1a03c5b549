#!/usr/bin/env bash
# Every test of the project (the README's test command runs this via `npm test`; CI's .ci/run too):
# first scripts/setup.sh installs whatever is missing (as `npm start` does), then hygiene (rustfmt,
# clippy, strict TypeScript, format citations), Rust unit + golden/integration tests on ../shared/samples, a pyarrow
# read of our Parquet, DuckDB over a dataset of two captures, the wasm + web build and the browser
# tests. A failure names its step.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

STEP="start"
STEP_T0=$SECONDS
step() {
  if [ "$STEP" != start ]; then printf '    (%s: %d s)\n' "$STEP" $((SECONDS - STEP_T0)); fi
  STEP="$*"
  STEP_T0=$SECONDS
  printf '\n=== %s\n' "$STEP"
}
trap 'rc=$?; printf "\ntest: FAILED in step \"%s\" (exit %d); the output above says why\n" "$STEP" "$rc" >&2' ERR

if [ ! -d ../shared/samples ]; then
  echo "test: ../shared/samples is missing (the tests read real captures from there)" >&2
  exit 1
fi

step "setup: install what is missing (scripts/setup.sh)"
bash scripts/setup.sh

step "cargo fmt --check"
cargo fmt --all -- --check
step "cargo clippy -D warnings (native and wasm32)"
cargo clippy --all-targets -- -D warnings
cargo clippy --lib --target wasm32-unknown-unknown -- -D warnings
step "TypeScript (strict)"
npm run --silent typecheck
step "format citations (every ntff.md §N etc. names a section of docs/format/)"
bash scripts/check-citations.sh --quiet

step "Rust tests (unit, golden against AWS JSON exports, pairing, samples, CLI)"
cargo test --profile ci -- --nocapture

step "Parquet written by the CLI opens in pyarrow (Hive dataset of two captures)"
rm -rf target/pq && mkdir -p target/pq
./target/ci/neuronscope convert --quiet \
  ../shared/samples/allenkchau-trainium-kernel-fusion/profiling/artifacts/fused_bf16_s512 \
  ../shared/samples/KevGomes-nki-moe-megakernel/output/i-0af76a70a6d3864dd_pid_713479 \
  -o target/pq/dataset
python3 tests/parquet_check.py target/pq/dataset

step "DuckDB over the dataset: per-instance, per-engine busy time = per-profile sums"
python3 tests/dataset_check.py --bin ./target/ci/neuronscope --work target/dataset-check

step "wasm + web build"
npm run --silent build

step "browser tests (Playwright + Debian chromium)"
npm run --silent test:browser

step "done"
echo "test: every step passed"
