//! Rich text: the B4 trace replayed with and without marks (same run, so
//! the ratio is the figure to watch), `to_delta()` of the marked document,
//! and importing its history.
#![expect(
    missing_docs,
    reason = "criterion_group! generates an undocumented pub fn"
)]

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use traces::Trace;

fn rich_text(c: &mut Criterion) {
    let trace = Trace::sequential("automerge-paper");
    let mut group = c.benchmark_group("rich_text");
    group.throughput(Throughput::Elements(trace.patch_count() as u64));
    group.bench_function("b4_plain", |b| b.iter(|| benches::replay(&trace)));
    group.bench_function("b4_rich", |b| b.iter(|| benches::replay_rich(&trace)));
    group.finish();

    let mut doc = benches::replay_rich(&trace);
    let update = benches::full_update(&mut doc);
    let mut group = c.benchmark_group("rich_text_read");
    group.bench_function("b4_rich_to_delta", |b| {
        b.iter(|| doc.text("text").to_delta())
    });
    group.bench_function("b4_rich_import", |b| {
        b.iter(|| {
            let mut d = weft::Doc::new();
            d.import(&update).expect("a valid update");
            d
        })
    });
    group.finish();
}

criterion_group!(benches, rich_text);
criterion_main!(benches);
