// Decode throughput of the wasm core in headless Chromium, on the real user path: files picked
// through a webkitdirectory input, passed as Blobs to a module Web Worker, read by slices with
// FileReaderSync, scanned, paired and decoded into Arrow tables (Session.process), then encoded as
// Parquet (Session.table_parquet for every table).
//
// System profiles (trace_info.pb / ntrace.pb / cpu_util.pb / host_mem.pb / Kineto trace.json) are
// decoded the same way (Session.process_system) and reported on a second line per folder.
//
// usage: node scripts/bench-wasm.mjs DIR [DIR...]       (needs `npm run build` first)
// Prints per folder: input bytes (NTFF, or the system files), the read-only pass over the NTFFs
// (Blob slices of 4 MiB read with FileReaderSync in the worker: the limit), seconds, MB/s, rows, rows/s, wasm
// memory high-water mark (bytes; wasm memory never shrinks, so it is the peak of the run), and
// the CPU seconds the Chromium processes used for the folder (Linux) with MB per CPU second,
// comparable with `neuronscope bench`'s MB/cpu_s on a busy machine.

import { readFileSync, readdirSync, statSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { launch, requireBuild, serve } from '../tests/browser/harness.mjs';

async function ntffBytes(dir) {
  let n = 0;
  for (const e of await readdir(dir, { recursive: true })) {
    if (e.endsWith('.ntff')) n += statSync(join(dir, e)).size;
  }
  return n;
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

const SYSTEM = /(^|\/)(ntrace\.pb|trace_info\.pb|cpu_util\.pb|host_mem\.pb|trace\.json(\.gz)?|[^/]*\.pt\.trace\.json(\.gz)?)$/;
async function systemBytes(dir) {
  let n = 0;
  for (const e of await readdir(dir, { recursive: true })) {
    if (SYSTEM.test(e)) n += statSync(join(dir, e)).size;
  }
  return n;
}

const dirs = process.argv.slice(2).map((d) => resolve(d));
if (dirs.length === 0) {
  console.error('usage: node scripts/bench-wasm.mjs DIR [DIR...]');
  process.exit(2);
}
requireBuild();
const server = await serve();
const b = await launch();
try {
  const { page } = b;
  await page.goto(`${server.origin}/`);
  console.log('input\tntff_bytes\tread_only_MB/s\tseconds\tMB/s\trows\trows/s\tparquet_s\twasm_memory_bytes\tcpu_s\tMB/cpu_s');
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
    const r = await page.evaluate(async (origin) => {
      const src = `
        import init, { Session } from '${origin}/pkg/neuronscope.js';
        const wasm = await init();
        self.onmessage = (ev) => {
          try {
            // Read-only pass (the limit): every NTFF through Blob slices of the decoder's chunk
            // size, as the wasm ByteSource reads them.
            const rd = new FileReaderSync();
            const tr = performance.now();
            let sum = 0;
            for (const f of ev.data) {
              if (!f.name.endsWith('.ntff')) continue;
              for (let o = 0; o < f.size; o += 4 << 20) {
                const b = new Uint8Array(rd.readAsArrayBuffer(f.slice(o, o + (4 << 20))));
                sum += b[0] | 0;
              }
            }
            const readMs = performance.now() - tr;
            const s = new Session();
            for (const f of ev.data) s.add_file(f.webkitRelativePath || f.name, f);
            const t0 = performance.now();
            const inv = s.scan();
            let rows = 0, key = null, tParquet = 0;
            for (const p of inv.profiles) {
              p.devices.forEach((d, i) => {
                if (!d.ntff || !d.pairing || d.pairing.status !== 'Paired') return;
                const res = s.process(p.id, i, () => {});
                for (const t of res.tables) rows += t.rows;
                key = res.key;
                const tp = performance.now();
                for (const t of res.tables) s.table_parquet(res.key, t.name);
                tParquet += performance.now() - tp;
                s.release(res.key);
              });
            }
            const ms = performance.now() - t0 - tParquet;
            // System profiles: decode (Session.process_system) then Parquet of every table.
            let sysRows = 0, sysMs = 0, sysParquet = 0, sys = 0;
            for (const p of inv.profiles) {
              if (!(p.system_files || []).some((f) => /(ntrace|trace_info)\.pb$/.test(f))) continue;
              sys++;
              const ts = performance.now();
              const res = s.process_system(p.id, () => {});
              sysMs += performance.now() - ts;
              for (const t of res.tables) sysRows += t.rows;
              const tp = performance.now();
              for (const t of res.tables) s.table_parquet(res.key, t.name);
              sysParquet += performance.now() - tp;
              s.release(res.key);
            }
            self.postMessage({ readMs, sum, ms, rows, parquetMs: tParquet, sys, sysMs, sysRows, sysParquetMs: sysParquet, memory: wasm.memory.buffer.byteLength });
          } catch (e) {
            self.postMessage({ error: String(e) });
          }
        };
        self.postMessage({ ready: true });`;
      const url = URL.createObjectURL(new Blob([src], { type: 'text/javascript' }));
      const w = new Worker(url, { type: 'module' });
      const files = Array.from(document.querySelector('#nscope-bench').files);
      return await new Promise((ok) => {
        w.onmessage = (ev) => {
          if (ev.data.ready) w.postMessage(files);
          else {
            ok(ev.data);
            w.terminate();
          }
        };
        w.onerror = (e) => ok({ error: e.message });
      });
    }, server.origin);
    // The whole folder's run: read-only pass, decode, Parquet exports, system profiles. A
    // lower bound of the decode's MB per CPU second.
    const cpu = childCpuSeconds() - cpu0;
    if (r.error) throw new Error(`${dir}: ${r.error}`);
    const bytes = await ntffBytes(dir);
    const s = r.ms / 1000;
    if (bytes > 0) {
      console.log(
        `${dir}\t${bytes}\t${(bytes / 1e6 / (r.readMs / 1000)).toFixed(1)}\t${s.toFixed(3)}\t${(bytes / 1e6 / s).toFixed(1)}\t${r.rows}\t${Math.round(r.rows / s)}\t${(r.parquetMs / 1000).toFixed(3)}\t${r.memory}\t${cpu.toFixed(2)}\t${cpu > 0 ? (bytes / 1e6 / cpu).toFixed(1) : ''}`,
      );
    }
    if (r.sys > 0) {
      const sb = await systemBytes(dir);
      const ss = r.sysMs / 1000;
      console.log(
        `${dir} (system)\t${sb}\t\t${ss.toFixed(3)}\t${(sb / 1e6 / ss).toFixed(1)}\t${r.sysRows}\t${Math.round(r.sysRows / ss)}\t${(r.sysParquetMs / 1000).toFixed(3)}\t${r.memory}`,
      );
    }
  }
} finally {
  await b.close();
  await server.close();
}
