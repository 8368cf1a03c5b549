#!/usr/bin/env python3
"""Opens every Parquet file neuronscope wrote under DIR with pyarrow (an independent reader) and
checks table and column names against Neuron Explorer's schema 7.4.0 as our SchemaFields table
declares it, plus row counts that must be non-zero for a paired device profile.

DIR is either layout of `neuronscope convert`: the Hive dataset
(DIR/<Table>/instance=…/pid=…/profile=…/part-0.parquet, the default) or the tree
(DIR/<profile>/<device>/<Table>.parquet, --layout tree). Files whose first path component starts
with `_` (`_profiles.parquet`, `_state/`) are not tables.

usage: python3 tests/parquet_check.py DIR
"""
import pathlib
import sys

import pyarrow.parquet as pq

# Explorer's leading columns of the tables issue 2 writes (docs/format/explorer-schema.md section 5).
EXPECTED_PREFIX = {
    "Instruction": ["start_ts", "end_ts", "duration_ns", "engine", "timeline_track", "pcore_idx",
                    "opcode", "operands"],
    "SemaphoreUpdate": ["timestamp", "id", "value"],
    "Metadata": ["profile_schema_version", "ntff_version", "num_physical_cores", "vnc_enabled"],
    "NeffHeader": ["network_name", "uuid", "hash"],
    "SchemaFields": ["table_name", "table_description", "field_name"],
}
REQUIRED_NONEMPTY = ["Instruction", "SemaphoreUpdate", "Metadata", "NeffHeader", "SchemaFields"]


def profiles(root):
    """{profile key: {table name: path}} for either layout."""
    out = {}
    for p in sorted(root.rglob("*.parquet")):
        parts = p.relative_to(root).parts
        if parts[0].startswith("_"):
            continue
        if any(x.startswith("profile=") for x in parts):
            table, key = parts[0], "/".join(parts[1:-1])
        else:
            table, key = p.stem, "/".join(parts[:-1])
        out.setdefault(key, {})[table] = p
    return out


def main(root):
    root = pathlib.Path(root)
    found = profiles(root)
    if not found:
        sys.exit(f"no Parquet files under {root}")
    checked = failed = 0
    for key in sorted(found):
        tables = {name: pq.read_table(p) for name, p in sorted(found[key].items())}
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
                print(f"FAIL {key} {name}: " + "; ".join(problems))
            else:
                print(f"ok   {key} {name}: {t.num_rows} rows, {t.num_columns} columns")
        if "Instruction" in tables:
            for name in REQUIRED_NONEMPTY:
                if name not in tables or tables[name].num_rows == 0:
                    failed += 1
                    print(f"FAIL {key}: table {name} missing or empty")
    print(f"{checked - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "target/pq")
