//! Wrong inputs reported right (the new-user trial's findings): damaged NTFF records are errors
//! with the offset of the first, a capture folder 60 levels deep converts and is listed, and
//! `bench` prints no ratio to an empty input. Mutants come from real samples through the shared
//! mutator (tests/common/mutate.rs).

mod common;
#[path = "common/mutate.rs"]
mod mutate;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::rc::Rc;

use common::samples;
use mutate::{run_folder, Rng};
use neuronscope::Severity;

const BIN: &str = env!("CARGO_BIN_EXE_neuronscope");
const FUSED: &str = "allenkchau-trainium-kernel-fusion/profiling/artifacts/fused_fp32_s512";

fn read(rel: &str) -> Vec<u8> {
    let p = samples().join(rel);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Single-bit flips in the trace records (past the info section: a flipped protobuf varint
/// there is a different, valid capture) of a v6 NTFF beside its NEFF. Every mutant that loses
/// or gains `Instruction` or `DmaPacket` rows must carry an error naming the NTFF and an
/// offset, so `convert` exits 1; the clean folder has no error.
fn flips_that_change_rows_are_errors(dir: &str, ntff: &str, neff: &str, seed: u64) -> usize {
    let bytes = read(&format!("{dir}/{ntff}"));
    let info = neuronscope::ntff::read_info(&neuronscope::source::SliceSource(&bytes))
        .unwrap()
        .unwrap();
    let name = format!("cap/{ntff}");
    let base = vec![
        (name.clone(), Rc::new(bytes.clone())),
        (
            format!("cap/{neff}"),
            Rc::new(read(&format!("{dir}/{neff}"))),
        ),
    ];
    let clean = run_folder(&base);
    assert!(
        clean.problems.iter().all(|p| p.severity != Severity::Error),
        "{dir}: the clean capture has errors: {:?}",
        clean.problems
    );
    let rows = |r: &neuronscope::profile::FolderRun| {
        let p = &r.parts[0];
        (p.rows("Instruction"), p.rows("DmaPacket"))
    };
    let want = rows(&clean);
    let mut rng = Rng::new(seed);
    let mut changed = 0;
    for _ in 0..60 {
        let at = info.blob_offset + rng.below(bytes.len() as u64 - info.blob_offset);
        let bit = rng.below(8) as u8;
        let mut m = bytes.clone();
        m[at as usize] ^= 1 << bit;
        let mut folder = base.clone();
        folder[0].1 = Rc::new(m);
        let run = run_folder(&folder);
        if rows(&run) == want {
            continue;
        }
        changed += 1;
        let err = run.problems.iter().find(|p| {
            p.severity == Severity::Error && p.file.as_deref() == Some(&name) && p.offset.is_some()
        });
        assert!(
            err.is_some(),
            "{dir}: flip of bit {bit} at byte {at} changed rows {want:?} → {:?} with no error: {:#?}",
            rows(&run),
            run.problems
        );
    }
    changed
}

#[test]
fn damaged_ntff_records_are_errors_with_their_offset() {
    let a = flips_that_change_rows_are_errors(FUSED, "fused_exec_2.ntff", "fused.neff", 61);
    let b = flips_that_change_rows_are_errors(
        "KevGomes-nki-moe-megakernel/kernels/moe_tkg/agents",
        "profile_v6b_exec_2.ntff",
        "v6b.neff",
        62,
    );
    // The loop must have exercised the rule (flips that changed rows), not only quiet ones.
    assert!(a + b >= 10, "only {a} + {b} flips changed rows");
}

/// Every clean sample NTFF converts without an NTFF_UNPAIRED or NTFF_CORRUPT_RECORDS problem
/// (their rules rest on this).
#[test]
fn clean_samples_have_no_damaged_records() {
    fn walk(d: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out)
            } else if p.extension().is_some_and(|x| x == "ntff") {
                out.push(p)
            }
        }
    }
    let mut v = Vec::new();
    walk(&samples(), &mut v);
    assert!(v.len() > 40, "{} sample NTFFs", v.len());
    for p in v {
        let files = vec![(
            "cap/x.ntff".to_string(),
            Rc::new(std::fs::read(&p).unwrap()),
        )];
        let run = run_folder(&files);
        for pr in &run.problems {
            assert!(
                pr.code != "NTFF_UNPAIRED" && pr.code != "NTFF_CORRUPT_RECORDS",
                "{}: {pr:?}",
                p.display()
            );
        }
    }
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("neuronscope-robust-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A capture 60 folders deep: its partition name is bounded (prefix, `~`, MD5 digits), it is
/// listed in `_profiles.parquet` under that name, and `convert` exits 0 in both layouts.
#[test]
fn a_deep_capture_converts_and_is_listed() {
    let root = tmp("deep");
    let mut d = root.join("in");
    for i in 0..60 {
        d = d.join(format!("level_{i}"));
    }
    std::fs::create_dir_all(&d).unwrap();
    for f in ["fused_exec_2.ntff", "fused.neff"] {
        std::fs::write(d.join(f), read(&format!("{FUSED}/{f}"))).unwrap();
    }
    for layout in ["hive", "tree"] {
        let out = root.join(format!("out-{layout}"));
        let o = Command::new(BIN)
            .args(["convert", root.join("in").to_str().unwrap(), "-o"])
            .arg(&out)
            .args(["--layout", layout])
            .output()
            .unwrap();
        let (so, se) = (
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr),
        );
        assert_eq!(o.status.code(), Some(0), "{layout}: {so}\n{se}");
        let f = std::fs::File::open(out.join("_profiles.parquet")).unwrap();
        let r = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f)
            .unwrap()
            .build()
            .unwrap();
        let b: Vec<_> = r.map(|b| b.unwrap()).collect();
        assert_eq!(b.iter().map(|b| b.num_rows()).sum::<usize>(), 1, "{layout}");
        let profile = b[0]
            .column_by_name("profile")
            .unwrap()
            .as_any()
            .downcast_ref::<arrow_array::StringArray>()
            .unwrap()
            .value(0)
            .to_string();
        assert!(profile.starts_with("in/level_0/level_1/"), "{profile}");
        let hash = profile.rsplit_once('~').unwrap().1;
        assert_eq!(hash.len(), 16, "{profile}");
        assert!(hash.bytes().all(|c| c.is_ascii_hexdigit()), "{profile}");
        // Every name written fits a file system's 255-byte component.
        let mut stack = vec![out.clone()];
        let mut files = 0;
        while let Some(p) = stack.pop() {
            for e in std::fs::read_dir(&p).unwrap().flatten() {
                assert!(e.file_name().len() <= 255, "{:?}", e.file_name());
                if e.path().is_dir() {
                    stack.push(e.path());
                } else {
                    files += 1;
                }
            }
        }
        assert!(files > 10, "{layout}: {files} files");
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// `bench` on a 0-byte NTFF prints no Parquet ÷ input ratio ("n/a"), not Parquet footers over
/// one byte.
#[test]
fn bench_prints_no_ratio_for_an_empty_input() {
    let d = tmp("bench-empty");
    std::fs::write(d.join("empty.ntff"), b"").unwrap();
    let o = Command::new(BIN)
        .arg("bench")
        .arg(&d)
        .args(["--steps", "parquet"])
        .output()
        .unwrap();
    let so = String::from_utf8_lossy(&o.stdout);
    for line in so.lines().filter(|l| l.contains("\tparquet\t")) {
        let cols: Vec<&str> = line.split('\t').collect();
        assert_eq!(cols[1], "0", "{line}");
        assert_eq!(cols[11], "n/a", "{line}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A NEFF cut inside its header: the NTFF's problem says that NEFF is truncated or corrupt,
/// with the offset, instead of "no NEFF found"; cut after the header it pairs and its decode
/// error is an Error naming the NEFF.
#[test]
fn a_truncated_neff_is_named_with_its_offset() {
    let ntff = read(&format!("{FUSED}/fused_exec_2.ntff"));
    let neff = read(&format!("{FUSED}/fused.neff"));
    for cut in [100usize, neff.len() / 2] {
        let files = vec![
            ("cap/fused_exec_2.ntff".to_string(), Rc::new(ntff.clone())),
            ("cap/fused.neff".to_string(), Rc::new(neff[..cut].to_vec())),
        ];
        let run = run_folder(&files);
        let p = run
            .problems
            .iter()
            .find(|p| p.message.contains("fused.neff") && p.offset.is_some())
            .unwrap_or_else(|| panic!("cut {cut}: {:#?}", run.problems));
        assert!(!p.message.contains("no NEFF found"), "{p:?}");
        if cut == 100 {
            assert_eq!(p.code, "MISSING_NEFF", "{p:?}");
            assert!(p.message.contains("truncated or corrupt"), "{p:?}");
            // The NEFF's own fault, quoted without its path or its own advice.
            assert!(
                p.message.contains(&format!(
                    "at byte 0: 100 bytes, shorter than the {}-byte NEFF header: the file is \
                     cut. If it is the NEFF",
                    neuronscope::neff::HEADER_LEN
                )),
                "{p:?}"
            );
            // The card's status names the NEFF too (not "no matching NEFF").
            let picked: Vec<(String, u64)> = files
                .iter()
                .map(|(p, b)| (p.clone(), b.len() as u64))
                .collect();
            let open = |p: &str| -> neuronscope::Result<Box<dyn neuronscope::source::ByteSource>> {
                let b = files
                    .iter()
                    .find(|(n, _)| n == p)
                    .map(|(_, b)| Rc::clone(b));
                b.map(|b| Box::new(b) as Box<dyn neuronscope::source::ByteSource>)
                    .ok_or_else(|| neuronscope::Error::Io(format!("{p}: no such file")))
            };
            let inv = neuronscope::inventory::build(&picked, &open);
            let d = inv.profiles[0]
                .devices
                .iter()
                .find(|d| d.ntff.is_some())
                .expect("the NTFF's device");
            assert_eq!(
                d.pairing,
                neuronscope::pairing::PairStatus::NeffUnreadable {
                    neff: "cap/fused.neff".into()
                },
                "{d:?}"
            );
        } else {
            assert!(
                run.problems.iter().any(|p| p.severity == Severity::Error
                    && p.file.as_deref() == Some("cap/fused.neff")),
                "{:#?}",
                run.problems
            );
        }
    }
}

/// A v5 NTFF cut inside its instruction buffer reports each fault once: the time-origin search
/// reads the buffers before the instruction pass and used to report them too (a user trial).
#[test]
fn a_cut_v5_ntff_reports_each_fault_once() {
    let ntff = read(
        "AnchovyPark-npu_profiling_code/matmul/neuron_profile_results/profile_128x128x1000.ntff",
    );
    assert_eq!(ntff[0], 5, "a v5 sample");
    for cut in [26_000usize, 30_000] {
        let files = vec![(
            "cap/profile_128x128x1000.ntff".to_string(),
            Rc::new(ntff[..cut].to_vec()),
        )];
        let run = run_folder(&files);
        let errors: Vec<(&str, Option<u64>, &str)> = run
            .problems
            .iter()
            .filter(|p| p.severity == Severity::Error)
            .map(|p| (p.code.as_str(), p.offset, p.message.as_str()))
            .collect();
        assert!(
            errors.iter().any(|e| e.2.contains("truncated at offset")),
            "cut {cut}: {errors:#?}"
        );
        let mut once = errors.clone();
        once.sort();
        once.dedup();
        assert_eq!(once.len(), errors.len(), "cut {cut}: {errors:#?}");
    }
}

/// A v6 NTFF cut past its info section: every read past the end (trace buffers and the code
/// blocks in the blob) is NTFF_TRUNCATED, as the page lists it (a user trial saw the same
/// "lie past the end" as NTFF_BAD_CODE_BLOCK for one cut and NTFF_TRUNCATED for another).
#[test]
fn reads_past_the_end_of_a_cut_ntff_are_truncated() {
    const KEV: &str = "KevGomes-nki-moe-megakernel/output/i-0af76a70a6d3864dd_pid_713479";
    let ntff = read(&format!("{KEV}/profile_exec_2.ntff"));
    let neff = read(&format!("{KEV}/neff_171450338541704.neff"));
    for cut in [100_000usize, ntff.len() / 2] {
        let files = vec![
            (
                "cap/profile_exec_2.ntff".to_string(),
                Rc::new(ntff[..cut].to_vec()),
            ),
            (
                "cap/neff_171450338541704.neff".to_string(),
                Rc::new(neff.clone()),
            ),
        ];
        let run = run_folder(&files);
        let past: Vec<(&str, &str)> = run
            .problems
            .iter()
            .filter(|p| p.message.contains("truncated"))
            .map(|p| (p.code.as_str(), p.message.as_str()))
            .collect();
        assert!(!past.is_empty(), "cut {cut}: {:#?}", run.problems);
        assert!(
            past.iter().all(|(c, _)| *c == "NTFF_TRUNCATED"),
            "cut {cut}: {past:#?}"
        );
    }
}
