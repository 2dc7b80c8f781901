//! Checkout: on random multi-peer runs, checking out every recorded
//! version (forward, backward, in random order) shows exactly what the
//! replica held then, in chars and UTF-16, and subscribed mirrors follow
//! each move; while checked out, edits are refused and imports are kept.

use std::sync::{Arc, Mutex};

use weft::{
    Delta, Doc, DocEvent, Error, EventTrigger, ExportMode, Frontiers, OpId, Side, UndoManager, Unit,
};
use weft_testkit::{history_actions, Random};

/// A mirror of text "t" in `unit`, kept by events alone.
fn mirror(doc: &mut Doc, unit: Unit) -> (Arc<Mutex<Vec<Delta>>>, weft::Subscription) {
    let start = doc.get_text("t").map(|t| t.to_delta()).unwrap_or_default();
    let m = Arc::new(Mutex::new(start));
    let m2 = Arc::clone(&m);
    let sub = doc.subscribe_in(unit, move |e: &DocEvent| {
        assert_eq!(e.trigger, EventTrigger::Checkout, "only checkouts here");
        for d in e.texts.iter().filter(|d| d.name == "t") {
            d.apply_to(&mut m2.lock().unwrap(), unit).unwrap();
        }
    });
    (m, sub)
}

fn delta(doc: &Doc) -> Vec<Delta> {
    doc.get_text("t").map(|t| t.to_delta()).unwrap_or_default()
}

/// Random three-peer runs in which replicas check out versions they held
/// and stay detached while imports arrive; at the end a replica checks
/// out every recorded version in the order recorded, then in a random
/// order (backward moves rebuild), returning to the latest now and then:
/// each shows exactly what the model held then, in chars and UTF-16, and
/// mirrors fed by checkout events follow each move.
#[test]
fn checkout_shows_every_recorded_version_and_mirrors_follow() {
    let stats = Random {
        seeds: 10,
        keep: history_actions,
        ..Random::new(150)
    }
    .run(0xc0c0);
    assert!(stats.checkouts > 10 && stats.versions > 100, "{stats:?}");
}

#[test]
fn edits_are_refused_and_imports_kept_while_detached() {
    let mut a = Doc::new();
    a.set_peer_id(1).unwrap();
    a.text("t").insert(0, "Hello").unwrap();
    let v1 = a.frontiers();
    a.text("t").insert(5, " world").unwrap();
    a.text("t").mark(0..5, "bold", true).unwrap();
    let mut b = a.fork();
    b.set_peer_id(2).unwrap();

    a.checkout(&v1).unwrap();
    let shown = a.text("t").to_delta();
    assert_eq!(shown, vec![Delta::insert("Hello")]);
    let mut t = a.text("t");
    assert_eq!(t.insert(0, "x"), Err(Error::Detached));
    assert_eq!(t.delete(0, 1), Err(Error::Detached));
    assert_eq!(t.splice(0, 1, "y"), Err(Error::Detached));
    assert_eq!(t.mark(0..1, "italic", true), Err(Error::Detached));
    assert_eq!(t.apply_delta(&[Delta::insert("z")]), Err(Error::Detached));
    assert_eq!(a.revert_to(&v1), Err(Error::Detached));
    assert_eq!(a.text("t").to_delta(), shown, "nothing changed");
    a.assert_invariants();

    // A peer's edit arrives while detached: kept, not shown yet.
    b.text("t").insert(11, "!").unwrap();
    let status = a
        .import(
            &b.export(ExportMode::Updates {
                from: &v1_vv(&a, &v1),
            })
            .unwrap(),
        )
        .unwrap();
    assert_eq!(status.applied.len(), 1);
    assert_eq!(a.text("t").to_delta(), shown);
    assert_eq!(a.latest_version(), b.version());
    // Exports carry the whole history, not the version shown.
    let mut c = Doc::new();
    c.import(&a.export(ExportMode::Snapshot).unwrap()).unwrap();
    assert_eq!(c.text("t").to_string(), "Hello world!");
    // History queries see the latest history.
    assert_eq!(a.changes().unwrap().len(), b.changes().unwrap().len());
    assert_eq!(
        a.fork_at(&b.frontiers()).unwrap().text("t").to_string(),
        "Hello world!"
    );

    a.checkout_to_latest().unwrap();
    assert_eq!(a.text("t").to_delta(), b.text("t").to_delta());
    assert_eq!(a.version(), b.version());
    a.text("t").insert(0, ">").unwrap();
    assert_eq!(a.text("t").to_string(), ">Hello world!");
}

fn v1_vv(doc: &Doc, v1: &Frontiers) -> weft::VersionVector {
    doc.frontiers_to_vv(v1).unwrap()
}

#[test]
fn unknown_versions_leave_the_document_as_it_was() {
    let mut a = Doc::new();
    a.text("t").insert(0, "abc").unwrap();
    let unknown: Frontiers = [OpId::new(9, 0)].into_iter().collect();
    assert!(matches!(a.checkout(&unknown), Err(Error::UnknownOp(_))));
    assert!(!a.is_detached());
    a.checkout(&Frontiers::new()).unwrap();
    assert_eq!(a.text("t").to_string(), "");
    assert!(matches!(a.checkout(&unknown), Err(Error::UnknownOp(_))));
    assert!(a.is_detached());
    assert_eq!(a.text("t").to_string(), "");
    a.checkout_to_latest().unwrap();
    a.checkout_to_latest().unwrap(); // a no-op when attached
    assert_eq!(a.text("t").to_string(), "abc");
}

#[test]
fn checkout_of_a_lazily_imported_snapshot_and_cursors() {
    let mut a = Doc::new();
    a.text("t").insert(0, "one two").unwrap();
    let v1 = a.frontiers();
    let cur = a.text("t").cursor(4, Side::After).unwrap(); // at "two"
    a.text("t").insert(0, "zero ").unwrap();
    a.text("t").mark(0..4, "bold", true).unwrap();
    let mut b = Doc::new();
    b.import(&a.export(ExportMode::Snapshot).unwrap()).unwrap();
    assert!(b.is_lazy());
    b.checkout(&v1).unwrap();
    assert_eq!(b.text("t").to_string(), "one two");
    assert_eq!(b.cursor_pos(&cur).unwrap(), 4);
    b.checkout_to_latest().unwrap();
    assert_eq!(b.cursor_pos(&cur).unwrap(), 9);
    assert_eq!(b.text("t").to_delta(), a.text("t").to_delta());
}

/// A checkout keeps the undo stacks (steps hold op ids, which name the
/// same ops on return): undo is refused while detached, and works after.
#[test]
fn undo_stacks_survive_a_checkout() {
    let mut doc = Doc::new();
    let mut undo = UndoManager::new(&mut doc);
    doc.text("t").insert(0, "a").unwrap();
    doc.commit();
    let v = doc.frontiers();
    doc.text("t").insert(1, "b").unwrap();
    doc.commit();
    assert!(undo.can_undo());
    doc.checkout(&v).unwrap();
    assert_eq!(undo.undo(&mut doc), Err(weft::Error::Detached));
    assert_eq!(undo.undo_count(), 2);
    doc.checkout_to_latest().unwrap();
    assert!(undo.undo(&mut doc).unwrap().is_some());
    assert_eq!(doc.text("t").to_string(), "a");
    assert!(undo.redo(&mut doc).unwrap().is_some());
    assert_eq!(doc.text("t").to_string(), "ab");
}

/// A mark's end op arriving without its start (a version between the
/// two, a range export, a pending end released later) restyles the text:
/// diff and events carry it. (Found by an outside attack: the event
/// builder watched styles only for plans with a mark's start.)
#[test]
fn a_marks_end_alone_restyles_in_events_and_diff() {
    let mut a = Doc::new();
    a.set_peer_id(1).unwrap();
    a.text("t").insert(0, "abcdef").unwrap();
    a.text("t").mark(1..3, "italic", 1i64).unwrap(); // ops 6 (start) and 7 (end)
    a.commit();
    let mid: Frontiers = [OpId::new(1, 6)].into_iter().collect();
    let end = a.frontiers();
    let mut m = delta(&a.fork_at(&mid).unwrap());
    for d in &a.diff(&mid, &end).unwrap() {
        d.apply_to(&mut m, Unit::Char).unwrap();
    }
    assert_eq!(m, delta(&a));
    let (chars, _s) = mirror(&mut a, Unit::Char);
    a.checkout(&mid).unwrap();
    a.checkout(&end).unwrap(); // forward: merges op 7 alone
    assert_eq!(*chars.lock().unwrap(), delta(&a));
    a.checkout_to_latest().unwrap();

    // Through sync: the ops in three pieces.
    let mut b = Doc::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = Arc::clone(&seen);
    let _sub = b.subscribe(move |e| {
        for d in e.texts.iter().filter(|d| d.name == "t") {
            d.apply_to(&mut s.lock().unwrap(), Unit::Char).unwrap();
        }
    });
    for span in [0..6, 6..7, 7..8] {
        let bytes = a
            .export(ExportMode::UpdatesInRange(&[weft::IdSpan::new(1, span)]))
            .unwrap();
        b.import(&bytes).unwrap();
        assert_eq!(*seen.lock().unwrap(), b.text("t").to_delta());
    }
    assert_eq!(b.text("t").to_delta(), delta(&a));
}

#[test]
fn edits_that_change_nothing_are_refused_too_while_detached() {
    let mut d = Doc::new();
    d.text("t").insert(0, "abc").unwrap();
    d.text("t").mark(0..3, "bold", true).unwrap();
    let v = d.frontiers();
    d.text("t").insert(3, "d").unwrap();
    d.checkout(&v).unwrap();
    let mut t = d.text("t");
    assert_eq!(t.insert(0, ""), Err(Error::Detached));
    assert_eq!(t.delete(0, 0), Err(Error::Detached));
    assert_eq!(t.mark(0..3, "bold", true), Err(Error::Detached));
    assert_eq!(t.unmark(0..3, "italic"), Err(Error::Detached));
    assert_eq!(t.apply_delta(&[]), Err(Error::Detached));
}
