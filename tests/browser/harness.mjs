// Shared harness for the browser tests: a static server for www/dist on 127.0.0.1, headless Debian
// Chromium through playwright-core with a fresh profile, and a log of every request the page made.

import { createServer } from 'node:http';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before } from 'node:test';
import { chromium } from 'playwright-core';

export const REPO = resolve(fileURLToPath(new URL('../..', import.meta.url)));
export const DIST = join(REPO, 'www', 'dist');
export const SAMPLES = resolve(REPO, '..', 'shared', 'samples');
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** Screenshots for people to look at (gitignored). */
export const SHOTS = join(REPO, 'tests', '.tmp', 'screenshots');

/** Absolute path of a sample folder; throws with a clear message when the samples are missing. */
export function sample(rel) {
  if (!existsSync(SAMPLES)) {
    throw new Error(`sample folder ${SAMPLES} is missing: the browser tests need ../shared/samples next to the repository`);
  }
  const p = join(SAMPLES, rel);
  if (!existsSync(p)) throw new Error(`sample ${p} is missing`);
  return p;
}

/** Throws unless the app (with the wasm core) has been built. */
export function requireBuild() {
  const wasm = join(DIST, 'pkg', 'neuronscope_bg.wasm');
  if (!existsSync(join(DIST, 'index.html')) || !existsSync(wasm)) {
    throw new Error(`${DIST} lacks index.html or pkg/neuronscope_bg.wasm: run "npm run build" first`);
  }
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium not found at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`);
}

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ts': 'text/plain',
};

/**
 * The headers that make the page cross-origin isolated (SharedArrayBuffer between its workers:
 * the pipelined split decode, www/src/client.ts `splitDecode`), as `npm start` serves it
 * (vite.config.ts). Everything the page loads is same-origin, so nothing else changes.
 */
export const ISOLATION = { 'cross-origin-opener-policy': 'same-origin', 'cross-origin-embedder-policy': 'require-corp' };

/** Serves DIST on 127.0.0.1 (random port), cross-origin isolated (ISOLATION). Returns { origin, close }. */
export async function serve() {
  const root = normalize(DIST + sep);
  const server = createServer(async (req, res) => {
    try {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      let path = normalize(join(DIST, decodeURIComponent(url.pathname)));
      if (!path.startsWith(root) && path !== DIST) {
        res.writeHead(403).end();
        return;
      }
      if (existsSync(path) && statSync(path).isDirectory()) path = join(path, 'index.html');
      if (!existsSync(path)) {
        res.writeHead(404).end('not found');
        return;
      }
      const body = await readFile(path);
      res.writeHead(200, { 'content-type': TYPES[extname(path)] ?? 'application/octet-stream', 'cache-control': 'no-store', ...ISOLATION });
      res.end(body);
    } catch (e) {
      res.writeHead(500).end(String(e));
    }
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  const addr = server.address();
  const origin = `http://127.0.0.1:${addr.port}`;
  return { origin, close: () => new Promise((ok) => server.close(ok)) };
}

/**
 * The set-up every browser test file shares, as node:test hooks: before its tests, checks the build
 * (requireBuild), runs `setup` (fixtures of that file, optional) and serves DIST; after them, stops
 * the server. Returns the server, whose `origin` is set once served (read it inside tests).
 */
export function useServer(setup = null) {
  const server = { origin: '', close: async () => {} };
  before(async () => {
    requireBuild();
    await setup?.();
    Object.assign(server, await serve());
  });
  after(async () => {
    await server.close();
  });
  return server;
}

/**
 * Launches Chromium with a fresh user-data dir. Records every request (page and workers) in
 * `requests` and uncaught page errors in `errors`.
 */
export async function launch() {
  const userDir = mkdtempSync(join(tmpdir(), 'nscope-chromium-'));
  const context = await chromium.launchPersistentContext(userDir, {
    executablePath: CHROMIUM,
    headless: true,
    acceptDownloads: true,
    viewport: { width: 1440, height: 1000 },
    args: [
      '--no-sandbox',
      '--headless',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
      '--disable-sync',
      '--disable-quic',
    ],
  });
  const requests = [];
  const errors = [];
  context.on('request', (r) => requests.push(r.url()));
  context.on('weberror', (e) => errors.push(String(e.error())));
  const page = context.pages()[0] ?? (await context.newPage());
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('worker', (w) => {
    // Worker requests are reported by the context in Chromium; keep the worker URL as well.
    requests.push(w.url());
  });
  const close = async () => {
    await context.close();
    rmSync(userDir, { recursive: true, force: true });
  };
  return { context, page, requests, errors, close };
}

/** Requests whose URL is neither on `origin` nor a local blob:/data: URL. */
export function foreignRequests(requests, origin) {
  return requests.filter((u) => !(u.startsWith(`${origin}/`) || u === origin || u.startsWith('blob:') || u.startsWith('data:')));
}

/** Waits until the page settles in `ready` (or fails with the page's error text). */
export async function waitReady(page, timeout = 120_000) {
  await page.waitForFunction(() => ['ready', 'error'].includes(document.body.dataset.state ?? ''), null, { timeout });
  const state = await page.evaluate(() => document.body.dataset.state);
  if (state !== 'ready') {
    const msg = await page.locator('[data-testid=error]').innerText().catch(() => '(no error text)');
    throw new Error(`page ended in state ${state}: ${msg}`);
  }
}

/**
 * Counts saturated (slice-coloured) pixels in the timeline's plot area. The background, grid and
 * labels are grey, so any pixel with a strong colour is a drawn instruction slice.
 */
export async function timelineColouredPixels(page, testid = 'timeline-canvas', fromCss = 0) {
  // The canvas lives in a view tab: show it first, as a user would to look at it.
  const tab = { 'timeline-canvas': 'timeline', 'system-canvas': 'system', 'memory-canvas': 'memory' }[testid];
  if (tab !== undefined && (await page.locator(`[data-testid=${testid}]`).boundingBox()) === null) {
    await showView(page, tab);
    // Shown at its real width, the canvas is resized (cleared) and redrawn on a later frame.
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => requestAnimationFrame(r)))));
  }
  return page.evaluate(([testid, fromCss]) => {
    const c = document.querySelector(`[data-testid=${testid}]`);
    if (!(c instanceof HTMLCanvasElement) || c.width === 0 || c.height === 0) return -1;
    const ctx = c.getContext('2d');
    if (ctx === null) return -1;
    const top = Math.min(c.height - 1, Math.floor(fromCss * (c.width / c.clientWidth)));
    const { data } = ctx.getImageData(0, top, c.width, c.height - top);
    let n = 0;
    for (let i = 0; i < data.length; i += 4) {
      const r = data[i], g = data[i + 1], b = data[i + 2];
      if (Math.max(r, g, b) - Math.min(r, g, b) > 40) n++;
    }
    return n;
  }, [testid, fromCss]);
}

/**
 * What the timeline with canvas `testid` reports of itself (www/src/views/timeline.ts
 * TimelineProbe: rows, the last frame's window and busy %, …), read when asked; null when the page
 * has no such view.
 */
export function timelineProbe(page, testid = 'timeline-canvas') {
  return page.evaluate((id) => window.__neuronscope?.timeline?.(id) ?? null, testid);
}

/** Instruction rows of a profiler JSON export (`neuron-profile view --output-format json`). */
export function jsonInstructionCount(path) {
  const doc = JSON.parse(readFileSync(path, 'utf8'));
  if (!Array.isArray(doc.instruction)) throw new Error(`${path} has no "instruction" array`);
  return doc.instruction.length;
}

/** The single `*_profile_full.json` under `dir/json_reports`. */
export async function fullJsonExport(dir) {
  const jr = join(dir, 'json_reports');
  const names = (await readdir(jr)).filter((n) => n.endsWith('_profile_full.json'));
  if (names.length !== 1) throw new Error(`expected one *_profile_full.json in ${jr}, found ${names.join(', ') || 'none'}`);
  return join(jr, names[0]);
}

/** File names in a zip's central directory (signature PK\x01\x02; name length at +28, name at +46). */
export function zipEntryNames(bytes) {
  const names = [];
  const eocd = bytes.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (eocd < 0) throw new Error('not a zip: no end-of-central-directory record');
  const count = bytes.readUInt16LE(eocd + 10);
  let off = bytes.readUInt32LE(eocd + 16);
  for (let i = 0; i < count; i++) {
    if (bytes.readUInt32LE(off) !== 0x02014b50) throw new Error(`bad central directory entry at ${off}`);
    const nameLen = bytes.readUInt16LE(off + 28);
    const extraLen = bytes.readUInt16LE(off + 30);
    const commentLen = bytes.readUInt16LE(off + 32);
    names.push(bytes.subarray(off + 46, off + 46 + nameLen).toString('utf8'));
    off += 46 + nameLen + extraLen + commentLen;
  }
  return names;
}

/** Shows workspace view `name` (summary, timeline, system, memory, source, tables, compare) by clicking its tab. */
export async function showView(page, name) {
  await page.click(`[data-testid=tab-${name}]`);
  await page.waitForFunction((n) => document.body.dataset.view === n, name);
  // A timeline shown from hidden lays out (ResizeObserver) and redraws on the next frames: wait
  // until its canvas has its shown size, then two frames, before anyone reads its pixels.
  await page.evaluate((n) => new Promise((ok) => {
    const id = n === 'system' ? 'system-canvas' : n === 'timeline' ? 'timeline-canvas' : null;
    const c = id === null ? null : document.querySelector(`[data-testid=${id}]`);
    if (c === null) return ok();
    let tries = 0;
    const sized = () => c.clientWidth > 0 && Math.abs(c.width - Math.round(c.clientWidth * devicePixelRatio)) <= 1;
    const tick = () => {
      if (sized() || ++tries > 120) requestAnimationFrame(() => requestAnimationFrame(() => ok()));
      else requestAnimationFrame(tick);
    };
    tick();
  }), name);
}

/**
 * Scrolls the track list of canvas `testid` so the band `top`..`top + height` (CSS px from the
 * canvas top) is on screen, and returns the canvas's bounding box after the scroll.
 */
export async function revealBand(page, top, height, testid = 'timeline-canvas') {
  await page.evaluate(([testid, top, height]) => {
    const c = document.querySelector(`[data-testid=${testid}]`);
    const wrap = c?.parentElement;
    if (!wrap) return;
    // Below the pinned axis strip (28 px) and inside the wrapper's visible height.
    const visible = wrap.clientHeight;
    if (top < wrap.scrollTop + 30 || top + height > wrap.scrollTop + visible) wrap.scrollTop = Math.max(0, top - Math.min(80, visible / 3));
  }, [testid, top, height]);
  return page.locator(`[data-testid=${testid}]`).boundingBox();
}

/** Imports `www/src/<rel>` in Node for unit tests: bundled on the fly with esbuild (apache-arrow
 * left to Node's own resolution, so tests and module share one copy). */
/** Is Playwright worker `w` one of the app's core workers (www/src/worker.ts), not a read-ahead helper one of them started (www/src/readahead-worker.ts)? */
export function appWorker(w) {
  return !/readahead-worker/.test(w.url());
}

export async function loadModule(rel) {
  const { build } = await import('esbuild');
  const out = await build({
    entryPoints: [join(REPO, 'www', 'src', rel)],
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    write: false,
    external: ['apache-arrow'],
    logLevel: 'silent',
  });
  const code = out.outputFiles[0].text.replace(/from\s*"apache-arrow"/g, `from ${JSON.stringify(import.meta.resolve('apache-arrow'))}`);
  return import(`data:text/javascript;base64,${Buffer.from(code).toString('base64')}`);
}
