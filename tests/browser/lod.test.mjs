// The level-of-detail timelines (www/src/views/tracks/): the page forced onto the summaries-and-
// windows path (`?lod=1`) must show the same tracks as the every-row path (`?lod=0`) on real
// samples, draw from summaries when fitted and from the window's real rows when zoomed in, and
// load a clicked row's every field by its table row. Needs `npm run build` first and ../shared/samples.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { foreignRequests, launch, sample, showView, timelineColouredPixels, timelineProbe, waitReady, useServer } from './harness.mjs';

const server = useServer();

async function open(page, dir, lod) {
  await page.goto(`${server.origin}/?lod=${lod}`);
  await page.waitForFunction(() => document.body.dataset.state === 'idle', null, { timeout: 30_000 });
  await page.setInputFiles('[data-testid=folder-input]', dir);
  await waitReady(page);
}

const rowsOf = (page, testid = 'timeline-canvas') => timelineProbe(page, testid).then((p) => p?.rows ?? []);
const lodState = (page, testid = 'timeline-canvas') => page.evaluate((t) => {
  const s = document.querySelector(`[data-testid=${t}]`)?.closest('.timeline')?.dataset.lod;
  return s === undefined ? null : JSON.parse(s);
}, testid);

test('fused_bf16_s512 through the level-of-detail store: same tracks as every row, summaries fitted, rows zoomed, details by table row', async () => {
  const dir = sample('allenkchau-trainium-kernel-fusion/profiling/artifacts/fused_bf16_s512');
  const b = await launch();
  try {
    const { page } = b;
    await open(page, dir, 0);
    const canvas = page.locator('[data-testid=timeline-canvas]');
    const strip = (rows) => rows.map((r) => ({ label: r.label, kind: r.kind, pcore: r.pcore, header: r.header, count: r.count, collapsed: r.collapsed, group: r.group }));
    const every = strip(await rowsOf(page));
    const counts = {};
    const rowCounts = (p) => ({ dma: p.dmaRows, semaphore: p.semaphoreRows, throttle: p.throttleRows, pending: p.pendingRows });
    Object.assign(counts, rowCounts(await timelineProbe(page)));
    assert.equal(await lodState(page), null, 'lod=0 reads every row');

    await open(page, dir, 1);
    await showView(page, 'timeline');
    await canvas.scrollIntoViewIfNeeded();
    assert.deepEqual(strip(await rowsOf(page)), every, 'the same rows, labels, groups and order');
    const lodCounts = rowCounts(await timelineProbe(page));
    for (const [a, v] of Object.entries(counts)) assert.equal(lodCounts[a], v, `${a} rows`);
    const fitted = await lodState(page);
    assert.ok(fitted !== null, 'drawn through the store');
    assert.equal(fitted.tables.Instruction.mode, 'summary', 'fitted: Instruction from summaries');
    assert.ok((await timelineColouredPixels(page)) > 500, 'summaries drawn');
    // Busy figures from summaries would be wrong (a bucket's slice is its busy time under its
    // dominant opcode): at Fit the line gives the Summary's own percents, and rows drawn from
    // summaries give none.
    await page.waitForSelector('[data-testid=timeline-busy] [data-engine]');
    const line = await page.locator('[data-testid=timeline-busy] [data-engine]').evaluateAll((els) => els.map((e) => [e.dataset.engine, Number(e.dataset.percent)]));
    const summaryPct = await page.locator('[data-testid=summary-groups] tr[data-field$=_engine_active_time_percent] td[data-value]').evaluateAll((els) =>
      els.map((e) => [e.closest('tr').dataset.field.replace('_engine_active_time_percent', ''), 100 * Number(e.dataset.value)]));
    assert.equal(line.length, 5, 'five engines on the busy line');
    for (const [engine, pct] of line) {
      const want = summaryPct.find(([e]) => e === engine)?.[1];
      assert.ok(want !== undefined && Math.abs(pct - want) < 1e-9, `${engine}: busy line ${pct} % = Summary ${want} % at Fit through summaries`);
    }
    assert.deepEqual((await timelineProbe(page)).busy.filter((r) => r.kind === 'engine'), [], 'no row % from summaries');

    // Hovering a summarised slice names how many instructions it stands for.
    const rows = await rowsOf(page);
    const eng = rows.find((r) => r.kind === 'engine' && r.items > 0);
    const box = await canvas.boundingBox();
    const px = await page.evaluate((row) => {
      const c = document.querySelector('[data-testid=timeline-canvas]');
      const dpr = c.width / c.clientWidth;
      const y = Math.round((row.top + row.height / 2) * dpr);
      const { data, width } = c.getContext('2d').getImageData(0, y, c.width, 1);
      for (let x = Math.ceil((Number(c.dataset.gutter) + 2) * dpr); x < width; x++) {
        const i = x * 4;
        if (Math.max(data[i], data[i + 1], data[i + 2]) - Math.min(data[i], data[i + 1], data[i + 2]) > 40) return { x: x / dpr + 1, y: y / dpr };
      }
      return null;
    }, eng);
    assert.ok(px !== null, 'a drawn engine pixel');
    // Most buckets are ones a long instruction (a semaphore wait) runs through, with no start:
    // step right along the row until a bucket where instructions start.
    const tip = page.locator('[data-testid=timeline-panel] [data-testid=tooltip-summary]');
    let tipCount = 0;
    for (let dx = 0; dx < 900 && tipCount < 1; dx += 3) {
      await page.mouse.move(box.x + px.x + dx, box.y + px.y);
      await page.waitForTimeout(60);
      const shown = page.locator('[data-testid=timeline-panel] [data-testid=timeline-tooltip]:not([hidden]) [data-testid=tooltip-summary]');
      if ((await shown.count()) > 0) tipCount = Number(await tip.getAttribute('data-count'));
    }
    assert.ok(tipCount >= 1, `a summary tooltip names the instructions starting in its bucket (${tipCount})`);

    // Zoom in around that pixel until the window's rows are drawn.
    await canvas.focus();
    let st = fitted;
    let sawSummarised = false;
    let onSummary = 0;
    for (let i = 0; i < 12 && st.tables.Instruction.mode !== 'rows'; i++) {
      await page.mouse.move(box.x + px.x, box.y + px.y);
      // Ctrl+wheel zooms (the plain wheel scrolls the track list).
      await page.keyboard.down('Control');
      await page.mouse.wheel(0, -600);
      await page.keyboard.up('Control');
      await page.waitForTimeout(250);
      st = await lodState(page);
      if (st.tables.Instruction.mode === 'summary') {
        onSummary++;
        sawSummarised ||= (await page.locator('[data-testid=busy-summarised]').count()) > 0;
      }
    }
    assert.ok(onSummary === 0 || sawSummarised, `zoomed in but still on summaries (${onSummary} steps): the busy line says it has no exact figure`);
    assert.equal(st.tables.Instruction.mode, 'rows', `zoomed: Instruction from the window's rows (${JSON.stringify(st)})`);
    assert.ok(st.tables.Instruction.rows > 0);
    // Click a drawn instruction: the details name its table row and load that row's fields.
    const after = await rowsOf(page);
    let hit = null;
    for (const r of after.filter((r) => r.kind === 'engine')) {
      hit = await page.evaluate((row) => {
        const c = document.querySelector('[data-testid=timeline-canvas]');
        const dpr = c.width / c.clientWidth;
        const y = Math.round((row.top + row.height / 2) * dpr);
        const { data, width } = c.getContext('2d').getImageData(0, y, c.width, 1);
        for (let x = Math.ceil((Number(c.dataset.gutter) + 2) * dpr); x < width; x++) {
          const i = x * 4;
          if (Math.max(data[i], data[i + 1], data[i + 2]) - Math.min(data[i], data[i + 1], data[i + 2]) > 40) return { x: x / dpr + 1, y: y / dpr };
        }
        return null;
      }, r);
      if (hit !== null) break;
    }
    assert.ok(hit !== null, 'an instruction to click');
    await page.mouse.click(box.x + hit.x, box.y + hit.y);
    await page.waitForSelector('[data-testid=instruction-details] [data-field=opcode]');
    const head = await page.locator('[data-testid=instruction-details] .details-head').textContent();
    const row = Number(/ row (\d+)(?:Show in table)?$/.exec(head ?? '')?.[1]);
    assert.ok(Number.isInteger(row), `details name the table row (${head})`);
    const start = Number((await page.locator('[data-testid=instruction-details] [data-field=start_ts]').first().textContent()).replace(/[^\d-].*$/, '').replace(/[^\d-]/g, ''));
    const probe = await timelineProbe(page);
    const view = [probe.viewStart, probe.viewEnd];
    const span = view[1] - view[0];
    assert.ok(start >= view[0] - span && start <= view[1] + span, `the clicked row (start ${start}) is in the view ${view}`);
    assert.deepEqual(foreignRequests(b.requests, server.origin), [], 'no request left 127.0.0.1');
    assert.deepEqual(b.errors, [], 'no uncaught page errors');
  } finally {
    await b.close();
  }
});

test('KevGomes system trace through the level-of-detail store: runtime and NeuronCore tracks drawn', async () => {
  const dir = sample('KevGomes-nki-moe-megakernel/output/i-0af76a70a6d3864dd_pid_713479');
  const b = await launch();
  try {
    const { page } = b;
    await open(page, dir, 1);
    await page.locator('[data-testid=profile]').first().locator('[data-testid=open-system]').click();
    await page.waitForFunction(() => document.body.classList.contains('has-system') && document.body.dataset.state === 'ready', null, { timeout: 120_000 });
    const canvas = page.locator('[data-testid=system-canvas]');
    await showView(page, 'system');
    await canvas.scrollIntoViewIfNeeded();
    // The fitted window's data may be refined once after the first frame: let it settle.
    await page.waitForTimeout(1500);
    const { trackLabels: labels, counterTop, counterLabels } = await timelineProbe(page, 'system-canvas');
    assert.ok(labels.some((l) => /^pid \d+ · tid \d+$/.test(l)), `a runtime thread row (${labels.join(' | ')})`);
    assert.ok(labels.some((l) => l.startsWith('NeuronCore')), 'a NeuronCore row');
    const st = await lodState(page, 'system-canvas');
    assert.ok(['summary', 'rows'].includes(st?.tables.SystemProfileEvents.mode), JSON.stringify(st));
    const slicePixels = (await timelineColouredPixels(page, 'system-canvas')) - (await timelineColouredPixels(page, 'system-canvas', counterTop));
    assert.ok(slicePixels > 200, `slice rows coloured (${slicePixels} pixels)`);
    assert.ok(counterLabels.includes('CPU average'));
    assert.deepEqual(b.errors, [], 'no uncaught page errors');
  } finally {
    await b.close();
  }
});
