//! The 16-byte notification record of every NTFF trace buffer (docs/format/ntff.md §4) and
//! its bit fields, each named once here so decoders never spell out a shift and a mask.
//!
//! A record is `w0` (u32 LE), `w1` (u32 LE), `ts` (u64 LE, raw ticks of the block that wrote
//! it, §5). Which fields mean something depends on the buffer the record came from (trace type
//! 0 instruction, 1 event, 2/3 error, 4 DMA, 5 throttle; §3.4): the accessors are grouped by
//! buffer type and say which section they rest on. They are pure bit extractions; validation
//! (pc range, window, pairing) is the decoders'.

/// One 16-byte notification record (ntff.md §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rec {
    /// First word.
    pub w0: u32,
    /// Second word.
    pub w1: u32,
    /// Raw timestamp, ticks of the writing block (ps on trn2, ntff.md §5.1).
    pub ts: u64,
}

/// Bytes per record.
pub const REC_BYTES: usize = 16;

/// Kind of a record of an instruction buffer, from w0[31:24] (ntff.md §4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InsKind {
    /// `0x84 + 4 × engine`: an instruction started on `engine` (0 – 4 = PE, ACT, POOL, DVE, SP).
    Start(usize),
    /// `0x85 + 4 × engine`: an instruction ended on `engine`.
    End(usize),
    /// `0x8E` (POOL) / `0x96` (SP): a DGE notification, skipped by the decoder (ntff.md §4.1).
    DgeNotification,
    /// Any other kind byte (not an instruction record).
    Other,
}

/// Phase of a DMA record, w1[3:0] (ntff.md §4.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DmaPhase {
    /// Phase 1: the packet started.
    Start,
    /// Phase 5: data done (carries bytes and CRC).
    End,
    /// Phase 6 (later completion) or any other value: not used.
    Other,
}

impl Rec {
    /// The record in `b` (little-endian words, ntff.md §4).
    #[inline]
    pub fn from_bytes(b: &[u8; REC_BYTES]) -> Rec {
        let [a0, a1, a2, a3, b0, b1, b2, b3, t0, t1, t2, t3, t4, t5, t6, t7] = *b;
        Rec {
            w0: u32::from_le_bytes([a0, a1, a2, a3]),
            w1: u32::from_le_bytes([b0, b1, b2, b3]),
            ts: u64::from_le_bytes([t0, t1, t2, t3, t4, t5, t6, t7]),
        }
    }

    /// w0[31:24], the kind byte of every record type.
    #[inline]
    pub fn kind_byte(self) -> u8 {
        (self.w0 >> 24) as u8
    }

    // ---- Instruction records (trace type 0, ntff.md §4.1, §4.2) ----

    /// Instruction record kind (ntff.md §4.1): the ten start/end kind bytes 0x84/0x85 …
    /// 0x94/0x95, the DGE notifications 0x8E/0x96, anything else.
    #[inline]
    pub fn ins_kind(self) -> InsKind {
        let k = self.kind_byte();
        match k.wrapping_sub(0x84) {
            d @ 0..20 if d & 3 == 0 => InsKind::Start(usize::from(d / 4)),
            d @ 0..20 if d & 3 == 1 => InsKind::End(usize::from(d / 4)),
            _ if k == 0x8E || k == 0x96 => InsKind::DgeNotification,
            _ => InsKind::Other,
        }
    }

    /// w0[19:0]: low 20 bits of the instruction address ÷ 64, before the code block's base is
    /// subtracted (ntff.md §4.2).
    #[inline]
    pub fn pc_bits(self) -> u32 {
        self.w0 & 0xF_FFFF
    }

    /// Start record: w1[31:16], cycles waited before issue (ntff.md §4.1, `evt_wait_time_ns`).
    #[inline]
    pub fn wait_cycles(self) -> u16 {
        (self.w1 >> 16) as u16
    }

    /// End record: w1[15:0], `crc_in` (ntff.md §4.1).
    #[inline]
    pub fn crc_in(self) -> u16 {
        self.w1 as u16
    }

    /// End record: w1[31:16], `crc_out` (ntff.md §4.1).
    #[inline]
    pub fn crc_out(self) -> u16 {
        (self.w1 >> 16) as u16
    }

    // ---- Event records (trace type 1, ntff.md §4.3) ----

    /// w0[7:0]: semaphore / event index.
    #[inline]
    pub fn sem_index(self) -> u8 {
        self.w0 as u8
    }

    /// w0[15:8] = 1: a semaphore update (a `SemaphoreUpdate` row); other values are events
    /// counted in `event_count` only.
    #[inline]
    pub fn is_sem_update(self) -> bool {
        (self.w0 >> 8) as u8 == 1
    }

    /// w0[23:16]: update mode, written raw to `update_mode`.
    #[inline]
    pub fn update_mode(self) -> u8 {
        (self.w0 >> 16) as u8
    }

    /// w1 as int32: the semaphore's new value (`SemaphoreUpdate.value`).
    #[inline]
    pub fn sem_value(self) -> i32 {
        self.w1 as i32
    }

    // ---- DMA records (trace type 4, block type 1, ntff.md §4.4) ----

    /// w0[30:24]: DMA engine counted from the logical core's first physical core.
    #[inline]
    pub fn dma_engine_field(self) -> u32 {
        (self.w0 >> 24) & 0x7F
    }

    /// w0[23:0] of a phase-5 record: bytes transferred (0 on phases 1 and 6).
    #[inline]
    pub fn dma_bytes(self) -> u32 {
        self.w0 & 0xFF_FFFF
    }

    /// w1[3:0]: the phase.
    #[inline]
    pub fn dma_phase(self) -> DmaPhase {
        match self.w1 & 0xF {
            1 => DmaPhase::Start,
            5 => DmaPhase::End,
            _ => DmaPhase::Other,
        }
    }

    /// w1[7:4]: queue index.
    #[inline]
    pub fn dma_queue(self) -> u32 {
        (self.w1 >> 4) & 0xF
    }

    /// w1[31:16] of a phase-5 record: the packet CRC.
    #[inline]
    pub fn dma_crc(self) -> u16 {
        (self.w1 >> 16) as u16
    }

    // ---- Throttle records (trace type 5, ntff.md §4.5) ----

    /// w0[23:16]: n, the denominator.
    #[inline]
    pub fn throttle_n(self) -> u8 {
        (self.w0 >> 16) as u8
    }

    /// w1[7:0]: k, the numerator.
    #[inline]
    pub fn throttle_k(self) -> u8 {
        self.w1 as u8
    }

    /// w1[15:8]: throttle type (0 / 1 → `activity_0` / `activity_1`).
    #[inline]
    pub fn throttle_type(self) -> u8 {
        (self.w1 >> 8) as u8
    }

    // ---- Error records (trace types 2 and 3, ntff.md §4.6, unverified) ----

    /// w0[7:0]: `error_type_id` [INF].
    #[inline]
    pub fn error_type_id(self) -> u8 {
        self.w0 as u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w0(w0: u32) -> Rec {
        Rec { w0, w1: 0, ts: 0 }
    }

    #[test]
    fn instruction_kinds() {
        assert_eq!(w0(0x8400_0000).ins_kind(), InsKind::Start(0));
        assert_eq!(w0(0x8500_0000).ins_kind(), InsKind::End(0));
        assert_eq!(w0(0x9400_0000).ins_kind(), InsKind::Start(4));
        assert_eq!(w0(0x9500_0000).ins_kind(), InsKind::End(4));
        assert_eq!(w0(0x8E10_0000).ins_kind(), InsKind::DgeNotification);
        assert_eq!(w0(0x9610_0000).ins_kind(), InsKind::DgeNotification);
        assert_eq!(w0(0x8600_0000).ins_kind(), InsKind::Other);
        assert_eq!(w0(0x8300_0000).ins_kind(), InsKind::Other);
        assert_eq!(w0(0x9800_0000).ins_kind(), InsKind::Other);
    }

    #[test]
    fn fields() {
        let b: [u8; 16] = [
            0x05, 0x06, 0x01, 0xC2, 0x01, 0x00, 0x34, 0x12, 8, 0, 0, 0, 0, 0, 0, 1,
        ];
        let r = Rec::from_bytes(&b);
        assert_eq!(
            (r.w0, r.w1, r.ts),
            (0xC201_0605, 0x1234_0001, (1 << 56) | 8)
        );
        assert_eq!(r.dma_engine_field(), 0x42);
        assert_eq!(r.dma_bytes(), 0x01_0605);
        assert_eq!(r.dma_phase(), DmaPhase::Start);
        assert_eq!(r.dma_crc(), 0x1234);
        assert_eq!(r.pc_bits(), 0x1_0605);
        assert_eq!((r.sem_index(), r.update_mode()), (5, 1));
        assert!(!r.is_sem_update());
        assert_eq!(
            (r.throttle_n(), r.throttle_k(), r.throttle_type()),
            (1, 1, 0)
        );
        let r = Rec {
            w0: 0x0000_0100,
            w1: 0xFFFF_FFFF,
            ts: 0,
        };
        assert!(r.is_sem_update());
        assert_eq!(r.sem_value(), -1);
        assert_eq!(
            (r.crc_in(), r.crc_out(), r.wait_cycles()),
            (0xFFFF, 0xFFFF, 0xFFFF)
        );
    }
}
