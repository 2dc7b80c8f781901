//! Shallow snapshots: the state plus only the history after a root
//! version. Round trips on B4 and random histories, merges with peers
//! whose edits came after the root (also concurrent to the kept
//! history), refusal of what needs the trimmed history, and damaged
//! bytes.

use std::collections::BTreeMap;
use traces::Trace;
use weft::{Doc, Error, ExportMode, Frontiers, VersionVector};
use weft_testkit::{replay, Rng};
use weft_testkit::{Action, Random};

fn shallow(doc: &Doc, at: &Frontiers) -> Doc {
    let bytes = doc.export(ExportMode::ShallowSnapshot(at)).unwrap();
    let mut copy = Doc::new();
    copy.import(&bytes).unwrap();
    copy
}

/// Peer 1's document holding `text` in "t", committed.
fn typed(text: &str) -> Doc {
    let mut a = weft_testkit::doc(1);
    a.text("t").insert(0, text).unwrap();
    a.commit();
    a
}

/// A fork of `doc` editing as peer `peer`.
fn fork_as(doc: &Doc, peer: u64) -> Doc {
    let mut f = doc.fork();
    f.set_peer_id(peer).unwrap();
    f
}

fn delta(doc: &Doc) -> Vec<weft::Delta> {
    doc.get_text("t").map(|t| t.to_delta()).unwrap_or_default()
}

/// Ops since `from` of `src` into `dst`.
fn send(dst: &mut Doc, src: &Doc) {
    let bytes = src
        .export(ExportMode::Updates {
            from: &dst.version(),
        })
        .unwrap();
    dst.import(&bytes).unwrap();
}

#[test]
fn b4_shallow_snapshot_round_trips_and_merges() {
    let trace = Trace::sequential("automerge-paper");
    let mut doc = Doc::new();
    doc.set_peer_id(1).unwrap();
    replay(&mut doc, &trace);
    let bytes = doc
        .export(ExportMode::ShallowSnapshot(&doc.frontiers()))
        .unwrap();
    let full = doc.export(ExportMode::Snapshot).unwrap();
    assert!(
        bytes.len() < full.len() / 2,
        "{} vs {}",
        bytes.len(),
        full.len()
    );
    // The bar: Loro's shallow snapshot of B4 is 63,352 bytes.
    assert!(bytes.len() <= 63_352, "{} bytes", bytes.len());

    let mut copy = Doc::new();
    copy.import(&bytes).unwrap();
    assert_eq!(copy.text("t").to_string(), trace.end_content);
    assert_eq!(copy.version(), doc.version());
    assert_eq!(copy.frontiers(), doc.frontiers());
    assert_eq!(copy.shallow_since(), Some(doc.frontiers()));
    // Re-exported: the same bytes.
    assert_eq!(copy.export(ExportMode::Snapshot).unwrap(), bytes);

    // Both sides edit concurrently, and merge.
    copy.set_peer_id(2).unwrap();
    copy.text("t").insert(100, "[shallow]").unwrap();
    copy.text("t").delete(5_000, 300).unwrap();
    doc.text("t").insert(100, "[full]").unwrap();
    doc.text("t").delete(5_100, 50).unwrap();
    let (va, vb) = (doc.version(), copy.version());
    let to_copy = doc.export(ExportMode::Updates { from: &vb }).unwrap();
    let to_doc = copy.export(ExportMode::Updates { from: &va }).unwrap();
    copy.import(&to_copy).unwrap();
    doc.import(&to_doc).unwrap();
    assert_eq!(copy.text("t").to_string(), doc.text("t").to_string());
    assert_eq!(copy.version(), doc.version());
}

/// Random three-peer runs; at the end a shallow copy taken at a version
/// the replicas held, and a shallow copy of that one, join, and everyone
/// edits on and syncs: all converge, with the same history after the
/// root, and a full replica at the root takes the rest from a shallow
/// one. The shallow copy shows every recorded version after its root
/// (fork_at, checkout, diffs both ways, SnapshotAt, re-trimming) as the
/// full replica does, or, only for a version holding ops concurrent to
/// the root, refuses with `TrimmedHistory`.
#[test]
fn random_shallow_replicas_converge_and_show_later_versions() {
    fn edits(a: &mut Action) -> bool {
        match a {
            Action::Delete { len, .. } => {
                *len %= 4;
                true
            }
            Action::Insert { .. }
            | Action::Mark { .. }
            | Action::MapSet { .. }
            | Action::Commit { .. }
            | Action::Sync { .. } => true,
            _ => false,
        }
    }
    let stats = Random {
        seeds: 40,
        keep: edits,
        ..Random::new(80)
    }
    .run(0x5a11);
    assert!(stats.shallow_versions > 100, "{stats:?}");
}

/// Every op of the history: id -> (Lamport, what it depends on), however
/// the changes are cut.
fn ops(doc: &Doc) -> BTreeMap<(u64, u32), (u32, Vec<weft::OpId>)> {
    let mut out = BTreeMap::new();
    for c in doc.changes().unwrap() {
        for (k, counter) in c.id.counters.clone().enumerate() {
            let deps = if k == 0 {
                c.deps.iter().collect()
            } else {
                vec![weft::OpId::new(c.id.peer, counter - 1)]
            };
            out.insert((c.id.peer, counter), (c.lamport + k as u32, deps));
        }
    }
    out
}

#[test]
fn what_needs_the_trimmed_history_is_refused() {
    let mut a = typed("hello world");
    let mut c = fork_as(&a, 3);
    let v1 = a.version();
    let f1 = a.frontiers();
    a.text("t").insert(5, ",").unwrap();
    a.commit();
    let root = a.frontiers();
    let mut s = shallow(&a, &root);
    s.set_peer_id(2).unwrap();

    // c edits concurrently to the root: its ops cannot be placed.
    c.text("t").insert(0, ">> ").unwrap();
    c.commit();
    let before = (delta(&s), s.version());
    let update = c.export(ExportMode::Updates { from: &v1 }).unwrap();
    assert_eq!(s.import(&update), Err(Error::TrimmedHistory));
    assert_eq!((delta(&s), s.version()), before, "unchanged");
    // Nor anything of a replica that took it, as that comes with it.
    let mut a2 = a.fork();
    a.import(&update).unwrap();
    let later = a
        .export(ExportMode::Updates { from: &s.version() })
        .unwrap();
    assert_eq!(s.import(&later), Err(Error::TrimmedHistory));

    // Exports and views that need the root's history.
    assert_eq!(
        s.export(ExportMode::Updates { from: &v1 }),
        Err(Error::TrimmedHistory)
    );
    assert_eq!(
        s.export(ExportMode::Updates {
            from: &VersionVector::new()
        }),
        Err(Error::TrimmedHistory)
    );
    assert_eq!(
        s.export(ExportMode::SnapshotAt(&f1)),
        Err(Error::TrimmedHistory)
    );
    assert_eq!(
        s.export(ExportMode::ShallowSnapshot(&f1)),
        Err(Error::TrimmedHistory)
    );
    assert_eq!(
        s.export(ExportMode::UpdatesInRange(&[weft::IdSpan::new(1, 0..3)])),
        Err(Error::TrimmedHistory)
    );
    assert_eq!(s.checkout(&f1), Err(Error::TrimmedHistory));
    assert!(!s.is_detached());
    assert!(matches!(s.fork_at(&f1), Err(Error::TrimmedHistory)));
    assert!(matches!(s.diff(&f1, &root), Err(Error::TrimmedHistory)));
    // The latest version still shows, forks and diffs.
    assert_eq!(s.diff(&root, &root).unwrap(), vec![]);
    assert_eq!(
        s.fork_at(&root).unwrap().text("t").to_string(),
        "hello, world"
    );
    s.checkout(&root).unwrap();
    s.checkout_to_latest().unwrap();

    // Edits on top of the root merge both ways.
    s.text("t").insert(0, "S: ").unwrap();
    a2.text("t").insert(12, "!").unwrap();
    send(&mut a2, &s);
    send(&mut s, &a2);
    assert_eq!(delta(&s), delta(&a2));
    assert_eq!(s.text("t").to_string(), "S: hello, world!");
}

#[test]
fn marks_across_the_root_keep_working() {
    let mut a = Doc::new();
    a.set_peer_id(1).unwrap();
    a.text("t").insert(0, "one two three four").unwrap();
    a.text("t").mark(0..7, "bold", true).unwrap();
    a.text("t").mark(4..13, "link", "x").unwrap();
    a.text("t").delete(8, 2).unwrap();
    a.commit();
    let mut b = fork_as(&a, 2);
    let root = a.frontiers();
    a.text("t").mark(2..5, "italic", true).unwrap();
    a.commit();
    // Root at b's version: a's italic mark is kept history.
    let mut s = shallow(&a, &root);
    s.set_peer_id(3).unwrap();
    assert_eq!(delta(&s), delta(&a));
    // Typing at mark edges, and new marks, on every side.
    s.text("t").insert(7, "X").unwrap();
    s.text("t").insert(0, "Y").unwrap();
    b.text("t").insert(3, "Z").unwrap();
    b.text("t").mark(1..6, "bold", weft::Value::Null).unwrap();
    a.text("t").insert(12, "W").unwrap();
    for _ in 0..2 {
        send(&mut s, &a);
        send(&mut s, &b);
        send(&mut a, &s);
        send(&mut a, &b);
        send(&mut b, &a);
    }
    assert_eq!(delta(&s), delta(&a));
    assert_eq!(delta(&b), delta(&a));
    let again = shallow(&s, &s.frontiers());
    assert_eq!(delta(&again), delta(&a));
}

/// Two peers' merged history: concurrent typing, marks, deletes, a map.
fn two_peer_history() -> Doc {
    let mut a = typed("Hello 😀 world");
    let mut b = fork_as(&a, 2);
    a.text("t").mark(0..5, "bold", true).unwrap();
    a.text("t").delete(5, 2).unwrap();
    a.map("m").set("k", 1).unwrap();
    b.text("t").insert(6, "文字 ").unwrap();
    b.text("t").mark(2..9, "italic", true).unwrap();
    b.map("m").set("k", 2).unwrap();
    a.commit();
    b.commit();
    send(&mut a, &b);
    a.text("t").insert(0, "> ").unwrap();
    a.commit();
    a
}

#[test]
fn damaged_shallow_snapshots_are_refused() {
    let mut rng = Rng::new(7);
    let doc = &two_peer_history();
    let bytes = doc
        .export(ExportMode::ShallowSnapshot(&doc.frontiers()))
        .unwrap();
    for cut in 0..bytes.len() {
        let mut d = Doc::new();
        assert!(d.import(&bytes[..cut]).is_err(), "cut at {cut}");
    }
    for _ in 0..2_000 {
        let mut bad = bytes.clone();
        let i = rng.below(bad.len());
        bad[i] ^= 1 << rng.below(8);
        let mut d = Doc::new();
        if d.import(&bad).is_ok() {
            // Only a flip the checksum misses could get here.
            let _ = d.load();
        }
    }
}

/// A shallow snapshot at an older version keeps a change concurrent to
/// its root; an op made on top of that change alone is still concurrent
/// to the root, and refused, while one on top of both merges.
#[test]
fn kept_history_concurrent_to_the_root() {
    let mut a = typed("base text here");
    let mut b = fork_as(&a, 2);
    a.text("t").delete(4, 5).unwrap(); // the root: a's delete
    a.commit();
    let root = a.frontiers();
    b.text("t").insert(5, "B1").unwrap(); // concurrent to the root
    b.commit();
    send(&mut a, &b); // a holds both
    let mut s = shallow(&a, &root);
    s.set_peer_id(3).unwrap();
    assert_eq!(delta(&s), delta(&a));

    // b types on without the root.
    b.text("t").insert(0, "B2").unwrap();
    b.commit();
    let bytes = b
        .export(ExportMode::Updates { from: &s.version() })
        .unwrap();
    assert_eq!(s.import(&bytes), Err(Error::TrimmedHistory));
    // After b gets the root, its new ops merge.
    let mut b2 = b.fork();
    send(&mut b2, &a);
    b2.text("t").insert(0, "C").unwrap();
    b2.commit();
    let mut a2 = a.fork();
    send(&mut a2, &b2);
    // s lacks b's "B2", which b2's new op depends on: refused until then,
    // and "B2" itself cannot come. A replica with the root can take all.
    assert_eq!(
        s.import(
            &b2.export(ExportMode::Updates { from: &s.version() })
                .unwrap()
        ),
        Err(Error::TrimmedHistory)
    );
    assert_eq!(delta(&a2), delta(&b2));
    // Edits of a (after root and after B1) do merge into s.
    a.text("t").insert(2, "A").unwrap();
    a.commit();
    send(&mut s, &a);
    assert_eq!(delta(&s), delta(&a));
}

/// Found by an outside attack: a shallow document checked out at its
/// latest version, which then imported more, refused an older version
/// when attached but showed it from the view. Both show it now.
#[test]
fn attached_and_detached_shallow_docs_show_the_same_versions() {
    let mut a = typed("hello");
    let l1 = a.frontiers();
    let mut s = shallow(&a, &l1);
    a.text("t").insert(5, " one").unwrap();
    a.commit();
    let mid = a.frontiers();
    a.text("t").insert(9, " two").unwrap();
    a.commit();
    s.checkout(&l1).unwrap();
    s.import(
        &a.export(ExportMode::Updates {
            from: &s.latest_version(),
        })
        .unwrap(),
    )
    .unwrap();
    s.checkout(&mid).unwrap(); // forward from the view
    assert_eq!(s.text("t").to_string(), "hello one");
    s.checkout_to_latest().unwrap();
    s.checkout(&mid).unwrap(); // rebuilt from the root
    assert_eq!(s.text("t").to_string(), "hello one");
    s.checkout(&l1).unwrap();
    assert_eq!(s.text("t").to_string(), "hello");
    s.checkout_to_latest().unwrap();
    assert_eq!(s.text("t").to_string(), "hello one two");
}

/// A shallow document re-trims at any version holding its root.
#[test]
fn a_shallow_doc_retrims_at_later_versions() {
    let a = typed("hello");
    let root = a.frontiers();
    let mut s = shallow(&a, &root);
    s.set_peer_id(2).unwrap();
    s.text("t").insert(5, " world").unwrap();
    s.text("t").delete(0, 1).unwrap();
    s.commit();
    let mid = s.frontiers();
    s.text("t").insert(0, ">").unwrap();
    s.text("t").delete(3, 2).unwrap();
    s.commit();
    let again = s.export(ExportMode::ShallowSnapshot(&root)).unwrap();
    assert_eq!(again, s.export(ExportMode::Snapshot).unwrap());
    let mut later = shallow(&s, &mid);
    assert_eq!(later.shallow_since(), Some(mid.clone()));
    assert_eq!(later.text("t").to_string(), s.text("t").to_string());
    later.checkout(&mid).unwrap();
    assert_eq!(later.text("t").to_string(), "ello world");
    later.checkout_to_latest().unwrap();
    assert_eq!(later.checkout(&root), Err(Error::TrimmedHistory));
    // The same bytes as a full replica's shallow snapshot at `mid`.
    let mut full = a.fork();
    send(&mut full, &s);
    let from_full = full.export(ExportMode::ShallowSnapshot(&mid)).unwrap();
    let mut other = Doc::new();
    other.import(&from_full).unwrap();
    assert_eq!(delta(&other), delta(&later));
    assert_eq!(ops(&other), ops(&later));
}

/// Every text's delta by name (a missing text reads as empty).
fn deltas(doc: &Doc, names: &[&str]) -> Vec<Vec<weft::Delta>> {
    names
        .iter()
        .map(|n| doc.get_text(n).map(|t| t.to_delta()).unwrap_or_default())
        .collect()
}

/// Texts without visible chars at the root, listed before one with
/// chars: a never-edited one and one whose chars were all deleted. Views
/// after the root (fork_at, SnapshotAt, diff, re-trimming) must number
/// the texts as the document does, and equal a full replica's. (An
/// outside attack found every such view failing with `UnknownId`, or a
/// SnapshotAt losing marks.)
#[test]
fn views_after_the_root_with_empty_texts_first() {
    let names = ["a", "b", "u"];
    let mut full = weft_testkit::doc(1);
    let _ = full.text("a");
    full.text("b").insert(0, "xyz").unwrap();
    full.text("b").delete(0, 3).unwrap();
    full.text("u").insert(0, "abcd").unwrap();
    full.commit();
    let root = full.frontiers();
    let mut s = shallow(&full, &root);
    s.set_peer_id(2).unwrap();
    let mut versions = vec![root];
    s.text("a").insert(0, "X").unwrap();
    s.commit();
    versions.push(s.frontiers());
    s.text("b").insert(0, "Y").unwrap();
    s.text("u").mark(0..3, "bold", true).unwrap();
    s.commit();
    versions.push(s.frontiers());
    s.text("u").delete(1, 2).unwrap();
    s.commit();
    versions.push(s.frontiers());
    send(&mut full, &s);
    let latest = s.frontiers();
    for v in &versions {
        let want = deltas(&full.fork_at(v).unwrap(), &names);
        assert_eq!(
            deltas(&s.fork_at(v).unwrap(), &names),
            want,
            "fork_at {v:?}"
        );
        let mut at = Doc::new();
        at.import(&s.export(ExportMode::SnapshotAt(v)).unwrap())
            .unwrap();
        assert_eq!(deltas(&at, &names), want, "SnapshotAt {v:?}");
        assert_eq!(
            s.diff(v, &latest).unwrap(),
            full.diff(v, &latest).unwrap(),
            "diff from {v:?}"
        );
        let retrimmed = shallow(&s, v);
        assert_eq!(
            deltas(&retrimmed, &names),
            deltas(&s, &names),
            "re-trim at {v:?}"
        );
        s.checkout(v).unwrap();
        assert_eq!(deltas(&s, &names), want, "checkout {v:?}");
        s.checkout_to_latest().unwrap();
    }
}

/// What a replica shows: every text's delta, the maps, the version.
type Shown = (
    Vec<(String, Vec<weft::Delta>)>,
    Vec<(String, Vec<(String, weft::Value)>)>,
    VersionVector,
);

/// [`Shown`] of `doc`.
/// What `doc` shows once trimmed at its latest version (its shallow
/// snapshot there, imported).
fn trimmed_again(doc: &Doc) -> Shown {
    let mut again = Doc::new();
    again
        .import(
            &doc.export(ExportMode::ShallowSnapshot(&doc.frontiers()))
                .unwrap(),
        )
        .unwrap();
    shown(&again)
}

fn shown(doc: &Doc) -> Shown {
    let mut texts: Vec<_> = doc
        .text_names()
        .map(|n| (n.to_owned(), doc.get_text(n).unwrap().to_delta()))
        .collect();
    texts.sort_by(|a, b| a.0.cmp(&b.0));
    (texts, weft_testkit::map_contents(doc), doc.version())
}

/// Peer 1's history of edits, undos and redos (one commit a step), a
/// peer 2's concurrent edits merged into it, and the frontiers after
/// each step.
fn undo_history() -> (Doc, Vec<Frontiers>) {
    let mut a = weft_testkit::doc(1);
    let mut undo = weft::UndoManager::new(&mut a);
    let mut steps = Vec::new();
    let mut step = |a: &mut Doc, f: &mut dyn FnMut(&mut Doc, &mut weft::UndoManager)| {
        f(a, &mut undo);
        a.commit();
        steps.push(a.frontiers());
    };
    step(&mut a, &mut |a, _| {
        a.text("t").insert(0, "hello brave new world").unwrap()
    }); // 0
    step(&mut a, &mut |a, _| {
        a.text("t").mark(0..5, "bold", true).unwrap()
    }); // 1
    step(&mut a, &mut |a, _| a.text("t").delete(6, 6).unwrap()); // 2
    step(&mut a, &mut |a, u| assert!(u.undo(a).unwrap().is_some())); // 3: cancels 2
    step(&mut a, &mut |a, _| {
        a.text("t").mark(0..11, "link", "x").unwrap()
    }); // 4
    step(&mut a, &mut |a, u| assert!(u.undo(a).unwrap().is_some())); // 5: cancels 4
    step(&mut a, &mut |a, _| a.text("t").delete(0, 2).unwrap()); // 6
    step(&mut a, &mut |a, u| assert!(u.undo(a).unwrap().is_some())); // 7: cancels 6
    step(&mut a, &mut |a, u| assert!(u.redo(a).unwrap().is_some())); // 8: cancels 7
    step(&mut a, &mut |a, _| a.map("m").set("k", 8).unwrap()); // 9
    let mut b = fork_as(&a, 2);
    b.text("t").insert(3, "[b]").unwrap();
    b.commit();
    step(&mut a, &mut |a, _| a.text("t").delete(1, 3).unwrap()); // 10
    step(&mut a, &mut |a, u| {
        assert!(u.undo(a).unwrap().is_some()); // cancels 10
        send(a, &b);
    }); // 11
    (a, steps)
}

/// The steps of [`undo_history`] a cancel after them reaches below
/// (an undo or redo of an op made at or before them).
const REFUSED_ROOTS: [usize; 5] = [2, 4, 6, 7, 10];

/// A shallow snapshot of a history with undo and redo, at every step:
/// refused exactly where a later cancel reaches below the root, else
/// the copy shows what the full document shows (latest, every later
/// step, re-exports), and both take the same further edits, undos and
/// redos, from a full peer and from the shallow copy itself.
#[test]
fn shallow_snapshots_of_undo_histories_match_the_full_document() {
    let (a, steps) = undo_history();
    let mut kept = 0;
    for (i, root) in steps.iter().enumerate() {
        let bytes = a.export(ExportMode::ShallowSnapshot(root));
        if REFUSED_ROOTS.contains(&i) {
            assert!(
                matches!(bytes, Err(Error::Unsupported { .. })),
                "root {i}: {bytes:?}"
            );
            continue;
        }
        kept += 1;
        let bytes = bytes.unwrap();
        // Cancels after the root, or a mark cancelled at it (from step
        // 5 on): version 7.
        assert_eq!(bytes[4], 7, "root {i}");
        let mut s = Doc::new();
        s.import(&bytes).unwrap();
        assert_eq!(shown(&s), shown(&a), "root {i}");
        s.assert_invariants();
        // Every step from the root on, as the full document shows it.
        for later in &steps[i..] {
            let (x, y) = (s.fork_at(later).unwrap(), a.fork_at(later).unwrap());
            assert_eq!(shown(&x), shown(&y), "root {i}, at {later:?}");
            assert_eq!(s.diff(root, later).unwrap(), a.diff(root, later).unwrap());
            s.checkout(later).unwrap();
            assert_eq!(shown(&s).0, shown(&y).0, "root {i}, checkout {later:?}");
        }
        s.checkout_to_latest().unwrap();
        // Into a live document at the root: what it lacks merges.
        let mut live = a.fork_at(root).unwrap();
        live.import(&bytes).unwrap();
        assert_eq!(shown(&live), shown(&a), "root {i}, into a live document");
        // Re-exports: snapshot, shallow at its root and at the latest,
        // the updates after the root into the full document's root.
        for mode in [
            ExportMode::Snapshot,
            ExportMode::ShallowSnapshot(root),
            ExportMode::ShallowSnapshot(&a.frontiers()),
        ] {
            let mut again = Doc::new();
            again.import(&s.export(mode).unwrap()).unwrap();
            assert_eq!(shown(&again), shown(&a), "root {i}, re-exported");
            again.load().unwrap();
            again.assert_invariants();
        }
        let mut at_root = a.fork_at(root).unwrap();
        let after = s
            .export(ExportMode::Updates {
                from: &at_root.version(),
            })
            .unwrap();
        at_root.import(&after).unwrap();
        assert_eq!(shown(&at_root), shown(&a), "root {i}, updates");

        // Further edits, undos and redos after the root: by a full peer,
        // by the shallow copy, and peer 1 redoing its last undo.
        let mut full = a.fork();
        let mut c = fork_as(&a, 3);
        let mut cu = weft::UndoManager::new(&mut c);
        c.text("t").insert(0, "C").unwrap();
        c.commit();
        c.text("t").delete(2, 4).unwrap();
        c.commit();
        c.text("t").mark(1..6, "italic", true).unwrap();
        c.commit();
        cu.undo(&mut c).unwrap();
        cu.undo(&mut c).unwrap();
        cu.redo(&mut c).unwrap();
        s.set_peer_id(4).unwrap();
        let mut su = weft::UndoManager::new(&mut s);
        s.text("t").delete(0, 3).unwrap();
        s.commit();
        s.text("t").insert(1, "S").unwrap();
        s.commit();
        su.undo(&mut s).unwrap();
        su.undo(&mut s).unwrap();
        su.redo(&mut s).unwrap();
        for (from, to) in [(&c, &mut full), (&c, &mut s)] {
            send(to, from);
        }
        send(&mut full, &s);
        send(&mut s, &full);
        assert_eq!(shown(&s), shown(&full), "root {i}, further edits");
        s.assert_invariants();
        assert_eq!(trimmed_again(&s), shown(&full), "root {i}, trimmed again");
    }
    assert_eq!(kept, steps.len() - REFUSED_ROOTS.len());
}

/// One random step of peer `p` (a full replica, or the shallow copy):
/// typing, deleting, marking, a map write, undo, redo, a cancel of a
/// random op of its own that `cancel_from` lacks, or a sync with another
/// peer. Commits, so each edit is one undo step.
fn random_step(
    rng: &mut Rng,
    peers: &mut [Doc],
    undos: &mut [weft::UndoManager],
    p: usize,
    cancel_from: &VersionVector,
) {
    let d = &mut peers[p];
    let len = d.text("t").len();
    match rng.below(100) {
        0..=29 => {
            let text = rng.text(4);
            d.text("t").insert(rng.below(len + 1), &text).unwrap();
        }
        30..=49 if len > 0 => {
            let at = rng.below(len);
            let n = 1 + rng.below(3.min(len - at));
            d.text("t").delete(at, n).unwrap();
        }
        50..=59 if len > 0 => {
            let at = rng.below(len);
            let end = at + 1 + rng.below(len - at);
            let (key, value) = match rng.below(3) {
                0 => ("bold", weft::Value::Bool(true)),
                1 => ("link", weft::Value::from("x")),
                _ => ("bold", weft::Value::Null),
            };
            d.text("t").mark(at..end, key, value).unwrap();
        }
        60..=64 => d.map("m").set("k", rng.below(9) as i64).unwrap(),
        65..=79 => {
            undos[p].undo(d).unwrap();
        }
        80..=87 => {
            undos[p].redo(d).unwrap();
        }
        88..=92 => {
            let (from, mine) = (cancel_from.get(d.peer_id()), d.version().get(d.peer_id()));
            if mine > from {
                let counter = from + rng.below((mine - from) as usize) as u32;
                let id = weft::OpId::new(d.peer_id(), counter);
                // Not every op can be cancelled (inserts, map writes).
                let _ = d.cancel(id, 1);
            }
        }
        _ => {
            let q = rng.below(peers.len());
            if q != p {
                let (x, y) = if p < q {
                    let (l, r) = peers.split_at_mut(q);
                    (&mut l[p], &mut r[0])
                } else {
                    let (l, r) = peers.split_at_mut(p);
                    (&mut r[0], &mut l[q])
                };
                weft_testkit::exchange(x, y, rng.chance(50));
            }
        }
    }
    peers[p].commit();
}

/// Random histories of three peers with undo, redo and cancels, trimmed
/// at a random version of peer 0 (and at its latest one): the shallow
/// copy shows what the full document shows, at the latest version and
/// at every recorded one after the root; then the peers (with new undo
/// managers: their old steps may reach below the root; cancels of any of
/// their ops after the root) and the shallow copy edit, undo and redo
/// on, and all converge on text, deltas, maps and version. A root that a later cancel reaches below is refused
/// (`Unsupported`); the latest version never is.
#[test]
fn random_undo_histories_trim_and_merge_like_full_ones() {
    let (mut kept, mut refused, mut views) = (0, 0, 0);
    for seed in 0..60u64 {
        let mut rng = Rng::new(0xca9c_e100 + seed);
        let mut peers: Vec<Doc> = (1..=3).map(weft_testkit::doc).collect();
        let mut undos: Vec<weft::UndoManager> =
            peers.iter_mut().map(weft::UndoManager::new).collect();
        let mut recorded = Vec::new();
        for _ in 0..40 {
            let p = rng.below(3);
            random_step(&mut rng, &mut peers, &mut undos, p, &VersionVector::new());
            recorded.push(peers[0].frontiers());
        }
        // Every peer takes everything first: a shallow copy cannot take
        // ops concurrent to its root that it did not keep.
        for p in 1..3 {
            let (l, r) = peers.split_at_mut(p);
            weft_testkit::exchange(&mut l[0], &mut r[0], true);
        }
        let (l, r) = peers.split_at_mut(2);
        weft_testkit::exchange(&mut l[1], &mut r[0], true);
        let latest = peers[0].frontiers();
        let own = peers[0]
            .export(ExportMode::ShallowSnapshot(&latest))
            .unwrap();
        let mut s = Doc::new();
        s.import(&own).unwrap();
        assert_eq!(shown(&s), shown(&peers[0]), "seed {seed}: at the latest");
        let k = rng.below(recorded.len());
        let root = recorded[k].clone();
        let mut s = match peers[0].export(ExportMode::ShallowSnapshot(&root)) {
            Ok(bytes) => {
                let mut s = Doc::new();
                s.import(&bytes).unwrap();
                kept += 1;
                s
            }
            Err(Error::Unsupported { .. }) => {
                refused += 1;
                s
            }
            Err(e) => panic!("seed {seed}: {e:?}"),
        };
        let full = &peers[0];
        assert_eq!(shown(&s), shown(full), "seed {seed}");
        s.assert_invariants();
        for v in &recorded[k..] {
            match s.fork_at(v) {
                Ok(view) => {
                    views += 1;
                    let want = full.fork_at(v).unwrap();
                    assert_eq!(shown(&view), shown(&want), "seed {seed}: at {v:?}");
                }
                // Only a version the root is not in, or that holds ops
                // concurrent to it, needs the trimmed history.
                Err(Error::TrimmedHistory) => {}
                Err(e) => panic!("seed {seed}: {e:?}"),
            }
        }
        // The peers edit on with new undo managers (their steps start
        // after the root), as does the copy; their cancels reach back to
        // the root.
        let root = match s.shallow_since() {
            Some(f) => full.fork_at(&f).unwrap().version(),
            None => VersionVector::new(),
        };
        s.set_peer_id(4).unwrap();
        peers.push(s);
        let mut undos: Vec<weft::UndoManager> =
            peers.iter_mut().map(weft::UndoManager::new).collect();
        for _ in 0..30 {
            let p = rng.below(4);
            random_step(&mut rng, &mut peers, &mut undos, p, &root);
        }
        let s = peers.pop().unwrap();
        let mut s = s;
        for _ in 0..2 {
            for p in &mut peers {
                send(&mut s, p);
                send(p, &s);
            }
        }
        for p in &peers {
            assert_eq!(shown(&s), shown(p), "seed {seed}: converged");
        }
        s.assert_invariants();
        assert_eq!(trimmed_again(&s), shown(&s), "seed {seed}: trimmed again");
    }
    eprintln!("kept {kept}, refused {refused}, versions shown {views}");
    assert!(
        kept > 40 && refused > 3 && views > 800,
        "{kept} {refused} {views}"
    );
}

/// Peer 2 deletes "cd" concurrently to peer 1's delete of "c" (the root);
/// the shallow copy keeps peer 2's delete as history. Peer 2 cancelling
/// it shows "d" again, but "c" stays deleted by the root's delete, whose
/// op the copy does not have.
#[test]
fn cancelling_a_kept_delete_leaves_the_roots_delete_in_force() {
    let mut a = typed("abcdef");
    let mut b = fork_as(&a, 2);
    a.text("t").delete(2, 1).unwrap();
    a.commit();
    let root = a.frontiers();
    let del = weft::OpId::new(2, b.version().get(2));
    b.text("t").delete(2, 2).unwrap();
    b.commit();
    send(&mut a, &b);
    let mut s = shallow(&a, &root);
    assert_eq!(s.text("t").to_string(), "abef");
    // On top of the root (else the copy could not place it).
    send(&mut b, &a);
    b.cancel(del, 2).unwrap();
    b.commit();
    send(&mut a, &b);
    send(&mut s, &b);
    assert_eq!(a.text("t").to_string(), "abdef");
    assert_eq!(shown(&s), shown(&a));
    // And back: the cancel cancelled.
    let redo = weft::OpId::new(2, b.version().get(2) - 2);
    b.cancel(redo, 2).unwrap();
    b.commit();
    send(&mut a, &b);
    send(&mut s, &b);
    assert_eq!(a.text("t").to_string(), "abef");
    assert_eq!(shown(&s), shown(&a));
    s.assert_invariants();
}

/// An undo after the root of a delete before it: a root there is
/// refused (the copy could not show the char again), a root after the
/// undo is not; a copy rooted before the undo refuses it as it refuses
/// ops concurrent to its root, and so does a local cancel of a root op.
#[test]
fn undoing_an_op_below_the_root_is_refused_both_ways() {
    let mut a = typed("hello world");
    let mut undo = weft::UndoManager::new(&mut a);
    a.text("t").delete(5, 6).unwrap();
    a.commit();
    let root = a.frontiers();
    let mut s = shallow(&a, &root);
    undo.undo(&mut a).unwrap();
    a.commit();
    assert_eq!(a.text("t").to_string(), "hello world");
    assert!(matches!(
        a.export(ExportMode::ShallowSnapshot(&root)),
        Err(Error::Unsupported { .. })
    ));
    let latest = shallow(&a, &a.frontiers());
    assert_eq!(shown(&latest), shown(&a));
    let before = shown(&s);
    let update = a
        .export(ExportMode::Updates { from: &s.version() })
        .unwrap();
    assert_eq!(s.import(&update), Err(Error::TrimmedHistory));
    assert_eq!(shown(&s), before, "unchanged");
    // Peer 1's own delete, cancelled on the copy editing as peer 1.
    s.set_peer_id(1).unwrap();
    let del = weft::OpId::new(1, 11);
    assert_eq!(s.cancel(del, 6), Err(Error::TrimmedHistory));
}

/// Without cancels to carry (an undo inside the root, no mark
/// cancelled) a shallow snapshot is still written as version 6; a mark
/// cancelled at the root makes it version 7, with key "C".
#[test]
fn only_shallow_snapshots_with_cancels_are_version_7() {
    let mut a = typed("hello world");
    let mut undo = weft::UndoManager::new(&mut a);
    a.text("t").delete(0, 6).unwrap();
    a.commit();
    undo.undo(&mut a).unwrap();
    a.commit();
    let bytes = a
        .export(ExportMode::ShallowSnapshot(&a.frontiers()))
        .unwrap();
    assert_eq!(bytes[4], 6);
    assert_eq!(shown(&shallow(&a, &a.frontiers())), shown(&a));
    a.text("t").mark(0..5, "bold", true).unwrap();
    a.commit();
    undo.undo(&mut a).unwrap();
    a.commit();
    let bytes = a
        .export(ExportMode::ShallowSnapshot(&a.frontiers()))
        .unwrap();
    assert_eq!(bytes[4], 7);
    assert!(entry(&bytes, b"C").is_some());
    let s = shallow(&a, &a.frontiers());
    assert_eq!(shown(&s), shown(&a));
    assert_eq!(s.get_text("t").unwrap().to_delta().len(), 1, "unstyled");
}

/// Entry `key` of a snapshot's table.
fn entry(bytes: &[u8], key: &[u8]) -> Option<Vec<u8>> {
    let mut kv = weft::weft_kv::MemKvStore::new();
    kv.import_all(&bytes[16..]).unwrap();
    kv.get(key).map(|v| v.to_vec())
}

/// Hostile version 7 shallow snapshots: every cut and many bit flips
/// fail cleanly; a version 7 one relabelled 6 (cancel runs, "C") and a
/// forged "C" (bad bytes, a seq that starts no root mark, a "C" in a
/// full snapshot) are refused with the error that names them.
#[test]
fn damaged_shallow_snapshots_with_cancels_are_refused() {
    let (a, steps) = undo_history();
    let bytes = a.export(ExportMode::ShallowSnapshot(&steps[8])).unwrap();
    assert_eq!(bytes[4], 7);
    let c = entry(&bytes, b"C").expect("the link mark is cancelled at the root");
    let loads = |bytes: &[u8]| -> Result<Doc, Error> {
        let mut d = Doc::new();
        d.import(bytes)?;
        d.load()?;
        d.assert_invariants();
        Ok(d)
    };
    assert_eq!(shown(&loads(&bytes).unwrap()), shown(&a));
    for cut in 0..bytes.len() {
        assert!(Doc::new().import(&bytes[..cut]).is_err(), "cut at {cut}");
    }
    let mut rng = Rng::new(11);
    for _ in 0..1_000 {
        let mut bad = bytes.clone();
        let i = rng.below(bad.len());
        bad[i] ^= 1 << rng.below(8);
        let _ = loads(&bad);
    }
    // Relabelled as version 6 (the header's version byte is not under
    // the checksum), and as a full snapshot.
    let mut v6 = bytes.clone();
    v6[4] = 6;
    assert_eq!(
        loads(&v6).err(),
        Some(Error::Inconsistent {
            what: "cancelled root marks before version 7"
        })
    );
    let mut full = bytes.clone();
    full[5] = 2;
    assert_eq!(full[4], 7);
    assert_eq!(loads(&full).err(), Some(Error::UnsupportedVersion(7)));
    // Cancel runs in a version 6 shallow snapshot: the same history
    // without a mark cancelled at the root.
    let plain = a.export(ExportMode::ShallowSnapshot(&steps[1])).unwrap();
    assert!(entry(&plain, b"C").is_none());
    let mut v6 = plain.clone();
    v6[4] = 6;
    assert_eq!(
        loads(&v6).err(),
        Some(Error::Inconsistent {
            what: "cancel in a shallow snapshot before version 7"
        })
    );
    // Forged "C" values.
    // (Values are tagged, 3.1: 0 is stored.)
    let forged = |value: &[u8]| {
        let value = [&[0][..], value].concat();
        loads(&super::snapshot::with_entry(&bytes, b"C", &value)).err()
    };
    assert_eq!(c[..2], [0, 1], "one mark, stored");
    let c = &c[1..];
    // Cut short: no count, a varint cut.
    for value in [&[][..], &[1, 0x80]] {
        assert_eq!(forged(value), Some(Error::UnexpectedEof), "{value:?}");
    }
    // More seqs than bytes, past u32 (named where the varint ends, as
    // every reader does), past the root, a repeated seq.
    for (value, offset) in [
        (&[2, 0][..], 1),
        (&[1, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F], 6),
        (&[1, 0xC0, 0x84, 0x3D], 1),
        (&[2, 0, 0], 2),
    ] {
        assert!(
            matches!(forged(value), Some(Error::Malformed { offset: o, .. }) if o == offset),
            "{value:?}: {:?}",
            forged(value)
        );
    }
    // Trailing bytes; two marks where one is; a seq that starts no mark.
    let mut trailing = c.to_vec();
    trailing.push(0);
    assert!(
        matches!(forged(&trailing), Some(Error::Malformed { offset, .. }) if offset == c.len())
    );
    assert_eq!(
        forged(&[2, 0, 1]),
        Some(Error::Inconsistent {
            what: "cancelled root mark"
        })
    );
}
