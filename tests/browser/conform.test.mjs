// "Compare with AWS export" on a real capture: pick an allenkchau folder (NEFF + NTFF +
// json_reports/*_profile_full.json), click the button and read match rates from the report
// (the same numbers as crate/tests/conform.rs for this file). Needs `npm run build` first and
// ../shared/samples.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { SHOTS, foreignRequests, launch, requireBuild, sample, serve, showView, waitReady } from './harness.mjs';

let server;

before(async () => {
  requireBuild();
  mkdirSync(SHOTS, { recursive: true });
  server = await serve();
});

after(async () => {
  await server?.close();
});

async function rate(page, section, field, tolerance) {
  const sel = `[data-testid=conform-report] tr[data-section="${section}"][data-field="${field}"]${tolerance ? `[data-tolerance="${tolerance}"]` : ''}`;
  const row = page.locator(sel).first();
  // Sections whose fields all match start folded: unfold it as a user would.
  const fold = page.locator(`[data-testid=conform-report] details.conform-section[data-section="${section}"]`).first();
  if ((await fold.getAttribute('open')) === null) await fold.locator('summary').first().click();
  return { rate: Number(await row.getAttribute('data-rate')), text: await row.innerText() };
}

test('fused_fp32_s512: the device view compares with the folder\'s JSON export', async () => {
  const dir = sample('allenkchau-trainium-kernel-fusion/profiling/artifacts/fused_fp32_s512');
  const b = await launch();
  try {
    const { page } = b;
    await page.goto(`${server.origin}/`);
    await page.waitForFunction(() => document.body.dataset.state === 'idle', null, { timeout: 30_000 });
    await page.setInputFiles('[data-testid=folder-input]', dir);
    await waitReady(page);

    await showView(page, 'compare');
    const run = page.locator('[data-testid=conform-run]');
    assert.equal(await run.count(), 1, 'the folder has an export: the button is shown');
    await run.click();
    await page.locator('[data-testid=conform-report]').waitFor({ timeout: 60_000 });

    // Instruction start_ts: all 442 rows equal (ntff.md §10).
    const ts = await rate(page, 'instruction', 'timestamp');
    assert.equal(ts.rate, 1, ts.text);
    assert.match(ts.text, /start_ts/);
    assert.match(ts.text, /442 \/ 442/);
    // evt_wait_time: single-precision rule, every row of this file.
    assert.equal((await rate(page, 'instruction', 'evt_wait_time')).rate, 1);
    // DMA packets: float32 transfer rate on all 481 rows.
    const tr = await rate(page, 'dma[aggregated=no]', 'transfer_rate', 'float32');
    assert.equal(tr.rate, 1, tr.text);
    assert.match(tr.text, /481 \/ 481/);
    // Presentation sections are listed without fields; sections we do not write say so.
    const terms = page.locator('[data-testid=conform-report] .conform-section[data-section="terminology"]');
    assert.match(await terms.innerText(), /presentation/);
    const pending = page.locator('[data-testid=conform-report] .conform-section[data-section="pending_dma"]');
    assert.match(await pending.innerText(), /not produced|compared/);

    // The verdict names every compared section whose rows differ from the export's (a 100 % field
    // rate counts matched rows only); the counts are the section heads' own.
    const heads = await page.$$eval('[data-testid=conform-report] .conform-section', (ds) => ds.map((d) => ({
      section: d.dataset.section, text: d.querySelector('summary')?.textContent ?? '',
    })));
    const gaps = heads.map((x) => ({ ...x, m: /\[compared\] rows export ([\d,]+) \/ ours ([\d,]+) \/ matched ([\d,]+)/.exec(x.text) }))
      .filter((x) => x.m !== null).map((x) => ({ section: x.section, n: x.m.slice(1).map((v) => Number(v.replace(/,/g, ''))) }))
      .filter(({ n: [e, o, m] }) => o !== e || m < e);
    const verdict = page.locator('[data-testid=conform-verdict]');
    assert.equal(Number(await verdict.getAttribute('data-row-gaps')), gaps.length, JSON.stringify(gaps));
    const vt = await verdict.innerText();
    assert.ok(gaps.some((g) => g.section === 'neff_node'), `this export has NEFF nodes without a TensorInfo row: ${JSON.stringify(gaps)}`);
    for (const { section, n: [e, o, m] } of gaps.slice(0, 4)) {
      const want = o > e ? `${section}: ours ${o}, export ${e} rows` : `${section}: ${o} of ${e}${m < o ? `, ${m} matched` : ''}`;
      assert.ok(vt.includes(want), `the verdict says "${want}": ${vt}`);
    }
    assert.match(vt, /\d+ sections? (has|have) (rows missing|extra rows|rows missing or extra) \(/);
    assert.doesNotMatch(vt, /every compared field matches(?! on the matched rows)/, 'a full field rate is qualified when rows are missing');

    await page.locator('[data-testid=conform]').scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(SHOTS, 'conform.png') });
    assert.deepEqual(b.errors, [], 'no page errors');
    assert.deepEqual(foreignRequests(b.requests, server.origin), [], 'nothing leaves 127.0.0.1');
  } finally {
    await b.close();
  }
});
