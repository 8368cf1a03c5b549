#![no_main]
//! A NEFF alone in a folder (header, gzip/tar payload, JSON manifests, .dbg members).
use libfuzzer_sys::fuzz_target;
use neuronscope_fuzz::*;

fuzz_target!(|data: &[u8]| {
    run_folder(&single("cap/model.neff", data));
});
