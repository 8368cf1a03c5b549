// Crash containment: the core's test hook (`?fault=panic|alloc&fault-on=<NTFF path part>&fault-step=…`,
// see www/src/protocol.ts FaultSpec) breaks the wasm instance while one device profile is processed.
// The page must name the file and the step (with the panic's message and location), replace the
// worker, and keep the other profile of the same folder usable: timeline drawn, Parquet download
// intact. Needs `npm run build` first and ../shared/samples.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { appWorker, foreignRequests, launch, sample, showView, timelineColouredPixels, waitReady, zipEntryNames, useServer } from './harness.mjs';

const server = useServer();

/** Two paired device profiles (NEFF + NTFF each), 130 KB in all. */
const DIR = 'cs149-Ericcsr/part1';

/** Opens the page with the fault hook and picks DIR; resolves when the first processing settled. */
async function open(b, query) {
  const { page } = b;
  const workers = [];
  page.on('worker', (w) => {
    if (!appWorker(w)) return;
    const entry = { closed: false };
    workers.push(entry);
    w.on('close', () => (entry.closed = true));
  });
  await page.goto(`${server.origin}/?${query}`);
  await page.waitForFunction(() => document.body.dataset.state === 'idle', null, { timeout: 30_000 });
  await page.setInputFiles('[data-testid=folder-input]', sample(DIR));
  await page.waitForFunction(() => ['ready', 'error'].includes(document.body.dataset.state ?? ''), null, { timeout: 120_000 });
  return workers;
}

function device(page, name) {
  return page.locator('[data-testid=device]').filter({ hasText: name });
}

async function errorBox(page) {
  const box = page.locator('[data-testid=error]');
  return {
    text: await box.innerText(),
    step: await box.getAttribute('data-crash-step'),
    file: await box.getAttribute('data-crash-file'),
  };
}

async function restarts(page) {
  return page.evaluate(() => document.body.dataset.workerRestarts ?? '0');
}

/** The shown profile draws its timeline and its Instruction.parquet download holds `count` rows with engines. */
async function assertUsable(page, label) {
  const count = Number(await page.locator('[data-testid=instruction-count]').getAttribute('data-value'));
  assert.ok(count > 0, `${label}: instruction count ${count} > 0`);
  const coloured = await timelineColouredPixels(page);
  assert.ok(coloured > 500, `${label}: timeline draws instruction slices (${coloured} coloured pixels)`);
  await showView(page, 'tables');
  await page.selectOption('[data-testid=table-select]', 'Instruction');
  await page.waitForFunction(() => {
    const info = document.querySelector('[data-testid=table-info]');
    return document.querySelector('[data-testid=table-select]')?.value === 'Instruction' && info?.dataset.rows !== undefined && info.textContent !== 'loading…';
  });
  assert.equal(Number(await page.locator('[data-testid=table-info]').getAttribute('data-rows')), count, `${label}: Instruction table rows`);
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=download-parquet]')]);
  assert.match(download.suggestedFilename(), /^[^/]+-Instruction\.parquet$/, 'named <profile>-Instruction.parquet');
  const bytes = readFileSync(await download.path());
  const buf = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
  assert.equal(Number(parquetMetadata(buf).num_rows), count, `${label}: Parquet num_rows`);
  const rows = await parquetReadObjects({ file: buf, columns: ['engine'], compressors });
  assert.equal(rows.length, count, `${label}: Parquet rows read back`);
  assert.ok(rows.every((r) => typeof r.engine === 'string' && r.engine.length > 0), `${label}: every row has an engine`);
  return count;
}

test('a Rust panic while processing one profile: file, step and panic location shown, worker restarted, the other profile renders and downloads', async () => {
  const b = await launch();
  try {
    const { page } = b;
    const workers = await open(b, 'fault=panic&fault-on=stream_256k_fd2k.ntff');
    // The first paired device (fd1k) opens by itself and is not affected by the hook.
    assert.equal(await page.evaluate(() => document.body.dataset.state), 'ready');
    assert.equal(await device(page, 'stream_256k_fd1k').count(), 1);
    assert.equal(await device(page, 'stream_256k_fd2k').count(), 1);
    const before = await assertUsable(page, 'fd1k before the crash');

    for (let round = 1; round <= 2; round++) {
      // Processing fd2k panics in the core, mid-decode (from its first progress report).
      await device(page, 'stream_256k_fd2k').click();
      await page.waitForFunction(() => document.body.dataset.state === 'error', null, { timeout: 60_000 });
      const err = await errorBox(page);
      assert.match(err.text, /stream_256k_fd2k\.ntff/, `round ${round}: the error names the file: ${err.text}`);
      assert.match(err.text, /step “process device stream_256k_fd2k/, `round ${round}: the error names the step: ${err.text}`);
      assert.match(err.text, /panicked at crate\/src\/wasm\.rs:\d+:\d+: injected fault \(test hook arm_test_fault\)/, `round ${round}: panic message and location: ${err.text}`);
      assert.match(err.step ?? '', /^process device stream_256k_fd2k of profile .*\(NTFF, /, `round ${round}: data-crash-step ${err.step}`);
      assert.match(err.file ?? '', /(^|\/)stream_256k_fd2k\.ntff$/, `round ${round}: data-crash-file ${err.file}`);
      assert.doesNotMatch(err.text, /unreachable|reload the page|recursive use/, `round ${round}: no bare trap, no dead session: ${err.text}`);
      assert.equal(await restarts(page), String(round), `round ${round}: the worker was restarted`);

      // The other profile of the same folder is processed by the new worker: timeline, table, Parquet.
      await device(page, 'stream_256k_fd1k').click();
      await waitReady(page);
      assert.equal(await assertUsable(page, `fd1k after crash ${round}`), before, `round ${round}: the same instruction count as before the crash`);
    }

    // Each crash replaced the worker: three started, the two broken ones terminated.
    assert.equal(workers.length, 3, 'one worker at load, one per restart');
    assert.deepEqual(workers.map((w) => w.closed), [true, true, false], 'the crashed workers were terminated');
    assert.deepEqual(foreignRequests(b.requests, server.origin), [], 'no request left 127.0.0.1');
    assert.deepEqual(b.errors, [], 'no uncaught page errors');
  } finally {
    await b.close();
  }
});

test('an allocation failure (abort without a panic) in the first profile opened: named, worker restarted, the other profile still opens', async () => {
  const b = await launch();
  try {
    const { page } = b;
    const workers = await open(b, 'fault=alloc&fault-on=stream_256k_fd1k.ntff');
    // fd1k is opened by itself right after the scan, and fails.
    assert.equal(await page.evaluate(() => document.body.dataset.state), 'error');
    const err = await errorBox(page);
    assert.match(err.text, /stream_256k_fd1k\.ntff/, `the error names the file: ${err.text}`);
    assert.match(err.text, /step “process device stream_256k_fd1k/, `the error names the step: ${err.text}`);
    assert.match(err.text, /no panic message \(an abort such as a failed allocation; wasm memory was [\d.]+ [KMG]iB of 4 GiB\)/, `the abort is explained: ${err.text}`);
    assert.equal(await restarts(page), '1', 'the worker was restarted');

    // The picked files were registered with the new worker: fd2k opens without picking again.
    await device(page, 'stream_256k_fd2k').click();
    await waitReady(page);
    await assertUsable(page, 'fd2k after the crash');
    assert.equal(workers.length, 2, 'one worker at load, one restart');
    assert.deepEqual(foreignRequests(b.requests, server.origin), [], 'no request left 127.0.0.1');
    assert.deepEqual(b.errors, [], 'no uncaught page errors');
  } finally {
    await b.close();
  }
});

test('a panic in a table read of the profile on screen: named, worker restarted, the profile is processed again on its next use', async () => {
  const b = await launch();
  try {
    const { page } = b;
    const workers = await open(b, 'fault=panic&fault-step=table&fault-table=Instruction&fault-on=stream_256k_fd1k.ntff');
    assert.equal(await page.evaluate(() => document.body.dataset.state), 'ready');
    const count = Number(await page.locator('[data-testid=instruction-count]').getAttribute('data-value'));
    const offered = await page.$$eval('[data-testid=table-select] option', (os) => os.map((o) => o.value));
    assert.ok(offered.includes('Instruction') && offered.length > 2, `tables offered: ${offered.join(', ')}`);

    // The Parquet export of Instruction panics in the core.
    await showView(page, 'tables');
    await page.selectOption('[data-testid=table-select]', 'Instruction');
    await page.click('[data-testid=download-parquet]');
    await page.waitForFunction(() => document.body.dataset.state === 'error', null, { timeout: 60_000 });
    const err = await errorBox(page);
    assert.match(err.text, /^Parquet export of Instruction failed: the wasm core crashed in step “table read Instruction \(Parquet\)” on part1\/stream_256k_fd1k\.ntff: panicked at crate\/src\/wasm\.rs:\d+:\d+: injected fault/, err.text);
    assert.equal(err.step, 'table read Instruction (Parquet)');
    assert.match(err.file ?? '', /(^|\/)stream_256k_fd1k\.ntff$/);
    assert.equal(await restarts(page), '1', 'the worker was restarted');

    // The timeline on screen stays; the new worker processes fd1k again for the zip of every table.
    assert.ok((await timelineColouredPixels(page)) > 500, 'the timeline is still drawn');
    await showView(page, 'tables');
    const [zipDl] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=download-all]')]);
    const names = zipEntryNames(readFileSync(await zipDl.path())).map((n) => n.replace(/^.*\//, '')).sort();
    assert.deepEqual(names, offered.map((t) => `${t}.parquet`).sort(), 'the zip holds every table, read from the restarted worker');
    // Row pages of the same profile read from the new worker too.
    await page.selectOption('[data-testid=table-select]', 'Instruction');
    await page.waitForFunction(() => document.querySelector('[data-testid=table-info]')?.dataset.rows !== undefined);
    assert.equal(Number(await page.locator('[data-testid=table-info]').getAttribute('data-rows')), count, 'Instruction rows after the restart');
    assert.equal(workers.length, 2, 'one worker at load, one restart');
    assert.deepEqual(foreignRequests(b.requests, server.origin), [], 'no request left 127.0.0.1');
    assert.deepEqual(b.errors, [], 'no uncaught page errors');
  } finally {
    await b.close();
  }
});

test('a panic in a column read while the timeline is drawn (as a 1 GB NTFF does): the crash, not a lost sibling read, is shown; the other profile renders', async () => {
  const b = await launch();
  try {
    const { page } = b;
    const workers = await open(b, 'fault=panic&fault-step=columns&fault-table=Instruction&fault-on=stream_256k_fd2k.ntff');
    assert.equal(await page.evaluate(() => document.body.dataset.state), 'ready');
    const before = Number(await page.locator('[data-testid=instruction-count]').getAttribute('data-value'));

    // fd2k processes fine; the timeline's Instruction column read (one of several in flight) panics.
    await device(page, 'stream_256k_fd2k').click();
    await page.waitForFunction(() => document.body.dataset.state === 'error', null, { timeout: 60_000 });
    const err = await errorBox(page);
    assert.match(err.text, /^The timeline could not be drawn: the wasm core crashed in step “table read Instruction \(\d+ columns\)” on part1\/stream_256k_fd2k\.ntff: panicked at crate\/src\/wasm\.rs:\d+:\d+: injected fault/, err.text);
    assert.match(err.step ?? '', /^table read Instruction \(\d+ columns\)$/);
    assert.equal(await restarts(page), '1', 'the worker was restarted');

    await device(page, 'stream_256k_fd1k').click();
    await waitReady(page);
    assert.equal(await assertUsable(page, 'fd1k after the crash'), before, 'the same instruction count as before the crash');
    assert.equal(workers.length, 2, 'one worker at load, one restart');
    assert.deepEqual(foreignRequests(b.requests, server.origin), [], 'no request left 127.0.0.1');
    assert.deepEqual(b.errors, [], 'no uncaught page errors');
  } finally {
    await b.close();
  }
});
