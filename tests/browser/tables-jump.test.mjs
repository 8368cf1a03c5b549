// The Tables view's row jump and filter count (session 9's new-user trial): a refused filter is
// not counted in "· N filters"; a row jump past the table's end or of no number says why in the
// note; the info line's range, the row column and the jump field are all 0-based. TableBrowser
// runs in Chromium (bundled with esbuild) on a generated 1 000-row source whose cell `v` is the
// row number and `s` its text, with a view that filters `s` by "contains", so every value shown
// can be checked exactly. No capture or wasm is needed.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { REPO, launch } from './harness.mjs';

const TOTAL = 1000;
let b;

before(async () => {
  const entry = `
    import { TableBrowser } from './views/tables.ts';
    import { Table, Utf8, vectorFromArray } from 'apache-arrow';
    window.start = (total) => {
      const tb = new TableBrowser();
      document.querySelector('#slot').append(tb.root);
      Object.assign(tb.root.style, { display: 'flex', flexDirection: 'column', height: '600px' });
      const rows = (ids) => new Table({
        v: vectorFromArray(Float64Array.from(ids)),
        s: vectorFromArray(ids.map((i) => String(i)), new Utf8()),
        nscope_row: vectorFromArray(Float64Array.from(ids)),
      });
      // View 0 is the table order.
      const views = new Map([[0, Array.from({ length: total }, (_, i) => i)]]);
      tb.setSource({
        page: async (_n, offset, count) => rows(Array.from({ length: Math.max(0, Math.min(count, total - offset)) }, (_, i) => offset + i)),
        view: async (_n, _sort, _desc, filters) => {
          const ids = Array.from({ length: total }, (_, i) => i).filter((i) => filters.every((f) => String(i).includes(f.text)));
          const id = views.size;
          views.set(id, ids);
          return { id, rows: ids.length, matched: ids.length, capped: false, max_rows: total };
        },
        viewRows: async (_n, view, offset, count) => rows((views.get(view) ?? []).slice(offset, offset + count)),
        viewPosition: async (view, row) => (views.get(view) ?? []).indexOf(row),
        downloadParquet: async () => {}, downloadAll: async () => {}, descriptions: async () => new Map(),
      }, [{ name: 'T', rows: total }]);
    };`;
  const out = await build({ stdin: { contents: entry, resolveDir: join(REPO, 'www', 'src'), loader: 'ts' }, bundle: true, format: 'iife', write: false, logLevel: 'silent' });
  const css = readFileSync(join(REPO, 'www', 'src', 'style.css'), 'utf8');
  b = await launch();
  await b.page.setViewportSize({ width: 1200, height: 800 });
  await b.page.setContent(`<!doctype html><style>${css}</style><div id="slot"></div><script>${out.outputFiles[0].text}</script>`);
  await b.page.evaluate((n) => window.start(n), TOTAL);
  await b.page.waitForSelector('[data-testid=table-grid] tbody tr.vt-row[data-row="0"]', { timeout: 10_000 }).catch(async (e) => { throw new Error(`${e.message}\n${b.errors.join("\n")}\n${(await b.page.locator("#slot").innerHTML()).slice(0, 3000)}`); });
});

after(async () => {
  await b?.close();
});

const info = () => b.page.locator('[data-testid=table-info]').innerText();
const note = () => b.page.locator('[data-testid=table-note]').innerText();

async function jump(text) {
  await b.page.fill('[data-testid=table-jump]', text);
  await b.page.press('[data-testid=table-jump]', 'Enter');
}

test('the info range is 0-based like the row column; jumps past the end or of no number say why', async () => {
  const first = await b.page.$$eval('[data-testid=table-grid] tbody tr.vt-row', (trs) => trs.map((tr) => Number(tr.querySelector('td.rowno')?.textContent)));
  assert.equal(first[0], 0, 'the row column starts at 0');
  const last = Number(await b.page.locator('[data-testid=table-info]').getAttribute('data-last'));
  assert.equal(await info(), `rows 0–${last - 1} of 1,000`, 'the info line names the rows the row column shows');
  assert.equal(first.at(-1), last - 1);

  await jump('1000');
  await b.page.waitForFunction(() => document.querySelector('[data-testid=table-note]')?.dataset.jump === 'refused');
  assert.equal(await note(), 'row 1,000 is past the end of T: its rows are 0 – 999 (0-based, as the row column)');
  await jump('abc');
  await b.page.waitForFunction(() => /not a row number/.test(document.querySelector('[data-testid=table-note]')?.textContent ?? ''));
  assert.equal(await note(), 'row "abc" is not a row number: its rows are 0 – 999 (0-based, as the row column)');
  // The last row is reachable by the number the row column shows for it.
  await jump('999');
  await b.page.waitForSelector('[data-testid=table-grid] tbody tr.vt-row.selected[data-row="999"]');
  assert.equal(await note(), '', 'a jump that worked clears the message');
  assert.equal(await b.page.locator('[data-testid=table-grid] tbody tr.vt-row.selected td.rowno').innerText(), '999');
});

test('a refused filter is not counted among the filters of the view', async () => {
  await b.page.fill('input.col-filter[data-col=s]', '7');
  await b.page.press('input.col-filter[data-col=s]', 'Enter');
  await b.page.waitForFunction(() => document.querySelector('[data-testid=table-info]')?.textContent?.includes('filter'));
  const matched = Array.from({ length: TOTAL }, (_, i) => i).filter((i) => String(i).includes('7')).length;
  assert.equal(Number(await b.page.locator('[data-testid=table-info]').getAttribute('data-rows')), matched);
  assert.match(await info(), new RegExp(`of ${matched.toLocaleString('en-US')} \\(of 1,000 in the table\\) · 1 filter$`));
  // Text on the numeric column: refused, the view stays, still one filter.
  await b.page.fill('input.col-filter[data-col=v]', 'abc');
  await b.page.press('input.col-filter[data-col=v]', 'Enter');
  await b.page.waitForFunction(() => /is not a number/.test(document.querySelector('[data-testid=table-note]')?.textContent ?? ''));
  assert.match(await info(), / · 1 filter$/, 'the refused filter is not counted');
  assert.equal(Number(await b.page.locator('[data-testid=table-info]').getAttribute('data-rows')), matched, 'the view stays');
  // A refused filter alone: no filter counted.
  await b.page.click('[data-testid=table-clear]');
  await b.page.waitForFunction(() => !document.querySelector('[data-testid=table-info]')?.textContent?.includes('filter'));
  await b.page.fill('input.col-filter[data-col=v]', 'abc');
  await b.page.press('input.col-filter[data-col=v]', 'Enter');
  await b.page.waitForFunction(() => /is not a number/.test(document.querySelector('[data-testid=table-note]')?.textContent ?? ''));
  assert.doesNotMatch(await info(), /filter/, `no filter counted: ${await info()}`);
});
