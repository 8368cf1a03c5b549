// Benchmark of the device timeline with many DMA packets, in headless Chromium: builds a synthetic
// DmaPacket table (N packets over 64 queues on 2 physical cores), the timeline model
// (views/device-rows.ts), then draws it (views/timeline.ts) fitted, expanded and zoomed, and prints
// the model build time and per phase the median and largest of REPEAT frame draw times (ms, the
// view's own measure of its draw: window.__neuronscope.timeline(id).drawMs).
//
//   node scripts/bench-timeline.mjs [N=2000000] [REPEAT=15]
//
// Needs the npm dev dependencies (esbuild, playwright-core) and /usr/bin/chromium (or CHROMIUM_PATH).

import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';
import { launch } from '../tests/browser/harness.mjs';

const N = Number(process.argv[2] ?? 2_000_000);
const REPEAT = Number(process.argv[3] ?? 15);
const src = fileURLToPath(new URL('../www/src/', import.meta.url));

const entry = `
import { tableFromArrays } from 'apache-arrow';
import { addDeviceRows } from './views/device-rows.ts';
import { buildTimeline } from './views/timeline-model.ts';
import { TimelineView } from './views/timeline.ts';

const frame = () => new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(ok)));

window.bench = async (N, REPEAT) => {
  const Q = 64;
  const start = new BigInt64Array(N), end = new BigInt64Array(N), pcore = new BigInt64Array(N), bytes = new BigInt64Array(N);
  const names = new Array(N), types = new Array(N);
  for (let i = 0; i < N; i++) {
    const q = i % Q;
    const t = Math.floor(i / Q) * 50 + q;
    start[i] = BigInt(t);
    end[i] = BigInt(t + 40 + (i % 7));
    pcore[i] = BigInt(q % 2);
    names[i] = 'Q' + (q >> 4) + '-E' + (64 + (q & 15));
    types[i] = q < 32 ? 'software_dynamic' : 'hardware_dynamic';
    bytes[i] = 4096n;
  }
  const dma = tableFromArrays({ start_ts: start, end_ts: end, pcore_idx: pcore, queue_name: names, queue_type: types, transfer_bytes: bytes });
  const instr = tableFromArrays({ start_ts: new BigInt64Array([0n]), end_ts: new BigInt64Array([10n]), engine: ['tensor'], pcore_idx: new BigInt64Array([0n]) });
  const t0 = performance.now();
  const model = addDeviceRows(buildTimeline(instr), { dma, semaphores: null, throttle: null, pending: null });
  const buildMs = performance.now() - t0;
  const view = new TimelineView({ gutter: 190 });
  view.root.style.width = '1400px';
  document.body.append(view.root);
  view.setModel(model);
  const canvas = view.root.querySelector('canvas');
  const probe = () => window.__neuronscope.timeline('timeline-canvas');
  const drawMs = () => Math.round(probe().drawMs * 100) / 100;
  const drawn = () => probe().drawn;
  const out = { packets: N, rows: model.tracks.length, buildMs: Math.round(buildMs), frames: {} };
  // The same view redrawn REPEAT times (a viewport set to itself requests one frame).
  const phase = async (name) => {
    const ms = [];
    for (let i = 0; i < REPEAT; i++) {
      const v = view.viewport();
      view.setViewport(v.start, v.nsPerPx);
      await frame();
      ms.push(drawMs());
    }
    ms.sort((a, b) => a - b);
    out.frames[name] = { median: ms[ms.length >> 1], max: ms[ms.length - 1] };
  };
  await frame();
  await phase('fit');
  for (const t of model.tracks) if (t.header !== undefined) view.toggleGroup(t.header, false);
  await frame();
  await phase('expanded');
  canvas.focus();
  for (let i = 0; i < 12; i++) canvas.dispatchEvent(new KeyboardEvent('keydown', { key: 'w', bubbles: true }));
  await frame();
  await phase('zoomed');
  out.drawn = drawn();
  return out;
};
`;

const bundle = await build({
  stdin: { contents: entry, resolveDir: src, loader: 'ts', sourcefile: 'bench-entry.ts' },
  bundle: true, format: 'iife', platform: 'browser', write: false, logLevel: 'warning',
});
const b = await launch();
try {
  const { page } = b;
  await page.setContent('<!doctype html><html><body style="margin:0"></body></html>');
  await page.addScriptTag({ content: bundle.outputFiles[0].text });
  const r = await page.evaluate((n) => window.bench(...n), [N, REPEAT]);
  console.log(JSON.stringify(r));
  if (b.errors.length > 0) console.error(b.errors.join('\n'));
} finally {
  await b.close();
}
