// Timeline frame times and page memory on a large capture, in headless Chromium: picks DIR in the
// built page (www/dist), waits for the device timeline (or, with --system, the System timeline),
// then draws it fitted, zoomed in step by step (W key, each zoom waiting for the window's data)
// and panned, and prints per phase the frame draw times (canvas data-draw-ms, ms), how each table
// was drawn (summaries or the window's rows; views/tracks/lod.ts), and after a forced GC the
// page's JS heap.
//
//   node scripts/bench-lod.mjs DIR [--system] [--lod 0|1]
//
// `--lod 0` forces the old path (every row of the drawn columns on the main thread) for the
// before figure; `--lod 1` forces the level-of-detail path on a small capture.

import { launch, serve } from '../tests/browser/harness.mjs';

const args = process.argv.slice(2);
const dir = args.find((a) => !a.startsWith('--') && !/^[01]$/.test(a));
const system = args.includes('--system');
const li = args.indexOf('--lod');
const lod = li >= 0 ? args[li + 1] : null;
if (!dir) {
  console.error('usage: node scripts/bench-lod.mjs DIR [--system] [--lod 0|1]');
  process.exit(2);
}
const testid = system ? 'system-canvas' : 'timeline-canvas';
const root = system ? '.timeline:has([data-testid=system-canvas])' : '.timeline:has([data-testid=timeline-canvas])';

const server = await serve();
const b = await launch();
try {
  const { page } = b;
  const cdp = await page.context().newCDPSession(page);
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') console.error('page:', m.text()); });
  await page.goto(`${server.origin}/${lod === null ? '' : `?lod=${lod}`}`);
  await page.waitForFunction(() => document.body.dataset.state === 'idle', null, { timeout: 30_000 });
  const t0 = Date.now();
  await page.setInputFiles('[data-testid=folder-input]', dir);
  if (system) {
    await page.waitForFunction(() => ['ready', 'error'].includes(document.body.dataset.state ?? ''), null, { timeout: 1_800_000, polling: 500 });
    await page.locator('[data-testid=open-system]').first().click();
    await page.waitForFunction(() => document.body.classList.contains('has-system') && ['ready', 'error'].includes(document.body.dataset.state ?? ''), null, { timeout: 1_800_000, polling: 500 });
  } else {
    await page.waitForFunction(() => document.body.classList.contains('has-result') && ['ready', 'error'].includes(document.body.dataset.state ?? ''), null, { timeout: 1_800_000, polling: 500 });
  }
  const openS = (Date.now() - t0) / 1000;
  const state = await page.evaluate(() => document.body.dataset.state);
  if (state !== 'ready') throw new Error(`page ended in ${state}: ${await page.locator('[data-testid=error]').innerText().catch(() => '')}`);
  // The workspace shows one view at a time: bring the timeline's tab forward.
  await page.click(`[data-testid=tab-${system ? 'system' : 'timeline'}]`);
  await page.waitForTimeout(500);
  const canvas = page.locator(`[data-testid=${testid}]`);
  const settle = async () => {
    // Two frames, then wait for pending window data (data-lod changes) up to 20 s.
    const before = await page.evaluate((r) => document.querySelector(r)?.dataset.lod ?? '', root);
    await page.waitForTimeout(150);
    await page.waitForFunction(([r, b]) => (document.querySelector(r)?.dataset.lod ?? '') !== b, [root, before], { timeout: 20_000 }).catch(() => {});
    await page.waitForTimeout(100);
  };
  const drawMs = async () => Number(await canvas.getAttribute('data-draw-ms'));
  const frames = async (n) => {
    // Redraws without moving: hover across the plot (each move requests a frame).
    const box = await canvas.boundingBox();
    const out = [];
    for (let i = 0; i < n; i++) {
      await page.mouse.move(box.x + 300 + i * 7, box.y + 60);
      await page.waitForTimeout(40);
      out.push(await drawMs());
    }
    return out;
  };
  const report = async (phase) => {
    const ms = await frames(8);
    const lodState = await page.evaluate((r) => document.querySelector(r)?.dataset.lod ?? null, root);
    const modes = lodState === null ? 'all rows' : Object.entries(JSON.parse(lodState).tables).map(([t, v]) => `${t}:${v.mode}(${v.rows})`).join(' ');
    console.log(`${phase}\tmax ${Math.max(...ms).toFixed(1)} ms\tmedian ${ms.sort((a, c) => a - c)[ms.length >> 1].toFixed(1)} ms\tdrawn ${await canvas.getAttribute('data-drawn')}\t${modes}`);
  };
  console.log(`input ${dir}\topened in ${openS.toFixed(1)} s${lod === null ? '' : ` (lod=${lod})`}`);
  await canvas.focus();
  await report('fitted');
  for (let z = 1; z <= 4; z++) {
    for (let k = 0; k < 6; k++) await page.keyboard.press('w');
    await settle();
    await report(`zoom ${(1.25 ** (6 * z)).toFixed(0)}x`);
  }
  for (let k = 0; k < 3; k++) await page.keyboard.press('d');
  await settle();
  await report('panned');
  await cdp.send('HeapProfiler.collectGarbage');
  const heap = await page.evaluate(() => performance.memory?.usedJSHeapSize ?? 0);
  const status = await page.locator('[data-testid=progress], .status').allInnerTexts().catch(() => []);
  console.log(`js_heap_bytes\t${heap}\t(${(heap / 2 ** 20).toFixed(0)} MiB after GC)`);
  const wasm = await page.evaluate(() => document.body.innerText.match(/wasm memory ([0-9.]+ [KMG]i?B)/)?.[1] ?? '');
  if (wasm) console.log(`wasm_memory\t${wasm}`);
  void status;
} finally {
  await b.close();
  await server.close();
}
