//! NEFF header: 1024 little-endian bytes, `neff_header_t` (docs/format/neff.md §2.1).

use crate::error::{Error, Result};
use crate::source::ByteSource;

/// Size of the NEFF header in bytes (neff.md §2.1).
pub const HEADER_LEN: usize = 1024;

/// The decoded 1024-byte NEFF header (neff.md §2.1; offsets confirmed on all 84 sample NEFFs).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct NeffHeader {
    /// 0x000 `pkg_version`: 1 = SHA-256 hash, 2 = MD5.
    pub pkg_version: u64,
    /// 0x008 `header_size` (bytes) = payload offset; 1024 in every sample.
    pub header_size: u64,
    /// 0x010 `data_size` (bytes): payload length, padding included.
    pub data_size: u64,
    /// 0x018 NEFF format major version (1 or 2 in the samples).
    pub major_version: u64,
    /// 0x020 NEFF format minor version.
    pub minor_version: u64,
    /// 0x028 build-version text (NUL padded; empty in the samples).
    pub build_version: String,
    /// 0x0A8 `num_tpb`.
    pub num_tpb: u32,
    /// 0x0AC the stored hash bytes (MD5 in bytes 0–15), shown as stored (neff.md §2.2).
    #[serde(serialize_with = "crate::util::ser_hex")]
    pub hash: [u8; 32],
    /// 0x0CC the NEFF uuid, 16 raw bytes; pairs NTFFs (pairing.md §4).
    #[serde(serialize_with = "crate::util::ser_hex")]
    pub uuid: [u8; 16],
    /// 0x0DC NUL-terminated network name (= NTFF info field 1).
    pub name: String,
    /// 0x1DC `requested_tpb_count`.
    pub requested_tpb_count: u32,
    /// 0x220 feature bit set (neff.md §2.3).
    pub feature_bits: u64,
    /// 0x228 logical-core size (1 on trn1, 2 on trn2 LNC=2).
    pub lnc_size: u32,
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[o..o + 8]);
    u64::from_le_bytes(a)
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[o..o + 4]);
    u32::from_le_bytes(a)
}

fn cstr(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

impl NeffHeader {
    /// Hex of the stored hash's first 16 bytes, as Neuron Explorer shows `NeffHeader.hash`.
    pub fn hash_hex(&self) -> String {
        crate::util::hex(&self.hash[..16])
    }
    /// The uuid as 32 lowercase hex digits (the JSON export's `neff_header.uuid` form).
    pub fn uuid_hex(&self) -> String {
        crate::util::hex(&self.uuid)
    }
    /// Known names of set feature bits, unknown bits as `bit<N>`, comma-separated in bit order
    /// (neff.md §2.3; Explorer's `NeffHeader.enabled_features`). Bits 10 and 11 always occur
    /// together in the samples and the JSON exports show 0xC00 as
    /// `virtual-core, v3-2x-4x-dve-perf-mode`; assigning the names in that order to bits 10 and
    /// 11 reproduces all 7 allenkchau exports, but which bit is which is not proven [INF].
    pub fn enabled_features(&self) -> String {
        let mut out = Vec::new();
        for bit in 0..64 {
            if self.feature_bits & (1u64 << bit) != 0 {
                out.push(match feature_name(bit) {
                    Some(n) => n.to_string(),
                    None => format!("bit{bit}"),
                });
            }
        }
        out.join(", ")
    }
}

/// Name of a `feature_bits` bit as Explorer prints it, when known (see
/// [`NeffHeader::enabled_features`]).
pub fn feature_name(bit: u32) -> Option<&'static str> {
    match bit {
        10 => Some("virtual-core"),
        11 => Some("v3-2x-4x-dve-perf-mode"),
        _ => None,
    }
}

/// Parses the header from the first 1024 bytes of `src` and applies the recognition checks of
/// neff.md §2.4 (1–4), including `header_size + data_size <= file length`. Use this to recognise
/// a NEFF; [`crate::neff::open`] uses the lenient [`parse_header`] and clamps instead.
///
/// Errors: [`Error::Truncated`] for a file shorter than 1024 bytes, [`Error::Format`] (with the
/// field's offset) when a check fails.
pub fn read_header<S: ByteSource + ?Sized>(src: &S) -> Result<NeffHeader> {
    let h = parse_header(src)?;
    if h.header_size.saturating_add(h.data_size) > src.len() {
        return Err(Error::format(
            16,
            format!(
                "header_size + data_size <= file length {} (payload truncated?)",
                src.len()
            ),
            format!("{} + {}", h.header_size, h.data_size),
        ));
    }
    Ok(h)
}

/// Parses the header with checks 1–3 of neff.md §2.4 only (length ≥ 1024, `pkg_version` 1 or 2,
/// `header_size` between 24 and the file length); a `data_size` past the end of the file is
/// left to the caller (neff.md §12 rule 1: clamp and warn).
///
/// Errors: [`Error::Truncated`] for a file shorter than 1024 bytes, [`Error::Format`] at offset
/// 0 (`pkg_version`) or 8 (`header_size`).
pub fn parse_header<S: ByteSource + ?Sized>(src: &S) -> Result<NeffHeader> {
    let mut b = [0u8; HEADER_LEN];
    src.read_at(0, &mut b)?;
    let h = NeffHeader {
        pkg_version: u64_at(&b, 0x000),
        header_size: u64_at(&b, 0x008),
        data_size: u64_at(&b, 0x010),
        major_version: u64_at(&b, 0x018),
        minor_version: u64_at(&b, 0x020),
        build_version: cstr(&b[0x028..0x0A8]),
        num_tpb: u32_at(&b, 0x0A8),
        hash: b[0x0AC..0x0CC].try_into().unwrap_or([0; 32]),
        uuid: b[0x0CC..0x0DC].try_into().unwrap_or([0; 16]),
        name: cstr(&b[0x0DC..0x1DC]),
        requested_tpb_count: u32_at(&b, 0x1DC),
        feature_bits: u64_at(&b, 0x220),
        lnc_size: u32_at(&b, 0x228),
    };
    if !(1..=2).contains(&h.pkg_version) {
        return Err(Error::format(
            0,
            "NEFF pkg_version 1 or 2",
            h.pkg_version.to_string(),
        ));
    }
    if h.header_size < 24 || h.header_size > src.len() {
        return Err(Error::format(
            8,
            format!("header_size between 24 and the file length {}", src.len()),
            h.header_size.to_string(),
        ));
    }
    Ok(h)
}
