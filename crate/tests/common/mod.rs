//! Shared by the integration tests: where the real captures are.

use std::path::PathBuf;

/// `../shared/samples` beside the repository. Panics with a clear message when it is missing:
/// the tests read real captures and must never pass without them.
pub fn samples() -> PathBuf {
    let p = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/samples"));
    assert!(
        p.join("INDEX.tsv").is_file(),
        "sample folder {} (with INDEX.tsv) is missing: the tests need ../shared/samples beside the repository",
        p.display()
    );
    p
}
