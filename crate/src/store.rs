//! Where a processed profile's Parquet tables live: in memory, or (in the web page's worker) in
//! files of the Origin Private File System, so a multi-GB NTFF's tables never sit in wasm memory.
//!
//! A table is written once, streaming, by the Parquet sink ([`TableStore::writer`] →
//! [`TableWrite`]), then read back by row group and column through [`TableBytes`], a
//! [`parquet::file::reader::ChunkReader`]: readers fetch only the footer and the column chunks
//! they need. The OPFS side is a JS object the worker installs ([`set_file_store`], wasm32 only;
//! www/src/worker.ts `FileStore`) that owns `FileSystemSyncAccessHandle`s and is called
//! synchronously; Rust keeps only a file id and the length. Without it every table stays in
//! memory, as before.

use std::io::{Read, Seek, SeekFrom, Write};

use bytes::Bytes;
use parquet::file::reader::{ChunkReader, Length};

use crate::error::Result;

/// Bytes an OPFS writer gathers before handing them to JS: Parquet's writer emits many small
/// writes (page headers, thrift), one JS call each would dominate.
#[cfg(target_arch = "wasm32")]
const WRITE_BUFFER: usize = 1 << 20;

/// A stored table's Parquet file: the bytes themselves, or a file of the worker's file store.
/// Cheap to clone (shared bytes, or an id). Reading it is a [`ChunkReader`], so
/// `ParquetRecordBatchReaderBuilder::try_new(bytes.clone())` reads only what is projected.
#[derive(Clone, Debug)]
pub enum TableBytes {
    /// In-memory Parquet (no file store, or it had no free file).
    Memory(Bytes),
    /// File `id` of the worker's file store, `len` bytes.
    #[cfg(target_arch = "wasm32")]
    File { id: u32, len: u64 },
}

impl TableBytes {
    /// Where the bytes are: `"memory"` or `"opfs"`.
    pub fn kind(&self) -> &'static str {
        match self {
            TableBytes::Memory(_) => "memory",
            #[cfg(target_arch = "wasm32")]
            TableBytes::File { .. } => "opfs",
        }
    }
    /// The file store id of an OPFS table (None in memory).
    pub fn file_id(&self) -> Option<u32> {
        match self {
            TableBytes::Memory(_) => None,
            #[cfg(target_arch = "wasm32")]
            TableBytes::File { id, .. } => Some(*id),
        }
    }
    /// Bytes `start .. start + buf.len()` into `buf`. Errors: past the end, or the file store's
    /// read failed (names the file id and offset).
    pub fn read_at(&self, start: u64, buf: &mut [u8]) -> Result<()> {
        crate::source::check_range(Length::len(self), start, buf.len())?;
        match self {
            TableBytes::Memory(b) => {
                let s = start as usize;
                buf.copy_from_slice(&b[s..s + buf.len()]);
                Ok(())
            }
            #[cfg(target_arch = "wasm32")]
            TableBytes::File { id, .. } => js::read(*id, start, buf),
        }
    }
    /// A `Read` over the whole file (zip bundle).
    pub fn reader(&self) -> TableRead {
        TableRead {
            bytes: self.clone(),
            at: 0,
        }
    }
}

impl Length for TableBytes {
    fn len(&self) -> u64 {
        match self {
            TableBytes::Memory(b) => b.len() as u64,
            #[cfg(target_arch = "wasm32")]
            TableBytes::File { len, .. } => *len,
        }
    }
}

impl ChunkReader for TableBytes {
    type T = TableRead;
    fn get_read(&self, start: u64) -> parquet::errors::Result<TableRead> {
        Ok(TableRead {
            bytes: self.clone(),
            at: start,
        })
    }
    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        match self {
            // No copy for memory.
            TableBytes::Memory(b) => {
                let end = start.saturating_add(length as u64);
                if end > b.len() as u64 {
                    return Err(parquet::errors::ParquetError::EOF(format!(
                        "stored table: bytes {start}..{end} past its end {}",
                        b.len()
                    )));
                }
                Ok(b.slice(start as usize..end as usize))
            }
            #[cfg(target_arch = "wasm32")]
            TableBytes::File { .. } => {
                let mut v = vec![0; length];
                self.read_at(start, &mut v)
                    .map_err(|e| parquet::errors::ParquetError::External(Box::new(e)))?;
                Ok(Bytes::from(v))
            }
        }
    }
}

/// A sequential reader over a [`TableBytes`] from an offset (what [`ChunkReader::get_read`]
/// returns). Reads past the end return 0 bytes.
pub struct TableRead {
    bytes: TableBytes,
    at: u64,
}

impl Read for TableRead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = Length::len(&self.bytes).saturating_sub(self.at);
        let n = (buf.len() as u64).min(left) as usize;
        if n == 0 {
            return Ok(0);
        }
        self.bytes
            .read_at(self.at, &mut buf[..n])
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        self.at += n as u64;
        Ok(n)
    }
}

/// Where new tables go: the worker's file store when one is installed and has a free file,
/// else memory. Stateless: the store is a per-instance global (one wasm instance per worker).
#[derive(Clone, Copy, Debug, Default)]
pub struct TableStore;

impl TableStore {
    /// A writer for table `table` of profile `key`: a file of the file store when available,
    /// else a `Vec`. Errors: the file store refused the file for another reason than being out
    /// of files.
    pub fn writer(&self, key: &str, table: &str) -> Result<TableWrite> {
        #[cfg(target_arch = "wasm32")]
        if let Some(id) = js::create(key, table)? {
            return Ok(TableWrite::File(FileWrite {
                id,
                table: table.to_string(),
                at: 0,
                len: 0,
                buf: Vec::new(),
            }));
        }
        let _ = (key, table);
        Ok(TableWrite::Memory(std::io::Cursor::new(Vec::new())))
    }
    /// Is a file store installed (tables go to disk)?
    pub fn on_disk(&self) -> bool {
        #[cfg(target_arch = "wasm32")]
        return js::installed();
        #[cfg(not(target_arch = "wasm32"))]
        false
    }
}

/// A table being written: `Write + Seek` (the zip bundle seeks back to its entry headers).
/// [`TableWrite::finish`] flushes and hands back the readable [`TableBytes`].
pub enum TableWrite {
    /// In memory.
    Memory(std::io::Cursor<Vec<u8>>),
    /// To a file of the file store.
    #[cfg(target_arch = "wasm32")]
    File(FileWrite),
}

impl TableWrite {
    /// Flushes what is buffered; the stored bytes, ready to read.
    pub fn finish(self) -> Result<TableBytes> {
        match self {
            TableWrite::Memory(c) => Ok(TableBytes::Memory(Bytes::from(c.into_inner()))),
            #[cfg(target_arch = "wasm32")]
            TableWrite::File(mut f) => {
                f.flush_buf()?;
                js::flush(f.id)?;
                Ok(TableBytes::File {
                    id: f.id,
                    len: f.len,
                })
            }
        }
    }
}

impl Write for TableWrite {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            TableWrite::Memory(c) => c.write(buf),
            #[cfg(target_arch = "wasm32")]
            TableWrite::File(f) => {
                f.buf.extend_from_slice(buf);
                if f.buf.len() >= WRITE_BUFFER {
                    f.flush_buf().map_err(std::io::Error::other)?;
                }
                Ok(buf.len())
            }
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        // Buffered bytes go out at WRITE_BUFFER or at finish(): Parquet flushes after every
        // row group, which would turn the buffer back into many small JS calls.
        Ok(())
    }
}

impl Seek for TableWrite {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        match self {
            TableWrite::Memory(c) => c.seek(pos),
            #[cfg(target_arch = "wasm32")]
            TableWrite::File(f) => {
                f.flush_buf().map_err(std::io::Error::other)?;
                let to = match pos {
                    SeekFrom::Start(o) => Some(o),
                    SeekFrom::End(d) => f.len.checked_add_signed(d),
                    SeekFrom::Current(d) => f.at.checked_add_signed(d),
                };
                f.at = to.ok_or_else(|| std::io::Error::other("seek before the start"))?;
                Ok(f.at)
            }
        }
    }
}

/// A file of the file store being written: position, length so far and a write buffer.
#[cfg(target_arch = "wasm32")]
pub struct FileWrite {
    id: u32,
    table: String,
    at: u64,
    len: u64,
    buf: Vec<u8>,
}

#[cfg(target_arch = "wasm32")]
impl FileWrite {
    fn flush_buf(&mut self) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        js::write(self.id, self.at, &self.buf)
            .map_err(|e| crate::error::Error::Io(format!("storing table {}: {e}", self.table)))?;
        self.at += self.buf.len() as u64;
        self.len = self.len.max(self.at);
        self.buf.clear();
        Ok(())
    }
}

/// Append-only scratch space on disk for decode state that grows with the input (the packed
/// instruction unions of `crate::summary` and `crate::derived`, docs/formats.md "Memory (costs
/// per row)"): full chunks go here and only their offsets stay in memory (12 B per 16 KiB chunk),
/// so that state costs the streams, not the rows. Natively an unlinked file in the temp directory;
/// in the page's worker a file of its OPFS store (the worker deletes it after each decode,
/// www/src/worker.ts). Shared by every user on the thread while any holds it ([`Spill::current`]);
/// gone when the last one drops. Unavailable (no temp dir, no OPFS, `NEURONSCOPE_SPILL=0`
/// natively): callers keep their chunks in memory, as before.
pub struct Spill {
    backend: SpillBackend,
    len: std::sync::Mutex<u64>,
}

enum SpillBackend {
    #[cfg(all(unix, not(target_arch = "wasm32")))]
    File(std::fs::File),
    #[cfg(target_arch = "wasm32")]
    Opfs(u32),
}

impl std::fmt::Debug for Spill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spill").field("len", &self.len()).finish()
    }
}

thread_local! {
    /// The thread's live spill (weak: it goes when its last user drops) and whether opening one
    /// failed (then the thread stops trying).
    static SPILL: std::cell::RefCell<(std::sync::Weak<Spill>, bool)> =
        const { std::cell::RefCell::new((std::sync::Weak::new(), false)) };
    /// Spilling allowed on this thread (`set_spill`; on by default).
    static SPILL_ON: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
    /// The first failure reading a spill back since [`take_spill_error`] (a read-back that fails
    /// ends its values early; the table writer reports it).
    static SPILL_ERROR: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

impl Spill {
    /// The thread's spill, opened on first use; None when none can be opened.
    pub fn current() -> Option<std::sync::Arc<Spill>> {
        if !SPILL_ON.with(|c| c.get()) {
            return None;
        }
        SPILL.with(|c| {
            let mut c = c.borrow_mut();
            if let Some(s) = c.0.upgrade() {
                return Some(s);
            }
            if c.1 {
                return None;
            }
            match Spill::open() {
                Some(s) => {
                    let s = std::sync::Arc::new(s);
                    c.0 = std::sync::Arc::downgrade(&s);
                    Some(s)
                }
                None => {
                    // Natively that does not change; in the worker a store installed later, or
                    // files freed by the next `prepare`, may make it work: ask again then.
                    c.1 = !cfg!(target_arch = "wasm32");
                    None
                }
            }
        })
    }

    #[cfg(all(unix, not(target_arch = "wasm32")))]
    fn open() -> Option<Spill> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        if std::env::var_os("NEURONSCOPE_SPILL").is_some_and(|v| v == "0") {
            return None;
        }
        let path = std::env::temp_dir().join(format!(
            "neuronscope-spill-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .ok()?;
        // Unlinked at once: the bytes live while the handle does, and nothing is left behind.
        std::fs::remove_file(&path).ok()?;
        Some(Spill {
            backend: SpillBackend::File(f),
            len: std::sync::Mutex::new(0),
        })
    }

    #[cfg(target_arch = "wasm32")]
    fn open() -> Option<Spill> {
        // Re-checked per decode: the worker installs its store before the first one.
        let id = js::create(SPILL_KEY, SPILL_TABLE).ok().flatten()?;
        Some(Spill {
            backend: SpillBackend::Opfs(id),
            len: std::sync::Mutex::new(0),
        })
    }

    #[cfg(not(any(unix, target_arch = "wasm32")))]
    fn open() -> Option<Spill> {
        None
    }

    /// Bytes appended so far.
    pub fn len(&self) -> u64 {
        self.len.lock().map_or(0, |l| *l)
    }

    /// True when nothing was appended.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends `bytes`; their offset, or None when the write failed (the caller keeps them).
    pub fn append(&self, bytes: &[u8]) -> Option<u64> {
        let mut len = self.len.lock().ok()?;
        let at = *len;
        let ok = match &self.backend {
            #[cfg(all(unix, not(target_arch = "wasm32")))]
            SpillBackend::File(f) => std::os::unix::fs::FileExt::write_all_at(f, bytes, at).is_ok(),
            #[cfg(target_arch = "wasm32")]
            SpillBackend::Opfs(id) => js::write(*id, at, bytes).is_ok(),
        };
        if !ok {
            return None;
        }
        *len = at + bytes.len() as u64;
        Some(at)
    }

    /// Reads `buf.len()` bytes at `at` back. False on failure, which is kept for
    /// [`take_spill_error`] (naming the offset).
    pub fn read(&self, at: u64, buf: &mut [u8]) -> bool {
        let r: std::result::Result<(), String> = match &self.backend {
            #[cfg(all(unix, not(target_arch = "wasm32")))]
            SpillBackend::File(f) => {
                std::os::unix::fs::FileExt::read_exact_at(f, buf, at).map_err(|e| e.to_string())
            }
            #[cfg(target_arch = "wasm32")]
            SpillBackend::Opfs(id) => js::read(*id, at, buf).map_err(|e| e.to_string()),
        };
        match r {
            Ok(()) => true,
            Err(e) => {
                SPILL_ERROR.with(|c| {
                    c.borrow_mut().get_or_insert_with(|| {
                        format!(
                            "reading back {} bytes of spilled decode state at offset {at}: {e}",
                            buf.len()
                        )
                    });
                });
                false
            }
        }
    }
}

/// Allows or forbids spilling on this thread from now on (on by default; off keeps the decode
/// state in memory, as before the spill existed: for A/B measurements, scripts/bench-wasm.mjs
/// `--no-spill`). Natively `NEURONSCOPE_SPILL=0` does the same.
#[cfg_attr(target_arch = "wasm32", wasm_bindgen::prelude::wasm_bindgen)]
pub fn set_spill(on: bool) {
    SPILL_ON.with(|c| c.set(on));
}

/// Profile key and table name of the worker's spill file (www/src/worker.ts drops it after
/// each decode).
pub const SPILL_KEY: &str = "nscope-spill";
/// See [`SPILL_KEY`].
pub const SPILL_TABLE: &str = "spill";

/// The first spill read-back failure on this thread since the last call, if any (then some
/// derived values were computed from partial state and must not be written as if exact).
pub fn take_spill_error() -> Option<String> {
    SPILL_ERROR.with(|c| c.borrow_mut().take())
}

/// Writes `(path, bytes)` entries into a zip archive (stored: Parquet is already compressed),
/// streaming each table from its store into `out`: nothing is held whole in memory.
pub fn zip_tables<'a, W: Write + Seek>(
    files: impl Iterator<Item = (String, &'a TableBytes)>,
    out: W,
) -> Result<W> {
    crate::sink::zip_files(files.map(|(n, b)| (n, b.reader())), out)
}

/// Errors of the file store carry the file id and offset (`Error::Io`).
#[cfg(target_arch = "wasm32")]
mod js {
    use crate::error::{Error, Result};
    use std::cell::RefCell;
    use wasm_bindgen::prelude::*;

    #[wasm_bindgen]
    extern "C" {
        /// The worker's file store (www/src/worker.ts `FileStore`): synchronous methods over
        /// pre-opened `FileSystemSyncAccessHandle`s.
        pub type FileStore;
        /// A free file for table `table` of profile `key`; its id, or -1 when none is left.
        #[wasm_bindgen(method, catch)]
        fn create(this: &FileStore, key: &str, table: &str) -> std::result::Result<f64, JsValue>;
        /// Writes `bytes` at byte `at` of file `id`.
        #[wasm_bindgen(method, catch)]
        fn write(
            this: &FileStore,
            id: u32,
            bytes: &[u8],
            at: f64,
        ) -> std::result::Result<(), JsValue>;
        /// Reads into `buf` from byte `at` of file `id`; the count read.
        #[wasm_bindgen(method, catch)]
        fn read(
            this: &FileStore,
            id: u32,
            buf: &mut [u8],
            at: f64,
        ) -> std::result::Result<f64, JsValue>;
        /// Flushes file `id` to disk.
        #[wasm_bindgen(method, catch)]
        fn flush(this: &FileStore, id: u32) -> std::result::Result<(), JsValue>;
    }

    thread_local! {
        static STORE: RefCell<Option<FileStore>> = const { RefCell::new(None) };
    }

    pub fn install(s: Option<FileStore>) {
        STORE.with(|c| *c.borrow_mut() = s);
    }
    pub fn installed() -> bool {
        STORE.with(|c| c.borrow().is_some())
    }
    fn text(e: JsValue) -> String {
        e.as_string()
            .or_else(|| {
                js_sys::Reflect::get(&e, &"message".into())
                    .ok()
                    .and_then(|m| m.as_string())
                    .map(|m| {
                        let name = js_sys::Reflect::get(&e, &"name".into())
                            .ok()
                            .and_then(|n| n.as_string())
                            .unwrap_or_default();
                        format!("{name}: {m}")
                    })
            })
            .unwrap_or_else(|| format!("{e:?}"))
    }
    fn with<T>(f: impl FnOnce(&FileStore) -> Result<T>) -> Result<T> {
        STORE.with(|c| match c.borrow().as_ref() {
            Some(s) => f(s),
            None => Err(Error::Io("no file store installed".into())),
        })
    }
    pub fn create(key: &str, table: &str) -> Result<Option<u32>> {
        if !installed() {
            return Ok(None);
        }
        with(|s| {
            let id = s
                .create(key, table)
                .map_err(|e| Error::Io(format!("opening a file for table {table}: {}", text(e))))?;
            Ok((id >= 0.0).then_some(id as u32))
        })
    }
    pub fn write(id: u32, at: u64, bytes: &[u8]) -> Result<()> {
        with(|s| {
            s.write(id, bytes, at as f64).map_err(|e| {
                Error::Io(format!(
                    "writing {} bytes at offset {at} of stored file {id}: {}",
                    bytes.len(),
                    text(e)
                ))
            })
        })
    }
    pub fn read(id: u32, at: u64, buf: &mut [u8]) -> Result<()> {
        with(|s| {
            let n = s.read(id, buf, at as f64).map_err(|e| {
                Error::Io(format!(
                    "reading {} bytes at offset {at} of stored file {id}: {}",
                    buf.len(),
                    text(e)
                ))
            })?;
            if n as usize != buf.len() {
                return Err(Error::Truncated {
                    offset: at,
                    wanted: buf.len() as u64,
                    available: n as u64,
                });
            }
            Ok(())
        })
    }
    pub fn flush(id: u32) -> Result<()> {
        with(|s| {
            s.flush(id)
                .map_err(|e| Error::Io(format!("flushing stored file {id}: {}", text(e))))
        })
    }
}

#[cfg(target_arch = "wasm32")]
pub use js::FileStore;

/// Installs the worker's file store (www/src/worker.ts): from now on new tables are written to
/// its files (OPFS). `null`/`undefined` goes back to memory.
#[cfg(target_arch = "wasm32")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn set_file_store(store: Option<FileStore>) {
    js::install(store);
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    fn parquet_file() -> Vec<u8> {
        use arrow_array::{Int64Array, RecordBatch};
        let batch = RecordBatch::try_from_iter([(
            "x",
            std::sync::Arc::new(Int64Array::from_iter_values(0..1000)) as _,
        )])
        .unwrap();
        let mut w = TableStore.writer("p#0", "T").unwrap();
        {
            let mut aw =
                parquet::arrow::ArrowWriter::try_new(&mut w, batch.schema(), None).unwrap();
            aw.write(&batch).unwrap();
            aw.close().unwrap();
        }
        match w.finish().unwrap() {
            TableBytes::Memory(b) => b.to_vec(),
        }
    }

    #[test]
    fn memory_store_reads_back_by_chunk() {
        let pq = parquet_file();
        let t = TableBytes::Memory(Bytes::from(pq.clone()));
        assert_eq!(t.kind(), "memory");
        let r = ParquetRecordBatchReaderBuilder::try_new(t.clone())
            .unwrap()
            .build()
            .unwrap();
        let rows: usize = r.map(|b| b.unwrap().num_rows()).sum();
        assert_eq!(rows, 1000);
        let mut all = Vec::new();
        t.reader().read_to_end(&mut all).unwrap();
        assert_eq!(all, pq);
        // Past the end: an error naming the range, not a panic.
        assert!(t.get_bytes(pq.len() as u64 - 2, 4).is_err());
        let mut b = [0u8; 4];
        assert!(t.read_at(pq.len() as u64, &mut b).is_err());
    }

    #[test]
    fn zip_streams_every_table() {
        let pq = parquet_file();
        let a = TableBytes::Memory(Bytes::from(pq.clone()));
        let b = TableBytes::Memory(Bytes::from_static(b"xyz"));
        let out = zip_tables(
            [
                ("k/A.parquet".to_string(), &a),
                ("k/B.parquet".to_string(), &b),
            ]
            .into_iter(),
            std::io::Cursor::new(Vec::new()),
        )
        .unwrap();
        let mut z = zip::ZipArchive::new(std::io::Cursor::new(out.into_inner())).unwrap();
        let mut got = Vec::new();
        z.by_name("k/A.parquet")
            .unwrap()
            .read_to_end(&mut got)
            .unwrap();
        assert_eq!(got, pq);
        got.clear();
        z.by_name("k/B.parquet")
            .unwrap()
            .read_to_end(&mut got)
            .unwrap();
        assert_eq!(got, b"xyz");
    }
}
