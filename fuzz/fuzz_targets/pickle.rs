#![no_main]
//! A PyTorch memory snapshot (pickle) alone in a folder.
use libfuzzer_sys::fuzz_target;
use neuronscope_fuzz::*;

fuzz_target!(|data: &[u8]| {
    run_folder(&single("cap/memory_snapshot_rank0.pickle", data));
});
