//! Truncations and bit flips of every input kind (issue 13), through the whole pipeline on an
//! in-memory folder: NTFF v4, v5 and v6 (with their NEFF where the sample has one), a NEFF alone
//! and beside its NTFF, the four System `.pb` files, a Kineto trace, a memory snapshot and a
//! source `.tar.gz`. Every mutant must end in tables and problems, never a panic or an `Err`;
//! every problem must name a file of the folder; and each kind's mutants must be noticed (some
//! problem names the mutated file). One shared mutator: tests/common/mutate.rs.

mod common;
#[path = "common/mutate.rs"]
mod mutate;

use std::io::Write;
use std::rc::Rc;

use common::samples;
use mutate::{mutants, run_folder};

/// 15 cuts and 35 flip sets per kind, as the measurement.
const CUTS: usize = 15;
const FLIPS: usize = 35;

fn read(rel: &str) -> Vec<u8> {
    let p = samples().join(rel);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Mutates `files[target]` and runs the folder for each mutant; returns how many mutants led
/// to a problem naming the mutated file.
fn check_kind(kind: &str, files: Vec<(String, Vec<u8>)>, target: usize, seed: u64) -> usize {
    let base: Vec<(String, Rc<Vec<u8>>)> =
        files.into_iter().map(|(p, b)| (p, Rc::new(b))).collect();
    let paths: Vec<&str> = base.iter().map(|(p, _)| p.as_str()).collect();
    let clean = run_folder(&base);
    assert!(
        !clean.parts.is_empty(),
        "{kind}: the unmutated folder gives no result"
    );
    let name = base[target].0.clone();
    let mut noticed = 0;
    let ms = mutants(&base[target].1, seed, CUTS, FLIPS);
    // Cut points that coincide on a small file are made once.
    assert!(ms.len() > CUTS / 2 + FLIPS, "{kind}: {} mutants", ms.len());
    for (how, bytes) in ms {
        let mut folder = base.clone();
        folder[target].1 = Rc::new(bytes);
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_folder(&folder)))
            .unwrap_or_else(|_| panic!("{kind} {name}: panic on {how:?}"));
        for p in &run.problems {
            if let Some(f) = &p.file {
                assert!(
                    paths.contains(&f.as_str()),
                    "{kind} {how:?}: problem names {f}, not a file of the folder: {p:?}"
                );
            }
        }
        if run
            .problems
            .iter()
            .any(|p| p.file.as_deref() == Some(&name))
        {
            noticed += 1;
        }
    }
    assert!(noticed > 0, "{kind}: no mutant of {name} was reported");
    noticed
}

#[test]
fn ntff_v4_v5_v6_truncated_and_flipped() {
    let v4 = vec![
        (
            "part1/stream_256k_fd2k.ntff".to_string(),
            read("cs149-Ericcsr/part1/stream_256k_fd2k.ntff"),
        ),
        (
            "part1/stream_256k_fd2k.neff".to_string(),
            read("cs149-Ericcsr/part1/stream_256k_fd2k.neff"),
        ),
    ];
    let v5 = vec![(
        "results/profile_128x128x1000.ntff".to_string(),
        read("AnchovyPark-npu_profiling_code/matmul/neuron_profile_results/profile_128x128x1000.ntff"),
    )];
    let v6 = vec![
        (
            "fused_fp32_s512/fused_exec_2.ntff".to_string(),
            read("allenkchau-trainium-kernel-fusion/profiling/artifacts/fused_fp32_s512/fused_exec_2.ntff"),
        ),
        (
            "fused_fp32_s512/fused.neff".to_string(),
            read("allenkchau-trainium-kernel-fusion/profiling/artifacts/fused_fp32_s512/fused.neff"),
        ),
    ];
    check_kind("ntff v4", v4, 0, 4);
    check_kind("ntff v5", v5, 0, 5);
    check_kind("ntff v6", v6.clone(), 0, 6);
    // The NEFF beside its NTFF (pairing and attribution on a damaged NEFF) and alone.
    check_kind("neff beside ntff", v6, 1, 7);
    let alone = vec![(
        "part1/stream_256k_fd1k.neff".to_string(),
        read("cs149-Ericcsr/part1/stream_256k_fd1k.neff"),
    )];
    check_kind("neff", alone, 0, 8);
}

#[test]
fn system_pb_files_truncated_and_flipped() {
    let dir = "i-0af76a70a6d3864dd_pid_713479";
    let names = ["trace_info.pb", "ntrace.pb", "cpu_util.pb", "host_mem.pb"];
    let files: Vec<(String, Vec<u8>)> = names
        .iter()
        .map(|n| {
            (
                format!("{dir}/{n}"),
                read(&format!("KevGomes-nki-moe-megakernel/output/{dir}/{n}")),
            )
        })
        .collect();
    for (i, n) in names.iter().enumerate() {
        check_kind(n, files.clone(), i, 20 + i as u64);
    }
}

#[test]
fn kineto_trace_truncated_and_flipped() {
    // Our writer's System capture (no Kineto sample exists): trace_info.pb, ntrace.pb and a
    // ~30 kB trace.json.
    let spec = neuronscope::system::write::SystemSpec::default();
    let files = neuronscope::system::write::system_capture(&spec, 30_000);
    let t = files
        .iter()
        .position(|(p, _)| p.ends_with("trace.json"))
        .unwrap();
    check_kind("kineto", files, t, 30);
}

#[test]
fn memory_snapshot_truncated_and_flipped() {
    let (pickle, _) =
        neuronscope::memsnap::write::demo_snapshot("kernels/demo.py", 1_700_000_000_000_000);
    check_kind(
        "memory snapshot",
        vec![("cap/memory_snapshot_rank0.pickle".to_string(), pickle)],
        0,
        40,
    );
}

#[test]
fn source_tar_gz_truncated_and_flipped() {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut b = tar::Builder::new(gz);
    for (i, text) in [
        "import nki\n",
        "def kernel(x):\n    return x\n",
        "# notes\n",
    ]
    .iter()
    .enumerate()
    {
        let mut h = tar::Header::new_gnu();
        h.set_size(text.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        let path = format!("src/{}/kernel_{i}.py", "deep/".repeat(i * 30));
        b.append_data(&mut h, path, text.as_bytes()).unwrap();
    }
    let mut gz = b.into_inner().unwrap();
    gz.flush().unwrap();
    let data = gz.finish().unwrap();
    let mut idx = neuronscope::source_code::SourceIndex::new();
    let clean = idx.add_tar(&neuronscope::SliceSource(&data), true, "");
    assert_eq!((clean.added, clean.error.as_deref()), (3, None));
    let mut errors = 0;
    for (how, m) in mutants(&data, 50, CUTS, FLIPS) {
        let mut idx = neuronscope::source_code::SourceIndex::new();
        let load = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            idx.add_tar(&neuronscope::SliceSource(&m), true, "")
        }))
        .unwrap_or_else(|_| panic!("source tar.gz: panic on {how:?}"));
        assert!(load.added <= 3, "{how:?}: {load:?}");
        errors += usize::from(load.error.is_some());
    }
    assert!(errors > 0, "no mutant of the archive was reported");
}
