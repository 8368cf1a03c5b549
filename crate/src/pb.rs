//! Schema-less protobuf wire reader (spec/neff.md §8), shared by the NEFF `.dbg` files, raw field
//! dumps of NTFF info sections and the system-profile records. Unknown fields are kept, never an
//! error; malformed wire data is an [`Error::Format`] with the absolute offset.

use crate::error::{Error, Result};

/// What a prost decode error found, in the words of an [`Error::Format`]'s `found`: bytes that
/// end inside a field (the message is cut: prost's "buffer underflow"), or damaged protobuf.
/// prost prints `failed to decode Protobuf message: Msg.field: description`.
pub fn decode_error_text(e: &prost::DecodeError) -> String {
    let text = e.to_string();
    let rest = text
        .strip_prefix("failed to decode Protobuf message: ")
        .unwrap_or(&text);
    match rest.strip_suffix("buffer underflow") {
        Some(at) => {
            let field = at.trim_end_matches([':', ' ']);
            if field.is_empty() {
                "bytes that end inside a field (the file is cut or damaged)".into()
            } else {
                format!("bytes that end inside field {field} (the file is cut or damaged)")
            }
        }
        None => format!("damaged protobuf ({rest})"),
    }
}

/// One decoded field value. `Bytes` borrows from the message buffer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
    Fixed32(u32),
}

impl<'a> Value<'a> {
    /// The value as an unsigned integer (varint or fixed), else `None`.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::Varint(v) | Value::Fixed64(v) => Some(v),
            Value::Fixed32(v) => Some(v as u64),
            Value::Bytes(_) => None,
        }
    }
    /// The value as bytes (length-delimited), else `None`.
    pub fn as_bytes(&self) -> Option<&'a [u8]> {
        match *self {
            Value::Bytes(b) => Some(b),
            _ => None,
        }
    }
    /// The value as UTF-8 text (lossy), else `None`.
    pub fn as_str(&self) -> Option<String> {
        self.as_bytes()
            .map(|b| String::from_utf8_lossy(b).into_owned())
    }
}

/// A field: its number, value and the absolute offset of its key.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Field<'a> {
    pub number: u32,
    pub value: Value<'a>,
    pub offset: u64,
}

/// Iterator over the fields of one message. `base` is the absolute offset of `buf[0]` so errors
/// point into the file.
pub struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
    base: u64,
    failed: bool,
}

/// Iterates the fields of `buf`, whose first byte sits at absolute offset `base`.
pub fn fields(buf: &[u8], base: u64) -> Fields<'_> {
    Fields {
        buf,
        pos: 0,
        base,
        failed: false,
    }
}

/// Reads a varint at `buf[*pos..]`, advancing `pos`. Errors name the absolute offset.
pub fn read_varint(buf: &[u8], pos: &mut usize, base: u64) -> Result<u64> {
    let start = *pos;
    let mut v: u64 = 0;
    for i in 0..10 {
        let Some(&b) = buf.get(*pos) else {
            return Err(Error::format(
                base + start as u64,
                "a complete varint",
                "end of message",
            ));
        };
        *pos += 1;
        v |= ((b & 0x7f) as u64) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(Error::format(
        base + start as u64,
        "a varint of at most 10 bytes",
        "a longer one",
    ))
}

impl<'a> Fields<'a> {
    fn next_field(&mut self) -> Result<Field<'a>> {
        let off = self.base + self.pos as u64;
        let key = read_varint(self.buf, &mut self.pos, self.base)?;
        let number = (key >> 3) as u32;
        if number == 0 {
            return Err(Error::format(off, "a field number > 0", "0"));
        }
        let value = match key & 7 {
            0 => Value::Varint(read_varint(self.buf, &mut self.pos, self.base)?),
            1 => {
                let b = self.take(8, off)?;
                Value::Fixed64(u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
            }
            2 => {
                let len = read_varint(self.buf, &mut self.pos, self.base)?;
                let len = usize::try_from(len).unwrap_or(usize::MAX);
                Value::Bytes(self.take(len, off)?)
            }
            5 => {
                let b = self.take(4, off)?;
                Value::Fixed32(u32::from_le_bytes(b.try_into().unwrap_or([0; 4])))
            }
            wt => {
                return Err(Error::format(
                    off,
                    "wire type 0, 1, 2 or 5",
                    format!("wire type {wt}"),
                ))
            }
        };
        Ok(Field {
            number,
            value,
            offset: off,
        })
    }

    fn take(&mut self, n: usize, off: u64) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        match end {
            Some(e) => {
                let s = &self.buf[self.pos..e];
                self.pos = e;
                Ok(s)
            }
            None => Err(Error::Truncated {
                offset: off,
                wanted: n as u64,
                available: (self.buf.len() - self.pos) as u64,
            }),
        }
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<Field<'a>>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.buf.len() {
            return None;
        }
        let r = self.next_field();
        if r.is_err() {
            self.failed = true;
        }
        Some(r)
    }
}

/// Decodes a packed repeated varint field (proto3 default for repeated scalars).
pub fn packed_varints(buf: &[u8], base: u64) -> Result<Vec<u64>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        out.push(read_varint(buf, &mut pos, base)?);
    }
    Ok(out)
}

/// Appends a varint to `out` (used by our own writers).
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends a length-delimited field.
pub fn put_bytes(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    put_varint(out, ((number as u64) << 3) | 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Appends a varint field (skipped when 0, as proto3 does).
pub fn put_uint(out: &mut Vec<u8>, number: u32, v: u64) {
    if v != 0 {
        put_varint(out, (number as u64) << 3);
        put_varint(out, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_message_is_named_as_cut() {
        use prost::Message;
        // `instance_id` (field 4, bytes) claiming 5 bytes, of which 2 are there.
        let e = crate::proto::TraceInfoPb::decode([0x22u8, 0x05, 0x0a, 0x01].as_slice())
            .expect_err("cut");
        let t = decode_error_text(&e);
        assert!(
            t.starts_with("bytes that end inside field TraceInfoPb."),
            "{t}"
        );
        assert!(t.ends_with("(the file is cut or damaged)"), "{t}");
        let bad = crate::proto::TraceInfoPb::decode([0x0fu8].as_slice()).expect_err("wire 7");
        assert!(
            decode_error_text(&bad).starts_with("damaged protobuf ("),
            "{bad}"
        );
    }

    #[test]
    fn roundtrip_and_errors() {
        let mut m = Vec::new();
        put_uint(&mut m, 1, 300);
        put_bytes(&mut m, 2, b"sg00");
        let f: Vec<_> = fields(&m, 100).collect::<Result<_>>().unwrap();
        assert_eq!(f[0].number, 1);
        assert_eq!(f[0].value.as_u64(), Some(300));
        assert_eq!(f[1].value.as_str().as_deref(), Some("sg00"));
        assert_eq!(f[1].offset, 103);
        // truncated length-delimited field: error names the field's offset
        let bad = [0x12, 0x05, b'a'];
        let e = fields(&bad, 7).next().unwrap().unwrap_err();
        assert_eq!(e.offset(), Some(7));
        // wire type 3 (groups) is refused
        let e = fields(&[0x0b], 0).next().unwrap().unwrap_err();
        assert!(e.to_string().contains("wire type 3"));
    }
}
