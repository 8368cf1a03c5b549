// Tooltip bodies of the device rows under the engines, one per row kind (TRACK_KINDS in render.ts
// names each kind's): DMA packets (DmaPacket: bytes, read/write, throughput, queue), throttle
// records (Throttle: the k/n limit), and the step rows and semaphore headers (SemaphoreUpdate,
// PendingDma: the value in force). Engine and System rows use the view's own tooltip.

import { h, nodes } from '../../dom.ts';
import { bytes, cell, int, ns } from '../../format.ts';
import { coreLabel } from '../summary.ts';
import { groupOf } from '../timeline-model.ts';
import type { GroupHeaderTrack, SliceTrack, StepTrack, Track } from '../timeline-model.ts';

/**
 * The lines of a tooltip for mark k of `tr` (a row of type T) under the pointer: `o` its table row
 * (column → value), `name` its opcode-dictionary name ("" when none).
 */
export type TrackTooltip<T extends Track> = (o: Record<string, unknown>, tr: T, k: number, name: string) => (Node | string)[];

/** The span of mark k, ns. */
const spanOf = (tr: Track, k: number): [number, number] => [tr.starts[k] ?? 0, tr.ends[k] ?? 0];

const num = (o: Record<string, unknown>, k: string): number | null => (o[k] === null || o[k] === undefined ? null : Number(o[k] as number | bigint));

/** "sg00 qSyncIO0" for a grouped row, the label alone otherwise. */
export const rowName = (tr: Track): string => (groupOf(tr) !== undefined ? `${coreLabel(tr.pcore)} ${tr.label}` : tr.label);

/** A DMA packet: its bytes over its duration, read/write split, throughput, engine and queue. */
export const dmaTooltip: TrackTooltip<SliceTrack<'dma'> | GroupHeaderTrack<'dma-group'>> = (o, tr, k, name) => {
  const [s, e] = spanOf(tr, k);
  const size = num(o, 'transfer_bytes');
  const rd = num(o, 'read_bytes');
  const wr = num(o, 'write_bytes');
  const tp = num(o, 'throughput');
  return nodes(
    h('div', { class: 'tt-title' }, `DMA ${cell(o['queue_name'])}`),
    h('div', {}, `${rowName(tr)} · ${name}`),
    h('div', { 'data-testid': 'tooltip-bytes', 'data-value': size ?? '' }, size === null ? 'size unknown' : `${bytes(size)} (${int(size)} B) in ${ns(e - s)}`),
    rd !== null || wr !== null ? h('div', { class: 'muted' }, `read ${rd === null ? '–' : bytes(rd)} · write ${wr === null ? '–' : bytes(wr)}`) : null,
    tp !== null && Number.isFinite(tp) ? h('div', { class: 'muted' }, `${(tp / 1e9).toFixed(2)} GB/s`) : null,
    h('div', {}, `start ${int(Math.round(s))} ns`),
    h('div', { class: 'muted' }, `engine ${cell(o['engine_idx'])} · queue ${cell(o['queue_idx'])}${o['variable'] && o['variable'] !== 'unknown' ? ` · ${cell(o['variable'])}` : ''}`),
  );
};

/** A throttle record: the utilisation limit k/n and how long it held. */
export const throttleTooltip: TrackTooltip<SliceTrack<'throttle'>> = (o, tr, mark, name) => {
  const [s, e] = spanOf(tr, mark);
  const k = num(o, 'k');
  const n = num(o, 'n');
  return nodes(
    h('div', { class: 'tt-title' }, `Throttle ${name}`),
    h('div', {}, rowName(tr)),
    k !== null && n !== null && n > 0 ? h('div', {}, `utilisation limited to ${k}/${n} (${((100 * k) / n).toFixed(0)}%)`) : null,
    h('div', {}, `start ${int(Math.round(s))} ns · duration ${ns(e - s)}`),
  );
};

/** A semaphore or pending-DMA value `v`: held from s to e on a step row (`step`), an instant on a group header. */
function valueLines(o: Record<string, unknown>, tr: Track, k: number, v: number | null, step: boolean): (Node | string)[] {
  const [s, e] = spanOf(tr, k);
  const title = tr.kind === 'pending' ? 'Pending DMA' : `Semaphore ${cell(o['id'])}`;
  return nodes(
    h('div', { class: 'tt-title' }, title),
    h('div', {}, rowName(tr)),
    h('div', { 'data-testid': 'tooltip-value', 'data-value': v ?? '' }, `value ${v === null ? '–' : v}`),
    step ? h('div', {}, `from ${ns(s)} for ${ns(e - s)}`) : h('div', {}, `at ${ns(s)}`),
    o['update_source'] || o['update_operation_type'] ? h('div', { class: 'muted' }, [cell(o['update_source']), cell(o['update_operation_type'])].filter(Boolean).join(' · ')) : null,
  );
}

/** Step rows (semaphore values, pending DMA): the value the row holds at mark k. */
export const stepTooltip: TrackTooltip<StepTrack> = (o, tr, k) => valueLines(o, tr, k, tr.values[k] ?? num(o, 'value'), true);
/** A semaphore group's header (its core's updates as instants): the update's value from its row. */
export const instantTooltip: TrackTooltip<GroupHeaderTrack<'semaphore-group'>> = (o, tr, k) => valueLines(o, tr, k, num(o, 'value'), false);
