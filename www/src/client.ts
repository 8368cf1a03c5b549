// Main-thread proxy for the worker: one promise per request, progress callbacks per request.

import type { FromWorker, PickedFile, ReplyMap, Request } from './protocol.ts';
import type { ConformReport, Inventory, MemoryResult, ProcessResult, SourceHeat, SourceInputLoad, SourceListing, SourceResolved, SystemResult } from './api.ts';

type Progress = (stage: string, done: number, total: number) => void;

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  progress?: Progress;
}

export class CoreClient {
  private readonly worker: Worker;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  /** Called when the worker dies outside any request (e.g. a failed module load). */
  onFatal: (message: string) => void = () => {};

  constructor() {
    this.worker = new Worker(new URL('./worker.ts', import.meta.url), { type: 'module', name: 'neuronscope-core' });
    this.worker.onmessage = (ev: MessageEvent<FromWorker>) => this.receive(ev.data);
    this.worker.onerror = (ev: ErrorEvent) => {
      ev.preventDefault();
      this.failAll(ev.message || 'the worker failed to start');
    };
  }

  private receive(msg: FromWorker): void {
    if (msg.kind === 'fatal') {
      this.failAll(msg.error);
      return;
    }
    const p = this.pending.get(msg.id);
    if (p === undefined) return;
    if (msg.kind === 'progress') {
      p.progress?.(msg.stage, msg.done, msg.total);
      return;
    }
    this.pending.delete(msg.id);
    if (msg.ok) p.resolve(msg.value);
    else p.reject(new Error(msg.error));
  }

  private failAll(message: string): void {
    for (const p of this.pending.values()) p.reject(new Error(message));
    this.pending.clear();
    this.onFatal(message);
  }

  private call<K extends Request['op']>(
    req: Extract<Request, { op: K }>,
    progress?: Progress,
  ): Promise<ReplyMap[K]> {
    const id = this.nextId++;
    return new Promise<ReplyMap[K]>((resolve, reject) => {
      const entry: Pending = { resolve: (v) => resolve(v as ReplyMap[K]), reject };
      if (progress !== undefined) entry.progress = progress;
      this.pending.set(id, entry);
      this.worker.postMessage({ ...req, id });
    });
  }

  init(pkgUrl: string): Promise<{ version: string }> {
    return this.call({ op: 'init', pkgUrl });
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
  /** Field-by-field comparison of processed profile `key` with an AWS JSON export's bytes. */
  conform(key: string, exportJson: Uint8Array): Promise<ConformReport> {
    return this.call({ op: 'conform', key, exportJson });
  }
}
