//! Errors as data: every decoder error says where (byte offset) and what was expected, and the
//! caller attaches the file name (see [`Problem`]). Nothing in the decoders panics on bad input.

use std::fmt;

pub use crate::problem::Code;

/// A decoding error. Offsets are absolute byte offsets in the file being decoded.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// The underlying read failed (native I/O error text or a browser `FileReaderSync` error).
    Io(String),
    /// A read ran past the end of the input: `wanted` bytes at `offset`, `available` left.
    Truncated {
        offset: u64,
        wanted: u64,
        available: u64,
    },
    /// Bytes at `offset` are not what the format requires.
    Format {
        offset: u64,
        expected: String,
        found: String,
    },
    /// A valid but unsupported variant (e.g. an NTFF version above 6).
    Unsupported(String),
    /// Something else, already phrased for the user.
    Other(String),
}

/// Result alias for decoders.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// Shorthand for [`Error::Format`].
    pub fn format(offset: u64, expected: impl Into<String>, found: impl Into<String>) -> Self {
        Error::Format {
            offset,
            expected: expected.into(),
            found: found.into(),
        }
    }
    /// The byte offset the error refers to, when it has one.
    pub fn offset(&self) -> Option<u64> {
        match self {
            Error::Truncated { offset, .. } | Error::Format { offset, .. } => Some(*offset),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(e) => write!(f, "I/O error: {e}"),
            // Nothing left at `offset`: the read starts at or past the end (a section a header
            // places beyond a cut file), which "only 0 available" said less plainly.
            Error::Truncated {
                offset,
                wanted,
                available: 0,
            } => {
                if *wanted == 1 {
                    write!(f, "truncated: the byte at offset {offset} lies past the end of the file")
                } else {
                    write!(
                        f,
                        "truncated: the {wanted} bytes at offset {offset} lie past the end of the file"
                    )
                }
            }
            Error::Truncated {
                offset,
                wanted,
                available,
            } => write!(
                f,
                "truncated at offset {offset}: expected {wanted} more bytes, only {available} available"
            ),
            Error::Format {
                offset,
                expected,
                found,
            } => write!(f, "at offset {offset}: expected {expected}, found {found}"),
            Error::Unsupported(s) | Error::Other(s) => f.write_str(s),
        }
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(e.to_string())
    }
}

impl From<arrow_schema::ArrowError> for Error {
    fn from(e: arrow_schema::ArrowError) -> Self {
        Error::Other(format!("arrow: {e}"))
    }
}

impl From<parquet::errors::ParquetError> for Error {
    fn from(e: parquet::errors::ParquetError) -> Self {
        Error::Other(format!("parquet: {e}"))
    }
}

/// How bad a [`Problem`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Processing of this profile failed or is incomplete (Explorer: `ERROR_PROCESS_INCOMPLETE`).
    Error,
    /// Data is missing or suspicious; what was decoded is still shown.
    Warning,
    /// Informational (e.g. an empty NTFF that was skipped).
    Info,
}

/// A user-facing problem: which file, where, what. Shown in the profile list and written to the
/// `Warning` table. The [`Code`] (declared in [`crate::problem`]) fixes the severity and the
/// `Warning` category; it serialises as its string, e.g. `ERROR_PROCESS_INCOMPLETE`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Problem {
    /// The code's severity ([`Code::severity`]).
    pub severity: Severity,
    /// What kind of problem; serialised as [`Code::as_str`] (`MISSING_NEFF`, `EMPTY_NTFF`, …).
    pub code: Code,
    /// Path of the file concerned (relative to the picked folder), if any.
    pub file: Option<String>,
    /// Byte offset in that file, if known.
    pub offset: Option<u64>,
    /// The sentence shown to the user.
    pub message: String,
}

impl Problem {
    /// A problem about `file`, taking the offset from `err` when it has one; the message is
    /// `file: err`.
    pub fn from_error(code: Code, file: &str, err: &Error) -> Self {
        Problem {
            severity: code.severity(),
            code,
            file: Some(file.to_string()),
            offset: err.offset(),
            message: format!("{file}: {err}"),
        }
    }
    /// A problem with a free-text message.
    pub fn new(code: Code, file: Option<&str>, message: String) -> Self {
        Problem {
            severity: code.severity(),
            code,
            file: file.map(str::to_string),
            offset: None,
            message,
        }
    }
    /// The problem at byte `offset` of its file.
    pub fn at(mut self, offset: u64) -> Self {
        self.offset = Some(offset);
        self
    }
}
