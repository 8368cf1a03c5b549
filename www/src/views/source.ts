// Source view: the picked .py files (and .tar.gz members) with syntax highlighting, line numbers and
// the device time of the instructions each line produced (Instruction nki_source_location, else
// bir_debug_info_source_location; summed in the core, crate::source_code::heat_of_parquet).
//
// Safety: the file text is the user's, and may contain markup. highlight.js is used only as a
// tokenizer: we read its token tree (result._emitter.root: raw strings and {scope, children}
// nodes) and build text nodes from it ourselves. Its HTML output is never used, so nothing in a
// file can become an element. If the token tree is not where we expect it, we show plain text.

import hljs from 'highlight.js/lib/core';
import python from 'highlight.js/lib/languages/python';
import type { LineHeat, SourceFileInfo, SourceHeat, SourceInputLoad, SourceListing, SourceResolved } from '../api.ts';
import { h, nodes } from '../dom.ts';
import { int, ns } from '../format.ts';
import { filesFromInput } from '../picker.ts';
import type { PickedFile } from '../protocol.ts';

hljs.registerLanguage('python', python);

/** What the view asks the worker for (main.ts passes the CoreClient's methods). */
export interface SourceBackend {
  sources(): Promise<SourceListing>;
  addSources(files: PickedFile[]): Promise<SourceInputLoad[]>;
  text(path: string): Promise<string | null>;
  resolve(locations: string[]): Promise<SourceResolved[]>;
}

/** Files larger than this are shown without highlighting (tokenizing is the slow part). */
const HIGHLIGHT_MAX_CHARS = 1 << 20;
const HIGHLIGHT_MAX_LINES = 20_000;

type TokNode = string | { scope?: string; children: TokNode[] };

function isTok(n: unknown): n is TokNode {
  if (typeof n === 'string') return true;
  if (typeof n !== 'object' || n === null) return false;
  const o = n as { scope?: unknown; children?: unknown };
  return Array.isArray(o.children) && (o.scope === undefined || typeof o.scope === 'string');
}

/** One run of text with the token class it takes. */
interface Seg {
  text: string;
  cls: string;
}

/** `hl-keyword`, `hl-title` …: the first part of the innermost highlight.js scope. */
function scopeClass(scope: string | undefined): string {
  if (scope === undefined || scope === '') return '';
  const first = scope.split('.')[0] ?? '';
  return /^[a-z_-]+$/i.test(first) ? `hl-${first}` : '';
}

/** The token tree of `text` as python, or null when highlight.js fails or changes shape. */
function tokenTree(text: string): TokNode | null {
  try {
    const r = hljs.highlight(text, { language: 'python', ignoreIllegals: true });
    const root = (r as unknown as { _emitter?: { root?: unknown } })._emitter?.root;
    return isTok(root) ? root : null;
  } catch {
    return null;
  }
}

/**
 * Lines of `text` as runs of classed text. Highlighted when small enough and tokenizable; the
 * concatenated runs of every line always equal the file's text (checked; plain text otherwise).
 */
export function highlightLines(text: string): Seg[][] {
  const plain = (): Seg[][] => text.split('\n').map((l) => [{ text: l, cls: '' }]);
  if (text.length > HIGHLIGHT_MAX_CHARS) return plain();
  let newlines = 0;
  for (let i = text.indexOf('\n'); i >= 0 && newlines <= HIGHLIGHT_MAX_LINES; i = text.indexOf('\n', i + 1)) newlines++;
  if (newlines >= HIGHLIGHT_MAX_LINES) return plain();
  const root = tokenTree(text);
  if (root === null) return plain();
  const lines: Seg[][] = [[]];
  const walk = (n: TokNode, cls: string, depth: number): void => {
    if (depth > 200) return;
    if (typeof n === 'string') {
      const parts = n.split('\n');
      parts.forEach((p, i) => {
        if (i > 0) lines.push([]);
        if (p !== '') lines[lines.length - 1]?.push({ text: p, cls });
      });
      return;
    }
    const c = scopeClass(n.scope) || cls;
    for (const ch of n.children) if (isTok(ch)) walk(ch, c, depth + 1);
  };
  walk(root, '', 0);
  // The runs must reproduce the text exactly, or the line numbers would lie.
  const joined = lines.map((l) => l.map((s) => s.text).join('')).join('\n');
  return joined === text ? lines : plain();
}

/** Heat of one line of the shown file (summed over the locations that resolve to it). */
interface Heat {
  ns: number;
  count: number;
  engines: Map<string, { ns: number; count: number }>;
  locations: string[];
}

export class SourceView {
  readonly root: HTMLElement;
  private readonly files: HTMLElement;
  private readonly header: HTMLElement;
  private readonly message: HTMLElement;
  private readonly code: HTMLElement;
  private readonly summary: HTMLElement;
  private readonly hot: HTMLElement;
  private readonly goto: HTMLInputElement;
  private listing: SourceListing | null = null;
  private heat: SourceHeat | null = null;
  /** debug path → resolution, per capture. */
  private readonly resolved = new Map<string, SourceResolved>();
  private shown: { path: string; lines: number; rows: HTMLElement[] } | null = null;
  private seq = 0;

  constructor(private readonly backend: SourceBackend) {
    const folderInput = h('input', { type: 'file', webkitdirectory: true, multiple: true, hidden: true, 'data-testid': 'source-folder-input' });
    const filesInput = h('input', { type: 'file', multiple: true, accept: '.py,.tar.gz,.tgz,.tar', hidden: true, 'data-testid': 'source-files-input' });
    for (const input of [folderInput, filesInput]) {
      input.addEventListener('change', () => {
        if (input.files !== null && input.files.length > 0) void this.add(filesFromInput(input.files));
        input.value = '';
      });
    }
    this.files = h('div', { class: 'src-files', 'data-testid': 'source-files' });
    this.header = h('div', { class: 'src-header', 'data-testid': 'source-header' });
    this.message = h('div', { class: 'src-message', 'data-testid': 'source-message', hidden: true });
    this.summary = h('div', { class: 'muted small', 'data-testid': 'source-summary' });
    this.hot = h('div', { class: 'src-hot', 'data-testid': 'source-hot' });
    this.code = h('div', { class: 'src-code', 'data-testid': 'source-code', tabindex: 0 });
    this.goto = h('input', { type: 'number', min: 1, class: 'src-goto', placeholder: 'line', 'data-testid': 'source-goto', title: 'Go to line (Enter)' });
    this.goto.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') this.gotoLine(Number(this.goto.value));
    });
    this.root = h('div', { class: 'source-view', 'data-state': 'idle' },
      h('div', { class: 'src-side' },
        h('div', { class: 'src-add' },
          h('button', { class: 'btn small', 'data-testid': 'source-add-folder', onclick: () => folderInput.click(), title: 'Pick a folder that contains your kernel sources' }, 'Add source folder…'),
          h('button', { class: 'btn small', 'data-testid': 'source-add-files', onclick: () => filesInput.click(), title: 'Pick .py files or a .tar.gz of your source tree' }, 'Add .py / .tar.gz…'),
          folderInput, filesInput),
        this.summary,
        this.files),
      h('div', { class: 'src-main' },
        h('div', { class: 'src-bar' }, this.header, h('span', { class: 'spacer' }),
          h('label', { class: 'muted small' }, 'Go to line ', this.goto),
          h('button', { class: 'btn small', onclick: () => this.gotoLine(Number(this.goto.value)) }, 'Go')),
        this.message,
        this.hot,
        this.code));
    this.clear();
  }

  private setState(s: 'idle' | 'loading' | 'ready' | 'missing' | 'error'): void {
    this.root.dataset['state'] = s;
  }

  /** A new capture: forget files, resolutions and heat. */
  reset(): void {
    this.listing = null;
    this.heat = null;
    this.resolved.clear();
    this.clear();
  }

  private clear(): void {
    this.shown = null;
    this.root.dataset['file'] = '';
    this.root.dataset['line'] = '';
    this.header.replaceChildren(h('span', { class: 'muted' }, 'No file open.'));
    this.code.replaceChildren();
    this.hot.replaceChildren();
    this.message.hidden = true;
    this.setState('idle');
  }

  /** Device time per location of the device profile on screen (null: none). */
  setHeat(heat: SourceHeat | null): void {
    this.heat = heat;
    void this.refresh();
  }

  /** Loads the file list (the core indexes the picked sources on first use) and redraws it. */
  async refresh(): Promise<void> {
    try {
      this.listing = await this.backend.sources();
      await this.resolveHeatPaths();
    } catch (e) {
      this.showMessage(`Could not read the source files: ${e instanceof Error ? e.message : String(e)}`, 'error');
      return;
    }
    this.renderFiles();
    this.renderSummary();
    const s = this.shown;
    if (s !== null) await this.openFile(s.path, Number(this.root.dataset['line']) || undefined);
  }

  /** Adds picked source files or archives to the capture, then shows them. */
  private async add(files: PickedFile[]): Promise<void> {
    this.setState('loading');
    try {
      const loads = await this.backend.addSources(files);
      const errs = loads.filter((l) => l.error);
      this.resolved.clear();
      const pending = this.root.dataset['pendingLocation'];
      await this.refresh();
      if (errs.length > 0) this.showMessage(errs.map((l) => `${l.file}: ${l.error ?? ''}`).join('\n'), 'error');
      else if (pending) await this.openLocation(pending);
    } catch (e) {
      this.showMessage(`Could not add the sources: ${e instanceof Error ? e.message : String(e)}`, 'error');
    }
  }

  private async resolveHeatPaths(): Promise<void> {
    const want = [...new Set((this.heat?.lines ?? []).map((l) => l.path))].filter((p) => !this.resolved.has(p));
    if (want.length === 0) return;
    const res = await this.backend.resolve(want);
    res.forEach((r, i) => this.resolved.set(want[i] ?? r.debug_path, r));
  }

  /** Heat lines whose path resolves to indexed file `path`. */
  private heatFor(path: string): LineHeat[] {
    return (this.heat?.lines ?? []).filter((l) => this.resolved.get(l.path)?.files.includes(path));
  }

  private renderSummary(): void {
    const heat = this.heat;
    const n = this.listing?.files.length ?? 0;
    const parts: (Node | string)[] = [`${int(n)} source file${n === 1 ? '' : 's'}`];
    if (heat !== null && heat.count > 0) {
      const attributed = heat.total_ns - heat.unattributed_ns;
      parts.push(` · ${ns(attributed)} of ${ns(heat.total_ns)} instruction time has a source line (${pct(attributed, heat.total_ns)})`);
      const missing = [...new Set(heat.lines.map((l) => l.path))].filter((p) => (this.resolved.get(p)?.files.length ?? 0) === 0);
      if (missing.length > 0) {
        parts.push(h('div', { class: 'src-missing', 'data-testid': 'source-missing' },
          'Not picked (add a folder or .tar.gz containing them): ',
          ...missing.map((p) => h('div', { class: 'mono' }, p))));
      }
    }
    this.summary.replaceChildren(...parts);
  }

  private renderFiles(): void {
    const files = this.listing?.files ?? [];
    if (files.length === 0) {
      this.files.replaceChildren(h('div', { class: 'muted small' }, 'No .py or .tar.gz source was picked. Add the folder with your kernel sources (or a .tar.gz of it) to see the lines the device time came from.'));
      return;
    }
    const totals = new Map<string, number>();
    for (const f of files) totals.set(f.path, this.heatFor(f.path).reduce((a, l) => a + l.total_ns, 0));
    const sorted = [...files].sort((a, b) => (totals.get(b.path) ?? 0) - (totals.get(a.path) ?? 0) || a.path.localeCompare(b.path));
    this.files.replaceChildren(...sorted.map((f: SourceFileInfo) => {
      const t = totals.get(f.path) ?? 0;
      return h('button', {
        class: `src-file${this.shown?.path === f.path ? ' selected' : ''}`, 'data-testid': 'source-file', 'data-path': f.path, title: f.path,
        onclick: () => void this.openFile(f.path),
      }, h('span', { class: 'src-file-name' }, f.path.replace(/^.*\//, '')),
      h('span', { class: 'muted small' }, `${int(f.lines)} lines${t > 0 ? ` · ${ns(t)}` : ''}`),
      h('span', { class: 'muted small src-file-dir' }, f.path.includes('/') ? f.path.replace(/\/[^/]*$/, '') : ''));
    }));
  }

  private showMessage(text: string, state: 'missing' | 'error', extra: (Node | string)[] = []): void {
    this.message.hidden = false;
    this.message.replaceChildren(h('div', {}, text), ...extra);
    this.message.dataset['kind'] = state;
    this.setState(state);
  }

  /** Opens the file a debug location (`path:line`) names, scrolled to and marking that line. */
  async openLocation(location: string): Promise<void> {
    const seq = ++this.seq;
    this.setState('loading');
    this.root.dataset['pendingLocation'] = location;
    let r: SourceResolved | undefined;
    try {
      if (this.listing === null) {
        this.listing = await this.backend.sources();
        this.renderFiles();
      }
      r = (await this.backend.resolve([location]))[0];
    } catch (e) {
      this.showMessage(`Could not resolve ${location}: ${e instanceof Error ? e.message : String(e)}`, 'error');
      return;
    }
    if (seq !== this.seq || r === undefined) return;
    const file = r.files[0];
    if (file === undefined) {
      const name = r.debug_path.replace(/^.*[/\\]/, '');
      this.clear();
      this.root.dataset['pendingLocation'] = location;
      this.showMessage(`${r.debug_path} (line ${r.line}) is not among the picked files.`, 'missing', [
        h('div', { class: 'muted' }, 'Expected a file named ', h('span', { class: 'mono', 'data-testid': 'source-expected' }, name),
          ' whose path ends like ', h('span', { class: 'mono' }, r.debug_path.replace(/^[/\\]+/, '')), '.'),
        h('div', { class: 'muted' }, 'Add it: pick the folder that contains it (together with the capture, or with “Add source folder…”), or a .tar.gz of your source tree (“Add .py / .tar.gz…”).'),
      ]);
      return;
    }
    delete this.root.dataset['pendingLocation'];
    const ties = r.files.length > 1 ? r.files : [];
    await this.openFile(file, r.line > 0 ? r.line : undefined, seq);
    if (ties.length > 0 && seq === this.seq) {
      this.message.hidden = false;
      this.message.replaceChildren(h('div', {}, `${r.debug_path} matches ${ties.length} picked files equally; showing the first. Others: `),
        ...ties.slice(1).map((p) => h('button', { class: 'btn small', onclick: () => void this.openFile(p, r?.line) }, p)));
    }
  }

  /** Shows indexed file `path`, optionally marking and scrolling to `line` (1-based). */
  async openFile(path: string, line?: number, seq = ++this.seq): Promise<void> {
    this.setState('loading');
    let text: string | null;
    try {
      text = await this.backend.text(path);
      await this.resolveHeatPaths();
    } catch (e) {
      this.showMessage(`Could not read ${path}: ${e instanceof Error ? e.message : String(e)}`, 'error');
      return;
    }
    if (seq !== this.seq) return;
    if (text === null) {
      this.showMessage(`${path} is not among the indexed source files.`, 'missing');
      return;
    }
    this.message.hidden = true;
    const heat = this.lineHeat(path);
    const total = this.heat?.total_ns ?? 0;
    const max = Math.max(1, ...[...heat.values()].map((x) => x.ns));
    const segs = highlightLines(text);
    // A final newline ends the last line; it does not start another one.
    if (text.endsWith('\n') && segs.length > 1 && segs[segs.length - 1]?.length === 0) segs.pop();
    const rows = segs.map((runs, i) => this.row(i + 1, runs, heat.get(i + 1), max, total));
    this.code.replaceChildren(...rows);
    this.shown = { path, lines: rows.length, rows };
    this.root.dataset['file'] = path;
    this.root.dataset['line'] = '';
    const fileNs = [...heat.values()].reduce((a, x) => a + x.ns, 0);
    this.header.replaceChildren(h('span', { class: 'mono strong', 'data-testid': 'source-path' }, path),
      h('span', { class: 'muted small' }, ` · ${int(rows.length)} lines${fileNs > 0 ? ` · ${ns(fileNs)} device time (${pct(fileNs, total)})` : ''}`));
    this.renderHot(heat, total);
    this.renderFiles();
    this.setState('ready');
    if (line !== undefined) this.gotoLine(line);
  }

  private lineHeat(path: string): Map<number, Heat> {
    const out = new Map<number, Heat>();
    for (const l of this.heatFor(path)) {
      if (l.line <= 0) continue;
      let x = out.get(l.line);
      if (x === undefined) out.set(l.line, (x = { ns: 0, count: 0, engines: new Map(), locations: [] }));
      x.ns += Number(l.total_ns);
      x.count += Number(l.count);
      x.locations.push(l.location);
      for (const e of l.engines) {
        const pe = x.engines.get(e.engine) ?? { ns: 0, count: 0 };
        pe.ns += Number(e.total_ns);
        pe.count += Number(e.count);
        x.engines.set(e.engine, pe);
      }
    }
    return out;
  }

  private row(n: number, runs: Seg[], heat: Heat | undefined, max: number, total: number): HTMLElement {
    const code = h('span', { class: 'src-text' }, ...runs.map((r) => (r.cls ? h('span', { class: r.cls }, r.text) : r.text)));
    const cell = h('span', { class: 'src-heat' });
    const row = h('div', { class: 'src-line', 'data-testid': `source-line-${n}`, 'data-line': n },
      h('span', { class: 'src-ln', onclick: () => this.gotoLine(n) }, String(n)), cell, code);
    if (heat !== undefined) {
      const bar = h('span', { class: 'src-bar-fill' });
      bar.style.width = `${Math.max(2, (100 * heat.ns) / max).toFixed(1)}%`;
      const engines = [...heat.engines.entries()].sort((a, b) => b[1].ns - a[1].ns);
      cell.append(h('span', { class: 'src-bar-track' }, bar), h('span', { class: 'src-heat-text' }, `${short(heat.ns)} ${pct(heat.ns, total)}`));
      cell.title = `${int(heat.count)} instructions · ${ns(heat.ns)} (${pct(heat.ns, total)} of all instruction time)\n` +
        engines.map(([e, v]) => `${e || '?'}: ${ns(v.ns)} · ${int(v.count)}`).join('\n');
      row.classList.add('has-heat');
      row.dataset['heatNs'] = String(heat.ns);
      row.dataset['heatCount'] = String(heat.count);
      row.dataset['heatPct'] = total > 0 ? ((100 * heat.ns) / total).toFixed(3) : '0';
      row.dataset['engines'] = engines.map(([e]) => e).join(',');
    }
    return row;
  }

  private renderHot(heat: Map<number, Heat>, total: number): void {
    const top = [...heat.entries()].sort((a, b) => b[1].ns - a[1].ns).slice(0, 8);
    if (top.length === 0) {
      this.hot.replaceChildren(...nodes(this.heat !== null ? h('span', { class: 'muted small' }, 'No instruction of this device profile points at this file.') : null));
      return;
    }
    this.hot.replaceChildren(h('span', { class: 'muted small' }, 'Hottest lines: '),
      ...top.map(([n, x]) => h('button', { class: 'btn small', 'data-testid': 'source-hot-line', 'data-line': n, onclick: () => this.gotoLine(n) },
        `${n} · ${ns(x.ns)} (${pct(x.ns, total)})`)));
  }

  /** Marks line `n` of the shown file and scrolls it into the middle of the code pane. */
  gotoLine(n: number): void {
    const s = this.shown;
    if (s === null || !Number.isFinite(n)) return;
    const k = Math.min(Math.max(1, Math.round(n)), s.lines);
    this.code.querySelector('.src-line.current')?.classList.remove('current');
    this.code.querySelector('[data-testid=source-current]')?.remove();
    const row = s.rows[k - 1];
    if (row === undefined) return;
    row.classList.add('current');
    row.firstElementChild?.prepend(h('span', { class: 'src-marker', 'data-testid': 'source-current', 'data-line': k }, '▶'));
    this.root.dataset['line'] = String(k);
    this.goto.value = String(k);
    if (n > s.lines) {
      this.message.hidden = false;
      this.message.replaceChildren(h('div', {}, `Line ${n} is past the end of this file (${s.lines} lines): is the picked file the version that was compiled?`));
    }
    // Scroll inside the code pane only (the page keeps its place).
    this.code.scrollTop = Math.max(0, row.offsetTop - this.code.clientHeight / 2);
  }
}

/** ns → 3 significant digits with a unit ("251 µs", "1.06 ms"), for the narrow heat column. */
function short(v: number): string {
  const [d, u] = v >= 1e9 ? [1e9, 's'] : v >= 1e6 ? [1e6, 'ms'] : v >= 1e3 ? [1e3, 'µs'] : [1, 'ns'];
  const x = v / d;
  return `${u === 'ns' ? Math.round(x) : Number(x.toPrecision(3))} ${u}`;
}

function pct(part: number, total: number): string {
  if (total <= 0) return '';
  const p = (100 * part) / total;
  return `${p < 0.1 && p > 0 ? p.toFixed(2) : p.toFixed(1)}%`;
}
