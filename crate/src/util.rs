//! Small helpers shared by decoders and table builders.

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
