#!/usr/bin/env bash
# Runs every fuzz target (fuzz/, cargo-fuzz + libFuzzer) for SECONDS each (default 60), one
# after another (the machine is shared), with -rss_limit_mb=2048 -timeout=10, debug assertions
# and overflow checks on, and prints per target: executions, corpus size, crashes (crash-, oom-,
# timeout- and leak- files in fuzz/artifacts/<target>/). Corpora grow in fuzz/corpus/<target>/
# (seed them first with scripts/fuzz-seeds.sh); both directories are git-ignored.
#
# Usage: scripts/fuzz.sh [SECONDS] [TARGET…]
# Needs: rustup toolchain install nightly --profile minimal; cargo install cargo-fuzz
# Exit status: 1 when any target found a crash, OOM or timeout.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-60}
shift || true
cd "$root"
flags=(-a -s none)   # debug assertions + overflow checks; safe Rust needs no ASan
cargo +nightly fuzz build "${flags[@]}" >/dev/null || { echo "fuzz build failed" >&2; exit 2; }
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(cargo +nightly fuzz list)
fi
dict_of() {
  case "$1" in
    neff) echo neff ;;
    ntff|ntff_with_neff) echo ntff ;;
    trace_info|ntrace|cpu_util|host_mem|system_set) echo pb ;;
    kineto) echo json ;;
    pickle) echo pickle ;;
    source_tar) echo tar ;;
    *) echo all ;;
  esac
}
mkdir -p fuzz/artifacts && cat fuzz/dict/{neff,ntff,pb,json,pickle,tar}.dict > fuzz/artifacts/all.dict
printf '%-16s %12s %8s %8s %s\n' target executions corpus crashes seconds
found=0
for t in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
  d=$(dict_of "$t")
  dict=fuzz/dict/$d.dict
  [ "$d" = all ] && dict=fuzz/artifacts/all.dict
  log=fuzz/artifacts/$t/last-run.log
  start=$(date +%s)
  cargo +nightly fuzz run "${flags[@]}" "$t" -- \
    -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -dict="$dict" \
    -print_final_stats=1 >"$log" 2>&1
  took=$(( $(date +%s) - start ))
  execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log" | tail -1)
  corpus=$(find "fuzz/corpus/$t" -type f | wc -l)
  crashes=$(find "fuzz/artifacts/$t" -type f \( -name 'crash-*' -o -name 'oom-*' -o -name 'timeout-*' -o -name 'leak-*' \) | wc -l)
  printf '%-16s %12s %8s %8s %s\n' "$t" "${execs:-?}" "$corpus" "$crashes" "$took"
  if [ "$crashes" -gt 0 ]; then
    found=1
    grep -m1 -E 'panicked at|ERROR: libFuzzer|SUMMARY' "$log" | sed 's/^/    /'
  fi
done
rm -f fuzz/artifacts/all.dict
exit $found
