//! Error (trace type 2) and explicit-notification (trace type 3) buffers → `Error`
//! (explorer-schema.md §5.1, ntff.md §4.6).
//!
//! No sample NTFF has a non-empty buffer of either type and no export has an `errors` section,
//! so the record layout is **unknown**. This decoder keeps what can be said without guessing:
//! one row per 16-byte record inside the window, the time read like every other record (ts in
//! bytes 8 – 15, event-clock calibration [INF]), the raw words in `metadata_hex`, `type`
//! `Errors` for trace type 2 and `Custom Notification` for type 3 [INF], and `error_type_id` =
//! w0[7:0] [INF]. `description` says the layout is undecoded. Tested on synthetic records
//! written by [`super::write`] (`NtffSpec::error_records`).

use crate::error::{Problem, Result};
use crate::source::ByteSource;
use crate::tables::{explorer, TableBuilder, TableSink};

use super::decode::{stream_buffer, Window};
use super::NtffInfo;

/// `Error.description` of every row until the layout is known.
pub const UNDECODED: &str =
    "undecoded error record (layout undocumented; raw words in metadata_hex)";

crate::cols!(mod err = crate::tables::explorer::ERROR {
    DESCRIPTION: Str = "description",
    TYPE_ID: I32 = "error_type_id",
    HEX: Str = "metadata_hex",
    PCORE: I64 = "pcore_idx",
    TS: I64 = "timestamp",
    TYPE: Str = "type",
});

/// Writes the `Error` rows of every core; returns the row count.
pub(super) fn decode_errors<S: ByteSource + ?Sized>(
    src: &S,
    info: &NtffInfo,
    window: Window,
    file: &str,
    problems: &mut Vec<Problem>,
    progress: &mut dyn FnMut(u64),
    sink: &mut dyn TableSink,
) -> Result<u64> {
    let mut b = TableBuilder::new(&explorer::ERROR);
    for (pcore, sg) in info.subgraphs.iter().enumerate() {
        for buf in sg
            .buffers
            .iter()
            .filter(|b| matches!(b.trace_type, 2 | 3) && b.size > 0)
        {
            let ty = if buf.trace_type == 2 {
                "Errors"
            } else {
                "Custom Notification"
            };
            stream_buffer(src, info.blob_offset, buf, file, problems, progress, |r| {
                let fs = sg.calibration.event.fs(r.ts);
                if !window.contains(fs) {
                    return Ok(());
                }
                b.set(err::DESCRIPTION, UNDECODED);
                b.set(err::TYPE_ID, i32::from(r.error_type_id()));
                b.set(err::HEX, format!("{:08x} {:08x}", r.w0, r.w1).as_str());
                b.set(err::PCORE, pcore as i64);
                b.set(err::TS, window.ns(fs));
                b.set(err::TYPE, ty);
                b.end_row_into(sink)
            })?;
        }
    }
    b.finish_into(sink)
}

/// Records of one kind the decoder set aside instead of turning into rows: how many, and the
/// absolute file offset (bytes) of the first, so a report can point at the damage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Tally {
    /// Records set aside.
    pub count: u64,
    /// File offset of the first of them.
    pub first_offset: Option<u64>,
}

impl Tally {
    /// Counts one record at file offset `at`.
    #[inline]
    pub fn note(&mut self, at: u64) {
        if self.count == 0 {
            self.first_offset = Some(at);
        }
        self.count += 1;
    }
}

/// Per core: the instruction records of each kind the decoder set aside (ntff.md §4.1, §5.3),
/// for the problems `profile::process_device` reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct InsSetAside {
    /// Instruction-buffer records whose kind byte is no start, end or DGE notification.
    pub other_kind: Tally,
    /// Records whose pc lies outside their engine's code block.
    pub foreign: Tally,
    /// End records without an open start.
    pub unpaired_end: Tally,
    /// Start records never ended (left open, or evicted; the offset is the smallest of them).
    pub unpaired_start: Tally,
    /// Paired instructions whose start is before t0 or whose end is after t1 (at the end record).
    pub outside_window: Tally,
    /// Paired instructions in the window that end before they start (at the end record; the
    /// row is written with its negative duration).
    pub reversed: Tally,
    /// v6: paired instructions with a time more than the window's span outside it (at the end
    /// record; no sample has one: a flipped timestamp bit).
    pub far_outside: Tally,
}

/// Per core: the DMA records of each kind the decoder set aside (ntff.md §4.4).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DmaSetAside {
    /// Records of a phase other than start (1) and end (5).
    pub other_phase: Tally,
    /// Phase-5 records without an open phase 1 in a kept stream.
    pub unpaired_end: Tally,
    /// Phase-1 records never ended (left open, evicted or over the cap; the offset is the
    /// smallest of them).
    pub unpaired_start: Tally,
    /// Phase-5 records of streams omitted by the stream-dropping rule.
    pub dropped_stream: Tally,
    /// Phase-1/5 records outside the v6 window.
    pub outside_window: Tally,
    /// Packets that end before they start (at the end record; the row is written with its
    /// negative duration).
    pub reversed: Tally,
    /// v6: records with a time more than the window's span outside it (no sample has one).
    pub far_outside: Tally,
}
