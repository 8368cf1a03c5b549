//! System-profile decoding on the one complete capture in the samples
//! (KevGomes-nki-moe-megakernel/output/i-0af76a70a6d3864dd_pid_713479): spec README conformance
//! tests 10 and 11, table contents, and no-panic runs on truncated / bit-flipped copies.

mod common;
#[path = "common/system_mem.rs"]
mod system_mem;
use common::samples;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use arrow_array::{Array, Float32Array, Int64Array, RecordBatch, StringArray};
use neuronscope::inventory::{self, Profile, ProfileType};
use neuronscope::source::FileSource;
use neuronscope::system::{self, SystemReport};
use neuronscope::tables::Tables;
use neuronscope::{ByteSource, Result};

const CAPTURE: &str = "KevGomes-nki-moe-megakernel/output";
const DIR: &str = "i-0af76a70a6d3864dd_pid_713479";

fn capture_root() -> PathBuf {
    let root = samples().join(CAPTURE);
    assert!(
        root.join(DIR).join("trace_info.pb").is_file(),
        "system-profile capture missing below {}",
        root.display()
    );
    root
}

fn list(root: &Path) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(root.join(DIR)).expect("read capture dir") {
        let p = e.expect("entry").path();
        let len = p.metadata().expect("metadata").len();
        let name = p.file_name().expect("name").to_string_lossy().to_string();
        out.push((format!("{DIR}/{name}"), len));
    }
    out.sort();
    out
}

fn run_sample() -> (Profile, SystemReport, Tables) {
    let root = capture_root();
    let files = list(&root);
    let r2 = root.clone();
    let open = move |p: &str| -> Result<Box<dyn ByteSource>> {
        Ok(Box::new(FileSource::open(&r2.join(p))?))
    };
    let inv = inventory::build(&files, &open);
    let profile = inv
        .profiles
        .iter()
        .find(|p| p.root == DIR)
        .unwrap_or_else(|| panic!("no profile for {DIR}: {:#?}", inv.profiles))
        .clone();
    assert_eq!(profile.profile_type, ProfileType::SystemDevice);
    let mut tables = Tables::default();
    let mut ticks = 0u64;
    let rep = system::process(&profile, &open, &mut tables, &mut |_, _, _| ticks += 1)
        .expect("process the sample capture");
    assert!(ticks >= 3, "progress was reported {ticks} times");
    (profile, rep, tables)
}

fn col<'a, T: 'static>(b: &'a RecordBatch, name: &str) -> &'a T {
    b.column_by_name(name)
        .unwrap_or_else(|| panic!("column {name} missing"))
        .as_any()
        .downcast_ref::<T>()
        .unwrap_or_else(|| panic!("column {name} has another type"))
}

#[test]
fn sample_capture_counts_and_tables() {
    let (profile, rep, t) = run_sample();
    println!("files: {:#?}", rep.files);
    println!("event rows per name: {:#?}", rep.event_counts);
    println!(
        "spans {} instants {} unpaired starts {} stops {} sync {:?} exec/core {:?}",
        rep.spans,
        rep.instants,
        rep.unpaired_starts,
        rep.unpaired_stops,
        rep.sync,
        rep.exec_spans_per_core
    );
    println!("rows: {:?}", rep.rows);
    println!("devices: {:#?}", rep.devices);
    println!("problems: {:#?}", rep.problems);

    // --- Conformance test 10: framing, no remainder, counts = trace_info.pb.
    let info = rep.trace_info.as_ref().expect("trace_info decoded");
    assert_eq!(info.version, 2);
    assert_eq!(
        Some(info.pid),
        profile.pid,
        "trace_info pid = directory pid"
    );
    assert_eq!(info.pid, 713_479);
    assert_eq!(info.instance_id, "i-0af76a70a6d3864dd");
    assert_eq!(info.instance_type, "trn2.3xlarge");
    assert_eq!(info.host_name, "ip-172-31-131-112");
    assert_eq!(info.cpu_count, 12);
    assert_eq!(info.ram_bytes, 133_975_228_416);
    assert_eq!(info.start_ns, 1_773_237_643_508_494_611);
    assert_eq!(info.end_ns, 1_773_238_243_677_100_845);
    assert_eq!(info.ntrace_count, 1676);
    assert_eq!(info.tables.len(), 4, "four name tables");
    assert_eq!(info.event_name(7), "nc_exec_running");
    assert_eq!(info.event_name(0), "generic");
    assert_eq!(info.event_name(999), "event_999");
    assert!(info
        .model_neff(171_450_338_541_704)
        .is_some_and(|n| n.ends_with(".neff")));
    let by_name: BTreeMap<&str, &system::FileCount> = rep
        .files
        .iter()
        .map(|f| (f.file.rsplit('/').next().unwrap_or(""), f))
        .collect();
    for (name, n) in [
        ("ntrace.pb", 1676),
        ("cpu_util.pb", 7200),
        ("host_mem.pb", 600),
    ] {
        let f = by_name
            .get(name)
            .unwrap_or_else(|| panic!("{name} not decoded"));
        assert_eq!(f.records, n, "{name} records");
        assert_eq!(f.remainder, 0, "{name} remainder");
        assert_eq!(f.expected, Some(n), "{name}: trace_info count");
    }
    assert!(
        rep.problems
            .iter()
            .all(|p| p.code == "DEVICE_PROFILE_NOT_LINKED"),
        "unexpected problems: {:#?}",
        rep.problems
    );

    // --- Conformance test 11: every stop pairs with a start; hardware time = sync rule.
    assert_eq!(rep.spans, 837);
    assert_eq!(rep.instants, 2);
    assert_eq!(rep.unpaired_starts, 0);
    assert_eq!(rep.unpaired_stops, 0);
    assert_eq!(rep.type_mismatches, 0);
    // nc_exec_running ×2 spans + nc_model_switch ×2 spans = 8 records with a device time.
    assert_eq!(rep.sync.checked, 8);
    assert_eq!(rep.sync.matched, 8, "field 2 = sync-point formula");
    assert_eq!(rep.sync.recomputed, 0);
    let per_core: Vec<(&str, u64)> = rep
        .exec_spans_per_core
        .iter()
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    assert_eq!(per_core, vec![("4", 1), ("5", 1)]);

    // Spec §5.3 counts records; rows are pairs (half), instants stay single.
    let expect_records: [(&str, u64); 21] = [
        ("dmem_buf_copyin", 796),
        ("nrt_dma_mem_alloc", 790),
        ("nrt_tensor_allocate", 18),
        ("nrt_tensor_write", 16),
        ("nrt_dma_mem_dealloc", 10),
        ("nrt_load", 8),
        ("nc_exec_running", 4),
        ("nc_model_switch", 4),
        ("nrt_tensor_free", 4),
        ("notification_consume_errors", 4),
        ("exec_consume_gpsimd_stdio", 4),
        ("nrt_execute", 2),
        ("nrt_model_submit", 2),
        ("kbl_exec_pre", 2),
        ("kmgr_exec_core", 2),
        ("kbl_exec_wait", 2),
        ("kbl_exec_post", 2),
        ("timestamp_sync_point", 2),
        ("nrt_tensor_read", 2),
        ("dmem_buf_copyout", 2),
        ("nrt_tensor_write", 16),
    ];
    for (name, records) in expect_records {
        let rows = if name == "timestamp_sync_point" {
            records
        } else {
            records / 2
        };
        assert_eq!(rep.event_counts.get(name), Some(&rows), "{name}");
    }
    assert_eq!(rep.event_counts.values().sum::<u64>(), 839);

    // --- SystemProfileEvents
    let ev = t
        .concat("SystemProfileEvents")
        .expect("SystemProfileEvents");
    assert_eq!(ev.num_rows(), 839);
    let ids = col::<Int64Array>(&ev, "id");
    let names = col::<StringArray>(&ev, "name");
    let start = col::<Int64Array>(&ev, "start_ts");
    let end = col::<Int64Array>(&ev, "end_ts");
    let dur = col::<Int64Array>(&ev, "duration_ns");
    let src = col::<StringArray>(&ev, "trace_event_source");
    let tid = col::<Int64Array>(&ev, "thread_id");
    let pid = col::<Int64Array>(&ev, "process_id");
    let inst = col::<StringArray>(&ev, "instance_id");
    let pcore = col::<Int64Array>(&ev, "pcore_idx");
    let worker = col::<Int64Array>(&ev, "worker_gid");
    let nc = col::<Int64Array>(&ev, "nc_idx");
    let extra = col::<StringArray>(&ev, "extra_attributes_json");
    let mut seen = HashSet::new();
    let mut prev = i64::MIN;
    let mut workers = BTreeSet::new();
    for i in 0..ev.num_rows() {
        let name = names.value(i);
        assert!(
            !name.is_empty() && !name.starts_with("event_") && name.parse::<u64>().is_err(),
            "row {i}: unresolved name {name:?}"
        );
        assert!(seen.insert(ids.value(i)), "duplicate id {}", ids.value(i));
        assert!(start.value(i) >= prev, "rows sorted by start");
        prev = start.value(i);
        assert!(end.value(i) >= start.value(i));
        assert_eq!(dur.value(i), end.value(i) - start.value(i));
        assert!(start.value(i) >= info.start_ns as i64 && end.value(i) <= info.end_ns as i64);
        assert_eq!(pid.value(i), 713_479);
        assert_eq!(inst.value(i), "i-0af76a70a6d3864dd");
        assert!(tid.value(i) >= 713_479, "thread ids near the pid");
        assert!(
            !nc.is_null(i) && !worker.is_null(i),
            "row {i} nc_idx/worker_gid"
        );
        workers.insert(worker.value(i));
        let hw = matches!(
            name,
            "nc_exec_running" | "nc_model_switch" | "timestamp_sync_point"
        );
        assert_eq!(
            src.value(i),
            if hw { "neuron_hw" } else { "neuron_rt" },
            "{name}"
        );
        assert_eq!(
            !pcore.is_null(i),
            matches!(name, "nc_exec_running" | "nc_model_switch"),
            "{name}: pcore_idx from device_core_idx"
        );
        if !extra.is_null(i) {
            let j: serde_json::Value =
                serde_json::from_str(extra.value(i)).expect("extra_attributes_json is JSON");
            assert!(j.get("nc_idx").is_none(), "column attrs not repeated");
            if name == "nrt_execute" {
                assert_eq!(j["model_id"], "171450338541704");
                assert!(j["model_neff"]
                    .as_str()
                    .is_some_and(|s| s.contains("model.MODULE")));
            }
            if name == "nrt_dma_mem_alloc" {
                assert!(j.get("usage_type").is_some() && j.get("allocated_bytes").is_some());
            }
        }
    }
    assert_eq!(workers, BTreeSet::from([0, 1, 2, 3]));
    // An nrt_execute span contains its nc_exec_running spans (host clock after conversion).
    let span = |n: &str| -> Vec<(i64, i64)> {
        (0..ev.num_rows())
            .filter(|&i| names.value(i) == n)
            .map(|i| (start.value(i), end.value(i)))
            .collect()
    };
    let exec = span("nrt_execute");
    for (s, e) in span("nc_exec_running") {
        assert!(
            exec.iter().any(|&(a, b)| a <= s && e <= b),
            "nc_exec_running {s}..{e} inside an nrt_execute"
        );
    }

    // --- CpuUsage: 7200 samples + 600 averages; 0–100 %.
    let cpu = t.concat("CpuUsage").expect("CpuUsage");
    assert_eq!(cpu.num_rows(), 7200 + 600);
    assert_eq!(rep.cpu_out_of_range, 0);
    let util = col::<Float32Array>(&cpu, "util_percent");
    let cid = col::<StringArray>(&cpu, "cpu_id");
    let cts = col::<Int64Array>(&cpu, "timestamp");
    let mut ids = BTreeSet::new();
    let mut group: Vec<f32> = Vec::new();
    let mut max_util = 0f32;
    for i in 0..cpu.num_rows() {
        let u = util.value(i);
        assert!((0.0..=100.0).contains(&u), "util {u}");
        max_util = max_util.max(u);
        if cid.value(i) == "average" {
            assert_eq!(group.len(), 12, "12 CPUs per sample");
            let mean = group.iter().map(|&x| f64::from(x)).sum::<f64>() / 12.0;
            assert!((f64::from(u) - mean).abs() < 1e-4);
            assert_eq!(cts.value(i), cts.value(i - 1));
            group.clear();
        } else {
            ids.insert(cid.value(i).to_string());
            group.push(u);
        }
    }
    assert_eq!(ids.len(), 12);
    assert!(max_util > 0.0, "some CPU activity");

    // --- HostMemUsage: used ≤ RAM.
    let mem = t.concat("HostMemUsage").expect("HostMemUsage");
    assert_eq!(mem.num_rows(), 600);
    let used = col::<Int64Array>(&mem, "used_bytes");
    let pct = col::<Float32Array>(&mem, "used_percent");
    let mts = col::<Int64Array>(&mem, "timestamp");
    for i in 0..mem.num_rows() {
        assert!(used.value(i) > 0 && used.value(i) as u64 <= info.ram_bytes);
        let p = f64::from(pct.value(i));
        let want = used.value(i) as f64 / info.ram_bytes as f64 * 100.0;
        assert!((p - want).abs() < 1e-3 && p > 0.0 && p <= 100.0);
        if i > 0 {
            let step = mts.value(i) - mts.value(i - 1);
            assert!(
                (step - 1_000_000_000).abs() < 50_000_000,
                "1 s samples: {step}"
            );
        }
    }

    // --- SystemProfileMetadata
    let md = t.concat("SystemProfileMetadata").expect("metadata");
    assert_eq!(md.num_rows(), 1);
    assert_eq!(
        col::<StringArray>(&md, "first_ts_ns").value(0),
        "1773237643508494611"
    );
    assert_eq!(
        col::<StringArray>(&md, "last_ts_ns").value(0),
        "1773238243677100845"
    );
    assert!(col::<StringArray>(&md, "first_ts")
        .value(0)
        .starts_with("2026-03-11T"));
    assert_eq!(col::<Int64Array>(&md, "ntff_version").value(0), 6);
    // trn2.3xlarge: one Trainium2 chip, 96 GiB HBM over 8 physical NeuronCores [INF].
    assert_eq!(
        col::<Int64Array>(&md, "hbm_capacity_bytes").value(0),
        12 << 30
    );
    assert_eq!(system::hbm_capacity_per_core("inf2.xlarge"), Some(16 << 30));
    assert_eq!(system::hbm_capacity_per_core("inf1.xlarge"), None);

    // --- SystemProfileHbmUsage: one row per alloc/dealloc span.
    let hbm = t.concat("SystemProfileHbmUsage").expect("hbm usage");
    assert_eq!(hbm.num_rows(), 395 + 5);
    let hidx = col::<Int64Array>(&hbm, "hbm_idx");
    let tensors = col::<Int64Array>(&hbm, "tensors_bytes");
    let total = col::<Int64Array>(&hbm, "total_bytes");
    let last_hbm2 = (0..hbm.num_rows())
        .rev()
        .find(|&i| hidx.value(i) == 2)
        .expect("hbm 2 rows");
    // Worker 0's last usage_type_total_bytes for `tensor` on HBM 2.
    assert_eq!(tensors.value(last_hbm2), 402_657_360);
    for i in 0..hbm.num_rows() {
        assert!(total.value(i) >= tensors.value(i));
    }

    // --- DeviceProfileList: the NTFF is the same NEFF, but another capture (pairing.md §6).
    let dpl = t.concat("DeviceProfileList").expect("DeviceProfileList");
    assert_eq!(dpl.num_rows(), 1);
    assert_eq!(
        col::<StringArray>(&dpl, "device_profile_name").value(0),
        "profile_exec_2"
    );
    assert_eq!(
        col::<Int64Array>(&dpl, "model_id").value(0),
        171_450_338_541_704
    );
    assert_eq!(col::<Int64Array>(&dpl, "process_id").value(0), 713_479);
    let link = col::<StringArray>(&dpl, "nscope_link").value(0);
    assert!(
        link.starts_with("same NEFF, different capture") && link.contains("723577"),
        "{link}"
    );
    assert_eq!(rep.devices.len(), 1);
    assert_eq!(rep.devices[0].ntff_pid, Some(723_577));
    assert_eq!(rep.devices[0].cores, vec![4, 5]);
    assert_eq!(
        rep.first_ts_ns.map(|t| t >= info.start_ns as i64),
        Some(true)
    );
    let json = serde_json::to_string(&rep).expect("report serialises");
    assert!(json.contains("\"spans\":837"));
}

/// An in-memory capture made of the sample's four .pb files, with one of them replaced.
fn run_mem(files: &BTreeMap<String, Vec<u8>>) -> SystemReport {
    system_mem::run(DIR, files).0
}

#[test]
fn truncated_and_bit_flipped_never_panic() {
    let root = capture_root();
    let names = ["trace_info.pb", "ntrace.pb", "cpu_util.pb", "host_mem.pb"];
    let orig: BTreeMap<String, Vec<u8>> = names
        .iter()
        .map(|n| {
            let p = root.join(DIR).join(n);
            (
                format!("{DIR}/{n}"),
                std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())),
            )
        })
        .collect();
    // Frame boundaries of ntrace.pb, for the "everything before is kept" check.
    let nt = &orig[&format!("{DIR}/ntrace.pb")];
    let mut ends = Vec::new();
    let mut off = 0usize;
    while off + 4 <= nt.len() {
        let n = u32::from_le_bytes([nt[off], nt[off + 1], nt[off + 2], nt[off + 3]]) as usize;
        off += 4 + n;
        ends.push(off);
    }
    assert_eq!(off, nt.len());
    let mut runs = 0;
    for name in names {
        let key = format!("{DIR}/{name}");
        let len = orig[&key].len();
        let step = (len / 97).max(1);
        for cut in (0..len).step_by(step) {
            let mut files = orig.clone();
            files.get_mut(&key).expect("file").truncate(cut);
            let rep = run_mem(&files);
            runs += 1;
            if name == "ntrace.pb" {
                let whole = ends.iter().filter(|&&e| e <= cut).count() as u64;
                let f = rep
                    .files
                    .iter()
                    .find(|f| f.file == key)
                    .expect("ntrace counted");
                assert_eq!(f.records, whole, "cut at {cut}: records before kept");
                if !ends.contains(&cut) && cut > 0 {
                    assert!(
                        rep.problems
                            .iter()
                            .any(|p| p.file.as_deref() == Some(&key) && p.offset.is_some()),
                        "cut at {cut}: truncation reported with an offset"
                    );
                }
            }
        }
        for (k, pos) in (0..len).step_by(step).enumerate() {
            let mut files = orig.clone();
            let b = files.get_mut(&key).expect("file");
            b[pos] ^= 1 << (k % 8);
            if k % 3 == 0 {
                b[pos] = 0xff;
            }
            let _ = run_mem(&files);
            runs += 1;
        }
    }
    // Garbage and empty inputs.
    let mut files = orig.clone();
    for v in files.values_mut() {
        *v = (0..4096u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
    }
    let _ = run_mem(&files);
    let mut files = orig.clone();
    for v in files.values_mut() {
        v.clear();
    }
    let rep = run_mem(&files);
    assert!(rep.files.iter().all(|f| f.records <= 1));
    println!("{runs} corrupted variants processed without panic");
}

// ---------------------------------------------------------------------------------------------
// Kineto trace.json (framework-inputs.md §2): synthetic dirty fixtures written here.
// ---------------------------------------------------------------------------------------------

use neuronscope::system::kineto;

/// A Kineto-like object-form trace with every kind of dirt of §2.4, cut before `]`.
fn dirty_trace(base_first: bool) -> Vec<u8> {
    let mut v: Vec<u8> = Vec::new();
    let base = br#""baseTimeNanoseconds": 1700000000000000000"#;
    v.extend_from_slice(
        br#"{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "x{[\"]"}], "#,
    );
    if base_first {
        v.extend_from_slice(base);
        v.extend_from_slice(b", ");
    }
    v.extend_from_slice(b"\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
    // 1: X with exact fractional µs; raw newline + tab inside the name.
    v.extend_from_slice(
        b"{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\nline\t2\", \"pid\": 7, \"tid\": 8, \"ts\": 1.5004, \"dur\": 2.2506, \"args\": {\"External id\": 3}},\n",
    );
    // 2: invalid escape (Windows path) and invalid UTF-8.
    v.extend_from_slice(b"{\"ph\": \"i\", \"name\": \"C:\\path\\x \xff\xfe end\", \"pid\": 7, \"tid\": 8, \"ts\": 10, \"s\": \"t\"},\n");
    // 3/4: B/E pair on a string tid.
    v.extend_from_slice(br#"{"ph": "B", "name": "step", "pid": 7, "tid": "stream 1", "ts": 20},"#);
    v.extend_from_slice(
        br#"{"ph": "E", "pid": 7, "tid": "stream 1", "ts": 25.0, "args": {"out": 1}},"#,
    );
    // 5: counter, 6: thread name metadata, 7/8: flow start/end bound to the X slice.
    v.extend_from_slice(
        br#"{"ph": "C", "name": "mem", "pid": 7, "tid": 8, "ts": 30, "args": {"bytes": 42}},"#,
    );
    v.extend_from_slice(
        br#"{"ph": "M", "name": "thread_name", "pid": 7, "tid": 8, "args": {"name": "main"}},"#,
    );
    v.extend_from_slice(
        br#"{"ph": "s", "id": 5, "cat": "ac2g", "name": "ac2g", "pid": 7, "tid": 8, "ts": 2},"#,
    );
    v.extend_from_slice(br#"{"ph": "f", "id": 5, "cat": "ac2g", "name": "ac2g", "bp": "e", "pid": 7, "tid": 8, "ts": 3},"#);
    // 9: broken beyond repair (skipped), then a lone E (unmatched), then a good X.
    v.extend_from_slice(br#"{"ph": "X", "name": "bad", "ts": 1 2 3},"#);
    v.extend_from_slice(br#"{"ph": "E", "pid": 1, "tid": 1, "ts": 5},"#);
    v.extend_from_slice(br#"{"ph": "X", "name": "last", "pid": 7, "tid": 9, "ts": 40, "dur": 1}"#);
    if !base_first {
        v.extend_from_slice(b"], ");
        v.extend_from_slice(base);
        v.extend_from_slice(b"}");
    }
    v
}

fn run_kineto(bytes: &[u8]) -> (kineto::KinetoReport, Tables) {
    let mut t = Tables::default();
    let rep =
        kineto::read_trace_bytes(bytes, "trace.json", "i-test", &mut t).expect("sink never fails");
    (rep, t)
}

#[test]
fn kineto_dirty_trace() {
    for base_first in [true, false] {
        let (rep, t) = run_kineto(&dirty_trace(base_first));
        println!("{rep:#?}");
        assert_eq!(rep.base_time_ns, Some(1_700_000_000_000_000_000));
        assert_eq!(
            rep.truncated, base_first,
            "missing ] only in the cut variant"
        );
        assert_eq!(rep.skipped, 1);
        assert_eq!(rep.unmatched_end, 1);
        assert_eq!(rep.unmatched_begin, 0);
        assert_eq!(rep.flows_bound, 2);
        // X, i, B/E, C, last X.
        assert_eq!(rep.rows, 5);
        let ev = t.concat("SystemProfileEvents").expect("events");
        let names = col::<StringArray>(&ev, "name");
        let start = col::<Int64Array>(&ev, "start_ts");
        let end = col::<Int64Array>(&ev, "end_ts");
        let src = col::<StringArray>(&ev, "trace_event_source");
        let tid = col::<Int64Array>(&ev, "thread_id");
        let extra = col::<StringArray>(&ev, "extra_attributes_json");
        let base = 1_700_000_000_000_000_000i64;
        assert_eq!(names.value(0), "aten::mm\nline\t2");
        assert_eq!(start.value(0), base + 1_500, "1.5004 µs → 1 500 ns exactly");
        assert_eq!(
            end.value(0) - start.value(0),
            2_251,
            "2.2506 µs → 2 251 ns (rounded)"
        );
        let x: serde_json::Value = serde_json::from_str(extra.value(0)).expect("json");
        assert_eq!(x["External id"], 3);
        assert_eq!(x["thread_name"], "main");
        assert_eq!(x["cat"], "cpu_op");
        let flows = ev
            .column_by_name("flow_id")
            .expect("flow_id")
            .as_any()
            .downcast_ref::<arrow_array::ListArray>()
            .expect("list");
        assert_eq!(flows.value(0).len(), 1, "s and f share one flow id");
        assert_eq!(names.value(1), "C:\\path\\x \u{fffd}\u{fffd} end");
        assert_eq!(start.value(1), end.value(1));
        assert_eq!(names.value(2), "step");
        assert_eq!(end.value(2) - start.value(2), 5_000);
        let e2: serde_json::Value = serde_json::from_str(extra.value(2)).expect("json");
        assert_eq!(e2["tid_text"], "stream 1");
        assert_eq!(e2["out"], 1, "E args merged into the B row");
        assert!(tid.value(2) >= 0);
        assert_eq!(names.value(3), "mem");
        assert_eq!(names.value(4), "last");
        for i in 0..ev.num_rows() {
            assert_eq!(src.value(i), "framework");
            assert!(end.value(i) >= start.value(i));
        }
    }
}

#[test]
fn kineto_array_form_and_no_panic() {
    // Array form, absolute µs, no base, no closing bracket.
    let a = br#"[{"ph":"X","name":"a","pid":1,"tid":1,"ts":1700000000000000.25,"dur":1},{"ph":"i","name":"b","pid":1,"tid":1,"ts":1700000000000001"#;
    let (rep, t) = run_kineto(a);
    assert_eq!(rep.rows, 1, "the cut second event is not a row");
    assert!(rep.truncated);
    let ev = t.concat("SystemProfileEvents").expect("events");
    assert_eq!(
        col::<Int64Array>(&ev, "start_ts").value(0),
        1_700_000_000_000_000_250
    );
    assert_eq!(kineto::us_text_to_ns("-0.0015"), Some(-2));
    assert_eq!(kineto::us_text_to_ns("1e3"), Some(1_000_000));
    assert_eq!(kineto::us_text_to_ns("x"), None);
    // Every truncation and many bit flips of the dirty fixture: no panic, rows never grow.
    let full = dirty_trace(false);
    let (all, _) = run_kineto(&full);
    for cut in 0..full.len() {
        let (r, _) = run_kineto(&full[..cut]);
        assert!(r.rows <= all.rows + 1, "cut {cut}");
    }
    for pos in 0..full.len() {
        let mut b = full.clone();
        b[pos] ^= 0x5a;
        let _ = run_kineto(&b);
    }
    let (r, _) = run_kineto(b"");
    assert_eq!(r.rows, 0);
    let (r, _) = run_kineto(b"\x00\xff{{{{[[[\"");
    assert_eq!(r.rows, 0);
}
