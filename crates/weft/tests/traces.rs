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

/// A document that merges through exported updates.
struct Replica(Doc);

impl traces::Replica for Replica {
    type Error = weft::Error;

    fn empty() -> Self {
        Replica(Doc::new())
    }

    fn fork(&self) -> Self {
        Replica(self.0.fork())
    }

    fn merge_from(&mut self, other: &mut Self) -> Result<(), weft::Error> {
        let bytes = other.0.export(ExportMode::Updates {
            from: &self.0.version(),
        })?;
        let status = self.0.import(&bytes)?;
        assert!(status.pending.is_empty(), "parents are merged in order");
        Ok(())
    }

    fn apply(&mut self, txn: &traces::Txn) -> Result<(), weft::Error> {
        self.0.set_peer_id(u64::from(txn.agent) + 1)?;
        let mut text = self.0.text("t");
        for p in &txn.patches {
            text.delete(p.pos, p.del)?;
            text.insert(p.pos, &p.ins)?;
        }
        Ok(())
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
    copy.import(&all(&mut out)).unwrap();
    assert_eq!(copy.text("t").to_string(), trace.end_content);
    copy.assert_invariants();
}

fn all(doc: &mut Doc) -> Vec<u8> {
    doc.export(ExportMode::Updates {
        from: &VersionVector::new(),
    })
    .unwrap()
}
