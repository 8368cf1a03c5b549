// Opens a timeline through the level-of-detail store when the profile is large (or when the page
// URL says `?lod=1`; `?lod=0` never): the small-profile path reads every row of the drawn columns,
// this one only summaries and windows (lod.ts).

import type { Table } from 'apache-arrow';
import type { LodListing } from '../../api.ts';
import type { TimelineView } from '../timeline.ts';
import type { TimelineModel } from '../timeline-model.ts';
import type { SystemModel } from '../system-model.ts';
import { deviceLod } from './device.ts';
import { eventRows, LOD_ROWS, SYSTEM_ROWS, type LodApi, type LodController, type LodState } from './lod.ts';
import { lodSources } from './render.ts';
import { systemLod } from './system.ts';

/** The client calls the timelines need. */
export type LodClient = LodApi & { lodTracks(key: string): Promise<LodListing> };

/** Device timeline tables drawn through the store (its kinds' tables). */
export const DEVICE_LOD_TABLES = lodSources('device').map((s) => s.table);
/** System timeline tables drawn through the store. */
export const SYSTEM_LOD_TABLES = lodSources('system').map((s) => s.table);
/** Rows of SYSTEM_LOD_TABLES above which the System timeline draws through the store. */
export { SYSTEM_ROWS as SYSTEM_LOD_ROWS };

const controllers = new WeakMap<TimelineView, LodController<unknown>>();

/**
 * Whether a profile with `tables` draws `names` through the store: above `threshold` rows of them
 * (LOD_ROWS; the System timeline SYSTEM_ROWS).
 */
export function wantsLod(tables: { name: string; rows: number }[], names: string[], threshold = LOD_ROWS): boolean {
  const flag = new URLSearchParams(globalThis.location?.search ?? '').get('lod');
  if (flag === '0') return false;
  if (flag === '1') return true;
  return eventRows(tables, names) > threshold;
}

/** Stops `view`'s controller (another profile, or the small-profile path). */
export function detachLod(view: TimelineView): void {
  controllers.get(view)?.dispose();
  controllers.delete(view);
  view.onView = null;
  delete view.root.dataset['lod'];
}

function attach<M>(view: TimelineView, ctl: LodController<M>, first: M & Parameters<TimelineView['setModel']>[0]): void {
  view.setModel(first);
  controllers.set(view, ctl as LodController<unknown>);
  const handler = (t0: number, t1: number, px: number): void => ctl.request(t0, t1, px);
  view.onView = handler;
  // Which window the drawn model is of, and per table rows or summaries (tests, tools).
  if (ctl.state !== null) view.root.dataset['lod'] = JSON.stringify(ctl.state);
}

function applier<M>(view: TimelineView, self: () => LodController<M> | undefined, fit: FitWindow | null = null) {
  return (m: M & Parameters<TimelineView['swapModel']>[0], s: LodState): void => {
    if (controllers.get(view) !== self()) return;
    view.swapModel(withFit(m, fit));
    view.root.dataset['lod'] = JSON.stringify(s);
  };
}

function plotPx(view: TimelineView): number {
  return Math.max(400, (view.root.clientWidth || 1400) - 150);
}

/** What Fit shows (ns, the model's time base): the execution window rather than stray events. */
export interface FitWindow {
  start: number;
  end: number;
}

function withFit<M>(m: M, fit: FitWindow | null): M {
  return fit === null ? m : { ...m, fitStart: fit.start, fitEnd: fit.end };
}

/** Draws the device timeline of processed profile `key` from the store; Fit shows `fit` when given. */
export async function showDeviceLod(view: TimelineView, client: LodClient, key: string, fit: FitWindow | null = null): Promise<void> {
  detachLod(view);
  const listing = await client.lodTracks(key);
  let ctl: LodController<TimelineModel> | undefined;
  const c = deviceLod(client, key, listing, applier(view, () => ctl, fit));
  ctl = c;
  attach(view, c, withFit(await c.initial(plotPx(view)), fit));
}

/** Draws the System timeline of processed profile `key` from the store (CPU and memory tables whole). */
export async function showSystemLod(view: TimelineView, client: LodClient, key: string, cpu: Table | null, mem: Table | null, threadNames: Map<string, string>): Promise<void> {
  detachLod(view);
  const listing = await client.lodTracks(key);
  let ctl: LodController<SystemModel> | undefined;
  const c = systemLod(client, key, listing, cpu, mem, threadNames, applier(view, () => ctl));
  ctl = c;
  attach(view, c, await c.initial(plotPx(view)));
}
