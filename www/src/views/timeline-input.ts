// Perfetto's controls over a TimelineView, behind a narrow interface (viewport get/set, data
// bounds): the plain wheel scrolls the page or the track list (never trapped by the canvas),
// Ctrl/⌘+wheel and W/S zoom around the cursor, Shift+wheel, a horizontal wheel and A/D pan, a drag
// on the time axis (or Shift+drag on the tracks) selects a time range, F fits the selection (or
// the execution when there is none), 0 fits, Esc clears the selection. Zoom and pan stay on the
// data (`constrain`). The axis is drawn again on a strip pinned to the top of the scrolling track
// list, so it stays in view over tall timelines.

import { niceStep, ns, tick } from '../format.ts';

/** The visible window and geometry of a timeline, CSS px and ns on the model's axis. */
export interface Viewport {
  /** Time at the plot's left edge, ns. */
  start: number;
  nsPerPx: number;
  /** Label column width and plot width, CSS px. */
  gutter: number;
  plotWidth: number;
  /** Height of the time axis band at the top of the canvas, CSS px. */
  axisH: number;
  /** Canvas width, CSS px. */
  width: number;
}

/** What the controls need from the view. */
export interface ViewportTarget {
  viewport(): Viewport;
  setViewport(start: number, nsPerPx: number): void;
  /** The data's extent and what Fit shows (the execution window), ns; null without data. */
  dataBounds(): { start: number; end: number; fitStart: number; fitEnd: number } | null;
  fit(): void;
}

/** A selected time range, ns on the model's axis, start < end. */
export interface TimeRange {
  start: number;
  end: number;
}

/** Smallest zoom step: 1 ps per CSS pixel. */
const MIN_NS_PER_PX = 1e-3;
/** How far past the data a pan may go, as a share of the data's span. */
const PAN_MARGIN = 0.02;

/**
 * `start`/`nsPerPx` moved onto the data `[lo, hi]`: no wider than the data plus margins, never a
 * window that shows nothing but empty time. Exported for the unit tests.
 */
export function constrainView(start: number, nsPerPx: number, plotWidth: number, lo: number, hi: number): { start: number; nsPerPx: number } {
  const span = Math.max(hi - lo, 1e-3);
  const pad = span * PAN_MARGIN;
  const maxNpp = Math.max((span + 2 * pad) / Math.max(plotWidth, 1), MIN_NS_PER_PX);
  const npp = Number.isFinite(nsPerPx) ? Math.min(Math.max(nsPerPx, MIN_NS_PER_PX), maxNpp) : maxNpp;
  const visible = npp * plotWidth;
  let s = Number.isFinite(start) ? start : lo - pad;
  if (visible >= span + 2 * pad) s = lo - (visible - span) / 2;
  else s = Math.min(Math.max(s, lo - pad), hi + pad - visible);
  return { start: s, nsPerPx: npp };
}

const AXIS_BG = '#14171c';
const GRID = '#262b33';
const MUTED = '#7d8590';
const SEL_FILL = 'rgba(78, 154, 241, 0.30)';

export class TimelineInput {
  /** Called with the new range after a drag selection ends, and null when it is cleared. */
  onSelect: ((range: TimeRange | null) => void) | null = null;
  private readonly axis: HTMLCanvasElement;
  private readonly shade: HTMLElement;
  private readonly target: ViewportTarget;
  private readonly canvas: HTMLCanvasElement;
  private readonly root: HTMLElement;
  private selection: TimeRange | null = null;
  /** Range drag in progress: the time where it began. */
  private dragFrom: number | null = null;
  /** Last pointer x over the plot (CSS px from the canvas's left), for key zooms. */
  private pointerX: number | null = null;

  constructor(target: ViewportTarget, canvas: HTMLCanvasElement, root: HTMLElement) {
    this.target = target;
    this.canvas = canvas;
    this.root = root;
    this.axis = document.createElement('canvas');
    this.axis.className = 'timeline-axis';
    this.axis.dataset['testid'] = `${canvas.dataset['testid'] ?? 'timeline'}-axis`;
    this.axis.title = 'Drag to select a time range (F fits it, Esc clears it)';
    this.shade = document.createElement('div');
    this.shade.className = 'timeline-selection';
    this.shade.hidden = true;
    canvas.setAttribute('aria-label', 'Timeline. Ctrl or ⌘ + wheel, W and S zoom; Shift + wheel, A and D pan; drag on the time axis or Shift + drag selects a range; F fits it.');
    canvas.addEventListener('wheel', (e) => this.onWheel(e), { passive: false });
    this.axis.addEventListener('wheel', (e) => this.onWheel(e), { passive: false });
    canvas.addEventListener('mousedown', (e) => {
      if (!e.shiftKey || e.button !== 0) return;
      // Shift+drag selects instead of panning (the view's own handler would pan).
      e.stopImmediatePropagation();
      this.beginRange(e);
    });
    this.axis.addEventListener('mousedown', (e) => {
      if (e.button === 0) this.beginRange(e);
    });
    canvas.addEventListener('mousemove', (e) => {
      this.pointerX = this.localX(e);
    });
    canvas.addEventListener('mouseleave', () => {
      this.pointerX = null;
    });
    window.addEventListener('mousemove', (e) => this.moveRange(e));
    window.addEventListener('mouseup', (e) => this.endRange(e));
    canvas.addEventListener('keydown', (e) => this.onKey(e));
    // Keys also work while the page itself has the focus and this timeline is on screen.
    document.addEventListener('keydown', (e) => {
      const active = document.activeElement;
      if (active !== null && active !== document.body) return;
      if (this.root.offsetParent === null) return;
      this.onKey(e);
    });
    // The pinned axis and the selection shade live in the canvas's scrolling wrapper.
    queueMicrotask(() => this.mount());
  }

  private mount(): void {
    const wrap = this.canvas.parentElement;
    if (wrap === null || this.axis.isConnected) return;
    wrap.insertBefore(this.axis, this.canvas);
    wrap.append(this.shade);
  }

  /** The selected range, or null. */
  range(): TimeRange | null {
    return this.selection;
  }

  /** Selects `range` (null clears it) and tells `onSelect`. */
  select(range: TimeRange | null): void {
    this.selection = range !== null && range.end > range.start ? { start: range.start, end: range.end } : null;
    if (this.selection === null) {
      delete this.canvas.dataset['selStart'];
      delete this.canvas.dataset['selEnd'];
    } else {
      this.canvas.dataset['selStart'] = String(this.selection.start);
      this.canvas.dataset['selEnd'] = String(this.selection.end);
    }
    this.drawn();
    this.onSelect?.(this.selection);
  }

  /** The view bounded to the data (the view calls this before each frame). */
  constrain(start: number, nsPerPx: number): { start: number; nsPerPx: number } {
    const b = this.target.dataBounds();
    if (b === null) return { start, nsPerPx };
    const v = this.target.viewport();
    return constrainView(start, nsPerPx, v.plotWidth, Math.min(b.start, b.fitStart), Math.max(b.end, b.fitEnd));
  }

  /** Zooms by `factor` (< 1 in) keeping the time under `xCss` (canvas px) in place. */
  zoomBy(factor: number, xCss?: number): void {
    const v = this.target.viewport();
    const px = Math.min(Math.max((xCss ?? v.gutter + v.plotWidth / 2) - v.gutter, 0), v.plotWidth);
    const t = v.start + px * v.nsPerPx;
    const c = this.constrain(v.start, v.nsPerPx * factor);
    this.target.setViewport(t - px * c.nsPerPx, c.nsPerPx);
  }

  /** Pans by `dxCss` CSS px (positive: later times). */
  panBy(dxCss: number): void {
    const v = this.target.viewport();
    this.target.setViewport(v.start + dxCss * v.nsPerPx, v.nsPerPx);
  }

  /** Shows the selection (with a small margin), or fits the execution when there is none. */
  fitSelection(): void {
    const s = this.selection;
    if (s === null) {
      this.target.fit();
      return;
    }
    const v = this.target.viewport();
    const pad = (s.end - s.start) * 0.02;
    this.target.setViewport(s.start - pad, (s.end - s.start + 2 * pad) / v.plotWidth);
  }

  /** Redraws the pinned axis and the selection shade for the current viewport. */
  drawn(): void {
    this.mount();
    const v = this.target.viewport();
    const dpr = window.devicePixelRatio || 1;
    const w = Math.max(1, Math.round(v.width));
    if (this.axis.width !== Math.round(w * dpr) || this.axis.height !== Math.round(v.axisH * dpr)) {
      this.axis.width = Math.round(w * dpr);
      this.axis.height = Math.round(v.axisH * dpr);
      this.axis.style.width = `${w}px`;
      this.axis.style.height = `${v.axisH}px`;
      this.axis.style.marginBottom = `${-v.axisH}px`;
    }
    const ctx = this.axis.getContext('2d');
    const hasData = this.target.dataBounds() !== null;
    this.axis.hidden = !hasData;
    if (ctx === null || !hasData) {
      this.shade.hidden = true;
      return;
    }
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = AXIS_BG;
    ctx.fillRect(0, 0, w, v.axisH);
    const t0 = v.start;
    const t1 = t0 + v.plotWidth * v.nsPerPx;
    const s = this.selection;
    if (s !== null) {
      const x0 = Math.max(v.gutter, v.gutter + (s.start - t0) / v.nsPerPx);
      const x1 = Math.min(v.gutter + v.plotWidth, v.gutter + (s.end - t0) / v.nsPerPx);
      if (x1 > x0) {
        ctx.fillStyle = SEL_FILL;
        ctx.fillRect(x0, 0, Math.max(1, x1 - x0), v.axisH);
      }
    }
    const step = niceStep(90 * v.nsPerPx);
    ctx.font = '12px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    ctx.fillStyle = MUTED;
    ctx.strokeStyle = GRID;
    ctx.lineWidth = 1;
    ctx.save();
    ctx.beginPath();
    ctx.rect(v.gutter, 0, v.plotWidth, v.axisH);
    ctx.clip();
    ctx.beginPath();
    for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
      const x = Math.round(v.gutter + (t - t0) / v.nsPerPx) + 0.5;
      ctx.moveTo(x, v.axisH - 6);
      ctx.lineTo(x, v.axisH);
      ctx.fillText(tick(t, step), x + 3, v.axisH / 2);
    }
    ctx.stroke();
    ctx.restore();
    ctx.strokeStyle = GRID;
    ctx.beginPath();
    ctx.moveTo(0, v.axisH - 0.5);
    ctx.lineTo(w, v.axisH - 0.5);
    ctx.moveTo(v.gutter - 0.5, 0);
    ctx.lineTo(v.gutter - 0.5, v.axisH);
    ctx.stroke();
    ctx.fillStyle = MUTED;
    ctx.font = '11px system-ui, sans-serif';
    ctx.fillText(s === null ? 'drag here to select' : `selected ${ns(s.end - s.start)} · F fits`, 8, v.axisH / 2);
    // Shade over the tracks (a DOM box: the track canvas is the view's).
    if (s === null) {
      this.shade.hidden = true;
      return;
    }
    const x0 = v.gutter + (s.start - t0) / v.nsPerPx;
    const x1 = v.gutter + (s.end - t0) / v.nsPerPx;
    const a = Math.max(v.gutter, x0);
    const b = Math.min(v.gutter + v.plotWidth, x1);
    this.shade.hidden = !(b > a);
    this.shade.style.left = `${a}px`;
    this.shade.style.width = `${Math.max(1, b - a)}px`;
    this.shade.style.top = `${this.canvas.offsetTop}px`;
    this.shade.style.height = `${this.canvas.offsetHeight}px`;
  }

  private localX(e: MouseEvent): number {
    return e.clientX - this.canvas.getBoundingClientRect().left;
  }

  private timeAt(xCss: number): number {
    const v = this.target.viewport();
    const px = Math.min(Math.max(xCss - v.gutter, 0), v.plotWidth);
    return v.start + px * v.nsPerPx;
  }

  private beginRange(e: MouseEvent): void {
    if (this.target.dataBounds() === null) return;
    e.preventDefault();
    this.canvas.focus({ preventScroll: true });
    this.dragFrom = this.timeAt(this.localX(e));
    this.dragX = e.clientX;
  }

  private dragX = 0;

  private moveRange(e: MouseEvent): void {
    if (this.dragFrom === null) return;
    if (Math.abs(e.clientX - this.dragX) < 3) return;
    const t = this.timeAt(this.localX(e));
    this.selection = { start: Math.min(this.dragFrom, t), end: Math.max(this.dragFrom, t) };
    this.drawn();
  }

  private endRange(e: MouseEvent): void {
    const from = this.dragFrom;
    if (from === null) return;
    this.dragFrom = null;
    if (Math.abs(e.clientX - this.dragX) < 3) {
      // A click on the axis clears the selection.
      this.select(null);
      return;
    }
    const t = this.timeAt(this.localX(e));
    this.select({ start: Math.min(from, t), end: Math.max(from, t) });
  }

  private onWheel(e: WheelEvent): void {
    if (this.target.dataBounds() === null) return;
    const unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? 400 : 1;
    // The view's own handler zooms on every wheel: this one decides instead.
    e.stopImmediatePropagation();
    if (e.ctrlKey || e.metaKey) {
      e.preventDefault();
      this.zoomBy(Math.exp(e.deltaY * unit * 0.002), this.localX(e));
    } else if (e.shiftKey) {
      e.preventDefault();
      this.panBy((e.deltaY || e.deltaX) * unit);
    } else if (Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
      e.preventDefault();
      this.panBy(e.deltaX * unit);
    }
    // Otherwise the page (or the track list) scrolls.
    this.hideTooltip();
  }

  private onKey(e: KeyboardEvent): void {
    if (e.ctrlKey || e.metaKey || e.altKey || this.target.dataBounds() === null) return;
    const v = this.target.viewport();
    const x = this.pointerX ?? v.gutter + v.plotWidth / 2;
    switch (e.key.toLowerCase()) {
      case 'w': this.zoomBy(0.8, x); break;
      case 's': this.zoomBy(1.25, x); break;
      case 'a': this.panBy(-v.plotWidth * 0.15); break;
      case 'd': this.panBy(v.plotWidth * 0.15); break;
      case 'f': this.fitSelection(); break;
      case '0': this.target.fit(); break;
      case 'escape':
        if (this.selection === null) return;
        this.select(null);
        break;
      default: return;
    }
    e.preventDefault();
    e.stopImmediatePropagation();
    this.hideTooltip();
  }

  /** A tooltip left from before a key zoom or a scroll points at the wrong slice. */
  private hideTooltip(): void {
    const tt = this.root.querySelector<HTMLElement>('.tooltip');
    if (tt !== null) tt.hidden = true;
  }
}
