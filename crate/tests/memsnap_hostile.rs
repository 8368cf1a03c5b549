//! Memory snapshots built to crash or stall the reader (issue 13's fuzzing finds): values that
//! contain themselves, nest 200 000 deep, or expand 64⁶-fold through shared sub-lists, and
//! snapshots that reference one shared segment or block far more often than their size allows.
//! Each is written by Python's own `pickle` (or by hand where Python's pickler itself recurses)
//! in the test, then read through the entry points the CLI and the page use
//! ([`memsnap::process`], which `profile::process_memory` calls, and `neuronscope convert`).
//! Each must end with a warning naming the file and the offset, and everything else decoded.

use std::path::{Path, PathBuf};

use arrow_array::{Array, StringArray};
use neuronscope::memsnap::{self, MemSnapReport};
use neuronscope::source::SliceSource;
use neuronscope::tables::Tables;
use neuronscope::Severity;

/// Runs `code` with python3; the script writes its pickle bytes to stdout.
fn python_pickle(code: &str) -> Vec<u8> {
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(format!(
            "import pickle, sys\n{code}\nsys.stdout.buffer.write(data)\n"
        ))
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3: {e} (python3 is required)"));
    assert!(
        out.status.success(),
        "python3 failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn run(name: &str, data: &[u8]) -> (MemSnapReport, Tables) {
    let mut t = Tables::default();
    let r = memsnap::process(&SliceSource(data), name, &mut t).unwrap();
    (r, t)
}

fn strs(t: &Tables, table: &str, col: &str) -> Vec<Option<String>> {
    let Some(b) = t.concat(table) else {
        return Vec::new();
    };
    let a = b
        .column_by_name(col)
        .unwrap()
        .as_any()
        .downcast_ref::<StringArray>()
        .unwrap()
        .clone();
    (0..a.len())
        .map(|i| (!a.is_null(i)).then(|| a.value(i).to_string()))
        .collect()
}

fn settings(t: &Tables) -> Vec<(String, String)> {
    strs(t, "MemoryAllocatorSettings", "key")
        .into_iter()
        .zip(strs(t, "MemoryAllocatorSettings", "value"))
        .map(|(k, v)| (k.unwrap(), v.unwrap()))
        .collect()
}

/// The only problem of `r` has `code`, is a warning, names `file` and carries an offset inside
/// the file that the message repeats.
fn one_warning(r: &MemSnapReport, code: &str, file: &str, len: usize) -> u64 {
    assert_eq!(r.problems.len(), 1, "{:#?}", r.problems);
    let p = &r.problems[0];
    assert_eq!(p.code, code, "{p:?}");
    assert_eq!(p.severity, Severity::Warning, "{p:?}");
    assert_eq!(p.file.as_deref(), Some(file));
    let off = p.offset.unwrap_or_else(|| panic!("no offset: {p:?}"));
    assert!(
        (off as usize) < len,
        "offset {off} outside the {len}-byte file"
    );
    assert!(p.message.starts_with(&format!("{file}: ")), "{}", p.message);
    assert!(
        p.message.contains(&format!("at offset {off}")),
        "{}",
        p.message
    );
    off
}

/// A trace entry besides the hostile value, to check it still decodes (`free_requested` moves
/// no byte counts, so the snapshot needs no segments to be consistent).
const REST: &str =
    "ev = {'action': 'free_requested', 'addr': 4096, 'size': 512, 'stream': 0, 'time_us': 7}";

#[test]
fn setting_that_contains_itself() {
    // Crash 1 of issue 13: `allocator_settings = {'x': L}` with L = [L] (protocol 2) overflowed
    // the stack in render().
    let data = python_pickle(&format!(
        "{REST}\nL = []\nL.append(L)\n\
         data = pickle.dumps({{'device_traces': [[ev]], 'allocator_settings': {{'x': L, 'y': 7}}}}, 2)"
    ));
    let name = "memory_snapshot_rank0.pickle";
    let (r, t) = run(name, &data);
    let off = one_warning(&r, "MEMORY_SNAPSHOT_VALUE_CUT", name, data.len());
    assert!(r.problems[0].message.contains("allocator_settings.x"));
    assert!(r.problems[0].message.contains("contains itself"));
    // Python's own pickle writes `]` (EMPTY_LIST) for L: the offset is that opcode.
    assert_eq!(
        data[off as usize], b']',
        "offset {off} is not L's EMPTY_LIST"
    );
    assert_eq!(
        settings(&t),
        [
            ("x".to_string(), "...".to_string()),
            ("y".into(), "7".into())
        ]
    );
    assert_eq!(r.events, 1);
    assert_eq!(r.first_ts_ns, Some(7000));
    assert_eq!(
        strs(&t, "MemoryAllocatorEvent", "action"),
        [Some("free_requested".to_string())]
    );
}

#[test]
fn pool_id_that_contains_itself() {
    // Crash 2: a trace entry whose pool_id is a self-containing list.
    let data = python_pickle(&format!(
        "{REST}\nL = [0]\nL.append(L)\nbad = dict(ev, pool_id=L)\n\
         data = pickle.dumps({{'device_traces': [[ev, bad, dict(ev)]]}}, 4)"
    ));
    let name = "memory_snapshot_rank1.pickle";
    let (r, t) = run(name, &data);
    one_warning(&r, "MEMORY_SNAPSHOT_VALUE_CUT", name, data.len());
    assert!(
        r.problems[0]
            .message
            .contains("device_traces[0][1].pool_id"),
        "{}",
        r.problems[0].message
    );
    assert_eq!(r.events, 3);
    let pools = strs(&t, "MemoryAllocatorEvent", "pool_id");
    assert_eq!(pools, [None, Some("0,...".to_string()), None]);
}

/// `{'allocator_settings': {'x': [[[…]]]}, 'segments': [seg]}` with `depth` nested lists,
/// written by hand: Python's pickler recurses too and cannot write it.
fn nested_lists(depth: usize) -> Vec<u8> {
    let s = |b: &mut Vec<u8>, t: &str| {
        b.push(0x8C); // SHORT_BINUNICODE
        b.push(t.len() as u8);
        b.extend_from_slice(t.as_bytes());
    };
    let mut b = vec![0x80, 2, b'}']; // PROTO 2, EMPTY_DICT (the root)
    s(&mut b, "segments");
    b.push(b']');
    b.push(b'}');
    s(&mut b, "total_size");
    b.extend_from_slice(&[b'J', 0, 0, 0x20, 0]); // BININT 2 MiB
    b.push(b's');
    b.push(b'a');
    b.push(b's');
    s(&mut b, "allocator_settings");
    b.push(b'}');
    s(&mut b, "x");
    b.extend(std::iter::repeat_n(b']', depth)); // EMPTY_LIST × depth
    b.extend(std::iter::repeat_n(b'a', depth - 1)); // APPEND each into the one below
    b.extend_from_slice(b"ss.");
    b
}

#[test]
fn settings_nested_200000_deep() {
    // Crash 3: depth alone, no cycle.
    let data = nested_lists(200_000);
    let name = "memory_snapshot_rank2.pickle";
    let (r, t) = run(name, &data);
    let off = one_warning(&r, "MEMORY_SNAPSHOT_VALUE_CUT", name, data.len());
    assert!(r.problems[0].message.contains("deeper than 32 levels"));
    // The cut is at the 33rd list: the 33rd EMPTY_LIST opcode of the run.
    let first = data.len() - 3 - (200_000 - 1) - 200_000;
    assert_eq!(off as usize, first + memsnap::RENDER_MAX_DEPTH);
    assert_eq!(settings(&t), [("x".to_string(), "...".to_string())]);
    assert_eq!(r.segments, 1);
    assert_eq!(r.devices[0].final_reserved_bytes, 2 << 20);
}

#[test]
fn shared_sub_lists_expand_64_to_the_6th() {
    // Crash 4 (a stall): six levels of a list holding the same sub-list 64 times (882 bytes);
    // rendered naively that is 64⁶ ≈ 6.9e10 leaves.
    let data = python_pickle(
        "x = 0\nfor _ in range(6):\n    x = [x] * 64\n\
         data = pickle.dumps({'allocator_settings': {'x': x, 'y': 'ok'}}, 2)",
    );
    assert!(data.len() < 1000, "{} bytes", data.len());
    let name = "memory_snapshot_rank3.pickle";
    let (r, t) = run(name, &data);
    one_warning(&r, "MEMORY_SNAPSHOT_VALUE_CUT", name, data.len());
    assert!(r.problems[0]
        .message
        .contains("expands to more than 4096 values"));
    let s = settings(&t);
    assert_eq!(s.len(), 2);
    let (k, v) = &s[0];
    assert_eq!(k, "x");
    assert!(
        v.starts_with("0,0,0,") && v.ends_with(",..."),
        "{} bytes: {}…{}",
        v.len(),
        &v[..40.min(v.len())],
        &v[v.len().saturating_sub(40)..]
    );
    // One "0" and a comma per value visited, at most RENDER_MAX_NODES of them.
    assert!(
        v.len() <= 2 * memsnap::RENDER_MAX_NODES,
        "{} bytes",
        v.len()
    );
    assert_eq!(s[1], ("y".to_string(), "ok".to_string()));
}

#[test]
fn shared_segments_and_blocks_are_capped_by_file_size() {
    // 10 000 references to one segment whose blocks list holds 10 000 references to one block:
    // 10⁸ block rows from ~40 kB. The rows stop at the work allowance, with a warning.
    let data = python_pickle(
        "blk = {'size': 512, 'state': 'active_allocated', 'requested_size': 500}\n\
         seg = {'device': 0, 'address': 0, 'total_size': 1 << 20, 'blocks': [blk] * 10000}\n\
         data = pickle.dumps({'segments': [seg] * 10000, 'allocator_settings': {'y': 1}}, 4)",
    );
    let name = "memory_snapshot_rank4.pickle";
    let (r, t) = run(name, &data);
    one_warning(&r, "MEMORY_SNAPSHOT_AMPLIFIED", name, data.len());
    let allowance = memsnap::BUDGET_BASE + memsnap::BUDGET_PER_BYTE * data.len() as u64;
    // Each block row costs its dict's 6 items + 1.
    assert!(
        r.blocks > 0 && r.blocks <= allowance / 7,
        "{} blocks",
        r.blocks
    );
    assert!(r.blocks >= allowance / 7 - 20_000, "{} blocks", r.blocks);
    assert_eq!(t.rows("MemoryBlock") as u64, r.blocks);
    // Settings come after segments and are still written.
    assert_eq!(settings(&t), [("y".to_string(), "1".to_string())]);
}

#[test]
fn shared_frames_list_is_walked_once() {
    // 50 000 trace entries sharing one frames list of 2 000 frames: interned once by object
    // (not 10⁸ frame visits), so no allowance is exceeded and every entry has the same stack.
    let data = python_pickle(
        "fr = [{'filename': 'a.py', 'line': i, 'name': 'f'} for i in range(2000)]\n\
         ev = [{'action': 'free_requested', 'addr': i, 'size': 1, 'frames': fr} for i in range(50000)]\n\
         data = pickle.dumps({'device_traces': [ev]}, 4)",
    );
    let (r, _t) = run("memory_snapshot_rank5.pickle", &data);
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    assert_eq!(r.events, 50_000);
    assert_eq!(r.stacks, 1);
    assert_eq!(r.frames, 2000);
}

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_neuronscope")
}

fn tmp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("nscope-hostile-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn convert(dir: &Path, out: &Path) -> (std::process::ExitStatus, String) {
    let o = std::process::Command::new(bin())
        .arg("convert")
        .arg(dir)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status, text)
}

#[test]
fn convert_survives_the_crash_inputs() {
    // `neuronscope convert` aborted with "thread 'main' has overflowed its stack" (exit 134) on
    // the 96-byte file; now it exits 0 with the warning and writes the tables.
    let base = tmp("cli");
    let dir = base.join("cap");
    std::fs::create_dir_all(&dir).unwrap();
    let cyc = python_pickle(
        "L = []\nL.append(L)\ndata = pickle.dumps({'allocator_settings': {'x': L}}, 2)",
    );
    std::fs::write(dir.join("memory_snapshot_rank0.pickle"), &cyc).unwrap();
    std::fs::write(
        dir.join("memory_snapshot_rank1.pickle"),
        nested_lists(200_000),
    )
    .unwrap();
    let out = base.join("out");
    let (st, text) = convert(&dir, &out);
    assert_eq!(st.code(), Some(0), "{st}: {text}");
    assert_eq!(text.matches("Warning: ").count(), 2, "{text}");
    assert!(
        text.contains("memory_snapshot_rank0.pickle: allocator_settings.x: the value at offset"),
        "{text}"
    );
    assert!(text.contains("nests deeper than 32 levels"), "{text}");
    // Both snapshots' tables are in the dataset: one MemoryAllocatorSettings part per profile.
    assert!(out.join("_profiles.parquet").is_file(), "{text}");
    let mut parts = 0;
    let mut stack = vec![out.join("MemoryAllocatorSettings")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "parquet") {
                parts += 1;
            }
        }
    }
    assert_eq!(parts, 2, "{text}");
    let _ = std::fs::remove_dir_all(&base);
}
