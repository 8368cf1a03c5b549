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
//! Memory: [`DerivedCollector`] keeps, per row seen, only what the rules need — one packed
//! busy component per future `ActiveTime` row ([`NearSorted`], ≈ 4–6 B: instructions of one
//! engine of one core arrive in near start order) and one packed raw start per DMA_DIRECT2D
//! ([`PackedSeq`], 1–3 B), merged per core at write time from the engines' sorted streams. `DmaUsage` is not built from the `DmaPacket`
//! batches: the NTFF decoder re-reads each core's DMA buffer in time order (a k-way merge of its
//! sorted runs, `crate::ntff::dma`) and feeds [`DmaUsageSeries`] online, whose state is the
//! packets in flight (docs/formats.md "Derived tables" → "Memory").

use std::cmp::Reverse;
use std::collections::binary_heap::PeekMut;
use std::collections::{BTreeMap, BinaryHeap};

use arrow_array::RecordBatch;

use crate::engine::Engine;
use crate::error::{Code, Problem, Result};
use crate::ntff::dma::{ps_floor, ps_to_fs};
use crate::ntff::DecodeReport;
use crate::summary::{IntCol, NearSorted, PackedSeq};
use crate::tables::{explorer, StrCol, TableBuilder, TableDef, TableSink};

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

/// State gathered from the `Instruction` and `DmaPacket` batches of one device profile.
#[derive(Debug, Default)]
pub struct Derived {
    /// (pcore, engine) → busy intervals (raw ticks), merged online and packed.
    busy: BTreeMap<(i64, usize), NearSorted>,
    /// (pcore, engine) → raw starts of its DMA_DIRECT2D instructions, in row order, packed.
    triggers: BTreeMap<(i64, usize), PackedSeq>,
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
                    self.triggers.entry((pcore, en)).or_default().push(s);
                    self.busy.entry((pcore, en)).or_default().push(s, e);
                }
                _ => self.busy.entry((pcore, en)).or_default().push(s, e),
            }
        }
    }
}

impl Derived {
    /// Bytes of heap held by the packed busy components and DMA_DIRECT2D starts (for the
    /// memory figures in docs/formats.md).
    pub fn heap_bytes(&self) -> usize {
        self.busy
            .values()
            .map(NearSorted::heap_bytes)
            .sum::<usize>()
            + self
                .triggers
                .values()
                .map(PackedSeq::heap_bytes)
                .sum::<usize>()
    }
    /// Bytes of the same on disk ([`crate::store::Spill`]).
    pub fn spilled_bytes(&self) -> usize {
        self.busy
            .values()
            .map(NearSorted::spilled_bytes)
            .sum::<usize>()
            + self
                .triggers
                .values()
                .map(PackedSeq::spilled_bytes)
                .sum::<usize>()
    }
}

/// Forwards every batch to `inner` and feeds `Instruction` batches to [`Derived`].
pub struct DerivedCollector<'a> {
    /// Where the batches go.
    pub inner: &'a mut dyn TableSink,
    /// What was gathered.
    pub state: Derived,
}

impl TableSink for DerivedCollector<'_> {
    fn batch(&mut self, def: &'static TableDef, batch: RecordBatch) -> Result<()> {
        if def.name == "Instruction" {
            self.state.add_instructions(&batch);
        }
        self.inner.batch(def, batch)
    }
}

/// `DmaUsage` of one core computed online (rule: docs/formats.md "Derived tables" →
/// DmaUsage): packets must arrive sorted by start (whole calibrated ps from t0), packets with
/// equal starts in `DmaPacket` row order. Each event time `t` applies the starts at `t`
/// (cumulative bytes, + rate) and then the ends at `t` (− rate); a row is written for the first
/// time and then for the first time at least [`DMA_USAGE_MIN_GAP_PS`] after the last row.
///
/// State: the packets starting at the current time and a heap of the packets in flight (12 B
/// each); nothing proportional to the packet count. Rows go to `sink` in batches.
pub struct DmaUsageSeries {
    pcore: i64,
    b: TableBuilder,
    /// Start (ps) of the packets in `group`.
    group_t: i64,
    /// (end ps, bytes, rate) of the packets starting at `group_t`, not yet applied.
    group: Vec<(i64, u32, f32)>,
    /// (end ps, rate bits) of the packets in flight.
    ends: BinaryHeap<(Reverse<i64>, u32)>,
    total: u64,
    rate: f64,
    last: Option<i64>,
    rows: u64,
    peak: usize,
}

// Typed column ids of `DmaUsage`.
crate::cols!(mod at = crate::tables::explorer::ACTIVE_TIME {
    START: I64 = "start_ts",
    END: I64 = "end_ts",
    ENGINE: Str = "engine",
    PCORE: I64 = "pcore_idx",
    DUR: I64 = "duration_ns",
});
crate::cols!(mod pd = crate::tables::explorer::PENDING_DMA {
    TS: I64 = "timestamp",
    VALUE: I32 = "value",
    PCORE: I64 = "pcore_idx",
});
crate::cols!(mod hbm = crate::tables::explorer::HBM_USAGE_SUMMARY_BY_TYPE {
    DEVICE: I64 = "neuron_device_idx",
    CORE: I64 = "neuroncore_idx",
    TYPE: Str = "usage_type",
    BYTES: I64 = "usage_bytes",
});
crate::cols!(mod du = crate::tables::explorer::DMA_USAGE {
    TS: I64 = "timestamp",
    RATE: F32 = "current_throughput",
    TOTAL: I64 = "total_transfer_bytes",
    PCORE: I64 = "pcore_idx",
});

impl DmaUsageSeries {
    /// An empty series for physical core `pcore`.
    pub fn new(pcore: i64) -> Self {
        DmaUsageSeries {
            pcore,
            b: TableBuilder::new(&explorer::DMA_USAGE),
            group_t: 0,
            group: Vec::new(),
            ends: BinaryHeap::new(),
            total: 0,
            rate: 0.0,
            last: None,
            rows: 0,
            peak: 0,
        }
    }

    /// Adds one packet: `start_ps`, `end_ps` whole calibrated ps from t0, `bytes` (24-bit
    /// field), `rate` its `DmaPacket.throughput` (B/s; 0 when null). A start earlier than the
    /// previous one is applied at the previous time (never happens for the decoder's order).
    pub fn push(
        &mut self,
        start_ps: i64,
        end_ps: i64,
        bytes: u32,
        rate: f32,
        sink: &mut dyn TableSink,
    ) -> Result<()> {
        if !self.group.is_empty() && start_ps > self.group_t {
            self.advance(Some(start_ps), sink)?;
        }
        if self.group.is_empty() {
            self.group_t = start_ps;
        }
        self.group.push((end_ps, bytes, rate));
        self.peak = self.peak.max(self.group.len() + self.ends.len());
        Ok(())
    }

    /// Applies every event before `limit` (all of them for `None`).
    fn advance(&mut self, limit: Option<i64>, sink: &mut dyn TableSink) -> Result<()> {
        loop {
            let g = (!self.group.is_empty()).then_some(self.group_t);
            let e = self.ends.peek().map(|(Reverse(e), _)| *e);
            let t = match (g, e) {
                (Some(g), Some(e)) => g.min(e),
                (Some(t), None) | (None, Some(t)) => t,
                (None, None) => break,
            };
            if limit.is_some_and(|l| t >= l) {
                break;
            }
            if g == Some(t) {
                for (end, bytes, r) in self.group.drain(..) {
                    self.total = self.total.saturating_add(u64::from(bytes));
                    self.rate += f64::from(r);
                    self.ends.push((Reverse(end.max(t)), r.to_bits()));
                }
            }
            while let Some(&(Reverse(e), r)) = self.ends.peek() {
                if e != t {
                    break;
                }
                self.rate -= f64::from(f32::from_bits(r));
                self.ends.pop();
            }
            if self
                .last
                .is_none_or(|l| i128::from(t) - i128::from(l) >= DMA_USAGE_MIN_GAP_PS)
            {
                self.last = Some(t);
                let b = &mut self.b;
                b.set(du::TS, t.div_euclid(1000));
                // Sums of float32 rates drift below zero by rounding when all packets end.
                let rate = if self.rate.abs() < 1.0 {
                    0.0
                } else {
                    self.rate
                };
                b.set(du::RATE, rate as f32);
                b.set(du::TOTAL, i64::try_from(self.total).unwrap_or(i64::MAX));
                b.set(du::PCORE, self.pcore);
                self.rows += 1;
                b.end_row_into(sink)?;
            }
        }
        Ok(())
    }

    /// Applies the remaining events and writes the last batch; returns (rows written, largest
    /// number of packets held at once).
    pub fn finish(mut self, sink: &mut dyn TableSink) -> Result<(u64, usize)> {
        self.advance(None, sink)?;
        self.b.finish_into(sink)?;
        Ok((self.rows, self.peak))
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

/// Calibrated fs of the raw times in `q` (engine `e` of core `pcore`), in push order.
fn engine_times<'a>(
    q: &'a PackedSeq,
    e: usize,
    pcore: i64,
    fs: &'a impl Fn(i64, usize, i64) -> i128,
) -> impl Iterator<Item = i128> + 'a {
    q.iter().map(move |raw| fs(pcore, e, raw))
}

/// ⌊fs / 10⁶⌋ as ns, clamped to i64.
fn ns(fs: i128) -> i64 {
    // i64 when it fits: a 128-bit division is a libcall (≈ 2 % of the instruction-dense decode).
    if let Ok(v) = i64::try_from(fs) {
        return v.div_euclid(1_000_000);
    }
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
    let _ = crate::store::take_spill_error();
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
    let mut b = TableBuilder::new(&explorer::ACTIVE_TIME);
    for ((pcore, engine), mut busy) in d.busy {
        let name = Engine::from_ntff(engine as u32).map_or("unknown", Engine::explorer_name);
        busy.compact();
        for (s, e) in busy.iter() {
            // Whole calibrated ps first, as for DmaPacket (inf2: 9 more rows exact).
            let ps = |fs: i128| ps_to_fs(ps_floor(fs));
            let (sf, ef) = (
                ps(fs_engine(pcore, engine, s)),
                ps(fs_engine(pcore, engine, e)),
            );
            let t0 = ps(t0);
            b.set(at::START, ns(sf - t0));
            b.set(at::END, ns(ef - t0));
            b.set(at::ENGINE, name);
            b.set(at::PCORE, pcore);
            b.set(at::DUR, ns(ef - sf));
            b.end_row_into(sink)?;
        }
    }
    counts.active_time = b.finish_into(sink)?;

    // PendingDma: +1 at every DMA_DIRECT2D start. Completions are known only for aggregated
    // static transfers, which we do not rebuild (docs/formats.md).
    let mut b = TableBuilder::new(&explorer::PENDING_DMA);
    let triggers = &d.triggers;
    let mut pcores: Vec<i64> = d.triggers.keys().map(|k| k.0).collect();
    pcores.dedup();
    for pcore in pcores {
        let streams: Vec<(usize, &PackedSeq)> = triggers
            .range((pcore, 0)..=(pcore, usize::MAX))
            .map(|(&(_, e), q)| (e, q))
            .collect();
        let fs = &fs_engine;
        // Each engine's starts arrive in start order, so the core's sorted times are a k-way
        // merge of its engines' streams; a stream out of order falls back to one sort.
        let sorted = streams.iter().all(|&(e, q)| {
            engine_times(q, e, pcore, fs)
                .zip(engine_times(q, e, pcore, fs).skip(1))
                .all(|(a, z)| a <= z)
        });
        let mut i = 0i64;
        let mut row = |fs: i128, b: &mut TableBuilder| -> Result<()> {
            i += 1;
            b.set(pd::TS, ns(fs - t0));
            b.set(pd::VALUE, crate::util::i32_cell(Some(i)));
            b.set(pd::PCORE, pcore);
            b.end_row_into(sink)
        };
        if sorted {
            let mut its: Vec<_> = streams
                .iter()
                .map(|&(e, q)| engine_times(q, e, pcore, fs))
                .collect();
            let mut heap: BinaryHeap<Reverse<(i128, usize)>> = its
                .iter_mut()
                .enumerate()
                .filter_map(|(k, it)| it.next().map(|t| Reverse((t, k))))
                .collect();
            while let Some(mut top) = heap.peek_mut() {
                // Replace the head in place (one sift instead of a pop and a push).
                let Reverse((fs, k)) = *top;
                match its.get_mut(k).and_then(Iterator::next) {
                    Some(t) => *top = Reverse((t, k)),
                    None => drop(PeekMut::pop(top)),
                }
                row(fs, &mut b)?;
            }
        } else {
            let mut t: Vec<i128> = streams
                .iter()
                .flat_map(|&(e, q)| engine_times(q, e, pcore, fs))
                .collect();
            t.sort_unstable();
            for fs in t {
                row(fs, &mut b)?;
            }
        }
    }
    counts.pending_dma = b.finish_into(sink)?;

    // DmaUsage was written during the decode, core by core (`DmaUsageSeries`, fed by the
    // time-ordered re-read of the DMA buffers in `crate::ntff::dma`).
    counts.dma_usage = report.cores.iter().map(|c| c.dma.times.usage_rows).sum();

    // HbmUsageSummaryByType: the 22 categories in NTFF order plus a Total row (nc_mem_usage).
    let mut b = TableBuilder::new(&explorer::HBM_USAGE_SUMMARY_BY_TYPE);
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
            b.set(hbm::DEVICE, 0i64);
            b.set(hbm::CORE, i64::from(sg.core));
            b.set(hbm::TYPE, name);
            b.set(hbm::BYTES, i64::try_from(bytes).unwrap_or(i64::MAX));
            b.end_row_into(sink)?;
        }
    }
    counts.hbm_usage_by_type = b.finish_into(sink)?;
    // Busy lists read back from a failing spill are short: say so rather than pass them for exact.
    match crate::store::take_spill_error() {
        Some(e) => Err(crate::error::Error::Io(format!(
            "ActiveTime/PendingDma: {e}"
        ))),
        None => Ok(counts),
    }
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
        let mut b = crate::summary::Union::default();
        for i in 0..10_000i64 {
            // Overlapping pairs and a few disjoint gaps, pushed out of order.
            let s = (i * 7919) % 10_000 * 10;
            b.push(s, s + 15);
        }
        assert_eq!(b.intervals(), &[(0, 100_005)]);
        let mut b = crate::summary::Union::default();
        b.push(30, 40);
        b.push(0, 10);
        b.push(10, 20);
        assert_eq!(b.intervals(), &[(0, 20), (30, 40)]);
    }

    #[test]
    fn memory_names() {
        assert_eq!(mem_display_name("act table"), "Scalar Table");
        assert_eq!(mem_display_name("new thing"), "new thing");
    }
}
