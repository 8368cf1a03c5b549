// Device timeline: our own canvas renderer over the Instruction columns (no library draws millions of
// slices). One row per (physical core, engine). Level of detail: slices narrower than a pixel are
// merged into one bar per pixel column, found by binary search, so a frame costs
// O(rows × width × log n) however many instructions there are.
//
// Coordinates: time in ns since profile start; x in CSS pixels; view = [viewStart, viewStart +
// nsPerPx × plotWidth]. Wheel zooms around the cursor, drag pans, hover shows a tooltip, click
// selects and fills the details panel with every field of that Instruction row. Keyboard (focused
// canvas): ←/→ move the selection to the previous/next slice of its row, ↑/↓ to the nearest slice
// of the row above/below, Enter opens its details; an aria-live region reads the selected slice.
// Row percentages: the union of the row's slices (semaphore waits excluded on engine rows) over
// the visible part of the execution window, per core; the line above the tracks gives each
// engine over all cores, the Summary's `<engine>_active_time_percent` at Fit.

import type { Schema, Table } from 'apache-arrow';
import { h, nodes } from '../dom.ts';
import { cell, int, ns, tick } from '../format.ts';
import { ENGINES } from './summary.ts';
import { activeIn, engineActiveIn, groupOf, isGroupHeader, isSliceTrack, isStepTrack, lowerBound, opOf, type Counter, type RowKind, type SliceTrack, type TimelineModel, type Track } from './timeline-model.ts';
import { TimelineInput, type Viewport } from './timeline-input.ts';
import { SUMMARY_COUNT } from './tracks/lod.ts';
import { DIMMED, drawCounters, hashString, renderTrack, TRACK_KINDS, trackTooltip, type Frame } from './tracks/render.ts';
import { rowName } from './tracks/tooltips.ts';
import { opcodeCell } from './opcode.ts';

/** What differs between the device timeline (instructions) and the system timeline (runtime spans). */
export interface TimelineOptions {
  /** data-testid of the canvas ("timeline-canvas") and of the details panel ("instruction-details"). */
  canvasTestid?: string;
  detailsTestid?: string;
  /** Word for one slice in the details header ("instruction", "event"). */
  noun?: string;
  filterPlaceholder?: string;
  /** Tooltip body for a slice; default: the Instruction fields. */
  tooltip?: (row: Record<string, unknown>, track: Track, name: string, start: number, end: number) => (Node | string)[];
  /** Extra content under a clicked slice's fields (e.g. the device-profile link); gets the full row. */
  detailsExtra?: (row: Record<string, unknown>) => Node | null;
  /** Show detailsExtra above the fields instead of below (the device timeline's source link). */
  detailsExtraFirst?: boolean;
  /** Width of the label column, CSS px (default 150). */
  gutter?: number;
}

const AXIS_H = 28;
const ROW_H = 24;
const GUTTER = 150;
const PAD_BOTTOM = 6;

const HEADER_BG = '#1d232c';

const BG = '#14171c';
const ROW_ALT = '#181c22';
const GRID = '#262b33';
const TEXT = '#c9d1d9';
const MUTED = '#7d8590';

/** A "nice" axis step (1, 2, 5 × 10^k ns) of at least `minNs`. */
function niceStep(minNs: number): number {
  const p = Math.pow(10, Math.floor(Math.log10(Math.max(minNs, 1e-6))));
  for (const m of [1, 2, 5, 10]) if (m * p >= minNs) return m * p;
  return 10 * p;
}

interface Hit {
  /** Index into model.tracks. */
  track: number;
  k: number;
}

/** A visible row: which track, its top and height (CSS px, below the axis included). */
interface RowBox {
  track: number;
  y: number;
  h: number;
}

/** A visible row as the probe reports it (CSS px from the canvas top). */
export interface ProbeRow {
  label: string;
  /** The row's kind family (a group header counts as its rows' kind: TRACK_KINDS family). */
  kind: RowKind | 'system';
  pcore: number;
  top: number;
  height: number;
  /** Marks the row holds (slices, updates, or a summary's buckets). */
  items: number;
  /** Group headers: the group key, its rows and whether it is collapsed now. */
  header?: string;
  count?: number;
  collapsed?: boolean;
  /** Rows in a group: the group key. */
  group?: string;
}

/** The % beside a slice row in the last frame (not on rows drawn from summaries). */
export interface ProbeBusy {
  /** "sg00 Tensor", or "sg00 Q0-E64" for a row in a group. */
  label: string;
  kind: RowKind | 'system';
  pcore: number;
  percent: number;
}

/**
 * What tests, benchmarks and tools read of a timeline (window.__neuronscope.timeline(canvas test
 * id)): computed when asked from what the view and its last frame keep. Times are ns on the
 * model's axis, geometry CSS px; frame fields are null before the first frame with a model.
 */
export interface TimelineProbe {
  /** Default row height, label column width, axis height (constant per view). */
  rowH: number;
  gutter: number;
  axisH: number;
  /** Visible rows top to bottom (collapsed groups hide their rows) and their labels. */
  rows: ProbeRow[];
  trackLabels: string[];
  /** Counter rows (System CPU and memory) and where they begin. */
  counterLabels: string[];
  counterTop: number;
  /** Rows of the model under the engines by kind (group headers not counted). */
  dmaRows: number;
  semaphoreRows: number;
  throttleRows: number;
  pendingRows: number;
  /** What Fit shows and the data's extent (pan and zoom stay inside it); null without a model. */
  fitStart: number | null;
  fitEnd: number | null;
  dataStart: number | null;
  dataEnd: number | null;
  /** The last frame: its window, scale (ns per CSS px), marks and counter samples drawn, the busy % beside each row. */
  viewStart: number | null;
  viewEnd: number | null;
  nsPerPx: number | null;
  drawn: number | null;
  counterPoints: number | null;
  busy: ProbeBusy[];
  /** How long the last draw took, ms (benchmarks); null before one. */
  drawMs: number | null;
}

/** The views by canvas test id, for window.__neuronscope.timeline. */
const probes = new Map<string, TimelineView>();

/** Makes `view` readable as window.__neuronscope.timeline(id): once per view, at construction. */
function registerProbe(id: string, view: TimelineView): void {
  probes.set(id, view);
  const g = globalThis as { __neuronscope?: { timeline?: (key: string) => TimelineProbe | null } };
  const hooks = (g.__neuronscope ??= {});
  hooks.timeline ??= (key) => probes.get(key)?.probe() ?? null;
}

export class TimelineView {
  readonly root: HTMLElement;
  private readonly canvas: HTMLCanvasElement;
  private readonly ctx: CanvasRenderingContext2D;
  private readonly tooltip: HTMLElement;
  private readonly details: HTMLElement;
  private readonly status: HTMLElement;
  /** DMA colour key (queue types present), under the canvas. */
  private readonly legend: HTMLElement;
  private model: TimelineModel | null = null;
  private viewStart = 0;
  private nsPerPx = 1;
  private width = 800;
  private hover: Hit | null = null;
  private selected: Hit | null = null;
  private frame = 0;
  private drag: { x: number; start: number; moved: boolean } | null = null;
  private readonly colorCache = new Map<number, string>();
  /** Opcode filter: match[op] = 1 when opcode `op` matches, null when no filter is set. */
  private match: Uint8Array | null = null;
  private readonly filter: HTMLInputElement;
  private readonly filterInfo: HTMLElement;
  private readonly resize: ResizeObserver;
  /** Screen-reader text of the selected slice (aria-live). */
  private readonly live: HTMLElement;
  /** Busy % per engine over all cores in view (the Summary's definition), busiest first marked. */
  private readonly busyLine: HTMLElement;

  private readonly opts: TimelineOptions;
  private readonly gutter: number;
  /** Perfetto-style controls over this view (wheel, W/S/A/D, range selection, pinned axis). */
  readonly input: TimelineInput;
  /** Visible rows top to bottom (collapsed groups hide their rows). */
  private rows: RowBox[] = [];
  /** Keys of the collapsed groups. */
  private readonly collapsed = new Set<string>();
  /** What the last frame drawn with a model showed (read by probe()); null before one. */
  private last: { model: TimelineModel; rows: RowBox[]; t0: number; t1: number; nsPerPx: number; drawn: number; counterPoints: number } | null = null;
  /** How long the last draw took, ms. */
  private drawMs: number | null = null;

  constructor(opts: TimelineOptions = {}) {
    this.opts = opts;
    this.gutter = opts.gutter ?? GUTTER;
    this.canvas = h('canvas', { 'data-testid': opts.canvasTestid ?? 'timeline-canvas', tabindex: 0, class: 'timeline-canvas' });
    const ctx = this.canvas.getContext('2d', { alpha: false });
    if (ctx === null) throw new Error('canvas 2d context unavailable');
    this.ctx = ctx;
    // Row geometry for tests and tools (constant per view: set once; also in probe()).
    this.canvas.dataset['rowH'] = String(ROW_H);
    this.canvas.dataset['gutter'] = String(this.gutter);
    this.canvas.dataset['axisH'] = String(AXIS_H);
    registerProbe(opts.canvasTestid ?? 'timeline-canvas', this);
    this.tooltip = h('div', { class: 'tooltip', 'data-testid': 'timeline-tooltip', hidden: true });
    this.status = h('span', { class: 'muted status' });
    this.details = h('div', { class: 'details', 'data-testid': opts.detailsTestid ?? 'instruction-details' },
      h('div', { class: 'muted' }, `Click ${this.noun()} to see all its fields.`));
    const fit = h('button', { class: 'btn small', onclick: () => this.fit(), title: 'Show the whole profile (key: 0)' }, 'Fit');
    const zin = h('button', { class: 'btn small', onclick: () => this.zoomBy(0.5, this.width / 2), title: 'Zoom in (W)' }, '+');
    const zout = h('button', { class: 'btn small', onclick: () => this.zoomBy(2, this.width / 2), title: 'Zoom out (S)' }, '−');
    this.filter = h('input', { type: 'search', class: 'filter', placeholder: opts.filterPlaceholder ?? 'Highlight opcode…', 'data-testid': `${opts.canvasTestid ?? 'timeline'}-filter`, spellcheck: 'false' });
    this.filterInfo = h('span', { class: 'muted small', 'data-testid': 'timeline-filter-count' });
    let debounce = 0;
    // The device timeline (instructions) or another (the system view's events): the hint's words.
    const device = (opts.noun ?? 'instruction') === 'instruction';
    this.filter.addEventListener('input', () => {
      clearTimeout(debounce);
      debounce = window.setTimeout(() => this.applyFilter(), 120);
    });
    this.root = h('div', { class: 'timeline' },
      h('div', { class: 'timeline-bar' }, fit, zin, zout, this.filter, this.filterInfo,
        h('span', { class: 'muted small hint', title: `Wheel scrolls the tracks; Ctrl/⌘+wheel or W/S zoom around the cursor; Shift+wheel, A/D or a drag pan; drag on the time axis (or Shift+drag) selects a range, F fits it, 0 fits the ${device ? 'execution' : 'events'}. On the focused timeline ←/→ step through a row’s slices, ↑/↓ change rows, Enter shows the details. ${device
          ? 'The % beside each row is that row’s busy time in view: the union of its slices (semaphore waits excluded on engine rows) over the visible part of the execution, for its core alone; the line above the tracks gives each engine over all cores, which at Fit is the Summary’s <engine>_active_time_percent.'
          : 'The % beside each row is the union of its spans over the visible part of the events window (what Fit shows).'}` },
        `Ctrl+wheel zoom · drag pan · drag axis to select · ←↑↓→ Enter · row % = ${device ? 'busy on that core' : 'busy in view'}`), this.status),
      (this.busyLine = h('div', { class: 'timeline-busy small', 'data-testid': `${opts.canvasTestid ?? 'timeline'}-busy`, hidden: true })),
      h('div', { class: 'timeline-wrap' }, this.canvas, this.tooltip),
      (this.live = h('div', { class: 'sr-only', 'aria-live': 'polite', role: 'status', 'data-testid': `${opts.canvasTestid ?? 'timeline'}-live` })),
      (this.legend = h('div', { class: 'timeline-legend muted small', 'data-testid': 'timeline-legend', hidden: true })),
      this.details);

    // Wheel, keys, range selection and the pinned axis (timeline-input.ts); registered first so
    // its handlers run before (and can stop) the ones below.
    this.input = new TimelineInput(this, this.canvas, this.root);
    this.canvas.addEventListener('wheel', (e) => this.onWheel(e), { passive: false });
    this.canvas.addEventListener('mousedown', (e) => this.onDown(e));
    window.addEventListener('mousemove', (e) => this.onMove(e));
    window.addEventListener('mouseup', (e) => this.onUp(e));
    this.canvas.addEventListener('mouseleave', () => {
      this.hover = null;
      this.tooltip.hidden = true;
      this.request();
    });
    this.canvas.addEventListener('keydown', (e) => this.onKey(e));
    // A scroll (page, track list, panel) moves the slices under a still pointer: the tooltip goes.
    window.addEventListener('scroll', () => this.dropHover(), { capture: true, passive: true });
    this.resize = new ResizeObserver(() => this.layout());
    this.resize.observe(this.root);
  }

  /** Shows a new model, zoomed to fit. */
  setModel(model: TimelineModel | null): void {
    this.model = model;
    this.collapsed.clear();
    for (const t of model?.tracks ?? []) if (isGroupHeader(t) && t.collapsed) this.collapsed.add(t.header);
    delete this.canvas.dataset['zoomStart'];
    delete this.canvas.dataset['zoomEnd'];
    this.hover = null;
    this.selected = null;
    this.announce();
    this.colorCache.clear();
    this.showLegend();
    this.applyFilter();
    this.details.replaceChildren(h('div', { class: 'muted' }, `Click ${this.noun()} to see all its fields.`));
    this.relayoutRows();
    this.fit();
  }

  /**
   * Replaces the model with one of the same profile for another window (level-of-detail store,
   * tracks/lod.ts): the view range, collapsed groups and filter stay; hover and selection go.
   */
  swapModel(model: TimelineModel): void {
    // A window arriving after the view was cleared (another profile) is dropped.
    if (this.model === null) return;
    this.model = model;
    this.hover = null;
    this.selected = null;
    this.announce();
    this.colorCache.clear();
    this.applyFilter();
    this.relayoutRows();
  }

  /**
   * Selects and reveals the event of table `table` (Instruction by default on engine rows) at table
   * row `row` spanning [start, end] ns: zooms so it fills about a tenth of the plot, expands its
   * group, scrolls its row into view and shows its details. A level-of-detail view loads the
   * window's rows first, so this waits (up to `timeoutMs`) for a model that holds the row.
   * Resolves false when no track has it (a table the timeline does not draw, or summaries only).
   */
  async reveal(table: string, row: number, start: number, end: number, timeoutMs = 5000): Promise<boolean> {
    if (this.model === null) return false;
    const dur = Math.max(end - start, 1);
    const pad = Math.max(dur * 4.5, 50);
    this.zoomTo(start - pad, end + pad);
    const t0 = performance.now();
    for (;;) {
      const hit = this.findRow(table, row, start);
      if (hit !== null) {
        const tr = this.model?.tracks[hit.track];
        const group = tr === undefined ? undefined : groupOf(tr);
        if (group !== undefined && this.collapsed.has(group)) this.toggleGroup(group, false);
        this.selected = hit;
        this.showDetails(hit);
        const box = this.rows.find((r) => r.track === hit.track);
        if (box !== undefined) scrollIntoViewY(this.canvas, box.y, box.h);
        this.canvas.dataset['selectedTable'] = table;
        this.canvas.dataset['selectedRow'] = String(row);
        this.request();
        return true;
      }
      if (performance.now() - t0 > timeoutMs) return false;
      await new Promise((r) => setTimeout(r, 60));
    }
  }

  /** The slice of table row `row` (starting at `start` ns), searched near `start` on the tracks of that table. */
  private findRow(table: string, row: number, start: number): Hit | null {
    const m = this.model;
    if (m === null) return null;
    for (let i = 0; i < m.tracks.length; i++) {
      const tr = m.tracks[i];
      if (tr === undefined || isGroupHeader(tr) || (tr.source ?? 'Instruction') !== table) continue;
      const tbl = tr.table ?? m.table;
      const ids = tbl.getChild('nscope_row');
      if (tbl.getChild(SUMMARY_COUNT) !== null) continue;
      const lo = lowerBound(tr.starts, start - 1);
      for (let k = lo; k < tr.starts.length && (tr.starts[k] ?? 0) <= start + 1; k++) {
        const local = tr.rows[k] ?? 0;
        const global = ids !== null ? Number(ids.get(local)) : local;
        if (global === row) return { track: i, k };
      }
    }
    return null;
  }

  /** "Show in table" of the details panel: the clicked event's table and row (null: no button). */
  onShowInTable: ((table: string, row: number) => void) | null = null;

  /** Called after each frame with the visible window (ns) and the plot width (CSS px). */
  onView: ((t0: number, t1: number, px: number) => void) | null = null;

  /** The DMA queue types of the model with their colours (hidden without DMA rows). */
  private showLegend(): void {
    const m = this.model;
    const types = new Set<number>();
    for (const t of m?.tracks ?? []) if (t.kind === 'dma' && t.ops.length > 0) types.add(t.ops[0] ?? 0);
    this.legend.hidden = types.size === 0;
    if (m === null || types.size === 0) {
      this.legend.replaceChildren();
      return;
    }
    const dmaTrack = m.tracks.find((t) => t.kind === 'dma');
    this.legend.replaceChildren('DMA queue types: ', ...[...types].sort((a, b) => a - b).flatMap((op) => [
      h('span', { class: 'swatch', style: `background:${dmaTrack === undefined ? '' : this.color(dmaTrack, op)}` }),
      h('span', { 'data-queue-type': m.opcodes[op] ?? '' }, `${m.opcodes[op] ?? ''}  `),
    ]), ' · click a ▸ group to expand it');
  }

  /** Expands or collapses a group (key = the header track's `header`). */
  toggleGroup(key: string, collapse?: boolean): void {
    const now = collapse ?? !this.collapsed.has(key);
    if (now) this.collapsed.add(key);
    else this.collapsed.delete(key);
    this.relayoutRows();
  }

  /** Recomputes the visible rows after a model change or a group toggle. */
  private relayoutRows(): void {
    const m = this.model;
    this.rows = [];
    let y = AXIS_H;
    m?.tracks.forEach((t, i) => {
      const group = groupOf(t);
      if (group !== undefined && this.collapsed.has(group)) return;
      const hgt = t.height ?? ROW_H;
      this.rows.push({ track: i, y, h: hgt });
      y += hgt;
    });
    if (this.hover !== null && !this.rows.some((r) => r.track === this.hover?.track)) this.hover = null;
    this.layout();
  }

  /**
   * What tests and tools read of this view (TimelineProbe), computed now from the model, the
   * visible rows and what the last frame kept: a frame itself writes no DOM attribute.
   */
  probe(): TimelineProbe {
    const m = this.model;
    const last = this.last;
    const b = this.dataBounds();
    const count = (family: RowKind): number => m?.tracks.filter((t) => !isGroupHeader(t) && TRACK_KINDS[t.kind].family === family).length ?? 0;
    const rows = this.rows.flatMap((r): ProbeRow[] => {
      const t = m?.tracks[r.track];
      if (t === undefined) return [];
      const group = groupOf(t);
      return [{
        label: t.label, kind: TRACK_KINDS[t.kind].family, pcore: t.pcore, top: r.y, height: r.h, items: t.starts.length,
        ...(isGroupHeader(t) ? { header: t.header, count: t.count, collapsed: this.collapsed.has(t.header) } : {}),
        ...(group !== undefined ? { group } : {}),
      }];
    });
    const busy: ProbeBusy[] = [];
    for (const r of last?.rows ?? []) {
      const t = last?.model.tracks[r.track];
      if (last === null || t === undefined || !isSliceTrack(t)) continue;
      const percent = rowPercent(t, last.model, last.t0, last.t1);
      if (percent !== null) busy.push({ label: rowName(t), kind: TRACK_KINDS[t.kind].family, pcore: t.pcore, percent });
    }
    return {
      rowH: ROW_H, gutter: this.gutter, axisH: AXIS_H,
      rows, trackLabels: rows.map((r) => r.label), counterLabels: m?.counters?.map((c) => c.label) ?? [], counterTop: this.rowsBottom(),
      dmaRows: count('dma'), semaphoreRows: count('semaphore'), throttleRows: count('throttle'), pendingRows: count('pending'),
      fitStart: b?.fitStart ?? null, fitEnd: b?.fitEnd ?? null,
      dataStart: b === null ? null : Math.min(b.start, b.fitStart), dataEnd: b === null ? null : Math.max(b.end, b.fitEnd),
      viewStart: last?.t0 ?? null, viewEnd: last?.t1 ?? null, nsPerPx: last?.nsPerPx ?? null,
      drawn: last?.drawn ?? null, counterPoints: last?.counterPoints ?? null, busy, drawMs: this.drawMs,
    };
  }

  /** The group key of the header row at `yCss`, undefined when the row there is no header. */
  private headerAt(yCss: number): string | undefined {
    const t = this.model?.tracks[this.rowAt(yCss)?.track ?? -1];
    return t !== undefined && isGroupHeader(t) ? t.header : undefined;
  }

  /** Bottom of the slice rows, CSS px from the canvas top. */
  private rowsBottom(): number {
    const last = this.rows[this.rows.length - 1];
    return last === undefined ? AXIS_H : last.y + last.h;
  }

  private rowAt(yCss: number): RowBox | null {
    let a = 0;
    let b = this.rows.length;
    while (a < b) {
      const mid = (a + b) >>> 1;
      const r = this.rows[mid];
      if (r === undefined) break;
      if (yCss < r.y) b = mid;
      else if (yCss >= r.y + r.h) a = mid + 1;
      else return r;
    }
    return null;
  }

  /** What one mark of row `tr` is called (its kind's noun, else this view's). */
  private nounOf(tr: Track): string {
    return TRACK_KINDS[tr.kind].noun ?? this.opts.noun ?? 'instruction';
  }

  private noun(): string {
    const n = this.opts.noun ?? 'instruction';
    return /^[aeiou]/.test(n) ? `an ${n}` : `a ${n}`;
  }

  /** Height of the slice rows plus the counter rows, CSS px (below the axis). */
  private bodyHeight(): number {
    const rows = this.rowsBottom() - AXIS_H;
    const counters = (this.model?.counters ?? []).reduce((a, c) => a + c.height, 0);
    return Math.max(rows, counters > 0 ? 0 : ROW_H) + counters;
  }

  private plotWidth(): number {
    return Math.max(50, this.width - this.gutter);
  }

  /** A range the view was told to show (zoomTo); kept across resizes until the user moves. */
  private pinned: { start: number; end: number } | null = null;

  /** Shows [start, end] (ns on the model's axis) across the plot width. */
  zoomTo(start: number, end: number): void {
    if (this.model === null || !(end > start)) return;
    this.pinned = { start, end };
    this.fitted = false;
    this.viewStart = start;
    this.nsPerPx = (end - start) / this.plotWidth();
    this.canvas.dataset['zoomStart'] = String(start);
    this.canvas.dataset['zoomEnd'] = String(end);
    this.request();
  }

  /** True while the view is what Fit showed: a resize fits again instead of keeping the scale. */
  private fitted = false;

  fit(): void {
    this.pinned = null;
    const m = this.model;
    if (m === null) return;
    this.dropHover();
    this.fitted = true;
    const lo = m.fitStart ?? m.start;
    const span = (m.fitEnd ?? m.end) - lo;
    const pad = span * 0.01;
    this.viewStart = lo - pad;
    this.nsPerPx = (span + 2 * pad) / this.plotWidth();
    this.request();
  }

  private zoomBy(factor: number, xCss: number): void {
    if (this.model === null) return;
    this.pinned = null;
    this.fitted = false;
    this.dropHover();
    const px = Math.max(0, xCss - this.gutter);
    const t = this.viewStart + px * this.nsPerPx;
    const full = (this.model.end - this.model.start) * 1.5;
    this.nsPerPx = Math.min(Math.max(this.nsPerPx * factor, 1e-3), Math.max(full / this.plotWidth(), 1e-3));
    this.viewStart = t - px * this.nsPerPx;
    this.request();
  }

  private panBy(dxCss: number): void {
    this.pinned = null;
    this.fitted = false;
    this.dropHover();
    this.viewStart += dxCss * this.nsPerPx;
    this.request();
  }

  private layout(): void {
    const w = Math.max(200, Math.floor(this.root.clientWidth || 800));
    const hgt = AXIS_H + this.bodyHeight() + PAD_BOTTOM;
    const dpr = window.devicePixelRatio || 1;
    if (w !== this.width || this.canvas.height !== Math.round(hgt * dpr) || this.canvas.width !== Math.round(w * dpr)) {
      // Keep the left edge and scale when the width changes.
      this.width = w;
      this.canvas.style.width = `${w}px`;
      this.canvas.style.height = `${hgt}px`;
      this.canvas.width = Math.round(w * dpr);
      this.canvas.height = Math.round(hgt * dpr);
    }
    if (this.pinned !== null) this.nsPerPx = (this.pinned.end - this.pinned.start) / this.plotWidth();
    if (this.fitted && this.pinned === null) {
      this.fit();
      return;
    }
    this.request();
  }

  private request(): void {
    if (this.frame !== 0) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.draw();
    });
  }

  /** Highlights instructions whose opcode contains the filter text (case-insensitive). */
  private applyFilter(): void {
    const m = this.model;
    const q = this.filter.value.trim().toLowerCase();
    if (m === null || q === '') {
      this.match = null;
      this.filterInfo.textContent = '';
      this.request();
      return;
    }
    const match = new Uint8Array(0x10000);
    m.opcodes.forEach((o, i) => {
      if (o.toLowerCase().includes(q)) match[i] = 1;
    });
    let count = 0;
    // Slice rows only: group headers repeat their rows' slices, step rows have no opcodes.
    for (const t of m.tracks) if (isSliceTrack(t)) for (let k = 0; k < t.ops.length; k++) count += match[t.ops[k] ?? 0] ?? 0;
    this.match = match;
    this.filterInfo.textContent = `${int(count)} match${count === 1 ? '' : 'es'}`;
    this.filterInfo.dataset['count'] = String(count);
    this.request();
  }

  private color(track: Track, op: number): string {
    if (this.match !== null && op !== 0xffff && this.match[op] !== 1) return DIMMED;
    const key = (hashString(track.engine) & 0xffff) * 65536 + op;
    let c = this.colorCache.get(key);
    if (c === undefined) {
      c = TRACK_KINDS[track.kind].color(track.engine, this.model?.opcodes[op] ?? '', op);
      this.colorCache.set(key, c);
    }
    return c;
  }

  /** The visible window and geometry (timeline-input.ts). */
  viewport(): Viewport {
    return { start: this.viewStart, nsPerPx: this.nsPerPx, gutter: this.gutter, plotWidth: this.plotWidth(), axisH: AXIS_H, width: this.width };
  }

  /** Shows `start` + `nsPerPx` × plot width (bounded to the data when drawn). */
  setViewport(start: number, nsPerPx: number): void {
    if (this.model === null) return;
    this.pinned = null;
    this.fitted = false;
    this.viewStart = start;
    this.nsPerPx = nsPerPx;
    this.dropHover();
    this.request();
  }

  /** The tooltip and hover outline point at what was under the pointer: gone after a zoom, pan or scroll. */
  private dropHover(): void {
    this.tooltip.hidden = true;
    if (this.hover !== null) {
      this.hover = null;
      this.request();
    }
  }

  /** Time span of the model's data and what Fit shows, ns; null without a model. */
  dataBounds(): { start: number; end: number; fitStart: number; fitEnd: number } | null {
    const m = this.model;
    return m === null ? null : { start: m.start, end: m.end, fitStart: m.fitStart ?? m.start, fitEnd: m.fitEnd ?? m.end };
  }

  private draw(): void {
    const began = performance.now();
    if (this.model !== null && this.pinned === null) {
      // Zoom and pan stay on the data, whichever control moved them.
      const v = this.input.constrain(this.viewStart, this.nsPerPx);
      this.viewStart = v.start;
      this.nsPerPx = v.nsPerPx;
    }
    this.drawFrame();
    this.drawMs = performance.now() - began;
    this.input.drawn();
  }

  private drawFrame(): void {
    const ctx = this.ctx;
    const dpr = window.devicePixelRatio || 1;
    const W = this.width;
    const H = this.canvas.height / dpr;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = BG;
    ctx.fillRect(0, 0, W, H);
    const m = this.model;
    if (m === null) return;
    const plotW = this.plotWidth();
    const t0 = this.viewStart;
    const t1 = t0 + plotW * this.nsPerPx;

    // Rows and labels.
    ctx.font = '12px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    this.rows.forEach((row, r) => {
      const tr = m.tracks[row.track];
      if (tr === undefined) return;
      const y = row.y;
      const rh = row.h;
      const isHeader = isGroupHeader(tr);
      if (isHeader || r % 2 === 1) {
        ctx.fillStyle = isHeader ? HEADER_BG : ROW_ALT;
        ctx.fillRect(0, y, W, rh);
      }
      if (isHeader) {
        ctx.strokeStyle = GRID;
        ctx.beginPath();
        ctx.moveTo(0, y + 0.5);
        ctx.lineTo(W, y + 0.5);
        ctx.stroke();
      }
      ctx.fillStyle = TEXT;
      const child = groupOf(tr) !== undefined;
      ctx.font = child ? `${rh <= 14 ? 9 : 10}px system-ui, sans-serif` : isHeader ? '11px system-ui, sans-serif' : '12px system-ui, sans-serif';
      const label = isHeader ? `${this.collapsed.has(tr.header) ? '▸' : '▾'} ${tr.label}` : tr.label;
      const maxW = this.gutter - (child ? 52 : 40);
      ctx.fillText(this.fitText(label, maxW), child ? 20 : 8, y + rh / 2);
      // Busy share of the visible execution (slice rows; steps and group headers have none), or
      // "–" on a row drawn from summaries (rowPercent).
      if (isSliceTrack(tr)) {
        const pct = rowPercent(tr, m, t0, t1);
        ctx.fillStyle = MUTED;
        ctx.textAlign = 'right';
        ctx.font = child ? '9px system-ui, sans-serif' : '11px system-ui, sans-serif';
        ctx.fillText(pct === null ? '–' : `${pct < 10 ? pct.toFixed(1) : pct.toFixed(0)}%`, this.gutter - 6, y + rh / 2);
        ctx.textAlign = 'left';
      }
      ctx.font = '12px system-ui, sans-serif';
    });

    // Grid and axis.
    const step = niceStep(90 * this.nsPerPx);
    ctx.fillStyle = MUTED;
    ctx.strokeStyle = GRID;
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
      const x = Math.round(this.gutter + (t - t0) / this.nsPerPx) + 0.5;
      ctx.moveTo(x, AXIS_H - 6);
      ctx.lineTo(x, H);
      ctx.fillText(tick(t, step), x + 3, AXIS_H / 2);
    }
    ctx.stroke();
    ctx.beginPath();
    ctx.moveTo(0, AXIS_H - 0.5);
    ctx.lineTo(W, AXIS_H - 0.5);
    ctx.moveTo(this.gutter - 0.5, 0);
    ctx.lineTo(this.gutter - 0.5, H);
    ctx.stroke();

    // Slices, clipped to the plot area.
    ctx.save();
    ctx.beginPath();
    ctx.rect(this.gutter, AXIS_H, plotW, H - AXIS_H);
    ctx.clip();
    let drawn = 0;
    ctx.font = '12px system-ui, sans-serif';
    const frame: Frame = {
      ctx, gutter: this.gutter, plotW, width: this.width, npp: this.nsPerPx, match: this.match,
      color: (tr, op) => this.color(tr, op), opcodes: m.opcodes,
    };
    for (const row of this.rows) {
      const tr = m.tracks[row.track];
      if (tr === undefined) continue;
      const pad = row.h >= ROW_H ? 3 : 2;
      // Step rows use the whole band; slice rows keep a margin.
      drawn += isStepTrack(tr) ? renderTrack(frame, tr, row.y + 1, row.h - 2, t0, t1) : renderTrack(frame, tr, row.y + pad, row.h - 2 * pad, t0, t1);
    }
    for (const [hit, style] of [[this.hover, '#ffffffaa'], [this.selected, '#ffffff']] as const) {
      if (hit === null) continue;
      const tr = m.tracks[hit.track];
      const row = this.rows.find((r) => r.track === hit.track);
      if (tr === undefined || row === undefined) continue;
      const x0 = this.gutter + ((tr.starts[hit.k] ?? 0) - t0) / this.nsPerPx;
      const x1 = this.gutter + ((tr.ends[hit.k] ?? 0) - t0) / this.nsPerPx;
      ctx.strokeStyle = style;
      ctx.lineWidth = style === '#ffffff' ? 2 : 1;
      ctx.strokeRect(x0 - 1, row.y + 1.5, Math.max(x1 - x0, 1) + 2, row.h - 3);
    }
    ctx.restore();
    const counterPoints = drawCounters(frame, m.counters ?? [], this.rowsBottom(), t0, t1);
    this.showEngineBusy(m, t0, t1);
    // What this frame showed (the probe reads it on demand: no DOM writes per frame).
    this.last = { model: m, rows: this.rows, t0, t1, nsPerPx: this.nsPerPx, drawn, counterPoints };
    this.status.textContent = ` ${ns(Math.max(t0, m.start))} – ${ns(Math.min(t1, m.end))} · ${ns(t1 - t0)} visible · ${this.rows.length} rows`;
    this.onView?.(t0, t1, plotW);
  }

  /**
   * The line over the tracks: each engine's busy share of the visible execution over all cores —
   * the Summary's `<engine>_active_time_percent` at Fit — with the busiest engine marked. Hidden
   * on timelines without engine rows (the system view).
   */
  private showEngineBusy(m: TimelineModel, t0: number, t1: number): void {
    const lo = Math.max(t0, m.fitStart ?? m.start);
    const hi = Math.min(t1, m.fitEnd ?? m.end);
    const engineRows = m.tracks.filter((t) => t.kind === 'engine');
    const present = ENGINES.filter(([e]) => engineRows.some((t) => t.engine === e));
    // The whole execution in view: the Summary's own figures (its unions are in ps, the rows' in ns).
    const whole = t0 <= (m.fitStart ?? m.start) && t1 >= (m.fitEnd ?? m.end);
    const exact = whole ? this.summaryPercents : null;
    const summarised = exact === null && engineRows.some((t) => isSummarised(t, m));
    const key = `${lo}\u0000${hi}\u0000${present.length}\u0000${exact !== null}\u0000${summarised}`;
    if (this.busyKey === key && this.busyModel === m) return;
    this.busyKey = key;
    this.busyModel = m;
    if (present.length === 0 || !(hi > lo)) {
      this.busyLine.hidden = true;
      return;
    }
    if (summarised) {
      this.busyLine.hidden = false;
      this.busyLine.replaceChildren(h('span', { class: 'muted', 'data-testid': 'busy-summarised' },
        'Busy in view: this zoom is drawn from summaries, which do not give exact busy time — zoom in, press F for the whole run (the Summary’s figures), or drag on the axis to select a range.'));
      return;
    }
    const list = present.map(([e, label]) => ({ e, label, pct: exact?.[e] ?? (100 * engineActiveIn(m, e, lo, hi)) / (hi - lo) }));
    const top = list.reduce((a, x) => (x.pct > a.pct ? x : a), list[0] ?? { e: '', label: '', pct: 0 });
    const cores = new Set(m.tracks.filter((t) => t.kind === 'engine').map((t) => t.pcore)).size;
    this.busyLine.hidden = false;
    this.busyLine.replaceChildren(
      h('span', { class: 'muted', title: 'Union of each engine’s instructions on every core, semaphore waits excluded, over the visible part of the execution: at Fit these are the Summary’s <engine>_active_time_percent. The % beside each row is the same for that row’s core alone.' },
        `Busy in view${cores > 1 ? `, all ${cores} cores` : ''} (as the Summary): `),
      ...list.flatMap((x, i) => [
        i > 0 ? ' · ' : '',
        h('span', { class: x === top ? 'busiest' : '', 'data-engine': x.e, 'data-percent': x.pct }, `${x.label} ${x.pct.toFixed(2)} %${x === top ? ' (busiest)' : ''}`),
      ]));
  }

  private busyKey = '';
  private busyModel: TimelineModel | null = null;
  private summaryPercents: Record<string, number> | null = null;

  /**
   * The Summary's `<engine>_engine_active_time_percent` by engine (`tensor`, `vector`, ...), or
   * null: shown on the busy line whenever the whole execution is in view.
   */
  setSummaryPercents(p: Record<string, number> | null): void {
    this.summaryPercents = p;
    this.busyKey = '';
    this.draw();
  }

  /** `text` cut with an ellipsis to `maxW` CSS px in the current font. */
  private fitText(text: string, maxW: number): string {
    if (this.ctx.measureText(text).width <= maxW) return text;
    let lo = 0;
    let hi = text.length;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.ctx.measureText(`${text.slice(0, mid)}…`).width <= maxW) lo = mid;
      else hi = mid - 1;
    }
    return `${text.slice(0, lo)}…`;
  }

  /** Counter row and sample under a point, or null. */
  private counterAt(xCss: number, yCss: number): { c: Counter; k: number } | null {
    const m = this.model;
    if (m === null || xCss < this.gutter) return null;
    let y = this.rowsBottom();
    for (const c of m.counters ?? []) {
      if (yCss >= y && yCss < y + c.height) {
        const t = this.viewStart + (xCss - this.gutter) * this.nsPerPx;
        const k = lowerBound(c.times, t + 1e-9) - 1;
        return k >= 0 && k < c.times.length ? { c, k } : null;
      }
      y += c.height;
    }
    return null;
  }

  private hitTest(xCss: number, yCss: number): Hit | null {
    const m = this.model;
    if (m === null || xCss < this.gutter || yCss < AXIS_H) return null;
    const row = this.rowAt(yCss);
    const r = row?.track ?? -1;
    const tr = m.tracks[r];
    if (tr === undefined) return null;
    const t = this.viewStart + (xCss - this.gutter) * this.nsPerPx;
    if (isStepTrack(tr)) {
      // The update in force at t.
      const k = lowerBound(tr.starts, t + 1e-9) - 1;
      return k >= 0 && t <= (tr.ends[k] ?? 0) ? { track: r, k } : null;
    }
    const tol = 3 * this.nsPerPx;
    // Candidates start within [t - maxDur - tol, t + tol]; pick the one nearest to t.
    let best = -1;
    let bestDist = Infinity;
    const hi = lowerBound(tr.starts, t + tol);
    const lo = lowerBound(tr.starts, t - tr.maxDur - tol, 0, hi);
    // Very long runs are scanned from the nearest start backwards only a bounded number of steps.
    for (let k = hi - 1, steps = 0; k >= lo && steps < 4096; k--, steps++) {
      const s = tr.starts[k] ?? 0;
      const e = tr.ends[k] ?? 0;
      const d = t < s ? s - t : t > e ? t - e : 0;
      if (d < bestDist) {
        bestDist = d;
        best = k;
        if (d === 0) break;
      }
    }
    return best >= 0 && bestDist <= tol ? { track: r, k: best } : null;
  }

  private rowObject(hit: Hit): Record<string, unknown> {
    const m = this.model;
    const tr = m?.tracks[hit.track];
    if (m === undefined || m === null || tr === undefined) return {};
    const row = (tr.table ?? m.table).get(tr.rows[hit.k] ?? 0);
    return row === null ? {} : (row.toJSON() as Record<string, unknown>);
  }

  private showTooltip(hit: Hit, xCss: number, yCss: number): void {
    const m = this.model;
    const tr = m?.tracks[hit.track];
    if (m === null || tr === undefined) return;
    const o = this.rowObject(hit);
    const s = tr.starts[hit.k] ?? 0;
    const e = tr.ends[hit.k] ?? 0;
    const op = m.opcodes[opOf(tr, hit.k)] || (this.opts.noun ?? 'instruction');
    const summarised = o[SUMMARY_COUNT];
    if (summarised !== undefined && summarised !== null && Number.isFinite(Number(summarised))) {
      // A bucket of the level-of-detail summaries, not one row (tracks/lod.ts).
      const c = Number(summarised);
      this.tooltip.replaceChildren(...nodes(
        h('div', { class: 'tt-title' }, op || 'summary'),
        h('div', {}, rowName(tr)),
        h('div', { 'data-testid': 'tooltip-summary', 'data-count': c }, `${int(c)} ${this.nounOf(tr)}${c === 1 ? '' : 's'} start here (from ${ns(s)})${isStepTrack(tr) ? '' : ` · busy ${ns(e - s)}`}`),
        h('div', { class: 'muted' }, 'zoom in for single rows'),
      ));
      this.placeTooltip(xCss, yCss);
      return;
    }
    const own = this.opts.tooltip === undefined ? trackTooltip(tr, o, hit.k, op) : null;
    if (this.opts.tooltip !== undefined) this.tooltip.replaceChildren(h('div', { class: 'tt-title' }, op), ...this.opts.tooltip(o, tr, op, s, e));
    else if (own !== null) this.tooltip.replaceChildren(...own);
    else this.tooltip.replaceChildren(...nodes(
      h('div', { class: 'tt-title' }, opcodeCell(op)),
      h('div', {}, `${tr.label} · pc ${cell(o['pc'])}`),
      h('div', {}, `start ${int(Math.round(s))} ns · duration ${ns(e - s)}`),
      o['evt_wait_time_ns'] !== null && o['evt_wait_time_ns'] !== undefined ? h('div', {}, `event wait ${ns(Number(o['evt_wait_time_ns']))}`) : null,
      o['bir_instruction_name'] ? h('div', { class: 'muted' }, cell(o['bir_instruction_name'])) : null,
    ));
    this.placeTooltip(xCss, yCss);
  }

  private placeTooltip(xCss: number, yCss: number): void {
    this.tooltip.hidden = false;
    const wrapW = this.root.clientWidth;
    const left = xCss + 14 + 260 > wrapW ? xCss - 270 : xCss + 14;
    this.tooltip.style.left = `${Math.max(0, left)}px`;
    this.tooltip.style.top = `${yCss + 14}px`;
  }

  /**
   * Loads one row with every column (the model holds only the drawing columns) from `table`: the
   * track's source table (DmaPacket, SemaphoreUpdate, …), "Instruction" by default.
   */
  rowLoader: ((row: number, table: string) => Promise<Table | null>) | null = null;
  private detailSeq = 0;

  private showDetails(hit: Hit): void {
    const tr = this.model?.tracks[hit.track];
    if (tr === undefined) return;
    const local = tr.rows[hit.k] ?? 0;
    const tbl = tr.table ?? this.model?.table;
    // A window's rows carry their table row (nscope_row); summaries have none to load.
    const summarised = tbl?.getChild(SUMMARY_COUNT) ? Number(tbl.get(local)?.[SUMMARY_COUNT] ?? NaN) : NaN;
    if (Number.isFinite(summarised)) {
      this.details.replaceChildren(h('div', { class: 'muted' }, summarised === 0 ? 'The value in force before the window: zoom out to find its update.' : `A summary of ${int(summarised)} rows: zoom in to click ${this.noun()}.`));
      return;
    }
    const global = tbl?.getChild('nscope_row') ? Number(tbl.get(local)?.['nscope_row'] ?? local) : local;
    const row = global;
    const noun = this.nounOf(tr);
    const where = rowName(tr);
    const show = this.onShowInTable;
    const head = h('div', { class: 'details-head', 'data-kind': tr.kind, 'data-table': tr.source ?? '' },
      `${where || 'nested lane'} · ${noun} ${hit.k + 1} of ${tr.starts.length} on this row · ${tr.source ?? 'table'} row ${row}`,
      show !== null ? h('button', { class: 'btn small', 'data-testid': 'show-in-table', onclick: () => show(tr.source ?? 'Instruction', row) }, 'Show in table') : null);
    const seq = ++this.detailSeq;
    const render = (o: Record<string, unknown>, schema: Schema | undefined): void => {
      if (seq !== this.detailSeq) return;
      const entries = Object.entries(o).filter(([, v]) => v !== null && v !== undefined && v !== '');
      const unitOf = (name: string): string => schema?.fields.find((f) => f.name === name)?.metadata.get('unit') ?? '';
      const extra = nodes(this.opts.detailsExtra?.(o) ?? null);
      const first = this.opts.detailsExtraFirst === true;
      this.details.replaceChildren(head, ...(first ? extra : []),
        h('dl', { class: 'kv details-grid' },
          entries.flatMap(([k, v]) => {
            const unit = unitOf(k);
            const isTime = unit === 'ns' && (typeof v === 'bigint' || typeof v === 'number');
            return [
              h('dt', { title: unit ? `unit: ${unit}` : '' }, k),
              h('dd', { 'data-field': k }, k === 'opcode' ? opcodeCell(v) : cell(v), isTime ? h('span', { class: 'muted' }, `  (${ns(Number(v))})`) : unit && unit !== '–' ? h('span', { class: 'muted' }, ` ${unit}`) : null),
            ];
          })),
        ...(first ? [] : extra),
      );
    };
    // Show what the model has at once, then every field when the full row arrives.
    render(this.rowObject(hit), tbl?.schema);
    const load = this.rowLoader;
    if (load === null) return;
    load(row, tr.source ?? 'Instruction').then(
      (t) => {
        const r = t?.get(0);
        if (t && r) render(r.toJSON() as Record<string, unknown>, t.schema);
      },
      (e: unknown) => {
        if (seq === this.detailSeq) this.details.append(h('div', { class: 'error-inline' }, `Could not load the row: ${e instanceof Error ? e.message : String(e)}`));
      },
    );
  }

  private localXY(e: MouseEvent): [number, number] {
    const r = this.canvas.getBoundingClientRect();
    return [e.clientX - r.left, e.clientY - r.top];
  }

  private onWheel(e: WheelEvent): void {
    if (this.model === null) return;
    e.preventDefault();
    const [x] = this.localXY(e);
    const unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? 400 : 1;
    if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
      this.panBy((e.shiftKey ? e.deltaY : e.deltaX) * unit);
    } else {
      this.zoomBy(Math.exp(e.deltaY * unit * 0.002), x);
    }
  }

  private onDown(e: MouseEvent): void {
    if (e.button !== 0) return;
    const [x] = this.localXY(e);
    this.drag = { x, start: this.viewStart, moved: false };
    this.canvas.focus({ preventScroll: true }); // a tall canvas must not jump under the cursor
  }

  private onMove(e: MouseEvent): void {
    const [x, y] = this.localXY(e);
    if (this.drag !== null) {
      const dx = x - this.drag.x;
      if (Math.abs(dx) > 3) this.drag.moved = true;
      if (this.drag.moved) {
        this.pinned = null;
        this.fitted = false;
        this.viewStart = this.drag.start - dx * this.nsPerPx;
        this.tooltip.hidden = true;
        this.request();
        return;
      }
    }
    if (e.target !== this.canvas) return;
    const hit = this.hitTest(x, y);
    const changed = hit?.track !== this.hover?.track || hit?.k !== this.hover?.k;
    this.hover = hit;
    const counter = hit === null ? this.counterAt(x, y) : null;
    if (counter !== null) {
      const t = counter.c.times[counter.k] ?? 0;
      this.tooltip.replaceChildren(h('div', { class: 'tt-title' }, counter.c.label),
        h('div', {}, counter.c.format(counter.c.values[counter.k] ?? NaN)),
        h('div', { class: 'muted' }, `sample at ${ns(t)}`));
      this.placeTooltip(x, y);
    } else if (hit === null) this.tooltip.hidden = true;
    else this.showTooltip(hit, x, y);
    const onHeader = x < this.gutter && this.headerAt(y) !== undefined;
    this.canvas.style.cursor = hit === null && !onHeader ? 'default' : 'pointer';
    if (changed) this.request();
  }

  private onUp(e: MouseEvent): void {
    const d = this.drag;
    this.drag = null;
    if (d === null || d.moved) return;
    const [x, y] = this.localXY(e);
    // A click on a group header's label expands or collapses the group.
    const header = x < this.gutter ? this.headerAt(y) : undefined;
    if (header !== undefined) {
      this.toggleGroup(header);
      return;
    }
    this.selected = this.hitTest(x, y);
    if (this.selected !== null) this.showDetails(this.selected);
    this.announce();
    this.request();
  }

  /** The rows arrows move through: visible slice rows with slices (group headers repeat their rows). */
  private navRows(): RowBox[] {
    const m = this.model;
    return this.rows.filter((r) => {
      const t = m?.tracks[r.track];
      return t !== undefined && !isGroupHeader(t) && t.starts.length > 0;
    });
  }

  /** Arrow keys: moves the selection (see the header comment); true when the key was one of them. */
  private moveSelection(key: string): boolean {
    const m = this.model;
    if (m === null || !['ArrowLeft', 'ArrowRight', 'ArrowUp', 'ArrowDown'].includes(key)) return false;
    const rows = this.navRows();
    if (rows.length === 0) return true;
    const mid = this.viewStart + (this.plotWidth() / 2) * this.nsPerPx;
    const nearest = (tr: Track, t: number): number => {
      const k = lowerBound(tr.starts, t);
      if (k <= 0) return 0;
      if (k >= tr.starts.length) return tr.starts.length - 1;
      return t - (tr.starts[k - 1] ?? 0) <= (tr.starts[k] ?? 0) - t ? k - 1 : k;
    };
    let cur = this.selected;
    if (cur === null || !rows.some((r) => r.track === cur?.track)) {
      // The first key picks the slice nearest the middle of the view on the first row.
      const first = rows[0];
      const tr = first === undefined ? undefined : m.tracks[first.track];
      if (first === undefined || tr === undefined) return true;
      cur = { track: first.track, k: nearest(tr, mid) };
    } else {
      const tr = m.tracks[cur.track];
      if (tr === undefined) return true;
      if (key === 'ArrowLeft') cur = { track: cur.track, k: Math.max(0, cur.k - 1) };
      else if (key === 'ArrowRight') cur = { track: cur.track, k: Math.min(tr.starts.length - 1, cur.k + 1) };
      else {
        const i = rows.findIndex((r) => r.track === cur?.track);
        const next = rows[Math.min(rows.length - 1, Math.max(0, i + (key === 'ArrowDown' ? 1 : -1)))];
        const nt = next === undefined ? undefined : m.tracks[next.track];
        if (next === undefined || nt === undefined) return true;
        const at = tr.starts[cur.k] ?? mid;
        cur = { track: next.track, k: nearest(nt, at) };
      }
    }
    this.selected = cur;
    this.revealSelected();
    this.announce();
    this.request();
    return true;
  }

  /** Pans (keeping the zoom) and scrolls the track list so the selected slice is in view. */
  private revealSelected(): void {
    const m = this.model;
    const hit = this.selected;
    const tr = hit === null ? undefined : m?.tracks[hit.track];
    if (hit === null || tr === undefined) return;
    const s = tr.starts[hit.k] ?? 0;
    const e = tr.ends[hit.k] ?? s;
    const t0 = this.viewStart;
    const t1 = t0 + this.plotWidth() * this.nsPerPx;
    if (s < t0 || s > t1) {
      this.pinned = null;
      this.fitted = false;
      this.viewStart = (s + e) / 2 - (this.plotWidth() / 2) * this.nsPerPx;
    }
    const row = this.rows.find((r) => r.track === hit.track);
    const wrap = this.canvas.parentElement;
    if (row !== undefined && wrap !== null) {
      // The pinned axis covers the top AXIS_H px of the scrolled list.
      if (row.y - AXIS_H < wrap.scrollTop) wrap.scrollTop = Math.max(0, row.y - AXIS_H);
      else if (row.y + row.h > wrap.scrollTop + wrap.clientHeight) wrap.scrollTop = row.y + row.h - wrap.clientHeight;
    }
  }

  /** Puts the selected slice into the aria-live region (and data-cursor-* for tests). */
  private announce(): void {
    const m = this.model;
    const hit = this.selected;
    const tr = hit === null ? undefined : m?.tracks[hit.track];
    const ds = this.canvas.dataset;
    if (m === null || hit === null || tr === undefined) {
      this.live.textContent = '';
      delete ds['cursorTrack'];
      delete ds['cursorK'];
      delete ds['cursorLabel'];
      return;
    }
    const s = tr.starts[hit.k] ?? 0;
    const e = tr.ends[hit.k] ?? 0;
    const where = rowName(tr);
    const noun = this.nounOf(tr);
    const name = m.opcodes[opOf(tr, hit.k)] || noun;
    this.live.textContent = `${where}: ${name}, at ${ns(s)}, ${isStepTrack(tr) ? `value ${tr.values[hit.k] ?? '–'} for` : 'lasting'} ${ns(e - s)}; ${noun} ${int(hit.k + 1)} of ${int(tr.starts.length)} on this row. Enter shows its details.`;
    ds['cursorTrack'] = String(hit.track);
    ds['cursorK'] = String(hit.k);
    ds['cursorLabel'] = where;
    ds['cursorStart'] = String(s);
  }

  private onKey(e: KeyboardEvent): void {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (this.moveSelection(e.key)) {
      e.preventDefault();
      return;
    }
    if (e.key === 'Enter' && this.selected !== null) {
      this.showDetails(this.selected);
      e.preventDefault();
      return;
    }
    const mid = this.gutter + this.plotWidth() / 2;
    const k = e.key.toLowerCase();
    if (k === 'w') this.zoomBy(0.8, mid);
    else if (k === 's') this.zoomBy(1.25, mid);
    else if (k === 'a') this.panBy(-this.plotWidth() * 0.15);
    else if (k === 'd') this.panBy(this.plotWidth() * 0.15);
    else if (k === '0') this.fit();
    else return;
    e.preventDefault();
  }
}

/** Scrolls the nearest scrollable ancestor of `el` so that [y, y + h) (CSS px from el's top) is visible. */
function scrollIntoViewY(el: HTMLElement, y: number, hgt: number): void {
  for (let p = el.parentElement; p !== null; p = p.parentElement) {
    const style = getComputedStyle(p);
    if (!/(auto|scroll)/.test(style.overflowY) || p.scrollHeight <= p.clientHeight) continue;
    const top = el.getBoundingClientRect().top - p.getBoundingClientRect().top + p.scrollTop + y;
    if (top < p.scrollTop + 40 || top + hgt > p.scrollTop + p.clientHeight) p.scrollTop = Math.max(0, top - p.clientHeight / 3);
    return;
  }
  const top = el.getBoundingClientRect().top + window.scrollY + y;
  if (top < window.scrollY || top + hgt > window.scrollY + window.innerHeight) window.scrollTo({ top: Math.max(0, top - window.innerHeight / 3) });
}

/** Whether a track's slices are level-of-detail buckets (pseudo-rows), not table rows. */
function isSummarised(tr: Track, m: TimelineModel): boolean {
  return (tr.table ?? m.table).getChild(SUMMARY_COUNT) !== null;
}

/**
 * The % beside slice row `tr` for the view [t0, t1] ns: the union of its slices (semaphore waits
 * excluded on engine rows) over the visible part of the execution window (Fit's [fitStart,
 * fitEnd]) — the Summary's active-time percent; null when the row is drawn from summaries (a
 * union of buckets is not the row's busy time).
 */
function rowPercent(tr: SliceTrack, m: TimelineModel, t0: number, t1: number): number | null {
  if (isSummarised(tr, m)) return null;
  const lo = Math.max(t0, m.fitStart ?? m.start);
  const hi = Math.min(t1, m.fitEnd ?? m.end);
  return hi > lo ? Math.min(100, (100 * activeIn(tr, m.opcodes, lo, hi)) / (hi - lo)) : 0;
}
