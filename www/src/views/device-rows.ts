// Device timeline rows under the engines: DMA queues (DmaPacket), pending DMA (PendingDma, when the
// core wrote it), throttling (Throttle) and semaphores (SemaphoreUpdate), per physical core like the
// engine rows. DMA queues and semaphores sit in collapsible groups whose header row draws all of
// the group's activity merged, so a capture with dozens of queues and hundreds of semaphores stays
// readable; the rows reuse the instruction rows' level-of-detail drawing (sorted starts, binary
// search, one merged bar per pixel column), so millions of DMA packets stay fast.

import type { Table } from 'apache-arrow';
import { coreLabel } from './summary.ts';
import { codeColumn, numberColumn, type GroupHeaderTrack, type GroupKind, type RowKind, type SliceKind, type SliceTrack, type StepKind, type StepTrack, type TimelineModel, type Track } from './timeline-model.ts';

/** DmaPacket columns the rows draw or show on hover (the rest load per click). */
export const DMA_COLUMNS = [
  'start_ts', 'end_ts', 'pcore_idx', 'queue_name', 'queue_type', 'transfer_bytes', 'read_bytes', 'write_bytes',
  'engine_idx', 'queue_idx', 'variable', 'throughput',
];
export const SEMAPHORE_COLUMNS = ['timestamp', 'id', 'value', 'pcore_idx', 'update_source', 'update_operation_type'];
export const THROTTLE_COLUMNS = ['timestamp', 'duration', 'k', 'n', 'type', 'pcore_idx'];
export const PENDING_DMA_COLUMNS = ['timestamp', 'value', 'pcore_idx'];

/** The optional event tables (null when the profile has none). */
export interface DeviceTables {
  dma: Table | null;
  semaphores: Table | null;
  throttle: Table | null;
  pending: Table | null;
}

/** Row heights, CSS px. */
export const HEADER_H = 20;
export const DMA_ROW_H = 16;
export const SEM_ROW_H = 14;
export const SINGLE_ROW_H = 18;
/** DMA groups with more queues than this start collapsed. */
const EXPAND_DMA_UP_TO = 16;

/** Where a row sorts within its physical core (engines use their rank, 0–5). */
const ORDER: Record<string, number> = { dmaHeader: 100, dma: 101, pending: 110, throttle: 120, semHeader: 130, semaphore: 131 };

/**
 * Row indices of `n` rows grouped by a numeric key (rows with key < 0 are skipped), in row order.
 * Dense counting arrays when the keys are small (pcore × 65536 + code), a Map otherwise.
 */
function partition(n: number, keyOf: (i: number) => number): Map<number, Uint32Array> {
  const keys = new Float64Array(n);
  let max = -1;
  for (let i = 0; i < n; i++) {
    const k = keyOf(i);
    keys[i] = k;
    if (k > max) max = k;
  }
  const out = new Map<number, Uint32Array>();
  if (max < 0) return out;
  if (max < 1 << 22 && Number.isInteger(max)) {
    const counts = new Uint32Array(max + 1);
    for (let i = 0; i < n; i++) {
      const k = keys[i] ?? -1;
      if (k >= 0) counts[k] = (counts[k] ?? 0) + 1;
    }
    const arrays: (Uint32Array | undefined)[] = new Array<Uint32Array | undefined>(max + 1);
    counts.forEach((c, k) => {
      if (c > 0) out.set(k, (arrays[k] = new Uint32Array(c)));
    });
    const fill = new Uint32Array(max + 1);
    for (let i = 0; i < n; i++) {
      const k = keys[i] ?? -1;
      if (k < 0) continue;
      const arr = arrays[k];
      if (arr === undefined) continue;
      arr[fill[k] ?? 0] = i;
      fill[k] = (fill[k] ?? 0) + 1;
    }
    return out;
  }
  const lists = new Map<number, number[]>();
  for (let i = 0; i < n; i++) {
    const k = keys[i] ?? -1;
    if (k < 0) continue;
    let l = lists.get(k);
    if (l === undefined) lists.set(k, (l = []));
    l.push(i);
  }
  for (const [k, l] of lists) out.set(k, Uint32Array.from(l));
  return out;
}

/** The rows of sorted tracks merged by start (k-way merge with a binary heap): O(n log k). */
function mergeRows(tracks: readonly Track[]): Uint32Array {
  const total = tracks.reduce((a, t) => a + t.rows.length, 0);
  const out = new Uint32Array(total);
  const pos = new Uint32Array(tracks.length);
  // Heap of track indices keyed by their next start (ties: lower track first).
  const hk = new Float64Array(tracks.length);
  const ht = new Int32Array(tracks.length);
  let size = 0;
  tracks.forEach((t, i) => {
    if (t.rows.length === 0) return;
    hk[size] = t.starts[0] ?? 0;
    ht[size++] = i;
  });
  const down = (i0: number): void => {
    let i = i0;
    const k = hk[i] ?? 0;
    const t = ht[i] ?? 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= size) break;
      let c = l;
      const r = l + 1;
      if (r < size && ((hk[r] ?? 0) < (hk[l] ?? 0) || ((hk[r] ?? 0) === (hk[l] ?? 0) && (ht[r] ?? 0) < (ht[l] ?? 0)))) c = r;
      const ck = hk[c] ?? 0;
      if (ck > k || (ck === k && (ht[c] ?? 0) > t)) break;
      hk[i] = ck;
      ht[i] = ht[c] ?? 0;
      i = c;
    }
    hk[i] = k;
    ht[i] = t;
  };
  for (let i = (size >> 1) - 1; i >= 0; i--) down(i);
  let o = 0;
  while (size > 0) {
    const t = ht[0] ?? 0;
    const tr = tracks[t];
    if (tr === undefined) break;
    const p = pos[t] ?? 0;
    out[o++] = tr.rows[p] ?? 0;
    pos[t] = p + 1;
    if (p + 1 < tr.rows.length) hk[0] = tr.starts[p + 1] ?? 0;
    else {
      size--;
      hk[0] = hk[size] ?? 0;
      ht[0] = ht[size] ?? 0;
    }
    if (size > 0) down(0);
  }
  return out;
}

/** What a builder gives a row besides its marks. */
type RowBase<T> = Omit<T, 'starts' | 'ends' | 'rows' | 'ops' | 'maxDur' | 'busy' | 'values' | 'maxValue'>;

/** The marks of rows `idx` of a table sorted by start (idx sorted in place), with busy prefix sums and maxDur. */
function marks(idx: Uint32Array, starts: Float64Array, ends: Float64Array, ops: Uint16Array | null, op0 = 0):
  { starts: Float64Array; ends: Float64Array; rows: Uint32Array; ops: Uint16Array; maxDur: number; busy: Float64Array } {
  let ordered = true;
  for (let k = 1; k < idx.length && ordered; k++) if ((starts[idx[k] ?? 0] ?? 0) < (starts[idx[k - 1] ?? 0] ?? 0)) ordered = false;
  if (!ordered) idx.sort((a, b) => (starts[a] ?? 0) - (starts[b] ?? 0) || a - b);
  const m = idx.length;
  const t = { starts: new Float64Array(m), ends: new Float64Array(m), rows: idx, ops: new Uint16Array(m), maxDur: 0, busy: new Float64Array(m + 1) };
  for (let k = 0; k < m; k++) {
    const r = idx[k] ?? 0;
    const s = starts[r] ?? 0;
    const e = Math.max(s, Number.isFinite(ends[r] ?? NaN) ? (ends[r] ?? s) : s);
    t.starts[k] = s;
    t.ends[k] = e;
    t.ops[k] = ops === null ? op0 : (ops[r] ?? op0);
    if (e - s > t.maxDur) t.maxDur = e - s;
    t.busy[k + 1] = (t.busy[k] ?? 0) + (e - s);
  }
  return t;
}

/** A slice row from rows `idx` of a table. */
function sliceTrack<K extends SliceKind>(base: RowBase<SliceTrack<K>>, idx: Uint32Array, starts: Float64Array, ends: Float64Array, ops: Uint16Array | null): SliceTrack<K> {
  return { ...base, ...marks(idx, starts, ends, ops) };
}

/** A group header over its rows' marks (`idx`: their table rows merged by start). */
function headerTrack<K extends GroupKind>(base: RowBase<GroupHeaderTrack<K>>, idx: Uint32Array, starts: Float64Array, ends: Float64Array, ops: Uint16Array | null, op0 = 0): GroupHeaderTrack<K> {
  return { ...base, ...marks(idx, starts, ends, ops, op0) };
}

/** A step row: value[k] holds from the k-th update to the next one (the last one to `end`). */
function stepTrack<K extends StepKind>(base: RowBase<StepTrack<K>>, idx: Uint32Array, times: Float64Array, values: Float64Array, end: number): StepTrack<K> {
  // Updates are instants: the marks' ends are set to the next update below, and nothing is busy.
  const t = marks(idx, times, times, null);
  const m = idx.length;
  const vals = new Float64Array(m);
  let max = 0;
  for (let k = 0; k < m; k++) {
    const next = k + 1 < m ? (t.starts[k + 1] ?? 0) : Math.max(end, t.starts[k] ?? 0);
    t.ends[k] = next;
    const d = next - (t.starts[k] ?? 0);
    if (d > t.maxDur) t.maxDur = d;
    vals[k] = values[idx[k] ?? 0] ?? NaN;
    const v = vals[k] ?? NaN;
    if (Number.isFinite(v)) max = Math.max(max, Math.abs(v));
  }
  return { ...base, starts: t.starts, ends: t.ends, rows: t.rows, maxDur: t.maxDur, busy: t.busy, values: vals, maxValue: max };
}

/** Index of `s` in the model's opcode dictionary (added when new). */
function dictCode(model: TimelineModel, index: Map<string, number>, s: string): number {
  let c = index.get(s);
  if (c === undefined) {
    c = Math.min(model.opcodes.length, 0xffff);
    if (c === model.opcodes.length) {
      model.opcodes.push(s);
      index.set(s, c);
    }
  }
  return c;
}

/** First number in a semaphore id ("S[5] (Tensor)" → 5, "207" → 207) for ordering rows. */
function semNumber(id: string): number {
  const m = /\d+/.exec(id);
  return m === null ? Number.MAX_SAFE_INTEGER : Number(m[0]);
}

const naturally = new Intl.Collator('en', { numeric: true, sensitivity: 'base' });

/**
 * Adds the DMA, pending-DMA, throttle and semaphore rows of `t` to `model` (in place; also returned).
 * Rows are ordered per physical core: engines, DMA group, pending DMA, throttle, semaphore group.
 */
export function addDeviceRows(model: TimelineModel, t: DeviceTables): TimelineModel {
  const steps = deviceRowSteps(model, t);
  for (let r = steps.next(); ; r = steps.next()) if (r.done === true) return r.value;
}

/**
 * addDeviceRows, yielding between its steps (each table's columns, grouping, tracks), so a caller
 * can run them in separate main-thread tasks (tracks/device.ts: a level-of-detail window's
 * hundreds of thousands of pseudo-rows); the result is the same model.
 */
export async function addDeviceRowsYielding(model: TimelineModel, t: DeviceTables, pause: () => Promise<void>, budgetMs = STEP_BUDGET_MS): Promise<TimelineModel> {
  const steps = deviceRowSteps(model, t);
  // Steps run back to back until `budgetMs` has passed, then the caller's pause: few pauses for a
  // small window, short tasks for a big one (a loaded machine stretches each step).
  let since = performance.now();
  for (let r = steps.next(); ; r = steps.next()) {
    if (r.done === true) return r.value;
    const now = performance.now();
    if (now - since >= budgetMs) {
      // A task well over the budget (scripts/bench-lod.mjs reports the longest).
      if (now - since > 20) performance.measure('device rows: task', { start: since });
      await pause();
      since = performance.now();
    }
  }
}

/** Main-thread time addDeviceRowsYielding spends before pausing, ms. */
export const STEP_BUDGET_MS = 16;
/** Rows a step of deviceRowSteps handles before it yields (a few ms of work each). */
const ROWS_PER_STEP = 40_000;

function* deviceRowSteps(model: TimelineModel, t: DeviceTables): Generator<void, TimelineModel, void> {
  const dictIndex = new Map<string, number>();
  model.opcodes.forEach((o, i) => dictIndex.set(o, i));
  const added: { track: Track; pcore: number; order: number; sub: number; name: string }[] = [];
  let lo = model.start;
  let hi = model.end;
  const hasEngines = model.tracks.length > 0;
  if (!hasEngines) {
    lo = Infinity;
    hi = -Infinity;
  }
  const span = (s: Float64Array, e: Float64Array | null): void => {
    for (let i = 0; i < s.length; i++) {
      const a = s[i] ?? NaN;
      if (!Number.isFinite(a)) continue;
      const b = e === null ? a : (e[i] ?? a);
      if (a < lo) lo = a;
      if (Number.isFinite(b) && b > hi) hi = b;
      else if (a > hi) hi = a;
    }
  };
  const pcoreOf = (col: Float64Array | null, i: number): number => {
    const v = col === null ? 0 : (col[i] ?? 0);
    return Number.isFinite(v) && v >= 0 ? v : 0;
  };

  // DMA: one row per (pcore, queue_name), coloured by queue_type.
  const dma = t.dma;
  let dmaStarts: Float64Array | null = null;
  let dmaEnds: Float64Array | null = null;
  if (dma !== null && dma.numRows > 0) {
    dmaStarts = numberColumn(dma, 'start_ts');
    dmaEnds = numberColumn(dma, 'end_ts');
    if (dmaStarts !== null) span(dmaStarts, dmaEnds);
  }
  yield;
  const thr = t.throttle;
  let thrStarts: Float64Array | null = null;
  let thrEnds: Float64Array | null = null;
  if (thr !== null && thr.numRows > 0) {
    thrStarts = numberColumn(thr, 'timestamp');
    const dur = numberColumn(thr, 'duration');
    if (thrStarts !== null) {
      thrEnds = new Float64Array(thrStarts.length);
      for (let i = 0; i < thrStarts.length; i++) thrEnds[i] = (thrStarts[i] ?? NaN) + (dur?.[i] ?? NaN);
      span(thrStarts, null);
    }
  }
  yield;
  const sem = t.semaphores;
  const semTimes = sem !== null && sem.numRows > 0 ? numberColumn(sem, 'timestamp') : null;
  if (semTimes !== null) span(semTimes, null);
  const pend = t.pending;
  const pendTimes = pend !== null && pend.numRows > 0 ? numberColumn(pend, 'timestamp') : null;
  if (pendTimes !== null) span(pendTimes, null);
  if (!Number.isFinite(lo)) {
    lo = model.start;
    hi = model.end;
  }
  hi = Math.max(hi, lo + 1);
  // Throttle rows without a duration (unknown end) last to the end of the profile.
  if (thrStarts !== null && thrEnds !== null) for (let i = 0; i < thrEnds.length; i++) if (!Number.isFinite(thrEnds[i] ?? NaN)) thrEnds[i] = hi;
  yield;

  if (dma !== null && dmaStarts !== null) {
    const starts = dmaStarts;
    const ends = dmaEnds ?? dmaStarts;
    const pcores = numberColumn(dma, 'pcore_idx');
    const qDict: string[] = [];
    const queues = codeColumn(dma, 'queue_name', qDict, new Map());
    yield;
    const tDict: string[] = [];
    const types = codeColumn(dma, 'queue_type', tDict, new Map());
    const typeOps = new Uint16Array(tDict.length);
    tDict.forEach((s, i) => (typeOps[i] = dictCode(model, dictIndex, s || 'dma')));
    const ops = new Uint16Array(dma.numRows);
    for (let i = 0; i < ops.length; i++) ops[i] = typeOps[types[i] ?? 0] ?? 0;
    yield;
    const valid = (i: number): boolean => Number.isFinite(starts[i] ?? NaN);
    const groups = partition(dma.numRows, (i) => (valid(i) ? pcoreOf(pcores, i) * 65536 + (queues[i] ?? 0) : -1));
    yield;
    const children = new Map<number, SliceTrack<'dma'>[]>();
    let work = 0;
    for (const [k, idx] of groups) {
      work += idx.length;
      if (work > ROWS_PER_STEP) {
        work = 0;
        yield;
      }
      const pc = Math.floor(k / 65536);
      const name = qDict[k % 65536] || 'queue ?';
      const track = sliceTrack<'dma'>({ label: name, pcore: pc, engine: 'dma', kind: 'dma', group: `dma:${pc}`, height: DMA_ROW_H, table: dma, source: 'DmaPacket' }, idx, starts, ends, ops);
      added.push({ pcore: pc, order: ORDER['dma'] ?? 0, sub: 0, name, track });
      const list = children.get(pc);
      if (list === undefined) children.set(pc, [track]);
      else list.push(track);
    }
    // The group header draws every packet of the core: the queues' rows merged by start.
    for (const [pc, list] of children) {
      yield;
      const nQueues = list.length;
      added.push({
        pcore: pc, order: ORDER['dmaHeader'] ?? 0, sub: 0, name: '',
        track: headerTrack<'dma-group'>({
          label: `${coreLabel(pc)} DMA (${nQueues} queue${nQueues === 1 ? '' : 's'})`, pcore: pc, engine: 'dma', kind: 'dma-group',
          header: `dma:${pc}`, count: nQueues, collapsed: nQueues > EXPAND_DMA_UP_TO, height: HEADER_H, table: dma, source: 'DmaPacket',
        }, mergeRows(list), starts, ends, ops),
      });
    }
  }

  yield;
  if (pend !== null && pendTimes !== null) {
    const pcores = numberColumn(pend, 'pcore_idx');
    const values = numberColumn(pend, 'value') ?? new Float64Array(pend.numRows);
    for (const [pc, idx] of partition(pend.numRows, (i) => (Number.isFinite(pendTimes[i] ?? NaN) ? pcoreOf(pcores, i) : -1))) {
      added.push({
        pcore: pc, order: ORDER['pending'] ?? 0, sub: 0, name: '',
        track: stepTrack<'pending'>({ label: `${coreLabel(pc)} Pending DMA`, pcore: pc, engine: 'pending', kind: 'pending', height: SINGLE_ROW_H, table: pend, source: 'PendingDma' }, idx, pendTimes, values, hi),
      });
    }
  }

  yield;
  if (thr !== null && thrStarts !== null && thrEnds !== null) {
    const starts = thrStarts;
    const pcores = numberColumn(thr, 'pcore_idx');
    const ks = numberColumn(thr, 'k');
    const ns = numberColumn(thr, 'n');
    const tDict: string[] = [];
    const types = codeColumn(thr, 'type', tDict, new Map());
    const ops = new Uint16Array(thr.numRows);
    for (let i = 0; i < ops.length; i++) {
      const k = ks?.[i] ?? NaN;
      const n = ns?.[i] ?? NaN;
      const ty = tDict[types[i] ?? 0] || 'throttle';
      ops[i] = dictCode(model, dictIndex, Number.isFinite(k) && Number.isFinite(n) ? `${ty} ${k}/${n}` : ty);
    }
    for (const [pc, idx] of partition(thr.numRows, (i) => (Number.isFinite(starts[i] ?? NaN) ? pcoreOf(pcores, i) : -1))) {
      added.push({
        pcore: pc, order: ORDER['throttle'] ?? 0, sub: 0, name: '',
        track: sliceTrack<'throttle'>({ label: `${coreLabel(pc)} Throttle`, pcore: pc, engine: 'throttle', kind: 'throttle', height: SINGLE_ROW_H, table: thr, source: 'Throttle' }, idx, starts, thrEnds, ops),
      });
    }
  }

  yield;
  if (sem !== null && semTimes !== null) {
    const pcores = numberColumn(sem, 'pcore_idx');
    const values = numberColumn(sem, 'value') ?? new Float64Array(sem.numRows);
    yield;
    const idDict: string[] = [];
    const ids = codeColumn(sem, 'id', idDict, new Map());
    const valid = (i: number): boolean => Number.isFinite(semTimes[i] ?? NaN);
    const groups = partition(sem.numRows, (i) => (valid(i) ? pcoreOf(pcores, i) * 65536 + (ids[i] ?? 0) : -1));
    yield;
    const instants = dictCode(model, dictIndex, 'semaphore update');
    const children = new Map<number, StepTrack<'semaphore'>[]>();
    let work = 0;
    for (const [k, idx] of groups) {
      work += idx.length;
      if (work > ROWS_PER_STEP) {
        work = 0;
        yield;
      }
      const pc = Math.floor(k / 65536);
      const id = idDict[k % 65536] ?? '';
      const track = stepTrack<'semaphore'>({ label: id === '' ? 'semaphore ?' : /^\d+$/.test(id) ? `sem ${id}` : id, pcore: pc, engine: 'semaphore', kind: 'semaphore', group: `sem:${pc}`, height: SEM_ROW_H, table: sem, source: 'SemaphoreUpdate' }, idx, semTimes, values, hi);
      // Busy semaphores first (most are set once), then by number.
      added.push({ pcore: pc, order: ORDER['semaphore'] ?? 0, sub: -idx.length * 1e6 + Math.min(semNumber(id), 1e6 - 1), name: id, track });
      const list = children.get(pc);
      if (list === undefined) children.set(pc, [track]);
      else list.push(track);
    }
    // The header: every update of the core as an instant.
    for (const [pc, list] of children) {
      yield;
      const nSem = list.length;
      added.push({
        pcore: pc, order: ORDER['semHeader'] ?? 0, sub: 0, name: '',
        track: headerTrack<'semaphore-group'>({
          label: `${coreLabel(pc)} Semaphores (${nSem})`, pcore: pc, engine: 'semaphore', kind: 'semaphore-group',
          header: `sem:${pc}`, count: nSem, collapsed: true, height: HEADER_H, table: sem, source: 'SemaphoreUpdate',
        }, mergeRows(list), semTimes, semTimes, null, instants),
      });
    }
  }

  if (added.length === 0) return model;
  yield;
  const engines = model.tracks.map((track, i) => ({ track, pcore: track.pcore, order: i / 1e6, sub: 0, name: '' }));
  const all = [...engines, ...added];
  all.sort((a, b) => a.pcore - b.pcore || a.order - b.order || a.sub - b.sub || naturally.compare(a.name, b.name));
  model.tracks = all.map((a) => a.track);
  model.start = lo;
  model.end = hi;
  return model;
}

/** Row counts by kind (group headers excluded), for the page's data attributes and tests. */
export function rowCounts(model: TimelineModel | null): Record<RowKind, number> {
  const out: Record<RowKind, number> = { engine: 0, dma: 0, semaphore: 0, pending: 0, throttle: 0 };
  for (const t of model?.tracks ?? []) if (t.kind !== 'system' && t.kind !== 'dma-group' && t.kind !== 'semaphore-group') out[t.kind]++;
  return out;
}
