//! Caps on lengths and decompression taken from input bytes (issue 13): each cap is hit by a
//! small input built here (gzip bombs with flate2, a length field larger than the file), and
//! the result is an error naming the cap, with everything before it kept, never an
//! out-of-memory abort.

use std::io::{Read, Write};

use neuronscope::neff::archive::{InflateLimit, BUFFER_FLOOR, INFLATE_FLOOR};
use neuronscope::neff::write::{write_neff, NeffSpec};
use neuronscope::source::{ByteSource, SliceSource};
use neuronscope::source_code::{SourceIndex, SOURCE_INFLATE_FLOOR};
use neuronscope::Error;

const MIB: u64 = 1 << 20;

/// A ustar header for a regular file.
fn file_header(path: &str, size: u64) -> tar::Header {
    let mut h = tar::Header::new_ustar();
    h.set_path(path).unwrap();
    h.set_size(size);
    h.set_mode(0o644);
    h.set_entry_type(tar::EntryType::Regular);
    h.set_cksum();
    h
}

/// gzip(tar) of `members`; a `None` body is `size` zero bytes streamed (never held in memory).
fn tar_gz(members: &[(&str, u64, Option<&[u8]>)]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut b = tar::Builder::new(gz);
    for (path, size, body) in members {
        let h = file_header(path, *size);
        match body {
            Some(data) => b.append(&h, *data).unwrap(),
            None => b.append(&h, std::io::repeat(0).take(*size)).unwrap(),
        }
    }
    b.into_inner().unwrap().finish().unwrap()
}

#[test]
fn inflate_limit_stops_a_stream_past_its_cap() {
    // 10 MiB of zeros gzip to ~10 kB: at ratio 100 with a 1 MiB floor, 1 MiB is allowed.
    let gz = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::copy(&mut std::io::repeat(0).take(10 * MIB), &mut e).unwrap();
        e.finish().unwrap()
    };
    let dec = flate2::read::GzDecoder::new(gz.as_slice());
    let mut r = InflateLimit::new(dec, gz.len() as u64, 100, MIB, 1 << 30);
    assert_eq!(r.limit(), MIB);
    let mut sink = Vec::new();
    let e = r.read_to_end(&mut sink).unwrap_err();
    assert_eq!(
        sink.len() as u64,
        MIB,
        "everything up to the cap is delivered"
    );
    let msg = e.to_string();
    assert!(
        msg.contains(&format!(
            "exceeds the cap of {MIB} bytes for {} compressed bytes",
            gz.len()
        )),
        "{msg}"
    );

    // A stream that ends exactly at the cap is not an error.
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(&vec![7u8; MIB as usize]).unwrap();
    let gz = e.finish().unwrap();
    let mut r = InflateLimit::new(
        flate2::read::GzDecoder::new(gz.as_slice()),
        gz.len() as u64,
        1,
        MIB,
        MIB,
    );
    let mut out = Vec::new();
    r.read_to_end(&mut out).unwrap();
    assert_eq!(out.len() as u64, MIB);

    // The absolute cap wins over the ratio.
    let r = InflateLimit::new(std::io::empty(), 1 << 40, 1000, MIB, 8 * MIB);
    assert_eq!(r.limit(), 8 * MIB);
}

/// The demo NEFF with one more member appended to its tar (`body` streamed), re-gzipped, and
/// the names of the members it had.
fn neff_plus(path: &str, size: u64, body: impl Read) -> (Vec<u8>, Vec<String>) {
    let base = write_neff(&NeffSpec::default());
    let hdr = neuronscope::neff::parse_header(&SliceSource(&base[..1024])).unwrap();
    let payload = &base[1024..(1024 + hdr.data_size) as usize];
    let mut tar_bytes = Vec::new();
    flate2::read::GzDecoder::new(payload)
        .read_to_end(&mut tar_bytes)
        .unwrap();
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut b = tar::Builder::new(gz);
    let mut names = Vec::new();
    for e in tar::Archive::new(tar_bytes.as_slice()).entries().unwrap() {
        let mut e = e.unwrap();
        let mut h = e.header().clone();
        let mut data = Vec::new();
        e.read_to_end(&mut data).unwrap();
        names.push(String::from_utf8_lossy(&e.path_bytes()).into_owned());
        b.append_data(&mut h, e.path().unwrap(), data.as_slice())
            .unwrap();
    }
    b.append(&file_header(path, size), body).unwrap();
    let new_payload = b.into_inner().unwrap().finish().unwrap();
    let mut neff = base[..1024].to_vec();
    neff[0x10..0x18].copy_from_slice(&(new_payload.len() as u64).to_le_bytes());
    neff.extend_from_slice(&new_payload);
    (neff, names)
}

#[test]
fn neff_buffered_manifests_are_capped_by_the_stored_size() {
    // A 40 MiB `def.json` ("[0,0,…]", ~40 kB gzipped) would cost ~16× its size as parsed JSON:
    // over the 32 MiB floor of the buffer budget (32 × the stored payload is lower), so it is
    // listed but not read, with a warning naming the cap.
    let n = 20 * MIB;
    let body = std::io::Cursor::new(b"[0".to_vec())
        .chain(ZeroCommas { left: n * 2 - 2 })
        .chain(std::io::Cursor::new(b"]".to_vec()));
    let (neff, _) = neff_plus("sg07/def.json", n * 2 + 1, body);
    assert!(neff.len() < 512 * 1024, "{}", neff.len());
    let opened = neuronscope::neff::open(&SliceSource(&neff));
    let text = match &opened {
        Ok(x) => x.warnings.join("\n"),
        Err(e) => e.to_string(),
    };
    assert!(
        text.contains(&format!(
            "member sg07/def.json ({} bytes) not read: the buffered members",
            n * 2 + 1
        )) && text.contains(&format!("cap {BUFFER_FLOOR}")),
        "{text}"
    );
}

/// `,0` repeated: `left` bytes of a JSON array's tail.
struct ZeroCommas {
    left: u64,
}

impl Read for ZeroCommas {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let k = (buf.len() as u64).min(self.left) as usize & !1;
        for (i, b) in buf[..k].iter_mut().enumerate() {
            *b = if i % 2 == 0 { b',' } else { b'0' };
        }
        self.left -= k as u64;
        Ok(k)
    }
}

#[test]
fn neff_gzip_bomb_is_an_error_not_an_oom() {
    // A valid demo NEFF whose payload gains one member of 300 MiB of zeros (~300 kB gzipped):
    // over the 256 MiB floor (the ratio cap of 256 × ~0.3 MB is lower). The members before it
    // are listed and the NEFF still opens; the walk stops with the cap in the warning.
    let bomb = 300 * MIB;
    let (neff, names) = neff_plus("weights/zeros.bin", bomb, std::io::repeat(0).take(bomb));
    assert!(neff.len() < 2 * MIB as usize, "{}", neff.len());
    let n = neuronscope::neff::open(&SliceSource(&neff)).expect("the NEFF opens");
    let w = n
        .warnings
        .iter()
        .find(|w| w.contains("payload walk stopped early"))
        .unwrap_or_else(|| panic!("{:#?}", n.warnings));
    assert!(
        w.contains(&format!("exceeds the cap of {INFLATE_FLOOR} bytes")),
        "{w}"
    );
    // Every member before the bomb is listed, and the bomb itself (its header was read).
    assert_eq!(n.members.len(), names.len() + 1, "{:?}", n.members);
    assert!(n.tar_size <= INFLATE_FLOOR + 1024);
}

#[test]
fn source_tar_gz_bomb_keeps_the_files_before_it() {
    // a.py, then 100 MiB of zeros (over the per-file cap, so skipped, but it must still be
    // inflated to reach b.py), then b.py: the 64 MiB floor stops the archive inside the zeros.
    let gz = tar_gz(&[
        ("src/a.py", 6, Some(b"x = 1\n")),
        ("src/zeros.bin", 100 * MIB, None),
        ("src/b.py", 6, Some(b"y = 2\n")),
    ]);
    assert!(gz.len() < 200_000, "{}", gz.len());
    let mut idx = SourceIndex::new();
    let load = idx.add_tar(&SliceSource(&gz), true, "");
    let err = load.error.expect("the bomb is an error");
    assert!(
        err.contains(&format!("exceeds the cap of {SOURCE_INFLATE_FLOOR} bytes")),
        "{err}"
    );
    assert_eq!(load.added, 1);
    assert_eq!(idx.get("src/a.py").unwrap().text, "x = 1\n");
    assert!(idx.get("src/b.py").is_none());

    // The same archive with 10 MiB of zeros is under the floor: everything is read.
    let gz = tar_gz(&[
        ("src/a.py", 6, Some(b"x = 1\n")),
        ("src/zeros.bin", 10 * MIB, None),
        ("src/b.py", 6, Some(b"y = 2\n")),
    ]);
    let mut idx = SourceIndex::new();
    let load = idx.add_tar(&SliceSource(&gz), true, "");
    assert_eq!(load.error, None);
    assert_eq!(load.added, 2);
    assert_eq!(load.skipped_large, 1);
}

#[test]
fn read_vec_checks_the_range_before_allocating() {
    // A length field of 1 TiB in a 16-byte file: Truncated, not a 1 TiB allocation.
    let b = [0u8; 16];
    match SliceSource(&b).read_vec(8, 1 << 40) {
        Err(Error::Truncated {
            offset,
            wanted,
            available,
        }) => {
            assert_eq!((offset, wanted, available), (8, 1 << 40, 8));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(SliceSource(&b).read_vec(8, 8).unwrap(), vec![0u8; 8]);
}
