//! PyTorch / torch-neuronx allocator memory snapshots (`torch.cuda.memory._dump_snapshot`, a
//! pickle) → neuronscope's `Memory*` tables (spec/framework-inputs.md §3; docs/formats.md
//! "Memory snapshots").
//!
//! Explorer's PyTorch Allocator tab uses tables whose names are not public, so the six tables
//! here are neuronscope's own, named in Explorer's style: [`MEMORY_ALLOCATOR_EVENT`],
//! [`MEMORY_SEGMENT`], [`MEMORY_BLOCK`], [`MEMORY_STACK_FRAME`], [`MEMORY_ANNOTATION`],
//! [`MEMORY_ALLOCATOR_SETTINGS`]. Every key of the snapshot is optional; a missing key is a null
//! cell.
//!
//! Streaming: trace entries (`device_traces[d][i]`) are turned into rows while the pickle is read
//! and are not kept (see [`pickle`]); segments, blocks and stacks are kept (allocator state at
//! snapshot time, far smaller). Stacks are interned by content: every distinct sequence of
//! frames gets one `stack_id`, whether the pickle shares the frames objects or repeats them.
//!
//! Hostile values (issue 13's fuzzing finds). The memo lets a pickle share objects, so a value
//! can contain itself, nest arbitrarily deep or refer to one sub-list many times at every level.
//! Values rendered as text (settings, pool ids) stop at a cycle, at [`RENDER_MAX_DEPTH`] levels
//! and at [`RENDER_MAX_NODES`] values / [`RENDER_MAX_CHARS`] bytes, written `...`, with one
//! `MEMORY_SNAPSHOT_VALUE_CUT` warning per kind of cut naming the value and the offset of the
//! container. Rows reached through shared objects (one segment listed 10 000 times) are bounded
//! per section by a work allowance of [`BUDGET_BASE`] + [`BUDGET_PER_BYTE`] × file size, past
//! which a `MEMORY_SNAPSHOT_AMPLIFIED` warning says how many rows were left out; shared frames
//! lists are interned once per object.

pub mod pickle;
pub mod write;

use rustc_hash::FxHashMap as HashMap;

use crate::error::{Code, Problem, Result};
use crate::source::ByteSource;
use crate::tables::{FieldDef, TableBuilder, TableDef, TableSink, Ty};
use crate::util::i32_cell;
use pickle::{Arena, Hook, Kind, Limits, PathEl, Val};

macro_rules! field {
    ($name:expr, $ty:ident, $unit:expr, $desc:expr) => {
        FieldDef {
            name: $name,
            ty: Ty::$ty,
            unit: $unit,
            required: false,
            description: $desc,
            enum_name: "",
        }
    };
}

/// `MemoryAllocatorEvent`: one row per allocator trace entry (`device_traces[device][i]`).
pub static MEMORY_ALLOCATOR_EVENT: TableDef = TableDef {
    name: "MemoryAllocatorEvent",
    description: "Allocator trace events of a PyTorch/torch-neuronx memory snapshot (device_traces), in file order per device.",
    fields: &[
        field!("timestamp", I64, "ns", "Event time: snapshot time_us x 1000 (host clock, epoch)."),
        field!("device", I32, "", "Device index (position in device_traces)."),
        field!("trace_index", I64, "", "Position of the entry in its device's trace list."),
        field!("action", Str, "", "alloc, free_requested, free_completed, segment_alloc, segment_free, segment_map, segment_unmap, oom, snapshot or annotate."),
        field!("address", I64, "", "Block or segment address (addr); null for oom."),
        field!("size", I64, "B", "Bytes allocated, freed or requested (oom)."),
        field!("stream", I64, "", "Stream the allocation belongs to."),
        field!("stack_id", I64, "", "-> MemoryStackFrame.stack_id of the entry's frames; null when it has none."),
        field!("pool_id", Str, "", "Memory pool id, written as 'a,b' from the 2-tuple."),
        field!("device_free", I64, "B", "oom only: free device bytes reported at the failure."),
        field!("user_metadata", Str, "", "User metadata string attached to the entry."),
        field!("category", Str, "", "Allocation category, when recorded."),
        field!("compile_context", Str, "", "torch.compile context, when recorded."),
        field!("allocated_delta_bytes", I64, "B", "Running sum of alloc minus free_completed (and free) sizes on this device since its first trace entry; add MemSnapReport.devices[].baseline_allocated_bytes for the absolute value."),
        field!("reserved_delta_bytes", I64, "B", "Running sum of segment_alloc/segment_map minus segment_free/segment_unmap sizes since the first trace entry; add baseline_reserved_bytes for the absolute value."),
    ],
};

/// `MemorySegment`: allocator segments at snapshot time (`segments`).
pub static MEMORY_SEGMENT: TableDef = TableDef {
    name: "MemorySegment",
    description: "Allocator segments (device memory reserved from the driver) at snapshot time.",
    fields: &[
        field!(
            "segment_index",
            I64,
            "",
            "Position in the snapshot's segments list (key of MemoryBlock)."
        ),
        field!("device", I32, "", "Device index."),
        field!("address", I64, "", "Segment start address."),
        field!("total_size", I64, "B", "Reserved bytes."),
        field!("allocated_size", I64, "B", "Bytes in allocated blocks."),
        field!(
            "active_size",
            I64,
            "B",
            "Bytes in active blocks (allocated or awaiting free)."
        ),
        field!(
            "requested_size",
            I64,
            "B",
            "Bytes requested by callers (before rounding)."
        ),
        field!("stream", I64, "", "Stream the segment belongs to."),
        field!("segment_type", Str, "", "small or large pool."),
        field!(
            "segment_pool_id",
            Str,
            "",
            "Memory pool id, written as 'a,b'."
        ),
        field!(
            "is_expandable",
            Bool,
            "",
            "Expandable segment (mapped in pages)."
        ),
        field!(
            "stack_id",
            I64,
            "",
            "-> MemoryStackFrame.stack_id of the segment allocation."
        ),
        field!("block_count", I64, "", "Number of blocks in the segment."),
    ],
};

/// `MemoryBlock`: blocks of every segment at snapshot time.
pub static MEMORY_BLOCK: TableDef = TableDef {
    name: "MemoryBlock",
    description: "Blocks inside allocator segments at snapshot time.",
    fields: &[
        field!("segment_index", I64, "", "-> MemorySegment.segment_index."),
        field!(
            "block_index",
            I64,
            "",
            "Position of the block in its segment."
        ),
        field!("device", I32, "", "Device index (of the segment)."),
        field!(
            "address",
            I64,
            "",
            "Block address (address/addr, else segment address + preceding sizes)."
        ),
        field!(
            "offset",
            I64,
            "B",
            "Offset of the block from its segment's address."
        ),
        field!(
            "size",
            I64,
            "B",
            "Block size (legacy files: history[0].real_size)."
        ),
        field!("requested_size", I64, "B", "Bytes the caller requested."),
        field!(
            "state",
            Str,
            "",
            "active_allocated, active_pending_free (active_awaiting_free) or inactive."
        ),
        field!(
            "stack_id",
            I64,
            "",
            "-> MemoryStackFrame.stack_id (frames, legacy history[0].frames)."
        ),
    ],
};

/// `MemoryStackFrame`: the interned stacks, one row per frame.
pub static MEMORY_STACK_FRAME: TableDef = TableDef {
    name: "MemoryStackFrame",
    description: "Stacks referenced by events, segments and blocks; one row per frame, stored once per distinct stack.",
    fields: &[
        field!("stack_id", I64, "", "Stack id (0-based, in order of first use)."),
        field!("depth", I32, "", "Index in the snapshot's frames list (0 = first listed, the innermost call)."),
        field!("filename", Str, "", "Source file."),
        field!("line", I64, "", "Line number."),
        field!("name", Str, "", "Function name."),
        field!("fx_node_op", Str, "", "torch.fx node op, when recorded."),
        field!("fx_node_name", Str, "", "torch.fx node name, when recorded."),
        field!("fx_original_trace", Str, "", "torch.fx original trace, when recorded."),
    ],
};

/// `MemoryAnnotation`: `external_annotations` (e.g. `ProfilerStep#N` START/END).
pub static MEMORY_ANNOTATION: TableDef = TableDef {
    name: "MemoryAnnotation",
    description: "User annotations recorded with the snapshot (external_annotations).",
    fields: &[
        field!("timestamp", I64, "ns", "time_us x 1000."),
        field!("device", I32, "", "Device index, when recorded."),
        field!("name", Str, "", "Annotation name, e.g. ProfilerStep#3."),
        field!("stage", Str, "", "START or END."),
    ],
};

/// `MemoryAllocatorSettings`: `allocator_settings` as key/value text.
pub static MEMORY_ALLOCATOR_SETTINGS: TableDef = TableDef {
    name: "MemoryAllocatorSettings",
    description:
        "Allocator configuration at snapshot time; nested dicts flattened to parent.child keys.",
    fields: &[
        field!(
            "key",
            Str,
            "",
            "Setting name, e.g. max_split_size or roundup_power2_divisions.1."
        ),
        field!(
            "value",
            Str,
            "",
            "Value as text (Python-style: True/False/None, numbers in decimal)."
        ),
    ],
};

crate::cols!(mod seg = super::MEMORY_SEGMENT {
    INDEX: I64 = "segment_index",
    DEVICE: I32 = "device",
    ADDRESS: I64 = "address",
    TOTAL: I64 = "total_size",
    ALLOCATED: I64 = "allocated_size",
    ACTIVE: I64 = "active_size",
    REQUESTED: I64 = "requested_size",
    STREAM: I64 = "stream",
    TYPE: Str = "segment_type",
    POOL: Str = "segment_pool_id",
    EXPANDABLE: Bool = "is_expandable",
    STACK: I64 = "stack_id",
    BLOCKS: I64 = "block_count",
});
crate::cols!(mod blk = super::MEMORY_BLOCK {
    SEGMENT: I64 = "segment_index",
    INDEX: I64 = "block_index",
    DEVICE: I32 = "device",
    ADDRESS: I64 = "address",
    OFFSET: I64 = "offset",
    SIZE: I64 = "size",
    REQUESTED: I64 = "requested_size",
    STATE: Str = "state",
    STACK: I64 = "stack_id",
});
crate::cols!(mod frame = super::MEMORY_STACK_FRAME {
    STACK: I64 = "stack_id",
    DEPTH: I32 = "depth",
    FILE: Str = "filename",
    LINE: I64 = "line",
    NAME: Str = "name",
    FX_OP: Str = "fx_node_op",
    FX_NAME: Str = "fx_node_name",
    FX_TRACE: Str = "fx_original_trace",
});
crate::cols!(mod ann = super::MEMORY_ANNOTATION {
    TS: I64 = "timestamp",
    DEVICE: I32 = "device",
    NAME: Str = "name",
    STAGE: Str = "stage",
});
crate::cols!(mod settings = super::MEMORY_ALLOCATOR_SETTINGS {
    KEY: Str = "key",
    VALUE: Str = "value",
});

/// All memory-snapshot tables.
pub static ALL: [&TableDef; 6] = [
    &MEMORY_ALLOCATOR_EVENT,
    &MEMORY_SEGMENT,
    &MEMORY_BLOCK,
    &MEMORY_STACK_FRAME,
    &MEMORY_ANNOTATION,
    &MEMORY_ALLOCATOR_SETTINGS,
];

/// Per-device numbers of a snapshot.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct DeviceReport {
    pub device: i64,
    pub events: u64,
    pub first_ts_ns: Option<i64>,
    pub last_ts_ns: Option<i64>,
    /// Allocated bytes before the first trace entry: final allocated (segments) − net trace delta.
    pub baseline_allocated_bytes: i64,
    /// Reserved bytes before the first trace entry.
    pub baseline_reserved_bytes: i64,
    /// Peak of baseline + running allocated delta over the trace (bytes).
    pub peak_allocated_bytes: i64,
    /// Peak of baseline + running reserved delta (bytes).
    pub peak_reserved_bytes: i64,
    /// Sum of non-inactive block sizes in this device's segments (bytes).
    pub final_allocated_bytes: i64,
    /// Sum of this device's segment sizes (bytes).
    pub final_reserved_bytes: i64,
    pub ooms: u64,
}

/// What [`process`] found (serialisable for the page).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct MemSnapReport {
    pub file: String,
    /// Pickle protocol from the `PROTO` opcode.
    pub protocol: Option<u8>,
    pub events: u64,
    pub segments: u64,
    pub blocks: u64,
    pub stacks: u64,
    pub frames: u64,
    pub annotations: u64,
    pub settings: u64,
    pub ooms: u64,
    pub first_ts_ns: Option<i64>,
    pub last_ts_ns: Option<i64>,
    /// Largest per-device peak (bytes).
    pub peak_allocated_bytes: Option<i64>,
    pub peak_reserved_bytes: Option<i64>,
    pub devices: Vec<DeviceReport>,
    /// Values the pickle arena held at the end (items + objects), a measure of memory use.
    pub retained_values: u64,
    /// Most values the reader held at once (≈16 bytes each; bounded by `Limits::max_values`).
    pub peak_values: u64,
    /// Trace entries whose own objects were dropped as soon as they became rows.
    pub reclaimed_entries: u64,
    /// Distinct frames kept for the stacks.
    pub distinct_frames: u64,
    pub problems: Vec<Problem>,
}

#[derive(Default, Clone, Copy)]
struct Running {
    events: u64,
    first: Option<i64>,
    last: Option<i64>,
    alloc: i64,
    reserved: i64,
    max_alloc: i64,
    max_reserved: i64,
    ooms: u64,
}

/// One frame, copied out of the arena: string ids (stable, strings are never dropped) and line.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct FrameKey {
    filename: Option<u32>,
    line: Option<i64>,
    name: Option<u32>,
    fx_node_op: Option<u32>,
    fx_node_name: Option<u32>,
    fx_original_trace: Option<u32>,
}

/// Interns stacks by content: frames are copied out of the arena (the reader drops a trace
/// entry's own frame objects once the entry is turned into a row), each distinct frame is kept
/// once and each distinct sequence of frames is one `stack_id`. A training loop that allocates
/// from the same few hundred code paths a million times yields a few hundred stacks.
#[derive(Default)]
struct Stacks {
    frame_ids: HashMap<FrameKey, u32>,
    frames: Vec<FrameKey>,
    ids: HashMap<Box<[u32]>, i64>,
    order: Vec<Box<[u32]>>,
    scratch: Vec<u32>,
    /// Stack ids of shared frames lists (by object id, stable for shared objects), so a list
    /// fetched from the memo a million times is walked once.
    shared: HashMap<u32, Option<i64>>,
}

fn str_id(v: Option<Val>) -> Option<u32> {
    match v {
        Some(Val::Str(i)) => Some(i),
        _ => None,
    }
}

impl Stacks {
    fn id(&mut self, a: &Arena, frames: Option<Val>, budget: &mut Budget) -> Option<i64> {
        let v = frames?;
        let obj = a.obj(v)?;
        if !matches!(obj.kind, Kind::List | Kind::Tuple) || obj.len == 0 {
            return None;
        }
        let key = match v {
            Val::Obj(id) if obj.shared => Some(id),
            _ => None,
        };
        if let Some(id) = key.and_then(|k| self.shared.get(&k)) {
            return *id;
        }
        if budget.out.is_some() {
            return None;
        }
        let cost = a.seq(v).map(|f| a.len(f)).sum::<u64>() + u64::from(obj.len);
        if !budget.take(cost, "stack frames", Some(obj.offset)) {
            return None;
        }
        let id = self.intern(a, v);
        if let Some(k) = key {
            self.shared.insert(k, id);
        }
        id
    }

    fn intern(&mut self, a: &Arena, v: Val) -> Option<i64> {
        let mut seq = std::mem::take(&mut self.scratch);
        seq.clear();
        for f in a.seq(v) {
            let mut k = FrameKey {
                filename: None,
                line: None,
                name: None,
                fx_node_op: None,
                fx_node_name: None,
                fx_original_trace: None,
            };
            // One pass over the frame's pairs; the last value wins on duplicate keys.
            for (key, x) in a.pairs(f) {
                match a.str(key) {
                    Some("filename") => k.filename = str_id(Some(x)),
                    Some("line") => k.line = a.int(x),
                    Some("name") => k.name = str_id(Some(x)),
                    Some("fx_node_op") => k.fx_node_op = str_id(Some(x)),
                    Some("fx_node_name") => k.fx_node_name = str_id(Some(x)),
                    Some("fx_original_trace") => k.fx_original_trace = str_id(Some(x)),
                    _ => {}
                }
            }
            let next = self.frames.len() as u32;
            let fid = *self.frame_ids.entry(k).or_insert(next);
            if fid == next {
                self.frames.push(k);
            }
            seq.push(fid);
        }
        let id = match self.ids.get(seq.as_slice()) {
            Some(&id) => id,
            None => {
                let id = self.order.len() as i64;
                let key: Box<[u32]> = seq.as_slice().into();
                self.ids.insert(key.clone(), id);
                self.order.push(key);
                id
            }
        };
        self.scratch = seq;
        Some(id)
    }
}

crate::cols!(mod ev = super::MEMORY_ALLOCATOR_EVENT {
    TS: I64 = "timestamp",
    DEVICE: I32 = "device",
    INDEX: I64 = "trace_index",
    ACTION: Str = "action",
    ADDRESS: I64 = "address",
    SIZE: I64 = "size",
    STREAM: I64 = "stream",
    STACK: I64 = "stack_id",
    POOL: Str = "pool_id",
    FREE: I64 = "device_free",
    META: Str = "user_metadata",
    CATEGORY: Str = "category",
    CONTEXT: Str = "compile_context",
    ALLOC_DELTA: I64 = "allocated_delta_bytes",
    RESERVED_DELTA: I64 = "reserved_delta_bytes",
});

/// Streams trace entries into `MemoryAllocatorEvent` while the pickle is read.
struct Collector<'s> {
    sink: &'s mut dyn TableSink,
    ev: TableBuilder,
    stacks: Stacks,
    devices: Vec<Running>,
    rows: u64,
    scratch: Vec<(Val, Val)>,
    cuts: Cuts,
    budget: Budget,
}

fn as_dict_items(items: &[Val]) -> impl Iterator<Item = (Val, Val)> + '_ {
    items.chunks_exact(2).map(|p| (p[0], p[1]))
}

impl Collector<'_> {
    /// One trace entry given as `(key, value)` pairs.
    fn event(
        &mut self,
        a: &Arena,
        device: u64,
        index: u64,
        at: Option<u64>,
        pairs: &mut dyn Iterator<Item = (Val, Val)>,
    ) -> Result<()> {
        if self.budget.out.is_some() {
            self.budget.dropped += 1;
            return Ok(());
        }
        let mut kv = std::mem::take(&mut self.scratch);
        kv.clear();
        kv.extend(pairs);
        if !self.budget.take(kv.len() as u64 + 1, "device_traces", at) {
            self.scratch = kv;
            return Ok(());
        }
        // Last value wins on duplicate keys, as in Python.
        let val = |k: &str| {
            kv.iter()
                .rev()
                .find(|(x, _)| a.str(*x) == Some(k))
                .map(|p| p.1)
        };
        let int = |k: &str| val(k).and_then(|v| a.int(v));
        let text = |k: &str| val(k).and_then(|v| a.str(v));
        let dev = usize::try_from(device).unwrap_or(usize::MAX).min(1 << 16);
        if self.devices.len() <= dev {
            self.devices.resize(dev + 1, Running::default());
        }
        let r = &mut self.devices[dev];
        let action = text("action");
        let size = int("size");
        let ts = int("time_us").and_then(|t| t.checked_mul(1000));
        let s = size.unwrap_or(0);
        match action {
            Some("alloc") => r.alloc = r.alloc.saturating_add(s),
            Some("free_completed" | "free") => r.alloc = r.alloc.saturating_sub(s),
            Some("segment_alloc" | "segment_map") => r.reserved = r.reserved.saturating_add(s),
            Some("segment_free" | "segment_unmap") => r.reserved = r.reserved.saturating_sub(s),
            Some("oom") => r.ooms += 1,
            _ => {}
        }
        r.max_alloc = r.max_alloc.max(r.alloc);
        r.max_reserved = r.max_reserved.max(r.reserved);
        r.events += 1;
        if let Some(t) = ts {
            r.first = Some(r.first.map_or(t, |f| f.min(t)));
            r.last = Some(r.last.map_or(t, |l| l.max(t)));
        }
        let (da, dr) = (r.alloc, r.reserved);
        let stack = self.stacks.id(a, val("frames"), &mut self.budget);
        let pool = val("pool_id").map(|v| {
            self.cuts
                .render(a, v, || format!("device_traces[{device}][{index}].pool_id"))
        });
        let b = &mut self.ev;
        b.set(ev::TS, ts);
        b.set(ev::DEVICE, i32_cell(Some(device)));
        b.set(ev::INDEX, i64::try_from(index).ok());
        b.set(ev::ACTION, action);
        b.set(ev::ADDRESS, int("addr").or_else(|| int("address")));
        b.set(ev::SIZE, size);
        b.set(ev::STREAM, int("stream"));
        b.set(ev::STACK, stack);
        b.set(ev::POOL, pool.as_deref());
        b.set(ev::FREE, int("device_free"));
        b.set(ev::META, text("user_metadata"));
        b.set(ev::CATEGORY, text("category"));
        b.set(ev::CONTEXT, text("compile_context"));
        b.set(ev::ALLOC_DELTA, da);
        b.set(ev::RESERVED_DELTA, dr);
        self.rows += 1;
        self.scratch = kv;
        b.end_row_into(self.sink)?;
        Ok(())
    }
}

/// `device_traces[d][i]` → Some((d, i)).
fn trace_path(a: &Arena, path: &[PathEl]) -> Option<(u64, u64)> {
    match path {
        [PathEl::Key(k), PathEl::Index(d), PathEl::Index(i)]
            if a.str(*k) == Some("device_traces") =>
        {
            Some((*d, *i))
        }
        _ => None,
    }
}

impl Hook for Collector<'_> {
    fn dict(&mut self, a: &Arena, path: &[PathEl], items: &[Val]) -> Result<bool> {
        let Some((d, i)) = trace_path(a, path) else {
            return Ok(false);
        };
        if !as_dict_items(items).any(|(k, _)| a.str(k) == Some("action")) {
            return Ok(false);
        }
        self.event(a, d, i, None, &mut as_dict_items(items))?;
        Ok(true)
    }
}

/// Deepest nesting followed when a value (a setting, a pool id) is written as text; deeper
/// values are written `...`. Real settings and pool ids nest two levels.
pub const RENDER_MAX_DEPTH: usize = 32;
/// Items written per container of such a value; the rest are left out.
pub const RENDER_MAX_ITEMS: usize = 64;
/// Values visited to write one cell, shared sub-objects counted each time they are reached; past it the text ends in `...`. Bounds a value that refers to one list many times
/// at several levels (64 items × 6 levels would be 64⁶ leaves).
pub const RENDER_MAX_NODES: usize = 4096;
/// Longest text written for one cell (bytes; cut at a char boundary).
pub const RENDER_MAX_CHARS: usize = 16 << 10;

/// Why [`render`] cut a value short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cut {
    /// The value contains itself (a memo `BINGET` of a container still being rendered).
    Cycle,
    /// Nested deeper than [`RENDER_MAX_DEPTH`].
    Depth,
    /// More than [`RENDER_MAX_NODES`] values or [`RENDER_MAX_CHARS`] bytes of text.
    Size,
}

struct Renderer<'a> {
    a: &'a Arena,
    out: String,
    /// Containers being rendered (root first): a cycle is a container already on this path.
    open: Vec<u32>,
    nodes: usize,
    /// The first cut and the offset of the container where it happened.
    cut: Option<(Cut, Option<u64>)>,
}

impl Renderer<'_> {
    fn stop(&mut self, why: Cut, at: Val) {
        self.out.push_str("...");
        if self.cut.is_none() {
            // A leaf has no offset of its own: name the container it is in.
            let inner = self.open.last().map(|&id| Val::Obj(id));
            let off = self
                .a
                .offset(at)
                .or_else(|| inner.and_then(|c| self.a.offset(c)));
            self.cut = Some((why, off));
        }
    }

    fn full(&self) -> bool {
        self.cut.is_some_and(|(c, _)| c == Cut::Size)
    }

    fn val(&mut self, v: Val) {
        use std::fmt::Write;
        let a = self.a;
        if self.full() {
            return;
        }
        self.nodes += 1;
        if self.nodes > RENDER_MAX_NODES || self.out.len() > RENDER_MAX_CHARS {
            return self.stop(Cut::Size, v);
        }
        match v {
            Val::None => self.out.push_str("None"),
            Val::Bool(b) => self.out.push_str(if b { "True" } else { "False" }),
            Val::Int(i) => {
                let _ = write!(self.out, "{i}");
            }
            Val::Big(_) => {
                if let Some(b) = a.big(v) {
                    let _ = write!(self.out, "{b}");
                }
            }
            Val::BigText(_) | Val::Str(_) => {
                let t = a.str(v).unwrap_or_default();
                let room = RENDER_MAX_CHARS.saturating_sub(self.out.len());
                if t.len() > room {
                    let mut n = room;
                    while !t.is_char_boundary(n) {
                        n -= 1;
                    }
                    self.out.push_str(&t[..n]);
                    return self.stop(Cut::Size, v);
                }
                self.out.push_str(t);
            }
            Val::Float(f) => {
                let _ = write!(self.out, "{f}");
            }
            Val::Bytes(_) => {
                let _ = write!(self.out, "<{} bytes>", a.bytes(v).map_or(0, |b| b.len()));
            }
            Val::Obj(id) => {
                if self.open.contains(&id) {
                    return self.stop(Cut::Cycle, v);
                }
                if self.open.len() >= RENDER_MAX_DEPTH {
                    return self.stop(Cut::Depth, v);
                }
                self.open.push(id);
                if a.kind(v) == Some(Kind::Dict) {
                    self.out.push('{');
                    for (i, (k, x)) in a.pairs(v).take(RENDER_MAX_ITEMS).enumerate() {
                        if self.full() {
                            break;
                        }
                        if i > 0 {
                            self.out.push_str(", ");
                        }
                        self.val(k);
                        self.out.push_str(": ");
                        self.val(x);
                    }
                    self.out.push('}');
                } else {
                    for (i, x) in a.items(v).take(RENDER_MAX_ITEMS).enumerate() {
                        if self.full() {
                            break;
                        }
                        if i > 0 {
                            self.out.push(',');
                        }
                        self.val(x);
                    }
                }
                self.open.pop();
            }
        }
    }
}

/// Python-style text of a value (settings, pool ids): dicts as `{k: v, …}`, lists and tuples as
/// `a,b` (a pool id `(0, 1)` is `0,1`), at most [`RENDER_MAX_ITEMS`] items per container.
/// A value that contains itself, nests deeper than [`RENDER_MAX_DEPTH`] or expands past
/// [`RENDER_MAX_NODES`] / [`RENDER_MAX_CHARS`] is cut at that point with `...` and the cut is
/// returned with the byte offset of the container concerned.
fn render(a: &Arena, v: Val) -> (String, Option<(Cut, Option<u64>)>) {
    let mut r = Renderer {
        a,
        out: String::new(),
        open: Vec::new(),
        nodes: 0,
        cut: None,
    };
    r.val(v);
    (r.out, r.cut)
}

/// Cuts made by [`render`] and work refused by the [`Budget`], collected for one warning each.
#[derive(Default)]
struct Cuts {
    /// Per kind: the first (where, offset) and how many values were cut.
    first: [Option<(String, Option<u64>)>; 3],
    count: [u64; 3],
}

impl Cuts {
    /// Renders `v` (found at `what`, e.g. `allocator_settings.x`) and records any cut.
    fn render(&mut self, a: &Arena, v: Val, what: impl FnOnce() -> String) -> String {
        let (text, cut) = render(a, v);
        if let Some((c, off)) = cut {
            let i = c as usize;
            self.count[i] += 1;
            if self.first[i].is_none() {
                self.first[i] = Some((what(), off));
            }
        }
        text
    }

    fn problems(&self, file: &str, out: &mut Vec<Problem>) {
        for (i, c) in [Cut::Cycle, Cut::Depth, Cut::Size].into_iter().enumerate() {
            let Some((what, off)) = &self.first[i] else {
                continue;
            };
            let why = match c {
                Cut::Cycle => "contains itself (a cycle through the pickle memo)".to_string(),
                Cut::Depth => format!("nests deeper than {RENDER_MAX_DEPTH} levels"),
                Cut::Size => format!(
                    "expands to more than {RENDER_MAX_NODES} values or {RENDER_MAX_CHARS} bytes of text"
                ),
            };
            let at = off.map(|o| format!(" at offset {o}")).unwrap_or_default();
            let more = match self.count[i] {
                0 | 1 => String::new(),
                n => format!(" ({} more values like it)", n - 1),
            };
            let mut p = Problem::new(
                Code::MemorySnapshotValueCut,
                Some(file),
                format!("{file}: {what}: the value{at} {why}; shown cut short with '...'{more}"),
            );
            p.offset = *off;
            out.push(p);
        }
    }
}

/// Work allowed for turning the snapshot into rows, in values visited: a fixed allowance plus
/// [`BUDGET_PER_BYTE`] per byte of the file. A real snapshot visits each of its values a few
/// times (well under one per byte); a hostile one that lists the same shared segment, block or
/// entry dict over and over (each reference a 2-byte `BINGET`) would otherwise turn a small file
/// into billions of rows.
pub const BUDGET_PER_BYTE: u64 = 32;
/// The fixed part of the work allowance (values).
pub const BUDGET_BASE: u64 = 1 << 20;

struct Budget {
    left: u64,
    /// Where the allowance ran out (section, offset) and how many rows were dropped.
    out: Option<(&'static str, Option<u64>)>,
    dropped: u64,
}

impl Budget {
    fn new(file_len: u64) -> Self {
        Budget {
            left: BUDGET_BASE.saturating_add(file_len.saturating_mul(BUDGET_PER_BYTE)),
            out: None,
            dropped: 0,
        }
    }
    /// Takes `n` units; false (and the row is to be dropped) once the allowance is used up.
    fn take(&mut self, n: u64, section: &'static str, at: Option<u64>) -> bool {
        if self.out.is_none() && n <= self.left {
            self.left -= n;
            return true;
        }
        self.left = 0;
        self.out.get_or_insert((section, at));
        self.dropped += 1;
        false
    }
    fn problem(&self, file: &str, file_len: u64, out: &mut Vec<Problem>) {
        let Some((section, off)) = self.out else {
            return;
        };
        let at = off.map(|o| format!(" at offset {o}")).unwrap_or_default();
        let mut p = Problem::new(
            Code::MemorySnapshotAmplified,
            Some(file),
            format!(
                "{file}: {section}{at}: the snapshot refers to its shared objects more often than \
                 a {file_len}-byte file can hold ({BUDGET_PER_BYTE} values per byte + {BUDGET_BASE}); \
                 {} rows from here on were left out",
                self.dropped
            ),
        );
        p.offset = off;
        out.push(p);
    }
}

/// Reads the memory snapshot in `src` and writes the six `Memory*` tables to `sink`.
///
/// Errors: only a sink failure is returned as `Err`. Faults in the file (truncation, a refused
/// code opcode, a limit) become a [`Problem`] with code `ERROR_PROCESS_INCOMPLETE` in the report,
/// and everything decoded before the fault is still written.
pub fn process(
    src: &dyn ByteSource,
    file_name: &str,
    sink: &mut dyn TableSink,
) -> Result<MemSnapReport> {
    process_with(src, file_name, Limits::default(), sink)
}

/// [`process`] with explicit memory [`Limits`].
pub fn process_with(
    src: &dyn ByteSource,
    file_name: &str,
    limits: Limits,
    sink: &mut dyn TableSink,
) -> Result<MemSnapReport> {
    let mut col = Collector {
        sink,
        ev: TableBuilder::new(&MEMORY_ALLOCATOR_EVENT),
        stacks: Stacks::default(),
        devices: Vec::new(),
        rows: 0,
        scratch: Vec::new(),
        cuts: Cuts::default(),
        budget: Budget::new(src.len()),
    };
    let parsed = pickle::parse(src, limits, &mut col);
    let a = &parsed.arena;
    let mut report = MemSnapReport {
        file: file_name.to_string(),
        protocol: parsed.protocol,
        retained_values: (a.item_count() + a.obj_count()) as u64,
        peak_values: parsed.peak_values,
        reclaimed_entries: parsed.reclaimed,
        ..MemSnapReport::default()
    };
    if let Some(e) = &parsed.error {
        report
            .problems
            .push(Problem::from_error(Code::ProcessIncomplete, file_name, e));
    }
    let root = parsed.root.filter(|r| a.kind(*r) == Some(Kind::Dict));
    if root.is_none() && parsed.error.is_none() {
        report.problems.push(Problem::new(
            Code::ProcessIncomplete,
            Some(file_name),
            format!("{file_name}: the pickle does not hold a dict (not a memory snapshot)"),
        ));
    }
    let root = root.unwrap_or(Val::None);

    // Trace entries the hook did not consume (shared via the memo, or salvaged after a fault).
    if let Some(traces) = a.get(root, "device_traces") {
        for (d, list) in a.seq(traces).enumerate() {
            for (i, e) in a.seq(list).enumerate() {
                if a.kind(e) == Some(Kind::Dict) && !a.is_elided(e) {
                    col.event(a, d as u64, i as u64, a.offset(e), &mut a.pairs(e))?;
                }
            }
        }
    }
    col.ev.finish_into(col.sink)?;
    report.events = col.rows;
    let Collector {
        sink,
        mut stacks,
        devices,
        mut cuts,
        budget: ev_budget,
        ..
    } = col;
    // Each section has its own allowance, so one amplified section leaves the others whole.
    let mut budgets = vec![ev_budget];
    let mut budget = Budget::new(src.len());

    // Segments and blocks.
    let mut finals: HashMap<i64, (i64, i64)> = HashMap::default();
    if let Some(segs) = a.get(root, "segments") {
        let mut ctx = SegCtx {
            stacks: &mut stacks,
            finals: &mut finals,
            cuts: &mut cuts,
            budget: &mut budget,
        };
        let (nseg, nblk) = segments(a, segs, &mut ctx, sink)?;
        report.segments = nseg;
        report.blocks = nblk;
    }
    budgets.push(std::mem::replace(&mut budget, Budget::new(src.len())));

    // Annotations.
    if let Some(list) = a.get(root, "external_annotations") {
        let mut b = TableBuilder::new(&MEMORY_ANNOTATION);
        for x in a.seq(list) {
            if !budget.take(a.len(x) + 1, "external_annotations", a.offset(x)) {
                break;
            }
            let g = |k| a.get(x, k);
            b.set(
                ann::TS,
                g("time_us")
                    .and_then(|v| a.int(v))
                    .and_then(|t| t.checked_mul(1000)),
            );
            b.set(ann::DEVICE, i32_cell(g("device").and_then(|v| a.int(v))));
            b.set(ann::NAME, g("name").and_then(|v| a.str(v)));
            b.set(ann::STAGE, g("stage").and_then(|v| a.str(v)));
            b.end_row_into(sink)?;
        }
        report.annotations = b.finish_into(sink)?;
    }
    budgets.push(std::mem::replace(&mut budget, Budget::new(src.len())));

    // Settings.
    if let Some(set) = a.get(root, "allocator_settings") {
        let mut b = TableBuilder::new(&MEMORY_ALLOCATOR_SETTINGS);
        let here = "allocator_settings";
        for (k, v) in a.pairs(set) {
            if !budget.take(2, here, a.offset(set)) {
                break;
            }
            let key = cuts.render(a, k, || format!("{here} key"));
            if a.kind(v) == Some(Kind::Dict) {
                for (k2, v2) in a.pairs(v) {
                    if !budget.take(2, here, a.offset(v)) {
                        break;
                    }
                    let k2 = cuts.render(a, k2, || format!("{here}.{key} key"));
                    let key = format!("{key}.{k2}");
                    let text = cuts.render(a, v2, || format!("{here}.{key}"));
                    b.set(settings::KEY, key.as_str());
                    b.set(settings::VALUE, text.as_str());
                    b.end_row_into(sink)?;
                }
            } else {
                let text = cuts.render(a, v, || format!("{here}.{key}"));
                b.set(settings::KEY, key.as_str());
                b.set(settings::VALUE, text.as_str());
                b.end_row_into(sink)?;
            }
        }
        report.settings = b.finish_into(sink)?;
    }
    budgets.push(budget);

    // Stacks (last: events, segments and blocks registered them).
    {
        let mut b = TableBuilder::new(&MEMORY_STACK_FRAME);
        let s = |i: Option<u32>| i.and_then(|i| a.str(Val::Str(i)));
        for (sid, frames) in stacks.order.iter().enumerate() {
            for (depth, &fid) in frames.iter().enumerate() {
                let Some(f) = stacks.frames.get(fid as usize) else {
                    continue;
                };
                b.set(frame::STACK, sid as i64);
                b.set(frame::DEPTH, i32_cell(Some(depth)));
                b.set(frame::FILE, s(f.filename));
                b.set(frame::LINE, f.line);
                b.set(frame::NAME, s(f.name));
                b.set(frame::FX_OP, s(f.fx_node_op));
                b.set(frame::FX_NAME, s(f.fx_node_name));
                b.set(frame::FX_TRACE, s(f.fx_original_trace));
                b.end_row_into(sink)?;
            }
        }
        report.frames = b.finish_into(sink)?;
        report.stacks = stacks.order.len() as u64;
        report.distinct_frames = stacks.frames.len() as u64;
    }

    cuts.problems(file_name, &mut report.problems);
    for b in &budgets {
        b.problem(file_name, src.len(), &mut report.problems);
    }

    // Per-device totals.
    let mut devs: std::collections::BTreeSet<i64> = (0..devices.len() as i64).collect();
    devs.extend(finals.keys().copied());
    for d in devs {
        let r = usize::try_from(d)
            .ok()
            .and_then(|i| devices.get(i))
            .copied()
            .unwrap_or_default();
        let (fa, fr) = finals.get(&d).copied().unwrap_or((0, 0));
        let ba = fa.saturating_sub(r.alloc);
        let br = fr.saturating_sub(r.reserved);
        let dr = DeviceReport {
            device: d,
            events: r.events,
            first_ts_ns: r.first,
            last_ts_ns: r.last,
            baseline_allocated_bytes: ba,
            baseline_reserved_bytes: br,
            peak_allocated_bytes: ba.saturating_add(r.max_alloc),
            peak_reserved_bytes: br.saturating_add(r.max_reserved),
            final_allocated_bytes: fa,
            final_reserved_bytes: fr,
            ooms: r.ooms,
        };
        if ba < 0 || br < 0 {
            report.problems.push(Problem::new(
                Code::MemorySnapshotInconsistent,
                Some(file_name),
                format!(
                    "{file_name}: device {d}: the trace frees more than the segments account for \
                     (baseline allocated {ba} B, reserved {br} B)"
                ),
            ));
        }
        report.ooms += dr.ooms;
        report.first_ts_ns = min_opt(report.first_ts_ns, dr.first_ts_ns);
        report.last_ts_ns = max_opt(report.last_ts_ns, dr.last_ts_ns);
        report.peak_allocated_bytes =
            max_opt(report.peak_allocated_bytes, Some(dr.peak_allocated_bytes));
        report.peak_reserved_bytes =
            max_opt(report.peak_reserved_bytes, Some(dr.peak_reserved_bytes));
        report.devices.push(dr);
    }
    Ok(report)
}

fn min_opt(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

fn max_opt(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    }
}

/// What [`segments`] updates besides the tables.
struct SegCtx<'c> {
    stacks: &'c mut Stacks,
    /// Per device: final (allocated, reserved) bytes.
    finals: &'c mut HashMap<i64, (i64, i64)>,
    cuts: &'c mut Cuts,
    budget: &'c mut Budget,
}

/// Writes `MemorySegment` and `MemoryBlock`; fills per-device final (allocated, reserved).
fn segments(
    a: &Arena,
    segs: Val,
    cx: &mut SegCtx<'_>,
    sink: &mut dyn TableSink,
) -> Result<(u64, u64)> {
    let mut blocks = TableBuilder::new(&MEMORY_BLOCK);
    let mut segments = TableBuilder::new(&MEMORY_SEGMENT);
    for (si, s) in a.seq(segs).enumerate() {
        if !cx.budget.take(a.len(s) + 1, "segments", a.offset(s)) {
            break;
        }
        let int = |k| a.get(s, k).and_then(|v| a.int(v));
        let device = int("device");
        let address = int("address");
        let total = int("total_size");
        let blist = a.get(s, "blocks");
        let fin = cx.finals.entry(device.unwrap_or(0)).or_default();
        fin.1 = fin.1.saturating_add(total.unwrap_or(0));
        let b = &mut segments;
        b.set(seg::INDEX, si as i64);
        b.set(seg::DEVICE, i32_cell(device));
        b.set(seg::ADDRESS, address);
        b.set(seg::TOTAL, total);
        b.set(seg::ALLOCATED, int("allocated_size"));
        b.set(seg::ACTIVE, int("active_size"));
        b.set(seg::REQUESTED, int("requested_size"));
        b.set(seg::STREAM, int("stream"));
        b.set(seg::TYPE, a.get(s, "segment_type").and_then(|v| a.str(v)));
        let pool = a.get(s, "segment_pool_id").map(|v| {
            cx.cuts
                .render(a, v, || format!("segments[{si}].segment_pool_id"))
        });
        b.set(seg::POOL, pool.as_deref());
        b.set(
            seg::EXPANDABLE,
            a.get(s, "is_expandable").and_then(|v| match v {
                Val::Bool(b) => Some(b),
                _ => None,
            }),
        );
        b.set(seg::STACK, cx.stacks.id(a, a.get(s, "frames"), cx.budget));
        let nb = |b| match a.kind(b) {
            Some(Kind::List | Kind::Tuple) => a.len(b) as i64,
            _ => 0,
        };
        b.set(seg::BLOCKS, blist.map(nb));
        b.end_row_into(sink)?;

        let mut offset: i64 = 0;
        for (bi, b) in blist.map(|b| a.seq(b)).into_iter().flatten().enumerate() {
            if !cx
                .budget
                .take(a.len(b) + 1, "segments[].blocks", a.offset(b))
            {
                break;
            }
            let g = |k| a.get(b, k);
            let hist0 = g("history").and_then(|h| a.seq(h).next());
            let size = g("size").and_then(|v| a.int(v)).or_else(|| {
                hist0
                    .and_then(|h| a.get(h, "real_size"))
                    .and_then(|v| a.int(v))
            });
            let addr = g("address")
                .or_else(|| g("addr"))
                .and_then(|v| a.int(v))
                .or_else(|| address.and_then(|x| x.checked_add(offset)));
            let state = g("state").and_then(|v| a.str(v));
            let frames = g("frames").or_else(|| hist0.and_then(|h| a.get(h, "frames")));
            if state.is_some_and(|s| s != "inactive") {
                fin.0 = fin.0.saturating_add(size.unwrap_or(0));
            }
            blocks.set(blk::SEGMENT, si as i64);
            blocks.set(blk::INDEX, bi as i64);
            blocks.set(blk::DEVICE, i32_cell(device));
            blocks.set(blk::ADDRESS, addr);
            blocks.set(
                blk::OFFSET,
                addr.zip(address).and_then(|(x, s)| x.checked_sub(s)),
            );
            blocks.set(blk::SIZE, size);
            blocks.set(blk::REQUESTED, g("requested_size").and_then(|v| a.int(v)));
            blocks.set(blk::STATE, state);
            blocks.set(blk::STACK, cx.stacks.id(a, frames, cx.budget));
            blocks.end_row_into(sink)?;
            offset = offset.saturating_add(size.unwrap_or(0));
        }
    }
    let nseg = segments.finish_into(sink)?;
    let nblk = blocks.finish_into(sink)?;
    Ok((nseg, nblk))
}
