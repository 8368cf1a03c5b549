//! Memory snapshots (docs/format/framework-inputs.md §3) written by Python's own `pickle` from
//! realistic `torch.cuda.memory._snapshot()` dict shapes (crate/tests/fixtures/make_snapshots.py,
//! run at test time; no torch needed), checked against the ground truth that script computes.

#[path = "common/mutate.rs"]
mod mutate;

use std::path::PathBuf;
use std::sync::OnceLock;

use arrow_array::{Array, Int64Array, RecordBatch, StringArray};
use neuronscope::memsnap::{self, pickle, MemSnapReport};
use neuronscope::source::SliceSource;
use neuronscope::tables::Tables;
use serde_json::Value;

/// Generates the fixtures once per test process.
fn fixtures() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("nscope-memsnap-{}", std::process::id()));
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/make_snapshots.py"
        );
        let st = std::process::Command::new("python3")
            .arg(script)
            .arg(&dir)
            .status()
            .unwrap_or_else(|e| panic!("cannot run python3 {script}: {e} (python3 is required)"));
        assert!(st.success(), "{script} failed: {st}");
        dir
    })
}

fn bytes(name: &str) -> Vec<u8> {
    let p = fixtures().join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn expected() -> Value {
    serde_json::from_slice(&bytes("expected.json")).unwrap()
}

fn run(name: &str) -> (MemSnapReport, Tables) {
    let data = bytes(name);
    let mut t = Tables::default();
    let r = memsnap::process(&SliceSource(&data), name, &mut t).unwrap();
    (r, t)
}

fn i64_col(b: &RecordBatch, name: &str) -> Int64Array {
    b.column_by_name(name)
        .unwrap()
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap()
        .clone()
}

fn str_col(b: &RecordBatch, name: &str) -> StringArray {
    b.column_by_name(name)
        .unwrap()
        .as_any()
        .downcast_ref::<StringArray>()
        .unwrap()
        .clone()
}

fn check_report(r: &MemSnapReport, e: &Value) {
    let u = |k: &str| e[k].as_u64().unwrap_or_else(|| panic!("expected.{k}"));
    assert_eq!(r.events, u("events"), "events");
    assert_eq!(r.segments, u("segments"), "segments");
    assert_eq!(r.blocks, u("blocks"), "blocks");
    assert_eq!(r.stacks, u("stacks"), "distinct stacks");
    assert_eq!(r.frames, u("frames"), "frame rows");
    assert_eq!(r.annotations, u("annotations"), "annotations");
    assert_eq!(r.settings, u("settings"), "settings");
    assert_eq!(r.ooms, u("ooms"), "ooms");
    assert_eq!(r.first_ts_ns, e["first_ts_ns"].as_i64());
    assert_eq!(r.last_ts_ns, e["last_ts_ns"].as_i64());
    let devs = e["devices"].as_array().unwrap();
    assert_eq!(r.devices.len(), devs.len());
    for (d, x) in r.devices.iter().zip(devs) {
        let i = |k: &str| x[k].as_i64().unwrap();
        assert_eq!(d.device, i("device"));
        assert_eq!(d.events as i64, i("events"));
        assert_eq!(d.baseline_allocated_bytes, i("baseline_allocated_bytes"));
        assert_eq!(d.baseline_reserved_bytes, i("baseline_reserved_bytes"));
        assert_eq!(
            d.peak_allocated_bytes,
            i("peak_allocated_bytes"),
            "peak alloc"
        );
        assert_eq!(
            d.peak_reserved_bytes,
            i("peak_reserved_bytes"),
            "peak reserved"
        );
        assert_eq!(d.final_allocated_bytes, i("final_allocated_bytes"));
        assert_eq!(d.final_reserved_bytes, i("final_reserved_bytes"));
    }
    let peak = devs
        .iter()
        .map(|x| x["peak_allocated_bytes"].as_i64().unwrap())
        .max();
    assert_eq!(r.peak_allocated_bytes, peak);
}

#[test]
fn snapshots_match_python_ground_truth() {
    let e = expected();
    for proto in [2u8, 4, 5] {
        let name = format!("snapshot_p{proto}.pickle");
        let (r, t) = run(&name);
        assert!(r.problems.is_empty(), "{name}: {:?}", r.problems);
        assert_eq!(r.protocol, Some(proto));
        check_report(&r, &e);

        let ev = t.concat("MemoryAllocatorEvent").unwrap();
        assert_eq!(ev.num_rows() as u64, r.events);
        // Action counts per device.
        let dev = ev
            .column_by_name("device")
            .unwrap()
            .as_any()
            .downcast_ref::<arrow_array::Int32Array>()
            .unwrap()
            .clone();
        let action = str_col(&ev, "action");
        for x in e["devices"].as_array().unwrap() {
            let d = x["device"].as_i64().unwrap() as i32;
            for (a, n) in x["actions"].as_object().unwrap() {
                let got = (0..ev.num_rows())
                    .filter(|&i| dev.value(i) == d && action.value(i) == a)
                    .count();
                assert_eq!(got as u64, n.as_u64().unwrap(), "{name} dev {d} {a}");
            }
        }
        // The first entry of the last device, field by field, and its stack.
        let f = &e["first_event_dev1"];
        let last_dev = e["devices"].as_array().unwrap().len() as i32 - 1;
        let row = (0..ev.num_rows())
            .find(|&i| dev.value(i) == last_dev)
            .unwrap();
        assert_eq!(i64_col(&ev, "trace_index").value(row), 0);
        assert_eq!(action.value(row), f["action"].as_str().unwrap());
        assert_eq!(
            i64_col(&ev, "address").value(row),
            f["addr"].as_i64().unwrap()
        );
        assert_eq!(i64_col(&ev, "size").value(row), f["size"].as_i64().unwrap());
        assert_eq!(
            i64_col(&ev, "stream").value(row),
            f["stream"].as_i64().unwrap()
        );
        assert_eq!(
            i64_col(&ev, "timestamp").value(row),
            f["time_us"].as_i64().unwrap() * 1000
        );
        let sid = i64_col(&ev, "stack_id").value(row);
        let fr = t.concat("MemoryStackFrame").unwrap();
        let (fs, ff, fl, fnm) = (
            i64_col(&fr, "stack_id"),
            str_col(&fr, "filename"),
            i64_col(&fr, "line"),
            str_col(&fr, "name"),
        );
        let got: Vec<(String, i64, String)> = (0..fr.num_rows())
            .filter(|&i| fs.value(i) == sid)
            .map(|i| {
                (
                    ff.value(i).to_string(),
                    fl.value(i),
                    fnm.value(i).to_string(),
                )
            })
            .collect();
        let want: Vec<(String, i64, String)> = e["first_event_dev1_frames"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| {
                (
                    x[0].as_str().unwrap().to_string(),
                    x[1].as_i64().unwrap(),
                    x[2].as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert_eq!(got, want, "{name}: frames of the first entry");
        // OOM rows: no address, device_free and size set.
        let free = i64_col(&ev, "device_free");
        let addr = i64_col(&ev, "address");
        let ooms: Vec<usize> = (0..ev.num_rows())
            .filter(|&i| action.value(i) == "oom")
            .collect();
        assert_eq!(ooms.len(), 2);
        for i in ooms {
            assert!(addr.is_null(i));
            assert_eq!(free.value(i), 12345 * 4096);
        }
        // Segments, blocks, settings, annotations.
        assert_eq!(t.rows("MemorySegment") as u64, r.segments);
        assert_eq!(t.rows("MemoryBlock") as u64, r.blocks);
        let s = t.concat("MemoryAllocatorSettings").unwrap();
        let (k, v) = (str_col(&s, "key"), str_col(&s, "value"));
        let kv: Vec<(&str, &str)> = (0..s.num_rows())
            .map(|i| (k.value(i), v.value(i)))
            .collect();
        assert!(kv.contains(&("max_split_size", "-1")), "{kv:?}");
        assert!(kv.contains(&("expandable_segments", "False")), "{kv:?}");
        assert!(kv.contains(&("roundup_power2_divisions.2", "4")), "{kv:?}");
        let an = t.concat("MemoryAnnotation").unwrap();
        assert_eq!(str_col(&an, "name").value(0), "ProfilerStep#0");
        assert_eq!(str_col(&an, "stage").value(1), "END");
        let seg = t.concat("MemorySegment").unwrap();
        assert_eq!(str_col(&seg, "segment_pool_id").value(0), "0,0");
        // Trace entries were consumed while reading (two devices: APPENDS of inner lists).
        let data = bytes(&name);
        let full = pickle::parse(
            &SliceSource(&data),
            pickle::Limits::default(),
            &mut pickle::NoHook,
        );
        let full_values = (full.arena.item_count() + full.arena.obj_count()) as u64;
        assert!(
            full_values - r.retained_values >= 12 * r.events,
            "{name}: not streamed"
        );
    }
}

#[test]
fn large_snapshot_streams_trace_entries() {
    let e = expected();
    let (r, _t) = run("large_p4.pickle");
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    check_report(&r, &e["large"]);
    // Without the hook every entry dict keeps its ≥ 6 key/value pairs; with it, none.
    let data = bytes("large_p4.pickle");
    let full = pickle::parse(
        &SliceSource(&data),
        pickle::Limits::default(),
        &mut pickle::NoHook,
    );
    assert!(full.error.is_none());
    let full_values = (full.arena.item_count() + full.arena.obj_count()) as u64;
    assert!(
        full_values - r.retained_values >= 12 * r.events,
        "retained {} of {} values for {} events",
        r.retained_values,
        full_values,
        r.events
    );
}

#[test]
fn own_frames_per_entry_are_dropped_and_stacks_interned_by_content() {
    let e = expected();
    let (r, t) = run("unshared_p4.pickle");
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    // Same report as when the frames are shared: stacks are distinct by content.
    check_report(&r, &e["unshared"]);
    let ev = t.concat("MemoryAllocatorEvent").unwrap();
    assert_eq!(ev.num_rows() as u64, r.events);
    // Every entry's own frames were dropped as soon as the entry became a row...
    assert_eq!(r.reclaimed_entries, r.events, "entries reclaimed");
    // ...so the reader holds far fewer values than a reader keeping the object graph (about 7
    // values per frame dict for every entry).
    let data = bytes("unshared_p4.pickle");
    let full = pickle::parse(
        &SliceSource(&data),
        pickle::Limits::default(),
        &mut pickle::NoHook,
    );
    assert!(full.error.is_none());
    assert!(
        full.peak_values > 7 * r.events * 2,
        "the graph has frames: {} values",
        full.peak_values
    );
    assert!(
        r.peak_values * 5 < full.peak_values,
        "peak retained values {} (whole graph {})",
        r.peak_values,
        full.peak_values
    );
    assert!(
        r.retained_values * 5 < full.peak_values,
        "retained at the end {} (whole graph {})",
        r.retained_values,
        full.peak_values
    );
}

#[test]
fn legacy_blocks_use_history() {
    let (r, t) = run("legacy_p4.pickle");
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    let b = t.concat("MemoryBlock").unwrap();
    assert_eq!(i64_col(&b, "address").values().to_vec(), vec![4096, 5096]);
    assert_eq!(i64_col(&b, "offset").values().to_vec(), vec![0, 1000]);
    assert_eq!(i64_col(&b, "size").values().to_vec(), vec![1000, 2000]);
    let s = i64_col(&b, "stack_id");
    assert_eq!(s.value(0), s.value(1), "one shared stack");
    assert_eq!(r.stacks, 1);
    assert_eq!(r.devices[0].final_allocated_bytes, 1000);
    assert_eq!(r.devices[0].final_reserved_bytes, 3000);
}

#[test]
fn wide_integers_and_shared_memo() {
    let e = expected();
    let data = bytes("ints_p4.pickle");
    let p = pickle::parse(
        &SliceSource(&data),
        pickle::Limits::default(),
        &mut pickle::NoHook,
    );
    assert!(p.error.is_none(), "{:?}", p.error);
    let a = &p.arena;
    let got: Vec<String> = a
        .seq(p.root.unwrap())
        .map(|v| match v {
            pickle::Val::BigText(_) => a.str(v).unwrap().to_string(),
            _ => a.big(v).unwrap().to_string(),
        })
        .collect();
    let want: Vec<String> = e["ints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect();
    assert_eq!(got, want);

    // serde-pickle's failure case (spec §3.4): pickle.dumps([[d], [d]], 4).
    let data = bytes("shared_p4.pickle");
    let p = pickle::parse(
        &SliceSource(&data),
        pickle::Limits::default(),
        &mut pickle::NoHook,
    );
    assert!(p.error.is_none(), "{:?}", p.error);
    let a = &p.arena;
    let inner: Vec<_> = a
        .seq(p.root.unwrap())
        .map(|l| a.seq(l).next().unwrap())
        .collect();
    assert_eq!(inner.len(), 2);
    assert_eq!(inner[0], inner[1], "one shared dict object");
    assert_eq!(a.str(a.get(inner[0], "filename").unwrap()), Some("x"));
}

#[test]
fn malicious_pickles_are_refused_with_the_opcode() {
    let e = expected();
    for (name, x) in e["evil"].as_object().unwrap() {
        let (r, t) = run(name);
        let off = x["offset"].as_u64().unwrap();
        let op = x["opcode"].as_str().unwrap();
        assert_eq!(r.problems.len(), 1, "{name}: {:?}", r.problems);
        let p = &r.problems[0];
        assert_eq!(p.offset, Some(off), "{name}: {}", p.message);
        assert!(p.message.contains(op), "{name}: {}", p.message);
        assert!(p.message.contains("refused"), "{}", p.message);
        assert_eq!(r.events, 0);
        assert_eq!(t.rows("MemoryAllocatorEvent"), 0);
    }
}

#[test]
fn truncated_and_bit_flipped_input_never_panics() {
    let data = bytes("snapshot_p4.pickle");
    let full = run("snapshot_p4.pickle").0;
    let step = (data.len() / 200).max(1);
    let mut partial = 0;
    for cut in mutate::offsets(data.len(), step) {
        let mut t = Tables::default();
        let r = memsnap::process(&SliceSource(&data[..cut]), "cut", &mut t).unwrap();
        assert!(!r.problems.is_empty(), "cut at {cut} must be reported");
        assert!(r.events <= full.events);
        if r.events > 0 {
            partial += 1;
        }
    }
    assert!(partial > 60, "rows before the fault are kept ({partial})");
    for (i, pos) in mutate::offsets(data.len(), step).enumerate() {
        let d = mutate::edited(&data, pos, |b| {
            if i % 3 == 2 {
                0xFF // huge lengths, refused opcodes
            } else {
                b ^ 1 << (i % 8)
            }
        });
        let mut t = Tables::default();
        memsnap::process(&SliceSource(&d), "flip", &mut t).unwrap();
    }
}
