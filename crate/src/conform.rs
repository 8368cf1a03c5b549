//! Field-by-field conformance of neuronscope's tables against an AWS `neuron-profile view
//! --output-format json` export of the same NTFF (issue 3; spec ntff.md §9 – §10).
//!
//! [`conform`] takes the tables one device profile produced (any [`TableSource`]: in-memory
//! [`Tables`], or batches read back from Parquet in the page) and the export's bytes, and returns a
//! [`ConformReport`]: per export section the Explorer table it maps to, how rows were aligned,
//! row counts on both sides, and per field the column, the tolerance, equal / compared counts and
//! the first [`FIRST_DIFFS`] differing rows.
//!
//! The mapping is data ([`SECTIONS`]), taken from ntff.md §9 and the hand-written golden tests
//! (`crate/tests/ntff_golden.rs`, `ntff_dma_golden.rs`, `end_to_end.rs`,
//! `attribution_golden.rs`, `derived_golden.rs` for `ActiveTime`, `PendingDma`, `DmaUsage`,
//! `HbmUsageSummaryByType`, `Warning`). It names Explorer schema 7.4.0 tables and columns only, so
//! a table another part of neuronscope starts writing (e.g. `SbufUsage`) is compared as soon as it
//! exists; until then its section is reported `not_produced`, never skipped. Export fields without a mapping are listed `not_produced` too; `terminology`,
//! `summary_groups` and `summary_group_order` are `presentation` (not compared).
//!
//! Memory: the export is parsed whole into a `serde_json::Value` (the sample exports are
//! 0.2 – 4 MB; a JSON export is a legacy format that AWS ends with SDK 2.33). Exports larger than
//! [`MAX_EXPORT_BYTES`] are refused with an error rather than parsed. Each compared table is
//! concatenated in memory once.
//!
//! Why rates are below 100 % today: see docs/formats.md "Conformance against the JSON exports"
//! and `crate/tests/conform.rs`.

use std::collections::{BTreeMap, BTreeSet};

use arrow_array::{
    Array, BooleanArray, Float32Array, Float64Array, Int32Array, Int64Array, ListArray, RecordBatch,
};
use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::inventory::Inventory;
use crate::tables::Tables;

/// Largest export accepted (bytes). The whole export is held as a `serde_json::Value` (about 5 – 10×
/// its size); refusing larger files keeps a browser tab alive.
pub const MAX_EXPORT_BYTES: usize = 512 << 20;

/// Differing rows kept per field.
pub const FIRST_DIFFS: usize = 5;

/// Where [`conform`] reads our tables from: the whole table `name` as one batch, or `None` when
/// neuronscope did not write it.
pub trait TableSource {
    /// All rows of `name` in one batch.
    fn table(&self, name: &str) -> Option<RecordBatch>;
}

impl TableSource for Tables {
    fn table(&self, name: &str) -> Option<RecordBatch> {
        self.concat(name)
    }
}

impl TableSource for BTreeMap<String, RecordBatch> {
    fn table(&self, name: &str) -> Option<RecordBatch> {
        self.get(name).cloned()
    }
}

/// Result of one comparison (serialised to JSON by the CLI and the page).
#[derive(Debug, Clone, Serialize)]
pub struct ConformReport {
    /// `profile_info.profiler_version` of the export.
    pub profiler_version: Option<String>,
    /// `profile_info.ntff_filename` of the export.
    pub ntff_filename: Option<String>,
    /// One entry per export section (and per split of a section, e.g. `dma[aggregated=yes]`),
    /// in [`SECTIONS`] order, then sections the mapping does not know.
    pub sections: Vec<SectionReport>,
}

/// How a section was handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SectionStatus {
    /// Rows aligned and fields compared.
    Compared,
    /// neuronscope does not write the table (yet), or the section has no Explorer table.
    NotProduced,
    /// Presentation data of the export (labels, grouping); nothing to compare.
    Presentation,
    /// The section is absent from this export (or has no rows of this split).
    NotInExport,
}

/// One export section.
#[derive(Debug, Clone, Serialize)]
pub struct SectionReport {
    /// Export section, with the row filter of a split: `dma[aggregated=yes]`.
    pub section: String,
    /// Our Explorer table, if one corresponds.
    pub table: Option<String>,
    /// What was done.
    pub status: SectionStatus,
    /// Export rows (after the split filter).
    pub export_rows: usize,
    /// Rows of our table.
    pub our_rows: usize,
    /// Rows paired by the alignment.
    pub matched_rows: usize,
    /// How rows were paired.
    pub alignment: String,
    /// Why a section or its rates are what they are.
    pub note: String,
    /// Per export field.
    pub fields: Vec<FieldReport>,
}

/// How a field was handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldStatus {
    /// Compared on every matched row.
    Compared,
    /// Used to align rows (equal by construction on matched rows).
    Key,
    /// No column of ours holds it (yet).
    NotProduced,
    /// Tool-generated (ids, hashes): no value can be rebuilt.
    NotComparable,
}

/// One export field.
#[derive(Debug, Clone, Serialize)]
pub struct FieldReport {
    /// Export field name.
    pub field: String,
    /// Our column.
    pub column: Option<String>,
    /// What was done.
    pub status: FieldStatus,
    /// Matched rows compared.
    pub compared: u64,
    /// Of those, equal within the tolerance.
    pub equal: u64,
    /// equal / compared (0 when nothing was compared).
    pub rate: f64,
    /// Tolerance, e.g. `exact`, `±1 ns`, `relative 1e-6`, `float32`.
    pub tolerance: String,
    /// First differing rows.
    pub diffs: Vec<Diff>,
    /// Reason for a status or a known gap.
    pub note: String,
}

/// One differing value.
#[derive(Debug, Clone, Serialize)]
pub struct Diff {
    /// Row index in the export section (before the split filter).
    pub row: usize,
    /// Export value as JSON text.
    pub export: String,
    /// Our value as text (`null` when null or the row has no counterpart).
    pub ours: String,
}

/// Equality rule of a field.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tol {
    /// Numbers equal (numeric text parsed), else texts equal; null equals null or "".
    Exact,
    /// Integers within ± n (ns).
    Ns(i64),
    /// |a − b| ≤ eps × max(|a|, |b|).
    Rel(f64),
    /// Equal after rounding the export value to float32 (exports print float32s shortest).
    F32,
    /// Text, case-insensitive.
    TextCi,
    /// Text, with "", "Unknown" and null all meaning "no value" (export convention for unknowns,
    /// attribution_golden.rs).
    TextOrNull,
    /// Integers, export 0 equal to our null (export writes 0 for "no id").
    ZeroOrNull,
    /// By our column's type: integers exact, floats relative 1e-6, texts exact.
    Auto,
}

impl Tol {
    fn label(self) -> String {
        match self {
            Tol::Exact => "exact".into(),
            Tol::Ns(n) => format!("±{n} ns"),
            Tol::Rel(e) => format!("relative {e:e}"),
            Tol::F32 => "float32".into(),
            Tol::TextCi => "text, case-insensitive".into(),
            Tol::TextOrNull => "text, \"\"/Unknown = null".into(),
            Tol::ZeroOrNull => "exact, 0 = null".into(),
            Tol::Auto => "exact (float: relative 1e-6)".into(),
        }
    }
}

/// Export-side key of a row.
#[derive(Debug, Clone, Copy)]
pub enum ExpKey {
    /// A field, normalised (numbers as integers, text lower-cased).
    F(&'static str),
    /// `subgraph`, else `fully_qualified_subgraph` without "/", else `sg00` (single-core v5
    /// sections have none; ntff_golden.rs `export_subgraph`).
    Subgraph,
    /// `sg_name` if non-empty, else `sg00` (`neff_node`).
    SgName,
    /// Semaphore number of `id`: `S[8] (qX)` → 8, `2` → 2 (ntff_golden.rs `sem_number`).
    SemIndex,
}

/// Our-side key of a row.
#[derive(Debug, Clone, Copy)]
pub enum OurKey {
    /// A column, normalised like [`ExpKey::F`].
    C(&'static str),
    /// `nscope_subgraph`, else `sg{pcore_idx:02}`, else `sg00`.
    Subgraph,
}

/// How rows of a section are paired with rows of our table.
#[derive(Debug, Clone, Copy)]
pub enum Align {
    /// Row i with row i (one-row sections: summary, metadata, neff_header).
    Single,
    /// Rows grouped by key; inside a group sorted by the order fields and paired in that order.
    Keyed {
        /// Export key parts.
        export: &'static [ExpKey],
        /// Our key parts, same length.
        ours: &'static [OurKey],
        /// Export fields to sort by (numeric).
        export_order: &'static [&'static str],
        /// Our columns to sort by.
        our_order: &'static [&'static str],
    },
}

/// One export field → one of our columns.
#[derive(Debug, Clone, Copy)]
pub struct FieldMap {
    /// Export field.
    pub export: &'static str,
    /// Our column; `None` = not comparable (tool-generated).
    pub ours: Option<&'static str>,
    /// Equality rule.
    pub tol: Tol,
    /// Evidence or known gap.
    pub note: &'static str,
}

/// What kind of section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Compare against `table`.
    Table(&'static str),
    /// No Explorer table holds this section.
    NoTable,
    /// Labels and grouping for display.
    Presentation,
}

/// One export section (or a split of one) and its mapping.
#[derive(Debug, Clone, Copy)]
pub struct SectionMap {
    /// Export key.
    pub section: &'static str,
    /// Only rows whose field equals the value (e.g. `aggregated` = `yes`).
    pub filter: Option<(&'static str, &'static str)>,
    /// Target.
    pub kind: Kind,
    /// Row pairing.
    pub align: Align,
    /// Explicit field mappings (a field may appear twice with two tolerances).
    pub fields: &'static [FieldMap],
    /// Fields not listed are compared with the same-named column when it exists
    /// ([`Tol::Auto`]); otherwise they are `not_produced`.
    pub same_names: bool,
    /// Evidence / caveats.
    pub note: &'static str,
}

const fn f(export: &'static str, ours: &'static str, tol: Tol) -> FieldMap {
    FieldMap {
        export,
        ours: Some(ours),
        tol,
        note: "",
    }
}

const fn fnote(export: &'static str, ours: &'static str, tol: Tol, note: &'static str) -> FieldMap {
    FieldMap {
        export,
        ours: Some(ours),
        tol,
        note,
    }
}

const fn tool(export: &'static str, note: &'static str) -> FieldMap {
    FieldMap {
        export,
        ours: None,
        tol: Tol::Exact,
        note,
    }
}

const NO_KEY: Align = Align::Single;

/// Export section → Explorer table, field → column (ntff.md §9 table; golden tests named per
/// entry). Order = report order.
pub static SECTIONS: &[SectionMap] = &[
    // ntff_golden.rs compare_instructions: grouped by (subgraph, engine, pc), zipped in time order.
    SectionMap {
        section: "instruction",
        filter: None,
        kind: Kind::Table("Instruction"),
        align: Align::Keyed {
            export: &[ExpKey::Subgraph, ExpKey::F("subgroup"), ExpKey::F("pc")],
            ours: &[OurKey::Subgraph, OurKey::C("engine"), OurKey::C("pc")],
            export_order: &["timestamp", "duration"],
            our_order: &["start_ts", "duration_ns"],
        },
        fields: &[
            f("timestamp", "start_ts", Tol::Exact),
            f("duration", "duration_ns", Tol::Exact),
            f("opcode", "opcode", Tol::Exact),
            fnote("label", "timeline_track", Tol::Exact, "TensorMatrix for MATMUL (ntff.md §10 step 4)"),
            f("crc_in", "crc_in", Tol::Exact),
            f("crc_out", "crc_out", Tol::Exact),
            fnote("evt_wait_time", "evt_wait_time_ns", Tol::Exact, "cycles / 1.2 in single precision (ntff.md §4.1); v6 6 rows 1 ns off (§11 q10)"),
            fnote("bir_instruction_name", "bir_instruction_name", Tol::TextOrNull, "needs the NEFF debug info (attribution_golden.rs)"),
            f("bir_id", "bir_id", Tol::TextOrNull),
            f("penguin_id", "penguin_id", Tol::TextOrNull),
            f("hlo_name", "hlo_name", Tol::TextOrNull),
            f("layer", "layer", Tol::TextOrNull),
            f("raw_bir_id", "raw_bir_id", Tol::ZeroOrNull),
            f("raw_penguin_id", "raw_penguin_id", Tol::ZeroOrNull),
            f("raw_hlo_id", "raw_hlo_id", Tol::ZeroOrNull),
            f("raw_framework_id", "raw_framework_id", Tol::ZeroOrNull),
            f("compiler_pc", "compiler_pc", Tol::Exact),
            f("compiler_opcode", "compiler_opcode", Tol::TextOrNull),
            f("compiler_operands", "compiler_operands", Tol::TextOrNull),
            fnote("operands", "operands", Tol::TextOrNull, "runtime operand text: format not decoded (ntff.md §11 q11)"),
            f("hlo_attrs", "hlo_attrs", Tol::TextOrNull),
            f("activation_fn", "scalar_activation_fn", Tol::TextOrNull),
            f("instruction_type", "tensor_instruction_type", Tol::TextOrNull),
            fnote("elements", "tensor_elements", Tol::Exact, "mapping inferred"),
            f("hbm_read_bytes", "hbm_read_bytes", Tol::Exact),
            f("hbm_write_bytes", "hbm_write_bytes", Tol::Exact),
            f("sbuf_read_bytes", "sbuf_read_bytes", Tol::Exact),
            f("sbuf_write_bytes", "sbuf_write_bytes", Tol::Exact),
            f("psum_read_bytes", "psum_read_bytes", Tol::Exact),
            f("psum_write_bytes", "psum_write_bytes", Tol::Exact),
            f("psum_read_sbuf_write_bytes", "psum_read_sbuf_write_bytes", Tol::Exact),
            f("spill_save_bytes", "spill_save_bytes", Tol::Exact),
            f("spill_reload_bytes", "spill_reload_bytes", Tol::Exact),
            f("weight_queue_bytes", "weight_queue_bytes", Tol::Exact),
            fnote("trigger", "dma_trigger_start_ts", Tol::Exact, "mapping inferred"),
            tool("id", "tool-generated id (ntff.md §9)"),
        ],
        same_names: false,
        note: "rows grouped by (subgraph, engine, pc) and paired in (timestamp, duration) order",
    },
    // ntff_golden.rs compare_semaphores: grouped by (subgraph, semaphore number).
    SectionMap {
        section: "semaphore_update",
        filter: None,
        kind: Kind::Table("SemaphoreUpdate"),
        align: Align::Keyed {
            export: &[ExpKey::Subgraph, ExpKey::SemIndex],
            ours: &[OurKey::Subgraph, OurKey::C("nscope_sem_index")],
            export_order: &["timestamp", "value"],
            our_order: &["timestamp", "value"],
        },
        fields: &[
            fnote("timestamp", "timestamp", Tol::Exact, "calibrated times in whole ps before t0 is subtracted (docs/formats.md)"),
            f("timestamp", "timestamp", Tol::Ns(1)),
            f("value", "value", Tol::Exact),
            fnote("id", "id", Tol::Exact, "queue names need the NEFF def.json (ntff.md §4.3)"),
        ],
        same_names: false,
        note: "rows grouped by (subgraph, semaphore number) and paired in (timestamp, value) order",
    },
    // ntff_dma_golden.rs compare_dma: per (subgraph, engine, queue) in (timestamp, packet_idx) order.
    SectionMap {
        section: "dma",
        filter: Some(("aggregated", "no")),
        kind: Kind::Table("DmaPacket"),
        align: Align::Keyed {
            export: &[ExpKey::Subgraph, ExpKey::F("dma_engine"), ExpKey::F("dma_queue")],
            ours: &[OurKey::Subgraph, OurKey::C("engine_idx"), OurKey::C("queue_idx")],
            export_order: &["timestamp", "packet_idx"],
            our_order: &["start_ts", "packet_idx"],
        },
        fields: &[
            f("timestamp", "start_ts", Tol::Exact),
            f("duration", "duration_ns", Tol::Exact),
            f("transfer_size", "transfer_bytes", Tol::Exact),
            f("read_size", "read_bytes", Tol::Exact),
            f("write_size", "write_bytes", Tol::Exact),
            f("crc", "crc", Tol::Exact),
            f("packet_idx", "packet_idx", Tol::Exact),
            f("subgroup", "queue_name", Tol::Exact),
            f("queue_type", "queue_type", Tol::Exact),
            fnote("transfer_rate", "throughput", Tol::F32, "float32 bytes / float32 seconds (ntff.md §4.4)"),
            fnote("variable", "variable", Tol::TextOrNull, "static-queue tensors need the NEFF dma blocks"),
            tool("id", "tool-generated id"),
            tool("packet_aggregation_id", "tool-generated hash; ours numbers DmaPacketAggregated rows"),
        ],
        same_names: false,
        note: "rows grouped by (subgraph, DMA engine, queue) and paired in (timestamp, packet_idx) order",
    },
    // The inf2 exports' one aggregated row per file (docs/formats.md "DmaPacketAggregated").
    SectionMap {
        section: "dma",
        filter: Some(("aggregated", "yes")),
        kind: Kind::Table("DmaPacketAggregated"),
        align: Align::Keyed {
            export: &[ExpKey::Subgraph, ExpKey::F("dma_queue")],
            ours: &[OurKey::Subgraph, OurKey::C("queue_idx")],
            export_order: &["timestamp"],
            our_order: &["start_ts"],
        },
        fields: &[
            f("timestamp", "start_ts", Tol::Exact),
            f("duration", "duration_ns", Tol::Exact),
            f("transfer_size", "transfer_bytes", Tol::Exact),
            f("read_size", "read_bytes", Tol::Exact),
            f("write_size", "write_bytes", Tol::Exact),
            f("transfer_rate", "throughput", Tol::F32),
            f("subgroup", "queue_name", Tol::Exact),
            f("queue_type", "queue_type", Tol::Exact),
            f("crc", "nscope_crc", Tol::Exact),
            f("dma_engine", "nscope_engine_idx", Tol::Exact),
            f("variable", "variable", Tol::TextOrNull),
            f("op", "op", Tol::TextOrNull),
            f("source", "source", Tol::TextOrNull),
            f("dest", "dest", Tol::TextOrNull),
            f("semaphore_id", "semaphore_id", Tol::TextOrNull),
            f("block_id", "block_id", Tol::Exact),
            f("trigger", "trigger", Tol::Exact),
            f("source_sb_partitions", "read_sbuf_partitions", Tol::TextOrNull),
            f("source_num_sb_partitions", "read_num_sbuf_partitions", Tol::Exact),
            f("read_shape", "read_shape", Tol::TextOrNull),
            f("source_offset", "read_offset", Tol::TextOrNull),
            f("source_steps", "read_steps", Tol::TextOrNull),
            f("dest_sb_partitions", "write_sbuf_partitions", Tol::TextOrNull),
            f("dest_num_sb_partitions", "write_num_sbuf_partitions", Tol::Exact),
            f("write_shape", "write_shape", Tol::TextOrNull),
            f("dest_offset", "write_offset", Tol::TextOrNull),
            f("dest_steps", "write_steps", Tol::TextOrNull),
            tool("id", "tool-generated id"),
        ],
        same_names: false,
        note: "rows grouped by (subgraph, queue) and paired in timestamp order",
    },
    // ntff_dma_golden.rs compare_ham.
    SectionMap {
        section: "ham",
        filter: None,
        kind: Kind::Table("Throttle"),
        align: Align::Keyed {
            export: &[ExpKey::Subgraph],
            ours: &[OurKey::Subgraph],
            export_order: &["timestamp"],
            our_order: &["timestamp"],
        },
        fields: &[
            f("timestamp", "timestamp", Tol::Exact),
            f("duration", "duration", Tol::Exact),
            f("k", "k", Tol::Exact),
            f("n", "n", Tol::Exact),
            fnote("type", "nscope_type_code", Tol::Exact, "raw code; Throttle.type is its Explorer name"),
        ],
        same_names: false,
        note: "rows grouped by subgraph and paired in timestamp order",
    },
    // ntff_dma_golden.rs compare_queues.
    SectionMap {
        section: "dma_queues_info",
        filter: None,
        kind: Kind::Table("DmaQueuesInfo"),
        align: Align::Keyed {
            export: &[ExpKey::Subgraph, ExpKey::F("q_name")],
            ours: &[OurKey::Subgraph, OurKey::C("name")],
            export_order: &[],
            our_order: &[],
        },
        fields: &[
            f("q_type", "type", Tol::Exact),
            f("q_eng_idx", "engine_idx", Tol::Exact),
            f("q_idx", "idx", Tol::Exact),
            fnote("q_axi_port", "axi_port", Tol::Exact, "0 in every export; no NTFF field found"),
            f("q_dram_channel", "dram_channel", Tol::Exact),
            f("q_event_id", "nscope_event_id", Tol::Exact),
        ],
        same_names: false,
        note: "rows keyed by (subgraph, queue name)",
    },
    // ntff_dma_golden.rs summary_against_exports: same names, float32 within 1e-6 relative.
    SectionMap {
        section: "summary",
        filter: None,
        kind: Kind::Table("Summary"),
        align: NO_KEY,
        fields: &[],
        same_names: true,
        note: "one row; same field names",
    },
    // ntff_golden.rs golden_exports (metadata checks) and docs/formats.md "Output conventions".
    SectionMap {
        section: "metadata",
        filter: None,
        kind: Kind::Table("Metadata"),
        align: NO_KEY,
        fields: &[
            f("pe_clock_freq", "tensor_engine_clock_freq", Tol::Rel(1e-6)),
            f("pe_num_rows", "tensor_engine_num_rows", Tol::Exact),
            f("pe_num_cols", "tensor_engine_num_cols", Tol::Exact),
            fnote("pe_clock_others", "vector_engine_clock_freq", Tol::Rel(1e-6), "mapping inferred (docs/formats.md)"),
        ],
        same_names: true,
        note: "one row; same names plus the pe_* renames",
    },
    // end_to_end.rs: NeffHeader equals neff_header.
    SectionMap {
        section: "neff_header",
        filter: None,
        kind: Kind::Table("NeffHeader"),
        align: NO_KEY,
        fields: &[
            f("number_of_logical_neuroncores", "logical_neuroncore_count", Tol::Exact),
            f("number_of_neuroncores_per_lnc", "pcore_count_per_lnc", Tol::Exact),
        ],
        same_names: true,
        note: "one row; needs the NEFF",
    },
    SectionMap {
        section: "profile_info",
        filter: None,
        kind: Kind::Table("Metadata"),
        align: NO_KEY,
        fields: &[
            f("profile_name", "profile_name", Tol::TextOrNull),
            tool("profiler_version", "version of AWS's tool"),
            tool("profiler_build_time", "build time of AWS's tool"),
        ],
        same_names: false,
        note: "one row, against Metadata",
    },
    SectionMap {
        section: "neff_node",
        filter: None,
        kind: Kind::Table("TensorInfo"),
        align: Align::Keyed {
            export: &[ExpKey::F("variable_name")],
            ours: &[OurKey::C("variable_name")],
            export_order: &[],
            our_order: &[],
        },
        fields: &[
            f("type", "type", Tol::TextOrNull),
            f("format", "format", Tol::TextOrNull),
            f("shape", "shape", Tol::TextOrNull),
            f("size", "size", Tol::Exact),
            f("load_to_sbuf_avg_size_bytes", "load_to_sbuf_avg_size_bytes", Tol::Exact),
            f("load_to_sbuf_total_size_bytes", "load_to_sbuf_total_size_bytes", Tol::Exact),
            f("load_to_sbuf_dma_count", "load_to_sbuf_dma_count", Tol::Exact),
            f("load_to_sbuf_repeat_factor", "load_to_sbuf_repeat_factor", Tol::Rel(1e-6)),
            tool("sg_name", "set on the per-subgraph node rows only"),
            tool(
                "node",
                "the export writes node rows (no variable) that TensorInfo has no rows for",
            ),
        ],
        same_names: false,
        note: "rows keyed by variable_name; needs the NEFF (neff.md §6.6)",
    },
    SectionMap {
        section: "nc_mem_usage",
        filter: None,
        kind: Kind::Table("HbmUsageSummaryByType"),
        align: Align::Keyed {
            export: &[ExpKey::F("nd"), ExpKey::F("nc"), ExpKey::F("usage_type")],
            ours: &[
                OurKey::C("neuron_device_idx"),
                OurKey::C("neuroncore_idx"),
                OurKey::C("usage_type"),
            ],
            export_order: &[],
            our_order: &[],
        },
        fields: &[fnote("amount_bytes", "usage_bytes", Tol::Exact, "NTFF subgraph field 11, plus a Total row per core")],
        same_names: false,
        note: "rows keyed by (nd → neuron_device_idx, nc → neuroncore_idx, usage_type) (ntff.md §3.3.3)",
    },
    SectionMap {
        section: "active_time",
        filter: None,
        kind: Kind::Table("ActiveTime"),
        align: Align::Keyed {
            export: &[ExpKey::Subgraph, ExpKey::F("engine")],
            ours: &[OurKey::Subgraph, OurKey::C("engine")],
            export_order: &["start_ts"],
            our_order: &["start_ts"],
        },
        fields: &[
            f("start_ts", "start_ts", Tol::Exact),
            fnote("end_ts", "end_ts", Tol::Exact, "raw end floored on its own, not start_ts + duration_ns (docs/formats.md \"Derived tables\")"),
            f("duration_ns", "duration_ns", Tol::Exact),
            f("pcore_idx", "pcore_idx", Tol::Exact),
        ],
        same_names: false,
        note: "rows grouped by (subgraph, engine) and paired in start order (derived_golden.rs)",
    },
    SectionMap {
        section: "pending_dma",
        filter: None,
        kind: Kind::Table("PendingDma"),
        // Keyed by time, not zipped in time order: the v5 exports add two rows per file (static
        // spill-reload trigger +1, aggregated transfer end −1) that ours lack, and zipping would
        // pair every later row with the wrong one (derived_golden.rs keys the same way).
        align: Align::Keyed {
            export: &[ExpKey::Subgraph, ExpKey::F("timestamp")],
            ours: &[OurKey::Subgraph, OurKey::C("timestamp")],
            export_order: &[],
            our_order: &[],
        },
        fields: &[fnote(
            "value",
            "value",
            Tol::Exact,
            "running count of DMA_DIRECT2D starts (docs/formats.md \"Derived tables\")",
        )],
        same_names: false,
        note: "rows keyed by (subgraph, timestamp); v5: the static transfer's trigger and end rows are not rebuilt",
    },
    SectionMap {
        section: "dma_throughput",
        filter: None,
        kind: Kind::Table("DmaUsage"),
        align: Align::Keyed {
            export: &[ExpKey::Subgraph],
            ours: &[OurKey::Subgraph],
            export_order: &["timestamp"],
            our_order: &["timestamp"],
        },
        fields: &[
            f("timestamp", "timestamp", Tol::Exact),
            fnote("transfer_rate", "current_throughput", Tol::F32, "sum of the float32 packet rates in flight, stored as float32"),
            f("total_transfer_bytes", "total_transfer_bytes", Tol::Exact),
            fnote("hbm_transfer_rate", "HbmUsage.current_throughput", Tol::F32, "Explorer's HbmUsage, not written: every export row is 0 with uses_hbm false (docs/formats.md \"Derived tables\")"),
            fnote("hbm_total_transfer_bytes", "HbmUsage.total_transfer_bytes", Tol::Exact, "Explorer's HbmUsage, not written: every export row is 0 with uses_hbm false"),
            fnote("uses_hbm", "HbmUsage", Tol::Exact, "Explorer's HbmUsage, not written: \"false\" in every export row"),
        ],
        same_names: false,
        note: "rows grouped by subgraph and paired in timestamp order (derived_golden.rs)",
    },
    SectionMap {
        section: "instruction_usage",
        filter: Some(("type", "sb")),
        kind: Kind::Table("SbufUsage"),
        align: Align::Keyed {
            export: &[ExpKey::Subgraph],
            ours: &[OurKey::Subgraph],
            export_order: &["timestamp"],
            our_order: &["timestamp"],
        },
        fields: &[
            f("timestamp", "timestamp", Tol::Exact),
            fnote("usage_avg", "avg_util_percent", Tol::Rel(1e-6), "export holds a fraction; compared unscaled"),
            f("partition_0_usage", "partition_0_util_percent", Tol::Rel(1e-6)),
            f("partition_32_usage", "partition_32_util_percent", Tol::Rel(1e-6)),
            f("partition_64_usage", "partition_64_util_percent", Tol::Rel(1e-6)),
            f("partition_96_usage", "partition_96_util_percent", Tol::Rel(1e-6)),
        ],
        same_names: false,
        note: "rows grouped by subgraph and paired in timestamp order",
    },
    SectionMap {
        section: "instruction_usage",
        filter: Some(("type", "psum")),
        kind: Kind::Table("PsumUsage"),
        align: Align::Keyed {
            export: &[ExpKey::Subgraph],
            ours: &[OurKey::Subgraph],
            export_order: &["timestamp"],
            our_order: &["timestamp"],
        },
        fields: &[
            f("timestamp", "timestamp", Tol::Exact),
            fnote("usage_avg", "avg_util_percent", Tol::Rel(1e-6), "export holds a fraction; compared unscaled"),
            f("bank_0_usage", "bank_0_util_percent", Tol::Rel(1e-6)),
            f("bank_1_usage", "bank_1_util_percent", Tol::Rel(1e-6)),
            f("bank_2_usage", "bank_2_util_percent", Tol::Rel(1e-6)),
            f("bank_3_usage", "bank_3_util_percent", Tol::Rel(1e-6)),
            f("bank_4_usage", "bank_4_util_percent", Tol::Rel(1e-6)),
            f("bank_5_usage", "bank_5_util_percent", Tol::Rel(1e-6)),
            f("bank_6_usage", "bank_6_util_percent", Tol::Rel(1e-6)),
            f("bank_7_usage", "bank_7_util_percent", Tol::Rel(1e-6)),
        ],
        same_names: false,
        note: "rows grouped by subgraph and paired in timestamp order",
    },
    SectionMap {
        section: "warnings",
        filter: None,
        kind: Kind::Table("Warning"),
        align: Align::Keyed {
            export: &[ExpKey::F("message")],
            ours: &[OurKey::C("message")],
            export_order: &[],
            our_order: &[],
        },
        fields: &[f("category", "category", Tol::Exact)],
        same_names: false,
        note: "rows keyed by message text; our own problems (pairing, debug info) are extra rows",
    },
    SectionMap {
        section: "model_info",
        filter: None,
        kind: Kind::NoTable,
        align: NO_KEY,
        fields: &[],
        same_names: false,
        note: "per-core Summary values; schema 7.4.0 has no per-core table (ntff_golden.rs checks them against DecodeReport)",
    },
    SectionMap {
        section: "layer_summary",
        filter: None,
        kind: Kind::NoTable,
        align: NO_KEY,
        fields: &[],
        same_names: false,
        note: "no Explorer 7.4.0 table",
    },
    SectionMap {
        section: "terminology",
        filter: None,
        kind: Kind::Presentation,
        align: NO_KEY,
        fields: &[],
        same_names: false,
        note: "field descriptions",
    },
    SectionMap {
        section: "summary_groups",
        filter: None,
        kind: Kind::Presentation,
        align: NO_KEY,
        fields: &[],
        same_names: false,
        note: "grouping of summary fields for display",
    },
    SectionMap {
        section: "summary_group_order",
        filter: None,
        kind: Kind::Presentation,
        align: NO_KEY,
        fields: &[],
        same_names: false,
        note: "display order of summary groups",
    },
];

/// One cell of ours, typed.
#[derive(Debug, Clone, PartialEq)]
enum Cell {
    Null,
    Int(i64),
    Float(f64),
    Str(String),
    Bool(bool),
}

impl Cell {
    fn text(&self) -> String {
        match self {
            Cell::Null => "null".into(),
            Cell::Int(v) => v.to_string(),
            Cell::Float(v) => v.to_string(),
            Cell::Str(s) => s.clone(),
            Cell::Bool(b) => b.to_string(),
        }
    }
    fn num(&self) -> Option<f64> {
        match self {
            Cell::Int(v) => Some(*v as f64),
            Cell::Float(v) => Some(*v),
            Cell::Str(s) => s.trim().parse().ok(),
            Cell::Bool(b) => Some(f64::from(u8::from(*b))),
            Cell::Null => None,
        }
    }
    fn int(&self) -> Option<i64> {
        match self {
            Cell::Int(v) => Some(*v),
            Cell::Str(s) => s.trim().parse().ok(),
            Cell::Float(v) if v.fract() == 0.0 && v.abs() < 9.0e18 => Some(*v as i64),
            _ => None,
        }
    }
}

/// Typed access to one column of a batch.
fn cell(col: &dyn Array, i: usize) -> Cell {
    if i >= col.len() || col.is_null(i) {
        return Cell::Null;
    }
    let any = col.as_any();
    if let Some(a) = any.downcast_ref::<Int64Array>() {
        Cell::Int(a.value(i))
    } else if let Some(a) = any.downcast_ref::<Int32Array>() {
        Cell::Int(i64::from(a.value(i)))
    } else if let Some(a) = any.downcast_ref::<Float32Array>() {
        Cell::Float(f64::from(a.value(i)))
    } else if let Some(a) = any.downcast_ref::<Float64Array>() {
        Cell::Float(a.value(i))
    } else if let Some(a) = crate::tables::StrCol::of(col) {
        Cell::Str(a.get(i).unwrap_or_default().to_string())
    } else if let Some(a) = any.downcast_ref::<BooleanArray>() {
        Cell::Bool(a.value(i))
    } else if let Some(a) = any.downcast_ref::<ListArray>() {
        let v = a.value(i);
        let parts: Vec<String> = (0..v.len()).map(|j| cell(v.as_ref(), j).text()).collect();
        Cell::Str(format!("[{}]", parts.join(", ")))
    } else {
        Cell::Null
    }
}

/// Export value as a cell: numbers, numeric texts stay texts (compared numerically when the
/// other side is a number).
fn jcell(v: Option<&Value>) -> Cell {
    match v {
        None | Some(Value::Null) => Cell::Null,
        Some(Value::Bool(b)) => Cell::Bool(*b),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(i) => Cell::Int(i),
            None => Cell::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Some(Value::String(s)) => Cell::Str(s.clone()),
        Some(other) => Cell::Str(other.to_string()),
    }
}

fn is_blank(c: &Cell, unknown_too: bool) -> bool {
    match c {
        Cell::Null => true,
        Cell::Str(s) => s.is_empty() || (unknown_too && s == "Unknown"),
        _ => false,
    }
}

/// `tol` applied to (export, ours); `ours_is_f32` when our column is float32.
fn equal(tol: Tol, e: &Cell, o: &Cell, ours_is_float: bool) -> bool {
    let tol = match tol {
        Tol::Auto if ours_is_float => Tol::Rel(1e-6),
        Tol::Auto => Tol::Exact,
        t => t,
    };
    match tol {
        Tol::TextOrNull | Tol::TextCi => {
            let (eb, ob) = (is_blank(e, true), is_blank(o, true));
            if eb || ob {
                return eb && ob;
            }
            let (et, ot) = (e.text(), o.text());
            if tol == Tol::TextCi {
                et.eq_ignore_ascii_case(&ot)
            } else {
                et == ot || matches!((e.num(), o.num()), (Some(a), Some(b)) if a == b)
            }
        }
        Tol::ZeroOrNull => {
            let z = |c: &Cell| is_blank(c, false) || c.int() == Some(0);
            if z(e) || z(o) {
                return z(e) && z(o);
            }
            e.int() == o.int()
        }
        _ => {
            let (eb, ob) = (is_blank(e, false), is_blank(o, false));
            if eb || ob {
                return eb && ob;
            }
            if let (Cell::Bool(a), b) | (b, Cell::Bool(a)) = (e, o) {
                return match b {
                    Cell::Bool(b) => a == b,
                    Cell::Str(s) => s.eq_ignore_ascii_case(if *a { "true" } else { "false" }),
                    other => other.num() == Some(f64::from(u8::from(*a))),
                };
            }
            match (e.num(), o.num()) {
                (Some(a), Some(b)) => match tol {
                    Tol::Ns(n) => match (e.int(), o.int()) {
                        (Some(x), Some(y)) => {
                            (i128::from(x) - i128::from(y)).abs() <= i128::from(n)
                        }
                        _ => (a - b).abs() <= n as f64,
                    },
                    Tol::Rel(eps) => a == b || (a - b).abs() <= eps * a.abs().max(b.abs()),
                    Tol::F32 => (a as f32) == (b as f32),
                    _ => match (e.int(), o.int()) {
                        (Some(x), Some(y)) => x == y,
                        _ => a == b,
                    },
                },
                _ => e.text() == o.text(),
            }
        }
    }
}

fn norm_key(c: &Cell) -> String {
    match c {
        Cell::Null => String::new(),
        c => match c.int() {
            Some(i) => i.to_string(),
            None => c.text().to_ascii_lowercase(),
        },
    }
}

fn export_subgraph(r: &Value) -> String {
    r.get("subgraph")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .or_else(|| {
            r.get("fully_qualified_subgraph")
                .and_then(Value::as_str)
                .map(|s| s.trim_start_matches('/'))
        })
        .unwrap_or("sg00")
        .to_ascii_lowercase()
}

/// Semaphore number of an export id: `S[8] (qSyncSpillReload0)` → 8, `2` → 2.
pub fn sem_number(id: &str) -> Option<i64> {
    let s = id
        .strip_prefix("S[")
        .map(|r| r.split(']').next().unwrap_or(""))
        .unwrap_or(id);
    s.trim().parse().ok()
}

fn export_key(r: &Value, keys: &[ExpKey]) -> String {
    let parts: Vec<String> = keys
        .iter()
        .map(|k| match k {
            ExpKey::F(name) => norm_key(&jcell(r.get(*name))),
            ExpKey::Subgraph => export_subgraph(r),
            ExpKey::SgName => r
                .get("sg_name")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .unwrap_or("sg00")
                .to_ascii_lowercase(),
            ExpKey::SemIndex => {
                let c = jcell(r.get("id"));
                sem_number(&c.text()).map_or_else(|| c.text(), |n| n.to_string())
            }
        })
        .collect();
    parts.join("\u{1f}")
}

/// Our batch with column lookups.
struct Ours<'a> {
    b: &'a RecordBatch,
}

impl Ours<'_> {
    fn col(&self, name: &str) -> Option<&dyn Array> {
        self.b.column_by_name(name).map(|c| c.as_ref())
    }
    fn get(&self, name: &str, i: usize) -> Cell {
        self.col(name).map_or(Cell::Null, |c| cell(c, i))
    }
    fn subgraph(&self, i: usize) -> String {
        if let Cell::Str(s) = self.get("nscope_subgraph", i) {
            return s.to_ascii_lowercase();
        }
        match self.get("pcore_idx", i).int() {
            Some(p) => format!("sg{p:02}"),
            None => "sg00".into(),
        }
    }
    fn key(&self, keys: &[OurKey], i: usize) -> String {
        let parts: Vec<String> = keys
            .iter()
            .map(|k| match k {
                OurKey::C(name) => norm_key(&self.get(name, i)),
                OurKey::Subgraph => self.subgraph(i),
            })
            .collect();
        parts.join("\u{1f}")
    }
    fn is_float(&self, name: &str) -> bool {
        self.col(name).is_some_and(|c| {
            matches!(
                c.data_type(),
                arrow_schema::DataType::Float32 | arrow_schema::DataType::Float64
            )
        })
    }
}

fn sort_num(c: &Cell) -> f64 {
    c.num().unwrap_or(f64::NEG_INFINITY)
}

/// Pairs export rows (indices into `rows`) with our row indices.
fn align(rows: &[(usize, &Value)], ours: &Ours<'_>, a: &Align) -> Vec<(usize, usize)> {
    match a {
        Align::Single => rows
            .iter()
            .enumerate()
            .take(ours.b.num_rows())
            .map(|(k, (i, _))| (*i, k))
            .collect(),
        Align::Keyed {
            export,
            ours: okeys,
            export_order,
            our_order,
        } => {
            let mut theirs: BTreeMap<String, Vec<(Vec<f64>, usize)>> = BTreeMap::new();
            for (i, r) in rows {
                let ord = export_order
                    .iter()
                    .map(|f| sort_num(&jcell(r.get(*f))))
                    .collect();
                theirs
                    .entry(export_key(r, export))
                    .or_default()
                    .push((ord, *i));
            }
            let mut mine: BTreeMap<String, Vec<(Vec<f64>, usize)>> = BTreeMap::new();
            for i in 0..ours.b.num_rows() {
                let ord = our_order
                    .iter()
                    .map(|c| sort_num(&ours.get(c, i)))
                    .collect();
                mine.entry(ours.key(okeys, i)).or_default().push((ord, i));
            }
            let by = |x: &(Vec<f64>, usize), y: &(Vec<f64>, usize)| {
                x.0.iter()
                    .zip(&y.0)
                    .map(|(a, b)| a.total_cmp(b))
                    .find(|o| o.is_ne())
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then(x.1.cmp(&y.1))
            };
            let mut out = Vec::new();
            for (k, mut tv) in theirs {
                let Some(mut ov) = mine.remove(&k) else {
                    continue;
                };
                tv.sort_by(by);
                ov.sort_by(by);
                out.extend(tv.iter().zip(&ov).map(|(t, o)| (t.1, o.1)));
            }
            out.sort_unstable();
            out
        }
    }
}

fn align_label(a: &Align, note: &str) -> String {
    match a {
        Align::Single => "row by row".into(),
        Align::Keyed { .. } => note.to_string(),
    }
}

fn key_fields(a: &Align) -> Vec<&'static str> {
    match a {
        Align::Single => Vec::new(),
        Align::Keyed { export, .. } => export
            .iter()
            .flat_map(|k| match k {
                ExpKey::F(n) => vec![*n],
                ExpKey::Subgraph => vec!["subgraph", "fully_qualified_subgraph"],
                ExpKey::SgName => vec!["sg_name"],
                ExpKey::SemIndex => vec![],
            })
            .collect(),
    }
}

/// Rows of a section: an array of objects, or one object.
fn section_rows(v: &Value) -> Vec<&Value> {
    match v {
        Value::Array(a) => a.iter().collect(),
        Value::Object(_) => vec![v],
        _ => Vec::new(),
    }
}

fn json_text(v: Option<&Value>) -> String {
    match v {
        None => "(absent)".into(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    }
}

fn section_label(m: &SectionMap) -> String {
    match m.filter {
        Some((k, v)) => format!("{}[{k}={v}]", m.section),
        None => m.section.to_string(),
    }
}

fn compare_section(m: &SectionMap, export: &Value, src: &dyn TableSource) -> SectionReport {
    let label = section_label(m);
    let all = export.get(m.section).map(section_rows).unwrap_or_default();
    let rows: Vec<(usize, &Value)> = all
        .iter()
        .copied()
        .enumerate()
        .filter(|(_, r)| match m.filter {
            Some((k, v)) => r.get(k).and_then(Value::as_str) == Some(v),
            None => true,
        })
        .collect();
    let table = match m.kind {
        Kind::Table(t) => Some(t.to_string()),
        _ => None,
    };
    let mut rep = SectionReport {
        section: label,
        table: table.clone(),
        status: SectionStatus::Compared,
        export_rows: rows.len(),
        our_rows: 0,
        matched_rows: 0,
        alignment: align_label(&m.align, m.note),
        note: m.note.to_string(),
        fields: Vec::new(),
    };
    // Export field names in first-seen order.
    let mut names: Vec<&str> = Vec::new();
    let mut seen = BTreeSet::new();
    for (_, r) in &rows {
        if let Some(o) = r.as_object() {
            for k in o.keys() {
                if seen.insert(k.as_str()) {
                    names.push(k.as_str());
                }
            }
        }
    }
    match m.kind {
        Kind::Presentation => {
            rep.status = SectionStatus::Presentation;
            rep.alignment = "not compared (presentation)".into();
            return rep;
        }
        Kind::NoTable => {
            rep.status = if rows.is_empty() {
                SectionStatus::NotInExport
            } else {
                SectionStatus::NotProduced
            };
            rep.alignment = "none".into();
            rep.fields = names
                .iter()
                .map(|n| not_produced(n, None, "no Explorer table"))
                .collect();
            return rep;
        }
        Kind::Table(_) => {}
    }
    if export.get(m.section).is_none() || (m.filter.is_some() && rows.is_empty()) {
        rep.status = SectionStatus::NotInExport;
        rep.alignment = "none".into();
        return rep;
    }
    let batch = table.as_deref().and_then(|t| src.table(t));
    let Some(batch) = batch else {
        rep.status = SectionStatus::NotProduced;
        rep.alignment = "none".into();
        rep.note = format!(
            "neuronscope does not write {} (yet)",
            table.unwrap_or_default()
        );
        rep.fields = names
            .iter()
            .map(|n| not_produced(n, None, "table not produced"))
            .collect();
        return rep;
    };
    let ours = Ours { b: &batch };
    rep.our_rows = batch.num_rows();
    let pairs = align(&rows, &ours, &m.align);
    rep.matched_rows = pairs.len();
    let by_index: BTreeMap<usize, &Value> = rows.iter().copied().collect();

    let keys = key_fields(&m.align);
    let filter_field = m.filter.map(|(k, _)| k);
    let mut listed = BTreeSet::new();
    // Export fields without a column: listed after the compared ones.
    let mut unmapped: Vec<FieldReport> = Vec::new();
    // (export field, our column, tolerance, note)
    let mut plan: Vec<(String, Option<String>, Tol, String)> = Vec::new();
    for fm in m.fields {
        listed.insert(fm.export);
        plan.push((
            fm.export.into(),
            fm.ours.map(str::to_string),
            fm.tol,
            fm.note.into(),
        ));
    }
    for n in &names {
        if listed.contains(n) {
            continue;
        }
        if keys.contains(n) || Some(*n) == filter_field {
            rep.fields.push(FieldReport {
                field: n.to_string(),
                column: None,
                status: FieldStatus::Key,
                compared: 0,
                equal: 0,
                rate: 0.0,
                tolerance: "alignment key".into(),
                diffs: Vec::new(),
                note: String::new(),
            });
            continue;
        }
        if m.same_names && ours.col(n).is_some() {
            plan.push((n.to_string(), Some(n.to_string()), Tol::Auto, String::new()));
        } else {
            unmapped.push(not_produced(n, None, "no column of ours"));
        }
    }
    for (fexp, fcol, ftol, fnote) in plan {
        // Mapped fields absent from this export are left out (other export versions have them).
        if !seen.contains(fexp.as_str()) {
            continue;
        }
        let Some(col) = fcol.as_deref() else {
            rep.fields.push(FieldReport {
                field: fexp,
                column: None,
                status: FieldStatus::NotComparable,
                compared: 0,
                equal: 0,
                rate: 0.0,
                tolerance: "-".into(),
                diffs: Vec::new(),
                note: fnote,
            });
            continue;
        };
        match ours.col(col) {
            None => {
                let why = if fnote.is_empty() {
                    "column not produced"
                } else {
                    fnote.as_str()
                };
                rep.fields.push(not_produced(&fexp, Some(col), why));
                continue;
            }
            Some(c) if c.null_count() == c.len() && !c.is_empty() => {
                rep.fields
                    .push(not_produced(&fexp, Some(col), "column written, all null"));
                continue;
            }
            _ => {}
        }
        let is_float = ours.is_float(col);
        let mut fr = FieldReport {
            field: fexp.clone(),
            column: Some(col.into()),
            status: FieldStatus::Compared,
            compared: 0,
            equal: 0,
            rate: 0.0,
            tolerance: if ftol == Tol::Auto {
                if is_float {
                    Tol::Rel(1e-6).label()
                } else {
                    Tol::Exact.label()
                }
            } else {
                ftol.label()
            },
            diffs: Vec::new(),
            note: fnote,
        };
        for (ei, oi) in &pairs {
            let Some(r) = by_index.get(ei) else { continue };
            let e = jcell(r.get(fexp.as_str()));
            let o = ours.get(col, *oi);
            fr.compared += 1;
            if equal(ftol, &e, &o, is_float) {
                fr.equal += 1;
            } else if fr.diffs.len() < FIRST_DIFFS {
                fr.diffs.push(Diff {
                    row: *ei,
                    export: json_text(r.get(fexp.as_str())),
                    ours: o.text(),
                });
            }
        }
        fr.rate = if fr.compared > 0 {
            fr.equal as f64 / fr.compared as f64
        } else {
            0.0
        };
        rep.fields.push(fr);
    }
    // Keys, compared fields, then what is not produced or not comparable.
    rep.fields.extend(unmapped);
    rep.fields.sort_by_key(|f| match f.status {
        FieldStatus::Key => 0,
        FieldStatus::Compared => 1,
        FieldStatus::NotProduced => 2,
        FieldStatus::NotComparable => 3,
    });
    rep
}

fn not_produced(field: &str, column: Option<&str>, note: &str) -> FieldReport {
    FieldReport {
        field: field.into(),
        column: column.map(str::to_string),
        status: FieldStatus::NotProduced,
        compared: 0,
        equal: 0,
        rate: 0.0,
        tolerance: "-".into(),
        diffs: Vec::new(),
        note: note.into(),
    }
}

/// The device profile of `inv` an export came from: `device` (a device name, or a suffix of its
/// NTFF path) when given; else the NTFF whose file name is the basename of
/// `profile_info.ntff_filename`; else the NTFF named like the export (`x.json` ↔ `x.ntff`).
/// Among several candidates the one sharing the longest folder prefix with `export_path` (an
/// inventory-style path) wins. Returns (profile id, device index).
///
/// Errors: no candidate (the message lists the NTFFs of the inventory).
pub fn find_device(
    inv: &Inventory,
    export: &Value,
    export_path: Option<&str>,
    device: Option<&str>,
) -> Result<(String, usize)> {
    let base = |s: &str| s.rsplit(['/', '\\']).next().unwrap_or(s).to_string();
    let mut cands: Vec<(String, usize, String, String)> = Vec::new();
    for p in &inv.profiles {
        for (i, d) in p.devices.iter().enumerate() {
            if let Some(n) = &d.ntff {
                cands.push((p.id.clone(), i, n.clone(), d.name.clone()));
            }
        }
    }
    let chosen: Vec<&(String, usize, String, String)> = if let Some(dev) = device {
        cands
            .iter()
            .filter(|c| c.3 == dev || c.2.ends_with(dev))
            .collect()
    } else {
        let info = export
            .get("profile_info")
            .map(section_rows)
            .and_then(|r| r.first().copied());
        let by_name: Vec<_> = info
            .and_then(|i| i.get("ntff_filename"))
            .and_then(Value::as_str)
            .map(|f| {
                let b = base(f);
                cands.iter().filter(|c| base(&c.2) == b).collect()
            })
            .unwrap_or_default();
        if by_name.is_empty() {
            let stem = export_path
                .map(base)
                .map(|b| b.rsplit_once('.').map_or(b.clone(), |(s, _)| s.to_string()))
                .unwrap_or_default();
            cands
                .iter()
                .filter(|c| base(&c.2).strip_suffix(".ntff") == Some(stem.as_str()))
                .collect()
        } else {
            by_name
        }
    };
    let score = |n: &str| {
        export_path.map_or(0, |e| {
            n.split('/')
                .zip(e.split('/'))
                .take_while(|(a, b)| a == b)
                .count()
        })
    };
    let best = chosen.iter().max_by_key(|c| score(&c.2)).ok_or_else(|| {
        Error::Other(format!(
            "no device profile matches the export {} (pass a device name; NTFFs: {})",
            export_path.unwrap_or("?"),
            cands
                .iter()
                .map(|c| c.2.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })?;
    Ok((best.0.clone(), best.1))
}

/// Parses an export, refusing more than [`MAX_EXPORT_BYTES`].
///
/// Errors: too large, not JSON, or not a JSON object of sections.
pub fn parse_export(bytes: &[u8]) -> Result<Value> {
    if bytes.len() > MAX_EXPORT_BYTES {
        return Err(Error::Other(format!(
            "export is {} bytes; conform parses exports of at most {} MiB in memory",
            bytes.len(),
            MAX_EXPORT_BYTES >> 20
        )));
    }
    let v: Value = serde_json::from_slice(bytes)
        .map_err(|e| Error::Other(format!("export is not JSON: {e}")))?;
    if !v.is_object() {
        return Err(Error::Other(
            "export is not a JSON object of sections (neuron-profile view --output-format json)"
                .into(),
        ));
    }
    Ok(v)
}

/// Compares our tables with the export `export_json` (bytes of a `neuron-profile view
/// --output-format json` file). Every export section appears in the report.
///
/// Errors: see [`parse_export`].
pub fn conform(src: &dyn TableSource, export_json: &[u8]) -> Result<ConformReport> {
    let export = parse_export(export_json)?;
    Ok(conform_value(src, &export))
}

/// [`conform`] on an already parsed export.
pub fn conform_value(src: &dyn TableSource, export: &Value) -> ConformReport {
    let info = export
        .get("profile_info")
        .map(section_rows)
        .and_then(|r| r.first().copied().cloned())
        .unwrap_or(Value::Null);
    let mut sections: Vec<SectionReport> = SECTIONS
        .iter()
        .map(|m| compare_section(m, export, src))
        .collect();
    if let Some(o) = export.as_object() {
        for (k, v) in o {
            if SECTIONS.iter().any(|m| m.section == k) {
                continue;
            }
            sections.push(SectionReport {
                section: k.clone(),
                table: None,
                status: SectionStatus::NotProduced,
                export_rows: section_rows(v).len(),
                our_rows: 0,
                matched_rows: 0,
                alignment: "none".into(),
                note: "section unknown to the conformance mapping".into(),
                fields: Vec::new(),
            });
        }
    }
    ConformReport {
        profiler_version: info
            .get("profiler_version")
            .and_then(Value::as_str)
            .map(str::to_string),
        ntff_filename: info
            .get("ntff_filename")
            .and_then(Value::as_str)
            .map(str::to_string),
        sections,
    }
}

impl ConformReport {
    /// The section report named `section` (with its split suffix, e.g. `dma[aggregated=no]`).
    pub fn section(&self, section: &str) -> Option<&SectionReport> {
        self.sections.iter().find(|s| s.section == section)
    }
    /// (equal, compared) of `field` in `section` (the first entry of that field name).
    pub fn rate(&self, section: &str, field: &str) -> Option<(u64, u64)> {
        self.field(section, field).map(|f| (f.equal, f.compared))
    }
    /// The first report of `field` in `section`.
    pub fn field(&self, section: &str, field: &str) -> Option<&FieldReport> {
        self.section(section)?
            .fields
            .iter()
            .find(|f| f.field == field)
    }
    /// Human-readable table: one block per section, one line per field.
    pub fn to_text(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "export: {} ({})",
            self.ntff_filename.as_deref().unwrap_or("?"),
            self.profiler_version.as_deref().unwrap_or("?")
        );
        for sec in &self.sections {
            let status = serde_json::to_value(sec.status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            let _ = writeln!(
                s,
                "\n{} -> {} [{status}] rows export {} / ours {} / matched {}; {}",
                sec.section,
                sec.table.as_deref().unwrap_or("-"),
                sec.export_rows,
                sec.our_rows,
                sec.matched_rows,
                sec.alignment
            );
            if sec.status != SectionStatus::Compared && !sec.note.is_empty() {
                let _ = writeln!(s, "  note: {}", sec.note);
            }
            for f in &sec.fields {
                match f.status {
                    FieldStatus::Compared => {
                        let _ = writeln!(
                            s,
                            "  {:<32} {:<28} {:>7.2} % {:>7}/{:<7} {}",
                            f.field,
                            f.column.as_deref().unwrap_or("-"),
                            f.rate * 100.0,
                            f.equal,
                            f.compared,
                            f.tolerance
                        );
                        for d in &f.diffs {
                            let _ = writeln!(
                                s,
                                "      row {}: export {} ours {}",
                                d.row, d.export, d.ours
                            );
                        }
                    }
                    other => {
                        let st = serde_json::to_value(other)
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_string))
                            .unwrap_or_default();
                        let _ = writeln!(
                            s,
                            "  {:<32} {:<28} {st}{}",
                            f.field,
                            f.column.as_deref().unwrap_or("-"),
                            if f.note.is_empty() {
                                String::new()
                            } else {
                                format!(" ({})", f.note)
                            }
                        );
                    }
                }
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerances() {
        let i = Cell::Int;
        assert!(equal(Tol::Exact, &Cell::Str("15".into()), &i(15), false));
        assert!(!equal(Tol::Exact, &i(14), &i(15), false));
        assert!(equal(Tol::Ns(1), &i(14), &i(15), false));
        assert!(equal(
            Tol::TextOrNull,
            &Cell::Str("".into()),
            &Cell::Null,
            false
        ));
        assert!(equal(
            Tol::TextOrNull,
            &Cell::Str("Unknown".into()),
            &Cell::Null,
            false
        ));
        assert!(!equal(
            Tol::TextOrNull,
            &Cell::Str("x".into()),
            &Cell::Null,
            false
        ));
        assert!(equal(Tol::ZeroOrNull, &i(0), &Cell::Null, false));
        assert!(equal(
            Tol::F32,
            &Cell::Float(85440580000.0),
            &Cell::Float(f64::from(85440580000.0f32)),
            true
        ));
        assert!(equal(
            Tol::Auto,
            &Cell::Float(1.0),
            &Cell::Float(1.0000001),
            true
        ));
        assert!(equal(
            Tol::Exact,
            &Cell::Bool(true),
            &Cell::Str("true".into()),
            false
        ));
        assert_eq!(sem_number("S[8] (qSyncSpillReload0)"), Some(8));
        assert_eq!(sem_number("2"), Some(2));
    }

    #[test]
    fn bad_exports_are_errors() {
        assert!(parse_export(b"[1,2]").is_err());
        assert!(parse_export(b"{").is_err());
        let t = Tables::default();
        let r = conform(
            &t,
            br#"{"instruction":[{"pc":1}],"terminology":[{}],"odd":[1]}"#,
        )
        .unwrap();
        let ins = r.section("instruction").unwrap();
        assert_eq!(ins.status, SectionStatus::NotProduced);
        assert_eq!(
            r.section("terminology").unwrap().status,
            SectionStatus::Presentation
        );
        assert_eq!(r.section("odd").unwrap().status, SectionStatus::NotProduced);
    }
}
