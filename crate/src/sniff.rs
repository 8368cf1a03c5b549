//! What a file's bytes look like, apart from any decoder: [`sniff`] looks at the first
//! [`HEAD_LEN`] bytes only, so the inventory can say what a file is (and what a misnamed one
//! really is: "x.ntff looks like a runtime trace (ntrace.pb)") without decoding it.
//!
//! Signatures (every sample file of each kind is checked in `crate/tests/sniff_samples.rs`):
//! - NEFF: u64 `pkg_version` 1 or 2 at 0, u64 `header_size` in 24 ..= file length at 8 (neff.md
//!   §2.4 checks 1–3), and a file of at least 1024 bytes;
//! - NTFF: version byte 1 ..= [`MAX_PLAUSIBLE_NTFF_VERSION`] at 0, u64 info length P at 1 no
//!   larger than [`crate::ntff::MAX_INFO_LEN`], and an info section that starts with field 1
//!   (the NEFF name, length-delimited) and walks as protobuf through the bytes at hand (ntff.md
//!   §2–3; every sample's info section starts `0a`);
//! - u32-framed protobuf (`ntrace.pb`, `cpu_util.pb`, `host_mem.pb`, system-profile.md §2): a
//!   u32-LE length, that many bytes of protobuf, repeated; frames holding only scalars are the
//!   host samples, frames with length-delimited fields the runtime trace;
//! - one protobuf message (`trace_info.pb`): at least two fields, all of it valid wire format;
//! - JSON: first non-blank byte `{` or `[`; pickle: `0x80` then protocol 2 – 5; gzip: `1f 8b`;
//!   tar: `ustar` at offset 257.

use crate::error::Result;
use crate::source::ByteSource;

/// Bytes [`sniff_source`] reads from the start of a file.
pub const HEAD_LEN: usize = 4096;

/// Highest NTFF version byte still taken for an NTFF (a newer one than [`crate::ntff::MAX_VERSION`]
/// is decoded with the newest layout when its structure checks pass). A byte above this is not a
/// version: the renamed `ntrace.pb` of issue 12 starts with 79.
pub const MAX_PLAUSIBLE_NTFF_VERSION: u8 = 31;

/// What the bytes of a file look like.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "looks_like")]
pub enum Sniffed {
    /// 0 bytes.
    Empty,
    /// A NEFF header.
    Neff,
    /// An NTFF header (and info section, when the file holds one); `version` is byte 0.
    Ntff {
        /// Byte 0.
        version: u8,
    },
    /// u32-LE-framed protobuf records.
    FramedProtobuf {
        /// True when the frames seen hold only scalar fields (`cpu_util.pb`, `host_mem.pb`);
        /// false when they carry length-delimited fields (`ntrace.pb`).
        samples: bool,
    },
    /// One protobuf message (`trace_info.pb`).
    Protobuf,
    /// JSON text.
    Json,
    /// A Python pickle.
    Pickle {
        /// Protocol byte (2 – 5).
        protocol: u8,
    },
    /// gzip-compressed data.
    Gzip,
    /// A tar archive.
    Tar,
    /// Other UTF-8 text.
    Text,
    /// None of the above; `head` is the first bytes in hex.
    Unknown {
        /// Up to 8 leading bytes, hex, space separated.
        head: String,
    },
}

impl Sniffed {
    /// A short description for messages: "a runtime trace (ntrace.pb)".
    pub fn describe(&self) -> String {
        match self {
            Sniffed::Empty => "an empty file".into(),
            Sniffed::Neff => "a compiled program (NEFF)".into(),
            Sniffed::Ntff { version } => format!("a device trace (NTFF, version byte {version})"),
            Sniffed::FramedProtobuf { samples: false } => "a runtime trace (ntrace.pb)".into(),
            Sniffed::FramedProtobuf { samples: true } => {
                "host CPU or memory samples (cpu_util.pb / host_mem.pb)".into()
            }
            Sniffed::Protobuf => "a protobuf message (like trace_info.pb)".into(),
            Sniffed::Json => "JSON (a framework trace or a profiler JSON export)".into(),
            Sniffed::Pickle { protocol } => format!("a Python pickle (protocol {protocol})"),
            Sniffed::Gzip => "gzip-compressed data".into(),
            Sniffed::Tar => "a tar archive".into(),
            Sniffed::Text => "text".into(),
            Sniffed::Unknown { head } => {
                format!("no format neuronscope knows (first bytes {head})")
            }
        }
    }
}

/// The first [`HEAD_LEN`] bytes of `src` (fewer for a shorter file), what [`sniff`] looks at.
///
/// Errors: only when the read itself fails.
pub fn read_head<S: ByteSource + ?Sized>(src: &S) -> Result<Vec<u8>> {
    let n = src.len().min(HEAD_LEN as u64) as usize;
    let mut head = vec![0u8; n];
    src.read_at(0, &mut head)?;
    Ok(head)
}

/// Reads the first [`HEAD_LEN`] bytes of `src` and sniffs them.
///
/// Errors: only when the read itself fails.
pub fn sniff_source<S: ByteSource + ?Sized>(src: &S) -> Result<Sniffed> {
    Ok(sniff(&read_head(src)?, src.len()))
}

/// What `head` (the first bytes of a file of `len` bytes) looks like. Never fails.
pub fn sniff(head: &[u8], len: u64) -> Sniffed {
    if len == 0 || head.is_empty() {
        return Sniffed::Empty;
    }
    if head.starts_with(&[0x1f, 0x8b]) {
        return Sniffed::Gzip;
    }
    if head.get(257..262) == Some(b"ustar".as_slice()) {
        return Sniffed::Tar;
    }
    if head[0] == 0x80 && head.get(1).is_some_and(|p| (2..=5).contains(p)) {
        return Sniffed::Pickle { protocol: head[1] };
    }
    if looks_like_neff(head, len) {
        return Sniffed::Neff;
    }
    if ntff_shape(head, len).is_ok() {
        return Sniffed::Ntff { version: head[0] };
    }
    let text = std::str::from_utf8(head)
        .or_else(|e| {
            // A multi-byte character cut by the end of the window is still text.
            if e.error_len().is_none() {
                std::str::from_utf8(&head[..e.valid_up_to()])
            } else {
                Err(e)
            }
        })
        .ok();
    if let Some(t) = text {
        let t = t.trim_start_matches('\u{feff}').trim_start();
        if t.starts_with('{') || t.starts_with('[') {
            return Sniffed::Json;
        }
    }
    if let Some(samples) = framed(head, len) {
        return Sniffed::FramedProtobuf { samples };
    }
    if text.is_some_and(|t| t.chars().all(|c| !c.is_control() || c.is_whitespace())) {
        return Sniffed::Text;
    }
    let whole = head.len() as u64 == len;
    if let Some(n) = walk_fields(head, whole) {
        if n >= 2 {
            return Sniffed::Protobuf;
        }
    }
    Sniffed::Unknown {
        head: crate::util::hex_bytes(head, 8),
    }
}

/// The little-endian u64 at byte `o` of `b` (`None` past its end).
pub(crate) fn u64_at(b: &[u8], o: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?))
}

fn looks_like_neff(head: &[u8], len: u64) -> bool {
    if len < crate::neff::HEADER_LEN as u64 {
        return false;
    }
    let (Some(pkg), Some(hsize)) = (u64_at(head, 0), u64_at(head, 8)) else {
        return false;
    };
    (1..=2).contains(&pkg) && (24..=len).contains(&hsize)
}

/// Checks an NTFF's first bytes, however few (ntff.md §2): the version byte, and the
/// info-section length when bytes 1–8 are there. `Ok((version, info length))`, or the offset and
/// reason they are no NTFF's.
pub fn ntff_start(head: &[u8]) -> std::result::Result<(u8, Option<u64>), (u64, String)> {
    let version = head.first().copied().unwrap_or(0);
    if version == 0 || version > MAX_PLAUSIBLE_NTFF_VERSION {
        return Err((
            0,
            format!("byte 0 is {version}, not an NTFF version (1 – {MAX_PLAUSIBLE_NTFF_VERSION})"),
        ));
    }
    let p = u64_at(head, 1);
    if let Some(p) = p.filter(|&p| p > crate::ntff::MAX_INFO_LEN) {
        return Err((
            1,
            format!(
                "bytes 1–8 give an info-section length of {p}, above {} (no NTFF's)",
                crate::ntff::MAX_INFO_LEN
            ),
        ));
    }
    Ok((version, p))
}

/// Checks the NTFF header and the start of its info section (ntff.md §2–3). `Ok(version)`, or
/// the offset and reason it is not an NTFF: `(0, "byte 0 is 79, not an NTFF version (1 – 31)")`.
pub fn ntff_shape(head: &[u8], len: u64) -> std::result::Result<u8, (u64, String)> {
    if len < crate::ntff::HEADER_LEN || head.len() < 9 {
        return Err((
            0,
            format!("{len} bytes, shorter than the 128-byte NTFF header"),
        ));
    }
    let (version, p) = ntff_start(head)?;
    let p = p.unwrap_or(u64::MAX);
    if p == 0 || head.len() <= 128 {
        return Ok(version); // empty, or only the header in hand: nothing more to check
    }
    let end = (128 + p).min(head.len() as u64) as usize;
    let info = &head[128..end];
    if info.first() != Some(&0x0a) {
        return Err((
            128,
            format!(
                "the info section at offset 128 starts with 0x{:02x}, not field 1 (NEFF name, 0x0a)",
                info[0]
            ),
        ));
    }
    // The whole info section is at hand only when it ends inside the window.
    let complete = 128 + p <= head.len() as u64;
    match walk_fields(info, complete) {
        Some(_) => Ok(version),
        None => Err((128, "the info section at offset 128 is not protobuf".into())),
    }
}

/// Walks protobuf fields through `b`. Returns the number of complete fields, or `None` on a
/// malformed key or a field running past `b` when `complete` (the message ends with `b`).
fn walk_fields(b: &[u8], complete: bool) -> Option<usize> {
    let mut pos = 0usize;
    let mut n = 0usize;
    while pos < b.len() {
        let Some(key) = varint(b, &mut pos) else {
            return (!complete).then_some(n); // cut by the window
        };
        let (number, wire) = (key >> 3, key & 7);
        if number == 0 || number > (1 << 29) {
            return None;
        }
        let skip = match wire {
            0 => match varint(b, &mut pos) {
                Some(_) => 0,
                None => return (!complete).then_some(n),
            },
            1 => 8,
            2 => match varint(b, &mut pos) {
                Some(l) => l,
                None => return (!complete).then_some(n),
            },
            5 => 4,
            _ => return None,
        };
        let next = (pos as u64).saturating_add(skip);
        if next > b.len() as u64 {
            return (!complete).then_some(n);
        }
        pos = next as usize;
        n += 1;
    }
    Some(n)
}

fn varint(b: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for i in 0..10 {
        let byte = *b.get(*pos)?;
        *pos += 1;
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// One step of [`Frames`]: what the next u32-LE length prefix of a framed file leads to.
enum Frame<'a> {
    /// The file ends on a frame boundary.
    End,
    /// The file ends inside the 4-byte length prefix.
    PrefixCut,
    /// The frame runs past the window (not the file): judged by the frames before it.
    PastWindow,
    /// A length of 0 or above [`crate::system::decode::MAX_RECORD`].
    BadLength,
    /// The file's end cuts the body: the bytes of it in the window.
    CutBody(&'a [u8]),
    /// A whole body in the window.
    Body(&'a [u8]),
}

/// The frames of `head`, the first bytes of a framed protobuf file of `len` bytes
/// (system-profile.md §2), front to back; the walk [`framed`] and [`cut_framed`] share.
struct Frames<'a> {
    head: &'a [u8],
    len: u64,
    pos: u64,
}

impl<'a> Frames<'a> {
    fn new(head: &'a [u8], len: u64) -> Self {
        Frames { head, len, pos: 0 }
    }
    /// The next frame; a whole body moves the walk past it, every other step ends it.
    fn step(&mut self) -> Frame<'a> {
        let (head, len, pos) = (self.head, self.len, self.pos);
        if pos >= len {
            return Frame::End;
        }
        if pos + 4 > len {
            return Frame::PrefixCut;
        }
        let Some(n) = usize::try_from(pos)
            .ok()
            .and_then(|p| head.get(p..p.checked_add(4)?))
            .and_then(|b| b.try_into().ok())
            .map(u32::from_le_bytes)
        else {
            return Frame::PastWindow;
        };
        let n = u64::from(n);
        if n == 0 || n > u64::from(crate::system::decode::MAX_RECORD) {
            return Frame::BadLength;
        }
        let (start, end) = (pos + 4, pos + 4 + n);
        let window = head.len() as u64;
        let body = &head[start.min(window) as usize..end.min(window) as usize];
        if end > len {
            return Frame::CutBody(body);
        }
        if end > window {
            return Frame::PastWindow;
        }
        self.pos = end;
        Frame::Body(body)
    }
}

/// True when `head` (the first bytes of a file of `len` bytes) is a cut copy of a framed
/// protobuf file (`ntrace.pb`, `cpu_util.pb`, `host_mem.pb`; system-profile.md §2): every frame
/// in the window is well formed until one whose length or body the file's end cuts off. A file
/// that [`sniff`] cannot place for another reason (a bad length, a body that is not protobuf)
/// is not cut but foreign.
pub fn cut_framed(head: &[u8], len: u64) -> bool {
    let mut frames = Frames::new(head, len);
    loop {
        match frames.step() {
            Frame::PrefixCut => return true,
            // Cut here if what is left of the body still reads as protobuf fields.
            Frame::CutBody(body) => return walk_fields(body, false).is_some(),
            Frame::Body(body) if walk_fields(body, true).is_some() => {}
            _ => return false,
        }
    }
}

/// True when `head` is a whole file of `len` bytes holding protobuf fields that the file's
/// end cuts off (a cut `trace_info.pb`, system-profile.md §3): at least one whole field, no bad
/// key or wire type, and the last field runs past the end.
pub fn cut_message(head: &[u8], len: u64) -> bool {
    head.len() as u64 == len
        && walk_fields(head, true).is_none()
        && walk_fields(head, false).is_some_and(|n| n >= 1)
}

/// `Some(samples)` when `head` starts with u32-LE-framed protobuf records (at least one whole
/// frame, and every frame in the window well formed).
fn framed(head: &[u8], len: u64) -> Option<bool> {
    let mut walk = Frames::new(head, len);
    let mut frames = 0;
    let mut only_scalars = true;
    loop {
        match walk.step() {
            Frame::Body(body) => {
                walk_fields(body, true)?;
                only_scalars &= scalars_only(body);
                frames += 1;
            }
            Frame::End | Frame::PrefixCut | Frame::PastWindow => break,
            Frame::BadLength | Frame::CutBody(_) => return None,
        }
    }
    (frames > 0).then_some(only_scalars)
}

/// True when the message holds only scalar fields (varint, fixed32, fixed64): the host samples
/// (`cpu_util.pb` has a float, `host_mem.pb` varints), never the runtime trace's strings.
fn scalars_only(b: &[u8]) -> bool {
    let mut pos = 0;
    while pos < b.len() {
        let Some(key) = varint(b, &mut pos) else {
            return false;
        };
        let skip = match key & 7 {
            0 => {
                if varint(b, &mut pos).is_none() {
                    return false;
                }
                0
            }
            1 => 8,
            5 => 4,
            _ => return false,
        };
        pos += skip;
    }
    pos == b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ntff(version: u8, info: &[u8]) -> Vec<u8> {
        let mut f = vec![0u8; 128];
        f[0] = version;
        f[1..9].copy_from_slice(&(info.len() as u64).to_le_bytes());
        f.extend_from_slice(info);
        f.extend_from_slice(&[0; 64]);
        f
    }

    #[test]
    fn cut_copies_of_framed_and_plain_protobuf() {
        // Two framed records: field 1 varint, field 2 of 3 bytes.
        let rec = [0x08u8, 0x01, 0x12, 0x03, b'a', b'b', b'c'];
        let mut whole = Vec::new();
        for _ in 0..2 {
            whole.extend_from_slice(&(rec.len() as u32).to_le_bytes());
            whole.extend_from_slice(&rec);
        }
        let n = whole.len() as u64;
        assert!(!cut_framed(&whole, n), "whole");
        assert!(!cut_framed(&whole[..11], 11), "one whole record");
        for cut in [1usize, 3, 4, 6, 10, 12, 16, 21] {
            assert!(cut_framed(&whole[..cut], cut as u64), "cut at {cut}");
        }
        assert!(
            !cut_framed(&[0xff, 0xff, 0xff, 0x7f, 0], 5),
            "a huge length is foreign"
        );
        assert!(
            !cut_framed(&[3, 0, 0, 0, 0x0f, 0, 0], 7),
            "a body that is not protobuf is foreign"
        );
        // trace_info-like: the same fields unframed.
        assert!(!cut_message(&rec, rec.len() as u64), "whole message");
        assert!(cut_message(&rec[..5], 5), "cut inside field 2");
        assert!(
            !cut_message(&rec[..5], 100),
            "only a window of a longer file"
        );
        assert!(!cut_message(&[0x0f, 0x01], 2), "wire type 7: foreign");
    }

    #[test]
    fn signatures() {
        let s = |b: &[u8]| sniff(b, b.len() as u64);
        assert_eq!(s(b""), Sniffed::Empty);
        assert_eq!(s(&[0x1f, 0x8b, 8, 0]), Sniffed::Gzip);
        let mut tar = vec![0u8; 512];
        tar[257..262].copy_from_slice(b"ustar");
        assert_eq!(s(&tar), Sniffed::Tar);
        assert_eq!(s(&[0x80, 4, 0x95]), Sniffed::Pickle { protocol: 4 });
        assert_eq!(s(b"  {\"traceEvents\": []}"), Sniffed::Json);
        assert_eq!(s(b"[1, 2]"), Sniffed::Json);
        assert_eq!(s(b"hello world\n"), Sniffed::Text);
        let mut neff = vec![0u8; 2048];
        neff[0] = 2;
        neff[8..16].copy_from_slice(&1024u64.to_le_bytes());
        assert_eq!(s(&neff), Sniffed::Neff);
        // NTFF: field 1 (name) then field 5 (varint).
        let f = ntff(6, &[0x0a, 2, b'a', b'b', 0x28, 1]);
        assert_eq!(s(&f), Sniffed::Ntff { version: 6 });
        assert_eq!(s(&ntff(7, &[0x0a, 1, b'x'])), Sniffed::Ntff { version: 7 });
        // Framed: frames of scalars (host samples: cpu_util.pb's float, a varint), then one with
        // a string (runtime trace).
        let samples = [
            7, 0, 0, 0, 0x0d, 0, 0, 0xc0, 0x41, 0x10, 2, 2, 0, 0, 0, 0x08, 3,
        ];
        assert_eq!(s(&samples), Sniffed::FramedProtobuf { samples: true });
        let trace = [5, 0, 0, 0, 0x62, 3, b'a', b'b', b'c'];
        assert_eq!(s(&trace), Sniffed::FramedProtobuf { samples: false });
        // One message: trace_info.pb's first bytes.
        assert_eq!(s(&[0x08, 2, 0x10, 0x87, 0x46]), Sniffed::Protobuf);
        match s(&[0x46, 0xff, 0xfe, 0xfd, 0xfc, 0x00, 0x07, 0xa0, 0x11]) {
            Sniffed::Unknown { head } => assert_eq!(head, "46 ff fe fd fc 00 07 a0"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn ntff_reasons() {
        let mut f = ntff(6, &[0x0a, 1, b'x']);
        f[0] = 79;
        let (at, e) = ntff_shape(&f, f.len() as u64).unwrap_err();
        assert!(at == 0 && e.contains("byte 0 is 79"), "{e}");
        let f = ntff(6, &[0x12, 1, b'x']);
        let (at, e) = ntff_shape(&f, f.len() as u64).unwrap_err();
        assert!(at == 128 && e.contains("starts with 0x12"), "{e}");
        let mut f = ntff(6, &[0x0a, 1, b'x']);
        f[1..9].copy_from_slice(&u64::MAX.to_le_bytes());
        let (at, e) = ntff_shape(&f, f.len() as u64).unwrap_err();
        assert!(at == 1 && e.contains("info-section length"), "{e}");
        // A field running past the end of a complete info section.
        let f = ntff(6, &[0x0a, 9, b'x']);
        assert!(ntff_shape(&f, f.len() as u64).is_err());
        // Only the header in hand (cut off): still an NTFF, the decoder reports the truncation.
        let mut h = vec![0u8; 128];
        h[0] = 6;
        h[1] = 100;
        assert_eq!(ntff_shape(&h, 128), Ok(6));
        assert!(ntff_shape(&h[..100], 100).is_err());
    }
}
