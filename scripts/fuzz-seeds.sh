#!/usr/bin/env bash
# Builds the fuzz targets' seed corpora into fuzz/corpus/<target>/ (git-ignored) from the real
# captures in ../shared/samples and from our own writers (`neuronscope synth`, the memory-snapshot
# fixture script). Nothing is copied into the repository. Seeds over SEED_MAX_BYTES (default
# 256 KiB) are left out, so the fuzzer stays fast; the pipeline target's seeds are whole folders
# packed as [name length u8][name][data length u32 LE][data]… (fuzz/src/lib.rs `unpack`).
#
# Usage: scripts/fuzz-seeds.sh          (then scripts/fuzz.sh [SECONDS])
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
samples=${SAMPLES:-$root/../shared/samples}
max=${SEED_MAX_BYTES:-262144}
corpus=$root/fuzz/corpus
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

(cd "$root" && cargo build --profile ci --bin neuronscope -q)
bin=$root/target/ci/neuronscope
"$bin" synth "$tmp/demo" >/dev/null
"$bin" synth "$tmp/sys" --kineto-mb 0 >/dev/null
python3 "$root/crate/tests/fixtures/make_snapshots.py" "$tmp/snap" >/dev/null

python3 - "$samples" "$tmp" "$corpus" "$max" "$root" <<'PY'
import hashlib, io, os, struct, sys, tarfile, gzip
samples, tmp, corpus, maxb, root = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
counts = {}

def put(target, data):
    if len(data) > maxb:
        return
    d = os.path.join(corpus, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)
    counts[target] = counts.get(target, 0) + 1

def files(top, pred=lambda p: True):
    for dp, _, fs in os.walk(top):
        for f in sorted(fs):
            p = os.path.join(dp, f)
            if pred(p):
                yield p

def read(p):
    with open(p, "rb") as f:
        return f.read()

both = [samples, tmp]
for top in both:
    for p in files(top, lambda p: p.endswith(".neff")):
        put("neff", read(p))
    for p in files(top, lambda p: p.endswith(".ntff")):
        put("ntff", read(p))
        put("ntff_with_neff", read(p))
    for kind in ["trace_info", "ntrace", "cpu_util", "host_mem"]:
        for p in files(top, lambda p, k=kind: os.path.basename(p) == k + ".pb"):
            put(kind, read(p))
    for p in files(top, lambda p: p.endswith(".json")):
        head = read(p)[:1 << 16]
        if b"traceEvents" in head or b'"ph"' in head:
            put("kineto", read(p))
    for p in files(top, lambda p: p.endswith(".pickle")):
        put("pickle", read(p))

# Small Kineto shapes: array form, object form with the base after the events, B/E, flows,
# counters, metadata, a string tid, fractional microseconds.
ev = ('{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 8, "ts": 1.5004, "dur": 2.25, '
      '"args": {"External id": 3}}, {"ph": "B", "name": "step", "pid": 7, "tid": "stream 1", "ts": 20}, '
      '{"ph": "E", "pid": 7, "tid": "stream 1", "ts": 25.0}, {"ph": "C", "name": "mem", "pid": 7, "tid": 8, '
      '"ts": 30, "args": {"bytes": 42}}, {"ph": "M", "name": "thread_name", "pid": 7, "tid": 8, '
      '"args": {"name": "main"}}, {"ph": "s", "id": 5, "cat": "ac2g", "name": "ac2g", "pid": 7, "tid": 8, '
      '"ts": 2}, {"ph": "f", "id": 5, "cat": "ac2g", "name": "ac2g", "bp": "e", "pid": 7, "tid": 8, "ts": 3}')
put("kineto", ("[" + ev + "]").encode())
put("kineto", ('{"schemaVersion": 1, "traceEvents": [' + ev + '], "baseTimeNanoseconds": 1700000000000000000}').encode())
put("kineto", ('{"baseTimeNanoseconds": 1700000000000000000, "traceEvents": [' + ev).encode())

# The system set: the four files of each System capture, each cut to a quarter of the budget.
for top in both:
    dirs = {os.path.dirname(p) for p in files(top, lambda p: p.endswith("trace_info.pb"))}
    for d in sorted(dirs):
        out = b""
        for k in ["trace_info", "ntrace", "cpu_util", "host_mem"]:
            p = os.path.join(d, k + ".pb")
            b = read(p)[: maxb // 4 - 4] if os.path.exists(p) else b""
            out += struct.pack("<I", len(b)) + b
        put("system_set", out)

# Source archives: our own Python and shell files, as .tar.gz and .tar, ustar, GNU and PAX.
srcs = [p for p in files(os.path.join(root, "scripts")) if p.endswith((".py", ".sh", ".mjs"))]
srcs += [p for p in files(os.path.join(root, "crate", "tests", "fixtures"))]
for fmt in [tarfile.USTAR_FORMAT, tarfile.GNU_FORMAT, tarfile.PAX_FORMAT]:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as t:
        for i, p in enumerate(srcs[:6]):
            name = os.path.relpath(p, root)
            if fmt != tarfile.USTAR_FORMAT and i == 0:
                name = "very/" * 25 + os.path.basename(p)  # over 100 bytes: L or PAX path
            t.add(p, arcname=name)
    put("source_tar", buf.getvalue())
    put("source_tar", gzip.compress(buf.getvalue(), mtime=0))

# Whole folders for the pipeline: the demo capture, the System capture, each small sample dir.
def pack(pairs):
    out = b""
    for name, data in pairs:
        n = name.encode()[:255]
        out += bytes([len(n)]) + n + struct.pack("<I", len(data)) + data
    return out

def folder(top):
    base = os.path.dirname(top.rstrip("/"))
    return [(os.path.relpath(p, base), read(p)) for p in files(top)]

put("pipeline", pack(folder(os.path.join(tmp, "demo"))))
put("pipeline", pack(folder(os.path.join(tmp, "sys"))))
put("pipeline", pack(folder(os.path.join(tmp, "demo")) + [("demo/memory_snapshot_rank0.pickle", read(os.path.join(tmp, "snap", "snapshot_p4.pickle")))]))
for top in sorted(os.listdir(samples)):
    for dp, dns, fs in os.walk(os.path.join(samples, top)):
        pairs = [(os.path.relpath(os.path.join(dp, f), os.path.dirname(dp)), read(os.path.join(dp, f)))
                 for f in sorted(fs) if f.endswith((".neff", ".ntff", ".pb"))]
        if pairs and sum(len(b) for _, b in pairs) <= maxb:
            put("pipeline", pack(pairs))

for t in sorted(counts):
    print(f"{t}: {counts[t]} seeds")
PY
