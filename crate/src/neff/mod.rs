//! NEFF decoder (spec/neff.md): header, streamed gzip+tar payload, kelf/def.json walk.

pub mod header;

pub use header::{read_header, NeffHeader, HEADER_LEN};
