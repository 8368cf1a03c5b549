#![no_main]
//! `ntrace.pb` (framed records) of the synthetic System capture.
use libfuzzer_sys::fuzz_target;
use neuronscope_fuzz::*;

fuzz_target!(|data: &[u8]| {
    run_folder(&with_file(system(), "ntrace.pb", data));
});
