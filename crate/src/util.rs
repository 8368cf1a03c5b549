//! Small helpers shared by decoders and table builders.

/// `n` and a noun in the number it needs: `1 profile`, `0 profiles`, `3 files` (`one` + `s`).
pub fn count(n: impl Into<u64>, one: &str) -> String {
    let n = n.into();
    format!("{n} {one}{}", if n == 1 { "" } else { "s" })
}

/// `Eq` and `Ord` for `$t` by the value its `key(&self)` method returns (a heap entry ordered by
/// a key that is unique, e.g. (start, file offset), rather than by all its fields).
macro_rules! ord_by_key {
    ($t:ty) => {
        impl PartialEq for $t {
            fn eq(&self, other: &Self) -> bool {
                self.key() == other.key()
            }
        }
        impl Eq for $t {}
        impl PartialOrd for $t {
            fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }
        impl Ord for $t {
            #[inline]
            fn cmp(&self, other: &Self) -> std::cmp::Ordering {
                self.key().cmp(&other.key())
            }
        }
    };
}
pub(crate) use ord_by_key;

/// The first `n` bytes of `b` as lowercase hex pairs split by spaces (`e0 8f 53`), for
/// messages that show what stands where something else was expected.
pub fn hex_bytes(b: &[u8], n: usize) -> String {
    let pairs: Vec<String> = b.iter().take(n).map(|x| format!("{x:02x}")).collect();
    pairs.join(" ")
}

/// Lowercase hex of `b`.
pub fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push_str(&format!("{x:02x}"));
    }
    s
}

/// serde helper: serialise a byte array as lowercase hex.
pub fn ser_hex<S: serde::Serializer, const N: usize>(
    b: &[u8; N],
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(&hex(b))
}

/// A file-system-safe version of `s` (for download and output names): path separators and
/// unusual characters become `_`.
pub fn safe_name(s: &str) -> String {
    let t: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if t.is_empty() {
        "_".into()
    } else {
        t
    }
}

/// `v` as an int32 cell: null when absent or out of range (a value that does not fit is never
/// wrapped or clamped).
pub fn i32_cell<T: TryInto<i32>>(v: Option<T>) -> Option<i32> {
    v.and_then(|v| v.try_into().ok())
}
