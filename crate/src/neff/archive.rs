//! Streaming walk of a NEFF payload (spec/neff.md §3): one gzip member (or a raw tar), inflated
//! through `flate2` in bounded chunks, and a tar walk that indexes every member while buffering
//! only what the caller asks for. Weights are never buffered.
//!
//! The tar loop is our own (so every allocation is capped: PAX/GNU extension headers, member
//! buffers); 512-byte headers are decoded with the `tar` crate's [`tar::Header`] (ustar, GNU and
//! old formats, octal and base-256 sizes) and PAX records with [`tar::PaxExtensions`].

use std::collections::BTreeMap;
use std::io::Read;

use md5::{Digest, Md5};

use crate::error::{Error, Result};
use crate::source::{ByteSource, RangeReader};

/// Chunk size for reads from the byte source (compressed side).
const CHUNK: usize = 4 << 20;
/// Cap on one PAX (`x`/`g`) or GNU long-name (`L`/`K`) extension header's data.
const EXT_CAP: u64 = 1 << 20;
/// Cap on all buffered members of one walk together (bytes); members past it are listed only.
/// Within it, buffered members may hold at most [`BUFFER_RATIO`] × the payload's stored size
/// (or [`BUFFER_FLOOR`] if larger): the JSON manifests a reader parses cost several times their
/// size in memory, so a small file must not buffer a huge inflated manifest.
pub const TOTAL_BUFFER_CAP: u64 = 1 << 30;
/// Buffered bytes allowed per stored payload byte (see [`TOTAL_BUFFER_CAP`]).
pub const BUFFER_RATIO: u64 = 32;
/// Buffered bytes always allowed (see [`TOTAL_BUFFER_CAP`]).
pub const BUFFER_FLOOR: u64 = 32 << 20;
/// Most uncompressed bytes one NEFF payload may inflate to: [`INFLATE_FLOOR`] or
/// `NEFF_INFLATE_RATIO` × its compressed size, whichever is larger, and never more than
/// [`NEFF_INFLATE_MAX`]. Real payloads (JSON, instruction streams, weights) inflate 2–20×.
pub const NEFF_INFLATE_RATIO: u64 = 256;
/// Absolute cap on a NEFF payload's uncompressed size (bytes).
pub const NEFF_INFLATE_MAX: u64 = 64 << 30;
/// Uncompressed bytes always allowed, whatever the ratio (bytes).
pub const INFLATE_FLOOR: u64 = 256 << 20;

/// Caps what a decompressor may produce: at most `min(max, max(floor, ratio × compressed))`
/// bytes, then an error naming the cap ("gzip bomb" → error, not an out-of-memory abort or an
/// hour of inflating). Used for NEFF payloads, source `.tar.gz` uploads and `.json.gz` traces.
pub struct InflateLimit<R> {
    inner: R,
    produced: u64,
    limit: u64,
    compressed: u64,
}

impl<R> InflateLimit<R> {
    /// Wraps the decompressed stream `inner` of `compressed` input bytes.
    pub fn new(inner: R, compressed: u64, ratio: u64, floor: u64, max: u64) -> Self {
        let limit = compressed.saturating_mul(ratio).max(floor).min(max);
        InflateLimit {
            inner,
            produced: 0,
            limit,
            compressed,
        }
    }
    /// Uncompressed bytes allowed.
    pub fn limit(&self) -> u64 {
        self.limit
    }
    /// The wrapped decompressor.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }
    /// The wrapped decompressor, mutably.
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }
}

impl<R: Read> Read for InflateLimit<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.produced >= self.limit {
            // One byte past the cap tells a stream that ends exactly at it from a bomb.
            let mut probe = [0u8; 1];
            if self.inner.read(&mut probe)? == 0 {
                return Ok(0);
            }
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "decompressed data exceeds the cap of {} bytes for {} compressed bytes \
                     (ratio and size cap against decompression bombs)",
                    self.limit, self.compressed
                ),
            ));
        }
        let room = usize::try_from(self.limit - self.produced).unwrap_or(usize::MAX);
        let k = buf.len().min(room);
        let n = self.inner.read(&mut buf[..k])?;
        self.produced += n as u64;
        Ok(n)
    }
}

/// How the payload is stored (neff.md §3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum PayloadKind {
    /// One gzip member (RFC 1952) holding a tar archive, then zero padding (all samples).
    Gzip,
    /// An uncompressed tar archive (documented for `neuron-packager optimize`, no sample).
    Tar,
}

/// One regular member of the payload's tar archive.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Member {
    /// Path inside the archive, `./` stripped (e.g. `sg00/def.json`).
    pub name: String,
    /// Size in bytes (uncompressed).
    pub size: u64,
    /// Offset of the member's data in the uncompressed tar stream (bytes).
    pub tar_offset: u64,
}

/// What the scan should do with a member's data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Want {
    /// Index only.
    Skip,
    /// Keep the whole member (if it fits under the per-member cap).
    Buffer,
    /// Instruction stream: keep the slot count and byte 0 of each 64-byte slot (neff.md §7).
    Opcodes,
}

/// Byte 0 of every 64-byte slot of a stream.
#[derive(Debug, Clone, Default)]
pub(crate) struct Slots {
    pub opcodes: Vec<u8>,
}

/// Result of one pass over the payload. Everything collected before a fault is kept.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    pub members: Vec<Member>,
    pub buffers: BTreeMap<String, Vec<u8>>,
    pub streams: BTreeMap<String, Slots>,
    /// MD5 of the whole payload (compressed, padding included), when requested and readable.
    pub md5: Option<[u8; 16]>,
    /// Uncompressed bytes walked.
    pub tar_bytes: u64,
    pub warnings: Vec<String>,
    /// A fault that stopped the walk (members before it are valid).
    pub fault: Option<Error>,
    /// Absolute file offset just past the gzip member, when it ended cleanly.
    pub gzip_end: Option<u64>,
    /// Non-zero bytes between the gzip member's end and the payload end (0 = zero padding).
    pub nonzero_after_gzip: u64,
}

/// Sniffs the payload at `start..end` (neff.md §3.1, §2.4 check 6).
pub(crate) fn sniff<S: ByteSource + ?Sized>(src: &S, start: u64, end: u64) -> Result<PayloadKind> {
    let len = end.saturating_sub(start);
    let mut head = vec![0u8; len.min(262) as usize];
    src.read_at(start, &mut head)?;
    if head.len() >= 2 && head[0] == 0x1F && head[1] == 0x8B {
        return Ok(PayloadKind::Gzip);
    }
    if head.get(257..262) == Some(b"ustar".as_slice()) {
        return Ok(PayloadKind::Tar);
    }
    Err(Error::format(
        start,
        "payload starting with gzip magic 1F 8B, or a ustar archive (\"ustar\" at +257)",
        crate::util::hex(&head[..head.len().min(8)]),
    ))
}

/// A reader that feeds every byte it passes through into an MD5 state.
struct HashReader<R> {
    inner: R,
    md5: Option<Md5>,
}

impl<R: Read> Read for HashReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(h) = self.md5.as_mut() {
            h.update(&buf[..n]);
        }
        Ok(n)
    }
}

/// Walks the payload `start..end` of `src`. `want(name, size)` decides per member; `cap` bounds
/// every buffered member (bytes). With `hash`, the MD5 of the full payload is computed on the way
/// (the bytes after the gzip member are read too). Never fails: faults land in [`Scan::fault`].
pub(crate) fn scan<S: ByteSource + ?Sized>(
    src: &S,
    start: u64,
    end: u64,
    kind: PayloadKind,
    hash: bool,
    cap: u64,
    want: &mut dyn FnMut(&str, u64) -> Want,
) -> Scan {
    let mut out = Scan::default();
    let budget = end
        .saturating_sub(start)
        .saturating_mul(BUFFER_RATIO)
        .clamp(BUFFER_FLOOR, TOTAL_BUFFER_CAP);
    let hr = HashReader {
        inner: RangeReader::new(src, start, end, CHUNK),
        md5: hash.then(Md5::new),
    };
    let mut hr = match kind {
        PayloadKind::Gzip => {
            // bufread flavour: after the member ends, the BufReader still holds the bytes that
            // follow it, so the exact member end and the padding are known (neff.md §3.1).
            let br = std::io::BufReader::with_capacity(64 * 1024, hr);
            let gz = flate2::bufread::GzDecoder::new(br);
            let mut gz = InflateLimit::new(
                gz,
                end.saturating_sub(start),
                NEFF_INFLATE_RATIO,
                INFLATE_FLOOR,
                NEFF_INFLATE_MAX,
            );
            match walk(&mut gz, &mut out, cap, budget, want) {
                Err(e) => {
                    let at = gz.get_ref().get_ref().get_ref().inner.position();
                    out.fault = Some(Error::format(
                        at,
                        format!(
                            "a complete gzip member holding a tar archive (uncompressed offset {})",
                            e.tar_offset
                        ),
                        e.what,
                    ));
                }
                Ok(()) => {
                    // Rest of the tar stream (record padding) and the gzip trailer: CRC32 and
                    // ISIZE are checked by flate2 here (never read from the payload's end).
                    match std::io::copy(&mut gz, &mut std::io::sink()) {
                        Ok(n) => {
                            out.tar_bytes = out.tar_bytes.saturating_add(n);
                            let br = gz.get_ref().get_ref();
                            out.gzip_end = Some(
                                br.get_ref()
                                    .inner
                                    .position()
                                    .saturating_sub(br.buffer().len() as u64),
                            );
                        }
                        Err(e) => out
                            .warnings
                            .push(format!("gzip member does not end cleanly: {e}")),
                    }
                }
            }
            let mut br = gz.inner.into_inner();
            if out.gzip_end.is_some() {
                let mut nonzero = br.buffer().iter().filter(|&&b| b != 0).count() as u64;
                let n = br.buffer().len();
                std::io::BufRead::consume(&mut br, n);
                let mut hr = br.into_inner();
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    match hr.read(&mut buf) {
                        Ok(0) => break,
                        Ok(k) => nonzero += buf[..k].iter().filter(|&&b| b != 0).count() as u64,
                        Err(_) => break,
                    }
                }
                out.nonzero_after_gzip = nonzero;
                hr
            } else {
                br.into_inner()
            }
        }
        PayloadKind::Tar => {
            let mut hr = hr;
            if let Err(e) = walk(&mut hr, &mut out, cap, budget, want) {
                out.fault = Some(Error::format(
                    start.saturating_add(e.tar_offset),
                    "a complete tar archive",
                    e.what,
                ));
            }
            hr
        }
    };
    if hash {
        // Hash the rest of the payload: the gzip trailer and zero padding (neff.md §2.2).
        let ok = std::io::copy(&mut hr, &mut std::io::sink()).is_ok();
        if ok {
            if let Some(h) = hr.md5.take() {
                out.md5 = Some(h.finalize().into());
            }
        }
    }
    out
}

struct WalkError {
    tar_offset: u64,
    what: String,
}

/// Reads until `buf` is full; `Ok(false)` on EOF before the first byte, error on EOF inside.
fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> std::io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) if got == 0 => return Ok(false),
            Ok(0) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!("end of data after {got} of {} bytes", buf.len()),
                ))
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Reads up to `n` bytes of member data into a vector (`n` already checked against a cap).
fn read_vec<R: Read>(r: &mut R, n: u64) -> std::io::Result<Vec<u8>> {
    let mut v = Vec::new();
    let got = r.take(n).read_to_end(&mut v)?;
    if (got as u64) < n {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("member data ends after {got} of {n} bytes"),
        ));
    }
    Ok(v)
}

fn skip<R: Read>(r: &mut R, n: u64) -> std::io::Result<()> {
    let got = std::io::copy(&mut r.take(n), &mut std::io::sink())?;
    if got < n {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("member data ends after {got} of {n} bytes"),
        ));
    }
    Ok(())
}

/// Streams `n` bytes keeping byte 0 of each 64-byte slot.
fn read_slots<R: Read>(r: &mut R, n: u64) -> std::io::Result<Vec<u8>> {
    let mut ops = Vec::with_capacity((n / 64).min(1 << 20) as usize);
    let mut buf = vec![0u8; 64 * 1024];
    let mut left = n;
    while left > 0 {
        let k = left.min(buf.len() as u64) as usize;
        if !read_full(r, &mut buf[..k])? {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("stream ends after {} of {n} bytes", n - left),
            ));
        }
        // Chunks start on slot boundaries (64 KiB is a multiple of 64).
        ops.extend(buf[..k].iter().step_by(64).copied());
        left -= k as u64;
    }
    Ok(ops)
}

fn normalize(raw: &[u8]) -> String {
    let s = String::from_utf8_lossy(raw);
    let mut s: &str = &s;
    while let Some(rest) = s.strip_prefix("./") {
        s = rest;
    }
    s.to_string()
}

/// The tar walk (neff.md §3.2): ustar/GNU/PAX, directories skipped, last duplicate wins.
fn walk<R: Read>(
    r: &mut R,
    out: &mut Scan,
    cap: u64,
    budget: u64,
    want: &mut dyn FnMut(&str, u64) -> Want,
) -> std::result::Result<(), WalkError> {
    let mut pos: u64 = 0;
    let mut block = [0u8; 512];
    let mut zero_blocks = 0;
    let mut long_name: Option<Vec<u8>> = None;
    let mut pax_path: Option<Vec<u8>> = None;
    let mut pax_size: Option<u64> = None;
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    let mut buffered: u64 = 0;
    // Messages quote header bytes (the tar crate's field errors do): control bytes escaped.
    let err = |pos: u64, what: String| WalkError {
        tar_offset: pos,
        what: printable(&what),
    };
    loop {
        match read_full(r, &mut block) {
            Ok(true) => {}
            Ok(false) => {
                if zero_blocks == 0 {
                    out.warnings
                        .push("tar archive ends without its end-of-archive blocks".into());
                }
                break;
            }
            Err(e) => return Err(err(pos, e.to_string())),
        }
        let hpos = pos;
        pos += 512;
        out.tar_bytes = pos;
        if block.iter().all(|&b| b == 0) {
            zero_blocks += 1;
            if zero_blocks >= 2 {
                break;
            }
            continue;
        }
        zero_blocks = 0;
        let h = tar::Header::from_byte_slice(&block);
        let sum: u32 = block[..148]
            .iter()
            .chain(&block[156..])
            .map(|&b| b as u32)
            .sum::<u32>()
            + 8 * 32;
        match h.cksum() {
            Ok(c) if c == sum => {}
            Ok(c) => {
                return Err(err(
                    hpos,
                    format!("tar header checksum {c} (computed {sum})"),
                ))
            }
            // The tar crate's message quotes the field's bytes as text (U+FFFD for each
            // non-UTF-8 byte): name them in hex instead, with the member's name.
            Err(_) => {
                let name: String = normalize(block[..100].split(|&b| b == 0).next().unwrap_or(&[]))
                    .chars()
                    .take(100)
                    .collect();
                let field: Vec<String> =
                    block[148..156].iter().map(|b| format!("{b:02x}")).collect();
                return Err(err(
                    hpos,
                    format!(
                        "tar header checksum field that is not an octal number (bytes {}) in the header of {name:?}",
                        field.join(" ")
                    ),
                ));
            }
        }
        let size = match pax_size.take() {
            Some(s) => s,
            None => h
                .entry_size()
                .map_err(|e| err(hpos, format!("unreadable tar size field: {e}")))?,
        };
        let padded = size
            .checked_add(511)
            .map(|s| s & !511)
            .ok_or_else(|| err(hpos, format!("tar member size {size} overflows")))?;
        let flag = block[156];
        let io = |e: std::io::Error| err(pos, e.to_string());
        match flag {
            b'x' | b'g' | b'L' | b'K' => {
                if size > EXT_CAP {
                    out.warnings.push(format!(
                        "tar extension header of {size} bytes at uncompressed offset {hpos} skipped"
                    ));
                    skip(r, padded).map_err(io)?;
                } else {
                    let data = read_vec(r, padded).map_err(io)?;
                    let data = &data[..size as usize];
                    match flag {
                        b'x' => {
                            for ext in tar::PaxExtensions::new(data).flatten() {
                                match ext.key() {
                                    Ok("path") => pax_path = Some(ext.value_bytes().to_vec()),
                                    Ok("size") => {
                                        pax_size = ext.value().ok().and_then(|v| v.parse().ok())
                                    }
                                    _ => {}
                                }
                            }
                        }
                        b'L' => {
                            let end = data.iter().position(|&b| b == 0).unwrap_or(data.len());
                            long_name = Some(data[..end].to_vec());
                        }
                        _ => {}
                    }
                }
            }
            b'0' | 0 | b'7' => {
                let raw = long_name
                    .take()
                    .or_else(|| pax_path.take())
                    .unwrap_or_else(|| h.path_bytes().into_owned());
                pax_path = None;
                let name = normalize(&raw);
                if name.is_empty() || name.ends_with('/') {
                    skip(r, padded).map_err(io)?;
                } else {
                    let m = Member {
                        name: name.clone(),
                        size,
                        tar_offset: pos,
                    };
                    match index.get(&name) {
                        Some(&i) => {
                            out.warnings
                                .push(format!("duplicate tar member {name}: the last one wins"));
                            out.buffers.remove(&name);
                            out.streams.remove(&name);
                            if let Some(slot) = out.members.get_mut(i) {
                                *slot = m;
                            }
                        }
                        None => {
                            index.insert(name.clone(), out.members.len());
                            out.members.push(m);
                        }
                    }
                    match want(&name, size) {
                        Want::Buffer if size <= cap && buffered.saturating_add(size) > budget => {
                            out.warnings.push(format!(
                                "member {name} ({size} bytes) not read: the buffered members \
                                 already hold {buffered} bytes (cap {budget}: {BUFFER_RATIO} × the stored payload, \
                                 at least {BUFFER_FLOOR}, at most {TOTAL_BUFFER_CAP})"
                            ));
                            skip(r, padded).map_err(io)?;
                        }
                        Want::Buffer if size <= cap => {
                            let v = read_vec(r, size).map_err(io)?;
                            skip(r, padded - size).map_err(io)?;
                            buffered += size;
                            out.buffers.insert(name, v);
                        }
                        Want::Buffer => {
                            out.warnings.push(format!(
                                "member {name} ({size} bytes) exceeds the {cap}-byte buffer cap; not read"
                            ));
                            skip(r, padded).map_err(io)?;
                        }
                        Want::Opcodes => {
                            let ops = read_slots(r, size).map_err(io)?;
                            skip(r, padded - size).map_err(io)?;
                            out.streams.insert(name, Slots { opcodes: ops });
                        }
                        Want::Skip => skip(r, padded).map_err(io)?,
                    }
                }
            }
            _ => {
                // Directories, links, devices: no member data to index.
                long_name = None;
                pax_path = None;
                skip(r, padded).map_err(io)?;
            }
        }
        pos = pos
            .checked_add(padded)
            .ok_or_else(|| err(hpos, "tar offset overflows".into()))?;
        out.tar_bytes = pos;
    }
    Ok(())
}

/// `s` with control characters escaped (`\u{1}`, `\n`, …), so text taken from damaged bytes
/// (tar header fields, member names) cannot garble a terminal or a one-line message.
pub fn printable(s: &str) -> String {
    if !s.chars().any(char::is_control) {
        return s.to_string();
    }
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_debug().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn control_bytes_are_escaped() {
        assert_eq!(super::printable("a\u{1}b\nc ü"), "a\\u{1}b\\nc ü");
        assert_eq!(super::printable("plain"), "plain");
    }
}
