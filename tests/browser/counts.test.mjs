// The counts the page shows agree with the files, and a damaged profile says so where the user
// looks (session 9's new-user trial):
// - KevGomes' System Summary: "CPU samples" is cpu_util.pb's record count (7 200, counted here
//   from its u32-LE framing), not CpuUsage's rows (which add an `average` row per timestamp);
//   the event kinds include a Kineto trace's categories, and sum to the rows of the table.
// - A cut NTFF (KevGomes' NTFF cut in half, beside its NEFF): the sidebar card says it has
//   problems (count, first message on hover, the list on expand), the jobs strip says "done …
//   with E errors" (not "failed"; the card's error count) with the rows kept, and the Summary lists each problem once.
// - A cut ntrace.pb (KevGomes' cut to two thirds, beside its trace_info.pb): graded an error as a
//   cut NTFF is, on the System Summary, in the jobs strip and under the sidebar's system button.
// - A System+Device capture whose trace.json is cut (KevGomes' capture with a synthetic trace cut
//   in half): the error shows under the system button on open, with the device on screen, before
//   "Open system trace" is clicked (new-user trial: only after the click); the click then reuses
//   that decode.
// Needs `npm run build`, ../shared/samples and a neuronscope CLI under target/ (for `synth`).

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO, foreignRequests, launch, requireBuild, sample, serve, showView, waitReady } from './harness.mjs';

const CAPTURE = 'KevGomes-nki-moe-megakernel/output/i-0af76a70a6d3864dd_pid_713479';
let server;
let dir;

before(async () => {
  requireBuild();
  dir = mkdtempSync(join(tmpdir(), 'nscope-counts-'));
  const src = sample(CAPTURE);
  const cut = join(dir, 'cut');
  mkdirSync(cut);
  const ntff = readFileSync(join(src, 'profile_exec_2.ntff'));
  writeFileSync(join(cut, 'profile_exec_2.ntff'), ntff.subarray(0, Math.floor(ntff.length / 2)));
  copyFileSync(join(src, 'neff_171450338541704.neff'), join(cut, 'neff_171450338541704.neff'));
  const cutSys = join(dir, 'cut-ntrace');
  mkdirSync(cutSys);
  const ntrace = readFileSync(join(src, 'ntrace.pb'));
  writeFileSync(join(cutSys, 'ntrace.pb'), ntrace.subarray(0, Math.floor((ntrace.length * 2) / 3)));
  for (const f of ['trace_info.pb', 'cpu_util.pb', 'host_mem.pb']) copyFileSync(join(src, f), join(cutSys, f));
  const bin = process.env.NEURONSCOPE_BIN ?? ['ci', 'release', 'debug'].map((p) => join(REPO, 'target', p, 'neuronscope')).find((p) => existsSync(p));
  if (bin === undefined) throw new Error('no neuronscope CLI under target/{ci,release,debug}: run "cargo build --release" (or the Rust tests) first');
  execFileSync(bin, ['synth', join(dir, 'kineto'), '--kineto-mb', '1'], { stdio: 'ignore' });
  const sysDev = join(dir, 'sysdev', 'i-0af76a70a6d3864dd_pid_713479');
  mkdirSync(sysDev, { recursive: true });
  for (const f of readdirSync(src)) copyFileSync(join(src, f), join(sysDev, f));
  const kinetoDir = join(dir, 'kineto', readdirSync(join(dir, 'kineto'))[0]);
  const trace = readFileSync(join(kinetoDir, 'trace.json'));
  writeFileSync(join(sysDev, 'trace.json'), trace.subarray(0, Math.floor(trace.length / 2)));
  server = await serve();
});

after(async () => {
  await server?.close();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

/** Records of a u32-LE length-prefixed file (system-profile.md §2), counted here. */
function frames(path) {
  const b = readFileSync(path);
  let off = 0;
  let n = 0;
  while (off + 4 <= b.length) {
    off += 4 + b.readUInt32LE(off);
    n++;
  }
  assert.equal(off, b.length, `${path}: whole frames`);
  return n;
}

async function openSystem(page, folder) {
  await page.goto(`${server.origin}/`);
  await page.waitForFunction(() => document.body.dataset.state === 'idle', null, { timeout: 30_000 });
  await page.setInputFiles('[data-testid=folder-input]', folder);
  await waitReady(page);
  await page.locator('[data-testid=open-system]').first().click();
  await page.waitForFunction(() => document.body.classList.contains('has-system') && document.body.dataset.state === 'ready', null, { timeout: 120_000 });
  await waitReady(page);
  await showView(page, 'summary');
}

test('KevGomes System Summary: CPU samples = cpu_util.pb records; the CpuUsage average rows are named apart', async () => {
  const b = await launch();
  try {
    const { page } = b;
    const folder = sample(CAPTURE);
    await openSystem(page, folder);
    const records = frames(join(folder, 'cpu_util.pb'));
    assert.equal(records, 7200);
    const card = page.locator('[data-testid=system-cpu-samples]');
    assert.equal(Number(await card.getAttribute('data-value')), records, 'CPU samples = records in cpu_util.pb');
    assert.equal(await card.innerText(), '7,200');
    const label = await page.locator('.card', { has: card }).innerText();
    assert.match(label, /CPU samples \(per CPU; CpuUsage adds 600 average rows\)/, label);
    assert.match(await page.locator('[data-testid=summary]').innerText(), /cpu_util\.pb \(7,200 records\)/);
    assert.deepEqual(foreignRequests(b.requests, server.origin), []);
    assert.deepEqual(b.errors, []);
  } finally {
    await b.close();
  }
});

test('Kineto System Summary: event kinds count trace.json categories; they sum to the table rows', async () => {
  const b = await launch();
  try {
    const { page } = b;
    const folder = join(dir, 'kineto', readdirSync(join(dir, 'kineto'))[0]);
    // The categories of the row-making events (X, B, i, C), counted here from the trace's lines.
    const cats = new Map();
    for (const line of readFileSync(join(folder, 'trace.json'), 'utf8').split('\n')) {
      const ph = /"ph": "(.)"/.exec(line)?.[1];
      if (!['X', 'B', 'i', 'C'].includes(ph)) continue;
      const cat = /"cat": "([^"]*)"/.exec(line)?.[1] ?? '(no category)';
      cats.set(cat, (cats.get(cat) ?? 0) + 1);
    }
    const frameworkRows = [...cats.values()].reduce((a, n) => a + n, 0);
    await openSystem(page, folder);
    const kinds = page.locator('[data-testid=system-event-kinds]');
    const events = Number(await page.locator('[data-testid=system-event-count]').getAttribute('data-value'));
    const runtimeNames = Number(await kinds.getAttribute('data-value')) - cats.size;
    assert.ok(runtimeNames >= 1, 'ntrace.pb names are listed too');
    const summary = await kinds.locator('summary').innerText();
    assert.equal(summary, `${cats.size + runtimeNames} event kinds (${events.toLocaleString('en-US')} rows)`, 'the kinds sum to the Events card');
    await kinds.locator('summary').click();
    const rows = await kinds.locator('tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
    for (const [cat, n] of cats) {
      const row = rows.find((r) => r[0] === cat && r[1] === 'trace.json cat');
      assert.ok(row !== undefined, `${cat} listed: ${JSON.stringify(rows)}`);
      assert.equal(Number(row[2].replace(/,/g, '')), n, `${cat} rows`);
    }
    const card = await page.locator('.card', { has: page.locator('[data-testid=system-event-count]') }).innerText();
    assert.match(card, new RegExp(`${(events - frameworkRows).toLocaleString('en-US')} runtime \\+ ${frameworkRows.toLocaleString('en-US')} framework`), card);
    assert.match(await page.locator('[data-testid=summary]').innerText(), /trace\.json \([\d,]+ event objects → [\d,]+ rows\)/);
    assert.deepEqual(b.errors, []);
  } finally {
    await b.close();
  }
});

test('a cut NTFF: the card says it has problems, the jobs strip says done with its E errors, the Summary lists each once', async () => {
  const b = await launch();
  try {
    const { page } = b;
    await page.goto(`${server.origin}/`);
    await page.waitForFunction(() => document.body.dataset.state === 'idle', null, { timeout: 30_000 });
    await page.setInputFiles('[data-testid=folder-input]', join(dir, 'cut'));
    await waitReady(page);
    const device = page.locator('[data-testid=device]').first();
    // A folder with one device opens it at once; else open it.
    if ((await page.locator('[data-testid=job]').count()) === 0) await device.click();
    await page.waitForSelector('[data-testid=device-problems]', { timeout: 120_000 });
    await waitReady(page);
    await showView(page, 'summary');
    // The Summary's problems: errors and warnings of the decode, each once.
    const listed = await page.locator('[data-testid=summary] [data-testid=problem]').evaluateAll((ps) => ps.map((p) => p.textContent));
    assert.ok(listed.length > 0, 'problems on the Summary');
    assert.equal(new Set(listed).size, listed.length, `no problem listed twice: ${listed.join(' | ')}`);
    const errors = await page.locator('[data-testid=summary] [data-testid=problem].sev-error').evaluateAll((ps) => ps.map((p) => p.querySelector('.msg')?.textContent ?? ''));
    assert.ok(errors.length > 0, 'the cut is an error');
    // The card: count, the first error on hover, the list on expand; the pairing line stays.
    const card = page.locator('[data-testid=device-problems]').first();
    const n = Number(await card.getAttribute('data-count'));
    assert.ok(n >= errors.length, `${n} problems on the card, ${errors.length} errors on the Summary`);
    assert.equal(Number(await card.getAttribute('data-errors')), errors.length);
    assert.equal(await card.getAttribute('title'), errors[0], 'the first error on hover');
    assert.match(await card.locator('summary').innerText(), new RegExp(`^⚠ ${n} problems? in the decode \\(${errors.length} errors?; the rows before each fault are kept\\)$`));
    await card.locator('summary').click();
    assert.equal(await card.locator('[data-testid=problem]').count(), n, 'the list on expand');
    assert.match(await device.locator('[data-testid=pairing-status]').innerText(), /paired/);
    // The jobs strip: done, with the problems and the rows kept; not "failed".
    const job = page.locator('[data-testid=job]', { hasText: 'profile_exec_2.ntff' }).first();
    assert.equal(await job.getAttribute('data-state'), 'done');
    const line = await job.innerText();
    assert.match(line, new RegExp(`^profile_exec_2\\.ntff: done in \\d+ s with ${errors.length} errors? \\(`), line);
    assert.match(line, /· [\d,]+ rows kept/, line);
    assert.doesNotMatch(line, /failed/, line);
    assert.equal(Number(await job.getAttribute('data-problems')), errors.length);
    assert.deepEqual(foreignRequests(b.requests, server.origin), []);
    assert.deepEqual(b.errors, []);
  } finally {
    await b.close();
  }
});

test('a cut ntrace.pb: an error on the System Summary, in the jobs strip and under the system button, with the offset', async () => {
  const b = await launch();
  try {
    const { page } = b;
    await openSystem(page, join(dir, 'cut-ntrace'));
    const errors = await page.locator('[data-testid=summary] [data-testid=problem].sev-error').evaluateAll((ps) => ps.map((p) => p.textContent ?? ''));
    assert.equal(errors.length, 1, `one error on the Summary: ${errors.join(' | ')}`);
    assert.match(errors[0], /TRUNCATED_TRACE/, errors[0]);
    assert.match(errors[0], /ntrace\.pb/, errors[0]);
    assert.match(errors[0], /offset \d+/, errors[0]);
    const job = page.locator('[data-testid=job]').last();
    assert.equal(await job.getAttribute('data-state'), 'done');
    assert.equal(Number(await job.getAttribute('data-problems')), 1);
    assert.match(await job.innerText(), /done in \d+ s with 1 error \(/);
    const card = page.locator('[data-testid=system-problems]');
    assert.equal(Number(await card.getAttribute('data-errors')), 1);
    assert.match(await card.locator('summary').innerText(), /^⚠ \d+ problems? in the decode \(1 error; the rows before each fault are kept\)$/);
    assert.deepEqual(foreignRequests(b.requests, server.origin), []);
    assert.deepEqual(b.errors, []);
  } finally {
    await b.close();
  }
});

test('System+Device with a cut trace.json: the error shows under the system button on open, before the click', async () => {
  const b = await launch();
  try {
    const { page } = b;
    await page.goto(`${server.origin}/`);
    await page.waitForFunction(() => document.body.dataset.state === 'idle', null, { timeout: 30_000 });
    await page.setInputFiles('[data-testid=folder-input]', join(dir, 'sysdev'));
    await waitReady(page);
    assert.equal(await page.locator('[data-testid=profile-type]').first().innerText(), 'System+Device');
    // The device opened first; the system trace is decoded behind it and its error listed.
    await page.waitForFunction(() => Number(document.querySelector('[data-testid=system-problems]')?.dataset.errors ?? 0) >= 1, null, { timeout: 120_000 });
    assert.equal(await page.evaluate(() => document.body.classList.contains('has-result') && !document.body.classList.contains('has-system')), true, 'the device stays on screen');
    const card = page.locator('[data-testid=system-problems]');
    assert.match(await card.locator('summary').innerText(), /^⚠ \d+ problems? in the decode \(1 error; the rows before each fault are kept\)$/);
    const first = await card.getAttribute('title');
    assert.match(first ?? '', /trace\.json/, first ?? '');
    assert.match(first ?? '', /byte \d+|offset \d+/, first ?? '');
    // Opening it now reuses that decode: one system-trace job in all.
    await page.locator('[data-testid=open-system]').first().click();
    await page.waitForFunction(() => document.body.classList.contains('has-system') && document.body.dataset.state === 'ready', null, { timeout: 120_000 });
    const jobs = await page.locator('[data-testid=job]').allInnerTexts();
    assert.equal(jobs.filter((j) => /system trace/.test(j)).length, 1, jobs.join(' | '));
    assert.deepEqual(foreignRequests(b.requests, server.origin), []);
    assert.deepEqual(b.errors, []);
  } finally {
    await b.close();
  }
});
