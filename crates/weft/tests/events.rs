//! Change events in scenarios an editor binding meets: triggers and
//! origins, the update bytes of local commits, unsubscribing (also from
//! inside a callback), snapshots, pending updates released later, failed
//! and duplicate imports, several texts per event, and UTF-16 counting.
//! Every test that receives deltas also applies them to a mirror and
//! compares it with the document. A random test checks the events of
//! single edits (the fast path) against the general path.

use std::sync::{Arc, Mutex};

use weft::{
    CommitOptions, Delta, Doc, DocEvent, EventTrigger, ExportMode, Subscription, Unit,
    VersionVector,
};
use weft_testkit::doc;

fn updates(from: &Doc, to: &VersionVector) -> Vec<u8> {
    from.export(ExportMode::Updates { from: to }).unwrap()
}

/// Records every event `doc` fires, counted in `unit`.
fn record(doc: &mut Doc, unit: Unit) -> (Subscription, Arc<Mutex<Vec<DocEvent>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = Arc::clone(&seen);
    let sub = doc.subscribe_in(unit, move |e| s.lock().unwrap().push(e.clone()));
    (sub, seen)
}

/// Applies every recorded event's diffs of text `name` to `mirror`.
fn replay(events: &[DocEvent], name: &str, mirror: &mut Vec<Delta>) {
    for e in events {
        for diff in e.texts.iter().filter(|d| d.name == name) {
            diff.apply_to(mirror, e.unit).unwrap();
        }
    }
}

fn delta(doc: &Doc, name: &str) -> Vec<Delta> {
    doc.get_text(name).map(|t| t.to_delta()).unwrap_or_default()
}

#[test]
fn local_commits_and_imports_carry_their_trigger_and_origin() {
    let mut alice = doc(1);
    let mut bob = doc(2);
    let (_sub, seen) = record(&mut alice, Unit::Char);

    alice.text("t").insert(0, "Hello").unwrap();
    alice.commit_with(CommitOptions::new().origin("keyboard"));
    alice.text("t").insert(5, "!").unwrap();
    alice.commit();

    bob.import(&updates(&alice, &VersionVector::new())).unwrap();
    bob.text("t").insert(0, ">> ").unwrap();
    alice
        .import_with(&updates(&bob, &alice.version()), "websocket")
        .unwrap();

    let events = seen.lock().unwrap();
    let got: Vec<(EventTrigger, Option<&str>)> = events
        .iter()
        .map(|e| (e.trigger, e.origin.as_deref()))
        .collect();
    assert_eq!(
        got,
        [
            (EventTrigger::Local, Some("keyboard")),
            (EventTrigger::Local, None),
            (EventTrigger::Import, Some("websocket")),
        ]
    );
    assert_eq!(events[0].texts[0].delta, vec![Delta::insert("Hello")]);
    assert_eq!(
        events[2].texts[0].delta,
        vec![Delta::insert(">> ")],
        "the remote insert at 0"
    );
    let mut mirror = Vec::new();
    replay(&events, "t", &mut mirror);
    assert_eq!(mirror, delta(&alice, "t"));
}

#[test]
fn commits_and_imports_that_change_nothing_fire_nothing() {
    let mut alice = doc(1);
    alice.text("t").insert(0, "abc").unwrap();
    alice.commit();
    let all = updates(&alice, &VersionVector::new());
    let mut bob = doc(2);
    let (_sub, seen) = record(&mut bob, Unit::Char);

    bob.commit(); // nothing open
    bob.import(&all).unwrap();
    bob.import(&all).unwrap(); // duplicate: nothing new
    assert!(bob.import(&all[..all.len() - 1]).is_err()); // truncated
    let mut flipped = all.clone();
    flipped[all.len() / 2] ^= 0x10;
    assert!(bob.import(&flipped).is_err());

    let events = seen.lock().unwrap();
    assert_eq!(events.len(), 1, "one event, for the first import only");
    assert_eq!(events[0].trigger, EventTrigger::Import);
}

#[test]
fn local_update_bytes_rebuild_the_document_elsewhere() {
    let mut alice = doc(1);
    let outbox = Arc::new(Mutex::new(Vec::<Vec<u8>>::new()));
    let out = Arc::clone(&outbox);
    let _sub = alice.subscribe_local_update(move |b| out.lock().unwrap().push(b.to_vec()));

    alice.text("t").insert(0, "Hello world").unwrap();
    alice.commit();
    alice.commit(); // empty: no bytes
    alice.text("t").mark(0..5, "bold", true).unwrap();
    alice.text("t").delete(5, 6).unwrap();
    alice.commit_with(CommitOptions::new().origin("ui"));
    alice.text("u").insert(0, "second text").unwrap();
    alice.commit();

    let sent = outbox.lock().unwrap();
    assert_eq!(sent.len(), 3, "one message per non-empty commit");
    // Delivered in reverse: the later ones wait as pending, then apply.
    let mut bob = doc(2);
    for bytes in sent.iter().rev() {
        bob.import(bytes).unwrap();
    }
    assert_eq!(bob.pending_spans(), Vec::new());
    assert_eq!(delta(&bob, "t"), delta(&alice, "t"));
    assert_eq!(delta(&bob, "u"), delta(&alice, "u"));
    assert_eq!(bob.version(), alice.version());
}

#[test]
fn a_callback_can_drop_its_own_subscription() {
    let mut doc = doc(1);
    let calls = Arc::new(Mutex::new(0));
    let slot: Arc<Mutex<Option<Subscription>>> = Arc::new(Mutex::new(None));
    let (c, s) = (Arc::clone(&calls), Arc::clone(&slot));
    let sub = doc.subscribe(move |_| {
        *c.lock().unwrap() += 1;
        // Unsubscribes from inside the callback: must not deadlock.
        drop(s.lock().unwrap().take());
    });
    *slot.lock().unwrap() = Some(sub);
    let (_other, seen) = record(&mut doc, Unit::Char);

    for i in 0..3 {
        doc.text("t").insert(i, "x").unwrap();
        doc.commit();
    }
    assert_eq!(*calls.lock().unwrap(), 1, "called once, then gone");
    assert_eq!(seen.lock().unwrap().len(), 3, "the other subscriber stays");
}

#[test]
fn dropping_unsubscribes_and_detach_keeps_listening() {
    let mut doc = doc(1);
    let (sub, seen) = record(&mut doc, Unit::Char);
    let (kept, kept_seen) = record(&mut doc, Unit::Char);
    kept.detach();
    doc.text("t").insert(0, "a").unwrap();
    doc.commit();
    drop(sub);
    doc.text("t").insert(1, "b").unwrap();
    doc.commit();
    assert_eq!(seen.lock().unwrap().len(), 1);
    assert_eq!(kept_seen.lock().unwrap().len(), 2);
}

#[test]
fn an_unsubscribed_callback_is_dropped_at_once() {
    let mut doc = doc(1);
    let token = Arc::new(());
    let t = Arc::clone(&token);
    let sub = doc.subscribe(move |_| {
        let _ = &t;
    });
    let (_other, seen) = record(&mut doc, Unit::Char);
    doc.text("t").insert(0, "a").unwrap();
    doc.commit();
    assert_eq!(Arc::strong_count(&token), 2);
    drop(sub);
    assert_eq!(
        Arc::strong_count(&token),
        1,
        "the document keeps no callback after unsubscribing"
    );
    doc.text("t").insert(1, "b").unwrap();
    doc.commit();
    assert_eq!(seen.lock().unwrap().len(), 2);
}

#[test]
fn a_clone_or_a_fork_never_calls_the_original_subscribers() {
    let mut alice = doc(1);
    let (_sub, seen) = record(&mut alice, Unit::Char);
    alice.text("t").insert(0, "a").unwrap();
    alice.commit();
    // An open change, recorded for alice's subscriber, goes with a clone.
    alice.text("t").insert(1, "b").unwrap();
    let mut copy = alice.clone();
    copy.commit();
    let mut fork = alice.fork();
    fork.text("t").insert(0, "c").unwrap();
    fork.commit();
    assert_eq!(seen.lock().unwrap().len(), 1);
    alice.commit();
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    let mut mirror = Vec::new();
    replay(&seen, "t", &mut mirror);
    assert_eq!(mirror, delta(&alice, "t"));
}

#[test]
fn a_snapshot_into_an_empty_doc_is_one_insert_per_text() {
    let mut alice = doc(1);
    alice.text("t").insert(0, "Hello brave world").unwrap();
    alice.text("t").mark(6..11, "bold", true).unwrap();
    alice.text("t").delete(0, 1).unwrap();
    alice.text("u").insert(0, "ünïcödé 👋").unwrap();
    alice.commit();
    let snapshot = alice.export(ExportMode::Snapshot).unwrap();

    for unit in [Unit::Char, Unit::Utf16] {
        let mut bob = doc(2);
        let (_sub, seen) = record(&mut bob, unit);
        bob.import(&snapshot).unwrap();
        let events = seen.lock().unwrap();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].trigger, EventTrigger::Import);
        let names: Vec<&str> = events[0].texts.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["t", "u"]);
        for name in ["t", "u"] {
            let mut mirror = Vec::new();
            replay(&events, name, &mut mirror);
            assert_eq!(mirror, delta(&bob, name), "{name} in {unit:?}");
            assert_eq!(mirror, delta(&alice, name));
        }
    }
}

#[test]
fn a_snapshot_into_a_live_doc_reports_only_what_was_new() {
    let mut alice = doc(1);
    alice.text("t").insert(0, "shared").unwrap();
    alice.commit();
    let mut bob = alice.fork();
    bob.set_peer_id(2).unwrap();
    alice.text("t").insert(6, " by alice").unwrap();
    alice.text("t").mark(0..6, "italic", true).unwrap();
    bob.text("t").insert(0, "bob: ").unwrap();
    bob.commit();

    let (_sub, seen) = record(&mut bob, Unit::Char);
    let before = delta(&bob, "t");
    bob.import(&alice.export(ExportMode::Snapshot).unwrap())
        .unwrap();
    let events = seen.lock().unwrap();
    assert_eq!(events.len(), 1);
    let mut mirror = before;
    replay(&events, "t", &mut mirror);
    assert_eq!(mirror, delta(&bob, "t"));
    assert_eq!(bob.text("t").to_string(), "bob: shared by alice");
    // Only the new part is inserted: "bob: " and "shared" are retained.
    let inserted: String = events[0].texts[0]
        .delta
        .iter()
        .filter_map(|d| match d {
            Delta::Insert { insert, .. } => Some(insert.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(inserted, " by alice");
}

#[test]
fn pending_updates_fire_when_released() {
    let mut alice = doc(1);
    let mut msgs = Vec::new();
    let mut v = VersionVector::new();
    for (i, s) in ["one ", "two ", "three"].iter().enumerate() {
        let end = alice.text("t").len();
        alice.text("t").insert(end, s).unwrap();
        if i == 1 {
            alice.text("t").mark(0..3, "bold", true).unwrap();
        }
        msgs.push(updates(&alice, &v));
        v = alice.version();
    }
    let mut bob = doc(2);
    let (_sub, seen) = record(&mut bob, Unit::Char);
    let status = bob.import(&msgs[2]).unwrap();
    assert!(status.applied.is_empty() && !status.pending.is_empty());
    bob.import(&msgs[1]).unwrap();
    assert!(seen.lock().unwrap().is_empty(), "nothing applied yet");

    bob.import_with(&msgs[0], "late").unwrap();
    let events = seen.lock().unwrap();
    assert_eq!(
        events.len(),
        1,
        "one event for the import and what it released"
    );
    assert_eq!(events[0].origin.as_deref(), Some("late"));
    let mut mirror = Vec::new();
    replay(&events, "t", &mut mirror);
    assert_eq!(mirror, delta(&alice, "t"));
    assert_eq!(mirror, delta(&bob, "t"));
}

#[test]
fn one_commit_over_several_texts_is_one_event() {
    let mut doc = doc(1);
    doc.text("a").insert(0, "left").unwrap();
    doc.text("b").insert(0, "right").unwrap();
    doc.commit();
    let (_sub, seen) = record(&mut doc, Unit::Char);
    doc.text("b").insert(5, "!").unwrap();
    doc.text("a").delete(0, 1).unwrap();
    doc.text("a").mark(0..2, "bold", true).unwrap();
    doc.commit();
    let events = seen.lock().unwrap();
    assert_eq!(events.len(), 1);
    let names: Vec<&str> = events[0].texts.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["a", "b"], "in the order the texts were created");
    let mut a = vec![Delta::insert("left")];
    let mut b = vec![Delta::insert("right")];
    replay(&events, "a", &mut a);
    replay(&events, "b", &mut b);
    assert_eq!(a, delta(&doc, "a"));
    assert_eq!(b, delta(&doc, "b"));
}

#[test]
fn remote_style_changes_are_retains_with_attributes() {
    let mut alice = doc(1);
    alice.text("t").insert(0, "make this bold").unwrap();
    alice.commit();
    let mut bob = alice.fork();
    bob.set_peer_id(2).unwrap();
    let (_sub, seen) = record(&mut alice, Unit::Char);
    bob.text("t").mark(10..14, "bold", true).unwrap();
    bob.text("t").unmark(10..12, "bold").unwrap();
    alice.import(&updates(&bob, &alice.version())).unwrap();
    let events = seen.lock().unwrap();
    assert_eq!(events.len(), 1);
    let d = &events[0].texts[0].delta;
    assert!(
        d.iter()
            .all(|x| !matches!(x, Delta::Insert { .. } | Delta::Delete { .. })),
        "a style change only retains: {d:?}"
    );
    let mut mirror = vec![Delta::insert("make this bold")];
    replay(&events, "t", &mut mirror);
    assert_eq!(mirror, delta(&alice, "t"));
}

#[test]
fn utf16_events_count_surrogate_pairs_as_two() {
    let mut alice = doc(1);
    alice.text("t").insert(0, "👋👋").unwrap();
    alice.commit();
    let mut bob = alice.fork();
    bob.set_peer_id(2).unwrap();
    let (_c, chars) = record(&mut alice, Unit::Char);
    let (_u, units) = record(&mut alice, Unit::Utf16);
    bob.text("t").insert(1, "x").unwrap();
    alice.import(&updates(&bob, &alice.version())).unwrap();
    assert_eq!(
        chars.lock().unwrap()[0].texts[0].delta,
        vec![Delta::retain(1), Delta::insert("x")]
    );
    assert_eq!(
        units.lock().unwrap()[0].texts[0].delta,
        vec![Delta::retain(2), Delta::insert("x")]
    );
    alice.text("t").delete(2, 1).unwrap(); // the second 👋
    alice.commit();
    assert_eq!(
        units.lock().unwrap()[1].texts[0].delta,
        vec![Delta::retain(3), Delta::delete(2)]
    );
}

/// Found by an outside attack: an import that deletes to the end of a
/// text spanning several leaves (typed backwards) and marks it, with a
/// UTF-8 subscriber: the deletes of two leaves of deleted chars came out
/// of document order, and applying them cut a multi-byte char (a panic).
#[test]
fn regression_utf8_event_of_deletes_across_leaves_and_a_mark() {
    let mut a = Doc::new();
    a.set_peer_id(1).unwrap();
    for i in 0..45 {
        a.text("t").insert(0, ["a", "ß", "文"][i % 3]).unwrap();
    }
    a.text("t").mark(0..1, "bold", true).unwrap();
    a.commit();
    let before = a.frontiers();
    let mut b = Doc::new();
    b.set_peer_id(2).unwrap();
    b.import(
        &a.export(ExportMode::Updates { from: &b.version() })
            .unwrap(),
    )
    .unwrap();
    b.text("t").delete(2, 43).unwrap();
    b.text("t").mark(0..1, "italic", true).unwrap();
    b.commit();
    let old = a.text("t").to_delta();
    let mirror = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let m = std::sync::Arc::clone(&mirror);
    let _sub = a.subscribe_in(Unit::Utf8, move |e| {
        m.lock().unwrap().extend(e.texts.clone())
    });
    a.import(
        &b.export(ExportMode::Updates { from: &a.version() })
            .unwrap(),
    )
    .unwrap();
    let mut text = old.clone();
    for d in mirror.lock().unwrap().iter() {
        d.apply_to(&mut text, Unit::Utf8).unwrap();
    }
    assert_eq!(text, a.text("t").to_delta());
    let diff = a.diff_in(&before, &a.frontiers(), Unit::Utf8).unwrap();
    let mut text = old;
    diff[0].apply_to(&mut text, Unit::Utf8).unwrap();
    assert_eq!(text, a.text("t").to_delta());
}

/// A small seeded generator (xorshift64) for the random test below.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// One random edit of text `name` (inserts of multi-byte and astral
/// chars, by char and UTF-16 position, deletes, marks and unmarks,
/// embeds and block markers), the same on every document in `docs`.
fn random_edit(rng: &mut Rng, docs: &mut [&mut Doc], name: &str) {
    const PIECES: [&str; 6] = ["a", "bc", "é", "👋", "x😀y", "\n"];
    let len = docs[0].text(name).len();
    let pos = rng.below(len + 1);
    let end = pos + rng.below(len - pos + 1);
    let piece = PIECES[rng.below(PIECES.len())];
    let mut kind = rng.below(9);
    // Marks need a range that is not empty.
    let end = if end == pos && pos < len {
        pos + 1
    } else {
        end
    };
    if end == pos && (4..=6).contains(&kind) {
        kind = 0;
    }
    for doc in docs.iter_mut() {
        let mut text = doc.text(name);
        match kind {
            0 | 1 => text.insert(pos, piece).unwrap(),
            2 => {
                let at = text.convert_pos(pos, Unit::Char, Unit::Utf16).unwrap();
                text.insert_utf16(at, piece).unwrap();
            }
            3 => text.delete(pos, end - pos).unwrap(),
            4 => text.mark(pos..end, "bold", true).unwrap(),
            5 => text.mark(pos..end, "link", "https://weft.rs").unwrap(),
            6 => text.unmark(pos..end, "bold").unwrap(),
            7 => text
                .insert_embed(pos, weft::Value::from("cat.png"))
                .unwrap(),
            _ => text.split_block(pos, [("header", 1)]).unwrap(),
        }
    }
}

/// The text diffs of the event a document fired last, in each unit (from
/// the recorders of [`record`]), if it fired one after `since` events
/// (empty if not: a commit whose ops cancel out fires an event without
/// diffs).
fn last_diffs(seen: &[Arc<Mutex<Vec<DocEvent>>>], since: &[usize]) -> Vec<Vec<weft::TextDiff>> {
    seen.iter()
        .zip(since)
        .map(|(s, &n)| {
            let s = s.lock().unwrap();
            s[n..].last().map(|e| e.texts.clone()).unwrap_or_default()
        })
        .collect()
}

/// Differential test of the event fast path: document `a` commits after
/// every edit, so each of its events is one edit written straight into
/// the draft (no composing, no normalising); `b` gets the same edits in
/// commits of one to four, composed, and for a single edit it first
/// inserts and deletes a char of another text, which sends the commit
/// through the general path (composing and normalising) while the event
/// stays the same. Single-edit events of both must be identical in chars,
/// UTF-8 and UTF-16, and every event applied to a mirror must give the
/// text's delta, for both documents and two texts.
#[test]
fn recorded_events_match_the_general_path_on_random_rich_edits() {
    const UNITS: [Unit; 3] = [Unit::Char, Unit::Utf8, Unit::Utf16];
    const TEXTS: [&str; 2] = ["t0", "t1"];
    for seed in 1..=24u64 {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ seed.wrapping_mul(0x2545_f491_4f6c_dd1d));
        let (mut a, mut b) = (doc(1), doc(1));
        let subs: Vec<_> = UNITS
            .iter()
            .flat_map(|&u| [record(&mut a, u), record(&mut b, u)])
            .collect();
        let seen_a: Vec<_> = subs.iter().step_by(2).map(|(_, s)| Arc::clone(s)).collect();
        let seen_b: Vec<_> = subs
            .iter()
            .skip(1)
            .step_by(2)
            .map(|(_, s)| Arc::clone(s))
            .collect();
        for _ in 0..60 {
            let group = 1 + rng.below(4);
            let since_a: Vec<usize> = seen_a.iter().map(|s| s.lock().unwrap().len()).collect();
            let since_b: Vec<usize> = seen_b.iter().map(|s| s.lock().unwrap().len()).collect();
            if group == 1 {
                let mut pad = b.text("pad");
                pad.insert(0, "p").unwrap();
                pad.delete(0, 1).unwrap();
            }
            for _ in 0..group {
                let name = TEXTS[rng.below(TEXTS.len())];
                random_edit(&mut rng, &mut [&mut a, &mut b], name);
                a.commit();
            }
            b.commit();
            if group == 1 {
                assert_eq!(
                    last_diffs(&seen_a, &since_a),
                    last_diffs(&seen_b, &since_b),
                    "seed {seed}: one edit, fast and general path"
                );
            }
        }
        for (seen, d) in [(&seen_a, &a), (&seen_b, &b)] {
            for name in TEXTS {
                let expected = delta(d, name);
                for (s, unit) in seen.iter().zip(UNITS) {
                    let mut mirror = Vec::new();
                    replay(&s.lock().unwrap(), name, &mut mirror);
                    assert_eq!(mirror, expected, "seed {seed}, text {name}, {unit:?}");
                }
            }
        }
        assert_eq!(delta(&a, "t0"), delta(&b, "t0"));
        assert_eq!(delta(&a, "t1"), delta(&b, "t1"));
        drop(subs);
    }
}

#[test]
fn a_subscriber_or_undo_manager_added_after_a_commit_hears_the_next_change() {
    // A commit keeps its event draft for the next change; one made before
    // a new subscriber must not be reused (it lacks the new unit or the
    // inverse an undo manager needs).
    let mut doc = Doc::new();
    let _undo = weft::UndoManager::new(&mut doc);
    doc.text("t").insert(0, "a").unwrap();
    doc.commit();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let s = std::sync::Arc::clone(&seen);
    let _sub = doc.subscribe_in(weft::Unit::Utf16, move |e| {
        s.lock().unwrap().push(e.texts.len())
    });
    doc.text("t").insert(1, "b").unwrap();
    doc.commit();
    assert_eq!(*seen.lock().unwrap(), [1]);

    let mut doc = Doc::new();
    let _sub = doc.subscribe(|_| {});
    doc.text("t").insert(0, "a").unwrap();
    doc.commit();
    let mut undo = weft::UndoManager::new(&mut doc);
    doc.text("t").insert(1, "b").unwrap();
    doc.commit();
    assert!(undo.undo(&mut doc).unwrap().is_some());
    assert_eq!(doc.text("t").to_string(), "a");
}
