// Unit tests of the device rows under the engines (views/device-rows.ts), the fast column readers
// (timeline-model.ts) and the Summary grouping (views/summary-groups.ts), run in Node on small
// synthetic Arrow tables: the modules are bundled on the fly with esbuild, as in units.test.mjs.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { tableFromArrays, vectorFromArray, Table, Utf8 } from 'apache-arrow';
import { REPO, loadModule as load } from './harness.mjs';

const model = await load('views/timeline-model.ts');
const rows = await load('views/device-rows.ts');
const groups = await load('views/summary-groups.ts');
const summary = await load('views/summary.ts');

const big = (xs) => BigInt64Array.from(xs.map((x) => BigInt(x)));
const instructions = () => model.buildTimeline(tableFromArrays({
  start_ts: big([0, 100]), end_ts: big([50, 150]), engine: ['tensor', 'tensor'], pcore_idx: big([0, 1]), opcode: ['MATMUL', 'NOP'],
}));

test('DMA rows: one per (pcore, queue_name), sorted packets, a per-core header with every packet merged by start', () => {
  const dma = tableFromArrays({
    start_ts: big([40, 10, 30, 20, 5, 15]),
    end_ts: big([45, 12, 60, 25, 8, 16]),
    pcore_idx: big([0, 0, 0, 0, 1, 0]),
    queue_name: ['Q1-E64', 'Q0-E64', 'Q0-E64', 'Q1-E64', 'Q14-E81', 'Q0-E65'],
    queue_type: ['hardware_dynamic', 'software_dynamic', 'software_dynamic', 'hardware_dynamic', 'instruction', 'software_dynamic'],
    transfer_bytes: big([256, 4096, 4096, 256, 64, 4096]),
  });
  const m = rows.addDeviceRows(instructions(), { dma, semaphores: null, throttle: null, pending: null });
  const labels = m.tracks.map((t) => t.label);
  assert.deepEqual(labels, ['sg00 Tensor', 'sg00 DMA (3 queues)', 'Q0-E64', 'Q0-E65', 'Q1-E64', 'sg01 Tensor', 'sg01 DMA (1 queue)', 'Q14-E81']);
  const q0 = m.tracks[2];
  assert.deepEqual(Array.from(q0.starts), [10, 30]);
  assert.deepEqual(Array.from(q0.rows), [1, 2], 'rows index the DmaPacket table');
  assert.equal(q0.source, 'DmaPacket');
  assert.equal(q0.group, 'dma:0');
  assert.deepEqual(Array.from(q0.ops, (o) => m.opcodes[o]), ['software_dynamic', 'software_dynamic']);
  const head = m.tracks[1];
  assert.equal(head.header, 'dma:0');
  assert.equal(head.count, 3);
  assert.deepEqual(Array.from(head.starts), [10, 15, 20, 30, 40], 'header: all packets of core 0 by start');
  assert.deepEqual(Array.from(head.rows), [1, 5, 3, 2, 0]);
  assert.equal(head.maxDur, 30);
  assert.equal(rows.rowCounts(m).dma, 4, 'header rows are not counted');
  assert.equal(m.start, 0);
  assert.equal(m.end, 150);
});

test('semaphores: step rows per (pcore, id), value held to the next update (last to the profile end); busy ones first', () => {
  const sem = tableFromArrays({
    timestamp: big([10, 30, 20, 50, 5]),
    id: ['S[5] (Tensor)', 'S[5] (Tensor)', '207', 'S[5] (Tensor)', '7'],
    value: Int32Array.from([1, 2, 1, 0, 1]),
    pcore_idx: big([0, 0, 0, 0, 0]),
  });
  const m = rows.addDeviceRows(instructions(), { dma: null, semaphores: sem, throttle: null, pending: null });
  const core0 = m.tracks.filter((t) => t.pcore === 0);
  assert.deepEqual(core0.map((t) => t.label), ['sg00 Tensor', 'sg00 Semaphores (3)', 'S[5] (Tensor)', 'sem 7', 'sem 207']);
  const s5 = core0[2];
  assert.equal(s5.kind, 'semaphore', 'a step row (tracks/render.ts TRACK_KINDS.semaphore)');
  assert.equal(core0[1].kind, 'semaphore-group', 'the header: every update of the core as an instant');
  assert.deepEqual(Array.from(s5.starts), [10, 30, 50]);
  assert.deepEqual(Array.from(s5.ends), [30, 50, 150], 'each value holds until the next update, the last to the end');
  assert.deepEqual(Array.from(s5.values), [1, 2, 0]);
  assert.equal(s5.maxValue, 2);
  const head = core0[1];
  assert.equal(head.collapsed, true, 'semaphore groups start collapsed');
  assert.deepEqual(Array.from(head.starts), [5, 10, 20, 30, 50], 'header: every update as an instant');
  assert.equal(head.maxDur, 0);
});

test('throttle and pending DMA: one row per core; a throttle record without duration lasts to the end', () => {
  const throttle = tableFromArrays({
    timestamp: big([100, 20]),
    duration: vectorFromArray([null, 30n]),
    k: Int32Array.from([4, 8]),
    n: Int32Array.from([8, 8]),
    type: ['activity_1', 'activity_0'],
    pcore_idx: big([0, 0]),
  });
  const pending = tableFromArrays({ timestamp: big([0, 40]), value: Int32Array.from([3, 1]), pcore_idx: big([1, 1]) });
  const m = rows.addDeviceRows(instructions(), { dma: null, semaphores: null, throttle, pending });
  const thr = m.tracks.find((t) => t.kind === 'throttle');
  assert.equal(thr.label, 'sg00 Throttle');
  assert.deepEqual(Array.from(thr.starts), [20, 100]);
  assert.deepEqual(Array.from(thr.ends), [50, 150]);
  assert.deepEqual(Array.from(thr.ops, (o) => m.opcodes[o]), ['activity_0 8/8', 'activity_1 4/8']);
  const pend = m.tracks.find((t) => t.kind === 'pending');
  assert.equal(pend.label, 'sg01 Pending DMA');
  assert.deepEqual(Array.from(pend.values), [3, 1]);
  assert.deepEqual(m.tracks.map((t) => t.kind ?? 'engine'), ['engine', 'throttle', 'engine', 'pending']);
});

test('column readers: nulls, chunked columns and Utf8 codes agree with the Arrow values', () => {
  const a = tableFromArrays({ v: vectorFromArray([1n, null, 3n]), s: vectorFromArray(['x', null, 'yy'], new Utf8()) });
  const b = tableFromArrays({ v: vectorFromArray([4n, 5n, null]), s: vectorFromArray(['yy', 'x', 'é'], new Utf8()) });
  const t = new Table([...a.batches, ...b.batches]);
  assert.equal(t.batches.length, 2);
  const nums = model.numberColumn(t, 'v');
  assert.deepEqual(Array.from(nums, (x) => (Number.isNaN(x) ? null : x)), [1, null, 3, 4, 5, null]);
  const dict = [];
  const codes = model.codeColumn(t, 's', dict, new Map());
  assert.deepEqual(Array.from(codes, (c) => dict[c]), ['x', '', 'yy', 'yy', 'x', 'é']);
  assert.equal(new Set(dict).size, dict.length, 'each value once in the dictionary');
  assert.equal(model.numberColumn(t, 'absent'), null);
});

test('summary groups: Explorer order, exact fields, wildcard queue fields, unknown fields in "other"', () => {
  assert.equal(groups.SUMMARY_GROUP_ORDER[0], 'overall_stats');
  assert.equal(groups.SUMMARY_GROUP_ORDER.length, 14);
  assert.equal(groups.summaryGroup('total_time'), 'overall_stats');
  assert.equal(groups.summaryGroup('tensor_engine_active_time_percent'), 'tensor_engine');
  assert.equal(groups.summaryGroup('throttle_active_nc1_time_ns'), 'throttling_nc1');
  assert.equal(groups.summaryGroup('instance_type'), 'system');
  assert.equal(groups.summaryGroup('qVectorPIO3_bytes'), 'dma_queue', 'qvectorpio* (case-insensitive prefix)');
  assert.equal(groups.summaryGroup('total_row_count'), 'other');
  const order = groups.groupOrder();
  assert.equal(order[order.length - 1], 'other');
  assert.ok(order.indexOf('server_upload') < order.indexOf('dma_queue'));
  // Every group of the order has fields, and no field is listed twice.
  const all = Object.values(groups.SUMMARY_GROUPS).flat();
  assert.equal(new Set(all).size, all.length);
  assert.equal(all.length, 186, 'fields of the profiler 2.28 export');
});

test('throttleFields: per physical core and type, percents as fractions of the total time', () => {
  const t = tableFromArrays({
    duration: vectorFromArray([600n, 200n, 100n, null]),
    k: Int32Array.from([8, 4, 2, 4]),
    n: Int32Array.from([8, 8, 8, 8]),
    type: ['activity_0', 'activity_1', 'activity_1', 'activity_1'],
    pcore_idx: big([0, 0, 1, 0]),
  });
  const f = summary.throttleFields(t, 1000);
  assert.deepEqual(f, {
    throttle_activity_0_active_time_nc0_percent: 0.6,
    throttle_activity_0_avg_util_limit_nc0_percent: 1,
    throttle_activity_1_active_time_nc0_percent: 0.2,
    throttle_activity_1_avg_util_limit_nc0_percent: 0.5,
    throttle_activity_1_active_time_nc1_percent: 0.1,
    throttle_activity_1_avg_util_limit_nc1_percent: 0.25,
    throttle_active_nc0_time_ns: 200,
    throttle_avg_util_limit_nc0_percent: 0.7,
    throttle_active_nc1_time_ns: 100,
    throttle_avg_util_limit_nc1_percent: 0.025,
  });
  assert.equal(groups.summaryGroup('throttle_activity_1_active_time_nc1_percent'), 'throttling_nc1');
});
