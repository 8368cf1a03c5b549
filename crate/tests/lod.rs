//! Level-of-detail summaries (`crate::lod`) and windowed row reads against the tables they summarise:
//! the real System+Device capture (`KevGomes-nki-moe-megakernel`, v6 NTFF with DMA and semaphores,
//! ntrace/trace_info/cpu/host-memory) and a synthetic NTFF of the v6 record mix large enough for
//! many row groups. Every figure is compared with a brute-force pass over the decoded rows.

mod common;
use common::samples;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use neuronscope::lod::{self, Lod, LodCollector, TimeCols, TrackKind, QUERY_FIELDS};
use neuronscope::source::FileSource;
use neuronscope::tables::StrCol;
use neuronscope::{inventory, profile, ByteSource, Result};

const DIR: &str = "i-0af76a70a6d3864dd_pid_713479";

type Stored = BTreeMap<&'static str, bytes::Bytes>;

fn sink() -> neuronscope::sink::ParquetSink<Vec<u8>, impl FnMut(&str) -> Result<Vec<u8>>> {
    neuronscope::sink::ParquetSink::new(|_t: &str| Ok(Vec::<u8>::new()))
}

fn stored(
    s: neuronscope::sink::ParquetSink<Vec<u8>, impl FnMut(&str) -> Result<Vec<u8>>>,
) -> Stored {
    s.into_outputs()
        .unwrap()
        .into_iter()
        .map(|(n, (b, _))| (n, bytes::Bytes::from(b)))
        .collect()
}

/// Processes the sample capture's device profile and system profile through a LodCollector in
/// front of an in-memory Parquet sink, as the page does.
fn sample() -> ((Lod, Stored), (Lod, Stored)) {
    let root: PathBuf = samples().join("KevGomes-nki-moe-megakernel/output");
    let mut files = Vec::new();
    for e in std::fs::read_dir(root.join(DIR)).unwrap() {
        let p = e.unwrap().path();
        let n = p.file_name().unwrap().to_string_lossy().to_string();
        files.push((format!("{DIR}/{n}"), p.metadata().unwrap().len()));
    }
    files.sort();
    let r2 = root.clone();
    let open = move |p: &str| -> Result<Box<dyn ByteSource>> {
        Ok(Box::new(FileSource::open(&r2.join(p))?))
    };
    let inv = inventory::build(&files, &open);
    let p = inv
        .profiles
        .iter()
        .find(|p| p.root == DIR)
        .expect("profile");
    let mut ps = sink();
    let mut c = LodCollector::new(&mut ps);
    profile::process_device(&inv, &p.id, 0, &open, &mut c, &mut |_, _, _| {}).unwrap();
    let mut dev = c.lod;
    dev.finish(Some(0));
    let dev_tables = stored(ps);
    let mut ss = sink();
    let mut c = LodCollector::new(&mut ss);
    profile::process_system(&inv, &p.id, &open, &mut c, &mut |_, _, _| {}).unwrap();
    let mut sys = c.lod;
    sys.finish(None);
    ((dev, dev_tables), (sys, stored(ss)))
}

fn read(pq: &bytes::Bytes) -> Vec<RecordBatch> {
    neuronscope::sink::read_parquet(pq.clone(), None, 0, None)
        .unwrap()
        .1
}

fn i64s(b: &RecordBatch, name: &str) -> Vec<Option<i64>> {
    match b.column_by_name(name) {
        Some(c) => {
            let a = c.as_primitive::<Int64Type>();
            (0..a.len())
                .map(|i| a.is_valid(i).then(|| a.value(i)))
                .collect()
        }
        None => vec![None; b.num_rows()],
    }
}

fn strs(b: &RecordBatch, name: &str) -> Vec<String> {
    let c = StrCol::by_name(b, name);
    (0..b.num_rows())
        .map(|i| c.as_ref().and_then(|c| c.get(i)).unwrap_or("").to_string())
        .collect()
}

/// (pcore, key, start, end) of every row of an event table, as the module table groups them.
fn rows_of(table: &str, tables: &Stored) -> Vec<(i64, String, i64, i64)> {
    let Some(pq) = tables.get(table) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for b in read(pq) {
        let t = TimeCols::of(table).unwrap();
        let s = i64s(&b, t.start);
        let e = t.end.map(|e| i64s(&b, e));
        let d = t.duration.map(|d| i64s(&b, d));
        let pc = i64s(&b, "pcore_idx");
        let key = match table {
            "Instruction" => strs(&b, "engine"),
            "DmaPacket" => strs(&b, "queue_name"),
            "SemaphoreUpdate" => strs(&b, "id"),
            "CpuUsage" => strs(&b, "cpu_id"),
            _ => vec![String::new(); b.num_rows()],
        };
        for i in 0..b.num_rows() {
            let Some(a) = s[i] else { continue };
            let z = match (&e, &d) {
                (Some(e), _) => e[i].unwrap_or(a).max(a),
                (None, Some(d)) => d[i].map_or(a, |d| a + d.max(0)),
                _ => a,
            };
            out.push((pc[i].filter(|p| *p >= 0).unwrap_or(0), key[i].clone(), a, z));
        }
    }
    out
}

/// Sums busy and count over a whole-range query of every track of `kind`, keyed like rows_of.
fn lod_totals(l: &Lod, kind: TrackKind) -> BTreeMap<(i64, String), (f64, f64, u64)> {
    let listing = l.listing();
    let mut out = BTreeMap::new();
    for t in listing.tracks.iter().filter(|t| t.kind == kind) {
        let q = l.query(&[t.id], listing.start - 1.0, listing.end + 1.0, 4096);
        let m = q[3] as usize;
        assert_eq!(q.len(), 4 + m * QUERY_FIELDS);
        assert!(m <= 4097, "{m} buckets for 4096 asked");
        let (mut busy, mut count) = (0.0, 0.0);
        for k in 1..m {
            assert!(
                q[4 + k * QUERY_FIELDS] > q[4 + (k - 1) * QUERY_FIELDS],
                "bucket indexes ascend"
            );
        }
        for k in 0..m {
            busy += q[5 + k * QUERY_FIELDS];
            count += q[6 + k * QUERY_FIELDS];
        }
        out.insert((t.pcore, t.name.clone()), (busy, count, t.rows));
    }
    out
}

fn brute(rows: &[(i64, String, i64, i64)]) -> BTreeMap<(i64, String), (f64, f64, u64)> {
    let mut out: BTreeMap<(i64, String), (f64, f64, u64)> = BTreeMap::new();
    for (p, k, s, e) in rows {
        let v = out.entry((*p, k.clone())).or_default();
        v.0 += (e - s) as f64;
        v.1 += 1.0;
        v.2 += 1;
    }
    out
}

#[test]
fn device_tracks_sum_to_their_tables() {
    let ((dev, tables), _) = sample();
    for (table, kind) in [
        ("Instruction", TrackKind::Engine),
        ("DmaPacket", TrackKind::Dma),
        ("SemaphoreUpdate", TrackKind::Semaphore),
        ("PendingDma", TrackKind::Pending),
    ] {
        let rows = rows_of(table, &tables);
        assert!(!rows.is_empty(), "the sample has {table} rows");
        let want = brute(&rows);
        let got = lod_totals(&dev, kind);
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            want.keys().collect::<Vec<_>>(),
            "{table}: one track per key"
        );
        for (k, w) in &want {
            let g = got[k];
            assert_eq!(g.1, w.1, "{table} {k:?}: count");
            assert_eq!(g.2, w.2, "{table} {k:?}: rows");
            assert_eq!(
                g.0, w.0,
                "{table} {k:?}: busy ns (integer sums, exact in f64)"
            );
        }
    }
}

#[test]
fn dominant_opcode_is_the_majority_when_there_is_one() {
    let ((dev, tables), _) = sample();
    let listing = dev.listing();
    let names = listing.names.to_vec();
    // Per engine track, the opcode holding most of the busy time over the whole run: when it holds
    // more than half, a one-bucket query must name it.
    let pq = &tables["Instruction"];
    let mut per: BTreeMap<(i64, String), BTreeMap<String, i64>> = BTreeMap::new();
    for b in read(pq) {
        let (s, e, pc) = (
            i64s(&b, "start_ts"),
            i64s(&b, "end_ts"),
            i64s(&b, "pcore_idx"),
        );
        let (eng, op) = (strs(&b, "engine"), strs(&b, "opcode"));
        for i in 0..b.num_rows() {
            let (Some(a), Some(z)) = (s[i], e[i]) else {
                continue;
            };
            *per.entry((pc[i].unwrap_or(0), eng[i].clone()))
                .or_default()
                .entry(op[i].clone())
                .or_default() += (z - a).max(0);
        }
    }
    let mut checked = 0;
    for t in listing
        .tracks
        .iter()
        .filter(|t| t.kind == TrackKind::Engine)
    {
        let ops = &per[&(t.pcore, t.name.clone())];
        let total: i64 = ops.values().sum();
        let (top, w) = ops.iter().max_by_key(|(_, w)| **w).unwrap();
        if 2 * w <= total {
            continue;
        }
        let q = dev.query(&[t.id], t.start, t.end, 1);
        let m = q[3] as usize;
        assert!(m <= 2);
        // A one-bucket answer may straddle two buckets of the ladder: take the busier.
        let best = (0..m)
            .max_by(|a, b| q[5 + a * QUERY_FIELDS].total_cmp(&q[5 + b * QUERY_FIELDS]))
            .unwrap();
        let dom = q[7 + best * QUERY_FIELDS];
        if m == 1 {
            assert_eq!(names[dom as usize], *top, "{} {}", t.pcore, t.name);
            checked += 1;
        }
    }
    assert!(
        checked > 0,
        "at least one engine track has a majority opcode"
    );
}

#[test]
fn system_tracks_sum_to_their_tables() {
    let (_, (sys, tables)) = sample();
    let listing = sys.listing();
    let origin: i64 = listing.origin.parse().unwrap();
    // Origin: the earliest event or sample (the System timeline's axis).
    let mut lo = i64::MAX;
    for t in ["SystemProfileEvents", "CpuUsage", "HostMemUsage"] {
        for r in rows_of(t, &tables) {
            lo = lo.min(r.2);
        }
    }
    assert_eq!(origin, lo);
    let events = read(&tables["SystemProfileEvents"]);
    let mut want: BTreeMap<String, (f64, u64)> = BTreeMap::new();
    for b in &events {
        let (s, e) = (i64s(b, "start_ts"), i64s(b, "end_ts"));
        let (src, pid, tid, pc, nc) = (
            strs(b, "trace_event_source"),
            i64s(b, "process_id"),
            i64s(b, "thread_id"),
            i64s(b, "pcore_idx"),
            i64s(b, "nc_idx"),
        );
        for i in 0..b.num_rows() {
            let Some(a) = s[i] else { continue };
            let z = e[i].unwrap_or(a).max(a);
            let src = if src[i].is_empty() {
                "neuron_rt"
            } else {
                src[i].as_str()
            };
            let f = |v: Option<i64>| v.map_or("?".to_string(), |v| v.to_string());
            let key = if src == "neuron_hw" {
                format!("hw:{}", f(pc[i].or(nc[i])))
            } else {
                format!("{src}:{}:{}", f(pid[i]), f(tid[i]))
            };
            let v = want.entry(key).or_default();
            v.0 += (z - a) as f64;
            v.1 += 1;
        }
    }
    let got: BTreeMap<String, (f64, u64)> = lod_totals(&sys, TrackKind::System)
        .into_iter()
        .map(|((_, k), v)| (k, (v.0, v.2)))
        .collect();
    assert_eq!(got, want);
    assert!(
        listing.tracks.iter().any(|t| t.kind == TrackKind::Cpu),
        "CPU tracks"
    );
    assert!(
        listing.tracks.iter().any(|t| t.kind == TrackKind::Hostmem),
        "host memory track"
    );
    // Values: the CPU track's value range is the table's.
    let cpu = rows_of("CpuUsage", &tables).len() as u64;
    let listed: u64 = listing
        .tracks
        .iter()
        .filter(|t| t.kind == TrackKind::Cpu)
        .map(|t| t.rows)
        .sum();
    assert_eq!(listed, cpu);
}

/// Windows over `table`: the windowed read equals a brute-force filter, row indices included.
fn check_windows(
    tables: &Stored,
    table: &str,
    windows: &[(i64, i64)],
    min_skipped: usize,
) -> usize {
    let pq = &tables[table];
    let t = TimeCols::of(table).unwrap();
    let all = {
        let mut v = Vec::new();
        for b in read(pq) {
            let s = i64s(&b, t.start);
            let e = t.end.map(|e| i64s(&b, e));
            let d = t.duration.map(|d| i64s(&b, d));
            for i in 0..b.num_rows() {
                v.push(s[i].map(|a| {
                    let z = match (&e, &d) {
                        (Some(e), _) => e[i].unwrap_or(a).max(a),
                        (None, Some(d)) => d[i].map_or(a, |d| a + d.max(0)),
                        _ => a,
                    };
                    (a, z)
                }));
            }
        }
        v
    };
    let mut skipped = 0;
    for &(t0, t1) in windows {
        let want: BTreeSet<u64> = all
            .iter()
            .enumerate()
            .filter(|(_, r)| matches!(r, Some((a, z)) if *a <= t1 && *z >= t0))
            .map(|(i, _)| i as u64)
            .collect();
        let cols = vec![t.start.to_string()];
        let w = lod::window_rows(pq.clone(), t, &cols, t0, t1, usize::MAX).unwrap();
        assert!(!w.over_limit);
        assert_eq!(w.rows as usize, want.len(), "{table} [{t0}, {t1}]: rows");
        let mut got = BTreeSet::new();
        for b in &w.batches {
            assert_eq!(b.num_columns(), 2, "the asked column and nscope_row");
            let r = b
                .column_by_name("nscope_row")
                .unwrap()
                .as_primitive::<UInt64Type>();
            let s = b.column(0).as_primitive::<Int64Type>();
            for i in 0..b.num_rows() {
                let row = r.value(i);
                assert_eq!(
                    Some(s.value(i)),
                    all[row as usize].map(|x| x.0),
                    "{table}: row {row} is the table's row"
                );
                got.insert(row);
            }
        }
        assert_eq!(got, want, "{table} [{t0}, {t1}]");
        if !want.is_empty() && want.len() > 1 {
            let lim = lod::window_rows(pq.clone(), t, &cols, t0, t1, want.len() - 1).unwrap();
            assert!(
                lim.over_limit && lim.batches.is_empty(),
                "{table}: over the limit returns no rows"
            );
        }
        skipped = skipped.max(w.groups_skipped);
    }
    assert!(
        skipped >= min_skipped,
        "{table}: {skipped} row groups skipped on statistics, expected ≥ {min_skipped}"
    );
    skipped
}

#[test]
fn windows_of_the_sample_equal_a_filter() {
    let ((_, tables), (_, sys)) = sample();
    for table in ["Instruction", "DmaPacket", "SemaphoreUpdate", "PendingDma"] {
        let rows = rows_of(table, &tables);
        let lo = rows.iter().map(|r| r.2).min().unwrap();
        let hi = rows.iter().map(|r| r.3).max().unwrap();
        let span = hi - lo;
        let wins = [
            (lo, hi),
            (lo + span / 3, lo + span / 3 + span / 50),
            (hi + 1, hi + 100),
            (lo - 100, lo),
            (lo + span / 2, lo + span / 2),
        ];
        check_windows(&tables, table, &wins, 0);
    }
    let rows = rows_of("SystemProfileEvents", &sys);
    let lo = rows.iter().map(|r| r.2).min().unwrap();
    let hi = rows.iter().map(|r| r.3).max().unwrap();
    check_windows(
        &sys,
        "SystemProfileEvents",
        &[
            (lo, hi),
            (lo + (hi - lo) / 2, lo + (hi - lo) / 2 + 1_000_000),
        ],
        0,
    );
}

#[test]
fn windows_skip_row_groups_of_a_large_synthetic_ntff() {
    // 24 MB of the v6 record mix: ~0.4 M DMA packets, several 64 Ki-row groups per table.
    let files = neuronscope::synth::large_capture(24 << 20).unwrap();
    let listing: Vec<(String, u64)> = files
        .iter()
        .map(|(p, b)| (p.clone(), b.len() as u64))
        .collect();
    let map: BTreeMap<String, std::sync::Arc<Vec<u8>>> = files
        .into_iter()
        .map(|(p, b)| (p, std::sync::Arc::new(b)))
        .collect();
    let open = |p: &str| -> Result<Box<dyn ByteSource>> {
        Ok(Box::new(std::rc::Rc::new(
            map.get(p)
                .ok_or_else(|| neuronscope::Error::Other(p.into()))?
                .to_vec(),
        )))
    };
    let inv = inventory::build(&listing, &open);
    let p = inv.profiles.iter().find(|p| !p.devices.is_empty()).unwrap();
    let mut ps = sink();
    let mut c = LodCollector::new(&mut ps);
    profile::process_device(&inv, &p.id, 0, &open, &mut c, &mut |_, _, _| {}).unwrap();
    let mut l = c.lod;
    l.finish(Some(0));
    let tables = stored(ps);
    for (table, kind) in [
        ("Instruction", TrackKind::Engine),
        ("DmaPacket", TrackKind::Dma),
    ] {
        let rows = rows_of(table, &tables);
        assert!(
            rows.len() > 65_536,
            "{table}: {} rows, want more than one row group",
            rows.len()
        );
        assert_eq!(lod_totals(&l, kind), brute(&rows), "{table}: summaries");
        let lo = rows.iter().map(|r| r.2).min().unwrap();
        let hi = rows.iter().map(|r| r.3).max().unwrap();
        let span = hi - lo;
        let wins: Vec<(i64, i64)> = (0..6)
            .map(|k| (lo + k * span / 6, lo + k * span / 6 + span / 200))
            .collect();
        check_windows(&tables, table, &wins, 1);
    }
    // Bounded state: every grid within its cap, whatever the rows.
    let heap = l.heap_bytes();
    assert!(
        heap < l.len() * lod::SLICE_BUCKETS * 64 + (1 << 20),
        "{heap} B of buckets for {} tracks",
        l.len()
    );
}

/// Figures for the report, not an assertion: `NSCOPE_LOD_DIR=/tmp/v200/neuronscope-demo cargo test
/// --profile ci --test lod -- --ignored --nocapture lod_state_of_a_folder` prints the tracks and
/// bucket bytes of the first device profile of a folder.
#[test]
#[ignore]
fn lod_state_of_a_folder() {
    let Ok(dir) = std::env::var("NSCOPE_LOD_DIR") else {
        return;
    };
    let root = PathBuf::from(dir);
    let mut files = Vec::new();
    for e in std::fs::read_dir(&root).unwrap() {
        let p = e.unwrap().path();
        files.push((
            p.file_name().unwrap().to_string_lossy().to_string(),
            p.metadata().unwrap().len(),
        ));
    }
    let r2 = root.clone();
    let open = move |p: &str| -> Result<Box<dyn ByteSource>> {
        Ok(Box::new(FileSource::open(&r2.join(p))?))
    };
    let inv = inventory::build(&files, &open);
    let p = inv.profiles.iter().find(|p| !p.devices.is_empty()).unwrap();
    let mut null = neuronscope::bench::NullSink::default();
    let mut c = LodCollector::new(&mut null);
    profile::process_device(&inv, &p.id, 0, &open, &mut c, &mut |_, _, _| {}).unwrap();
    let mut l = c.lod;
    l.finish(Some(0));
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    for t in l.listing().tracks {
        *kinds.entry(format!("{:?}", t.kind)).or_default() += 1;
    }
    println!(
        "tracks {} {kinds:?}; bucket state {} bytes",
        l.len(),
        l.heap_bytes()
    );
}
