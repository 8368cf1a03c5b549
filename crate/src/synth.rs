//! Synthetic captures written by our own NEFF and NTFF writers: the app's built-in demo, benchmark
//! inputs and fuzz seeds. (Being wired to the writers.)

use crate::error::{Error, Result};

/// The built-in demo capture: `(relative path, bytes)` pairs.
pub fn demo_capture() -> Result<Vec<(String, Vec<u8>)>> {
    Err(Error::Other("synthetic NTFF writer not wired yet".into()))
}

/// A capture whose NTFF is about `ntff_bytes` long (benchmarks).
pub fn large_capture(ntff_bytes: u64) -> Result<Vec<(String, Vec<u8>)>> {
    let _ = ntff_bytes;
    Err(Error::Other("synthetic NTFF writer not wired yet".into()))
}
