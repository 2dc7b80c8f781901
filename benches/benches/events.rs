//! Change events: what a subscriber ([`Doc::subscribe`]) costs, each
//! case timed with and without one in the same run.
//!
//! - `events_import`: the automerge-paper ("B4") history as one update
//!   imported into an empty document; the subscriber applies the event to
//!   a `Vec<Delta>` mirror with [`weft::TextDiff::apply_to`].
//! - `events_import_nonempty`: the same import into a document that
//!   already holds one char of another peer, so the event is computed as
//!   a change of a non-empty text.
//! - `events_keystroke`: one remote keystroke (a one-char update of
//!   another peer, in the middle of the text) imported into a fork of the
//!   final B4 document (`x1`) and of B4 replayed 8 times (`x8`, 8 times
//!   the text and history); the subscriber applies the event to a rope
//!   mirror. With events in O(log n) the x8 time stays close to x1.
//!   `cold`: the document as typed locally, whose first remote op builds
//!   the text's id index (O(n log n), with or without subscriber);
//!   `warm`: a live document's case, the keystroke alone (see
//!   `keystroke_case`).
//! - `events_typing`: B4 typed locally with a commit after every patch;
//!   the subscriber applies each event to a rope mirror (as `replay
//!   --events`).
#![expect(
    missing_docs,
    reason = "criterion_group! generates an undocumented pub fn"
)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};
use jumprope::JumpRope;
use traces::Trace;
use weft::{Delta, Doc, ExportMode, Subscription};

/// The peer of the remote edits (the trace's documents have random ids).
const REMOTE_PEER: u64 = 0x5eed_0001;
/// The peer of the one char of `events_import_nonempty`.
const OTHER_PEER: u64 = 0x5eed_0002;
/// The peer of the remote op each warm fork imports before the timing.
const PRIMER_PEER: u64 = 0x5eed_0003;

type DeltaMirror = Arc<Mutex<Vec<Delta>>>;
type RopeMirror = Arc<Mutex<JumpRope>>;

/// Subscribes a callback applying every event to a `Vec<Delta>` mirror
/// holding `initial`.
fn delta_mirror(doc: &mut Doc, initial: Vec<Delta>) -> (Subscription, DeltaMirror) {
    let mirror = Arc::new(Mutex::new(initial));
    let m = Arc::clone(&mirror);
    let sub = doc.subscribe(move |event| {
        let mut m = m.lock().expect("mirror lock");
        for diff in &event.texts {
            diff.apply_to(&mut m, event.unit)
                .expect("event fits the mirror");
        }
    });
    (sub, mirror)
}

/// Subscribes a callback applying every event to a rope mirror holding
/// `initial`.
fn rope_mirror(doc: &mut Doc, initial: &str) -> (Subscription, RopeMirror) {
    let mirror = Arc::new(Mutex::new(JumpRope::from(initial)));
    let m = Arc::clone(&mirror);
    let sub = doc.subscribe(move |event| {
        let mut rope = m.lock().expect("mirror lock");
        for diff in &event.texts {
            benches::apply_to_rope(&mut rope, &diff.delta);
        }
    });
    (sub, mirror)
}

/// A document holding one char ("x") of [`OTHER_PEER`], committed.
fn one_char_doc() -> Doc {
    let mut doc = Doc::new();
    doc.set_peer_id(OTHER_PEER).expect("valid peer");
    doc.text("text").insert(0, "x").expect("insert at 0");
    doc.commit();
    doc
}

fn import(c: &mut Criterion) {
    let trace = Trace::sequential("automerge-paper");
    let bytes = benches::full_update(&mut benches::replay(&trace));

    // Check once, outside the timings, that the mirrors follow.
    let mut doc = Doc::new();
    let (sub, mirror) = delta_mirror(&mut doc, Vec::new());
    doc.import(&bytes).expect("valid update");
    assert_eq!(*mirror.lock().expect("lock"), doc.text("text").to_delta());
    assert_eq!(doc.text("text").to_string(), trace.end_content);
    drop(sub);
    let mut doc = one_char_doc();
    let (sub, mirror) = delta_mirror(&mut doc, vec![Delta::insert("x")]);
    doc.import(&bytes).expect("valid update");
    assert_eq!(*mirror.lock().expect("lock"), doc.text("text").to_delta());
    assert_eq!(
        doc.text("text").len(),
        trace.end_content.chars().count() + 1
    );
    drop(sub);

    let mut group = c.benchmark_group("events_import");
    group.sample_size(20);
    group.bench_function("without_subscriber", |b| {
        b.iter_with_large_drop(|| {
            let mut doc = Doc::new();
            doc.import(&bytes).expect("valid update");
            doc
        })
    });
    group.bench_function("with_subscriber", |b| {
        b.iter_with_large_drop(|| {
            let mut doc = Doc::new();
            let (sub, mirror) = delta_mirror(&mut doc, Vec::new());
            doc.import(&bytes).expect("valid update");
            (doc, sub, mirror)
        })
    });
    group.finish();

    let mut group = c.benchmark_group("events_import_nonempty");
    group.sample_size(20);
    group.bench_function("without_subscriber", |b| {
        b.iter_batched(
            one_char_doc,
            |mut doc| {
                doc.import(&bytes).expect("valid update");
                doc
            },
            BatchSize::LargeInput,
        )
    });
    group.bench_function("with_subscriber", |b| {
        b.iter_batched(
            || {
                let mut doc = one_char_doc();
                let (sub, mirror) = delta_mirror(&mut doc, vec![Delta::insert("x")]);
                (doc, sub, mirror)
            },
            |(mut doc, sub, mirror)| {
                doc.import(&bytes).expect("valid update");
                (doc, sub, mirror)
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

/// One case of `events_keystroke`: B4 applied `times` times.
struct Keystroke {
    /// The final document, as typed locally.
    cold: Doc,
    /// The same after one remote op (its id index built).
    warm: Doc,
    /// A second remote op for each fork of `warm`, imported before the
    /// timing.
    primer: Vec<u8>,
    /// The document's text (none of the remote ops changes it).
    text: String,
    /// The keystroke: a one-char update of another peer typing in the
    /// middle of the text.
    update: Vec<u8>,
}

/// Builds the documents and updates of a keystroke case.
///
/// A text builds its seq -> leaf id index on the first remote op it
/// integrates (O(n log n), once), and a fork copies it only if it exists.
/// The trace is typed locally, so a fork of the plain final document
/// ("cold") pays for that index in its first import, subscriber or not.
/// A "warm" fork is of a document that has imported a remote op before
/// (its index is copied), and has itself imported another concurrent one
/// before the timing, as a live document that syncs has. The remote ops
/// are a char inserted at the end and deleted again, so the text stays
/// the same. (Measured: a warm import still copies one of the log's
/// vectors whole, in `merge::apply`'s reserve, so x8 is not yet near x1.)
fn keystroke_case(trace: &Trace, times: usize) -> Keystroke {
    let mut cold = benches::replay_times(trace, times);
    cold.commit();
    let text = cold.text("text").to_string();
    let len = text.chars().count();
    let mut remote = cold.fork();
    remote.set_peer_id(REMOTE_PEER).expect("valid peer");
    remote
        .text("text")
        .insert(len / 2, "k")
        .expect("insert in the middle");
    remote.commit();
    let update = remote
        .export(ExportMode::Updates {
            from: &cold.version(),
        })
        .expect("updates export cannot fail");

    let mut warm = cold.fork();
    // Both concurrent with the rest, as the keystroke is (an update that
    // only extends the document's version takes a shorter path).
    let remote_op = |peer: u64| {
        let mut other = cold.fork();
        other.set_peer_id(peer).expect("valid peer");
        other
            .text("text")
            .insert(len, "w")
            .expect("insert at the end");
        other.text("text").delete(len, 1).expect("delete it again");
        other.commit();
        other
            .export(ExportMode::Updates {
                from: &cold.version(),
            })
            .expect("updates export cannot fail")
    };
    let warming = remote_op(OTHER_PEER);
    let primer = remote_op(PRIMER_PEER);
    warm.import(&warming).expect("valid update");
    assert_eq!(warm.text("text").to_string(), text);

    // Check once that the event reaches the mirror.
    for (base, primed) in [(&cold, false), (&warm, true)] {
        let mut doc = base.fork();
        if primed {
            doc.import(&primer).expect("valid update");
        }
        let (sub, mirror) = rope_mirror(&mut doc, &text);
        doc.import(&update).expect("valid update");
        let got = doc.text("text").to_string();
        assert_eq!(mirror.lock().expect("lock").to_string(), got);
        assert_eq!(got.chars().count(), len + 1);
        drop(sub);
    }
    Keystroke {
        cold,
        warm,
        primer,
        text,
        update,
    }
}

fn keystroke(c: &mut Criterion) {
    let trace = Trace::sequential("automerge-paper");
    let mut group = c.benchmark_group("events_keystroke");
    // Each iteration forks the document outside the timing (PerIteration:
    // one fork alive at a time); criterion sizes the run by the wall time
    // of the warm-up, forks included.
    group.warm_up_time(Duration::from_millis(300));
    group.measurement_time(Duration::from_secs(2));
    for times in [1, 8] {
        let case = keystroke_case(&trace, times);
        let (text, update) = (&case.text, &case.update);
        for (state, base, primer) in [
            ("cold", &case.cold, None),
            ("warm", &case.warm, Some(&case.primer)),
        ] {
            let fork = || {
                let mut doc = base.fork();
                if let Some(primer) = primer {
                    doc.import(primer).expect("valid update");
                }
                doc
            };
            let id = format!("{state}_x{times}");
            group.bench_with_input(
                BenchmarkId::new("without_subscriber", &id),
                update,
                |b, update| {
                    b.iter_batched(
                        fork,
                        |mut doc| {
                            doc.import(update).expect("valid update");
                            doc
                        },
                        BatchSize::PerIteration,
                    )
                },
            );
            group.bench_with_input(
                BenchmarkId::new("with_subscriber", &id),
                update,
                |b, update| {
                    b.iter_batched(
                        || {
                            let mut doc = fork();
                            let (sub, mirror) = rope_mirror(&mut doc, text);
                            (doc, sub, mirror)
                        },
                        |(mut doc, sub, mirror)| {
                            doc.import(update).expect("valid update");
                            (doc, sub, mirror)
                        },
                        BatchSize::PerIteration,
                    )
                },
            );
        }
    }
    group.finish();
}

/// B4 typed into a new document with a commit after every patch, with a
/// rope mirror subscribed if `subscribe`.
fn type_committing(trace: &Trace, subscribe: bool) -> (Doc, Option<(Subscription, RopeMirror)>) {
    let mut doc = Doc::new();
    let mirror = subscribe.then(|| rope_mirror(&mut doc, ""));
    benches::type_committing(&mut doc, trace);
    (doc, mirror)
}

fn typing(c: &mut Criterion) {
    let trace = Trace::sequential("automerge-paper");
    let (mut doc, mirror) = type_committing(&trace, true);
    let (_, mirror) = mirror.expect("subscribed");
    assert_eq!(mirror.lock().expect("lock").to_string(), trace.end_content);
    assert_eq!(doc.text("text").to_string(), trace.end_content);

    let mut group = c.benchmark_group("events_typing");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(8));
    group.bench_function("without_subscriber", |b| {
        b.iter_with_large_drop(|| type_committing(&trace, false))
    });
    group.bench_function("with_subscriber", |b| {
        b.iter_with_large_drop(|| type_committing(&trace, true))
    });
    group.finish();
}

/// A live document's remote keystrokes: one document (its id index built
/// and its vectors grown by earlier imports) imports one new keystroke of
/// another peer per iteration, made outside the timing; no fork, so no
/// clone's first reallocation is timed. With a rope mirror subscribed.
fn live_keystroke(c: &mut Criterion) {
    let trace = Trace::sequential("automerge-paper");
    let mut group = c.benchmark_group("events_keystroke_live");
    group.measurement_time(Duration::from_secs(2));
    for times in [1usize, 8] {
        let mut doc = benches::replay_times(&trace, times);
        let text = doc.text("text").to_string();
        let mut peer = doc.fork();
        peer.set_peer_id(OTHER_PEER + 1).expect("valid id");
        let (_sub, mirror) = rope_mirror(&mut doc, &text);
        let mut n = 0usize;
        group.bench_function(BenchmarkId::new("with_subscriber", times), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let from = doc.version();
                    let mid = peer.text("text").len() / 2 + n % 7;
                    n += 1;
                    peer.text("text").insert(mid, "k").expect("in bounds");
                    peer.commit();
                    let update = peer
                        .export(ExportMode::Updates { from: &from })
                        .expect("exports");
                    let start = std::time::Instant::now();
                    doc.import(&update).expect("valid update");
                    total += start.elapsed();
                }
                total
            })
        });
        assert_eq!(
            mirror.lock().expect("mirror").to_string(),
            doc.text("text").to_string()
        );
    }
    group.finish();
}

criterion_group!(benches, import, keystroke, live_keystroke, typing);
criterion_main!(benches);
