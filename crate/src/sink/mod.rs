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
    let schema = def.schema();
    let mut out = Vec::new();
    {
        let mut w = arrow_ipc::writer::StreamWriter::try_new(&mut out, &schema)?;
        for b in batches {
            w.write(b)?;
        }
        w.finish()?;
    }
    Ok(out)
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
    let mut z = zip::ZipWriter::new(out);
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .large_file(true);
    for (name, (def, batches)) in &tables.tables {
        let bytes = parquet_bytes(def, batches)?;
        z.start_file(format!("{prefix}{name}.parquet"), opts)
            .map_err(|e| Error::Other(format!("zip: {e}")))?;
        z.write_all(&bytes)?;
    }
    z.finish().map_err(|e| Error::Other(format!("zip: {e}")))
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
