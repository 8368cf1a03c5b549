// The renderers of the timeline's track kinds over one frame description (Frame), as each of
// Perfetto's tracks owns its render: each draws its row's visible part and returns how many marks it
// drew, and takes the row type of its own kind (timeline-model.ts TrackKinds). TimelineView
// (timeline.ts) owns the axis, row layout, input and tooltips; it draws a row, colours, words and
// explains its marks through the row's kind (TRACK_KINDS, renderTrack, trackTooltip).
//
//   slices    engine instructions, DMA packets, throttle records, system spans: a bar per slice wider
//             than a pixel, sub-pixel slices merged per pixel column with opacity from the busy time
//             inside it (busy prefix sums), adjacent merged bars in one fill
//   steps     semaphores, pending DMA: a value held until the next update, a tick at each update
//   counters  CPU and host-memory samples under the slice rows: area chart or heat strip
// A large profile's rows hold summary buckets or a window's rows (lod.ts); the renderers draw both.

import { lowerBound, type Counter, type GroupHeaderTrack, type RowKind, type SliceTrack, type StepTrack, type Track, type TrackKind, type TrackOf } from '../timeline-model.ts';
import { LOD_SOURCES, type LodSource } from './lod.ts';
import { dmaTooltip, instantTooltip, stepTooltip, throttleTooltip, type TrackTooltip } from './tooltips.ts';

/** What every renderer needs of the frame being drawn. */
export interface Frame {
  ctx: CanvasRenderingContext2D;
  /** Label column width, plot width and canvas width, CSS px. */
  gutter: number;
  plotW: number;
  width: number;
  /** ns per CSS pixel. */
  npp: number;
  /** Opcode filter (1 = matches), null when none. */
  match: Uint8Array | null;
  /** Colour of opcode `op` on track `tr` (0xffff: merged bars). */
  color: (tr: Track, op: number) => string;
  /** The model's opcode dictionary. */
  opcodes: string[];
}

/** Draws row `tr` (of type T) in the band [y, y + hgt) CSS px for [t0, t1] ns; returns the marks drawn. */
export type TrackRenderer<T extends Track> = (f: Frame, tr: T, y: number, hgt: number, t0: number, t1: number) => number;

/** Rows drawn as slices: each mark has a name (ops) and a duration. */
type Sliced = SliceTrack | GroupHeaderTrack;

/** Engine hues (HSL degrees); the rows under the engines use `engine` dma, semaphore, pending, throttle. */
export const HUES: Record<string, number> = { tensor: 212, vector: 150, scalar: 36, gpsimd: 275, sync: 350, semaphore: 48, pending: 24, throttle: 0 };
const ROW_ALT = '#181c22';
const GRID = '#262b33';
const TEXT = '#c9d1d9';
const MUTED = '#7d8590';
/** Colour of slices the opcode filter does not match. */
export const DIMMED = '#2a2f37';

/** How a slice row differs by kind. */
interface SliceStyle {
  /** Opcode names inside slices wide enough to hold them. */
  labels: boolean;
  /** Slices merged into one pixel column keep the first one's colour (a DMA queue has one queue type) instead of the merged-bar colour. */
  uniform: boolean;
}

/** Draws one track's visible slices (opcode labels, merged bars in the merged colour); returns how many rectangles it drew. */
export function drawTrack(f: Frame, tr: Sliced, y: number, hgt: number, t0: number, t1: number): number {
  return drawSlices(f, tr, y, hgt, t0, t1, { labels: true, uniform: false });
}

/** DMA packets: unlabelled (the colour gives the queue type, the tooltip the bytes), merged bars keep the queue's colour. */
export function drawDma(f: Frame, tr: Sliced, y: number, hgt: number, t0: number, t1: number): number {
  return drawSlices(f, tr, y, hgt, t0, t1, { labels: false, uniform: true });
}

function drawSlices(f: Frame, tr: Sliced, y: number, hgt: number, t0: number, t1: number, look: SliceStyle): number {
  const ctx = f.ctx;
  const { starts, ends, ops } = tr;
  const n = starts.length;
  const k0 = lowerBound(starts, t0 - tr.maxDur);
  const npp = f.npp;
  const merged = f.color(tr, 0xffff);
  let drawn = 0;
  // Adjacent merged bars of one colour and opacity are drawn as one rectangle (dense rows cost
  // a few fills instead of one per pixel column).
  let runX = 0;
  let runW = 0;
  let runStyle = '';
  let runAlpha = 0;
  const flush = (): void => {
    if (runW <= 0) return;
    ctx.fillStyle = runStyle;
    ctx.globalAlpha = runAlpha;
    ctx.fillRect(f.gutter + runX, y, runW, hgt);
    ctx.globalAlpha = 1;
    drawn++;
    runW = 0;
  };
  let k = k0;
  while (k < n) {
    const s = starts[k] ?? 0;
    if (s > t1) break;
    const e = ends[k] ?? s;
    if (e < t0) {
      k++;
      continue;
    }
    const x0 = (s - t0) / npp;
    const x1 = (e - t0) / npp;
    if (x1 - x0 >= 1) {
      flush();
      ctx.fillStyle = f.color(tr, ops[k] ?? 0);
      const w = x1 - x0;
      ctx.fillRect(f.gutter + x0, y, w > 2 ? w - 0.5 : w, hgt);
      if (w > 44 && hgt >= 10 && look.labels) {
        const label = f.opcodes[ops[k] ?? 0] ?? '';
        if (label !== '') {
          ctx.fillStyle = '#0b0d10';
          const left = Math.max(x0, 0) + 3;
          ctx.save();
          ctx.beginPath();
          ctx.rect(f.gutter + Math.max(x0, 0), y, Math.min(x1, f.plotW) - Math.max(x0, 0), hgt);
          ctx.clip();
          ctx.fillText(label, f.gutter + left, y + hgt / 2);
          ctx.restore();
        }
      }
      drawn++;
      k++;
    } else {
      // Sub-pixel: merge every slice starting in this pixel column into one bar.
      const px = Math.floor(x0);
      const tNext = t0 + (px + 1) * npp;
      const j = Math.max(k + 1, lowerBound(starts, tNext, k + 1));
      let endMax = e;
      // Bounded look at the merged run's ends (ends are not sorted).
      for (let q = Math.max(k, j - 8); q < j; q++) endMax = Math.max(endMax, ends[q] ?? 0);
      const xe = Math.max(px + 1, (endMax - t0) / npp);
      let style = j - k > 1 && !look.uniform ? merged : f.color(tr, ops[k] ?? 0);
      if (f.match !== null && j - k > 1) {
        style = DIMMED;
        // Bounded scan: a frame stays fast even when a pixel holds a huge run.
        for (let q = k, end = Math.min(j, k + 4096); q < end; q++) {
          if (f.match[ops[q] ?? 0] === 1) {
            style = f.color(tr, ops[q] ?? 0);
            break;
          }
        }
      }
      // Opacity follows how busy the engine was inside the merged pixels, so a sparse engine
      // does not look solid when zoomed out (in eighths; neighbours within an eighth share a fill).
      const w = Math.min(xe, f.plotW + 1) - px;
      const frac = Math.min(1, ((tr.busy[j] ?? 0) - (tr.busy[k] ?? 0)) / Math.max(1e-9, w * npp));
      // Instants (a collapsed semaphore group) have no duration: draw them solid.
      const alpha = tr.maxDur === 0 ? 1 : Math.round((0.25 + 0.75 * frac) * 8) / 8;
      if (runW > 0 && style === runStyle && Math.abs(alpha - runAlpha) <= 0.125 && px <= runX + runW) {
        runW = Math.max(runX + runW, px + w) - runX;
      } else {
        flush();
        runX = px;
        runW = w;
        runStyle = style;
        runAlpha = alpha;
      }
      k = j;
    }
  }
  flush();
  return drawn;
}

/**
 * A step (counter) row: each value holds until the next update, bar height ∝ value / maxValue,
 * a tick at every update. Updates closer than a pixel merge into one column at their maximum.
 */
export function drawStep(f: Frame, tr: StepTrack, y: number, hgt: number, t0: number, t1: number): number {
  const ctx = f.ctx;
  const { starts, ends, values } = tr;
  const n = starts.length;
  const npp = f.npp;
  const hue = HUES[tr.engine] ?? 48;
  const fill = f.match !== null ? DIMMED : `hsl(${hue} 62% 46% / 0.75)`;
  const tickStyle = f.match !== null ? '#3a404a' : `hsl(${hue} 80% 68%)`;
  const scale = hgt / Math.max(tr.maxValue, 1e-12);
  const base = y + hgt;
  let drawn = 0;
  let k = Math.max(0, lowerBound(starts, t0) - 1);
  while (k < n) {
    const s = starts[k] ?? 0;
    if (s > t1) break;
    const x0 = (s - t0) / npp;
    const x1 = ((ends[k] ?? s) - t0) / npp;
    let v = Math.abs(values[k] ?? 0);
    let j = k + 1;
    if (x1 - x0 < 1) {
      const tNext = t0 + (Math.floor(x0) + 1) * npp;
      j = Math.max(k + 1, lowerBound(starts, tNext, k + 1));
      for (let q = k + 1, end = Math.min(j, k + 4096); q < end; q++) v = Math.max(v, Math.abs(values[q] ?? 0));
    }
    const xa = Math.max(-1, x0);
    const xb = x1 - x0 < 1 ? Math.floor(x0) + 1 : Math.min(x1, f.plotW + 1);
    if (Number.isFinite(v) && v > 0) {
      ctx.fillStyle = fill;
      const bh = Math.max(1, v * scale);
      ctx.fillRect(f.gutter + xa, base - bh, Math.max(1, xb - xa), bh);
    }
    if (x0 >= -1) {
      ctx.fillStyle = tickStyle;
      ctx.fillRect(f.gutter + Math.floor(x0), y, 1, hgt);
    }
    drawn++;
    k = j;
  }
  return drawn;
}

/**
 * Counter rows under the slices: an area chart (step-wise, each sample holds until the next) or a
 * heat strip. Samples narrower than a pixel are reduced to their maximum per pixel column.
 */
export function drawCounters(f: Frame, counters: Counter[], top: number, t0: number, t1: number): number {
  const ctx = f.ctx;
  const W = f.width;
  const plotW = f.plotW;
  let y = top;
  let points = 0;
  counters.forEach((c, i) => {
    const hgt = c.height;
    ctx.fillStyle = i % 2 === 0 ? '#11141a' : ROW_ALT;
    ctx.fillRect(0, y, W, hgt);
    ctx.strokeStyle = GRID;
    ctx.beginPath();
    ctx.moveTo(0, y + 0.5);
    ctx.lineTo(W, y + 0.5);
    ctx.stroke();
    ctx.fillStyle = TEXT;
    ctx.font = c.style === 'heat' ? '9px system-ui, sans-serif' : '12px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    if (hgt >= 8) ctx.fillText(c.label, 8, y + hgt / 2);
    // The value at the right edge of the view (or the last sample), in the gutter.
    const kEnd = Math.max(0, lowerBound(c.times, t1) - 1);
    const vEnd = c.values[kEnd];
    if (vEnd !== undefined && c.style === 'area') {
      ctx.fillStyle = MUTED;
      ctx.textAlign = 'right';
      ctx.font = '11px system-ui, sans-serif';
      ctx.fillText(c.format(vEnd), f.gutter - 6, y + hgt / 2);
      ctx.textAlign = 'left';
    }
    ctx.save();
    ctx.beginPath();
    ctx.rect(f.gutter, y, plotW, hgt);
    ctx.clip();
    const n = c.times.length;
    // Start at the sample in force at t0.
    let k = Math.max(0, lowerBound(c.times, t0) - 1);
    const base = y + hgt - 1;
    const scale = (hgt - 4) / Math.max(c.max, 1e-12);
    if (c.style === 'area') {
      ctx.fillStyle = `hsl(${c.hue} 60% 45% / 0.55)`;
      ctx.strokeStyle = `hsl(${c.hue} 70% 62%)`;
      const line: [number, number][] = [];
      while (k < n) {
        const t = c.times[k] ?? 0;
        if (t > t1) break;
        const x = Math.max(-1, (t - t0) / f.npp);
        // Max of the samples that fall in this pixel column.
        let v = c.values[k] ?? 0;
        let j = k + 1;
        while (j < n && ((c.times[j] ?? 0) - t0) / f.npp < Math.floor(x) + 1) {
          v = Math.max(v, c.values[j] ?? 0);
          j++;
        }
        const yy = base - Math.min(c.max, Math.max(0, Number.isFinite(v) ? v : 0)) * scale;
        const prev = line[line.length - 1];
        if (prev !== undefined) line.push([x, prev[1]]);
        line.push([x, yy]);
        points += j - k;
        k = j;
      }
      const last = line[line.length - 1];
      if (last !== undefined) {
        // Hold the last value to the end of the data (or of the view).
        const tEnd = c.times[n - 1] ?? 0;
        line.push([Math.min(plotW + 1, (Math.max(tEnd, Math.min(t1, tEnd)) - t0) / f.npp), last[1]]);
      }
      ctx.beginPath();
      ctx.moveTo(f.gutter + (line[0]?.[0] ?? 0), base);
      for (const [x, yy] of line) ctx.lineTo(f.gutter + x, yy);
      if (last !== undefined) ctx.lineTo(f.gutter + (line[line.length - 1]?.[0] ?? 0), base);
      ctx.closePath();
      ctx.fill();
      ctx.beginPath();
      line.forEach(([x, yy], q) => (q === 0 ? ctx.moveTo(f.gutter + x, yy) : ctx.lineTo(f.gutter + x, yy)));
      ctx.stroke();
    } else {
      while (k < n) {
        const t = c.times[k] ?? 0;
        if (t > t1) break;
        const x0 = (t - t0) / f.npp;
        const x1 = k + 1 < n ? ((c.times[k + 1] ?? t) - t0) / f.npp : x0 + 2;
        const v = Math.min(1, Math.max(0, (c.values[k] ?? 0) / Math.max(c.max, 1e-12)));
        ctx.fillStyle = `hsl(${c.hue} 70% ${8 + 52 * v}%)`;
        ctx.fillRect(f.gutter + x0, y + 1, Math.max(1, x1 - x0), hgt - 1);
        points++;
        k++;
      }
    }
    ctx.restore();
    y += hgt;
  });
  return points;
}

/** FNV-1a hash of `s` (colours stable per name). */
export function hashString(s: string): number {
  let x = 2166136261;
  for (let i = 0; i < s.length; i++) {
    x ^= s.charCodeAt(i);
    x = Math.imul(x, 16777619);
  }
  return x >>> 0;
}

/** Colour of a slice named `name` (dictionary code `op`, 0xffff: merged bars) on a row of `engine`. */
export type SliceColor = (engine: string, name: string, op: number) => string;

/** Engine rows and System spans: the engine's hue, varied a little per opcode or span name. */
const nameColor: SliceColor = (engine, name) => {
  const hv = hashString(name);
  const hue = HUES[engine] ?? hashString(engine) % 360;
  const l = name === '' ? 55 : 46 + (hv % 20);
  const dh = name === '' ? 0 : ((hv >>> 8) % 24) - 12;
  return `hsl(${hue + dh} 62% ${l}%)`;
};

/** DMA packets are coloured by DmaPacket.queue_type. */
const DMA_HUES: Record<string, number> = { software_dynamic: 186, hardware_dynamic: 318, instruction: 62, static: 62 };

/** One colour per queue type (merged bars: a neutral teal). */
const dmaColor: SliceColor = (_engine, name, op) => {
  const hue = op === 0xffff ? 200 : (DMA_HUES[name] ?? hashString(name) % 360);
  return `hsl(${hue} 58% ${op === 0xffff ? 50 : 52}%)`;
};

/** Throttle records ("<type> k/n"): darker when the limit is loose (k/n near 1), brighter the harder the core is throttled. */
const throttleColor: SliceColor = (engine, name, op) => {
  const kn = /(\d+)\/(\d+)$/.exec(name);
  if (kn === null) return nameColor(engine, name, op);
  const f = 1 - Number(kn[1]) / Math.max(1, Number(kn[2]));
  return `hsl(2 68% ${24 + 36 * Math.min(1, Math.max(0, f))}%)`;
};

/** What a kind of row is (T its row type): how it draws, how the view words it, where its rows come from. */
export interface TrackKindSpec<T extends Track> {
  render: TrackRenderer<T>;
  /** Slice colours (the view caches them and dims what the opcode filter leaves out). */
  color: SliceColor;
  /** Tooltip of one mark (tooltips.ts); null: the view's own (engine instructions, System spans). */
  tooltip: TrackTooltip<T> | null;
  /** One mark, in the tooltip and details ("DMA packet"); null: the view's own noun. */
  noun: string | null;
  /** The kind tools and tests read in the view's probe rows (a group header counts as its rows' kind). */
  family: RowKind | 'system';
  /** The table its rows come from and how a large profile's window reads it (tracks/lod.ts). */
  source: LodSource;
}

/** One spec per kind, each over its own row type. */
type TrackKindSpecs = { [K in TrackKind]: TrackKindSpec<TrackOf<K>> };

/** The renderer, wording and table of each row kind: adding a kind is one entry here (and its row type in timeline-model.ts TrackKinds). */
export const TRACK_KINDS: TrackKindSpecs = {
  engine: { render: drawTrack, color: nameColor, tooltip: null, noun: null, family: 'engine', source: LOD_SOURCES.Instruction },
  system: { render: drawTrack, color: nameColor, tooltip: null, noun: null, family: 'system', source: LOD_SOURCES.SystemProfileEvents },
  dma: { render: drawDma, color: dmaColor, tooltip: dmaTooltip, noun: 'DMA packet', family: 'dma', source: LOD_SOURCES.DmaPacket },
  // A core's DMA group header: every packet of its queues merged by start.
  'dma-group': { render: drawDma, color: dmaColor, tooltip: dmaTooltip, noun: 'DMA packet', family: 'dma', source: LOD_SOURCES.DmaPacket },
  throttle: { render: drawTrack, color: throttleColor, tooltip: throttleTooltip, noun: 'throttle record', family: 'throttle', source: LOD_SOURCES.Throttle },
  semaphore: { render: drawStep, color: nameColor, tooltip: stepTooltip, noun: 'semaphore update', family: 'semaphore', source: LOD_SOURCES.SemaphoreUpdate },
  // A semaphore group's header: every update of its core as an instant (its colour: the merged bars').
  'semaphore-group': { render: drawTrack, color: nameColor, tooltip: instantTooltip, noun: 'semaphore update', family: 'semaphore', source: LOD_SOURCES.SemaphoreUpdate },
  pending: { render: drawStep, color: nameColor, tooltip: stepTooltip, noun: 'pending-DMA sample', family: 'pending', source: LOD_SOURCES.PendingDma },
};

/**
 * The tables a timeline draws through the level-of-detail store, in kind order: its kinds'
 * distinct sources (the System timeline: System spans; the device timeline: every other kind).
 */
export function lodSources(timeline: 'device' | 'system'): LodSource[] {
  const out: LodSource[] = [];
  // TRACK_KINDS has exactly the TrackKind keys (TrackKindSpecs).
  for (const kind of Object.keys(TRACK_KINDS) as TrackKind[]) {
    const spec = TRACK_KINDS[kind];
    if ((spec.family === 'system') === (timeline === 'system') && !out.includes(spec.source)) out.push(spec.source);
  }
  return out;
}

/**
 * Draws `tr` with the renderer of `kind`: one generic over the kind, so the strict checker pairs
 * each renderer with its own row type (the caller passes a row's own kind and the row).
 */
function renderAs<K extends TrackKind>(kind: K, tr: TrackOf<K>, f: Frame, y: number, hgt: number, t0: number, t1: number): number {
  return TRACK_KINDS[kind].render(f, tr, y, hgt, t0, t1);
}

/** Draws row `tr` with its kind's renderer in the band [y, y + hgt) CSS px for [t0, t1] ns; returns the marks drawn. */
export function renderTrack(f: Frame, tr: Track, y: number, hgt: number, t0: number, t1: number): number {
  return renderAs(tr.kind, tr, f, y, hgt, t0, t1);
}

/** trackTooltip's dispatch, generic over the kind as renderAs. */
function tooltipAs<K extends TrackKind>(kind: K, tr: TrackOf<K>, o: Record<string, unknown>, k: number, name: string): (Node | string)[] | null {
  const tip = TRACK_KINDS[kind].tooltip;
  return tip === null ? null : tip(o, tr, k, name);
}

/** The tooltip lines of mark k of `tr` (`o` its table row, `name` its dictionary name); null: the kind has none of its own. */
export function trackTooltip(tr: Track, o: Record<string, unknown>, k: number, name: string): (Node | string)[] | null {
  return tooltipAs(tr.kind, tr, o, k, name);
}
