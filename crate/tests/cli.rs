//! The `neuronscope` binary as a newcomer meets it (issue 12): help and `--version`, exit codes
//! (0 done, 1 some input had errors, 2 usage), symbolic links followed (link trees built in a
//! temporary folder pointing into ../shared/samples), misnamed files reported for what they are,
//! and `convert`'s Hive-partitioned dataset over two captures: layout, `_profiles.parquet`,
//! restart (unchanged profiles skipped, changed or interrupted ones converted again) and the
//! `tree` layout.

mod common;
use common::samples;

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use arrow_array::{Array, Int64Array, RecordBatch, StringArray};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_neuronscope");
const FUSED: &str = "allenkchau-trainium-kernel-fusion/profiling/artifacts/fused_bf16_s512";
const KEV: &str = "KevGomes-nki-moe-megakernel/output/i-0af76a70a6d3864dd_pid_713479";

fn ns(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("run neuronscope")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A fresh temporary folder for one test.
fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("neuronscope-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn read_parquet(p: &Path) -> RecordBatch {
    let f = std::fs::File::open(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let r = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f)
        .unwrap()
        .build()
        .unwrap();
    let batches: Vec<RecordBatch> = r.map(|b| b.unwrap()).collect();
    arrow_select::concat::concat_batches(&batches[0].schema(), &batches).unwrap()
}

fn col_str(b: &RecordBatch, name: &str) -> Vec<String> {
    let a = b
        .column_by_name(name)
        .unwrap()
        .as_any()
        .downcast_ref::<StringArray>()
        .unwrap();
    (0..a.len()).map(|i| a.value(i).to_string()).collect()
}

#[test]
fn help_version_and_exit_codes() {
    let o = ns(&["--version"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        text(&o).0.trim(),
        format!("neuronscope {}", env!("CARGO_PKG_VERSION"))
    );
    for cmd in ["scan", "convert", "synth", "bench", "conform"] {
        let o = ns(&[cmd, "--help"]);
        let out = text(&o).0;
        assert_eq!(o.status.code(), Some(0), "{cmd} --help");
        assert!(
            out.contains(&format!("Usage: neuronscope {cmd}"))
                && out.contains("Exit codes: 0 done"),
            "{cmd} --help:\n{out}"
        );
    }
    let help = text(&ns(&["convert", "--help"])).0;
    for flag in [
        "--output <OUT>",
        "--threads <N>",
        "--layout <LAYOUT>",
        "--force",
        "--quiet",
        "--verbose",
    ] {
        assert!(help.contains(flag), "convert --help lacks {flag}:\n{help}");
    }
    // A typo: usage error with a suggestion.
    let o = ns(&["scna", "x"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("'scan'"), "{}", text(&o).1);
    // Missing arguments, unknown flag: usage (2).
    assert_eq!(ns(&["convert", "x"]).status.code(), Some(2), "no -o");
    assert_eq!(ns(&["scan", "--jsn", "x"]).status.code(), Some(2));
    assert_eq!(ns(&[]).status.code(), Some(2));
    // An input that does not exist: 1, naming it.
    let o = ns(&["scan", "/nonexistent/capture"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o).1.contains("/nonexistent/capture"),
        "{}",
        text(&o).1
    );
    // The old spellings keep working: `convert DIR -o OUT`, `synth OUT`.
    let t = tmp("old-flags");
    let o = ns(&["synth", s(&t.join("demo"))]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let o = ns(&[
        "convert",
        s(&t.join("demo")),
        "-o",
        s(&t.join("out")),
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    assert_eq!(text(&o).0, "", "--quiet prints nothing on success");
    assert!(t.join("out/_profiles.parquet").is_file());
}

#[test]
fn symlinks_are_followed_with_loop_protection() {
    let smp = samples();
    let t = tmp("links");
    let top = t.join("top");
    std::fs::create_dir_all(top.join("run")).unwrap();
    // A folder link (a capture on another disk), file links (an NTFF and, elsewhere, the NEFF it
    // ran: a NEFF cache), a dangling link, a loop and a second link to the same folder.
    symlink(smp.join(FUSED), top.join("capture")).unwrap();
    symlink(
        smp.join(KEV).join("profile_exec_2.ntff"),
        top.join("run/profile_exec_2.ntff"),
    )
    .unwrap();
    std::fs::create_dir_all(t.join("cache")).unwrap();
    symlink(
        smp.join(KEV).join("neff_171450338541704.neff"),
        t.join("cache/model.neff"),
    )
    .unwrap();
    symlink(t.join("cache"), top.join("neff_cache")).unwrap();
    symlink("/nonexistent/gone.ntff", top.join("run/gone.ntff")).unwrap();
    symlink("..", top.join("run/loop")).unwrap();
    symlink("../capture", top.join("run/again")).unwrap();

    let o = ns(&["scan", "--json", s(&top)]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let inv: Value = serde_json::from_str(&out).unwrap();
    let files: Vec<&str> = inv["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        files,
        [
            "top/capture/fused.neff",
            "top/capture/fused_exec_2.ntff",
            "top/capture/json_reports/fused_exec_2_profile_full.json",
            "top/neff_cache/model.neff",
            "top/run/profile_exec_2.ntff",
        ],
        "each real folder once, the loop not entered"
    );
    let profiles = inv["profiles"].as_array().unwrap();
    let dev = |id: &str| -> &Value {
        &profiles
            .iter()
            .find(|p| p["id"] == id)
            .unwrap_or_else(|| panic!("{id}: {out}"))["devices"][0]
    };
    assert_eq!(dev("top/capture")["pairing"]["status"], "Paired");
    let run = dev("top/run");
    assert_eq!(
        (
            run["pairing"]["status"].as_str(),
            run["neff"].as_str(),
            run["ntff_version"].as_u64()
        ),
        (Some("Paired"), Some("top/neff_cache/model.neff"), Some(6)),
        "the linked NTFF pairs with the linked NEFF by uuid"
    );
    let problems = inv["problems"].as_array().unwrap();
    let code = |c: &str| -> &Value {
        problems
            .iter()
            .find(|p| p["code"] == c)
            .unwrap_or_else(|| panic!("{c}: {problems:#?}"))
    };
    let gone = code("DANGLING_LINK");
    assert_eq!(
        (gone["severity"].as_str(), gone["file"].as_str()),
        (Some("warning"), Some("top/run/gone.ntff"))
    );
    assert!(gone["message"]
        .as_str()
        .unwrap()
        .contains("/nonexistent/gone.ntff"));
    assert_eq!(code("LINK_LOOP")["file"], "top/run/loop");
    assert_eq!(code("LINK_REPEATED")["file"], "top/run/again");

    // convert reads through the links too: the two device profiles, their known row counts.
    let out_dir = t.join("out");
    let o = ns(&["convert", s(&top), "-o", s(&out_dir), "--layout", "tree"]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    assert!(
        text(&o)
            .0
            .contains("Warning: top/run/gone.ntff: symbolic link"),
        "{}",
        text(&o).0
    );
    let rows = |p: &str| read_parquet(&out_dir.join(p)).num_rows();
    assert_eq!(rows("top_capture/fused_exec_2/Instruction.parquet"), 436);
    assert_eq!(rows("top_run/profile_exec_2/Instruction.parquet"), 7628);
}

#[test]
fn misnamed_files_are_reported_for_what_they_are() {
    let smp = samples();
    let t = tmp("misnamed");
    let d = t.join("drop");
    std::fs::create_dir_all(&d).unwrap();
    // ntrace.pb named x.ntff, an NTFF named renamed.bin, random bytes named r.ntff (byte 0 = 70).
    symlink(smp.join(KEV).join("ntrace.pb"), d.join("x.ntff")).unwrap();
    symlink(
        smp.join(FUSED).join("fused_exec_2.ntff"),
        d.join("renamed.bin"),
    )
    .unwrap();
    let mut noise = vec![70u8];
    let mut x: u32 = 12345;
    for _ in 0..5000 {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        noise.push((x >> 16) as u8 | 0x80);
    }
    std::fs::write(d.join("r.ntff"), &noise).unwrap();

    let o = ns(&["scan", "--json", s(&d)]);
    assert_eq!(
        o.status.code(),
        Some(3),
        "data problems in the inputs: exit 3"
    );
    let inv: Value = serde_json::from_str(&text(&o).0).unwrap();
    let p = &inv["profiles"][0];
    let msg = |name: &str| -> String {
        let dv = p["devices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["name"] == name)
            .unwrap();
        assert_eq!(dv["pairing"]["status"], "Unreadable", "{name}");
        dv["pairing"]["message"].as_str().unwrap().to_string()
    };
    let x = msg("x");
    assert!(
        x.contains("drop/x.ntff looks like a runtime trace (ntrace.pb), not an NTFF"),
        "{x}"
    );
    assert!(x.contains("byte 0 is 79"), "{x}");
    let r = msg("r");
    assert!(
        r.contains("not an NTFF") && r.contains("byte 0 is 70"),
        "{r}"
    );
    assert!(
        r.contains("no format neuronscope knows (first bytes 46 "),
        "{r}"
    );
    assert!(
        !r.contains("newer"),
        "no version talk for random bytes: {r}"
    );
    let problems = p["problems"].as_array().unwrap();
    let renamed = problems
        .iter()
        .find(|q| q["code"] == "FILE_MISNAMED")
        .expect("FILE_MISNAMED");
    assert_eq!(renamed["severity"], "info");
    assert!(
        renamed["message"]
            .as_str()
            .unwrap()
            .contains("drop/renamed.bin looks like a device trace (NTFF, version byte 6)"),
        "{renamed}"
    );
    let errors: Vec<&Value> = problems
        .iter()
        .filter(|q| q["severity"] == "error")
        .collect();
    assert_eq!(errors.len(), 2, "{problems:#?}");
    assert_eq!(
        errors
            .iter()
            .map(|e| e["offset"].as_u64())
            .collect::<Vec<_>>(),
        [Some(0), Some(0)]
    );
    let looks = |path: &str| {
        inv["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == path)
            .unwrap()["content"]
            .clone()
    };
    assert_eq!(looks("drop/x.ntff")["looks_like"], "FramedProtobuf");
    assert_eq!(looks("drop/x.ntff")["samples"], false);
    assert_eq!(looks("drop/renamed.bin")["version"], 6);
    // convert writes what it could (the problems, in Warning) and exits 1: neither file gave a
    // usable row.
    let o = ns(&["convert", s(&d), "-o", s(&t.join("out"))]);
    assert_eq!(o.status.code(), Some(1), "{:?}", text(&o));
    assert!(
        text(&o).1.contains("no profile gave a usable row"),
        "{}",
        text(&o).1
    );
    assert!(
        text(&o).1.contains("profile(s) had errors"),
        "{}",
        text(&o).1
    );
}

/// `(instance, pid, profile)` partition folders holding `table`, sorted.
fn partitions(out: &Path, table: &str) -> Vec<String> {
    let mut v = Vec::new();
    for i in std::fs::read_dir(out.join(table)).unwrap() {
        let i = i.unwrap().path();
        for p in std::fs::read_dir(&i).unwrap() {
            let p = p.unwrap().path();
            for q in std::fs::read_dir(&p).unwrap() {
                let q = q.unwrap().path();
                let rel = q
                    .strip_prefix(out.join(table))
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                let parts: Vec<String> = std::fs::read_dir(&q)
                    .unwrap()
                    .map(|f| f.unwrap().file_name().to_string_lossy().into_owned())
                    .collect();
                assert_eq!(parts, ["part-0.parquet"], "{rel}");
                v.push(rel);
            }
        }
    }
    v.sort();
    v
}

#[test]
fn convert_writes_a_restartable_hive_dataset() {
    let smp = samples();
    let t = tmp("dataset");
    // Inputs through links, so a test can "change" one (replace a link by a copy).
    let a = t.join("in/fused_bf16_s512");
    let b = t.join("in/i-0af76a70a6d3864dd_pid_713479");
    for (dir, src) in [(&a, smp.join(FUSED)), (&b, smp.join(KEV))] {
        std::fs::create_dir_all(dir).unwrap();
        for e in std::fs::read_dir(&src).unwrap() {
            let e = e.unwrap();
            symlink(e.path(), dir.join(e.file_name())).unwrap();
        }
    }
    let out = t.join("out");
    let convert = |extra: &[&str]| {
        let mut args = vec!["convert", s(&a), s(&b), "-o", s(&out), "--threads", "2"];
        args.extend_from_slice(extra);
        let o = ns(&args);
        assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
        text(&o).0
    };
    let first = convert(&[]);
    assert!(
        first.contains("3 profiles: 3 converted, 0 unchanged"),
        "{first}"
    );
    // Instance and pid: the v6 headers' (the KevGomes NTFF was recorded by process 723577, not
    // by the capture's 713479); the system profile: the capture folder's name.
    assert_eq!(
        partitions(&out, "Instruction"),
        [
            "instance=i-077c6ce2456b98b8d/pid=34382/profile=fused_bf16_s512%2Ffused_exec_2",
            "instance=i-0af76a70a6d3864dd/pid=723577/profile=i-0af76a70a6d3864dd_pid_713479%2Fprofile_exec_2",
        ]
    );
    assert_eq!(
        partitions(&out, "SystemProfileEvents"),
        ["instance=i-0af76a70a6d3864dd/pid=713479/profile=i-0af76a70a6d3864dd_pid_713479%2Fsystem"]
    );
    let prof = read_parquet(&out.join("_profiles.parquet"));
    assert_eq!(prof.num_rows(), 3);
    assert_eq!(
        col_str(&prof, "profile"),
        [
            "fused_bf16_s512/fused_exec_2",
            "i-0af76a70a6d3864dd_pid_713479/system",
            "i-0af76a70a6d3864dd_pid_713479/profile_exec_2",
        ]
    );
    assert_eq!(col_str(&prof, "part"), ["device", "system", "device"]);
    assert_eq!(
        col_str(&prof, "type"),
        ["Device", "System+Device", "System+Device"]
    );
    assert!(col_str(&prof, "pairing")[0].contains("\"Paired\""));
    let rows = prof
        .column_by_name("rows")
        .unwrap()
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap();
    let instr = read_parquet(&out.join(
        "Instruction/instance=i-077c6ce2456b98b8d/pid=34382/profile=fused_bf16_s512%2Ffused_exec_2/part-0.parquet",
    ));
    assert_eq!(instr.num_rows(), 436);
    assert!(rows.value(0) > 436);

    // Again: nothing changed, nothing converted, files untouched.
    let part = out.join("Instruction/instance=i-077c6ce2456b98b8d/pid=34382/profile=fused_bf16_s512%2Ffused_exec_2/part-0.parquet");
    let mtime = || std::fs::metadata(&part).unwrap().modified().unwrap();
    let before = mtime();
    let second = convert(&[]);
    assert!(
        second.contains("3 profiles: 0 converted, 3 unchanged (skipped)"),
        "{second}"
    );
    assert_eq!(mtime(), before);
    assert_eq!(read_parquet(&out.join("_profiles.parquet")).num_rows(), 3);

    // A changed input (a copy instead of the link: new mtime) converts that profile only.
    let ntff = a.join("fused_exec_2.ntff");
    std::fs::remove_file(&ntff).unwrap();
    std::fs::copy(smp.join(FUSED).join("fused_exec_2.ntff"), &ntff).unwrap();
    let third = convert(&[]);
    assert!(
        third.contains("3 profiles: 1 converted, 2 unchanged"),
        "{third}"
    );
    assert!(
        third.contains("fused_bf16_s512/fused_exec_2 -> "),
        "{third}"
    );

    // An interrupted run (no state, a half-written part): converted again, the debris replaced.
    let kev_part = out.join("Instruction/instance=i-0af76a70a6d3864dd/pid=723577/profile=i-0af76a70a6d3864dd_pid_713479%2Fprofile_exec_2/part-0.parquet");
    let states: Vec<PathBuf> = std::fs::read_dir(out.join("_state"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains("profile_exec_2"))
        .collect();
    assert_eq!(states.len(), 1);
    std::fs::remove_file(&states[0]).unwrap();
    std::fs::write(&kev_part, b"PAR1 half a file").unwrap();
    let fourth = convert(&[]);
    assert!(
        fourth.contains("3 profiles: 1 converted, 2 unchanged"),
        "{fourth}"
    );
    assert_eq!(read_parquet(&kev_part).num_rows(), 7628);
    // --force converts everything.
    let fifth = convert(&["--force"]);
    assert!(
        fifth.contains("3 profiles: 3 converted, 0 unchanged"),
        "{fifth}"
    );
}

/// `bench` on a folder with nothing to measure fails as `convert` does (exit 1, "no profile
/// found"), and says why a file was not measured (a 0-byte NEFF) on stderr, leaving stdout to
/// the table.
#[test]
fn bench_with_nothing_to_measure() {
    let d = tmp("bench-empty");
    let o = ns(&["bench", s(&d)]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(err.contains("no profile found to measure"), "{err}");
    assert!(out.is_empty(), "{out}");
    std::fs::write(d.join("x.neff"), b"").unwrap();
    let o = ns(&["bench", s(&d)]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(err.contains("x.neff looks like an empty file"), "{err}");
    let o = ns(&["convert", s(&d), "-o", s(&d.join("out"))]);
    assert_eq!(o.status.code(), Some(1), "convert: {:?}", text(&o));
    let _ = std::fs::remove_dir_all(&d);
}

/// `convert` gives one exit code per situation, whatever the file kind (session 9's trial: a
/// cut `ntrace.pb` or `trace.json` exited 0 with a warning, a cut NTFF 1): 3 for an input cut
/// in half or with a flipped byte (everything before the fault written and printed with its
/// file and offset), 0 for the clean inputs, 1 for nothing usable, 2 for usage.
#[test]
fn convert_exit_codes_agree_across_file_kinds() {
    let smp = samples();
    let kev = smp.join(KEV);
    let t = tmp("exit-codes");
    let half = |from: &Path, to: &Path| {
        let b = std::fs::read(from).unwrap();
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::write(to, &b[..b.len() / 2]).unwrap();
    };
    let cap = "i-0af76a70a6d3864dd_pid_713479";
    // A cut ntrace.pb (its trace_info.pb beside it).
    let nt = t.join("nt").join(cap);
    half(&kev.join("ntrace.pb"), &nt.join("ntrace.pb"));
    std::fs::copy(kev.join("trace_info.pb"), nt.join("trace_info.pb")).unwrap();
    // A cut NTFF with its NEFF.
    let nf = t.join("nf");
    half(
        &kev.join("profile_exec_2.ntff"),
        &nf.join("profile_exec_2.ntff"),
    );
    std::fs::copy(
        kev.join("neff_171450338541704.neff"),
        nf.join("neff_171450338541704.neff"),
    )
    .unwrap();
    // A synthetic System capture whose trace.json is cut, and one with a flipped byte.
    let o = ns(&["synth", s(&t.join("k")), "--kineto-mb", "1"]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let kdir = std::fs::read_dir(t.join("k"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let kj = std::fs::read(kdir.join("trace.json")).unwrap();
    for (name, bytes) in [
        ("kcut", kj[..kj.len() / 2].to_vec()),
        ("kflip", {
            let mut v = kj.clone();
            let at = v.len() / 2
                + v[v.len() / 2..]
                    .windows(6)
                    .position(|w| w == b"{\"ph\":")
                    .unwrap();
            v[at] = b'#';
            v
        }),
    ] {
        let d = t.join(name).join(kdir.file_name().unwrap());
        std::fs::create_dir_all(&d).unwrap();
        for f in ["trace_info.pb", "ntrace.pb"] {
            std::fs::copy(kdir.join(f), d.join(f)).unwrap();
        }
        std::fs::write(d.join("trace.json"), bytes).unwrap();
    }
    for (name, file) in [
        ("nt", "ntrace.pb"),
        ("nf", "profile_exec_2.ntff"),
        ("kcut", "trace.json"),
        ("kflip", "trace.json"),
    ] {
        let o = ns(&[
            "convert",
            s(&t.join(name)),
            "-o",
            s(&t.join(format!("out-{name}"))),
        ]);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(3), "{name}: {out}{err}");
        assert!(err.contains("had errors in their input"), "{name}: {err}");
        // The fault is printed with its file and byte offset.
        assert!(
            out.lines()
                .chain(err.lines())
                .any(|l| l.contains(file) && (l.contains("offset") || l.contains("byte"))),
            "{name}: {out}{err}"
        );
        // Rows before the fault were written.
        assert!(
            t.join(format!("out-{name}"))
                .join("_profiles.parquet")
                .is_file(),
            "{name}"
        );
        // One severity for a lost part whatever the kind: an `Error:` line naming the file,
        // printed under --quiet too (stderr), with the same exit code.
        assert!(
            out.lines()
                .any(|l| l.trim_start().starts_with("Error:") && l.contains(file)),
            "{name}: {out}"
        );
        let q = ns(&[
            "convert",
            "-q",
            s(&t.join(name)),
            "-o",
            s(&t.join(format!("outq-{name}"))),
        ]);
        let (qout, qerr) = text(&q);
        assert_eq!(q.status.code(), Some(3), "{name} -q: {qout}{qerr}");
        assert!(
            qerr.lines()
                .any(|l| l.contains("Error:") && l.contains(file)),
            "{name} -q: {qerr}"
        );
    }
    // A System+Device capture whose NEFF is cut: its error counts once, with the NEFF's own
    // entry, not again against the system trace (session 12's trial: "2 with errors", the
    // Error line printed twice under -q).
    let nc = t.join("neffcut").join(cap);
    std::fs::create_dir_all(&nc).unwrap();
    for f in std::fs::read_dir(&kev).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, nc.join(f.file_name().unwrap())).unwrap();
    }
    let neff = nc.join("neff_171450338541704.neff");
    // The copy is read-only as the sample is; the folder is ours.
    std::fs::remove_file(&neff).unwrap();
    std::fs::write(
        &neff,
        &std::fs::read(kev.join("neff_171450338541704.neff")).unwrap()[..50],
    )
    .unwrap();
    let o = ns(&[
        "convert",
        "-q",
        s(&t.join("neffcut")),
        "-o",
        s(&t.join("out-neffcut")),
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(3), "{out}{err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("Error:")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].contains("neff_171450338541704.neff"), "{err}");
    assert!(err.contains("1 profile(s) had errors"), "{err}");
    // Its message says the NEFF is cut, once, in plain words (session 12's trial: "looks like
    // no format … not a NEFF (truncated at offset 0 …)", nested in double parentheses).
    assert!(
        lines[0].contains("shorter than the 1024-byte NEFF header"),
        "{err}"
    );
    let o = ns(&["scan", s(&t.join("neffcut"))]);
    let (out, _) = text(&o);
    assert!(!out.contains("(("), "{out}");
    // A system file too short for its kind (a cut copy): `scan` says it is cut, an error as a
    // cut NEFF or NTFF is, and `convert` prints that error once, the decoder's, with its offset
    // (session 12's trial: a CONTENT_MISMATCH warning, exit 0, then reported twice).
    for (name, file, keep) in [
        ("ntcut", "ntrace.pb", 3usize),
        ("ticut", "trace_info.pb", 900),
    ] {
        let d = t.join(name).join(cap);
        std::fs::create_dir_all(&d).unwrap();
        for f in std::fs::read_dir(&kev).unwrap() {
            let f = f.unwrap().path();
            std::fs::copy(&f, d.join(f.file_name().unwrap())).unwrap();
        }
        std::fs::remove_file(d.join(file)).unwrap();
        std::fs::write(
            d.join(file),
            &std::fs::read(kev.join(file)).unwrap()[..keep],
        )
        .unwrap();
        let o = ns(&["scan", s(&t.join(name))]);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(3), "{name}: {out}{err}");
        let errs: Vec<&str> = out.lines().filter(|l| l.contains("Error:")).collect();
        assert_eq!(errs.len(), 1, "{name}: {out}");
        assert!(
            errs[0].contains(file) && errs[0].contains(&format!("ends after {keep} bytes")),
            "{name}: {out}"
        );
        assert!(!out.contains("named like"), "{name}: {out}");
        let o = ns(&[
            "convert",
            s(&t.join(name)),
            "-o",
            s(&t.join(format!("out-{name}"))),
        ]);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(3), "{name}: {out}{err}");
        let about: Vec<&str> = out
            .lines()
            .filter(|l| l.contains(file) && (l.contains("Error:") || l.contains("named like")))
            .collect();
        assert_eq!(about.len(), 1, "{name}: one line about the cut file: {out}");
        assert!(about[0].contains("offset"), "{name}: {out}");
        assert!(!out.contains("failed to decode Protobuf"), "{name}: {out}");
    }
    // A folder whose only NTFF is empty (an idle core): not counted as converted.
    let z = t.join("zero");
    std::fs::create_dir_all(&z).unwrap();
    std::fs::write(z.join("a.ntff"), b"").unwrap();
    let o = ns(&["convert", s(&z), "-o", s(&t.join("out-zero"))]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(
        out.contains("1 profile: 0 converted, 1 empty (no trace data"),
        "{out}"
    );
    let o = ns(&["convert", "-q", s(&kdir), "-o", s(&t.join("out-clean"))]);
    assert_eq!(o.status.code(), Some(0), "clean: {:?}", text(&o));
    let o = ns(&[
        "convert",
        s(&t.join("nothing-here")),
        "-o",
        s(&t.join("out-none")),
    ]);
    assert_eq!(o.status.code(), Some(1), "nothing usable: {:?}", text(&o));
    assert_eq!(ns(&["convert", s(&t)]).status.code(), Some(2), "usage");
    let _ = std::fs::remove_dir_all(&t);
}

/// `scan` grades what cannot be what its name says as an error of that file, with its offset
/// (a user trial: a NEFF named `.ntff` and an NTFF cut to 100 bytes were Info `EMPTY_NTFF`, an
/// empty `trace_info.pb` passed, random `trace.json`/`ntrace.pb`/pickle bytes were warnings,
/// all exit 0), while an empty NTFF as an idle core leaves it stays Info.
#[test]
fn scan_grades_files_not_of_their_kind_as_errors() {
    let smp = samples();
    let kev = smp.join(KEV);
    let t = tmp("not-their-kind");
    let cap = "i-0af76a70a6d3864dd_pid_713479";
    // Random bytes of no known format (first byte 0xb1: no JSON, pickle or framed length).
    let mut noise = Vec::new();
    let mut x: u32 = 777;
    for _ in 0..5000 {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        noise.push((x >> 16) as u8 | 0x80);
    }
    noise[0] = 0xb1;
    let neff = std::fs::read(kev.join("neff_171450338541704.neff")).unwrap();
    let ntff = std::fs::read(kev.join("profile_exec_2.ntff")).unwrap();
    // Cut halfway through the info section.
    let info_len = u64::from_le_bytes(ntff[1..9].try_into().unwrap()) as usize;
    let cut_info = 128 + info_len / 2;
    let mut header_only = ntff[..128].to_vec();
    header_only[1..9].fill(0); // info length 0: an idle core's NTFF
                               // One folder per case: (folder, file, bytes, code, severity, offset).
    type Case<'a> = (&'a str, &'a str, Vec<u8>, &'a str, &'a str, Option<u64>);
    let cases: Vec<Case> = vec![
        (
            "neff",
            "x.ntff",
            neff.clone(),
            "ERROR_PROCESS_INCOMPLETE",
            "error",
            Some(0),
        ),
        (
            "cut",
            "x.ntff",
            ntff[..100].to_vec(),
            "NTFF_TRUNCATED",
            "error",
            Some(100),
        ),
        (
            "info",
            "trace_info.pb",
            vec![],
            "ERROR_PROCESS_INCOMPLETE",
            "error",
            Some(0),
        ),
        (
            "json",
            "trace.json",
            noise.clone(),
            "ERROR_PROCESS_INCOMPLETE",
            "error",
            Some(0),
        ),
        (
            "nt",
            "ntrace.pb",
            noise.clone(),
            "ERROR_PROCESS_INCOMPLETE",
            "error",
            Some(0),
        ),
        (
            "pkl",
            "memory_snapshot_rank0.pickle",
            noise.clone(),
            "ERROR_PROCESS_INCOMPLETE",
            "error",
            Some(0),
        ),
        (
            "cutinfo",
            "x.ntff",
            ntff[..cut_info].to_vec(),
            "NTFF_TRUNCATED",
            "error",
            Some(cut_info as u64),
        ),
        // Text, then a JSON array: no JSON (the reader used to skip to the `[`, a warning).
        (
            "jsontext",
            "trace.json",
            b"garbage [ ]".to_vec(),
            "ERROR_PROCESS_INCOMPLETE",
            "error",
            Some(0),
        ),
        ("empty0", "x.ntff", vec![], "EMPTY_NTFF", "info", None),
        (
            "pkl0",
            "memory_snapshot_rank0.pickle",
            vec![],
            "ERROR_PROCESS_INCOMPLETE",
            "error",
            Some(0),
        ),
        (
            "empty128",
            "x.ntff",
            header_only,
            "EMPTY_NTFF",
            "info",
            None,
        ),
    ];
    for (name, file, bytes, code, sev, offset) in &cases {
        let d = t.join(name).join(cap);
        std::fs::create_dir_all(&d).unwrap();
        // A System capture (trace_info.pb + ntrace.pb) holding the file.
        for f in ["trace_info.pb", "ntrace.pb"] {
            std::fs::copy(kev.join(f), d.join(f)).unwrap();
        }
        if file.ends_with(".ntff") {
            std::fs::copy(
                kev.join("neff_171450338541704.neff"),
                d.join("neff_171450338541704.neff"),
            )
            .unwrap();
        }
        let _ = std::fs::remove_file(d.join(file));
        std::fs::write(d.join(file), bytes).unwrap();
        let o = ns(&["scan", "--json", s(&t.join(name))]);
        let (out, err) = text(&o);
        let want = if *sev == "error" { 3 } else { 0 };
        assert_eq!(o.status.code(), Some(want), "{name}: {out}{err}");
        let inv: Value = serde_json::from_str(&out).unwrap();
        let problems = inv["profiles"][0]["problems"].as_array().unwrap();
        let path = format!("{name}/{cap}/{file}");
        let about: Vec<&Value> = problems.iter().filter(|p| p["file"] == path).collect();
        assert_eq!(about.len(), 1, "{name}: {problems:#?}");
        let p = about[0];
        assert_eq!(
            (
                p["code"].as_str(),
                p["severity"].as_str(),
                p["offset"].as_u64()
            ),
            (Some(*code), Some(*sev), *offset),
            "{name}: {p}"
        );
        let errors = problems.iter().filter(|p| p["severity"] == "error").count();
        assert_eq!(
            errors,
            usize::from(*sev == "error"),
            "{name}: {problems:#?}"
        );
    }
    let msg = |name: &str| {
        let o = ns(&["scan", "--json", s(&t.join(name))]);
        let inv: Value = serde_json::from_str(&text(&o).0).unwrap();
        inv["profiles"][0]["problems"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["severity"] == "error")
            .unwrap()["message"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let m = msg("neff");
    assert!(
        m.contains("looks like a compiled program (NEFF), not an NTFF")
            && m.contains("at offset 0: expected an NTFF version byte"),
        "{m}"
    );
    assert!(msg("cut").contains("100 bytes, ending inside the 128-byte NTFF header"));
    assert!(
        msg("cutinfo").contains(&format!(
            "{cut_info} bytes, ending inside the {info_len}-byte info section at offset 128: \
             the file is cut"
        )),
        "{}",
        msg("cutinfo")
    );
    assert!(msg("info").contains("empty file, expected a TraceInfo message"));
    assert!(msg("json").contains("at offset 0 expected JSON"));
    assert!(
        msg("jsontext").contains("is not JSON (it looks like text): at offset 0 expected JSON"),
        "{}",
        msg("jsontext")
    );
    // `convert` reports each fault once (the decoder's, with its offset), exit 3; the empty
    // trace_info.pb no longer turns into a count warning against ntrace.pb.
    for (name, file) in [
        ("info", "trace_info.pb"),
        ("json", "trace.json"),
        ("jsontext", "trace.json"),
        ("pkl", "memory_snapshot_rank0.pickle"),
    ] {
        let o = ns(&[
            "convert",
            "-q",
            s(&t.join(name)),
            "-o",
            s(&t.join(format!("out-{name}"))),
        ]);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(3), "{name}: {out}{err}");
        let lines: Vec<&str> = err.lines().filter(|l| l.contains("Error:")).collect();
        assert_eq!(lines.len(), 1, "{name}: {err}");
        assert!(lines[0].contains(file), "{name}: {err}");
        assert!(!err.contains("trace_info.pb says"), "{name}: {err}");
    }
    let _ = std::fs::remove_dir_all(&t);
}

/// A `trace.json` whose `traceEvents` is not an array has nothing to show: `convert` reports an
/// error at the end of its JSON, exit 3 (a user trial: warnings only, exit 0).
#[test]
fn trace_json_without_an_event_array_is_an_error() {
    let kev = samples().join(KEV);
    let t = tmp("no-events");
    let d = t.join("in").join("i-0abc_pid_1");
    std::fs::create_dir_all(&d).unwrap();
    for f in ["trace_info.pb", "ntrace.pb"] {
        std::fs::copy(kev.join(f), d.join(f)).unwrap();
    }
    let json = b"{\"traceEvents\": 5}\n";
    std::fs::write(d.join("trace.json"), json).unwrap();
    let o = ns(&["convert", s(&t.join("in")), "-o", s(&t.join("out"))]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(3), "{out}{err}");
    let errors: Vec<&str> = out.lines().filter(|l| l.contains("Error:")).collect();
    assert_eq!(errors.len(), 1, "{out}");
    assert!(
        errors[0].contains(
            "in/i-0abc_pid_1/trace.json: no `traceEvents` array by the end of the JSON at byte 19"
        ),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&t);
}

/// File and folder names that are not UTF-8 (Linux allows any bytes but `/` and NUL): listed
/// under their lossy text (two names differing only in bad bytes stay apart) and opened by their
/// real names (a user trial: `scan` and `convert` failed with "No such file": the lossy name was
/// opened).
#[test]
fn names_that_are_not_utf8_are_opened_by_their_real_names() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let agents = samples().join("KevGomes-nki-moe-megakernel/kernels/moe_tkg/agents");
    let t = tmp("not-utf8");
    let top = t.join("in");
    let d = top.join(OsStr::from_bytes(b"run\xff"));
    std::fs::create_dir_all(&d).unwrap();
    std::fs::copy(
        agents.join("v6b.neff"),
        d.join(OsStr::from_bytes(b"v6b\xff\xfe.neff")),
    )
    .unwrap();
    // Two names that differ only in their bad bytes, and one with a backslash (no separator on
    // Linux).
    for name in [
        &b"profile_v6b\xff_exec_2.ntff"[..],
        b"profile_v6b\xfe_exec_2.ntff",
        b"profile_v6b\\x_exec_2.ntff",
    ] {
        std::fs::copy(
            agents.join("profile_v6b_exec_2.ntff"),
            d.join(OsStr::from_bytes(name)),
        )
        .unwrap();
    }
    let o = ns(&["scan", "--json", s(&top)]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(!out.contains("No such file"), "{out}");
    let inv: Value = serde_json::from_str(&out).unwrap();
    let mut paths: Vec<&str> = inv["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    paths.sort();
    assert_eq!(
        paths,
        [
            "in/run\u{FFFD}/profile_v6b%5Cx_exec_2.ntff",
            "in/run\u{FFFD}/profile_v6b%FF_exec_2.ntff",
            "in/run\u{FFFD}/profile_v6b\u{FFFD}_exec_2.ntff",
            "in/run\u{FFFD}/v6b\u{FFFD}\u{FFFD}.neff",
        ]
    );
    let devices = inv["profiles"][0]["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 3, "{devices:#?}");
    for dv in devices {
        assert_eq!(dv["pairing"]["status"], "Paired", "{dv}");
        assert_eq!(
            dv["neff"], "in/run\u{FFFD}/v6b\u{FFFD}\u{FFFD}.neff",
            "{dv}"
        );
    }
    let o = ns(&["convert", s(&top), "-o", s(&t.join("out"))]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(
        out.contains("3 profiles: 3 converted, 0 unchanged (skipped), 0 with errors"),
        "{out}"
    );
    let profiles = read_parquet(&t.join("out/_profiles.parquet"));
    let errors = profiles
        .column_by_name("errors")
        .unwrap()
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap();
    assert!(
        (0..errors.len()).all(|i| errors.value(i) == 0),
        "{profiles:?}"
    );
    assert!(
        !partitions(&t.join("out"), "Instruction").is_empty(),
        "Instruction rows written"
    );
    let _ = std::fs::remove_dir_all(&t);
}

/// A folder holding only a framework trace (`trace.json`) is no profile: the message says what
/// was found and what a System profile needs beside it (a user trial: "no profile found" alone);
/// counts agree with their noun ("1 profile", not "1 profiles").
#[test]
fn a_lone_framework_trace_says_what_is_missing() {
    let t = tmp("lone-trace-json");
    let d = t.join("run");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(
        d.join("trace.json"),
        b"{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"a\", \"ts\": 1, \"dur\": 1}]}",
    )
    .unwrap();
    let o = ns(&["scan", s(&d)]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.starts_with("1 file, 0 profiles\n"), "{out}");
    let line = out
        .lines()
        .find(|l| l.contains("no profile found"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.contains("found run/trace.json (framework trace)")
            && line.contains("no ntrace.pb or trace_info.pb beside it"),
        "{line}"
    );
    // convert says the same, exit 1 (nothing usable).
    let o = ns(&["convert", s(&d), "-o", s(&t.join("out"))]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(
        err.contains("no profile found (found run/trace.json (framework trace), but no ntrace.pb"),
        "{err}"
    );
    // bench too (it said "no … trace.json" of a folder holding one).
    let o = ns(&["bench", s(&d), "-q"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(
        err.contains(
            "no profile found to measure (found run/trace.json (framework trace), but no ntrace.pb"
        ),
        "{err}"
    );
    // A folder with nothing the profiler writes keeps the short message.
    std::fs::remove_file(d.join("trace.json")).unwrap();
    std::fs::write(d.join("notes.txt"), b"hello").unwrap();
    let out = text(&ns(&["scan", s(&d)])).0;
    assert!(
        out.contains("no profile found: pick a folder holding .ntff/.neff files"),
        "{out}"
    );
    // A memory snapshot alone lacks nothing: it is read on its own.
    std::fs::write(d.join("memory_snapshot_rank0.pickle"), b"\x80\x04N.").unwrap();
    let out = text(&ns(&["scan", s(&d)])).0;
    assert!(
        out.contains(
            "Info: no device or system profile found (the memory snapshot is read on its own"
        ),
        "{out}"
    );
    assert!(!out.contains("pick a folder"), "{out}");
    // An empty one is an error in scan, and convert says its fault once (the decoder's).
    std::fs::write(d.join("memory_snapshot_rank0.pickle"), b"").unwrap();
    let o = ns(&["scan", s(&d)]);
    let out = text(&o).0;
    assert_eq!(o.status.code(), Some(3), "{out}");
    assert!(out.contains("empty file, expected a pickle"), "{out}");
    let o = ns(&["convert", "-q", s(&d), "-o", s(&t.join("out-pkl"))]);
    let err = text(&o).1;
    assert_eq!(
        err.matches("run/memory_snapshot_rank0.pickle:").count(),
        1,
        "{err}"
    );
    // One profile is "1 profile".
    let o = ns(&["synth", s(&t.join("demo"))]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let out = text(&ns(&["scan", s(&t.join("demo"))])).0;
    assert!(
        out.lines()
            .next()
            .is_some_and(|l| l.ends_with(", 1 profile")),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&t);
}

/// A runtime trace without its trace_info.pb: `convert` says so once (Explorer's
/// ERROR_NO_METADATA, naming the folder), not also as the scan's warning, and not twice; an
/// empty one says it is empty (a user trial: the warning twice, the error naming no file).
#[test]
fn a_runtime_trace_without_metadata_is_said_once() {
    let kev = samples().join(KEV);
    let t = tmp("no-metadata");
    for (name, bytes) in [
        ("full", std::fs::read(kev.join("ntrace.pb")).unwrap()),
        ("empty", Vec::new()),
    ] {
        let d = t.join(name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("ntrace.pb"), &bytes).unwrap();
        let o = ns(&["convert", s(&d), "-o", s(&t.join(format!("out-{name}")))]);
        let (out, err) = text(&o);
        // Exit 1 for the empty one: nothing usable.
        let want = if bytes.is_empty() { 1 } else { 3 };
        assert_eq!(o.status.code(), Some(want), "{name}: {out}{err}");
        let said = |what: &str| out.lines().filter(|l| l.contains(what)).count();
        assert_eq!(said("No metadata found"), 1, "{name}: {out}");
        assert_eq!(said("without trace_info.pb"), 0, "{name}: {out}");
        assert!(
            out.contains(&format!(
                "Error: {name}: No metadata found for system profile: trace_info.pb is missing"
            )),
            "{name}: {out}"
        );
        assert_eq!(
            said(&format!("{name}/ntrace.pb: empty file (0 bytes)")),
            usize::from(bytes.is_empty()),
            "{name}: {out}"
        );
    }
    let _ = std::fs::remove_dir_all(&t);
}

/// A pipe named like a profiler file is not read (it could block) but is said with `-v`
/// (a user trial: skipped without a word).
#[test]
fn a_pipe_is_skipped_and_said() {
    let t = tmp("pipe");
    std::fs::create_dir_all(&t).unwrap();
    let fifo = t.join("x.ntff");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let (out, err) = text(&ns(&["scan", "-v", s(&t)]));
    assert!(
        out.contains("-pipe/x.ntff: not a regular file (a pipe, socket or device); skipped"),
        "{out}{err}"
    );
    let (out, _) = text(&ns(&["scan", s(&t)]));
    assert!(!out.contains("not a regular file"), "only with -v: {out}");
    let _ = std::fs::remove_dir_all(&t);
}
