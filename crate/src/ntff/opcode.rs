//! Runtime opcode byte → mnemonic (ntff.md §7 item 6).
//!
//! Evidence [OBS]: byte 0 of the runtime slot at pc for every exported instruction row, against
//! the JSON export's `opcode`: 3 991 v6 rows (trn2, profiler 2.28.23.0) and 1 155 v5 rows (inf2,
//! profiler 2.27.33.0); 20 byte values; no byte maps to two mnemonics and none depends on the
//! engine or hardware generation. Re-checked by `tests/ntff_golden.rs`. Bytes not listed here are
//! written raw as `0x%02X` — never guessed (e.g. `0x41`, `0x49`, `0x92`, `0xA7`, `0xA8` are
//! executed in the KevGomes files, which have no export).

/// (byte, mnemonic) pairs, sorted by byte.
pub const OPCODES: &[(u8, &str)] = &[
    (0x01, "LDWEIGHTS"),
    (0x02, "MATMUL"),
    (0x21, "ACTIVATE"),
    (0x23, "ACT_TABLE_LOAD"),
    (0x42, "TENSOR_REDUCE"),
    (0x43, "TENSOR_SCALAR"),
    (0x46, "COPY"),
    (0x47, "CAST"),
    (0x48, "RECIPROCAL"),
    (0xA0, "EVENT_SEMAPHORE"),
    (0xA2, "DRAIN"),
    (0xA4, "NOP"),
    (0xA5, "WRITE"),
    (0xA6, "NOTIFY"),
    (0xA9, "COMPARE_BRANCH"),
    (0xAA, "TENSOR_LOAD"),
    (0xAB, "TENSOR_STORE"),
    (0xB0, "EVENT_SEMAPHORE_RANGE_CLEAR"),
    (0xB1, "SET_ORDERING_MODE"),
    (0xB8, "DMA_DIRECT2D"),
];

/// The MATMUL opcode byte; its rows go on the `TensorMatrix` track (ntff.md §7).
pub const MATMUL: u8 = 0x02;

/// The mnemonic of a known opcode byte.
pub fn mnemonic(byte: u8) -> Option<&'static str> {
    OPCODES
        .binary_search_by_key(&byte, |&(b, _)| b)
        .ok()
        .and_then(|i| OPCODES.get(i))
        .map(|&(_, m)| m)
}

/// The mnemonic, or `0x%02X` for a byte not in [`OPCODES`].
pub fn name(byte: u8) -> std::borrow::Cow<'static, str> {
    match mnemonic(byte) {
        Some(m) => m.into(),
        None => format!("0x{byte:02X}").into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_and_raw() {
        assert!(OPCODES.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(mnemonic(0xB8), Some("DMA_DIRECT2D"));
        assert_eq!(name(0x41), "0x41");
        assert_eq!(name(0x02), "MATMUL");
    }
}
