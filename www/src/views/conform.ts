// "Compare with AWS export": field-by-field match rates of the shown device profile against a
// `neuron-profile view --output-format json` export (crate/src/conform.rs). The export comes from the
// picked folder (inventory kind ProfilerJsonExport) or from a file the user picks here.

import type { ConformReport, ConformSection, InventoryFile } from '../api.ts';
import { h } from '../dom.ts';
import { count, int } from '../format.ts';

/** A JSON export the page can read. */
export interface ExportCandidate {
  path: string;
  file: Blob;
}

/** Exports of the folder, the ones named like the device (`<ntff stem>…json`) first. */
export function exportsFor(files: InventoryFile[], picked: ExportCandidate[], device: { name: string; ntff?: string | null }): ExportCandidate[] {
  const kinds = new Set(files.filter((f) => f.kind === 'ProfilerJsonExport').map((f) => f.path));
  const base = (p: string): string => p.slice(p.lastIndexOf('/') + 1);
  const dir = (p: string): string => p.slice(0, Math.max(0, p.lastIndexOf('/')));
  const ntffDir = device.ntff ? dir(device.ntff) : '';
  const score = (p: string): number =>
    (base(p).startsWith(device.name) ? 2 : 0) + (ntffDir !== '' && p.startsWith(ntffDir) ? 1 : 0);
  return picked
    .filter((c) => kinds.has(c.path))
    .sort((a, b) => score(b.path) - score(a.path) || a.path.localeCompare(b.path));
}

function pct(rate: number): string {
  return `${(rate * 100).toFixed(rate === 1 || rate === 0 ? 0 : 2)} %`;
}

/**
 * A core note in the user's terms: the citations of our own format notes and test files
 * ("ntff.md §10 step 4", "attribution_golden.rs", "docs/formats.md") mean nothing to a user.
 */
export function userNote(note: string): string {
  return note
    .replace(/\s*\((?:[^()]*?(?:\.md|\.rs|§)[^()]*?)\)/g, '')
    .replace(/\s*(?:docs\/)?[\w-]+\.(?:md|rs)(?:\s*§[\w. ]+)?/g, '')
    .replace(/\s*§\S+(?:\s+q\d+)?/g, '')
    .replace(/\(\s*\)/g, '')
    .replace(/\s{2,}/g, ' ')
    .replace(/[;,]\s*$/, '')
    .trim();
}

/** Compared fields of the report: all, and those below 100 %. */
function tally(report: ConformReport): { tables: number; fields: number; full: number; below: { section: string; field: string; rate: number }[] } {
  let fields = 0;
  let full = 0;
  const below: { section: string; field: string; rate: number }[] = [];
  let tables = 0;
  for (const s of report.sections) {
    const compared = s.fields.filter((f) => f.status === 'compared');
    if (s.status === 'compared' && compared.length > 0) tables++;
    for (const f of compared) {
      fields++;
      if (f.rate >= 1) full++;
      else below.push({ section: s.section, field: f.field, rate: f.rate });
    }
  }
  return { tables, fields, full, below };
}

/**
 * Compared sections whose rows do not all pair: fewer or more rows of ours than the export's, or
 * rows left unmatched. Field rates count matched rows only, so 100 % alone would hide these.
 */
export function rowGaps(report: ConformReport): ConformSection[] {
  return report.sections.filter((s) => s.status === 'compared' &&
    (s.our_rows !== s.export_rows || s.matched_rows < s.export_rows));
}

/** "neff_node: 6 of 8" (ours of the export's; "ours 10, export 8 rows" when we have more; matched when fewer pair). */
function rowGapText(s: ConformSection): string {
  if (s.our_rows > s.export_rows) return `${s.section}: ours ${int(s.our_rows)}, export ${int(s.export_rows)} rows`;
  const matched = s.matched_rows < s.our_rows ? `, ${int(s.matched_rows)} matched` : '';
  return `${s.section}: ${int(s.our_rows)} of ${int(s.export_rows)}${matched}`;
}

function sectionBlock(s: ConformSection): HTMLElement {
  const head = h('div', { class: 'conform-section-head' },
    h('strong', {}, s.section), ' → ', s.table ?? '–', ' ',
    h('span', { class: `muted small conform-status-${s.status}` },
      `[${s.status.replace(/_/g, ' ')}] rows export ${int(s.export_rows)} / ours ${int(s.our_rows)} / matched ${int(s.matched_rows)}`),
  );
  const shown = s.fields.filter((f) => f.status !== 'key');
  // Sections where every compared field matches fold; the ones with differences stay open.
  const open = shown.some((f) => f.status === 'compared' && f.rate < 1);
  if (shown.length === 0) {
    return h('details', { class: 'conform-section', 'data-section': s.section }, h('summary', {}, head),
      s.note ? h('div', { class: 'muted small' }, userNote(s.note)) : null);
  }
  const rows = shown.map((f) => {
    const compared = f.status === 'compared';
    const diff = f.diffs[0];
    return h('tr', {
      'data-section': s.section, 'data-field': f.field, 'data-tolerance': f.tolerance,
      'data-rate': compared ? String(f.rate) : '', class: compared && f.rate < 1 ? 'conform-miss' : null,
    },
    h('td', { class: 'mono' }, f.field),
    h('td', { class: 'mono' }, f.column ?? '–'),
    h('td', { class: 'num' }, compared ? pct(f.rate) : f.status.replace(/_/g, ' ')),
    h('td', { class: 'num' }, compared ? `${int(f.equal)} / ${int(f.compared)}` : ''),
    h('td', {}, compared ? f.tolerance : ''),
    h('td', { class: 'small' }, diff ? `row ${diff.row}: export ${diff.export} · ours ${diff.ours}` : userNote(f.note ?? '')),
    );
  });
  return h('details', { class: 'conform-section', 'data-section': s.section, open }, h('summary', {}, head),
    h('table', { class: 'conform-table' },
      h('thead', {}, h('tr', {}, ...['export field', 'our column', 'match', 'equal / compared', 'tolerance', 'first difference / note'].map((t) => h('th', {}, t)))),
      h('tbody', {}, rows)));
}

/** The report: one block per export section. */
export function renderReport(report: ConformReport, exportName: string): HTMLElement {
  const t = tally(report);
  const worst = [...t.below].sort((a, b) => a.rate - b.rate).slice(0, 4).map((b) => `${b.section}.${b.field} ${pct(b.rate)}`).join(', ');
  const short = rowGaps(report);
  const gaps = short.length === 0
    ? ''
    : ` · ${count(short.length, 'section')} ${short.length === 1 ? 'has' : 'have'} ${short.every((s) => s.our_rows <= s.export_rows) ? 'rows missing' : short.every((s) => s.our_rows > s.export_rows) ? 'extra rows' : 'rows missing or extra'} (${short.slice(0, 4).map(rowGapText).join(', ')}${short.length > 4 ? ', …' : ''})`;
  const verdict = t.fields === 0
    ? 'Nothing comparable: the export has no section this profile writes.'
    : `${count(t.tables, 'table')} compared · ${int(t.full)} of ${count(t.fields, 'field')} match on every row` +
      (t.below.length > 0 ? ` · ${count(t.below.length, 'field')} below 100 % (${worst}${t.below.length > 4 ? ', …' : ''})` : ` · every compared field matches${short.length > 0 ? ' on the matched rows' : ''}`) +
      gaps;
  return h('div', { class: 'conform-report', 'data-testid': 'conform-report' },
    h('div', { class: `conform-verdict ${t.below.length === 0 && short.length === 0 && t.fields > 0 ? 'all' : 'some'}`, 'data-testid': 'conform-verdict',
      'data-fields': t.fields, 'data-full': t.full, 'data-below': t.below.length, 'data-row-gaps': short.length }, verdict),
    h('p', { class: 'muted small' }, `${exportName} · profiler ${report.profiler_version ?? '?'} · NTFF ${report.ntff_filename ?? '?'} · sections with differences are open; click a section to fold or unfold it`),
    report.sections.map(sectionBlock));
}

/**
 * The "Compare with AWS export" box. `run` compares the bytes of an export with the shown profile.
 * `candidates` are the folder's exports (best first); a file input allows any other export.
 */
export function renderConform(
  root: HTMLElement,
  candidates: ExportCandidate[],
  run: (exportJson: Uint8Array) => Promise<ConformReport>,
): void {
  const out = h('div', { class: 'conform-out' });
  const select = candidates.length > 1
    ? h('select', { 'data-testid': 'conform-export' }, candidates.map((c, i) => h('option', { value: String(i) }, c.path)))
    : null;
  const compare = async (blob: Blob, name: string): Promise<void> => {
    out.replaceChildren(h('div', { class: 'muted' }, `Comparing with ${name}…`));
    try {
      const report = await run(new Uint8Array(await blob.arrayBuffer()));
      out.replaceChildren(renderReport(report, name));
    } catch (e) {
      out.replaceChildren(h('div', { class: 'error-inline', 'data-testid': 'conform-error' },
        `Comparison with ${name} failed: ${e instanceof Error ? e.message : String(e)}`));
    }
  };
  const button = candidates.length > 0
    ? h('button', {
      class: 'btn small', 'data-testid': 'conform-run',
      onclick: () => {
        const c = candidates[select ? Number(select.value) : 0];
        if (c !== undefined) void compare(c.file, c.path);
      },
    }, 'Compare with AWS export')
    : null;
  const input = h('input', { type: 'file', accept: '.json,application/json', 'data-testid': 'conform-file' });
  input.addEventListener('change', () => {
    const f = input.files?.[0];
    if (f !== undefined) void compare(f, f.name);
    input.value = '';
  });
  root.replaceChildren(
    h('h3', {}, 'Conformance with an AWS JSON export'),
    h('div', { class: 'conform-controls' },
      button, select,
      h('label', { class: 'small' }, candidates.length > 0 ? 'or pick another export: ' : 'Pick a neuron-profile JSON export to compare: ', input)),
    out,
  );
}
