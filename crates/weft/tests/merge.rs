//! The merge engine under the deliveries real networks make: changes that
//! arrive partly known, whole histories re-sent, failed imports that must
//! change nothing, and pending updates that outlive a snapshot.

mod common;

use weft::{Doc, ExportMode, VersionVector};

fn doc(peer: u64) -> Doc {
    let mut d = Doc::new();
    d.set_peer_id(peer).unwrap();
    d
}

fn all(d: &mut Doc) -> Vec<u8> {
    d.export(ExportMode::Updates {
        from: &VersionVector::new(),
    })
    .unwrap()
}

/// Peer A types and later marks a link; peer B, having seen A's text,
/// marks an overlapping link. A replica that imports A's history then B's
/// and one that imports B's (which repeats A's ops) then A's must agree on
/// the winner, and on every op's Lamport timestamp and deps: B's history
/// holds A's change whose tail the second replica already has.
#[test]
fn regression_a_change_arriving_partly_known_keeps_its_lamport() {
    for (pa, pb) in [(1, 2), (2, 1)] {
        let mut a = doc(pa);
        a.text("t").insert(0, "The fox jumped.").unwrap();
        let mut b = doc(pb);
        b.import(&all(&mut a)).unwrap();
        a.text("t").mark(0..7, "link", "x").unwrap();
        b.text("t").mark(4..14, "link", "y").unwrap();
        let from_a = all(&mut a);
        let from_b = all(&mut b);

        let mut c = doc(10);
        c.import(&from_a).unwrap();
        c.import(&from_b).unwrap();
        let mut d = doc(11);
        d.import(&from_b).unwrap();
        d.import(&from_a).unwrap();
        for r in [&mut c, &mut d] {
            r.assert_invariants();
        }
        assert_eq!(c.text("t").to_delta(), d.text("t").to_delta(), "{pa} {pb}");
        assert_eq!(c.history_runs().unwrap(), d.history_runs().unwrap());
        a.import(&from_b).unwrap();
        b.import(&from_a).unwrap();
        let history = c.history_runs().unwrap();
        for r in [&mut a, &mut b] {
            assert_eq!(r.history_runs().unwrap(), history);
            assert_eq!(r.text("t").to_delta(), c.text("t").to_delta());
        }
    }
}

/// Everything a caller can observe of a document, to show an import that
/// failed changed nothing.
fn observe(
    d: &mut Doc,
) -> (
    Vec<String>,
    Vec<Vec<weft::Delta>>,
    VersionVector,
    weft::Frontiers,
    Vec<weft::IdSpan>,
    Vec<u8>,
    Vec<u8>,
) {
    let names: Vec<String> = d.text_names().map(str::to_owned).collect();
    let deltas = names.iter().map(|n| d.text(n).to_delta()).collect();
    let version = d.version();
    let frontiers = d.frontiers();
    let pending = d.pending_spans();
    let updates = all(d);
    let snapshot = d.export(ExportMode::Snapshot).unwrap();
    (
        names, deltas, version, frontiers, pending, updates, snapshot,
    )
}

/// A snapshot with a valid checksum whose history conflicts with the
/// receiver (a peer id reused for different ops) is refused, and the
/// receiver is exactly as before: no new text names, same exports.
#[test]
fn regression_a_failed_snapshot_merge_changes_nothing() {
    let mut x = doc(1);
    x.text("t").insert(0, "hello").unwrap();
    x.text("t").mark(0..2, "bold", true).unwrap();
    let mut parked = doc(3);
    parked.import(&all(&mut x)).unwrap();
    parked.text("t").insert(0, "later ").unwrap();
    let mut y = doc(1); // the same peer id, different ops
    y.text("t")
        .insert(0, "a much longer text than x has")
        .unwrap();
    y.text("other").insert(0, "y's own text").unwrap();
    y.text("t").delete(0, 10).unwrap();
    let snapshot = y.export(ExportMode::Snapshot).unwrap();
    // A pending update in x too: the later part of `parked`'s history.
    let mut early = doc(4);
    early.import(&all(&mut parked)).unwrap();
    early.text("t").insert(0, "!").unwrap();
    let v = parked.version();
    x.import(&early.export(ExportMode::Updates { from: &v }).unwrap())
        .unwrap();
    assert!(!x.pending_spans().is_empty());

    let before = observe(&mut x);
    assert!(x.import(&snapshot).is_err());
    assert_eq!(observe(&mut x), before);
    x.assert_invariants();
    // And the document keeps working.
    x.text("t").insert(0, ">").unwrap();
    x.import(&all(&mut parked)).unwrap();
    assert!(x.pending_spans().is_empty());
    assert_eq!(x.text("t").to_string(), ">!later hello");
}
