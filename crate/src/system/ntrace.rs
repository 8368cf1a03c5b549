//! `ntrace.pb` → `SystemProfileEvents` and `SystemProfileHbmUsage` with bounded state
//! (system-profile.md §5, §6, §8).
//!
//! Records stream through [`FrameReader`]; a start waits for its stop by tracking id (§5.1) and the
//! pair leaves as soon as it is complete. Rows are written in `(start, file offset)` order through
//! a reorder window of [`REORDER_WINDOW`] ready events: the file is not sorted by time (in the
//! sample, host records are monotonic per thread, hardware records of a thread go back by up to
//! 1 ms, the file as a whole by up to 16 ms, and a span's stop comes up to 379 records after its
//! start), so a window of that size reproduces the full sort on every capture whose disorder fits
//! in it. An event that still arrives after a later one has left is written where it arrives,
//! counted in [`super::SystemReport::late_events`] and reported. Open starts are capped at
//! [`MAX_OPEN`] (the oldest is kept as a zero-length row), sync points at [`MAX_SYNC_POINTS`].
//!
//! The sync-point check (§6) runs when an event is complete, against the sync points complete
//! before it (in the sample both sync points precede every hardware record of their execution).
//! HBM running totals (§8) and the device aggregates of `DeviceProfileList` are updated as rows
//! leave.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};

use crate::error::{Code, Problem, Result};
use crate::tables::{explorer, kind, TableBuilder, TableSink, C};

use super::decode::{self, FrameReader, NtraceRecord, Phase, TraceInfo};
use super::{ev, hbm, ts_i64, OpenFn, SystemReport, COLUMN_ATTRS, HBM_COLUMNS, HW_GROUP};

/// Ready events held for reordering (each ~0.5 KB: ≤ ~40 MB at this bound).
pub const REORDER_WINDOW: usize = 1 << 16;
/// Starts (and stops that came first) waiting for their other half; past it the oldest becomes
/// a zero-length row.
pub const MAX_OPEN: usize = 1 << 16;
/// Sync points kept for the §6 check (a few per execution in the samples).
pub const MAX_SYNC_POINTS: usize = 1 << 16;

/// One `SystemProfileEvents` row before emission: a start/stop pair, an instant, or an orphan.
#[derive(Debug, Clone)]
struct Event {
    id: u64,
    type_id: u64,
    start: u64,
    end: u64,
    thread: u64,
    /// Start attributes, then stop attributes (stop wins on conflicts, §5.2).
    attrs: Vec<(String, String)>,
    start_nc: Option<u64>,
    end_nc: Option<u64>,
    /// File offset of the start (or only) record.
    offset: u64,
}

impl Event {
    fn attr(&self, k: &str) -> Option<&str> {
        self.attrs
            .iter()
            .rev()
            .find(|(a, _)| a == k)
            .map(|(_, v)| v.as_str())
    }
    fn attr_u64(&self, k: &str) -> Option<u64> {
        self.attr(k).and_then(|v| v.trim().parse().ok())
    }
}

fn nc_ts(r: &NtraceRecord) -> Option<u64> {
    r.attrs
        .iter()
        .find(|(k, _)| k == "nc_timestamp_ns")
        .and_then(|(_, v)| v.trim().parse().ok())
}

fn single(r: NtraceRecord) -> Event {
    Event {
        id: r.id,
        type_id: r.event_type,
        start: r.timestamp_ns,
        end: r.timestamp_ns,
        thread: r.thread_id,
        start_nc: nc_ts(&r),
        end_nc: None,
        offset: r.offset,
        attrs: r.attrs,
    }
}

fn pair(start: NtraceRecord, stop: NtraceRecord) -> Event {
    let mut e = single(start);
    e.end = stop.timestamp_ns.max(e.start);
    e.end_nc = nc_ts(&stop);
    e.attrs.extend(stop.attrs);
    e
}

/// A `timestamp_sync_point` (§6).
struct Sync {
    worker: Option<u64>,
    cpu: u64,
    nc: u64,
}

fn adjusted(s: &Sync, nc: u64) -> Option<u64> {
    let d = i128::from(nc) - i128::from(s.nc);
    u64::try_from(i128::from(s.cpu) + d).ok()
}

/// An event in the reorder heap, ordered by `(start, offset)` (offsets are unique).
struct Ready(Event);

impl Ready {
    fn key(&self) -> (u64, u64) {
        (self.0.start, self.0.offset)
    }
}
crate::util::ord_by_key!(Ready);

/// What `DeviceProfileList` needs of the runtime trace (pairing.md §6): physical cores and the
/// device-time range (ns) of the `nc_exec_running` events.
#[derive(Debug, Default)]
pub(super) struct ExecSpan {
    pub cores: BTreeSet<u32>,
    pub nc_range: Option<(u64, u64)>,
}

/// Records waiting for their other half, by id, with their arrival order for eviction.
#[derive(Default)]
struct Waiting {
    by_id: HashMap<u64, NtraceRecord>,
    /// File offset → id, to find the oldest.
    order: BTreeMap<u64, u64>,
}

impl Waiting {
    fn take(&mut self, id: u64) -> Option<NtraceRecord> {
        let r = self.by_id.remove(&id)?;
        self.order.remove(&r.offset);
        Some(r)
    }
    /// Inserts `r` under `id`; returns the record it replaced and, past [`MAX_OPEN`], the oldest.
    fn put(&mut self, id: u64, r: NtraceRecord) -> (Option<NtraceRecord>, Option<NtraceRecord>) {
        self.order.insert(r.offset, id);
        let old = self.by_id.insert(id, r);
        if let Some(o) = &old {
            self.order.remove(&o.offset);
        }
        let evicted = if self.by_id.len() > MAX_OPEN {
            self.order
                .pop_first()
                .and_then(|(_, id)| self.by_id.remove(&id))
        } else {
            None
        };
        (old, evicted)
    }
    fn drain_by_offset(&mut self) -> Vec<NtraceRecord> {
        let order = std::mem::take(&mut self.order);
        order
            .into_values()
            .filter_map(|id| self.by_id.remove(&id))
            .collect()
    }
}

/// Writes events as they leave the reorder window: the event row, its HBM row, the aggregates.
struct Emitter<'a> {
    info: &'a TraceInfo,
    instance_id: &'a str,
    pid: Option<u64>,
    ev: TableBuilder,
    hbm: TableBuilder,
    /// (hbm, worker, column slot) → bytes; slot = HBM_COLUMNS index, or len for unknown.
    hbm_state: BTreeMap<(i64, i64, usize), i64>,
    heap: BinaryHeap<Reverse<Ready>>,
    last_key: Option<(u64, u64)>,
    /// Events written after a later one (window overflow), and the first one's offset.
    late: u64,
    first_late: Option<u64>,
    /// exec_id → sync points in completion order.
    syncs: HashMap<u64, Vec<Sync>>,
    n_syncs: usize,
    syncs_dropped: u64,
    exec: ExecSpan,
}

impl<'a> Emitter<'a> {
    fn new(info: &'a TraceInfo, instance_id: &'a str, pid: Option<u64>) -> Self {
        Emitter {
            info,
            instance_id,
            pid,
            ev: TableBuilder::new(&explorer::SYSTEM_PROFILE_EVENTS),
            hbm: TableBuilder::new(&explorer::SYSTEM_PROFILE_HBM_USAGE),
            hbm_state: BTreeMap::new(),
            heap: BinaryHeap::new(),
            last_key: None,
            late: 0,
            first_late: None,
            syncs: HashMap::new(),
            n_syncs: 0,
            syncs_dropped: 0,
            exec: ExecSpan::default(),
        }
    }

    /// A complete event: sync-point rule, then into the window (oldest out past its size).
    fn ready(
        &mut self,
        mut e: Event,
        rep: &mut SystemReport,
        sink: &mut dyn TableSink,
    ) -> Result<()> {
        if self.info.event_name(e.type_id) == "timestamp_sync_point" {
            self.add_sync(&e);
        } else {
            self.check_sync(&mut e, rep);
        }
        self.heap.push(Reverse(Ready(e)));
        if self.heap.len() > REORDER_WINDOW {
            if let Some(Reverse(Ready(e))) = self.heap.pop() {
                self.emit(e, rep, sink)?;
            }
        }
        Ok(())
    }

    fn add_sync(&mut self, e: &Event) {
        let (Some(exec), Some(cpu), Some(nc)) = (
            e.attr_u64("exec_id"),
            e.attr_u64("cpu_timestamp_ns"),
            e.attr_u64("nc_timestamp_ns"),
        ) else {
            return;
        };
        if self.n_syncs >= MAX_SYNC_POINTS {
            self.syncs_dropped += 1;
            return;
        }
        self.n_syncs += 1;
        self.syncs.entry(exec).or_default().push(Sync {
            worker: e.attr_u64("worker_gid"),
            cpu,
            nc,
        });
    }

    /// Validates field 2 of a hardware event against the sync-point rule; recomputes it where
    /// the record has no host time (field 2 = 0).
    fn check_sync(&self, e: &mut Event, rep: &mut SystemReport) {
        let Some(exec) = e.attr_u64("exec_id") else {
            return;
        };
        let Some(all) = self.syncs.get(&exec) else {
            return;
        };
        let worker = e.attr_u64("worker_gid");
        let cands: Vec<&Sync> = all
            .iter()
            .filter(|s| s.worker.is_none() || s.worker == worker)
            .collect();
        if cands.is_empty() {
            return;
        }
        // Pick the sync point that reproduces the start; use it for the stop too.
        let chosen = e.start_nc.and_then(|nc| {
            cands
                .iter()
                .find(|s| adjusted(s, nc) == Some(e.start))
                .copied()
        });
        let mut fixed = [None, None];
        for (i, (host, nc)) in [(e.start, e.start_nc), (e.end, e.end_nc)]
            .into_iter()
            .enumerate()
        {
            let Some(nc) = nc else { continue };
            if host == 0 {
                // No host time: apply the rule with the chosen (else first) sync point.
                let s = chosen.or(cands.first().copied());
                if let (Some(s), Some(slot)) = (s, fixed.get_mut(i)) {
                    *slot = adjusted(s, nc);
                }
                continue;
            }
            rep.sync.checked += 1;
            let ok = match chosen {
                Some(s) => adjusted(s, nc) == Some(host),
                None => cands.iter().any(|s| adjusted(s, nc) == Some(host)),
            };
            if ok {
                rep.sync.matched += 1;
            }
        }
        let [a, b] = fixed;
        if let Some(a) = a {
            e.start = a;
            rep.sync.recomputed += 1;
        }
        if let Some(b) = b {
            e.end = b.max(e.start);
            rep.sync.recomputed += 1;
        }
    }

    /// Writes one event's rows and updates the aggregates.
    fn emit(&mut self, e: Event, rep: &mut SystemReport, sink: &mut dyn TableSink) -> Result<()> {
        let key = (e.start, e.offset);
        match self.last_key {
            Some(k) if key < k => {
                self.late += 1;
                self.first_late.get_or_insert(e.offset);
            }
            _ => self.last_key = Some(key),
        }
        let name = self.info.event_name(e.type_id);
        if name == "nc_exec_running" {
            if let Some(c) = e
                .attr_u64("device_core_idx")
                .and_then(|c| u32::try_from(c).ok())
            {
                self.exec.cores.insert(c);
            }
            for t in [e.start_nc, e.end_nc].into_iter().flatten() {
                let r = self
                    .exec
                    .nc_range
                    .map_or((t, t), |(a, b)| (a.min(t), b.max(t)));
                self.exec.nc_range = Some(r);
            }
        }
        self.event_row(&e, &name, rep, sink)?;
        self.hbm_row(&e, sink)
    }

    fn event_row(
        &mut self,
        e: &Event,
        name: &str,
        rep: &mut SystemReport,
        sink: &mut dyn TableSink,
    ) -> Result<()> {
        let b = &mut self.ev;
        let hw = HW_GROUP.contains(&name) || e.start_nc.is_some() || e.end_nc.is_some();
        let (start, end) = (ts_i64(e.start), ts_i64(e.end));
        rep.widen(start);
        rep.widen(end);
        if name == "nc_exec_running" {
            let core = e.attr("device_core_idx").unwrap_or("?").to_string();
            *rep.exec_spans_per_core.entry(core).or_default() += 1;
        }
        match rep.event_counts.get_mut(name) {
            Some(n) => *n += 1,
            None => {
                rep.event_counts.insert(name.to_string(), 1);
            }
        }
        b.set(ev::ID, ts_i64(e.id));
        b.set(ev::NAME, name);
        b.set(ev::START, start);
        b.set(ev::END, end);
        b.set(ev::DURATION, end.saturating_sub(start));
        b.set(ev::SOURCE, if hw { "neuron_hw" } else { "neuron_rt" });
        b.set(ev::INSTANCE, self.instance_id);
        b.set(ev::PID, self.pid.map(ts_i64));
        b.set(ev::TID, ts_i64(e.thread));
        let mut extra = serde_json::Map::new();
        let mut col_attr = |key: &str, col: C<kind::I64>, b: &mut TableBuilder| {
            if let Some(v) = e.attr(key) {
                match v.trim().parse::<i64>() {
                    Ok(n) => b.set(col, n),
                    Err(_) => {
                        extra.insert(key.into(), v.into());
                    }
                }
            }
        };
        col_attr("nc_idx", ev::NC, b);
        col_attr("worker_gid", ev::WORKER, b);
        col_attr("device_core_idx", ev::PCORE, b);
        // Merged attributes: the last value of a key wins (stop over start).
        for (k, v) in &e.attrs {
            if !COLUMN_ATTRS.contains(&k.as_str()) {
                extra.insert(k.clone(), serde_json::Value::String(v.clone()));
            }
        }
        if let Some(neff) = e.attr_u64("model_id").and_then(|m| self.info.model_neff(m)) {
            extra.insert("model_neff".into(), neff.into());
        }
        if !extra.is_empty() {
            let j = serde_json::Value::Object(extra).to_string();
            b.set(ev::EXTRA, j.as_str());
        }
        b.end_row_into(sink)
    }

    /// `SystemProfileHbmUsage` from `nrt_dma_mem_alloc` / `nrt_dma_mem_dealloc` (§8): one row
    /// per stop record, per `hbm_idx`. A category's value is the runtime's own running total
    /// (`usage_type_total_bytes` of the stop, per worker) summed over workers sharing the HBM;
    /// without that attribute, `allocated_bytes` − `freed_bytes` is applied to the last value.
    /// `device_idx` is 0: the files name no device [INF].
    fn hbm_row(&mut self, e: &Event, sink: &mut dyn TableSink) -> Result<()> {
        // Memory events are recognised by their attributes (§5.2), not by type id.
        let alloc = e.attr("allocated_bytes").is_some();
        if e.attr("usage_type").is_none() || (!alloc && e.attr("freed_bytes").is_none()) {
            return Ok(());
        }
        let Some(hbm) = e.attr("hbm_idx").and_then(|v| v.trim().parse::<i64>().ok()) else {
            return Ok(());
        };
        let worker = e
            .attr("worker_gid")
            .and_then(|v| v.trim().parse::<i64>().ok())
            .unwrap_or(-1);
        // usage_type is a start attribute; a stop never repeats it.
        let ut = e
            .attrs
            .iter()
            .find(|(k, _)| k == "usage_type")
            .map(|(_, v)| v.as_str())
            .unwrap_or("");
        let slot = HBM_COLUMNS
            .iter()
            .position(|(u, _)| *u == ut)
            .unwrap_or(HBM_COLUMNS.len());
        let key = (hbm, worker, slot);
        let cur = self.hbm_state.get(&key).copied().unwrap_or(0);
        let new = match e
            .attr("usage_type_total_bytes")
            .and_then(|v| v.trim().parse().ok())
        {
            Some(t) => t,
            None => {
                let d: i64 = if alloc {
                    e.attr("allocated_bytes")
                } else {
                    e.attr("freed_bytes")
                }
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
                if alloc {
                    cur.saturating_add(d)
                } else {
                    cur.saturating_sub(d)
                }
            }
        };
        self.hbm_state.insert(key, new);
        let mut sums = [0i64; HBM_COLUMNS.len() + 1];
        for (&(_, _, s), &v) in self
            .hbm_state
            .range((hbm, i64::MIN, 0)..=(hbm, i64::MAX, usize::MAX))
        {
            if let Some(x) = sums.get_mut(s) {
                *x = x.saturating_add(v);
            }
        }
        let b = &mut self.hbm;
        b.set(hbm::TS, ts_i64(e.end));
        let mut total = 0i64;
        for (i, &(_, c)) in HBM_COLUMNS.iter().enumerate() {
            let v = sums.get(i).copied().unwrap_or(0);
            total = total.saturating_add(v);
            b.set(c, v);
        }
        let unk = sums.last().copied().unwrap_or(0);
        b.set(hbm::UNKNOWN, unk);
        b.set(hbm::TOTAL, total.saturating_add(unk));
        b.set(hbm::DEVICE, 0i64);
        b.set(hbm::HBM, hbm);
        b.set(hbm::INSTANCE, self.instance_id);
        b.end_row_into(sink)
    }

    /// Drains the window and closes both tables.
    fn finish(
        mut self,
        path: Option<&str>,
        rep: &mut SystemReport,
        sink: &mut dyn TableSink,
    ) -> Result<ExecSpan> {
        while let Some(Reverse(Ready(e))) = self.heap.pop() {
            self.emit(e, rep, sink)?;
        }
        let n = self.ev.finish_into(sink)?;
        rep.rows.insert(self.ev.def().name.into(), n);
        let n = self.hbm.finish_into(sink)?;
        if n > 0 {
            rep.rows.insert(self.hbm.def().name.into(), n);
        }
        rep.late_events = self.late;
        if let (Some(off), Some(path)) = (self.first_late, path) {
            rep.problems.push(
                Problem::new(
                    Code::ReadIncomplete,
                    Some(path),
                    format!(
                        "{path}: {} events completed more than {REORDER_WINDOW} events after a later-starting one (first: the record at offset {off}); written out of start order",
                        self.late
                    ),
                )
                .at(off),
            );
        }
        if self.syncs_dropped > 0 {
            if let Some(path) = path {
                rep.problems.push(Problem::new(
                    Code::ReadIncomplete,
                    Some(path),
                    format!(
                        "{path}: {} timestamp_sync_point events past the first {MAX_SYNC_POINTS} not used for the hardware-time check",
                        self.syncs_dropped
                    ),
                ));
            }
        }
        Ok(self.exec)
    }
}

/// Streams `ntrace.pb` (when `path` is given) into `SystemProfileEvents` and
/// `SystemProfileHbmUsage` (see the module doc), recording counts and problems in `rep`.
/// Returns what `DeviceProfileList` needs. Errors: only sink errors.
#[allow(clippy::too_many_arguments)]
pub(super) fn stream_events(
    path: Option<&str>,
    open: OpenFn<'_>,
    info: &TraceInfo,
    expected: Option<u64>,
    instance_id: &str,
    pid: Option<u64>,
    rep: &mut SystemReport,
    sink: &mut dyn TableSink,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<ExecSpan> {
    let mut em = Emitter::new(info, instance_id, pid);
    if let Some(path) = path {
        match open(path) {
            Ok(src) => read_records(path, &*src, info, expected, &mut em, rep, sink, progress)?,
            Err(e) => rep
                .problems
                .push(Problem::from_error(Code::ProcessIncomplete, path, &e)),
        }
    }
    em.finish(path, rep, sink)
}

/// Pairs start/stop records by tracking id (§5.1) and hands complete events to `em`.
#[allow(clippy::too_many_arguments)]
fn read_records(
    path: &str,
    src: &dyn crate::source::ByteSource,
    info: &TraceInfo,
    expected: Option<u64>,
    em: &mut Emitter<'_>,
    rep: &mut SystemReport,
    sink: &mut dyn TableSink,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<()> {
    let total = src.len();
    let mut fr = FrameReader::new(src);
    let mut starts = Waiting::default();
    let mut early_stops = Waiting::default();
    let mut evicted = 0u64;
    let mut records = 0u64;
    let mut bad = 0u64;
    let mut last_tick = 0u64;
    loop {
        let frame = match fr.next_frame() {
            Ok(Some(f)) => f,
            Ok(None) => break,
            Err(e) => {
                rep.problems
                    .push(Problem::from_error(frame_code(&e), path, &e));
                break;
            }
        };
        records += 1;
        let rec = match decode::decode_ntrace(frame.bytes, frame.offset) {
            Ok(r) => r,
            Err(e) => {
                bad += 1;
                if bad <= 10 {
                    rep.problems
                        .push(Problem::from_error(Code::ProcessIncomplete, path, &e));
                }
                continue;
            }
        };
        match rec.phase {
            Phase::Start => {
                if let Some(stop) = early_stops.take(rec.id) {
                    note_pair(&rec, &stop, rep);
                    em.ready(pair(rec, stop), rep, sink)?;
                } else {
                    let (old, ev) = starts.put(rec.id, rec);
                    evicted += u64::from(ev.is_some());
                    for r in [old, ev].into_iter().flatten() {
                        rep.unpaired_starts += 1;
                        em.ready(single(r), rep, sink)?;
                    }
                }
            }
            Phase::Stop => {
                if let Some(start) = starts.take(rec.tracking_id) {
                    note_pair(&start, &rec, rep);
                    em.ready(pair(start, rec), rep, sink)?;
                } else {
                    let (old, ev) = early_stops.put(rec.tracking_id, rec);
                    evicted += u64::from(ev.is_some());
                    for r in [old, ev].into_iter().flatten() {
                        rep.unpaired_stops += 1;
                        em.ready(single(r), rep, sink)?;
                    }
                }
            }
            Phase::Instant | Phase::Other(_) => {
                rep.instants += 1;
                em.ready(single(rec), rep, sink)?;
            }
        }
        let pos = fr.position();
        if pos - last_tick >= decode::CHUNK as u64 {
            last_tick = pos;
            progress(path, pos, total);
        }
    }
    progress(path, fr.position(), total);
    if bad > 10 {
        rep.problems.push(Problem::new(
            Code::ProcessIncomplete,
            Some(path),
            format!("{path}: {bad} records could not be decoded (first 10 listed)"),
        ));
    }
    if evicted > 0 {
        rep.problems.push(Problem::new(
            Code::UnpairedEvent,
            Some(path),
            format!(
                "{path}: {evicted} records waited for their other half while {MAX_OPEN} others did; the oldest were kept as zero-length events"
            ),
        ));
    }
    // Orphans are kept as zero-length rows so nothing decoded is lost.
    let orphan_starts = starts.drain_by_offset();
    let orphan_stops = early_stops.drain_by_offset();
    rep.unpaired_starts += orphan_starts.len() as u64;
    rep.unpaired_stops += orphan_stops.len() as u64;
    for (list, what) in [
        (&orphan_starts, "start records have no stop"),
        (&orphan_stops, "stop records have no start"),
    ] {
        if let Some(r) = list.first() {
            rep.problems.push(
                Problem::new(
                    Code::UnpairedEvent,
                    Some(path),
                    format!(
                        "{path}: {} {what} (first: {} at offset {}); kept as zero-length events",
                        list.len(),
                        info.event_name(r.event_type),
                        r.offset
                    ),
                )
                .at(r.offset),
            );
        }
    }
    for r in orphan_starts.into_iter().chain(orphan_stops) {
        em.ready(single(r), rep, sink)?;
    }
    let remainder = total.saturating_sub(fr.position());
    if let Some(exp) = expected {
        if exp != records {
            rep.problems.push(super::count_problem(
                path,
                records,
                exp,
                total,
                &rep.problems,
            ));
        }
    } else if total == 0 {
        // No trace_info.pb count to hold it against: an empty runtime trace is still said.
        rep.problems.push(
            Problem::new(
                Code::ReadIncomplete,
                Some(path),
                format!("{path}: empty file (0 bytes): no runtime event was recorded in it"),
            )
            .at(0),
        );
    }
    rep.files.push(super::FileCount {
        file: path.into(),
        bytes: total,
        records,
        remainder,
        expected,
    });
    Ok(())
}

/// A framing error's code: a cut last record `TRUNCATED_TRACE` (everything before is kept; an
/// error, as a cut `trace.json` or NTFF), an implausible length prefix (corruption)
/// `ERROR_PROCESS_INCOMPLETE`.
pub(super) fn frame_code(e: &crate::error::Error) -> Code {
    match e {
        crate::error::Error::Truncated { .. } => Code::TruncatedTrace,
        _ => Code::ProcessIncomplete,
    }
}

fn note_pair(start: &NtraceRecord, stop: &NtraceRecord, rep: &mut SystemReport) {
    rep.spans += 1;
    if start.event_type != stop.event_type {
        rep.type_mismatches += 1;
    }
}
