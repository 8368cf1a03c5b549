//! Kineto `trace.json` reader (framework-inputs.md §2): dirty-data cases not covered by
//! system_samples.rs, nesting and flow binding, and the bounded state of the streaming reader on
//! synthetic traces from our own writer (`system::write`). No sample is needed: no trace.json
//! exists in ../shared/samples.

#[path = "common/mutate.rs"]
mod mutate;

use arrow_array::{Array, Int64Array, ListArray, RecordBatch, StringArray};
use neuronscope::system::kineto::{self, KinetoReport};
use neuronscope::system::write::{write_kineto, SystemSpec};
use neuronscope::tables::Tables;

fn run(bytes: &[u8]) -> (KinetoReport, Option<RecordBatch>) {
    let mut t = Tables::default();
    let rep = kineto::read_trace_bytes(bytes, "trace.json", "i-test", &mut t).expect("sink ok");
    (rep, t.concat("SystemProfileEvents"))
}

fn col<'a, T: 'static>(b: &'a RecordBatch, name: &str) -> &'a T {
    b.column_by_name(name)
        .unwrap_or_else(|| panic!("column {name} missing"))
        .as_any()
        .downcast_ref::<T>()
        .unwrap_or_else(|| panic!("column {name} has another type"))
}

fn flows_of(b: &RecordBatch, row: usize) -> Vec<String> {
    let l = col::<ListArray>(b, "flow_id");
    if l.is_null(row) {
        return Vec::new();
    }
    let v = l.value(row);
    let s = v.as_any().downcast_ref::<StringArray>().expect("strings");
    (0..s.len()).map(|i| s.value(i).to_string()).collect()
}

#[test]
fn nested_begin_end_unmatched_and_other_phases() {
    let t = br#"{"traceEvents": [
 {"ph": "B", "name": "outer", "pid": 1, "tid": 1, "ts": 10},
 {"ph": "B", "name": "inner", "pid": 1, "tid": 1, "ts": 12},
 {"ph": "B", "name": "other thread", "pid": 1, "tid": 2, "ts": 13},
 {"ph": "E", "pid": 1, "tid": 1, "ts": 14},
 {"ph": "E", "pid": 1, "tid": 1, "ts": 20},
 {"ph": "B", "name": "never closed", "pid": 1, "tid": 1, "ts": 30},
 {"ph": "I", "name": "global", "pid": 1, "tid": 1, "ts": 31, "s": "g"},
 {"ph": "b", "name": "async", "cat": "c", "id": "0x1", "pid": 1, "tid": 1, "ts": 32},
 {"ph": "E", "pid": 1, "tid": 2, "ts": 33}
], "baseTimeNanoseconds": 5000}"#;
    let (rep, ev) = run(t);
    let ev = ev.expect("rows");
    assert_eq!(
        rep.base_time_ns,
        Some(5000),
        "base after the events, found by the first pass"
    );
    assert!(!rep.base_after_events);
    assert_eq!(rep.unmatched_begin, 1);
    assert_eq!(rep.unmatched_end, 0);
    assert_eq!(rep.rows, 6);
    let names = col::<StringArray>(&ev, "name");
    let start = col::<Int64Array>(&ev, "start_ts");
    let end = col::<Int64Array>(&ev, "end_ts");
    let ids = col::<Int64Array>(&ev, "id");
    let extra = col::<StringArray>(&ev, "extra_attributes_json");
    let find = |n: &str| (0..ev.num_rows()).find(|&i| names.value(i) == n).expect(n);
    let (o, i, x, nc) = (
        find("outer"),
        find("inner"),
        find("other thread"),
        find("never closed"),
    );
    assert_eq!(
        (start.value(i), end.value(i)),
        (5000 + 12_000, 5000 + 14_000),
        "inner E closes inner"
    );
    assert_eq!(
        (start.value(o), end.value(o)),
        (5000 + 10_000, 5000 + 20_000)
    );
    assert_eq!(end.value(x) - start.value(x), 20_000, "per-thread stacks");
    assert_eq!(
        start.value(nc),
        end.value(nc),
        "unmatched B kept as zero-length"
    );
    // ids follow file order of the begins, whatever the emission order.
    assert!(ids.value(o) < ids.value(i) && ids.value(i) < ids.value(x));
    let a = find("async");
    let j: serde_json::Value = serde_json::from_str(extra.value(a)).expect("json");
    assert_eq!(
        j["ph"], "b",
        "phases without a column of their own are kept in extras"
    );
    assert_eq!(j["id"], "0x1");
}

#[test]
fn escapes_surrogates_and_oversized() {
    // Lone surrogates (serde_json refuses them) → U+FFFD; a valid pair stays; a raw DEL and a NUL.
    let t = b"[{\"ph\":\"X\",\"name\":\"a\\ud800b\\udc00c\\ud83d\\ude00\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":1},\
{\"ph\":\"X\",\"name\":\"nul\x00del\x7f\",\"pid\":1,\"tid\":1,\"ts\":2,\"dur\":1},\
{\"ph\":\"X\",\"name\":\"bad \\q \\u12 escape\",\"pid\":1,\"tid\":1,\"ts\":3,\"dur\":1}]";
    let (rep, ev) = run(t);
    let ev = ev.expect("rows");
    assert_eq!(rep.rows, 3, "{rep:#?}");
    assert_eq!(rep.sanitised, 3);
    let names = col::<StringArray>(&ev, "name");
    assert_eq!(names.value(0), "a\u{fffd}b\u{fffd}c\u{1f600}");
    assert_eq!(names.value(1), "nul\u{0}del\u{7f}");
    assert_eq!(names.value(2), "bad \\q \\u12 escape");
    // An event larger than the 16 MiB cap is skipped, the next one kept.
    let mut big = b"[{\"ph\":\"X\",\"name\":\"".to_vec();
    big.extend(std::iter::repeat_n(b'x', 17 << 20));
    big.extend_from_slice(b"\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":1},{\"ph\":\"i\",\"name\":\"after\",\"pid\":1,\"tid\":1,\"ts\":2}]");
    let (rep, ev) = run(&big);
    assert_eq!((rep.objects, rep.skipped, rep.rows), (2, 1, 1));
    // Said as what it is, an Error at the event's offset (not "expected a trace event object").
    let p: Vec<_> = rep
        .problems
        .iter()
        .filter(|p| p.message.contains("larger than the 16 MiB"))
        .collect();
    assert_eq!(p.len(), 1, "{:#?}", rep.problems);
    assert_eq!(p[0].offset, Some(1));
    assert_eq!(p[0].severity, neuronscope::Severity::Error);
    assert!(
        !rep.problems
            .iter()
            .any(|p| p.message.contains("expected a trace event object")),
        "{:#?}",
        rep.problems
    );
    assert_eq!(
        col::<StringArray>(&ev.expect("rows"), "name").value(0),
        "after"
    );
}

#[test]
fn flows_bind_before_after_and_next_slice() {
    let t = br#"[
 {"ph": "f", "id": 1, "cat": "ac2g", "bp": "e", "pid": 1, "tid": 9, "ts": 100},
 {"ph": "X", "name": "kernel", "pid": 1, "tid": 9, "ts": 99, "dur": 5},
 {"ph": "X", "name": "launch", "pid": 1, "tid": 1, "ts": 50, "dur": 10},
 {"ph": "X", "name": "launch child", "pid": 1, "tid": 1, "ts": 52, "dur": 2},
 {"ph": "s", "id": 1, "cat": "ac2g", "pid": 1, "tid": 1, "ts": 53},
 {"ph": "t", "id": 1, "cat": "ac2g", "pid": 1, "tid": 1, "ts": 58},
 {"ph": "f", "id": 2, "cat": "fwdbwd", "pid": 1, "tid": 3, "ts": 70},
 {"ph": "X", "name": "backward", "pid": 1, "tid": 3, "ts": 75, "dur": 5},
 {"ph": "s", "id": 3, "cat": "ac2g", "pid": 1, "tid": 4, "ts": 1}
]"#;
    let (rep, ev) = run(t);
    let ev = ev.expect("rows");
    assert_eq!(rep.flows_bound, 4, "{rep:#?}");
    assert_eq!(rep.flows_unbound, 1, "a flow on a thread without slices");
    let names = col::<StringArray>(&ev, "name");
    let find = |n: &str| (0..ev.num_rows()).find(|&i| names.value(i) == n).expect(n);
    assert_eq!(
        flows_of(&ev, find("kernel")),
        vec!["ac2g:1"],
        "f before its slice waits for it"
    );
    assert_eq!(
        flows_of(&ev, find("launch child")),
        vec!["ac2g:1"],
        "s binds the innermost enclosing slice"
    );
    assert_eq!(
        flows_of(&ev, find("launch")),
        vec!["ac2g:1"],
        "t at 58 is only inside the parent"
    );
    assert_eq!(
        flows_of(&ev, find("backward")),
        vec!["fwdbwd:2"],
        "f without bp=e binds the next slice"
    );
}

#[test]
fn base_after_events_without_first_pass_is_flagged() {
    let t = br#"{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}], "baseTimeNanoseconds": 1000000}"#;
    let mut tables = Tables::default();
    let rep = kineto::read_trace(&t[..], "trace.json", "i", None, &mut tables, &mut |_| {})
        .expect("sink");
    assert!(rep.base_after_events);
    assert_eq!(rep.base_time_ns, None);
    assert!(rep
        .problems
        .iter()
        .any(|p| p.message.contains("baseTimeNanoseconds follows")));
    assert_eq!(kineto::find_base(&t[..]), Some(1_000_000));
    // Array form: no base, the scan stops at once.
    assert_eq!(kineto::find_base(&b"[{\"ts\": 1}"[..]), None);
}

/// Many threads, deep unclosed nesting and flows that never bind: the reader's held state stays
/// within its documented bounds while every row is written.
#[test]
fn state_stays_bounded_on_hostile_input() {
    let mut v = b"{\"traceEvents\": [".to_vec();
    let mut rows = 0u64;
    for i in 0..80_000u64 {
        // 3000 threads each opening B's that never close (depth grows past MAX_OPEN on thread 0).
        let tid = if i < 5_000 { 0 } else { i % 3000 };
        v.extend_from_slice(
            format!("{{\"ph\":\"B\",\"name\":\"b{i}\",\"pid\":1,\"tid\":{tid},\"ts\":{i}}},")
                .as_bytes(),
        );
        v.extend_from_slice(
            format!(
                "{{\"ph\":\"s\",\"id\":{i},\"cat\":\"x\",\"pid\":2,\"tid\":{},\"ts\":{i}}},",
                i % 7
            )
            .as_bytes(),
        );
        rows += 1;
    }
    v.extend_from_slice(b"{\"ph\":\"i\",\"name\":\"end\",\"pid\":1,\"tid\":1,\"ts\":0}]}");
    rows += 1;
    let (rep, ev) = run(&v);
    assert_eq!(rep.rows, rows, "every begin is a row");
    assert_eq!(ev.expect("rows").num_rows() as u64, rows);
    assert_eq!(rep.unmatched_begin, rows - 1);
    assert_eq!(rep.flows_bound + rep.flows_unbound, 80_000);
    let bound = (kineto::WINDOW + kineto::MAX_OPEN_TOTAL + 7 * kineto::MAX_PENDING_FLOWS) as u64;
    assert!(rep.peak_held <= bound, "held {} > {bound}", rep.peak_held);
    assert!(
        rep.peak_held > kineto::MAX_OPEN_TOTAL as u64,
        "the total cap was reached"
    );
}

/// A few MB from our own writer: counts match what was written; held state ≪ rows.
#[test]
fn synthetic_writer_trace_streams_with_small_state() {
    let spec = SystemSpec::default();
    let mut v = Vec::new();
    let st = write_kineto(&spec, 4_000_000, &mut v).expect("write");
    let (rep, ev) = run(&v);
    assert_eq!(rep.rows, st.rows);
    assert_eq!(rep.flows_bound, st.flows);
    assert_eq!(rep.thread_names.len(), 2);
    assert_eq!(
        rep.process_names
            .get(&(spec.pid as i64))
            .map(String::as_str),
        Some("python")
    );
    assert!(rep.rows > 3 * kineto::WINDOW as u64);
    assert!(
        rep.peak_held <= kineto::WINDOW as u64 + 2,
        "held {}",
        rep.peak_held
    );
    let ev = ev.expect("rows");
    let start = col::<Int64Array>(&ev, "start_ts");
    let base = spec.start_ns as i64;
    for i in 0..ev.num_rows() {
        assert!(start.value(i) >= base, "row {i} on the capture's clock");
    }
    // Every truncation point of the first 20 kB never panics and never invents rows.
    for cut in mutate::offsets(20_000, 97) {
        let (r, _) = run(&v[..cut]);
        assert!(r.rows <= st.rows);
    }
}

/// Events whose `ts` is missing or not a time (`1e400`, a word) are not kept, and events kept
/// with a time that cannot be right (a negative `ts`, a negative or unreadable `dur`, an `E`
/// before its `B`) are kept as before: each kind is counted and reported once as a warning with
/// the file, the count and the offset of the first (a user trial: dropped in silence, exit 0).
#[test]
fn events_with_bad_times_are_counted_and_reported() {
    let events = [
        r#"{"ph": "X", "name": "ok", "pid": 1, "tid": 1, "ts": 1, "dur": 1}"#,
        r#"{"ph": "X", "name": "huge", "pid": 1, "tid": 1, "ts": 1e400, "dur": 1}"#,
        r#"{"ph": "X", "name": "word", "pid": 1, "tid": 1, "ts": "soon", "dur": 1}"#,
        r#"{"ph": "i", "name": "no ts", "pid": 1, "tid": 1}"#,
        r#"{"ph": "f", "id": 1, "cat": "ac2g", "name": "ac2g", "pid": 1, "tid": 1, "ts": -1e400}"#,
        r#"{"ph": "X", "name": "neg ts", "pid": 1, "tid": 2, "ts": -5, "dur": 1}"#,
        r#"{"ph": "X", "name": "neg dur", "pid": 1, "tid": 2, "ts": 3, "dur": -2}"#,
        r#"{"ph": "X", "name": "huge dur", "pid": 1, "tid": 2, "ts": 4, "dur": 1e400}"#,
        r#"{"ph": "X", "name": "both", "pid": 1, "tid": 2, "ts": -6, "dur": -1}"#,
        r#"{"ph": "B", "name": "backwards", "pid": 1, "tid": 3, "ts": 10}"#,
        r#"{"ph": "E", "pid": 1, "tid": 3, "ts": 8}"#,
        r#"{"ph": "X", "name": "last", "pid": 1, "tid": 1, "ts": 20, "dur": 1}"#,
    ];
    let trace = format!("{{\"traceEvents\": [\n{}\n]}}", events.join(",\n"));
    let at = |i: usize| trace.find(events[i]).expect("event") as u64;
    let (rep, ev) = run(trace.as_bytes());
    let ev = ev.expect("rows");
    // Which rows are kept, and their times, as before the count.
    let names = col::<StringArray>(&ev, "name");
    let start = col::<Int64Array>(&ev, "start_ts");
    let end = col::<Int64Array>(&ev, "end_ts");
    let rows: Vec<(&str, i64, i64)> = (0..ev.num_rows())
        .map(|i| (names.value(i), start.value(i), end.value(i)))
        .collect();
    assert_eq!(
        rows,
        [
            ("ok", 1_000, 2_000),
            ("neg ts", -5_000, -4_000),
            ("neg dur", 3_000, 3_000),
            ("huge dur", 4_000, 4_000),
            ("both", -6_000, -6_000),
            ("backwards", 10_000, 10_000),
            ("last", 20_000, 21_000),
        ]
    );
    // "both" has two wrong times and counts once.
    assert_eq!(
        (rep.bad_ts, rep.skipped, rep.odd_times),
        (4, 3, 5),
        "{rep:#?}"
    );
    assert_eq!(rep.problems.len(), 2, "{:#?}", rep.problems);
    let dropped = &rep.problems[0];
    assert_eq!(
        (
            dropped.code.as_str(),
            dropped.severity,
            dropped.file.as_deref(),
            dropped.offset
        ),
        (
            "ERROR_PROCESS_INCOMPLETE",
            neuronscope::Severity::Warning,
            Some("trace.json"),
            Some(at(1))
        )
    );
    assert!(
        dropped.message.starts_with("trace.json: 4 events not kept")
            && dropped
                .message
                .contains(&format!("at byte {} has `ts` 1e400", at(1))),
        "{}",
        dropped.message
    );
    let odd = &rep.problems[1];
    assert_eq!(
        (odd.code.as_str(), odd.severity, odd.offset),
        (
            "VALUE_OUT_OF_RANGE",
            neuronscope::Severity::Warning,
            Some(at(5))
        )
    );
    assert!(
        odd.message.starts_with("trace.json: 5 events kept")
            && odd
                .message
                .contains(&format!("at byte {} has `ts` -5", at(5))),
        "{}",
        odd.message
    );
    // The first bad event read the general way (it needs sanitising: a raw tab in its name) is
    // named at its own offset too; a clean trace has no such problem.
    let dirty = "[{\"ph\": \"X\", \"name\": \"a\tb\", \"ts\": 1e999},\n{\"ph\": \"X\", \"ts\": 1}]";
    let (rep, _) = run(dirty.as_bytes());
    assert_eq!((rep.bad_ts, rep.sanitised, rep.rows), (1, 1, 1), "{rep:#?}");
    assert_eq!(rep.problems.len(), 1, "{:#?}", rep.problems);
    assert_eq!(rep.problems[0].offset, Some(1));
    let clean = format!("[{}]", events[0]);
    let (rep, _) = run(clean.as_bytes());
    assert_eq!((rep.rows, rep.bad_ts, rep.odd_times), (1, 0, 0));
    assert!(rep.problems.is_empty(), "{:#?}", rep.problems);
}

#[test]
fn bytes_before_the_json_value_are_an_error_at_their_offset() {
    let ev =
        r#"{"traceEvents": [{"ph": "X", "name": "k", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]}"#;
    // Text, then a valid trace: the reader used to skip to the first `{` and keep its events.
    let junk = format!("garbage {ev}");
    // Protobuf-like bytes: 0x0a is a newline (whitespace), so the fault is byte 1.
    let pb = b"\x0a\x03abc\x12\x02[x".to_vec();
    for (input, at, found) in [
        (junk.as_bytes().to_vec(), 0u64, "67 61 72 62 61 67 65 20"),
        (pb, 1, "03 61 62 63 12 02 5b 78"),
    ] {
        let (rep, rows) = run(&input);
        assert!(rows.is_none_or(|b| b.num_rows() == 0), "no rows from junk");
        assert_eq!(rep.problems.len(), 1, "{:#?}", rep.problems);
        let p = &rep.problems[0];
        assert_eq!(
            (p.code.as_str(), p.severity, p.offset),
            (
                "ERROR_PROCESS_INCOMPLETE",
                neuronscope::Severity::Error,
                Some(at)
            )
        );
        assert!(
            p.message.starts_with(&format!(
                "trace.json is not JSON: at offset {at} expected the trace's `{{` or `[`, found bytes {found}"
            )),
            "{}",
            p.message
        );
    }
    // A byte-order mark and whitespace (across a read piece) before the value are allowed.
    let mut bom = b"\xEF\xBB\xBF".to_vec();
    bom.extend(std::iter::repeat_n(b' ', 5 << 20));
    bom.extend_from_slice(ev.as_bytes());
    let (rep, rows) = run(&bom);
    assert!(rep.problems.is_empty(), "{:#?}", rep.problems);
    assert_eq!(rows.map(|b| b.num_rows()), Some(1));
    // Whitespace only is a file cut before its events, not JSON without them.
    let (rep, _) = run(b" \n\t ");
    assert_eq!(rep.problems.len(), 1, "{:#?}", rep.problems);
    assert_eq!(
        (rep.problems[0].code.as_str(), rep.problems[0].offset),
        ("TRUNCATED_TRACE", Some(4)),
        "{}",
        rep.problems[0].message
    );
}
