//! System profiles (spec/system-profile.md): decodes a capture directory's `trace_info.pb`,
//! `ntrace.pb`, `cpu_util.pb` and `host_mem.pb` into Explorer's system tables
//! (explorer-schema.md §5.8): `SystemProfileEvents`, `SystemProfileMetadata`, `CpuUsage`,
//! `HostMemUsage`, `SystemProfileHbmUsage`, `DeviceProfileList`.
//!
//! Entry point: [`process`]. The framed files are streamed record by record ([`decode::FrameReader`],
//! 1 MiB windows); `ntrace.pb` events are held in memory once paired, because the file is not
//! sorted by time (§5.1) and spans need both records. Bad records become [`Problem`]s with file and
//! offset; everything decoded before (and, when the framing is intact, after) is kept.

pub mod decode;
pub mod kineto;
pub mod write;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use prost::Message;

use crate::error::{Code, Error, Problem, Result};
use crate::inventory::Profile;
use crate::source::ByteSource;
use crate::tables::{explorer, kind, TableBuilder, TableSink, C};
use decode::{FrameReader, NtraceRecord, Phase, TraceInfo};

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

/// One `SystemProfileEvents` row before emission: a start/stop pair, an instant, or an orphan.
#[derive(Debug, Clone)]
struct Event {
    id: u64,
    type_id: u64,
    start: u64,
    end: u64,
    thread: u64,
    /// Start attributes, then stop attributes (stop wins on conflicts, §5.2).
    attrs: Vec<(String, String)>,
    start_nc: Option<u64>,
    end_nc: Option<u64>,
    /// File offset of the start (or only) record.
    offset: u64,
}

impl Event {
    fn attr(&self, k: &str) -> Option<&str> {
        self.attrs
            .iter()
            .rev()
            .find(|(a, _)| a == k)
            .map(|(_, v)| v.as_str())
    }
    fn attr_u64(&self, k: &str) -> Option<u64> {
        self.attr(k).and_then(|v| v.trim().parse().ok())
    }
}

fn nc_ts(r: &NtraceRecord) -> Option<u64> {
    r.attrs
        .iter()
        .find(|(k, _)| k == "nc_timestamp_ns")
        .and_then(|(_, v)| v.trim().parse().ok())
}

fn single(r: NtraceRecord) -> Event {
    Event {
        id: r.id,
        type_id: r.event_type,
        start: r.timestamp_ns,
        end: r.timestamp_ns,
        thread: r.thread_id,
        start_nc: nc_ts(&r),
        end_nc: None,
        offset: r.offset,
        attrs: r.attrs,
    }
}

fn pair(start: NtraceRecord, stop: NtraceRecord) -> Event {
    let mut e = single(start);
    e.end = stop.timestamp_ns.max(e.start);
    e.end_nc = nc_ts(&stop);
    e.attrs.extend(stop.attrs);
    e
}

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
            None,
            "No metadata found for system profile: trace_info.pb is missing".into(),
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
    let events = match find("ntrace.pb") {
        Some(path) => {
            let expected = rep
                .trace_info
                .as_ref()
                .map(|i| i.ntrace_file.as_ref().map_or(i.ntrace_count, |f| f.count));
            read_events(&path, open, &info, expected, &mut rep, progress)
        }
        None => {
            rep.problems.push(Problem::new(
                Code::NoMetadata,
                None,
                "No metadata found for system profile: ntrace.pb is missing".into(),
            ));
            Vec::new()
        }
    };
    let mut events = events;
    check_sync(&mut events, &info, &mut rep);
    events.sort_by_key(|e| (e.start, e.offset));
    emit_events(&events, &info, &instance_id, pid, sink, &mut rep)?;
    emit_hbm(&events, &instance_id, sink, &mut rep)?;
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
        &events,
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

/// Streams `ntrace.pb`, pairs start/stop records by tracking id (§5.1) and returns the events
/// (unsorted).
fn read_events(
    path: &str,
    open: OpenFn<'_>,
    info: &TraceInfo,
    expected: Option<u64>,
    rep: &mut SystemReport,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Vec<Event> {
    let src = match open(path) {
        Ok(s) => s,
        Err(e) => {
            rep.problems
                .push(Problem::from_error(Code::ProcessIncomplete, path, &e));
            return Vec::new();
        }
    };
    let total = src.len();
    let mut fr = FrameReader::new(&*src);
    let mut out = Vec::new();
    let mut starts: HashMap<u64, NtraceRecord> = HashMap::new();
    let mut early_stops: HashMap<u64, NtraceRecord> = HashMap::new();
    let mut records = 0u64;
    let mut bad = 0u64;
    let mut last_tick = 0u64;
    loop {
        let frame = match fr.next_frame() {
            Ok(Some(f)) => f,
            Ok(None) => break,
            Err(e) => {
                rep.problems
                    .push(Problem::from_error(Code::ReadIncomplete, path, &e));
                break;
            }
        };
        records += 1;
        let rec = match decode::decode_ntrace(frame.bytes, frame.offset) {
            Ok(r) => r,
            Err(e) => {
                bad += 1;
                if bad <= 10 {
                    rep.problems
                        .push(Problem::from_error(Code::ReadIncomplete, path, &e));
                }
                continue;
            }
        };
        match rec.phase {
            Phase::Start => {
                if let Some(stop) = early_stops.remove(&rec.id) {
                    note_pair(&rec, &stop, rep);
                    out.push(pair(rec, stop));
                } else if let Some(old) = starts.insert(rec.id, rec) {
                    rep.unpaired_starts += 1;
                    out.push(single(old));
                }
            }
            Phase::Stop => {
                if let Some(start) = starts.remove(&rec.tracking_id) {
                    note_pair(&start, &rec, rep);
                    out.push(pair(start, rec));
                } else if let Some(old) = early_stops.insert(rec.tracking_id, rec) {
                    rep.unpaired_stops += 1;
                    out.push(single(old));
                }
            }
            Phase::Instant | Phase::Other(_) => {
                rep.instants += 1;
                out.push(single(rec));
            }
        }
        let pos = fr.position();
        if pos - last_tick >= decode::CHUNK as u64 {
            last_tick = pos;
            progress(path, pos, total);
        }
    }
    progress(path, fr.position(), total);
    if bad > 10 {
        rep.problems.push(Problem::new(
            Code::ReadIncomplete,
            Some(path),
            format!("{path}: {bad} records could not be decoded (first 10 listed)"),
        ));
    }
    // Orphans are kept as zero-length rows so nothing decoded is lost.
    let mut orphan_starts: Vec<NtraceRecord> = starts.into_values().collect();
    orphan_starts.sort_by_key(|r| r.offset);
    let mut orphan_stops: Vec<NtraceRecord> = early_stops.into_values().collect();
    orphan_stops.sort_by_key(|r| r.offset);
    rep.unpaired_starts += orphan_starts.len() as u64;
    rep.unpaired_stops += orphan_stops.len() as u64;
    if let Some(r) = orphan_starts.first() {
        rep.problems.push(
            Problem::new(
                Code::UnpairedEvent,
                Some(path),
                format!(
                    "{path}: {} start records have no stop (first: {} at offset {}); kept as zero-length events",
                    orphan_starts.len(),
                    info.event_name(r.event_type),
                    r.offset
                ),
            )
            .at(r.offset),
        );
    }
    if let Some(r) = orphan_stops.first() {
        rep.problems.push(
            Problem::new(
                Code::UnpairedEvent,
                Some(path),
                format!(
                    "{path}: {} stop records have no start (first: {} at offset {}); kept as zero-length events",
                    orphan_stops.len(),
                    info.event_name(r.event_type),
                    r.offset
                ),
            )
            .at(r.offset),
        );
    }
    out.extend(orphan_starts.into_iter().map(single));
    out.extend(orphan_stops.into_iter().map(single));
    let remainder = total.saturating_sub(fr.position());
    if let Some(exp) = expected {
        if exp != records {
            rep.problems.push(Problem::new(
                Code::CountMismatch,
                Some(path),
                format!("{path}: {records} records, trace_info.pb says {exp}"),
            ));
        }
    }
    rep.files.push(FileCount {
        file: path.into(),
        bytes: total,
        records,
        remainder,
        expected,
    });
    out
}

fn note_pair(start: &NtraceRecord, stop: &NtraceRecord, rep: &mut SystemReport) {
    rep.spans += 1;
    if start.event_type != stop.event_type {
        rep.type_mismatches += 1;
    }
}

/// A `timestamp_sync_point` (§6).
struct Sync {
    exec_id: u64,
    worker: Option<u64>,
    cpu: u64,
    nc: u64,
}

fn adjusted(s: &Sync, nc: u64) -> Option<u64> {
    let d = i128::from(nc) - i128::from(s.nc);
    u64::try_from(i128::from(s.cpu) + d).ok()
}

/// Validates field 2 of hardware records against the sync-point rule; recomputes it where the
/// record has no host time (field 2 = 0).
fn check_sync(events: &mut [Event], info: &TraceInfo, rep: &mut SystemReport) {
    let syncs: Vec<Sync> = events
        .iter()
        .filter(|e| info.event_name(e.type_id) == "timestamp_sync_point")
        .filter_map(|e| {
            Some(Sync {
                exec_id: e.attr_u64("exec_id")?,
                worker: e.attr_u64("worker_gid"),
                cpu: e.attr_u64("cpu_timestamp_ns")?,
                nc: e.attr_u64("nc_timestamp_ns")?,
            })
        })
        .collect();
    for e in events.iter_mut() {
        if info.event_name(e.type_id) == "timestamp_sync_point" {
            continue;
        }
        let Some(exec) = e.attr_u64("exec_id") else {
            continue;
        };
        let worker = e.attr_u64("worker_gid");
        let cands: Vec<&Sync> = syncs
            .iter()
            .filter(|s| s.exec_id == exec && (s.worker.is_none() || s.worker == worker))
            .collect();
        if cands.is_empty() {
            continue;
        }
        // Pick the sync point that reproduces the start; use it for the stop too.
        let chosen = e.start_nc.and_then(|nc| {
            cands
                .iter()
                .find(|s| adjusted(s, nc) == Some(e.start))
                .copied()
        });
        let mut fixed = [None, None];
        for (i, (host, nc)) in [(e.start, e.start_nc), (e.end, e.end_nc)]
            .into_iter()
            .enumerate()
        {
            let Some(nc) = nc else { continue };
            if host == 0 {
                // No host time: apply the rule with the chosen (else first) sync point.
                let s = chosen.or(cands.first().copied());
                if let (Some(s), Some(slot)) = (s, fixed.get_mut(i)) {
                    *slot = adjusted(s, nc);
                }
                continue;
            }
            rep.sync.checked += 1;
            let ok = match chosen {
                Some(s) => adjusted(s, nc) == Some(host),
                None => cands.iter().any(|s| adjusted(s, nc) == Some(host)),
            };
            if ok {
                rep.sync.matched += 1;
            }
        }
        let [a, b] = fixed;
        if let Some(a) = a {
            e.start = a;
            rep.sync.recomputed += 1;
        }
        if let Some(b) = b {
            e.end = b.max(e.start);
            rep.sync.recomputed += 1;
        }
    }
}

fn emit_events(
    events: &[Event],
    info: &TraceInfo,
    instance_id: &str,
    pid: Option<u64>,
    sink: &mut dyn TableSink,
    rep: &mut SystemReport,
) -> Result<()> {
    let mut b = TableBuilder::new(&explorer::SYSTEM_PROFILE_EVENTS);
    for e in events {
        let name = info.event_name(e.type_id);
        let hw = HW_GROUP.contains(&name.as_str()) || e.start_nc.is_some() || e.end_nc.is_some();
        let (start, end) = (ts_i64(e.start), ts_i64(e.end));
        rep.widen(start);
        rep.widen(end);
        if name == "nc_exec_running" {
            let core = e.attr("device_core_idx").unwrap_or("?").to_string();
            *rep.exec_spans_per_core.entry(core).or_default() += 1;
        }
        *rep.event_counts.entry(name.clone()).or_default() += 1;
        b.set(ev::ID, ts_i64(e.id));
        b.set(ev::NAME, name.as_str());
        b.set(ev::START, start);
        b.set(ev::END, end);
        b.set(ev::DURATION, end.saturating_sub(start));
        b.set(ev::SOURCE, if hw { "neuron_hw" } else { "neuron_rt" });
        b.set(ev::INSTANCE, instance_id);
        b.set(ev::PID, pid.map(ts_i64));
        b.set(ev::TID, ts_i64(e.thread));
        let mut extra = serde_json::Map::new();
        let mut col_attr = |key: &str, col: C<kind::I64>, b: &mut TableBuilder| {
            if let Some(v) = e.attr(key) {
                match v.trim().parse::<i64>() {
                    Ok(n) => b.set(col, n),
                    Err(_) => {
                        extra.insert(key.into(), v.into());
                    }
                }
            }
        };
        col_attr("nc_idx", ev::NC, &mut b);
        col_attr("worker_gid", ev::WORKER, &mut b);
        col_attr("device_core_idx", ev::PCORE, &mut b);
        // Merged attributes: the last value of a key wins (stop over start).
        for (k, v) in &e.attrs {
            if !COLUMN_ATTRS.contains(&k.as_str()) {
                extra.insert(k.clone(), serde_json::Value::String(v.clone()));
            }
        }
        if let Some(neff) = e.attr_u64("model_id").and_then(|m| info.model_neff(m)) {
            extra.insert("model_neff".into(), neff.into());
        }
        if !extra.is_empty() {
            let j = serde_json::Value::Object(extra).to_string();
            b.set(ev::EXTRA, j.as_str());
        }
        b.end_row_into(sink)?;
    }
    let n = b.finish_into(sink)?;
    rep.rows.insert(b.def().name.into(), n);
    Ok(())
}

/// `SystemProfileHbmUsage` from `nrt_dma_mem_alloc` / `nrt_dma_mem_dealloc` (§8): one row per
/// stop record, per `hbm_idx`. A category's value is the runtime's own running total
/// (`usage_type_total_bytes` of the stop, per worker) summed over workers sharing the HBM;
/// without that attribute, `allocated_bytes` − `freed_bytes` is applied to the last value.
/// `device_idx` is 0: the files name no device [INF].
fn emit_hbm(
    events: &[Event],
    instance_id: &str,
    sink: &mut dyn TableSink,
    rep: &mut SystemReport,
) -> Result<()> {
    // (hbm, worker, column slot) → bytes; slot = HBM_COLUMNS index, or len for unknown.
    let mut state: BTreeMap<(i64, i64, usize), i64> = BTreeMap::new();
    let mut b = TableBuilder::new(&explorer::SYSTEM_PROFILE_HBM_USAGE);
    for e in events {
        // Memory events are recognised by their attributes (§5.2), not by type id.
        let alloc = e.attr("allocated_bytes").is_some();
        if e.attr("usage_type").is_none() || (!alloc && e.attr("freed_bytes").is_none()) {
            continue;
        }
        let Some(hbm) = e.attr("hbm_idx").and_then(|v| v.trim().parse::<i64>().ok()) else {
            continue;
        };
        let worker = e
            .attr("worker_gid")
            .and_then(|v| v.trim().parse::<i64>().ok())
            .unwrap_or(-1);
        // usage_type is a start attribute; a stop never repeats it.
        let ut = e
            .attrs
            .iter()
            .find(|(k, _)| k == "usage_type")
            .map(|(_, v)| v.as_str())
            .unwrap_or("");
        let slot = HBM_COLUMNS
            .iter()
            .position(|(u, _)| *u == ut)
            .unwrap_or(HBM_COLUMNS.len());
        let key = (hbm, worker, slot);
        let cur = state.get(&key).copied().unwrap_or(0);
        let new = match e
            .attr("usage_type_total_bytes")
            .and_then(|v| v.trim().parse().ok())
        {
            Some(t) => t,
            None => {
                let d: i64 = if alloc {
                    e.attr("allocated_bytes")
                } else {
                    e.attr("freed_bytes")
                }
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
                if alloc {
                    cur.saturating_add(d)
                } else {
                    cur.saturating_sub(d)
                }
            }
        };
        state.insert(key, new);
        let mut sums = vec![0i64; HBM_COLUMNS.len() + 1];
        for (&(h, _, s), &v) in state.range((hbm, i64::MIN, 0)..=(hbm, i64::MAX, usize::MAX)) {
            if h == hbm {
                if let Some(x) = sums.get_mut(s) {
                    *x = x.saturating_add(v);
                }
            }
        }
        b.set(hbm::TS, ts_i64(e.end));
        let mut total = 0i64;
        for (i, &(_, c)) in HBM_COLUMNS.iter().enumerate() {
            let v = sums.get(i).copied().unwrap_or(0);
            total = total.saturating_add(v);
            b.set(c, v);
        }
        let unk = sums.last().copied().unwrap_or(0);
        b.set(hbm::UNKNOWN, unk);
        b.set(hbm::TOTAL, total.saturating_add(unk));
        b.set(hbm::DEVICE, 0i64);
        b.set(hbm::HBM, hbm);
        b.set(hbm::INSTANCE, instance_id);
        b.end_row_into(sink)?;
    }
    let n = b.finish_into(sink)?;
    if n > 0 {
        rep.rows.insert(b.def().name.into(), n);
    }
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
                    .push(Problem::from_error(Code::ReadIncomplete, path, &e));
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
                        .push(Problem::from_error(Code::ReadIncomplete, path, &e));
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
            rep.problems.push(Problem::new(
                Code::CountMismatch,
                Some(path),
                format!("{path}: {records} records, trace_info.pb says {exp}"),
            ));
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
    events: &[Event],
    instance_id: &str,
    pid: Option<u64>,
    sink: &mut dyn TableSink,
    rep: &mut SystemReport,
) -> Result<()> {
    // Device-time range and cores of the system trace's executions.
    let mut cores: BTreeSet<u32> = BTreeSet::new();
    let mut nc_range: Option<(u64, u64)> = None;
    for e in events {
        if info.event_name(e.type_id) != "nc_exec_running" {
            continue;
        }
        if let Some(c) = e
            .attr_u64("device_core_idx")
            .and_then(|c| u32::try_from(c).ok())
        {
            cores.insert(c);
        }
        for t in [e.start_nc, e.end_nc].into_iter().flatten() {
            nc_range = Some(nc_range.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
        }
    }
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
