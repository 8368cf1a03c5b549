//! Streaming NTFF decode into Explorer tables (ntff.md §4, §5, §10).
//!
//! Tables written: `Instruction`, `SemaphoreUpdate`, `Metadata` (one row), `ExecutionInfo`;
//! `DmaPacket`, `Throttle`, `ThrottleSummary`, `DmaQueuesInfo` through [`super::dma`].
//! Each trace buffer is read by (offset, size) in [`CHUNK`]-byte pieces; instruction pairing keeps
//! at most [`MAX_OPEN_PER_PC`] open starts per (engine, pc). A bad buffer becomes a
//! [`Problem`] naming file and offset; the other buffers are still decoded.

use std::collections::{BTreeMap, VecDeque};

use rustc_hash::FxHashMap;

use super::dma::{
    decode_dma_core, decode_throttles, dma_bytes_total, DmaCoreStats, DmaIds, NtffIo,
};
use super::{opcode, read_info, CodeBlock, NtffInfo, SubgraphInfo, TraceBuffer};
use crate::engine::Engine;
use crate::error::{Code, Error, Problem, Result};
use crate::source::ByteSource;
use crate::tables::{explorer, Memo, TableBuilder, TableSink, PROFILE_SCHEMA_VERSION};

/// Bytes read per request when streaming a buffer (a multiple of 16 and of 64). Natively small
/// enough that a piece is still in cache when its records are decoded right after the copy
/// (4 MiB pieces cost the instruction-dense decode ≈ 13 % more: each byte went to memory and
/// back); in the page 16 MiB, since every read is a `FileReaderSync` call through the browser.
#[cfg(not(target_arch = "wasm32"))]
pub const CHUNK: usize = 256 * 1024;
/// Bytes read per request when streaming a buffer (see the native definition;
/// [`crate::source::BROWSER_READ`]).
#[cfg(target_arch = "wasm32")]
pub const CHUNK: usize = crate::source::BROWSER_READ;
/// Open start records kept per (engine, pc) before the oldest is dropped (the samples never
/// have more than one, ntff.md §4.1).
pub const MAX_OPEN_PER_PC: usize = 16;
/// Open start records kept per core in total (bounds memory on corrupt input, ~40 MiB); further
/// starts are counted as unpaired and dropped.
pub const MAX_OPEN_TOTAL: usize = 1 << 20;
/// Slots read per code block: pcs are 20 bits wide (ntff.md §4.2), so slots beyond 2²⁰ are
/// unreachable.
pub const MAX_SLOTS: u64 = 1 << 20;
/// Opcode of the PE NOTIFY whose end is the v4/v5 time origin (ntff.md §5.3, §7).
pub const START_NOTIFY_OPCODE: u8 = 0xA6;
/// Fixed names of semaphores 3 – 6 in the exports (ntff.md §4.3, every v6 and v5 export).
pub const FIXED_SEMAPHORE_NAMES: [(u32, &str); 4] =
    [(3, "GpSimd"), (4, "Scalar"), (5, "Tensor"), (6, "Vector")];

/// What the caller knows from outside the NTFF (the paired NEFF, the file name, id ranges).
#[derive(Debug, Clone, Default)]
pub struct DecodeContext {
    /// File name used in problems (relative to the picked folder).
    pub file_name: String,
    /// `DmaPacket.id` of the first packet row; rows are numbered sequentially from here.
    pub first_dma_id: i64,
    /// NEFF `info.json` tool version, copied to `Metadata.compiler_version`.
    pub compiler_version: Option<String>,
    /// per pcore_idx: semaphore index → queue name already renamed Explorer-style
    /// (e.g. 24 → "qSyncDynamicHW"); empty when no NEFF. Names 3 – 6 are added by the decoder
    /// ([`FIXED_SEMAPHORE_NAMES`]) unless given here.
    pub semaphore_names: Vec<BTreeMap<u32, String>>,
    /// `Instruction.id` of the first row; rows are numbered sequentially from here.
    pub first_instruction_id: i64,
    /// Debug info of the paired NEFF (`crate::neff::debug::load`): fills compiler_pc, BIR,
    /// Penguin, HLO and NKI columns of `Instruction` (ntff.md §7.3, neff.md §9.3).
    pub attribution: Option<std::sync::Arc<crate::neff::debug::NeffDebug>>,
    /// Leave every core's DMA rows (`DmaPacket`, `DmaPacketAggregated`) to another worker
    /// ([`dma_side`]): this decode runs each core's time-ordered pass from its own scan of the
    /// records (`DmaUsage`, the Summary's DMA fields) and its row figures stay zero until
    /// [`DecodeReport::merge_dma`] adds that worker's. The page's split decode; `false`
    /// everywhere else.
    pub dma_elsewhere: bool,
}

/// Which zero point the timestamps use (ntff.md §5.3).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub enum TimeOrigin {
    /// v6: info field 15.2 (t0); the window closes at 15.3 (t1).
    ExecutionRecord,
    /// v4/v5: end of the PE start-of-execution NOTIFY at runtime `pc` (40 on inf2), executed
    /// `executions` times (the last one in time is used).
    StartNotify { pc: u32, executions: u32 },
    /// v4/v5 without a start-of-execution NOTIFY: the earliest instruction start record in any
    /// code block (documented fallback, flagged by a Warning).
    FirstInstruction,
    /// No instruction record at all: raw ticks / 1000.
    RawTicks,
}

/// Per physical core numbers (the JSON export's `model_info`, ntff.md §5.2).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct CoreSummary {
    /// Subgraph name (sg00, sg01).
    pub name: String,
    /// Physical NeuronCore index (subgraph field 3).
    pub core: u32,
    /// Instruction rows per engine (PE, ACT, POOL, DVE, SP).
    pub instructions_per_engine: [u64; 5],
    /// Event records in the window, whatever w0[15:8] holds.
    pub event_count: u64,
    /// SemaphoreUpdate rows.
    pub semaphore_updates: u64,
    /// End of the core's last exported instruction, ns from the origin.
    pub last_instruction_end_ns: Option<i64>,
    /// ⌊(end of last instruction − t0) in ps × clock / 1000⌋ (ntff.md §5.2).
    pub neuroncore_cycle_count: Option<u64>,
    /// Instruction records outside every code block (foreign images, ntff.md §4.2).
    pub foreign_records: u64,
    /// Start records never matched by an end (e.g. blocked when capture stopped).
    pub unpaired_starts: u64,
    /// End records without an open start.
    pub unpaired_ends: u64,
    /// DMA and throttle numbers of this core (`DmaPacket`, `Throttle` rows).
    pub dma: DmaCoreStats,
    /// Instruction rows + `event_count` + DMA rows (JSON `model_info.trace_count`, ntff.md §5.2).
    pub trace_count: u64,
    /// Records of the extra kinds `0x8E`/`0x96` (DGE notifications, ntff.md §4.1); skipped.
    pub dge_notifications: u64,
    /// Records set aside by kind, with the offset of the first (reported as problems).
    pub set_aside: super::errors::InsSetAside,
}

/// What [`decode`] found, for a Summary view.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct DecodeReport {
    /// Header and info section.
    pub info: NtffInfo,
    /// `Instruction` rows written.
    pub instructions: u64,
    /// Instruction rows per pcore (0, 1) and engine (PE, ACT, POOL, DVE, SP).
    pub instructions_per_engine: [[u64; 5]; 2],
    /// `SemaphoreUpdate` rows written.
    pub semaphore_updates: u64,
    /// `DmaPacket` rows written, all cores.
    pub dma_packets: u64,
    /// Sum of `DmaPacket.transfer_bytes`, all cores.
    pub dma_bytes: u64,
    /// `Throttle` rows written, all cores.
    pub throttles: u64,
    /// Sum over cores of [`CoreSummary::trace_count`] (JSON `summary.trace_count`, ntff.md §5.2).
    pub trace_count: u64,
    /// Execution time: subgraph field 14 of the first subgraph, ps (= JSON `summary.total_time`
    /// × 10¹², ntff.md §5.2).
    pub total_time_ps: Option<u64>,
    /// Problems met while decoding (bad buffers, fallbacks). Tables hold everything else.
    pub problems: Vec<Problem>,
    /// The zero point used.
    pub origin: Option<TimeOrigin>,
    /// Raw ticks per ns (1000: ticks are picoseconds, checked against subgraph field 14 in v6).
    pub ticks_per_nanosec: i64,
    /// `Metadata.last_hw_timestamp`, ns.
    pub last_hw_timestamp_ns: i64,
    /// Events in the window over all cores (`summary.event_count`).
    pub event_count: u64,
    /// ⌊total_time in ns × NeuronCore clock⌋ (`summary.neuroncore_cycle_count`, ns × GHz).
    pub neuroncore_cycle_count: Option<u64>,
    /// NeuronCore clock used for evt_wait_time and cycle counts, GHz (1.2 trn2, 1.4 trn1/inf2).
    pub neuroncore_clock_ghz: f32,
    /// One entry per physical core.
    pub cores: Vec<CoreSummary>,
    /// The time origin t0 in calibrated femtoseconds (v6: field 15.2 × 1000); every table time
    /// is ⌊(t − t0) / 10⁶⌋ ns. Used by `crate::derived` to redo exact interval arithmetic.
    #[serde(skip)]
    pub origin_fs: i128,
    /// With [`DecodeContext::dma_elsewhere`]: per core, where in `problems` its DMA problems go
    /// (where the one-thread decode puts them).
    #[serde(skip)]
    pub dma_at: Vec<usize>,
}

/// What [`dma_side`] found: per core (NTFF subgraph order) the DMA row statistics and the row
/// pass's problems.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DmaSide {
    /// Per core: `DmaPacket` / `DmaPacketAggregated` statistics and problems.
    pub cores: Vec<(DmaCoreStats, Vec<Problem>)>,
}

impl DecodeReport {
    /// Completes a decode made with [`DecodeContext::dma_elsewhere`] with the other worker's
    /// [`DmaSide`]: each core's DMA row statistics (its throttle count and time-ordered pass
    /// kept), its problems put back in order, the DMA totals and trace counts. The report then
    /// equals the one-thread decode's (`end_to_end::split_decode_equals_one_thread`).
    pub fn merge_dma(&mut self, side: DmaSide) {
        let at = std::mem::take(&mut self.dma_at);
        // Back to front, so the earlier insertion points stay valid.
        for (i, (stats, ps)) in side.cores.into_iter().enumerate().rev() {
            let Some(c) = self.cores.get_mut(i) else {
                continue;
            };
            let throttles = c.dma.throttles;
            let times = std::mem::take(&mut c.dma.times);
            c.dma = stats;
            c.dma.throttles = throttles;
            c.dma.times = times;
            let p = at
                .get(i)
                .copied()
                .unwrap_or(self.problems.len())
                .min(self.problems.len());
            self.problems.splice(p..p, ps);
        }
        for c in &mut self.cores {
            let dma = c.dma.packets + c.dma.aggregated;
            c.trace_count += dma;
            self.trace_count += dma;
            self.dma_packets += c.dma.packets;
            self.dma_bytes += c.dma.bytes;
        }
    }
}

/// Hardware constants by instance family. Values observed in the JSON exports' `metadata`
/// (trn2: 7 allenkchau exports; inf2: 9 AnchovyPark exports); trn1 has no export, only the
/// spec's 1.4 GHz (ntff.md §4.1).
#[derive(Debug, Clone, Copy)]
struct Hw {
    clock_others: f32,
    pe_clock: Option<f32>,
    pe_rows_cols: Option<i64>,
    dma_ddr_bw: Option<f64>,
    hbm_bw: Option<f64>,
}

fn hardware(info: &NtffInfo) -> (Hw, Option<String>) {
    let it = info.instance_type.as_str();
    let trn2 = Hw {
        clock_others: 1.2,
        pe_clock: Some(2.4),
        pe_rows_cols: Some(128),
        dma_ddr_bw: Some(435e9),
        hbm_bw: Some(716e9),
    };
    if it.starts_with("trn2") {
        (trn2, None)
    } else if it.starts_with("inf2") {
        let inf2 = Hw {
            clock_others: 1.4,
            pe_clock: Some(2.8),
            pe_rows_cols: Some(128),
            dma_ddr_bw: Some(435e9),
            hbm_bw: Some(410e9),
        };
        (inf2, None)
    } else if it.starts_with("trn1") {
        let trn1 = Hw {
            clock_others: 1.4,
            pe_clock: None,
            pe_rows_cols: None,
            dma_ddr_bw: None,
            hbm_bw: None,
        };
        (trn1, None)
    } else {
        // Unknown instance type: trn2 has identity calibration (ntff.md §5.1), trn1/inf2 do not.
        let ident = info.subgraphs.iter().all(|s| s.calibration.is_identity());
        let clk = if ident { 1.2 } else { 1.4 };
        let hw = Hw {
            clock_others: clk,
            pe_clock: None,
            pe_rows_cols: None,
            dma_ddr_bw: None,
            hbm_bw: None,
        };
        (
            hw,
            Some(format!(
                "unknown instance type {it:?}: assuming a {clk} GHz NeuronCore clock for evt_wait_time"
            )),
        )
    }
}

/// A code block prepared for pc and opcode lookup.
#[derive(Debug, Clone, Default)]
struct EngineCode {
    /// (address >> 6) mod 2²⁰.
    base: u32,
    /// Slot count (capped at [`MAX_SLOTS`]).
    slots: u32,
    /// Byte 0 of each slot (may be shorter than `slots` when the stream could not be read).
    ops: Vec<u8>,
}

/// Time window in femtoseconds (calibrated ps × 1000).
#[derive(Debug, Clone, Copy)]
pub(super) struct Window {
    pub(super) t0: i128,
    pub(super) t1: Option<i128>,
}

impl Window {
    /// The window of a v6 execution record (info field 15.2 – 15.3, ntff.md §5.3), in fs.
    pub(super) fn of_execution(x: &super::ExecutionRecord) -> Window {
        Window {
            t0: x.start as i128 * 1000,
            t1: Some(x.end as i128 * 1000),
        }
    }

    /// ns from t0 of a calibrated time, taken in whole calibrated picoseconds first:
    /// ⌊(⌊fs⌋ps − ⌊t0⌋ps) / 1000⌋, as the DMA decoder does. The inf2 exports floor calibrated
    /// times to whole ps (SemaphoreUpdate 2 966/2 966, Summary times 9/9); on v6 (identity
    /// calibration, t0 in whole ps) it equals ⌊(fs − t0) / 10⁶⌋.
    pub(super) fn ns(&self, fs: i128) -> i64 {
        Self::dur_ns(self.t0, fs)
    }
    /// Duration in ns between two calibrated times, in whole calibrated ps first:
    /// ⌊(⌊end⌋ps − ⌊start⌋ps) / 1000⌋.
    pub(super) fn dur_ns(start_fs: i128, end_fs: i128) -> i64 {
        // Fast path: both fit in i64 (|t| < 9.2 · 10¹⁸ fs ≈ 2.5 h of ps ticks), where the
        // same floors cost a 64-bit division instead of a 128-bit one.
        if let (Ok(s), Ok(e)) = (i64::try_from(start_fs), i64::try_from(end_fs)) {
            if let Some(d) = e.div_euclid(1000).checked_sub(s.div_euclid(1000)) {
                return d.div_euclid(1000);
            }
        }
        clamp_i64(
            end_fs
                .div_euclid(1000)
                .saturating_sub(start_fs.div_euclid(1000))
                .div_euclid(1000),
        )
    }
    /// DMA packet times from its phase-1 and phase-5 calibrated times (ntff.md §4.4):
    /// (`timestamp` ns from t0 by the whole-ps rule, `duration` ⌊(end − start) / 10⁶⌋ ns on the
    /// unfloored fs, the ps-floored duration in fs for `throughput`). Same values as the i128
    /// formulas; the common case (everything within ±9.2 · 10¹⁸ fs) costs 64-bit divisions only.
    #[inline]
    pub(super) fn packet_times(&self, start_fs: i128, end_fs: i128) -> (i64, i64, i128) {
        let start = Self::dur_ns(self.t0, start_fs);
        if let (Ok(s), Ok(e)) = (i64::try_from(start_fs), i64::try_from(end_fs)) {
            if let Some(d) = e.checked_sub(s) {
                let dps = e.div_euclid(1000) - s.div_euclid(1000);
                return (start, d.div_euclid(1_000_000), i128::from(dps) * 1000);
            }
        }
        let dur = clamp_i64(end_fs.saturating_sub(start_fs).div_euclid(1_000_000));
        let dps = end_fs.div_euclid(1000) - start_fs.div_euclid(1000);
        (start, dur, dps * 1000)
    }
    /// v6: a time more than the window's own span before t0 or after t1. No record of a
    /// sample is (their out-of-window records are warm-up and drain, close to the window);
    /// a flipped high timestamp bit is. Reports only.
    pub(super) fn far_outside(&self, fs: i128) -> bool {
        self.t1.is_some_and(|t1| {
            let span = t1.saturating_sub(self.t0).max(0);
            fs < self.t0.saturating_sub(span) || fs > t1.saturating_add(span)
        })
    }
    pub(super) fn contains(&self, fs: i128) -> bool {
        fs >= self.t0 && self.t1.is_none_or(|t1| fs <= t1)
    }
}

pub(super) fn clamp_i64(v: i128) -> i64 {
    v.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

// Typed column ids of the hot tables (a misspelt name or a wrong type fails to compile).
crate::cols!(pub(super) mod ins = crate::tables::explorer::INSTRUCTION {
    START: I64 = "start_ts",
    END: I64 = "end_ts",
    DUR: I64 = "duration_ns",
    ENGINE: Str = "engine",
    TRACK: Str = "timeline_track",
    PCORE: I64 = "pcore_idx",
    OPCODE: Str = "opcode",
    ID: I64 = "id",
    PC: I64 = "pc",
    CRC_IN: I64 = "crc_in",
    CRC_OUT: I64 = "crc_out",
    WAIT: I64 = "evt_wait_time_ns",
    OP_BYTE: I32 = "nscope_opcode_byte",
    RAW_S: I64 = "nscope_raw_start_ticks",
    RAW_E: I64 = "nscope_raw_end_ticks",
    SG: Str = "nscope_subgraph",
    COMPILER_PC: I64 = "compiler_pc",
    BIR_NAME: Str = "bir_instruction_name",
    BIR_ID: Str = "bir_id",
    RAW_BIR_ID: I64 = "raw_bir_id",
    PENGUIN_ID: Str = "penguin_id",
    RAW_PENGUIN_ID: I64 = "raw_penguin_id",
    HLO_NAME: Str = "hlo_name",
    RAW_HLO_ID: I64 = "raw_hlo_id",
    LAYER: Str = "layer",
    STACK_FRAME_IDS: Str = "stack_frame_ids",
    NKI_LOC: Str = "nki_source_location",
    BIR_LOC: Str = "bir_debug_info_source_location",
    KERNEL_NAME: Str = "kernel_instruction_name",
});
crate::cols!(mod sem = crate::tables::explorer::SEMAPHORE_UPDATE {
    TS: I64 = "timestamp",
    ID: Str = "id",
    VALUE: I32 = "value",
    MODE: I32 = "update_mode",
    PCORE: I64 = "pcore_idx",
    INDEX: I32 = "nscope_sem_index",
    W0: I64 = "nscope_raw_w0",
    SG: Str = "nscope_subgraph",
});

struct Out<'a> {
    sink: &'a mut dyn TableSink,
    ins: TableBuilder,
    sem: TableBuilder,
}

impl<'a> Out<'a> {
    fn new(sink: &'a mut dyn TableSink) -> Self {
        Out {
            sink,
            ins: TableBuilder::new(&explorer::INSTRUCTION).always_written(),
            sem: TableBuilder::new(&explorer::SEMAPHORE_UPDATE).always_written(),
        }
    }
    fn finish(mut self) -> Result<()> {
        self.ins.finish_into(self.sink)?;
        self.sem.finish_into(self.sink)?;
        Ok(())
    }
}

use super::raw::InsKind;
pub(super) use super::raw::Rec;

/// Runtime pc of an instruction record (ntff.md §4.2), `None` outside the code block.
fn record_pc(r: Rec, code: &EngineCode) -> Option<u32> {
    let pc = r.pc_bits().wrapping_sub(code.base) & 0xF_FFFF;
    (pc < code.slots).then_some(pc)
}

/// Streams the records of `buf` (offsets relative to the blob at `blob`) through `f`.
/// Returns the bytes consumed; read errors and a buffer running past the end of the file are
/// reported in `problems` (records before the fault are kept).
pub(super) fn stream_buffer<S: ByteSource + ?Sized>(
    src: &S,
    blob: u64,
    buf: &TraceBuffer,
    file: &str,
    problems: &mut Vec<Problem>,
    progress: &mut dyn FnMut(u64),
    mut f: impl FnMut(Rec) -> Result<()>,
) -> Result<()> {
    let Some(start) = blob.checked_add(buf.offset) else {
        problems.push(Problem::new(
            Code::NtffBadBuffer,
            Some(file),
            format!("{file}: trace buffer offset {} overflows", buf.offset),
        ));
        return Ok(());
    };
    let mut size = buf.size;
    let avail = src.len().saturating_sub(start);
    if size > avail {
        let e = Error::Truncated {
            offset: start,
            wanted: size,
            available: avail,
        };
        // The file ends inside a buffer its info section declares: it was cut off. An error
        // (the CLI exits non-zero), with the records before the end kept.
        problems.push(Problem::from_error(Code::NtffTruncated, file, &e));
        size = avail;
    }
    if !size.is_multiple_of(16) {
        problems.push(
            Problem::new(
                Code::NtffBadBuffer,
                Some(file),
                format!(
                    "{file}: trace buffer at offset {start} has {size} bytes, not a multiple of 16; the last {} bytes are ignored",
                    size % 16
                ),
            )
            .at(start),
        );
        size -= size % 16;
    }
    let mut chunk = vec![0u8; (size.min(CHUNK as u64)) as usize];
    let mut done = 0u64;
    while done < size {
        let n = ((size - done).min(CHUNK as u64)) as usize;
        let Some(piece) = chunk.get_mut(..n) else {
            break;
        };
        if let Err(e) = src.read_at(start + done, piece) {
            problems.push(Problem::from_error(
                read_fault(&e, Code::NtffBadBuffer),
                file,
                &e,
            ));
            return Ok(());
        }
        let (recs, _) = piece.as_chunks::<{ super::raw::REC_BYTES }>();
        for r in recs {
            f(Rec::from_bytes(r))?;
        }
        done += n as u64;
        progress(n as u64);
    }
    Ok(())
}

/// The code of a failed read of an NTFF section: a read past the end of a cut file is the file
/// cut (`NTFF_TRUNCATED`) whatever the section; any other failure is `otherwise`, the section's.
fn read_fault(e: &Error, otherwise: Code) -> Code {
    if matches!(e, Error::Truncated { .. }) {
        Code::NtffTruncated
    } else {
        otherwise
    }
}

/// Reads byte 0 of every slot of a code block (inline in v4/v5, in the blob in v6).
fn load_code<S: ByteSource + ?Sized>(
    src: &S,
    blob: u64,
    cb: &CodeBlock,
    file: &str,
    problems: &mut Vec<Problem>,
) -> EngineCode {
    let slots = cb.slots().min(MAX_SLOTS);
    let mut code = EngineCode {
        base: ((cb.address >> 6) & 0xF_FFFF) as u32,
        slots: slots as u32,
        ops: Vec::new(),
    };
    if !cb.inline.is_empty() {
        code.ops = cb
            .inline
            .chunks(64)
            .take(slots as usize)
            .map(|s| s[0])
            .collect();
        return code;
    }
    let Some(start) = blob.checked_add(cb.blob_offset) else {
        return code;
    };
    let total = slots * 64;
    let mut done = 0u64;
    let mut chunk = vec![0u8; total.min(CHUNK as u64) as usize];
    code.ops.reserve(slots as usize);
    while done < total {
        let n = (total - done).min(CHUNK as u64) as usize;
        let Some(piece) = chunk.get_mut(..n) else {
            break;
        };
        if let Err(e) = src.read_at(start.saturating_add(done), piece) {
            let code = read_fault(&e, Code::NtffBadCodeBlock);
            problems.push(Problem::from_error(code, file, &e));
            break;
        }
        code.ops.extend(piece.chunks(64).map(|s| s[0]));
        done += n as u64;
    }
    code
}

fn engine_codes<S: ByteSource + ?Sized>(
    src: &S,
    info: &NtffInfo,
    sg: &SubgraphInfo,
    file: &str,
    problems: &mut Vec<Problem>,
) -> [Option<EngineCode>; 5] {
    let mut out: [Option<EngineCode>; 5] = Default::default();
    for cb in &sg.code_blocks {
        if let Some(slot) = out.get_mut(cb.engine as usize) {
            *slot = Some(load_code(src, info.blob_offset, cb, file, problems));
        }
    }
    out
}

fn instruction_buffers(sg: &SubgraphInfo) -> impl Iterator<Item = &TraceBuffer> {
    sg.buffers
        .iter()
        .filter(|b| b.trace_type == 0 && b.block_type == 0 && b.size > 0)
}

fn event_buffers(sg: &SubgraphInfo) -> impl Iterator<Item = &TraceBuffer> {
    sg.buffers
        .iter()
        .filter(|b| b.trace_type == 1 && b.block_type == 0 && b.size > 0)
}

/// v4/v5 origin (ntff.md §5.3, generalised in docs/formats.md): the end of the PE
/// start-of-execution NOTIFY — the executed PE NOTIFY (opcode `0xA6`) slot with the second-highest
/// pc, the highest being the end-of-execution NOTIFY — calibrated; the last execution of it when
/// there are several. On the nine inf2 exports this is the PE instruction at runtime pc 40 (NOTIFY
/// pcs 0, 17, 40, 67), the exports' zero. The first subgraph that has one decides (one clock on
/// trn2). Falls back to the earliest in-block start record.
fn find_v5_origin<S: ByteSource + ?Sized>(
    src: &S,
    info: &NtffInfo,
    codes: &[[Option<EngineCode>; 5]],
    file: &str,
    problems: &mut Vec<Problem>,
    progress: &mut dyn FnMut(u64),
) -> Result<(i128, TimeOrigin)> {
    let mut earliest: Option<i128> = None;
    let mut found: Option<(u32, u32, i128)> = None;
    for (sg, code) in info.subgraphs.iter().zip(codes) {
        // Executed PE NOTIFY ends: pc → (count, latest end).
        let mut notify: BTreeMap<u32, (u32, i128)> = BTreeMap::new();
        // The instruction pass reads these buffers again and reports their faults: once.
        let mut again = Vec::new();
        for buf in instruction_buffers(sg) {
            stream_buffer(
                src,
                info.blob_offset,
                buf,
                file,
                &mut again,
                progress,
                |r| {
                    let (e, is_end) = match r.ins_kind() {
                        InsKind::Start(e) => (e, false),
                        InsKind::End(e) => (e, true),
                        InsKind::DgeNotification | InsKind::Other => return Ok(()),
                    };
                    let Some(c) = code.get(e).and_then(Option::as_ref) else {
                        return Ok(());
                    };
                    let Some(pc) = record_pc(r, c) else {
                        return Ok(());
                    };
                    let t = sg
                        .calibration
                        .engines
                        .get(e)
                        .copied()
                        .unwrap_or_default()
                        .fs(r.ts);
                    if !is_end {
                        earliest = Some(earliest.map_or(t, |x| x.min(t)));
                    } else if e == 0 && c.ops.get(pc as usize) == Some(&START_NOTIFY_OPCODE) {
                        let n = notify.entry(pc).or_insert((0, t));
                        n.0 += 1;
                        n.1 = n.1.max(t);
                    }
                    Ok(())
                },
            )?;
        }
        if found.is_none() && notify.len() >= 2 {
            if let Some((&pc, &(n, t))) = notify.iter().rev().nth(1) {
                found = Some((pc, n, t));
            }
        }
    }
    if let Some((pc, executions, t)) = found {
        let (code, what) = if executions == 1 {
            (Code::NtffTimeOriginNotify, "its end".to_string())
        } else {
            (
                Code::NtffTimeOrigin,
                format!("the end of the last of its {executions} executions"),
            )
        };
        problems.push(Problem::new(
            code,
            Some(file),
            format!("{file}: no execution record (NTFF v4/v5); times are relative to the PE start-of-execution NOTIFY at runtime pc {pc}, {what} (the inf2 JSON exports use this origin; ntff.md §5.3)"),
        ));
        return Ok((t, TimeOrigin::StartNotify { pc, executions }));
    }
    problems.push(Problem::new(
        Code::NtffTimeOrigin,
        Some(file),
        match earliest {
            Some(_) => format!("{file}: no PE start-of-execution NOTIFY found (NTFF v4/v5); times are relative to the earliest instruction start instead"),
            None => format!("{file}: no instruction records; times are raw ticks / 1000"),
        },
    ));
    Ok(match earliest {
        Some(t) => (t, TimeOrigin::FirstInstruction),
        None => (0, TimeOrigin::RawTicks),
    })
}

/// [`crate::tables::Memo`]s of the per-row strings of `Instruction` that depend only on the
/// engine, the opcode byte or the core.
struct InsMemo {
    engine: [Memo; 5],
    track: [Memo; 5],
    matrix_track: Memo,
    opcode: [Memo; 256],
    sg: Memo,
}

impl Default for InsMemo {
    fn default() -> Self {
        InsMemo {
            engine: [Memo::default(); 5],
            track: [Memo::default(); 5],
            matrix_track: Memo::default(),
            opcode: [Memo::default(); 256],
            sg: Memo::default(),
        }
    }
}

/// An open start record awaiting its end.
#[derive(Debug, Clone, Copy)]
struct Open {
    ts: u64,
    fs: i128,
    /// The start record's wait before issue (ntff.md §4.1).
    wait_cycles: u16,
    /// File offset of the start record (reports only).
    at: u64,
}

/// The open starts of one (engine, pc), oldest first. The first lives inline: one start at a
/// time per pc is the rule in every sample (ntff.md §4.1), so the common case allocates nothing.
struct OpenQ {
    first: Open,
    rest: VecDeque<Open>,
}

impl OpenQ {
    /// Pops the oldest start when another stays behind it (`None`: `first` is the last one,
    /// the caller removes the entry and takes `first`).
    fn pop(&mut self) -> Option<Open> {
        let next = self.rest.pop_front()?;
        Some(std::mem::replace(&mut self.first, next))
    }
}

/// Decodes `src` (an NTFF) into `Instruction`, `SemaphoreUpdate`, `Metadata` and `ExecutionInfo`
/// rows sent to `sink`. `progress(done, total)` is called after every chunk with trace-buffer
/// bytes (counted once per pass; v4/v5 read the instruction buffers twice).
///
/// Times: ns relative to the origin of ntff.md §5.3 (v6: info field 15.2; v4/v5: end of the PE
/// start-of-execution NOTIFY — runtime pc 40 on inf2 — else a fallback with a Warning), floored;
/// every calibrated time is floored to whole ps first (`start_ts` = ⌊(⌊s⌋ps − ⌊t0⌋ps) / 1000⌋,
/// as the DMA decoder does), durations are ⌊(⌊end⌋ps − ⌊start⌋ps) / 1000⌋ (on trn2 raw ticks are
/// ps) and `end_ts` = `start_ts` + `duration_ns`.
///
/// Errors: those of [`read_info`] (nothing is written then) and sink errors. Damaged trace
/// buffers are [`Problem`]s in the report. An empty NTFF gives an empty report with an
/// `EMPTY_NTFF` problem and writes no table.
pub fn decode<S: ByteSource + ?Sized>(
    src: &S,
    ctx: &DecodeContext,
    sink: &mut dyn TableSink,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<DecodeReport> {
    decode_with(src, None, ctx, sink, progress)
}

/// [`decode`] with the DMA side on two more threads (natively): one writes the `DmaPacket`
/// and `DmaPacketAggregated` rows of every core, the other the time-ordered pass (`DmaUsage`
/// and the Summary's DMA fields) of each core once the row thread has handed over that core's
/// plan, while this thread decodes the instructions and semaphores. Their batches reach
/// `sink` on this thread; every table's batches come from one thread in the one-thread order,
/// and problems are put where the one-thread decode puts them, so the tables, report and
/// problems equal [`decode`]'s (`end_to_end::split_decode_equals_one_thread`). `dma_src` reads
/// the same bytes as `src` and is shared by the two threads.
///
/// Errors: those of [`decode`]; a DMA thread that panicked is an [`Error::Other`].
pub fn decode_split<S: ByteSource + ?Sized>(
    src: &S,
    dma_src: &(dyn ByteSource + Sync),
    ctx: &DecodeContext,
    sink: &mut dyn TableSink,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<DecodeReport> {
    decode_with(src, Some(dma_src), ctx, sink, progress)
}

/// The other half of a decode with [`DecodeContext::dma_elsewhere`]: every core's DMA rows over
/// `src` (the same NTFF) as the one-thread decode writes them — `DmaPacket` and
/// `DmaPacketAggregated` (ids from `first_dma_id`, [`DecodeContext::first_dma_id`]) sent to
/// `sink` — with each core's statistics and problems, for [`DecodeReport::merge_dma`]. `file`
/// names problems; `progress(done, total)` counts DMA-buffer bytes. The window is the execution
/// record's (v6), else it opens at `origin_fs` ([`DecodeReport::origin_fs`] of the decode: v4/v5
/// find their origin in the instruction records).
///
/// Errors: those of [`read_info`]; an NTFF without trace data, or without an execution record
/// and `origin_fs`, is an [`Error::Other`]; sink errors.
pub fn dma_side<S: ByteSource + ?Sized>(
    src: &S,
    file: &str,
    origin_fs: Option<i128>,
    first_dma_id: i64,
    sink: &mut dyn TableSink,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<DmaSide> {
    let info = read_info(src)?
        .ok_or_else(|| Error::Other(format!("{file}: empty NTFF, no DMA side to decode")))?;
    let window = match (info.executions.first(), origin_fs) {
        (Some(x), _) => Window::of_execution(x),
        (None, Some(t0)) => Window { t0, t1: None },
        (None, None) => {
            return Err(Error::Other(format!(
                "{file}: no execution record (NTFF v{}): the DMA side needs the instruction side's time origin",
                info.version
            )))
        }
    };
    let total = super::dma::dma_buffer_bytes(&info);
    let mut done = 0u64;
    let mut prog = |n: u64| {
        done = done.saturating_add(n);
        progress(done.min(total), total);
    };
    let cores = super::dma::dma_rows_all(
        src,
        &info,
        window,
        file,
        first_dma_id,
        super::dma::RowsTo {
            sink,
            progress: &mut prog,
            plans: &mut |_| {},
        },
    )?;
    // Buffers cut short read fewer bytes than their descriptors say.
    prog(total);
    Ok(DmaSide { cores })
}

fn decode_with<S: ByteSource + ?Sized>(
    src: &S,
    dma_src: Option<&(dyn ByteSource + Sync)>,
    ctx: &DecodeContext,
    sink: &mut dyn TableSink,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<DecodeReport> {
    let file = ctx.file_name.as_str();
    let mut report = DecodeReport {
        ticks_per_nanosec: 1000,
        ..Default::default()
    };
    let Some(info) = read_info(src)? else {
        report.problems.push(Problem::new(
            Code::EmptyNtff,
            Some(file),
            format!("{file}: empty NTFF (no trace data), skipped"),
        ));
        return Ok(report);
    };
    let mut problem_list = Vec::new();
    let problems = &mut problem_list;
    let (hw, hw_note) = hardware(&info);
    if let Some(n) = hw_note {
        problems.push(Problem::new(
            Code::NtffHardware,
            Some(file),
            format!("{file}: {n}"),
        ));
    }
    report.neuroncore_clock_ghz = hw.clock_others;
    let clk_f32 = hw.clock_others;

    let codes: Vec<[Option<EngineCode>; 5]> = info
        .subgraphs
        .iter()
        .map(|sg| engine_codes(src, &info, sg, file, problems))
        .collect();

    let ins_bytes: u64 = info
        .subgraphs
        .iter()
        .flat_map(instruction_buffers)
        .map(|b| b.size)
        .fold(0u64, u64::saturating_add);
    let ev_bytes: u64 = info
        .subgraphs
        .iter()
        .flat_map(event_buffers)
        .map(|b| b.size)
        .fold(0u64, u64::saturating_add);
    let v6 = !info.executions.is_empty();
    let err_bytes: u64 = info
        .subgraphs
        .iter()
        .flat_map(|s| &s.buffers)
        .filter(|b| matches!(b.trace_type, 2 | 3))
        .map(|b| b.size)
        .fold(0u64, u64::saturating_add);
    // Sizes come from untrusted descriptors: saturate, never overflow.
    let total = ins_bytes
        .saturating_add(ev_bytes)
        .saturating_add(if v6 { 0 } else { ins_bytes })
        .saturating_add(dma_bytes_total(&info))
        // The time-ordered pass reads the DMA buffers once more (with the rows elsewhere, its plan
        // scan stands for the row pass).
        .saturating_add(super::dma::dma_buffer_bytes(&info))
        .saturating_add(err_bytes);
    let mut done = 0u64;
    // Bytes the DMA row thread has read (split decode only).
    let dma_done = std::sync::atomic::AtomicU64::new(0);
    // Reported as bytes of the file (some buffers are read twice): "… of <file size>".
    let len = src.len();
    let mut prog = |n: u64| {
        done += n;
        let d = dma_done.load(std::sync::atomic::Ordering::Relaxed);
        let t = done.saturating_add(d).min(total);
        if total > 0 {
            let scaled = (u128::from(t) * u128::from(len) / u128::from(total)) as u64;
            progress(scaled, len);
        } else {
            progress(t, total);
        }
    };

    // Time origin and window (ntff.md §5.3).
    let (window, origin) = match info.executions.first() {
        Some(x) => (Window::of_execution(x), TimeOrigin::ExecutionRecord),
        None => {
            let (t0, o) = find_v5_origin(src, &info, &codes, file, problems, &mut prog)?;
            (Window { t0, t1: None }, o)
        }
    };
    report.origin = Some(origin);
    report.origin_fs = window.t0;
    report.total_time_ps = info.subgraphs.first().map(|s| s.total_time_ps);

    // Units: in v6 the window span in raw ticks equals subgraph field 14, which is ps (=
    // summary.total_time × 10¹²): raw ticks are ps, hence 1000 ticks per ns (ntff.md §5.1).
    if let (Some(x), Some(sg)) = (info.executions.first(), info.subgraphs.first()) {
        let span = x.end.saturating_sub(x.start);
        if span != sg.total_time_ps {
            problems.push(Problem::new(
                Code::NtffClock,
                Some(file),
                format!(
                    "{file}: execution window is {span} ticks but {} records {} ps; assuming 1000 ticks per ns",
                    sg.name, sg.total_time_ps
                ),
            ));
        }
    }

    let first_core = info.subgraphs.first().map_or(0, |s| s.core);
    let dma = dma_src.map(|d| super::split::DmaJob {
        src: d,
        info: &info,
        window,
        file,
        first_dma_id: ctx.first_dma_id,
        done: &dma_done,
    });
    // Opcode names once per byte value, not once per row (unknown bytes are formatted).
    let opnames: Vec<std::borrow::Cow<'static, str>> = (0..=255u8).map(opcode::name).collect();
    let mut attr = ctx
        .attribution
        .as_deref()
        .map(super::attribution::Attributor::new);
    let mut next_id = ctx.first_instruction_id;
    let mut max_end_ns: Option<i64> = None;
    // The same in fs: the end of the last v4/v5 throttle row (ntff.md §4.5).
    let mut max_end_fs: Option<i128> = None;
    let mut cores = Vec::new();
    // Where each core's DMA problems go (split decode: they arrive after the loop).
    let mut dma_at = Vec::new();
    let mut next_dma_id = ctx.first_dma_id;
    let mut next_agg_id = 0i64;
    let mut last_ends: Vec<Option<i128>> = Vec::new();

    std::thread::scope(|scope| -> Result<()> {
        let (mut merged, threads) = super::split::start(scope, dma, &mut *sink);
        let mut out = Out::new(&mut merged);
        for (pcore, (sg, code)) in info.subgraphs.iter().zip(&codes).enumerate() {
            let mut cs = CoreSummary {
                name: sg.name.clone(),
                core: sg.core,
                ..Default::default()
            };
            let mut last_end_fs: Option<i128> = None;
            // Dictionary keys of this core's constant strings (reset per core: `sg` differs).
            let mut memo = InsMemo::default();
            let mut open: FxHashMap<(u8, u32), OpenQ> = FxHashMap::default();
            let mut open_total = 0usize;
            let cal = &sg.calibration;
            if let Some(a) = attr.as_mut() {
                let ops = |e: usize| {
                    code.get(e)
                        .and_then(Option::as_ref)
                        .map_or(&[][..], |c| &c.ops[..])
                };
                a.subgraph(&sg.name, [ops(0), ops(1), ops(2), ops(3), ops(4)]);
            }
            for buf in instruction_buffers(sg) {
                // File offset of the next record (reports only).
                let mut at = info.blob_offset.wrapping_add(buf.offset);
                stream_buffer(src, info.blob_offset, buf, file, problems, &mut prog, |r| {
                    let here = at;
                    at = at.wrapping_add(16);
                    let (e, is_end) = match r.ins_kind() {
                        InsKind::Start(e) => (e, false),
                        InsKind::End(e) => (e, true),
                        InsKind::DgeNotification => {
                            cs.dge_notifications += 1;
                            return Ok(());
                        }
                        InsKind::Other => {
                            cs.set_aside.other_kind.note(here);
                            return Ok(());
                        }
                    };
                    let Some(c) = code.get(e).and_then(Option::as_ref) else {
                        cs.foreign_records += 1;
                        cs.set_aside.foreign.note(here);
                        return Ok(());
                    };
                    let Some(pc) = record_pc(r, c) else {
                        cs.foreign_records += 1;
                        cs.set_aside.foreign.note(here);
                        return Ok(());
                    };
                    let fs = cal.engines.get(e).copied().unwrap_or_default().fs(r.ts);
                    if !is_end {
                        if open_total >= MAX_OPEN_TOTAL && !open.contains_key(&(e as u8, pc)) {
                            cs.unpaired_starts += 1;
                            cs.set_aside.unpaired_start.note(here);
                            return Ok(());
                        }
                        let o = Open {
                            ts: r.ts,
                            fs,
                            wait_cycles: r.wait_cycles(),
                            at: here,
                        };
                        match open.entry((e as u8, pc)) {
                            std::collections::hash_map::Entry::Vacant(v) => {
                                v.insert(OpenQ {
                                    first: o,
                                    rest: VecDeque::new(),
                                });
                                open_total += 1;
                            }
                            std::collections::hash_map::Entry::Occupied(mut q) => {
                                let q = q.get_mut();
                                if q.rest.len() + 1 >= MAX_OPEN_PER_PC {
                                    if let Some(o) = q.pop() {
                                        cs.set_aside.unpaired_start.note(o.at);
                                    }
                                    cs.unpaired_starts += 1;
                                } else {
                                    open_total += 1;
                                }
                                q.rest.push_back(o);
                            }
                        }
                        return Ok(());
                    }
                    let popped = match open.get_mut(&(e as u8, pc)) {
                        Some(q) => match q.pop() {
                            Some(s) => Some(s),
                            None => {
                                // Keep only keys with open starts: memory ∝ open starts.
                                open.remove(&(e as u8, pc)).map(|q| q.first)
                            }
                        },
                        None => None,
                    };
                    let Some(s) = popped else {
                        cs.unpaired_ends += 1;
                        cs.set_aside.unpaired_end.note(here);
                        return Ok(());
                    };
                    open_total = open_total.saturating_sub(1);
                    if window.far_outside(s.fs) || window.far_outside(fs) {
                        cs.set_aside.far_outside.note(here);
                    }
                    // Window: start ≥ t0 and end ≤ t1 (ntff.md §5.3).
                    if s.fs < window.t0 || window.t1.is_some_and(|t1| fs > t1) {
                        cs.set_aside.outside_window.note(here);
                        return Ok(());
                    }
                    if fs < s.fs {
                        cs.set_aside.reversed.note(here);
                    }
                    let engine = Engine::from_ntff(e as u32).unwrap_or(Engine::Pe);
                    let start_ns = window.ns(s.fs);
                    let dur = Window::dur_ns(s.fs, fs);
                    let end_ns = start_ns.saturating_add(dur);
                    let op = c.ops.get(pc as usize).copied();
                    let b = &mut out.ins;
                    b.set(ins::START, start_ns);
                    b.set(ins::END, end_ns);
                    b.set(ins::DUR, dur);
                    b.set_memo(ins::ENGINE, engine.explorer_name(), &mut memo.engine[e]);
                    if op == Some(opcode::MATMUL) {
                        b.set_memo(ins::TRACK, "TensorMatrix", &mut memo.matrix_track);
                    } else {
                        b.set_memo(ins::TRACK, engine.track_name(), &mut memo.track[e]);
                    }
                    b.set(ins::PCORE, pcore as i64);
                    if let Some(o) = op {
                        let o = usize::from(o);
                        b.set_memo(ins::OPCODE, &opnames[o], &mut memo.opcode[o]);
                    }
                    b.set(ins::ID, next_id);
                    b.set(ins::PC, i64::from(pc));
                    b.set(ins::CRC_IN, i64::from(r.crc_in()));
                    b.set(ins::CRC_OUT, i64::from(r.crc_out()));
                    // Single precision, truncated (ntff.md §4.1).
                    let cycles = f32::from(s.wait_cycles);
                    b.set(ins::WAIT, (cycles / clk_f32) as i64);
                    b.set(ins::OP_BYTE, op.map(i32::from));
                    b.set(ins::RAW_S, i64::try_from(s.ts).ok());
                    b.set(ins::RAW_E, i64::try_from(r.ts).ok());
                    b.set_memo(ins::SG, &sg.name, &mut memo.sg);
                    if let Some(a) = &mut attr {
                        a.fill(b, e, pc);
                    }
                    out.ins.end_row_into(out.sink)?;
                    next_id = next_id.wrapping_add(1);
                    if let Some(x) = cs.instructions_per_engine.get_mut(e) {
                        *x += 1;
                    }
                    last_end_fs = Some(last_end_fs.map_or(fs, |x| x.max(fs)));
                    let end_abs = window.ns(fs);
                    max_end_ns = Some(max_end_ns.map_or(end_abs, |x| x.max(end_abs)));
                    max_end_fs = Some(max_end_fs.map_or(fs, |x| x.max(fs)));
                    Ok(())
                })?;
            }
            cs.unpaired_starts += open.values().map(|q| 1 + q.rest.len() as u64).sum::<u64>();
            for q in open.values() {
                for o in std::iter::once(&q.first).chain(&q.rest) {
                    cs.set_aside.unpaired_start.note(o.at);
                }
            }
            cs.set_aside.unpaired_start.first_offset = open
                .values()
                .flat_map(|q| std::iter::once(&q.first).chain(&q.rest))
                .map(|o| o.at)
                .chain(cs.set_aside.unpaired_start.first_offset)
                .min();
            drop(open);

            let names = ctx.semaphore_names.get(pcore);
            let mut sem_ids: Vec<Option<(String, Memo)>> = vec![None; 256];
            let mut sg_memo = Memo::default();
            for buf in event_buffers(sg) {
                stream_buffer(src, info.blob_offset, buf, file, problems, &mut prog, |r| {
                    let fs = cal.event.fs(r.ts);
                    // v4/v5: event_count is every event record of the buffer (inf2 exports, 9/9);
                    // v6: those in the window (ntff.md §5.2).
                    if window.t1.is_none() {
                        cs.event_count += 1;
                    }
                    if !window.contains(fs) {
                        return Ok(());
                    }
                    if window.t1.is_some() {
                        cs.event_count += 1;
                    }
                    let t_ns = window.ns(fs);
                    max_end_ns = Some(max_end_ns.map_or(t_ns, |x| x.max(t_ns)));
                    max_end_fs = Some(max_end_fs.map_or(fs, |x| x.max(fs)));
                    if !r.is_sem_update() {
                        return Ok(());
                    }
                    let n = u32::from(r.sem_index());
                    let ts = window.ns(fs);
                    // The id text depends on the index alone (per core): formatted once.
                    let (id, id_memo) = sem_ids[n as usize].get_or_insert_with(|| {
                        let name =
                            names
                                .and_then(|m| m.get(&n))
                                .map(String::as_str)
                                .or_else(|| {
                                    FIXED_SEMAPHORE_NAMES
                                        .iter()
                                        .find(|(i, _)| *i == n)
                                        .map(|(_, s)| *s)
                                });
                        let id = match name {
                            Some(nm) => format!("S[{n}] ({nm})"),
                            None => n.to_string(),
                        };
                        (id, Memo::default())
                    });
                    let b = &mut out.sem;
                    b.set(sem::TS, ts);
                    b.set_memo(sem::ID, id, id_memo);
                    // 32-bit register value, reinterpreted as Explorer's int32.
                    b.set(sem::VALUE, r.sem_value());
                    b.set(sem::MODE, i32::from(r.update_mode()));
                    b.set(sem::PCORE, pcore as i64);
                    b.set(sem::INDEX, n as i32);
                    b.set(sem::W0, i64::from(r.w0));
                    b.set_memo(sem::SG, &sg.name, &mut sg_memo);
                    out.sem.end_row_into(out.sink)?;
                    cs.semaphore_updates += 1;
                    Ok(())
                })?;
            }
            if threads.is_some() {
                dma_at.push(problems.len());
            } else if ctx.dma_elsewhere {
                // The rows are another worker's; the time-ordered pass plans from its own scan.
                dma_at.push(problems.len());
                let plan = super::dma::dma_plan(src, &info, sg, pcore, first_core, window, file)?;
                prog(
                    super::dma::dma_buffers(sg)
                        .map(|b| b.size)
                        .fold(0u64, u64::saturating_add),
                );
                cs.dma.times = super::dma::dma_times(src, &info, sg, &plan, out.sink, &mut prog)?;
            } else {
                let io = NtffIo {
                    src,
                    info: &info,
                    window,
                    file,
                    problems: &mut *problems,
                    progress: &mut prog,
                    sink: &mut *out.sink,
                };
                let ids = DmaIds {
                    packet: &mut next_dma_id,
                    aggregated: &mut next_agg_id,
                };
                decode_dma_core(io, sg, pcore, first_core, ids, &mut cs.dma)?;
            }
            last_ends.push(last_end_fs);
            if let Some(le) = last_end_fs {
                cs.last_instruction_end_ns = Some(window.ns(le));
                // ⌊ps × clock / 1000⌋ with clock = 1.2 or 1.4 as an exact decimal (tenths).
                let ps = le.saturating_sub(window.t0).div_euclid(1000);
                let tenths = (hw.clock_others * 10.0).round() as i128;
                cs.neuroncore_cycle_count =
                    u64::try_from(ps.saturating_mul(tenths).div_euclid(10_000)).ok();
            }
            if cs.unpaired_starts > 1 || cs.unpaired_ends > 0 {
                let p = Problem::new(
                    Code::NtffUnpaired,
                    Some(file),
                    format!(
                        "{file}: {}: {} without an end, {} without a start",
                        sg.name,
                        crate::util::count(cs.unpaired_starts, "start record"),
                        crate::util::count(cs.unpaired_ends, "end record")
                    ),
                );
                // Where the first unpaired record is.
                let first = [
                    cs.set_aside.unpaired_end.first_offset,
                    cs.set_aside.unpaired_start.first_offset,
                ];
                problems.push(match first.into_iter().flatten().min() {
                    Some(at) => p.at(at),
                    None => p,
                });
            }
            cores.push(cs);
        }
        out.finish()?;
        if let Some(t) = threads {
            let per_core = merged.finish(t)?;
            // Back to front, so the earlier insertion points stay valid.
            for ((stats, ps), (c, at)) in per_core
                .into_iter()
                .zip(cores.iter_mut().zip(&dma_at))
                .rev()
            {
                c.dma = stats;
                let at = (*at).min(problems.len());
                problems.splice(at..at, ps);
            }
            prog(0);
        }
        Ok(())
    })?;
    let problems = &mut problem_list;

    // Totals.
    for (i, c) in cores.iter().enumerate() {
        report.instructions += c.instructions_per_engine.iter().sum::<u64>();
        report.semaphore_updates += c.semaphore_updates;
        report.event_count += c.event_count;
        if let Some(slot) = report.instructions_per_engine.get_mut(i) {
            *slot = c.instructions_per_engine;
        }
    }
    report.last_hw_timestamp_ns = match window.t1 {
        Some(t1) => window.ns(t1),
        None => max_end_ns.unwrap_or(0),
    };
    let tenths = (hw.clock_others * 10.0).round() as u64;
    report.neuroncore_cycle_count = report
        .total_time_ps
        .map(|ps| (ps as u128 * tenths as u128 / 10_000) as u64);
    let io = NtffIo {
        src,
        info: &info,
        window,
        file,
        problems: &mut *problems,
        progress: &mut prog,
        sink: &mut *sink,
    };
    decode_throttles(io, &last_ends, max_end_fs, &report, &mut cores)?;
    super::errors::decode_errors(src, &info, window, file, problems, &mut prog, sink)?;
    for c in cores.iter_mut() {
        c.trace_count = c.instructions_per_engine.iter().sum::<u64>()
            + c.event_count
            + c.dma.packets
            + c.dma.aggregated;
        report.dma_packets += c.dma.packets;
        report.dma_bytes += c.dma.bytes;
        report.throttles += c.dma.throttles;
        report.trace_count += c.trace_count;
    }
    super::dma::write_dma_queues_info(&info, sink)?;
    report.cores = cores;
    debug_assert!(report.problems.is_empty());
    report.problems.append(&mut problem_list);
    if ctx.dma_elsewhere {
        report.dma_at = dma_at;
    }
    write_metadata(&info, ctx, &report, hw, sink)?;
    write_execution_info(&info, &report, window, sink)?;
    report.info = info;
    Ok(report)
}

crate::cols!(mod meta = crate::tables::explorer::METADATA {
    SCHEMA: Str = "profile_schema_version",
    VERSION: I32 = "ntff_version",
    CORES: I32 = "num_physical_cores",
    VNC: Bool = "vnc_enabled",
    FIRST_HW: I64 = "first_hw_timestamp",
    LAST_HW: I64 = "last_hw_timestamp",
    FIRST_TS: Str = "first_ts",
    LAST_TS: Str = "last_ts",
    DMA_BW: F32 = "dma_ddr_bandwidth",
    DMA_ENGINES: I32 = "num_dma_engines_per_neuroncore",
    HBM_BW: F32 = "hbm_ddr_bandwidth",
    PE_ROWS: I64 = "tensor_engine_num_rows",
    PE_COLS: I64 = "tensor_engine_num_cols",
    PE_CLOCK: F32 = "tensor_engine_clock_freq",
    VE_CLOCK: F32 = "vector_engine_clock_freq",
    SE_CLOCK: F32 = "scalar_engine_clock_freq",
    GPSIMD_CLOCK: F32 = "gpsimd_engine_clock_freq",
    CORE_CLOCK: F32 = "neuroncore_clock_freq",
    TICKS_PER_NS: I64 = "ticks_per_nanosec",
    INSTANCE: Str = "instance_type",
    RUNTIME: Str = "runtime_version",
    COLLECTIVES: Str = "collectives_version",
    DRIVER: Str = "driver_version",
    COMPILER: Str = "compiler_version",
    SIMULATION: Bool = "is_simulation",
});

fn write_metadata(
    info: &NtffInfo,
    ctx: &DecodeContext,
    r: &DecodeReport,
    hw: Hw,
    sink: &mut dyn TableSink,
) -> Result<()> {
    let mut b = TableBuilder::new(&explorer::METADATA);
    let cores = if info.subgraphs.is_empty() {
        info.physical_cores
    } else {
        info.subgraphs.len() as u32
    };
    b.set(meta::SCHEMA, PROFILE_SCHEMA_VERSION);
    b.set(meta::VERSION, info.version as i32);
    b.set(meta::CORES, cores as i32);
    b.set(meta::VNC, cores > 1);
    b.set(meta::FIRST_HW, 0i64);
    b.set(meta::LAST_HW, r.last_hw_timestamp_ns);
    b.set(meta::FIRST_TS, rfc3339_ns(0).as_str());
    b.set(meta::LAST_TS, rfc3339_ns(r.last_hw_timestamp_ns).as_str());
    b.set(meta::DMA_BW, hw.dma_ddr_bw.map(|v| v as f32));
    b.set(meta::DMA_ENGINES, 16);
    b.set(meta::HBM_BW, hw.hbm_bw.map(|v| v as f32));
    b.set(meta::PE_ROWS, hw.pe_rows_cols);
    b.set(meta::PE_COLS, hw.pe_rows_cols);
    b.set(meta::PE_CLOCK, hw.pe_clock);
    let others = hw.clock_others;
    b.set(meta::VE_CLOCK, others);
    b.set(meta::SE_CLOCK, others);
    b.set(meta::GPSIMD_CLOCK, others);
    b.set(meta::CORE_CLOCK, others);
    b.set(meta::TICKS_PER_NS, r.ticks_per_nanosec);
    b.set(
        meta::INSTANCE,
        (!info.instance_type.is_empty()).then_some(info.instance_type.as_str()),
    );
    b.set(meta::RUNTIME, info.runtime_version.as_deref());
    b.set(meta::COLLECTIVES, info.collectives_version.as_deref());
    b.set(meta::DRIVER, info.driver_version.as_deref());
    b.set(meta::COMPILER, ctx.compiler_version.as_deref());
    b.set(meta::SIMULATION, false);
    b.end_row_into(sink)?;
    b.finish_into(sink)?;
    Ok(())
}

crate::cols!(mod exec = crate::tables::explorer::EXECUTION_INFO {
    INDEX: I32 = "execution_index",
    NEFF: Str = "neff_name",
    START: I64 = "execution_start_ts",
    END: I64 = "execution_end_ts",
    SUBGRAPHS: I32 = "num_subgraphs",
    ROWS: I64 = "row_count",
});

fn write_execution_info(
    info: &NtffInfo,
    r: &DecodeReport,
    window: Window,
    sink: &mut dyn TableSink,
) -> Result<()> {
    let mut b = TableBuilder::new(&explorer::EXECUTION_INFO);
    let rows = (r.instructions + r.semaphore_updates) as i64;
    let nsg = info.subgraphs.len() as i32;
    if info.executions.is_empty() {
        b.set(exec::INDEX, 0);
        b.set(exec::NEFF, info.neff_name.as_str());
        b.set(exec::SUBGRAPHS, nsg);
        b.set(exec::ROWS, rows);
        b.end_row_into(sink)?;
    }
    let n = info.executions.len();
    for (i, x) in info.executions.iter().enumerate() {
        b.set(exec::INDEX, i as i32);
        b.set(exec::NEFF, info.neff_name.as_str());
        b.set(exec::START, window.ns(x.start as i128 * 1000));
        b.set(exec::END, window.ns(x.end as i128 * 1000));
        b.set(exec::SUBGRAPHS, nsg);
        // Rows are only attributed when there is a single execution.
        b.set(exec::ROWS, (n == 1).then_some(rows));
        b.end_row_into(sink)?;
    }
    b.finish_into(sink)?;
    Ok(())
}

/// RFC 3339 text of `ns` nanoseconds after the Unix epoch, fraction without trailing zeros, as
/// the JSON export writes `first_ts`/`last_ts` ("1970-01-01T00:00:00.000038091Z").
pub fn rfc3339_ns(ns: i64) -> String {
    let secs = ns.div_euclid(1_000_000_000);
    let frac = ns.rem_euclid(1_000_000_000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let mut s = format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        sod / 3600,
        sod / 60 % 60,
        sod % 60
    );
    if frac != 0 {
        let f = format!("{frac:09}");
        s.push('.');
        s.push_str(f.trim_end_matches('0'));
    }
    s.push('Z');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_text() {
        assert_eq!(rfc3339_ns(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_ns(38_091), "1970-01-01T00:00:00.000038091Z");
        assert_eq!(rfc3339_ns(1_871_040), "1970-01-01T00:00:00.00187104Z");
        assert_eq!(rfc3339_ns(951_782_400_000_000_000), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn pc_rule() {
        let c = EngineCode {
            base: 0x10600,
            slots: 100,
            ops: vec![],
        };
        let r = |w0| Rec { w0, w1: 0, ts: 0 };
        assert_eq!(record_pc(r(0x8401_0600 + 5), &c), Some(5));
        assert_eq!(record_pc(r(0x8401_0600 + 100), &c), None);
        assert_eq!(record_pc(r(0x8401_05FF), &c), None, "wraps to 2²⁰ − 1");
    }
}
