//! Instruction attribution against AWS's JSON exports (ntff.md §7.3, neff.md §9 – §10).
//!
//! Oracles: the 7 allenkchau triples (NEFF + NTFF + `json_reports/*_profile_full.json`); every
//! exported instruction row that carries a BIR name (1 976 rows) is compared field by field.
//! KevGomes: the three NEFFs with NKI kernel debug info and their paired NTFFs. Run with
//! `--nocapture` to see the match rates.

mod common;
#[path = "common/mutate.rs"]
mod mutate;
use common::samples;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{Array, Int64Array, RecordBatch, StringArray};
use neuronscope::neff::{self, debug, OpenOptions};
use neuronscope::ntff::{self, DecodeContext};
use neuronscope::source::FileSource;
use neuronscope::tables::Tables;
use serde_json::Value;

fn index() -> Vec<Vec<String>> {
    let root = samples();
    let idx = std::fs::read_to_string(root.join("INDEX.tsv")).expect("read INDEX.tsv");
    idx.lines()
        .skip(1)
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

/// (neff, ntff, json) of the allenkchau triples: the NEFF sits in the NTFF's folder.
fn triples() -> Vec<(PathBuf, PathBuf, PathBuf)> {
    let root = samples();
    let mut out = Vec::new();
    for c in index() {
        if c.len() < 8 || !c[0].starts_with("allenkchau") || c[2] != "NTFF" || c[7].is_empty() {
            continue;
        }
        let ntff = root.join(&c[0]).join(&c[1]);
        let json = root.join(&c[0]).join(c[7].split(' ').next().unwrap_or(""));
        let dir = ntff.parent().unwrap().to_path_buf();
        let neff = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| p.extension().is_some_and(|x| x == "neff"))
            .unwrap_or_else(|| panic!("no NEFF next to {}", ntff.display()));
        out.push((neff, ntff, json));
    }
    assert_eq!(out.len(), 7, "expected the 7 allenkchau triples");
    out
}

/// (neff, ntff) pairs from INDEX.tsv's `ntff_pairs_with_neff` column under `source`.
fn pairs(source: &str) -> Vec<(PathBuf, PathBuf)> {
    let root = samples();
    index()
        .into_iter()
        .filter(|c| c.len() > 6 && c[0].starts_with(source) && c[2] == "NTFF" && !c[6].is_empty())
        .map(|c| (root.join(&c[0]).join(&c[6]), root.join(&c[0]).join(&c[1])))
        .collect()
}

fn load_debug(p: &Path) -> debug::NeffDebug {
    let src = FileSource::open(p).unwrap_or_else(|e| panic!("open {}: {e}", p.display()));
    let opts = OpenOptions {
        keep: Some(debug::keep_debug),
        ..Default::default()
    };
    let n = neff::open_with(&src, &opts).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let d = debug::load(&src, &n).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    // The one-pass and the two-pass ways give the same result.
    let n2 = neff::open(&src).unwrap();
    let d2 = debug::load(&src, &n2).unwrap();
    assert_eq!(d.subgraphs.len(), d2.subgraphs.len());
    assert_eq!(d.strings.len(), d2.strings.len(), "{}", p.display());
    d
}

fn decode(ntff_path: &Path, d: debug::NeffDebug) -> Tables {
    let src = FileSource::open(ntff_path).unwrap();
    let ctx = DecodeContext {
        file_name: ntff_path.display().to_string(),
        attribution: Some(Arc::new(d)),
        ..Default::default()
    };
    let mut t = Tables::default();
    ntff::decode(&src, &ctx, &mut t, &mut |_, _| {})
        .unwrap_or_else(|e| panic!("decode {}: {e}", ntff_path.display()));
    t
}

fn col<'a>(b: &'a RecordBatch, n: &str) -> &'a dyn Array {
    b.column_by_name(n)
        .unwrap_or_else(|| panic!("no column {n}"))
        .as_ref()
}

fn s_at(b: &RecordBatch, n: &str, i: usize) -> Option<String> {
    let a = col(b, n).as_any().downcast_ref::<StringArray>().unwrap();
    (!a.is_null(i)).then(|| a.value(i).to_string())
}

fn i_at(b: &RecordBatch, n: &str, i: usize) -> Option<i64> {
    let a = col(b, n).as_any().downcast_ref::<Int64Array>().unwrap();
    (!a.is_null(i)).then(|| a.value(i))
}

/// Our attribution per (subgraph, track name, pc): field → value.
type Ours = HashMap<(String, String, i64), BTreeMap<&'static str, Option<String>>>;

const STR_FIELDS: [&str; 7] = [
    "bir_instruction_name",
    "bir_id",
    "penguin_id",
    "hlo_name",
    "layer",
    "kernel_instruction_name",
    "nki_source_location",
];
const INT_FIELDS: [&str; 4] = ["raw_bir_id", "raw_penguin_id", "compiler_pc", "raw_hlo_id"];

fn ours(t: &Tables) -> Ours {
    let b = t.concat("Instruction").expect("Instruction table");
    let mut m = Ours::new();
    let engine_track = |e: &str| match e {
        "tensor" => "Tensor",
        "scalar" => "Scalar",
        "gpsimd" => "GpSimd",
        "vector" => "Vector",
        _ => "Sync",
    };
    for i in 0..b.num_rows() {
        let key = (
            s_at(&b, "nscope_subgraph", i).unwrap_or_default(),
            engine_track(&s_at(&b, "engine", i).unwrap_or_default()).to_string(),
            i_at(&b, "pc", i).unwrap_or(-1),
        );
        let mut f = BTreeMap::new();
        for n in STR_FIELDS {
            f.insert(n, s_at(&b, n, i));
        }
        for n in INT_FIELDS {
            f.insert(n, i_at(&b, n, i).map(|v| v.to_string()));
        }
        m.insert(key, f);
    }
    m
}

fn jtext(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

#[test]
fn allenkchau_bir_names_match_the_exports() {
    let mut tot: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    let mut rows = 0u64;
    let mut unnamed_with_name = 0u64;
    let mut unnamed_rows = 0u64;
    let mut cpc0 = (0u64, 0u64);
    let mut multi = (0u64, 0u64);
    for (neff_p, ntff_p, json_p) in triples() {
        let d = load_debug(&neff_p);
        assert!(
            d.warnings.is_empty(),
            "{}: {:?}",
            neff_p.display(),
            d.warnings
        );
        for sg in &d.subgraphs {
            for ed in sg.engines.iter().flatten() {
                for f in ed.asm.iter().chain(ed.backend.iter()) {
                    multi.0 += f.records.len() as u64;
                    multi.1 += f.records.iter().filter(|r| f.parents(r).len() > 1).count() as u64;
                }
            }
        }
        let t = decode(&ntff_p, d);
        let ours = ours(&t);
        let j: Value = serde_json::from_slice(&std::fs::read(&json_p).unwrap()).unwrap();
        for r in j["instruction"].as_array().unwrap() {
            let key = (
                jtext(r.get("subgraph")).unwrap_or_default(),
                jtext(r.get("subgroup")).unwrap_or_default(),
                r["pc"].as_i64().unwrap(),
            );
            let o = ours
                .get(&key)
                .unwrap_or_else(|| panic!("{}: no row for {key:?}", ntff_p.display()));
            let named = jtext(r.get("bir_instruction_name")).is_some_and(|s| !s.is_empty());
            if !named {
                unnamed_rows += 1;
                if o["bir_instruction_name"].is_some() {
                    unnamed_with_name += 1;
                }
                // The copy of NEFF slot 0 (runtime slot o − 1): export compiler_pc 0.
                if let Some(c) = jtext(r.get("compiler_pc")) {
                    cpc0.0 += 1;
                    if o["compiler_pc"].as_deref() == Some(c.as_str()) {
                        cpc0.1 += 1;
                    } else if cpc0.0 - cpc0.1 <= 6 {
                        eprintln!(
                            "compiler_pc {key:?}: export {c} ours {:?}",
                            o["compiler_pc"]
                        );
                    }
                }
                continue;
            }
            rows += 1;
            for f in STR_FIELDS.iter().chain(INT_FIELDS.iter()) {
                let theirs = jtext(r.get(*f));
                // Export writes "" / "Unknown" / absent for unknown values; we write null.
                let theirs = theirs.filter(|s| !s.is_empty() && s != "Unknown");
                let e = tot.entry(f).or_default();
                e.0 += 1;
                if o[f] == theirs {
                    e.1 += 1;
                } else if e.0 - e.1 <= 3 {
                    eprintln!("{f}: {key:?} export {theirs:?} ours {:?}", o[f]);
                }
            }
        }
    }
    eprintln!(
        "asm+backend records: {}, with several parents: {}",
        multi.0, multi.1
    );
    eprintln!("named export rows: {rows}");
    for (f, (n, ok)) in &tot {
        eprintln!("  {f:<26} {ok:>5} / {n}");
    }
    eprintln!(
        "unnamed export rows: {unnamed_rows}; ours named among them: {unnamed_with_name}; \
         compiler_pc on them {} / {}",
        cpc0.1, cpc0.0
    );
    assert_eq!(rows, 1976, "rows with a BIR name (ntff.md §7.3)");
    for f in [
        "bir_instruction_name",
        "raw_bir_id",
        "bir_id",
        "penguin_id",
        "raw_penguin_id",
        "compiler_pc",
    ] {
        assert_eq!(tot[f], (rows, rows), "{f}");
    }
    assert_eq!(
        unnamed_with_name, 0,
        "rows outside the body carry no BIR name"
    );
    assert_eq!(cpc0.0, cpc0.1, "compiler_pc 0 on the copy of NEFF slot 0");
}

#[test]
fn kevgomes_kernel_tables_and_links() {
    let ps = pairs("KevGomes");
    assert_eq!(ps.len(), 3, "three KevGomes NEFF/NTFF pairs");
    for (neff_p, ntff_p) in ps {
        let d = load_debug(&neff_p);
        let k = d.kernel.clone().expect("kernel debug info");
        assert!(!k.insts.is_empty() && !k.frames.is_empty() && !k.iters.is_empty());
        let mut t = Tables::default();
        debug::write_debug_tables(&d, &mut t).unwrap();
        for n in [
            "KernelInstructions",
            "KernelStackFrames",
            "KernelIterationVariables",
        ] {
            assert!(t.rows(n) > 0, "{}: {n} empty", neff_p.display());
        }
        let kin: HashSet<String> = k
            .insts
            .iter()
            .map(|i| i.kernel_instruction_name.clone())
            .collect();
        let sf = d.stack_frames.clone();
        let mut multi = (0usize, 0usize);
        for f in d
            .subgraphs
            .iter()
            .flat_map(|s| s.engines.iter().flatten())
            .flat_map(|e| e.asm.iter().chain(e.backend.iter()))
        {
            multi.0 += f.records.len();
            multi.1 += f.records.iter().filter(|r| f.parents(r).len() > 1).count();
        }
        eprintln!(
            "  asm+backend records {}, with several parents {}",
            multi.0, multi.1
        );
        if let Some(s) = sf.as_ref().filter(|s| !s.frames.is_empty()) {
            assert_eq!(t.rows("StackFrame"), s.frames.len());
            assert_eq!(t.rows("StackFrameFileName"), s.file_names.len());
            assert!(t.rows("StackFrameFileLocation") > 0 && t.rows("StackFrameFunctionName") > 0);
            // Every frame points at an existing location, every parent at an earlier frame.
            for (i, &(loc, parent)) in s.frames.iter().enumerate() {
                assert!(loc >= 1 && loc as usize <= s.locations.len(), "frame {i}");
                assert!((parent as usize) <= s.frames.len(), "frame {i} parent");
            }
            for &(f, func, _) in &s.locations {
                assert!(f >= 1 && f as usize <= s.file_names.len());
                assert!(func >= 1 && func as usize <= s.function_names.len());
            }
        }
        let dt = decode(&ntff_p, d);
        let b = dt.concat("Instruction").unwrap();
        let (mut named, mut with_kin, mut linked, mut nki) = (0, 0, 0, 0);
        let mut upper: BTreeMap<&str, (u64, BTreeSet<String>)> = BTreeMap::new();
        for i in 0..b.num_rows() {
            if s_at(&b, "bir_instruction_name", i).is_some() {
                named += 1;
            }
            for f in [
                "hlo_name",
                "layer",
                "stack_frame_ids",
                "nki_source_location",
            ] {
                if let Some(v) = s_at(&b, f, i) {
                    let e = upper.entry(f).or_default();
                    e.0 += 1;
                    if e.1.len() < 3 {
                        e.1.insert(v);
                    }
                }
            }
            if s_at(&b, "nki_source_location", i).is_some() {
                nki += 1;
            }
            if let Some(n) = s_at(&b, "kernel_instruction_name", i) {
                with_kin += 1;
                if kin.contains(&n) {
                    linked += 1;
                } else if with_kin - linked <= 5 {
                    eprintln!(
                        "  unlinked: {n} (BIR {:?})",
                        s_at(&b, "bir_instruction_name", i)
                    );
                }
            }
        }
        eprintln!(
            "{}: {} rows, {named} with BIR name, {with_kin} with kernel_instruction_name, \
             {linked} link to KernelInstructions ({} rows), {nki} with nki_source_location; \
             frames {} iters {}; stack-frame index {:?}",
            ntff_p.display(),
            b.num_rows(),
            t.rows("KernelInstructions"),
            t.rows("KernelStackFrames"),
            t.rows("KernelIterationVariables"),
            sf.map(|s| (s.file_names.len(), s.frames.len()))
        );
        eprintln!("  upper levels (rows, examples): {upper:?}");
        assert!(named > 0, "attribution found no BIR names");
        assert!(linked > 0, "no instruction links to KernelInstructions");
    }
}

#[test]
fn corrupted_dbg_never_panics() {
    let (neff_p, _, _) = triples().into_iter().next().unwrap();
    let src = FileSource::open(&neff_p).unwrap();
    let opts = OpenOptions {
        keep: Some(debug::keep_debug),
        ..Default::default()
    };
    let n = neff::open_with(&src, &opts).unwrap();
    let good = debug::from_members(&n, &|m| n.kept.get(m).map(Vec::as_slice));
    assert!(good.warnings.is_empty());
    for (name, bytes) in &n.kept {
        for cut in mutate::offsets(bytes.len(), 7) {
            let mut s = debug::Interner::default();
            let _ = debug::parse_dbg(&bytes[..cut], name, &mut s);
            let flipped = mutate::edited(bytes, cut, |b| b ^ 0xA5);
            let _ = debug::parse_dbg(&flipped, name, &mut s);
            let kept: BTreeMap<String, Vec<u8>> = [(name.clone(), flipped)].into();
            let d = debug::from_members(&n, &|m| {
                kept.get(m).or_else(|| n.kept.get(m)).map(Vec::as_slice)
            });
            let mut t = Tables::default();
            debug::write_debug_tables(&d, &mut t).unwrap();
        }
    }
}

#[test]
fn corrupted_kernel_debug_never_panics() {
    let (neff_p, _) = pairs("KevGomes")
        .into_iter()
        .next()
        .expect("a KevGomes pair");
    let src = FileSource::open(&neff_p).unwrap();
    let opts = OpenOptions {
        keep: Some(debug::keep_debug),
        ..Default::default()
    };
    let n = neff::open_with(&src, &opts).unwrap();
    for (name, bytes) in &n.kept {
        let step = (bytes.len() / 24).max(1);
        for cut in mutate::offsets(bytes.len(), step) {
            let flipped = mutate::edited(bytes, cut, |b| b ^ 0x5A);
            for b in [flipped, bytes[..cut].to_vec()] {
                if name.contains(".dbg") {
                    let mut s = debug::Interner::default();
                    let _ = debug::parse_dbg(&b, name, &mut s);
                    continue;
                }
                // JSON members: the whole load and the Kernel* tables.
                let kept: BTreeMap<String, Vec<u8>> = [(name.clone(), b)].into();
                let d = debug::from_members(&n, &|m| {
                    kept.get(m).or_else(|| n.kept.get(m)).map(Vec::as_slice)
                });
                let mut t = Tables::default();
                debug::write_debug_tables(&d, &mut t).unwrap();
            }
        }
    }
}
