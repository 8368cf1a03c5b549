// Table browser: pick any output table, page through its rows (column names and units from the Arrow
// schema, descriptions from SchemaFields), download it as Parquet or everything as one zip.

import type { Table } from 'apache-arrow';
import type { TableInfo } from '../api.ts';
import { h } from '../dom.ts';
import { cell, int } from '../format.ts';

const PAGE = 100;

export interface TableSource {
  /** Rows offset .. offset + count of a table as Arrow (row 0 of the result = row `offset`). */
  page(name: string, offset: number, count: number): Promise<Table>;
  downloadParquet(name: string): Promise<void>;
  downloadAll(): Promise<void>;
  /** field name → description for a table, from SchemaFields when present. */
  descriptions(table: string): Promise<Map<string, string>>;
}

export class TableBrowser {
  readonly root: HTMLElement;
  private readonly select: HTMLSelectElement;
  private readonly body: HTMLElement;
  private readonly info: HTMLElement;
  private readonly prev: HTMLButtonElement;
  private readonly next: HTMLButtonElement;
  private source: TableSource | null = null;
  private tables: TableInfo[] = [];
  /** The rows on screen (row 0 = table row `offset`) and the table's total row count. */
  private current: Table | null = null;
  private total = 0;
  private offset = 0;
  private seq = 0;

  constructor() {
    this.select = h('select', { 'data-testid': 'table-select', onchange: () => void this.open(this.select.value) });
    this.prev = h('button', { class: 'btn small', 'data-testid': 'page-prev', onclick: () => this.page(-1) }, '‹ Prev');
    this.next = h('button', { class: 'btn small', 'data-testid': 'page-next', onclick: () => this.page(1) }, 'Next ›');
    this.info = h('span', { class: 'muted', 'data-testid': 'table-info' });
    this.body = h('div', { class: 'table-scroll' });
    const dl = h('button', { class: 'btn', 'data-testid': 'download-parquet', onclick: () => void this.source?.downloadParquet(this.select.value) }, 'Download Parquet');
    const all = h('button', { class: 'btn', 'data-testid': 'download-all', onclick: () => void this.source?.downloadAll() }, 'Download all (zip)');
    this.root = h('div', { class: 'tables' },
      h('div', { class: 'table-bar' }, h('label', {}, 'Table ', this.select), this.prev, this.next, this.info, h('span', { class: 'spacer' }), dl, all),
      this.body);
  }

  setSource(source: TableSource | null, tables: TableInfo[]): void {
    this.source = source;
    this.tables = tables;
    this.current = null;
    this.select.replaceChildren(
      ...tables.map((t) => h('option', { value: t.name }, `${t.name} (${int(Number(t.rows))})`)),
    );
    this.body.replaceChildren();
    this.info.textContent = '';
    const first = tables.find((t) => t.name === 'Instruction') ?? tables[0];
    if (first !== undefined) {
      this.select.value = first.name;
      void this.open(first.name);
    }
  }

  private async open(name: string): Promise<void> {
    this.offset = 0;
    this.total = Number(this.tables.find((t) => t.name === name)?.rows ?? 0);
    await this.load(name);
  }

  private async load(name: string): Promise<void> {
    if (this.source === null) return;
    const seq = ++this.seq;
    this.info.textContent = 'loading…';
    try {
      const [table, desc] = await Promise.all([this.source.page(name, this.offset, PAGE), this.source.descriptions(name)]);
      if (seq !== this.seq) return;
      this.current = table;
      this.render(desc);
    } catch (e) {
      if (seq !== this.seq) return;
      this.info.textContent = '';
      this.body.replaceChildren(h('div', { class: 'error-inline' }, `Could not load ${name}: ${e instanceof Error ? e.message : String(e)}`));
    }
  }

  private page(dir: number): void {
    const next = this.offset + dir * PAGE;
    if (next < 0 || next >= this.total) return;
    this.offset = next;
    void this.load(this.select.value);
  }

  private render(desc: Map<string, string>): void {
    const t = this.current;
    if (t === null) return;
    const fields = t.schema.fields;
    const end = this.offset + t.numRows;
    this.info.textContent = this.total === 0 ? 'no rows' : `rows ${int(this.offset + 1)}–${int(end)} of ${int(this.total)}`;
    this.info.dataset['rows'] = String(this.total);
    this.info.dataset['pageRows'] = String(t.numRows);
    this.prev.disabled = this.offset === 0;
    this.next.disabled = end >= this.total;
    const head = h('tr', {}, h('th', { class: 'num rowno' }, '#'), fields.map((f) => {
      const unit = f.metadata.get('unit') ?? '';
      const d = desc.get(f.name) ?? '';
      return h('th', { title: [d, `type: ${String(f.type)}`, unit ? `unit: ${unit}` : ''].filter(Boolean).join('\n') },
        f.name, unit && unit !== '–' ? h('span', { class: 'unit' }, ` ${unit}`) : null);
    }));
    const cols = fields.map((f) => t.getChild(f.name));
    const rows: HTMLElement[] = [];
    for (let i = 0; i < t.numRows; i++) {
      rows.push(h('tr', {}, h('td', { class: 'num rowno' }, this.offset + i), cols.map((c) => {
        const v: unknown = c?.get(i);
        const numeric = typeof v === 'number' || typeof v === 'bigint';
        return h('td', { class: numeric ? 'num' : '' }, cell(v));
      })));
    }
    this.body.replaceChildren(h('table', { class: 'grid data', 'data-testid': 'table-grid' }, h('thead', {}, head), h('tbody', {}, rows)));
  }

  /** Names of the tables currently offered. */
  names(): string[] {
    return this.tables.map((t) => t.name);
  }
}
