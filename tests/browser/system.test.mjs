// System profile end to end: pick the KevGomes capture directory (System+Device), open its system
// trace, and check the system timeline, the CPU / host-memory rows, the event count against the
// table browser and the Parquet export, and the nc_exec_running → device profile link.
// Needs `npm run build` first and ../shared/samples.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { SHOTS, foreignRequests, launch, requireBuild, revealBand, sample, serve, showView, timelineColouredPixels, timelineProbe, waitReady } from './harness.mjs';

let server;

before(async () => {
  requireBuild();
  mkdirSync(SHOTS, { recursive: true });
  server = await serve();
});

after(async () => {
  await server?.close();
});

async function selectTable(page, name) {
  await showView(page, 'tables');
  await page.selectOption('[data-testid=table-select]', name);
  await page.waitForFunction((n) => {
    const sel = document.querySelector('[data-testid=table-select]');
    const info = document.querySelector('[data-testid=table-info]');
    return sel?.value === n && info?.dataset.rows !== undefined && info.textContent !== 'loading…';
  }, name);
  return Number(await page.locator('[data-testid=table-info]').getAttribute('data-rows'));
}

/** CSS points (relative to the canvas) of coloured pixels in slice row `row`, left to right. */
async function slicePoints(page, testid, row) {
  return page.evaluate(([testid, row]) => {
    const c = document.querySelector(`[data-testid=${testid}]`);
    const dpr = c.width / c.clientWidth;
    const y = Number(c.dataset.axisH) + (row + 0.5) * Number(c.dataset.rowH);
    const ctx = c.getContext('2d');
    const { data, width } = ctx.getImageData(0, Math.floor(y * dpr), c.width, 1);
    const out = [];
    let last = -10;
    for (let x = Math.floor((Number(c.dataset.gutter) + 5) * dpr); x < width; x++) {
      const i = x * 4;
      if (Math.max(data[i], data[i + 1], data[i + 2]) - Math.min(data[i], data[i + 1], data[i + 2]) > 40 && x / dpr - last > 3) {
        out.push({ x: x / dpr + 1, y });
        last = x / dpr;
      }
    }
    return out;
  }, [testid, row]);
}

test('KevGomes capture: system trace opens, timeline + CPU/memory drawn, event count = table rows, nc_exec_running links to the device profile', async () => {
  const dir = sample('KevGomes-nki-moe-megakernel/output/i-0af76a70a6d3864dd_pid_713479');
  const b = await launch();
  try {
    const { page } = b;
    await page.goto(`${server.origin}/`);
    await page.waitForFunction(() => document.body.dataset.state === 'idle', null, { timeout: 30_000 });
    await page.setInputFiles('[data-testid=folder-input]', dir);
    await waitReady(page);

    const profile = page.locator('[data-testid=profile]').first();
    assert.equal(await profile.getAttribute('data-profile-type'), 'System+Device');
    const open = profile.locator('[data-testid=open-system]');
    assert.equal(await open.count(), 1, 'a System+Device profile offers "Open system trace"');
    await open.click();
    await page.waitForFunction(() => document.body.classList.contains('has-system') && document.body.dataset.state === 'ready', null, { timeout: 120_000 });
    await waitReady(page);

    // Event count shown = SystemProfileEvents rows in the table browser = rows of its Parquet export.
    const shown = Number(await page.locator('[data-testid=system-event-count]').getAttribute('data-value'));
    assert.ok(shown > 0, `events shown (${shown}) > 0`);
    assert.equal(await selectTable(page, 'SystemProfileEvents'), shown, 'SystemProfileEvents rows = event count shown');
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=download-parquet]')]);
    assert.match(download.suggestedFilename(), /^[^/]+-system-SystemProfileEvents\.parquet$/, 'named <profile>-<table>.parquet');
    const bytes = readFileSync(await download.path());
    const meta = parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
    assert.equal(Number(meta.num_rows), shown, 'SystemProfileEvents.parquet rows = event count shown');

    // The system timeline drew slices, with runtime thread rows and NeuronCore rows.
    const canvas = page.locator('[data-testid=system-canvas]');
    const probe = await timelineProbe(page, 'system-canvas');
    const drawn = probe.drawn;
    assert.ok(drawn > 0, `system timeline drew ${drawn} slices`);
    const labels = probe.trackLabels;
    assert.ok(labels.some((l) => /^pid \d+ · tid \d+$/.test(l)), `a runtime thread row (${labels.filter(Boolean).join(' | ')})`);
    const ncRows = labels.flatMap((l, i) => (l.startsWith('NeuronCore') ? [i] : []));
    assert.ok(ncRows.length > 0, 'a NeuronCore row');
    const counterTop = probe.counterTop;
    const slicePixels = (await timelineColouredPixels(page, 'system-canvas')) - (await timelineColouredPixels(page, 'system-canvas', counterTop));
    assert.ok(slicePixels > 200, `slice rows coloured (${slicePixels} pixels)`);

    // CPU utilisation and host memory rows drew on the same canvas (same time axis).
    const counters = probe.counterLabels;
    assert.ok(counters.includes('CPU average'), `CPU average row (${counters.join(', ')})`);
    assert.ok(counters.includes('Host memory'), 'host memory row');
    assert.ok(counters.some((c) => /^cpu \d+$/.test(c)), 'per-core CPU rows');
    assert.ok(probe.counterPoints > 0, 'counter samples drawn');
    const counterPixels = await timelineColouredPixels(page, 'system-canvas', counterTop);
    assert.ok(counterPixels > 500, `CPU / memory charts coloured (${counterPixels} pixels)`);

    // Zoom with Ctrl+wheel (the plain wheel scrolls): the counters share the axis, so they redraw at the new scale.
    await showView(page, 'system');
    let box = await canvas.boundingBox();
    const nsPerPx = async () => (await timelineProbe(page, 'system-canvas')).nsPerPx;
    const before = await nsPerPx();
    await page.mouse.move(box.x + box.width * 0.5, box.y + 100);
    await page.keyboard.down('Control');
    for (let i = 0; i < 3; i++) await page.mouse.wheel(0, -240);
    await page.keyboard.up('Control');
    await page.waitForFunction((b) => window.__neuronscope?.timeline?.('system-canvas')?.nsPerPx < b, before);
    const zoomed = await nsPerPx();
    await page.click('[data-testid=system-panel] .timeline-bar button:has-text("Fit")');
    await page.waitForFunction((z) => window.__neuronscope?.timeline?.('system-canvas')?.nsPerPx > z, zoomed);
    const refit = await nsPerPx();
    assert.ok(Math.abs(refit - before) / before < 1e-6, `Fit returns to the first view (${before} vs ${refit} ns/px)`);

    // Hover the NeuronCore row until the tooltip names nc_exec_running, then click it.
    const points = [];
    for (const r of ncRows) points.push(...(await slicePoints(page, 'system-canvas', r)));
    assert.ok(points.length > 0, 'the NeuronCore rows have slices');
    let hit = null;
    for (const p of points) {
      box = await revealBand(page, p.y - 4, 8, 'system-canvas');
      await page.mouse.move(box.x + p.x, box.y + p.y);
      const title = await page.locator('.tooltip:not([hidden]) .tt-title').first().textContent({ timeout: 1000 }).catch(() => null);
      if (title === 'nc_exec_running') {
        hit = p;
        break;
      }
    }
    assert.ok(hit !== null, 'an nc_exec_running slice under the cursor');
    await page.mouse.down();
    await page.mouse.up();
    await page.waitForSelector('[data-testid=system-details] [data-field=name]', { timeout: 10_000 }).catch(async (e) => {
      throw new Error(`${e.message}\npage errors: ${b.errors.join(' | ')}\ndetails: ${await page.locator('[data-testid=system-details]').innerText()}\nat ${JSON.stringify(hit)}`);
    });
    assert.equal(await page.locator('[data-testid=system-details] [data-field=name]').textContent(), 'nc_exec_running');
    const link = page.locator('[data-testid=device-link]');
    await link.waitFor();
    // The sample's NTFF was recorded by another run of the same NEFF (pairing.md §6).
    assert.equal(await link.getAttribute('data-link'), 'other-capture', 'link kind');
    assert.match(await page.locator('[data-testid=device-link-note]').textContent(), /Same NEFF, different capture/);
    await page.screenshot({ path: join(SHOTS, 'kevgomes-system.png'), fullPage: true });

    await page.click('[data-testid=open-linked-device]');
    await page.waitForFunction(() => document.body.classList.contains('has-result') && !document.body.classList.contains('has-system') && document.body.dataset.state === 'ready', null, { timeout: 120_000 });
    await waitReady(page);
    assert.ok(Number(await page.locator('[data-testid=instruction-count]').getAttribute('data-value')) > 0, 'device profile opened');

    // The device timeline shows that execution: visible range = its ExecutionInfo range (read back
    // from the ExecutionInfo Parquet export, not from the view's own attributes).
    await page.waitForFunction(() => document.querySelector('[data-testid=timeline-canvas]')?.dataset.zoomStart !== undefined && (window.__neuronscope?.timeline?.('timeline-canvas')?.viewStart ?? null) !== null);
    const [xdl] = await (async () => {
      await selectTable(page, 'ExecutionInfo');
      return Promise.all([page.waitForEvent('download'), page.click('[data-testid=download-parquet]')]);
    })();
    const xb = readFileSync(await xdl.path());
    const execs = await parquetReadObjects({ file: xb.buffer.slice(xb.byteOffset, xb.byteOffset + xb.byteLength), columns: ['execution_index', 'execution_start_ts', 'execution_end_ts'], compressors });
    const zoomAttr = await page.evaluate(() => document.querySelector('[data-testid=timeline-canvas]')?.closest('.timeline')?.dataset.zoomExecution ?? null);
    assert.ok(zoomAttr !== null, 'the device timeline names the execution it zoomed to');
    const zoomIdx = Number(zoomAttr);
    const ex = execs.find((r) => Number(r.execution_index) === zoomIdx);
    assert.ok(ex !== undefined, `execution ${zoomIdx} is an ExecutionInfo row (${JSON.stringify(execs, (_, v) => (typeof v === 'bigint' ? String(v) : v))})`);
    const { viewStart: vs, viewEnd: ve } = await timelineProbe(page);
    const es = Number(ex.execution_start_ts);
    const ee = Number(ex.execution_end_ts);
    const tol = (ee - es) * 1e-6 + 1;
    assert.ok(Math.abs(vs - es) <= tol && Math.abs(ve - ee) <= tol, `device view ${vs}..${ve} = execution ${zoomIdx} ${es}..${ee}`);
    const coloured = await timelineColouredPixels(page);
    assert.ok(coloured > 500, `device timeline draws instruction slices (${coloured} coloured pixels)`);
    await page.screenshot({ path: join(SHOTS, 'kevgomes-system-to-device.png'), fullPage: true });

    assert.deepEqual(foreignRequests(b.requests, server.origin), [], 'no request left 127.0.0.1');
    assert.deepEqual(b.errors, [], 'no uncaught page errors');
  } finally {
    await b.close();
  }
});

/** A synthetic System capture from our Rust writers (wasm `synth_system_files`), written to a temp dir. */
async function synthCapture(page, origin, kinetoBytes) {
  const files = await page.evaluate(async ([origin, n]) => {
    const mod = await import(`${origin}/pkg/neuronscope.js`);
    await mod.default();
    const out = [];
    for (const f of mod.synth_system_files(n)) {
      let bin = '';
      const b = f.bytes;
      for (let i = 0; i < b.length; i += 0x8000) bin += String.fromCharCode(...b.subarray(i, i + 0x8000));
      out.push({ path: f.path, b64: btoa(bin) });
    }
    return out;
  }, [origin, kinetoBytes]);
  const root = mkdtempSync(join(tmpdir(), 'nscope-sys-'));
  for (const f of files) {
    const p = join(root, f.path);
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, Buffer.from(f.b64, 'base64'));
  }
  return { root, dir: join(root, dirname(files[0].path)), files: files.map((f) => f.path) };
}

test('synthetic capture with a Kineto trace.json: framework rows above the runtime rows, same clock', async () => {
  const b = await launch();
  let tmp = null;
  try {
    const { page } = b;
    await page.goto(`${server.origin}/`);
    await page.waitForFunction(() => document.body.dataset.state === 'idle', null, { timeout: 30_000 });
    const cap = await synthCapture(page, server.origin, 60_000);
    tmp = cap.root;
    assert.ok(cap.files.some((f) => f.endsWith('/trace.json')), `trace.json written (${cap.files.join(', ')})`);
    await page.setInputFiles('[data-testid=folder-input]', cap.dir);
    await waitReady(page);
    const profile = page.locator('[data-testid=profile]').first();
    assert.equal(await profile.getAttribute('data-profile-type'), 'System');
    await profile.locator('[data-testid=open-system]').click();
    await page.waitForFunction(() => document.body.classList.contains('has-system') && document.body.dataset.state === 'ready', null, { timeout: 120_000 });
    await waitReady(page);

    const labels = (await timelineProbe(page, 'system-canvas')).trackLabels;
    const fw = labels.flatMap((l, i) => (l.startsWith('fw ') ? [i] : []));
    const rt = labels.flatMap((l, i) => (/^pid \d+ · tid \d+$/.test(l) ? [i] : []));
    const hw = labels.flatMap((l, i) => (l.startsWith('NeuronCore') ? [i] : []));
    assert.ok(fw.length >= 2, `framework rows for the main and the stream thread (${labels.filter(Boolean).join(' | ')})`);
    assert.ok(labels.includes('fw python main · pid 4242 · tid 4242') && labels.includes('fw neuron stream 7 · pid 4242 · tid 4249'), 'framework rows named by the trace\'s thread_name metadata');
    assert.ok(rt.length > 0 && hw.length > 0, 'runtime and NeuronCore rows');
    assert.ok(Math.max(...fw) < Math.min(...rt), `framework rows (${fw}) above the runtime rows (${rt})`);
    assert.ok(Math.max(...rt) < Math.min(...hw), 'runtime rows above the NeuronCore rows');
    // Nested spans: the main framework thread needs more than one lane (step ⊃ op ⊃ child ⊃ launch).
    const lanes = labels.slice(fw[0] + 1).findIndex((l) => l !== '');
    assert.ok(lanes >= 3, `nested framework spans use ${lanes + 1} lanes`);

    // Same clock: framework and runtime events share the table and its time range.
    assert.equal(await selectTable(page, 'SystemProfileEvents'), Number(await page.locator('[data-testid=system-event-count]').getAttribute('data-value')));
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=download-parquet]')]);
    const bytes = readFileSync(await download.path());
    const rows = await parquetReadObjects({ file: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength), columns: ['name', 'start_ts', 'end_ts', 'trace_event_source'], compressors });
    const steps = rows.filter((r) => r.trace_event_source === 'framework' && /^ProfilerStep#\d+$/.test(r.name)).sort((a, z) => Number(a.start_ts - z.start_ts));
    const execs = rows.filter((r) => r.name === 'nrt_execute').sort((a, z) => Number(a.start_ts - z.start_ts));
    assert.ok(execs.length === 3 && steps.length >= 3, `3 executions (${execs.length}), ≥3 steps (${steps.length})`);
    execs.forEach((x, k) => assert.ok(steps[k].start_ts <= x.start_ts && x.end_ts <= steps[k].end_ts, `ProfilerStep#${k} covers nrt_execute ${k}`));
    const flows = rows.filter((r) => r.trace_event_source === 'framework').length;
    assert.ok(flows > 20, `framework rows (${flows})`);

    // Hover the top framework row: the tooltip names a framework span.
    await showView(page, 'system');
    const pts = await slicePoints(page, 'system-canvas', fw[0]);
    assert.ok(pts.length > 0, 'the framework row has slices');
    const box = await revealBand(page, pts[0].y - 4, 8, 'system-canvas');
    await page.mouse.move(box.x + pts[0].x + 2, box.y + pts[0].y);
    const title = await page.locator('.tooltip:not([hidden]) .tt-title').first().textContent({ timeout: 2000 });
    assert.match(title, /^ProfilerStep#\d+$/, 'outermost framework span = the profiler step');
    await page.screenshot({ path: join(SHOTS, 'synthetic-system-framework.png'), fullPage: true });
    assert.deepEqual(foreignRequests(b.requests, server.origin), [], 'no request left 127.0.0.1');
    assert.deepEqual(b.errors, [], 'no uncaught page errors');
  } finally {
    await b.close();
    if (tmp !== null) rmSync(tmp, { recursive: true, force: true });
  }
});
