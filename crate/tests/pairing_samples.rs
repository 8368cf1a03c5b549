//! Pairing and inventory on the real samples: INDEX.tsv column `ntff_pairs_with_neff` is the
//! ground truth (docs/format/pairing.md §4.3: 38 pairs, 12 NTFFs without a NEFF).

mod common;
#[path = "common/mutate.rs"]
mod mutate;
use common::samples;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use neuronscope::inventory::{self, DeviceProfile, FileKind, Inventory, PairStatus, ProfileType};
use neuronscope::pairing::{self, uuid_match, UuidMatch};
use neuronscope::source::FileSource;
use neuronscope::{ByteSource, Result, Severity};

/// All files below `root`, as (path relative to `root`, size), sorted.
fn walk(root: &Path) -> Vec<(String, u64)> {
    fn rec(root: &Path, dir: &Path, out: &mut Vec<(String, u64)>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("read_dir {}: {e}", dir.display()))
            .map(|e| e.expect("dir entry").path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                rec(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).expect("prefix");
                let rel = rel.to_string_lossy().replace('\\', "/");
                out.push((rel, p.metadata().expect("metadata").len()));
            }
        }
    }
    let mut out = Vec::new();
    rec(root, root, &mut out);
    assert!(!out.is_empty(), "no files below {}", root.display());
    out
}

fn open_file(p: &Path) -> Result<Box<dyn ByteSource>> {
    Ok(Box::new(FileSource::open(p)?))
}

fn build_over(root: &Path) -> Inventory {
    let files = walk(root);
    let root = root.to_path_buf();
    let open = move |p: &str| open_file(&root.join(p));
    inventory::build(&files, &open)
}

/// Builds an inventory over virtual paths mapped to real sample files.
fn build_virtual(map: &[(&str, PathBuf)]) -> Inventory {
    let files: Vec<(String, u64)> = map
        .iter()
        .map(|(v, real)| {
            let len = real
                .metadata()
                .unwrap_or_else(|e| panic!("{}: {e}", real.display()))
                .len();
            (v.to_string(), len)
        })
        .collect();
    let table: BTreeMap<String, PathBuf> = map
        .iter()
        .map(|(v, r)| (v.to_string(), r.clone()))
        .collect();
    let open = move |p: &str| match table.get(p) {
        Some(real) => open_file(real),
        None => Err(neuronscope::Error::Io(format!("no such virtual file {p}"))),
    };
    inventory::build(&files, &open)
}

/// NTFF path → its device entry.
fn devices(inv: &Inventory) -> BTreeMap<String, DeviceProfile> {
    inv.profiles
        .iter()
        .flat_map(|p| p.devices.iter())
        .filter_map(|d| d.ntff.clone().map(|n| (n, d.clone())))
        .collect()
}

/// INDEX.tsv NTFF rows: (NTFF path, expected NEFF path or None), paths relative to the samples.
fn index_ntffs() -> Vec<(String, Option<String>)> {
    let text = std::fs::read_to_string(samples().join("INDEX.tsv")).expect("INDEX.tsv");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("header").split('\t').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("INDEX.tsv has no column {name}"))
    };
    let (src, path, kind, pairs) = (
        col("source"),
        col("path"),
        col("kind"),
        col("ntff_pairs_with_neff"),
    );
    lines
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .filter(|c| c.get(kind) == Some(&"NTFF"))
        .map(|c| {
            let p = format!("{}/{}", c[src], c[path]);
            let n = c.get(pairs).filter(|s| !s.is_empty());
            (p, n.map(|n| format!("{}/{}", c[src], n)))
        })
        .collect()
}

#[test]
fn every_index_pair_is_found_and_nothing_else() {
    let inv = build_over(&samples());
    let devs = devices(&inv);
    let expected = index_ntffs();
    assert_eq!(expected.len(), 50, "INDEX.tsv NTFF rows");
    let (mut paired, mut missing) = (0, 0);
    for (ntff, neff) in &expected {
        let d = devs
            .get(ntff)
            .unwrap_or_else(|| panic!("{ntff}: no device entry in the inventory"));
        match neff {
            Some(neff) => {
                assert!(
                    matches!(d.pairing, PairStatus::Paired { .. }),
                    "{ntff}: expected Paired with {neff}, got {:?}",
                    d.pairing
                );
                assert_eq!(d.neff.as_deref(), Some(neff.as_str()), "{ntff}: wrong NEFF");
                paired += 1;
            }
            None => {
                assert_eq!(d.pairing, PairStatus::MissingNeff, "{ntff}");
                assert_eq!(d.neff, None, "{ntff}");
                missing += 1;
            }
        }
    }
    assert_eq!((paired, missing), (38, 12), "pairs / NTFFs without NEFF");
    assert_eq!(devs.len(), 50, "one device entry per NTFF");

    // Evidence strings: one weak match (field 2 absent), one cut 13-byte prefix; the v6 4-byte
    // cut pairs by the full uuid and says plain "uuid".
    let by: BTreeMap<&str, &str> = devs
        .iter()
        .filter_map(|(k, d)| match &d.pairing {
            PairStatus::Paired { by } => Some((k.as_str(), by.as_str())),
            _ => None,
        })
        .collect();
    let count = |s: &str| by.values().filter(|b| **b == s).count();
    assert_eq!(count("uuid"), 36, "{by:#?}");
    assert_eq!(
        by["cs149-riya-ranjan/part2/my_convpool_kernel_float32_smaller.ntff"],
        "uuid (weak, same directory)"
    );
    assert_eq!(
        by["cs149-chengli2003/part2/conv2d_4_float16_smaller.ntff"],
        "uuid (13-byte prefix)"
    );

    // Problems: 12 MISSING_NEFF warnings and nothing worse than the capture note.
    let all: Vec<_> = inv
        .profiles
        .iter()
        .flat_map(|p| p.problems.iter())
        .chain(inv.problems.iter())
        .collect();
    let missing_w = all.iter().filter(|p| p.code == "MISSING_NEFF").count();
    assert_eq!(missing_w, 12);
    assert!(
        all.iter().all(|p| p.severity != Severity::Error),
        "unexpected errors: {all:#?}"
    );

    // NEFFs no NTFF ran: 84 − 38 distinct paired NEFFs, each a NeffOnly entry.
    let neff_only = inv
        .profiles
        .iter()
        .flat_map(|p| p.devices.iter())
        .filter(|d| d.pairing == PairStatus::NeffOnly)
        .count();
    assert_eq!(neff_only, 84 - 38);
    // Every file is listed; JSON exports recognised by name (16 full exports).
    assert_eq!(inv.files.len(), walk(&samples()).len());
    let exports = inv
        .files
        .iter()
        .filter(|f| f.kind == FileKind::ProfilerJsonExport)
        .count();
    assert_eq!(exports, 16);
}

/// The pairing.md §4.2/§4.3 byte claims, checked directly with the extractor and the rule.
#[test]
fn uuid_rule_on_all_samples() {
    let root = samples();
    let files = walk(&root);
    let neffs: Vec<(String, neuronscope::neff::NeffHeader)> = files
        .iter()
        .filter(|(p, _)| p.ends_with(".neff"))
        .map(|(p, _)| {
            let s = FileSource::open(&root.join(p)).expect("open");
            (p.clone(), neuronscope::neff::read_header(&s).expect(p))
        })
        .collect();
    assert_eq!(neffs.len(), 84);
    let expected: BTreeMap<String, Option<String>> = index_ntffs().into_iter().collect();
    let mut v6 = 0;
    let mut v6_pairs = 0;
    for (ntff, neff) in &expected {
        let s = FileSource::open(&root.join(ntff)).expect("open");
        let ids = pairing::ntff_ids(&s)
            .unwrap_or_else(|e| panic!("{ntff}: {e}"))
            .unwrap_or_else(|| panic!("{ntff}: unexpectedly empty"));
        assert!(
            (4..=6).contains(&ids.version),
            "{ntff}: version {}",
            ids.version
        );
        if ids.version == 6 {
            v6 += 1;
            assert!(ids.full_uuid.is_some(), "{ntff}: v6 without full uuid");
        } else {
            assert_eq!(ids.full_uuid, None, "{ntff}: full uuid before v6");
        }
        // The C-string rule alone (ignoring the full uuid) must agree with the full uuid.
        let cstr_matches: Vec<&str> = neffs
            .iter()
            .filter(|(_, h)| uuid_match(None, ids.uuid_cstr.as_deref(), &h.uuid).is_some())
            .map(|(p, _)| p.as_str())
            .collect();
        let matches: Vec<&str> = neffs
            .iter()
            .filter(|(_, h)| {
                uuid_match(ids.full_uuid.as_ref(), ids.uuid_cstr.as_deref(), &h.uuid).is_some()
            })
            .map(|(p, _)| p.as_str())
            .collect();
        match neff {
            None => {
                assert!(matches.is_empty(), "{ntff}: matches {matches:?}");
                assert!(cstr_matches.is_empty(), "{ntff}: matches {cstr_matches:?}");
            }
            Some(n) => {
                assert!(matches.contains(&n.as_str()), "{ntff}: {matches:?}");
                assert!(
                    cstr_matches.contains(&n.as_str()),
                    "{ntff}: {cstr_matches:?}"
                );
                let h = &neffs.iter().find(|(p, _)| p == n).expect("neff").1;
                assert_eq!(
                    ids.neff_name.as_deref(),
                    Some(h.name.as_str()),
                    "{ntff} field 1"
                );
                if ids.version == 6 {
                    v6_pairs += 1;
                    assert_eq!(ids.full_uuid, Some(h.uuid), "{ntff}: field 4.5");
                }
                if ids.uuid_cstr.is_none() {
                    // pairing.md §4.3: the absent-field case matches two NEFFs.
                    assert_eq!(matches.len(), 2, "{ntff}: {matches:?}");
                } else {
                    assert_eq!(matches.len(), 1, "{ntff}: {matches:?}");
                }
            }
        }
    }
    assert_eq!((v6, v6_pairs), (13, 10));
    // ntff.md §3.1 field 2 lengths: 4, 13, 18–22, or absent.
    let lens: Vec<Option<usize>> = expected
        .keys()
        .map(|ntff| {
            let s = FileSource::open(&root.join(ntff)).expect("open");
            let ids = pairing::ntff_ids(&s).expect("ids").expect("data");
            ids.uuid_cstr.map(|b| b.len())
        })
        .collect();
    let mut hist: BTreeMap<Option<usize>, usize> = BTreeMap::new();
    for l in &lens {
        *hist.entry(*l).or_default() += 1;
    }
    println!("field 2 length histogram: {hist:?}");
    assert!(
        lens.iter()
            .all(|l| matches!(l, None | Some(4) | Some(13) | Some(18..=22))),
        "{hist:?}"
    );
    assert_eq!(
        (hist[&None], hist[&Some(4)], hist[&Some(13)]),
        (1, 1, 1),
        "{hist:?}"
    );

    // The four §4.2 examples.
    let f2 = |p: &str| {
        let s = FileSource::open(&root.join(p)).expect("open");
        pairing::ntff_ids(&s).expect(p).expect(p).uuid_cstr
    };
    let uuid = |p: &str| {
        let s = FileSource::open(&root.join(p)).expect("open");
        neuronscope::neff::read_header(&s).expect(p).uuid
    };
    let a = "allenkchau-trainium-kernel-fusion/profiling/artifacts";
    let b = f2(&format!("{a}/baseline_bf16_s512/baseline_exec_2.ntff")).expect("f2");
    assert_eq!(b.len(), 18);
    assert_eq!(
        b[..16],
        uuid(&format!("{a}/baseline_bf16_s512/baseline.neff"))
    );
    let c = f2(&format!("{a}/baseline_fp32_s512/baseline_exec_2.ntff")).expect("f2");
    let u = uuid(&format!("{a}/baseline_fp32_s512/baseline.neff"));
    assert_eq!((c.len(), &c[..], u[4]), (4, &u[..4], 0));
    assert_eq!(
        uuid_match(None, Some(&c), &u),
        Some(UuidMatch::Cut { len: 4 })
    );
    let d = f2("cs149-chengli2003/part2/conv2d_4_float16_smaller.ntff").expect("f2");
    assert_eq!(d.len(), 13);
    assert_eq!(
        f2("cs149-riya-ranjan/part2/my_convpool_kernel_float32_smaller.ntff"),
        None
    );
    assert_eq!(
        uuid("cs149-riya-ranjan/part2/my_convpool_kernel_float32_smaller.neff")[0],
        0
    );
}

#[test]
fn swapped_neff_is_a_uuid_mismatch() {
    let a = samples().join("allenkchau-trainium-kernel-fusion/profiling/artifacts");
    // Same directory, other name: the only NEFF there is hinted by the directory.
    let inv = build_virtual(&[
        (
            "x/fused_exec_2.ntff",
            a.join("fused_bf16_s512/fused_exec_2.ntff"),
        ),
        (
            "x/baseline.neff",
            a.join("baseline_bf16_s512/baseline.neff"),
        ),
    ]);
    assert_eq!(inv.profiles.len(), 1);
    let p = &inv.profiles[0];
    assert_eq!(p.profile_type, ProfileType::Device);
    let d = &p.devices[0];
    assert_eq!(
        d.pairing,
        PairStatus::UuidMismatch {
            neff: "x/baseline.neff".into()
        }
    );
    assert_eq!(d.neff.as_deref(), Some("x/baseline.neff"));
    let err: Vec<_> = p
        .problems
        .iter()
        .filter(|q| q.severity == Severity::Error)
        .collect();
    assert_eq!(err.len(), 1, "{:#?}", p.problems);
    assert_eq!(err[0].code, "ERROR_PROCESS_INCOMPLETE");
    assert_eq!(err[0].file.as_deref(), Some("x/fused_exec_2.ntff"));
    assert!(
        err[0].message.contains("x/fused_exec_2.ntff"),
        "{}",
        err[0].message
    );
    assert!(
        err[0].message.contains("x/baseline.neff"),
        "{}",
        err[0].message
    );
    // The mismatched NEFF is not used, so it is not offered as a NEFF-only entry twice.
    assert_eq!(p.devices.len(), 2);
    assert_eq!(p.devices[1].pairing, PairStatus::NeffOnly);

    // Same name, other compilation (fused.neff of fused_fp32_s512), with an unrelated NEFF that
    // some other NTFF uses: the name decides which NEFF is reported.
    let inv = build_virtual(&[
        (
            "y/fused_exec_2.ntff",
            a.join("fused_bf16_s512/fused_exec_2.ntff"),
        ),
        ("y/fused.neff", a.join("fused_fp32_s512/fused.neff")),
        (
            "y/baseline_exec_2.ntff",
            a.join("baseline_bf16_s512/baseline_exec_2.ntff"),
        ),
        (
            "y/baseline.neff",
            a.join("baseline_bf16_s512/baseline.neff"),
        ),
    ]);
    let devs = devices(&inv);
    assert_eq!(
        devs["y/fused_exec_2.ntff"].pairing,
        PairStatus::UuidMismatch {
            neff: "y/fused.neff".into()
        }
    );
    assert_eq!(
        devs["y/baseline_exec_2.ntff"].pairing,
        PairStatus::Paired { by: "uuid".into() }
    );

    // The right NEFF in another directory wins over a wrong one next to the NTFF.
    let inv = build_virtual(&[
        (
            "z/run/fused_exec_2.ntff",
            a.join("fused_bf16_s512/fused_exec_2.ntff"),
        ),
        ("z/run/fused.neff", a.join("fused_fp32_s512/fused.neff")),
        ("z/neffs/fused.neff", a.join("fused_bf16_s512/fused.neff")),
    ]);
    let d = &devices(&inv)["z/run/fused_exec_2.ntff"];
    assert_eq!(d.pairing, PairStatus::Paired { by: "uuid".into() });
    assert_eq!(d.neff.as_deref(), Some("z/neffs/fused.neff"));
}

#[test]
fn duplicate_neffs_tie_breaks() {
    let a = samples().join("allenkchau-trainium-kernel-fusion/profiling/artifacts");
    let ntff = a.join("fused_bf16_s512/fused_exec_2.ntff");
    let neff = a.join("fused_bf16_s512/fused.neff");
    // Two copies elsewhere: identical (same header hash) → first one, said so.
    let inv = build_virtual(&[
        ("run/fused_exec_2.ntff", ntff.clone()),
        ("c1/fused.neff", neff.clone()),
        ("c2/fused.neff", neff.clone()),
    ]);
    let d = &devices(&inv)["run/fused_exec_2.ntff"];
    assert_eq!(
        d.pairing,
        PairStatus::Paired {
            by: "uuid (identical copies)".into()
        }
    );
    assert_eq!(d.neff.as_deref(), Some("c1/fused.neff"));
    // A copy next to the NTFF wins.
    let inv = build_virtual(&[
        ("run/fused_exec_2.ntff", ntff),
        ("c1/fused.neff", neff.clone()),
        ("run/fused.neff", neff),
    ]);
    let d = &devices(&inv)["run/fused_exec_2.ntff"];
    assert_eq!(
        d.pairing,
        PairStatus::Paired {
            by: "uuid (same directory)".into()
        }
    );
    assert_eq!(d.neff.as_deref(), Some("run/fused.neff"));
    // The copy no NTFF used is a NEFF-only entry of its own directory.
    let c1 = inv.profiles.iter().find(|p| p.root == "c1").expect("c1");
    assert_eq!(c1.devices[0].pairing, PairStatus::NeffOnly);
}

#[test]
fn weak_match_needs_name_agreement() {
    let r = samples().join("cs149-riya-ranjan/part2");
    let ntff = r.join("my_convpool_kernel_float32_smaller.ntff");
    let neff = r.join("my_convpool_kernel_float32_smaller.neff");
    // The only other sample NEFF whose uuid starts with 00 (header name "file.neff").
    let other = samples().join("nkipy/spike/tests/artifacts/matmul_small.neff");
    // Field 2 absent: field 1 (= header name) confirms the right NEFF across directories.
    let inv = build_virtual(&[
        ("a/trace.ntff", ntff.clone()),
        ("b/k.neff", neff.clone()),
        ("b/m.neff", other.clone()),
    ]);
    let d = &devices(&inv)["a/trace.ntff"];
    assert_eq!(
        d.pairing,
        PairStatus::Paired {
            by: "uuid (weak, NEFF name)".into()
        }
    );
    assert_eq!(d.neff.as_deref(), Some("b/k.neff"));
    // The wrong 00-uuid NEFF elsewhere: names disagree → missing, not paired.
    let inv = build_virtual(&[("a/trace.ntff", ntff.clone()), ("b/m.neff", other.clone())]);
    assert_eq!(
        devices(&inv)["a/trace.ntff"].pairing,
        PairStatus::MissingNeff
    );
    // … and next to the NTFF: reported as a mismatch naming it.
    let inv = build_virtual(&[("a/trace.ntff", ntff), ("a/m.neff", other)]);
    assert_eq!(
        devices(&inv)["a/trace.ntff"].pairing,
        PairStatus::UuidMismatch {
            neff: "a/m.neff".into()
        }
    );
}

#[test]
fn kevgomes_capture_is_system_plus_device() {
    let out = samples().join("KevGomes-nki-moe-megakernel/output");
    let inv = build_over(&out);
    assert_eq!(inv.profiles.len(), 1, "{:#?}", inv.profiles);
    let p = &inv.profiles[0];
    assert_eq!(p.id, "i-0af76a70a6d3864dd_pid_713479");
    assert_eq!(p.profile_type, ProfileType::SystemDevice);
    assert_eq!(p.instance_id.as_deref(), Some("i-0af76a70a6d3864dd"));
    assert_eq!(p.pid, Some(713479));
    assert_eq!(p.devices.len(), 1);
    let d = &p.devices[0];
    assert_eq!(d.name, "profile_exec_2");
    assert_eq!(d.pairing, PairStatus::Paired { by: "uuid".into() });
    assert_eq!(
        d.neff.as_deref(),
        Some("i-0af76a70a6d3864dd_pid_713479/neff_171450338541704.neff")
    );
    assert_eq!(
        d.model_id,
        Some(171450338541704),
        "model id from the NEFF name"
    );
    assert_eq!((d.exec, d.ntff_version), (Some(2), Some(6)));
    let mut sys = p.system_files.clone();
    sys.sort();
    let base = "i-0af76a70a6d3864dd_pid_713479";
    assert_eq!(
        sys,
        ["cpu_util.pb", "host_mem.pb", "ntrace.pb", "trace_info.pb"]
            .iter()
            .map(|f| format!("{base}/{f}"))
            .collect::<Vec<_>>()
    );
    // Problems: only the note that the NTFF is a different capture of the same NEFF
    // (pairing.md §6: NTFF field 18 = 723577, capture pid 713479).
    assert_eq!(p.problems.len(), 1, "{:#?}", p.problems);
    let q = &p.problems[0];
    assert_eq!(
        (q.severity, q.code.as_str()),
        (Severity::Info, "DIFFERENT_CAPTURE")
    );
    assert!(
        q.message.contains("723577") && q.message.contains("713479"),
        "{}",
        q.message
    );
    assert!(inv.problems.is_empty());
    // Serialised for the page.
    let json = serde_json::to_string(&inv).expect("json");
    assert!(json.contains(r#""profile_type":"System+Device""#), "{json}");
    assert!(
        json.contains(r#""pairing":{"status":"Paired","by":"uuid"}"#),
        "{json}"
    );
    assert!(json.contains(r#""kind":"TraceInfo""#), "{json}");
}

#[test]
fn capture_without_trace_info_or_ntrace() {
    let cap = samples().join("KevGomes-nki-moe-megakernel/output/i-0af76a70a6d3864dd_pid_713479");
    // ntrace.pb alone, inside a timestamped sub-directory of the pid directory.
    let inv = build_virtual(&[
        (
            "i-0af76a70a6d3864dd_pid_713479/20260101_120000/ntrace.pb",
            cap.join("ntrace.pb"),
        ),
        (
            "i-0af76a70a6d3864dd_pid_713479/20260101_120000/cpu_util.pb",
            cap.join("cpu_util.pb"),
        ),
    ]);
    assert_eq!(inv.profiles.len(), 1);
    let p = &inv.profiles[0];
    assert_eq!(p.profile_type, ProfileType::System);
    assert_eq!(p.instance_id.as_deref(), Some("i-0af76a70a6d3864dd"));
    assert_eq!(p.pid, Some(713479));
    assert_eq!(p.system_files.len(), 2);
    let codes: Vec<_> = p.problems.iter().map(|q| q.code.as_str()).collect();
    assert_eq!(codes, ["MISSING_TRACE_INFO"]);
    // trace_info.pb alone.
    let inv = build_virtual(&[("cap/trace_info.pb", cap.join("trace_info.pb"))]);
    let codes: Vec<_> = inv.profiles[0]
        .problems
        .iter()
        .map(|q| q.code.as_str())
        .collect();
    assert_eq!(codes, ["MISSING_NTRACE"]);
    assert_eq!(inv.profiles[0].instance_id, None);
}

#[test]
fn allenkchau_folder_alone_is_a_device_profile() {
    let dir =
        samples().join("allenkchau-trainium-kernel-fusion/profiling/artifacts/fused_bf16_s512");
    let inv = build_over(&dir);
    assert_eq!(inv.profiles.len(), 1, "{:#?}", inv.profiles);
    let p = &inv.profiles[0];
    assert_eq!((p.id.as_str(), p.root.as_str()), (".", ""));
    assert_eq!(p.profile_type, ProfileType::Device);
    assert_eq!(p.devices.len(), 1);
    let d = &p.devices[0];
    assert_eq!(d.ntff.as_deref(), Some("fused_exec_2.ntff"));
    assert_eq!(d.neff.as_deref(), Some("fused.neff"));
    assert_eq!(d.pairing, PairStatus::Paired { by: "uuid".into() });
    assert_eq!(d.name, "fused_exec_2");
    assert_eq!(d.exec, Some(2));
    assert_eq!(
        p.other_files,
        vec!["json_reports/fused_exec_2_profile_full.json".to_string()]
    );
    assert!(p.problems.is_empty(), "{:#?}", p.problems);
}

#[test]
fn garbage_and_truncated_inputs_never_panic() {
    let a = samples().join("allenkchau-trainium-kernel-fusion/profiling/artifacts/fused_bf16_s512");
    let ntff = std::fs::read(a.join("fused_exec_2.ntff")).expect("read");
    let neff = std::fs::read(a.join("fused.neff")).expect("read");
    let info_end = 128 + u64::from_le_bytes(ntff[1..9].try_into().expect("8")) as usize;
    let mut rng = mutate::Lcg(7);
    let mut variants: Vec<Vec<u8>> = Vec::new();
    // Truncations through the header and info section, and a few beyond.
    for cut in mutate::offsets(info_end.min(ntff.len()), 97).chain([info_end, info_end + 1]) {
        variants.push(ntff[..cut.min(ntff.len())].to_vec());
    }
    // Bit flips in the header and info section.
    for _ in 0..400 {
        let head = &ntff[..(info_end + 64).min(ntff.len())];
        let at = (rng.next() as usize) % head.len();
        variants.push(mutate::edited(head, at, |b| b ^ 1 << (rng.next() % 8)));
    }
    // Pure garbage with plausible version bytes and huge / tiny info lengths.
    for i in 0..50 {
        let n = 128 + (rng.next() as usize % 4096);
        let mut v: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
        v[0] = 4 + (i % 3) as u8;
        if i % 2 == 0 {
            let p = (rng.next() as usize % (n - 128)) as u64;
            v[1..9].copy_from_slice(&p.to_le_bytes());
        }
        variants.push(v);
    }
    for v in &variants {
        let _ = pairing::ntff_ids(v);
    }
    // Whole inventory over garbage .ntff/.neff files next to real ones.
    let mut files: Vec<(String, Vec<u8>)> = vec![
        ("g/real.ntff".into(), ntff.clone()),
        ("g/real.neff".into(), neff.clone()),
        ("g/empty.ntff".into(), Vec::new()),
        ("g/short.ntff".into(), vec![0; 100]),
        // The real NTFF cut inside its header is cut, not empty; bytes no header starts with
        // (an info length above any NTFF's) are not an NTFF.
        ("g/cut.ntff".into(), ntff[..100].to_vec()),
        ("g/junk.ntff".into(), vec![6; 100]),
        ("g/zero_info.ntff".into(), vec![0; 300]),
        ("g/empty.neff".into(), Vec::new()),
    ];
    for (i, v) in variants.iter().enumerate().step_by(7) {
        files.push((format!("g/v{i}.ntff"), v.clone()));
        let head = &neff[..(1024 + i).min(neff.len())];
        let at = (rng.next() as usize) % head.len();
        files.push((
            format!("g/v{i}.neff"),
            mutate::edited(head, at, |b| b ^ 0xff),
        ));
    }
    let list: Vec<(String, u64)> = files
        .iter()
        .map(|(p, v)| (p.clone(), v.len() as u64))
        .collect();
    let table: BTreeMap<String, Vec<u8>> = files.into_iter().collect();
    let open = move |p: &str| -> Result<Box<dyn ByteSource>> {
        Ok(Box::new(table.get(p).cloned().unwrap_or_default()))
    };
    let inv = inventory::build(&list, &open);
    let devs = devices(&inv);
    assert!(matches!(
        devs["g/real.ntff"].pairing,
        PairStatus::Paired { .. }
    ));
    for f in ["g/empty.ntff", "g/short.ntff", "g/zero_info.ntff"] {
        assert_eq!(devs[f].pairing, PairStatus::EmptyNtff, "{f}");
    }
    let p = &inv.profiles[0];
    for (f, code, offset) in [
        ("g/cut.ntff", "NTFF_TRUNCATED", 100),
        ("g/junk.ntff", "ERROR_PROCESS_INCOMPLETE", 1),
    ] {
        assert!(
            matches!(devs[f].pairing, PairStatus::Unreadable { .. }),
            "{f}"
        );
        let q = p.problems.iter().find(|q| q.file.as_deref() == Some(f));
        assert_eq!(
            q.map(|q| (q.code.as_str(), q.severity, q.offset)),
            Some((code, Severity::Error, Some(offset))),
            "{f}"
        );
    }
    let empty = p.problems.iter().filter(|q| q.code == "EMPTY_NTFF").count();
    assert!(empty >= 3);
    assert!(p
        .problems
        .iter()
        .filter(|q| q.code == "EMPTY_NTFF")
        .all(|q| q.severity == Severity::Info));
    let bad_neff = p
        .devices
        .iter()
        .find(|d| d.neff.as_deref() == Some("g/empty.neff"))
        .expect("empty.neff listed");
    assert!(matches!(bad_neff.pairing, PairStatus::Unreadable { .. }));
}
