// Summary of one processed device profile: headline numbers, instructions per engine and physical
// core, the NEFF it ran. Elements carry data-testid so browser tests read what the user reads.

import type { Table } from 'apache-arrow';
import type { ProcessResult } from '../api.ts';
import { h, nodes } from '../dom.ts';
import { bytes, cell, int, ns } from '../format.ts';
import { foldedProblems } from './profiles.ts';
import { fieldRank, GROUP_TITLES, groupOrder, summaryGroup } from './summary-groups.ts';

/** Explorer engine names in the order the timeline uses, with their display names. */
export const ENGINES: readonly (readonly [string, string])[] = [
  ['tensor', 'Tensor'],
  ['vector', 'Vector'],
  ['scalar', 'Scalar'],
  ['gpsimd', 'GpSimd'],
  ['sync', 'Sync'],
];

export function engineLabel(engine: string): string {
  for (const [k, v] of ENGINES) if (k === engine) return v;
  return engine.charAt(0).toUpperCase() + engine.slice(1);
}

export function engineRank(engine: string): number {
  const i = ENGINES.findIndex(([k]) => k === engine);
  return i < 0 ? ENGINES.length : i;
}

/** Physical core label as Explorer's sg names: 0 → sg00. */
export function coreLabel(pcore: number): string {
  return `sg${String(pcore).padStart(2, '0')}`;
}

function card(label: string, value: string, testid: string, raw?: string | number): HTMLElement {
  return h('div', { class: 'card' },
    h('div', { class: 'card-label' }, label),
    h('div', { class: 'card-value', 'data-testid': testid, 'data-value': raw ?? value }, value));
}

export function renderSummary(root: HTMLElement, title: string, r: ProcessResult): void {
  const s = r.summary;
  const cores = [...new Set(s.per_engine.map((e) => Number(e.pcore_idx)))].sort((a, b) => a - b);
  const engines = [...new Set(s.per_engine.map((e) => e.engine))].sort((a, b) => engineRank(a) - engineRank(b));
  const count = (engine: string, core: number): number =>
    s.per_engine.filter((e) => e.engine === engine && Number(e.pcore_idx) === core).reduce((a, e) => a + Number(e.count), 0);

  const matrix = h('table', { class: 'grid', 'data-testid': 'per-engine' },
    h('thead', {}, h('tr', {}, h('th', {}, 'Engine'), cores.map((c) => h('th', { class: 'num' }, coreLabel(c))), h('th', { class: 'num' }, 'Total'))),
    h('tbody', {}, engines.map((e) => {
      const row = cores.map((c) => count(e, c));
      return h('tr', {},
        h('td', {}, engineLabel(e)),
        row.map((v, i) => h('td', { class: 'num', 'data-testid': `count-${e}-${coreLabel(cores[i] ?? 0)}` }, int(v))),
        h('td', { class: 'num strong' }, int(row.reduce((a, b) => a + b, 0))));
    })),
    h('tfoot', {}, h('tr', {}, h('td', {}, 'All engines'),
      cores.map((c) => h('td', { class: 'num' }, int(engines.reduce((a, e) => a + count(e, c), 0)))),
      h('td', { class: 'num strong' }, int(Number(s.instruction_count))))));

  const neff = s.neff;
  const neffBlock = neff
    ? h('dl', { class: 'kv' },
        neff.file ? [h('dt', {}, 'file'), h('dd', { 'data-testid': 'neff-file' }, neff.file)] : null,
        h('dt', {}, 'network'), h('dd', { 'data-testid': 'neff-name' }, neff.name ?? '—'),
        h('dt', {}, 'uuid'), h('dd', { class: 'mono', 'data-testid': 'neff-uuid' }, neff.uuid ?? '—'),
        h('dt', {}, 'compiler'), h('dd', { 'data-testid': 'neff-compiler' }, neff.compiler_version ?? '—'))
    : h('div', { class: 'muted' }, 'No NEFF information.');

  root.replaceChildren(
    ...nodes(
    h('h2', {}, title),
    h('div', { class: 'cards' },
      card('Total time (the execution: what Fit shows)', s.total_time_ns === null || s.total_time_ns === undefined ? '—' : ns(Number(s.total_time_ns)), 'total-time', Number(s.total_time_ns ?? NaN)),
      card('Instructions', int(Number(s.instruction_count)), 'instruction-count', Number(s.instruction_count)),
      card('Semaphore updates', int(Number(s.semaphore_count)), 'semaphore-count', Number(s.semaphore_count)),
      card('Physical cores', String(cores.length), 'core-count', cores.length),
      card('NTFF version', s.ntff_version !== null && s.ntff_version !== undefined ? `v${s.ntff_version}` : '—', 'ntff-version')),
    h('div', { class: 'summary-cols' },
      h('section', {}, h('h3', {}, 'Instructions per engine and physical core'), matrix),
      h('section', {}, h('h3', {}, 'Compiled program'), neffBlock,
        h('h3', {}, 'Tables'),
        h('ul', { class: 'table-counts' }, r.tables.map((t) => h('li', {}, h('span', {}, t.name), h('span', { class: 'num' }, int(Number(t.rows)))))))),
    r.problems.length > 0 ? h('section', {}, h('h3', {}, 'Problems'), foldedProblems(r.problems)) : null,
    h('details', { class: 'summary-groups-fold', open: true },
      h('summary', {}, 'Summary metrics, grouped as in Neuron Explorer'),
      h('div', { class: 'summary-groups', 'data-testid': 'summary-groups' }, h('div', { class: 'muted' }, 'loading…'))),
  ));
}

/** Value of one summary field with its unit → display text (and the raw value for data-value). */
export function summaryValue(v: unknown, unit: string, percentIsFraction: boolean): string {
  if (v === null || v === undefined) return '–';
  if (typeof v === 'string') return v;
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  if (typeof v !== 'number' && typeof v !== 'bigint') return cell(v);
  const x = Number(v);
  if (!Number.isFinite(x)) return String(x);
  switch (unit) {
    case 's':
      return ns(x * 1e9);
    case 'ns':
      return ns(x);
    case 'B':
      return x >= 1024 ? `${bytes(x)} (${int(Math.round(x))} B)` : `${int(Math.round(x))} B`;
    case '%':
      return `${(percentIsFraction ? x * 100 : x).toFixed(2)} %`;
    case 'cycles':
      return `${int(Math.round(x))} cycles`;
    case 'FLOPs':
      return x >= 1e6 ? `${si(x)}FLOP (${int(Math.round(x))})` : `${int(Math.round(x))} FLOP`;
    case 'B/s':
      return `${si(x)}B/s`;
    default:
      return Number.isInteger(x) ? int(x) : x.toPrecision(5);
  }
}

/** 285212672 → "285.2 M". */
function si(x: number): string {
  const a = Math.abs(x);
  for (const [d, p] of [[1e15, 'P'], [1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k']] as const) if (a >= d) return `${(x / d).toFixed(1)} ${p}`;
  return `${x} `;
}

/** Throttle columns `throttleFields` reads. */
export const THROTTLE_SUMMARY_COLUMNS = ['duration', 'k', 'n', 'type', 'pcore_idx'];

/**
 * Explorer's throttling summary fields from the Throttle rows (duration ns, k, n, type, pcore_idx)
 * and the total time (ns), per physical core p (Explorer's nc<p>):
 * `throttle_<type>_active_time_nc<p>_percent` = Σ duration of that type / total time,
 * `throttle_<type>_avg_util_limit_nc<p>_percent` = Σ (k/n × duration) / Σ duration of that type,
 * `throttle_active_nc<p>_time_ns` = Σ duration of the records with k < n,
 * `throttle_avg_util_limit_nc<p>_percent` = Σ (k/n × duration) / total time; percents as
 * fractions, like the exports. Matches the `summary` of all 10 exports with throttle records
 * (allenkchau ×6, AnchovyPark ×4) — checked against fused_bf16_s512 in tests/browser/device.test.mjs.
 */
export function throttleFields(throttle: Table, totalNs: number): Record<string, number> {
  const col = (n: string): ((i: number) => unknown) => {
    const c = throttle.getChild(n);
    return (i) => c?.get(i);
  };
  const [dur, k, n, type, pc] = [col('duration'), col('k'), col('n'), col('type'), col('pcore_idx')];
  interface Acc { dur: number; weighted: number }
  const byType = new Map<string, Acc>();
  const byCore = new Map<number, { limited: number; weighted: number }>();
  for (let i = 0; i < throttle.numRows; i++) {
    const d = Number(dur(i) ?? NaN);
    const kk = Number(k(i) ?? NaN);
    const nn = Number(n(i) ?? NaN);
    if (!Number.isFinite(d) || !Number.isFinite(kk) || !Number.isFinite(nn) || nn <= 0) continue;
    const p = Number(pc(i) ?? 0);
    const key = `${String(type(i) ?? 'unknown')}\u0000${p}`;
    const t = byType.get(key) ?? { dur: 0, weighted: 0 };
    t.dur += d;
    t.weighted += (kk / nn) * d;
    byType.set(key, t);
    const c = byCore.get(p) ?? { limited: 0, weighted: 0 };
    if (kk < nn) c.limited += d;
    c.weighted += (kk / nn) * d;
    byCore.set(p, c);
  }
  const out: Record<string, number> = {};
  for (const [key, t] of byType) {
    const [ty, p] = key.split('\u0000');
    out[`throttle_${ty}_active_time_nc${p}_percent`] = t.dur / totalNs;
    if (t.dur > 0) out[`throttle_${ty}_avg_util_limit_nc${p}_percent`] = t.weighted / t.dur;
  }
  for (const [p, c] of byCore) {
    out[`throttle_active_nc${p}_time_ns`] = c.limited;
    out[`throttle_avg_util_limit_nc${p}_percent`] = c.weighted / totalNs;
  }
  return out;
}

/**
 * The Summary table (one row) in Explorer's groups and order (summary-groups.ts), plus the
 * Metadata fields the exports file under a group (versions, instance type) and the throttling
 * fields computed from the Throttle rows (`throttleFields`). `*_percent` fields are fractions
 * (crate/src/summary.rs, as in the exports) and show ×100. With `pause`, each group's section is
 * built in its own main-thread task (awaiting `pause` between them) and all are attached at once,
 * so the Summary's first render is never one long task; resolves when they are attached.
 */
export async function renderSummaryGroups(root: HTMLElement, summary: Table | null, metadata: Table | null, throttle: Table | null, pause: (() => Promise<void>) | null = null): Promise<void> {
  interface Field { name: string; text: string; raw: string; unit: string }
  const groups = new Map<string, Field[]>();
  const add = (group: string, f: Field): void => {
    let list = groups.get(group);
    if (list === undefined) groups.set(group, (list = []));
    if (!list.some((x) => x.name === f.name)) list.push(f);
  };
  const fields = (t: Table | null, onlyKnown: boolean, percentIsFraction: boolean): void => {
    const row = t?.get(0);
    if (t === null || row === null || row === undefined) return;
    const o = row.toJSON() as Record<string, unknown>;
    for (const f of t.schema.fields) {
      const v = o[f.name];
      if (v === null || v === undefined || f.name.startsWith('nscope_')) continue;
      const group = summaryGroup(f.name);
      if (onlyKnown && group === 'other') continue;
      const unit = f.metadata.get('unit') ?? '';
      add(group, { name: f.name, text: summaryValue(v, unit, percentIsFraction), raw: typeof v === 'bigint' ? v.toString() : String(v), unit });
    }
  };
  fields(summary, false, true);
  fields(metadata, true, false);
  // Explorer's throttling fields, from the Throttle rows and total_time.
  const totalS = Number(summary?.get(0)?.toJSON()['total_time'] ?? NaN);
  if (throttle !== null && throttle.numRows > 0 && Number.isFinite(totalS) && totalS > 0) {
    for (const [name, v] of Object.entries(throttleFields(throttle, totalS * 1e9))) {
      const unit = name.endsWith('_ns') ? 'ns' : '%';
      add(summaryGroup(name), { name, text: summaryValue(v, unit, true), raw: String(v), unit });
    }
  }
  const order = groupOrder();
  const sorted = [...groups.entries()].sort((a, b) => order.indexOf(a[0]) - order.indexOf(b[0]));
  if (sorted.length === 0) {
    root.replaceChildren(h('div', { class: 'muted' }, 'No Summary table for this profile.'));
    return;
  }
  const sections: HTMLElement[] = [];
  for (const [group, list] of sorted) {
    if (pause !== null && sections.length > 0) await pause();
    list.sort((a, b) => fieldRank(a.name) - fieldRank(b.name));
    sections.push(h('section', { class: 'summary-group', 'data-testid': 'summary-group', 'data-group': group },
      h('h3', {}, GROUP_TITLES[group] ?? group),
      h('table', { class: 'grid summary-fields' }, h('tbody', {}, list.map((f) =>
        h('tr', { 'data-field': f.name },
          h('td', { class: 'mono', title: f.unit ? `unit: ${f.unit}` : '' }, f.name),
          h('td', { class: 'num', 'data-value': f.raw }, f.text)))))));
  }
  root.replaceChildren(...sections);
}

/** Rows of a NEFF table shown on the NEFF summary at most (the Tables view has them all). */
export const NEFF_ROWS_SHOWN = 200;

/**
 * Summary of a NEFF opened without a trace (pairing NeffOnly): the compiled program's header
 * (NeffHeader via `r.summary.neff`), the instructions it holds per engine and physical core
 * (`summary.neff_instructions`: each stream's 64-byte slot count, neff.md §7), its tensors
 * (TensorInfo: variable_name, type, format, shape, size in bytes) and DMA queues (DmaQueuesInfo:
 * name, type, pcore_idx). `tensors` / `queues` are the first rows (at most NEFF_ROWS_SHOWN) or null
 * when the NEFF wrote none; the row totals come from `r.tables`. No timing: nothing ran.
 */
export function renderNeffSummary(root: HTMLElement, title: string, r: ProcessResult, tensors: Table | null, queues: Table | null): void {
  const s = r.summary;
  const instr = s.neff_instructions ?? [];
  const rows = (n: string): number => Number(r.tables.find((t) => t.name === n)?.rows ?? 0);
  const cores = [...new Set(instr.map((e) => Number(e.pcore_idx)))].sort((a, b) => a - b);
  const engines = [...new Set(instr.map((e) => e.engine))].sort((a, b) => engineRank(a) - engineRank(b));
  const countOf = (engine: string, core: number): number =>
    instr.filter((e) => e.engine === engine && Number(e.pcore_idx) === core).reduce((a, e) => a + Number(e.count), 0);
  const total = instr.reduce((a, e) => a + Number(e.count), 0);
  const neff = s.neff;
  const table = (t: Table | null, cols: readonly (readonly [string, string])[], testid: string, totalRows: number, what: string): HTMLElement => {
    if (t === null || t.numRows === 0) return h('div', { class: 'muted', 'data-testid': testid, 'data-rows': 0 }, `The NEFF lists no ${what}.`);
    const get = cols.map(([c]) => t.getChild(c));
    return h('div', {},
      h('table', { class: 'grid', 'data-testid': testid, 'data-rows': totalRows },
        h('thead', {}, h('tr', {}, cols.map(([c, label]) => h('th', { class: c === 'size' || c === 'pcore_idx' ? 'num' : '' }, label)))),
        h('tbody', {}, Array.from({ length: t.numRows }, (_, i) => h('tr', {}, cols.map(([c], j) => {
          const v = get[j]?.get(i);
          return h('td', { class: c === 'size' ? 'num' : c === 'pcore_idx' ? 'num' : 'mono' },
            c === 'size' && v !== null && v !== undefined ? bytes(Number(v)) : c === 'pcore_idx' && v !== null && v !== undefined ? coreLabel(Number(v)) : cell(v));
        }))))),
      totalRows > t.numRows ? h('div', { class: 'muted small' }, `First ${int(t.numRows)} of ${int(totalRows)}; the Tables view lists them all.`) : null);
  };
  root.replaceChildren(...nodes(
    h('h2', {}, title),
    h('p', { class: 'muted neff-note', 'data-testid': 'neff-only-note' },
      'A compiled program without a trace: no .ntff in the picked files ran it, so there is no timeline, source time or comparison. Pick the folder of a profiling run (the .ntff next to this .neff) to see how it ran.'),
    h('div', { class: 'cards' },
      card('Network', neff?.name ?? '—', 'neff-name'),
      card('Instructions in the NEFF', int(total), 'neff-instruction-count', total),
      card('Physical cores', String(cores.length), 'neff-core-count', cores.length),
      card('Tensors', int(rows('TensorInfo')), 'neff-tensor-count', rows('TensorInfo')),
      card('DMA queues', int(rows('DmaQueuesInfo')), 'neff-queue-count', rows('DmaQueuesInfo'))),
    h('div', { class: 'summary-cols neff-summary' },
      h('section', {},
        h('h3', { title: 'Slots of each engine’s instruction stream (64 bytes each); an executed profile counts the instructions that ran, which loops repeat.' }, 'Instructions per engine and physical core (in the program)'),
        engines.length === 0
          ? h('div', { class: 'muted', 'data-testid': 'neff-instructions' }, 'The NEFF names no instruction streams.')
          : h('table', { class: 'grid', 'data-testid': 'neff-instructions' },
              h('thead', {}, h('tr', {}, h('th', {}, 'Engine'), cores.map((c) => h('th', { class: 'num' }, coreLabel(c))), h('th', { class: 'num' }, 'Total'))),
              h('tbody', {}, engines.map((e) => {
                const row = cores.map((c) => countOf(e, c));
                return h('tr', { 'data-engine': e },
                  h('td', {}, engineLabel(e)),
                  row.map((v, i) => h('td', { class: 'num', 'data-testid': `neff-count-${e}-${coreLabel(cores[i] ?? 0)}`, 'data-value': v }, int(v))),
                  h('td', { class: 'num strong' }, int(row.reduce((a, b) => a + b, 0))));
              }))),
        h('h3', {}, 'Compiled program'),
        neff
          ? h('dl', { class: 'kv' },
              neff.file ? [h('dt', {}, 'file'), h('dd', { 'data-testid': 'neff-file' }, neff.file)] : null,
              h('dt', {}, 'uuid'), h('dd', { class: 'mono', 'data-testid': 'neff-uuid' }, neff.uuid ?? '—'),
              h('dt', {}, 'compiler'), h('dd', { 'data-testid': 'neff-compiler' }, neff.compiler_version ?? '—'))
          : h('div', { class: 'muted' }, 'The NEFF header could not be read (see the problems below).'),
        h('h3', {}, 'DMA queues'),
        table(queues, [['name', 'Queue'], ['type', 'type'], ['pcore_idx', 'core']], 'neff-queues', rows('DmaQueuesInfo'), 'DMA queues')),
      h('section', {},
        h('h3', {}, 'Tensors'),
        table(tensors, [['variable_name', 'Tensor'], ['type', 'type'], ['format', 'format'], ['shape', 'shape'], ['size', 'size']], 'neff-tensors', rows('TensorInfo'), 'input, output or weight tensors'))),
    r.problems.length > 0 ? h('section', {}, h('h3', {}, 'Problems'), foldedProblems(r.problems)) : null,
  ));
}
