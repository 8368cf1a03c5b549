//! NEFF decoder against every sample NEFF (docs/format/README.md conformance tests 1–3, neff.md §0, §2,
//! §6, §7), the allenkchau JSON exports (`neff_header`, `neff_node`, semaphore ids), the synthetic
//! writer round trip, and garbage/truncated input.

mod common;
#[path = "common/mutate.rs"]
mod mutate;
use common::samples;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use arrow_array::{Array, Int64Array, StringArray};
use neuronscope::engine::Engine;
use neuronscope::neff::{self, write, HashCheck, OpenOptions};
use neuronscope::source::{FileSource, SliceSource};
use neuronscope::tables::Tables;
use serde_json::Value;

fn walk(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read_dir {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, ext, out);
        } else if p.extension().and_then(|e| e.to_str()) == Some(ext) {
            out.push(p);
        }
    }
}

fn all_neffs() -> Vec<PathBuf> {
    let mut v = Vec::new();
    walk(&samples(), "neff", &mut v);
    v
}

/// INDEX.tsv rows of kind NEFF: relative path → version column.
fn index_neffs() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(samples().join("INDEX.tsv")).unwrap();
    let mut m = BTreeMap::new();
    for line in text.lines().skip(1) {
        let c: Vec<&str> = line.split('\t').collect();
        if c.get(2) == Some(&"NEFF") {
            m.insert(format!("{}/{}", c[0], c[1]), c[5].to_string());
        }
    }
    m
}

fn rel(p: &Path) -> String {
    p.strip_prefix(samples())
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

fn keep_asm(n: &str) -> bool {
    n.contains("debug_info_asm_")
}

/// Records (field 3) in a `.dbg` file message (neff.md §9.1).
fn dbg_records(buf: &[u8]) -> u64 {
    let mut n = 0;
    for f in neuronscope::pb::fields(buf, 0) {
        let f = f.expect("asm .dbg parses as protobuf");
        if f.number == 3 {
            n += 1;
        }
    }
    n
}

#[test]
fn every_sample_neff_opens_and_conforms() {
    let files = all_neffs();
    let index = index_neffs();
    assert_eq!(files.len(), 84, "NEFFs found by walking the samples");
    let found: BTreeSet<String> = files.iter().map(|p| rel(p)).collect();
    let listed: BTreeSet<String> = index.keys().cloned().collect();
    assert_eq!(found, listed, "walked NEFFs = INDEX.tsv kind NEFF");

    let opts = OpenOptions {
        keep: Some(keep_asm),
        ..Default::default()
    };
    let mut versions = BTreeSet::new();
    let mut hash_by_version: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let (mut streams, mut slots, mut b1_first) = (0u64, 0u64, 0u64);
    let (mut subgraphs, mut members, mut joined) = (0usize, 0usize, 0usize);
    let mut gaps = (u64::MAX, 0u64);
    let mut ratios = (f64::MAX, 0f64);
    let mut warn_kinds: BTreeMap<String, usize> = BTreeMap::new();
    for p in &files {
        let src = FileSource::open(p).unwrap();
        let n = neff::open_with(&src, &opts).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let len = std::fs::metadata(p).unwrap().len();
        // Conformance 1: 1024 + data_size = length; one gzip member + padding; tar inside.
        assert_eq!(n.header.header_size, 1024, "{}", p.display());
        assert_eq!(1024 + n.header.data_size, len, "{}", p.display());
        assert_eq!(
            n.header.data_size % 10240,
            0,
            "{}: padded to 10240",
            p.display()
        );
        assert_eq!(n.payload, neff::PayloadKind::Gzip, "{}", p.display());
        let gz_end = n
            .gzip_end
            .expect("gzip member ends cleanly (CRC32/ISIZE checked)");
        let gap = len - gz_end;
        gaps = (gaps.0.min(gap), gaps.1.max(gap));
        let ratio = n.tar_size as f64 / n.header.data_size as f64;
        ratios = (ratios.0.min(ratio), ratios.1.max(ratio));
        for w in &n.warnings {
            *warn_kinds.entry(w.clone()).or_insert(0) += 1;
        }
        assert!(
            !n.warnings.iter().any(|w| w.contains("stopped early")),
            "{}: {:?}",
            p.display(),
            n.warnings
        );
        // Compiler version and target agree with INDEX.tsv.
        let cv = n.compiler_version.clone().expect("tool_version");
        let target = n.target.clone().expect("kelf target");
        assert_eq!(
            index[&rel(p)],
            format!("target={target} compiler={cv}"),
            "{}",
            p.display()
        );
        // Conformance 2: MD5, canonical for 2.0/2.16, word-swapped for 2.18–2.23.
        let want = if cv.starts_with("2.0.") || cv.starts_with("2.16.") {
            HashCheck::Canonical
        } else {
            HashCheck::WordSwapped
        };
        assert_eq!(n.hash_check, want, "{} ({cv})", p.display());
        hash_by_version
            .entry(cv.clone())
            .or_default()
            .insert(format!("{:?}", n.hash_check));
        versions.insert(cv);
        // lnc_size = number of kelf graphs; sunda 1, cayman 2.
        assert_eq!(n.kelf_files, vec!["kelf-0.json".to_string()]);
        assert_eq!(
            n.header.lnc_size as usize,
            n.subgraphs.len(),
            "{}",
            p.display()
        );
        assert_eq!(
            n.header.lnc_size,
            if target == "cayman" { 2 } else { 1 },
            "{}",
            p.display()
        );
        // Conformance 3: whole slots; slot count = asm .dbg records; slot 0 opcode 0xB1.
        for (i, sg) in n.subgraphs.iter().enumerate() {
            assert_eq!(sg.pcore_idx as usize, i);
            assert_eq!(sg.name, format!("sg{i:02}"));
            assert_eq!(sg.node, Some(sg.node.unwrap()), "__kelf node index found");
            let engines: Vec<Engine> = sg.engines.iter().map(|e| e.engine).collect();
            assert_eq!(engines, Engine::ALL.to_vec(), "{} {}", p.display(), sg.name);
            assert!(!sg.vars.is_empty() && !sg.tensors.is_empty());
            // Every input/output/weight var joins a tensor_map entry (neff.md §6.6).
            for v in &sg.vars {
                if neff::tables::tensor_type(&v.kind).is_some() {
                    let tm = neff::tables::tensor_map_entry(v, &sg.tensors);
                    let tm = tm.unwrap_or_else(|| panic!("{}: {} unjoined", p.display(), v.name));
                    assert_eq!(tm.tf_shape, tm.sim_shape, "{}", v.name);
                    joined += 1;
                }
            }
            for e in &sg.engines {
                assert_eq!(e.size % 64, 0, "{}", e.file);
                assert_eq!(e.opcodes.len() as u64, e.slot_count, "{}", e.file);
                assert_eq!(e.asm_dbg.len(), 1, "{}", e.file);
                let dbg = &n.kept[&e.asm_dbg[0]];
                assert_eq!(
                    dbg_records(dbg),
                    e.slot_count,
                    "{} {}: asm records = slots",
                    p.display(),
                    e.file
                );
                if e.opcodes.first() == Some(&0xB1) {
                    b1_first += 1;
                }
                streams += 1;
                slots += e.slot_count;
            }
            subgraphs += 1;
        }
        members += n.members.len();
    }
    println!(
        "{} NEFFs, {subgraphs} subgraphs, {members} members, {streams} engine streams, {slots} slots, {b1_first} start with 0xB1",
        files.len()
    );
    println!("hash check per compiler: {hash_by_version:?}");
    println!("{joined} input/output/weight vars joined to tensor_map.json");
    assert_eq!(joined, 689);
    println!(
        "zero padding after the gzip member: {} – {} bytes; tar/payload {:.1}× – {:.1}×",
        gaps.0, gaps.1, ratios.0, ratios.1
    );
    println!("warnings: {warn_kinds:?}");
    assert_eq!(gaps, (24, 10165), "padding range of neff.md §3.1");
    assert!(warn_kinds.is_empty(), "no warnings on the samples");
    assert_eq!(streams, 670, "engine streams (neff.md §7)");
    assert_eq!(b1_first, streams, "slot 0 opcode is 0xB1 in every stream");
    let want: BTreeSet<String> = [
        "2.0.99229.0a0+1897edc9",
        "2.16.345.0+69131dd3",
        "2.18.121.0+9e31e41a",
        "2.21.18209.0+043b1bf7",
        "2.23.6484.0+3b612583",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(versions, want, "the five compiler versions of neff.md §0");
}

/// The 7 allenkchau triples: NEFF + full JSON export.
fn allenkchau() -> Vec<(PathBuf, Value)> {
    let mut jsons = Vec::new();
    walk(
        &samples().join("allenkchau-trainium-kernel-fusion/profiling"),
        "json",
        &mut jsons,
    );
    let mut out = Vec::new();
    for j in jsons {
        if !j.to_string_lossy().ends_with("_profile_full.json") {
            continue;
        }
        let dir = j.parent().unwrap().parent().unwrap();
        let mut neffs = Vec::new();
        walk(dir, "neff", &mut neffs);
        assert_eq!(neffs.len(), 1, "{}", dir.display());
        let v: Value = serde_json::from_slice(&std::fs::read(&j).unwrap()).unwrap();
        out.push((neffs.remove(0), v));
    }
    assert_eq!(out.len(), 7, "allenkchau triples");
    out
}

fn col_str(t: &Tables, table: &str, col: &str) -> Vec<Option<String>> {
    let b = t.concat(table).unwrap();
    let i = b.schema().index_of(col).unwrap();
    let a = b.column(i).as_any().downcast_ref::<StringArray>().unwrap();
    (0..a.len())
        .map(|r| a.is_valid(r).then(|| a.value(r).to_string()))
        .collect()
}

fn col_i64(t: &Tables, table: &str, col: &str) -> Vec<Option<i64>> {
    let b = t.concat(table).unwrap();
    let i = b.schema().index_of(col).unwrap();
    let a = b.column(i).as_any().downcast_ref::<Int64Array>().unwrap();
    (0..a.len())
        .map(|r| a.is_valid(r).then(|| a.value(r)))
        .collect()
}

#[test]
fn neff_header_matches_json_exports() {
    for (p, v) in allenkchau() {
        let n = neff::open(&FileSource::open(&p).unwrap()).unwrap();
        let mut t = Tables::default();
        neff::write_tables(&n, &mut t).unwrap();
        assert_eq!(t.rows("NeffHeader"), 1);
        let x = &v["neff_header"][0];
        let s = |k: &str| Some(x[k].as_str().unwrap().to_string());
        let i = |k: &str| Some(x[k].as_str().unwrap().parse::<i64>().unwrap());
        let ctx = p.display();
        assert_eq!(col_str(&t, "NeffHeader", "uuid")[0], s("uuid"), "{ctx}");
        assert_eq!(col_str(&t, "NeffHeader", "hash")[0], s("hash"), "{ctx}");
        assert_eq!(
            col_i64(&t, "NeffHeader", "data_size")[0],
            i("data_size"),
            "{ctx}"
        );
        assert_eq!(
            col_i64(&t, "NeffHeader", "header_size")[0],
            i("header_size")
        );
        assert_eq!(
            col_i64(&t, "NeffHeader", "major_version")[0],
            i("major_version")
        );
        assert_eq!(
            col_i64(&t, "NeffHeader", "minor_version")[0],
            i("minor_version")
        );
        assert_eq!(
            col_str(&t, "NeffHeader", "network_name")[0],
            s("network_name")
        );
        assert_eq!(
            col_str(&t, "NeffHeader", "package_version")[0],
            s("package_version")
        );
        assert_eq!(
            col_str(&t, "NeffHeader", "build_version")[0],
            s("build_version")
        );
        assert_eq!(
            col_str(&t, "NeffHeader", "enabled_features")[0],
            s("enabled_features")
        );
        assert_eq!(
            col_i64(&t, "NeffHeader", "logical_neuroncore_count")[0],
            i("number_of_logical_neuroncores")
        );
        assert_eq!(
            col_i64(&t, "NeffHeader", "pcore_count_per_lnc")[0],
            i("number_of_neuroncores_per_lnc")
        );
    }
}

#[test]
fn tensor_info_matches_json_export_neff_node() {
    let mut rows_checked = 0;
    for (p, v) in allenkchau() {
        let n = neff::open(&FileSource::open(&p).unwrap()).unwrap();
        let mut t = Tables::default();
        neff::write_tables(&n, &mut t).unwrap();
        // Export: node header rows (node, sg_name) and tensor rows (sg_name "").
        let nodes: Vec<&Value> = v["neff_node"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["variable_name"] != "")
            .collect();
        let sg_nodes: Vec<(String, String)> = v["neff_node"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["variable_name"] == "")
            .map(|r| {
                (
                    r["sg_name"].as_str().unwrap().to_string(),
                    r["node"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        let ours: Vec<(String, String)> = n
            .subgraphs
            .iter()
            .map(|s| (s.name.clone(), s.node.unwrap().to_string()))
            .collect();
        assert_eq!(ours, sg_nodes, "{}: subgraph node rows", p.display());
        let names = col_str(&t, "TensorInfo", "variable_name");
        let types = col_str(&t, "TensorInfo", "type");
        let formats = col_str(&t, "TensorInfo", "format");
        let shapes = col_str(&t, "TensorInfo", "shape");
        let sizes = col_i64(&t, "TensorInfo", "size");
        let node = col_i64(&t, "TensorInfo", "node");
        let pc = col_i64(&t, "TensorInfo", "pcore_idx");
        assert_eq!(names.len(), nodes.len(), "{}: TensorInfo rows", p.display());
        for (k, r) in nodes.iter().enumerate() {
            let s = |key: &str| Some(r[key].as_str().unwrap().to_string());
            assert_eq!(names[k], s("variable_name"), "{} row {k}", p.display());
            assert_eq!(types[k], s("type"), "{} row {k}", p.display());
            assert_eq!(formats[k], s("format"), "{} row {k}", p.display());
            assert_eq!(shapes[k], s("shape"), "{} row {k}", p.display());
            assert_eq!(
                sizes[k],
                Some(r["size"].as_str().unwrap().parse().unwrap()),
                "{} row {k}",
                p.display()
            );
            assert_eq!(node[k], Some(3));
            assert_eq!(pc[k], Some(0));
            rows_checked += 1;
        }
        // DmaQueuesInfo: NEFF queues, named as the export names them.
        let qnames: BTreeSet<String> = col_str(&t, "DmaQueuesInfo", "name")
            .into_iter()
            .flatten()
            .collect();
        let exported: BTreeSet<String> = v["dma_queues_info"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["q_name"].as_str().unwrap().to_string())
            .collect();
        assert!(
            qnames.is_subset(&exported),
            "{}: {qnames:?} ⊄ {exported:?}",
            p.display()
        );
        assert!(!qnames.is_empty());
    }
    println!("TensorInfo: {rows_checked} rows equal the exports' neff_node tensor rows");
    assert_eq!(rows_checked, 38);
}

#[test]
fn semaphore_names_match_json_export_ids() {
    let (mut named, mut bare) = (0, 0);
    for (p, v) in allenkchau() {
        let n = neff::open(&FileSource::open(&p).unwrap()).unwrap();
        let by_sg: BTreeMap<&str, BTreeMap<u32, String>> = n
            .subgraphs
            .iter()
            .map(|s| (s.name.as_str(), s.semaphore_names()))
            .collect();
        let mut seen = BTreeSet::new();
        for r in v["semaphore_update"].as_array().unwrap() {
            let sg = r["subgraph"].as_str().unwrap();
            let id = r["id"].as_str().unwrap();
            if !seen.insert((sg.to_string(), id.to_string())) {
                continue;
            }
            let names = &by_sg[sg];
            if let Ok(k) = id.parse::<u32>() {
                assert!(
                    !names.contains_key(&k),
                    "{}: bare id {k} is a queue",
                    p.display()
                );
                bare += 1;
            } else {
                let (num, label) = id
                    .strip_prefix("S[")
                    .and_then(|s| s.split_once("] ("))
                    .unwrap();
                let k: u32 = num.parse().unwrap();
                let label = label.trim_end_matches(')');
                if (3..=6).contains(&k) {
                    // Engine semaphores come from the runtime (ntff.md §4.3).
                    assert!(!names.contains_key(&k));
                    continue;
                }
                assert_eq!(
                    names.get(&k).map(String::as_str),
                    Some(label),
                    "{} {sg} {id}",
                    p.display()
                );
                named += 1;
            }
        }
    }
    println!("semaphore ids: {named} queue-named ids reproduced, {bare} bare ids not named");
    assert!(named > 0 && bare > 0);
}

#[test]
fn nkipy_large_sizes_survive() {
    let p = samples().join("nkipy/spike/tests/artifacts/matmul_large.neff");
    let n = neff::open(&FileSource::open(&p).unwrap()).unwrap();
    let max = n
        .subgraphs
        .iter()
        .flat_map(|s| s.vars.iter())
        .filter_map(|v| v.size)
        .max()
        .unwrap();
    assert_eq!(max, 4_294_967_296, "4 GiB variable (neff.md §6)");
    let mut t = Tables::default();
    neff::write_tables(&n, &mut t).unwrap();
    let sizes = col_i64(&t, "TensorInfo", "size");
    println!("matmul_large TensorInfo sizes: {sizes:?}");
    assert_eq!(n.header.feature_bits & 0xC00, 0xC00);
    let queues: Vec<&str> = n.subgraphs[0]
        .dma_queues
        .iter()
        .map(|q| q.kind.as_str())
        .collect();
    assert!(queues.contains(&"dynamic"), "{queues:?}");
}

#[test]
fn kevgomes_neffs_parse() {
    let mut files = Vec::new();
    walk(
        &samples().join("KevGomes-nki-moe-megakernel"),
        "neff",
        &mut files,
    );
    assert_eq!(files.len(), 3);
    for p in files {
        let n = neff::open(&FileSource::open(&p).unwrap()).unwrap();
        assert_eq!(n.subgraphs.len(), 2, "{}", p.display());
        assert!(
            n.member("kernel_debug_info.json").is_some(),
            "{}",
            p.display()
        );
        let kdi = neff::read_member(
            &FileSource::open(&p).unwrap(),
            &n,
            "kernel_debug_info.json",
            1 << 20,
        )
        .unwrap();
        let v: Value = serde_json::from_slice(&kdi).unwrap();
        let f = v["debug_info_files"][0]["file_name"].as_str().unwrap();
        assert!(n.member(f).is_some(), "{f} is a member");
        println!(
            "{}: {} members, {} tar bytes, streams {:?}",
            rel(&p),
            n.members.len(),
            n.tar_size,
            n.subgraphs[0]
                .engines
                .iter()
                .map(|e| e.slot_count)
                .collect::<Vec<_>>()
        );
    }
}

fn demo_spec() -> write::NeffSpec {
    use neff::{DmaQueue, TensorMapEntry, Var};
    let sg = |extra: u8| write::SubgraphSpec {
        engines: vec![
            (Engine::Pe, vec![0xB1, 0xCC, 0x42, 0x42, extra]),
            (Engine::Act, vec![0xB1, 0xCC]),
            (Engine::Sp, vec![0xB1]),
        ],
        vars: vec![
            Var {
                name: "input0".into(),
                kind: "input".into(),
                var_id: Some(1),
                size: Some(1 << 33),
                ..Default::default()
            },
            Var {
                name: "w_sg0000".into(),
                kind: "file".into(),
                var_id: Some(2),
                size: Some(4096),
                file_name: Some("value_w.npy".into()),
                ..Default::default()
            },
        ],
        dma_queues: vec![DmaQueue {
            name: "qSPDynamicHW".into(),
            kind: "dynamic".into(),
            owner: Some("sp".into()),
            num_queues: Some(2),
            semaphore_set: vec![24, 25],
        }],
        tensors: vec![
            TensorMapEntry {
                name: "input0".into(),
                kind: Some("input".into()),
                dtype: Some("bfloat16".into()),
                tf_format: Some("NC".into()),
                tf_shape: vec![128, 1 << 25],
                sim_shape: vec![128, 1 << 25],
                ..Default::default()
            },
            TensorMapEntry {
                name: "sg0000_w_CRSM".into(),
                is_const: Some(true),
                tf_format: Some("CRSM".into()),
                tf_shape: vec![32, 32, 1, 1],
                tf_file: Some("value_w.npy".into()),
                ..Default::default()
            },
        ],
    };
    write::NeffSpec {
        name: "demo.neff".into(),
        subgraphs: vec![sg(1), sg(2)],
        extra_members: vec![("sg00/value_w.npy".into(), vec![7u8; 4096])],
        ..Default::default()
    }
}

#[test]
fn synthetic_neff_round_trips() {
    let spec = demo_spec();
    let bytes = write::write_neff(&spec);
    let src = SliceSource(&bytes);
    assert!(neff::read_header(&src).is_ok());
    let n = neff::open(&src).unwrap();
    assert_eq!(n.hash_check, HashCheck::WordSwapped);
    assert_eq!(bytes.len() as u64, 1024 + n.header.data_size);
    assert_eq!(n.header.data_size % 10240, 0);
    assert_eq!(n.header.uuid, spec.uuid);
    assert_eq!(n.header.name, "demo.neff");
    assert_eq!(n.header.lnc_size, 2);
    assert_eq!(n.compiler_version.as_deref(), Some("2.23.6484.0+3b612583"));
    assert_eq!(n.target.as_deref(), Some("cayman"));
    assert_eq!(n.subgraphs.len(), 2);
    for (sg, want) in n.subgraphs.iter().zip(&spec.subgraphs) {
        for e in &sg.engines {
            let ops = want
                .engines
                .iter()
                .find(|(x, _)| *x == e.engine)
                .map(|(_, o)| o.clone())
                .unwrap_or_default();
            assert_eq!(e.opcodes, ops, "{}", e.file);
            assert_eq!(e.slot_count, ops.len() as u64);
        }
        assert_eq!(sg.vars, want.vars);
        assert_eq!(sg.dma_queues, want.dma_queues);
        assert_eq!(sg.semaphore_names()[&25], "qSyncDynamicHW");
        assert_eq!(sg.tensors.len(), 2);
        assert_eq!(sg.node, Some(1));
    }
    let mut t = Tables::default();
    neff::write_tables(&n, &mut t).unwrap();
    assert_eq!(
        col_str(&t, "TensorInfo", "shape"),
        vec![Some("[128 33554432]".into()), Some("[32 32 1 1]".into())]
    );
    assert_eq!(col_i64(&t, "TensorInfo", "size")[0], Some(1 << 33));
    assert_eq!(t.rows("DmaQueuesInfo"), 2);
    // Canonical hash variant and a raw-tar-free gzip; no warnings on our own output.
    let canon = write::write_neff(&write::NeffSpec {
        word_swapped_hash: false,
        ..demo_spec()
    });
    let n2 = neff::open(&SliceSource(&canon)).unwrap();
    assert_eq!(n2.hash_check, HashCheck::Canonical);
    assert!(
        n.warnings.iter().all(|w| !w.contains("stopped")),
        "{:?}",
        n.warnings
    );
}

#[test]
fn synthetic_archive_variants_round_trip() {
    let long = format!("debug_info/{}.dbg", "x".repeat(150));
    let mut base = demo_spec();
    base.extra_members.push((long.clone(), vec![1, 2, 3]));
    // Duplicate member: the last one wins (neff.md §3.2).
    base.extra_members.push((
        "info.json".into(),
        br##"{"tool_version": "9.9.9", "#comment": 1, "big": 18446744073709551615}"##.to_vec(),
    ));
    for (pax, gzip) in [(false, true), (true, true), (false, false), (true, false)] {
        let spec = write::NeffSpec {
            pax,
            gzip,
            ..base.clone()
        };
        let bytes = write::write_neff(&spec);
        let n = neff::open(&SliceSource(&bytes)).unwrap();
        let ctx = format!("pax={pax} gzip={gzip}");
        let kind = if gzip {
            neff::PayloadKind::Gzip
        } else {
            neff::PayloadKind::Tar
        };
        assert_eq!(n.payload, kind, "{ctx}");
        assert_eq!(n.member(&long).map(|m| m.size), Some(3), "{ctx}: long name");
        assert_eq!(n.compiler_version.as_deref(), Some("9.9.9"), "{ctx}");
        assert!(
            n.warnings
                .iter()
                .any(|w| w.contains("duplicate tar member info.json")),
            "{ctx}: {:?}",
            n.warnings
        );
        assert_eq!(n.subgraphs.len(), 2, "{ctx}");
        assert_eq!(
            n.subgraphs[1].engines[0].opcodes,
            vec![0xB1, 0xCC, 0x42, 0x42, 2]
        );
        assert_eq!(n.hash_check, HashCheck::WordSwapped, "{ctx}");
        let names: Vec<&str> = n.members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(
            names.iter().filter(|x| **x == "info.json").count(),
            1,
            "{ctx}: one index entry per name"
        );
    }
}

#[test]
fn names_resolve_through_kelf_and_def_json() {
    // 2.27-style names reported in neff.md §4 [INF]: a kelf pointing at an unusual definition
    // path (fetched by the second pass) whose engine files carry a `0` suffix.
    let slot = |op: u8| {
        let mut v = vec![0u8; 64];
        v[0] = op;
        v
    };
    let def = serde_json::json!({
        "pe_instr": "PE0.bin", "pe": "PE0.json", "act_instr": "Activation0.bin",
        "var": {"x": {"type": "input", "size": 5_000_000_000u64, "var_id": 1}},
        "dma_queue": {"qPoolIO0": {"type": "in", "owner": "pool", "semaphore_set": [3, 9]}},
        "#rank_world_size": 0, "unknown_key": {"nested": [1, 2]}
    });
    let kelf = serde_json::json!({
        "graphs": [{"definition": "defs/a/def0.json", "name": "sgA"}],
        "target": "mariana", "revision": ""
    });
    let mut spec = demo_spec();
    spec.extra_members.extend([
        (
            "kelf-0.json".to_string(),
            serde_json::to_vec(&kelf).unwrap(),
        ),
        (
            "defs/a/def0.json".to_string(),
            serde_json::to_vec(&def).unwrap(),
        ),
        (
            "defs/a/PE0.bin".to_string(),
            [slot(0xB1), slot(0x07)].concat(),
        ),
        ("defs/a/Activation0.bin".to_string(), slot(0xB1)),
    ]);
    let bytes = write::write_neff(&spec);
    let n = neff::open(&SliceSource(&bytes)).unwrap();
    assert_eq!(n.target.as_deref(), Some("mariana"));
    assert_eq!(n.subgraphs.len(), 1);
    let sg = &n.subgraphs[0];
    assert_eq!((sg.name.as_str(), sg.dir.as_str()), ("sgA", "defs/a"));
    assert_eq!(sg.engines.len(), 2, "PE and ACT named, others warned");
    assert_eq!(sg.engines[0].file, "defs/a/PE0.bin");
    assert_eq!(sg.engines[0].json.as_deref(), Some("defs/a/PE0.json"));
    assert_eq!(sg.engines[0].opcodes, vec![0xB1, 0x07]);
    assert_eq!(sg.engines[1].engine, Engine::Act);
    assert_eq!(sg.vars[0].size, Some(5_000_000_000));
    assert_eq!(sg.semaphore_names()[&9], "qGpSimdIO0");
    assert!(n
        .warnings
        .iter()
        .any(|w| w.contains("tensor_map.json missing")));
    // Missing required def.json → error naming it.
    let kelf_bad = serde_json::json!({"graphs": [{"definition": "nope/def.json", "name": "sg00"}]});
    let mut spec = demo_spec();
    spec.extra_members.push((
        "kelf-0.json".to_string(),
        serde_json::to_vec(&kelf_bad).unwrap(),
    ));
    let err = neff::open(&SliceSource(&write::write_neff(&spec))).unwrap_err();
    assert!(err.to_string().contains("nope/def.json"), "{err}");
}

/// Truncation and bit flips at many offsets: errors or warnings, never a panic.
fn hammer(bytes: &[u8], label: &str) {
    let (mut ok, mut err) = (0, 0);
    let step = (bytes.len() / 300).max(1);
    for cut in mutate::offsets(bytes.len(), step) {
        match neff::open(&SliceSource(&bytes[..cut])) {
            Ok(_) => ok += 1,
            Err(_) => err += 1,
        }
    }
    for pos in mutate::offsets(bytes.len(), step) {
        for bit in [0x01u8, 0x80] {
            match neff::open(&SliceSource(&mutate::edited(bytes, pos, |b| b ^ bit))) {
                Ok(_) => ok += 1,
                Err(_) => err += 1,
            }
        }
    }
    println!("{label}: {ok} opened (maybe with warnings), {err} rejected, no panic");
    assert!(err > 0);
}

#[test]
fn garbage_and_truncated_input_never_panics() {
    hammer(&write::write_neff(&demo_spec()), "synthetic");
    let p = samples().join("cs149-ichuniq");
    let mut f = Vec::new();
    walk(&p, "neff", &mut f);
    let bytes = std::fs::read(&f[0]).unwrap();
    hammer(&bytes, &rel(&f[0]));
    for junk in [&b""[..], &[0u8; 1023][..], &[0xFFu8; 4096][..]] {
        assert!(neff::open(&SliceSource(junk)).is_err());
    }
    // A header claiming more data than the file has: clamped with a warning, then a fault.
    let mut b = write::write_neff(&demo_spec());
    b.truncate(b.len() - 10240);
    assert!(neff::read_header(&SliceSource(&b)).is_err());
    match neff::open(&SliceSource(&b)) {
        Ok(n) => assert!(n.warnings.iter().any(|w| w.contains("clamped"))),
        Err(e) => println!("truncated demo: {e}"),
    }
}
