// Memory view: a PyTorch allocator snapshot of one device on its own time axis (time since the
// device's first trace entry, shown in ms; the wall-clock start is printed beside the axis).
//
// Canvas 1 (memory-canvas): active memory stacked by allocation, in allocation order (earlier
// allocations below, the ones above slide down when one below is freed). Level of detail, recomputed
// every frame: allocations of at least ~2 px height keep their own rectangle; smaller ones fill the
// band between the top of those rectangles and the allocated curve (per pixel column, maximum over
// the column). Lines: allocated (white) and reserved by segments (orange); OOMs as red markers.
// Wheel zooms around the cursor, drag pans; hovering an allocation shows its stack (a click pins it,
// and each frame's file:line opens the Source view); a click also chooses the time of the segment map (canvas 2, memory-segments): every segment live then, as a bar of its
// size, with the allocations live inside it at their offsets.

import { h } from '../dom.ts';
import { bytes, count, int } from '../format.ts';
import { layoutLarge, lowerBound, stateAt, type MemoryModel, type Rect } from './memory-model.ts';

const AXIS_H = 24;
const CHART_H = 280;
const GUTTER = 80;
const SEG_ROW = 16;
const SEG_ROWS_MAX = 48;
const SEG_LABEL = 170;

const BG = '#14171c';
const GRID = '#262b33';
const MUTED = '#7d8590';
const BAND = '#3b4b63';

/** One frame of an allocation's stack (MemoryStackFrame row). */
export interface StackFrame {
  /** Source file as recorded on the host that ran PyTorch; "" when unknown. */
  file: string;
  /** 1-based line, null when unknown. */
  line: number | null;
  /** Function name. */
  name: string;
  /** torch.fx node ("call_function add_1"), "" when none. */
  fx: string;
}

/** Loads the frames of a stack, innermost first. */
export type StackLoader = (stackId: number) => Promise<StackFrame[]>;

/** "file:line name [fx …]": a frame as text (also what the Source view is asked to open, up to the line). */
export function frameText(f: StackFrame): string {
  return `${f.file || '?'}:${f.line ?? '?'} ${f.name || '?'}${f.fx ? `  [fx ${f.fx}]` : ''}`;
}

/** Time `t` (ns since the first trace entry) in ms: "12.345 ms" (µs digits below 1 ms, never s or ns). */
export function msText(t: number): string {
  const v = t / 1e6;
  const a = Math.abs(v);
  const digits = a >= 100 ? 1 : a >= 1 ? 3 : a >= 0.001 ? 4 : 6;
  return `${Number(v.toFixed(digits)).toLocaleString('en-US', { maximumFractionDigits: digits })} ms`;
}

/** Axis tick label in ms for a tick at `t` with spacing `step` (both ns). */
export function msTick(t: number, step: number): string {
  const digits = Math.min(6, Math.max(0, Math.ceil(-Math.log10(step / 1e6) - 1e-9)));
  return `${(t / 1e6).toFixed(digits)} ms`;
}

function hue(stack: number): number {
  let x = (stack + 1) * 2654435761;
  x ^= x >>> 15;
  return (x >>> 0) % 360;
}

function niceStep(min: number): number {
  const p = Math.pow(10, Math.floor(Math.log10(Math.max(min, 1e-6))));
  for (const m of [1, 2, 5, 10]) if (m * p >= min) return m * p;
  return 10 * p;
}

function byteStep(min: number): number {
  let s = 1;
  while (s * 2 <= min) s *= 2;
  return s * 2;
}

function hex(x: number): string {
  return Number.isFinite(x) ? `0x${x.toString(16)}` : '?';
}

export class MemoryView {
  readonly root: HTMLElement;
  private readonly canvas: HTMLCanvasElement;
  private readonly ctx: CanvasRenderingContext2D;
  private readonly segCanvas: HTMLCanvasElement;
  private readonly segCtx: CanvasRenderingContext2D;
  private readonly head: HTMLElement;
  private readonly stackBox: HTMLElement;
  private readonly oomBox: HTMLElement;
  private readonly segInfo: HTMLElement;
  private readonly status: HTMLElement;
  private readonly deviceSel: HTMLSelectElement;
  private model: MemoryModel | null = null;
  private loader: StackLoader | null = null;
  private viewStart = 0;
  private nsPerPx = 1;
  private width = 800;
  private frame = 0;
  private drag: { x: number; start: number; moved: boolean } | null = null;
  private rects: Rect[] = [];
  private hoverAlloc = -1;
  /** Allocation whose stack stays in the panel (clicked), or -1 (the panel follows the pointer). */
  private pinnedAlloc = -1;
  /** Opens a frame's `file:line` in the Source view; frames are plain text without it. */
  onSource: ((location: string) => void) | null = null;
  private chosen: number | null = null;
  private segAllocs: { a: number; x0: number; x1: number; y: number }[] = [];
  private readonly stacks = new Map<number, Promise<StackFrame[]>>();
  /** Called with a device index when the user picks another device. */
  onDevice: (device: number) => void = () => {};

  constructor() {
    this.canvas = h('canvas', { 'data-testid': 'memory-canvas', tabindex: 0, class: 'timeline-canvas' });
    this.segCanvas = h('canvas', { 'data-testid': 'memory-segments', class: 'timeline-canvas' });
    const ctx = this.canvas.getContext('2d', { alpha: false });
    const sctx = this.segCanvas.getContext('2d', { alpha: false });
    if (ctx === null || sctx === null) throw new Error('canvas 2d context unavailable');
    this.ctx = ctx;
    this.segCtx = sctx;
    this.head = h('div', { class: 'cards' });
    this.status = h('span', { class: 'muted status', 'data-testid': 'memory-status' });
    this.deviceSel = h('select', { 'data-testid': 'memory-device', class: 'filter' });
    this.deviceSel.addEventListener('change', () => this.onDevice(Number(this.deviceSel.value)));
    this.stackBox = h('div', { class: 'details mono small', 'data-testid': 'memory-stack' },
      h('div', { class: 'muted' }, 'Hover an allocation to see the stack that allocated it.'));
    this.oomBox = h('div', { class: 'small' });
    this.segInfo = h('div', { class: 'muted small', 'data-testid': 'memory-state' }, 'Click the chart to see the segments at that time.');
    this.root = h('div', { class: 'timeline memory' },
      this.head,
      h('div', { class: 'timeline-bar' },
        h('label', { class: 'small muted' }, 'Device ', this.deviceSel),
        h('button', { class: 'btn small', onclick: () => this.fit(), title: 'Whole trace (key: 0)' }, 'Fit'),
        h('button', { class: 'btn small', onclick: () => this.zoomBy(0.5, GUTTER + this.plotWidth() / 2) }, '+'),
        h('button', { class: 'btn small', onclick: () => this.zoomBy(2, GUTTER + this.plotWidth() / 2) }, '−'),
        h('span', { class: 'muted small hint' }, 'wheel zoom · drag pan · hover: stack · click: pin the stack, segments at that time · times in ms since the first trace entry'),
        this.status),
      h('div', { class: 'timeline-wrap' }, this.canvas),
      this.oomBox,
      h('h3', {}, 'Stack of the allocation'),
      this.stackBox,
      h('h3', {}, 'Segments and blocks'),
      this.segInfo,
      h('div', { class: 'timeline-wrap' }, this.segCanvas));
    this.canvas.addEventListener('wheel', (e) => this.onWheel(e), { passive: false });
    this.canvas.addEventListener('mousedown', (e) => {
      this.drag = { x: e.clientX, start: this.viewStart, moved: false };
    });
    window.addEventListener('mousemove', (e) => this.onMove(e));
    window.addEventListener('mouseup', (e) => this.onUp(e));
    this.canvas.addEventListener('keydown', (e) => {
      if (e.key === '0') this.fit();
      else if (e.key === 'w') this.zoomBy(0.5, GUTTER + this.plotWidth() / 2);
      else if (e.key === 's') this.zoomBy(2, GUTTER + this.plotWidth() / 2);
    });
    this.segCanvas.addEventListener('mousemove', (e) => this.onSegMove(e));
    new ResizeObserver(() => this.layout()).observe(this.root);
  }

  /** Shows `model` (null clears); `peak` etc. come from the model itself. */
  setModel(model: MemoryModel | null, loader: StackLoader | null, title = ''): void {
    this.model = model;
    this.loader = loader;
    this.stacks.clear();
    this.hoverAlloc = -1;
    this.pinnedAlloc = -1;
    this.chosen = null;
    this.renderHead(title);
    this.renderOoms();
    this.stackBox.replaceChildren(h('div', { class: 'muted' }, 'Hover an allocation to see the stack that allocated it.'));
    this.layout();
    this.fit();
    if (model !== null) this.choose(model.peakAllocatedAt);
  }

  private renderHead(title: string): void {
    const m = this.model;
    if (m === null) {
      this.head.replaceChildren();
      this.deviceSel.replaceChildren();
      return;
    }
    this.deviceSel.replaceChildren(...m.devices.map((d) => h('option', { value: d, selected: d === m.device }, `${d}`)));
    const card = (label: string, value: string, testid: string, raw: string | number): HTMLElement =>
      h('div', { class: 'card' }, h('div', { class: 'card-label' }, label),
        h('div', { class: 'card-value', 'data-testid': testid, 'data-value': raw, title: `${raw}` }, value));
    this.head.replaceChildren(
      title ? h('div', { class: 'muted small', style: 'flex-basis:100%' }, title) : '',
      card('Peak allocated', bytes(m.peakAllocated), 'memory-peak', m.peakAllocated),
      card('Peak reserved', bytes(m.peakReserved), 'memory-peak-reserved', m.peakReserved),
      card('Trace entries', int(m.times.length), 'memory-events', m.times.length),
      card('Allocations', int(m.allocs.count), 'memory-allocs', m.allocs.count),
      card('Trace span', msText(m.end), 'memory-span', m.end),
      card('OOMs', int(m.ooms.length), 'memory-ooms', m.ooms.length),
    );
  }

  private renderOoms(): void {
    const m = this.model;
    if (m === null || m.ooms.length === 0) {
      this.oomBox.replaceChildren();
      return;
    }
    this.oomBox.replaceChildren(h('ul', { class: 'problems' }, m.ooms.map((o) => h('li', {
      class: 'problem sev-error', 'data-testid': 'memory-oom', 'data-t': o.t,
      onclick: () => {
        this.nsPerPx = Math.max(1, (m.end || 1) / 50 / this.plotWidth());
        this.viewStart = o.t - (this.plotWidth() / 2) * this.nsPerPx;
        this.choose(o.t);
        this.request();
      },
    }, h('span', { class: 'sev' }, 'OOM'), ` at ${msText(o.t)}: ${bytes(o.size)} requested`,
    o.deviceFree !== null ? `, ${bytes(o.deviceFree)} free on the device` : '', ' (click to zoom)'))));
  }

  private plotWidth(): number {
    return Math.max(50, this.width - GUTTER);
  }

  fit(): void {
    const m = this.model;
    if (m === null) return;
    const span = Math.max(m.end, 1);
    this.viewStart = -span * 0.01;
    this.nsPerPx = (span * 1.02) / this.plotWidth();
    this.request();
  }

  private zoomBy(f: number, xCss: number): void {
    const m = this.model;
    if (m === null) return;
    const px = Math.max(0, xCss - GUTTER);
    const t = this.viewStart + px * this.nsPerPx;
    this.nsPerPx = Math.min(Math.max(this.nsPerPx * f, 1e-2), (Math.max(m.end, 1) * 2) / this.plotWidth());
    this.viewStart = t - px * this.nsPerPx;
    this.request();
  }

  private onWheel(e: WheelEvent): void {
    if (this.model === null) return;
    e.preventDefault();
    const r = this.canvas.getBoundingClientRect();
    if (Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
      this.viewStart += e.deltaX * this.nsPerPx;
      this.request();
      return;
    }
    this.zoomBy(Math.exp(e.deltaY * 0.002), e.clientX - r.left);
  }

  private onMove(e: MouseEvent): void {
    if (this.drag !== null) {
      const dx = e.clientX - this.drag.x;
      if (Math.abs(dx) > 3) this.drag.moved = true;
      if (this.drag.moved) {
        this.viewStart = this.drag.start - dx * this.nsPerPx;
        this.request();
      }
      return;
    }
    const r = this.canvas.getBoundingClientRect();
    const x = e.clientX - r.left;
    const y = e.clientY - r.top;
    if (x < 0 || y < 0 || x > r.width || y > r.height) return;
    this.hover(this.hitAt(x - GUTTER, y));
  }

  private onUp(e: MouseEvent): void {
    const d = this.drag;
    this.drag = null;
    if (d === null || d.moved || this.model === null) return;
    const r = this.canvas.getBoundingClientRect();
    const x = e.clientX - r.left - GUTTER;
    if (x < 0) return;
    // A click on an allocation pins its stack (its frames can then be clicked); elsewhere unpins.
    const a = this.hitAt(x, e.clientY - r.top);
    this.pinnedAlloc = a;
    if (a >= 0) this.showAlloc(a, true);
    this.choose(this.viewStart + x * this.nsPerPx);
  }

  private hitAt(x: number, y: number): number {
    const m = this.model;
    if (m === null) return -1;
    for (let i = this.rects.length - 1; i >= 0; i--) {
      const q = this.rects[i];
      if (q === undefined) continue;
      const y0 = this.yOf(q.y1);
      const y1 = this.yOf(q.y0);
      if (x >= q.x0 - 0.5 && x <= Math.max(q.x1, q.x0 + 1) + 0.5 && y >= y0 - 0.5 && y <= Math.max(y1, y0 + 1) + 0.5) return q.a;
    }
    return -1;
  }

  private yOf(b: number): number {
    const m = this.model;
    const max = (m?.maxBytes ?? 1) * 1.05;
    return AXIS_H + CHART_H - (b / max) * (CHART_H - 6);
  }

  /** Shows allocation `a` (or nothing) in the stack panel. */
  private hover(a: number): void {
    if (a === this.hoverAlloc) return;
    this.hoverAlloc = a;
    this.request();
    if (this.pinnedAlloc < 0) this.showAlloc(a);
  }

  private showAlloc(a: number, pinned = false): void {
    const m = this.model;
    if (m === null || a < 0) return;
    const A = m.allocs;
    const st = A.stack[a] ?? -1;
    const s = A.start[a] ?? 0;
    const e = A.end[a] ?? 0;
    const when = `${Number.isFinite(s) ? `allocated at ${msText(s)}` : 'allocated before the trace began'} · ${Number.isFinite(e) ? `freed at ${msText(e)}` : 'still allocated at the snapshot'}`;
    const headLine = h('div', { 'data-testid': 'memory-alloc', 'data-size': A.size[a] ?? 0, 'data-address': A.addr[a] ?? 0, 'data-stack': st, 'data-pinned': String(pinned) },
      `${bytes(A.size[a] ?? 0)} (${int(A.size[a] ?? 0)} B) at ${hex(A.addr[a] ?? NaN)} · ${when}`,
      h('span', { class: 'muted' }, pinned ? ' · pinned (click the chart elsewhere to follow the pointer again)' : ' · click it to pin this stack'));
    const frames = h('ol', { class: 'frames', 'data-testid': 'memory-frames' });
    this.stackBox.replaceChildren(headLine, frames);
    if (st < 0 || this.loader === null) {
      frames.append(h('li', { class: 'muted' }, 'no stack recorded'));
      return;
    }
    let p = this.stacks.get(st);
    if (p === undefined) {
      p = this.loader(st);
      this.stacks.set(st, p);
    }
    p.then((list) => {
      if (this.hoverAlloc !== a && this.stackBox.contains(frames) === false) return;
      frames.replaceChildren(...(list.length > 0 ? list.map((f) => this.frameItem(f)) : [h('li', { class: 'muted' }, 'empty stack')]));
    }, (err: unknown) => frames.replaceChildren(h('li', { class: 'muted' }, `stack unavailable: ${String(err)}`)));
  }

  /**
   * A frame: its file:line is a button into the Source view when the file and line are known.
   * PyTorch records frames it could not symbolise (native code) as file `??`, line 0: no source to open.
   */
  private frameItem(f: StackFrame): HTMLElement {
    const open = this.onSource;
    const where = `${f.file || '?'}:${f.line ?? '?'}`;
    const rest = ` ${f.name || '?'}${f.fx ? `  [fx ${f.fx}]` : ''}`;
    const unknown = f.file === '' || /^\?+$/.test(f.file) || f.line === null || f.line <= 0;
    if (open === null || unknown) return h('li', { 'data-testid': 'memory-frame' }, where, rest);
    const loc = `${f.file}:${f.line}`;
    return h('li', { 'data-testid': 'memory-frame' },
      h('button', { class: 'frame-link mono', 'data-testid': 'memory-frame-link', 'data-location': loc, title: `Open ${loc} in the Source view`, onclick: () => open(loc) }, where),
      rest);
  }

  private choose(t: number): void {
    this.chosen = t;
    this.request();
    this.drawSegments();
  }

  private layout(): void {
    const w = Math.max(300, Math.floor(this.root.clientWidth || 800));
    const dpr = window.devicePixelRatio || 1;
    const hgt = AXIS_H + CHART_H + 4;
    if (w !== this.width || this.canvas.width !== Math.round(w * dpr)) {
      this.width = w;
      this.canvas.style.width = `${w}px`;
      this.canvas.style.height = `${hgt}px`;
      this.canvas.width = Math.round(w * dpr);
      this.canvas.height = Math.round(hgt * dpr);
      this.drawSegments();
    }
    this.request();
  }

  private request(): void {
    if (this.frame !== 0) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      const t = performance.now();
      this.draw();
      this.canvas.dataset['drawMs'] = (performance.now() - t).toFixed(2);
    });
  }

  /** Per pixel column: max of `vals` over the entries in the column, holding the value in force. */
  private columnMax(vals: Float64Array, t0: number, cols: number): Float64Array {
    const m = this.model;
    const out = new Float64Array(cols).fill(NaN);
    if (m === null || m.times.length === 0) return out;
    const n = m.times.length;
    let k = lowerBound(m.times, t0);
    let cur = k > 0 ? (vals[k - 1] ?? NaN) : NaN;
    for (let c = 0; c < cols; c++) {
      const tEnd = t0 + (c + 1) * this.nsPerPx;
      let v = cur;
      while (k < n && (m.times[k] ?? 0) < tEnd) {
        cur = vals[k] ?? cur;
        v = Number.isNaN(v) ? cur : Math.max(v, cur);
        k++;
      }
      const tc = t0 + c * this.nsPerPx;
      out[c] = tc > m.end + this.nsPerPx || tEnd < 0 ? NaN : v;
    }
    return out;
  }

  private draw(): void {
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
    ctx.font = '11px system-ui, sans-serif';
    ctx.textBaseline = 'middle';

    // Byte grid.
    const max = m.maxBytes * 1.05;
    const bstep = byteStep(max / 6);
    ctx.strokeStyle = GRID;
    ctx.fillStyle = MUTED;
    ctx.textAlign = 'right';
    ctx.beginPath();
    for (let b = 0; b <= max; b += bstep) {
      const y = Math.round(this.yOf(b)) + 0.5;
      ctx.moveTo(GUTTER, y);
      ctx.lineTo(W, y);
      ctx.fillText(bytes(b), GUTTER - 6, y);
    }
    ctx.stroke();
    ctx.textAlign = 'left';
    // Time axis.
    const step = niceStep(90 * this.nsPerPx);
    ctx.beginPath();
    for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
      const x = Math.round(GUTTER + (t - t0) / this.nsPerPx) + 0.5;
      ctx.moveTo(x, AXIS_H - 5);
      ctx.lineTo(x, AXIS_H + CHART_H);
      ctx.fillText(msTick(t, step), x + 3, AXIS_H / 2);
    }
    ctx.stroke();

    ctx.save();
    ctx.beginPath();
    ctx.rect(GUTTER, AXIS_H, plotW, CHART_H);
    ctx.clip();
    const cols = Math.ceil(plotW) + 1;
    const alloc = this.columnMax(m.allocated, t0, cols);
    const resv = this.columnMax(m.reserved, t0, cols);
    // Small-allocation band: everything under the allocated curve; large rectangles cover their part.
    ctx.fillStyle = BAND;
    for (let c = 0; c < cols; c++) {
      const v = alloc[c] ?? NaN;
      if (!Number.isFinite(v) || v <= 0) continue;
      const y = this.yOf(v);
      ctx.fillRect(GUTTER + c, y, 1, this.yOf(0) - y);
    }
    const bytesPerPx = max / (CHART_H - 6);
    const lay = layoutLarge(m, bytesPerPx * 2, t0, t1, this.nsPerPx);
    this.rects = lay.rects;
    for (const q of lay.rects) {
      const st = m.allocs.stack[q.a] ?? -1;
      const pre = !Number.isFinite(m.allocs.start[q.a] ?? 0);
      const hov = q.a === this.hoverAlloc;
      ctx.fillStyle = hov ? '#ffffff' : `hsl(${hue(st)} ${pre ? 25 : 60}% ${pre ? 40 : 50}%)`;
      const y0 = this.yOf(q.y1);
      const y1 = this.yOf(q.y0);
      ctx.fillRect(GUTTER + q.x0, y0, Math.max(1, q.x1 - q.x0), Math.max(1, y1 - y0 - (y1 - y0 > 3 ? 0.5 : 0)));
    }
    // Allocated and reserved lines.
    const top = max / 1.05 * 1.04;
    const line = (vals: Float64Array, color: string, cap = Infinity): void => {
      ctx.strokeStyle = color;
      ctx.lineWidth = 1.5;
      ctx.beginPath();
      let on = false;
      for (let c = 0; c < cols; c++) {
        const v = vals[c] ?? NaN;
        if (!Number.isFinite(v)) {
          on = false;
          continue;
        }
        const y = this.yOf(Math.min(v, cap));
        if (!on) ctx.moveTo(GUTTER + c, y);
        else ctx.lineTo(GUTTER + c, y);
        ctx.lineTo(GUTTER + c + 1, y);
        on = true;
      }
      ctx.stroke();
      ctx.lineWidth = 1;
    };
    line(resv, '#f0a04b', top);
    line(alloc, '#e6edf3');
    // OOM markers.
    ctx.strokeStyle = '#ff4d4f';
    ctx.fillStyle = '#ff4d4f';
    for (const o of m.ooms) {
      const x = GUTTER + (o.t - t0) / this.nsPerPx;
      if (x < GUTTER - 5 || x > W + 5) continue;
      ctx.beginPath();
      ctx.moveTo(Math.round(x) + 0.5, AXIS_H);
      ctx.lineTo(Math.round(x) + 0.5, AXIS_H + CHART_H);
      ctx.stroke();
      ctx.beginPath();
      ctx.moveTo(x - 5, AXIS_H);
      ctx.lineTo(x + 5, AXIS_H);
      ctx.lineTo(x, AXIS_H + 8);
      ctx.fill();
    }
    // Chosen time.
    if (this.chosen !== null) {
      const x = Math.round(GUTTER + (this.chosen - t0) / this.nsPerPx) + 0.5;
      ctx.strokeStyle = '#58a6ff';
      ctx.setLineDash([4, 3]);
      ctx.beginPath();
      ctx.moveTo(x, AXIS_H);
      ctx.lineTo(x, AXIS_H + CHART_H);
      ctx.stroke();
      ctx.setLineDash([]);
    }
    ctx.restore();
    // Legend.
    ctx.font = '11px system-ui, sans-serif';
    ctx.fillStyle = '#e6edf3';
    ctx.fillText('— allocated', GUTTER + 8, AXIS_H + 10);
    ctx.fillStyle = '#f0a04b';
    ctx.fillText(m.peakReserved > top ? `— reserved (peak ${bytes(m.peakReserved)}, held at the top)` : '— reserved', GUTTER + 80, AXIS_H + 10);
    ctx.fillStyle = '#8ea3c0';
    ctx.fillText(`▮ ${count(lay.smallCount, 'allocation')} < ${bytes(bytesPerPx * 2)} (band)`, GUTTER + (m.peakReserved > top ? 330 : 150), AXIS_H + 10);

    // Hooks for tests: where the largest drawn rectangle is, how much was drawn.
    let best: Rect | null = null;
    for (const q of lay.rects) if (q.x1 - q.x0 >= 2 && (best === null || (q.y1 - q.y0) * (q.x1 - q.x0) > (best.y1 - best.y0) * (best.x1 - best.x0))) best = q;
    const ds = this.canvas.dataset;
    ds['rects'] = String(lay.rects.length);
    ds['large'] = String(lay.largeCount);
    ds['small'] = String(lay.smallCount);
    ds['gutter'] = String(GUTTER);
    ds['nsPerPx'] = String(this.nsPerPx);
    ds['viewStart'] = String(this.viewStart);
    ds['probe'] = best === null ? '' : JSON.stringify({
      x: GUTTER + Math.max(0, best.x0) + Math.min(plotW, best.x1 - Math.max(0, best.x0)) / 2,
      y: (this.yOf(best.y0) + this.yOf(best.y1)) / 2,
      stack: m.allocs.stack[best.a] ?? -1,
      size: m.allocs.size[best.a] ?? 0,
    });
    this.status.textContent = ` ${msText(Math.max(t0, 0))} – ${msText(Math.min(t1, m.end))} · ${msText(t1 - t0)} visible · ${count(lay.largeCount, 'large allocation')} drawn · t = 0 is ${wallClock(m.t0)}`;
  }

  private drawSegments(): void {
    const m = this.model;
    const ctx = this.segCtx;
    const dpr = window.devicePixelRatio || 1;
    const W = this.width;
    if (m === null || this.chosen === null) {
      this.segCanvas.width = Math.round(W * dpr);
      this.segCanvas.height = Math.round(SEG_ROW * dpr);
      this.segCanvas.style.width = `${W}px`;
      this.segCanvas.style.height = `${SEG_ROW}px`;
      return;
    }
    const t = this.chosen;
    const st = stateAt(m, t);
    const rows = [...st.segments];
    const A = m.allocs;
    const shown = rows.slice(0, SEG_ROWS_MAX);
    const extraRow = st.orphans.length > 0 ? 1 : 0;
    const H = (shown.length + extraRow + 1) * SEG_ROW;
    this.segCanvas.width = Math.round(W * dpr);
    this.segCanvas.height = Math.round(H * dpr);
    this.segCanvas.style.width = `${W}px`;
    this.segCanvas.style.height = `${H}px`;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = BG;
    ctx.fillRect(0, 0, W, H);
    ctx.font = '11px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    const maxSeg = rows.reduce((a, s) => Math.max(a, s.size), 1);
    const barW = Math.max(50, W - SEG_LABEL - 8);
    this.segAllocs = [];
    let reserved = 0;
    let used = 0;
    let blocks = 0;
    for (const s of rows) {
      reserved += s.size;
      for (const a of s.blocks) used += A.size[a] ?? 0;
      blocks += s.blocks.length;
    }
    for (const a of st.orphans) used += A.size[a] ?? 0;
    shown.forEach((s, r) => {
      const y = r * SEG_ROW;
      ctx.fillStyle = MUTED;
      ctx.fillText(`${hex(s.addr)} · ${bytes(s.size)}`, 6, y + SEG_ROW / 2);
      const w = Math.max(2, (s.size / maxSeg) * barW);
      ctx.fillStyle = '#232a33';
      ctx.fillRect(SEG_LABEL, y + 2, w, SEG_ROW - 4);
      for (const a of s.blocks) {
        const x0 = SEG_LABEL + (((A.addr[a] ?? 0) - s.addr) / maxSeg) * barW;
        const bw = Math.max(1, ((A.size[a] ?? 0) / maxSeg) * barW);
        ctx.fillStyle = a === this.hoverAlloc ? '#ffffff' : `hsl(${hue(A.stack[a] ?? -1)} 60% 50%)`;
        ctx.fillRect(x0, y + 3, bw - (bw > 3 ? 0.5 : 0), SEG_ROW - 6);
        this.segAllocs.push({ a, x0, x1: x0 + bw, y });
      }
    });
    let y = shown.length * SEG_ROW;
    if (extraRow) {
      ctx.fillStyle = MUTED;
      ctx.fillText(`${count(st.orphans.length, 'allocation')} outside known segments`, 6, y + SEG_ROW / 2);
      y += SEG_ROW;
    }
    ctx.fillStyle = MUTED;
    ctx.fillText(rows.length > shown.length ? `… ${count(rows.length - shown.length, 'more segment', 'more segments')}` : '', 6, y + SEG_ROW / 2);
    const ds = this.segCanvas.dataset;
    ds['segments'] = String(rows.length);
    ds['blocks'] = String(blocks);
    ds['t'] = String(t);
    this.segInfo.textContent = `At ${msText(t)}: ${count(rows.length, 'segment')} (${bytes(reserved)} reserved), ${count(blocks + st.orphans.length, 'live allocation')} (${bytes(used)}). Bars are to scale with the largest segment; hover a block for its stack.`;
  }

  private onSegMove(e: MouseEvent): void {
    const r = this.segCanvas.getBoundingClientRect();
    const x = e.clientX - r.left;
    const y = e.clientY - r.top;
    const hit = this.segAllocs.find((q) => x >= q.x0 - 0.5 && x <= q.x1 + 0.5 && y >= q.y && y < q.y + SEG_ROW);
    if (hit !== undefined && hit.a !== this.hoverAlloc) {
      this.hoverAlloc = hit.a;
      if (this.pinnedAlloc < 0) this.showAlloc(hit.a);
      this.request();
    }
  }
}

/** Unix ns → "2023-11-14 22:13:20.000 UTC" (wall clock of the snapshot host). */
export function wallClock(unixNs: bigint): string {
  if (unixNs === 0n) return 'the first entry';
  const ms = Number(unixNs / 1_000_000n);
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? `${unixNs} ns` : `${d.toISOString().replace('T', ' ').replace('Z', '')} UTC`;
}
