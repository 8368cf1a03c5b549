// Search over a device profile's events: opcode, BIR/HLO/framework names (`custom-call.1`,
// `inst.2750`), NKI `file:line`, queue and semaphore names — every text column of the Instruction,
// DmaPacket and SemaphoreUpdate tables, searched in the worker (crate/src/table_query.rs `search`,
// at most MAX_SEARCH_HITS earliest hits kept). Enter goes to the next match, Shift+Enter to the
// previous one; each match is selected and revealed on the timeline (`onReveal`).

import type { SearchHit, SearchResult } from '../api.ts';
import { h } from '../dom.ts';
import { int, ns } from '../format.ts';
import { isRawOpcode, rawOpcodeNote } from './opcode.ts';

/** Hits one search asks for (the core's own cap, wasm/table_api.rs MAX_SEARCH_HITS). */
export const SEARCH_LIMIT = 10_000;

export class SearchBar {
  readonly root: HTMLElement;
  private readonly input: HTMLInputElement;
  private readonly count: HTMLElement;
  private readonly what: HTMLElement;
  private result: SearchResult | null = null;
  private query = '';
  private at = -1;
  private seq = 0;
  /** Runs a search (null: no profile to search). */
  run: ((query: string) => Promise<SearchResult>) | null = null;
  /** Selects and reveals a hit on the timeline. */
  onReveal: ((hit: SearchHit) => void) | null = null;

  constructor() {
    this.input = h('input', {
      type: 'search', class: 'filter search-input', placeholder: 'Search opcode, inst.N, custom-call, file.py:line…',
      'aria-label': 'Search events (Enter: next, Shift+Enter: previous)', 'data-testid': 'search-input', spellcheck: 'false',
      onkeydown: (e: Event) => {
        if (!(e instanceof KeyboardEvent)) return;
        if (e.key !== 'Enter') return;
        e.preventDefault();
        void this.step(e.shiftKey ? -1 : 1);
      },
    });
    this.count = h('span', { class: 'muted search-count', 'data-testid': 'search-count', 'aria-live': 'polite' });
    this.what = h('span', { class: 'muted small search-what', 'data-testid': 'search-what' });
    const prev = h('button', { class: 'btn small', title: 'Previous match (Shift+Enter)', 'aria-label': 'Previous match', onclick: () => void this.step(-1) }, '↑');
    const next = h('button', { class: 'btn small', title: 'Next match (Enter)', 'aria-label': 'Next match', onclick: () => void this.step(1) }, '↓');
    this.root = h('div', { class: 'search-bar', 'data-testid': 'search-bar' }, this.input, prev, next, this.count, this.what);
  }

  /** Forgets the last result (another profile is on screen). */
  reset(): void {
    this.result = null;
    this.query = '';
    this.at = -1;
    this.count.textContent = '';
    this.what.textContent = '';
  }

  /** Moves `dir` matches from the current one, searching first when the query changed. */
  async step(dir: number): Promise<void> {
    const q = this.input.value.trim();
    if (q === '' || this.run === null) {
      this.reset();
      return;
    }
    if (q !== this.query || this.result === null) {
      const seq = ++this.seq;
      this.count.textContent = 'searching…';
      // The previous query's position is no longer the one shown.
      delete this.count.dataset['k'];
      delete this.count.dataset['total'];
      let r: SearchResult;
      try {
        r = await this.run(q);
      } catch (e) {
        if (seq === this.seq) this.count.textContent = `search failed: ${e instanceof Error ? e.message : String(e)}`;
        return;
      }
      if (seq !== this.seq) return;
      this.result = r;
      this.query = q;
      this.at = dir > 0 ? -1 : 0;
    }
    const r = this.result;
    const n = r.hits.length;
    if (n === 0) {
      this.count.textContent = '0 matches';
      this.count.dataset['total'] = '0';
      this.what.textContent = '';
      return;
    }
    this.at = (((this.at + dir) % n) + n) % n;
    const hit = r.hits[this.at];
    if (hit === undefined) return;
    this.count.textContent = `${int(this.at + 1)} of ${int(r.total)}${r.capped ? ` (the first ${int(n)} by time can be stepped through)` : ''}`;
    this.count.dataset['k'] = String(this.at + 1);
    this.count.dataset['total'] = String(r.total);
    this.what.textContent = `${hit.table} row ${hit.row} · ${hit.column} = ${hit.text}${isRawOpcode(hit.text) ? ' (unnamed opcode byte)' : ''} · at ${ns(hit.start)}`;
    this.what.title = isRawOpcode(hit.text) ? rawOpcodeNote(hit.text) : '';
    this.what.dataset['table'] = hit.table;
    this.what.dataset['row'] = String(hit.row);
    this.what.dataset['text'] = hit.text;
    this.onReveal?.(hit);
  }
}
