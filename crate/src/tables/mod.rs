//! Output tables named, typed and unit-ed after Neuron Explorer's Parquet schema 7.4.0
//! (spec/explorer-schema.md §5). [`explorer`] is generated from the spec; this module turns a
//! [`TableDef`] into an Arrow schema, builds bounded [`RecordBatch`]es row by row and collects them.
//!
//! Extra neuronscope columns carry the `nscope_` prefix (explorer-schema.md §1) so they can never
//! collide with a future Explorer field; they are declared in [`extras`].

pub mod explorer;

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::builder::{
    ArrayBuilder, BooleanBuilder, Float32Builder, Float64Builder, Int32Builder, Int64Builder,
    ListBuilder, StringBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::error::Result;

/// Schema version written to `Metadata.profile_schema_version` (explorer-schema.md §1).
pub const PROFILE_SCHEMA_VERSION: &str = "7.4.0-neuronscope.1";

/// Rows per record batch: bounds memory per builder and gives Parquet one row group per batch.
pub const BATCH_ROWS: usize = 64 * 1024;

/// Column type, as the schema's OpenAPI type maps to Arrow/Parquet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    /// int64
    I64,
    /// int32
    I32,
    /// float (32-bit)
    F32,
    /// double
    F64,
    /// bool
    Bool,
    /// string (UTF-8)
    Str,
    /// list<int64>
    ListI64,
    /// list<string>
    ListStr,
}

impl Ty {
    /// The Arrow data type of a column of this type.
    pub fn data_type(self) -> DataType {
        match self {
            Ty::I64 => DataType::Int64,
            Ty::I32 => DataType::Int32,
            Ty::F32 => DataType::Float32,
            Ty::F64 => DataType::Float64,
            Ty::Bool => DataType::Boolean,
            Ty::Str => DataType::Utf8,
            Ty::ListI64 => DataType::List(Arc::new(Field::new("item", DataType::Int64, true))),
            Ty::ListStr => DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
        }
    }
    /// (OpenAPI type, format) as written to `SchemaFields`.
    pub fn openapi(self) -> (&'static str, &'static str) {
        match self {
            Ty::I64 => ("integer", "int64"),
            Ty::I32 => ("integer", "int32"),
            Ty::F32 => ("number", "float"),
            Ty::F64 => ("number", "double"),
            Ty::Bool => ("boolean", ""),
            Ty::Str => ("string", ""),
            Ty::ListI64 => ("array", "int64"),
            Ty::ListStr => ("array", "string"),
        }
    }
}

/// One field of a table.
#[derive(Debug)]
pub struct FieldDef {
    pub name: &'static str,
    pub ty: Ty,
    /// ns, s, B, B/s, %, GHz, cycles, FLOPs or empty.
    pub unit: &'static str,
    /// "Req = Y" in the schema. Columns stay nullable in Arrow: a value we cannot decode is null,
    /// never guessed.
    pub required: bool,
    pub description: &'static str,
    /// Name of the enum (explorer-schema.md §4.2) whose values the field takes, or empty.
    pub enum_name: &'static str,
}

/// One table: Explorer's name, description and fields, in Explorer's order.
#[derive(Debug)]
pub struct TableDef {
    pub name: &'static str,
    pub description: &'static str,
    pub fields: &'static [FieldDef],
}

impl TableDef {
    /// Explorer's fields followed by our `nscope_` extras for this table.
    pub fn all_fields(&self) -> impl Iterator<Item = &'static FieldDef> + '_ {
        self.fields.iter().chain(extras(self.name).iter())
    }
    /// The Arrow schema (all columns nullable; field metadata carries the unit).
    pub fn schema(&self) -> SchemaRef {
        let fields: Vec<Field> = self
            .all_fields()
            .map(|f| {
                let mut fd = Field::new(f.name, f.ty.data_type(), true);
                if !f.unit.is_empty() {
                    fd = fd.with_metadata([("unit".to_string(), f.unit.to_string())]);
                }
                fd
            })
            .collect();
        Arc::new(Schema::new(fields))
    }
    /// Column index of `name`. Panics only on a programming error (a name not in the table),
    /// which the unit tests of every builder exercise.
    pub fn col(&self, name: &str) -> usize {
        self.all_fields()
            .position(|f| f.name == name)
            .unwrap_or_else(|| panic!("{} has no field {name}", self.name))
    }
}

/// Values of the enums of explorer-schema.md §4.2, for `SchemaFields.field_enum_values`.
pub fn enum_values(name: &str) -> &'static str {
    match name {
        "DmaQueueType" => "instruction,input,output,data,software_dynamic,hardware_dynamic,unknown",
        "ErrorType" => "Custom Notification,Errors,Warnings",
        "PerformanceMode" => "2x,4x",
        "MemoryBandwidthDirection" => "host_to_device,device_to_host,bidirectional",
        _ => "",
    }
}

/// neuronscope's extra columns (`nscope_` prefix) per table: raw values kept for inspection.
pub fn extras(table: &str) -> &'static [FieldDef] {
    match table {
        "Instruction" => &[
            FieldDef {
                name: "nscope_opcode_byte",
                ty: Ty::I32,
                unit: "",
                required: false,
                description: "Byte 0 of the runtime instruction slot at pc (ntff.md §7), the key of the opcode table.",
                enum_name: "",
            },
            FieldDef {
                name: "nscope_raw_start_ticks",
                ty: Ty::I64,
                unit: "ticks",
                required: false,
                description: "Raw NTFF timestamp of the start record, before calibration and origin.",
                enum_name: "",
            },
            FieldDef {
                name: "nscope_raw_end_ticks",
                ty: Ty::I64,
                unit: "ticks",
                required: false,
                description: "Raw NTFF timestamp of the end record.",
                enum_name: "",
            },
            FieldDef {
                name: "nscope_subgraph",
                ty: Ty::Str,
                unit: "",
                required: false,
                description: "NEFF/NTFF subgraph name (sg00, sg01) of the physical core.",
                enum_name: "",
            },
        ],
        "SemaphoreUpdate" => &[
            FieldDef {
                name: "nscope_sem_index",
                ty: Ty::I32,
                unit: "",
                required: false,
                description: "Numeric semaphore/event index (w0[7:0] of the event record, ntff.md §4.3).",
                enum_name: "",
            },
            FieldDef {
                name: "nscope_raw_w0",
                ty: Ty::I64,
                unit: "",
                required: false,
                description: "Raw first word of the event record.",
                enum_name: "",
            },
            FieldDef {
                name: "nscope_subgraph",
                ty: Ty::Str,
                unit: "",
                required: false,
                description: "Subgraph name (sg00, sg01) of the physical core.",
                enum_name: "",
            },
        ],
        "DmaPacket" => &[
            FieldDef {
                name: "nscope_subgraph",
                ty: Ty::Str,
                unit: "",
                required: false,
                description: "Subgraph name (sg00, sg01) of the physical core.",
                enum_name: "",
            },
            FieldDef {
                name: "nscope_dma_engine_field",
                ty: Ty::I32,
                unit: "",
                required: false,
                description: "DMA engine field w0[30:24] of the records, counted from the logical core's first physical core (ntff.md §4.4).",
                enum_name: "",
            },
            FieldDef {
                name: "nscope_raw_start_ticks",
                ty: Ty::I64,
                unit: "ticks",
                required: false,
                description: "Raw NTFF timestamp of the phase-1 (start) record, before calibration and origin.",
                enum_name: "",
            },
            FieldDef {
                name: "nscope_raw_end_ticks",
                ty: Ty::I64,
                unit: "ticks",
                required: false,
                description: "Raw NTFF timestamp of the phase-5 (data done) record.",
                enum_name: "",
            },
        ],
        "Throttle" => &[
            FieldDef {
                name: "nscope_subgraph",
                ty: Ty::Str,
                unit: "",
                required: false,
                description: "Subgraph name (sg00, sg01) of the physical core.",
                enum_name: "",
            },
            FieldDef {
                name: "nscope_type_code",
                ty: Ty::I32,
                unit: "",
                required: false,
                description: "Raw throttle type w1[15:8] (99 when n = 0, as the JSON export writes it; ntff.md §4.5).",
                enum_name: "",
            },
            FieldDef {
                name: "nscope_raw_w0",
                ty: Ty::I64,
                unit: "",
                required: false,
                description: "Raw first word of the throttle record (w0[7:0] is unknown).",
                enum_name: "",
            },
        ],
        "DmaPacketAggregated" => &[
            FieldDef {
                name: "nscope_subgraph",
                ty: Ty::Str,
                unit: "",
                required: false,
                description: "Subgraph name (sg00, sg01) of the physical core.",
                enum_name: "",
            },
            FieldDef {
                name: "nscope_engine_idx",
                ty: Ty::I64,
                unit: "",
                required: false,
                description: "Highest DMA engine of the transfer's packets (the JSON export's `dma_engine` of an aggregated row).",
                enum_name: "",
            },
            FieldDef {
                name: "nscope_crc",
                ty: Ty::I64,
                unit: "",
                required: false,
                description: "CRC of the transfer's last completion packet (the JSON export's `crc` of an aggregated row).",
                enum_name: "",
            },
            FieldDef {
                name: "nscope_packets",
                ty: Ty::I64,
                unit: "",
                required: false,
                description: "DmaPacket rows of the transfer (completion packets included).",
                enum_name: "",
            },
        ],
        "DmaQueuesInfo" => &[
            FieldDef {
                name: "nscope_neff_queue_name",
                ty: Ty::Str,
                unit: "",
                required: false,
                description: "Queue-set name as spelled in the NEFF def.json (qSPDynamicHW), before Explorer's renaming.",
                enum_name: "",
            },
            FieldDef {
                name: "nscope_owner",
                ty: Ty::Str,
                unit: "",
                required: false,
                description: "NEFF def.json dma_queue owner: triggering engine key (sp, pool, act, dve).",
                enum_name: "",
            },
            FieldDef {
                name: "nscope_num_queues",
                ty: Ty::I64,
                unit: "",
                required: false,
                description: "NEFF def.json dma_queue num_queues: hardware queues reserved.",
                enum_name: "",
            },
            FieldDef {
                name: "nscope_semaphore_set",
                ty: Ty::ListI64,
                unit: "",
                required: false,
                description: "NEFF def.json dma_queue semaphore_set: completion semaphore ids, one per queue.",
                enum_name: "",
            },
            FieldDef {
                name: "nscope_subgraph",
                ty: Ty::Str,
                unit: "",
                required: false,
                description: "Subgraph name (sg00, sg01); NTFF queue table rows only.",
                enum_name: "",
            },
            FieldDef {
                name: "nscope_queue_type_code",
                ty: Ty::I32,
                unit: "",
                required: false,
                description: "NTFF queue-table field 3 (2 → weights, absent → unknown; ntff.md §3.3.2).",
                enum_name: "",
            },
            FieldDef {
                name: "nscope_event_id",
                ty: Ty::I64,
                unit: "",
                required: false,
                description: "NTFF queue-table field 5 as signed (−1 in every sample; JSON q_event_id).",
                enum_name: "",
            },
            FieldDef {
                name: "nscope_engine_indices",
                ty: Ty::ListI64,
                unit: "",
                required: false,
                description: "Every DMA engine the NTFF queue table lists for this queue name (engine_idx is the last one, as in the JSON export).",
                enum_name: "",
            },
        ],
        "DeviceProfileList" => &[FieldDef {
            name: "nscope_link",
            ty: Ty::Str,
            unit: "",
            required: false,
            description: "How the device profile relates to the system trace (pairing.md §6): `same capture`, or `same NEFF, different capture: <reason>`, or `unlinked: <reason>`.",
            enum_name: "",
        }],
        _ => &[],
    }
}

/// Looks a table up by Explorer name.
pub fn table_def(name: &str) -> Option<&'static TableDef> {
    explorer::ALL.iter().copied().find(|t| t.name == name)
}

enum Col {
    I64(Int64Builder),
    I32(Int32Builder),
    F32(Float32Builder),
    F64(Float64Builder),
    Bool(BooleanBuilder),
    Str(StringBuilder),
    ListI64(ListBuilder<Int64Builder>),
    ListStr(ListBuilder<StringBuilder>),
}

impl Col {
    fn new(ty: Ty) -> Self {
        match ty {
            Ty::I64 => Col::I64(Int64Builder::new()),
            Ty::I32 => Col::I32(Int32Builder::new()),
            Ty::F32 => Col::F32(Float32Builder::new()),
            Ty::F64 => Col::F64(Float64Builder::new()),
            Ty::Bool => Col::Bool(BooleanBuilder::new()),
            Ty::Str => Col::Str(StringBuilder::new()),
            Ty::ListI64 => Col::ListI64(ListBuilder::new(Int64Builder::new())),
            Ty::ListStr => Col::ListStr(ListBuilder::new(StringBuilder::new())),
        }
    }
    fn len(&self) -> usize {
        match self {
            Col::I64(b) => b.len(),
            Col::I32(b) => b.len(),
            Col::F32(b) => b.len(),
            Col::F64(b) => b.len(),
            Col::Bool(b) => b.len(),
            Col::Str(b) => b.len(),
            Col::ListI64(b) => b.len(),
            Col::ListStr(b) => b.len(),
        }
    }
    fn null(&mut self) {
        match self {
            Col::I64(b) => b.append_null(),
            Col::I32(b) => b.append_null(),
            Col::F32(b) => b.append_null(),
            Col::F64(b) => b.append_null(),
            Col::Bool(b) => b.append_null(),
            Col::Str(b) => b.append_null(),
            Col::ListI64(b) => b.append_null(),
            Col::ListStr(b) => b.append_null(),
        }
    }
    fn finish(&mut self) -> ArrayRef {
        match self {
            Col::I64(b) => Arc::new(b.finish()),
            Col::I32(b) => Arc::new(b.finish()),
            Col::F32(b) => Arc::new(b.finish()),
            Col::F64(b) => Arc::new(b.finish()),
            Col::Bool(b) => Arc::new(b.finish()),
            Col::Str(b) => Arc::new(b.finish()),
            Col::ListI64(b) => Arc::new(b.finish()),
            Col::ListStr(b) => Arc::new(b.finish()),
        }
    }
}

/// Builds one table row by row. Set the cells you know with the typed setters (by column index
/// from [`TableDef::col`]); [`TableBuilder::end_row`] fills the rest with null and returns a
/// full batch every [`BATCH_ROWS`] rows. Setting a cell with the wrong type is a programming
/// error and leaves it null (debug builds assert).
pub struct TableBuilder {
    def: &'static TableDef,
    schema: SchemaRef,
    cols: Vec<Col>,
    rows: usize,
    batch_rows: usize,
}

impl TableBuilder {
    /// A builder for `def` with the default batch size.
    pub fn new(def: &'static TableDef) -> Self {
        Self::with_batch_rows(def, BATCH_ROWS)
    }
    /// A builder that cuts batches of `batch_rows` rows.
    pub fn with_batch_rows(def: &'static TableDef, batch_rows: usize) -> Self {
        TableBuilder {
            def,
            schema: def.schema(),
            cols: def.all_fields().map(|f| Col::new(f.ty)).collect(),
            rows: 0,
            batch_rows: batch_rows.max(1),
        }
    }
    /// The table this builder fills.
    pub fn def(&self) -> &'static TableDef {
        self.def
    }
    /// Column index by name (see [`TableDef::col`]).
    pub fn col(&self, name: &str) -> usize {
        self.def.col(name)
    }
    /// Rows in the current (unfinished) batch.
    pub fn pending_rows(&self) -> usize {
        self.rows
    }
    fn slot(&mut self, c: usize) -> Option<&mut Col> {
        let rows = self.rows;
        let col = self.cols.get_mut(c)?;
        debug_assert_eq!(col.len(), rows, "cell set twice in one row");
        (col.len() == rows).then_some(col)
    }
    /// Sets an int64 cell (also accepted by int32 columns when it fits).
    pub fn i64(&mut self, c: usize, v: Option<i64>) {
        match self.slot(c) {
            Some(Col::I64(b)) => b.append_option(v),
            Some(Col::I32(b)) => b.append_option(v.and_then(|v| i32::try_from(v).ok())),
            Some(other) => {
                debug_assert!(false, "i64 into non-integer column {c}");
                other.null()
            }
            None => {}
        }
    }
    /// Sets an int32 cell.
    pub fn i32(&mut self, c: usize, v: Option<i32>) {
        self.i64(c, v.map(i64::from))
    }
    /// Sets a float cell (float32 or double column).
    pub fn f64(&mut self, c: usize, v: Option<f64>) {
        match self.slot(c) {
            Some(Col::F32(b)) => b.append_option(v.map(|v| v as f32)),
            Some(Col::F64(b)) => b.append_option(v),
            Some(other) => {
                debug_assert!(false, "f64 into non-float column {c}");
                other.null()
            }
            None => {}
        }
    }
    /// Sets a bool cell.
    pub fn bool(&mut self, c: usize, v: Option<bool>) {
        match self.slot(c) {
            Some(Col::Bool(b)) => b.append_option(v),
            Some(other) => {
                debug_assert!(false, "bool into non-bool column {c}");
                other.null()
            }
            None => {}
        }
    }
    /// Sets a string cell.
    pub fn str(&mut self, c: usize, v: Option<&str>) {
        match self.slot(c) {
            Some(Col::Str(b)) => b.append_option(v),
            Some(other) => {
                debug_assert!(false, "str into non-string column {c}");
                other.null()
            }
            None => {}
        }
    }
    /// Sets a list<int64> cell.
    pub fn list_i64(&mut self, c: usize, v: &[i64]) {
        match self.slot(c) {
            Some(Col::ListI64(b)) => {
                b.values().append_slice(v);
                b.append(true)
            }
            Some(other) => {
                debug_assert!(false, "list<int64> into another column {c}");
                other.null()
            }
            None => {}
        }
    }
    /// Sets a list<string> cell.
    pub fn list_str(&mut self, c: usize, v: &[&str]) {
        match self.slot(c) {
            Some(Col::ListStr(b)) => {
                for s in v {
                    b.values().append_value(s);
                }
                b.append(true)
            }
            Some(other) => {
                debug_assert!(false, "list<string> into another column {c}");
                other.null()
            }
            None => {}
        }
    }
    /// Closes the row (unset cells become null). Returns a batch when [`BATCH_ROWS`] rows are full.
    pub fn end_row(&mut self) -> Result<Option<RecordBatch>> {
        self.rows += 1;
        for col in &mut self.cols {
            if col.len() < self.rows {
                col.null();
            }
        }
        if self.rows >= self.batch_rows {
            return self.take_batch().map(Some);
        }
        Ok(None)
    }
    /// Finishes the current batch (possibly empty).
    pub fn take_batch(&mut self) -> Result<RecordBatch> {
        let arrays: Vec<ArrayRef> = self.cols.iter_mut().map(Col::finish).collect();
        self.rows = 0;
        Ok(RecordBatch::try_new(self.schema.clone(), arrays)?)
    }
}

/// Where finished batches go: memory ([`Tables`]), a Parquet writer, IPC.
pub trait TableSink {
    /// Receives one batch of `def`.
    fn batch(&mut self, def: &'static TableDef, batch: RecordBatch) -> Result<()>;
}

/// Feeds rows into a builder and forwards full batches to a sink; `finish` flushes the rest.
pub struct Emitter<'s> {
    pub b: TableBuilder,
    sink: &'s mut dyn TableSink,
    rows: u64,
}

impl<'s> Emitter<'s> {
    /// A builder for `def` whose batches go to `sink`.
    pub fn new(def: &'static TableDef, sink: &'s mut dyn TableSink) -> Self {
        Emitter {
            b: TableBuilder::new(def),
            sink,
            rows: 0,
        }
    }
    /// Closes the current row, forwarding a full batch.
    pub fn end_row(&mut self) -> Result<()> {
        self.rows += 1;
        if let Some(batch) = self.b.end_row()? {
            self.sink.batch(self.b.def(), batch)?;
        }
        Ok(())
    }
    /// Forwards the last partial batch. A table without rows is not written at all (Explorer:
    /// "a table exists only if the profile contains that kind of activity"). Returns the number
    /// of rows written.
    pub fn finish(mut self) -> Result<u64> {
        if self.b.pending_rows() > 0 {
            let batch = self.b.take_batch()?;
            self.sink.batch(self.b.def(), batch)?;
        }
        Ok(self.rows)
    }
}

/// Tables collected in memory, by Explorer name, in insertion order of first batch.
#[derive(Default)]
pub struct Tables {
    pub tables: BTreeMap<&'static str, (&'static TableDef, Vec<RecordBatch>)>,
}

impl Tables {
    /// Rows of table `name` (0 when absent).
    pub fn rows(&self, name: &str) -> usize {
        self.tables
            .get(name)
            .map(|(_, b)| b.iter().map(|b| b.num_rows()).sum())
            .unwrap_or(0)
    }
    /// Batches of `name`, if the table exists.
    pub fn get(&self, name: &str) -> Option<&[RecordBatch]> {
        self.tables.get(name).map(|(_, b)| b.as_slice())
    }
    /// All batches of `name` concatenated into one (for tests and small tables). The batches may
    /// hold a projection of the table's columns (see `profile`'s span collector): the first
    /// batch's schema is used.
    pub fn concat(&self, name: &str) -> Option<RecordBatch> {
        let (def, batches) = self.tables.get(name)?;
        let schema = batches
            .first()
            .map(|b| b.schema())
            .unwrap_or_else(|| def.schema());
        arrow_select::concat::concat_batches(&schema, batches.iter()).ok()
    }
}

impl TableSink for Tables {
    fn batch(&mut self, def: &'static TableDef, batch: RecordBatch) -> Result<()> {
        let e = self.tables.entry(def.name).or_insert((def, Vec::new()));
        if batch.num_rows() > 0 || e.1.is_empty() {
            e.1.push(batch);
        }
        Ok(())
    }
}

/// Writes the `SchemaFields` rows describing `tables` (every field of each, extras included).
pub fn schema_fields(tables: &[&'static TableDef], sink: &mut dyn TableSink) -> Result<u64> {
    let def = &explorer::SCHEMA_FIELDS;
    let mut e = Emitter::new(def, sink);
    let c = |n| def.col(n);
    let (tn, td, fname, fd, ft, freq, ff, fu, fe) = (
        c("table_name"),
        c("table_description"),
        c("field_name"),
        c("field_description"),
        c("field_type"),
        c("field_required"),
        c("field_format"),
        c("field_unit"),
        c("field_enum_values"),
    );
    for t in tables {
        for f in t.all_fields() {
            let (ty, fmt) = f.ty.openapi();
            e.b.str(tn, Some(t.name));
            e.b.str(td, Some(t.description));
            e.b.str(fname, Some(f.name));
            e.b.str(fd, Some(f.description));
            e.b.str(ft, Some(ty));
            e.b.bool(freq, Some(f.required));
            e.b.str(ff, (!fmt.is_empty()).then_some(fmt));
            e.b.str(fu, (!f.unit.is_empty()).then_some(f.unit));
            let ev = enum_values(f.enum_name);
            e.b.str(fe, (!ev.is_empty()).then_some(ev));
            e.end_row()?;
        }
    }
    e.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_is_explorer_7_4() {
        // 52 tables in 7.4.0 minus the 3 transient API types = 49 Parquet tables.
        assert_eq!(explorer::ALL.len(), 49);
        let ins = table_def("Instruction").unwrap();
        assert_eq!(ins.fields[0].name, "start_ts");
        assert_eq!(ins.fields[0].unit, "ns");
        assert_eq!(
            ins.schema().field(ins.col("pc")).data_type(),
            &DataType::Int64
        );
    }

    #[test]
    fn builder_nulls_and_batches() {
        let def = &explorer::SEMAPHORE_UPDATE;
        let mut b = TableBuilder::with_batch_rows(def, 2);
        let ts = b.col("timestamp");
        let id = b.col("id");
        b.i64(ts, Some(5));
        assert!(b.end_row().unwrap().is_none());
        b.str(id, Some("S[3]"));
        let batch = b.end_row().unwrap().unwrap();
        assert_eq!(batch.num_rows(), 2);
        assert_eq!(batch.column(ts).null_count(), 1);
        assert_eq!(batch.column(id).null_count(), 1);
        let mut t = Tables::default();
        schema_fields(&[def], &mut t).unwrap();
        assert_eq!(t.rows("SchemaFields"), def.all_fields().count());
    }
}
