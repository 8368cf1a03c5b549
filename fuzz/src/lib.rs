//! Shared harness for the fuzz targets: every target ends in the library calls the CLI
//! (`neuronscope convert`) and the page's worker make — `inventory::build`, then
//! `profile::process_system`, `profile::process_device` for each device and
//! `profile::process_memory` for each snapshot — on an in-memory folder, so a crash found here
//! is a crash of the product, not of a harness-only path.
//!
//! Fixed companions (the demo capture's NEFF, the synthetic System capture) come from our own
//! writers (`neuronscope::synth`, `neuronscope::system::write`) and are built once per process.

use std::rc::Rc;
use std::sync::OnceLock;

use neuronscope::profile;
use neuronscope::source::SliceSource;

/// `(path, bytes)` of a folder as the browser presents it (paths relative to the picked
/// folder's parent, `/`-separated).
pub type Files = Vec<(String, Rc<Vec<u8>>)>;

fn leak(files: Vec<(String, Vec<u8>)>) -> Vec<(String, &'static [u8])> {
    files
        .into_iter()
        .map(|(p, b)| (p, &*Box::leak(b.into_boxed_slice())))
        .collect()
}

/// The built-in demo capture (NEFF + NTFF of two cores, memory snapshot …), built once.
pub fn demo() -> &'static [(String, &'static [u8])] {
    static D: OnceLock<Vec<(String, &'static [u8])>> = OnceLock::new();
    D.get_or_init(|| leak(neuronscope::synth::demo_capture().expect("demo capture")))
}

/// The synthetic System capture (`trace_info.pb`, `ntrace.pb`, a small `trace.json`) plus
/// empty `cpu_util.pb` / `host_mem.pb` (0 bytes is what most captures hold), built once.
pub fn system() -> &'static [(String, &'static [u8])] {
    static S: OnceLock<Vec<(String, &'static [u8])>> = OnceLock::new();
    S.get_or_init(|| {
        let spec = neuronscope::system::write::SystemSpec::default();
        let mut f = neuronscope::system::write::system_capture(&spec, 0);
        let d = spec.dir();
        f.push((format!("{d}/cpu_util.pb"), Vec::new()));
        f.push((format!("{d}/host_mem.pb"), Vec::new()));
        leak(f)
    })
}

/// `base` with the file whose name ends in `suffix` replaced by `data` (added if none does).
pub fn with_file(base: &[(String, &'static [u8])], suffix: &str, data: &[u8]) -> Files {
    let mut out: Files = Vec::new();
    let mut done = false;
    for (p, b) in base {
        if !done && p.ends_with(suffix) {
            out.push((p.clone(), Rc::new(data.to_vec())));
            done = true;
        } else {
            out.push((p.clone(), Rc::new(b.to_vec())));
        }
    }
    if !done {
        out.push((format!("fuzz/{suffix}"), Rc::new(data.to_vec())));
    }
    out
}

/// One file alone in a folder.
pub fn single(path: &str, data: &[u8]) -> Files {
    vec![(path.to_string(), Rc::new(data.to_vec()))]
}

/// Splits `data` into files: repeated `[name length u8][name][data length u32 LE][data]`
/// (at most 16 files; a short last record takes what is left). The pipeline target's input and
/// its seeds (scripts/fuzz-seeds.sh) use this layout.
pub fn unpack(mut data: &[u8]) -> Files {
    let mut out: Files = Vec::new();
    while out.len() < 16 && !data.is_empty() {
        let n = usize::from(data[0]);
        data = &data[1..];
        let name = String::from_utf8_lossy(&data[..n.min(data.len())]).into_owned();
        data = &data[n.min(data.len())..];
        let mut len = [0u8; 4];
        let k = data.len().min(4);
        len[..k].copy_from_slice(&data[..k]);
        data = &data[k..];
        let len = (u32::from_le_bytes(len) as usize).min(data.len());
        out.push((name, Rc::new(data[..len].to_vec())));
        data = &data[len..];
    }
    out
}

/// Runs inventory → pairing → decode → tables on `files`, as `neuronscope convert` does (every
/// system profile, every device, every memory snapshot), into in-memory tables
/// ([`profile::process_files`], the same function the robustness tests call).
/// Errors are data: they are ignored here; only a panic, an abort, an OOM or a hang is a find.
pub fn run_folder(files: &Files) {
    let _ = profile::process_files(files);
}

/// Indexes a source archive as the Code Viewer does (`.tar.gz` when it starts with the gzip
/// magic, else plain `.tar`) and looks a debug-info path up in it.
pub fn run_source_archive(data: &[u8]) {
    let gzip = data.starts_with(&[0x1F, 0x8B]);
    let mut idx = neuronscope::source_code::SourceIndex::new();
    let _ = idx.add_tar(&SliceSource(data), gzip, "upload");
    let _ = idx.lookup("/home/ubuntu/project/kernels/x.py");
}
