//! Synthetic captures written by our own NEFF and NTFF writers ([`crate::neff::write`],
//! [`crate::ntff::write`]): the app's built-in demo, benchmark inputs and fuzz seeds.
//!
//! A capture is returned as `(relative path, bytes)` pairs laid out like a `neuron-explorer
//! capture -s` run: `<dir>/<kernel>.neff` next to `<dir>/<kernel>_exec_2.ntff` (pairing.md §2).
//!
//! The demo NEFF carries a full `.dbg` chain (neff.md §9): per subgraph and engine an asm file
//! (one record per slot → BIR id) and a backend file (BIR records with `kernel_file` /
//! `kernel_line` into [`DEMO_SOURCE`]), and top-level Penguin → HLO → framework files, so every
//! body instruction gets `bir_instruction_name`, `hlo_name`, `layer` and `nki_source_location`
//! as [`demo_attribution`] says. The demo folder also holds that source file ([`DEMO_SOURCE_TEXT`])
//! and a small allocator snapshot `memory_snapshot_rank0.pickle`
//! ([`crate::memsnap::write::demo_snapshot`]).

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::neff::write::{
    encode_dbg, engine_dbg_members, write_neff, DbgFileSpec, DbgRecordSpec, NeffSpec, SubgraphSpec,
};
use crate::neff::{DmaQueue, TensorMapEntry, Var};
use crate::ntff::write::{write_ntff, NtffSpec};

/// Start of the demo memory snapshot's trace (2026-01-01T00:00:00Z, µs since the epoch).
const DEMO_SNAPSHOT_T0_US: i64 = 1_767_225_600_000_000;

/// Folder name of the demo capture.
pub const DEMO_DIR: &str = "neuronscope-demo";

/// Instruction slots per engine (PE, ACT, POOL, DVE, SP) of each of the two physical cores.
const DEMO_SLOTS: [[usize; 5]; 2] = [[180, 96, 48, 120, 40], [150, 80, 40, 100, 32]];

/// The uuid of the synthetic NEFF; its first byte is non-zero so the NTFF's C-string copy holds
/// at least one byte (pairing.md §4.2).
const DEMO_UUID: [u8; 16] = *b"nscope-demo-v1\x01\x02";

/// Path (in the demo folder) of the demo's kernel source: the file of every demo
/// `nki_source_location` (`neuronscope-demo/matmul_kernel.py:<line>`).
pub const DEMO_SOURCE: &str = "neuronscope-demo/matmul_kernel.py";

/// Text of [`DEMO_SOURCE`]: a small NKI-style matmul kernel written for the demo (not compiled;
/// the demo's line numbers point into it).
pub const DEMO_SOURCE_TEXT: &str = r#""""neuronscope demo kernel: out = gelu(x @ w + b), NKI style.

Synthetic: written for neuronscope's built-in demo capture. The demo's instructions point at the
lines below through the NEFF debug info (nki_source_location).
"""
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def matmul_kernel(x, w, b):
    """x: [256, 1024] bf16, w: [1024, 128] bf16, b: [128] -> out [256, 128]."""
    out = nl.ndarray((256, 128), dtype=x.dtype, buffer=nl.shared_hbm)
    bias = nl.load(b.reshape((1, 128))).broadcast_to((128, 128))
    for m in nl.affine_range(2):
        acc = nl.zeros((128, 128), dtype=nl.float32, buffer=nl.psum)
        for k in nl.affine_range(8):
            xt = nl.load_transpose2d(x[m * 128:(m + 1) * 128, k * 128:(k + 1) * 128])
            wt = nl.load(w[k * 128:(k + 1) * 128, :])
            acc += nisa.nc_matmul(xt, wt)
        y = nl.add(acc, bias)
        y = nl.gelu(y)
        nl.store(out[m * 128:(m + 1) * 128, :], value=y)
    return out
"#;

/// The HLO ops of the demo's debug chain: (HLO record name, framework layer).
const DEMO_HLO: [(&str, &str); 5] = [
    (
        "%broadcast.2 = bf16[128,128]{1,0} broadcast(bf16[128]{0} %b), dimensions={1}",
        "model/linear/bias",
    ),
    (
        "%dot.3 = f32[256,128]{1,0} dot(bf16[256,1024]{1,0} %x, bf16[1024,128]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
        "model/linear/matmul",
    ),
    (
        "%add.4 = f32[256,128]{1,0} add(f32[256,128]{1,0} %dot.3, bf16[128,128]{1,0} %broadcast.2)",
        "model/linear/bias_add",
    ),
    (
        "%gelu.5 = bf16[256,128]{1,0} custom-call(f32[256,128]{1,0} %add.4), custom_call_target=\"AwsNeuronGelu\"",
        "model/act/gelu",
    ),
    (
        "%copy.6 = bf16[256,128]{1,0} copy(bf16[256,128]{1,0} %gelu.5)",
        "model/output",
    ),
];

/// Source line (in [`DEMO_SOURCE_TEXT`]) of a demo instruction: by engine and NEFF opcode byte.
fn demo_line(engine: Engine, op: u8, slot: usize) -> u32 {
    match (engine, op) {
        (Engine::Pe, 0x01 | 0x02) => 21,
        (Engine::Pe, 0xA0) => 18,
        (Engine::Pe, _) => 16,
        (Engine::Act, 0x21 | 0x23) => 23,
        (Engine::Act, 0x46 | 0x47) => 22,
        (Engine::Act, 0xD4) => 19,
        (Engine::Pool, 0xD4 | 0xAB) => 24,
        (Engine::Dve, 0x42..=0x48) => 22,
        (Engine::Sp, 0xD4) => [15, 19, 20, 24][(slot / 4) % 4],
        (Engine::Sp, _) => 16,
        _ => 17,
    }
}

/// Index into [`DEMO_HLO`] of a source line.
fn demo_hlo(line: u32) -> usize {
    match line {
        15 => 0,
        22 => 2,
        23 => 3,
        24 | 25 => 4,
        _ => 1,
    }
}

/// What the demo's debug chain says about one NEFF slot (what the decoder must find in the
/// `Instruction` rows whose `compiler_pc` is `slot` ≥ 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoAttribution {
    /// BIR record id (unique within a subgraph).
    pub bir_id: u64,
    /// `bir_instruction_name`, e.g. `inst.100042`.
    pub bir_instruction_name: String,
    /// `hlo_name`, e.g. `dot.3`.
    pub hlo_name: String,
    /// `layer` (framework record name).
    pub layer: String,
    /// `nki_source_location`: `neuronscope-demo/matmul_kernel.py:<line>`.
    pub nki_source_location: String,
}

/// The attribution of NEFF slot `slot` of `engine` (opcode byte `op`) in the demo NEFF.
pub fn demo_attribution(engine: Engine, slot: usize, op: u8) -> DemoAttribution {
    let line = demo_line(engine, op, slot);
    let (hlo, layer) = DEMO_HLO[demo_hlo(line)];
    let bir_id = (engine.ntff_index() as u64 + 1) * 100_000 + slot as u64;
    DemoAttribution {
        bir_id,
        bir_instruction_name: format!("inst.{bir_id}"),
        hlo_name: crate::ntff::attribution::hlo_op_name(hlo).to_string(),
        layer: layer.to_string(),
        nki_source_location: format!("{DEMO_SOURCE}:{line}"),
    }
}

/// The `.dbg` members of the demo NEFF for `subgraphs` (engine opcode bytes per subgraph).
fn demo_debug_members(subgraphs: &[SubgraphSpec]) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let penguin_lines: std::collections::BTreeSet<u32> = (14..=25).collect();
    for (i, sg) in subgraphs.iter().enumerate() {
        for (e, ops) in &sg.engines {
            let (asm_name, backend_name) = engine_dbg_members(i, *e);
            let attrs: Vec<(usize, u8, DemoAttribution)> = ops
                .iter()
                .enumerate()
                .map(|(slot, &op)| (slot, op, demo_attribution(*e, slot, op)))
                .collect();
            let asm = DbgFileSpec {
                description: "asm debug info (neuronscope demo)".into(),
                parent: format!(
                    "debug_info_backend_{}",
                    backend_name.rsplit('_').next().unwrap_or("")
                ),
                records: attrs
                    .iter()
                    .map(|(slot, _, a)| DbgRecordSpec {
                        id: *slot as u64,
                        name: format!("slot.{slot}"),
                        parents: vec![a.bir_id],
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            };
            let backend = DbgFileSpec {
                description: "backend (BIR) debug info (neuronscope demo)".into(),
                parent: "debug_info_penguin.dbg".into(),
                files: vec![DEMO_SOURCE.into()],
                records: attrs
                    .iter()
                    .map(|(slot, op, a)| {
                        let line = demo_line(*e, *op, *slot);
                        DbgRecordSpec {
                            id: a.bir_id,
                            name: a.bir_instruction_name.clone(),
                            parents: vec![1000 + u64::from(line)],
                            kind: 1,
                            attrs: vec![
                                ("kernel_file".into(), "0".into()),
                                ("kernel_line".into(), line.to_string()),
                            ],
                        }
                    })
                    .collect(),
                ..Default::default()
            };
            out.push((asm_name, encode_dbg(&asm)));
            out.push((backend_name, encode_dbg(&backend)));
        }
    }
    let penguin = DbgFileSpec {
        description: "penguin debug info (neuronscope demo)".into(),
        parent: "debug_info_hlo.dbg".into(),
        records: penguin_lines
            .iter()
            .map(|&l| DbgRecordSpec {
                id: 1000 + u64::from(l),
                name: format!("matmul_kernel.line{l}"),
                parents: vec![demo_hlo(l) as u64 + 1],
                kind: 2,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let hlo = DbgFileSpec {
        description: "hlo debug info (neuronscope demo)".into(),
        parent: "debug_info_framework.dbg".into(),
        records: DEMO_HLO
            .iter()
            .enumerate()
            .map(|(i, (name, _))| DbgRecordSpec {
                id: i as u64 + 1,
                name: (*name).into(),
                parents: vec![i as u64 + 1],
                kind: 3,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let framework = DbgFileSpec {
        description: "framework debug info (neuronscope demo)".into(),
        records: DEMO_HLO
            .iter()
            .enumerate()
            .map(|(i, (_, layer))| DbgRecordSpec {
                id: i as u64 + 1,
                name: (*layer).into(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    out.push((
        "debug_info/debug_info_penguin.dbg".into(),
        encode_dbg(&penguin),
    ));
    out.push(("debug_info/debug_info_hlo.dbg".into(), encode_dbg(&hlo)));
    out.push((
        "debug_info/debug_info_framework.dbg".into(),
        encode_dbg(&framework),
    ));
    out
}

fn tensor(name: &str, kind: &str, shape: &[i64]) -> TensorMapEntry {
    TensorMapEntry {
        name: name.into(),
        kind: Some(kind.into()),
        is_const: Some(false),
        dtype: Some("bfloat16".into()),
        layer_name: Some(name.into()),
        tf_format: Some("NC".into()),
        sim_format: Some("NC".into()),
        tf_shape: shape.to_vec(),
        sim_shape: shape.to_vec(),
        tf_file: None,
    }
}

fn var(name: &str, kind: &str, id: u64, size: u64) -> Var {
    Var {
        name: name.into(),
        kind: kind.into(),
        var_id: Some(id),
        size: Some(size),
        ..Default::default()
    }
}

fn dma_queue(name: &str, kind: &str, owner: &str, n: u64, sems: &[u64]) -> DmaQueue {
    DmaQueue {
        name: name.into(),
        kind: kind.into(),
        owner: Some(owner.into()),
        num_queues: Some(n),
        semaphore_set: sems.to_vec(),
    }
}

/// The record mix of a large synthetic NTFF (`neuronscope synth --shape`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Shape {
    /// Shaped like the v6 samples ([`NtffSpec::v6_mix`]): per instruction 4.3 DMA packets and
    /// 1.43 semaphore updates, one busy core; most bytes are DMA records.
    #[default]
    V6Mix,
    /// Instruction-dense: the demo's matmul-like mix ([`NtffSpec::demo`]) repeated on both
    /// cores, ≈ 0.055 DMA packets and ≈ 0.011 semaphore updates per instruction; most bytes are
    /// instruction records (the worst case for rows per byte: 60 columns a row). The shape the
    /// first benchmarks used (issues 9 and 10's "synthetic").
    Dense,
}

/// NEFF and NTFF specs of a synthetic LNC=2 kernel whose NTFF pairs with the NEFF by uuid.
/// `ntff_bytes` = 0: the demo (a matmul-like mix, [`NtffSpec::demo`]); otherwise a capture of at
/// least `ntff_bytes` of `shape` (docs/formats.md "Synthetic captures"). The NEFF's engine
/// streams are the NTFF spec's own opcode bytes.
fn specs(kernel: &str, ntff_bytes: u64, shape: Shape) -> (NeffSpec, NtffSpec) {
    let neff_name = format!("{kernel}.neff");
    let v6 = ntff_bytes > 0 && shape == Shape::V6Mix;
    let ntff = if v6 {
        NtffSpec::v6_mix(&neff_name, DEMO_UUID, 1).with_min_bytes(ntff_bytes)
    } else if ntff_bytes > 0 {
        NtffSpec::demo(&neff_name, DEMO_UUID, &DEMO_SLOTS, 1).with_min_bytes(ntff_bytes)
    } else {
        NtffSpec::demo(&neff_name, DEMO_UUID, &DEMO_SLOTS, 6)
    };
    let dma_queues = if v6 {
        // The queue sets the v6 mix moves packets on (ntff::write::mix_dma_queues), two
        // completion semaphores each among the ids 8 – 19 its DMA-source updates use.
        vec![
            dma_queue("qActDynamicHW", "dynamic", "act", 16, &[8, 9]),
            dma_queue("qPoolDynamic", "dynamic", "pool", 16, &[10, 11]),
            dma_queue("qSPDynamicHW", "dynamic", "sp", 16, &[12, 13]),
            dma_queue("qPoolIO0", "in", "pool", 16, &[14, 15]),
            dma_queue("qSPIO0", "in", "sp", 16, &[16, 17]),
            dma_queue("qDVESpillReload0", "data", "dve", 16, &[18, 19]),
        ]
    } else {
        vec![
            dma_queue("qSPDynamicHW", "dynamic", "sp", 16, &[24]),
            dma_queue("qActDynamicHW", "dynamic", "act", 16, &[25]),
            dma_queue("qPoolDynamic", "dynamic", "pool", 1, &[26]),
            dma_queue("qSPSpillReload0", "data", "sp", 1, &[27]),
        ]
    };
    let subgraphs: Vec<SubgraphSpec> = ntff
        .subgraphs
        .iter()
        .map(|sg| SubgraphSpec {
            engines: Engine::ALL
                .iter()
                .map(|&e| (e, sg.neff_opcodes[e.ntff_index()].clone()))
                .collect(),
            vars: vec![
                var("input0", "input", 0, 512 * 1024),
                var("weight0", "input", 1, 256 * 1024),
                var("output0", "output", 2, 512 * 1024),
            ],
            dma_queues: dma_queues.clone(),
            tensors: vec![
                tensor("input0", "input", &[256, 1024]),
                tensor("weight0", "input", &[1024, 128]),
                tensor("output0", "output", &[256, 1024]),
            ],
        })
        .collect();
    let neff = NeffSpec {
        name: neff_name.clone(),
        uuid: DEMO_UUID,
        extra_members: demo_debug_members(&subgraphs),
        subgraphs,
        ..NeffSpec::default()
    };
    (neff, ntff)
}

fn capture(kernel: &str, ntff_bytes: u64) -> Result<Vec<(String, Vec<u8>)>> {
    let (neff, ntff) = specs(kernel, ntff_bytes, Shape::V6Mix);
    let mut ntff_bytes_out = Vec::new();
    write_ntff(&ntff, &mut ntff_bytes_out)
        .map_err(|e| Error::Other(format!("synthetic NTFF: {e}")))?;
    Ok(vec![
        (format!("{DEMO_DIR}/{kernel}.neff"), write_neff(&neff)),
        (format!("{DEMO_DIR}/{kernel}_exec_2.ntff"), ntff_bytes_out),
        (
            DEMO_SOURCE.to_string(),
            DEMO_SOURCE_TEXT.as_bytes().to_vec(),
        ),
        (
            format!("{DEMO_DIR}/memory_snapshot_rank0.pickle"),
            crate::memsnap::write::demo_snapshot(DEMO_SOURCE, DEMO_SNAPSHOT_T0_US).0,
        ),
    ])
}

/// The built-in demo capture (a few thousand instructions on two physical cores).
pub fn demo_capture() -> Result<Vec<(String, Vec<u8>)>> {
    capture("matmul_demo", 0)
}

/// A capture whose NTFF is at least `ntff_bytes` long, shaped like the v6 samples (benchmarks,
/// `crate/tests/synth_mix.rs`). Held in memory: use [`write_large_capture`] for files larger
/// than RAM should allow.
pub fn large_capture(ntff_bytes: u64) -> Result<Vec<(String, Vec<u8>)>> {
    capture("matmul_large", ntff_bytes)
}

/// Writes a capture whose NTFF is at least `ntff_bytes` long and of `shape` into `dir`,
/// streaming the NTFF to disk (memory independent of `ntff_bytes`; 10 GB files are fine).
/// Returns the written paths.
#[cfg(not(target_arch = "wasm32"))]
pub fn write_large_capture(
    dir: &std::path::Path,
    ntff_bytes: u64,
    shape: Shape,
) -> Result<Vec<std::path::PathBuf>> {
    let (neff, ntff) = specs("matmul_large", ntff_bytes, shape);
    let d = dir.join(DEMO_DIR);
    std::fs::create_dir_all(&d)?;
    let neff_path = d.join("matmul_large.neff");
    std::fs::write(&neff_path, write_neff(&neff))?;
    let ntff_path = d.join("matmul_large_exec_2.ntff");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&ntff_path)?);
    write_ntff(&ntff, &mut f).map_err(|e| Error::Other(format!("synthetic NTFF: {e}")))?;
    std::io::Write::flush(&mut f)?;
    Ok(vec![neff_path, ntff_path])
}

/// Writes a synthetic System capture into `dir` (see [`crate::system::write`]): `trace_info.pb`,
/// `ntrace.pb` and a Kineto `trace.json` of at least `kineto_bytes`, streamed to disk. Returns
/// the written paths.
#[cfg(not(target_arch = "wasm32"))]
pub fn write_system_capture(
    dir: &std::path::Path,
    kineto_bytes: u64,
) -> Result<Vec<std::path::PathBuf>> {
    let spec = crate::system::write::SystemSpec::default();
    let d = dir.join(spec.dir());
    std::fs::create_dir_all(&d)?;
    let (nt, n) = spec.ntrace();
    let info = d.join("trace_info.pb");
    std::fs::write(&info, spec.trace_info(n))?;
    let ntrace = d.join("ntrace.pb");
    std::fs::write(&ntrace, nt)?;
    let tj = d.join("trace.json");
    let mut f = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&tj)?);
    crate::system::write::write_kineto(&spec, kineto_bytes, &mut f)?;
    std::io::Write::flush(&mut f)?;
    Ok(vec![info, ntrace, tj])
}

/// Writes a synthetic System capture into `dir` whose `ntrace.pb` is at least `ntrace_bytes`
/// ([`crate::system::write::SystemSpec::write_ntrace_mix`], the sample's shape), streamed to
/// disk, with its `trace_info.pb` (written after, when the record count is known). Returns the
/// written paths.
#[cfg(not(target_arch = "wasm32"))]
pub fn write_ntrace_capture(
    dir: &std::path::Path,
    ntrace_bytes: u64,
) -> Result<Vec<std::path::PathBuf>> {
    let mut spec = crate::system::write::SystemSpec::default();
    let d = dir.join(spec.dir());
    std::fs::create_dir_all(&d)?;
    let ntrace = d.join("ntrace.pb");
    let mut f = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&ntrace)?);
    let st = spec.write_ntrace_mix(ntrace_bytes, &mut f)?;
    std::io::Write::flush(&mut f)?;
    spec.executions = st.steps;
    let info = d.join("trace_info.pb");
    std::fs::write(&info, spec.trace_info(st.records))?;
    Ok(vec![info, ntrace])
}
