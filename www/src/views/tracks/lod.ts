// Level-of-detail data for the timelines: the one interface both timelines (device, System) draw a
// large profile through. The worker keeps per-track summaries built while the profile was decoded
// (crate/src/lod.rs) and reads raw rows only for a time window (row-group statistics); this module
// asks for what the visible window needs and hands the view a model of bounded size:
//
//   fitted / mid zoom  summaries: one pseudo-row per bucket (start, busy time, count, dominant
//                      opcode or name), about one bucket per pixel column of the plot
//   close zoom         the real rows of the window (only the drawn columns), when at most
//                      WINDOW_LIMIT rows of that table overlap it
//
// The pseudo-rows have the shape of the real tables, so the same builders (timeline-model.ts,
// device-rows.ts, system-model.ts) turn either into tracks with the same labels and order, and the
// renderer draws both alike. Requests are asynchronous: the view keeps its last frame until the new
// model arrives (TimelineView.swapModel), and a newer window supersedes an older one in flight.
// Nothing proportional to a table's rows reaches the main thread.

import { DataType, makeData, makeVector, Table, tableFromIPC, Utf8, type Vector } from 'apache-arrow';
import { DMA_COLUMNS, PENDING_DMA_COLUMNS, SEMAPHORE_COLUMNS, THROTTLE_COLUMNS } from '../device-rows.ts';
import { SYSTEM_EVENT_COLUMNS } from '../system-model.ts';
import { INSTRUCTION_COLUMNS, numberColumn } from '../timeline-model.ts';
import type { LodListing, LodTrackInfo, LodWindow } from '../../api.ts';

/** The worker calls this module needs (client.ts). */
export interface LodApi {
  lod(key: string, tracks: number[], t0: number, t1: number, n: number): Promise<Float64Array>;
  window(key: string, table: string, columns: string[], t0: number, t1: number, limit: number): Promise<LodWindow>;
}

/** Rows of the event tables above which a timeline draws through this module (below: every row, as before). */
export const LOD_ROWS = 500_000;
/** Most rows of one table a window reads; above it the window is drawn from summaries. */
export const WINDOW_LIMIT = 250_000;
/**
 * The System timeline's LOD_ROWS and WINDOW_LIMIT. Its model (system-model.ts: grouping, sorting
 * and nesting every row in one task) costs about 1 µs a row on the main thread, so at most this
 * many rows reach it at once: a 100 MB Kineto trace (400 k events) read whole held the main
 * thread 1–2.5 s (scripts/bench-lod.mjs --system).
 */
export const SYSTEM_ROWS = 50_000;
/** Fields per bucket in the core's packed answer (crate::lod::QUERY_FIELDS). */
const FIELDS = 8;

/**
 * One track's buckets over a window (crate::lod::Lod::query), times ns from the listing's origin:
 * bucket 0 and the non-empty ones, bucket j starting at `first + index[j] × width`.
 */
export interface Buckets {
  id: number;
  /** Bucket width, ns. */
  width: number;
  /** Start of bucket index 0, ns. */
  first: number;
  index: Float64Array;
  busy: Float64Array;
  count: Float64Array;
  /** Index into LodListing.names, -1: none. */
  dom: Float64Array;
  /** Largest value set in the bucket (NaN: none) and the value in force at its start. */
  vmax: Float64Array;
  carry: Float64Array;
}

/** Splits the core's packed answer into per-track buckets. */
export function parseBuckets(buf: Float64Array): Map<number, Buckets> {
  const out = new Map<number, Buckets>();
  let p = 0;
  while (p + 4 <= buf.length) {
    const id = buf[p] ?? 0;
    const width = buf[p + 1] ?? 1;
    const first = buf[p + 2] ?? 0;
    const m = buf[p + 3] ?? 0;
    p += 4;
    const b: Buckets = {
      id, width, first, index: new Float64Array(m),
      busy: new Float64Array(m), count: new Float64Array(m), dom: new Float64Array(m), vmax: new Float64Array(m), carry: new Float64Array(m),
    };
    for (let k = 0; k < m; k++, p += FIELDS) {
      b.index[k] = buf[p] ?? 0;
      b.busy[k] = buf[p + 1] ?? 0;
      b.count[k] = buf[p + 2] ?? 0;
      b.dom[k] = buf[p + 3] ?? -1;
      b.vmax[k] = buf[p + 5] ?? NaN;
      b.carry[k] = buf[p + 7] ?? NaN;
    }
    out.set(id, b);
  }
  return out;
}

/** A window's tables: real rows (with nscope_row) or pseudo-rows from summaries, by table name. */
export type WindowTables = Map<string, Table>;

/** Builds the view's model from window tables (the builders the small-profile path uses). */
export type ModelBuilder<M> = (tables: WindowTables, listing: LodListing) => M | Promise<M>;

/** Column of pseudo-rows carrying the bucket's event count (tooltips tell summaries from rows by it). */
export const SUMMARY_COUNT = 'nscope_summary_count';

/** A column of a table built here (no arrow builder: see utf8). */
type Column = BigInt64Array | Float64Array | string[] | Vector;

/**
 * The columns of one table's pseudo-rows, one row per non-empty bucket (summaryTable), for its
 * source to name as the table does. Times are ns from the listing's origin.
 */
export interface PseudoColumns {
  /** Bucket start and start + its busy time (at most the bucket width), ns. */
  starts: Float64Array;
  ends: Float64Array;
  /** The bucket's largest value (step tables; NaN: none) and the row's physical core. */
  values: Float64Array;
  pcore: Float64Array;
  /** Times as the table stores them (Int64 ns; System tables: Unix ns, the origin added back). */
  time: (xs: Float64Array) => BigInt64Array | Float64Array;
  /** Per row: a string / a number of the row's track (its name: engine, queue, semaphore id, …). */
  trackStr: (f: (t: LodTrackInfo) => string) => Vector;
  perTrack: (f: (t: LodTrackInfo) => number) => Float64Array;
  /** Per row: the bucket's dominant name (opcode, queue type, span name; "" when none). */
  dominant: () => Vector;
}

/**
 * What one table gives the timelines through the store: the columns a window reads of it, whether
 * its rows are steps (a window's rows then start with the value in force per track), and its
 * pseudo-rows in its own column names, so the small-profile builders read them as rows. Each track
 * kind names its source (tracks/render.ts TRACK_KINDS `source`).
 */
export interface LodSource {
  table: string;
  columns: readonly string[];
  /** Step tables: the column naming a row's track (null: one track per core); null for slices. */
  step: { key: string | null } | null;
  /** The pseudo-rows' columns (summaryTable adds SUMMARY_COUNT). */
  pseudoRows: (c: PseudoColumns) => Record<string, Column>;
  /** Most rows of the table a window reads (default WINDOW_LIMIT); above it: summaries. */
  limit?: number;
}

/** The tables the timelines draw through the store, by name. */
export const LOD_SOURCES = {
  Instruction: {
    table: 'Instruction', columns: INSTRUCTION_COLUMNS, step: null,
    pseudoRows: (c) => ({ start_ts: c.time(c.starts), end_ts: c.time(c.ends), engine: c.trackStr((t) => t.name), pcore_idx: c.pcore, opcode: c.dominant() }),
  },
  DmaPacket: {
    table: 'DmaPacket', columns: DMA_COLUMNS, step: null,
    pseudoRows: (c) => ({ start_ts: c.time(c.starts), end_ts: c.time(c.ends), pcore_idx: c.pcore, queue_name: c.trackStr((t) => t.name), queue_type: c.dominant() }),
  },
  SemaphoreUpdate: {
    table: 'SemaphoreUpdate', columns: SEMAPHORE_COLUMNS, step: { key: 'id' },
    pseudoRows: (c) => ({ timestamp: c.time(c.starts), id: c.trackStr((t) => t.name), value: c.values, pcore_idx: c.pcore }),
  },
  PendingDma: {
    table: 'PendingDma', columns: PENDING_DMA_COLUMNS, step: { key: null },
    pseudoRows: (c) => ({ timestamp: c.time(c.starts), value: c.values, pcore_idx: c.pcore }),
  },
  Throttle: {
    table: 'Throttle', columns: THROTTLE_COLUMNS, step: null,
    pseudoRows: (c) => ({ timestamp: c.time(c.starts), duration: c.time(c.ends.map((e, i) => e - (c.starts[i] ?? e))), type: c.dominant(), pcore_idx: c.pcore }),
  },
  SystemProfileEvents: {
    table: 'SystemProfileEvents', columns: SYSTEM_EVENT_COLUMNS, step: null, limit: SYSTEM_ROWS,
    pseudoRows: (c) => ({
      id: new Float64Array(c.starts.length).fill(NaN),
      name: c.dominant(),
      start_ts: c.time(c.starts),
      end_ts: c.time(c.ends),
      trace_event_source: c.trackStr((t) => t.source ?? (t.name.startsWith('hw:') ? 'neuron_hw' : 'neuron_rt')),
      process_id: c.perTrack((t) => t.pid ?? NaN),
      thread_id: c.perTrack((t) => t.tid ?? NaN),
      pcore_idx: c.perTrack((t) => (t.name.startsWith('hw:') && t.pcore >= 0 ? t.pcore : NaN)),
      nc_idx: new Float64Array(c.starts.length).fill(NaN),
    }),
  },
} satisfies Record<string, LodSource>;

/** A table without a source of its own: slices from start_ts to end_ts. */
const PLAIN: LodSource = { table: '', columns: ['start_ts', 'end_ts'], step: null, pseudoRows: (c) => ({ start_ts: c.time(c.starts), end_ts: c.time(c.ends) }) };

/** The source of `table` (PLAIN when it has none). */
function sourceOf(table: string): LodSource {
  return (LOD_SOURCES as Record<string, LodSource>)[table] ?? PLAIN;
}

/**
 * Pseudo-rows of `table` from the buckets of its tracks: one per non-empty bucket, in the table's
 * own column names (its LodSource), so the row builders group them into the same tracks. Slices
 * last their busy time (at most the bucket width) from the bucket start; values are the bucket's
 * largest. `origin` (BigInt table ns) is added back for the System tables (Unix ns).
 */
export function summaryTable(table: string, tracks: LodTrackInfo[], buckets: Map<number, Buckets>, names: string[], origin: bigint | null): Table {
  // Two passes over typed arrays (count, then fill): a zoomed window's hundreds of thousands of
  // pseudo-rows cost no per-row object, array growth or string.
  let n = 0;
  const kept = (b: Buckets, k: number): boolean => (b.count[k] ?? 0) !== 0 || (b.busy[k] ?? 0) !== 0;
  const rowsOf = tracks.map((t) => {
    const b = buckets.get(t.id);
    let c = 0;
    if (b !== undefined) for (let k = 0; k < b.busy.length; k++) if (kept(b, k)) c++;
    // Every track keeps a row (its first event), so the track list does not change with the window.
    const m = Math.max(c, 1);
    n += m;
    return c === 0 ? -1 : m;
  });
  const starts = new Float64Array(n);
  const ends = new Float64Array(n);
  const count = new Float64Array(n);
  const values = new Float64Array(n);
  const pcore = new Float64Array(n);
  /** Dominant-name index per row (-1: none), and the track (index into `tracks`) per row. */
  const dom = new Int32Array(n);
  const owner = new Uint32Array(n);
  let r = 0;
  tracks.forEach((t, ti) => {
    const b = buckets.get(t.id);
    if (rowsOf[ti] === -1 || b === undefined) {
      starts[r] = t.start;
      ends[r] = t.start;
      values[r] = t.vmax ?? NaN;
      dom[r] = -1;
      pcore[r] = t.pcore;
      owner[r++] = ti;
      return;
    }
    for (let k = 0; k < b.busy.length; k++) {
      if (!kept(b, k)) continue;
      const s = Math.max(t.start, b.first + (b.index[k] ?? 0) * b.width);
      starts[r] = s;
      ends[r] = s + Math.min(b.busy[k] ?? 0, b.width);
      count[r] = b.count[k] ?? 0;
      values[r] = b.vmax[k] ?? NaN;
      dom[r] = b.dom[k] ?? -1;
      pcore[r] = t.pcore;
      owner[r++] = ti;
    }
  });
  // Device times (origin null) are ns from the profile start, exact in a Float64; System times are
  // Unix ns (beyond 2^53) and need BigInt.
  const time = (xs: Float64Array): BigInt64Array | Float64Array => {
    if (origin === null) return xs.map((x) => Math.round(x));
    const out = new BigInt64Array(xs.length);
    for (let i = 0; i < xs.length; i++) out[i] = BigInt(Math.round(xs[i] ?? 0)) + origin;
    return out;
  };
  const cols: PseudoColumns = {
    starts, ends, values, pcore, time,
    // A Utf8 column whose row i is the string of its track, each distinct string encoded once.
    trackStr: (f) => utf8Coded(tracks.map(f), owner),
    perTrack: (f) => {
      const v = Float64Array.from(tracks, f);
      return owner.length === 0 ? new Float64Array(0) : Float64Array.from(owner, (o) => v[o] ?? NaN);
    },
    // Dominant names: index -1 (none) is out of the dictionary's range, so "".
    dominant: () => utf8Coded(names, dom),
  };
  return tableOf({ ...sourceOf(table).pseudoRows(cols), [SUMMARY_COUNT]: count });
}

const encoder = new TextEncoder();

/**
 * A Utf8 vector of `xs` built directly (arrow's builders compile code at run time, which the page's
 * CSP refuses). Pseudo-rows repeat a few names (tracks, opcodes) hundreds of thousands of times:
 * each distinct string is encoded once.
 */
function utf8(xs: string[]): Vector {
  const seen = new Map<string, Uint8Array>();
  const parts: Uint8Array[] = new Array<Uint8Array>(xs.length);
  const offsets = new Int32Array(xs.length + 1);
  let total = 0;
  for (let i = 0; i < xs.length; i++) {
    const x = xs[i] ?? '';
    let p = seen.get(x);
    if (p === undefined) seen.set(x, (p = encoder.encode(x)));
    parts[i] = p;
    total += p.length;
    offsets[i + 1] = total;
  }
  const data = new Uint8Array(total);
  for (let i = 0; i < xs.length; i++) data.set(parts[i] ?? EMPTY, offsets[i] ?? 0);
  return makeVector(makeData({ type: new Utf8(), length: xs.length, nullCount: 0, valueOffsets: offsets, data }));
}

const EMPTY = new Uint8Array(0);

/**
 * A Utf8 vector whose row i is `dict[codes[i]]` (codes out of range: ""): each dictionary string
 * the rows use is encoded once and copied per row, with no JS string per row. Only the codes used
 * are encoded: a System listing's dictionary holds up to 65 535 names (crate::lod::MAX_NAMES) and
 * a window uses a few, so encoding them all took 100–300 ms a window on a 1.5 GB Kineto trace.
 */
function utf8Coded(dict: readonly string[], codes: ArrayLike<number>): Vector {
  const enc = new Map<number, Uint8Array>();
  const of = (c: number): Uint8Array => {
    let p = enc.get(c);
    if (p === undefined) enc.set(c, (p = c >= 0 && c < dict.length ? encoder.encode(dict[c] ?? '') : EMPTY));
    return p;
  };
  const n = codes.length;
  const offsets = new Int32Array(n + 1);
  let total = 0;
  for (let i = 0; i < n; i++) {
    total += of(codes[i] ?? -1).length;
    offsets[i + 1] = total;
  }
  const data = new Uint8Array(total);
  for (let i = 0; i < n; i++) {
    const p = of(codes[i] ?? -1);
    if (p.length > 0) data.set(p, offsets[i] ?? 0);
  }
  return makeVector(makeData({ type: new Utf8(), length: n, nullCount: 0, valueOffsets: offsets, data }));
}

/**
 * A Utf8 column of `t` (name `name`) with `extra` appended, copied chunk by chunk from the Arrow
 * buffers (a window's hundreds of thousands of rows are never turned into JS strings); nulls
 * become "". Null when the column is not plain Utf8.
 */
function appendUtf8(t: Table, name: string, extra: string[]): Vector | null {
  const col = t.getChild(name);
  if (col === null) return null;
  let bytes = 0;
  for (const d of col.data) {
    if (!DataType.isUtf8(d.type) || !(d.valueOffsets instanceof Int32Array) || !(d.values instanceof Uint8Array)) return null;
    bytes += (d.valueOffsets[d.offset + d.length] ?? 0) - (d.valueOffsets[d.offset] ?? 0);
  }
  const tail = extra.map((x) => encoder.encode(x));
  for (const p of tail) bytes += p.length;
  const n = t.numRows;
  const offsets = new Int32Array(n + extra.length + 1);
  const data = new Uint8Array(bytes);
  let i = 0;
  let at = 0;
  for (const d of col.data) {
    const off = d.valueOffsets as Int32Array;
    const vals = d.values as Uint8Array;
    if (d.nullCount === 0) {
      // One copy of the chunk's bytes, its offsets shifted.
      const a0 = off[d.offset] ?? 0;
      const b0 = off[d.offset + d.length] ?? a0;
      data.set(vals.subarray(a0, b0), at);
      const shift = at - a0;
      for (let k = 1; k <= d.length; k++) offsets[++i] = (off[d.offset + k] ?? 0) + shift;
      at += b0 - a0;
      continue;
    }
    for (let k = 0; k < d.length; k++) {
      if (d.getValid(k)) {
        const a = off[d.offset + k] ?? 0;
        const b = off[d.offset + k + 1] ?? a;
        data.set(vals.subarray(a, b), at);
        at += b - a;
      }
      offsets[++i] = at;
    }
  }
  for (const p of tail) {
    data.set(p, at);
    at += p.length;
    offsets[++i] = at;
  }
  return makeVector(makeData({ type: new Utf8(), length: n + extra.length, nullCount: 0, valueOffsets: offsets, data: data.subarray(0, at) }));
}

/** A table of typed arrays and string lists (no arrow builder: see utf8). */
function tableOf(cols: Record<string, Column>): Table {
  const vecs: Record<string, Vector> = {};
  for (const [k, v] of Object.entries(cols)) vecs[k] = Array.isArray(v) ? utf8(v) : v instanceof Float64Array || v instanceof BigInt64Array ? makeVector(v) : v;
  return new Table(vecs);
}

/** A new main-thread task. */
const nextTask = (): Promise<void> => new Promise((ok) => setTimeout(ok, 0));

/** A user-timing span from `start` (performance.now() ms) to now, when it took over 20 ms (scripts/bench-lod.mjs reports the longest). */
export function span(name: string, start: number): void {
  if (performance.now() - start > 20) performance.measure(name, { start });
}

/**
 * The window rows of a step table with, per track, one pseudo-row carrying the value in force
 * before them (from the summaries' `carry`): at the start of the finest bucket that holds the
 * window's first instant, the rows being read from two finest widths earlier. Pseudo-rows have a
 * finite SUMMARY_COUNT (0), real rows NaN.
 */
async function withCarry(t: Table, source: LodSource, tracks: LodTrackInfo[], buckets: Map<number, Buckets>, pause: () => Promise<void>): Promise<Table> {
  const key = source.step?.key ?? null;
  const add: { ts: number; pcore: number; id: string; v: number }[] = [];
  for (const tr of tracks) {
    const b = buckets.get(tr.id);
    const v = b?.carry[0] ?? NaN;
    if (b !== undefined && Number.isFinite(v)) add.push({ ts: b.first, pcore: tr.pcore, id: tr.name, v });
  }
  if (add.length === 0) return t;
  const cols: Record<string, Column> = {};
  const n = t.numRows;
  for (const f of t.schema.fields) {
    // A column per main-thread task: a window's few hundred thousand rows times six columns
    // would otherwise be one long task.
    await pause();
    const name = f.name;
    if (DataType.isUtf8(f.type)) {
      const extra = add.map((a) => (name === key ? a.id : ''));
      const fast = appendUtf8(t, name, extra);
      if (fast !== null) {
        cols[name] = fast;
        continue;
      }
      const out: string[] = [];
      for (const v of (t.getChild(name) ?? []) as Iterable<unknown>) out.push(v === null || v === undefined ? '' : String(v));
      out.push(...extra);
      cols[name] = out;
    } else {
      const vals = numberColumn(t, name) ?? new Float64Array(n).fill(NaN);
      const out = new Float64Array(n + add.length);
      out.set(vals);
      add.forEach((a, i) => (out[n + i] = name === 'timestamp' ? a.ts : name === 'value' ? a.v : name === 'pcore_idx' ? a.pcore : NaN));
      // Device times are ns from the profile start: exact in a Float64 (2^53 ns), no BigInt per row.
      cols[name] = out;
    }
  }
  const marks = new Float64Array(n + add.length).fill(NaN);
  marks.fill(0, n);
  cols[SUMMARY_COUNT] = marks;
  return tableOf(cols);
}

/** Which window the model was built for and how it is drawn, per table (for tests and the status line). */
export interface LodState {
  t0: number;
  t1: number;
  /** Per table: 'rows' (the window's real rows) or 'summary', and the rows that overlapped. */
  tables: Record<string, { mode: 'rows' | 'summary'; rows: number }>;
}

/**
 * Keeps a view's model in step with its visible window: `request(t0, t1, px)` (the view calls it
 * after each frame) fetches summaries and, when small enough, the window's rows, then hands the
 * built model to `apply`. Windows are padded by half their width on each side so small pans reuse
 * the data; a request for a window already covered at the same resolution costs nothing.
 */
export class LodController<M> {
  private seq = 0;
  private have: { t0: number; t1: number; npp: number } | null = null;
  private timer = 0;
  state: LodState | null = null;

  constructor(
    private readonly api: LodApi,
    private readonly key: string,
    readonly listing: LodListing,
    private readonly sources: readonly LodSource[],
    private readonly build: ModelBuilder<M>,
    private readonly apply: (model: M, state: LodState) => void,
    private readonly origin: bigint | null,
  ) {}

  /** The model of the whole profile from summaries (the fitted view), built once at open. */
  async initial(px: number): Promise<M> {
    const { start, end } = this.listing;
    const pad = (end - start) * 0.02;
    const { model, state } = await this.fetch(start - pad, end + pad, Math.max(200, px), false);
    this.have = { t0: start - pad, t1: end + pad, npp: (end - start + 2 * pad) / Math.max(200, px) };
    this.state = state;
    return model;
  }

  /** The view shows [t0, t1] over `px` pixel columns: fetch what it lacks (debounced). */
  request(t0: number, t1: number, px: number): void {
    const npp = (t1 - t0) / Math.max(1, px);
    const h = this.have;
    if (h !== null && t0 >= h.t0 && t1 <= h.t1 && npp >= h.npp * 0.7 && npp <= h.npp * 1.6) return;
    clearTimeout(this.timer);
    this.timer = window.setTimeout(() => {
      const span = t1 - t0;
      const a = t0 - span / 2;
      const b = t1 + span / 2;
      const seq = ++this.seq;
      // A view of most of the profile is the fitted level: summaries, as at open.
      const fitted = span >= 0.8 * (this.listing.end - this.listing.start);
      this.fetch(a, b, Math.ceil(px * 2), !fitted).then(({ model, state }) => {
        if (seq !== this.seq) return;
        this.have = { t0: a, t1: b, npp };
        this.state = state;
        this.apply(model, state);
      }, (e: unknown) => console.warn('timeline window failed', e));
    }, 60);
  }

  /** Drops pending work (the view shows another profile). */
  dispose(): void {
    clearTimeout(this.timer);
    this.seq++;
  }

  private async fetch(t0: number, t1: number, n: number, rows: boolean): Promise<{ model: M; state: LodState }> {
    const byTable = new Map<string, LodTrackInfo[]>();
    for (const t of this.listing.tracks) {
      const l = byTable.get(t.table);
      if (l === undefined) byTable.set(t.table, [t]);
      else l.push(t);
    }
    const out: WindowTables = new Map();
    const state: LodState = { t0, t1, tables: {} };
    await Promise.all(this.sources.map(async (src) => {
      const tracks = byTable.get(src.table) ?? [];
      if (tracks.length === 0) return;
      if (rows) {
        // Step rows start with the value in force: read from two finest widths before the window.
        const step = src.step !== null;
        const wmax = step ? tracks.reduce((a, t) => Math.max(a, t.width), 1) : 0;
        const w = await this.api.window(this.key, src.table, [...src.columns], t0 - 2 * wmax, t1, src.limit ?? WINDOW_LIMIT);
        if (!w.over_limit) {
          const at = performance.now();
          const got = tableFromIPC(w.ipc);
          span(`lod: window ${src.table}`, at);
          out.set(src.table, step ? await withCarry(got, src, tracks, parseBuckets(await this.api.lod(this.key, tracks.map((t) => t.id), t0 - wmax, t0 - wmax, 1)), nextTask) : got);
          state.tables[src.table] = { mode: 'rows', rows: w.rows };
          return;
        }
        state.tables[src.table] = { mode: 'summary', rows: w.rows };
      } else state.tables[src.table] = { mode: 'summary', rows: tracks.reduce((a, t) => a + t.rows, 0) };
      const buckets = parseBuckets(await this.api.lod(this.key, tracks.map((t) => t.id), t0, t1, n));
      // Parsing and the pseudo-rows in separate main-thread tasks.
      await nextTask();
      const at = performance.now();
      out.set(src.table, summaryTable(src.table, tracks, buckets, this.listing.names, this.origin));
      span(`lod: pseudo-rows ${src.table}`, at);
    }));
    // The last table's pseudo-rows were made in this task: build the model in the next one, so the
    // two do not add up to one long main-thread task.
    await nextTask();
    const at = performance.now();
    const model = await this.build(out, this.listing);
    span('lod: model (several tasks)', at);
    return { model, state };
  }
}

/** Rows of the LOD-drawn tables of a processed profile (decides whether to draw through this module). */
export function eventRows(tables: { name: string; rows: number }[], names: string[]): number {
  return tables.filter((t) => names.includes(t.name)).reduce((a, t) => a + Number(t.rows), 0);
}
