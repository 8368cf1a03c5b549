//! Processing one device profile: NEFF tables, NTFF event tables, `Summary`, `Warning` and
//! `SchemaFields`, streamed into a [`TableSink`]. Shared by the CLI and the wasm shell.
//!
//! Errors are data: a NEFF or NTFF that fails to decode becomes a [`Problem`] (file, offset,
//! expectation) and everything decoded before the fault stays in the sink.

use std::collections::BTreeMap;

use arrow_array::RecordBatch;
use serde::Serialize;

use crate::engine::Engine;
use crate::error::{Code, Error, Problem, Result, Severity};
use crate::inventory::{DeviceProfile, Inventory, Profile};
use crate::pairing::PairStatus;
use crate::source::ByteSource;
use crate::tables::{self, explorer, TableBuilder, TableDef, TableSink, Tables};

/// Opens a picked file by its relative path (native file, browser Blob, or bytes).
pub type Opener<'a> = &'a dyn Fn(&str) -> Result<Box<dyn ByteSource>>;

/// Instructions of one engine on one physical core.
#[derive(Debug, Clone, Serialize)]
pub struct EngineCount {
    /// Physical core within the logical core (0 or 1 under LNC=2).
    pub pcore_idx: u32,
    /// Explorer engine name (tensor, scalar, gpsimd, vector, sync).
    pub engine: &'static str,
    /// Instruction rows written.
    pub count: u64,
}

/// The NEFF a device profile ran, as shown on the Summary page.
#[derive(Debug, Clone, Serialize)]
pub struct NeffBrief {
    /// Path of the NEFF file (relative to the picked folder).
    pub file: String,
    /// Header network name.
    pub name: String,
    /// Header uuid, 32 hex digits.
    pub uuid: String,
    /// `info.json` `tool_version`.
    pub compiler_version: Option<String>,
}

/// Headline numbers of a processed device profile (the page's Summary view).
#[derive(Debug, Clone, Default, Serialize)]
pub struct DeviceSummary {
    /// NTFF path, if the profile has one.
    pub ntff_file: Option<String>,
    /// NTFF format version.
    pub ntff_version: Option<u8>,
    /// Measured execution time in ns (NTFF `sg00` field 14, ps / 1000).
    pub total_time_ns: Option<f64>,
    /// `Instruction` rows.
    pub instruction_count: u64,
    /// `SemaphoreUpdate` rows.
    pub semaphore_count: u64,
    /// `DmaPacket` rows.
    pub dma_packet_count: u64,
    /// Bytes moved by those packets.
    pub dma_bytes: u64,
    /// Instruction rows per (physical core, engine), engines in NTFF order.
    pub per_engine: Vec<EngineCount>,
    /// The paired NEFF.
    pub neff: Option<NeffBrief>,
    /// Instructions the NEFF holds per (physical core, engine): each stream's 64-byte slot count
    /// (neff.md §7), engines in NTFF order. Empty without a usable NEFF. What a NEFF-only entry
    /// shows in place of the executed counts.
    pub neff_instructions: Vec<EngineCount>,
}

/// Rows written per table.
#[derive(Debug, Clone, Serialize)]
pub struct TableCount {
    /// Explorer table name.
    pub name: &'static str,
    /// Rows.
    pub rows: u64,
}

/// What [`process_device`] returns (serialised to the page).
#[derive(Debug, Clone, Serialize)]
pub struct DeviceResult {
    /// Key under which the caller stored the tables (set by [`DeviceResult::with_key`]).
    pub key: String,
    /// Profile id.
    pub profile_id: String,
    /// Device profile name (NTFF stem).
    pub device: String,
    /// Tables written, with row counts.
    pub tables: Vec<TableCount>,
    /// Headline numbers.
    pub summary: DeviceSummary,
    /// Problems of this device profile (pairing, decoding).
    pub problems: Vec<Problem>,
}

impl DeviceResult {
    /// The same result labelled with the caller's storage key.
    pub fn with_key(&self, key: &str) -> DeviceResult {
        let mut r = self.clone();
        r.key = key.to_string();
        r
    }
}

/// Counts rows per table on the way to the real sink.
struct Counting<'a> {
    inner: &'a mut dyn TableSink,
    rows: BTreeMap<&'static str, (&'static TableDef, u64)>,
}

impl TableSink for Counting<'_> {
    fn batch(&mut self, def: &'static TableDef, batch: RecordBatch) -> Result<()> {
        self.rows.entry(def.name).or_insert((def, 0)).1 += batch.num_rows() as u64;
        self.inner.batch(def, batch)
    }
}

/// Raw ticks are one picosecond clock when every calibration entry is the identity (trn2;
/// ntff.md §5.1): the Summary then sums raw spans exactly.
fn raw_ps_clock(info: &crate::ntff::NtffInfo) -> bool {
    info.subgraphs
        .iter()
        .all(|s| s.calibration.is_identity() && s.calibration.dma.iter().all(|d| d.is_identity()))
}

/// Closes a processed profile: `Warning` rows from `problems`, then `SchemaFields` describing
/// every table written (itself included). Returns the tables written with their row counts.
fn finish_tables(problems: &[Problem], sink: &mut Counting<'_>) -> Result<Vec<TableCount>> {
    write_warnings(problems, sink)?;
    let mut defs: Vec<&'static TableDef> = sink.rows.values().map(|(d, _)| *d).collect();
    defs.push(&explorer::SCHEMA_FIELDS);
    tables::schema_fields(&defs, sink)?;
    Ok(sink
        .rows
        .iter()
        .map(|(n, (_, r))| TableCount { name: n, rows: *r })
        .collect())
}

/// Finds a profile by id and one of its device profiles by index.
pub fn find_device<'i>(
    inv: &'i Inventory,
    profile_id: &str,
    device_index: usize,
) -> Result<(&'i Profile, &'i DeviceProfile)> {
    let p = inv
        .profiles
        .iter()
        .find(|p| p.id == profile_id)
        .ok_or_else(|| Error::Other(format!("no profile {profile_id}")))?;
    let d = p.devices.get(device_index).ok_or_else(|| {
        Error::Other(format!(
            "profile {profile_id} has no device profile #{device_index}"
        ))
    })?;
    Ok((p, d))
}

/// Decodes device profile `device_index` of profile `profile_id` into `sink`: `NeffHeader`,
/// `TensorInfo`, `DmaQueuesInfo` (NEFF), `Instruction`, `SemaphoreUpdate`, `Metadata`,
/// `ExecutionInfo` (NTFF), then `Summary`, `Warning` and `SchemaFields`.
/// `progress(stage, bytes_done, bytes_total)` reports decoding progress.
///
/// Errors: only when the profile or device does not exist or the sink fails; decode failures are
/// [`Problem`]s in the result.
pub fn process_device(
    inv: &Inventory,
    profile_id: &str,
    device_index: usize,
    open: Opener<'_>,
    sink: &mut dyn TableSink,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<DeviceResult> {
    let opts = DeviceOptions::default();
    process_device_with(inv, profile_id, device_index, open, sink, progress, &opts)
}

/// Opens a path of the inventory as a source several threads may read at once (natively: a
/// [`crate::source::FileSource`], positioned reads).
pub type SyncOpener<'a> = &'a dyn Fn(&str) -> Result<Box<dyn ByteSource + Sync>>;

/// How [`process_device_with`] decodes.
#[derive(Clone, Copy, Default)]
pub struct DeviceOptions<'a> {
    /// Opens the NTFF a second time for the DMA threads of [`crate::ntff::decode_split`]
    /// (native); `None` (and an open that fails): everything on the calling thread. The tables
    /// are the same either way.
    pub dma_open: Option<SyncOpener<'a>>,
    /// Leave the NTFF's DMA rows (`DmaPacket`, `DmaPacketAggregated`) to another worker
    /// ([`crate::ntff::DecodeContext::dma_elsewhere`]): [`begin_device`] then returns before
    /// the Summary and derived tables, which [`finish_device`] writes once it has that worker's
    /// [`DmaSideResult`] (the page's split decode).
    pub dma_elsewhere: bool,
}

/// A device profile decoded by [`begin_device`] up to the tables that need the NTFF's DMA
/// rows: what [`finish_device`] completes. Owned (the page keeps it between two worker calls).
pub struct DevicePending {
    profile_id: String,
    device: String,
    summary: DeviceSummary,
    problems: Vec<Problem>,
    rows: BTreeMap<&'static str, (&'static TableDef, u64)>,
    /// The NTFF decode's result (`None`: no NTFF decoded, or it failed, with a problem).
    decoded: Option<Decoded>,
}

struct Decoded {
    path: String,
    rep: crate::ntff::DecodeReport,
    kept: crate::summary::Gathered,
    derived: crate::derived::Derived,
    neff_facts: Option<crate::derived::NeffFacts>,
    /// The time pass is still to run ([`DeviceOptions::dma_elsewhere`]).
    dma_missing: bool,
    /// Decoded on several threads ([`DeviceOptions::dma_open`]): the Summary may use two.
    split: bool,
}

/// What the worker that decoded a device's DMA side ([`dma_side_device`]) hands to
/// [`finish_device`] (as JSON text: [`DmaSideResult::to_json`]): per core the DMA row statistics
/// and problems, and the tables it wrote (name, rows), which the profile's
/// `SchemaFields` and table list include.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DmaSideResult {
    /// [`crate::ntff::dma_side`]'s result.
    pub side: crate::ntff::DmaSide,
    /// Tables written into that worker's sink and their rows (`DmaPacket`,
    /// `DmaPacketAggregated`).
    pub tables: Vec<(String, u64)>,
}

/// [`DmaSideResult`] as it crosses between workers; a problem's code travels as its index in
/// [`Code::ALL`] (one code string can name several variants).
#[derive(Serialize, serde::Deserialize)]
struct WireSide {
    cores: Vec<(crate::ntff::dma::DmaCoreStats, Vec<WireProblem>)>,
    tables: Vec<(String, u64)>,
}

#[derive(Serialize, serde::Deserialize)]
struct WireProblem {
    code: usize,
    file: Option<String>,
    offset: Option<u64>,
    message: String,
}

impl DmaSideResult {
    /// JSON text for the other worker (i64 sums stay exact, unlike a JS number).
    pub fn to_json(&self) -> String {
        let wire = WireSide {
            cores: self
                .side
                .cores
                .iter()
                .map(|(s, ps)| {
                    let ps = ps
                        .iter()
                        .map(|p| WireProblem {
                            code: Code::ALL.iter().position(|c| *c == p.code).unwrap_or(0),
                            file: p.file.clone(),
                            offset: p.offset,
                            message: p.message.clone(),
                        })
                        .collect();
                    (s.clone(), ps)
                })
                .collect(),
            tables: self.tables.clone(),
        };
        serde_json::to_string(&wire).unwrap_or_default()
    }
    /// Reads [`DmaSideResult::to_json`] text. Errors: anything else.
    pub fn from_json(text: &str) -> Result<DmaSideResult> {
        let wire: WireSide = serde_json::from_str(text)
            .map_err(|e| Error::Other(format!("DMA side result: {e}")))?;
        let mut cores = Vec::with_capacity(wire.cores.len());
        for (s, ps) in wire.cores {
            let mut out = Vec::with_capacity(ps.len());
            for p in ps {
                let code = *Code::ALL.get(p.code).ok_or_else(|| {
                    Error::Other(format!("DMA side result: problem code #{}", p.code))
                })?;
                let mut q = Problem::new(code, p.file.as_deref(), p.message);
                q.offset = p.offset;
                out.push(q);
            }
            cores.push((s, out));
        }
        Ok(DmaSideResult {
            side: crate::ntff::DmaSide { cores },
            tables: wire.tables,
        })
    }
}

/// The DMA rows of device `device_index` of profile `profile_id` ([`crate::ntff::dma_side`] on
/// its NTFF: `DmaPacket` and `DmaPacketAggregated` into `sink`): the other worker's
/// half of a [`DeviceOptions::dma_elsewhere`] decode. `progress("DMA", done, total)` in
/// DMA-buffer bytes.
///
/// Errors: an unknown profile or device, no NTFF, those of [`crate::ntff::dma_side`].
pub fn dma_side_device(
    inv: &Inventory,
    profile_id: &str,
    device_index: usize,
    open: Opener<'_>,
    sink: &mut dyn TableSink,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<DmaSideResult> {
    let (_, dev) = find_device(inv, profile_id, device_index)?;
    let path = dev
        .ntff
        .as_deref()
        .ok_or_else(|| Error::Other(format!("{}: no NTFF", dev.name)))?;
    let mut sink = Counting {
        inner: sink,
        rows: BTreeMap::new(),
    };
    let src = open(path)?;
    let mut cb = |done: u64, total: u64| progress("DMA", done, total);
    // One NTFF per device profile: its DmaPacket ids start at 0 (DecodeContext::first_dma_id).
    let first_dma_id = crate::ntff::DecodeContext::default().first_dma_id;
    let side = crate::ntff::dma_side(&*src, path, None, first_dma_id, &mut sink, &mut cb)?;
    let tables = sink
        .rows
        .iter()
        .map(|(n, (_, r))| (n.to_string(), *r))
        .collect();
    Ok(DmaSideResult { side, tables })
}

impl DevicePending {
    /// Does [`finish_device`] need the other worker's [`DmaSideResult`] (or decode the DMA side itself)?
    pub fn needs_dma_side(&self) -> bool {
        self.decoded.as_ref().is_some_and(|d| d.dma_missing)
    }
    /// The NTFF whose DMA side is missing, if any.
    pub fn ntff(&self) -> Option<&str> {
        self.decoded
            .as_ref()
            .filter(|d| d.dma_missing)
            .map(|d| d.path.as_str())
    }
}

/// [`process_device`] with [`DeviceOptions`].
pub fn process_device_with(
    inv: &Inventory,
    profile_id: &str,
    device_index: usize,
    open: Opener<'_>,
    sink: &mut dyn TableSink,
    progress: &mut dyn FnMut(&str, u64, u64),
    opts: &DeviceOptions<'_>,
) -> Result<DeviceResult> {
    let pending = begin_device(inv, profile_id, device_index, open, sink, progress, opts)?;
    finish_device(pending, None, open, sink, progress)
}

/// The first part of [`process_device_with`]: the NEFF's tables and the NTFF decode into `sink`,
/// without the Summary, derived, `Warning` and `SchemaFields` tables ([`finish_device`] writes
/// them). With [`DeviceOptions::dma_elsewhere`] the NTFF's DMA side is left out
/// too.
///
/// Errors: an unknown profile or device index; sink errors. Input problems are in the result.
pub fn begin_device(
    inv: &Inventory,
    profile_id: &str,
    device_index: usize,
    open: Opener<'_>,
    sink: &mut dyn TableSink,
    progress: &mut dyn FnMut(&str, u64, u64),
    opts: &DeviceOptions<'_>,
) -> Result<DevicePending> {
    let (profile, dev) = find_device(inv, profile_id, device_index)?;
    let mut sink = Counting {
        inner: sink,
        rows: BTreeMap::new(),
    };
    let mut problems: Vec<Problem> = profile
        .problems
        .iter()
        .filter(|p| {
            p.file.is_some() && (p.file.as_deref() == dev.ntff.as_deref() || p.file == dev.neff)
        })
        .cloned()
        .collect();
    let mut summary = DeviceSummary {
        ntff_file: dev.ntff.clone(),
        ntff_version: dev.ntff_version,
        ..Default::default()
    };

    let decodable = !matches!(
        dev.pairing,
        PairStatus::EmptyNtff | PairStatus::NeffOnly | PairStatus::Unreadable { .. }
    );
    // The NEFF is trusted for names only when the uuid check bound it to the NTFF (or there is
    // no NTFF at all).
    let neff_usable = matches!(
        dev.pairing,
        PairStatus::Paired { .. } | PairStatus::NeffOnly
    );
    let mut neff_facts: Option<crate::derived::NeffFacts> = None;
    let mut decoded_ntff: Option<Decoded> = None;
    let mut ctx = crate::ntff::DecodeContext {
        file_name: dev.ntff.clone().unwrap_or_default(),
        dma_elsewhere: opts.dma_elsewhere,
        ..Default::default()
    };
    if let (Some(path), true) = (&dev.neff, neff_usable) {
        progress("NEFF", 0, 1);
        let opts = crate::neff::OpenOptions {
            keep: Some(crate::neff::debug::keep_debug),
            ..Default::default()
        };
        match open(path).and_then(|src| {
            let neff = crate::neff::open_with(&*src, &opts)?;
            let debug = crate::neff::debug::load(&*src, &neff);
            Ok((neff, debug))
        }) {
            Ok((neff, debug)) => {
                neff_facts = Some(crate::derived::NeffFacts::of(&neff));
                summary.neff_instructions = neff
                    .subgraphs
                    .iter()
                    .flat_map(|sg| {
                        sg.engines.iter().map(|e| EngineCount {
                            pcore_idx: sg.pcore_idx,
                            engine: e.engine.explorer_name(),
                            count: e.slot_count,
                        })
                    })
                    .collect();
                summary.neff = Some(NeffBrief {
                    file: path.clone(),
                    name: neff.header.name.clone(),
                    uuid: neff.header.uuid_hex(),
                    compiler_version: neff.compiler_version.clone(),
                });
                ctx.compiler_version = neff.compiler_version.clone();
                ctx.semaphore_names = neff
                    .subgraphs
                    .iter()
                    .map(|sg| sg.semaphore_names())
                    .collect();
                for w in &neff.warnings {
                    // Warnings quote member names from the tar headers: control bytes escaped.
                    problems.push(Problem::new(
                        Code::NeffWarning,
                        Some(path),
                        format!("{path}: {}", crate::neff::archive::printable(w)),
                    ));
                }
                // With an NTFF, DmaQueuesInfo comes from the NTFF's queue table (engine, queue
                // index, DRAM channel); the NEFF alone only knows names and kinds.
                let written = if dev.ntff.is_some() && decodable {
                    crate::neff::tables::write_neff_header(&neff, &mut sink)
                        .and_then(|_| crate::neff::tables::write_tensor_info(&neff, &mut sink))
                } else {
                    crate::neff::write_tables(&neff, &mut sink)
                };
                if let Err(e) = written {
                    problems.push(Problem::from_error(Code::NeffTables, path, &e));
                }
                // Debug info names instructions (BIR → Penguin → HLO → framework, NKI lines);
                // without it the rows keep their timing and the reason is a Warning.
                match debug {
                    Ok(d) => {
                        // One line per missing debug file would bury the rest: list a few, then
                        // count.
                        const SHOWN: usize = 3;
                        for w in d.warnings.iter().take(SHOWN) {
                            problems.push(Problem::new(
                                Code::NeffDebugInfo,
                                Some(path),
                                format!("{path}: {w}"),
                            ));
                        }
                        if d.warnings.len() > SHOWN {
                            problems.push(Problem::new(
                                Code::NeffDebugInfo,
                                Some(path),
                                format!(
                                    "{path}: {} more debug-info problems of the same kind; \
                                     instructions of those engines have no source attribution",
                                    d.warnings.len() - SHOWN
                                ),
                            ));
                        }
                        if let Err(e) = crate::neff::debug::write_debug_tables(&d, &mut sink) {
                            problems.push(Problem::from_error(Code::NeffTables, path, &e));
                        }
                        ctx.attribution = Some(std::sync::Arc::new(d));
                    }
                    Err(e) => problems.push(Problem::from_error(Code::NeffDebugInfo, path, &e)),
                }
            }
            Err(e) => problems.push(Problem::from_error(Code::ProcessIncomplete, path, &e)),
        }
        progress("NEFF", 1, 1);
    }

    if let (Some(path), true) = (&dev.ntff, decodable) {
        let mut cb = |done: u64, total: u64| progress("NTFF", done, total);
        let mut derived = crate::derived::DerivedCollector {
            inner: &mut sink,
            state: Default::default(),
        };
        // The Summary accumulates counts, sums and merged busy intervals while the tables
        // stream (crate::summary::SummaryCollector); which clock its intervals use depends on the
        // calibration, so the info section is read first (header + protobuf, cheap).
        let mut spans: Option<crate::summary::SummaryCollector<'_>> = None;
        let mut split = false;
        let decoded = open(path).and_then(|src| {
            let info = crate::ntff::read_info(&*src).ok().flatten();
            let raw_ps = info.as_ref().is_some_and(raw_ps_clock);
            let cals = info
                .map(|i| i.subgraphs.into_iter().map(|s| s.calibration).collect())
                .unwrap_or_default();
            let spans = spans.insert(crate::summary::SummaryCollector {
                inner: &mut derived,
                state: crate::summary::Gathered::new(raw_ps, cals),
            });
            match opts.dma_open.and_then(|o| o(path).ok()) {
                Some(dma) => {
                    split = true;
                    crate::ntff::decode_split(&*src, &*dma, &ctx, spans, &mut cb)
                }
                None => crate::ntff::decode(&*src, &ctx, spans, &mut cb),
            }
        });
        let kept = spans.map(|s| s.state).unwrap_or_default();
        let derived = derived.state;
        match decoded {
            Ok(rep) => {
                decoded_ntff = Some(Decoded {
                    path: path.clone(),
                    rep,
                    kept,
                    derived,
                    neff_facts,
                    dma_missing: opts.dma_elsewhere,
                    split,
                })
            }
            Err(e) => problems.push(Problem::from_error(Code::ProcessIncomplete, path, &e)),
        }
    }
    Ok(DevicePending {
        profile_id: profile.id.clone(),
        device: dev.name.clone(),
        summary,
        problems,
        rows: sink.rows,
        decoded: decoded_ntff,
    })
}

/// Completes a [`begin_device`]: the Summary, derived, `Warning` and `SchemaFields` tables into
/// `sink`, and the result. When the DMA side was left out, `side` is what the worker that
/// decoded it returned ([`dma_side_device`]; its tables were stored there); `None` decodes it
/// here (the NTFF opened again with `open`, its tables into `sink`), as when that
/// worker failed. Otherwise `side` is ignored.
///
/// Errors: sink errors. A failed DMA pass is a problem in the result.
pub fn finish_device(
    p: DevicePending,
    side: Option<DmaSideResult>,
    open: Opener<'_>,
    sink: &mut dyn TableSink,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<DeviceResult> {
    let DevicePending {
        profile_id,
        device,
        mut summary,
        mut problems,
        rows,
        decoded,
    } = p;
    let mut sink = Counting { inner: sink, rows };
    if let Some(Decoded {
        path,
        mut rep,
        kept,
        derived,
        neff_facts,
        dma_missing,
        split,
    }) = decoded
    {
        let path = &path;
        if dma_missing {
            let got = match side {
                Some(side) => {
                    for (name, n) in &side.tables {
                        if let Some(def) = tables::table_def(name) {
                            sink.rows.entry(def.name).or_insert((def, 0)).1 += n;
                        }
                    }
                    Ok(side.side)
                }
                None => open(path).and_then(|src| {
                    let mut cb = |done: u64, total: u64| progress("DMA", done, total);
                    let first = crate::ntff::DecodeContext::default().first_dma_id;
                    let origin = Some(rep.origin_fs);
                    crate::ntff::dma_side(&*src, path, origin, first, &mut sink, &mut cb)
                }),
            };
            match got {
                Ok(side) => rep.merge_dma(side),
                Err(e) => problems.push(Problem::from_error(Code::ProcessIncomplete, path, &e)),
            }
        }
        summary.ntff_version = Some(rep.info.version);
        summary.total_time_ns = rep.total_time_ps.map(|ps| ps as f64 / 1000.0);
        summary.instruction_count = rep.instructions;
        summary.semaphore_count = rep.semaphore_updates;
        summary.dma_packet_count = rep.dma_packets;
        summary.dma_bytes = rep.dma_bytes;
        for (pcore, counts) in rep.instructions_per_engine.iter().enumerate() {
            for e in Engine::ALL {
                let count = counts[e.ntff_index()];
                if count > 0 {
                    summary.per_engine.push(EngineCount {
                        pcore_idx: pcore as u32,
                        engine: e.explorer_name(),
                        count,
                    });
                }
            }
        }
        // Records that decode to no instruction are dropped, never guessed: say how many,
        // so a corrupt trace does not pass for a quiet one.
        for c in &rep.cores {
            let odd = c.foreign_records + c.unpaired_ends;
            if odd > 0 {
                let first = [
                    c.set_aside.foreign.first_offset,
                    c.set_aside.unpaired_end.first_offset,
                ];
                problems.push(at_first(
                    Problem::new(
                        Code::NtffRecordsDropped,
                        Some(path),
                        format!(
                            "{path}: {} instruction records of {} point outside its code \
                             block (another run's code image, or corrupt bytes) and {} end \
                             records have no start; they were dropped",
                            c.foreign_records, c.name, c.unpaired_ends
                        ),
                    ),
                    &first,
                ));
            }
            problems.extend(corrupt_records(path, c));
        }
        if rep.instructions == 0 {
            problems.push(Problem::new(
                Code::MissingData,
                Some(path),
                format!(
                    "{path}: no instruction could be decoded from the trace buffers \
                     (empty window, or corrupt records)"
                ),
            ));
        }
        // Summary and OpcodeSummary; ActiveTime, PendingDma, DmaUsage, HbmUsageSummaryByType
        // and Explorer's Missing Data warnings (crate::derived).
        let (summed, derived) = if split && !cfg!(target_arch = "wasm32") {
            // After the split decode both cores are free: the Summary's unions (two threads)
            // beside the derived tables (this one). Its few rows wait in memory, then follow.
            std::thread::scope(|s| {
                let rep = &rep;
                let h = s.spawn(move || {
                    let mut t = Tables::default();
                    let r = crate::summary::write_gathered(kept, rep, 2, &mut t);
                    (r, t)
                });
                let d = crate::derived::write_tables(derived, rep, &mut sink);
                let r = match h.join() {
                    Ok((r, t)) => r.and_then(|()| forward_tables(t, &mut sink)),
                    Err(_) => Err(Error::Other("Summary thread panicked".into())),
                };
                (r, d)
            })
        } else {
            (
                crate::summary::write_gathered(kept, &rep, 1, &mut sink),
                crate::derived::write_tables(derived, &rep, &mut sink),
            )
        };
        if let Err(e) = summed {
            problems.push(Problem::from_error(Code::SummaryFailed, path, &e));
        }
        if let Err(e) = derived {
            problems.push(Problem::from_error(Code::DerivedFailed, path, &e));
        }
        problems.extend(crate::derived::explorer_warnings(&rep, neff_facts, path));
        problems.extend(rep.problems);
    }

    let tables = finish_tables(&problems, &mut sink)?;

    Ok(DeviceResult {
        key: String::new(),
        profile_id,
        device,
        tables,
        summary,
        problems,
    })
}

/// Sends every batch of `t` to `sink`, table by table (each table's batches in their order).
fn forward_tables(t: Tables, sink: &mut dyn TableSink) -> Result<()> {
    for (_, (def, batches)) in t.tables {
        for b in batches {
            sink.batch(def, b)?;
        }
    }
    Ok(())
}

/// `p` at the smallest of the offsets given, if any.
fn at_first(p: Problem, offsets: &[Option<u64>]) -> Problem {
    match offsets.iter().flatten().min() {
        Some(&at) => p.at(at),
        None => p,
    }
}

/// [`Code::NtffCorruptRecords`] problems of one core: one per kind of record that no sample
/// holds (counts and first offsets from [`crate::ntff::errors::InsSetAside`] and
/// [`crate::ntff::errors::DmaSetAside`]), so a damaged trace does not pass for a clean one
/// with a few rows fewer. Unpaired instruction records are `NTFF_UNPAIRED` (the decoder's).
fn corrupt_records(path: &str, c: &crate::ntff::decode::CoreSummary) -> Vec<Problem> {
    let ins = &c.set_aside;
    let dma = &c.dma.set_aside;
    let kinds = [
        (
            ins.other_kind,
            "instruction-buffer records have no known kind byte; they were dropped",
        ),
        (
            ins.reversed,
            "instructions end before they start; their rows keep the negative duration",
        ),
        (
            ins.far_outside,
            "instructions have a time further outside the execution window than its own \
             length (a damaged timestamp); they were dropped or kept as read",
        ),
        (
            dma.far_outside,
            "DMA records have a time further outside the execution window than its own length \
             (a damaged timestamp); they were dropped or kept as read",
        ),
        (
            dma.unpaired_end,
            "DMA packet end records have no start; they were dropped",
        ),
        (
            dma.reversed,
            "DMA packets end before they start; their rows keep the negative duration",
        ),
    ];
    let mut out = Vec::new();
    for (t, what) in kinds {
        if t.count > 0 {
            let at = t
                .first_offset
                .map_or(String::new(), |o| format!(" (the first at byte {o})"));
            out.push(at_first(
                Problem::new(
                    Code::NtffCorruptRecords,
                    Some(path),
                    format!("{path}: {}: {} {what}{at}", c.name, t.count),
                ),
                &[t.first_offset],
            ));
        }
    }
    if c.dma.unpaired_starts > 0 {
        let first = dma.unpaired_start.first_offset;
        let at = first.map_or(String::new(), |o| format!(" (the first at byte {o})"));
        out.push(at_first(
            Problem::new(
                Code::NtffCorruptRecords,
                Some(path),
                format!(
                    "{path}: {}: {} DMA packet start records have no end; they were dropped{at}",
                    c.name, c.dma.unpaired_starts
                ),
            ),
            &[first],
        ));
    }
    out
}

crate::cols!(mod warning = crate::tables::explorer::WARNING {
    MESSAGE: Str = "message",
    CATEGORY: Str = "category",
});

/// `Warning` rows (explorer-schema.md §5.9) from the problems, the category from the code
/// ([`crate::problem::Code::category`]: Explorer's wording where one exists).
fn write_warnings(problems: &[Problem], sink: &mut dyn TableSink) -> Result<()> {
    let mut b = TableBuilder::new(&explorer::WARNING);
    for p in problems {
        b.set(warning::MESSAGE, p.message.as_str());
        b.set(warning::CATEGORY, p.code.category());
        b.end_row_into(sink)?;
    }
    b.finish_into(sink)?;
    Ok(())
}

/// What [`process_system`] returns (serialised to the page).
#[derive(Debug, Clone, Serialize)]
pub struct SystemResult {
    /// Key under which the caller stored the tables.
    pub key: String,
    /// Profile id.
    pub profile_id: String,
    /// Tables written, with row counts.
    pub tables: Vec<TableCount>,
    /// The decoders' report (record counts, time range, device links).
    pub report: crate::system::SystemReport,
    /// Problems of the profile and of the decoding.
    pub problems: Vec<Problem>,
}

impl SystemResult {
    /// The same result labelled with the caller's storage key.
    pub fn with_key(&self, key: &str) -> SystemResult {
        let mut r = self.clone();
        r.key = key.to_string();
        r
    }
}

/// Decodes the system trace of profile `profile_id` (`trace_info.pb`, `ntrace.pb`,
/// `cpu_util.pb`, `host_mem.pb`, framework traces) into `sink`: `SystemProfileEvents`,
/// `SystemProfileMetadata`, `CpuUsage`, `HostMemUsage`, `SystemProfileHbmUsage`,
/// `DeviceProfileList`, then `Warning` and `SchemaFields`.
///
/// Errors: only when the profile does not exist or the sink fails; decode failures are
/// [`Problem`]s in the result.
pub fn process_system(
    inv: &Inventory,
    profile_id: &str,
    open: Opener<'_>,
    sink: &mut dyn TableSink,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<SystemResult> {
    let profile = inv
        .profiles
        .iter()
        .find(|p| p.id == profile_id)
        .ok_or_else(|| Error::Other(format!("no profile {profile_id}")))?;
    let mut sink = Counting {
        inner: sink,
        rows: BTreeMap::new(),
    };
    let report = crate::system::process(profile, open, &mut sink, progress)?;
    // The profile's problems but those of a device's NTFF or NEFF: each is counted once, with
    // the device it concerns (`begin_device` takes them), not again against the system trace.
    let device_file = |f: &str| {
        profile
            .devices
            .iter()
            .any(|d| d.ntff.as_deref() == Some(f) || d.neff.as_deref() == Some(f))
    };
    // A file the inventory found cut or not of its kind, whose decoder reported the fault too
    // (with its offset): counted once, the decoder's. A memory snapshot's is the part that
    // reads it (`process_memory`).
    let cut_reported = |f: &str| {
        report
            .problems
            .iter()
            .any(|q| q.file.as_deref() == Some(f) && q.severity == Severity::Error)
    };
    // The capture checks' missing trace_info.pb / ntrace.pb warnings say what the decoder's
    // ERROR_NO_METADATA says (Explorer's message): once, the error.
    let no_metadata = report.problems.iter().any(|q| q.code == Code::NoMetadata);
    let mut problems: Vec<Problem> = profile
        .problems
        .iter()
        .filter(|p| !p.file.as_deref().is_some_and(device_file))
        .filter(|p| {
            !(no_metadata && matches!(p.code, Code::MissingTraceInfo | Code::MissingNtrace))
        })
        .filter(|p| {
            let error = matches!(p.code, Code::TruncatedTrace | Code::ProcessIncomplete);
            !(error
                && p.file
                    .as_deref()
                    .is_some_and(|f| cut_reported(f) || inv.is_memory_snapshot(f)))
        })
        .cloned()
        .collect();
    problems.extend(report.problems.iter().cloned());
    let tables = finish_tables(&problems, &mut sink)?;
    Ok(SystemResult {
        key: String::new(),
        profile_id: profile.id.clone(),
        tables,
        report,
        problems,
    })
}

/// What [`process_memory`] returns (serialised to the page).
#[derive(Debug, Clone, Serialize)]
pub struct MemoryResult {
    /// Key under which the caller stored the tables.
    pub key: String,
    /// Path of the snapshot.
    pub file: String,
    /// Tables written, with row counts.
    pub tables: Vec<TableCount>,
    /// The reader's report (counts, time range, peaks per device).
    pub report: crate::memsnap::MemSnapReport,
}

impl MemoryResult {
    /// The same result labelled with the caller's storage key.
    pub fn with_key(&self, key: &str) -> MemoryResult {
        let mut r = self.clone();
        r.key = key.to_string();
        r
    }
}

/// Decodes the PyTorch memory snapshot `path` (`memory_snapshot_rank<N>.pickle`) into the
/// `Memory*` tables, then `Warning` and `SchemaFields`.
///
/// Errors: only when the path is not a memory snapshot of the inventory, cannot be opened, or the
/// sink fails; decode failures are problems in the report.
pub fn process_memory(
    inv: &Inventory,
    path: &str,
    open: Opener<'_>,
    sink: &mut dyn TableSink,
) -> Result<MemoryResult> {
    if !inv.is_memory_snapshot(path) {
        return Err(Error::Other(format!(
            "{path}: not a memory snapshot of this folder"
        )));
    }
    let mut sink = Counting {
        inner: sink,
        rows: BTreeMap::new(),
    };
    let src = open(path)?;
    let report = crate::memsnap::process(&*src, path, &mut sink)?;
    let tables = finish_tables(&report.problems, &mut sink)?;
    Ok(MemoryResult {
        key: String::new(),
        file: path.to_string(),
        tables,
        report,
    })
}

/// One result of [`process_files`]: a system profile, a device profile or a memory snapshot.
#[derive(Debug, Clone, Serialize)]
pub struct FolderPart {
    /// `<profile id>/system`, `<profile id>/<device>` or the snapshot's path.
    pub name: String,
    /// Tables written, with row counts.
    pub tables: Vec<TableCount>,
    /// Problems of this part (profile, pairing, decoding).
    pub problems: Vec<Problem>,
}

impl FolderPart {
    /// Rows written to `table` (0 when it was not written).
    pub fn rows(&self, table: &str) -> u64 {
        self.tables
            .iter()
            .find(|t| t.name == table)
            .map_or(0, |t| t.rows)
    }
}

/// What [`process_files`] did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FolderRun {
    /// The inventory's problems, then every part's, in order.
    pub problems: Vec<Problem>,
    /// One entry per part processed.
    pub parts: Vec<FolderPart>,
    /// `Err`s of `process_*` calls (`<call> <part>: <error>`); bad input never causes one, only
    /// a failing sink, so callers treat any as a bug.
    pub errors: Vec<String>,
}

/// Runs an in-memory folder through the whole pipeline the CLI's `convert` and the page's
/// worker run — [`crate::inventory::build`], then [`process_system`] for every system profile,
/// [`process_device`] for every device and [`process_memory`] for every snapshot — into
/// in-memory [`tables::Tables`], dropped after each part (only row counts and problems are
/// kept). `files` are `(path, bytes)` as the browser presents a picked folder. Meant for tests
/// and fuzz targets: the bytes are in memory.
pub fn process_files(files: &[(String, std::rc::Rc<Vec<u8>>)]) -> FolderRun {
    let map: std::collections::HashMap<&str, &std::rc::Rc<Vec<u8>>> =
        files.iter().map(|(p, b)| (p.as_str(), b)).collect();
    let open = |p: &str| -> Result<Box<dyn ByteSource>> {
        map.get(p)
            .map(|b| Box::new(std::rc::Rc::clone(b)) as Box<dyn ByteSource>)
            .ok_or_else(|| Error::Io(format!("{p}: no such file")))
    };
    let picked: Vec<(String, u64)> = files
        .iter()
        .map(|(p, b)| (p.clone(), ByteSource::len(&**b)))
        .collect();
    let inv = crate::inventory::build(&picked, &open);
    let mut run = FolderRun {
        problems: inv.problems.clone(),
        ..Default::default()
    };
    let part =
        |run: &mut FolderRun, name: String, r: Result<(Vec<TableCount>, Vec<Problem>)>| match r {
            Ok((tables, problems)) => {
                run.problems.extend(problems.iter().cloned());
                run.parts.push(FolderPart {
                    name,
                    tables,
                    problems,
                });
            }
            Err(e) => run.errors.push(format!("{name}: {e}")),
        };
    for p in &inv.profiles {
        if !p.system_files.is_empty() {
            let mut t = tables::Tables::default();
            let r = process_system(&inv, &p.id, &open, &mut t, &mut |_, _, _| {});
            part(
                &mut run,
                format!("{}/system", p.id),
                r.map(|r| (r.tables, r.problems)),
            );
        }
        for (i, d) in p.devices.iter().enumerate() {
            let mut t = tables::Tables::default();
            let r = process_device(&inv, &p.id, i, &open, &mut t, &mut |_, _, _| {});
            part(
                &mut run,
                format!("{}/{}", p.id, d.name),
                r.map(|r| (r.tables, r.problems)),
            );
        }
    }
    for f in &inv.files {
        if matches!(f.kind, crate::inventory::FileKind::MemorySnapshot { .. }) {
            let mut t = tables::Tables::default();
            let r = process_memory(&inv, &f.path, &open, &mut t);
            part(
                &mut run,
                f.path.clone(),
                r.map(|r| (r.tables, r.report.problems)),
            );
        }
    }
    run
}
