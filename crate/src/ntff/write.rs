//! Writer for synthetic v6 NTFFs (round-trip tests, benchmarks, the app's demo capture).
//!
//! Layout as in ntff.md §2/§10: a 128-byte header (version 6, u64 info length), the info section
//! encoded with prost from `proto/ntff.proto`, then the blob section: the engine code blocks of
//! every core, then per core its instruction, event, error, DMA and throttle buffers (error
//! records only when `NtffSpec::error_records` asks for them). Each core's runtime code
//! stream follows ntff.md §7: a 50-slot runtime prologue
//! (PE NOTIFY at runtime pc 49), the NEFF's slot 0, NEFF slots 2.. (opcode `0xD4` rewritten to
//! `0xB8`), a 10-slot epilogue — so it pairs with a synthetic NEFF holding the same opcode bytes.
//!
//! Timeline per core (raw ticks are picoseconds, one clock, identity calibration as on trn2):
//! every engine runs prologue pcs 40 – 49 before t0 (t0 = 9.17 ns after the PE NOTIFY at pc 49
//! starts, as in the samples), then `iterations` passes over its body (runtime slots o − 1 ..),
//! one period apart, then two epilogue instructions inside the window, one straddling t1 and two
//! after it, plus one PE start left open (blocked when capture stopped). Semaphore updates: each
//! core's [`NtffSubgraphSpec::semaphores`] per pass plus `event_sets_per_pass` non-listed event
//! records. A core may run fewer passes than the others ([`NtffSubgraphSpec::passes`]: the idle
//! second core of an LNC=2 capture). Records are generated on the fly, so files of any size
//! stream through `out` with bounded memory (one pass of DMA records and the first
//! [`DETAIL_CAP`] packets per core are held).
//!
//! Two shapes: [`NtffSpec::demo`] (the app's demo; a plausible but unmeasured mix) and
//! [`NtffSpec::v6_mix`] (benchmarks: the record mix, opcode mix, durations and DMA queues measured
//! on the 13 v6 samples, docs/formats.md "Synthetic captures").
//!
//! DMA (ntff.md §4.4): per iteration each [`NtffDmaQueue`] moves `packets_per_iter` packets,
//! three records each (phase 1 start, phase 5 end with bytes and CRC, phase 6 completion), written
//! in time order per iteration so packets of different queues interleave (1, 1, 5, 5, 6, 6); every
//! record lies inside the window. The queues named in the spec go into the subgraph's DMA queue
//! table (§3.3.2); a queue with `name: None` is an instruction-issued queue outside the table.
//! Throttle (§4.5): `throttles_per_core` records spread over the body passes.

use std::io::Write;

use prost::Message;

use crate::engine::Engine;
use crate::proto;

/// Runtime prologue length in slots (the samples have 49 – 67).
pub const PROLOGUE_SLOTS: u32 = 50;
/// Runtime epilogue length in slots (the samples have 9 – 11).
pub const EPILOGUE_SLOTS: u32 = 10;
/// Runtime pc of the PE start-of-execution NOTIFY (ntff.md §5.3).
pub const START_NOTIFY_PC: u32 = 49;
/// Executed prologue pcs (first) before t0.
const PROLOGUE_RUN_FROM: u32 = 40;
/// Offset of t0 after the start of the PE NOTIFY at pc 49, ps (ntff.md §5.3: 9.17 ns).
const T0_AFTER_NOTIFY_PS: u64 = 9_170;

/// One physical core of a synthetic capture.
#[derive(Debug, Clone)]
pub struct NtffSubgraphSpec {
    /// Subgraph name (`sg00`, `sg01`).
    pub name: String,
    /// Physical NeuronCore index (subgraph field 3 and descriptor field 7), e.g. 4 and 5.
    pub core: u32,
    /// NEFF-side opcode bytes (byte 0 of each 64-byte slot) per engine, in [`Engine`] order:
    /// the same bytes the paired synthetic NEFF stores in its engine streams. Slot 0 should be
    /// `0xB1` (SET_ORDERING_MODE) and slot 1 `0xCC`, as compilers write them (ntff.md §7).
    pub neff_opcodes: [Vec<u8>; 5],
    /// Listed semaphore updates (event records with w0[15:8] = 1) of one body pass, in time
    /// order.
    pub semaphores: Vec<NtffSemaphore>,
    /// Non-listed event records (w0[15:8] = 0, update mode 0x07) per body pass.
    pub event_sets_per_pass: u32,
    /// DMA queues with traffic on this core.
    pub dma_queues: Vec<NtffDmaQueue>,
    /// Body passes of this core; `None` = [`NtffSpec::iterations`]. The idle second core of the
    /// LNC=2 samples runs its short stream once while the first core runs the kernel.
    pub passes: Option<u64>,
    /// Throttle records of this core: `None` = [`NtffSpec::throttles_per_core`], `Some(n)` = one
    /// per `n` body instructions inside the window (rounded down; `u64::MAX` = none).
    pub throttle_every: Option<u64>,
}

/// One listed semaphore update of a body pass (ntff.md §4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NtffSemaphore {
    /// Update source 1 – 6 (kind byte `0x83 | source << 2`; 6 is written next to DMA
    /// completions in the samples).
    pub source: u32,
    /// The optional `0x40` of the kind byte.
    pub flag: bool,
    /// Update mode w0[23:16] (`0xF3`, `0xF4`, `0xF9` in the samples).
    pub mode: u32,
    /// Semaphore index w0[7:0].
    pub id: u32,
}

impl NtffSemaphore {
    /// Raw w0 of this update (listed: w0[15:8] = 1).
    pub fn w0(&self) -> u32 {
        event_w0(
            self.source | (u32::from(self.flag) << 4),
            self.mode,
            true,
            self.id,
        )
    }
}

/// Event record w0: kind byte `0x83 | src << 2` (src bit 4 → the `0x40` flag), mode, listed bit,
/// id (ntff.md §4.3).
fn event_w0(src: u32, mode: u32, listed: bool, id: u32) -> u32 {
    ((0x83 | (src << 2)) << 24) | (mode << 16) | (u32::from(listed) << 8) | (id & 0xFF)
}

/// How instruction and DMA times are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Timing {
    /// The demo's plausible spread (not measured): MATMUL 180 ns, ACTIVATE 350 ns, …, gaps
    /// 5 – 20 ns, DMA 60 ns + 25 ps/B.
    #[default]
    Demo,
    /// The medians measured per (engine, opcode) on the 13 v6 samples, gaps of 25 – 45 ns with
    /// one in twelve a 0.3 – 3 µs wait, pipelined PE LDWEIGHTS/MATMUL, DMA 7 ns + 36 ps/B
    /// (docs/formats.md "Synthetic captures").
    Measured,
}

/// A DMA queue of one synthetic core and its traffic (ntff.md §3.3.2, §4.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NtffDmaQueue {
    /// NEFF queue name (`qSPDynamicHW`) → queue-table entry; `None` = not in the table (the
    /// decoder then calls the packets `instruction` DMA).
    pub name: Option<String>,
    /// Record field w0[30:24]: DMA engine counted from the first core's 16 engines (0 – 15 on
    /// `sg00`, 16 – 31 on `sg01`); table field 1 = 16 × first core + this.
    pub engine: u32,
    /// Queue index within the engine (w1[7:4], 0 – 15).
    pub queue: u32,
    /// Queue-table type code (field 3; 2 = `weights` in the exports).
    pub type_code: u32,
    /// Packets per body iteration.
    pub packets_per_iter: u32,
    /// Typical packet size in bytes (< 2^24): packets carry it, half or a quarter of it
    /// ([`Timing::Demo`]), or it (one in four) or half of it ([`Timing::Measured`]).
    pub bytes: u32,
    /// Percent of the packets that are 4-byte completion writes instead (the samples' dynamic
    /// and IO queues are full of them).
    pub tiny_percent: u32,
}

/// The demo's DMA queues of core slot `i` (0 = `sg00`, 1 = `sg01`): the four queue sets the demo
/// NEFF declares plus an instruction queue (14) outside the table, ~24 packets per iteration.
pub fn default_dma_queues(i: usize) -> Vec<NtffDmaQueue> {
    let base = 16 * i as u32;
    let q =
        |name: Option<&str>, engine: u32, queue: u32, code: u32, n: u32, bytes: u32| NtffDmaQueue {
            name: name.map(str::to_string),
            engine: base + engine,
            queue,
            type_code: code,
            packets_per_iter: n,
            bytes,
            tiny_percent: 0,
        };
    vec![
        q(Some("qSPDynamicHW"), 1, 0, 0, 8, 8192),
        q(Some("qActDynamicHW"), 2, 0, 0, 6, 4096),
        q(Some("qPoolDynamic"), 3, 1, 0, 4, 2048),
        q(Some("qSPSpillReload0"), 4, 1, 2, 3, 65536),
        q(None, 5, 14, 0, 3, 512),
    ]
}

/// One DMA packet as written (raw picoseconds on the identity DMA clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WrittenDma {
    /// Record field w0[30:24] (see [`NtffDmaQueue::engine`]).
    pub engine: u32,
    /// Queue index.
    pub queue: u32,
    /// Phase-1 record time, ps.
    pub start_ps: u64,
    /// Phase-5 record time, ps.
    pub end_ps: u64,
    /// Bytes (phase-5 w0[23:0]).
    pub bytes: u32,
    /// CRC (phase-5 w1[31:16]).
    pub crc: u16,
}

/// One throttle record as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WrittenThrottle {
    /// Record time, ps.
    pub ts_ps: u64,
    /// Numerator k (w1[7:0]).
    pub k: u8,
    /// Denominator n (w0[23:16], non-zero).
    pub n: u8,
    /// Type code (w1[15:8]: 0 or 1).
    pub type_code: u8,
    /// Raw w0.
    pub w0: u32,
}

/// What to write. `Default` is a small two-core trn2 demo.
#[derive(Debug, Clone)]
pub struct NtffSpec {
    /// NEFF network name (info field 1 = NEFF header `name`).
    pub neff_name: String,
    /// NEFF uuid (info fields 2 as a C string, 4.5 and 15.1 in full).
    pub neff_uuid: [u8; 16],
    /// EC2 instance type (field 9).
    pub instance_type: String,
    /// EC2 instance id (field 17).
    pub instance_id: String,
    /// Runtime version (major, minor, patch, git hash) (field 8).
    pub runtime_version: (u64, u64, u64, String),
    /// One or two physical cores.
    pub subgraphs: Vec<NtffSubgraphSpec>,
    /// Passes over each engine's body inside the execution window (scales the file size).
    pub iterations: u64,
    /// Raw tick (ps) at which the first prologue instruction starts.
    pub base_ps: u64,
    /// Seed of the deterministic pseudo-random waits, CRCs and jitter.
    pub seed: u64,
    /// Records written into every core's error buffer (trace type 2) as (w0, w1, ps after
    /// t0). No sample has any (ntff.md §4.6): a fixture for `ntff::errors`. Empty by default.
    pub error_records: Vec<(u32, u32, u64)>,
    /// Throttle records per core (unless [`NtffSubgraphSpec::throttle_every`] says otherwise).
    pub throttles_per_core: u32,
    /// Instruction and DMA timing model.
    pub timing: Timing,
}

impl Default for NtffSpec {
    fn default() -> Self {
        NtffSpec::demo(
            "synthetic.neff",
            *b"neuronscope-demo",
            &[[40, 24, 16, 24, 12], [40, 24, 16, 24, 12]],
            4,
        )
    }
}

/// What [`write_ntff`] wrote: what a decoder must find.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteSummary {
    /// Bytes written.
    pub bytes: u64,
    /// Instruction pairs inside the execution window, per core and engine.
    pub instructions_in_window: Vec<[u64; 5]>,
    /// Event records with w0[15:8] = 1 inside the window (SemaphoreUpdate rows), per core.
    pub semaphore_updates: Vec<u64>,
    /// All event records inside the window, per core.
    pub events_in_window: Vec<u64>,
    /// Execution window t0, t1 (raw ps).
    pub t0: u64,
    pub t1: u64,
    /// DMA packets written per core (all inside the window, none dropped by §4.4's rule).
    pub dma_packets: Vec<u64>,
    /// The first [`DETAIL_CAP`] packets per core, in write (time) order.
    pub dma: Vec<Vec<WrittenDma>>,
    /// Throttle records per core, in time order (the first [`DETAIL_CAP`]).
    pub throttles: Vec<Vec<WrittenThrottle>>,
    /// End of each core's last instruction inside the window (raw ps): where its last throttle
    /// row ends (ntff.md §4.5).
    pub last_instruction_end: Vec<u64>,
}

/// Packets per core kept in [`WriteSummary::dma`] (bounds memory for huge benchmark files).
pub const DETAIL_CAP: usize = 1 << 16;

/// Opcode bytes for a synthetic NEFF engine stream of `slots` slots: slot 0 `0xB1`, slot 1
/// `0xCC`, then a per-engine mix of the §7 opcodes (DMA triggers as the NEFF spells them, `0xD4`).
pub fn default_neff_opcodes(engine: Engine, slots: usize) -> Vec<u8> {
    let pattern: &[u8] = match engine {
        Engine::Pe => &[0xA0, 0x01, 0x02, 0x01, 0x02, 0x01, 0x02, 0xA6, 0xB0],
        Engine::Act => &[0x23, 0xA0, 0x21, 0x46, 0xD4, 0x47, 0xA2],
        Engine::Pool => &[0xA0, 0xD4, 0xAB, 0xA4, 0xA5],
        Engine::Dve => &[0xA0, 0x42, 0x43, 0x46, 0x47, 0x48, 0xA2],
        Engine::Sp => &[0xD4, 0xA0, 0xA5, 0xA2],
    };
    (0..slots)
        .map(|i| match i {
            0 => 0xB1,
            1 => 0xCC,
            _ => pattern[(i - 2) % pattern.len()],
        })
        .collect()
}

impl NtffSpec {
    /// A trn2 capture of `slots.len()` cores (`sg00`, `sg01` on cores 4, 5) whose NEFF streams
    /// have `slots[core][engine]` slots filled by [`default_neff_opcodes`].
    pub fn demo(name: &str, uuid: [u8; 16], slots: &[[usize; 5]], iterations: u64) -> Self {
        let subgraphs = slots
            .iter()
            .enumerate()
            .map(|(i, s)| NtffSubgraphSpec {
                name: format!("sg{i:02}"),
                core: 4 + i as u32,
                neff_opcodes: std::array::from_fn(|e| default_neff_opcodes(Engine::ALL[e], s[e])),
                semaphores: demo_semaphores(24),
                event_sets_per_pass: 1,
                dma_queues: default_dma_queues(i),
                passes: None,
                throttle_every: None,
            })
            .collect();
        NtffSpec {
            neff_name: name.into(),
            neff_uuid: uuid,
            instance_type: "trn2.3xlarge".into(),
            instance_id: "i-0123456789abcdef0".into(),
            runtime_version: (2, 30, 51, "faafe26f0401e2d1d9cec138".into()),
            subgraphs,
            iterations,
            base_ps: 2_566_277_910_022_000,
            seed: 1,
            error_records: Vec::new(),
            throttles_per_core: 6,
            timing: Timing::Demo,
        }
    }

    /// A trn2 LNC=2 capture shaped like the 13 v6 samples (docs/formats.md "Synthetic
    /// captures"): `sg00` (core 4) runs `iterations` passes of a 400-instruction body in the
    /// measured engine shares and per-engine opcode mix, with 1.43 semaphore updates and 4.3 DMA
    /// packets per instruction on the samples' queues (each on all 16 DMA engines) and one
    /// throttle record per 1 150 instructions; `sg01` (core 5) is idle as in every sample: one
    /// pass of ~150 DRAIN / EVENT_SEMAPHORE instructions, ~290 semaphore updates and 9
    /// `instruction` DMA packets. [`Timing::Measured`].
    pub fn v6_mix(name: &str, uuid: [u8; 16], iterations: u64) -> Self {
        let mut spec = NtffSpec::demo(name, uuid, &[[4; 5], [4; 5]], iterations);
        spec.subgraphs = (0..2)
            .map(|i| NtffSubgraphSpec {
                name: format!("sg{i:02}"),
                core: 4 + i as u32,
                neff_opcodes: std::array::from_fn(|e| mix_neff_opcodes(i, Engine::ALL[e])),
                semaphores: mix_semaphores(i),
                event_sets_per_pass: if i == 0 { 0 } else { 6 },
                dma_queues: mix_dma_queues(i),
                passes: (i > 0).then_some(1),
                throttle_every: Some(if i == 0 { 1_150 } else { u64::MAX }),
            })
            .collect();
        spec.timing = Timing::Measured;
        spec
    }

    /// Sets `iterations` so the file is at least `bytes` long (for benchmarks). Cores with a
    /// fixed [`NtffSubgraphSpec::passes`] count as a constant.
    pub fn with_min_bytes(mut self, bytes: u64) -> Self {
        let mut fixed = 0u64;
        let mut per_iter = 0u64;
        for s in &self.subgraphs {
            let streams = runtime_streams(s);
            let ins: u64 = streams.iter().map(|r| body_len(r) as u64 * 32).sum();
            let pass = ins + events_per_pass(s) * 16 + dma_packets_per_iter(s) * 48;
            match s.passes {
                Some(n) => fixed += n * pass,
                None => per_iter += pass,
            }
        }
        self.iterations = bytes.saturating_sub(fixed).div_ceil(per_iter.max(1)).max(1);
        self
    }
}

/// Body passes of core `sg`.
fn passes(spec: &NtffSpec, sg: &NtffSubgraphSpec) -> u64 {
    sg.passes.unwrap_or(spec.iterations)
}

/// Event records (listed and not) per body pass of `sg`.
fn events_per_pass(sg: &NtffSubgraphSpec) -> u64 {
    sg.semaphores.len() as u64 + u64::from(sg.event_sets_per_pass)
}

/// The demo's five updates per pass: sources 3, 2, 1, 4 on ids 3 – 6 and the DMA source on the
/// queue semaphore `queue_sem` (the samples' `S[24] (qSyncDynamicHW)`), mode `0xF4`.
fn demo_semaphores(queue_sem: u32) -> Vec<NtffSemaphore> {
    [(3, 3), (2, 4), (1, 5), (4, 6), (6, queue_sem)]
        .into_iter()
        .map(|(source, id)| NtffSemaphore {
            source,
            flag: false,
            mode: 0xF4,
            id,
        })
        .collect()
}

/// `n` items in the proportions `weights` (per mille), interleaved as evenly as possible: item
/// `i` is the one furthest behind its share after `i` picks (deterministic).
fn spread<T: Copy>(weights: &[(u32, T)], n: usize) -> Vec<T> {
    if weights.is_empty() {
        return Vec::new();
    }
    let total: u64 = weights.iter().map(|w| u64::from(w.0)).sum::<u64>().max(1);
    let mut taken = vec![0u64; weights.len()];
    (0..n as u64)
        .map(|i| {
            let k = (0..weights.len())
                .max_by_key(|&k| {
                    // Deficit of item k after i + 1 picks, ×total; ties → the first item.
                    let want = u64::from(weights[k].0) * (i + 1);
                    (
                        want as i128 - (taken[k] * total) as i128,
                        std::cmp::Reverse(k),
                    )
                })
                .unwrap_or(0);
            taken[k] += 1;
            weights[k].1
        })
        .collect()
}

/// Body instructions per pass of the busy core in [`NtffSpec::v6_mix`], per engine (PE, ACT,
/// POOL, DVE, SP): the v6 samples' shares 35.7 / 8.4 / 28.4 / 20.1 / 7.3 %.
pub const MIX_BODY: [usize; 5] = [143, 34, 114, 80, 29];
/// Body instructions of the idle core's single pass (with the two epilogue pairs inside the
/// window: 35 / 30 / 30 / 30 / 25, as `sg01` of every v6 sample).
pub const MIX_IDLE_BODY: [usize; 5] = [33, 28, 28, 28, 23];

/// NEFF-side opcode bytes of engine `engine` on core slot `core` (0 busy, 1 idle) of
/// [`NtffSpec::v6_mix`]: slot 0 `0xB1`, slot 1 `0xCC`, then the per-engine opcode mix measured on
/// the v6 samples (per mille; DMA triggers as the NEFF spells them, `0xD4`; the samples'
/// unnamed bytes `0x41`, `0x49`, `0xA7`, `0xA8` included, NOTIFY left out).
pub fn mix_neff_opcodes(core: usize, engine: Engine) -> Vec<u8> {
    let e = engine.ntff_index();
    let weights: &[(u32, u8)] = if core > 0 {
        &[
            (440, 0xA2),
            (330, 0xA0),
            (100, 0xB1),
            (70, 0xA9),
            (30, 0xB0),
            (30, 0xAA),
        ]
    } else {
        match engine {
            Engine::Pe => &[(453, 0x02), (439, 0x01), (85, 0xA0), (13, 0xA2), (10, 0xA5)],
            Engine::Act => &[
                (449, 0x21),
                (299, 0x46),
                (100, 0xA0),
                (61, 0xA2),
                (27, 0x23),
                (12, 0xD4),
                (11, 0xAA),
                (11, 0xA9),
                (10, 0x47),
                (10, 0xB0),
                (10, 0xA5),
            ],
            Engine::Pool => &[
                (344, 0xA8),
                (287, 0xD4),
                (119, 0xAA),
                (116, 0xA7),
                (90, 0xA0),
                (18, 0xA2),
                (13, 0xA5),
                (13, 0xA9),
            ],
            Engine::Dve => &[
                (302, 0x41),
                (251, 0x46),
                (169, 0x49),
                (76, 0xA0),
                (61, 0x47),
                (45, 0xA5),
                (43, 0x42),
                (26, 0xA2),
                (14, 0x43),
                (13, 0xAA),
            ],
            Engine::Sp => &[
                (513, 0xA5),
                (287, 0xA0),
                (78, 0xD4),
                (70, 0xA2),
                (26, 0xAA),
                (13, 0xA9),
                (13, 0xB0),
            ],
        }
    };
    let body = if core > 0 { MIX_IDLE_BODY } else { MIX_BODY }[e];
    // Runtime body = NEFF slot 0 + slots 2.. (ntff.md §7), so body − 1 pattern slots.
    let mut v = vec![0xB1, 0xCC];
    v.extend(spread(weights, body.saturating_sub(1)));
    v
}

/// Semaphore updates per pass of core slot `core` in [`NtffSpec::v6_mix`]: 574 on the busy core
/// (1.435 per instruction; source/mode/id shares of the samples' `sg00`: 65 % DMA-source `0xF3`
/// on the queue semaphores 8 – 19, 9 % / 9 % / 4 % engine `0xF3` on ids 6 / 5 / 4, 8 % `0xF9`,
/// …), 290 on the idle core (mostly `0xF9` from the five engines on ids counting from 20).
fn mix_semaphores(core: usize) -> Vec<NtffSemaphore> {
    let s = |source, flag, mode, id| NtffSemaphore {
        source,
        flag,
        mode,
        id,
    };
    // id 0 below = "next queue semaphore".
    let (weights, n): (Vec<(u32, NtffSemaphore)>, usize) = if core == 0 {
        (
            vec![
                (655, s(6, false, 0xF3, 0)),
                (92, s(4, false, 0xF3, 6)),
                (90, s(1, false, 0xF3, 5)),
                (40, s(2, false, 0xF3, 4)),
                (27, s(6, true, 0xF3, 0)),
                (16, s(4, false, 0xF9, 0)),
                (16, s(3, false, 0xF9, 0)),
                (16, s(2, false, 0xF9, 0)),
                (16, s(5, false, 0xF9, 0)),
                (16, s(1, false, 0xF9, 0)),
                (10, s(3, false, 0xF3, 2)),
                (3, s(4, true, 0xF3, 6)),
                (3, s(1, true, 0xF3, 5)),
            ],
            574,
        )
    } else {
        (
            vec![
                (172, s(1, false, 0xF9, 0)),
                (172, s(2, false, 0xF9, 0)),
                (172, s(3, false, 0xF9, 0)),
                (172, s(4, false, 0xF9, 0)),
                (172, s(5, false, 0xF9, 0)),
                (140, s(3, false, 0xF3, 2)),
            ],
            290,
        )
    };
    let (first, count) = if core == 0 { (8, 12) } else { (20, 200) };
    spread(&weights, n)
        .into_iter()
        .enumerate()
        .map(|(j, mut u)| {
            if u.id == 0 {
                u.id = first + (j as u32 % count);
            }
            u
        })
        .collect()
}

/// DMA queues of core slot `core` in [`NtffSpec::v6_mix`]. Busy core: the samples' queue set,
/// each on all 16 DMA engines with the same packets per pass (as in every v6 sample):
/// `qActDynamicHW` q0, `qPoolDynamic` q1, `qSPDynamicHW` q2 (type code 2), `qPoolIO0` q3 and
/// `qSPIO0` q4 (code 3), `qDVESpillReload0` q5 (code 2), 1 715 packets per pass (65 / 20 / 7 /
/// 5 / 2 / 1 % as measured), plus one 8 – 16 KiB `instruction` packet per pass on queue 14 of
/// engines 1 – 3. Sizes as measured per queue: 4-byte completion writes (46 % of
/// `qPoolDynamic`, 74 % of `qSPDynamicHW` (its 4 and 8 B), 94 % of the IO and spill queues), otherwise 2 KiB /
/// 4 KiB (260 / 520 B on the IO queues). Idle core: 9 `instruction` packets on queue 14 of
/// engines 17 – 21.
pub fn mix_dma_queues(core: usize) -> Vec<NtffDmaQueue> {
    let q = |name: Option<&str>, engine: u32, queue, code, n, bytes, tiny| NtffDmaQueue {
        name: name.map(str::to_string),
        engine,
        queue,
        type_code: code,
        packets_per_iter: n,
        bytes,
        tiny_percent: tiny,
    };
    let mut v = Vec::new();
    if core > 0 {
        for (e, n) in [(17, 2), (18, 2), (19, 2), (20, 2), (21, 1)] {
            v.push(q(None, e, 14, 0, n, 16_384, 30));
        }
        return v;
    }
    for e in 0..16 {
        v.push(q(Some("qActDynamicHW"), e, 0, 2, 5, 4_096, 8));
        v.push(q(Some("qPoolDynamic"), e, 1, 2, 70, 4_096, 46));
        v.push(q(Some("qSPDynamicHW"), e, 2, 2, 22, 4_096, 74));
        v.push(q(Some("qPoolIO0"), e, 3, 3, 1, 520, 94));
        v.push(q(Some("qSPIO0"), e, 4, 3, 7, 520, 94));
        v.push(q(Some("qDVESpillReload0"), e, 5, 2, 2, 8, 94));
    }
    for e in 1..=3 {
        v.push(q(None, e, 14, 0, 1, 16_384, 13));
    }
    v
}

fn dma_packets_per_iter(sg: &NtffSubgraphSpec) -> u64 {
    sg.dma_queues
        .iter()
        .map(|q| u64::from(q.packets_per_iter))
        .sum()
}

/// The DMA packets of one body pass starting at `pass0` (ps), `usable` ps long: per queue, evenly
/// spaced starts with jitter, duration 60 ns + 25 ps/byte ([`Timing::Demo`]) or 7 ns + 36 ps/byte
/// ([`Timing::Measured`]: the samples' 4 B and 2 KiB medians), ends non-decreasing within the
/// queue (FIFO pairing, ntff.md §4.4). Sorted by start.
fn dma_pass(
    seed: u64,
    timing: Timing,
    sg: &NtffSubgraphSpec,
    k: u64,
    pass0: u64,
    usable: u64,
) -> Vec<WrittenDma> {
    let (fixed, per_byte) = match timing {
        Timing::Demo => (60_000, 25),
        Timing::Measured => (7_000, 36),
    };
    let mut out = Vec::new();
    for (qi, q) in sg.dma_queues.iter().enumerate() {
        let n = u64::from(q.packets_per_iter.max(1));
        let slot = usable / n;
        let mut prev_end = 0u64;
        for j in 0..u64::from(q.packets_per_iter) {
            let x = h(seed ^ 0xD3A, (u64::from(sg.core) << 8) | qi as u64, k, j);
            let start = pass0 + 20_000 + j * slot + (x % (slot / 3 + 1));
            let bytes = if splitmix(x) % 100 < u64::from(q.tiny_percent) {
                4
            } else if timing == Timing::Measured {
                // The samples' sizes are discrete: 2 KiB three times as often as 4 KiB.
                let b = if (x >> 20).is_multiple_of(4) {
                    q.bytes
                } else {
                    q.bytes / 2
                };
                b.clamp(1, 0xFF_FFFF)
            } else {
                (q.bytes >> ((x >> 20) % 3)).clamp(1, 0xFF_FFFF)
            };
            let end = (start + fixed + u64::from(bytes) * per_byte).max(prev_end + 1_000);
            prev_end = end;
            out.push(WrittenDma {
                engine: q.engine & 0x7F,
                queue: q.queue & 0xF,
                start_ps: start,
                end_ps: end,
                bytes,
                crc: (x >> 40) as u16,
            });
        }
    }
    out.sort_by_key(|p| p.start_ps);
    out
}

/// A runtime engine stream: opcode bytes and where the body (slot o − 1 ..) starts and ends.
struct Runtime {
    ops: Vec<u8>,
    body_start: u32,
    body_end: u32,
}

fn body_len(r: &Runtime) -> u32 {
    r.body_end - r.body_start
}

fn prologue_op(engine: usize, pc: u32) -> u8 {
    if engine == 0 && pc == START_NOTIFY_PC {
        return 0xA6; // NOTIFY
    }
    match pc % 10 {
        0..=4 => 0xA4, // NOP
        5 => 0xA5,     // WRITE
        6 => 0xA2,     // DRAIN
        7 => 0xAA,     // TENSOR_LOAD
        8 => 0xA9,     // COMPARE_BRANCH
        _ => 0xA0,     // EVENT_SEMAPHORE
    }
}

const EPILOGUE: [u8; EPILOGUE_SLOTS as usize] =
    [0xA2, 0xA0, 0xA6, 0xB0, 0xA4, 0xA5, 0xA2, 0xA9, 0xB1, 0xA4];

fn runtime_streams(sg: &NtffSubgraphSpec) -> Vec<Runtime> {
    (0..5)
        .map(|e| {
            let neff = &sg.neff_opcodes[e];
            let mut ops: Vec<u8> = (0..PROLOGUE_SLOTS).map(|pc| prologue_op(e, pc)).collect();
            let body_start = PROLOGUE_SLOTS;
            if let Some(&s0) = neff.first() {
                ops.push(s0);
                ops.extend(
                    neff.iter()
                        .skip(2)
                        .map(|&b| if b == 0xD4 { 0xB8 } else { b }),
                );
            }
            let body_end = ops.len() as u32;
            ops.extend_from_slice(&EPILOGUE);
            Runtime {
                ops,
                body_start,
                body_end,
            }
        })
        .collect()
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

fn h(seed: u64, a: u64, b: u64, c: u64) -> u64 {
    splitmix(seed ^ splitmix(a ^ splitmix(b ^ splitmix(c))))
}

/// Duration of an instruction by opcode, ps (a plausible spread, not measured).
fn duration_ps(op: u8, jitter: u64) -> u64 {
    let base = match op {
        0x02 => 180_000,
        0x01 => 64_000,
        0x21 => 350_000,
        0x23 => 1_200_000,
        0x42..=0x48 => 220_000,
        0xB8 => 45_000,
        0xA6 => 30_000,
        _ => 25_000,
    };
    base + jitter % (base / 4 + 1)
}

/// Engine `e`'s code block device address on `core` (64-byte aligned, distinct per engine).
fn code_address(core: u32, e: usize) -> u64 {
    0x8005_C000_0000 + ((core as u64) << 24) + 0x40_8000 + (e as u64) * 0x8000
}

/// Per-instruction timing inside one pass: (start offset, duration) in ps from the pass start.
struct Pass {
    times: Vec<(u64, u64)>,
    len: u64,
}

fn pass_times(seed: u64, timing: Timing, core: u32, e: usize, ops: &[u8]) -> Pass {
    if timing == Timing::Measured {
        return measured_pass_times(seed, core, e, ops);
    }
    let mut t = 0u64;
    let mut times = Vec::with_capacity(ops.len());
    let mut prev: Option<(u64, u64, u8)> = None;
    for (i, &op) in ops.iter().enumerate() {
        let r = h(seed, core as u64, e as u64, i as u64);
        let d = duration_ps(op, r);
        // PE pipelines MATMUL after LDWEIGHTS: it starts before the previous one ends.
        let start = match prev {
            Some((ps, pd, 0x01)) if op == 0x02 => ps + pd / 2,
            _ => t,
        };
        times.push((start, d));
        t = t.max(start + d) + 5_000 + (r >> 20) % 15_000;
        prev = Some((start, d, op));
    }
    Pass { times, len: t }
}

/// Median duration (ns) of runtime opcode `op` on engine `e` in the v6 samples' busy cores
/// (every (engine, opcode) with more than 50 executions; 30 ns for the rest).
fn measured_duration_ns(e: usize, op: u8) -> u64 {
    match (e, op) {
        (0, 0x01) => 104,
        (0, 0x02) => 186,
        (0, 0xA0) => 52,
        (0, 0xA2) => 12,
        (1, 0x21) => 295,
        (1, 0x23) => 1_283,
        (1, 0x46) => 253,
        (1, 0xA0) => 40,
        (1, 0xA2) => 8,
        (2, 0xA0) => 21,
        (2, 0xA2) => 29,
        (2, 0xA5) => 47,
        (2, 0xA7) => 46,
        (2, 0xA8) => 42,
        (2, 0xAA) => 291,
        (2, 0xB8) => 32,
        (3, 0x41) => 159,
        (3, 0x42) => 281,
        (3, 0x46) => 159,
        (3, 0x47) => 156,
        (3, 0x49) => 91,
        (3, 0xA0) => 26,
        (3, 0xA2) => 14,
        (3, 0xA5) => 33,
        (4, 0xA0) => 20,
        (4, 0xA2) => 8,
        (4, 0xA5) => 58,
        (4, 0xB8) => 521,
        _ => 30,
    }
}

/// [`Timing::Measured`] pass: each duration the measured median × 0.85 – 1.25; an
/// EVENT_SEMAPHORE waits 0.3 – 1.5 µs one time in ten; the gap to the next instruction is
/// 25 – 45 ns, one time in twelve 0.3 – 3 µs (the samples' gap p50 ≈ 35 ns, p90 0.6 – 3 µs);
/// PE LDWEIGHTS/MATMUL start halfway through the previous one (PE gap p50 −79 ns).
fn measured_pass_times(seed: u64, core: u32, e: usize, ops: &[u8]) -> Pass {
    let mut t = 0u64;
    let mut times = Vec::with_capacity(ops.len());
    let mut prev: Option<(u64, u64, u8)> = None;
    for (i, &op) in ops.iter().enumerate() {
        let r = h(seed ^ 0x3EA5, core as u64, e as u64, i as u64);
        let base = measured_duration_ns(e, op) * 1_000;
        let mut d = base * 17 / 20 + r % (base * 2 / 5 + 1);
        if op == 0xA0 && (r >> 12).is_multiple_of(10) {
            d += 300_000 + (r >> 16) % 1_200_000;
        }
        let start = match prev {
            Some((ps, pd, 0x01 | 0x02)) if e == 0 && matches!(op, 0x01 | 0x02) => ps + pd / 2,
            _ => t,
        };
        times.push((start, d));
        let gap = if (r >> 24).is_multiple_of(12) {
            300_000 + (r >> 28) % 2_700_000
        } else {
            25_000 + (r >> 28) % 20_000
        };
        t = t.max(start + d) + gap;
        prev = Some((start, d, op));
    }
    Pass { times, len: t }
}

/// Buffers records and writes them to `out` in 1 MiB pieces.
struct RecWriter<'a, W: Write> {
    out: &'a mut W,
    buf: Vec<u8>,
    written: u64,
}

impl<W: Write> RecWriter<'_, W> {
    fn rec(&mut self, w0: u32, w1: u32, ts: u64) -> std::io::Result<()> {
        self.buf.extend_from_slice(&w0.to_le_bytes());
        self.buf.extend_from_slice(&w1.to_le_bytes());
        self.buf.extend_from_slice(&ts.to_le_bytes());
        if self.buf.len() >= 1 << 20 {
            self.flush()?;
        }
        Ok(())
    }
    fn bytes(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.buf.extend_from_slice(b);
        if self.buf.len() >= 1 << 20 {
            self.flush()?;
        }
        Ok(())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.out.write_all(&self.buf)?;
        self.written += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }
}

/// One engine's records in time order, with at most one end held back so that a pipelined
/// start is written before the previous end (as the hardware does).
struct EngineEmitter {
    kind_base: u32,
    addr_base: u32,
    pending_end: Option<(u32, u32, u64)>,
}

impl EngineEmitter {
    fn instr<W: Write>(
        &mut self,
        w: &mut RecWriter<W>,
        pc: u32,
        start: u64,
        end: u64,
        wait_cycles: u32,
        crc: u32,
    ) -> std::io::Result<()> {
        let addr = self.addr_base.wrapping_add(pc) & 0xF_FFFF;
        let s = (self.kind_base << 24) | addr;
        let e = ((self.kind_base + 1) << 24) | addr;
        if let Some((pw0, pw1, pts)) = self.pending_end {
            if pts <= start {
                w.rec(pw0, pw1, pts)?;
                w.rec(s, wait_cycles << 16, start)?;
            } else {
                w.rec(s, wait_cycles << 16, start)?;
                w.rec(pw0, pw1, pts)?;
            }
        } else {
            w.rec(s, wait_cycles << 16, start)?;
        }
        self.pending_end = Some((e, crc, end));
        Ok(())
    }
    fn open_start<W: Write>(
        &mut self,
        w: &mut RecWriter<W>,
        pc: u32,
        start: u64,
    ) -> std::io::Result<()> {
        self.flush(w)?;
        let addr = self.addr_base.wrapping_add(pc) & 0xF_FFFF;
        w.rec((self.kind_base << 24) | addr, 0, start)
    }
    fn flush<W: Write>(&mut self, w: &mut RecWriter<W>) -> std::io::Result<()> {
        if let Some((a, b, c)) = self.pending_end.take() {
            w.rec(a, b, c)?;
        }
        Ok(())
    }
}

/// Everything about one core's timeline, computed before writing.
struct CorePlan {
    streams: Vec<Runtime>,
    passes: Vec<Pass>,
    /// Body pass length, ps (the longest engine pass + 100 ns).
    period: u64,
    /// Body passes of this core.
    n_passes: u64,
    /// Throttle records of this core.
    throttles: u64,
}

fn plan(spec: &NtffSpec, sg: &NtffSubgraphSpec) -> CorePlan {
    let streams = runtime_streams(sg);
    let passes: Vec<Pass> = streams
        .iter()
        .enumerate()
        .map(|(e, r)| {
            let ops = r
                .ops
                .get(r.body_start as usize..r.body_end as usize)
                .unwrap_or(&[]);
            pass_times(spec.seed, spec.timing, sg.core, e, ops)
        })
        .collect();
    let period = passes.iter().map(|p| p.len).max().unwrap_or(0) + 100_000;
    let n = self::passes(spec, sg);
    let body: u64 = streams.iter().map(|r| u64::from(body_len(r))).sum();
    let throttles = match sg.throttle_every {
        None => u64::from(spec.throttles_per_core),
        Some(every) => n.saturating_mul(body) / every.max(1),
    };
    CorePlan {
        streams,
        passes,
        period,
        n_passes: n,
        throttles,
    }
}

/// Writes a v6 NTFF for `spec` to `out`, streaming (memory independent of `iterations`).
/// Returns what a decoder must find. Errors: those of `out`.
pub fn write_ntff(spec: &NtffSpec, out: &mut impl Write) -> std::io::Result<WriteSummary> {
    let plans: Vec<CorePlan> = spec.subgraphs.iter().map(|s| plan(spec, s)).collect();
    let prologue_len: u64 = 2_000_000; // prologue pcs 40 – 49 fit well inside 2 µs
                                       // t0: 9.17 ns after the PE NOTIFY (pc 49, last prologue instruction) starts.
    let notify_start = spec.base_ps + prologue_len - 100_000;
    let t0 = notify_start + T0_AFTER_NOTIFY_PS;
    let window_body = plans
        .iter()
        .map(|p| p.period * p.n_passes)
        .max()
        .unwrap_or(0);
    // Epilogue inside the window: two instructions of ≤ 60 ns each, then one straddling t1.
    let epi_start = t0 + 200_000 + window_body;
    let t1 = epi_start + 300_000;

    // Sizes first (the info section needs every offset).
    let code_lens: Vec<Vec<u64>> = plans
        .iter()
        .map(|p| p.streams.iter().map(|r| r.ops.len() as u64 * 64).collect())
        .collect();
    let ins_records = |p: &CorePlan| -> u64 {
        let per_engine: u64 = p
            .streams
            .iter()
            .map(|r| {
                let pro = u64::from(START_NOTIFY_PC - PROLOGUE_RUN_FROM + 1);
                2 * (pro + p.n_passes * u64::from(body_len(r)) + 5)
            })
            .sum();
        per_engine + 1 // the open PE start
    };
    let ev_records =
        |sg: &NtffSubgraphSpec, p: &CorePlan| -> u64 { 2 + p.n_passes * events_per_pass(sg) + 2 };

    let mut off = 0u64;
    let mut code_offsets: Vec<Vec<u64>> = Vec::new();
    for lens in &code_lens {
        let mut v = Vec::new();
        for l in lens {
            v.push(off);
            off += l;
        }
        code_offsets.push(v);
    }
    let mut descriptors = Vec::new();
    let mut buf_offsets = Vec::new();
    for (sg, p) in spec.subgraphs.iter().zip(&plans) {
        let ins = ins_records(p) * 16;
        let ev = ev_records(sg, p) * 16;
        buf_offsets.push((off, off + ins));
        let core = u64::from(sg.core);
        let d = |t: u64, block: u64, offset: u64, size: u64| proto::TraceBufferDescriptor {
            trace_type: t,
            block_type: block,
            block_index: 0,
            offset,
            size,
            core,
        };
        let er = spec.error_records.len() as u64 * 16;
        descriptors.push(d(0, 0, off, ins));
        descriptors.push(d(1, 0, off + ins, ev));
        let dma = p.n_passes * dma_packets_per_iter(sg) * 48;
        let thr = p.throttles * 16;
        descriptors.push(d(2, 0, off + ins + ev, er));
        descriptors.push(d(4, 1, off + ins + ev + er, dma));
        descriptors.push(d(5, 0, off + ins + ev + er + dma, thr));
        off += ins + ev + er + dma + thr;
    }

    let first_core = spec.subgraphs.first().map_or(0, |s| s.core);
    let subgraphs_pb: Vec<proto::Subgraph> = spec
        .subgraphs
        .iter()
        .enumerate()
        .map(|(i, sg)| proto::Subgraph {
            name: sg.name.clone().into_bytes(),
            core: u64::from(sg.core),
            code_blocks: (0..5)
                .map(|e| proto::EngineCodeBlock {
                    engine: e as u64,
                    address: code_address(sg.core, e),
                    code: Vec::new(),
                    blob_offset: code_offsets[i][e],
                    blob_len: code_lens[i][e],
                })
                .collect(),
            calibration: Some(identity_calibration()),
            dma_queues: sg
                .dma_queues
                .iter()
                .filter_map(|q| {
                    Some(proto::DmaQueue {
                        engine: 16 * u64::from(first_core) + u64::from(q.engine),
                        queue: u64::from(q.queue),
                        queue_type: u64::from(q.type_code),
                        name: q.name.clone()?.into_bytes(),
                        event_id: -1,
                        unknown7: 2,
                        axi: Vec::new(),
                    })
                })
                .collect(),
            total_time_ps: if i == 0 {
                t1 - t0
            } else {
                plans[i].period * plans[i].n_passes
            },
            ..Default::default()
        })
        .collect();
    let uuid = spec.neff_uuid.to_vec();
    let cstr: Vec<u8> = match spec.neff_uuid.iter().position(|&b| b == 0) {
        Some(k) => spec.neff_uuid[..k].to_vec(),
        // No zero byte: the runtime's copy runs on into whatever follows (pairing.md §4.2).
        None => [spec.neff_uuid.as_slice(), &[0xA4, 0x1B]].concat(),
    };
    let ver = |v: (u64, u64, u64, &str)| proto::Version {
        major: v.0,
        minor: v.1,
        patch: v.2,
        git_hash: v.3.as_bytes().to_vec(),
    };
    let info = proto::NtffInfoPb {
        neff_name: spec.neff_name.clone().into_bytes(),
        uuid_cstr: (!cstr.is_empty()).then_some(cstr),
        unknown3: 10001,
        neff_nodes: vec![proto::NeffNode {
            device: Some(proto::DeviceNode {
                subgraphs: subgraphs_pb,
            }),
            uuid: uuid.clone(),
        }],
        physical_cores: spec.subgraphs.len() as u64,
        capture_time_s: 0,
        runtime_version: Some(ver((
            spec.runtime_version.0,
            spec.runtime_version.1,
            spec.runtime_version.2,
            &spec.runtime_version.3,
        ))),
        instance_type: spec.instance_type.clone().into_bytes(),
        unknown10: 2,
        driver_version: Some(ver((2, 26, 0, ""))),
        collectives_version: Some(ver((2, 30, 59, ""))),
        notification_buffer_sizes: Vec::new(),
        unknown14: Some(proto::Unknown14 {
            value4: 0xFFFF_FFFF,
        }),
        executions: vec![proto::ExecutionRecord {
            neff_uuid: uuid,
            start: t0,
            end: t1,
        }],
        trace_buffers: descriptors,
        instance_id: spec.instance_id.clone().into_bytes(),
        unknown18: 31_737,
    };
    let info_bytes = info.encode_to_vec();

    let mut w = RecWriter {
        out,
        buf: Vec::with_capacity(1 << 20),
        written: 0,
    };
    let mut header = [0u8; 128];
    header[0] = 6;
    header[1..9].copy_from_slice(&(info_bytes.len() as u64).to_le_bytes());
    header[9..17].copy_from_slice(&[0, 0, 4, 0, 0, 0, 0, 0xA0]);
    w.bytes(&header)?;
    w.bytes(&info_bytes)?;

    // Code blocks: byte 0 opcode, byte 1 0x10 (as in real streams), rest zero.
    for p in &plans {
        for r in &p.streams {
            for &op in &r.ops {
                let mut slot = [0u8; 64];
                slot[0] = op;
                slot[1] = 0x10;
                w.bytes(&slot)?;
            }
        }
    }

    let mut summary = WriteSummary {
        t0,
        t1,
        ..Default::default()
    };
    for (ci, (sg, p)) in spec.subgraphs.iter().zip(&plans).enumerate() {
        let mut in_window = [0u64; 5];
        let start_bytes = w.written + w.buf.len() as u64;
        let mut ems: Vec<EngineEmitter> = (0..5)
            .map(|e| EngineEmitter {
                kind_base: 0x84 + 4 * e as u32,
                addr_base: ((code_address(sg.core, e) >> 6) & 0xF_FFFF) as u32,
                pending_end: None,
            })
            .collect();
        let seed = spec.seed;
        let jitter = |e: usize, pc: u32, k: u64| {
            h(seed, (u64::from(sg.core) << 8) | e as u64, u64::from(pc), k)
        };
        // Prologue pcs 40 – 49 before t0 (the PE NOTIFY at 49 straddles t0).
        for (e, em) in ems.iter_mut().enumerate() {
            for (j, pc) in (PROLOGUE_RUN_FROM..=START_NOTIFY_PC).enumerate() {
                let (s, d) = if e == 0 && pc == START_NOTIFY_PC {
                    (notify_start, 30_000)
                } else {
                    (spec.base_ps + j as u64 * 150_000 + e as u64 * 7_000, 40_000)
                };
                let r = jitter(e, pc, u64::MAX);
                em.instr(&mut w, pc, s, s + d, (r % 2000) as u32, 0xFFFF_FFFF)?;
            }
            em.flush(&mut w)?;
        }
        // Body passes, iteration-major, engines interleaved per iteration.
        for k in 0..p.n_passes {
            let pass0 = t0 + 100_000 + k * p.period;
            for (e, em) in ems.iter_mut().enumerate() {
                let r = &p.streams[e];
                for (i, &(so, d)) in p.passes[e].times.iter().enumerate() {
                    let pc = r.body_start + i as u32;
                    let x = jitter(e, pc, k);
                    let wait = match spec.timing {
                        Timing::Demo if x % 5 == 0 => (x >> 8) % 60_000,
                        Timing::Demo => 0,
                        // The samples' per-engine median wait field, × 0.5 – 1.5.
                        Timing::Measured => {
                            let m = [2, 820, 27_500, 212, 12_500][e];
                            (m / 2 + (x >> 8) % (m + 1)).min(0xFFFF)
                        }
                    } as u32;
                    let crc = if x % 3 == 0 {
                        0xFFFF_FFFF
                    } else {
                        (x >> 16) as u32
                    };
                    em.instr(&mut w, pc, pass0 + so, pass0 + so + d, wait, crc)?;
                    in_window[e] += 1;
                }
                em.flush(&mut w)?;
            }
        }
        // Epilogue: 2 inside the window, 1 straddling t1, 2 after it.
        for (e, em) in ems.iter_mut().enumerate() {
            let r = &p.streams[e];
            let pc0 = r.body_end;
            let times = [
                (epi_start, 50_000),
                (epi_start + 100_000, 60_000),
                (t1 - 20_000, 40_000),
                (t1 + 100_000, 30_000),
                (t1 + 200_000, 30_000),
            ];
            for (j, (s, d)) in times.into_iter().enumerate() {
                em.instr(
                    &mut w,
                    pc0 + j as u32,
                    s + e as u64 * 1_000,
                    s + e as u64 * 1_000 + d,
                    0,
                    0xFFFF_FFFF,
                )?;
            }
            em.flush(&mut w)?;
            in_window[e] += 2;
        }
        // One PE start still open when capture stopped.
        ems[0].open_start(&mut w, p.streams[0].body_end + 6, t1 + 400_000)?;
        summary.instructions_in_window.push(in_window);

        // Events: 2 before t0, per pass the listed updates and the event sets, 2 after t1.
        let ev = event_w0;
        w.rec(ev(1, 0xF1, true, 2), 1, spec.base_ps + 10_000)?;
        w.rec(ev(5, 0xF3, true, 2), 0, spec.base_ps + 20_000)?;
        let mut updates = 0u64;
        let n_ev = events_per_pass(sg);
        // Few updates: 3 ns apart from the middle of the pass (the demo); many: spread over it.
        let compact = n_ev * 3_000 + 20_000 < p.period / 2;
        let step = if compact {
            3_000
        } else {
            (p.period.saturating_sub(150_000) / n_ev.max(1)).max(1)
        };
        for k in 0..p.n_passes {
            let pass0 = t0 + 100_000 + k * p.period;
            let base = if compact {
                pass0 + p.period / 2
            } else {
                pass0 + 20_000
            };
            let v = (k % 200) as u32 + 1;
            for (j, u) in sg.semaphores.iter().enumerate() {
                w.rec(u.w0(), v, base + j as u64 * step)?;
                updates += 1;
            }
            for j in 0..u64::from(sg.event_sets_per_pass) {
                let at = if compact {
                    base + 20_000 + j * 1_000
                } else {
                    base + (sg.semaphores.len() as u64 + j) * step
                };
                w.rec(ev(6, 0x07, false, 1), 0, at)?;
            }
        }
        w.rec(ev(1, 0xF1, true, 2), 0, t1 + 50_000)?;
        w.rec(ev(1, 0xF1, true, 2), 1, t1 + 60_000)?;
        summary.semaphore_updates.push(updates);
        summary.events_in_window.push(p.n_passes * n_ev);
        for &(w0, w1, after) in &spec.error_records {
            w.rec(w0, w1, t0 + after)?;
        }

        // DMA: per iteration, the pass's packets as time-ordered phase 1/5/6 records.
        let mut dma_detail = Vec::new();
        let mut packets = 0u64;
        let usable = p.period.saturating_sub(150_000);
        for k in 0..p.n_passes {
            let pass0 = t0 + 100_000 + k * p.period;
            let pk = dma_pass(spec.seed, spec.timing, sg, k, pass0, usable);
            let mut recs: Vec<(u64, u32, u32)> = Vec::with_capacity(pk.len() * 3);
            for d in &pk {
                let w0 = 0x8000_0000 | (d.engine << 24);
                let q = d.queue << 4;
                recs.push((d.start_ps, w0, q | 1));
                recs.push((d.end_ps, w0 | d.bytes, (u32::from(d.crc) << 16) | q | 5));
                recs.push((d.end_ps + 30_000, w0, q | 6));
            }
            recs.sort_by_key(|r| r.0);
            for (ts, w0, w1) in recs {
                w.rec(w0, w1, ts)?;
            }
            packets += pk.len() as u64;
            let room = DETAIL_CAP.saturating_sub(dma_detail.len());
            dma_detail.extend(pk.into_iter().take(room));
        }
        summary.dma_packets.push(packets);
        summary.dma.push(dma_detail);

        // Throttle: evenly over the body passes, alternating types, k/n from 16/16 down.
        let body = u128::from(p.period * p.n_passes);
        let n_thr = p.throttles;
        let mut thr = Vec::new();
        for i in 0..n_thr {
            let x = h(spec.seed ^ 0x7E, u64::from(sg.core), i, 0);
            // u128: period × passes × i overflows u64 in a 10 GB file.
            let at = (body * u128::from(i) / u128::from(n_thr.max(1))) as u64;
            let t = WrittenThrottle {
                ts_ps: t0 + 100_000 + at + x % 10_000,
                k: 16 - (i % 4) as u8 * 3,
                n: 16,
                type_code: (i % 2) as u8,
                w0: 0x9E00_0000 | (16 << 16) | (x as u32 & 0xFF),
            };
            w.rec(
                t.w0,
                (u32::from(t.type_code) << 8) | u32::from(t.k),
                t.ts_ps,
            )?;
            // Bounded like `dma`: a 10 GB file has tens of thousands.
            if thr.len() < DETAIL_CAP {
                thr.push(t);
            }
        }
        summary.throttles.push(thr);
        summary
            .last_instruction_end
            .push(epi_start + 100_000 + 4 * 1_000 + 60_000);

        let wrote = w.written + w.buf.len() as u64 - start_bytes;
        debug_assert_eq!(
            wrote,
            (ins_records(p) + ev_records(sg, p) + spec.error_records.len() as u64) * 16
                + p.n_passes * dma_packets_per_iter(sg) * 48
                + n_thr * 16,
            "core {ci}: record count plan"
        );
    }
    w.flush()?;
    summary.bytes = w.written;
    Ok(summary)
}

fn identity_calibration() -> proto::Calibration {
    let one = proto::ClockCalibration {
        init: 0,
        actual: 1,
        expected: 1,
    };
    let id = Some(one);
    proto::Calibration {
        pe: id,
        act: id,
        dve: id,
        pool: id,
        sp: id,
        event: id,
        throttle: id,
        dma: vec![one; 16],
        unknown9: id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ntff::{decode, read_info, DecodeContext};
    use crate::source::SliceSource;
    use crate::tables::Tables;
    use arrow_array::{Array, Int64Array, StringArray};

    fn roundtrip(spec: &NtffSpec) -> (Vec<u8>, WriteSummary, Tables, crate::ntff::DecodeReport) {
        let mut bytes = Vec::new();
        let s = write_ntff(spec, &mut bytes).unwrap();
        assert_eq!(s.bytes, bytes.len() as u64);
        let mut t = Tables::default();
        let mut names = std::collections::BTreeMap::new();
        names.insert(24u32, "qSyncDynamicHW".to_string());
        let ctx = DecodeContext {
            first_dma_id: 0,
            file_name: "synthetic.ntff".into(),
            compiler_version: Some("2.23.6484.0+3b612583".into()),
            semaphore_names: vec![names],
            first_instruction_id: 1000,
            attribution: None,
            dma_elsewhere: false,
        };
        let r = decode(&SliceSource(&bytes), &ctx, &mut t, &mut |_, _| {}).unwrap();
        (bytes, s, t, r)
    }

    #[test]
    fn demo_roundtrips() {
        let spec = NtffSpec::default();
        let (bytes, s, t, r) = roundtrip(&spec);
        assert!(r.problems.is_empty(), "{:?}", r.problems);
        let info = read_info(&SliceSource(&bytes)).unwrap().unwrap();
        assert_eq!(info.version, 6);
        assert_eq!(info.neff_name, "synthetic.neff");
        assert_eq!(info.full_uuid, Some(*b"neuronscope-demo"));
        // No zero byte in the uuid: the C-string copy runs past 16 bytes (pairing.md §4.2).
        assert_eq!(info.uuid_cstr.as_ref().map(Vec::len), Some(18));
        assert_eq!(info.executions[0].neff_uuid, b"neuronscope-demo".to_vec());
        assert_eq!(info.runtime_version.as_deref(), Some("2.30.51 (faafe)"));
        assert_eq!(info.subgraphs.len(), 2);
        assert_eq!(info.subgraphs[1].core, 5);
        // PE runtime stream: prologue 50 + NEFF slot 0 + 38 body + epilogue 10.
        assert_eq!(info.subgraphs[0].code_blocks[0].slots(), 50 + 1 + 38 + 10);
        // Runtime code layout of ntff.md §7: prologue, NEFF slot 0, NEFF slots 2.. (0xD4 → 0xB8).
        for (e, cb) in info.subgraphs[0].code_blocks.iter().enumerate() {
            let start = (info.blob_offset + cb.blob_offset) as usize;
            let ops: Vec<u8> = bytes[start..start + cb.len as usize]
                .chunks(64)
                .map(|s| s[0])
                .collect();
            let neff = &spec.subgraphs[0].neff_opcodes[e];
            let p = PROLOGUE_SLOTS as usize;
            assert_eq!(ops[p], 0xB1);
            let body: Vec<u8> = neff[2..]
                .iter()
                .map(|&b| if b == 0xD4 { 0xB8 } else { b })
                .collect();
            assert_eq!(&ops[p + 1..p + 1 + body.len()], body.as_slice());
            assert_eq!(ops[START_NOTIFY_PC as usize] == 0xA6, e == 0);
        }
        for (i, per) in s.instructions_in_window.iter().enumerate() {
            assert_eq!(&r.instructions_per_engine[i], per, "core {i}");
            assert_eq!(r.cores[i].semaphore_updates, s.semaphore_updates[i]);
            assert_eq!(r.cores[i].event_count, s.events_in_window[i]);
            assert_eq!(
                r.cores[i].unpaired_starts, 1,
                "one PE start left open per core"
            );
        }
        assert_eq!(r.total_time_ps, Some(s.t1 - s.t0));
        assert_eq!(r.last_hw_timestamp_ns, ((s.t1 - s.t0) / 1000) as i64);
        let b = t.concat("Instruction").unwrap();
        assert_eq!(b.num_rows() as u64, r.instructions);
        let op = b.column_by_name("opcode").unwrap();
        let op = op.as_any().downcast_ref::<StringArray>().unwrap();
        let track = b.column_by_name("timeline_track").unwrap();
        let track = track.as_any().downcast_ref::<StringArray>().unwrap();
        let id = b.column_by_name("id").unwrap();
        let id = id.as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!(id.value(0), 1000);
        assert_eq!(id.value(b.num_rows() - 1), 1000 + b.num_rows() as i64 - 1);
        let mut seen = std::collections::BTreeSet::new();
        for i in 0..b.num_rows() {
            assert!(!op.is_null(i));
            seen.insert(op.value(i).to_string());
            assert_eq!(op.value(i) == "MATMUL", track.value(i) == "TensorMatrix");
        }
        for m in [
            "MATMUL",
            "LDWEIGHTS",
            "DMA_DIRECT2D",
            "ACTIVATE",
            "SET_ORDERING_MODE",
        ] {
            assert!(seen.contains(m), "{m} in {seen:?}");
        }
        let start = b.column_by_name("start_ts").unwrap();
        let start = start.as_any().downcast_ref::<Int64Array>().unwrap();
        assert!((0..b.num_rows()).all(|i| start.value(i) >= 0));
        let sem = t.concat("SemaphoreUpdate").unwrap();
        let ids = sem.column_by_name("id").unwrap();
        let ids = ids.as_any().downcast_ref::<StringArray>().unwrap();
        let texts: std::collections::BTreeSet<&str> =
            (0..sem.num_rows()).map(|i| ids.value(i)).collect();
        assert!(texts.contains("S[24] (qSyncDynamicHW)"), "{texts:?}");
        assert!(texts.contains("S[5] (Tensor)"));
        assert_eq!(t.rows("Metadata"), 1);
        assert_eq!(t.rows("ExecutionInfo"), 1);
    }

    fn col<'a, T: 'static>(b: &'a arrow_array::RecordBatch, name: &str) -> &'a T {
        b.column_by_name(name)
            .unwrap_or_else(|| panic!("column {name}"))
            .as_any()
            .downcast_ref::<T>()
            .unwrap_or_else(|| panic!("type of {name}"))
    }

    /// Decoded `DmaPacket` and `Throttle` rows equal what the writer wrote (ntff.md §4.4, §4.5).
    #[test]
    fn dma_and_throttle_roundtrip() {
        let spec = NtffSpec::default();
        let (_bytes, s, t, r) = roundtrip(&spec);
        assert!(r.problems.is_empty(), "{:?}", r.problems);
        let first = spec.subgraphs[0].core as i64;
        // Expected rows: (pcore, engine_idx, queue, start ns, duration ns, bytes, crc, type, name).
        type Row = (i64, i64, i64, i64, i64, i64, i64, String, String);
        let mut want: Vec<Row> = Vec::new();
        for (ci, (sg, packets)) in spec.subgraphs.iter().zip(&s.dma).enumerate() {
            assert_eq!(packets.len() as u64, s.dma_packets[ci]);
            assert_eq!(
                s.dma_packets[ci],
                spec.iterations * 24,
                "24 packets per iteration"
            );
            for d in packets {
                let q = sg
                    .dma_queues
                    .iter()
                    .find(|q| q.engine == d.engine && q.queue == d.queue)
                    .unwrap();
                let engine = 16 * first + i64::from(d.engine);
                let (ty, name) = match q.name.as_deref() {
                    Some(n) if n.ends_with("DynamicHW") => {
                        ("hardware_dynamic", format!("Q{}-E{engine}", d.queue))
                    }
                    Some(n) if n.ends_with("Dynamic") => {
                        ("software_dynamic", format!("Q{}-E{engine}", d.queue))
                    }
                    Some(_) => ("data", format!("qSyncSpillReload0-Q{}-E{engine}", d.queue)),
                    None => ("instruction", format!("Q{}-E{engine}", d.queue)),
                };
                want.push((
                    ci as i64,
                    engine,
                    i64::from(d.queue),
                    ((d.start_ps - s.t0) / 1000) as i64,
                    ((d.end_ps - d.start_ps) / 1000) as i64,
                    i64::from(d.bytes),
                    i64::from(d.crc),
                    ty.to_string(),
                    name,
                ));
            }
        }
        let b = t.concat("DmaPacket").unwrap();
        let i64c = |n: &str| col::<Int64Array>(&b, n);
        let strc = |n: &str| col::<StringArray>(&b, n);
        let mut got: Vec<Row> = (0..b.num_rows())
            .map(|i| {
                (
                    i64c("pcore_idx").value(i),
                    i64c("engine_idx").value(i),
                    i64c("queue_idx").value(i),
                    i64c("start_ts").value(i),
                    i64c("duration_ns").value(i),
                    i64c("transfer_bytes").value(i),
                    i64c("crc").value(i),
                    strc("queue_type").value(i).to_string(),
                    strc("queue_name").value(i).to_string(),
                )
            })
            .collect();
        want.sort();
        got.sort();
        assert_eq!(got.len(), want.len());
        assert_eq!(got, want);
        assert!(
            want.iter().any(|w| w.5 == 65536),
            "a 64 KiB packet (24-bit size)"
        );
        // packet_idx: 0-based rank by start within (core, engine, queue).
        let idx = col::<arrow_array::Int32Array>(&b, "packet_idx");
        let max_idx = (0..b.num_rows()).map(|i| idx.value(i)).max().unwrap();
        assert_eq!(max_idx as u64, spec.iterations * 8 - 1);
        for c in &r.cores {
            assert_eq!(c.dma.dropped_streams, 0);
            assert_eq!(c.dma.unpaired_starts + c.dma.unpaired_ends, 0);
        }

        // Throttle rows: each lasts to the next record, the last to the core's last instruction.
        let th = t.concat("Throttle").unwrap();
        let mut want: Vec<(i64, i64, i64, i32, i32, String)> = Vec::new();
        for (ci, recs) in s.throttles.iter().enumerate() {
            assert_eq!(recs.len() as u32, spec.throttles_per_core);
            for (i, x) in recs.iter().enumerate() {
                let end = recs
                    .get(i + 1)
                    .map_or(s.last_instruction_end[ci], |n| n.ts_ps);
                want.push((
                    ci as i64,
                    ((x.ts_ps - s.t0) / 1000) as i64,
                    ((end - x.ts_ps) / 1000) as i64,
                    i32::from(x.k),
                    i32::from(x.n),
                    format!("activity_{}", x.type_code),
                ));
            }
        }
        let i32c = |n: &str| col::<arrow_array::Int32Array>(&th, n);
        let got: Vec<(i64, i64, i64, i32, i32, String)> = (0..th.num_rows())
            .map(|i| {
                (
                    col::<Int64Array>(&th, "pcore_idx").value(i),
                    col::<Int64Array>(&th, "timestamp").value(i),
                    col::<Int64Array>(&th, "duration").value(i),
                    i32c("k").value(i),
                    i32c("n").value(i),
                    col::<StringArray>(&th, "type").value(i).to_string(),
                )
            })
            .collect();
        assert_eq!(got, want);
        // The queue table names the four NEFF queues per core.
        let q = t.concat("DmaQueuesInfo").unwrap();
        let names = col::<StringArray>(&q, "name");
        let names: Vec<&str> = (0..q.num_rows()).map(|i| names.value(i)).collect();
        assert_eq!(
            names,
            [
                "qSyncDynamicHW",
                "qScalarDynamicHW",
                "qGpSimdDynamic",
                "qSyncSpillReload0"
            ]
            .repeat(2)
        );
    }

    #[test]
    fn single_core_empty_engine_and_zero_uuid() {
        let mut spec = NtffSpec::demo("one.neff", [0u8; 16], &[[10, 0, 3, 1, 2]], 3);
        spec.neff_uuid[0] = 0;
        let (bytes, s, _t, r) = roundtrip(&spec);
        let info = read_info(&SliceSource(&bytes)).unwrap().unwrap();
        assert_eq!(
            info.uuid_cstr, None,
            "uuid starting with 0x00 → field 2 absent"
        );
        assert_eq!(r.instructions_per_engine[0], s.instructions_in_window[0]);
        assert_eq!(
            s.instructions_in_window[0][1], 2,
            "empty engine: only the epilogue pair"
        );
        assert_eq!(r.problems, vec![]);
    }

    #[test]
    fn synthetic_garbage_never_panics() {
        let spec = NtffSpec::demo("g.neff", *b"0123456789abcdef", &[[6, 4, 4, 4, 4]], 2);
        let mut bytes = Vec::new();
        write_ntff(&spec, &mut bytes).unwrap();
        let run = |b: &[u8]| {
            let mut t = Tables::default();
            let _ = decode(
                &SliceSource(b),
                &DecodeContext::default(),
                &mut t,
                &mut |_, _| {},
            );
        };
        for cut in (0..bytes.len()).step_by(7) {
            run(&bytes[..cut]);
        }
        let mut x = 12345u64;
        for _ in 0..2000 {
            x = splitmix(x);
            let mut b = bytes.clone();
            let p = (x as usize) % b.len();
            b[p] ^= 1 << (x >> 61);
            run(&b);
        }
    }

    /// The v6-shaped spec decodes to exactly what was written: busy and idle core, 16-engine
    /// queues, many semaphore updates per pass, throttles per instruction count.
    #[test]
    fn v6_mix_roundtrips() {
        let spec = NtffSpec::v6_mix("mix.neff", *b"0123456789abcdef", 3);
        let (_bytes, s, t, r) = roundtrip(&spec);
        assert!(r.problems.is_empty(), "{:?}", r.problems);
        assert_eq!(r.cores.len(), 2);
        for (i, c) in r.cores.iter().enumerate() {
            assert_eq!(
                c.instructions_per_engine, s.instructions_in_window[i],
                "core {i}"
            );
            assert_eq!(c.semaphore_updates, s.semaphore_updates[i]);
            assert_eq!(c.event_count, s.events_in_window[i]);
            assert_eq!(c.dma.packets, s.dma_packets[i]);
            assert_eq!(c.dma.dropped_streams + c.dma.unpaired_starts, 0);
            assert_eq!(c.dma.throttles, s.throttles[i].len() as u64);
        }
        // Busy core: 3 passes of the 400-instruction body + 2 epilogue pairs per engine.
        let busy: Vec<u64> = MIX_BODY.iter().map(|&n| 3 * n as u64 + 2).collect();
        assert_eq!(s.instructions_in_window[0].to_vec(), busy);
        assert_eq!(s.semaphore_updates, vec![3 * 574, 290]);
        assert_eq!(s.dma_packets, vec![3 * 1_715, 9]);
        assert_eq!(s.throttles[0].len(), 3 * 400 / 1_150);
        assert!(s.throttles[1].is_empty());
        // Idle core: one pass (35 / 30 / 30 / 30 / 25 with the epilogue pairs).
        assert_eq!(s.instructions_in_window[1], [35, 30, 30, 30, 25]);
        let q = t.concat("DmaQueuesInfo").unwrap();
        let names = col::<StringArray>(&q, "name");
        let names: std::collections::BTreeSet<&str> =
            (0..q.num_rows()).map(|i| names.value(i)).collect();
        assert_eq!(names.len(), 6, "{names:?}");
        // NEFF opcode streams: slot 0 SET_ORDERING_MODE, slot 1 0xCC, body in the measured mix.
        for e in Engine::ALL {
            let ops = mix_neff_opcodes(0, e);
            assert_eq!(ops.len(), MIX_BODY[e.ntff_index()] + 1);
            assert_eq!(&ops[..2], &[0xB1, 0xCC]);
        }
        let pe = mix_neff_opcodes(0, Engine::Pe);
        let matmuls = pe.iter().filter(|&&b| b == 0x02).count();
        assert_eq!(matmuls, 64, "45.3 % of the 142 pattern slots");
    }

    #[test]
    fn spread_keeps_proportions_and_interleaves() {
        let v = spread(&[(500, 'a'), (300, 'b'), (200, 'c')], 10);
        assert_eq!(v.iter().collect::<String>(), "abcaabacba");
        assert_eq!(spread::<u8>(&[], 3), vec![] as Vec<u8>);
    }

    #[test]
    fn min_bytes_sizing() {
        let spec = NtffSpec::default().with_min_bytes(3 << 20);
        let mut sink = std::io::sink();
        let s = write_ntff(&spec, &mut sink).unwrap();
        assert!(s.bytes >= 3 << 20 && s.bytes < 4 << 20, "{}", s.bytes);
    }
}
