//! Streaming, lenient reader of Kineto / `torch.profiler` Chrome traces (`trace.json`,
//! spec/framework-inputs.md §2) into `SystemProfileEvents` rows with `trace_event_source` =
//! `framework`.
//!
//! Memory stays bounded whatever the file size (framework-inputs.md §2.5: one LLM step can write
//! more than 1 GB):
//! - the input is read in 1 MiB pieces and scanned byte by byte with a small state machine
//!   (string / escape / nesting state); only one event object at a time is buffered;
//! - each event is parsed on its own: strict JSON first, and when that fails it is sanitised (raw
//!   control characters escaped, invalid escapes kept as a literal backslash, invalid UTF-8 →
//!   U+FFFD, lone surrogates → U+FFFD) and parsed again; an unparsable event is skipped and counted;
//! - rows leave in 64 Ki-row batches through the [`Emitter`]. A finished row is held back in a
//!   window of [`WINDOW`] rows so flow events (`s`/`t`/`f`) written after their slice can still
//!   bind to it; `B` rows wait on a per-thread stack (at most [`MAX_OPEN`] deep, [`MAX_OPEN_TOTAL`]
//!   over all threads) until their `E`; a flow that finds no slice waits in a per-thread queue of at
//!   most [`MAX_PENDING_FLOWS`] for the next slice of its thread.
//! - `baseTimeNanoseconds` normally precedes `traceEvents` (Kineto's write order). When it follows
//!   them, [`find_base`] finds it in a first, scan-only pass ([`read_trace_bytes`] and
//!   `system::process` do that) so every row is emitted once, already on the epoch clock.
//!
//! End of input inside the event array ends the array (missing `]`).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::Read;

use serde_json::{Map, Value};

use crate::error::{Error, Problem, Result, Severity};
use crate::tables::{explorer, Emitter, TableSink};

/// Bytes read from the input per call.
const READ_CHUNK: usize = 1 << 20;
/// Largest single event object accepted (bigger ones are skipped, not buffered).
const MAX_EVENT: usize = 16 << 20;
/// Finished rows held back (for late flow events) before they are emitted.
pub const WINDOW: usize = 4096;
/// Deepest `B` nesting kept per thread; a deeper begin closes the oldest one as a zero-length row.
pub const MAX_OPEN: usize = 1024;
/// Open `B` rows over all threads; beyond that a new `B` becomes a zero-length row at once.
pub const MAX_OPEN_TOTAL: usize = 65_536;
/// Flow events per thread waiting for a slice; older ones are dropped (counted unbound).
pub const MAX_PENDING_FLOWS: usize = 256;
/// Recent slices of a thread a flow event looks back over.
const FLOW_LOOKBACK: usize = 64;
/// Process / thread names kept (report and extras).
const MAX_NAMES: usize = 65_536;

/// First `SystemProfileEvents.id` of framework rows (2^62).
pub const FRAMEWORK_ID_BASE: i64 = 1 << 62;

/// What [`read_trace`] found.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct KinetoReport {
    /// Bytes scanned (decompressed).
    pub bytes: u64,
    /// Event objects seen in the event array.
    pub objects: u64,
    /// Objects that could not be parsed even after sanitising (skipped).
    pub skipped: u64,
    /// Objects that needed sanitising (dirty JSON) before they parsed.
    pub sanitised: u64,
    /// `SystemProfileEvents` rows written.
    pub rows: u64,
    /// Objects per phase letter.
    pub phases: BTreeMap<String, u64>,
    /// `baseTimeNanoseconds` (epoch ns) used for the rows, when known.
    pub base_time_ns: Option<i64>,
    /// `baseTimeNanoseconds` appeared only after the events and was not given by the caller:
    /// the rows are on the trace's own clock (`ts` × 1000).
    pub base_after_events: bool,
    /// The input ended inside the event array (missing `]` or a cut file).
    pub truncated: bool,
    /// `B` without `E` (kept as zero-length rows) and `E` without `B` (dropped).
    pub unmatched_begin: u64,
    /// See `unmatched_begin`.
    pub unmatched_end: u64,
    /// Flow events (`s`/`t`/`f`) bound to a slice.
    pub flows_bound: u64,
    /// Flow events that found no slice of their thread (within the window).
    pub flows_unbound: u64,
    /// Most rows held at once (window + open `B` + waiting flows): the reader's bounded state.
    pub peak_held: u64,
    /// `process_name` metadata: pid → name.
    pub process_names: BTreeMap<i64, String>,
    /// `thread_name` metadata: `"pid:tid"` → name.
    pub thread_names: BTreeMap<String, String>,
    /// Problems (file + offset).
    pub problems: Vec<Problem>,
}

/// One framework row before emission. Times are ns on the trace clock (base added at emission).
struct Row {
    id: i64,
    name: String,
    start: i64,
    end: i64,
    pid: i64,
    tid: i64,
    extra: Map<String, Value>,
    flows: Vec<String>,
}

/// A flow event waiting for its slice.
struct Flow {
    ts: i64,
    id: String,
    /// `s`/`t`, or `f` with `bp: e`: binds to the enclosing slice; `f` otherwise: the next one.
    enclosing: bool,
}

/// Per-thread state, bounded.
#[derive(Default)]
struct Thread {
    /// Open `B` rows, outermost first.
    open: Vec<Row>,
    /// `(window sequence number, start, end)` of the thread's recent non-empty slices.
    recent: VecDeque<(u64, i64, i64)>,
    /// Flow events that found no slice yet.
    pending: VecDeque<Flow>,
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
    // The previous escape was a high surrogate kept for the low one that follows.
    let mut low_ok = false;
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
                            let hex_at = |k: usize| -> Option<u32> {
                                let h: String = chars.get(k..k + 4)?.iter().collect();
                                u32::from_str_radix(&h, 16).ok()
                            };
                            let keep = if (0xd800..0xdc00).contains(&v) {
                                // A high surrogate stands only before a low-surrogate escape.
                                let ok = chars.get(i + 6) == Some(&'\\')
                                    && chars.get(i + 7) == Some(&'u')
                                    && hex_at(i + 8).is_some_and(|w| (0xdc00..0xe000).contains(&w));
                                low_ok = ok;
                                ok
                            } else if (0xdc00..0xe000).contains(&v) {
                                std::mem::take(&mut low_ok)
                            } else {
                                true
                            };
                            if keep {
                                out.push_str("\\u");
                                out.push_str(&hex);
                            } else {
                                out.push_str("\\ufffd");
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

/// Finds the top-level `baseTimeNanoseconds` of a trace by scanning only (no event is parsed).
/// Stops as soon as it is found, or when the event array begins with no base seen before it
/// only if the trace is in array form (which has no base); otherwise reads to the end.
pub fn find_base(mut input: impl Read) -> Option<i64> {
    let mut st = Scan::default();
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        for &b in buf.iter().take(n) {
            step_scan(&mut st, b);
            if let Some(v) = st.base.as_deref() {
                return v.trim().parse().ok();
            }
            if st.form == 1 {
                return None;
            }
        }
    }
    finish_base(&mut st);
    st.base.as_deref().and_then(|v| v.trim().parse().ok())
}

/// [`step`] without event capture (for [`find_base`]).
fn step_scan(st: &mut Scan, b: u8) {
    if st.in_str {
        if st.esc {
            st.esc = false;
        } else if b == b'\\' {
            st.esc = true;
        } else if b == b'"' {
            st.in_str = false;
        } else if st.form == 2 && st.depth == 1 && st.key.len() < 64 {
            st.key.push(b);
        }
        return;
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
                return;
            }
            st.depth = st.depth.saturating_add(1);
        }
        b'}' | b']' => {
            st.depth = st.depth.saturating_sub(1);
            if st.depth <= 1 {
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
}

/// Reads a trace held in memory: [`find_base`], then [`read_trace`] with that base.
pub fn read_trace_bytes(
    bytes: &[u8],
    file: &str,
    instance_id: &str,
    sink: &mut dyn TableSink,
) -> Result<KinetoReport> {
    let base = find_base(bytes);
    read_trace(bytes, file, instance_id, base, sink, &mut |_| {})
}

/// The streaming reader's state (see the module docs for the bounds).
struct Reader<'s, 'f> {
    file: &'f str,
    instance_id: &'f str,
    rep: KinetoReport,
    /// Added to every time at emission (0 when unknown).
    base: i64,
    threads: HashMap<(i64, i64), Thread>,
    /// Finished rows not yet emitted; `window[0]` has sequence number `front_seq`.
    window: VecDeque<Row>,
    front_seq: u64,
    open_total: usize,
    pending_total: usize,
    next_id: i64,
    pnames: HashMap<i64, String>,
    tnames: HashMap<(i64, i64), String>,
    em: Emitter<'s>,
    cols: [usize; 11],
}

/// Reads a Kineto / Chrome trace from `input` (already decompressed) and writes its events as
/// `SystemProfileEvents` rows (`trace_event_source` = `framework`).
///
/// Times: `base` (epoch ns, from [`find_base`]) else a `baseTimeNanoseconds` met before the
/// events, plus `ts` × 1000 (exact decimal µs → ns); without either, `ts` × 1000 alone (old traces
/// write absolute epoch µs). `file` names the input in problems; `instance_id` fills the column;
/// `progress(bytes)` is called every read piece.
///
/// Never fails on bad input (problems in the report); errors only from `sink`.
pub fn read_trace(
    mut input: impl Read,
    file: &str,
    instance_id: &str,
    base: Option<i64>,
    sink: &mut dyn TableSink,
    progress: &mut dyn FnMut(u64),
) -> Result<KinetoReport> {
    let def = &explorer::SYSTEM_PROFILE_EVENTS;
    let c = |n: &str| def.col(n);
    let mut r = Reader {
        file,
        instance_id,
        rep: KinetoReport::default(),
        base: 0,
        threads: HashMap::new(),
        window: VecDeque::new(),
        front_seq: 0,
        open_total: 0,
        pending_total: 0,
        next_id: FRAMEWORK_ID_BASE,
        pnames: HashMap::new(),
        tnames: HashMap::new(),
        em: Emitter::new(def, sink),
        cols: [
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
        ],
    };
    let mut st = Scan::default();
    let mut buf = vec![0u8; READ_CHUNK];
    let mut off = 0u64;
    let mut base_fixed = false;
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                r.rep.problems.push(Problem::from_error(
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
                if !base_fixed {
                    // The clock is fixed at the first event: the caller's base, else one seen so far.
                    base_fixed = true;
                    let seen = st
                        .base
                        .as_deref()
                        .and_then(|t| t.trim().parse::<i64>().ok());
                    r.rep.base_time_ns = base.or(seen);
                    r.base = r.rep.base_time_ns.unwrap_or(0);
                }
                r.rep.objects += 1;
                r.handle(obj)?;
            }
        }
        off += n as u64;
        progress(off);
    }
    r.rep.bytes = off;
    finish_base(&mut st);
    let seen = st
        .base
        .as_deref()
        .and_then(|t| t.trim().parse::<i64>().ok());
    if !base_fixed {
        r.rep.base_time_ns = base.or(seen);
    } else if r.rep.base_time_ns.is_none() && seen.is_some() {
        r.rep.base_after_events = true;
        r.rep.problems.push(Problem::new(
            Severity::Warning,
            "ERROR_PROCESS_INCOMPLETE",
            Some(file),
            format!("{file}: baseTimeNanoseconds follows the events; times are on the trace's own clock"),
        ));
    }
    if st.events_depth.is_some() && !st.events_closed {
        r.rep.truncated = true;
        r.rep.problems.push(Problem {
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
        r.rep.problems.push(Problem::new(
            Severity::Warning,
            "NO_TRACE_EVENTS",
            Some(file),
            format!("{file}: no `traceEvents` array found"),
        ));
    }
    r.finish()
}

impl Reader<'_, '_> {
    fn held(&mut self) {
        let h = (self.window.len() + self.open_total + self.pending_total) as u64;
        if h > self.rep.peak_held {
            self.rep.peak_held = h;
        }
    }

    /// A finished row: binds waiting flows of its thread, then joins the window.
    fn complete(&mut self, mut row: Row) -> Result<()> {
        let seq = self.front_seq + self.window.len() as u64;
        let th = self.threads.entry((row.pid, row.tid)).or_default();
        if row.end > row.start {
            th.recent.push_back((seq, row.start, row.end));
            if th.recent.len() > FLOW_LOOKBACK {
                th.recent.pop_front();
            }
            let before = th.pending.len();
            th.pending.retain(|f| {
                let hit = if f.enclosing {
                    row.start <= f.ts && f.ts <= row.end
                } else {
                    row.start >= f.ts
                };
                if hit && !row.flows.contains(&f.id) {
                    row.flows.push(f.id.clone());
                }
                !hit
            });
            let bound = before - th.pending.len();
            self.pending_total -= bound;
            self.rep.flows_bound += bound as u64;
        }
        self.window.push_back(row);
        while self.window.len() > WINDOW {
            if let Some(old) = self.window.pop_front() {
                self.front_seq += 1;
                self.emit(old)?;
            }
        }
        self.held();
        if self.front_seq.is_multiple_of(WINDOW as u64 * 16) && self.threads.len() > 1024 {
            // Forget threads with nothing waiting (many distinct tids must not grow the map).
            let front = self.front_seq;
            self.threads.retain(|_, t| {
                !t.open.is_empty()
                    || !t.pending.is_empty()
                    || t.recent.back().is_some_and(|r| r.0 >= front)
            });
        }
        Ok(())
    }

    /// A flow event: binds to an open or recent slice of its thread, else waits.
    fn flow(&mut self, pid: i64, tid: i64, f: Flow) {
        let th = self.threads.entry((pid, tid)).or_default();
        // Best candidate: (start, where) with where = None for an open B (index) / Some(seq).
        let mut best: Option<(i64, std::result::Result<usize, u64>)> = None;
        if f.enclosing {
            if let Some((i, o)) = th
                .open
                .iter()
                .enumerate()
                .rev()
                .find(|(_, o)| o.start <= f.ts)
            {
                best = Some((o.start, Ok(i)));
            }
        }
        for &(seq, s, e) in th.recent.iter().rev() {
            if seq < self.front_seq {
                break;
            }
            let hit = if f.enclosing {
                s <= f.ts && f.ts <= e && best.is_none_or(|(bs, _)| s > bs)
            } else {
                s >= f.ts && best.is_none_or(|(bs, _)| s < bs)
            };
            if hit {
                best = Some((s, Err(seq)));
            }
        }
        let target = match best {
            Some((_, Ok(i))) => th.open.get_mut(i),
            Some((_, Err(seq))) => usize::try_from(seq - self.front_seq)
                .ok()
                .and_then(|k| self.window.get_mut(k)),
            None => None,
        };
        match target {
            Some(row) => {
                if !row.flows.contains(&f.id) {
                    row.flows.push(f.id);
                }
                self.rep.flows_bound += 1;
            }
            None => {
                th.pending.push_back(f);
                self.pending_total += 1;
                if th.pending.len() > MAX_PENDING_FLOWS {
                    th.pending.pop_front();
                    self.pending_total -= 1;
                    self.rep.flows_unbound += 1;
                }
                self.held();
            }
        }
    }

    fn emit(&mut self, mut r: Row) -> Result<()> {
        if let Some(p) = self.pnames.get(&r.pid) {
            r.extra
                .insert("process_name".into(), Value::String(p.clone()));
        }
        if let Some(t) = self.tnames.get(&(r.pid, r.tid)) {
            r.extra
                .insert("thread_name".into(), Value::String(t.clone()));
        }
        let cols = self.cols;
        let b = &mut self.em.b;
        let (s, e) = (
            r.start.saturating_add(self.base),
            r.end.saturating_add(self.base),
        );
        b.i64(cols[0], Some(r.id));
        b.str(cols[1], Some(&r.name));
        b.i64(cols[2], Some(s));
        b.i64(cols[3], Some(e));
        b.i64(cols[4], Some(e.saturating_sub(s)));
        b.str(cols[5], Some("framework"));
        b.str(cols[6], Some(self.instance_id));
        b.i64(cols[7], Some(r.pid));
        b.i64(cols[8], Some(r.tid));
        if !r.flows.is_empty() {
            let f: Vec<&str> = r.flows.iter().map(String::as_str).collect();
            b.list_str(cols[9], &f);
        }
        if !r.extra.is_empty() {
            b.str(cols[10], Some(&Value::Object(r.extra).to_string()));
        }
        self.em.end_row()
    }

    /// Closes what is still open (`B` without `E` → zero-length rows, in id order), emits the
    /// window and the batch rest.
    fn finish(mut self) -> Result<KinetoReport> {
        let mut open: Vec<Row> = Vec::new();
        let mut unbound = 0u64;
        for t in self.threads.values_mut() {
            open.append(&mut t.open);
            unbound += t.pending.len() as u64;
            t.pending.clear();
        }
        self.rep.flows_unbound += unbound;
        self.pending_total = 0;
        self.open_total = 0;
        open.sort_by_key(|r| r.id);
        self.rep.unmatched_begin += open.len() as u64;
        for mut r in open {
            r.end = r.start;
            self.complete(r)?;
        }
        while let Some(r) = self.window.pop_front() {
            self.front_seq += 1;
            self.emit(r)?;
        }
        let mut rep = std::mem::take(&mut self.rep);
        rep.rows = self.em.finish()?;
        rep.process_names = self.pnames.into_iter().collect();
        rep.thread_names = self
            .tnames
            .into_iter()
            .map(|((p, t), n)| (format!("{p}:{t}"), n))
            .collect();
        if rep.skipped > 10 {
            rep.problems.push(Problem::new(
                Severity::Warning,
                "ERROR_PROCESS_INCOMPLETE",
                Some(self.file),
                format!(
                    "{}: {} events could not be parsed (first 10 listed)",
                    self.file, rep.skipped
                ),
            ));
        }
        Ok(rep)
    }

    fn handle(&mut self, (raw, off): (Vec<u8>, u64)) -> Result<()> {
        let file = self.file;
        let rep = &mut self.rep;
        // Strict JSON first (the common case); sanitise only what fails.
        let parsed = match serde_json::from_slice::<Value>(&raw) {
            Ok(v) => {
                let (ts, dur) = raw_ts_dur(&raw);
                Ok((v, ts, dur))
            }
            Err(_) => {
                rep.sanitised += 1;
                let (text, ts, dur) = sanitise(&raw);
                serde_json::from_str::<Value>(&text).map(|v| (v, ts, dur))
            }
        };
        let (mut m, ts_raw, dur_raw) = match parsed {
            Ok((Value::Object(m), ts, dur)) => (m, ts, dur),
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
                return Ok(());
            }
        };
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
        let known = rep.phases.len() < 64 || rep.phases.contains_key(ph.as_str());
        if known {
            *rep.phases.entry(ph.clone()).or_default() += 1;
        }
        if ph == "M" {
            let arg = m
                .get("args")
                .and_then(|a| a.get("name"))
                .and_then(Value::as_str)
                .map(str::to_string);
            if let Some(a) = arg {
                match name.as_str() {
                    "process_name" if self.pnames.len() < MAX_NAMES => {
                        self.pnames.insert(pid, a);
                    }
                    "thread_name" if self.tnames.len() < MAX_NAMES => {
                        self.tnames.insert((pid, tid), a);
                    }
                    _ => {}
                }
            }
            return Ok(());
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
                self.flow(
                    pid,
                    tid,
                    Flow {
                        ts,
                        id: format!("{cat}:{id}"),
                        enclosing,
                    },
                );
            }
            return Ok(());
        }
        let Some(ts) = ts else {
            rep.skipped += 1;
            return Ok(());
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
        if ph == "E" {
            let th = self.threads.entry((pid, tid)).or_default();
            match th.open.pop() {
                Some(mut r) => {
                    self.open_total -= 1;
                    r.end = ts.max(r.start);
                    for (k, v) in extra {
                        r.extra.insert(k, v);
                    }
                    self.complete(r)?;
                }
                None => self.rep.unmatched_end += 1,
            }
            return Ok(());
        }
        let dur = if ph == "X" {
            value_ns(dur_v.as_ref(), dur_raw.as_deref()).unwrap_or(0)
        } else {
            0
        };
        if !matches!(ph.as_str(), "X" | "B" | "i" | "I" | "C") {
            extra.insert("ph".into(), Value::String(ph.clone()));
        }
        let row = Row {
            id: self.next_id,
            name,
            start: ts,
            end: ts.saturating_add(dur.max(0)),
            pid,
            tid,
            extra,
            flows: Vec::new(),
        };
        self.next_id = self.next_id.saturating_add(1);
        if ph == "B" {
            if self.open_total >= MAX_OPEN_TOTAL {
                self.rep.unmatched_begin += 1;
                return self.complete(row);
            }
            let th = self.threads.entry((pid, tid)).or_default();
            th.open.push(row);
            self.open_total += 1;
            if th.open.len() > MAX_OPEN {
                // Too deep: the outermost begin will not be matched sensibly any more.
                let mut old = th.open.remove(0);
                self.open_total -= 1;
                self.rep.unmatched_begin += 1;
                old.end = old.start;
                self.complete(old)?;
            }
            self.held();
            return Ok(());
        }
        self.complete(row)
    }
}

/// Raw number text of the top-level `ts` and `dur` keys of one event object (strict JSON), for
/// exact µs → ns.
fn raw_ts_dur(raw: &[u8]) -> (Option<String>, Option<String>) {
    let (mut ts, mut dur) = (None, None);
    let mut depth = 0i32;
    let mut i = 0usize;
    let mut key_start = None;
    let mut last_key: &[u8] = b"";
    while let Some(&c) = raw.get(i) {
        match c {
            b'"' => {
                // Skip the string; remember it as a key candidate at depth 1.
                let s = i + 1;
                i += 1;
                while let Some(&d) = raw.get(i) {
                    if d == b'\\' {
                        i += 2;
                        continue;
                    }
                    if d == b'"' {
                        break;
                    }
                    i += 1;
                }
                if depth == 1 {
                    key_start = Some((s, i.min(raw.len())));
                }
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth -= 1,
            b':' if depth == 1 => {
                last_key = key_start.and_then(|(a, b)| raw.get(a..b)).unwrap_or(b"");
                if last_key == b"ts" || last_key == b"dur" {
                    let mut j = i + 1;
                    while raw.get(j).is_some_and(|b| b.is_ascii_whitespace()) {
                        j += 1;
                    }
                    let s = j;
                    while raw.get(j).is_some_and(|b| {
                        b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E')
                    }) {
                        j += 1;
                    }
                    if j > s {
                        let t = raw
                            .get(s..j)
                            .map(|b| String::from_utf8_lossy(b).into_owned());
                        if last_key == b"ts" {
                            ts = t;
                        } else {
                            dur = t;
                        }
                    }
                    if ts.is_some() && dur.is_some() {
                        break;
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    let _ = last_key;
    (ts, dur)
}
