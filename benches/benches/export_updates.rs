//! Encoding and decoding the updates format: export of a whole history and
//! the decode + apply of it (including reading the text back).
#![expect(
    missing_docs,
    reason = "criterion_group! generates an undocumented pub fn"
)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use traces::Trace;
use weft::Doc;

fn updates(c: &mut Criterion) {
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

    let mut group = c.benchmark_group("import_updates_and_read");
    for name in benches::TRACES {
        let trace = Trace::sequential(name);
        let bytes = benches::full_update(&mut benches::replay(&trace));
        group.throughput(Throughput::Elements(trace.patch_count() as u64));
        group.bench_with_input(BenchmarkId::from_parameter(name), &bytes, |b, bytes| {
            b.iter(|| {
                let mut doc = Doc::new();
                doc.import(bytes).expect("valid update");
                let text = doc.text("text").to_string();
                assert_eq!(text, trace.end_content);
                text
            })
        });
    }
    group.finish();
}

criterion_group!(benches, updates);
criterion_main!(benches);
