// The System timeline of a large trace through the level-of-detail store (lod.ts): framework,
// runtime and NeuronCore tracks from summaries (one row per thread or core) or, zoomed in, from the
// window's rows (nested lanes as for a small trace). CPU and host-memory samples are small (one per
// CPU per sampling period) and are read whole by the caller.

import type { Table } from 'apache-arrow';
import { buildSystemTimeline, type SystemModel } from '../system-model.ts';
import { LodController, type LodApi, type LodState } from './lod.ts';
import { lodSources } from './render.ts';
import type { LodListing } from '../../api.ts';
import { tableFromArrays } from 'apache-arrow';

function emptyEvents(): Table {
  return tableFromArrays({ start_ts: new BigInt64Array(0), end_ts: new BigInt64Array(0) });
}

/**
 * A controller for the System timeline of processed profile `key`; `cpu`, `mem` and `threadNames`
 * as for buildSystemTimeline. The models keep the listing's axis (origin: the earliest event or
 * sample, the small-trace axis too).
 */
export function systemLod(api: LodApi, key: string, listing: LodListing, cpu: Table | null, mem: Table | null, threadNames: Map<string, string>,
  apply: (m: SystemModel, s: LodState) => void): LodController<SystemModel> {
  const origin = BigInt(listing.origin);
  const build = (tables: Map<string, Table>): SystemModel => {
    const m = buildSystemTimeline(tables.get('SystemProfileEvents') ?? emptyEvents(), cpu, mem, threadNames);
    // The axis is the listing's, whatever the window holds.
    const shift = Number(m.base - origin);
    if (shift !== 0) {
      for (const t of m.tracks) {
        for (let k = 0; k < t.starts.length; k++) {
          t.starts[k] = (t.starts[k] ?? 0) + shift;
          t.ends[k] = (t.ends[k] ?? 0) + shift;
        }
      }
      for (const c of m.counters ?? []) for (let k = 0; k < c.times.length; k++) c.times[k] = (c.times[k] ?? 0) + shift;
    }
    const tracks = listing.tracks.filter((t) => t.kind === 'system');
    const lo = tracks.reduce((a, t) => Math.min(a, t.start), Infinity);
    const hi = tracks.reduce((a, t) => Math.max(a, t.end), -Infinity);
    return { ...m, base: origin, start: listing.start, end: Math.max(listing.end, listing.start + 1), ...(Number.isFinite(lo) ? { fitStart: lo, fitEnd: Math.max(hi, lo + 1) } : {}) };
  };
  return new LodController(api, key, listing, lodSources('system'), build, apply, origin);
}
