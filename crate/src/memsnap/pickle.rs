//! A small, data-only pickle reader (spec/framework-inputs.md §3.3 – §3.5).
//!
//! It reads protocols 2 – 5 (and the binary opcodes of protocol 1) into an [`Arena`]: every
//! container is one [`Obj`] whose items live in a shared item vector, and values on the machine's
//! stack are 16-byte [`Val`]s. Shared objects (memo `BINGET`s) stay shared: a frames list stored
//! once and fetched 10 000 times is one `Val::Obj(id)` referenced 10 000 times, so callers can
//! intern stacks by object id.
//!
//! It **never executes anything**: opcodes that import or call (`GLOBAL`, `STACK_GLOBAL`,
//! `REDUCE`, `BUILD`, `INST`, `OBJ`, `NEWOBJ`, `NEWOBJ_EX`, `EXT1/2/4`, `PERSID`, `BINPERSID`,
//! `NEXT_BUFFER`, `READONLY_BUFFER`) are refused with [`Error::Format`] naming the opcode and its
//! byte offset. No global is allow-listed: real snapshots hold only dict/list/tuple/str/int/
//! float/bool/None (§3.1).
//!
//! Memory bound. The input is streamed through [`RangeReader`] (1 MiB chunks) twice:
//! 1. a scan that only records which memo ids are ever fetched (a bitset of at most
//!    `file length / 8` bytes, in practice a few MB for a 1 GB file);
//! 2. the build, which keeps in the memo only values that pass 1 saw fetched, and offers every
//!    completed dict to a [`Hook`] together with its path from the root. A hook that consumes a
//!    dict (a trace entry turned into a table row) leaves an empty, *elided* object behind, so
//!    the per-entry cost of the bulk of a snapshot is one 16-byte item in its list; the objects
//!    built inside a consumed dict (its `frames` list and frame dicts) are dropped at once unless
//!    the memo shares them, so entries with their own frames do not accumulate either.
//!
//! Everything the arena retains (values, items, objects and stack depth) counts towards
//! [`Limits::max_values`] (16 bytes each), and text towards [`Limits::max_text_bytes`]; going
//! over is an [`Error::Unsupported`], never an out-of-memory abort.

use std::collections::{HashMap, HashSet};
use std::io::Read;

use crate::error::{Error, Result};
use crate::source::{ByteSource, RangeReader};

/// Bytes per underlying read of the input ([`crate::source::STREAM_READ`]).
pub const READ_CHUNK: usize = crate::source::STREAM_READ;

/// A pickled value as the machine and the arena hold it (16 bytes, `Copy`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Val {
    /// `None`.
    None,
    /// `True` / `False`.
    Bool(bool),
    /// An integer that fits in i64 (`BININT*`, `LONG1`/`LONG4` up to 64 bits).
    Int(i64),
    /// A wider integer up to 128 bits: index into [`Arena::big`].
    Big(u32),
    /// An integer wider than 128 bits, kept as decimal text: index into the string table.
    BigText(u32),
    /// A float (`BINFLOAT`).
    Float(f64),
    /// A string: index into the interned string table ([`Arena::str`]).
    Str(u32),
    /// A bytes / bytearray value: index into [`Arena::bytes`].
    Bytes(u32),
    /// A container: index into the object table.
    Obj(u32),
}

/// Kind of a container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    List,
    Tuple,
    Dict,
    Set,
    FrozenSet,
}

/// One container. Its items are runs of the arena's item vector (a dict stores key, value,
/// key, value …); `elided` marks a dict a [`Hook`] consumed.
#[derive(Debug, Clone, Copy)]
pub struct Obj {
    pub kind: Kind,
    /// Number of items (for a dict: twice the number of pairs).
    pub len: u32,
    /// True when a hook consumed this dict; it then has no items.
    pub elided: bool,
    /// True when the memo holds it and the file fetches it again (`BINGET`): the object may be
    /// referenced many times, and may contain itself. Its id is never reused.
    pub shared: bool,
    /// Byte offset of the opcode that created it (for messages).
    pub offset: u64,
    first_run: u32,
    last_run: u32,
}

#[derive(Debug, Clone, Copy)]
struct Run {
    start: u32,
    len: u32,
    next: u32,
}

const NIL: u32 = u32::MAX;

/// Caps that keep a hostile or huge file from exhausting memory.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Stack entries + stored items + objects + memo entries (16 bytes each, roughly).
    pub max_values: u64,
    /// Total bytes of distinct strings, bytes values and big-int text.
    pub max_text_bytes: u64,
    /// Length of one string or bytes value.
    pub max_string: u64,
}

impl Default for Limits {
    /// 64 Mi values (≈1 GiB), 512 MiB of text, 64 MiB per string.
    fn default() -> Self {
        Limits {
            max_values: 64 << 20,
            max_text_bytes: 512 << 20,
            max_string: 64 << 20,
        }
    }
}

/// All values of one pickle. Strings are interned (each distinct text stored once).
#[derive(Default)]
pub struct Arena {
    strings: Vec<Box<str>>,
    str_ids: rustc_hash::FxHashMap<Box<str>, u32>,
    bytes: Vec<Box<[u8]>>,
    bigs: Vec<i128>,
    objs: Vec<Obj>,
    runs: Vec<Run>,
    items: Vec<Val>,
    text_bytes: u64,
}

impl Arena {
    /// The text of a `Str` (or `BigText`) value.
    pub fn str(&self, v: Val) -> Option<&str> {
        match v {
            Val::Str(i) | Val::BigText(i) => self.strings.get(i as usize).map(|s| &**s),
            _ => None,
        }
    }
    /// The content of a `Bytes` value.
    pub fn bytes(&self, v: Val) -> Option<&[u8]> {
        match v {
            Val::Bytes(i) => self.bytes.get(i as usize).map(|b| &**b),
            _ => None,
        }
    }
    /// The value of an integer (`Int`, `Big` up to 128 bits, or a bool as 0/1).
    pub fn big(&self, v: Val) -> Option<i128> {
        match v {
            Val::Int(i) => Some(i128::from(i)),
            Val::Big(i) => self.bigs.get(i as usize).copied(),
            Val::Bool(b) => Some(i128::from(b)),
            _ => None,
        }
    }
    /// An integer that fits in i64 (bools excluded).
    pub fn int(&self, v: Val) -> Option<i64> {
        match v {
            Val::Int(i) => Some(i),
            Val::Big(_) => self.big(v).and_then(|b| i64::try_from(b).ok()),
            _ => None,
        }
    }
    /// A number as f64 (floats and integers).
    pub fn float(&self, v: Val) -> Option<f64> {
        match v {
            Val::Float(f) => Some(f),
            Val::Int(i) => Some(i as f64),
            Val::Big(_) => self.big(v).map(|b| b as f64),
            _ => None,
        }
    }
    /// The container behind an `Obj` value.
    pub fn obj(&self, v: Val) -> Option<&Obj> {
        match v {
            Val::Obj(i) => self.objs.get(i as usize),
            _ => None,
        }
    }
    /// Kind of a container value.
    pub fn kind(&self, v: Val) -> Option<Kind> {
        self.obj(v).map(|o| o.kind)
    }
    /// Byte offset of the opcode that created a container value.
    pub fn offset(&self, v: Val) -> Option<u64> {
        self.obj(v).map(|o| o.offset)
    }
    /// True when a container value is memoised and fetched again (see [`Obj::shared`]).
    pub fn is_shared(&self, v: Val) -> bool {
        self.obj(v).is_some_and(|o| o.shared)
    }
    /// Number of items of a container value (a dict counts key and value); 0 otherwise.
    pub fn len(&self, v: Val) -> u64 {
        self.obj(v).map_or(0, |o| u64::from(o.len))
    }
    /// True when a hook consumed this dict.
    pub fn is_elided(&self, v: Val) -> bool {
        self.obj(v).is_some_and(|o| o.elided)
    }
    /// Items of a container in order (for a dict: key, value, key, value …); empty otherwise.
    pub fn items(&self, v: Val) -> Items<'_> {
        let run = self.obj(v).map_or(NIL, |o| o.first_run);
        Items {
            arena: self,
            run,
            pos: 0,
        }
    }
    /// Items of a list or tuple (nothing for other values).
    pub fn seq(&self, v: Val) -> Items<'_> {
        match self.kind(v) {
            Some(Kind::List | Kind::Tuple) => self.items(v),
            _ => self.items(Val::None),
        }
    }
    /// `(key, value)` pairs of a dict, in insertion order.
    pub fn pairs(&self, v: Val) -> impl Iterator<Item = (Val, Val)> + '_ {
        let mut it = match self.kind(v) {
            Some(Kind::Dict) => self.items(v),
            _ => self.items(Val::None),
        };
        std::iter::from_fn(move || Some((it.next()?, it.next()?)))
    }
    /// The value stored under the string key `key` of a dict (the last one on duplicates).
    pub fn get(&self, dict: Val, key: &str) -> Option<Val> {
        self.pairs(dict)
            .filter(|(k, _)| self.str(*k) == Some(key))
            .last()
            .map(|(_, v)| v)
    }
    /// Number of containers.
    pub fn obj_count(&self) -> usize {
        self.objs.len()
    }
    /// Number of stored container items.
    pub fn item_count(&self) -> usize {
        self.items.len()
    }
    /// Number of distinct strings.
    pub fn string_count(&self) -> usize {
        self.strings.len()
    }

    fn intern(&mut self, s: &str, limits: &Limits, at: u64) -> Result<Val> {
        if let Some(&i) = self.str_ids.get(s) {
            return Ok(Val::Str(i));
        }
        self.text_bytes = self.text_bytes.saturating_add(2 * s.len() as u64);
        if self.text_bytes > limits.max_text_bytes {
            return Err(Error::Unsupported(format!(
                "pickle at offset {at}: more than {} bytes of distinct text",
                limits.max_text_bytes
            )));
        }
        let id = u32::try_from(self.strings.len())
            .map_err(|_| Error::Unsupported("too many distinct strings".into()))?;
        self.strings.push(s.into());
        self.str_ids.insert(s.into(), id);
        Ok(Val::Str(id))
    }

    fn new_obj(&mut self, kind: Kind, offset: u64) -> Result<Val> {
        let id = u32::try_from(self.objs.len())
            .map_err(|_| Error::Unsupported("too many pickle objects".into()))?;
        self.objs.push(Obj {
            kind,
            len: 0,
            elided: false,
            shared: false,
            offset,
            first_run: NIL,
            last_run: NIL,
        });
        Ok(Val::Obj(id))
    }

    /// Appends `vals` as one run to container `id`.
    fn extend(&mut self, id: u32, vals: &[Val]) -> Result<()> {
        if vals.is_empty() {
            return Ok(());
        }
        let too_many = || Error::Unsupported("too many pickle values".into());
        let start = u32::try_from(self.items.len()).map_err(|_| too_many())?;
        let len = u32::try_from(vals.len()).map_err(|_| too_many())?;
        let run = u32::try_from(self.runs.len()).map_err(|_| too_many())?;
        let obj = self.objs.get_mut(id as usize).ok_or_else(too_many)?;
        obj.len = obj.len.checked_add(len).ok_or_else(too_many)?;
        let prev = obj.last_run;
        obj.last_run = run;
        if prev == NIL {
            obj.first_run = run;
        }
        if let Some(p) = self.runs.get_mut(prev as usize) {
            p.next = run;
        }
        self.items.extend_from_slice(vals);
        self.runs.push(Run {
            start,
            len,
            next: NIL,
        });
        Ok(())
    }

    fn footprint(&self) -> u64 {
        (self.items.len() + self.objs.len() + self.runs.len() / 2 + self.bigs.len()) as u64
    }
}

/// Iterator over a container's items.
pub struct Items<'a> {
    arena: &'a Arena,
    run: u32,
    pos: u32,
}

impl Iterator for Items<'_> {
    type Item = Val;
    fn next(&mut self) -> Option<Val> {
        loop {
            let r = self.arena.runs.get(self.run as usize)?;
            if self.pos < r.len {
                let v = self.arena.items.get((r.start + self.pos) as usize).copied();
                self.pos += 1;
                return v;
            }
            self.run = r.next;
            self.pos = 0;
        }
    }
}

/// One step of the path from the root to a dict offered to a [`Hook`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PathEl {
    /// The value under this key of a dict.
    Key(Val),
    /// The item at this index of a list/tuple/set.
    Index(u64),
}

/// Receives completed dicts while the pickle is being read (streaming consumers).
pub trait Hook {
    /// Offered the `key, value, …` items of a dict filled by its first `SETITEMS` at
    /// `path` (root first). Returns true when it consumed them: the dict is then kept as an
    /// empty, elided object, and the objects built inside it (its frames) are dropped unless the
    /// memo shares them, so a consuming hook must copy what it keeps out of the arena (strings
    /// stay: `Val::Str` ids are never reused). Dicts that are fetched again from the memo are
    /// never offered.
    fn dict(&mut self, arena: &Arena, path: &[PathEl], items: &[Val]) -> Result<bool>;
}

/// A hook that consumes nothing.
pub struct NoHook;

impl Hook for NoHook {
    fn dict(&mut self, _: &Arena, _: &[PathEl], _: &[Val]) -> Result<bool> {
        Ok(false)
    }
}

/// The result of [`parse`]: whatever was built, the root, and the fault if any.
pub struct Parsed {
    pub arena: Arena,
    /// The value `STOP` returned; after a fault, the bottom of the stack with every pending
    /// `MARK` region attached to its container (so everything decoded before the fault is kept).
    pub root: Option<Val>,
    /// Protocol from `PROTO`, if present.
    pub protocol: Option<u8>,
    /// The fault that stopped reading, if any.
    pub error: Option<Error>,
    /// Consumed dicts whose descendants were dropped right away (see [`Hook`]).
    pub reclaimed: u64,
    /// Most values retained at once (stack + memo + arena items, objects, runs), the measure
    /// [`Limits::max_values`] bounds; about 16 bytes each.
    pub peak_values: u64,
}

/// Opcode names for error messages.
fn opcode_name(op: u8) -> Option<&'static str> {
    Some(match op {
        b'c' => "GLOBAL",
        0x93 => "STACK_GLOBAL",
        b'R' => "REDUCE",
        b'b' => "BUILD",
        b'i' => "INST",
        b'o' => "OBJ",
        0x81 => "NEWOBJ",
        0x92 => "NEWOBJ_EX",
        0x82 => "EXT1",
        0x83 => "EXT2",
        0x84 => "EXT4",
        b'P' => "PERSID",
        b'Q' => "BINPERSID",
        0x97 => "NEXT_BUFFER",
        0x98 => "READONLY_BUFFER",
        _ => return None,
    })
}

fn text_opcode_name(op: u8) -> Option<&'static str> {
    Some(match op {
        b'I' => "INT",
        b'L' => "LONG",
        b'S' => "STRING",
        b'T' => "BINSTRING",
        b'U' => "SHORT_BINSTRING",
        b'V' => "UNICODE",
        b'F' => "FLOAT",
        b'g' => "GET",
        b'p' => "PUT",
        _ => return None,
    })
}

fn refused(off: u64, op: u8) -> Error {
    if let Some(name) = opcode_name(op) {
        return Error::format(
            off,
            "a data-only pickle opcode",
            format!(
                "{name} (0x{op:02X}), which imports or calls code: refused, nothing is executed"
            ),
        );
    }
    if let Some(name) = text_opcode_name(op) {
        return Error::format(
            off,
            "a protocol 2-5 pickle opcode",
            format!("{name} (0x{op:02X}): protocol 0/1 text opcodes are not supported"),
        );
    }
    Error::format(off, "a pickle opcode", format!("unknown opcode 0x{op:02X}"))
}

/// Sequential input with absolute offsets: chunks from a [`RangeReader`] and a cursor in the
/// current chunk, so one-byte opcodes cost an index, not a `Read` call.
struct Input<'a> {
    r: RangeReader<&'a dyn ByteSource>,
    end: u64,
    buf: Vec<u8>,
    /// Absolute offset of `buf[0]`.
    start: u64,
    at: usize,
}

impl<'a> Input<'a> {
    fn new(src: &'a dyn ByteSource) -> Self {
        Input {
            r: RangeReader::new(src, 0, src.len(), READ_CHUNK),
            end: src.len(),
            buf: Vec::new(),
            start: 0,
            at: 0,
        }
    }
    fn pos(&self) -> u64 {
        self.start + self.at as u64
    }
    fn truncated(&self, n: u64) -> Error {
        let at = self.pos();
        Error::Truncated {
            offset: at,
            wanted: n,
            available: self.end.saturating_sub(at),
        }
    }
    fn need(&self, n: u64) -> Result<()> {
        if self.end.saturating_sub(self.pos()) < n {
            return Err(self.truncated(n));
        }
        Ok(())
    }
    /// Next chunk (the current one is used up).
    fn fill(&mut self) -> Result<()> {
        self.start += self.buf.len() as u64;
        self.at = 0;
        self.buf.resize(READ_CHUNK, 0);
        let n = self
            .r
            .read(&mut self.buf)
            .map_err(|e| Error::Io(e.to_string()))?;
        self.buf.truncate(n);
        if n == 0 {
            return Err(self.truncated(1));
        }
        Ok(())
    }
    /// Calls `f` on consecutive pieces of the next `n` bytes.
    fn pieces(&mut self, n: u64, mut f: impl FnMut(&[u8])) -> Result<()> {
        self.need(n)?;
        let mut left = n;
        while left > 0 {
            if self.at >= self.buf.len() {
                self.fill()?;
            }
            let k = (self.buf.len() - self.at).min(usize::try_from(left).unwrap_or(usize::MAX));
            f(&self.buf[self.at..self.at + k]);
            self.at += k;
            left -= k as u64;
        }
        Ok(())
    }
    #[inline]
    fn arr<const N: usize>(&mut self) -> Result<[u8; N]> {
        if let Some(s) = self.buf.get(self.at..self.at + N) {
            let mut a = [0u8; N];
            a.copy_from_slice(s);
            self.at += N;
            return Ok(a);
        }
        let mut a = [0u8; N];
        let mut i = 0;
        self.pieces(N as u64, |p| {
            a[i..i + p.len()].copy_from_slice(p);
            i += p.len();
        })?;
        Ok(a)
    }
    #[inline]
    fn u8(&mut self) -> Result<u8> {
        if let Some(&b) = self.buf.get(self.at) {
            self.at += 1;
            return Ok(b);
        }
        Ok(self.arr::<1>()?[0])
    }
    #[inline]
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.arr()?))
    }
    #[inline]
    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.arr()?))
    }
    fn read(&mut self, n: u64, out: &mut Vec<u8>) -> Result<()> {
        out.clear();
        self.pieces(n, |p| out.extend_from_slice(p))
    }
    fn skip(&mut self, n: u64) -> Result<()> {
        self.need(n)?;
        let in_buf = (self.buf.len() - self.at) as u64;
        if n <= in_buf {
            self.at += n as usize;
            return Ok(());
        }
        self.pieces(n, |_| {})
    }
}

/// A fast hasher for `u32` keys (memo ids, object ids): one multiply, no DoS concern since the
/// worst case is only slower.
#[derive(Default, Clone, Copy)]
pub struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u32(&mut self, i: u32) {
        self.0 = (self.0 ^ u64::from(i)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// `HashMap`/`HashSet` state using [`IdHasher`].
pub type IdBuild = std::hash::BuildHasherDefault<IdHasher>;

/// Memo ids that are fetched (`BINGET`/`LONG_BINGET`) somewhere in the file.
#[derive(Default)]
struct Fetched {
    bits: Vec<u64>,
    far: HashSet<u32, IdBuild>,
    dense_limit: u64,
}

impl Fetched {
    fn insert(&mut self, id: u32) {
        if u64::from(id) < self.dense_limit {
            let w = (id / 64) as usize;
            if self.bits.len() <= w {
                self.bits.resize(w + 1, 0);
            }
            self.bits[w] |= 1 << (id % 64);
        } else {
            self.far.insert(id);
        }
    }
    fn contains(&self, id: u32) -> bool {
        match self.bits.get((id / 64) as usize) {
            Some(w) if u64::from(id) < self.dense_limit => w & (1 << (id % 64)) != 0,
            _ => self.far.contains(&id),
        }
    }
}

/// Pass 1: which memo ids are fetched. Stops quietly at the first fault (pass 2 reports it).
fn scan_fetched(src: &dyn ByteSource) -> Fetched {
    let mut f = Fetched {
        dense_limit: src.len(),
        ..Fetched::default()
    };
    let mut inp = Input::new(src);
    let _ = (|| -> Result<()> {
        loop {
            let op = inp.u8()?;
            let skip: u64 = match op {
                0x80 | b'q' | b'K' => 1,
                b'r' | b'J' => 4,
                b'M' => 2,
                0x95 | b'G' => 8,
                b'h' => {
                    f.insert(u32::from(inp.u8()?));
                    0
                }
                b'j' => {
                    f.insert(inp.u32()?);
                    0
                }
                0x8A | 0x8C | b'C' => u64::from(inp.u8()?),
                0x8B => u64::try_from(i32::from_le_bytes(inp.arr()?)).unwrap_or(u64::MAX),
                b'X' | b'B' => u64::from(inp.u32()?),
                0x8D | 0x8E | 0x96 => inp.u64()?,
                b'.' => return Ok(()),
                op if opcode_name(op).is_some() || text_opcode_name(op).is_some() => return Ok(()),
                _ => 0,
            };
            inp.skip(skip)?;
        }
    })();
    f
}

/// Reads a pickle from `src` into an arena, offering completed dicts to `hook`.
///
/// Never fails as a whole: a fault (truncation, a refused opcode, a limit) is returned in
/// [`Parsed::error`] together with everything built before it. An error returned by the hook
/// also stops reading and is reported the same way.
pub fn parse(src: &dyn ByteSource, limits: Limits, hook: &mut dyn Hook) -> Parsed {
    let fetched = scan_fetched(src);
    let mut m = Machine {
        arena: Arena::default(),
        stack: Vec::new(),
        marks: Vec::new(),
        memo: HashMap::default(),
        memo_max_obj: None,
        reclaimed: 0,
        peak_values: 0,
        memo_next: 0,
        fetched,
        limits,
        protocol: None,
        scratch: Vec::new(),
        path: Vec::new(),
    };
    let mut inp = Input::new(src);
    match m.run(&mut inp, hook) {
        Ok(root) => Parsed {
            root: Some(root),
            protocol: m.protocol,
            arena: m.arena,
            error: None,
            reclaimed: m.reclaimed,
            peak_values: m.peak_values,
        },
        Err(e) => {
            let root = m.salvage();
            Parsed {
                root,
                protocol: m.protocol,
                arena: m.arena,
                error: Some(e),
                reclaimed: m.reclaimed,
                peak_values: m.peak_values,
            }
        }
    }
}

struct Machine {
    arena: Arena,
    stack: Vec<Val>,
    marks: Vec<usize>,
    memo: HashMap<u32, Val, IdBuild>,
    /// Largest object id stored in the memo (only fetched ids are stored).
    memo_max_obj: Option<u32>,
    /// Consumed dicts whose descendants were dropped by [`Machine::reclaim`].
    reclaimed: u64,
    peak_values: u64,
    memo_next: u32,
    fetched: Fetched,
    limits: Limits,
    protocol: Option<u8>,
    scratch: Vec<u8>,
    path: Vec<PathEl>,
}

impl Machine {
    fn underflow(off: u64, what: &str) -> Error {
        Error::format(
            off,
            format!("a value on the stack for {what}"),
            "empty stack",
        )
    }

    fn push(&mut self, v: Val, off: u64) -> Result<()> {
        let used = self.arena.footprint() + (self.stack.len() + self.memo.len()) as u64;
        self.peak_values = self.peak_values.max(used);
        if used >= self.limits.max_values {
            return Err(Error::Unsupported(format!(
                "pickle at offset {off}: more than {} values retained (Limits::max_values)",
                self.limits.max_values
            )));
        }
        self.stack.push(v);
        Ok(())
    }

    fn pop(&mut self, off: u64, what: &str) -> Result<Val> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err(Self::underflow(off, what));
        }
        self.stack.pop().ok_or_else(|| Self::underflow(off, what))
    }

    fn top(&self, off: u64, what: &str) -> Result<Val> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err(Self::underflow(off, what));
        }
        self.stack
            .last()
            .copied()
            .ok_or_else(|| Self::underflow(off, what))
    }

    /// Pops the items above the last MARK (and the mark).
    fn pop_mark(&mut self, off: u64) -> Result<Vec<Val>> {
        let m = self
            .marks
            .pop()
            .ok_or_else(|| Error::format(off, "a MARK before this opcode", "no MARK"))?;
        Ok(self.stack.split_off(m.min(self.stack.len())))
    }

    fn container(&self, v: Val, off: u64, kinds: &[Kind], what: &str) -> Result<u32> {
        match (v, self.arena.kind(v)) {
            (Val::Obj(id), Some(k)) if kinds.contains(&k) => Ok(id),
            _ => Err(Error::format(
                off,
                format!("a {what} below the items"),
                format!("{v:?}"),
            )),
        }
    }

    fn memo_put(&mut self, id: u32, v: Val) {
        if self.fetched.contains(id) {
            if let Val::Obj(o) = v {
                self.memo_max_obj = Some(self.memo_max_obj.map_or(o, |m| m.max(o)));
                if let Some(obj) = self.arena.objs.get_mut(o as usize) {
                    obj.shared = true;
                }
            }
            self.memo.insert(id, v);
        }
    }

    /// After a hook consumed dict `id`: drops the objects, runs and items built since it was
    /// created (its descendants: frames lists and frame dicts), unless the memo holds one of them
    /// (a shared object fetched later). This keeps a trace of millions of entries with their own
    /// frames at the arena size of one entry. Objects are appended in creation order and a
    /// well-formed pickle only fills objects created inside the entry while building it, so
    /// everything after `id` belongs to the entry; a hostile pickle that fills an older object
    /// meanwhile only garbles that object (run chains still end: `next` always points forward).
    fn reclaim(&mut self, id: u32) {
        if self.memo_max_obj.is_some_and(|m| m > id) {
            return;
        }
        let from = id as usize + 1;
        let Some(desc) = self.arena.objs.get(from..) else {
            return;
        };
        let first_run = desc
            .iter()
            .filter(|o| o.first_run != NIL)
            .map(|o| o.first_run)
            .min();
        self.arena.objs.truncate(from);
        if let Some(r) = first_run {
            if let Some(start) = self.arena.runs.get(r as usize).map(|x| x.start) {
                self.arena.runs.truncate(r as usize);
                self.arena.items.truncate(start as usize);
            }
        }
        self.reclaimed += 1;
    }

    fn memo_get(&mut self, id: u32, off: u64) -> Result<()> {
        let v = *self.memo.get(&id).ok_or_else(|| {
            Error::format(off, "a memo id stored earlier", format!("memo id {id}"))
        })?;
        self.push(v, off)
    }

    fn string(&mut self, inp: &mut Input, n: u64, off: u64) -> Result<()> {
        if n > self.limits.max_string {
            return Err(Error::format(
                off,
                format!("a string of at most {} bytes", self.limits.max_string),
                format!("{n} bytes"),
            ));
        }
        let mut buf = std::mem::take(&mut self.scratch);
        inp.read(n, &mut buf)?;
        let v = self
            .arena
            .intern(&String::from_utf8_lossy(&buf), &self.limits, off);
        self.scratch = buf;
        self.push(v?, off)
    }

    fn bytes(&mut self, inp: &mut Input, n: u64, off: u64) -> Result<()> {
        if n > self.limits.max_string {
            return Err(Error::format(
                off,
                format!("a bytes value of at most {} bytes", self.limits.max_string),
                format!("{n} bytes"),
            ));
        }
        let mut buf = Vec::new();
        inp.read(n, &mut buf)?;
        self.arena.text_bytes = self.arena.text_bytes.saturating_add(n);
        if self.arena.text_bytes > self.limits.max_text_bytes {
            return Err(Error::Unsupported(format!(
                "pickle at offset {off}: more than {} bytes of text",
                self.limits.max_text_bytes
            )));
        }
        let id = u32::try_from(self.arena.bytes.len())
            .map_err(|_| Error::Unsupported("too many bytes values".into()))?;
        self.arena.bytes.push(buf.into_boxed_slice());
        self.push(Val::Bytes(id), off)
    }

    fn long(&mut self, inp: &mut Input, n: u64, off: u64) -> Result<()> {
        if n > 4096 {
            return Err(Error::format(
                off,
                "an integer of at most 4096 bytes",
                format!("{n} bytes"),
            ));
        }
        let mut buf = std::mem::take(&mut self.scratch);
        inp.read(n, &mut buf)?;
        let v = if buf.len() <= 16 {
            let neg = buf.last().is_some_and(|b| b & 0x80 != 0);
            let mut w = [if neg { 0xFF } else { 0 }; 16];
            w[..buf.len()].copy_from_slice(&buf);
            let x = i128::from_le_bytes(w);
            match i64::try_from(x) {
                Ok(i) => Val::Int(i),
                Err(_) => {
                    let id = u32::try_from(self.arena.bigs.len())
                        .map_err(|_| Error::Unsupported("too many big integers".into()))?;
                    self.arena.bigs.push(x);
                    Val::Big(id)
                }
            }
        } else {
            let text = decimal(&buf);
            match self.arena.intern(&text, &self.limits, off)? {
                Val::Str(i) => Val::BigText(i),
                other => other,
            }
        };
        self.scratch = buf;
        self.push(v, off)
    }

    /// Path from the root to the object at stack position `pos`, whose innermost enclosing
    /// MARK is number `level`. Python writes one-item containers without a MARK (`x APPEND`,
    /// `k v SETITEM`), so a list directly below an object in a dict region is its parent (a list
    /// cannot be a dict key), and a dict at the stack bottom without a MARK is the root's region.
    /// Inside a list region the two shapes look alike; the object is then taken as an item of
    /// that list (a wrong guess only means the hook is not offered the right path).
    fn path_of(&mut self, mut pos: usize, mut level: usize) {
        self.path.clear();
        loop {
            while level > 0 && self.marks[level - 1] > pos {
                level -= 1;
            }
            let m = if level > 0 {
                self.marks[level - 1]
            } else if self.arena.kind(self.stack[0]) == Some(Kind::Dict) {
                1
            } else {
                break;
            };
            if m == 0 || pos < m {
                break;
            }
            let parent = self.stack[m - 1];
            let q = (pos - m) as u64;
            let below = self.stack[pos - 1];
            match self.arena.obj(parent) {
                Some(o) if o.kind == Kind::Dict => {
                    match self.arena.obj(below) {
                        Some(b) if pos > m && b.kind == Kind::List => {
                            self.path.push(PathEl::Index(u64::from(b.len)));
                            pos -= 1;
                            continue;
                        }
                        Some(b) if pos > m && matches!(b.kind, Kind::Dict | Kind::Set) => break,
                        _ => {}
                    }
                    if q % 2 == 1 {
                        self.path.push(PathEl::Key(below));
                    } else {
                        break;
                    }
                }
                Some(o) => self.path.push(PathEl::Index(u64::from(o.len) + q)),
                None => break,
            }
            if m == 1 && level == 0 {
                break; // reached the root
            }
            pos = m - 1;
        }
        self.path.reverse();
    }

    fn set_items(&mut self, id: u32, items: Vec<Val>, hook: &mut dyn Hook, off: u64) -> Result<()> {
        let o = self.arena.objs[id as usize];
        if o.len == 0 && !o.elided && items.len() >= 2 {
            // The dict sits just below the (already popped) mark: stack top.
            let pos = self.stack.len().saturating_sub(1);
            self.path_of(pos, self.marks.len());
            let path = std::mem::take(&mut self.path);
            let taken = hook.dict(&self.arena, &path, &items)?;
            self.path = path;
            if taken {
                self.arena.objs[id as usize].elided = true;
                self.reclaim(id);
                return Ok(());
            }
        }
        let _ = off;
        self.arena.extend(id, &items[..items.len() & !1])
    }

    fn run(&mut self, inp: &mut Input, hook: &mut dyn Hook) -> Result<Val> {
        // Ids of memoised dicts: a dict fetched again must not be elided by the hook.
        let mut dict_memo: HashSet<u32, IdBuild> = HashSet::default();
        loop {
            let off = inp.pos();
            let op = inp.u8()?;
            match op {
                0x80 => {
                    let p = inp.u8()?;
                    if !(2..=5).contains(&p) {
                        return Err(Error::format(
                            off,
                            "pickle protocol 2-5",
                            format!("protocol {p}"),
                        ));
                    }
                    self.protocol = Some(p);
                }
                0x95 => inp.skip(8)?,
                b'.' => {
                    let v = self.pop(off, "STOP")?;
                    return Ok(v);
                }
                b'(' => {
                    self.marks.push(self.stack.len());
                }
                b'0' => {
                    if self.marks.last() == Some(&self.stack.len()) {
                        self.marks.pop();
                    } else {
                        self.pop(off, "POP")?;
                    }
                }
                b'1' => {
                    self.pop_mark(off)?;
                }
                b'2' => {
                    let v = self.top(off, "DUP")?;
                    self.push(v, off)?;
                }
                b'}' | b']' | b')' | 0x8F => {
                    let kind = match op {
                        b'}' => Kind::Dict,
                        b']' => Kind::List,
                        b')' => Kind::Tuple,
                        _ => Kind::Set,
                    };
                    let v = self.arena.new_obj(kind, off)?;
                    self.push(v, off)?;
                }
                b'd' => {
                    let items = self.pop_mark(off)?;
                    // Not offered to the hook: the dict is memoised only after this opcode,
                    // so pass 1 cannot tell whether it is fetched again.
                    let v = self.arena.new_obj(Kind::Dict, off)?;
                    self.push(v, off)?;
                    if let Val::Obj(id) = v {
                        self.arena.extend(id, &items[..items.len() & !1])?;
                    }
                }
                b'l' | b't' | 0x91 => {
                    let items = self.pop_mark(off)?;
                    let kind = match op {
                        b'l' => Kind::List,
                        b't' => Kind::Tuple,
                        _ => Kind::FrozenSet,
                    };
                    let v = self.arena.new_obj(kind, off)?;
                    if let Val::Obj(id) = v {
                        self.arena.extend(id, &items)?;
                    }
                    self.push(v, off)?;
                }
                0x85..=0x87 => {
                    let n = usize::from(op - 0x84);
                    let mut items = [Val::None; 3];
                    for i in (0..n).rev() {
                        items[i] = self.pop(off, "TUPLEn")?;
                    }
                    let v = self.arena.new_obj(Kind::Tuple, off)?;
                    if let Val::Obj(id) = v {
                        self.arena.extend(id, &items[..n])?;
                    }
                    self.push(v, off)?;
                }
                b'a' => {
                    let v = self.pop(off, "APPEND")?;
                    let l = self.top(off, "APPEND")?;
                    let id = self.container(l, off, &[Kind::List], "list")?;
                    self.arena.extend(id, &[v])?;
                }
                b'e' | 0x90 => {
                    let items = self.pop_mark(off)?;
                    let l = self.top(off, "APPENDS")?;
                    let kinds: &[Kind] = if op == b'e' {
                        &[Kind::List]
                    } else {
                        &[Kind::Set]
                    };
                    let id = self.container(l, off, kinds, "list or set")?;
                    self.arena.extend(id, &items)?;
                }
                b's' => {
                    let v = self.pop(off, "SETITEM")?;
                    let k = self.pop(off, "SETITEM")?;
                    let d = self.top(off, "SETITEM")?;
                    let id = self.container(d, off, &[Kind::Dict], "dict")?;
                    self.arena.extend(id, &[k, v])?;
                }
                b'u' => {
                    let items = self.pop_mark(off)?;
                    let d = self.top(off, "SETITEMS")?;
                    let id = self.container(d, off, &[Kind::Dict], "dict")?;
                    if dict_memo.contains(&id) {
                        self.arena.extend(id, &items[..items.len() & !1])?;
                    } else {
                        self.set_items(id, items, hook, off)?;
                    }
                }
                0x94 | b'q' | b'r' => {
                    let id = match op {
                        0x94 => {
                            let id = self.memo_next;
                            self.memo_next = self.memo_next.wrapping_add(1);
                            id
                        }
                        b'q' => u32::from(inp.u8()?),
                        _ => inp.u32()?,
                    };
                    let v = self.top(off, "MEMOIZE/BINPUT")?;
                    if let Val::Obj(o) = v {
                        if self.fetched.contains(id) {
                            dict_memo.insert(o);
                        }
                    }
                    self.memo_put(id, v);
                }
                b'h' => {
                    let id = u32::from(inp.u8()?);
                    self.memo_get(id, off)?;
                }
                b'j' => {
                    let id = inp.u32()?;
                    self.memo_get(id, off)?;
                }
                b'N' => self.push(Val::None, off)?,
                0x88 => self.push(Val::Bool(true), off)?,
                0x89 => self.push(Val::Bool(false), off)?,
                b'J' => {
                    let v = i32::from_le_bytes(inp.arr()?);
                    self.push(Val::Int(i64::from(v)), off)?;
                }
                b'K' => {
                    let v = inp.u8()?;
                    self.push(Val::Int(i64::from(v)), off)?;
                }
                b'M' => {
                    let v = u16::from_le_bytes(inp.arr()?);
                    self.push(Val::Int(i64::from(v)), off)?;
                }
                0x8A => {
                    let n = u64::from(inp.u8()?);
                    self.long(inp, n, off)?;
                }
                0x8B => {
                    let n = i32::from_le_bytes(inp.arr()?);
                    let n = u64::try_from(n).map_err(|_| {
                        Error::format(off, "a non-negative LONG4 length", format!("{n}"))
                    })?;
                    self.long(inp, n, off)?;
                }
                b'G' => {
                    let v = f64::from_be_bytes(inp.arr()?);
                    self.push(Val::Float(v), off)?;
                }
                0x8C => {
                    let n = u64::from(inp.u8()?);
                    self.string(inp, n, off)?;
                }
                b'X' => {
                    let n = u64::from(inp.u32()?);
                    self.string(inp, n, off)?;
                }
                0x8D => {
                    let n = inp.u64()?;
                    self.string(inp, n, off)?;
                }
                b'C' => {
                    let n = u64::from(inp.u8()?);
                    self.bytes(inp, n, off)?;
                }
                b'B' => {
                    let n = u64::from(inp.u32()?);
                    self.bytes(inp, n, off)?;
                }
                0x8E | 0x96 => {
                    let n = inp.u64()?;
                    self.bytes(inp, n, off)?;
                }
                other => return Err(refused(off, other)),
            }
        }
    }

    /// After a fault: attach every pending MARK region to the container below it (top down) and
    /// return the bottom of the stack.
    fn salvage(&mut self) -> Option<Val> {
        while let Some(m) = self.marks.pop() {
            let items = self.stack.split_off(m.min(self.stack.len()));
            let Some(&below) = m.checked_sub(1).and_then(|i| self.stack.get(i)) else {
                continue;
            };
            if let (Val::Obj(id), Some(k)) = (below, self.arena.kind(below)) {
                let n = if k == Kind::Dict {
                    items.len() & !1
                } else {
                    items.len()
                };
                if k != Kind::Tuple && self.arena.extend(id, &items[..n]).is_err() {
                    break;
                }
            }
        }
        self.stack.first().copied()
    }
}

/// Decimal text of a little-endian two's-complement integer of any width.
fn decimal(le: &[u8]) -> String {
    let neg = le.last().is_some_and(|b| b & 0x80 != 0);
    // Magnitude as little-endian bytes.
    let mut mag: Vec<u8> = le.to_vec();
    if neg {
        let mut carry = true;
        for b in &mut mag {
            *b = !*b;
            if carry {
                let (s, c) = b.overflowing_add(1);
                *b = s;
                carry = c;
            }
        }
    }
    // Repeated division by 10^9 on big-endian u32 limbs.
    let mut limbs: Vec<u32> = mag
        .chunks(4)
        .rev()
        .map(|c| {
            let mut w = [0u8; 4];
            w[..c.len()].copy_from_slice(c);
            u32::from_le_bytes(w)
        })
        .collect();
    let mut parts = Vec::new();
    while limbs.iter().any(|&l| l != 0) {
        let mut rem: u64 = 0;
        for l in &mut limbs {
            let cur = (rem << 32) | u64::from(*l);
            *l = (cur / 1_000_000_000) as u32;
            rem = cur % 1_000_000_000;
        }
        parts.push(rem as u32);
    }
    let mut s = String::new();
    if neg {
        s.push('-');
    }
    match parts.split_last() {
        None => s.push('0'),
        Some((first, rest)) => {
            s.push_str(&first.to_string());
            for p in rest.iter().rev() {
                s.push_str(&format!("{p:09}"));
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::SliceSource;

    fn parse_bytes(b: &[u8]) -> Parsed {
        parse(&SliceSource(b), Limits::default(), &mut NoHook)
    }

    #[test]
    fn decimal_of_wide_integers() {
        assert_eq!(decimal(&[]), "0");
        assert_eq!(decimal(&[0xFF]), "-1");
        // 2^128 = 0x01 followed by 16 zero bytes (LE: 16 zeros then 1).
        let mut b = vec![0u8; 16];
        b.push(1);
        assert_eq!(decimal(&b), "340282366920938463463374607431768211456");
    }

    #[test]
    fn shared_memo_values_stay_shared() {
        // pickle.dumps([[d], [d]], 4) with d = {'filename': 'x'} (spec §3.4), written by hand:
        // PROTO 4, FRAME, ] MEMOIZE ( ] MEMOIZE } MEMOIZE 'filename' MEMOIZE 'x' MEMOIZE s a
        // ] MEMOIZE h2 a e .
        let mut b = vec![0x80, 4, 0x95];
        b.extend_from_slice(&[0; 8]);
        b.extend_from_slice(&[b']', 0x94, b'(', b']', 0x94, b'}', 0x94, 0x8C, 8]);
        b.extend_from_slice(b"filename");
        b.extend_from_slice(&[0x94, 0x8C, 1, b'x', 0x94, b's', b'a']);
        b.extend_from_slice(&[b']', 0x94, b'h', 2, b'a', b'e', b'.']);
        let p = parse_bytes(&b);
        assert!(p.error.is_none(), "{:?}", p.error);
        let a = &p.arena;
        let outer: Vec<Val> = a.seq(p.root.unwrap()).collect();
        assert_eq!(outer.len(), 2);
        let d0 = a.seq(outer[0]).next().unwrap();
        let d1 = a.seq(outer[1]).next().unwrap();
        assert_eq!(d0, d1, "the dict is one shared object");
        assert_eq!(a.str(a.get(d0, "filename").unwrap()), Some("x"));
    }

    #[test]
    fn refuses_code_opcodes_with_offset() {
        // PROTO 2, GLOBAL 'os\nsystem\n' …
        let b = b"\x80\x02cos\nsystem\nq\x00X\x02\x00\x00\x00idq\x01\x85q\x02Rq\x03.";
        let p = parse_bytes(b);
        let e = p.error.unwrap();
        assert_eq!(e.offset(), Some(2));
        assert!(e.to_string().contains("GLOBAL (0x63)"), "{e}");
    }
}
