//! The record mix of the synthetic benchmark capture (`synth::large_capture`,
//! `ntff::write::NtffSpec::v6_mix`) against the 13 real v6 samples (docs/formats.md "Synthetic
//! captures"). Both go through the normal decoder (`ntff::decode`); the figures are measured
//! here, not copied. `real_v6_mix` prints the real figures the docs quote (`--nocapture`).

mod common;
use common::samples;

use std::collections::BTreeMap;
use std::path::PathBuf;

use arrow_array::{Array, Int64Array, RecordBatch, StringArray};
use neuronscope::ntff::{self, DecodeContext, DecodeReport};
use neuronscope::source::{ByteSource, FileSource, SliceSource};
use neuronscope::tables::Tables;

/// The v6 NTFFs of the samples, from INDEX.tsv.
fn v6_ntffs() -> Vec<PathBuf> {
    let root = samples();
    let idx = std::fs::read_to_string(root.join("INDEX.tsv")).expect("read INDEX.tsv");
    let v: Vec<PathBuf> = idx
        .lines()
        .skip(1)
        .filter_map(|l| {
            let c: Vec<&str> = l.split('\t').collect();
            (c.len() > 5 && c[2] == "NTFF" && c[5] == "ntff_v6").then(|| root.join(c[0]).join(c[1]))
        })
        .collect();
    assert_eq!(v.len(), 13, "the 13 v6 samples");
    v
}

fn col<'a, T: 'static>(b: &'a RecordBatch, name: &str) -> &'a T {
    b.column_by_name(name)
        .unwrap_or_else(|| panic!("column {name}"))
        .as_any()
        .downcast_ref::<T>()
        .unwrap_or_else(|| panic!("type of {name}"))
}

fn median(v: &mut [i64]) -> i64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

/// What one core slot (0 = `sg00`, the busy core; 1 = `sg01`, idle in every sample) of one or
/// more captures holds inside the execution window.
#[derive(Debug, Default, Clone)]
struct Mix {
    files: u64,
    /// Instructions per engine (PE, ACT, POOL, DVE, SP).
    instructions: [u64; 5],
    /// Per engine name (`Instruction.engine`): opcode → rows.
    opcodes: BTreeMap<String, BTreeMap<String, u64>>,
    /// Per engine name: durations (ns) and gaps to the engine's next start (ns).
    durations: BTreeMap<String, Vec<i64>>,
    /// Per (engine name, opcode): durations (ns).
    op_durations: BTreeMap<(String, String), Vec<i64>>,
    gaps: BTreeMap<String, Vec<i64>>,
    semaphore_updates: u64,
    /// All event records in the window (listed or not).
    events: u64,
    dma_packets: u64,
    /// DMA buffer records (all phases, whole buffer).
    dma_records: u64,
    /// DmaPacket rows per `queue_type`, and their bytes and durations.
    dma_queue_types: BTreeMap<String, u64>,
    dma_bytes: Vec<i64>,
    throttles: u64,
    cores: u64,
}

impl Mix {
    fn total(&self) -> u64 {
        self.instructions.iter().sum()
    }
    fn per_ins(&self, n: u64) -> f64 {
        n as f64 / self.total().max(1) as f64
    }
    fn share(&self, e: usize) -> f64 {
        self.per_ins(self.instructions[e])
    }
    fn opcode_share(&self, engine: &str, op: &str) -> f64 {
        let m = &self.opcodes[engine];
        let t: u64 = m.values().sum();
        m.get(op).copied().unwrap_or(0) as f64 / t.max(1) as f64
    }
    fn queue_share(&self, ty: &str) -> f64 {
        self.dma_queue_types.get(ty).copied().unwrap_or(0) as f64 / self.dma_packets.max(1) as f64
    }
    fn add(&mut self, o: &Mix) {
        self.files += o.files;
        for e in 0..5 {
            self.instructions[e] += o.instructions[e];
        }
        for (k, m) in &o.opcodes {
            let d = self.opcodes.entry(k.clone()).or_default();
            for (op, n) in m {
                *d.entry(op.clone()).or_default() += n;
            }
        }
        for (k, v) in &o.durations {
            self.durations.entry(k.clone()).or_default().extend(v);
        }
        for (k, v) in &o.op_durations {
            self.op_durations.entry(k.clone()).or_default().extend(v);
        }
        for (k, v) in &o.gaps {
            self.gaps.entry(k.clone()).or_default().extend(v);
        }
        self.semaphore_updates += o.semaphore_updates;
        self.events += o.events;
        self.dma_packets += o.dma_packets;
        self.dma_records += o.dma_records;
        for (k, n) in &o.dma_queue_types {
            *self.dma_queue_types.entry(k.clone()).or_default() += n;
        }
        self.dma_bytes.extend(&o.dma_bytes);
        self.throttles += o.throttles;
        self.cores = self.cores.max(o.cores);
    }
}

/// Decodes one NTFF and returns the mix of its core slots 0 and 1.
fn mix_of<S: ByteSource + ?Sized>(src: &S, name: &str) -> (Vec<Mix>, DecodeReport) {
    let ctx = DecodeContext {
        file_name: name.into(),
        ..Default::default()
    };
    let mut t = Tables::default();
    let r = ntff::decode(src, &ctx, &mut t, &mut |_, _| {})
        .unwrap_or_else(|e| panic!("decode {name}: {e}"));
    let info = ntff::read_info(src).unwrap().unwrap();
    let mut out = vec![Mix::default(); 2];
    for (ci, m) in out.iter_mut().enumerate() {
        let c = &r.cores[ci];
        m.files = 1;
        m.cores = r.cores.len() as u64;
        m.instructions = c.instructions_per_engine;
        m.semaphore_updates = c.semaphore_updates;
        m.events = c.event_count;
        m.dma_packets = c.dma.packets;
        m.throttles = c.dma.throttles;
        m.dma_records = info.subgraphs[ci]
            .buffers
            .iter()
            .filter(|b| b.trace_type == 4)
            .map(|b| b.size / 16)
            .sum();
    }
    // Per engine: (start, end) to measure gaps after sorting by start.
    let mut spans: BTreeMap<(i64, String), Vec<(i64, i64)>> = BTreeMap::new();
    for b in t.get("Instruction").unwrap_or(&[]) {
        // Strings are dictionary columns: decode them for the StringArray reads below.
        let b = &neuronscope::tables::plain_batch(b);
        let core = col::<Int64Array>(b, "pcore_idx");
        let eng = col::<StringArray>(b, "engine");
        let op = col::<StringArray>(b, "opcode");
        let start = col::<Int64Array>(b, "start_ts");
        let dur = col::<Int64Array>(b, "duration_ns");
        for i in 0..b.num_rows() {
            let (ci, e) = (core.value(i), eng.value(i).to_string());
            let m = &mut out[ci as usize];
            *m.opcodes
                .entry(e.clone())
                .or_default()
                .entry(op.value(i).to_string())
                .or_default() += 1;
            m.durations.entry(e.clone()).or_default().push(dur.value(i));
            m.op_durations
                .entry((e.clone(), op.value(i).to_string()))
                .or_default()
                .push(dur.value(i));
            spans
                .entry((ci, e))
                .or_default()
                .push((start.value(i), start.value(i) + dur.value(i)));
        }
    }
    for ((ci, e), mut v) in spans {
        v.sort_unstable();
        let g = out[ci as usize].gaps.entry(e).or_default();
        g.extend(v.windows(2).map(|w| w[1].0 - w[0].1));
    }
    for b in t.get("DmaPacket").unwrap_or(&[]) {
        // Strings are dictionary columns: decode them for the StringArray reads below.
        let b = &neuronscope::tables::plain_batch(b);
        let core = col::<Int64Array>(b, "pcore_idx");
        let ty = col::<StringArray>(b, "queue_type");
        let bytes = col::<Int64Array>(b, "transfer_bytes");
        for i in 0..b.num_rows() {
            let m = &mut out[core.value(i) as usize];
            *m.dma_queue_types
                .entry(ty.value(i).to_string())
                .or_default() += 1;
            m.dma_bytes.push(bytes.value(i));
        }
    }
    (out, r)
}

/// The pooled mix of the 13 v6 samples per core slot, and each file's (dma/ins, sem/ins) over
/// both cores.
fn real_mix() -> (Vec<Mix>, Vec<(String, f64, f64)>) {
    let mut pooled = vec![Mix::default(); 2];
    let mut per_file = Vec::new();
    for p in v6_ntffs() {
        let src = FileSource::open(&p).unwrap();
        let (m, _) = mix_of(&src, &p.display().to_string());
        let ins = (m[0].total() + m[1].total()) as f64;
        per_file.push((
            p.file_name().unwrap().to_string_lossy().into_owned(),
            (m[0].dma_packets + m[1].dma_packets) as f64 / ins,
            (m[0].semaphore_updates + m[1].semaphore_updates) as f64 / ins,
        ));
        pooled[0].add(&m[0]);
        pooled[1].add(&m[1]);
    }
    (pooled, per_file)
}

/// The synthetic benchmark capture of ~`bytes` bytes: its NTFF bytes and mix.
fn synthetic_mix(bytes: u64) -> (u64, Vec<Mix>, DecodeReport) {
    let files = neuronscope::synth::large_capture(bytes).unwrap();
    let (_, ntff) = files
        .iter()
        .find(|(n, _)| n.ends_with(".ntff"))
        .expect("an NTFF");
    let (m, r) = mix_of(&SliceSource(ntff), "synthetic.ntff");
    (ntff.len() as u64, m, r)
}

const ENGINES: [&str; 5] = ["PE", "ACT", "POOL", "DVE", "SP"];

fn print_mix(label: &str, m: &Mix) {
    println!(
        "{label}: {} files, {} instructions, cores {}",
        m.files,
        m.total(),
        m.cores
    );
    let shares: Vec<String> = (0..5)
        .map(|e| format!("{} {:.3}", ENGINES[e], m.share(e)))
        .collect();
    println!("  engine shares: {}", shares.join(", "));
    println!(
        "  per instruction: semaphore updates {:.3}, other events {:.4}, DMA packets {:.3}, throttle records {:.5}",
        m.per_ins(m.semaphore_updates),
        m.per_ins(m.events - m.semaphore_updates),
        m.per_ins(m.dma_packets),
        m.per_ins(m.throttles)
    );
    println!(
        "  DMA buffer records per packet {:.3}; packets by queue_type {:?}; bytes p50 {}, mean {:.0}, 4-byte share {:.3}",
        m.dma_records as f64 / m.dma_packets.max(1) as f64,
        m.dma_queue_types
            .iter()
            .map(|(k, v)| format!("{k} {:.3}", *v as f64 / m.dma_packets.max(1) as f64))
            .collect::<Vec<_>>(),
        median(&mut m.dma_bytes.clone()),
        m.dma_bytes.iter().sum::<i64>() as f64 / m.dma_bytes.len().max(1) as f64,
        m.dma_bytes.iter().filter(|&&b| b == 4).count() as f64 / m.dma_bytes.len().max(1) as f64
    );
    for (e, ops) in &m.opcodes {
        let t: u64 = ops.values().sum();
        let mut v: Vec<(&String, &u64)> = ops.iter().collect();
        v.sort_by(|a, b| b.1.cmp(a.1));
        let top: Vec<String> = v
            .iter()
            .take(8)
            .map(|(op, n)| format!("{op} {:.3}", **n as f64 / t as f64))
            .collect();
        println!(
            "  {e}: duration p50 {} ns, gap p50 {} ns; {}",
            median(&mut m.durations[e].clone()),
            median(&mut m.gaps[e].clone()),
            top.join(", ")
        );
    }
}

/// The measured real mix (the figures docs/formats.md "Synthetic captures" quotes) and the
/// sanity facts the synthetic shape rests on.
#[test]
fn real_v6_mix() {
    let (real, per_file) = real_mix();
    print_mix("real sg00", &real[0]);
    let by_op: Vec<String> = real[0]
        .op_durations
        .iter()
        .filter(|(_, v)| v.len() > 50)
        .map(|((e, op), v)| format!("{e} {op} {}", median(&mut v.clone())))
        .collect();
    println!(
        "  duration p50 (ns) per opcode with > 50 rows: {}",
        by_op.join(", ")
    );
    print_mix("real sg01", &real[1]);
    for (f, d, s) in &per_file {
        println!("  {f}: DMA packets/instruction {d:.2}, semaphore updates/instruction {s:.2}");
    }
    // Every v6 sample is LNC=2 with an idle second core.
    assert_eq!(real[0].cores, 2);
    assert!(real[1].total() < 13 * 160, "{}", real[1].total());
    // Three DMA records (phases 1, 5, 6) per packet (ntff.md §4.4).
    let rpp = real[0].dma_records as f64 / real[0].dma_packets as f64;
    assert!((rpp - 3.0).abs() < 0.01, "{rpp}");
}

/// The synthetic benchmark capture has the record mix of the real v6 samples within the bands
/// docs/formats.md "Synthetic captures" states.
#[test]
fn synthetic_mix_matches_the_samples() {
    let (real, per_file) = real_mix();
    let (bytes, syn, report) = synthetic_mix(5_000_000);
    print_mix("synthetic sg00", &syn[0]);
    print_mix("synthetic sg01", &syn[1]);
    assert!((5_000_000..5_300_000).contains(&bytes), "{bytes} bytes");
    assert!(report.problems.is_empty(), "{:#?}", report.problems);
    assert_eq!(syn[0].cores, 2, "LNC=2: two physical cores");
    let (r, s) = (&real[0], &syn[0]);

    // Densities per instruction: within ±10 % of the pooled real figure.
    for (what, rv, sv) in [
        (
            "DMA packets",
            r.per_ins(r.dma_packets),
            s.per_ins(s.dma_packets),
        ),
        (
            "semaphore updates",
            r.per_ins(r.semaphore_updates),
            s.per_ins(s.semaphore_updates),
        ),
    ] {
        assert!(
            (sv / rv - 1.0).abs() <= 0.10,
            "{what} per instruction: synthetic {sv:.3}, real {rv:.3}"
        );
    }
    // And inside the range of the individual files (both cores).
    let (lo, hi) = per_file
        .iter()
        .fold((f64::MAX, 0f64), |(a, b), f| (a.min(f.1), b.max(f.1)));
    let d = (s.dma_packets + syn[1].dma_packets) as f64 / (s.total() + syn[1].total()) as f64;
    assert!(
        lo <= d && d <= hi,
        "DMA/instruction {d} outside [{lo}, {hi}]"
    );
    // Throttle records: within a factor 2 of the real density (24 records in 13 files).
    let (rt, st) = (r.per_ins(r.throttles), s.per_ins(s.throttles));
    assert!(
        st >= rt / 2.0 && st <= rt * 2.0,
        "throttles/ins {st} vs {rt}"
    );
    // Non-listed event records: as rare as in the samples (< 0.01 per instruction).
    assert!(s.per_ins(s.events - s.semaphore_updates) < 0.01);
    // Three DMA records per packet.
    let rpp = s.dma_records as f64 / s.dma_packets as f64;
    assert!((rpp - 3.0).abs() < 0.01, "{rpp}");

    // Engine shares: within ±0.02 of the real share.
    for (e, name) in ENGINES.iter().enumerate() {
        assert!(
            (s.share(e) - r.share(e)).abs() <= 0.02,
            "{name} share: synthetic {:.3}, real {:.3}",
            s.share(e),
            r.share(e)
        );
    }
    // Opcode mix per engine: every opcode with ≥ 5 % of an engine's real rows within ±0.05.
    for (engine, ops) in &r.opcodes {
        for op in ops.keys() {
            let rv = r.opcode_share(engine, op);
            if rv >= 0.05 {
                let sv = s.opcode_share(engine, op);
                assert!(
                    (sv - rv).abs() <= 0.05,
                    "{engine} {op}: synthetic {sv:.3}, real {rv:.3}"
                );
            }
        }
    }
    // Median duration per engine: within a factor 1.5; median gap within ±40 ns.
    for (engine, d) in &r.durations {
        let (rd, sd) = (
            median(&mut d.clone()) as f64,
            median(&mut s.durations[engine].clone()) as f64,
        );
        assert!(
            sd >= rd / 1.5 && sd <= rd * 1.5,
            "{engine} duration p50: synthetic {sd}, real {rd}"
        );
        let (rg, sg) = (
            median(&mut r.gaps[engine].clone()),
            median(&mut s.gaps[engine].clone()),
        );
        assert!(
            (rg - sg).abs() <= 40,
            "{engine} gap p50: synthetic {sg}, real {rg}"
        );
    }
    // Packet sizes: the share of 4-byte completion writes within ±0.08, the mean size within
    // ±25 %.
    let tiny = |m: &Mix| {
        m.dma_bytes.iter().filter(|&&b| b == 4).count() as f64 / m.dma_bytes.len().max(1) as f64
    };
    let mean = |m: &Mix| m.dma_bytes.iter().sum::<i64>() as f64 / m.dma_bytes.len().max(1) as f64;
    assert!(
        (tiny(s) - tiny(r)).abs() <= 0.08,
        "4 B share {} vs {}",
        tiny(s),
        tiny(r)
    );
    assert!(
        (mean(s) / mean(r) - 1.0).abs() <= 0.25,
        "mean bytes {} vs {}",
        mean(s),
        mean(r)
    );
    // DMA packets per queue type: within ±0.05 of the real share.
    for ty in r.dma_queue_types.keys().chain(s.dma_queue_types.keys()) {
        let (rv, sv) = (r.queue_share(ty), s.queue_share(ty));
        assert!(
            (rv - sv).abs() <= 0.05,
            "queue_type {ty}: synthetic {sv:.3}, real {rv:.3}"
        );
    }

    // The idle second core: instructions per engine, semaphore updates and DMA packets inside
    // the range of the 13 samples' `sg01`.
    let (ri, si) = (&real[1], &syn[1]);
    let files = ri.files as f64;
    for (e, name) in ENGINES.iter().enumerate() {
        let mean = ri.instructions[e] as f64 / files;
        let v = si.instructions[e] as f64;
        assert!(
            (v - mean).abs() <= 0.15 * mean,
            "sg01 {name}: {v} vs real mean {mean}"
        );
    }
    for (what, rv, sv) in [
        (
            "semaphore updates",
            ri.semaphore_updates as f64 / files,
            si.semaphore_updates as f64,
        ),
        (
            "DMA packets",
            ri.dma_packets as f64 / files,
            si.dma_packets as f64,
        ),
    ] {
        assert!(
            (sv - rv).abs() <= 0.15 * rv,
            "sg01 {what}: {sv} vs real mean {rv}"
        );
    }
}

/// `synth --shape dense`: the instruction-dense benchmark shape (the first benchmarks' mix,
/// issues 9 and 10): both cores busy, ≈ 0.055 DMA packets and ≈ 0.011 semaphore updates per
/// instruction, against 4.3 and 1.43 for the v6 mix; decodes without a problem.
#[test]
fn dense_shape_is_instruction_dense() {
    let dir = std::env::temp_dir().join(format!("ns-dense-shape-{}", std::process::id()));
    let paths =
        neuronscope::synth::write_large_capture(&dir, 4_000_000, neuronscope::synth::Shape::Dense)
            .unwrap();
    let ntff = paths
        .iter()
        .find(|p| p.extension().is_some_and(|e| e == "ntff"))
        .expect("an NTFF");
    let bytes = std::fs::metadata(ntff).unwrap().len();
    let (m, report) = mix_of(&FileSource::open(ntff).unwrap(), "dense.ntff");
    std::fs::remove_dir_all(&dir).unwrap();
    print_mix("dense sg00", &m[0]);
    print_mix("dense sg01", &m[1]);
    assert!((4_000_000..4_200_000).contains(&bytes), "{bytes} bytes");
    assert!(report.problems.is_empty(), "{:#?}", report.problems);
    let ins = (m[0].total() + m[1].total()) as f64;
    for (core, c) in m.iter().enumerate() {
        let share = c.total() as f64 / ins;
        assert!((0.4..0.6).contains(&share), "core {core} share {share:.3}");
    }
    let dma = (m[0].dma_packets + m[1].dma_packets) as f64 / ins;
    let sem = (m[0].semaphore_updates + m[1].semaphore_updates) as f64 / ins;
    assert!(
        (0.04..0.07).contains(&dma),
        "DMA packets per instruction {dma:.4}"
    );
    assert!(
        (0.005..0.02).contains(&sem),
        "semaphore updates per instruction {sem:.4}"
    );
    // Instruction records (32 B a pair) are most of the file.
    assert!(
        ins * 32.0 > 0.8 * bytes as f64,
        "{ins} instructions in {bytes} B"
    );
}
