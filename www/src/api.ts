// Types of what the wasm core hands to JavaScript (crate/src/wasm.rs). Small metadata crosses as plain
// objects (serde-wasm-bindgen), bulk data as Uint8Array. Field names follow the Rust structs
// (crate/src/inventory.rs, crate/src/error.rs); everything the views do not strictly need is optional
// so a newer core with more fields still renders.

/** Severity of a [`Problem`] (crate::error::Severity). */
export type Severity = 'error' | 'warning' | 'info';

/** A user-facing problem (crate::error::Problem): which file, where, what. */
export interface Problem {
  severity: Severity;
  /** Machine-readable code, e.g. ERROR_PROCESS_INCOMPLETE, MISSING_NEFF, EMPTY_NTFF. */
  code: string;
  /** Path relative to the picked folder. */
  file?: string | null;
  /** Byte offset in that file. */
  offset?: number | null;
  /** Sentence for the user. */
  message: string;
}

/** One picked file as classified by the inventory (crate::inventory::InputFile). */
export interface InventoryFile {
  path: string;
  /** Bytes. */
  size: number;
  /** Classifier result (FileKind, flattened): "Neff", "Ntff", "Ntrace", "TraceInfo", "CpuUtil", … */
  kind: string;
  /** Id of the profile the file belongs to. */
  profile?: string | null;
  /** Rank from a memory snapshot's name (`memory_snapshot_rank<N>.pickle`). */
  rank?: number | null;
}

/**
 * NEFF ↔ NTFF pairing result (crate::pairing::PairStatus), serde-tagged by `status`:
 * {status: "Paired", by: "uuid"}, {status: "MissingNeff"}, {status: "UuidMismatch", neff},
 * {status: "Ambiguous", candidates}, {status: "EmptyNtff"}, {status: "NeffOnly"},
 * {status: "Unreadable", message}. Externally tagged forms ("MissingNeff", {"Paired": {…}}) are
 * accepted too.
 */
export type Pairing = string | { status?: string; [key: string]: unknown };

/** One device entry (crate::inventory::DeviceProfile): an NTFF with its NEFF, or a NEFF alone. */
export interface DeviceEntry {
  /** NTFF file stem, or the NEFF stem for a NEFF-only entry. */
  name: string;
  /** Path of the NTFF. */
  ntff?: string | null;
  /** Path of the paired NEFF (or the rejected one for UuidMismatch). */
  neff?: string | null;
  pairing: Pairing;
  ntff_version?: number | null;
  model_id?: number | null;
  /** NeuronCore index from the file names. */
  nc?: number | null;
  exec?: number | null;
  rank?: number | null;
  session?: number | null;
}

export type ProfileType = 'Device' | 'System' | 'System+Device' | string;

/** A profile (crate::inventory::Profile): a capture directory or a directory of device traces. */
export interface ProfileEntry {
  /** The root directory path ("." for the top of the drop). */
  id: string;
  profile_type: ProfileType;
  /** Root directory ("" for the top of the drop). */
  root: string;
  instance_id?: string | null;
  pid?: number | null;
  devices: DeviceEntry[];
  system_files?: string[];
  other_files?: string[];
  problems?: Problem[];
}

/** Result of Session.scan(). */
export interface Inventory {
  files: InventoryFile[];
  profiles: ProfileEntry[];
  problems: Problem[];
}

/** Instruction count of one engine on one physical core. */
export interface EngineCount {
  pcore_idx: number;
  /** Explorer engine name: tensor, scalar, gpsimd, vector, sync. */
  engine: string;
  count: number;
}

/** Headline numbers of a processed device profile. */
export interface Summary {
  ntff_file?: string | null;
  ntff_version?: number | null;
  /** Total execution time, ns (null when the NTFF does not record it). */
  total_time_ns: number | null;
  instruction_count: number;
  semaphore_count: number;
  per_engine: EngineCount[];
  neff: { file?: string; name?: string | null; uuid?: string | null; compiler_version?: string | null } | null;
}

/** One output table and its row count. */
export interface TableInfo {
  name: string;
  rows: number;
}

/** Result of Session.process(). */
export interface ProcessResult {
  /** Handle for table_ipc / table_parquet / bundle_zip. */
  key: string;
  profile_id?: string;
  device?: string;
  tables: TableInfo[];
  summary: Summary;
  problems: Problem[];
}

/** One system-trace file and its record count (crate::system::FileCount). */
export interface SystemFileCount {
  file: string;
  bytes?: number;
  records?: number;
  remainder?: number;
  expected?: number | null;
}

/** How one NTFF relates to the system trace (crate::system::DeviceLink, pairing.md §6). */
export interface SystemDeviceLink {
  ntff: string;
  /** "same capture", "same NEFF, different capture: …" or "unlinked: …". */
  link: string;
  model_id?: number | null;
  ntff_pid?: number | null;
  cores?: number[];
}

/** What the system decoder did (crate::system::SystemReport); fields optional for older cores. */
export interface SystemReport {
  files?: SystemFileCount[];
  /** Event name → count. */
  event_counts?: Record<string, number>;
  spans?: number;
  instants?: number;
  /** Unix ns; arrives through JSON.parse, so rounded to a double (~256 ns): display only. */
  first_ts_ns?: number | null;
  last_ts_ns?: number | null;
  /** Physical core → nc_exec_running spans. */
  exec_spans_per_core?: Record<string, number>;
  /** Table → rows. */
  rows?: Record<string, number>;
  devices?: SystemDeviceLink[];
  problems?: Problem[];
  [key: string]: unknown;
}

/** Result of Session.process_system(). */
export interface SystemResult {
  key: string;
  tables: TableInfo[];
  report: SystemReport;
  problems: Problem[];
}

/** Per-device numbers of a memory snapshot (crate::memsnap::DeviceReport); bytes, Unix ns. */
export interface MemoryDeviceReport {
  device: number;
  events: number;
  first_ts_ns?: number | null;
  last_ts_ns?: number | null;
  baseline_allocated_bytes: number;
  baseline_reserved_bytes: number;
  peak_allocated_bytes: number;
  peak_reserved_bytes: number;
  final_allocated_bytes: number;
  final_reserved_bytes: number;
  ooms: number;
}

/** What the snapshot reader found (crate::memsnap::MemSnapReport). */
export interface MemoryReport {
  file: string;
  protocol?: number | null;
  events: number;
  segments: number;
  blocks: number;
  stacks: number;
  frames: number;
  annotations?: number;
  settings?: number;
  ooms: number;
  first_ts_ns?: number | null;
  last_ts_ns?: number | null;
  peak_allocated_bytes?: number | null;
  peak_reserved_bytes?: number | null;
  devices: MemoryDeviceReport[];
  retained_values?: number;
  problems?: Problem[];
}

/** Result of Session.process_memory() (crate::profile::MemoryResult). */
export interface MemoryResult {
  key: string;
  file: string;
  tables: TableInfo[];
  report: MemoryReport;
  /** wasm memory size after decoding, bytes. */
  wasm_memory_bytes?: number;
}

/** A file of the built-in demo capture. */
export interface DemoFile {
  path: string;
  bytes: Uint8Array;
}

/** wasm-bindgen class `Session` (crate/src/wasm.rs). */
export interface WasmSession {
  add_file(path: string, blob: Blob): void;
  add_bytes(path: string, bytes: Uint8Array): void;
  scan(): Inventory;
  process(
    profileId: string,
    deviceIndex: number,
    progress: (stage: string, done: number, total: number) => void,
  ): ProcessResult;
  /** Decodes a System / System+Device profile's host and runtime trace (absent in older cores). */
  process_system?(profileId: string, progress: (stage: string, done: number, total: number) => void): SystemResult;
  /** Decodes a PyTorch memory snapshot of the picked files (absent in older cores). */
  process_memory?(path: string): MemoryResult;
  table_ipc(key: string, table: string): Uint8Array;
  table_parquet(key: string, table: string): Uint8Array;
  bundle_zip(key: string): Uint8Array;
  /** Only these columns of a table, Arrow IPC (absent names skipped). */
  table_ipc_columns?(key: string, table: string, columns: string[]): Uint8Array;
  /** Rows offset .. offset + count of a table, every column, Arrow IPC. */
  table_ipc_rows?(key: string, table: string, offset: number, count: number): Uint8Array;
  /** Drops a processed profile's tables (frees wasm memory). */
  release(key: string): void;
  free(): void;
}

/** The ES module wasm-bindgen --target web writes to pkg/neuronscope.js. */
export interface WasmModule {
  default: (input?: unknown) => Promise<unknown>;
  Session: new () => WasmSession;
  demo_files(): DemoFile[];
  version(): string;
}
