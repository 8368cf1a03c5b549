//! NTFF decoder against AWS's JSON exports (ntff.md §9, §10) and robustness on all samples.
//!
//! Oracles: 7 allenkchau v6 exports (`json_reports/*_profile_full.json`, profiler 2.28.23.0) and
//! 9 AnchovyPark v5 exports (`profile_*.json`, profiler 2.27.33.0); INDEX.tsv's `ground_truth`
//! column names the export of each NTFF. Run with `--nocapture` to see the match-rate tables.

mod common;
#[path = "common/exports.rs"]
mod exports;
#[path = "common/mutate.rs"]
mod mutate;
use common::samples;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use arrow_array::{Array, Int32Array, Int64Array, RecordBatch, StringArray};
use neuronscope::ntff::{self, DecodeContext, DecodeReport, TimeOrigin};
use neuronscope::source::{ByteSource, FileSource, SliceSource};
use neuronscope::tables::Tables;
use serde_json::Value;

/// (ntff path, json path) for the 16 exports, from INDEX.tsv.
fn export_pairs() -> Vec<(PathBuf, PathBuf)> {
    exports::export_pairs()
        .into_iter()
        .map(|(_, ntff, json)| (ntff, json))
        .collect()
}

fn all_ntffs() -> Vec<PathBuf> {
    let root = samples();
    let idx = std::fs::read_to_string(root.join("INDEX.tsv")).expect("read INDEX.tsv");
    idx.lines()
        .skip(1)
        .filter_map(|l| {
            let c: Vec<&str> = l.split('\t').collect();
            (c.len() > 2 && c[2] == "NTFF").then(|| root.join(c[0]).join(c[1]))
        })
        .collect()
}

fn decode_file(p: &Path) -> (Tables, DecodeReport) {
    let src = FileSource::open(p).unwrap_or_else(|e| panic!("open {}: {e}", p.display()));
    let ctx = DecodeContext {
        file_name: p.display().to_string(),
        ..Default::default()
    };
    let mut t = Tables::default();
    let r = ntff::decode(&src, &ctx, &mut t, &mut |_, _| {})
        .unwrap_or_else(|e| panic!("decode {}: {e}", p.display()));
    (t, r)
}

fn col_i64(b: &RecordBatch, name: &str) -> Vec<Option<i64>> {
    let c = b
        .column_by_name(name)
        .unwrap_or_else(|| panic!("no column {name}"));
    if let Some(a) = c.as_any().downcast_ref::<Int64Array>() {
        return (0..a.len())
            .map(|i| (!a.is_null(i)).then(|| a.value(i)))
            .collect();
    }
    let a = c.as_any().downcast_ref::<Int32Array>().expect("int column");
    (0..a.len())
        .map(|i| (!a.is_null(i)).then(|| a.value(i) as i64))
        .collect()
}

fn col_str(b: &RecordBatch, name: &str) -> Vec<Option<String>> {
    let c = b
        .column_by_name(name)
        .unwrap_or_else(|| panic!("no column {name}"));
    let a = c
        .as_any()
        .downcast_ref::<StringArray>()
        .expect("string column");
    (0..a.len())
        .map(|i| (!a.is_null(i)).then(|| a.value(i).to_string()))
        .collect()
}

/// Per-field counters: matched / compared.
#[derive(Default, Clone)]
struct Rates(BTreeMap<&'static str, (u64, u64)>);

impl Rates {
    fn add(&mut self, field: &'static str, ok: bool) {
        let e = self.0.entry(field).or_default();
        e.0 += ok as u64;
        e.1 += 1;
    }
    fn merge(&mut self, o: &Rates) {
        for (k, (a, b)) in &o.0 {
            let e = self.0.entry(k).or_default();
            e.0 += a;
            e.1 += b;
        }
    }
    fn get(&self, f: &str) -> (u64, u64) {
        self.0.get(f).copied().unwrap_or_default()
    }
    fn print(&self, title: &str) {
        println!("  {title}:");
        for (k, (a, b)) in &self.0 {
            println!("    {k:<22} {a:>6} / {b:<6}");
        }
    }
}

#[derive(Clone, Debug)]
struct InsRow {
    sg: String,
    sub: String,
    pc: i64,
    ts: i64,
    dur: i64,
    opcode: String,
    label: String,
    crc_in: i64,
    crc_out: i64,
    wait: i64,
}

/// `subgraph` (v6), else `fully_qualified_subgraph` "/sg00" (v5 instructions), else sg00 (v5
/// semaphore rows, single core).
fn export_subgraph(r: &Value) -> String {
    r["subgraph"]
        .as_str()
        .or_else(|| {
            r["fully_qualified_subgraph"]
                .as_str()
                .map(|s| s.trim_start_matches('/'))
        })
        .unwrap_or("sg00")
        .to_string()
}

fn export_instructions(j: &Value) -> Vec<InsRow> {
    j["instruction"]
        .as_array()
        .expect("instruction array")
        .iter()
        .map(|r| InsRow {
            sg: export_subgraph(r),
            sub: r["subgroup"].as_str().unwrap_or("").into(),
            pc: r["pc"].as_i64().unwrap_or(-1),
            ts: r["timestamp"].as_i64().unwrap_or(-1),
            dur: r["duration"].as_i64().unwrap_or(-1),
            opcode: r["opcode"].as_str().unwrap_or("").into(),
            label: r["label"].as_str().unwrap_or("").into(),
            crc_in: r["crc_in"].as_i64().unwrap_or(-1),
            crc_out: r["crc_out"].as_i64().unwrap_or(-1),
            wait: r["evt_wait_time"].as_i64().unwrap_or(-1),
        })
        .collect()
}

fn our_instructions(t: &Tables) -> Vec<InsRow> {
    let b = t.concat("Instruction").expect("Instruction table");
    let sg = col_str(&b, "nscope_subgraph");
    let track = col_str(&b, "timeline_track");
    let engine = col_str(&b, "engine");
    let pc = col_i64(&b, "pc");
    let ts = col_i64(&b, "start_ts");
    let dur = col_i64(&b, "duration_ns");
    let end = col_i64(&b, "end_ts");
    let op = col_str(&b, "opcode");
    let ci = col_i64(&b, "crc_in");
    let co = col_i64(&b, "crc_out");
    let w = col_i64(&b, "evt_wait_time_ns");
    (0..b.num_rows())
        .map(|i| {
            assert_eq!(
                end[i],
                Some(ts[i].unwrap() + dur[i].unwrap()),
                "end = start + duration"
            );
            let eng = engine[i].clone().unwrap();
            let sub = match eng.as_str() {
                "tensor" => "Tensor",
                "scalar" => "Scalar",
                "gpsimd" => "GpSimd",
                "vector" => "Vector",
                "sync" => "Sync",
                other => panic!("engine {other}"),
            };
            InsRow {
                sg: sg[i].clone().unwrap(),
                sub: sub.into(),
                pc: pc[i].unwrap(),
                ts: ts[i].unwrap(),
                dur: dur[i].unwrap(),
                opcode: op[i].clone().unwrap_or_default(),
                label: track[i].clone().unwrap(),
                crc_in: ci[i].unwrap(),
                crc_out: co[i].unwrap(),
                wait: w[i].unwrap(),
            }
        })
        .collect()
}

type Key = (String, String, i64);

fn group(rows: Vec<InsRow>) -> BTreeMap<Key, Vec<InsRow>> {
    let mut m: BTreeMap<Key, Vec<InsRow>> = BTreeMap::new();
    for r in rows {
        m.entry((r.sg.clone(), r.sub.clone(), r.pc))
            .or_default()
            .push(r);
    }
    for v in m.values_mut() {
        v.sort_by_key(|r| (r.ts, r.dur));
    }
    m
}

/// Compares instruction rows grouped by (subgraph, engine, pc), zipped in time order.
/// Returns (rates, (ours, theirs) row counts, max |Δtimestamp|).
fn compare_instructions(ours: Vec<InsRow>, theirs: Vec<InsRow>) -> (Rates, (usize, usize), i64) {
    let counts = (ours.len(), theirs.len());
    let (o, t) = (group(ours), group(theirs));
    let mut r = Rates::default();
    let mut max_dt = 0;
    for (k, tv) in &t {
        let empty = Vec::new();
        let ov = o.get(k).unwrap_or(&empty);
        r.add("group_row_count", ov.len() == tv.len());
        for (i, x) in tv.iter().enumerate() {
            let Some(y) = ov.get(i) else {
                r.add("row_present", false);
                continue;
            };
            r.add("row_present", true);
            max_dt = max_dt.max((x.ts - y.ts).abs());
            r.add("timestamp", x.ts == y.ts);
            r.add("timestamp±1", (x.ts - y.ts).abs() <= 1);
            r.add("duration", x.dur == y.dur);
            r.add("duration±1", (x.dur - y.dur).abs() <= 1);
            r.add("opcode", x.opcode == y.opcode);
            r.add("label", x.label == y.label);
            r.add("crc_in", x.crc_in == y.crc_in);
            r.add("crc_out", x.crc_out == y.crc_out);
            r.add("evt_wait_time", x.wait == y.wait);
        }
    }
    for k in o.keys() {
        if !t.contains_key(k) {
            r.add("group_row_count", false);
        }
    }
    (r, counts, max_dt)
}

#[derive(Clone, Debug)]
struct SemRow {
    sg: String,
    n: i64,
    text: String,
    ts: i64,
    value: i64,
}

fn sem_number(id: &str) -> i64 {
    let s = id
        .strip_prefix("S[")
        .map(|r| r.split(']').next().unwrap_or(""))
        .unwrap_or(id);
    s.parse().unwrap_or(-1)
}

fn compare_semaphores(t: &Tables, j: &Value) -> (Rates, (usize, usize), i64) {
    let b = t.concat("SemaphoreUpdate").expect("SemaphoreUpdate table");
    let sg = col_str(&b, "nscope_subgraph");
    let id = col_str(&b, "id");
    let idx = col_i64(&b, "nscope_sem_index");
    let ts = col_i64(&b, "timestamp");
    let v = col_i64(&b, "value");
    let ours: Vec<SemRow> = (0..b.num_rows())
        .map(|i| SemRow {
            sg: sg[i].clone().unwrap(),
            n: idx[i].unwrap(),
            text: id[i].clone().unwrap(),
            ts: ts[i].unwrap(),
            value: v[i].unwrap(),
        })
        .collect();
    let theirs: Vec<SemRow> = j["semaphore_update"]
        .as_array()
        .expect("semaphore_update array")
        .iter()
        .map(|r| {
            let text = r["id"].as_str().unwrap_or("").to_string();
            SemRow {
                sg: export_subgraph(r),
                n: sem_number(&text),
                text,
                ts: r["timestamp"].as_i64().unwrap_or(-1),
                value: r["value"].as_i64().unwrap_or(-1),
            }
        })
        .collect();
    let counts = (ours.len(), theirs.len());
    let grp = |rows: Vec<SemRow>| {
        let mut m: BTreeMap<(String, i64), Vec<SemRow>> = BTreeMap::new();
        for r in rows {
            m.entry((r.sg.clone(), r.n)).or_default().push(r);
        }
        for v in m.values_mut() {
            v.sort_by_key(|r| (r.ts, r.value));
        }
        m
    };
    let (o, tt) = (grp(ours), grp(theirs));
    let mut r = Rates::default();
    let mut max_dt = 0;
    for (k, tv) in &tt {
        let empty = Vec::new();
        let ov = o.get(k).unwrap_or(&empty);
        r.add("group_row_count", ov.len() == tv.len());
        for (i, x) in tv.iter().enumerate() {
            let Some(y) = ov.get(i) else {
                r.add("row_present", false);
                continue;
            };
            r.add("row_present", true);
            max_dt = max_dt.max((x.ts - y.ts).abs());
            r.add("timestamp", x.ts == y.ts);
            r.add("timestamp±1", (x.ts - y.ts).abs() <= 1);
            r.add("value", x.value == y.value);
            // Text ids: without a NEFF only the fixed names 3 – 6 and bare numbers can match.
            if !x.text.starts_with("S[") || (3..=6).contains(&x.n) {
                r.add("id_text(no NEFF)", x.text == y.text);
            }
        }
    }
    for k in o.keys() {
        if !tt.contains_key(k) {
            r.add("group_row_count", false);
        }
    }
    (r, counts, max_dt)
}

fn load_json(p: &Path) -> Value {
    let s = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()));
    serde_json::from_str(&s).unwrap_or_else(|e| panic!("parse {}: {e}", p.display()))
}

fn first(j: &Value, k: &str) -> Value {
    match &j[k] {
        Value::Array(a) => a.first().cloned().unwrap_or(Value::Null),
        v => v.clone(),
    }
}

#[derive(Default)]
struct Family {
    files: usize,
    ins: Rates,
    sem: Rates,
    ins_rows: (usize, usize),
    sem_rows: (usize, usize),
    max_ins_dt: i64,
    max_sem_dt: i64,
    summary: Rates,
}

#[test]
fn golden_exports() {
    let pairs = export_pairs();
    assert_eq!(pairs.len(), 16, "16 exports in INDEX.tsv");
    let mut fam: BTreeMap<u8, Family> = BTreeMap::new();
    for (ntff_path, json_path) in &pairs {
        let (t, rep) = decode_file(ntff_path);
        let j = load_json(json_path);
        let v = rep.info.version;
        if v == 5 {
            // inf2: the start-of-execution NOTIFY is the PE instruction at runtime pc 40 (§5.3).
            assert_eq!(
                rep.origin,
                Some(TimeOrigin::StartNotify {
                    pc: 40,
                    executions: 1
                })
            );
        }
        let f = fam.entry(v).or_default();
        f.files += 1;
        let (ri, ci, dti) = compare_instructions(our_instructions(&t), export_instructions(&j));
        let (rs, cs, dts) = compare_semaphores(&t, &j);
        println!(
            "{} (v{v}, origin {:?}): instruction ours {} / export {}; semaphore ours {} / export {}",
            ntff_path.strip_prefix(samples()).unwrap_or(ntff_path).display(),
            rep.origin,
            ci.0,
            ci.1,
            cs.0,
            cs.1
        );
        f.ins.merge(&ri);
        f.sem.merge(&rs);
        f.ins_rows = (f.ins_rows.0 + ci.0, f.ins_rows.1 + ci.1);
        f.sem_rows = (f.sem_rows.0 + cs.0, f.sem_rows.1 + cs.1);
        f.max_ins_dt = f.max_ins_dt.max(dti);
        f.max_sem_dt = f.max_sem_dt.max(dts);

        // Units derived from the data: summary.total_time (s) × 10¹² vs subgraph field 14 (ps).
        let summ = first(&j, "summary");
        let meta = first(&j, "metadata");
        let tt = summ["total_time"].as_f64().expect("summary.total_time");
        let ps = rep.total_time_ps.expect("total_time_ps") as f64;
        f.summary
            .add("total_time(1e-6 rel)", ((tt * 1e12 - ps) / ps).abs() < 1e-6);
        f.summary.add(
            "last_hw_timestamp",
            meta["last_hw_timestamp"].as_i64() == Some(rep.last_hw_timestamp_ns),
        );
        f.summary.add(
            "ticks_per_nanosec",
            meta["ticks_per_nanosec"].as_i64() == Some(rep.ticks_per_nanosec),
        );
        f.summary.add(
            "ntff_version",
            meta["ntff_version"].as_i64() == Some(i64::from(v)),
        );
        f.summary.add(
            "num_physical_cores",
            meta["num_physical_cores"].as_i64() == Some(rep.cores.len() as i64),
        );
        f.summary.add(
            "event_count",
            summ["event_count"].as_u64() == Some(rep.event_count),
        );
        f.summary.add(
            "neuroncore_cycle_count",
            summ["neuroncore_cycle_count"].as_u64() == rep.neuroncore_cycle_count,
        );
        for (k, ours) in [
            ("runtime_version", &rep.info.runtime_version),
            ("driver_version", &rep.info.driver_version),
            ("collectives_version", &rep.info.collectives_version),
        ] {
            f.summary.add(k, summ[k].as_str() == ours.as_deref());
        }
        f.summary.add(
            "instance_type",
            summ["instance_type"].as_str() == Some(rep.info.instance_type.as_str()),
        );
        if let Some(mi) = j["model_info"].as_array() {
            for m in mi {
                let name = m["sg_name"].as_str().unwrap_or("");
                let Some(c) = rep.cores.iter().find(|c| c.name == name) else {
                    f.summary.add("model_info core found", false);
                    continue;
                };
                f.summary.add(
                    "model_info.event_count",
                    m["event_count"].as_u64() == Some(c.event_count),
                );
                f.summary.add(
                    "model_info.cycle_count",
                    m["neuroncore_cycle_count"].as_u64() == c.neuroncore_cycle_count,
                );
            }
        }
        // Metadata table: one row, values as in the export.
        let mb = t.concat("Metadata").expect("Metadata table");
        assert_eq!(mb.num_rows(), 1);
        assert_eq!(col_i64(&mb, "ntff_version"), vec![Some(i64::from(v))]);
        assert_eq!(col_i64(&mb, "ticks_per_nanosec"), vec![Some(1000)]);
        f.summary.add(
            "Metadata.last_ts text",
            col_str(&mb, "last_ts")[0].as_deref() == meta["last_ts"].as_str(),
        );
        let eb = t.concat("ExecutionInfo").expect("ExecutionInfo table");
        assert_eq!(eb.num_rows(), 1);
        let es = col_i64(&eb, "execution_start_ts");
        if v == 6 {
            assert_eq!(es, vec![Some(0)]);
            assert_eq!(
                col_i64(&eb, "execution_end_ts"),
                vec![meta["last_hw_timestamp"].as_i64()]
            );
        } else {
            assert_eq!(es, vec![None], "pre-v6: null execution timestamps");
        }
    }

    for (v, f) in &fam {
        println!(
            "== v{v}: {} files; instruction rows ours {} / export {} (max |Δts| {} ns); semaphore rows ours {} / export {} (max |Δts| {} ns)",
            f.files, f.ins_rows.0, f.ins_rows.1, f.max_ins_dt, f.sem_rows.0, f.sem_rows.1, f.max_sem_dt
        );
        f.ins.print("instruction");
        f.sem.print("semaphore_update");
        f.summary.print("metadata/summary");
    }

    // v6: the export is reproduced exactly (ntff.md §10).
    let f6 = &fam[&6];
    assert_eq!(f6.files, 7);
    assert_eq!(f6.ins_rows, (3991, 3991), "v6 instruction rows");
    for k in [
        "timestamp",
        "duration",
        "opcode",
        "label",
        "crc_in",
        "crc_out",
    ] {
        assert_eq!(f6.ins.get(k), (3991, 3991), "v6 instruction {k}");
    }
    // evt_wait_time: 3 985 / 3 991 with the single-precision rule (ntff.md §4.1).
    assert_eq!(
        f6.ins.get("evt_wait_time"),
        (3985, 3991),
        "v6 evt_wait_time"
    );
    assert_eq!(f6.sem_rows, (6490, 6490), "v6 semaphore rows");
    for k in ["timestamp", "value"] {
        assert_eq!(f6.sem.get(k), (6490, 6490), "v6 semaphore {k}");
    }
    let (ok, n) = f6.sem.get("id_text(no NEFF)");
    assert_eq!(ok, n, "v6 fixed/bare semaphore id texts");
    for (k, (ok, n)) in &f6.summary.0 {
        assert_eq!(ok, n, "v6 {k}");
    }

    // v5 (inf2): instructions exact, semaphores 2 964 / 2 966 exact and all within 1 ns (§10).
    let f5 = &fam[&5];
    assert_eq!(f5.files, 9);
    assert_eq!(f5.ins_rows, (1155, 1155), "v5 instruction rows");
    for k in [
        "timestamp",
        "duration",
        "opcode",
        "label",
        "crc_in",
        "crc_out",
        "evt_wait_time",
    ] {
        assert_eq!(f5.ins.get(k), (1155, 1155), "v5 instruction {k}");
    }
    assert_eq!(f5.sem_rows, (2966, 2966), "v5 semaphore rows");
    // Whole calibrated ps before t0 is subtracted (docs/formats.md; 2 964 when flooring fs).
    assert_eq!(
        f5.sem.get("timestamp"),
        (2966, 2966),
        "v5 semaphore timestamp"
    );
    assert_eq!(
        f5.sem.get("timestamp±1"),
        (2966, 2966),
        "v5 semaphore ±1 ns"
    );
    assert_eq!(f5.sem.get("value"), (2966, 2966), "v5 semaphore value");
}

#[test]
fn every_sample_decodes() {
    let files = all_ntffs();
    assert_eq!(files.len(), 50, "50 NTFFs in INDEX.tsv");
    let mut by_version: HashMap<u8, usize> = HashMap::new();
    let mut foreign: BTreeMap<u8, u64> = BTreeMap::new();
    let mut raw_kev = std::collections::BTreeSet::new();
    let mut raw_other = std::collections::BTreeSet::new();
    for p in &files {
        let src = FileSource::open(p).unwrap();
        let info = ntff::read_info(&src).unwrap().expect("non-empty");
        // Buffers tile the blob section exactly (ntff.md §2).
        let mut sum: u64 = info
            .subgraphs
            .iter()
            .flat_map(|s| s.buffers.iter())
            .map(|b| b.size)
            .sum();
        sum += info
            .subgraphs
            .iter()
            .flat_map(|s| s.code_blocks.iter())
            .filter(|c| c.inline.is_empty())
            .map(|c| c.len)
            .sum::<u64>();
        assert_eq!(info.blob_offset + sum, src.len(), "{}", p.display());
        *by_version.entry(info.version).or_default() += 1;
        let (t, rep) = decode_file(p);
        assert!(rep.instructions > 0, "{}", p.display());
        assert_eq!(t.rows("Instruction") as u64, rep.instructions);
        assert_eq!(t.rows("SemaphoreUpdate") as u64, rep.semaphore_updates);
        assert!(
            !rep.problems
                .iter()
                .any(|p| p.code == "NTFF_BAD_BUFFER" || p.code == "NTFF_TRUNCATED"),
            "{}: {:?}",
            p.display(),
            rep.problems
        );
        // Device-memory usage: categories in the fixed order (ntff.md §3.3.3); v4 stores the index
        // in field 11.1 instead of the text; some v4 files list only the first 19.
        for sg in &info.subgraphs {
            let cats: Vec<&str> = sg.mem_usage.iter().map(|(c, _)| c.as_str()).collect();
            let n = cats.len();
            assert!(
                n == 22 || (info.version == 4 && n == 19),
                "{}: {n}",
                p.display()
            );
            assert_eq!(cats, ntff::MEM_CATEGORIES[..n].to_vec(), "{}", p.display());
        }
        *foreign.entry(info.version).or_default() +=
            rep.cores.iter().map(|c| c.foreign_records).sum::<u64>();
        for c in &rep.cores {
            // Every end record finds a start (ntff.md §4.1).
            assert_eq!(c.unpaired_ends, 0, "{} {}", p.display(), c.name);
            if info.version == 6 {
                // Exactly one start per core stays open (blocked when capture stopped).
                assert_eq!(c.unpaired_starts, 1, "{} {}", p.display(), c.name);
            }
        }
        let b = t.concat("Instruction").unwrap();
        let raw: std::collections::BTreeSet<String> = col_str(&b, "opcode")
            .into_iter()
            .flatten()
            .filter(|o| o.starts_with("0x"))
            .collect();
        if p.to_string_lossy().contains("KevGomes") {
            raw_kev.extend(raw);
        } else {
            raw_other.extend(raw);
        }
        if info.version < 6 {
            // Every pre-v6 sample has a PE start-of-execution NOTIFY, run once.
            assert!(
                matches!(
                    rep.origin,
                    Some(TimeOrigin::StartNotify { executions: 1, .. })
                ),
                "{}: {:?}",
                p.display(),
                rep.origin
            );
        }
        if info.version == 6 {
            assert_eq!(rep.origin, Some(TimeOrigin::ExecutionRecord));
            // 15.1 = NEFF-node field 5 (ntff.md §3.1).
            assert_eq!(
                info.full_uuid.map(|u| u.to_vec()),
                info.executions.first().map(|x| x.neff_uuid.clone())
            );
            assert!(info
                .instance_id
                .as_deref()
                .is_some_and(|s| s.starts_with("i-")));
        }
        println!(
            "{}: v{} {} cores, {} instructions, {} semaphore updates, origin {:?}, problems {:?}",
            p.strip_prefix(samples()).unwrap_or(p).display(),
            info.version,
            info.subgraphs.len(),
            rep.instructions,
            rep.semaphore_updates,
            rep.origin,
            rep.problems
                .iter()
                .map(|p| p.message.as_str())
                .collect::<Vec<_>>()
        );
    }
    println!("foreign instruction records per version: {foreign:?}; unnamed opcodes: KevGomes {raw_kev:?}, others {raw_other:?}");
    // Records outside their code block (ntff.md §4.2): 264 v4, 8 364 v5, none in v6.
    assert_eq!(foreign.get(&4), Some(&264));
    assert_eq!(foreign.get(&5), Some(&8364));
    assert_eq!(foreign.get(&6), Some(&0));
    // Opcode bytes no export names, executed in the KevGomes files (ntff.md §7), written raw.
    let kev: Vec<&str> = raw_kev.iter().map(String::as_str).collect();
    assert_eq!(kev, ["0x41", "0x49", "0x92", "0xA7", "0xA8"]);
    assert_eq!(by_version.get(&4), Some(&5));
    assert_eq!(by_version.get(&5), Some(&32));
    assert_eq!(by_version.get(&6), Some(&13));
}

#[test]
fn uuid_cstr_cases() {
    // pairing.md §4.2: cut after 4 bytes, trailing bytes, absent.
    let root = samples();
    let info = |rel: &str| {
        let src = FileSource::open(&root.join(rel)).unwrap();
        ntff::read_info(&src).unwrap().unwrap()
    };
    let a = info("allenkchau-trainium-kernel-fusion/profiling/artifacts/baseline_fp32_s512/baseline_exec_2.ntff");
    assert_eq!(a.uuid_cstr.as_ref().map(Vec::len), Some(4));
    let full = a.full_uuid.unwrap();
    assert_eq!(full[4], 0);
    assert_eq!(&full[..4], a.uuid_cstr.as_deref().unwrap());
    let b = info("allenkchau-trainium-kernel-fusion/profiling/artifacts/baseline_bf16_s512/baseline_exec_2.ntff");
    assert_eq!(b.uuid_cstr.as_ref().map(Vec::len), Some(18));
    assert_eq!(
        &b.uuid_cstr.as_deref().unwrap()[..16],
        &b.full_uuid.unwrap()
    );
    let c = info("cs149-riya-ranjan/part2/my_convpool_kernel_float32_smaller.ntff");
    assert_eq!(c.uuid_cstr, None, "absent when the uuid starts with 0x00");
    assert_eq!(c.version, 5);
    assert_eq!(
        c.runtime_version.as_deref().map(|s| s.starts_with("2.")),
        Some(true)
    );
}

/// Garbage never panics: truncations and bit flips of a v6 and a v5 sample.
#[test]
fn truncated_and_flipped_never_panic() {
    let root = samples();
    for rel in [
        "allenkchau-trainium-kernel-fusion/profiling/artifacts/fused_fp32_s512/fused_exec_2.ntff",
        "AnchovyPark-npu_profiling_code/matmul/neuron_profile_results/profile_128x128x512.ntff",
    ] {
        let bytes = std::fs::read(root.join(rel)).unwrap();
        let run = |b: &[u8]| {
            let mut t = Tables::default();
            let _ = ntff::decode(
                &SliceSource(b),
                &DecodeContext::default(),
                &mut t,
                &mut |_, _| {},
            );
        };
        let n = bytes.len();
        let mut cuts: Vec<usize> = (0..300).chain(mutate::offsets(n, n / 97 + 1)).collect();
        cuts.push(n - 1);
        for cut in cuts {
            run(&bytes[..cut.min(n)]);
        }
        let mut rng = mutate::Xorshift(0x9E37_79B9_7F4A_7C15);
        let info_end = 128 + u64::from_le_bytes(bytes[1..9].try_into().unwrap()) as usize;
        for i in 0..400 {
            let seed = rng.next();
            // Half the flips inside header + info section, where structure lives.
            let pos = if i % 2 == 0 {
                (seed as usize) % info_end.min(n)
            } else {
                (seed as usize) % n
            };
            run(&mutate::edited(&bytes, pos, |b| {
                b ^ 1 << ((seed >> 32) % 8)
            }));
        }
    }
}

/// A ≥ 200 MB synthetic NTFF written and decoded by streaming (no timing asserted; run with
/// `--ignored --release`, watch peak memory with `/usr/bin/time -v`).
#[test]
#[ignore]
fn large_synthetic_streams() {
    use neuronscope::ntff::write::{write_ntff, NtffSpec};
    use neuronscope::tables::{TableDef, TableSink};
    let dir = std::env::temp_dir().join(format!("nscope-ntff-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("large.ntff");
    let spec = NtffSpec::default().with_min_bytes(200 << 20);
    let summary = {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        write_ntff(&spec, &mut f).unwrap()
    };
    assert!(summary.bytes >= 200 << 20);
    /// Counts rows without keeping batches.
    struct Count(u64);
    impl TableSink for Count {
        fn batch(
            &mut self,
            def: &'static TableDef,
            b: arrow_array::RecordBatch,
        ) -> neuronscope::Result<()> {
            if def.name == "Instruction" {
                self.0 += b.num_rows() as u64;
            }
            Ok(())
        }
    }
    let src = FileSource::open(&path).unwrap();
    let mut sink = Count(0);
    let mut last = (0, 0);
    let r = ntff::decode(&src, &DecodeContext::default(), &mut sink, &mut |d, t| {
        last = (d, t)
    })
    .unwrap();
    std::fs::remove_dir_all(&dir).ok();
    let expected: u64 = summary.instructions_in_window.iter().flatten().sum();
    assert_eq!(r.instructions, expected);
    assert_eq!(sink.0, expected);
    assert_eq!(last.0, last.1, "progress reaches the total");
    println!("{} bytes, {} instructions", summary.bytes, r.instructions);
}
