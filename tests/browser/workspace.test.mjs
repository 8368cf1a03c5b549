// The workspace as a user drives it (issue "a workspace, not a long document"): views as tabs, the
// plain wheel scrolls the track list over the canvas, Ctrl+wheel and W/S zoom, A/D pan stays on the
// data, 0 fits the execution, a drag on the time axis selects a range whose Selection totals equal
// the sums of the Parquet rows in it, F fits the selection, Tab reaches every profile, Back
// returns to the previous profile; the Selection's busy % over the whole execution equals the
// Summary's engine active-time percentages. Needs `npm run build` first and ../shared/samples.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { SHOTS, foreignRequests, launch, sample, showView, timelineProbe, waitReady, useServer } from './harness.mjs';

const server = useServer(() => {
  mkdirSync(SHOTS, { recursive: true });
});

const ARTIFACTS = 'allenkchau-trainium-kernel-fusion/profiling/artifacts';

async function open(page, dir) {
  await page.goto(`${server.origin}/`);
  await page.waitForFunction(() => document.body.dataset.state === 'idle', null, { timeout: 30_000 });
  await page.setInputFiles('[data-testid=folder-input]', dir);
  await waitReady(page);
}

/** The timeline's last frame: start, end, ns per px. */
async function view(page) {
  const p = await timelineProbe(page);
  return { start: p.viewStart, end: p.viewEnd, npp: p.nsPerPx };
}

/** Rows of table `name` as downloaded from the Tables view (its Parquet file), `columns` only. */
async function parquetRows(page, name, columns) {
  await showView(page, 'tables');
  await page.selectOption('[data-testid=table-select]', name);
  await page.waitForFunction((n) => {
    const info = document.querySelector('[data-testid=table-info]');
    return document.querySelector('[data-testid=table-select]')?.value === n && info?.dataset.rows !== undefined && info.textContent !== 'loading…';
  }, name);
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=download-parquet]')]);
  const bytes = readFileSync(await dl.path());
  return parquetReadObjects({ file: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength), columns, compressors });
}

/** Length of the union of [s, e) intervals clipped to [lo, hi). */
function unionLen(intervals, lo, hi) {
  const iv = intervals.map(([s, e]) => [Math.max(s, lo), Math.min(e, hi)]).filter(([s, e]) => e > s).sort((a, b) => a[0] - b[0]);
  let sum = 0;
  let cur = null;
  for (const [s, e] of iv) {
    if (cur !== null && s <= cur[1]) cur[1] = Math.max(cur[1], e);
    else {
      if (cur !== null) sum += cur[1] - cur[0];
      cur = [s, e];
    }
  }
  return cur === null ? sum : sum + cur[1] - cur[0];
}

test('fused_bf16_s512 at 1000×800: wheel scrolls, Ctrl+wheel and keys zoom and pan within the data, a drag selection sums the Parquet rows of its range', async () => {
  const b = await launch();
  try {
    const { page } = b;
    await page.setViewportSize({ width: 1000, height: 800 });
    await open(page, sample(`${ARTIFACTS}/fused_bf16_s512`));
    const total = Number(await page.locator('[data-testid=total-time]').getAttribute('data-value'));
    assert.ok(total > 0, 'total time shown');

    // Views are tabs: a device profile offers its own views, not System or Memory.
    const tabs = await page.$$eval('[data-testid=view-tabs] .tab', (bs) => bs.filter((x) => !x.hidden).map((x) => x.dataset.testid));
    assert.deepEqual(tabs, ['tab-summary', 'tab-timeline', 'tab-source', 'tab-tables', 'tab-compare']);
    await showView(page, 'timeline');
    const canvas = page.locator('[data-testid=timeline-canvas]');
    // Clicking the tab hands the keys to the canvas: W zooms at once, without clicking the canvas.
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'timeline-canvas', 'the canvas has the focus after the tab click');
    const before = await view(page);
    await page.keyboard.press('w');
    await page.waitForFunction((n) => window.__neuronscope.timeline('timeline-canvas').nsPerPx < n, before.npp);
    await page.keyboard.press('0');
    // Expand a DMA group so the tracks are taller than the window.
    const { rows } = await timelineProbe(page);
    const header = rows.find((r) => r.kind === 'dma' && r.header && r.collapsed);
    let box = await canvas.boundingBox();
    await page.mouse.click(box.x + 30, box.y + header.top + header.height / 2);
    await page.waitForFunction((l) => window.__neuronscope.timeline('timeline-canvas').rows.some((r) => r.label === l && !r.collapsed), header.label);
    const scroller = await canvas.evaluate((c) => ({ h: c.parentElement.scrollHeight, v: c.parentElement.clientHeight }));
    assert.ok(scroller.h > scroller.v, `tracks (${scroller.h} px) taller than their pane (${scroller.v} px)`);

    // The plain wheel over the canvas scrolls the tracks and leaves the zoom alone; the axis stays pinned.
    const v0 = await view(page);
    box = await canvas.boundingBox();
    await page.mouse.move(box.x + box.width * 0.6, box.y + 120);
    await page.mouse.wheel(0, 300);
    await page.waitForFunction(() => document.querySelector('[data-testid=timeline-canvas]').parentElement.scrollTop > 0);
    assert.equal((await view(page)).npp, v0.npp, 'wheel did not zoom');
    const axis = await page.locator('[data-testid=timeline-canvas-axis]').boundingBox();
    const wrap = await canvas.evaluate((c) => c.parentElement.getBoundingClientRect().top);
    assert.ok(Math.abs(axis.y - wrap) < 2, `the time axis stays at the top of the scrolled pane (${axis.y} vs ${wrap})`);
    await canvas.evaluate((c) => { c.parentElement.scrollTop = 0; });

    // Ctrl+wheel zooms around the cursor.
    box = await canvas.boundingBox();
    await page.mouse.move(box.x + box.width * 0.6, box.y + 120);
    await page.keyboard.down('Control');
    for (let i = 0; i < 4; i++) await page.mouse.wheel(0, -240);
    await page.keyboard.up('Control');
    await page.waitForFunction((n) => window.__neuronscope.timeline('timeline-canvas').nsPerPx < n, v0.npp);
    assert.ok((await view(page)).npp < v0.npp / 2, 'Ctrl+wheel zoomed in');

    // A pans left, at most to the data's edge (+2 %); D the other way; S zooms out no wider than the data.
    await canvas.focus();
    for (let i = 0; i < 60; i++) await page.keyboard.press('a');
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const left = await view(page);
    // The data's extent: every row drawn (a throttle record may run past the execution).
    const { dataStart: dataLo, dataEnd: dataHi } = await timelineProbe(page);
    const span = dataHi - dataLo;
    assert.ok(dataLo <= 0 && dataHi >= total, `data ${dataLo}..${dataHi} covers the execution`);
    assert.ok(Math.abs(left.start - (dataLo - 0.02 * span)) < 1e-6 * span + 1e-6, `A stops 2 % before the data (view starts at ${left.start} ns, data at ${dataLo})`);
    for (let i = 0; i < 80; i++) await page.keyboard.press('d');
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const right = await view(page);
    assert.ok(Math.abs(right.end - (dataHi + 0.02 * span)) < 1e-6 * span + 1e-6, `D stops 2 % after the data (view ends at ${right.end} ns, data at ${dataHi})`);
    for (let i = 0; i < 40; i++) await page.keyboard.press('s');
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const wide = await view(page);
    assert.ok(wide.end - wide.start <= 1.04 * span * (1 + 1e-9), `S zooms out no wider than the data and its margins (${wide.end - wide.start} ns of ${span})`);
    // 0 fits the execution window [0, total time] (with Fit's 1 % margin), not stray events.
    await page.keyboard.press('0');
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const fit = await view(page);
    assert.ok(Math.abs(fit.start + 0.01 * total) < 0.002 * total + 1 && Math.abs(fit.end - 1.01 * total) < 0.002 * total + 1, `Fit = execution ${fit.start}..${fit.end} for total ${total}`);

    // Drag on the time axis: a range selection, summarised in the Selection tab.
    const ax = await page.locator('[data-testid=timeline-canvas-axis]').boundingBox();
    const gutter = Number(await canvas.getAttribute('data-gutter'));
    const plotW = ax.width - gutter;
    await page.mouse.move(ax.x + gutter + plotW * 0.25, ax.y + 12);
    await page.mouse.down();
    await page.mouse.move(ax.x + gutter + plotW * 0.55, ax.y + 12, { steps: 6 });
    await page.mouse.up();
    const sel = page.locator('[data-testid=selection-summary]');
    await page.waitForSelector('[data-testid=selection-engines]');
    assert.equal(await page.evaluate(() => document.body.dataset.panel), 'selection', 'the Selection tab opens');
    const s = Number(await sel.getAttribute('data-start'));
    const e = Number(await sel.getAttribute('data-end'));
    assert.ok(e - s > 0.2 * total && e - s < 0.4 * total, `selected ${s}..${e}`);
    const engineRows = await page.$$eval('[data-testid=selection-engines] tr[data-engine]', (trs) => trs.map((t) => ({ engine: t.dataset.engine, pcore: t.dataset.pcore, busy: Number(t.dataset.busyNs), fraction: Number(t.dataset.fraction) })));
    const opRows = await page.$$eval('[data-testid=selection-opcodes] tr[data-opcode]', (trs) => trs.map((t) => ({ opcode: t.dataset.opcode, engine: t.dataset.engine, time: Number(t.dataset.timeNs), count: Number(t.dataset.count) })));
    const queueRows = await page.$$eval('[data-testid=selection-dma] tr[data-queue]', (trs) => trs.map((t) => ({ queue: t.dataset.queue, pcore: Number(t.dataset.pcore), bytes: Number(t.dataset.bytes), packets: Number(t.dataset.packets) })));
    assert.match(await page.evaluate(() => location.hash), new RegExp(`range=${s},${e}`), 'the range is in the URL');
    await page.screenshot({ path: join(SHOTS, 'workspace-selection.png') });

    // F fits the selection.
    await canvas.focus();
    await page.keyboard.press('f');
    // The view redraws on the next animation frame.
    await page.waitForFunction((w) => window.__neuronscope.timeline('timeline-canvas').viewEnd - window.__neuronscope.timeline('timeline-canvas').viewStart < w, 2 * (e - s)).catch(() => {});
    const fs = await view(page);
    assert.ok(Math.abs(fs.start - (s - 0.02 * (e - s))) < 0.005 * (e - s) + 1 && Math.abs(fs.end - (e + 0.02 * (e - s))) < 0.005 * (e - s) + 1, `F shows the selection (${fs.start}..${fs.end})`);

    // The same numbers from the Parquet rows of the range (start in [s, e); busy = clipped union
    // per core and engine without EVENT_SEMAPHORE).
    const ins = (await parquetRows(page, 'Instruction', ['start_ts', 'end_ts', 'engine', 'pcore_idx', 'opcode'])).map((r) => ({ ...r, start_ts: Number(r.start_ts), end_ts: Number(r.end_ts), pcore_idx: Number(r.pcore_idx) }));
    const inRange = ins.filter((r) => r.start_ts >= s && r.start_ts < e);
    assert.equal(Number(await sel.getAttribute('data-instructions')), inRange.length, 'instructions starting in the range = Parquet rows');
    for (const row of engineRows.filter((r) => r.pcore !== 'all')) {
      const iv = ins.filter((r) => r.engine === row.engine && r.pcore_idx === Number(row.pcore) && r.opcode !== 'EVENT_SEMAPHORE').map((r) => [r.start_ts, r.end_ts]);
      assert.equal(row.busy, unionLen(iv, s, e), `busy ${row.pcore} ${row.engine} = union of its Parquet rows in the range`);
    }
    for (const op of opRows) {
      const rs = inRange.filter((r) => (r.opcode ?? '') === op.opcode && r.engine === op.engine);
      assert.equal(op.count, rs.length, `${op.engine} ${op.opcode}: count`);
      assert.equal(op.time, rs.reduce((a, r) => a + r.end_ts - r.start_ts, 0), `${op.engine} ${op.opcode}: summed duration`);
    }
    const opTime = new Map();
    for (const r of inRange) opTime.set(`${r.engine}/${r.opcode}`, (opTime.get(`${r.engine}/${r.opcode}`) ?? 0) + r.end_ts - r.start_ts);
    const longest = Math.max(...opTime.values());
    assert.equal(opRows[0].time, longest, 'the longest opcode\'s time = its Parquet rows\' summed duration');
    const dma = (await parquetRows(page, 'DmaPacket', ['start_ts', 'pcore_idx', 'queue_name', 'transfer_bytes'])).filter((r) => Number(r.start_ts) >= s && Number(r.start_ts) < e);
    assert.equal(Number(await sel.getAttribute('data-dma-packets')), dma.length, 'DMA packets in the range = Parquet rows');
    assert.equal(Number(await sel.getAttribute('data-dma-bytes')), dma.reduce((a, r) => a + Number(r.transfer_bytes ?? 0), 0), 'DMA bytes = Σ transfer_bytes');
    for (const q of queueRows) {
      const rs = dma.filter((r) => r.queue_name === q.queue && Number(r.pcore_idx) === q.pcore);
      assert.equal(q.bytes, rs.reduce((a, r) => a + Number(r.transfer_bytes ?? 0), 0), `${q.queue}: bytes`);
      assert.equal(q.packets, rs.length, `${q.queue}: packets`);
    }
    assert.deepEqual(foreignRequests(b.requests, server.origin), [], 'no request left 127.0.0.1');
    assert.deepEqual(b.errors, [], 'no uncaught page errors');
  } finally {
    await b.close();
  }
});

test('every allenkchau capture: the Selection over the whole execution gives the Summary\'s engine active-time percentages', async () => {
  const names = ['baseline_bf16_s1024', 'baseline_bf16_s512', 'baseline_fp32_s512', 'fused_bf16_s512', 'fused_fp32_s1024', 'fused_fp32_s512'];
  const b = await launch();
  try {
    const { page } = b;
    for (const name of names) {
      await open(page, sample(`${ARTIFACTS}/${name}`));
      const total = Number(await page.locator('[data-testid=total-time]').getAttribute('data-value'));
      await page.waitForSelector('[data-testid=summary-group]', { state: 'attached' });
      // The range through the URL, as Back/Forward or a shared link would set it.
      const hash = await page.evaluate(() => location.hash);
      await page.evaluate(([h, t]) => { location.hash = `${h.replace(/&range=[^&]*/, '')}&range=0,${Math.ceil(t)}`; }, [hash, total]);
      await page.waitForFunction((t) => Number(document.querySelector('[data-testid=selection-summary]')?.dataset.end) === Math.ceil(t) && document.querySelector('[data-testid=selection-engines]') !== null, total);
      const cores = await page.$$eval('[data-testid=selection-engines] tr[data-engine]', (trs) => new Set(trs.map((t) => t.dataset.pcore)).size);
      const rows = await page.$$eval('[data-testid=selection-engines] tr[data-engine]', (trs) => trs.map((t) => ({ engine: t.dataset.engine, pcore: t.dataset.pcore, busy: Number(t.dataset.busyNs), instructions: Number(t.querySelector('td:last-child')?.textContent.replace(/[^\d]/g, '') ?? 0) })));
      for (const engine of ['tensor', 'vector', 'scalar', 'gpsimd', 'sync']) {
        // The Summary unions every core's streams: the "all cores" line (the only line with one core).
        const row = rows.find((r) => r.engine === engine && (r.pcore === 'all' || cores === 1));
        const field = page.locator(`[data-testid=summary-groups] tr[data-field=${engine}_engine_active_time_percent] td[data-value]`);
        if ((await field.count()) === 0) continue;
        const summary = Number(await field.getAttribute('data-value'));
        const ours = (row?.busy ?? 0) / total;
        // Table times are whole ns (each end floored on its own), the Summary's whole ps: each
        // interval's length differs by less than 1 ns, so the totals by less than 1 ns per instruction.
        const diffNs = Math.abs(ours - summary) * total;
        assert.ok(diffNs <= (row?.instructions ?? 0), `${name} ${engine}: Selection ${ours} vs Summary ${summary} (${diffNs.toFixed(1)} ns apart over ${row?.instructions} instructions)`);
      }
    }
    assert.deepEqual(b.errors, [], 'no uncaught page errors');
  } finally {
    await b.close();
  }
});

test('the artifacts folder: Tab reaches every profile, Enter opens it, Back returns to the previous one', async () => {
  const b = await launch();
  try {
    const { page } = b;
    await open(page, sample(ARTIFACTS));
    const devices = await page.$$eval('[data-testid=device][tabindex]', (ds) => ds.map((d) => d.title));
    assert.equal(devices.length, 6, 'six openable devices listed');
    const reached = new Set();
    for (let i = 0; i < 40 && reached.size < devices.length; i++) {
      await page.keyboard.press('Tab');
      const t = await page.evaluate(() => (document.activeElement?.matches('[data-testid=device]') ? document.activeElement.title : null));
      if (t !== null) reached.add(t);
    }
    assert.equal(reached.size, devices.length, 'Tab reached every device entry');
    const focusRing = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
    assert.notEqual(focusRing, 'none', 'the focused entry shows a focus ring');
    const first = await page.evaluate(() => location.hash);
    await page.keyboard.press('Enter');
    await page.waitForFunction((h) => location.hash !== h && document.body.dataset.state === 'ready', first);
    const second = await page.evaluate(() => location.hash);
    assert.match(second, /^#device=/);
    await page.goBack();
    await page.waitForFunction((h) => location.hash === h && document.body.dataset.state === 'ready' && document.querySelector('[data-testid=device].selected') !== null, first);
    await waitReady(page);
    assert.equal(await page.$eval('[data-testid=device].selected', (d) => d.title), devices[0], 'Back shows the first profile again');
    assert.deepEqual(b.errors, [], 'no uncaught page errors');
  } finally {
    await b.close();
  }
});
