//! Streaming, lenient reader of Kineto / `torch.profiler` Chrome traces (`trace.json`,
//! spec/framework-inputs.md §2) into `SystemProfileEvents` rows with `trace_event_source` =
//! `framework`.
//!
//! Memory stays bounded whatever the file size (framework-inputs.md §2.5: one LLM step can write
//! more than 1 GB):
//! - the input is read in 1 MiB pieces and scanned byte by byte with a small state machine
//!   (string / escape / nesting state); only one event object at a time is buffered;
//! - each event is parsed on its own, typed and borrowed (no `serde_json::Value` per event): the
//!   structural keys (`ph`, `name`, `ts`, `dur`, `pid`, `tid`, `args`) picked out, every other
//!   member and each `args` member kept as raw JSON text for the extras column, `ts` / `dur`
//!   converted from their number text exactly, names interned. Strict JSON first, and when that
//!   fails the object is sanitised (raw control characters escaped, invalid escapes kept as a
//!   literal backslash, invalid UTF-8 → U+FFFD, lone surrogates → U+FFFD) and parsed again; an
//!   unparsable event is skipped and counted;
//! - rows leave in 64 Ki-row batches through a [`TableBuilder`]. A finished row is held back in a
//!   window of [`WINDOW`] rows so flow events (`s`/`t`/`f`) written after their slice can still
//!   bind to it; `B` rows wait on a per-thread stack (at most [`MAX_OPEN`] deep, [`MAX_OPEN_TOTAL`]
//!   over all threads) until their `E`; a flow that finds no slice waits in a per-thread queue of at
//!   most [`MAX_PENDING_FLOWS`] for the next slice of its thread.
//! - `baseTimeNanoseconds` normally precedes `traceEvents` (Kineto's write order). When it follows
//!   them, [`find_base`] finds it in a first, scan-only pass ([`read_trace_bytes`] and
//!   `system::process` do that) so every row is emitted once, already on the epoch clock.
//!
//! End of input inside the event array ends the array (missing `]`; the warning names the start
//! of the event cut short). Inside an event each structural byte is checked against the byte
//! before it ([`structure_ok`]): a bit flip that would put the string / nesting state out of step
//! (and turn the rest of the file into one unclosed "event") stops the scan with an error at the
//! start of the damage, everything before the damaged event kept.

use std::borrow::Cow;
use std::collections::{BTreeMap, VecDeque};
use std::io::Read;
use std::rc::Rc;

use rustc_hash::{FxHashMap, FxHashSet};
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::Value;

use super::ev;
use crate::error::{Code, Error, Problem, Result};
use crate::tables::{explorer, TableBuilder, TableSink};

/// Bytes read from the input per call ([`crate::source::STREAM_READ`]).
const READ_CHUNK: usize = crate::source::STREAM_READ;
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

/// Distinct event names interned (shared by their rows); rarer names beyond that are not kept.
const MAX_INTERNED: usize = 65_536;

/// Extras buffers kept for reuse, and the largest buffer capacity kept (bytes).
const POOL: usize = 256;
/// See [`POOL`].
const POOL_BYTES: usize = 4096;

/// First `SystemProfileEvents.id` of framework rows (2^62).
pub const FRAMEWORK_ID_BASE: i64 = 1 << 62;

/// [`KinetoReport::categories`]' key for the rows past [`MAX_CATEGORIES`] distinct values.
const OTHER_CATEGORIES: &str = "(other categories)";

/// Distinct `cat` values counted one by one in [`KinetoReport::categories`] (the report stays
/// small whatever a file holds; real traces have about ten).
pub const MAX_CATEGORIES: usize = 256;

/// What [`read_trace`] found.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct KinetoReport {
    /// Bytes scanned (decompressed).
    pub bytes: u64,
    /// Event objects seen in the event array.
    pub objects: u64,
    /// Objects skipped: not parsable even after sanitising, or a slice, instant or counter
    /// without a usable `ts` (those are also in `bad_ts`).
    pub skipped: u64,
    /// Events not kept because their `ts` is missing or not a time (not a number, or out of
    /// range: `1e400`, beyond ±2⁶³ ns), flow events included: one `ERROR_PROCESS_INCOMPLETE`
    /// warning with the count and the offset of the first.
    pub bad_ts: u64,
    /// Events kept with a time that cannot be right: a negative `ts`, a negative or unreadable
    /// `dur` (the row is zero-length), an `E` before its `B` (likewise): one `VALUE_OUT_OF_RANGE`
    /// warning with the count and the offset of the first.
    pub odd_times: u64,
    /// Objects that needed sanitising (dirty JSON) before they parsed.
    pub sanitised: u64,
    /// `SystemProfileEvents` rows written.
    pub rows: u64,
    /// Objects per phase letter.
    pub phases: BTreeMap<String, u64>,
    /// Rows per `cat` value (the Kineto event kinds: `cpu_op`, `kernel`, …), at most
    /// [`MAX_CATEGORIES`] of them (the rest under `(other categories)`); rows without a `cat`
    /// under `(no category)`. Sums to `rows`.
    pub categories: BTreeMap<String, u64>,
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
    /// Earliest row start and latest row end, Unix ns (the page's System span; not in a table).
    pub first_ts_ns: Option<i64>,
    /// See `first_ts_ns`.
    pub last_ts_ns: Option<i64>,
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
    name: Rc<str>,
    start: i64,
    end: i64,
    pid: i64,
    tid: i64,
    extra: Extras,
    flows: Vec<String>,
}

/// Attributes of a row without a column of their own, in input order (a later key wins, as in a
/// JSON object): keys unescaped, values as canonical JSON text, all in one buffer.
#[derive(Default)]
struct Extras {
    buf: String,
    /// `(key start, key end, value end)` into `buf`; the value starts at the key end.
    ents: Vec<(u32, u32, u32)>,
    /// Some key may need JSON escaping (one written with escapes in the input); the others hold
    /// no `"`, `\` or control character and are quoted as they are.
    escaped_keys: bool,
}

impl Extras {
    fn is_empty(&self) -> bool {
        self.ents.is_empty()
    }

    fn push_key(&mut self, key: &str) -> u32 {
        let k0 = self.buf.len() as u32;
        self.buf.push_str(key);
        k0
    }

    fn end_value(&mut self, k0: u32, k1: u32) {
        self.ents.push((k0, k1, self.buf.len() as u32));
    }

    /// `key` → `raw` (any JSON value text, canonicalised as `serde_json::Value` would print it).
    /// `escaped`: `key` was written with escapes in the input (a key borrowed from the input,
    /// `Cow::Borrowed`, had none there, so needs none in the output).
    fn push_raw(&mut self, key: &str, escaped: bool, raw: &str) {
        self.escaped_keys |= escaped;
        let k0 = self.push_key(key);
        let k1 = self.buf.len() as u32;
        canon(raw, &mut self.buf);
        self.end_value(k0, k1);
    }

    /// `key` (one of ours: no escaping needed) → the JSON string of `text`.
    fn push_str(&mut self, key: &'static str, text: &str) {
        let k0 = self.push_key(key);
        let k1 = self.buf.len() as u32;
        push_json_str(&mut self.buf, text);
        self.end_value(k0, k1);
    }

    /// Appends `other`'s entries after this one's (so they win on equal keys).
    fn append(&mut self, other: &Extras) {
        let d = self.buf.len() as u32;
        self.escaped_keys |= other.escaped_keys;
        self.buf.push_str(&other.buf);
        self.ents
            .extend(other.ents.iter().map(|&(a, b, c)| (a + d, b + d, c + d)));
    }

    fn get(&self, (a, b, c): (u32, u32, u32)) -> (&str, &str) {
        let s = &self.buf;
        (
            s.get(a as usize..b as usize).unwrap_or(""),
            s.get(b as usize..c as usize).unwrap_or(""),
        )
    }
}

/// Writes `s` as a JSON string (serde_json's escaping; the common case copied as is).
fn push_json_str(out: &mut String, s: &str) {
    if s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        out.push_str(&serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into()));
    } else {
        out.push('"');
        out.push_str(s);
        out.push('"');
    }
}

/// A decimal integer text serde_json keeps as an integer and prints back unchanged.
fn is_plain_int(t: &[u8]) -> bool {
    let d = t.strip_prefix(b"-").unwrap_or(t);
    match d {
        [b'0'] => t.len() == 1,
        [b'1'..=b'9', rest @ ..] => rest.len() < 18 && rest.iter().all(u8::is_ascii_digit),
        _ => false,
    }
}

/// Appends the JSON value text `raw` (strict JSON) as `serde_json::Value::to_string` prints it:
/// strings without escapes, plain integers, literals and arrays of those are copied (whitespace
/// dropped); anything else (floats, objects, escapes) goes through `Value` once.
fn canon(raw: &str, out: &mut String) {
    let mark = out.len();
    let b = raw.as_bytes();
    // The common values whole: a string without escapes, a plain integer.
    let plain_str = b.len() >= 2
        && b.first() == Some(&b'"')
        && b.last() == Some(&b'"')
        && !raw.get(1..raw.len() - 1).is_none_or(|t| t.contains('\\'));
    if plain_str || is_plain_int(b) {
        out.push_str(raw);
        return;
    }
    let mut i = 0;
    let mut plain = true;
    while let Some(&c) = b.get(i) {
        match c {
            b'"' => {
                let s = i;
                i += 1;
                while b.get(i).is_some_and(|&d| d != b'"' && d != b'\\') {
                    i += 1;
                }
                if b.get(i) != Some(&b'"') {
                    plain = false;
                    break;
                }
                out.push_str(raw.get(s..=i).unwrap_or(""));
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let s = i;
                while b.get(i).is_some_and(|d| {
                    d.is_ascii_digit() || matches!(d, b'-' | b'+' | b'.' | b'e' | b'E')
                }) {
                    i += 1;
                }
                let t = b.get(s..i).unwrap_or(b"");
                if !is_plain_int(t) {
                    plain = false;
                    break;
                }
                out.push_str(raw.get(s..i).unwrap_or(""));
            }
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            b'{' => {
                plain = false;
                break;
            }
            _ => {
                // `[`, `]`, `,` and the letters of true / false / null.
                out.push(c as char);
                i += 1;
            }
        }
    }
    if plain {
        return;
    }
    out.truncate(mark);
    match serde_json::from_str::<Value>(raw) {
        Ok(v) => out.push_str(&v.to_string()),
        // Valid JSON serde_json cannot hold (a number out of range): kept as written.
        Err(_) => out.push_str(raw.trim()),
    }
}

/// `\uD800`–`\uDFFF` escapes occur in `t`: serde_json reads past lone ones in raw values but
/// refuses them in strings it decodes, so such an event is checked (and sanitised) as a whole.
fn has_surrogate_escape(t: &str) -> bool {
    t.contains("\\u")
        && t.as_bytes().windows(4).any(|w| {
            matches!(
                w,
                [b'\\', b'u', b'd' | b'D', b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F']
            )
        })
}

/// The text of a JSON string value (`None` when `raw`, a value's JSON text, is not a string).
fn str_of(raw: &str) -> Option<Cow<'_, str>> {
    let t = raw;
    let inner = t.strip_prefix('"')?.strip_suffix('"')?;
    if inner.contains('\\') {
        serde_json::from_str::<String>(t).ok().map(Cow::Owned)
    } else {
        Some(Cow::Borrowed(inner))
    }
}

/// A JSON string's text, or any other value's canonical JSON text (names and flow ids).
fn text_of(raw: &str) -> Cow<'_, str> {
    str_of(raw).unwrap_or_else(|| {
        let mut s = String::new();
        canon(raw, &mut s);
        Cow::Owned(s)
    })
}

/// `text` cut to 40 characters (a value quoted in a problem message).
fn clip(text: &str) -> String {
    match text.char_indices().nth(40) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

/// `ts` / `dur` in µs (a number, or a string holding one) → ns: exact decimal conversion, else f64.
fn value_ns(raw: Option<&str>) -> Option<i64> {
    let t = raw?;
    if let Some(s) = str_of(t) {
        return us_text_to_ns(&s);
    }
    if let Some(v) = us_text_to_ns(t) {
        return Some(v);
    }
    let f = serde_json::from_str::<f64>(t).ok()? * 1000.0;
    (f.is_finite() && f.abs() < 9.2e18).then(|| f.round() as i64)
}

/// pid / tid: numbers, or strings (hashed to a non-negative int64; the text goes to extras under
/// `key`).
fn id_of(v: Option<&str>, key: &'static str, extra: &mut Extras) -> i64 {
    let Some(t) = v else { return 0 };
    if let Some(s) = str_of(t) {
        return match s.trim().parse::<i64>() {
            Ok(n) => n,
            Err(_) => {
                extra.push_str(key, &s);
                // FNV-1a, 63 bits: stable across runs and platforms.
                let mut h: u64 = 0xcbf2_9ce4_8422_2325;
                for b in s.bytes() {
                    h ^= u64::from(b);
                    h = h.wrapping_mul(0x0100_0000_01b3);
                }
                (h >> 1) as i64
            }
        };
    }
    if let Ok(n) = t.parse::<i64>() {
        return n;
    }
    match serde_json::from_str::<Value>(t) {
        Ok(Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .unwrap_or(0),
        _ => 0,
    }
}

/// An object key, borrowed from the input unless it holds escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(
                self,
                v: &'de str,
            ) -> std::result::Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> std::result::Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// A JSON object's members in input order, values as their JSON text (`args`, and the rest of an
/// event).
type Members<'a> = Vec<(Cow<'a, str>, &'a str)>;

/// `args`: the members of an object; any other value is read past and yields none (as before:
/// only object `args` reach the extras).
struct Args<'a>(Members<'a>);

/// One trace event, typed and borrowed from the event's bytes: the structural keys picked out,
/// every other member kept as raw JSON text. Duplicate keys: the last wins (as in a JSON object).
#[derive(Default)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct Ev<'a> {
    ph: Option<&'a str>,
    name: Option<&'a str>,
    ts: Option<&'a str>,
    dur: Option<&'a str>,
    pid: Option<&'a str>,
    tid: Option<&'a str>,
    /// The members of `args` when it is an object (empty otherwise).
    args: Members<'a>,
    rest: Members<'a>,
}

impl<'a> Ev<'a> {
    /// Member `k` (not `args`) with value text `v`: a structural slot, else the rest.
    fn put(&mut self, k: Cow<'a, str>, v: &'a str) {
        let slot = match &*k {
            "ph" => &mut self.ph,
            "name" => &mut self.name,
            "ts" => &mut self.ts,
            "dur" => &mut self.dur,
            "pid" => &mut self.pid,
            "tid" => &mut self.tid,
            _ => {
                self.rest.push((k, v));
                return;
            }
        };
        *slot = Some(v);
    }
}

/// An empty member list reusing `v`'s allocation (for the next event's borrow).
fn recycle<'b>(mut v: Members<'_>) -> Members<'b> {
    v.clear();
    // In-place collection: the allocation is kept (the element layout is the same).
    v.into_iter()
        .filter(|_| false)
        .map(|_| (Cow::Borrowed(""), ""))
        .collect()
}

/// Member of an event read by [`fast_scan`]: `[key start, key end, value start, value end]`,
/// offsets into the object's bytes (the key without its quotes, the value's whole JSON text).
type Span = [u32; 4];

/// Deepest nesting [`fast_value`] follows (deeper values go the general way).
const FAST_DEPTH: u32 = 32;

/// The index of the first byte at or after `i` that is not JSON whitespace.
fn skip_ws(s: &[u8], mut i: usize) -> usize {
    while s.get(i).is_some_and(|&c| is_ws(c)) {
        i += 1;
    }
    i
}

/// A string at `s[i] == '"'` without backslash or control character: the index past its
/// closing quote.
fn fast_str(s: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    // Eight bytes at a time to the first `"`, `\` or control byte (SWAR, as [`skip_to`]; the
    // lowest flagged byte is exact for each test, so for their union too).
    while let Some(c) = s.get(j..j + 8) {
        let mut a = [0u8; 8];
        a.copy_from_slice(c);
        let w = u64::from_le_bytes(a);
        let ctl = w.wrapping_sub(LO * 0x20) & !w & (LO << 7);
        let m = bytes_eq(w, b'"') | bytes_eq(w, b'\\') | ctl;
        if m != 0 {
            j += (m.trailing_zeros() / 8) as usize;
            return (s.get(j) == Some(&b'"')).then_some(j + 1);
        }
        j += 8;
    }
    loop {
        match *s.get(j)? {
            b'"' => return Some(j + 1),
            b'\\' | 0..=0x1f => return None,
            _ => j += 1,
        }
    }
}

/// One or more ASCII digits from `i`: the index past them.
fn digits(s: &[u8], i: usize) -> Option<usize> {
    let mut j = i;
    while s.get(j).is_some_and(u8::is_ascii_digit) {
        j += 1;
    }
    (j > i).then_some(j)
}

/// A JSON number at `i` (RFC 8259 grammar, as serde_json checks it): the index past it.
fn fast_num(s: &[u8], mut i: usize) -> Option<usize> {
    if s.get(i) == Some(&b'-') {
        i += 1;
    }
    i = match *s.get(i)? {
        b'0' if s.get(i + 1).is_some_and(u8::is_ascii_digit) => return None,
        b'0' => i + 1,
        b'1'..=b'9' => digits(s, i)?,
        _ => return None,
    };
    if s.get(i) == Some(&b'.') {
        i = digits(s, i + 1)?;
    }
    if matches!(s.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(s.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        i = digits(s, i)?;
    }
    Some(i)
}

/// Any JSON value at `s[i]` (no whitespace before it) in [`fast_scan`]'s subset, nested at
/// `depth`: the index past it.
fn fast_value(s: &[u8], i: usize, depth: u32) -> Option<usize> {
    let lit = |w: &[u8]| (s.get(i..i + w.len())? == w).then_some(i + w.len());
    match *s.get(i)? {
        b'"' => fast_str(s, i),
        b'-' | b'0'..=b'9' => fast_num(s, i),
        b't' => lit(b"true"),
        b'f' => lit(b"false"),
        b'n' => lit(b"null"),
        b'[' if depth < FAST_DEPTH => {
            let mut j = skip_ws(s, i + 1);
            if s.get(j) == Some(&b']') {
                return Some(j + 1);
            }
            loop {
                j = skip_ws(s, fast_value(s, j, depth + 1)?);
                match *s.get(j)? {
                    b',' => j = skip_ws(s, j + 1),
                    b']' => return Some(j + 1),
                    _ => return None,
                }
            }
        }
        b'{' if depth < FAST_DEPTH => fast_members(s, i, depth, &mut |_| {}),
        _ => None,
    }
}

/// The object at `s[i] == '{'`, member by member: `value(key start, key end, value start)`
/// reads each value and returns the index past it; returns the index past the `}`.
fn fast_object(
    s: &[u8],
    i: usize,
    mut value: impl FnMut(usize, usize, usize) -> Option<usize>,
) -> Option<usize> {
    let mut j = skip_ws(s, i + 1);
    if s.get(j) == Some(&b'}') {
        return Some(j + 1);
    }
    loop {
        if s.get(j) != Some(&b'"') {
            return None;
        }
        let k0 = j + 1;
        j = fast_str(s, j)?;
        let k1 = j - 1;
        j = skip_ws(s, j);
        if s.get(j) != Some(&b':') {
            return None;
        }
        j = value(k0, k1, skip_ws(s, j + 1))?;
        j = skip_ws(s, j);
        match *s.get(j)? {
            b',' => j = skip_ws(s, j + 1),
            b'}' => return Some(j + 1),
            _ => return None,
        }
    }
}

/// The object at `s[i] == '{'`: each member's [`Span`] to `out`, the index past the `}`.
fn fast_members(s: &[u8], i: usize, depth: u32, out: &mut dyn FnMut(Span)) -> Option<usize> {
    let u = |x: usize| u32::try_from(x).ok();
    fast_object(s, i, |k0, k1, v0| {
        let j = fast_value(s, v0, depth + 1)?;
        out([u(k0)?, u(k1)?, u(v0)?, u(j)?]);
        Some(j)
    })
}

/// Reads the common event object at `s[0] == '{'` in one pass: strict JSON (as serde_json
/// accepts it) with no backslash or control character in any string, `args` (when present) an
/// object, nesting below [`FAST_DEPTH`], ending inside `s`. The members other than `args` go to
/// `top`, those of the last `args` to `args`. Returns the object's length; `None` for anything
/// else (the general path, serde_json and sanitising, reads it then), so both paths see the
/// same events the same way.
fn fast_scan(s: &[u8], top: &mut Vec<Span>, args: &mut Vec<Span>) -> Option<usize> {
    top.clear();
    args.clear();
    if s.first() != Some(&b'{') {
        return None;
    }
    let u = |x: usize| u32::try_from(x).ok();
    fast_object(s, 0, |k0, k1, v0| {
        if s.get(k0..k1) == Some(b"args") {
            if s.get(v0) != Some(&b'{') {
                return None;
            }
            args.clear();
            fast_members(s, v0, 1, &mut |sp| args.push(sp))
        } else {
            let j = fast_value(s, v0, 1)?;
            top.push([u(k0)?, u(k1)?, u(v0)?, u(j)?]);
            Some(j)
        }
    })
}

/// Visits a JSON object member by member (`Ev` and `Args` share it).
struct ObjVisitor<T>(std::marker::PhantomData<T>);

impl<'de> Visitor<'de> for ObjVisitor<Ev<'de>> {
    type Value = Ev<'de>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a trace event object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> std::result::Result<Ev<'de>, A::Error> {
        let mut ev = Ev {
            rest: Vec::with_capacity(4),
            ..Ev::default()
        };
        while let Some(Key(k)) = m.next_key()? {
            if k == "args" {
                ev.args = m.next_value::<Args>()?.0;
                continue;
            }
            ev.put(k, m.next_value::<&'de RawValue>()?.get());
        }
        Ok(ev)
    }
}

impl<'de> Visitor<'de> for ObjVisitor<Args<'de>> {
    type Value = Args<'de>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> std::result::Result<Args<'de>, A::Error> {
        let mut v = Vec::with_capacity(8);
        while let Some(Key(k)) = m.next_key()? {
            v.push((k, m.next_value::<&'de RawValue>()?.get()));
        }
        Ok(Args(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> std::result::Result<Args<'de>, A::Error> {
        while s.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Args(Vec::new()))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> std::result::Result<Args<'de>, E> {
        Ok(Args(Vec::new()))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> std::result::Result<Args<'de>, E> {
        Ok(Args(Vec::new()))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> std::result::Result<Args<'de>, E> {
        Ok(Args(Vec::new()))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> std::result::Result<Args<'de>, E> {
        Ok(Args(Vec::new()))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> std::result::Result<Args<'de>, E> {
        Ok(Args(Vec::new()))
    }
    fn visit_unit<E: de::Error>(self) -> std::result::Result<Args<'de>, E> {
        Ok(Args(Vec::new()))
    }
}

impl<'de> Deserialize<'de> for Ev<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_map(ObjVisitor::<Ev<'de>>(std::marker::PhantomData))
    }
}

impl<'de> Deserialize<'de> for Args<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(ObjVisitor::<Args<'de>>(std::marker::PhantomData))
    }
}

/// The last member named `key`.
fn member<'a>(m: &Members<'a>, key: &str) -> Option<&'a str> {
    m.iter().rev().find(|(k, _)| k == key).map(|(_, v)| *v)
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
    plain_us_to_ns(t.as_bytes()).or_else(|| us_text_to_ns_general(t))
}

/// [`us_text_to_ns`] of the common text, `-`? then at most 15 digits, then optionally `.` and
/// digits, in one pass (no overflow possible); `None` for anything else, which the general
/// parser then reads (so a `None` here is not an answer).
fn plain_us_to_ns(b: &[u8]) -> Option<i64> {
    let (neg, d) = match b.split_first() {
        Some((b'-', r)) => (true, r),
        _ => (false, b),
    };
    let (mut v, mut i) = (0i64, 0usize);
    while let Some(&c) = d.get(i).filter(|c| c.is_ascii_digit()) {
        v = v * 10 + i64::from(c - b'0');
        i += 1;
    }
    if i > 15 {
        return None;
    }
    let mut f3 = 0i64;
    match d.get(i) {
        None if i > 0 => {}
        Some(b'.') => {
            let frac = d.get(i + 1..)?;
            if (i == 0 && frac.is_empty()) || !frac.iter().all(u8::is_ascii_digit) {
                return None;
            }
            for k in 0..3 {
                f3 = f3 * 10 + frac.get(k).map_or(0, |c| i64::from(c - b'0'));
            }
            // Rounded half up on the fourth decimal, as the general parser does.
            f3 += i64::from(frac.get(3).is_some_and(|&c| c >= b'5'));
        }
        _ => return None,
    }
    let v = v * 1000 + f3;
    Some(if neg { -v } else { v })
}

/// [`us_text_to_ns`] of any text (whitespace around it, exponents, long integer parts).
fn us_text_to_ns_general(t: &str) -> Option<i64> {
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

/// Sanitises one event object's bytes into strict JSON (the number texts are left as they are, so
/// `ts` / `dur` still convert exactly).
fn sanitise(raw: &[u8]) -> String {
    let s = String::from_utf8_lossy(raw);
    let mut out = String::with_capacity(s.len() + 16);
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    let mut in_str = false;
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
                        }
                    }
                }
                c if (c as u32) < 0x20 => {
                    out.push_str(&format!("\\u{:04x}", c as u32));
                }
                c => out.push(c),
            }
        } else {
            match c {
                '"' => {
                    in_str = true;
                    out.push(c);
                }
                c => out.push(c),
            }
        }
        i += 1;
    }
    out
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
    /// An event object is being captured: the depth it started at and its offset.
    cap: Option<(i32, u64)>,
    /// Bytes of the captured object from earlier read pieces (reused between events).
    cap_buf: Vec<u8>,
    cap_too_big: bool,
    /// Offset of a byte between events that JSON does not allow there (not whitespace, `,`,
    /// `{` or `]`): the scan stops at it.
    /// With `form` still 0, the byte stands before the top-level value: the file is no JSON.
    garbage: Option<u64>,
    /// Last byte outside strings that is not whitespace, before the current read piece (for
    /// [`check_structure`] when its look-back reaches the piece start).
    prev: u8,
    /// Bit `k` set: the container opened from depth `k` is an array (depths below 64).
    arrays: u64,
    /// Inside an event the bytes stopped fitting JSON's grammar (a flipped `"`, bracket or
    /// separator puts the string / nesting state out of step, and the rest of the file would be
    /// read wrongly): `(offset of the damage, offset of the event)`. The scan stops there.
    desync: Option<(u64, u64)>,
}

/// Records whether the container opened from `depth` is an array.
fn set_kind(st: &mut Scan, depth: i32, array: bool) {
    if let Ok(k @ 0..=63) = u32::try_from(depth) {
        let bit = 1u64 << k;
        st.arrays = if array {
            st.arrays | bit
        } else {
            st.arrays & !bit
        };
    }
}

/// The container open at `depth` is an object / array (`None` when too deep to know).
fn open_is_array(st: &Scan, depth: i32) -> Option<bool> {
    match u32::try_from(depth - 1) {
        Ok(k @ 0..=63) => Some(st.arrays & (1u64 << k) != 0),
        _ => None,
    }
}

/// JSON whitespace.
fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t')
}

/// Where the top-level value of a trace starts in `buf`: the offset of its first byte that is
/// neither JSON whitespace nor, when `buf` begins the file (`file_start`), a UTF-8 byte-order
/// mark, and whether that byte opens a value (`{` or `[`); `None` when `buf` holds nothing else.
/// The reader ([`feed`]) and the inventory's check of a file named as a trace judge by it alike.
pub fn value_start(buf: &[u8], file_start: bool) -> Option<(usize, bool)> {
    let from = if file_start && buf.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    let at = from + buf.get(from..)?.iter().position(|&b| !is_ws(b))?;
    Some((at, matches!(buf.get(at), Some(b'{' | b'['))))
}

/// Whether structural byte `b` (outside strings, inside an event, at nesting `depth` before it)
/// may follow `p`, the last non-whitespace byte outside strings before it. Catches a scanner out
/// of step with the text (framework-inputs.md §2.5: the scan must not read a damaged file to its
/// end as one event): a string opening after a bare word, `{`/`[` after `,` in an object, a
/// closer of the wrong kind. Lenient where events are merely dirty: number / literal text is
/// not checked (a bad event is skipped by the parser), `NaN` / `Infinity` and a trailing `,`
/// before a closer are accepted.
fn structure_ok(st: &Scan, b: u8, p: u8, depth: i32) -> bool {
    let arr = || open_is_array(st, depth);
    let value_end = |p: u8| {
        matches!(
            p,
            b'"' | b'}' | b']' | b'0'..=b'9' | b'e' | b'l' | b'y' | b'N' | b','
        )
    };
    match b {
        b'"' => matches!(p, b'{' | b'[' | b',' | b':'),
        b'{' | b'[' => match p {
            b'[' | b':' => true,
            b',' => arr() != Some(false),
            _ => false,
        },
        b'}' => (p == b'{' || value_end(p)) && arr() != Some(true),
        _ => (p == b'[' || value_end(p)) && arr() != Some(false),
    }
}

/// Checks structural byte `buf[i]` against the byte before it ([`structure_ok`]); on a misfit
/// records [`Scan::desync`] at the start of the offending word (the `x` of `"k": x…"`), else at
/// the byte, and returns false.
fn check_structure(st: &mut Scan, buf: &[u8], i: usize, depth: i32, off: u64) -> bool {
    let b = buf.get(i).copied().unwrap_or(b' ');
    let mut k = i;
    // `p` and whether it stands in this piece (at `k`).
    let (mut p, mut here) = (st.prev, false);
    while k > 0 {
        k -= 1;
        let c = buf.get(k).copied().unwrap_or(b' ');
        if !is_ws(c) {
            (p, here) = (c, true);
            break;
        }
    }
    if structure_ok(st, b, p, depth) {
        return true;
    }
    // The damage starts at the bare word before the byte, when there is one.
    let mut at = i;
    if !matches!(p, b'"' | b'{' | b'}' | b'[' | b']' | b',' | b':') && here {
        at = k;
        while at > 0
            && buf.get(at - 1).is_some_and(|&c| {
                !is_ws(c) && !matches!(c, b'"' | b'{' | b'}' | b'[' | b']' | b',' | b':')
            })
        {
            at -= 1;
        }
    }
    let ev = st.cap.map_or(off + i as u64, |(_, o)| o);
    st.desync = Some((off + at as u64, ev));
    false
}

/// Appends `piece` to the capture buffer unless the object grows beyond [`MAX_EVENT`].
fn cap_extend(st: &mut Scan, piece: &[u8]) {
    if st.cap_too_big || st.cap_buf.len() + piece.len() > MAX_EVENT {
        st.cap_too_big = true;
        st.cap_buf = Vec::new();
    } else {
        st.cap_buf.extend_from_slice(piece);
    }
}

/// `0x01` in every byte of a word.
const LO: u64 = 0x0101_0101_0101_0101;

/// High bit set in each byte of `w` equal to `b` (exact for the lowest such byte, which is all
/// [`skip_to`] uses).
fn bytes_eq(w: u64, b: u8) -> u64 {
    let x = w ^ (LO * u64::from(b));
    x.wrapping_sub(LO) & !x & (LO << 7)
}

/// The first index from `i` of a byte that matters to the scanner: inside a string `"` or `\`;
/// outside (`structural`) `"`, `{`, `}`, `[`, `]`. Eight bytes at a time (SWAR).
fn skip_to(buf: &[u8], mut i: usize, structural: bool) -> usize {
    while let Some(c) = buf.get(i..i + 8) {
        let mut a = [0u8; 8];
        a.copy_from_slice(c);
        let w = u64::from_le_bytes(a);
        let m = if structural {
            // `{` `}` are `[` `]` with bit 5 set; no other byte maps onto them.
            let f = w & !(LO << 5);
            bytes_eq(w, b'"') | bytes_eq(f, b'[') | bytes_eq(f, b']')
        } else {
            bytes_eq(w, b'"') | bytes_eq(w, b'\\')
        };
        if m != 0 {
            return i + (m.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while buf.get(i).is_some_and(|&d| {
        if structural {
            !matches!(d, b'"' | b'{' | b'}' | b'[' | b']')
        } else {
            d != b'"' && d != b'\\'
        }
    }) {
        i += 1;
    }
    i
}

/// Inside a captured event (nesting deeper than its `{` at depth `floor`) only strings and
/// nesting matter: a tight loop over local state up to the byte that would close the event (or
/// any bracket that would reach `floor`), which [`feed`] then handles; or to the end of `buf`.
/// Returns the index reached.
fn in_event(buf: &[u8], mut i: usize, st: &mut Scan, floor: i32, off: u64) -> usize {
    let (mut depth, mut in_str) = (st.depth, st.in_str);
    loop {
        if in_str {
            i = skip_to(buf, i, false);
            match buf.get(i) {
                None => break,
                Some(b'"') => in_str = false,
                Some(_) => {
                    // A backslash: skip the escaped byte, or carry the escape to the next piece.
                    if i + 1 >= buf.len() {
                        st.esc = true;
                        i += 1;
                        break;
                    }
                    i += 1;
                }
            }
        } else {
            i = skip_to(buf, i, true);
            let Some(&b) = buf.get(i) else { break };
            if !check_structure(st, buf, i, depth, off) {
                break;
            }
            match b {
                b'"' => in_str = true,
                b'{' | b'[' => {
                    set_kind(st, depth, b == b'[');
                    depth = depth.saturating_add(1);
                }
                _ => {
                    if depth - 1 <= floor {
                        break;
                    }
                    depth -= 1;
                }
            }
        }
        i += 1;
    }
    st.depth = depth;
    st.in_str = in_str;
    i
}

/// Where [`feed`] sends the event objects it finds.
trait Events {
    /// A finished event object at file offset `off` (`obj` empty when it was too big); `base` is
    /// the `baseTimeNanoseconds` text seen so far.
    fn event(&mut self, obj: &[u8], off: u64, base: Option<&str>) -> Result<()>;
    /// An event object starts at `rest[0]` (`rest` runs to the end of the read piece): read it
    /// whole when that is cheap ([`fast_scan`]), returning its length; `None` leaves it to the
    /// scanner, which later passes it to [`Events::event`].
    fn try_event(&mut self, rest: &[u8], off: u64, base: Option<&str>) -> Result<Option<usize>>;
}

/// [`find_base`]'s [`Events`]: the events are only scanned past.
struct NoEvents;

impl Events for NoEvents {
    fn event(&mut self, _: &[u8], _: u64, _: Option<&str>) -> Result<()> {
        Ok(())
    }
    fn try_event(&mut self, _: &[u8], _: u64, _: Option<&str>) -> Result<Option<usize>> {
        Ok(None)
    }
}

/// Scans one read piece starting at file offset `off`, sending every event object to `on`: an
/// object [`Events::try_event`] reads whole is skipped; any other is scanned to its end and
/// passed to [`Events::event`] (without a copy when it lies inside one piece).
///
/// Byte by byte a small state machine (string / escape / nesting); runs inside strings and
/// between structural bytes below the top level are skipped in tight loops.
///
/// Never inlined: in wasm, V8 runs a function in its baseline tier until a later call (no
/// on-stack replacement), so the hot loop must be a function entered per piece, not a loop
/// inlined into the once-called [`read_trace`].
#[inline(never)]
fn feed(st: &mut Scan, buf: &[u8], off: u64, on: &mut dyn Events) -> Result<()> {
    let n = buf.len();
    if st.form == 0 {
        // Anything but a value's start after the blanks means the file is no JSON: scanning on
        // to a later `{` or `[` would read junk as events. Checked once per piece, not per byte.
        match value_start(buf, off == 0) {
            None => return Ok(()),
            Some((at, false)) => {
                st.garbage = Some(off + at as u64);
                return Ok(());
            }
            Some((_, true)) => {}
        }
    }
    // Where the object being captured starts in this piece.
    let mut cs: usize = 0;
    let mut i = 0usize;
    loop {
        if let Some((d, _)) = st.cap {
            if !st.esc && st.depth > d {
                // Then the byte it stopped at (closing the event) goes the general way.
                i = in_event(buf, i, st, d, off);
                if st.desync.is_some() {
                    return Ok(());
                }
            }
        }
        let Some(&b) = buf.get(i) else { break };
        if st.in_str {
            if st.esc {
                st.esc = false;
            } else if b == b'\\' {
                st.esc = true;
            } else if b == b'"' {
                st.in_str = false;
            } else if st.form == 2 && st.depth == 1 {
                // The keys looked for are short: a longer one need not be kept whole.
                if st.key.len() < 64 {
                    st.key.push(b);
                }
            } else {
                i = skip_to(buf, i + 1, false);
                continue;
            }
            i += 1;
            continue;
        }
        if Some(st.depth) == st.events_depth
            && st.cap.is_none()
            && !st.events_closed
            && !matches!(b, b'{' | b']' | b'}' | b',' | b' ' | b'\n' | b'\r' | b'\t')
        {
            // Between events only separators may stand: anything else is corruption, and
            // scanning on would read the rest of the file out of step.
            st.garbage = Some(off + i as u64);
            return Ok(());
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
                    i += 1;
                    continue;
                }
                if b == b'{'
                    && Some(st.depth) == st.events_depth
                    && st.cap.is_none()
                    && !st.events_closed
                {
                    let rest = buf.get(i..).unwrap_or(&[]);
                    if let Some(n) = on.try_event(rest, off + i as u64, st.base.as_deref())? {
                        // Read whole (strict JSON, so the nesting state is as before it).
                        i += n;
                        continue;
                    }
                    st.cap = Some((st.depth, off + i as u64));
                    set_kind(st, st.depth, false);
                    st.cap_buf.clear();
                    st.cap_too_big = false;
                    cs = i;
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
                    if let Some((d, o)) = st.cap {
                        if st.depth == d {
                            st.cap = None;
                            let piece = buf.get(cs..=i).unwrap_or(&[]);
                            let base = st.base.as_deref();
                            if st.cap_buf.is_empty() && !st.cap_too_big {
                                if piece.len() > MAX_EVENT {
                                    on.event(&[], o, base)?;
                                } else {
                                    on.event(piece, o, base)?;
                                }
                            } else {
                                cap_extend(st, piece);
                                let v = if st.cap_too_big {
                                    &[][..]
                                } else {
                                    &st.cap_buf[..]
                                };
                                on.event(v, o, st.base.as_deref())?;
                                st.cap_buf.clear();
                            }
                        }
                    }
                }
                if st.depth == 1 {
                    finish_base(st);
                }
            }
            _ if st.depth == 1 => top_level_byte(st, b),
            // Between events: byte by byte, for the separator check above.
            _ if Some(st.depth) == st.events_depth && st.cap.is_none() => {}
            _ => {
                // Below the top level only strings and nesting matter.
                i = skip_to(buf, i + 1, true);
                continue;
            }
        }
        i += 1;
    }
    if st.cap.is_some() {
        let piece = buf.get(cs..n).unwrap_or(&[]);
        cap_extend(st, piece);
    }
    if st.in_str {
        // The string's closing quote will be the byte before what follows it.
        st.prev = b'"';
    } else if let Some(&p) = buf.iter().rev().find(|&&c| !is_ws(c)) {
        st.prev = p;
    }
    Ok(())
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
    let mut off = 0u64;
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        // The same scanner as the rows' pass; the events it finds are ignored.
        let piece = buf.get(..n).unwrap_or(&[]);
        if feed(&mut st, piece, off, &mut NoEvents).is_err() {
            break;
        }
        off += n as u64;
        if let Some(v) = st.base.as_deref() {
            return v.trim().parse().ok();
        }
        if st.form == 1 || st.garbage.is_some() || st.desync.is_some() {
            break;
        }
    }
    finish_base(&mut st);
    st.base.as_deref().and_then(|v| v.trim().parse().ok())
}

/// A byte of the top-level object outside strings and nesting: tracks the key just closed
/// and collects the number text of `baseTimeNanoseconds` (for [`feed`]).
fn top_level_byte(st: &mut Scan, b: u8) {
    match b {
        b':' if st.form == 2 => {
            st.last_key = std::mem::take(&mut st.key);
            if st.last_key == b"baseTimeNanoseconds" {
                st.base_num = Some(Vec::new());
            }
        }
        b',' => finish_base(st),
        _ => {
            if let Some(n) = st.base_num.as_mut() {
                if !b.is_ascii_whitespace() && n.len() < 32 {
                    n.push(b);
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
    threads: FxHashMap<(i64, i64), Thread>,
    /// Finished rows not yet emitted; `window[0]` has sequence number `front_seq`.
    window: VecDeque<Row>,
    front_seq: u64,
    open_total: usize,
    pending_total: usize,
    next_id: i64,
    pnames: FxHashMap<i64, String>,
    tnames: FxHashMap<(i64, i64), String>,
    /// Interned event names (at most [`MAX_INTERNED`]; rarer names beyond that are not kept).
    names: FxHashSet<Rc<str>>,
    /// Rows per `cat` value (see [`KinetoReport::categories`]).
    cats: FxHashMap<String, u64>,
    /// Scratch for the extras JSON of the row being emitted.
    out: String,
    /// Extras buffers of emitted rows, reused by new rows (at most [`POOL`], small ones only).
    pool: Vec<Extras>,
    /// Scratch of [`Reader::emit`]'s key sort: `(first 8 key bytes big-endian, entry)`.
    order: Vec<(u64, (u32, u32, u32))>,
    /// Counts of the one-byte phases already in `rep.phases`, by byte, not yet added to it.
    ph_aside: [Option<u64>; 256],
    /// Objects that could not be parsed (the first 10 are listed as problems).
    unparsed: u64,
    /// The first event counted in `rep.bad_ts`: its offset and what its `ts` was.
    first_bad_ts: Option<(u64, String)>,
    /// The first event counted in `rep.odd_times`: its offset and which time was wrong.
    first_odd_time: Option<(u64, String)>,
    /// Offset of the last event counted in `rep.odd_times` (each is counted once).
    last_odd_time: Option<u64>,
    /// [`fast_scan`]'s member spans (reused between events).
    top: Vec<Span>,
    /// See `top`.
    arg_spans: Vec<Span>,
    /// Allocations of the last event's `args` and other members, reused by the next.
    spare: (Members<'static>, Members<'static>),
    /// `SystemProfileEvents` rows; batches go to `sink`.
    b: TableBuilder,
    sink: &'s mut dyn TableSink,
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
    let mut r = Reader {
        file,
        instance_id,
        rep: KinetoReport::default(),
        base: 0,
        threads: FxHashMap::default(),
        window: VecDeque::new(),
        front_seq: 0,
        open_total: 0,
        pending_total: 0,
        next_id: FRAMEWORK_ID_BASE,
        pnames: FxHashMap::default(),
        tnames: FxHashMap::default(),
        names: FxHashSet::default(),
        cats: FxHashMap::default(),
        out: String::new(),
        pool: Vec::new(),
        order: Vec::new(),
        ph_aside: [None; 256],
        unparsed: 0,
        first_bad_ts: None,
        first_odd_time: None,
        last_odd_time: None,
        top: Vec::new(),
        arg_spans: Vec::new(),
        spare: (Vec::new(), Vec::new()),
        b: TableBuilder::new(&explorer::SYSTEM_PROFILE_EVENTS),
        sink,
    };
    let mut st = Scan::default();
    let mut buf = vec![0u8; READ_CHUNK];
    let mut off = 0u64;
    let mut base_fixed = false;
    // A fault that ends the read: (offset, what is wrong there, event objects read before it).
    let mut fault: Option<(u64, String, u64)> = None;
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                // The rest of the file is lost, as in a cut file.
                r.rep.problems.push(Problem::from_error(
                    Code::TruncatedTrace,
                    file,
                    &Error::format(off, "readable trace bytes", e.to_string()),
                ));
                break;
            }
        };
        let piece = buf.get(..n).unwrap_or(&[]);
        let mut to = ToReader {
            r: &mut r,
            base,
            base_fixed,
        };
        feed(&mut st, piece, off, &mut to)?;
        base_fixed = to.base_fixed;
        off += n as u64;
        progress(off);
        // The message waits for the end: the rows kept are known only once the window is out.
        if let Some(g) = st.garbage {
            let what = if st.form == 0 {
                let found = piece.get((g - (off - n as u64)) as usize..).unwrap_or(&[]);
                format!(
                    "{file} is not JSON: at offset {g} expected the trace's `{{` or `[`, found bytes {}",
                    crate::util::hex_bytes(found, 8)
                )
            } else {
                format!("{file}: byte {g} inside the event array is neither `,`, `{{`, `]` nor whitespace (corrupt data)")
            };
            fault = Some((g, what, r.rep.objects));
            break;
        }
        if let Some((at, ev)) = st.desync {
            fault = Some((
                at,
                format!("{file}: the event starting at byte {ev} stops being valid JSON at byte {at} (corrupt data, e.g. a flipped quote or bracket)"),
                r.rep.objects,
            ));
            break;
        }
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
            Code::ReadIncomplete,
            Some(file),
            format!("{file}: baseTimeNanoseconds follows the events; times are on the trace's own clock"),
        ));
    }
    // An event cut short ends what is kept.
    let end = st.cap.map_or(off, |(_, o)| o);
    if st.events_depth.is_some() && !st.events_closed && st.garbage.is_none() && st.desync.is_none()
    {
        r.rep.truncated = true;
        r.rep.problems.push(
            Problem::new(
                Code::TruncatedTrace,
                Some(file),
                format!(
                    "{file}: the event array is not closed (missing `]` or a cut file); events up to byte {end} kept"
                ),
            )
            .at(end),
        );
    }
    // (Bytes before the value were said above: garbage between events has an event array.)
    if st.events_depth.is_none() && st.garbage.is_none() {
        // An empty or blank file, or one that ends inside its top-level value, was cut before its events:
        // lost data, as a cut event array is; a whole JSON value without them has nothing to
        // show either (every caller reads a file named as a framework trace).
        let cut = (st.form == 0 || st.depth > 0) && st.garbage.is_none() && st.desync.is_none();
        r.rep.problems.push(if cut {
            r.rep.truncated = true;
            Problem::new(
                Code::TruncatedTrace,
                Some(file),
                format!(
                    "{file}: ends at byte {off} before a `traceEvents` array (an empty or cut file); no event kept"
                ),
            )
            .at(off)
        } else {
            Problem::new(
                Code::NoTraceEvents,
                Some(file),
                format!(
                    "{file}: no `traceEvents` array by the end of the JSON at byte {off}: expected \
                     the framework trace's events there; no event kept"
                ),
            )
            .at(off)
        });
    }
    let mut rep = r.finish()?;
    if let Some((at, what, objects)) = fault {
        // Objects and rows differ: a `B`/`E` pair is one row, metadata and flow events none.
        rep.problems.push(
            Problem::new(
                Code::ProcessIncomplete,
                Some(file),
                format!(
                    "{what}; the {objects} event objects before it were read and kept as {} SystemProfileEvents rows, the rest of the file is not read",
                    rep.rows
                ),
            )
            .at(at),
        );
    }
    Ok(rep)
}

/// [`read_trace`]'s [`Events`]: every event object to the reader.
struct ToReader<'a, 's, 'f> {
    r: &'a mut Reader<'s, 'f>,
    /// The caller's base.
    base: Option<i64>,
    /// The clock is fixed (at the first event).
    base_fixed: bool,
}

impl ToReader<'_, '_, '_> {
    /// The clock is fixed at the first event: the caller's base, else one seen so far.
    fn fix_base(&mut self, seen: Option<&str>) {
        if !self.base_fixed {
            self.base_fixed = true;
            let seen = seen.and_then(|t| t.trim().parse::<i64>().ok());
            self.r.rep.base_time_ns = self.base.or(seen);
            self.r.base = self.r.rep.base_time_ns.unwrap_or(0);
        }
    }
}

impl Events for ToReader<'_, '_, '_> {
    fn event(&mut self, obj: &[u8], off: u64, base: Option<&str>) -> Result<()> {
        self.fix_base(base);
        self.r.rep.objects += 1;
        self.r.handle(obj, off)
    }
    // Per event, not inlined into `feed` (see there: V8's tiers).
    #[inline(never)]
    fn try_event(&mut self, rest: &[u8], off: u64, base: Option<&str>) -> Result<Option<usize>> {
        let r = &mut *self.r;
        let Some(n) = fast_scan(rest, &mut r.top, &mut r.arg_spans).filter(|&n| n <= MAX_EVENT)
        else {
            return Ok(None);
        };
        // Invalid UTF-8 (only possible inside strings) goes the general way, to be sanitised.
        let Some(text) = rest.get(..n).and_then(|t| std::str::from_utf8(t).ok()) else {
            return Ok(None);
        };
        self.fix_base(base);
        let r = &mut *self.r;
        let at = |[k0, k1, v0, v1]: Span| {
            let g = |a: u32, b: u32| text.get(a as usize..b as usize).unwrap_or("");
            (g(k0, k1), g(v0, v1))
        };
        let mut ev = Ev {
            args: recycle(std::mem::take(&mut r.spare.0)),
            rest: recycle(std::mem::take(&mut r.spare.1)),
            ..Ev::default()
        };
        for &sp in &r.top {
            let (k, v) = at(sp);
            ev.put(Cow::Borrowed(k), v);
        }
        for &sp in &r.arg_spans {
            let (k, v) = at(sp);
            ev.args.push((Cow::Borrowed(k), v));
        }
        r.rep.objects += 1;
        r.event(&ev, off)?;
        r.spare = (recycle(ev.args), recycle(ev.rest));
        Ok(Some(n))
    }
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

    fn emit(&mut self, r: Row) -> Result<()> {
        let (s, e) = (
            r.start.saturating_add(self.base),
            r.end.saturating_add(self.base),
        );
        self.rep.first_ts_ns = Some(self.rep.first_ts_ns.map_or(s, |f| f.min(s)));
        self.rep.last_ts_ns = Some(self.rep.last_ts_ns.map_or(e, |l| l.max(e)));
        let b = &mut self.b;
        b.set(ev::ID, r.id);
        b.set(ev::NAME, &*r.name);
        b.set(ev::START, s);
        b.set(ev::END, e);
        b.set(ev::DURATION, e.saturating_sub(s));
        b.set(ev::SOURCE, "framework");
        b.set(ev::INSTANCE, self.instance_id);
        b.set(ev::PID, r.pid);
        b.set(ev::TID, r.tid);
        if !r.flows.is_empty() {
            b.set(ev::FLOW, r.flows.as_slice());
        }
        let pname = self.pnames.get(&r.pid);
        let tname = self.tnames.get(&(r.pid, r.tid));
        let mut x = r.extra;
        if let Some(p) = pname {
            x.push_str("process_name", p);
        }
        if let Some(t) = tname {
            x.push_str("thread_name", t);
        }
        if !x.is_empty() {
            // Keys sorted (serde_json's map order; the sort is stable), the last of equal keys
            // kept. Most comparisons are settled by the keys' first 8 bytes, compared as one
            // big-endian number (zero-padded: a tie on a shorter key is settled by the keys).
            let buf = x.buf.as_bytes();
            let key_of =
                |(a, b, _): (u32, u32, u32)| buf.get(a as usize..b as usize).unwrap_or(b"");
            let ents = &mut self.order;
            ents.clear();
            ents.extend(x.ents.iter().map(|&e| {
                let mut p = [0u8; 8];
                let k = key_of(e);
                let n = k.len().min(8);
                p[..n].copy_from_slice(&k[..n]);
                (u64::from_be_bytes(p), e)
            }));
            // Strictly rising prefixes: the keys are in order already, and distinct.
            let distinct = ents.windows(2).all(|w| w[0].0 < w[1].0);
            if !distinct {
                ents.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| key_of(a.1).cmp(key_of(b.1))));
            }
            let out = &mut self.out;
            out.clear();
            out.push('{');
            let mut cat = None;
            for (k, &(p, e)) in ents.iter().enumerate() {
                if !distinct
                    && ents
                        .get(k + 1)
                        .is_some_and(|n| n.0 == p && key_of(n.1) == key_of(e))
                {
                    continue;
                }
                let (key, val) = x.get(e);
                if key == "cat" {
                    cat = Some(val);
                }
                if out.len() > 1 {
                    out.push(',');
                }
                if x.escaped_keys {
                    push_json_str(out, key);
                } else {
                    out.push('"');
                    out.push_str(key);
                    out.push('"');
                }
                out.push(':');
                out.push_str(val);
            }
            out.push('}');
            b.set(ev::EXTRA, out.as_str());
            if let Some(c) = cat {
                // A plain string's text without its quotes; anything else as written.
                let c = c
                    .strip_prefix('"')
                    .and_then(|c| c.strip_suffix('"'))
                    .filter(|c| !c.contains('\\'))
                    .unwrap_or(c);
                if let Some(n) = self.cats.get_mut(c) {
                    *n += 1;
                } else if self.cats.len() < MAX_CATEGORIES {
                    self.cats.insert(c.to_string(), 1);
                } else {
                    *self.cats.entry(OTHER_CATEGORIES.into()).or_default() += 1;
                }
            }
        }
        self.give(x);
        self.b.end_row_into(self.sink)
    }

    /// A new row's (empty) extras: a pooled buffer when there is one.
    fn take_extras(&mut self) -> Extras {
        self.pool.pop().unwrap_or_else(|| Extras {
            buf: String::with_capacity(128),
            ents: Vec::with_capacity(8),
            escaped_keys: false,
        })
    }

    /// Returns a row's extras to the pool (cleared; large buffers are dropped).
    fn give(&mut self, mut x: Extras) {
        if self.pool.len() < POOL && x.buf.capacity() <= POOL_BYTES && x.ents.capacity() <= 64 {
            x.buf.clear();
            x.ents.clear();
            x.escaped_keys = false;
            self.pool.push(x);
        }
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
        for (c, n) in (0u8..=255).zip(self.ph_aside) {
            if let Some(n) = n.filter(|&n| n > 0) {
                *rep.phases.entry(char::from(c).to_string()).or_default() += n;
            }
        }
        rep.rows = self.b.finish_into(self.sink)?;
        rep.categories = self.cats.into_iter().collect();
        let with_cat: u64 = rep.categories.values().sum();
        if rep.rows > with_cat {
            rep.categories
                .insert("(no category)".into(), rep.rows - with_cat);
        }
        rep.process_names = self.pnames.into_iter().collect();
        rep.thread_names = self
            .tnames
            .into_iter()
            .map(|((p, t), n)| (format!("{p}:{t}"), n))
            .collect();
        if self.unparsed > 10 {
            rep.problems.push(Problem::new(
                Code::ReadIncomplete,
                Some(self.file),
                format!(
                    "{}: {} events could not be parsed (first 10 listed)",
                    self.file, self.unparsed
                ),
            ));
        }
        let events = |n: u64| crate::util::count(n, "event");
        if let Some((off, what)) = self.first_bad_ts.take() {
            rep.problems.push(
                Problem::new(
                    Code::ReadIncomplete,
                    Some(self.file),
                    format!(
                        "{}: {} not kept: `ts` missing or not a time (expected a number of µs within ±9.2e15); the first at byte {off} has {what}",
                        self.file,
                        events(rep.bad_ts)
                    ),
                )
                .at(off),
            );
        }
        if let Some((off, what)) = self.first_odd_time.take() {
            rep.problems.push(
                Problem::new(
                    Code::ValueOutOfRange,
                    Some(self.file),
                    format!(
                        "{}: {} kept with a time that cannot be right (a negative `ts`; a negative or unreadable `dur`, or an `E` before its `B`: a zero-length row); the first at byte {off} has {what}",
                        self.file,
                        events(rep.odd_times)
                    ),
                )
                .at(off),
            );
        }
        Ok(rep)
    }

    /// One captured event object (empty when it was too big) at file offset `off`.
    fn handle(&mut self, raw: &[u8], off: u64) -> Result<()> {
        if raw.is_empty() {
            // Over MAX_EVENT: its bytes were not kept, so the event is lost. An Error (the CLI
            // exits 3, `-q` still prints it): the file is not read in full.
            self.rep.skipped += 1;
            self.rep.problems.push(
                Problem::new(
                    Code::ProcessIncomplete,
                    Some(self.file),
                    format!(
                        "{}: the trace event at byte {off} is larger than the {} MiB one event \
                         may take: skipped, the events after it are read",
                        self.file,
                        MAX_EVENT >> 20
                    ),
                )
                .at(off),
            );
            return Ok(());
        }
        // Strict JSON first (the common case); sanitise only what fails.
        let text;
        // UTF-8 checked once for the whole object, so serde_json's str reader need not re-check
        // every string and raw value (invalid UTF-8 can only sit in strings: sanitised below).
        let strict = std::str::from_utf8(raw)
            .ok()
            .filter(|t| !has_surrogate_escape(t) || serde_json::from_str::<Value>(t).is_ok())
            .and_then(|t| serde_json::from_str::<Ev>(t).ok());
        let ev = match strict {
            Some(ev) => ev,
            None => {
                self.rep.sanitised += 1;
                text = sanitise(raw);
                match serde_json::from_str::<Ev>(&text) {
                    Ok(ev) => ev,
                    Err(e) => {
                        let rep = &mut self.rep;
                        rep.skipped += 1;
                        self.unparsed += 1;
                        if self.unparsed <= 10 {
                            rep.problems.push(Problem::from_error(
                                Code::ReadIncomplete,
                                self.file,
                                &Error::format(off, "a trace event object", e.to_string()),
                            ));
                        }
                        return Ok(());
                    }
                }
            }
        };
        self.event(&ev, off)
    }

    /// An event at `off` whose `ts` (raw JSON text, if any) is not a time: counted, not kept.
    #[cold]
    fn bad_ts(&mut self, off: u64, raw: Option<&str>) {
        self.rep.bad_ts += 1;
        if self.first_bad_ts.is_none() {
            let what = match raw {
                None => "no `ts`".to_string(),
                Some(t) => format!("`ts` {}", clip(t.trim())),
            };
            self.first_bad_ts = Some((off, what));
        }
    }

    /// An event at `off` kept with a time that cannot be right (`what` says which); counted once
    /// however many of its times are wrong.
    #[cold]
    fn odd_time(&mut self, off: u64, what: impl FnOnce() -> String) {
        if self.last_odd_time == Some(off) {
            return;
        }
        self.last_odd_time = Some(off);
        self.rep.odd_times += 1;
        if self.first_odd_time.is_none() {
            self.first_odd_time = Some((off, what()));
        }
    }

    /// Turns one parsed event at file offset `off` into a row, a flow, metadata or nothing.
    fn event(&mut self, ev: &Ev<'_>, off: u64) -> Result<()> {
        let ph = ev.ph.and_then(str_of).unwrap_or_default();
        let ph: &str = &ph;
        let mut extra = self.take_extras();
        let rep = &mut self.rep;
        let pid = id_of(ev.pid, "pid_text", &mut extra);
        let tid = id_of(ev.tid, "tid_text", &mut extra);
        let ts = value_ns(ev.ts);
        // A one-byte phase already in the map is counted aside (added in by `finish`).
        let aside = match ph.as_bytes() {
            &[c] => self.ph_aside.get_mut(usize::from(c)),
            _ => None,
        };
        match aside {
            Some(Some(n)) => *n += 1,
            aside => {
                if let Some(c) = rep.phases.get_mut(ph) {
                    *c += 1;
                } else if rep.phases.len() < 64 {
                    rep.phases.insert(ph.to_string(), 1);
                    if let Some(slot) = aside {
                        *slot = Some(0);
                    }
                }
            }
        }
        if ph == "M" {
            let name = ev.name.map(text_of).unwrap_or_default();
            if let Some(a) = member(&ev.args, "name").and_then(str_of) {
                match &*name {
                    "process_name" if self.pnames.len() < MAX_NAMES => {
                        self.pnames.insert(pid, a.into_owned());
                    }
                    "thread_name" if self.tnames.len() < MAX_NAMES => {
                        self.tnames.insert((pid, tid), a.into_owned());
                    }
                    _ => {}
                }
            }
            self.give(extra);
            return Ok(());
        }
        if matches!(ph, "s" | "t" | "f") {
            if ts.is_none() {
                self.bad_ts(off, ev.ts);
            }
            if let Some(ts) = ts {
                let id = member(&ev.rest, "id").map(text_of).unwrap_or_default();
                let cat = member(&ev.rest, "cat").and_then(str_of).unwrap_or_default();
                let enclosing =
                    ph != "f" || member(&ev.rest, "bp").and_then(str_of).as_deref() == Some("e");
                self.flow(
                    pid,
                    tid,
                    Flow {
                        ts,
                        id: [&*cat, ":", &*id].concat(),
                        enclosing,
                    },
                );
            }
            self.give(extra);
            return Ok(());
        }
        let Some(ts) = ts else {
            self.rep.skipped += 1;
            self.bad_ts(off, ev.ts);
            self.give(extra);
            return Ok(());
        };
        // Everything except the structural keys goes to extras (args flattened under their keys).
        for (k, v) in &ev.args {
            extra.push_raw(k, matches!(k, Cow::Owned(_)), v);
        }
        for (k, v) in &ev.rest {
            extra.push_raw(k, matches!(k, Cow::Owned(_)), v);
        }
        if ph == "E" {
            let th = self.threads.entry((pid, tid)).or_default();
            match th.open.pop() {
                Some(mut r) => {
                    self.open_total -= 1;
                    if ts < r.start {
                        let (start, end) = (r.start, ts);
                        self.odd_time(off, || {
                            format!("an `E` at {end} ns before its `B` at {start} ns")
                        });
                    }
                    r.end = ts.max(r.start);
                    r.extra.append(&extra);
                    self.complete(r)?;
                }
                None => self.rep.unmatched_end += 1,
            }
            self.give(extra);
            return Ok(());
        }
        let dur = if ph == "X" {
            let d = value_ns(ev.dur);
            // Given but negative or not a time (an absent `dur` is a zero-length slice).
            if let Some(t) = ev.dur.filter(|_| d.is_none_or(|d| d < 0)) {
                self.odd_time(off, || format!("`dur` {}", clip(t.trim())));
            }
            d.unwrap_or(0)
        } else {
            0
        };
        if !matches!(ph, "X" | "B" | "i" | "I" | "C") {
            extra.push_str("ph", ph);
        }
        let name = ev.name.map(text_of).unwrap_or_default();
        let name = match self.names.get(&*name) {
            Some(n) => n.clone(),
            None => {
                let n: Rc<str> = Rc::from(&*name);
                if self.names.len() < MAX_INTERNED {
                    self.names.insert(n.clone());
                }
                n
            }
        };
        if ts < 0 {
            self.odd_time(off, || format!("`ts` {}", clip(ev.ts.unwrap_or("").trim())));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Events of every shape the reader meets: clean, dirty, invalid.
    const EVENTS: &[&str] = &[
        r#"{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 10.5, "dur": 3.25, "args": {"External id": 1, "Input Dims": [[1, 2], [3, 4]], "Input type": ["float", "c10::Half"], "f": 1.5, "e": 1e3, "neg": -0}}"#,
        r#"{"ph":"X","name":"esc\"q\u00e9","pid":"proc a","tid":"7","ts":"11.0","dur":1,"args":{"k\u0041":"v\nx","nested":{"a":[1,{"b":null}]},"t":true,"n":null}}"#,
        r#"{"ph": "f", "id": 9, "pid": 1, "tid": 3, "ts": 16, "cat": "ac2g", "name": "ac2g", "bp": "e"}"#,
        r#"{"ph": "X", "name": "dup", "name": "dup2", "pid": 1, "ts": 16, "dur": 2, "x": 1, "x": 2, "args": {"a": 1}, "args": {"b": 2}}"#,
        r#"{ "ph" : "X" , "name" : "sp" , "pid" : 1 , "ts" : 29 , "args" : { } , "z" : [ ] }"#,
        r#"{"ph":"X","name":"huge","ts":30,"args":{"n":123456789012345678901234567890,"f":1.0e400,"g":-12.50E-3}}"#,
        r#"{"ph":"X","name":"é €","ts":32,"args":{"é":"€"}}"#,
        r#"{"ph":"X","name":5,"ts":33,"args":"str"}"#,
        r#"{"ph":"X","name":null,"ts":34,"args":{"a":{"b":{"c":[[[]]]}}}}"#,
        r#"{"ph":"X","ts":35,"args":[1,2]}"#,
        r#"{"ph":"M","name":"thread_name","pid":1,"tid":3,"args":{"name":"w"}}"#,
        r#"{}"#,
        "{\"ph\":\"X\",\r\n\"ts\":\t1}",
    ];

    /// What serde_json reads from `t` (the general path's strict parse).
    fn general(t: &str) -> Option<Ev<'_>> {
        serde_json::from_str::<Ev>(t).ok()
    }

    /// What the fast path reads from `t`, and the length it read.
    fn fast(t: &str) -> Option<(Ev<'_>, usize)> {
        let (mut top, mut args) = (Vec::new(), Vec::new());
        let n = fast_scan(t.as_bytes(), &mut top, &mut args)?;
        let text = t.get(..n)?;
        let at = |[k0, k1, v0, v1]: Span| {
            let g = |a: u32, b: u32| text.get(a as usize..b as usize).unwrap_or("");
            (g(k0, k1), g(v0, v1))
        };
        let mut ev = Ev::default();
        for &sp in &top {
            let (k, v) = at(sp);
            ev.put(Cow::Borrowed(k), v);
        }
        for &sp in &args {
            let (k, v) = at(sp);
            ev.args.push((Cow::Borrowed(k), v));
        }
        Some((ev, n))
    }

    /// The fast path only reads what serde_json reads, and reads it the same: checked on each
    /// event and on every one-byte change of it (a byte replaced by a JSON-significant one, or
    /// removed).
    #[test]
    fn fast_path_is_a_subset_of_serde_json_reading_the_same() {
        let subst: &[u8] = b"\"\\,:{}[] 0-.eaE+\x01\x7f";
        let (mut checked, mut fast_hits) = (0, 0);
        let mut check = |b: &[u8]| {
            checked += 1;
            let Ok(t) = std::str::from_utf8(b) else {
                return;
            };
            if let Some((ev, n)) = fast(t) {
                fast_hits += 1;
                let whole = t.get(..n).unwrap_or("");
                assert_eq!(general(whole).as_ref(), Some(&ev), "{whole:?}");
            }
        };
        for e in EVENTS {
            let b = e.as_bytes();
            check(b);
            for i in 0..b.len() {
                let mut cut = b.to_vec();
                cut.remove(i);
                check(&cut);
                for &c in subst {
                    let mut m = b.to_vec();
                    m[i] = c;
                    check(&m);
                }
            }
        }
        assert!(fast_hits > 1000, "{fast_hits} of {checked}");
        // The clean events do take the fast path.
        for e in [
            EVENTS[0], EVENTS[2], EVENTS[3], EVENTS[4], EVENTS[5], EVENTS[6], EVENTS[8],
        ] {
            assert_eq!(fast(e).map(|f| f.1), Some(e.len()), "{e}");
        }
        // Escapes, non-object args and raw control characters do not.
        for e in [EVENTS[1], EVENTS[7], EVENTS[9]] {
            assert!(fast(e).is_none(), "{e}");
        }
    }

    /// The word-at-a-time string scan stops where a byte-by-byte one does.
    #[test]
    fn fast_str_matches_a_byte_loop() {
        let slow = |s: &[u8]| -> Option<usize> {
            let mut j = 1;
            loop {
                match *s.get(j)? {
                    b'"' => return Some(j + 1),
                    b'\\' | 0..=0x1f => return None,
                    _ => j += 1,
                }
            }
        };
        let alphabet: &[u8] = b"a\"\\\x00\x1f\x20\x7f\x80\xff\xc3\xa9!#";
        let mut x: u32 = 1;
        for _ in 0..20_000 {
            let mut s = vec![b'"'];
            // A small LCG: lengths 0..40, bytes from `alphabet`, biased to plain letters.
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            for _ in 0..(x >> 16) % 40 {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                let k = (x >> 16) as usize % (alphabet.len() * 4);
                s.push(alphabet.get(k).copied().unwrap_or(b'a'));
            }
            assert_eq!(fast_str(&s, 0), slow(&s), "{s:?}");
        }
    }

    /// The one-pass µs → ns conversion agrees with the general one wherever it answers.
    #[test]
    fn plain_us_to_ns_agrees_with_the_general_parser() {
        let texts = [
            "0",
            "5",
            "-5",
            "5.",
            ".5",
            "-.5",
            ".",
            "-",
            "",
            "1.2.3",
            "-0.0015",
            "0.9995",
            "12.3456",
            "999999999999999",
            "9999999999999999",
            "1e3",
            " 5",
            "5 ",
            "+5",
            "--5",
            "1.5x",
            "007.1",
            "1500.000",
            "-0.0005",
            "0.00049",
            "123456789012345.6789",
        ];
        for t in texts {
            let fast = plain_us_to_ns(t.as_bytes());
            assert!(
                fast.is_none() || fast == us_text_to_ns_general(t),
                "{t}: {fast:?} vs {:?}",
                us_text_to_ns_general(t)
            );
            assert_eq!(us_text_to_ns(t), fast.or_else(|| us_text_to_ns_general(t)));
        }
        assert_eq!(plain_us_to_ns(b"1500.000"), Some(1_500_000));
        assert_eq!(plain_us_to_ns(b"-0.0015"), Some(-2));
    }

    /// `canon` prints every value as `serde_json::Value::to_string` does (what the extras JSON
    /// of a row was checked against in the golden tests), whichever of its paths it takes.
    #[test]
    fn canon_prints_values_as_serde_json_does() {
        let values = [
            r#""plain""#,
            r#""""#,
            r#""é €""#,
            r#""esc\"q\u00e9""#,
            r#""\n""#,
            r#""a\\""#,
            "0",
            "-0",
            "7",
            "-12",
            "123456789012345678",
            "1234567890123456789",
            "99999999999999999999",
            "1.5",
            "1e3",
            "-12.50E-3",
            "true",
            "false",
            "null",
            "[]",
            "[ 1 , 2 ]",
            r#"[[1, 2], [3, 4]]"#,
            r#"["float", "c10::Half"]"#,
            r#"[1.0, "x"]"#,
            r#"{"b": 1, "a": [null]}"#,
            r#"{}"#,
        ];
        for v in values {
            let mut out = String::from("k");
            canon(v, &mut out);
            let want = serde_json::from_str::<Value>(v).map(|x| x.to_string());
            assert_eq!(
                Ok(out.get(1..).unwrap_or("")),
                want.as_deref().map_err(|_| ()),
                "{v}"
            );
        }
    }
}
