// Tooltip bodies of the device rows under the engines, one per row kind (TRACK_KINDS in render.ts
// names each kind's): DMA packets (DmaPacket: bytes, read/write, throughput, queue), throttle
// records (Throttle: the k/n limit), and the step rows and semaphore headers (SemaphoreUpdate,
// PendingDma: the value in force). Engine and System rows use the view's own tooltip.

import { h, nodes } from '../../dom.ts';
import { bytes, cell, int, ns } from '../../format.ts';
import { coreLabel } from '../summary.ts';
import type { Track } from '../timeline-model.ts';

/**
 * The lines of a tooltip for the mark of `tr` under the pointer: `o` its table row (column →
 * value), `name` its opcode-dictionary name, [s, e] its span in ns, `value` a step row's value.
 */
export type TrackTooltip = (o: Record<string, unknown>, tr: Track, name: string, s: number, e: number, value: number | undefined) => (Node | string)[];

const num = (o: Record<string, unknown>, k: string): number | null => (o[k] === null || o[k] === undefined ? null : Number(o[k] as number | bigint));

/** "sg00 qSyncIO0" for a grouped row, the label alone otherwise. */
const where = (tr: Track): string => (tr.group !== undefined ? `${coreLabel(tr.pcore)} ${tr.label}` : tr.label);

/** A DMA packet: its bytes over its duration, read/write split, throughput, engine and queue. */
export const dmaTooltip: TrackTooltip = (o, tr, name, s, e) => {
  const size = num(o, 'transfer_bytes');
  const rd = num(o, 'read_bytes');
  const wr = num(o, 'write_bytes');
  const tp = num(o, 'throughput');
  return nodes(
    h('div', { class: 'tt-title' }, `DMA ${cell(o['queue_name'])}`),
    h('div', {}, `${where(tr)} · ${name}`),
    h('div', { 'data-testid': 'tooltip-bytes', 'data-value': size ?? '' }, size === null ? 'size unknown' : `${bytes(size)} (${int(size)} B) in ${ns(e - s)}`),
    rd !== null || wr !== null ? h('div', { class: 'muted' }, `read ${rd === null ? '–' : bytes(rd)} · write ${wr === null ? '–' : bytes(wr)}`) : null,
    tp !== null && Number.isFinite(tp) ? h('div', { class: 'muted' }, `${(tp / 1e9).toFixed(2)} GB/s`) : null,
    h('div', {}, `start ${int(Math.round(s))} ns`),
    h('div', { class: 'muted' }, `engine ${cell(o['engine_idx'])} · queue ${cell(o['queue_idx'])}${o['variable'] && o['variable'] !== 'unknown' ? ` · ${cell(o['variable'])}` : ''}`),
  );
};

/** A throttle record: the utilisation limit k/n and how long it held. */
export const throttleTooltip: TrackTooltip = (o, tr, name, s, e) => {
  const k = num(o, 'k');
  const n = num(o, 'n');
  return nodes(
    h('div', { class: 'tt-title' }, `Throttle ${name}`),
    h('div', {}, where(tr)),
    k !== null && n !== null && n > 0 ? h('div', {}, `utilisation limited to ${k}/${n} (${((100 * k) / n).toFixed(0)}%)`) : null,
    h('div', {}, `start ${int(Math.round(s))} ns · duration ${ns(e - s)}`),
  );
};

/** A semaphore or pending-DMA value: held from s to e on a step row, an instant on a group header. */
function valueTooltip(step: boolean): TrackTooltip {
  return (o, tr, _name, s, e, value) => {
    const v = value ?? num(o, 'value');
    const title = tr.kind === 'pending' ? 'Pending DMA' : `Semaphore ${cell(o['id'])}`;
    return nodes(
      h('div', { class: 'tt-title' }, title),
      h('div', {}, where(tr)),
      h('div', { 'data-testid': 'tooltip-value', 'data-value': v ?? '' }, `value ${v === null || v === undefined ? '–' : v}`),
      step ? h('div', {}, `from ${ns(s)} for ${ns(e - s)}`) : h('div', {}, `at ${ns(s)}`),
      o['update_source'] || o['update_operation_type'] ? h('div', { class: 'muted' }, [cell(o['update_source']), cell(o['update_operation_type'])].filter(Boolean).join(' · ')) : null,
    );
  };
}

/** Step rows (semaphore values, pending DMA). */
export const stepTooltip = valueTooltip(true);
/** A semaphore group's header (its core's updates as instants). */
export const instantTooltip = valueTooltip(false);
