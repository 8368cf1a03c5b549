//! Inventory of a picked folder tree (docs/format/pairing.md §1, §3, §5): classify every file by name
//! and check its bytes ([`crate::sniff`]), find system-profile capture directories, read the
//! NEFF headers and NTFF ids, pair each NTFF with its NEFF ([`crate::pairing`]) and group
//! everything into [`Profile`]s for the page.
//!
//! Grouping rules (docs/formats.md "Pairing"):
//! - a **capture** is a directory holding `trace_info.pb` (or, with a Warning, `ntrace.pb`
//!   without `trace_info.pb`); every file in its subtree belongs to it, unless a deeper capture
//!   directory claims it. Its type is `System+Device` when the subtree holds an NTFF, else `System`;
//! - every other directory holding NTFFs, or NEFFs no NTFF executed, is one `Device` profile
//!   (one per directory, not per NTFF: a directory is what a capture run writes); other files
//!   (sources, JSON exports) join the deepest profile directory above them;
//! - NEFFs anywhere in the drop are pairing candidates; a NEFF used by an NTFF appears in the
//!   NTFF's device entry, a NEFF no NTFF used appears as a `NeffOnly` entry of its own
//!   directory's (or capture's) profile (static view).
//!
//! Works natively and in the browser: all reads go through the caller's `open`.

use std::collections::{BTreeMap, BTreeSet};

use crate::error::{Code, Error, Problem, Result};
use crate::pairing::{
    self, base_name, dir_name, NeffCandidate, NtffCandidate, NtffIds, PairOutcome,
};
use crate::sniff::Sniffed;
use crate::source::ByteSource;

pub use crate::pairing::PairStatus;

/// What a file is, from its name (pairing.md §1, framework-inputs.md §1). The contents are
/// checked later, in [`build`] ([`crate::sniff`]: a misnamed file is reported for what it is).
/// Serialised with a `kind` tag, e.g. `{"kind":"Neff"}`, `{"kind":"MemorySnapshot","rank":0}`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind")]
pub enum FileKind {
    /// `*.neff`: compiled program (neff.md).
    Neff,
    /// `*.ntff`: device trace (ntff.md).
    Ntff,
    /// `ntrace.pb`: runtime system trace events (system-profile.md).
    Ntrace,
    /// `trace_info.pb`: system-profile capture metadata; marks a capture directory.
    TraceInfo,
    /// `cpu_util.pb`: host CPU samples (0 bytes is normal).
    CpuUtil,
    /// `host_mem.pb`: host memory samples (0 bytes is normal).
    HostMem,
    /// Framework (Kineto / PyTorch / JAX) Chrome trace: `trace.json`,
    /// `neuron_framework_trace_rank_<N>.json`, `*.pt.trace.json`, each optionally `.gz`.
    KinetoTrace,
    /// PyTorch allocator snapshot: `memory_snapshot_rank<N>.pickle` (rank `N`), or any other
    /// `*.pickle` / `*.pkl` whose name contains `snapshot` (rank unknown).
    MemorySnapshot {
        /// Rank `N` from the name, when present.
        rank: Option<u32>,
    },
    /// A `*.py` source file (Code Viewer).
    SourcePy,
    /// A `*.tar.gz` / `*.tgz` source archive (Explorer stores `source_folder.tar.gz`).
    SourceArchive,
    /// A profiler JSON export (`neuron-profile view --output-format json`): `*_profile_full.json`,
    /// `*_profile.json`, or (decided in [`build`]) a `.json` with the stem of an NTFF in its
    /// directory.
    ProfilerJsonExport,
    /// Anything else (listed, not used).
    Other,
}

/// Classifies a file by its `/`-separated path (only the last component matters).
pub fn classify(path: &str) -> FileKind {
    let name = base_name(path);
    let lower = name.to_ascii_lowercase();
    let l = lower.as_str();
    if l.ends_with(".neff") {
        return FileKind::Neff;
    }
    if l.ends_with(".ntff") {
        return FileKind::Ntff;
    }
    match l {
        "ntrace.pb" => return FileKind::Ntrace,
        "trace_info.pb" => return FileKind::TraceInfo,
        "cpu_util.pb" => return FileKind::CpuUtil,
        "host_mem.pb" => return FileKind::HostMem,
        "trace.json" | "trace.json.gz" => return FileKind::KinetoTrace,
        _ => {}
    }
    let json = l.strip_suffix(".gz").unwrap_or(l);
    if let Some(stem) = json.strip_suffix(".json") {
        if stem.ends_with(".pt.trace") {
            return FileKind::KinetoTrace;
        }
        if let Some(n) = stem.strip_prefix("neuron_framework_trace_rank_") {
            if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) {
                return FileKind::KinetoTrace;
            }
        }
        if json == l && (stem.ends_with("_profile_full") || stem.ends_with("_profile")) {
            return FileKind::ProfilerJsonExport;
        }
    }
    if let Some(stem) = l.strip_suffix(".pickle").or_else(|| l.strip_suffix(".pkl")) {
        if let Some(n) = stem.strip_prefix("memory_snapshot_rank") {
            let n = n.trim_start_matches('_');
            if let Ok(rank) = n.parse::<u32>() {
                return FileKind::MemorySnapshot { rank: Some(rank) };
            }
        }
        if stem.contains("snapshot") {
            return FileKind::MemorySnapshot { rank: None };
        }
    }
    if l.ends_with(".py") {
        return FileKind::SourcePy;
    }
    if l.ends_with(".tar.gz") || l.ends_with(".tgz") {
        return FileKind::SourceArchive;
    }
    FileKind::Other
}

impl FileKind {
    /// True for the system-profile inputs (`ntrace.pb`, `trace_info.pb`, `cpu_util.pb`,
    /// `host_mem.pb`, framework trace, memory snapshot).
    pub fn is_system(&self) -> bool {
        matches!(
            self,
            FileKind::Ntrace
                | FileKind::TraceInfo
                | FileKind::CpuUtil
                | FileKind::HostMem
                | FileKind::KinetoTrace
                | FileKind::MemorySnapshot { .. }
        )
    }
}

/// One picked file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct InputFile {
    /// Path relative to the picked folder, `/` separated.
    pub path: String,
    /// Size in bytes (as given by the caller).
    pub size: u64,
    /// What the file is (flattened: `"kind": "Neff"`, plus `rank` for snapshots).
    #[serde(flatten)]
    pub kind: FileKind,
    /// Id of the [`Profile`] the file belongs to, if any.
    pub profile: Option<String>,
    /// What the bytes look like ([`crate::sniff`]), for the files [`build`] sniffs (every named
    /// profiler file; other files unless their name says text, sources, images, weights or
    /// archives, at most 512 of them); `None` when not sniffed or unreadable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<Sniffed>,
}

/// Profile type as Neuron Explorer names it (pairing.md §1). Serialised as `"Device"`,
/// `"System"`, `"System+Device"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum ProfileType {
    /// NTFFs (and their NEFFs) without a capture directory, or NEFFs alone (static view).
    Device,
    /// A capture directory (`trace_info.pb`, `ntrace.pb`) without NTFFs.
    System,
    /// A capture directory that also holds NTFFs.
    #[serde(rename = "System+Device")]
    SystemDevice,
}

/// One NTFF with its NEFF, or a NEFF alone (pairing.md §4, §6 `DeviceProfileList`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DeviceProfile {
    /// NTFF file stem (name without `.ntff`), or the NEFF stem for a NEFF-only entry.
    pub name: String,
    /// Path of the NTFF, if any.
    pub ntff: Option<String>,
    /// Path of the paired NEFF (or, for `UuidMismatch`, the rejected one; for `NeffOnly` and an
    /// unreadable NEFF, the NEFF itself).
    pub neff: Option<String>,
    /// The pairing result.
    pub pairing: PairStatus,
    /// NTFF version byte (4, 5, 6), when the header was readable.
    pub ntff_version: Option<u8>,
    /// Runtime model id from the NTFF or NEFF file name (pairing.md §2).
    pub model_id: Option<u64>,
    /// NeuronCore index from the file names (`_vnc_<n>`, `profile_nc_<n>`).
    pub nc: Option<u32>,
    /// Execution number from `_exec_<N>`.
    pub exec: Option<u32>,
    /// Collectives rank from `_rank_<R>`.
    pub rank: Option<u32>,
    /// Session id from `profile_nc_<n>_session_<k>.ntff`.
    pub session: Option<u32>,
}

/// One profile the user can open: a capture directory or a directory of device traces.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Profile {
    /// Stable id: the root directory path (`"."` for the top of the drop).
    pub id: String,
    /// Device, System or System+Device.
    pub profile_type: ProfileType,
    /// Root directory (`""` for the top of the drop).
    pub root: String,
    /// EC2 instance id from the capture directory name `<instance-id>_pid_<pid>` (or its parent's,
    /// for a timestamped sub-directory).
    pub instance_id: Option<String>,
    /// Process id from that directory name.
    pub pid: Option<u64>,
    /// One entry per NTFF, then one per NEFF no NTFF used.
    pub devices: Vec<DeviceProfile>,
    /// System-profile files (`ntrace.pb`, `trace_info.pb`, `cpu_util.pb`, `host_mem.pb`,
    /// framework traces, memory snapshots).
    pub system_files: Vec<String>,
    /// Other files of the profile (sources, JSON exports, anything else).
    pub other_files: Vec<String>,
    /// Problems about this profile's files.
    pub problems: Vec<Problem>,
}

/// The result of [`build`]: every file, the profiles found, and problems not tied to a profile.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Inventory {
    /// Every picked file, sorted by path.
    pub files: Vec<InputFile>,
    /// Profiles, sorted by root.
    pub profiles: Vec<Profile>,
    /// Problems about files outside every profile, or about the drop as a whole.
    pub problems: Vec<Problem>,
}

impl Inventory {
    /// True when `path` is a picked file taken for a PyTorch memory snapshot (its name,
    /// framework-inputs.md §3).
    pub fn is_memory_snapshot(&self, path: &str) -> bool {
        self.files
            .iter()
            .any(|f| f.path == path && matches!(f.kind, FileKind::MemorySnapshot { .. }))
    }
}

/// Splits a capture directory's last component `i-<hex>_pid_<digits>` (pairing.md §3).
pub fn parse_capture_dir(dir: &str) -> Option<(String, u64)> {
    let name = base_name(dir);
    let (iid, pid) = name.split_once("_pid_")?;
    let hexpart = iid.strip_prefix("i-")?;
    if hexpart.is_empty() || !hexpart.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((iid.to_string(), pid.parse().ok()?))
}

/// Normalises a picked path: `\` → `/`, no leading `./` or `/`, no empty components.
fn normalise(path: &str) -> String {
    path.replace('\\', "/")
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect::<Vec<_>>()
        .join("/")
}

/// True when `path` lies in directory `dir` or below (`""` = the top).
fn under(path: &str, dir: &str) -> bool {
    dir.is_empty()
        || path
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
}

fn profile_id(root: &str) -> String {
    if root.is_empty() {
        ".".into()
    } else {
        root.to_string()
    }
}

fn stem_of(path: &str, ext: &str) -> String {
    let name = base_name(path);
    let n = name.len();
    if n > ext.len() && name.is_char_boundary(n - ext.len()) {
        let (head, tail) = name.split_at(n - ext.len());
        if tail.eq_ignore_ascii_case(ext) {
            return head.to_string();
        }
    }
    name.to_string()
}

/// What reading one NEFF or NTFF gave.
enum Read<T> {
    Ok(T),
    Empty,
    /// (the error's text for the pairing status, the problem, for a NEFF its fault without
    /// the path: what [`pairing::blame_unreadable_neffs`] quotes).
    Failed(String, Problem, String),
}

/// Builds the inventory of a picked folder tree.
///
/// `files`: `(path relative to the picked folder, '/' separated; size in bytes)`. `open` opens a
/// path for random access (native: `FileSource`; browser: a `Blob` source). Reads only the NEFF
/// headers (1 KiB each) and the NTFF headers + info sections (streamed, 64 KiB windows).
///
/// Never fails: unreadable files become [`PairStatus::Unreadable`] entries with an Error problem
/// (`ERROR_PROCESS_INCOMPLETE`, Explorer's code for corrupted artifacts).
pub fn build(
    files: &[(String, u64)],
    open: &dyn Fn(&str) -> Result<Box<dyn ByteSource>>,
) -> Inventory {
    let mut inputs: Vec<InputFile> = files
        .iter()
        .map(|(p, size)| {
            let path = normalise(p);
            InputFile {
                kind: classify(&path),
                path,
                size: *size,
                profile: None,
                content: None,
            }
        })
        .collect();
    inputs.sort_by(|a, b| a.path.cmp(&b.path));
    inputs.dedup_by(|a, b| a.path == b.path);

    // A `.json` named like an NTFF of its directory is that NTFF's export (AnchovyPark layout).
    let ntff_stems: BTreeSet<(String, String)> = inputs
        .iter()
        .filter(|f| f.kind == FileKind::Ntff)
        .map(|f| (dir_name(&f.path).to_string(), stem_of(&f.path, ".ntff")))
        .collect();
    for f in inputs.iter_mut() {
        if f.kind == FileKind::Other && f.path.to_ascii_lowercase().ends_with(".json") {
            let key = (dir_name(&f.path).to_string(), stem_of(&f.path, ".json"));
            if ntff_stems.contains(&key) {
                f.kind = FileKind::ProfilerJsonExport;
            }
        }
    }

    // Capture directories: trace_info.pb, else ntrace.pb alone (pairing.md §1, §3).
    let dirs_with = |k: FileKind| -> BTreeSet<String> {
        inputs
            .iter()
            .filter(|f| f.kind == k)
            .map(|f| dir_name(&f.path).to_string())
            .collect()
    };
    let info_dirs = dirs_with(FileKind::TraceInfo);
    let ntrace_dirs = dirs_with(FileKind::Ntrace);
    let captures: BTreeSet<String> = info_dirs.union(&ntrace_dirs).cloned().collect();
    // Deepest capture containing each file.
    let capture_of = |path: &str| -> Option<String> {
        captures
            .iter()
            .filter(|c| under(path, c))
            .max_by_key(|c| c.len())
            .cloned()
    };

    // What every file's bytes look like (no decoder runs): a misnamed file is reported for what
    // it is, and an NTFF that is not one never reaches the NTFF reader.
    let mut content_problems: Vec<Problem> = Vec::new();
    let mut not_ntffs: BTreeMap<String, Problem> = BTreeMap::new();
    let mut others = 0usize;
    for f in inputs.iter_mut() {
        if !worth_sniffing(f) {
            continue;
        }
        if f.kind == FileKind::Other {
            others += 1;
            if others > MAX_OTHER_SNIFFED {
                continue;
            }
        }
        let Ok((head, len)) =
            open(&f.path).and_then(|s| Ok((crate::sniff::read_head(&*s)?, s.len())))
        else {
            continue; // the readers below report an unreadable file
        };
        let c = crate::sniff::sniff(&head, len);
        if f.kind == FileKind::Ntff {
            if let Some(p) = ntff_head_problem(&f.path, &c, &head, len) {
                not_ntffs.insert(f.path.clone(), p);
            }
        }
        content_problems.extend(content_problem(f, &c, &head, len));
        f.content = Some(c);
    }

    // Read NEFF headers and NTFF ids.
    let mut neff_reads: Vec<(String, Read<crate::neff::NeffHeader>)> = Vec::new();
    let mut ntff_reads: Vec<(String, Read<NtffIds>)> = Vec::new();
    for f in &inputs {
        match f.kind {
            FileKind::Neff => {
                let r = match open(&f.path).and_then(|s| crate::neff::read_header(&s)) {
                    Ok(h) => Read::Ok(h),
                    Err(e) => {
                        let mut p = Problem::from_error(Code::ProcessIncomplete, &f.path, &e);
                        // (the fault without the path, the message)
                        let (reason, message) = match &f.content {
                            // Shorter than the header: the NEFF cut, unless it is text (a
                            // NEFF's first bytes are binary; an empty one is said to be empty
                            // below).
                            _ if (1..crate::neff::HEADER_LEN as u64).contains(&f.size)
                                && !matches!(f.content, Some(Sniffed::Text | Sniffed::Json)) =>
                            {
                                let r = format!(
                                    "{} bytes, shorter than the {}-byte NEFF header: the file is \
                                     cut",
                                    f.size,
                                    crate::neff::HEADER_LEN
                                );
                                let m = format!("{}: {r} (copy it again)", f.path);
                                (r, m)
                            }
                            Some(c) if *c != Sniffed::Neff => {
                                let r = format!("looks like {}, not a NEFF ({e})", c.describe());
                                let m = format!("{} {r}", f.path);
                                (r, m)
                            }
                            _ => {
                                let r = format!("not a readable NEFF ({e})");
                                let m = format!("{}: {r}", f.path);
                                (r, m)
                            }
                        };
                        p.message = message;
                        Read::Failed(e.to_string(), p, reason)
                    }
                };
                neff_reads.push((f.path.clone(), r));
            }
            FileKind::Ntff => {
                let ids = match not_ntffs.remove(&f.path) {
                    Some(p) => Err(p),
                    None => Ok(open(&f.path).and_then(|s| pairing::ntff_ids(&s))),
                };
                let r = match ids {
                    Err(p) => Read::Failed(p.message.clone(), p, String::new()),
                    Ok(Ok(Some(ids))) => Read::Ok(ids),
                    Ok(Ok(None)) => Read::Empty,
                    Ok(Err(Error::Truncated {
                        offset,
                        wanted,
                        available,
                    })) => {
                        // Cut inside the info section (the 17-byte cut's header message, for
                        // the section after it).
                        let m = format!(
                            "{} bytes, ending inside the {wanted}-byte info section at offset \
                             {offset}: the file is cut (copy it again)",
                            offset + available
                        );
                        let p = Problem::new(
                            Code::NtffTruncated,
                            Some(&f.path),
                            format!("{}: {m}", f.path),
                        )
                        .at(offset + available);
                        Read::Failed(m, p, String::new())
                    }
                    Ok(Err(e)) => {
                        let mut p = Problem::from_error(Code::ProcessIncomplete, &f.path, &e);
                        p.message = format!("{}: not a readable NTFF ({e})", f.path);
                        Read::Failed(e.to_string(), p, String::new())
                    }
                };
                ntff_reads.push((f.path.clone(), r));
            }
            _ => {}
        }
    }

    // Pair.
    let mut neff_cands: Vec<NeffCandidate> = Vec::new();
    for (path, r) in &neff_reads {
        if let Read::Ok(h) = r {
            neff_cands.push(NeffCandidate {
                path: path.clone(),
                uuid: h.uuid,
                name: h.name.clone(),
                hash: h.hash,
            });
        }
    }
    let ntff_cands: Vec<NtffCandidate> = ntff_reads
        .iter()
        .filter_map(|(path, r)| match r {
            Read::Ok(ids) => Some(NtffCandidate {
                path: path.clone(),
                ids: ids.clone(),
            }),
            _ => None,
        })
        .collect();
    let mut outcomes = pairing::pair_all(&ntff_cands, &neff_cands);
    let unreadable: Vec<(&str, &str, &Problem)> = neff_reads
        .iter()
        .filter_map(|(path, r)| match r {
            Read::Failed(_, p, reason) => Some((path.as_str(), reason.as_str(), p)),
            _ => None,
        })
        .collect();
    pairing::blame_unreadable_neffs(&ntff_cands, &mut outcomes, &unreadable);
    let mut outcome_of: BTreeMap<&str, &PairOutcome> = BTreeMap::new();
    // Used NEFF → the first NTFF that ran it (the NEFF belongs to that NTFF's profile).
    let mut used_neffs: BTreeMap<&str, &str> = BTreeMap::new();
    for (t, o) in ntff_cands.iter().zip(outcomes.iter()) {
        outcome_of.insert(t.path.as_str(), o);
        if let (PairStatus::Paired { .. }, Some(i)) = (&o.status, o.neff) {
            if let Some(n) = neff_cands.get(i) {
                used_neffs.entry(n.path.as_str()).or_insert(t.path.as_str());
            }
        }
    }

    // Profiles: one per capture, one per other directory holding NTFFs or unused NEFFs.
    let mut profiles: BTreeMap<String, Profile> = BTreeMap::new();
    // Roots that make a profile: NTFFs and unused NEFFs.
    let own_root = |path: &str| capture_of(path).unwrap_or_else(|| dir_name(path).to_string());
    for f in &inputs {
        let makes_profile = match f.kind {
            FileKind::Ntff => true,
            FileKind::Neff => !used_neffs.contains_key(f.path.as_str()),
            _ => captures.iter().any(|c| under(&f.path, c)),
        };
        if makes_profile {
            let root = own_root(&f.path);
            profiles.entry(root.clone()).or_insert_with(|| {
                let is_capture = captures.contains(&root);
                let (instance_id, pid) = if is_capture {
                    parse_capture_dir(&root)
                        .or_else(|| parse_capture_dir(dir_name(&root)))
                        .map_or((None, None), |(i, p)| (Some(i), Some(p)))
                } else {
                    (None, None)
                };
                Profile {
                    id: profile_id(&root),
                    profile_type: if is_capture {
                        ProfileType::System
                    } else {
                        ProfileType::Device
                    },
                    root,
                    instance_id,
                    pid,
                    devices: Vec::new(),
                    system_files: Vec::new(),
                    other_files: Vec::new(),
                    problems: Vec::new(),
                }
            });
        }
    }
    let mut global_problems: Vec<Problem> = Vec::new();
    // Assign files (devices per NTFF first, then unused NEFFs, both in path order).
    let ntff_ids_of: BTreeMap<&str, &Read<NtffIds>> =
        ntff_reads.iter().map(|(p, r)| (p.as_str(), r)).collect();
    let neff_read_of: BTreeMap<&str, &Read<crate::neff::NeffHeader>> =
        neff_reads.iter().map(|(p, r)| (p.as_str(), r)).collect();
    let mut neff_only: Vec<(String, DeviceProfile, Option<Problem>)> = Vec::new();
    for f in inputs.iter_mut() {
        let root = match (&f.kind, used_neffs.get(f.path.as_str())) {
            (_, Some(user)) => own_root(user),
            (FileKind::Ntff | FileKind::Neff, None) => own_root(&f.path),
            // Other files join the capture, else the deepest profile directory above them.
            _ => match capture_of(&f.path) {
                Some(c) => c,
                None => match profiles
                    .keys()
                    .filter(|r| under(&f.path, r))
                    .max_by_key(|r| r.len())
                {
                    Some(r) => r.clone(),
                    None => continue,
                },
            },
        };
        let Some(p) = profiles.get_mut(&root) else {
            continue;
        };
        f.profile = Some(p.id.clone());
        match f.kind {
            FileKind::Ntff => {
                let read = ntff_ids_of.get(f.path.as_str()).copied();
                let (dev, problems) = ntff_device(&f.path, read, &outcome_of, &neff_cands);
                p.devices.push(dev);
                p.problems.extend(problems);
            }
            FileKind::Neff => {
                if used_neffs.contains_key(f.path.as_str()) {
                    continue; // shown in the device entry of the NTFF that ran it
                }
                let h = pairing::parse_neff_name(&f.path);
                let (pairing, problem) = match neff_read_of.get(f.path.as_str()) {
                    Some(Read::Failed(m, prob, _)) => (
                        PairStatus::Unreadable { message: m.clone() },
                        Some(prob.clone()),
                    ),
                    _ => (PairStatus::NeffOnly, None),
                };
                let dev = DeviceProfile {
                    name: stem_of(&f.path, ".neff"),
                    ntff: None,
                    neff: Some(f.path.clone()),
                    pairing,
                    ntff_version: None,
                    model_id: h.model_id,
                    nc: h.nc,
                    exec: None,
                    rank: None,
                    session: None,
                };
                neff_only.push((root.clone(), dev, problem));
            }
            ref k if k.is_system() => p.system_files.push(f.path.clone()),
            _ => p.other_files.push(f.path.clone()),
        }
    }
    for (root, dev, problem) in neff_only {
        if let Some(p) = profiles.get_mut(&root) {
            p.devices.push(dev);
            p.problems.extend(problem);
        }
    }
    for p in profiles.values_mut() {
        if !captures.contains(&p.root) {
            continue;
        }
        if p.devices.iter().any(|d| d.ntff.is_some()) {
            p.profile_type = ProfileType::SystemDevice;
        }
        capture_checks(p, &info_dirs, &ntrace_dirs, &ntff_ids_of);
    }
    // Content problems go to the profile of their file, else to the drop.
    for pr in content_problems {
        let owner = pr
            .file
            .as_deref()
            .and_then(|path| inputs.iter().find(|f| f.path == path))
            .and_then(|f| f.profile.clone())
            .and_then(|id| profiles.values_mut().find(|p| p.id == id));
        match owner {
            Some(p) => p.problems.push(pr),
            None => global_problems.push(pr),
        }
    }
    if profiles.is_empty() {
        global_problems.push(Problem::new(
            Code::NoProfile,
            None,
            no_profile_message(&inputs),
        ));
    }
    Inventory {
        files: inputs,
        profiles: profiles.into_values().collect(),
        problems: global_problems,
    }
}

/// The device entry (and problems: pairing, reading, an unverified version) for one NTFF.
fn ntff_device(
    path: &str,
    read: Option<&Read<NtffIds>>,
    outcome_of: &BTreeMap<&str, &PairOutcome>,
    neffs: &[NeffCandidate],
) -> (DeviceProfile, Vec<Problem>) {
    let h = pairing::parse_ntff_name(path);
    let mut dev = DeviceProfile {
        name: stem_of(path, ".ntff"),
        ntff: Some(path.to_string()),
        neff: None,
        pairing: PairStatus::MissingNeff,
        ntff_version: None,
        model_id: h.model_id,
        nc: h.nc,
        exec: h.exec,
        rank: h.rank,
        session: h.session,
    };
    let mut unverified = None;
    let problem = match read {
        Some(Read::Ok(ids)) => {
            dev.ntff_version = Some(ids.version);
            if crate::ntff::is_unverified_version(ids.version) {
                unverified = Some(Problem::new(
                    Code::NtffVersionUnverified,
                    Some(path),
                    crate::ntff::unverified_version_warning(path, ids.version),
                ));
            }
            match outcome_of.get(path) {
                Some(o) => {
                    dev.pairing = o.status.clone();
                    if let Some(n) = o.neff.and_then(|i| neffs.get(i)) {
                        dev.neff = Some(n.path.clone());
                        if dev.model_id.is_none() {
                            dev.model_id = pairing::parse_neff_name(&n.path).model_id;
                        }
                    }
                    o.problem.clone()
                }
                None => None,
            }
        }
        Some(Read::Empty) => {
            dev.pairing = PairStatus::EmptyNtff;
            Some(Problem::new(
                Code::EmptyNtff,
                Some(path),
                format!(
                    "{path}: empty device trace (0 bytes, or an info section of length 0: no \
                     data), skipped; this happens when a process initialises more \
                     NeuronCores than it uses or runs without warm-up; if that core did run, the \
                     file was cut off"
                ),
            ))
        }
        Some(Read::Failed(m, p, _)) => {
            dev.pairing = PairStatus::Unreadable { message: m.clone() };
            Some(p.clone())
        }
        None => None,
    };
    (dev, problem.into_iter().chain(unverified).collect())
}

/// The problem of an NTFF's first bytes, if any: another format's header (a NEFF's bytes 1–8 are
/// zero, so they read as info length 0), a file cut inside the 128-byte header, or bytes no NTFF
/// starts with. `None` for an empty NTFF (0 bytes, or info length 0 in a header that is no other
/// format's, pairing.md §5) and for a header that checks out.
fn ntff_head_problem(path: &str, c: &Sniffed, head: &[u8], len: u64) -> Option<Problem> {
    let info_len = crate::sniff::u64_at(head, 1);
    let unknown = matches!(c, Sniffed::Unknown { .. } | Sniffed::Ntff { .. });
    if len == 0 || (info_len == Some(0) && unknown) {
        return None;
    }
    let not_ntff = |offset: u64, reason: String| {
        Some(
            Problem::new(
                Code::ProcessIncomplete,
                Some(path),
                format!("{path} looks like {}, not an NTFF ({reason})", c.describe()),
            )
            .at(offset),
        )
    };
    if *c == Sniffed::Neff {
        let u = |o: usize| crate::sniff::u64_at(head, o).unwrap_or(0);
        return not_ntff(
            0,
            format!(
                "at offset 0: expected an NTFF version byte 1 – {} and a u64 info-section \
                 length, found a NEFF header: package version {}, header size {}",
                crate::sniff::MAX_PLAUSIBLE_NTFF_VERSION,
                u(0),
                u(8)
            ),
        );
    }
    if len < crate::ntff::HEADER_LEN {
        let v = match crate::sniff::ntff_start(head) {
            Err((at, reason)) => return not_ntff(at, format!("at offset {at}: {reason}")),
            Ok(_) if !unknown => {
                return not_ntff(
                    0,
                    format!("{len} bytes, shorter than the 128-byte NTFF header"),
                )
            }
            Ok((v, _)) => v,
        };
        // An NTFF's first bytes, cut before the header ends: the trace is lost, not empty.
        return Some(
            Problem::new(
                Code::NtffTruncated,
                Some(path),
                format!(
                    "{path}: {len} bytes, ending inside the 128-byte NTFF header (version byte \
                     {v}{}): the file is cut (copy it again)",
                    info_len.map_or(String::new(), |p| format!(", info section of {p} bytes"))
                ),
            )
            .at(len),
        );
    }
    match crate::sniff::ntff_shape(head, len) {
        Ok(_) => None,
        Err((offset, reason)) => not_ntff(offset, reason),
    }
}

/// Names whose files are text, sources or well-known other formats (images, weights, archives,
/// objects, our own Parquet), never a profiler file in disguise: their bytes are not read (in the
/// browser every first read of a file costs a 4 MiB window).
const NOT_SNIFFED_SUFFIXES: [&str; 30] = [
    ".py",
    ".md",
    ".txt",
    ".rst",
    ".html",
    ".csv",
    ".tsv",
    ".yaml",
    ".yml",
    ".toml",
    ".cfg",
    ".log",
    ".sh",
    ".ipynb",
    ".c",
    ".h",
    ".cpp",
    ".rs",
    ".png",
    ".jpg",
    ".svg",
    ".pdf",
    ".pt",
    ".pth",
    ".safetensors",
    ".so",
    ".o",
    ".whl",
    ".zip",
    ".parquet",
];

/// At most this many files of no known kind are sniffed per drop (a folder of thousands of
/// unrelated files must not be read 4 KiB – 4 MiB each); the rest are listed unread.
const MAX_OTHER_SNIFFED: usize = 512;

/// True for the files whose bytes [`build`] looks at: every named profiler file, and other files
/// unless their name says another format.
fn worth_sniffing(f: &InputFile) -> bool {
    let lower = f.path.to_ascii_lowercase();
    match f.kind {
        FileKind::SourcePy => false,
        FileKind::Other => !NOT_SNIFFED_SUFFIXES.iter().any(|s| lower.ends_with(s)),
        _ => true,
    }
}

/// The problem a file's contents raise against its name, if any: Warning when a named system
/// file holds something else, Info when an unnamed file is a profiler file under another name
/// (NEFF/NTFF mismatches are reported by their readers).
fn content_problem(f: &InputFile, c: &Sniffed, head: &[u8], len: u64) -> Option<Problem> {
    let gz = f.path.to_ascii_lowercase().ends_with(".gz");
    if *c == Sniffed::Empty {
        // The capture's metadata, a framework trace and a memory snapshot cannot be empty (0-byte
        // host samples are normal; the other decoders say what an empty file means for their
        // kind).
        let expected = match f.kind {
            FileKind::TraceInfo => "a TraceInfo message (capture metadata, system-profile.md §3)",
            FileKind::KinetoTrace => "a framework trace (JSON, framework-inputs.md §2)",
            FileKind::MemorySnapshot { .. } => {
                "a pickle (memory snapshot, framework-inputs.md §3.5)"
            }
            _ => return None,
        };
        return Some(
            Problem::new(
                Code::ProcessIncomplete,
                Some(&f.path),
                format!("{}: empty file, expected {expected} at offset 0", f.path),
            )
            .at(0),
        );
    }
    // A cut copy of the kind its name says is that file cut, not another format: an error, as
    // a cut NEFF or NTFF is (the decoder then reports the cut with its offset, which stands for
    // this one: profile::process_system).
    let cut = match f.kind {
        FileKind::Ntrace | FileKind::CpuUtil | FileKind::HostMem => {
            matches!(c, Sniffed::Unknown { .. }) && crate::sniff::cut_framed(head, len)
        }
        FileKind::TraceInfo => {
            matches!(c, Sniffed::Unknown { .. }) && crate::sniff::cut_message(head, len)
        }
        _ => false,
    };
    if cut {
        return Some(Problem::new(
            Code::TruncatedTrace,
            Some(&f.path),
            format!(
                "{} is a {} file that ends after {len} bytes, inside a record: the file is cut \
                 (copy it again)",
                f.path,
                kind_label(&f.kind)
            ),
        ));
    }
    // A framework trace is judged as its reader judges it (`system::kineto`): by its first byte
    // after JSON whitespace (and a byte-order mark at byte 0), whatever the sniff took it for.
    // No `{` or `[` there is no JSON: the reader keeps nothing, an error (the reader's own, at
    // the same offset, stands for it in a decode). Whitespace to the end of the head leaves the
    // judgement to the reader.
    if matches!(f.kind, FileKind::KinetoTrace) && !gz {
        let (at, found) = match crate::system::kineto::value_start(head, true) {
            Some((_, true)) => return None,
            Some((at, false)) => (
                at as u64,
                format!(
                    "bytes {}",
                    crate::util::hex_bytes(head.get(at..).unwrap_or(&[]), 8)
                ),
            ),
            None if head.len() as u64 == len => (len, "the end of the file".into()),
            None => return None,
        };
        let like = match c {
            Sniffed::Json | Sniffed::Unknown { .. } => String::new(),
            c => format!(" (it looks like {})", c.describe()),
        };
        return Some(
            Problem::new(
                Code::ProcessIncomplete,
                Some(&f.path),
                format!(
                    "{} is named like a framework trace (JSON) file but is not JSON{like}: at \
                     offset {at} expected JSON (`{{` or `[`), found {found}",
                    f.path,
                ),
            )
            .at(at),
        );
    }
    // Bytes of no known format in a file its decoder will read: that file's data is lost, an
    // error as for a NEFF or NTFF of random bytes (the decoder's own error, with its offset,
    // stands for this one in a decode: profile::process_system).
    let expected = match f.kind {
        FileKind::Ntrace | FileKind::CpuUtil | FileKind::HostMem => {
            Some("u32-LE-framed protobuf records (a record length, then that many bytes)")
        }
        FileKind::TraceInfo => Some("one protobuf message"),
        FileKind::KinetoTrace if gz => Some("gzip data (1f 8b)"),
        FileKind::KinetoTrace => Some("JSON (`{` or `[`)"),
        FileKind::MemorySnapshot { .. } => Some("a pickle (80, then protocol 02 – 05)"),
        _ => None,
    };
    if let (Some(expected), Sniffed::Unknown { head }) = (expected, c) {
        return Some(
            Problem::new(
                Code::ProcessIncomplete,
                Some(&f.path),
                format!(
                    "{} is named like a {} file but is not one: at offset 0 expected {expected}, \
                     found bytes {head}",
                    f.path,
                    kind_label(&f.kind)
                ),
            )
            .at(0),
        );
    }
    let fits = match f.kind {
        FileKind::Neff | FileKind::Ntff | FileKind::SourcePy => return None,
        FileKind::Ntrace | FileKind::CpuUtil | FileKind::HostMem => {
            matches!(c, Sniffed::FramedProtobuf { .. })
        }
        FileKind::TraceInfo => *c == Sniffed::Protobuf,
        FileKind::KinetoTrace => matches!(c, Sniffed::Json) || (gz && *c == Sniffed::Gzip),
        FileKind::ProfilerJsonExport => matches!(c, Sniffed::Json),
        FileKind::MemorySnapshot { .. } => matches!(c, Sniffed::Pickle { .. }),
        FileKind::SourceArchive => matches!(c, Sniffed::Gzip),
        FileKind::Other => {
            let rename = match c {
                Sniffed::Neff => "*.neff",
                Sniffed::Ntff { .. } => "*.ntff",
                Sniffed::FramedProtobuf { samples: false } => "ntrace.pb",
                _ => return None,
            };
            return Some(Problem::new(
                Code::FileMisnamed,
                Some(&f.path),
                format!(
                    "{} looks like {}; it is used only when named {rename}",
                    f.path,
                    c.describe()
                ),
            ));
        }
    };
    (!fits).then(|| {
        Problem::new(
            Code::ContentMismatch,
            Some(&f.path),
            format!(
                "{} is named like a {} file but looks like {}",
                f.path,
                kind_label(&f.kind),
                c.describe()
            ),
        )
    })
}

fn kind_label(k: &FileKind) -> &'static str {
    match k {
        FileKind::Ntrace => "runtime trace (ntrace.pb)",
        FileKind::TraceInfo => "capture metadata (trace_info.pb)",
        FileKind::CpuUtil => "host CPU samples (cpu_util.pb)",
        FileKind::HostMem => "host memory samples (host_mem.pb)",
        FileKind::KinetoTrace => "framework trace (JSON)",
        FileKind::ProfilerJsonExport => "profiler JSON export",
        FileKind::MemorySnapshot { .. } => "memory snapshot (pickle)",
        FileKind::SourceArchive => "source archive (.tar.gz)",
        _ => "profiler",
    }
}

/// The `NO_PROFILE` message: what to pick, and, when system files lie there without the runtime
/// trace a System profile is made from, what was found and what is missing
/// ([`lone_system_files`]).
fn no_profile_message(inputs: &[InputFile]) -> String {
    const PICK: &str =
        "pick a folder holding .ntff/.neff files or a capture directory with trace_info.pb";
    let snapshots = inputs
        .iter()
        .filter(|f| matches!(f.kind, FileKind::MemorySnapshot { .. }))
        .count();
    // Memory snapshots are read on their own: a pick of them alone lacks nothing.
    let also = match snapshots {
        0 => String::new(),
        1 => " (the memory snapshot is read on its own: `convert` writes its Memory tables, the \
              page opens it in the Memory view)"
            .to_string(),
        n => format!(
            " (the {n} memory snapshots are read on their own: `convert` writes their Memory \
             tables, the page opens them in the Memory view)"
        ),
    };
    match lone_system_files(inputs) {
        Some(found) => format!(
            "no profile found: {found}: copy the whole capture folder the profiler wrote, or \
             {PICK}{also}"
        ),
        None if snapshots > 0 => format!("no device or system profile found{also}"),
        None => format!("no profile found: {PICK}"),
    }
}

/// Why a pick has no profile, for the CLI's "no profile found …" errors: `(found …)` from
/// [`lone_system_files`], else `(no <what>)`, the kinds of file the command looks for.
pub fn no_profile_why(inputs: &[InputFile], what: &str) -> String {
    lone_system_files(inputs).map_or_else(|| format!("(no {what})"), |found| format!("({found})"))
}

/// For a pick without profiles: the system files in it that make no profile alone (a framework
/// `trace.json`, CPU or host memory samples, without `ntrace.pb` / `trace_info.pb` beside them),
/// as "found …, but no ntrace.pb or trace_info.pb beside it … and no .ntff"; `None` when there
/// are none.
fn lone_system_files(inputs: &[InputFile]) -> Option<String> {
    let named = |k: &FileKind| -> Option<&str> {
        match k {
            FileKind::KinetoTrace => Some("framework trace"),
            FileKind::CpuUtil => Some("CPU samples"),
            FileKind::HostMem => Some("host memory samples"),
            _ => None,
        }
    };
    let found: Vec<String> = inputs
        .iter()
        .filter_map(|f| named(&f.kind).map(|what| format!("{} ({what})", f.path)))
        .collect();
    if found.is_empty() {
        return None;
    }
    let shown = if found.len() > 3 {
        format!("{} and {} more", found[..3].join(", "), found.len() - 3)
    } else {
        found.join(", ")
    };
    Some(format!(
        "found {shown}, but no ntrace.pb or trace_info.pb beside it (a System profile is made \
         from those; a framework trace joins them) and no .ntff"
    ))
}

/// Capture-directory checks (pairing.md §1, §6).
fn capture_checks(
    p: &mut Profile,
    info_dirs: &BTreeSet<String>,
    ntrace_dirs: &BTreeSet<String>,
    ntff_ids_of: &BTreeMap<&str, &Read<NtffIds>>,
) {
    // The profile's id: its folder, "." for the top of the drop.
    let dir = p.id.as_str();
    if !info_dirs.contains(&p.root) {
        p.problems.push(Problem::new(
            Code::MissingTraceInfo,
            Some(dir),
            format!(
                "{dir}: ntrace.pb without trace_info.pb; the system trace is decoded but event \
                 names show as event_<id> (Explorer refuses it: No metadata found for system \
                 profile)"
            ),
        ));
    }
    if !ntrace_dirs.contains(&p.root) {
        p.problems.push(Problem::new(
            Code::MissingNtrace,
            Some(dir),
            format!(
                "{dir}: trace_info.pb without ntrace.pb; the system timeline will be empty \
                 (Explorer needs both files)"
            ),
        ));
    }
    // An NTFF recorded by another process is the same NEFF from a different capture
    // (pairing.md §6): it must not be placed on this capture's timeline.
    let (Some(pid), Some(iid)) = (p.pid, p.instance_id.clone()) else {
        return;
    };
    for d in &p.devices {
        let Some(path) = d.ntff.as_deref() else {
            continue;
        };
        let Some(Read::Ok(ids)) = ntff_ids_of.get(path).copied() else {
            continue;
        };
        let other_pid = ids.process_id.filter(|&x| x != pid);
        let other_host = ids.instance_id.as_deref().filter(|&x| x != iid);
        if other_pid.is_none() && other_host.is_none() {
            continue;
        }
        let by = match (other_host, other_pid) {
            (Some(h), _) => format!("instance {h}"),
            (None, Some(x)) => format!("process {x}"),
            _ => String::new(),
        };
        let this = if other_host.is_some() {
            format!("instance {iid}")
        } else {
            format!("process {pid}")
        };
        p.problems.push(Problem::new(
            Code::DifferentCapture,
            Some(path),
            format!(
                "{path}: recorded by {by} (NTFF header), not by this capture's {this}: same NEFF, \
                 different capture; shown as its own device profile, not on the system timeline"
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Severity;

    #[test]
    fn classify_by_name() {
        let cases: &[(&str, FileKind)] = &[
            ("a/x.neff", FileKind::Neff),
            ("a/X.NEFF", FileKind::Neff),
            ("a/x_exec_2.ntff", FileKind::Ntff),
            ("c/ntrace.pb", FileKind::Ntrace),
            ("c/trace_info.pb", FileKind::TraceInfo),
            ("c/cpu_util.pb", FileKind::CpuUtil),
            ("c/host_mem.pb", FileKind::HostMem),
            ("c/trace.json", FileKind::KinetoTrace),
            ("c/trace.json.gz", FileKind::KinetoTrace),
            (
                "c/neuron_framework_trace_rank_3.json",
                FileKind::KinetoTrace,
            ),
            ("c/host_123.1700000000.pt.trace.json", FileKind::KinetoTrace),
            (
                "c/host_123.1700000000.pt.trace.json.gz",
                FileKind::KinetoTrace,
            ),
            ("c/neuron_framework_trace_rank_x.json", FileKind::Other),
            (
                "c/memory_snapshot_rank2.pickle",
                FileKind::MemorySnapshot { rank: Some(2) },
            ),
            (
                "c/memory_snapshot_rank_0.pickle",
                FileKind::MemorySnapshot { rank: Some(0) },
            ),
            ("c/my_snapshot.pkl", FileKind::MemorySnapshot { rank: None }),
            ("c/weights.pickle", FileKind::Other),
            ("src/kernel.py", FileKind::SourcePy),
            ("source_folder.tar.gz", FileKind::SourceArchive),
            ("src.tgz", FileKind::SourceArchive),
            (
                "json_reports/fused_exec_2_profile_full.json",
                FileKind::ProfilerJsonExport,
            ),
            ("r/x_profile.json", FileKind::ProfilerJsonExport),
            ("r/summary.json", FileKind::Other),
            ("README.md", FileKind::Other),
            ("", FileKind::Other),
        ];
        for (p, k) in cases {
            assert_eq!(&classify(p), k, "{p}");
        }
        assert!(FileKind::MemorySnapshot { rank: None }.is_system());
        assert!(!FileKind::Neff.is_system());
    }

    #[test]
    fn contents_checked_against_names() {
        // A v7 NTFF (unverified layout), an NTFF under another name, a text file named .ntff, a
        // JSON named trace_info.pb, and a weights file that is not read.
        let mut ntff = vec![0u8; 128];
        ntff[0] = 7;
        let info = [0x0a, 2, b'n', b'x'];
        ntff[1..9].copy_from_slice(&(info.len() as u64).to_le_bytes());
        ntff.extend_from_slice(&info);
        let mut v6 = ntff.clone();
        v6[0] = 6;
        let inv = build_mem(&[
            ("d/new.ntff", ntff),
            ("d/trace.bin", v6),
            (
                "d/notes.ntff",
                b"just some notes, not a trace at all; ".repeat(8),
            ),
            ("c/trace_info.pb", b"{\"a\": 1}".to_vec()),
            ("c/ntrace.pb", vec![]),
            ("d/model.pt", vec![0x80, 2, 0, 0]),
        ]);
        let d = &inv.profiles[1];
        let code = |c: &str| d.problems.iter().find(|p| p.code == c).cloned();
        let w = code("NTFF_VERSION_UNVERIFIED").expect("unverified");
        assert_eq!(
            (w.severity, w.file.as_deref()),
            (Severity::Warning, Some("d/new.ntff"))
        );
        assert_eq!(d.devices[0].ntff_version, Some(7));
        let m = code("FILE_MISNAMED").expect("misnamed");
        assert!(
            m.message.contains("d/trace.bin looks like a device trace"),
            "{}",
            m.message
        );
        let PairStatus::Unreadable { message } = &d.devices[1].pairing else {
            panic!("{:?}", d.devices[1]);
        };
        assert!(
            message.starts_with("d/notes.ntff looks like text, not an NTFF"),
            "{message}"
        );
        let c = inv.profiles[0]
            .problems
            .iter()
            .find(|p| p.code == "CONTENT_MISMATCH");
        assert!(
            c.is_some_and(|p| p.message.contains("looks like JSON")),
            "{:?}",
            inv.profiles[0].problems
        );
        let pt = inv.files.iter().find(|f| f.path == "d/model.pt").unwrap();
        assert_eq!(pt.content, None, "weights are not read");
    }

    #[test]
    fn a_framework_trace_that_is_no_json_is_an_error() {
        // Text, protobuf-like bytes (0x0a is whitespace) and blanks, each named trace.json.
        for (bytes, at, found) in [
            (
                &b"garbage [ ]"[..],
                0,
                "found bytes 67 61 72 62 61 67 65 20",
            ),
            (
                &b"\x0a\x03abc\x12\x02[x"[..],
                1,
                "found bytes 03 61 62 63 12 02 5b 78",
            ),
            (&b" \n "[..], 3, "found the end of the file"),
            // Binary after whitespace; a vertical tab (whitespace to Rust, not to JSON).
            (&b"\n\x05{}"[..], 1, "found bytes 05 7b 7d"),
            (&b"\x0b{}"[..], 0, "found bytes 0b 7b 7d"),
        ] {
            let inv = build_mem(&[("k/trace.json", bytes.to_vec())]);
            let all: Vec<&Problem> = inv
                .problems
                .iter()
                .chain(inv.profiles.iter().flat_map(|p| &p.problems))
                .collect();
            let p = all
                .iter()
                .find(|p| p.file.as_deref() == Some("k/trace.json"))
                .unwrap_or_else(|| panic!("{all:#?}"));
            assert_eq!(
                (p.code.as_str(), p.severity, p.offset),
                ("ERROR_PROCESS_INCOMPLETE", Severity::Error, Some(at)),
                "{}",
                p.message
            );
            assert!(
                p.message.contains(&format!(
                    "at offset {at} expected JSON (`{{` or `[`), {found}"
                )),
                "{}",
                p.message
            );
        }
    }

    #[test]
    fn a_framework_trace_is_judged_only_as_far_as_the_head_reaches() {
        // Whitespace past the head, then a valid trace: the reader judges it (a false error
        // once); an empty trace.json is an error at offset 0.
        let mut long = vec![b' '; 2 * crate::sniff::HEAD_LEN];
        long.extend_from_slice(b"{\"traceEvents\": []}");
        for (bytes, error) in [(long, None), (Vec::new(), Some(0))] {
            let inv = build_mem(&[("k/trace.json", bytes)]);
            let about: Vec<&Problem> = inv
                .problems
                .iter()
                .chain(inv.profiles.iter().flat_map(|p| &p.problems))
                .filter(|p| p.file.as_deref() == Some("k/trace.json"))
                .collect();
            assert_eq!(
                about.first().map(|p| (p.severity, p.offset)),
                error.map(|at| (Severity::Error, Some(at))),
                "{about:#?}"
            );
        }
    }

    #[test]
    fn capture_dir_names() {
        assert_eq!(
            parse_capture_dir("out/i-0af76a70a6d3864dd_pid_713479"),
            Some(("i-0af76a70a6d3864dd".into(), 713479))
        );
        for bad in [
            "i-_pid_1",
            "i-xyz_pid_1",
            "i-0a_pid_",
            "i-0a_pid_1x",
            "x-0a_pid_1",
            "run",
        ] {
            assert_eq!(parse_capture_dir(bad), None, "{bad}");
        }
        assert_eq!(normalise("./a\\b//c.ntff"), "a/b/c.ntff");
        assert_eq!(normalise("/x.neff"), "x.neff");
        assert!(under("a/b/c", "a") && under("a/b", "") && !under("ab/c", "a"));
    }

    /// In-memory drop: files with contents; `open` serves them.
    fn build_mem(files: &[(&str, Vec<u8>)]) -> Inventory {
        let list: Vec<(String, u64)> = files
            .iter()
            .map(|(p, v)| (p.to_string(), v.len() as u64))
            .collect();
        let table: BTreeMap<String, Vec<u8>> = files
            .iter()
            .map(|(p, v)| (normalise(p), v.clone()))
            .collect();
        let open = move |p: &str| -> Result<Box<dyn ByteSource>> {
            Ok(Box::new(table.get(p).cloned().unwrap_or_default()))
        };
        build(&list, &open)
    }

    #[test]
    fn grouping() {
        let inv = build_mem(&[
            // PyTorch layout: timestamped sub-directory of the pid directory.
            ("out/i-0abc_pid_42/2026_01_01/trace_info.pb", vec![]),
            ("out/i-0abc_pid_42/2026_01_01/ntrace.pb", vec![]),
            ("out/i-0abc_pid_42/2026_01_01/trace.json", vec![]),
            (
                "out/i-0abc_pid_42/2026_01_01/profile_nc_0_session_0.ntff",
                vec![],
            ),
            ("out/i-0abc_pid_42/2026_01_01/src/model.py", vec![]),
            // Device-only directory with an empty NTFF and a JSON export named after it.
            ("dev/k_rank_1_exec_3.ntff", vec![0; 10]),
            ("dev/k_rank_1_exec_3.json", vec![]),
            ("dev/notes/readme.txt", vec![]),
            // Loose files outside any profile.
            ("README.md", vec![]),
        ]);
        assert_eq!(inv.profiles.len(), 2, "{:#?}", inv.profiles);
        let dev = &inv.profiles[0];
        assert_eq!(
            (dev.id.as_str(), dev.profile_type),
            ("dev", ProfileType::Device)
        );
        let d = &dev.devices[0];
        assert_eq!(d.pairing, PairStatus::EmptyNtff);
        assert_eq!(
            (d.rank, d.exec, d.name.as_str()),
            (Some(1), Some(3), "k_rank_1_exec_3")
        );
        assert_eq!(
            dev.other_files,
            ["dev/k_rank_1_exec_3.json", "dev/notes/readme.txt"]
        );
        assert_eq!(dev.problems[0].code, "EMPTY_NTFF");
        let cap = &inv.profiles[1];
        assert_eq!(cap.profile_type, ProfileType::SystemDevice);
        assert_eq!(cap.root, "out/i-0abc_pid_42/2026_01_01");
        assert_eq!(
            (cap.instance_id.as_deref(), cap.pid),
            (Some("i-0abc"), Some(42))
        );
        assert_eq!(cap.system_files.len(), 3);
        assert_eq!(
            cap.other_files,
            ["out/i-0abc_pid_42/2026_01_01/src/model.py"]
        );
        let d = &cap.devices[0];
        assert_eq!((d.nc, d.session), (Some(0), Some(0)));
        let export = inv
            .files
            .iter()
            .find(|f| f.path == "dev/k_rank_1_exec_3.json");
        assert_eq!(export.map(|f| &f.kind), Some(&FileKind::ProfilerJsonExport));
        let readme = inv.files.iter().find(|f| f.path == "README.md").unwrap();
        assert_eq!(readme.profile, None);
        assert!(inv.problems.is_empty());
        // Nothing usable → one Info problem.
        let inv = build_mem(&[("a.txt", vec![1])]);
        assert_eq!(inv.problems[0].code, "NO_PROFILE");
        let json = serde_json::to_value(&inv.files[0]).unwrap();
        assert_eq!(json["kind"], "Other");
        let snap = InputFile {
            path: "m".into(),
            size: 1,
            kind: FileKind::MemorySnapshot { rank: Some(1) },
            profile: None,
            content: None,
        };
        let json = serde_json::to_value(&snap).unwrap();
        assert_eq!(
            (json["kind"].as_str(), json["rank"].as_u64()),
            (Some("MemorySnapshot"), Some(1))
        );
    }
}
