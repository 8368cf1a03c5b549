//! The `neuronscope` command line's parts: the folder walk ([`walk`]), `convert`'s dataset
//! writer ([`convert`]), `bench` ([`bench`]) and the output switches shared by all commands.

// The output macros first: they are in scope in the modules declared after them.
/// `println!` that stops quietly when stdout is closed (e.g. piped into `head`) instead of
/// panicking.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// [`say!`] unless `--quiet`.
macro_rules! note {
    ($($arg:tt)*) => {{
        if $crate::cli::normal() {
            say!($($arg)*);
        }
    }};
}

/// [`say!`] only with `--verbose`.
macro_rules! detail {
    ($($arg:tt)*) => {{
        if $crate::cli::verbose() {
            say!($($arg)*);
        }
    }};
}

pub mod bench;
pub mod convert;
pub mod walk;

use std::sync::atomic::{AtomicU8, Ordering};

/// How much the commands print: 0 `--quiet`, 1 normal, 2 `--verbose`.
static VERBOSITY: AtomicU8 = AtomicU8::new(1);

/// Sets the level from the global `--quiet` / `--verbose` flags.
pub fn set_verbosity(quiet: bool, verbose: bool) {
    let v = if quiet {
        0
    } else if verbose {
        2
    } else {
        1
    };
    VERBOSITY.store(v, Ordering::Relaxed);
}

/// True unless `--quiet`: progress and listings are printed.
pub fn normal() -> bool {
    VERBOSITY.load(Ordering::Relaxed) >= 1
}

/// True with `--verbose`: details (walk problems, skips, timings) are printed too.
pub fn verbose() -> bool {
    VERBOSITY.load(Ordering::Relaxed) >= 2
}
