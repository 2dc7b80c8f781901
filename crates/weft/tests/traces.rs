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

/// Replays friendsforever: each transaction is typed on a fork of its first
/// parent's document after merging its other parents through updates.
#[test]
fn friendsforever_merges_to_end_content() {
    let trace = Trace::concurrent("friendsforever");
    let n = trace.txns.len();
    let mut children = vec![0usize; n];
    for t in &trace.txns {
        for &p in &t.parents {
            children[p] += 1;
        }
    }
    let mut docs: Vec<Option<Doc>> = (0..n).map(|_| None).collect();
    let mut heads = Vec::new();
    for (i, txn) in trace.txns.iter().enumerate() {
        let mut doc = match txn.parents.split_first() {
            None => Doc::new(),
            Some((&first, rest)) => {
                children[first] -= 1;
                let mut doc = if children[first] == 0 {
                    docs[first].take().unwrap()
                } else {
                    docs[first].as_ref().unwrap().fork()
                };
                for &p in rest {
                    children[p] -= 1;
                    let other = docs[p].as_mut().unwrap();
                    let bytes = other
                        .export(ExportMode::Updates {
                            from: &doc.version(),
                        })
                        .unwrap();
                    let status = doc.import(&bytes).unwrap();
                    assert!(status.pending.is_empty());
                    if children[p] == 0 {
                        docs[p] = None;
                    }
                }
                doc
            }
        };
        doc.set_peer_id(u64::from(txn.agent) + 1).unwrap();
        let mut text = doc.text("t");
        for p in &txn.patches {
            if p.del > 0 {
                text.delete(p.pos, p.del).unwrap();
            }
            if !p.ins.is_empty() {
                text.insert(p.pos, &p.ins).unwrap();
            }
        }
        doc.commit();
        if children[i] == 0 {
            heads.push(i);
        }
        docs[i] = Some(doc);
    }
    let mut out = docs[heads[0]].take().unwrap();
    for &h in &heads[1..] {
        let mut other = docs[h].take().unwrap();
        let bytes = other
            .export(ExportMode::Updates {
                from: &out.version(),
            })
            .unwrap();
        out.import(&bytes).unwrap();
    }
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
