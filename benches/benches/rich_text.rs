//! Rich text: the B4 trace replayed with and without marks (same run, so
//! the ratio is the figure to watch), `to_delta()` of the marked document,
//! importing its history, and how marking and reading styles scale with
//! the number of earlier marks (`marks_scaling`: 8x the marks should cost
//! at most ~1.5x the time).
#![expect(
    missing_docs,
    reason = "criterion_group! generates an undocumented pub fn"
)]

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use traces::Trace;
use weft::Doc;

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

/// Chars of the text [`marked_doc`] builds.
const SCALING_LEN: usize = 100_000;

/// Where the measured marks and reads go: right of every earlier mark.
const SCALING_AT: usize = 95_000;

/// A text of [`SCALING_LEN`] chars with `marks` one-char bold marks spread
/// evenly over its first 90%.
fn marked_doc(marks: usize) -> Doc {
    let mut doc = Doc::new();
    let mut text = doc.text("text");
    text.insert(0, &"abcdefghij".repeat(SCALING_LEN / 10))
        .expect("insert at 0");
    for i in 0..marks {
        let at = i * (SCALING_LEN * 9 / 10) / marks;
        text.mark(at..at + 1, "bold", true).expect("mark in bounds");
    }
    doc
}

/// Marks made per fresh copy of the document in the `mark` bench, so the
/// mark count stays within a few percent of the one measured.
const MARKS_PER_COPY: u64 = 100;

/// Untimed marks made on each fresh copy first.
const WARM_UP_MARKS: usize = 60;

fn marks_scaling(c: &mut Criterion) {
    let mut group = c.benchmark_group("marks_scaling");
    group.sample_size(30);
    for marks in [4_000, 32_000] {
        let mut doc = marked_doc(marks);
        assert_eq!(doc.text("text").len(), SCALING_LEN);
        group.bench_with_input(BenchmarkId::new("mark", marks), &marks, |b, _| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                let mut done = 0;
                while done < iters {
                    let mut copy = doc.clone();
                    let mut text = copy.text("text");
                    // A copy's vectors are full: its first edits reallocate
                    // them, a cost of the copy (linear in its size), not of
                    // marking. Those go untimed.
                    for k in 0..WARM_UP_MARKS {
                        let at = SCALING_AT - 4_000 + 50 * k;
                        text.mark(at..at + 2, "italic", true)
                            .expect("mark in bounds");
                    }
                    let n = (iters - done).min(MARKS_PER_COPY);
                    let start = Instant::now();
                    for k in 0..n as usize {
                        let at = SCALING_AT + 7 * k;
                        text.mark(at..at + 2, "italic", true)
                            .expect("mark in bounds");
                    }
                    total += start.elapsed();
                    done += n;
                }
                total
            })
        });
        group.bench_with_input(BenchmarkId::new("attributes_at", marks), &marks, |b, _| {
            let text = doc.text("text");
            let mut k = 0;
            b.iter(|| {
                k = (k + 7) % 4_000;
                text.attributes_at(SCALING_AT + k).expect("in bounds")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, rich_text, marks_scaling);
criterion_main!(benches);
