//! `neuronscope bench`: decode throughput (MB/s, rows/s) and peak memory, per NTFF and per system
//! profile of a folder, or of a synthetic capture it writes once to the temp directory.
//!
//! Output: one tab-separated line per step of [`neuronscope::bench`]: per system input (each
//! `ntrace.pb`, `trace_info.pb`, `cpu_util.pb`, `host_mem.pb`, Kineto trace, memory snapshot:
//! read-only pass, decode → Arrow, decode → Parquet on disk; [`neuronscope::bench::bench_system`])
//! and per NTFF (read-only pass, decode → Arrow, decode → Parquet with one and two threads), with
//! CPU time and peak RSS per step; then `peak_rss_bytes` of the whole run.

use neuronscope::{inventory, sink, Result};
use std::path::PathBuf;

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

/// Runs `bench` (the whole measurement; its output format is the module doc's).
///
/// Errors: the folder cannot be read, holds nothing to measure, the synthetic capture cannot be
/// written, or a profile the inventory listed cannot be processed.
pub fn run(args: &BenchArgs) -> Result<u64> {
    let tmp;
    let dir = match (&args.dir, args.synth_mb, args.kineto_mb) {
        (Some(d), _, _) => d.clone(),
        (None, Some(mb), _) => {
            tmp = std::env::temp_dir().join(format!("neuronscope-bench-v6mix-{mb}mb"));
            if !tmp.join(".complete").exists() {
                std::fs::create_dir_all(&tmp)?;
                neuronscope::synth::write_large_capture(
                    &tmp,
                    mb * 1_000_000,
                    neuronscope::synth::Shape::V6Mix,
                )?;
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
    let picked = walk::pick(std::slice::from_ref(&dir))?;
    let open = |p: &str| picked.open(p);
    let inv = inventory::build(&picked.files, &open);
    // What the inventory found wrong (a 0-byte NEFF, a misnamed file), on stderr: stdout is
    // the table.
    let found = picked.problems.iter().chain(&inv.problems);
    let mut bad_inputs = std::collections::BTreeSet::new();
    for p in found.chain(inv.profiles.iter().flat_map(|p| &p.problems)) {
        if p.severity != neuronscope::Severity::Info {
            eprintln!("{:?}: {}", p.severity, p.message);
        }
        if crate::cli::convert::loses_data(p) {
            bad_inputs.insert(p.file.clone().unwrap_or_default());
        }
    }
    let codec = args.codec.unwrap_or(sink::CODEC);
    let shared = |p: &str| picked.open_shared(p);
    let opts = neuronscope::bench::BenchOptions {
        dma_open: Some(&shared),
        out_dir: std::env::temp_dir().join(format!("neuronscope-bench-out-{}", std::process::id())),
        codec,
        steps: args.steps.clone(),
    };
    let rows = neuronscope::bench::bench_system(&inv, &open, &opts).and_then(|mut r| {
        r.extend(neuronscope::bench::bench_devices(&inv, &open, &opts)?);
        Ok(r)
    });
    let _ = std::fs::remove_dir_all(&opts.out_dir);
    let rows = rows?;
    if rows.is_empty() {
        // As `convert`: nothing to measure is an error, not an empty table, and a lone
        // trace.json is named with what it needs beside it.
        let why = neuronscope::inventory::no_profile_why(
            &inv.files,
            ".ntff, trace_info.pb/ntrace.pb or memory snapshot",
        );
        return Err(neuronscope::Error::Other(format!(
            "{}: no profile found to measure {why}",
            dir.display()
        )));
    }
    {
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
    // Inputs the inventory found damaged (a 0-byte NEFF beside the NTFF measured) count too.
    let bad = bad_inputs
        .iter()
        .filter(|f| !with_errors.contains(&f.as_str()))
        .count();
    if let Some(peak) = neuronscope::bench::peak_rss() {
        say!("peak_rss_bytes\t{peak}");
    }
    Ok((with_errors.len() + bad) as u64)
}

/// `--codec`: a Parquet codec name as parquet-rs spells it.
fn parse_codec(s: &str) -> std::result::Result<parquet::basic::Compression, String> {
    s.parse::<parquet::basic::Compression>()
        .map_err(|e| e.to_string())
}
