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
 * {status: "Paired", by: "uuid"}, {status: "MissingNeff"}, {status: "NeffUnreadable", neff},
 * {status: "UuidMismatch", neff},
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
  /** Instructions the NEFF holds per (physical core, engine): stream slot counts (crate::profile::DeviceSummary). */
  neff_instructions?: EngineCount[];
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
  /** Framework traces (Kineto trace.json) by path (crate::system::kineto::KinetoReport). */
  framework?: Record<string, { rows?: number; objects?: number; categories?: Record<string, number>; bytes?: number; first_ts_ns?: number | null; last_ts_ns?: number | null; thread_names?: Record<string, string>; process_names?: Record<string, string> }>;
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

/** One indexed source file (crate::source_code::SourceFileInfo). */
export interface SourceFileInfo {
  /** Indexed path: the picked path, or `<archive path>/<member path>` for archive members. */
  path: string;
  /** Text length, bytes. */
  bytes: number;
  lines: number;
}

/** What loading one picked source input did (crate::source_code::InputLoad). */
export interface SourceInputLoad {
  file: string;
  added: number;
  skipped_binary: number;
  skipped_large: number;
  skipped_other: number;
  error?: string | null;
}

/** Result of Session.sources(). */
export interface SourceListing {
  files: SourceFileInfo[];
  loads: SourceInputLoad[];
}

/** A debug location resolved to indexed files (crate::source_code::Resolved). */
export interface SourceResolved {
  location: string;
  /** Path as recorded on the compile host. */
  debug_path: string;
  /** 1-based line, 0 when the location has none. */
  line: number;
  /** Indexed paths that match (empty: not picked; several: a tie). */
  files: string[];
}

/** Device time of one engine at one location (crate::source_code::EngineHeat). */
export interface EngineHeat {
  engine: string;
  /** ns */
  total_ns: number;
  count: number;
}

/** Device time attributed to one source location (crate::source_code::LineHeat). */
export interface LineHeat {
  location: string;
  path: string;
  line: number;
  /** Sum of instruction durations, ns. */
  total_ns: number;
  count: number;
  engines: EngineHeat[];
}

/** Result of Session.source_heat(key) (crate::source_code::SourceHeat). */
export interface SourceHeat {
  /** Sum of every instruction's duration, ns (denominator of a line's %). */
  total_ns: number;
  count: number;
  unattributed_ns: number;
  unattributed_count: number;
  /** Largest total_ns first. */
  lines: LineHeat[];
}

/** One export field compared with one of our columns (crate::conform::FieldReport). */
export interface ConformField {
  field: string;
  column?: string | null;
  /** compared | key | not_produced | not_comparable */
  status: string;
  compared: number;
  equal: number;
  /** equal / compared, 0 – 1. */
  rate: number;
  tolerance: string;
  diffs: { row: number; export: string; ours: string }[];
  note?: string;
}

/** One export section (crate::conform::SectionReport). */
export interface ConformSection {
  section: string;
  table?: string | null;
  /** compared | not_produced | presentation | not_in_export */
  status: string;
  export_rows: number;
  our_rows: number;
  matched_rows: number;
  alignment: string;
  note?: string;
  fields: ConformField[];
}

/** Result of Session.conform() (crate::conform::ConformReport). */
export interface ConformReport {
  profiler_version?: string | null;
  ntff_filename?: string | null;
  sections: ConformSection[];
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
  /** Compares a processed profile with an AWS JSON export (absent in older cores). */
  conform?(key: string, exportJson: Uint8Array): ConformReport;
  /** Drops a processed profile's tables (frees wasm memory). */
  release(key: string): void;
  /** Indexes the picked .py / .tar.gz sources (once) and lists them. */
  sources?(): SourceListing;
  /** Adds a source file or archive picked later. */
  add_source?(path: string, blob: Blob): SourceInputLoad;
  source_text?(path: string): string | undefined;
  source_resolve?(location: string): SourceResolved;
  /** Device time per source location of a processed device profile. */
  source_heat?(key: string): SourceHeat;
  /** What a device profile did in [start_ns, end_ns) (absent in older cores). */
  range_summary?(key: string, startNs: number, endNs: number, top: number): RangeSummary;
  /** Timeline tracks of a processed profile (crate::lod::Listing). */
  lod_tracks?(key: string): LodListing;
  /** Summaries of tracks over [t0, t1] (ns from the listing's origin), packed (crate::lod::Lod::query). */
  lod?(key: string, tracks: Uint32Array, t0: number, t1: number, n: number): Float64Array;
  /** Rows of a timeline table overlapping [t0, t1], only `columns` plus nscope_row (crate::lod::window_rows). */
  table_window?(key: string, table: string, columns: string[], t0: number, t1: number, limit: number): LodWindow;
  /** Sorted/filtered view of a table, kept in the core (crate::table_query::build_view; one at a time). */
  table_view?(key: string, table: string, sort: string, desc: boolean, filters: ColumnFilter[]): TableViewInfo;
  /** Rows offset .. offset + count of a view (0: table order), every column plus nscope_row, Arrow IPC. */
  table_view_rows?(key: string, table: string, view: number, offset: number, count: number): Uint8Array;
  /** Position of table row `row` in view `view`, -1 when the view lacks it. */
  table_view_position?(view: number, row: number): number;
  /** Search over the event tables' text (crate::table_query::search). */
  search?(key: string, query: string, limit: number): SearchResult;
  free(): void;
}

/** What a timeline track draws (crate::lod::TrackKind). */
export type LodKind = 'engine' | 'dma' | 'semaphore' | 'pending' | 'throttle' | 'system' | 'cpu' | 'hostmem';

/** One timeline track of a processed profile (crate::lod::TrackInfo); times ns from the listing's origin. */
export interface LodTrackInfo {
  id: number;
  kind: LodKind;
  /** Table its rows come from. */
  table: string;
  /** Physical core (device tracks; system hardware tracks: the NeuronCore), else -1. */
  pcore: number;
  /** Engine, queue name, semaphore id, system group key (`neuron_rt:<pid>:<tid>`, `hw:<core>`), CPU id. */
  name: string;
  source?: string;
  pid?: number | null;
  tid?: number | null;
  rows: number;
  start: number;
  end: number;
  /** Longest event, ns. */
  max_dur: number;
  vmin: number | null;
  vmax: number | null;
  /** Finest bucket width kept, ns. */
  width: number;
}

/** Session.lod_tracks(): every track, the axis origin (decimal table ns) and the dominant-name dictionary. */
export interface LodListing {
  origin: string;
  start: number;
  end: number;
  names: string[];
  tracks: LodTrackInfo[];
}

/** Session.table_window(): rows of a window, or only their count when over the limit. */
export interface LodWindow {
  rows: number;
  over_limit: boolean;
  groups_read: number;
  groups_skipped: number;
  /** Arrow IPC stream (empty when over_limit). */
  ipc: Uint8Array;
}

/** The ES module wasm-bindgen --target web writes to pkg/neuronscope.js. */
export interface WasmModule {
  /** Instantiates the module; resolves to its exports (`memory` among them). */
  default: (input?: unknown) => Promise<unknown>;
  Session: new () => WasmSession;
  demo_files(): DemoFile[];
  version(): string;
  /** Sets the function the core's panic hook hands `panicked at <file>:<line>:<col>:\n<message>` to (older cores lack it). */
  set_panic_reporter?(f: (text: string) => void): void;
  /** Crash-containment test hook: the next NTFF progress report (step "process") or table_parquet (step "table") panics ("panic") or aborts as a failed allocation ("alloc"); kind "" disarms (crate/src/wasm.rs). */
  arm_test_fault?(kind: string, step: string): void;
}

/** Busy time of one engine in a range (crate::range::EngineBusy); pcore_idx null = all cores. */
export interface EngineBusy {
  pcore_idx: number | null;
  engine: string;
  busy_ns: number;
  /** Fraction 0–1 of the range. */
  busy_fraction: number;
  instructions: number;
}

/** Result of Session.range_summary (crate::range::RangeSummary): ns, bytes. */
export interface RangeSummary {
  start_ns: number;
  end_ns: number;
  instruction_count: number;
  instruction_time_ns: number;
  engines: EngineBusy[];
  opcodes: { engine: string; opcode: string; count: number; time_ns: number }[];
  opcode_count: number;
  dma_queues: { pcore_idx: number; queue_name: string; queue_type: string; packets: number; bytes: number }[];
  dma_packets: number;
  dma_bytes: number;
}

/** A column filter as typed in the Tables view: `>= 1000`, `< 5`, `= 3`, a number, or words to contain. */
export interface ColumnFilter {
  column: string;
  text: string;
}

/** Session.table_view(): the view kept in the core. */
export interface TableViewInfo {
  id: number;
  /** Rows in the view (at most max_rows). */
  rows: number;
  /** Rows that passed the filters (more than `rows` when capped). */
  matched: number;
  table_rows: number;
  capped: boolean;
  max_rows: number;
}

/** One search hit (crate::table_query::Hit): times in table ns. */
export interface SearchHit {
  table: string;
  row: number;
  start: number;
  end: number;
  column: string;
  text: string;
}

/** Session.search(): the earliest hits by start and the total count. */
export interface SearchResult {
  total: number;
  capped: boolean;
  hits: SearchHit[];
}
