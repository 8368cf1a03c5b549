// Messages between the page (main thread: DOM, canvas) and the worker (wasm Session).
//
//   page ──Request{id, …}──▶ worker        worker ──Progress{id, …}*──▶ page
//                                           worker ──Reply{id, ok, …}──▶ page
//
// Every request gets exactly one reply with the same id; `process` may send progress events first.
// Bulk bytes (Arrow IPC, Parquet, zip) are transferred, never copied.

import type { ConformReport, Inventory, LodListing, LodWindow, MemoryResult, ProcessResult, SourceHeat, SourceInputLoad, SourceListing, SourceResolved, SystemResult } from './api.ts';

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
  step?: 'process' | 'table' | 'columns';
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

export type Request =
  | { op: 'init'; pkgUrl: string; fault?: FaultSpec | null }
  | { op: 'load'; files: PickedFile[] }
  | { op: 'demo' }
  | { op: 'process'; profileId: string; deviceIndex: number }
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
  | { op: 'conform'; key: string; exportJson: Uint8Array }
  | { op: 'lodTracks'; key: string }
  | { op: 'lod'; key: string; tracks: number[]; t0: number; t1: number; n: number }
  | { op: 'window'; key: string; table: string; columns: string[]; t0: number; t1: number; limit: number };

/** What each request resolves to. */
export interface ReplyMap {
  init: { version: string };
  load: Inventory;
  demo: Inventory;
  process: ProcessResult;
  processSystem: SystemResult;
  processMemory: MemoryResult;
  table: Uint8Array;
  columns: Uint8Array;
  rows: Uint8Array;
  bundle: Uint8Array;
  sources: SourceListing;
  addSources: SourceInputLoad[];
  sourceText: string | null;
  sourceResolve: SourceResolved[];
  sourceHeat: SourceHeat;
  conform: ConformReport;
  lodTracks: LodListing;
  lod: Float64Array;
  window: LodWindow;
}

export type Envelope = Request & { id: number };

export type FromWorker =
  | { kind: 'reply'; id: number; ok: true; value: unknown }
  | { kind: 'reply'; id: number; ok: false; error: string; crash?: CrashInfo }
  | { kind: 'progress'; id: number; stage: string; done: number; total: number }
  | { kind: 'fatal'; error: string };
