//! Criterion benchmarks of the Tables view's and Search's worker calls (`crate::table_query`) on
//! the DmaPacket and Instruction tables of a 50 MB synthetic NTFF shaped like the v6 samples
//! (`synth::large_capture`; ≈ 0.8 M DMA packets), each beside the read-only pass over the same
//! columns (`read_*`: decode the projected Parquet columns, nothing kept), the limit.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use neuronscope::ntff::{self, DecodeContext};
use neuronscope::table_query::{build_view, rows_of, search, Filter};
use neuronscope::tables::Tables;
use neuronscope::SliceSource;

fn read_only(pq: &bytes::Bytes, cols: &[&str]) -> usize {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::arrow::ProjectionMask;
    let b = ParquetRecordBatchReaderBuilder::try_new(pq.clone()).unwrap();
    let idx: Vec<usize> = cols
        .iter()
        .map(|c| b.schema().index_of(c).unwrap())
        .collect();
    let mask = ProjectionMask::roots(b.parquet_schema(), idx);
    b.with_projection(mask)
        .build()
        .unwrap()
        .map(|r| r.unwrap().num_rows())
        .sum()
}

fn benches(c: &mut Criterion) {
    let files = neuronscope::synth::large_capture(50 << 20).expect("synthetic capture");
    let ntff = &files.iter().find(|(p, _)| p.ends_with(".ntff")).unwrap().1;
    let mut t = Tables::default();
    ntff::decode(
        &SliceSource(ntff),
        &DecodeContext::default(),
        &mut t,
        &mut |_, _| {},
    )
    .unwrap();
    let pq = |name: &str| {
        let (def, batches) = t.tables.get(name).unwrap();
        bytes::Bytes::from(neuronscope::sink::parquet_bytes(def, batches).unwrap())
    };
    let (dma, ins) = (pq("DmaPacket"), pq("Instruction"));
    let rows = t.rows("DmaPacket") as u64;
    eprintln!(
        "DmaPacket {rows} rows, {} B Parquet; Instruction {} rows",
        dma.len(),
        t.rows("Instruction")
    );
    let mut g = c.benchmark_group("table_query");
    g.sample_size(10);
    g.throughput(Throughput::Elements(rows));
    g.bench_function("read_duration", |b| {
        b.iter(|| read_only(&dma, &["duration_ns"]))
    });
    g.bench_function("sort_duration_desc", |b| {
        b.iter(|| build_view(dma.clone(), Some(("duration_ns", true)), &[]).unwrap())
    });
    g.bench_function("read_queue_name", |b| {
        b.iter(|| read_only(&dma, &["queue_name"]))
    });
    g.bench_function("sort_queue_name", |b| {
        b.iter(|| build_view(dma.clone(), Some(("queue_name", false)), &[]).unwrap())
    });
    let f = [
        Filter::parse("transfer_bytes", ">= 1024").unwrap(),
        Filter::parse("queue_name", "q").unwrap(),
    ];
    g.bench_function("read_filter_cols", |b| {
        b.iter(|| read_only(&dma, &["transfer_bytes", "queue_name"]))
    });
    g.bench_function("filter_bytes_and_queue", |b| {
        b.iter(|| build_view(dma.clone(), None, &f).unwrap())
    });
    let view = build_view(dma.clone(), Some(("duration_ns", true)), &[]).unwrap();
    let mid = view.rows.len() / 2;
    g.throughput(Throughput::Elements(200));
    g.bench_function("rows_of_200_sorted", |b| {
        b.iter(|| rows_of(dma.clone(), &view.rows[mid..mid + 200]).unwrap())
    });
    g.throughput(Throughput::Elements(rows + t.rows("Instruction") as u64));
    let time = |n| neuronscope::lod::TimeCols::of(n).unwrap();
    g.bench_function("search_inst", |b| {
        b.iter(|| {
            search(
                vec![
                    ("Instruction", ins.clone(), time("Instruction")),
                    ("DmaPacket", dma.clone(), time("DmaPacket")),
                ],
                "inst.",
                10_000,
            )
            .unwrap()
        })
    });
    g.finish();
}

criterion_group!(table_query, benches);
criterion_main!(table_query);
