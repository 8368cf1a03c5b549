// Unit tests of the front end's pure logic (timeline model, busy time, axis labels, pairing
// wording), run in Node: the TypeScript modules are bundled on the fly with esbuild (Vite's own).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { tableFromArrays } from 'apache-arrow';
import { REPO, loadModule as load } from './harness.mjs';

/** Bundles a www/src module (apache-arrow left external) and imports it. */

const model = await load('views/timeline-model.ts');
const format = await load('format.ts');
const profiles = await load('views/profiles.ts');

/** Deterministic pseudo-random numbers (xorshift32). */
function rng(seed) {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 2 ** 32;
  };
}

test('buildTimeline: one track per (pcore, engine), ordered like Explorer, slices sorted by start', () => {
  const table = tableFromArrays({
    start_ts: BigInt64Array.from([30n, 10n, 5n, 20n, 7n]),
    end_ts: BigInt64Array.from([40n, 15n, 9n, 25n, 8n]),
    engine: ['tensor', 'tensor', 'sync', 'vector', 'tensor'],
    pcore_idx: BigInt64Array.from([0n, 0n, 0n, 0n, 1n]),
    opcode: ['MATMUL', 'NOP', 'DRAIN', 'NOP', 'WRITE'],
  });
  const m = model.buildTimeline(table);
  assert.deepEqual(m.tracks.map((t) => t.label), ['sg00 Tensor', 'sg00 Vector', 'sg00 Sync', 'sg01 Tensor']);
  const t0 = m.tracks[0];
  assert.deepEqual(Array.from(t0.starts), [10, 30]);
  assert.deepEqual(Array.from(t0.ends), [15, 40]);
  assert.deepEqual(Array.from(t0.rows), [1, 0], 'rows point back into the table');
  assert.deepEqual(Array.from(t0.ops, (o) => m.opcodes[o]), ['NOP', 'MATMUL']);
  assert.equal(t0.maxDur, 10);
  assert.deepEqual(Array.from(t0.busy), [0, 5, 15]);
  assert.equal(m.start, 5);
  assert.equal(m.end, 40);
});

test('busyIn equals a brute-force sum of clipped slices', () => {
  const r = rng(7);
  const n = 400;
  const starts = [];
  let t = 0;
  for (let i = 0; i < n; i++) {
    t += Math.floor(r() * 50);
    starts.push(t);
  }
  const ends = starts.map((s) => s + 1 + Math.floor(r() * (r() < 0.05 ? 500 : 40)));
  const table = tableFromArrays({
    start_ts: BigInt64Array.from(starts, BigInt),
    end_ts: BigInt64Array.from(ends, BigInt),
    engine: starts.map(() => 'vector'),
  });
  const tr = model.buildTimeline(table).tracks[0];
  for (let q = 0; q < 200; q++) {
    const a = r() * (t + 100) - 50;
    const b = a + r() * 2000;
    let want = 0;
    for (let i = 0; i < n; i++) want += Math.max(0, Math.min(ends[i], b) - Math.max(starts[i], a));
    assert.ok(Math.abs(model.busyIn(tr, a, b) - want) < 1e-6, `window [${a}, ${b}]: ${model.busyIn(tr, a, b)} vs ${want}`);
  }
});

test('lowerBound finds the first element not below the value', () => {
  const a = Float64Array.from([1, 2, 2, 2, 5, 9]);
  assert.equal(model.lowerBound(a, 0), 0);
  assert.equal(model.lowerBound(a, 2), 1);
  assert.equal(model.lowerBound(a, 3), 4);
  assert.equal(model.lowerBound(a, 10), 6);
  assert.equal(model.lowerBound(a, 2, 3), 3);
});

test('axis tick labels tell neighbouring ticks apart at every zoom level', () => {
  for (const step of [0.5, 1, 20, 500, 1e3, 2e3, 5e4, 1e6, 2e7, 1e9]) {
    for (const base of [0, 123_456_789, 2_201_000]) {
      const t = Math.ceil(base / step) * step;
      const labels = [0, 1, 2, 3].map((k) => format.tick(t + k * step, step));
      assert.equal(new Set(labels).size, 4, `step ${step} at ${base}: ${labels.join(' | ')}`);
    }
  }
  assert.equal(format.tick(2_201_000, 1000), '2.201 ms');
  assert.equal(format.ns(812), '812 ns');
  assert.equal(format.ns(12_350), '12.35 µs');
});

test('pairing results read as sentences, for serde-tagged and externally tagged forms', () => {
  const d = (pairing, extra = {}) => ({ name: 'x', ntff: 'a/x.ntff', neff: 'a/x.neff', pairing, ...extra });
  const pr = (severity, code) => ({ severity, code, file: 'x.ntff', offset: null, message: `${code} ${severity}` });
  const md = pr('warning', 'Missing Data');
  assert.equal(profiles.decodeLabel([md, md, md]), 'ⓘ 3 notes Explorer also gives (data this capture does not hold)', "Explorer's Missing Data alone: notes");
  assert.equal(profiles.decodeLabel([pr('warning', 'COUNT_MISMATCH'), md]), '⚠ 1 warning in the decode, 1 note Explorer also gives');
  assert.equal(profiles.decodeLabel([pr('error', 'TRUNCATED_TRACE'), md]), '⚠ 2 problems in the decode (1 error; the rows before each fault are kept)');
  assert.equal(profiles.pairingKind({ status: 'Paired', by: 'uuid' }), 'Paired');
  assert.equal(profiles.pairingKind('MissingNeff'), 'MissingNeff');
  assert.equal(profiles.pairingKind({ UuidMismatch: { neff: 'b.neff' } }), 'UuidMismatch');
  assert.equal(profiles.isPaired(d({ status: 'Paired', by: 'uuid' })), true);
  assert.equal(profiles.isPaired(d({ status: 'MissingNeff' })), false);
  assert.equal(profiles.pairingText(d({ status: 'Paired', by: 'uuid' })), 'paired with x.neff by uuid');
  assert.match(profiles.pairingText(d({ status: 'UuidMismatch', neff: 'dir/other.neff' })), /other\.neff.*uuid mismatch/);
  assert.match(profiles.pairingText(d({ status: 'Ambiguous', candidates: ['p/a.neff', 'q/b.neff'] })), /a\.neff, b\.neff/);
  assert.match(profiles.pairingText(d({ status: 'Unreadable', message: 'at offset 4: expected magic' })), /offset 4/);
  assert.equal(profiles.isPaired(d({ status: 'NeffUnreadable', neff: 'a/x.neff' })), false);
  assert.match(profiles.pairingText(d({ status: 'NeffUnreadable', neff: 'a/x.neff' })), /^x\.neff beside it cannot be read \(cut or damaged\): timing only/);
  assert.match(profiles.pairingText(d({ status: 'SomethingNew', detail: 1 })), /something new/);
});

const sys = await load('views/system-model.ts');

test('system model: Unix-ns BigInt times become exact ns since the first event; overlaps nest into lanes', () => {
  const base = 1_764_000_000_000_000_123n; // beyond 2^53: Number() of it alone would lose the ns
  const events = tableFromArrays({
    name: ['outer', 'inner', 'next', 'nc_exec_running'],
    start_ts: BigInt64Array.from([base, base + 10n, base + 200n, base + 20n]),
    end_ts: BigInt64Array.from([base + 100n, base + 50n, base + 300n, base + 70n]),
    trace_event_source: ['neuron_rt', 'neuron_rt', 'neuron_rt', 'neuron_hw'],
    process_id: BigInt64Array.from([7n, 7n, 7n, 7n]),
    thread_id: BigInt64Array.from([9n, 9n, 9n, 0n]),
    pcore_idx: BigInt64Array.from([0n, 0n, 0n, 3n]),
  });
  const cpu = tableFromArrays({
    timestamp: BigInt64Array.from([base - 5n, base + 1000n, base - 5n]),
    util_percent: Float64Array.from([10, 90, 50]),
    cpu_id: ['0', '0', 'average'],
  });
  const m = sys.buildSystemTimeline(events, cpu, null);
  assert.equal(m.base, base - 5n, 'axis starts at the earliest event or sample');
  assert.deepEqual(m.tracks.map((t) => t.label), ['pid 7 · tid 9', '', 'NeuronCore 3']);
  assert.deepEqual(Array.from(m.tracks[0].starts), [5, 205], 'lane 0: outer and next');
  assert.deepEqual(Array.from(m.tracks[1].starts), [15], 'lane 1: inner, nested in outer');
  assert.deepEqual(Array.from(m.tracks[1].ends), [55]);
  assert.equal(m.opcodes[m.tracks[2].ops[0]], 'nc_exec_running');
  assert.deepEqual(m.counters.map((c) => c.label), ['CPU average', 'cpu 0']);
  assert.deepEqual(Array.from(m.counters[1].times), [0, 1005]);
  assert.equal(m.end, 1005);
});

test('system model: nc_exec_running finds its DeviceProfileList row by model id, then core; link wording', () => {
  const list = [
    { device_profile_name: 'a', nc_id: 0, model_id: 5, nscope_link: 'same capture' },
    { device_profile_name: 'b', nc_id: 1, model_id: 6, nscope_link: 'same NEFF, different capture: NTFF pid 1 ≠ capture pid 2' },
  ];
  assert.equal(sys.linkedDevice({ extra_attributes_json: '{"model_id":"6"}', pcore_idx: 0n }, list)?.device_profile_name, 'b');
  assert.equal(sys.linkedDevice({ pcore_idx: 0n }, list)?.device_profile_name, 'a');
  assert.equal(sys.linkedDevice({ extra_attributes_json: 'not json', nc_idx: 9 }, list), null);
  assert.equal(sys.linkWording('same capture').kind, 'same');
  const w = sys.linkWording(list[1].nscope_link);
  assert.equal(w.kind, 'other-capture');
  assert.match(w.text, /NTFF pid 1 ≠ capture pid 2/);
  assert.equal(sys.linkWording('unlinked: empty NTFF').kind, 'unlinked');
});

test('pickExecution: the only execution, else exec_id − 1, else exec_id, else the first timed one', () => {
  const rows = [
    { index: 0, start: 0, end: 10 },
    { index: 1, start: 20, end: 30 },
    { index: 2, start: null, end: null },
  ];
  assert.equal(sys.pickExecution(rows, 2)?.index, 1, 'exec ids count from 1');
  assert.equal(sys.pickExecution(rows, 1)?.index, 0);
  assert.equal(sys.pickExecution(rows, 9)?.index, 0, 'no match → first timed');
  assert.equal(sys.pickExecution(rows, null)?.index, 0);
  assert.equal(sys.pickExecution([{ index: 3, start: 5, end: 6 }], 1)?.index, 3, 'a single execution is the one');
  assert.equal(sys.pickExecution([{ index: 0, start: null, end: null }], 1), null, 'pre-v6: no time range');
});

test('system timeline: framework tracks first, named by thread_name, nested spans in lanes', () => {
  const t = tableFromArrays({
    name: ['rt', 'step', 'op', 'hw'],
    start_ts: BigInt64Array.from([100n, 0n, 10n, 120n]),
    end_ts: BigInt64Array.from([200n, 500n, 50n, 150n]),
    trace_event_source: ['neuron_rt', 'framework', 'framework', 'neuron_hw'],
    process_id: BigInt64Array.from([1n, 1n, 1n, 1n]),
    thread_id: BigInt64Array.from([1n, 1n, 1n, 1n]),
    pcore_idx: Float64Array.from([NaN, NaN, NaN, 0]),
  });
  const m = sys.buildSystemTimeline(t, null, null, new Map([['1:1', 'main']]));
  assert.deepEqual(m.tracks.map((tr) => tr.label), ['fw main · pid 1 · tid 1', '', 'pid 1 · tid 1', 'NeuronCore 0']);
  assert.equal(m.opcodes[m.tracks[0].ops[0]], 'step', 'the enclosing span in lane 0');
  assert.equal(m.opcodes[m.tracks[1].ops[0]], 'op', 'the nested span below it');
});

test('snapshotState: an error of the scan or of the decode marks a memory snapshot entry; warnings do not', () => {
  const path = 'cap/memory_snapshot_rank0.pickle';
  const inv = (problems = [], profileProblems = []) => ({ files: [], profiles: [{ id: 'cap', problems: profileProblems }], problems });
  const err = { severity: 'error', code: 'ERROR_PROCESS_INCOMPLETE', file: path, offset: 9, message: `${path}: truncated at offset 9` };
  const warn = { severity: 'warning', code: 'MEMORY_SNAPSHOT_VALUE_CUT', file: path, message: 'cut value' };
  const ok = profiles.snapshotState(inv(), path, [warn]);
  assert.equal(ok.error, undefined);
  assert.equal(ok.status, 'allocator snapshot: open the Memory view');
  const decoded = profiles.snapshotState(inv(), path, [warn, err]);
  assert.equal(decoded.error, err);
  assert.equal(decoded.status, `memory_snapshot_rank0.pickle cannot be read in full (what was read before the fault is shown): ${err.message}`);
  // Scan problems of the pick or of the capture the snapshot lies in, about this file only.
  assert.equal(profiles.snapshotState(inv([err]), path, []).error, err);
  assert.equal(profiles.snapshotState(inv([], [err]), path, []).error, err);
  assert.equal(profiles.snapshotState(inv([{ ...err, file: 'other.pickle' }]), path, []).error, undefined);
});
