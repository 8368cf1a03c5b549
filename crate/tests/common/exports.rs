//! The ground-truth pairs of the samples, for the tests that compare with AWS's JSON exports
//! (included with `#[path]` by those tests only, so the others carry no unused code).

use std::path::PathBuf;

use crate::common::samples;

/// Every NTFF row of INDEX.tsv whose `ground_truth` column names a `.json` export, in file order,
/// as (INDEX.tsv `version` — `ntff_v5`, `ntff_v6` —, NTFF path, export path).
pub fn export_pairs() -> Vec<(String, PathBuf, PathBuf)> {
    let root = samples();
    let idx = std::fs::read_to_string(root.join("INDEX.tsv")).expect("read INDEX.tsv");
    let mut out = Vec::new();
    for line in idx.lines().skip(1) {
        let c: Vec<&str> = line.split('\t').collect();
        if c.len() < 8 || c[2] != "NTFF" || c[7].is_empty() {
            continue;
        }
        let json = c[7].split(' ').next().unwrap_or("");
        if json.ends_with(".json") {
            out.push((
                c[5].to_string(),
                root.join(c[0]).join(c[1]),
                root.join(c[0]).join(json),
            ));
        }
    }
    out
}
