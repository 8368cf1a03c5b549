#!/usr/bin/env python3
"""Many nodes, one dataset (issue 12): `neuronscope convert` of two captures (two instances) writes
a Hive-partitioned dataset that DuckDB reads whole with hive_partitioning=true. Checks, against
independent per-profile conversions of each capture alone (`--layout tree`, read file by file with
pyarrow):

- per-instance, per-engine busy time (sum of ActiveTime.duration_ns, the merged busy intervals)
  from one DuckDB query over the dataset equals the sum of the per-profile tables;
- Instruction rows per instance likewise, and the known totals (436 and 7 628 instructions);
- the partition values are the ones the NTFF headers name (instance id, recording process id).

usage: python3 tests/dataset_check.py [--bin target/ci/neuronscope] [--work DIR]
"""
import argparse
import pathlib
import shutil
import subprocess
import sys

import duckdb
import pyarrow.compute as pc
import pyarrow.parquet as pq

SAMPLES = pathlib.Path(__file__).resolve().parent.parent.parent / "shared" / "samples"
# capture folder → (instance, pid) its v6 NTFF header names (info fields 17, 18).
CAPTURES = {
    "allenkchau-trainium-kernel-fusion/profiling/artifacts/fused_bf16_s512": ("i-077c6ce2456b98b8d", 34382),
    "KevGomes-nki-moe-megakernel/output/i-0af76a70a6d3864dd_pid_713479": ("i-0af76a70a6d3864dd", 723577),
}
INSTRUCTIONS = {"i-077c6ce2456b98b8d": 436, "i-0af76a70a6d3864dd": 7628}


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"FAIL {' '.join(cmd)} exited {r.returncode}\n{r.stdout}\n{r.stderr}")


def per_profile(tree_out, table):
    """Rows of `table` in every device folder of a tree-layout conversion, read one file at a time."""
    return [pq.read_table(p) for p in sorted(tree_out.rglob(f"{table}.parquet"))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/ci/neuronscope")
    ap.add_argument("--work", default="target/dataset-check")
    a = ap.parse_args()
    work = pathlib.Path(a.work)
    shutil.rmtree(work, ignore_errors=True)
    dataset = work / "dataset"
    inputs = [str(SAMPLES / c) for c in CAPTURES]
    run([a.bin, "convert", "--quiet", *inputs, "-o", str(dataset)])

    failed = 0

    def check(ok, what):
        nonlocal failed
        print(("ok   " if ok else "FAIL ") + what)
        failed += 0 if ok else 1

    # The independent side: each capture converted alone, in the tree layout.
    busy_expected, rows_expected = {}, {}
    for i, (cap, (instance, _)) in enumerate(CAPTURES.items()):
        tree = work / f"alone{i}"
        run([a.bin, "convert", "--quiet", "--layout", "tree", str(SAMPLES / cap), "-o", str(tree)])
        for t in per_profile(tree, "ActiveTime"):
            for engine, dur in zip(t.column("engine").to_pylist(), t.column("duration_ns").to_pylist()):
                key = (instance, engine)
                busy_expected[key] = busy_expected.get(key, 0) + dur
        rows_expected[instance] = sum(t.num_rows for t in per_profile(tree, "Instruction"))

    con = duckdb.connect()
    glob = lambda table: str(dataset / table / "**" / "*.parquet")
    busy = {
        (inst, eng): int(total)
        for inst, eng, total in con.execute(
            "SELECT instance, engine, sum(duration_ns) FROM read_parquet(?, hive_partitioning = true) "
            "GROUP BY ALL ORDER BY ALL",
            [glob("ActiveTime")],
        ).fetchall()
    }
    check(len({i for i, _ in busy}) == 2, f"two instances in the dataset: {sorted({i for i, _ in busy})}")
    check(busy == busy_expected, f"per-instance, per-engine busy time ({len(busy)} pairs) = per-profile sums")
    for inst in sorted(INSTRUCTIONS):
        total = sum(v for (i, _), v in busy.items() if i == inst)
        want = sum(v for (i, _), v in busy_expected.items() if i == inst)
        check(total == want and total > 0, f"{inst}: busy time {total} ns over all engines = {want}")

    rows = dict(
        con.execute(
            "SELECT instance, count(*) FROM read_parquet(?, hive_partitioning = true) GROUP BY ALL",
            [glob("Instruction")],
        ).fetchall()
    )
    check(rows == rows_expected == INSTRUCTIONS, f"Instruction rows per instance {rows} = {rows_expected} = {INSTRUCTIONS}")

    parts = set(
        con.execute(
            "SELECT DISTINCT instance, pid FROM read_parquet(?, hive_partitioning = true)",
            [glob("Instruction")],
        ).fetchall()
    )
    check(parts == set(CAPTURES.values()), f"(instance, pid) partitions {sorted(parts)} = the NTFF headers'")

    profiles = pq.read_table(dataset / "_profiles.parquet")
    devices = pc.equal(profiles.column("part"), "device")
    check(
        profiles.num_rows == 3 and pc.sum(devices.cast("int64")).as_py() == 2,
        f"_profiles.parquet: {profiles.num_rows} rows (2 device profiles + 1 system profile)",
    )
    print(f"{'all passed' if not failed else f'{failed} failed'}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
