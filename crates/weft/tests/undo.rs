//! UndoManager: undo and redo of one peer's steps, leaving other peers'
//! edits in place, with marks, grouping, exclusion and selections.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use weft::{CommitOptions, Delta, Doc, ExportMode, Side, UndoManager, VersionVector};
use weft_testkit::{doc, exchange, sync, Action, Random, Rng};

fn text(d: &mut Doc) -> String {
    d.text("t").to_string()
}

#[test]
fn undo_keeps_a_concurrent_remote_edit_for_both_peer_orders() {
    for (a, b) in [(1, 2), (2, 1)] {
        let mut alice = doc(a);
        alice.text("t").insert(0, "world").unwrap();
        alice.commit();
        let mut bob = alice.fork();
        bob.set_peer_id(b).unwrap();
        let mut undo = UndoManager::new(&mut alice);
        alice.text("t").insert(0, "Hello ").unwrap();
        alice.commit();
        bob.text("t").insert(0, "Bob: ").unwrap();
        sync(&mut alice, &bob);
        let merged = text(&mut alice);
        assert!(merged == "Bob: Hello world" || merged == "Hello Bob: world");
        assert!(undo.undo(&mut alice).unwrap().is_some());
        assert_eq!(text(&mut alice), "Bob: world");
        assert!(!undo.can_undo());
        // The undo is ordinary ops: Bob gets the same text.
        sync(&mut bob, &alice);
        assert_eq!(text(&mut bob), "Bob: world");
        assert!(undo.redo(&mut alice).unwrap().is_some());
        assert_eq!(text(&mut alice), merged);
        sync(&mut bob, &alice);
        assert_eq!(text(&mut bob), merged);
    }
}

#[test]
fn marks_and_unmarks_are_undone_and_redone() {
    let mut d = doc(1);
    d.text("t").insert(0, "Hello world").unwrap();
    d.text("t").mark(0..5, "bold", true).unwrap();
    d.commit();
    let mut undo = UndoManager::new(&mut d);
    let before = d.text("t").to_delta();
    d.text("t").mark(3..8, "italic", true).unwrap();
    d.commit();
    d.text("t").unmark(0..2, "bold").unwrap();
    d.commit();
    d.text("t").mark(0..11, "bold", "heavy").unwrap();
    d.commit();
    let after = d.text("t").to_delta();
    let mut states = Vec::new();
    while undo.can_undo() {
        states.push(d.text("t").to_delta());
        undo.undo(&mut d).unwrap();
    }
    assert_eq!(d.text("t").to_delta(), before);
    assert_eq!(undo.redo_count(), 3);
    while undo.redo(&mut d).unwrap().is_some() {
        assert_eq!(Some(d.text("t").to_delta()), states.pop());
    }
    assert!(states.is_empty());
    assert_eq!(d.text("t").to_delta(), after);
    // A deleted styled run comes back with its styles.
    d.text("t").delete(0, 6).unwrap();
    d.commit();
    undo.undo(&mut d).unwrap();
    assert_eq!(d.text("t").to_delta(), after);
}

#[test]
fn steps_group_by_interval_and_checkpoint_and_respect_limits() {
    let now = Arc::new(AtomicU64::new(0));
    let clock = Arc::clone(&now);
    let mut d = doc(1);
    let mut undo = UndoManager::with_clock(&mut d, move || clock.load(Ordering::SeqCst));
    undo.set_merge_interval(500);
    for (i, c) in "abc".chars().enumerate() {
        now.store(100 * i as u64, Ordering::SeqCst);
        d.text("t").insert(i, &c.to_string()).unwrap();
        d.commit();
    }
    assert_eq!(undo.undo_count(), 1, "typed within the interval: one step");
    undo.checkpoint();
    d.text("t").insert(3, "d").unwrap();
    d.commit();
    now.store(2000, Ordering::SeqCst);
    d.text("t").insert(4, "e").unwrap();
    d.commit();
    assert_eq!(undo.undo_count(), 3);
    // Excluded origins are not undone.
    undo.add_exclude_origin_prefix("remote-ish");
    d.text("t").insert(0, ">").unwrap();
    d.commit_with(CommitOptions::new().origin("remote-ish:sync"));
    assert_eq!(undo.undo_count(), 3);
    undo.undo(&mut d).unwrap();
    assert_eq!(text(&mut d), ">abcd");
    undo.undo(&mut d).unwrap();
    assert_eq!(text(&mut d), ">abc");
    undo.undo(&mut d).unwrap();
    assert_eq!(text(&mut d), ">");
    assert_eq!(undo.undo(&mut d).unwrap(), None);
    // A new step clears the redo stack.
    assert_eq!(undo.redo_count(), 3);
    d.text("t").insert(1, "x").unwrap();
    d.commit();
    assert!(!undo.can_redo());
    // At most `max` steps.
    undo.set_max_steps(2);
    for i in 0..5 {
        now.store(10_000 * (i + 1), Ordering::SeqCst);
        d.text("t").insert(0, "y").unwrap();
        d.commit();
    }
    assert_eq!(undo.undo_count(), 2);
}

#[test]
fn the_selection_of_a_step_comes_back_after_undo() {
    let mut alice = doc(1);
    alice.text("t").insert(0, "Say Hello world").unwrap();
    alice.commit();
    let mut bob = alice.fork();
    bob.set_peer_id(2).unwrap();
    let mut undo = UndoManager::new(&mut alice);
    // "Hello" selected, then deleted.
    let start = alice.text("t").cursor(4, Side::After).unwrap();
    let end = alice.text("t").cursor(9, Side::Before).unwrap();
    undo.set_selection(&alice, &[start, end]).unwrap();
    alice.text("t").delete(4, 6).unwrap();
    alice.commit();
    assert_eq!(text(&mut alice), "Say world");
    // A peer types before the selection meanwhile.
    bob.text("t").insert(0, ">> ").unwrap();
    sync(&mut alice, &bob);
    let cursors = undo.undo(&mut alice).unwrap().expect("a step");
    assert_eq!(text(&mut alice), ">> Say Hello world");
    let pos: Vec<usize> = cursors
        .iter()
        .map(|c| alice.cursor_pos(c).unwrap())
        .collect();
    assert_eq!(pos, vec![7, 12], "the selection covers \"Hello\" again");
}

#[test]
fn concurrent_undos_converge() {
    let mut a = doc(1);
    a.text("t").insert(0, "shared text").unwrap();
    a.commit();
    let mut b = a.fork();
    b.set_peer_id(2).unwrap();
    let mut ua = UndoManager::new(&mut a);
    let mut ub = UndoManager::new(&mut b);
    a.text("t").delete(0, 7).unwrap();
    a.commit();
    b.text("t").insert(11, "!").unwrap();
    b.text("t").mark(0..6, "bold", true).unwrap();
    b.commit();
    sync(&mut a, &b);
    sync(&mut b, &a);
    ua.undo(&mut a).unwrap();
    ub.undo(&mut b).unwrap();
    sync(&mut a, &b);
    sync(&mut b, &a);
    assert_eq!(a.text("t").to_delta(), b.text("t").to_delta());
    assert_eq!(a.text("t").to_delta(), vec![Delta::insert("shared text")]);
}

/// Peer A types, deletes in its own new text and marks links; B and C
/// delete anything and mark bold, and never hear from A until the end
/// (they sync among themselves; A hears from them). Undoing all of A's
/// steps leaves A with B's text and styles; redoing them all brings A's
/// document back.
///
/// A peer undoing every one of its steps leaves exactly the document the
/// other peers' ops make alone, and redoing them all gives back the
/// document before the undos, whatever A did: it types and deletes
/// anywhere (in others' text too, and chars others deleted as well),
/// marks and unmarks, while the others type at the very places A deleted.
/// (B and C never hear from A here, so their documents are "their ops
/// alone".)
#[test]
fn undoing_all_of_a_peers_steps_removes_exactly_its_edits() {
    let seeds: u64 = 1000
        + std::env::var("WEFT_STRESS_SEEDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
    for seed in 0..seeds {
        let mut rng = Rng::new(seed);
        let mut base = doc(9);
        base.text("t")
            .insert(0, "The quick brown fox jumps over the lazy dog")
            .unwrap();
        base.commit();
        let mut peers: Vec<Doc> = (1..=3)
            .map(|p| {
                let mut d = base.fork();
                d.set_peer_id(p).unwrap();
                d
            })
            .collect();
        let mut undo = UndoManager::new(&mut peers[0]);
        // Mirrors of A's text fed only its events, in chars and UTF-16.
        let start = peers[0].text("t").to_delta();
        let mirrors: Vec<Arc<std::sync::Mutex<Vec<Delta>>>> = (0..2)
            .map(|_| Arc::new(std::sync::Mutex::new(start.clone())))
            .collect();
        let _subs: Vec<_> = [weft::Unit::Char, weft::Unit::Utf16]
            .into_iter()
            .zip(&mirrors)
            .map(|(unit, m)| {
                let m = Arc::clone(m);
                peers[0].subscribe_in(unit, move |e| {
                    let mut m = m.lock().unwrap();
                    for t in e.texts.iter().filter(|t| t.name == "t") {
                        t.apply_to(&mut m, e.unit).unwrap();
                    }
                })
            })
            .collect();
        let check_mirrors = |d: &mut Doc, what: &str| {
            let now = d.text("t").to_delta();
            for m in &mirrors {
                assert_eq!(*m.lock().unwrap(), now, "seed {seed}: mirror {what}");
            }
        };
        for _ in 0..40 {
            let i = rng.below(3);
            let len = peers[i].text("t").len();
            match rng.below(10) {
                0..=3 => {
                    let s = ["a", "xy", "é", "😀", " ", "hello"][rng.below(6)];
                    let pos = rng.below(len + 1);
                    peers[i].text("t").insert(pos, s).unwrap();
                    // Sometimes a second insert elsewhere in the same
                    // step: its chars continue the first's seqs but not
                    // its place.
                    if rng.chance(30) {
                        let len = peers[i].text("t").len();
                        let pos = rng.below(len + 1);
                        peers[i].text("t").insert(pos, "zz").unwrap();
                    }
                }
                4..=6 if len > 0 => {
                    let pos = rng.below(len);
                    let n = 1 + rng.below((len - pos).min(4));
                    peers[i].text("t").delete(pos, n).unwrap();
                }
                7..=8 if len > 1 => {
                    let pos = rng.below(len - 1);
                    let n = 1 + rng.below(len - pos - 1);
                    let mut t = peers[i].text("t");
                    let key = ["bold", "link"][rng.below(2)];
                    if rng.chance(70) {
                        let value = if key == "bold" {
                            weft::Value::Bool(true)
                        } else {
                            weft::Value::from(
                                ["https://a.example", "https://b.example"][rng.below(2)],
                            )
                        };
                        t.mark(pos..pos + n, key, value).unwrap();
                    } else {
                        t.unmark(pos..pos + n, key).unwrap();
                    }
                }
                _ => {}
            }
            peers[i].commit();
            // B and C sync; A hears from them.
            if rng.chance(30) {
                let (x, y) = if rng.chance(50) { (1, 2) } else { (2, 1) };
                let from = peers[x].clone();
                sync(&mut peers[y], &from);
            }
            if rng.chance(30) {
                let from = peers[1 + rng.below(2)].clone();
                sync(&mut peers[0], &from);
            }
        }
        let (b, c) = (peers[1].clone(), peers[2].clone());
        sync(&mut peers[1], &c);
        sync(&mut peers[0], &b);
        sync(&mut peers[0], &c);
        let a_done = peers[0].text("t").to_delta();
        let mut undone = 0;
        while undo.undo(&mut peers[0]).unwrap().is_some() {
            undone += 1;
            check_mirrors(&mut peers[0], "undo");
        }
        assert_eq!(
            peers[0].text("t").to_delta(),
            peers[1].text("t").to_delta(),
            "seed {seed}: after undoing {undone} steps"
        );
        while undo.redo(&mut peers[0]).unwrap().is_some() {
            check_mirrors(&mut peers[0], "redo");
        }
        assert_eq!(peers[0].text("t").to_delta(), a_done, "seed {seed}: redo");
        // Another replica importing A's history (undos included) agrees.
        let mut other = Doc::new();
        other
            .import(
                &peers[0]
                    .export(ExportMode::Updates {
                        from: &VersionVector::new(),
                    })
                    .unwrap(),
            )
            .unwrap();
        assert_eq!(other.text("t").to_delta(), a_done, "seed {seed}: replica");
    }
}

/// Two managers on one document that both record the same commits: one's
/// undo is not the other's. Both undoing one step delete its text twice
/// (by id), so it comes back only when both redo it.
#[test]
fn a_manager_takes_another_managers_undo_as_an_edit_to_rebase_past() {
    let mut d = Doc::new();
    let mut title = UndoManager::new(&mut d);
    let mut body = UndoManager::new(&mut d);
    d.text("t").insert(0, "ab").unwrap();
    d.commit();
    title.checkpoint();
    body.checkpoint();
    d.text("b").insert(0, "xy").unwrap();
    d.commit();
    assert!(title.undo(&mut d).unwrap().is_some());
    assert_eq!(d.text("b").to_string(), "");
    // `body` still undoes and redoes without an error on the step `title`
    // already undid.
    for _ in 0..3 {
        body.undo(&mut d).unwrap();
    }
    assert_eq!(d.text("t").to_string(), "");
    assert_eq!(d.text("b").to_string(), "");
    assert!(title.redo(&mut d).unwrap().is_some());
    // `body` undid the same step: its delete of "xy" still holds.
    assert_eq!(d.text("b").to_string(), "");
    assert!(body.redo(&mut d).unwrap().is_some());
    assert_eq!(d.text("t").to_string(), "ab");
    assert!(body.redo(&mut d).unwrap().is_some());
    assert_eq!(d.text("b").to_string(), "xy");
}

/// Runs `scenario` for both peer orders (A's id below or above B's) and
/// both delivery orders; it returns A's text after the exchange.
fn both_orders(scenario: impl Fn(&mut Doc, &mut Doc, bool) -> Vec<Delta>, want: &[Delta]) {
    for (pa, pb) in [(1, 2), (2, 1)] {
        for a_first in [true, false] {
            let (mut a, mut b) = (doc(pa), doc(pb));
            let got = scenario(&mut a, &mut b, a_first);
            assert_eq!(got, want, "peers {pa}/{pb}, A first: {a_first}");
            assert_eq!(b.text("t").to_delta(), want);
            assert_eq!(a.history_runs().unwrap(), b.history_runs().unwrap());
            a.assert_invariants();
            b.assert_invariants();
        }
    }
}

/// Peer A deletes "hello"; B concurrently appends " world" right after
/// it; A undoes: "hello world" (a change-delta undo gave " worldhello").
#[test]
fn undo_of_a_delete_restores_it_before_text_typed_after_it() {
    both_orders(
        |a, b, a_first| {
            a.text("t").insert(0, "hello").unwrap();
            a.commit();
            sync(b, a);
            let mut undo = UndoManager::new(a);
            a.text("t").delete(0, 5).unwrap();
            a.commit();
            b.text("t").insert(5, " world").unwrap();
            b.commit();
            exchange(a, b, a_first);
            undo.undo(a).unwrap().unwrap();
            exchange(a, b, !a_first);
            a.text("t").to_delta()
        },
        &[Delta::insert("hello world")],
    );
}

/// A deletes the space of "a b"; B types "X" right after it; A undoes:
/// "a Xb", the original order (a change-delta undo gave "aX b").
#[test]
fn undo_of_a_delete_restores_chars_in_place_around_concurrent_text() {
    both_orders(
        |a, b, a_first| {
            a.text("t").insert(0, "a b").unwrap();
            a.commit();
            sync(b, a);
            let mut undo = UndoManager::new(a);
            a.text("t").delete(1, 1).unwrap();
            a.commit();
            b.text("t").insert(2, "X").unwrap();
            b.commit();
            exchange(a, b, a_first);
            undo.undo(a).unwrap().unwrap();
            exchange(a, b, !a_first);
            a.text("t").to_delta()
        },
        &[Delta::insert("a Xb")],
    );
}

/// A bolds "Hello"; concurrently B types "!!" at its end (bold only
/// because of A's expanding mark); A undoes: nothing stays bold.
#[test]
fn undo_of_a_mark_unstyles_text_that_grew_into_it() {
    both_orders(
        |a, b, a_first| {
            a.text("t").insert(0, "Hello").unwrap();
            a.commit();
            sync(b, a);
            let mut undo = UndoManager::new(a);
            a.text("t").mark(0..5, "bold", true).unwrap();
            a.commit();
            sync(b, a);
            b.text("t").insert(5, "!!").unwrap();
            b.commit();
            exchange(a, b, a_first);
            undo.undo(a).unwrap().unwrap();
            exchange(a, b, !a_first);
            a.text("t").to_delta()
        },
        &[Delta::insert("Hello!!")],
    );
}

/// A bolds a range; later B sets bold to another value on part of it; A
/// undoes: B's later format stays (a change-delta undo wiped it).
#[test]
fn undo_of_a_mark_keeps_a_later_mark_of_its_key() {
    both_orders(
        |a, b, a_first| {
            a.text("t").insert(0, "abcdef").unwrap();
            a.commit();
            let mut undo = UndoManager::new(a);
            a.text("t").mark(0..6, "bold", true).unwrap();
            a.commit();
            sync(b, a);
            b.text("t").mark(2..4, "bold", "heavy").unwrap();
            b.commit();
            exchange(a, b, a_first);
            undo.undo(a).unwrap().unwrap();
            exchange(a, b, !a_first);
            a.text("t").to_delta()
        },
        &[
            Delta::insert("ab"),
            Delta::insert_with("cd", [("bold", "heavy")]),
            Delta::insert("ef"),
        ],
    );
}

/// A char both peers deleted stays deleted when A undoes its delete.
#[test]
fn undo_of_a_delete_keeps_a_char_another_peer_deleted_too() {
    both_orders(
        |a, b, a_first| {
            a.text("t").insert(0, "xyz").unwrap();
            a.commit();
            sync(b, a);
            let mut undo = UndoManager::new(a);
            a.text("t").delete(0, 2).unwrap();
            a.commit();
            b.text("t").delete(1, 1).unwrap();
            b.commit();
            exchange(a, b, a_first);
            undo.undo(a).unwrap().unwrap();
            exchange(a, b, !a_first);
            a.text("t").to_delta()
        },
        &[Delta::insert("xz")],
    );
}

/// A manager refuses a document of another peer (it used to delete chars
/// of that unrelated document).
#[test]
fn a_manager_refuses_another_document() {
    let mut a = doc(1);
    let mut undo = UndoManager::new(&mut a);
    a.text("t").insert(0, "mine").unwrap();
    a.commit();
    let mut other = doc(2);
    other.text("t").insert(0, "other").unwrap();
    assert_eq!(undo.undo(&mut other), Err(weft::Error::ForeignDocument));
    assert_eq!(other.text("t").to_string(), "other");
    assert_eq!(undo.undo_count(), 1);
    assert!(undo.undo(&mut a).unwrap().is_some());
    assert_eq!(a.text("t").to_string(), "");
}

/// An undo that changes nothing visible (the text was deleted by a peer
/// meanwhile) still pushes its redo step, so the next redo redoes that
/// step and not a later one.
#[test]
fn an_undo_that_changes_nothing_visible_still_has_its_redo() {
    let (mut a, mut b) = (doc(1), doc(2));
    let mut undo = UndoManager::new(&mut a);
    a.text("t").insert(0, "one").unwrap();
    a.commit();
    a.text("t").insert(3, " two").unwrap();
    a.commit();
    sync(&mut b, &a);
    b.text("t").delete(3, 4).unwrap();
    sync(&mut a, &b);
    assert_eq!(a.text("t").to_string(), "one");
    undo.undo(&mut a).unwrap().unwrap(); // " two": gone already
    assert_eq!(a.text("t").to_string(), "one");
    assert_eq!(undo.redo_count(), 1);
    undo.undo(&mut a).unwrap().unwrap(); // "one"
    assert_eq!(a.text("t").to_string(), "");
    undo.redo(&mut a).unwrap().unwrap();
    assert_eq!(a.text("t").to_string(), "one");
    undo.redo(&mut a).unwrap().unwrap();
    // " two" is back only in A's undo: B's delete still holds.
    assert_eq!(a.text("t").to_string(), "one");
    assert_eq!(undo.redo_count(), 0);
}

/// Undo managers of every peer undo and redo their steps (text, marks,
/// maps) while updates arrive stale, duplicated, out of order and as
/// snapshots into live documents: every replica equals the reference
/// model, cancels included, whenever what it holds changes.
#[test]
fn every_peer_undoing_and_redoing_matches_the_reference_model() {
    // Reimports and forks become undos and redos (more of them).
    fn undoable(a: &mut Action) -> bool {
        match *a {
            Action::Delete { ref mut len, .. } => {
                *len %= 4;
                true
            }
            Action::Reimport { peer } => {
                *a = Action::Undo { peer };
                true
            }
            Action::Fork { from, .. } => {
                *a = Action::Redo { peer: from };
                true
            }
            Action::Block { .. } | Action::Embed { .. } | Action::Corrupt { .. } => false,
            _ => true,
        }
    }
    let stats = Random {
        seeds: 20,
        keep: undoable,
        ..Random::new(150)
    }
    .run(0);
    assert!(stats.undos > 200, "{stats:?}");
}

/// The same with every kind of action: embeds, blocks and their
/// attributes, container deletes, damaged bytes, forks.
#[test]
fn undo_and_redo_among_every_action_match_the_reference_model() {
    let stats = Random {
        seeds: 10,
        ..Random::new(200)
    }
    .run(100);
    assert!(stats.undos > 30, "{stats:?}");
}

/// Over 1,000 seeds, three peers edit text, marks and maps, undo and
/// redo, and sync through every delivery (stale, duplicated, reordered,
/// snapshots into live documents); then everything is delivered, one
/// peer undoes every one of its steps, and every replica shows exactly
/// the document the other peers' ops make alone; it redoes them all, and
/// every replica shows what it did before the undos (see
/// `weft_testkit::undo_all` for the exact definitions, maps included).
#[test]
fn undoing_all_of_a_peers_steps_among_three_leaves_the_others_ops_alone() {
    // Half the commits are the undoing peer's (replica 0): more steps.
    fn keep(a: &mut Action) -> bool {
        match a {
            Action::Delete { len, .. } => {
                *len %= 4;
                true
            }
            Action::Commit { peer } => {
                if *peer % 2 == 0 {
                    *peer = 0;
                }
                true
            }
            Action::Insert { .. }
            | Action::Mark { .. }
            | Action::Unmark { .. }
            | Action::MapSet { .. }
            | Action::Sync { .. }
            | Action::Send { .. }
            | Action::Deliver { .. }
            | Action::SyncAll
            | Action::SyncSnapshot { .. }
            | Action::Undo { .. }
            | Action::Redo { .. } => true,
            _ => false,
        }
    }
    let seeds: u64 = 1000
        + std::env::var("WEFT_STRESS_SEEDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
    let mut stats = weft_testkit::Stats::default();
    for seed in 0..seeds {
        let actions = weft_testkit::random_actions_where(seed, 24, keep);
        let run = std::panic::catch_unwind(|| weft_testkit::undo_all(3, &actions, seed));
        match run {
            Ok(s) => stats += s,
            Err(_) => panic!("seed {seed} failed: {actions:#?}"),
        }
    }
    eprintln!("{stats:?}");
    assert!(stats.undos > 2 * seeds as usize, "{stats:?}");
}

/// Undoing a step that deleted a text and a map writes both registers
/// back in the order of their names (the map's first), whichever the
/// document deleted (or first saw) first: the write-backs' Lamport stamps,
/// and so which of them and a concurrent delete wins, are a function of
/// the history, not of the order this replica interned the registers.
/// (Random seed 396 of `undo_and_redo_among_every_action_match_the_reference_model`
/// with `WEFT_STRESS_SEEDS=300`, shrunk.)
#[test]
fn undoing_a_text_and_a_map_delete_writes_the_registers_back_in_name_order() {
    for text_first in [true, false] {
        let mut alice = doc(1);
        alice.map("m").set("b", 0).unwrap();
        alice.commit();
        let mut carol = doc(3);
        carol.text("t");
        carol.map("m");
        let mut undo = UndoManager::new(&mut carol);
        if text_first {
            carol.delete_text("t").unwrap();
            carol.delete_map("m").unwrap();
        } else {
            carol.delete_map("m").unwrap();
            carol.delete_text("t").unwrap();
        }
        carol.commit();
        let mut bob = doc(2);
        sync(&mut bob, &carol);
        // Carol's write-backs take Lamports 2 ("\u{1}m") and 3 ("\u{1}t");
        // Bob's delete of the map (after one insert) is concurrent, at 3.
        assert!(undo.undo(&mut carol).unwrap().is_some());
        bob.text("t").insert(0, "x").unwrap();
        bob.map("m");
        bob.delete_map("m").unwrap();
        bob.commit();
        sync(&mut carol, &bob);
        sync(&mut carol, &alice);
        sync(&mut alice, &carol);
        sync(&mut bob, &carol);
        for d in [&mut alice, &mut bob, &mut carol] {
            assert!(
                d.get_map("m").is_none(),
                "text deleted first: {text_first}: Bob's delete wins the map register"
            );
        }
    }
}
