//! A newer NTFF version is decoded, not refused (issue 12 item 5; AWS's tool refusing versions
//! after SDK upgrades is aws-neuron-sdk#1007): real v6 samples with their version byte set to 7
//! give the same tables as the originals, plus one Warning that the version is unverified; a
//! newer version whose structure check fails is refused with the offset.

mod common;
use common::samples;

use std::collections::BTreeMap;

use arrow_array::{Array, RecordBatch, StringArray};
use neuronscope::inventory::{self, Inventory, PairStatus};
use neuronscope::profile;
use neuronscope::tables::Tables;
use neuronscope::{ByteSource, Result, Severity};

/// Builds the inventory of in-memory files and processes device 0 of its only profile.
fn run(files: &BTreeMap<String, Vec<u8>>) -> (Inventory, Tables, profile::DeviceResult) {
    let list: Vec<(String, u64)> = files
        .iter()
        .map(|(p, b)| (p.clone(), b.len() as u64))
        .collect();
    let open = |p: &str| -> Result<Box<dyn ByteSource>> {
        Ok(Box::new(files.get(p).cloned().unwrap_or_default()))
    };
    let inv = inventory::build(&list, &open);
    let id = inv.profiles[0].id.clone();
    let mut t = Tables::default();
    let r = profile::process_device(&inv, &id, 0, &open, &mut t, &mut |_, _, _| {})
        .expect("process_device");
    (inv, t, r)
}

fn load(dir: &str, names: &[&str]) -> BTreeMap<String, Vec<u8>> {
    names
        .iter()
        .map(|n| {
            let b = std::fs::read(samples().join(dir).join(n)).expect("sample");
            (format!("cap/{n}"), b)
        })
        .collect()
}

fn messages(t: &Tables) -> Vec<String> {
    let Some(b) = t.concat("Warning") else {
        return Vec::new();
    };
    let a = b
        .column_by_name("message")
        .unwrap()
        .as_any()
        .downcast_ref::<StringArray>()
        .unwrap();
    (0..a.len()).map(|i| a.value(i).to_string()).collect()
}

/// `b` without the named column.
fn without(b: &RecordBatch, col: &str) -> RecordBatch {
    let keep: Vec<usize> = (0..b.num_columns())
        .filter(|&i| b.schema().field(i).name() != col)
        .collect();
    b.project(&keep).unwrap()
}

fn check_same_tables(dir: &str, names: &[&str], ntff: &str) {
    let v6 = load(dir, names);
    assert_eq!(v6[&format!("cap/{ntff}")][0], 6, "{dir}: a v6 sample");
    let mut v7 = v6.clone();
    v7.get_mut(&format!("cap/{ntff}")).unwrap()[0] = 7;
    let (_, t6, r6) = run(&v6);
    let (inv7, t7, r7) = run(&v7);

    let d = &inv7.profiles[0].devices[0];
    assert_eq!(d.ntff_version, Some(7));
    assert!(
        matches!(d.pairing, PairStatus::Paired { .. }),
        "{dir}: the v7 copy still pairs by uuid: {:?}",
        d.pairing
    );
    assert_eq!(r7.summary.ntff_version, Some(7));
    assert_eq!(r6.summary.instruction_count, r7.summary.instruction_count);

    // Every table of the original, with the same rows; only the version and the warning differ.
    let names6: Vec<&str> = t6.tables.keys().copied().collect();
    let names7: Vec<&str> = t7.tables.keys().copied().collect();
    assert_eq!(names6, names7, "{dir}: same tables");
    assert!(names6.len() >= 15, "{dir}: {names6:?}");
    for name in names6 {
        let (a, b) = (t6.concat(name).unwrap(), t7.concat(name).unwrap());
        match name {
            "Warning" => {}
            "Metadata" => {
                assert_eq!(without(&a, "ntff_version"), without(&b, "ntff_version"));
                let v = |x: &RecordBatch| {
                    let c = x.column_by_name("ntff_version").unwrap();
                    arrow_cast_i32(c.as_ref())
                };
                assert_eq!((v(&a), v(&b)), (6, 7), "{dir}: Metadata.ntff_version");
            }
            _ => assert_eq!(
                a, b,
                "{dir}: table {name} differs between v6 and the v7 copy"
            ),
        }
    }
    let (w6, w7) = (messages(&t6), messages(&t7));
    let unverified: Vec<&String> = w7.iter().filter(|m| !w6.contains(m)).collect();
    assert_eq!(unverified.len(), 1, "{dir}: one extra Warning row: {w7:#?}");
    assert!(
        unverified[0].contains("NTFF version 7 is newer")
            && unverified[0].contains("every table of this profile is unverified"),
        "{}",
        unverified[0]
    );
    let p = r7
        .problems
        .iter()
        .find(|p| p.code == "NTFF_VERSION_UNVERIFIED")
        .expect("problem in the device result");
    assert_eq!(p.severity, Severity::Warning);
    assert_eq!(w7.len(), w6.len() + 1);
}

fn arrow_cast_i32(a: &dyn Array) -> i32 {
    a.as_any()
        .downcast_ref::<arrow_array::Int32Array>()
        .expect("Metadata.ntff_version is int32")
        .value(0)
}

#[test]
fn v6_sample_as_v7_gives_the_same_tables() {
    check_same_tables(
        "allenkchau-trainium-kernel-fusion/profiling/artifacts/fused_bf16_s512",
        &["fused.neff", "fused_exec_2.ntff"],
        "fused_exec_2.ntff",
    );
    // DMA, kernels and two NeuronCores' worth of records.
    check_same_tables(
        "KevGomes-nki-moe-megakernel/output/i-0af76a70a6d3864dd_pid_713479",
        &["neff_171450338541704.neff", "profile_exec_2.ntff"],
        "profile_exec_2.ntff",
    );
}

#[test]
fn newer_version_with_a_broken_structure_is_refused_with_the_offset() {
    let dir = "allenkchau-trainium-kernel-fusion/profiling/artifacts/fused_bf16_s512";
    let mut files = load(dir, &["fused.neff", "fused_exec_2.ntff"]);
    let ntff = files.get_mut("cap/fused_exec_2.ntff").unwrap();
    ntff[0] = 7;
    ntff[128] = 0x00; // the info section no longer starts with field 1
    let (inv, t, r) = run(&files);
    let d = &inv.profiles[0].devices[0];
    let PairStatus::Unreadable { message } = &d.pairing else {
        panic!("expected Unreadable, got {:?}", d.pairing);
    };
    assert!(
        message.contains("not an NTFF") && message.contains("offset 128"),
        "{message}"
    );
    let p = r
        .problems
        .iter()
        .find(|p| p.severity == Severity::Error)
        .expect("an Error problem");
    assert_eq!(
        (p.file.as_deref(), p.offset),
        (Some("cap/fused_exec_2.ntff"), Some(128))
    );
    assert_eq!(t.rows("Instruction"), 0);
    // A version byte no NTFF has (79: a renamed ntrace.pb) is refused at offset 0.
    let mut files = load(dir, &["fused.neff", "fused_exec_2.ntff"]);
    files.get_mut("cap/fused_exec_2.ntff").unwrap()[0] = 79;
    let (inv, _, _) = run(&files);
    let p = &inv.profiles[0].problems[0];
    assert_eq!((p.severity, p.offset), (Severity::Error, Some(0)));
    assert!(p.message.contains("byte 0 is 79"), "{}", p.message);
}
