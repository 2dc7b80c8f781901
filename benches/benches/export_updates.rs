//! Encoding: a trace's whole history exported as one update (importing it
//! is the `remote_merge` bench).
#![expect(
    missing_docs,
    reason = "criterion_group! generates an undocumented pub fn"
)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use traces::Trace;

fn export_updates(c: &mut Criterion) {
    let mut group = c.benchmark_group("export_updates");
    for name in benches::TRACES {
        let trace = Trace::sequential(name);
        let mut doc = benches::replay(&trace);
        let size = benches::full_update(&mut doc).len();
        group.throughput(Throughput::Elements(trace.patch_count() as u64));
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                let bytes = benches::full_update(&mut doc);
                assert_eq!(bytes.len(), size);
                bytes
            })
        });
    }
    group.finish();
}

criterion_group!(benches, export_updates);
criterion_main!(benches);
