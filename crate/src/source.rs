//! Random-access byte sources: the only way a decoder sees its input (ARCHITECTURE.md "Seams").
//!
//! A decoder asks for `(offset, len)` ranges and never for the whole file, so a multi-GB NTFF can
//! be decoded inside wasm32's 4 GiB. Implementations: [`SliceSource`] (tests, synthetic data),
//! [`FileSource`] (native CLI) and, in the browser, `wasm::BlobSource` (slices of a `Blob` read
//! with `FileReaderSync` in a Web Worker).

use crate::error::{Error, Result};

/// A random-access, read-only byte source of known length.
pub trait ByteSource {
    /// Total length in bytes.
    fn len(&self) -> u64;
    /// True when the source holds no bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Fills `buf` with the bytes at `offset..offset + buf.len()`.
    ///
    /// Errors: [`Error::Truncated`] when the range runs past the end, [`Error::Io`] on a read
    /// failure.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()>;

    /// Reads `len` bytes at `offset` into a new vector.
    ///
    /// Errors: [`Error::Truncated`] when the range runs past the end, checked before anything is
    /// allocated (so a length read from the file cannot allocate more than the file holds).
    fn read_vec(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        check_range(self.len(), offset, len)?;
        let mut v = vec![0u8; len];
        self.read_at(offset, &mut v)?;
        Ok(v)
    }
}

/// Bytes the streaming decoders read per call in the page (NTFF buffers, a one-run DMA
/// time-ordered pass, `trace.json`, framed `.pb` files): each read there is a `Blob.slice` +
/// `FileReaderSync` call, which costs ≈ 10 ms on top of ≈ 2.5 ms per MiB (Chromium worker, 200 MB
/// NTFF, this 2-core machine: 1 MiB slices 93 – 181 MB/s, 4 MiB 130 – 260, 16 MiB 284 – 427,
/// 32 MiB 317 – 539), so 16 MiB pieces instead of 1 – 4 MiB. Natively a read is a `pread` and
/// the decoders keep their own smaller pieces (cache-sized).
pub const BROWSER_READ: usize = 16 << 20;

/// Bytes per read of the streaming readers that take 1 MiB natively (`trace.json`, framed `.pb`
/// files, pickles): [`BROWSER_READ`] in the page.
pub const STREAM_READ: usize = if cfg!(target_arch = "wasm32") {
    BROWSER_READ
} else {
    1 << 20
};

/// Checks that `offset + len` lies within a source of length `total`.
pub fn check_range(total: u64, offset: u64, len: usize) -> Result<()> {
    match offset.checked_add(len as u64) {
        Some(end) if end <= total => Ok(()),
        _ => Err(Error::Truncated {
            offset,
            wanted: len as u64,
            available: total.saturating_sub(offset),
        }),
    }
}

/// An in-memory source (tests, synthetic captures, small files already in memory).
#[derive(Clone, Copy)]
pub struct SliceSource<'a>(pub &'a [u8]);

impl ByteSource for SliceSource<'_> {
    fn len(&self) -> u64 {
        self.0.len() as u64
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        check_range(self.len(), offset, buf.len())?;
        let o = offset as usize;
        buf.copy_from_slice(&self.0[o..o + buf.len()]);
        Ok(())
    }
}

impl ByteSource for Vec<u8> {
    fn len(&self) -> u64 {
        self.as_slice().len() as u64
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        SliceSource(self).read_at(offset, buf)
    }
}

impl<T: ByteSource + ?Sized> ByteSource for &T {
    fn len(&self) -> u64 {
        (**self).len()
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        (**self).read_at(offset, buf)
    }
}

impl<T: ByteSource + ?Sized> ByteSource for Box<T> {
    fn len(&self) -> u64 {
        (**self).len()
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        (**self).read_at(offset, buf)
    }
}

impl<T: ByteSource + ?Sized> ByteSource for std::rc::Rc<T> {
    fn len(&self) -> u64 {
        (**self).len()
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        (**self).read_at(offset, buf)
    }
}

/// A native file read with positioned reads (no seek state, so `&self` suffices).
#[cfg(not(target_arch = "wasm32"))]
pub struct FileSource {
    file: std::fs::File,
    len: u64,
}

#[cfg(not(target_arch = "wasm32"))]
impl FileSource {
    /// Opens `path` for positioned reads. Errors: [`Error::Io`].
    pub fn open(path: &std::path::Path) -> Result<Self> {
        let file = std::fs::File::open(path).map_err(|e| Error::Io(e.to_string()))?;
        let len = file.metadata().map_err(|e| Error::Io(e.to_string()))?.len();
        Ok(FileSource { file, len })
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl ByteSource for FileSource {
    fn len(&self) -> u64 {
        self.len
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        check_range(self.len, offset, buf.len())?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileExt;
            self.file
                .read_exact_at(buf, offset)
                .map_err(|e| Error::Io(e.to_string()))
        }
        #[cfg(not(unix))]
        {
            use std::io::{Read, Seek, SeekFrom};
            let mut f = &self.file;
            f.seek(SeekFrom::Start(offset))
                .map_err(|e| Error::Io(e.to_string()))?;
            f.read_exact(buf).map_err(|e| Error::Io(e.to_string()))
        }
    }
}

/// A sequential `std::io::Read` over a byte range of a source, reading in chunks of
/// `chunk` bytes (for streaming gzip/tar payloads without holding them whole).
pub struct RangeReader<S: ByteSource> {
    src: S,
    pos: u64,
    end: u64,
    buf: Vec<u8>,
    buf_pos: usize,
    chunk: usize,
}

impl<S: ByteSource> RangeReader<S> {
    /// Reads `src[start..end]` sequentially, `chunk` bytes per underlying read.
    pub fn new(src: S, start: u64, end: u64, chunk: usize) -> Self {
        RangeReader {
            src,
            pos: start,
            end,
            buf: Vec::new(),
            buf_pos: 0,
            chunk: chunk.max(1),
        }
    }
    /// Absolute offset of the next byte `read` will return.
    pub fn position(&self) -> u64 {
        self.pos - (self.buf.len() - self.buf_pos) as u64
    }
}

impl<S: ByteSource> std::io::Read for RangeReader<S> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.buf_pos >= self.buf.len() {
            if self.pos >= self.end {
                return Ok(0);
            }
            let n = ((self.end - self.pos) as usize).min(self.chunk);
            self.buf.resize(n, 0);
            self.src
                .read_at(self.pos, &mut self.buf)
                .map_err(|e| std::io::Error::other(e.to_string()))?;
            self.pos += n as u64;
            self.buf_pos = 0;
        }
        let n = out.len().min(self.buf.len() - self.buf_pos);
        out[..n].copy_from_slice(&self.buf[self.buf_pos..self.buf_pos + n]);
        self.buf_pos += n;
        Ok(n)
    }
}
