//! `neuronscope` command-line interface: the same core as the web page, natively.
//!
//! ```text
//! neuronscope scan DIR [--json]          inventory, profiles, pairing, problems
//! neuronscope convert DIR -o OUT         Parquet per table per device profile
//! neuronscope synth OUT [--ntff-mb N]    write a synthetic capture (the app's demo; N MB NTFF)
//! neuronscope synth OUT --kineto-mb N     write a synthetic System capture with an N MB trace.json
//! neuronscope bench [DIR] [--synth-mb N | --kineto-mb N] decode throughput and peak memory
//! neuronscope conform DIR EXPORT.json [--json] [--device NAME]
//!                                        field-by-field match rates against an AWS JSON export
//! ```

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use neuronscope::inventory::{self, Inventory};
use neuronscope::source::FileSource;
use neuronscope::tables::{TableDef, TableSink};
use neuronscope::{profile, sink, ByteSource, Error, Result};

/// `println!` that stops quietly when stdout is closed (e.g. piped into `head`) instead of
/// panicking.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

const USAGE: &str = "usage:
  neuronscope scan DIR [--json]           list files, profiles, NEFF/NTFF pairing and problems
  neuronscope convert DIR -o OUT          write <OUT>/<profile>/<device>/<Table>.parquet
  neuronscope synth OUT [--ntff-mb N]     write a synthetic capture (N: NTFF size in MB, default demo size)
  neuronscope synth OUT --kineto-mb N     write a synthetic System capture whose Kineto trace.json is N MB
  neuronscope bench [DIR] [--synth-mb N | --kineto-mb N]
                                          decode throughput (MB/s, records/s) and peak memory
  neuronscope conform DIR EXPORT.json [--json] [--device NAME]
                                          compare the device profile of DIR whose NTFF the export
                                          (neuron-profile view --output-format json) came from";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let r = match args.first().map(String::as_str) {
        Some("scan") => cmd_scan(&args[1..]),
        Some("convert") => cmd_convert(&args[1..]),
        Some("synth") => cmd_synth(&args[1..]),
        Some("bench") => cmd_bench(&args[1..]),
        Some("conform") => cmd_conform(&args[1..]),
        Some("-h") | Some("--help") | Some("help") => {
            say!("{USAGE}");
            Ok(())
        }
        Some(other) => Err(Error::Other(format!("unknown command {other:?}\n{USAGE}"))),
        None => Err(Error::Other(USAGE.to_string())),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("neuronscope: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Value following `flag` in `args`, if present.
fn opt<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

/// First argument that is neither a flag nor a flag's value.
fn positional(args: &[String], flags_with_values: &[&str]) -> Option<PathBuf> {
    let mut skip = false;
    for a in args {
        if skip {
            skip = false;
            continue;
        }
        if flags_with_values.contains(&a.as_str()) {
            skip = true;
            continue;
        }
        if !a.starts_with("--") {
            return Some(PathBuf::from(a));
        }
    }
    None
}

/// Every regular file under `root` as (relative '/' path, size), sorted.
fn walk(root: &Path) -> Result<Vec<(String, u64)>> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in
            std::fs::read_dir(&dir).map_err(|e| Error::Io(format!("{}: {e}", dir.display())))?
        {
            let entry = entry?;
            let path = entry.path();
            let meta = entry.metadata()?;
            if meta.is_dir() {
                stack.push(path);
            } else if meta.is_file() {
                let rel = path.strip_prefix(root).unwrap_or(&path);
                let rel: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                out.push((rel.join("/"), meta.len()));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// A picked directory as the browser presents it: paths relative to its parent, so they start
/// with the directory's own name (`i-…_pid_…/ntrace.pb`), like `webkitdirectory` paths.
struct Picked {
    base: PathBuf,
    files: Vec<(String, u64)>,
}

fn pick(root: &Path) -> Result<Picked> {
    let root = root
        .canonicalize()
        .map_err(|e| Error::Io(format!("{}: {e}", root.display())))?;
    let files = walk(&root)?;
    match (root.parent(), root.file_name()) {
        (Some(parent), Some(name)) => {
            let name = name.to_string_lossy();
            Ok(Picked {
                base: parent.to_path_buf(),
                files: files
                    .into_iter()
                    .map(|(p, n)| (format!("{name}/{p}"), n))
                    .collect(),
            })
        }
        _ => Ok(Picked { base: root, files }),
    }
}

/// Opens picked files relative to `base`.
fn opener(base: &Path) -> impl Fn(&str) -> Result<Box<dyn ByteSource>> + '_ {
    move |p: &str| -> Result<Box<dyn ByteSource>> { Ok(Box::new(FileSource::open(&base.join(p))?)) }
}

/// Builds the inventory of a picked directory.
fn scan_dir(picked: &Picked) -> Inventory {
    inventory::build(&picked.files, &opener(&picked.base))
}

fn cmd_scan(args: &[String]) -> Result<()> {
    let dir = positional(args, &[]).ok_or_else(|| Error::Other(USAGE.into()))?;
    let inv = scan_dir(&pick(&dir)?);
    if args.iter().any(|a| a == "--json") {
        say!(
            "{}",
            serde_json::to_string_pretty(&inv).map_err(|e| Error::Other(e.to_string()))?
        );
        return Ok(());
    }
    say!("{} files, {} profiles", inv.files.len(), inv.profiles.len());
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
        say!("{:?}: {}", pr.severity, pr.message);
    }
    Ok(())
}

/// Creates a directory (and parents); the error names the path.
fn create_dir(p: &Path) -> Result<()> {
    std::fs::create_dir_all(p)
        .map_err(|e| Error::Io(format!("cannot create directory {}: {e}", p.display())))
}

/// Creates an output file; the error names the path.
fn create_file(p: &Path) -> Result<std::fs::File> {
    std::fs::File::create(p).map_err(|e| Error::Io(format!("cannot create {}: {e}", p.display())))
}

fn cmd_convert(args: &[String]) -> Result<()> {
    let dir = positional(args, &["-o"]).ok_or_else(|| Error::Other(USAGE.into()))?;
    let out = PathBuf::from(opt(args, "-o").ok_or_else(|| Error::Other(USAGE.into()))?);
    let picked = pick(&dir)?;
    let inv = scan_dir(&picked);
    let open = opener(&picked.base);
    let mut failures = 0;
    for p in &inv.profiles {
        if p.system_files
            .iter()
            .any(|f| f.ends_with("ntrace.pb") || f.ends_with("trace_info.pb"))
        {
            let target = out.join(neuronscope::util::safe_name(&p.id)).join("system");
            create_dir(&target)?;
            let mut psink = sink::ParquetSink::new(|table: &str| {
                create_file(&target.join(format!("{table}.parquet")))
            });
            let res = profile::process_system(&inv, &p.id, &open, &mut psink, &mut |_, _, _| {})?;
            say!("{} / system -> {}", p.id, target.display());
            for (t, n) in psink.finish()? {
                say!("  {t}.parquet: {n} rows");
            }
            for pr in &res.problems {
                say!("  {:?}: {}", pr.severity, pr.message);
                if pr.severity == neuronscope::Severity::Error {
                    failures += 1;
                }
            }
        }
        for (i, d) in p.devices.iter().enumerate() {
            let target = out
                .join(neuronscope::util::safe_name(&p.id))
                .join(neuronscope::util::safe_name(&d.name));
            create_dir(&target)?;
            let mut psink = sink::ParquetSink::new(|table: &str| {
                create_file(&target.join(format!("{table}.parquet")))
            });
            let t0 = Instant::now();
            let res =
                profile::process_device(&inv, &p.id, i, &open, &mut psink, &mut |_, _, _| {})?;
            let rows = psink.finish()?;
            say!(
                "{} / {} -> {} ({:.2} s)",
                p.id,
                d.name,
                target.display(),
                t0.elapsed().as_secs_f64()
            );
            for (t, n) in rows {
                say!("  {t}.parquet: {n} rows");
            }
            for pr in &res.problems {
                say!("  {:?}: {}", pr.severity, pr.message);
                if pr.severity == neuronscope::Severity::Error {
                    failures += 1;
                }
            }
        }
    }
    for f in &inv.files {
        if !matches!(f.kind, inventory::FileKind::MemorySnapshot { .. }) {
            continue;
        }
        let target = out.join(neuronscope::util::safe_name(&f.path));
        create_dir(&target)?;
        let mut psink = sink::ParquetSink::new(|table: &str| {
            create_file(&target.join(format!("{table}.parquet")))
        });
        let res = profile::process_memory(&inv, &f.path, &open, &mut psink)?;
        say!("{} -> {}", f.path, target.display());
        for (t, n) in psink.finish()? {
            say!("  {t}.parquet: {n} rows");
        }
        for pr in &res.report.problems {
            say!("  {:?}: {}", pr.severity, pr.message);
            if pr.severity == neuronscope::Severity::Error {
                failures += 1;
            }
        }
    }
    if inv.profiles.is_empty()
        && !inv
            .files
            .iter()
            .any(|f| matches!(f.kind, inventory::FileKind::MemorySnapshot { .. }))
    {
        return Err(Error::Other(format!(
            "{}: no profile found (no .ntff, .neff, trace_info.pb/ntrace.pb or memory snapshot)",
            dir.display()
        )));
    }
    if failures > 0 {
        // Exit non-zero, but only after every table that could be decoded was written.
        return Err(Error::Other(format!(
            "{failures} error(s); tables decoded before each fault were written"
        )));
    }
    Ok(())
}

/// `--flag N` as a number, if present.
fn opt_u64(args: &[String], flag: &str) -> Result<Option<u64>> {
    opt(args, flag)
        .map(|v| {
            v.parse()
                .map_err(|_| Error::Other(format!("{flag} {v}: not a number")))
        })
        .transpose()
}

fn cmd_synth(args: &[String]) -> Result<()> {
    let out = positional(args, &["--ntff-mb", "--kineto-mb"])
        .ok_or_else(|| Error::Other(USAGE.into()))?;
    if let Some(mb) = opt_u64(args, "--kineto-mb")? {
        std::fs::create_dir_all(&out)?;
        for p in neuronscope::synth::write_system_capture(&out, mb * 1_000_000)? {
            let n = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
            say!("{} ({n} bytes)", p.display());
        }
        return Ok(());
    }
    let mb: Option<u64> = match opt(args, "--ntff-mb") {
        Some(v) => Some(
            v.parse()
                .map_err(|_| Error::Other(format!("--ntff-mb {v}: not a number")))?,
        ),
        None => None,
    };
    std::fs::create_dir_all(&out)?;
    if let Some(mb) = mb {
        for p in neuronscope::synth::write_large_capture(&out, mb * 1_000_000)? {
            let n = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
            say!("{} ({n} bytes)", p.display());
        }
        return Ok(());
    }
    for (path, bytes) in neuronscope::synth::demo_capture()? {
        let p = out.join(&path);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&p, &bytes)?;
        say!("{} ({} bytes)", p.display(), bytes.len());
    }
    Ok(())
}

/// Counts rows without keeping them (decode-only throughput).
#[derive(Default)]
struct NullSink {
    rows: u64,
}

impl TableSink for NullSink {
    fn batch(&mut self, _def: &'static TableDef, batch: arrow_array::RecordBatch) -> Result<()> {
        self.rows += batch.num_rows() as u64;
        Ok(())
    }
}

/// Peak resident memory of this process in bytes (Linux `VmHWM`), if known.
fn peak_rss() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

fn cmd_bench(args: &[String]) -> Result<()> {
    let tmp;
    let flags = ["--synth-mb", "--kineto-mb"];
    let dir = match (
        positional(args, &flags),
        opt_u64(args, "--synth-mb")?,
        opt_u64(args, "--kineto-mb")?,
    ) {
        (Some(d), _, _) => d,
        (None, Some(mb), _) => {
            // Named after the writer's shape: a cached capture of an older writer is not reused.
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
        (None, None, None) => return Err(Error::Other(USAGE.into())),
    };
    let picked = pick(&dir)?;
    let inv = scan_dir(&picked);
    let open = opener(&picked.base);
    say!("input\tbytes\tseconds\tMB/s\trows\trows/s\tparquet_bytes");
    for p in &inv.profiles {
        if p.system_files
            .iter()
            .any(|f| f.ends_with("ntrace.pb") || f.ends_with("trace_info.pb"))
        {
            let bytes: u64 = p
                .system_files
                .iter()
                .map(|f| {
                    std::fs::metadata(picked.base.join(f))
                        .map(|m| m.len())
                        .unwrap_or(0)
                })
                .sum();
            // decode only
            let mut null = NullSink::default();
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
        for (i, d) in p.devices.iter().enumerate() {
            let Some(ntff) = &d.ntff else { continue };
            let bytes = std::fs::metadata(picked.base.join(ntff))
                .map(|m| m.len())
                .unwrap_or(0);
            // decode only
            let mut null = NullSink::default();
            let t0 = Instant::now();
            profile::process_device(&inv, &p.id, i, &open, &mut null, &mut |_, _, _| {})?;
            let secs = t0.elapsed().as_secs_f64().max(1e-9);
            // decode + Parquet (to memory, discarded)
            let pq = Arc::new(AtomicU64::new(0));
            let mut psink = sink::ParquetSink::new(|_t: &str| Ok(CountingWriter(pq.clone())));
            profile::process_device(&inv, &p.id, i, &open, &mut psink, &mut |_, _, _| {})?;
            psink.finish()?;
            let pq_bytes = pq.load(Ordering::Relaxed);
            say!(
                "{ntff}\t{bytes}\t{secs:.3}\t{:.1}\t{}\t{:.0}\t{pq_bytes}",
                bytes as f64 / 1e6 / secs,
                null.rows,
                null.rows as f64 / secs
            );
        }
    }
    if let Some(peak) = peak_rss() {
        say!("peak_rss_bytes\t{peak}");
    }
    Ok(())
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

/// Positional arguments (not flags, not flag values).
fn positionals(args: &[String], flags_with_values: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut skip = false;
    for a in args {
        if skip {
            skip = false;
        } else if flags_with_values.contains(&a.as_str()) {
            skip = true;
        } else if !a.starts_with("--") {
            out.push(PathBuf::from(a));
        }
    }
    out
}

fn cmd_conform(args: &[String]) -> Result<()> {
    let pos = positionals(args, &["--device"]);
    let (Some(dir), Some(export_path)) = (pos.first(), pos.get(1)) else {
        return Err(Error::Other(USAGE.into()));
    };
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
    let picked = pick(dir)?;
    let inv = scan_dir(&picked);
    // The export's path as the inventory names files, when it lies inside the picked folder.
    let export_rel = export_path.canonicalize().ok().and_then(|p| {
        p.strip_prefix(&picked.base)
            .ok()
            .map(|r| r.to_string_lossy().replace('\\', "/"))
    });
    let (pid, idx) = neuronscope::conform::find_device(
        &inv,
        &export,
        export_rel
            .as_deref()
            .or_else(|| export_path.file_name().and_then(|n| n.to_str())),
        opt(args, "--device"),
    )?;
    let open = opener(&picked.base);
    let mut tables = neuronscope::tables::Tables::default();
    let res = profile::process_device(&inv, &pid, idx, &open, &mut tables, &mut |_, _, _| {})?;
    let report = neuronscope::conform::conform_value(&tables, &export);
    if args.iter().any(|a| a == "--json") {
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
    Ok(())
}
