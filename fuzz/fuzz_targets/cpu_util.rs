#![no_main]
//! `cpu_util.pb` of the synthetic System capture.
use libfuzzer_sys::fuzz_target;
use neuronscope_fuzz::*;

fuzz_target!(|data: &[u8]| {
    run_folder(&with_file(system(), "cpu_util.pb", data));
});
