// Unit tests of the level-of-detail pseudo-rows (views/tracks/lod.ts `summaryTable`) and of the
// device-row builder run in short steps (views/device-rows.ts `addDeviceRowsYielding`), in Node on
// small synthetic inputs: the modules are bundled on the fly with esbuild, as in units.test.mjs.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { tableFromArrays } from 'apache-arrow';
import { REPO, loadModule as load } from './harness.mjs';

const lod = await load('views/tracks/lod.ts');
const model = await load('views/timeline-model.ts');
const rows = await load('views/device-rows.ts');

/** The core's packed answer (crate::lod::QUERY_FIELDS = 8 per bucket) for `tracks`. */
function packed(tracks) {
  const out = [];
  for (const t of tracks) {
    out.push(t.id, t.width, t.first, t.buckets.length);
    // index, busy, count, dom, (unused), vmax, (unused), carry
    for (const b of t.buckets) out.push(b.index, b.busy, b.count, b.dom, 0, b.vmax ?? NaN, 0, b.carry ?? NaN);
  }
  return Float64Array.from(out);
}

const info = (id, table, pcore, name, start, extra = {}) => ({ id, kind: 'dma', table, pcore, name, rows: 10, start, end: start + 1000, max_dur: 5, vmin: null, vmax: null, width: 10, ...extra });
const col = (t, name) => Array.from(t.getChild(name) ?? [], (v) => (typeof v === 'bigint' ? Number(v) : v));

test('summaryTable: one pseudo-row per non-empty bucket, in the table’s own columns; an idle track keeps one row at its first event', () => {
  const tracks = [info(1, 'DmaPacket', 0, 'qSyncIO0', 100), info(2, 'DmaPacket', 1, 'qVectorIO1', 50), info(3, 'DmaPacket', 0, 'idle queue', 70)];
  const buckets = lod.parseBuckets(packed([
    // Bucket 0 starts before the track's first event: the pseudo-row starts at the event. Busy
    // longer than the bucket is cut to its width; an empty bucket gives no row.
    { id: 1, width: 100, first: 0, buckets: [{ index: 1, busy: 40, count: 3, dom: 1 }, { index: 2, busy: 0, count: 0, dom: -1 }, { index: 4, busy: 250, count: 9, dom: 0 }] },
    { id: 2, width: 100, first: 0, buckets: [{ index: 0, busy: 10, count: 1, dom: 7 }] },
  ]));
  const names = ['software_dynamic', 'hardware_dynamic'];
  const t = lod.summaryTable('DmaPacket', tracks, buckets, names, null);
  assert.equal(t.numRows, 4);
  assert.deepEqual(col(t, 'start_ts'), [100, 400, 50, 70]);
  assert.deepEqual(col(t, 'end_ts'), [140, 500, 60, 70]);
  assert.deepEqual(col(t, 'pcore_idx'), [0, 0, 1, 0]);
  assert.deepEqual(col(t, 'queue_name'), ['qSyncIO0', 'qSyncIO0', 'qVectorIO1', 'idle queue']);
  // A dominant name out of the dictionary and "none" are both "".
  assert.deepEqual(col(t, 'queue_type'), ['hardware_dynamic', 'software_dynamic', '', '']);
  assert.deepEqual(col(t, lod.SUMMARY_COUNT), [3, 9, 1, 0]);
});

test('summaryTable: step tables carry the bucket’s largest value; System times get the BigInt origin back', () => {
  const sem = [info(1, 'SemaphoreUpdate', 0, '17', 0, { kind: 'semaphore', vmax: 4 }), info(2, 'SemaphoreUpdate', 0, '18', 30, { kind: 'semaphore', vmax: 2 })];
  const b = lod.parseBuckets(packed([{ id: 1, width: 10, first: 0, buckets: [{ index: 0, busy: 0, count: 2, dom: -1, vmax: 3 }, { index: 5, busy: 0, count: 1, dom: -1, vmax: 1 }] }]));
  const t = lod.summaryTable('SemaphoreUpdate', sem, b, [], null);
  assert.deepEqual(col(t, 'timestamp'), [0, 50, 30]);
  assert.deepEqual(col(t, 'id'), ['17', '17', '18']);
  // The idle track's row holds its largest value.
  assert.deepEqual(col(t, 'value'), [3, 1, 2]);

  const origin = 1_700_000_000_000_000_000n;
  const sys = [{ ...info(1, 'SystemProfileEvents', -1, 'neuron_rt:7:9', 0), kind: 'system', pid: 7, tid: 9 }, { ...info(2, 'SystemProfileEvents', 3, 'hw:3', 0), kind: 'system' }];
  const sb = lod.parseBuckets(packed([
    { id: 1, width: 1000, first: 0, buckets: [{ index: 2, busy: 500, count: 4, dom: 0 }] },
    { id: 2, width: 1000, first: 0, buckets: [{ index: 1, busy: 20, count: 1, dom: 1 }] },
  ]));
  const st = lod.summaryTable('SystemProfileEvents', sys, sb, ['nrt_execute', 'nc_exec_running'], origin);
  assert.deepEqual(Array.from(st.getChild('start_ts')), [origin + 2000n, origin + 1000n]);
  assert.deepEqual(Array.from(st.getChild('end_ts')), [origin + 2500n, origin + 1020n]);
  assert.deepEqual(col(st, 'name'), ['nrt_execute', 'nc_exec_running']);
  assert.deepEqual(col(st, 'trace_event_source'), ['neuron_rt', 'neuron_hw']);
  assert.deepEqual(col(st, 'process_id'), [7, NaN]);
  assert.deepEqual(col(st, 'thread_id'), [9, NaN]);
  assert.deepEqual(col(st, 'pcore_idx'), [NaN, 3]);
});

test('addDeviceRowsYielding in many short steps builds the model addDeviceRows builds', async () => {
  const big = (xs) => BigInt64Array.from(xs.map((x) => BigInt(x)));
  const n = 120_000;
  const idx = Array.from({ length: n }, (_, i) => i);
  const tables = () => ({
    dma: tableFromArrays({
      start_ts: big(idx.map((i) => i * 3)), end_ts: big(idx.map((i) => i * 3 + 2)), pcore_idx: big(idx.map((i) => i % 2)),
      queue_name: idx.map((i) => `q${i % 5}`), queue_type: idx.map((i) => (i % 3 === 0 ? 'static' : 'software_dynamic')),
    }),
    semaphores: tableFromArrays({ timestamp: big(idx.map((i) => i * 2)), id: idx.map((i) => String(i % 40)), value: Float64Array.from(idx, (i) => i % 7), pcore_idx: big(idx.map((i) => i % 2)) }),
    throttle: null,
    pending: null,
  });
  const engines = () => model.buildTimeline(tableFromArrays({ start_ts: big([0, 100]), end_ts: big([50, 150]), engine: ['tensor', 'vector'], pcore_idx: big([0, 1]), opcode: ['MATMUL', 'NOP'] }));
  const whole = rows.addDeviceRows(engines(), tables());
  let pauses = 0;
  const stepped = await rows.addDeviceRowsYielding(engines(), tables(), async () => { pauses++; }, 0);
  // Budget 0: a pause after every step; the DMA and semaphore loops yield inside as well.
  assert.ok(pauses > 10, `${pauses} pauses`);
  const shape = (m) => m.tracks.map((t) => [t.label, t.kind, t.pcore, t.starts.length, t.starts[0], t.starts[t.starts.length - 1], t.header ?? '', t.group ?? '']);
  assert.deepEqual(shape(stepped), shape(whole));
  assert.deepEqual(stepped.opcodes, whole.opcodes);
  assert.equal(stepped.start, whole.start);
  assert.equal(stepped.end, whole.end);
});

test('buildTimelineYielding in many short steps builds the model buildTimeline builds', async () => {
  const big = (xs) => BigInt64Array.from(xs.map((x) => BigInt(x)));
  const n = 150_000;
  const idx = Array.from({ length: n }, (_, i) => i);
  // Rows of 3 engines on 2 cores, out of order on one engine (its track is sorted).
  const table = () => tableFromArrays({
    start_ts: big(idx.map((i) => (i % 3 === 2 ? (n - i) * 4 : i * 4))), end_ts: big(idx.map((i) => (i % 3 === 2 ? (n - i) * 4 : i * 4) + 3)),
    engine: idx.map((i) => ['tensor', 'vector', 'scalar'][i % 3]), pcore_idx: big(idx.map((i) => (i >> 4) % 2)), opcode: idx.map((i) => `OP${i % 11}`),
  });
  const whole = model.buildTimeline(table());
  let pauses = 0;
  const stepped = await model.buildTimelineYielding(table(), async () => { pauses++; }, 0);
  assert.ok(pauses > 5, `${pauses} pauses`);
  const shape = (m) => m.tracks.map((t) => [t.label, t.kind, t.pcore, t.starts.length, t.maxDur, Array.from(t.starts.subarray(0, 5)), Array.from(t.ops.subarray(0, 5)), t.busy[t.busy.length - 1]]);
  assert.deepEqual(shape(stepped), shape(whole));
  assert.deepEqual(stepped.opcodes, whole.opcodes);
  assert.deepEqual([stepped.start, stepped.end], [whole.start, whole.end]);
  assert.equal(whole.tracks.length, 6);
});
