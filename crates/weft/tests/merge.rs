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
