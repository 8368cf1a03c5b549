// Unit tests of the System timeline model's columnar readers (system-model.ts), run in Node like
// units.test.mjs: a table of several record batches (a window's IPC holds one per row group) with
// nulls builds the model the same table in one batch builds; rows of interleaved threads and cores
// land in their own tracks; a row without a start is left out and one without an end is a point.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RecordBatch, tableFromArrays, vectorFromArray, Int64, Table } from 'apache-arrow';
import { loadModule as load } from './harness.mjs';

const sys = await load('views/system-model.ts');

const BASE = 1_700_000_000_000_000_000n;

/** Events of two threads of pid 5, a framework thread and core 2, interleaved row by row. */
function columns(lo, hi) {
  const rows = [];
  for (let i = 0; i < 12; i++) {
    const kind = ['neuron_rt', 'neuron_rt', 'framework', 'neuron_hw'][i % 4];
    rows.push({
      name: `n${i % 3}`,
      start: i === 7 ? null : BASE + BigInt(i * 100),
      end: i === 5 ? null : BASE + BigInt(i * 100 + (i % 2 === 0 ? 250 : 40)),
      source: kind,
      pid: 5n,
      tid: kind === 'neuron_rt' ? BigInt(10 + (i % 2)) : 99n,
      pcore: kind === 'neuron_hw' ? 2 : NaN,
    });
  }
  const xs = rows.slice(lo, hi);
  return {
    name: xs.map((r) => r.name),
    start_ts: vectorFromArray(xs.map((r) => r.start), new Int64()),
    end_ts: vectorFromArray(xs.map((r) => r.end), new Int64()),
    trace_event_source: xs.map((r) => r.source),
    process_id: BigInt64Array.from(xs.map((r) => r.pid)),
    thread_id: BigInt64Array.from(xs.map((r) => r.tid)),
    pcore_idx: Float64Array.from(xs.map((r) => r.pcore)),
  };
}

/** The model's tracks as plain data. */
function shape(m) {
  return m.tracks.map((t) => ({ label: t.label, starts: Array.from(t.starts), ends: Array.from(t.ends), rows: Array.from(t.rows), ops: Array.from(t.ops, (o) => m.opcodes[o]) }));
}

test('buildSystemTimeline: several record batches with nulls build the model one batch builds', () => {
  const whole = tableFromArrays(columns(0, 12));
  // One schema for all batches (the part without nulls would otherwise say non-nullable).
  const parts = new Table(whole.schema, [[0, 5], [5, 9], [9, 12]].map(([lo, hi]) => new RecordBatch(whole.schema, tableFromArrays(columns(lo, hi)).batches[0].data)));
  assert.equal(parts.getChild('start_ts').data.length, 3, 'three chunks');
  const a = sys.buildSystemTimeline(whole, null, null, new Map([['5:99', 'main']]));
  const b = sys.buildSystemTimeline(parts, null, null, new Map([['5:99', 'main']]));
  assert.deepEqual(shape(b), shape(a));
  assert.equal(b.base, BASE);
  const labels = a.tracks.map((t) => t.label).filter((l) => l !== '');
  assert.deepEqual(labels, ['fw main · pid 5 · tid 99', 'pid 5 · tid 10', 'pid 5 · tid 11', 'NeuronCore 2'], 'interleaved threads and the core each get a track');
  const rows = a.tracks.flatMap((t) => Array.from(t.rows)).sort((x, y) => x - y);
  assert.deepEqual(rows, [0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11], 'the row without a start (7) is left out');
  const t5 = a.tracks.find((t) => Array.from(t.rows).includes(5));
  const k = Array.from(t5.rows).indexOf(5);
  assert.equal(t5.starts[k], 500);
  assert.equal(t5.ends[k], 500, 'no end: a point at its start');
  // tid 10 holds rows 0, 4, 8 (starts 0, 400, 800, each 250 long): no overlap, one lane.
  const tid10 = a.tracks.findIndex((t) => t.label === 'pid 5 · tid 10');
  assert.deepEqual(Array.from(a.tracks[tid10].rows), [0, 4, 8]);
  assert.notEqual(a.tracks[tid10 + 1]?.label, '', 'no second lane for tid 10');
});
