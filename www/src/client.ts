// Main-thread proxy for a pool of workers: one promise per request, progress callbacks per request.
//
// The pool: up to `?workers=N` (default navigator.hardwareConcurrency, capped at MAX_WORKERS)
// workers, each with its own wasm instance and OPFS directory. Workers are started on demand: a
// decode goes to a worker that is not decoding, and a new one is started only when every
// running worker is busy decoding. Every later request about a processed profile (`key`) goes to
// the worker that holds its tables; requests about the whole capture (sources) go to worker 0.
// Each decode is a job (`jobs`, views/jobs.ts) with per-stage progress and a cancel.
//
// Crash containment: when a call breaks a wasm instance (a Rust panic, a trap, an out-of-memory
// RangeError; worker.ts reports it with `crash`), the call is rejected with a CoreCrash naming the
// step and the file, that worker alone is terminated and a fresh one started in its place, the
// picked files (File/Blob handles, cheap to post again) are registered with it again, and the
// profiles it held are re-opened from their OPFS files (or, with tables in memory, processed
// again) on first use. Other workers and their profiles are untouched. A cancel is the same
// replacement without the error.

import type { CrashInfo, FaultSpec, FromWorker, InitInfo, PickedFile, PipeEnd, ReplyMap, Request, StoreInfo, StoredInfo, StoreKind } from './protocol.ts';
import type { ColumnFilter, ConformReport, DeviceEntry, Inventory, LodListing, LodWindow, MemoryResult, Problem, ProcessResult, RangeSummary, SourceHeat, SourceInputLoad, SourceListing, SourceResolved, SearchResult, SystemResult, TableViewInfo } from './api.ts';
import { clearStale, opfsListable, STORE_DIR, sweepDir } from './opfs.ts';
import { PIPE_DEPTH, PIPE_SLOT_BYTES } from './protocol.ts';
import type { ReadAheadStats } from './readahead.ts';

type Progress = (stage: string, done: number, total: number) => void;

/** Most workers started, whatever the machine or `?workers=` says (each holds a wasm instance). */
export const MAX_WORKERS = 8;

/**
 * NTFF size from which a device decode is split over two workers (`splitDecode`): below it the
 * second worker's start-up and the hand-over cost more than the ≈ 35 % of the decode it takes.
 * `?split=always|off|<bytes>` overrides it (tests, benchmarks).
 */
export const SPLIT_MIN_BYTES = 64 << 20;

/** Runs `remove` (a deletion returning how many files stayed locked) in a second, again each second while some stay, at most `tries` times. */
function retryLocked(remove: () => Promise<number>, tries: number): void {
  setTimeout(() => {
    void remove()
      .catch(() => 0)
      .then((locked) => {
        if (locked > 0 && tries > 1) retryLocked(remove, tries - 1);
      });
  }, 1000);
}

/** `?split=`: the smallest NTFF split over two workers (0: every v6 NTFF; Infinity: none). */
function splitMin(): number {
  const q = new URLSearchParams(globalThis.location?.search ?? '').get('split');
  if (q === 'always') return 0;
  if (q === 'off') return Infinity;
  const n = Number(q);
  return q !== null && q !== '' && Number.isFinite(n) && n >= 0 ? n : SPLIT_MIN_BYTES;
}

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  progress?: Progress;
  req: Request;
  /** Last progress report of this request (names how far a failed decode got). */
  last?: { stage: string; done: number; total: number };
  job?: Job;
  /** performance.now() when it was sent (the `worker <n>: <op>` user-timing span at its answer). */
  sentAt?: number;
}

/** A call that broke the wasm core: what it was doing, on which file, and what the core said. */
export class CoreCrash extends Error {
  constructor(
    /** The step, e.g. `process device fused_exec_2 (NTFF, 1.2 MB of 3.0 MB)`, `table read Instruction`. */
    readonly step: string,
    /** The picked file the step was reading (null when it spans the whole capture). */
    readonly file: string | null,
    /** What the core reported (panic message and location, or the trap). */
    readonly detail: string,
    /** Worker restarts so far, this one included. */
    readonly restarts: number,
  ) {
    super(`the wasm core crashed in step “${step}”${file !== null ? ` on ${file}` : ''}: ${detail}. The worker was restarted; the other profiles stay usable`);
    this.name = 'CoreCrash';
  }
}

/** A decode the user cancelled (`CoreClient.cancel`). */
export class Cancelled extends Error {
  constructor(readonly file: string | null) {
    super(`cancelled${file !== null ? `: ${file}` : ''}`);
    this.name = 'Cancelled';
  }
}

/** One decode (process, processSystem, processMemory) as views/jobs.ts shows it. */
export interface Job {
  id: number;
  /** What is decoded: the file (NTFF, system files, snapshot). */
  file: string;
  /** Input bytes. */
  bytes: number;
  /** Worker index. */
  worker: number;
  /** The worker that decoded the DMA side of a split decode (null: not split). */
  helper: number | null;
  /** Why that worker's half was not used (it failed; the pass ran on `worker`), else null. */
  helperError: string | null;
  /** That worker also wrote the decoding worker's Parquet (a pipelined split decode). */
  piped?: boolean;
  state: 'running' | 'done' | 'failed' | 'cancelled';
  /** Current stage (core progress: NTFF, NEFF, pairing, …) and its done/total (bytes, or items). */
  stage: string;
  done: number;
  total: number;
  /** Rows written so far (the core's progress; the final count when done). */
  rows: number;
  /** When done: rows outside `SchemaFields` and `Warning` (what a damaged input's decode kept). */
  dataRows?: number;
  /** Parquet bytes stored (when done). */
  storedBytes: number;
  /** The worker's wasm memory after the decode (bytes, when done; its high-water mark). */
  wasmMemory: number;
  /** Its stored tables were deleted ("Clear stored profiles"). */
  cleared?: boolean;
  /** performance.now() at the start and at the end (ms). */
  started: number;
  ended: number | null;
  /** performance.now() when the current stage began and its `done` then (the ETA's rate). */
  stageStarted: number;
  error: string | null;
  /** Errors the finished decode reported (the first is `error`); the rows before each are kept. */
  problems?: number;
}

/** Pipe ports already transferred to a worker (a port goes once). */
const sentPorts = new WeakSet<MessagePort>();

/** Sets a pipe's stop flag (protocol.ts PipeEnd) and wakes the decoding worker waiting on it. */
function stopPipe(control: SharedArrayBuffer): void {
  const c = new Int32Array(control);
  Atomics.store(c, 1, 1);
  Atomics.notify(c, 0);
}

/** Requests that process something and the key their result is kept under. */
function producesKey(req: Request): boolean {
  return req.op === 'process' || req.op === 'processSystem' || req.op === 'processMemory';
}

/** The key the core gives a processing request's result (crate/src/wasm.rs). */
function keyFor(req: Request): string | null {
  if (req.op === 'process') return `${req.profileId}#${req.deviceIndex}`;
  if (req.op === 'processSystem') return `${req.profileId}#system`;
  if (req.op === 'processMemory') return `${req.path}#memory`;
  return null;
}

/** The processed-profile key a request reads, if any. */
function keyOf(req: Request): string | null {
  return 'key' in req && typeof req.key === 'string' ? req.key : null;
}

/** Requests about the capture as a whole: answered by worker 0 (it holds the source index). */
function onFirst(req: Request): boolean {
  return req.op === 'sources' || req.op === 'addSources' || req.op === 'sourceText' || req.op === 'sourceResolve';
}

function sizeText(n: number): string {
  if (n >= 1 << 30) return `${(n / (1 << 30)).toFixed(2)} GiB`;
  if (n >= 1 << 20) return `${(n / (1 << 20)).toFixed(1)} MiB`;
  if (n >= 1 << 10) return `${(n / (1 << 10)).toFixed(1)} KiB`;
  return `${n} B`;
}

/** Pool size from `?workers=N`, else the machine's cores; 1 … MAX_WORKERS. */
function poolSize(): number {
  const q = Number(new URLSearchParams(globalThis.location?.search ?? '').get('workers'));
  const n = Number.isFinite(q) && q >= 1 ? q : (globalThis.navigator?.hardwareConcurrency ?? 1);
  return Math.max(1, Math.min(MAX_WORKERS, Math.floor(n)));
}

/** One worker of the pool and what it holds. */
interface Slot {
  index: number;
  worker: Worker;
  /** Its OPFS directory (kept across restarts, so a replacement re-opens the files). */
  dir: string;
  pending: Map<number, Pending>;
  /** Resolves when the worker is ready for calls (a restart replaces it). */
  ready: Promise<void>;
  /** A restart is replaying the session: a crash now is reported, not answered with another restart. */
  restoring: boolean;
  initialized: boolean;
  /** Keys whose tables the worker holds now. */
  live: Set<string>;
  /** Keys the previous (crashed or cancelled) worker held: re-opened or processed again on first use. */
  lost: Set<string>;
  redoing: Map<string, Promise<void>>;
  /** Decodes running. */
  decoding: number;
}

/**
 * What the workers' answers brought to the main thread since the page loaded: bytes of their binary
 * data (typed arrays, ArrayBuffers) and strings (UTF-16 code units × 2), the answers counted, and
 * the largest one. Read by tests as window.__neuronscope.received: the design bound (nothing
 * proportional to the input on the main thread) measured without a clock.
 */
export interface Received {
  bytes: number;
  messages: number;
  largest: number;
  /** Progress reports (not in the counts above). */
  progress: number;
  /** Whether an answer had more parts than were walked (its count is then low). */
  partial: boolean;
}

const received: Received = { bytes: 0, messages: 0, largest: 0, progress: 0, partial: false };
{
  const g = globalThis as { __neuronscope?: { received?: () => Received } };
  (g.__neuronscope ??= {}).received = () => ({ ...received });
}

/** What the workers' read-ahead did since the page loaded (readahead.ts), summed over their results; read by tests as window.__neuronscope.readAhead. */
const readAheadTotals: ReadAheadStats = { served: 0, missed: 0, asked: 0, waitMs: 0 };
{
  const g = globalThis as { __neuronscope?: { readAhead?: () => ReadAheadStats } };
  (g.__neuronscope ??= {}).readAhead = () => ({ ...readAheadTotals });
}

/** Adds a result's read-ahead counts (if it has any) to readAheadTotals. */
function countReadAhead(value: unknown): void {
  const r = (value as { readAhead?: ReadAheadStats } | null)?.readAhead;
  if (typeof r !== 'object' || r === null) return;
  readAheadTotals.served += r.served;
  readAheadTotals.missed += r.missed;
  readAheadTotals.asked += r.asked;
  readAheadTotals.waitMs += r.waitMs;
}

/** Most parts of one answer payloadBytes visits (large JSON reports): beyond it, received.partial. */
const WALK_BUDGET = 100_000;

/**
 * Bytes of `v`'s binary data and strings (numbers 8 bytes each), walked to a small depth (answers
 * are shallow) and over at most WALK_BUDGET parts, so counting stays cheap beside the answer.
 */
function payloadBytes(v: unknown, budget: { left: number }, depth = 0): number {
  if (typeof v === 'string') return v.length * 2;
  if (typeof v === 'number') return 8;
  if (v === null || typeof v !== 'object' || depth > 8) return 0;
  if (v instanceof ArrayBuffer) return v.byteLength;
  if (ArrayBuffer.isView(v)) return v.byteLength;
  const parts: unknown[] = Array.isArray(v) ? v : Object.values(v);
  if (parts.length > budget.left) {
    received.partial = true;
    return 0;
  }
  budget.left -= parts.length;
  let n = 0;
  // Strings and numbers inline: lists of names are the long ones.
  for (const x of parts) n += typeof x === 'string' ? x.length * 2 : typeof x === 'number' ? 8 : payloadBytes(x, budget, depth + 1);
  return n;
}

function countReceived(msg: unknown): void {
  const n = payloadBytes(msg, { left: WALK_BUDGET });
  received.bytes += n;
  received.messages++;
  if (n > received.largest) received.largest = n;
}

export class CoreClient {
  private readonly slots: Slot[] = [];
  private nextId = 1;
  /** Called when a worker dies outside any request (e.g. a failed module load). */
  onFatal: (message: string) => void = () => {};
  /** Called after a crash once the replacement worker is being started (`restarts` counts them). */
  onRestart: (crash: CoreCrash) => void = () => {};
  /** Called whenever a job starts, progresses or ends. */
  onJobs: (jobs: readonly Job[]) => void = () => {};
  /** Worker restarts after crashes (cancels not counted). */
  restarts = 0;
  /** Most workers this pool starts. */
  readonly maxWorkers = poolSize();
  /** Where tables are kept (from the first worker's init) and why not on disk. */
  store: StoreKind = 'memory';
  storeNote: string | null = null;
  private pkgUrl: string | null = null;
  private fault: FaultSpec | null = null;
  /** May the workers read ahead (readahead.ts; they start it only in a cross-origin isolated page)? `?readahead=off` turns it off. */
  private readonly readAheadOk = new URLSearchParams(globalThis.location?.search ?? '').get('readahead') !== 'off';
  /** Distinguishes this page load's OPFS directories from other tabs'. */
  private readonly pageId = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
  /** The requests that built the current session (load or demo, then addSources): replayed into a new worker. */
  private session: Request[] = [];
  private inventory: Inventory | null = null;
  /** Processed key → the request that produced it, its result, the file it read and the worker holding it. */
  private readonly produced = new Map<string, { req: Request; result: unknown; file: string | null; slot: number }>();
  private readonly jobList: Job[] = [];

  /** Jobs of this session, oldest first. */
  get jobs(): readonly Job[] {
    return this.jobList;
  }
  /** Workers running now. */
  get workers(): number {
    return this.slots.length;
  }

  private spawn(index: number): Worker {
    const w = new Worker(new URL('./worker.ts', import.meta.url), { type: 'module', name: `neuronscope-core-${index}` });
    w.onmessage = (ev: MessageEvent<FromWorker>) => this.receive(index, ev.data);
    w.onerror = (ev: ErrorEvent) => {
      ev.preventDefault();
      this.failAll(index, ev.message || 'the worker failed to start');
    };
    return w;
  }

  /** Starts worker `index` (the core loaded, the session registered). */
  private addSlot(): Slot {
    const index = this.slots.length;
    const slot: Slot = {
      index,
      worker: this.spawn(index),
      dir: `${this.pageId}-w${index}`,
      pending: new Map(),
      ready: Promise.resolve(),
      restoring: false,
      initialized: false,
      live: new Set(),
      lost: new Set(),
      redoing: new Map(),
      decoding: 0,
    };
    this.slots.push(slot);
    if (index > 0) slot.ready = this.boot(slot);
    return slot;
  }

  /** Loads the core in `slot`'s (new) worker and replays the session into it. */
  private async boot(slot: Slot): Promise<void> {
    slot.restoring = true;
    try {
      await this.raw(slot, { op: 'init', pkgUrl: this.pkgUrl ?? '', fault: this.fault, storeDir: this.storeDir(slot), readAhead: this.readAheadOk });
      slot.initialized = true;
      for (const req of this.session) {
        if (req.op === 'addSources' && slot.index !== 0) continue;
        await this.raw(slot, req);
      }
    } finally {
      slot.restoring = false;
    }
  }

  private storeDir(slot: Slot): string | null {
    return new URLSearchParams(globalThis.location?.search ?? '').get('store') === 'memory' ? null : slot.dir;
  }

  private receive(index: number, msg: FromWorker): void {
    const slot = this.slots[index];
    if (slot === undefined) return;
    if (msg.kind !== 'progress') countReceived(msg);
    else received.progress++;
    if (msg.kind === 'fatal') {
      this.failAll(index, msg.error);
      return;
    }
    const p = slot.pending.get(msg.id);
    if (p === undefined) return;
    if (msg.kind === 'progress') {
      p.last = { stage: msg.stage, done: msg.done, total: msg.total };
      p.progress?.(msg.stage, msg.done, msg.total);
      if (p.job !== undefined) this.jobProgress(p.job, msg.stage, msg.done, msg.total, msg.rows);
      return;
    }
    slot.pending.delete(msg.id);
    // Every call as a user-timing span (scripts/bench-lod.mjs lists the longest).
    if (p.sentAt !== undefined) performance.measure(`worker ${index + 1}: ${p.req.op}`, { start: p.sentAt });
    if (msg.ok) {
      countReadAhead(msg.value);
      p.resolve(msg.value);
      return;
    }
    if (msg.crash === undefined) {
      p.reject(new Error(msg.error));
      return;
    }
    if (slot.restoring || !slot.initialized) {
      p.reject(new Error(`${msg.error} (${msg.crash.panic ?? msg.crash.trap})`));
      return;
    }
    this.restarts++;
    const crash = this.crashOf(p, msg.crash);
    // The failed call first: a Promise.all over several reads then reports the crash itself.
    p.reject(crash);
    this.replace(slot, p.req, crash);
    this.onRestart(crash);
  }

  /** Names the step and the file of the failed request `p`. */
  private crashOf(p: Pending, info: CrashInfo): CoreCrash {
    const req = p.req;
    const at = p.last === undefined ? '' : p.last.total > 1
      ? ` (${p.last.stage}, ${p.last.total > 4096 ? `${sizeText(p.last.done)} of ${sizeText(p.last.total)}` : `${p.last.done}/${p.last.total}`})`
      : ` (${p.last.stage})`;
    const fileOfKey = (key: string): string | null => this.produced.get(key)?.file ?? null;
    let step: string = req.op;
    let file: string | null = null;
    switch (req.op) {
      case 'init': step = 'loading the wasm core'; break;
      case 'load': step = `scan of ${req.files.length} picked files`; break;
      case 'demo': step = 'scan of the demo capture'; break;
      case 'process': {
        const dev = this.inventory?.profiles.find((q) => q.id === req.profileId)?.devices[req.deviceIndex];
        step = `process device ${dev?.name ?? req.deviceIndex} of profile ${req.profileId}${at}`;
        file = dev?.ntff ?? dev?.neff ?? null;
        break;
      }
      case 'processSplit':
      case 'finishSplit':
      case 'dmaSide': {
        const dev = req.op === 'finishSplit' ? this.deviceOfKey(req.key) : this.inventory?.profiles.find((q) => q.id === req.profileId)?.devices[req.deviceIndex];
        const part = req.op === 'dmaSide' ? 'DMA side of the split decode of' : req.op === 'processSplit' ? 'process (split) device' : 'Summary of the split decode of';
        step = `${part} ${dev?.name ?? ''}${at}`;
        file = dev?.ntff ?? null;
        break;
      }
      case 'processSystem': {
        const prof = this.inventory?.profiles.find((q) => q.id === req.profileId);
        step = `process system trace of profile ${req.profileId}${at}`;
        file = prof?.system_files?.join(', ') ?? null;
        break;
      }
      case 'processMemory': step = `process memory snapshot${at}`; file = req.path; break;
      case 'table': step = `table read ${req.table} (${req.format === 'ipc' ? 'Arrow' : 'Parquet'})`; file = fileOfKey(req.key); break;
      case 'columns': step = `table read ${req.table} (${req.columns.length} columns)`; file = fileOfKey(req.key); break;
      case 'rows': step = `table read ${req.table} (rows ${req.offset}..${req.offset + req.count})`; file = fileOfKey(req.key); break;
      case 'bundle': step = 'zip of every table'; file = fileOfKey(req.key); break;
      case 'sources': step = 'source index'; break;
      case 'addSources': step = 'adding source files'; file = req.files.map((f) => f.path).join(', '); break;
      case 'sourceText': step = 'source text'; file = req.path; break;
      case 'sourceResolve': step = 'source location lookup'; break;
      case 'sourceHeat': step = 'device time per source line'; file = fileOfKey(req.key); break;
      case 'conform': step = 'comparison with the JSON export'; file = fileOfKey(req.key); break;
      case 'lodTracks': step = 'timeline track list'; file = fileOfKey(req.key); break;
      case 'lod': step = `timeline summaries (${req.tracks.length} tracks)`; file = fileOfKey(req.key); break;
      case 'window': step = `table read ${req.table} (time window)`; file = fileOfKey(req.key); break;
      case 'rangeSummary': step = 'selection summary'; file = fileOfKey(req.key); break;
      case 'view': step = `table sort/filter ${req.table}`; file = fileOfKey(req.key); break;
      case 'viewRows': step = `table read ${req.table} (view rows ${req.offset}..${req.offset + req.count})`; file = fileOfKey(req.key); break;
      case 'search': step = 'search'; file = fileOfKey(req.key); break;
      case 'reopen': step = 're-opening stored tables'; file = fileOfKey(req.key); break;
      case 'clearStore': step = 'clearing stored profiles'; break;
      case 'storeInfo': step = 'storage estimate'; break;
      default: {
        const k = keyOf(req);
        if (k !== null) file = fileOfKey(k);
      }
    }
    const detail = info.panic !== null
      ? info.panic.replace(/\n/g, ' ')
      : `${info.trap}, no panic message (an abort such as a failed allocation; wasm memory was ${sizeText(info.memoryBytes)} of 4 GiB)`;
    return new CoreCrash(step, file, detail, this.restarts);
  }

  /**
   * Replaces `slot`'s worker (crashed, or cancelled: `crash` null): a fresh one in the same OPFS
   * directory, the core loaded, the session's files registered again. After a crash the requests
   * queued behind the failed one fail with it; after a cancel they are sent to the new worker.
   */
  private replace(slot: Slot, failed: Request, crash: CoreCrash | null): void {
    // A pipe this worker wrote is gone with it: the decoding worker must not wait on it.
    for (const [control, writer] of this.pipes) if (writer === slot) stopPipe(control);
    const old = slot.worker;
    old.onmessage = null;
    old.onerror = null;
    old.terminate();
    const queued = [...slot.pending.values()];
    slot.pending.clear();
    slot.decoding = 0;
    if (crash !== null) for (const p of queued) this.settleJob(p, 'failed', crash.message), p.reject(crash);
    // A session whose scan crashed is not replayed (it would crash again); the profile whose
    // processing failed is not kept.
    if (crash !== null && (failed.op === 'load' || failed.op === 'demo')) this.session = [];
    const failedKey = keyFor(failed);
    if (failedKey !== null) slot.live.delete(failedKey);
    slot.lost = new Set([...slot.lost, ...slot.live]);
    slot.live = new Set();
    slot.redoing.clear();
    slot.initialized = false;
    slot.worker = this.spawn(slot.index);
    slot.ready = this.boot(slot).catch((e: unknown) => {
      slot.lost.clear();
      this.onFatal(`the capture could not be registered with the restarted worker (${e instanceof Error ? e.message : String(e)}); pick it again`);
    });
    // The terminated worker's partial tables and free files stay in the directory otherwise.
    this.sweepLater(slot.dir, Date.now());
    if (crash === null) {
      for (const p of queued) {
        void slot.ready
          .then(async () => {
            const k = keyOf(p.req);
            if (k !== null && slot.lost.has(k)) await this.redo(slot, k);
            this.send(slot, p);
          })
          .catch((e: unknown) => p.reject(e instanceof Error ? e : new Error(String(e))));
      }
    }
  }

  private failAll(index: number, message: string): void {
    const slot = this.slots[index];
    if (slot === undefined) return;
    for (const p of slot.pending.values()) this.settleJob(p, 'failed', message), p.reject(new Error(message));
    slot.pending.clear();
    this.onFatal(message);
  }

  /** Posts `req` to `slot`'s worker as it is. */
  private raw<K extends Request['op']>(slot: Slot, req: Extract<Request, { op: K }>, progress?: Progress, job?: Job): Promise<ReplyMap[K]> {
    return new Promise<ReplyMap[K]>((resolve, reject) => {
      const entry: Pending = { resolve: (v) => resolve(v as ReplyMap[K]), reject, req };
      if (progress !== undefined) entry.progress = progress;
      if (job !== undefined) entry.job = job;
      this.send(slot, entry);
    });
  }

  private send(slot: Slot, entry: Pending): void {
    const id = this.nextId++;
    entry.sentAt = performance.now();
    slot.pending.set(id, entry);
    // Transfer only a pipe's port (picked files are handles, export JSON is small enough to
    // copy); a request sent again after a restart goes without its pipe, whose port went with the first.
    const req = entry.req;
    const pipe = req.op === 'processSplit' || req.op === 'pipeParquet' ? req.pipe : undefined;
    if (pipe === undefined) {
      slot.worker.postMessage({ ...req, id });
    } else if (!sentPorts.has(pipe.port)) {
      sentPorts.add(pipe.port);
      slot.worker.postMessage({ ...req, id }, [pipe.port]);
    } else if (req.op === 'processSplit') {
      slot.worker.postMessage({ op: req.op, profileId: req.profileId, deviceIndex: req.deviceIndex, id });
    } else {
      slot.pending.delete(id);
      entry.reject(new Error('a pipe goes to one worker once'));
    }
  }

  /** Brings a profile the replaced worker held back before the first call that reads it: re-opened from OPFS, or processed again. */
  private redo(slot: Slot, key: string): Promise<void> {
    let r = slot.redoing.get(key);
    if (r === undefined) {
      const prod = this.produced.get(key);
      const stored = (prod?.result as StoredInfo | undefined)?.stored;
      const tables = (prod?.result as { tables?: { name: string; rows: number }[] } | undefined)?.tables ?? [];
      const files = stored?.every((t) => t.file !== undefined)
        ? tables.map((t) => ({ name: t.name, rows: t.rows, file: stored.find((s) => s.name === t.name)?.file ?? '' }))
        : null;
      r = prod === undefined
        ? Promise.resolve()
        : files !== null && files.every((f) => f.file !== '')
          ? this.raw(slot, { op: 'reopen', key, tables: files }).then(() => undefined)
          : this.raw(slot, prod.req).then(() => undefined);
      r = r.then(() => {
        slot.lost.delete(key);
        if (this.store === 'memory') slot.live.clear();
        slot.live.add(key);
      });
      slot.redoing.set(key, r);
      void r.finally(() => slot.redoing.delete(key)).catch(() => {});
    }
    return r;
  }

  /** The worker for `req`: the owner of its key, worker 0 for the capture, else one not decoding (started if need be). */
  private route(req: Request): Slot {
    const first = this.slots[0];
    if (first === undefined) throw new Error('the core is not initialised');
    const key = keyOf(req) ?? keyFor(req);
    const owner = key === null ? undefined : this.produced.get(key);
    if (owner !== undefined) return this.slots[owner.slot] ?? first;
    if (!producesKey(req) || onFirst(req)) return first;
    const idle = this.slots.filter((s) => s.decoding === 0);
    // A decode in the background (processSystemAside) with tables in wasm memory goes to a worker
    // holding none: a decode frees what its worker holds, and that may be the profile on screen.
    if (this.store === 'memory' && key !== null && this.aside.has(key)) {
      const empty = idle.find((s) => s.live.size === 0 && s.pending.size === 0);
      if (empty !== undefined) return empty;
      if (this.slots.length < this.maxWorkers && this.pkgUrl !== null) return this.addSlot();
    }
    if (idle.length > 0) return idle.reduce((a, b) => (b.pending.size < a.pending.size ? b : a));
    if (this.slots.length < this.maxWorkers && this.pkgUrl !== null) return this.addSlot();
    return this.slots.reduce((a, b) => (b.decoding < a.decoding ? b : a));
  }

  /**
   * Decodes of a profile in flight, by profile key: asking again while one runs waits for it
   * instead of starting a second, and gets its progress from then on (`listeners`).
   */
  private readonly inFlight = new Map<string, { done: Promise<unknown>; listeners: Set<Progress> }>();
  /** Keys of the decodes processSystemAside started (routed apart while in flight). */
  private readonly aside = new Set<string>();

  private call<K extends Request['op']>(req: Extract<Request, { op: K }>, progress?: Progress): Promise<ReplyMap[K]> {
    const made = producesKey(req) ? keyFor(req) : null;
    if (made === null) return this.callNow(req, progress);
    const running = this.inFlight.get(made);
    if (running !== undefined) {
      if (progress !== undefined) running.listeners.add(progress);
      return running.done as Promise<ReplyMap[K]>;
    }
    const listeners = new Set<Progress>(progress === undefined ? [] : [progress]);
    const fan: Progress = (stage, done, total) => {
      for (const l of listeners) l(stage, done, total);
    };
    const p = this.callNow(req, fan).finally(() => this.inFlight.delete(made));
    this.inFlight.set(made, { done: p, listeners });
    return p;
  }

  private async callNow<K extends Request['op']>(req: Extract<Request, { op: K }>, progress?: Progress): Promise<ReplyMap[K]> {
    await this.slots[0]?.ready;
    // A profile still held (on OPFS) is not decoded again.
    const made = keyFor(req);
    const have = made === null ? undefined : this.produced.get(made);
    if (have !== undefined && this.store === 'opfs') {
      const slot = this.slots[have.slot];
      if (slot !== undefined) {
        await slot.ready;
        if (slot.lost.has(made!)) await this.redo(slot, made!);
        if (slot.live.has(made!)) return have.result as ReplyMap[K];
      }
    }
    const slot = this.route(req);
    await slot.ready;
    const key = keyOf(req);
    if (key !== null && slot.lost.has(key)) await this.redo(slot, key);
    let job: Job | undefined;
    if (producesKey(req)) {
      // With tables in memory the worker frees the profile it held before processing another.
      if (this.store === 'memory') {
        slot.live.clear();
        slot.lost.clear();
      }
      job = this.startJob(req, slot.index);
      slot.decoding++;
    }
    try {
      const r: Request = req;
      const value = (r.op === 'process' ? await this.splitDecode(slot, r, progress, job) : await this.raw(slot, req, progress, job)) as ReplyMap[K];
      this.record(slot, req, value);
      if (job !== undefined) this.settleJob({ req, job, resolve: () => {}, reject: () => {} }, 'done', null, value);
      return value;
    } catch (e) {
      if (job !== undefined) this.settleJob({ req, job, resolve: () => {}, reject: () => {} }, e instanceof Cancelled ? 'cancelled' : 'failed', e instanceof Error ? e.message : String(e));
      throw e;
    } finally {
      if (job !== undefined) slot.decoding = Math.max(0, slot.decoding - 1);
    }
  }

  /** Files (`<dir>/<name>`) handed from one worker to another and not yet re-opened. */
  private readonly handing = new Set<string>();

  /** Names of the files in this page's directory `dir` that stored profiles (or a hand-over in flight) still use. */
  private keepIn(dir: string): Set<string> {
    const keep = new Set<string>();
    const add = (owner: string | undefined, file: string) => {
      const cut = file.lastIndexOf('/');
      if ((cut < 0 ? owner : file.slice(0, cut)) === dir) keep.add(file.slice(cut + 1));
    };
    for (const p of this.produced.values()) {
      const owner = this.slots[p.slot]?.dir;
      for (const t of (p.result as StoredInfo | undefined)?.stored ?? []) if (t.file !== undefined) add(owner, t.file);
    }
    for (const f of this.handing) add(undefined, f);
    return keep;
  }

  /** Deletes what a worker terminated before `before` left in `dir` (its files unlock a moment after it goes). */
  private sweepLater(dir: string, before: number): void {
    if (!opfsListable() || this.store !== 'opfs') return;
    retryLocked(() => sweepDir(dir, this.keepIn(dir), before), 10);
  }

  /** Counts captures picked (load, demo): a split decode begun under an older one is superseded. */
  private generation = 0;
  /** Minimum NTFF bytes for a split decode (`?split=`). */
  private readonly splitFrom = splitMin();
  /** Job id → the worker running the DMA side of its split decode (a cancel stops it too). */
  private readonly helpers = new Map<number, Slot>();

  /**
   * A device decode, split over two workers when it pays: a v6 NTFF of at least `splitFrom`
   * bytes, tables on OPFS and a second worker allowed. `slot` decodes the NEFF, instructions,
   * semaphores and throttles (`processSplit`) while another worker decodes the DMA side
   * (`dmaSide`: DmaPacket, DmaPacketAggregated and DmaUsage into its own directory, with their
   * timeline summaries); then `slot` takes its files, summaries and figures and writes the
   * Summary and derived tables (`finishSplit`). The tables are those one worker writes
   * (crate/tests/end_to_end.rs `split_decode_equals_one_thread`, tests/browser/split.test.mjs).
   * When the other worker fails or crashes, `slot` decodes the DMA side itself. Else one `process`.
   */
  private async splitDecode(slot: Slot, req: Extract<Request, { op: 'process' }>, progress?: Progress, job?: Job, mayPipe = true): Promise<ReplyMap['process']> {
    const dev = this.inventory?.profiles.find((q) => q.id === req.profileId)?.devices[req.deviceIndex];
    const size = this.inventory?.files.find((f) => f.path === dev?.ntff)?.size ?? 0;
    const helper = this.store === 'opfs' && (dev?.ntff_version ?? 0) >= 6 && size >= this.splitFrom && size > 0 ? this.helperFor(slot) : null;
    if (helper === null) return this.raw(slot, req, progress, job);
    const tReady = performance.now();
    await helper.ready;
    performance.measure('split: waited for the second worker to start', { start: tReady });
    helper.decoding++;
    if (job !== undefined) {
      this.helpers.set(job.id, helper);
      job.helper = helper.index;
    }
    const { profileId, deviceIndex } = req;
    const generation = this.generation;
    // Each half's span, for scripts/bench-lod.mjs ("page spans").
    const t0 = performance.now();
    // Pipelined when the page may share memory between workers: the helper also writes this
    // worker's Parquet (the core declines when the DMA side is large; crate/src/wasm.rs).
    const pipe = this.pipeOk && mayPipe ? await this.openPipe(helper, `${profileId}#${deviceIndex}~pipe`) : null;
    const side = this.raw(helper, { op: 'dmaSide', profileId, deviceIndex })
      // A crash of that worker stops its pipe too (replace); a failed DMA side leaves the writer running.
      .catch((e: unknown) => (e instanceof Error ? e : new Error(String(e))))
      .finally(() => {
        performance.measure('split: DMA rows (second worker)', { start: t0 });
        helper.decoding = Math.max(0, helper.decoding - 1);
        if (job !== undefined) this.helpers.delete(job.id);
      });
    try {
      const first = await this.raw(slot, pipe === null ? { op: 'processSplit', profileId, deviceIndex } : { op: 'processSplit', profileId, deviceIndex, pipe }, progress, job);
      performance.measure('split: the rest (owner)', { start: t0 });
      const key = first.key;
      if (job !== undefined) job.piped = first.piped === true;
      // The core declined (a large DMA side): the writer has gone.
      if (first.piped !== true && pipe !== null) this.pipes.delete(pipe.control);
      const other = await side;
      // Another capture was picked meanwhile: both workers' sessions were replaced.
      if (generation !== this.generation) throw new Cancelled(this.fileOf(req));
      const t1 = performance.now();
      const handed = other instanceof Error || other.tables.some((t) => t.file === '') ? null : other;
      // Closed in the second worker and not yet re-opened here: no sweep may delete them.
      for (const t of handed?.tables ?? []) this.handing.add(t.file);
      if (job !== undefined && handed === null) job.helperError = other instanceof Error ? other.message : 'its table stayed in memory';
      try {
        const done = await this.raw(slot, { op: 'finishSplit', key, side: handed?.side ?? null, lod: handed?.lod ?? null, tables: handed?.tables ?? [] }, progress, job);
        performance.measure('split: finish (owner)', { start: t1 });
        const ps = done.pipeStats;
        if (ps !== undefined) {
          // For scripts/bench-lod.mjs ("page spans"): how long each end of the pipe was busy or waiting.
          performance.measure(`split: owner waited on the pipe (${ps.batches} batches, ${(ps.bytes / 1e6).toFixed(0)} MB)`, { start: t0, duration: ps.waitMs });
          performance.measure(`split: pipe writer busy (second worker, wasm memory ${((ps.writerMemory ?? 0) / 2 ** 20).toFixed(0)} MiB)`, { start: t0, duration: ps.writerMs });
          performance.measure('split: owner encoding IPC for the pipe', { start: t0, duration: ps.encodeMs });
          performance.measure('split: owner posting to the pipe', { start: t0, duration: ps.callMs });
        }
        return done;
      } finally {
        for (const t of handed?.tables ?? []) this.handing.delete(t.file);
      }
    } catch (e) {
      // This worker failed: the other one's files are not needed.
      void side.then((o) => (o instanceof Error ? undefined : this.raw(helper, { op: 'dropHanded', tables: o.tables }))).catch(() => {});
      // The other worker's Parquet writer failed (it crashed, or its store did): once more without the pipe.
      if (pipe !== null && generation === this.generation && e instanceof Error && /Parquet writer/.test(e.message)) {
        this.pipes.delete(pipe.control);
        if (job !== undefined) {
          // The cause: that worker's crash when it crashed (its DMA side then failed with it), else the writer's error.
          const other = await side;
          job.helperError = other instanceof Error ? other.message : e.message;
          job.piped = false;
        }
        return this.splitDecode(slot, req, progress, job, false);
      }
      throw e;
    } finally {
      if (pipe !== null) this.pipes.delete(pipe.control);
    }
  }

  /** The device entry of processed key `<profile id>#<device index>`. */
  private deviceOfKey(key: string): DeviceEntry | undefined {
    const cut = key.lastIndexOf('#');
    return this.inventory?.profiles.find((q) => q.id === key.slice(0, cut))?.devices[Number(key.slice(cut + 1))];
  }

  /** May a split decode pipeline its Parquet to the other worker? Needs SharedArrayBuffer (a cross-origin isolated page); `?pipe=off` turns it off. */
  private readonly pipeOk = typeof SharedArrayBuffer === 'function' && globalThis.crossOriginIsolated === true && new URLSearchParams(globalThis.location?.search ?? '').get('pipe') !== 'off';

  /** Open pipes (their control cells) → the worker writing them: its crash or cancel stops them (replace). */
  private readonly pipes = new Map<SharedArrayBuffer, Slot>();

  /** Starts the Parquet writer of a pipelined split decode in `helper` under store key `key`; the decoding worker's end of the pipe, or null when the helper cannot (the decode then writes its own). */
  private async openPipe(helper: Slot, key: string): Promise<PipeEnd | null> {
    const channel = new MessageChannel();
    const control = new SharedArrayBuffer(8);
    const slots = new SharedArrayBuffer(PIPE_DEPTH * PIPE_SLOT_BYTES);
    try {
      await this.raw(helper, { op: 'pipeParquet', key, pipe: { port: channel.port2, control, slots } });
      this.pipes.set(control, helper);
      return { port: channel.port1, control, slots };
    } catch {
      channel.port1.close();
      return null;
    }
  }

  /** A worker other than `slot` for a split decode's DMA side: an idle one, else a new one if the pool allows; null when none. */
  private helperFor(slot: Slot): Slot | null {
    const idle = this.slots.filter((s) => s !== slot && s.decoding === 0 && s.initialized);
    if (idle.length > 0) return idle.reduce((a, b) => (b.pending.size < a.pending.size ? b : a));
    if (this.slots.length < this.maxWorkers && this.pkgUrl !== null) return this.addSlot();
    return null;
  }

  /** Keeps what a restart needs from a successful call: the session's requests, the inventory, who produced which key. */
  private record(slot: Slot, req: Request, value: unknown): void {
    if (req.op === 'load' || req.op === 'demo') {
      this.session = [req];
      this.inventory = value as Inventory;
      this.produced.clear();
      for (const s of this.slots) {
        s.live.clear();
        s.lost.clear();
      }
    } else if (req.op === 'addSources') {
      this.session.push(req);
    } else if (producesKey(req)) {
      const k = (value as { key: string }).key;
      this.produced.set(k, { req, result: value, file: this.fileOf(req), slot: slot.index });
      slot.live.add(k);
    }
  }

  /** The picked file(s) a processing request reads. */
  private fileOf(req: Request): string | null {
    if (req.op === 'process') {
      const dev = this.inventory?.profiles.find((q) => q.id === req.profileId)?.devices[req.deviceIndex];
      return dev?.ntff ?? dev?.neff ?? null; // a NEFF-only entry decodes its NEFF
    }
    if (req.op === 'processMemory') return req.path;
    if (req.op === 'processSystem') return this.inventory?.profiles.find((q) => q.id === req.profileId)?.system_files?.join(', ') ?? null;
    return null;
  }

  private startJob(req: Request, worker: number): Job {
    const file = this.fileOf(req) ?? req.op;
    const bytes = file
      .split(', ')
      .reduce((n, p) => n + (this.inventory?.files.find((f) => f.path === p)?.size ?? 0), 0);
    const now = performance.now();
    const job: Job = {
      id: this.nextId++,
      file,
      bytes,
      worker,
      helper: null,
      helperError: null,
      state: 'running',
      stage: 'queued',
      done: 0,
      total: 0,
      rows: 0,
      storedBytes: 0,
      wasmMemory: 0,
      started: now,
      ended: null,
      stageStarted: now,
      error: null,
    };
    this.jobList.push(job);
    this.onJobs(this.jobList);
    return job;
  }

  private jobProgress(job: Job, stage: string, done: number, total: number, rows: number | undefined): void {
    if (stage !== job.stage) {
      job.stage = stage;
      job.stageStarted = performance.now();
    }
    job.done = done;
    job.total = total;
    if (rows !== undefined) job.rows = rows;
    this.onJobs(this.jobList);
  }

  private settleJob(p: Pending, state: Job['state'], error: string | null, value?: unknown): void {
    const job = p.job;
    if (job === undefined || job.state !== 'running') return;
    job.state = state;
    job.error = error;
    job.ended = performance.now();
    if (value !== undefined) {
      const v = value as StoredInfo & { tables?: { name?: string; rows: number }[] };
      job.rows = (v.tables ?? []).reduce((n, t) => n + t.rows, 0);
      // The schema listing and the problems themselves are no data kept from the input.
      job.dataRows = (v.tables ?? []).filter((t) => t.name !== 'SchemaFields' && t.name !== 'Warning').reduce((n, t) => n + t.rows, 0);
      job.storedBytes = (v.stored ?? []).reduce((n, t) => n + t.bytes, 0);
      job.wasmMemory = v.wasm_memory_bytes ?? 0;
      // A decode that ended with errors (a NEFF or NTFF that could not be read) keeps what it
      // decoded, and the jobs panel says it failed, with the first error (views/jobs.ts).
      const r = value as { problems?: Problem[]; report?: { problems?: Problem[] } };
      const errors = (r.problems ?? r.report?.problems ?? []).filter((p) => p.severity === 'error');
      if (state === 'done' && errors.length > 0) {
        job.problems = errors.length;
        const more = errors.length > 1 ? ` (and ${errors.length - 1} more)` : '';
        job.error = `${errors[0]?.message ?? ''}${more}`;
      }
    }
    this.onJobs(this.jobList);
  }

  /**
   * Cancels running job `id`: its worker is terminated mid-decode and replaced (the other
   * profiles that worker held are re-opened from OPFS on first use); the job's call rejects
   * with `Cancelled`. Returns false when the job is not running.
   */
  cancel(id: number): boolean {
    for (const slot of this.slots) {
      for (const [pid, p] of slot.pending) {
        if (p.job?.id !== id) continue;
        slot.pending.delete(pid);
        const err = new Cancelled(p.job.file);
        this.settleJob(p, 'cancelled', err.message);
        p.reject(err);
        this.replace(slot, p.req, null);
        this.cancelHelper(id);
        return true;
      }
    }
    return false;
  }

  /** Stops the DMA side of split job `id` (its worker replaced, the request dropped). */
  private cancelHelper(id: number): void {
    const helper = this.helpers.get(id);
    if (helper === undefined) return;
    this.helpers.delete(id);
    for (const [pid, p] of helper.pending) {
      if (p.req.op !== 'dmaSide') continue;
      helper.pending.delete(pid);
      p.reject(new Cancelled(null));
      this.replace(helper, p.req, null);
      return;
    }
  }

  /**
   * Loads the core in the first worker (the others start when decodes overlap). `fault` is the
   * crash-containment test hook (protocol.ts FaultSpec; main.ts sets it only from the page URL).
   * The OPFS files of earlier page loads are deleted first (files another tab holds stay).
   */
  async init(pkgUrl: string, fault: FaultSpec | null = null): Promise<{ version: string }> {
    this.pkgUrl = pkgUrl;
    this.fault = fault;
    if (opfsListable()) {
      const locked = await clearStale().catch(() => 0);
      // A reloaded page's worker may still hold its files for a moment: try again later.
      if (locked > 0) retryLocked(() => clearStale(new Set(this.slots.map((s) => s.dir))), 10);
    }
    const slot = this.slots[0] ?? this.addSlot();
    const v: InitInfo = await this.raw(slot, { op: 'init', pkgUrl, fault, storeDir: this.storeDir(slot), readAhead: this.readAheadOk });
    slot.initialized = true;
    this.store = v.store ?? 'memory';
    this.storeNote = v.storeNote ?? null;
    return v;
  }
  /** Registers the picked files with every running worker (later ones get them when they start). */
  async load(files: PickedFile[]): Promise<Inventory> {
    return this.everywhere({ op: 'load', files });
  }
  async demo(): Promise<Inventory> {
    return this.everywhere({ op: 'demo' });
  }
  private async everywhere(req: Request & ({ op: 'load' } | { op: 'demo' })): Promise<Inventory> {
    // Split decodes of the previous capture cannot be finished (its sessions go): they end as cancelled.
    this.generation++;
    // A new capture: the previous one's stored tables go.
    if (this.produced.size > 0) await this.clearStored().catch(() => {});
    const first = this.slots[0];
    if (first === undefined) throw new Error('the core is not initialised');
    await Promise.all(this.slots.map((s) => s.ready));
    const [inv] = await Promise.all(this.slots.map((s) => this.raw(s, req) as Promise<Inventory>));
    this.record(first, req, inv);
    return inv as Inventory;
  }
  process(profileId: string, deviceIndex: number, progress: Progress): Promise<ProcessResult & StoredInfo> {
    return this.call({ op: 'process', profileId, deviceIndex }, progress);
  }
  /** Decodes the system trace of a System / System+Device profile. */
  processSystem(profileId: string, progress: Progress): Promise<SystemResult & StoredInfo> {
    return this.call({ op: 'processSystem', profileId }, progress);
  }
  /**
   * processSystem in the background (the page decodes a capture's system trace on open, so its
   * problems show before it is opened, as a device's do): a job like any other, whose result a
   * later processSystem of the profile reuses. With tables in wasm memory it runs only on a
   * worker that holds no tables (a decode frees what its worker holds); null when there is none
   * to spare.
   */
  processSystemAside(profileId: string): Promise<(SystemResult & StoredInfo) | null> {
    const key = `${profileId}#system`;
    const running = this.inFlight.has(key);
    if (this.store === 'memory' && !running) {
      // Decoded before (and perhaps freed since): decoding it again could free another profile.
      if (this.produced.has(key)) return Promise.resolve(null);
      const spare = this.slots.some((s) => s.decoding === 0 && s.live.size === 0 && s.pending.size === 0)
        || (this.slots.length < this.maxWorkers && this.pkgUrl !== null);
      if (!spare) return Promise.resolve(null);
    }
    if (running) return this.call({ op: 'processSystem', profileId });
    this.aside.add(key);
    return this.call({ op: 'processSystem', profileId }).finally(() => this.aside.delete(key));
  }
  /** Decodes a PyTorch memory snapshot (`memory_snapshot_rank<N>.pickle`) of the picked folder. */
  processMemory(path: string): Promise<MemoryResult & StoredInfo> {
    return this.call({ op: 'processMemory', path });
  }
  async tableIpc(key: string, table: string): Promise<Uint8Array> {
    return (await this.call({ op: 'table', key, table, format: 'ipc' })) as Uint8Array;
  }
  /** The table's Parquet file: the stored OPFS file itself (a File), or bytes when tables are in memory. */
  tableParquet(key: string, table: string): Promise<Uint8Array | Blob> {
    return this.call({ op: 'table', key, table, format: 'parquet' });
  }
  /** Only `columns` of a table (Arrow IPC). */
  tableColumns(key: string, table: string, columns: string[]): Promise<Uint8Array> {
    return this.call({ op: 'columns', key, table, columns });
  }
  /** Rows offset .. offset + count of a table (Arrow IPC; a core without row ranges sends all rows). */
  tableRows(key: string, table: string, offset: number, count: number): Promise<Uint8Array> {
    return this.call({ op: 'rows', key, table, offset, count });
  }
  /** Zip of every table: a File on OPFS (streamed there by the core), or bytes. */
  bundle(key: string): Promise<Uint8Array | Blob> {
    return this.call({ op: 'bundle', key });
  }
  /** The picked source files (indexed on first call). */
  sources(): Promise<SourceListing> {
    return this.call({ op: 'sources' });
  }
  /** Adds source files or .tar.gz archives to the current capture's source index. */
  addSources(files: PickedFile[]): Promise<SourceInputLoad[]> {
    return this.call({ op: 'addSources', files });
  }
  sourceText(path: string): Promise<string | null> {
    return this.call({ op: 'sourceText', path });
  }
  /** Resolves debug locations (`path:line`) to indexed files. */
  sourceResolve(locations: string[]): Promise<SourceResolved[]> {
    return this.call({ op: 'sourceResolve', locations });
  }
  /** Device time per source location of processed device profile `key`. */
  sourceHeat(key: string): Promise<SourceHeat> {
    return this.call({ op: 'sourceHeat', key });
  }
  /** What device profile `key` did in [start, end) ns: busy per engine, top opcodes, DMA per queue. */
  rangeSummary(key: string, start: number, end: number, top = 12): Promise<RangeSummary> {
    return this.call({ op: 'rangeSummary', key, start, end, top });
  }
  /** Timeline tracks of processed profile `key` (summaries built while it was decoded). */
  lodTracks(key: string): Promise<LodListing> {
    return this.call({ op: 'lodTracks', key });
  }
  /** Summaries of `tracks` over [t0, t1] (ns from the listing's origin), about `n` buckets each (layout: crate::lod::Lod::query). */
  lod(key: string, tracks: number[], t0: number, t1: number, n: number): Promise<Float64Array> {
    return this.call({ op: 'lod', key, tracks, t0, t1, n });
  }
  /** Rows of a timeline table overlapping [t0, t1] (ns from the listing's origin), at most `limit`. */
  window(key: string, table: string, columns: string[], t0: number, t1: number, limit: number): Promise<LodWindow> {
    return this.call({ op: 'window', key, table, columns, t0, t1, limit });
  }
  /** Sorts/filters table `table` in the core (one view kept; `sort` '' = table order). */
  tableView(key: string, table: string, sort: string, desc: boolean, filters: ColumnFilter[]): Promise<TableViewInfo> {
    return this.call({ op: 'view', key, table, sort, desc, filters });
  }
  /** Rows offset .. offset + count of view `view` (0: table order) with nscope_row (Arrow IPC). */
  viewRows(key: string, table: string, view: number, offset: number, count: number): Promise<Uint8Array> {
    return this.call({ op: 'viewRows', key, table, view, offset, count });
  }
  /** Position of table row `row` in view `view` (-1: not in it). */
  viewPosition(key: string, view: number, row: number): Promise<number> {
    return this.call({ op: 'viewPosition', key, view, row });
  }
  /** Search over the event tables' text of profile `key`: total and the `limit` earliest hits. */
  search(key: string, query: string, limit = 10000): Promise<SearchResult> {
    return this.call({ op: 'search', key, query, limit });
  }
  /** Field-by-field comparison of processed profile `key` with an AWS JSON export's bytes. */
  conform(key: string, exportJson: Uint8Array): Promise<ConformReport> {
    return this.call({ op: 'conform', key, exportJson });
  }
  /** Deletes every stored profile of every worker (OPFS files and the tables in memory); they are processed again when opened. */
  async clearStored(): Promise<void> {
    await Promise.all(this.slots.map(async (s) => {
      await s.ready;
      await this.raw(s, { op: 'clearStore', key: null });
      s.live.clear();
      s.lost.clear();
    }));
    this.produced.clear();
    // Files no live worker knows (a cancelled or crashed worker's) are deleted too.
    const now = Date.now();
    if (opfsListable() && this.store === 'opfs') for (const s of this.slots) await sweepDir(s.dir, this.keepIn(s.dir), now).catch(() => 0);
    for (const j of this.jobList) if (j.state === 'done') j.cleared = true;
    this.onJobs(this.jobList);
    if (opfsListable()) await clearStale(new Set(this.slots.map((s) => s.dir))).catch(() => {});
  }
  /** Bytes stored per worker and the origin's storage estimate (the first worker's). */
  async storeInfo(): Promise<{ workers: StoreInfo[] }> {
    const workers = await Promise.all(this.slots.map(async (s) => {
      await s.ready;
      return this.raw(s, { op: 'storeInfo' });
    }));
    return { workers };
  }
  /** Name of the top OPFS directory (for tests and the jobs view). */
  static readonly storeDirName = STORE_DIR;
}
