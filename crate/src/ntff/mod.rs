//! NTFF device-trace decoder (spec/ntff.md). OWNER: ntff helper — replace this stub.
//!
//! Pinned interface (other modules code against it):
//! - [`read_info`]: header + info section only (cheap; used by pairing and inventory).

use crate::error::{Error, Result};
use crate::source::ByteSource;

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
}

/// Reads the 128-byte header and the info section. `Ok(None)` means an empty NTFF ("no data",
/// pairing.md §5: 0 bytes, shorter than 128 bytes, or info length 0).
pub fn read_info<S: ByteSource + ?Sized>(src: &S) -> Result<Option<NtffInfo>> {
    let _ = src;
    Err(Error::Unsupported("NTFF decoder not implemented yet".into()))
}
