//! Synthetic captures written by our own NEFF and NTFF writers ([`crate::neff::write`],
//! [`crate::ntff::write`]): the app's built-in demo, benchmark inputs and fuzz seeds.
//!
//! A capture is returned as `(relative path, bytes)` pairs laid out like a `neuron-explorer
//! capture -s` run: `<dir>/<kernel>.neff` next to `<dir>/<kernel>_exec_2.ntff` (pairing.md §2).

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::neff::write::{write_neff, NeffSpec, SubgraphSpec};
use crate::neff::{DmaQueue, TensorMapEntry, Var};
use crate::ntff::write::{default_neff_opcodes, write_ntff, NtffSpec};

/// Folder name of the demo capture.
pub const DEMO_DIR: &str = "neuronscope-demo";

/// Instruction slots per engine (PE, ACT, POOL, DVE, SP) of each of the two physical cores.
const DEMO_SLOTS: [[usize; 5]; 2] = [[180, 96, 48, 120, 40], [150, 80, 40, 100, 32]];

/// The uuid of the synthetic NEFF; its first byte is non-zero so the NTFF's C-string copy holds
/// at least one byte (pairing.md §4.2).
const DEMO_UUID: [u8; 16] = *b"nscope-demo-v1\x01\x02";

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

/// NEFF and NTFF specs of a synthetic LNC=2 matmul-like kernel whose NTFF pairs with the NEFF by
/// uuid; `ntff_bytes` scales the NTFF (0 = demo size).
fn specs(kernel: &str, ntff_bytes: u64) -> (NeffSpec, NtffSpec) {
    let neff_name = format!("{kernel}.neff");
    let subgraphs = DEMO_SLOTS
        .iter()
        .map(|slots| SubgraphSpec {
            engines: Engine::ALL
                .iter()
                .map(|&e| (e, default_neff_opcodes(e, slots[e.ntff_index()])))
                .collect(),
            vars: vec![
                var("input0", "input", 0, 512 * 1024),
                var("weight0", "input", 1, 256 * 1024),
                var("output0", "output", 2, 512 * 1024),
            ],
            dma_queues: vec![
                DmaQueue {
                    name: "qSPDynamicHW".into(),
                    kind: "dynamic".into(),
                    owner: Some("sp".into()),
                    num_queues: Some(16),
                    semaphore_set: vec![24],
                },
                DmaQueue {
                    name: "qActDynamicHW".into(),
                    kind: "dynamic".into(),
                    owner: Some("act".into()),
                    num_queues: Some(16),
                    semaphore_set: vec![25],
                },
                DmaQueue {
                    name: "qPoolDynamic".into(),
                    kind: "dynamic".into(),
                    owner: Some("pool".into()),
                    num_queues: Some(1),
                    semaphore_set: vec![26],
                },
                DmaQueue {
                    name: "qSPSpillReload0".into(),
                    kind: "data".into(),
                    owner: Some("sp".into()),
                    num_queues: Some(1),
                    semaphore_set: vec![27],
                },
            ],
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
        subgraphs,
        ..NeffSpec::default()
    };
    let mut ntff = NtffSpec::demo(&neff_name, DEMO_UUID, &DEMO_SLOTS, 6);
    if ntff_bytes > 0 {
        ntff = ntff.with_min_bytes(ntff_bytes);
    }
    (neff, ntff)
}

fn capture(kernel: &str, ntff_bytes: u64) -> Result<Vec<(String, Vec<u8>)>> {
    let (neff, ntff) = specs(kernel, ntff_bytes);
    let mut ntff_bytes_out = Vec::new();
    write_ntff(&ntff, &mut ntff_bytes_out)
        .map_err(|e| Error::Other(format!("synthetic NTFF: {e}")))?;
    Ok(vec![
        (format!("{DEMO_DIR}/{kernel}.neff"), write_neff(&neff)),
        (format!("{DEMO_DIR}/{kernel}_exec_2.ntff"), ntff_bytes_out),
    ])
}

/// The built-in demo capture (a few thousand instructions on two physical cores).
pub fn demo_capture() -> Result<Vec<(String, Vec<u8>)>> {
    capture("matmul_demo", 0)
}

/// A capture whose NTFF is at least `ntff_bytes` long (benchmarks). Held in memory: use
/// [`write_large_capture`] for files larger than RAM should allow.
pub fn large_capture(ntff_bytes: u64) -> Result<Vec<(String, Vec<u8>)>> {
    capture("matmul_large", ntff_bytes)
}

/// Writes a capture whose NTFF is at least `ntff_bytes` long into `dir`, streaming the NTFF to
/// disk. Returns the written paths.
#[cfg(not(target_arch = "wasm32"))]
pub fn write_large_capture(
    dir: &std::path::Path,
    ntff_bytes: u64,
) -> Result<Vec<std::path::PathBuf>> {
    let (neff, ntff) = specs("matmul_large", ntff_bytes);
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
