//! Block markers (issue 13's block bars), on B4 (automerge-paper):
//!
//! - `b4_blocks/plain`: the trace replayed as is.
//! - `b4_blocks/split_block`: the same, but every typed `"\n"` is a
//!   `split_block(pos, {"type": "paragraph"})` (a block marker in its
//!   place). The bar: within 10% of `plain`, measured in the same run.
//! - `b4_blocks/newline_text`: the loop of `split_block` typing each
//!   newline as text instead: the cost of the markers alone.
//! - Printed once: the snapshot size of both documents and the growth per
//!   block marker.
//! - `block_scaling/import_{10k,80k}`: importing the history of one peer
//!   typing 10,000 (80,000) short lines, each ended by a block marker (one
//!   insert run holding them all): 8x the lines should cost about 8x.
//! - `block_scaling/export_{10k,80k}`: exporting the history of one peer
//!   typing each line at the start of the text (one insert run per line,
//!   so as many runs as markers): again about 8x for 8x.
#![expect(
    missing_docs,
    reason = "criterion_group! generates an undocumented pub fn"
)]

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use traces::Trace;
use weft::{Doc, ExportMode};

/// The trace with each typed newline a paragraph marker (`blocks`), or
/// typed as text through the same loop.
fn replay_blocks(trace: &Trace, blocks: bool) -> Doc {
    let mut doc = Doc::new();
    let mut text = doc.text("text");
    for p in trace.patches() {
        if p.del > 0 {
            text.delete(p.pos, p.del).expect("delete in bounds");
        }
        if !p.ins.contains('\n') {
            if !p.ins.is_empty() {
                text.insert(p.pos, &p.ins).expect("insert in bounds");
            }
            continue;
        }
        let mut pos = p.pos;
        for (k, line) in p.ins.split('\n').enumerate() {
            if k > 0 {
                if blocks {
                    text.split_block(pos, [("type", "paragraph")])
                        .expect("split in bounds");
                } else {
                    text.insert(pos, "\n").expect("insert in bounds");
                }
                pos += 1;
            }
            if !line.is_empty() {
                text.insert(pos, line).expect("insert in bounds");
                pos += line.chars().count();
            }
        }
    }
    doc
}

fn b4_blocks(c: &mut Criterion) {
    let trace = Trace::sequential("automerge-paper");
    let plain = benches::replay(&trace);
    let blocks = replay_blocks(&trace, true);
    let n = blocks.get_text("text").map_or(0, |t| {
        t.blocks().iter().filter(|b| b.marker.is_some()).count()
    });
    assert_eq!(n, trace.end_content.matches('\n').count());
    let size = |d: &Doc| d.export(ExportMode::Snapshot).expect("export").len();
    let (a, b) = (size(&plain), size(&blocks));
    eprintln!(
        "snapshot: plain {a} bytes, with {n} block markers {b} bytes: +{} bytes ({:.1} per block)",
        b - a,
        (b - a) as f64 / n as f64
    );
    let mut group = c.benchmark_group("b4_blocks");
    group.sample_size(20);
    group.bench_function("plain", |bench| {
        bench.iter(|| black_box(benches::replay(&trace)))
    });
    group.bench_function("newline_text", |bench| {
        bench.iter(|| black_box(replay_blocks(&trace, false)))
    });
    group.bench_function("split_block", |bench| {
        bench.iter(|| black_box(replay_blocks(&trace, true)))
    });
    group.finish();
}

/// One peer types `n` lines, each ended by a paragraph marker; its
/// history as an update.
fn lines(n: usize) -> Vec<u8> {
    let mut doc = Doc::new();
    doc.set_peer_id(1).expect("valid peer id");
    let mut text = doc.text("t");
    for i in 0..n {
        let end = text.len();
        text.insert(end, "a line").expect("in bounds");
        text.split_block(end + 6, [("type", if i % 2 == 0 { "p" } else { "li" })])
            .expect("in bounds");
    }
    doc.export(ExportMode::Updates {
        from: &Default::default(),
    })
    .expect("export")
}

/// One peer types `n` lines, each at the start of the text and ended by
/// a paragraph marker: a run per line.
fn prepended_lines(n: usize) -> Doc {
    let mut doc = Doc::new();
    doc.set_peer_id(1).expect("valid peer id");
    let mut text = doc.text("t");
    for _ in 0..n {
        text.insert(0, "a line").expect("in bounds");
        text.split_block(6, [("type", "p")]).expect("in bounds");
    }
    doc.commit();
    doc
}

fn block_scaling(c: &mut Criterion) {
    let mut group = c.benchmark_group("block_scaling");
    group.sample_size(10);
    for (name, n) in [("import_10k", 10_000), ("import_80k", 80_000)] {
        let bytes = lines(n);
        group.bench_function(name, |bench| {
            bench.iter(|| {
                let mut d = Doc::new();
                d.import(&bytes).expect("import");
                black_box(d)
            })
        });
    }
    for (name, n) in [("export_10k", 10_000), ("export_80k", 80_000)] {
        let doc = prepended_lines(n);
        let from = Default::default();
        group.bench_function(name, |bench| {
            bench.iter(|| black_box(doc.export(ExportMode::Updates { from: &from })))
        });
    }
    group.finish();
}

criterion_group!(benches, b4_blocks, block_scaling);
criterion_main!(benches);
