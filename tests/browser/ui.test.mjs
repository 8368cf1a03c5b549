// The workspace as a user drives it, on the real samples (../shared/samples): a NEFF without a
// trace opens its summary; the Memory view's times, pinned stacks and frame links into Source; Tab
// reaches every control with a visible focus ring, arrows and Enter move and open the timeline's
// selection (read out through an aria-live region), tooltips go after a key zoom or a scroll; the
// timeline rows' busy % agree with the Summary's active-time percents; the System view says which
// window each span is; sidebar names keep their distinguishing end; jobs name the profile.
// Screenshots of every view at 1440×900 and 1000×800 go to /tmp/shots/ui-<view>-<width>.png.
// Needs `npm run build` first (and python3 for the memory fixture).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { dirname, join } from 'node:path';
import { REPO, foreignRequests, launch, sample, showView, timelineProbe, waitReady, useServer } from './harness.mjs';

const SHOTS = '/tmp/shots';
const TMP = join(REPO, 'tests', '.tmp', 'ui');
const MEM = join(TMP, 'memory');
const ARTIFACTS = 'allenkchau-trainium-kernel-fusion/profiling/artifacts';
const FUSED = `${ARTIFACTS}/fused_bf16_s512`;
const NEFFS = 'cs149-Ericcsr/part2/v_42d39e965b';
const CAPTURE = 'KevGomes-nki-moe-megakernel/output/i-0af76a70a6d3864dd_pid_713479';
const SIZES = [[1440, 900], [1000, 800]];
const server = useServer(() => {
  mkdirSync(SHOTS, { recursive: true });
  rmSync(TMP, { recursive: true, force: true });
  mkdirSync(MEM, { recursive: true });
  // A snapshot written by Python's own pickle (the memory fixture), alone in a folder.
  execFileSync('python3', [join(REPO, 'crate', 'tests', 'fixtures', 'make_snapshots.py'), join(TMP, 'gen')], { stdio: 'ignore' });
  copyFileSync(join(TMP, 'gen', 'snapshot_p4.pickle'), join(MEM, 'memory_snapshot_rank0.pickle'));
  // The fixture's stack frames name these host files (lines 1 – 2000): picked beside the snapshot,
  // a frame's file:line opens in the Source view.
  for (const rel of ['train/model.py', 'train/layers/attention.py', 'torch/nn/modules/module.py', 'torch_neuronx/xla_impl/ops.py']) {
    mkdirSync(dirname(join(MEM, rel)), { recursive: true });
    writeFileSync(join(MEM, rel), Array.from({ length: 2000 }, (_, i) => `line_${i + 1} = ${i + 1}\n`).join(''));
  }
});

/**
 * Instructions per (subgraph, engine) of a NEFF read here, independently of the core: the payload
 * after the 1024-byte header is a gzip'd ustar archive (docs/format/neff.md §1); each
 * `sgNN/def.json` names its engines' `<e>_instr` streams, 64 bytes per instruction (§7).
 * Returns { "tensor-sg00": n, … }.
 */
function neffStreamCounts(path) {
  const tar = gunzipSync(readFileSync(path).subarray(1024));
  const members = new Map();
  for (let off = 0; off + 512 <= tar.length;) {
    const str = (a, b) => tar.subarray(off + a, off + b).toString('latin1').replace(/\0.*$/s, '');
    const name = str(0, 100);
    if (name === '') break;
    const prefix = str(345, 500);
    const size = parseInt(str(124, 136).trim() || '0', 8);
    members.set(prefix ? `${prefix}/${name}` : name, tar.subarray(off + 512, off + 512 + size));
    off += 512 + Math.ceil(size / 512) * 512;
  }
  const engines = { pe: 'tensor', act: 'scalar', pool: 'gpsimd', dve: 'vector', sp: 'sync' };
  const out = {};
  for (const [k, v] of members) {
    const m = /^(sg\d+)\/def\.json$/.exec(k);
    if (m === null) continue;
    const def = JSON.parse(v.toString('utf8'));
    for (const [key, engine] of Object.entries(engines)) {
      const stream = def[`${key}_instr`];
      const data = stream === undefined ? undefined : members.get(`${m[1]}/${stream}`) ?? members.get(stream);
      if (data !== undefined) out[`${engine}-${m[1]}`] = data.length / 64;
    }
  }
  return out;
}

async function openFolder(page, dir) {
  await page.goto(`${server.origin}/`);
  await page.waitForFunction(() => document.body.dataset.state === 'idle', null, { timeout: 30_000 });
  await page.setInputFiles('[data-testid=folder-input]', dir);
  await waitReady(page);
}

/** Screenshots of the current view at both sizes (the page relayouts in between). */
async function shoot(page, view) {
  for (const [w, hgt] of SIZES) {
    await page.setViewportSize({ width: w, height: hgt });
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => requestAnimationFrame(r)))));
    await page.screenshot({ path: join(SHOTS, `ui-${view}-${w}.png`) });
  }
  await page.setViewportSize({ width: 1440, height: 900 });
}

test('a folder of NEFFs alone: the first opens a NEFF summary (tensors, DMA queues, instructions per engine), a click opens another, no empty views', async () => {
  const b = await launch();
  try {
    const { page } = b;
    await openFolder(page, sample(NEFFS));
    const entries = page.locator('[data-testid=device][data-pairing=NeffOnly]');
    assert.equal(await entries.count(), 4, 'four NEFF-only entries');
    // The folder has nothing else: the first NEFF opened by itself.
    await page.waitForFunction(() => document.body.classList.contains('neff-only'));
    for (const i of [0, 2]) {
      await entries.nth(i).click();
      await page.waitForFunction((n) => document.querySelectorAll('[data-testid=device]')[n]?.classList.contains('selected') && document.querySelector('[data-testid=neff-instructions]') !== null, i, { timeout: 60_000 });
      await waitReady(page);
      const total = Number(await page.locator('[data-testid=neff-instruction-count]').getAttribute('data-value'));
      assert.ok(total > 0, `NEFF ${i}: instructions counted (${total})`);
      const cells = await page.locator('[data-testid=neff-instructions] td[data-value]').evaluateAll((els) => els.map((e) => Number(e.dataset.value)));
      assert.equal(cells.reduce((a, x) => a + x, 0), total, 'the per-engine cells add up to the total');
      // Each cell = that engine stream's size / 64, read from the NEFF's archive here.
      const file = (await page.locator('[data-testid=neff-file]').innerText()).replace(/^.*\//, '');
      const want = neffStreamCounts(join(sample(NEFFS), file));
      const got = Object.fromEntries(await page.locator('[data-testid=neff-instructions] td[data-value]').evaluateAll((els) =>
        els.map((e) => [e.dataset.testid.replace(/^neff-count-/, ''), Number(e.dataset.value)])));
      assert.deepEqual(got, want, `${file}: instructions per engine = stream bytes / 64`);
      const tensorRows = Number(await page.locator('[data-testid=neff-tensor-count]').getAttribute('data-value'));
      assert.ok(tensorRows > 0, 'tensors listed');
      assert.equal(await page.locator('[data-testid=neff-tensors] tbody tr').count(), Math.min(200, tensorRows), 'tensor rows shown');
      const queueRows = Number(await page.locator('[data-testid=neff-queue-count]').getAttribute('data-value'));
      assert.ok(queueRows > 0, 'DMA queues listed');
      assert.match(await page.locator('[data-testid=neff-name]').innerText(), /\S/);
      // Only the views that have something: Summary and Tables; no bottom panel.
      const tabs = await page.locator('[data-testid=view-tabs] .tab:not([hidden])').evaluateAll((els) => els.map((e) => e.dataset.testid));
      assert.deepEqual(tabs, ['tab-summary', 'tab-tables']);
      assert.equal(await page.locator('[data-testid=bottom-panel]').isVisible(), false, 'no empty details panel');
      if (i === 0) await shoot(page, 'neff-summary');
      await showView(page, 'tables');
      await showView(page, 'summary');
    }
    const jobs = await page.locator('[data-testid=job]').allInnerTexts();
    assert.ok(jobs.some((j) => /file_pool_2_float16\.neff: done/.test(j)), `the NEFF's job is named after it: ${jobs.join(' | ')}`);
    assert.deepEqual(foreignRequests(b.requests, server.origin), []);
    assert.deepEqual(b.errors, []);
  } finally {
    await b.close();
  }
});

test('Memory view: times in ms since the first entry, a click pins the stack, a frame opens Source, Source hidden under Memory, plurals', async () => {
  const b = await launch();
  try {
    const { page } = b;
    await page.setViewportSize({ width: 1440, height: 900 });
    await openFolder(page, MEM);
    await page.waitForFunction(() => document.body.classList.contains('has-memory') && document.body.dataset.view === 'memory');
    assert.equal(await page.locator('[data-testid=bottom-panel]').isVisible(), false, 'no empty bottom panel under the Memory view');
    assert.equal(await page.locator('#source-panel').isVisible(), false, 'the Source panel is not under the Memory view');
    assert.match(await page.locator('[data-testid=memory-span]').innerText(), /^[\d,.]+ ms$/, 'trace span in ms');
    assert.match(await page.locator('[data-testid=memory-status]').innerText(), /^\s*[\d,.]+ ms – [\d,.]+ ms · [\d,.]+ ms visible/, 'visible window in ms');
    assert.match(await page.locator('[data-testid=memory-oom]').first().innerText(), /OOM at [\d,.]+ ms/);
    const canvas = page.locator('[data-testid=memory-canvas]');
    await page.waitForFunction(() => (document.querySelector('[data-testid=memory-canvas]')?.dataset.probe ?? '') !== '');
    const probe = JSON.parse(await canvas.getAttribute('data-probe'));
    const box = await canvas.boundingBox();
    await page.mouse.click(box.x + probe.x, box.y + probe.y);
    await page.waitForFunction(() => document.querySelector('[data-testid=memory-alloc]')?.dataset.pinned === 'true');
    assert.match(await page.locator('[data-testid=memory-alloc]').innerText(), /allocated (at [\d,.]+ ms|before the trace began)/);
    // Moving the pointer away over the chart keeps the pinned stack.
    await page.mouse.move(box.x + box.width - 5, box.y + box.height - 5);
    await page.mouse.move(box.x + 100, box.y + 60);
    assert.equal(await page.locator('[data-testid=memory-alloc]').getAttribute('data-size'), String(probe.size), 'the pinned allocation stays');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=memory-frame-link]').length > 0, null, { timeout: 10_000 });
    const link = page.locator('[data-testid=memory-frame-link]').first();
    const loc = await link.getAttribute('data-location');
    assert.match(loc, /^.+\.py:\d+$/, `frame location ${loc}`);
    for (const f of await page.locator('[data-testid=memory-frame]').allInnerTexts()) assert.match(f, /:\d+ \S/, `frame text ${f}`);
    // Frames PyTorch could not symbolise (`??`, line 0) have no Source link.
    for (const l of await page.locator('[data-testid=memory-frame-link]').evaluateAll((ls) => ls.map((x) => x.dataset.location))) assert.doesNotMatch(l, /^\?+:|:0$/, `link ${l}`);
    await shoot(page, 'memory');
    await link.focus();
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.body.dataset.view === 'source');
    assert.equal(await page.locator('[data-testid=tab-source]').getAttribute('aria-selected'), 'true');
    // The picked file whose path ends like the frame's, at the frame's line.
    await page.waitForSelector('[data-testid=source-current]', { timeout: 10_000 });
    const [file, line] = [loc.replace(/:\d+$/, ''), Number(loc.replace(/^.*:/, ''))];
    const shownPath = await page.locator('[data-testid=source-path]').innerText();
    const suffix = file.replace(/^\/home\/ubuntu\//, '').replace(/^\/opt\/venv\/lib\/python3\.11\/site-packages\//, '');
    assert.ok(shownPath.endsWith(suffix), `Source shows ${shownPath} for ${file}`);
    assert.equal(Number(await page.locator('[data-testid=source-current]').getAttribute('data-line')), line, 'at the frame\'s line');
    assert.equal(await page.locator(`[data-testid=source-line-${line}]`).innerText().then((t) => t.includes(`line_${line} = ${line}`)), true);
    await shoot(page, 'source');
    // No "1 allocations" (or any "1 <plural>") anywhere on the Memory view.
    await showView(page, 'memory');
    const text = await page.locator('[data-testid=memory-panel]').innerText();
    assert.doesNotMatch(text, /(^|[^\d,.])1 (allocations|segments|devices|entries)\b/);
    assert.deepEqual(foreignRequests(b.requests, server.origin), []);
    assert.deepEqual(b.errors, []);
  } finally {
    await b.close();
  }
});

/** What has the focus: a short description for the Tab walk. */
function focusedDesc(page) {
  return page.evaluate(() => {
    const a = document.activeElement;
    if (a === null || a === document.body) return { id: 'body' };
    const cs = getComputedStyle(a);
    return {
      id: a.dataset.testid ?? a.id ?? a.tagName,
      tag: a.tagName,
      profile: a.closest('[data-profile-id]')?.getAttribute('data-profile-id') ?? null,
      outline: `${cs.outlineStyle} ${cs.outlineWidth}`,
    };
  });
}

test('keyboard: Tab reaches every profile, the tabs and the canvas with a focus ring; arrows and Enter select; aria-live; tooltips drop on key zoom and scroll; busy % = Summary', async () => {
  const b = await launch();
  try {
    const { page } = b;
    await page.setViewportSize({ width: 1440, height: 900 });
    await openFolder(page, sample(ARTIFACTS));
    const profiles = await page.locator('[data-testid=profile]').evaluateAll((els) => els.map((e) => e.dataset.profileId));
    assert.equal(profiles.length, 6);
    // Sidebar names keep their distinguishing end visible; the full name is the title.
    const heads = await page.locator('[data-testid=profile] .profile-head .mid-ellipsis').evaluateAll((els) => els.map((e) => {
      const tail = e.querySelector('.mid-tail');
      const side = e.closest('aside').getBoundingClientRect();
      const r = tail.getBoundingClientRect();
      return { title: e.title, tail: tail.textContent, visible: r.right <= side.right + 0.5 && r.width > 0 };
    }));
    for (const hd of heads) {
      assert.ok(hd.visible, `${hd.title}: its end is on screen`);
      assert.ok(hd.title.endsWith(hd.tail), `${hd.title}: the tail is its end`);
    }
    assert.equal(new Set(heads.map((x) => x.tail)).size, heads.length, `tails tell the folders apart: ${heads.map((x) => x.tail).join(', ')}`);

    // Open fused_bf16_s512 by keyboard: Tab from the top until its entry has the focus, Enter.
    await page.evaluate(() => document.activeElement?.blur());
    const seen = [];
    for (let i = 0; i < 80; i++) {
      await page.keyboard.press('Tab');
      const f = await focusedDesc(page);
      seen.push(f);
      if (f.id === 'device' && f.profile?.endsWith('fused_bf16_s512')) break;
    }
    const last = seen[seen.length - 1];
    assert.ok(last.id === 'device' && last.profile.endsWith('fused_bf16_s512'), `Tab reached fused_bf16_s512 (walk: ${seen.map((s) => s.id).join(' ')})`);
    const reachedProfiles = new Set(seen.filter((s) => s.id === 'device').map((s) => s.profile));
    assert.ok(reachedProfiles.size >= 4, `Tab went through the profiles before it (${[...reachedProfiles].join(', ')})`);
    for (const s of seen.filter((x) => x.id === 'device')) assert.match(s.outline, /^solid [1-9]/, `focus ring on ${s.profile}: ${s.outline}`);
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.querySelector('[data-testid=device].selected')?.closest('[data-profile-id]')?.getAttribute('data-profile-id')?.endsWith('fused_bf16_s512'));
    await waitReady(page);
    await page.waitForFunction(() => document.querySelector('[data-testid=summary-groups] [data-field=tensor_engine_active_time_percent]') !== null, null, { timeout: 30_000 });
    await shoot(page, 'summary');
    // Every remaining profile is reachable too: keep tabbing to the view tabs.
    for (let i = 0; i < 80; i++) {
      await page.keyboard.press('Tab');
      const f = await focusedDesc(page);
      seen.push(f);
      if (f.id?.startsWith('tab-')) break;
    }
    const allReached = new Set(seen.filter((s) => s.id === 'device').map((s) => s.profile));
    assert.deepEqual([...allReached].sort(), [...profiles].sort(), 'Tab reaches every profile');
    const tabFocus = seen[seen.length - 1];
    assert.ok(tabFocus.id.startsWith('tab-'), `then the view tabs (${tabFocus.id})`);
    assert.match(tabFocus.outline, /^solid [1-9]/, 'the tab shows the focus');
    // Arrow to the Timeline tab (tabs pattern), then Tab into its controls and on to the canvas.
    for (let i = 0; i < 6 && (await page.evaluate(() => document.body.dataset.view)) !== 'timeline'; i++) await page.keyboard.press('ArrowRight');
    assert.equal(await page.evaluate(() => document.body.dataset.view), 'timeline');
    await showView(page, 'timeline');
    await page.focus('[data-testid=tab-timeline]');
    let onCanvas = false;
    for (let i = 0; i < 20 && !onCanvas; i++) {
      await page.keyboard.press('Tab');
      onCanvas = (await focusedDesc(page)).id === 'timeline-canvas';
    }
    assert.ok(onCanvas, 'Tab reaches the timeline canvas');
    assert.match((await focusedDesc(page)).outline, /^solid [1-9]/, 'the canvas shows the focus');
    const canvas = page.locator('[data-testid=timeline-canvas]');
    const names = { tensor: 'Tensor', vector: 'Vector', scalar: 'Scalar', gpsimd: 'GpSimd', sync: 'Sync' };

    // At Fit the line over the tracks gives each engine's busy % over all cores = the Summary's
    // <engine>_active_time_percent; each row's % is its core alone = the Selection's per-core busy.
    await page.keyboard.press('0');
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const fitted = await timelineProbe(page);
    const total = fitted.fitEnd - fitted.fitStart;
    const line = await page.locator('[data-testid=timeline-busy] [data-engine]').evaluateAll((els) => els.map((e) => ({ engine: e.dataset.engine, pct: Number(e.dataset.percent), text: e.textContent })));
    const summary = await page.locator('[data-testid=summary-groups] tr[data-field$=_engine_active_time_percent] td[data-value]').evaluateAll((els) =>
      els.map((e) => [e.closest('tr').dataset.field.replace('_engine_active_time_percent', ''), Number(e.dataset.value)]));
    assert.equal(summary.length, 5, 'five engine active-time percents in the Summary');
    const tensor = line.find((l) => l.engine === 'tensor');
    assert.match(tensor.text, /^Tensor 41\.6\d % \(busiest\)$/, `fused_bf16_s512: Tensor ≈ 41.67 % (the export), the busiest (${tensor.text})`);
    const rowsBusy = fitted.busy.filter((r) => r.kind === 'engine');
    // The Selection over the whole execution (through the URL, as a shared link sets it).
    const hash = await page.evaluate(() => location.hash);
    await page.evaluate(([h, t]) => { location.hash = `${h.replace(/&range=[^&]*/, '')}&range=0,${Math.ceil(t)}`; }, [hash, total]);
    await page.waitForFunction((t) => Number(document.querySelector('[data-testid=selection-summary]')?.dataset.end) === Math.ceil(t) && document.querySelector('[data-testid=selection-engines]') !== null, total);
    const sel = await page.$$eval('[data-testid=selection-engines] tr[data-engine]', (trs) => trs.map((t) => ({ engine: t.dataset.engine, pcore: t.dataset.pcore, busy: Number(t.dataset.busyNs) })));
    assert.ok(rowsBusy.length >= 10, `engine rows on both cores (${rowsBusy.length})`);
    for (const r of rowsBusy) {
      const engine = Object.entries(names).find(([, v]) => r.label.endsWith(` ${v}`))?.[0];
      const s = sel.find((x) => x.engine === engine && x.pcore === String(r.pcore));
      const want = s === undefined ? 0 : (100 * s.busy) / total;
      assert.ok(Math.abs(r.percent - want) < 0.05, `${r.label}: row ${r.percent.toFixed(3)} % vs Selection ${want.toFixed(3)} % (that core)`);
    }
    // At Fit the line over all cores is the Summary itself; the Selection's "all cores" busy (the
    // core's crate::range, the Summary's definition over table rows) differs from it by under 1 ns
    // per instruction: table times are whole ns (each end floored on its own), the Summary's ps.
    const counts = Object.fromEntries(await page.$$eval('[data-testid=summary-groups] tr[data-field$=_engine_instruction_count] td[data-value]', (els) =>
      els.map((e) => [e.closest('tr').dataset.field.replace('_engine_instruction_count', ''), Number(e.dataset.value)])));
    for (const [engine, frac] of summary) {
      const x = line.find((l) => l.engine === engine);
      assert.ok(x !== undefined, `the busy line names ${engine}`);
      const all = sel.find((s) => s.engine === engine && s.pcore === 'all');
      assert.ok(all !== undefined, `the Selection has ${engine} over all cores`);
      assert.ok(Math.abs(x.pct - frac * 100) < 1e-9, `${engine}: timeline ${x.pct} % = Summary ${frac * 100} % at Fit`);
      const selPct = (100 * all.busy) / total;
      const diffNs = (Math.abs(selPct - frac * 100) / 100) * total;
      assert.ok(counts[engine] > 0 && diffNs <= counts[engine], `${engine}: Selection ${selPct.toFixed(3)} % vs Summary ${(frac * 100).toFixed(3)} % (${diffNs.toFixed(1)} ns apart over ${counts[engine]} instructions)`);
    }
    await page.evaluate(([h]) => { location.hash = h; }, [hash]);
    await canvas.focus();
    await shoot(page, 'timeline');

    // Arrows: → picks a slice on the first row, → next on the row, ↓ the row below, ← back.
    await canvas.focus();
    await page.keyboard.press('ArrowRight');
    await page.waitForFunction(() => document.querySelector('[data-testid=timeline-canvas]')?.dataset.cursorTrack !== undefined);
    const at = async () => page.evaluate(() => {
      const d = document.querySelector('[data-testid=timeline-canvas]').dataset;
      return { track: Number(d.cursorTrack), k: Number(d.cursorK), label: d.cursorLabel, start: Number(d.cursorStart) };
    });
    const a0 = await at();
    const live = page.locator('[data-testid=timeline-live]');
    assert.equal(await live.getAttribute('aria-live'), 'polite');
    assert.match(await live.innerText(), new RegExp(`^${a0.label}: .+, at .+ of .+ on this row`), 'the live region reads the selected slice');
    await page.keyboard.press('ArrowRight');
    const a1 = await at();
    assert.equal(a1.track, a0.track, '→ stays on the row');
    assert.equal(a1.k, a0.k + 1, '→ moves to the next slice');
    assert.ok(a1.start >= a0.start, 'later or equal start');
    await page.keyboard.press('ArrowDown');
    const a2 = await at();
    assert.notEqual(a2.track, a1.track, '↓ changes rows');
    assert.notEqual(a2.label, a1.label);
    await page.keyboard.press('ArrowUp');
    assert.equal((await at()).track, a1.track, '↑ comes back');
    await page.keyboard.press('ArrowLeft');
    const a3 = await at();
    assert.equal(a3.track, a1.track);
    assert.ok(a3.k < (await at()).k + 1, '← moves back');
    // Enter opens its details in the bottom panel.
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.querySelector('[data-testid=instruction-details] [data-field=start_ts]') !== null, null, { timeout: 10_000 });
    assert.equal(await page.locator('[data-testid=panel-tab-details]').getAttribute('aria-selected'), 'true');
    assert.match(await page.locator('[data-testid=instruction-details] .details-head').innerText(), new RegExp(`^${a3.label} · instruction ${a3.k + 1} of`));

    // Tooltip: hover the selected slice, then a key zoom → gone; hover again, then a wheel scroll → gone.
    // The page's layout can still move (the details panel settling): take the slice's position in
    // page coordinates from the last frame drawn, come in from outside the canvas so a mousemove
    // fires, and take the position again if the pointer did not land on the canvas.
    const tooltipShown = () => page.evaluate(() => !document.querySelector('[data-testid=timeline-panel] [data-testid=timeline-tooltip]').hidden);
    const hoverSelected = async () => {
      for (let attempt = 0; attempt < 5; attempt++) {
        await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
        const p = await page.evaluate(() => {
          const c = document.querySelector('[data-testid=timeline-canvas]');
          const d = c.dataset;
          const p = window.__neuronscope.timeline('timeline-canvas');
          const lbl = d.cursorLabel;
          const row = p.rows.find((r) => r.label === lbl || `sg0${r.pcore} ${r.label}` === lbl);
          const bb = c.getBoundingClientRect();
          return { left: bb.x, top: bb.y, x: bb.x + p.gutter + (Number(d.cursorStart) - p.viewStart) / p.nsPerPx + 1, y: bb.y + row.top + row.height / 2 };
        });
        await page.mouse.move(p.left - 5, p.top - 5);
        await page.mouse.move(p.x, p.y);
        const onCanvas = await page.evaluate(([x, y]) => document.elementFromPoint(x, y)?.dataset.testid === 'timeline-canvas', [p.x, p.y]);
        if (!onCanvas) continue;
        await page.waitForFunction(() => !document.querySelector('[data-testid=timeline-panel] [data-testid=timeline-tooltip]').hidden, null, { timeout: 5_000 });
        return;
      }
      assert.fail(`the selected slice stayed off the canvas (tooltip shown: ${await tooltipShown()})`);
    };
    await hoverSelected();
    await page.keyboard.press('w');
    assert.equal(await page.locator('[data-testid=timeline-panel] [data-testid=timeline-tooltip]').isHidden(), true, 'no tooltip after W');
    await hoverSelected();
    await page.evaluate(() => {
      const wrap = document.querySelector('[data-testid=timeline-canvas]').parentElement;
      wrap.scrollTop += 40;
    });
    await page.waitForFunction(() => document.querySelector('[data-testid=timeline-panel] [data-testid=timeline-tooltip]').hidden, null, { timeout: 2_000 });

    await showView(page, 'compare');
    await page.click('[data-testid=conform-run]');
    await page.waitForSelector('[data-testid=conform-verdict]', { timeout: 60_000 });
    await shoot(page, 'compare');
    assert.deepEqual(foreignRequests(b.requests, server.origin), []);
    assert.deepEqual(b.errors, []);
  } finally {
    await b.close();
  }
});

test('System view: "Time span" and what Fit shows are named and agree; the jobs panel names the profile', async () => {
  const b = await launch();
  try {
    const { page } = b;
    await page.setViewportSize({ width: 1440, height: 900 });
    await openFolder(page, sample(CAPTURE));
    await page.click('[data-testid=open-system]');
    await page.waitForFunction(() => document.body.classList.contains('has-system') && document.body.dataset.state === 'ready', null, { timeout: 120_000 });
    await waitReady(page);
    await showView(page, 'system');
    const canvas = page.locator('[data-testid=system-canvas]');
    await canvas.focus();
    await page.keyboard.press('0');
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const extent = async (a, b) => { const p = await timelineProbe(page, 'system-canvas'); return p[b] - p[a]; };
    const fit = await extent('fitStart', 'fitEnd');
    const shown = await extent('viewStart', 'viewEnd');
    await shoot(page, 'system');
    // The page was resized (1000 px and back): a fitted view fits again rather than keeping its scale.
    const after = await extent('viewStart', 'viewEnd');
    assert.ok(Math.abs(after - shown) <= shown * 1e-6, `still fitted after a resize (${after} vs ${shown})`);
    await showView(page, 'summary');
    const fitCard = Number(await page.locator('[data-testid=system-fit-span]').getAttribute('data-value'));
    assert.ok(fitCard > 0 && Math.abs(fitCard - fit) <= 1, `"Events span (what Fit shows)" ${fitCard} = the Fit window ${fit}`);
    assert.ok(shown >= fit && shown <= fit * 1.03, `Fit shows the events span with a small margin (${shown} vs ${fit})`);
    const span = Number(await page.locator('[data-testid=system-span]').getAttribute('data-value'));
    assert.ok(span >= fit, 'the whole span (samples included) is at least the events span');
    assert.match(await page.locator('.card', { has: page.locator('[data-testid=system-span]') }).innerText(), /first to last event or CPU \/ memory sample/);
    const jobs = await page.locator('[data-testid=job]').allInnerTexts();
    const sys = jobs.find((j) => /system trace/.test(j));
    assert.ok(sys !== undefined && sys.startsWith('i-0af76a70a6d3864dd_pid_713479 system trace: done'), `system job named after its profile: ${jobs.join(' | ')}`);
    assert.ok(!jobs.some((j) => /^trace_info\.pb/.test(j)), 'no job called trace_info.pb');
    assert.deepEqual(foreignRequests(b.requests, server.origin), []);
    assert.deepEqual(b.errors, []);
  } finally {
    await b.close();
  }
});

test('demo: the Summary total time is the window Fit shows on the timeline', async () => {
  const b = await launch();
  try {
    const { page } = b;
    await page.goto(`${server.origin}/?demo`);
    await waitReady(page);
    const total = Number(await page.locator('[data-testid=total-time]').getAttribute('data-value'));
    assert.ok(total > 0, 'the demo has a total time');
    assert.match(await page.locator('.card', { has: page.locator('[data-testid=total-time]') }).innerText(), /what Fit shows/);
    await showView(page, 'timeline');
    const c = page.locator('[data-testid=timeline-canvas]');
    await c.focus();
    await page.keyboard.press('0');
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const d = await timelineProbe(page);
    assert.equal(Number(d.fitStart), 0, 'Fit starts at the execution start');
    assert.ok(Math.abs(Number(d.fitEnd) - total) < 1e-6 * total, `Fit ends at total_time (${d.fitEnd} vs ${total})`);
    assert.ok(Number(d.viewStart) <= 0 && Number(d.viewEnd) >= total, 'the fitted view holds the whole execution');
    assert.ok(Number(d.viewEnd) - Number(d.viewStart) <= total * 1.05, 'and not much more');
  } finally {
    await b.close();
  }
});
