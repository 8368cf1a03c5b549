// Decodes that ended with errors said as such (the new-user trials): a decode that ended with
// errors keeps its rows; the jobs panel line says done with N errors (the first one's message)
// when rows were kept, failed when none were. Bundled on the fly with
// esbuild (as jobs-units.test.mjs does).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { REPO, loadModule as load } from './harness.mjs';

const jobs = await load('views/jobs.ts');

function job(over) {
  return { id: 1, file: 'dir/x.ntff', bytes: 1e6, worker: 0, state: 'done', stage: 'NTFF', done: 0, total: 0, rows: 0, storedBytes: 0, wasmMemory: 0, started: 0, ended: 2_000, stageStarted: 0, error: null, ...over };
}

test('a decode that ended with errors but kept rows is done with its problems; with no rows it failed', () => {
  // Session 9's trial: "failed after 1 s · 5,844 rows kept" for a profile that opened.
  const line = jobs.jobText(job({ rows: 1234, problems: 2, error: 'cap/x.neff: truncated at byte 512 (and 1 more)' }), 5_000);
  assert.equal(line, 'x.ntff: done in 2 s with 2 errors (first: cap/x.neff: truncated at byte 512) · 1,234 rows kept');
  const one = jobs.jobText(job({ rows: 5844, problems: 1, error: 'x.ntff: cut at byte 9' }), 5_000);
  assert.equal(one, 'x.ntff: done in 2 s with 1 error (x.ntff: cut at byte 9) · 5,844 rows kept');
  const none = jobs.jobText(job({ rows: 0, problems: 1, error: 'x.ntff: not an NTFF' }), 5_000);
  assert.equal(none, 'x.ntff: failed after 2 s (x.ntff: not an NTFF) · no rows kept');
  assert.match(jobs.jobText(job({ rows: 1234 }), 5_000), /^x\.ntff: done in 2 s/);
  // Session 11's trial: a random .ntff said "15 rows kept", its SchemaFields rows.
  const schemaOnly = jobs.jobText(job({ rows: 15, dataRows: 0, problems: 1, error: 'x.ntff: not an NTFF' }), 5_000);
  assert.equal(schemaOnly, 'x.ntff: failed after 2 s (x.ntff: not an NTFF) · no rows kept');
  const kept = jobs.jobText(job({ rows: 1249, dataRows: 1234, problems: 1, error: 'x.ntff: cut at byte 9' }), 5_000);
  assert.equal(kept, 'x.ntff: done in 2 s with 1 error (x.ntff: cut at byte 9) · 1,234 rows kept');
});
