//! Replays every stored editing trace and checks the final text, then
//! round-trips the history through an update into a fresh document.

use traces::Trace;
use weft::{Doc, ExportMode, VersionVector};

/// Applies every patch of a sequential trace to text `"t"` of `doc`.
fn replay(doc: &mut Doc, trace: &Trace) {
    let mut text = doc.text("t");
    for p in trace.patches() {
        if p.del > 0 {
            text.delete(p.pos, p.del).unwrap();
        }
        if !p.ins.is_empty() {
            text.insert(p.pos, &p.ins).unwrap();
        }
    }
}

fn check_sequential(name: &str) {
    let trace = Trace::sequential(name);
    let mut doc = Doc::new();
    doc.set_peer_id(1).unwrap();
    replay(&mut doc, &trace);
    assert_eq!(doc.text("t").to_string(), trace.end_content, "{name}: replay");
    doc.assert_invariants();

    let bytes = doc
        .export(ExportMode::Updates {
            from: &VersionVector::new(),
        })
        .unwrap();
    let mut copy = Doc::new();
    copy.import(&bytes).unwrap();
    copy.assert_invariants();
    assert_eq!(copy.text("t").to_string(), trace.end_content, "{name}: import");
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
