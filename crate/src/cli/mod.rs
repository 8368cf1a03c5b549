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

pub use neuronscope::util::count;

/// Caps glibc's malloc arenas at one per two cores (at least one) unless `MALLOC_ARENA_MAX` is
/// set. glibc gives each new thread an arena of its own, up to 8 per core, and memory freed into
/// an arena stays with it; the split decode allocates batches on its DMA threads and frees them
/// on the encoding one, so every arena kept its own high-water mark. Measured on the 2-core
/// machine (`bench --steps parquet_2t`, real-mix synthetic NTFF, one run each): 10 GB peak RSS
/// 321 MB with glibc's default, 286 MB with 2 arenas, 267 MB with 1; 1 GB 217–225 → 185–187 MB
/// with 1, at the same CPU seconds (docs/ARCHITECTURE.md "Memory"). No-op off glibc.
pub fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        let arenas = libc::c_int::try_from((cores / 2).max(1)).unwrap_or(libc::c_int::MAX);
        // SAFETY: mallopt only sets an allocator parameter; called before any thread starts.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, arenas);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_agree_with_their_noun() {
        assert_eq!(super::count(1u64, "profile"), "1 profile");
        assert_eq!(super::count(0u64, "profile"), "0 profiles");
        assert_eq!(super::count(2u32, "file"), "2 files");
    }
}
