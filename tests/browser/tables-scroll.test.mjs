// The Tables view's virtual scroll on a table too tall for the spacer (8 221 719 rows, the size of
// the new-user trial's table: the spacer is capped, a pixel is several rows). TableBrowser runs in
// Chromium (bundled with esbuild) on a generated source whose cell `v` is the row number, so what
// the grid shows can be checked exactly: the bottom of the scroll shows the last row, also after the
// scroll box is resized while at the bottom, and the End key. No capture or wasm is needed.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { REPO, launch } from './harness.mjs';

const TOTAL = 8_221_719;
let b;

before(async () => {
  const entry = `
    import { TableBrowser } from './views/tables.ts';
    import { tableFromArrays } from 'apache-arrow';
    window.start = (total) => {
      const tb = new TableBrowser();
      document.querySelector('#slot').append(tb.root);
      // A flex column of fixed height, as the page's view slot is: the scroll box takes what is left.
      Object.assign(tb.root.style, { display: 'flex', flexDirection: 'column', height: '700px' });
      tb.setSource({
        page: async (_n, offset, count) => tableFromArrays({ v: Float64Array.from({ length: Math.max(0, Math.min(count, total - offset)) }, (_, i) => offset + i) }),
        downloadParquet: async () => {}, downloadAll: async () => {}, descriptions: async () => new Map(),
      }, [{ name: 'T', rows: total }]);
    };`;
  const out = await build({ stdin: { contents: entry, resolveDir: join(REPO, 'www', 'src'), loader: 'ts' }, bundle: true, format: 'iife', write: false, logLevel: 'silent' });
  const css = readFileSync(join(REPO, 'www', 'src', 'style.css'), 'utf8');
  b = await launch();
  await b.page.setViewportSize({ width: 1200, height: 800 });
  await b.page.setContent(`<!doctype html><style>${css}</style><div id="slot"></div><script>${out.outputFiles[0].text}</script>`);
  await b.page.evaluate((n) => window.start(n), TOTAL);
  await b.page.waitForSelector('[data-testid=table-grid] tbody tr.vt-row[data-row="0"]');
});

after(async () => {
  await b?.close();
});

/** Waits for the grid to show rows ending at `last` (1-based, the info line's) and returns its rows. */
async function shownAt(last) {
  await b.page.waitForFunction((n) => document.querySelector('[data-testid=table-info]')?.dataset.last === String(n)
    && document.querySelectorAll('[data-testid=table-grid] tbody tr.loading').length === 0, last, { timeout: 10_000 })
    .catch(async () => assert.fail(`the grid should end at row ${last}; it shows "${await b.page.locator('[data-testid=table-info]').textContent()}"`));
  return b.page.$$eval('[data-testid=table-grid] tbody tr.vt-row', (trs) => trs.map((tr) => [Number(tr.dataset.row), Number(tr.querySelector('td[data-col=v]')?.textContent?.replace(/\D/g, ''))]));
}

test('a capped scroll: the bottom shows the last row, after a resize too', async () => {
  const { page } = b;
  const spacer = await page.$eval('[data-testid=table-scroll]', (el) => el.scrollHeight);
  assert.ok(spacer < TOTAL * 24, `the spacer is capped (${spacer} px for ${TOTAL} rows)`);
  await page.$eval('[data-testid=table-scroll]', (el) => { el.scrollTop = el.scrollHeight; });
  let rows = await shownAt(TOTAL);
  assert.deepEqual(rows.at(-1), [TOTAL - 1, TOTAL - 1], 'the last row and its cell');
  // Shrink the box at the bottom (a panel opening above it): the last row stays on screen.
  await page.$eval('.tables', (el) => { el.style.height = '520px'; });
  await page.waitForFunction(() => document.querySelector('[data-testid=table-scroll]').clientHeight < 500);
  rows = await shownAt(TOTAL);
  assert.deepEqual(rows.at(-1), [TOTAL - 1, TOTAL - 1], 'the last row after the box shrank');
  await page.$eval('.tables', (el) => { el.style.height = '760px'; });
  rows = await shownAt(TOTAL);
  assert.equal(rows.at(-1)[0], TOTAL - 1, 'the last row after the box grew');
  // Rows on screen are consecutive.
  rows.forEach(([r], i) => assert.equal(r, rows[0][0] + i));
  // Home, then End.
  await page.focus('[data-testid=table-scroll]');
  await page.keyboard.press('Home');
  await page.waitForSelector('[data-testid=table-grid] tbody tr.vt-row[data-row="0"]');
  await page.keyboard.press('End');
  rows = await shownAt(TOTAL);
  assert.equal(rows.at(-1)[0], TOTAL - 1, 'End shows the last row');
  assert.deepEqual(b.errors, [], 'no page errors');
});
