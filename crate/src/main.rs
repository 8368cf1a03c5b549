//! `neuronscope` command-line interface: the same core as the web page, natively.
//!
//! ```text
//! neuronscope scan DIR... [--json]             inventory, profiles, pairing, problems
//! neuronscope convert DIR... -o OUT            Parquet dataset (Hive-partitioned, all cores, restartable)
//! neuronscope synth OUT [--ntff-mb N]          write a synthetic capture (the app's demo; N MB NTFF)
//! neuronscope synth OUT --kineto-mb N          write a synthetic System capture with an N MB trace.json
//! neuronscope bench [DIR] [--synth-mb N | --kineto-mb N]   decode throughput and peak memory
//! neuronscope conform DIR EXPORT.json [--json] [--device NAME]
//!                                              field-by-field match rates against an AWS JSON export
//! ```
//!
//! Every command has `--help`; `--quiet` / `--verbose` apply to all. Exit codes ([`EXIT_CODES`]):
//! 0 done, every input clean; 1 nothing usable (an input or output could not be read or
//! written, no profile found); 2 usage; 3 done, but some input had data problems (a damaged or
//! cut file of any kind, each printed with its file and offset; everything decoded before each
//! fault is still written).

#[macro_use]
mod cli;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use neuronscope::inventory::{self, Inventory};
use neuronscope::{profile, Error, Result, Severity};

use cli::walk;

/// The exit codes, as `--help` prints them (README "Exit codes" says the same).
const EXIT_CODES: &str =
    "Exit codes: 0 done, every input clean · 1 nothing usable: an input or output \
could not be read or written, or no profile was found · 2 usage · 3 done, but some input had data \
problems (a damaged or cut NTFF, NEFF, ntrace.pb, trace.json …, each printed with its file and \
offset; everything decoded before each fault is still written)";

/// Exit code of a run that finished but met data problems in its input.
const EXIT_DATA_PROBLEMS: u8 = 3;

/// Reads AWS Neuron profiler captures (NEFF, NTFF, system traces, memory snapshots) into Neuron
/// Explorer-named Parquet tables.
#[derive(Parser, Debug)]
#[command(name = "neuronscope", version, about, after_help = EXIT_CODES)]
struct Cli {
    /// Print only what was asked for and errors (no progress or per-table lines).
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    quiet: bool,
    /// Print details too: link problems, skipped profiles, thread count.
    #[arg(short, long, global = true)]
    verbose: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List files, profiles, NEFF/NTFF pairing and problems.
    #[command(after_help = EXIT_CODES)]
    Scan(ScanArgs),
    /// Write every profile's tables as Parquet: a Hive-partitioned dataset
    /// OUT/<Table>/instance=<id>/pid=<pid>/profile=<name>/part-0.parquet plus OUT/_profiles.parquet
    /// (or, with --layout tree, OUT/<profile>/<device>/<Table>.parquet). Profiles are converted
    /// in parallel; one converted before from the same inputs (size, mtime) is skipped.
    #[command(after_help = EXIT_CODES)]
    Convert(cli::convert::ConvertArgs),
    /// Write a synthetic capture: the app's demo, or one with an N MB NTFF or N MB trace.json.
    #[command(after_help = EXIT_CODES)]
    Synth(SynthArgs),
    /// Decode throughput (MB/s, rows/s) and peak memory of a capture folder or a synthetic one.
    #[command(after_help = EXIT_CODES)]
    Bench(cli::bench::BenchArgs),
    /// Compare the device profile of DIR whose NTFF an AWS JSON export (neuron-profile view
    /// --output-format json) came from, field by field.
    #[command(after_help = EXIT_CODES)]
    Conform(ConformArgs),
}

#[derive(clap::Args, Debug)]
struct ScanArgs {
    /// Capture folders, or parents of many captures (symbolic links are followed).
    #[arg(value_name = "DIR", required = true)]
    dirs: Vec<PathBuf>,
    /// Print the inventory as JSON (crate::inventory::Inventory).
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args, Debug)]
struct SynthArgs {
    /// Folder to write the capture into (created when missing).
    #[arg(value_name = "OUT")]
    out: PathBuf,
    /// Size of the NTFF in MB (default: the demo capture's size).
    #[arg(long, value_name = "N", conflicts_with = "kineto_mb")]
    ntff_mb: Option<u64>,
    /// Write a System capture whose Kineto trace.json is N MB instead.
    #[arg(long, value_name = "N", conflicts_with = "ntrace_mb")]
    kineto_mb: Option<u64>,
    /// Write a System capture whose ntrace.pb is N MB (the sample's record mix) instead.
    #[arg(long, value_name = "N", conflicts_with = "ntff_mb")]
    ntrace_mb: Option<u64>,
    /// Record mix of the --ntff-mb NTFF: `v6` (the v6 samples' mix, mostly DMA records) or
    /// `dense` (instruction-dense: the demo's matmul-like mix on both cores).
    #[arg(long, value_name = "SHAPE", default_value = "v6", requires = "ntff_mb")]
    shape: ShapeArg,
}

/// `synth --shape` values.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum ShapeArg {
    V6,
    Dense,
}

#[derive(clap::Args, Debug)]
struct ConformArgs {
    /// Capture folder holding the NTFF the export was made from.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// The JSON export (neuron-profile view --output-format json).
    #[arg(value_name = "EXPORT.json")]
    export: PathBuf,
    /// Print the report as JSON (crate::conform::ConformReport).
    #[arg(long)]
    json: bool,
    /// Device profile (NTFF stem) to compare when the export does not name its NTFF.
    #[arg(long, value_name = "NAME")]
    device: Option<String>,
}

/// What a command ended with: done, or done but some input had data problems (exit 3).
enum Outcome {
    Done,
    InputErrors(String),
}

fn main() -> ExitCode {
    // clap prints help/version (exit 0) and usage errors with suggestions (exit 2) itself.
    cli::limit_malloc_arenas();
    let args = Cli::parse();
    cli::set_verbosity(args.quiet, args.verbose);
    let r = match &args.command {
        Command::Scan(a) => cmd_scan(a),
        Command::Convert(a) => cli::convert::run(a).and_then(|o| match o.message() {
            // Nothing but problems written: as if nothing was found (exit 1).
            Some(m) if o.nothing_usable() => {
                Err(Error::Other(format!("{m}; no profile gave a usable row")))
            }
            Some(m) => Ok(Outcome::InputErrors(m)),
            None => Ok(Outcome::Done),
        }),
        Command::Synth(a) => cmd_synth(a).map(|_| Outcome::Done),
        Command::Bench(a) => cli::bench::run(a).map(|n| {
            if n == 0 {
                Outcome::Done
            } else {
                Outcome::InputErrors(format!(
                    "{n} input(s) had decode errors: their figures measure a partial decode \
                     (`neuronscope convert` on the folder prints each, with its file and offset)"
                ))
            }
        }),
        Command::Conform(a) => cmd_conform(a).map(|_| Outcome::Done),
    };
    match r {
        Ok(Outcome::Done) => ExitCode::SUCCESS,
        Ok(Outcome::InputErrors(msg)) => {
            eprintln!("neuronscope: {msg}");
            ExitCode::from(EXIT_DATA_PROBLEMS)
        }
        Err(e) => {
            eprintln!("neuronscope: {e}");
            ExitCode::from(1)
        }
    }
}

/// Walks the inputs and builds their inventory (the walk's link problems included).
fn scan_inputs(dirs: &[PathBuf]) -> Result<(walk::Picked, Inventory)> {
    let picked = walk::pick(dirs)?;
    let open = |p: &str| picked.open(p);
    let mut inv = inventory::build(&picked.files, &open);
    inv.problems.extend(picked.problems.iter().cloned());
    Ok((picked, inv))
}

fn cmd_scan(args: &ScanArgs) -> Result<Outcome> {
    let (_, inv) = scan_inputs(&args.dirs)?;
    let errors = inv
        .profiles
        .iter()
        .flat_map(|p| &p.problems)
        .chain(&inv.problems)
        .filter(|p| cli::convert::loses_data(p))
        .count();
    let outcome = if errors == 0 {
        Outcome::Done
    } else {
        Outcome::InputErrors(format!("{errors} error(s) in the inputs"))
    };
    if args.json {
        say!(
            "{}",
            serde_json::to_string_pretty(&inv).map_err(|e| Error::Other(e.to_string()))?
        );
        return Ok(outcome);
    }
    say!(
        "{}, {}",
        cli::count(inv.files.len() as u64, "file"),
        cli::count(inv.profiles.len() as u64, "profile")
    );
    for p in &inv.profiles {
        let ty = serde_json::to_value(p.profile_type)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        say!("\n[{ty}] {}", p.id);
        if let (Some(i), Some(pid)) = (&p.instance_id, p.pid) {
            say!("  instance {i}, pid {pid}");
        }
        for (i, d) in p.devices.iter().enumerate() {
            let status = serde_json::to_value(&d.pairing)
                .map(|v| v.to_string())
                .unwrap_or_default();
            say!(
                "  #{i} {}: ntff={} neff={} {}",
                d.name,
                d.ntff.as_deref().unwrap_or("-"),
                d.neff.as_deref().unwrap_or("-"),
                status
            );
        }
        for f in &p.system_files {
            say!("  system: {f}");
        }
        for pr in &p.problems {
            say!("  {:?}: {}", pr.severity, pr.message);
        }
    }
    for pr in &inv.problems {
        if pr.severity != Severity::Info
            || cli::verbose()
            || pr.code == neuronscope::Code::NoProfile
        {
            say!("{:?}: {}", pr.severity, pr.message);
        }
    }
    if cli::verbose() {
        for f in &inv.files {
            let looks = f.content.as_ref().map(|c| c.describe()).unwrap_or_default();
            say!("file {} ({} bytes) {looks}", f.path, f.size);
        }
    }
    Ok(outcome)
}

fn cmd_synth(args: &SynthArgs) -> Result<()> {
    let out = &args.out;
    std::fs::create_dir_all(out)
        .map_err(|e| Error::Io(format!("cannot create directory {}: {e}", out.display())))?;
    if let Some(mb) = args.ntrace_mb {
        for p in neuronscope::synth::write_ntrace_capture(out, mb * 1_000_000)? {
            let n = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
            note!("{} ({n} bytes)", p.display());
        }
        return Ok(());
    }
    if let Some(mb) = args.kineto_mb {
        for p in neuronscope::synth::write_system_capture(out, mb * 1_000_000)? {
            let n = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
            note!("{} ({n} bytes)", p.display());
        }
        return Ok(());
    }
    if let Some(mb) = args.ntff_mb {
        let shape = match args.shape {
            ShapeArg::V6 => neuronscope::synth::Shape::V6Mix,
            ShapeArg::Dense => neuronscope::synth::Shape::Dense,
        };
        for p in neuronscope::synth::write_large_capture(out, mb * 1_000_000, shape)? {
            let n = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
            note!("{} ({n} bytes)", p.display());
        }
        return Ok(());
    }
    for (path, bytes) in neuronscope::synth::demo_capture()? {
        let p = out.join(&path);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&p, &bytes).map_err(|e| Error::Io(format!("{}: {e}", p.display())))?;
        note!("{} ({} bytes)", p.display(), bytes.len());
    }
    Ok(())
}

fn cmd_conform(args: &ConformArgs) -> Result<()> {
    let export_path = &args.export;
    // Refuse an oversized export before reading it (parse_export checks the bytes it is given).
    let size = std::fs::metadata(export_path)
        .map_err(|e| Error::Io(format!("{}: {e}", export_path.display())))?
        .len();
    if size > neuronscope::conform::MAX_EXPORT_BYTES as u64 {
        return Err(Error::Other(format!(
            "{}: export is {size} bytes; conform reads at most {} MiB",
            export_path.display(),
            neuronscope::conform::MAX_EXPORT_BYTES >> 20
        )));
    }
    let bytes = std::fs::read(export_path)
        .map_err(|e| Error::Io(format!("{}: {e}", export_path.display())))?;
    let export = neuronscope::conform::parse_export(&bytes)
        .map_err(|e| Error::Other(format!("{}: {e}", export_path.display())))?;
    drop(bytes);
    let (picked, inv) = scan_inputs(std::slice::from_ref(&args.dir))?;
    // The export's path as the inventory names files, when it lies inside the picked folder.
    let export_rel = picked.virtual_of(export_path);
    let (pid, idx) = neuronscope::conform::find_device(
        &inv,
        &export,
        export_rel
            .as_deref()
            .or_else(|| export_path.file_name().and_then(|n| n.to_str())),
        args.device.as_deref(),
    )?;
    let open = |p: &str| picked.open(p);
    let mut tables = neuronscope::tables::Tables::default();
    let res = profile::process_device(&inv, &pid, idx, &open, &mut tables, &mut |_, _, _| {})?;
    let report = neuronscope::conform::conform_value(&tables, &export);
    if args.json {
        say!(
            "{}",
            serde_json::to_string_pretty(&report).map_err(|e| Error::Other(e.to_string()))?
        );
    } else {
        say!(
            "device profile: {} / {} ({})",
            pid,
            res.device,
            res.summary.ntff_file.as_deref().unwrap_or("-")
        );
        say!("{}", report.to_text());
    }
    // Rows missing from our side may come from a damaged input: say so (stderr, also with --json).
    for pr in res
        .problems
        .iter()
        .filter(|p| p.severity == Severity::Error)
    {
        eprintln!(
            "neuronscope: decode error (our tables are partial): {}",
            pr.message
        );
    }
    Ok(())
}
