//! Sinks for finished tables: Arrow IPC (for the page), Parquet (one file per table, written
//! incrementally; one row group per batch for the page, [`ROW_GROUP_BATCHES`] batches per row
//! group for the files the CLI writes) and a zip bundle of Parquet files.

use std::collections::BTreeMap;
use std::io::{Seek, Write};

use arrow_array::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use crate::error::{Error, Result};
use crate::tables::{TableDef, TableSink, Tables};
use crate::util::on_threads;

/// Encodes `batches` as an uncompressed Arrow IPC stream (apache-arrow JS `tableFromIPC` reads it
/// without codec registration; docs/format/README.md "Implementation notes").
pub fn ipc_stream(def: &TableDef, batches: &[RecordBatch]) -> Result<Vec<u8>> {
    ipc_of(&def.schema(), batches)
}

/// The codec of every Parquet file we write: pure Rust (builds for wasm32) and read by every
/// reader we test (pyarrow, DuckDB, the Rust reader, hyparquet without extra codecs). Chosen by
/// `neuronscope bench --codec` (docs/ARCHITECTURE.md "Parquet").
pub const CODEC: Compression = Compression::LZ4_RAW;

/// Writer properties for one table's Parquet file when no batch is at hand (see
/// [`parquet_props_for`], which the writers use). Per column, by type: integers are
/// DELTA_BINARY_PACKED without a dictionary (times, ids and raw ticks are sorted or nearly so,
/// so their deltas pack into a few bits; a dictionary of distinct timestamps only costs time),
/// floats are BYTE_STREAM_SPLIT, strings keep the dictionary (engine, opcode, queue names are a
/// handful of values). Statistics (per row group, not per page) are on for every non-string
/// column, so a reader can skip row groups by time range; row groups are cut by the writer's
/// flushes alone (no row limit of arrow-rs's own: [`ParquetSink`] closes one after every
/// batch, or every [`ROW_GROUP_BATCHES`] batches).
pub fn parquet_props(def: &TableDef) -> WriterProperties {
    parquet_props_with(def, CODEC)
}

/// Writer properties for a Parquet file that is not an Explorer table (`_profiles.parquet`):
/// [`CODEC`], default encodings.
pub fn default_props() -> WriterProperties {
    WriterProperties::builder()
        .set_compression(CODEC)
        .set_created_by(format!("neuronscope {}", env!("CARGO_PKG_VERSION")))
        .build()
}

/// [`parquet_props`] with another codec (for `bench --codec`).
pub fn parquet_props_with(def: &TableDef, codec: Compression) -> WriterProperties {
    parquet_props_for(def, codec, None)
}

/// Distinct values in a table's first batch up to which a numeric column may be
/// dictionary-encoded (`dictionary_pays` decides for integers; byte counts, durations of a few
/// values: their dictionary indices bit-pack into a few bits and RLE runs, where
/// DELTA_BINARY_PACKED pays for every jump between values; on the 200 MB real-mix NTFF
/// `read_bytes` is 1.17 MB with a dictionary, 3.05 MB with DELTA). Above it (times, ids, raw
/// ticks, CRCs) a dictionary is all cost.
pub const DICT_MAX_DISTINCT: usize = 1024;

/// [`parquet_props_with`], with each integer and float column's encoding chosen from `first`,
/// a batch of the table (the writers give [`sample`] of its first batches): a dictionary (falling back to DELTA_BINARY_PACKED /
/// BYTE_STREAM_SPLIT should it outgrow its page) when `first` holds at most
/// [`DICT_MAX_DISTINCT`] distinct non-null values in that column and, for integers, the
/// dictionary's indices are clearly narrower than DELTA's packing (`dictionary_pays`: every
/// value of a dictionary column is hashed by the writer), else DELTA_BINARY_PACKED /
/// BYTE_STREAM_SPLIT without one. `None`: no dictionary for numbers. Strings: no statistics, and
/// a dictionary unless `first` holds more than [`DICT_MAX_DISTINCT`] distinct values in the
/// column and more than one per two rows (then PLAIN); every other column has min/max statistics (row groups skip by time range). Deterministic in the
/// batch, so every writer given the same first batch writes the same bytes.
pub fn parquet_props_for(
    def: &TableDef,
    codec: Compression,
    first: Option<&RecordBatch>,
) -> WriterProperties {
    use crate::tables::Ty;
    use parquet::basic::Encoding;
    use parquet::file::properties::EnabledStatistics;
    use parquet::schema::types::ColumnPath;
    // Min/max per row group (what skips by time range), not per page: page-level statistics
    // build a column index the writer keeps for every page of the file until it closes, which
    // grew the Parquet step's memory with the NTFF; no reader of ours loads it.
    let mut b = WriterProperties::builder()
        .set_compression(codec)
        .set_statistics_enabled(EnabledStatistics::Chunk)
        // Row groups end where the caller flushes (so the one-thread and the parallel writer
        // cut them alike), never inside a batch at arrow-rs's default of 1 Mi rows.
        .set_max_row_group_row_count(None)
        .set_created_by(format!("neuronscope {}", env!("CARGO_PKG_VERSION")));
    for (i, f) in def.all_fields().enumerate() {
        let path = match f.ty {
            Ty::ListI64 | Ty::ListStr => {
                ColumnPath::new(vec![f.name.into(), "list".into(), "item".into()])
            }
            _ => ColumnPath::from(f.name),
        };
        let fallback = match f.ty {
            Ty::I64 | Ty::I32 | Ty::ListI64 => Encoding::DELTA_BINARY_PACKED,
            Ty::F32 | Ty::F64 => Encoding::BYTE_STREAM_SPLIT,
            // No min/max for strings: arrow-rs compares every row's text to find them (≈ 8 % of
            // the Parquet step on the real-mix NTFF), and no reader skips by a name range.
            Ty::Str => {
                b = b.set_column_statistics_enabled(path.clone(), EnabledStatistics::None);
                // Names with nearly one value per row (the BIR ids and names of a real
                // capture's instructions: 5 349 distinct in 9 344 rows on conv2d): a dictionary
                // stores them all again beside the indices; PLAIN does not (conv2d
                // `Instruction`: 78 → 67 KB for the two columns). DELTA_BYTE_ARRAY would be
                // 35 KB, but pyarrow cannot decode it into a dictionary-typed column.
                let many = first
                    .and_then(|batch| batch.columns().get(i))
                    .is_some_and(|a| many_strings(a.as_ref(), DICT_MAX_DISTINCT));
                if many {
                    b = b
                        .set_column_dictionary_enabled(path.clone(), false)
                        .set_column_encoding(path, Encoding::PLAIN);
                }
                continue;
            }
            Ty::ListStr => {
                b = b.set_column_statistics_enabled(path, EnabledStatistics::None);
                continue;
            }
            Ty::Bool => continue,
        };
        let dict = first
            .and_then(|batch| batch.columns().get(i))
            .is_some_and(|a| dictionary_pays(a.as_ref(), DICT_MAX_DISTINCT));
        b = b
            .set_column_dictionary_enabled(path.clone(), dict)
            .set_column_encoding(path, fallback);
    }
    b.build()
}

/// True when the string column `a` (utf8 or a dictionary of utf8; anything else: false) holds
/// more than `max` distinct values and more than one per two rows: too many for a dictionary
/// to pay.
fn many_strings(a: &dyn arrow_array::Array, max: usize) -> bool {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int32Type;
    use arrow_schema::DataType;
    let distinct = match a.data_type() {
        // Our dictionary columns hold each value of the batch once (`tables::DictCol`).
        DataType::Dictionary(_, _) => a
            .as_dictionary_opt::<Int32Type>()
            .map_or(0, |d| d.values().len()),
        DataType::Utf8 => {
            let mut seen = rustc_hash::FxHashSet::default();
            for v in a.as_string::<i32>().iter().flatten() {
                seen.insert(v);
            }
            seen.len()
        }
        _ => 0,
    };
    distinct > max && distinct > a.len() / 2
}

/// Whether the numeric column `a` (a table's first batch) is dictionary-encoded: it has at
/// least one and at most `max` distinct non-null values (floats compared by bits) and, for
/// integers, its dictionary indices take at most two thirds of the bits DELTA_BINARY_PACKED
/// would spend on it ([`delta_bits`]). The writer hashes every value of a numeric dictionary column
/// (arrow-rs's interner; ≈ 13 % of the page's decode in wasm for the real-mix NTFF's
/// ten such columns), so a dictionary must clearly pay in bytes: engine and queue indices that
/// DELTA packs nearly as tightly (`DmaPacket.engine_idx`: 1.67 MB with a dictionary, 2.13 MB
/// without on the 200 MB real-mix NTFF) do not get one; byte counts and durations do
/// (`read_bytes` 1.16 MB vs 3.02 MB). Floats keep the distinct-count rule alone
/// (BYTE_STREAM_SPLIT: `DmaUsage.current_throughput` 3.1 MB vs 8.3 MB). Anything else: false.
fn dictionary_pays(a: &dyn arrow_array::Array, max: usize) -> bool {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type};
    use arrow_schema::DataType;
    /// Distinct values of `it` when between 1 and `max`, else `None`.
    fn distinct<T: std::hash::Hash + Eq>(it: impl Iterator<Item = T>, max: usize) -> Option<usize> {
        let mut seen = rustc_hash::FxHashSet::default();
        for v in it {
            if seen.insert(v) && seen.len() > max {
                return None;
            }
        }
        (!seen.is_empty()).then_some(seen.len())
    }
    fn few<T: std::hash::Hash + Eq>(it: impl Iterator<Item = T>, max: usize) -> bool {
        distinct(it, max).is_some()
    }
    /// Integers: the distinct-count rule, then dictionary index width against DELTA.
    fn ints(v: Vec<i64>, max: usize) -> bool {
        let Some(n) = distinct(v.iter(), max) else {
            return false;
        };
        // The RLE/bit-packed hybrid's index width for `n` dictionary entries.
        let width = f64::from(usize::BITS - (n - 1).leading_zeros());
        width * 3.0 <= delta_bits(&v) * 2.0
    }
    match a.data_type() {
        DataType::Int64 => ints(
            a.as_primitive::<Int64Type>().iter().flatten().collect(),
            max,
        ),
        DataType::Int32 => ints(
            a.as_primitive::<Int32Type>()
                .iter()
                .flatten()
                .map(i64::from)
                .collect(),
            max,
        ),
        DataType::Float32 => few(
            a.as_primitive::<Float32Type>()
                .iter()
                .flatten()
                .map(f32::to_bits),
            max,
        ),
        DataType::Float64 => few(
            a.as_primitive::<Float64Type>()
                .iter()
                .flatten()
                .map(f64::to_bits),
            max,
        ),
        _ => false,
    }
}

/// Mean bits per value that DELTA_BINARY_PACKED spends on `v` (parquet format Encodings.md:
/// blocks of 128 values, each delta minus its block's smallest delta, bit-packed in miniblocks of
/// 32 at the width of the miniblock's largest; block headers not counted). 0 for fewer than
/// two values. Values as the writer sees them: INT32 deltas wrap in 32 bits there, here they
/// are exact in i128 (a wider estimate only for columns spanning more than 2³¹).
fn delta_bits(v: &[i64]) -> f64 {
    if v.len() < 2 {
        return 0.0;
    }
    let deltas: Vec<i128> = v
        .windows(2)
        .map(|w| i128::from(w[1]) - i128::from(w[0]))
        .collect();
    let mut bits = 0u64;
    for block in deltas.chunks(128) {
        let min = block.iter().copied().min().unwrap_or(0);
        for mini in block.chunks(32) {
            let top = mini.iter().map(|&d| d - min).max().unwrap_or(0) as u128;
            bits += u64::from(128 - top.leading_zeros()) * mini.len() as u64;
        }
    }
    bits as f64 / v.len() as f64
}

/// Encodes one table as a Parquet file in memory (Explorer's `<Table>.parquet`).
pub fn parquet_bytes(def: &TableDef, batches: &[RecordBatch]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let props = parquet_props_for(def, CODEC, sample(batches));
    let mut w = ArrowWriter::try_new(&mut out, def.schema(), Some(props))?;
    for b in batches {
        w.write(b)?;
        w.flush()?; // one row group per batch keeps the writer's buffer bounded
    }
    w.close()?;
    Ok(out)
}

/// Batches per row group of the Parquet files the CLI writes (`convert`, `bench`'s Parquet
/// steps): row groups of up to 8 × [`crate::tables::BATCH_ROWS`] = 512 Ki rows. The writer keeps
/// the footer metadata of every column chunk until the file is closed (≈ 0.8 KB each,
/// measured with arrow-rs 60), so one row group per 64 Ki-row batch grew the Parquet step's
/// memory by ≈ 11 MB per GB of NTFF (docs/ARCHITECTURE.md "Memory" → "Spill"); eight batches
/// cut that eightfold for ≈ 16 MB of open row groups in all (encoded pages and page buffers of
/// every table until its group closes; `DmaPacket` ≈ 15 B a row). The page keeps one row group
/// per batch ([`ParquetSink::new`]): its time-window and row reads decode whole row groups.
pub const ROW_GROUP_BATCHES: usize = 8;

/// A [`TableSink`] that streams every table into its own Parquet writer over `W` (a file
/// natively). Memory stays bounded by one open row group per table (one batch by default,
/// [`ParquetSink::with_row_group_batches`]) plus the footer metadata of the row groups written.
pub struct ParquetSink<W: Write + Send, F: FnMut(&str) -> Result<W>> {
    open: F,
    writers: BTreeMap<&'static str, TableWriter<W>>,
    /// Batches of tables whose writer is not open yet: a table's encodings are chosen from a
    /// sample of at least [`SAMPLE_ROWS`] rows (or all its rows), see [`ParquetSink::batch`].
    pending: BTreeMap<&'static str, (&'static TableDef, Vec<RecordBatch>, usize)>,
    rows: BTreeMap<&'static str, u64>,
    codec: Compression,
    threads: usize,
    group_batches: usize,
}

/// One table's Parquet writer: arrow-rs's `ArrowWriter`, or (natively, with several threads) its
/// file writer and column-writer factory, so the column chunks of a row group are encoded on
/// several threads and appended in schema order (the same bytes as `ArrowWriter`). `batches`:
/// batches in the open row group.
enum TableWriter<W: Write + Send> {
    Arrow {
        w: ArrowWriter<W>,
        batches: usize,
    },
    Parallel {
        file: parquet::file::writer::SerializedFileWriter<W>,
        factory: parquet::arrow::arrow_writer::ArrowRowGroupWriterFactory,
        schema: arrow_schema::SchemaRef,
        row_group: usize,
        /// The open row group's column writers (one per leaf, schema order).
        open: Option<Vec<parquet::arrow::arrow_writer::ArrowColumnWriter>>,
        batches: usize,
    },
}

impl<W: Write + Send> TableWriter<W> {
    /// Appends `batch` to the open row group and closes the group once it holds
    /// `group_batches` batches.
    fn write(&mut self, batch: &RecordBatch, threads: usize, group_batches: usize) -> Result<()> {
        match self {
            TableWriter::Arrow { w, batches } => {
                // ArrowWriter writes nothing for an empty batch: it does not count here either.
                if batch.num_rows() == 0 {
                    return Ok(());
                }
                w.write(batch)?;
                *batches += 1;
                if *batches >= group_batches {
                    w.flush()?;
                    *batches = 0;
                }
            }
            TableWriter::Parallel {
                factory,
                schema,
                row_group,
                open,
                batches,
                ..
            } => {
                use parquet::arrow::arrow_writer::compute_leaves;
                if batch.num_rows() == 0 {
                    return Ok(());
                }
                let writers = match open {
                    Some(w) => w,
                    None => open.insert(factory.create_column_writers(*row_group)?),
                };
                let mut leaves = Vec::with_capacity(writers.len());
                for (arr, field) in batch.columns().iter().zip(schema.fields()) {
                    leaves.extend(compute_leaves(field, arr)?);
                }
                let jobs: Vec<_> = writers.iter_mut().zip(leaves).collect();
                // Round-robin: each thread gets a mix of cheap and costly columns.
                on_threads(
                    jobs,
                    threads,
                    |i| i,
                    ENCODER,
                    |(w, leaf)| Ok(w.write(&leaf)?),
                )?;
                *batches += 1;
                if *batches >= group_batches {
                    self.close_row_group(threads)?;
                }
            }
        }
        Ok(())
    }
    /// Closes the open row group of a `Parallel` writer (its column chunks encoded on
    /// `threads` threads, appended in schema order); nothing for `Arrow` (arrow-rs does it).
    fn close_row_group(&mut self, threads: usize) -> Result<()> {
        if let TableWriter::Parallel {
            file,
            row_group,
            open,
            batches,
            ..
        } = self
        {
            let Some(writers) = open.take() else {
                return Ok(());
            };
            let chunks = on_threads(writers, threads, |i| i, ENCODER, |w| Ok(w.close()?))?;
            let mut rg = file.next_row_group()?;
            for c in chunks {
                c.append_to_row_group(&mut rg)?;
            }
            rg.close()?;
            *row_group += 1;
            *batches = 0;
        }
        Ok(())
    }
    fn close(mut self, threads: usize) -> Result<()> {
        self.close_row_group(threads)?;
        match self {
            TableWriter::Arrow { w, .. } => drop(w.close()?),
            TableWriter::Parallel { file, .. } => drop(file.close()?),
        }
        Ok(())
    }
    fn into_inner(mut self, threads: usize) -> Result<W> {
        self.close_row_group(threads)?;
        Ok(match self {
            TableWriter::Arrow { w, .. } => w.into_inner()?,
            TableWriter::Parallel { file, .. } => file.into_inner()?,
        })
    }
}

/// What a panicked column-encoding thread is called in its error.
const ENCODER: &str = "Parquet encoder";

impl<W: Write + Send, F: FnMut(&str) -> Result<W>> ParquetSink<W, F> {
    /// `open(table_name)` creates the output for a table the first time it receives a batch.
    pub fn new(open: F) -> Self {
        Self::with_codec(open, CODEC)
    }
    /// The same with another codec than [`CODEC`] (for `bench --codec`).
    pub fn with_codec(open: F, codec: Compression) -> Self {
        ParquetSink {
            open,
            writers: BTreeMap::new(),
            pending: BTreeMap::new(),
            rows: BTreeMap::new(),
            codec,
            threads: 1,
            group_batches: 1,
        }
    }
    /// Encodes the column chunks of each row group on `threads` threads (natively; 1 keeps
    /// arrow-rs's `ArrowWriter`). The files are the same bytes either way.
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads.max(1);
        self
    }
    /// Closes a row group after every `batches` batches of a table (at least 1; the last row
    /// group of a file may hold fewer). 1, the default, is one row group per batch (the page's
    /// stored tables); the CLI's files use [`ROW_GROUP_BATCHES`]. Rows, values and the files'
    /// readers are the same either way; only row-group boundaries (and the footer) move.
    pub fn with_row_group_batches(mut self, batches: usize) -> Self {
        self.group_batches = batches.max(1);
        self
    }
    /// Closes every writer; returns rows per table.
    pub fn finish(mut self) -> Result<BTreeMap<&'static str, u64>> {
        self.open_pending()?;
        for (_, w) in self.writers {
            w.close(self.threads)?;
        }
        Ok(self.rows)
    }
    /// Closes every writer and hands back each table's output with its row count (e.g. the
    /// in-memory Parquet files the web page keeps instead of decoded batches).
    pub fn into_outputs(mut self) -> Result<BTreeMap<&'static str, (W, u64)>> {
        self.open_pending()?;
        let mut out = BTreeMap::new();
        for (name, w) in self.writers {
            let rows = self.rows.get(name).copied().unwrap_or(0);
            out.insert(name, (w.into_inner(self.threads)?, rows));
        }
        Ok(out)
    }
}

impl<W: Write + Send, F: FnMut(&str) -> Result<W>> ParquetSink<W, F> {
    /// Opens the writer of every table still waiting for its sample (the end of the input).
    fn open_pending(&mut self) -> Result<()> {
        while let Some((_, (def, batches, _))) = self.pending.pop_first() {
            self.open_table(def, batches)?;
        }
        Ok(())
    }
    /// Opens `def`'s writer with the encodings chosen from [`sample`]`(batches)` (its first
    /// batches, in order) and writes them.
    fn open_table(&mut self, def: &'static TableDef, batches: Vec<RecordBatch>) -> Result<()> {
        let props = parquet_props_for(def, self.codec, sample(&batches));
        let out = (self.open)(def.name)?;
        let schema = def.schema();
        let w = ArrowWriter::try_new(out, schema.clone(), Some(props))?;
        let w = if self.threads > 1 {
            let (file, factory) = w.into_serialized_writer()?;
            TableWriter::Parallel {
                file,
                factory,
                schema,
                row_group: 0,
                open: None,
                batches: 0,
            }
        } else {
            TableWriter::Arrow { w, batches: 0 }
        };
        let w = self.writers.entry(def.name).or_insert(w);
        for b in &batches {
            w.write(b, self.threads, self.group_batches)?;
        }
        Ok(())
    }
}

/// The batch a table's encodings are chosen from ([`parquet_props_for`]'s `first`): the
/// largest of its first batches up to the one that makes [`SAMPLE_ROWS`] rows (the first
/// largest on a tie); `None` without batches.
pub fn sample(batches: &[RecordBatch]) -> Option<&RecordBatch> {
    let mut rows = 0;
    let n = batches
        .iter()
        .position(|b| {
            rows += b.num_rows();
            rows >= SAMPLE_ROWS
        })
        .map_or(batches.len(), |i| i + 1);
    batches.get(..n)?.iter().rev().max_by_key(|b| b.num_rows())
}

/// `batch` with every column copied into buffers of its own length (same values and nulls).
fn compact(batch: &RecordBatch) -> Result<RecordBatch> {
    let idx = arrow_array::UInt32Array::from_iter_values(0..batch.num_rows() as u32);
    let cols = batch
        .columns()
        .iter()
        .map(|c| arrow_select::take::take(c.as_ref(), &idx, None))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(RecordBatch::try_new(batch.schema(), cols)?)
}

/// Rows a table's encodings are chosen from ([`ParquetSink`]): its writer opens once this many
/// rows arrived (one full batch, [`crate::tables::BATCH_ROWS`]) or at the end of the input,
/// so a short first batch does not decide for the rest (a profile's 10 `ntrace.pb` events
/// gave the 809 k Kineto rows after them a dictionary on `start_ts`, 62 k distinct values per
/// batch: every value hashed, and no smaller).
pub const SAMPLE_ROWS: usize = crate::tables::BATCH_ROWS;

impl<W: Write + Send, F: FnMut(&str) -> Result<W>> TableSink for ParquetSink<W, F> {
    fn batch(&mut self, def: &'static TableDef, batch: RecordBatch) -> Result<()> {
        *self.rows.entry(def.name).or_default() += batch.num_rows() as u64;
        if let Some(w) = self.writers.get_mut(def.name) {
            return w.write(&batch, self.threads, self.group_batches);
        }
        // A short batch's buffers have a full batch's capacity (the builders allocate it up
        // front): copied to its size while it waits (36 MB of wasm heap on the real-mix NTFF).
        let batch = if batch.num_rows() < SAMPLE_ROWS {
            compact(&batch)?
        } else {
            batch
        };
        let (_, batches, rows) = self
            .pending
            .entry(def.name)
            .or_insert_with(|| (def, Vec::new(), 0));
        *rows += batch.num_rows();
        batches.push(batch);
        if *rows >= SAMPLE_ROWS {
            if let Some((_, (def, batches, _))) = self.pending.remove_entry(def.name) {
                self.open_table(def, batches)?;
            }
        }
        Ok(())
    }
}

/// Runs `f` with a sink whose batches are handed to `inner` on a second thread, so decoding
/// (in `f`, this thread) and encoding (Parquet in `inner`) overlap on two cores. Batches cross
/// a channel of [`PIPELINE_DEPTH`] batches, so memory stays bounded when the writer is slower.
/// The output equals `f(inner)`: batches arrive in the order they were sent.
///
/// Errors: `f`'s error, else `inner`'s first error (after which the decode stops at its next
/// batch with "Parquet writer stopped").
#[cfg(not(target_arch = "wasm32"))]
pub fn pipelined<S, R>(inner: &mut S, f: impl FnOnce(&mut dyn TableSink) -> Result<R>) -> Result<R>
where
    S: TableSink + Send,
{
    pipelined_by(std::slice::from_mut(inner), |_| 0, f)
}

/// [`pipelined`] with one writer thread per sink of `inners`: table `def`'s batches go to
/// `inners[route(def)]` (modulo their number), so each table keeps one writer and its batch
/// order, and the tables of different writers are encoded at once. With the NTFF's DMA side on
/// threads of its own, one writer is the bottleneck (`DmaPacket` is ≈ 60 % of the encoding of
/// a real-mix NTFF): [`dma_packet_apart`] gives it a thread of its own.
///
/// Errors: `f`'s error, else the first writer's error in `inners` order.
#[cfg(not(target_arch = "wasm32"))]
pub fn pipelined_by<S, R>(
    inners: &mut [S],
    route: impl Fn(&'static TableDef) -> usize,
    f: impl FnOnce(&mut dyn TableSink) -> Result<R>,
) -> Result<R>
where
    S: TableSink + Send,
{
    type Tx = std::sync::mpsc::SyncSender<(&'static TableDef, RecordBatch)>;
    struct Front<F>(Vec<Tx>, F);
    impl<F: Fn(&'static TableDef) -> usize> TableSink for Front<F> {
        fn batch(&mut self, def: &'static TableDef, batch: RecordBatch) -> Result<()> {
            let n = self.0.len().max(1);
            self.0
                .get((self.1)(def) % n)
                .ok_or_else(|| Error::Other("Parquet writer stopped".into()))?
                .send((def, batch))
                .map_err(|_| Error::Other("Parquet writer stopped".into()))
        }
    }
    std::thread::scope(|s| {
        let mut txs = Vec::with_capacity(inners.len());
        let mut writers = Vec::with_capacity(inners.len());
        for inner in inners.iter_mut() {
            let (tx, rx) = std::sync::mpsc::sync_channel(PIPELINE_DEPTH);
            txs.push(tx);
            writers.push(s.spawn(move || -> Result<()> {
                for (def, batch) in rx {
                    inner.batch(def, batch)?;
                }
                Ok(())
            }));
        }
        let mut front = Front(txs, route);
        let r = f(&mut front);
        drop(front);
        let mut w = Ok(());
        for h in writers {
            let done = h
                .join()
                .unwrap_or_else(|_| Err(Error::Other("Parquet writer thread panicked".into())));
            if w.is_ok() {
                w = done;
            }
        }
        match (r, w) {
            (Ok(r), Ok(())) => Ok(r),
            (Err(e), Ok(())) => Err(e),
            // The writer's error is the cause of "writer stopped" in `f`.
            (_, Err(e)) => Err(e),
        }
    })
}

/// The route of [`pipelined_by`] for two writers: `DmaPacket` on the second, every other table
/// on the first.
pub fn dma_packet_apart(def: &'static TableDef) -> usize {
    usize::from(def.name == crate::tables::explorer::DMA_PACKET.name)
}

/// Batches in flight between the decode thread and the writer thread of [`pipelined`].
pub const PIPELINE_DEPTH: usize = 4;

/// Writes every table of `tables` as `<prefix><Table>.parquet` into a zip archive (stored, not
/// deflated: Parquet pages are already compressed).
pub fn zip_bundle<W: Write + Seek>(tables: &Tables, prefix: &str, out: W) -> Result<W> {
    let mut files = Vec::new();
    for (name, (def, batches)) in &tables.tables {
        files.push((
            format!("{prefix}{name}.parquet"),
            parquet_bytes(def, batches)?,
        ));
    }
    zip_files(files.iter().map(|(n, b)| (n.as_str(), b.as_slice())), out)
}

/// Writes `(path, contents)` entries into a zip archive, stored (the entries are Parquet files,
/// already compressed). Each entry is copied from its reader (a `&[u8]`, or a stored table read
/// in pieces, crate::store), so nothing needs to be whole in memory.
pub fn zip_files<N: AsRef<str>, R: std::io::Read, W: Write + Seek>(
    files: impl Iterator<Item = (N, R)>,
    out: W,
) -> Result<W> {
    let mut z = zip::ZipWriter::new(out);
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .large_file(true);
    for (name, mut contents) in files {
        z.start_file(name.as_ref(), opts)
            .map_err(|e| Error::Other(format!("zip: {e}")))?;
        std::io::copy(&mut contents, &mut z)?;
    }
    z.finish().map_err(|e| Error::Other(format!("zip: {e}")))
}

/// Reads batches back from a Parquet file (in-memory `Bytes`, or a stored table,
/// crate::store::TableBytes): only the top-level `columns` (all when `None`), rows
/// `offset .. offset + limit`; only those column chunks are read. Memory: one batch of up to
/// 64 Ki rows per call of the reader plus the result.
pub fn read_parquet<T: parquet::file::reader::ChunkReader + 'static>(
    parquet: T,
    columns: Option<&[String]>,
    offset: usize,
    limit: Option<usize>,
) -> Result<(arrow_schema::SchemaRef, Vec<RecordBatch>)> {
    use arrow_array::RecordBatchReader;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::arrow::ProjectionMask;
    let mut b = ParquetRecordBatchReaderBuilder::try_new(parquet)?
        .with_batch_size(crate::tables::BATCH_ROWS)
        .with_offset(offset);
    if let Some(n) = limit {
        b = b.with_limit(n);
    }
    if let Some(cols) = columns {
        let schema = b.schema().clone();
        let idx: Vec<usize> = cols
            .iter()
            .filter_map(|c| schema.index_of(c).ok())
            .collect();
        let mask = ProjectionMask::roots(b.parquet_schema(), idx);
        b = b.with_projection(mask);
    }
    let reader = b.build()?;
    let schema = reader.schema();
    let batches = reader.collect::<std::result::Result<Vec<_>, _>>()?;
    Ok((schema, batches))
}

/// `batches` (all of `schema`) as one uncompressed Arrow IPC stream. Dictionary string columns
/// are decoded to plain UTF-8 first ([`crate::tables::plain_batch`]): the page reads the same
/// types from every table, and only the window it asked for is decoded.
pub fn ipc_of(schema: &arrow_schema::Schema, batches: &[RecordBatch]) -> Result<Vec<u8>> {
    use arrow_schema::{DataType, Field, Schema};
    let plain = Schema::new_with_metadata(
        schema
            .fields()
            .iter()
            .map(|f| match f.data_type() {
                DataType::Dictionary(_, v) => f.as_ref().clone().with_data_type(v.as_ref().clone()),
                _ => f.as_ref().clone(),
            })
            .collect::<Vec<Field>>(),
        schema.metadata().clone(),
    );
    let mut out = Vec::new();
    {
        let mut w = arrow_ipc::writer::StreamWriter::try_new(&mut out, &plain)?;
        for b in batches {
            w.write(&crate::tables::plain_batch(b))?;
        }
        w.finish()?;
    }
    Ok(out)
}

/// Schema metadata of a [`pipe_encode`] stream: the batch's rows, and the indices (in the
/// table's schema) of the columns left out because every value is null.
const PIPE_ROWS: &str = "nscope.pipe.rows";
const PIPE_NULLS: &str = "nscope.pipe.nulls";

/// One table batch as a standalone Arrow IPC stream for a Parquet writer in another worker (the
/// page's pipelined split decode: `wasm.rs` `RemoteSink`): dictionaries kept, and columns whose
/// every value is null left out (named in the schema metadata). An instruction-dense
/// `Instruction` batch is ≈ 65 % such columns (counters and attribution a NEFF does not fill).
/// [`PipeReader::decode`] gives the batch back with the same values, so that writer's Parquet is the
/// bytes this worker's would have been (crate/tests/end_to_end.rs `Mode::WorkersPiped`).
pub fn pipe_encode(batch: &RecordBatch) -> Result<Vec<u8>> {
    let rows = batch.num_rows();
    let schema = batch.schema();
    let (mut fields, mut cols, mut nulls) = (Vec::new(), Vec::new(), Vec::new());
    for (i, (f, c)) in schema.fields().iter().zip(batch.columns()).enumerate() {
        if rows > 0 && c.null_count() == rows {
            nulls.push(i.to_string());
        } else {
            fields.push(f.clone());
            cols.push(c.clone());
        }
    }
    let meta = std::collections::HashMap::from([
        (PIPE_ROWS.to_string(), rows.to_string()),
        (PIPE_NULLS.to_string(), nulls.join(",")),
    ]);
    let kept = std::sync::Arc::new(arrow_schema::Schema::new_with_metadata(fields, meta));
    let opts = arrow_array::RecordBatchOptions::new().with_row_count(Some(rows));
    let part = RecordBatch::try_new_with_options(kept.clone(), cols, &opts)?;
    let mut out = Vec::with_capacity(part.get_array_memory_size() + 4096);
    {
        let mut w = arrow_ipc::writer::StreamWriter::try_new(&mut out, &kept)?;
        w.write(&part)?;
        w.finish()?;
    }
    Ok(out)
}

/// The receiving end of [`pipe_encode`]: decodes each stream on its table's schema. Left-out
/// columns become null arrays again, made once per (table, column, rows) and shared by every
/// batch (arrays are immutable; a full batch's all-null columns are ≈ 16 MB to zero otherwise).
#[derive(Default)]
pub struct PipeReader {
    nulls: std::collections::HashMap<(&'static str, usize, usize), arrow_array::ArrayRef>,
}

impl PipeReader {
    /// The table named `table` and the batches of one [`pipe_encode`] stream, on the table's
    /// own schema. Reads `bytes` in place (no copy of the arrays). Errors: an unknown table,
    /// bytes that are no such stream, columns that are not the table's.
    pub fn decode(
        &mut self,
        table: &str,
        bytes: Vec<u8>,
    ) -> Result<(&'static TableDef, Vec<RecordBatch>)> {
        let def = crate::tables::table_def(table)
            .ok_or_else(|| Error::Other(format!("pipe: no table {table}")))?;
        let schema = def.schema();
        let bad = |what: &str| Error::Other(format!("pipe: {table}: {what}"));
        let mut buf = arrow_buffer::Buffer::from_vec(bytes);
        let mut decoder = arrow_ipc::reader::StreamDecoder::new();
        let mut out = Vec::new();
        while let Some(part) = decoder.decode(&mut buf)? {
            let meta = part.schema_ref().metadata().clone();
            let rows: usize = meta
                .get(PIPE_ROWS)
                .and_then(|r| r.parse().ok())
                .ok_or_else(|| bad("no row count"))?;
            let nulls: Vec<usize> = meta
                .get(PIPE_NULLS)
                .map(|n| {
                    n.split(',')
                        .filter(|x| !x.is_empty())
                        .map(str::parse)
                        .collect()
                })
                .transpose()
                .map_err(|_| bad("bad null column list"))?
                .unwrap_or_default();
            let mut kept = part.columns().iter();
            let mut cols = Vec::with_capacity(schema.fields().len());
            for (i, f) in schema.fields().iter().enumerate() {
                if nulls.contains(&i) {
                    let a = self
                        .nulls
                        .entry((def.name, i, rows))
                        .or_insert_with(|| arrow_array::new_null_array(f.data_type(), rows));
                    cols.push(a.clone());
                } else {
                    cols.push(kept.next().ok_or_else(|| bad("too few columns"))?.clone());
                }
            }
            if kept.next().is_some() {
                return Err(bad("too many columns"));
            }
            let opts = arrow_array::RecordBatchOptions::new().with_row_count(Some(rows));
            out.push(RecordBatch::try_new_with_options(
                schema.clone(),
                cols,
                &opts,
            )?);
        }
        decoder.finish()?;
        Ok((def, out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::{explorer, TableBuilder};

    crate::cols!(mod warning = crate::tables::explorer::WARNING {
        MESSAGE: Str = "message",
        CATEGORY: Str = "category",
    });

    /// A short first batch (a profile's few `ntrace.pb` events before its Kineto rows) does
    /// not choose the encodings: the writer waits for [`SAMPLE_ROWS`] rows, so `start_ts`
    /// (distinct per row) gets DELTA, not a dictionary, in every row group; rows and values
    /// are those written, in order, one row group per batch.
    #[test]
    fn encodings_not_chosen_by_a_short_first_batch() {
        use crate::tables::{kind, TableBuilder, C};
        use parquet::basic::Encoding;
        use parquet::file::reader::{FileReader, SerializedFileReader};
        let def = &explorer::SYSTEM_PROFILE_EVENTS;
        const TS: C<kind::I64> = C::of(&explorer::SYSTEM_PROFILE_EVENTS, "start_ts");
        let mut b = TableBuilder::new(def);
        for i in 0..10 {
            b.set(TS, i * 1000);
            assert!(b.end_row().unwrap().is_none());
        }
        let mut batches = vec![b.take_batch().unwrap()];
        for i in 0..SAMPLE_ROWS as i64 {
            b.set(TS, i * 37);
            if let Some(full) = b.end_row().unwrap() {
                batches.push(full);
            }
        }
        assert_eq!(batches.len(), 2);
        assert_eq!(batches[0].num_rows(), 10);
        let mut s = ParquetSink::new(|_t: &str| Ok(Vec::<u8>::new()));
        for batch in &batches {
            s.batch(def, batch.clone()).unwrap();
        }
        let mut out = s.into_outputs().unwrap();
        let (pq, rows) = out.remove(def.name).unwrap();
        assert_eq!(rows, 10 + SAMPLE_ROWS as u64);
        let pq = bytes::Bytes::from(pq);
        let r = SerializedFileReader::new(pq.clone()).unwrap();
        assert_eq!(r.metadata().num_row_groups(), 2);
        for rg in r.metadata().row_groups() {
            let c = (0..rg.num_columns())
                .find(|&c| rg.column(c).column_path().string() == "start_ts")
                .unwrap();
            let enc: Vec<_> = rg.column(c).encodings().collect();
            assert!(enc.contains(&Encoding::DELTA_BINARY_PACKED), "{enc:?}");
            assert!(!enc.contains(&Encoding::RLE_DICTIONARY), "{enc:?}");
        }
        let (_, got) = read_parquet(pq, None, 0, None).unwrap();
        use arrow_array::cast::AsArray;
        use arrow_array::types::Int64Type;
        let ts = |b: &[RecordBatch]| -> Vec<Option<i64>> {
            b.iter()
                .flat_map(|b| b.column(TS.idx()).as_primitive::<Int64Type>().iter())
                .collect()
        };
        assert!(ts(&got) == ts(&batches), "values differ");
    }

    /// Numeric columns with few distinct values get a dictionary; sorted, distinct ones DELTA.
    #[test]
    fn encodings_chosen_from_the_first_batch() {
        use crate::tables::{kind, TableBuilder, C};
        use parquet::basic::Encoding;
        use parquet::file::reader::{FileReader, SerializedFileReader};
        let def = &explorer::DMA_PACKET;
        let mut b = TableBuilder::new(def);
        const TS: C<kind::I64> = C::of(&explorer::DMA_PACKET, "start_ts");
        const BY: C<kind::I64> = C::of(&explorer::DMA_PACKET, "read_bytes");
        const TP: C<kind::F32> = C::of(&explorer::DMA_PACKET, "throughput");
        const EN: C<kind::I64> = C::of(&explorer::DMA_PACKET, "engine_idx");
        for i in 0..5000i64 {
            b.set(TS, i * 37);
            b.set(BY, [64, 2048, 4][i as usize % 3]);
            // 16 engines in a scrambled order: 4-bit dictionary indices, 5-bit DELTA
            // (steps +7 and −9): too close for a dictionary to pay for its hashing.
            b.set(EN, (i * 7) % 16);
            b.set(TP, i as f32 * 0.5);
            assert!(b.end_row().unwrap().is_none());
        }
        let batch = b.take_batch().unwrap();
        let pq = parquet_bytes(def, std::slice::from_ref(&batch)).unwrap();
        let r = SerializedFileReader::new(bytes::Bytes::from(pq.clone())).unwrap();
        let rg = r.metadata().row_group(0);
        let enc = |name: &str| {
            let c = (0..rg.num_columns())
                .find(|&c| rg.column(c).column_path().string() == name)
                .unwrap();
            rg.column(c).encodings().collect::<Vec<_>>()
        };
        assert!(enc("read_bytes").contains(&Encoding::RLE_DICTIONARY));
        assert!(!enc("read_bytes").contains(&Encoding::DELTA_BINARY_PACKED));
        assert!(enc("start_ts").contains(&Encoding::DELTA_BINARY_PACKED));
        assert!(!enc("start_ts").contains(&Encoding::RLE_DICTIONARY));
        assert!(enc("throughput").contains(&Encoding::BYTE_STREAM_SPLIT));
        assert!(enc("engine_idx").contains(&Encoding::DELTA_BINARY_PACKED));
        assert!(!enc("engine_idx").contains(&Encoding::RLE_DICTIONARY));
        // Same values back.
        let (_, got) = read_parquet(bytes::Bytes::from(pq), None, 0, None).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(
            got[0].column(BY.idx()).as_ref(),
            batch.column(BY.idx()).as_ref()
        );
        assert_eq!(
            got[0].column(TS.idx()).as_ref(),
            batch.column(TS.idx()).as_ref()
        );
        assert_eq!(
            got[0].column(EN.idx()).as_ref(),
            batch.column(EN.idx()).as_ref()
        );
    }

    /// DELTA's bits per value: a constant step packs in 0 bits; a 0/15 alternation's deltas
    /// ±15, less the block's smallest (−15), are 0 and 30: 5 bits each.
    #[test]
    fn delta_bits_of_known_columns() {
        assert_eq!(delta_bits(&[]), 0.0);
        assert_eq!(delta_bits(&[5]), 0.0);
        let steps: Vec<i64> = (0..1000).map(|i| i * 7).collect();
        assert_eq!(delta_bits(&steps), 0.0);
        let alt: Vec<i64> = (0..129).map(|i| if i % 2 == 0 { 0 } else { 15 }).collect();
        assert_eq!(delta_bits(&alt), 5.0 * 128.0 / 129.0);
        // Extremes do not overflow: deltas 2⁶³ − 1 and −(2⁶⁴ − 1), less the smaller, are
        // 2⁶⁴ + 2⁶³ − 2 and 0: 65 bits each (arrow-rs wraps them in 64).
        assert_eq!(delta_bits(&[0, i64::MAX, i64::MIN]), 65.0 * 2.0 / 3.0);
    }

    /// A string column with more distinct values than rows / 2 (and > DICT_MAX_DISTINCT) is
    /// PLAIN without a dictionary; one of a handful of values keeps its dictionary; both read
    /// back as the dictionary columns they were.
    #[test]
    fn high_cardinality_strings_are_plain() {
        use crate::tables::{kind, C};
        use parquet::basic::Encoding;
        use parquet::file::reader::{FileReader, SerializedFileReader};
        let def = &explorer::INSTRUCTION;
        const BIR: C<kind::Str> = C::of(&explorer::INSTRUCTION, "bir_id");
        const ENG: C<kind::Str> = C::of(&explorer::INSTRUCTION, "engine");
        let mut b = TableBuilder::new(def);
        for i in 0..5000u32 {
            // 3 000 distinct names in 5 000 rows, as on conv2d (5 349 in 9 344).
            b.set(BIR, format!("sg0000:{}", i % 3000).as_str());
            b.set(ENG, ["pe", "act", "pool"][i as usize % 3]);
            assert!(b.end_row().unwrap().is_none());
        }
        let batch = b.take_batch().unwrap();
        let pq = parquet_bytes(def, std::slice::from_ref(&batch)).unwrap();
        let r = SerializedFileReader::new(bytes::Bytes::from(pq.clone())).unwrap();
        let rg = r.metadata().row_group(0);
        let enc = |name: &str| {
            let c = (0..rg.num_columns())
                .find(|&c| rg.column(c).column_path().string() == name)
                .unwrap();
            rg.column(c).encodings().collect::<Vec<_>>()
        };
        assert!(enc("bir_id").contains(&Encoding::PLAIN));
        assert!(!enc("bir_id").contains(&Encoding::RLE_DICTIONARY));
        assert!(enc("engine").contains(&Encoding::RLE_DICTIONARY));
        let (_, got) = read_parquet(bytes::Bytes::from(pq), None, 0, None).unwrap();
        for c in [BIR.idx(), ENG.idx()] {
            let (a, e) = (got[0].column(c), batch.column(c));
            assert_eq!(a.data_type(), e.data_type());
            assert_eq!(
                crate::tables::utf8(a).as_ref(),
                crate::tables::utf8(e).as_ref()
            );
        }
    }

    /// `with_row_group_batches(3)` over 7 batches of 1 000 rows: row groups of 3, 3 and 1
    /// batches with min/max statistics on the time column; the same bytes on one thread and on
    /// two (the parallel writer keeps its column writers across batches); the rows read back.
    #[test]
    fn row_groups_of_several_batches() {
        use crate::tables::{kind, C};
        use parquet::file::reader::{FileReader, SerializedFileReader};
        use parquet::file::statistics::Statistics;
        const TS: C<kind::I64> = C::of(&explorer::DMA_PACKET, "start_ts");
        const QN: C<kind::Str> = C::of(&explorer::DMA_PACKET, "queue_name");
        let def = &explorer::DMA_PACKET;
        let mut b = TableBuilder::new(def);
        let mut batches = Vec::new();
        for i in 0..7000i64 {
            b.set(TS, i * 10);
            b.set(QN, ["qA", "qB"][i as usize % 2]);
            assert!(b.end_row().unwrap().is_none());
            if i % 1000 == 999 {
                batches.push(b.take_batch().unwrap());
            }
        }
        let write = |threads: usize| {
            let mut s = ParquetSink::new(|_t: &str| Ok(Vec::<u8>::new()))
                .with_threads(threads)
                .with_row_group_batches(3);
            for batch in &batches {
                s.batch(def, batch.clone()).unwrap();
            }
            let mut out = s.into_outputs().unwrap();
            let (bytes, rows) = out.remove("DmaPacket").unwrap();
            assert_eq!(rows, 7000);
            bytes
        };
        let one = write(1);
        assert!(one == write(2), "two threads write other bytes");
        let r = SerializedFileReader::new(bytes::Bytes::from(one.clone())).unwrap();
        let md = r.metadata();
        let rows: Vec<i64> = md.row_groups().iter().map(|g| g.num_rows()).collect();
        assert_eq!(rows, [3000, 3000, 1000]);
        let ts = md
            .file_metadata()
            .schema_descr()
            .columns()
            .iter()
            .position(|c| c.name() == "start_ts")
            .unwrap();
        let ranges: Vec<(i64, i64)> = md
            .row_groups()
            .iter()
            .map(|g| match g.column(ts).statistics() {
                Some(Statistics::Int64(v)) => (*v.min_opt().unwrap(), *v.max_opt().unwrap()),
                other => panic!("start_ts statistics: {other:?}"),
            })
            .collect();
        assert_eq!(ranges, [(0, 29_990), (30_000, 59_990), (60_000, 69_990)]);
        let (_, got) = read_parquet(bytes::Bytes::from(one), None, 0, None).unwrap();
        let got = arrow_select::concat::concat_batches(&def.schema(), got.iter()).unwrap();
        let want = arrow_select::concat::concat_batches(&def.schema(), batches.iter()).unwrap();
        assert_eq!(
            got.column(TS.idx()).as_ref(),
            want.column(TS.idx()).as_ref()
        );
        assert_eq!(
            crate::tables::utf8(got.column(QN.idx())).as_ref(),
            crate::tables::utf8(want.column(QN.idx())).as_ref()
        );
        // The default stays one row group per batch (the page's stored tables).
        let mut s = ParquetSink::new(|_t: &str| Ok(Vec::<u8>::new()));
        for batch in &batches {
            s.batch(def, batch.clone()).unwrap();
        }
        let (bytes, _) = s.into_outputs().unwrap().remove("DmaPacket").unwrap();
        let r = SerializedFileReader::new(bytes::Bytes::from(bytes)).unwrap();
        assert_eq!(r.metadata().num_row_groups(), 7);
    }

    #[test]
    fn parquet_and_ipc_roundtrip() {
        let mut t = Tables::default();
        {
            let mut b = TableBuilder::new(&explorer::WARNING);
            b.set(warning::MESSAGE, "hello");
            b.set(warning::CATEGORY, "Missing Data");
            b.end_row_into(&mut t).unwrap();
            b.finish_into(&mut t).unwrap();
        }
        let batches = t.get("Warning").unwrap();
        let pq = parquet_bytes(&explorer::WARNING, batches).unwrap();
        let r = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
            bytes::Bytes::from(pq),
        )
        .unwrap()
        .build()
        .unwrap();
        let rows: usize = r.map(|b| b.unwrap().num_rows()).sum();
        assert_eq!(rows, 1);
        let (schema, got) = read_parquet(
            bytes::Bytes::from(parquet_bytes(&explorer::WARNING, batches).unwrap()),
            Some(&["category".to_string()]),
            0,
            Some(5),
        )
        .unwrap();
        assert_eq!(schema.fields().len(), 1);
        assert_eq!(got[0].num_rows(), 1);
        let ipc = ipc_stream(&explorer::WARNING, batches).unwrap();
        let rd = arrow_ipc::reader::StreamReader::try_new(std::io::Cursor::new(ipc), None).unwrap();
        let got: Vec<_> = rd.map(|b| b.unwrap()).collect();
        assert_eq!(got[0].num_rows(), 1);
        let z = zip_bundle(&t, "p/", std::io::Cursor::new(Vec::new())).unwrap();
        let zr = zip::ZipArchive::new(std::io::Cursor::new(z.into_inner())).unwrap();
        let names: Vec<String> = zr.file_names().map(|n| n.unwrap().to_string()).collect();
        assert_eq!(names, ["p/Warning.parquet"]);
    }
}
