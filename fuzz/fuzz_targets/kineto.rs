#![no_main]
//! The Kineto `trace.json` of the synthetic System capture.
use libfuzzer_sys::fuzz_target;
use neuronscope_fuzz::*;

fuzz_target!(|data: &[u8]| {
    run_folder(&with_file(system(), "trace.json", data));
});
