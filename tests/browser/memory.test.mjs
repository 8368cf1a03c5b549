// Memory view end to end: a PyTorch memory snapshot written at test time by Python's own pickle
// (crate/tests/fixtures/make_snapshots.py: a small caching-allocator simulation that also records the
// ground truth) is picked as a folder, listed in the profile list, opened in the Memory view; the peak
// shown must equal the simulation's peak, hovering an allocation must show its stack frames, and the
// OOM entries the fixture ends with must be marked. A cut copy of the snapshot, and random bytes
// named as one, show their error on their sidebar entry (new-user trial: a green "✓ allocator
// snapshot" there, the error only in a clipped status line). Needs `npm run build` first and python3.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO, SHOTS, foreignRequests, launch, requireBuild, serve, waitReady } from './harness.mjs';

const TMP = join(REPO, 'tests', '.tmp', 'memory');
const GEN = join(TMP, 'gen');
const FOLDER = join(TMP, 'capture');
/** The snapshot cut in half; random bytes named as a snapshot. */
const CUT = join(TMP, 'cut');
const NOISE = join(TMP, 'noise');
let server;
let expected;

before(async () => {
  requireBuild();
  mkdirSync(SHOTS, { recursive: true });
  rmSync(TMP, { recursive: true, force: true });
  mkdirSync(FOLDER, { recursive: true });
  execFileSync('python3', [join(REPO, 'crate', 'tests', 'fixtures', 'make_snapshots.py'), GEN], { stdio: 'inherit' });
  expected = JSON.parse(readFileSync(join(GEN, 'expected.json'), 'utf8'));
  copyFileSync(join(GEN, 'snapshot_p4.pickle'), join(FOLDER, 'memory_snapshot_rank0.pickle'));
  const whole = readFileSync(join(GEN, 'snapshot_p4.pickle'));
  mkdirSync(CUT, { recursive: true });
  writeFileSync(join(CUT, 'memory_snapshot_rank0.pickle'), whole.subarray(0, Math.floor(whole.length / 2)));
  mkdirSync(NOISE, { recursive: true });
  let x = 777;
  const noise = Buffer.alloc(5000, 0);
  for (let i = 0; i < noise.length; i++) {
    x = (Math.imul(x, 1_103_515_245) + 12345) >>> 0;
    noise[i] = (x >>> 16) | 0x80;
  }
  noise[0] = 0xb1;
  writeFileSync(join(NOISE, 'memory_snapshot_rank0.pickle'), noise);
  server = await serve();
});

after(async () => {
  await server?.close();
});

test('memory snapshot: listed, Memory view opens, peak = simulation, hover shows the stack, OOM marked, segments at a time', async () => {
  const b = await launch();
  try {
    const { page } = b;
    await page.goto(`${server.origin}/`);
    await page.waitForFunction(() => document.body.dataset.state === 'idle', null, { timeout: 30_000 });
    await page.setInputFiles('[data-testid=folder-input]', FOLDER);
    await waitReady(page);

    // Listed in the profile list; the folder has nothing else, so it opens by itself — click anyway.
    const entry = page.locator('[data-testid=memory-snapshot]');
    assert.equal(await entry.count(), 1, 'one memory snapshot listed');
    assert.match(await entry.innerText(), /memory_snapshot_rank0\.pickle/);
    assert.match(await entry.innerText(), /rank 0/);
    await entry.click();
    await page.waitForFunction(() => document.body.classList.contains('has-memory') && document.body.dataset.state === 'ready', null, { timeout: 60_000 });
    await waitReady(page);
    await page.locator('[data-testid=memory-canvas]').scrollIntoViewIfNeeded();

    // Device 0, then device 1: the peak shown equals the simulation's peak allocated bytes.
    for (const dev of expected.devices) {
      await page.selectOption('[data-testid=memory-device]', String(dev.device));
      await page.waitForFunction((d) => document.querySelector('[data-testid=memory-device]')?.value === String(d), dev.device);
      const peak = Number(await page.locator('[data-testid=memory-peak]').getAttribute('data-value'));
      assert.equal(peak, dev.peak_allocated_bytes, `device ${dev.device}: peak allocated shown = simulation peak`);
      const reserved = Number(await page.locator('[data-testid=memory-peak-reserved]').getAttribute('data-value'));
      assert.equal(reserved, dev.peak_reserved_bytes, `device ${dev.device}: peak reserved shown = simulation peak`);
      const events = Number(await page.locator('[data-testid=memory-events]').getAttribute('data-value'));
      assert.equal(events, dev.events, `device ${dev.device}: trace entries`);
      // One OOM per device (the fixture ends every trace with one).
      assert.equal(await page.locator('[data-testid=memory-oom]').count(), 1, `device ${dev.device}: OOM marker listed`);
    }
    assert.match(await page.locator('[data-testid=memory-oom]').innerText(), /OOM at .*64 GiB requested/);

    // Allocations are drawn; hover the largest one → its stack frames appear as file:line function.
    await page.waitForFunction(() => (document.querySelector('[data-testid=memory-canvas]')?.dataset.probe ?? '') !== '');
    const probe = JSON.parse(await page.locator('[data-testid=memory-canvas]').getAttribute('data-probe'));
    const canvas = page.locator('[data-testid=memory-canvas]');
    const box = await canvas.boundingBox();
    assert.ok(Number(await canvas.getAttribute('data-rects')) > 0, 'allocation rectangles drawn');
    await page.mouse.move(box.x + probe.x, box.y + probe.y);
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=memory-frame]').length > 0, null, { timeout: 10_000 });
    const alloc = page.locator('[data-testid=memory-alloc]');
    assert.equal(Number(await alloc.getAttribute('data-size')), probe.size, 'the hovered allocation is the probed one');
    const frames = await page.locator('[data-testid=memory-frame]').allInnerTexts();
    assert.ok(frames.length >= 2 && frames.length <= 7, `fixture stacks have 2-7 frames (got ${frames.length})`);
    for (const f of frames) assert.match(f, /^(\/home\/ubuntu\/train\/|\/opt\/venv\/|\?\?).*:\d+ (forward|_call_impl|attention|matmul|empty|backward|step)\b/, `frame text ${f}`);

    // Segment map at a chosen time: click in the chart → segments with live blocks.
    await page.mouse.click(box.x + Number(await canvas.getAttribute('data-gutter')) + 200, box.y + 150);
    await page.waitForFunction(() => Number(document.querySelector('[data-testid=memory-segments]')?.dataset.segments ?? 0) > 0);
    assert.match(await page.locator('[data-testid=memory-state]').innerText(), /segments .* reserved.*live allocations/);

    // Zoom in with the wheel: the view narrows and still draws.
    const before = Number(await canvas.getAttribute('data-ns-per-px'));
    await page.mouse.move(box.x + box.width / 2, box.y + 150);
    await page.mouse.wheel(0, -600);
    await page.waitForFunction((b) => Number(document.querySelector('[data-testid=memory-canvas]')?.dataset.nsPerPx) < b, before);

    await page.screenshot({ path: join(SHOTS, 'memory.png'), fullPage: true });
    assert.deepEqual(foreignRequests(b.requests, server.origin), [], 'nothing leaves 127.0.0.1');
    assert.deepEqual(b.errors, [], 'no page errors');
  } finally {
    await b.close();
  }
});

/** Picks `folder` (a lone snapshot opens by itself) and waits for its entry to count an error. */
async function pickBroken(page, folder) {
  await page.goto(`${server.origin}/`);
  await page.waitForFunction(() => document.body.dataset.state === 'idle', null, { timeout: 30_000 });
  await page.setInputFiles('[data-testid=folder-input]', folder);
  await page.waitForFunction(() => ['ready', 'error'].includes(document.body.dataset.state ?? ''), null, { timeout: 60_000 });
  await page.waitForFunction(() => Number(document.querySelector('[data-testid=memory-snapshot]')?.dataset.errors ?? 0) > 0, null, { timeout: 30_000 });
  return page.locator('[data-testid=memory-snapshot]');
}

test('a broken memory snapshot: its sidebar entry shows the error, not a green ✓', async () => {
  const b = await launch();
  try {
    const { page } = b;
    // Cut in half: the decode keeps what it read and reports where the file ends.
    const entry = await pickBroken(page, CUT);
    assert.equal(await page.evaluate(() => document.body.dataset.state), 'ready', 'the part before the cut opens');
    assert.equal(await entry.locator('.pairing.ok').count(), 0, 'no "✓ allocator snapshot"');
    const status = entry.locator('[data-testid=memory-snapshot-status]');
    assert.match(await status.getAttribute('class') ?? '', /\bpairing bad\b/);
    const text = await status.innerText();
    assert.match(text, /^memory_snapshot_rank0\.pickle cannot be read in full \(what was read before the fault is shown\): .*truncated.*offset \d+/, text);
    assert.doesNotMatch(await entry.getAttribute('class') ?? '', /\bpaired\b/);
    // A file of no known format: already an error of the scan, marked the same way.
    const noise = await pickBroken(page, NOISE);
    assert.equal(await noise.locator('.pairing.ok').count(), 0, 'no "✓ allocator snapshot"');
    assert.match(await noise.locator('[data-testid=memory-snapshot-status]').innerText(), /^memory_snapshot_rank0\.pickle cannot be read in full/);
    assert.deepEqual(foreignRequests(b.requests, server.origin), [], 'nothing leaves 127.0.0.1');
    assert.deepEqual(b.errors, [], 'no page errors');
  } finally {
    await b.close();
  }
});
