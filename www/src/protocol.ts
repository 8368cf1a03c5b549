// Messages between the page (main thread: DOM, canvas) and the worker (wasm Session).
//
//   page ──Request{id, …}──▶ worker        worker ──Progress{id, …}*──▶ page
//                                           worker ──Reply{id, ok, …}──▶ page
//
// Every request gets exactly one reply with the same id; `process` may send progress events first.
// Bulk bytes (Arrow IPC) are transferred, never copied; Parquet files and zips stored on OPFS
// cross as File objects (a handle on the stored file, nothing read).

import type { ColumnFilter, ConformReport, Inventory, LodListing, LodWindow, MemoryResult, ProcessResult, RangeSummary, SourceHeat, SourceInputLoad, SourceListing, SourceResolved, SearchResult, SystemResult, TableViewInfo } from './api.ts';
import type { ReadAheadStats } from './readahead.ts';

/** A picked file: its path relative to the picked folder ('/'-separated) and the File itself. */
export interface PickedFile {
  path: string;
  file: Blob;
}

/**
 * Crash-containment test hook (tests/browser/contain.test.mjs), set only from the page URL
 * (`?fault=panic|alloc&fault-on=<NTFF path part>[&fault-step=process|table|columns&fault-table=<Table>]`).
 * Step `process` (default): before a `process` whose NTFF path contains `on`, the worker calls the
 * core's `arm_test_fault(kind, 'process')`, so the core fails at its first NTFF progress report,
 * mid-decode with the Session borrowed, as a real decoder bug would. Steps `table` (Parquet
 * export) and `columns` (column read, as the timeline does): that read of table `table` of the
 * device profile whose NTFF path contains `on` fails inside the core.
 */
export interface FaultSpec {
  kind: string;
  on: string;
  step?: 'process' | 'table' | 'columns' | 'dmaSide';
  table?: string;
}

/**
 * What the worker knows about a failed call that broke the wasm instance (trap, panic, RangeError):
 * the page then restarts the worker (client.ts).
 */
export interface CrashInfo {
  /** `panicked at <file>:<line>:<col>:\n<message>` from the core's panic hook, when it panicked. */
  panic: string | null;
  /** The JS error the call ended with, e.g. "RuntimeError: unreachable". */
  trap: string;
  /** Size of the wasm memory at the failure (bytes; near 4 GiB means it was full). */
  memoryBytes: number;
}

/** Where a worker keeps processed tables. */
export type StoreKind = 'opfs' | 'memory';

/** One table of a processed profile as the worker stored it (crate/src/wasm.rs `Session::store`). */
export interface StoredTable {
  name: string;
  kind: StoreKind;
  /** Parquet bytes. */
  bytes: number;
  /** File name in the worker's OPFS directory (opfs only): a restarted worker re-opens it. */
  file?: string;
}

/** A table file one worker hands to another (`dmaSide` → `finishSplit`): `file` is `<worker dir>/<file name>` under the store's OPFS directory. */
export interface HandedTable {
  name: string;
  rows: number;
  file: string;
  bytes: number;
}

/**
 * One end of a pipelined split decode's channel: the decoding worker posts each table batch as an
 * Arrow IPC stream (`{table, slot, length}` in `slots`, or `{table, bytes}` when larger), then `{end: true}` (answered `{tables}` or `{error}`) or
 * `{abort: true}`. `control` is two Int32 cells: [0] batches posted and not yet written (the
 * decoding worker waits while it is PIPE_DEPTH), [1] set to 1 when the writer stopped.
 */
export interface PipeEnd {
  port: MessagePort;
  control: SharedArrayBuffer;
  /** PIPE_DEPTH slots of PIPE_SLOT_BYTES: batch k travels in slot k mod PIPE_DEPTH (free again once fewer than PIPE_DEPTH are in flight); a larger batch travels in a buffer of its own. */
  slots: SharedArrayBuffer;
}

/** Batches in flight on a pipe (worker.ts `pipeSender`). */
export const PIPE_DEPTH = 4;
/** Bytes of one pipe slot: an instruction-dense Instruction batch of 64 Ki rows is ≈ 10 MB of IPC (all-null columns left out). Fresh buffers per batch cost more than the copies (page faults: 8.9 s for 9.9 GB at 2 GB of NTFF). */
export const PIPE_SLOT_BYTES = 16 << 20;

/** Reply to `dmaSide`: its result for `finishSplit` (JSON text: i64 sums stay exact), the timeline summaries of its rows (crate::lod `Lod::to_bytes`) and the files written. */
export interface DmaSideReply {
  key: string;
  side: string;
  lod: Uint8Array;
  tables: HandedTable[];
  /** The read-ahead's counts during this DMA side (as `StoredInfo.readAhead`). */
  readAhead?: ReadAheadStats;
}

/** What every processing reply carries besides its own result (worker.ts). */
export interface StoredInfo {
  /** Where each table went. */
  stored?: StoredTable[];
  /** wasm memory of the worker after the call, bytes (it never shrinks: the high-water mark). */
  wasm_memory_bytes?: number;
  /** What the worker's read-ahead did since its previous result (readahead.ts; absent without one). */
  readAhead?: ReadAheadStats;
}

/** Reply to init: the core version and where tables will be kept. */
export interface InitInfo {
  version: string;
  store: StoreKind;
  /** Why tables stay in memory (no OPFS here), with the size limit that implies; null with OPFS. */
  storeNote: string | null;
}

/** What the worker's OPFS store holds (the `storeInfo` request). */
export interface StoreInfo {
  store: StoreKind;
  /** Bytes in this worker's files. */
  bytes: number;
  /** navigator.storage.estimate() of the whole origin (bytes; null when unknown). */
  usage: number | null;
  quota: number | null;
}

export type Request =
  /** `readAhead: false` turns the read-ahead off (readahead.ts; on where the page is cross-origin isolated). */
  | { op: 'init'; pkgUrl: string; fault?: FaultSpec | null; storeDir?: string | null; spill?: boolean; readAhead?: boolean }
  | { op: 'load'; files: PickedFile[] }
  | { op: 'demo' }
  | { op: 'process'; profileId: string; deviceIndex: number }
  /** A device decode split over two workers (client.ts `splitDecode`): this worker's half, without the NTFF's DMA side and the Summary. */
  | { op: 'processSplit'; profileId: string; deviceIndex: number; pipe?: PipeEnd }
  /** Starts the Parquet writer of a pipelined split decode in the DMA side's worker: the `processSplit` worker sends its batches over `pipe` (client.ts `splitDecode`). */
  | { op: 'pipeParquet'; key: string; pipe: PipeEnd }
  /** The other worker's half: the DMA side, its tables handed over (the files closed here, not deleted) with their timeline summaries. */
  | { op: 'dmaSide'; profileId: string; deviceIndex: number }
  /** Completes a `processSplit` with the other worker's `dmaSide` (`side` null: it failed, the DMA side is decoded here). */
  | { op: 'finishSplit'; key: string; side: string | null; lod: Uint8Array | null; tables: HandedTable[] }
  /** Deletes files this worker handed over in a `dmaSide` that were never taken (the finishing worker failed). */
  | { op: 'dropHanded'; tables: HandedTable[] }
  | { op: 'processSystem'; profileId: string }
  | { op: 'processMemory'; path: string }
  | { op: 'table'; key: string; table: string; format: 'ipc' | 'parquet' }
  | { op: 'columns'; key: string; table: string; columns: string[] }
  | { op: 'rows'; key: string; table: string; offset: number; count: number }
  | { op: 'bundle'; key: string }
  | { op: 'sources' }
  | { op: 'addSources'; files: PickedFile[] }
  | { op: 'sourceText'; path: string }
  | { op: 'sourceResolve'; locations: string[] }
  | { op: 'sourceHeat'; key: string }
  | { op: 'rangeSummary'; key: string; start: number; end: number; top: number }
  | { op: 'conform'; key: string; exportJson: Uint8Array }
  /** Re-registers tables a previous worker stored on OPFS (after a crash or a cancel). */
  | { op: 'reopen'; key: string; tables: { name: string; rows: number; file: string }[] }
  /** Deletes this worker's stored tables (every profile, or `key`'s) and forgets them. */
  | { op: 'clearStore'; key?: string | null }
  | { op: 'storeInfo' }
  | { op: 'lodTracks'; key: string }
  | { op: 'lod'; key: string; tracks: number[]; t0: number; t1: number; n: number }
  | { op: 'window'; key: string; table: string; columns: string[]; t0: number; t1: number; limit: number }
  | { op: 'view'; key: string; table: string; sort: string; desc: boolean; filters: ColumnFilter[] }
  | { op: 'viewRows'; key: string; table: string; view: number; offset: number; count: number }
  | { op: 'viewPosition'; key: string; view: number; row: number }
  | { op: 'search'; key: string; query: string; limit: number };

/** What each request resolves to. */
export interface ReplyMap {
  init: InitInfo;
  load: Inventory;
  demo: Inventory;
  process: ProcessResult & StoredInfo;
  processSplit: { key: string; pending: true; piped?: boolean } & StoredInfo;
  pipeParquet: null;
  dmaSide: DmaSideReply;
  finishSplit: ProcessResult & StoredInfo & { pipeStats?: { waitMs: number; batches: number; bytes: number; writerMs: number; encodeMs: number; callMs: number; writerMemory?: number } };
  dropHanded: null;
  processSystem: SystemResult & StoredInfo;
  processMemory: MemoryResult & StoredInfo;
  /** Arrow IPC bytes; Parquet as the stored file (a File) or bytes (memory store). */
  table: Uint8Array | Blob;
  columns: Uint8Array;
  rows: Uint8Array;
  /** The zip: a File on OPFS, or bytes (memory store). */
  bundle: Uint8Array | Blob;
  sources: SourceListing;
  addSources: SourceInputLoad[];
  sourceText: string | null;
  sourceResolve: SourceResolved[];
  sourceHeat: SourceHeat;
  rangeSummary: RangeSummary;
  conform: ConformReport;
  reopen: null;
  clearStore: null;
  storeInfo: StoreInfo;
  lodTracks: LodListing;
  lod: Float64Array;
  window: LodWindow;
  view: TableViewInfo;
  viewRows: Uint8Array;
  viewPosition: number;
  search: SearchResult;
}

export type Envelope = Request & { id: number };

export type FromWorker =
  | { kind: 'reply'; id: number; ok: true; value: unknown }
  | { kind: 'reply'; id: number; ok: false; error: string; crash?: CrashInfo }
  /** `rows`: rows written to the tables so far (absent from older cores). */
  | { kind: 'progress'; id: number; stage: string; done: number; total: number; rows?: number }
  | { kind: 'fatal'; error: string };
