//! The counts the page and the CLI show agree with the file (new-user trial, session 9): a
//! damaged Kineto trace's error names the event objects read and the rows kept, and they match the
//! file and the table; Kineto's event kinds (`cat`) are counted; `cpu_util.pb`'s records and
//! `CpuUsage`'s rows (one per record plus an `average` row per timestamp) are told apart.

mod common;
#[path = "common/system_mem.rs"]
mod system_mem;

use std::collections::BTreeMap;

use arrow_array::{Array, StringArray};

use neuronscope::error::Severity;
use neuronscope::system::{self, write::SystemSpec, SystemReport};
use neuronscope::tables::Tables;

const DIR: &str = "i-0123456789abcdef0_pid_4242";

fn run(files: &BTreeMap<String, Vec<u8>>) -> (SystemReport, Tables) {
    system_mem::run(DIR, files)
}

/// `SystemProfileEvents` rows per `trace_event_source`.
fn rows_by_source(t: &Tables) -> BTreeMap<String, u64> {
    let b = t.concat("SystemProfileEvents").expect("events");
    let c = b
        .column_by_name("trace_event_source")
        .expect("source column");
    let c = c.as_any().downcast_ref::<StringArray>().expect("utf8");
    let mut m = BTreeMap::new();
    for i in 0..c.len() {
        *m.entry(c.value(i).to_string()).or_default() += 1;
    }
    m
}

/// The number after `word` … in `msg`: `"the 12 event objects"` → 12 for `"the "`.
fn number_after(msg: &str, word: &str) -> u64 {
    let i = msg
        .find(word)
        .unwrap_or_else(|| panic!("{word:?} in {msg}"))
        + word.len();
    msg[i..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap_or_else(|_| panic!("number after {word:?} in {msg}"))
}

/// The synthetic capture (`synth --kineto-mb 1`'s writer) with `trace.json` damaged by `edit`.
fn capture(edit: impl FnOnce(&mut Vec<u8>) -> usize) -> (BTreeMap<String, Vec<u8>>, usize) {
    let mut files: BTreeMap<String, Vec<u8>> =
        system::write::system_capture(&SystemSpec::default(), 1_000_000)
            .into_iter()
            .collect();
    let k = format!("{DIR}/trace.json");
    let at = edit(files.get_mut(&k).expect("trace.json"));
    (files, at)
}

/// Phase letters of the event lines of our writer's trace in `text` (one event per line).
fn phases(text: &[u8]) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for line in String::from_utf8_lossy(text).lines() {
        if let Some(i) = line.find("\"ph\": \"") {
            let ph = &line[i + 7..i + 8];
            *m.entry(ph.to_string()).or_default() += 1;
        }
    }
    m
}

#[test]
fn damaged_trace_json_error_counts_objects_and_rows_as_the_file_and_table_do() {
    // The trial: a flipped byte mid-file; the error said "4052 events before it are kept", the
    // Summary's file line 2 795 and the table 2 804 (the 9 rows of ntrace.pb included).
    let (files, at) = capture(|v| {
        let from = v.len() / 2;
        let at = from
            + v[from..]
                .windows(6)
                .position(|w| w == b"{\"ph\":")
                .expect("event");
        v[at] = b'#';
        at
    });
    let (rep, t) = run(&files);
    let k = format!("{DIR}/trace.json");
    let kr = &rep.framework[&k];
    let p = kr
        .problems
        .iter()
        .find(|p| p.severity == Severity::Error)
        .unwrap_or_else(|| panic!("{:#?}", kr.problems));
    assert_eq!(p.offset, Some(at as u64), "{}", p.message);
    // Independent counts from the bytes before the fault: every event line is an object; rows
    // are the complete (X), begin (B: its E ends the same row), instant (i) and counter (C) ones.
    let before = phases(&files[&k][..at]);
    let objects: u64 = before.values().sum();
    let rows: u64 = ["X", "B", "i", "C"]
        .iter()
        .map(|ph| before.get(*ph).copied().unwrap_or(0))
        .sum();
    assert!(
        before.get("s").copied().unwrap_or(0) > 0 && before.get("E").copied().unwrap_or(0) > 0,
        "the objects without a row of their own are there: {before:?}"
    );
    assert_eq!(number_after(&p.message, "; the "), objects, "{}", p.message);
    assert_eq!(kr.objects, objects);
    assert_eq!(number_after(&p.message, "kept as "), rows, "{}", p.message);
    assert_eq!(kr.rows, rows);
    let by_source = rows_by_source(&t);
    assert_eq!(
        by_source["framework"], rows,
        "the table holds the rows said"
    );
    assert_eq!(
        by_source.values().sum::<u64>() - rows,
        rep.event_counts.values().sum::<u64>(),
        "the rest of the table is ntrace.pb's rows: {by_source:?}"
    );
    assert_eq!(
        rep.rows["SystemProfileEvents"],
        by_source.values().sum::<u64>(),
        "the report's row count is the table's"
    );
}

#[test]
fn kineto_event_kinds_are_counted_by_category() {
    let (files, _) = capture(|_| 0);
    let (rep, t) = run(&files);
    let k = format!("{DIR}/trace.json");
    let kr = &rep.framework[&k];
    assert!(kr.problems.is_empty(), "{:#?}", kr.problems);
    // Independent count: the `cat` of each row-making event line.
    let mut want: BTreeMap<String, u64> = BTreeMap::new();
    for line in String::from_utf8_lossy(&files[&k]).lines() {
        let ph = line
            .find("\"ph\": \"")
            .map(|i| &line[i + 7..i + 8])
            .unwrap_or("");
        if !["X", "B", "i", "C"].contains(&ph) {
            continue;
        }
        let cat = line
            .find("\"cat\": \"")
            .map(|i| {
                let r = &line[i + 8..];
                r[..r.find('"').expect("closing quote")].to_string()
            })
            .unwrap_or_else(|| "(no category)".into());
        *want.entry(cat).or_default() += 1;
    }
    assert!(want.len() > 3, "{want:?}");
    assert_eq!(kr.categories, want);
    assert_eq!(kr.categories.values().sum::<u64>(), kr.rows);
    assert_eq!(rows_by_source(&t)["framework"], kr.rows);
}

/// The KevGomes capture (session 9's trial): the Summary said "CPU samples 7,800" beside
/// "cpu_util.pb (7,200 records)". The file holds 7 200 framed records (600 samples × 12 CPUs, as
/// trace_info.pb says); CpuUsage holds one row per record plus one `average` row per sample
/// timestamp. The page now shows the records as the samples and names the average rows.
#[test]
fn kevgomes_cpu_samples_are_the_records_in_cpu_util_pb() {
    let root = common::samples()
        .join("KevGomes-nki-moe-megakernel/output")
        .join("i-0af76a70a6d3864dd_pid_713479");
    let mut files = BTreeMap::new();
    for n in ["trace_info.pb", "ntrace.pb", "cpu_util.pb", "host_mem.pb"] {
        let p = root.join(n);
        let b = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        files.insert(format!("{DIR}/{n}"), b);
    }
    // Independent count: the file's u32-LE length-prefixed frames.
    let cpu = &files[&format!("{DIR}/cpu_util.pb")];
    let (mut frames, mut off) = (0u64, 0usize);
    while off + 4 <= cpu.len() {
        off +=
            4 + u32::from_le_bytes([cpu[off], cpu[off + 1], cpu[off + 2], cpu[off + 3]]) as usize;
        frames += 1;
    }
    assert_eq!(off, cpu.len(), "whole frames");
    assert_eq!(frames, 7200);
    let (rep, t) = run(&files);
    let f = rep
        .files
        .iter()
        .find(|f| f.file.ends_with("cpu_util.pb"))
        .expect("cpu_util.pb counted");
    assert_eq!(f.records, frames);
    assert_eq!(f.expected, Some(frames), "trace_info.pb: samples × CPUs");
    let b = t.concat("CpuUsage").expect("CpuUsage");
    let ids = b
        .column_by_name("cpu_id")
        .expect("cpu_id")
        .as_any()
        .downcast_ref::<StringArray>()
        .expect("utf8");
    let averages = (0..ids.len())
        .filter(|&i| ids.value(i) == "average")
        .count() as u64;
    assert_eq!(b.num_rows() as u64 - averages, frames, "one row per record");
    assert_eq!(averages, 600, "one average row per sample timestamp");
    assert_eq!(rep.rows["CpuUsage"], frames + averages);
}
