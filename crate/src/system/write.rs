//! Our own writers for synthetic system captures (tests, the benchmark, the page's browser tests):
//! `trace_info.pb` and `ntrace.pb` (system-profile.md §2–§5, encoded with the same prost messages
//! the decoder reads) and a Kineto `trace.json` (framework-inputs.md §2.2) whose events sit on the
//! same clock as the runtime events, so framework and runtime rows line up on the System timeline.
//!
//! The runtime trace holds `executions` steps, each an `nrt_execute` span on the main thread with a
//! `kbl_exec_pre` inside and an `nc_exec_running` hardware span on NeuronCore 0, 10 ms apart. The
//! Kineto trace holds, per step, a `ProfilerStep#k` annotation covering that step's `nrt_execute`,
//! nested `aten::` ops, a `privateuse1_runtime` launch on the main thread and a
//! `privateuse1_driver` slice on a stream thread linked by an `ac2g` flow, a `B`/`E` python
//! function, an instant and a counter; `M` thread names come last (Kineto's order). Steps repeat
//! (continuing in time) until the file reaches the requested size.

use std::io::Write;

use prost::Message;

use crate::proto::{
    AttributePb, NameEntryPb, NameTablePb, NtraceRecordPb, TraceFilePb, TraceInfoPb,
};

/// A synthetic system capture's identity and clock.
#[derive(Debug, Clone)]
pub struct SystemSpec {
    /// EC2-like instance id (`i-` + hex), also the capture directory's prefix.
    pub instance_id: String,
    /// Process id (capture directory `_pid_<pid>`, main thread id).
    pub pid: u64,
    /// Capture start, Unix ns.
    pub start_ns: u64,
    /// Runtime executions (steps) in `ntrace.pb`.
    pub executions: u64,
}

impl Default for SystemSpec {
    fn default() -> Self {
        SystemSpec {
            instance_id: "i-0123456789abcdef0".into(),
            pid: 4242,
            start_ns: 1_770_000_000_000_000_000,
            executions: 3,
        }
    }
}

/// Step period, ns (10 ms).
pub const STEP_NS: u64 = 10_000_000;
/// Offset of step 0's `nrt_execute` after the capture start, ns.
const FIRST_EXEC_NS: u64 = 2_000_000;
/// `nrt_execute` duration, ns.
const EXEC_NS: u64 = 6_000_000;
/// Event type ids of our name table (system-profile.md §4.1 numbering).
const T_EXECUTE: u64 = 3;
const T_NC_EXEC: u64 = 7;
const T_KBL_PRE: u64 = 17;
/// One synthetic span: (event type, thread, start ns, end ns, start attributes).
type Span<'a> = (u64, u64, u64, u64, Vec<(&'a str, String)>);
/// The model id of the synthetic NEFF.
const MODEL_ID: u64 = 4_242_000_001;

impl SystemSpec {
    /// Directory name `<instance>_pid_<pid>`.
    pub fn dir(&self) -> String {
        format!("{}_pid_{}", self.instance_id, self.pid)
    }

    /// Host-clock range of execution `k`'s `nrt_execute` span, Unix ns.
    pub fn execute_range(&self, k: u64) -> (u64, u64) {
        let s = self.start_ns + FIRST_EXEC_NS + k * STEP_NS;
        (s, s + EXEC_NS)
    }

    /// Capture end, Unix ns.
    pub fn end_ns(&self) -> u64 {
        self.start_ns + FIRST_EXEC_NS + self.executions.max(1) * STEP_NS
    }

    /// `trace_info.pb` for an `ntrace.pb` of `records` records.
    pub fn trace_info(&self, records: u64) -> Vec<u8> {
        let table = |name: &str, entries: &[(u64, &str)]| NameTablePb {
            name: name.as_bytes().to_vec(),
            entries: entries
                .iter()
                .map(|&(id, t)| NameEntryPb {
                    id,
                    text: t.as_bytes().to_vec(),
                })
                .collect(),
        };
        TraceInfoPb {
            version: 2,
            pid: self.pid,
            instance_id: self.instance_id.as_bytes().to_vec(),
            ntrace_file: Some(TraceFilePb {
                path: format!("./{}/ntrace.pb", self.dir()).into_bytes(),
                kind: 1,
                count: records,
            }),
            name_tables: vec![
                table(
                    "ntrace_inspect_type",
                    &[
                        (0, "generic"),
                        (T_EXECUTE, "nrt_execute"),
                        (T_NC_EXEC, "nc_exec_running"),
                        (T_KBL_PRE, "kbl_exec_pre"),
                        (T_SYNC, "timestamp_sync_point"),
                        (T_COPYIN, "dmem_buf_copyin"),
                        (T_ALLOC, "nrt_dma_mem_alloc"),
                        (T_DEALLOC, "nrt_dma_mem_dealloc"),
                    ],
                ),
                table("system_trace", &[(MODEL_ID, "synthetic_model.neff")]),
            ],
            start_ns: self.start_ns,
            end_ns: self.end_ns(),
            ntrace_count: records,
            instance_type: b"trn2.3xlarge".to_vec(),
            host_name: b"synthetic-host".to_vec(),
            ..Default::default()
        }
        .encode_to_vec()
    }

    /// `ntrace.pb` (u32-LE framed records) and its record count.
    pub fn ntrace(&self) -> (Vec<u8>, u64) {
        let mut out = Vec::new();
        let mut n = 0u64;
        let mut seq = 0u64;
        let mut put = |out: &mut Vec<u8>, r: NtraceRecordPb| {
            let b = r.encode_to_vec();
            out.extend_from_slice(&(b.len() as u32).to_le_bytes());
            out.extend_from_slice(&b);
            n += 1;
        };
        let attrs = |kv: &[(&str, String)]| -> Vec<AttributePb> {
            kv.iter()
                .map(|(k, v)| AttributePb {
                    key: k.as_bytes().to_vec(),
                    value: v.as_bytes().to_vec(),
                })
                .collect()
        };
        for k in 0..self.executions {
            let (s, e) = self.execute_range(k);
            let exec_id = (k + 1).to_string();
            let common = [
                ("nc_idx", "0".to_string()),
                ("worker_gid", "0".to_string()),
                ("model_id", MODEL_ID.to_string()),
            ];
            // (type, thread, start, end, attributes)
            let spans: [Span; 3] = [
                (T_EXECUTE, self.pid, s, e, common.to_vec()),
                (
                    T_KBL_PRE,
                    self.pid,
                    s + 100_000,
                    s + 400_000,
                    [common.as_slice(), &[("exec_id", exec_id.clone())]].concat(),
                ),
                (
                    T_NC_EXEC,
                    self.pid + 1,
                    s + 500_000,
                    e - 500_000,
                    vec![
                        ("nc_idx", "0".to_string()),
                        ("worker_gid", "0".to_string()),
                        ("device_core_idx", "0".to_string()),
                        ("exec_id", exec_id.clone()),
                    ],
                ),
            ];
            for (ty, thread, a, b, kv) in spans {
                seq += 1;
                put(
                    &mut out,
                    NtraceRecordPb {
                        timestamp_ns: a,
                        event_type: ty,
                        thread_id: thread,
                        id: seq,
                        attributes: attrs(&kv),
                        phase: 1,
                        tracking_id: 0,
                    },
                );
                put(
                    &mut out,
                    NtraceRecordPb {
                        timestamp_ns: b,
                        event_type: ty,
                        thread_id: thread,
                        id: seq + 1_000_000,
                        attributes: Vec::new(),
                        phase: 2,
                        tracking_id: seq,
                    },
                );
            }
        }
        (out, n)
    }
}

/// Event type ids of the runtime mix (system-profile.md §4.1 numbering).
const T_SYNC: u64 = 25;
const T_COPYIN: u64 = 30;
const T_ALLOC: u64 = 34;
const T_DEALLOC: u64 = 35;
/// Worker threads of the runtime mix, each with [`MIX_PAIRS`] copy-in/alloc span pairs a step.
const MIX_WORKERS: u64 = 4;
const MIX_PAIRS: u64 = 10;
/// HBM usage types of the mix's allocations (§8).
const MIX_USAGE: [&str; 4] = ["tensor", "io", "dma rings io", "scratchpad"];

/// Counts of a written runtime-mix `ntrace.pb`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NtraceStats {
    /// Bytes written.
    pub bytes: u64,
    /// Records written.
    pub records: u64,
    /// Steps (executions) written.
    pub steps: u64,
}

impl SystemSpec {
    /// Writes an `ntrace.pb` shaped like the sample's (KevGomes `ntrace.pb`: system-profile.md
    /// §5): per step an `nrt_execute` span on the main thread that stays open while its step's
    /// other records are written (the sample's stops come up to 379 records after their starts),
    /// a `timestamp_sync_point` instant, [`MIX_WORKERS`] worker threads whose
    /// `dmem_buf_copyin` and `nrt_dma_mem_alloc` / `nrt_dma_mem_dealloc` spans interleave in time
    /// (host records monotonic per thread), and an `nc_exec_running` hardware span whose records
    /// come after host records up to 1 ms later (hardware time written late, as in the sample).
    /// Steps repeat until at least `min_bytes` are written (at least `self.executions`).
    /// Streamed: memory is one step. Errors: the writer's.
    pub fn write_ntrace_mix(
        &self,
        min_bytes: u64,
        w: &mut dyn Write,
    ) -> std::io::Result<NtraceStats> {
        let mut st = NtraceStats::default();
        let mut seq = 0u64;
        let nc_base = 257_063_000_000_000u64;
        let attrs = |kv: &[(&str, String)]| -> Vec<AttributePb> {
            kv.iter()
                .map(|(k, v)| AttributePb {
                    key: k.as_bytes().to_vec(),
                    value: v.as_bytes().to_vec(),
                })
                .collect()
        };
        let mut totals = [0u64; MIX_USAGE.len()];
        let mut k = 0u64;
        while k < self.executions.max(1) || st.bytes < min_bytes {
            let (s, e) = self.execute_range(k);
            let exec_id = (k + 1).to_string();
            let nc0 = nc_base + k * STEP_NS;
            // (timestamp, record) of the step's host records, sorted by time before writing.
            let mut recs: Vec<(u64, NtraceRecordPb)> = Vec::new();
            let mut span = |recs: &mut Vec<(u64, NtraceRecordPb)>,
                            ty: u64,
                            thread: u64,
                            a: u64,
                            b: u64,
                            start: Vec<(&str, String)>,
                            stop: Vec<(&str, String)>| {
                seq += 1;
                let id = seq;
                recs.push((
                    a,
                    NtraceRecordPb {
                        timestamp_ns: a,
                        event_type: ty,
                        thread_id: thread,
                        id,
                        attributes: attrs(&start),
                        phase: 1,
                        tracking_id: 0,
                    },
                ));
                seq += 1;
                recs.push((
                    b,
                    NtraceRecordPb {
                        timestamp_ns: b,
                        event_type: ty,
                        thread_id: thread,
                        id: seq,
                        attributes: attrs(&stop),
                        phase: 2,
                        tracking_id: id,
                    },
                ));
            };
            for wk in 0..MIX_WORKERS {
                let thread = self.pid + 350 + wk;
                let wg = wk.to_string();
                let step = (EXEC_NS - 1_000_000) / MIX_PAIRS;
                for j in 0..MIX_PAIRS {
                    let t = s + 200_000 + j * step + wk * 7_000;
                    let u = ((j + wk) % MIX_USAGE.len() as u64) as usize;
                    let bytes = 4096 * (1 + (j * 37 + wk * 11 + k) % 64);
                    span(
                        &mut recs,
                        T_COPYIN,
                        thread,
                        t,
                        t + step / 3,
                        vec![
                            ("nc_idx", wg.clone()),
                            ("worker_gid", wg.clone()),
                            ("size", bytes.to_string()),
                            ("offset", "0".to_string()),
                        ],
                        vec![("return_code", "0".to_string())],
                    );
                    let dealloc = j % 2 == 1;
                    let cur = totals.get_mut(u).map_or(0, |x| {
                        *x = if dealloc {
                            x.saturating_sub(bytes)
                        } else {
                            *x + bytes
                        };
                        *x
                    });
                    let (ty, amount) = if dealloc {
                        (T_DEALLOC, "freed_bytes")
                    } else {
                        (T_ALLOC, "allocated_bytes")
                    };
                    let a = t + step / 2;
                    span(
                        &mut recs,
                        ty,
                        thread,
                        a,
                        a + step / 4,
                        vec![
                            ("nc_idx", wg.clone()),
                            ("worker_gid", wg.clone()),
                            ("hbm_idx", (wk / 2).to_string()),
                            (
                                "usage_type",
                                MIX_USAGE.get(u).copied().unwrap_or("").to_string(),
                            ),
                            ("mem_type", "device".to_string()),
                            (
                                "mem_handle",
                                format!(
                                    "0x{:x}",
                                    0x7f00_0000_0000
                                        + ((k * MIX_WORKERS + wk) * MIX_PAIRS + j) * 64
                                ),
                            ),
                        ],
                        vec![
                            (amount, bytes.to_string()),
                            ("usage_type_total_bytes", cur.to_string()),
                            ("return_code", "0".to_string()),
                        ],
                    );
                }
            }
            recs.sort_by_key(|(t, _)| *t);
            // The execute span opens first and closes after everything else of the step.
            seq += 1;
            let exec_start = seq;
            let common = vec![
                ("nc_idx", "0".to_string()),
                ("worker_gid", "0".to_string()),
                ("model_id", MODEL_ID.to_string()),
                ("exec_id", exec_id.clone()),
            ];
            let mut out: Vec<NtraceRecordPb> = Vec::with_capacity(recs.len() + 5);
            out.push(NtraceRecordPb {
                timestamp_ns: s,
                event_type: T_EXECUTE,
                thread_id: self.pid,
                id: exec_start,
                attributes: attrs(&common),
                phase: 1,
                tracking_id: 0,
            });
            seq += 1;
            out.push(NtraceRecordPb {
                timestamp_ns: s + 50_000,
                event_type: T_SYNC,
                thread_id: self.pid + 1,
                id: seq,
                attributes: attrs(&[
                    ("nc_timestamp_ns", (nc0 + 50_000).to_string()),
                    ("nc_idx", "0".to_string()),
                    ("cpu_timestamp_ns", (s + 50_000).to_string()),
                    ("worker_gid", "0".to_string()),
                    ("exec_id", exec_id.clone()),
                ]),
                phase: 3,
                tracking_id: 0,
            });
            let half = recs.len() / 2;
            let mut rest = recs.into_iter().map(|(_, r)| r);
            out.extend(rest.by_ref().take(half));
            // Hardware span: device time on the sync point's clock, written after host records
            // that are later than it.
            let (ha, hb) = (s + 500_000, e - 2_500_000);
            let hw = |id, phase, tracking_id, t: u64, kv: &[(&str, String)]| NtraceRecordPb {
                timestamp_ns: t,
                event_type: T_NC_EXEC,
                thread_id: self.pid + 1,
                id,
                attributes: attrs(kv),
                phase,
                tracking_id,
            };
            seq += 1;
            let hw_id = seq;
            out.push(hw(
                hw_id,
                1,
                0,
                ha,
                &[
                    ("nc_timestamp_ns", (nc0 + (ha - s)).to_string()),
                    ("nc_idx", "0".to_string()),
                    ("worker_gid", "0".to_string()),
                    ("device_core_idx", "0".to_string()),
                    ("exec_id", exec_id.clone()),
                ],
            ));
            seq += 1;
            out.push(hw(
                seq,
                2,
                hw_id,
                hb,
                &[
                    ("nc_timestamp_ns", (nc0 + (hb - s)).to_string()),
                    ("exec_id", exec_id.clone()),
                ],
            ));
            out.extend(rest);
            seq += 1;
            out.push(NtraceRecordPb {
                timestamp_ns: e,
                event_type: T_EXECUTE,
                thread_id: self.pid,
                id: seq,
                attributes: attrs(&[("return_code", "0".to_string())]),
                phase: 2,
                tracking_id: exec_start,
            });
            for r in out {
                let b = r.encode_to_vec();
                w.write_all(&(b.len() as u32).to_le_bytes())?;
                w.write_all(&b)?;
                st.bytes += 4 + b.len() as u64;
                st.records += 1;
            }
            k += 1;
        }
        st.steps = k;
        Ok(st)
    }
}

/// Counts of a written Kineto trace.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KinetoStats {
    /// Bytes written.
    pub bytes: u64,
    /// Event objects written (all phases).
    pub events: u64,
    /// Of those, the ones that become `SystemProfileEvents` rows (X, B/E pairs, i, C).
    pub rows: u64,
    /// Flow events (`s` + `f`).
    pub flows: u64,
    /// Steps written.
    pub steps: u64,
}

struct Counting<'w> {
    inner: &'w mut dyn Write,
    bytes: u64,
}

impl Write for Counting<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// `ns` as Kineto's relative `<µs>.<ns>` text.
fn us(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

/// Aten ops of one step (name, nested child).
const OPS: [(&str, &str); 4] = [
    ("aten::linear", "aten::addmm"),
    ("aten::layer_norm", "aten::native_layer_norm"),
    ("aten::gelu", "aten::gelu_"),
    ("aten::matmul", "aten::mm"),
];

/// Writes a Kineto object-form trace for `spec` (base = capture start): steps until at least
/// `min_bytes` are written (at least `spec.executions` steps). Returns what was written.
pub fn write_kineto(
    spec: &SystemSpec,
    min_bytes: u64,
    out: &mut dyn Write,
) -> std::io::Result<KinetoStats> {
    let mut w = Counting {
        inner: out,
        bytes: 0,
    };
    let mut st = KinetoStats::default();
    let pid = spec.pid;
    let stream = pid + 7;
    write!(
        w,
        "{{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [],\n  \"distributedInfo\": {{\"backend\": \"xla\", \"rank\": 0, \"world_size\": 1}},\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": {},\n  \"traceEvents\": [\n",
        spec.start_ns
    )?;
    let mut ext = 1u64;
    let mut first = true;
    let mut sep = |w: &mut Counting| -> std::io::Result<()> {
        if first {
            first = false;
            Ok(())
        } else {
            w.write_all(b",\n")
        }
    };
    let mut k = 0u64;
    while k < spec.executions.max(1) || w.bytes < min_bytes {
        // Step k covers execution k's nrt_execute (steps continue past the runtime trace).
        let (es, ee) = spec.execute_range(k);
        let s0 = es - spec.start_ns - 500_000;
        let s1 = ee - spec.start_ns + 500_000;
        sep(&mut w)?;
        write!(
            w,
            "  {{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#{k}\", \"pid\": {pid}, \"tid\": {pid}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {ext}, \"Record function id\": 0}}}}",
            us(s0),
            us(s1 - s0)
        )?;
        ext += 1;
        st.events += 1;
        st.rows += 1;
        // Ops inside the step, each with a nested child and a runtime launch linked to a driver
        // slice on the stream thread.
        let slot = (s1 - s0 - 200_000) / OPS.len() as u64;
        for (j, (op, child)) in OPS.iter().enumerate() {
            let a = s0 + 100_000 + j as u64 * slot;
            let b = a + slot - 50_000;
            let c0 = a + 20_000;
            let c1 = b - 20_000;
            let l0 = c0 + 10_000;
            let l1 = l0 + 30_000;
            sep(&mut w)?;
            write!(
                w,
                "  {{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"{op}\", \"pid\": {pid}, \"tid\": {pid}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {ext}, \"Record function id\": 0, \"Sequence number\": {}, \"Fwd thread id\": 0, \"Ev Idx\": {}}}}}",
                us(a),
                us(b - a),
                k * 8 + j as u64,
                j
            )?;
            sep(&mut w)?;
            write!(
                w,
                "  {{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"{child}\", \"pid\": {pid}, \"tid\": {pid}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {}, \"Record function id\": 0, \"Ev Idx\": {}}}}}",
                us(c0),
                us(c1 - c0),
                ext + 1,
                j + 1
            )?;
            sep(&mut w)?;
            write!(
                w,
                "  {{\"ph\": \"X\", \"cat\": \"privateuse1_runtime\", \"name\": \"neuronLaunchKernel\", \"pid\": {pid}, \"tid\": {pid}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {}, \"correlation\": {ext}}}}}",
                us(l0),
                us(l1 - l0),
                ext + 1
            )?;
            sep(&mut w)?;
            write!(
                w,
                "  {{\"ph\": \"s\", \"id\": {ext}, \"pid\": {pid}, \"tid\": {pid}, \"ts\": {}, \"cat\": \"ac2g\", \"name\": \"ac2g\"}}",
                us(l0)
            )?;
            let d0 = l1 + 20_000;
            let d1 = d0 + (slot / 2);
            sep(&mut w)?;
            write!(
                w,
                "  {{\"ph\": \"X\", \"cat\": \"privateuse1_driver\", \"name\": \"{child}_kernel\", \"pid\": {pid}, \"tid\": {stream}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {}, \"correlation\": {ext}, \"stream\": 7, \"device\": 0}}}}",
                us(d0),
                us(d1 - d0),
                ext + 1
            )?;
            sep(&mut w)?;
            write!(
                w,
                "  {{\"ph\": \"f\", \"id\": {ext}, \"pid\": {pid}, \"tid\": {stream}, \"ts\": {}, \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}}",
                us(d0)
            )?;
            ext += 2;
            st.events += 6;
            st.rows += 4;
            st.flows += 2;
        }
        // A python function as B/E, an instant and a counter.
        sep(&mut w)?;
        write!(
            w,
            "  {{\"ph\": \"B\", \"cat\": \"python_function\", \"name\": \"train.py(42): step\", \"pid\": {pid}, \"tid\": {pid}, \"ts\": {}, \"args\": {{\"Python id\": {k}}}}}",
            us(s0 + 10_000)
        )?;
        sep(&mut w)?;
        write!(
            w,
            "  {{\"ph\": \"E\", \"pid\": {pid}, \"tid\": {pid}, \"ts\": {}}}",
            us(s1 - 10_000)
        )?;
        sep(&mut w)?;
        write!(
            w,
            "  {{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"name\": \"[memory]\", \"pid\": {pid}, \"tid\": {pid}, \"ts\": {}, \"s\": \"t\", \"args\": {{\"Bytes\": {}, \"Total Allocated\": {}}}}}",
            us(s0 + 50_000),
            4096 * (k % 7 + 1),
            1_048_576 + 4096 * k
        )?;
        sep(&mut w)?;
        write!(
            w,
            "  {{\"ph\": \"C\", \"name\": \"queue depth\", \"pid\": {pid}, \"tid\": {pid}, \"ts\": {}, \"args\": {{\"depth\": {}}}}}",
            us(s0),
            k % 5
        )?;
        st.events += 4;
        st.rows += 3;
        st.steps += 1;
        k += 1;
    }
    for (tid, name) in [(pid, "python main"), (stream, "neuron stream 7")] {
        sep(&mut w)?;
        write!(
            w,
            "  {{\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": 0, \"pid\": {pid}, \"tid\": {tid}, \"args\": {{\"name\": \"{name}\"}}}}"
        )?;
        st.events += 1;
    }
    sep(&mut w)?;
    write!(
        w,
        "  {{\"name\": \"process_name\", \"ph\": \"M\", \"ts\": 0, \"pid\": {pid}, \"tid\": 0, \"args\": {{\"name\": \"python\"}}}}"
    )?;
    st.events += 1;
    w.write_all(b"\n  ],\n  \"traceName\": \"synthetic.pt.trace.json\"\n}\n")?;
    w.flush()?;
    st.bytes = w.bytes;
    Ok(st)
}

/// A synthetic System capture: `(path, bytes)` of `<dir>/trace_info.pb`, `<dir>/ntrace.pb` and
/// `<dir>/trace.json` (at least `kineto_bytes`; held in memory, for small sizes).
pub fn system_capture(spec: &SystemSpec, kineto_bytes: u64) -> Vec<(String, Vec<u8>)> {
    let (nt, n) = spec.ntrace();
    let mut kj = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = write_kineto(spec, kineto_bytes, &mut kj);
    let d = spec.dir();
    vec![
        (format!("{d}/trace_info.pb"), spec.trace_info(n)),
        (format!("{d}/ntrace.pb"), nt),
        (format!("{d}/trace.json"), kj),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::Tables;

    #[test]
    fn kineto_writer_reads_back() {
        let spec = SystemSpec::default();
        let mut v = Vec::new();
        let st = write_kineto(&spec, 200_000, &mut v).expect("vec write");
        assert_eq!(st.bytes, v.len() as u64);
        assert!(st.bytes >= 200_000);
        let mut t = Tables::default();
        let rep =
            crate::system::kineto::read_trace_bytes(&v, "trace.json", "i-x", &mut t).expect("read");
        assert_eq!(rep.objects, st.events);
        assert_eq!(rep.rows, st.rows);
        assert_eq!(
            rep.skipped + rep.sanitised,
            0,
            "our writer writes strict JSON"
        );
        assert_eq!(rep.flows_bound, st.flows);
        assert_eq!(rep.flows_unbound, 0);
        assert_eq!(rep.unmatched_begin + rep.unmatched_end, 0);
        assert_eq!(rep.base_time_ns, Some(spec.start_ns as i64));
        assert!(rep.peak_held <= (crate::system::kineto::WINDOW + 4) as u64);
    }
}
