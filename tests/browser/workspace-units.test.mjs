// Unit tests of the workspace's pure logic in Node (bundled with esbuild): the pan/zoom bounds of
// timeline-input.ts, the comparison notes in user terms, plurals, and the picker's paths for loose
// and same-named files.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { REPO, loadModule as load } from './harness.mjs';

const input = await load('views/timeline-input.ts');
const conform = await load('views/conform.ts');
const format = await load('format.ts');
const picker = await load('picker.ts');

test('constrainView: zoom no wider than the data plus 2 % each side, no finer than 1 ps/px, pans stop 2 % past the data', () => {
  const W = 1000;
  // Data 0..1000 ns: widest view 1040 ns, centred.
  let v = input.constrainView(-5000, 50, W, 0, 1000);
  assert.ok(Math.abs(v.nsPerPx - 1.04) < 1e-12);
  assert.ok(Math.abs(v.start + 20) < 1e-9, `centred at -20 (${v.start})`);
  // Zoomed in: start clamps at lo - 20 and at hi + 20 - visible.
  v = input.constrainView(-500, 0.1, W, 0, 1000);
  assert.equal(v.nsPerPx, 0.1);
  assert.ok(Math.abs(v.start + 20) < 1e-9);
  v = input.constrainView(5000, 0.1, W, 0, 1000);
  assert.ok(Math.abs(v.start - (1020 - 100)) < 1e-9);
  // Inside the bounds nothing moves.
  assert.deepEqual(input.constrainView(300, 0.1, W, 0, 1000), { start: 300, nsPerPx: 0.1 });
  // 1 ps per pixel at most; NaN becomes the widest view.
  assert.equal(input.constrainView(300, 1e-9, W, 0, 1000).nsPerPx, 1e-3);
  assert.ok(Math.abs(input.constrainView(NaN, NaN, W, 0, 1000).nsPerPx - 1.04) < 1e-12);
});

test('userNote: the core\'s notes without citations of our format notes and test files', () => {
  assert.equal(conform.userNote('TensorMatrix for MATMUL (ntff.md §10 step 4)'), 'TensorMatrix for MATMUL');
  assert.equal(conform.userNote('needs the NEFF debug info (attribution_golden.rs)'), 'needs the NEFF debug info');
  assert.equal(conform.userNote('calibrated times in whole ps before t0 is subtracted (docs/formats.md)'), 'calibrated times in whole ps before t0 is subtracted');
  assert.equal(conform.userNote('cycles / 1.2 in single precision (ntff.md §4.1); v6 6 rows 1 ns off (§11 q10)'), 'cycles / 1.2 in single precision; v6 6 rows 1 ns off');
  assert.equal(conform.userNote('per-core Summary values; schema 7.4.0 has no per-core table (ntff_golden.rs checks them against DecodeReport)'), 'per-core Summary values; schema 7.4.0 has no per-core table');
  assert.equal(conform.userNote('rows keyed by variable_name'), 'rows keyed by variable_name');
});

test('count: singular for one', () => {
  assert.equal(format.count(1, 'file'), '1 file');
  assert.equal(format.count(2, 'file'), '2 files');
  assert.equal(format.count(1200n, 'trace entry', 'trace entries'), '1,200 trace entries');
});

test('uniquePaths: loose files get a folder, two same-named files stay two', () => {
  const f = (path) => ({ path, file: null });
  const out = picker.uniquePaths([f('a.ntff'), f('a.ntff'), f('x/a.ntff'), f('b.neff'), f('a.ntff')]).map((p) => p.path);
  assert.deepEqual(out, ['picked files/a.ntff', 'picked files (2)/a.ntff', 'x/a.ntff', 'picked files/b.neff', 'picked files (3)/a.ntff']);
});
