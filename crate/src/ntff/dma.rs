//! NTFF DMA (type 4), throttle (type 5) records and the DMA queue table → `DmaPacket`,
//! `Throttle`, `ThrottleSummary` and `DmaQueuesInfo` (ntff.md §3.3.2, §4.4, §4.5, §10 steps 6–7;
//! corrections in docs/formats.md "NTFF → DMA and throttle").
//!
//! Called by [`super::decode()`] once per physical core. Buffers are streamed in
//! [`super::decode::CHUNK`]-byte pieces; pairing keeps at most [`MAX_OPEN_PER_STREAM`] open
//! phase-1 records per (engine, queue) stream and [`MAX_OPEN_DMA`] per core.
//!
//! After the rows, a second, time-ordered pass over the same records (a k-way merge of the
//! buffer's runs, each read in pieces of [`RUN_BUDGET`] ÷ runs bytes) writes `DmaUsage` online
//! ([`crate::derived::DmaUsageSeries`]) and gathers the Summary's DMA fields
//! ([`crate::summary::DmaTimes`] in [`DmaCoreStats::times`]), so neither keeps a list of the
//! packets (docs/formats.md "Derived tables" → "Memory").

use std::cmp::Reverse;
use std::collections::binary_heap::PeekMut;
use std::collections::{BinaryHeap, VecDeque};

use rustc_hash::FxHashMap;

use super::decode::{clamp_i64, stream_buffer, CoreSummary, DecodeReport, Rec, Window};
use super::{NtffInfo, SubgraphInfo, TraceBuffer};
use crate::derived::DmaUsageSeries;
use crate::error::{Error, Problem, Result};
use crate::neff::explorer_queue_name;
use crate::source::ByteSource;
use crate::summary::{dma_group, DmaGroup, DmaTimes};
use crate::tables::{explorer, Memo, TableBuilder, TableSink};

/// Open phase-1 records kept per (engine, queue) stream before the oldest is dropped.
pub const MAX_OPEN_PER_STREAM: usize = 1 << 16;
/// Open phase-1 records kept per core in total (bounds memory on corrupt input).
pub const MAX_OPEN_DMA: usize = 1 << 20;

/// DMA record phase (w1[3:0], ntff.md §4.4): packet start.
pub const PHASE_START: u32 = 1;
/// Packet end (data done): carries size and CRC.
pub const PHASE_END: u32 = 5;

/// Per-core DMA and throttle numbers (for `Summary`, ntff.md §5.2).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DmaCoreStats {
    /// `DmaPacket` rows written.
    pub packets: u64,
    /// Sum of `transfer_bytes` over those rows.
    pub bytes: u64,
    /// Streams omitted by the stream-dropping rule (first in-window phase 1/5 record is a 5).
    pub dropped_streams: u64,
    /// Packets omitted with them.
    pub dropped_packets: u64,
    /// Phase-1 records never matched by a phase 5 (still open at the end, or evicted).
    pub unpaired_starts: u64,
    /// Phase-5 records without an open phase 1 in a kept stream.
    pub unpaired_ends: u64,
    /// `Throttle` rows written.
    pub throttles: u64,
    /// `DmaPacketAggregated` rows written (static-queue transfers; they count in `trace_count`).
    pub aggregated: u64,
    /// Records set aside by kind, with the offset of the first (reported as problems).
    pub set_aside: super::errors::DmaSetAside,
    /// The time-ordered pass's results (Summary DMA fields, `DmaUsage` rows; not serialised).
    #[serde(skip)]
    pub times: DmaTimes,
}

/// Packet size of a static-queue transfer's completion packet (the semaphore write that ends
/// each engine's share of a transfer; docs/formats.md "DmaPacketAggregated").
pub const COMPLETION_BYTES: u64 = 4;

/// One static-queue transfer being aggregated (docs/formats.md "DmaPacketAggregated"). One per
/// transfer is held until the end of the core, so it is 64 B without heap: its id is the core's
/// first id + its index in [`Aggs`], its name and queue type an index into the core's
/// `agg_names` (one entry per static stream).
struct Agg {
    /// ps relative to t0.
    start_ps: i128,
    end_ps: i128,
    bytes: u64,
    engine: i64,
    packets: i64,
    /// Index into `agg_names`.
    name: u32,
    crc: u16,
    /// ntff.md §4.4: 4 bits.
    queue: u8,
}

/// Entries per chunk of [`Aggs`].
const AGG_CHUNK: usize = 4096;

/// A core's transfers in id order, in chunks of [`AGG_CHUNK`]: a `Vec` grown by doubling holds
/// up to twice its entries, and three times while it moves them.
#[derive(Default)]
struct Aggs {
    chunks: Vec<Vec<Agg>>,
    len: usize,
}

impl Aggs {
    /// Appends `a`; its index.
    fn push(&mut self, a: Agg) -> usize {
        match self.chunks.last_mut() {
            Some(c) if c.len() < AGG_CHUNK => c.push(a),
            _ => {
                let mut c = Vec::with_capacity(AGG_CHUNK);
                c.push(a);
                self.chunks.push(c);
            }
        }
        self.len += 1;
        self.len - 1
    }
    fn get_mut(&mut self, k: usize) -> Option<&mut Agg> {
        self.chunks.get_mut(k / AGG_CHUNK)?.get_mut(k % AGG_CHUNK)
    }
    fn iter(&self) -> impl Iterator<Item = &Agg> {
        self.chunks.iter().flatten()
    }
}

/// Where a DMA queue's packets come from (Explorer enum `DmaQueueType`, ntff.md §3.3.2).
pub fn queue_type(entry: Option<&super::DmaQueueInfo>) -> &'static str {
    match entry {
        None => "instruction",
        Some(q) if q.name.ends_with("DynamicHW") => "hardware_dynamic",
        Some(q) if q.name.ends_with("Dynamic") => "software_dynamic",
        // Static compiler queue: the inf2 exports call `qSPSpillReload0` (type code 2) "data";
        // the other static types need the NEFF dma blocks.
        Some(q) if q.queue_type == 2 => "data",
        Some(_) => "unknown",
    }
}

/// `DmaPacket.queue_name` as the exports' `subgroup`: `Q<queue>-E<engine>` for dynamic queues
/// and queues outside the table, `<Explorer queue name>-Q<queue>-E<engine>` for static queues
/// (v5 exports: `qSyncSpillReload0-Q1-E0`; Explorer's schema example `qScalarSpillReload0-Q1-E64`).
pub fn queue_name(entry: Option<&super::DmaQueueInfo>, queue: u32, engine: i64) -> String {
    match entry {
        Some(q) if !q.name.ends_with("Dynamic") && !q.name.ends_with("DynamicHW") => {
            format!("{}-Q{queue}-E{engine}", explorer_queue_name(&q.name))
        }
        _ => format!("Q{queue}-E{engine}"),
    }
}

/// Packet throughput in B/s as the exports compute it (ntff.md §4.4): the duration in seconds
/// rounded to float32, then a float32 quotient. `None` for a zero duration.
pub fn throughput(bytes: u64, duration_fs: i128) -> Option<f32> {
    if duration_fs <= 0 {
        return None;
    }
    // i64 → f64 when it fits (the same rounding as i128 → f64, a libcall that the compiler
    // otherwise computes on both branches).
    let fs = match i64::try_from(duration_fs) {
        Ok(d) => d as f64,
        Err(_) => wide_to_f64(duration_fs),
    };
    let secs = (fs * 1e-15) as f32;
    (secs > 0.0).then(|| bytes as f32 / secs)
}

/// `v as f64`, out of line: only for durations beyond ±9.2 · 10¹⁸ fs.
#[cold]
#[inline(never)]
fn wide_to_f64(v: i128) -> f64 {
    v as f64
}

/// `DmaQueuesInfo.type` from the queue-table type code (16/16 exports: 2 → `weights`,
/// absent → `unknown`; other codes never exported).
pub fn queue_info_type(code: u32) -> &'static str {
    match code {
        2 => "weights",
        _ => "unknown",
    }
}

// Typed column ids of `DmaPacket` (a misspelt name or a wrong type fails to compile).
crate::cols!(mod pk = crate::tables::explorer::DMA_PACKET {
    START: I64 = "start_ts",
    END: I64 = "end_ts",
    DUR: I64 = "duration_ns",
    PCORE: I64 = "pcore_idx",
    ID: I64 = "id",
    PACKET_IDX: I32 = "packet_idx",
    AGG: I64 = "packet_aggregation_id",
    ENGINE: I64 = "engine_idx",
    READ: I64 = "read_bytes",
    WRITE: I64 = "write_bytes",
    TRANSFER: I64 = "transfer_bytes",
    THROUGHPUT: F32 = "throughput",
    QTYPE: Str = "queue_type",
    VARIABLE: Str = "variable",
    QNAME: Str = "queue_name",
    QIDX: I64 = "queue_idx",
    CRC: I64 = "crc",
    SG: Str = "nscope_subgraph",
    FIELD: I32 = "nscope_dma_engine_field",
    RAW_S: I64 = "nscope_raw_start_ticks",
    RAW_E: I64 = "nscope_raw_end_ticks",
});
crate::cols!(mod agg = crate::tables::explorer::DMA_PACKET_AGGREGATED {
    START: I64 = "start_ts",
    END: I64 = "end_ts",
    DURATION: I64 = "duration_ns",
    ID: I64 = "id",
    PCORE: I64 = "pcore_idx",
    QIDX: I64 = "queue_idx",
    QNAME: Str = "queue_name",
    QTYPE: Str = "queue_type",
    READ: I64 = "read_bytes",
    WRITE: I64 = "write_bytes",
    TRANSFER: I64 = "transfer_bytes",
    THROUGHPUT: F32 = "throughput",
    SG: Str = "nscope_subgraph",
    ENGINE: I64 = "nscope_engine_idx",
    CRC: I64 = "nscope_crc",
    PACKETS: I64 = "nscope_packets",
});
crate::cols!(mod thr = crate::tables::explorer::THROTTLE {
    DURATION: I64 = "duration",
    K: I32 = "k",
    N: I32 = "n",
    TS: I64 = "timestamp",
    TYPE: Str = "type",
    PCORE: I64 = "pcore_idx",
    SG: Str = "nscope_subgraph",
    CODE: I32 = "nscope_type_code",
    W0: I64 = "nscope_raw_w0",
});
crate::cols!(mod tsum = crate::tables::explorer::THROTTLE_SUMMARY {
    NC: I32 = "nc_idx",
    TYPE: Str = "throttle_type",
    TIME: I64 = "throttle_active_time_ns",
    PERCENT: F32 = "throttle_active_time_percent",
    UTIL: F32 = "max_achievable_util_with_throttling_percent",
});
crate::cols!(mod queue = crate::tables::explorer::DMA_QUEUES_INFO {
    NAME: Str = "name",
    TYPE: Str = "type",
    PCORE: I64 = "pcore_idx",
    IDX: I64 = "idx",
    ENGINE: I64 = "engine_idx",
    AXI_PORT: I64 = "axi_port",
    DRAM_CHANNEL: I64 = "dram_channel",
    NEFF_NAME: Str = "nscope_neff_queue_name",
    SG: Str = "nscope_subgraph",
    TYPE_CODE: I32 = "nscope_queue_type_code",
    EVENT_ID: I64 = "nscope_event_id",
    ENGINES: ListI64 = "nscope_engine_indices",
});

/// One (engine, queue) stream of a core.
struct Stream {
    /// `None` until the first phase-1/5 record decides; `Some(false)` = dropped.
    keep: Option<bool>,
    /// Open phase-1 records: (raw ts, calibrated fs, file offset for reports).
    open: VecDeque<(u64, i128, u64)>,
    next_idx: i32,
    engine_idx: i64,
    queue_name: String,
    queue_type: &'static str,
    variable: Option<&'static str>,
    /// Explorer name of a static compiler queue (its packets form `DmaPacketAggregated` rows).
    static_name: Option<String>,
    /// Completion packets seen: the transfer ordinal of the next packet.
    ordinal: u32,
    /// Index of (`static_name`, `queue_type`) in the core's `agg_names`, once it has one.
    agg_name: Option<u32>,
    /// Dictionary-key memos of `queue_type`, `variable`, `queue_name` (constant per stream).
    memo: [Memo; 3],
    /// The [`Run`] of the stream's first record.
    run: usize,
}

/// Distinct (engine field, queue) pairs: the field is 7 bits, the queue 4 (ntff.md §4.4).
const STREAM_KEYS: usize = 1 << 11;

/// The slot of (engine field, queue) in [`Pairing`]'s stream index.
#[inline]
fn stream_key(field: u32, queue: u32) -> usize {
    ((field as usize & 0x7F) << 4) | (queue as usize & 0xF)
}

/// A phase-1/5 DMA record, classified: (engine field, queue, phase, calibrated fs).
type DmaRec = (u32, u32, u32, i128);

/// Field, queue, phase and calibrated time of a packet start/end record (ntff.md §4.4); `None`
/// for the other phases.
#[inline(always)]
fn classify(sg: &SubgraphInfo, r: &Rec) -> Option<DmaRec> {
    let phase = r.w1 & 0xF;
    if phase != PHASE_START && phase != PHASE_END {
        return None;
    }
    let (field, queue) = (r.dma_engine_field(), r.dma_queue());
    let cal = sg
        .calibration
        .dma
        .get(field as usize)
        .copied()
        .unwrap_or_default();
    Some((field, queue, phase, cal.fs(r.ts)))
}

/// The pairing state of one core's DMA records (ntff.md §4.4, §10 step 6): its (engine field,
/// queue) streams with their open phase-1 records. Both passes over a core's DMA buffers (the
/// rows in file order, the time-ordered pass of [`TimePass`]) pair through it, so they pair
/// alike.
struct Pairing<'a> {
    table: FxHashMap<(u32, u32), &'a super::DmaQueueInfo>,
    /// Index into `streams` per [`stream_key`] (`u32::MAX`: no stream yet): a look-up per
    /// record without hashing.
    slot: Vec<u32>,
    streams: Vec<Stream>,
    open_total: usize,
    /// 16 × the logical core's first physical core.
    base: i64,
    window: Window,
    /// v6: only records inside [t0, t1] take part.
    v6: bool,
    /// Some stream has records in two [`Run`]s: a time-ordered pass would pair differently.
    split: bool,
    /// [`MAX_OPEN_DMA`] was reached: pairing then depends on the order of all streams.
    capped: bool,
}

/// A phase-5 record that ended a packet of a kept stream.
struct Paired<'s> {
    s: &'s mut Stream,
    queue: u32,
    field: u32,
    /// Raw time and calibrated fs of the packet's start record.
    ts1: u64,
    fs1: i128,
    /// Calibrated fs of this end record.
    fs: i128,
}

impl<'a> Pairing<'a> {
    fn new(sg: &'a SubgraphInfo, first_core: u32, window: Window) -> Self {
        Pairing {
            table: sg
                .dma_queues
                .iter()
                .map(|q| ((q.engine, q.queue), q))
                .collect(),
            slot: vec![u32::MAX; STREAM_KEYS],
            streams: Vec::new(),
            open_total: 0,
            base: i64::from(first_core) * 16,
            window,
            v6: window.t1.is_some(),
            split: false,
            capped: false,
        }
    }

    /// The stream of (engine field, queue) as its first record (of run `run`) finds it.
    #[cold]
    fn new_stream(&self, field: u32, queue: u32, run: usize) -> Stream {
        let engine_idx = self.base + i64::from(field);
        let entry = u32::try_from(engine_idx)
            .ok()
            .and_then(|e| self.table.get(&(e, queue)).copied());
        let qt = queue_type(entry);
        Stream {
            keep: None,
            open: VecDeque::new(),
            next_idx: 0,
            engine_idx,
            queue_name: queue_name(entry, queue, engine_idx),
            queue_type: qt,
            // Dynamic and instruction queues: the exports write "unknown" (no DGE
            // notifications); static queues need the NEFF dma blocks.
            variable: (qt != "data" && qt != "unknown").then_some("unknown"),
            static_name: entry
                .filter(|q| !q.name.ends_with("Dynamic") && !q.name.ends_with("DynamicHW"))
                .map(|q| explorer_queue_name(&q.name)),
            ordinal: 0,
            agg_name: None,
            memo: [Memo::default(); 3],
            run,
        }
    }

    /// Feeds one classified record of run `run`; returns the packet it completes, if any.
    /// `at` is the record's file offset (reports only). Inlined: once per DMA record in both
    /// passes, and a call moved its i128 arguments and result through memory.
    #[inline(always)]
    fn feed(
        &mut self,
        r: &Rec,
        d: DmaRec,
        run: usize,
        at: u64,
        stats: &mut DmaCoreStats,
    ) -> Option<Paired<'_>> {
        let (field, queue, phase, fs) = d;
        // v6: only records inside [t0, t1] take part (ntff.md §10 step 6). v4/v5: every
        // record is paired and counted in packet_idx; rows are written from the origin
        // on (the inf2 exports number packets from the start of the buffer).
        if self.v6 && !self.window.contains(fs) {
            stats.set_aside.outside_window.note(at);
            if self.window.far_outside(fs) {
                stats.set_aside.far_outside.note(at);
            }
            return None;
        }
        let key = stream_key(field, queue);
        let k = match self.slot.get(key) {
            Some(&k) if k != u32::MAX => k as usize,
            Some(_) => {
                let s = self.new_stream(field, queue, run);
                self.streams.push(s);
                let k = self.streams.len() - 1;
                if let Some(e) = self.slot.get_mut(key) {
                    *e = k as u32;
                }
                k
            }
            // classify masks field and queue, so every key has a slot.
            None => return None,
        };
        let s = self.streams.get_mut(k)?;
        if s.run != run {
            self.split = true;
        }
        if s.keep.is_none() {
            // Stream-dropping rule (ntff.md §4.4): a stream whose first in-window
            // phase-1/5 record is a phase 5 is omitted whole.
            s.keep = Some(phase == PHASE_START);
            if phase == PHASE_END {
                stats.dropped_streams += 1;
            }
        }
        if s.keep == Some(false) {
            if phase == PHASE_END {
                stats.dropped_packets += 1;
                stats.set_aside.dropped_stream.note(at);
            }
            return None;
        }
        if phase == PHASE_START {
            if s.open.len() >= MAX_OPEN_PER_STREAM {
                if let Some(o) = s.open.pop_front() {
                    stats.set_aside.unpaired_start.note(o.2);
                }
                stats.unpaired_starts += 1;
            } else if self.open_total >= MAX_OPEN_DMA {
                stats.unpaired_starts += 1;
                stats.set_aside.unpaired_start.note(at);
                self.capped = true;
                return None;
            } else {
                self.open_total += 1;
            }
            s.open.push_back((r.ts, fs, at));
            return None;
        }
        let Some((ts1, fs1, _)) = s.open.pop_front() else {
            stats.unpaired_ends += 1;
            stats.set_aside.unpaired_end.note(at);
            return None;
        };
        self.open_total = self.open_total.saturating_sub(1);
        Some(Paired {
            s,
            queue,
            field,
            ts1,
            fs1,
            fs,
        })
    }

    /// The time-ordered pass may merge the runs: no stream spans two of them and the open limit
    /// was never hit (else pairing would depend on the order of all streams).
    fn mergeable(&self) -> bool {
        !(self.split || self.capped)
    }

    /// Phase-1 records of kept streams still open, and the smallest file offset among them.
    fn open_left(&self) -> (u64, Option<u64>) {
        let kept = self.streams.iter().filter(|s| s.keep == Some(true));
        let n = kept.clone().map(|s| s.open.len() as u64).sum();
        (n, kept.flat_map(|s| s.open.iter().map(|o| o.2)).min())
    }

    /// The earliest first open start of the streams (fs). A stream's later open starts come
    /// after it in its run, so they are at most the run's largest drop earlier.
    fn min_open(&self) -> Option<i128> {
        self.streams
            .iter()
            .filter_map(|s| s.open.front().map(|o| o.1))
            .min()
    }
}

/// Runs of a core's DMA records: the time-ordered pass merges at most this many; a core with
/// more is handled by sorting its packets instead (memory ∝ packets).
pub const MAX_RUNS: usize = 64;
/// Bytes each run's reader holds at least while the runs are merged.
pub const RUN_CHUNK: usize = 64 * 1024;
/// Bytes all run readers of a core hold together: each reads `RUN_BUDGET / runs` (≥
/// [`RUN_CHUNK`], ≤ `RUN_BUDGET`) at a time. In the page each read is a `Blob.slice` +
/// `FileReaderSync` call, ≈ 10 ms each whatever its size ([`crate::source::BROWSER_READ`]), so the
/// budget is 16 MiB there: one run reads 16 MiB pieces, the 16 of a real capture 1 MiB. Natively a read is a `pread` and every run reads [`RUN_CHUNK`]: 1 MiB reads
/// measured no faster and raised the split step's peak RSS at 10 GB from 328 to 433 MB.
pub const RUN_BUDGET: usize = if cfg!(target_arch = "wasm32") {
    crate::source::BROWSER_READ
} else {
    RUN_CHUNK
};
/// A record more than this much (fs, = 1 µs) earlier than the latest one before it starts a new
/// run; smaller steps back stay in the run and count in its drop ([`Runs::drop`]).
pub const RUN_CUT_FS: i128 = 1_000_000_000;
/// Merged records between two releases of the time-ordered pass's reorder heap.
const RELEASE_EVERY: u32 = 1024;

/// A range of records of one DMA buffer that is in time order up to a small drop: (buffer
/// index among the core's DMA buffers, first record, end record). The real captures write one
/// per DMA engine (16 per core), the synthetic writer one in all.
#[derive(Debug, Clone, Copy)]
struct Run {
    buf: usize,
    start: u64,
    end: u64,
}

/// Cuts the start/end records of a core's DMA buffers into [`Run`]s while the rows are written.
#[derive(Default)]
struct Runs {
    runs: Vec<Run>,
    /// Latest time of the current run.
    max: i128,
    /// Largest step back below the running maximum inside any run (fs): every record of a run
    /// is at least the run's maximum so far minus this.
    drop: i128,
    /// More than [`MAX_RUNS`] runs.
    overflow: bool,
    /// Records delivered per buffer.
    delivered: Vec<u64>,
}

impl Runs {
    /// Record `idx` of buffer `buf` is a start/end record at `fs`; returns its run.
    fn see(&mut self, buf: usize, idx: u64, fs: i128) -> usize {
        let new = match self.runs.last() {
            Some(r) => r.buf != buf || fs < self.max.saturating_sub(RUN_CUT_FS),
            None => true,
        };
        if !new {
            self.drop = self.drop.max(self.max.saturating_sub(fs));
            self.max = self.max.max(fs);
            return self.runs.len() - 1;
        }
        self.max = fs;
        if let Some(r) = self.runs.last_mut().filter(|r| r.buf == buf) {
            r.end = idx;
        }
        if self.runs.len() >= MAX_RUNS {
            // Merging stops here (the pass sorts instead): the run list stays bounded.
            self.overflow = true;
            return self.runs.len() - 1;
        }
        self.runs.push(Run {
            buf,
            start: idx,
            end: idx,
        });
        self.runs.len() - 1
    }
    /// Buffer `buf` delivered `n` records.
    fn end_buffer(&mut self, buf: usize, n: u64) {
        if let Some(r) = self
            .runs
            .last_mut()
            .filter(|r| r.buf == buf && !self.overflow)
        {
            r.end = n;
        }
        self.delivered.push(n);
    }
    /// What [`TimePass::run`] reads for core `pcore`: the runs and their largest drop when they
    /// can be merged, else each buffer whole in file order and `None`.
    fn plan(self, mergeable: bool, pcore: usize, first_core: u32, window: Window) -> DmaPlan {
        let (runs, drop) = if mergeable && !self.overflow {
            (self.runs, Some(self.drop))
        } else {
            let whole = self
                .delivered
                .iter()
                .enumerate()
                .map(|(buf, &end)| Run { buf, start: 0, end })
                .collect();
            (whole, None)
        };
        DmaPlan {
            runs,
            drop,
            pcore,
            first_core,
            window,
        }
    }
}

/// What the DMA and throttle steps of one NTFF read and write: the source, its info section and
/// time window, the file name for problems, and where problems, progress (bytes) and rows go.
pub(super) struct NtffIo<'a, S: ?Sized> {
    pub(super) src: &'a S,
    pub(super) info: &'a NtffInfo,
    pub(super) window: Window,
    pub(super) file: &'a str,
    pub(super) problems: &'a mut Vec<Problem>,
    pub(super) progress: &'a mut dyn FnMut(u64),
    pub(super) sink: &'a mut dyn TableSink,
}

impl<S: ?Sized> NtffIo<'_, S> {
    /// The same source, sink and reports for a call that does not keep them.
    pub(super) fn reborrow(&mut self) -> NtffIo<'_, S> {
        NtffIo {
            src: self.src,
            info: self.info,
            window: self.window,
            file: self.file,
            problems: &mut *self.problems,
            progress: &mut *self.progress,
            sink: &mut *self.sink,
        }
    }
}

/// Row numbering carried from core to core: the next `DmaPacket.id` and the next
/// `DmaPacketAggregated` id.
pub(super) struct DmaIds<'a> {
    pub(super) packet: &'a mut i64,
    pub(super) aggregated: &'a mut i64,
}

/// Streams the DMA buffers of one core into `DmaPacket` rows (ntff.md §10 step 6), then runs
/// [`TimePass`] over the same records for `DmaUsage` and the Summary's DMA fields
/// (`stats.times`).
///
/// `first_core` is the physical index of the logical core's first core (`sg00`), so that
/// `engine_idx` = 16 × `first_core` + w0[30:24]. `ids` numbers the rows.
pub(super) fn decode_dma_core<S: ByteSource + ?Sized>(
    mut io: NtffIo<'_, S>,
    sg: &SubgraphInfo,
    pcore: usize,
    first_core: u32,
    ids: DmaIds<'_>,
    stats: &mut DmaCoreStats,
) -> Result<()> {
    let plan = dma_rows(io.reborrow(), sg, pcore, first_core, ids, stats)?;
    stats.times = dma_times(io.src, io.info, sg, &plan, io.sink, io.progress)?;
    Ok(())
}

/// What the time-ordered pass of core `pcore` reads ([`Runs::plan`]): the sorted runs of its DMA
/// buffers and their largest drop when they can be merged, else each buffer whole and `None`;
/// with the core's first physical core and the window the pass needs.
pub(super) struct DmaPlan {
    runs: Vec<Run>,
    drop: Option<i128>,
    pcore: usize,
    first_core: u32,
    window: Window,
}

/// The `DmaUsage` rows and the Summary's DMA fields of one core: [`TimePass`] over `plan`.
pub(super) fn dma_times<S: ByteSource + ?Sized>(
    src: &S,
    info: &NtffInfo,
    sg: &SubgraphInfo,
    plan: &DmaPlan,
    sink: &mut dyn TableSink,
    progress: &mut dyn FnMut(u64),
) -> Result<DmaTimes> {
    let pass = TimePass {
        info,
        sg,
        first_core: plan.first_core,
        window: plan.window,
    };
    let mut usage = Usage::new(plan.pcore, sink);
    let mut times = pass.run(src, &plan.runs, plan.drop, &mut usage, progress)?;
    usage.finish(&mut times)?;
    Ok(times)
}

/// [`dma_times`] on two threads (natively, the split decode's time thread): this one reads and
/// merges and pairs the records, a second one puts the packets in start order and turns them
/// into `DmaUsage` rows and the Summary's DMA groups. The packets and the release points cross
/// a bounded channel in the pass's order, so the rows and figures equal [`dma_times`]'s.
///
/// Errors: those of [`dma_times`]; a panic of the second thread is an [`Error::Other`].
pub(super) fn dma_times_piped<S: ByteSource + ?Sized>(
    src: &S,
    info: &NtffInfo,
    sg: &SubgraphInfo,
    plan: &DmaPlan,
    sink: &mut (dyn TableSink + Send),
    progress: &mut dyn FnMut(u64),
) -> Result<DmaTimes> {
    let pass = TimePass {
        info,
        sg,
        first_core: plan.first_core,
        window: plan.window,
    };
    // Four messages in flight: the merge runs at most ≈ 450 KiB of packets ahead of the rows.
    let (tx, rx) = std::sync::mpsc::sync_channel::<PipeMsg>(4);
    std::thread::scope(|s| {
        let pcore = plan.pcore;
        let usage = s.spawn(move || -> Result<DmaTimes> {
            let mut usage = Usage::new(pcore, sink);
            for msg in rx {
                msg.replay(&mut usage)?;
            }
            let mut u = DmaTimes::default();
            usage.finish(&mut u)?;
            Ok(u)
        });
        let mut piped = Piped {
            msg: PipeMsg::default(),
            tx,
        };
        let merged = pass
            .run(src, &plan.runs, plan.drop, &mut piped, progress)
            .and_then(|t| piped.flush().map(|()| t));
        // Closes the channel: the second thread ends once it has taken every chunk.
        drop(piped);
        let usage = usage
            .join()
            .unwrap_or_else(|_| Err(Error::Other("DmaUsage thread panicked".into())));
        // The second thread's error is the cause of "DmaUsage thread stopped" here.
        match (merged, usage) {
            (Ok(t), Ok(u)) => Ok(DmaTimes {
                groups: u.groups,
                usage_rows: u.usage_rows,
                peak_packets: t.peak_packets.max(u.peak_packets),
                ..t
            }),
            (_, Err(e)) | (Err(e), Ok(_)) => Err(e),
        }
    })
}

/// The [`DmaPlan`] of one core without writing rows: the same records go through the same
/// [`Runs`] and [`Pairing`] as in [`dma_rows`] (problems and set-aside counts are dropped, the
/// row pass reports them), so the plan is the row pass's plan and the time-ordered pass can run
/// beside the row pass on another thread.
pub(super) fn dma_plan<S: ByteSource + ?Sized>(
    src: &S,
    info: &NtffInfo,
    sg: &SubgraphInfo,
    pcore: usize,
    first_core: u32,
    window: Window,
    file: &str,
) -> Result<DmaPlan> {
    let mut pairing = Pairing::new(sg, first_core, window);
    let mut runs = Runs::default();
    let mut scratch = DmaCoreStats::default();
    let mut problems = Vec::new();
    for (bi, buf) in dma_buffers(sg).enumerate() {
        let mut idx = 0u64;
        stream_buffer(
            src,
            info.blob_offset,
            buf,
            file,
            &mut problems,
            &mut |_| {},
            |r: Rec| {
                let i = idx;
                idx += 1;
                if let Some(d) = classify(sg, &r) {
                    let run = runs.see(bi, i, d.3);
                    pairing.feed(&r, d, run, 0, &mut scratch);
                }
                Ok(())
            },
        )?;
        runs.end_buffer(bi, idx);
    }
    Ok(runs.plan(pairing.mergeable(), pcore, first_core, window))
}

/// Where [`dma_rows_all`] puts what it makes: the rows, the DMA-buffer bytes read (progress), and
/// each core's [`DmaPlan`] (the native time-ordered thread starts that core's pass on it instead
/// of scanning the records again, [`dma_plan`]; the page's worker drops it).
pub(super) struct RowsTo<'a> {
    pub(super) sink: &'a mut dyn TableSink,
    pub(super) progress: &'a mut dyn FnMut(u64),
    pub(super) plans: &'a mut dyn FnMut(DmaPlan),
}

/// Every core's `DmaPacket` and `DmaPacketAggregated` rows ([`dma_rows`], core after core, ids
/// from `first_dma_id`), with per core the row statistics and problems: the DMA row thread of the
/// native split decode and the page's second worker (`super::decode::dma_side`). The first
/// core's physical index (`engine_idx` base, [`decode_dma_core`]) is the first subgraph's.
/// The rows go to `to.sink`, the DMA-buffer bytes read to `to.progress`, each core's
/// [`DmaPlan`] to `to.plans` as soon as its rows are written.
pub(super) fn dma_rows_all<S: ByteSource + ?Sized>(
    src: &S,
    info: &NtffInfo,
    window: Window,
    file: &str,
    first_dma_id: i64,
    to: RowsTo<'_>,
) -> Result<Vec<(DmaCoreStats, Vec<Problem>)>> {
    let RowsTo {
        sink,
        progress,
        plans,
    } = to;
    let first_core = info.subgraphs.first().map_or(0, |s| s.core);
    let (mut next_id, mut next_agg) = (first_dma_id, 0i64);
    let mut out = Vec::with_capacity(info.subgraphs.len());
    for (pcore, sg) in info.subgraphs.iter().enumerate() {
        let mut stats = DmaCoreStats::default();
        let mut problems = Vec::new();
        let io = NtffIo {
            src,
            info,
            window,
            file,
            problems: &mut problems,
            progress: &mut *progress,
            sink: &mut *sink,
        };
        let ids = DmaIds {
            packet: &mut next_id,
            aggregated: &mut next_agg,
        };
        plans(dma_rows(io, sg, pcore, first_core, ids, &mut stats)?);
        out.push((stats, problems));
    }
    Ok(out)
}

/// The `DmaPacket` and `DmaPacketAggregated` rows of one core (the first half of
/// [`decode_dma_core`]); returns the plan of its time-ordered pass.
pub(super) fn dma_rows<S: ByteSource + ?Sized>(
    io: NtffIo<'_, S>,
    sg: &SubgraphInfo,
    pcore: usize,
    first_core: u32,
    ids: DmaIds<'_>,
    stats: &mut DmaCoreStats,
) -> Result<DmaPlan> {
    let NtffIo {
        src,
        info,
        window,
        file,
        problems,
        progress,
        sink,
    } = io;
    let DmaIds {
        packet: next_id,
        aggregated: next_agg_id,
    } = ids;
    let def = &explorer::DMA_PACKET;
    // Static-queue transfers by (queue, ordinal): one small entry per transfer until the end of
    // the core (the transfer's last packet is only known then).
    // `agg_index[queue][ordinal]` is the transfer's index in `aggs` (u32::MAX: none yet):
    // ordinals count a stream's completion packets from 0, so 4 B per ordinal, no hashing.
    let first_agg_id = *next_agg_id;
    let mut aggs = Aggs::default();
    let mut agg_index: [Vec<u32>; 16] = Default::default();
    let mut agg_names: Vec<(String, &'static str)> = Vec::new();
    let mut sg_memo = Memo::default();
    let mut b = TableBuilder::new(def);
    let mut pairing = Pairing::new(sg, first_core, window);
    let mut runs = Runs::default();
    let t0ps = ps_floor(window.t0);
    for (bi, buf) in dma_buffers(sg).enumerate() {
        let mut idx = 0u64;
        let buf_at = info.blob_offset.wrapping_add(buf.offset);
        stream_buffer(
            src,
            info.blob_offset,
            buf,
            file,
            problems,
            progress,
            |r: Rec| {
                let i = idx;
                idx += 1;
                let at = buf_at.wrapping_add(i.wrapping_mul(16));
                let Some(d) = classify(sg, &r) else {
                    stats.set_aside.other_phase.note(at);
                    return Ok(());
                };
                let run = runs.see(bi, i, d.3);
                let Some(p) = pairing.feed(&r, d, run, at, stats) else {
                    return Ok(());
                };
                let Paired {
                    s,
                    queue,
                    field,
                    ts1,
                    fs1,
                    fs,
                } = p;
                let bytes = u64::from(r.w0 & 0xFF_FFFF);
                let ordinal = s.ordinal;
                if s.static_name.is_some() && bytes == COMPLETION_BYTES {
                    s.ordinal = s.ordinal.saturating_add(1);
                }
                if fs1 < window.t0 {
                    s.next_idx = s.next_idx.saturating_add(1);
                    return Ok(());
                }
                if fs < fs1 {
                    stats.set_aside.reversed.note(at);
                }
                if window.far_outside(fs1) {
                    stats.set_aside.far_outside.note(at);
                }
                if let Some(name) = &s.static_name {
                    let (sp, ep) = (ps_floor(fs1) - t0ps, ps_floor(fs) - t0ps);
                    // classify masks the queue to 4 bits.
                    let slots = &mut agg_index[queue as usize & 0xF];
                    let o = ordinal as usize;
                    if slots.len() <= o {
                        slots.resize(o + 1, u32::MAX);
                    }
                    let k = match slots[o] {
                        u32::MAX => {
                            let name_idx = match s.agg_name {
                                Some(i) => i,
                                None => {
                                    let i = agg_names.len() as u32;
                                    agg_names.push((name.clone(), s.queue_type));
                                    s.agg_name = Some(i);
                                    i
                                }
                            };
                            let k = aggs.push(Agg {
                                start_ps: sp,
                                end_ps: ep,
                                bytes: 0,
                                engine: s.engine_idx,
                                packets: 0,
                                name: name_idx,
                                crc: 0,
                                queue: queue as u8,
                            });
                            *next_agg_id = next_agg_id.wrapping_add(1);
                            slots[o] = k as u32;
                            k
                        }
                        k => k as usize,
                    };
                    if let Some(a) = aggs.get_mut(k) {
                        a.start_ps = a.start_ps.min(sp);
                        a.end_ps = a.end_ps.max(ep);
                        a.engine = a.engine.max(s.engine_idx);
                        a.packets += 1;
                        if bytes == COMPLETION_BYTES {
                            a.crc = r.dma_crc();
                        } else {
                            a.bytes = a.bytes.saturating_add(bytes);
                        }
                        b.set(pk::AGG, first_agg_id.wrapping_add(k as i64));
                    }
                }
                let (start, dur, dps_fs) = window.packet_times(fs1, fs);
                b.set(pk::START, start);
                b.set(pk::END, start.saturating_add(dur));
                b.set(pk::DUR, dur);
                b.set(pk::PCORE, pcore as i64);
                b.set(pk::ID, *next_id);
                b.set(pk::PACKET_IDX, s.next_idx);
                b.set(pk::ENGINE, s.engine_idx);
                let by = bytes as i64;
                b.set(pk::READ, by);
                b.set(pk::WRITE, by);
                b.set(pk::TRANSFER, by);
                // Calibrated times are whole picoseconds in the exports (inf2 rates, ±0.5 ps).
                b.set(pk::THROUGHPUT, throughput(bytes, dps_fs));
                let [m_qt, m_var, m_qn] = &mut s.memo;
                b.set_memo(pk::QTYPE, s.queue_type, m_qt);
                if let Some(v) = s.variable {
                    b.set_memo(pk::VARIABLE, v, m_var);
                }
                b.set_memo(pk::QNAME, &s.queue_name, m_qn);
                b.set(pk::QIDX, i64::from(queue));
                b.set(pk::CRC, i64::from(r.dma_crc()));
                b.set_memo(pk::SG, &sg.name, &mut sg_memo);
                b.set(pk::FIELD, field as i32);
                b.set(pk::RAW_S, i64::try_from(ts1).ok());
                b.set(pk::RAW_E, i64::try_from(r.ts).ok());
                b.end_row_into(sink)?;
                s.next_idx = s.next_idx.saturating_add(1);
                *next_id = next_id.wrapping_add(1);
                stats.packets += 1;
                stats.bytes = stats.bytes.saturating_add(bytes);
                Ok(())
            },
        )?;
        runs.end_buffer(bi, idx);
    }
    let (left, first_left) = pairing.open_left();
    stats.unpaired_starts += left;
    let t = &mut stats.set_aside.unpaired_start;
    t.count += left;
    t.first_offset = t.first_offset.into_iter().chain(first_left).min();
    b.finish_into(sink)?;
    std::mem::drop(agg_index);
    stats.aggregated += write_aggregated(&aggs, &agg_names, first_agg_id, pcore, &sg.name, sink)?;
    Ok(runs.plan(pairing.mergeable(), pcore, first_core, window))
}

/// One packet awaiting its turn in [`TimePass`]'s reorder heap, ordered by (start, row order).
/// `order` is unique within a core, so comparing those two fields orders as comparing all.
struct Pending {
    /// Whole calibrated ps from t0 (`DmaUsage` times).
    start: i64,
    /// Buffer index << 40 | record index of the end record: the `DmaPacket` row order.
    order: u64,
    end: i64,
    bytes: u32,
    rate_bits: u32,
    group: u8,
    /// The Summary's interval, ps (see `summary::DmaGroup`).
    span: (i64, i64),
    /// In `DmaUsage` (raw times fit in int64, as the `DmaPacket` raw columns need).
    usage: bool,
}

impl Pending {
    #[inline]
    fn key(&self) -> (i64, u64) {
        (self.start, self.order)
    }
}

crate::util::ord_by_key!(Pending);

/// Reads one [`Run`] through the source in pieces of [`RUN_BUDGET`] ÷ runs bytes.
struct Cursor {
    /// Absolute offset of record 0 of the run's buffer.
    base: u64,
    buf: usize,
    next: u64,
    end: u64,
    chunk: Vec<u8>,
    /// Record index of `chunk[0]`.
    chunk_first: u64,
    /// Read error: the run ends here (the row pass already reported the bytes).
    failed: bool,
    /// Bytes read so far (progress).
    read: u64,
    /// Latest time read so far: the run's records still to come are ≥ this − its drop.
    max: i128,
    /// Records per read.
    per: u64,
}

impl Cursor {
    /// The next start/end record of the run (with its index), skipping other phases.
    #[inline(always)]
    fn next_rec<S: ByteSource + ?Sized>(
        &mut self,
        src: &S,
        sg: &SubgraphInfo,
    ) -> Option<(u64, Rec, DmaRec)> {
        while self.next < self.end && !self.failed {
            let have = (self.chunk.len() / 16) as u64;
            if (self.next < self.chunk_first || self.next >= self.chunk_first + have)
                && !self.refill(src)
            {
                return None;
            }
            let i = self.next;
            self.next += 1;
            let o = ((i - self.chunk_first) * 16) as usize;
            let r = self.chunk.get(o..o + 16)?.try_into().ok()?;
            let rec = Rec::from_bytes(r);
            if let Some(d) = classify(sg, &rec) {
                self.max = self.max.max(d.3);
                return Some((i, rec, d));
            }
        }
        None
    }

    /// Reads the next piece of the run from record `next` on; false (and `failed`) on a read
    /// error. Out of line: once per piece, not per record.
    #[inline(never)]
    fn refill<S: ByteSource + ?Sized>(&mut self, src: &S) -> bool {
        let n = (self.end - self.next).min(self.per) as usize;
        self.chunk.resize(n * 16, 0);
        let off = self.base.saturating_add(self.next * 16);
        if src.read_at(off, &mut self.chunk).is_err() {
            self.failed = true;
            return false;
        }
        self.chunk_first = self.next;
        self.read += self.chunk.len() as u64;
        true
    }
}

/// The time-ordered pass over one core's DMA records: `DmaUsage` rows and the Summary's DMA
/// fields ([`DmaTimes`]), with state that does not grow with the buffer.
///
/// The row pass found the buffer's sorted [`Run`]s (the real captures write one run per DMA
/// engine, 16 per core; the synthetic writer one in all). Here one [`Cursor`] per run feeds a
/// k-way merge by calibrated time into a fresh [`Pairing`]: every stream's records keep their
/// file order (the row pass checked it), so the packets are the rows' packets. A packet is
/// final at its end record but `DmaUsage` wants start order, so the pass hands packets over in
/// end order and, every [`RELEASE_EVERY`] records, the time before which no packet still to
/// come can start — the earliest open start, or the merge head (records not read yet); the
/// consumer ([`Usage`]) holds them in a reorder heap until then. State: [`RUN_BUDGET`] (at most [`MAX_RUNS`] × [`RUN_CHUNK`]) bytes, the open starts and
/// the packets overlapping them in time.
///
/// When the records are not mergeable (a stream out of time order, more than [`MAX_RUNS`] runs,
/// or the per-core open limit hit) the pass reads the buffers in file order and sorts every
/// packet at the end instead: exact, but its memory is then proportional to the packets.
struct TimePass<'a> {
    info: &'a NtffInfo,
    sg: &'a SubgraphInfo,
    first_core: u32,
    window: Window,
}

impl TimePass<'_> {
    /// Reads `runs`; `drop`: merge them (every record of a run is at most `drop` fs below the
    /// run's latest earlier record), else read them one after another and sort.
    fn run<S: ByteSource + ?Sized>(
        &self,
        src: &S,
        runs: &[Run],
        drop: Option<i128>,
        out: &mut dyn Released,
        progress: &mut dyn FnMut(u64),
    ) -> Result<DmaTimes> {
        let ordered = drop.is_some();
        let drop = drop.unwrap_or(0);
        let bufs: Vec<&TraceBuffer> = dma_buffers(self.sg).collect();
        let base = |buf: usize| {
            bufs.get(buf)
                .and_then(|b| self.info.blob_offset.checked_add(b.offset))
        };
        let per = (RUN_BUDGET / runs.len().max(1)).clamp(RUN_CHUNK, RUN_BUDGET.max(RUN_CHUNK))
            as u64
            / 16;
        let mut cursors: Vec<Cursor> = runs
            .iter()
            .filter_map(|r| {
                Some(Cursor {
                    base: base(r.buf)?,
                    buf: r.buf,
                    next: r.start,
                    end: r.end,
                    chunk: Vec::new(),
                    chunk_first: 0,
                    failed: false,
                    read: 0,
                    max: i128::MIN,
                    per,
                })
            })
            .collect();
        // Raw ticks are ps when every clock of the capture is the identity (trn2); the
        // Summary then sums raw-ps durations (summary.rs, docs/formats.md "Summary").
        let raw_ps = self.info.subgraphs.iter().all(|s| {
            s.calibration.is_identity() && s.calibration.dma.iter().all(|d| d.is_identity())
        });
        let mut pairing = Pairing::new(self.sg, self.first_core, self.window);
        let mut scratch = DmaCoreStats::default();
        let times = DmaTimes {
            runs: if ordered { cursors.len() } else { 0 },
            ..Default::default()
        };
        let t0ps = ps_floor(self.window.t0);
        let rel = |fs: i128| clamp_i64(ps_floor(fs) - t0ps);
        let mut heads: BinaryHeap<Reverse<(i128, usize)>> = BinaryHeap::new();
        let mut head_rec: Vec<Option<(u64, Rec, DmaRec)>> = Vec::with_capacity(cursors.len());
        for (k, c) in cursors.iter_mut().enumerate() {
            let h = c.next_rec(src, self.sg);
            if let Some((_, _, d)) = &h {
                // File order: cursors one after another (key = cursor); else by time.
                heads.push(Reverse((if ordered { d.3 } else { k as i128 }, k)));
            }
            head_rec.push(h);
        }
        let mut since = 0u32;
        let mut reported = 0u64;
        while let Some(mut top) = heads.peek_mut() {
            let k = top.0 .1;
            let (Some(c), Some(slot)) = (cursors.get_mut(k), head_rec.get_mut(k)) else {
                break;
            };
            let Some((idx, r, d)) = slot.take() else {
                PeekMut::pop(top);
                continue;
            };
            let next = c.next_rec(src, self.sg);
            match &next {
                // The run's next record replaces its head in place: one sift, not a pop and
                // a push.
                Some((_, _, nd)) => top.0 = (if ordered { nd.3 } else { k as i128 }, k),
                None => {
                    PeekMut::pop(top);
                }
            }
            *slot = next;
            let order = ((c.buf as u64) << 40) | idx;
            if let Some(p) = pairing.feed(&r, d, k, 0, &mut scratch) {
                if p.fs1 >= self.window.t0 {
                    let bytes = r.w0 & 0xFF_FFFF;
                    let dps = ps_floor(p.fs) - ps_floor(p.fs1);
                    let rate = throughput(u64::from(bytes), ps_to_fs(dps)).unwrap_or(0.0);
                    // The Summary's interval as summary.rs took it from the row: raw ticks
                    // (trn2), else whole calibrated ps, else the ns columns × 1000.
                    let raw = (i64::try_from(p.ts1).ok(), i64::try_from(r.ts).ok());
                    let has_cal = self.sg.calibration.dma.get(p.field as usize).is_some();
                    let abs = |fs: i128| clamp_i64(ps_floor(fs));
                    let span = match raw {
                        (Some(s), Some(e)) if raw_ps => (s, e),
                        (Some(_), Some(_)) if has_cal => (abs(p.fs1), abs(p.fs)),
                        _ => {
                            let s = clamp_i64(rel(p.fs1).div_euclid(1000) as i128);
                            let dur = clamp_i64(p.fs.saturating_sub(p.fs1).div_euclid(1_000_000));
                            (
                                s.saturating_mul(1000),
                                s.saturating_add(dur).saturating_mul(1000),
                            )
                        }
                    };
                    out.push(Pending {
                        start: rel(p.fs1),
                        order,
                        end: rel(p.fs),
                        bytes,
                        rate_bits: rate.to_bits(),
                        group: dma_group(p.s.queue_type) as u8,
                        span,
                        usage: raw.0.is_some() && raw.1.is_some(),
                    })?;
                }
            }
            since += 1;
            if since >= RELEASE_EVERY {
                since = 0;
                let read: u64 = cursors.iter().map(|c| c.read).sum();
                progress(read - reported);
                reported = read;
            }
            if ordered && since == 0 {
                // No packet still to come starts before w: its start is open now, or in a
                // record not read yet of a run that has one (its head is read ahead).
                let ahead = cursors
                    .iter()
                    .zip(&head_rec)
                    .filter(|(_, h)| h.is_some())
                    .map(|(c, _)| c.max)
                    .min();
                let w = match (pairing.min_open(), ahead) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                out.release(w.map(|w| rel(w.saturating_sub(drop))))?;
            }
        }
        let read: u64 = cursors.iter().map(|c| c.read).sum();
        progress(read - reported);
        out.release(None)?;
        Ok(times)
    }
}

/// Packets awaiting release, taken in (start, row order): those that arrive in that order are
/// appended to a sorted run (O(1)), the others wait in a heap; the smaller head of the two is
/// taken first, so the order is the heap's alone.
#[derive(Default)]
struct Reorder {
    run: VecDeque<Pending>,
    heap: BinaryHeap<Reverse<Pending>>,
}

impl Reorder {
    fn push(&mut self, p: Pending) {
        if self.run.back().is_none_or(|b| *b <= p) {
            self.run.push_back(p);
        } else {
            self.heap.push(Reverse(p));
        }
    }
    fn len(&self) -> usize {
        self.run.len() + self.heap.len()
    }
    /// The first packet if it starts before `limit` (any for `None`).
    fn pop_before(&mut self, limit: Option<i64>) -> Option<Pending> {
        let from_run = match (self.run.front(), self.heap.peek()) {
            (Some(a), Some(Reverse(b))) => a <= b,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return None,
        };
        let head = if from_run {
            self.run.front()
        } else {
            self.heap.peek().map(|r| &r.0)
        };
        if head.is_some_and(|p| limit.is_some_and(|l| p.start >= l)) {
            return None;
        }
        if from_run {
            self.run.pop_front()
        } else {
            self.heap.pop().map(|r| r.0)
        }
    }
}

/// `fs.div_euclid(1000)` (whole ps), with 64-bit division when `fs` fits (the common case; a
/// 128-bit division is a library call).
#[inline]
pub(crate) fn ps_floor(fs: i128) -> i128 {
    match i64::try_from(fs) {
        Ok(v) => i128::from(v.div_euclid(1000)),
        Err(_) => fs.div_euclid(1000),
    }
}

/// `ps × 1000` (fs), in i64 when it fits (an i128 multiply is a library call on wasm32).
#[inline]
pub(crate) fn ps_to_fs(ps: i128) -> i128 {
    const FITS: i128 = (i64::MAX / 1000) as i128;
    if (-FITS..=FITS).contains(&ps) {
        return i128::from(ps as i64 * 1000);
    }
    ps * 1000
}

/// Where [`TimePass`] hands its packets: in end order (`push`), with `release(limit)` once no
/// packet still to come starts before `limit` (ps from t0; `None`: the last call, every packet).
trait Released {
    fn push(&mut self, p: Pending) -> Result<()>;
    fn release(&mut self, limit: Option<i64>) -> Result<()>;
}

/// The packets' consumer: a reorder heap that releases them in (start, row order) into
/// `DmaUsage` rows (to `sink`) and the Summary's DMA groups.
struct Usage<'s> {
    pending: Reorder,
    /// Most packets `pending` held at once.
    peak: usize,
    series: DmaUsageSeries,
    groups: [DmaGroup; 3],
    sink: &'s mut dyn TableSink,
}

impl<'s> Usage<'s> {
    fn new(pcore: usize, sink: &'s mut dyn TableSink) -> Self {
        Usage {
            pending: Reorder::default(),
            peak: 0,
            series: DmaUsageSeries::new(pcore as i64),
            groups: Default::default(),
            sink,
        }
    }

    /// Writes the last `DmaUsage` rows; sets `times`' groups, row count and peak.
    fn finish(self, times: &mut DmaTimes) -> Result<()> {
        let (rows, peak) = self.series.finish(self.sink)?;
        times.groups = self.groups;
        times.usage_rows = rows;
        times.peak_packets = times.peak_packets.max(peak).max(self.peak);
        Ok(())
    }

    #[inline]
    fn take(&mut self, p: Pending) -> Result<()> {
        if p.usage {
            let rate = f32::from_bits(p.rate_bits);
            self.series.push(p.start, p.end, p.bytes, rate, self.sink)?;
        }
        if let Some(g) = self.groups.get_mut(usize::from(p.group)) {
            g.push(p.span.0, p.span.1, u64::from(p.bytes));
        }
        Ok(())
    }
}

impl Released for Usage<'_> {
    #[inline]
    fn push(&mut self, p: Pending) -> Result<()> {
        self.pending.push(p);
        self.peak = self.peak.max(self.pending.len());
        Ok(())
    }
    fn release(&mut self, limit: Option<i64>) -> Result<()> {
        while let Some(p) = self.pending.pop_before(limit) {
            self.take(p)?;
        }
        Ok(())
    }
}

/// Packets per message of [`dma_times_piped`] (56 B each: 112 KiB a message).
const PIPE_PACKETS: usize = 2048;

/// One message of [`Piped`]: packets in end order, and the releases among them as (packets
/// pushed before it, limit).
#[derive(Default)]
struct PipeMsg {
    packets: Vec<Pending>,
    releases: Vec<(usize, Option<i64>)>,
}

impl PipeMsg {
    /// Replays the message's pushes and releases into `to`, in their order.
    fn replay(self, to: &mut Usage<'_>) -> Result<()> {
        let mut releases = self.releases.into_iter().peekable();
        for (i, p) in self.packets.into_iter().enumerate() {
            while let Some((_, limit)) = releases.next_if(|r| r.0 == i) {
                to.release(limit)?;
            }
            to.push(p)?;
        }
        for (_, limit) in releases {
            to.release(limit)?;
        }
        Ok(())
    }
}

/// [`Released`] into a channel to [`dma_times_piped`]'s second thread, in messages of about
/// [`PIPE_PACKETS`] packets: the reorder heap is the second thread's work too.
struct Piped {
    msg: PipeMsg,
    tx: std::sync::mpsc::SyncSender<PipeMsg>,
}

impl Piped {
    fn flush(&mut self) -> Result<()> {
        let msg = std::mem::replace(
            &mut self.msg,
            PipeMsg {
                packets: Vec::with_capacity(PIPE_PACKETS),
                releases: Vec::new(),
            },
        );
        self.tx
            .send(msg)
            .map_err(|_| Error::Other("DmaUsage thread stopped".into()))
    }
}

impl Released for Piped {
    #[inline]
    fn push(&mut self, p: Pending) -> Result<()> {
        self.msg.packets.push(p);
        if self.msg.packets.len() >= PIPE_PACKETS {
            self.flush()?;
        }
        Ok(())
    }
    fn release(&mut self, limit: Option<i64>) -> Result<()> {
        self.msg.releases.push((self.msg.packets.len(), limit));
        Ok(())
    }
}

/// `DmaPacketAggregated` rows of one core (docs/formats.md "DmaPacketAggregated"): span = first
/// packet start to last packet end (ps relative to t0, floored to ns), bytes = the data packets
/// (completion packets left out), throughput as the packets' float32 rule. Ids from `first_id`
/// in order; `names[a.name]` = (queue name, queue type).
fn write_aggregated(
    aggs: &Aggs,
    names: &[(String, &'static str)],
    first_id: i64,
    pcore: usize,
    sg: &str,
    sink: &mut dyn TableSink,
) -> Result<u64> {
    let mut b = TableBuilder::new(&explorer::DMA_PACKET_AGGREGATED);
    for (k, a) in aggs.iter().enumerate() {
        let (name, queue_type) = names
            .get(a.name as usize)
            .map_or(("", "unknown"), |(n, t)| (n.as_str(), *t));
        let start = clamp_i64(a.start_ps.div_euclid(1000));
        let span = a.end_ps.saturating_sub(a.start_ps);
        let dur = clamp_i64(span.div_euclid(1000));
        let by = Some(a.bytes as i64);
        b.set(agg::START, start);
        b.set(agg::END, start.saturating_add(dur));
        b.set(agg::DURATION, dur);
        b.set(agg::ID, first_id.wrapping_add(k as i64));
        b.set(agg::PCORE, pcore as i64);
        b.set(agg::QIDX, i64::from(a.queue));
        b.set(agg::QNAME, name);
        b.set(agg::QTYPE, queue_type);
        b.set(agg::READ, by);
        b.set(agg::WRITE, by);
        b.set(agg::TRANSFER, by);
        b.set(
            agg::THROUGHPUT,
            throughput(a.bytes, span.saturating_mul(1000)),
        );
        b.set(agg::SG, sg);
        b.set(agg::ENGINE, a.engine);
        b.set(agg::CRC, i64::from(a.crc));
        b.set(agg::PACKETS, a.packets);
        b.end_row_into(sink)?;
    }
    b.finish_into(sink)?;
    Ok(aggs.len as u64)
}

/// DMA buffers of a core: trace type 4 (block type 1 in the samples; any block type accepted).
pub(super) fn dma_buffers(sg: &SubgraphInfo) -> impl Iterator<Item = &TraceBuffer> {
    sg.buffers
        .iter()
        .filter(|b| b.trace_type == 4 && b.size > 0)
}

/// Throttle buffers of a core (trace type 5).
pub(super) fn throttle_buffers(sg: &SubgraphInfo) -> impl Iterator<Item = &TraceBuffer> {
    sg.buffers
        .iter()
        .filter(|b| b.trace_type == 5 && b.size > 0)
}

/// One decoded throttle record awaiting its duration.
#[derive(Clone, Copy)]
struct Ham {
    fs: i128,
    w0: u32,
    k: i32,
    n: i32,
    code: i32,
}

/// Explorer's `Throttle.type` for a raw type code (ntff.md §4.5).
pub fn throttle_type(code: i32) -> &'static str {
    match code {
        0 => "activity_0",
        1 => "activity_1",
        _ => "unknown",
    }
}

/// Per (core, type) throttle totals for `ThrottleSummary`: (type code, active ns, Σ k/n × ns).
pub type ThrottleTotals = Vec<(i32, i64, f64)>;

/// Where the last throttle record of a core ends (ntff.md §4.5).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ThrottleEnd {
    /// Calibrated fs; duration = ⌊(end − start) / 10⁶⌋. v6: the end of the core's last exported
    /// instruction (24/24 v6 rows); v4/v5: the latest instruction-end or event record, i.e. the
    /// record that gives `last_hw_timestamp` (54/54 inf2 rows; `last_hw_timestamp` − `timestamp`
    /// in ns is 1 ns too long on 4 of 9 files).
    Fs(i128),
    /// Unknown: the duration is null.
    None,
}

/// Streams the throttle buffers of one core into `Throttle` rows (ntff.md §4.5, §10 step 7).
/// Each row lasts to the next record of the core; the last one to `last_end`. Returns per-type
/// totals.
pub(super) fn decode_throttle_core<S: ByteSource + ?Sized>(
    io: NtffIo<'_, S>,
    sg: &SubgraphInfo,
    pcore: usize,
    last_end: ThrottleEnd,
    stats: &mut DmaCoreStats,
) -> Result<ThrottleTotals> {
    let NtffIo {
        src,
        info,
        window,
        file,
        problems,
        progress,
        sink,
    } = io;
    let mut b = TableBuilder::new(&explorer::THROTTLE);
    let mut totals: ThrottleTotals = Vec::new();
    let mut pending: Option<Ham> = None;
    let mut emit = |b: &mut TableBuilder, h: Ham, end: ThrottleEnd| -> Result<()> {
        let dur = match end {
            ThrottleEnd::Fs(e) => Some(clamp_i64(e.saturating_sub(h.fs).div_euclid(1_000_000))),
            ThrottleEnd::None => None,
        }
        .map(|d| d.max(0));
        b.set(thr::DURATION, dur);
        b.set(thr::K, h.k);
        b.set(thr::N, h.n);
        b.set(thr::TS, window.ns(h.fs));
        b.set(thr::TYPE, throttle_type(h.code));
        b.set(thr::PCORE, pcore as i64);
        b.set(thr::SG, sg.name.as_str());
        b.set(thr::CODE, h.code);
        b.set(thr::W0, i64::from(h.w0));
        b.end_row_into(sink)?;
        stats.throttles += 1;
        let d = dur.unwrap_or(0).max(0);
        let frac = if h.n > 0 {
            f64::from(h.k) / f64::from(h.n)
        } else {
            1.0
        };
        match totals.iter_mut().find(|t| t.0 == h.code) {
            Some(t) => {
                t.1 = t.1.saturating_add(d);
                t.2 += frac * d as f64;
            }
            None => totals.push((h.code, d, frac * d as f64)),
        }
        Ok(())
    };
    for buf in throttle_buffers(sg) {
        stream_buffer(
            src,
            info.blob_offset,
            buf,
            file,
            problems,
            progress,
            |r: Rec| {
                let fs = sg.calibration.throttle.fs(r.ts);
                if !window.contains(fs) {
                    return Ok(());
                }
                let n = i32::from(r.throttle_n());
                let h = if n == 0 {
                    // The v5 exports show n = 0 as type 99 with k = n = 1.
                    Ham {
                        fs,
                        w0: r.w0,
                        k: 1,
                        n: 1,
                        code: 99,
                    }
                } else {
                    Ham {
                        fs,
                        w0: r.w0,
                        k: i32::from(r.throttle_k()),
                        n,
                        code: i32::from(r.throttle_type()),
                    }
                };
                if let Some(p) = pending.replace(h) {
                    emit(&mut b, p, ThrottleEnd::Fs(fs))?;
                }
                Ok(())
            },
        )?;
    }
    if let Some(p) = pending {
        emit(&mut b, p, last_end)?;
    }
    b.finish_into(sink)?;
    Ok(totals)
}

/// Writes `ThrottleSummary`: per core (`nc_idx` = physical core) one row per throttle type and
/// one `all` row. `span_ns` is the execution time the percentages refer to.
pub(super) fn write_throttle_summary(
    rows: &[(u32, ThrottleTotals)],
    span_ns: i64,
    sink: &mut dyn TableSink,
) -> Result<()> {
    let mut b = TableBuilder::new(&explorer::THROTTLE_SUMMARY);
    let pct = |ns: i64| (span_ns > 0).then(|| ns as f64 * 100.0 / span_ns as f64);
    for (nc, totals) in rows {
        if totals.is_empty() {
            continue;
        }
        // Saturating: corrupt records can put every type near i64::MAX (found by fuzzing).
        let all_t: i64 = totals.iter().fold(0i64, |a, t| a.saturating_add(t.1));
        let all_w: f64 = totals.iter().map(|t| t.2).sum();
        let mut put = |b: &mut TableBuilder, ty: &str, t: i64, w: f64| -> Result<()> {
            b.set(tsum::NC, i32::try_from(*nc).ok());
            b.set(tsum::TYPE, ty);
            b.set(tsum::TIME, t);
            b.set(tsum::PERCENT, pct(t).map(|v| v as f32));
            b.set(tsum::UTIL, (t > 0).then(|| (w / t as f64 * 100.0) as f32));
            b.end_row_into(sink)?;
            Ok(())
        };
        for t in totals {
            put(&mut b, throttle_type(t.0), t.1, t.2)?;
        }
        put(&mut b, "all", all_t, all_w)?;
    }
    b.finish_into(sink)?;
    Ok(())
}

/// Writes `DmaQueuesInfo` from the NTFF queue tables (ntff.md §3.3.2): one row per (subgraph,
/// queue name) in order of first appearance, named Explorer-style; `engine_idx` is the last
/// engine listed for the name and `idx` its queue (as the JSON export's `dma_queues_info`),
/// `dram_channel` = field 7, `axi_port` = 0 (docs/formats.md: no NTFF field found; 0 in every
/// export).
pub(super) fn write_dma_queues_info(info: &NtffInfo, sink: &mut dyn TableSink) -> Result<u64> {
    let mut b = TableBuilder::new(&explorer::DMA_QUEUES_INFO);
    for (pcore, sg) in info.subgraphs.iter().enumerate() {
        let mut names: Vec<&str> = Vec::new();
        for q in &sg.dma_queues {
            if !names.contains(&q.name.as_str()) {
                names.push(&q.name);
            }
        }
        for name in names {
            let entries: Vec<&super::DmaQueueInfo> =
                sg.dma_queues.iter().filter(|q| q.name == name).collect();
            let Some(last) = entries.last() else { continue };
            b.set(queue::NAME, explorer_queue_name(name).as_str());
            b.set(queue::TYPE, queue_info_type(last.queue_type));
            b.set(queue::PCORE, pcore as i64);
            b.set(queue::IDX, i64::from(last.queue));
            b.set(queue::ENGINE, i64::from(last.engine));
            b.set(queue::AXI_PORT, 0i64);
            b.set(queue::DRAM_CHANNEL, i64::from(last.dram_channel));
            b.set(queue::NEFF_NAME, name);
            b.set(queue::SG, sg.name.as_str());
            b.set(queue::TYPE_CODE, i32::try_from(last.queue_type).ok());
            b.set(queue::EVENT_ID, last.event_id);
            let engines: Vec<i64> = entries.iter().map(|q| i64::from(q.engine)).collect();
            b.set(queue::ENGINES, engines.as_slice());
            b.end_row_into(sink)?;
        }
    }
    b.finish_into(sink)
}

/// Trace-buffer bytes of the DMA and throttle buffers (progress total).
/// Bytes of every core's DMA buffers (what the time-ordered passes read).
pub(super) fn dma_buffer_bytes(info: &NtffInfo) -> u64 {
    info.subgraphs
        .iter()
        .flat_map(dma_buffers)
        .map(|b| b.size)
        .fold(0u64, u64::saturating_add)
}

/// The share of an NTFF's trace-buffer bytes that are DMA and throttle records (0 – 1; 0 without
/// buffers): how much of a split decode the DMA side is (ntff.md §3, buffer kinds). The page
/// pipelines the first half's Parquet to the DMA side's worker only when it is small
/// (crate/src/wasm.rs `process_split`).
pub fn dma_share(info: &NtffInfo) -> f64 {
    let all = info
        .subgraphs
        .iter()
        .flat_map(|sg| &sg.buffers)
        .map(|b| b.size)
        .fold(0u64, u64::saturating_add);
    if all == 0 {
        return 0.0;
    }
    dma_bytes_total(info) as f64 / all as f64
}

pub(super) fn dma_bytes_total(info: &NtffInfo) -> u64 {
    info.subgraphs
        .iter()
        .map(|sg| {
            dma_buffers(sg)
                .chain(throttle_buffers(sg))
                .map(|b| b.size)
                .fold(0u64, u64::saturating_add)
        })
        .fold(0u64, u64::saturating_add)
}

/// Throttle rows of every core and `ThrottleSummary` (ntff.md §4.5). The last record of a core
/// lasts, in v6, to the end of the core's last exported instruction; in v4/v5 to
/// `last_hw_timestamp` (the end of the window).
pub(super) fn decode_throttles<S: ByteSource + ?Sized>(
    io: NtffIo<'_, S>,
    last_ends: &[Option<i128>],
    max_end_fs: Option<i128>,
    report: &DecodeReport,
    cores: &mut [CoreSummary],
) -> Result<()> {
    let NtffIo {
        src,
        info,
        window,
        file,
        problems,
        progress,
        sink,
    } = io;
    let mut totals = Vec::new();
    for (pcore, (sg, cs)) in info.subgraphs.iter().zip(cores.iter_mut()).enumerate() {
        let end = match (window.t1, last_ends.get(pcore).copied().flatten()) {
            (Some(_), Some(e)) => ThrottleEnd::Fs(e),
            (Some(_), None) => ThrottleEnd::None,
            (None, _) => max_end_fs.map_or(ThrottleEnd::None, ThrottleEnd::Fs),
        };
        let io = NtffIo {
            src,
            info,
            window,
            file,
            problems: &mut *problems,
            progress: &mut *progress,
            sink: &mut *sink,
        };
        let t = decode_throttle_core(io, sg, pcore, end, &mut cs.dma)?;
        totals.push((sg.core, t));
    }
    let span = report
        .total_time_ps
        .map_or(report.last_hw_timestamp_ns, |ps| (ps / 1000) as i64);
    write_throttle_summary(&totals, span, sink)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ntff::DmaQueueInfo;

    /// `Reorder` releases packets in exactly a heap's (start, row order), whatever the arrival
    /// order and the release limits.
    #[test]
    fn reorder_releases_in_heap_order() {
        let p = |start: i64, order: u64| Pending {
            start,
            order,
            end: start + 5,
            bytes: 0,
            rate_bits: 0,
            group: 0,
            span: (0, 0),
            usage: true,
        };
        let mut r = Reorder::default();
        let mut h: BinaryHeap<Reverse<Pending>> = BinaryHeap::new();
        let (mut got, mut want) = (Vec::new(), Vec::new());
        let mut used_heap = false;
        // Mostly ascending starts with steps back (ends in end order), released every 7.
        let mut x: u64 = 1;
        for i in 0..2000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let start = i as i64 * 10 - (x >> 60) as i64 * 25;
            r.push(p(start, i));
            used_heap |= !r.heap.is_empty();
            h.push(Reverse(p(start, i)));
            if i % 7 == 6 {
                let limit = Some(start - 40);
                while let Some(q) = r.pop_before(limit) {
                    got.push((q.start, q.order));
                }
                while h
                    .peek()
                    .is_some_and(|q| limit.is_none_or(|l| q.0.start < l))
                {
                    let q = h.pop().unwrap().0;
                    want.push((q.start, q.order));
                }
                assert_eq!(got, want);
            }
        }
        while let Some(q) = r.pop_before(None) {
            got.push((q.start, q.order));
        }
        while let Some(Reverse(q)) = h.pop() {
            want.push((q.start, q.order));
        }
        assert_eq!(got.len(), 2000);
        assert_eq!(got, want);
        assert!(used_heap, "the test must send packets through the heap");
    }

    #[test]
    fn ps_floor_matches_i128() {
        for fs in [
            0i128,
            999,
            1000,
            -1,
            -1000,
            -1001,
            i64::MAX as i128,
            i64::MIN as i128,
            i64::MAX as i128 + 1,
            i128::MIN,
            i128::MAX,
        ] {
            assert_eq!(ps_floor(fs), fs.div_euclid(1000), "{fs}");
        }
        for d in [
            1i128,
            999,
            1_000_000_007,
            i64::MAX as i128,
            i64::MAX as i128 + 3,
        ] {
            assert_eq!(
                throughput(4096, d).map(f32::to_bits),
                Some((4096f32 / ((d as f64 * 1e-15) as f32)).to_bits()),
                "{d}"
            );
        }
    }

    fn q(name: &str, code: u32) -> DmaQueueInfo {
        DmaQueueInfo {
            name: name.into(),
            queue_type: code,
            ..Default::default()
        }
    }

    #[test]
    fn queue_rules() {
        assert_eq!(queue_type(None), "instruction");
        assert_eq!(queue_type(Some(&q("qActDynamicHW", 2))), "hardware_dynamic");
        assert_eq!(queue_type(Some(&q("qPoolDynamic", 2))), "software_dynamic");
        assert_eq!(queue_type(Some(&q("qSPSpillReload0", 2))), "data");
        assert_eq!(queue_name(None, 14, 67), "Q14-E67");
        assert_eq!(queue_name(Some(&q("qPoolDynamic", 2)), 0, 64), "Q0-E64");
        assert_eq!(
            queue_name(Some(&q("qSPSpillReload0", 2)), 1, 0),
            "qSyncSpillReload0-Q1-E0"
        );
        assert_eq!(queue_info_type(2), "weights");
        assert_eq!(queue_info_type(0), "unknown");
        assert_eq!(throttle_type(1), "activity_1");
        assert_eq!(throttle_type(99), "unknown");
    }

    #[test]
    fn throttle_summary_saturates() {
        // Fuzzing found two throttle types near i64::MAX each overflowing the `all` row.
        let mut t = crate::tables::Tables::default();
        let rows = vec![(
            0u32,
            vec![(1i32, i64::MAX - 1, 1.0), (2i32, i64::MAX - 1, 1.0)],
        )];
        write_throttle_summary(&rows, 1000, &mut t).unwrap();
        let b = t.concat("ThrottleSummary").unwrap();
        let c = b
            .column_by_name("throttle_active_time_ns")
            .unwrap()
            .as_any()
            .downcast_ref::<arrow_array::Int64Array>()
            .unwrap()
            .clone();
        assert_eq!(c.value(2), i64::MAX, "the all row saturates");
    }

    /// Decodes every core of `data` twice: the time-ordered pass as the decoder runs it, and
    /// the fallback that reads in file order and sorts every packet (its packets released to a
    /// second thread, [`dma_times_piped`]). Returns per core (ordered
    /// result, sorted result, ordered `DmaUsage`, sorted `DmaUsage`, packets).
    #[allow(clippy::type_complexity)]
    fn both_passes(
        data: &[u8],
    ) -> Vec<(
        DmaTimes,
        DmaTimes,
        Option<arrow_array::RecordBatch>,
        Option<arrow_array::RecordBatch>,
        u64,
    )> {
        let src = crate::SliceSource(data);
        let mut t = crate::tables::Tables::default();
        let rep = crate::ntff::decode(&src, &Default::default(), &mut t, &mut |_, _| {}).unwrap();
        let info = &rep.info;
        let window = Window {
            t0: rep.origin_fs,
            t1: info.executions.first().map(|x| x.end as i128 * 1000),
        };
        let first_core = info.subgraphs.first().map_or(0, |s| s.core);
        let mut out = Vec::new();
        for (pcore, sg) in info.subgraphs.iter().enumerate() {
            let (mut a, mut b) = (
                crate::tables::Tables::default(),
                crate::tables::Tables::default(),
            );
            let mut stats = DmaCoreStats::default();
            let (mut id, mut agg) = (0, 0);
            let mut io = NtffIo {
                src: &src,
                info,
                window,
                file: "t",
                problems: &mut Vec::new(),
                progress: &mut |_| {},
                sink: &mut a,
            };
            let ids = DmaIds {
                packet: &mut id,
                aggregated: &mut agg,
            };
            let plan = dma_rows(io.reborrow(), sg, pcore, first_core, ids, &mut stats).unwrap();
            stats.times = dma_times(io.src, info, sg, &plan, io.sink, io.progress).unwrap();
            // The merged pass with its packets and releases sent to a second thread (the split
            // decode's way): the same rows, figures and peak as inline.
            let mut c = crate::tables::Tables::default();
            let piped = dma_times_piped(&src, info, sg, &plan, &mut c, &mut |_| {}).unwrap();
            assert_eq!(piped.groups, stats.times.groups, "core {pcore}");
            assert_eq!(piped.usage_rows, stats.times.usage_rows, "core {pcore}");
            assert_eq!(piped.peak_packets, stats.times.peak_packets, "core {pcore}");
            assert_eq!(piped.runs, stats.times.runs, "core {pcore}");
            assert_eq!(c.concat("DmaUsage"), a.concat("DmaUsage"), "core {pcore}");
            let whole: Vec<Run> = dma_buffers(sg)
                .enumerate()
                .map(|(buf, x)| Run {
                    buf,
                    start: 0,
                    end: x.size / 16,
                })
                .collect();
            // Sorting every packet, with the packets released to a second thread as the split
            // decode does: both must give the inline merge's rows and figures.
            let plan = DmaPlan {
                runs: whole,
                drop: None,
                pcore,
                first_core,
                window,
            };
            let sorted = dma_times_piped(&src, info, sg, &plan, &mut b, &mut |_| {}).unwrap();
            out.push((
                stats.times,
                sorted,
                a.concat("DmaUsage"),
                b.concat("DmaUsage"),
                stats.packets,
            ));
        }
        out
    }

    /// The k-way merge of the sorted runs gives exactly what sorting every packet gives, on
    /// every sample NTFF, and takes the merged (bounded) path on all of them.
    #[test]
    fn time_pass_equals_sorting_on_samples() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/samples");
        let idx = std::fs::read_to_string(root.join("INDEX.tsv"))
            .expect("../shared/samples/INDEX.tsv beside the repository");
        let mut cores = 0;
        for line in idx.lines().skip(1) {
            let c: Vec<&str> = line.split('\t').collect();
            if c.len() < 3 || c[2] != "NTFF" {
                continue;
            }
            let path = root.join(c[0]).join(c[1]);
            let data = std::fs::read(&path).unwrap();
            for (k, (ord, sorted, ua, ub, packets)) in both_passes(&data).into_iter().enumerate() {
                let what = format!("{} core {k}", path.display());
                assert!(
                    ord.runs > 0 || packets == 0,
                    "{what}: merged path not taken"
                );
                assert_eq!(ord.groups, sorted.groups, "{what}");
                assert_eq!(ord.usage_rows, sorted.usage_rows, "{what}");
                assert_eq!(ua, ub, "{what}");
                let n: u64 = ord.groups.iter().map(|g| g.n).sum();
                assert!(n <= packets, "{what}");
                cores += 1;
            }
        }
        assert!(cores >= 50, "{cores} cores");
    }

    /// Bounded state: on a synthetic capture the merged pass holds a few hundred packets at
    /// most, whatever the capture's size (the sorting fallback holds every packet).
    #[test]
    fn time_pass_state_is_bounded() {
        let mut peaks = Vec::new();
        for mb in [4u64, 16] {
            let files = crate::synth::large_capture(mb << 20).unwrap();
            let (_, ntff) = files.iter().find(|(n, _)| n.ends_with(".ntff")).unwrap();
            let cores = both_passes(ntff);
            let (ord, sorted, ua, ub, packets) = &cores[0];
            assert!(*packets > 10_000 * mb, "{packets} packets in {mb} MB");
            assert_eq!(ord.groups, sorted.groups);
            assert_eq!(ua, ub);
            assert_eq!(
                sorted.peak_packets as u64,
                ord.groups.iter().map(|g| g.n).sum::<u64>()
            );
            assert!(ord.runs >= 1);
            peaks.push(ord.peak_packets);
        }
        // Packets in flight plus one release interval; not proportional to the packets.
        assert!(
            peaks.iter().all(|&p| p < 4 * RELEASE_EVERY as usize),
            "{peaks:?}"
        );
    }

    #[test]
    fn throughput_float32() {
        // fused_fp32_s512 sg00 Q0-E64 packet 0: 4096 B in 156 ns (export 26177542000).
        assert_eq!(throughput(4096, 0), None);
        let t = throughput(4096, 156_470_000).unwrap();
        assert!((t / 2.6177542e10 - 1.0).abs() < 1e-3, "{t}");
    }

    /// The 64-bit fast paths (throughput's conversion, identity calibration) give the i128
    /// results on both sides of the i64 range.
    #[test]
    fn fast_paths_equal_i128() {
        let big = i128::from(i64::MAX);
        for d in [
            1i128,
            999,
            156_470_000,
            big - 1,
            big,
            big + 1,
            i128::MAX / 2,
        ] {
            let secs = (d as f64 * 1e-15) as f32;
            assert_eq!(throughput(4096, d), Some(4096f32 / secs), "{d}");
        }
        let id = crate::ntff::ClockCal::IDENTITY;
        let edge = (i64::MAX / 1000) as u64;
        for ts in [0u64, 1, edge, edge + 1, i64::MAX as u64, u64::MAX] {
            assert_eq!(id.fs(ts), i128::from(ts) * 1000, "{ts}");
        }
        let late = crate::ntff::ClockCal {
            init: 5,
            actual: 1,
            expected: 1,
        };
        assert_eq!(late.fs(2), -3000);
        assert_eq!(late.fs(0), -5000);
        let fits = i128::from(i64::MAX / 1000);
        for ps in [0, 1, -1, fits, fits + 1, -fits, -fits - 1, i128::MAX / 1000] {
            assert_eq!(ps_to_fs(ps), ps * 1000, "{ps}");
        }
    }
}
