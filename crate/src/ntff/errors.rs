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
