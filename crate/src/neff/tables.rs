//! NEFF-derived Explorer tables (explorer-schema.md §5.6, §5.7): `NeffHeader`, `TensorInfo`,
//! `DmaQueuesInfo`. Values follow the profiler's JSON export of the same NEFF where one exists
//! (`neff_header`, `neff_node` in the allenkchau exports; see docs/formats.md "NEFF").

use std::collections::BTreeSet;

use crate::error::Result;
use crate::tables::{explorer, Emitter, TableSink};

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
    let def = &explorer::NEFF_HEADER;
    let h = &neff.header;
    let mut e = Emitter::new(def, sink);
    let c = |n| def.col(n);
    e.b.str(c("network_name"), Some(&h.name));
    e.b.str(c("uuid"), Some(&h.uuid_hex()));
    e.b.str(c("hash"), Some(&h.hash_hex()));
    e.b.str(c("enabled_features"), Some(&h.enabled_features()));
    e.b.i64(c("header_size"), i64::try_from(h.header_size).ok());
    e.b.i64(c("data_size"), i64::try_from(h.data_size).ok());
    e.b.i64(c("major_version"), i64::try_from(h.major_version).ok());
    e.b.i64(c("minor_version"), i64::try_from(h.minor_version).ok());
    e.b.str(c("package_version"), Some(&h.pkg_version.to_string()));
    e.b.str(c("build_version"), Some(&h.build_version));
    e.b.i64(c("logical_neuroncore_count"), Some(i64::from(h.num_tpb)));
    e.b.i64(c("pcore_count_per_lnc"), Some(i64::from(h.lnc_size)));
    e.end_row()?;
    e.finish()?;
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
    let def = &explorer::TENSOR_INFO;
    let c = |n| def.col(n);
    let (vn, ty, fmt, shp, sz, node, pc) = (
        c("variable_name"),
        c("type"),
        c("format"),
        c("shape"),
        c("size"),
        c("node"),
        c("pcore_idx"),
    );
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
    let mut e = Emitter::new(def, sink);
    for (_, v, t, tm, sg) in rows {
        e.b.str(vn, Some(&v.name));
        e.b.str(ty, Some(t));
        e.b.str(fmt, tm.and_then(|m| m.tf_format.as_deref()));
        e.b.str(shp, tm.map(|m| shape_text(&m.tf_shape)).as_deref());
        e.b.i64(sz, v.size.and_then(|s| i64::try_from(s).ok()));
        e.b.i64(node, sg.node.and_then(|n| i64::try_from(n).ok()));
        e.b.i64(pc, Some(i64::from(sg.pcore_idx)));
        e.end_row()?;
    }
    e.finish()?;
    Ok(())
}

/// `DmaQueuesInfo` rows from `def.json` `dma_queue` (one per queue set and subgraph, key order):
/// `name` renamed as Explorer shows it ([`super::explorer_queue_name`]), `type` = the NEFF's queue
/// type (`in`, `data`, `dynamic`; Explorer's own value, e.g. `weights`, comes from the runtime's
/// queue table in the NTFF), `pcore_idx`. `idx`, `engine_idx`, `axi_port`, `dram_channel` are
/// runtime assignments (NTFF, ntff.md §3.3.2) and stay null. Extras: `nscope_neff_queue_name`,
/// `nscope_owner`, `nscope_num_queues`, `nscope_semaphore_set`.
pub fn write_dma_queues_info(neff: &Neff, sink: &mut dyn TableSink) -> Result<()> {
    let def = &explorer::DMA_QUEUES_INFO;
    let c = |n| def.col(n);
    let (name, ty, pc, raw, owner, nq, sems) = (
        c("name"),
        c("type"),
        c("pcore_idx"),
        c("nscope_neff_queue_name"),
        c("nscope_owner"),
        c("nscope_num_queues"),
        c("nscope_semaphore_set"),
    );
    let mut e = Emitter::new(def, sink);
    for sg in &neff.subgraphs {
        for q in &sg.dma_queues {
            e.b.str(name, Some(&q.explorer_name()));
            e.b.str(ty, Some(&q.kind));
            e.b.i64(pc, Some(i64::from(sg.pcore_idx)));
            e.b.str(raw, Some(&q.name));
            e.b.str(owner, q.owner.as_deref());
            e.b.i64(nq, q.num_queues.and_then(|n| i64::try_from(n).ok()));
            let s: Vec<i64> = q
                .semaphore_set
                .iter()
                .filter_map(|&x| i64::try_from(x).ok())
                .collect();
            e.b.list_i64(sems, &s);
            e.end_row()?;
        }
    }
    e.finish()?;
    Ok(())
}
