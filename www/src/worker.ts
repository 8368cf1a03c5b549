// The worker owns the wasm core and one Session (the picked files). It never touches the DOM; the
// page talks to it through protocol.ts. Files arrive as File/Blob handles: the core reads them in
// slices (FileReaderSync), so a multi-GB NTFF is never read whole here or on the page.
// Processed tables go to this worker's OPFS directory as they are written (opfs.ts); only the
// row groups and columns a view asks for are read back into wasm memory.

import type { Inventory, ProcessResult, WasmModule as CoreModule, WasmSession as CoreSession } from './api.ts';
import type { CrashInfo, Envelope, DmaSideReply, FaultSpec, FromWorker, HandedTable, PipeEnd, StoredInfo, StoredTable } from './protocol.ts';
import { PIPE_DEPTH, PIPE_SLOT_BYTES } from './protocol.ts';
import { FileStore, opfsAvailable } from './opfs.ts';
import { ReadAhead, type ReadAheadStats } from './readahead.ts';

/** The core's storage calls (crate/src/wasm.rs, crate/src/store.rs); optional: older cores lack them. */
interface WasmSession extends CoreSession {
  /** File-store id of a table kept on OPFS (undefined: in memory). */
  table_file?(key: string, table: string): number | undefined;
  /** Writes the zip of every table of `key` to a new store file; its id (undefined: no store). */
  bundle_file?(key: string): number | undefined;
  /** Registers re-opened stored files as profile `key`'s tables. */
  adopt?(key: string, tables: { name: string; rows: number; file: number; bytes: number }[]): void;
  /** The split device decode's halves (crate/src/wasm.rs `process_split`, `dma_side`, `finish_split`). */
  process_split?(profileId: string, deviceIndex: number, progress: ProgressFn, remote?: (table: string, bytes: Uint8Array) => void): { key: string; pending: true; piped?: boolean } & StoredInfo;
  /** The Parquet writer of a pipelined split decode (crate/src/wasm.rs `pipe_begin` … `pipe_end`). */
  pipe_begin?(key: string): void;
  pipe_batch?(table: string, bytes: Uint8Array): void;
  pipe_end?(): { name: string; kind: string; rows: number; file: number | null; bytes: number }[];
  pipe_drop?(): void;
  dma_side?(profileId: string, deviceIndex: number, progress: ProgressFn): { key: string; side: string; lod: Uint8Array } & StoredInfo;
  finish_split?(key: string, side: string | undefined, lod: Uint8Array | undefined, tables: { name: string; rows: number; file: number; bytes: number }[], progress: ProgressFn, remote?: (table: string, bytes: Uint8Array) => void): ProcessResult & StoredInfo;
  /** Registers a pipelined decode's files beside the profile's other tables; every table as `stored` lists them. */
  add_stored?(key: string, tables: { name: string; rows: number; file: number; bytes: number }[]): StoredTable[];
}
type ProgressFn = (stage: string, done: number, total: number, rows?: number) => void;
interface WasmModule extends Omit<CoreModule, 'Session'> {
  Session: new () => WasmSession;
  /** Installs the OPFS file store new tables are written to (opfs.ts FileStore). */
  set_file_store?(store: FileStore | null): void;
  /** Allows the core to spill growing decode state to a store file (crate/src/store.rs `Spill`; on by default). */
  set_spill?(on: boolean): void;
  /** Installs the read-ahead its large reads are offered to first (crate/src/wasm.rs `ReadAhead`). */
  set_read_ahead?(r: ReadAhead | null): void;
}

/** Profile key and table of the core's spill file (crate/src/store.rs SPILL_KEY, SPILL_TABLE): scratch of one decode, deleted after it. */
const SPILL_KEY = 'nscope-spill';
const SPILL_TABLE = 'spill';

/** The part of DedicatedWorkerGlobalScope used here (the DOM lib is the one type-checked). */
interface WorkerScope {
  postMessage(message: FromWorker, transfer?: Transferable[]): void;
  onmessage: ((ev: MessageEvent<Envelope>) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  onunhandledrejection: ((ev: PromiseRejectionEvent) => void) | null;
}
const scope = self as unknown as WorkerScope;

let wasm: WasmModule | null = null;
let session: WasmSession | null = null;
/** Key of the processed profile the page shows; released when another one is opened. */
let shown: string | null = null;
/** Set after a wasm trap: the instance may be inconsistent, so refuse further calls (the page restarts the worker). */
let crashed: string | null = null;
/** Text the core's panic hook handed over during the current call (reset per call). */
let lastPanic: string | null = null;
/** The instance's exports; `memory` sizes a failure (is the 4 GiB wasm32 memory full?). */
let exports: { memory?: WebAssembly.Memory } = {};
/** Crash-containment test hook from the page URL (protocol.ts FaultSpec); null for users. */
let fault: FaultSpec | null = null;
/** This worker's OPFS store; null: tables stay in wasm memory. */
let store: FileStore | null = null;
/** Why there is no store (shown before decoding); null with one. */
let storeNote: string | null = null;
/** The core's read-ahead (readahead.ts); null outside a cross-origin isolated page or with `readAhead: false`. */
let readAhead: ReadAhead | null = null;
/** `readAhead.stats` when the last result was sent (each result carries what happened since). */
let readAheadMark: ReadAheadStats = { served: 0, missed: 0, asked: 0, waitMs: 0 };

/** Installs the read-ahead once (its helper needs SharedArrayBuffer: a cross-origin isolated page); without one the core reads directly, as before. */
function startReadAhead(m: WasmModule, on: boolean): void {
  if (!on) {
    m.set_read_ahead?.(null);
    readAhead = null;
    return;
  }
  if (readAhead !== null || m.set_read_ahead === undefined) return;
  if (typeof SharedArrayBuffer !== 'function' || (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated !== true) return;
  try {
    // Made here, between calls: a nested worker made during a synchronous decode would load only after it (readahead.ts).
    readAhead = new ReadAhead(new Worker(new URL('./readahead-worker.ts', import.meta.url), { type: 'module', name: 'neuronscope-read-ahead' }));
    m.set_read_ahead(readAhead);
  } catch {
    readAhead = null;
  }
}

/** NTFF that fits in wasm32's 4 GiB when tables stay in memory: a 1 GB synthetic NTFF took 1.86 GB (decode state plus its Parquet; scripts/bench-wasm.mjs --store memory). */
const MEMORY_LIMIT_TEXT = 'about 2 GB of NTFF per worker';

/** OPFS bytes a decode needs per input byte: the stored Parquet was 0.43 × the NTFF at 1 GB (synthetic, scripts/bench-wasm.mjs); rounded up. */
const STORED_PER_INPUT = 0.6;

/** Bytes of the picked files at `paths`. */
function inputBytes(paths: (string | null | undefined)[]): number {
  let n = 0;
  for (const p of paths) n += scanned?.files.find((f) => f.path === p)?.size ?? 0;
  return n;
}

/** The core's `stored` list as files another worker re-opens (`<this dir>/<name>`); `file` '' for a table kept in memory. */
function handedFiles(stored: readonly { name: string; bytes: number; file?: unknown; rows?: number }[]): HandedTable[] {
  return stored.map((t) => ({
    name: t.name,
    rows: Number(t.rows ?? 0),
    file: typeof t.file === 'number' && store !== null ? `${store.dirName}/${store.nameOf(t.file)}` : '',
    bytes: Number(t.bytes),
  }));
}

/**
 * The core's `remote` for a pipelined `processSplit`: posts each batch (an IPC stream the core
 * made, a copy of its own) over the pipe, first waiting while PIPE_DEPTH batches are not yet
 * written (Atomics.wait: this worker is inside a synchronous wasm call, so no message could
 * reach it). Throws when the writer stopped: the core then ends the decode with that error.
 */
function pipeSender(pipe: PipeEnd, stats: PipeStats): (table: string, bytes: Uint8Array) => void {
  const control = new Int32Array(pipe.control);
  let sent = 0;
  return (table, bytes) => {
    const t0 = performance.now();
    for (;;) {
      if (Atomics.load(control, 1) !== 0) throw new Error('it stopped');
      const n = Atomics.load(control, 0);
      if (n < PIPE_DEPTH) break;
      Atomics.wait(control, 0, n, 1000);
    }
    stats.waitMs += performance.now() - t0;
    stats.batches++;
    stats.bytes += bytes.byteLength;
    // `bytes` is a view of wasm memory: copied here, before the core goes on.
    const slot = sent++ % PIPE_DEPTH;
    Atomics.add(control, 0, 1);
    if (bytes.byteLength <= PIPE_SLOT_BYTES) {
      new Uint8Array(pipe.slots, slot * PIPE_SLOT_BYTES, bytes.byteLength).set(bytes);
      pipe.port.postMessage({ table, slot, length: bytes.byteLength });
    } else {
      const own = bytes.slice();
      pipe.port.postMessage({ table, bytes: own }, [own.buffer]);
    }
  };
}

/** What a pipelined decode's ends saw (for benchmarks: scripts/bench-lod.mjs prints it): ms the sender waited on the writer, batches and IPC bytes sent, ms the core spent encoding and in the sender, ms the writer was busy and its wasm memory. */
interface PipeStats {
  waitMs: number;
  batches: number;
  bytes: number;
  encodeMs: number;
  callMs: number;
  writerMs: number;
  /** The writer's wasm memory at the end, bytes. */
  writerMemory?: number;
}

/** The core's `pipe_ms` of a pipelined call: [ms encoding, ms in the sender]. */
function pipeMs(result: unknown): [number, number] {
  const ms = (result as { pipe_ms?: number[] }).pipe_ms;
  return [Number(ms?.[0] ?? 0), Number(ms?.[1] ?? 0)];
}

/** Pipes of `processSplit`s waiting for their `finishSplit`, by profile key. */
const openPipes = new Map<string, { pipe: PipeEnd; stats: PipeStats }>();

/** After a pipelined `processSplit`: `{end}` over the pipe, and the writer's answer (its files, or why it has none). */
function pipeEnd(pipe: PipeEnd): Promise<{ tables?: HandedTable[]; error?: string; writerMs?: number; writerMemory?: number }> {
  const control = new Int32Array(pipe.control);
  return new Promise((resolve) => {
    // A writer that died (its worker crashed) never answers: the page sets the stop flag then.
    const poll = setInterval(() => {
      if (Atomics.load(control, 1) === 0) return;
      done({ error: 'it stopped' });
    }, 100);
    const done = (answer: { tables?: HandedTable[]; error?: string; writerMs?: number; writerMemory?: number }): void => {
      clearInterval(poll);
      pipe.port.onmessage = null;
      pipe.port.close();
      resolve(answer);
    };
    pipe.port.onmessage = (ev: MessageEvent<{ tables?: HandedTable[]; error?: string; writerMs?: number; writerMemory?: number }>) => done(ev.data);
    pipe.port.postMessage({ end: true });
  });
}

/**
 * This worker's half of a pipelined split decode (`pipeParquet`): the batches arriving on the pipe
 * are written as Parquet files under store key `key` (not a profile of this session); at
 * `{end}` the files are closed and named for the decoding worker, which re-opens them (as the
 * DMA side's). A failure sets the pipe's stop flag, so the decoding worker stops waiting.
 */
function pipeWriter(s: WasmSession, key: string, pipe: PipeEnd): void {
  const control = new Int32Array(pipe.control);
  let failed: string | null = null;
  /** ms spent writing batches (benchmarks). */
  let writerMs = 0;
  const stop = (e: unknown): void => {
    failed ??= describe(e);
    const crash = crashOf(e);
    if (crash !== null) crashed ??= crash.panic ?? crash.trap;
    Atomics.store(control, 1, 1);
    Atomics.notify(control, 0);
  };
  const drop = (): void => {
    try {
      s.pipe_drop?.();
    } catch {
      // a crashed instance: the worker is replaced, its directory swept
    }
    void store?.drop(key);
  };
  pipe.port.onmessage = (ev: MessageEvent<{ table?: string; bytes?: Uint8Array; slot?: number; length?: number; end?: boolean; abort?: boolean }>) => {
    const m = ev.data;
    if (m.table !== undefined) {
      try {
        if (failed === null) {
          core();
          const t0 = performance.now();
          const bytes = m.bytes ?? new Uint8Array(pipe.slots, (m.slot ?? 0) * PIPE_SLOT_BYTES, m.length ?? 0);
          s.pipe_batch!(m.table, bytes);
          writerMs += performance.now() - t0;
          // New tables take free files: refill the pool between batches.
          void store?.prepare().catch(stop);
        }
      } catch (e) {
        stop(e);
      } finally {
        Atomics.sub(control, 0, 1);
        Atomics.notify(control, 0);
      }
      return;
    }
    if (m.end === true) {
      try {
        if (failed !== null) throw new Error(failed);
        const tables = handedFiles(s.pipe_end!());
        if (tables.some((t) => t.file === '')) throw new Error('the pipelined writer kept a table in memory (the file store had no free file)');
        // The decoding worker opens these files: close them here (a sync handle is exclusive).
        store?.forget(key);
        pipe.port.postMessage({ tables, writerMs, writerMemory: exports.memory?.buffer.byteLength ?? 0 });
      } catch (e) {
        pipe.port.postMessage({ error: failed ?? describe(e) });
        stop(e);
        drop();
      }
      pipe.port.close();
      return;
    }
    if (m.abort === true) {
      drop();
      pipe.port.close();
    }
  };
}

/** Split decodes begun here (`processSplit`) and not yet finished: their decode state may sit in the spill file, which must stay. */
let pendingSplits = 0;

/** Deletes the decode spill file, unless a split decode still needs it. */
async function dropSpill(): Promise<void> {
  if (pendingSplits === 0) await store?.dropTable(SPILL_KEY, SPILL_TABLE);
}

/** Before a call that writes tables: free files ready, and room on disk for about `input` × STORED_PER_INPUT bytes. */
async function prepareStore(input: number): Promise<void> {
  if (store === null) return;
  // A failed decode may have left its spill file.
  await dropSpill();
  const est = await navigator.storage.estimate().catch(() => null);
  if (est?.quota !== undefined && est.usage !== undefined) {
    const free = est.quota - est.usage;
    const need = input * STORED_PER_INPUT;
    if (need > free) {
      throw new Error(
        `not enough disk space for the tables: about ${mb(need)} needed, ${mb(free)} left of the browser's storage quota for this page (${mb(est.quota)}). ` +
          'Free disk space, or use “Clear stored profiles”, then try again',
      );
    }
  }
  await store.prepare();
}

function mb(n: number): string {
  return n >= 1e9 ? `${(n / 1e9).toFixed(2)} GB` : `${(n / 1e6).toFixed(1)} MB`;
}

/** Keys of the profiles this worker holds. */
const storedKeys = new Set<string>();

/** What the read-ahead did since the last reply that reported it (undefined without one): every processing reply takes its own share. */
function readAheadSince(): ReadAheadStats | undefined {
  if (readAhead === null) return undefined;
  const now = { ...readAhead.stats };
  const d = { served: now.served - readAheadMark.served, missed: now.missed - readAheadMark.missed, asked: now.asked - readAheadMark.asked, waitMs: now.waitMs - readAheadMark.waitMs };
  readAheadMark = now;
  return d;
}

/** Adds the stored files' names and the read-ahead's counts to a processing result (the page re-opens the files after a restart). */
function withFiles<T extends StoredInfo & { key: string }>(result: T): T {
  storedKeys.add(result.key);
  const ra = readAheadSince();
  if (ra !== undefined) result.readAhead = ra;
  const raw = (result.stored ?? []) as (StoredTable & { file?: unknown })[];
  result.stored = raw.map((t) => {
    const id = typeof t.file === 'number' ? t.file : null;
    const out: StoredTable = { name: t.name, kind: t.kind, bytes: Number(t.bytes) };
    if (id !== null && store !== null) out.file = store.nameOf(id);
    return out;
  });
  return result;
}

/** Frees the processed profile on screen before another is processed, when tables live in wasm memory (OPFS keeps them all). */
function releaseShown(s: WasmSession): void {
  if (store === null && shown !== null) s.release(shown);
  shown = null;
}

function post(msg: FromWorker, transfer: Transferable[] = []): void {
  scope.postMessage(msg, transfer);
}

/** Least time between two progress reports of one request with the same stage, ms. */
const PROGRESS_MS = 100;

/**
 * The core's progress callback for request `id`: reports posted to the page at most every
 * PROGRESS_MS within a stage (a new stage, and the stage's end, at once). Every report costs the
 * main thread a message, the progress bar's and jobs panel's updates and a relayout; the core
 * reports 25–30 times a second on an instruction-dense NTFF, over a 2 GB decode's 170 s.
 */
function progressTo(id: number): ProgressFn {
  let stage0 = '';
  let at = -Infinity;
  return (stage, done, total, rows) => {
    const now = performance.now();
    const d = Number(done);
    const t = Number(total);
    if (stage === stage0 && now - at < PROGRESS_MS && !(t > 0 && d >= t)) return;
    stage0 = stage;
    at = now;
    post({ kind: 'progress', id, stage, done: d, total: t, rows: Number(rows ?? 0) });
  };
}

function describe(e: unknown): string {
  if (e instanceof Error) return e.message || e.name;
  if (typeof e === 'string') return e;
  try {
    return JSON.stringify(e);
  } catch {
    return String(e);
  }
}

/** Inventory of the current session (from scan), to match the fault hook's `on` against NTFF paths. */
let scanned: Inventory | null = null;

/** NTFF path of device `deviceIndex` of profile `profileId` ('' when unknown). */
function ntffOf(profileId: string, deviceIndex: number): string {
  return scanned?.profiles.find((p) => p.id === profileId)?.devices[deviceIndex]?.ntff ?? '';
}

/** NTFF path of the device profile on screen (`shown`), for the table steps of the fault hook. */
let shownNtff = '';

/** The fault kind to inject into `process(profileId, deviceIndex)`, or '' (always '' for users). */
function faultFor(profileId: string, deviceIndex: number): string {
  if (fault === null || (fault.step ?? 'process') !== 'process') return '';
  return ntffOf(profileId, deviceIndex).includes(fault.on) ? fault.kind : '';
}

/** Arms the fault hook for a read of `table` in `step` ('table': Parquet export, 'columns': column read) of the profile on screen. */
function armTableFault(step: 'table' | 'columns', table: string): void {
  if (fault === null || fault.step !== step || fault.table !== table || !shownNtff.includes(fault.on)) return;
  core().arm_test_fault?.(fault.kind, 'table');
}

/** Did `e` leave the wasm instance unusable? Traps, panics (which abort), RangeErrors (out of memory, stack). */
function crashOf(e: unknown): CrashInfo | null {
  const text = e instanceof Error ? `${e.name}: ${e.message}` : describe(e);
  const broken =
    e instanceof WebAssembly.RuntimeError ||
    e instanceof RangeError ||
    lastPanic !== null ||
    // wasm-bindgen's guard when a Session is still borrowed by a call that trapped.
    text.includes('recursive use of an object');
  if (!broken) return null;
  return { panic: lastPanic, trap: text, memoryBytes: exports.memory?.buffer.byteLength ?? 0 };
}

function core(): WasmModule {
  if (crashed !== null) throw new Error(`the wasm core crashed earlier (${crashed}); this worker is being replaced`);
  if (wasm === null) throw new Error('the wasm core is not loaded yet');
  return wasm;
}

function newSession(): WasmSession {
  const m = core();
  session?.free();
  session = new m.Session();
  shown = null;
  return session;
}

function current(): WasmSession {
  core();
  if (session === null) throw new Error('no capture loaded');
  return session;
}

/** Copies `bytes` into a buffer of its own (wasm memory views must not be transferred) and posts it. */
function replyBytes(id: number, bytes: Uint8Array): void {
  const own = bytes.slice();
  post({ kind: 'reply', id, ok: true, value: own }, [own.buffer]);
}

async function handle(msg: Envelope): Promise<void> {
  const { id } = msg;
  switch (msg.op) {
    case 'init': {
      if (wasm === null) {
        const mod = (await import(/* @vite-ignore */ msg.pkgUrl)) as WasmModule;
        exports = ((await mod.default()) ?? {}) as { memory?: WebAssembly.Memory };
        mod.set_panic_reporter?.((text) => {
          lastPanic = text;
        });
        wasm = mod;
      }
      fault = msg.fault ?? null;
      wasm.set_spill?.(msg.spill !== false);
      startReadAhead(wasm, msg.readAhead !== false);
      if (msg.storeDir && opfsAvailable() && wasm.set_file_store !== undefined) {
        try {
          store = await FileStore.open(msg.storeDir);
          wasm.set_file_store(store);
        } catch (e) {
          store = null;
          storeNote = `the browser's private file storage (OPFS) failed to open (${describe(e)})`;
        }
      } else if (msg.storeDir) {
        storeNote = 'this browser gives the page no private file storage (OPFS, missing in some private windows)';
      } else {
        storeNote = 'the page was opened with ?store=memory';
      }
      if (store === null) storeNote += `: tables stay in wasm memory, which holds ${MEMORY_LIMIT_TEXT}; larger files will fail`;
      post({ kind: 'reply', id, ok: true, value: { version: core().version(), store: store === null ? 'memory' : 'opfs', storeNote } });
      return;
    }
    case 'load': {
      const s = newSession();
      for (const f of msg.files) s.add_file(f.path, f.file);
      scanned = s.scan();
      post({ kind: 'reply', id, ok: true, value: scanned });
      return;
    }
    case 'demo': {
      const m = core();
      const s = newSession();
      for (const f of m.demo_files()) s.add_bytes(f.path, f.bytes);
      scanned = s.scan();
      post({ kind: 'reply', id, ok: true, value: scanned });
      return;
    }
    case 'process': {
      const s = current();
      releaseShown(s);
      await prepareStore(inputBytes([ntffOf(msg.profileId, msg.deviceIndex)]));
      // Test hook only: the core fails at its next NTFF progress report, inside this call.
      core().arm_test_fault?.(faultFor(msg.profileId, msg.deviceIndex), 'process');
      shownNtff = '';
      const result = s.process(msg.profileId, msg.deviceIndex, progressTo(id));
      shown = result.key;
      shownNtff = ntffOf(msg.profileId, msg.deviceIndex);
      // The decode's spill is read back by then (Summary and derived tables written).
      await dropSpill();
      post({ kind: 'reply', id, ok: true, value: withFiles(result) });
      return;
    }
    case 'processSplit': {
      const s = current();
      if (s.process_split === undefined) throw new Error('this build of the core cannot split a decode');
      releaseShown(s);
      await prepareStore(inputBytes([ntffOf(msg.profileId, msg.deviceIndex)]));
      core().arm_test_fault?.(faultFor(msg.profileId, msg.deviceIndex), 'process');
      shownNtff = '';
      const pipe = msg.pipe;
      const stats: PipeStats = { waitMs: 0, batches: 0, bytes: 0, encodeMs: 0, callMs: 0, writerMs: 0 };
      let result: ReturnType<NonNullable<WasmSession['process_split']>>;
      try {
        result = s.process_split(msg.profileId, msg.deviceIndex, progressTo(id), pipe === undefined ? undefined : pipeSender(pipe, stats));
      } catch (e) {
        pipe?.port.postMessage({ abort: true });
        pipe?.port.close();
        throw e;
      }
      const value = withFiles(result);
      if (pipe !== undefined && result.piped === true) {
        // The finish's tables go the same way (finishSplit ends the pipe).
        stats.encodeMs += pipeMs(result)[0];
        stats.callMs += pipeMs(result)[1];
        openPipes.set(result.key, { pipe, stats });
      } else if (pipe !== undefined) {
        // The core wrote its tables here (a large DMA side): the writer has nothing.
        pipe.port.postMessage({ abort: true });
        pipe.port.close();
      }
      pendingSplits++;
      post({ kind: 'reply', id, ok: true, value });
      return;
    }
    case 'pipeParquet': {
      const s = current();
      if (s.pipe_begin === undefined || store === null) throw new Error('this worker cannot write a pipelined decode');
      await store.prepare();
      s.pipe_begin(msg.key);
      pipeWriter(s, msg.key, msg.pipe);
      post({ kind: 'reply', id, ok: true, value: null });
      return;
    }
    case 'dmaSide': {
      const s = current();
      if (s.dma_side === undefined || store === null) throw new Error('this worker cannot run the DMA side of a split decode');
      // DmaPacket and DmaPacketAggregated are ≈ 75 % of a real-mix capture's Parquet (the owner
      // checks room for all of it).
      await prepareStore(inputBytes([ntffOf(msg.profileId, msg.deviceIndex)]) * 0.75);
      const armed = fault !== null && fault.step === 'dmaSide' && ntffOf(msg.profileId, msg.deviceIndex).includes(fault.on);
      core().arm_test_fault?.(armed ? fault!.kind : '', 'dmaSide');
      const result = s.dma_side(msg.profileId, msg.deviceIndex, progressTo(id));
      const tables = handedFiles(result.stored ?? []);
      // The finishing worker opens these files: close them here (a sync handle is exclusive).
      s.release(result.key);
      store.forget(result.key);
      if (tables.some((t) => t.file === '')) throw new Error('the DMA side kept a table in memory (the file store had no free file)');
      const lod = result.lod;
      // Not withFiles: the files are handed over, not kept; the read-ahead's counts are this reply's.
      const value: DmaSideReply = { key: result.key, side: result.side, lod, tables };
      const ra = readAheadSince();
      if (ra !== undefined) value.readAhead = ra;
      post({ kind: 'reply', id, ok: true, value }, [lod.buffer]);
      return;
    }
    case 'dropHanded': {
      for (const t of msg.tables) {
        const cut = t.file.lastIndexOf('/');
        if (store !== null && t.file.slice(0, cut) === store.dirName) await store.removeFree(t.file.slice(cut + 1));
      }
      post({ kind: 'reply', id, ok: true, value: null });
      return;
    }
    case 'finishSplit': {
      const s = current();
      if (s.finish_split === undefined) throw new Error('this build of the core cannot split a decode');
      // Not prepareStore: the pending decode's spill must stay.
      await store?.prepare();
      // The DMA side's files (none when it failed) and a pipelined decode's.
      const ids = store === null ? [] : await store.reopen(msg.key, msg.tables.map((t) => ({ table: t.name, name: t.file })));
      const tables = msg.tables.map((t, i) => ({ name: t.name, rows: t.rows, file: ids[i]?.id ?? -1, bytes: ids[i]?.bytes ?? 0 }));
      let result: ProcessResult & StoredInfo & { pipeStats?: PipeStats };
      const open = openPipes.get(msg.key);
      openPipes.delete(msg.key);
      try {
        result = s.finish_split(msg.key, msg.side ?? undefined, msg.lod ?? undefined, tables, progressTo(id), open === undefined ? undefined : pipeSender(open.pipe, open.stats));
      } catch (e) {
        open?.pipe.port.postMessage({ abort: true });
        open?.pipe.port.close();
        throw e;
      } finally {
        pendingSplits = Math.max(0, pendingSplits - 1);
      }
      if (open !== undefined) {
        const answer = await pipeEnd(open.pipe);
        if (answer.tables === undefined || store === null || s.add_stored === undefined) {
          // Without the other half's tables this decode is of no use: the page runs it again.
          s.release(result.key);
          throw new Error(`the Parquet writer in the other worker failed: ${answer.error ?? 'no file store'}`);
        }
        const got = await store.reopen(result.key, answer.tables.map((t) => ({ table: t.name, name: t.file })));
        result.stored = s.add_stored(result.key, answer.tables.map((t, i) => ({ name: t.name, rows: t.rows, file: got[i]?.id ?? -1, bytes: got[i]?.bytes ?? 0 })));
        const [encodeMs, callMs] = pipeMs(result);
        result.pipeStats = { ...open.stats, encodeMs: open.stats.encodeMs + encodeMs, callMs: open.stats.callMs + callMs, writerMs: answer.writerMs ?? 0, writerMemory: answer.writerMemory ?? 0 };
      }
      shown = result.key;
      shownNtff = ntffOf(result.profile_id ?? '', Number(result.key.slice(result.key.lastIndexOf('#') + 1)));
      await dropSpill();
      post({ kind: 'reply', id, ok: true, value: withFiles(result) });
      return;
    }
    case 'processSystem': {
      const s = current();
      if (s.process_system === undefined) throw new Error('this build of the core cannot decode system traces');
      releaseShown(s);
      await prepareStore(inputBytes(scanned?.profiles.find((p) => p.id === msg.profileId)?.system_files ?? []));
      const result = s.process_system(msg.profileId, progressTo(id));
      shown = result.key;
      post({ kind: 'reply', id, ok: true, value: withFiles(result) });
      return;
    }
    case 'processMemory': {
      const s = current();
      if (s.process_memory === undefined) throw new Error('this build of the core cannot read memory snapshots');
      releaseShown(s);
      await prepareStore(inputBytes([msg.path]));
      const result = s.process_memory(msg.path);
      shown = result.key;
      post({ kind: 'reply', id, ok: true, value: withFiles(result) });
      return;
    }
    case 'table': {
      const s = current();
      if (msg.format === 'parquet') armTableFault('table', msg.table);
      if (msg.format === 'parquet' && store !== null && s.table_file !== undefined) {
        // On OPFS: hand out the stored file itself (a File, nothing read through wasm).
        const file = s.table_file(msg.key, msg.table);
        if (file !== undefined) {
          post({ kind: 'reply', id, ok: true, value: await store.file(file) });
          return;
        }
      }
      const bytes = msg.format === 'ipc' ? s.table_ipc(msg.key, msg.table) : s.table_parquet(msg.key, msg.table);
      replyBytes(id, bytes);
      return;
    }
    case 'columns': {
      // Older cores lack the projection: fall back to the whole table.
      const s = current();
      armTableFault('columns', msg.table);
      replyBytes(id, s.table_ipc_columns ? s.table_ipc_columns(msg.key, msg.table, msg.columns) : s.table_ipc(msg.key, msg.table));
      return;
    }
    case 'rows': {
      const s = current();
      if (s.table_ipc_rows) replyBytes(id, s.table_ipc_rows(msg.key, msg.table, msg.offset, msg.count));
      else replyBytes(id, s.table_ipc(msg.key, msg.table));
      return;
    }
    case 'bundle': {
      const s = current();
      if (store !== null && s.bundle_file !== undefined) {
        // Streamed from the stored tables into a new OPFS file; the previous zip of this profile goes.
        await store.dropTable(msg.key, 'bundle.zip');
        await store.prepare();
        const file = s.bundle_file(msg.key);
        if (file !== undefined) {
          post({ kind: 'reply', id, ok: true, value: await store.file(file) });
          return;
        }
      }
      replyBytes(id, s.bundle_zip(msg.key));
      return;
    }
    case 'reopen': {
      const s = current();
      if (store === null || s.adopt === undefined) throw new Error('no OPFS store to re-open stored tables from');
      const ids = await store.reopen(msg.key, msg.tables.map((t) => ({ table: t.name, name: t.file })));
      s.adopt(msg.key, msg.tables.map((t, i) => ({ name: t.name, rows: t.rows, file: ids[i]?.id ?? -1, bytes: ids[i]?.bytes ?? 0 })));
      storedKeys.add(msg.key);
      post({ kind: 'reply', id, ok: true, value: null });
      return;
    }
    case 'clearStore': {
      const s = current();
      const key = msg.key ?? null;
      if (key !== null) s.release(key);
      else for (const k of [...storedKeys]) s.release(k);
      if (key === null) storedKeys.clear();
      else storedKeys.delete(key);
      if (key === null || key === shown) shown = null;
      await store?.drop(key);
      post({ kind: 'reply', id, ok: true, value: null });
      return;
    }
    case 'storeInfo': {
      const est = await navigator.storage?.estimate?.().catch(() => null);
      post({ kind: 'reply', id, ok: true, value: { store: store === null ? 'memory' : 'opfs', bytes: store?.bytes() ?? 0, usage: est?.usage ?? null, quota: est?.quota ?? null } });
      return;
    }
    case 'sources': {
      const s = current();
      post({ kind: 'reply', id, ok: true, value: s.sources ? s.sources() : { files: [], loads: [] } });
      return;
    }
    case 'addSources': {
      const s = current();
      if (s.add_source === undefined) throw new Error('this build of the core has no source view');
      const add = s.add_source.bind(s);
      post({ kind: 'reply', id, ok: true, value: msg.files.map((f) => add(f.path, f.file)) });
      return;
    }
    case 'sourceText': {
      const s = current();
      post({ kind: 'reply', id, ok: true, value: s.source_text?.(msg.path) ?? null });
      return;
    }
    case 'sourceResolve': {
      const s = current();
      const resolve = (l: string) => s.source_resolve?.(l) ?? { location: l, debug_path: l, line: 0, files: [] };
      post({ kind: 'reply', id, ok: true, value: msg.locations.map(resolve) });
      return;
    }
    case 'sourceHeat': {
      const s = current();
      if (s.source_heat === undefined) throw new Error('this build of the core has no source heat');
      post({ kind: 'reply', id, ok: true, value: s.source_heat(msg.key) });
      return;
    }
    case 'rangeSummary': {
      const s = current();
      if (s.range_summary === undefined) throw new Error('this build of the core has no selection summary');
      post({ kind: 'reply', id, ok: true, value: s.range_summary(msg.key, msg.start, msg.end, msg.top) });
      return;
    }
    case 'lodTracks': {
      const s = current();
      if (s.lod_tracks === undefined) throw new Error('this build of the core has no timeline summaries');
      post({ kind: 'reply', id, ok: true, value: s.lod_tracks(msg.key) });
      return;
    }
    case 'lod': {
      const s = current();
      if (s.lod === undefined) throw new Error('this build of the core has no timeline summaries');
      // A Float64Array returned by wasm-bindgen is a copy: transfer it.
      const out = s.lod(msg.key, Uint32Array.from(msg.tracks), msg.t0, msg.t1, msg.n);
      post({ kind: 'reply', id, ok: true, value: out }, [out.buffer]);
      return;
    }
    case 'window': {
      const s = current();
      if (s.table_window === undefined) throw new Error('this build of the core has no windowed reads');
      armTableFault('columns', msg.table);
      const w = s.table_window(msg.key, msg.table, msg.columns, msg.t0, msg.t1, msg.limit);
      const ipc = w.ipc.slice();
      post({ kind: 'reply', id, ok: true, value: { ...w, ipc } }, [ipc.buffer]);
      return;
    }
    case 'view': {
      const s = current();
      if (s.table_view === undefined) throw new Error('this build of the core cannot sort or filter tables');
      armTableFault('columns', msg.table);
      post({ kind: 'reply', id, ok: true, value: s.table_view(msg.key, msg.table, msg.sort, msg.desc, msg.filters) });
      return;
    }
    case 'viewRows': {
      const s = current();
      armTableFault('columns', msg.table);
      if (s.table_view_rows) replyBytes(id, s.table_view_rows(msg.key, msg.table, msg.view, msg.offset, msg.count));
      else if (s.table_ipc_rows) replyBytes(id, s.table_ipc_rows(msg.key, msg.table, msg.offset, msg.count));
      else throw new Error('this build of the core has no row ranges');
      return;
    }
    case 'viewPosition': {
      const s = current();
      post({ kind: 'reply', id, ok: true, value: s.table_view_position ? s.table_view_position(msg.view, msg.row) : msg.view === 0 ? msg.row : -1 });
      return;
    }
    case 'search': {
      const s = current();
      if (s.search === undefined) throw new Error('this build of the core has no search');
      post({ kind: 'reply', id, ok: true, value: s.search(msg.key, msg.query, msg.limit) });
      return;
    }
    case 'conform': {
      const s = current();
      if (s.conform === undefined) throw new Error('this build of the core cannot compare with JSON exports');
      post({ kind: 'reply', id, ok: true, value: s.conform(msg.key, msg.exportJson) });
      return;
    }
  }
}

scope.onmessage = (ev: MessageEvent<Envelope>) => {
  const msg = ev.data;
  lastPanic = null;
  handle(msg).catch((e: unknown) => {
    // A Rust panic surfaces as WebAssembly.RuntimeError ("unreachable") after the panic hook ran:
    // report both, never hang; the page then replaces this worker (client.ts).
    const crash = crashOf(e);
    if (crash === null) {
      post({ kind: 'reply', id: msg.id, ok: false, error: describe(e) });
      return;
    }
    crashed = crash.panic ?? crash.trap;
    post({ kind: 'reply', id: msg.id, ok: false, error: describe(e), crash });
  });
};

scope.onerror = (ev: unknown) => {
  post({ kind: 'fatal', error: describe(ev) });
};
scope.onunhandledrejection = (ev: PromiseRejectionEvent) => {
  post({ kind: 'fatal', error: describe(ev.reason) });
};
