//! Explorer's derived device tables (explorer-schema.md §5.1, §5.2, §5.5, §5.9) computed from
//! our own event tables while they stream, plus the Explorer-style `Warning` rows.
//!
//! | Table | From | JSON export section |
//! |---|---|---|
//! | `ActiveTime` | `Instruction` (EVENT_SEMAPHORE excluded), merged per (pcore, engine) | `active_time` |
//! | `PendingDma` | `Instruction` DMA_DIRECT2D starts, running count per pcore | `pending_dma` |
//! | `DmaUsage` | `DmaPacket` starts/ends, sampled every ≥ 10 ns per pcore | `dma_throughput` |
//! | `HbmUsageSummaryByType` | NTFF subgraph field 11 (device-memory usage) | `nc_mem_usage` |
//! | `Warning` (Explorer texts) | NTFF DGE records, NEFF members | `warnings` |
//!
//! The rules were fitted on the 16 JSON exports in `../shared/samples` (docs/formats.md
//! "Derived tables"); `crate/tests/derived_golden.rs` measures them.
//!
//! Memory: [`DerivedCollector`] keeps, per row seen, only what the rules need — 16 B per merged
//! busy interval (compacted as it grows, so it is bounded by the `ActiveTime` output, not by the
//! instruction count), 16 B per DMA_DIRECT2D, 24 B per `DmaPacket` row (the throughput series
//! needs every packet sorted by time; transient 24 B per packet of the core being written, plus a
//! heap of the packets in flight).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use arrow_array::{Array, Float32Array, RecordBatch};

use crate::engine::Engine;
use crate::error::{Code, Problem, Result};
use crate::ntff::DecodeReport;
use crate::summary::{IntCol, Union};
use crate::tables::{explorer, Emitter, StrCol, TableDef, TableSink};

/// Explorer's DGE warning (`warnings[].message` of all 16 exports, category `Missing Data`).
pub const MSG_MISSING_DGE: &str = "Missing additional dynamic DMA metadata, reported DMA values may be inaccurate. Try capturing the profile with --enable-dge-notifs or NEURON_RT_ENABLE_DGE_NOTIFICATIONS=1 env flag.";
/// Explorer's compiler-metrics warning (all 16 exports).
pub const MSG_MISSING_COMPILER_METRICS: &str =
    "Current NEFF is missing compiler metrics. Please re-compile using latest version of the compiler";
/// Explorer's HLO-stats warning (the 7 v6 exports, whose NEFFs have no `hlo_stats.json`).
pub const MSG_MISSING_HLO_STATS: &str = "Missing HLO stats in the NEFF, `model_flops` and `mfu_hlo_estimated_percent` summary metrics will not be available. Consider the metrics (hardware_flops - transpose_flops) and mfu_inst_estimated_percent instead.";
/// `Warning.category` of the three messages above.
pub const CATEGORY_MISSING_DATA: &str = Code::MissingData.as_str();

/// Minimum spacing of two `DmaUsage` samples, ps: a change point is written when it lies at
/// least this far after the last written one (fitted: 11 477 / 11 477 v6 rows).
pub const DMA_USAGE_MIN_GAP_PS: i128 = 10_000;

/// Export display names of the NTFF device-memory categories (ntff.md §3.3.3).
pub const MEM_DISPLAY_NAMES: [(&str, &str); 22] = [
    ("generic", "Generic"),
    ("pe", "Tensor Instructions"),
    ("act", "Scalar Instructions"),
    ("pool", "GpSimd Instructions"),
    ("io", "IO"),
    ("spill", "DRAM Spill"),
    ("weight", "Weights"),
    ("profiler buffers", "Profiler Buffers"),
    ("act table", "Scalar Table"),
    ("dve", "Vector Instructions"),
    ("sp", "Sync Instructions"),
    ("shared scratchpad", "Shared Scratchpad"),
    ("tensor", "Tensors"),
    ("ucode", "Ucode lib"),
    ("pool stdio", "GpSimd STDIO"),
    ("collectives", "Collectives"),
    ("scratchpad", "Scratchpad"),
    ("xt cc", "XT CC (unused)"),
    ("dma rings runtime", "DMA Rings Runtime"),
    ("dma rings spill", "DMA Rings Spill"),
    ("dma rings io", "DMA Rings IO"),
    ("dma rings collectives", "DMA Rings Collectives"),
];

/// The export's name for an NTFF memory category (unknown ones unchanged).
pub fn mem_display_name(ntff: &str) -> &str {
    MEM_DISPLAY_NAMES
        .iter()
        .find(|(n, _)| *n == ntff)
        .map_or(ntff, |(_, d)| d)
}

/// What the NEFF says that the Explorer warnings depend on.
#[derive(Debug, Clone, Copy, Default)]
pub struct NeffFacts {
    /// A `hlo_stats.json` member exists (KevGomes NEFFs: yes; allenkchau: no).
    pub has_hlo_stats: bool,
    /// A member whose name contains `metric` exists (none in the samples: which file Explorer
    /// looks for is unknown [INF]).
    pub has_compiler_metrics: bool,
}

impl NeffFacts {
    /// Reads the member list of an opened NEFF.
    pub fn of(neff: &crate::neff::Neff) -> Self {
        let base = |n: &str| n.rsplit('/').next().unwrap_or(n).to_ascii_lowercase();
        NeffFacts {
            has_hlo_stats: neff
                .members
                .iter()
                .any(|m| base(&m.name) == "hlo_stats.json"),
            has_compiler_metrics: neff
                .members
                .iter()
                .any(|m| base(&m.name).contains("metric")),
        }
    }
}

/// One DMA packet as the throughput series needs it, 24 bytes: sizes are 24-bit (w0[23:0],
/// ntff.md §4.4) and the engine field 7-bit, so both share one word.
#[derive(Debug, Clone, Copy)]
struct Packet {
    raw_s: i64,
    raw_e: i64,
    /// engine field << 24 | bytes.
    field_bytes: u32,
    rate: f32,
}

impl Packet {
    fn field(&self) -> u8 {
        (self.field_bytes >> 24) as u8
    }
    fn bytes(&self) -> u32 {
        self.field_bytes & 0xFF_FFFF
    }
}

/// State gathered from the `Instruction` and `DmaPacket` batches of one device profile.
#[derive(Debug, Default)]
pub struct Derived {
    /// (pcore, engine) → busy intervals (raw ticks), merged online.
    busy: BTreeMap<(i64, usize), Union>,
    /// (pcore) → (raw start, engine) of every DMA_DIRECT2D.
    triggers: BTreeMap<i64, Vec<(i64, usize)>>,
    packets: BTreeMap<i64, Vec<Packet>>,
}

fn col_str<'b>(b: &'b RecordBatch, name: &str) -> Option<StrCol<'b>> {
    StrCol::by_name(b, name)
}

fn engine_index(name: &str) -> Option<usize> {
    Engine::ALL
        .iter()
        .find(|e| e.explorer_name() == name)
        .map(|e| e.ntff_index())
}

impl Derived {
    /// Takes what the rules need from one `Instruction` batch (columns `engine`, `opcode`,
    /// `pcore_idx`, `nscope_raw_start_ticks`, `nscope_raw_end_ticks`).
    pub fn add_instructions(&mut self, b: &RecordBatch) {
        let (Some(eng), Some(op)) = (col_str(b, "engine"), col_str(b, "opcode")) else {
            return;
        };
        let (rs, re, pc) = (
            IntCol::of(b, "nscope_raw_start_ticks"),
            IntCol::of(b, "nscope_raw_end_ticks"),
            IntCol::of(b, "pcore_idx"),
        );
        for i in 0..b.num_rows().min(eng.len()).min(op.len()) {
            let (Some(s), Some(e)) = (rs.get(i), re.get(i)) else {
                continue;
            };
            let Some(en) = eng.get(i).and_then(engine_index) else {
                continue;
            };
            let pcore = pc.get(i).unwrap_or(0);
            let opcode = op.get(i);
            match opcode {
                // Semaphore waits are not busy time (schema: "semaphore waits excluded").
                Some("EVENT_SEMAPHORE") => {}
                Some("DMA_DIRECT2D") => {
                    self.triggers.entry(pcore).or_default().push((s, en));
                    self.busy.entry((pcore, en)).or_default().push(s, e);
                }
                _ => self.busy.entry((pcore, en)).or_default().push(s, e),
            }
        }
    }

    /// Takes what the rules need from one `DmaPacket` batch.
    pub fn add_dma(&mut self, b: &RecordBatch) {
        let rate = b
            .column_by_name("throughput")
            .and_then(|c| c.as_any().downcast_ref::<Float32Array>());
        let (rs, re, fi, pc, by) = (
            IntCol::of(b, "nscope_raw_start_ticks"),
            IntCol::of(b, "nscope_raw_end_ticks"),
            IntCol::of(b, "nscope_dma_engine_field"),
            IntCol::of(b, "pcore_idx"),
            IntCol::of(b, "transfer_bytes"),
        );
        for i in 0..b.num_rows() {
            let (Some(s), Some(e), Some(field)) = (rs.get(i), re.get(i), fi.get(i)) else {
                continue;
            };
            let pcore = pc.get(i).unwrap_or(0);
            let bytes = by.get(i).unwrap_or(0);
            let r = rate
                .filter(|a| i < a.len() && !a.is_null(i))
                .map_or(0.0, |a| a.value(i));
            self.packets.entry(pcore).or_default().push(Packet {
                raw_s: s,
                raw_e: e,
                field_bytes: (u32::try_from(field).unwrap_or(0xFF).min(0xFF) << 24)
                    | u32::try_from(bytes).unwrap_or(0xFF_FFFF).min(0xFF_FFFF),
                rate: r,
            });
        }
    }
}

/// Forwards every batch to `inner` and feeds `Instruction`/`DmaPacket` batches to
/// [`Derived`].
pub struct DerivedCollector<'a> {
    /// Where the batches go.
    pub inner: &'a mut dyn TableSink,
    /// What was gathered.
    pub state: Derived,
}

impl TableSink for DerivedCollector<'_> {
    fn batch(&mut self, def: &'static TableDef, batch: RecordBatch) -> Result<()> {
        match def.name {
            "Instruction" => self.state.add_instructions(&batch),
            "DmaPacket" => self.state.add_dma(&batch),
            _ => {}
        }
        self.inner.batch(def, batch)
    }
}

/// Rows written per derived table.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct DerivedCounts {
    /// `ActiveTime` rows.
    pub active_time: u64,
    /// `PendingDma` rows.
    pub pending_dma: u64,
    /// `DmaUsage` rows.
    pub dma_usage: u64,
    /// `HbmUsageSummaryByType` rows.
    pub hbm_usage_by_type: u64,
}

/// ⌊fs / 10⁶⌋ as ns, clamped to i64.
fn ns(fs: i128) -> i64 {
    fs.div_euclid(1_000_000)
        .clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// Writes `ActiveTime`, `PendingDma`, `DmaUsage` and `HbmUsageSummaryByType` for a decoded
/// device profile. Times are ns from the report's origin, computed from exact calibrated
/// femtoseconds like the decoder's own columns.
pub fn write_tables(
    d: Derived,
    report: &DecodeReport,
    sink: &mut dyn TableSink,
) -> Result<DerivedCounts> {
    let t0 = report.origin_fs;
    let subgraphs = &report.info.subgraphs;
    let cal = |pcore: i64| {
        usize::try_from(pcore)
            .ok()
            .and_then(|p| subgraphs.get(p))
            .map(|s| &s.calibration)
    };
    let fs_engine = |pcore: i64, engine: usize, raw: i64| -> i128 {
        let c = cal(pcore)
            .and_then(|c| c.engines.get(engine).copied())
            .unwrap_or_default();
        c.fs(u64::try_from(raw).unwrap_or(0))
    };
    let mut counts = DerivedCounts::default();

    // ActiveTime: union per (pcore, engine); start/end floored on their own, duration from the
    // exact difference (v6 1 621 / 1 621 rows).
    let def = &explorer::ACTIVE_TIME;
    let mut em = Emitter::new(def, sink);
    let c = |n| def.col(n);
    let (cs, ce, cen, cp, cd) = (
        c("start_ts"),
        c("end_ts"),
        c("engine"),
        c("pcore_idx"),
        c("duration_ns"),
    );
    for ((pcore, engine), mut busy) in d.busy {
        let name = Engine::from_ntff(engine as u32).map_or("unknown", Engine::explorer_name);
        for &(s, e) in busy.intervals() {
            // Whole calibrated ps first, as for DmaPacket (inf2: 9 more rows exact).
            let ps = |fs: i128| fs.div_euclid(1000) * 1000;
            let (sf, ef) = (
                ps(fs_engine(pcore, engine, s)),
                ps(fs_engine(pcore, engine, e)),
            );
            let t0 = ps(t0);
            em.b.i64(cs, Some(ns(sf - t0)));
            em.b.i64(ce, Some(ns(ef - t0)));
            em.b.str(cen, Some(name));
            em.b.i64(cp, Some(pcore));
            em.b.i64(cd, Some(ns(ef - sf)));
            em.end_row()?;
        }
    }
    counts.active_time = em.finish()?;

    // PendingDma: +1 at every DMA_DIRECT2D start. Completions are known only for aggregated
    // static transfers, which we do not rebuild (docs/formats.md).
    let def = &explorer::PENDING_DMA;
    let mut em = Emitter::new(def, sink);
    let (ct, cv, cp) = (def.col("timestamp"), def.col("value"), def.col("pcore_idx"));
    for (pcore, trig) in d.triggers {
        let mut t: Vec<i128> = trig
            .iter()
            .map(|&(raw, e)| fs_engine(pcore, e, raw))
            .collect();
        t.sort_unstable();
        for (i, fs) in t.into_iter().enumerate() {
            em.b.i64(ct, Some(ns(fs - t0)));
            em.b.i64(cv, Some(i as i64 + 1));
            em.b.i64(cp, Some(pcore));
            em.end_row()?;
        }
    }
    counts.pending_dma = em.finish()?;

    // DmaUsage: change points of (cumulative bytes counted at packet start, summed rate of the
    // packets in flight), in whole calibrated ps like DmaPacket, sampled every ≥ 10 ns.
    let def = &explorer::DMA_USAGE;
    let mut em = Emitter::new(def, sink);
    let (ct, cr, cb, cp) = (
        def.col("timestamp"),
        def.col("current_throughput"),
        def.col("total_transfer_bytes"),
        def.col("pcore_idx"),
    );
    let t0_ps = t0.div_euclid(1000);
    for (pcore, packets) in d.packets {
        let dma_ps = |field: u8, raw: i64| -> i128 {
            let c = cal(pcore)
                .and_then(|c| c.dma.get(usize::from(field)).copied())
                .unwrap_or_default();
            c.fs(u64::try_from(raw).unwrap_or(0)).div_euclid(1000) - t0_ps
        };
        // Packets in whole ps from t0, sorted by start (24 B each while this core is written);
        // a heap of the ends in flight replaces a second, time-sorted event list.
        // `into_iter().map().collect()` between same-sized types reuses the allocation in
        // place, so the packets are not held twice at the peak.
        let mut pk: Vec<(i64, i64, u32, f32)> = packets
            .into_iter()
            .map(|p| {
                let c = |x: i128| x.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
                (
                    c(dma_ps(p.field(), p.raw_s)),
                    c(dma_ps(p.field(), p.raw_e)),
                    p.bytes(),
                    p.rate,
                )
            })
            .collect();
        pk.sort_by_key(|p| p.0);
        let mut ends: BinaryHeap<(Reverse<i64>, u32)> = BinaryHeap::new();
        let (mut total, mut rate) = (0u64, 0f64);
        let mut last: Option<i64> = None;
        let mut next = 0usize;
        loop {
            let t = match (pk.get(next), ends.peek()) {
                (Some(p), Some((Reverse(e), _))) => p.0.min(*e),
                (Some(p), None) => p.0,
                (None, Some((Reverse(e), _))) => *e,
                (None, None) => break,
            };
            while let Some(p) = pk.get(next).filter(|p| p.0 == t) {
                total = total.saturating_add(u64::from(p.2));
                rate += f64::from(p.3);
                ends.push((Reverse(p.1.max(p.0)), p.3.to_bits()));
                next += 1;
            }
            while let Some(&(Reverse(e), r)) = ends.peek() {
                if e != t {
                    break;
                }
                rate -= f64::from(f32::from_bits(r));
                ends.pop();
            }
            if last.is_none_or(|l| i128::from(t) - i128::from(l) >= DMA_USAGE_MIN_GAP_PS) {
                last = Some(t);
                em.b.i64(ct, Some(t.div_euclid(1000)));
                // Sums of float32 rates drift below zero by rounding when all packets end.
                em.b.f64(cr, Some(if rate.abs() < 1.0 { 0.0 } else { rate }));
                em.b.i64(cb, Some(i64::try_from(total).unwrap_or(i64::MAX)));
                em.b.i64(cp, Some(pcore));
                em.end_row()?;
            }
        }
    }
    counts.dma_usage = em.finish()?;

    // HbmUsageSummaryByType: the 22 categories in NTFF order plus a Total row (nc_mem_usage).
    let def = &explorer::HBM_USAGE_SUMMARY_BY_TYPE;
    let mut em = Emitter::new(def, sink);
    let (cd, cn, cu, cb) = (
        def.col("neuron_device_idx"),
        def.col("neuroncore_idx"),
        def.col("usage_type"),
        def.col("usage_bytes"),
    );
    for sg in subgraphs {
        if sg.mem_usage.is_empty() {
            continue;
        }
        let mut total = 0u64;
        let rows = sg
            .mem_usage
            .iter()
            .map(|(n, b)| (mem_display_name(n), *b))
            .chain(std::iter::once(("Total", u64::MAX)));
        for (name, bytes) in rows {
            let bytes = if bytes == u64::MAX && name == "Total" {
                total
            } else {
                total = total.saturating_add(bytes);
                bytes
            };
            // The NTFF has no device index; every export says 0 (single-device captures).
            em.b.i64(cd, Some(0));
            em.b.i64(cn, Some(i64::from(sg.core)));
            em.b.str(cu, Some(name));
            em.b.i64(cb, Some(i64::try_from(bytes).unwrap_or(i64::MAX)));
            em.end_row()?;
        }
    }
    counts.hbm_usage_by_type = em.finish()?;
    Ok(counts)
}

/// Explorer's `Missing Data` warnings that hold for this profile, as problems (the profile's
/// finish step writes them to `Warning` with category `Missing Data`, message verbatim).
/// `neff`: `None` when no NEFF was paired (then only the NTFF-based warning can be decided).
pub fn explorer_warnings(
    report: &DecodeReport,
    neff: Option<NeffFacts>,
    file: &str,
) -> Vec<Problem> {
    let mut out = Vec::new();
    let warn = |m: &str| Problem::new(Code::MissingData, Some(file), m.to_string());
    if report.cores.iter().all(|c| c.dge_notifications == 0) {
        out.push(warn(MSG_MISSING_DGE));
    }
    if let Some(n) = neff {
        if !n.has_compiler_metrics {
            out.push(warn(MSG_MISSING_COMPILER_METRICS));
        }
        if !n.has_hlo_stats {
            out.push(warn(MSG_MISSING_HLO_STATS));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_compaction_is_a_union() {
        let mut b = Union::default();
        for i in 0..10_000i64 {
            // Overlapping pairs and a few disjoint gaps, pushed out of order.
            let s = (i * 7919) % 10_000 * 10;
            b.push(s, s + 15);
        }
        assert_eq!(b.intervals(), &[(0, 100_005)]);
        let mut b = Union::default();
        b.push(30, 40);
        b.push(0, 10);
        b.push(10, 20);
        assert_eq!(b.intervals(), &[(0, 20), (30, 40)]);
    }

    #[test]
    fn per_row_state_sizes() {
        // The costs docs/formats.md "Derived tables" states.
        assert_eq!(std::mem::size_of::<Packet>(), 24);
        assert_eq!(std::mem::size_of::<(i64, i64)>(), 16);
        let p = Packet {
            raw_s: 1,
            raw_e: 2,
            field_bytes: (21 << 24) | 0xFF_FFFF,
            rate: 0.0,
        };
        assert_eq!((p.field(), p.bytes()), (21, 0xFF_FFFF));
    }

    #[test]
    fn memory_names() {
        assert_eq!(mem_display_name("act table"), "Scalar Table");
        assert_eq!(mem_display_name("new thing"), "new thing");
    }
}
