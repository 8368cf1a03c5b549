//! `neuronscope bench`: decode throughput (MB/s, rows/s) and peak memory, per NTFF and per system
//! profile of a folder, or of a synthetic capture it writes once to the temp directory.
//!
//! Output: per system profile one tab-separated line `input bytes seconds MB/s rows rows/s
//! parquet_bytes` (decode only, then decode + Parquet into a writer that only counts bytes);
//! per NTFF one line per step of [`neuronscope::bench`] (read-only pass, decode → Arrow,
//! decode → Parquet on disk with one and two threads, with CPU time and peak RSS per step);
//! then `peak_rss_bytes` of the whole run.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use neuronscope::{inventory, profile, sink, Result};

use super::walk;

/// Arguments of `bench` (see `neuronscope bench --help`).
#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// Capture folder to measure (every NTFF and system profile in it).
    #[arg(value_name = "DIR", required_unless_present_any = ["synth_mb", "kineto_mb"])]
    pub dir: Option<PathBuf>,
    /// Measure a synthetic capture with an NTFF of N MB instead (written once to the temp
    /// directory, reused later).
    #[arg(long, value_name = "N", conflicts_with_all = ["dir", "kineto_mb"])]
    pub synth_mb: Option<u64>,
    /// Measure a synthetic System capture whose Kineto trace.json is N MB instead.
    #[arg(long, value_name = "N", conflicts_with = "dir")]
    pub kineto_mb: Option<u64>,
    /// Parquet codec of the Parquet steps (e.g. lz4_raw, snappy, uncompressed, "gzip(1)").
    #[arg(long, value_name = "CODEC", value_parser = parse_codec)]
    pub codec: Option<parquet::basic::Compression>,
    /// Device steps to run, comma-separated (default all).
    #[arg(long, value_name = "LIST", value_delimiter = ',',
          value_parser = clap::builder::PossibleValuesParser::new(neuronscope::bench::STEPS))]
    pub steps: Vec<String>,
}

/// A writer that only counts bytes (Parquet size without keeping the file).
struct CountingWriter(Arc<AtomicU64>);

impl std::io::Write for CountingWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.fetch_add(buf.len() as u64, Ordering::Relaxed);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs `bench` (the whole measurement; its output format is the module doc's).
///
/// Errors: the folder cannot be read, the synthetic capture cannot be written, or a profile the
/// inventory listed cannot be processed.
pub fn run(args: &BenchArgs) -> Result<u64> {
    let tmp;
    let dir = match (&args.dir, args.synth_mb, args.kineto_mb) {
        (Some(d), _, _) => d.clone(),
        (None, Some(mb), _) => {
            tmp = std::env::temp_dir().join(format!("neuronscope-bench-v6mix-{mb}mb"));
            if !tmp.join(".complete").exists() {
                std::fs::create_dir_all(&tmp)?;
                neuronscope::synth::write_large_capture(&tmp, mb * 1_000_000)?;
                std::fs::write(tmp.join(".complete"), b"")?;
            }
            tmp.clone()
        }
        (None, None, Some(mb)) => {
            tmp = std::env::temp_dir().join(format!("neuronscope-bench-kineto-{mb}mb"));
            if !tmp.join(".complete").exists() {
                std::fs::create_dir_all(&tmp)?;
                neuronscope::synth::write_system_capture(&tmp, mb * 1_000_000)?;
                std::fs::write(tmp.join(".complete"), b"")?;
            }
            tmp.clone()
        }
        // clap requires one of them; kept as an error rather than a panic.
        (None, None, None) => {
            return Err(neuronscope::Error::Other(
                "bench: give DIR, --synth-mb N or --kineto-mb N".into(),
            ))
        }
    };
    let picked = walk::pick(&[dir])?;
    let open = |p: &str| picked.open(p);
    let inv = inventory::build(&picked.files, &open);
    let size_of = |f: &str| {
        picked
            .path_of(f)
            .and_then(|p| std::fs::metadata(p).ok())
            .map_or(0, |m| m.len())
    };
    let mut header = false;
    for p in &inv.profiles {
        if p.system_files
            .iter()
            .any(|f| f.ends_with("ntrace.pb") || f.ends_with("trace_info.pb"))
        {
            if !std::mem::replace(&mut header, true) {
                say!("input\tbytes\tseconds\tMB/s\trows\trows/s\tparquet_bytes");
            }
            let bytes: u64 = p.system_files.iter().map(|f| size_of(f)).sum();
            // decode only
            let mut null = neuronscope::bench::NullSink::default();
            let t0 = Instant::now();
            profile::process_system(&inv, &p.id, &open, &mut null, &mut |_, _, _| {})?;
            let secs = t0.elapsed().as_secs_f64().max(1e-9);
            // decode + Parquet (to memory, discarded)
            let pq = Arc::new(AtomicU64::new(0));
            let mut psink = sink::ParquetSink::new(|_t: &str| Ok(CountingWriter(pq.clone())));
            profile::process_system(&inv, &p.id, &open, &mut psink, &mut |_, _, _| {})?;
            psink.finish()?;
            say!(
                "{} (system)\t{bytes}\t{secs:.3}\t{:.1}\t{}\t{:.0}\t{}",
                p.id,
                bytes as f64 / 1e6 / secs,
                null.rows,
                null.rows as f64 / secs,
                pq.load(Ordering::Relaxed)
            );
        }
    }
    let codec = args.codec.unwrap_or(sink::CODEC);
    let opts = neuronscope::bench::BenchOptions {
        out_dir: std::env::temp_dir().join(format!("neuronscope-bench-out-{}", std::process::id())),
        codec,
        steps: args.steps.clone(),
    };
    let rows = neuronscope::bench::bench_devices(&inv, &open, &opts);
    let _ = std::fs::remove_dir_all(&opts.out_dir);
    let rows = rows?;
    if !rows.is_empty() {
        say!("{}", neuronscope::bench::BenchRow::HEADER);
        for r in &rows {
            say!("{}", r.tsv());
        }
    }
    // Inputs whose decode reported errors (their figures measure a partial decode).
    let mut with_errors: Vec<&str> = rows
        .iter()
        .filter(|r| r.errors > 0)
        .map(|r| r.input.as_str())
        .collect();
    with_errors.dedup();
    if let Some(peak) = neuronscope::bench::peak_rss() {
        say!("peak_rss_bytes\t{peak}");
    }
    Ok(with_errors.len() as u64)
}

/// `--codec`: a Parquet codec name as parquet-rs spells it.
fn parse_codec(s: &str) -> std::result::Result<parquet::basic::Compression, String> {
    s.parse::<parquet::basic::Compression>()
        .map_err(|e| e.to_string())
}
