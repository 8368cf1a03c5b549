#!/usr/bin/env python3
"""Opens every Parquet file neuronscope wrote under DIR with pyarrow (an independent reader) and
checks table and column names against Neuron Explorer's schema 7.4.0 as our SchemaFields table
declares it, plus row counts that must be non-zero for a paired device profile.

usage: python3 tests/parquet_check.py DIR
"""
import pathlib
import sys

import pyarrow.parquet as pq

# Explorer's leading columns of the tables issue 2 writes (spec/explorer-schema.md section 5).
EXPECTED_PREFIX = {
    "Instruction": ["start_ts", "end_ts", "duration_ns", "engine", "timeline_track", "pcore_idx",
                    "opcode", "operands"],
    "SemaphoreUpdate": ["timestamp", "id", "value"],
    "Metadata": ["profile_schema_version", "ntff_version", "num_physical_cores", "vnc_enabled"],
    "NeffHeader": ["network_name", "uuid", "hash"],
    "SchemaFields": ["table_name", "table_description", "field_name"],
}
REQUIRED_NONEMPTY = ["Instruction", "SemaphoreUpdate", "Metadata", "NeffHeader", "SchemaFields"]


def main(root):
    root = pathlib.Path(root)
    devices = sorted({p.parent for p in root.rglob("*.parquet")})
    if not devices:
        sys.exit(f"no Parquet files under {root}")
    checked = failed = 0
    for dev in devices:
        tables = {p.stem: pq.read_table(p) for p in sorted(dev.glob("*.parquet"))}
        declared = {}
        sf = tables.get("SchemaFields")
        if sf is not None:
            for t, f in zip(sf.column("table_name").to_pylist(), sf.column("field_name").to_pylist()):
                declared.setdefault(t, []).append(f)
        for name, t in tables.items():
            checked += 1
            problems = []
            if name in EXPECTED_PREFIX and t.column_names[: len(EXPECTED_PREFIX[name])] != EXPECTED_PREFIX[name]:
                problems.append(f"columns {t.column_names[:8]} do not start with {EXPECTED_PREFIX[name]}")
            if name != "SchemaFields" and declared.get(name) != t.column_names:
                problems.append("columns differ from what SchemaFields declares")
            if problems:
                failed += 1
                print(f"FAIL {dev.name}/{name}.parquet: " + "; ".join(problems))
            else:
                print(f"ok   {dev.name}/{name}.parquet: {t.num_rows} rows, {t.num_columns} columns")
        if "Instruction" in tables:
            for name in REQUIRED_NONEMPTY:
                if name not in tables or tables[name].num_rows == 0:
                    failed += 1
                    print(f"FAIL {dev.name}: table {name} missing or empty")
    print(f"{checked - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "target/pq")
