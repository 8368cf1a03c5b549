//! Source view on a real capture: the KevGomes System+Device profile's Instruction rows name 21
//! distinct `nki_source_location`s in `/home/ubuntu/nki-moe/kernels/moe_tkg/agents/
//! v5_token_parallel_tkg.py`. A stand-in file of our own (generated here, with as many lines as
//! the debug info and the stack frames name) is indexed as a folder and as a `.tar.gz` made by the
//! system `tar`; every location must resolve to it, and the per-location heat must equal sums
//! computed here row by row.

mod common;
use common::samples;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use arrow_array::{Array, Int64Array, StringArray};
use neuronscope::inventory;
use neuronscope::profile;
use neuronscope::sink::{read_parquet, ParquetSink};
use neuronscope::source::FileSource;
use neuronscope::source_code::{heat_of_parquet, split_location, SourceIndex};
use neuronscope::{ByteSource, Result};

const CAPTURE: &str = "KevGomes-nki-moe-megakernel/output/i-0af76a70a6d3864dd_pid_713479";
const DEBUG_PATH: &str = "/home/ubuntu/nki-moe/kernels/moe_tkg/agents/v5_token_parallel_tkg.py";
/// Lines of the stand-in: past every line the profile names (Instruction ≤ 304, stack frames 531).
const STAND_IN_LINES: u32 = 600;

fn picked(dir: &Path) -> Vec<(String, u64)> {
    let name = dir.file_name().unwrap().to_string_lossy().to_string();
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            let rel = p.file_name().unwrap().to_string_lossy().to_string();
            out.push((format!("{name}/{rel}"), p.metadata().unwrap().len()));
        }
    }
    out.sort();
    out
}

/// The KevGomes device profile's Instruction table as the page stores it (in-memory Parquet).
fn instruction_parquet() -> bytes::Bytes {
    let (bytes, rows) = instructions_of(CAPTURE, "profile_exec_2");
    assert_eq!(rows, 7628, "Instruction rows of the KevGomes profile");
    bytes
}

/// Instruction table (Parquet bytes, rows) of the device whose NTFF stem is `ntff` in sample
/// folder `rel`.
fn instructions_of(rel: &str, ntff: &str) -> (bytes::Bytes, u64) {
    let dir = samples().join(rel);
    assert!(dir.is_dir(), "sample folder {} is missing", dir.display());
    let base = dir.parent().unwrap().to_path_buf();
    let open = move |p: &str| -> Result<Box<dyn ByteSource>> {
        Ok(Box::new(FileSource::open(&base.join(p))?))
    };
    let inv = inventory::build(&picked(&dir), &open);
    let is = |d: &inventory::DeviceProfile| {
        d.ntff
            .as_deref()
            .is_some_and(|n| n.ends_with(&format!("/{ntff}.ntff")))
    };
    let p = inv
        .profiles
        .iter()
        .find(|p| p.devices.iter().any(is))
        .unwrap_or_else(|| panic!("{rel}: no device {ntff}"));
    let idx = p.devices.iter().position(is).unwrap();
    let mut sink = ParquetSink::new(|_t: &str| Ok(Vec::<u8>::new()));
    profile::process_device(&inv, &p.id, idx, &open, &mut sink, &mut |_, _, _| {})
        .expect("process_device");
    let mut out = sink.into_outputs().expect("parquet outputs");
    let (bytes, rows) = out.remove("Instruction").expect("an Instruction table");
    (bytes::Bytes::from(bytes), rows)
}

/// Per location: (sum of duration_ns, count), computed row by row; plus (total ns, rows).
type Sums = (BTreeMap<String, (i64, u64)>, i64, u64);

fn sums_by_location(parquet: &bytes::Bytes) -> Sums {
    let cols: Vec<String> = [
        "nki_source_location",
        "bir_debug_info_source_location",
        "duration_ns",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let (_, batches) = read_parquet(parquet.clone(), Some(&cols), 0, None).unwrap();
    let mut by = BTreeMap::new();
    let (mut total, mut rows) = (0i64, 0u64);
    for b in &batches {
        let nki = neuronscope::tables::utf8(b.column_by_name("nki_source_location").unwrap());
        let nki = nki.as_any().downcast_ref::<StringArray>().unwrap();
        let bir =
            neuronscope::tables::utf8(b.column_by_name("bir_debug_info_source_location").unwrap());
        let bir = bir.as_any().downcast_ref::<StringArray>().unwrap();
        let dur = b.column_by_name("duration_ns").unwrap();
        let dur = dur.as_any().downcast_ref::<Int64Array>().unwrap();
        for r in 0..b.num_rows() {
            assert!(
                dur.is_valid(r),
                "duration_ns is set on every KevGomes instruction"
            );
            total += dur.value(r);
            rows += 1;
            let loc = if nki.is_valid(r) && !nki.value(r).is_empty() {
                nki.value(r)
            } else if bir.is_valid(r) && !bir.value(r).is_empty() {
                bir.value(r)
            } else {
                continue;
            };
            let e = by.entry(loc.to_string()).or_insert((0, 0));
            e.0 += dur.value(r);
            e.1 += 1;
        }
    }
    (by, total, rows)
}

/// `tests/.tmp/source-view-<test>-<pid>` at the repository root (gitignored): one folder per
/// test, since the tests of this file run in parallel and each removes its folder.
fn scratch(test: &str) -> PathBuf {
    let d = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/.tmp"))
        .join(format!("source-view-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Our own Python-looking stand-in: line `n` says which line it is.
fn stand_in() -> String {
    let mut s = String::new();
    for n in 1..=STAND_IN_LINES {
        s.push_str(&format!(
            "    acc_{n} = nl.add(acc_{n}, tile)  # stand-in line {n}\n"
        ));
    }
    s
}

#[test]
fn kevgomes_locations_resolve_to_the_stand_in_and_heat_matches_row_sums() {
    let parquet = instruction_parquet();
    let (sums, total, rows) = sums_by_location(&parquet);
    assert_eq!(rows, 7628);
    assert_eq!(
        sums.len(),
        21,
        "distinct source locations: {:?}",
        sums.keys()
    );
    let mut max_line = 0;
    for loc in sums.keys() {
        let (path, line) = split_location(loc).unwrap_or_else(|| panic!("{loc}: no :line"));
        assert_eq!(path, DEBUG_PATH);
        max_line = max_line.max(line);
    }
    assert_eq!(max_line, 304, "largest line the Instruction rows name");

    // Heat from the core equals the row sums, location by location.
    let heat = heat_of_parquet(parquet.clone()).unwrap();
    assert_eq!((heat.total_ns, heat.count), (total, rows));
    let attributed: u64 = sums.values().map(|v| v.1).sum();
    assert_eq!(heat.unattributed_count, rows - attributed);
    assert_eq!(heat.lines.len(), sums.len());
    for l in &heat.lines {
        let want = sums
            .get(&l.location)
            .expect("heat location among the row sums");
        assert_eq!((l.total_ns, l.count), *want, "{}", l.location);
        assert_eq!(
            l.engines.iter().map(|e| e.total_ns).sum::<i64>(),
            l.total_ns
        );
        assert_eq!(l.engines.iter().map(|e| e.count).sum::<u64>(), l.count);
    }
    assert!(heat
        .lines
        .windows(2)
        .all(|w| w[0].total_ns >= w[1].total_ns));
    let top = &heat.lines[0];
    eprintln!(
        "source_view: {} locations, top {} = {} ns over {} instructions ({:.1}% of {} ns)",
        heat.lines.len(),
        top.location,
        top.total_ns,
        top.count,
        100.0 * top.total_ns as f64 / total as f64,
        total
    );

    // The stand-in as a folder (with a decoy of the same name elsewhere) and as a .tar.gz.
    let root = scratch("kevgomes");
    let src = root.join("src");
    let real = src.join("nki-moe/kernels/moe_tkg/agents");
    std::fs::create_dir_all(&real).unwrap();
    std::fs::create_dir_all(src.join("decoy")).unwrap();
    std::fs::write(real.join("v5_token_parallel_tkg.py"), stand_in()).unwrap();
    std::fs::write(src.join("decoy/v5_token_parallel_tkg.py"), "# decoy\n").unwrap();
    let tgz = root.join("source_folder.tar.gz");
    let st = std::process::Command::new("tar")
        .arg("czf")
        .arg(&tgz)
        .arg("-C")
        .arg(&src)
        .args(["nki-moe", "decoy"])
        .status()
        .expect("run tar");
    assert!(st.success(), "tar czf failed");

    let mut folder = SourceIndex::new();
    let load = folder.add_dir(&src.join("nki-moe"));
    assert_eq!((load.added, load.error.clone()), (1, None));
    let load = folder.add_dir(&src.join("decoy"));
    assert_eq!(load.added, 1);
    let mut archive = SourceIndex::new();
    let tgz_src = FileSource::open(&tgz).unwrap();
    let load = archive.add_input("up/source_folder.tar.gz", &tgz_src);
    assert_eq!((load.load.added, load.load.error.clone()), (2, None));
    std::fs::remove_dir_all(&root).unwrap();

    for (idx, want) in [
        (
            &folder,
            "nki-moe/kernels/moe_tkg/agents/v5_token_parallel_tkg.py",
        ),
        (
            &archive,
            "up/source_folder.tar.gz/nki-moe/kernels/moe_tkg/agents/v5_token_parallel_tkg.py",
        ),
    ] {
        for loc in sums.keys() {
            let r = idx.resolve(loc);
            assert_eq!(r.files, vec![want.to_string()], "{loc}");
            let text = &idx.get(want).unwrap().text;
            let line = text
                .lines()
                .nth(r.line as usize - 1)
                .expect("line in the stand-in");
            assert!(
                line.ends_with(&format!("# stand-in line {}", r.line)),
                "{loc}: {line}"
            );
        }
        assert_eq!(
            idx.listing().iter().find(|f| f.path == want).unwrap().lines,
            600
        );
    }
}

/// Every source path the KevGomes NEFFs' debug info names (the capture's, moe `v6b.neff` and
/// attention `attn_v6.neff`, whose locations include a site-packages file of the NKI library)
/// resolves to its own stand-in, in a folder and in a `.tar.gz`, at the recorded line.
#[test]
fn every_kevgomes_location_resolves_to_its_own_stand_in() {
    let mut by_path: BTreeMap<String, u32> = BTreeMap::new();
    let mut locations = Vec::new();
    for (rel, ntff, want_locs) in [
        (CAPTURE, "profile_exec_2", 21),
        (
            "KevGomes-nki-moe-megakernel/kernels/moe_tkg/agents",
            "profile_v6b_exec_2",
            20,
        ),
        (
            "KevGomes-nki-moe-megakernel/kernels/attn_tkg/agents",
            "profile_attn_v6_exec_2",
            107,
        ),
    ] {
        let (parquet, _) = instructions_of(rel, ntff);
        let (sums, _, _) = sums_by_location(&parquet);
        assert_eq!(sums.len(), want_locs, "{ntff}: distinct locations");
        for loc in sums.keys() {
            let (path, line) = split_location(loc).unwrap_or_else(|| panic!("{loc}: no :line"));
            let m = by_path.entry(path.to_string()).or_default();
            *m = (*m).max(line);
            locations.push(loc.clone());
        }
    }
    eprintln!("source_view: debug paths and largest lines: {by_path:?}");
    assert_eq!(by_path.len(), 4, "distinct source files named: {by_path:?}");
    assert!(by_path
        .keys()
        .any(|p| p.ends_with("/nki/language/creation_ops.py")));

    let root = scratch("paths");
    let src = root.join("src");
    for (path, max) in &by_path {
        let f = src.join(path.trim_start_matches('/'));
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        let mut text = String::new();
        for n in 1..=max + 10 {
            text.push_str(&format!(
                "x = {n}  # {} line {n}\n",
                f.file_name().unwrap().to_string_lossy()
            ));
        }
        std::fs::write(&f, text).unwrap();
    }
    let tgz = root.join("src.tar.gz");
    let st = std::process::Command::new("tar")
        .arg("czf")
        .arg(&tgz)
        .arg("-C")
        .arg(&src)
        .args(["home", "opt"])
        .status()
        .expect("run tar");
    assert!(st.success(), "tar czf failed");
    let mut folder = SourceIndex::new();
    for top in ["home", "opt"] {
        assert_eq!(folder.add_dir(&src.join(top)).error, None);
    }
    let mut archive = SourceIndex::new();
    let load = archive.add_input("src.tar.gz", &FileSource::open(&tgz).unwrap());
    std::fs::remove_dir_all(&root).unwrap();
    assert_eq!((folder.len(), archive.len()), (4, 4));
    assert_eq!(load.load.error, None);

    for idx in [&folder, &archive] {
        for loc in &locations {
            let r = idx.resolve(loc);
            assert_eq!(r.files.len(), 1, "{loc}: {:?}", r.files);
            let file = &r.files[0];
            assert!(
                file.ends_with(r.debug_path.trim_start_matches('/')),
                "{loc} → {file}"
            );
            let name = file.rsplit('/').next().unwrap();
            let line = idx
                .get(file)
                .unwrap()
                .text
                .lines()
                .nth(r.line as usize - 1)
                .unwrap();
            assert_eq!(
                line,
                format!("x = {}  # {name} line {}", r.line, r.line),
                "{loc}"
            );
        }
    }
}
