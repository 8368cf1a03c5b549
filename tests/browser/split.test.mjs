// A device decode split over two workers (www/src/client.ts `splitDecode`): one worker decodes
// everything but the NTFF's DMA side, a second decodes that into its own OPFS directory and hands
// its files and timeline summaries over, the first writes the Summary. Every table must be
// byte for byte what one worker writes, the split must really happen (the jobs panel names the
// second worker), and when the second worker crashes the first runs the pass itself and the
// tables are still the same. `?split=always` splits the small real capture used here (the page
// splits only NTFFs of 64 MiB and more by default). Needs `npm run build` first and ../shared/samples.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { foreignRequests, launch, sample, showView, waitReady, useServer } from './harness.mjs';

const server = useServer();

/** A real v6 trn2 capture whose NTFF is mostly DMA records (75 832 rows in all). */
const DIR = 'KevGomes-nki-moe-megakernel/output/i-0af76a70a6d3864dd_pid_713479';

/** Zip entries as name → [crc32, size] (central directory: CRC at +16, size at +24, name at +46). */
function zipEntries(bytes) {
  const out = new Map();
  const eocd = bytes.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  assert.ok(eocd >= 0, 'a zip');
  let off = bytes.readUInt32LE(eocd + 16);
  for (let i = 0; i < bytes.readUInt16LE(eocd + 10); i++) {
    assert.equal(bytes.readUInt32LE(off), 0x02014b50, `central directory entry at ${off}`);
    const n = bytes.readUInt16LE(off + 28);
    const name = bytes.subarray(off + 46, off + 46 + n).toString('utf8').replace(/^.*\//, '');
    out.set(name, [bytes.readUInt32LE(off + 16), bytes.readUInt32LE(off + 24)]);
    off += 46 + n + bytes.readUInt16LE(off + 30) + bytes.readUInt16LE(off + 32);
  }
  return out;
}

/** Opens DIR (or the demo capture: `demo`) with `query`; the first device's tables (zip entries), its job and the page's state. */
async function decode(query, demo = false) {
  const b = await launch();
  try {
    const { page } = b;
    await page.goto(`${server.origin}/?${demo ? 'demo&' : ''}${query}`);
    if (!demo) {
      await page.waitForFunction(() => document.body.dataset.state === 'idle', null, { timeout: 30_000 });
      await page.setInputFiles('[data-testid=folder-input]', sample(DIR));
    }
    await waitReady(page);
    const isolated = await page.evaluate(() => globalThis.crossOriginIsolated === true);
    const count = Number(await page.locator('[data-testid=instruction-count]').getAttribute('data-value'));
    const jobs = await page.$$eval('[data-testid=job]', (ls) => ls.map((l) => ({ state: l.dataset.state, worker: l.dataset.worker, helper: l.dataset.helper, helperError: l.dataset.helperError, piped: l.dataset.piped, text: l.textContent })));
    await showView(page, 'tables');
    const [dl] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=download-all]')]);
    const tables = zipEntries(readFileSync(await dl.path()));
    assert.deepEqual(foreignRequests(b.requests, server.origin), [], 'no request left 127.0.0.1');
    assert.deepEqual(b.errors, [], 'no page errors');
    return { count, job: jobs[0], tables, isolated };
  } finally {
    await b.close();
  }
}

test('split over two workers: the same tables as one worker, and the same again when the second worker crashes', async () => {
  const one = await decode('split=off');
  assert.equal(one.job.state, 'done');
  assert.equal(one.job.helper, '', 'not split');
  assert.ok(one.count > 0 && one.tables.size >= 15, `${one.tables.size} tables`);
  assert.ok(one.tables.has('DmaUsage.parquet') && one.tables.has('Summary.parquet'), [...one.tables.keys()].join(', '));

  const two = await decode('split=always&workers=2');
  assert.equal(two.job.state, 'done', two.job.text);
  assert.equal(two.job.helper, '1', `the DMA side ran on the second worker: ${two.job.text}`);
  assert.equal(two.job.helperError, '', two.job.text);
  assert.match(two.job.text, /DMA side on worker 2/);
  assert.ok(two.isolated, 'the test server makes the page cross-origin isolated');
  assert.equal(two.job.piped, '', 'a DMA-heavy NTFF is not pipelined: its DMA side keeps the second worker busy');
  assert.equal(two.count, one.count);
  assert.deepEqual([...two.tables.keys()].sort(), [...one.tables.keys()].sort(), 'the same tables');
  for (const [name, crc] of one.tables) assert.deepEqual(two.tables.get(name), crc, `${name}: same bytes (CRC-32, size)`);

  // The second worker panics in its DMA pass: it is restarted, and the first runs the pass.
  const crashed = await decode('split=always&workers=2&fault=panic&fault-step=dmaSide&fault-on=profile_exec_2.ntff');
  assert.equal(crashed.job.state, 'done', crashed.job.text);
  assert.match(crashed.job.helperError, /injected fault/, crashed.job.text);
  for (const [name, crc] of one.tables) assert.deepEqual(crashed.tables.get(name), crc, `${name} after the crash: same bytes`);
});

test('pipelined split (the demo, instruction-dense): the second worker writes the first half\'s Parquet too; the same tables as one worker, with ?pipe=off, and when the second worker crashes', async () => {
  const one = await decode('split=off', true);
  assert.equal(one.job.state, 'done');
  assert.ok(one.count > 0 && one.tables.has('Instruction.parquet'), [...one.tables.keys()].join(', '));
  const check = (r, what) => {
    assert.equal(r.job.state, 'done', `${what}: ${r.job.text}`);
    assert.equal(r.count, one.count, what);
    assert.deepEqual([...r.tables.keys()].sort(), [...one.tables.keys()].sort(), `${what}: the same tables`);
    for (const [name, crc] of one.tables) assert.deepEqual(r.tables.get(name), crc, `${what}: ${name} same bytes (CRC-32, size)`);
  };

  const piped = await decode('split=always&workers=2', true);
  check(piped, 'pipelined');
  assert.equal(piped.job.helper, '1', piped.job.text);
  assert.equal(piped.job.piped, '1', `pipelined: ${piped.job.text}`);
  assert.match(piped.job.text, /DMA side and Parquet on worker 2/);

  const off = await decode('split=always&workers=2&pipe=off', true);
  check(off, '?pipe=off');
  assert.equal(off.job.piped, '', off.job.text);

  // The second worker panics in its DMA pass, with the pipe open: the decode runs again unpipelined.
  const crashed = await decode('split=always&workers=2&fault=panic&fault-step=dmaSide&fault-on=.ntff', true);
  check(crashed, 'after the crash');
  assert.equal(crashed.job.piped, '', crashed.job.text);
  assert.match(crashed.job.helperError, /injected fault/, `the cause is the second worker's crash: ${crashed.job.text}`);
});
