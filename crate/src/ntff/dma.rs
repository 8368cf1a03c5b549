//! NTFF DMA (type 4), throttle (type 5) records and the DMA queue table → `DmaPacket`,
//! `Throttle`, `ThrottleSummary` and `DmaQueuesInfo` (ntff.md §3.3.2, §4.4, §4.5, §10 steps 6–7;
//! corrections in docs/formats.md "NTFF → DMA and throttle").
//!
//! Called by [`super::decode()`] once per physical core. Buffers are streamed in
//! [`super::decode::CHUNK`]-byte pieces; pairing keeps at most [`MAX_OPEN_PER_STREAM`] open
//! phase-1 records per (engine, queue) stream and [`MAX_OPEN_DMA`] per core.

use std::collections::{HashMap, VecDeque};

use super::decode::{clamp_i64, stream_buffer, CoreSummary, DecodeReport, Rec, Window};
use super::raw::DmaPhase;
use super::{NtffInfo, SubgraphInfo, TraceBuffer};
use crate::error::{Problem, Result};
use crate::neff::explorer_queue_name;
use crate::source::ByteSource;
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
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
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
}

/// Packet size of a static-queue transfer's completion packet (the semaphore write that ends
/// each engine's share of a transfer; docs/formats.md "DmaPacketAggregated").
pub const COMPLETION_BYTES: u64 = 4;

/// One static-queue transfer being aggregated (docs/formats.md "DmaPacketAggregated").
struct Agg {
    id: i64,
    queue: u32,
    name: String,
    queue_type: &'static str,
    /// ps relative to t0.
    start_ps: i128,
    end_ps: i128,
    bytes: u64,
    crc: i64,
    engine: i64,
    packets: i64,
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
    let secs = (duration_fs as f64 * 1e-15) as f32;
    (secs > 0.0).then(|| bytes as f32 / secs)
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

/// One (engine, queue) stream of a core.
struct Stream {
    /// `None` until the first phase-1/5 record decides; `Some(false)` = dropped.
    keep: Option<bool>,
    open: VecDeque<(u64, i128)>,
    next_idx: i32,
    engine_idx: i64,
    queue_name: String,
    queue_type: &'static str,
    variable: Option<&'static str>,
    /// Explorer name of a static compiler queue (its packets form `DmaPacketAggregated` rows).
    static_name: Option<String>,
    /// Completion packets seen: the transfer ordinal of the next packet.
    ordinal: u32,
    /// Dictionary-key memos of `queue_type`, `variable`, `queue_name` (constant per stream).
    memo: [Memo; 3],
}

/// Streams the DMA buffers of one core into `DmaPacket` rows (ntff.md §10 step 6).
///
/// `first_core` is the physical index of the logical core's first core (`sg00`), so that
/// `engine_idx` = 16 × `first_core` + w0[30:24]. `next_id` numbers the rows.
#[allow(clippy::too_many_arguments)]
pub(super) fn decode_dma_core<S: ByteSource + ?Sized>(
    src: &S,
    info: &NtffInfo,
    sg: &SubgraphInfo,
    pcore: usize,
    first_core: u32,
    window: Window,
    file: &str,
    problems: &mut Vec<Problem>,
    progress: &mut dyn FnMut(u64),
    sink: &mut dyn TableSink,
    next_id: &mut i64,
    next_agg_id: &mut i64,
    stats: &mut DmaCoreStats,
) -> Result<()> {
    let def = &explorer::DMA_PACKET;
    // Static-queue transfers by (queue, ordinal): one small entry per transfer until the end of
    // the core (the transfer's last packet is only known then).
    let mut aggs: Vec<Agg> = Vec::new();
    let mut agg_index: rustc_hash::FxHashMap<(u32, u32), usize> = Default::default();
    let mut sg_memo = Memo::default();
    let mut b = TableBuilder::new(def);
    let table: HashMap<(u32, u32), &super::DmaQueueInfo> = sg
        .dma_queues
        .iter()
        .map(|q| ((q.engine, q.queue), q))
        .collect();
    let mut streams: rustc_hash::FxHashMap<(u32, u32), Stream> = Default::default();
    let mut open_total = 0usize;
    let base = i64::from(first_core) * 16;
    let v6 = window.t1.is_some();
    for buf in dma_buffers(sg) {
        stream_buffer(
            src,
            info.blob_offset,
            buf,
            file,
            problems,
            progress,
            |r: Rec| {
                let phase = r.dma_phase();
                if phase == DmaPhase::Other {
                    return Ok(());
                }
                let field = r.dma_engine_field();
                let queue = r.dma_queue();
                let cal = sg
                    .calibration
                    .dma
                    .get(field as usize)
                    .copied()
                    .unwrap_or_default();
                let fs = cal.fs(r.ts);
                // v6: only records inside [t0, t1] take part (ntff.md §10 step 6). v4/v5: every
                // record is paired and counted in packet_idx; rows are written from the origin
                // on (the inf2 exports number packets from the start of the buffer).
                if v6 && !window.contains(fs) {
                    return Ok(());
                }
                let s = streams.entry((field, queue)).or_insert_with(|| {
                    let engine_idx = base + i64::from(field);
                    let entry = u32::try_from(engine_idx)
                        .ok()
                        .and_then(|e| table.get(&(e, queue)).copied());
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
                            .filter(|q| {
                                !q.name.ends_with("Dynamic") && !q.name.ends_with("DynamicHW")
                            })
                            .map(|q| explorer_queue_name(&q.name)),
                        ordinal: 0,
                        memo: [Memo::default(); 3],
                    }
                });
                if s.keep.is_none() {
                    // Stream-dropping rule (ntff.md §4.4): a stream whose first in-window
                    // phase-1/5 record is a phase 5 is omitted whole.
                    s.keep = Some(phase == DmaPhase::Start);
                    if phase == DmaPhase::End {
                        stats.dropped_streams += 1;
                    }
                }
                if s.keep == Some(false) {
                    if phase == DmaPhase::End {
                        stats.dropped_packets += 1;
                    }
                    return Ok(());
                }
                if phase == DmaPhase::Start {
                    if s.open.len() >= MAX_OPEN_PER_STREAM {
                        s.open.pop_front();
                        stats.unpaired_starts += 1;
                    } else if open_total >= MAX_OPEN_DMA {
                        stats.unpaired_starts += 1;
                        return Ok(());
                    } else {
                        open_total += 1;
                    }
                    s.open.push_back((r.ts, fs));
                    return Ok(());
                }
                let Some((ts1, fs1)) = s.open.pop_front() else {
                    stats.unpaired_ends += 1;
                    return Ok(());
                };
                open_total = open_total.saturating_sub(1);
                let bytes = u64::from(r.dma_bytes());
                let ordinal = s.ordinal;
                if s.static_name.is_some() && bytes == COMPLETION_BYTES {
                    s.ordinal = s.ordinal.saturating_add(1);
                }
                if fs1 < window.t0 {
                    s.next_idx = s.next_idx.saturating_add(1);
                    return Ok(());
                }
                if let Some(name) = &s.static_name {
                    let t0ps = window.t0.div_euclid(1000);
                    let (sp, ep) = (fs1.div_euclid(1000) - t0ps, fs.div_euclid(1000) - t0ps);
                    let k = *agg_index.entry((queue, ordinal)).or_insert_with(|| {
                        aggs.push(Agg {
                            id: *next_agg_id,
                            queue,
                            name: name.clone(),
                            queue_type: s.queue_type,
                            start_ps: sp,
                            end_ps: ep,
                            bytes: 0,
                            crc: 0,
                            engine: s.engine_idx,
                            packets: 0,
                        });
                        *next_agg_id = next_agg_id.wrapping_add(1);
                        aggs.len() - 1
                    });
                    if let Some(a) = aggs.get_mut(k) {
                        a.start_ps = a.start_ps.min(sp);
                        a.end_ps = a.end_ps.max(ep);
                        a.engine = a.engine.max(s.engine_idx);
                        a.packets += 1;
                        if bytes == COMPLETION_BYTES {
                            a.crc = i64::from(r.dma_crc());
                        } else {
                            a.bytes = a.bytes.saturating_add(bytes);
                        }
                        b.set(pk::AGG, a.id);
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
                if let Some(batch) = b.end_row()? {
                    sink.batch(def, batch)?;
                }
                s.next_idx = s.next_idx.saturating_add(1);
                *next_id = next_id.wrapping_add(1);
                stats.packets += 1;
                stats.bytes = stats.bytes.saturating_add(bytes);
                Ok(())
            },
        )?;
    }
    stats.unpaired_starts += streams
        .values()
        .filter(|s| s.keep == Some(true))
        .map(|s| s.open.len() as u64)
        .sum::<u64>();
    let batch = b.take_batch()?;
    if batch.num_rows() > 0 {
        sink.batch(def, batch)?;
    }
    stats.aggregated += write_aggregated(&aggs, pcore, &sg.name, sink)?;
    Ok(())
}

/// `DmaPacketAggregated` rows of one core (docs/formats.md "DmaPacketAggregated"): span = first
/// packet start to last packet end (ps relative to t0, floored to ns), bytes = the data packets
/// (completion packets left out), throughput as the packets' float32 rule.
fn write_aggregated(aggs: &[Agg], pcore: usize, sg: &str, sink: &mut dyn TableSink) -> Result<u64> {
    let def = &explorer::DMA_PACKET_AGGREGATED;
    let col = |n| def.col(n);
    let mut b = TableBuilder::new(def);
    for a in aggs {
        let start = clamp_i64(a.start_ps.div_euclid(1000));
        let span = a.end_ps.saturating_sub(a.start_ps);
        let dur = clamp_i64(span.div_euclid(1000));
        let by = Some(a.bytes as i64);
        b.i64(col("start_ts"), Some(start));
        b.i64(col("end_ts"), Some(start.saturating_add(dur)));
        b.i64(col("duration_ns"), Some(dur));
        b.i64(col("id"), Some(a.id));
        b.i64(col("pcore_idx"), Some(pcore as i64));
        b.i64(col("queue_idx"), Some(i64::from(a.queue)));
        b.str(col("queue_name"), Some(&a.name));
        b.str(col("queue_type"), Some(a.queue_type));
        b.i64(col("read_bytes"), by);
        b.i64(col("write_bytes"), by);
        b.i64(col("transfer_bytes"), by);
        b.f64(
            col("throughput"),
            throughput(a.bytes, span.saturating_mul(1000)).map(f64::from),
        );
        b.str(col("nscope_subgraph"), Some(sg));
        b.i64(col("nscope_engine_idx"), Some(a.engine));
        b.i64(col("nscope_crc"), Some(a.crc));
        b.i64(col("nscope_packets"), Some(a.packets));
        if let Some(batch) = b.end_row()? {
            sink.batch(def, batch)?;
        }
    }
    let batch = b.take_batch()?;
    if batch.num_rows() > 0 {
        sink.batch(def, batch)?;
    }
    Ok(aggs.len() as u64)
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
#[allow(clippy::too_many_arguments)]
pub(super) fn decode_throttle_core<S: ByteSource + ?Sized>(
    src: &S,
    info: &NtffInfo,
    sg: &SubgraphInfo,
    pcore: usize,
    window: Window,
    last_end: ThrottleEnd,
    file: &str,
    problems: &mut Vec<Problem>,
    progress: &mut dyn FnMut(u64),
    sink: &mut dyn TableSink,
    stats: &mut DmaCoreStats,
) -> Result<ThrottleTotals> {
    let def = &explorer::THROTTLE;
    let mut b = TableBuilder::new(def);
    let col = |n| def.col(n);
    let (c_dur, c_k, c_n, c_ts, c_type, c_pc, c_sg, c_code, c_w0) = (
        col("duration"),
        col("k"),
        col("n"),
        col("timestamp"),
        col("type"),
        col("pcore_idx"),
        col("nscope_subgraph"),
        col("nscope_type_code"),
        col("nscope_raw_w0"),
    );
    let mut totals: ThrottleTotals = Vec::new();
    let mut pending: Option<Ham> = None;
    let mut emit = |b: &mut TableBuilder, h: Ham, end: ThrottleEnd| -> Result<()> {
        let dur = match end {
            ThrottleEnd::Fs(e) => Some(clamp_i64(e.saturating_sub(h.fs).div_euclid(1_000_000))),
            ThrottleEnd::None => None,
        }
        .map(|d| d.max(0));
        b.i64(c_dur, dur);
        b.i32(c_k, Some(h.k));
        b.i32(c_n, Some(h.n));
        b.i64(c_ts, Some(window.ns(h.fs)));
        b.str(c_type, Some(throttle_type(h.code)));
        b.i64(c_pc, Some(pcore as i64));
        b.str(c_sg, Some(&sg.name));
        b.i32(c_code, Some(h.code));
        b.i64(c_w0, Some(i64::from(h.w0)));
        if let Some(batch) = b.end_row()? {
            sink.batch(def, batch)?;
        }
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
    let batch = b.take_batch()?;
    if batch.num_rows() > 0 {
        sink.batch(def, batch)?;
    }
    Ok(totals)
}

/// Writes `ThrottleSummary`: per core (`nc_idx` = physical core) one row per throttle type and
/// one `all` row. `span_ns` is the execution time the percentages refer to.
pub(super) fn write_throttle_summary(
    rows: &[(u32, ThrottleTotals)],
    span_ns: i64,
    sink: &mut dyn TableSink,
) -> Result<()> {
    let def = &explorer::THROTTLE_SUMMARY;
    let mut b = TableBuilder::new(def);
    let col = |n| def.col(n);
    let (c_nc, c_ty, c_t, c_p, c_u) = (
        col("nc_idx"),
        col("throttle_type"),
        col("throttle_active_time_ns"),
        col("throttle_active_time_percent"),
        col("max_achievable_util_with_throttling_percent"),
    );
    let pct = |ns: i64| (span_ns > 0).then(|| ns as f64 * 100.0 / span_ns as f64);
    for (nc, totals) in rows {
        if totals.is_empty() {
            continue;
        }
        // Saturating: corrupt records can put every type near i64::MAX (found by fuzzing).
        let all_t: i64 = totals.iter().fold(0i64, |a, t| a.saturating_add(t.1));
        let all_w: f64 = totals.iter().map(|t| t.2).sum();
        let mut put = |b: &mut TableBuilder, ty: &str, t: i64, w: f64| -> Result<()> {
            b.i32(c_nc, i32::try_from(*nc).ok());
            b.str(c_ty, Some(ty));
            b.i64(c_t, Some(t));
            b.f64(c_p, pct(t));
            b.f64(c_u, (t > 0).then(|| w / t as f64 * 100.0));
            if let Some(batch) = b.end_row()? {
                sink.batch(def, batch)?;
            }
            Ok(())
        };
        for t in totals {
            put(&mut b, throttle_type(t.0), t.1, t.2)?;
        }
        put(&mut b, "all", all_t, all_w)?;
    }
    let batch = b.take_batch()?;
    if batch.num_rows() > 0 {
        sink.batch(def, batch)?;
    }
    Ok(())
}

/// Writes `DmaQueuesInfo` from the NTFF queue tables (ntff.md §3.3.2): one row per (subgraph,
/// queue name) in order of first appearance, named Explorer-style; `engine_idx` is the last
/// engine listed for the name and `idx` its queue (as the JSON export's `dma_queues_info`),
/// `dram_channel` = field 7, `axi_port` = 0 (docs/formats.md: no NTFF field found; 0 in every
/// export).
pub(super) fn write_dma_queues_info(info: &NtffInfo, sink: &mut dyn TableSink) -> Result<u64> {
    let def = &explorer::DMA_QUEUES_INFO;
    let mut b = TableBuilder::new(def);
    let col = |n| def.col(n);
    let mut rows = 0u64;
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
            b.str(col("name"), Some(&explorer_queue_name(name)));
            b.str(col("type"), Some(queue_info_type(last.queue_type)));
            b.i64(col("pcore_idx"), Some(pcore as i64));
            b.i64(col("idx"), Some(i64::from(last.queue)));
            b.i64(col("engine_idx"), Some(i64::from(last.engine)));
            b.i64(col("axi_port"), Some(0));
            b.i64(col("dram_channel"), Some(i64::from(last.dram_channel)));
            b.str(col("nscope_neff_queue_name"), Some(name));
            b.str(col("nscope_subgraph"), Some(&sg.name));
            b.i32(
                col("nscope_queue_type_code"),
                i32::try_from(last.queue_type).ok(),
            );
            b.i64(col("nscope_event_id"), Some(last.event_id));
            let engines: Vec<i64> = entries.iter().map(|q| i64::from(q.engine)).collect();
            b.list_i64(col("nscope_engine_indices"), &engines);
            if let Some(batch) = b.end_row()? {
                sink.batch(def, batch)?;
            }
            rows += 1;
        }
    }
    let batch = b.take_batch()?;
    if batch.num_rows() > 0 {
        sink.batch(def, batch)?;
    }
    Ok(rows)
}

/// Trace-buffer bytes of the DMA and throttle buffers (progress total).
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
#[allow(clippy::too_many_arguments)]
pub(super) fn decode_throttles<S: ByteSource + ?Sized>(
    src: &S,
    info: &NtffInfo,
    window: Window,
    last_ends: &[Option<i128>],
    max_end_fs: Option<i128>,
    report: &DecodeReport,
    file: &str,
    problems: &mut Vec<Problem>,
    progress: &mut dyn FnMut(u64),
    sink: &mut dyn TableSink,
    cores: &mut [CoreSummary],
) -> Result<()> {
    let mut totals = Vec::new();
    for (pcore, (sg, cs)) in info.subgraphs.iter().zip(cores.iter_mut()).enumerate() {
        let end = match (window.t1, last_ends.get(pcore).copied().flatten()) {
            (Some(_), Some(e)) => ThrottleEnd::Fs(e),
            (Some(_), None) => ThrottleEnd::None,
            (None, _) => max_end_fs.map_or(ThrottleEnd::None, ThrottleEnd::Fs),
        };
        let t = decode_throttle_core(
            src,
            info,
            sg,
            pcore,
            window,
            end,
            file,
            problems,
            progress,
            sink,
            &mut cs.dma,
        )?;
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

    #[test]
    fn throughput_float32() {
        // fused_fp32_s512 sg00 Q0-E64 packet 0: 4096 B in 156 ns (export 26177542000).
        assert_eq!(throughput(4096, 0), None);
        let t = throughput(4096, 156_470_000).unwrap();
        assert!((t / 2.6177542e10 - 1.0).abs() < 1e-3, "{t}");
    }
}
