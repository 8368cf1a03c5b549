//! NTFF DMA packets, aggregated static-queue transfers, throttle records, DMA queue table and trace counts against AWS's JSON
//! exports (ntff.md §3.3.2, §4.4, §4.5, §5.2, §10 steps 6–8). Run with `--nocapture` for the
//! per-field match rates.

mod common;
#[path = "common/exports.rs"]
mod exports;
#[path = "common/mutate.rs"]
mod mutate;
use common::samples;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use arrow_array::{Array, Float32Array, Int32Array, Int64Array, RecordBatch, StringArray};
use neuronscope::ntff::{self, DecodeContext, DecodeReport};
use neuronscope::source::{FileSource, SliceSource};
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

fn load_json(p: &Path) -> Value {
    let s = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()));
    serde_json::from_str(&s).unwrap_or_else(|e| panic!("parse {}: {e}", p.display()))
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

fn col_f32(b: &RecordBatch, name: &str) -> Vec<Option<f32>> {
    let a = b
        .column_by_name(name)
        .unwrap_or_else(|| panic!("no column {name}"))
        .as_any()
        .downcast_ref::<Float32Array>()
        .expect("float32 column");
    (0..a.len())
        .map(|i| (!a.is_null(i)).then(|| a.value(i)))
        .collect()
}

fn col_str(b: &RecordBatch, name: &str) -> Vec<Option<String>> {
    let a = b
        .column_by_name(name)
        .unwrap_or_else(|| panic!("no column {name}"))
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
            println!("    {k:<24} {a:>6} / {b:<6}");
        }
    }
}

fn jstr_i64(v: &Value) -> i64 {
    v.as_i64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        .unwrap_or(-1)
}

#[derive(Clone, Debug)]
struct DmaRow {
    sg: String,
    engine: i64,
    queue: i64,
    ts: i64,
    dur: i64,
    size: i64,
    read: i64,
    write: i64,
    crc: i64,
    packet_idx: i64,
    subgroup: String,
    queue_type: String,
    rate: Option<f32>,
    variable: Option<String>,
}

fn export_dma(j: &Value) -> (Vec<DmaRow>, usize) {
    let mut aggregated = 0;
    let rows = j["dma"]
        .as_array()
        .expect("dma array")
        .iter()
        .filter(|r| {
            let agg = r["aggregated"].as_str() == Some("yes");
            aggregated += agg as usize;
            !agg
        })
        .map(|r| DmaRow {
            sg: r["subgraph"].as_str().unwrap_or("sg00").to_string(),
            engine: jstr_i64(&r["dma_engine"]),
            queue: jstr_i64(&r["dma_queue"]),
            ts: jstr_i64(&r["timestamp"]),
            dur: jstr_i64(&r["duration"]),
            size: jstr_i64(&r["transfer_size"]),
            read: jstr_i64(&r["read_size"]),
            write: jstr_i64(&r["write_size"]),
            crc: jstr_i64(&r["crc"]),
            packet_idx: jstr_i64(&r["packet_idx"]),
            subgroup: r["subgroup"].as_str().unwrap_or("").into(),
            queue_type: r["queue_type"].as_str().unwrap_or("").into(),
            // The export prints the float32 as its shortest decimal; parse and round back.
            rate: r["transfer_rate"].as_f64().map(|x| x as f32),
            variable: r["variable"].as_str().map(String::from),
        })
        .collect();
    (rows, aggregated)
}

fn our_dma(t: &Tables) -> Vec<DmaRow> {
    let Some(b) = t.concat("DmaPacket") else {
        return Vec::new();
    };
    let sg = col_str(&b, "nscope_subgraph");
    let eng = col_i64(&b, "engine_idx");
    let q = col_i64(&b, "queue_idx");
    let ts = col_i64(&b, "start_ts");
    let end = col_i64(&b, "end_ts");
    let dur = col_i64(&b, "duration_ns");
    let tr = col_i64(&b, "transfer_bytes");
    let rd = col_i64(&b, "read_bytes");
    let wr = col_i64(&b, "write_bytes");
    let crc = col_i64(&b, "crc");
    let pi = col_i64(&b, "packet_idx");
    let qn = col_str(&b, "queue_name");
    let qt = col_str(&b, "queue_type");
    let th = col_f32(&b, "throughput");
    let var = col_str(&b, "variable");
    let id = col_i64(&b, "id");
    (0..b.num_rows())
        .map(|i| {
            assert_eq!(end[i], Some(ts[i].unwrap() + dur[i].unwrap()));
            assert_eq!(id[i], Some(i as i64), "ids sequential from 0");
            DmaRow {
                sg: sg[i].clone().unwrap(),
                engine: eng[i].unwrap(),
                queue: q[i].unwrap(),
                ts: ts[i].unwrap(),
                dur: dur[i].unwrap(),
                size: tr[i].unwrap(),
                read: rd[i].unwrap(),
                write: wr[i].unwrap(),
                crc: crc[i].unwrap(),
                packet_idx: pi[i].unwrap(),
                subgroup: qn[i].clone().unwrap(),
                queue_type: qt[i].clone().unwrap(),
                rate: th[i],
                variable: var[i].clone(),
            }
        })
        .collect()
}

type DmaKey = (String, i64, i64);

fn group_dma(rows: Vec<DmaRow>) -> BTreeMap<DmaKey, Vec<DmaRow>> {
    let mut m: BTreeMap<DmaKey, Vec<DmaRow>> = BTreeMap::new();
    for r in rows {
        m.entry((r.sg.clone(), r.engine, r.queue))
            .or_default()
            .push(r);
    }
    for v in m.values_mut() {
        v.sort_by_key(|r| (r.ts, r.packet_idx));
    }
    m
}

/// Rows matched per (subgraph, engine, queue) in time order. Returns (rates, extra streams).
fn compare_dma(ours: Vec<DmaRow>, theirs: Vec<DmaRow>) -> Rates {
    let (o, t) = (group_dma(ours), group_dma(theirs));
    let mut r = Rates::default();
    for (k, tv) in &t {
        let empty = Vec::new();
        let ov = o.get(k).unwrap_or(&empty);
        r.add("stream_row_count", ov.len() == tv.len());
        for (i, x) in tv.iter().enumerate() {
            let Some(y) = ov.get(i) else {
                r.add("row_present", false);
                continue;
            };
            r.add("row_present", true);
            r.add("timestamp", x.ts == y.ts);
            r.add("timestamp±1", (x.ts - y.ts).abs() <= 1);
            r.add("duration", x.dur == y.dur);
            r.add("duration±1", (x.dur - y.dur).abs() <= 1);
            r.add("transfer_size", x.size == y.size);
            r.add("read_size", x.read == y.read);
            r.add("write_size", x.write == y.write);
            r.add("crc", x.crc == y.crc);
            r.add("packet_idx", x.packet_idx == y.packet_idx);
            r.add("subgroup", x.subgroup == y.subgroup);
            r.add("queue_type", x.queue_type == y.queue_type);
            r.add("transfer_rate", x.rate == y.rate);
            if std::env::var("NSCOPE_DEBUG").is_ok()
                && (x.rate != y.rate || x.packet_idx != y.packet_idx || x.ts != y.ts)
            {
                println!("    mismatch {k:?}: export ts {} dur {} size {} idx {} rate {:?} | ours ts {} dur {} idx {} rate {:?}", x.ts, x.dur, x.size, x.packet_idx, x.rate, y.ts, y.dur, y.packet_idx, y.rate);
            }
            if x.variable.as_deref() == Some("unknown") {
                r.add(
                    "variable(unknown)",
                    y.variable.as_deref() == Some("unknown"),
                );
            }
        }
    }
    for k in o.keys() {
        if !t.contains_key(k) {
            r.add("stream_row_count", false);
        }
    }
    r
}

fn compare_ham(t: &Tables, j: &Value) -> Rates {
    let mut r = Rates::default();
    let theirs: Vec<(String, i64, i64, i64, i64, i64)> = j["ham"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|h| {
                    (
                        h["subgraph"].as_str().unwrap_or("sg00").to_string(),
                        jstr_i64(&h["timestamp"]),
                        jstr_i64(&h["duration"]),
                        jstr_i64(&h["k"]),
                        jstr_i64(&h["n"]),
                        jstr_i64(&h["type"]),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let ours: Vec<(String, i64, i64, i64, i64, i64)> = match t.concat("Throttle") {
        Some(b) => {
            let sg = col_str(&b, "nscope_subgraph");
            let ts = col_i64(&b, "timestamp");
            let d = col_i64(&b, "duration");
            let k = col_i64(&b, "k");
            let n = col_i64(&b, "n");
            let code = col_i64(&b, "nscope_type_code");
            let ty = col_str(&b, "type");
            (0..b.num_rows())
                .map(|i| {
                    let c = code[i].unwrap();
                    let want = match c {
                        0 => "activity_0",
                        1 => "activity_1",
                        _ => "unknown",
                    };
                    assert_eq!(ty[i].as_deref(), Some(want));
                    (
                        sg[i].clone().unwrap(),
                        ts[i].unwrap(),
                        d[i].unwrap_or(-1),
                        k[i].unwrap(),
                        n[i].unwrap(),
                        c,
                    )
                })
                .collect()
        }
        None => Vec::new(),
    };
    r.add("row_count(file)", ours.len() == theirs.len());
    for x in &theirs {
        let Some(y) = ours.iter().find(|y| y.0 == x.0 && y.1 == x.1) else {
            r.add("row_present", false);
            continue;
        };
        r.add("row_present", true);
        r.add("duration", x.2 == y.2);
        if std::env::var("NSCOPE_DEBUG").is_ok() && x.2 != y.2 {
            println!("    ham mismatch {x:?} ours {y:?}");
        }
        r.add("k", x.3 == y.3);
        r.add("n", x.4 == y.4);
        r.add("type", x.5 == y.5);
    }
    r
}

fn compare_queues(t: &Tables, j: &Value) -> Rates {
    let mut r = Rates::default();
    let b = t.concat("DmaQueuesInfo").expect("DmaQueuesInfo table");
    let sg = col_str(&b, "nscope_subgraph");
    let name = col_str(&b, "name");
    let ty = col_str(&b, "type");
    let eng = col_i64(&b, "engine_idx");
    let idx = col_i64(&b, "idx");
    let axi = col_i64(&b, "axi_port");
    let dram = col_i64(&b, "dram_channel");
    let ev = col_i64(&b, "nscope_event_id");
    let theirs = j["dma_queues_info"].as_array().expect("dma_queues_info");
    r.add("row_count(file)", theirs.len() == b.num_rows());
    for q in theirs {
        let s = q["subgraph"].as_str().unwrap_or("sg00");
        let n = q["q_name"].as_str().unwrap_or("");
        let Some(i) = (0..b.num_rows())
            .find(|&i| sg[i].as_deref() == Some(s) && name[i].as_deref() == Some(n))
        else {
            r.add("row_present", false);
            continue;
        };
        r.add("row_present", true);
        r.add("type", ty[i].as_deref() == q["q_type"].as_str());
        r.add("engine_idx", eng[i] == q["q_eng_idx"].as_i64());
        r.add("idx", idx[i] == q["q_idx"].as_i64());
        r.add("axi_port", axi[i] == q["q_axi_port"].as_i64());
        r.add("dram_channel", dram[i] == q["q_dram_channel"].as_i64());
        r.add("event_id", ev[i] == q["q_event_id"].as_i64());
    }
    r
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
    dma: Rates,
    ham: Rates,
    queues: Rates,
    counts: Rates,
    rows: (usize, usize),
    aggregated: usize,
    ham_rows: (usize, usize),
}

#[test]
fn dma_throttle_golden() {
    let pairs = export_pairs();
    assert_eq!(pairs.len(), 16, "16 exports in INDEX.tsv");
    let mut fam: BTreeMap<u8, Family> = BTreeMap::new();
    for (ntff_path, json_path) in &pairs {
        let (t, rep) = decode_file(ntff_path);
        let j = load_json(json_path);
        let v = rep.info.version;
        let f = fam.entry(v).or_default();
        f.files += 1;
        let ours = our_dma(&t);
        let (theirs, agg) = export_dma(&j);
        assert_eq!(ours.len() as u64, rep.dma_packets);
        assert_eq!(
            ours.iter().map(|r| r.size as u64).sum::<u64>(),
            rep.dma_bytes
        );
        println!(
            "{} (v{v}): dma ours {} / export {} (+{agg} aggregated); ham ours {} / export {}; dropped streams {:?}",
            ntff_path.strip_prefix(samples()).unwrap_or(ntff_path).display(),
            ours.len(),
            theirs.len(),
            rep.throttles,
            j["ham"].as_array().map_or(0, Vec::len),
            rep.cores.iter().map(|c| (c.dma.dropped_streams, c.dma.dropped_packets)).collect::<Vec<_>>()
        );
        f.rows = (f.rows.0 + ours.len(), f.rows.1 + theirs.len());
        f.aggregated += agg;
        f.ham_rows = (
            f.ham_rows.0 + rep.throttles as usize,
            f.ham_rows.1 + j["ham"].as_array().map_or(0, Vec::len),
        );
        f.dma.merge(&compare_dma(ours, theirs));
        f.ham.merge(&compare_ham(&t, &j));
        f.queues.merge(&compare_queues(&t, &j));
        let summ = first(&j, "summary");
        // DmaPacketAggregated: one row per export row with aggregated = "yes" (the 9 inf2 rows;
        // field rates in tests/conform.rs).
        f.counts.add(
            "aggregated rows",
            rep.cores.iter().map(|c| c.dma.aggregated).sum::<u64>() == agg as u64
                && t.rows("DmaPacketAggregated") == agg,
        );
        f.counts.add(
            "summary.trace_count",
            summ["trace_count"].as_u64() == Some(rep.trace_count),
        );
        for m in j["model_info"].as_array().expect("model_info") {
            let name = m["sg_name"].as_str().unwrap_or("");
            let c = rep.cores.iter().find(|c| c.name == name).expect("core");
            if std::env::var("NSCOPE_DEBUG").is_ok() {
                println!(
                    "    trace_count export {} ours {} (ins {:?} ev {} dma {})",
                    m["trace_count"],
                    c.trace_count,
                    c.instructions_per_engine,
                    c.event_count,
                    c.dma.packets
                );
            }
            f.counts.add(
                "model_info.trace_count",
                m["trace_count"].as_u64() == Some(c.trace_count),
            );
        }
    }
    for (v, f) in &fam {
        println!(
            "== v{v}: {} files; dma rows ours {} / export {} non-aggregated (+{} aggregated); ham ours {} / export {}",
            f.files, f.rows.0, f.rows.1, f.aggregated, f.ham_rows.0, f.ham_rows.1
        );
        f.dma.print("dma");
        f.ham.print("ham");
        f.queues.print("dma_queues_info");
        f.counts.print("counts");
    }

    // v6: every field of all 15 429 rows (ntff.md §10).
    let f6 = &fam[&6];
    assert_eq!(f6.rows, (15429, 15429), "v6 dma rows");
    for k in [
        "timestamp",
        "duration",
        "transfer_size",
        "read_size",
        "write_size",
        "crc",
        "packet_idx",
        "subgroup",
        "queue_type",
        "transfer_rate",
        "variable(unknown)",
    ] {
        assert_eq!(f6.dma.get(k), (15429, 15429), "v6 dma {k}");
    }
    assert_eq!(f6.ham_rows, (24, 24), "v6 ham rows");
    for k in ["duration", "k", "n", "type"] {
        assert_eq!(f6.ham.get(k), (24, 24), "v6 ham {k}");
    }
    for (k, (ok, n)) in &f6.queues.0 {
        assert_eq!(ok, n, "v6 dma_queues_info {k}");
    }
    assert_eq!(f6.counts.get("model_info.trace_count"), (14, 14));
    assert_eq!(f6.counts.get("summary.trace_count"), (7, 7));
    assert_eq!(f6.counts.get("aggregated rows"), (7, 7));

    // v5 (inf2): 2 251 non-aggregated rows, 2 247 exact (ntff.md §10); 9 aggregated not rebuilt.
    let f5 = &fam[&5];
    assert_eq!(f5.aggregated, 9);
    assert_eq!(f5.rows.1, 2251);
    for k in [
        "row_present",
        "timestamp",
        "duration",
        "transfer_size",
        "read_size",
        "write_size",
        "crc",
        "packet_idx",
        "subgroup",
        "queue_type",
        "transfer_rate",
    ] {
        assert_eq!(f5.dma.get(k), (2251, 2251), "v5 dma {k}");
    }
    assert_eq!(f5.ham_rows, (54, 54), "v5 ham rows");
    for k in ["duration", "k", "n", "type"] {
        assert_eq!(f5.ham.get(k), (54, 54), "v5 ham {k}");
    }
    // v5 trace_count also counts the one aggregated DMA row per file, now rebuilt
    // (DmaPacketAggregated, docs/formats.md).
    assert_eq!(f5.counts.get("aggregated rows"), (9, 9));
    assert_eq!(f5.counts.get("summary.trace_count"), (9, 9));
    assert_eq!(f5.counts.get("model_info.trace_count"), (9, 9));
    for (k, (ok, n)) in &f5.queues.0 {
        assert_eq!(ok, n, "v5 dma_queues_info {k}");
    }
}

#[test]
fn every_sample_decodes_dma() {
    let files = all_ntffs();
    assert_eq!(files.len(), 50, "50 NTFFs in INDEX.tsv");
    for p in &files {
        let (t, rep) = decode_file(p);
        assert!(
            !rep.problems
                .iter()
                .any(|p| p.code == "NTFF_BAD_BUFFER" || p.code == "NTFF_TRUNCATED"),
            "{}: {:?}",
            p.display(),
            rep.problems
        );
        assert_eq!(t.rows("DmaPacket") as u64, rep.dma_packets);
        assert_eq!(t.rows("Throttle") as u64, rep.throttles);
        assert!(t.rows("DmaQueuesInfo") > 0, "{}", p.display());
        for c in &rep.cores {
            assert_eq!(c.dma.unpaired_ends, 0, "{} {}", p.display(), c.name);
        }
        println!(
            "{}: v{} dma {} packets {} B, throttles {}, trace_count {}, cores {:?}",
            p.strip_prefix(samples()).unwrap_or(p).display(),
            rep.info.version,
            rep.dma_packets,
            rep.dma_bytes,
            rep.throttles,
            rep.trace_count,
            rep.cores
                .iter()
                .map(|c| (
                    c.dma.packets,
                    c.dma.dropped_streams,
                    c.dma.unpaired_starts,
                    c.dma.throttles
                ))
                .collect::<Vec<_>>()
        );
    }
}

/// Truncations and bit flips in the DMA/throttle region of a v6 sample never panic.
#[test]
fn dma_garbage_never_panics() {
    let root = samples();
    let rel =
        "allenkchau-trainium-kernel-fusion/profiling/artifacts/fused_fp32_s512/fused_exec_2.ntff";
    let bytes = std::fs::read(root.join(rel)).unwrap();
    let src = SliceSource(&bytes);
    let info = ntff::read_info(&src).unwrap().unwrap();
    let bufs: Vec<(u64, u64)> = info
        .subgraphs
        .iter()
        .flat_map(|s| s.buffers.iter())
        .filter(|b| (b.trace_type == 4 || b.trace_type == 5) && b.size > 0)
        .map(|b| (info.blob_offset + b.offset, b.size))
        .collect();
    assert!(!bufs.is_empty());
    let run = |b: &[u8]| {
        let mut t = Tables::default();
        let _ = ntff::decode(
            &SliceSource(b),
            &DecodeContext::default(),
            &mut t,
            &mut |_, _| {},
        );
    };
    let mut rng = mutate::Xorshift(0x2545_F491_4F6C_DD1D);
    for &(off, size) in &bufs {
        for i in 0..40u64 {
            run(&bytes[..(off + size * i / 40) as usize]);
            rng.next();
            let mut b = bytes.clone();
            for _ in 0..64 {
                let seed = rng.next();
                let pos = (off + seed % size) as usize;
                b[pos] = (seed >> 40) as u8;
            }
            run(&b);
        }
    }
}

/// `Summary` fields from the decoded tables against the exports' `summary` (v6 and v5): counts
/// exact, times as float32; prints per-field match rates.
#[test]
fn summary_against_exports() {
    use neuronscope::summary::write_summary;
    let mut rates: BTreeMap<u8, Rates> = BTreeMap::new();
    let mut near: BTreeMap<u8, Rates> = BTreeMap::new();
    for (ntff_path, json_path) in export_pairs() {
        let (t, rep) = decode_file(&ntff_path);
        let j = load_json(&json_path);
        let v = rep.info.version;
        let raw_ps = rep.info.subgraphs.iter().all(|s| {
            s.calibration.is_identity() && s.calibration.dma.iter().all(|d| d.is_identity())
        });
        let mut out = Tables::default();
        write_summary(&t, &rep, raw_ps, &mut out).expect("summary");
        let b = out.concat("Summary").expect("Summary table");
        assert_eq!(b.num_rows(), 1);
        assert!(out.rows("OpcodeSummary") > 0);
        let s = first(&j, "summary");
        let r = rates.entry(v).or_default();
        for f in b.schema().fields() {
            let name: &'static str = Box::leak(f.name().clone().into_boxed_str());
            let Some(want) = s.get(name) else { continue };
            let col = b.column_by_name(name).unwrap();
            if col.is_null(0) {
                continue;
            }
            if let Some(a) = col.as_any().downcast_ref::<Int64Array>() {
                let ok = want.as_i64() == Some(a.value(0));
                if !ok && std::env::var("NSCOPE_DEBUG").is_ok() {
                    println!("  v{v} {name}: export {want} ours {}", a.value(0));
                }
                r.add(name, ok);
            } else if let Some(a) = col.as_any().downcast_ref::<Float32Array>() {
                let w = want.as_f64().unwrap_or(f64::NAN) as f32;
                let ours = a.value(0);
                let ok = w == ours || (w - ours).abs() <= 1e-6 * w.abs();
                if name.contains("_engine_") {
                    near.entry(v)
                        .or_default()
                        .add(name, (w - ours).abs() <= 0.01 * w.abs());
                }
                if !ok && std::env::var("NSCOPE_DEBUG").is_ok() {
                    println!("  v{v} {name}: export {w} ours {ours}");
                }
                r.add(name, ok);
            }
        }
    }
    for (v, r) in &rates {
        r.print(&format!("summary v{v} (float32 within 1e-6 relative)"));
    }
    for (v, r) in &near {
        r.print(&format!("summary v{v} engine times within 1 %"));
    }
    // v6: every field neuronscope writes matches (float32 within 1e-6 relative), 52 fields.
    for (k, (ok, n)) in &rates[&6].0 {
        assert_eq!((ok, n), (&7, &7), "v6 summary {k}");
    }
    assert_eq!(rates[&6].0.len(), 52, "v6 summary fields compared");
    // v5 (inf2): every field of the export we write, times included — durations in whole
    // calibrated ps from the raw ticks (docs/formats.md "Summary"; the ns columns gave 0/9).
    for (k, (ok, n)) in &rates[&5].0 {
        assert_eq!((ok, n), (&9, &9), "v5 summary {k}");
    }
    assert_eq!(rates[&5].0.len(), 49, "v5 summary fields compared");
    let r6 = &rates[&6];
    for k in [
        "trace_count",
        "event_count",
        "neuroncore_cycle_count",
        "total_time",
        "tensor_engine_instruction_count",
        "scalar_engine_instruction_count",
        "gpsimd_engine_instruction_count",
        "vector_engine_instruction_count",
        "sync_engine_instruction_count",
        "matmul_instruction_count",
        "activate_instruction_count",
        "software_dynamic_dma_packet_count",
        "hardware_dynamic_dma_packet_count",
        "static_dma_packet_count",
        "software_dynamic_dma_size",
        "hardware_dynamic_dma_size",
        "static_dma_size",
        "activate_instruction_time",
        "dma_packet_time",
        "dma_active_time",
        "dma_active_time_percent",
        "dma_active_cycles",
        "static_dma_active_time",
        "software_dynamic_dma_active_time",
        "hardware_dynamic_dma_active_time",
        "static_dma_active_time_percent",
        "dynamic_dma_active_time_percent",
        "software_dynamic_dma_active_time_percent",
        "hardware_dynamic_dma_active_time_percent",
        "static_dma_packet_percent",
        "dynamic_dma_packet_percent",
        "static_dma_size_percent",
        "dynamic_dma_size_percent",
    ] {
        assert_eq!(r6.get(k), (7, 7), "v6 summary {k}");
    }
}
