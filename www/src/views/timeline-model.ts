// Timeline model: the Instruction table (Arrow) regrouped into one track per (physical core, engine),
// each a pair of start/end arrays sorted by start. Times stay in ns since profile start (Explorer's
// convention); Float64 holds them exactly up to 2^53 ns (104 days).

import { DataType, Vector, type Table } from 'apache-arrow';
import { coreLabel, engineLabel, engineRank } from './summary.ts';

/** What every timeline row has, whatever its kind: its slices (or updates) sorted by start. */
interface TrackBase {
  /** e.g. "sg00 Tensor". */
  label: string;
  pcore: number;
  /** Colour key: the engine ("tensor"), the row kind under the engines ("dma", "semaphore", …) or the System source. */
  engine: string;
  /** Slice start (a step row: the update's time), ns, ascending. */
  starts: Float64Array;
  /** Slice end (a step row: the next update), ns (same order as starts). */
  ends: Float64Array;
  /** Row index in the track's table (same order as starts). */
  rows: Uint32Array;
  /** Longest slice, ns: how far before a window a slice can start and still reach into it. */
  maxDur: number;
  /** busy[k] = summed duration of slices 0..k-1, ns (length = slices + 1; all 0 on step rows). */
  busy: Float64Array;
  /** Table that `rows` index and its name (for loading a whole row); default the model's table. */
  table?: Table;
  source?: string;
  /** Row height, CSS px (default the view's row height). */
  height?: number;
}

/** Kinds of slice rows (each mark a named span with a busy time). */
export type SliceKind = 'engine' | 'system' | 'dma' | 'throttle';
/** Kinds of step rows (a value held from one update to the next). */
export type StepKind = 'semaphore' | 'pending';
/** Kinds of group headers (a core's DMA queues or semaphores, all their marks merged). */
export type GroupKind = 'dma-group' | 'semaphore-group';

/**
 * Engine instructions (one engine on one core), System spans, DMA packets (one queue on one core),
 * throttle records: named slices, a busy % beside the row.
 */
export interface SliceTrack<K extends SliceKind = SliceKind> extends TrackBase {
  kind: K;
  /** Opcode (span name, queue type, throttle limit) index into TimelineModel.opcodes (same order as starts). */
  ops: Uint16Array;
  /** The group the row sits in (its header's `header`; DMA queues); absent: not grouped. */
  group?: string;
}

/** Semaphore values (one semaphore on one core), pending DMA (one core): a value held until the next update. */
export interface StepTrack<K extends StepKind = StepKind> extends TrackBase {
  kind: K;
  /** The value held from starts[k] to ends[k]. */
  values: Float64Array;
  /** Largest |value| (the row's full height). */
  maxValue: number;
  /** The group the row sits in (semaphores); absent: not grouped. */
  group?: string;
}

/**
 * A group's header row: every mark of its rows merged by start (DMA packets as slices, semaphore
 * updates as instants), drawn whether the group is expanded or collapsed.
 */
export interface GroupHeaderTrack<K extends GroupKind = GroupKind> extends TrackBase {
  kind: K;
  /** Queue type of each packet / the one "semaphore update" code (same order as starts). */
  ops: Uint16Array;
  /** The group key; its rows carry it in `group`. */
  header: string;
  /** Rows in the group. */
  count: number;
  /** Whether the group starts collapsed. */
  collapsed: boolean;
}

/** The row of each kind; each kind has its own renderer (tracks/render.ts TRACK_KINDS). */
export interface TrackKinds {
  engine: SliceTrack<'engine'>;
  system: SliceTrack<'system'>;
  dma: SliceTrack<'dma'>;
  throttle: SliceTrack<'throttle'>;
  semaphore: StepTrack<'semaphore'>;
  pending: StepTrack<'pending'>;
  'dma-group': GroupHeaderTrack<'dma-group'>;
  'semaphore-group': GroupHeaderTrack<'semaphore-group'>;
}

/**
 * Every kind of timeline row: engine instructions, System spans, DMA packets, throttle records
 * (slices); semaphore values and pending DMA (steps: a value held until the next update); the
 * headers of a core's DMA queues and semaphores.
 */
export type TrackKind = keyof TrackKinds;
/** The row of kind K. */
export type TrackOf<K extends TrackKind> = TrackKinds[K];
/** One row of the timeline, discriminated by `kind`. */
export type Track = TrackOf<TrackKind>;

/** The rows under a device timeline's engines, and the engines (counted by rowCounts; headers not). */
export type RowKind = 'engine' | 'dma' | 'semaphore' | 'pending' | 'throttle';

/** A slice row (busy time, named marks). */
export function isSliceTrack(t: Track): t is SliceTrack {
  return t.kind === 'engine' || t.kind === 'system' || t.kind === 'dma' || t.kind === 'throttle';
}

/** A step row (values). */
export function isStepTrack(t: Track): t is StepTrack {
  return t.kind === 'semaphore' || t.kind === 'pending';
}

/** A group header. */
export function isGroupHeader(t: Track): t is GroupHeaderTrack {
  return t.kind === 'dma-group' || t.kind === 'semaphore-group';
}

/** The opcode-dictionary code of mark k (step rows have none: -1). */
export function opOf(t: Track, k: number): number {
  return isStepTrack(t) ? -1 : (t.ops[k] ?? 0);
}

/** The group key a row sits in (rows of an expanded or collapsed group), undefined for headers and ungrouped rows. */
export function groupOf(t: Track): string | undefined {
  return isGroupHeader(t) ? undefined : t.group;
}

/** Kinds whose busy time leaves out the semaphore waits (the Summary's active time). */
export function waitsExcluded(kind: TrackKind): boolean {
  return kind === 'engine' || kind === 'system';
}

export interface TimelineModel {
  tracks: Track[];
  /** Earliest start and latest end over all tracks, ns. */
  start: number;
  end: number;
  /** Distinct opcode strings ("" for null). */
  opcodes: string[];
  table: Table;
  /** Counter rows drawn under the slice rows on the same time axis (system CPU / memory). */
  counters?: Counter[];
  /** What "Fit" shows when it is not start..end (system: the events, not the whole sampling). */
  fitStart?: number;
  fitEnd?: number;
}

/** A sampled value over time (e.g. CPU utilisation), drawn as an area chart or a heat strip. */
export interface Counter {
  label: string;
  /** Sample times, ns on the model's axis, ascending. */
  times: Float64Array;
  /** Sample values (same order as times). */
  values: Float64Array;
  /** Value drawn at full height / full intensity. */
  max: number;
  /** How a value reads in the tooltip and gutter. */
  format: (v: number) => string;
  /** Row height, CSS px. */
  height: number;
  style: 'area' | 'heat';
  /** Hue (HSL degrees). */
  hue: number;
}

/** A numeric column as Float64 (bigint → number; null → NaN); null when the column is absent. */
export function numberColumn(table: Table, name: string): Float64Array | null {
  const col = table.getChild(name);
  if (col === null) return null;
  const out = new Float64Array(table.numRows);
  let i = 0;
  // Fast path over the chunks' typed arrays (millions of DMA packets); the iterator otherwise.
  for (const d of col.data) {
    const vals: unknown = d.values;
    const fixed = (DataType.isInt(d.type) || DataType.isFloat(d.type)) && (vals instanceof BigInt64Array || vals instanceof BigUint64Array
      || vals instanceof Float64Array || vals instanceof Float32Array || vals instanceof Int32Array || vals instanceof Uint32Array
      || vals instanceof Int16Array || vals instanceof Uint16Array || vals instanceof Int8Array || vals instanceof Uint8Array);
    if (!fixed || (vals as ArrayLike<unknown>).length < d.length) {
      const part = new Vector([d]);
      for (const v of part as Iterable<unknown>) out[i++] = v === null || v === undefined ? NaN : Number(v as number | bigint);
      continue;
    }
    const arr = vals as ArrayLike<number | bigint>;
    const nulls = d.nullCount > 0;
    for (let k = 0; k < d.length; k++) out[i++] = nulls && !d.getValid(k) ? NaN : Number(arr[k] ?? NaN);
  }
  return out;
}

const utf8 = new TextDecoder();

/** A string column as dictionary codes into `dict` (extended in place); absent column → all "". */
export function codeColumn(table: Table, name: string, dict: string[], index: Map<string, number>): Uint16Array {
  const out = new Uint16Array(table.numRows);
  const codeOf = (s: string): number => {
    let code = index.get(s);
    if (code === undefined) {
      // Codes are u16; beyond that many distinct values everything shares the last code.
      code = Math.min(dict.length, 0xffff);
      if (code === dict.length) {
        dict.push(s);
        index.set(s, code);
      }
    }
    return code;
  };
  const col = table.getChild(name);
  if (col === null) {
    out.fill(codeOf(''));
    return out;
  }
  let i = 0;
  for (const d of col.data) {
    const offsets: unknown = d.valueOffsets;
    const bytes: unknown = d.values;
    if (!DataType.isUtf8(d.type) || !(offsets instanceof Int32Array) || !(bytes instanceof Uint8Array)) {
      for (const v of new Vector([d]) as Iterable<unknown>) out[i++] = codeOf(v === null || v === undefined ? '' : String(v));
      continue;
    }
    // Utf8: hash the bytes (FNV-1a) and decode a string only for a new value, not per row.
    const seen = new Map<number, [Uint8Array, number][]>();
    const nulls = d.nullCount > 0;
    for (let k = 0; k < d.length; k++) {
      if (nulls && !d.getValid(k)) {
        out[i++] = codeOf('');
        continue;
      }
      const a = offsets[k] ?? 0;
      const b = offsets[k + 1] ?? a;
      let hsh = 2166136261;
      for (let q = a; q < b; q++) hsh = Math.imul(hsh ^ (bytes[q] ?? 0), 16777619);
      hsh = (hsh ^ (b - a)) >>> 0;
      const bucket = seen.get(hsh);
      let code = -1;
      if (bucket !== undefined) {
        for (const [raw, c] of bucket) {
          if (raw.length !== b - a) continue;
          let same = true;
          for (let q = 0; q < raw.length && same; q++) same = raw[q] === bytes[a + q];
          if (same) {
            code = c;
            break;
          }
        }
      }
      if (code < 0) {
        const raw = bytes.slice(a, b);
        code = codeOf(utf8.decode(raw));
        if (bucket === undefined) seen.set(hsh, [[raw, code]]);
        else bucket.push([raw, code]);
      }
      out[i++] = code;
    }
  }
  return out;
}

/**
 * Instruction columns the device timeline reads: what buildTimeline groups and draws (start_ts,
 * end_ts, engine, pcore_idx, opcode) and what a hover shows before the whole row loads.
 */
export const INSTRUCTION_COLUMNS: readonly string[] = ['start_ts', 'end_ts', 'engine', 'pcore_idx', 'opcode', 'pc', 'evt_wait_time_ns', 'bir_instruction_name'];

/** Builds the model from an Instruction table (columns start_ts, end_ts, engine, pcore_idx, opcode). */
export function buildTimeline(table: Table): TimelineModel {
  const steps = timelineSteps(table);
  for (let r = steps.next(); ; r = steps.next()) if (r.done === true) return r.value;
}

/**
 * buildTimeline in steps of a few ms (each column read, the grouping, every ~40k rows of tracks),
 * pausing with `pause` once `budgetMs` has passed, so a level-of-detail window of a few hundred
 * thousand instructions is never one long main-thread task; the result is buildTimeline's.
 */
export async function buildTimelineYielding(table: Table, pause: () => Promise<void>, budgetMs = 16): Promise<TimelineModel> {
  const steps = timelineSteps(table);
  let since = performance.now();
  for (let r = steps.next(); ; r = steps.next()) {
    if (r.done === true) return r.value;
    if (performance.now() - since >= budgetMs) {
      await pause();
      since = performance.now();
    }
  }
}

function* timelineSteps(table: Table): Generator<void, TimelineModel, void> {
  const n = table.numRows;
  const starts = numberColumn(table, 'start_ts');
  const ends = numberColumn(table, 'end_ts');
  if (starts === null || ends === null) throw new Error('Instruction table lacks start_ts/end_ts');
  const pcores = numberColumn(table, 'pcore_idx');
  yield;
  const engDict: string[] = [];
  const engines = codeColumn(table, 'engine', engDict, new Map());
  yield;
  const opcodes: string[] = [];
  const ops = codeColumn(table, 'opcode', opcodes, new Map());
  yield;

  // Group rows by (pcore, engine) in two passes over typed arrays (no per-row allocation).
  const groupOf = new Int32Array(n).fill(-1);
  const keys = new Map<number, number>();
  const groups: { pcore: number; engine: string; count: number; rows: Uint32Array }[] = [];
  for (let i = 0; i < n; i++) {
    if (!Number.isFinite(starts[i] ?? NaN) || !Number.isFinite(ends[i] ?? NaN)) continue;
    const raw = pcores === null ? 0 : (pcores[i] ?? 0);
    const pc = Number.isFinite(raw) ? raw : 0;
    const code = engines[i] ?? 0;
    const key = pc * 65536 + code;
    let g = keys.get(key);
    if (g === undefined) {
      g = groups.length;
      keys.set(key, g);
      groups.push({ pcore: pc, engine: engDict[code] ?? '', count: 0, rows: new Uint32Array(0) });
    }
    groupOf[i] = g;
    const grp = groups[g];
    if (grp !== undefined) grp.count++;
  }
  yield;
  for (const g of groups) g.rows = new Uint32Array(g.count);
  const fill = new Uint32Array(groups.length);
  for (let i = 0; i < n; i++) {
    const g = groupOf[i] ?? -1;
    const grp = groups[g];
    if (grp === undefined) continue;
    grp.rows[fill[g] ?? 0] = i;
    fill[g] = (fill[g] ?? 0) + 1;
  }

  let lo = Infinity;
  let hi = -Infinity;
  const tracks: Track[] = [];
  let work = 0;
  for (const g of groups) {
    work += g.rows.length;
    if (work > 40_000) {
      work = 0;
      yield;
    }
    const idx = g.rows;
    if (!sortedBy(idx, starts)) idx.sort((a, b) => (starts[a] ?? 0) - (starts[b] ?? 0) || a - b);
    const m = idx.length;
    const t: SliceTrack<'engine'> = {
      label: `${coreLabel(g.pcore)} ${engineLabel(g.engine)}`,
      pcore: g.pcore,
      engine: g.engine,
      starts: new Float64Array(m),
      ends: new Float64Array(m),
      rows: idx,
      ops: new Uint16Array(m),
      maxDur: 0,
      busy: new Float64Array(m + 1),
      kind: 'engine',
    };
    for (let k = 0; k < m; k++) {
      const r = idx[k] ?? 0;
      const s = starts[r] ?? 0;
      const e = Math.max(s, ends[r] ?? s);
      t.starts[k] = s;
      t.ends[k] = e;
      t.ops[k] = ops[r] ?? 0;
      if (e - s > t.maxDur) t.maxDur = e - s;
      t.busy[k + 1] = (t.busy[k] ?? 0) + (e - s);
      if (s < lo) lo = s;
      if (e > hi) hi = e;
    }
    tracks.push(t);
  }
  tracks.sort((a, b) => a.pcore - b.pcore || engineRank(a.engine) - engineRank(b.engine) || a.engine.localeCompare(b.engine));
  if (!Number.isFinite(lo)) {
    lo = 0;
    hi = 1;
  }
  return { tracks, start: lo, end: Math.max(hi, lo + 1), opcodes, table };
}

/** True when `starts[idx[k]]` is non-decreasing (skips the sort for the common, ordered case). */
function sortedBy(idx: Uint32Array, starts: Float64Array): boolean {
  for (let k = 1; k < idx.length; k++) if ((starts[idx[k] ?? 0] ?? 0) < (starts[idx[k - 1] ?? 0] ?? 0)) return false;
  return true;
}

/** First index k in [lo, hi) with arr[k] >= v (arr ascending). */
export function lowerBound(arr: Float64Array, v: number, lo = 0, hi = arr.length): number {
  let a = lo;
  let b = hi;
  while (a < b) {
    const mid = (a + b) >>> 1;
    if ((arr[mid] ?? 0) < v) a = mid + 1;
    else b = mid;
  }
  return a;
}

/**
 * Time in [t0, t1] covered by the track's slices, ns: slices starting inside the window, clipped
 * at t1, plus the part of earlier slices that reaches in. Overlapping slices count twice.
 */
export function busyIn(tr: Track, t0: number, t1: number): number {
  const k0 = lowerBound(tr.starts, t0);
  const k1 = lowerBound(tr.starts, t1, k0);
  let sum = (tr.busy[k1] ?? 0) - (tr.busy[k0] ?? 0);
  // Clip slices that run past t1 (only those that start within maxDur of it can).
  for (let k = k1 - 1; k >= k0 && (tr.starts[k] ?? 0) > t1 - tr.maxDur; k--) {
    sum -= Math.max(0, (tr.ends[k] ?? 0) - t1);
  }
  // Add the tails of slices that started before t0.
  for (let k = k0 - 1; k >= 0 && (tr.starts[k] ?? 0) >= t0 - tr.maxDur; k--) {
    sum += Math.max(0, Math.min(tr.ends[k] ?? 0, t1) - t0);
  }
  return sum;
}

/** A track's slices merged into disjoint intervals, with prefix sums of their lengths (ns). */
interface Merged {
  starts: Float64Array;
  ends: Float64Array;
  /** cum[i] = total length of intervals 0..i-1. */
  cum: Float64Array;
}

/** Merged intervals per track, built on first use (a track's arrays never change). */
const mergedOf = new WeakMap<SliceTrack, Merged>();

/** Opcode of the semaphore waits the Summary leaves out of an engine's active time (crate/src/summary.rs). */
export const SEMAPHORE_WAIT_OPCODE = 'EVENT_SEMAPHORE';

function merged(tr: SliceTrack, opcodes: readonly string[]): Merged {
  let m = mergedOf.get(tr);
  if (m !== undefined) return m;
  const skip = waitsExcluded(tr.kind) ? opcodes.indexOf(SEMAPHORE_WAIT_OPCODE) : -1;
  const n = tr.starts.length;
  const s = new Float64Array(n);
  const e = new Float64Array(n);
  let j = -1;
  for (let k = 0; k < n; k++) {
    if (skip >= 0 && tr.ops[k] === skip) continue;
    const a = tr.starts[k] ?? 0;
    const b = Math.max(a, tr.ends[k] ?? a);
    if (j >= 0 && a <= (e[j] ?? 0)) {
      if (b > (e[j] ?? 0)) e[j] = b;
    } else {
      j++;
      s[j] = a;
      e[j] = b;
    }
  }
  const len = j + 1;
  const cum = new Float64Array(len + 1);
  for (let i = 0; i < len; i++) cum[i + 1] = (cum[i] ?? 0) + ((e[i] ?? 0) - (s[i] ?? 0));
  m = { starts: s.slice(0, len), ends: e.slice(0, len), cum };
  mergedOf.set(tr, m);
  return m;
}

/**
 * Busy time of the track in [t0, t1], ns: the length of the union of its slices clipped to the
 * window, EVENT_SEMAPHORE slices (semaphore waits) left out on engine rows — the definition of the
 * Summary's `<engine>_active_time` (crate/src/summary.rs), so over the execution window
 * `activeIn / total_time` is `<engine>_active_time_percent`. O(log n) after a first O(n) merge.
 */
export function activeIn(tr: SliceTrack, opcodes: readonly string[], t0: number, t1: number): number {
  return clippedUnion(merged(tr, opcodes), t0, t1);
}

/** Length of disjoint sorted intervals `m` inside [t0, t1], ns. */
function clippedUnion(m: Merged, t0: number, t1: number): number {
  if (!(t1 > t0)) return 0;
  const n = m.starts.length;
  // First interval ending after t0 (ends ascend: the intervals are disjoint and sorted).
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((m.ends[mid] ?? 0) <= t0) lo = mid + 1;
    else hi = mid;
  }
  const i0 = lo;
  const i1 = lowerBound(m.starts, t1, i0);
  if (i1 <= i0) return 0;
  let sum = (m.cum[i1] ?? 0) - (m.cum[i0] ?? 0);
  sum -= Math.max(0, t0 - (m.starts[i0] ?? 0));
  sum -= Math.max(0, (m.ends[i1 - 1] ?? 0) - t1);
  return Math.max(0, sum);
}

/** Two interval lists sorted by start merged into one sorted by start. */
function mergeByStart(a: { starts: Float64Array; ends: Float64Array }, b: { starts: Float64Array; ends: Float64Array }): { starts: Float64Array; ends: Float64Array } {
  const na = a.starts.length;
  const nb = b.starts.length;
  const starts = new Float64Array(na + nb);
  const ends = new Float64Array(na + nb);
  let i = 0;
  let j = 0;
  for (let k = 0; k < na + nb; k++) {
    if (j >= nb || (i < na && (a.starts[i] ?? 0) <= (b.starts[j] ?? 0))) {
      starts[k] = a.starts[i] ?? 0;
      ends[k] = a.ends[i++] ?? 0;
    } else {
      starts[k] = b.starts[j] ?? 0;
      ends[k] = b.ends[j++] ?? 0;
    }
  }
  return { starts, ends };
}

/** Per model: engine → its instructions on every core merged (the Summary unions all cores). */
const engineUnions = new WeakMap<TimelineModel, Map<string, Merged>>();

/**
 * Busy time of `engine` over all physical cores in [t0, t1], ns: the union of every engine row's
 * slices of that engine (semaphore waits excluded), i.e. the Summary's `<engine>_active_time`
 * restricted to the window (the Summary unions the cores' streams: on fused_bf16_s512, sg00 and
 * sg01 Tensor give 41.67 %). 0 when the model has no row of that engine.
 */
export function engineActiveIn(m: TimelineModel, engine: string, t0: number, t1: number): number {
  let per = engineUnions.get(m);
  if (per === undefined) engineUnions.set(m, (per = new Map()));
  let u = per.get(engine);
  if (u === undefined) {
    const parts = m.tracks
      .filter((t): t is SliceTrack<'engine'> => t.kind === 'engine' && t.engine === engine)
      .map((t) => merged(t, m.opcodes));
    // The cores' intervals are each sorted: merge them pairwise (O(n log cores), no comparator
    // sort of every interval on the first frame after a window arrives).
    let all: { starts: Float64Array; ends: Float64Array } = { starts: new Float64Array(0), ends: new Float64Array(0) };
    for (const p of parts) all = mergeByStart(all, p);
    const n = all.starts.length;
    // One synthetic track over the sorted intervals, merged like a row (kind 'dma': no opcode is
    // left out again; the parts already exclude the semaphore waits).
    const tr: SliceTrack<'dma'> = {
      label: engine, pcore: 0, engine, starts: all.starts, ends: all.ends,
      rows: new Uint32Array(0), ops: new Uint16Array(n).fill(0xffff), maxDur: 0, busy: new Float64Array(0), kind: 'dma',
    };
    u = merged(tr, m.opcodes);
    per.set(engine, u);
  }
  return clippedUnion(u, t0, t1);
}
