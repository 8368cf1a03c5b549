//! Pairing and inventory on the real samples (spec/pairing.md §4.3 results, INDEX.tsv ground truth).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use neuronscope::inventory::{self, DeviceProfile, Inventory, PairStatus, ProfileType};
use neuronscope::source::FileSource;
use neuronscope::{ByteSource, Result, Severity};

fn samples() -> PathBuf {
    let p = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/samples"));
    assert!(
        p.join("INDEX.tsv").is_file(),
        "sample folder missing: expected {} (../shared/samples relative to the repository root)",
        p.display()
    );
    p
}

/// All files below `root`, as (path relative to `root`, size).
fn walk(root: &Path) -> Vec<(String, u64)> {
    fn rec(root: &Path, dir: &Path, out: &mut Vec<(String, u64)>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("read_dir {}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                rec(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
                out.push((rel, p.metadata().unwrap().len()));
            }
        }
    }
    let mut out = Vec::new();
    rec(root, root, &mut out);
    out
}

fn build_over(root: &Path) -> Inventory {
    let files = walk(root);
    let root = root.to_path_buf();
    let open = move |p: &str| -> Result<Box<dyn ByteSource>> {
        Ok(Box::new(FileSource::open(&root.join(p))?))
    };
    inventory::build(&files, &open)
}

fn devices(inv: &Inventory) -> BTreeMap<String, DeviceProfile> {
    inv.profiles
        .iter()
        .flat_map(|p| p.devices.iter())
        .filter_map(|d| d.ntff.clone().map(|n| (n, d.clone())))
        .collect()
}

#[test]
fn dump_all() {
    let inv = build_over(&samples());
    for p in &inv.profiles {
        println!("PROFILE {} {:?} {:?} {:?}", p.id, p.profile_type, p.instance_id, p.pid);
        for d in &p.devices {
            println!("   {:?} {:?} {:?}", d.ntff, d.neff, d.pairing);
        }
        for pr in &p.problems {
            println!("   ! {:?} {} {}", pr.severity, pr.code, pr.message);
        }
    }
}
