//! Criterion benchmarks of the decode path on our synthetic demo capture (no sample files needed):
//! NTFF decode into in-memory Arrow tables, NEFF open, and the Parquet encoding of the result.
//! Large-input throughput (MB/s, records/s, peak memory) is measured by `neuronscope bench`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use neuronscope::ntff::{self, DecodeContext};
use neuronscope::tables::Tables;
use neuronscope::SliceSource;

fn benches(c: &mut Criterion) {
    let files = neuronscope::synth::demo_capture().expect("demo capture");
    let neff = &files.iter().find(|(p, _)| p.ends_with(".neff")).unwrap().1;
    let ntff = &files.iter().find(|(p, _)| p.ends_with(".ntff")).unwrap().1;

    let mut g = c.benchmark_group("demo");
    g.throughput(Throughput::Bytes(ntff.len() as u64));
    g.bench_function("ntff_decode", |b| {
        b.iter(|| {
            let mut t = Tables::default();
            ntff::decode(
                &SliceSource(ntff),
                &DecodeContext::default(),
                &mut t,
                &mut |_, _| {},
            )
            .unwrap();
            t
        })
    });
    g.throughput(Throughput::Bytes(neff.len() as u64));
    g.bench_function("neff_open", |b| {
        b.iter(|| neuronscope::neff::open(&SliceSource(neff)).unwrap())
    });
    let mut t = Tables::default();
    ntff::decode(
        &SliceSource(ntff),
        &DecodeContext::default(),
        &mut t,
        &mut |_, _| {},
    )
    .unwrap();
    let (def, batches) = t.tables.get("Instruction").unwrap();
    g.bench_function("instruction_parquet", |b| {
        b.iter(|| neuronscope::sink::parquet_bytes(def, batches).unwrap())
    });
    g.finish();
}

criterion_group!(decode, benches);
criterion_main!(decode);
