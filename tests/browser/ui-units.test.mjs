// Unit tests of the workspace's pure logic added for issue 14 (run in Node, modules bundled with
// esbuild as units.test.mjs does): busy time as the Summary defines it (union, semaphore waits
// excluded, per row and per engine over all cores) against brute force; job names; Memory times in ms.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { REPO, loadModule as load } from './harness.mjs';

const model = await load('views/timeline-model.ts');
const jobs = await load('views/jobs.ts');
const memory = await load('views/memory.ts');

/** Deterministic pseudo-random numbers (xorshift32) in [0, 1). */
function rng(seed) {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13; x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5; x >>>= 0;
    return x / 2 ** 32;
  };
}

/** A track of `n` random (possibly overlapping) slices, ops 0 (busy) or 1 (the semaphore wait). */
function track(r, n, engine, pcore) {
  const s = [];
  let t = 0;
  for (let k = 0; k < n; k++) {
    t += r() * 40;
    s.push([t, t + r() * 120, r() < 0.3 ? 1 : 0]);
  }
  s.sort((a, b) => a[0] - b[0]);
  return {
    label: engine, pcore, engine, kind: 'engine',
    starts: Float64Array.from(s.map((x) => x[0])), ends: Float64Array.from(s.map((x) => x[1])),
    rows: new Uint32Array(n), ops: Uint16Array.from(s.map((x) => x[2])), maxDur: 120, busy: new Float64Array(n + 1),
  };
}

/** Brute force: covered length of [t0, t1] by the busy slices of `tracks`, on a 1/8 ns grid of the endpoints. */
function bruteUnion(tracks, t0, t1) {
  const iv = tracks.flatMap((tr) => [...tr.starts].map((s, k) => [s, tr.ends[k], tr.ops[k]])).filter((x) => x[2] === 0)
    .map(([s, e]) => [Math.max(s, t0), Math.min(e, t1)]).filter(([s, e]) => e > s).sort((a, b) => a[0] - b[0]);
  let sum = 0;
  let cs = -Infinity;
  let ce = -Infinity;
  for (const [s, e] of iv) {
    if (s > ce) {
      if (ce > cs) sum += ce - cs;
      cs = s;
      ce = e;
    } else ce = Math.max(ce, e);
  }
  if (ce > cs) sum += ce - cs;
  return sum;
}

test('activeIn: the union of a row\'s slices in a window, semaphore waits left out (brute force, random windows)', () => {
  const r = rng(7);
  const opcodes = ['MATMUL', 'EVENT_SEMAPHORE'];
  for (let round = 0; round < 20; round++) {
    const tr = track(r, 200, 'tensor', 0);
    for (let w = 0; w < 20; w++) {
      const a = r() * 9000 - 500;
      const b = a + r() * 4000;
      const got = model.activeIn(tr, opcodes, a, b);
      const want = bruteUnion([tr], a, b);
      assert.ok(Math.abs(got - want) < 1e-6, `round ${round} [${a}, ${b}]: ${got} vs ${want}`);
    }
  }
  // Non-engine rows keep every slice (no opcode is a semaphore wait there).
  const dma = { ...track(r, 50, 'q', 0), kind: 'dma' };
  const all = { ...dma, ops: new Uint16Array(50) };
  assert.ok(Math.abs(model.activeIn(dma, opcodes, -1e9, 1e9) - bruteUnion([all], -1e9, 1e9)) < 1e-6);
});

test('engineActiveIn: the union over every core\'s rows of one engine, as the Summary unions the streams', () => {
  const r = rng(11);
  const opcodes = ['MATMUL', 'EVENT_SEMAPHORE'];
  const t0 = track(r, 300, 'tensor', 0);
  const t1 = track(r, 300, 'tensor', 1);
  const v0 = track(r, 300, 'vector', 0);
  const m = { tracks: [t0, v0, t1], start: 0, end: 20000, opcodes, table: null };
  for (let w = 0; w < 30; w++) {
    const a = r() * 12000;
    const b = a + r() * 6000;
    assert.ok(Math.abs(model.engineActiveIn(m, 'tensor', a, b) - bruteUnion([t0, t1], a, b)) < 1e-6, `tensor [${a}, ${b}]`);
    assert.ok(Math.abs(model.engineActiveIn(m, 'vector', a, b) - bruteUnion([v0], a, b)) < 1e-6, `vector [${a}, ${b}]`);
  }
  assert.equal(model.engineActiveIn(m, 'sync', 0, 1e9), 0, 'no row of that engine');
  // A group header repeats its rows' slices: it is not counted.
  const header = { ...t0, kind: 'dma-group', header: 'g', count: 1, collapsed: false, engine: 'tensor' };
  const withHeader = { ...m, tracks: [...m.tracks, header] };
  assert.ok(Math.abs(model.engineActiveIn(withHeader, 'tensor', 0, 1e9) - bruteUnion([t0, t1], 0, 1e9)) < 1e-6);
});

test('job names: a system trace\'s job is named after its capture folder, a file job after its file', () => {
  const sys = 'out/i-0af76a70a6d3864dd_pid_713479/trace_info.pb, out/i-0af76a70a6d3864dd_pid_713479/ntrace.pb, out/i-0af76a70a6d3864dd_pid_713479/cpu_util.pb';
  assert.equal(jobs.jobName(sys), 'i-0af76a70a6d3864dd_pid_713479 system trace');
  assert.equal(jobs.jobName('cap/trace_info.pb'), 'cap system trace');
  assert.equal(jobs.jobName('trace_info.pb'), 'capture system trace');
  assert.equal(jobs.jobName('a/b/profile_exec_2.ntff'), 'profile_exec_2.ntff');
  assert.equal(jobs.jobName('x/v6b.neff'), 'v6b.neff');
  assert.equal(jobs.jobName('kineto/trace.json'), 'trace.json');
});

test('Memory times: ms since the first entry, never s or ns; axis ticks with enough digits', () => {
  assert.equal(memory.msText(15_285_000), '15.285 ms');
  assert.equal(memory.msText(0), '0 ms');
  assert.equal(memory.msText(1_500), '0.0015 ms');
  assert.equal(memory.msText(250), '0.00025 ms');
  assert.equal(memory.msText(123_456_789_000), '123,456.8 ms');
  assert.equal(memory.msTick(2e6, 2e6), '2 ms');
  assert.equal(memory.msTick(2.5e6, 5e5), '2.5 ms');
  assert.equal(memory.msTick(1e4, 1e4), '0.01 ms');
  assert.equal(memory.frameText({ file: '/a/b.py', line: 12, name: 'forward', fx: '' }), '/a/b.py:12 forward');
  assert.equal(memory.frameText({ file: '', line: null, name: '', fx: 'call_function add' }), '?:? ?  [fx call_function add]');
});
