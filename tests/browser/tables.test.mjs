// Tables and Search as a user drives them, on the KevGomes capture (System+Device; 7 628 Instruction
// rows with HLO/BIR names and raw opcode bytes 0x41/0x49/0x92/0xA7/0xA8, 25 510 DmaPacket rows).
// Every expected value is computed here from the page's own Parquet downloads (hyparquet), not from
// the core: the sort order, filter counts, the last row's cells, search totals and their order.
// Needs `npm run build` first and ../shared/samples.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { foreignRequests, launch, requireBuild, sample, serve, showView, waitReady } from './harness.mjs';

const SHOT_DIR = '/tmp/shots';
let server;

before(async () => {
  requireBuild();
  mkdirSync(SHOT_DIR, { recursive: true });
  server = await serve();
});

after(async () => {
  await server?.close();
});

async function openFolder(page, dir) {
  await page.goto(`${server.origin}/`);
  await page.waitForFunction(() => document.body.dataset.state === 'idle', null, { timeout: 30_000 });
  await page.setInputFiles('[data-testid=folder-input]', dir);
  await waitReady(page);
}

/** Opens table `name` in the Tables view and waits for its first rows. */
async function selectTable(page, name) {
  await showView(page, 'tables');
  await page.selectOption('[data-testid=table-select]', name);
  await settled(page);
  await page.waitForFunction((n) => document.querySelector('[data-testid=table-select]')?.value === n, name);
  return Number(await page.locator('[data-testid=table-info]').getAttribute('data-rows'));
}

/** Waits until the grid shows fetched rows (none still loading) and the info line is final. */
async function settled(page) {
  await page.waitForFunction(() => {
    const info = document.querySelector('[data-testid=table-info]');
    const t = info?.textContent ?? '';
    if (info?.dataset.rows === undefined || t === 'loading…' || t === 'sorting…' || t === 'filtering…' || t === '') return false;
    const rows = document.querySelectorAll('[data-testid=table-grid] tbody tr.vt-row');
    return Number(info.dataset.rows) === 0 || (rows.length > 0 && document.querySelectorAll('[data-testid=table-grid] tbody tr.loading').length === 0);
  }, null, { timeout: 60_000 });
}

/** The rows on screen: table row and the text of `cols`. */
async function shownRows(page, cols) {
  return page.$$eval('[data-testid=table-grid] tbody tr.vt-row', (trs, cols) => trs.map((tr) => ({
    row: Number(tr.dataset.row),
    pos: Number(tr.dataset.pos),
    ...Object.fromEntries(cols.map((c) => [c, tr.querySelector(`td[data-col="${c}"]`)?.textContent ?? null])),
  })), cols);
}

/** Every row of table `name`, all columns, from the Tables view's Parquet download. */
async function parquetRows(page, name) {
  await selectTable(page, name);
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=download-parquet]')]);
  const bytes = readFileSync(await dl.path());
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
  // Column by column: hyparquet-compressors' LZ4 refuses the empty pages of an all-null text
  // column ("lz4 offset out of range"). Such a column is left out here; it can only make an
  // expected count smaller than the core's (which reads it), never hide a difference.
  const names = parquetMetadata(file).schema.slice(1).map((c) => c.name);
  let rows = null;
  for (const c of names) {
    let col;
    try {
      col = await parquetReadObjects({ file, columns: [c], compressors });
    } catch {
      continue;
    }
    rows ??= col.map(() => ({}));
    col.forEach((r, i) => { rows[i][c] = r[c]; });
  }
  return rows ?? [];
}

/** Table rows ordered as the core sorts: nulls last, values ascending (or descending), ties by row. */
function sortedRows(rows, col, desc) {
  const idx = rows.map((_, i) => i);
  const key = (v) => (v === null || v === undefined ? null : typeof v === 'bigint' ? v : BigInt(v));
  return idx.sort((a, b) => {
    const x = key(rows[a][col]);
    const y = key(rows[b][col]);
    if (x === null || y === null) return x === y ? a - b : x === null ? 1 : -1;
    if (x !== y) return (x < y ? -1 : 1) * (desc ? -1 : 1);
    return a - b;
  });
}

/** Rows (index) of `rows` with any text cell containing `q` (case-insensitive), and that cell. */
function textHits(rows, q) {
  const out = [];
  rows.forEach((r, i) => {
    for (const v of Object.values(r)) {
      if (typeof v === 'string' && v.toLowerCase().includes(q.toLowerCase())) {
        out.push({ row: i, text: v });
        return;
      }
    }
  });
  return out;
}

const num = (text) => Number(String(text).replace(/[^\d.-]/g, ''));

test('KevGomes: sort, filter, last of 25 510 rows, row ↔ timeline, search steps through named matches', async () => {
  const dir = sample('KevGomes-nki-moe-megakernel/output/i-0af76a70a6d3864dd_pid_713479');
  const b = await launch();
  try {
    const { page } = b;
    await openFolder(page, dir);
    const instr = await parquetRows(page, 'Instruction');
    assert.equal(instr.length, 7628, 'Instruction rows in the download');

    // Sort: a click on a header sorts ascending, a second click descending (worker-side, whole table).
    for (const desc of [false, true]) {
      await page.click('[data-testid=table-grid] th[data-col=duration_ns]');
      await page.waitForFunction((s) => document.querySelector('.tables')?.dataset.sort === s, `duration_ns:${desc ? 'desc' : 'asc'}`);
      await settled(page);
      const shown = await shownRows(page, ['duration_ns']);
      assert.ok(shown.length >= 10, `${shown.length} rows on screen`);
      const want = sortedRows(instr, 'duration_ns', desc).slice(0, shown.length);
      assert.deepEqual(shown.map((r) => r.row), want, `rows on screen in ${desc ? 'descending' : 'ascending'} duration order`);
      assert.deepEqual(shown.map((r) => num(r.duration_ns)), want.map((i) => Number(instr[i].duration_ns)), 'their durations');
    }
    // Scroll the sorted view to its end: the shortest durations come last, nulls after them.
    await page.focus('[data-testid=table-scroll]');
    await page.keyboard.press('End');
    await page.waitForFunction(() => Number(document.querySelector('[data-testid=table-info]')?.dataset.last) === 7628);
    await settled(page);
    const tail = await shownRows(page, ['duration_ns']);
    const wantTail = sortedRows(instr, 'duration_ns', true).slice(7628 - tail.length);
    assert.deepEqual(tail.map((r) => r.row), wantTail, 'the last rows of the descending order');

    // Filters: text contains (opcode) and a numeric comparison, combined.
    await page.click('[data-testid=table-clear]');
    await settled(page);
    await page.fill('input.col-filter[data-col=opcode]', 'a7');
    await page.press('input.col-filter[data-col=opcode]', 'Enter');
    await page.waitForFunction(() => document.querySelector('[data-testid=table-info]')?.textContent?.includes('filter'));
    await settled(page);
    const a7 = instr.filter((r) => String(r.opcode ?? '').toLowerCase().includes('a7')).length;
    assert.ok(a7 > 0, 'the capture executes 0xA7');
    assert.equal(Number(await page.locator('[data-testid=table-info]').getAttribute('data-rows')), a7, 'rows whose opcode contains "a7"');
    const raw = await page.$$eval('[data-testid=table-grid] tbody td[data-col=opcode]', (tds) => tds.map((td) => ({ text: td.textContent, raw: td.querySelector('[data-raw-opcode]')?.getAttribute('title') ?? '' })));
    assert.ok(raw.every((c) => c.text === '0xA7 (unnamed byte)' && /no mnemonic is known/.test(c.raw)), `raw bytes carry a note: ${JSON.stringify(raw[0])}`);
    // The median duration of those rows as the bound, so both sides of it are non-empty.
    const durs = instr.filter((r) => String(r.opcode ?? '').toLowerCase().includes('a7') && r.duration_ns !== null).map((r) => Number(r.duration_ns)).sort((x, y) => x - y);
    const bound = durs[Math.floor(durs.length / 2)];
    await page.fill('input.col-filter[data-col=duration_ns]', `>= ${bound}`);
    await page.press('input.col-filter[data-col=duration_ns]', 'Enter');
    await page.waitForFunction(() => document.querySelector('[data-testid=table-info]')?.textContent?.includes('2 filters'));
    await settled(page);
    const both = durs.filter((d) => d >= bound).length;
    assert.ok(both > 0 && both < a7, `${both} of ${a7} rows at or above ${bound} ns`);
    assert.equal(Number(await page.locator('[data-testid=table-info]').getAttribute('data-rows')), both, `opcode ∋ "a7" and duration_ns >= ${bound}`);
    // A comparison on a text column is refused with a message naming it; the view stays.
    await page.fill('input.col-filter[data-col=engine]', '> 3');
    await page.press('input.col-filter[data-col=engine]', 'Enter');
    await page.waitForFunction(() => /engine/.test(document.querySelector('[data-testid=table-note]')?.textContent ?? ''));
    await page.fill('input.col-filter[data-col=engine]', '');
    // Text on a numeric column would match nothing: refused with the same message as ">= abc", the view stays.
    // (Each text's message differs from the one before, so the wait sees the new one.)
    for (const text of ['>= abc', '(', '%', '.*', '\\', 'abc']) {
      await page.fill('input.col-filter[data-col=duration_ns]', text);
      await page.press('input.col-filter[data-col=duration_ns]', 'Enter');
      await page.waitForFunction((t) => (document.querySelector('[data-testid=table-note]')?.textContent ?? '').includes(`${JSON.stringify(t)}`), text.replace(/^>=\s*/, ''));
      assert.match(await page.locator('[data-testid=table-note]').innerText(), /^filter on duration_ns: .* is not a number/, `${text}: the message`);
      assert.equal(Number(await page.locator('[data-testid=table-info]').getAttribute('data-rows')), both, `${text}: the last view stays`);
    }
    // While a filter or sort is on, the Parquet download says it is the whole table.
    assert.ok(await page.locator('[data-testid=download-note]').isVisible(), 'the download note shows with filters on');
    assert.match(await page.locator('[data-testid=download-note]').innerText(), /whole table \(filters and sort are not applied\)/);
    assert.match(await page.locator('[data-testid=download-parquet]').getAttribute('title'), /whole table.*not applied/);
    await page.fill('input.col-filter[data-col=duration_ns]', '');
    await page.click('[data-testid=table-clear]');
    await settled(page);
    assert.equal(await page.locator('[data-testid=download-note]').isVisible(), false, 'no download note without sort and filters');
    // A refused filter as the only one: "Clear sort & filters" still gets out of it.
    assert.equal(await page.locator('[data-testid=table-clear]').isDisabled(), true, 'nothing to clear');
    await page.fill('input.col-filter[data-col=duration_ns]', '>= 0x10');
    await page.press('input.col-filter[data-col=duration_ns]', 'Enter');
    await page.waitForFunction(() => /0x10/.test(document.querySelector('[data-testid=table-note]')?.textContent ?? ''));
    assert.match(await page.locator('[data-testid=table-note]').innerText(), /is not a number.*; the view stays as it was$/);
    assert.equal(await page.locator('[data-testid=table-clear]').isDisabled(), false, 'Clear is usable with a refused filter');
    await page.click('[data-testid=table-clear]');
    await settled(page);
    assert.equal(await page.inputValue('input.col-filter[data-col=duration_ns]'), '', 'the refused filter is cleared');
    // Headers name a unit once: "duration_ns", not "duration_ns ns"; a name without it keeps it.
    const head = async (c) => (await page.locator(`[data-testid=table-grid] th[data-col=${c}]`).innerText()).trim();
    assert.equal(await head('duration_ns'), 'duration_ns');
    assert.equal(await head('start_ts'), 'start_ts ns');

    // Click a row → the timeline selects that instruction; "Show in table" comes back to it.
    const target = instr.findIndex((r) => r.opcode === '0xA8');
    await page.fill('[data-testid=table-jump]', String(target));
    await page.press('[data-testid=table-jump]', 'Enter');
    await page.waitForSelector(`[data-testid=table-grid] tbody tr.vt-row[data-row="${target}"]`);
    await page.click(`[data-testid=table-grid] tbody tr.vt-row[data-row="${target}"]`);
    await page.waitForFunction(() => document.body.dataset.view === 'timeline');
    await page.waitForFunction((r) => document.querySelector('[data-testid=timeline-canvas]')?.dataset.selectedRow === String(r), target, { timeout: 10_000 });
    await page.waitForFunction(() => document.querySelector('[data-testid=instruction-details] [data-field=opcode]')?.textContent?.startsWith('0xA8'));
    const z0 = Number(await page.locator('[data-testid=timeline-canvas]').getAttribute('data-zoom-start'));
    const z1 = Number(await page.locator('[data-testid=timeline-canvas]').getAttribute('data-zoom-end'));
    const s = Number(instr[target].start_ts);
    assert.ok(z0 <= s && s <= z1 && z1 - z0 < 1e6, `the timeline zoomed onto the row (${z0}..${z1} around ${s})`);
    await page.click('[data-testid=show-in-table]');
    await page.waitForFunction(() => document.body.dataset.view === 'tables');
    await page.waitForSelector(`[data-testid=table-grid] tbody tr.vt-row.selected[data-row="${target}"]`);

    // Search: named matches across the event tables, Enter / Shift+Enter stepping, k of n.
    const dma = await parquetRows(page, 'DmaPacket');
    assert.ok(dma.length > 10_000, `DmaPacket has ${dma.length} rows`);
    const sem = await parquetRows(page, 'SemaphoreUpdate');
    const hits = (q) => [
      ...textHits(instr, q).map((h) => ({ ...h, table: 'Instruction', start: BigInt(instr[h.row].start_ts) })),
      ...textHits(dma, q).map((h) => ({ ...h, table: 'DmaPacket', start: BigInt(dma[h.row].start_ts) })),
      ...textHits(sem, q).map((h) => ({ ...h, table: 'SemaphoreUpdate', start: BigInt(sem[h.row].timestamp) })),
    ];
    await showView(page, 'timeline');
    for (const q of ['custom-call.1', 'inst.2750']) {
      const want = hits(q);
      assert.ok(want.length > 0, `${q} is in the capture`);
      const order = ['Instruction', 'DmaPacket', 'SemaphoreUpdate'];
      want.sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : order.indexOf(a.table) - order.indexOf(b.table) || a.row - b.row));
      await page.fill('[data-testid=search-input]', q);
      await page.press('[data-testid=search-input]', 'Enter');
      await page.waitForFunction(() => document.querySelector('[data-testid=search-count]')?.dataset.k === '1');
      assert.equal(Number(await page.locator('[data-testid=search-count]').getAttribute('data-total')), want.length, `${q}: total matches`);
      assert.match(await page.locator('[data-testid=search-count]').innerText(), new RegExp(`^1 of ${want.length.toLocaleString('en-US').replace(/,/g, '[ ,\u202f\u00a0]?')}`));
      const steps = [1, 1, -1, -1].slice(0, want.length > 1 ? 4 : 0);
      let k = 0;
      const check = async () => {
        const w = want[(k + want.length) % want.length];
        await page.waitForFunction((w) => {
          const what = document.querySelector('[data-testid=search-what]');
          return what?.dataset.table === w.table && what.dataset.row === String(w.row);
        }, { table: w.table, row: w.row });
        assert.ok((await page.locator('[data-testid=search-what]').getAttribute('data-text')).toLowerCase().includes(q), 'the match names the query');
        await page.waitForFunction((r) => document.querySelector('[data-testid=timeline-canvas]')?.dataset.selectedRow === String(r), w.row, { timeout: 10_000 });
      };
      await check();
      for (const d of steps) {
        await page.press('[data-testid=search-input]', d > 0 ? 'Enter' : 'Shift+Enter');
        k += d;
        await page.waitForFunction((k) => document.querySelector('[data-testid=search-count]')?.dataset.k === String(k), ((k % want.length) + want.length) % want.length + 1);
        await check();
      }
      if (q === 'custom-call.1') await page.screenshot({ path: `${SHOT_DIR}/tables-search-1440x1000.png` });
    }

    // DmaPacket (25 510 rows): scroll to the very last row; its cells equal the download's.
    for (const [w, hgt] of [[1440, 900], [1000, 800]]) {
      await page.setViewportSize({ width: w, height: hgt });
      const n = await selectTable(page, 'DmaPacket');
      assert.equal(n, dma.length, 'DmaPacket rows');
      await page.$eval('[data-testid=table-scroll]', (el) => { el.scrollTop = el.scrollHeight; });
      await page.waitForFunction((n) => Number(document.querySelector('[data-testid=table-info]')?.dataset.last) === n, n);
      await settled(page);
      const last = (await shownRows(page, ['start_ts', 'queue_name'])).at(-1);
      assert.equal(last.row, n - 1, 'the last table row is on screen');
      assert.equal(num(last.start_ts), Number(dma[n - 1].start_ts), 'its start_ts');
      assert.equal(last.queue_name, String(dma[n - 1].queue_name), 'its queue_name');
      await page.$eval('[data-testid=table-scroll]', (el) => { el.scrollTop = el.scrollHeight / 2; });
      await page.waitForTimeout(300);
      await settled(page);
      await page.click('[data-testid=table-grid] th[data-col=transfer_bytes]').catch(() => {});
      await settled(page);
      await page.screenshot({ path: `${SHOT_DIR}/tables-${w}x${hgt}.png` });
    }
    assert.deepEqual(foreignRequests(b.requests, server.origin), [], 'no request left 127.0.0.1');
    assert.deepEqual(b.errors, [], 'no uncaught page errors');
  } finally {
    await b.close();
  }
});

test('KevGomes through the level-of-detail store (?lod=1): a table row and a search hit are revealed from window rows', async () => {
  const dir = sample('KevGomes-nki-moe-megakernel/output/i-0af76a70a6d3864dd_pid_713479');
  const b = await launch();
  try {
    const { page } = b;
    await page.goto(`${server.origin}/?lod=1`);
    await page.waitForFunction(() => document.body.dataset.state === 'idle', null, { timeout: 30_000 });
    await page.setInputFiles('[data-testid=folder-input]', dir);
    await waitReady(page);
    const instr = await parquetRows(page, 'Instruction');
    // The last-starting 0x41 row: far from the fitted view's start, so the window must be loaded.
    let target = -1;
    instr.forEach((r, i) => { if (r.opcode === '0x41' && (target < 0 || r.start_ts > instr[target].start_ts)) target = i; });
    assert.ok(target >= 0, 'the capture executes 0x41');
    await selectTable(page, 'Instruction');
    await page.fill('[data-testid=table-jump]', String(target));
    await page.press('[data-testid=table-jump]', 'Enter');
    await page.click(`[data-testid=table-grid] tbody tr.vt-row[data-row="${target}"]`);
    await page.waitForFunction((r) => document.querySelector('[data-testid=timeline-canvas]')?.dataset.selectedRow === String(r), target, { timeout: 20_000 });
    await page.waitForFunction(() => document.querySelector('[data-testid=instruction-details] [data-field=opcode]')?.textContent?.startsWith('0x41'));

    const want = textHits(instr, 'inst.2750').sort((x, y) => (instr[x.row].start_ts < instr[y.row].start_ts ? -1 : 1) || x.row - y.row);
    await page.fill('[data-testid=search-input]', 'inst.2750');
    await page.press('[data-testid=search-input]', 'Enter');
    await page.waitForFunction(() => document.querySelector('[data-testid=search-count]')?.dataset.k === '1');
    await page.waitForFunction((r) => document.querySelector('[data-testid=timeline-canvas]')?.dataset.selectedRow === String(r), want[0].row, { timeout: 20_000 });
    assert.deepEqual(b.errors, [], 'no uncaught page errors');
  } finally {
    await b.close();
  }
});
