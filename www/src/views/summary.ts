// Summary of one processed device profile: headline numbers, instructions per engine and physical
// core, the NEFF it ran. Elements carry data-testid so browser tests read what the user reads.

import type { ProcessResult } from '../api.ts';
import { h, nodes } from '../dom.ts';
import { int, ns } from '../format.ts';
import { foldedProblems } from './profiles.ts';

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
      card('Total time', s.total_time_ns === null || s.total_time_ns === undefined ? '—' : ns(Number(s.total_time_ns)), 'total-time', Number(s.total_time_ns ?? NaN)),
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
  ));
}
