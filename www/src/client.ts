// Main-thread proxy for the worker: one promise per request, progress callbacks per request.
//
// Crash containment: when a call breaks the wasm instance (a Rust panic, a trap, an out-of-memory
// RangeError; worker.ts reports it with `crash`), the call is rejected with a CoreCrash naming the
// step and the file, the worker is terminated and a fresh one started, the picked files (File/Blob
// handles, cheap to post again) are registered with it again, and the profile that was on screen
// is processed again on its first use. Every other profile is processed on demand as before.

import type { CrashInfo, FaultSpec, FromWorker, PickedFile, ReplyMap, Request } from './protocol.ts';
import type { ConformReport, Inventory, LodListing, LodWindow, MemoryResult, ProcessResult, SourceHeat, SourceInputLoad, SourceListing, SourceResolved, SystemResult } from './api.ts';

type Progress = (stage: string, done: number, total: number) => void;

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  progress?: Progress;
  req: Request;
  /** Last progress report of this request (names how far a failed decode got). */
  last?: { stage: string; done: number; total: number };
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

/** Requests that process something and the key their result is kept under. */
function producesKey(req: Request): boolean {
  return req.op === 'process' || req.op === 'processSystem' || req.op === 'processMemory';
}

/** The processed-profile key a request reads, if any. */
function keyOf(req: Request): string | null {
  return 'key' in req ? req.key : null;
}

function sizeText(n: number): string {
  if (n >= 1 << 30) return `${(n / (1 << 30)).toFixed(2)} GiB`;
  if (n >= 1 << 20) return `${(n / (1 << 20)).toFixed(1)} MiB`;
  if (n >= 1 << 10) return `${(n / (1 << 10)).toFixed(1)} KiB`;
  return `${n} B`;
}

export class CoreClient {
  private worker: Worker;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  /** Called when the worker dies outside any request (e.g. a failed module load). */
  onFatal: (message: string) => void = () => {};
  /** Called after a crash once the replacement worker is being started (`restarts` counts them). */
  onRestart: (crash: CoreCrash) => void = () => {};
  /** Worker restarts after crashes. */
  restarts = 0;
  private pkgUrl: string | null = null;
  private fault: FaultSpec | null = null;
  /** A worker has loaded the core: crashes from now on are answered with a restart. */
  private initialized = false;
  /** The requests that built the current session (load or demo, then addSources): replayed into a new worker. */
  private session: Request[] = [];
  private inventory: Inventory | null = null;
  /** Processed key → the request that produced it (to redo it) and the file it read. */
  private readonly produced = new Map<string, { req: Request; file: string | null }>();
  /** Keys held by the current worker (it keeps one processed profile at a time). */
  private live = new Set<string>();
  /** Keys the last crashed worker held: processed again on first use. */
  private lost = new Set<string>();
  private readonly redoing = new Map<string, Promise<void>>();
  /** Resolves when the current worker is ready for calls (a restart replaces it). */
  private ready: Promise<void> = Promise.resolve();
  /** A restart is replaying the session: a crash now is reported, not answered with another restart. */
  private restoring = false;

  constructor() {
    this.worker = this.spawn();
  }

  private spawn(): Worker {
    const w = new Worker(new URL('./worker.ts', import.meta.url), { type: 'module', name: 'neuronscope-core' });
    w.onmessage = (ev: MessageEvent<FromWorker>) => this.receive(ev.data);
    w.onerror = (ev: ErrorEvent) => {
      ev.preventDefault();
      this.failAll(ev.message || 'the worker failed to start');
    };
    return w;
  }

  private receive(msg: FromWorker): void {
    if (msg.kind === 'fatal') {
      this.failAll(msg.error);
      return;
    }
    const p = this.pending.get(msg.id);
    if (p === undefined) return;
    if (msg.kind === 'progress') {
      p.last = { stage: msg.stage, done: msg.done, total: msg.total };
      p.progress?.(msg.stage, msg.done, msg.total);
      return;
    }
    this.pending.delete(msg.id);
    if (msg.ok) {
      p.resolve(msg.value);
      return;
    }
    if (msg.crash === undefined) {
      p.reject(new Error(msg.error));
      return;
    }
    if (this.restoring || !this.initialized) {
      p.reject(new Error(`${msg.error} (${msg.crash.panic ?? msg.crash.trap})`));
      return;
    }
    this.restarts++;
    const crash = this.crashOf(p, msg.crash);
    // The failed call first: a Promise.all over several reads then reports the crash itself.
    p.reject(crash);
    this.restart(p.req, crash);
    this.onRestart(crash);
  }

  /** Names the step and the file of the failed request `p`. */
  private crashOf(p: Pending, info: CrashInfo): CoreCrash {
    const req = p.req;
    const at = p.last === undefined ? '' : p.last.total > 1
      ? ` (${p.last.stage}, ${p.last.total > 4096 ? `${sizeText(p.last.done)} of ${sizeText(p.last.total)}` : `${p.last.done}/${p.last.total}`})`
      : ` (${p.last.stage})`;
    const fileOfKey = (key: string): string | null => this.produced.get(key)?.file ?? null;
    let step: string;
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
    }
    const detail = info.panic !== null
      ? info.panic.replace(/\n/g, ' ')
      : `${info.trap}, no panic message (an abort such as a failed allocation; wasm memory was ${sizeText(info.memoryBytes)} of 4 GiB)`;
    return new CoreCrash(step, file, detail, this.restarts);
  }

  /** Replaces the broken worker: a fresh one, the core loaded, the session's files registered again. */
  private restart(failed: Request, crash: CoreCrash): void {
    const old = this.worker;
    old.onmessage = null;
    old.onerror = null;
    old.terminate();
    // Requests queued behind the failed one are lost with the worker: they fail with its crash.
    for (const p of this.pending.values()) p.reject(crash);
    this.pending.clear();
    // A session whose scan crashed is not replayed (it would crash again); the profile whose
    // processing crashed is not redone either.
    if (failed.op === 'load' || failed.op === 'demo') this.session = [];
    this.lost = producesKey(failed) ? new Set() : new Set(this.live);
    this.live = new Set();
    this.redoing.clear();
    this.worker = this.spawn();
    const pkgUrl = this.pkgUrl ?? '';
    this.restoring = true;
    this.ready = (async () => {
      await this.raw({ op: 'init', pkgUrl, fault: this.fault });
      for (const req of this.session) await this.raw(req);
    })().then(
      () => {
        this.restoring = false;
      },
      (e: unknown) => {
        this.restoring = false;
        this.session = [];
        this.lost.clear();
        this.onFatal(`the capture could not be registered with the restarted worker (${e instanceof Error ? e.message : String(e)}); pick it again`);
      },
    );
  }

  private failAll(message: string): void {
    for (const p of this.pending.values()) p.reject(new Error(message));
    this.pending.clear();
    this.onFatal(message);
  }

  /** Posts `req` to the current worker as it is. */
  private raw<K extends Request['op']>(req: Extract<Request, { op: K }>, progress?: Progress): Promise<ReplyMap[K]> {
    const id = this.nextId++;
    return new Promise<ReplyMap[K]>((resolve, reject) => {
      const entry: Pending = { resolve: (v) => resolve(v as ReplyMap[K]), reject, req };
      if (progress !== undefined) entry.progress = progress;
      this.pending.set(id, entry);
      this.worker.postMessage({ ...req, id });
    });
  }

  /** Processes a profile the crashed worker held again before the first call that reads it. */
  private redo(key: string): Promise<void> {
    let r = this.redoing.get(key);
    if (r === undefined) {
      const prod = this.produced.get(key);
      r = prod === undefined
        ? Promise.resolve()
        : this.raw(prod.req).then(() => {
          this.lost.delete(key);
          this.live = new Set([key]);
        });
      this.redoing.set(key, r);
      void r.finally(() => this.redoing.delete(key)).catch(() => {});
    }
    return r;
  }

  private async call<K extends Request['op']>(req: Extract<Request, { op: K }>, progress?: Progress): Promise<ReplyMap[K]> {
    await this.ready;
    const key = keyOf(req);
    if (key !== null && this.lost.has(key)) await this.redo(key);
    if (producesKey(req)) {
      // The worker frees the profile it held before processing another one.
      this.live.clear();
      this.lost.clear();
    }
    const value = await this.raw(req, progress);
    this.record(req, value);
    return value;
  }

  /** Keeps what a restart needs from a successful call: the session's requests, the inventory, who produced which key. */
  private record(req: Request, value: unknown): void {
    if (req.op === 'load' || req.op === 'demo') {
      this.session = [req];
      this.inventory = value as Inventory;
      this.produced.clear();
      this.live.clear();
    } else if (req.op === 'addSources') {
      this.session.push(req);
    } else if (producesKey(req)) {
      const k = (value as { key: string }).key;
      let file: string | null = null;
      if (req.op === 'process') {
        const dev = this.inventory?.profiles.find((q) => q.id === req.profileId)?.devices[req.deviceIndex];
        file = dev?.ntff ?? null;
      } else if (req.op === 'processMemory') file = req.path;
      else if (req.op === 'processSystem') file = this.inventory?.profiles.find((q) => q.id === req.profileId)?.system_files?.join(', ') ?? null;
      this.produced.set(k, { req, file });
      this.live = new Set([k]);
    }
  }

  /**
   * Loads the core in the worker. `fault` is the crash-containment test hook (protocol.ts
   * FaultSpec; main.ts sets it only from the page URL).
   */
  async init(pkgUrl: string, fault: FaultSpec | null = null): Promise<{ version: string }> {
    this.pkgUrl = pkgUrl;
    this.fault = fault;
    const v = await this.call({ op: 'init', pkgUrl, fault });
    this.initialized = true;
    return v;
  }
  load(files: PickedFile[]): Promise<Inventory> {
    return this.call({ op: 'load', files });
  }
  demo(): Promise<Inventory> {
    return this.call({ op: 'demo' });
  }
  process(profileId: string, deviceIndex: number, progress: Progress): Promise<ProcessResult> {
    return this.call({ op: 'process', profileId, deviceIndex }, progress);
  }
  /** Decodes the system trace of a System / System+Device profile. */
  processSystem(profileId: string, progress: Progress): Promise<SystemResult> {
    return this.call({ op: 'processSystem', profileId }, progress);
  }
  /** Decodes a PyTorch memory snapshot (`memory_snapshot_rank<N>.pickle`) of the picked folder. */
  processMemory(path: string): Promise<MemoryResult> {
    return this.call({ op: 'processMemory', path });
  }
  tableIpc(key: string, table: string): Promise<Uint8Array> {
    return this.call({ op: 'table', key, table, format: 'ipc' });
  }
  tableParquet(key: string, table: string): Promise<Uint8Array> {
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
  bundle(key: string): Promise<Uint8Array> {
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
  /** Field-by-field comparison of processed profile `key` with an AWS JSON export's bytes. */
  conform(key: string, exportJson: Uint8Array): Promise<ConformReport> {
    return this.call({ op: 'conform', key, exportJson });
  }
}
