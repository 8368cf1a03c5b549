// Tables stored on OPFS (www/src/opfs.ts, crate/src/store.rs): a processed profile's Parquet files
// are files of the worker's OPFS directory; the Parquet download is that file, the zip is streamed
// into one; "Clear stored profiles" deletes them; a profile opened again is not decoded again; the
// memory fallback (`?store=memory`, as where OPFS is missing) says its size limit before decoding.
// Needs `npm run build` first and ../shared/samples.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { foreignRequests, launch, sample, showView, waitReady, zipEntryNames, useServer } from './harness.mjs';

const server = useServer();

/** Two paired device profiles (NEFF + NTFF each), 130 KB in all. */
const DIR = 'cs149-Ericcsr/part1';

async function open(page, query = '') {
  await page.goto(`${server.origin}/${query}`);
  await page.waitForFunction(() => document.body.dataset.state === 'idle', null, { timeout: 30_000 });
  await page.setInputFiles('[data-testid=folder-input]', sample(DIR));
  await waitReady(page);
}

function device(page, name) {
  return page.locator('[data-testid=device]').filter({ hasText: name });
}

/** Files under the page's OPFS `neuronscope/` directory: [{dir, name, size}]. */
async function opfsFiles(page) {
  return page.evaluate(async () => {
    const out = [];
    const root = await navigator.storage.getDirectory();
    const top = await root.getDirectoryHandle('neuronscope', { create: true });
    for await (const [dir, h] of top.entries()) {
      if (h.kind !== 'directory') continue;
      for await (const [name, f] of h.entries()) {
        if (f.kind === 'file') out.push({ dir, name, size: (await f.getFile()).size });
      }
    }
    return out;
  });
}

async function downloadBytes(page, testid) {
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click(`[data-testid=${testid}]`)]);
  const b = readFileSync(await dl.path());
  return { name: dl.suggestedFilename(), buf: b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) };
}

async function jobs(page) {
  return page.$$eval('[data-testid=job]', (ls) => ls.map((l) => ({ state: l.dataset.state, file: l.dataset.file, rows: Number(l.dataset.rows), stored: Number(l.dataset.storedBytes), text: l.textContent })));
}

test('tables on OPFS: the download is the stored file, the zip holds every table, a reopened profile is not decoded again, Clear deletes the files', async () => {
  const b = await launch();
  try {
    const { page } = b;
    await open(page);
    assert.equal(await page.locator('[data-testid=jobs-store]').getAttribute('data-store'), 'opfs');
    const count = Number(await page.locator('[data-testid=instruction-count]').getAttribute('data-value'));
    assert.ok(count > 0);

    // The first device was decoded into OPFS files: one non-empty Parquet file per table.
    const files = (await opfsFiles(page)).filter((f) => f.size > 0);
    const tables = await page.$$eval('[data-testid=table-select] option', (os) => os.map((o) => o.value));
    assert.equal(files.length, tables.length, `one stored file per table (${tables.join(', ')})`);
    const [job] = await jobs(page);
    assert.equal(job.state, 'done');
    assert.match(job.file, /stream_256k_fd1k\.ntff$/);
    assert.equal(job.stored, files.reduce((n, f) => n + f.size, 0), 'the job reports the bytes stored on OPFS');
    assert.ok(job.rows >= count, `rows ${job.rows} ≥ instructions ${count}`);

    // Instruction.parquet: the stored file itself, every row readable.
    await showView(page, 'tables');
    await page.selectOption('[data-testid=table-select]', 'Instruction');
    await page.waitForFunction(() => document.querySelector('[data-testid=table-info]')?.dataset.rows !== undefined);
    const pq = await downloadBytes(page, 'download-parquet');
    assert.match(pq.name, /^[^/]+-Instruction\.parquet$/, 'named <profile>-Instruction.parquet');
    assert.equal(Number(parquetMetadata(pq.buf).num_rows), count);
    const rows = await parquetReadObjects({ file: pq.buf, columns: ['engine'], compressors });
    assert.equal(rows.length, count);
    assert.ok(files.some((f) => f.size === pq.buf.byteLength), 'the download has the size of a stored file');

    // The zip, streamed to OPFS by the core: every table, each entry the stored file's bytes.
    const zip = await downloadBytes(page, 'download-all');
    const names = zipEntryNames(Buffer.from(zip.buf)).map((n) => n.replace(/^.*\//, '')).sort();
    assert.deepEqual(names, tables.map((t) => `${t}.parquet`).sort());

    // The second device, then the first again: the first is served from its stored files (no new job).
    await device(page, 'stream_256k_fd2k').click();
    await waitReady(page);
    await device(page, 'stream_256k_fd1k').click();
    await waitReady(page);
    assert.equal((await jobs(page)).length, 2, 'two decodes: fd1k was not decoded again');
    assert.equal(Number(await page.locator('[data-testid=instruction-count]').getAttribute('data-value')), count);

    // Clear stored profiles: the files go; opening a profile decodes it again.
    await page.click('[data-testid=clear-stored]');
    await page.waitForFunction(() => /cleared/.test(document.querySelector('[data-testid=jobs-store]')?.textContent ?? ''));
    assert.deepEqual((await opfsFiles(page)).filter((f) => f.size > 0), [], 'no stored bytes left');
    // The profile on screen read from those files: the page closes it instead of failing later.
    assert.equal(await page.evaluate(() => document.body.classList.contains('has-result')), false, 'the open profile is closed');
    assert.match(await page.locator('#summary').innerText(), /Pick a profile/);
    await device(page, 'stream_256k_fd2k').click();
    await waitReady(page);
    assert.equal((await jobs(page)).length, 3, 'decoded again after the clear');
    assert.deepEqual(foreignRequests(b.requests, server.origin), [], 'no request left 127.0.0.1');
    assert.deepEqual(b.errors, [], 'no uncaught page errors');
  } finally {
    await b.close();
  }
});

test('without OPFS (?store=memory) the page says tables stay in wasm memory and the limit, before decoding; everything still works', async () => {
  const b = await launch();
  try {
    const { page } = b;
    await page.goto(`${server.origin}/?store=memory`);
    await page.waitForFunction(() => document.querySelector('[data-testid=jobs-store]')?.textContent?.includes('memory'), null, { timeout: 30_000 });
    const note = await page.locator('[data-testid=jobs-store]').innerText();
    assert.match(note, /wasm memory, which holds about 2 GB of NTFF per worker; larger files will fail/, note);
    await page.setInputFiles('[data-testid=folder-input]', sample(DIR));
    await waitReady(page);
    assert.equal(await page.locator('[data-testid=jobs-store]').getAttribute('data-store'), 'memory');
    const count = Number(await page.locator('[data-testid=instruction-count]').getAttribute('data-value'));
    await showView(page, 'tables');
    await page.selectOption('[data-testid=table-select]', 'Instruction');
    await page.waitForFunction(() => document.querySelector('[data-testid=table-info]')?.dataset.rows !== undefined);
    const pq = await downloadBytes(page, 'download-parquet');
    assert.equal(Number(parquetMetadata(pq.buf).num_rows), count);
    assert.deepEqual((await opfsFiles(page)).filter((f) => f.size > 0), [], 'nothing written to OPFS');
    assert.deepEqual(b.errors, [], 'no uncaught page errors');
  } finally {
    await b.close();
  }
});

test('a reload leaves no stored files behind: the previous page load\'s OPFS directory is deleted once its worker has let go', async () => {
  const b = await launch();
  try {
    const { page } = b;
    await open(page);
    assert.ok((await opfsFiles(page)).some((f) => f.size > 0), 'the decode stored files');
    await page.reload();
    await page.waitForFunction(() => document.body.dataset.state === 'idle', null, { timeout: 30_000 });
    // The old worker may still hold its files while the new page starts: they go within seconds.
    let left = [];
    for (let i = 0; i < 40; i++) {
      left = (await opfsFiles(page)).filter((f) => f.size > 0);
      if (left.length === 0) break;
      await page.waitForTimeout(500);
    }
    assert.deepEqual(left, [], 'no stored bytes left from the page before the reload');
    assert.deepEqual(b.errors, [], 'no uncaught page errors');
  } finally {
    await b.close();
  }
});
