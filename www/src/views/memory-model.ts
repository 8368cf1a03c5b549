// Memory view model: the allocator trace of one device of a PyTorch memory snapshot
// (MemoryAllocatorEvent, MemoryBlock, MemorySegment tables; crate/src/memsnap/mod.rs) turned into
// allocation intervals, allocated/reserved curves, segment intervals and OOM markers.
//
// Time: snapshot times are host wall-clock µs; the tables hold them × 1000 as Unix ns (int64). The
// model keeps ns relative to the device's first trace entry (`t0`, Unix ns as a bigint), so doubles
// stay exact. Bytes are plain numbers (exact below 2^53 = 8 PiB).
//
// Allocation intervals: `alloc` opens one at its address, `free_completed` (or `free`) closes the open
// one at that address. A free with no open allocation is an allocation made before the trace began
// (the trace is a ring buffer); so is a block still active in the snapshot's segments that the trace
// never allocated. Both start at -Infinity (before the first entry); allocations still open at the end
// last to +Infinity.

import type { Table, Vector } from 'apache-arrow';

/** Action codes (MemoryAllocatorEvent.action). */
export const enum Act {
  Other = 0,
  Alloc = 1,
  FreeRequested = 2,
  FreeCompleted = 3,
  SegmentAlloc = 4,
  SegmentFree = 5,
  Oom = 6,
}

export interface OomMarker {
  /** ns since t0. */
  t: number;
  /** Bytes requested. */
  size: number;
  /** Free device bytes reported, or null. */
  deviceFree: number | null;
  stack: number;
}

export interface MemoryModel {
  device: number;
  devices: number[];
  /** Unix ns of the first trace entry of this device (0n when there is none). */
  t0: bigint;
  /** ns since t0 of the last entry. */
  end: number;
  /** Per trace entry of this device, in order: time (ns since t0), allocated and reserved bytes after it. */
  times: Float64Array;
  allocated: Float64Array;
  reserved: Float64Array;
  act: Uint8Array;
  /** Allocation `a` begins at entry `evBegin[a]` (-1: before the trace) and ends at `evEnd[a]` (n: still live). */
  allocs: {
    count: number;
    start: Float64Array;
    end: Float64Array;
    size: Float64Array;
    addr: Float64Array;
    stack: Int32Array;
    evBegin: Int32Array;
    evEnd: Int32Array;
  };
  /** Allocations live before the first entry, bottom of the stack first. */
  preexisting: Int32Array;
  /** Per entry: allocation opened (a + 1), closed (-(a + 1)) or 0. */
  evAlloc: Int32Array;
  /** Segments: [start, end) ns, address, bytes. */
  segments: { start: number; end: number; addr: number; size: number; stack: number }[];
  ooms: OomMarker[];
  /** Peak allocated / reserved bytes over the trace (baseline + running sums, as the core computes). */
  peakAllocated: number;
  peakAllocatedAt: number;
  peakReserved: number;
  /**
   * Top of the y axis: the larger of peak allocated and the allocation stack. Reserved memory (the
   * allocator's segments, often a fixed pool far above what is in use) is drawn as a line and held
   * at the top edge where it is higher, so a small peak does not fill a tenth of the chart.
   */
  maxBytes: number;
}

type Col = Vector | null;

function chunks(v: Col): { values: ArrayLike<unknown>; valid: (i: number) => boolean; length: number; offsets?: Int32Array; bytes?: Uint8Array }[] {
  if (v === null) return [];
  return v.data.map((d) => {
    const nulls = d.nullBitmap;
    const off = d.offset;
    const valid = nulls === undefined || nulls === null || nulls.length === 0 || d.nullCount === 0
      ? () => true
      : (i: number) => ((nulls[(i + off) >> 3] ?? 0) & (1 << ((i + off) & 7))) !== 0;
    const out: { values: ArrayLike<unknown>; valid: (i: number) => boolean; length: number; offsets?: Int32Array; bytes?: Uint8Array } = {
      values: (d.values as ArrayLike<unknown>) ?? [],
      valid,
      length: d.length,
    };
    if (d.valueOffsets !== undefined && d.valueOffsets !== null) {
      out.offsets = d.valueOffsets as Int32Array;
      out.bytes = d.values as Uint8Array;
    }
    return out;
  });
}

/** A column as numbers (int64 → Number; null → `missing`). */
function numbers(v: Col, n: number, missing = NaN): Float64Array {
  const out = new Float64Array(n).fill(missing);
  let k = 0;
  for (const c of chunks(v)) {
    const vals = c.values;
    for (let i = 0; i < c.length && k < n; i++, k++) {
      if (!c.valid(i)) continue;
      const x = vals[i];
      out[k] = typeof x === 'bigint' ? Number(x) : Number(x);
    }
  }
  return out;
}

/** int64 timestamps minus `base`, as numbers (NaN when null). */
function relTimes(v: Col, n: number, base: bigint): Float64Array {
  const out = new Float64Array(n).fill(NaN);
  let k = 0;
  for (const c of chunks(v)) {
    const vals = c.values as ArrayLike<bigint | number>;
    for (let i = 0; i < c.length && k < n; i++, k++) {
      if (!c.valid(i)) continue;
      const x = vals[i];
      out[k] = typeof x === 'bigint' ? Number(x - base) : Number(x) - Number(base);
    }
  }
  return out;
}

/** The first non-null int64 of a column (as bigint), or null. */
function firstBig(v: Col, where: (k: number) => boolean): bigint | null {
  let k = 0;
  let best: bigint | null = null;
  for (const c of chunks(v)) {
    const vals = c.values as ArrayLike<bigint | number>;
    for (let i = 0; i < c.length; i++, k++) {
      if (!c.valid(i) || !where(k)) continue;
      const x = vals[i];
      const b = typeof x === 'bigint' ? x : BigInt(Math.round(Number(x)));
      if (best === null || b < best) best = b;
    }
  }
  return best;
}

/** Action strings → codes, read from the Utf8 buffers without decoding every string. */
function actions(v: Col, n: number): Uint8Array {
  const out = new Uint8Array(n);
  if (v !== null && v.data.some((d) => d.valueOffsets === undefined || d.valueOffsets === null || d.dictionary !== undefined)) {
    // Not plain Utf8 (e.g. dictionary-encoded): decode each string.
    const codes: Record<string, Act> = {
      alloc: Act.Alloc, free: Act.FreeCompleted, free_requested: Act.FreeRequested, free_completed: Act.FreeCompleted,
      segment_alloc: Act.SegmentAlloc, segment_map: Act.SegmentAlloc, segment_free: Act.SegmentFree, segment_unmap: Act.SegmentFree, oom: Act.Oom,
    };
    for (let k = 0; k < Math.min(n, v.length); k++) out[k] = codes[String(v.get(k))] ?? Act.Other;
    return out;
  }
  let k = 0;
  for (const c of chunks(v)) {
    const off = c.offsets;
    const b = c.bytes;
    for (let i = 0; i < c.length && k < n; i++, k++) {
      if (off === undefined || b === undefined || !c.valid(i)) continue;
      const s = off[i] ?? 0;
      const len = (off[i + 1] ?? 0) - s;
      const ch = (j: number): number => b[s + j] ?? 0;
      let a = Act.Other;
      if (len === 5 && ch(0) === 0x61) a = Act.Alloc; // alloc
      else if (len === 4 && ch(0) === 0x66) a = Act.FreeCompleted; // free (legacy)
      else if (len === 14 && ch(5) === 0x72) a = Act.FreeRequested; // free_requested
      else if (len === 14 && ch(5) === 0x63) a = Act.FreeCompleted; // free_completed
      else if ((len === 13 && ch(8) === 0x61) || (len === 11 && ch(8) === 0x6d)) a = Act.SegmentAlloc; // segment_alloc, segment_map
      else if ((len === 12 && ch(8) === 0x66) || (len === 13 && ch(8) === 0x75)) a = Act.SegmentFree; // segment_free, segment_unmap
      else if (len === 3 && ch(0) === 0x6f) a = Act.Oom;
      out[k] = a;
    }
  }
  return out;
}

export interface DeviceBaseline {
  device: number;
  baseline_allocated_bytes: number;
  baseline_reserved_bytes: number;
}

/**
 * Builds the model of `device` from MemoryAllocatorEvent columns (timestamp, device, action, address,
 * size, stack_id, allocated_delta_bytes, reserved_delta_bytes), MemoryBlock columns (device, address,
 * size, state, stack_id) and MemorySegment columns (device, address, total_size, stack_id); any may be null.
 */
export function buildMemoryModel(
  events: Table | null,
  blocks: Table | null,
  segs: Table | null,
  baselines: DeviceBaseline[],
  device: number | null,
): MemoryModel {
  const nAll = events?.numRows ?? 0;
  const devAll = numbers(events?.getChild('device') ?? null, nAll, 0);
  const devSet = new Set<number>(devAll);
  for (const b of baselines) devSet.add(Number(b.device));
  const devices = [...devSet].filter((d) => Number.isFinite(d)).sort((a, b) => a - b);
  const counts = new Map<number, number>();
  for (const d of devAll) counts.set(d, (counts.get(d) ?? 0) + 1);
  const dev = device ?? [...counts.entries()].sort((a, b) => b[1] - a[1] || a[0] - b[0])[0]?.[0] ?? devices[0] ?? 0;
  const sel: number[] = [];
  for (let k = 0; k < nAll; k++) if (devAll[k] === dev) sel.push(k);
  const n = sel.length;
  const tsCol = events?.getChild('timestamp') ?? null;
  const t0 = firstBig(tsCol, (k) => devAll[k] === dev) ?? 0n;
  const pick = (a: Float64Array): Float64Array => Float64Array.from(sel, (k) => a[k] ?? NaN);
  const tAll = relTimes(tsCol, nAll, t0);
  const times = pick(tAll);
  // Entries without a time hold the previous one (keeps `times` sorted for binary search).
  let last = 0;
  for (let i = 0; i < n; i++) {
    const t = times[i] ?? NaN;
    if (!Number.isFinite(t) || t < last) times[i] = last;
    else last = t;
  }
  const actAll = actions(events?.getChild('action') ?? null, nAll);
  const act = Uint8Array.from(sel, (k) => actAll[k] ?? 0);
  const addr = pick(numbers(events?.getChild('address') ?? null, nAll));
  const size = pick(numbers(events?.getChild('size') ?? null, nAll, 0));
  const stack = pick(numbers(events?.getChild('stack_id') ?? null, nAll, -1));
  const da = pick(numbers(events?.getChild('allocated_delta_bytes') ?? null, nAll, NaN));
  const dr = pick(numbers(events?.getChild('reserved_delta_bytes') ?? null, nAll, NaN));
  const base = baselines.find((b) => b.device === dev);
  const baseA = Number(base?.baseline_allocated_bytes ?? 0);
  const baseR = Number(base?.baseline_reserved_bytes ?? 0);

  const allocated = new Float64Array(n);
  const reserved = new Float64Array(n);
  let peakAllocated = baseA;
  let peakAllocatedAt = 0;
  let peakReserved = baseR;
  let prevA = 0;
  let prevR = 0;
  for (let i = 0; i < n; i++) {
    const a = Number.isFinite(da[i] ?? NaN) ? (da[i] as number) : prevA;
    const r = Number.isFinite(dr[i] ?? NaN) ? (dr[i] as number) : prevR;
    prevA = a;
    prevR = r;
    allocated[i] = baseA + a;
    reserved[i] = baseR + r;
    if (baseA + a > peakAllocated) {
      peakAllocated = baseA + a;
      peakAllocatedAt = times[i] ?? 0;
    }
    peakReserved = Math.max(peakReserved, baseR + r);
  }

  // Allocation intervals.
  const cap = n + 16 + (blocks?.numRows ?? 0);
  const aStart = new Float64Array(cap);
  const aEnd = new Float64Array(cap);
  const aSize = new Float64Array(cap);
  const aAddr = new Float64Array(cap);
  const aStack = new Int32Array(cap);
  const aBegin = new Int32Array(cap);
  const aEndEv = new Int32Array(cap);
  const evAlloc = new Int32Array(n);
  let count = 0;
  const open = new Map<number, number>();
  const pre: number[] = [];
  const add = (t: number, sz: number, ad: number, st: number, ev: number): number => {
    const a = count++;
    aStart[a] = t;
    aEnd[a] = Infinity;
    aSize[a] = sz;
    aAddr[a] = ad;
    aStack[a] = st;
    aBegin[a] = ev;
    aEndEv[a] = n;
    return a;
  };
  const segOpen = new Map<number, number>();
  const segments: MemoryModel['segments'] = [];
  const ooms: OomMarker[] = [];
  const devFree = pick(numbers(events?.getChild('device_free') ?? null, nAll, NaN));
  for (let i = 0; i < n; i++) {
    const t = times[i] ?? 0;
    const ad = addr[i] ?? NaN;
    switch (act[i]) {
      case Act.Alloc: {
        const a = add(t, size[i] ?? 0, ad, stack[i] ?? -1, i);
        open.set(ad, a);
        evAlloc[i] = a + 1;
        break;
      }
      case Act.FreeCompleted: {
        let a = open.get(ad);
        if (a === undefined) {
          a = add(-Infinity, size[i] ?? 0, ad, stack[i] ?? -1, -1);
          pre.push(a);
        } else open.delete(ad);
        aEnd[a] = t;
        aEndEv[a] = i;
        evAlloc[i] = -(a + 1);
        break;
      }
      case Act.SegmentAlloc:
        segOpen.set(ad, segments.length);
        segments.push({ start: t, end: Infinity, addr: ad, size: size[i] ?? 0, stack: stack[i] ?? -1 });
        break;
      case Act.SegmentFree: {
        const s = segOpen.get(ad);
        if (s !== undefined) {
          segOpen.delete(ad);
          const seg = segments[s];
          if (seg !== undefined) seg.end = t;
        } else segments.push({ start: -Infinity, end: t, addr: ad, size: size[i] ?? 0, stack: stack[i] ?? -1 });
        break;
      }
      case Act.Oom: {
        const f = devFree[i] ?? NaN;
        ooms.push({ t, size: size[i] ?? 0, deviceFree: Number.isFinite(f) ? f : null, stack: stack[i] ?? -1 });
        break;
      }
      default:
        break;
    }
  }
  // Blocks active at snapshot time that the trace never allocated: live before and after it.
  if (blocks !== null) {
    const m = blocks.numRows;
    const bDev = numbers(blocks.getChild('device'), m, 0);
    const bAddr = numbers(blocks.getChild('address'), m);
    const bSize = numbers(blocks.getChild('size'), m, 0);
    const bStack = numbers(blocks.getChild('stack_id'), m, -1);
    const state = blocks.getChild('state');
    for (let j = 0; j < m; j++) {
      if (bDev[j] !== dev) continue;
      const s = String(state?.get(j) ?? 'inactive');
      if (s === 'inactive') continue;
      const ad = bAddr[j] ?? NaN;
      if (open.has(ad)) continue;
      pre.push(add(-Infinity, bSize[j] ?? 0, ad, bStack[j] ?? -1, -1));
    }
  }
  if (segs !== null) {
    const m = segs.numRows;
    const sDev = numbers(segs.getChild('device'), m, 0);
    const sAddr = numbers(segs.getChild('address'), m);
    const sSize = numbers(segs.getChild('total_size'), m, 0);
    const sStack = numbers(segs.getChild('stack_id'), m, -1);
    for (let j = 0; j < m; j++) {
      if (sDev[j] !== dev) continue;
      const ad = sAddr[j] ?? NaN;
      if (segOpen.has(ad)) continue;
      segments.push({ start: -Infinity, end: Infinity, addr: ad, size: sSize[j] ?? 0, stack: sStack[j] ?? -1 });
    }
  }
  segments.sort((a, b) => a.addr - b.addr || a.start - b.start);
  const end = n > 0 ? (times[n - 1] ?? 0) : 0;
  let maxBytes = Math.max(peakAllocated, 1);
  // The stack of known allocations can exceed the allocated curve when the file is inconsistent.
  let live = 0;
  for (const a of pre) live += aSize[a] ?? 0;
  let maxLive = live;
  for (let i = 0; i < n; i++) {
    const e = evAlloc[i] ?? 0;
    if (e > 0) live += aSize[e - 1] ?? 0;
    else if (e < 0) live -= aSize[-e - 1] ?? 0;
    maxLive = Math.max(maxLive, live);
  }
  maxBytes = Math.max(maxBytes, maxLive);
  return {
    device: dev,
    devices,
    t0,
    end,
    times,
    allocated,
    reserved,
    act,
    allocs: {
      count,
      start: aStart.subarray(0, count),
      end: aEnd.subarray(0, count),
      size: aSize.subarray(0, count),
      addr: aAddr.subarray(0, count),
      stack: aStack.subarray(0, count),
      evBegin: aBegin.subarray(0, count),
      evEnd: aEndEv.subarray(0, count),
    },
    preexisting: Int32Array.from(pre),
    evAlloc,
    segments,
    ooms,
    peakAllocated,
    peakAllocatedAt,
    peakReserved,
    maxBytes,
  };
}

/** First index with `a[i] >= x` (a sorted ascending). */
export function lowerBound(a: Float64Array, x: number): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((a[mid] ?? 0) < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Allocations live at time `t` (ns since t0), each placed in the segment holding its address. */
export function stateAt(m: MemoryModel, t: number): { segments: { addr: number; size: number; blocks: number[] }[]; orphans: number[] } {
  const segs = m.segments.filter((s) => s.start <= t && t < s.end).map((s) => ({ addr: s.addr, size: s.size, blocks: [] as number[] }));
  const orphans: number[] = [];
  const A = m.allocs;
  for (let a = 0; a < A.count; a++) {
    if (!((A.start[a] ?? 0) <= t && t < (A.end[a] ?? 0))) continue;
    const ad = A.addr[a] ?? NaN;
    // Last segment starting at or before the address.
    let lo = 0;
    let hi = segs.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((segs[mid]?.addr ?? 0) <= ad) lo = mid + 1;
      else hi = mid;
    }
    const s = segs[lo - 1];
    if (s !== undefined && ad < s.addr + s.size) s.blocks.push(a);
    else orphans.push(a);
  }
  return { segments: segs, orphans };
}

/**
 * Level of detail for one frame: allocations at least `minBytes` big keep their own rectangles,
 * stacked in allocation order (earlier allocations below); smaller ones form a band on top.
 * Sweeps the trace once: O(entries + rectangles). `x(t)` maps ns to CSS px.
 */
export interface Rect {
  a: number;
  x0: number;
  x1: number;
  /** Bytes from the bottom of the chart. */
  y0: number;
  y1: number;
}

export function layoutLarge(m: MemoryModel, minBytes: number, t0: number, t1: number, nsPerPx: number, maxRects = 400_000): { rects: Rect[]; smallCount: number; largeCount: number } {
  const A = m.allocs;
  const rects: Rect[] = [];
  // Live large allocations in stack order, each with the x where its current run began.
  const live: number[] = [];
  const runX = new Map<number, number>();
  const offset = new Map<number, number>();
  const xOf = (t: number): number => (Math.max(t, t0 - nsPerPx) - t0) / nsPerPx;
  const xMax = (t1 - t0) / nsPerPx + 1;
  let largeCount = 0;
  let smallCount = 0;
  const emit = (a: number, x1: number): void => {
    const x0 = runX.get(a) ?? 0;
    const y0 = offset.get(a) ?? 0;
    if (x1 > -1 && x0 < xMax && rects.length < maxRects) rects.push({ a, x0: Math.max(-1, x0), x1: Math.min(xMax, x1), y0, y1: y0 + (A.size[a] ?? 0) });
  };
  let sum = 0;
  const push = (a: number, t: number): void => {
    live.push(a);
    offset.set(a, sum);
    runX.set(a, xOf(t));
    sum += A.size[a] ?? 0;
  };
  for (const a of m.preexisting) {
    if ((A.size[a] ?? 0) >= minBytes) push(a, -Infinity);
  }
  const n = m.times.length;
  for (let i = 0; i < n; i++) {
    const e = m.evAlloc[i] ?? 0;
    if (e === 0) continue;
    const t = m.times[i] ?? 0;
    if (t > t1) break;
    const a = e > 0 ? e - 1 : -e - 1;
    const big = (A.size[a] ?? 0) >= minBytes;
    const inView = (A.end[a] ?? 0) >= t0;
    if (e > 0 && inView) {
      if (big) largeCount++;
      else smallCount++;
    }
    if (!big) continue;
    if (e > 0) {
      push(a, t);
      continue;
    }
    const j = live.indexOf(a);
    if (j < 0) continue;
    const x = xOf(t);
    emit(a, x);
    live.splice(j, 1);
    const sz = A.size[a] ?? 0;
    sum -= sz;
    // Everything above slides down: close its run (unless it began in this pixel) and start a new one.
    for (let k = j; k < live.length; k++) {
      const b = live[k] ?? 0;
      const rx = runX.get(b) ?? 0;
      if (x - rx >= 0.5) {
        emit(b, x);
        runX.set(b, x);
      }
      offset.set(b, (offset.get(b) ?? 0) - sz);
    }
  }
  for (const a of live) emit(a, xMax);
  return { rects, smallCount, largeCount };
}
