#![no_main]
//! A whole folder packed as [name len u8][name][len u32 LE][data]… (see `unpack`).
use libfuzzer_sys::fuzz_target;
use neuronscope_fuzz::*;

fuzz_target!(|data: &[u8]| {
    run_folder(&unpack(data));
});
