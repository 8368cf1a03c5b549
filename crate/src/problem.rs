//! Every problem code neuronscope reports, declared once: the code string the page, the CLI and
//! our docs show (Explorer's status names where the meaning matches, explorer-schema.md §7), its
//! [`Severity`] and the `Warning.category` it is written with (explorer-schema.md §5.9).
//!
//! One string can stand for several variants of different severity (`ERROR_PROCESS_INCOMPLETE` is
//! an error when a file could not be processed and a warning when only part of it could be read):
//! a variant names the situation, the string stays what readers match on.

use crate::error::Severity;

/// Declares [`Code`] from `Variant = ("CODE", Severity, category)` rows; `category` is `None`
/// when the `Warning` category follows the severity.
macro_rules! codes {
    ($($(#[$doc:meta])* $v:ident = ($code:literal, $sev:ident, $cat:expr)),* $(,)?) => {
        /// A problem code with its severity and `Warning` category ([`Code::as_str`],
        /// [`Code::severity`], [`Code::category`]).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum Code {
            $($(#[$doc])* $v,)*
        }

        impl Code {
            /// Every code, in declaration order.
            pub const ALL: &'static [Code] = &[$(Code::$v),*];
            /// The code as shown and serialised (`ERROR_PROCESS_INCOMPLETE`, `Missing Data`, …).
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Code::$v => $code,)*
                }
            }
            /// How bad a problem with this code is.
            pub const fn severity(self) -> Severity {
                match self {
                    $(Code::$v => Severity::$sev,)*
                }
            }
            /// `Warning.category`: Explorer's `Missing Data` for data Explorer also reports as
            /// missing, else the severity (`Error`, `Warning`, `Info`).
            pub const fn category(self) -> &'static str {
                let explicit: Option<&'static str> = match self {
                    $(Code::$v => $cat,)*
                };
                match (explicit, self.severity()) {
                    (Some(c), _) => c,
                    (None, Severity::Error) => "Error",
                    (None, Severity::Warning) => "Warning",
                    (None, Severity::Info) => "Info",
                }
            }
        }
    };
}

/// `Warning.category` of Explorer's missing-data warnings.
const MISSING: Option<&str> = Some("Missing Data");

codes! {
    /// A file or profile could not be processed; what was read before the fault is kept.
    ProcessIncomplete = ("ERROR_PROCESS_INCOMPLETE", Error, None),
    /// Part of a file could not be read (a bad record, a cut file); the rest is kept.
    ReadIncomplete = ("ERROR_PROCESS_INCOMPLETE", Warning, None),
    /// A system profile without the `trace_info.pb` it needs.
    NoMetadata = ("ERROR_NO_METADATA", Error, None),
    /// The picked files hold no profile.
    NoProfile = ("NO_PROFILE", Info, None),
    /// The NTFF's version is newer than any sample the decoder was checked against.
    NtffVersionUnverified = ("NTFF_VERSION_UNVERIFIED", Warning, None),
    /// An NTFF without trace data (skipped).
    EmptyNtff = ("EMPTY_NTFF", Info, None),
    /// A file whose bytes say it is another kind than its name.
    FileMisnamed = ("FILE_MISNAMED", Info, None),
    /// A file whose bytes do not match its name's kind.
    ContentMismatch = ("CONTENT_MISMATCH", Warning, None),
    /// A system profile folder without `trace_info.pb`.
    MissingTraceInfo = ("MISSING_TRACE_INFO", Warning, None),
    /// A system profile folder without `ntrace.pb`.
    MissingNtrace = ("MISSING_NTRACE", Warning, None),
    /// Files of one folder that belong to different captures.
    DifferentCapture = ("DIFFERENT_CAPTURE", Info, None),
    /// More than one NEFF could belong to an NTFF (pairing.md).
    AmbiguousNeff = ("AMBIGUOUS_NEFF", Warning, None),
    /// No NEFF for an NTFF: instruction names and attribution are missing.
    MissingNeff = ("MISSING_NEFF", Warning, MISSING),
    /// One of Explorer's own `Missing Data` warnings (message verbatim, crate::derived).
    MissingData = ("Missing Data", Warning, MISSING),
    /// Something in the NEFF that was read around (its message says what).
    NeffWarning = ("NEFF", Warning, None),
    /// The NEFF tables could not be written.
    NeffTables = ("NEFF", Error, None),
    /// Debug info of the NEFF missing or unreadable: instructions keep their timing only.
    NeffDebugInfo = ("NEFF_DEBUG_INFO", Warning, None),
    /// The `Summary` tables could not be written.
    SummaryFailed = ("SUMMARY", Error, None),
    /// The derived tables could not be written.
    DerivedFailed = ("DERIVED", Error, None),
    /// Instruction records that decode to no instruction were dropped.
    NtffRecordsDropped = ("NTFF_RECORDS_DROPPED", Info, None),
    /// A trace buffer outside the file or of a size that is not whole records (its records, or
    /// those past the last whole one, are lost: an error, as a cut NTFF is).
    NtffBadBuffer = ("NTFF_BAD_BUFFER", Error, None),
    /// The NTFF ends before its info section says.
    NtffTruncated = ("NTFF_TRUNCATED", Error, None),
    /// A code block that could not be read (instructions of it keep no opcode: data lost, so an
    /// error).
    NtffBadCodeBlock = ("NTFF_BAD_CODE_BLOCK", Error, None),
    /// v4/v5 time origin taken from the start-of-execution NOTIFY of a single execution.
    NtffTimeOriginNotify = ("NTFF_TIME_ORIGIN", Info, None),
    /// v4/v5 time origin that is a choice among several (executions, or the earliest record).
    NtffTimeOrigin = ("NTFF_TIME_ORIGIN", Warning, None),
    /// Unknown instance type: hardware figures are assumed.
    NtffHardware = ("NTFF_HARDWARE", Warning, None),
    /// Execution window and recorded time disagree: the clock is assumed.
    NtffClock = ("NTFF_CLOCK", Warning, None),
    /// Instruction start records without an end (more than the one a capture's stop leaves
    /// open) or ends without a start: every sample has neither, so the trace is damaged and
    /// rows are missing.
    NtffUnpaired = ("NTFF_UNPAIRED", Error, None),
    /// Trace records no well-formed capture holds (an unknown kind byte, an end before its
    /// start, a DMA packet end without a start or a start never ended): set aside or written
    /// as read, counted with the offset of the first. No sample has any (ntff.md §4.1, §4.4).
    NtffCorruptRecords = ("NTFF_CORRUPT_RECORDS", Error, None),
    /// A memory-snapshot value rendered only in part (depth, cycle or size bound).
    MemorySnapshotValueCut = ("MEMORY_SNAPSHOT_VALUE_CUT", Warning, None),
    /// Rows of a memory snapshot left out past the work allowance (shared objects).
    MemorySnapshotAmplified = ("MEMORY_SNAPSHOT_AMPLIFIED", Warning, None),
    /// A memory snapshot whose trace and segments disagree.
    MemorySnapshotInconsistent = ("MEMORY_SNAPSHOT_INCONSISTENT", Warning, None),
    /// A trace cut short: a Kineto event array not closed (or a file that stops being
    /// readable), a framed `.pb` whose last record is incomplete. Everything before is kept; what
    /// followed is lost, so it is an error, as a cut NTFF is (`NTFF_TRUNCATED`): one severity for
    /// a cut file of any kind, in the CLI's lines, its exit code and the page's counts.
    TruncatedTrace = ("TRUNCATED_TRACE", Error, None),
    /// A file named as a framework trace whose JSON holds no `traceEvents` array (none, or a
    /// value of another type): none of it can be shown, so an error.
    NoTraceEvents = ("NO_TRACE_EVENTS", Error, None),
    /// `ntrace.pb` start or stop records without their other half.
    UnpairedEvent = ("UNPAIRED_EVENT", Warning, None),
    /// Record counts that disagree with `trace_info.pb`.
    CountMismatch = ("COUNT_MISMATCH", Warning, None),
    /// Values outside their range (CPU samples outside 0–100 %).
    ValueOutOfRange = ("VALUE_OUT_OF_RANGE", Warning, None),
    /// A device profile not placed on the system timeline (pairing.md §6).
    DeviceProfileNotLinked = ("DEVICE_PROFILE_NOT_LINKED", Info, None),
    /// The same input named twice on the command line.
    InputRepeated = ("INPUT_REPEATED", Info, None),
    /// A folder that cannot be listed.
    UnreadableDir = ("UNREADABLE_DIR", Warning, None),
    /// A file that cannot be read.
    UnreadableFile = ("UNREADABLE_FILE", Warning, None),
    /// An entry that is no file or folder (a pipe, socket or device): not read.
    NotAFile = ("NOT_A_FILE", Info, None),
    /// A symbolic link that cannot be followed.
    DanglingLink = ("DANGLING_LINK", Warning, None),
    /// A link back to its own ancestor (not entered).
    LinkLoop = ("LINK_LOOP", Info, None),
    /// A link to a folder already listed (not entered).
    LinkRepeated = ("LINK_REPEATED", Info, None),
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl PartialEq<str> for Code {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Code {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_follow_explorer() {
        assert_eq!(Code::MissingNeff.category(), "Missing Data");
        assert_eq!(Code::MissingData.category(), "Missing Data");
        assert_eq!(Code::ProcessIncomplete.category(), "Error");
        assert_eq!(Code::ReadIncomplete.category(), "Warning");
        assert_eq!(Code::EmptyNtff.category(), "Info");
        // The page reads problems as JSON: the code is its string, the severity lowercase.
        let p = crate::error::Problem::new(Code::MissingNeff, Some("a.ntff"), "m".into()).at(7);
        assert_eq!(
            serde_json::to_string(&p).unwrap(),
            r#"{"severity":"warning","code":"MISSING_NEFF","file":"a.ntff","offset":7,"message":"m"}"#
        );
        // Variants sharing a string differ in severity, never in anything else readers see.
        for a in Code::ALL {
            for b in Code::ALL {
                if a != b && a.as_str() == b.as_str() {
                    assert_ne!(a.severity(), b.severity(), "{a:?} {b:?}");
                }
            }
        }
    }
}
