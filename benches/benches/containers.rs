//! Deleting texts (`Doc::delete_text`), on B4 (automerge-paper):
//!
//! - `delete_text/b4_{1x,8x}`: deleting the text of B4 replayed once
//!   (eight times) and committing, with a subscriber (its event reports
//!   the whole text deleted). Baseline in the same run: `to_delta` of that
//!   text (`read_1x` / `read_8x`): what an event holding the text would
//!   cost (the delete's event holds only its length).
//! - `text_lookup/after_{0,1000}_deletes`: `Doc::text` of a name after 0
//!   (1,000) deletes of it, each followed by an edit: the name resolves
//!   through the register in O(log) (no walk over incarnations).
//! - `names/after_{0,16000}_deletes`: `Doc::text_names` and
//!   `Doc::map_names` of a document with three texts and three maps, one
//!   of each deleted and created again 0 (16,000) times: they visit one
//!   incarnation per name shown, so both take the same time.
#![expect(
    missing_docs,
    reason = "criterion_group! generates an undocumented pub fn"
)]

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use traces::Trace;
use weft::Doc;

/// B4 replayed `times` times into text "text" of a new document.
fn b4(trace: &Trace, times: usize) -> Doc {
    let mut doc = Doc::new();
    doc.set_peer_id(1).expect("valid peer id");
    let mut text = doc.text("text");
    for _ in 0..times {
        let offset = text.len();
        for p in trace.patches() {
            if p.del > 0 {
                text.delete(offset + p.pos, p.del).expect("in bounds");
            }
            if !p.ins.is_empty() {
                text.insert(offset + p.pos, &p.ins).expect("in bounds");
            }
        }
    }
    doc.commit();
    doc
}

fn delete_text(c: &mut Criterion) {
    let trace = Trace::load(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../traces/sequential/automerge-paper.json.gz"
    ))
    .expect("the B4 trace is in traces/");
    let mut group = c.benchmark_group("delete_text");
    group.sample_size(10);
    for (name, times) in [("1x", 1), ("8x", 8)] {
        let doc = b4(&trace, times);
        group.bench_function(format!("read_{name}"), |b| {
            b.iter(|| black_box(doc.get_text("text").expect("a text").to_delta()))
        });
        group.bench_function(format!("b4_{name}"), |b| {
            b.iter_batched(
                || {
                    let mut d = doc.fork();
                    // A fork's vectors are full: its first op grows them
                    // (a copy of the history, whatever the op).
                    d.map("other").set("k", 1).expect("writable");
                    d.commit();
                    let sub = d.subscribe(|e| {
                        black_box(e);
                    });
                    (d, sub)
                },
                |(mut d, sub)| {
                    d.delete_text("text").expect("a text");
                    d.commit();
                    (d, sub)
                },
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

fn text_lookup(c: &mut Criterion) {
    let mut group = c.benchmark_group("text_lookup");
    for deletes in [0, 1000] {
        let mut doc = Doc::new();
        doc.text("t").insert(0, "x").expect("in bounds");
        for _ in 0..deletes {
            doc.delete_text("t").expect("a text");
            doc.text("t").insert(0, "x").expect("in bounds");
        }
        doc.commit();
        group.bench_function(format!("after_{deletes}_deletes"), |b| {
            b.iter(|| black_box(doc.text("t").len()))
        });
    }
    group.finish();
}

fn names(c: &mut Criterion) {
    let mut group = c.benchmark_group("names");
    for deletes in [0, 16_000] {
        let mut doc = Doc::new();
        for name in ["a", "b", "c"] {
            doc.text(name).insert(0, "x").expect("in bounds");
            doc.map(name).set("k", 1).expect("a map");
        }
        for _ in 0..deletes {
            doc.delete_text("a").expect("a text");
            doc.text("a").insert(0, "x").expect("in bounds");
            doc.delete_map("a").expect("a map");
            doc.map("a").set("k", 1).expect("a map");
        }
        doc.commit();
        assert_eq!(doc.text_names().count(), 3);
        group.bench_function(format!("after_{deletes}_deletes"), |b| {
            b.iter(|| black_box(doc.text_names().count() + doc.map_names().count()))
        });
    }
    group.finish();
}

criterion_group!(benches, delete_text, text_lookup, names);
criterion_main!(benches);
