//! Kineto `trace.json` typed decode (framework-inputs.md §2): the extras column built from raw
//! member text prints exactly as a `serde_json::Value` object would (sorted keys, later keys win,
//! numbers and strings in serde_json's canonical form), and a gzip-compressed trace read through
//! flate2 gives the same rows as the plain one. Synthetic inputs only (no trace.json sample
//! exists in ../shared/samples).

use std::io::Write;

use arrow_array::{Array, RecordBatch, StringArray};
use neuronscope::system::kineto::{self, KinetoReport};
use neuronscope::system::write::{write_kineto, SystemSpec};
use neuronscope::tables::Tables;

fn run(bytes: &[u8]) -> (KinetoReport, RecordBatch) {
    let mut t = Tables::default();
    let rep = kineto::read_trace_bytes(bytes, "trace.json", "i-test", &mut t).expect("sink ok");
    (rep, t.concat("SystemProfileEvents").expect("rows"))
}

fn strings<'a>(b: &'a RecordBatch, name: &str) -> &'a StringArray {
    b.column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<StringArray>())
        .unwrap_or_else(|| panic!("string column {name}"))
}

/// The extras text of an event object as the `serde_json::Value` reader built it: everything but
/// the structural keys, `args` members flattened first, then the other members (so they win).
fn value_extras(event: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(event).expect("strict json");
    let mut m = v.as_object().expect("object").clone();
    let mut out = serde_json::Map::new();
    for k in ["name", "ph", "ts", "dur", "pid", "tid"] {
        m.remove(k);
    }
    if let Some(serde_json::Value::Object(a)) = m.remove("args") {
        out.extend(a);
    }
    out.extend(m);
    serde_json::Value::Object(out).to_string()
}

#[test]
fn extras_print_as_serde_json_values_do() {
    let events = [
        // Floats (non-canonical forms), nested arrays with whitespace, an object value.
        r#"{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2, "args": {"f": 1.50, "e": 1e3, "neg0": -0, "big": 123456789012345678901, "dims": [[2048, 4096], [ ], [1]], "o": {"z": 1, "a": [1.0, "x"]}, "t": true, "n": null}}"#,
        // Escapes in values and keys, a unicode escape, a duplicate key (the last wins), a key of
        // args shadowed by a top-level member.
        r#"{"ph": "X", "name": "b\u00e9", "pid": 1, "tid": 1, "ts": 3, "dur": 1, "cat": "c\/d", "args": {"s": "tab\there \"q\" \u00e9", "k\"ey": 1, "dup": 1, "dup": 2, "cat": "args cat"}}"#,
        // Non-object args are dropped; unknown top-level members kept; ints at the i64 edges.
        r#"{"ph": "i", "name": "c", "pid": 1, "tid": 1, "ts": 5, "s": "t", "args": [1, 2], "id": 18446744073709551615, "m": -9223372036854775808}"#,
    ];
    let trace = format!("{{\"traceEvents\": [\n{}\n]}}", events.join(",\n"));
    let (rep, ev) = run(trace.as_bytes());
    assert_eq!(rep.rows, 3);
    assert_eq!(rep.sanitised, 0);
    let extra = strings(&ev, "extra_attributes_json");
    for (i, e) in events.iter().enumerate() {
        assert_eq!(extra.value(i), value_extras(e), "event {i}");
    }
    assert_eq!(strings(&ev, "name").value(1), "bé");
    // The first two spelled out, so a change in serde_json's printing is seen here too.
    assert_eq!(
        extra.value(1),
        r#"{"cat":"c/d","dup":2,"k\"ey":1,"s":"tab\there \"q\" é"}"#
    );
}

#[test]
fn string_pid_and_names_in_extras() {
    let t = br#"{"traceEvents": [
 {"ph": "M", "name": "process_name", "pid": "p \"1\"", "args": {"name": "proc \"x\""}},
 {"ph": "M", "name": "thread_name", "pid": "p \"1\"", "tid": 4, "args": {"name": "main"}},
 {"ph": "X", "name": 7, "pid": "p \"1\"", "tid": 4, "ts": 1, "dur": 1, "args": {"pid_text": "shadowed"}}
]}"#;
    let (rep, ev) = run(t);
    assert_eq!(rep.rows, 1);
    assert_eq!(
        strings(&ev, "name").value(0),
        "7",
        "a non-string name prints as JSON"
    );
    // Args come after pid_text, so they win; the names are added last.
    assert_eq!(
        strings(&ev, "extra_attributes_json").value(0),
        r#"{"pid_text":"shadowed","process_name":"proc \"x\"","thread_name":"main"}"#
    );
}

#[test]
fn gzip_trace_reads_like_the_plain_one() {
    let spec = SystemSpec::default();
    let mut plain = Vec::new();
    write_kineto(&spec, 300_000, &mut plain).expect("write");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&plain).expect("gzip");
    let gz = gz.finish().expect("gzip");
    let (rep, ev) = run(&plain);
    let mut t = Tables::default();
    let base = kineto::find_base(flate2::read::MultiGzDecoder::new(&gz[..]));
    let zrep = kineto::read_trace(
        flate2::read::MultiGzDecoder::new(&gz[..]),
        "trace.json.gz",
        "i-test",
        base,
        &mut t,
        &mut |_| {},
    )
    .expect("sink ok");
    let zev = t.concat("SystemProfileEvents").expect("rows");
    assert!(rep.rows > 1000);
    assert_eq!(zrep.rows, rep.rows);
    assert_eq!(zrep.bytes, plain.len() as u64, "bytes counted decompressed");
    assert_eq!(zrep.base_time_ns, rep.base_time_ns);
    assert_eq!(zev, ev);
}

/// Hands out its bytes a few at a time (1 to 7), so events, strings and escapes straddle reads.
struct Trickle<'a>(&'a [u8], usize);

impl std::io::Read for Trickle<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        self.1 = self.1 % 7 + 1;
        let n = self.1.min(out.len()).min(self.0.len());
        out[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

#[test]
fn tiny_reads_give_the_same_rows() {
    let mut v = Vec::new();
    write_kineto(&SystemSpec::default(), 60_000, &mut v).expect("write");
    // Dirty events too (escapes, raw control bytes, invalid UTF-8) before the synthetic ones.
    let dirty = b"{\"ph\": \"X\", \"name\": \"a\\\"b\\\\c \\ud83d\\ude00 \\q\tx\xff\", \"pid\": 1, \"tid\": 1, \"ts\": 1.5, \"dur\": 2, \"args\": {\"p\": \"C:\\\\x\", \"n\": [1, [2]]}},\n";
    let at = v
        .windows(16)
        .position(|w| w == b"\"traceEvents\": [")
        .expect("event array")
        + 17;
    v.splice(at..at, dirty.iter().copied());
    let (rep, ev) = run(&v);
    let mut t = Tables::default();
    let base = kineto::find_base(&v[..]);
    let trep = kineto::read_trace(
        Trickle(&v, 0),
        "trace.json",
        "i-test",
        base,
        &mut t,
        &mut |_| {},
    )
    .expect("sink ok");
    assert!(rep.rows > 100);
    assert_eq!(rep.sanitised, 1);
    assert_eq!(trep, rep);
    assert_eq!(t.concat("SystemProfileEvents").expect("rows"), ev);
}
