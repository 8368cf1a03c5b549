#![no_main]
//! All four System files at once: the input is `[len u32 LE][bytes]` × 4 in the order
//! `trace_info.pb`, `ntrace.pb`, `cpu_util.pb`, `host_mem.pb` (a short input leaves the rest empty).
use libfuzzer_sys::fuzz_target;
use neuronscope_fuzz::*;
use std::rc::Rc;

fuzz_target!(|data: &[u8]| {
    let d = neuronscope::system::write::SystemSpec::default().dir();
    let mut rest = data;
    let mut files: Files = Vec::new();
    for name in ["trace_info.pb", "ntrace.pb", "cpu_util.pb", "host_mem.pb"] {
        let mut len = [0u8; 4];
        let k = rest.len().min(4);
        len[..k].copy_from_slice(&rest[..k]);
        rest = &rest[k..];
        let n = (u32::from_le_bytes(len) as usize).min(rest.len());
        files.push((format!("{d}/{name}"), Rc::new(rest[..n].to_vec())));
        rest = &rest[n..];
    }
    run_folder(&files);
});
