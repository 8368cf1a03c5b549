//! A NEFF whose tar header checksum field holds binary bytes (session 9's trial: the message
//! quoted them as text, U+FFFD and control characters in a terminal line): the error names the
//! field's bytes in hex and the member, with nothing unprintable.

mod common;

use std::io::{Read, Write};

use neuronscope::neff;
use neuronscope::source::SliceSource;

#[test]
fn tar_checksum_error_names_the_bytes_in_hex() {
    let p = common::samples()
        .join("KevGomes-nki-moe-megakernel/output/i-0af76a70a6d3864dd_pid_713479")
        .join("neff_171450338541704.neff");
    let orig = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    // The payload after the 1 024-byte header is one gzip member holding the tar (neff.md §3).
    let mut tar = Vec::new();
    flate2::read::GzDecoder::new(&orig[1024..])
        .read_to_end(&mut tar)
        .expect("gzip payload");
    assert_eq!(&tar[257..262], b"ustar", "a tar header first");
    let field = [0xff, 0xfe, 0x80, 0x81, 0x13, 0x99, 0xc3, 0x28];
    tar[148..156].copy_from_slice(&field);
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    z.write_all(&tar).expect("vec write");
    let gz = z.finish().expect("vec write");
    assert!(gz.len() <= orig.len() - 1024, "fits the header's data size");
    let mut bytes = orig[..1024].to_vec();
    bytes.extend_from_slice(&gz);
    bytes.resize(orig.len(), 0);
    let msg = match neff::open(&SliceSource(&bytes)) {
        Err(e) => e.to_string(),
        Ok(n) => panic!(
            "a damaged first header must fail the NEFF: {:?}",
            n.warnings
        ),
    };
    assert!(
        msg.contains(
            "tar header checksum field that is not an octal number (bytes ff fe 80 81 13 99 c3 28)"
        ),
        "{msg}"
    );
    assert!(
        msg.contains("\"debug_info/debug_info_hlo.dbg_sg000000\""),
        "{msg}"
    );
    assert!(
        !msg.chars().any(|c| c.is_control() || c == '\u{fffd}'),
        "nothing unprintable: {msg:?}"
    );
}
