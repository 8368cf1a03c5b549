//! NEFF decoder (docs/format/neff.md): header, streamed gzip+tar payload, kelf → def.json walk, and the
//! NEFF tables (`NeffHeader`, `TensorInfo`, `DmaQueuesInfo`).
//!
//! [`open`] reads the 1024-byte header (§2), sniffs gzip vs raw tar (§3.1), inflates the payload
//! in bounded chunks and walks the tar stream once (§3.2), indexing every member (name → size)
//! while buffering only the JSON manifests it needs and, for the per-engine instruction streams,
//! the slot count and byte 0 of each 64-byte slot (§7). It then resolves `info.json`, the
//! `kelf-*.json` files (through `neff.json` `__kelf` nodes), each subgraph's `def.json` and
//! `tensor_map.json` (§5, §6). Weights (`*.npy`) are never buffered.
//!
//! Robustness (§12): optional members may be missing; missing required members (header, a kelf
//! file, a `def.json`) are an [`Error`]; the hash is checked but never rejects a file.

pub mod archive;
pub mod debug;
pub mod header;
pub mod tables;
pub mod write;

use std::collections::BTreeMap;

use serde_json::Value;

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::source::ByteSource;

pub use archive::{Member, PayloadKind};
pub use header::{parse_header, read_header, NeffHeader, HEADER_LEN};
pub use tables::{write_dma_queues_info, write_neff_header, write_tables, write_tensor_info};

/// Default cap on one buffered member (bytes): JSON manifests above this are listed, not read.
pub const MEMBER_CAP: u64 = 256 << 20;
/// Default cap on opcode bytes kept in the first pass (one byte per 64-byte slot, all `.bin`
/// members together); streams over budget are fetched by a second, targeted pass.
const OPCODE_BUDGET: u64 = 64 << 20;

/// Result of the optional payload hash check (neff.md §2.2). Never a reason to reject a file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub enum HashCheck {
    /// The stored hash equals the MD5 of the payload as is (compilers 2.0, 2.16).
    Canonical,
    /// The stored hash equals the MD5 with each 4-byte word reversed (compilers 2.18 – 2.23).
    WordSwapped,
    /// Not verified; the text says why (not requested, SHA-256 package, mismatch with the
    /// computed digest, unreadable payload).
    Unverified(String),
}

/// One engine's instruction stream in a subgraph (neff.md §7; names resolved via `def.json`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct EngineStream {
    /// The engine (def.json key pe/act/pool/dve/sp).
    pub engine: Engine,
    /// Member path of the stream (`def.json` `<key>_instr`, relative names joined to the
    /// subgraph directory), e.g. `sg00/PE.bin`.
    pub file: String,
    /// Member path of the engine JSON (`def.json` `<key>`), e.g. `sg00/PE.json`, if named.
    pub json: Option<String>,
    /// Stream size in bytes.
    pub size: u64,
    /// Number of 64-byte slots (= instructions; slot k is compiler pc k). `size / 64`.
    pub slot_count: u64,
    /// Byte 0 (opcode) of each slot, `slot_count` entries (empty if the stream was not read).
    #[serde(skip)]
    pub opcodes: Vec<u8>,
    /// BIR-level debug files (`<key>_dbg`), member paths.
    pub dbg: Vec<String>,
    /// Slot-level debug files (`<key>_asm_dbg`), member paths.
    pub asm_dbg: Vec<String>,
}

/// One `def.json` `var` entry (neff.md §6.4): a tensor or buffer of the subgraph.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct Var {
    /// Variable name (the `var` key), e.g. `input0`, `identity_56_sg0000`.
    pub name: String,
    /// `type`: input, output, file, virtual, state-buffer, dge-table, tmp-buf, pointer, …
    pub kind: String,
    /// `var_id`.
    pub var_id: Option<u64>,
    /// `size` in bytes (absent on state-buffer); may exceed 2³² (nkipy `matmul_large.neff`).
    pub size: Option<u64>,
    /// `file_name` for `file` vars: member name relative to the subgraph directory.
    pub file_name: Option<String>,
    /// `backing_variable_off` (bytes) for `virtual` vars.
    pub backing_variable_off: Option<u64>,
}

/// One `def.json` `dma_queue` entry (neff.md §6.4).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct DmaQueue {
    /// Queue-set name as spelled in the NEFF, e.g. `qSPDynamicHW`.
    pub name: String,
    /// `type`: in, data, dynamic (documented also out, embedding_update).
    pub kind: String,
    /// `owner`: triggering engine key (sp, pool, act, dve).
    pub owner: Option<String>,
    /// `num_queues`: hardware queues reserved.
    pub num_queues: Option<u64>,
    /// `semaphore_set`: completion semaphore ids, one per queue.
    pub semaphore_set: Vec<u64>,
}

impl DmaQueue {
    /// The queue name as Neuron Explorer shows it (see [`explorer_queue_name`]).
    pub fn explorer_name(&self) -> String {
        explorer_queue_name(&self.name)
    }
}

/// Renames a NEFF queue name the way Neuron Explorer exports it: engine prefix `qAct…` →
/// `qScalar…`, `qPool…` → `qGpSimd…`, `qSP…` → `qSync…` (ntff.md §3.3.2; confirmed on every
/// `S[n] (queue)` semaphore id of the 7 allenkchau exports). Other names are kept as they are:
/// no export shows a renamed `qDVE…` queue (the runtime's own `qDveTable` is not renamed).
pub fn explorer_queue_name(name: &str) -> String {
    for (from, to) in [("qAct", "qScalar"), ("qPool", "qGpSimd"), ("qSP", "qSync")] {
        if let Some(rest) = name.strip_prefix(from) {
            return format!("{to}{rest}");
        }
    }
    name.to_string()
}

/// One `tensor_map.json` entry (neff.md §6.6).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct TensorMapEntry {
    /// Tensor name (the key), e.g. `k_ref`, `sg0000_identity_56_CRSM`.
    pub name: String,
    /// `kind`: input / output; absent for constants.
    pub kind: Option<String>,
    /// `is_const`.
    pub is_const: Option<bool>,
    /// `dtype`, e.g. bfloat16.
    pub dtype: Option<String>,
    /// `layer_name`.
    pub layer_name: Option<String>,
    /// `tf_format`: framework layout letters (N, NC, NHWC, CRSM, …).
    pub tf_format: Option<String>,
    /// `sim_format`: compiler layout letters.
    pub sim_format: Option<String>,
    /// `tf_shape`: framework shape.
    pub tf_shape: Vec<i64>,
    /// `sim_shape`: compiler shape.
    pub sim_shape: Vec<i64>,
    /// `tf_file`: `value_<name>.npy`; joins constants to `var.file_name`.
    pub tf_file: Option<String>,
}

/// One subgraph = one physical NeuronCore of the logical core (`kelf.graphs[]` entry).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct NeffSubgraph {
    /// Graph name, e.g. `sg00`.
    pub name: String,
    /// Position in `kelf.graphs[]` = physical core within the LNC (0 or 1 under LNC=2).
    pub pcore_idx: u32,
    /// The kelf member that lists this graph, e.g. `kelf-0.json`.
    pub kelf: String,
    /// Index of the `neff.json` `__kelf` node naming that kelf (Explorer's `TensorInfo.node`).
    pub node: Option<u64>,
    /// Member path of the definition, e.g. `sg00/def.json`.
    pub definition: String,
    /// Directory the definition's relative names resolve against (`sg00`; empty at top level).
    pub dir: String,
    /// Instruction streams, in [`Engine`] (NTFF) order PE, ACT, POOL, DVE, SP; engines whose
    /// stream is not named or not present are left out (with a warning).
    pub engines: Vec<EngineStream>,
    /// `def.json` `var`, in key order.
    pub vars: Vec<Var>,
    /// `def.json` `dma_queue`, in key order.
    pub dma_queues: Vec<DmaQueue>,
    /// `tensor_map.json` entries in key order (empty when the member is missing).
    pub tensors: Vec<TensorMapEntry>,
    /// `def.json` `neff_features`, e.g. `neff_feature_vnc`.
    pub neff_features: Vec<String>,
    /// `def.json` `dma_dbg` (DMA block debug files), member paths.
    pub dma_dbg: Vec<String>,
}

impl NeffSubgraph {
    /// Semaphore id → DMA queue name as Explorer shows it (ntff.md §4.3): every id in a queue's
    /// `semaphore_set`, named with [`explorer_queue_name`]. The export writes these as
    /// `S[<id>] (<name>)`. Ids 3 – 6 (GpSimd, Scalar, Tensor, Vector) come from the runtime, not
    /// the NEFF, and are not included. When two queues list the same id, the first (key order)
    /// wins.
    pub fn semaphore_names(&self) -> BTreeMap<u32, String> {
        let mut m = BTreeMap::new();
        for q in &self.dma_queues {
            let name = q.explorer_name();
            for &s in &q.semaphore_set {
                if let Ok(s) = u32::try_from(s) {
                    m.entry(s).or_insert_with(|| name.clone());
                }
            }
        }
        m
    }
    /// The stream of `engine`, if the subgraph has one.
    pub fn engine(&self, engine: Engine) -> Option<&EngineStream> {
        self.engines.iter().find(|e| e.engine == engine)
    }
}

/// A decoded NEFF: header, compiler/target, subgraphs and the member index.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Neff {
    /// The 1024-byte header (§2).
    pub header: NeffHeader,
    /// gzip or raw tar (§3.1).
    pub payload: PayloadKind,
    /// `info.json` `tool_version`, e.g. `2.23.6484.0+3b612583` (→ `Metadata.compiler_version`).
    pub compiler_version: Option<String>,
    /// First kelf's `target`: `sunda` (trn1/inf2), `cayman` (trn2), …
    pub target: Option<String>,
    /// kelf members used, in resolution order.
    pub kelf_files: Vec<String>,
    /// All subgraphs of all kelf files, in kelf then `graphs[]` order.
    pub subgraphs: Vec<NeffSubgraph>,
    /// Every regular tar member (name, size, offset), in archive order (last duplicate wins).
    pub members: Vec<Member>,
    /// Uncompressed tar bytes walked.
    pub tar_size: u64,
    /// Absolute file offset just past the gzip member (gzip payloads that end cleanly); the
    /// bytes from here to `header_size + data_size` are padding (zero in every sample).
    pub gzip_end: Option<u64>,
    /// Payload hash check (§2.2).
    pub hash_check: HashCheck,
    /// Non-fatal findings (missing optional members, clamped sizes, odd streams, …).
    pub warnings: Vec<String>,
    /// Members buffered on request ([`OpenOptions::keep`]), by member path.
    #[serde(skip)]
    pub kept: BTreeMap<String, Vec<u8>>,
}

impl Neff {
    /// The member named `name`, if the archive has it.
    pub fn member(&self, name: &str) -> Option<&Member> {
        self.members.iter().find(|m| m.name == name)
    }
    /// The subgraph named `name` (e.g. `sg01`).
    pub fn subgraph(&self, name: &str) -> Option<&NeffSubgraph> {
        self.subgraphs.iter().find(|s| s.name == name)
    }
}

/// Options for [`open_with`].
#[derive(Clone)]
pub struct OpenOptions {
    /// Compute the payload MD5 and compare it with the stored hash (default true). Costs one
    /// extra MD5 pass over the compressed bytes read anyway.
    pub verify_hash: bool,
    /// Cap on one buffered member, bytes (default [`MEMBER_CAP`]).
    pub member_cap: u64,
    /// Extra members to buffer into [`Neff::kept`] (e.g. `|n| n.ends_with(".dbg")`).
    pub keep: Option<fn(&str) -> bool>,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            verify_hash: true,
            member_cap: MEMBER_CAP,
            keep: None,
        }
    }
}

/// Opens a NEFF with default [`OpenOptions`]. See [`open_with`].
pub fn open<S: ByteSource + ?Sized>(src: &S) -> Result<Neff> {
    open_with(src, &OpenOptions::default())
}

fn is_first_pass_json(name: &str) -> bool {
    let base = name.rsplit('/').next().unwrap_or(name);
    name == "info.json"
        || name == "neff.json"
        || (base.starts_with("kelf-") && base.ends_with(".json"))
        || base == "def.json"
        || base == "tensor_map.json"
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// Opens a NEFF: header, payload walk, manifests (docs/format/neff.md §5).
///
/// Errors: [`Error::Truncated`] / [`Error::Format`] for a bad header (§2.4 checks 1–3), a
/// payload that is neither gzip nor tar, a missing or unparsable kelf or `def.json`. A fault in
/// the middle of the payload (truncated or corrupt gzip/tar) is an error only if it hides a
/// required member; otherwise it becomes a warning and what was walked is kept.
pub fn open_with<S: ByteSource + ?Sized>(src: &S, opts: &OpenOptions) -> Result<Neff> {
    let header = parse_header(src)?;
    let mut warnings = Vec::new();
    if header.header_size != HEADER_LEN as u64 {
        warnings.push(format!(
            "header_size is {} (1024 in every known NEFF); using it as the payload offset",
            header.header_size
        ));
    }
    if header.major_version > 2 {
        warnings.push(format!(
            "NEFF major version {} is newer than any sample (≤ 2)",
            header.major_version
        ));
    }
    let start = header.header_size;
    let declared_end = start.saturating_add(header.data_size);
    let end = declared_end.min(src.len());
    if declared_end > src.len() {
        warnings.push(format!(
            "data_size {} runs {} bytes past the end of the file; payload clamped",
            header.data_size,
            declared_end - src.len()
        ));
    } else if declared_end < src.len() {
        warnings.push(format!(
            "{} bytes after header_size + data_size ignored",
            src.len() - declared_end
        ));
    }
    let payload = archive::sniff(src, start, end)?;

    // Pass 1: index everything, buffer manifests, keep opcodes of `.bin` streams.
    let keep = opts.keep;
    let mut budget = OPCODE_BUDGET;
    let mut want = |name: &str, size: u64| {
        if is_first_pass_json(name) || keep.is_some_and(|k| k(name)) {
            archive::Want::Buffer
        } else if name.ends_with(".bin") && size / 64 <= budget {
            budget -= size / 64;
            archive::Want::Opcodes
        } else {
            archive::Want::Skip
        }
    };
    let hash = opts.verify_hash && header.pkg_version == 2;
    let mut scan = archive::scan(src, start, end, payload, hash, opts.member_cap, &mut want);
    warnings.append(&mut scan.warnings);
    if scan.nonzero_after_gzip > 0 {
        warnings.push(format!(
            "{} non-zero bytes follow the gzip member (expected zero padding; ignored)",
            scan.nonzero_after_gzip
        ));
    }
    let fault = scan.fault.take();
    if let Some(f) = &fault {
        warnings.push(format!("payload walk stopped early: {f}"));
    }

    let hash_check = if !opts.verify_hash {
        HashCheck::Unverified("not requested".into())
    } else if header.pkg_version != 2 {
        HashCheck::Unverified(format!(
            "pkg_version {} (SHA-256) is not verified",
            header.pkg_version
        ))
    } else {
        match scan.md5 {
            None => HashCheck::Unverified("payload could not be read".into()),
            Some(d) => {
                let stored = &header.hash[..16];
                let mut swapped = [0u8; 16];
                for (o, w) in swapped.chunks_mut(4).zip(d.chunks(4)) {
                    for (a, b) in o.iter_mut().zip(w.iter().rev()) {
                        *a = *b;
                    }
                }
                if stored == d {
                    HashCheck::Canonical
                } else if stored == swapped {
                    HashCheck::WordSwapped
                } else {
                    HashCheck::Unverified(format!(
                        "MD5 {} matches the stored hash {} in neither byte order",
                        crate::util::hex(&d),
                        header.hash_hex()
                    ))
                }
            }
        }
    };

    let mut neff = Neff {
        header,
        payload,
        compiler_version: None,
        target: None,
        kelf_files: Vec::new(),
        subgraphs: Vec::new(),
        members: std::mem::take(&mut scan.members),
        tar_size: scan.tar_bytes,
        gzip_end: scan.gzip_end,
        hash_check,
        warnings,
        kept: BTreeMap::new(),
    };
    let mut bufs = std::mem::take(&mut scan.buffers);
    let mut streams = std::mem::take(&mut scan.streams);
    let fault_note = |what: &str| match &fault {
        Some(f) => format!("{what} (the payload walk stopped early: {f})"),
        None => what.to_string(),
    };

    // info.json (§6.1).
    match bufs
        .get("info.json")
        .map(|b| serde_json::from_slice::<Value>(b))
    {
        Some(Ok(v)) => neff.compiler_version = str_of(&v, "tool_version"),
        Some(Err(e)) => neff.warnings.push(format!("info.json is not JSON: {e}")),
        None => neff.warnings.push("info.json missing".into()),
    }

    // kelf files (§5 step 4): neff.json `__kelf` nodes, else any kelf-*.json.
    let mut kelfs: Vec<(String, Option<u64>)> = Vec::new();
    match bufs
        .get("neff.json")
        .map(|b| serde_json::from_slice::<Value>(b))
    {
        Some(Ok(v)) => {
            if let Some(nodes) = v.get("nodes").and_then(Value::as_array) {
                for (i, n) in nodes.iter().enumerate() {
                    let attrs = n.get("attrs");
                    let func = attrs.and_then(|a| str_of(a, "func_name"));
                    let kelf = attrs.and_then(|a| str_of(a, "kelf"));
                    if func.as_deref() == Some("__kelf") {
                        if let Some(k) = kelf {
                            if !kelfs.iter().any(|(n, _)| *n == k) {
                                kelfs.push((k, Some(i as u64)));
                            }
                        }
                    }
                }
            }
        }
        Some(Err(e)) => neff.warnings.push(format!("neff.json is not JSON: {e}")),
        None => neff.warnings.push("neff.json missing".into()),
    }
    kelfs.retain(|(k, _)| {
        let ok = neff.member(k).is_some();
        if !ok {
            neff.warnings
                .push(format!("neff.json names {k}, which is not a member"));
        }
        ok
    });
    if kelfs.is_empty() {
        for m in &neff.members {
            if !m.name.contains('/') && m.name.starts_with("kelf-") && m.name.ends_with(".json") {
                kelfs.push((m.name.clone(), None));
            }
        }
    }
    if kelfs.is_empty() {
        return Err(Error::format(
            start,
            "a kelf-*.json member (neff.md §5)",
            fault_note("none in the archive"),
        ));
    }

    // Pass 2 (rare): fetch manifests the first pass did not buffer (unusual names).
    let mut missing: Vec<String> = kelfs
        .iter()
        .map(|(k, _)| k.clone())
        .filter(|k| !bufs.contains_key(k))
        .collect();
    fetch(
        src,
        &neff,
        payload,
        opts,
        &mut missing,
        &mut bufs,
        &mut streams,
    );

    let mut graphs: Vec<(String, Option<u64>, String, String, u32)> = Vec::new();
    for (kelf, node) in &kelfs {
        let v: Value = match bufs.get(kelf).map(|b| serde_json::from_slice(b)) {
            Some(Ok(v)) => v,
            Some(Err(e)) => {
                return Err(Error::format(
                    start,
                    format!("{kelf} as JSON"),
                    e.to_string(),
                ))
            }
            None => {
                return Err(Error::format(
                    start,
                    format!("{kelf} readable (under the member cap)"),
                    fault_note("not buffered"),
                ))
            }
        };
        neff.kelf_files.push(kelf.clone());
        if neff.target.is_none() {
            neff.target = str_of(&v, "target");
        }
        let list = v.get("graphs").and_then(Value::as_array);
        if list.is_none_or(|l| l.is_empty()) {
            neff.warnings.push(format!("{kelf} lists no graphs"));
        }
        for (i, g) in list.into_iter().flatten().enumerate() {
            let def = str_of(g, "definition").unwrap_or_default();
            let name = str_of(g, "name").unwrap_or_else(|| format!("sg{i:02}"));
            graphs.push((kelf.clone(), *node, name, def, i as u32));
        }
    }

    // def.json and tensor_map.json of each graph (pass 2 for unusual names).
    let mut need = Vec::new();
    for (_, _, _, def, _) in &graphs {
        let dir = def.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
        for n in [def.clone(), join(dir, "tensor_map.json")] {
            if !bufs.contains_key(&n) && neff.member(&n).is_some() {
                need.push(n);
            }
        }
    }
    fetch(
        src,
        &neff,
        payload,
        opts,
        &mut need,
        &mut bufs,
        &mut streams,
    );

    for (kelf, node, name, def, pcore) in graphs {
        let dir = def
            .rsplit_once('/')
            .map(|(d, _)| d)
            .unwrap_or("")
            .to_string();
        let v: Value = match bufs.get(&def).map(|b| serde_json::from_slice(b)) {
            Some(Ok(v)) => v,
            Some(Err(e)) => {
                return Err(Error::format(
                    start,
                    format!("{def} as JSON"),
                    e.to_string(),
                ))
            }
            None => {
                let why = if neff.member(&def).is_some() {
                    "present but not buffered (over the member cap)"
                } else {
                    "missing"
                };
                return Err(Error::format(
                    start,
                    format!("subgraph definition {def} named by {kelf}"),
                    fault_note(why),
                ));
            }
        };
        let mut sg = NeffSubgraph {
            name,
            pcore_idx: pcore,
            kelf,
            node,
            definition: def.clone(),
            dir: dir.clone(),
            ..Default::default()
        };
        sg.neff_features = str_list(v.get("neff_features"));
        sg.dma_dbg = str_list(v.get("dma_dbg"))
            .iter()
            .map(|n| join(&dir, n))
            .collect();
        if let Some(vars) = v.get("var").and_then(Value::as_object) {
            for (k, x) in vars {
                sg.vars.push(Var {
                    name: k.clone(),
                    kind: str_of(x, "type").unwrap_or_default(),
                    var_id: u64_of(x.get("var_id")),
                    size: u64_of(x.get("size")),
                    file_name: str_of(x, "file_name"),
                    backing_variable_off: u64_of(x.get("backing_variable_off")),
                });
            }
        }
        if let Some(qs) = v.get("dma_queue").and_then(Value::as_object) {
            for (k, x) in qs {
                sg.dma_queues.push(DmaQueue {
                    name: k.clone(),
                    kind: str_of(x, "type").unwrap_or_default(),
                    owner: str_of(x, "owner"),
                    num_queues: u64_of(x.get("num_queues")),
                    semaphore_set: x
                        .get("semaphore_set")
                        .and_then(Value::as_array)
                        .map(|a| a.iter().filter_map(|s| u64_of(Some(s))).collect())
                        .unwrap_or_default(),
                });
            }
        }
        for engine in Engine::ALL {
            let key = engine.def_key();
            let Some(file) = str_of(&v, &format!("{key}_instr")) else {
                neff.warnings.push(format!(
                    "{def}: no {key}_instr, engine {} has no stream",
                    engine.short_name()
                ));
                continue;
            };
            let file = join(&dir, &file);
            let Some(size) = neff.member(&file).map(|m| m.size) else {
                neff.warnings
                    .push(format!("{def}: engine stream {file} is not a member"));
                continue;
            };
            if size % 64 != 0 {
                neff.warnings.push(format!(
                    "{file}: {size} bytes is not a whole number of 64-byte slots"
                ));
            }
            sg.engines.push(EngineStream {
                engine,
                file,
                json: str_of(&v, key).map(|n| join(&dir, &n)),
                size,
                slot_count: size / 64,
                opcodes: Vec::new(),
                dbg: str_list(v.get(format!("{key}_dbg").as_str()))
                    .iter()
                    .map(|n| join(&dir, n))
                    .collect(),
                asm_dbg: str_list(v.get(format!("{key}_asm_dbg").as_str()))
                    .iter()
                    .map(|n| join(&dir, n))
                    .collect(),
            });
        }
        let tm = join(&dir, "tensor_map.json");
        match bufs.get(&tm).map(|b| serde_json::from_slice::<Value>(b)) {
            Some(Ok(Value::Object(map))) => {
                for (k, x) in map {
                    sg.tensors.push(TensorMapEntry {
                        name: k,
                        kind: str_of(&x, "kind"),
                        is_const: x.get("is_const").and_then(Value::as_bool),
                        dtype: str_of(&x, "dtype"),
                        layer_name: str_of(&x, "layer_name"),
                        tf_format: str_of(&x, "tf_format"),
                        sim_format: str_of(&x, "sim_format"),
                        tf_shape: i64_list(x.get("tf_shape")),
                        sim_shape: i64_list(x.get("sim_shape")),
                        tf_file: str_of(&x, "tf_file"),
                    });
                }
            }
            Some(Ok(_)) => neff.warnings.push(format!("{tm} is not a JSON object")),
            Some(Err(e)) => neff.warnings.push(format!("{tm} is not JSON: {e}")),
            None => neff.warnings.push(format!("{tm} missing")),
        }
        neff.subgraphs.push(sg);
    }

    // Opcodes: streams the first pass skipped (over budget) get a targeted second pass.
    let mut need: Vec<String> = neff
        .subgraphs
        .iter()
        .flat_map(|s| s.engines.iter())
        .filter(|e| !streams.contains_key(&e.file))
        .map(|e| e.file.clone())
        .collect();
    fetch(
        src,
        &neff,
        payload,
        opts,
        &mut need,
        &mut bufs,
        &mut streams,
    );
    for sg in &mut neff.subgraphs {
        for e in &mut sg.engines {
            match streams.get(&e.file) {
                Some(s) => e.opcodes.clone_from(&s.opcodes),
                None => neff
                    .warnings
                    .push(format!("{}: instruction stream not read", e.file)),
            }
        }
    }
    if let Some(k) = keep {
        neff.kept = bufs.into_iter().filter(|(n, _)| k(n)).collect();
    }
    Ok(neff)
}

/// Second pass over the payload for `names` (manifests or streams the first pass did not keep).
fn fetch<S: ByteSource + ?Sized>(
    src: &S,
    neff: &Neff,
    payload: PayloadKind,
    opts: &OpenOptions,
    names: &mut Vec<String>,
    bufs: &mut BTreeMap<String, Vec<u8>>,
    streams: &mut BTreeMap<String, archive::Slots>,
) {
    names.retain(|n| neff.member(n).is_some());
    if names.is_empty() {
        return;
    }
    let start = neff.header.header_size;
    let end = start.saturating_add(neff.header.data_size).min(src.len());
    let mut want = |name: &str, _size: u64| {
        if !names.iter().any(|n| n == name) {
            archive::Want::Skip
        } else if name.ends_with(".bin") {
            archive::Want::Opcodes
        } else {
            archive::Want::Buffer
        }
    };
    let mut s = archive::scan(src, start, end, payload, false, opts.member_cap, &mut want);
    bufs.append(&mut s.buffers);
    streams.append(&mut s.streams);
    names.clear();
}

/// Reads one member's bytes with an extra pass over the payload (e.g. a `.dbg` file), up to
/// `cap` bytes. Errors: the member is missing or larger than `cap`, or the walk faulted first.
pub fn read_member<S: ByteSource + ?Sized>(
    src: &S,
    neff: &Neff,
    name: &str,
    cap: u64,
) -> Result<Vec<u8>> {
    let start = neff.header.header_size;
    let end = start.saturating_add(neff.header.data_size).min(src.len());
    let Some(m) = neff.member(name) else {
        return Err(Error::Other(format!("NEFF has no member {name}")));
    };
    if m.size > cap {
        return Err(Error::Other(format!(
            "NEFF member {name} is {} bytes, over the {cap}-byte cap",
            m.size
        )));
    }
    let mut want = |n: &str, _| {
        if n == name {
            archive::Want::Buffer
        } else {
            archive::Want::Skip
        }
    };
    let mut s = archive::scan(src, start, end, neff.payload, false, cap, &mut want);
    match s.buffers.remove(name) {
        Some(b) => Ok(b),
        None => Err(s
            .fault
            .unwrap_or_else(|| Error::Other(format!("NEFF member {name} could not be read")))),
    }
}

/// A JSON number as u64: unsigned, non-negative signed, integral float below 2⁶⁴, or a decimal
/// string (neff.json `attrs` carry numbers as strings).
fn u64_of(v: Option<&Value>) -> Option<u64> {
    match v? {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 1.8446744073709552e19)
                .map(|f| f as u64)
        }),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn str_of(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

/// A string or an array of strings as a list (other values → empty).
fn str_list(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|x| x.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

fn i64_list(v: Option<&Value>) -> Vec<i64> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_i64().or_else(|| x.as_f64().map(|f| f as i64)))
                .collect()
        })
        .unwrap_or_default()
}
