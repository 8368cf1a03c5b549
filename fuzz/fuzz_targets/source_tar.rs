#![no_main]
//! A source archive (`.tar.gz` or `.tar`) for the Code Viewer.
use libfuzzer_sys::fuzz_target;
use neuronscope_fuzz::*;

fuzz_target!(|data: &[u8]| {
    run_source_archive(data);
});
