// PyTorch memory snapshots in headless Chromium, two ways:
//  1. the wasm core alone (Session.process_memory in a module worker, the file read as a Blob by
//     slices): seconds, MB/s, rows, wasm memory high-water mark, the reader's peak retained values;
//  2. the whole page: pick the folder, wait until the Memory view is drawn (core + Arrow columns +
//     the view's model): seconds and the page's JS heap.
//
// usage: node scripts/bench-memsnap.mjs DIR [DIR...]   (each DIR holds memory_snapshot_rank<N>.pickle;
// needs `npm run build`; generate a large one with scripts/make-large-snapshot.py)

import { statSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { launch, requireBuild, serve } from '../tests/browser/harness.mjs';

const dirs = process.argv.slice(2).map((d) => resolve(d));
if (dirs.length === 0) {
  console.error('usage: node scripts/bench-memsnap.mjs DIR [DIR...]');
  process.exit(2);
}
requireBuild();
const server = await serve();
const b = await launch();
try {
  const { page } = b;
  console.log('input\tbytes\tcore_s\tMB/s\tevents\tstacks\tframes_rows\tpeak_values\twasm_memory_bytes\tpage_s\tjs_heap_bytes');
  for (const dir of dirs) {
    let size = 0;
    for (const e of await readdir(dir, { recursive: true })) if (e.endsWith('.pickle')) size += statSync(join(dir, e)).size;
    await page.goto(`${server.origin}/`);
    await page.waitForFunction(() => document.body.dataset.state === 'idle', null, { timeout: 60_000 });
    await page.evaluate(() => {
      const i = document.createElement('input');
      i.type = 'file';
      i.id = 'nscope-bench';
      i.webkitdirectory = true;
      i.multiple = true;
      document.body.append(i);
    });
    await page.setInputFiles('#nscope-bench', dir);
    const r = await page.evaluate(async (origin) => {
      const src = `
        import init, { Session } from '${origin}/pkg/neuronscope.js';
        const wasm = await init();
        self.onmessage = (ev) => {
          try {
            const s = new Session();
            for (const f of ev.data) s.add_file(f.webkitRelativePath || f.name, f);
            const inv = s.scan();
            const snaps = inv.files.filter((f) => f.kind === 'MemorySnapshot');
            const t0 = performance.now();
            let events = 0, stacks = 0, frames = 0, peak = 0;
            for (const f of snaps) {
              const res = s.process_memory(f.path);
              events += res.report.events;
              stacks += res.report.stacks;
              frames += res.report.frames;
              peak = Math.max(peak, res.report.peak_values ?? 0);
              if (res.report.problems.length) self.postMessage({ problems: res.report.problems });
              s.release(res.key);
            }
            self.postMessage({ ms: performance.now() - t0, events, stacks, frames, peak, memory: wasm.memory.buffer.byteLength });
          } catch (e) {
            self.postMessage({ error: String(e) });
          }
        };
        self.postMessage({ ready: true });`;
      const url = URL.createObjectURL(new Blob([src], { type: 'text/javascript' }));
      const w = new Worker(url, { type: 'module' });
      const files = Array.from(document.querySelector('#nscope-bench').files);
      return await new Promise((ok) => {
        w.onmessage = (ev) => {
          if (ev.data.ready) w.postMessage(files);
          else if (ev.data.problems) console.log('problems', JSON.stringify(ev.data.problems));
          else {
            ok(ev.data);
            w.terminate();
          }
        };
        w.onerror = (e) => ok({ error: e.message });
      });
    }, server.origin);
    if (r.error) throw new Error(`${dir}: ${r.error}`);
    // The page path.
    const t0 = Date.now();
    await page.setInputFiles('[data-testid=folder-input]', dir);
    await page.waitForFunction(() => document.body.classList.contains('has-memory') && ['ready', 'error'].includes(document.body.dataset.state ?? ''), null, { timeout: 1_800_000, polling: 500 });
    const pageS = (Date.now() - t0) / 1000;
    const state = await page.evaluate(() => document.body.dataset.state);
    if (state !== 'ready') throw new Error(`${dir}: page ended in ${state}: ${await page.locator('[data-testid=error]').innerText()}`);
    const heap = await page.evaluate(() => performance.memory?.usedJSHeapSize ?? 0);
    const s = r.ms / 1000;
    console.log(`${dir}\t${size}\t${s.toFixed(2)}\t${(size / 1e6 / s).toFixed(1)}\t${r.events}\t${r.stacks}\t${r.frames}\t${r.peak}\t${r.memory}\t${pageS.toFixed(1)}\t${heap}`);
  }
} finally {
  await b.close();
  await server.close();
}
