//! Replays every stored editing trace and checks the final text, then
//! round-trips the history through an update into a fresh document.

use traces::Trace;
use weft::{Doc, ExportMode, VersionVector};
use weft_testkit::{full, replay, Replica};

fn check_sequential(name: &str) {
    let trace = Trace::sequential(name);
    let mut doc = Doc::new();
    doc.set_peer_id(1).unwrap();
    replay(&mut doc, &trace);
    assert_eq!(
        doc.text("t").to_string(),
        trace.end_content,
        "{name}: replay"
    );
    doc.assert_invariants();

    let bytes = doc
        .export(ExportMode::Updates {
            from: &VersionVector::new(),
        })
        .unwrap();
    let mut copy = Doc::new();
    copy.import(&bytes).unwrap();
    copy.assert_invariants();
    assert_eq!(
        copy.text("t").to_string(),
        trace.end_content,
        "{name}: import"
    );
    assert_eq!(copy.version(), doc.version());
    assert_eq!(copy.frontiers(), doc.frontiers());
}

#[test]
fn automerge_paper_reproduces_end_content() {
    check_sequential("automerge-paper");
}

#[test]
fn every_sequential_trace_reproduces_end_content() {
    for name in traces::sequential_names() {
        if name != "automerge-paper" {
            check_sequential(&name);
        }
    }
}

/// Replays friendsforever: each transaction is typed on a fork of its first
/// parent's document after merging its other parents through updates.
#[test]
fn friendsforever_merges_to_end_content() {
    let trace = Trace::concurrent("friendsforever");
    let Replica(mut out) = trace.replay_concurrent::<Replica>().unwrap();
    out.assert_invariants();
    assert_eq!(out.text("t").to_string(), trace.end_content);

    // The whole merged history also loads into a fresh document.
    let mut copy = Doc::new();
    copy.import(&full(&out)).unwrap();
    assert_eq!(copy.text("t").to_string(), trace.end_content);
    copy.assert_invariants();
}
