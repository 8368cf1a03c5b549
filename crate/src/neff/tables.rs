//! NEFF-derived Explorer tables (explorer-schema.md §5.6, §5.7): `NeffHeader`, `TensorInfo`,
//! `DmaQueuesInfo`. Values follow the profiler's JSON export of the same NEFF where one exists
//! (`neff_header`, `neff_node` in the allenkchau exports; see docs/formats.md "NEFF").

use std::collections::BTreeSet;

use crate::error::Result;
use crate::tables::{explorer, TableBuilder, TableSink};

crate::cols!(mod header = crate::tables::explorer::NEFF_HEADER {
    NAME: Str = "network_name",
    UUID: Str = "uuid",
    HASH: Str = "hash",
    FEATURES: Str = "enabled_features",
    HEADER_SIZE: I64 = "header_size",
    DATA_SIZE: I64 = "data_size",
    MAJOR: I64 = "major_version",
    MINOR: I64 = "minor_version",
    PACKAGE: Str = "package_version",
    BUILD: Str = "build_version",
    LNC_COUNT: I64 = "logical_neuroncore_count",
    PCORES_PER_LNC: I64 = "pcore_count_per_lnc",
});
crate::cols!(mod tensor = crate::tables::explorer::TENSOR_INFO {
    NAME: Str = "variable_name",
    TYPE: Str = "type",
    FORMAT: Str = "format",
    SHAPE: Str = "shape",
    SIZE: I64 = "size",
    NODE: I64 = "node",
    PCORE: I64 = "pcore_idx",
});
crate::cols!(mod queue = crate::tables::explorer::DMA_QUEUES_INFO {
    NAME: Str = "name",
    TYPE: Str = "type",
    PCORE: I64 = "pcore_idx",
    NEFF_NAME: Str = "nscope_neff_queue_name",
    OWNER: Str = "nscope_owner",
    NUM_QUEUES: I64 = "nscope_num_queues",
    SEMAPHORES: ListI64 = "nscope_semaphore_set",
});

use super::{Neff, TensorMapEntry, Var};

/// Writes `NeffHeader`, `TensorInfo` and `DmaQueuesInfo` for `neff` to `sink`.
///
/// `DmaQueuesInfo` here carries only what the NEFF knows (name, type, pcore_idx); when an NTFF
/// is decoded too, its queue table is the richer source — callers may then use
/// [`write_neff_header`] and [`write_tensor_info`] alone. Errors: only from the sink.
pub fn write_tables(neff: &Neff, sink: &mut dyn TableSink) -> Result<()> {
    write_neff_header(neff, sink)?;
    write_tensor_info(neff, sink)?;
    write_dma_queues_info(neff, sink)?;
    Ok(())
}

/// One `NeffHeader` row (explorer-schema.md §5.7) from the 1024-byte header (neff.md §2.1):
/// `uuid` and `hash` as 32 lowercase hex digits of the stored bytes (the hash as stored, i.e.
/// word-swapped for compilers 2.18 – 2.23, neff.md §2.2), `package_version` = `pkg_version` as
/// text, `logical_neuroncore_count` = `num_tpb`, `pcore_count_per_lnc` = `lnc_size` (the export's
/// `number_of_logical_neuroncores` / `number_of_neuroncores_per_lnc`). `cc_participant_count`
/// and `neuroncore_count` have no known source and stay null.
pub fn write_neff_header(neff: &Neff, sink: &mut dyn TableSink) -> Result<()> {
    let h = &neff.header;
    let mut b = TableBuilder::new(&explorer::NEFF_HEADER);
    b.set(header::NAME, h.name.as_str());
    b.set(header::UUID, h.uuid_hex().as_str());
    b.set(header::HASH, h.hash_hex().as_str());
    b.set(header::FEATURES, h.enabled_features().as_str());
    b.set(header::HEADER_SIZE, i64::try_from(h.header_size).ok());
    b.set(header::DATA_SIZE, i64::try_from(h.data_size).ok());
    b.set(header::MAJOR, i64::try_from(h.major_version).ok());
    b.set(header::MINOR, i64::try_from(h.minor_version).ok());
    b.set(header::PACKAGE, h.pkg_version.to_string().as_str());
    b.set(header::BUILD, h.build_version.as_str());
    b.set(header::LNC_COUNT, i64::from(h.num_tpb));
    b.set(header::PCORES_PER_LNC, i64::from(h.lnc_size));
    b.end_row_into(sink)?;
    b.finish_into(sink)?;
    Ok(())
}

/// Explorer's `TensorInfo.type` for a `def.json` var type: input → IN, output → OUT,
/// file → WEIGHT; other kinds (virtual, state-buffer, dge-table, …) are not listed by the export.
pub fn tensor_type(var_kind: &str) -> Option<&'static str> {
    match var_kind {
        "input" => Some("IN"),
        "output" => Some("OUT"),
        "file" => Some("WEIGHT"),
        _ => None,
    }
}

/// A shape as the JSON export prints it: `[128 512]`.
pub fn shape_text(dims: &[i64]) -> String {
    let parts: Vec<String> = dims.iter().map(i64::to_string).collect();
    format!("[{}]", parts.join(" "))
}

/// The `tensor_map.json` entry describing `var` (neff.md §6.6): inputs/outputs by name, constants
/// by `var.file_name` = `tf_file`.
pub fn tensor_map_entry<'a>(
    var: &Var,
    tensors: &'a [TensorMapEntry],
) -> Option<&'a TensorMapEntry> {
    if var.kind == "file" {
        let f = var.file_name.as_deref()?;
        tensors.iter().find(|t| t.tf_file.as_deref() == Some(f))
    } else {
        tensors.iter().find(|t| t.name == var.name)
    }
}

/// `TensorInfo` rows (explorer-schema.md §5.6): one per input, output and weight variable of the
/// NEFF, as the JSON export's `neff_node` tensor rows: grouped IN, OUT, WEIGHT, by name within a
/// group; a name seen in several subgraphs is listed once, for the first subgraph (pcore order).
/// `format` = `tf_format`, `shape` = `tf_shape` as `[d0 d1 …]`, `size` = `var.size` (bytes),
/// `node` = the `neff.json` node index of the subgraph's kelf, `pcore_idx` = subgraph position.
/// The SBUF-load statistics need the device trace and stay null.
pub fn write_tensor_info(neff: &Neff, sink: &mut dyn TableSink) -> Result<()> {
    let mut rows = Vec::new();
    let mut seen = BTreeSet::new();
    for sg in &neff.subgraphs {
        for v in &sg.vars {
            let Some(t) = tensor_type(&v.kind) else {
                continue;
            };
            if !seen.insert(v.name.as_str()) {
                continue;
            }
            let rank = ["IN", "OUT", "WEIGHT"].iter().position(|x| *x == t);
            rows.push((rank, v, t, tensor_map_entry(v, &sg.tensors), sg));
        }
    }
    rows.sort_by(|a, b| (a.0, &a.1.name).cmp(&(b.0, &b.1.name)));
    let mut b = TableBuilder::new(&explorer::TENSOR_INFO);
    for (_, v, t, tm, sg) in rows {
        b.set(tensor::NAME, v.name.as_str());
        b.set(tensor::TYPE, t);
        b.set(tensor::FORMAT, tm.and_then(|m| m.tf_format.as_deref()));
        b.set(
            tensor::SHAPE,
            tm.map(|m| shape_text(&m.tf_shape)).as_deref(),
        );
        b.set(tensor::SIZE, v.size.and_then(|s| i64::try_from(s).ok()));
        b.set(tensor::NODE, sg.node.and_then(|n| i64::try_from(n).ok()));
        b.set(tensor::PCORE, i64::from(sg.pcore_idx));
        b.end_row_into(sink)?;
    }
    b.finish_into(sink)?;
    Ok(())
}

/// `DmaQueuesInfo` rows from `def.json` `dma_queue` (one per queue set and subgraph, key order):
/// `name` renamed as Explorer shows it ([`super::explorer_queue_name`]), `type` = the NEFF's queue
/// type (`in`, `data`, `dynamic`; Explorer's own value, e.g. `weights`, comes from the runtime's
/// queue table in the NTFF), `pcore_idx`. `idx`, `engine_idx`, `axi_port`, `dram_channel` are
/// runtime assignments (NTFF, ntff.md §3.3.2) and stay null. Extras: `nscope_neff_queue_name`,
/// `nscope_owner`, `nscope_num_queues`, `nscope_semaphore_set`.
pub fn write_dma_queues_info(neff: &Neff, sink: &mut dyn TableSink) -> Result<()> {
    let mut b = TableBuilder::new(&explorer::DMA_QUEUES_INFO);
    for sg in &neff.subgraphs {
        for q in &sg.dma_queues {
            b.set(queue::NAME, q.explorer_name().as_str());
            b.set(queue::TYPE, q.kind.as_str());
            b.set(queue::PCORE, i64::from(sg.pcore_idx));
            b.set(queue::NEFF_NAME, q.name.as_str());
            b.set(queue::OWNER, q.owner.as_deref());
            b.set(
                queue::NUM_QUEUES,
                q.num_queues.and_then(|n| i64::try_from(n).ok()),
            );
            let s: Vec<i64> = q
                .semaphore_set
                .iter()
                .filter_map(|&x| i64::try_from(x).ok())
                .collect();
            b.set(queue::SEMAPHORES, s.as_slice());
            b.end_row_into(sink)?;
        }
    }
    b.finish_into(sink)?;
    Ok(())
}
