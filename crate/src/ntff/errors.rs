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
use crate::tables::{explorer, Emitter, TableSink};

use super::decode::{stream_buffer, Window};
use super::NtffInfo;

/// `Error.description` of every row until the layout is known.
pub const UNDECODED: &str =
    "undecoded error record (layout undocumented; raw words in metadata_hex)";

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
    let def = &explorer::ERROR;
    let mut em = Emitter::new(def, sink);
    let c = |n| def.col(n);
    let (cd, cid, chex, cp, ct, cty) = (
        c("description"),
        c("error_type_id"),
        c("metadata_hex"),
        c("pcore_idx"),
        c("timestamp"),
        c("type"),
    );
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
                em.b.str(cd, Some(UNDECODED));
                em.b.i32(cid, Some(i32::from(r.error_type_id())));
                em.b.str(chex, Some(&format!("{:08x} {:08x}", r.w0, r.w1)));
                em.b.i64(cp, Some(pcore as i64));
                em.b.i64(ct, Some(window.ns(fs)));
                em.b.str(cty, Some(ty));
                em.end_row()
            })?;
        }
    }
    em.finish()
}
