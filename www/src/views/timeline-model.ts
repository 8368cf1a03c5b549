// Timeline model: the Instruction table (Arrow) regrouped into one track per (physical core, engine),
// each a pair of start/end arrays sorted by start. Times stay in ns since profile start (Explorer's
// convention); Float64 holds them exactly up to 2^53 ns (104 days).

import type { Table } from 'apache-arrow';
import { coreLabel, engineLabel, engineRank } from './summary.ts';

/** One row of the timeline: the instructions one engine ran on one physical core. */
export interface Track {
  /** e.g. "sg00 Tensor". */
  label: string;
  pcore: number;
  engine: string;
  /** Slice start, ns, ascending. */
  starts: Float64Array;
  /** Slice end, ns (same order as starts). */
  ends: Float64Array;
  /** Row index in the Instruction table (same order as starts). */
  rows: Uint32Array;
  /** Opcode index into TimelineModel.opcodes (same order as starts). */
  ops: Uint16Array;
  /** Longest slice, ns: how far before a window a slice can start and still reach into it. */
  maxDur: number;
}

export interface TimelineModel {
  tracks: Track[];
  /** Earliest start and latest end over all tracks, ns. */
  start: number;
  end: number;
  /** Distinct opcode strings ("" for null). */
  opcodes: string[];
  table: Table;
}

/** A numeric column as Float64 (bigint → number; null → NaN); null when the column is absent. */
export function numberColumn(table: Table, name: string): Float64Array | null {
  const col = table.getChild(name);
  if (col === null) return null;
  const out = new Float64Array(table.numRows);
  let i = 0;
  for (const v of col as Iterable<unknown>) {
    out[i++] = v === null || v === undefined ? NaN : Number(v as number | bigint);
  }
  return out;
}

/** A string column as dictionary codes into `dict` (extended in place); absent column → all "". */
function codeColumn(table: Table, name: string, dict: string[], index: Map<string, number>): Uint16Array {
  const out = new Uint16Array(table.numRows);
  const col = table.getChild(name);
  if (col === null) {
    if (!index.has('')) {
      index.set('', dict.length);
      dict.push('');
    }
    out.fill(index.get('') ?? 0);
    return out;
  }
  let i = 0;
  for (const v of col as Iterable<unknown>) {
    const s = v === null || v === undefined ? '' : String(v);
    let code = index.get(s);
    if (code === undefined) {
      // Codes are u16; beyond that many distinct values everything shares the last code.
      code = Math.min(dict.length, 0xffff);
      if (code === dict.length) {
        dict.push(s);
        index.set(s, code);
      }
    }
    out[i++] = code;
  }
  return out;
}

/** Builds the model from an Instruction table (columns start_ts, end_ts, engine, pcore_idx, opcode). */
export function buildTimeline(table: Table): TimelineModel {
  const n = table.numRows;
  const starts = numberColumn(table, 'start_ts');
  const ends = numberColumn(table, 'end_ts');
  if (starts === null || ends === null) throw new Error('Instruction table lacks start_ts/end_ts');
  const pcores = numberColumn(table, 'pcore_idx');
  const engDict: string[] = [];
  const engines = codeColumn(table, 'engine', engDict, new Map());
  const opcodes: string[] = [];
  const ops = codeColumn(table, 'opcode', opcodes, new Map());

  // Group rows by (pcore, engine).
  const groups = new Map<string, { pcore: number; engine: string; rows: number[] }>();
  for (let i = 0; i < n; i++) {
    const s = starts[i] ?? NaN;
    const e = ends[i] ?? NaN;
    if (!Number.isFinite(s) || !Number.isFinite(e)) continue;
    const pc = pcores === null || !Number.isFinite(pcores[i] ?? NaN) ? 0 : (pcores[i] ?? 0);
    const eng = engDict[engines[i] ?? 0] ?? '';
    const key = `${pc}\u0000${eng}`;
    let g = groups.get(key);
    if (g === undefined) {
      g = { pcore: pc, engine: eng, rows: [] };
      groups.set(key, g);
    }
    g.rows.push(i);
  }

  let lo = Infinity;
  let hi = -Infinity;
  const tracks: Track[] = [];
  for (const g of groups.values()) {
    const idx = Uint32Array.from(g.rows);
    idx.sort((a, b) => (starts[a] ?? 0) - (starts[b] ?? 0) || a - b);
    const m = idx.length;
    const t: Track = {
      label: `${coreLabel(g.pcore)} ${engineLabel(g.engine)}`,
      pcore: g.pcore,
      engine: g.engine,
      starts: new Float64Array(m),
      ends: new Float64Array(m),
      rows: idx,
      ops: new Uint16Array(m),
      maxDur: 0,
    };
    for (let k = 0; k < m; k++) {
      const r = idx[k] ?? 0;
      const s = starts[r] ?? 0;
      const e = Math.max(s, ends[r] ?? s);
      t.starts[k] = s;
      t.ends[k] = e;
      t.ops[k] = ops[r] ?? 0;
      if (e - s > t.maxDur) t.maxDur = e - s;
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
