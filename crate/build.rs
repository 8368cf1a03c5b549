//! Compiles our own `.proto` files (../proto) with prost, using protox (pure Rust, no protoc).
use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../proto");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "proto"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
    }
    if files.is_empty() {
        return;
    }
    let fds = protox::compile(&files, [&dir]).expect("compile proto files");
    prost_build::Config::new()
        .compile_fds(fds)
        .expect("generate prost code");
}
