//! Explorer's `Summary` and `OpcodeSummary` from decoded tables (explorer-schema.md §5.5).
//!
//! Input: the in-memory [`Tables`] of one device profile (`Instruction`, `DmaPacket`) plus the
//! NTFF [`DecodeReport`] (total time, event and trace counts, clock). Only the fields these
//! tables determine are written; the rest stay null. Compared with the JSON exports' `summary`
//! in `crate/tests/ntff_dma_golden.rs` (`summary_against_exports`).
//!
//! Conventions observed in the exports (docs/formats.md "Summary"): times in seconds as float32;
//! `*_percent` fields are **fractions** of `total_time` (0.456, not 45.6); instruction and packet
//! times are sums of raw-picosecond durations when the clock is raw ps (trn2), else of durations
//! in whole calibrated ps (each raw time calibrated and floored on its own; inf2); "static" DMA = every packet not on a dynamic queue (includes `instruction`).

use std::collections::BTreeMap;

use arrow_array::{Array, Int32Array, Int64Array, RecordBatch, StringArray};

use crate::engine::Engine;
use crate::error::Result;
use crate::ntff::{Calibration, ClockCal, DecodeReport};
use crate::tables::{explorer, TableBuilder, TableSink, Tables};

/// Engines in the order and with the names of the `Summary` field prefixes.
pub const ENGINES: [(&str, &str); 5] = [
    ("tensor", "tensor_engine"),
    ("scalar", "scalar_engine"),
    ("gpsimd", "gpsimd_engine"),
    ("vector", "vector_engine"),
    ("sync", "sync_engine"),
];

/// Intervals `[start, end)` in ps with count and summed length.
#[derive(Debug, Clone, Default)]
pub struct Spans {
    /// (start, end) in ps.
    pub iv: Vec<(i64, i64)>,
}

impl Spans {
    fn push(&mut self, s: i64, e: i64) {
        self.iv.push((s, e.max(s)));
    }
    /// Number of intervals.
    pub fn count(&self) -> u64 {
        self.iv.len() as u64
    }
    /// Σ (end − start), ps (overlaps added).
    pub fn total(&self) -> i64 {
        self.iv.iter().map(|(s, e)| e - s).sum()
    }
    /// Length of the union, ps (overlaps merged).
    pub fn union(&self) -> i64 {
        let mut v = self.iv.clone();
        v.sort_unstable();
        let mut sum = 0i64;
        let mut cur: Option<(i64, i64)> = None;
        for (s, e) in v {
            match cur {
                Some((cs, ce)) if s <= ce => cur = Some((cs, ce.max(e))),
                Some((cs, ce)) => {
                    sum += ce - cs;
                    cur = Some((s, e));
                }
                None => cur = Some((s, e)),
            }
        }
        if let Some((cs, ce)) = cur {
            sum += ce - cs;
        }
        sum
    }
}

fn i64s(b: &RecordBatch, name: &str) -> Vec<Option<i64>> {
    match b
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<Int64Array>())
    {
        Some(a) => (0..a.len())
            .map(|i| (!a.is_null(i)).then(|| a.value(i)))
            .collect(),
        None => vec![None; b.num_rows()],
    }
}

fn i32s(b: &RecordBatch, name: &str) -> Vec<Option<i32>> {
    match b
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<Int32Array>())
    {
        Some(a) => (0..a.len())
            .map(|i| (!a.is_null(i)).then(|| a.value(i)))
            .collect(),
        None => vec![None; b.num_rows()],
    }
}

fn strs(b: &RecordBatch, name: &str) -> Vec<Option<String>> {
    match b
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<StringArray>())
    {
        Some(a) => (0..a.len())
            .map(|i| (!a.is_null(i)).then(|| a.value(i).to_string()))
            .collect(),
        None => vec![None; b.num_rows()],
    }
}

/// Interval of row `i` in ps: raw ticks when `raw_ps` (trn2, identity calibration), else the raw
/// ticks calibrated with `cal` and floored to whole ps each (the inf2 exports' times: 9/9,
/// docs/formats.md "Summary"), else the ns columns × 1000.
fn span_of(
    i: usize,
    raw: (&[Option<i64>], &[Option<i64>]),
    ns: (&[Option<i64>], &[Option<i64>]),
    raw_ps: bool,
    cal: Option<ClockCal>,
) -> Option<(i64, i64)> {
    if let (Some(Some(s)), Some(Some(e))) = (raw.0.get(i), raw.1.get(i)) {
        if raw_ps {
            return Some((*s, *e));
        }
        if let (Some(c), Ok(s), Ok(e)) = (cal, u64::try_from(*s), u64::try_from(*e)) {
            let ps = |fs: i128| fs.div_euclid(1000).clamp(i64::MIN.into(), i64::MAX.into()) as i64;
            return Some((ps(c.fs(s)), ps(c.fs(e))));
        }
    }
    match (ns.0.get(i), ns.1.get(i)) {
        (Some(Some(s)), Some(Some(e))) => Some((s.saturating_mul(1000), e.saturating_mul(1000))),
        _ => None,
    }
}

/// Everything `Summary`/`OpcodeSummary` need, gathered from the tables.
#[derive(Debug, Clone, Default)]
pub struct Gathered {
    /// Per engine name (`tensor` …), without EVENT_SEMAPHORE (semaphore waits).
    pub engines: BTreeMap<String, Spans>,
    /// Per (engine, opcode).
    pub opcodes: BTreeMap<(String, String), Spans>,
    /// All DMA packets.
    pub dma: Spans,
    /// DMA packets and bytes per `queue_type`.
    pub dma_by_type: BTreeMap<String, (Spans, i64)>,
}

/// Calibration of a row's raw ticks: core `pcore` of `cals` (NTFF subgraph order), then `pick`.
fn row_cal(
    cals: &[Calibration],
    pcore: Option<i64>,
    pick: impl Fn(&Calibration) -> Option<ClockCal>,
) -> Option<ClockCal> {
    usize::try_from(pcore?)
        .ok()
        .and_then(|p| cals.get(p))
        .and_then(pick)
}

/// Reads `Instruction` and `DmaPacket` from `t`. `raw_ps`: raw ticks are picoseconds; else
/// `cals` (per core, NTFF subgraph order) calibrates them.
pub fn gather(t: &Tables, raw_ps: bool, cals: &[Calibration]) -> Gathered {
    let mut g = Gathered::default();
    // Batch by batch: the per-row vectors below then cost one batch (≤ 64 Ki rows), not the
    // whole table (a 200 MB NTFF has ~6 M instructions).
    for b in t.get("Instruction").unwrap_or(&[]) {
        let (s, e) = (i64s(b, "start_ts"), i64s(b, "end_ts"));
        let (rs, re) = (
            i64s(b, "nscope_raw_start_ticks"),
            i64s(b, "nscope_raw_end_ticks"),
        );
        let eng = strs(b, "engine");
        let op = strs(b, "opcode");
        let pc = i64s(b, "pcore_idx");
        for i in 0..b.num_rows() {
            let cal = row_cal(cals, pc[i], |c| {
                let n = eng[i].as_deref()?;
                (0..5u32)
                    .filter_map(Engine::from_ntff)
                    .find(|x| x.explorer_name() == n)
                    .and_then(|x| c.engines.get(x.ntff_index()).copied())
            });
            let Some((a, z)) = span_of(i, (&rs, &re), (&s, &e), raw_ps, cal) else {
                continue;
            };
            let en = eng[i].clone().unwrap_or_default();
            // Engine busy time excludes semaphore waits = the EVENT_SEMAPHORE instructions
            // (v6 exports: instruction and active times 7/7 on raw-ps sums and unions).
            if op[i].as_deref() != Some("EVENT_SEMAPHORE") {
                g.engines.entry(en.clone()).or_default().push(a, z);
            }
            g.opcodes
                .entry((en, op[i].clone().unwrap_or_default()))
                .or_default()
                .push(a, z);
        }
    }
    for b in t.get("DmaPacket").unwrap_or(&[]) {
        let (s, e) = (i64s(b, "start_ts"), i64s(b, "end_ts"));
        let (rs, re) = (
            i64s(b, "nscope_raw_start_ticks"),
            i64s(b, "nscope_raw_end_ticks"),
        );
        let qt = strs(b, "queue_type");
        let by = i64s(b, "transfer_bytes");
        let (pc, fld) = (i64s(b, "pcore_idx"), i32s(b, "nscope_dma_engine_field"));
        for i in 0..b.num_rows() {
            let cal = row_cal(cals, pc[i], |c| {
                c.dma.get(usize::try_from(fld[i]?).ok()?).copied()
            });
            let Some((a, z)) = span_of(i, (&rs, &re), (&s, &e), raw_ps, cal) else {
                continue;
            };
            g.dma.push(a, z);
            let x = g
                .dma_by_type
                .entry(qt[i].clone().unwrap_or_default())
                .or_default();
            x.0.push(a, z);
            x.1 += by[i].unwrap_or(0);
        }
    }
    g
}

/// Writes one `Summary` row and the `OpcodeSummary` rows for a decoded device profile.
/// `raw_ps` as in [`gather`] (true when every calibration entry is the identity, i.e. trn2).
pub fn write_summary(
    t: &Tables,
    report: &DecodeReport,
    raw_ps: bool,
    sink: &mut dyn TableSink,
) -> Result<()> {
    let cals: Vec<Calibration> = report
        .info
        .subgraphs
        .iter()
        .map(|s| s.calibration.clone())
        .collect();
    let g = gather(t, raw_ps, &cals);
    let def = &explorer::SUMMARY;
    let mut b = TableBuilder::new(def);
    let c = |n: &str| def.col(n);
    let total_ps = report.total_time_ps.map(|p| p as i64);
    let secs = |ps: i64| Some(ps as f64 * 1e-12);
    let frac = |ps: i64| total_ps.filter(|t| *t > 0).map(|t| ps as f64 / t as f64);
    b.f64(c("total_time"), total_ps.and_then(secs));
    b.i64(
        c("neuroncore_cycle_count"),
        report.neuroncore_cycle_count.map(|x| x as i64),
    );
    b.i64(c("trace_count"), Some(report.trace_count as i64));
    b.i64(c("event_count"), Some(report.event_count as i64));
    for (name, prefix) in ENGINES {
        let sp = g.engines.get(name).cloned().unwrap_or_default();
        let act = sp.union();
        b.f64(c(&format!("{prefix}_instruction_time")), secs(sp.total()));
        b.f64(c(&format!("{prefix}_active_time")), secs(act));
        b.f64(c(&format!("{prefix}_active_time_percent")), frac(act));
        let n: u64 = g
            .opcodes
            .iter()
            .filter(|((e, _), _)| e == name)
            .map(|(_, s)| s.count())
            .sum();
        b.i64(c(&format!("{prefix}_instruction_count")), Some(n as i64));
    }
    let count_op = |op: &str| -> (u64, i64) {
        g.opcodes
            .iter()
            .filter(|((_, o), _)| o == op)
            .fold((0, 0), |a, (_, s)| (a.0 + s.count(), a.1 + s.total()))
    };
    b.i64(
        c("matmul_instruction_count"),
        Some(count_op("MATMUL").0 as i64),
    );
    let (an, at) = count_op("ACTIVATE");
    b.i64(c("activate_instruction_count"), Some(an as i64));
    b.f64(c("activate_instruction_time"), secs(at));
    // DMA.
    let all = g.dma.count();
    let all_bytes: i64 = g.dma_by_type.values().map(|x| x.1).sum();
    let dma_act = g.dma.union();
    b.f64(c("dma_packet_time"), secs(g.dma.total()));
    b.f64(c("dma_active_time"), secs(dma_act));
    b.f64(c("dma_active_time_percent"), frac(dma_act));
    // dma_active_time × NeuronCore clock (cycles = ps × GHz / 1000).
    b.i64(
        c("dma_active_cycles"),
        Some((dma_act as f64 * f64::from(report.neuroncore_clock_ghz) / 1000.0) as i64),
    );
    let pct = |n: f64, d: f64| (d > 0.0).then(|| n / d);
    // Per-kind DMA active percents are fractions of dma_active_time, not of total_time (7/7 v6).
    let dfrac = |ps: i64| pct(ps as f64, dma_act as f64);
    let mut static_spans = Spans::default();
    let (mut dyn_n, mut dyn_b) = (0u64, 0i64);
    for (ty, (sp, by)) in &g.dma_by_type {
        if ty.ends_with("_dynamic") {
            dyn_n += sp.count();
            dyn_b += by;
        } else {
            static_spans.iv.extend(&sp.iv);
        }
    }
    let mut dyn_act = 0i64;
    for prefix in ["software_dynamic", "hardware_dynamic"] {
        let (sp, by) = g.dma_by_type.get(prefix).cloned().unwrap_or_default();
        let act = sp.union();
        dyn_act += act;
        b.f64(c(&format!("{prefix}_dma_active_time")), secs(act));
        b.f64(c(&format!("{prefix}_dma_active_time_percent")), dfrac(act));
        b.i64(
            c(&format!("{prefix}_dma_packet_count")),
            Some(sp.count() as i64),
        );
        b.i64(c(&format!("{prefix}_dma_size")), Some(by));
        b.f64(
            c(&format!("{prefix}_dma_packet_percent")),
            pct(sp.count() as f64, all as f64),
        );
        b.f64(
            c(&format!("{prefix}_dma_size_percent")),
            pct(by as f64, all_bytes as f64),
        );
    }
    let st_n = all - dyn_n;
    let st_b = all_bytes - dyn_b;
    let st_act = static_spans.union();
    b.f64(c("static_dma_active_time"), secs(st_act));
    b.f64(c("static_dma_active_time_percent"), dfrac(st_act));
    b.f64(
        c("dynamic_dma_active_time_percent"),
        // = software + hardware active time (each a union), as a fraction of dma_active_time
        // (7/7 v6; the union of all dynamic packets, or 1 − static share, give 4/7).
        dfrac(dyn_act),
    );
    b.i64(c("static_dma_packet_count"), Some(st_n as i64));
    b.i64(c("static_dma_size"), Some(st_b));
    b.f64(c("static_dma_packet_percent"), pct(st_n as f64, all as f64));
    b.f64(
        c("dynamic_dma_packet_percent"),
        pct(dyn_n as f64, all as f64),
    );
    b.f64(
        c("static_dma_size_percent"),
        pct(st_b as f64, all_bytes as f64),
    );
    b.f64(
        c("dynamic_dma_size_percent"),
        pct(dyn_b as f64, all_bytes as f64),
    );
    if let Some(batch) = b.end_row()? {
        sink.batch(def, batch)?;
    }
    sink.batch(def, b.take_batch()?)?;

    let def = &explorer::OPCODE_SUMMARY;
    let mut b = TableBuilder::new(def);
    for ((eng, op), sp) in &g.opcodes {
        let act = sp.union();
        b.str(def.col("engine"), Some(eng));
        b.str(def.col("opcode"), Some(op));
        b.i64(def.col("instruction_count"), Some(sp.count() as i64));
        b.i64(def.col("instruction_time_ns"), Some(sp.total() / 1000));
        b.i64(def.col("active_time_ns"), Some(act / 1000));
        b.f64(def.col("active_time_percent"), frac(act).map(|f| f * 100.0));
        if let Some(batch) = b.end_row()? {
            sink.batch(def, batch)?;
        }
    }
    let batch = b.take_batch()?;
    if batch.num_rows() > 0 {
        sink.batch(def, batch)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn union_and_total() {
        let mut s = Spans::default();
        s.push(0, 10);
        s.push(5, 15);
        s.push(20, 30);
        s.push(30, 31);
        assert_eq!(s.total(), 31);
        assert_eq!(s.union(), 26);
        assert_eq!(s.count(), 4);
        assert_eq!(Spans::default().union(), 0);
    }
}
