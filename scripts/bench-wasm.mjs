// Decode throughput of the wasm core in headless Chromium, on the real user path: files picked
// through a webkitdirectory input, passed as Blobs to the app's own module Web Workers
// (www/src/worker.ts, built into www/dist/assets), read by slices with FileReaderSync, scanned,
// paired and decoded into Parquet tables that stream to each worker's OPFS directory
// (Session.process / process_system through the worker protocol, www/src/protocol.ts).
//
// usage: node scripts/bench-wasm.mjs [--pool N] [--store opfs|memory] [--no-spill] [--no-read-ahead] [--trace] [--repeat N] DIR [DIR...]
//   (needs `npm run build` first)
// --pool N: N workers (default 1), each with its own wasm instance; the NTFFs of a folder are
//   dealt round-robin to them and decoded concurrently.
// --store memory: tables kept in wasm memory (the fallback without OPFS) instead of OPFS.
// --no-spill: the core keeps its growing decode state in wasm memory instead of spilling full
//   chunks of it to an OPFS file (crate/src/store.rs `Spill`): the before of an A/B.
// --no-read-ahead: the core reads every piece itself (FileReaderSync in the decode worker) instead
//   of taking the pieces its helper worker read ahead (www/src/readahead.ts): the before of an A/B.
// --repeat N: decode each input N times in a row on its worker ("file (run k)"): the first run
//   includes the browser's tier-up of the wasm code (Chromium starts every function in its
//   baseline compiler and optimizes the hot ones while they run), later runs are steady state,
//   as the native figures are (and as a returning user's cached code is).
// --trace: after each file, its memory trace (crate/src/wasm.rs `MemoryTrace`): a line each time
//   the wasm memory grew, with the stage and its progress, the live heap bytes and their peak.
//
// Prints one line per decoded input (each NTFF, each system profile with its ntrace.pb,
// trace_info.pb, cpu_util.pb, host_mem.pb and Kineto traces, each memory snapshot): the read-only
// pass over that input's own files (Blob slices of 4 MiB read with FileReaderSync in one worker:
// the limit), input bytes, worker, seconds, MB/s,
// rows, rows/s, the worker's wasm memory after the file (bytes; wasm memory never shrinks, so
// the high-water mark of that worker so far), the peak of live heap bytes during the file (what
// the core held at once; the gap to the wasm memory is allocator fragmentation), the Parquet bytes
// stored for it and where (opfs|memory), and what the read-ahead did (pieces served of those
// offered, ms waited); then a line per folder (read-only pass over its NTFFs)
// with the wall time of the whole pool and its MB/s, and
// the CPU seconds the Chromium processes used for the folder (Linux; read-only pass included)
// with MB per CPU second, comparable with `neuronscope bench`'s MB/cpu_s on a busy machine.

import { readFileSync, readdirSync, statSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { DIST, launch, requireBuild, serve } from '../tests/browser/harness.mjs';

const args = process.argv.slice(2);
let pool = 1;
let store = 'opfs';
let spill = true;
let readAhead = true;
let trace = false;
let repeat = 1;
const dirs = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--pool') pool = Math.max(1, Number(args[++i]));
  else if (args[i] === '--store') store = args[++i];
  else if (args[i] === '--no-spill') spill = false;
  else if (args[i] === '--no-read-ahead') readAhead = false;
  else if (args[i] === '--trace') trace = true;
  else if (args[i] === '--repeat') repeat = Math.max(1, Math.floor(Number(args[++i])));
  else dirs.push(resolve(args[i]));
}
if (dirs.length === 0 || !Number.isFinite(pool) || !Number.isFinite(repeat) || !['opfs', 'memory'].includes(store)) {
  console.error('usage: node scripts/bench-wasm.mjs [--pool N] [--store opfs|memory] [--no-spill] [--no-read-ahead] [--trace] [--repeat N] DIR [DIR...]');
  process.exit(2);
}

// CPU seconds (user + system) of every live descendant of this process: the headless Chromium
// tree (Linux /proc; 0 elsewhere). On a shared machine wall time says little; this does.
function childCpuSeconds() {
  const procs = new Map();
  let names = [];
  try {
    names = readdirSync('/proc');
  } catch {
    return 0;
  }
  for (const d of names) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const s = readFileSync(`/proc/${d}/stat`, 'utf8');
      // Fields after the parenthesised name: state, ppid, … utime (14), stime (15).
      const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
      procs.set(Number(d), { ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]) });
    } catch {
      // exited meanwhile
    }
  }
  let ticks = 0;
  const todo = [process.pid];
  while (todo.length) {
    const p = todo.pop();
    for (const [pid, v] of procs) {
      if (v.ppid === p) {
        ticks += v.ticks;
        todo.push(pid);
      }
    }
  }
  return ticks / 100;
}

async function ntffBytes(dir) {
  let n = 0;
  for (const e of await readdir(dir, { recursive: true })) {
    if (e.endsWith('.ntff')) n += statSync(join(dir, e)).size;
  }
  return n;
}

/** The read-ahead column: pieces served from it / offered, and the ms the core waited for them ('off' without one). */
function ra(s) {
  return s === null ? 'off' : `${s.served}/${s.served + s.missed} served, waited ${Math.round(s.waitMs)} ms`;
}

requireBuild();
const workerAsset = readdirSync(join(DIST, 'assets')).find((f) => /^worker-.*\.js$/.test(f));
if (workerAsset === undefined) throw new Error(`${DIST}/assets has no worker-*.js: run "npm run build" first`);
const server = await serve();
const b = await launch();
try {
  const { page } = b;
  await page.goto(`${server.origin}/`);
  console.log('input\tfile\tworker\tread_only_MB/s\tinput_bytes\tseconds\tMB/s\trows\trows/s\twasm_memory_bytes\theap_peak_bytes\tstored_bytes\tstore\tread_ahead');
  for (const dir of dirs) {
    await page.evaluate(() => {
      document.querySelector('#nscope-bench')?.remove();
      const i = document.createElement('input');
      i.type = 'file';
      i.id = 'nscope-bench';
      i.webkitdirectory = true;
      i.multiple = true;
      document.body.append(i);
    });
    await page.setInputFiles('#nscope-bench', dir);
    const cpu0 = childCpuSeconds();
    const r = await page.evaluate(async ({ origin, workerUrl, pool, store, spill, readAhead, repeat }) => {
      const files = Array.from(document.querySelector('#nscope-bench').files);
      const picked = files.map((f) => ({ path: f.webkitRelativePath || f.name, file: f }));
      // Read-only pass (the limit): every NTFF through Blob slices of the decoder's window size.
      // Per file (NTFFs, system files, Kineto traces, memory snapshots), so each job's line has
      // the read-only pass over its own bytes beside it.
      const readSrc = `self.onmessage = (ev) => {
        const rd = new FileReaderSync();
        const t = performance.now();
        let sum = 0;
        const per = {};
        for (const { path, file: f } of ev.data) {
          if (!/(\\.ntff|\\.pb|trace\\.json(\\.gz)?|\\.pickle|\\.pkl)$/.test(f.name)) continue;
          const t1 = performance.now();
          for (let o = 0; o < f.size; o += 4 << 20) sum += new Uint8Array(rd.readAsArrayBuffer(f.slice(o, o + (4 << 20))))[0] | 0;
          per[path] = performance.now() - t1;
        }
        self.postMessage({ ms: performance.now() - t, sum, per });
      };`;
      const rw = new Worker(URL.createObjectURL(new Blob([readSrc], { type: 'text/javascript' })));
      const read = await new Promise((ok) => {
        rw.onmessage = (ev) => ok(ev.data);
        rw.postMessage(picked);
      });
      rw.terminate();
      // The app's workers, spoken to through protocol.ts.
      const workers = [];
      for (let i = 0; i < pool; i++) {
        const w = new Worker(workerUrl, { type: 'module' });
        let next = 1;
        const waiting = new Map();
        w.onmessage = (ev) => {
          const m = ev.data;
          if (m.kind !== 'reply') return;
          const p = waiting.get(m.id);
          waiting.delete(m.id);
          if (m.ok) p.ok(m.value);
          else p.fail(new Error(m.error));
        };
        const call = (req) => new Promise((ok, fail) => {
          const id = next++;
          waiting.set(id, { ok, fail });
          w.postMessage({ ...req, id });
        });
        workers.push({ w, call });
      }
      try {
        const storeDir = store === 'opfs' ? (i) => `bench-${Date.now().toString(36)}-w${i}` : () => null;
        const inits = await Promise.all(workers.map((w, i) => w.call({ op: 'init', pkgUrl: `${origin}/pkg/neuronscope.js`, fault: null, storeDir: storeDir(i), spill, readAhead })));
        const invs = await Promise.all(workers.map((w) => w.call({ op: 'load', files: picked })));
        const inv = invs[0];
        const jobs = [];
        for (const p of inv.profiles) {
          p.devices.forEach((d, i) => {
            if (d.ntff && d.pairing && d.pairing.status === 'Paired') jobs.push({ req: { op: 'process', profileId: p.id, deviceIndex: i }, file: d.ntff });
          });
          if ((p.system_files || []).some((f) => /(ntrace|trace_info)\.pb$|trace\.json(\.gz)?$/.test(f))) jobs.push({ req: { op: 'processSystem', profileId: p.id }, file: `${p.id} (system)`, files: p.system_files });
        }
        for (const f of inv.files) {
          if (f.kind === 'MemorySnapshot') jobs.push({ req: { op: 'processMemory', path: f.path }, file: `${f.path} (memory_snapshot)`, files: [f.path] });
        }
        const size = (path) => inv.files.find((f) => f.path === path)?.size ?? 0;
        const out = [];
        const t0 = performance.now();
        await Promise.all(workers.map(async (w, wi) => {
          for (let j = wi; j < jobs.length; j += pool) for (let run = 1; run <= repeat; run++) {
            const job = jobs[j];
            const t = performance.now();
            const res = await w.call(job.req);
            const ms = performance.now() - t;
            const own = job.files ?? [job.file];
            const readMs = own.reduce((n, f) => n + (read.per[f] ?? 0), 0);
            out.push({
              file: repeat > 1 ? `${job.file} (run ${run})` : job.file,
              readMs,
              worker: wi,
              bytes: job.files ? job.files.reduce((n, f) => n + size(f), 0) : size(job.file),
              ms,
              rows: res.tables.reduce((n, t) => n + t.rows, 0),
              memory: res.wasm_memory_bytes ?? 0,
              heapPeak: Math.max(0, ...(res.memory_trace ?? []).map((m) => m.heap_peak)),
              trace: res.memory_trace ?? [],
              stored: (res.stored ?? []).reduce((n, t) => n + t.bytes, 0),
              store: [...new Set((res.stored ?? []).map((t) => t.kind))].join('+') || inits[wi].store,
              readAhead: res.readAhead ?? null,
            });
          }
        }));
        const wallMs = performance.now() - t0;
        await Promise.all(workers.map((w) => w.call({ op: 'clearStore', key: null })));
        return { readMs: read.ms, out, wallMs };
      } catch (e) {
        return { error: String(e) };
      } finally {
        for (const w of workers) w.w.terminate();
      }
    }, { origin: server.origin, workerUrl: `${server.origin}/assets/${workerAsset}`, pool, store, spill, readAhead, repeat });
    const cpu = childCpuSeconds() - cpu0;
    if (r.error) throw new Error(`${dir}: ${r.error}`);
    const nb = await ntffBytes(dir);
    const readMBs = nb > 0 ? (nb / 1e6 / (r.readMs / 1000)).toFixed(1) : '';
    let total = 0;
    for (const o of r.out) {
      const s = o.ms / 1000;
      total += o.bytes;
      const own = o.readMs > 0 ? (o.bytes / 1e6 / (o.readMs / 1000)).toFixed(1) : '';
      console.log(`${dir}\t${o.file}\t${o.worker}\t${own}\t${o.bytes}\t${s.toFixed(3)}\t${(o.bytes / 1e6 / s).toFixed(1)}\t${o.rows}\t${Math.round(o.rows / s)}\t${o.memory}\t${o.heapPeak}\t${o.stored}\t${o.store}\t${ra(o.readAhead)}`);
      if (trace) {
        for (const m of o.trace) console.log(`  trace\t${m.stage}\t${m.done}/${m.total}\theap_live ${m.heap_live}\theap_peak ${m.heap_peak}\twasm_memory ${m.wasm_memory}`);
      }
    }
    const ws = r.wallMs / 1000;
    console.log(`${dir}\t(all, ${pool} worker${pool > 1 ? 's' : ''})\t\t${readMBs}\t${total}\t${ws.toFixed(3)}\t${(total / 1e6 / ws).toFixed(1)}\tcpu_s ${cpu.toFixed(2)}\tMB/cpu_s ${cpu > 0 ? (total / 1e6 / cpu).toFixed(1) : ''}`);
  }
} finally {
  await b.close();
  await server.close();
}
