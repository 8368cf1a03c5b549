//! NTFF device-trace decoder (docs/format/ntff.md; corrections in docs/formats.md "NTFF").
//!
//! - [`read_info`]: the 128-byte header and the protobuf info section (cheap; used by pairing and
//!   inventory). The info section is decoded with prost from our own `proto/ntff.proto`.
//! - [`decode()`]: streams the trace buffers into the Explorer tables `Instruction`,
//!   `SemaphoreUpdate`, `Metadata` and `ExecutionInfo`, and (via [`dma`]) `DmaPacket`,
//!   `Throttle`, `ThrottleSummary` and `DmaQueuesInfo`.
//! - [`write`]: a writer for synthetic v6 NTFFs (tests, benchmarks, the app demo).

pub mod attribution;
pub mod decode;
pub mod dma;
pub mod errors;
pub mod opcode;
pub mod raw;
mod split;
pub mod write;

pub use decode::{
    decode, decode_split, dma_side, DecodeContext, DecodeReport, DmaSide, TimeOrigin,
};

use prost::Message;

use crate::error::{Error, Result};
use crate::proto;
use crate::source::ByteSource;

/// Size of the fixed header in bytes (ntff.md §2).
pub const HEADER_LEN: u64 = 128;
/// Highest NTFF version whose layout is verified on samples and exports (v4, v5, v6). A newer
/// version byte is no longer refused (ntff.md §2 said to; AWS's own tool refusing versions after
/// SDK upgrades is aws-neuron-sdk#1007): it is decoded with the v6 layout when the structure
/// checks pass, and [`unverified_version_warning`] marks its tables.
pub const MAX_VERSION: u8 = 6;

/// True when `version` is newer than every verified layout ([`MAX_VERSION`]).
pub fn is_unverified_version(version: u8) -> bool {
    version > MAX_VERSION
}

/// The Warning a profile of an NTFF with a newer, unverified version carries (one sentence for
/// the Warning table, `scan` and `convert`).
pub fn unverified_version_warning(path: &str, version: u8) -> String {
    format!(
        "{path}: NTFF version {version} is newer than the versions 4 – {MAX_VERSION} neuronscope is \
         verified on; its structure checks passed, so it was decoded with the version-{MAX_VERSION} \
         layout: every table of this profile is unverified"
    )
}
/// Largest info section we accept (the samples have 3 160 – 57 137 bytes in v6; v4/v5 inline the
/// engine code, still well below this). Larger values are treated as corruption.
pub const MAX_INFO_LEN: u64 = 256 * 1024 * 1024;

/// Device-memory usage categories in their fixed order (ntff.md §3.3.3); v4 files give the index
/// (subgraph field 11.1) instead of the text (11.3).
pub const MEM_CATEGORIES: [&str; 22] = [
    "generic",
    "pe",
    "act",
    "pool",
    "io",
    "spill",
    "weight",
    "profiler buffers",
    "act table",
    "dve",
    "sp",
    "shared scratchpad",
    "tensor",
    "ucode",
    "pool stdio",
    "collectives",
    "scratchpad",
    "xt cc",
    "dma rings runtime",
    "dma rings spill",
    "dma rings io",
    "dma rings collectives",
];

/// Summary of an NTFF's header and info section (ntff.md §2–3).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct NtffInfo {
    /// Byte 0: NTFF version (4, 5, 6 in the samples).
    pub version: u8,
    /// Bytes 1–8: info-section length P in bytes.
    pub info_len: u64,
    /// Info field 1: NEFF network name (= NEFF header `name`).
    pub neff_name: String,
    /// Info field 2: the NEFF uuid copied as a C string; `None` when the field is absent
    /// (pairing.md §4.2).
    pub uuid_cstr: Option<Vec<u8>>,
    /// v6: the full 16-byte NEFF uuid (NEFF-node field 5, or execution field 15.1).
    pub full_uuid: Option<[u8; 16]>,
    /// Absolute file offset of the blob section (128 + P); buffer offsets count from here.
    pub blob_offset: u64,
    /// Field 5: physical cores per logical core (1 on trn1/inf2, 2 on trn2).
    pub physical_cores: u32,
    /// Field 7 (v4 only): capture time, Unix seconds [INF meaning].
    pub capture_time_s: Option<u64>,
    /// Field 8 as "2.29.40 (f954c)" (git hash cut to 5 characters, as the JSON export does).
    pub runtime_version: Option<String>,
    /// Field 11 as "2.25.0 ()".
    pub driver_version: Option<String>,
    /// Field 12 as "2.29.41 ()".
    pub collectives_version: Option<String>,
    /// Field 9: EC2 instance type, e.g. `trn2.3xlarge`.
    pub instance_type: String,
    /// Field 17 (v6): EC2 instance id.
    pub instance_id: Option<String>,
    /// One entry per physical core (ntff.md §3.3), in file order; `pcore_idx` = position.
    pub subgraphs: Vec<SubgraphInfo>,
    /// Field 15 (v6): execution records, raw ticks (ps).
    pub executions: Vec<ExecutionRecord>,
}

/// One physical core of the capture (info field 4.4.1, ntff.md §3.3).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct SubgraphInfo {
    /// `sg00`, `sg01`.
    pub name: String,
    /// Field 3: physical NeuronCore index on the device (0 when absent: trn1/inf2).
    pub core: u32,
    /// Field 14: measured execution time of this core in picoseconds.
    pub total_time_ps: u64,
    /// Field 4: engine code blocks (engine 0 – 4).
    pub code_blocks: Vec<CodeBlock>,
    /// This core's trace buffers (v4/v5 field 6; v6 top-level field 16 with field 7 = core).
    pub buffers: Vec<TraceBuffer>,
    /// Field 10: per-source clock calibration (ntff.md §5.1).
    pub calibration: Calibration,
    /// Field 7: DMA queue names by (DMA engine, queue).
    pub dma_queues: Vec<DmaQueueInfo>,
    /// Field 11: device-memory usage `(category, bytes)` in file order (ntff.md §3.3.3); the
    /// category is the v5/v6 text or, in v4, the [`MEM_CATEGORIES`] name of the index.
    pub mem_usage: Vec<(String, u64)>,
}

/// Where an engine's instruction stream lives (ntff.md §3.3.1).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct CodeBlock {
    /// Engine 0 – 4 (PE, ACT, POOL, DVE, SP).
    pub engine: u32,
    /// Device address of the stream (bytes); pc = (w0[19:0] − (address >> 6)) mod 2²⁰.
    pub address: u64,
    /// v4/v5: the stream bytes held inline in the info section (not serialised).
    #[serde(skip)]
    pub inline: Vec<u8>,
    /// v6: offset of the stream in the blob section (bytes).
    pub blob_offset: u64,
    /// Stream length in bytes (v6 field 8, or the inline length).
    pub len: u64,
}

impl CodeBlock {
    /// Number of 64-byte slots.
    pub fn slots(&self) -> u64 {
        self.len / 64
    }
}

/// A trace-buffer descriptor (ntff.md §3.4); offsets count from the blob section.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct TraceBuffer {
    /// 0 instruction, 1 event, 2 error, 4 DMA, 5 throttle.
    pub trace_type: u32,
    /// 0 = NeuronCore engines, 1 = DMA, 2 = third block kind.
    pub block_type: u32,
    /// Block index (block type 2).
    pub block_index: u32,
    /// Offset in the blob section, bytes.
    pub offset: u64,
    /// Length in bytes (multiple of 16).
    pub size: u64,
}

/// One timestamp source's calibration `t_ps = (ts − init) × expected / actual` (ntff.md §5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ClockCal {
    pub init: u64,
    pub actual: u64,
    pub expected: u64,
}

impl Default for ClockCal {
    fn default() -> Self {
        ClockCal::IDENTITY
    }
}

impl ClockCal {
    /// Raw ticks are already picoseconds (trn2; also used when an entry is missing or degenerate).
    pub const IDENTITY: ClockCal = ClockCal {
        init: 0,
        actual: 1,
        expected: 1,
    };
    /// True when `t_ps = ts`.
    pub fn is_identity(&self) -> bool {
        self.init == 0 && self.actual == self.expected
    }
    /// Calibrated time in femtoseconds (exact integer arithmetic, floored): ps × 1000.
    pub fn fs(&self, ts: u64) -> i128 {
        let d = ts as i128 - self.init as i128;
        if self.actual == self.expected {
            // In i64 when it fits (ticks within ±9.2 · 10¹⁵): the same product, where wasm32
            // multiplies i128 (and checks an i64 product) in a libcall, once per record.
            const FITS: i128 = (i64::MAX / 1000) as i128;
            if (-FITS..=FITS).contains(&d) {
                return i128::from(d as i64 * 1000);
            }
            return d * 1000;
        }
        // Corrupt values could overflow i128 (2⁶⁴ × 2⁶⁴ × 1000): saturate instead.
        d.checked_mul(self.expected as i128)
            .and_then(|x| x.checked_mul(1000))
            .map_or(if d < 0 { i128::MIN } else { i128::MAX }, |x| {
                x.div_euclid(self.actual.max(1) as i128)
            })
    }
    fn from_pb(c: &Option<proto::ClockCalibration>) -> ClockCal {
        match c {
            // A zero `actual` would divide by zero: treat as identity (never seen).
            Some(c) if c.actual != 0 && c.expected != 0 => ClockCal {
                init: c.init,
                actual: c.actual,
                expected: c.expected,
            },
            _ => ClockCal::IDENTITY,
        }
    }
}

/// Subgraph field 10 (ntff.md §5.1), indexed by *record* engine number (the file stores DVE
/// before POOL; this struct has already swapped them back).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Calibration {
    /// Instruction records of engines 0 – 4 (PE, ACT, POOL, DVE, SP).
    pub engines: [ClockCal; 5],
    /// Event records (type 1).
    pub event: ClockCal,
    /// Throttle records (type 5).
    pub throttle: ClockCal,
    /// DMA engines in engine order (type 4).
    pub dma: Vec<ClockCal>,
}

impl Calibration {
    /// True when every instruction/event source is the identity (trn2: one ps clock).
    pub fn is_identity(&self) -> bool {
        self.engines.iter().all(ClockCal::is_identity) && self.event.is_identity()
    }
}

/// A DMA queue table entry (ntff.md §3.3.2).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct DmaQueueInfo {
    /// Absolute DMA engine index on the device.
    pub engine: u32,
    /// Queue index within the engine.
    pub queue: u32,
    /// Queue type code (mapping unknown).
    pub queue_type: u32,
    /// Queue name as in the NEFF (`qActDynamicHW`).
    pub name: String,
    /// Field 5 as signed (−1 in every sample; JSON `q_event_id`).
    pub event_id: i64,
    /// Field 7: 2 on trn2, absent (0) on trn1/inf2; equals the JSON `q_dram_channel` of every
    /// queue in all 16 exports (docs/formats.md "DMA").
    pub dram_channel: u32,
}

/// A v6 execution record (info field 15): raw ticks, picoseconds on trn2.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ExecutionRecord {
    /// Field 15.1: NEFF uuid (16 raw bytes when well formed).
    pub neff_uuid: Vec<u8>,
    /// Field 15.2: start t0 (zero point of every exported timestamp).
    pub start: u64,
    /// Field 15.3: end t1 (closes the export window).
    pub end: u64,
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// "major.minor.patch (hash5)"; the JSON export cuts the git hash to 5 characters and writes
/// "()" when it is empty (runtime "2.29.40 (f954c)", driver "2.25.0 ()").
fn version_string(v: &Option<proto::Version>) -> Option<String> {
    let v = v.as_ref()?;
    let hash: String = lossy(&v.git_hash).chars().take(5).collect();
    Some(format!("{}.{}.{} ({hash})", v.major, v.minor, v.patch))
}

/// Reads the 128-byte header. `Ok(None)` for an empty NTFF; otherwise (version, P).
fn read_header<S: ByteSource + ?Sized>(src: &S) -> Result<Option<(u8, u64)>> {
    if src.len() < HEADER_LEN {
        return Ok(None);
    }
    let mut h = [0u8; 9];
    src.read_at(0, &mut h)?;
    let version = h[0];
    let mut p = [0u8; 8];
    p.copy_from_slice(&h[1..9]);
    let p = u64::from_le_bytes(p);
    if p == 0 {
        return Ok(None);
    }
    // A newer version is read with the newest layout; the info-section decode below is its
    // structure check. Only a byte no NTFF version could be is refused here.
    let top = crate::sniff::MAX_PLAUSIBLE_NTFF_VERSION;
    if version == 0 || version > top {
        return Err(Error::format(
            0,
            format!("an NTFF version byte 1 – {top}"),
            version.to_string(),
        ));
    }
    if p > MAX_INFO_LEN {
        return Err(Error::format(
            1,
            format!("an info-section length ≤ {MAX_INFO_LEN}"),
            p.to_string(),
        ));
    }
    let avail = src.len() - HEADER_LEN;
    if p > avail {
        return Err(Error::Truncated {
            offset: HEADER_LEN,
            wanted: p,
            available: avail,
        });
    }
    Ok(Some((version, p)))
}

/// Reads the 128-byte header and the info section. `Ok(None)` means an empty NTFF ("no data",
/// pairing.md §5: 0 bytes, shorter than 128 bytes, or info length 0).
///
/// A version above [`MAX_VERSION`] is read with the v6 layout (the caller marks its tables, see
/// [`unverified_version_warning`]).
///
/// Errors: [`Error::Format`] at offset 0 when byte 0 is 0 or above
/// [`crate::sniff::MAX_PLAUSIBLE_NTFF_VERSION`]; [`Error::Truncated`] when the info section runs
/// past the end of the file; [`Error::Format`]
/// (offset 128) when the info section is not the protobuf of `proto/ntff.proto`.
pub fn read_info<S: ByteSource + ?Sized>(src: &S) -> Result<Option<NtffInfo>> {
    let Some((version, p)) = read_header(src)? else {
        return Ok(None);
    };
    let len = usize::try_from(p).map_err(|_| Error::format(1, "a small info length", "huge"))?;
    let buf = src.read_vec(HEADER_LEN, len)?;
    let pb = proto::NtffInfoPb::decode(buf.as_slice()).map_err(|e| {
        Error::format(
            HEADER_LEN,
            "an NTFF info section (protobuf, ntff.md §3)",
            crate::pb::decode_error_text(&e),
        )
    })?;
    Ok(Some(info_from_pb(version, p, pb)))
}

fn info_from_pb(version: u8, p: u64, pb: proto::NtffInfoPb) -> NtffInfo {
    let mut full_uuid = None;
    let mut subgraphs = Vec::new();
    for node in &pb.neff_nodes {
        if full_uuid.is_none() {
            full_uuid = <[u8; 16]>::try_from(node.uuid.as_slice()).ok();
        }
        let Some(dev) = &node.device else { continue };
        for sg in &dev.subgraphs {
            subgraphs.push(subgraph_from_pb(sg));
        }
    }
    let executions: Vec<ExecutionRecord> = pb
        .executions
        .iter()
        .map(|e| ExecutionRecord {
            neff_uuid: e.neff_uuid.clone(),
            start: e.start,
            end: e.end,
        })
        .collect();
    if full_uuid.is_none() {
        full_uuid = executions
            .iter()
            .find_map(|e| <[u8; 16]>::try_from(e.neff_uuid.as_slice()).ok());
    }
    // v6: one descriptor list for all cores; a subgraph owns those whose field 7 = its core.
    for d in &pb.trace_buffers {
        if let Some(sg) = subgraphs.iter_mut().find(|s| u64::from(s.core) == d.core) {
            sg.buffers.push(buffer_from_pb(d));
        }
    }
    NtffInfo {
        version,
        info_len: p,
        neff_name: lossy(&pb.neff_name),
        uuid_cstr: pb.uuid_cstr.clone(),
        full_uuid,
        blob_offset: HEADER_LEN + p,
        physical_cores: pb.physical_cores.min(u32::MAX as u64) as u32,
        capture_time_s: (pb.capture_time_s != 0).then_some(pb.capture_time_s),
        runtime_version: version_string(&pb.runtime_version),
        driver_version: version_string(&pb.driver_version),
        collectives_version: version_string(&pb.collectives_version),
        instance_type: lossy(&pb.instance_type),
        instance_id: (!pb.instance_id.is_empty()).then(|| lossy(&pb.instance_id)),
        subgraphs,
        executions,
    }
}

fn u32c(v: u64) -> u32 {
    v.min(u32::MAX as u64) as u32
}

fn buffer_from_pb(d: &proto::TraceBufferDescriptor) -> TraceBuffer {
    TraceBuffer {
        trace_type: u32c(d.trace_type),
        block_type: u32c(d.block_type),
        block_index: u32c(d.block_index),
        offset: d.offset,
        size: d.size,
    }
}

fn subgraph_from_pb(sg: &proto::Subgraph) -> SubgraphInfo {
    let code_blocks = sg
        .code_blocks
        .iter()
        .map(|c| CodeBlock {
            engine: u32c(c.engine),
            address: c.address,
            inline: c.code.clone(),
            blob_offset: c.blob_offset,
            len: if c.code.is_empty() {
                c.blob_len
            } else {
                c.code.len() as u64
            },
        })
        .collect();
    let calibration = match &sg.calibration {
        Some(c) => Calibration {
            // File order PE, ACT, DVE, POOL, SP → record order PE, ACT, POOL, DVE, SP.
            engines: [
                ClockCal::from_pb(&c.pe),
                ClockCal::from_pb(&c.act),
                ClockCal::from_pb(&c.pool),
                ClockCal::from_pb(&c.dve),
                ClockCal::from_pb(&c.sp),
            ],
            event: ClockCal::from_pb(&c.event),
            throttle: ClockCal::from_pb(&c.throttle),
            dma: c.dma.iter().map(|d| ClockCal::from_pb(&Some(*d))).collect(),
        },
        None => Calibration::default(),
    };
    SubgraphInfo {
        name: lossy(&sg.name),
        core: u32c(sg.core),
        total_time_ps: sg.total_time_ps,
        code_blocks,
        buffers: sg.trace_buffers.iter().map(buffer_from_pb).collect(),
        calibration,
        dma_queues: sg
            .dma_queues
            .iter()
            .map(|q| DmaQueueInfo {
                engine: u32c(q.engine),
                queue: u32c(q.queue),
                queue_type: u32c(q.queue_type),
                name: lossy(&q.name),
                event_id: q.event_id,
                dram_channel: u32c(q.unknown7),
            })
            .collect(),
        mem_usage: sg
            .mem_usage
            .iter()
            .map(|m| {
                // v4 writes the category as its index (field 1), v5/v6 as text (field 3).
                let cat = if m.category.is_empty() {
                    MEM_CATEGORIES
                        .get(m.category_index as usize)
                        .map_or_else(|| format!("#{}", m.category_index), |s| (*s).to_string())
                } else {
                    lossy(&m.category)
                };
                (cat, m.bytes)
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::SliceSource;

    #[test]
    fn empty_and_unsupported() {
        assert_eq!(read_info(&SliceSource(&[])).unwrap(), None);
        assert_eq!(read_info(&SliceSource(&[6u8; 100])).unwrap(), None);
        let mut h = vec![0u8; 128];
        h[0] = 6;
        assert_eq!(read_info(&SliceSource(&h)).unwrap(), None, "P = 0");
        // A newer version is no longer refused for its number: the info section is its
        // structure check (four zero bytes are no protobuf: refused at offset 128).
        h[0] = 7;
        h[1] = 4;
        h.extend_from_slice(&[0; 4]);
        assert_eq!(read_info(&SliceSource(&h)).unwrap_err().offset(), Some(128));
        h[128..132].copy_from_slice(&[0x0a, 2, b'n', b'x']);
        let info = read_info(&SliceSource(&h)).unwrap().unwrap();
        assert_eq!((info.version, info.neff_name.as_str()), (7, "nx"));
        assert!(is_unverified_version(7) && !is_unverified_version(6));
        h[0] = 79;
        assert_eq!(read_info(&SliceSource(&h)).unwrap_err().offset(), Some(0));
        h[0] = 6;
        h[1] = 200;
        assert!(matches!(
            read_info(&SliceSource(&h)),
            Err(Error::Truncated { offset: 128, .. })
        ));
    }

    #[test]
    fn calibration_fs() {
        let c = ClockCal {
            init: 100,
            actual: 731428,
            expected: 731408,
        };
        // (1100 − 100) × 731408 / 731428 ps = 999.97265… ps → 999 972 fs (floored).
        assert_eq!(c.fs(1100), 999_972);
        assert_eq!(ClockCal::IDENTITY.fs(5), 5000);
        assert_eq!(c.fs(0), -99_998, "floored toward −∞");
        let huge = ClockCal {
            init: 0,
            actual: 1,
            expected: u64::MAX,
        };
        assert_eq!(huge.fs(u64::MAX), i128::MAX, "saturates, no overflow");
    }
}
