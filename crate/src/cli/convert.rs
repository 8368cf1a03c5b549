//! `neuronscope convert`: every profile of one or many capture folders to Parquet, on all cores,
//! restartable.
//!
//! Layouts (`--layout`):
//! - `hive` (default): one dataset a distributed engine reads whole (DuckDB
//!   `read_parquet('OUT/Instruction/**/*.parquet', hive_partitioning = true)`, Spark
//!   `spark.read.parquet("OUT/Instruction")`, polars `scan_parquet(..., hive_partitioning=True)`):
//!   `OUT/<Table>/instance=<id>/pid=<pid>/profile=<name>/part-0.parquet`. `instance` and `pid`
//!   of a device profile come from its NTFF header (v6 fields 17, 18: the process that recorded
//!   it), else from the capture folder name (`i-…_pid_…`); a system profile's from the folder
//!   name. Unknown ones are Hive's null, `__HIVE_DEFAULT_PARTITION__`. `name` is
//!   `<profile id>/<device>` (`/system` for a system profile, the snapshot's path for a memory
//!   snapshot), percent-escaped like Hive (every byte outside `A-Z a-z 0-9 . _ -`); a name
//!   whose escape is longer than [`MAX_NAME`] bytes (a capture many folders deep) is cut to a
//!   prefix plus `~` and 16 hex digits of its MD5 ([`bounded_profile`]), the same in the
//!   partition, the state file and `_profiles.parquet`.
//! - `tree`: the layout before the dataset, `OUT/<profile>/<device>/<Table>.parquet` (one folder
//!   per device profile, as the page's zip bundle has it).
//!
//! Both write `OUT/_profiles.parquet` (one row per converted profile, [`ProfileRow`]) and keep
//! one state file per profile in `OUT/_state/`: a profile whose inputs (path, size, mtime) and
//! neuronscope version are unchanged since it was last converted completely is skipped
//! (`--force` converts it again). A profile converted again, or cut short by an interrupted
//! run, has its old files removed first. Profiles of earlier runs into the same OUT stay (and
//! stay in `_profiles.parquet`): a dataset can grow capture by capture.

use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::{ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use neuronscope::inventory::{FileKind, Inventory};
use neuronscope::{pairing, profile, sink, Error, Problem, Result, Severity};

use super::walk::{self, Picked};

/// How `convert` lays out its Parquet files (see the module doc).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// `OUT/<Table>/instance=<id>/pid=<pid>/profile=<name>/part-0.parquet`: one dataset.
    Hive,
    /// `OUT/<profile>/<device>/<Table>.parquet`: one folder per device profile.
    Tree,
}

/// Arguments of `convert` (see `neuronscope convert --help`).
#[derive(clap::Args, Debug)]
pub struct ConvertArgs {
    /// Capture folders, or parents of many captures (symbolic links are followed).
    #[arg(value_name = "DIR", required = true)]
    pub dirs: Vec<PathBuf>,
    /// Output folder (created when missing; earlier conversions in it are reused).
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub out: PathBuf,
    /// Profiles converted at the same time [default: the number of cores].
    #[arg(short = 'j', long, value_name = "N", value_parser = at_least_one)]
    pub threads: Option<NonZeroUsize>,
    /// Output layout.
    #[arg(long, value_enum, default_value_t = Layout::Hive)]
    pub layout: Layout,
    /// Convert every profile again, even when its inputs did not change.
    #[arg(long)]
    pub force: bool,
}

/// One row of `OUT/_profiles.parquet`: one converted profile (a device profile, a system
/// profile or a memory snapshot).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ProfileRow {
    /// EC2 instance id (Hive partition `instance`), when known.
    pub instance: Option<String>,
    /// Process id (partition `pid`), when known.
    pub pid: Option<u64>,
    /// Partition `profile` value, unescaped: `<profile id>/<device>`, cut to a prefix plus `~`
    /// and 16 hex digits of its MD5 when its escape is longer than [`MAX_NAME`] bytes
    /// ([`bounded_profile`]).
    pub profile: String,
    /// The inventory's profile id (its root folder).
    pub profile_id: String,
    /// Device profile name (NTFF stem), `system`, or the snapshot's file name.
    pub device: String,
    /// The inventory's profile type: `Device`, `System`, `System+Device` (`Memory` for a
    /// snapshot outside every profile folder).
    pub profile_type: String,
    /// What was converted: `device`, `system` or `memory`.
    pub part: String,
    /// The input files (paths as `scan` lists them).
    pub files: Vec<String>,
    /// Pairing result (JSON of `inventory::PairStatus`; empty for system and memory parts).
    pub pairing: String,
    /// NTFF version byte.
    pub ntff_version: Option<u8>,
    /// Problems, one sentence each, severity first.
    pub problems: Vec<String>,
    /// How many of them are errors, i.e. lost data ([`loses_data`]); decides `convert`'s exit
    /// code 3.
    pub errors: u64,
    /// Rows written outside `SchemaFields` and `Warning` (0: nothing usable was decoded). Not a
    /// column of `_profiles.parquet`.
    #[serde(default)]
    pub data_rows: u64,
    /// Tables written.
    pub tables: Vec<String>,
    /// Rows written over all tables.
    pub rows: u64,
    /// Conversion time in seconds (of the run that converted it).
    pub seconds: f64,
}

/// What a state file in `OUT/_state/` remembers of a converted profile.
#[derive(serde::Serialize, serde::Deserialize)]
struct State {
    /// neuronscope version, layout and every input's path, size and mtime.
    fingerprint: Vec<String>,
    /// Files written, relative to OUT.
    files: Vec<String>,
    row: ProfileRow,
}

#[derive(Clone, Copy)]
enum What {
    Device { profile: usize, device: usize },
    System { profile: usize },
    Memory,
}

/// One unit of work: one profile's tables.
struct Job {
    what: What,
    row: ProfileRow,
    /// Input bytes (the biggest jobs start first).
    bytes: u64,
    /// Where the tables go, relative to OUT: the partition path (hive) or the folder (tree).
    rel: String,
}

/// Hive's partition-value escaping (a superset: every byte outside `A-Z a-z 0-9 . _ -` becomes
/// `%XX`), so any profile name is one path component; Spark and DuckDB decode it.
pub fn hive_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    // "", "." and ".." are no folder names of their own.
    if out.bytes().all(|b| b == b'.') {
        out = out.replace('.', "%2E");
        if out.is_empty() {
            out.push('_');
        }
    }
    out
}

/// Longest file or folder name `convert` writes, in bytes (file systems allow 255; the state
/// file adds `.json`, its temporary `.tmp`).
pub const MAX_NAME: usize = 200;

/// 16 hex digits of the MD5 of `s`: distinct names stay distinct once cut.
fn short_hash(s: &str) -> String {
    use md5::Digest as _;
    let d = md5::Md5::digest(s.as_bytes());
    d[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// A profile name whose Hive escape ([`hive_escape`]) fits in [`MAX_NAME`] bytes: unchanged
/// when it does, else its longest prefix that leaves room, then `~` and [`short_hash`] of the
/// whole name (a capture 60 folders deep has a name no file system takes as one component).
pub fn bounded_profile(name: &str) -> String {
    if hive_escape(name).len() <= MAX_NAME {
        return name.to_string();
    }
    // `~` escapes to `%7E` (3 bytes) and the hash is 16.
    let budget = MAX_NAME - 19;
    let mut used = 0;
    let mut end = 0;
    for (i, c) in name.char_indices() {
        let mut b = [0u8; 4];
        let w = hive_escape(c.encode_utf8(&mut b)).len();
        if used + w > budget {
            break;
        }
        used += w;
        end = i + c.len_utf8();
    }
    format!("{}~{}", &name[..end], short_hash(name))
}

/// [`neuronscope::util::safe_name`] bounded like [`bounded_profile`] (the `tree` layout's
/// folder names).
fn bounded_safe(name: &str) -> String {
    let s = neuronscope::util::safe_name(name);
    if s.len() <= MAX_NAME {
        return s;
    }
    // safe_name's output is ASCII: any byte index is a char boundary.
    format!("{}~{}", &s[..MAX_NAME - 17], short_hash(&s))
}

/// Hive's spelling of a null partition value.
const HIVE_NULL: &str = "__HIVE_DEFAULT_PARTITION__";

fn type_name(t: neuronscope::inventory::ProfileType) -> String {
    serde_json::to_value(t)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The jobs of an inventory, names made unique.
fn jobs(inv: &Inventory, picked: &Picked, layout: Layout) -> Vec<Job> {
    let size = |f: &str| {
        picked
            .path_of(f)
            .and_then(|p| std::fs::metadata(p).ok())
            .map_or(0, |m| m.len())
    };
    let mut out = Vec::new();
    let base = |p: &neuronscope::inventory::Profile, device: &str, part: &str| ProfileRow {
        instance: p.instance_id.clone(),
        pid: p.pid,
        profile: format!("{}/{device}", p.id),
        profile_id: p.id.clone(),
        device: device.to_string(),
        profile_type: type_name(p.profile_type),
        part: part.into(),
        files: Vec::new(),
        pairing: String::new(),
        ntff_version: None,
        problems: Vec::new(),
        errors: 0,
        data_rows: 0,
        tables: Vec::new(),
        rows: 0,
        seconds: 0.0,
    };
    for (pi, p) in inv.profiles.iter().enumerate() {
        if p.system_files
            .iter()
            .any(|f| f.ends_with("ntrace.pb") || f.ends_with("trace_info.pb"))
        {
            let mut row = base(p, "system", "system");
            row.files = p.system_files.clone();
            // DeviceProfileList names the capture's NTFFs.
            row.files
                .extend(p.devices.iter().filter_map(|d| d.ntff.clone()));
            out.push(Job {
                what: What::System { profile: pi },
                bytes: p.system_files.iter().map(|f| size(f)).sum(),
                row,
                rel: String::new(),
            });
        }
        for (di, d) in p.devices.iter().enumerate() {
            let mut row = base(p, &d.name, "device");
            row.files = d.ntff.iter().chain(d.neff.iter()).cloned().collect();
            row.pairing = serde_json::to_string(&d.pairing).unwrap_or_default();
            row.ntff_version = d.ntff_version;
            // The v6 header names the process that recorded the trace; it wins over the capture
            // folder's name (an NTFF of another process can sit in a capture folder: the
            // inventory's DIFFERENT_CAPTURE), and serves NTFFs outside capture folders.
            let ids = d
                .ntff
                .as_deref()
                .and_then(|n| picked.open(n).ok())
                .and_then(|s| pairing::ntff_ids(&*s).ok().flatten());
            if let Some(ids) = ids {
                row.instance = ids.instance_id.or(row.instance);
                row.pid = ids.process_id.or(row.pid);
            }
            out.push(Job {
                what: What::Device {
                    profile: pi,
                    device: di,
                },
                bytes: row.files.iter().map(|f| size(f)).sum(),
                row,
                rel: String::new(),
            });
        }
    }
    for f in &inv.files {
        if !matches!(f.kind, FileKind::MemorySnapshot { .. }) {
            continue;
        }
        let owner = f
            .profile
            .as_deref()
            .and_then(|id| inv.profiles.iter().find(|p| p.id == id));
        let name = neuronscope::pairing::base_name(&f.path).to_string();
        // A snapshot outside every profile folder has no profile, type or process of its own.
        let mut row = match owner {
            Some(p) => base(p, &name, "memory"),
            None => ProfileRow {
                profile_type: "Memory".into(),
                ..base(&empty_profile(), &name, "memory")
            },
        };
        row.profile = f.path.clone();
        row.files = vec![f.path.clone()];
        out.push(Job {
            what: What::Memory,
            bytes: f.size,
            row,
            rel: String::new(),
        });
    }
    // A snapshot in a device-profile folder belongs to the process its NTFFs name, when they
    // agree on one.
    for i in 0..out.len() {
        if !matches!(out[i].what, What::Memory) || out[i].row.instance.is_some() {
            continue;
        }
        let ids: std::collections::BTreeSet<(Option<String>, Option<u64>)> = out
            .iter()
            .filter(|j| {
                matches!(j.what, What::Device { .. }) && j.row.profile_id == out[i].row.profile_id
            })
            .map(|j| (j.row.instance.clone(), j.row.pid))
            .collect();
        if let (1, Some((instance, pid))) = (ids.len(), ids.into_iter().next()) {
            out[i].row.instance = instance;
            out[i].row.pid = pid;
        }
    }
    // Unique names (an unused x.neff beside an x.ntff paired elsewhere has the same stem).
    let mut seen: BTreeMap<String, u32> = BTreeMap::new();
    for j in &mut out {
        let n = seen.entry(j.row.profile.clone()).or_insert(0);
        *n += 1;
        if *n > 1 {
            j.row.profile = format!("{}~{n}", j.row.profile);
        }
        // The partition value, the state file's name and `_profiles.parquet` agree on one
        // bounded name (the full paths stay in `files`).
        j.row.profile = bounded_profile(&j.row.profile);
        j.rel = match layout {
            Layout::Hive => format!(
                "instance={}/pid={}/profile={}",
                j.row
                    .instance
                    .as_deref()
                    .map_or(HIVE_NULL.into(), hive_escape),
                j.row.pid.map_or(HIVE_NULL.into(), |p| p.to_string()),
                hive_escape(&j.row.profile)
            ),
            Layout::Tree => match j.what {
                What::Memory => bounded_safe(&j.row.profile),
                _ => format!(
                    "{}/{}",
                    bounded_safe(&j.row.profile_id),
                    bounded_safe(&j.row.device)
                ),
            },
        };
    }
    out
}

fn empty_profile() -> neuronscope::inventory::Profile {
    neuronscope::inventory::Profile {
        id: String::new(),
        profile_type: neuronscope::inventory::ProfileType::System,
        root: String::new(),
        instance_id: None,
        pid: None,
        devices: Vec::new(),
        system_files: Vec::new(),
        other_files: Vec::new(),
        problems: Vec::new(),
    }
}

/// The job's inputs as they are now, plus what else decides the output.
fn fingerprint(job: &Job, picked: &Picked, layout: Layout) -> Vec<String> {
    let mut fp = vec![
        format!("neuronscope {}", env!("CARGO_PKG_VERSION")),
        format!("layout {layout:?}"),
        format!("pairing {}", job.row.pairing),
    ];
    let mut files = job.row.files.clone();
    files.sort();
    for f in files {
        let meta = picked.path_of(&f).and_then(|p| std::fs::metadata(p).ok());
        let mtime = meta
            .as_ref()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        fp.push(format!("{f}\t{}\t{mtime}", meta.map_or(0, |m| m.len())));
    }
    fp
}

/// Where a job's table goes, relative to OUT.
fn table_rel(job: &Job, layout: Layout, table: &str) -> String {
    match layout {
        Layout::Hive => format!("{table}/{}/part-0.parquet", job.rel),
        Layout::Tree => format!("{}/{table}.parquet", job.rel),
    }
}

/// One state file per profile name (not per partition: when a profile's instance or pid
/// changes, its old files are found through the state and removed).
fn state_path(out: &Path, job: &Job) -> PathBuf {
    out.join("_state")
        .join(format!("{}.json", hive_escape(&job.row.profile)))
}

/// Removes what an earlier (possibly interrupted) conversion of `job` left.
fn clear_job(out: &Path, job: &Job, layout: Layout, old: Option<&State>) {
    for f in old.map(|s| s.files.as_slice()).unwrap_or_default() {
        let path = out.join(f);
        let _ = std::fs::remove_file(&path);
        // Partition folders left empty go too (remove_dir refuses a folder with files).
        for dir in path.ancestors().skip(1).take(4) {
            if dir == out || std::fs::remove_dir(dir).is_err() {
                break;
            }
        }
    }
    match layout {
        // Part files of an interrupted run are listed nowhere: look in every table folder.
        Layout::Hive => {
            if let Ok(dirs) = std::fs::read_dir(out) {
                for d in dirs.flatten() {
                    let name = d.file_name();
                    if name.to_string_lossy().starts_with('_') {
                        continue;
                    }
                    let _ = std::fs::remove_dir_all(d.path().join(&job.rel));
                }
            }
        }
        Layout::Tree => {
            let _ = std::fs::remove_dir_all(out.join(&job.rel));
        }
    }
}

/// The outcome of one job.
struct Done {
    row: ProfileRow,
    skipped: bool,
    /// The job could not run at all (sink or file-system failure).
    failed: Option<String>,
}

/// Creates an output file and its folder; the error names the path.
fn create_file(p: &Path) -> Result<std::fs::File> {
    if let Some(dir) = p.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::Io(format!("cannot create directory {}: {e}", dir.display())))?;
    }
    std::fs::File::create(p).map_err(|e| Error::Io(format!("cannot create {}: {e}", p.display())))
}

fn problem_line(p: &Problem) -> String {
    format!("{:?}: {}", p.severity, p.message)
}

/// Converts one job; returns its row (with problems) and the files written.
fn convert_job(
    inv: &Inventory,
    picked: &Picked,
    out: &Path,
    layout: Layout,
    encoders: usize,
    job: &Job,
    log: &mut Vec<String>,
) -> Result<(ProfileRow, Vec<String>)> {
    let open = |p: &str| picked.open(p);
    let shared = |p: &str| picked.open_shared(p);
    // Spare cores also decode an NTFF's DMA side (the tables are the same).
    let dev = profile::DeviceOptions {
        dma_open: (encoders > 1).then_some(&shared as profile::SyncOpener<'_>),
        ..Default::default()
    };
    let written = Arc::new(Mutex::new(Vec::<String>::new()));
    let new_sink = || {
        sink::ParquetSink::new(|table: &str| {
            let rel = table_rel(job, layout, table);
            written.lock().map(|mut w| w.push(rel.clone())).ok();
            create_file(&out.join(rel))
        })
        // The DMA threads take two of the spare cores.
        .with_threads(if encoders > 1 {
            (encoders - 2).max(1)
        } else {
            1
        })
        .with_row_group_batches(sink::ROW_GROUP_BATCHES)
    };
    // With the DMA threads, `DmaPacket` is encoded on a writer thread of its own (one writer
    // was the bottleneck of the split decode).
    let mut sinks: Vec<_> = (0..if encoders > 1 { 2 } else { 1 })
        .map(|_| new_sink())
        .collect();
    let t0 = Instant::now();
    // Decode on this thread (an NTFF's DMA side on two more), Parquet encoding on one or two
    // more (the output is the same).
    let problems: Vec<Problem> = sink::pipelined_by(&mut sinks, sink::dma_packet_apart, |s| {
        Ok(match job.what {
            What::Device { profile, device } => {
                let p = &inv.profiles[profile];
                let mut none = |_: &str, _, _| {};
                profile::process_device_with(inv, &p.id, device, &open, s, &mut none, &dev)?
                    .problems
            }
            What::System { profile } => {
                let p = &inv.profiles[profile];
                profile::process_system(inv, &p.id, &open, s, &mut |_, _, _| {})?.problems
            }
            What::Memory => {
                let file = &job.row.files[0];
                profile::process_memory(inv, file, &open, s)?
                    .report
                    .problems
            }
        })
    })?;
    let mut tables = std::collections::BTreeMap::new();
    for s in sinks {
        tables.extend(s.finish()?);
    }
    let mut row = job.row.clone();
    row.seconds = t0.elapsed().as_secs_f64();
    log.push(format!(
        "{} -> {} ({:.2} s)",
        row.profile,
        match layout {
            Layout::Hive => job.rel.clone(),
            Layout::Tree => out.join(&job.rel).display().to_string(),
        },
        row.seconds
    ));
    for (t, n) in &tables {
        log.push(format!("  {t}.parquet: {n} rows"));
        row.tables.push(t.to_string());
        row.rows += n;
        if *t != "SchemaFields" && *t != "Warning" {
            row.data_rows += n;
        }
    }
    row.errors = problems.iter().filter(|p| loses_data(p)).count() as u64;
    row.problems = problems.iter().map(problem_line).collect();
    let mut files = written.lock().map(|w| w.clone()).unwrap_or_default();
    // Two writer threads open files in either order.
    files.sort();
    Ok((row, files))
}

/// Runs one job: skip when converted from the same inputs, else convert and record the state.
fn run_job(
    inv: &Inventory,
    picked: &Picked,
    args: &ConvertArgs,
    encoders: usize,
    job: &Job,
    log: &mut Vec<String>,
) -> Done {
    let fp = fingerprint(job, picked, args.layout);
    let sp = state_path(&args.out, job);
    let old: Option<State> = std::fs::read(&sp)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    if let Some(s) = &old {
        let complete = s.files.iter().all(|f| args.out.join(f).is_file());
        if !args.force && s.fingerprint == fp && complete {
            log.push(format!(
                "{}: unchanged since its last conversion, skipped",
                job.row.profile
            ));
            return Done {
                row: s.row.clone(),
                skipped: true,
                failed: None,
            };
        }
    }
    clear_job(&args.out, job, args.layout, old.as_ref());
    let _ = std::fs::remove_file(&sp);
    match convert_job(inv, picked, &args.out, args.layout, encoders, job, log) {
        Ok((row, files)) => {
            let state = State {
                fingerprint: fp,
                files,
                row: row.clone(),
            };
            let saved = serde_json::to_vec_pretty(&state)
                .map_err(|e| Error::Other(e.to_string()))
                .and_then(|b| write_atomic(&sp, &b));
            Done {
                row,
                skipped: false,
                failed: saved.err().map(|e| format!("state not saved: {e}")),
            }
        }
        Err(e) => {
            // The profile is still listed in `_profiles.parquet`, with the failure as its
            // error; the state's empty fingerprint makes the next run convert it again.
            let mut row = job.row.clone();
            row.problems = vec![format!("Error: not converted: {e}")];
            row.errors = 1;
            let state = State {
                fingerprint: Vec::new(),
                files: Vec::new(),
                row: row.clone(),
            };
            if let Ok(b) = serde_json::to_vec_pretty(&state) {
                let _ = write_atomic(&sp, &b);
            }
            Done {
                row,
                skipped: false,
                failed: Some(e.to_string()),
            }
        }
    }
}

/// Writes `bytes` to `path` through a temporary file, so a reader never sees half of it.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tmp");
    use std::io::Write as _;
    let mut f = create_file(&tmp)?;
    f.write_all(bytes)
        .and_then(|_| f.sync_all())
        .map_err(|e| Error::Io(format!("{}: {e}", tmp.display())))?;
    std::fs::rename(&tmp, path).map_err(|e| Error::Io(format!("{}: {e}", path.display())))
}

/// Every profile row recorded in `OUT/_state/` (this run's and earlier runs').
fn recorded_rows(out: &Path) -> Vec<ProfileRow> {
    let mut rows = Vec::new();
    if let Ok(dir) = std::fs::read_dir(out.join("_state")) {
        for e in dir.flatten() {
            if e.path().extension().is_some_and(|x| x == "json") {
                if let Some(s) = std::fs::read(e.path())
                    .ok()
                    .and_then(|b| serde_json::from_slice::<State>(&b).ok())
                {
                    rows.push(s.row);
                }
            }
        }
    }
    rows.sort_by(|a, b| (&a.instance, a.pid, &a.profile).cmp(&(&b.instance, b.pid, &b.profile)));
    rows
}

/// Writes `OUT/_profiles.parquet` from the rows.
fn write_profiles(out: &Path, rows: &[ProfileRow]) -> Result<()> {
    let list = |f: &dyn Fn(&ProfileRow) -> &Vec<String>| -> ArrayRef {
        let mut b = ListBuilder::new(StringBuilder::new());
        for r in rows {
            for s in f(r) {
                b.values().append_value(s);
            }
            b.append(true);
        }
        Arc::new(b.finish())
    };
    let strs = |f: &dyn Fn(&ProfileRow) -> Option<&str>| -> ArrayRef {
        Arc::new(rows.iter().map(f).collect::<StringArray>())
    };
    let item = Arc::new(Field::new("item", DataType::Utf8, true));
    let schema = Schema::new(vec![
        Field::new("instance", DataType::Utf8, true),
        Field::new("pid", DataType::Int64, true),
        Field::new("profile", DataType::Utf8, false),
        Field::new("profile_id", DataType::Utf8, false),
        Field::new("device", DataType::Utf8, false),
        Field::new("type", DataType::Utf8, false),
        Field::new("part", DataType::Utf8, false),
        Field::new("files", DataType::List(item.clone()), false),
        Field::new("pairing", DataType::Utf8, false),
        Field::new("ntff_version", DataType::Int32, true),
        Field::new("problems", DataType::List(item.clone()), false),
        Field::new("errors", DataType::Int64, false),
        Field::new("tables", DataType::List(item), false),
        Field::new("rows", DataType::Int64, false),
        Field::new("seconds", DataType::Float64, false),
    ]);
    let cols: Vec<ArrayRef> = vec![
        strs(&|r| r.instance.as_deref()),
        Arc::new(
            rows.iter()
                .map(|r| r.pid.map(|p| p as i64))
                .collect::<Int64Array>(),
        ),
        strs(&|r| Some(&r.profile)),
        strs(&|r| Some(&r.profile_id)),
        strs(&|r| Some(&r.device)),
        strs(&|r| Some(&r.profile_type)),
        strs(&|r| Some(&r.part)),
        list(&|r| &r.files),
        strs(&|r| Some(&r.pairing)),
        Arc::new(
            rows.iter()
                .map(|r| r.ntff_version.map(i32::from))
                .collect::<Int32Array>(),
        ),
        list(&|r| &r.problems),
        Arc::new(rows.iter().map(|r| r.errors as i64).collect::<Int64Array>()),
        list(&|r| &r.tables),
        Arc::new(rows.iter().map(|r| r.rows as i64).collect::<Int64Array>()),
        Arc::new(rows.iter().map(|r| r.seconds).collect::<Float64Array>()),
    ];
    let batch = RecordBatch::try_new(Arc::new(schema), cols)?;
    let path = out.join("_profiles.parquet");
    let tmp = out.join("_profiles.parquet.tmp");
    let f = create_file(&tmp)?;
    let mut w =
        parquet::arrow::ArrowWriter::try_new(f, batch.schema(), Some(sink::default_props()))?;
    w.write(&batch)?;
    w.close()?;
    std::fs::rename(&tmp, &path).map_err(|e| Error::Io(format!("{}: {e}", path.display())))
}

/// True for a problem that lost data: an error (a damaged or cut NTFF, NEFF, `ntrace.pb`,
/// `cpu_util.pb`, `host_mem.pb` or `trace.json`, an NTFF buffer or code block that could not be
/// read, corrupt records of any file: `crate::problem::Code` grades them all errors), so every
/// file kind gives the same exit code (3). Notes that lose nothing (rows written out of start
/// order, a clock assumed) are warnings and do not count.
pub fn loses_data(p: &Problem) -> bool {
    p.severity == Severity::Error
}

/// How a `convert` run ended, per profile.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Profiles converted whose input had data problems ([`loses_data`]; every table decoded
    /// before each fault was written).
    pub input_errors: u64,
    /// Profiles that could not be converted (an output file could not be written); listed in
    /// `_profiles.parquet` with the failure.
    pub failed: u64,
    /// Profiles converted (or unchanged) with rows outside `SchemaFields` and `Warning`.
    pub usable: u64,
}

impl Outcome {
    /// True when something went wrong and no profile gave a usable row (exit 1, not 3).
    pub fn nothing_usable(&self) -> bool {
        self.usable == 0 && (self.input_errors > 0 || self.failed > 0)
    }

    /// The closing line when something went wrong (`None`: exit 0), true of both kinds.
    pub fn message(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.input_errors > 0 {
            parts.push(format!(
                "{} profile(s) had errors in their input (a damaged or cut file); the tables \
                 decoded before each fault were written",
                self.input_errors
            ));
        }
        if self.failed > 0 {
            parts.push(format!(
                "{} profile(s) could not be converted (printed above; listed in \
                 _profiles.parquet with the failure)",
                self.failed
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// Runs `convert`. Returns how many profiles had input errors (each printed with its file and
/// offset; every table decoded before a fault is written all the same) and how many could not
/// be converted.
///
/// Errors: an input folder cannot be read, nothing convertible was found, or OUT cannot be
/// written.
pub fn run(args: &ConvertArgs) -> Result<Outcome> {
    let picked = walk::pick(&args.dirs)?;
    let open = |p: &str| picked.open(p);
    let mut inv = neuronscope::inventory::build(&picked.files, &open);
    inv.problems.extend(picked.problems.iter().cloned());
    let mut jobs = jobs(&inv, &picked, args.layout);
    if jobs.is_empty() {
        let dirs: Vec<String> = args.dirs.iter().map(|d| d.display().to_string()).collect();
        let why = neuronscope::inventory::no_profile_why(
            &inv.files,
            ".ntff, .neff, trace_info.pb/ntrace.pb or memory snapshot",
        );
        return Err(Error::Other(format!(
            "{}: no profile found {why}",
            dirs.join(", ")
        )));
    }
    std::fs::create_dir_all(&args.out).map_err(|e| {
        Error::Io(format!(
            "cannot create directory {}: {e}",
            args.out.display()
        ))
    })?;
    // Biggest first, so the last job to finish is a small one.
    jobs.sort_by(|a, b| {
        b.bytes
            .cmp(&a.bytes)
            .then(a.row.profile.cmp(&b.row.profile))
    });
    let threads = args
        .threads
        .or_else(|| std::thread::available_parallelism().ok())
        .map_or(1, NonZeroUsize::get)
        .min(jobs.len());
    detail!(
        "{}, {} to convert on {threads} thread(s)",
        crate::cli::count(picked.files.len() as u64, "file"),
        crate::cli::count(jobs.len() as u64, "profile")
    );
    let read: std::collections::BTreeSet<&str> = jobs
        .iter()
        .flat_map(|j| j.row.files.iter().map(String::as_str))
        .collect();
    // A memory snapshot a job reads has its faults said by that job (the snapshot decoder's,
    // with the offset), once, as `process_system` does for one in a System profile.
    let snapshot_read = |f: &str| read.contains(f) && inv.is_memory_snapshot(f);
    for pr in &inv.problems {
        if pr.file.as_deref().is_some_and(snapshot_read) {
            continue;
        }
        if pr.severity != Severity::Info || crate::cli::verbose() {
            note!("{}", problem_line(pr));
        }
    }
    // Problems of a profile about files no job reads (a misnamed file) are printed here; the
    // others come with their job's output, and a system job's output has all of a profile's but
    // its devices' (`profile::process_system`): those are not printed here again.
    let system_job: std::collections::BTreeSet<&str> = jobs
        .iter()
        .filter(|j| matches!(j.what, What::System { .. }))
        .map(|j| j.row.profile_id.as_str())
        .collect();
    for p in inv
        .profiles
        .iter()
        .filter(|p| !system_job.contains(p.id.as_str()))
    {
        for pr in &p.problems {
            if pr.file.as_deref().is_none_or(|f| !read.contains(f)) {
                note!("{}: {}", p.id, problem_line(pr));
            }
        }
    }
    // Cores not taken by a job of their own encode Parquet column chunks in parallel.
    let cores = args
        .threads
        .or_else(|| std::thread::available_parallelism().ok())
        .map_or(1, NonZeroUsize::get);
    let encoders = (cores / threads.max(1)).max(1);
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<Done>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(i) else { break };
                let mut log = Vec::new();
                let d = run_job(&inv, &picked, args, encoders, job, &mut log);
                print_job(&d, &log);
                if let Ok(mut v) = done.lock() {
                    v.push(d);
                }
            });
        }
    });
    let done = done.into_inner().unwrap_or_default();
    let rows = recorded_rows(&args.out);
    write_profiles(&args.out, &rows)?;
    let failed = done.iter().filter(|d| d.failed.is_some()).count() as u64;
    let with_errors = done
        .iter()
        .filter(|d| d.failed.is_none() && d.row.errors > 0)
        .count() as u64;
    let skipped = done.iter().filter(|d| d.skipped).count();
    // Converted without a data row or an error: an empty NTFF (EMPTY_NTFF, an idle core) or a
    // file with nothing in it; counted apart so "converted" means tables with rows.
    let empty = done
        .iter()
        .filter(|d| !d.skipped && d.failed.is_none() && d.row.errors == 0 && d.row.data_rows == 0)
        .count();
    note!(
        "{}: {} converted, {}{skipped} unchanged (skipped), {} with errors{}; {} rows in {}",
        crate::cli::count(done.len() as u64, "profile"),
        done.len() - skipped - failed as usize - empty,
        if empty > 0 {
            format!("{empty} empty (no trace data; only SchemaFields and Warning written), ")
        } else {
            String::new()
        },
        with_errors + failed,
        if failed > 0 {
            format!(" ({failed} not converted)")
        } else {
            String::new()
        },
        rows.len(),
        args.out.join("_profiles.parquet").display()
    );
    let usable = done
        .iter()
        .filter(|d| d.failed.is_none() && d.row.data_rows > 0)
        .count() as u64;
    Ok(Outcome {
        input_errors: with_errors,
        failed,
        usable,
    })
}

/// Prints one finished job's lines together (jobs finish in any order).
fn print_job(d: &Done, log: &[String]) {
    let mut out = std::io::stdout().lock();
    use std::io::Write as _;
    if d.skipped {
        if crate::cli::verbose() {
            for l in log {
                let _ = writeln!(out, "{l}");
            }
        }
        return;
    }
    if crate::cli::normal() {
        for l in log {
            let _ = writeln!(out, "{l}");
        }
        for p in &d.row.problems {
            let _ = writeln!(out, "  {p}");
        }
    }
    drop(out);
    if !crate::cli::normal() {
        // --quiet: errors still reach stderr.
        for p in d.row.problems.iter().filter(|p| p.starts_with("Error")) {
            eprintln!("neuronscope: {p}");
        }
    }
    if let Some(e) = &d.failed {
        eprintln!("neuronscope: {}: {e}", d.row.profile);
    }
}

/// `--threads N`: a whole number of at least 1, with a message that says so (clap's own for a
/// zero `NonZeroUsize` is "number would be zero for non-zero type").
fn at_least_one(s: &str) -> std::result::Result<NonZeroUsize, String> {
    s.parse::<usize>()
        .ok()
        .and_then(NonZeroUsize::new)
        .ok_or_else(|| format!("expected a whole number of threads, at least 1; got '{s}'"))
}

#[cfg(test)]
mod tests {
    use super::{at_least_one, bounded_profile, hive_escape, MAX_NAME};

    #[test]
    fn threads_must_be_at_least_one() {
        assert_eq!(at_least_one("3").map(|n| n.get()), Ok(3));
        for bad in ["0", "-1", "two", ""] {
            let e = at_least_one(bad).unwrap_err();
            assert!(
                e.contains("at least 1") && e.contains(&format!("'{bad}'")),
                "{e}"
            );
        }
    }

    #[test]
    fn long_profile_names_are_bounded_and_stay_distinct() {
        assert_eq!(bounded_profile("cap/dev"), "cap/dev");
        let deep: String = (0..60).map(|i| format!("level_{i}/")).collect();
        let (a, b) = (format!("{deep}x"), format!("{deep}y"));
        let (ba, bb) = (bounded_profile(&a), bounded_profile(&b));
        assert!(hive_escape(&ba).len() <= MAX_NAME, "{ba}");
        assert_ne!(ba, bb);
        assert!(ba.starts_with("level_0/level_1/"), "{ba}");
        // Multi-byte characters are never split.
        let wide = "ü".repeat(200);
        assert!(hive_escape(&bounded_profile(&wide)).len() <= MAX_NAME);
    }

    #[test]
    fn partition_values_are_one_path_component() {
        assert_eq!(
            hive_escape("i-0af76a70a6d3864dd_pid_713479/profile_exec_2"),
            "i-0af76a70a6d3864dd_pid_713479%2Fprofile_exec_2"
        );
        assert_eq!(hive_escape("a=b c%"), "a%3Db%20c%25");
        assert_eq!(hive_escape("ü"), "%C3%BC", "UTF-8 bytes");
        assert_eq!(hive_escape(".."), "%2E%2E");
        assert_eq!(hive_escape(""), "_");
    }
}
