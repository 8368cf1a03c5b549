#![no_main]
//! An NTFF alone in a folder (v4-v6 header, info section, records).
use libfuzzer_sys::fuzz_target;
use neuronscope_fuzz::*;

fuzz_target!(|data: &[u8]| {
    run_folder(&single("cap/profile.ntff", data));
});
