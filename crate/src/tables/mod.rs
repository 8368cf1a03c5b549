//! Output tables named, typed and unit-ed after Neuron Explorer's Parquet schema 7.4.0
//! (docs/format/explorer-schema.md §5). [`explorer`] is generated from the spec; this module turns a
//! [`TableDef`] into an Arrow schema, builds bounded [`RecordBatch`]es row by row and collects them.
//!
//! Extra neuronscope columns carry the `nscope_` prefix (explorer-schema.md §1) so they can never
//! collide with a future Explorer field; they are declared in [`extras`].

pub mod explorer;

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::builder::{
    ArrayBuilder, BooleanBuilder, Int64Builder, ListBuilder, StringBuilder,
};
use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, Int32Array, RecordBatch};
use arrow_array::{ArrowPrimitiveType, PrimitiveArray};
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
                let dt = if f.ty == Ty::Str && dict_table(self.name) {
                    dict_type()
                } else {
                    f.ty.data_type()
                };
                let mut fd = Field::new(f.name, dt, true);
                if !f.unit.is_empty() {
                    fd = fd.with_metadata([("unit".to_string(), f.unit.to_string())]);
                }
                fd
            })
            .collect();
        Arc::new(Schema::new(fields))
    }
}

/// Tables whose string columns are Arrow `dictionary<int32, utf8>`: the row-per-event tables,
/// where engine, opcode, track, subgraph, queue and BIR/HLO/NKI names repeat across millions of
/// rows. Each batch carries its own dictionary (bounded by the batch). Parquet stores them as
/// dictionary-encoded BYTE_ARRAY, as before: readers see the same strings.
pub const fn dict_table(table: &str) -> bool {
    str_eq(table, "Instruction") || str_eq(table, "DmaPacket") || str_eq(table, "SemaphoreUpdate")
}

/// `dictionary<int32, utf8>`, the type of the string columns of [`dict_table`]s.
pub fn dict_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
}

/// A string column as plain UTF-8: a dictionary column is decoded, anything else returned
/// as is. For readers that want `StringArray` (tests, Arrow IPC for the page).
pub fn utf8(a: &ArrayRef) -> ArrayRef {
    use arrow_array::cast::AsArray;
    match a.data_type() {
        DataType::Dictionary(k, _) if **k == DataType::Int32 => {
            let d = a.as_dictionary::<arrow_array::types::Int32Type>();
            arrow_select::take::take(d.values(), d.keys(), None).unwrap_or_else(|_| a.clone())
        }
        _ => a.clone(),
    }
}

/// `batch` with every dictionary column decoded to plain UTF-8 ([`utf8`]).
pub fn plain_batch(batch: &RecordBatch) -> RecordBatch {
    if !batch
        .schema()
        .fields()
        .iter()
        .any(|f| matches!(f.data_type(), DataType::Dictionary(..)))
    {
        return batch.clone();
    }
    let cols: Vec<ArrayRef> = batch.columns().iter().map(utf8).collect();
    let fields: Vec<Field> = batch
        .schema()
        .fields()
        .iter()
        .zip(&cols)
        .map(|(f, c)| f.as_ref().clone().with_data_type(c.data_type().clone()))
        .collect();
    let schema = Arc::new(Schema::new_with_metadata(
        fields,
        batch.schema().metadata().clone(),
    ));
    RecordBatch::try_new(schema, cols).unwrap_or_else(|_| batch.clone())
}

/// Row access to a string column, plain `utf8` or `dictionary<int32, utf8>`, without decoding.
#[derive(Clone, Copy)]
pub enum StrCol<'a> {
    /// A plain string array.
    Plain(&'a arrow_array::StringArray),
    /// Keys into a dictionary of values.
    Dict(&'a arrow_array::Int32Array, &'a arrow_array::StringArray),
}

impl<'a> StrCol<'a> {
    /// The column as a string column, `None` for another type.
    pub fn of(a: &'a dyn arrow_array::Array) -> Option<Self> {
        use arrow_array::cast::AsArray;
        match a.data_type() {
            DataType::Utf8 => Some(StrCol::Plain(a.as_string::<i32>())),
            DataType::Dictionary(k, v) if **k == DataType::Int32 && **v == DataType::Utf8 => {
                let d = a.as_dictionary::<arrow_array::types::Int32Type>();
                Some(StrCol::Dict(d.keys(), d.values().as_string::<i32>()))
            }
            _ => None,
        }
    }
    /// Column `name` of `b` as a string column.
    pub fn by_name(b: &'a RecordBatch, name: &str) -> Option<Self> {
        Self::of(b.column_by_name(name)?.as_ref())
    }
    /// Row `i`, `None` when null or out of range.
    pub fn get(&self, i: usize) -> Option<&'a str> {
        use arrow_array::Array;
        match self {
            StrCol::Plain(a) => (i < a.len() && a.is_valid(i)).then(|| a.value(i)),
            StrCol::Dict(k, v) => {
                if i >= k.len() || k.is_null(i) {
                    return None;
                }
                let key = usize::try_from(k.value(i)).ok()?;
                (key < v.len() && v.is_valid(key)).then(|| v.value(key))
            }
        }
    }
    /// The dictionary key of row `i` (a dictionary column, the row valid and its key in range:
    /// [`Self::get`] is then a function of the key alone), else `None`. Lets a reader resolve
    /// each distinct value of a batch once.
    #[inline]
    pub fn key(&self, i: usize) -> Option<usize> {
        use arrow_array::Array;
        match self {
            StrCol::Plain(_) => None,
            StrCol::Dict(k, v) => {
                if i >= k.len() || k.is_null(i) {
                    return None;
                }
                usize::try_from(k.value(i))
                    .ok()
                    .filter(|&key| key < v.len())
            }
        }
    }
    /// Distinct values of a dictionary column (the length of its values array), 0 for a plain
    /// one: the size of a table indexed by [`Self::key`].
    pub fn dict_len(&self) -> usize {
        use arrow_array::Array;
        match self {
            StrCol::Plain(_) => 0,
            StrCol::Dict(_, v) => v.len(),
        }
    }
    /// Rows.
    pub fn len(&self) -> usize {
        use arrow_array::Array;
        match self {
            StrCol::Plain(a) => a.len(),
            StrCol::Dict(k, _) => k.len(),
        }
    }
    /// No rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A primitive column under construction: its values, and a validity bitmap only from the
/// first null on (most columns never get one). The same array as arrow-rs's
/// `PrimitiveBuilder` gives; its `append_value` is a call per cell in the wasm build (LLVM does
/// not inline it there: ≈ 7 % of the page's decode of the 200 MB real-mix NTFF in a Node
/// profile), this one's push is inlined into the row writers.
#[doc(hidden)]
pub struct Prim<T: ArrowPrimitiveType> {
    values: Vec<T::Native>,
    nulls: Option<Validity>,
}

/// A validity bitmap under construction, 64 bits at a time: an append is a shift and an or
/// in a word, not arrow-rs `BooleanBufferBuilder`'s byte resize (a `memset` call every eight
/// cells: most of the attribution columns' cost in the instruction-dense decode).
struct Validity {
    words: Vec<u64>,
    /// Bits of the word being filled (low first), `len % 64` of them.
    cur: u64,
    len: usize,
}

impl Validity {
    /// `len` valid bits, room for `cap`.
    fn valid(len: usize, cap: usize) -> Self {
        let mut words = Vec::with_capacity(cap.max(len).div_ceil(64));
        words.resize(len / 64, u64::MAX);
        let rest = len % 64;
        Validity {
            words,
            cur: if rest == 0 { 0 } else { (1u64 << rest) - 1 },
            len,
        }
    }
    #[inline(always)]
    fn push(&mut self, valid: bool) {
        self.cur |= u64::from(valid) << (self.len % 64);
        self.len += 1;
        if self.len.is_multiple_of(64) {
            self.words.push(self.cur);
            self.cur = 0;
        }
    }
    /// Appends `n` bits of `valid`.
    fn push_n(&mut self, mut n: usize, valid: bool) {
        // Up to a word boundary bit by bit, then whole words, then the rest.
        while n > 0 && !self.len.is_multiple_of(64) {
            self.push(valid);
            n -= 1;
        }
        let fill = if valid { u64::MAX } else { 0 };
        self.words.extend(std::iter::repeat_n(fill, n / 64));
        self.len += n / 64 * 64;
        for _ in 0..n % 64 {
            self.push(valid);
        }
    }
    fn finish(self) -> arrow_buffer::NullBuffer {
        let Validity {
            mut words,
            cur,
            len,
        } = self;
        if !len.is_multiple_of(64) {
            words.push(cur);
        }
        let bits = arrow_buffer::BooleanBuffer::new(arrow_buffer::Buffer::from_vec(words), 0, len);
        arrow_buffer::NullBuffer::new(bits)
    }
}

impl<T: ArrowPrimitiveType> Prim<T> {
    fn with_capacity(cap: usize) -> Self {
        Prim {
            values: Vec::with_capacity(cap),
            nulls: None,
        }
    }
    #[inline(always)]
    fn len(&self) -> usize {
        self.values.len()
    }
    #[inline(always)]
    fn append_value(&mut self, v: T::Native) {
        self.values.push(v);
        if let Some(n) = &mut self.nulls {
            n.push(true);
        }
    }
    #[inline(always)]
    fn append_option(&mut self, v: Option<T::Native>) {
        match v {
            Some(v) => self.append_value(v),
            None => self.append_nulls(1),
        }
    }
    fn append_nulls(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        let (len, cap) = (self.values.len(), self.values.capacity());
        self.nulls
            .get_or_insert_with(|| Validity::valid(len, cap.max(len + n)))
            .push_n(n, false);
        self.values.resize(len + n, T::Native::default());
    }
    /// The array; the column starts again empty with room for `cap` rows.
    fn finish(&mut self, cap: usize) -> PrimitiveArray<T> {
        let values = std::mem::replace(&mut self.values, Vec::with_capacity(cap));
        let nulls = self.nulls.take().map(Validity::finish);
        PrimitiveArray::new(values.into(), nulls)
    }
}

/// A dictionary string column under construction: keys per row, each distinct value stored
/// once per batch. A value equal to the previous row's is found without hashing.
#[doc(hidden)]
pub struct DictCol {
    keys: Prim<Int32Type>,
    values: StringBuilder,
    index: hashbrown::HashTable<i32>,
    hasher: rustc_hash::FxBuildHasher,
    last: Option<i32>,
    /// Rows per batch: the keys builder of the next batch starts at this capacity.
    cap: usize,
}

impl DictCol {
    fn new(cap: usize) -> Self {
        DictCol {
            cap,
            keys: Prim::with_capacity(cap),
            values: StringBuilder::new(),
            index: hashbrown::HashTable::new(),
            hasher: rustc_hash::FxBuildHasher,
            last: None,
        }
    }
    fn value(values: &StringBuilder, k: i32) -> &[u8] {
        let o = values.offsets_slice();
        let k = k as usize;
        match (o.get(k), o.get(k + 1)) {
            (Some(&a), Some(&b)) => values
                .values_slice()
                .get(a as usize..b as usize)
                .unwrap_or(&[]),
            _ => &[],
        }
    }
    #[inline]
    fn append(&mut self, v: &str) {
        self.append_key(v);
    }
    /// Appends `v`, returning its key in this batch's dictionary.
    fn append_key(&mut self, v: &str) -> i32 {
        use std::hash::BuildHasher;
        if let Some(k) = self.last {
            if Self::value(&self.values, k) == v.as_bytes() {
                self.keys.append_value(k);
                return k;
            }
        }
        let h = self.hasher.hash_one(v.as_bytes());
        let values = &self.values;
        let k = match self
            .index
            .find(h, |&k| Self::value(values, k) == v.as_bytes())
        {
            Some(&k) => k,
            None => {
                let k = self.values.len() as i32;
                self.values.append_value(v);
                let (values, hasher) = (&self.values, &self.hasher);
                self.index
                    .insert_unique(h, k, |&k| hasher.hash_one(Self::value(values, k)));
                k
            }
        };
        self.last = Some(k);
        self.keys.append_value(k);
        k
    }
    fn finish(&mut self) -> ArrayRef {
        // A new builder of a batch's capacity (`finish` would leave an empty one that doubles
        // its way back up, copying every time).
        let keys = self.keys.finish(self.cap);
        let values = Arc::new(self.values.finish());
        self.index.clear();
        self.last = None;
        Arc::new(dictionary(keys, values))
    }
}

/// `keys` over `values` as a dictionary array; an empty one if a key is out of range (a logic
/// error of a [`Memo`] user, never input-dependent). The range check is one branch-free pass
/// (`try_new` tests each key's validity bit first: ≈ 3 % of the instruction-dense decode).
fn dictionary(keys: Int32Array, values: ArrayRef) -> arrow_array::DictionaryArray<Int32Type> {
    let n = values.len();
    // Null slots hold 0 (`Prim::append_nulls`), in range whenever a value exists.
    let max = keys.values().iter().fold(0u32, |m, &k| m.max(k as u32));
    if keys.is_empty() || (max as usize) < n {
        // SAFETY: every key, null slots included, is in 0..values.len() (checked just above;
        // a negative key wraps to a u32 above any length), and `values` is a `StringArray`
        // (the keys' type is Int32), which is all `DictionaryArray` requires.
        unsafe { arrow_array::DictionaryArray::new_unchecked(keys, values) }
    } else {
        arrow_array::DictionaryArray::new(
            Int32Array::new_null(0),
            Arc::new(arrow_array::StringArray::new_null(0)),
        )
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

const INSTRUCTION_EXTRAS: &[FieldDef] = &[
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
        ];

const SEMAPHORE_UPDATE_EXTRAS: &[FieldDef] = &[
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
];

const DMA_PACKET_EXTRAS: &[FieldDef] = &[
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
        ];

const THROTTLE_EXTRAS: &[FieldDef] = &[
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
        ];

const DMA_PACKET_AGGREGATED_EXTRAS: &[FieldDef] = &[
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
        ];

const DMA_QUEUES_INFO_EXTRAS: &[FieldDef] = &[
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
        ];

const DEVICE_PROFILE_LIST_EXTRAS: &[FieldDef] = &[FieldDef {
            name: "nscope_link",
            ty: Ty::Str,
            unit: "",
            required: false,
            description: "How the device profile relates to the system trace (pairing.md §6): `same capture`, or `same NEFF, different capture: <reason>`, or `unlinked: <reason>`.",
            enum_name: "",
        }];

/// neuronscope's extra columns (`nscope_` prefix) per table: raw values kept for inspection.
/// A `const fn` so typed column ids ([`C::of`]) resolve extras at compile time.
pub const fn extras(table: &str) -> &'static [FieldDef] {
    if str_eq(table, "Instruction") {
        INSTRUCTION_EXTRAS
    } else if str_eq(table, "SemaphoreUpdate") {
        SEMAPHORE_UPDATE_EXTRAS
    } else if str_eq(table, "DmaPacket") {
        DMA_PACKET_EXTRAS
    } else if str_eq(table, "Throttle") {
        THROTTLE_EXTRAS
    } else if str_eq(table, "DmaPacketAggregated") {
        DMA_PACKET_AGGREGATED_EXTRAS
    } else if str_eq(table, "DmaQueuesInfo") {
        DMA_QUEUES_INFO_EXTRAS
    } else if str_eq(table, "DeviceProfileList") {
        DEVICE_PROFILE_LIST_EXTRAS
    } else {
        &[]
    }
}

/// Looks a table up by Explorer name.
pub fn table_def(name: &str) -> Option<&'static TableDef> {
    explorer::ALL.iter().copied().find(|t| t.name == name)
}

/// `a == b`, usable in `const fn` (column ids are resolved at compile time).
pub const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Marker types of the column kinds, for typed column ids ([`C`]).
pub mod kind {
    /// int64 column.
    #[derive(Debug, Clone, Copy)]
    pub struct I64;
    /// int32 column.
    #[derive(Debug, Clone, Copy)]
    pub struct I32;
    /// float32 column.
    #[derive(Debug, Clone, Copy)]
    pub struct F32;
    /// float64 column.
    #[derive(Debug, Clone, Copy)]
    pub struct F64;
    /// bool column.
    #[derive(Debug, Clone, Copy)]
    pub struct Bool;
    /// UTF-8 string column.
    #[derive(Debug, Clone, Copy)]
    pub struct Str;
    /// list<int64> column.
    #[derive(Debug, Clone, Copy)]
    pub struct ListI64;
    /// list<string> column.
    #[derive(Debug, Clone, Copy)]
    pub struct ListStr;
}

/// The [`Ty`] a marker type of [`kind`] stands for.
pub trait Kind {
    /// The column type.
    const TY: Ty;
}
macro_rules! kinds {
    ($($k:ident),*) => { $(impl Kind for kind::$k { const TY: Ty = Ty::$k; })* };
}
kinds!(I64, I32, F32, F64, Bool, Str, ListI64, ListStr);

/// A typed column id: the index of a field in [`TableDef::all_fields`] order, with its kind.
/// Built by [`C::of`] in a `const` item, so a misspelt field name or a wrong kind is a compile
/// error (const evaluation fails), not a run-time panic.
pub struct C<K> {
    idx: usize,
    _k: std::marker::PhantomData<K>,
}
impl<K> Clone for C<K> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<K> Copy for C<K> {}

impl<K: Kind> C<K> {
    /// The column `name` of `def` (Explorer fields, then `nscope_` extras). Panics — at compile
    /// time when used in a `const` — when the table has no such field or its type is not `K`.
    pub const fn of(def: &TableDef, name: &str) -> C<K> {
        let mut i = 0;
        while i < def.fields.len() {
            if str_eq(def.fields[i].name, name) {
                return Self::checked(i, def.fields[i].ty);
            }
            i += 1;
        }
        let ex = extras(def.name);
        let mut j = 0;
        while j < ex.len() {
            if str_eq(ex[j].name, name) {
                return Self::checked(def.fields.len() + j, ex[j].ty);
            }
            j += 1;
        }
        panic!("no such field in this table")
    }
    const fn checked(idx: usize, ty: Ty) -> C<K> {
        assert!(ty as u8 == K::TY as u8, "field has another type");
        C {
            idx,
            _k: std::marker::PhantomData,
        }
    }
    /// Column index in the table's schema.
    pub const fn idx(self) -> usize {
        self.idx
    }
}

/// Declares typed column ids of one table: `cols!(pub mod ins = INSTRUCTION { START_TS: I64 = "start_ts", … })`.
#[macro_export]
macro_rules! cols {
    ($vis:vis mod $m:ident = $def:path { $($id:ident : $k:ident = $name:literal),* $(,)? }) => {
        #[allow(dead_code)]
        $vis mod $m {
            use $crate::tables::{kind, C};
            $(pub const $id: C<kind::$k> = C::of(&$def, $name);)*
        }
    };
}

/// One column under construction. `Unset` until a row sets a cell: a column no row fills
/// costs nothing and becomes one null array per batch.
#[doc(hidden)]
pub enum Col {
    Unset,
    I64(Prim<Int64Type>),
    I32(Prim<Int32Type>),
    F32(Prim<Float32Type>),
    F64(Prim<Float64Type>),
    Bool(BooleanBuilder),
    Str(StringBuilder),
    Dict(Box<DictCol>),
    ListI64(ListBuilder<Int64Builder>),
    ListStr(ListBuilder<StringBuilder>),
}

impl Col {
    fn new_in(ty: Ty, cap: usize, dict: bool) -> Self {
        if dict && ty == Ty::Str {
            return Col::Dict(Box::new(DictCol::new(cap)));
        }
        Self::new(ty, cap)
    }
    fn new(ty: Ty, cap: usize) -> Self {
        match ty {
            Ty::I64 => Col::I64(Prim::with_capacity(cap)),
            Ty::I32 => Col::I32(Prim::with_capacity(cap)),
            Ty::F32 => Col::F32(Prim::with_capacity(cap)),
            Ty::F64 => Col::F64(Prim::with_capacity(cap)),
            Ty::Bool => Col::Bool(BooleanBuilder::with_capacity(cap)),
            Ty::Str => Col::Str(StringBuilder::with_capacity(cap, cap * 8)),
            Ty::ListI64 => Col::ListI64(ListBuilder::new(Int64Builder::new())),
            Ty::ListStr => Col::ListStr(ListBuilder::new(StringBuilder::new())),
        }
    }
    fn len(&self) -> usize {
        match self {
            Col::Unset => 0,
            Col::I64(b) => b.len(),
            Col::I32(b) => b.len(),
            Col::F32(b) => b.len(),
            Col::F64(b) => b.len(),
            Col::Bool(b) => b.len(),
            Col::Str(b) => b.len(),
            Col::Dict(b) => b.keys.len(),
            Col::ListI64(b) => b.len(),
            Col::ListStr(b) => b.len(),
        }
    }
    /// Appends `n` nulls (bulk: one call per gap, not one per cell).
    fn nulls(&mut self, n: usize) {
        match self {
            Col::Unset => {}
            Col::I64(b) => b.append_nulls(n),
            Col::I32(b) => b.append_nulls(n),
            Col::F32(b) => b.append_nulls(n),
            Col::F64(b) => b.append_nulls(n),
            Col::Bool(b) => b.append_nulls(n),
            Col::Str(b) => b.append_nulls(n),
            Col::Dict(b) => b.keys.append_nulls(n),
            Col::ListI64(b) => (0..n).for_each(|_| b.append_null()),
            Col::ListStr(b) => (0..n).for_each(|_| b.append_null()),
        }
    }
    /// The column's array of `rows` rows (nulls padded), `None` when no row set it. The builder is replaced by a new one
    /// of `cap` rows, so the next batch appends without regrowing (`finish` alone would leave
    /// an empty builder that doubles its way back up, copying every time).
    fn finish(&mut self, rows: usize, cap: usize) -> Option<ArrayRef> {
        let gap = rows.saturating_sub(self.len());
        self.nulls(gap);
        let ty = match self {
            Col::Unset => return None,
            Col::Dict(d) => return Some(d.finish()),
            Col::I64(_) => Ty::I64,
            Col::I32(_) => Ty::I32,
            Col::F32(_) => Ty::F32,
            Col::F64(_) => Ty::F64,
            Col::Bool(_) => Ty::Bool,
            Col::Str(_) => Ty::Str,
            Col::ListI64(_) => Ty::ListI64,
            Col::ListStr(_) => Ty::ListStr,
        };
        let next = Col::new(ty, cap);
        Some(match std::mem::replace(self, next) {
            Col::Unset => return None,
            // (The replaced column is dropped: no room kept.)
            Col::I64(mut b) => Arc::new(b.finish(0)),
            Col::I32(mut b) => Arc::new(b.finish(0)),
            Col::F32(mut b) => Arc::new(b.finish(0)),
            Col::F64(mut b) => Arc::new(b.finish(0)),
            Col::Bool(mut b) => Arc::new(b.finish()),
            Col::Str(mut b) => Arc::new(b.finish()),
            Col::Dict(mut d) => d.finish(),
            Col::ListI64(mut b) => Arc::new(b.finish()),
            Col::ListStr(mut b) => Arc::new(b.finish()),
        })
    }
}

/// A value that can be put into a column of kind `K` ([`TableBuilder::set`]); `Option` puts
/// null for `None`.
pub trait Cell<K>: Sized {
    /// Appends itself to `col` (already padded to the current row).
    #[doc(hidden)]
    fn put(self, col: &mut Col);
    /// The hot path of [`TableBuilder::set`]: appends itself when `col` is already of the
    /// right variant and holds exactly `rows` cells (no padding due); hands the value back
    /// otherwise, for the general path to create or pad the column first.
    #[doc(hidden)]
    fn put_at(self, col: &mut Col, rows: usize) -> std::result::Result<(), Self>;
}

macro_rules! cells {
    ($k:ident, $variant:ident, $t:ty, $conv:expr) => {
        impl Cell<kind::$k> for $t {
            #[inline]
            fn put(self, col: &mut Col) {
                if let Col::$variant(b) = col {
                    b.append_value(($conv)(self));
                }
            }
            #[inline(always)]
            fn put_at(self, col: &mut Col, rows: usize) -> std::result::Result<(), Self> {
                match col {
                    Col::$variant(b) if b.len() == rows => {
                        b.append_value(($conv)(self));
                        Ok(())
                    }
                    _ => Err(self),
                }
            }
        }
        impl Cell<kind::$k> for Option<$t> {
            #[inline]
            fn put(self, col: &mut Col) {
                if let Col::$variant(b) = col {
                    b.append_option(self.map($conv));
                }
            }
            #[inline(always)]
            fn put_at(self, col: &mut Col, rows: usize) -> std::result::Result<(), Self> {
                match col {
                    Col::$variant(b) if b.len() == rows => {
                        b.append_option(self.map($conv));
                        Ok(())
                    }
                    _ => Err(self),
                }
            }
        }
    };
}
cells!(I64, I64, i64, |v| v);
cells!(I32, I32, i32, |v| v);
cells!(F32, F32, f32, |v| v);
cells!(F64, F64, f64, |v| v);
cells!(Bool, Bool, bool, |v| v);

impl Cell<kind::Str> for &str {
    #[inline]
    fn put(self, col: &mut Col) {
        match col {
            Col::Str(b) => b.append_value(self),
            Col::Dict(d) => d.append(self),
            _ => {}
        }
    }
    #[inline]
    fn put_at(self, col: &mut Col, rows: usize) -> std::result::Result<(), Self> {
        match col {
            Col::Dict(d) if d.keys.len() == rows => {
                d.append(self);
                Ok(())
            }
            // Plain string columns too (the System and Kineto tables): one match, no padding.
            Col::Str(b) if b.len() == rows => {
                b.append_value(self);
                Ok(())
            }
            _ => Err(self),
        }
    }
}
impl Cell<kind::ListI64> for &[i64] {
    #[inline]
    fn put_at(self, _col: &mut Col, _rows: usize) -> std::result::Result<(), Self> {
        // Cold tables only: always the general path.
        Err(self)
    }
    #[inline]
    fn put(self, col: &mut Col) {
        if let Col::ListI64(b) = col {
            b.values().append_slice(self);
            b.append(true)
        }
    }
}
impl<S: AsRef<str>> Cell<kind::ListStr> for &[S] {
    #[inline]
    fn put_at(self, _col: &mut Col, _rows: usize) -> std::result::Result<(), Self> {
        // Cold tables only: always the general path.
        Err(self)
    }
    #[inline]
    fn put(self, col: &mut Col) {
        if let Col::ListStr(b) = col {
            for s in self {
                b.values().append_value(s.as_ref());
            }
            b.append(true)
        }
    }
}
impl Cell<kind::Str> for Option<&str> {
    #[inline]
    fn put(self, col: &mut Col) {
        match (col, self) {
            (Col::Str(b), v) => b.append_option(v),
            (Col::Dict(d), Some(v)) => d.append(v),
            (Col::Dict(d), None) => d.keys.append_nulls(1),
            _ => {}
        }
    }
    #[inline]
    fn put_at(self, col: &mut Col, rows: usize) -> std::result::Result<(), Self> {
        match (col, self) {
            (Col::Dict(d), Some(v)) if d.keys.len() == rows => {
                d.append(v);
                Ok(())
            }
            (_, v) => Err(v),
        }
    }
}

/// A caller-held memo of one value's key in one dictionary column of a [`TableBuilder`], valid
/// for the batch it was made in. Lets a decoder that knows a string is the same as before
/// (an engine name, the BIR name of a pc) append its key without hashing or comparing text.
/// One memo per (column, value): reusing a memo for another value or column is a logic error.
#[derive(Debug, Clone, Copy, Default)]
pub struct Memo {
    batch: u32,
    key: i32,
}

/// The [`Memo`]s of a fixed group of `N` string columns always set together (the nine names of
/// an instruction slot): one batch check for the group instead of one per column, and the
/// values looked at only when the batch changes ([`TableBuilder::set_memo_group`]). Same rules
/// as [`Memo`]: one group per (columns, values).
#[derive(Debug, Clone, Copy)]
pub struct MemoGroup<const N: usize> {
    batch: u32,
    /// Per column, the value's key in this batch; -1 when the value is absent (cell left null).
    keys: [i32; N],
}

impl<const N: usize> Default for MemoGroup<N> {
    fn default() -> Self {
        MemoGroup {
            batch: 0,
            keys: [-1; N],
        }
    }
}

/// Builds one table column by column, a row at a time. Set the cells you know by typed id
/// ([`TableBuilder::set`], ids from [`cols!`]); rows leave through
/// [`TableBuilder::end_row_into`] (a full batch every [`BATCH_ROWS`] rows goes to the sink) and
/// [`TableBuilder::finish_into`] (the rest). Closing a row is O(1): cells not set stay null,
/// padded in bulk when the column is next touched or the batch is cut, and a column no row of a
/// batch sets is one null array. Setting a cell twice in a row is a programming error (debug
/// builds assert; release keeps the first value).
pub struct TableBuilder {
    def: &'static TableDef,
    schema: SchemaRef,
    /// Strings of this table are dictionary columns ([`dict_table`]).
    dict: bool,
    /// Batch number (from 1), the validity stamp of [`Memo`]s.
    batch: u32,
    /// Rows closed since the builder was made, all batches ([`TableBuilder::finish_into`]).
    total: u64,
    /// Written by [`TableBuilder::finish_into`] even without rows ([`TableBuilder::always_written`]).
    always: bool,
    cols: Vec<Col>,
    rows: usize,
    batch_rows: usize,
    /// All-null arrays of a full batch per column, shared by every batch (arrays are
    /// immutable), so an unset column costs one allocation per table, not one per batch.
    null_full: Vec<Option<ArrayRef>>,
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
            dict: dict_table(def.name),
            batch: 1,
            total: 0,
            always: false,
            cols: def.all_fields().map(|_| Col::Unset).collect(),
            null_full: def.all_fields().map(|_| None).collect(),
            rows: 0,
            batch_rows: batch_rows.max(1),
        }
    }
    /// This builder's table is written by [`Self::finish_into`] even when no row was added: the
    /// event tables of a decoded NTFF, which the page and the CLI list for every device profile.
    /// Every other table exists only if the profile contains that kind of activity (Explorer).
    pub fn always_written(mut self) -> Self {
        self.always = true;
        self
    }
    /// The table this builder fills.
    pub fn def(&self) -> &'static TableDef {
        self.def
    }
    /// Rows in the current (unfinished) batch.
    pub fn pending_rows(&self) -> usize {
        self.rows
    }
    #[inline]
    fn slot_typed<K: Kind>(&mut self, c: C<K>) -> Option<&mut Col> {
        self.slot_as(c.idx, K::TY)
    }
    /// The column `c` of type `ty` (known at compile time for typed ids), created on first use
    /// and padded with nulls up to the current row; `None` when the cell of this row is already
    /// set or `c` is out of range.
    #[inline]
    fn slot_as(&mut self, c: usize, ty: Ty) -> Option<&mut Col> {
        let rows = self.rows;
        let cap = self.batch_rows.min(BATCH_ROWS);
        let dict = self.dict;
        let col = self.cols.get_mut(c)?;
        if let Col::Unset = col {
            *col = Col::new_in(ty, cap, dict);
        }
        let len = col.len();
        debug_assert!(len <= rows, "cell set twice in one row");
        if len < rows {
            col.nulls(rows - len);
        }
        (len <= rows).then_some(col)
    }
    /// Sets the cell of column `c` (typed: the value's type must fit the column's kind).
    #[inline(always)]
    pub fn set<K: Kind, V: Cell<K>>(&mut self, c: C<K>, v: V) {
        let rows = self.rows;
        // Hot path: the column exists and is filled up to this row (one variant match).
        let v = match self.cols.get_mut(c.idx) {
            Some(col) => match v.put_at(col, rows) {
                Ok(()) => return,
                Err(v) => v,
            },
            None => return,
        };
        self.set_slow(c, v);
    }
    /// [`Self::set`] when the column is yet unset or has rows to pad first.
    #[cold]
    #[inline(never)]
    fn set_slow<K: Kind, V: Cell<K>>(&mut self, c: C<K>, v: V) {
        if let Some(col) = self.slot_typed(c) {
            v.put(col);
        }
    }
    /// Sets string cell `c` to `v`, through `memo`: when `memo` was made for this column in this
    /// batch, its key is appended without looking at `v`. The caller guarantees `memo` is only
    /// ever used for this column and this value.
    #[inline(always)]
    pub fn set_memo(&mut self, c: C<kind::Str>, v: &str, memo: &mut Memo) {
        let batch = self.batch;
        // Hot path: a memo of this batch and a column filled up to this row.
        if memo.batch == batch {
            if let Some(Col::Dict(d)) = self.cols.get_mut(c.idx) {
                if d.keys.len() == self.rows {
                    d.keys.append_value(memo.key);
                    return;
                }
            }
        }
        self.set_memo_slow(c, v, memo)
    }
    #[inline(never)]
    fn set_memo_slow(&mut self, c: C<kind::Str>, v: &str, memo: &mut Memo) {
        let batch = self.batch;
        match self.slot_typed(c) {
            Some(Col::Dict(d)) => {
                if memo.batch == batch {
                    d.keys.append_value(memo.key);
                } else {
                    *memo = Memo {
                        batch,
                        key: d.append_key(v),
                    };
                }
            }
            Some(Col::Str(b)) => b.append_value(v),
            _ => {}
        }
    }
    /// Sets string cells `cols[j]` to `value(j)` where it is `Some` (the rest stay null),
    /// through `memo`: within the batch it was made in, the keys are appended without calling
    /// `value`. The caller guarantees `memo` is only used for these columns and these values.
    #[inline]
    pub fn set_memo_group<'v, const N: usize>(
        &mut self,
        cols: &[C<kind::Str>; N],
        memo: &mut MemoGroup<N>,
        value: impl Fn(usize) -> Option<&'v str>,
    ) {
        if memo.batch != self.batch {
            self.refresh_group(cols, memo, value);
            return;
        }
        let rows = self.rows;
        for (c, &k) in cols.iter().zip(&memo.keys) {
            if k < 0 {
                continue;
            }
            match self.cols.get_mut(c.idx) {
                Some(Col::Dict(d)) if d.keys.len() == rows => d.keys.append_value(k),
                _ => self.push_key_slow(*c, k),
            }
        }
    }
    /// [`Self::set_memo_group`]'s key append when the column has rows to pad first.
    #[cold]
    #[inline(never)]
    fn push_key_slow(&mut self, c: C<kind::Str>, k: i32) {
        if let Some(Col::Dict(d)) = self.slot_typed(c) {
            d.keys.append_value(k);
        }
    }
    /// [`Self::set_memo_group`] in a new batch: appends the values, keeping their keys. A
    /// group with a plain (non-dictionary) column stays unmemoised (values appended each time).
    #[cold]
    #[inline(never)]
    fn refresh_group<'v, const N: usize>(
        &mut self,
        cols: &[C<kind::Str>; N],
        memo: &mut MemoGroup<N>,
        value: impl Fn(usize) -> Option<&'v str>,
    ) {
        let mut batch = self.batch;
        for (j, (c, key)) in cols.iter().zip(memo.keys.iter_mut()).enumerate() {
            *key = -1;
            let Some(v) = value(j) else { continue };
            match self.slot_typed(*c) {
                Some(Col::Dict(d)) => *key = d.append_key(v),
                Some(Col::Str(b)) => {
                    b.append_value(v);
                    batch = 0;
                }
                _ => {}
            }
        }
        memo.batch = batch;
    }
    /// Closes the row (unset cells are null) and sends the batch to `sink` when `batch_rows` rows
    /// are full. The one way rows leave a builder, with [`Self::finish_into`].
    #[inline]
    pub fn end_row_into(&mut self, sink: &mut dyn TableSink) -> Result<()> {
        if let Some(batch) = self.end_row()? {
            sink.batch(self.def, batch)?;
        }
        Ok(())
    }
    /// Sends the unfinished batch to `sink`: when it has rows, or when nothing was written yet
    /// and the table is [`Self::always_written`]. Returns the rows this builder has closed in
    /// all batches. The builder stays usable (a new batch starts).
    pub fn finish_into(&mut self, sink: &mut dyn TableSink) -> Result<u64> {
        if self.rows > 0 || (self.always && self.total == 0) {
            let batch = self.take_batch()?;
            sink.batch(self.def, batch)?;
        }
        Ok(self.total)
    }
    /// Closes the row (unset cells are null). Returns a batch when `batch_rows` rows are full.
    #[inline]
    pub fn end_row(&mut self) -> Result<Option<RecordBatch>> {
        self.total += 1;
        self.rows += 1;
        if self.rows >= self.batch_rows {
            return self.take_batch().map(Some);
        }
        Ok(None)
    }
    /// Finishes the current batch (possibly empty).
    pub fn take_batch(&mut self) -> Result<RecordBatch> {
        let rows = self.rows;
        let cap = self.batch_rows.min(BATCH_ROWS);
        let full = rows == self.batch_rows;
        let arrays: Vec<ArrayRef> = self
            .cols
            .iter_mut()
            .zip(self.schema.fields())
            .zip(self.null_full.iter_mut())
            .map(|((c, f), cached)| {
                c.finish(rows, cap).unwrap_or_else(|| {
                    if !full {
                        return arrow_array::new_null_array(f.data_type(), rows);
                    }
                    cached
                        .get_or_insert_with(|| arrow_array::new_null_array(f.data_type(), rows))
                        .clone()
                })
            })
            .collect();
        self.rows = 0;
        self.batch = self.batch.wrapping_add(1).max(1);
        Ok(RecordBatch::try_new(self.schema.clone(), arrays)?)
    }
}

/// Where finished batches go: memory ([`Tables`]), a Parquet writer, IPC.
pub trait TableSink {
    /// Receives one batch of `def`.
    fn batch(&mut self, def: &'static TableDef, batch: RecordBatch) -> Result<()>;
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
    /// All batches of `name` concatenated into one, dictionary string columns decoded to plain
    /// UTF-8 ([`plain_batch`]; each batch has its own dictionary). For tests and small tables.
    /// The batches may hold a projection of the table's columns: the first batch's schema is
    /// used.
    pub fn concat(&self, name: &str) -> Option<RecordBatch> {
        let (def, batches) = self.tables.get(name)?;
        let plain: Vec<RecordBatch> = batches.iter().map(plain_batch).collect();
        let schema = match plain.first() {
            Some(b) => b.schema(),
            None => plain_batch(&RecordBatch::new_empty(def.schema())).schema(),
        };
        arrow_select::concat::concat_batches(&schema, plain.iter()).ok()
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

crate::cols!(mod sf = crate::tables::explorer::SCHEMA_FIELDS {
    TABLE: Str = "table_name",
    TABLE_DESC: Str = "table_description",
    FIELD: Str = "field_name",
    FIELD_DESC: Str = "field_description",
    TYPE: Str = "field_type",
    REQUIRED: Bool = "field_required",
    FORMAT: Str = "field_format",
    UNIT: Str = "field_unit",
    ENUM: Str = "field_enum_values",
});

/// Writes the `SchemaFields` rows describing `tables` (every field of each, extras included).
pub fn schema_fields(tables: &[&'static TableDef], sink: &mut dyn TableSink) -> Result<u64> {
    let mut b = TableBuilder::new(&explorer::SCHEMA_FIELDS);
    for t in tables {
        for f in t.all_fields() {
            let (ty, fmt) = f.ty.openapi();
            b.set(sf::TABLE, t.name);
            b.set(sf::TABLE_DESC, t.description);
            b.set(sf::FIELD, f.name);
            b.set(sf::FIELD_DESC, f.description);
            b.set(sf::TYPE, ty);
            b.set(sf::REQUIRED, f.required);
            b.set(sf::FORMAT, (!fmt.is_empty()).then_some(fmt));
            b.set(sf::UNIT, (!f.unit.is_empty()).then_some(f.unit));
            let ev = enum_values(f.enum_name);
            b.set(sf::ENUM, (!ev.is_empty()).then_some(ev));
            b.end_row_into(sink)?;
        }
    }
    b.finish_into(sink)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Prim` gives the array arrow-rs's `PrimitiveBuilder` gives for the same appends: no
    /// validity without nulls, nulls first, in runs, between values and last; and it starts
    /// empty again after `finish`.
    #[test]
    fn prim_matches_arrow_builder() {
        use arrow_array::Array;
        type Step = (Option<i64>, usize);
        let cases: [&[Step]; 4] = [
            &[(Some(1), 1), (Some(-5), 1), (Some(7), 1)],
            &[(None, 3), (Some(2), 1), (None, 1), (Some(i64::MAX), 1)],
            &[(Some(9), 1), (None, 2), (Some(8), 1), (None, 4)],
            &[],
        ];
        let mut p = Prim::<Int64Type>::with_capacity(2);
        for steps in cases {
            let mut a = Int64Builder::with_capacity(2);
            for &(v, n) in steps {
                match v {
                    Some(v) => {
                        p.append_value(v);
                        a.append_value(v);
                    }
                    None if n == 1 => {
                        p.append_option(None);
                        a.append_option(None);
                    }
                    None => {
                        p.append_nulls(n);
                        a.append_nulls(n);
                    }
                }
            }
            let (got, want) = (p.finish(2), a.finish());
            assert_eq!(got, want);
            assert_eq!(got.nulls().is_some(), want.nulls().is_some());
            assert_eq!(p.len(), 0);
        }
    }

    /// The same over runs that cross 64-bit words: valid prefixes of 0–130 cells, null runs
    /// of 1–200, values between, in a deterministic mix.
    #[test]
    fn prim_validity_across_words() {
        use arrow_array::Array;
        let mut p = Prim::<Int32Type>::with_capacity(16);
        let mut x = 7u32;
        for case in 0..40u32 {
            let mut a = arrow_array::builder::Int32Builder::new();
            for i in 0..(case * 13) % 131 {
                p.append_value(i as i32);
                a.append_value(i as i32);
            }
            for _ in 0..30 {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                let n = (x >> 16) as usize % 200 + 1;
                if x & 1 == 0 {
                    p.append_nulls(n);
                    a.append_nulls(n);
                } else {
                    for k in 0..n {
                        p.append_option(Some(k as i32));
                        a.append_option(Some(k as i32));
                    }
                }
            }
            let (got, want) = (p.finish(16), a.finish());
            assert_eq!(got, want, "case {case}");
            assert_eq!(got.null_count(), want.null_count());
        }
    }

    #[test]
    fn schema_is_explorer_7_4() {
        // 52 tables in 7.4.0 minus the 3 transient API types = 49 Parquet tables.
        assert_eq!(explorer::ALL.len(), 49);
        let ins = table_def("Instruction").unwrap();
        assert_eq!(ins.fields[0].name, "start_ts");
        assert_eq!(ins.fields[0].unit, "ns");
        const PC: C<kind::I64> = C::of(&explorer::INSTRUCTION, "pc");
        assert_eq!(ins.schema().field(PC.idx()).data_type(), &DataType::Int64);
    }

    #[test]
    fn builder_nulls_and_batches() {
        let def = &explorer::SEMAPHORE_UPDATE;
        const TS: C<kind::I64> = C::of(&explorer::SEMAPHORE_UPDATE, "timestamp");
        const ID: C<kind::Str> = C::of(&explorer::SEMAPHORE_UPDATE, "id");
        let mut b = TableBuilder::with_batch_rows(def, 2);
        b.set(TS, 5i64);
        assert!(b.end_row().unwrap().is_none());
        b.set(ID, "S[3]");
        let batch = b.end_row().unwrap().unwrap();
        assert_eq!(batch.num_rows(), 2);
        assert_eq!(batch.column(TS.idx()).null_count(), 1);
        assert_eq!(batch.column(ID.idx()).null_count(), 1);
        let mut t = Tables::default();
        schema_fields(&[def], &mut t).unwrap();
        assert_eq!(t.rows("SchemaFields"), def.all_fields().count());
    }

    /// `set_memo_group` writes the batches `set` writes: values absent in some rows, rows
    /// where the group is not set at all (padding), the same group over batch boundaries (its
    /// keys renewed), two groups alternating.
    #[test]
    fn memo_group_equals_set() {
        let def = &explorer::INSTRUCTION;
        const COLS: [C<kind::Str>; 3] = [
            C::of(&explorer::INSTRUCTION, "bir_instruction_name"),
            C::of(&explorer::INSTRUCTION, "hlo_name"),
            C::of(&explorer::INSTRUCTION, "layer"),
        ];
        let slots: [[Option<&str>; 3]; 2] =
            [[Some("a"), None, Some("L1")], [Some("b"), Some("h"), None]];
        let (mut g, mut p) = (
            TableBuilder::with_batch_rows(def, 4),
            TableBuilder::with_batch_rows(def, 4),
        );
        let mut memos = [MemoGroup::<3>::default(); 2];
        let (mut got, mut want) = (Vec::new(), Vec::new());
        for row in 0..11usize {
            if row % 5 != 3 {
                let k = row % 2;
                let vals = slots[k];
                g.set_memo_group(&COLS, &mut memos[k], |j| vals[j]);
                for (c, v) in COLS.iter().zip(vals) {
                    p.set(*c, v);
                }
            }
            got.extend(g.end_row().unwrap());
            want.extend(p.end_row().unwrap());
        }
        got.push(g.take_batch().unwrap());
        want.push(p.take_batch().unwrap());
        assert_eq!(got.len(), 3);
        for (a, b) in got.iter().zip(&want) {
            assert_eq!(a.num_rows(), b.num_rows());
            for c in COLS {
                let (x, y) = (a.column(c.idx()), b.column(c.idx()));
                let (sx, sy) = (StrCol::of(x.as_ref()), StrCol::of(y.as_ref()));
                for i in 0..a.num_rows() {
                    assert_eq!(sx.and_then(|s| s.get(i)), sy.and_then(|s| s.get(i)));
                }
                assert_eq!(x.null_count(), y.null_count());
            }
        }
    }
}
