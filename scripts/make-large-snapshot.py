#!/usr/bin/env python3
"""Writes a large synthetic PyTorch memory snapshot for benchmarks (never committed).

Usage: python3 scripts/make-large-snapshot.py OUT.pickle SIZE_MB [--shared-frames]

The pickle is written opcode by opcode (protocol 4, the way Python's pickler lays out a dict of
lists of dicts: MEMOIZE after every container and string, APPENDS/SETITEMS in batches of 1000),
so a multi-GB snapshot needs no multi-GB Python object graph. Shape (docs/format/framework-inputs.md §3):
{'segments': [...], 'device_traces': [[entry, ...]], 'allocator_settings': {...}} with
alloc / free_requested / free_completed / segment_alloc entries, each with its own `frames`
list of ~20-40 frame dicts. By default every frame dict is a new object (older torch, the worst
case for a reader: nothing to share); the strings are shared through the memo, as the pickler
does for the same str objects. --shared-frames writes each distinct frame dict once and fetches
it again (BINGET), as recent torch versions do.
"""

import random
import struct
import sys

MiB = 1 << 20


class W:
    def __init__(self, f):
        self.f = f
        self.buf = bytearray()
        self.memo = 0
        self.strs = {}
        self.written = 0

    def op(self, b):
        self.buf += b
        if len(self.buf) > (8 << 20):
            self.flush()

    def flush(self):
        self.f.write(self.buf)
        self.written += len(self.buf)
        self.buf = bytearray()

    def memoize(self):
        self.buf += b"\x94"
        self.memo += 1
        return self.memo - 1

    def get(self, i):
        self.buf += b"h" + bytes([i]) if i < 256 else b"j" + struct.pack("<I", i)

    def s(self, text):
        i = self.strs.get(text)
        if i is not None:
            self.get(i)
            return
        b = text.encode()
        self.buf += b"\x8c" + bytes([len(b)]) + b if len(b) < 256 else b"X" + struct.pack("<I", len(b)) + b
        self.strs[text] = self.memoize()

    def int(self, v):
        if 0 <= v < 256:
            self.buf += b"K" + bytes([v])
        elif 0 <= v < 65536:
            self.buf += b"M" + struct.pack("<H", v)
        elif -(2**31) <= v < 2**31:
            self.buf += b"J" + struct.pack("<i", v)
        else:
            n = (v.bit_length() + 8) // 8
            self.buf += b"\x8a" + bytes([n]) + v.to_bytes(n, "little", signed=True)

    def dict_items(self, items):
        """A dict literal: EMPTY_DICT MEMOIZE MARK k v … SETITEMS (values are callables)."""
        self.buf += b"}"
        mid = self.memoize()
        self.buf += b"("
        for k, v in items:
            self.s(k)
            v()
        self.buf += b"u"
        return mid


def main():
    out, size_mb = sys.argv[1], float(sys.argv[2])
    shared = "--shared-frames" in sys.argv
    target = int(size_mb * MiB)
    rng = random.Random(5)
    files = [f"/opt/venv/lib/python3.11/site-packages/torch/nn/modules/mod{i}.py" for i in range(40)]
    names = [f"fn_{i}" for i in range(200)]
    frame_pool = [(rng.choice(files), rng.randint(1, 5000), rng.choice(names)) for _ in range(3000)]
    stacks = [[rng.choice(frame_pool) for _ in range(rng.randint(20, 40))] for _ in range(2000)]
    frame_memo = {}
    with open(out, "wb") as f:
        w = W(f)
        w.op(b"\x80\x04")
        w.buf += b"}"
        w.memoize()
        w.buf += b"("
        w.s("device_traces")
        w.buf += b"]"
        w.memoize()
        w.buf += b"]"  # device 0's list
        w.memoize()
        live = []
        addr = 0x7F0000000000
        t = 1_700_000_000_000_000
        n = 0
        peak = cur = 0

        def frames(st):
            def emit():
                w.buf += b"]"
                w.memoize()
                w.buf += b"("
                for fr in st:
                    if shared and fr in frame_memo:
                        w.get(frame_memo[fr])
                        continue
                    mid = w.dict_items([("filename", lambda: w.s(fr[0])), ("line", lambda: w.int(fr[1])),
                                        ("name", lambda: w.s(fr[2]))])
                    if shared:
                        frame_memo[fr] = mid
                w.buf += b"e"
            return emit

        w.buf += b"("
        in_batch = 0
        while w.written + len(w.buf) < target:
            t += rng.randint(1, 30)
            st = rng.choice(stacks)
            if live and (rng.random() < 0.5 or len(live) > 5000):
                a, sz, st = live.pop(rng.randrange(len(live)))
                action = "free_completed"
                cur -= sz
            else:
                sz = rng.choice([512, 4096, 65536, MiB, 3 * MiB, 32 * MiB])
                a = addr
                addr += sz
                live.append((a, sz, st))
                action = "alloc"
                cur += sz
                peak = max(peak, cur)
            w.dict_items([
                ("action", lambda: w.s(action)),
                ("addr", lambda: w.int(a)),
                ("size", lambda: w.int(sz)),
                ("stream", lambda: w.int(0)),
                ("time_us", lambda: w.int(t)),
                ("frames", frames(st)),
            ])
            n += 1
            in_batch += 1
            if in_batch == 1000:
                w.buf += b"e("
                in_batch = 0
            if len(w.buf) > (8 << 20):
                w.flush()
        w.buf += b"e"  # last APPENDS
        w.buf += b"a"  # device list into device_traces
        w.s("segments")
        w.buf += b"]"
        w.memoize()
        w.buf += b"u."
        w.flush()
    print(f"{out}: {w.written} bytes, {n} trace entries, peak allocated delta {peak} B")


if __name__ == "__main__":
    main()
