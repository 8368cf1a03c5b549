//! A small pickle *writer* (protocol 4, data only) for synthetic memory snapshots: the app's
//! demo and tests. Writes what [`super::pickle`] reads (spec/framework-inputs.md §3.3 – §3.5):
//! `None`, bools, ints (`BININT` / `LONG1`), floats, strs, lists, tuples and dicts with str keys.
//! A value wrapped in [`PVal::Shared`] is written once and memoised (`MEMOIZE`), every later
//! occurrence of the same `Rc` is a `BINGET` / `LONG_BINGET`, as Python's pickler stores a frame
//! list shared by many trace entries.

use std::collections::HashMap;
use std::rc::Rc;

/// A picklable value.
#[derive(Debug, Clone, PartialEq)]
pub enum PVal {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<PVal>),
    Tuple(Vec<PVal>),
    /// A dict with str keys, in insertion order.
    Dict(Vec<(String, PVal)>),
    /// A shared object: written once, then referenced through the memo (by `Rc` identity).
    Shared(Rc<PVal>),
}

impl PVal {
    /// A str value.
    pub fn s(v: &str) -> PVal {
        PVal::Str(v.to_string())
    }
    /// A dict from `(key, value)` pairs.
    pub fn dict(items: Vec<(&str, PVal)>) -> PVal {
        PVal::Dict(items.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
    }
}

struct Pickler {
    out: Vec<u8>,
    memo: HashMap<*const PVal, u32>,
    next: u32,
}

impl Pickler {
    fn str(&mut self, s: &str) {
        let b = s.as_bytes();
        if b.len() < 256 {
            self.out.push(0x8C); // SHORT_BINUNICODE
            self.out.push(b.len() as u8);
        } else {
            self.out.push(b'X'); // BINUNICODE
            self.out
                .extend_from_slice(&(b.len().min(u32::MAX as usize) as u32).to_le_bytes());
        }
        self.out.extend_from_slice(b);
    }
    fn memoize(&mut self, key: Option<*const PVal>) {
        if let Some(k) = key {
            self.out.push(0x94); // MEMOIZE
            self.memo.insert(k, self.next);
            self.next += 1;
        }
    }
    fn val(&mut self, v: &PVal, key: Option<*const PVal>) {
        match v {
            PVal::None => self.out.push(b'N'),
            PVal::Bool(true) => self.out.push(0x88),
            PVal::Bool(false) => self.out.push(0x89),
            PVal::Int(i) => match i32::try_from(*i) {
                Ok(x) => {
                    self.out.push(b'J'); // BININT
                    self.out.extend_from_slice(&x.to_le_bytes());
                }
                Err(_) => {
                    self.out.push(0x8A); // LONG1, 8-byte two's complement
                    self.out.push(8);
                    self.out.extend_from_slice(&i.to_le_bytes());
                }
            },
            PVal::Float(f) => {
                self.out.push(b'G'); // BINFLOAT, big endian
                self.out.extend_from_slice(&f.to_be_bytes());
            }
            PVal::Str(s) => {
                self.str(s);
                self.memoize(key);
            }
            PVal::List(items) => {
                self.out.push(b']'); // EMPTY_LIST
                self.memoize(key);
                if !items.is_empty() {
                    self.out.push(b'('); // MARK
                    for x in items {
                        self.val(x, None);
                    }
                    self.out.push(b'e'); // APPENDS
                }
            }
            PVal::Tuple(items) => {
                self.out.push(b'(');
                for x in items {
                    self.val(x, None);
                }
                self.out.push(b't'); // TUPLE
                self.memoize(key);
            }
            PVal::Dict(items) => {
                self.out.push(b'}'); // EMPTY_DICT
                self.memoize(key);
                if !items.is_empty() {
                    self.out.push(b'(');
                    for (k, x) in items {
                        self.str(k);
                        self.val(x, None);
                    }
                    self.out.push(b'u'); // SETITEMS
                }
            }
            PVal::Shared(rc) => {
                let p = Rc::as_ptr(rc);
                match self.memo.get(&p) {
                    Some(&i) if i < 256 => {
                        self.out.push(b'h'); // BINGET
                        self.out.push(i as u8);
                    }
                    Some(&i) => {
                        self.out.push(b'j'); // LONG_BINGET
                        self.out.extend_from_slice(&i.to_le_bytes());
                    }
                    None => self.val(rc, Some(p)),
                }
            }
        }
    }
}

/// Pickles `v` with protocol 4 (no `FRAME` opcodes: optional for readers).
pub fn to_pickle(v: &PVal) -> Vec<u8> {
    let mut p = Pickler {
        out: vec![0x80, 4],
        memo: HashMap::new(),
        next: 0,
    };
    p.val(v, None);
    p.out.push(b'.');
    p.out
}

/// What [`demo_snapshot`] wrote: the numbers a reader must find.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SnapshotSummary {
    /// Trace entries of device 0.
    pub events: u64,
    /// Segments and blocks at snapshot time.
    pub segments: u64,
    pub blocks: u64,
    /// Distinct frame lists (shared stacks).
    pub stacks: u64,
    /// Bytes in non-inactive blocks at snapshot time.
    pub final_allocated: i64,
    /// Bytes reserved (segment sizes).
    pub final_reserved: i64,
    /// Highest allocated bytes over the trace.
    pub peak_allocated: i64,
}

/// A small, consistent torch-neuronx-style allocator snapshot of one device for the demo
/// (`memory_snapshot_rank0.pickle`): one 8 MiB segment holding the kernel's `x`, `w`, `b`, `out`
/// and per-iteration temporaries (`acc`, `y`) allocated and freed, stacks pointing at `source`
/// (the demo kernel file) lines, timestamps from `t0_us` one per 50 µs.
pub fn demo_snapshot(source: &str, t0_us: i64) -> (Vec<u8>, SnapshotSummary) {
    let frame = |file: &str, line: i64, name: &str| {
        Rc::new(PVal::dict(vec![
            ("filename", PVal::s(file)),
            ("line", PVal::Int(line)),
            ("name", PVal::s(name)),
        ]))
    };
    let train = frame("neuronscope-demo/train.py", 42, "main");
    let call = frame(source, 12, "matmul_kernel");
    let stack = |line: i64| {
        let f = frame(source, line, "matmul_kernel");
        Rc::new(PVal::List(vec![
            PVal::Shared(f),
            PVal::Shared(call.clone()),
            PVal::Shared(train.clone()),
        ]))
    };
    // (name, bytes, stack): the tensors of the kernel, 512-byte rounded.
    let s_out = stack(14);
    let s_bias = stack(15);
    let s_acc = stack(17);
    let s_load = stack(19);
    let s_y = stack(22);
    let base: i64 = 0x7F3A_0000_0000;
    let seg_size: i64 = 8 << 20;
    let mut entries = Vec::new();
    let mut t = t0_us;
    let mut alloc = 0i64;
    let mut peak = 0i64;
    let mut ev = |action: &str, addr: i64, size: i64, st: &Rc<PVal>, alloc: &mut i64| {
        match action {
            "alloc" => *alloc += size,
            "free_completed" => *alloc -= size,
            _ => {}
        }
        peak = peak.max(*alloc);
        entries.push(PVal::dict(vec![
            ("action", PVal::s(action)),
            ("addr", PVal::Int(addr)),
            ("size", PVal::Int(size)),
            ("stream", PVal::Int(0)),
            ("time_us", PVal::Int(t)),
            ("frames", PVal::Shared(st.clone())),
        ]));
        t += 50;
    };
    ev("segment_alloc", base, seg_size, &s_out, &mut alloc);
    // Long-lived tensors at the start of the segment.
    let x = (base, 512 << 10);
    let w = (base + (512 << 10), 256 << 10);
    let b = (base + (768 << 10), 512);
    let out = (base + (769 << 10), 64 << 10);
    for (a, n, st) in [
        (x.0, x.1, &s_load),
        (w.0, w.1, &s_load),
        (b.0, b.1, &s_bias),
        (out.0, out.1, &s_out),
    ] {
        ev("alloc", a, n, st, &mut alloc);
    }
    // Two row tiles: acc (64 KiB PSUM-sized fp32 tile) and y, then freed.
    let acc = (base + (1 << 20), 64 << 10);
    let y = (base + (1 << 20) + (64 << 10), 32 << 10);
    for _m in 0..2 {
        ev("alloc", acc.0, acc.1, &s_acc, &mut alloc);
        ev("alloc", y.0, y.1, &s_y, &mut alloc);
        for (a, n, st) in [(acc.0, acc.1, &s_acc), (y.0, y.1, &s_y)] {
            ev("free_requested", a, n, st, &mut alloc);
            ev("free_completed", a, n, st, &mut alloc);
        }
    }
    let events = entries.len() as u64;
    let block = |a: i64, n: i64, state: &str, st: Option<&Rc<PVal>>| {
        PVal::dict(vec![
            ("address", PVal::Int(a)),
            ("size", PVal::Int(n)),
            ("requested_size", PVal::Int(n)),
            ("state", PVal::s(state)),
            (
                "frames",
                st.map_or(PVal::List(Vec::new()), |s| PVal::Shared(s.clone())),
            ),
        ])
    };
    let used = out.0 + out.1 - base;
    let blocks = vec![
        block(x.0, x.1, "active_allocated", Some(&s_load)),
        block(w.0, w.1, "active_allocated", Some(&s_load)),
        block(b.0, b.1, "active_allocated", Some(&s_bias)),
        block(out.0, out.1, "active_allocated", Some(&s_out)),
        block(base + used, seg_size - used, "inactive", None),
    ];
    let final_allocated = x.1 + w.1 + b.1 + out.1;
    let nblocks = blocks.len() as u64;
    let segment = PVal::dict(vec![
        ("device", PVal::Int(0)),
        ("address", PVal::Int(base)),
        ("total_size", PVal::Int(seg_size)),
        ("allocated_size", PVal::Int(final_allocated)),
        ("active_size", PVal::Int(final_allocated)),
        ("requested_size", PVal::Int(final_allocated)),
        ("stream", PVal::Int(0)),
        ("segment_type", PVal::s("large")),
        (
            "segment_pool_id",
            PVal::Tuple(vec![PVal::Int(0), PVal::Int(0)]),
        ),
        ("is_expandable", PVal::Bool(false)),
        ("frames", PVal::Shared(s_out.clone())),
        ("blocks", PVal::List(blocks)),
    ]);
    let snap = PVal::dict(vec![
        ("segments", PVal::List(vec![segment])),
        ("device_traces", PVal::List(vec![PVal::List(entries)])),
        (
            "allocator_settings",
            PVal::dict(vec![
                (
                    "PYTORCH_NEURON_ALLOC_CONF",
                    PVal::s("expandable_segments:False"),
                ),
                ("max_split_size", PVal::Int(-1)),
                ("garbage_collection_threshold", PVal::Float(0.0)),
            ]),
        ),
        ("external_annotations", PVal::List(Vec::new())),
    ]);
    let summary = SnapshotSummary {
        events,
        segments: 1,
        blocks: nblocks,
        stacks: 5,
        final_allocated,
        final_reserved: seg_size,
        peak_allocated: peak,
    };
    (to_pickle(&snap), summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memsnap::pickle::{self, Limits, NoHook};
    use crate::source::SliceSource;
    use crate::tables::Tables;

    #[test]
    fn shared_memo_and_scalars_roundtrip() {
        let shared = Rc::new(PVal::List(vec![PVal::s("f")]));
        let v = PVal::List(vec![
            PVal::Shared(shared.clone()),
            PVal::Shared(shared),
            PVal::Int(-5),
            PVal::Int(1 << 40),
            PVal::Float(1.5),
            PVal::None,
            PVal::Bool(true),
            PVal::s(&"x".repeat(300)),
        ]);
        let bytes = to_pickle(&v);
        // The shared list is written once and fetched once.
        assert_eq!(bytes.iter().filter(|&&b| b == 0x94).count(), 1);
        let p = pickle::parse(&SliceSource(&bytes), Limits::default(), &mut NoHook);
        assert!(p.error.is_none(), "{:?}", p.error);
    }

    #[test]
    fn demo_snapshot_reads_back() {
        let (bytes, s) = demo_snapshot("neuronscope-demo/matmul_kernel.py", 1_700_000_000_000_000);
        let mut t = Tables::default();
        let r = crate::memsnap::process(&SliceSource(&bytes), "m.pickle", &mut t).unwrap();
        assert!(r.problems.is_empty(), "{:?}", r.problems);
        assert_eq!(r.protocol, Some(4));
        assert_eq!(r.events, s.events);
        assert_eq!(r.segments, s.segments);
        assert_eq!(r.blocks, s.blocks);
        assert_eq!(r.stacks, s.stacks);
        let d = &r.devices[0];
        assert_eq!(d.final_allocated_bytes, s.final_allocated);
        assert_eq!(d.final_reserved_bytes, s.final_reserved);
        assert_eq!(d.peak_allocated_bytes, s.peak_allocated);
        assert_eq!(
            d.baseline_allocated_bytes, 0,
            "trace starts from an empty device"
        );
        assert_eq!(d.baseline_reserved_bytes, 0);
        assert_eq!(t.rows("MemoryAllocatorEvent") as u64, s.events);
    }
}
