//! Low-level decoding of the system-profile protobufs (spec/system-profile.md §2–4, §7):
//! the u32-length framing, `trace_info.pb` and the record messages of `proto/system.proto`.

use std::collections::BTreeMap;

use prost::Message;

use crate::error::{Error, Result};
use crate::proto;
use crate::source::ByteSource;

/// Bytes read per refill of the framing window (records are small; files may be GBs;
/// [`crate::source::STREAM_READ`]).
pub const CHUNK: usize = crate::source::STREAM_READ;
/// Largest record accepted (a length above this is treated as corruption, not allocated).
pub const MAX_RECORD: u32 = 64 << 20;
/// Largest `trace_info.pb` accepted (the sample's is 1 891 bytes).
pub const MAX_TRACE_INFO: u64 = 64 << 20;

/// Reads u32-LE-length-prefixed records (system-profile.md §2) through a sliding window of
/// [`CHUNK`] bytes, so a file is never read whole.
pub struct FrameReader<'a> {
    src: &'a dyn ByteSource,
    len: u64,
    /// Absolute offset of the next length prefix.
    pos: u64,
    win: Vec<u8>,
    win_start: u64,
    done: bool,
    /// Largest record length seen so far (bytes), for the plausibility of a cut last record.
    largest: u32,
}

/// One framed record: the offset of its length prefix and its message bytes.
pub struct Frame<'b> {
    /// Absolute offset of the 4-byte length prefix.
    pub offset: u64,
    /// The message bytes (start at `offset + 4`).
    pub bytes: &'b [u8],
}

impl<'a> FrameReader<'a> {
    /// A reader over the whole of `src`.
    pub fn new(src: &'a dyn ByteSource) -> Self {
        FrameReader {
            src,
            len: src.len(),
            pos: 0,
            win: Vec::new(),
            win_start: 0,
            done: false,
            largest: 0,
        }
    }

    /// Absolute offset of the next record (= bytes consumed so far).
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Makes `[off, off + n)` available in the window, reading at least [`CHUNK`] bytes.
    fn ensure(&mut self, off: u64, n: usize) -> Result<()> {
        let have_end = self.win_start + self.win.len() as u64;
        if off >= self.win_start && off.saturating_add(n as u64) <= have_end {
            return Ok(());
        }
        let want = (n.max(CHUNK) as u64).min(self.len.saturating_sub(off));
        if want < n as u64 {
            return Err(Error::Truncated {
                offset: off,
                wanted: n as u64,
                available: self.len.saturating_sub(off),
            });
        }
        self.win.resize(want as usize, 0);
        self.src.read_at(off, &mut self.win)?;
        self.win_start = off;
        Ok(())
    }

    /// The next record, `Ok(None)` at a clean end of file. Errors: [`Error::Truncated`] when a
    /// length prefix or a plausible record runs past the end (a cut file), [`Error::Format`]
    /// for a length above [`MAX_RECORD`], or one that runs past the end and exceeds
    /// [`plausible_len`] (a corrupted prefix, not a cut).
    /// After an error the reader stops (returns `Ok(None)`).
    pub fn next_frame(&mut self) -> Result<Option<Frame<'_>>> {
        if self.done || self.pos >= self.len {
            return Ok(None);
        }
        let off = self.pos;
        let r = self.read_frame(off);
        match r {
            Ok(n) => {
                self.pos = off + 4 + n as u64;
                let s = (off + 4 - self.win_start) as usize;
                let bytes = self.win.get(s..s + n).unwrap_or(&[]);
                Ok(Some(Frame { offset: off, bytes }))
            }
            Err(e) => {
                self.done = true;
                Err(e)
            }
        }
    }

    fn read_frame(&mut self, off: u64) -> Result<usize> {
        self.ensure(off, 4)?;
        let s = (off - self.win_start) as usize;
        let mut b = [0u8; 4];
        b.copy_from_slice(self.win.get(s..s + 4).unwrap_or(&[0; 4]));
        let n = u32::from_le_bytes(b);
        if n > MAX_RECORD {
            return Err(Error::format(
                off,
                format!("a record length ≤ {MAX_RECORD} (u32 LE prefix)"),
                n.to_string(),
            ));
        }
        let left = self.len.saturating_sub(off + 4);
        if u64::from(n) > left && n > plausible_len(self.largest) {
            return Err(Error::format(
                off,
                format!(
                    "a record length ≤ the {left} bytes left (u32 LE prefix; records so far ≤ {} bytes)",
                    self.largest
                ),
                format!("implausible length {n}"),
            ));
        }
        self.ensure(off, 4 + n as usize)?;
        self.largest = self.largest.max(n);
        Ok(n as usize)
    }
}

/// Longest record a cut file's last prefix may claim before the prefix is called corrupt:
/// 16 × the largest record before it, at least 64 KiB (sample records are 60–300 bytes; a bit
/// flip in a prefix's third byte claims ≥ 64 KiB).
pub fn plausible_len(largest: u32) -> u32 {
    largest.saturating_mul(16).max(64 << 10)
}

/// Lossy UTF-8.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A file listed in `trace_info.pb` (fields 6, 7.6, 7.7).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ListedFile {
    /// Path as written at capture (relative to the capturing process's working directory).
    pub path: String,
    /// File kind: 1 ntrace, 2 cpu_util, 3 host_mem [OBS].
    pub kind: u64,
    /// Record count (for cpu_util: samples; records = samples × CPUs).
    pub count: u64,
}

/// `trace_info.pb` decoded (system-profile.md §3–4).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct TraceInfo {
    /// Field 1: format version (2).
    pub version: u64,
    /// Field 2: process id.
    pub pid: u64,
    /// Field 4: EC2 instance id.
    pub instance_id: String,
    /// Field 6: the `ntrace.pb` entry.
    pub ntrace_file: Option<ListedFile>,
    /// Field 7.1: host CPUs.
    pub cpu_count: u64,
    /// Field 7.2: CPU model.
    pub cpu_model: String,
    /// Field 7.3: host RAM in bytes [INF].
    pub ram_bytes: u64,
    /// Fields 7.4 / 7.5: sampling periods in seconds [INF].
    pub cpu_period_s: f32,
    /// See `cpu_period_s`.
    pub mem_period_s: f32,
    /// Field 7.6: the `cpu_util.pb` entry (count = samples).
    pub cpu_file: Option<ListedFile>,
    /// Field 7.7: the `host_mem.pb` entry.
    pub mem_file: Option<ListedFile>,
    /// Field 9 (unknown).
    pub unknown9: u64,
    /// Field 10: name tables by table name → (id → text).
    pub tables: BTreeMap<String, BTreeMap<u64, String>>,
    /// Field 11: capture start, Unix ns.
    pub start_ns: u64,
    /// Field 12: capture end, Unix ns.
    pub end_ns: u64,
    /// Field 13: host IP.
    pub host_ip: String,
    /// Field 14: `ntrace.pb` record count.
    pub ntrace_count: u64,
    /// Field 15: EC2 instance type.
    pub instance_type: String,
    /// Field 16 (unknown).
    pub unknown16: u64,
    /// Field 17: host name.
    pub host_name: String,
}

/// Name of the event-type table (§4.1).
pub const EVENT_TYPES: &str = "ntrace_inspect_type";
/// Name of the model id → NEFF table (§4.2).
pub const MODELS: &str = "system_trace";

impl TraceInfo {
    /// Event type name for `id`: the `ntrace_inspect_type` entry, else `event_<id>` (§4.1).
    pub fn event_name(&self, id: u64) -> String {
        self.tables
            .get(EVENT_TYPES)
            .and_then(|t| t.get(&id))
            .cloned()
            .unwrap_or_else(|| format!("event_{id}"))
    }
    /// The NEFF path interned for model id `id` (§4.2), if any.
    pub fn model_neff(&self, id: u64) -> Option<&str> {
        self.tables
            .get(MODELS)
            .and_then(|t| t.get(&id))
            .map(String::as_str)
    }
}

fn listed(f: Option<proto::TraceFilePb>) -> Option<ListedFile> {
    f.map(|f| ListedFile {
        path: text(&f.path),
        kind: f.kind,
        count: f.count,
    })
}

/// Decodes `trace_info.pb` (one unframed message). Errors: [`Error::Format`] at offset 0 when
/// the bytes are not that message or the file is empty; [`Error::Format`] when the file exceeds [`MAX_TRACE_INFO`].
pub fn read_trace_info(src: &dyn ByteSource) -> Result<TraceInfo> {
    let len = src.len();
    if len > MAX_TRACE_INFO {
        return Err(Error::format(
            0,
            format!("a trace_info.pb of at most {MAX_TRACE_INFO} bytes"),
            format!("{len} bytes"),
        ));
    }
    // Protobuf reads 0 bytes as a message of defaults: every count would read as 0.
    if len == 0 {
        return Err(Error::format(
            0,
            "a TraceInfo message (system-profile.md §3)",
            "an empty file",
        ));
    }
    let buf = src.read_vec(0, len as usize)?;
    let pb = proto::TraceInfoPb::decode(buf.as_slice()).map_err(|e| {
        Error::format(
            0,
            "a trace_info.pb message (system-profile.md §3)",
            crate::pb::decode_error_text(&e),
        )
    })?;
    let mut tables: BTreeMap<String, BTreeMap<u64, String>> = BTreeMap::new();
    for t in pb.name_tables {
        let m = tables.entry(text(&t.name)).or_default();
        for e in t.entries {
            m.insert(e.id, text(&e.text));
        }
    }
    let host = pb.host.unwrap_or_default();
    Ok(TraceInfo {
        version: pb.version,
        pid: pb.pid,
        instance_id: text(&pb.instance_id),
        ntrace_file: listed(pb.ntrace_file),
        cpu_count: host.cpu_count,
        cpu_model: text(&host.cpu_model),
        ram_bytes: host.ram_bytes,
        cpu_period_s: host.cpu_period_s,
        mem_period_s: host.mem_period_s,
        cpu_file: listed(host.cpu_file),
        mem_file: listed(host.mem_file),
        unknown9: pb.unknown9,
        tables,
        start_ns: pb.start_ns,
        end_ns: pb.end_ns,
        host_ip: text(&pb.host_ip),
        ntrace_count: pb.ntrace_count,
        instance_type: text(&pb.instance_type),
        unknown16: pb.unknown16,
        host_name: text(&pb.host_name),
    })
}

/// Phase of an `ntrace.pb` record (field 14).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// 1: start of a span.
    Start,
    /// 2: stop; `tracking_id` names the start.
    Stop,
    /// 3: instant.
    Instant,
    /// Any other value.
    Other(u64),
}

/// One `ntrace.pb` record (system-profile.md §5.1), attributes as text.
#[derive(Debug, Clone, PartialEq)]
pub struct NtraceRecord {
    /// Absolute offset of the record's length prefix.
    pub offset: u64,
    /// Field 2: Unix ns.
    pub timestamp_ns: u64,
    /// Field 7: event type id.
    pub event_type: u64,
    /// Field 9: thread id.
    pub thread_id: u64,
    /// Field 10: event id.
    pub id: u64,
    /// Field 14.
    pub phase: Phase,
    /// Field 15.
    pub tracking_id: u64,
    /// Field 12 `(key, value)` in file order, followed by unknown fields as
    /// `("pb_field_<n>", value)` (kept because the format is unpublished).
    pub attrs: Vec<(String, String)>,
}

const KNOWN_NTRACE: [u32; 7] = [2, 7, 9, 10, 12, 14, 15];

/// Decodes one `ntrace.pb` record whose length prefix sits at `offset`.
/// Errors: [`Error::Format`] naming the offset when the bytes are not a record.
pub fn decode_ntrace(bytes: &[u8], offset: u64) -> Result<NtraceRecord> {
    let pb = proto::NtraceRecordPb::decode(bytes).map_err(|e| {
        Error::format(
            offset,
            "an ntrace.pb record (system-profile.md §5.1)",
            crate::pb::decode_error_text(&e),
        )
    })?;
    let mut attrs: Vec<(String, String)> = pb
        .attributes
        .iter()
        .map(|a| (text(&a.key), text(&a.value)))
        .collect();
    if pb.encoded_len() != bytes.len() {
        // Unknown fields were dropped by prost: recover them schema-less.
        for f in crate::pb::fields(bytes, offset + 4).flatten() {
            if KNOWN_NTRACE.contains(&f.number) {
                continue;
            }
            let v = match f.value {
                crate::pb::Value::Bytes(b) => text(b),
                other => other.as_u64().unwrap_or(0).to_string(),
            };
            attrs.push((format!("pb_field_{}", f.number), v));
        }
    }
    Ok(NtraceRecord {
        offset,
        timestamp_ns: pb.timestamp_ns,
        event_type: pb.event_type,
        thread_id: pb.thread_id,
        id: pb.id,
        phase: match pb.phase {
            1 => Phase::Start,
            2 => Phase::Stop,
            3 => Phase::Instant,
            p => Phase::Other(p),
        },
        tracking_id: pb.tracking_id,
        attrs,
    })
}

/// Decodes one `cpu_util.pb` record: `(timestamp ns, cpu id, percent)`.
pub fn decode_cpu(bytes: &[u8], offset: u64) -> Result<(u64, u64, f32)> {
    let pb = proto::CpuUtilPb::decode(bytes).map_err(|e| {
        Error::format(
            offset,
            "a cpu_util.pb record (system-profile.md §7.1)",
            crate::pb::decode_error_text(&e),
        )
    })?;
    Ok((pb.timestamp_ns, pb.cpu_id, pb.util_percent))
}

/// Decodes one `host_mem.pb` record: `(timestamp ns, used bytes)`.
pub fn decode_mem(bytes: &[u8], offset: u64) -> Result<(u64, u64)> {
    let pb = proto::HostMemPb::decode(bytes).map_err(|e| {
        Error::format(
            offset,
            "a host_mem.pb record (system-profile.md §7.2)",
            crate::pb::decode_error_text(&e),
        )
    })?;
    Ok((pb.timestamp_ns, pb.used_bytes))
}
