// Unit tests of the Tables view's and the conformance report's pure logic (run in Node, modules
// bundled with esbuild as units.test.mjs does): header units not repeated after a name that spells
// them, text on a numeric column refused with a message, the scroll offset → first row mapping of a
// capped spacer (8 221 719 rows: the bottom shows the last row), and the sections whose rows differ.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { REPO, loadModule as load } from './harness.mjs';

const tables = await load('views/tables.ts');
const conform = await load('views/conform.ts');

test('headerUnit: no unit after a name that ends with it', () => {
  const { headerUnit } = tables;
  assert.equal(headerUnit('duration_ns', 'ns'), '');
  assert.equal(headerUnit('evt_wait_time_ns', 'ns'), '');
  assert.equal(headerUnit('transfer_bytes', 'B'), '');
  assert.equal(headerUnit('vector_engine_active_time_percent', '%'), '');
  assert.equal(headerUnit('start_ticks', 'ticks'), '');
  // Names that do not spell it keep it; no unit or '–' shows none.
  assert.equal(headerUnit('start_ts', 'ns'), 'ns');
  assert.equal(headerUnit('total_transfer_bytes', 'B/s'), 'B/s');
  assert.equal(headerUnit('hbm_read', 'B'), 'B');
  assert.equal(headerUnit('dns', 'ns'), 'ns', 'a suffix without "_" is part of the word');
  assert.equal(headerUnit('opcode', ''), '');
  assert.equal(headerUnit('x', '–'), '');
});

test('numericFilterError: text on a number column is refused like ">= abc"', () => {
  const { numericFilterError } = tables;
  for (const text of ['(', '%', '.*', '\\', 'abc', 'dma', '12ms', '1e3']) {
    const e = numericFilterError('duration_ns', 'Int64', text);
    assert.ok(e !== null, `${JSON.stringify(text)} is refused`);
    assert.match(e, /^filter on duration_ns: .* is not a number/);
    assert.ok(e.includes(JSON.stringify(text)), `the message quotes ${JSON.stringify(text)}: ${e}`);
  }
  // Digits (the core's "contains" on the decimal text) and comparisons pass (the core checks those).
  for (const text of ['12', ' 12 ', '-3', '0.5', '>= 1000', '< 5', '= 3', '!= 0', '>= abc', '']) {
    assert.equal(numericFilterError('duration_ns', 'Int64', text), null, JSON.stringify(text));
  }
  assert.equal(numericFilterError('rate', 'Float64', 'NaN'), null, 'a float column shows NaN');
  assert.ok(numericFilterError('rate', 'Float32', 'x') !== null);
  assert.ok(numericFilterError('n', 'Uint32', 'x') !== null);
  // Text columns (plain or dictionary) and booleans take words.
  assert.equal(numericFilterError('engine', 'Utf8', '('), null);
  assert.equal(numericFilterError('opcode', 'Dictionary<Int32, Utf8>', 'a7'), null);
  assert.equal(numericFilterError('flag', 'Bool', 'true'), null);
});

test('firstRowAt: the bottom of a capped scroll shows the last row', () => {
  const { firstRowAt, ROW_H } = tables;
  const total = 8_221_719;
  const vis = 20;
  const maxFirst = total - vis;
  const client = 600;
  const range = 8_000_000 - client;
  assert.equal(firstRowAt(range, range, maxFirst), maxFirst, 'scrollTop at the end → last page');
  // Browsers may stop a fraction of a pixel short of the end.
  assert.equal(firstRowAt(range - 0.5, range, maxFirst), maxFirst);
  assert.equal(firstRowAt(range + 40, range, maxFirst), maxFirst, 'past the end clamps');
  assert.equal(firstRowAt(0, range, maxFirst), 0);
  assert.equal(firstRowAt(-5, range, maxFirst), 0);
  // Proportional in between, monotonic, and below the last page before the last pixel.
  const mid = firstRowAt(range / 2, range, maxFirst);
  assert.ok(Math.abs(mid - maxFirst / 2) <= 1, `middle ${mid}`);
  let prev = -1;
  for (let top = 0; top <= range; top += range / 997) {
    const f = firstRowAt(top, range, maxFirst);
    assert.ok(f >= prev && f <= maxFirst, `monotonic at ${top}`);
    prev = f;
  }
  assert.ok(firstRowAt(range - 2, range, maxFirst) < maxFirst);
  // Uncapped (1 px per px): row = offset / ROW_H.
  const small = 25_510;
  const r2 = small * ROW_H + 3 * ROW_H - client;
  assert.equal(firstRowAt(r2, r2, small - vis), small - vis);
  assert.equal(firstRowAt(0, 0, 0), 0, 'nothing to scroll');
});

test('rowGaps: compared sections whose rows differ from the export', () => {
  const sec = (section, status, export_rows, our_rows, matched_rows) => ({ section, status, export_rows, our_rows, matched_rows, alignment: '', fields: [] });
  const report = {
    sections: [
      sec('instruction', 'compared', 442, 442, 442),
      sec('neff_node', 'compared', 8, 6, 6),
      sec('dma', 'compared', 10, 12, 10),
      sec('pending', 'compared', 5, 5, 4),
      sec('terminology', 'presentation', 3, 0, 0),
      sec('neff_header', 'not_produced', 1, 0, 0),
    ],
  };
  assert.deepEqual(conform.rowGaps(report).map((s) => s.section), ['neff_node', 'dma', 'pending']);
});
