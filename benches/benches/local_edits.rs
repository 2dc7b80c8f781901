//! Local typing: every patch of a trace applied to an empty document.
#![expect(
    missing_docs,
    reason = "criterion_group! generates an undocumented pub fn"
)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use traces::Trace;

fn local_edits(c: &mut Criterion) {
    let mut group = c.benchmark_group("local_edits");
    for name in benches::TRACES {
        let trace = Trace::sequential(name);
        let chars = trace.end_content.chars().count();
        group.throughput(Throughput::Elements(trace.patch_count() as u64));
        group.bench_with_input(BenchmarkId::from_parameter(name), &trace, |b, trace| {
            b.iter(|| {
                let mut doc = benches::replay(trace);
                assert_eq!(doc.text("text").len(), chars);
                doc
            })
        });
    }
    group.finish();
}

criterion_group!(benches, local_edits);
criterion_main!(benches);
