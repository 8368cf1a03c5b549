// Table browser: pick any output table and scroll through all its rows (virtual scrolling: only the
// rows on screen exist as elements, fetched from the worker in blocks as you scroll), sort by a column
// (click its header: ascending, descending, table order), filter per column (`>= 1000`, `< 5`, `= 3`, a
// number, or words to contain), jump to a row. Sorting and filtering run in the worker over the stored
// Parquet (crate/src/table_query.rs), which keeps one view of at most `max_rows` row numbers; the page
// holds a few blocks of rows, never a whole column. A click on an Instruction, DmaPacket or
// SemaphoreUpdate row selects and reveals that event on the timeline (`onRowSelect`).

import type { Table } from 'apache-arrow';
import type { ColumnFilter, TableInfo, TableViewInfo } from '../api.ts';
import { h } from '../dom.ts';
import { cell, int } from '../format.ts';
import { opcodeCell } from './opcode.ts';

/** Height of one body row, CSS px (fixed: the scroll position maps to a row by division). */
export const ROW_H = 24;
/** Rows fetched per request; the page keeps at most KEEP_BLOCKS of them. */
const BLOCK = 200;
const KEEP_BLOCKS = 8;
/** Tallest scroll spacer, CSS px (Chromium stops near 33 M px): past it a pixel is several rows. */
const MAX_SPACER = 8_000_000;
/** Words a column name ends with that already spell its unit (`duration_ns` needs no "ns" after it). */
const UNIT_SUFFIXES: Record<string, string[]> = {
  ns: ['ns'], B: ['bytes', 'b', 'size'], 'B/s': ['bytes_per_s', 'bytes_per_sec', 'bps'], '%': ['percent', 'pct'],
  s: ['s', 'sec', 'seconds'], ticks: ['ticks'], cycles: ['cycles'], FLOPs: ['flops'], GHz: ['ghz'],
};

/** The unit to show after column `name`'s header: '' when none, '–', or the name already ends with it. */
export function headerUnit(name: string, unit: string): string {
  if (unit === '' || unit === '–') return '';
  const n = name.toLowerCase();
  const words = UNIT_SUFFIXES[unit] ?? [unit.toLowerCase()];
  return words.some((w) => n.endsWith(`_${w}`) || n === w) ? '' : unit;
}

/** Arrow types whose "contains" filter tests the number's decimal text (Bool matches "true"/"false"). */
const NUMBER_TYPE = /^(Int|Uint|Float)\d*$/;

/**
 * Why filter `text` on numeric column `column` (Arrow type `type`) can match no row, or null:
 * such a column takes a comparison (checked by the core) or digits its decimal text contains
 * (`12`, `-3`, `0.5`); letters or symbols match nothing, which would read as "no rows match".
 */
export function numericFilterError(column: string, type: string, text: string): string | null {
  const t = text.trim();
  if (!NUMBER_TYPE.test(type) || t === '' || /^(>=|<=|!=|==|>|<|=)/.test(t)) return null;
  if (/^[-+]?[\d.]*$/.test(t) || (type.startsWith('Float') && /^-?(inf|nan)$/i.test(t))) return null;
  return `filter on ${column}: ${JSON.stringify(t)} is not a number (this column holds numbers: type digits, or a comparison such as >= 1000, < 5, = 3, != 0)`;
}

/**
 * The first row shown at scroll offset `top` (CSS px) of a scroll range `range` (scrollHeight −
 * clientHeight) over `maxFirst` + 1 first rows. Past MAX_SPACER a pixel is several rows, so the
 * offset maps proportionally; the last pixel of the range (and beyond: the browser may stop a
 * fraction short) is the last page, so the bottom of the scroll always shows the last row.
 */
export function firstRowAt(top: number, range: number, maxFirst: number): number {
  if (range <= 0 || maxFirst <= 0) return 0;
  if (top >= range - 1) return maxFirst;
  return Math.max(0, Math.min(maxFirst, Math.round((top / range) * maxFirst)));
}

/** Tables whose rows are timeline events (a click reveals the event). */
export const EVENT_TABLES = new Set(['Instruction', 'DmaPacket', 'SemaphoreUpdate']);

export interface TableSource {
  /** Rows offset .. offset + count of a table as Arrow (row 0 of the result = row `offset`). */
  page(name: string, offset: number, count: number): Promise<Table>;
  /** Builds the worker's sorted/filtered view of a table (sort '' = table order). */
  view?(name: string, sort: string, desc: boolean, filters: ColumnFilter[]): Promise<TableViewInfo>;
  /** Rows offset .. offset + count of view `view` (0: table order), with nscope_row = the table row. */
  viewRows?(name: string, view: number, offset: number, count: number): Promise<Table>;
  /** Position of table row `row` in view `view` (-1: filtered out). */
  viewPosition?(view: number, row: number): Promise<number>;
  downloadParquet(name: string): Promise<void>;
  downloadAll(): Promise<void>;
  /** field name → description for a table, from SchemaFields when present. */
  descriptions(table: string): Promise<Map<string, string>>;
}

/** Time columns of the event tables, for revealing a row: start, and end or duration. */
const TIMES: Record<string, [string, string | null, string | null]> = {
  Instruction: ['start_ts', 'end_ts', null],
  DmaPacket: ['start_ts', 'end_ts', null],
  SemaphoreUpdate: ['timestamp', null, null],
};

function num(v: unknown): number {
  return typeof v === 'bigint' ? Number(v) : typeof v === 'number' ? v : NaN;
}

export class TableBrowser {
  readonly root: HTMLElement;
  private readonly select: HTMLSelectElement;
  private readonly info: HTMLElement;
  private readonly note: HTMLElement;
  private readonly jump: HTMLInputElement;
  private readonly clear: HTMLButtonElement;
  /** Says the Parquet download is the whole table while a sort or filter is on. */
  private readonly dlNote: HTMLElement;
  private readonly scroll: HTMLElement;
  private readonly spacer: HTMLElement;
  private readonly grid: HTMLTableElement;
  private readonly thead: HTMLTableSectionElement;
  private readonly tbody: HTMLTableSectionElement;
  private source: TableSource | null = null;
  private tables: TableInfo[] = [];
  private name = '';
  /** Rows in the current view (the table's rows without sort and filters). */
  private total = 0;
  private viewId = 0;
  private sort: { column: string; desc: boolean } | null = null;
  private filters = new Map<string, string>();
  /** Filters the current view was built with (a refused one is in `filters` only). */
  private applied = 0;
  private columns: { name: string; unit: string; type: string }[] = [];
  private desc = new Map<string, string>();
  /** Fetched blocks of the current view by block index (insertion order = age). */
  private blocks = new Map<number, Table>();
  private pending = new Map<number, Promise<void>>();
  private seq = 0;
  private first = 0;
  private selectedRow: number | null = null;
  private frame = 0;
  /** The last page of the view is on screen (kept there when the scroll box resizes). */
  private atEnd = false;
  /** A new view is being built in the worker: rows are neither fetched nor drawn. */
  private building = false;
  /** Called when an event table's row is clicked: its table, table row and time span (ns). */
  onRowSelect: ((table: string, row: number, start: number, end: number) => void) | null = null;

  constructor() {
    this.select = h('select', { 'data-testid': 'table-select', onchange: () => void this.open(this.select.value) });
    this.info = h('span', { class: 'muted', 'data-testid': 'table-info' });
    this.note = h('span', { class: 'muted small', 'data-testid': 'table-note' });
    this.jump = h('input', {
      type: 'text', inputmode: 'numeric', class: 'jump', placeholder: 'row # (0-based)', 'aria-label': 'Jump to table row (0-based, as the row column)', 'data-testid': 'table-jump', size: 10,
      title: 'Table row to show, 0-based as the row column; Enter jumps',
      onkeydown: (e: Event) => {
        if (!(e instanceof KeyboardEvent)) return;
        if (e.key !== 'Enter') return;
        void this.jumpTo(this.jump.value);
      },
    });
    this.clear = h('button', { class: 'btn small', 'data-testid': 'table-clear', onclick: () => this.clearView() }, 'Clear sort & filters');
    const dl = h('button', {
      class: 'btn', 'data-testid': 'download-parquet', onclick: () => void this.source?.downloadParquet(this.select.value),
      title: 'Download the whole table as a Parquet file: every row and column in table order (filters and sort are not applied)',
    }, 'Download Parquet');
    this.dlNote = h('span', { class: 'muted small', 'data-testid': 'download-note', hidden: true }, 'downloads the whole table (filters and sort are not applied)');
    const all = h('button', { class: 'btn', 'data-testid': 'download-all', onclick: () => void this.source?.downloadAll() }, 'Download all (zip)');
    this.thead = h('thead', {});
    this.tbody = h('tbody', {});
    this.grid = h('table', { class: 'grid data vt-grid', 'data-testid': 'table-grid' }, this.thead, this.tbody);
    this.spacer = h('div', { class: 'vt-spacer' }, this.grid);
    this.scroll = h('div', { class: 'table-scroll vt-scroll', 'data-testid': 'table-scroll', tabindex: 0 }, this.spacer);
    this.scroll.addEventListener('scroll', () => this.schedule());
    this.scroll.addEventListener('keydown', (e) => this.onKey(e));
    new ResizeObserver(() => {
      // A resize moves the end of the scroll range: the last page stays the last page.
      if (this.atEnd) this.scroll.scrollTop = this.scroll.scrollHeight;
      this.schedule();
    }).observe(this.scroll);
    this.root = h('div', { class: 'tables' },
      h('div', { class: 'table-bar' }, h('label', {}, 'Table ', this.select), h('label', {}, 'Jump to ', this.jump), this.clear, this.info,
        h('span', { class: 'spacer' }), this.dlNote, dl, all),
      this.note,
      this.scroll);
  }

  setSource(source: TableSource | null, tables: TableInfo[]): void {
    this.source = source;
    this.tables = tables;
    this.select.replaceChildren(
      ...tables.map((t) => h('option', { value: t.name }, `${t.name} (${int(Number(t.rows))})`)),
    );
    this.reset();
    this.name = '';
    const first = tables.find((t) => t.name === 'Instruction') ?? tables[0];
    if (first !== undefined) {
      this.select.value = first.name;
      void this.open(first.name);
    }
  }

  /** Names of the tables currently offered. */
  names(): string[] {
    return this.tables.map((t) => t.name);
  }

  /**
   * Opens table `name` (if not open) and scrolls to table row `row`, highlighted; with a sort or
   * filter on, to where that row is in the view (the filters are cleared when they hide it).
   */
  async showRow(name: string, row: number): Promise<boolean> {
    if (this.source === null || !this.tables.some((t) => t.name === name)) return false;
    if (this.name !== name) {
      this.select.value = name;
      await this.open(name);
    }
    let pos = row;
    if (this.viewId !== 0 && this.source.viewPosition !== undefined) {
      pos = await this.source.viewPosition(this.viewId, row);
      if (pos < 0) {
        this.filters.clear();
        await this.rebuild();
        pos = this.viewId === 0 ? row : await this.source.viewPosition(this.viewId, row);
      }
    }
    if (pos < 0 || pos >= this.total) return false;
    this.selectedRow = row;
    this.scrollToPos(pos);
    return true;
  }

  /**
   * The jump field's Enter: shows table row `text` (0-based, as the row column), or says why not
   * (not a whole number, past the table's last row) in the note.
   */
  private async jumpTo(text: string): Promise<void> {
    const rows = Number(this.tables.find((t) => t.name === this.name)?.rows ?? 0);
    const t = text.replace(/[\s_,]/g, '');
    const r = Number(t);
    const range = rows === 0 ? 'the table has no rows' : `its rows are 0 – ${int(rows - 1)} (0-based, as the row column)`;
    let err: string | null = null;
    if (t === '' || !Number.isInteger(r) || r < 0) err = `row ${JSON.stringify(text.trim())} is not a row number: ${range}`;
    else if (r >= rows) err = `row ${int(r)} is past the end of ${this.name}: ${range}`;
    else if (!(await this.showRow(this.name, r))) err = `row ${int(r)} could not be shown`;
    this.note.classList.toggle('error-inline', err !== null);
    this.note.dataset['jump'] = err === null ? 'ok' : 'refused';
    if (err !== null) this.note.textContent = err;
    else if (this.note.dataset['capped'] === undefined) this.note.textContent = '';
  }

  private reset(): void {
    this.sort = null;
    this.filters.clear();
    this.applied = 0;
    this.viewId = 0;
    this.building = false;
    this.blocks.clear();
    this.pending.clear();
    this.columns = [];
    this.selectedRow = null;
    this.thead.replaceChildren();
    this.tbody.replaceChildren();
    this.info.textContent = '';
    delete this.info.dataset['rows'];
    this.note.textContent = '';
    this.dlNote.hidden = true;
  }

  private async open(name: string): Promise<void> {
    this.reset();
    this.name = name;
    this.total = Number(this.tables.find((t) => t.name === name)?.rows ?? 0);
    this.scroll.scrollTop = 0;
    this.scroll.scrollLeft = 0;
    const seq = ++this.seq;
    this.info.textContent = 'loading…';
    try {
      this.desc = (await this.source?.descriptions(name)) ?? new Map();
      await this.ensure(0, seq);
      if (seq !== this.seq) return;
      this.buildHead();
      this.render();
    } catch (e) {
      if (seq === this.seq) this.fail(e);
    }
  }

  private fail(e: unknown): void {
    this.info.textContent = '';
    this.tbody.replaceChildren(h('tr', {}, h('td', { class: 'error-inline' }, `Could not load ${this.name}: ${e instanceof Error ? e.message : String(e)}`)));
  }

  private clearView(): void {
    this.sort = null;
    this.filters.clear();
    for (const i of this.thead.querySelectorAll<HTMLInputElement>('input.col-filter')) i.value = '';
    void this.rebuild();
  }

  /** Builds the worker's view for the current sort and filters, then shows it from the top. */
  private async rebuild(): Promise<void> {
    const src = this.source;
    if (src === null) return;
    const filters: ColumnFilter[] = [...this.filters].filter(([, t]) => t.trim() !== '').map(([column, text]) => ({ column, text }));
    this.note.textContent = '';
    this.note.classList.remove('error-inline');
    // Text on a numeric column would match nothing: refuse it as the core refuses `>= abc`, keep the last view.
    for (const f of filters) {
      const err = numericFilterError(f.column, this.columns.find((c) => c.name === f.column)?.type ?? '', f.text);
      if (err === null) continue;
      this.note.textContent = `${err}; the view stays as it was`;
      this.note.classList.add('error-inline');
      // The fields hold text: "Clear sort & filters" must be usable to get out.
      this.updateHeadState();
      return;
    }
    const seq = ++this.seq;
    this.blocks.clear();
    this.pending.clear();
    // Until the new view exists nothing is fetched (a scroll or resize now would cache rows of the old one).
    this.building = true;
    if (this.sort === null && filters.length === 0) {
      this.applied = 0;
      this.viewId = 0;
      this.total = Number(this.tables.find((t) => t.name === this.name)?.rows ?? 0);
    } else {
      if (src.view === undefined) {
        this.note.textContent = 'This build of the core cannot sort or filter.';
        this.building = false;
        return;
      }
      this.info.textContent = this.sort !== null ? 'sorting…' : 'filtering…';
      try {
        const v = await src.view(this.name, this.sort?.column ?? '', this.sort?.desc ?? false, filters);
        if (seq !== this.seq) return;
        this.applied = filters.length;
        this.viewId = v.id;
        this.total = v.rows;
        this.root.dataset['matched'] = String(v.matched);
        if (v.capped) {
          this.note.textContent = `${int(v.matched)} rows match; a sorted or filtered view keeps at most ${int(v.max_rows)} rows, so only the first ${int(v.rows)} ${this.sort !== null ? 'of the sorted order' : 'matches in table order'} can be scrolled. Add a filter to narrow it.`;
          this.note.dataset['capped'] = 'true';
        } else delete this.note.dataset['capped'];
      } catch (e) {
        if (seq !== this.seq) return;
        this.building = false;
        // Errors are the user's input most of the time (a comparison on a text column): say so, keep the last view.
        this.note.textContent = `${e instanceof Error ? e.message : String(e)}; the view stays as it was`;
        this.note.classList.add('error-inline');
        this.info.textContent = '';
        this.updateHeadState();
        return;
      }
    }
    this.building = false;
    this.scroll.scrollTop = 0;
    this.first = 0;
    this.updateHeadState();
    this.render();
  }

  private viewRows(view: number, offset: number, count: number): Promise<Table> {
    const src = this.source;
    if (src === null) return Promise.reject(new Error('no table source'));
    if (src.viewRows !== undefined) return src.viewRows(this.name, view, offset, count);
    return src.page(this.name, offset, count);
  }

  /** Fetches block `b` of the current view unless held or in flight. */
  private ensure(b: number, seq: number): Promise<void> {
    const have = this.pending.get(b);
    if (have !== undefined) return have;
    if (this.blocks.has(b)) return Promise.resolve();
    const view = this.viewId;
    const p = this.viewRows(view, b * BLOCK, BLOCK).catch(async (e: unknown) => {
      // The worker restarted or another view replaced ours: build it again once.
      if (view === 0 || !/no longer kept/.test(String(e))) throw e;
      await this.rebuild();
      return this.viewRows(this.viewId, b * BLOCK, BLOCK);
    }).then((t) => {
      if (seq !== this.seq || view !== this.viewId) return;
      this.blocks.set(b, t);
      while (this.blocks.size > KEEP_BLOCKS) {
        const oldest = this.blocks.keys().next().value;
        if (oldest === undefined) break;
        this.blocks.delete(oldest);
      }
    }).finally(() => this.pending.delete(b));
    this.pending.set(b, p);
    return p;
  }

  private buildHead(): void {
    const t = this.blocks.values().next().value as Table | undefined;
    if (t === undefined) {
      this.columns = [];
      this.thead.replaceChildren();
      return;
    }
    this.columns = t.schema.fields.filter((f) => f.name !== 'nscope_row').map((f) => ({
      name: f.name, unit: f.metadata.get('unit') ?? '', type: String(f.type),
    }));
    const names = h('tr', { class: 'vt-head' }, h('th', { class: 'num rowno', title: 'Table row (0-based, the order the rows were written)' }, 'row'),
      this.columns.map((c) => {
        const d = this.desc.get(c.name) ?? '';
        return h('th', {
          'data-col': c.name, tabindex: 0, role: 'button', 'aria-sort': 'none',
          title: [d, `type: ${c.type}`, c.unit ? `unit: ${c.unit}` : '', 'click: sort ascending, again: descending, again: table order'].filter(Boolean).join('\n'),
          onclick: () => this.toggleSort(c.name),
          onkeydown: (e: Event) => {
            if (!(e instanceof KeyboardEvent)) return;
            if (e.key === 'Enter' || e.key === ' ') {
              e.preventDefault();
              this.toggleSort(c.name);
            }
          },
        }, c.name, headerUnit(c.name, c.unit) ? h('span', { class: 'unit' }, ` ${c.unit}`) : null, h('span', { class: 'sort-mark' }));
      }));
    const numeric = (type: string): boolean => /Int|Float|Uint|Bool/i.test(type) && !/Utf8|Dictionary/.test(type);
    const filters = h('tr', { class: 'vt-filters' }, h('th', { class: 'rowno' }),
      this.columns.map((c) => h('th', {}, h('input', {
        type: 'text', class: 'col-filter', 'data-col': c.name, 'aria-label': `Filter ${c.name}`, spellcheck: 'false',
        placeholder: numeric(c.type) ? '>= 0' : 'contains…',
        title: numeric(c.type) ? 'A comparison (>= 1000, < 5, = 3, != 0) or a number; Enter applies' : 'Text the cell contains (case-insensitive); Enter applies',
        onkeydown: (e: Event) => {
          if (!(e instanceof KeyboardEvent)) return;
          if (e.key !== 'Enter') return;
          this.filters.set(c.name, (e.target as HTMLInputElement).value);
          void this.rebuild();
        },
      }))));
    this.thead.replaceChildren(names, filters);
    this.updateHeadState();
  }

  private toggleSort(col: string): void {
    if (this.sort?.column !== col) this.sort = { column: col, desc: false };
    else if (!this.sort.desc) this.sort = { column: col, desc: true };
    else this.sort = null;
    void this.rebuild();
  }

  private updateHeadState(): void {
    for (const th of this.thead.querySelectorAll<HTMLElement>('th[data-col]')) {
      const on = this.sort?.column === th.dataset['col'];
      th.setAttribute('aria-sort', on ? (this.sort?.desc ? 'descending' : 'ascending') : 'none');
      const mark = th.querySelector('.sort-mark');
      if (mark !== null) mark.textContent = on ? (this.sort?.desc ? ' ▼' : ' ▲') : '';
    }
    this.clear.disabled = this.sort === null && ![...this.filters.values()].some((t) => t.trim() !== '');
    this.dlNote.hidden = this.clear.disabled;
    this.root.dataset['sort'] = this.sort === null ? '' : `${this.sort.column}:${this.sort.desc ? 'desc' : 'asc'}`;
  }

  /** Rows that fit under the header. */
  private visibleRows(): number {
    const head = this.thead.getBoundingClientRect().height || 2 * ROW_H;
    return Math.max(1, Math.floor((this.scroll.clientHeight - head) / ROW_H));
  }

  /** Spacer height, the scroll range and the largest first row. */
  private geometry(): { range: number; maxFirst: number } {
    const head = this.thead.getBoundingClientRect().height || 2 * ROW_H;
    const vis = this.visibleRows();
    const want = this.total * ROW_H + head + ROW_H;
    const height = Math.min(want, MAX_SPACER);
    this.spacer.style.height = `${Math.max(height, this.scroll.clientHeight)}px`;
    // The range the browser scrolls (it may differ from the spacer's by borders, scrollbars, rounding).
    const range = Math.max(0, this.scroll.scrollHeight - this.scroll.clientHeight);
    return { range, maxFirst: Math.max(0, this.total - vis) };
  }

  private scrollToPos(pos: number): void {
    const { range, maxFirst } = this.geometry();
    // Put the row a few rows below the top when it can be.
    const first = Math.max(0, Math.min(maxFirst, pos - 2));
    this.scroll.scrollTop = maxFirst === 0 ? 0 : (first / maxFirst) * range;
    this.first = first;
    this.render(first);
  }

  private schedule(): void {
    if (this.frame !== 0) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.render();
    });
  }

  private onKey(e: KeyboardEvent): void {
    const vis = this.visibleRows();
    const by: Record<string, number> = { PageDown: vis, PageUp: -vis, ArrowDown: 1, ArrowUp: -1 };
    if (e.key === 'End' || e.key === 'Home') {
      e.preventDefault();
      this.scrollToPos(e.key === 'End' ? this.total - 1 : 0);
      return;
    }
    const d = by[e.key];
    if (d === undefined || e.target !== this.scroll) return;
    e.preventDefault();
    this.scrollToPos(Math.max(0, Math.min(this.total - 1, this.first + 2 + d)));
  }

  /** Draws the rows at the scroll position (`first` overrides it), fetching missing blocks. */
  private render(first?: number): void {
    if (this.source === null || this.name === '' || this.building) return;
    const { range, maxFirst } = this.geometry();
    const vis = this.visibleRows();
    const at = first ?? firstRowAt(this.scroll.scrollTop, range, maxFirst);
    this.first = Math.max(0, Math.min(maxFirst, at));
    this.atEnd = maxFirst > 0 && this.first === maxFirst;
    const last = Math.min(this.total, this.first + vis + 1);
    const seq = this.seq;
    const missing: Promise<void>[] = [];
    for (let b = Math.floor(this.first / BLOCK); b * BLOCK < last; b++) if (!this.blocks.has(b)) missing.push(this.ensure(b, seq));
    if (missing.length > 0) {
      Promise.all(missing).then(() => {
        if (seq !== this.seq) return;
        if (this.columns.length === 0) this.buildHead();
        this.render();
      }, (e: unknown) => {
        if (seq === this.seq) this.fail(e);
      });
    }
    const rows: HTMLElement[] = [];
    const sortText = this.sort === null ? '' : ` · sorted by ${this.sort.column} ${this.sort.desc ? '▼' : '▲'}`;
    // The filters of the view shown (a refused one is not).
    const nf = this.applied;
    const table = Number(this.tables.find((t) => t.name === this.name)?.rows ?? 0);
    // 0-based, as the row column and the jump field.
    this.info.textContent = this.total === 0
      ? (nf > 0 ? 'no rows match' : 'no rows')
      : `rows ${int(this.first)}–${int(last - 1)} of ${int(this.total)}${nf > 0 || this.total !== table ? ` (of ${int(table)} in the table)` : ''}${sortText}${nf > 0 ? ` · ${nf} filter${nf === 1 ? '' : 's'}` : ''}`;
    this.info.dataset['rows'] = String(this.total);
    this.info.dataset['first'] = String(this.first);
    this.info.dataset['last'] = String(last);
    const event = EVENT_TABLES.has(this.name);
    for (let p = this.first; p < last; p++) {
      const t = this.blocks.get(Math.floor(p / BLOCK));
      const i = p % BLOCK;
      const r = t?.get(i);
      if (t === undefined || r === null || r === undefined) {
        rows.push(h('tr', { class: 'vt-row loading', 'data-pos': p }, h('td', { class: 'num rowno muted' }, '…')));
        continue;
      }
      const o = r.toJSON() as Record<string, unknown>;
      const row = num(o['nscope_row']);
      const tableRow = Number.isFinite(row) ? row : p;
      const tr = h('tr', {
        class: `vt-row${tableRow === this.selectedRow ? ' selected' : ''}${event ? ' event' : ''}`, 'data-pos': p, 'data-row': tableRow,
        title: event ? 'Click: select this event on the timeline' : '',
        onclick: () => this.clickRow(tableRow, o),
      }, h('td', { class: 'num rowno' }, tableRow), this.columns.map((c) => {
        const v = o[c.name];
        const numeric = typeof v === 'number' || typeof v === 'bigint';
        return h('td', { class: numeric ? 'num' : '', 'data-col': c.name }, c.name === 'opcode' ? opcodeCell(v) : cell(v));
      }));
      rows.push(tr);
    }
    // Rows above the first visible one are under the sticky grid: it sits at the scroll top.
    this.tbody.replaceChildren(...rows);
  }

  private clickRow(row: number, o: Record<string, unknown>): void {
    this.selectedRow = row;
    for (const tr of this.tbody.querySelectorAll<HTMLElement>('tr.vt-row')) tr.classList.toggle('selected', Number(tr.dataset['row']) === row);
    const times = TIMES[this.name];
    if (times === undefined || this.onRowSelect === null) return;
    const start = num(o[times[0]]);
    const end = times[1] !== null ? num(o[times[1]]) : start;
    if (Number.isFinite(start)) this.onRowSelect(this.name, row, start, Number.isFinite(end) ? end : start);
  }
}
