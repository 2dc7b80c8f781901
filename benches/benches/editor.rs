//! The editor layer on the final B4 document: stable cursors made and
//! resolved, against the same number of position conversions (a read of
//! the same tree) measured in the same run. The bar: resolving a cursor
//! costs at most 3x a conversion.
#![expect(
    missing_docs,
    reason = "criterion_group! generates an undocumented pub fn"
)]

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use traces::Trace;
use weft::{Side, Unit};

/// Cursors per iteration.
const CURSORS: usize = 10_000;

/// `CURSORS` positions spread over `len` chars (a fixed LCG: the same
/// positions every run).
fn positions(len: usize) -> Vec<usize> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..CURSORS)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 33) as usize % (len + 1)
        })
        .collect()
}

fn cursors(c: &mut Criterion) {
    let trace = Trace::sequential("automerge-paper");
    let mut doc = benches::replay(&trace);
    let len = doc.text("text").len();
    let pos = positions(len);
    let made: Vec<_> = pos
        .iter()
        .enumerate()
        .map(|(i, &p)| {
            let side = if i % 2 == 0 {
                Side::After
            } else {
                Side::Before
            };
            doc.text("text").cursor(p, side).expect("in bounds")
        })
        .collect();

    let mut group = c.benchmark_group("cursors_b4");
    group.throughput(Throughput::Elements(CURSORS as u64));
    group.bench_function("convert_pos_baseline", |b| {
        let view = doc.get_text("text").expect("text exists");
        b.iter(|| {
            pos.iter()
                .map(|&p| view.convert_pos(p, Unit::Char, Unit::Utf16).expect("ok"))
                .sum::<usize>()
        })
    });
    group.bench_function("make", |b| {
        let view = doc.get_text("text").expect("text exists");
        b.iter(|| {
            pos.iter()
                .filter_map(|&p| view.cursor(p, Side::After).expect("ok").id())
                .count()
        })
    });
    group.bench_function("resolve", |b| {
        b.iter(|| {
            made.iter()
                .map(|c| doc.cursor_pos(c).expect("resolves"))
                .sum::<usize>()
        })
    });
    group.finish();

    // The first cursor resolved in a text builds its id index (O(n log n),
    // once; edits keep it up to date from then on).
    let mut group = c.benchmark_group("cursors_b4_first");
    group.sample_size(10);
    group.bench_function("make_and_resolve_builds_index", |b| {
        b.iter_batched(
            || benches::replay(&trace),
            |mut fresh| {
                let c = fresh.text("text").cursor(len / 2, Side::After).expect("ok");
                fresh.cursor_pos(&c).expect("resolves")
            },
            criterion::BatchSize::LargeInput,
        )
    });
    group.finish();
}

/// B4 typed with a commit after every patch, under an undo manager that
/// keeps the last `steps` steps.
fn b4_with_undo(trace: &Trace, steps: usize) -> (weft::Doc, weft::UndoManager) {
    let mut doc = weft::Doc::new();
    let mut undo = weft::UndoManager::new(&mut doc);
    undo.set_max_steps(steps);
    benches::type_committing(&mut doc, trace);
    (doc, undo)
}

/// Undo then redo of the last N steps of B4: linear in the steps (100 vs
/// 1,000), not in the document.
fn undo_redo(c: &mut Criterion) {
    let trace = Trace::sequential("automerge-paper");
    let end = trace.end_content.chars().count();
    let mut group = c.benchmark_group("undo_redo_b4");
    group.sample_size(10);
    for steps in [100usize, 1000] {
        group.throughput(Throughput::Elements(steps as u64));
        group.bench_function(format!("last_{steps}_steps"), |b| {
            b.iter_batched(
                || b4_with_undo(&trace, steps),
                |(mut doc, mut undo)| {
                    for _ in 0..steps {
                        undo.undo(&mut doc).expect("undo").expect("a step");
                    }
                    for _ in 0..steps {
                        undo.redo(&mut doc).expect("redo").expect("a step");
                    }
                    assert_eq!(doc.text("text").len(), end);
                    doc
                },
                criterion::BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, cursors, undo_redo);
criterion_main!(benches);
