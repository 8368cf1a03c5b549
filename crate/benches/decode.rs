//! Criterion benchmarks of the decode path on our synthetic demo capture (no sample files needed):
//! NTFF decode into in-memory Arrow tables, NEFF open, and the Parquet encoding of the result.
//! Large-input throughput (MB/s, records/s, peak memory) is measured by `neuronscope bench`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use neuronscope::ntff::{self, DecodeContext};
use neuronscope::tables::{explorer, Memo, TableBuilder, Tables};
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
    // The hot loop of every decoder: one typed row of 8 cells (3 dictionary strings) per record.
    g.throughput(Throughput::Elements(1 << 16));
    g.bench_function("builder_64k_instruction_rows", |b| {
        b.iter(|| {
            let mut tb = TableBuilder::new(&explorer::INSTRUCTION);
            let mut memo = [Memo::default(); 5];
            for i in 0..(1i64 << 16) {
                tb.set(ins::START, i * 7);
                tb.set(ins::END, i * 7 + 5);
                tb.set(ins::DUR, 5i64);
                tb.set(ins::ID, i);
                tb.set(ins::PC, i & 1023);
                let e = (i % 5) as usize;
                tb.set_memo(ins::ENGINE, ENGINES[e], &mut memo[e]);
                tb.set(ins::OPCODE, "MATMUL");
                tb.set(ins::SG, "sg00");
                if let Some(batch) = tb.end_row().unwrap() {
                    return batch;
                }
            }
            tb.take_batch().unwrap()
        })
    });
    g.finish();
}

const ENGINES: [&str; 5] = ["tensor", "scalar", "gpsimd", "vector", "sync"];

neuronscope::cols!(mod ins = neuronscope::tables::explorer::INSTRUCTION {
    START: I64 = "start_ts",
    END: I64 = "end_ts",
    DUR: I64 = "duration_ns",
    ID: I64 = "id",
    PC: I64 = "pc",
    ENGINE: Str = "engine",
    OPCODE: Str = "opcode",
    SG: Str = "nscope_subgraph",
});

criterion_group!(decode, benches);
criterion_main!(decode);
