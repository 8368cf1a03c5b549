//! `ntrace.pb` with bounded state (crate/src/system/ntrace.rs) and corrupt system inputs that
//! must be errors naming the offset: our writer's runtime mix (the sample's shape) past the
//! reorder window, a span open across it, a corrupted length prefix and record in the sample,
//! garbage inside a Kineto event array, bit flips that put the Kineto scanner out of step.

mod common;
#[path = "common/system_mem.rs"]
mod system_mem;

use std::collections::BTreeMap;

use arrow_array::{Array, Int64Array};
use prost::Message;

use neuronscope::error::Severity;
use neuronscope::system::{kineto, ntrace, write::SystemSpec, SystemReport};
use neuronscope::tables::Tables;

const DIR: &str = "i-0123456789abcdef0_pid_4242";

fn run(files: &BTreeMap<String, Vec<u8>>) -> (SystemReport, Tables) {
    system_mem::run(DIR, files)
}

/// The mix of at least `bytes`, with its trace_info, as in-memory files.
fn mix(bytes: u64) -> (SystemSpec, Vec<u8>, u64) {
    let mut spec = SystemSpec::default();
    let mut nt = Vec::new();
    let st = spec.write_ntrace_mix(bytes, &mut nt).expect("vec write");
    assert_eq!(st.bytes, nt.len() as u64);
    spec.executions = st.steps;
    (spec, nt, st.records)
}

fn files(spec: &SystemSpec, nt: Vec<u8>, records: u64) -> BTreeMap<String, Vec<u8>> {
    BTreeMap::from([
        (format!("{DIR}/trace_info.pb"), spec.trace_info(records)),
        (format!("{DIR}/ntrace.pb"), nt),
    ])
}

fn starts(t: &Tables) -> Vec<i64> {
    let b = t.concat("SystemProfileEvents").expect("events");
    let c = b
        .column_by_name("start_ts")
        .and_then(|c| c.as_any().downcast_ref::<Int64Array>())
        .expect("start_ts");
    (0..c.len()).map(|i| c.value(i)).collect()
}

fn frame(r: &neuronscope::proto::NtraceRecordPb) -> Vec<u8> {
    let b = r.encode_to_vec();
    let mut out = (b.len() as u32).to_le_bytes().to_vec();
    out.extend_from_slice(&b);
    out
}

#[test]
fn runtime_mix_past_the_window_streams_in_start_order() {
    let (spec, nt, records) = mix(20_000_000);
    let (rep, t) = run(&files(&spec, nt, records));
    let rows = rep.rows["SystemProfileEvents"];
    assert_eq!(rows, rep.spans + rep.instants);
    assert_eq!(
        rep.spans * 2 + rep.instants,
        records,
        "every record in a row"
    );
    assert!(
        rows > ntrace::REORDER_WINDOW as u64,
        "{rows} rows: the window must overflow for this test to mean anything"
    );
    assert_eq!(rep.late_events, 0);
    assert_eq!(rep.unpaired_starts + rep.unpaired_stops, 0);
    let s = starts(&t);
    assert!(s.windows(2).all(|w| w[0] <= w[1]), "rows in start order");
    assert_eq!(s.first().copied(), Some(spec.execute_range(0).0 as i64));
    // Every hardware record matches the sync-point rule of its step.
    assert_eq!(rep.sync.checked, 2 * spec.executions);
    assert_eq!(rep.sync.matched, rep.sync.checked);
    // One HBM row per alloc/dealloc: 4 workers × 10 a step.
    assert_eq!(rep.rows["SystemProfileHbmUsage"], 40 * spec.executions);
    assert!(
        rep.problems.iter().all(|p| p.severity != Severity::Error),
        "{:?}",
        rep.problems
    );
}

#[test]
fn span_open_across_the_window_is_kept_and_reported() {
    let (spec, nt, records) = mix(20_000_000);
    // A start before everything whose stop is the last record.
    let rec = |phase, ts, id, tracking_id| neuronscope::proto::NtraceRecordPb {
        timestamp_ns: ts,
        event_type: 3,
        thread_id: 1,
        id,
        attributes: Vec::new(),
        phase,
        tracking_id,
    };
    let mut bytes = frame(&rec(1, spec.start_ns, 9_000_000_001, 0));
    bytes.extend_from_slice(&nt);
    bytes.extend_from_slice(&frame(&rec(2, spec.end_ns(), 9_000_000_002, 9_000_000_001)));
    let (rep, t) = run(&files(&spec, bytes, records + 2));
    assert_eq!(rep.late_events, 1, "only the long span leaves late");
    let p = rep
        .problems
        .iter()
        .find(|p| p.message.contains("out of start order"))
        .expect("reported");
    assert_eq!(p.offset, Some(0), "names the long span's start record");
    assert_eq!(p.severity, Severity::Warning);
    let s = starts(&t);
    assert_eq!(s.len() as u64, rep.spans + rep.instants, "nothing dropped");
    assert!(s.contains(&(spec.start_ns as i64)));
}

fn sample_ntrace() -> (BTreeMap<String, Vec<u8>>, Vec<usize>) {
    let root = common::samples()
        .join("KevGomes-nki-moe-megakernel/output")
        .join("i-0af76a70a6d3864dd_pid_713479");
    let mut files = BTreeMap::new();
    for n in ["trace_info.pb", "ntrace.pb"] {
        let p = root.join(n);
        let b = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        files.insert(format!("{DIR}/{n}"), b);
    }
    let nt = &files[&format!("{DIR}/ntrace.pb")];
    let mut offs = Vec::new();
    let mut off = 0usize;
    while off + 4 <= nt.len() {
        offs.push(off);
        off += 4 + u32::from_le_bytes([nt[off], nt[off + 1], nt[off + 2], nt[off + 3]]) as usize;
    }
    (files, offs)
}

#[test]
fn corrupt_length_prefix_is_an_implausible_length_error() {
    let (mut files, offs) = sample_ntrace();
    let k = 100;
    let at = offs[k];
    let key = format!("{DIR}/ntrace.pb");
    // A bit flip in the prefix's third byte: the record claims ≥ 64 KiB in a 230 KB file.
    files.get_mut(&key).expect("ntrace")[at + 2] ^= 0xff;
    let (rep, _) = run(&files);
    let f = rep.files.iter().find(|f| f.file == key).expect("counted");
    assert_eq!(f.records, k as u64, "records before the fault kept");
    let p = rep
        .problems
        .iter()
        .find(|p| p.message.contains("implausible length"))
        .unwrap_or_else(|| panic!("{:#?}", rep.problems));
    assert_eq!(p.severity, Severity::Error);
    assert_eq!(p.offset, Some(at as u64));
    assert!(!p.message.contains("truncated"), "{}", p.message);

    // A cut file is an error too (`TRUNCATED_TRACE`, as a cut NTFF is `NTFF_TRUNCATED`: the
    // records after the cut are lost), told apart from the bit flip by its code and message.
    let (mut files, offs) = sample_ntrace();
    files.get_mut(&key).expect("ntrace").truncate(offs[k] + 9);
    let (rep, _) = run(&files);
    let p = rep
        .problems
        .iter()
        .find(|p| p.offset == Some(offs[k] as u64))
        .expect("cut reported");
    assert_eq!(p.severity, Severity::Error, "{}", p.message);
    assert_eq!(p.code, "TRUNCATED_TRACE", "{}", p.message);
    assert!(p.message.contains("truncated"), "{}", p.message);

    // Cut on a record boundary (no partial record to notice): fewer records than
    // trace_info.pb's count in a file that just ends is a cut file too, at its length; one
    // error, not also a COUNT_MISMATCH.
    for keep in [0, k] {
        let (mut files, offs) = sample_ntrace();
        files.get_mut(&key).expect("ntrace").truncate(offs[keep]);
        let (rep, _) = run(&files);
        let mine: Vec<_> = rep
            .problems
            .iter()
            .filter(|p| p.file.as_deref() == Some(key.as_str()) && p.code != "UNPAIRED_EVENT")
            .collect();
        assert_eq!(mine.len(), 1, "{mine:#?}");
        assert_eq!(mine[0].code, "TRUNCATED_TRACE", "{}", mine[0].message);
        assert_eq!(mine[0].severity, Severity::Error);
        assert_eq!(mine[0].offset, Some(offs[keep] as u64));
        assert!(
            mine[0].message.contains(&format!("{keep} records")),
            "{}",
            mine[0].message
        );
    }
}

#[test]
fn undecodable_record_is_an_error_naming_its_offset() {
    let (mut files, offs) = sample_ntrace();
    let key = format!("{DIR}/ntrace.pb");
    let at = offs[7];
    // A field tag with wire type 7 does not exist.
    files.get_mut(&key).expect("ntrace")[at + 4] = 0xff;
    let (rep, _) = run(&files);
    let p = rep
        .problems
        .iter()
        .find(|p| p.offset == Some(at as u64))
        .unwrap_or_else(|| panic!("{:#?}", rep.problems));
    assert_eq!(p.severity, Severity::Error, "{}", p.message);
    let f = rep.files.iter().find(|f| f.file == key).expect("counted");
    assert_eq!(
        f.records,
        offs.len() as u64,
        "framing intact: the rest is read"
    );
}

#[test]
fn kineto_garbage_inside_the_array_is_an_error_at_its_offset() {
    let ev = |i: u32| {
        format!(r#"{{"ph": "X", "name": "op{i}", "pid": 1, "tid": 2, "ts": {i}.5, "dur": 1.0}}"#)
    };
    let head = format!(
        "{{\"baseTimeNanoseconds\": 1700000000000000000,\n\"traceEvents\": [\n{},\n{},\n",
        ev(1),
        ev(2)
    );
    let garbage = "\u{7}xx@@ 17 \"q";
    let tail = format!("{},\n{}\n]}}\n", ev(3), ev(4));
    let text = format!("{head}{garbage}{tail}");
    let mut t = Tables::default();
    let rep = kineto::read_trace_bytes(text.as_bytes(), "trace.json", "i-x", &mut t).expect("sink");
    assert_eq!(rep.rows, 2, "the events before the garbage");
    let p = rep
        .problems
        .iter()
        .find(|p| p.severity == Severity::Error)
        .unwrap_or_else(|| panic!("{:#?}", rep.problems));
    assert_eq!(p.offset, Some(head.len() as u64), "{}", p.message);
    assert!(!rep.truncated);
}

/// `n` Kineto-shaped events (nested `args` object and arrays) in the object form, with each
/// event's byte span.
fn flip_trace(n: usize) -> (Vec<u8>, Vec<(usize, usize)>) {
    let mut v = b"{\"baseTimeNanoseconds\": 1700000000000000000,\n\"traceEvents\": [\n".to_vec();
    let mut spans = Vec::new();
    for i in 0..n {
        if i > 0 {
            v.extend_from_slice(b",\n  ");
        }
        let s = v.len();
        v.extend_from_slice(
            format!(
                r#"{{"ph": "X", "cat": "privateuse1_driver", "name": "aten::addmm_kernel", "pid": 4242, "tid": 4249, "ts": {i}.500, "dur": 1.000, "args": {{"External id": {i}, "dims": [[2, 3], []], "s": "a\\b"}}}}"#
            )
            .as_bytes(),
        );
        spans.push((s, v.len()));
    }
    v.extend_from_slice(b"\n]}\n");
    (v, spans)
}

#[test]
fn kineto_flipped_quote_is_an_error_where_the_damage_starts() {
    // The new-user trial: one `"` of a string value flipped to `x` (XOR 0x5a) made the scanner
    // read every later string inverted, so the rest of the file became one unclosed event and
    // only a "not closed" warning at the end of the file was left.
    let (mut v, spans) = flip_trace(300);
    let k = 200;
    let at = spans[k].0
        + v[spans[k].0..]
            .windows(3)
            .position(|w| w == b": \"")
            .unwrap()
        + 2;
    assert_eq!(v[at], b'"');
    v[at] ^= 0x5a;
    let mut t = Tables::default();
    let rep = kineto::read_trace_bytes(&v, "trace.json", "i-x", &mut t).expect("sink");
    assert_eq!(
        rep.rows, k as u64,
        "every event before the damaged one kept"
    );
    let p = rep
        .problems
        .iter()
        .find(|p| p.severity == Severity::Error)
        .unwrap_or_else(|| panic!("{:#?}", rep.problems));
    assert_eq!(p.offset, Some(at as u64), "{}", p.message);
    assert!(
        p.message.contains(&format!("byte {}", spans[k].0)),
        "{}",
        p.message
    );
    assert!(!rep.truncated, "{:#?}", rep.problems);
}

#[test]
fn kineto_bit_flips_never_lose_events_silently() {
    let (orig, spans) = flip_trace(40);
    let total = spans.len() as u64;
    let k = 20;
    let (s, e) = spans[k];
    let (mut errors, mut runs) = (0, 0);
    for mask in [0x5a_u8, 0x01, 0x02, 0x04, 0x08, 0x20, 0x40, 0x80] {
        for pos in s..e {
            let mut v = orig.clone();
            v[pos] ^= mask;
            let mut t = Tables::default();
            let rep = kineto::read_trace_bytes(&v, "trace.json", "i-x", &mut t).expect("sink");
            runs += 1;
            let err = rep.problems.iter().find(|p| p.severity == Severity::Error);
            match err {
                // Damage found: named inside the damaged event or the next one (a closer flipped
                // into a value byte shows at the next event's `{`), everything before it kept.
                Some(p) => {
                    errors += 1;
                    let off = p.offset.expect("offset") as usize;
                    assert!(
                        (s..spans[k + 1].1).contains(&off),
                        "flip {mask:#x} at {pos}: {} not in {s}..{}",
                        p.message,
                        spans[k + 1].1
                    );
                    assert!(rep.rows >= k as u64, "flip {mask:#x} at {pos}: {rep:#?}");
                }
                // Else at most the damaged event is lost (skipped as unparsable), and the end of
                // the array is still found.
                None => {
                    assert!(rep.rows + 1 >= total, "flip {mask:#x} at {pos}: {rep:#?}");
                    assert!(!rep.truncated, "flip {mask:#x} at {pos}: {rep:#?}");
                }
            }
        }
    }
    assert!(
        errors > 0 && runs > errors,
        "{errors} errors in {runs} runs"
    );
}

/// A `trace.json` that is empty or ends inside its top-level object before `traceEvents` is a
/// cut file (`TRUNCATED_TRACE`, an error at its length); a whole object without the array is a
/// `NO_TRACE_EVENTS` error at its length (nothing of it can be shown).
#[test]
fn trace_json_cut_before_its_events_is_an_error() {
    for (text, code, sev) in [
        (&b""[..], "TRUNCATED_TRACE", Severity::Error),
        (
            &b"{\"schemaVersion\": 1, \"devicePro"[..],
            "TRUNCATED_TRACE",
            Severity::Error,
        ),
        (
            &b"{\"schemaVersion\": 1}"[..],
            "NO_TRACE_EVENTS",
            Severity::Error,
        ),
    ] {
        let mut t = Tables::default();
        let rep = kineto::read_trace_bytes(text, "trace.json", "i-x", &mut t).expect("sink");
        assert_eq!(rep.problems.len(), 1, "{:#?}", rep.problems);
        let p = &rep.problems[0];
        assert_eq!((p.code.as_str(), p.severity), (code, sev), "{}", p.message);
        if sev == Severity::Error {
            assert_eq!(p.offset, Some(text.len() as u64), "{}", p.message);
        }
    }
}
