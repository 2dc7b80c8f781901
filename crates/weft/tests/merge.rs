//! The merge engine under the deliveries real networks make: changes that
//! arrive partly known, whole histories re-sent, failed imports that must
//! change nothing, and pending updates that outlive a snapshot.

use weft::{Delta, Doc, Error, ExportMode};
use weft_testkit::{body, doc, full, observe, varint, wrap, Rng};

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
        b.import(&full(&a)).unwrap();
        a.text("t").mark(0..7, "link", "x").unwrap();
        b.text("t").mark(4..14, "link", "y").unwrap();
        let from_a = full(&a);
        let from_b = full(&b);

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

/// A snapshot with a valid checksum whose history conflicts with the
/// receiver (a peer id reused for different ops) is refused, and the
/// receiver is exactly as before: no new text names, same exports.
#[test]
fn regression_a_failed_snapshot_merge_changes_nothing() {
    let mut x = doc(1);
    x.text("t").insert(0, "hello").unwrap();
    x.text("t").mark(0..2, "bold", true).unwrap();
    let mut parked = doc(3);
    parked.import(&full(&x)).unwrap();
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
    early.import(&full(&parked)).unwrap();
    early.text("t").insert(0, "!").unwrap();
    let v = parked.version();
    x.import(&early.export(ExportMode::Updates { from: &v }).unwrap())
        .unwrap();
    assert!(!x.pending_spans().is_empty());

    let before = observe(&x);
    assert!(x.import(&snapshot).is_err());
    assert_eq!(observe(&x), before);
    x.assert_invariants();
    // And the document keeps working.
    x.text("t").insert(0, ">").unwrap();
    x.import(&full(&parked)).unwrap();
    assert!(x.pending_spans().is_empty());
    assert_eq!(x.text("t").to_string(), ">!later hello");
}

/// A document whose history has room for only `room` more ops: peer 5
/// owns all but a few of the 2^32 ids (as tombstones of one forged run),
/// then "hello" is typed by peer 6, and the document edits as peer 5.
fn nearly_full(room: u32) -> Doc {
    let n = u64::from(u32::MAX - 5 - room);
    let mut changes = Vec::new();
    for v in [1, 0, 1, n, 0] {
        varint(&mut changes, v);
    }
    let mut ops = vec![4u8]; // insert without content, length follows
    varint(&mut ops, n);
    ops.extend_from_slice(&[0, 0]);
    let mut d = doc(6);
    d.import(&wrap(&body(&[5], &["t"], &changes, &ops, "")))
        .unwrap();
    d.text("t").insert(0, "hello").unwrap();
    d.set_peer_id(5).unwrap();
    d
}

/// `apply_delta` and `splice` say nothing changes on error: an error at
/// their last step (no ids left) must leave the document as it was, not
/// with the earlier steps applied.
#[test]
fn regression_multi_step_edits_are_atomic() {
    let mut d = nearly_full(10);
    let before = observe(&d);
    let delta = [
        Delta::retain_with(2, [("bold", true)]),
        Delta::insert("0123456789"),
    ];
    assert!(matches!(
        d.text("t").apply_delta(&delta),
        Err(Error::HistoryFull | Error::CounterOverflow { .. })
    ));
    assert_eq!(observe(&d), before);
    assert!(d.text("t").splice(1, 3, "0123456789").is_err());
    assert_eq!(observe(&d), before);
    d.assert_invariants();
    // What fits still works.
    d.text("t").splice(1, 3, "a").unwrap();
    d.text("t")
        .apply_delta(&[Delta::retain_with(1, [("bold", true)])])
        .unwrap();
    assert_eq!(
        d.text("t").to_delta(),
        vec![
            Delta::insert_with("h", [("bold", true)]),
            Delta::insert("ao")
        ]
    );
}

/// A document holding a pending update exports a snapshot that carries
/// it: reopened from the snapshot (lazily, or merged into a live
/// document), the update is still pending and applies when its
/// dependencies arrive.
#[test]
fn regression_snapshots_carry_pending_updates() {
    let mut a = doc(1);
    a.text("t").insert(0, "ab").unwrap();
    let first = full(&a);
    let v = a.version();
    a.text("t").insert(2, "cd").unwrap();
    a.text("t").mark(0..4, "bold", true).unwrap();
    let second = a.export(ExportMode::Updates { from: &v }).unwrap();

    let mut holder = doc(2);
    holder.text("other").insert(0, "mine").unwrap();
    let status = holder.import(&second).unwrap();
    assert_eq!(status.pending, vec![weft::IdSpan::new(1, 2..6)]);
    let snapshot = holder.export(ExportMode::Snapshot).unwrap();

    let mut reopened = Doc::new();
    let status = reopened.import(&snapshot).unwrap();
    assert_eq!(status.pending, vec![weft::IdSpan::new(1, 2..6)]);
    assert_eq!(reopened.pending_spans(), holder.pending_spans());
    assert!(reopened.is_lazy());
    // Export -> import -> export is byte-identical, pending set included.
    assert_eq!(reopened.export(ExportMode::Snapshot).unwrap(), snapshot);

    let mut live = doc(3);
    live.text("t").insert(0, "x").unwrap();
    live.import(&snapshot).unwrap();
    assert_eq!(live.pending_spans(), holder.pending_spans());

    for d in [&mut reopened, &mut live] {
        let status = d.import(&first).unwrap();
        assert!(status.applied.contains(&weft::IdSpan::new(1, 2..6)));
        assert!(d.pending_spans().is_empty());
        d.assert_invariants();
    }
    assert_eq!(reopened.text("t").to_delta(), a.text("t").to_delta());
    assert_eq!(live.text("t").to_string().len(), 5);
}

/// 2,000 one-char updates, each exported from the previous version and
/// delivered newest first: all wait, and the first releases the chain;
/// duplicates of a parked update are kept once.
#[test]
fn a_chain_delivered_newest_first_applies_at_once() {
    let mut a = doc(1);
    let mut chain = Vec::new();
    for i in 0..2000 {
        let v = a.version();
        a.text("t").insert(i % 7, "x").unwrap();
        chain.push(a.export(ExportMode::Updates { from: &v }).unwrap());
    }
    let mut b = doc(2);
    for bytes in chain.iter().skip(1).rev() {
        assert!(b.import(bytes).unwrap().applied.is_empty());
        assert!(b.import(bytes).unwrap().applied.is_empty());
    }
    assert_eq!(b.pending_spans(), vec![weft::IdSpan::new(1, 1..2000)]);
    let status = b.import(&chain[0]).unwrap();
    assert_eq!(status.applied.len(), 2000);
    assert!(b.pending_spans().is_empty());
    assert_eq!(b.text("t").to_string(), a.text("t").to_string());
    assert_eq!(b.history_runs().unwrap(), a.history_runs().unwrap());
}

/// A snapshot merged into a live document (from its decoded history, no
/// update bytes in between) gives the same document as the same history
/// sent as an update: texts, deltas, history, pending set.
#[test]
fn a_snapshot_merges_like_its_history() {
    let mut a = doc(1);
    a.text("t").insert(0, "Hello wörld 😀").unwrap();
    a.text("t").mark(0..5, "bold", true).unwrap();
    let mut b = a.fork();
    b.set_peer_id(2).unwrap();
    b.text("t").delete(2, 4).unwrap();
    b.text("t").mark(1..6, "link", "x").unwrap();
    b.text("notes").insert(0, "n").unwrap();
    a.text("t").insert(3, "!!").unwrap();
    let mut via_snapshot = a.clone();
    let mut via_update = a.clone();
    via_snapshot
        .import(&b.export(ExportMode::Snapshot).unwrap())
        .unwrap();
    via_update.import(&full(&b)).unwrap();
    for n in ["t", "notes"] {
        assert_eq!(
            via_snapshot.text(n).to_delta(),
            via_update.text(n).to_delta()
        );
    }
    assert_eq!(
        via_snapshot.history_runs().unwrap(),
        via_update.history_runs().unwrap()
    );
    assert_eq!(
        weft_testkit::observe(&via_snapshot),
        weft_testkit::observe(&via_update)
    );
    via_snapshot.assert_invariants();
}

/// Random typing by one peer into two texts: runs of mixed-width chars
/// (ASCII, two- and three-byte, and astral ones that take two UTF-16
/// units) typed anywhere, so later runs split earlier ones, and deletions
/// of ranges.
fn type_randomly(d: &mut Doc, rng: &mut Rng, edits: usize) {
    for _ in 0..edits {
        let mut t = d.text(["t", "u"][rng.below(2)]);
        let len = t.len();
        if len > 0 && rng.below(3) == 0 {
            let pos = rng.below(len);
            let n = 1 + rng.below((len - pos).min(6));
            t.delete(pos, n).unwrap();
        } else {
            let s = rng.text(5);
            t.insert(rng.below(len + 1), &s).unwrap();
        }
    }
}

/// What a replica shows, whatever way its history arrived: the texts in
/// every unit (and where positions land), deltas, version and history.
/// (Exports are not compared: they follow the order ops arrived in.)
fn shown(d: &mut Doc) -> impl PartialEq + std::fmt::Debug {
    let texts: Vec<_> = ["t", "u"]
        .iter()
        .map(|&n| {
            let t = d.text(n);
            let conv: Vec<usize> = (0..=t.len())
                .step_by(7)
                .map(|p| {
                    t.convert_pos(p, weft::Unit::Char, weft::Unit::Utf16)
                        .unwrap()
                })
                .collect();
            let delta = format!("{:?}", t.to_delta());
            (t.to_string(), t.len_utf8(), t.len_utf16(), conv, delta)
        })
        .collect();
    (texts, d.version(), d.history_runs().unwrap())
}

/// A whole history imported into an empty document takes the
/// fast-forward (the texts are built once from linked lists); imported on
/// top of a prefix it takes the general path. Both must equal the
/// original in everything observable, and stay equal when concurrent
/// edits from another peer merge into all three afterwards (so the trees
/// the fast-forward builds hold the same origins).
#[test]
fn a_whole_history_into_an_empty_doc_equals_the_general_path() {
    for seed in 0..12u64 {
        let mut rng = Rng::new(seed);
        let mut a = doc(1);
        type_randomly(&mut a, &mut rng, 60);
        let prefix = full(&a);
        let mut other = doc(2);
        other.import(&prefix).unwrap();
        type_randomly(&mut a, &mut rng, 140);
        type_randomly(&mut other, &mut rng, 40);
        let whole = full(&a);

        let mut fast = doc(3);
        fast.import(&whole).unwrap();
        let mut general = doc(4);
        general.import(&prefix).unwrap();
        general.import(&whole).unwrap();
        for r in [&mut fast, &mut general] {
            r.assert_invariants();
            assert_eq!(shown(r), shown(&mut a), "seed {seed}");
            // Same arrival order as `a`: the same snapshot.
            let snapshot = r.export(ExportMode::Snapshot).unwrap();
            assert_eq!(snapshot, a.export(ExportMode::Snapshot).unwrap());
        }
        let concurrent = full(&other);
        for r in [&mut a, &mut fast, &mut general] {
            r.import(&concurrent).unwrap();
            r.assert_invariants();
        }
        assert_eq!(shown(&mut fast), shown(&mut a), "seed {seed}");
        assert_eq!(shown(&mut general), shown(&mut a), "seed {seed}");
    }
}

/// A history holding concurrent edits at the same places: the
/// fast-forward holds for its first ops and then meets an insert whose
/// origins have other chars between them, replays what it recorded
/// through the general path, and leaves the rest to it. The result must
/// equal the replicas that made the edits.
#[test]
fn a_concurrent_history_into_an_empty_doc_falls_back_midway() {
    for seed in 0..12u64 {
        let mut rng = Rng::new(100 + seed);
        let mut a = doc(1);
        type_randomly(&mut a, &mut rng, 30);
        let mut b = doc(2);
        b.import(&full(&a)).unwrap();
        for _ in 0..4 {
            type_randomly(&mut a, &mut rng, 10);
            type_randomly(&mut b, &mut rng, 10);
            let (from_a, from_b) = (full(&a), full(&b));
            a.import(&from_b).unwrap();
            b.import(&from_a).unwrap();
        }
        let whole = full(&a);
        let mut fresh = doc(3);
        fresh.import(&whole).unwrap();
        fresh.assert_invariants();
        let mut general = doc(4);
        general.import(&full(&b)).unwrap();
        for r in [&mut b, &mut fresh, &mut general] {
            assert_eq!(shown(r), shown(&mut a), "seed {seed}");
        }
    }
}
