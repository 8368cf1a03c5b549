// Timeline frame times and page memory on a large capture, in headless Chromium: picks DIR in the
// built page (www/dist), waits for the device timeline (or, with --system, the System timeline),
// then draws it fitted, zoomed in step by step (W key, each zoom waiting for the window's data)
// and panned, and prints per phase the frame draw times (the view's probe drawMs, ms), how each table
// was drawn (summaries or the window's rows; views/tracks/lod.ts), and after a forced GC the
// page's JS heap.
//
// Main-thread responsiveness (issue 10: "no main-thread task > 200 ms while decoding"): a
// PerformanceObserver('longtask'), installed before the page's own scripts, records every task of
// the page's main thread over 50 ms; the script prints, for "open" (pick → timeline drawn) and
// "navigate" (the zooms and pans), the longest task and how many exceeded 50 and 200 ms, and what
// the tasks were attributed to. Beside them: CPU seconds of the browser's processes (/proc, all
// of Chromium's processes under this script) and of the page's main thread (CDP
// Performance.getMetrics TaskDuration), and the load average, since wall time on a shared machine
// is noisy.
//
//   node scripts/bench-lod.mjs DIR [--system] [--lod 0|1] [--profile] [--query URL-PARAMS]
//
// `--query 'split=off'` (or `workers=1`) measures the one-worker decode beside the default split.
//
// `--profile` samples the page's main thread (CDP Profiler) and prints the functions with the most
// self time, for open and navigate, to find what a long task runs. `--lod 0` forces the old path (every row of the drawn columns on the main thread) for the
// before figure; `--lod 1` forces the level-of-detail path on a small capture.

import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { launch, serve } from '../tests/browser/harness.mjs';

/** CPU seconds (user + system) of every live process descended from this one (Linux /proc). */
function childCpuSeconds() {
  const tick = 100; // USER_HZ on Linux
  const procs = new Map();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const st = readFileSync(`/proc/${d}/stat`, 'utf8');
      // Fields after the command name (which may hold spaces) in parentheses.
      const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
      procs.set(Number(d), { ppid: Number(f[1]), cpu: (Number(f[11]) + Number(f[12])) / tick });
    } catch { /* gone meanwhile */ }
  }
  const mine = new Set([process.pid]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const [pid, p] of procs) if (!mine.has(pid) && mine.has(p.ppid)) { mine.add(pid); grew = true; }
  }
  let sum = 0;
  for (const pid of mine) if (pid !== process.pid) sum += procs.get(pid)?.cpu ?? 0;
  return sum;
}

const args = process.argv.slice(2);
const qi = args.indexOf('--query');
/** Extra page URL parameters (`--query 'split=off&workers=1'`). */
const query = qi >= 0 ? args[qi + 1] ?? '' : '';
const dir = args.find((a, i) => !a.startsWith('--') && !/^[01]$/.test(a) && !(qi >= 0 && i === qi + 1));
const system = args.includes('--system');
const profile = args.includes('--profile');
const li = args.indexOf('--lod');
const lod = li >= 0 ? args[li + 1] : null;
if (!dir) {
  console.error('usage: node scripts/bench-lod.mjs DIR [--system] [--lod 0|1] [--query URL-PARAMS]');
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
  await cdp.send('Performance.enable');
  if (profile) {
    await cdp.send('Profiler.enable');
    await cdp.send('Profiler.setSamplingInterval', { interval: 1000 });
  }
  /** Stops the sampling profiler and prints the 12 functions with the most self time. */
  const topSelf = async (phase) => {
    if (!profile) return;
    const { profile: prof } = await cdp.send('Profiler.stop');
    const byId = new Map(prof.nodes.map((n) => [n.id, n]));
    const self = new Map();
    const dt = prof.timeDeltas;
    prof.samples.forEach((id, i) => {
      const n = byId.get(id);
      const f = n.callFrame;
      const key = `${f.functionName || '(anon)'} ${f.url.split('/').pop()}:${f.lineNumber + 1}`;
      self.set(key, (self.get(key) ?? 0) + (dt[i] ?? 0) / 1000);
    });
    const top = [...self].filter(([k]) => !k.startsWith('(idle)') && !k.startsWith('(program)')).sort((a, b) => b[1] - a[1]).slice(0, 12);
    // Native work outside JS (style, layout, paint, message dispatch) shows as (program).
    const native = [...self].filter(([k]) => k.startsWith('(program)')).reduce((a, [, v]) => a + v, 0);
    console.log(`${phase} self time (ms): (program) ${native.toFixed(0)} | ${top.map(([k, v]) => `${k} ${v.toFixed(0)}`).join(' | ')}`);
    // Busy stretches (samples with no idle sample between them) over 150 ms: what a long task ran,
    // by the functions on its stacks (inclusive time).
    const parent = new Map();
    for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    let run = [];
    let runMs = 0;
    const flush = () => {
      if (runMs > 150) {
        const incl = new Map();
        for (const [id, d] of run) {
          const seen = new Set();
          for (let x = id; x !== undefined; x = parent.get(x)) {
            const f = byId.get(x).callFrame;
            const key = `${f.functionName || '(anon)'}:${f.lineNumber + 1}`;
            if (f.url === '' || seen.has(key)) continue;
            seen.add(key);
            incl.set(key, (incl.get(key) ?? 0) + d);
          }
        }
        const list = [...incl].sort((a, b) => b[1] - a[1]).slice(0, 10);
        console.log(`${phase} busy ${runMs.toFixed(0)} ms: ${list.map(([k, v]) => `${k} ${v.toFixed(0)}`).join(' | ')}`);
      }
      run = [];
      runMs = 0;
    };
    prof.samples.forEach((id, i) => {
      const name = byId.get(id).callFrame.functionName;
      const d = (dt[i + 1] ?? 0) / 1000;
      if (name === '(idle)') flush();
      else {
        run.push([id, d]);
        runMs += d;
      }
    });
    flush();
  };
  // Long tasks of the page's main thread from the first script on (attribution: what ran).
  await page.addInitScript(() => {
    const w = /** @type {any} */ (window);
    w.__longtasks = [];
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) w.__longtasks.push({ start: e.startTime, ms: e.duration, by: e.attribution?.[0]?.containerType ?? e.name });
    }).observe({ type: 'longtask', buffered: true });
    // Long animation frames name the scripts a long frame ran (function, how it was invoked) and
    // its style-and-layout time: what a longtask entry cannot attribute.
    w.__loafs = [];
    try {
      new PerformanceObserver((list) => {
        for (const e of list.getEntries()) {
          const x = /** @type {any} */ (e);
          const layout = x.renderStart > 0 ? x.startTime + x.duration - (x.styleAndLayoutStart || x.renderStart) : 0;
          w.__loafs.push({
            start: x.startTime, ms: x.duration, blocking: x.blockingDuration, layout,
            scripts: (x.scripts ?? []).map((sc) => ({ fn: sc.sourceFunctionName || sc.invoker || '?', by: sc.invokerType, ms: sc.duration, forced: sc.forcedStyleAndLayoutDuration })),
          });
        }
      }).observe({ type: 'long-animation-frame', buffered: true });
    } catch { /* no LoAF in this browser */ }
    // The page's own spans (performance.measure in main.ts: the Summary's render steps).
    w.__measures = [];
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) w.__measures.push({ name: e.name, start: e.startTime, ms: e.duration });
    }).observe({ type: 'measure', buffered: true });
  });
  const mainCpu = async () => {
    const { metrics } = await cdp.send('Performance.getMetrics');
    return metrics.find((m) => m.name === 'TaskDuration')?.value ?? NaN;
  };
  /** Long tasks since page time `from` (ms), summarised. */
  const longTasks = async (from, to = Infinity) => {
    const all = await page.evaluate(() => /** @type {any} */ (window).__longtasks);
    const xs = all.filter((t) => t.start >= from && t.start < to);
    const max = xs.reduce((a, t) => Math.max(a, t.ms), 0);
    return { n: xs.length, over200: xs.filter((t) => t.ms > 200).length, max, top: xs.sort((a, b) => b.ms - a.ms).slice(0, 5) };
  };
  /** The longest animation frames since page time `from`, with the scripts they ran (LoAF). */
  const longFrames = async (from, to = Infinity) => {
    const all = await page.evaluate(() => /** @type {any} */ (window).__loafs ?? []);
    return all.filter((f) => f.start >= from && f.start < to).sort((a, b) => b.ms - a.ms).slice(0, 3);
  };
  const fmtFrames = (fs) => fs.map((f) => `${f.ms.toFixed(0)} ms (layout ${f.layout.toFixed(0)}): ${f.scripts.sort((a, b) => b.ms - a.ms).slice(0, 3).map((sc) => `${sc.fn}[${sc.by}] ${sc.ms.toFixed(0)}${sc.forced > 1 ? ` forced layout ${sc.forced.toFixed(0)}` : ''}`).join(', ') || 'no script'}`).join(' | ') || '-';
  /** The page's performance.measure spans since `from`, longest per name. */
  const measures = async (from, to = Infinity) => {
    const all = await page.evaluate(() => /** @type {any} */ (window).__measures ?? []);
    const by = new Map();
    for (const m of all) if (m.start >= from && m.start < to) by.set(m.name, Math.max(by.get(m.name) ?? 0, m.ms));
    return [...by].map(([n, ms]) => `${n} ${ms.toFixed(1)} ms`).join(', ') || '-';
  };
  const pageNow = () => page.evaluate(() => performance.now());
  const params = [lod === null ? '' : `lod=${lod}`, query].filter((x) => x !== '').join('&');
  await page.goto(`${server.origin}/${params === '' ? '' : `?${params}`}`);
  await page.waitForFunction(() => document.body.dataset.state === 'idle', null, { timeout: 30_000 });
  const cpu0 = childCpuSeconds();
  const main0 = await mainCpu();
  const pt0 = await pageNow();
  if (profile) await cdp.send('Profiler.start');
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
  // "Drawn": the canvas reports a frame with marks on it.
  await page.waitForFunction((id) => (window.__neuronscope?.timeline?.(id)?.drawn ?? 0) > 0, testid, { timeout: 60_000 }).catch(() => {});
  const drawnS = (Date.now() - t0) / 1000;
  const pt1 = await pageNow();
  const cpu1 = childCpuSeconds();
  const main1 = await mainCpu();
  const openTasks = await longTasks(pt0, pt1);
  await topSelf('open');
  const settle = async () => {
    // Two frames, then wait for pending window data (data-lod changes) up to 20 s.
    const before = await page.evaluate((r) => document.querySelector(r)?.dataset.lod ?? '', root);
    await page.waitForTimeout(150);
    await page.waitForFunction(([r, b]) => (document.querySelector(r)?.dataset.lod ?? '') !== b, [root, before], { timeout: 20_000 }).catch(() => {});
    await page.waitForTimeout(100);
  };
  const probe = () => page.evaluate((id) => window.__neuronscope.timeline(id), testid);
  const drawMs = async () => (await probe()).drawMs;
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
    console.log(`${phase}\tmax ${Math.max(...ms).toFixed(1)} ms\tmedian ${ms.sort((a, c) => a - c)[ms.length >> 1].toFixed(1)} ms\tdrawn ${(await probe()).drawn}\t${modes}`);
  };
  const fmtTasks = (t) => `longest task ${t.max.toFixed(0)} ms\t${t.n} over 50 ms\t${t.over200} over 200 ms\ttop ${t.top.map((x) => x.ms.toFixed(0)).join(',') || '-'}`;
  console.log(`input ${dir}\topened in ${openS.toFixed(1)} s, timeline drawn at ${drawnS.toFixed(1)} s${lod === null ? '' : ` (lod=${lod})`}`);
  console.log(`open\t${fmtTasks(openTasks)}\tcpu browser ${(cpu1 - cpu0).toFixed(1)} s, page main thread ${(main1 - main0).toFixed(1)} s\tload ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  console.log(`open\tlongest frames ${fmtFrames(await longFrames(pt0, pt1))}`);
  console.log(`open\tpage spans (longest): ${await measures(pt0, pt1)}`);
  // Where the split decode sat in the pick → drawn span (the rest is scan, NEFF, store set-up, first draw).
  const split = await page.evaluate(() => performance.getEntriesByType('measure').filter((m) => m.name.startsWith('split: ')).map((m) => [m.startTime, m.startTime + m.duration]));
  if (split.length > 0) {
    const a = Math.min(...split.map((x) => x[0])) - pt0;
    const b = Math.max(...split.map((x) => x[1])) - pt0;
    console.log(`open\tsplit decode from ${(a / 1000).toFixed(1)} s to ${(b / 1000).toFixed(1)} s after the pick`);
  }
  await canvas.focus();
  const pt2 = await pageNow();
  const cpu2 = childCpuSeconds();
  const main2 = await mainCpu();
  if (profile) await cdp.send('Profiler.start');
  await report('fitted');
  for (let z = 1; z <= 4; z++) {
    for (let k = 0; k < 6; k++) await page.keyboard.press('w');
    await settle();
    await report(`zoom ${(1.25 ** (6 * z)).toFixed(0)}x`);
  }
  for (let k = 0; k < 3; k++) await page.keyboard.press('d');
  await settle();
  await report('panned');
  const navTasks = await longTasks(pt2);
  await topSelf('navigate');
  console.log(`navigate\t${fmtTasks(navTasks)}\tcpu browser ${(childCpuSeconds() - cpu2).toFixed(1)} s, page main thread ${((await mainCpu()) - main2).toFixed(1)} s\tload ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  console.log(`navigate\tlongest frames ${fmtFrames(await longFrames(pt2))}`);
  console.log(`navigate\tpage spans (longest): ${await measures(pt2)}`);
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
