//! Remote merge: a trace's whole history imported, as one update, into an
//! empty document, then its text read back.
#![expect(
    missing_docs,
    reason = "criterion_group! generates an undocumented pub fn"
)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use traces::Trace;
use weft::Doc;

fn remote_merge(c: &mut Criterion) {
    let mut group = c.benchmark_group("remote_merge");
    for name in benches::TRACES {
        let trace = Trace::sequential(name);
        let chars = trace.end_content.chars().count();
        let bytes = benches::full_update(&mut benches::replay(&trace));
        group.throughput(Throughput::Elements(trace.patch_count() as u64));
        group.bench_with_input(BenchmarkId::from_parameter(name), &bytes, |b, bytes| {
            b.iter(|| {
                let mut doc = Doc::new();
                doc.import(bytes).expect("valid update");
                let text = doc.text("text").to_string();
                assert_eq!(text.chars().count(), chars);
                text
            })
        });
    }
    group.finish();
}

criterion_group!(benches, remote_merge);
criterion_main!(benches);
