// Unit tests of the jobs view's wording and ETA (www/src/views/jobs.ts), run in Node: the module is
// bundled on the fly with esbuild (as units.test.mjs does).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { REPO, loadModule as load } from './harness.mjs';

const jobs = await load('views/jobs.ts');

function job(over) {
  return { id: 1, file: 'dir/big.ntff', bytes: 1000e6, worker: 0, state: 'running', stage: 'NTFF', done: 0, total: 0, rows: 0, storedBytes: 0, wasmMemory: 0, started: 0, ended: null, stageStarted: 0, error: null, ...over };
}

test('ETA: the rest of the stage at the rate so far; none before there is a rate or once done', () => {
  // 250 MB of 1000 MB in 10 s → 750 MB at 25 MB/s = 30 s.
  assert.equal(jobs.etaSeconds(job({ done: 250e6, total: 1000e6 }), 10_000), 30);
  assert.equal(jobs.etaSeconds(job({ done: 0, total: 1000e6 }), 10_000), null, 'nothing done yet');
  assert.equal(jobs.etaSeconds(job({ done: 10, total: 1000e6 }), 100), null, 'under half a second: no rate yet');
  assert.equal(jobs.etaSeconds(job({ done: 1000e6, total: 1000e6 }), 10_000), null, 'stage complete');
  assert.equal(jobs.etaSeconds(job({ state: 'done', done: 5, total: 10 }), 10_000), null, 'not running');
});

test('job lines name the file, stage, bytes, rows and ETA; done lines the rate and the bytes stored', () => {
  const running = jobs.jobText(job({ done: 250 * 2 ** 20, total: 1000 * 2 ** 20, rows: 1234567 }), 10_000);
  assert.equal(running, 'big.ntff: NTFF · 250 MiB of 1000 MiB · 1,234,567 rows · about 30 s left');
  const small = jobs.jobText(job({ stage: 'pairing', done: 2, total: 5 }), 0);
  assert.equal(small, 'big.ntff: pairing · 2/5');
  const done = jobs.jobText(job({ state: 'done', ended: 80_000, rows: 40908039, storedBytes: 442882165 }), 90_000);
  assert.equal(done, 'big.ntff: done in 1 min 20 s · 40,908,039 rows · 422 MiB stored · 12.5 MB/s');
  const withMemory = jobs.jobText(job({ state: 'done', ended: 80_000, rows: 40908039, storedBytes: 442882165, wasmMemory: 165675008 }), 90_000);
  assert.equal(withMemory, 'big.ntff: done in 1 min 20 s · 40,908,039 rows · 422 MiB stored · 12.5 MB/s · wasm memory 158 MiB');
  const cleared = jobs.jobText(job({ state: 'done', ended: 80_000, rows: 40908039, storedBytes: 442882165, cleared: true }), 90_000);
  assert.equal(cleared, 'big.ntff: done in 1 min 20 s · 40,908,039 rows · tables cleared · 12.5 MB/s');
  assert.equal(jobs.jobText(job({ state: 'cancelled', ended: 5_000 }), 9_000), 'big.ntff: cancelled after 5 s');
  assert.equal(jobs.jobText(job({ state: 'failed', error: 'boom' }), 0), 'big.ntff: failed (boom)');
});
