// System timeline model: SystemProfileEvents regrouped into tracks the device timeline renderer draws
// (timeline.ts), plus CpuUsage / HostMemUsage as counter rows on the same time axis.
//
// Tracks: framework spans (Kineto trace.json) first, then runtime spans (neuron_rt), each grouped by
// process → thread, then hardware spans
// (neuron_hw, e.g. nc_exec_running) by NeuronCore (pcore_idx, else nc_idx). Spans that overlap in
// time go to nested lanes: a span takes the first lane whose previous span ended before it starts,
// so a parent sits in lane 0 and what runs inside it below.
//
// Time axis: the tables hold Unix ns as int64 (BigInt, ~1.7e18, beyond Float64's 2^53), so every
// time is taken relative to `base` (the earliest event or sample) in BigInt before becoming a
// number: ns since the start of the trace, exact to the ns for 104 days.

import { DataType, type Table } from 'apache-arrow';
import { bytes } from '../format.ts';
import { codeColumn, numberColumn, type Counter, type SliceTrack, type TimelineModel, type Track } from './timeline-model.ts';

/** SystemProfileEvents columns the system timeline draws or shows on hover / click. */
export const SYSTEM_EVENT_COLUMNS = [
  'id', 'name', 'start_ts', 'end_ts', 'duration_ns', 'trace_event_source', 'instance_id', 'process_id',
  'thread_id', 'nc_idx', 'pcore_idx', 'worker_gid', 'extra_attributes_json',
];

export interface SystemModel extends TimelineModel {
  /** Unix ns of axis time 0. */
  base: bigint;
}

/** Signed BigInt nanoseconds of a cell (null when absent). */
function bigCell(v: unknown): bigint | null {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && Number.isFinite(v)) return BigInt(Math.trunc(v));
  return null;
}

function bigColumn(t: Table | null, name: string): (bigint | null)[] {
  const col = t?.getChild(name);
  const out: (bigint | null)[] = [];
  if (col === null || col === undefined) return out;
  for (const v of col as Iterable<unknown>) out.push(bigCell(v));
  return out;
}

/** Row access to an Int64 column's chunks without a BigInt per row read through the iterator. */
interface Int64Rows {
  valid(i: number): boolean;
  /** The cell (valid rows only). */
  get(i: number): bigint;
}

/** An Int64 (or other integer / float) column of `t` as Int64Rows; null when absent. */
function int64Column(t: Table, name: string): Int64Rows | null {
  const col = t.getChild(name);
  if (col === null) return null;
  const chunks = col.data;
  if (chunks.every((d) => DataType.isInt(d.type) && d.values instanceof BigInt64Array && d.values.length >= d.length)) {
    // The chunks' values in one array (a window's IPC holds a record batch per row group), and
    // validity only when a chunk has nulls.
    const one = chunks.length === 1 ? (chunks[0]?.values as BigInt64Array | undefined) : undefined;
    const vals = one ?? new BigInt64Array(t.numRows);
    let valid: Uint8Array | null = null;
    let at = 0;
    for (const d of chunks) {
      const v = d.values as BigInt64Array;
      if (one === undefined) vals.set(v.subarray(0, d.length), at);
      if (d.nullCount > 0) {
        valid ??= new Uint8Array(t.numRows).fill(1);
        for (let k = 0; k < d.length; k++) valid[at + k] = d.getValid(k) ? 1 : 0;
      }
      at += d.length;
    }
    return { valid: valid === null ? () => true : (i) => valid[i] === 1, get: (i) => vals[i] ?? 0n };
  }
  // Another type: one pass through the iterator.
  const cells = bigColumn(t, name);
  return { valid: (i) => cells[i] !== null && cells[i] !== undefined, get: (i) => cells[i] ?? 0n };
}

function strColumn(t: Table, name: string): string[] {
  const col = t.getChild(name);
  const out: string[] = new Array<string>(t.numRows).fill('');
  if (col === null) return out;
  let i = 0;
  for (const v of col as Iterable<unknown>) out[i++] = v === null || v === undefined ? '' : String(v);
  return out;
}

function numColumn(t: Table, name: string): (number | null)[] {
  const col = t.getChild(name);
  const out: (number | null)[] = new Array<number | null>(t.numRows).fill(null);
  if (col === null) return out;
  let i = 0;
  for (const v of col as Iterable<unknown>) out[i++] = v === null || v === undefined ? null : Number(v as number | bigint);
  return out;
}

/** Hue per event source. */
export const SOURCE_HUES: Record<string, number> = { neuron_rt: 200, neuron_hw: 28, framework: 300 };

/**
 * Lane of each row of one group, by position in `order` (the group's rows sorted by start, longer
 * first on ties): a row takes the first lane whose previous span ended before it starts.
 */
export function assignLanes(starts: ArrayLike<number>, ends: ArrayLike<number>, order: number[]): Uint32Array {
  const laneEnd: number[] = [];
  const lane = new Uint32Array(order.length);
  order.forEach((r, k) => {
    const s = starts[r] ?? 0;
    const e = Math.max(s, ends[r] ?? s);
    let l = laneEnd.findIndex((end) => end <= s);
    if (l < 0) {
      l = laneEnd.length;
      laneEnd.push(e);
    } else laneEnd[l] = e;
    lane[k] = l;
  });
  return lane;
}

/**
 * Builds the system timeline from SystemProfileEvents (columns of SYSTEM_EVENT_COLUMNS) and the
 * optional CpuUsage (timestamp, util_percent, cpu_id) and HostMemUsage (timestamp, used_bytes,
 * used_percent) tables; `threadNames` ("pid:tid" → Kineto thread_name) labels framework tracks.
 */
export function buildSystemTimeline(events: Table, cpu: Table | null, mem: Table | null, threadNames: Map<string, string> = new Map()): SystemModel {
  // Columnar throughout (typed arrays, dictionary codes): no JS string, BigInt or object per row
  // except the BigInt subtraction, so a window of tens of thousands of rows is one short task.
  const n = events.numRows;
  const s0 = int64Column(events, 'start_ts');
  const e0 = int64Column(events, 'end_ts');
  const cpuTs = bigColumn(cpu, 'timestamp');
  const memTs = bigColumn(mem, 'timestamp');
  let base: bigint | null = null;
  if (s0 !== null) {
    for (let i = 0; i < n; i++) {
      if (!s0.valid(i)) continue;
      const v = s0.get(i);
      if (base === null || v < base) base = v;
    }
  }
  for (const v of [...cpuTs, ...memTs]) if (v !== null && (base === null || v < base)) base = v;
  const b = base ?? 0n;
  const rel = (v: bigint | null): number => (v === null ? NaN : Number(v - b));

  const starts = new Float64Array(n).fill(NaN);
  const ends = new Float64Array(n).fill(NaN);
  for (let i = 0; i < n; i++) {
    const s = s0 !== null && s0.valid(i) ? Number(s0.get(i) - b) : NaN;
    starts[i] = s;
    ends[i] = e0 !== null && e0.valid(i) ? Number(e0.get(i) - b) : s;
  }
  const opcodes: string[] = [];
  const opIndex = new Map<string, number>();
  const nameCodes = codeColumn(events, 'name', opcodes, opIndex);
  const sourceDict: string[] = [];
  const sourceCodes = codeColumn(events, 'trace_event_source', sourceDict, new Map());
  const absent = (): Float64Array => new Float64Array(n).fill(NaN);
  const pids = numberColumn(events, 'process_id') ?? absent();
  const tids = numberColumn(events, 'thread_id') ?? absent();
  const pcores = numberColumn(events, 'pcore_idx') ?? absent();
  const ncs = numberColumn(events, 'nc_idx') ?? absent();
  const num = (v: number | undefined): number | null => (v === undefined || Number.isNaN(v) ? null : v);

  // Group key and label per row: hardware by core, everything else by process → thread.
  interface Group { key: string; label: string; source: string; sortKey: [number, number, number]; rows: number[] }
  const groups = new Map<string, Group>();
  // Rows of one thread or core mostly come together: the key is made again only when the row's
  // (source, pid, tid, core) changes.
  let last: Group | null = null;
  let lastSrc = -1;
  let lastA = NaN;
  let lastB = NaN;
  for (let i = 0; i < n; i++) {
    if (!Number.isFinite(starts[i] ?? NaN)) continue;
    const sc = sourceCodes[i] ?? 0;
    const src = sourceDict[sc] || 'neuron_rt';
    const hw = src === 'neuron_hw';
    const a = hw ? (num(pcores[i]) ?? num(ncs[i]) ?? NaN) : (pids[i] ?? NaN);
    const bb = hw ? 0 : (tids[i] ?? NaN);
    if (last !== null && sc === lastSrc && Object.is(a, lastA) && Object.is(bb, lastB)) {
      last.rows.push(i);
      continue;
    }
    let key: string;
    let label: string;
    let sortKey: [number, number, number];
    if (hw) {
      const core = num(a);
      key = `hw:${core ?? '?'}`;
      label = core === null ? 'NeuronCore ?' : `NeuronCore ${core}`;
      sortKey = [1, core ?? 1e9, 0];
    } else {
      const pid = num(a);
      const tid = num(bb);
      key = `${src}:${pid ?? '?'}:${tid ?? '?'}`;
      // Framework threads carry their Kineto thread_name when the trace names them.
      const tname = src === 'framework' ? threadNames.get(`${pid ?? '?'}:${tid ?? '?'}`) : undefined;
      label = src === 'framework'
        ? `fw ${tname !== undefined ? `${tname} · ` : ''}pid ${pid ?? '?'} · tid ${tid ?? '?'}`
        : `pid ${pid ?? '?'} · tid ${tid ?? '?'}`;
      // Framework tracks (Kineto) sit above the runtime tracks they drive (Explorer's order).
      sortKey = [src === 'framework' ? -1 : 0, pid ?? 0, tid ?? 0];
    }
    let g = groups.get(key);
    if (g === undefined) groups.set(key, (g = { key, label, source: src, sortKey, rows: [] }));
    g.rows.push(i);
    last = g;
    lastSrc = sc;
    lastA = a;
    lastB = bb;
  }

  const sorted = [...groups.values()].sort((a, b) =>
    a.sortKey[0] - b.sortKey[0] || a.sortKey[1] - b.sortKey[1] || a.sortKey[2] - b.sortKey[2]);
  const tracks: Track[] = [];
  let lo = Infinity;
  let hi = -Infinity;
  for (const g of sorted) {
    const order = g.rows.sort((a, b) => (starts[a] ?? 0) - (starts[b] ?? 0) || (ends[b] ?? 0) - (ends[a] ?? 0) || a - b);
    const lanes = assignLanes(starts, ends, order);
    // Rows per lane in one pass (in start order), not one scan of the group per lane.
    const perLane: number[][] = [];
    order.forEach((r, k) => {
      const l = lanes[k] ?? 0;
      while (perLane.length <= l) perLane.push([]);
      perLane[l]?.push(r);
    });
    perLane.forEach((rows, l) => {
      const m = rows.length;
      const t: SliceTrack<'system'> = {
        label: l === 0 ? g.label : '',
        pcore: 0,
        engine: g.source,
        starts: new Float64Array(m),
        ends: new Float64Array(m),
        rows: Uint32Array.from(rows),
        ops: new Uint16Array(m),
        maxDur: 0,
        busy: new Float64Array(m + 1),
        kind: 'system',
      };
      for (let k = 0; k < m; k++) {
        const r = rows[k] ?? 0;
        const s = starts[r] ?? 0;
        const e = Math.max(s, ends[r] ?? s);
        t.starts[k] = s;
        t.ends[k] = e;
        t.ops[k] = nameCodes[r] ?? 0;
        if (e - s > t.maxDur) t.maxDur = e - s;
        t.busy[k + 1] = (t.busy[k] ?? 0) + (e - s);
        if (s < lo) lo = s;
        if (e > hi) hi = e;
      }
      tracks.push(t);
    });
  }

  // Fit shows the events; the counters may run much longer (sampling covers the whole capture).
  const fit = Number.isFinite(lo) ? { fitStart: lo, fitEnd: Math.max(hi, lo + 1) } : {};
  const counters: Counter[] = [];
  if (cpu !== null && cpu.numRows > 0) {
    const ids = strColumn(cpu, 'cpu_id');
    const vals = numColumn(cpu, 'util_percent');
    const per = new Map<string, { t: number[]; v: number[] }>();
    cpuTs.forEach((ts, i) => {
      const t = rel(ts);
      if (!Number.isFinite(t)) return;
      const id = ids[i] ?? '';
      let p = per.get(id);
      if (p === undefined) per.set(id, (p = { t: [], v: [] }));
      p.t.push(t);
      p.v.push(vals[i] ?? NaN);
    });
    const ordered = [...per.keys()].sort((a, b) => (a === 'average' ? -1 : b === 'average' ? 1 : Number(a) - Number(b) || a.localeCompare(b)));
    const many = ordered.length > 17;
    for (const id of ordered) {
      const p = per.get(id);
      if (p === undefined) continue;
      const idx = p.t.map((_, k) => k).sort((a, b) => (p.t[a] ?? 0) - (p.t[b] ?? 0));
      const avg = id === 'average';
      counters.push({
        label: avg ? 'CPU average' : `cpu ${id}`,
        times: Float64Array.from(idx, (k) => p.t[k] ?? 0),
        values: Float64Array.from(idx, (k) => p.v[k] ?? NaN),
        max: 100,
        format: (v) => `${Number.isFinite(v) ? v.toFixed(1) : '–'} %`,
        height: avg ? 48 : many ? (ordered.length > 65 ? 4 : 9) : 22,
        style: avg || !many ? 'area' : 'heat',
        hue: avg ? 130 : 100,
      });
      for (const t of p.t) {
        if (t < lo) lo = t;
        if (t > hi) hi = t;
      }
    }
  }
  if (mem !== null && mem.numRows > 0) {
    const used = numColumn(mem, 'used_bytes');
    const pct = numColumn(mem, 'used_percent');
    const idx = memTs.map((_, k) => k).filter((k) => memTs[k] !== null).sort((a, c) => rel(memTs[a] ?? null) - rel(memTs[c] ?? null));
    const times = Float64Array.from(idx, (k) => rel(memTs[k] ?? null));
    const usedB = Float64Array.from(idx, (k) => used[k] ?? NaN);
    const usedP = Float64Array.from(idx, (k) => pct[k] ?? NaN);
    let maxB = 0;
    for (const v of usedB) if (Number.isFinite(v) && v > maxB) maxB = v;
    counters.push({
      label: 'Host memory',
      times,
      values: usedB,
      max: maxB > 0 ? maxB * 1.05 : 1,
      format: (v) => {
        const k = lowerIdx(usedB, v);
        const p = k >= 0 ? usedP[k] : undefined;
        return `${Number.isFinite(v) ? bytes(v) : '–'}${p !== undefined && Number.isFinite(p) ? ` (${p.toFixed(1)} %)` : ''}`;
      },
      height: 48,
      style: 'area',
      hue: 265,
    });
    for (const t of times) {
      if (t < lo) lo = t;
      if (t > hi) hi = t;
    }
  }
  if (!Number.isFinite(lo)) {
    lo = 0;
    hi = 1;
  }
  return { tracks, start: lo, end: Math.max(hi, lo + 1), opcodes, table: events, counters, base: b, ...fit };
}

/** Index of the first element equal to v (for the memory tooltip's percent), or -1. */
function lowerIdx(arr: Float64Array, v: number): number {
  for (let k = 0; k < arr.length; k++) if (arr[k] === v) return k;
  return -1;
}

/** extra_attributes_json of an event as an object ({} when absent or not JSON). */
export function extraAttributes(row: Record<string, unknown>): Record<string, unknown> {
  const raw = row['extra_attributes_json'];
  if (typeof raw !== 'string' || raw === '') return {};
  try {
    const v: unknown = JSON.parse(raw);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** One DeviceProfileList row. */
export interface DeviceLinkRow {
  device_profile_name: string;
  nc_id: number | null;
  model_id: number | null;
  nscope_link: string;
}

export function deviceLinkRows(t: Table): DeviceLinkRow[] {
  const name = strColumn(t, 'device_profile_name');
  const nc = numColumn(t, 'nc_id');
  const model = numColumn(t, 'model_id');
  const link = strColumn(t, 'nscope_link');
  return name.map((d, i) => ({ device_profile_name: d, nc_id: nc[i] ?? null, model_id: model[i] ?? null, nscope_link: link[i] ?? '' }));
}

/**
 * The DeviceProfileList row an `nc_exec_running` event belongs to: same model_id (extra attributes)
 * when both name one, else same NeuronCore (nc_id = pcore_idx or nc_idx); null when none matches.
 */
export function linkedDevice(row: Record<string, unknown>, list: DeviceLinkRow[]): DeviceLinkRow | null {
  const extra = extraAttributes(row);
  const num = (v: unknown): number | null => (v === null || v === undefined || v === '' ? null : Number.isFinite(Number(v)) ? Number(v) : null);
  const model = num(extra['model_id']);
  const cores = [num(row['pcore_idx']), num(row['nc_idx'])].filter((c): c is number => c !== null);
  if (model !== null) {
    const byModel = list.filter((d) => d.model_id === model);
    if (byModel.length > 0) return byModel.find((d) => d.nc_id !== null && cores.includes(d.nc_id)) ?? byModel[0] ?? null;
  }
  return list.find((d) => d.nc_id !== null && cores.includes(d.nc_id)) ?? null;
}

/** How the details panel words a link: kind and sentence. */
export function linkWording(link: string): { kind: 'same' | 'other-capture' | 'unlinked'; text: string } {
  if (link === 'same capture') return { kind: 'same', text: 'Recorded in this capture: the device profile shows this execution.' };
  if (link.startsWith('same NEFF, different capture')) {
    const why = link.replace(/^same NEFF, different capture:?\s*/, '');
    return {
      kind: 'other-capture',
      text: `Same NEFF, different capture: the device profile ran the same compiled model but was not recorded during this execution${why ? ` (${why})` : ''}. Its timeline is not this span.`,
    };
  }
  return { kind: 'unlinked', text: `Not linked to this trace: ${link.replace(/^unlinked:?\s*/, '') || 'no reason given'}.` };
}

/** One ExecutionInfo row (device profile), times in ns on the device timeline's axis. */
export interface ExecutionRow {
  index: number;
  start: number | null;
  end: number | null;
}

/**
 * The device execution an `nc_exec_running` span (its `exec_id` attribute) ran as: the only one when
 * the profile holds one; else execution_index = exec_id − 1 (exec ids count from 1 in the sample,
 * execution indexes from 0 [INF]), else = exec_id, else the first with a time range. Null when no
 * row has a time range (pre-v6 NTFF).
 */
export function pickExecution(rows: ExecutionRow[], execId: number | null): ExecutionRow | null {
  const timed = rows.filter((r) => r.start !== null && r.end !== null && r.end > r.start);
  if (timed.length <= 1) return timed[0] ?? null;
  if (execId !== null) {
    const hit = timed.find((r) => r.index === execId - 1) ?? timed.find((r) => r.index === execId);
    if (hit !== undefined) return hit;
  }
  return timed[0] ?? null;
}

export function executionRows(t: Table): ExecutionRow[] {
  const idx = numColumn(t, 'execution_index');
  const s = numColumn(t, 'execution_start_ts');
  const e = numColumn(t, 'execution_end_ts');
  return idx.map((i, k) => ({ index: i ?? k, start: s[k] ?? null, end: e[k] ?? null }));
}
