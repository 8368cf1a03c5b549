//! NEFF debug info (docs/format/neff.md §9 – §10): the `.dbg` protobuf chain asm → backend (BIR) →
//! Penguin → HLO → framework, the framework stack-frame index (§9.4) and NKI kernel debug info
//! (`kernel_debug_info.json` + `*.klir.debuginfo.json`, §10).
//!
//! Everything is optional and tolerant: a missing or corrupt file becomes a warning and what was
//! decoded before the fault is kept. Records are compact structs; strings are interned once per
//! NEFF ([`Interner`]), so memory is about the size of the `.dbg` bytes.

use std::collections::{BTreeMap, HashMap};

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::pb::{self, Value};
use crate::source::ByteSource;
use crate::tables::{explorer, TableBuilder, TableSink};
use crate::util::i32_cell;

use super::{archive, Neff};

/// Cap on one buffered debug member, bytes.
pub const DEBUG_MEMBER_CAP: u64 = 256 << 20;

/// Index of an interned string in [`Interner`]. 0 is the empty string.
pub type Sym = u32;

/// String interner: every distinct string is stored once.
#[derive(Debug, Clone)]
pub struct Interner {
    list: Vec<Box<str>>,
    map: HashMap<Box<str>, Sym>,
}

impl Default for Interner {
    fn default() -> Self {
        let mut i = Interner {
            list: Vec::new(),
            map: HashMap::new(),
        };
        i.intern("");
        i
    }
}

impl Interner {
    /// The symbol of `s`, adding it when new.
    pub fn intern(&mut self, s: &str) -> Sym {
        if let Some(&k) = self.map.get(s) {
            return k;
        }
        let k = self.list.len() as Sym;
        self.list.push(s.into());
        self.map.insert(s.into(), k);
        k
    }
    /// The string of `k` ("" for an unknown symbol).
    pub fn get(&self, k: Sym) -> &str {
        self.list.get(k as usize).map_or("", |s| s)
    }
    /// Number of distinct strings.
    pub fn len(&self) -> usize {
        self.list.len()
    }
    /// True when only the empty string is stored.
    pub fn is_empty(&self) -> bool {
        self.list.len() <= 1
    }
}

/// A range in one of [`DbgFile`]'s pools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Span {
    start: u32,
    len: u32,
}

impl Span {
    fn of<T>(pool: &[T], s: Span) -> &[T] {
        let a = s.start as usize;
        pool.get(a..a.saturating_add(s.len as usize)).unwrap_or(&[])
    }
}

/// One `.dbg` record (neff.md §9.2), compact: strings are [`Sym`]s, lists live in the file's
/// pools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DbgRecord {
    /// Field 1: record id (missing = 0).
    pub id: u64,
    /// Field 2: name.
    pub name: Sym,
    /// Field 6: kind (1, 2, 3 seen; meaning unknown).
    pub kind: u64,
    parents: Span,
    attrs: Span,
    frames: Span,
}

/// One decoded `.dbg` file (neff.md §9.1).
#[derive(Debug, Clone, Default)]
pub struct DbgFile {
    /// Member path in the NEFF.
    pub member: String,
    /// Field 1: description.
    pub description: String,
    /// Field 2: parent file name (one level up the chain).
    pub parent: String,
    /// Field 4: engine (neff.md §7.1), when present.
    pub engine: Option<u64>,
    /// Field 5: source-file table (`kernel_file` indexes it).
    pub files: Vec<Sym>,
    /// Field 7: kernel-name table (`kernel_name` indexes it).
    pub kernel_names: Vec<Sym>,
    /// Records in file order (asm: one per 64-byte slot, index = compiler pc).
    pub records: Vec<DbgRecord>,
    by_id: HashMap<u64, u32>,
    parent_pool: Vec<u64>,
    frame_pool: Vec<u64>,
    attr_pool: Vec<(Sym, Sym)>,
}

impl DbgFile {
    /// The record with id `id` (first one when ids repeat).
    pub fn by_id(&self, id: u64) -> Option<&DbgRecord> {
        self.by_id
            .get(&id)
            .and_then(|&i| self.records.get(i as usize))
    }
    /// Parent ids of `r` (field 3).
    pub fn parents(&self, r: &DbgRecord) -> &[u64] {
        Span::of(&self.parent_pool, r.parents)
    }
    /// Stack-frame ids of `r` (field 8, HLO only).
    pub fn frames(&self, r: &DbgRecord) -> &[u64] {
        Span::of(&self.frame_pool, r.frames)
    }
    /// String attributes of `r` (field 7) as (key, value) symbols.
    pub fn attrs(&self, r: &DbgRecord) -> &[(Sym, Sym)] {
        Span::of(&self.attr_pool, r.attrs)
    }
    /// The value of attribute `key` of `r`.
    pub fn attr<'a>(&self, s: &'a Interner, r: &DbgRecord, key: &str) -> Option<&'a str> {
        self.attrs(r)
            .iter()
            .find(|(k, _)| s.get(*k) == key)
            .map(|(_, v)| s.get(*v))
    }
}

/// Reads varints from a field that may be packed (wire type 2) or a single varint.
fn push_varints(v: Value<'_>, base: u64, out: &mut Vec<u64>) -> Result<()> {
    match v {
        Value::Bytes(b) => {
            let mut pos = 0;
            while pos < b.len() {
                out.push(pb::read_varint(b, &mut pos, base)?);
            }
        }
        other => {
            if let Some(x) = other.as_u64() {
                out.push(x);
            }
        }
    }
    Ok(())
}

fn text(v: &Value<'_>) -> String {
    v.as_str().unwrap_or_default()
}

fn span_from(start: usize, end: usize) -> Span {
    Span {
        start: start.min(u32::MAX as usize) as u32,
        len: end.saturating_sub(start).min(u32::MAX as usize) as u32,
    }
}

/// Decodes one `.dbg` file. Never fails: a wire fault ends the walk and is returned next to
/// everything decoded before it. The stack-frame index (field 6) is returned separately.
pub fn parse_dbg(
    buf: &[u8],
    member: &str,
    strings: &mut Interner,
) -> (DbgFile, Option<StackFrameIndex>, Option<Error>) {
    let mut f = DbgFile {
        member: member.to_string(),
        ..Default::default()
    };
    let mut sfi = None;
    let mut fault = None;
    for field in pb::fields(buf, 0) {
        let field = match field {
            Ok(x) => x,
            Err(e) => {
                fault = Some(e);
                break;
            }
        };
        let base = field.offset;
        match (field.number, field.value) {
            (1, v) => f.description = text(&v),
            (2, v) => f.parent = text(&v),
            (3, Value::Bytes(b)) => {
                if let Err(e) = parse_record(b, base, &mut f, strings) {
                    fault = Some(e);
                    break;
                }
            }
            (4, v) => f.engine = v.as_u64(),
            (5, v) => {
                let s = strings.intern(&text(&v));
                f.files.push(s);
            }
            (6, Value::Bytes(b)) => match parse_stack_frames(b, base) {
                Ok(x) => sfi = Some(x),
                Err(e) => {
                    fault = Some(e);
                    break;
                }
            },
            (7, v) => {
                let s = strings.intern(&text(&v));
                f.kernel_names.push(s);
            }
            _ => {}
        }
    }
    (f, sfi, fault)
}

fn parse_record(b: &[u8], base: u64, f: &mut DbgFile, strings: &mut Interner) -> Result<()> {
    let mut r = DbgRecord::default();
    let p0 = f.parent_pool.len();
    let a0 = f.attr_pool.len();
    let s0 = f.frame_pool.len();
    let mut res = Ok(());
    for field in pb::fields(b, base) {
        let field = match field {
            Ok(x) => x,
            Err(e) => {
                res = Err(e);
                break;
            }
        };
        match (field.number, field.value) {
            (1, v) => r.id = v.as_u64().unwrap_or(0),
            (2, v) => r.name = strings.intern(&text(&v)),
            (3, v) => {
                if let Err(e) = push_varints(v, field.offset, &mut f.parent_pool) {
                    res = Err(e);
                    break;
                }
            }
            (6, v) => r.kind = v.as_u64().unwrap_or(0),
            (7, Value::Bytes(kv)) => {
                let (mut k, mut val) = (String::new(), String::new());
                for x in pb::fields(kv, field.offset) {
                    match x {
                        Ok(x) if x.number == 1 => k = text(&x.value),
                        Ok(x) if x.number == 2 => val = text(&x.value),
                        Ok(_) => {}
                        Err(e) => {
                            res = Err(e);
                            break;
                        }
                    }
                }
                let (k, v) = (strings.intern(&k), strings.intern(&val));
                f.attr_pool.push((k, v));
            }
            (8, v) => {
                if let Err(e) = push_varints(v, field.offset, &mut f.frame_pool) {
                    res = Err(e);
                    break;
                }
            }
            _ => {}
        }
    }
    r.parents = span_from(p0, f.parent_pool.len());
    r.attrs = span_from(a0, f.attr_pool.len());
    r.frames = span_from(s0, f.frame_pool.len());
    let idx = f.records.len().min(u32::MAX as usize) as u32;
    f.by_id.entry(r.id).or_insert(idx);
    f.records.push(r);
    res
}

/// The framework stack-frame index (neff.md §9.4). All ids are 1-based positions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StackFrameIndex {
    /// Field 6.1: file names.
    pub file_names: Vec<String>,
    /// Field 6.2: function names.
    pub function_names: Vec<String>,
    /// Field 6.3: locations (file id, function id, line).
    pub locations: Vec<(u64, u64, u64)>,
    /// Field 6.4: frames (location id, parent frame id; 0 = root).
    pub frames: Vec<(u64, u64)>,
}

fn parse_stack_frames(b: &[u8], base: u64) -> Result<StackFrameIndex> {
    let mut s = StackFrameIndex::default();
    for field in pb::fields(b, base) {
        let field = field?;
        match (field.number, field.value) {
            (1, v) => s.file_names.push(text(&v)),
            (2, v) => s.function_names.push(text(&v)),
            (3, Value::Bytes(m)) => {
                let mut t = (0, 0, 0);
                for x in pb::fields(m, field.offset) {
                    let x = x?;
                    let n = x.value.as_u64().unwrap_or(0);
                    match x.number {
                        1 => t.0 = n,
                        2 => t.1 = n,
                        3 => t.2 = n,
                        _ => {}
                    }
                }
                s.locations.push(t);
            }
            (4, Value::Bytes(m)) => {
                let mut t = (0, 0);
                for x in pb::fields(m, field.offset) {
                    let x = x?;
                    let n = x.value.as_u64().unwrap_or(0);
                    match x.number {
                        1 => t.0 = n,
                        2 => t.1 = n,
                        _ => {}
                    }
                }
                s.frames.push(t);
            }
            _ => {}
        }
    }
    Ok(s)
}

/// Debug info of one engine of one subgraph.
#[derive(Debug, Clone)]
pub struct EngineDebug {
    /// NTFF engine order 0 – 4.
    pub engine: Engine,
    /// Byte 0 of every 64-byte slot of the NEFF stream (neff.md §7).
    pub opcodes: Vec<u8>,
    /// `debug_info_asm_<Engine>.dbg`: one record per slot.
    pub asm: Option<DbgFile>,
    /// `debug_info_backend_<Engine>.dbg`: BIR records.
    pub backend: Option<DbgFile>,
}

/// Debug info of one subgraph (physical core).
#[derive(Debug, Clone, Default)]
pub struct SubgraphDebug {
    /// `sg00`, `sg01`, …
    pub name: String,
    /// Subgraph number (`sg01` → 1), packed into `raw_bir_id` bits 63:48 and `sgNNNN` ids.
    pub number: u32,
    /// Per NTFF engine index (PE, ACT, POOL, DVE, SP).
    pub engines: [Option<EngineDebug>; 5],
}

/// One NKI call frame (`func` item, neff.md §10.2).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KernelFrame {
    pub id: i64,
    pub name: String,
    pub parent: Option<i64>,
    pub pcore_idx: i64,
    pub file: Option<String>,
    pub line: Option<i64>,
}

/// One loop iteration (`iter` item).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KernelIter {
    pub id: i64,
    pub var: String,
    /// `val` parsed as an integer (null when not numeric).
    pub value: Option<i64>,
    pub parent: Option<i64>,
    pub pcore_idx: i64,
    /// File of the innermost enclosing `func`.
    pub file: Option<String>,
    pub line: Option<i64>,
}

/// One traced instruction (`inst` item).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KernelInst {
    /// `<inst name>:<parent_tensorizer_id>` (neff.md §10.3).
    pub kernel_instruction_name: String,
    pub frame: Option<i64>,
    pub frame_depth: i64,
    pub iter: Option<i64>,
    pub iter_depth: i64,
    pub pcore_idx: i64,
    pub file: Option<String>,
    pub line: Option<i64>,
}

/// NKI kernel debug info of a NEFF (neff.md §10), all listed files merged; ids are row numbers
/// from 0 across files.
#[derive(Debug, Clone, Default)]
pub struct KernelDebug {
    /// (kernel name, parent_tensorizer_id, file name) per `debug_info_files[]` entry.
    pub kernels: Vec<(String, Option<i64>, String)>,
    pub frames: Vec<KernelFrame>,
    pub iters: Vec<KernelIter>,
    pub insts: Vec<KernelInst>,
    /// `kernel_instruction_name` → index into `insts`.
    pub by_name: HashMap<String, usize>,
}

/// Everything the debug files of one NEFF say, ready for instruction attribution
/// (`crate::ntff::attribution`) and the debug tables ([`write_debug_tables`]).
#[derive(Debug, Clone, Default)]
pub struct NeffDebug {
    pub strings: Interner,
    /// In `Neff::subgraphs` order.
    pub subgraphs: Vec<SubgraphDebug>,
    /// Top-level `debug_info/*.dbg*` files (Penguin, HLO, framework), by member path.
    pub top: BTreeMap<String, DbgFile>,
    /// `debug_info_stack_frame_index.dbg` field 6.
    pub stack_frames: Option<StackFrameIndex>,
    /// `kernel_debug_info.json` and the files it lists.
    pub kernel: Option<KernelDebug>,
    /// Non-fatal findings (missing files, wire faults with offsets).
    pub warnings: Vec<String>,
}

impl NeffDebug {
    /// The subgraph named `name`.
    pub fn subgraph(&self, name: &str) -> Option<&SubgraphDebug> {
        self.subgraphs.iter().find(|s| s.name == name)
    }
    /// The top-level file a `parent` field names: exact member base name, else the one whose
    /// base name starts with it (on disk `debug_info_penguin.dbg_sg000000`, neff.md §9.1),
    /// preferring the suffix of subgraph `sg`.
    pub fn parent_file(&self, parent: &str, sg: u32) -> Option<&DbgFile> {
        if parent.is_empty() {
            return None;
        }
        let base = |m: &str| m.rsplit('/').next().unwrap_or(m).to_string();
        let mut fallback = None;
        for (m, f) in &self.top {
            let b = base(m);
            if b == parent || b == format!("{parent}_sg{sg:06}") {
                return Some(f);
            }
            if fallback.is_none() && b.starts_with(parent) {
                fallback = Some(f);
            }
        }
        fallback
    }
}

/// True for the members [`load`] reads: pass it as `OpenOptions::keep` to buffer them in the
/// single pass of `neff::open_with`.
pub fn keep_debug(name: &str) -> bool {
    let base = name.rsplit('/').next().unwrap_or(name);
    base.contains(".dbg") || base == "kernel_debug_info.json" || base.ends_with(".debuginfo.json")
}

/// One-call constructor: reads every debug member of `neff` (from `Neff::kept` when it was
/// opened with `keep: Some(keep_debug)`, otherwise with one extra pass over the payload) and
/// decodes it. Errors: none for bad debug data (warnings instead); only a payload walk that
/// cannot start.
pub fn load<S: ByteSource + ?Sized>(src: &S, neff: &Neff) -> Result<NeffDebug> {
    let wanted: Vec<&str> = neff
        .members
        .iter()
        .map(|m| m.name.as_str())
        .filter(|n| keep_debug(n))
        .collect();
    let missing: Vec<&str> = wanted
        .iter()
        .copied()
        .filter(|n| !neff.kept.contains_key(*n))
        .collect();
    let mut extra = BTreeMap::new();
    let mut warnings = Vec::new();
    if !missing.is_empty() {
        let start = neff.header.header_size;
        let end = start.saturating_add(neff.header.data_size).min(src.len());
        let mut want = |n: &str, _| {
            if missing.contains(&n) {
                archive::Want::Buffer
            } else {
                archive::Want::Skip
            }
        };
        let s = archive::scan(
            src,
            start,
            end,
            neff.payload,
            false,
            DEBUG_MEMBER_CAP,
            &mut want,
        );
        if let Some(e) = s.fault {
            warnings.push(format!("debug members: payload walk stopped: {e}"));
        }
        warnings.extend(s.warnings);
        extra = s.buffers;
    }
    let get = |n: &str| neff.kept.get(n).or_else(|| extra.get(n)).map(Vec::as_slice);
    let mut d = from_members(neff, &get);
    d.warnings.splice(0..0, warnings);
    Ok(d)
}

/// Builds [`NeffDebug`] from member bytes given by `get(path)` (no I/O; used by [`load`] and by
/// tests with synthetic members).
pub fn from_members<'a>(neff: &Neff, get: &dyn Fn(&str) -> Option<&'a [u8]>) -> NeffDebug {
    let mut d = NeffDebug::default();
    let parse = |d: &mut NeffDebug, name: &str| -> Option<DbgFile> {
        let Some(buf) = get(name) else {
            d.warnings.push(format!("debug file {name} missing"));
            return None;
        };
        let (f, sfi, fault) = parse_dbg(buf, name, &mut d.strings);
        if let Some(e) = fault {
            d.warnings
                .push(format!("{name}: {e}; {} records kept", f.records.len()));
        }
        if sfi.is_some() {
            d.stack_frames = sfi;
        }
        Some(f)
    };
    for m in &neff.members {
        if m.name.starts_with("debug_info/") && m.name.contains(".dbg") {
            if let Some(f) = parse(&mut d, &m.name) {
                d.top.insert(m.name.clone(), f);
            }
        }
    }
    for sg in &neff.subgraphs {
        let number = sg
            .name
            .trim_start_matches("sg")
            .parse::<u32>()
            .unwrap_or(sg.pcore_idx);
        let mut s = SubgraphDebug {
            name: sg.name.clone(),
            number,
            engines: Default::default(),
        };
        for es in &sg.engines {
            let asm = es.asm_dbg.first().and_then(|n| parse(&mut d, n));
            let backend = es.dbg.first().and_then(|n| parse(&mut d, n));
            if let Some(slot) = s.engines.get_mut(es.engine.ntff_index()) {
                *slot = Some(EngineDebug {
                    engine: es.engine,
                    opcodes: es.opcodes.clone(),
                    asm,
                    backend,
                });
            }
        }
        d.subgraphs.push(s);
    }
    if let Some(idx) = get("kernel_debug_info.json") {
        d.kernel = Some(load_kernel(idx, get, &mut d.warnings));
    }
    d
}

fn json_i64(v: &serde_json::Value) -> Option<i64> {
    match v {
        serde_json::Value::Number(n) => n.as_i64(),
        serde_json::Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn json_str(v: Option<&serde_json::Value>) -> Option<String> {
    match v? {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Reads `kernel_debug_info.json` and its listed files (neff.md §10.2 – §10.4).
fn load_kernel<'a>(
    index: &[u8],
    get: &dyn Fn(&str) -> Option<&'a [u8]>,
    warnings: &mut Vec<String>,
) -> KernelDebug {
    let mut k = KernelDebug::default();
    let v: serde_json::Value = match serde_json::from_slice(index) {
        Ok(v) => v,
        Err(e) => {
            warnings.push(format!("kernel_debug_info.json: {e}"));
            return k;
        }
    };
    let entries = match v.get("debug_info_files") {
        Some(serde_json::Value::Array(a)) => a.clone(),
        _ => match &v {
            serde_json::Value::Array(a) => a.clone(),
            _ => vec![v.clone()],
        },
    };
    for e in entries {
        let Some(file) = json_str(e.get("file_name")) else {
            continue;
        };
        let kernel = json_str(e.get("kernel_name")).unwrap_or_default();
        let ptid = e.get("parent_tensorizer_id").and_then(json_i64);
        k.kernels.push((kernel, ptid, file.clone()));
        let Some(bytes) = get(&file) else {
            warnings.push(format!("kernel debug file {file} missing"));
            continue;
        };
        match serde_json::from_slice::<serde_json::Value>(bytes) {
            Ok(tree) => add_kernel_tree(&mut k, &tree, ptid.unwrap_or(0)),
            Err(e) => warnings.push(format!("{file}: {e}")),
        }
    }
    k
}

/// Finds the per-core list: a top-level array, else the first array found inside an object.
fn first_array(v: &serde_json::Value) -> Option<&Vec<serde_json::Value>> {
    match v {
        serde_json::Value::Array(a) => Some(a),
        serde_json::Value::Object(o) => o.values().find_map(first_array),
        _ => None,
    }
}

struct Walk<'k> {
    k: &'k mut KernelDebug,
    ptid: i64,
    pcore: i64,
    frames: Vec<(i64, Option<String>)>,
    iters: Vec<i64>,
}

/// Item kind and body: `{"func": {...}}` (one key) or a flat item with `kind`/`type`.
fn item_kind(v: &serde_json::Value) -> Option<(String, &serde_json::Value)> {
    let o = v.as_object()?;
    for key in ["func", "iter", "inst"] {
        if let Some(b) = o.get(key) {
            if b.is_object() {
                return Some((key.to_string(), b));
            }
        }
    }
    for d in ["kind", "type"] {
        if let Some(serde_json::Value::String(s)) = o.get(d) {
            return Some((s.to_lowercase(), v));
        }
    }
    None
}

impl Walk<'_> {
    fn items(&mut self, items: &[serde_json::Value], depth: usize) {
        if depth > 256 {
            return;
        }
        for it in items {
            self.item(it, depth);
        }
    }
    fn children(&mut self, body: &serde_json::Value, depth: usize) {
        if let Some(serde_json::Value::Array(c)) = body.get("children") {
            self.items(c, depth + 1);
        }
    }
    fn item(&mut self, it: &serde_json::Value, depth: usize) {
        let Some((kind, body)) = item_kind(it) else {
            // Unknown shape: still look for nested items.
            if let Some(a) = it.as_array() {
                self.items(a, depth + 1);
            }
            return;
        };
        let line = body.get("line").and_then(json_i64);
        let file_here = || self.frames.last().and_then(|f| f.1.clone());
        match kind.as_str() {
            "func" | "function" | "frame" => {
                let id = self.k.frames.len() as i64;
                let file = json_str(body.get("file")).or_else(file_here);
                self.k.frames.push(KernelFrame {
                    id,
                    name: json_str(body.get("name")).unwrap_or_default(),
                    parent: self.frames.last().map(|f| f.0),
                    pcore_idx: self.pcore,
                    file: file.clone(),
                    line,
                });
                self.frames.push((id, file));
                self.children(body, depth);
                self.frames.pop();
            }
            "iter" | "loop" | "iteration" => {
                let id = self.k.iters.len() as i64;
                self.k.iters.push(KernelIter {
                    id,
                    var: json_str(body.get("var").or(body.get("name"))).unwrap_or_default(),
                    value: body.get("val").or(body.get("value")).and_then(json_i64),
                    parent: self.iters.last().copied(),
                    pcore_idx: self.pcore,
                    file: file_here(),
                    line,
                });
                self.iters.push(id);
                self.children(body, depth);
                self.iters.pop();
            }
            "inst" | "instruction" => {
                let name = json_str(body.get("name")).unwrap_or_default();
                let kin = format!("{name}:{}", self.ptid);
                let idx = self.k.insts.len();
                self.k.by_name.entry(kin.clone()).or_insert(idx);
                self.k.insts.push(KernelInst {
                    kernel_instruction_name: kin,
                    frame: self.frames.last().map(|f| f.0),
                    frame_depth: self.frames.len() as i64,
                    iter: self.iters.last().copied(),
                    iter_depth: self.iters.len() as i64,
                    pcore_idx: self.pcore,
                    file: file_here(),
                    line,
                });
            }
            _ => self.children(body, depth),
        }
    }
}

fn add_kernel_tree(k: &mut KernelDebug, tree: &serde_json::Value, ptid: i64) {
    let Some(cores) = first_array(tree) else {
        return;
    };
    for (i, core) in cores.iter().enumerate() {
        // `{"lnc": n, "info": [...]}`; a bare item list counts as one core.
        let (pcore, items): (i64, Vec<serde_json::Value>) = match core.get("info") {
            Some(serde_json::Value::Array(a)) => (
                core.get("lnc")
                    .and_then(json_i64)
                    .map_or(i as i64, |l| l.saturating_sub(1).max(0)),
                a.clone(),
            ),
            _ => (0, vec![core.clone()]),
        };
        let mut w = Walk {
            k,
            ptid,
            pcore,
            frames: Vec::new(),
            iters: Vec::new(),
        };
        w.items(&items, 0);
    }
}

crate::cols!(mod file_name = crate::tables::explorer::STACK_FRAME_FILE_NAME {
    ID: Str = "id",
    NAME: Str = "name",
});
crate::cols!(mod function_name = crate::tables::explorer::STACK_FRAME_FUNCTION_NAME {
    ID: Str = "id",
    NAME: Str = "name",
});
crate::cols!(mod location = crate::tables::explorer::STACK_FRAME_FILE_LOCATION {
    ID: Str = "id",
    FILE: I32 = "file_name_id",
    FUNCTION: I32 = "function_name_id",
    LINE: I32 = "line_number",
});
crate::cols!(mod frame = crate::tables::explorer::STACK_FRAME {
    ID: Str = "id",
    LOCATION: I32 = "file_location_id",
    PARENT: Str = "parent_frame_id",
});
crate::cols!(mod kinst = crate::tables::explorer::KERNEL_INSTRUCTIONS {
    NAME: Str = "kernel_instruction_name",
    FRAME: I64 = "stack_frame_id",
    FRAME_DEPTH: I64 = "stack_frame_depth",
    ITER: I64 = "iteration_variables_id",
    ITER_DEPTH: I64 = "iteration_variable_depth",
    PCORE: I64 = "pcore_idx",
    FILE: Str = "file_path",
    LINE: I64 = "line_number",
});
crate::cols!(mod kframe = crate::tables::explorer::KERNEL_STACK_FRAMES {
    ID: I64 = "stack_frame_id",
    NAME: Str = "fully_qualified_function_name",
    PARENT: I64 = "parent_stack_frame_id",
    PCORE: I64 = "pcore_idx",
    FILE: Str = "file_path",
    LINE: I64 = "line_number",
});
crate::cols!(mod kiter = crate::tables::explorer::KERNEL_ITERATION_VARIABLES {
    ID: I64 = "iteration_variable_id",
    VAR: Str = "variable_name",
    VALUE: I64 = "variable_value",
    PARENT: I64 = "parent_iteration_variable_id",
    PCORE: I64 = "pcore_idx",
    FILE: Str = "file_path",
    LINE: I64 = "line_number",
});

/// Writes `StackFrame`, `StackFrameFileLocation`, `StackFrameFileName`, `StackFrameFunctionName`
/// (from the stack-frame index, neff.md §9.4; ids are the 1-based positions as text) and
/// `KernelInstructions`, `KernelStackFrames`, `KernelIterationVariables` (neff.md §10.4). Tables
/// without rows are not written. Errors: only from the sink.
pub fn write_debug_tables(d: &NeffDebug, sink: &mut dyn TableSink) -> Result<()> {
    let id = |i: usize| (i + 1).to_string();
    if let Some(s) = &d.stack_frames {
        // Two (id, name) tables of the same shape.
        for (def, [cid, cname], names) in [
            (
                &explorer::STACK_FRAME_FILE_NAME,
                [file_name::ID, file_name::NAME],
                &s.file_names,
            ),
            (
                &explorer::STACK_FRAME_FUNCTION_NAME,
                [function_name::ID, function_name::NAME],
                &s.function_names,
            ),
        ] {
            let mut b = TableBuilder::new(def);
            for (i, n) in names.iter().enumerate() {
                b.set(cid, id(i).as_str());
                b.set(cname, n.as_str());
                b.end_row_into(sink)?;
            }
            b.finish_into(sink)?;
        }
        let mut b = TableBuilder::new(&explorer::STACK_FRAME_FILE_LOCATION);
        for (i, &(f, func, line)) in s.locations.iter().enumerate() {
            b.set(location::ID, id(i).as_str());
            b.set(location::FILE, i32_cell(Some(f)));
            b.set(location::FUNCTION, i32_cell(Some(func)));
            b.set(location::LINE, i32_cell(Some(line)));
            b.end_row_into(sink)?;
        }
        b.finish_into(sink)?;
        let mut b = TableBuilder::new(&explorer::STACK_FRAME);
        for (i, &(loc, parent)) in s.frames.iter().enumerate() {
            b.set(frame::ID, id(i).as_str());
            b.set(frame::LOCATION, i32_cell(Some(loc)));
            b.set(frame::PARENT, parent.to_string().as_str());
            b.end_row_into(sink)?;
        }
        b.finish_into(sink)?;
    }
    if let Some(k) = &d.kernel {
        let mut b = TableBuilder::new(&explorer::KERNEL_INSTRUCTIONS);
        for r in &k.insts {
            b.set(kinst::NAME, r.kernel_instruction_name.as_str());
            b.set(kinst::FRAME, r.frame);
            b.set(kinst::FRAME_DEPTH, r.frame_depth);
            b.set(kinst::ITER, r.iter);
            b.set(kinst::ITER_DEPTH, r.iter_depth);
            b.set(kinst::PCORE, r.pcore_idx);
            b.set(kinst::FILE, r.file.as_deref());
            b.set(kinst::LINE, r.line);
            b.end_row_into(sink)?;
        }
        b.finish_into(sink)?;
        let mut b = TableBuilder::new(&explorer::KERNEL_STACK_FRAMES);
        for r in &k.frames {
            b.set(kframe::ID, r.id);
            b.set(kframe::NAME, r.name.as_str());
            b.set(kframe::PARENT, r.parent);
            b.set(kframe::PCORE, r.pcore_idx);
            b.set(kframe::FILE, r.file.as_deref());
            b.set(kframe::LINE, r.line);
            b.end_row_into(sink)?;
        }
        b.finish_into(sink)?;
        let mut b = TableBuilder::new(&explorer::KERNEL_ITERATION_VARIABLES);
        for r in &k.iters {
            b.set(kiter::ID, r.id);
            b.set(kiter::VAR, r.var.as_str());
            b.set(kiter::VALUE, r.value);
            b.set(kiter::PARENT, r.parent);
            b.set(kiter::PCORE, r.pcore_idx);
            b.set(kiter::FILE, r.file.as_deref());
            b.set(kiter::LINE, r.line);
            b.end_row_into(sink)?;
        }
        b.finish_into(sink)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pb::{put_bytes, put_uint};
    use crate::tables::Tables;

    fn record(id: u64, name: &str, parents: &[u64], attrs: &[(&str, &str)]) -> Vec<u8> {
        let mut r = Vec::new();
        put_uint(&mut r, 1, id);
        put_bytes(&mut r, 2, name.as_bytes());
        let mut p = Vec::new();
        for &x in parents {
            pb::put_varint(&mut p, x);
        }
        if !p.is_empty() {
            put_bytes(&mut r, 3, &p);
        }
        for (k, v) in attrs {
            let mut kv = Vec::new();
            put_bytes(&mut kv, 1, k.as_bytes());
            put_bytes(&mut kv, 2, v.as_bytes());
            put_bytes(&mut r, 7, &kv);
        }
        r
    }

    #[test]
    fn dbg_file_roundtrip_and_truncation() {
        let mut f = Vec::new();
        put_bytes(&mut f, 1, b"Debug info for BIR");
        put_bytes(&mut f, 2, b"debug_info_penguin.dbg");
        put_bytes(
            &mut f,
            3,
            &record(
                249,
                "I-60-0",
                &[60],
                &[("kernel_file", "0"), ("kernel_line", "17")],
            ),
        );
        put_bytes(&mut f, 3, &record(0, "I-1-0", &[], &[]));
        put_uint(&mut f, 4, 6);
        put_bytes(&mut f, 5, b"k.py");
        let mut s = Interner::default();
        let (d, sfi, fault) = parse_dbg(&f, "x.dbg", &mut s);
        assert!(fault.is_none() && sfi.is_none());
        assert_eq!(d.parent, "debug_info_penguin.dbg");
        assert_eq!(d.engine, Some(6));
        assert_eq!(d.records.len(), 2);
        let r = d.by_id(249).unwrap();
        assert_eq!(s.get(r.name), "I-60-0");
        assert_eq!(d.parents(r), &[60]);
        assert_eq!(d.attr(&s, r, "kernel_line"), Some("17"));
        assert_eq!(s.get(d.files[0]), "k.py");
        assert!(d.by_id(0).is_some());
        // Truncated: records before the fault are kept, the fault names an offset.
        let (d, _, fault) = parse_dbg(&f[..f.len() - 3], "x.dbg", &mut s);
        assert_eq!(d.records.len(), 2);
        assert!(fault.unwrap().offset().is_some());
    }

    #[test]
    fn stack_frame_index() {
        let mut idx = Vec::new();
        put_bytes(&mut idx, 1, b"model.py");
        put_bytes(&mut idx, 2, b"forward");
        let mut loc = Vec::new();
        put_uint(&mut loc, 1, 1);
        put_uint(&mut loc, 2, 1);
        put_uint(&mut loc, 3, 42);
        put_bytes(&mut idx, 3, &loc);
        let mut fr = Vec::new();
        put_uint(&mut fr, 1, 1);
        put_bytes(&mut idx, 4, &fr);
        let mut f = Vec::new();
        put_bytes(&mut f, 6, &idx);
        let mut s = Interner::default();
        let (_, sfi, fault) = parse_dbg(&f, "sf.dbg", &mut s);
        assert!(fault.is_none());
        let sfi = sfi.unwrap();
        assert_eq!(sfi.locations, vec![(1, 1, 42)]);
        assert_eq!(sfi.frames, vec![(1, 0)]);
        let d = NeffDebug {
            stack_frames: Some(sfi),
            ..Default::default()
        };
        let mut t = Tables::default();
        write_debug_tables(&d, &mut t).unwrap();
        for n in [
            "StackFrame",
            "StackFrameFileLocation",
            "StackFrameFileName",
            "StackFrameFunctionName",
        ] {
            assert_eq!(t.rows(n), 1, "{n}");
        }
    }

    fn tree(json: &str, ptid: i64) -> KernelDebug {
        let mut k = KernelDebug::default();
        add_kernel_tree(&mut k, &serde_json::from_str(json).unwrap(), ptid);
        k
    }

    #[test]
    fn kernel_tree_shapes() {
        // The sample shape (neff.md §10.2).
        let k = tree(
            r#"[{"lnc":1,"info":[{"func":{"name":"m.k","line":3,"file":"/k.py","children":[
                {"iter":{"var":"i","val":"2","line":5,"children":[{"inst":{"name":"inst.7","line":6}}]}},
                {"inst":{"line":9,"name":"inst.8"}}]}}]}]"#,
            8,
        );
        assert_eq!(k.frames.len(), 1);
        assert_eq!(k.iters[0].value, Some(2));
        assert_eq!(k.iters[0].file.as_deref(), Some("/k.py"));
        let i = &k.insts[k.by_name["inst.7:8"]];
        assert_eq!(
            (i.frame, i.frame_depth, i.iter, i.iter_depth),
            (Some(0), 1, Some(0), 1)
        );
        assert_eq!((i.pcore_idx, i.line), (0, Some(6)));
        let i = &k.insts[k.by_name["inst.8:8"]];
        assert_eq!((i.iter, i.iter_depth), (None, 0));
        // Top-level object wrapping the array; flat items with a `kind` discriminator;
        // non-numeric iteration value.
        let k = tree(
            r#"{"version":2,"cores":[{"lnc":2,"info":[
                {"kind":"func","name":"f","file":"/a.py","line":1,"children":[
                  {"type":"iter","var":"j","val":"x","children":[{"kind":"inst","name":"inst.1"}]}]}]}]}"#,
            0,
        );
        assert_eq!((k.frames.len(), k.iters.len(), k.insts.len()), (1, 1, 1));
        assert_eq!(k.iters[0].value, None);
        assert_eq!(k.insts[0].pcore_idx, 1);
        assert_eq!(k.insts[0].kernel_instruction_name, "inst.1:0");
        // Garbage shapes: nothing, no panic.
        for j in [
            "3",
            "{}",
            "[1,2]",
            r#"[{"info":{"x":1}}]"#,
            r#"[{"func":5}]"#,
        ] {
            let k = tree(j, 0);
            assert!(k.insts.is_empty());
        }
    }
}
