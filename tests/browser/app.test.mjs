// End to end on real captures: pick a sample folder through the webkitdirectory input in headless
// Chromium, wait for the worker to process it, and check what the user sees against AWS's own JSON
// export of the same capture. Needs `npm run build` first and ../shared/samples.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import {
  SHOTS,
  foreignRequests,
  fullJsonExport,
  jsonInstructionCount,
  launch,
  requireBuild,
  sample,
  serve,
  showView,
  timelineColouredPixels,
  timelineProbe,
  waitReady,
  zipEntryNames,
} from './harness.mjs';

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

async function instructionCountShown(page) {
  return Number(await page.locator('[data-testid=instruction-count]').getAttribute('data-value'));
}

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

test('fused_bf16_s512: Device profile, paired, counts equal the JSON export, Parquet download, no foreign request', async () => {
  const dir = sample('allenkchau-trainium-kernel-fusion/profiling/artifacts/fused_bf16_s512');
  const expected = jsonInstructionCount(await fullJsonExport(dir));
  assert.ok(expected > 0, 'the JSON export lists instructions');

  const b = await launch();
  try {
    const { page } = b;
    await openFolder(page, dir);

    const profiles = page.locator('[data-testid=profile]');
    assert.equal(await profiles.count(), 1, 'one profile in the folder');
    assert.equal(await profiles.first().getAttribute('data-profile-type'), 'Device');
    const devices = profiles.first().locator('[data-testid=device][data-pairing]');
    const ntffDevice = devices.filter({ hasText: 'fused_exec_2' });
    assert.equal(await ntffDevice.count(), 1, 'the NTFF is listed as a device');
    assert.equal(await ntffDevice.getAttribute('data-pairing'), 'Paired');

    assert.equal(await instructionCountShown(page), expected, 'instruction count shown = instruction rows of the JSON export');

    const coloured = await timelineColouredPixels(page);
    assert.ok(coloured > 500, `timeline draws instruction slices (${coloured} coloured pixels)`);

    // Hover and click a slice: the details panel lists the instruction's fields.
    await showView(page, 'timeline');
    const canvas = page.locator('[data-testid=timeline-canvas]');
    // The Summary groups above may push the canvas below the fold: clicks outside the viewport do nothing.
    await canvas.scrollIntoViewIfNeeded();
    const box = await canvas.boundingBox();
    assert.ok(box !== null);
    const hit = await page.evaluate(() => {
      // Find a coloured pixel in the first row band and return its CSS coordinates.
      const c = document.querySelector('[data-testid=timeline-canvas]');
      const ctx = c.getContext('2d');
      const dpr = c.width / c.clientWidth;
      const { data, width, height } = ctx.getImageData(0, 0, c.width, c.height);
      for (let y = Math.floor(30 * dpr); y < height; y += 4) {
        // Right of the label gutter (its width is on the canvas).
        for (let x = Math.floor((Number(c.dataset.gutter) + 5) * dpr); x < width; x += 2) {
          const i = (y * width + x) * 4;
          if (Math.max(data[i], data[i + 1], data[i + 2]) - Math.min(data[i], data[i + 1], data[i + 2]) > 40) {
            return { x: x / dpr, y: y / dpr };
          }
        }
      }
      return null;
    });
    assert.ok(hit !== null, 'a slice pixel to click');
    await page.mouse.move(box.x + hit.x, box.y + hit.y);
    await page.mouse.down();
    await page.mouse.up();
    await page.waitForSelector('[data-testid=instruction-details] [data-field=start_ts]');
    assert.ok(await page.locator('[data-testid=instruction-details] [data-field=engine]').count() === 1, 'details show the engine');

    // The Instruction table in the browser and its Parquet download have that many rows.
    assert.equal(await selectTable(page, 'Instruction'), expected, 'Instruction table rows');
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=download-parquet]')]);
    assert.equal(download.suggestedFilename(), 'fused_exec_2-Instruction.parquet', 'downloads are named <profile>-<table>.parquet');
    const bytes = readFileSync(await download.path());
    const buf = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
    const meta = parquetMetadata(buf);
    assert.equal(Number(meta.num_rows), expected, 'Parquet num_rows');
    const rows = await parquetReadObjects({ file: buf, columns: ['start_ts', 'engine'], compressors });
    assert.equal(rows.length, expected, 'Parquet rows read back');
    assert.ok(rows.every((r) => typeof r.engine === 'string' && r.engine.length > 0), 'every row has an engine');

    // "Download all": a zip with one <Table>.parquet per table offered in the browser.
    const offered = await page.$$eval('[data-testid=table-select] option', (os) => os.map((o) => o.value));
    const [zipDl] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=download-all]')]);
    assert.match(zipDl.suggestedFilename(), /\.zip$/);
    const names = zipEntryNames(readFileSync(await zipDl.path()));
    const tablesInZip = names.map((n) => n.replace(/^.*\//, '')).sort();
    assert.deepEqual(tablesInZip, offered.map((t) => `${t}.parquet`).sort(), 'zip holds every offered table as Parquet');

    await page.screenshot({ path: join(SHOTS, 'fused_bf16_s512.png'), fullPage: true });

    assert.deepEqual(foreignRequests(b.requests, server.origin), [], 'no request left 127.0.0.1');
    assert.ok(b.requests.some((u) => u.endsWith('.wasm')), 'the wasm core was loaded from the local server');
    assert.deepEqual(b.errors, [], 'no uncaught page errors');
  } finally {
    await b.close();
  }
});

test('KevGomes capture directory: System+Device, paired, Instruction rows = count shown, timeline drawn', async () => {
  const dir = sample('KevGomes-nki-moe-megakernel/output/i-0af76a70a6d3864dd_pid_713479');
  const b = await launch();
  try {
    const { page } = b;
    await openFolder(page, dir);

    const profile = page.locator('[data-testid=profile]').first();
    assert.equal(await profile.getAttribute('data-profile-type'), 'System+Device');
    const ntffDevice = profile.locator('[data-testid=device]').filter({ hasText: 'profile_exec_2' });
    assert.equal(await ntffDevice.count(), 1, 'the NTFF is listed as a device');
    assert.equal(await ntffDevice.getAttribute('data-pairing'), 'Paired');

    const count = await instructionCountShown(page);
    assert.ok(count > 0, `instruction count ${count} > 0`);
    assert.equal(await selectTable(page, 'Instruction'), count, 'Instruction table rows = instruction count shown');
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=download-parquet]')]);
    const bytes = readFileSync(await download.path());
    const meta = parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
    assert.equal(Number(meta.num_rows), count, 'Instruction.parquet rows = instruction count shown');

    const coloured = await timelineColouredPixels(page);
    assert.ok(coloured > 500, `timeline draws instruction slices (${coloured} coloured pixels)`);

    await page.screenshot({ path: join(SHOTS, 'kevgomes.png'), fullPage: true });
    assert.deepEqual(foreignRequests(b.requests, server.origin), [], 'no request left 127.0.0.1');
    assert.deepEqual(b.errors, [], 'no uncaught page errors');
  } finally {
    await b.close();
  }
});

test('demo capture (?demo) renders a timeline', async () => {
  const b = await launch();
  try {
    const { page } = b;
    await page.goto(`${server.origin}/?demo`);
    await waitReady(page);
    assert.ok((await instructionCountShown(page)) > 0, 'the demo has instructions');
    const coloured = await timelineColouredPixels(page);
    assert.ok(coloured > 500, `timeline draws instruction slices (${coloured} coloured pixels)`);

    // Zoom in around the middle with Ctrl+wheel (the plain wheel scrolls): the view changes and still draws.
    await showView(page, 'timeline');
    const canvas = page.locator('[data-testid=timeline-canvas]');
    await canvas.scrollIntoViewIfNeeded();
    const box = await canvas.boundingBox();
    await page.mouse.move(box.x + box.width * 0.6, box.y + 60);
    const scaleBefore = (await timelineProbe(page)).nsPerPx;
    await page.keyboard.down('Control');
    for (let i = 0; i < 5; i++) await page.mouse.wheel(0, -240);
    await page.keyboard.up('Control');
    await page.waitForFunction((b) => window.__neuronscope.timeline('timeline-canvas').nsPerPx < b, scaleBefore);
    const scaleAfter = (await timelineProbe(page)).nsPerPx;
    assert.ok(scaleAfter < scaleBefore / 2, `wheel zoomed in (${scaleBefore} → ${scaleAfter} ns/px)`);
    assert.ok((await timelineColouredPixels(page)) > 0, 'still drawn after zoom');

    await page.screenshot({ path: join(SHOTS, 'demo.png'), fullPage: true });
    assert.deepEqual(foreignRequests(b.requests, server.origin), [], 'no request left 127.0.0.1');
    assert.deepEqual(b.errors, [], 'no uncaught page errors');
  } finally {
    await b.close();
  }
});

test('dropping loose files (NEFF + NTFF) opens the same profile', async () => {
  const dir = sample('allenkchau-trainium-kernel-fusion/profiling/artifacts/fused_bf16_s512');
  const expected = jsonInstructionCount(await fullJsonExport(dir));
  const files = ['fused.neff', 'fused_exec_2.ntff'].map((name) => ({ name, b64: readFileSync(join(dir, name)).toString('base64') }));
  const b = await launch();
  try {
    const { page } = b;
    await page.goto(`${server.origin}/`);
    await page.waitForFunction(() => document.body.dataset.state === 'idle', null, { timeout: 30_000 });
    const dt = await page.evaluateHandle((list) => {
      const t = new DataTransfer();
      for (const f of list) t.items.add(new File([Uint8Array.from(atob(f.b64), (c) => c.charCodeAt(0))], f.name));
      return t;
    }, files);
    await page.dispatchEvent('body', 'drop', { dataTransfer: dt });
    await waitReady(page);
    assert.equal(await page.locator('[data-testid=profile]').first().getAttribute('data-profile-type'), 'Device');
    assert.equal(await page.locator('[data-testid=device]').first().getAttribute('data-pairing'), 'Paired');
    assert.equal(await instructionCountShown(page), expected);
    assert.deepEqual(foreignRequests(b.requests, server.origin), [], 'no request left 127.0.0.1');
    assert.deepEqual(b.errors, [], 'no uncaught page errors');
  } finally {
    await b.close();
  }
});
