// Failed decodes said as failed (the new-user trial): a decode that ended with errors keeps its
// rows, and the jobs panel line says it failed, with the message. Bundled on the fly with
// esbuild (as jobs-units.test.mjs does).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { REPO, loadModule as load } from './harness.mjs';

const jobs = await load('views/jobs.ts');

function job(over) {
  return { id: 1, file: 'dir/x.ntff', bytes: 1e6, worker: 0, state: 'done', stage: 'NTFF', done: 0, total: 0, rows: 0, storedBytes: 0, wasmMemory: 0, started: 0, ended: 2_000, stageStarted: 0, error: null, ...over };
}

test('a decode that ended with errors is shown failed, with its message and the rows kept', () => {
  const line = jobs.jobText(job({ rows: 1234, error: 'cap/x.neff: truncated at byte 512 (and 1 more)' }), 5_000);
  assert.equal(line, 'x.ntff: failed after 2 s (cap/x.neff: truncated at byte 512 (and 1 more)) · 1,234 rows kept');
  assert.match(jobs.jobText(job({ rows: 1234 }), 5_000), /^x\.ntff: done in 2 s/);
});
