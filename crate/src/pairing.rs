//! NEFF ↔ NTFF pairing (docs/format/pairing.md §2, §4, §5): file-name hints, a cheap NTFF id
//! extractor, the uuid match rule with its C-string caveat, and tie-breaking.
//!
//! Content decides, names only hint: an NTFF pairs with a NEFF when the NEFF header uuid
//! (offset 0x0CC) matches the NTFF's uuid copy ([`uuid_match`]). File names
//! ([`parse_ntff_name`], [`parse_neff_name`]) break ties and point at the NEFF a user probably
//! meant when no uuid matches, which turns "missing" into "mismatch" ([`PairStatus::UuidMismatch`]).
//! The whole decision for a drop is [`pair_all`]; [`crate::inventory::build`] feeds it.

use crate::error::{Code, Error, Problem, Result};
use crate::pb;
use crate::source::ByteSource;
use crate::util::hex;

// ---------------------------------------------------------------------------------------------
// File-name hints (pairing.md §2)
// ---------------------------------------------------------------------------------------------

/// What a NEFF or NTFF file name says about the capture (pairing.md §2). Every field is a hint:
/// names can be renamed, content (the uuid) decides.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct NameHints {
    /// File name without directory and without the `.ntff` / `.neff` extension, with the
    /// `_exec_<N>` / `_rank_<R>` suffixes removed (e.g. `fused` for `fused_exec_2.ntff`).
    pub stem: String,
    /// Runtime model id `<h>` from `neff_<h>[_vnc_<n>].neff`, `<h>_instid_<i>_vnc_<n>.ntff` or
    /// `<h>_vnc_<n>.ntff`.
    pub model_id: Option<u64>,
    /// Instance index `<i>` from `<h>_instid_<i>_vnc_<n>.ntff`.
    pub instance: Option<u32>,
    /// NeuronCore index from `_vnc_<n>` or `profile_nc_<n>_session_<k>.ntff`.
    pub nc: Option<u32>,
    /// Session id `<k>` from `profile_nc_<n>_session_<k>.ntff` (session mode: one NTFF per core,
    /// not 1:1 with NEFFs).
    pub session: Option<u32>,
    /// Execution number from `_exec_<N>` (`neuron-explorer capture --profile-nth-exec=N`).
    pub exec: Option<u32>,
    /// Collectives rank from `_rank_<R>`.
    pub rank: Option<u32>,
}

/// The last path component of a `/`-separated path.
pub fn base_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The directory part of a `/`-separated path (`""` for a file at the top).
pub fn dir_name(path: &str) -> &str {
    match path.rfind('/') {
        Some(i) => &path[..i],
        None => "",
    }
}

/// Strips a case-insensitive extension (with its dot) from `name`.
fn strip_ext<'a>(name: &'a str, ext: &str) -> &'a str {
    let n = name.len();
    if n > ext.len() && name.is_char_boundary(n - ext.len()) {
        let (head, tail) = name.split_at(n - ext.len());
        if tail.eq_ignore_ascii_case(ext) {
            return head;
        }
    }
    name
}

/// `s` parsed as a decimal number when it is a non-empty run of ASCII digits.
fn digits<T: std::str::FromStr>(s: &str) -> Option<T> {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        s.parse().ok()
    } else {
        None
    }
}

/// Splits `s` at the last occurrence of `tag` followed only by digits: `("x", 2)` for
/// `("x_exec_2", "_exec_")`. The head must be non-empty.
fn split_num_suffix<'a>(s: &'a str, tag: &str) -> Option<(&'a str, u32)> {
    let i = s.rfind(tag)?;
    let n = digits(&s[i + tag.len()..])?;
    (i > 0).then_some((&s[..i], n))
}

/// Parses an NTFF file name (pairing.md §2). Accepts a path; only the last component is used.
///
/// Patterns, tried in order (anything else → stem only):
/// - `profile_nc_<n>_session_<k>.ntff` → `nc`, `session` (session mode);
/// - `<h>_instid_<i>_vnc_<n>.ntff` → `model_id`, `instance`, `nc` (runtime inspect, model mode);
/// - `<h>_vnc_<n>.ntff` → `model_id`, `nc` (older runtimes);
/// - `<out>[_rank_<R>][_exec_<N>].ntff`, both suffix orders → `stem` = `<out>`, `rank`, `exec`.
pub fn parse_ntff_name(path: &str) -> NameHints {
    let s = strip_ext(base_name(path), ".ntff");
    let mut h = NameHints {
        stem: s.to_string(),
        ..NameHints::default()
    };
    if let Some(rest) = s.strip_prefix("profile_nc_") {
        if let Some((nc, sess)) = rest.split_once("_session_") {
            if let (Some(nc), Some(sess)) = (digits(nc), digits(sess)) {
                h.nc = Some(nc);
                h.session = Some(sess);
                return h;
            }
        }
    }
    if let Some((model, rest)) = s.split_once("_instid_") {
        if let Some((inst, nc)) = rest.split_once("_vnc_") {
            if let (Some(m), Some(i), Some(n)) = (digits(model), digits(inst), digits(nc)) {
                h.model_id = Some(m);
                h.instance = Some(i);
                h.nc = Some(n);
                return h;
            }
        }
    }
    if let Some((model, nc)) = s.split_once("_vnc_") {
        if let (Some(m), Some(n)) = (digits(model), digits(nc)) {
            h.model_id = Some(m);
            h.nc = Some(n);
            return h;
        }
    }
    // `_exec_` and `_rank_` suffixes in either order (pairing.md §2: order undocumented).
    let mut rest = s;
    for _ in 0..2 {
        if h.exec.is_none() {
            if let Some((head, n)) = split_num_suffix(rest, "_exec_") {
                h.exec = Some(n);
                rest = head;
                continue;
            }
        }
        if h.rank.is_none() {
            if let Some((head, n)) = split_num_suffix(rest, "_rank_") {
                h.rank = Some(n);
                rest = head;
                continue;
            }
        }
        break;
    }
    h.stem = rest.to_string();
    h
}

/// Parses a NEFF file name (pairing.md §2): `neff_<h>[_vnc_<n>].neff` → `model_id`, `nc`;
/// anything else → stem only. Accepts a path; only the last component is used.
pub fn parse_neff_name(path: &str) -> NameHints {
    let s = strip_ext(base_name(path), ".neff");
    let mut h = NameHints {
        stem: s.to_string(),
        ..NameHints::default()
    };
    if let Some(rest) = s.strip_prefix("neff_") {
        let (model, nc) = match rest.split_once("_vnc_") {
            Some((m, n)) => (m, Some(n)),
            None => (rest, None),
        };
        if let Some(m) = digits(model) {
            match nc.map(digits) {
                None => h.model_id = Some(m),
                Some(Some(n)) => {
                    h.model_id = Some(m);
                    h.nc = Some(n);
                }
                Some(None) => {}
            }
        }
    }
    h
}

/// True when the names say this NTFF ran this NEFF: equal stems (`x.ntff`/`x_exec_2.ntff` ↔
/// `x.neff`), the capture harness prefix (`profile_x_exec_2.ntff` ↔ `x.neff`, KevGomes
/// `kernels/*/agents/`), or equal model ids (`<h>_instid_…ntff` ↔ `neff_<h>.neff`).
pub fn names_agree(ntff: &NameHints, neff: &NameHints) -> bool {
    if let (Some(a), Some(b)) = (ntff.model_id, neff.model_id) {
        return a == b;
    }
    !neff.stem.is_empty()
        && (ntff.stem == neff.stem || ntff.stem.strip_prefix("profile_") == Some(&neff.stem))
}

// ---------------------------------------------------------------------------------------------
// Cheap NTFF id extractor (ntff.md §2–3.2)
// ---------------------------------------------------------------------------------------------

/// The NTFF header and the few info-section fields pairing needs (ntff.md §2, §3.1, §3.2).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct NtffIds {
    /// Byte 0: NTFF version (4, 5, 6 in the samples).
    pub version: u8,
    /// Bytes 1–8: info-section length P in bytes.
    pub info_len: u64,
    /// Info field 1: NEFF network name (= NEFF header `name`); `None` when absent.
    pub neff_name: Option<String>,
    /// Info field 2: the NEFF uuid copied as a C string (pairing.md §4.2); `None` when absent.
    pub uuid_cstr: Option<Vec<u8>>,
    /// v6: the full 16-byte NEFF uuid from the first NEFF node's field 5 (field 4.5), else the
    /// first execution record's field 1 (field 15.1).
    pub full_uuid: Option<[u8; 16]>,
    /// v6 info field 17: EC2 instance id.
    pub instance_id: Option<String>,
    /// v6 info field 18: an integer that looks like a process id (ntff.md §3.1 [INF]).
    pub process_id: Option<u64>,
}

/// Largest info string/bytes value read for pairing; the uuid copy is ≤ 22 bytes and names are
/// paths, so anything bigger is corrupt.
const MAX_ID_FIELD: u64 = 64 * 1024;
/// Read granularity of [`ntff_ids`] (one read covers the whole info section of every sample).
const CHUNK: u64 = 64 * 1024;

/// Buffered random access over a source, so walking many small protobuf keys costs few reads
/// (browser `Blob` reads are expensive) while memory stays bounded by [`CHUNK`].
struct Window<'a, S: ByteSource + ?Sized> {
    src: &'a S,
    start: u64,
    buf: Vec<u8>,
}

impl<S: ByteSource + ?Sized> Window<'_, S> {
    /// Bytes `[off, off + n)`, clipped to `limit`; reads a new chunk when needed.
    fn get(&mut self, off: u64, n: u64, limit: u64) -> Result<&[u8]> {
        let want_end = off.saturating_add(n).min(limit);
        let buf_end = self.start + self.buf.len() as u64;
        if off < self.start || want_end > buf_end {
            let len = (limit.saturating_sub(off)).min(CHUNK.max(n));
            let len = usize::try_from(len).map_err(|_| Error::Other("read too large".into()))?;
            self.buf = self.src.read_vec(off, len)?;
            self.start = off;
        }
        let a = usize::try_from(off.saturating_sub(self.start)).unwrap_or(usize::MAX);
        let b = usize::try_from(want_end.saturating_sub(self.start)).unwrap_or(usize::MAX);
        self.buf
            .get(a..b)
            .ok_or_else(|| Error::Other("internal window error".into()))
    }

    /// Reads a varint at `*pos` (< `limit`), advancing `pos`.
    fn varint(&mut self, pos: &mut u64, limit: u64) -> Result<u64> {
        let start = *pos;
        let b = self.get(start, 10, limit)?;
        let mut p = 0usize;
        let v = pb::read_varint(b, &mut p, start)?;
        *pos = start + p as u64;
        Ok(v)
    }
}

/// One protobuf field header found while streaming: number, wire type, and either the varint
/// value or the value's byte range `[start, start + len)`.
struct RawField {
    number: u64,
    varint: Option<u64>,
    start: u64,
    len: u64,
}

/// Reads the field header at `*pos` and skips its value; errors name the absolute offset.
fn next_field<S: ByteSource + ?Sized>(
    w: &mut Window<'_, S>,
    pos: &mut u64,
    end: u64,
) -> Result<RawField> {
    let key_off = *pos;
    let key = w.varint(pos, end)?;
    let number = key >> 3;
    if number == 0 {
        return Err(Error::format(key_off, "a protobuf field number > 0", "0"));
    }
    let (varint, len) = match key & 7 {
        0 => (Some(w.varint(pos, end)?), 0),
        1 => (None, 8),
        2 => (None, w.varint(pos, end)?),
        5 => (None, 4),
        wt => {
            return Err(Error::format(
                key_off,
                "protobuf wire type 0, 1, 2 or 5",
                format!("wire type {wt}"),
            ))
        }
    };
    let start = *pos;
    let value_end = start.checked_add(len).filter(|&e| e <= end);
    let Some(value_end) = value_end else {
        return Err(Error::Truncated {
            offset: key_off,
            wanted: len,
            available: end.saturating_sub(start),
        });
    };
    *pos = value_end;
    Ok(RawField {
        number,
        varint,
        start,
        len,
    })
}

/// Reads a length-delimited value of at most [`MAX_ID_FIELD`] bytes.
fn field_bytes<S: ByteSource + ?Sized>(
    w: &mut Window<'_, S>,
    f: &RawField,
    what: &str,
) -> Result<Vec<u8>> {
    if f.varint.is_some() || f.len > MAX_ID_FIELD {
        return Err(Error::format(
            f.start,
            format!("{what} as bytes of at most {MAX_ID_FIELD}"),
            format!("{} bytes", f.len),
        ));
    }
    Ok(w.get(f.start, f.len, f.start + f.len)?.to_vec())
}

/// Finds the first sub-field `number` of 16 bytes inside the message `f` (NEFF node field 5,
/// execution field 1).
fn sub_uuid<S: ByteSource + ?Sized>(
    w: &mut Window<'_, S>,
    f: &RawField,
    number: u64,
) -> Result<Option<[u8; 16]>> {
    if f.varint.is_some() {
        return Ok(None);
    }
    let end = f.start + f.len;
    let mut pos = f.start;
    while pos < end {
        let g = next_field(w, &mut pos, end)?;
        if g.number == number && g.varint.is_none() && g.len == 16 {
            let b = w.get(g.start, 16, end)?;
            return Ok(b.try_into().ok());
        }
    }
    Ok(None)
}

/// Reads the NTFF header (ntff.md §2) and the info fields pairing needs: 1 (NEFF name),
/// 2 (uuid C-string copy), 4.5 / 15.1 (full uuid, v6), 17 (instance id), 18 (process id?).
///
/// Streams the info section in 64 KiB windows, so a corrupt length never allocates more than
/// that. `Ok(None)` = empty NTFF ("no data", pairing.md §5): 0 bytes, shorter than 128 bytes, or
/// info length P = 0.
///
/// A version above 6 is read with the same layout (its field walk is the structure check; the
/// inventory marks such a profile unverified, [`crate::ntff::unverified_version_warning`]).
///
/// Errors: [`Error::Format`] at offset 0 for a version byte below 4 or above
/// [`crate::sniff::MAX_PLAUSIBLE_NTFF_VERSION`], at offset 1 for an info length past the end of
/// the file, and [`Error::Format`] / [`Error::Truncated`] (absolute offsets) for malformed
/// protobuf.
pub fn ntff_ids<S: ByteSource + ?Sized>(src: &S) -> Result<Option<NtffIds>> {
    let len = src.len();
    if len < 128 {
        return Ok(None);
    }
    let mut head = [0u8; 9];
    src.read_at(0, &mut head)?;
    let version = head[0];
    let mut p = [0u8; 8];
    p.copy_from_slice(&head[1..9]);
    let info_len = u64::from_le_bytes(p);
    if info_len == 0 {
        return Ok(None);
    }
    // A newer version is read with the newest layout (the field walk below is its structure
    // check; the inventory marks it unverified); only a byte no version could be is refused.
    if version > crate::sniff::MAX_PLAUSIBLE_NTFF_VERSION {
        return Err(Error::format(
            0,
            format!(
                "an NTFF version byte 4 – {}",
                crate::sniff::MAX_PLAUSIBLE_NTFF_VERSION
            ),
            version.to_string(),
        ));
    }
    if version < 4 {
        return Err(Error::format(
            0,
            "an NTFF version byte 4, 5 or 6",
            version.to_string(),
        ));
    }
    // An info section a cut file ends inside is the file cut (as `ntff::read_info` says); a
    // length no NTFF has is a damaged header.
    if info_len <= crate::ntff::MAX_INFO_LEN && 128 + info_len > len {
        return Err(Error::Truncated {
            offset: 128,
            wanted: info_len,
            available: len - 128,
        });
    }
    let end = 128u64
        .checked_add(info_len)
        .filter(|&e| e <= len)
        .ok_or_else(|| {
            Error::format(
                1,
                format!(
                    "an info length of at most {} (file length − 128)",
                    len - 128
                ),
                info_len.to_string(),
            )
        })?;
    let mut ids = NtffIds {
        version,
        info_len,
        ..NtffIds::default()
    };
    let mut exec_uuid = None;
    let mut w = Window {
        src,
        start: 0,
        buf: Vec::new(),
    };
    let mut pos = 128u64;
    while pos < end {
        let f = next_field(&mut w, &mut pos, end)?;
        match f.number {
            1 if ids.neff_name.is_none() => {
                let b = field_bytes(&mut w, &f, "info field 1 (NEFF name)")?;
                ids.neff_name = Some(String::from_utf8_lossy(&b).into_owned());
            }
            2 if ids.uuid_cstr.is_none() => {
                ids.uuid_cstr = Some(field_bytes(&mut w, &f, "info field 2 (uuid copy)")?);
            }
            4 if ids.full_uuid.is_none() => ids.full_uuid = sub_uuid(&mut w, &f, 5)?,
            15 if exec_uuid.is_none() => exec_uuid = sub_uuid(&mut w, &f, 1)?,
            17 if ids.instance_id.is_none() => {
                let b = field_bytes(&mut w, &f, "info field 17 (instance id)")?;
                ids.instance_id = Some(String::from_utf8_lossy(&b).into_owned());
            }
            18 if ids.process_id.is_none() => ids.process_id = f.varint,
            _ => {}
        }
    }
    if ids.full_uuid.is_none() {
        ids.full_uuid = exec_uuid;
    }
    Ok(Some(ids))
}

// ---------------------------------------------------------------------------------------------
// Uuid match rule (pairing.md §4.3)
// ---------------------------------------------------------------------------------------------

/// How an NTFF's uuid evidence matched a NEFF uuid (pairing.md §4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum UuidMatch {
    /// v6 full 16-byte uuid (info field 4.5 / 15.1) equals the NEFF uuid.
    Full,
    /// Field 2 is ≥ 16 bytes and its first 16 equal the NEFF uuid (the C-string copy ran on into
    /// stray bytes).
    Prefix16,
    /// Field 2 has `len` (1–15) bytes equal to the NEFF uuid's start and the NEFF uuid has 0x00 at
    /// position `len` (the copy stopped there).
    Cut {
        /// Length of field 2 in bytes.
        len: usize,
    },
    /// Field 2 is absent and the NEFF uuid starts with 0x00: consistent, but true for 1 NEFF in
    /// 256, so it needs corroboration (same directory, name).
    Weak,
}

impl UuidMatch {
    /// True for [`UuidMatch::Weak`].
    pub fn is_weak(self) -> bool {
        matches!(self, UuidMatch::Weak)
    }
}

/// The pairing.md §4.3 rule. `full` = v6 full uuid, `cstr` = field 2 (`None` or empty = absent),
/// `neff` = NEFF header uuid. `None` = no match.
pub fn uuid_match(
    full: Option<&[u8; 16]>,
    cstr: Option<&[u8]>,
    neff: &[u8; 16],
) -> Option<UuidMatch> {
    if let Some(full) = full {
        return (full == neff).then_some(UuidMatch::Full);
    }
    let f2 = cstr.unwrap_or(&[]);
    match f2.len() {
        0 => (neff[0] == 0).then_some(UuidMatch::Weak),
        n if n >= 16 => (f2[..16] == neff[..]).then_some(UuidMatch::Prefix16),
        n => (neff[..n] == *f2 && neff[n] == 0).then_some(UuidMatch::Cut { len: n }),
    }
}

/// What the NTFF says about its NEFF's uuid, in hex for messages: the full uuid, else the C-string
/// copy (≤ 16 bytes shown, marked when cut), else "none (field 2 absent)".
pub fn ntff_uuid_text(ids: &NtffIds) -> String {
    if let Some(u) = &ids.full_uuid {
        return hex(u);
    }
    match ids.uuid_cstr.as_deref() {
        Some(b) if b.len() >= 16 => hex(&b[..16]),
        Some(b) if !b.is_empty() => format!("{}… (first {} bytes)", hex(b), b.len()),
        _ => "unknown (the NTFF's uuid field is absent)".to_string(),
    }
}

// ---------------------------------------------------------------------------------------------
// Pairing a whole drop (pairing.md §4.3, §5)
// ---------------------------------------------------------------------------------------------

/// How an NTFF (or an unused NEFF) ended up (shown on the page; serialised with a `status` tag,
/// e.g. `{"status":"Paired","by":"uuid"}`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "status")]
pub enum PairStatus {
    /// Paired; `by` says on what evidence: `"uuid"`, `"uuid (4-byte prefix)"`,
    /// `"uuid (weak, same directory)"`, `"uuid (same directory)"`, `"uuid (NEFF name)"`,
    /// `"uuid (model id)"`, `"uuid (identical copies)"`.
    Paired {
        /// The evidence, in words.
        by: String,
    },
    /// No NEFF in the drop matches the NTFF's uuid and none is hinted by name or directory.
    MissingNeff,
    /// No readable NEFF matches the NTFF's uuid, and `neff` beside it could not be read (cut
    /// or damaged before its uuid): it may be the one the NTFF ran. Timing only, as
    /// [`PairStatus::MissingNeff`]; the `MISSING_NEFF` problem names the NEFF's fault and offset
    /// ([`blame_unreadable_neffs`]).
    NeffUnreadable {
        /// Path of the unreadable NEFF in the NTFF's folder.
        neff: String,
    },
    /// The names or the directory point at `neff` but its uuid differs: a different
    /// compilation (Explorer: `ERROR_PROCESS_INCOMPLETE`).
    UuidMismatch {
        /// Path of the NEFF the names/directory pointed at.
        neff: String,
    },
    /// Several NEFFs match and no tie-breaker decides; the user must choose.
    Ambiguous {
        /// Paths of the matching NEFFs.
        candidates: Vec<String>,
    },
    /// The NTFF holds no data (pairing.md §5); skipped.
    EmptyNtff,
    /// A NEFF no NTFF executed: static view only.
    NeffOnly,
    /// The file could not be read as an NTFF / NEFF.
    Unreadable {
        /// Why, with the byte offset when known.
        message: String,
    },
}

/// A readable NEFF offered as a pairing candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeffCandidate {
    /// Path relative to the picked folder.
    pub path: String,
    /// Header uuid (offset 0x0CC).
    pub uuid: [u8; 16],
    /// Header network name (offset 0x0DC).
    pub name: String,
    /// Header hash bytes (offset 0x0AC); equal hashes = identical copies of one NEFF.
    pub hash: [u8; 32],
}

/// A non-empty, readable NTFF to pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NtffCandidate {
    /// Path relative to the picked folder.
    pub path: String,
    /// Its header/info ids ([`ntff_ids`]).
    pub ids: NtffIds,
}

/// The pairing decision for one NTFF.
#[derive(Debug, Clone, PartialEq)]
pub struct PairOutcome {
    /// Paired, MissingNeff, UuidMismatch or Ambiguous.
    pub status: PairStatus,
    /// Index into the NEFF list of the chosen (Paired) or hinted (UuidMismatch) NEFF.
    pub neff: Option<usize>,
    /// The user-facing problem, if any (Warning for missing/ambiguous, Error for mismatch).
    pub problem: Option<Problem>,
}

/// Pairs every NTFF with the NEFFs of the drop (pairing.md §4.3): uuid match first, then the
/// tie-breakers in order — same directory, NTFF field 1 = NEFF header name, names
/// ([`names_agree`]: model id, stem), identical copies (equal header hash) — else Ambiguous.
/// A weak match (field 2 absent) must not contradict field 1 (NEFF name) and is accepted only
/// with one of those corroborations.
///
/// Without a match, a NEFF hinted by the names in the same directory, or by NTFF field 1 = NEFF
/// header name in the same directory, or the only same-directory NEFF no NTFF uses, yields
/// [`PairStatus::UuidMismatch`] (Error `ERROR_PROCESS_INCOMPLETE` naming both files); otherwise
/// [`PairStatus::MissingNeff`] (Warning `MISSING_NEFF`). Returns one outcome per NTFF, in order.
pub fn pair_all(ntffs: &[NtffCandidate], neffs: &[NeffCandidate]) -> Vec<PairOutcome> {
    let neff_hints: Vec<NameHints> = neffs.iter().map(|n| parse_neff_name(&n.path)).collect();
    let mut out: Vec<PairOutcome> = ntffs
        .iter()
        .map(|t| pair_by_uuid(t, neffs, &neff_hints))
        .collect();
    // Second pass: explain the unmatched ones, knowing which NEFFs are claimed.
    let mut claimed = vec![false; neffs.len()];
    for o in &out {
        if let (PairStatus::Paired { .. }, Some(i)) = (&o.status, o.neff) {
            if let Some(c) = claimed.get_mut(i) {
                *c = true;
            }
        }
    }
    for (t, o) in ntffs.iter().zip(out.iter_mut()) {
        if o.status == PairStatus::MissingNeff {
            *o = explain_missing(t, neffs, &neff_hints, &claimed);
        }
    }
    out
}

/// Rewrites the `MISSING_NEFF` problem of each NTFF that paired with no NEFF when a NEFF of its
/// folder could not be read (`unreadable`: path, the fault without the path, and the reading
/// problem, with its offset): the
/// NEFF the NTFF ran may be that one, cut or damaged, so the message names it, its fault and
/// offset instead of saying no NEFF was found (pairing.md §4), and the status becomes
/// [`PairStatus::NeffUnreadable`] (the page's card says so instead of "no matching NEFF"). The
/// problem takes the NEFF's offset; its code stays `MISSING_NEFF` (the NTFF's tables have timing
/// only).
pub fn blame_unreadable_neffs(
    ntffs: &[NtffCandidate],
    outcomes: &mut [PairOutcome],
    unreadable: &[(&str, &str, &Problem)],
) {
    for (t, o) in ntffs.iter().zip(outcomes.iter_mut()) {
        if o.status != PairStatus::MissingNeff {
            continue;
        }
        let near: Vec<&(&str, &str, &Problem)> = unreadable
            .iter()
            .filter(|(n, _, _)| same_dir(&t.path, n))
            .collect();
        let Some((neff, reason, why)) = near.first() else {
            continue;
        };
        let uuid = ntff_uuid_text(&t.ids);
        let at = why
            .offset
            .map_or(String::new(), |o| format!(" at byte {o}"));
        let mut p = Problem::new(
            Code::MissingNeff,
            Some(&t.path),
            format!(
                "{}: the NEFF with uuid {uuid} cannot be read: {neff} beside it is truncated or \
                 corrupt{at}: {reason}. If it is the NEFF this NTFF ran, copy it again; timing \
                 is still shown",
                t.path
            ),
        );
        if let Some(off) = why.offset {
            p = p.at(off);
        }
        o.problem = Some(p);
        o.status = PairStatus::NeffUnreadable {
            neff: neff.to_string(),
        };
    }
}

fn same_dir(a: &str, b: &str) -> bool {
    dir_name(a) == dir_name(b)
}

fn pair_by_uuid(t: &NtffCandidate, neffs: &[NeffCandidate], hints: &[NameHints]) -> PairOutcome {
    let th = parse_ntff_name(&t.path);
    let mut cands: Vec<(usize, UuidMatch)> = neffs
        .iter()
        .enumerate()
        .filter_map(|(i, n)| {
            uuid_match(
                t.ids.full_uuid.as_ref(),
                t.ids.uuid_cstr.as_deref(),
                &n.uuid,
            )
            .map(|m| (i, m))
        })
        .collect();
    if cands.is_empty() {
        return PairOutcome {
            status: PairStatus::MissingNeff,
            neff: None,
            problem: None,
        };
    }
    let kind = cands[0].1; // one rule applies per NTFF, so all candidates match the same way
    let field1 = t.ids.neff_name.as_deref().unwrap_or("");
    if kind.is_weak() && !field1.is_empty() {
        // A weak match must not contradict the NEFF name (field 1 = header name in all 38
        // sample pairs).
        cands.retain(|&(i, _)| neffs[i].name == field1);
        if cands.is_empty() {
            return PairOutcome {
                status: PairStatus::MissingNeff,
                neff: None,
                problem: None,
            };
        }
    }
    let mut reasons: Vec<String> = Vec::new();
    if let UuidMatch::Cut { len } = kind {
        reasons.push(format!("{len}-byte prefix"));
    }
    if kind.is_weak() {
        reasons.push("weak".into());
    }
    // Tie-breakers (pairing.md §4.3), each applied only when it keeps at least one candidate.
    // The weak case must pass at least one of them even with a single candidate.
    type Test<'a> = Box<dyn Fn(usize) -> bool + 'a>;
    let names_label = if th.model_id.is_some() {
        "model id"
    } else {
        "file names"
    };
    let tests: [(&str, Test); 3] = [
        (
            "same directory",
            Box::new(|i| same_dir(&t.path, &neffs[i].path)),
        ),
        (
            "NEFF name",
            Box::new(|i| !field1.is_empty() && neffs[i].name == field1),
        ),
        (names_label, Box::new(|i| names_agree(&th, &hints[i]))),
    ];
    let mut corroborated = false;
    for (label, test) in tests.iter() {
        if cands.len() == 1 && (corroborated || !kind.is_weak()) {
            break;
        }
        let kept: Vec<_> = cands.iter().copied().filter(|&(i, _)| test(i)).collect();
        if kept.is_empty() {
            continue;
        }
        if kept.len() < cands.len() || (kind.is_weak() && !corroborated) {
            reasons.push((*label).to_string());
        }
        corroborated = true;
        cands = kept;
    }
    if cands.len() > 1
        && cands
            .iter()
            .all(|&(i, _)| neffs[i].hash == neffs[cands[0].0].hash)
    {
        reasons.push("identical copies".into());
        cands.truncate(1);
    }
    if cands.len() == 1 && (!kind.is_weak() || corroborated) {
        let by = if reasons.is_empty() {
            "uuid".to_string()
        } else {
            format!("uuid ({})", reasons.join(", "))
        };
        return PairOutcome {
            status: PairStatus::Paired { by },
            neff: Some(cands[0].0),
            problem: None,
        };
    }
    let candidates: Vec<String> = cands.iter().map(|&(i, _)| neffs[i].path.clone()).collect();
    let message = if candidates.len() == 1 {
        format!(
            "{}: its uuid field is absent; {} fits (its uuid starts with 00) but neither its \
             directory nor its name confirms it; move the right .neff next to the NTFF",
            t.path, candidates[0]
        )
    } else {
        let why = if kind.is_weak() {
            "its uuid field is absent, so any NEFF whose uuid starts with 00 fits"
        } else {
            "several NEFFs carry its uuid"
        };
        format!(
            "{}: cannot tell which NEFF it ran ({why}): {}; keep only the right one in the folder",
            t.path,
            candidates.join(", ")
        )
    };
    PairOutcome {
        status: PairStatus::Ambiguous { candidates },
        neff: None,
        problem: Some(Problem::new(Code::AmbiguousNeff, Some(&t.path), message)),
    }
}

fn explain_missing(
    t: &NtffCandidate,
    neffs: &[NeffCandidate],
    hints: &[NameHints],
    claimed: &[bool],
) -> PairOutcome {
    let th = parse_ntff_name(&t.path);
    let field1 = t.ids.neff_name.as_deref().unwrap_or("");
    let local: Vec<usize> = (0..neffs.len())
        .filter(|&i| same_dir(&t.path, &neffs[i].path))
        .collect();
    let by_names = || {
        local
            .iter()
            .copied()
            .find(|&i| names_agree(&th, &hints[i]))
            .or_else(|| {
                // Model ids are specific enough to point across directories.
                th.model_id.and_then(|m| {
                    (0..neffs.len()).find(|&i| hints.get(i).and_then(|h| h.model_id) == Some(m))
                })
            })
    };
    let by_field1 = || {
        local
            .iter()
            .copied()
            .find(|&i| !field1.is_empty() && neffs[i].name == field1 && !claimed[i])
    };
    let by_dir = || {
        let free: Vec<usize> = local.iter().copied().filter(|&i| !claimed[i]).collect();
        (free.len() == 1).then(|| free[0])
    };
    let uuid = ntff_uuid_text(&t.ids);
    if let Some(i) = by_names().or_else(by_field1).or_else(by_dir) {
        let n = &neffs[i];
        let message = format!(
            "{} and {} come from different compilations: the NTFF ran the NEFF with uuid {uuid}, \
             this NEFF has uuid {}; add the .neff this NTFF ran \
             (Explorer: ERROR_PROCESS_INCOMPLETE: NEFF/NTFF uuid mismatch)",
            t.path,
            n.path,
            hex(&n.uuid)
        );
        return PairOutcome {
            status: PairStatus::UuidMismatch {
                neff: n.path.clone(),
            },
            neff: Some(i),
            problem: Some(Problem::new(
                Code::ProcessIncomplete,
                Some(&t.path),
                message,
            )),
        };
    }
    let named = if field1.is_empty() {
        String::new()
    } else {
        format!(" (NEFF name \"{field1}\")")
    };
    let message = format!(
        "{}: no NEFF found with uuid {uuid}{named}; add the .neff this NTFF ran to see \
         instruction names, source lines and tensors — timing is still shown \
         (Explorer: ERROR_PROCESS_INCOMPLETE)",
        t.path
    );
    PairOutcome {
        status: PairStatus::MissingNeff,
        neff: None,
        problem: Some(Problem::new(Code::MissingNeff, Some(&t.path), message)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pb::{put_bytes, put_uint};
    use crate::Severity;

    fn ntff(name: &str) -> NameHints {
        parse_ntff_name(name)
    }

    #[test]
    fn ntff_name_patterns() {
        let h = ntff("a/b/profile_nc_3_session_7.ntff");
        assert_eq!((h.nc, h.session, h.model_id), (Some(3), Some(7), None));
        assert_eq!(h.stem, "profile_nc_3_session_7");
        let h = ntff("171450338541704_instid_0_vnc_2.ntff");
        assert_eq!(
            (h.model_id, h.instance, h.nc),
            (Some(171450338541704), Some(0), Some(2))
        );
        let h = ntff("123_vnc_1.ntff");
        assert_eq!((h.model_id, h.nc, h.instance), (Some(123), Some(1), None));
        let h = ntff("out_exec_5.ntff");
        assert_eq!((h.stem.as_str(), h.exec, h.rank), ("out", Some(5), None));
        let h = ntff("out_rank_3.ntff");
        assert_eq!((h.stem.as_str(), h.exec, h.rank), ("out", None, Some(3)));
        let h = ntff("out_rank_3_exec_5.ntff");
        assert_eq!((h.stem.as_str(), h.exec, h.rank), ("out", Some(5), Some(3)));
        let h = ntff("out_exec_5_rank_3.ntff");
        assert_eq!((h.stem.as_str(), h.exec, h.rank), ("out", Some(5), Some(3)));
        // Two of the same suffix: only the last one is taken.
        let h = ntff("out_exec_1_exec_2.ntff");
        assert_eq!((h.stem.as_str(), h.exec), ("out_exec_1", Some(2)));
        // Not numbers, or nothing before the suffix → stem only.
        let h = ntff("my_exec_model.ntff");
        assert_eq!((h.stem.as_str(), h.exec), ("my_exec_model", None));
        let h = ntff("_exec_2.ntff");
        assert_eq!((h.stem.as_str(), h.exec), ("_exec_2", None));
        let h = ntff("profile_nc_x_session_1.ntff");
        assert_eq!(
            (h.stem.as_str(), h.nc, h.session),
            ("profile_nc_x_session_1", None, None)
        );
        let h = ntff("abc_instid_0_vnc_2.ntff");
        assert_eq!((h.model_id, h.nc), (None, None));
        // Samples: KevGomes capture and agents, allenkchau, cs149.
        let h = ntff("profile_attn_v6_exec_2.ntff");
        assert_eq!((h.stem.as_str(), h.exec), ("profile_attn_v6", Some(2)));
        let h = ntff("X.NTFF");
        assert_eq!(h.stem, "X");
        assert_eq!(ntff("stream_256k_fd1k.ntff").stem, "stream_256k_fd1k");
        // Digits overflow → no number, no panic.
        let h = ntff("99999999999999999999999_vnc_1.ntff");
        assert_eq!(h.model_id, None);
        let h = ntff("x_exec_99999999999.ntff");
        assert_eq!(h.exec, None);
    }

    #[test]
    fn neff_name_patterns() {
        let h = parse_neff_name("out/neff_171450338541704.neff");
        assert_eq!((h.model_id, h.nc), (Some(171450338541704), None));
        assert_eq!(h.stem, "neff_171450338541704");
        let h = parse_neff_name("neff_12_vnc_3.neff");
        assert_eq!((h.model_id, h.nc), (Some(12), Some(3)));
        for n in [
            "neff_abc.neff",
            "neff_12_vnc_x.neff",
            "neffs/graph_1a2b.neff",
            "neff_.neff",
        ] {
            let h = parse_neff_name(n);
            assert_eq!((h.model_id, h.nc), (None, None), "{n}");
        }
        assert_eq!(parse_neff_name("fused.neff").stem, "fused");
    }

    #[test]
    fn names_agree_rules() {
        let n = parse_neff_name;
        assert!(names_agree(&ntff("fused_exec_2.ntff"), &n("fused.neff")));
        assert!(names_agree(&ntff("k.ntff"), &n("k.neff")));
        assert!(names_agree(
            &ntff("profile_v6b_exec_2.ntff"),
            &n("v6b.neff")
        ));
        assert!(!names_agree(
            &ntff("fused_exec_2.ntff"),
            &n("baseline.neff")
        ));
        assert!(names_agree(
            &ntff("7_instid_0_vnc_1.ntff"),
            &n("neff_7.neff")
        ));
        assert!(names_agree(&ntff("7_vnc_1.ntff"), &n("neff_7_vnc_1.neff")));
        assert!(!names_agree(
            &ntff("7_instid_0_vnc_1.ntff"),
            &n("neff_8.neff")
        ));
    }

    #[test]
    fn uuid_rule_cases() {
        let u: [u8; 16] = [
            0x63, 0x0e, 0x77, 0x39, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0xae, 0x32,
        ];
        let mut zero4 = u;
        zero4[4] = 0;
        let mut zero0 = u;
        zero0[0] = 0;
        // Full uuid decides, field 2 ignored.
        assert_eq!(uuid_match(Some(&u), Some(&[1]), &u), Some(UuidMatch::Full));
        assert_eq!(uuid_match(Some(&zero4), Some(&u[..4]), &u), None);
        assert_eq!(
            uuid_match(Some(&zero4), Some(&u[..4]), &zero4),
            Some(UuidMatch::Full)
        );
        // ≥ 16 bytes: trailing bytes ignored.
        let mut long = u.to_vec();
        long.extend_from_slice(&[0xa4, 0x1b]);
        assert_eq!(uuid_match(None, Some(&long), &u), Some(UuidMatch::Prefix16));
        assert_eq!(uuid_match(None, Some(&u), &u), Some(UuidMatch::Prefix16));
        long[3] ^= 1;
        assert_eq!(uuid_match(None, Some(&long), &u), None);
        // Cut at k: prefix equal and uuid[k] == 0.
        assert_eq!(
            uuid_match(None, Some(&u[..4]), &zero4),
            Some(UuidMatch::Cut { len: 4 })
        );
        assert_eq!(uuid_match(None, Some(&u[..4]), &u), None, "uuid[4] != 0");
        assert_eq!(uuid_match(None, Some(&u[..3]), &zero4), None, "too short");
        assert_eq!(
            uuid_match(None, Some(&[0x63, 0x0f, 0x77, 0x39]), &zero4),
            None
        );
        let mut zero15 = u;
        zero15[15] = 0;
        assert_eq!(
            uuid_match(None, Some(&u[..15]), &zero15),
            Some(UuidMatch::Cut { len: 15 })
        );
        // Absent (or empty): weak, only a uuid starting with 00.
        assert_eq!(uuid_match(None, None, &zero0), Some(UuidMatch::Weak));
        assert_eq!(uuid_match(None, Some(&[]), &zero0), Some(UuidMatch::Weak));
        assert_eq!(uuid_match(None, None, &u), None);
        assert!(UuidMatch::Weak.is_weak() && !UuidMatch::Full.is_weak());
    }

    /// A synthetic NTFF: header + info section + `blob` bytes.
    fn synth_ntff(version: u8, info: &[u8], blob: usize) -> Vec<u8> {
        let mut v = vec![0u8; 128];
        v[0] = version;
        v[1..9].copy_from_slice(&(info.len() as u64).to_le_bytes());
        v.extend_from_slice(info);
        v.extend(std::iter::repeat_n(0xee, blob));
        v
    }

    fn info(
        name: &str,
        f2: Option<&[u8]>,
        node_uuid: Option<&[u8; 16]>,
        exec: Option<&[u8; 16]>,
    ) -> Vec<u8> {
        let mut m = Vec::new();
        put_bytes(&mut m, 1, name.as_bytes());
        if let Some(f2) = f2 {
            put_bytes(&mut m, 2, f2);
        }
        put_uint(&mut m, 3, 10001);
        let mut node = Vec::new();
        let mut sg = Vec::new();
        put_bytes(&mut sg, 1, b"sg00");
        let mut dev = Vec::new();
        put_bytes(&mut dev, 1, &sg);
        put_bytes(&mut node, 4, &dev);
        if let Some(u) = node_uuid {
            put_bytes(&mut node, 5, u);
        }
        put_bytes(&mut m, 4, &node);
        if let Some(u) = exec {
            let mut e = Vec::new();
            put_bytes(&mut e, 1, u);
            put_uint(&mut e, 2, 1000);
            put_uint(&mut e, 3, 2000);
            put_bytes(&mut m, 15, &e);
        }
        put_bytes(&mut m, 17, b"i-0123abcd");
        put_uint(&mut m, 18, 723577);
        m
    }

    #[test]
    fn ntff_ids_synthetic() {
        let u = [7u8; 16];
        let w = [9u8; 16];
        let f = synth_ntff(
            6,
            &info("file.neff", Some(&[1, 2, 3]), Some(&u), Some(&w)),
            64,
        );
        let ids = ntff_ids(&f).unwrap().unwrap();
        assert_eq!(ids.version, 6);
        assert_eq!(ids.neff_name.as_deref(), Some("file.neff"));
        assert_eq!(ids.uuid_cstr.as_deref(), Some(&[1u8, 2, 3][..]));
        assert_eq!(ids.full_uuid, Some(u), "NEFF node field 5 first");
        assert_eq!(ids.instance_id.as_deref(), Some("i-0123abcd"));
        assert_eq!(ids.process_id, Some(723577));
        // Execution record as the fallback.
        let f = synth_ntff(6, &info("x", None, None, Some(&w)), 0);
        let ids = ntff_ids(&f).unwrap().unwrap();
        assert_eq!((ids.full_uuid, ids.uuid_cstr), (Some(w), None));
        // v5: no full uuid.
        let f = synth_ntff(5, &info("x", Some(&u), None, None), 0);
        let ids = ntff_ids(&f).unwrap().unwrap();
        assert_eq!((ids.version, ids.full_uuid), (5, None));
        // Empty files.
        assert_eq!(ntff_ids(&Vec::<u8>::new()).unwrap(), None);
        assert_eq!(ntff_ids(&vec![6u8; 127]).unwrap(), None);
        assert_eq!(ntff_ids(&synth_ntff(6, &[], 500)).unwrap(), None);
        // Versions.
        let ids = ntff_ids(&synth_ntff(7, &info("x", None, None, None), 0)).unwrap();
        assert_eq!(ids.map(|i| i.version), Some(7), "a newer version is read");
        let e = ntff_ids(&synth_ntff(79, &[0x08, 1], 0)).unwrap_err();
        assert_eq!(e.offset(), Some(0), "{e}");
        let e = ntff_ids(&synth_ntff(3, &[0x08, 1], 0)).unwrap_err();
        assert_eq!(e.offset(), Some(0));
        // Info length past the end (the file cut inside its info section), and u64::MAX (no
        // NTFF's: the header's fault).
        let mut f = synth_ntff(6, &[0x08, 1], 0);
        f[1..9].copy_from_slice(&3u64.to_le_bytes());
        assert!(
            matches!(
                ntff_ids(&f).unwrap_err(),
                Error::Truncated {
                    offset: 128,
                    wanted: 3,
                    available: 2
                }
            ),
            "{:?}",
            ntff_ids(&f)
        );
        f[1..9].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(ntff_ids(&f).unwrap_err().offset(), Some(1));
        // Malformed protobuf: the error names the absolute offset of the bad key.
        let f = synth_ntff(6, &[0x08, 1, 0x0b], 0);
        assert_eq!(ntff_ids(&f).unwrap_err().offset(), Some(130));
        // A length-delimited field running past the info section.
        let f = synth_ntff(6, &[0x0a, 0x40, b'a'], 100);
        assert_eq!(ntff_ids(&f).unwrap_err().offset(), Some(128));
        // Oversized name field.
        let mut big = Vec::new();
        put_bytes(&mut big, 1, &vec![b'a'; (MAX_ID_FIELD + 1) as usize]);
        assert!(ntff_ids(&synth_ntff(6, &big, 0)).is_err());
        // An info section larger than one read window still parses.
        let mut m = Vec::new();
        put_bytes(&mut m, 9, &vec![0u8; 200_000]);
        m.extend(info("late", Some(&u), Some(&u), None));
        let ids = ntff_ids(&synth_ntff(6, &m, 0)).unwrap().unwrap();
        assert_eq!(
            (ids.neff_name.as_deref(), ids.full_uuid),
            (Some("late"), Some(u))
        );
    }

    fn neff(path: &str, uuid: [u8; 16], name: &str, hash: u8) -> NeffCandidate {
        NeffCandidate {
            path: path.into(),
            uuid,
            name: name.into(),
            hash: [hash; 32],
        }
    }

    fn cand(path: &str, name: &str, f2: Option<&[u8]>, full: Option<[u8; 16]>) -> NtffCandidate {
        NtffCandidate {
            path: path.into(),
            ids: NtffIds {
                version: if full.is_some() { 6 } else { 5 },
                info_len: 1,
                neff_name: Some(name.into()),
                uuid_cstr: f2.map(<[u8]>::to_vec),
                full_uuid: full,
                ..NtffIds::default()
            },
        }
    }

    #[test]
    fn tie_breaks_and_explanations() {
        let u = [5u8; 16];
        let v = [6u8; 16];
        let mut z = [8u8; 16];
        z[0] = 0;
        let neffs = vec![
            neff("a/file.neff", u, "file.neff", 1),         // 0
            neff("b/file.neff", u, "file.neff", 2),         // 1: same uuid, other bytes
            neff("c/neff_171.neff", v, "model.neff", 3),    // 2
            neff("d/neff_172.neff", v, "model.neff", 4),    // 3
            neff("e/zero.neff", z, "", 5),                  // 4
            neff("f/other.neff", [1; 16], "other.neff", 6), // 5
        ];
        let ntffs = vec![
            cand("x/t.ntff", "file.neff", Some(&u), None), // ambiguous a/b
            cand("a/t.ntff", "file.neff", Some(&u), None), // same directory → a
            cand("y/171_instid_0_vnc_0.ntff", "model.neff", None, Some(v)), // model id → c
            cand("y/w.ntff", "", None, None),              // weak, uncorroborated → ambiguous
            cand("f/g.ntff", "g.neff", Some(&[3; 16]), None), // only free NEFF in f → mismatch
            cand("q/neff.ntff", "n.neff", Some(&[4; 16]), None), // nothing → missing
            cand("q/172_instid_0_vnc_0.ntff", "", Some(&[4; 16]), None), // model id → mismatch d
        ];
        let out = pair_all(&ntffs, &neffs);
        assert_eq!(
            out[0].status,
            PairStatus::Ambiguous {
                candidates: vec!["a/file.neff".into(), "b/file.neff".into()]
            }
        );
        assert_eq!(out[0].problem.as_ref().unwrap().severity, Severity::Warning);
        assert_eq!(
            out[1].status,
            PairStatus::Paired {
                by: "uuid (same directory)".into()
            }
        );
        assert_eq!(out[1].neff, Some(0));
        assert_eq!(
            out[2].status,
            PairStatus::Paired {
                by: "uuid (model id)".into()
            }
        );
        assert_eq!(out[2].neff, Some(2));
        assert_eq!(
            out[3].status,
            PairStatus::Ambiguous {
                candidates: vec!["e/zero.neff".into()]
            }
        );
        assert_eq!(
            out[4].status,
            PairStatus::UuidMismatch {
                neff: "f/other.neff".into()
            }
        );
        let p = out[4].problem.as_ref().unwrap();
        assert_eq!(
            (p.severity, p.code.as_str()),
            (Severity::Error, "ERROR_PROCESS_INCOMPLETE")
        );
        assert!(p.message.contains("f/g.ntff") && p.message.contains("f/other.neff"));
        assert_eq!(out[5].status, PairStatus::MissingNeff);
        let p = out[5].problem.as_ref().unwrap();
        assert_eq!(
            (p.severity, p.code.as_str()),
            (Severity::Warning, "MISSING_NEFF")
        );
        assert!(
            p.message.contains("04040404040404040404040404040404"),
            "{}",
            p.message
        );
        assert_eq!(
            out[6].status,
            PairStatus::UuidMismatch {
                neff: "d/neff_172.neff".into()
            }
        );
        // Stem tie-break across directories, and the cut-prefix wording.
        let mut c = [9u8; 16];
        c[4] = 0;
        let neffs = vec![
            neff("n1/k.neff", c, "file.neff", 1),
            neff("n2/j.neff", c, "file.neff", 2),
        ];
        let out = pair_all(
            &[cand("t/k_exec_3.ntff", "file.neff", Some(&c[..4]), None)],
            &neffs,
        );
        assert_eq!(
            out[0].status,
            PairStatus::Paired {
                by: "uuid (4-byte prefix, file names)".into()
            }
        );
        assert_eq!(out[0].neff, Some(0));
        // A claimed NEFF is not blamed by the directory rule.
        let neffs = vec![neff("d/a.neff", u, "a.neff", 1)];
        let out = pair_all(
            &[
                cand("d/a.ntff", "a.neff", Some(&u), None),
                cand("d/b.ntff", "b.neff", Some(&v), None),
            ],
            &neffs,
        );
        assert!(matches!(out[0].status, PairStatus::Paired { .. }));
        assert_eq!(out[1].status, PairStatus::MissingNeff);
        // Serialisation tag for the page.
        let j = serde_json::to_string(&PairStatus::UuidMismatch { neff: "n".into() }).unwrap();
        assert_eq!(j, r#"{"status":"UuidMismatch","neff":"n"}"#);
        assert_eq!(
            serde_json::to_string(&PairStatus::EmptyNtff).unwrap(),
            r#"{"status":"EmptyNtff"}"#
        );
    }
}
