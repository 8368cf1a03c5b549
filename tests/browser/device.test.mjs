// Device timeline rows under the engines (DMA queues, semaphores, throttling) and the Summary in
// Neuron Explorer's groups, on real captures, checked against AWS's JSON export of the same capture:
// its `dma` rows (one queue = subgraph + subgroup), `semaphore_update` ids, `ham` (throttle) rows and
// its `summary_groups` / `summary_group_order`. Needs `npm run build` first and ../shared/samples.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SHOTS, foreignRequests, fullJsonExport, launch, requireBuild, revealBand, sample, serve, showView, timelineProbe, waitReady } from './harness.mjs';

let server;

before(async () => {
  requireBuild();
  mkdirSync(SHOTS, { recursive: true });
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

/** The visible timeline rows (label, kind, top, height, header, collapsed, group) from the view's probe. */
async function timelineRows(page) {
  return (await timelineProbe(page))?.rows ?? [];
}

/** CSS coordinates of a slice-coloured pixel inside a row band, or null. */
async function colouredPixelIn(page, row) {
  return page.evaluate((row) => {
    const c = document.querySelector('[data-testid=timeline-canvas]');
    const ctx = c.getContext('2d');
    const dpr = c.width / c.clientWidth;
    const gutter = Number(c.dataset.gutter);
    const y = Math.round((row.top + row.height / 2) * dpr);
    const { data, width } = ctx.getImageData(0, y, c.width, 1);
    for (let x = Math.ceil((gutter + 2) * dpr); x < width; x++) {
      const i = x * 4;
      if (Math.max(data[i], data[i + 1], data[i + 2]) - Math.min(data[i], data[i + 1], data[i + 2]) > 40) return { x: x / dpr, y: y / dpr };
    }
    return null;
  }, row);
}

test('fused_bf16_s512: DMA queue, semaphore and throttle rows match the JSON export; DMA hover and click show bytes', async () => {
  const dir = sample('allenkchau-trainium-kernel-fusion/profiling/artifacts/fused_bf16_s512');
  const doc = JSON.parse(readFileSync(await fullJsonExport(dir), 'utf8'));
  // One DMA queue row per (subgraph = physical core, queue): the export's dma rows name it subgroup.
  const queues = new Set(doc.dma.map((r) => `${r.subgraph}/${r.subgroup}`));
  const queuesPerCore = {};
  for (const q of queues) {
    const sg = q.split('/')[0];
    queuesPerCore[sg] = (queuesPerCore[sg] ?? 0) + 1;
  }
  const semaphores = new Set(doc.semaphore_update.map((r) => `${r.subgraph}/${r.id}`));
  const throttleCores = new Set((doc.ham ?? []).map((r) => r.subgraph));
  assert.ok(queues.size > 10 && semaphores.size > 10, 'the export has DMA queues and semaphores');

  const b = await launch();
  try {
    const { page } = b;
    await openFolder(page, dir);
    await showView(page, 'timeline');
    const canvas = page.locator('[data-testid=timeline-canvas]');
    await canvas.scrollIntoViewIfNeeded();

    const counts = await timelineProbe(page);
    assert.equal(counts.dmaRows, queues.size, 'one DMA row per queue of the export');
    assert.equal(counts.semaphoreRows, semaphores.size, 'one semaphore row per (core, id) of the export');
    assert.equal(counts.throttleRows, throttleCores.size, 'one throttle row per throttled core');

    // Group headers per core: "sg00 DMA (35 queues)"; the big group starts collapsed.
    let rows = await timelineRows(page);
    const dmaHeaders = rows.filter((r) => r.kind === 'dma' && r.header);
    assert.deepEqual(
      Object.fromEntries(dmaHeaders.map((r) => [r.label.slice(0, 4), r.count])),
      queuesPerCore,
      'a DMA group per physical core with its queue count',
    );
    for (const hd of dmaHeaders) assert.match(hd.label, new RegExp(`^sg0\\d DMA \\(${hd.count} queues?\\)$`));
    const semHeaders = rows.filter((r) => r.kind === 'semaphore' && r.header);
    assert.equal(semHeaders.reduce((a, r) => a + r.count, 0), semaphores.size, 'semaphore groups hold every semaphore');
    assert.ok(semHeaders.every((r) => r.collapsed), 'semaphore groups start collapsed');
    assert.ok(rows.some((r) => r.kind === 'throttle' && !r.header), 'a throttle row is shown');
    // Per core: engines first, then DMA, throttle, semaphores (rows of core 0 come before core 1's).
    const kinds = rows.filter((r) => r.pcore === 0 && !r.group).map((r) => r.kind);
    // PendingDma (derived from the DMA_DIRECT2D instructions) sits between DMA and throttle.
    assert.deepEqual([...new Set(kinds)], ['engine', 'dma', 'pending', 'throttle', 'semaphore'], 'row order within a core');

    const big = dmaHeaders.find((r) => r.count === Math.max(...dmaHeaders.map((x) => x.count)));
    assert.ok(big.collapsed, `the ${big.count}-queue group starts collapsed`);
    // The track list scrolls under the pinned axis: bring each band on screen before pointing at it.
    let box = await revealBand(page, big.top, big.height);
    await page.mouse.click(box.x + 30, box.y + big.top + big.height / 2);
    await page.waitForFunction((label) => window.__neuronscope.timeline('timeline-canvas').rows
      .some((r) => r.label === label && r.collapsed === false), big.label);
    rows = await timelineRows(page);
    const children = rows.filter((r) => r.group === big.header);
    assert.equal(children.length, big.count, 'expanding shows one row per queue');

    // Hover the first DMA row with a drawn packet: the tooltip gives its bytes; a click shows the row.
    let hit = null;
    for (const r of children) {
      hit = await colouredPixelIn(page, r);
      if (hit !== null) break;
    }
    assert.ok(hit !== null, 'a DMA packet pixel to hover');
    box = await revealBand(page, hit.y - 4, 8);
    await page.mouse.move(box.x + hit.x, box.y + hit.y);
    await page.waitForSelector('[data-testid=timeline-tooltip]:not([hidden]) [data-testid=tooltip-bytes]');
    const ttBytes = Number(await page.locator('[data-testid=tooltip-bytes]').getAttribute('data-value'));
    assert.ok(ttBytes > 0, `tooltip shows the packet's bytes (${ttBytes})`);
    assert.match(await page.locator('[data-testid=tooltip-bytes]').textContent(), /B\b/);
    await page.mouse.down();
    await page.mouse.up();
    await page.waitForSelector('[data-testid=instruction-details] .details-head[data-table=DmaPacket]');
    await page.waitForSelector('[data-testid=instruction-details] [data-field=queue_name]');
    assert.equal(Number(await page.locator('[data-testid=instruction-details] [data-field=transfer_bytes]').textContent()
      .then((t) => t.replace(/[^\d]/g, ''))), ttBytes, 'details show the same packet');

    // Collapsing hides the rows again.
    box = await revealBand(page, big.top, big.height);
    await page.mouse.click(box.x + 30, box.y + big.top + big.height / 2);
    await page.waitForFunction((label) => window.__neuronscope.timeline('timeline-canvas').rows
      .some((r) => r.label === label && r.collapsed === true), big.label);

    // Expand the first semaphore group: its rows are drawn.
    const sem = semHeaders[0];
    box = await revealBand(page, sem.top, sem.height);
    await page.mouse.click(box.x + 30, box.y + sem.top + sem.height / 2);
    await page.waitForFunction((label) => window.__neuronscope.timeline('timeline-canvas').rows
      .some((r) => r.label === label && r.collapsed === false), sem.label);
    rows = await timelineRows(page);
    assert.equal(rows.filter((r) => r.group === sem.header).length, sem.count, 'one row per semaphore');
    await page.screenshot({ path: join(SHOTS, 'device-rows.png'), fullPage: true });

    assert.deepEqual(foreignRequests(b.requests, server.origin), [], 'no request left 127.0.0.1');
    assert.deepEqual(b.errors, [], 'no uncaught page errors');
  } finally {
    await b.close();
  }
});

test('every allenkchau capture: DMA queue, semaphore and throttle row counts equal the JSON export', async () => {
  const names = ['baseline_bf16_s1024', 'baseline_bf16_s512', 'baseline_fp32_s512', 'fused_bf16_s512', 'fused_fp32_s1024', 'fused_fp32_s512'];
  const b = await launch();
  try {
    const { page } = b;
    for (const name of names) {
      const dir = sample(`allenkchau-trainium-kernel-fusion/profiling/artifacts/${name}`);
      const doc = JSON.parse(readFileSync(await fullJsonExport(dir), 'utf8'));
      await openFolder(page, dir);
      const probe = await timelineProbe(page);
      const got = {
        dma: probe.dmaRows,
        semaphores: probe.semaphoreRows,
        throttle: probe.throttleRows,
        packets: (await timelineRows(page)).filter((r) => r.kind === 'dma' && r.header).reduce((a, r) => a + r.items, 0),
      };
      const want = {
        dma: new Set(doc.dma.map((r) => `${r.subgraph}/${r.subgroup}`)).size,
        semaphores: new Set(doc.semaphore_update.map((r) => `${r.subgraph}/${r.id}`)).size,
        throttle: new Set((doc.ham ?? []).map((r) => r.subgraph)).size,
        packets: doc.dma.length,
      };
      assert.deepEqual(got, want, `${name}: rows and packets drawn vs the export`);
    }
    assert.deepEqual(b.errors, [], 'no uncaught page errors');
  } finally {
    await b.close();
  }
});

test('fused_bf16_s512: the Summary shows Explorer\'s groups in Explorer\'s order, values in the right group', async () => {
  const dir = sample('allenkchau-trainium-kernel-fusion/profiling/artifacts/fused_bf16_s512');
  const doc = JSON.parse(readFileSync(await fullJsonExport(dir), 'utf8'));
  const groupOf = doc.summary_groups[0];
  const order = Object.entries(doc.summary_group_order[0]).sort((a, b) => a[1] - b[1]).map(([g]) => g);
  const expected = doc.summary[0];

  const b = await launch();
  try {
    const { page } = b;
    await openFolder(page, dir);
    await page.waitForSelector('[data-testid=summary-group]');
    const shown = await page.$$eval('[data-testid=summary-group]', (els) => els.map((e) => ({
      group: e.dataset.group,
      fields: [...e.querySelectorAll('tr[data-field]')].map((tr) => ({ name: tr.dataset.field, raw: tr.querySelector('[data-value]')?.dataset.value, text: tr.querySelector('[data-value]')?.textContent })),
    })));
    const groups = shown.map((s) => s.group);
    assert.ok(groups.length >= 8, `several groups shown (${groups.join(', ')})`);
    // The ordered groups come in summary_group_order; the rest (dma_queue, summary, other) after them.
    const ranked = groups.filter((g) => order.includes(g));
    assert.deepEqual(ranked, [...ranked].sort((a, b) => order.indexOf(a) - order.indexOf(b)), 'groups in Explorer order');
    assert.equal(groups.indexOf(ranked[ranked.length - 1]), ranked.length - 1, 'ordered groups first');
    assert.equal(groups[0], 'overall_stats');
    if (groups.includes('other')) assert.equal(groups[groups.length - 1], 'other', '"other" last');

    // Every field the export files under a group is shown in that group.
    let checked = 0;
    for (const s of shown) {
      for (const f of s.fields) {
        if (groupOf[f.name] !== undefined) {
          assert.equal(s.group, groupOf[f.name], `${f.name} in ${groupOf[f.name]}`);
          checked++;
        }
      }
    }
    assert.ok(checked >= 40, `${checked} fields checked against summary_groups`);

    // total_time: in overall_stats, equal to the export (float32 seconds), shown in µs.
    const overall = shown.find((s) => s.group === 'overall_stats');
    const tt = overall.fields.find((f) => f.name === 'total_time');
    assert.ok(tt !== undefined, 'total_time in overall_stats');
    assert.ok(Math.abs(Number(tt.raw) - expected.total_time) <= expected.total_time * 1e-6, `total_time ${tt.raw} vs ${expected.total_time}`);
    assert.match(tt.text, /^36\.35\d µs$/, `total_time shown in µs (${tt.text})`);
    // A percentage (stored as a fraction) and a byte count in their groups with their units.
    const tensor = shown.find((s) => s.group === 'tensor_engine');
    const pct = tensor.fields.find((f) => f.name === 'tensor_engine_active_time_percent');
    assert.equal(pct.text, `${(expected.tensor_engine_active_time_percent * 100).toFixed(2)} %`);
    const sw = shown.find((s) => s.group === 'software_data_movement').fields.find((f) => f.name === 'software_dynamic_dma_size');
    assert.equal(Number(sw.raw), expected.software_dynamic_dma_size);
    assert.match(sw.text, /KiB/);
    const sys = shown.find((s) => s.group === 'system');
    assert.equal(sys.fields.find((f) => f.name === 'instance_type')?.text, expected.instance_type, 'instance type under system');

    // Throttling fields (computed from the Throttle rows) equal the export's, under throttling_nc0.
    const throttleKeys = Object.keys(expected).filter((k) => k.startsWith('throttle_'));
    assert.ok(throttleKeys.length >= 4, 'the export has throttling fields');
    const nc0 = shown.find((s) => s.group === 'throttling_nc0');
    assert.ok(nc0 !== undefined, 'a throttling_nc0 group');
    // Exact for the fields within the Throttle rows; the ones divided by the total time differ:
    // Explorer divides by an integer-ns span 1–2 ns shorter than total_time (36350 vs 36351.6 ns
    // here; on the 10 exports it is neither last_hw_timestamp nor the last throttle end every
    // time), so those agree to 1e-4 relative only — a known gap, not a rounding tolerance.
    for (const k of throttleKeys) {
      const f = shown.flatMap((s) => s.fields).find((x) => x.name === k);
      assert.ok(f !== undefined, `${k} shown`);
      const overTotal = /_active_time_nc\d_percent$/.test(k) || /^throttle_avg_util_limit_nc\d_percent$/.test(k);
      const tol = (overTotal ? 1e-4 : 1e-9) * Math.max(1, Math.abs(expected[k]));
      assert.ok(Math.abs(Number(f.raw) - expected[k]) <= tol, `${k}: ${f.raw} vs ${expected[k]}`);
    }

    await page.locator('#summary-panel').screenshot({ path: join(SHOTS, 'summary-groups.png') });
    assert.deepEqual(b.errors, [], 'no uncaught page errors');
  } finally {
    await b.close();
  }
});

test('demo capture (?demo): DMA, throttle and semaphore rows under the engines', async () => {
  const b = await launch();
  try {
    const { page } = b;
    await page.goto(`${server.origin}/?demo`);
    await waitReady(page);
    const rows = await timelineRows(page);
    // synth: 5 DMA queues per core (4 named by the NEFF + instruction queue 14), 2 cores.
    const probe = await timelineProbe(page);
    assert.equal(probe.dmaRows, 10, 'one DMA row per (core, queue)');
    const dmaHeaders = rows.filter((r) => r.kind === 'dma' && r.header);
    assert.deepEqual(dmaHeaders.map((r) => r.label), ['sg00 DMA (5 queues)', 'sg01 DMA (5 queues)']);
    assert.ok(rows.some((r) => r.kind === 'throttle' && !r.header), 'a throttle row is shown');
    const kinds = rows.filter((r) => r.pcore === 0 && !r.group).map((r) => r.kind);
    assert.deepEqual([...new Set(kinds)], ['engine', 'dma', 'pending', 'throttle', 'semaphore'], 'row order within a core');
    assert.ok(probe.semaphoreRows > 0, 'semaphore rows');
    const header = rows.find((r) => r.kind === 'semaphore' && r.header);
    assert.ok(header !== undefined && header.collapsed, 'a collapsed semaphore group');
    assert.ok(rows.findIndex((r) => r.kind === 'semaphore') > rows.findIndex((r) => r.kind === 'engine'), 'semaphores under the engines');
    // The collapsed group draws every update of its core as ticks.
    await showView(page, 'timeline');
    const box = await revealBand(page, header.top, header.height);
    const drawnBefore = (await timelineProbe(page)).drawn;
    await page.mouse.click(box.x + 30, box.y + header.top + header.height / 2);
    await page.waitForFunction((d) => window.__neuronscope.timeline('timeline-canvas').drawn > d, drawnBefore);
    await page.screenshot({ path: join(SHOTS, 'device-demo.png'), fullPage: true });
    assert.deepEqual(b.errors, [], 'no uncaught page errors');
  } finally {
    await b.close();
  }
});
