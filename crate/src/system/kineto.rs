//! Streaming, lenient reader of Kineto / `torch.profiler` Chrome traces (`trace.json`,
//! spec/framework-inputs.md §2) into `SystemProfileEvents` rows with `trace_event_source` =
//! `framework`.
//!
//! The file is scanned byte by byte with a small state machine (string / escape / nesting state),
//! so it is never held whole: only one event object at a time is buffered, sanitised (raw control
//! characters escaped, invalid escapes kept as a literal backslash, invalid UTF-8 → U+FFFD) and
//! parsed with serde_json. End of input inside the event array ends the array (missing `]`).
//! An unparsable event is skipped and counted. Rows are held until the end of the file because
//! `baseTimeNanoseconds` may follow `traceEvents`, `B`/`E` pair up later and `M` names threads.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;

use serde_json::{Map, Value};

use crate::error::{Error, Problem, Result, Severity};
use crate::tables::{explorer, Emitter, TableSink};

/// Bytes read from the input per call.
const READ_CHUNK: usize = 1 << 20;
/// Largest single event object accepted (bigger ones are skipped, not buffered).
const MAX_EVENT: usize = 16 << 20;

/// First `SystemProfileEvents.id` of framework rows (2^62).
pub const FRAMEWORK_ID_BASE: i64 = 1 << 62;

/// What [`read_trace`] found.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct KinetoReport {
    /// Bytes scanned.
    pub bytes: u64,
    /// Event objects seen in the event array.
    pub objects: u64,
    /// Objects that could not be parsed even after sanitising (skipped).
    pub skipped: u64,
    /// `SystemProfileEvents` rows written.
    pub rows: u64,
    /// Rows per phase letter.
    pub phases: BTreeMap<String, u64>,
    /// `baseTimeNanoseconds` (epoch ns), when present.
    pub base_time_ns: Option<i64>,
    /// The input ended inside the event array (missing `]` or a cut file).
    pub truncated: bool,
    /// `B` without `E` (kept as zero-length rows) and `E` without `B` (dropped).
    pub unmatched_begin: u64,
    /// See `unmatched_begin`.
    pub unmatched_end: u64,
    /// Flow events (`s`/`t`/`f`) bound to a slice.
    pub flows_bound: u64,
    /// Problems (file + offset).
    pub problems: Vec<Problem>,
}

/// One framework row before emission. Times are ns relative to the base (added at the end).
struct Row {
    name: String,
    start: i64,
    end: i64,
    pid: i64,
    tid: i64,
    extra: Map<String, Value>,
    flows: Vec<String>,
}

/// Parses a JSON number text as µs → ns exactly (decimal digits, no float rounding), falling
/// back to f64 for exponent forms.
pub fn us_text_to_ns(t: &str) -> Option<i64> {
    let t = t.trim();
    if t.contains(['e', 'E']) {
        let f: f64 = t.parse().ok()?;
        let ns = (f * 1000.0).round();
        return (ns.is_finite() && ns.abs() < 9.2e18).then_some(ns as i64);
    }
    let (neg, t) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t),
    };
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let i: i64 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let mut f3 = 0i64;
    let fb = frac.as_bytes();
    for k in 0..3 {
        f3 = f3 * 10 + fb.get(k).map_or(0, |d| i64::from(d - b'0'));
    }
    let round = fb.get(3).is_some_and(|d| *d >= b'5');
    let v = i.checked_mul(1000)?.checked_add(f3 + i64::from(round))?;
    Some(if neg { -v } else { v })
}

/// Sanitises one event object's bytes into strict JSON and records the raw number text of its
/// top-level `ts` and `dur` keys (for exact µs → ns).
fn sanitise(raw: &[u8]) -> (String, Option<String>, Option<String>) {
    let s = String::from_utf8_lossy(raw);
    let mut out = String::with_capacity(s.len() + 16);
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    let mut in_str = false;
    let mut depth = 0i32;
    let mut cur = String::new();
    let (mut ts, mut dur) = (None, None);
    while let Some(&c) = chars.get(i) {
        if in_str {
            match c {
                '"' => {
                    in_str = false;
                    out.push(c);
                }
                '\\' => {
                    let n = chars.get(i + 1).copied();
                    match n {
                        Some('"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't') => {
                            out.push('\\');
                            out.push(n.unwrap_or('\\'));
                            cur.push(n.unwrap_or('\\'));
                            i += 1;
                        }
                        Some('u')
                            if chars
                                .get(i + 2..i + 6)
                                .is_some_and(|h| h.iter().all(|c| c.is_ascii_hexdigit())) =>
                        {
                            // Lone surrogates would fail serde_json: replace them.
                            let hex: String =
                                chars.get(i + 2..i + 6).unwrap_or(&[]).iter().collect();
                            let v = u32::from_str_radix(&hex, 16).unwrap_or(0xfffd);
                            if (0xd800..0xe000).contains(&v) {
                                let next_low = chars.get(i + 6) == Some(&'\\')
                                    && chars.get(i + 7) == Some(&'u')
                                    && (0xd800..0xdc00).contains(&v);
                                if next_low {
                                    out.push_str("\\u");
                                    out.push_str(&hex);
                                } else {
                                    out.push_str("\\ufffd");
                                }
                            } else {
                                out.push_str("\\u");
                                out.push_str(&hex);
                            }
                            i += 5;
                        }
                        _ => {
                            // Invalid escape (e.g. a Windows path): keep the backslash.
                            out.push_str("\\\\");
                            cur.push('\\');
                        }
                    }
                }
                c if (c as u32) < 0x20 => {
                    out.push_str(&format!("\\u{:04x}", c as u32));
                }
                c => {
                    out.push(c);
                    if depth == 1 {
                        cur.push(c);
                    }
                }
            }
        } else {
            match c {
                '"' => {
                    in_str = true;
                    cur.clear();
                    out.push(c);
                }
                '{' | '[' => {
                    depth = depth.saturating_add(1);
                    out.push(c);
                }
                '}' | ']' => {
                    depth = depth.saturating_sub(1);
                    out.push(c);
                }
                ':' if depth == 1 => {
                    let last_key = std::mem::take(&mut cur);
                    out.push(c);
                    // Capture a bare number value of ts / dur.
                    if last_key == "ts" || last_key == "dur" {
                        let mut j = i + 1;
                        let mut num = String::new();
                        while let Some(&d) = chars.get(j) {
                            if d.is_ascii_digit() || matches!(d, '.' | '-' | '+' | 'e' | 'E') {
                                num.push(d);
                            } else if !(d.is_whitespace() && num.is_empty()) {
                                break;
                            }
                            j += 1;
                        }
                        if !num.is_empty() {
                            if last_key == "ts" {
                                ts = Some(num);
                            } else {
                                dur = Some(num);
                            }
                        }
                    }
                }
                c => out.push(c),
            }
        }
        i += 1;
    }
    (out, ts, dur)
}

fn value_ns(v: Option<&Value>, raw: Option<&str>) -> Option<i64> {
    if let Some(t) = raw.and_then(us_text_to_ns) {
        return Some(t);
    }
    match v? {
        Value::Number(n) => {
            let f = n.as_f64()? * 1000.0;
            (f.is_finite() && f.abs() < 9.2e18).then(|| f.round() as i64)
        }
        Value::String(s) => us_text_to_ns(s),
        _ => None,
    }
}

/// pid / tid: numbers, or strings (hashed to a non-negative int64; the text goes to extras).
fn id_of(v: Option<&Value>, key: &str, extra: &mut Map<String, Value>) -> i64 {
    match v {
        Some(Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .unwrap_or(0),
        Some(Value::String(s)) => match s.trim().parse::<i64>() {
            Ok(n) => n,
            Err(_) => {
                extra.insert(format!("{key}_text"), Value::String(s.clone()));
                // FNV-1a, 63 bits: stable across runs and platforms.
                let mut h: u64 = 0xcbf2_9ce4_8422_2325;
                for b in s.bytes() {
                    h ^= u64::from(b);
                    h = h.wrapping_mul(0x0100_0000_01b3);
                }
                (h >> 1) as i64
            }
        },
        _ => 0,
    }
}

/// Scanner state over the whole file.
#[derive(Default)]
struct Scan {
    depth: i32,
    in_str: bool,
    esc: bool,
    /// 0 unknown, 1 array form, 2 object form.
    form: u8,
    /// Depth of the event array's elements.
    events_depth: Option<i32>,
    events_closed: bool,
    /// Key / value capture at depth 1 of the object form.
    key: Vec<u8>,
    last_key: Vec<u8>,
    base_num: Option<Vec<u8>>,
    base: Option<String>,
    /// Event object being captured, with the depth it started at and its offset.
    cap: Option<(Vec<u8>, i32, u64)>,
    cap_too_big: bool,
}

/// Reads a Kineto / Chrome trace from `input` (already decompressed) and writes its events as
/// `SystemProfileEvents` rows (`trace_event_source` = `framework`, times in Unix ns when
/// `baseTimeNanoseconds` is present, else `ts` × 1000).
///
/// `file` names the input in problems; `instance_id` fills the column. Never fails on bad input
/// (problems in the report); errors only from `sink` or a failing reader.
pub fn read_trace(
    mut input: impl Read,
    file: &str,
    instance_id: &str,
    sink: &mut dyn TableSink,
) -> Result<KinetoReport> {
    let mut rep = KinetoReport::default();
    let mut st = Scan::default();
    let mut raw_events: Vec<Row> = Vec::new();
    let mut begins: HashMap<(i64, i64), Vec<usize>> = HashMap::new();
    let mut flows: Vec<(i64, i64, i64, String, bool)> = Vec::new();
    let mut pnames: HashMap<i64, String> = HashMap::new();
    let mut tnames: HashMap<(i64, i64), String> = HashMap::new();
    let mut buf = vec![0u8; READ_CHUNK];
    let mut off = 0u64;
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                rep.problems.push(Problem::from_error(
                    Severity::Warning,
                    "ERROR_PROCESS_INCOMPLETE",
                    file,
                    &Error::format(off, "readable trace bytes", e.to_string()),
                ));
                break;
            }
        };
        for (k, &b) in buf.iter().take(n).enumerate() {
            let at = off + k as u64;
            if let Some(obj) = step(&mut st, b, at) {
                rep.objects += 1;
                handle(
                    obj,
                    file,
                    &mut rep,
                    &mut raw_events,
                    &mut begins,
                    &mut flows,
                    &mut pnames,
                    &mut tnames,
                );
            }
        }
        off += n as u64;
    }
    rep.bytes = off;
    finish_base(&mut st);
    if st.events_depth.is_some() && !st.events_closed {
        rep.truncated = true;
        rep.problems.push(Problem {
            severity: Severity::Warning,
            code: "TRUNCATED_TRACE".into(),
            file: Some(file.into()),
            offset: Some(off),
            message: format!(
                "{file}: the event array is not closed (missing `]` or a cut file); events up to byte {off} kept"
            ),
        });
    }
    if st.events_depth.is_none() {
        rep.problems.push(Problem::new(
            Severity::Warning,
            "NO_TRACE_EVENTS",
            Some(file),
            format!("{file}: no `traceEvents` array found"),
        ));
    }
    let base = st
        .base
        .as_deref()
        .and_then(|t| t.trim().parse::<i64>().ok());
    rep.base_time_ns = base;
    for idxs in begins.values() {
        rep.unmatched_begin += idxs.len() as u64;
    }
    // Bind flows: `s`/`t` (and `f` with bp=e) to the enclosing slice of their thread, else a
    // slice starting at that time (`f` without bp=e binds to the next slice).
    let mut by_thread: HashMap<(i64, i64), Vec<usize>> = HashMap::new();
    for (i, r) in raw_events.iter().enumerate() {
        if r.end > r.start {
            by_thread.entry((r.pid, r.tid)).or_default().push(i);
        }
    }
    for v in by_thread.values_mut() {
        v.sort_by_key(|&i| raw_events.get(i).map_or(0, |r| r.start));
    }
    for (pid, tid, ts, id, enclosing) in flows {
        let Some(list) = by_thread.get(&(pid, tid)) else {
            continue;
        };
        let mut best: Option<usize> = None;
        for &i in list {
            let Some(r) = raw_events.get(i) else { continue };
            if r.start > ts {
                if !enclosing && best.is_none() {
                    best = Some(i);
                }
                break;
            }
            if r.end >= ts {
                best = Some(i); // innermost: the latest-starting enclosing slice
            }
        }
        if let Some(r) = best.and_then(|i| raw_events.get_mut(i)) {
            if !r.flows.contains(&id) {
                r.flows.push(id);
            }
            rep.flows_bound += 1;
        }
    }
    let def = &explorer::SYSTEM_PROFILE_EVENTS;
    let c = |n: &str| def.col(n);
    let cols = [
        c("id"),
        c("name"),
        c("start_ts"),
        c("end_ts"),
        c("duration_ns"),
        c("trace_event_source"),
        c("instance_id"),
        c("process_id"),
        c("thread_id"),
        c("flow_id"),
        c("extra_attributes_json"),
    ];
    let mut em = Emitter::new(def, sink);
    let add = base.unwrap_or(0);
    for (i, mut r) in raw_events.into_iter().enumerate() {
        if let Some(p) = pnames.get(&r.pid) {
            r.extra
                .insert("process_name".into(), Value::String(p.clone()));
        }
        if let Some(t) = tnames.get(&(r.pid, r.tid)) {
            r.extra
                .insert("thread_name".into(), Value::String(t.clone()));
        }
        let b = &mut em.b;
        let (s, e) = (r.start.saturating_add(add), r.end.saturating_add(add));
        // Framework rows have no id in the trace: number them in file order, in a range
        // (2^62 + n) that ntrace ids (worker << 50 | sequence) do not reach.
        b.i64(cols[0], Some(FRAMEWORK_ID_BASE + i as i64));
        b.str(cols[1], Some(&r.name));
        b.i64(cols[2], Some(s));
        b.i64(cols[3], Some(e));
        b.i64(cols[4], Some(e.saturating_sub(s)));
        b.str(cols[5], Some("framework"));
        b.str(cols[6], Some(instance_id));
        b.i64(cols[7], Some(r.pid));
        b.i64(cols[8], Some(r.tid));
        if !r.flows.is_empty() {
            let f: Vec<&str> = r.flows.iter().map(String::as_str).collect();
            b.list_str(cols[9], &f);
        }
        if !r.extra.is_empty() {
            b.str(cols[10], Some(&Value::Object(r.extra).to_string()));
        }
        em.end_row()?;
    }
    rep.rows = em.finish()?;
    if rep.skipped > 10 {
        rep.problems.push(Problem::new(
            Severity::Warning,
            "ERROR_PROCESS_INCOMPLETE",
            Some(file),
            format!(
                "{file}: {} events could not be parsed (first 10 listed)",
                rep.skipped
            ),
        ));
    }
    Ok(rep)
}

/// Advances the scanner by one byte; returns a finished event object (bytes, offset).
fn step(st: &mut Scan, b: u8, at: u64) -> Option<(Vec<u8>, u64)> {
    if let Some((v, _, _)) = st.cap.as_mut() {
        if v.len() < MAX_EVENT {
            v.push(b);
        } else {
            st.cap_too_big = true;
        }
    }
    if st.in_str {
        if st.esc {
            st.esc = false;
        } else if b == b'\\' {
            st.esc = true;
        } else if b == b'"' {
            st.in_str = false;
        } else if st.form == 2 && st.depth == 1 {
            st.key.push(b);
        }
        return None;
    }
    match b {
        b'"' => {
            st.in_str = true;
            if st.form == 2 && st.depth == 1 {
                st.key.clear();
            }
        }
        b'{' | b'[' => {
            if st.form == 0 {
                st.form = if b == b'[' { 1 } else { 2 };
                st.depth = 1;
                if b == b'[' {
                    st.events_depth = Some(1);
                }
                return None;
            }
            if b == b'{'
                && Some(st.depth) == st.events_depth
                && st.cap.is_none()
                && !st.events_closed
            {
                st.cap = Some((vec![b'{'], st.depth, at));
                st.cap_too_big = false;
            }
            if b == b'[' && st.form == 2 && st.depth == 1 && st.last_key == b"traceEvents" {
                st.events_depth = Some(2);
                st.events_closed = false;
            }
            st.depth = st.depth.saturating_add(1);
        }
        b'}' | b']' => {
            st.depth = st.depth.saturating_sub(1);
            if let Some(ed) = st.events_depth {
                if b == b']' && st.depth == ed - 1 && st.cap.is_none() {
                    st.events_closed = true;
                }
            }
            if b == b'}' {
                if let Some((_, d, _)) = &st.cap {
                    if st.depth == *d {
                        let (v, _, o) = st.cap.take()?;
                        if st.cap_too_big {
                            return Some((Vec::new(), o));
                        }
                        return Some((v, o));
                    }
                }
            }
            if st.depth == 1 {
                finish_base(st);
            }
        }
        b':' if st.form == 2 && st.depth == 1 => {
            st.last_key = std::mem::take(&mut st.key);
            if st.last_key == b"baseTimeNanoseconds" {
                st.base_num = Some(Vec::new());
            }
        }
        b',' if st.depth == 1 => finish_base(st),
        _ => {
            if st.depth == 1 {
                if let Some(n) = st.base_num.as_mut() {
                    if !b.is_ascii_whitespace() && n.len() < 32 {
                        n.push(b);
                    }
                }
            }
        }
    }
    None
}

fn finish_base(st: &mut Scan) {
    if let Some(n) = st.base_num.take() {
        st.base = Some(String::from_utf8_lossy(&n).into_owned());
    }
}

#[allow(clippy::too_many_arguments)]
fn handle(
    (raw, off): (Vec<u8>, u64),
    file: &str,
    rep: &mut KinetoReport,
    rows: &mut Vec<Row>,
    begins: &mut HashMap<(i64, i64), Vec<usize>>,
    flows: &mut Vec<(i64, i64, i64, String, bool)>,
    pnames: &mut HashMap<i64, String>,
    tnames: &mut HashMap<(i64, i64), String>,
) {
    let (text, ts_raw, dur_raw) = sanitise(&raw);
    let ev: Value = match serde_json::from_str(&text) {
        Ok(v @ Value::Object(_)) => v,
        other => {
            rep.skipped += 1;
            if rep.skipped <= 10 {
                let why = match other {
                    Err(e) => e.to_string(),
                    Ok(_) => "not an object".into(),
                };
                rep.problems.push(Problem::from_error(
                    Severity::Warning,
                    "ERROR_PROCESS_INCOMPLETE",
                    file,
                    &Error::format(off, "a trace event object", why),
                ));
            }
            return;
        }
    };
    let Value::Object(mut m) = ev else { return };
    let ph = m
        .get("ph")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let mut extra = Map::new();
    let pid = id_of(m.get("pid"), "pid", &mut extra);
    let tid = id_of(m.get("tid"), "tid", &mut extra);
    let name = m
        .get("name")
        .map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .unwrap_or_default();
    let ts = value_ns(m.get("ts"), ts_raw.as_deref());
    *rep.phases.entry(ph.clone()).or_default() += 1;
    if ph == "M" {
        let arg = m
            .get("args")
            .and_then(|a| a.get("name"))
            .and_then(Value::as_str)
            .map(str::to_string);
        if let Some(a) = arg {
            match name.as_str() {
                "process_name" => {
                    pnames.insert(pid, a);
                }
                "thread_name" => {
                    tnames.insert((pid, tid), a);
                }
                _ => {}
            }
        }
        return;
    }
    if matches!(ph.as_str(), "s" | "t" | "f") {
        if let Some(ts) = ts {
            let id = m
                .get("id")
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .unwrap_or_default();
            let cat = m.get("cat").and_then(Value::as_str).unwrap_or("");
            let enclosing = ph != "f" || m.get("bp").and_then(Value::as_str) == Some("e");
            flows.push((pid, tid, ts, format!("{cat}:{id}"), enclosing));
        }
        return;
    }
    let Some(ts) = ts else {
        rep.skipped += 1;
        return;
    };
    let dur_v = m.get("dur").cloned();
    // Everything except the structural keys goes to extras (args flattened under their keys).
    for k in ["name", "ph", "ts", "dur", "pid", "tid"] {
        m.remove(k);
    }
    if let Some(Value::Object(args)) = m.remove("args") {
        for (k, v) in args {
            extra.insert(k, v);
        }
    }
    for (k, v) in m {
        extra.insert(k, v);
    }
    match ph.as_str() {
        "E" => {
            if let Some(i) = begins.get_mut(&(pid, tid)).and_then(Vec::pop) {
                if let Some(r) = rows.get_mut(i) {
                    r.end = ts.max(r.start);
                    for (k, v) in extra {
                        r.extra.insert(k, v);
                    }
                }
            } else {
                rep.unmatched_end += 1;
            }
            if begins.get(&(pid, tid)).is_some_and(Vec::is_empty) {
                begins.remove(&(pid, tid));
            }
        }
        _ => {
            let dur = if ph == "X" {
                value_ns(dur_v.as_ref(), dur_raw.as_deref()).unwrap_or(0)
            } else {
                0
            };
            if ph == "B" {
                begins.entry((pid, tid)).or_default().push(rows.len());
            }
            if !matches!(ph.as_str(), "X" | "B" | "i" | "I" | "C") {
                extra.insert("ph".into(), Value::String(ph.clone()));
            }
            rows.push(Row {
                name,
                start: ts,
                end: ts.saturating_add(dur.max(0)),
                pid,
                tid,
                extra,
                flows: Vec::new(),
            });
        }
    }
}
