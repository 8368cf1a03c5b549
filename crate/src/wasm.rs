//! The JS-facing API, compiled only for wasm32 and used from a Web Worker (www/src/worker.ts).
//! Bulk data crosses as `Uint8Array`s (Arrow IPC, Parquet, zip); small metadata as plain JS
//! objects as JSON (see `to_js`). Nothing here decodes: it wires browser `Blob`s to the core.
//! Processed tables live in [`crate::store`]: OPFS files of the worker's file store when one is
//! installed (`set_file_store`), else memory; other code reads them with [`Session::reader`].

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use serde::Serialize;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::error::{Error, Result};
use crate::inventory::{self, Inventory};
use crate::source::{check_range, ByteSource};
use crate::store::{TableBytes, TableStore, TableWrite};

mod table_api;

/// Size of the window a [`BlobSource`] reads at once: small decoder reads (headers, 16-byte
/// records) are served from it instead of one `FileReaderSync` call each.
const WINDOW: u64 = 4 << 20;

/// Reads at least this long bypass the window: the time-ordered DMA pass reads each sorted run
/// in pieces of at least `ntff::dma::RUN_CHUNK` (64 KiB), and real captures interleave up to one run per DMA
/// engine, so serving those through the single window would refill 4 MiB per 64 KiB piece.
const DIRECT_READ: u64 = 32 << 10;
const _: () = assert!(crate::ntff::dma::RUN_CHUNK as u64 >= DIRECT_READ);

#[wasm_bindgen]
extern "C" {
    /// The worker's read-ahead (www/src/readahead.ts `ReadAhead`): a helper worker reads the
    /// piece after each large read into a `SharedArrayBuffer` while the core decodes this one, so
    /// the next `FileReaderSync` call (≈ 2.5 ms per MiB, ARCHITECTURE "Memory") overlaps with
    /// decoding instead of stalling it. Only in a cross-origin isolated page.
    pub type ReadAhead;
    /// Fills `buf` with bytes `at .. at + buf.len()` of `blob` from bytes read in advance and
    /// returns `buf.len()`, or returns -1 when it does not hold them all (the caller reads them
    /// itself). After a read of a streaming decoder's size (4 MiB or more) it asks its helper
    /// for the piece after it.
    #[wasm_bindgen(method, catch)]
    fn read(
        this: &ReadAhead,
        blob: &web_sys::Blob,
        at: f64,
        buf: &mut [u8],
    ) -> std::result::Result<f64, JsValue>;
}

thread_local! {
    /// The installed [`ReadAhead`] (`set_read_ahead`).
    static READ_AHEAD: RefCell<Option<ReadAhead>> = const { RefCell::new(None) };
}

/// Installs the worker's read-ahead (www/src/worker.ts): from now on the reads of picked files
/// that bypass [`BlobSource`]'s window are offered to it first. `null` removes it. The bytes are
/// the same either way: a read it does not serve is read directly.
#[wasm_bindgen]
pub fn set_read_ahead(r: Option<ReadAhead>) {
    READ_AHEAD.with(|c| *c.borrow_mut() = r);
}

/// `buf` served by the installed [`ReadAhead`] (false: none, or it did not hold the bytes, or
/// it failed; the caller then reads them itself).
fn read_ahead(blob: &web_sys::Blob, offset: u64, buf: &mut [u8]) -> bool {
    READ_AHEAD.with(|c| {
        c.borrow().as_ref().is_some_and(|r| {
            r.read(blob, offset as f64, buf)
                .is_ok_and(|n| n == buf.len() as f64)
        })
    })
}

/// A browser `Blob`/`File` read by slices with `FileReaderSync` (worker only). Offsets cross as
/// f64 (`Blob.slice`'s i32 overload overflows past 2 GiB; spec/README.md).
pub struct BlobSource {
    blob: web_sys::Blob,
    len: u64,
    reader: web_sys::FileReaderSync,
    cache: RefCell<(u64, Vec<u8>)>,
}

impl BlobSource {
    /// Wraps `blob`. Errors when `FileReaderSync` is unavailable (not in a worker).
    pub fn new(blob: web_sys::Blob) -> Result<Self> {
        let reader = web_sys::FileReaderSync::new()
            .map_err(|e| Error::Io(format!("FileReaderSync unavailable: {e:?}")))?;
        let len = blob.size() as u64;
        Ok(BlobSource {
            blob,
            len,
            reader,
            cache: RefCell::new((0, Vec::new())),
        })
    }

    fn read_raw(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let end = offset + buf.len() as u64;
        let slice = self
            .blob
            .slice_with_f64_and_f64(offset as f64, end as f64)
            .map_err(|e| Error::Io(format!("Blob.slice failed: {e:?}")))?;
        let ab = self
            .reader
            .read_as_array_buffer(&slice)
            .map_err(|e| Error::Io(format!("FileReaderSync failed at offset {offset}: {e:?}")))?;
        let arr = js_sys::Uint8Array::new(&ab);
        if arr.length() as usize != buf.len() {
            return Err(Error::Truncated {
                offset,
                wanted: buf.len() as u64,
                available: arr.length() as u64,
            });
        }
        arr.copy_to(buf);
        Ok(())
    }
}

impl ByteSource for BlobSource {
    fn len(&self) -> u64 {
        self.len
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        check_range(self.len, offset, buf.len())?;
        if buf.len() as u64 >= DIRECT_READ {
            if read_ahead(&self.blob, offset, buf) {
                return Ok(());
            }
            return self.read_raw(offset, buf);
        }
        let mut cache = self.cache.borrow_mut();
        let (start, data) = &mut *cache;
        let hit = offset >= *start && offset + buf.len() as u64 <= *start + data.len() as u64;
        if !hit {
            let s = offset - offset % (WINDOW / 2);
            let e = (s + WINDOW).min(self.len);
            data.resize((e - s) as usize, 0);
            self.read_raw(s, data)?;
            *start = s;
        }
        let o = (offset - *start) as usize;
        buf.copy_from_slice(&data[o..o + buf.len()]);
        Ok(())
    }
}

#[derive(Clone)]
enum Input {
    Blob(web_sys::Blob),
    Bytes(Rc<Vec<u8>>),
}

/// A processed table kept as a Parquet file (crate::store): in a file of the worker's OPFS
/// store when one is installed, so its bytes never sit in wasm memory, else in memory (all-null
/// columns and repeated values cost almost nothing there). Views read back only the row groups
/// and columns they show.
struct StoredTable {
    data: TableBytes,
    rows: u64,
}

/// A processed profile's tables by name.
type Stored = BTreeMap<String, StoredTable>;

/// A processed profile's stored tables as a [`crate::conform::TableSource`].
struct StoredTables<'a>(&'a Stored);

impl crate::conform::TableSource for StoredTables<'_> {
    fn table(&self, name: &str) -> Option<arrow_array::RecordBatch> {
        let t = self.0.get(name)?;
        let (schema, batches) = crate::sink::read_parquet(t.data.clone(), None, 0, None).ok()?;
        arrow_select::concat::concat_batches(&schema, batches.iter()).ok()
    }
}

/// A sink whose tables stream into the session's [`TableStore`] under one profile key.
type StoreSink<'a> =
    crate::sink::ParquetSink<TableWrite, Box<dyn FnMut(&str) -> Result<TableWrite> + 'a>>;

fn store_sink(key: &str) -> StoreSink<'_> {
    crate::sink::ParquetSink::new(Box::new(move |t: &str| TableStore.writer(key, t)))
}

/// Largest DMA share of an NTFF's trace bytes ([`crate::ntff::dma::dma_share`]) for which a
/// split decode pipelines its Parquet to the DMA side's worker. The demo's instruction-dense
/// mix is 0.07, the KevGomes v6 sample's above 0.5 (crate/tests/end_to_end.rs
/// `split_decode_equals_one_thread`).
const PIPE_MAX_DMA_SHARE: f64 = 0.25;

/// A sink whose batches go to another worker's Parquet writer ([`Session::pipe_begin`]): each
/// batch as an IPC stream ([`crate::sink::pipe_encode`]) handed to the JS function
/// `f(table, bytes)` as a view of wasm memory, which `f` copies into the pipe's shared slots
/// before it returns, first blocking while the other worker is too far behind
/// (www/src/worker.ts `pipeSender`: memory stays bounded, and no buffer is allocated per
/// batch). Errors: `f` threw (the other worker stopped; the decode then stops with it).
struct RemoteSink<'a> {
    f: &'a js_sys::Function,
    /// Only this table goes to `f` (the rest to `local`); `None`: every table.
    only: Option<&'static str>,
    local: &'a mut dyn crate::tables::TableSink,
    /// ms spent encoding batches and in `f` (benchmarks: the result's `pipe_ms`).
    encode_ms: f64,
    call_ms: f64,
}

impl crate::tables::TableSink for RemoteSink<'_> {
    fn batch(
        &mut self,
        def: &'static crate::tables::TableDef,
        batch: arrow_array::RecordBatch,
    ) -> Result<()> {
        if self.only.is_some_and(|t| t != def.name) {
            return self.local.batch(def, batch);
        }
        let t0 = js_sys::Date::now();
        let bytes = crate::sink::pipe_encode(&batch)?;
        let t1 = js_sys::Date::now();
        self.encode_ms += t1 - t0;
        // SAFETY: a view of `bytes` in wasm memory, valid while nothing allocates here: `f`
        // copies it before it returns (into the pipe's shared slots) and calls nothing of ours.
        let view = unsafe { js_sys::Uint8Array::view(&bytes) };
        let r = self
            .f
            .call2(&JsValue::NULL, &JsValue::from_str(def.name), &view)
            .map(|_| ())
            .map_err(|e| {
                let why = e
                    .dyn_ref::<js_sys::Error>()
                    .and_then(|e| e.message().as_string())
                    .unwrap_or_else(|| "stopped".into());
                Error::Other(format!("the Parquet writer in the other worker: {why}"))
            });
        self.call_ms += js_sys::Date::now() - t1;
        drop(bytes);
        r
    }
}

/// The wasm heap's allocator with two counters: bytes live now and their high-water mark since
/// [`heap_reset_peak`]. `memory.buffer.byteLength` only says what the allocator ever asked the
/// engine for (it never shrinks); these say what the core actually held, so a gap between the two
/// is fragmentation, not state (docs/ARCHITECTURE.md "Memory"). One add per allocation.
struct CountingAlloc;

static HEAP_LIVE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static HEAP_PEAK: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator (dlmalloc on wasm32); the
// counters are only arithmetic on the requested sizes.
unsafe impl std::alloc::GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
        let p = unsafe { std::alloc::System.alloc(l) };
        if !p.is_null() {
            heap_add(l.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: std::alloc::Layout) -> *mut u8 {
        let p = unsafe { std::alloc::System.alloc_zeroed(l) };
        if !p.is_null() {
            heap_add(l.size());
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: std::alloc::Layout) {
        unsafe { std::alloc::System.dealloc(p, l) };
        HEAP_LIVE.fetch_sub(l.size(), std::sync::atomic::Ordering::Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: std::alloc::Layout, new: usize) -> *mut u8 {
        let q = unsafe { std::alloc::System.realloc(p, l, new) };
        if !q.is_null() {
            HEAP_LIVE.fetch_sub(l.size(), std::sync::atomic::Ordering::Relaxed);
            heap_add(new);
        }
        q
    }
}

fn heap_add(n: usize) {
    use std::sync::atomic::Ordering::Relaxed;
    let live = HEAP_LIVE.fetch_add(n, Relaxed) + n;
    HEAP_PEAK.fetch_max(live, Relaxed);
}

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// Starts a new high-water mark of live heap bytes (at the start of each decode).
fn heap_reset_peak() {
    use std::sync::atomic::Ordering::Relaxed;
    HEAP_PEAK.store(HEAP_LIVE.load(Relaxed), Relaxed);
}

/// One sample of [`MemoryTrace`]: the stage, the progress of that stage (bytes or steps), the
/// live heap bytes, their high-water mark since the decode began, and the wasm memory size.
#[derive(Serialize)]
struct MemorySample {
    stage: String,
    done: u64,
    total: u64,
    heap_live: usize,
    heap_peak: usize,
    wasm_memory: f64,
}

/// Where a decode's wasm memory went: a sample each time the wasm memory grew (at a progress
/// report, so with the stage that grew it) and at the end of each step of
/// `Session::decode_stored`; at most [`MemoryTrace::CAP`] growth samples. Returned with the
/// result as `memory_trace` (scripts/bench-wasm.mjs `--trace` prints it).
#[derive(Default)]
struct MemoryTrace {
    samples: Vec<MemorySample>,
    last_memory: f64,
    grown: usize,
}

impl MemoryTrace {
    const CAP: usize = 256;
    /// Records a sample when the wasm memory grew since the last one (or `always`).
    fn sample(&mut self, stage: &str, done: u64, total: u64, always: bool) {
        use std::sync::atomic::Ordering::Relaxed;
        let m = wasm_memory_bytes();
        let grew = m > self.last_memory;
        if !(always || grew && self.grown < Self::CAP) {
            return;
        }
        if grew && !always {
            self.grown += 1;
        }
        self.last_memory = m;
        self.samples.push(MemorySample {
            stage: stage.to_string(),
            done,
            total,
            heap_live: HEAP_LIVE.load(Relaxed),
            heap_peak: HEAP_PEAK.load(Relaxed),
            wasm_memory: m,
        });
    }
}

/// Size of the wasm memory now (bytes; it never shrinks, so the high-water mark).
fn wasm_memory_bytes() -> f64 {
    wasm_bindgen::memory()
        .dyn_into::<js_sys::WebAssembly::Memory>()
        .map(|m| {
            m.buffer()
                .unchecked_into::<js_sys::ArrayBuffer>()
                .byte_length()
        })
        .unwrap_or(0) as f64
}

/// Closes every writer of a finished sink: its tables as stored ones. Errors: the store's.
fn finished(sink: StoreSink<'_>) -> std::result::Result<Stored, JsError> {
    let mut stored = Stored::new();
    for (name, (w, rows)) in sink.into_outputs().map_err(js_err)? {
        let data = w.finish().map_err(js_err)?;
        stored.insert(name.to_string(), StoredTable { data, rows });
    }
    Ok(stored)
}

/// Where each table of a profile went: `[{name, kind: "opfs"|"memory", file, bytes, rows}]`
/// (`file` the file store id, null in memory).
fn stored_list(stored: &Stored) -> js_sys::Array {
    let list = js_sys::Array::new();
    for (name, t) in stored {
        let o = js_sys::Object::new();
        let _ = js_sys::Reflect::set(&o, &"name".into(), &JsValue::from_str(name));
        let _ = js_sys::Reflect::set(&o, &"kind".into(), &JsValue::from_str(t.data.kind()));
        let file = t.data.file_id().map_or(JsValue::NULL, JsValue::from);
        let _ = js_sys::Reflect::set(&o, &"file".into(), &file);
        let bytes = parquet::file::reader::Length::len(&t.data) as f64;
        let _ = js_sys::Reflect::set(&o, &"bytes".into(), &JsValue::from_f64(bytes));
        let _ = js_sys::Reflect::set(&o, &"rows".into(), &JsValue::from_f64(t.rows as f64));
        list.push(&o);
    }
    list
}

/// Tables re-opened in this worker's file store, `[{name, rows, file, bytes}]` (`file`: the id the
/// store gave the file), as stored tables. Errors: not that shape.
fn adopted_tables(tables: &JsValue) -> std::result::Result<Stored, JsError> {
    #[derive(serde::Deserialize)]
    struct T {
        name: String,
        rows: f64,
        file: u32,
        bytes: f64,
    }
    let text = js_sys::JSON::stringify(tables)
        .map_err(|_| JsError::new("adopt: tables are not JSON"))?
        .as_string()
        .unwrap_or_default();
    let list: Vec<T> =
        serde_json::from_str(&text).map_err(|e| JsError::new(&format!("adopt: tables {e}")))?;
    Ok(list
        .into_iter()
        .map(|t| {
            let data = TableBytes::File {
                id: t.file,
                len: t.bytes as u64,
            };
            (
                t.name,
                StoredTable {
                    data,
                    rows: t.rows as u64,
                },
            )
        })
        .collect())
}

/// One picked folder: its files, the inventory and the processed results.
#[wasm_bindgen]
pub struct Session {
    files: BTreeMap<String, Input>,
    inventory: Option<Inventory>,
    results: BTreeMap<String, Stored>,
    /// Level-of-detail summaries of each processed profile (same keys as `results`), built while
    /// its tables streamed (`crate::lod`).
    lods: BTreeMap<String, crate::lod::Lod>,
    /// Device profiles decoded by [`Session::process_split`] whose Summary and derived tables
    /// wait for [`Session::finish_split`] (same keys as `results`).
    pending: BTreeMap<String, crate::profile::DevicePending>,
    /// The Parquet writer of another worker's pipelined decode ([`Session::pipe_begin`]): its
    /// sink and the reader of the batches' IPC streams.
    pipe: Option<(StoreSink<'static>, crate::sink::PipeReader)>,
    /// Source heat of each device profile, built while its `Instruction` rows streamed (same
    /// keys as `results`; a re-opened profile has none: [`Session::source_heat`] reads its table).
    heats: BTreeMap<String, crate::source_code::SourceHeat>,
    /// Source files for the Source view, built on first use (`sources`).
    sources: Option<(
        crate::source_code::SourceIndex,
        Vec<crate::source_code::InputLoad>,
    )>,
}

/// Results cross to JS through JSON text: reports have integer-keyed maps (trace_info name
/// tables) and Unix-ns times beyond 2^53, which serde-wasm-bindgen refuses; `JSON.parse` turns
/// keys into strings and large integers into (rounded, display-only) numbers. Exact values stay
/// in the tables (int64 → BigInt).
fn to_js<T: Serialize>(v: &T) -> std::result::Result<JsValue, JsError> {
    let text = serde_json::to_string(v).map_err(|e| JsError::new(&e.to_string()))?;
    js_sys::JSON::parse(&text).map_err(|_| JsError::new("result is not valid JSON"))
}

fn js_err(e: Error) -> JsError {
    JsError::new(&e.to_string())
}

/// A JS progress callback `(stage, done, total, rows)` as the core's progress closure; `rows`
/// is what [`RowCount`] has counted so far.
fn progress_cb<'a>(
    f: &'a js_sys::Function,
    rows: &'a std::cell::Cell<u64>,
    trace: &'a RefCell<MemoryTrace>,
) -> impl FnMut(&str, u64, u64) + 'a {
    move |stage: &str, done: u64, total: u64| {
        trace.borrow_mut().sample(stage, done, total, false);
        let args = js_sys::Array::of4(
            &JsValue::from_str(stage),
            &JsValue::from_f64(done as f64),
            &JsValue::from_f64(total as f64),
            &JsValue::from_f64(rows.get() as f64),
        );
        let _ = f.apply(&JsValue::NULL, &args);
        strike_armed_fault(stage);
    }
}

/// A sink that builds the source heat ([`crate::source_code::HeatBuilder`]) of the `Instruction`
/// batches passing through to `inner`, so the Source view needs no second pass over the stored
/// table (at 2 GB of instruction-dense NTFF that pass took seconds after the timeline was drawn).
struct HeatSink<'a> {
    inner: &'a mut dyn crate::tables::TableSink,
    /// `Some` once an `Instruction` batch passed.
    heat: Option<crate::source_code::HeatBuilder>,
}

impl crate::tables::TableSink for HeatSink<'_> {
    fn batch(
        &mut self,
        def: &'static crate::tables::TableDef,
        batch: arrow_array::RecordBatch,
    ) -> Result<()> {
        if std::ptr::eq(def, &crate::tables::explorer::INSTRUCTION) {
            self.heat.get_or_insert_default().add_batch(&batch);
        }
        self.inner.batch(def, batch)
    }
}

/// A sink that counts the rows passing through to `inner` (progress reports carry them).
struct RowCount<'a> {
    inner: &'a mut dyn crate::tables::TableSink,
    rows: &'a std::cell::Cell<u64>,
}

impl crate::tables::TableSink for RowCount<'_> {
    fn batch(
        &mut self,
        def: &'static crate::tables::TableDef,
        batch: arrow_array::RecordBatch,
    ) -> Result<()> {
        self.rows.set(self.rows.get() + batch.num_rows() as u64);
        self.inner.batch(def, batch)
    }
}

impl Session {
    /// Keeps a finished sink's tables under `key` and adds to the result object `js` the wasm
    /// memory high-water mark (`wasm_memory_bytes`) and where each table went
    /// (`stored: [{name, kind: "opfs"|"memory", file, bytes}]`, `file` the file store id).
    /// The scanned inventory (`scan` first).
    fn inventory(&self) -> std::result::Result<&Inventory, JsError> {
        self.inventory
            .as_ref()
            .ok_or_else(|| JsError::new("scan() first"))
    }
    /// Runs `decode` (one profile's decode into the sink it is given) inside the session's sinks:
    /// rows counted for `progress`, level-of-detail summaries gathered (`origin`: the time axis
    /// origin, [`crate::lod::Lod::finish`]) and the tables stored under `key`, beside those it
    /// already holds (a [`Session::finish_split`]). `decode` returns the profile's result as JS;
    /// `wasm_memory_bytes` and `stored` (every table of `key`) are added to it.
    fn decode_stored(
        &mut self,
        key: &str,
        progress: &js_sys::Function,
        origin: Option<i64>,
        remote: Option<(&js_sys::Function, Option<&'static str>)>,
        decode: impl FnOnce(
            &Self,
            &mut dyn crate::tables::TableSink,
            &mut dyn FnMut(&str, u64, u64),
        ) -> std::result::Result<JsValue, JsError>,
    ) -> std::result::Result<JsValue, JsError> {
        heap_reset_peak();
        let trace = RefCell::new(MemoryTrace::default());
        trace.borrow_mut().sample("start", 0, 0, true);
        let mut sink = store_sink(key);
        let mut piped = None;
        let inner: &mut dyn crate::tables::TableSink = match remote {
            Some((f, only)) => piped.insert(RemoteSink {
                f,
                only,
                local: &mut sink,
                encode_ms: 0.0,
                call_ms: 0.0,
            }),
            None => &mut sink,
        };
        let rows = std::cell::Cell::new(0);
        let mut cb = progress_cb(progress, &rows, &trace);
        let mut heat = HeatSink { inner, heat: None };
        let mut lod = crate::lod::LodCollector::new(&mut heat);
        if let Some(l) = self.lods.remove(key) {
            lod.lod = l;
        }
        let js = decode(
            self,
            &mut RowCount {
                inner: &mut lod,
                rows: &rows,
            },
            &mut cb,
        )?;
        let mut lod = lod.lod;
        if let Some(h) = heat.heat.take() {
            self.heats.insert(key.to_string(), h.finish());
        }
        if let Some(p) = piped.take() {
            let ms = js_sys::Array::of2(&p.encode_ms.into(), &p.call_ms.into());
            let _ = js_sys::Reflect::set(&js, &"pipe_ms".into(), &ms);
        }
        trace.borrow_mut().sample("decoded", 0, 0, true);
        lod.finish(origin);
        let lod_bytes = lod.heap_bytes();
        self.lods.insert(key.to_string(), lod);
        self.store(key, sink, &js)?;
        drop(cb);
        let mut trace = trace.into_inner();
        trace.sample("stored", 0, 0, true);
        let _ = js_sys::Reflect::set(&js, &"memory_trace".into(), &to_js(&trace.samples)?);
        let _ = js_sys::Reflect::set(
            &js,
            &"lod_heap_bytes".into(),
            &JsValue::from_f64(lod_bytes as f64),
        );
        Ok(js)
    }
    fn store(
        &mut self,
        key: &str,
        sink: StoreSink<'_>,
        js: &JsValue,
    ) -> std::result::Result<(), JsError> {
        let mut stored = self.results.remove(key).unwrap_or_default();
        stored.extend(finished(sink)?);
        let _ = js_sys::Reflect::set(js, &"stored".into(), &stored_list(&stored));
        let _ = js_sys::Reflect::set(
            js,
            &"wasm_memory_bytes".into(),
            &JsValue::from_f64(wasm_memory_bytes()),
        );
        self.results.insert(key.to_string(), stored);
        Ok(())
    }
    /// Registers re-opened files (`[{name, rows, file, bytes}]`, [`adopted_tables`]) beside the
    /// tables `key` already has; every table of `key` after. Errors: not that shape.
    fn add_tables(&mut self, key: &str, tables: &JsValue) -> std::result::Result<&Stored, JsError> {
        let adopted = adopted_tables(tables)?;
        let stored = self.results.entry(key.to_string()).or_default();
        stored.extend(adopted);
        Ok(stored)
    }
    /// [`crate::ntff::dma::dma_share`] of a device's NTFF (its info section read); `None` when
    /// there is no readable one.
    fn dma_share(&self, profile_id: &str, device_index: usize) -> Option<f64> {
        let inv = self.inventory.as_ref()?;
        let dev = inv
            .profiles
            .iter()
            .find(|p| p.id == profile_id)?
            .devices
            .get(device_index)?;
        let src = self.open(dev.ntff.as_deref()?).ok()?;
        let info = crate::ntff::read_info(&*src).ok()??;
        Some(crate::ntff::dma::dma_share(&info))
    }
    fn open(&self, path: &str) -> Result<Box<dyn ByteSource>> {
        match self.files.get(path) {
            Some(Input::Blob(b)) => Ok(Box::new(BlobSource::new(b.clone())?)),
            Some(Input::Bytes(b)) => Ok(Box::new(b.clone())),
            None => Err(Error::Other(format!("{path}: not among the picked files"))),
        }
    }
    fn table(&self, key: &str, table: &str) -> std::result::Result<&StoredTable, JsError> {
        self.profile(key)?
            .get(table)
            .ok_or_else(|| JsError::new(&format!("no table {table}")))
    }
    fn profile(&self, key: &str) -> std::result::Result<&Stored, JsError> {
        self.results
            .get(key)
            .ok_or_else(|| JsError::new(&format!("no processed profile {key}")))
    }
    /// Table `table` of processed profile `key` as a Parquet [`ChunkReader`]
    /// (`parquet::file::reader::ChunkReader`; cheap to clone): readers built on it
    /// (`ParquetRecordBatchReaderBuilder::try_new`, row-group selection, projection) fetch only
    /// the footer and the column chunks they use, from OPFS or memory. Errors: no such profile
    /// or table.
    pub fn reader(&self, key: &str, table: &str) -> std::result::Result<TableBytes, JsError> {
        Ok(self.table(key, table)?.data.clone())
    }
    fn zip_into<W: std::io::Write + std::io::Seek>(
        &self,
        key: &str,
        out: W,
    ) -> std::result::Result<W, JsError> {
        let prefix = crate::util::safe_name(key);
        let tables = self.profile(key)?;
        crate::store::zip_tables(
            tables
                .iter()
                .map(|(n, t)| (format!("{prefix}/{n}.parquet"), &t.data)),
            out,
        )
        .map_err(js_err)
    }
    fn ipc(
        &self,
        key: &str,
        table: &str,
        columns: Option<&[String]>,
        offset: usize,
        limit: Option<usize>,
    ) -> std::result::Result<Vec<u8>, JsError> {
        strike_armed_fault("table");
        let t = self.table(key, table)?;
        let (schema, batches) =
            crate::sink::read_parquet(t.data.clone(), columns, offset, limit).map_err(js_err)?;
        crate::sink::ipc_of(&schema, &batches).map_err(js_err)
    }
}

#[wasm_bindgen]
impl Session {
    /// An empty session.
    #[wasm_bindgen(constructor)]
    pub fn new() -> Session {
        Session {
            files: BTreeMap::new(),
            inventory: None,
            results: BTreeMap::new(),
            pending: BTreeMap::new(),
            lods: BTreeMap::new(),
            pipe: None,
            heats: BTreeMap::new(),
            sources: None,
        }
    }
    /// Adds a picked file (`path` relative to the picked folder, '/'-separated). Not read yet.
    pub fn add_file(&mut self, path: String, blob: web_sys::Blob) {
        self.files.insert(path, Input::Blob(blob));
    }
    /// Adds a file from bytes (demo capture, tests).
    pub fn add_bytes(&mut self, path: String, bytes: Vec<u8>) {
        self.files.insert(path, Input::Bytes(Rc::new(bytes)));
    }
    /// Classifies the files, groups them into profiles and pairs NTFFs with NEFFs; returns the
    /// inventory (serde of [`inventory::Inventory`]).
    pub fn scan(&mut self) -> std::result::Result<JsValue, JsError> {
        let list: Vec<(String, u64)> = self
            .files
            .iter()
            .map(|(p, f)| {
                let size = match f {
                    Input::Blob(b) => b.size() as u64,
                    Input::Bytes(b) => b.as_slice().len() as u64,
                };
                (p.clone(), size)
            })
            .collect();
        let inv = inventory::build(&list, &|p: &str| self.open(p));
        let js = to_js(&inv)?;
        self.inventory = Some(inv);
        self.sources = None;
        Ok(js)
    }
    /// Decodes device profile `device_index` of profile `profile_id`; its tables are kept in the
    /// session as in-memory Parquet files. `progress(stage, done, total)` is called as bytes are
    /// decoded. Returns `{key, tables: [{name, rows}], summary, problems, wasm_memory_bytes}`.
    pub fn process(
        &mut self,
        profile_id: String,
        device_index: usize,
        progress: &js_sys::Function,
    ) -> std::result::Result<JsValue, JsError> {
        let key = format!("{profile_id}#{device_index}");
        self.heats.remove(&key);
        // Device tables are ns from the execution start: the axis is theirs.
        self.decode_stored(&key, progress, Some(0), None, |s, sink, cb| {
            let inv = s.inventory()?;
            let out = crate::profile::process_device(
                inv,
                &profile_id,
                device_index,
                &|p: &str| s.open(p),
                sink,
                cb,
            )
            .map_err(js_err)?;
            to_js(&out.with_key(&key))
        })
    }
    /// The first half of a device decode split over two workers: [`Session::process`] without
    /// the NTFF's DMA rows (decoded by another worker) and without the Summary, derived, `Warning` and
    /// `SchemaFields` tables, which [`Session::finish_split`] writes once another worker's
    /// [`Session::dma_side`] is done (or without it). The tables so far and the timeline
    /// summaries are kept under the key. Returns `{key, pending: true, stored, wasm_memory_bytes}`.
    ///
    /// With `remote` (a JS function `(table, bytes)`, see [`RemoteSink`]) the `Instruction`
    /// table is not written here: its batches go to another worker's Parquet writer
    /// ([`Session::pipe_begin`]) as IPC streams, so that worker encodes Parquet while this one
    /// decodes; the writer's files come back after [`Session::finish_split`]
    /// ([`Session::add_stored`]). The core declines (writes everything here, `piped: false`)
    /// when the NTFF's DMA share is above [`PIPE_MAX_DMA_SHARE`].
    pub fn process_split(
        &mut self,
        profile_id: String,
        device_index: usize,
        progress: &js_sys::Function,
        remote: Option<js_sys::Function>,
    ) -> std::result::Result<JsValue, JsError> {
        let key = format!("{profile_id}#{device_index}");
        self.pending.remove(&key);
        self.heats.remove(&key);
        let mut pending = None;
        // The other worker also decodes the DMA side: with a large one it would fall behind
        // and this worker would wait on it (the halves then run one after the other).
        let share = self.dma_share(&profile_id, device_index);
        let remote = remote.filter(|_| share.is_some_and(|s| s <= PIPE_MAX_DMA_SHARE));
        let piped = remote.is_some();
        // Only `Instruction` (the bulk): the other worker also runs the DMA side meanwhile, and
        // it is the slower half (2 GB instruction-dense NTFF, every table piped: this worker
        // waited 15 s of 49 s on it).
        let remote = remote
            .as_ref()
            .map(|f| (f, Some(crate::tables::explorer::INSTRUCTION.name)));
        let js = self.decode_stored(&key, progress, Some(0), remote, |s, sink, cb| {
            let inv = s.inventory()?;
            let opts = crate::profile::DeviceOptions {
                dma_elsewhere: true,
                ..Default::default()
            };
            let p = crate::profile::begin_device(
                inv,
                &profile_id,
                device_index,
                &|p: &str| s.open(p),
                sink,
                cb,
                &opts,
            )
            .map_err(js_err)?;
            pending = Some(p);
            to_js(&serde_json::json!({ "key": key, "pending": true, "piped": piped }))
        })?;
        if let Some(p) = pending {
            self.pending.insert(key, p);
        }
        Ok(js)
    }
    /// The other worker's half of a split device decode: the NTFF's DMA rows
    /// ([`crate::profile::dma_side_device`]: `DmaPacket`, `DmaPacketAggregated`)
    /// stored under the key in this worker's store, with the level-of-detail summaries of those
    /// rows. Returns `{key, side, lod, stored}`: `side` is JSON text for
    /// [`Session::finish_split`] (i64 sums stay exact), `lod` the summaries
    /// ([`crate::lod::Lod::to_bytes`], a Uint8Array), `stored` the files to hand over (then
    /// [`Session::release`] the key here and close the files: the finishing worker opens them).
    pub fn dma_side(
        &mut self,
        profile_id: String,
        device_index: usize,
        progress: &js_sys::Function,
    ) -> std::result::Result<JsValue, JsError> {
        let key = format!("{profile_id}#{device_index}");
        self.results.remove(&key);
        self.lods.remove(&key);
        let js = self.decode_stored(&key, progress, Some(0), None, |s, sink, cb| {
            let inv = s.inventory()?;
            let side = crate::profile::dma_side_device(
                inv,
                &profile_id,
                device_index,
                &|p: &str| s.open(p),
                sink,
                cb,
            )
            .map_err(js_err)?;
            to_js(&serde_json::json!({ "key": key, "side": side.to_json() }))
        })?;
        // The summaries go with the files; this worker keeps neither.
        let lod = self
            .lods
            .remove(&key)
            .map(|l| l.to_bytes())
            .unwrap_or_default();
        let _ = js_sys::Reflect::set(
            &js,
            &"lod".into(),
            &js_sys::Uint8Array::from(lod.as_slice()),
        );
        Ok(js)
    }
    /// Completes a [`Session::process_split`] of `key`: registers `tables` (`[{name, rows, file,
    /// bytes}]`, the other worker's [`Session::dma_side`] files re-opened in this worker's file
    /// store) and its `lod` summaries, then writes the Summary, derived, `Warning` and
    /// `SchemaFields` tables with its `side` merged in (`None`: that worker failed, so the DMA side
    /// is decoded here). Returns what [`Session::process`] returns. Errors: no pending decode of
    /// `key`, a malformed `side` or `lod`.
    ///
    /// With `remote` (the pipe [`Session::process_split`] used), the tables written here go to
    /// the other worker's Parquet writer too; its files come back through [`Session::add_stored`].
    pub fn finish_split(
        &mut self,
        key: String,
        side: Option<String>,
        lod: Option<Vec<u8>>,
        tables: JsValue,
        progress: &js_sys::Function,
        remote: Option<js_sys::Function>,
    ) -> std::result::Result<JsValue, JsError> {
        let pending = self
            .pending
            .remove(&key)
            .ok_or_else(|| JsError::new(&format!("no split decode of {key} to finish")))?;
        let side = match side {
            Some(t) => Some(crate::profile::DmaSideResult::from_json(&t).map_err(js_err)?),
            None => None,
        };
        if side.is_some() {
            if let (Some(bytes), Some(l)) = (lod, self.lods.get_mut(&key)) {
                l.absorb(&bytes).map_err(js_err)?;
            }
        }
        // The DMA side's files (none without `side`).
        self.add_tables(&key, &tables)?;
        let k = key.clone();
        // Every table: the other worker has nothing else to do by now.
        let remote = remote.as_ref().map(|f| (f, None));
        self.decode_stored(&key, progress, Some(0), remote, move |s, sink, cb| {
            let out = crate::profile::finish_device(pending, side, &|p: &str| s.open(p), sink, cb)
                .map_err(js_err)?;
            to_js(&out.with_key(&k))
        })
    }
    /// Decodes the system trace of profile `profile_id` (System or System+Device); its tables are
    /// kept under the returned key like a device profile's. Returns
    /// `{key, tables: [{name, rows}], report, problems, wasm_memory_bytes}`.
    pub fn process_system(
        &mut self,
        profile_id: String,
        progress: &js_sys::Function,
    ) -> std::result::Result<JsValue, JsError> {
        let key = format!("{profile_id}#system");
        // System tables are Unix ns: the axis starts at the earliest event or sample.
        self.decode_stored(&key, progress, None, None, |s, sink, cb| {
            let inv = s.inventory()?;
            let out =
                crate::profile::process_system(inv, &profile_id, &|p: &str| s.open(p), sink, cb)
                    .map_err(js_err)?;
            to_js(&out.with_key(&key))
        })
    }
    /// Decodes the PyTorch memory snapshot at `path` (a picked `memory_snapshot_rank<N>.pickle`);
    /// its `Memory*` tables are kept under the returned key. Returns
    /// `{key, file, tables: [{name, rows}], report, wasm_memory_bytes}`.
    pub fn process_memory(&mut self, path: String) -> std::result::Result<JsValue, JsError> {
        let inv = self
            .inventory
            .as_ref()
            .ok_or_else(|| JsError::new("scan() first"))?;
        let key = format!("{path}#memory");
        let mut sink = store_sink(&key);
        let out = crate::profile::process_memory(inv, &path, &|p: &str| self.open(p), &mut sink)
            .map_err(js_err)?;
        let js = to_js(&out.with_key(&key))?;
        self.store(&key, sink, &js)?;
        Ok(js)
    }
    /// Table `table` of processed profile `key` as an uncompressed Arrow IPC stream.
    pub fn table_ipc(&self, key: &str, table: &str) -> std::result::Result<Vec<u8>, JsError> {
        self.ipc(key, table, None, 0, None)
    }
    /// Only `columns` of table `table` (names absent from the table are skipped) as an Arrow IPC
    /// stream: the timeline needs a handful of Instruction's ~60 columns.
    pub fn table_ipc_columns(
        &self,
        key: &str,
        table: &str,
        columns: Vec<String>,
    ) -> std::result::Result<Vec<u8>, JsError> {
        self.ipc(key, table, Some(&columns), 0, None)
    }
    /// Rows `offset .. offset + count` (clamped to the table) of table `table`, every column, as
    /// an Arrow IPC stream (table pager, instruction details).
    pub fn table_ipc_rows(
        &self,
        key: &str,
        table: &str,
        offset: usize,
        count: usize,
    ) -> std::result::Result<Vec<u8>, JsError> {
        self.ipc(key, table, None, offset, Some(count))
    }
    /// Rows of table `table` of processed profile `key`.
    pub fn table_rows(&self, key: &str, table: &str) -> std::result::Result<f64, JsError> {
        Ok(self.table(key, table)?.rows as f64)
    }
    /// Table `table` of processed profile `key` as Parquet bytes (`<Table>.parquet`), copied
    /// out of its store. For a table on OPFS the worker hands out the file itself instead
    /// (`table_file`).
    pub fn table_parquet(&self, key: &str, table: &str) -> std::result::Result<Vec<u8>, JsError> {
        strike_armed_fault("table");
        let t = &self.table(key, table)?.data;
        let mut v = vec![0; parquet::file::reader::Length::len(t) as usize];
        t.read_at(0, &mut v).map_err(js_err)?;
        Ok(v)
    }
    /// The file store id of table `table` of processed profile `key`, when it is on OPFS
    /// (undefined in memory).
    pub fn table_file(&self, key: &str, table: &str) -> std::result::Result<Option<u32>, JsError> {
        strike_armed_fault("table");
        Ok(self.table(key, table)?.data.file_id())
    }
    /// Every table of processed profile `key` as Parquet files in one zip
    /// (`<key>/<Table>.parquet`, stored), written to a new file of the file store (its id is
    /// returned) or, without one, to memory (`bundle_zip`; returns undefined here).
    pub fn bundle_file(&self, key: &str) -> std::result::Result<Option<u32>, JsError> {
        let w = TableStore.writer(key, "bundle.zip").map_err(js_err)?;
        if matches!(w, TableWrite::Memory(_)) {
            return Ok(None);
        }
        let out = self.zip_into(key, w)?.finish().map_err(js_err)?;
        Ok(out.file_id())
    }
    /// Every table of processed profile `key` as Parquet files in one zip, in memory.
    pub fn bundle_zip(&self, key: &str) -> std::result::Result<Vec<u8>, JsError> {
        let out = self.zip_into(key, std::io::Cursor::new(Vec::new()))?;
        Ok(out.into_inner())
    }
    /// Registers tables a previous worker stored on OPFS under `key` (a restarted worker:
    /// www/src/client.ts) so they are read like freshly processed ones. `tables` is
    /// `[{name, rows, file, bytes}]` (`file`: the id the file store gave the re-opened file).
    pub fn adopt(&mut self, key: String, tables: JsValue) -> std::result::Result<(), JsError> {
        let stored = adopted_tables(&tables)?;
        // Level-of-detail summaries are not stored: rebuilt from the stored timeline tables,
        // one row group at a time (bounded memory, like the decode that first built them).
        let mut lod = crate::lod::Lod::default();
        for (name, t) in &stored {
            let (Some(_), Some(def)) = (
                crate::lod::TimeCols::of(name),
                crate::tables::table_def(name),
            ) else {
                continue;
            };
            let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
                t.data.clone(),
            )
            .and_then(|b| b.build())
            .map_err(|e| JsError::new(&format!("adopt: {key} {name}: {e}")))?;
            for batch in reader {
                let batch =
                    batch.map_err(|e| JsError::new(&format!("adopt: {key} {name}: {e}")))?;
                lod.add_batch(def, &batch);
            }
        }
        // Device tables are ns from the execution start; system tables Unix ns (see `process*`).
        lod.finish(if key.ends_with("#system") {
            None
        } else {
            Some(0)
        });
        self.lods.insert(key.clone(), lod);
        self.heats.remove(&key);
        self.results.insert(key, stored);
        Ok(())
    }
    /// Indexes the picked source files (inventory kinds `SourcePy`, `SourceArchive`; archives
    /// streamed) once, and returns `{files: [{path, bytes, lines}], loads: [{file, added,
    /// skipped_binary, skipped_large, skipped_other, error}]}`.
    pub fn sources(&mut self) -> std::result::Result<JsValue, JsError> {
        use crate::inventory::FileKind;
        if self.sources.is_none() {
            let inv = self
                .inventory
                .as_ref()
                .ok_or_else(|| JsError::new("scan() first"))?;
            let mut idx = crate::source_code::SourceIndex::new();
            let mut loads = Vec::new();
            for f in &inv.files {
                if !matches!(f.kind, FileKind::SourcePy | FileKind::SourceArchive) {
                    continue;
                }
                loads.push(match self.open(&f.path) {
                    Ok(src) => idx.add_input(&f.path, src.as_ref()),
                    Err(e) => crate::source_code::InputLoad {
                        file: f.path.clone(),
                        load: crate::source_code::SourceLoad {
                            error: Some(e.to_string()),
                            ..Default::default()
                        },
                    },
                });
            }
            self.sources = Some((idx, loads));
        }
        let (idx, loads) = self
            .sources
            .as_ref()
            .ok_or_else(|| JsError::new("no sources"))?;
        to_js(&serde_json::json!({ "files": idx.listing(), "loads": loads }))
    }
    /// Adds a source file or archive (`.tar.gz`, `.tgz`, `.tar`) picked after the capture to the
    /// source index; returns its load report (see `sources`).
    pub fn add_source(
        &mut self,
        path: String,
        blob: web_sys::Blob,
    ) -> std::result::Result<JsValue, JsError> {
        self.sources()?;
        let src = BlobSource::new(blob).map_err(js_err)?;
        let (idx, loads) = self
            .sources
            .as_mut()
            .ok_or_else(|| JsError::new("no sources"))?;
        let load = idx.add_input(&path, &src);
        loads.push(load.clone());
        to_js(&load)
    }
    /// Text of the indexed source file at `path` (as listed by `sources`), or undefined.
    pub fn source_text(&mut self, path: &str) -> std::result::Result<Option<String>, JsError> {
        self.sources()?;
        Ok(self
            .sources
            .as_ref()
            .and_then(|(idx, _)| idx.get(path))
            .map(|f| f.text.clone()))
    }
    /// Resolves a debug location `path:line` to indexed files:
    /// `{location, debug_path, line, files: [path]}` (empty `files`: not picked).
    pub fn source_resolve(&mut self, location: &str) -> std::result::Result<JsValue, JsError> {
        self.sources()?;
        let (idx, _) = self
            .sources
            .as_ref()
            .ok_or_else(|| JsError::new("no sources"))?;
        to_js(&idx.resolve(location))
    }
    /// Device time per source location of processed profile `key` (its `Instruction` table,
    /// read batch by batch): `{total_ns, count, unattributed_ns, unattributed_count,
    /// lines: [{location, path, line, total_ns, count, engines: [{engine, total_ns, count}]}]}`.
    pub fn source_heat(&self, key: &str) -> std::result::Result<JsValue, JsError> {
        if let Some(h) = self.heats.get(key) {
            return to_js(h);
        }
        let t = self.table(key, "Instruction")?;
        let heat = crate::source_code::heat_of_parquet(t.data.clone()).map_err(js_err)?;
        to_js(&heat)
    }
    /// What device profile `key` did in `[start_ns, end_ns)` (ns since the execution start):
    /// the serde of [`crate::range::RangeSummary`] (busy time per engine and core with the
    /// Summary's definition, the `top` longest opcodes, DMA bytes per queue), read batch by batch
    /// from the stored `Instruction` and `DmaPacket` tables (the page's Selection panel).
    pub fn range_summary(
        &self,
        key: &str,
        start_ns: f64,
        end_ns: f64,
        top: usize,
    ) -> std::result::Result<JsValue, JsError> {
        let stored = self
            .results
            .get(key)
            .ok_or_else(|| JsError::new(&format!("no processed profile {key}")))?;
        let get = |n: &str| stored.get(n).map(|t| t.data.clone());
        let r = crate::range::range_summary(
            get("Instruction"),
            get("DmaPacket"),
            start_ns.floor() as i64,
            end_ns.ceil() as i64,
            top,
        )
        .map_err(js_err)?;
        to_js(&r)
    }
    /// Compares processed profile `key`'s tables with an AWS `neuron-profile view
    /// --output-format json` export (its bytes): returns the serde of
    /// [`crate::conform::ConformReport`]. Each compared table is read back from its stored Parquet
    /// once; exports over [`crate::conform::MAX_EXPORT_BYTES`] are refused.
    pub fn conform(&self, key: &str, export: Vec<u8>) -> std::result::Result<JsValue, JsError> {
        let stored = self.profile(key)?;
        let report = crate::conform::conform(&StoredTables(stored), &export).map_err(js_err)?;
        to_js(&report)
    }
    /// Registers the files a pipelined split decode's writer made for profile `key`
    /// (`[{name, rows, file, bytes}]`, re-opened in this worker's file store) beside its other
    /// tables, without rebuilding the timeline summaries (built while the batches streamed).
    /// Returns every table of `key` as `stored` lists them. Errors: not that shape.
    pub fn add_stored(
        &mut self,
        key: &str,
        tables: JsValue,
    ) -> std::result::Result<JsValue, JsError> {
        Ok(stored_list(self.add_tables(key, &tables)?).into())
    }
    /// Starts this worker's half of a pipelined split decode: a Parquet writer under store key
    /// `key` (not a profile key of this session: the files are handed to the decoding worker)
    /// for the batches [`Session::pipe_batch`] brings. A writer left from before is dropped.
    pub fn pipe_begin(&mut self, key: String) {
        let sink: StoreSink<'static> =
            crate::sink::ParquetSink::new(Box::new(move |t: &str| TableStore.writer(&key, t)));
        self.pipe = Some((sink, crate::sink::PipeReader::default()));
    }
    /// Writes one batch the decoding worker's [`RemoteSink`] sent (`bytes`: an IPC stream of
    /// table `table`). Errors: no [`Session::pipe_begin`], bytes that are not such a stream,
    /// the store's write errors.
    pub fn pipe_batch(&mut self, table: &str, bytes: Vec<u8>) -> std::result::Result<(), JsError> {
        use crate::tables::TableSink;
        let (sink, reader) = self
            .pipe
            .as_mut()
            .ok_or_else(|| JsError::new("pipe_batch: no pipe_begin"))?;
        let (def, batches) = reader.decode(table, bytes).map_err(js_err)?;
        for b in batches {
            sink.batch(def, b).map_err(js_err)?;
        }
        Ok(())
    }
    /// Closes the pipelined writer's files and lists them as `stored` does:
    /// `[{name, kind, rows, file, bytes}]` (`file` the file store id), for the decoding worker to
    /// re-open ([`Session::add_stored`]). Errors: no writer, the store's errors; a table the store
    /// kept in memory has `file` null (the caller refuses it).
    pub fn pipe_end(&mut self) -> std::result::Result<JsValue, JsError> {
        let (sink, _) = self
            .pipe
            .take()
            .ok_or_else(|| JsError::new("pipe_end: no pipe_begin"))?;
        Ok(stored_list(&finished(sink)?).into())
    }
    /// Drops the pipelined writer without closing its files (the decode failed; the worker
    /// deletes the files of the writer's key).
    pub fn pipe_drop(&mut self) {
        self.pipe = None;
    }
    /// Forgets a processed profile's tables (frees their memory; files on OPFS are the file
    /// store's to close and delete, www/src/worker.ts).
    pub fn release(&mut self, key: &str) {
        self.results.remove(key);
        self.lods.remove(key);
        self.pending.remove(key);
        self.heats.remove(key);
    }
    /// The timeline tracks of processed profile `key` (serde of [`crate::lod::Listing`]):
    /// `{origin, start, end, names, tracks: [{id, kind, table, pcore, name, source?, pid?, tid?,
    /// rows, start, end, max_dur, vmin, vmax, width}]}`; times are ns from `origin` (decimal
    /// text of table ns: 0 for a device profile, the earliest Unix ns for a system profile).
    pub fn lod_tracks(&self, key: &str) -> std::result::Result<JsValue, JsError> {
        let lod = self
            .lods
            .get(key)
            .ok_or_else(|| JsError::new(&format!("no processed profile {key}")))?;
        to_js(&lod.listing())
    }
    /// Summaries of `tracks` of profile `key` over `[t0, t1]` (ns from the listing's origin) in
    /// at most about `n` buckets per track, as a Float64Array (layout: [`crate::lod::Lod::query`]).
    pub fn lod(
        &self,
        key: &str,
        tracks: Vec<u32>,
        t0: f64,
        t1: f64,
        n: usize,
    ) -> std::result::Result<Vec<f64>, JsError> {
        let lod = self
            .lods
            .get(key)
            .ok_or_else(|| JsError::new(&format!("no processed profile {key}")))?;
        Ok(lod.query(&tracks, t0, t1, n))
    }
    /// Rows of `table` (a timeline table, [`crate::lod::TimeCols::of`]) of profile `key` whose time
    /// overlaps `[t0, t1]` (ns from the listing's origin), only `columns` plus `nscope_row` (the
    /// row's index, for `table_ipc_rows`), found through the row groups' time statistics. Returns
    /// `{rows, over_limit, groups_read, groups_skipped, ipc}`: `ipc` an Arrow IPC stream, empty
    /// when more than `limit` rows overlap (`over_limit`: draw from the summaries).
    pub fn table_window(
        &self,
        key: &str,
        table: &str,
        columns: Vec<String>,
        t0: f64,
        t1: f64,
        limit: usize,
    ) -> std::result::Result<JsValue, JsError> {
        strike_armed_fault("table");
        let t = self.table(key, table)?;
        let time = crate::lod::TimeCols::of(table)
            .ok_or_else(|| JsError::new(&format!("{table} is not a timeline table")))?;
        let origin = self.lods.get(key).map_or(0, |l| l.origin);
        // Whole ns, widened outwards: a row touching the window's edge is kept.
        let at = |v: f64, up: bool| -> i64 {
            let r = if up { v.ceil() } else { v.floor() };
            origin.saturating_add(r.clamp(i64::MIN as f64, i64::MAX as f64) as i64)
        };
        let w = crate::lod::window_rows(
            t.data.clone(),
            time,
            &columns,
            at(t0.min(t1), false),
            at(t0.max(t1), true),
            limit,
        )
        .map_err(js_err)?;
        let ipc = crate::sink::ipc_of(&w.schema, &w.batches).map_err(js_err)?;
        let o = js_sys::Object::new();
        let set = |k: &str, v: JsValue| js_sys::Reflect::set(&o, &k.into(), &v).map(|_| ());
        set("rows", JsValue::from_f64(w.rows as f64))
            .and_then(|_| set("over_limit", JsValue::from_bool(w.over_limit)))
            .and_then(|_| set("groups_read", JsValue::from_f64(w.groups_read as f64)))
            .and_then(|_| set("groups_skipped", JsValue::from_f64(w.groups_skipped as f64)))
            .and_then(|_| set("ipc", js_sys::Uint8Array::from(ipc.as_slice()).into()))
            .map_err(|_| JsError::new("Reflect.set"))?;
        Ok(o.into())
    }
}

impl Default for Session {
    fn default() -> Self {
        Self::new()
    }
}

/// The built-in demo capture (written by our own synthetic writers): `[{path, bytes}]`.
#[wasm_bindgen]
pub fn demo_files() -> std::result::Result<js_sys::Array, JsError> {
    let arr = js_sys::Array::new();
    for (path, bytes) in crate::synth::demo_capture().map_err(js_err)? {
        let o = js_sys::Object::new();
        js_sys::Reflect::set(&o, &"path".into(), &JsValue::from_str(&path))
            .map_err(|_| JsError::new("Reflect.set"))?;
        let u8 = js_sys::Uint8Array::from(bytes.as_slice());
        js_sys::Reflect::set(&o, &"bytes".into(), &u8).map_err(|_| JsError::new("Reflect.set"))?;
        arr.push(&o);
    }
    Ok(arr)
}

/// A synthetic System capture written by our own writers ([`crate::system::write`]):
/// `trace_info.pb`, `ntrace.pb` and a Kineto `trace.json` of at least `kineto_bytes` on the same
/// clock, as `[{path, bytes}]` (browser tests, demos).
#[wasm_bindgen]
pub fn synth_system_files(kineto_bytes: f64) -> std::result::Result<js_sys::Array, JsError> {
    let arr = js_sys::Array::new();
    let spec = crate::system::write::SystemSpec::default();
    let n = if kineto_bytes.is_finite() && kineto_bytes > 0.0 {
        kineto_bytes.min(256e6) as u64
    } else {
        0
    };
    for (path, bytes) in crate::system::write::system_capture(&spec, n) {
        let o = js_sys::Object::new();
        js_sys::Reflect::set(&o, &"path".into(), &JsValue::from_str(&path))
            .map_err(|_| JsError::new("Reflect.set"))?;
        let u8 = js_sys::Uint8Array::from(bytes.as_slice());
        js_sys::Reflect::set(&o, &"bytes".into(), &u8).map_err(|_| JsError::new("Reflect.set"))?;
        arr.push(&o);
    }
    Ok(arr)
}

/// neuronscope version and table schema version.
#[wasm_bindgen]
pub fn version() -> String {
    format!(
        "neuronscope {} (schema {})",
        env!("CARGO_PKG_VERSION"),
        crate::tables::PROFILE_SCHEMA_VERSION
    )
}

thread_local! {
    /// JS function the panic hook hands its text to (`set_panic_reporter`).
    static PANIC_REPORTER: RefCell<Option<js_sys::Function>> = const { RefCell::new(None) };
}

/// Runs once when the module is instantiated: installs the panic hook. A panic on wasm32 aborts
/// (the caller sees a bare `RuntimeError: unreachable`), so the hook is the only place its message
/// and location still exist; it passes them to the reporter before the abort.
#[wasm_bindgen(start)]
pub fn start() {
    std::panic::set_hook(Box::new(|info| {
        // `PanicHookInfo`'s Display is "panicked at <file>:<line>:<col>:\n<message>".
        let text = info.to_string();
        let reported = PANIC_REPORTER
            .try_with(|r| match r.try_borrow() {
                Ok(r) => r
                    .as_ref()
                    .map(|f| f.call1(&JsValue::NULL, &JsValue::from_str(&text)).is_ok()),
                Err(_) => None,
            })
            .ok()
            .flatten()
            .unwrap_or(false);
        if !reported {
            // No reporter (yet): at least leave the text on the console.
            if let Ok(console) = js_sys::Reflect::get(&js_sys::global(), &"console".into()) {
                if let Ok(error) = js_sys::Reflect::get(&console, &"error".into()) {
                    if let Some(error) = error.dyn_ref::<js_sys::Function>() {
                        let _ = error.call1(&console, &JsValue::from_str(&text));
                    }
                }
            }
        }
    }));
}

/// Sets the JS function `(text: string) => void` the panic hook calls with a panic's message and
/// location (`panicked at crate/src/x.rs:10:5:\n<message>`) just before the wasm instance aborts.
/// The worker keeps the text and reports it with the failed call (www/src/worker.ts).
#[wasm_bindgen]
pub fn set_panic_reporter(f: js_sys::Function) {
    PANIC_REPORTER.with(|r| *r.borrow_mut() = Some(f));
}

/// Test hook for crash containment (tests/browser/contain.test.mjs): arms a failure that strikes
/// inside the next call into the Session with it borrowed, the way a decoder bug or a full wasm
/// memory would. `step` `"process"`: at the next `NTFF` progress report of a decode; `"table"`:
/// in the next table read (`table_parquet`, `table_ipc*`). `kind` `"panic"`: a Rust panic (panic hook, then abort);
/// `"alloc"`: an allocation failure (`handle_alloc_error`, an abort without a panic message, as
/// when wasm32's 4 GiB are used up); anything else disarms. Gating: nothing a user picks reaches
/// it; the worker calls it only when the page URL carries `?fault=<kind>` (www/src/main.ts,
/// protocol.ts `FaultSpec`).
#[wasm_bindgen]
pub fn arm_test_fault(kind: &str, step: &str) {
    let fault = match kind {
        "panic" => Some(Fault::Panic),
        "alloc" => Some(Fault::Alloc),
        _ => None,
    };
    let at = match step {
        "table" => "table",
        // The DMA side of a split decode reports "DMA" progress.
        "dmaSide" => "DMA",
        _ => "NTFF",
    };
    ARMED_FAULT.with(|a| a.set(fault.map(|f| (f, at))));
}

#[derive(Clone, Copy)]
enum Fault {
    Panic,
    Alloc,
}

thread_local! {
    /// The failure `arm_test_fault` armed and the stage it strikes at ("NTFF" progress, "table").
    static ARMED_FAULT: std::cell::Cell<Option<(Fault, &'static str)>> = const { std::cell::Cell::new(None) };
}

/// Fires the armed test fault, if any, when it was armed for `stage`.
fn strike_armed_fault(stage: &str) {
    let armed = ARMED_FAULT.with(|a| a.get());
    let fault = match armed {
        Some((f, at)) if at == stage => f,
        _ => return,
    };
    ARMED_FAULT.with(|a| a.set(None));
    match fault {
        Fault::Panic => panic!("injected fault (test hook arm_test_fault)"),
        Fault::Alloc => {
            // Only reported as the failed request's size: nothing is allocated.
            let layout = std::alloc::Layout::from_size_align(1 << 30, 8)
                .unwrap_or(std::alloc::Layout::new::<u64>());
            std::alloc::handle_alloc_error(layout)
        }
    }
}
