// Unit tests of the Memory view model (www/src/views/memory-model.ts), run in Node on hand-made
// MemoryAllocatorEvent / MemoryBlock / MemorySegment columns: allocation intervals, allocations made
// before the trace, peaks, the level-of-detail stacking and the state at a chosen time.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Table, Utf8, vectorFromArray, makeVector } from 'apache-arrow';
import { REPO, loadModule as load } from './harness.mjs';

const mm = await load('views/memory-model.ts');

const T0 = 1_700_000_000_000_000_000n; // Unix ns (beyond 2^53: must stay exact)
const MiB = 1 << 20;

/** Event rows: [t_us_offset, action, address, size, stack]; deltas computed like the core does. */
function events(rows, device = 0) {
  let a = 0;
  let r = 0;
  const da = [];
  const dr = [];
  for (const [, act, , size] of rows) {
    if (act === 'alloc') a += size;
    if (act === 'free_completed') a -= size;
    if (act === 'segment_alloc') r += size;
    if (act === 'segment_free') r -= size;
    da.push(BigInt(a));
    dr.push(BigInt(r));
  }
  return new Table({
    timestamp: makeVector(BigInt64Array.from(rows, (x) => T0 + BigInt(x[0]) * 1000n)),
    device: makeVector(Int32Array.from(rows, () => device)),
    action: vectorFromArray(rows.map((x) => x[1]), new Utf8()),
    address: makeVector(BigInt64Array.from(rows, (x) => BigInt(x[2]))),
    size: makeVector(BigInt64Array.from(rows, (x) => BigInt(x[3]))),
    stack_id: makeVector(BigInt64Array.from(rows, (x) => BigInt(x[4] ?? 0))),
    allocated_delta_bytes: makeVector(BigInt64Array.from(da)),
    reserved_delta_bytes: makeVector(BigInt64Array.from(dr)),
  });
}

test('intervals, pre-trace allocations, peaks, OOM', () => {
  const ev = events([
    [0, 'segment_alloc', 0x1000_0000, 64 * MiB, 9],
    [10, 'alloc', 0x1000_0000, 10 * MiB, 1],
    [20, 'alloc', 0x1100_0000, 20 * MiB, 2],
    [30, 'free_requested', 0x1000_0000, 10 * MiB, 1],
    [40, 'free_completed', 0x1000_0000, 10 * MiB, 1],
    [50, 'free_completed', 0x2000_0000, 5 * MiB, 3], // allocated before the trace
    [60, 'oom', 0, 2 ** 40, 1],
  ]);
  // Baseline: the pre-trace allocation (5 MiB) and a pre-trace segment of 32 MiB.
  const m = mm.buildMemoryModel(ev, null, null, [{ device: 0, baseline_allocated_bytes: 5 * MiB, baseline_reserved_bytes: 32 * MiB }], null);
  assert.equal(m.t0, T0);
  assert.deepEqual(Array.from(m.times), [0, 10e3, 20e3, 30e3, 40e3, 50e3, 60e3]);
  assert.equal(m.allocs.count, 3);
  assert.deepEqual(Array.from(m.allocs.start), [10e3, 20e3, -Infinity]);
  assert.deepEqual(Array.from(m.allocs.end), [40e3, Infinity, 50e3]);
  assert.deepEqual(Array.from(m.preexisting), [2]);
  assert.equal(m.peakAllocated, 35 * MiB, '5 MiB before + 10 + 20');
  assert.equal(m.peakAllocatedAt, 20e3);
  assert.equal(m.peakReserved, 96 * MiB);
  assert.equal(m.ooms.length, 1);
  assert.equal(m.ooms[0].t, 60e3);
  assert.equal(m.ooms[0].size, 2 ** 40);
});

test('layoutLarge stacks in allocation order and slides down on free; small ones are counted, not drawn', () => {
  const ev = events([
    [0, 'alloc', 100, 100, 1],
    [10, 'alloc', 200, 50, 2],
    [15, 'alloc', 300, 1, 3], // small
    [20, 'free_completed', 100, 100, 1],
    [30, 'free_completed', 200, 50, 2],
  ]);
  const m = mm.buildMemoryModel(ev, null, null, [], 0);
  // 1 ns per px over [0, 40 µs]: x = t in ns.
  const lay = mm.layoutLarge(m, 10, 0, 40e3, 1);
  assert.equal(lay.largeCount, 2);
  assert.equal(lay.smallCount, 1);
  const byAlloc = (a) => lay.rects.filter((r) => r.a === a).map((r) => [r.x0, r.x1, r.y0, r.y1]);
  assert.deepEqual(byAlloc(0), [[0, 20e3, 0, 100]]);
  // The second allocation sits on the first until it is freed, then slides to the bottom.
  assert.deepEqual(byAlloc(1), [[10e3, 20e3, 100, 150], [20e3, 30e3, 0, 50]]);
  // Zoomed out so that both allocations fall in one pixel column: no extra run.
  const coarse = mm.layoutLarge(m, 10, 0, 40e3, 1e6);
  assert.equal(coarse.rects.filter((r) => r.a === 1).length, 1);
});

test('stateAt places live allocations in their segments; blocks active at the snapshot but never allocated are pre-trace', () => {
  const ev = events([
    [0, 'segment_alloc', 1000, 500, 0],
    [10, 'alloc', 1000, 100, 1],
    [20, 'alloc', 1100, 100, 2],
    [30, 'free_completed', 1000, 100, 1],
    [40, 'alloc', 9000, 10, 3], // in no known segment
  ]);
  const blocks = new Table({
    device: makeVector(Int32Array.from([0, 0, 0])),
    address: makeVector(BigInt64Array.from([1100n, 5000n, 5100n])),
    size: makeVector(BigInt64Array.from([100n, 64n, 36n])),
    state: vectorFromArray(['active_allocated', 'active_allocated', 'inactive'], new Utf8()),
    stack_id: makeVector(BigInt64Array.from([2n, 4n, 0n])),
  });
  const segs = new Table({
    device: makeVector(Int32Array.from([0, 0])),
    address: makeVector(BigInt64Array.from([1000n, 5000n])),
    total_size: makeVector(BigInt64Array.from([500n, 100n])),
    stack_id: makeVector(BigInt64Array.from([0n, 0n])),
  });
  const m = mm.buildMemoryModel(ev, blocks, segs, [], 0);
  // Block at 5000 was never allocated in the trace: live throughout; the one at 1100 is known.
  assert.equal(m.preexisting.length, 1);
  assert.equal(m.allocs.addr[m.preexisting[0]], 5000);
  assert.equal(m.segments.length, 2);
  const s25 = mm.stateAt(m, 25e3);
  assert.deepEqual(s25.segments.map((s) => [s.addr, s.blocks.map((a) => m.allocs.addr[a])]), [[1000, [1000, 1100]], [5000, [5000]]]);
  const s45 = mm.stateAt(m, 45e3);
  assert.deepEqual(s45.segments.map((s) => [s.addr, s.blocks.map((a) => m.allocs.addr[a])]), [[1000, [1100]], [5000, [5000]]]);
  assert.deepEqual(s45.orphans.map((a) => m.allocs.addr[a]), [9000]);
});
