//! System profiles (spec/system-profile.md): decodes a capture directory's `trace_info.pb`,
//! `ntrace.pb`, `cpu_util.pb` and `host_mem.pb` into Explorer's system tables
//! (explorer-schema.md §5.8): `SystemProfileEvents`, `SystemProfileMetadata`, `CpuUsage`,
//! `HostMemUsage`, `SystemProfileHbmUsage`, `DeviceProfileList`.
//!
//! Entry point: [`process`]. The framed files are streamed record by record ([`decode::FrameReader`],
//! 1 MiB windows); `ntrace.pb` events leave as soon as they are paired, through a bounded reorder
//! window ([`ntrace`]). Bad records become [`Problem`]s with file and offset (an undecodable
//! record, an implausible length prefix and a cut last record are errors: `TRUNCATED_TRACE` for
//! the cut); everything decoded before (and, when the framing is intact, after) is kept.

pub mod decode;
pub mod kineto;
pub mod ntrace;
pub mod write;

use std::collections::BTreeMap;

use prost::Message;

use crate::error::{Code, Error, Problem, Result};
use crate::inventory::Profile;
use crate::source::ByteSource;
use crate::tables::{explorer, kind, TableBuilder, TableSink, C};
use decode::{FrameReader, TraceInfo};

/// Opens a file of the drop by its path (as listed in [`Profile::system_files`] / devices).
pub type OpenFn<'a> = &'a dyn Fn(&str) -> Result<Box<dyn ByteSource>>;

/// Per-file decoding counts.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct FileCount {
    /// Path of the file in the drop.
    pub file: String,
    /// File length in bytes.
    pub bytes: u64,
    /// Records decoded (framed files) or 1 (`trace_info.pb`).
    pub records: u64,
    /// Bytes after the last whole record (0 for a clean file).
    pub remainder: u64,
    /// Records `trace_info.pb` says the file holds (cpu_util: samples × CPUs), if it says.
    pub expected: Option<u64>,
}

/// Check of the hardware-timestamp rule (system-profile.md §6) over `ntrace.pb` records that
/// carry `nc_timestamp_ns`.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct SyncCheck {
    /// Hardware records with a device timestamp and at least one sync point of their `exec_id`.
    pub checked: u64,
    /// Of those, records whose field 2 equals `cpu + (nc − sync.nc)` for some sync point.
    pub matched: u64,
    /// Records whose field 2 was 0 and was recomputed with the rule.
    pub recomputed: u64,
}

/// How one NTFF of the capture directory relates to the system trace (pairing.md §6).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct DeviceLink {
    /// NTFF path.
    pub ntff: String,
    /// `same capture`, `same NEFF, different capture: …` or `unlinked: …`.
    pub link: String,
    /// Model id (file name, or the `system_trace` entry whose NEFF name equals NTFF field 1).
    pub model_id: Option<u64>,
    /// NTFF info field 18 (pid-like, pairing.md §6).
    pub ntff_pid: Option<u64>,
    /// Physical cores of the NTFF (subgraph field 3).
    pub cores: Vec<u32>,
}

/// What [`process`] did: counts, time range, problems. Serialisable for the page and CLI.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct SystemReport {
    /// `trace_info.pb` decoded, if present and readable.
    pub trace_info: Option<TraceInfo>,
    /// One entry per decoded file.
    pub files: Vec<FileCount>,
    /// `SystemProfileEvents` rows per event name.
    pub event_counts: BTreeMap<String, u64>,
    /// Start records paired with a stop.
    pub spans: u64,
    /// Instant records (phase 3).
    pub instants: u64,
    /// Start records without a stop (kept as zero-length rows).
    pub unpaired_starts: u64,
    /// Stop records without a start (kept as zero-length rows).
    pub unpaired_stops: u64,
    /// Pairs whose start and stop have different event types.
    pub type_mismatches: u64,
    /// Earliest timestamp of any row, Unix ns.
    pub first_ts_ns: Option<i64>,
    /// Latest timestamp of any row, Unix ns.
    pub last_ts_ns: Option<i64>,
    /// `nc_exec_running` spans per physical core (`device_core_idx`).
    pub exec_spans_per_core: BTreeMap<String, u64>,
    /// Hardware-timestamp check (§6).
    pub sync: SyncCheck,
    /// `ntrace.pb` events written out of start order because they completed more than
    /// [`ntrace::REORDER_WINDOW`] events after a later-starting one (0 on every sample).
    pub late_events: u64,
    /// CPU samples outside 0–100 % (or NaN).
    pub cpu_out_of_range: u64,
    /// Rows written per table.
    pub rows: BTreeMap<String, u64>,
    /// One entry per NTFF of the profile.
    pub devices: Vec<DeviceLink>,
    /// Framework traces (`trace.json` & co., framework-inputs.md §2) by path.
    pub framework: BTreeMap<String, kineto::KinetoReport>,
    /// Everything that went wrong, with file and offset.
    pub problems: Vec<Problem>,
}

impl SystemReport {
    fn widen(&mut self, ts: i64) {
        self.first_ts_ns = Some(self.first_ts_ns.map_or(ts, |f| f.min(ts)));
        self.last_ts_ns = Some(self.last_ts_ns.map_or(ts, |l| l.max(ts)));
    }
}

/// Documented hardware event group (system-profile.md §1).
const HW_GROUP: [&str; 7] = [
    "nc_exec_running",
    "cc_running",
    "cc_exec_barrier",
    "numerical_err",
    "nrt_model_switch",
    "timestamp_sync_point",
    "hw_notify",
];

/// Attributes with a dedicated `SystemProfileEvents` column.
const COLUMN_ATTRS: [&str; 3] = ["nc_idx", "worker_gid", "device_core_idx"];

/// The int64 column `name` of `SystemProfileHbmUsage` (resolved at compile time).
const fn hbm_col(name: &str) -> C<kind::I64> {
    C::of(&explorer::SYSTEM_PROFILE_HBM_USAGE, name)
}

/// `usage_type` → `SystemProfileHbmUsage` column (system-profile.md §8).
const HBM_COLUMNS: [(&str, C<kind::I64>); 21] = [
    ("generic", hbm_col("generic_bytes")),
    ("pe", hbm_col("tensor_instructions_bytes")),
    ("act", hbm_col("scalar_instructions_bytes")),
    ("pool", hbm_col("gpsimd_instructions_bytes")),
    ("io", hbm_col("io_bytes")),
    ("spill", hbm_col("dram_spill_bytes")),
    ("weight", hbm_col("weights_bytes")),
    ("profiler buffers", hbm_col("profiler_buffers_bytes")),
    ("act table", hbm_col("scalar_table_bytes")),
    ("dve", hbm_col("vector_instructions_bytes")),
    ("sp", hbm_col("sync_instructions_bytes")),
    ("shared scratchpad", hbm_col("shared_scratchpad_bytes")),
    ("tensor", hbm_col("tensors_bytes")),
    ("ucode", hbm_col("ucode_lib_bytes")),
    ("pool stdio", hbm_col("gpsimd_stdio_bytes")),
    ("collectives", hbm_col("collectives_bytes")),
    ("scratchpad", hbm_col("scratchpad_bytes")),
    ("dma rings runtime", hbm_col("dma_rings_runtime_bytes")),
    ("dma rings spill", hbm_col("dma_rings_spill_bytes")),
    ("dma rings io", hbm_col("dma_rings_io_bytes")),
    (
        "dma rings collectives",
        hbm_col("dma_rings_collectives_bytes"),
    ),
];

crate::cols!(mod ev = crate::tables::explorer::SYSTEM_PROFILE_EVENTS {
    ID: I64 = "id",
    NAME: Str = "name",
    START: I64 = "start_ts",
    END: I64 = "end_ts",
    DURATION: I64 = "duration_ns",
    SOURCE: Str = "trace_event_source",
    INSTANCE: Str = "instance_id",
    PID: I64 = "process_id",
    TID: I64 = "thread_id",
    NC: I64 = "nc_idx",
    PCORE: I64 = "pcore_idx",
    WORKER: I64 = "worker_gid",
    FLOW: ListStr = "flow_id",
    EXTRA: Str = "extra_attributes_json",
});
crate::cols!(mod hbm = crate::tables::explorer::SYSTEM_PROFILE_HBM_USAGE {
    TS: I64 = "timestamp",
    TOTAL: I64 = "total_bytes",
    UNKNOWN: I64 = "unknown_bytes",
    DEVICE: I64 = "device_idx",
    HBM: I64 = "hbm_idx",
    INSTANCE: Str = "instance_id",
});
crate::cols!(mod cpu_usage = crate::tables::explorer::CPU_USAGE {
    TS: I64 = "timestamp",
    UTIL: F32 = "util_percent",
    CPU: Str = "cpu_id",
    INSTANCE: Str = "instance_id",
});
crate::cols!(mod host_mem = crate::tables::explorer::HOST_MEM_USAGE {
    TS: I64 = "timestamp",
    USED: I64 = "used_bytes",
    PERCENT: F32 = "used_percent",
    INSTANCE: Str = "instance_id",
});
crate::cols!(mod meta = crate::tables::explorer::SYSTEM_PROFILE_METADATA {
    FIRST_TS: Str = "first_ts",
    LAST_TS: Str = "last_ts",
    FIRST_NS: Str = "first_ts_ns",
    LAST_NS: Str = "last_ts_ns",
    NTFF_VERSION: I64 = "ntff_version",
    HBM_CAPACITY: I64 = "hbm_capacity_bytes",
});
crate::cols!(mod dev = crate::tables::explorer::DEVICE_PROFILE_LIST {
    NAME: Str = "device_profile_name",
    INSTANCE: Str = "instance_id",
    PID: I64 = "process_id",
    NC: I64 = "nc_id",
    SESSION: I64 = "session_id",
    MODEL: I64 = "model_id",
    LINK: Str = "nscope_link",
});

fn ts_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn base_name(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

/// Decodes a capture directory's system-profile files into the system tables.
///
/// `profile`: a `System` / `System+Device` profile from [`crate::inventory::build`]; its
/// `system_files` are looked up by base name (`trace_info.pb`, `ntrace.pb`, `cpu_util.pb`,
/// `host_mem.pb`), its NTFF devices feed `DeviceProfileList`. `open` opens a path of the drop.
/// `progress(file, bytes_done, bytes_total)` is called while streaming.
///
/// Tables written to `sink` (only those with rows): `SystemProfileEvents`, `SystemProfileHbmUsage`,
/// `CpuUsage`, `HostMemUsage`, `SystemProfileMetadata`, `DeviceProfileList`.
///
/// Errors: only sink errors (`Err`); every input problem is a [`Problem`] in the report
/// (missing `trace_info.pb`/`ntrace.pb` → Error `ERROR_NO_METADATA`; a bad or truncated record →
/// Warning `ERROR_PROCESS_INCOMPLETE` with file and offset).
pub fn process(
    profile: &Profile,
    open: OpenFn<'_>,
    sink: &mut dyn TableSink,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<SystemReport> {
    let mut rep = SystemReport::default();
    let find = |name: &str| {
        profile
            .system_files
            .iter()
            .find(|p| base_name(p) == name)
            .cloned()
    };
    let instance = profile.instance_id.clone().unwrap_or_default();
    // The capture folder as the inventory's capture checks name it (the profile's id).
    let dir = profile.id.as_str();

    // trace_info.pb
    let mut info = TraceInfo::default();
    match find("trace_info.pb") {
        Some(path) => match open(&path).and_then(|s| decode::read_trace_info(&*s)) {
            Ok(ti) => {
                rep.files.push(FileCount {
                    file: path.clone(),
                    bytes: open(&path).map(|s| s.len()).unwrap_or(0),
                    records: 1,
                    remainder: 0,
                    expected: Some(1),
                });
                info = ti;
                rep.trace_info = Some(info.clone());
            }
            Err(e) => rep
                .problems
                .push(Problem::from_error(Code::ProcessIncomplete, &path, &e)),
        },
        None => rep.problems.push(Problem::new(
            Code::NoMetadata,
            Some(dir),
            format!(
                "{dir}: No metadata found for system profile: trace_info.pb is missing (Explorer's \
                 words; the runtime trace is decoded, its event names show as event_<id>)"
            ),
        )),
    }
    let instance_id = if info.instance_id.is_empty() {
        instance
    } else {
        info.instance_id.clone()
    };
    let pid = if info.pid != 0 {
        Some(info.pid)
    } else {
        profile.pid
    };

    // ntrace.pb
    let nt_path = find("ntrace.pb");
    if nt_path.is_none() {
        rep.problems.push(Problem::new(
            Code::NoMetadata,
            Some(dir),
            format!(
                "{dir}: No metadata found for system profile: ntrace.pb is missing (Explorer's \
                 words; the system timeline is empty)"
            ),
        ));
    }
    let expected = rep
        .trace_info
        .as_ref()
        .map(|i| i.ntrace_file.as_ref().map_or(i.ntrace_count, |f| f.count));
    let exec = ntrace::stream_events(
        nt_path.as_deref(),
        open,
        &info,
        expected,
        &instance_id,
        pid,
        &mut rep,
        sink,
        progress,
    )?;
    for path in profile
        .system_files
        .iter()
        .filter(|p| crate::inventory::classify(p) == crate::inventory::FileKind::KinetoTrace)
    {
        read_framework(path, open, &instance_id, sink, &mut rep, progress)?;
    }

    if let Some(path) = find("cpu_util.pb") {
        let expected = info
            .cpu_file
            .as_ref()
            .and_then(|f| f.count.checked_mul(info.cpu_count));
        emit_cpu(
            &path,
            open,
            &instance_id,
            expected,
            sink,
            &mut rep,
            progress,
        )?;
    }
    if let Some(path) = find("host_mem.pb") {
        let expected = info.mem_file.as_ref().map(|f| f.count);
        emit_mem(
            &path,
            open,
            &instance_id,
            info.ram_bytes,
            expected,
            sink,
            &mut rep,
            progress,
        )?;
    }

    let ntff_version = profile.devices.iter().filter_map(|d| d.ntff_version).max();
    emit_metadata(&info, ntff_version, sink, &mut rep)?;
    emit_devices(
        profile,
        open,
        &info,
        &exec,
        &instance_id,
        pid,
        sink,
        &mut rep,
    )?;
    Ok(rep)
}

/// A `.json.gz` framework trace may inflate to at most this many times its size (trace JSON
/// compresses 5–30×), or [`TRACE_INFLATE_FLOOR`] bytes if larger, never past
/// [`TRACE_INFLATE_MAX`]; past it the rows stop with an error problem (a decompression bomb).
pub const TRACE_INFLATE_RATIO: u64 = 200;
/// Uncompressed bytes always allowed for a `.json.gz` trace.
pub const TRACE_INFLATE_FLOOR: u64 = 256 << 20;
/// Absolute cap on a `.json.gz` trace's uncompressed size (bytes).
pub const TRACE_INFLATE_MAX: u64 = 32 << 30;

/// Reads one framework trace (optionally gzip-compressed) into `SystemProfileEvents`, streaming:
/// a scan-only first pass when `baseTimeNanoseconds` does not precede the events
/// ([`kineto::find_base`]), then the rows.
fn read_framework(
    path: &str,
    open: OpenFn<'_>,
    instance_id: &str,
    sink: &mut dyn TableSink,
    rep: &mut SystemReport,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<()> {
    let Some(src) = open_or_problem(path, open, rep) else {
        return Ok(());
    };
    let len = src.len();
    let gz = path.ends_with(".gz");
    let reader = |src: Box<dyn ByteSource>| -> Box<dyn std::io::Read> {
        let r = crate::source::RangeReader::new(src, 0, len, decode::CHUNK);
        if gz {
            Box::new(crate::neff::archive::InflateLimit::new(
                flate2::read::MultiGzDecoder::new(r),
                len,
                TRACE_INFLATE_RATIO,
                TRACE_INFLATE_FLOOR,
                TRACE_INFLATE_MAX,
            ))
        } else {
            Box::new(r)
        }
    };
    let base = kineto::find_base(reader(src));
    let Some(src) = open_or_problem(path, open, rep) else {
        return Ok(());
    };
    let mut tick = |done: u64| progress(path, done.min(len), len);
    let kr = kineto::read_trace(reader(src), path, instance_id, base, sink, &mut tick)?;
    *rep.rows
        .entry(explorer::SYSTEM_PROFILE_EVENTS.name.into())
        .or_default() += kr.rows;
    rep.problems.extend(kr.problems.iter().cloned());
    rep.framework.insert(path.into(), kr);
    Ok(())
}

fn open_or_problem(
    path: &str,
    open: OpenFn<'_>,
    rep: &mut SystemReport,
) -> Option<Box<dyn ByteSource>> {
    match open(path) {
        Ok(s) => Some(s),
        Err(e) => {
            rep.problems
                .push(Problem::from_error(Code::ProcessIncomplete, path, &e));
            None
        }
    }
}

/// Streams framed records of `path`, calling `each(frame offset, bytes)`; records the counts.
fn stream_frames(
    path: &str,
    src: &dyn ByteSource,
    expected: Option<u64>,
    rep: &mut SystemReport,
    progress: &mut dyn FnMut(&str, u64, u64),
    each: &mut dyn FnMut(u64, &[u8]) -> Result<()>,
) -> Result<()> {
    let total = src.len();
    let mut fr = FrameReader::new(src);
    let mut records = 0u64;
    let mut bad = 0u64;
    let mut last_tick = 0u64;
    loop {
        let res = match fr.next_frame() {
            Ok(Some(f)) => each(f.offset, f.bytes),
            Ok(None) => break,
            Err(e) => {
                rep.problems
                    .push(Problem::from_error(ntrace::frame_code(&e), path, &e));
                break;
            }
        };
        records += 1;
        match res {
            Ok(()) => {}
            Err(e @ Error::Format { .. }) => {
                bad += 1;
                if bad <= 10 {
                    rep.problems
                        .push(Problem::from_error(Code::ProcessIncomplete, path, &e));
                }
            }
            Err(e) => return Err(e),
        }
        let pos = fr.position();
        if pos - last_tick >= decode::CHUNK as u64 {
            last_tick = pos;
            progress(path, pos, total);
        }
    }
    progress(path, fr.position(), total);
    if let Some(exp) = expected {
        if exp != records {
            rep.problems
                .push(count_problem(path, records, exp, total, &rep.problems));
        }
    }
    rep.files.push(FileCount {
        file: path.into(),
        bytes: total,
        records,
        remainder: total.saturating_sub(fr.position()),
        expected,
    });
    Ok(())
}

/// `CpuUsage` from `cpu_util.pb` (§7.1): one row per record, plus an `average` row per sample
/// timestamp (mean over the CPUs of that timestamp) [INF].
fn emit_cpu(
    path: &str,
    open: OpenFn<'_>,
    instance_id: &str,
    expected: Option<u64>,
    sink: &mut dyn TableSink,
    rep: &mut SystemReport,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<()> {
    let Some(src) = open_or_problem(path, open, rep) else {
        return Ok(());
    };
    let mut b = TableBuilder::new(&explorer::CPU_USAGE);
    // (timestamp, sum, n) of the sample being accumulated.
    let mut acc: Option<(u64, f64, u64)> = None;
    let mut out_of_range = 0u64;
    let mut range = (i64::MAX, i64::MIN);
    let avg_row =
        |b: &mut TableBuilder, sink: &mut dyn TableSink, (ts, sum, n): (u64, f64, u64)| {
            b.set(cpu_usage::TS, ts_i64(ts));
            b.set(
                cpu_usage::UTIL,
                (if n > 0 { sum / n as f64 } else { 0.0 }) as f32,
            );
            b.set(cpu_usage::CPU, "average");
            b.set(cpu_usage::INSTANCE, instance_id);
            b.end_row_into(sink)
        };
    stream_frames(path, &*src, expected, rep, progress, &mut |off, bytes| {
        let (ts, cpu, util) = decode::decode_cpu(bytes, off)?;
        if !(0.0..=100.0).contains(&util) {
            out_of_range += 1;
        }
        let t = ts_i64(ts);
        range = (range.0.min(t), range.1.max(t));
        match acc {
            Some((ats, sum, n)) if ats == ts => acc = Some((ats, sum + f64::from(util), n + 1)),
            prev => {
                if let Some(p) = prev {
                    avg_row(&mut b, &mut *sink, p)?;
                }
                acc = Some((ts, f64::from(util), 1));
            }
        }
        b.set(cpu_usage::TS, t);
        b.set(cpu_usage::UTIL, util);
        b.set(cpu_usage::CPU, cpu.to_string().as_str());
        b.set(cpu_usage::INSTANCE, instance_id);
        b.end_row_into(sink)
    })?;
    if let Some(p) = acc {
        avg_row(&mut b, &mut *sink, p)?;
    }
    let n = b.finish_into(sink)?;
    if n > 0 {
        rep.rows.insert(b.def().name.into(), n);
    }
    if range.0 <= range.1 {
        rep.widen(range.0);
        rep.widen(range.1);
    }
    rep.cpu_out_of_range = out_of_range;
    if out_of_range > 0 {
        rep.problems.push(Problem::new(
            Code::ValueOutOfRange,
            Some(path),
            format!("{path}: {out_of_range} CPU samples outside 0–100 %"),
        ));
    }
    Ok(())
}

/// `HostMemUsage` from `host_mem.pb` (§7.2); `used_percent` = used / host RAM (trace_info 7.3)
/// × 100, null when the RAM size is unknown.
#[allow(clippy::too_many_arguments)]
fn emit_mem(
    path: &str,
    open: OpenFn<'_>,
    instance_id: &str,
    ram: u64,
    expected: Option<u64>,
    sink: &mut dyn TableSink,
    rep: &mut SystemReport,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<()> {
    let Some(src) = open_or_problem(path, open, rep) else {
        return Ok(());
    };
    let mut b = TableBuilder::new(&explorer::HOST_MEM_USAGE);
    let mut range = (i64::MAX, i64::MIN);
    stream_frames(path, &*src, expected, rep, progress, &mut |off, bytes| {
        let (ts, used) = decode::decode_mem(bytes, off)?;
        let t = ts_i64(ts);
        range = (range.0.min(t), range.1.max(t));
        b.set(host_mem::TS, t);
        b.set(host_mem::USED, ts_i64(used));
        b.set(
            host_mem::PERCENT,
            (ram > 0).then(|| (used as f64 / ram as f64 * 100.0) as f32),
        );
        b.set(host_mem::INSTANCE, instance_id);
        b.end_row_into(sink)
    })?;
    let n = b.finish_into(sink)?;
    if n > 0 {
        rep.rows.insert(b.def().name.into(), n);
    }
    if range.0 <= range.1 {
        rep.widen(range.0);
        rep.widen(range.1);
    }
    Ok(())
}

/// HBM bytes of one physical NeuronCore for an EC2 instance type (trace_info field 15): the
/// chip's HBM over its NeuronCores, from AWS's published instance specifications [INF; the capture
/// files carry no capacity, system-profile.md §8]: Trainium2 96 GiB / 8 cores, Trainium and
/// Inferentia2 32 GiB / 2 cores. Other types (inf1 has DDR, unknown types): `None`.
pub fn hbm_capacity_per_core(instance_type: &str) -> Option<i64> {
    const GIB: i64 = 1 << 30;
    let family = instance_type.split('.').next().unwrap_or("");
    match family {
        "trn2" | "trn2u" => Some(96 * GIB / 8),
        "trn1" | "trn1n" | "inf2" => Some(32 * GIB / 2),
        _ => None,
    }
}

/// `SystemProfileMetadata`: capture start/end from trace_info 11/12, else the rows' range;
/// `hbm_capacity_bytes` per instance type ([`hbm_capacity_per_core`]), null when unknown.
fn emit_metadata(
    info: &TraceInfo,
    ntff_version: Option<u8>,
    sink: &mut dyn TableSink,
    rep: &mut SystemReport,
) -> Result<()> {
    let first = if info.start_ns != 0 {
        Some(ts_i64(info.start_ns))
    } else {
        rep.first_ts_ns
    };
    let last = if info.end_ns != 0 {
        Some(ts_i64(info.end_ns))
    } else {
        rep.last_ts_ns
    };
    let (Some(first), Some(last)) = (first, last) else {
        return Ok(());
    };
    let mut b = TableBuilder::new(&explorer::SYSTEM_PROFILE_METADATA);
    let text = |ns| crate::ntff::decode::rfc3339_ns(ns);
    b.set(meta::FIRST_TS, text(first).as_str());
    b.set(meta::LAST_TS, text(last).as_str());
    b.set(meta::FIRST_NS, first.to_string().as_str());
    b.set(meta::LAST_NS, last.to_string().as_str());
    b.set(meta::NTFF_VERSION, ntff_version.map(i64::from));
    b.set(
        meta::HBM_CAPACITY,
        hbm_capacity_per_core(&info.instance_type),
    );
    b.end_row_into(sink)?;
    let n = b.finish_into(sink)?;
    rep.rows.insert(b.def().name.into(), n);
    Ok(())
}

/// Reads NTFF info field 18 (pid-like, pairing.md §6) from the info section.
fn ntff_field18(src: &dyn ByteSource, info_len: u64) -> Option<u64> {
    // info_len comes from the file: never more than the bytes present.
    let n = usize::try_from(info_len.min(src.len().saturating_sub(128))).ok()?;
    let buf = src.read_vec(128, n).ok()?;
    let pb = crate::proto::NtffInfoPb::decode(buf.as_slice()).ok()?;
    (pb.unknown18 != 0).then_some(pb.unknown18)
}

/// `DeviceProfileList`: one row per NTFF of the profile, with the pairing.md §6 link decision in
/// `nscope_link`: "same capture" only when pid, physical cores and device time agree with the
/// system trace's `nc_exec_running` events.
#[allow(clippy::too_many_arguments)]
fn emit_devices(
    profile: &Profile,
    open: OpenFn<'_>,
    info: &TraceInfo,
    exec: &ntrace::ExecSpan,
    instance_id: &str,
    pid: Option<u64>,
    sink: &mut dyn TableSink,
    rep: &mut SystemReport,
) -> Result<()> {
    let (cores, nc_range) = (&exec.cores, exec.nc_range);
    let mut b = TableBuilder::new(&explorer::DEVICE_PROFILE_LIST);
    for d in &profile.devices {
        let Some(ntff) = &d.ntff else { continue };
        let mut link = DeviceLink {
            ntff: ntff.clone(),
            model_id: d.model_id,
            ..Default::default()
        };
        let mut reasons: Vec<String> = Vec::new();
        let mut same_neff = false;
        let nti = open(ntff).and_then(|s| {
            let i = crate::ntff::read_info(&*s)?;
            let f18 = i.as_ref().and_then(|i| ntff_field18(&*s, i.info_len));
            Ok((i, f18))
        });
        match nti {
            Ok((Some(i), f18)) => {
                link.ntff_pid = f18;
                link.cores = i.subgraphs.iter().map(|s| s.core).collect();
                if let Some(t) = info.tables.get(decode::MODELS) {
                    if let Some((&id, _)) = t.iter().find(|(_, n)| **n == i.neff_name) {
                        same_neff = true;
                        link.model_id = link.model_id.or(Some(id));
                    }
                }
                if let (Some(a), Some(b)) = (f18, pid) {
                    if a != b {
                        reasons.push(format!("NTFF pid {a} ≠ capture pid {b}"));
                    }
                }
                if !cores.is_empty() && !link.cores.iter().all(|c| cores.contains(c)) {
                    reasons.push(format!(
                        "NTFF cores {:?} not among the trace's cores {:?}",
                        link.cores, cores
                    ));
                }
                if let (Some(ex), Some((lo, hi))) = (i.executions.first(), nc_range) {
                    // NTFF ticks are ps on trn2, nc_timestamp_ns is ns on the same clock [INF].
                    let start_ns = ex.start / 1000;
                    let slack = 1_000_000_000;
                    if start_ns + slack < lo || start_ns > hi.saturating_add(slack) {
                        reasons.push(format!(
                            "NTFF execution at device time {:.1} s, trace executions at {:.1}–{:.1} s",
                            start_ns as f64 / 1e9,
                            lo as f64 / 1e9,
                            hi as f64 / 1e9
                        ));
                    }
                }
                if nc_range.is_none() {
                    reasons.push("no nc_exec_running events to compare with".into());
                }
            }
            Ok((None, _)) => reasons.push("empty NTFF".into()),
            Err(e) => reasons.push(format!("unreadable NTFF: {e}")),
        }
        link.link = if reasons.is_empty() {
            "same capture".into()
        } else if same_neff {
            format!("same NEFF, different capture: {}", reasons.join("; "))
        } else {
            format!("unlinked: {}", reasons.join("; "))
        };
        let name = base_name(ntff).trim_end_matches(".ntff");
        let nc = d.nc.or(link.cores.first().copied());
        b.set(dev::NAME, name);
        b.set(dev::INSTANCE, instance_id);
        b.set(dev::PID, pid.map(ts_i64));
        b.set(dev::NC, nc.map(i64::from));
        b.set(dev::SESSION, d.session.map(i64::from));
        b.set(dev::MODEL, link.model_id.map(ts_i64));
        b.set(dev::LINK, link.link.as_str());
        b.end_row_into(sink)?;
        if link.link != "same capture" {
            rep.problems.push(Problem::new(
                Code::DeviceProfileNotLinked,
                Some(ntff),
                format!("{ntff}: {} — not placed on the system timeline", link.link),
            ));
        }
        rep.devices.push(link);
    }
    let n = b.finish_into(sink)?;
    if n > 0 {
        rep.rows.insert(b.def().name.into(), n);
    }
    Ok(())
}

/// The problem of a framed file whose record count is not `trace_info.pb`'s: fewer records in a
/// file that ends on a record boundary (`total` bytes) with no cut reported for it is a cut
/// file all the same (`TRUNCATED_TRACE`, an error: records were lost, the ones read are kept);
/// otherwise a `COUNT_MISMATCH` warning (more records than announced, or a count off beside the
/// cut already reported).
pub(crate) fn count_problem(
    path: &str,
    records: u64,
    expected: u64,
    total: u64,
    reported: &[Problem],
) -> Problem {
    let cut_reported = reported
        .iter()
        .any(|p| p.code == Code::TruncatedTrace && p.file.as_deref() == Some(path));
    if records < expected && !cut_reported {
        Problem::new(
            Code::TruncatedTrace,
            Some(path),
            format!(
                "{path}: {records} records, trace_info.pb says {expected}: the file ends after \
                 {total} bytes on a record boundary (cut?); the records read are kept"
            ),
        )
        .at(total)
    } else {
        Problem::new(
            Code::CountMismatch,
            Some(path),
            format!("{path}: {records} records, trace_info.pb says {expected}"),
        )
    }
}
