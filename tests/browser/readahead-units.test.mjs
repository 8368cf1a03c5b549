// Unit tests of the decode worker's read-ahead (www/src/readahead.ts), run in Node with a stand-in
// for the helper worker that fills the shared slots when the test says so (the real helper is
// readahead-worker.ts; the page's path is covered by system-bound.test.mjs). What must hold: a
// served read has exactly the file's bytes, and every case it cannot serve returns -1 so the core
// reads the bytes itself.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadModule as load } from './harness.mjs';

const ra = await load('readahead.ts');
const MiB = 1 << 20;

/** A file of `n` bytes whose byte i is a hash of i (so any misplaced piece shows). */
function file(n) {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 2654435761) >>> 24;
  return { blob: new Blob([b]), bytes: b };
}

/** The helper's stand-in: keeps the requests; `pump()` answers them as readahead-worker.ts does, or as told. */
function helper({ start = true } = {}) {
  const h = {
    queue: [],
    control: null,
    data: null,
    postMessage(m) {
      if (m.op === 'init') {
        h.control = new Int32Array(m.control);
        h.data = m.data;
        if (start) Atomics.store(h.control, ra.READY_AT, 1);
      } else h.queue.push(m);
    },
    async pump(how = 'read') {
      for (const m of h.queue.splice(0)) {
        let state = ra.FAILED;
        let n = 0;
        if (how === 'read') {
          const bytes = new Uint8Array(await m.blob.slice(m.start, m.end).arrayBuffer());
          new Uint8Array(h.data, m.slot * ra.SLOT_BYTES, bytes.length).set(bytes);
          n = bytes.length;
          state = ra.DONE;
        }
        Atomics.store(h.control, ra.SLOTS + m.slot, n);
        Atomics.store(h.control, m.slot, state);
      }
    },
  };
  return h;
}

test('a stream read in pieces: the first is read by the core, every later one comes from a slot with the same bytes', async () => {
  const { blob, bytes } = file(40 * MiB);
  const h = helper();
  const r = new ra.ReadAhead(h);
  const piece = 16 * MiB;
  const got = new Uint8Array(bytes.length);
  for (let at = 0; at < bytes.length; at += piece) {
    const buf = new Uint8Array(Math.min(piece, bytes.length - at));
    const n = r.read(blob, at, buf);
    if (at === 0) {
      assert.equal(n, -1, 'nothing read ahead yet');
      buf.set(bytes.subarray(0, buf.length));
    } else assert.equal(n, buf.length, `piece at ${at} served`);
    got.set(buf, at);
    await h.pump();
  }
  assert.ok(Buffer.from(got).equals(Buffer.from(bytes)), 'the bytes of the file, in place');
  // Pieces after 0 and 16 MiB (the last piece, 8 MiB, ends the file: nothing after it).
  assert.deepEqual(r.stats, { served: 2, missed: 1, asked: 2, waitMs: 0 });
});

test('two streams read in turn each keep their piece ahead; a read inside a piece is served from it', async () => {
  const { blob, bytes } = file(64 * MiB);
  const h = helper();
  const r = new ra.ReadAhead(h);
  const piece = 8 * MiB;
  const buf = new Uint8Array(piece);
  r.read(blob, 0, buf);
  r.read(blob, 32 * MiB, buf);
  await h.pump();
  for (const at of [8 * MiB, 40 * MiB]) {
    assert.equal(r.read(blob, at, buf), piece, `stream at ${at}`);
    assert.ok(Buffer.from(buf).equals(Buffer.from(bytes.subarray(at, at + piece))));
  }
  await h.pump();
  const small = new Uint8Array(MiB);
  assert.equal(r.read(blob, 17 * MiB, small), MiB, 'a smaller read inside the piece at 16 MiB');
  assert.ok(Buffer.from(small).equals(Buffer.from(bytes.subarray(17 * MiB, 18 * MiB))));
  assert.equal(r.stats.asked, 4, 'a 1 MiB read asks for nothing ahead');
});

test('a piece of another file, or reaching past the piece, is not served', async () => {
  const a = file(32 * MiB);
  const b = file(32 * MiB);
  const h = helper();
  const r = new ra.ReadAhead(h);
  const buf = new Uint8Array(8 * MiB);
  r.read(a.blob, 0, buf);
  await h.pump();
  assert.equal(r.read(b.blob, 8 * MiB, buf), -1, 'same offset, other file');
  assert.equal(r.read(a.blob, 12 * MiB, buf), -1, 'runs 4 MiB past the piece read ahead (8 – 16 MiB)');
});

test('a failed read ahead and a helper that never answers both leave the read to the core', async () => {
  const { blob } = file(32 * MiB);
  const buf = new Uint8Array(8 * MiB);
  const h = helper();
  const r = new ra.ReadAhead(h);
  r.read(blob, 0, buf);
  await h.pump('fail');
  assert.equal(r.read(blob, 8 * MiB, buf), -1, 'failed: the core reads (and names the error)');

  const mute = helper();
  const q = new ra.ReadAhead(mute, 50);
  q.read(blob, 0, buf);
  assert.equal(q.read(blob, 8 * MiB, buf), -1, 'no answer within the wait');
  assert.ok(q.stats.waitMs >= 45, `waited ${q.stats.waitMs} ms`);
  const asked = q.stats.asked;
  assert.equal(q.read(blob, 16 * MiB, buf), -1);
  assert.equal(q.stats.asked, asked, 'taken for gone: asks for nothing more');

  const idle = helper({ start: false });
  const z = new ra.ReadAhead(idle);
  assert.equal(z.read(blob, 0, buf), -1);
  assert.equal(z.read(blob, 8 * MiB, buf), -1, 'a helper not started yet: the core reads');
  assert.equal(z.stats.asked, 0, 'nothing asked of a helper that has not started (it could not answer)');
});

test('small reads ask for nothing ahead', () => {
  const { blob } = file(8 * MiB);
  const h = helper();
  const r = new ra.ReadAhead(h);
  for (let at = 0; at < 8 * MiB; at += MiB) r.read(blob, at, new Uint8Array(MiB));
  assert.equal(h.queue.length, 0);
  assert.equal(r.stats.asked, 0);
});
