//! Explorer's `Summary` and `OpcodeSummary` from decoded tables (explorer-schema.md §5.5).
//!
//! Input: the in-memory [`Tables`] of one device profile (`Instruction`, `DmaPacket`) plus the
//! NTFF [`DecodeReport`] (total time, event and trace counts, clock). Only the fields these
//! tables determine are written; the rest stay null. Compared with the JSON exports' `summary`
//! in `crate/tests/ntff_dma_golden.rs` (`summary_against_exports`).
//!
//! Conventions observed in the exports (docs/formats.md "Summary"): times in seconds as float32;
//! `*_percent` fields are **fractions** of `total_time` (0.456, not 45.6); instruction and packet
//! times are sums of raw-picosecond durations when the clock is raw ps (trn2), else of durations
//! in whole calibrated ps (each raw time calibrated and floored on its own; inf2); "static" DMA = every packet not on a dynamic queue (includes `instruction`).

use std::cmp::Reverse;
use std::collections::binary_heap::PeekMut;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

use rustc_hash::FxHashMap as HashMap;

use arrow_array::{Array, Int32Array, Int64Array, RecordBatch};

use crate::engine::Engine;
use crate::error::Result;
use crate::ntff::{Calibration, ClockCal, DecodeReport};
use crate::tables::{explorer, kind, StrCol, TableBuilder, TableDef, TableSink, Tables, C};

/// Engines in the order and with the names of the `Summary` field prefixes.
pub const ENGINES: [(&str, &str); 5] = [
    ("tensor", "tensor_engine"),
    ("scalar", "scalar_engine"),
    ("gpsimd", "gpsimd_engine"),
    ("vector", "vector_engine"),
    ("sync", "sync_engine"),
];

/// The union of closed intervals `[start, end]` (ps or raw ticks), kept as its connected
/// components (intervals that overlap or touch are merged), sorted by start.
///
/// Memory: 16 B per component, not per pushed interval. Intervals pushed in start order (one
/// engine or DMA queue of one core, as the NTFF decoder emits them) merge in place in O(1);
/// anything else is appended and the list is re-compacted (sort + merge, idempotent) whenever
/// it doubled, so out-of-order input costs at most 2× plus 4 096 entries.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Union {
    iv: Vec<(i64, i64)>,
    /// `iv[..merged]` is sorted and merged.
    merged: usize,
    /// Length after the last full compaction.
    compacted: usize,
}

impl Union {
    /// Adds `[s, max(s, e)]`.
    pub fn push(&mut self, s: i64, e: i64) {
        let e = e.max(s);
        if self.merged == self.iv.len() {
            match self.iv.last_mut() {
                None => {
                    self.iv.push((s, e));
                    self.merged = 1;
                    return;
                }
                Some(last) if s >= last.0 && s <= last.1 => {
                    last.1 = last.1.max(e);
                    return;
                }
                Some(last) if s > last.1 => {
                    self.iv.push((s, e));
                    self.merged += 1;
                    return;
                }
                Some(_) => {}
            }
        }
        self.iv.push((s, e));
        if self.iv.len() >= 2 * self.compacted.max(self.merged) + 4096 {
            self.compact();
        }
    }

    /// Sorts and merges the pending intervals (no-op when already compact).
    pub fn compact(&mut self) {
        if self.merged == self.iv.len() {
            self.compacted = self.merged;
            return;
        }
        self.iv.sort_unstable();
        let mut w = 0usize;
        for r in 0..self.iv.len() {
            let Some(&(s, e)) = self.iv.get(r) else { break };
            match w.checked_sub(1).and_then(|l| self.iv.get_mut(l)) {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => {
                    if let Some(x) = self.iv.get_mut(w) {
                        *x = (s, e);
                    }
                    w += 1;
                }
            }
        }
        self.iv.truncate(w);
        self.iv.shrink_to_fit();
        self.merged = w;
        self.compacted = w;
    }

    /// The components, sorted (compacts first).
    pub fn intervals(&mut self) -> &[(i64, i64)] {
        self.compact();
        &self.iv
    }

    /// Bytes of heap this union holds.
    pub fn heap_bytes(&self) -> usize {
        self.iv.capacity() * std::mem::size_of::<(i64, i64)>()
    }
}

/// Reads one LEB128 value (7 bits a byte, low first) at `*at`, advancing `*at`.
#[inline]
fn get_varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    // One byte (most gaps and lengths of packed unions, most deltas): no loop.
    let b = *bytes.get(*at)?;
    if b < 0x80 {
        *at += 1;
        return Some(u64::from(b));
    }
    get_varint_long(bytes, at)
}

fn get_varint_long(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7F) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// Bytes of one [`ByteLog`] chunk: the slack of a log is under one chunk, not the up-to-2×
/// of a doubling `Vec`.
const LOG_CHUNK: usize = 16 * 1024;

/// Append-only LEB128 values in fixed-size chunks (a record never spans two chunks). Full
/// chunks go to the thread's [`crate::store::Spill`] when one is available, so a log holds one
/// chunk in memory whatever its length (its spilled chunks cost 12 B each); without a spill,
/// or after a spill write failed, they stay in memory.
#[derive(Debug, Clone, Default)]
struct ByteLog {
    /// (offset, length) of the spilled chunks, oldest first; they precede `chunks`.
    spilled: Vec<(u64, u32)>,
    spill: Option<std::sync::Arc<crate::store::Spill>>,
    /// Chunks in memory, after the spilled ones.
    chunks: Vec<Vec<u8>>,
}

impl PartialEq for ByteLog {
    fn eq(&self, o: &Self) -> bool {
        self.values().eq(o.values())
    }
}

impl ByteLog {
    /// Appends the values of one record.
    fn record(&mut self, vals: &[u64]) {
        let mut rec = [0u8; 20];
        let mut n = 0usize;
        for &v in vals.iter().take(2) {
            let mut v = v;
            loop {
                let (b, more) = ((v & 0x7F) as u8, v >= 0x80);
                if let Some(x) = rec.get_mut(n) {
                    *x = b | if more { 0x80 } else { 0 };
                }
                n += 1;
                v >>= 7;
                if !more {
                    break;
                }
            }
        }
        let rec = rec.get(..n).unwrap_or_default();
        match self.chunks.last_mut() {
            Some(c) if c.len() + rec.len() <= c.capacity() => c.extend_from_slice(rec),
            _ => {
                let c = self
                    .spill_full()
                    .unwrap_or_else(|| Vec::with_capacity(LOG_CHUNK));
                self.chunks.push(c);
                if let Some(c) = self.chunks.last_mut() {
                    c.extend_from_slice(rec);
                }
            }
        }
    }

    /// Moves the only in-memory chunk (full) to the spill; the emptied buffer to reuse, or None
    /// (no spill, the write failed, or earlier chunks are still in memory: order is kept).
    fn spill_full(&mut self) -> Option<Vec<u8>> {
        if self.chunks.len() != 1 {
            return None;
        }
        if self.spill.is_none() {
            self.spill = crate::store::Spill::current();
        }
        let spill = self.spill.as_ref()?;
        let c = self.chunks.first()?;
        let at = spill.append(c)?;
        self.spilled.push((at, c.len() as u32));
        let mut c = self.chunks.pop()?;
        c.clear();
        Some(c)
    }

    /// Every value, in append order. A spilled chunk that cannot be read back ends the values
    /// early (the failure is kept for [`crate::store::take_spill_error`]).
    fn values(&self) -> LogValues<'_> {
        LogValues {
            log: self,
            spilled: 0,
            kept: 0,
            buf: Vec::new(),
            in_buf: false,
            at: 0,
        }
    }

    /// Heap bytes (chunks in memory and the spilled chunks' offsets).
    fn heap_bytes(&self) -> usize {
        self.chunks.iter().map(Vec::capacity).sum::<usize>()
            + self.chunks.capacity() * std::mem::size_of::<Vec<u8>>()
            + self.spilled.capacity() * std::mem::size_of::<(u64, u32)>()
    }

    /// Bytes of this log in the spill.
    fn spilled_bytes(&self) -> usize {
        self.spilled.iter().map(|&(_, l)| l as usize).sum()
    }
}

/// The values of a [`ByteLog`] ([`ByteLog::values`]): its spilled chunks (read back one at a
/// time into one buffer), then the ones in memory. A plain struct rather than nested
/// `flat_map`/`chain` adapters: reading the logs back was ≈ 15 % of the instruction-dense decode.
struct LogValues<'a> {
    log: &'a ByteLog,
    /// Next spilled chunk to read back.
    spilled: usize,
    /// Next in-memory chunk (after the spilled ones).
    kept: usize,
    buf: Vec<u8>,
    /// The current chunk is `buf` (else `log.chunks[kept - 1]`).
    in_buf: bool,
    at: usize,
}

impl LogValues<'_> {
    /// Moves to the next chunk; false at the end. A failed read-back skips the rest of the
    /// spilled chunks (the error is kept for [`crate::store::take_spill_error`]).
    #[cold]
    fn advance(&mut self) -> bool {
        if let Some(&(at, len)) = self.log.spilled.get(self.spilled) {
            self.spilled += 1;
            self.in_buf = true;
            self.buf.clear();
            self.buf.resize(len as usize, 0);
            let ok = self
                .log
                .spill
                .as_ref()
                .is_some_and(|s| s.read(at, &mut self.buf));
            if ok {
                self.at = 0;
                return true;
            }
            // As before the struct: the unread spilled chunks are skipped, memory's follow.
            self.buf.clear();
            self.spilled = self.log.spilled.len();
        }
        self.in_buf = false;
        if self.kept < self.log.chunks.len() {
            self.kept += 1;
            self.at = 0;
            return true;
        }
        // Stays at the end of the last chunk: later calls keep returning None.
        false
    }
}

impl Iterator for LogValues<'_> {
    type Item = u64;
    #[inline]
    fn next(&mut self) -> Option<u64> {
        loop {
            let chunk: &[u8] = if self.in_buf {
                &self.buf
            } else {
                match self
                    .kept
                    .checked_sub(1)
                    .and_then(|k| self.log.chunks.get(k))
                {
                    Some(c) => c,
                    None => &[],
                }
            };
            if let Some(v) = get_varint(chunk, &mut self.at) {
                return Some(v);
            }
            // A record never spans two chunks: None is the chunk's end.
            if !self.advance() {
                return None;
            }
        }
    }
}

/// A [`Union`] for streams that arrive in start order (one engine of one core: 0 of 767 360
/// v6 instructions out of order per (pcore, engine) in a 200 MB `synth` NTFF), packed: the
/// open component plus the closed ones as LEB128 (gap from the previous end, length), so
/// ≈ 4–6 B per component instead of 16 B, in 16 KiB chunks (no doubling slack). The first push that starts
/// before the open component turns it into a plain [`Union`] (same result, 16 B per
/// component), so any order stays exact.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PackedUnion {
    /// Closed components, in start order: (start − previous end, end − start), wrapping u64.
    bytes: ByteLog,
    /// End of the last closed component (0 before the first).
    last_end: i64,
    /// The component still growing.
    open: Option<(i64, i64)>,
    /// Set once the input was out of order.
    spill: Option<Union>,
}

impl PackedUnion {
    /// Adds `[s, max(s, e)]`.
    pub fn push(&mut self, s: i64, e: i64) {
        let e = e.max(s);
        if let Some(u) = &mut self.spill {
            u.push(s, e);
            return;
        }
        match &mut self.open {
            None => self.open = Some((s, e)),
            Some((os, oe)) if s >= *os && s <= *oe => *oe = (*oe).max(e),
            Some((os, oe)) if s > *oe => {
                let (os, oe) = (*os, *oe);
                self.bytes.record(&[
                    (os as u64).wrapping_sub(self.last_end as u64),
                    (oe as u64).wrapping_sub(os as u64),
                ]);
                self.last_end = oe;
                self.open = Some((s, e));
            }
            Some(_) => {
                let mut u = Union::default();
                for (a, z) in self.iter() {
                    u.push(a, z);
                }
                u.push(s, e);
                self.bytes = ByteLog::default();
                self.open = None;
                self.spill = Some(u);
            }
        }
    }

    /// The components in start order (call [`PackedUnion::compact`] first after
    /// out-of-order input, else those are not merged yet).
    pub fn iter(&self) -> PackedIter<'_> {
        PackedIter {
            spilled: self.spill.as_ref().map(|u| u.iv.iter()),
            vals: self.bytes.values(),
            last: 0,
            open: self.open,
        }
    }

    /// Sorts and merges out-of-order input (no-op for in-order input).
    pub fn compact(&mut self) {
        if let Some(u) = &mut self.spill {
            u.compact();
        }
    }

    /// Bytes of heap this union holds.
    pub fn heap_bytes(&self) -> usize {
        self.bytes.heap_bytes() + self.spill.as_ref().map_or(0, Union::heap_bytes)
    }
    /// Bytes of this union on disk ([`crate::store::Spill`]).
    pub fn spilled_bytes(&self) -> usize {
        self.bytes.spilled_bytes()
    }
}

/// The components of a [`PackedUnion`] in start order ([`PackedUnion::iter`]): the plain
/// [`Union`] once it spilled, else the packed ones then the open one.
pub struct PackedIter<'a> {
    spilled: Option<std::slice::Iter<'a, (i64, i64)>>,
    vals: LogValues<'a>,
    last: i64,
    open: Option<(i64, i64)>,
}

impl Iterator for PackedIter<'_> {
    type Item = (i64, i64);
    #[inline]
    fn next(&mut self) -> Option<(i64, i64)> {
        if let Some(it) = &mut self.spilled {
            return it.next().copied();
        }
        match (self.vals.next(), self.vals.next()) {
            (Some(gap), Some(len)) => {
                let s = (self.last as u64).wrapping_add(gap) as i64;
                let e = (s as u64).wrapping_add(len) as i64;
                self.last = e;
                Some((s, e))
            }
            _ => self.open.take(),
        }
    }
}

/// Intervals a [`NearSorted`] may hold back to restore start order: the `Instruction` rows of
/// one engine of one core arrive in end order, at most 52 rows from start order in the
/// samples (cs149 conv2d; 0 in the `synth` mix).
pub const REORDER_WINDOW: usize = 256;

/// A [`PackedUnion`] fed through a window of [`REORDER_WINDOW`] intervals that puts
/// near-sorted input back in start order, so it stays packed; input further out of order
/// spills to a plain [`Union`] (still exact).
#[derive(Debug, Clone, Default)]
pub struct NearSorted {
    /// The window, ascending by (start, end): near-sorted input appends at the back, so a
    /// push is a compare and a `push_back` (a binary heap cost ≈ 12 % of the instruction-dense
    /// decode natively).
    held: VecDeque<(i64, i64)>,
    u: PackedUnion,
}

impl NearSorted {
    /// Adds `[s, max(s, e)]`.
    #[inline]
    pub fn push(&mut self, s: i64, e: i64) {
        let v = (s, e);
        match self.held.back() {
            Some(b) if *b > v => {
                // After every equal element: pop order matches a min-heap's (equal values
                // are indistinguishable).
                let at = self.held.partition_point(|x| *x <= v);
                self.held.insert(at, v);
            }
            _ => self.held.push_back(v),
        }
        if self.held.len() > REORDER_WINDOW {
            if let Some((s, e)) = self.held.pop_front() {
                self.u.push(s, e);
            }
        }
    }

    /// Flushes the window and merges spilled input; call before [`NearSorted::iter`].
    pub fn compact(&mut self) {
        while let Some((s, e)) = self.held.pop_front() {
            self.u.push(s, e);
        }
        self.u.compact();
    }

    /// The components in start order (complete after [`NearSorted::compact`]).
    pub fn iter(&self) -> impl Iterator<Item = (i64, i64)> + '_ {
        self.u.iter()
    }

    /// Bytes of heap held.
    pub fn heap_bytes(&self) -> usize {
        self.held.capacity() * std::mem::size_of::<(i64, i64)>() + self.u.heap_bytes()
    }
    /// Bytes on disk ([`crate::store::Spill`]).
    pub fn spilled_bytes(&self) -> usize {
        self.u.spilled_bytes()
    }
}

/// A sequence of i64 kept as LEB128 zigzag deltas (1–3 B per value for near-sorted times
/// instead of 8–16 B), read back in push order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PackedSeq {
    bytes: ByteLog,
    last: i64,
}

impl PackedSeq {
    /// Appends `v`.
    pub fn push(&mut self, v: i64) {
        let d = v.wrapping_sub(self.last);
        self.bytes.record(&[((d << 1) ^ (d >> 63)) as u64]);
        self.last = v;
    }

    /// The values in push order.
    pub fn iter(&self) -> impl Iterator<Item = i64> + '_ {
        let (mut vals, mut last) = (self.bytes.values(), 0i64);
        std::iter::from_fn(move || {
            let z = vals.next()?;
            last = last.wrapping_add(((z >> 1) as i64) ^ -((z & 1) as i64));
            Some(last)
        })
    }

    /// Bytes of heap held.
    pub fn heap_bytes(&self) -> usize {
        self.bytes.heap_bytes()
    }
    /// Bytes on disk ([`crate::store::Spill`]).
    pub fn spilled_bytes(&self) -> usize {
        self.bytes.spilled_bytes()
    }
}

/// Length of the union of several sorted, merged interval streams (e.g.
/// [`PackedUnion::iter`] after [`PackedUnion::compact`]), by a k-way merge (O(k) memory).
pub fn union_len_of<I: Iterator<Item = (i64, i64)>>(lists: impl IntoIterator<Item = I>) -> i64 {
    let lists: Vec<I> = lists.into_iter().collect();
    let all = vec![true; lists.len()];
    union_lens(lists, &[], &all, 0).0
}

/// [`union_len_of`] of several groups of lists at once, in one k-way merge: per group `g`, the
/// union length of the lists `k` with `group[k] == g`, and the union length of the lists with
/// `in_total[k]`. Each list sorted and merged. A group's intervals leave the merge in start
/// order (a subsequence of the merged order), so its union is summed as it goes. One pass over
/// the logs instead of one per group and one for the total (the Summary's engine busy time and
/// `OpcodeSummary`'s per-opcode active time read the same logs).
pub fn union_lens<I: Iterator<Item = (i64, i64)>>(
    lists: Vec<I>,
    group: &[usize],
    in_total: &[bool],
    groups: usize,
) -> (i64, Vec<i64>) {
    /// Adds `[s, e]` to the union summed in `sum`, whose open component is `cur`.
    #[inline]
    fn add(cur: &mut Option<(i64, i64)>, sum: &mut i64, s: i64, e: i64) {
        match cur {
            Some((_, ce)) if s <= *ce => *ce = (*ce).max(e),
            Some((cs, ce)) => {
                *sum = sum.saturating_add(ce.saturating_sub(*cs));
                *cur = Some((s, e));
            }
            None => *cur = Some((s, e)),
        }
    }
    let mut lists = lists;
    let mut heap: BinaryHeap<Reverse<(i64, i64, usize)>> = lists
        .iter_mut()
        .enumerate()
        .filter_map(|(k, l)| l.next().map(|(s, e)| Reverse((s, e, k))))
        .collect();
    let (mut total, mut cur) = (0i64, None);
    let mut sums = vec![0i64; groups];
    let mut curs: Vec<Option<(i64, i64)>> = vec![None; groups];
    while let Some(mut top) = heap.peek_mut() {
        // Replace the head in place (one sift instead of a pop and a push).
        let Reverse((s, e, k)) = *top;
        match lists.get_mut(k).and_then(Iterator::next) {
            Some((ns, ne)) => *top = Reverse((ns, ne, k)),
            None => drop(PeekMut::pop(top)),
        }
        if in_total.get(k).copied().unwrap_or(false) {
            add(&mut cur, &mut total, s, e);
        }
        if let Some(g) = group.get(k).copied() {
            if let (Some(c), Some(sum)) = (curs.get_mut(g), sums.get_mut(g)) {
                add(c, sum, s, e);
            }
        }
    }
    let close = |sum: i64, cur: Option<(i64, i64)>| {
        cur.map_or(sum, |(cs, ce)| sum.saturating_add(ce.saturating_sub(cs)))
    };
    let sums = sums
        .into_iter()
        .zip(curs)
        .map(|(a, c)| close(a, c))
        .collect();
    (close(total, cur), sums)
}

/// Length of the union of several compacted lists, ps, by a k-way merge (O(k) extra memory).
pub fn union_len<'a>(lists: impl IntoIterator<Item = &'a [(i64, i64)]>) -> i64 {
    union_len_of(lists.into_iter().map(|l| l.iter().copied()))
}

/// Intervals `[start, end)` in ps: their count, summed length and union.
#[derive(Debug, Clone, Default)]
pub struct Spans {
    n: u64,
    sum: i64,
    /// The union (connected components).
    pub u: NearSorted,
}

impl Spans {
    fn push(&mut self, s: i64, e: i64) {
        let e = e.max(s);
        self.n += 1;
        self.sum = self.sum.saturating_add(e.saturating_sub(s));
        self.u.push(s, e);
    }
    /// Number of intervals.
    pub fn count(&self) -> u64 {
        self.n
    }
    /// Σ (end − start), ps (overlaps added).
    pub fn total(&self) -> i64 {
        self.sum
    }
    /// Length of the union, ps (overlaps merged).
    pub fn union(&mut self) -> i64 {
        self.u.compact();
        union_len_of([self.u.iter()])
    }
}

/// Queue groups of [`DmaTimes`], in index order: `DmaPacket.queue_type` `software_dynamic`,
/// `hardware_dynamic`, then every other type (the Summary's "static" DMA).
pub const DMA_GROUPS: [&str; 3] = ["software_dynamic", "hardware_dynamic", "static"];

crate::cols!(mod sm = crate::tables::explorer::SUMMARY {
    ACTIVATE_INSTRUCTION_COUNT: I64 = "activate_instruction_count",
    ACTIVATE_INSTRUCTION_TIME: F32 = "activate_instruction_time",
    DMA_ACTIVE_CYCLES: I64 = "dma_active_cycles",
    DMA_ACTIVE_TIME: F32 = "dma_active_time",
    DMA_ACTIVE_TIME_PERCENT: F32 = "dma_active_time_percent",
    DMA_PACKET_TIME: F32 = "dma_packet_time",
    DYNAMIC_DMA_ACTIVE_TIME_PERCENT: F32 = "dynamic_dma_active_time_percent",
    DYNAMIC_DMA_PACKET_PERCENT: F32 = "dynamic_dma_packet_percent",
    DYNAMIC_DMA_SIZE_PERCENT: F32 = "dynamic_dma_size_percent",
    EVENT_COUNT: I64 = "event_count",
    MATMUL_INSTRUCTION_COUNT: I64 = "matmul_instruction_count",
    NEURONCORE_CYCLE_COUNT: I64 = "neuroncore_cycle_count",
    STATIC_DMA_ACTIVE_TIME: F32 = "static_dma_active_time",
    STATIC_DMA_ACTIVE_TIME_PERCENT: F32 = "static_dma_active_time_percent",
    STATIC_DMA_PACKET_COUNT: I64 = "static_dma_packet_count",
    STATIC_DMA_PACKET_PERCENT: F32 = "static_dma_packet_percent",
    STATIC_DMA_SIZE: I64 = "static_dma_size",
    STATIC_DMA_SIZE_PERCENT: F32 = "static_dma_size_percent",
    TOTAL_TIME: F32 = "total_time",
    TRACE_COUNT: I64 = "trace_count",
});
crate::cols!(mod os = crate::tables::explorer::OPCODE_SUMMARY {
    ENGINE: Str = "engine",
    OPCODE: Str = "opcode",
    COUNT: I64 = "instruction_count",
    TIME: I64 = "instruction_time_ns",
    ACTIVE: I64 = "active_time_ns",
    PERCENT: F32 = "active_time_percent",
});

/// `Summary` columns of one engine (`<prefix>_…` of [`ENGINES`]).
struct EngineCols {
    instruction_time: C<kind::F32>,
    active_time: C<kind::F32>,
    active_time_percent: C<kind::F32>,
    instruction_count: C<kind::I64>,
}

macro_rules! engine_cols {
    ($p:literal) => {
        EngineCols {
            instruction_time: C::of(&explorer::SUMMARY, concat!($p, "_instruction_time")),
            active_time: C::of(&explorer::SUMMARY, concat!($p, "_active_time")),
            active_time_percent: C::of(&explorer::SUMMARY, concat!($p, "_active_time_percent")),
            instruction_count: C::of(&explorer::SUMMARY, concat!($p, "_instruction_count")),
        }
    };
}

/// [`EngineCols`] in [`ENGINES`] order (checked at compile time, like `cols!`).
const ENGINE_COLS: [EngineCols; 5] = [
    engine_cols!("tensor_engine"),
    engine_cols!("scalar_engine"),
    engine_cols!("gpsimd_engine"),
    engine_cols!("vector_engine"),
    engine_cols!("sync_engine"),
];

/// `Summary` columns of one dynamic DMA group (`<prefix>_dma_…` of [`DMA_GROUPS`] 0 and 1).
struct DmaCols {
    dma_active_time: C<kind::F32>,
    dma_active_time_percent: C<kind::F32>,
    dma_packet_count: C<kind::I64>,
    dma_size: C<kind::I64>,
    dma_packet_percent: C<kind::F32>,
    dma_size_percent: C<kind::F32>,
}

macro_rules! dma_cols {
    ($p:literal) => {
        DmaCols {
            dma_active_time: C::of(&explorer::SUMMARY, concat!($p, "_dma_active_time")),
            dma_active_time_percent: C::of(
                &explorer::SUMMARY,
                concat!($p, "_dma_active_time_percent"),
            ),
            dma_packet_count: C::of(&explorer::SUMMARY, concat!($p, "_dma_packet_count")),
            dma_size: C::of(&explorer::SUMMARY, concat!($p, "_dma_size")),
            dma_packet_percent: C::of(&explorer::SUMMARY, concat!($p, "_dma_packet_percent")),
            dma_size_percent: C::of(&explorer::SUMMARY, concat!($p, "_dma_size_percent")),
        }
    };
}

/// [`DmaCols`] of `software_dynamic` and `hardware_dynamic` ([`DMA_GROUPS`] order).
const DYN_DMA_COLS: [DmaCols; 2] = [dma_cols!("software_dynamic"), dma_cols!("hardware_dynamic")];

/// The [`DMA_GROUPS`] index of a `DmaPacket.queue_type`.
pub fn dma_group(queue_type: &str) -> usize {
    match queue_type {
        "software_dynamic" => 0,
        "hardware_dynamic" => 1,
        _ => 2,
    }
}

/// The `DmaPacket` rows of one queue group of one core, as the Summary needs them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DmaGroup {
    /// Rows.
    pub n: u64,
    /// Σ (end − start), ps (whole calibrated ps of each time, or raw ps on trn2).
    pub dur: i64,
    /// Σ `transfer_bytes`.
    pub bytes: i64,
    /// Union of the packets' `[start, end]`, ps. Packets arrive in start order, so this holds
    /// one component per idle gap of the group's DMA activity, not one per packet, packed.
    pub u: PackedUnion,
}

impl DmaGroup {
    /// Adds one packet `[s, e]` (ps) of `bytes`.
    pub fn push(&mut self, s: i64, e: i64, bytes: u64) {
        let e = e.max(s);
        self.n += 1;
        self.dur = self.dur.saturating_add(e.saturating_sub(s));
        self.bytes = self
            .bytes
            .saturating_add(i64::try_from(bytes).unwrap_or(i64::MAX));
        self.u.push(s, e);
    }
}

/// What the NTFF decoder's time-ordered DMA pass gathered for one core (`DmaCoreStats::times`):
/// the Summary's DMA fields per queue group, and the `DmaUsage` figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DmaTimes {
    /// Per [`DMA_GROUPS`] entry.
    pub groups: [DmaGroup; 3],
    /// `DmaUsage` rows written for the core.
    pub usage_rows: u64,
    /// Most packets the pass held at once (reorder heap + `DmaUsage` packets in flight): the
    /// high-water mark of its state, for the memory tests.
    pub peak_packets: usize,
    /// Sorted runs of the core's DMA buffers merged (0 when the pass fell back to sorting).
    pub runs: usize,
}

/// An integer column resolved once per batch (int64 or int32; absent → all null); also used by
/// `crate::derived`.
pub(crate) enum IntCol<'b> {
    I64(&'b Int64Array),
    I32(&'b Int32Array),
    Absent,
}

impl<'b> IntCol<'b> {
    pub(crate) fn of(b: &'b RecordBatch, name: &str) -> Self {
        let Some(c) = b.column_by_name(name) else {
            return IntCol::Absent;
        };
        if let Some(a) = c.as_any().downcast_ref::<Int64Array>() {
            return IntCol::I64(a);
        }
        match c.as_any().downcast_ref::<Int32Array>() {
            Some(a) => IntCol::I32(a),
            None => IntCol::Absent,
        }
    }
    pub(crate) fn get(&self, i: usize) -> Option<i64> {
        match self {
            IntCol::I64(a) => (i < a.len() && !a.is_null(i)).then(|| a.value(i)),
            IntCol::I32(a) => (i < a.len() && !a.is_null(i)).then(|| i64::from(a.value(i))),
            IntCol::Absent => None,
        }
    }
}

fn str_at<'a>(a: Option<StrCol<'a>>, i: usize) -> Option<&'a str> {
    a.and_then(|a| a.get(i))
}

/// Interval of row `i` in ps: raw ticks when `raw_ps` (trn2, identity calibration), else the raw
/// ticks calibrated with `cal` and floored to whole ps each (the inf2 exports' times: 9/9,
/// docs/formats.md "Summary"), else the ns columns × 1000.
fn span_of(
    i: usize,
    raw: (&IntCol, &IntCol),
    ns: (&IntCol, &IntCol),
    raw_ps: bool,
    cal: Option<ClockCal>,
) -> Option<(i64, i64)> {
    if let (Some(s), Some(e)) = (raw.0.get(i), raw.1.get(i)) {
        if raw_ps {
            return Some((s, e));
        }
        if let (Some(c), Ok(s), Ok(e)) = (cal, u64::try_from(s), u64::try_from(e)) {
            let ps = |fs: i128| {
                crate::ntff::dma::ps_floor(fs).clamp(i64::MIN.into(), i64::MAX.into()) as i64
            };
            return Some((ps(c.fs(s)), ps(c.fs(e))));
        }
    }
    match (ns.0.get(i), ns.1.get(i)) {
        (Some(s), Some(e)) => Some((s.saturating_mul(1000), e.saturating_mul(1000))),
        _ => None,
    }
}

/// A stream key: two interned names and the pcore.
type Key = (u32, u32, i64);
/// The same key as read from a row (before interning).
type RowKey<'b> = (Option<&'b str>, Option<&'b str>, i64);

/// Small string interner: per-row keys become integers (no allocation per row).
#[derive(Debug, Default)]
struct Names {
    ids: HashMap<String, u32>,
    names: Vec<String>,
}

impl Names {
    fn id(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.ids.get(s) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(s.to_string());
        self.ids.insert(s.to_string(), i);
        i
    }
    fn name(&self, i: u32) -> &str {
        self.names.get(i as usize).map_or("", String::as_str)
    }
}

/// Everything `Summary`/`OpcodeSummary` need from the `Instruction` batches, accumulated batch
/// by batch while the tables stream (no copy of the rows): counts and sums, plus the union per
/// (engine, opcode, pcore) stream kept as its connected components, packed ([`PackedUnion`]:
/// each stream is one engine of one core, which arrives in start order). Unions over
/// streams are taken at write time by k-way merges. The DMA fields come from the decoder's
/// time-ordered DMA pass instead ([`DmaTimes`] in each core's `DmaCoreStats`).
#[derive(Debug, Default)]
pub struct Gathered {
    raw_ps: bool,
    /// Per core (NTFF subgraph order): calibrates raw ticks when they are not ps (inf2).
    cals: Vec<Calibration>,
    names: Names,
    /// (engine, opcode, pcore) → index in `spans`.
    ops: HashMap<Key, usize>,
    /// The spans of each (engine, opcode, pcore) stream.
    spans: Vec<Spans>,
}

impl Gathered {
    /// An empty accumulator. `raw_ps`: raw ticks are picoseconds (trn2; see [`write_summary`]);
    /// else `cals` (per core, NTFF subgraph order) turns each raw time into whole ps on its own
    /// (the inf2 exports' times, docs/formats.md "Summary").
    pub fn new(raw_ps: bool, cals: Vec<Calibration>) -> Self {
        Gathered {
            raw_ps,
            cals,
            ..Default::default()
        }
    }

    /// Takes one `Instruction` batch (columns `start_ts`, `end_ts`, `nscope_raw_*_ticks`,
    /// `engine`, `opcode`, `pcore_idx`).
    pub fn add_instructions(&mut self, b: &RecordBatch) {
        let (s, e) = (IntCol::of(b, "start_ts"), IntCol::of(b, "end_ts"));
        let (rs, re) = (
            IntCol::of(b, "nscope_raw_start_ticks"),
            IntCol::of(b, "nscope_raw_end_ticks"),
        );
        let pc = IntCol::of(b, "pcore_idx");
        let col = |n: &str| StrCol::by_name(b, n);
        let (eng, op) = (col("engine"), col("opcode"));
        // Dictionary columns (the decoder's): each value's Names id once per batch, and the
        // stream of each (engine key, opcode key) once per batch and core, so a row costs two
        // key reads and a vector index, no string hashed or compared.
        let ids = |c: Option<StrCol<'_>>, names: &mut Names| match c {
            Some(StrCol::Dict(_, v)) => Some(
                (0..v.len())
                    .map(|j| names.id(if v.is_valid(j) { v.value(j) } else { "" }))
                    .collect::<Vec<u32>>(),
            ),
            _ => None,
        };
        let (eng_ids, op_ids) = (ids(eng, &mut self.names), ids(op, &mut self.names));
        let n_ops = op_ids.as_ref().map_or(0, Vec::len);
        // (engine key × opcode values + opcode key) → (pcore, stream).
        let mut streams: Vec<Option<(i64, usize)>> =
            vec![None; eng_ids.as_ref().map_or(0, Vec::len) * n_ops];
        let mut last: Option<(RowKey<'_>, usize)> = None;
        for i in 0..b.num_rows() {
            let cal = if self.raw_ps {
                None
            } else {
                row_cal(&self.cals, pc.get(i), |c| {
                    let n = str_at(eng, i)?;
                    (0..5u32)
                        .filter_map(Engine::from_ntff)
                        .find(|x| x.explorer_name() == n)
                        .and_then(|x| c.engines.get(x.ntff_index()).copied())
                })
            };
            let Some((a, z)) = span_of(i, (&rs, &re), (&s, &e), self.raw_ps, cal) else {
                continue;
            };
            let pcore = pc.get(i).unwrap_or(0);
            let codes = eng.and_then(|c| c.key(i)).zip(op.and_then(|c| c.key(i)));
            let cached = codes.and_then(|(ek, ok)| {
                let slot = streams.get_mut(ek * n_ops + ok)?;
                match *slot {
                    Some((p, k)) if p == pcore => Some(k),
                    _ => {
                        let (ei, oi) = (eng_ids.as_ref()?.get(ek)?, op_ids.as_ref()?.get(ok)?);
                        let k = stream(&mut self.ops, &mut self.spans, (*ei, *oi, pcore));
                        *slot = Some((pcore, k));
                        Some(k)
                    }
                }
            });
            let k = match cached {
                Some(k) => k,
                None => {
                    // Plain or null names: by text.
                    let rk = (str_at(eng, i), str_at(op, i), pcore);
                    match last {
                        Some((lk, k)) if lk == rk => k,
                        _ => {
                            let key = (
                                self.names.id(rk.0.unwrap_or_default()),
                                self.names.id(rk.1.unwrap_or_default()),
                                pcore,
                            );
                            let k = stream(&mut self.ops, &mut self.spans, key);
                            last = Some((rk, k));
                            k
                        }
                    }
                }
            };
            if let Some(sp) = self.spans.get_mut(k) {
                sp.push(a, z);
            }
        }
    }

    /// Bytes of heap held by the interval lists (for the memory figures in docs/formats.md).
    pub fn heap_bytes(&self) -> usize {
        self.spans.iter().map(|s| s.u.heap_bytes()).sum::<usize>()
    }
    /// Bytes of the interval lists on disk ([`crate::store::Spill`]).
    pub fn spilled_bytes(&self) -> usize {
        self.spans
            .iter()
            .map(|s| s.u.spilled_bytes())
            .sum::<usize>()
    }
}

/// The index in `spans` of stream `key`, added when new.
fn stream(ops: &mut HashMap<Key, usize>, spans: &mut Vec<Spans>, key: Key) -> usize {
    *ops.entry(key).or_insert_with(|| {
        spans.push(Spans::default());
        spans.len() - 1
    })
}

/// Forwards every batch to `inner` and feeds `Instruction` batches to [`Gathered`].
pub struct SummaryCollector<'a> {
    /// Where the batches go.
    pub inner: &'a mut dyn TableSink,
    /// What was gathered.
    pub state: Gathered,
}

impl TableSink for SummaryCollector<'_> {
    fn batch(&mut self, def: &'static TableDef, batch: RecordBatch) -> Result<()> {
        if def.name == "Instruction" {
            self.state.add_instructions(&batch);
        }
        self.inner.batch(def, batch)
    }
}

/// Calibration of a row's raw ticks: core `pcore` of `cals` (NTFF subgraph order), then `pick`.
fn row_cal(
    cals: &[Calibration],
    pcore: Option<i64>,
    pick: impl Fn(&Calibration) -> Option<ClockCal>,
) -> Option<ClockCal> {
    usize::try_from(pcore?)
        .ok()
        .and_then(|p| cals.get(p))
        .and_then(pick)
}

/// Reads `Instruction` from `t` (the DMA fields come from the report). `raw_ps`: raw ticks are picoseconds; else
/// `cals` (per core, NTFF subgraph order) calibrates them.
pub fn gather(t: &Tables, raw_ps: bool, cals: &[Calibration]) -> Gathered {
    let mut g = Gathered::new(raw_ps, cals.to_vec());
    for b in t.get("Instruction").unwrap_or(&[]) {
        g.add_instructions(b);
    }
    g
}

/// Writes one `Summary` row and the `OpcodeSummary` rows for a decoded device profile from its
/// in-memory tables. `raw_ps` as in [`gather`] (true when every calibration entry is the
/// identity, i.e. trn2). Streaming callers use [`SummaryCollector`] and [`write_gathered`].
pub fn write_summary(
    t: &Tables,
    report: &DecodeReport,
    raw_ps: bool,
    sink: &mut dyn TableSink,
) -> Result<()> {
    let cals: Vec<Calibration> = report
        .info
        .subgraphs
        .iter()
        .map(|s| s.calibration.clone())
        .collect();
    write_gathered(gather(t, raw_ps, &cals), report, 1, sink)
}

/// Writes `Summary` and `OpcodeSummary` from what a [`SummaryCollector`] gathered. `threads`
/// (natively; ≥ 2 only where the caller has a core to spare, as after the split decode): the
/// engines' interval unions are merged on that many threads, the rows are the same.
pub fn write_gathered(
    mut g: Gathered,
    report: &DecodeReport,
    threads: usize,
    sink: &mut dyn TableSink,
) -> Result<()> {
    let _ = crate::store::take_spill_error();
    for s in &mut g.spans {
        s.u.compact();
    }
    let names = &g.names;
    // (engine, opcode) → its streams (one per pcore), in name order like the old BTreeMap.
    let mut opcodes: BTreeMap<(&str, &str), Vec<&Spans>> = BTreeMap::new();
    for (&(e, o, _), &k) in &g.ops {
        if let Some(sp) = g.spans.get(k) {
            opcodes
                .entry((names.name(e), names.name(o)))
                .or_default()
                .push(sp);
        }
    }
    let count = |v: &[&Spans]| v.iter().map(|s| s.count()).sum::<u64>();
    let total = |v: &[&Spans]| v.iter().fold(0i64, |a, s| a.saturating_add(s.total()));
    // Per engine, one merge of its opcodes' streams: its busy union, which excludes
    // semaphore waits = the EVENT_SEMAPHORE instructions (v6 exports: instruction and active
    // times 7/7 on raw-ps sums and unions), and each opcode's union.
    let mut busy: BTreeMap<&str, i64> = BTreeMap::new();
    let mut op_union: BTreeMap<(&str, &str), i64> = BTreeMap::new();
    let engine_names: Vec<&str> = {
        let mut v: Vec<&str> = opcodes.keys().map(|(e, _)| *e).collect();
        v.dedup();
        v
    };
    /// An engine's busy union and each of its (engine, opcode) unions, ps.
    type EngineUnion<'n> = (i64, Vec<((&'n str, &'n str), i64)>);
    let engine_union = |eng: &str| -> EngineUnion<'_> {
        let ops: Vec<(&(&str, &str), &Vec<&Spans>)> =
            opcodes.iter().filter(|((e, _), _)| *e == eng).collect();
        let (mut lists, mut group, mut in_total) = (Vec::new(), Vec::new(), Vec::new());
        for (g, ((_, o), v)) in ops.iter().enumerate() {
            for sp in v.iter() {
                lists.push(sp.u.iter());
                group.push(g);
                in_total.push(*o != "EVENT_SEMAPHORE");
            }
        }
        let (act, per_op) = union_lens(lists, &group, &in_total, ops.len());
        (act, ops.iter().map(|(k, _)| **k).zip(per_op).collect())
    };
    // Heaviest engines first, each to the least loaded thread (the results keep engine order).
    let weights: Vec<u64> = engine_names
        .iter()
        .map(|eng| {
            opcodes
                .iter()
                .filter(|((e, _), _)| e == eng)
                .map(|(_, v)| count(v))
                .sum()
        })
        .collect();
    let thread = crate::util::least_loaded(&weights, threads);
    let unions = crate::util::on_threads(
        engine_names.clone(),
        threads,
        |i| thread.get(i).copied().unwrap_or(0),
        "Summary",
        |eng| Ok(engine_union(eng)),
    )?;
    for (eng, (act, per_op)) in engine_names.iter().zip(unions) {
        busy.insert(eng, act);
        op_union.extend(per_op);
    }
    let mut b = TableBuilder::new(&explorer::SUMMARY);
    // Explorer's Summary times and percents are float32.
    let f32c = |v: Option<f64>| v.map(|v| v as f32);
    let total_ps = report.total_time_ps.map(|p| p as i64);
    let secs = |ps: i64| Some(ps as f64 * 1e-12);
    let frac = |ps: i64| total_ps.filter(|t| *t > 0).map(|t| ps as f64 / t as f64);
    b.set(sm::TOTAL_TIME, f32c(total_ps.and_then(secs)));
    b.set(
        sm::NEURONCORE_CYCLE_COUNT,
        report.neuroncore_cycle_count.map(|x| x as i64),
    );
    b.set(sm::TRACE_COUNT, Some(report.trace_count as i64));
    b.set(sm::EVENT_COUNT, Some(report.event_count as i64));
    for (&(name, _), ec) in ENGINES.iter().zip(ENGINE_COLS.iter()) {
        let sp: Vec<&Spans> = opcodes
            .iter()
            .filter(|((e, o), _)| *e == name && *o != "EVENT_SEMAPHORE")
            .flat_map(|(_, v)| v.iter().copied())
            .collect();
        let act = busy.get(name).copied().unwrap_or(0);
        b.set(ec.instruction_time, f32c(secs(total(&sp))));
        b.set(ec.active_time, f32c(secs(act)));
        b.set(ec.active_time_percent, f32c(frac(act)));
        let n: u64 = opcodes
            .iter()
            .filter(|((e, _), _)| *e == name)
            .map(|(_, s)| count(s))
            .sum();
        b.set(ec.instruction_count, Some(n as i64));
    }
    let count_op = |op: &str| -> (u64, i64) {
        opcodes
            .iter()
            .filter(|((_, o), _)| *o == op)
            .fold((0, 0), |a, (_, s)| (a.0 + count(s), a.1 + total(s)))
    };
    b.set(
        sm::MATMUL_INSTRUCTION_COUNT,
        Some(count_op("MATMUL").0 as i64),
    );
    let (an, at) = count_op("ACTIVATE");
    b.set(sm::ACTIVATE_INSTRUCTION_COUNT, Some(an as i64));
    b.set(sm::ACTIVATE_INSTRUCTION_TIME, f32c(secs(at)));
    // DMA: per core and queue group, from the decoder's time-ordered pass (DmaTimes).
    let groups = |k: usize| {
        report
            .cores
            .iter()
            .filter_map(move |c| c.dma.times.groups.get(k))
    };
    let all_groups = || report.cores.iter().flat_map(|c| c.dma.times.groups.iter());
    let all = all_groups().map(|g| g.n).sum::<u64>();
    let all_bytes: i64 = all_groups().fold(0i64, |a, g| a.saturating_add(g.bytes));
    let dma_act = union_len_of(all_groups().map(|g| g.u.iter()));
    b.set(
        sm::DMA_PACKET_TIME,
        f32c(secs(
            all_groups().fold(0i64, |a, g| a.saturating_add(g.dur)),
        )),
    );
    b.set(sm::DMA_ACTIVE_TIME, f32c(secs(dma_act)));
    b.set(sm::DMA_ACTIVE_TIME_PERCENT, f32c(frac(dma_act)));
    // dma_active_time × NeuronCore clock (cycles = ps × GHz / 1000).
    b.set(
        sm::DMA_ACTIVE_CYCLES,
        Some((dma_act as f64 * f64::from(report.neuroncore_clock_ghz) / 1000.0) as i64),
    );
    let pct = |n: f64, d: f64| (d > 0.0).then(|| n / d);
    // Per-kind DMA active percents are fractions of dma_active_time, not of total_time (7/7 v6).
    let dfrac = |ps: i64| pct(ps as f64, dma_act as f64);
    let (mut dyn_n, mut dyn_b) = (0u64, 0i64);
    let mut dyn_act = 0i64;
    for (k, dc) in DYN_DMA_COLS.iter().enumerate() {
        let n: u64 = groups(k).map(|g| g.n).sum();
        let by: i64 = groups(k).fold(0i64, |a, g| a.saturating_add(g.bytes));
        let act = union_len_of(groups(k).map(|g| g.u.iter()));
        dyn_n += n;
        dyn_b = dyn_b.saturating_add(by);
        dyn_act += act;
        b.set(dc.dma_active_time, f32c(secs(act)));
        b.set(dc.dma_active_time_percent, f32c(dfrac(act)));
        b.set(dc.dma_packet_count, Some(n as i64));
        b.set(dc.dma_size, Some(by));
        b.set(dc.dma_packet_percent, f32c(pct(n as f64, all as f64)));
        b.set(dc.dma_size_percent, f32c(pct(by as f64, all_bytes as f64)));
    }
    let st_n = all - dyn_n;
    let st_b = all_bytes - dyn_b;
    let st_act = union_len_of(groups(2).map(|g| g.u.iter()));
    b.set(sm::STATIC_DMA_ACTIVE_TIME, f32c(secs(st_act)));
    b.set(sm::STATIC_DMA_ACTIVE_TIME_PERCENT, f32c(dfrac(st_act)));
    b.set(
        sm::DYNAMIC_DMA_ACTIVE_TIME_PERCENT,
        f32c(
            // = software + hardware active time (each a union), as a fraction of dma_active_time
            // (7/7 v6; the union of all dynamic packets, or 1 − static share, give 4/7).
            dfrac(dyn_act),
        ),
    );
    b.set(sm::STATIC_DMA_PACKET_COUNT, Some(st_n as i64));
    b.set(sm::STATIC_DMA_SIZE, Some(st_b));
    b.set(
        sm::STATIC_DMA_PACKET_PERCENT,
        f32c(pct(st_n as f64, all as f64)),
    );
    b.set(
        sm::DYNAMIC_DMA_PACKET_PERCENT,
        f32c(pct(dyn_n as f64, all as f64)),
    );
    b.set(
        sm::STATIC_DMA_SIZE_PERCENT,
        f32c(pct(st_b as f64, all_bytes as f64)),
    );
    b.set(
        sm::DYNAMIC_DMA_SIZE_PERCENT,
        f32c(pct(dyn_b as f64, all_bytes as f64)),
    );
    b.end_row_into(sink)?;
    b.finish_into(sink)?;

    let mut b = TableBuilder::new(&explorer::OPCODE_SUMMARY);
    for ((eng, op), sp) in &opcodes {
        let act = op_union.get(&(*eng, *op)).copied().unwrap_or(0);
        b.set(os::ENGINE, *eng);
        b.set(os::OPCODE, *op);
        b.set(os::COUNT, count(sp) as i64);
        b.set(os::TIME, total(sp) / 1000);
        b.set(os::ACTIVE, act / 1000);
        b.set(os::PERCENT, f32c(frac(act).map(|f| f * 100.0)));
        b.end_row_into(sink)?;
    }
    b.finish_into(sink)?;
    // Unions read back from a failing spill are short: say so rather than pass them for exact.
    match crate::store::take_spill_error() {
        Some(e) => Err(crate::error::Error::Io(format!(
            "Summary/OpcodeSummary: {e}"
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One merge over grouped lists gives each group's union and the flagged lists' union,
    /// as separate merges do (overlaps across and within groups, touching ends, empty lists).
    #[test]
    fn union_lens_equals_separate_unions() {
        let lists: Vec<Vec<(i64, i64)>> = vec![
            vec![(0, 10), (20, 30), (50, 55)],
            vec![(5, 12), (30, 40)],
            vec![],
            vec![(8, 9), (100, 120)],
            vec![(-5, 1), (55, 60), (61, 61)],
        ];
        let group = [0usize, 1, 1, 0, 2];
        let in_total = [true, true, false, false, true];
        let (total, per) = union_lens(
            lists.iter().map(|l| l.iter().copied()).collect(),
            &group,
            &in_total,
            3,
        );
        let of = |pick: &dyn Fn(usize) -> bool| {
            union_len(
                lists
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| pick(*k))
                    .map(|(_, l)| l.as_slice()),
            )
        };
        assert_eq!(total, of(&|k| in_total[k]));
        // [-5, 12] [20, 40] [50, 60] [61, 61]
        assert_eq!(total, 17 + 20 + 10);
        for (g, &u) in per.iter().enumerate() {
            assert_eq!(u, of(&|k| group[k] == g), "group {g}");
        }
        assert_eq!(per, vec![10 + 10 + 5 + 20, 7 + 10, 6 + 5]);
    }

    #[test]
    fn union_and_total() {
        let mut s = Spans::default();
        s.push(0, 10);
        s.push(5, 15);
        s.push(20, 30);
        s.push(30, 31);
        assert_eq!(s.total(), 31);
        assert_eq!(s.union(), 26);
        assert_eq!(s.count(), 4);
        assert_eq!(Spans::default().union(), 0);
    }

    /// In-order pushes merge in place (memory = components); any order gives the same union.
    #[test]
    fn union_online_and_out_of_order() {
        let iv: Vec<(i64, i64)> = (0..20_000i64)
            .map(|i| {
                let s = i * 10 + (i % 7);
                (s, s + [3, 10, 0, 25][(i % 4) as usize])
            })
            .collect();
        let mut sorted = Union::default();
        for &(s, e) in &iv {
            sorted.push(s, e);
        }
        assert_eq!(
            sorted.iv.len(),
            sorted.merged,
            "in-order input never goes unmerged"
        );
        let mut shuffled = Union::default();
        for k in 0..iv.len() {
            let (s, e) = iv[(k * 7919) % iv.len()];
            shuffled.push(s, e);
        }
        let want: Vec<(i64, i64)> = sorted.intervals().to_vec();
        assert_eq!(shuffled.intervals(), &want[..]);
        // Reference: sort + merge of everything at once.
        let mut all = iv.clone();
        all.sort_unstable();
        let mut r: Vec<(i64, i64)> = Vec::new();
        for (s, e) in all {
            match r.last_mut() {
                Some(l) if s <= l.1 => l.1 = l.1.max(e),
                _ => r.push((s, e)),
            }
        }
        assert_eq!(want, r);
        assert!(want.len() < iv.len() && want.len() > 1);
        // k-way union of two lists = union of the concatenation.
        let mut a = Union::default();
        let mut b = Union::default();
        for (k, &(s, e)) in iv.iter().enumerate() {
            if k % 3 == 0 {
                a.push(s, e)
            } else {
                b.push(s, e)
            }
        }
        let len: i64 = r.iter().map(|(s, e)| e - s).sum();
        assert_eq!(
            union_len(
                [a.intervals(), b.intervals()]
                    .into_iter()
                    .map(|x| x.to_vec())
                    .collect::<Vec<_>>()
                    .iter()
                    .map(|v| &v[..])
            ),
            len
        );
        assert_eq!(union_len(std::iter::empty::<&[(i64, i64)]>()), 0);
    }

    /// The packed union equals the plain one, in order (packed) and out of order (spilled),
    /// at the ends of the i64 range too; the packed sequence reads back what was pushed.
    #[test]
    fn packed_union_and_seq() {
        let mut iv: Vec<(i64, i64)> = (0..20_000i64)
            .map(|i| {
                let s = i * 10 + (i % 7);
                (s, s + [3, 10, 0, 25][(i % 4) as usize])
            })
            .collect();
        iv.extend([(i64::MAX - 5, i64::MAX), (i64::MAX, i64::MAX)]);
        iv.insert(0, (i64::MIN, i64::MIN + 3));
        for shuffle in [false, true] {
            let (mut p, mut u) = (PackedUnion::default(), Union::default());
            for k in 0..iv.len() {
                let (s, e) = iv[if shuffle { (k * 7919) % iv.len() } else { k }];
                p.push(s, e);
                u.push(s, e);
            }
            p.compact();
            assert_eq!(p.spill.is_some(), shuffle);
            let got: Vec<(i64, i64)> = p.iter().collect();
            assert_eq!(got, u.intervals());
            assert!(got.len() > 1000);
            assert_eq!(union_len_of([p.iter()]), union_len([u.intervals()]));
            if !shuffle {
                assert!(p.heap_bytes() < got.len() * 6, "{} B", p.heap_bytes());
            }
        }
        assert_eq!(PackedUnion::default().iter().count(), 0);
        let vals = [
            0,
            5,
            3,
            i64::MAX,
            i64::MIN,
            -1,
            1_000_000_007,
            1_000_000_008,
        ];
        let mut q = PackedSeq::default();
        for v in vals {
            q.push(v);
        }
        assert_eq!(q.iter().collect::<Vec<_>>(), vals);
    }

    /// With the thread's spill (crate::store::Spill) a packed union or sequence keeps one chunk
    /// in memory whatever its length, and reads back exactly what it holds without one.
    #[test]
    fn spilled_logs_equal_kept_ones() {
        let iv: Vec<(i64, i64)> = (0..200_000i64)
            .map(|i| (i * 1000 + i % 13, i * 1000 + 400 + i % 97))
            .collect();
        let mut got = Vec::new();
        for on in [false, true] {
            crate::store::set_spill(on);
            let (mut p, mut q) = (PackedUnion::default(), PackedSeq::default());
            for &(s, e) in &iv {
                p.push(s, e);
                q.push(e);
            }
            let spilled = p.spilled_bytes() + q.spilled_bytes();
            if on {
                // ≈ 0.8 + 0.4 MB of components: all but one chunk each on disk.
                assert!(spilled > 1_000_000, "{spilled} B spilled");
                assert!(p.heap_bytes() < 2 * LOG_CHUNK, "{} B", p.heap_bytes());
                assert!(q.heap_bytes() < 2 * LOG_CHUNK, "{} B", q.heap_bytes());
            } else {
                assert_eq!(spilled, 0);
                assert!(p.heap_bytes() > 500_000);
            }
            let u: Vec<(i64, i64)> = p.iter().collect();
            let v: Vec<i64> = q.iter().collect();
            assert_eq!(u.len(), iv.len());
            assert_eq!(v, iv.iter().map(|x| x.1).collect::<Vec<_>>());
            got.push((u, v, p.clone()));
        }
        crate::store::set_spill(true);
        assert!(crate::store::take_spill_error().is_none());
        assert_eq!(got[0].0, got[1].0);
        // Equality compares contents, wherever they are.
        assert_eq!(got[0].2, got[1].2);
    }

    /// Input at most a window out of order stays packed; further out it spills; both exact.
    #[test]
    fn near_sorted_window() {
        let iv: Vec<(i64, i64)> = (0..20_000i64)
            .map(|i| (i * 10, i * 10 + 4 + i % 9))
            .collect();
        for (block, spills) in [(1usize, false), (200, false), (2000, true)] {
            // Reverse every block of `block` intervals: displacement < block.
            let mut order: Vec<(i64, i64)> = Vec::new();
            for c in iv.chunks(block) {
                order.extend(c.iter().rev());
            }
            let (mut n, mut u) = (NearSorted::default(), Union::default());
            for &(s, e) in &order {
                n.push(s, e);
                u.push(s, e);
            }
            n.compact();
            assert_eq!(n.u.spill.is_some(), spills, "block {block}");
            assert_eq!(n.iter().collect::<Vec<_>>(), u.intervals(), "block {block}");
        }
    }
}
