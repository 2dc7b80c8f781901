//! Cancel ops (`Doc::cancel`, what exact undo is made of): a cancelled
//! delete shows its chars again in place, a cancelled mark styles
//! nothing, a cancelled cancel puts its target back in force; all of it
//! syncs in any order, snapshots, checks out and shows in events. The
//! scenarios are the ones issue 29 lists, in both peer orders and both
//! delivery orders.

use std::sync::{Arc, Mutex};

use weft::{Delta, Doc, ExportMode, OpId, Unit};
use weft_testkit::{doc, exchange, full, sync};

/// The id of the next op `d` makes (its peer's next counter).
fn next_id(d: &Doc) -> OpId {
    OpId::new(d.peer_id(), d.version().get(d.peer_id()))
}

/// Checks that `a` and `b` hold the same history and texts, and that a
/// fresh document importing each one's whole history, or its snapshot,
/// reads the same.
fn converged(a: &mut Doc, b: &mut Doc) -> Vec<Delta> {
    let delta = a.text("t").to_delta();
    assert_eq!(b.text("t").to_delta(), delta);
    assert_eq!(a.version(), b.version());
    assert_eq!(a.history_runs().unwrap(), b.history_runs().unwrap());
    for d in [&*a, &*b] {
        d.assert_invariants();
        let mut fresh = Doc::new();
        fresh.import(&full(d)).unwrap();
        assert_eq!(fresh.text("t").to_delta(), delta, "whole history");
        let mut opened = Doc::new();
        opened
            .import(&d.export(ExportMode::Snapshot).unwrap())
            .unwrap();
        assert_eq!(opened.get_text("t").unwrap().to_delta(), delta, "lazy");
        assert_eq!(opened.text("t").to_delta(), delta, "snapshot");
        opened.load().unwrap();
        assert_eq!(opened.history_runs().unwrap(), d.history_runs().unwrap());
        opened.assert_invariants();
    }
    delta
}

fn plain(d: &mut Doc) -> String {
    d.text("t").to_string()
}

/// A deletes "hello"; B appends " world" right after it; A cancels its
/// delete: "hello world", in both delivery orders.
#[test]
fn a_cancelled_delete_comes_back_before_text_typed_after_it() {
    for a_first in [true, false] {
        let (mut a, mut b) = (doc(1), doc(2));
        a.text("t").insert(0, "hello").unwrap();
        sync(&mut b, &a);
        let del = next_id(&a);
        a.text("t").delete(0, 5).unwrap();
        // Concurrently: B has not seen the delete.
        b.text("t").insert(5, " world").unwrap();
        a.cancel(del, 5).unwrap();
        assert_eq!(plain(&mut a), "hello");
        exchange(&mut a, &mut b, a_first);
        assert_eq!(plain(&mut a), "hello world");
        converged(&mut a, &mut b);
    }
}

/// A deletes the space in "a b"; B types "X" right after it; A cancels:
/// the space comes back where it was, with B's X where B put it.
#[test]
fn a_cancelled_delete_comes_back_in_place_between_concurrent_text() {
    for a_first in [true, false] {
        let (mut a, mut b) = (doc(1), doc(2));
        a.text("t").insert(0, "a b").unwrap();
        sync(&mut b, &a);
        let del = next_id(&a);
        a.text("t").delete(1, 1).unwrap();
        // Concurrently: B types right after the space it still sees.
        b.text("t").insert(2, "X").unwrap();
        a.cancel(del, 1).unwrap();
        exchange(&mut a, &mut b, a_first);
        let text = plain(&mut a);
        converged(&mut a, &mut b);
        assert_eq!(text, "a Xb", "the original order");
    }
}

/// A bolds "Hello"; concurrently B types "!!" at its end (bold expands,
/// so "!!" is bold only because of A's mark); A cancels the mark: no
/// bold is left, "!!" included.
#[test]
fn a_cancelled_mark_unstyles_text_that_grew_into_it() {
    for a_first in [true, false] {
        let (mut a, mut b) = (doc(1), doc(2));
        a.text("t").insert(0, "Hello").unwrap();
        sync(&mut b, &a);
        let mark = next_id(&a);
        a.text("t").mark(0..5, "bold", true).unwrap();
        sync(&mut b, &a);
        b.text("t").insert(5, "!!").unwrap();
        assert_eq!(
            b.text("t").to_delta(),
            vec![Delta::insert_with("Hello!!", [("bold", true)])]
        );
        a.cancel(mark, 1).unwrap();
        exchange(&mut a, &mut b, a_first);
        assert_eq!(a.text("t").to_delta(), vec![Delta::insert("Hello!!")]);
        converged(&mut a, &mut b);
    }
}

/// A bolds a range; later B sets bold to another value on part of it; A
/// cancels its mark: B's later format stays, the rest shows as if A's
/// mark had never been made.
#[test]
fn a_cancelled_mark_leaves_later_marks_of_its_key() {
    for a_first in [true, false] {
        let (mut a, mut b) = (doc(1), doc(2));
        a.text("t").insert(0, "abcdef").unwrap();
        let mark = next_id(&a);
        a.text("t").mark(0..6, "bold", true).unwrap();
        sync(&mut b, &a);
        b.text("t").mark(2..4, "bold", "heavy").unwrap();
        sync(&mut a, &b);
        a.cancel(mark, 1).unwrap();
        exchange(&mut a, &mut b, a_first);
        assert_eq!(
            a.text("t").to_delta(),
            vec![
                Delta::insert("ab"),
                Delta::insert_with("cd", [("bold", "heavy")]),
                Delta::insert("ef"),
            ]
        );
        converged(&mut a, &mut b);
    }
}

/// A char both peers deleted stays deleted when one of them cancels its
/// delete, and shows again when the other cancels too.
#[test]
fn a_char_deleted_twice_stays_deleted_until_both_deletes_are_cancelled() {
    let (mut a, mut b) = (doc(1), doc(2));
    a.text("t").insert(0, "xyz").unwrap();
    sync(&mut b, &a);
    let da = next_id(&a);
    a.text("t").delete(1, 1).unwrap();
    let db = next_id(&b);
    b.text("t").delete(1, 1).unwrap();
    exchange(&mut a, &mut b, true);
    a.cancel(da, 1).unwrap();
    exchange(&mut a, &mut b, true);
    assert_eq!(plain(&mut a), "xz");
    converged(&mut a, &mut b);
    b.cancel(db, 1).unwrap();
    exchange(&mut a, &mut b, false);
    assert_eq!(plain(&mut a), "xyz");
    converged(&mut a, &mut b);
}

/// Redo is a cancel of the cancel: the delete is in force again. Two
/// peers cancelling the same op (one of them through a copy of its
/// history) keep it cancelled when one of the cancels is cancelled.
#[test]
fn cancelling_a_cancel_puts_its_target_back_in_force() {
    let mut a = doc(1);
    a.text("t").insert(0, "hello world").unwrap();
    let del = next_id(&a);
    a.text("t").delete(5, 6).unwrap();
    let undo = next_id(&a);
    a.cancel(del, 6).unwrap();
    assert_eq!(plain(&mut a), "hello world");
    let redo = next_id(&a);
    a.cancel(undo, 6).unwrap();
    assert_eq!(plain(&mut a), "hello");
    a.cancel(redo, 6).unwrap();
    assert_eq!(plain(&mut a), "hello world");
    let mut b = doc(2);
    sync(&mut b, &a);
    assert_eq!(plain(&mut b), "hello world");
    converged(&mut a, &mut b);
}

/// Two cancels of one op both hold it cancelled: cancelling one of
/// them leaves the op cancelled by the other (what concurrent undos of
/// one step by two replicas of a peer come to); cancelling both puts
/// it back in force.
#[test]
fn two_cancels_of_one_op_both_hold_it() {
    let mut a = doc(1);
    a.text("t").insert(0, "abc").unwrap();
    let del = next_id(&a);
    a.text("t").delete(0, 3).unwrap();
    let c1 = next_id(&a);
    a.cancel(del, 3).unwrap();
    let c2 = next_id(&a);
    a.cancel(del, 3).unwrap();
    assert_eq!(plain(&mut a), "abc");
    a.cancel(c1, 3).unwrap();
    assert_eq!(plain(&mut a), "abc");
    let mut b = doc(2);
    sync(&mut b, &a);
    assert_eq!(plain(&mut b), "abc");
    a.cancel(c2, 3).unwrap();
    assert_eq!(plain(&mut a), "");
    sync(&mut b, &a);
    assert_eq!(plain(&mut b), "");
    converged(&mut a, &mut b);
}

/// Only this peer's deletes, mark starts and cancels can be cancelled;
/// nothing changes when the call is refused.
#[test]
fn cancel_refuses_other_ops() {
    let (mut a, mut b) = (doc(1), doc(2));
    let ins = next_id(&a);
    a.text("t").insert(0, "abc").unwrap();
    sync(&mut b, &a);
    let del = next_id(&b);
    b.text("t").delete(0, 1).unwrap();
    sync(&mut a, &b);
    let before = a.version();
    assert_eq!(a.cancel(ins, 1), Err(weft::Error::NotCancellable(ins)));
    assert_eq!(a.cancel(del, 1), Err(weft::Error::NotCancellable(del)));
    let unknown = OpId::new(1, 99);
    assert_eq!(a.cancel(unknown, 1), Err(weft::Error::UnknownOp(unknown)));
    assert_eq!(a.version(), before);
    assert_eq!(plain(&mut a), "bc");
    a.assert_invariants();
}

/// Versions before and after a cancel show as they were: checkout,
/// fork_at and diff replay the history, cancels included.
#[test]
fn versions_around_a_cancel_show_as_they_were() {
    let mut a = doc(1);
    a.text("t").insert(0, "hello").unwrap();
    a.text("t").mark(0..5, "bold", true).unwrap();
    a.commit();
    let del = next_id(&a);
    a.text("t").delete(1, 3).unwrap();
    a.commit();
    let deleted = a.frontiers();
    a.cancel(del, 3).unwrap();
    a.commit();
    let revived = a.frontiers();
    let bold = vec![Delta::insert_with("hello", [("bold", true)])];
    assert_eq!(a.text("t").to_delta(), bold);
    let at = |a: &Doc, f: &weft::Frontiers| a.fork_at(f).unwrap().text("t").to_delta();
    assert_eq!(
        at(&a, &deleted),
        vec![Delta::insert_with("ho", [("bold", true)])]
    );
    assert_eq!(at(&a, &revived), bold);
    a.checkout(&deleted).unwrap();
    assert_eq!(a.text("t").to_string(), "ho");
    a.checkout_to_latest().unwrap();
    assert_eq!(a.text("t").to_delta(), bold);
    let diff = a.diff(&deleted, &revived).unwrap();
    assert_eq!(diff.len(), 1);
}

/// A mirror fed only the change events of a document (local cancels and
/// imported ones) equals its text.
#[test]
fn events_follow_cancels() {
    let (mut a, mut b) = (doc(1), doc(2));
    let mirrors: Vec<Arc<Mutex<Vec<Delta>>>> = (0..2).map(|_| Arc::default()).collect();
    let subs: Vec<_> = [&mut a, &mut b]
        .into_iter()
        .zip(&mirrors)
        .map(|(d, m)| {
            let m = Arc::clone(m);
            d.subscribe(move |e| {
                let mut m = m.lock().unwrap();
                for t in e.texts.iter().filter(|t| t.name == "t") {
                    t.apply_to(&mut m, e.unit).unwrap();
                }
            })
        })
        .collect();
    a.text("t").insert(0, "Hello world").unwrap();
    a.commit();
    sync(&mut b, &a);
    let mark = next_id(&a);
    a.text("t").mark(0..5, "bold", true).unwrap();
    let del = next_id(&a);
    a.text("t").delete(5, 6).unwrap();
    a.commit();
    sync(&mut b, &a);
    a.cancel(del, 6).unwrap();
    a.commit();
    a.cancel(mark, 1).unwrap();
    a.commit();
    sync(&mut b, &a);
    for (d, m) in [&mut a, &mut b].into_iter().zip(&mirrors) {
        assert_eq!(*m.lock().unwrap(), d.text("t").to_delta());
    }
    assert_eq!(a.text("t").to_string(), "Hello world");
    drop(subs);
    let _ = Unit::Char;
}

/// `Doc::revert_ops` refuses counters this peer has not made and a
/// checked-out document; nothing changes then.
#[test]
fn revert_ops_refuses_unknown_ops_and_detached_documents() {
    let mut a = doc(1);
    a.text("t").insert(0, "abc").unwrap();
    a.commit();
    let v = a.frontiers();
    let version = a.version();
    assert_eq!(
        a.revert_ops(std::slice::from_ref(&(2..9))),
        Err(weft::Error::UnknownOp(OpId::new(1, 3)))
    );
    assert_eq!(a.version(), version);
    assert_eq!(plain(&mut a), "abc");
    a.checkout(&v).unwrap();
    assert_eq!(
        a.revert_ops(std::slice::from_ref(&(0..3))),
        Err(weft::Error::Detached)
    );
    a.checkout_to_latest().unwrap();
    a.revert_ops(std::slice::from_ref(&(0..3))).unwrap();
    assert_eq!(plain(&mut a), "");
    a.assert_invariants();
}

/// An undo manager attached to a lazily opened snapshot, before its
/// history loads: undoing a delete still finds another peer's delete of
/// the same char in the history loaded later (the index of deletes
/// starts again when the runs move under it).
#[test]
fn undo_after_a_lazy_snapshot_loads_still_sees_other_deletes() {
    let text: String = (0..3_000)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let mut a = doc(1);
    let mut undo_a = weft::UndoManager::new(&mut a);
    a.text("t").insert(0, &text).unwrap();
    a.commit();
    // A deletes char 2,500 and undoes it: it shows, its delete is in the
    // history.
    a.text("t").delete(2_500, 1).unwrap();
    a.commit();
    undo_a.undo(&mut a).unwrap();
    assert_eq!(plain(&mut a), text);
    let mut c = doc(3);
    c.import(&a.export(ExportMode::Snapshot).unwrap()).unwrap();
    // C deletes 20 chars far from it, one commit each, while its history
    // is not loaded (the first edit loads all but the history's op runs);
    // then the manager comes, and C deletes char 2,500 too.
    for k in 0..20 {
        c.text("t").delete(k, 1).unwrap();
        c.commit();
    }
    let mut undo_c = weft::UndoManager::new(&mut c);
    c.text("t").delete(2_480, 1).unwrap();
    c.commit();
    let mut want: String = text
        .chars()
        .enumerate()
        .filter(|&(i, _)| !(i < 40 && i % 2 == 0) && i != 2_500)
        .map(|(_, ch)| ch)
        .collect();
    assert_eq!(plain(&mut c), want);
    // A redoes: its delete is in force again.
    undo_a.redo(&mut a).unwrap();
    c.import(&full(&a)).unwrap();
    undo_c.undo(&mut c).unwrap();
    assert!(plain(&mut c) == want, "A's delete holds");
    exchange(&mut a, &mut c, true);
    want = plain(&mut a);
    assert_eq!(plain(&mut c), want);
    converged(&mut a, &mut c);
}

/// A document loaded from a snapshot holds its deleted chars without
/// their text (the text state keeps none for tombstones it loads); a
/// cancel of their delete arriving later must still show them, with the
/// text the history holds. (Found by the random driver: the chars
/// stayed hidden, and the document read differently from its own
/// history.)
#[test]
fn a_cancelled_delete_shows_its_char_in_a_document_loaded_from_a_snapshot() {
    for load_first in [false, true] {
        let mut a = doc(2);
        a.text("t").insert(0, "aßc").unwrap();
        a.commit();
        let delete = next_id(&a);
        a.text("t").delete(1, 2).unwrap();
        a.commit();
        let mut b = doc(1);
        b.import(&a.export(ExportMode::Snapshot).unwrap()).unwrap();
        if load_first {
            assert_eq!(b.text("t").to_string(), "a");
        }
        a.cancel(delete, 2).unwrap();
        a.commit();
        assert_eq!(a.text("t").to_string(), "aßc");
        sync(&mut b, &a);
        assert_eq!(b.text("t").to_string(), "aßc", "load_first {load_first}");
        assert_eq!(b.text("t").to_delta(), a.text("t").to_delta());
        b.assert_invariants();
        // Deleted again (the cancel cancelled), and back.
        let cancel = OpId::new(2, delete.counter + 2);
        a.cancel(cancel, 2).unwrap();
        a.commit();
        sync(&mut b, &a);
        assert_eq!(b.text("t").to_string(), "a");
        b.assert_invariants();
    }
}

/// One run of cancels may flip a delete off and back on several times
/// along its chains (a redo that cancels both a cancel of a delete and a
/// cancel of the cancel that cancelled that delete): the char must show
/// as the final counts say, not as the last flip seen. (Found by the
/// random driver: the char stayed deleted after the redo.)
#[test]
fn a_delete_flipped_twice_in_one_run_shows_its_final_state() {
    let mut a = doc(2);
    a.text("t").insert(0, "bc").unwrap(); // ops 0, 1
    a.text("t").delete(1, 1).unwrap(); // op 2 deletes "c"
    a.revert_ops(std::slice::from_ref(&(2..3))).unwrap(); // op 3 cancels op 2
    a.commit();
    assert_eq!(a.text("t").to_string(), "bc");
    // Undo all: ops 4, 5 delete "b", "c"; 6 cancels 2; 7 cancels 3.
    a.revert_ops(std::slice::from_ref(&(0..4))).unwrap();
    a.commit();
    assert_eq!(a.text("t").to_string(), "");
    // Redo all: 8, 9 cancel the deletes 4, 5; 10 cancels 6 (2 back in
    // force), 11 cancels 7 (3 back in force: 2 cancelled again).
    let mut b = doc(1);
    sync(&mut b, &a);
    a.revert_ops(std::slice::from_ref(&(4..8))).unwrap();
    a.commit();
    assert_eq!(a.text("t").to_string(), "bc");
    a.assert_invariants();
    sync(&mut b, &a);
    assert_eq!(b.text("t").to_string(), "bc", "remote");
    let mut c = Doc::new();
    c.import(&full(&a)).unwrap();
    assert_eq!(c.text("t").to_string(), "bc", "whole history");
}

/// A document opened from a snapshot keeps no text for its deleted
/// chars' items (the log's inserts have it): cancelling a delete that
/// was in force when it loaded shows the chars again all the same.
#[test]
fn a_delete_loaded_from_a_snapshot_comes_back_when_cancelled() {
    let mut a = doc(1);
    a.text("t").insert(0, "abcdef").unwrap();
    a.commit();
    let del = next_id(&a);
    a.text("t").delete(2, 2).unwrap();
    a.commit();
    let mut s = Doc::new();
    s.import(&a.export(ExportMode::Snapshot).unwrap()).unwrap();
    assert_eq!(plain(&mut s), "abef");
    a.cancel(del, 2).unwrap();
    a.commit();
    sync(&mut s, &a);
    assert_eq!(plain(&mut s), "abcdef");
    s.assert_invariants();
    converged(&mut a, &mut s);
}

/// A revert that writes back both registers (text "t"'s and map "m"'s)
/// races a concurrent `delete_text` by (Lamport, peer). The write-backs
/// come in the order of the registers' names ("m"'s, then "t"'s), however
/// the reverting document learnt the two maps, so the outcome follows
/// from the ops alone (it followed the order the document first saw each
/// register map, which the reference model could not tell: seeds 23345
/// of the shallow random test and 396 of the undo one).
#[test]
fn a_revert_writes_back_registers_in_name_order_whatever_came_first() {
    use weft_testkit::{drive, Action, Checks, PosUnit};
    for map_first in [false, true] {
        let mut a = doc(1);
        let mut b = doc(2);
        b.text("t").insert(0, "a").unwrap();
        b.map("m").set("k", 1).unwrap();
        if map_first {
            b.delete_map("m").unwrap();
            b.delete_text("t").unwrap();
        } else {
            b.delete_text("t").unwrap();
            b.delete_map("m").unwrap();
        }
        b.commit();
        b.revert_ops(std::slice::from_ref(&(2..4))).unwrap();
        b.commit();
        assert_eq!(b.text("t").to_string(), "a");
        assert_eq!(b.map("m").get("k"), Some(&weft::Value::from(1)));
        // Peer 1's delete of "t" is at Lamport 5, as B's write-back of "t"
        // (op 5, after "m"'s): the greater peer, B, wins everywhere, and
        // "t" is the first incarnation again, with A's text too.
        a.text("t").insert(0, "Hello").unwrap();
        a.delete_text("t").unwrap();
        a.commit();
        exchange(&mut a, &mut b, true);
        assert_eq!(a.text("t").to_string(), "Helloa", "map first: {map_first}");
        assert_eq!(b.text("t").to_string(), "Helloa", "map first: {map_first}");
    }
    // The driver against the model: the same ops, as actions.
    let insert = |peer, text| Action::Insert {
        peer,
        pos: 0,
        unit: PosUnit::Char,
        text,
    };
    for map_first in [false, true] {
        let actions = [
            insert(1, 0),
            Action::MapSet {
                peer: 1,
                key: 0,
                value: 1,
            },
            Action::DeleteContainer {
                peer: 1,
                map: map_first,
            },
            Action::DeleteContainer {
                peer: 1,
                map: !map_first,
            },
            Action::Revert {
                peer: 1,
                from: 2,
                len: 1,
            },
            insert(0, 9),
            Action::DeleteContainer {
                peer: 0,
                map: false,
            },
            Action::SyncAll,
        ];
        let checks = Checks::model_only();
        drive(2, &actions, checks, 0);
    }
}
