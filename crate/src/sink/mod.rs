//! Sinks for finished tables: Arrow IPC (for the page), Parquet (one file per table, one row group
//! per batch, written incrementally) and a zip bundle of Parquet files.

use std::collections::BTreeMap;
use std::io::{Seek, Write};

use arrow_array::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use crate::error::{Error, Result};
use crate::tables::{TableDef, TableSink, Tables};

/// Encodes `batches` as an uncompressed Arrow IPC stream (apache-arrow JS `tableFromIPC` reads it
/// without codec registration; spec/README.md "Implementation notes").
pub fn ipc_stream(def: &TableDef, batches: &[RecordBatch]) -> Result<Vec<u8>> {
    ipc_of(&def.schema(), batches)
}

/// Writer properties for every Parquet file we write: Snappy (pure Rust, works in wasm),
/// statistics on, row groups cut by the batches we hand in.
pub fn parquet_props() -> WriterProperties {
    WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_created_by(format!("neuronscope {}", env!("CARGO_PKG_VERSION")))
        .build()
}

/// Encodes one table as a Parquet file in memory (Explorer's `<Table>.parquet`).
pub fn parquet_bytes(def: &TableDef, batches: &[RecordBatch]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut w = ArrowWriter::try_new(&mut out, def.schema(), Some(parquet_props()))?;
    for b in batches {
        w.write(b)?;
        w.flush()?; // one row group per batch keeps the writer's buffer bounded
    }
    w.close()?;
    Ok(out)
}

/// A [`TableSink`] that streams every table into its own Parquet writer over `W` (a file
/// natively). Memory stays bounded by one row group per table.
pub struct ParquetSink<W: Write + Send, F: FnMut(&str) -> Result<W>> {
    open: F,
    writers: BTreeMap<&'static str, ArrowWriter<W>>,
    rows: BTreeMap<&'static str, u64>,
}

impl<W: Write + Send, F: FnMut(&str) -> Result<W>> ParquetSink<W, F> {
    /// `open(table_name)` creates the output for a table the first time it receives a batch.
    pub fn new(open: F) -> Self {
        ParquetSink {
            open,
            writers: BTreeMap::new(),
            rows: BTreeMap::new(),
        }
    }
    /// Closes every writer; returns rows per table.
    pub fn finish(self) -> Result<BTreeMap<&'static str, u64>> {
        for (_, w) in self.writers {
            w.close()?;
        }
        Ok(self.rows)
    }
    /// Closes every writer and hands back each table's output with its row count (e.g. the
    /// in-memory Parquet files the web page keeps instead of decoded batches).
    pub fn into_outputs(self) -> Result<BTreeMap<&'static str, (W, u64)>> {
        let mut out = BTreeMap::new();
        for (name, w) in self.writers {
            let rows = self.rows.get(name).copied().unwrap_or(0);
            out.insert(name, (w.into_inner()?, rows));
        }
        Ok(out)
    }
}

impl<W: Write + Send, F: FnMut(&str) -> Result<W>> TableSink for ParquetSink<W, F> {
    fn batch(&mut self, def: &'static TableDef, batch: RecordBatch) -> Result<()> {
        if !self.writers.contains_key(def.name) {
            let out = (self.open)(def.name)?;
            let w = ArrowWriter::try_new(out, def.schema(), Some(parquet_props()))?;
            self.writers.insert(def.name, w);
        }
        *self.rows.entry(def.name).or_default() += batch.num_rows() as u64;
        if let Some(w) = self.writers.get_mut(def.name) {
            w.write(&batch)?;
            w.flush()?;
        }
        Ok(())
    }
}

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

/// Writes `(path, bytes)` entries into a zip archive, stored (the entries are Parquet files,
/// already compressed).
pub fn zip_files<'a, W: Write + Seek>(
    files: impl Iterator<Item = (&'a str, &'a [u8])>,
    out: W,
) -> Result<W> {
    let mut z = zip::ZipWriter::new(out);
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .large_file(true);
    for (name, bytes) in files {
        z.start_file(name, opts)
            .map_err(|e| Error::Other(format!("zip: {e}")))?;
        z.write_all(bytes)?;
    }
    z.finish().map_err(|e| Error::Other(format!("zip: {e}")))
}

/// Reads batches back from an in-memory Parquet file: only the top-level `columns` (all when
/// `None`), rows `offset .. offset + limit`. Memory: one batch of up to 64 Ki rows per call of
/// the reader plus the result.
pub fn read_parquet(
    parquet: bytes::Bytes,
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

/// `batches` (all of `schema`) as one uncompressed Arrow IPC stream.
pub fn ipc_of(schema: &arrow_schema::Schema, batches: &[RecordBatch]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    {
        let mut w = arrow_ipc::writer::StreamWriter::try_new(&mut out, schema)?;
        for b in batches {
            w.write(b)?;
        }
        w.finish()?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::{explorer, Emitter};

    #[test]
    fn parquet_and_ipc_roundtrip() {
        let mut t = Tables::default();
        {
            let mut e = Emitter::new(&explorer::WARNING, &mut t);
            let (m, c) = (e.b.col("message"), e.b.col("category"));
            e.b.str(m, Some("hello"));
            e.b.str(c, Some("Missing Data"));
            e.end_row().unwrap();
            e.finish().unwrap();
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
