//! End to end on real captures: folder → inventory → pairing → profile tables, compared with AWS's
//! JSON exports (the seven allenkchau v6 triples: NEFF + NTFF + `*_profile_full.json`), plus the
//! KevGomes System+Device capture and the whole-pipeline robustness on corrupted input.

mod common;
#[path = "common/mutate.rs"]
mod mutate;
use common::samples;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use arrow_array::{Array, Int32Array, Int64Array, RecordBatch, StringArray};
use neuronscope::inventory::{self, Inventory, ProfileType};
use neuronscope::pairing::PairStatus;
use neuronscope::profile;
use neuronscope::source::FileSource;
use neuronscope::tables::{TableSink, Tables};
use neuronscope::{ByteSource, Result, Severity};
use serde_json::Value;

/// Files under `dir` as the browser presents a picked folder: relative to its parent.
fn picked(dir: &Path) -> Vec<(String, u64)> {
    let name = dir.file_name().unwrap().to_string_lossy().to_string();
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p
                    .strip_prefix(dir)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                out.push((format!("{name}/{rel}"), p.metadata().unwrap().len()));
            }
        }
    }
    out.sort();
    out
}

fn scan(dir: &Path) -> (Inventory, PathBuf) {
    let base = dir.parent().unwrap().to_path_buf();
    let b2 = base.clone();
    let open = move |p: &str| -> Result<Box<dyn ByteSource>> {
        Ok(Box::new(FileSource::open(&b2.join(p))?))
    };
    (inventory::build(&picked(dir), &open), base)
}

fn process(
    inv: &Inventory,
    base: &Path,
    profile_id: &str,
    idx: usize,
) -> (Tables, profile::DeviceResult) {
    let open =
        |p: &str| -> Result<Box<dyn ByteSource>> { Ok(Box::new(FileSource::open(&base.join(p))?)) };
    let mut t = Tables::default();
    let r = profile::process_device(inv, profile_id, idx, &open, &mut t, &mut |_, _, _| {})
        .expect("process_device");
    (t, r)
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

fn ints(b: &RecordBatch, name: &str) -> Vec<i64> {
    let c = b.column_by_name(name).unwrap();
    if let Some(a) = c.as_any().downcast_ref::<Int64Array>() {
        return (0..a.len()).map(|i| a.value(i)).collect();
    }
    let a = c.as_any().downcast_ref::<Int32Array>().unwrap();
    (0..a.len()).map(|i| a.value(i) as i64).collect()
}

fn json_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The seven allenkchau exports: (capture folder, export).
fn allenkchau() -> Vec<(PathBuf, PathBuf)> {
    let root = samples().join("allenkchau-trainium-kernel-fusion/profiling");
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.to_string_lossy().ends_with("_profile_full.json") {
                let folder = p.parent().unwrap().parent().unwrap().to_path_buf();
                out.push((folder, p));
            }
        }
    }
    out.sort();
    assert_eq!(out.len(), 7, "expected the 7 allenkchau exports");
    out
}

#[test]
fn allenkchau_profiles_match_the_json_exports() {
    let (mut sem_rows, mut sem_text_ok, mut ins_rows) = (0usize, 0usize, 0usize);
    for (folder, json) in allenkchau() {
        let export: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        let (inv, base) = scan(&folder);
        assert_eq!(inv.profiles.len(), 1, "{}", folder.display());
        let p = &inv.profiles[0];
        assert_eq!(p.profile_type, ProfileType::Device);
        let idx = p
            .devices
            .iter()
            .position(|d| d.ntff.is_some())
            .expect("an NTFF device profile");
        assert!(
            matches!(p.devices[idx].pairing, PairStatus::Paired { .. }),
            "{}: {:?}",
            folder.display(),
            p.devices[idx].pairing
        );
        let (t, res) = process(&inv, &base, &p.id, idx);
        assert!(
            res.problems.iter().all(|p| p.severity != Severity::Error),
            "{:?}",
            res.problems
        );

        // Instruction: same row count as the export (field-level rates: ntff_golden.rs).
        let n_ins = export["instruction"].as_array().unwrap().len();
        assert_eq!(t.rows("Instruction"), n_ins, "{}", folder.display());
        assert_eq!(res.summary.instruction_count as usize, n_ins);
        ins_rows += n_ins;

        // SemaphoreUpdate with the NEFF's queue names: (subgraph, timestamp, value, id text).
        let key = |sg: &str, ts: i64, v: i64, id: &str| format!("{sg}|{ts}|{v}|{id}");
        let mut want: BTreeMap<String, i64> = BTreeMap::new();
        for r in export["semaphore_update"].as_array().unwrap() {
            let k = key(
                r["subgraph"].as_str().unwrap(),
                json_str(&r["timestamp"]).parse().unwrap(),
                json_str(&r["value"]).parse().unwrap(),
                &json_str(&r["id"]),
            );
            *want.entry(k).or_default() += 1;
        }
        let sem = t.concat("SemaphoreUpdate").unwrap();
        let (sg, ts, val, id) = (
            strs(&sem, "nscope_subgraph"),
            ints(&sem, "timestamp"),
            ints(&sem, "value"),
            strs(&sem, "id"),
        );
        assert_eq!(sem.num_rows(), want.values().sum::<i64>() as usize);
        for i in 0..sem.num_rows() {
            sem_rows += 1;
            let k = key(
                sg[i].as_deref().unwrap(),
                ts[i],
                val[i],
                id[i].as_deref().unwrap(),
            );
            if let Some(n) = want.get_mut(&k).filter(|n| **n > 0) {
                *n -= 1;
                sem_text_ok += 1;
            }
        }

        // NeffHeader equals the export's neff_header.
        let nh = t.concat("NeffHeader").unwrap();
        let eh = &export["neff_header"][0];
        for f in ["uuid", "hash", "network_name", "enabled_features"] {
            assert_eq!(strs(&nh, f)[0].as_deref(), eh[f].as_str(), "NeffHeader.{f}");
        }
        // Metadata carries the NEFF's compiler version and the schema version.
        let md = t.concat("Metadata").unwrap();
        assert!(strs(&md, "compiler_version")[0]
            .as_deref()
            .unwrap_or("")
            .starts_with("2.23."));
        assert!(strs(&md, "profile_schema_version")[0]
            .as_deref()
            .unwrap()
            .starts_with("7.4.0"));
        // SchemaFields describes every table written.
        let sf = t.concat("SchemaFields").unwrap();
        let described: std::collections::BTreeSet<String> =
            strs(&sf, "table_name").into_iter().flatten().collect();
        for name in t.tables.keys() {
            assert!(described.contains(*name), "SchemaFields lacks {name}");
        }
    }
    println!(
        "end_to_end allenkchau: Instruction rows {ins_rows}; SemaphoreUpdate (subgraph, timestamp, value, id text) {sem_text_ok}/{sem_rows}"
    );
    assert_eq!(
        sem_text_ok, sem_rows,
        "SemaphoreUpdate id text must equal the export"
    );
}

#[test]
fn kevgomes_capture_is_system_plus_device() {
    let dir = samples().join("KevGomes-nki-moe-megakernel/output/i-0af76a70a6d3864dd_pid_713479");
    let (inv, base) = scan(&dir);
    assert_eq!(inv.profiles.len(), 1);
    let p = &inv.profiles[0];
    assert_eq!(p.profile_type, ProfileType::SystemDevice);
    assert_eq!(p.instance_id.as_deref(), Some("i-0af76a70a6d3864dd"));
    assert_eq!(p.pid, Some(713479));
    assert_eq!(p.system_files.len(), 4);
    assert_eq!(p.devices.len(), 1);
    assert!(matches!(p.devices[0].pairing, PairStatus::Paired { .. }));
    let (t, res) = process(&inv, &base, &p.id, 0);
    assert!(res.summary.instruction_count > 0);
    assert_eq!(t.rows("Instruction") as u64, res.summary.instruction_count);
    let per_engine: u64 = res.summary.per_engine.iter().map(|c| c.count).sum();
    assert_eq!(per_engine, res.summary.instruction_count);
    // LNC=2: both physical cores have instructions.
    assert!(res.summary.per_engine.iter().any(|c| c.pcore_idx == 1));
    let neff = res.summary.neff.as_ref().unwrap();
    assert!(neff.file.ends_with("neff_171450338541704.neff") && !neff.name.is_empty());
}

#[test]
fn swapped_neff_is_rejected_with_both_names() {
    let art = samples().join("allenkchau-trainium-kernel-fusion/profiling/artifacts");
    let files: Vec<(String, PathBuf)> = vec![
        (
            "x/fused_exec_2.ntff".into(),
            art.join("fused_bf16_s512/fused_exec_2.ntff"),
        ),
        (
            "x/baseline.neff".into(),
            art.join("baseline_bf16_s512/baseline.neff"),
        ),
    ];
    let list: Vec<(String, u64)> = files
        .iter()
        .map(|(v, p)| (v.clone(), p.metadata().unwrap().len()))
        .collect();
    let map: Rc<Vec<(String, PathBuf)>> = Rc::new(files);
    let m2 = map.clone();
    let open = move |p: &str| -> Result<Box<dyn ByteSource>> {
        let real = &m2.iter().find(|(v, _)| v == p).unwrap().1;
        Ok(Box::new(FileSource::open(real)?))
    };
    let inv = inventory::build(&list, &open);
    let p = &inv.profiles[0];
    let i = p.devices.iter().position(|d| d.ntff.is_some()).unwrap();
    assert!(matches!(
        p.devices[i].pairing,
        PairStatus::UuidMismatch { .. }
    ));
    let mut t = Tables::default();
    let res = profile::process_device(&inv, &p.id, i, &open, &mut t, &mut |_, _, _| {}).unwrap();
    let err = res
        .problems
        .iter()
        .find(|p| p.code == "ERROR_PROCESS_INCOMPLETE")
        .expect("a mismatch error");
    assert!(err.message.contains("fused_exec_2.ntff") && err.message.contains("baseline.neff"));
    // The error is data: it is in the Warning table, and the NTFF's timing is still decoded
    // (pairing.md §1), without NEFF names.
    let w = t.concat("Warning").unwrap();
    assert!(strs(&w, "message")
        .iter()
        .flatten()
        .any(|m| m.contains("baseline.neff")));
    assert!(t.rows("Instruction") > 0);
    assert_eq!(t.rows("NeffHeader"), 0);
}

#[test]
fn corrupted_captures_never_panic() {
    let demo = neuronscope::synth::demo_capture().unwrap();
    let real = [
        "allenkchau-trainium-kernel-fusion/profiling/artifacts/fused_bf16_s512/fused_exec_2.ntff",
        "allenkchau-trainium-kernel-fusion/profiling/artifacts/fused_bf16_s512/fused.neff",
    ];
    let mut captures = vec![demo.clone()];
    captures.push(
        real.iter()
            .map(|p| {
                (
                    format!("r/{}", p.rsplit('/').next().unwrap()),
                    std::fs::read(samples().join(p)).unwrap(),
                )
            })
            .collect(),
    );
    let mut rng = mutate::Xorshift(0x9E37_79B9_7F4A_7C15);
    let mut runs = 0;
    for cap in &captures {
        for victim in 0..cap.len() {
            for round in 0..40 {
                let mut files = cap.clone();
                let bytes = &mut files[victim].1;
                let len = bytes.len() as u64;
                match round % 4 {
                    0 => bytes.truncate((rng.next() % len.max(1)) as usize),
                    1 | 2 => {
                        for _ in 0..1 + round / 4 {
                            let i = (rng.next() % len.max(1)) as usize;
                            if let Some(b) = bytes.get_mut(i) {
                                *b ^= 1 << (rng.next() % 8);
                            }
                        }
                    }
                    _ => {
                        // corrupt the headers, where lengths and offsets live
                        let i = (rng.next() % 1200.min(len.max(1))) as usize;
                        if let Some(b) = bytes.get_mut(i) {
                            *b = rng.next() as u8;
                        }
                    }
                }
                let files: Rc<Vec<(String, Vec<u8>)>> = Rc::new(files);
                let f2 = files.clone();
                let open = move |p: &str| -> Result<Box<dyn ByteSource>> {
                    let b = f2
                        .iter()
                        .find(|(n, _)| n == p)
                        .map(|(_, b)| b.clone())
                        .unwrap_or_default();
                    Ok(Box::new(b))
                };
                let list: Vec<(String, u64)> = files
                    .iter()
                    .map(|(n, b)| (n.clone(), b.len() as u64))
                    .collect();
                let inv = inventory::build(&list, &open);
                for p in &inv.profiles {
                    for i in 0..p.devices.len() {
                        let mut t = Tables::default();
                        profile::process_device(&inv, &p.id, i, &open, &mut t, &mut |_, _, _| {})
                            .unwrap();
                        runs += 1;
                    }
                }
            }
        }
    }
    println!("corrupted_captures_never_panic: {runs} device profiles processed");
    assert!(runs > 100);
}

/// Decoding with the Parquet encoder on a second thread (`sink::pipelined`) that encodes the
/// column chunks on two threads (`with_threads(2)`), and as `convert` does on several cores
/// (the DMA side on two threads, `DmaPacket` on a writer thread of its own,
/// `sink::pipelined_by`), writes byte-identical files to the one-thread path, on a real v6
/// capture and on the KevGomes System+Device capture (DMA-heavy, with DGE notifications).
#[test]
fn pipelined_parquet_equals_one_thread() {
    use neuronscope::sink::{self, ParquetSink};
    let dirs = [
        samples().join("allenkchau-trainium-kernel-fusion/profiling/artifacts/fused_bf16_s512"),
        samples().join("KevGomes-nki-moe-megakernel/output/i-0af76a70a6d3864dd_pid_713479"),
    ];
    let mut compared = 0;
    for dir in dirs {
        let (inv, base) = scan(&dir);
        let open = |p: &str| -> Result<Box<dyn ByteSource>> {
            Ok(Box::new(FileSource::open(&base.join(p))?))
        };
        for p in &inv.profiles {
            for (i, d) in p.devices.iter().enumerate() {
                if d.ntff.is_none() {
                    continue;
                }
                let mut one = ParquetSink::new(|_t: &str| Ok(Vec::<u8>::new()));
                profile::process_device(&inv, &p.id, i, &open, &mut one, &mut |_, _, _| {})
                    .unwrap();
                let mut two = ParquetSink::new(|_t: &str| Ok(Vec::<u8>::new())).with_threads(2);
                sink::pipelined(&mut two, |s| {
                    profile::process_device(&inv, &p.id, i, &open, s, &mut |_, _, _| {})
                })
                .unwrap();
                let shared = |p: &str| -> Result<Box<dyn ByteSource + Sync>> {
                    Ok(Box::new(FileSource::open(&base.join(p))?))
                };
                let dev = profile::DeviceOptions {
                    dma_open: Some(&shared as profile::SyncOpener<'_>),
                    ..Default::default()
                };
                let mut apart: Vec<_> = (0..2)
                    .map(|_| ParquetSink::new(|_t: &str| Ok(Vec::<u8>::new())))
                    .collect();
                sink::pipelined_by(&mut apart, sink::dma_packet_apart, |s| {
                    profile::process_device_with(&inv, &p.id, i, &open, s, &mut |_, _, _| {}, &dev)
                })
                .unwrap();
                let mut split = BTreeMap::new();
                for (k, s) in apart.into_iter().enumerate() {
                    let files = s.into_outputs().unwrap();
                    // The second writer had `DmaPacket` alone.
                    assert_eq!(
                        k == 1,
                        files.keys().all(|t| *t == "DmaPacket"),
                        "writer {k}: {:?}",
                        files.keys().collect::<Vec<_>>()
                    );
                    split.extend(files);
                }
                let one = one.into_outputs().unwrap();
                assert!(one.contains_key("DmaPacket"), "{}: no DmaPacket", d.name);
                for other in [two.into_outputs().unwrap(), split] {
                    assert_eq!(
                        one.keys().collect::<Vec<_>>(),
                        other.keys().collect::<Vec<_>>()
                    );
                    for (name, (bytes, rows)) in &one {
                        let (b2, r2) = &other[name];
                        assert_eq!(rows, r2, "{name} rows");
                        assert!(bytes == b2, "{}: {name}.parquet differs", d.name);
                        compared += 1;
                    }
                }
            }
        }
    }
    assert!(compared >= 40, "only {compared} tables compared");
}

/// Each table's Parquet file and rows.
type ParquetFiles = BTreeMap<&'static str, (Vec<u8>, u64)>;

/// How [`decode_device`] decodes.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Mode {
    /// Everything on the calling thread.
    OneThread,
    /// The DMA side on two more threads (`ntff::decode_split`).
    Threads,
    /// The page's two workers: [`profile::begin_device`] without the DMA side,
    /// [`profile::dma_side_device`] into a sink of its own (the other worker's store, its
    /// level-of-detail summaries handed over as bytes), then [`profile::finish_device`] with its
    /// result; where `dma_side` refuses (v4/v5), the finish decodes the DMA side itself, as the
    /// page does when the other worker fails.
    Workers,
    /// [`Mode::Workers`] whose other worker failed: the finish decodes the DMA side.
    WorkersFallback,
    /// [`Mode::Workers`] pipelined as the page does it when it may (www/src/client.ts
    /// `splitDecode`): the first half's `Instruction` batches and every batch of the finish cross to the other
    /// worker's Parquet writer as IPC streams (`sink::pipe_encode`, `sink::PipeReader`).
    WorkersPiped,
}

/// A profile's level-of-detail summaries by track (kind, core, name): the track as listed
/// (without its id) and its buckets over the whole profile (`Lod::query`, 512 buckets).
fn lod_digest(lod: &neuronscope::lod::Lod) -> BTreeMap<String, (String, Vec<u64>)> {
    let l = lod.listing();
    l.tracks
        .iter()
        .map(|t| {
            let mut info = serde_json::to_value(t).unwrap();
            info.as_object_mut().unwrap().remove("id");
            let q = lod.query(&[t.id], l.start, l.end, 512);
            // Layout `[id, width, first, m]` then m × QUERY_FIELDS with `dom` at 3: the id and
            // the dominant-name codes differ between dictionaries, so the names stand for them.
            let mut buckets: Vec<u64> = q[1..4].iter().map(|v| v.to_bits()).collect();
            let mut doms = Vec::new();
            for b in q[4..].chunks(neuronscope::lod::QUERY_FIELDS) {
                for (k, v) in b.iter().enumerate() {
                    if k == 3 {
                        doms.push(if *v < 0.0 {
                            String::new()
                        } else {
                            l.names.get(*v as usize).cloned().unwrap_or_default()
                        });
                    } else {
                        buckets.push(v.to_bits());
                    }
                }
            }
            let doms = doms.join(",");
            (
                format!("{:?} {} {}", t.kind, t.pcore, t.name),
                (format!("{info} {doms}"), buckets),
            )
        })
        .collect()
}

/// Tables, Parquet bytes, Summary facts, problems and level-of-detail summaries of one device
/// decoded into in-memory Parquet in `mode`.
/// The decoding worker's sink of [`Mode::WorkersPiped`]: while `piping`, each batch crosses to
/// `remote` as the page's workers hand it over (an IPC stream, decoded on the table's schema);
/// else it goes to `local`.
struct Route<'a, R: TableSink, L: TableSink> {
    piping: &'a std::cell::Cell<bool>,
    /// Only this table crosses (the first half pipes `Instruction` alone; the finish, all).
    only: &'a std::cell::Cell<Option<&'static str>>,
    remote: &'a mut R,
    local: &'a mut L,
    reader: neuronscope::sink::PipeReader,
}

impl<R: TableSink, L: TableSink> TableSink for Route<'_, R, L> {
    fn batch(
        &mut self,
        def: &'static neuronscope::tables::TableDef,
        batch: arrow_array::RecordBatch,
    ) -> Result<()> {
        if !self.piping.get() || self.only.get().is_some_and(|t| t != def.name) {
            return self.local.batch(def, batch);
        }
        let bytes = neuronscope::sink::pipe_encode(&batch)?;
        let (def2, batches) = self.reader.decode(def.name, bytes)?;
        assert!(std::ptr::eq(def, def2), "{}: the same table", def.name);
        for b in batches {
            self.remote.batch(def2, b)?;
        }
        Ok(())
    }
}

fn decode_device(
    inv: &Inventory,
    base: &Path,
    profile_id: &str,
    device: usize,
    mode: Mode,
) -> (ParquetFiles, String, String, String) {
    use neuronscope::lod::LodCollector;
    use neuronscope::sink::ParquetSink;
    let open =
        |p: &str| -> Result<Box<dyn ByteSource>> { Ok(Box::new(FileSource::open(&base.join(p))?)) };
    let shared = |p: &str| -> Result<Box<dyn ByteSource + Sync>> {
        Ok(Box::new(FileSource::open(&base.join(p))?))
    };
    let opts = profile::DeviceOptions {
        dma_open: (mode == Mode::Threads).then_some(&shared as profile::SyncOpener<'_>),
        dma_elsewhere: matches!(
            mode,
            Mode::Workers | Mode::WorkersFallback | Mode::WorkersPiped
        ),
    };
    let mut parquet = ParquetSink::new(|_t: &str| Ok(Vec::<u8>::new()));
    let mut piped_parquet = ParquetSink::new(|_t: &str| Ok(Vec::<u8>::new()));
    let piping = std::cell::Cell::new(mode == Mode::WorkersPiped);
    let only = std::cell::Cell::new(Some("Instruction"));
    let mut route = Route {
        piping: &piping,
        only: &only,
        remote: &mut piped_parquet,
        local: &mut parquet,
        reader: Default::default(),
    };
    let mut sink = LodCollector::new(&mut route);
    let mut last = (0, 0);
    let mut progress = |stage: &str, done, total| {
        if stage == "NTFF" {
            last = (done, total);
        }
    };
    let pending = profile::begin_device(
        inv,
        profile_id,
        device,
        &open,
        &mut sink,
        &mut progress,
        &opts,
    )
    .unwrap();
    let mut other_parquet = ParquetSink::new(|_t: &str| Ok(Vec::<u8>::new()));
    let mut other = LodCollector::new(&mut other_parquet);
    only.set(None);
    let side = match (mode, pending.ntff()) {
        (Mode::Workers | Mode::WorkersPiped, Some(ntff)) => {
            let mut seen = (0, 0);
            let f = profile::dma_side_device(
                inv,
                profile_id,
                device,
                &open,
                &mut other,
                &mut |_, d, t| seen = (d, t),
            );
            if f.is_ok() {
                assert_eq!(
                    seen.0, seen.1,
                    "{ntff}: DMA-side progress reaches its total"
                );
            }
            // Crosses between workers as JSON text, the summaries as bytes.
            if f.is_ok() {
                sink.lod.absorb(&other.lod.to_bytes()).unwrap();
            }
            f.ok()
                .map(|f| profile::DmaSideResult::from_json(&f.to_json()).unwrap())
        }
        _ => None,
    };
    assert_eq!(
        pending.needs_dma_side(),
        opts.dma_elsewhere && pending.ntff().is_some()
    );
    let r = profile::finish_device(pending, side, &open, &mut sink, &mut progress).unwrap();
    // The time-ordered DMA pass counts too: no "100 %" long before the end.
    if r.problems.iter().all(|p| p.severity != Severity::Error) {
        assert_eq!(last.0, last.1, "{profile_id}: progress reaches the total");
    }
    let mut lod = sink.lod;
    lod.finish(Some(0));
    let mut tables = parquet.into_outputs().unwrap();
    let piped = piped_parquet.into_outputs().unwrap();
    assert_eq!(
        mode == Mode::WorkersPiped,
        !piped.is_empty(),
        "{profile_id}: the pipelined writer has the first half's tables"
    );
    for (name, t) in other_parquet
        .into_outputs()
        .unwrap()
        .into_iter()
        .chain(piped)
    {
        assert!(
            tables.insert(name, t).is_none(),
            "{name} written by both workers"
        );
    }
    (
        tables,
        serde_json::to_string(&r.summary).unwrap(),
        format!("{:?}", r.problems),
        format!("{:?}", lod_digest(&lod)),
    )
}

/// The split decode (`ntff::decode_split`: DmaPacket rows on one thread, the time-ordered DMA
/// pass on another, instructions on the caller's) and the page's two-worker decode
/// ([`Mode::Workers`], with and without the other worker's facts) write byte-identical Parquet,
/// the same Summary facts and the same problems in the same order as the one-thread decode: on a real
/// v6 capture, the DMA-heavy KevGomes capture, v5 inf2 captures, the two-core synthetic demo,
/// and a KevGomes NTFF cut in its DMA buffers (problems from the DMA side between the others).
#[test]
fn split_decode_equals_one_thread() {
    let tmp = std::env::temp_dir().join(format!("nscope-split-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    // The demo capture (two physical cores).
    let demo = tmp.join("demo");
    for (path, bytes) in neuronscope::synth::demo_capture().unwrap() {
        let p = demo.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
    // KevGomes with its NTFF cut at 70 % (inside the DMA buffers).
    let kev = samples().join("KevGomes-nki-moe-megakernel/output/i-0af76a70a6d3864dd_pid_713479");
    let cut = tmp.join("cut");
    std::fs::create_dir_all(&cut).unwrap();
    for f in ["neff_171450338541704.neff", "profile_exec_2.ntff"] {
        let b = std::fs::read(kev.join(f)).unwrap();
        let n = if f.ends_with(".ntff") {
            b.len() * 7 / 10
        } else {
            b.len()
        };
        std::fs::write(cut.join(f), &b[..n]).unwrap();
    }
    let dirs = [
        samples().join("allenkchau-trainium-kernel-fusion/profiling/artifacts/fused_bf16_s512"),
        kev,
        samples().join("AnchovyPark-npu_profiling_code/matmul/neuron_profile_results"),
        demo,
        cut.clone(),
    ];
    let (mut compared, mut devices, mut cut_problems, mut dma_tracks) = (0, 0, 0, 0);
    // NTFFs whose DMA share was checked: (the demo, KevGomes).
    let mut shares = (0, 0);
    for dir in &dirs {
        let (inv, base) = scan(dir);
        for p in &inv.profiles {
            for (i, d) in p.devices.iter().enumerate() {
                if d.ntff.is_none() {
                    continue;
                }
                let (t1, s1, p1, l1) = decode_device(&inv, &base, &p.id, i, Mode::OneThread);
                for mode in [
                    Mode::Threads,
                    Mode::Workers,
                    Mode::WorkersFallback,
                    Mode::WorkersPiped,
                ] {
                    let (t2, s2, p2, l2) = decode_device(&inv, &base, &p.id, i, mode);
                    assert_eq!(
                        t1.keys().collect::<Vec<_>>(),
                        t2.keys().collect::<Vec<_>>(),
                        "{} {mode:?}",
                        d.name
                    );
                    for (name, (bytes, rows)) in &t1 {
                        let (b2, r2) = &t2[name];
                        assert_eq!(rows, r2, "{} {mode:?}: {name} rows", d.name);
                        assert!(bytes == b2, "{} {mode:?}: {name}.parquet differs", d.name);
                        compared += 1;
                    }
                    assert_eq!(s1, s2, "{} {mode:?}: summary", d.name);
                    assert_eq!(p1, p2, "{} {mode:?}: problems", d.name);
                    assert!(
                        l1 == l2,
                        "{} {mode:?}: level-of-detail summaries differ",
                        d.name
                    );
                    dma_tracks += l1.matches("\"Dma ").count();
                }
                if *dir == cut {
                    cut_problems += p1.matches("Problem {").count();
                }
                // The page pipelines only where the DMA side is small (wasm.rs
                // PIPE_MAX_DMA_SHARE 0.25): the demo's instruction-dense mix is, the v6 samples'
                // DMA-heavy mix is not.
                let src = FileSource::open(&base.join(d.ntff.as_ref().unwrap())).unwrap();
                if let Some(info) = neuronscope::ntff::read_info(&src).unwrap() {
                    let share = neuronscope::ntff::dma::dma_share(&info);
                    if d.name == "matmul_demo_exec_2" {
                        assert!(share < 0.25, "{}: DMA share {share}", d.name);
                        shares.0 += 1;
                    } else if dir.ends_with("i-0af76a70a6d3864dd_pid_713479") {
                        assert!(share > 0.5, "{}: DMA share {share}", d.name);
                        shares.1 += 1;
                    }
                }
                devices += 1;
            }
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    eprintln!(
        "split: {devices} devices, {compared} tables, {cut_problems} problems on the cut NTFF"
    );
    assert_eq!(
        shares,
        (1, 1),
        "the DMA share checked on the demo and on KevGomes"
    );
    assert!(devices >= 8, "only {devices} devices");
    assert!(compared >= 180, "only {compared} tables compared");
    // The DMA queue tracks (built by the other worker in `Mode::Workers`) were compared.
    assert!(dma_tracks >= 30, "{dma_tracks} DMA tracks compared");
    // The cut file must have exercised the problem merge.
    assert!(cut_problems >= 2, "{cut_problems} problems on the cut NTFF");
}
