#![no_main]
//! An NTFF beside the demo capture's NEFF (pairing by uuid, instruction attribution).
use libfuzzer_sys::fuzz_target;
use neuronscope_fuzz::*;

fuzz_target!(|data: &[u8]| {
    run_folder(&with_file(demo(), ".ntff", data));
});
