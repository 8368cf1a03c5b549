//! `neuronscope bench`: decode throughput beside the limit measured in the same run.
//!
//! Per device profile (NTFF), one row per step:
//! - `read`: a read-only pass over the NTFF through the same [`ByteSource`] and chunk size the
//!   decoder uses (the I/O limit any decode is measured against);
//! - `arrow`: decode → Arrow batches, discarded (rows counted);
//! - `parquet`: decode → Parquet files on disk, one thread, with `convert`'s row groups
//!   ([`sink::ROW_GROUP_BATCHES`] batches each);
//! - `parquet_2t`: the same with the NTFF's DMA side decoded on two more threads
//!   ([`crate::ntff::decode_split`], when [`BenchOptions::dma_open`] is given) and the Parquet
//!   encoding on two writer threads, `DmaPacket` on one, every other table on the other
//!   ([`sink::pipelined_by`], as `convert` does); without the DMA threads, one writer thread
//!   ([`sink::pipelined`]) that encodes each row group's column chunks on two threads
//!   (`ParquetSink::with_threads`);
//! - `page`: what the page's worker does per NTFF, natively: decode → Parquet on one thread
//!   with the level-of-detail summaries gathered on the way ([`crate::lod::LodCollector`],
//!   `wasm.rs` `decode_stored`) and the page's row groups (one per batch), so
//!   `npm run bench:wasm` ÷ this row is wasm ÷ native for the same work.
//!
//! Per system input (each `ntrace.pb`, `trace_info.pb`, `cpu_util.pb`, `host_mem.pb`, Kineto
//! trace) and per memory snapshot, the `read`, `arrow`, `parquet` and `page` steps
//! ([`bench_system`]; `page` as `wasm.rs` `process_system` does it: the level-of-detail
//! summaries gathered on the way and one row group per batch, so `bench:wasm`'s system line ÷
//! this row is wasm ÷ native for the same work).
//!
//! Every row gives wall and CPU seconds (the process's user + system time, so a busy machine
//! shows up as wall ≫ CPU), MB/s over both, peak RSS of that step alone (Linux `VmHWM`, reset
//! between steps through `/proc/self/clear_refs`) and, for Parquet steps, bytes written and
//! their ratio to the input. Native only.

use std::path::{Path, PathBuf};
use std::time::Instant;

use arrow_array::RecordBatch;
use parquet::basic::Compression;

use crate::error::{Error, Result};
use crate::inventory::Inventory;
use crate::profile::{self, Opener};
use crate::sink;
use crate::tables::{TableDef, TableSink};

/// One measured step of one input.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BenchRow {
    /// The input (NTFF path relative to the picked folder, or a profile id for system files).
    pub input: String,
    /// Input bytes.
    pub bytes: u64,
    /// `read`, `arrow`, `parquet` or `parquet_2t`.
    pub step: &'static str,
    /// Threads the step used.
    pub threads: usize,
    /// Wall-clock seconds.
    pub wall_s: f64,
    /// CPU seconds of the process (user + system) during the step.
    pub cpu_s: f64,
    /// Rows written (0 for `read`).
    pub rows: u64,
    /// Peak resident set of the step, bytes (None where the OS does not say).
    pub peak_rss: Option<u64>,
    /// Parquet bytes written (Parquet steps only).
    pub out_bytes: Option<u64>,
    /// Error-severity problems the decode reported for this input (the figures of an input
    /// with errors measure a partial decode).
    pub errors: u64,
}

impl BenchRow {
    /// Input MB (10⁶ bytes) per wall-clock second.
    pub fn mb_s(&self) -> f64 {
        self.bytes as f64 / 1e6 / self.wall_s.max(1e-9)
    }
    /// Input MB per CPU second: the figure that stays meaningful on a shared machine. `None`
    /// below 0.05 CPU s, where the 10 ms clock tick of the CPU time makes the ratio meaningless.
    pub fn mb_cpu_s(&self) -> Option<f64> {
        (self.cpu_s >= 0.05).then(|| self.bytes as f64 / 1e6 / self.cpu_s)
    }
    /// Tab-separated header of [`BenchRow::tsv`].
    pub const HEADER: &'static str =
        "input\tbytes\tstep\tthreads\twall_s\tcpu_s\tMB/s\tMB/cpu_s\trows\tpeak_rss_bytes\tparquet_bytes\tparquet/input\terrors";
    /// The row as tab-separated text.
    pub fn tsv(&self) -> String {
        let opt = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
        // No ratio to an empty input (the Parquet of a 0-byte NTFF is its footers alone).
        let ratio = match (self.out_bytes, self.bytes) {
            (None, _) => String::new(),
            (Some(_), 0) => "n/a".to_string(),
            (Some(o), b) => format!("{:.3}", o as f64 / b as f64),
        };
        format!(
            "{}\t{}\t{}\t{}\t{:.3}\t{:.3}\t{:.1}\t{}\t{}\t{}\t{}\t{}\t{}",
            self.input,
            self.bytes,
            self.step,
            self.threads,
            self.wall_s,
            self.cpu_s,
            self.mb_s(),
            self.mb_cpu_s().map_or(String::new(), |v| format!("{v:.1}")),
            self.rows,
            opt(self.peak_rss),
            opt(self.out_bytes),
            ratio,
            self.errors
        )
    }
}

/// Options of a bench run.
#[derive(Clone)]
pub struct BenchOptions<'a> {
    /// Opens an NTFF for the DMA threads of the `parquet_2t` step
    /// ([`profile::DeviceOptions::dma_open`]); `None`: that step decodes on one thread and
    /// only the encoding runs beside it.
    pub dma_open: Option<profile::SyncOpener<'a>>,
    /// Where the Parquet steps write (emptied per step).
    pub out_dir: PathBuf,
    /// Parquet codec (default [`sink::CODEC`]).
    pub codec: Compression,
    /// Steps to run (all when empty): `read`, `arrow`, `parquet`, `parquet_2t`, `page`.
    pub steps: Vec<String>,
}

/// The steps of a device bench, in order.
pub const STEPS: [&str; 5] = ["read", "arrow", "parquet", "parquet_2t", "page"];

impl BenchOptions<'_> {
    fn wants(&self, step: &str) -> bool {
        self.steps.is_empty() || self.steps.iter().any(|s| s == step)
    }
}

/// CPU seconds used by this process so far (user + system, `/proc/self/stat`), 0 elsewhere.
fn cpu_seconds() -> f64 {
    let Ok(s) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = s.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // rest starts at field 3 (state): utime = field 14 → index 11.
    (ticks(11) + ticks(12)) / 100.0
}

/// Peak resident memory since the last [`reset_peak_rss`] (Linux `VmHWM`), bytes.
pub fn peak_rss() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Resets the peak-RSS mark (Linux ≥ 4.0: `5` to `/proc/self/clear_refs`); a no-op elsewhere.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Times `f` as one step.
fn step<T>(f: impl FnOnce() -> Result<T>) -> Result<(T, f64, f64, Option<u64>)> {
    reset_peak_rss();
    let (c0, t0) = (cpu_seconds(), Instant::now());
    let r = f()?;
    let wall = t0.elapsed().as_secs_f64();
    Ok((r, wall, cpu_seconds() - c0, peak_rss()))
}

/// Counts rows without keeping them (decode-only throughput).
#[derive(Default)]
pub struct NullSink {
    /// Rows received.
    pub rows: u64,
}

impl TableSink for NullSink {
    fn batch(&mut self, _def: &'static TableDef, batch: RecordBatch) -> Result<()> {
        self.rows += batch.num_rows() as u64;
        Ok(())
    }
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

fn fresh_dir(dir: &Path) -> Result<()> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).map_err(|e| Error::Io(format!("{}: {e}", dir.display())))
}

/// Reads every byte of `src` in decoder-sized chunks; returns a checksum so the pass is not
/// optimised away.
fn read_pass(src: &dyn crate::source::ByteSource) -> Result<u64> {
    let mut buf = vec![0u8; crate::ntff::decode::CHUNK];
    let (len, mut off, mut sum) = (src.len(), 0u64, 0u64);
    while off < len {
        let n = (len - off).min(buf.len() as u64) as usize;
        let piece = buf.get_mut(..n).unwrap_or_default();
        src.read_at(off, piece)?;
        sum = sum.wrapping_add(
            piece
                .iter()
                .step_by(4096)
                .map(|&b| u64::from(b))
                .sum::<u64>(),
        );
        off += n as u64;
    }
    Ok(sum)
}

/// Measures every device profile of `inv` (the four steps of the module doc). `open` opens a
/// path of the inventory. Errors: the first decode or I/O error.
pub fn bench_devices(
    inv: &Inventory,
    open: Opener<'_>,
    opts: &BenchOptions<'_>,
) -> Result<Vec<BenchRow>> {
    let mut rows = Vec::new();
    for p in &inv.profiles {
        for (i, d) in p.devices.iter().enumerate() {
            let Some(ntff) = &d.ntff else { continue };
            let src = open(ntff)?;
            let bytes = src.len();
            // Error problems of this input, taken from the decode steps' results.
            let mut errors: Option<u64> = None;
            let count_errors = |r: &profile::DeviceResult| {
                r.problems
                    .iter()
                    .filter(|p| p.severity == crate::error::Severity::Error)
                    .count() as u64
            };
            let first = rows.len();
            let row = |step, threads, wall_s, cpu_s, rows, peak_rss, out_bytes| BenchRow {
                input: ntff.clone(),
                bytes,
                step,
                threads,
                wall_s,
                cpu_s,
                rows,
                peak_rss,
                out_bytes,
                errors: 0,
            };
            if opts.wants("read") {
                let (_, w, c, m) = step(|| read_pass(&*src))?;
                rows.push(row("read", 1, w, c, 0, m, None));
            }
            if opts.wants("arrow") {
                let ((n, e), w, c, m) = step(|| {
                    let mut null = NullSink::default();
                    let r =
                        profile::process_device(inv, &p.id, i, open, &mut null, &mut |_, _, _| {})?;
                    Ok((null.rows, count_errors(&r)))
                })?;
                errors = Some(e);
                rows.push(row("arrow", 1, w, c, n, m, None));
            }
            for (name, threads) in [("parquet", 1), ("parquet_2t", 2), ("page", 1)] {
                if !opts.wants(name) {
                    continue;
                }
                fresh_dir(&opts.out_dir)?;
                let dir = opts.out_dir.clone();
                // With the DMA threads the two cores are busy decoding: one encoder thread
                // (measured: column chunks on two more threads cost CPU and gain nothing).
                let encoders = |t: usize| {
                    if t > 1 && opts.dma_open.is_some() {
                        1
                    } else {
                        t
                    }
                };
                let ((n, e), w, c, m) = step(|| {
                    // The CLI's row groups (`convert`), except in `page`: the page's (one per
                    // batch).
                    let group = if name == "page" {
                        1
                    } else {
                        sink::ROW_GROUP_BATCHES
                    };
                    let new_sink = || {
                        sink::ParquetSink::with_codec(table_file(&dir), opts.codec)
                            .with_threads(encoders(threads))
                            .with_row_group_batches(group)
                    };
                    let mut ps = new_sink();
                    let r = if name == "page" {
                        let mut lod = crate::lod::LodCollector::new(&mut ps);
                        let r = profile::process_device(
                            inv,
                            &p.id,
                            i,
                            open,
                            &mut lod,
                            &mut |_, _, _| {},
                        )?;
                        lod.lod.finish(None);
                        r
                    } else if threads == 1 {
                        profile::process_device(inv, &p.id, i, open, &mut ps, &mut |_, _, _| {})?
                    } else {
                        let dev = profile::DeviceOptions {
                            dma_open: opts.dma_open,
                            ..Default::default()
                        };
                        // With the DMA threads, `DmaPacket` on a writer thread of its own
                        // (the one writer was the bottleneck); without them, one writer.
                        let mut sinks = vec![ps];
                        if opts.dma_open.is_some() {
                            sinks.push(new_sink());
                        }
                        let r = sink::pipelined_by(&mut sinks, sink::dma_packet_apart, |s| {
                            profile::process_device_with(
                                inv,
                                &p.id,
                                i,
                                open,
                                s,
                                &mut |_, _, _| {},
                                &dev,
                            )
                        })?;
                        let mut rest = sinks.into_iter();
                        ps = rest
                            .next()
                            .ok_or_else(|| Error::Other("no writer".into()))?;
                        for extra in rest {
                            extra.finish()?;
                        }
                        r
                    };
                    ps.finish()?;
                    Ok((
                        r.tables.iter().map(|t| t.rows).sum::<u64>(),
                        count_errors(&r),
                    ))
                })?;
                errors = Some(e);
                rows.push(row(
                    name,
                    threads,
                    w,
                    c,
                    n,
                    m,
                    Some(dir_bytes(&opts.out_dir)),
                ));
            }
            // Only the read-only pass ran: one decode into nothing says whether it had errors.
            let errors = match errors {
                Some(e) => e,
                None => {
                    let mut null = NullSink::default();
                    let r =
                        profile::process_device(inv, &p.id, i, open, &mut null, &mut |_, _, _| {})?;
                    count_errors(&r)
                }
            };
            for r in rows.iter_mut().skip(first) {
                r.errors = errors;
            }
        }
    }
    Ok(rows)
}

/// The system input kinds [`bench_system`] measures one by one, by [`crate::inventory::FileKind`].
fn system_kind(path: &str) -> Option<&'static str> {
    use crate::inventory::FileKind as K;
    match crate::inventory::classify(path) {
        K::TraceInfo => Some("trace_info"),
        K::Ntrace => Some("ntrace"),
        K::CpuUtil => Some("cpu_util"),
        K::HostMem => Some("host_mem"),
        K::KinetoTrace => Some("kineto"),
        _ => None,
    }
}

/// Measures every system input of `inv` on its own, and every memory snapshot: per file a
/// `read` row (the read-only pass over its bytes, compressed bytes for `.gz`), an `arrow` row
/// (decode → Arrow, discarded), a `parquet` row (decode → Parquet on disk, one thread) and a
/// `page` row (the same with the page's row groups and level-of-detail summaries), as in the
/// module doc. A system file is decoded as a System profile holding it and the profile's
/// `trace_info.pb` (whose `ntrace.pb is missing` error is not counted); `bytes` are the file's
/// own. `input` is `path (kind)`: `ntrace`, `trace_info`, `cpu_util`, `host_mem`, `kineto`,
/// `memory_snapshot`. Errors: the first I/O or sink error.
pub fn bench_system(
    inv: &Inventory,
    open: Opener<'_>,
    opts: &BenchOptions<'_>,
) -> Result<Vec<BenchRow>> {
    use crate::error::{Code, Severity};
    let mut rows = Vec::new();
    // (label, file, run: sink → (rows, errors)).
    type Run<'r> = Box<dyn Fn(&mut dyn TableSink) -> Result<u64> + 'r>;
    let mut jobs: Vec<(String, String, Run<'_>)> = Vec::new();
    for p in &inv.profiles {
        let info = p
            .system_files
            .iter()
            .find(|f| system_kind(f) == Some("trace_info"))
            .cloned();
        for f in &p.system_files {
            let Some(kind) = system_kind(f) else { continue };
            let mut sub = p.clone();
            sub.devices.clear();
            sub.system_files = info.iter().chain([f]).cloned().collect();
            sub.system_files.dedup();
            let run: Run<'_> = Box::new(move |s: &mut dyn TableSink| {
                let r = crate::system::process(&sub, open, s, &mut |_, _, _| {})?;
                Ok(r.problems
                    .iter()
                    .filter(|p| p.severity == Severity::Error && p.code != Code::NoMetadata)
                    .count() as u64)
            });
            jobs.push((format!("{f} ({kind})"), f.clone(), run));
        }
    }
    for f in &inv.files {
        if !matches!(f.kind, crate::inventory::FileKind::MemorySnapshot { .. }) {
            continue;
        }
        let path = f.path.clone();
        let run: Run<'_> = Box::new(move |s: &mut dyn TableSink| {
            profile::process_memory(inv, &path, open, s)?;
            Ok(0)
        });
        jobs.push((format!("{} (memory_snapshot)", f.path), f.path.clone(), run));
    }
    for (input, file, run) in jobs {
        let src = open(&file)?;
        let bytes = src.len();
        let first = rows.len();
        let row = |step, wall_s, cpu_s, n, peak_rss, out_bytes| BenchRow {
            input: input.clone(),
            bytes,
            step,
            threads: 1,
            wall_s,
            cpu_s,
            rows: n,
            peak_rss,
            out_bytes,
            errors: 0,
        };
        let (_, w, c, m) = step(|| read_pass(&*src))?;
        drop(src);
        rows.push(row("read", w, c, 0, m, None));
        let mut errors = 0;
        if opts.wants("arrow") {
            let ((n, e), w, c, m) = step(|| {
                let mut null = NullSink::default();
                let e = run(&mut null)?;
                Ok((null.rows, e))
            })?;
            errors = e;
            rows.push(row("arrow", w, c, n, m, None));
        }
        for name in ["parquet", "page"] {
            if !opts.wants(name) {
                continue;
            }
            fresh_dir(&opts.out_dir)?;
            let dir = opts.out_dir.clone();
            let page = name == "page";
            let ((n, e), w, c, m) = step(|| {
                // The CLI's row groups, except in `page`: the page's (one per batch).
                let group = if page { 1 } else { sink::ROW_GROUP_BATCHES };
                let mut ps = sink::ParquetSink::with_codec(table_file(&dir), opts.codec)
                    .with_row_group_batches(group);
                let mut count = NullSink::default();
                let e = if page {
                    // As `wasm.rs` `decode_stored`: the level-of-detail summaries on the way.
                    let mut lod = crate::lod::LodCollector::new(&mut ps);
                    let e = run(&mut Tee(&mut lod, &mut count))?;
                    lod.lod.finish(None);
                    e
                } else {
                    run(&mut Tee(&mut ps, &mut count))?
                };
                ps.finish()?;
                Ok((count.rows, e))
            })?;
            errors = errors.max(e);
            rows.push(row(name, w, c, n, m, Some(dir_bytes(&opts.out_dir))));
        }
        for r in rows.iter_mut().skip(first) {
            r.errors = errors;
        }
    }
    Ok(rows)
}

/// The Parquet steps' opener: `<table>.parquet` in `dir`. Errors: the file cannot be created
/// (named in the message).
fn table_file(dir: &Path) -> impl FnMut(&str) -> Result<std::fs::File> + '_ {
    move |t: &str| {
        let path = dir.join(format!("{t}.parquet"));
        std::fs::File::create(&path).map_err(|e| Error::Io(format!("{}: {e}", path.display())))
    }
}

/// Sends every batch to both sinks (the second only counts).
struct Tee<'a>(&'a mut dyn TableSink, &'a mut NullSink);

impl TableSink for Tee<'_> {
    fn batch(&mut self, def: &'static TableDef, batch: RecordBatch) -> Result<()> {
        self.1.batch(def, batch.clone())?;
        self.0.batch(def, batch)
    }
}
