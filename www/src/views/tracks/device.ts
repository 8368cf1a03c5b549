// The device timeline of a large profile through the level-of-detail store (lod.ts): engine rows
// (Instruction), DMA queues, pending DMA, throttle and semaphores, built by the same builders as a
// small profile's (timeline-model.ts, device-rows.ts) from summaries or from the window's rows.

import { tableFromArrays, type Table } from 'apache-arrow';
import type { LodListing } from '../../api.ts';
import { addDeviceRowsYielding } from '../device-rows.ts';
import { buildTimelineYielding, groupOf, isGroupHeader, isStepTrack, type TimelineModel, type Track } from '../timeline-model.ts';
import { LodController, span, type LodApi, type LodState, type WindowTables } from './lod.ts';
import { lodSources } from './render.ts';

/** Table a device track draws from. */
function tableOf(t: Track): string {
  return t.source ?? 'Instruction';
}

/** A track's identity across models (labels, grouping and kind are the builders'). */
function keyOf(t: Track): string {
  return `${t.kind}|${t.pcore}|${isGroupHeader(t) ? t.header : ''}|${groupOf(t) ?? ''}|${t.label}`;
}

/** `t` with no marks (idle in the window), kind and everything else kept. */
function emptied(t: Track): Track {
  const none = { starts: new Float64Array(0), ends: new Float64Array(0), rows: new Uint32Array(0), busy: new Float64Array(1), maxDur: 0 };
  return isStepTrack(t) ? { ...t, ...none, values: new Float64Array(0) } : { ...t, ...none, ops: new Uint16Array(0) };
}

function emptyInstructions(): Table {
  return tableFromArrays({ start_ts: new BigInt64Array(0), end_ts: new BigInt64Array(0) });
}

/** A new main-thread task (the builders' steps each run in their own: no long task per window). */
const nextTask = (): Promise<void> => new Promise((ok) => setTimeout(ok, 0));

/** The device model of window tables: every track of the profile, in the small-profile order. */
async function build(skeleton: { model: TimelineModel | null }, tables: WindowTables, listing: LodListing): Promise<TimelineModel> {
  const at = performance.now();
  const engines = await buildTimelineYielding(tables.get('Instruction') ?? emptyInstructions(), nextTask);
  span('lod: engine rows (several tasks)', at);
  await nextTask();
  const model = await addDeviceRowsYielding(engines, {
    dma: tables.get('DmaPacket') ?? null,
    semaphores: tables.get('SemaphoreUpdate') ?? null,
    throttle: tables.get('Throttle') ?? null,
    pending: tables.get('PendingDma') ?? null,
  }, nextTask);
  model.start = listing.start;
  model.end = Math.max(listing.end, listing.start + 1);
  const base = skeleton.model;
  if (base === null) {
    skeleton.model = model;
    return model;
  }
  // A window's rows miss the tracks idle in it: keep the profile's track list (the first, fitted
  // model's), each with this window's slices or none.
  const now = new Map(model.tracks.map((t) => [keyOf(t), t]));
  const fromRows = new Set([...tables.keys()].filter((n) => tables.get(n)?.getChild('nscope_row') !== null));
  model.tracks = base.tracks.map((t) => {
    const got = now.get(keyOf(t));
    if (got !== undefined) return got;
    if (!fromRows.has(tableOf(t))) return t;
    return emptied(t);
  });
  return model;
}

/**
 * A controller for the device timeline of processed profile `key` (listing from lodTracks) over
 * its kinds' tables (render.ts lodSources); `apply` receives each window's model
 * (TimelineView.swapModel).
 */
export function deviceLod(api: LodApi, key: string, listing: LodListing, apply: (m: TimelineModel, s: LodState) => void): LodController<TimelineModel> {
  const skeleton: { model: TimelineModel | null } = { model: null };
  return new LodController(api, key, listing, lodSources('device'), (t, l) => build(skeleton, t, l), apply, null);
}
