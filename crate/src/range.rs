//! Selection summary: what a device profile did in a time range `[start, end)` (ns since the
//! execution start, the device tables' time axis), computed from the stored `Instruction` and
//! `DmaPacket` Parquet files batch by batch, reading only the columns it needs.
//!
//! Definitions (the page's Selection panel shows them in these words):
//! - **busy time** of an engine = length of the union of its instructions' `[start_ts, end_ts)`
//!   clipped to the range, `EVENT_SEMAPHORE` (semaphore waits) excluded: the definition of the
//!   Summary's `<engine>_active_time` (`crate::summary`, union of every core's streams), so the
//!   range `[0, total_time]` gives the Summary's `<engine>_active_time_percent` (up to the ns
//!   flooring of the table times: the Summary works in ps). Per (core, engine) and per engine over
//!   all cores.
//! - **instructions**, **opcode time**, **DMA packets and bytes**: rows whose start (`start_ts`)
//!   lies in `[start, end)`; an opcode's time is the sum of `end_ts - start_ts` of those rows
//!   (semaphore waits included, as `OpcodeSummary` does).
//!
//! Memory: one merged-interval list per (core, engine) (16 B per connected component), one entry
//! per distinct opcode and per DMA queue; nothing proportional to the rows.

use crate::error::Result;
use crate::summary::{union_len, Union};
use crate::tables::StrCol;
use arrow_array::{Array, Int32Array, Int64Array, RecordBatch};
use serde::Serialize;
use std::collections::BTreeMap;

/// Busy time of one engine in the range.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct EngineBusy {
    /// Physical core (`pcore_idx`); `None` for the all-cores line of an engine.
    pub pcore_idx: Option<i64>,
    /// Explorer engine name (`tensor`, `vector`, …).
    pub engine: String,
    /// Union of the engine's non-semaphore instructions clipped to the range, ns.
    pub busy_ns: i64,
    /// `busy_ns / (end - start)`, a fraction (0 – 1) like the Summary's `*_percent` fields.
    pub busy_fraction: f64,
    /// Instructions of this engine starting in the range (semaphore waits included).
    pub instructions: u64,
}

/// One opcode's instructions starting in the range.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct OpcodeTime {
    /// Explorer engine name.
    pub engine: String,
    /// `Instruction.opcode` (a name; `0x..` for bytes the NEFF's ISA table does not name).
    pub opcode: String,
    /// Rows.
    pub count: u64,
    /// Σ (end_ts − start_ts), ns.
    pub time_ns: i64,
}

/// One DMA queue's packets starting in the range.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct QueueBytes {
    /// Physical core (`pcore_idx`).
    pub pcore_idx: i64,
    /// `DmaPacket.queue_name`.
    pub queue_name: String,
    /// `DmaPacket.queue_type`.
    pub queue_type: String,
    /// Packets.
    pub packets: u64,
    /// Σ `transfer_bytes`, bytes (null sizes count 0).
    pub bytes: i64,
}

/// What a device profile did in `[start_ns, end_ns)`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RangeSummary {
    /// Range start, ns on the device tables' axis (inclusive).
    pub start_ns: i64,
    /// Range end, ns (exclusive).
    pub end_ns: i64,
    /// Instructions starting in the range.
    pub instruction_count: u64,
    /// Σ (end_ts − start_ts) of those instructions, ns.
    pub instruction_time_ns: i64,
    /// Per (core, engine), core then engine order; then one line per engine with `pcore_idx`
    /// `None` (union over the cores, the Summary's definition).
    pub engines: Vec<EngineBusy>,
    /// Opcodes by time, longest first (at most `top` of them).
    pub opcodes: Vec<OpcodeTime>,
    /// Opcodes in the range in all (the list above may be cut).
    pub opcode_count: usize,
    /// DMA queues by bytes, most first.
    pub dma_queues: Vec<QueueBytes>,
    /// DMA packets starting in the range.
    pub dma_packets: u64,
    /// Their Σ `transfer_bytes`.
    pub dma_bytes: i64,
}

/// The instruction columns [`range_summary`] reads.
pub const INSTRUCTION_COLUMNS: [&str; 5] = ["start_ts", "end_ts", "engine", "pcore_idx", "opcode"];
/// The DMA columns it reads.
pub const DMA_COLUMNS: [&str; 5] = [
    "start_ts",
    "pcore_idx",
    "queue_name",
    "queue_type",
    "transfer_bytes",
];

/// Merged busy intervals `[start, end)`, ns, sorted.
type Intervals = Vec<(i64, i64)>;

/// An int64 or int32 column by name (`None` when absent or of another type).
enum Ints<'a> {
    I64(&'a Int64Array),
    I32(&'a Int32Array),
}

impl<'a> Ints<'a> {
    fn of(b: &'a RecordBatch, name: &str) -> Option<Self> {
        let c = b.column_by_name(name)?;
        if let Some(a) = c.as_any().downcast_ref::<Int64Array>() {
            return Some(Ints::I64(a));
        }
        c.as_any().downcast_ref::<Int32Array>().map(Ints::I32)
    }
    fn get(&self, i: usize) -> Option<i64> {
        match self {
            Ints::I64(a) => (i < a.len() && a.is_valid(i)).then(|| a.value(i)),
            Ints::I32(a) => (i < a.len() && a.is_valid(i)).then(|| i64::from(a.value(i))),
        }
    }
}

/// Batches of `columns` of a stored Parquet file, one at a time.
fn batches<R: parquet::file::reader::ChunkReader + 'static>(
    parquet: R,
    columns: &[&str],
) -> Result<impl Iterator<Item = Result<RecordBatch>>> {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::arrow::ProjectionMask;
    let b = ParquetRecordBatchReaderBuilder::try_new(parquet)?
        .with_batch_size(crate::tables::BATCH_ROWS);
    let schema = b.schema().clone();
    let idx: Vec<usize> = columns
        .iter()
        .filter_map(|c| schema.index_of(c).ok())
        .collect();
    let mask = ProjectionMask::roots(b.parquet_schema(), idx);
    Ok(b.with_projection(mask)
        .build()?
        .map(|r| r.map_err(crate::error::Error::from)))
}

/// Summarises `[start_ns, end_ns)` of a device profile from its stored `Instruction` and
/// `DmaPacket` Parquet files (either may be absent), keeping the `top` longest opcodes.
/// An empty or reversed range gives zeros. Errors: a file that is not readable Parquet.
pub fn range_summary<R: parquet::file::reader::ChunkReader + 'static>(
    instructions: Option<R>,
    dma: Option<R>,
    start_ns: i64,
    end_ns: i64,
    top: usize,
) -> Result<RangeSummary> {
    let span = end_ns.saturating_sub(start_ns).max(0);
    let mut busy: BTreeMap<i64, BTreeMap<String, (Union, u64)>> = BTreeMap::new();
    let mut ops: BTreeMap<String, BTreeMap<String, (u64, i64)>> = BTreeMap::new();
    let (mut count, mut time) = (0u64, 0i64);
    if let Some(p) = instructions.filter(|_| span > 0) {
        for b in batches(p, &INSTRUCTION_COLUMNS)? {
            let b = b?;
            let (Some(s), Some(e)) = (Ints::of(&b, "start_ts"), Ints::of(&b, "end_ts")) else {
                continue;
            };
            let pc = Ints::of(&b, "pcore_idx");
            let (eng, op) = (StrCol::by_name(&b, "engine"), StrCol::by_name(&b, "opcode"));
            for i in 0..b.num_rows() {
                let (Some(s), Some(e)) = (s.get(i), e.get(i)) else {
                    continue;
                };
                if e <= start_ns && s < start_ns || s >= end_ns {
                    continue;
                }
                let engine = eng.and_then(|c| c.get(i)).unwrap_or("unknown");
                let opcode = op.and_then(|c| c.get(i)).unwrap_or("");
                let core = pc.as_ref().and_then(|c| c.get(i)).unwrap_or(0);
                // Nested maps keyed by String are looked up by &str: no allocation per row.
                let per_core = busy.entry(core).or_default();
                if !per_core.contains_key(engine) {
                    per_core.insert(engine.to_string(), (Union::default(), 0));
                }
                let Some(slot) = per_core.get_mut(engine) else {
                    continue;
                };
                if opcode != "EVENT_SEMAPHORE" {
                    slot.0.push(s.max(start_ns), e.min(end_ns));
                }
                if s >= start_ns {
                    slot.1 += 1;
                    count += 1;
                    let d = e.saturating_sub(s).max(0);
                    time = time.saturating_add(d);
                    let per_engine = ops.entry(engine.to_string()).or_default();
                    if !per_engine.contains_key(opcode) {
                        per_engine.insert(opcode.to_string(), (0, 0));
                    }
                    let Some(o) = per_engine.get_mut(opcode) else {
                        continue;
                    };
                    o.0 += 1;
                    o.1 = o.1.saturating_add(d);
                }
            }
        }
    }
    let frac = |ns: i64| {
        if span > 0 {
            ns as f64 / span as f64
        } else {
            0.0
        }
    };
    let mut engines = Vec::new();
    let mut by_engine: BTreeMap<String, (Vec<Intervals>, u64)> = BTreeMap::new();
    for (core, (engine, (mut u, n))) in busy
        .into_iter()
        .flat_map(|(c, m)| m.into_iter().map(move |x| (c, x)))
    {
        let iv = u.intervals().to_vec();
        let ns = union_len([&iv[..]]);
        engines.push(EngineBusy {
            pcore_idx: Some(core),
            engine: engine.clone(),
            busy_ns: ns,
            busy_fraction: frac(ns),
            instructions: n,
        });
        let e = by_engine.entry(engine).or_default();
        e.0.push(iv);
        e.1 += n;
    }
    engines.sort_by(|a, b| {
        (a.pcore_idx, engine_rank(&a.engine), &a.engine).cmp(&(
            b.pcore_idx,
            engine_rank(&b.engine),
            &b.engine,
        ))
    });
    let mut all: Vec<EngineBusy> = by_engine
        .into_iter()
        .map(|(engine, (lists, n))| {
            let ns = union_len(lists.iter().map(|l| &l[..]));
            EngineBusy {
                pcore_idx: None,
                engine,
                busy_ns: ns,
                busy_fraction: frac(ns),
                instructions: n,
            }
        })
        .collect();
    all.sort_by(|a, b| {
        (engine_rank(&a.engine), &a.engine).cmp(&(engine_rank(&b.engine), &b.engine))
    });
    engines.extend(all);

    let mut opcodes: Vec<OpcodeTime> = ops
        .into_iter()
        .flat_map(|(engine, m)| {
            m.into_iter()
                .map(move |(opcode, (count, time_ns))| OpcodeTime {
                    engine: engine.clone(),
                    opcode,
                    count,
                    time_ns,
                })
        })
        .collect();
    let opcode_count = opcodes.len();
    opcodes.sort_by(|a, b| {
        b.time_ns
            .cmp(&a.time_ns)
            .then_with(|| (&a.engine, &a.opcode).cmp(&(&b.engine, &b.opcode)))
    });
    opcodes.truncate(top);

    let mut queues: BTreeMap<(i64, String, String), (u64, i64)> = BTreeMap::new();
    let (mut packets, mut dma_bytes) = (0u64, 0i64);
    if let Some(p) = dma.filter(|_| span > 0) {
        for b in batches(p, &DMA_COLUMNS)? {
            let b = b?;
            let Some(s) = Ints::of(&b, "start_ts") else {
                continue;
            };
            let pc = Ints::of(&b, "pcore_idx");
            let size = Ints::of(&b, "transfer_bytes");
            let (name, ty) = (
                StrCol::by_name(&b, "queue_name"),
                StrCol::by_name(&b, "queue_type"),
            );
            for i in 0..b.num_rows() {
                let Some(s) = s.get(i) else { continue };
                if s < start_ns || s >= end_ns {
                    continue;
                }
                let core = pc.as_ref().and_then(|c| c.get(i)).unwrap_or(0);
                let bytes = size.as_ref().and_then(|c| c.get(i)).unwrap_or(0);
                let key = (
                    core,
                    name.and_then(|c| c.get(i)).unwrap_or("").to_string(),
                    ty.and_then(|c| c.get(i)).unwrap_or("").to_string(),
                );
                let q = queues.entry(key).or_default();
                q.0 += 1;
                q.1 = q.1.saturating_add(bytes);
                packets += 1;
                dma_bytes = dma_bytes.saturating_add(bytes);
            }
        }
    }
    let mut dma_queues: Vec<QueueBytes> = queues
        .into_iter()
        .map(
            |((pcore_idx, queue_name, queue_type), (packets, bytes))| QueueBytes {
                pcore_idx,
                queue_name,
                queue_type,
                packets,
                bytes,
            },
        )
        .collect();
    dma_queues.sort_by(|a, b| {
        b.bytes
            .cmp(&a.bytes)
            .then_with(|| a.queue_name.cmp(&b.queue_name))
    });

    Ok(RangeSummary {
        start_ns,
        end_ns,
        instruction_count: count,
        instruction_time_ns: time,
        engines,
        opcodes,
        opcode_count,
        dma_queues,
        dma_packets: packets,
        dma_bytes,
    })
}

/// Order of the engines on the timeline and in the Summary.
fn engine_rank(e: &str) -> usize {
    ["tensor", "vector", "scalar", "gpsimd", "sync"]
        .iter()
        .position(|x| *x == e)
        .unwrap_or(5)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;

    fn parquet(batch: &RecordBatch) -> bytes::Bytes {
        let mut out = Vec::new();
        let mut w = parquet::arrow::ArrowWriter::try_new(&mut out, batch.schema(), None).unwrap();
        w.write(batch).unwrap();
        w.close().unwrap();
        bytes::Bytes::from(out)
    }

    fn instr(rows: &[(i64, i64, &str, i64, &str)]) -> bytes::Bytes {
        let schema = Arc::new(Schema::new(vec![
            Field::new("start_ts", DataType::Int64, true),
            Field::new("end_ts", DataType::Int64, true),
            Field::new("engine", DataType::Utf8, true),
            Field::new("pcore_idx", DataType::Int64, true),
            Field::new("opcode", DataType::Utf8, true),
        ]));
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1))),
            Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.2))),
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.3))),
            Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.4))),
        ];
        parquet(&RecordBatch::try_new(schema, cols).unwrap())
    }

    #[test]
    fn busy_is_a_clipped_union_without_semaphore_waits() {
        let p = instr(&[
            (0, 100, "tensor", 0, "MATMUL"),
            (50, 150, "tensor", 0, "MATMUL"), // overlaps: union 0..150
            (150, 400, "tensor", 0, "EVENT_SEMAPHORE"), // not busy
            (400, 500, "tensor", 0, "ADD"),
            (120, 220, "tensor", 1, "ADD"), // other core: all-cores union 0..220 + 400..500
            (900, 1000, "vector", 0, "ADD"), // outside the range
        ]);
        let r = range_summary(Some(p), None, 100, 450, 10).unwrap();
        let get = |core: Option<i64>, e: &str| {
            r.engines
                .iter()
                .find(|x| x.pcore_idx == core && x.engine == e)
                .cloned()
        };
        let t0 = get(Some(0), "tensor").unwrap();
        // 100..150 and 400..450.
        assert_eq!(t0.busy_ns, 100);
        assert!((t0.busy_fraction - 100.0 / 350.0).abs() < 1e-12);
        // Starting in [100, 450): 150 (semaphore) and 400 on core 0.
        assert_eq!(t0.instructions, 2);
        let all = get(None, "tensor").unwrap();
        // 100..220 and 400..450.
        assert_eq!(all.busy_ns, 170);
        assert_eq!(all.instructions, 3);
        assert!(get(Some(0), "vector").is_none());
        assert_eq!(r.instruction_count, 3);
        assert_eq!(r.instruction_time_ns, 250 + 100 + 100);
        assert_eq!(r.opcodes[0].opcode, "EVENT_SEMAPHORE");
        assert_eq!(r.opcodes[0].time_ns, 250);
        assert_eq!(
            r.opcodes[1],
            OpcodeTime {
                engine: "tensor".into(),
                opcode: "ADD".into(),
                count: 2,
                time_ns: 200
            }
        );
        assert_eq!(r.opcode_count, 2);
    }

    #[test]
    fn empty_range_and_missing_tables_give_zeros() {
        let p = instr(&[(0, 100, "tensor", 0, "MATMUL")]);
        let r = range_summary(Some(p), None, 50, 50, 10).unwrap();
        assert_eq!(r.instruction_count, 0);
        assert!(r.engines.is_empty());
        let r = range_summary::<bytes::Bytes>(None, None, 0, 10, 10).unwrap();
        assert_eq!(r.dma_packets, 0);
        assert!(range_summary(
            Some(bytes::Bytes::from_static(b"not parquet")),
            None,
            0,
            10,
            10
        )
        .is_err());
    }
}
