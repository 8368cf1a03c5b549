//! The derived device tables (`crate::derived`: `ActiveTime`, `PendingDma`, `DmaUsage`,
//! `HbmUsageSummaryByType`, Explorer's `Warning` rows) against the 16 JSON exports
//! (`active_time`, `pending_dma`, `dma_throughput`, `nc_mem_usage`, `warnings`), through the
//! whole pipeline (folder → inventory → pairing → `profile::process_device`). Run with
//! `--nocapture` for the per-field match counts; the asserted numbers are what matches today
//! (docs/formats.md "Derived tables" explains every gap).

mod common;
#[path = "common/exports.rs"]
mod exports;
use common::samples;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use arrow_array::{Array, Float32Array, Int32Array, Int64Array, RecordBatch, StringArray};
use neuronscope::inventory;
use neuronscope::profile;
use neuronscope::source::FileSource;
use neuronscope::tables::Tables;
use neuronscope::{ByteSource, Result};
use serde_json::Value;

/// (version, ntff, json) for the 16 exports, from INDEX.tsv.
fn export_pairs() -> Vec<(String, PathBuf, PathBuf)> {
    exports::export_pairs()
}

/// Processes the device profile of `ntff` with every file of its directory picked.
fn process(ntff: &Path) -> Tables {
    let dir = ntff.parent().unwrap();
    let base = dir.parent().unwrap().to_path_buf();
    let name = dir.file_name().unwrap().to_string_lossy().to_string();
    let mut files = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            let f = p.file_name().unwrap().to_string_lossy().to_string();
            files.push((format!("{name}/{f}"), p.metadata().unwrap().len()));
        }
    }
    files.sort();
    let b2 = base.clone();
    let open = move |p: &str| -> Result<Box<dyn ByteSource>> {
        Ok(Box::new(FileSource::open(&b2.join(p))?))
    };
    let inv = inventory::build(&files, &open);
    let want = format!("{name}/{}", ntff.file_name().unwrap().to_string_lossy());
    for p in &inv.profiles {
        if let Some(i) = p
            .devices
            .iter()
            .position(|d| d.ntff.as_deref() == Some(want.as_str()))
        {
            let mut t = Tables::default();
            profile::process_device(&inv, &p.id, i, &open, &mut t, &mut |_, _, _| {})
                .expect("process_device");
            return t;
        }
    }
    panic!("{}: no device profile", ntff.display());
}

fn i64s(b: &RecordBatch, name: &str) -> Vec<Option<i64>> {
    let c = b.column_by_name(name).unwrap();
    if let Some(a) = c.as_any().downcast_ref::<Int64Array>() {
        return (0..a.len())
            .map(|i| (!a.is_null(i)).then(|| a.value(i)))
            .collect();
    }
    let a = c.as_any().downcast_ref::<Int32Array>().unwrap();
    (0..a.len())
        .map(|i| (!a.is_null(i)).then(|| i64::from(a.value(i))))
        .collect()
}

fn f32s(b: &RecordBatch, name: &str) -> Vec<Option<f32>> {
    let a = b
        .column_by_name(name)
        .unwrap()
        .as_any()
        .downcast_ref::<Float32Array>()
        .unwrap();
    (0..a.len())
        .map(|i| (!a.is_null(i)).then(|| a.value(i)))
        .collect()
}

fn strs(b: &RecordBatch, name: &str) -> Vec<Option<String>> {
    let a = b
        .column_by_name(name)
        .unwrap()
        .as_any()
        .downcast_ref::<StringArray>()
        .unwrap();
    (0..a.len())
        .map(|i| (!a.is_null(i)).then(|| a.value(i).to_string()))
        .collect()
}

fn rows<'v>(j: &'v Value, key: &str) -> &'v [Value] {
    j[key].as_array().map_or(&[][..], |a| a.as_slice())
}

fn jint(v: &Value, k: &str) -> i64 {
    v[k].as_i64()
        .unwrap_or_else(|| panic!("field {k} not an integer in {v}"))
}

/// Export `subgraph` (absent in v5) → pcore_idx.
fn jpcore(v: &Value) -> i64 {
    match v["subgraph"].as_str() {
        Some("sg01") => 1,
        _ => 0,
    }
}

/// Per (family, table.field): (equal, compared, export rows).
#[derive(Default)]
struct Score(BTreeMap<(String, String), (usize, usize)>);

impl Score {
    fn add(&mut self, fam: &str, field: &str, ok: bool) {
        let e = self
            .0
            .entry((fam.to_string(), field.to_string()))
            .or_default();
        e.0 += ok as usize;
        e.1 += 1;
    }
    fn get(&self, fam: &str, field: &str) -> (usize, usize) {
        self.0
            .get(&(fam.to_string(), field.to_string()))
            .copied()
            .unwrap_or_default()
    }
}

#[test]
fn derived_tables_match_the_exports() {
    let mut s = Score::default();
    for (ver, ntff, json) in export_pairs() {
        let fam = if ver == "ntff_v6" { "v6" } else { "v5" };
        let j: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        let t = process(&ntff);

        // ActiveTime ← active_time, keyed by (pcore, engine, start_ts).
        let mut ours: BTreeMap<(i64, String, i64), (i64, i64)> = BTreeMap::new();
        if let Some(b) = t.concat("ActiveTime") {
            let (p, e, st, en, d) = (
                i64s(&b, "pcore_idx"),
                strs(&b, "engine"),
                i64s(&b, "start_ts"),
                i64s(&b, "end_ts"),
                i64s(&b, "duration_ns"),
            );
            for i in 0..b.num_rows() {
                ours.insert(
                    (p[i].unwrap(), e[i].clone().unwrap(), st[i].unwrap()),
                    (en[i].unwrap(), d[i].unwrap()),
                );
            }
        }
        let theirs = rows(&j, "active_time");
        s.add(
            fam,
            "ActiveTime.row_count(file)",
            ours.len() == theirs.len(),
        );
        for r in theirs {
            let k = (
                jint(r, "pcore_idx"),
                r["engine"].as_str().unwrap().to_string(),
                jint(r, "start_ts"),
            );
            let o = ours.get(&k);
            s.add(fam, "ActiveTime.start_ts", o.is_some());
            s.add(
                fam,
                "ActiveTime.end_ts",
                o.map(|o| o.0) == Some(jint(r, "end_ts")),
            );
            s.add(
                fam,
                "ActiveTime.duration_ns",
                o.map(|o| o.1) == Some(jint(r, "duration_ns")),
            );
        }

        // PendingDma ← pending_dma, keyed by (pcore, timestamp).
        let mut ours: BTreeMap<(i64, i64), i64> = BTreeMap::new();
        if let Some(b) = t.concat("PendingDma") {
            let (p, ts, v) = (
                i64s(&b, "pcore_idx"),
                i64s(&b, "timestamp"),
                i64s(&b, "value"),
            );
            for i in 0..b.num_rows() {
                ours.insert((p[i].unwrap(), ts[i].unwrap()), v[i].unwrap());
            }
        }
        let theirs = rows(&j, "pending_dma");
        s.add(
            fam,
            "PendingDma.row_count(file)",
            ours.len() == theirs.len(),
        );
        for r in theirs {
            let o = ours.get(&(jpcore(r), jint(r, "timestamp")));
            s.add(fam, "PendingDma.timestamp", o.is_some());
            s.add(fam, "PendingDma.value", o == Some(&jint(r, "value")));
        }

        // DmaUsage ← dma_throughput (transfer_rate → current_throughput, float32).
        let mut ours: BTreeMap<(i64, i64), (i64, f32)> = BTreeMap::new();
        if let Some(b) = t.concat("DmaUsage") {
            let (p, ts, by, r) = (
                i64s(&b, "pcore_idx"),
                i64s(&b, "timestamp"),
                i64s(&b, "total_transfer_bytes"),
                f32s(&b, "current_throughput"),
            );
            for i in 0..b.num_rows() {
                ours.insert(
                    (p[i].unwrap(), ts[i].unwrap()),
                    (by[i].unwrap(), r[i].unwrap()),
                );
            }
        }
        let theirs = rows(&j, "dma_throughput");
        s.add(fam, "DmaUsage.row_count(file)", ours.len() == theirs.len());
        for r in theirs {
            let o = ours.get(&(jpcore(r), jint(r, "timestamp")));
            s.add(fam, "DmaUsage.timestamp", o.is_some());
            s.add(
                fam,
                "DmaUsage.total_transfer_bytes",
                o.map(|o| o.0) == Some(jint(r, "total_transfer_bytes")),
            );
            let rate = r["transfer_rate"].as_f64().unwrap() as f32;
            s.add(
                fam,
                "DmaUsage.current_throughput",
                o.map(|o| o.1) == Some(rate),
            );
            // No packet of the samples is known to touch HBM (source/dest unknown); the
            // export agrees: every row says uses_hbm = false and 0 HBM bytes.
            s.add(
                fam,
                "dma_throughput.hbm_total_transfer_bytes == 0",
                jint(r, "hbm_total_transfer_bytes") == 0 && r["uses_hbm"] == "false",
            );
        }

        // HbmUsageSummaryByType ← nc_mem_usage, keyed by (nc, usage_type).
        let mut ours: BTreeMap<(i64, String), (i64, i64)> = BTreeMap::new();
        if let Some(b) = t.concat("HbmUsageSummaryByType") {
            let (d, n, u, by) = (
                i64s(&b, "neuron_device_idx"),
                i64s(&b, "neuroncore_idx"),
                strs(&b, "usage_type"),
                i64s(&b, "usage_bytes"),
            );
            for i in 0..b.num_rows() {
                ours.insert(
                    (n[i].unwrap(), u[i].clone().unwrap()),
                    (d[i].unwrap(), by[i].unwrap()),
                );
            }
        }
        let theirs = rows(&j, "nc_mem_usage");
        s.add(
            fam,
            "HbmUsageSummaryByType.row_count(file)",
            ours.len() == theirs.len(),
        );
        for r in theirs {
            let o = ours.get(&(jint(r, "nc"), r["usage_type"].as_str().unwrap().to_string()));
            s.add(fam, "HbmUsageSummaryByType.usage_type", o.is_some());
            s.add(
                fam,
                "HbmUsageSummaryByType.usage_bytes",
                o.map(|o| o.1) == Some(jint(r, "amount_bytes")),
            );
            s.add(
                fam,
                "HbmUsageSummaryByType.neuron_device_idx",
                o.map(|o| o.0) == Some(jint(r, "nd")),
            );
        }

        // Warning ← warnings (message, category); our own problems stay in the table too.
        let ours: BTreeSet<(String, String)> = t
            .concat("Warning")
            .map(|b| {
                strs(&b, "message")
                    .into_iter()
                    .zip(strs(&b, "category"))
                    .map(|(m, c)| (m.unwrap(), c.unwrap()))
                    .collect()
            })
            .unwrap_or_default();
        for r in rows(&j, "warnings") {
            let k = (
                r["message"].as_str().unwrap().to_string(),
                r["category"].as_str().unwrap().to_string(),
            );
            s.add(fam, "Warning.(message, category)", ours.contains(&k));
        }
        // No Explorer-text warning without an export counterpart.
        let theirs: BTreeSet<String> = rows(&j, "warnings")
            .iter()
            .map(|r| r["message"].as_str().unwrap().to_string())
            .collect();
        let extra = ours
            .iter()
            .filter(|(m, c)| c == "Missing Data" && !theirs.contains(m) && !m.contains(".ntff"))
            .count();
        assert_eq!(
            extra,
            0,
            "{}: Explorer warnings the export lacks",
            json.display()
        );
    }

    for ((fam, field), (ok, n)) in &s.0 {
        println!("derived_golden {fam} {field}: {ok}/{n}");
    }
    // What matches today (docs/formats.md "Derived tables"). v6: everything.
    for field in [
        "ActiveTime.start_ts",
        "ActiveTime.end_ts",
        "ActiveTime.duration_ns",
    ] {
        assert_eq!(s.get("v6", field), (1621, 1621), "v6 {field}");
        assert_eq!(s.get("v5", field), (774, 774), "v5 {field}");
    }
    for field in ["PendingDma.timestamp", "PendingDma.value"] {
        assert_eq!(s.get("v6", field), (95, 95), "v6 {field}");
        // v5: the static spill-reload transfer (+1 at its Sync WRITE trigger, −1 at the end of
        // the aggregated transfer) is not rebuilt: 2 of 5 rows per file missing.
        assert_eq!(s.get("v5", field), (27, 45), "v5 {field}");
    }
    for field in [
        "DmaUsage.timestamp",
        "DmaUsage.total_transfer_bytes",
        "DmaUsage.current_throughput",
        "dma_throughput.hbm_total_transfer_bytes == 0",
    ] {
        assert_eq!(s.get("v6", field), (7513, 7513), "v6 {field}");
        assert_eq!(s.get("v5", field), (1362, 1362), "v5 {field}");
    }
    for field in [
        "HbmUsageSummaryByType.usage_type",
        "HbmUsageSummaryByType.usage_bytes",
        "HbmUsageSummaryByType.neuron_device_idx",
    ] {
        assert_eq!(s.get("v6", field), (322, 322), "v6 {field}");
        assert_eq!(s.get("v5", field), (207, 207), "v5 {field}");
    }
    for t in ["ActiveTime", "DmaUsage", "HbmUsageSummaryByType"] {
        let f = format!("{t}.row_count(file)");
        assert_eq!(s.get("v6", &f), (7, 7), "v6 {f}");
        assert_eq!(s.get("v5", &f), (9, 9), "v5 {f}");
    }
    assert_eq!(s.get("v6", "PendingDma.row_count(file)"), (7, 7));
    assert_eq!(s.get("v5", "PendingDma.row_count(file)"), (0, 9));
    assert_eq!(s.get("v6", "Warning.(message, category)"), (21, 21));
    // v5: the DGE warning 9/9; "missing compiler metrics" needs the NEFF, which the samples
    // lack for these captures.
    assert_eq!(s.get("v5", "Warning.(message, category)"), (9, 18));
}

/// The DGE warning follows the NTFF's `0x8E`/`0x96` records: the six KevGomes files carry them
/// (ntff.md §4.1) and get no warning; every allenkchau file lacks them and gets it.
#[test]
fn dge_warning_follows_the_dge_records() {
    use neuronscope::derived::{explorer_warnings, MSG_MISSING_DGE};
    use neuronscope::ntff::{self, DecodeContext};
    let root = samples();
    let idx = std::fs::read_to_string(root.join("INDEX.tsv")).unwrap();
    let (mut with, mut without) = (0, 0);
    for line in idx.lines().skip(1) {
        let c: Vec<&str> = line.split('\t').collect();
        if c.len() < 6 || c[2] != "NTFF" || c[5] != "ntff_v6" {
            continue;
        }
        let p = root.join(c[0]).join(c[1]);
        let src = FileSource::open(&p).unwrap();
        let mut t = Tables::default();
        let rep = ntff::decode(&src, &DecodeContext::default(), &mut t, &mut |_, _| {}).unwrap();
        let dge: u64 = rep.cores.iter().map(|c| c.dge_notifications).sum();
        let warned = explorer_warnings(&rep, None, "x")
            .iter()
            .any(|w| w.message == MSG_MISSING_DGE);
        if c[0].starts_with("KevGomes") {
            assert!(dge > 0 && !warned, "{}: {dge} DGE records", p.display());
            with += 1;
        } else {
            assert!(dge == 0 && warned, "{}", p.display());
            without += 1;
        }
    }
    assert_eq!((with, without), (6, 7));
}

/// `Error` from error-buffer records: no sample has any, so a synthetic v6 capture carries two
/// per core (one inside the window, one after t1) and the decoder must give one row per core.
#[test]
fn error_records_of_a_synthetic_capture() {
    use neuronscope::ntff::write::{write_ntff, NtffSpec};
    use neuronscope::ntff::{self, DecodeContext};
    use neuronscope::source::SliceSource;
    let spec = NtffSpec {
        error_records: vec![
            (0x8000_0105, 0x0000_0005, 1_234_567),
            (0x8000_0107, 7, 10_u64.pow(13)),
        ],
        ..NtffSpec::default()
    };
    let mut bytes = Vec::new();
    let w = write_ntff(&spec, &mut bytes).unwrap();
    let src = SliceSource(&bytes);
    let mut t = Tables::default();
    let rep = ntff::decode(&src, &DecodeContext::default(), &mut t, &mut |_, _| {}).unwrap();
    assert!(rep
        .problems
        .iter()
        .all(|p| p.code != "NTFF_BAD_BUFFER" && p.code != "NTFF_TRUNCATED"));
    let b = t.concat("Error").expect("an Error table");
    assert_eq!(b.num_rows(), spec.subgraphs.len());
    assert_eq!(i64s(&b, "timestamp"), vec![Some(1_234); 2]);
    assert_eq!(i64s(&b, "pcore_idx"), vec![Some(0), Some(1)]);
    assert_eq!(i64s(&b, "error_type_id"), vec![Some(5); 2]);
    assert_eq!(
        strs(&b, "metadata_hex"),
        vec![Some("80000105 00000005".to_string()); 2]
    );
    assert_eq!(strs(&b, "type"), vec![Some("Errors".to_string()); 2]);
    // The other tables are unchanged by the extra buffer.
    assert_eq!(
        t.rows("Instruction") as u64,
        w.instructions_in_window.iter().flatten().sum::<u64>()
    );
    // No sample NTFF has an error record: no Error table on real captures.
    let mut t = Tables::default();
    let p = samples().join(
        "allenkchau-trainium-kernel-fusion/profiling/artifacts/fused_fp32_s512/fused_exec_2.ntff",
    );
    let src = FileSource::open(&p).unwrap();
    ntff::decode(&src, &DecodeContext::default(), &mut t, &mut |_, _| {}).unwrap();
    assert_eq!(t.rows("Error"), 0);
}

/// Invariants of the derived tables on all 50 sample NTFFs (most have no export): merged busy
/// intervals are disjoint and sorted per (pcore, engine) and never more than the instructions,
/// PendingDma has one row per DMA_DIRECT2D, DmaUsage totals never fall and end at most at the
/// packet bytes, and HbmUsageSummaryByType's Total is the sum of its categories.
#[test]
fn derived_invariants_on_every_sample() {
    use neuronscope::derived::{write_tables, DerivedCollector};
    use neuronscope::ntff::{self, DecodeContext};
    let root = samples();
    let idx = std::fs::read_to_string(root.join("INDEX.tsv")).unwrap();
    let mut files = 0;
    for line in idx.lines().skip(1) {
        let c: Vec<&str> = line.split('\t').collect();
        if c.len() < 3 || c[2] != "NTFF" {
            continue;
        }
        let p = root.join(c[0]).join(c[1]);
        let src = FileSource::open(&p).unwrap();
        let mut t = Tables::default();
        let mut col = DerivedCollector {
            inner: &mut t,
            state: Default::default(),
        };
        let rep = ntff::decode(&src, &DecodeContext::default(), &mut col, &mut |_, _| {})
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let state = col.state;
        let n = write_tables(state, &rep, &mut t).unwrap();
        files += 1;
        let what = p.display();
        assert_eq!(n.active_time as usize, t.rows("ActiveTime"), "{what}");
        assert!(t.rows("ActiveTime") <= t.rows("Instruction"), "{what}");
        if let Some(b) = t.concat("ActiveTime") {
            let (pc, en, s, e, d) = (
                i64s(&b, "pcore_idx"),
                strs(&b, "engine"),
                i64s(&b, "start_ts"),
                i64s(&b, "end_ts"),
                i64s(&b, "duration_ns"),
            );
            for i in 0..b.num_rows() {
                let (s, e, d) = (s[i].unwrap(), e[i].unwrap(), d[i].unwrap());
                assert!(e >= s && d >= 0 && (e - s - d).abs() <= 1, "{what} row {i}");
                if i > 0 && pc[i] == pc[i - 1] && en[i] == en[i - 1] {
                    assert!(s >= i64s(&b, "end_ts")[i - 1].unwrap(), "{what} row {i}");
                }
            }
        }
        let d2d = t.concat("Instruction").map_or(0, |b| {
            strs(&b, "opcode")
                .iter()
                .filter(|o| o.as_deref() == Some("DMA_DIRECT2D"))
                .count()
        });
        assert_eq!(t.rows("PendingDma"), d2d, "{what}");
        if let Some(b) = t.concat("DmaUsage") {
            let (pc, tot) = (i64s(&b, "pcore_idx"), i64s(&b, "total_transfer_bytes"));
            for i in 1..b.num_rows() {
                if pc[i] == pc[i - 1] {
                    assert!(tot[i] >= tot[i - 1], "{what} row {i}");
                }
            }
            let last: i64 = (0..b.num_rows())
                .filter(|&i| i + 1 == b.num_rows() || pc[i + 1] != pc[i])
                .map(|i| tot[i].unwrap())
                .sum();
            assert!(last as u64 <= rep.dma_bytes, "{what}");
        }
        if let Some(b) = t.concat("HbmUsageSummaryByType") {
            let (nc, ty, by) = (
                i64s(&b, "neuroncore_idx"),
                strs(&b, "usage_type"),
                i64s(&b, "usage_bytes"),
            );
            let mut sums: BTreeMap<i64, (i64, i64)> = BTreeMap::new();
            for i in 0..b.num_rows() {
                let e = sums.entry(nc[i].unwrap()).or_default();
                if ty[i].as_deref() == Some("Total") {
                    e.1 = by[i].unwrap();
                } else {
                    e.0 += by[i].unwrap();
                }
            }
            assert!(sums.values().all(|(s, t)| s == t), "{what}");
            assert_eq!(sums.len(), rep.info.subgraphs.len(), "{what}");
        }
    }
    assert_eq!(files, 50);
}

/// Buffer sizes near u64::MAX in the info section (corrupt descriptors) must not overflow the
/// progress total or the error-buffer reader: decoding ends with problems, never a panic.
#[test]
fn huge_buffer_sizes_never_panic() {
    use neuronscope::ntff::write::{write_ntff, NtffSpec};
    use neuronscope::ntff::{self, DecodeContext};
    use neuronscope::proto::NtffInfoPb;
    use neuronscope::source::SliceSource;
    use prost::Message;
    let mut bytes = Vec::new();
    write_ntff(&NtffSpec::default(), &mut bytes).unwrap();
    let p = u64::from_le_bytes(bytes[1..9].try_into().unwrap()) as usize;
    let blob = bytes[128 + p..].to_vec();
    for (kinds, size) in [
        (&[0u64, 1][..], u64::MAX / 2 + 16),
        (&[2, 3][..], u64::MAX - 15),
        (&[4, 5][..], u64::MAX / 2 + 16),
    ] {
        let mut info = NtffInfoPb::decode(&bytes[128..128 + p]).unwrap();
        for d in info.trace_buffers.iter_mut() {
            if kinds.contains(&d.trace_type) {
                d.size = size;
            }
        }
        info.trace_buffers
            .push(neuronscope::proto::TraceBufferDescriptor {
                trace_type: kinds[1],
                size,
                core: 4,
                ..Default::default()
            });
        let ib = info.encode_to_vec();
        let mut f = bytes[..128].to_vec();
        f[1..9].copy_from_slice(&(ib.len() as u64).to_le_bytes());
        f.extend_from_slice(&ib);
        f.extend_from_slice(&blob);
        let mut t = Tables::default();
        let r = ntff::decode(
            &SliceSource(&f),
            &DecodeContext::default(),
            &mut t,
            &mut |_, _| {},
        );
        if let Ok(rep) = r {
            assert!(
                !rep.problems.is_empty(),
                "kinds {kinds:?}: corrupt sizes reported"
            );
        }
    }
}
