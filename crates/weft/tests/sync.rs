//! Merging: convergence against a reference model, Fugue non-interleaving,
//! pending updates, idempotence and order independence.

use weft::{Doc, ExportMode, IdSpan, VersionVector};
use weft_testkit::{doc, full, Rng};
use weft_testkit::{Action, Random};

/// Sends `from` everything `to` lacks.
fn sync(from: &mut Doc, to: &mut Doc) {
    let bytes = from
        .export(ExportMode::Updates {
            from: &to.version(),
        })
        .unwrap();
    let status = to.import(&bytes).unwrap();
    assert!(status.pending.is_empty(), "{status:?}");
}

/// Sends `docs[i]` everything `docs[j]` lacks (`i != j`).
fn sync_pair(docs: &mut [Doc], i: usize, j: usize) {
    let (lo, hi) = docs.split_at_mut(i.max(j));
    let (low, high) = (&mut lo[i.min(j)], &mut hi[0]);
    if i < j {
        sync(low, high);
    } else {
        sync(high, low);
    }
}

fn text(d: &mut Doc) -> String {
    d.text("t").to_string()
}

/// Two peers share "[]" and then type `a` and `b` concurrently between the
/// brackets, one char per insert at the index `at(i)`; the merged text must
/// hold each word in one piece, for both orders of peer ids.
fn assert_no_interleaving(a_word: &str, b_word: &str, at: fn(usize) -> usize) {
    for (pa, pb) in [(1, 2), (2, 1)] {
        let mut a = doc(pa);
        a.text("t").insert(0, "[]").unwrap();
        let mut b = doc(pb);
        sync(&mut a, &mut b);
        for (i, ch) in a_word.chars().enumerate() {
            a.text("t").insert(at(i), &ch.to_string()).unwrap();
        }
        for (i, ch) in b_word.chars().enumerate() {
            b.text("t").insert(at(i), &ch.to_string()).unwrap();
        }
        sync(&mut a, &mut b);
        sync(&mut b, &mut a);
        let merged = text(&mut a);
        assert_eq!(merged, text(&mut b));
        assert!(
            merged == "[helloWORLD]" || merged == "[WORLDhello]",
            "interleaved: {merged}"
        );
    }
}

#[test]
fn concurrent_forward_typing_does_not_interleave() {
    assert_no_interleaving("hello", "WORLD", |i| 1 + i);
}

#[test]
fn concurrent_backward_typing_does_not_interleave() {
    // Each types its word backwards: always inserting at index 1.
    assert_no_interleaving("olleh", "DLROW", |_| 1);
}

#[test]
fn concurrent_inserts_at_same_pos_converge_in_any_order() {
    let mut base = doc(9);
    base.text("t").insert(0, "ab").unwrap();
    let mut peers: Vec<Doc> = (1..=5)
        .map(|p| {
            let mut d = base.fork();
            d.set_peer_id(p).unwrap();
            d
        })
        .collect();
    let updates: Vec<Vec<u8>> = peers
        .iter_mut()
        .enumerate()
        .map(|(i, d)| {
            d.text("t").insert(1, &format!("<{i}>")).unwrap();
            let from = base.version();
            d.export(ExportMode::Updates { from: &from }).unwrap()
        })
        .collect();
    // All 120 delivery orders give the same text.
    let mut expected = None;
    let mut order: Vec<usize> = (0..5).collect();
    permute(&mut order, 0, &mut |order| {
        let mut d = base.fork();
        for &i in order {
            d.import(&updates[i]).unwrap();
        }
        d.import(&updates[order[0]]).unwrap(); // duplicates are no-ops
        let t = text(&mut d);
        match &expected {
            None => expected = Some((t, d.version())),
            Some((e, v)) => {
                assert_eq!(&t, e);
                assert_eq!(&d.version(), v);
            }
        }
    });
}

fn permute(v: &mut Vec<usize>, k: usize, f: &mut impl FnMut(&[usize])) {
    if k == v.len() {
        f(v);
        return;
    }
    for i in k..v.len() {
        v.swap(k, i);
        permute(v, k + 1, f);
        v.swap(k, i);
    }
}

#[test]
fn updates_with_missing_dependencies_wait_then_apply() {
    let mut a = doc(1);
    let mut chain = Vec::new();
    for i in 0..50 {
        let from = a.version();
        let len = a.text("t").len();
        a.text("t")
            .insert(len.min(i), &(i % 10).to_string())
            .unwrap();
        if i % 7 == 3 {
            a.text("t").delete(i / 2, 1).unwrap();
        }
        chain.push(a.export(ExportMode::Updates { from: &from }).unwrap());
    }
    let expected = text(&mut a);
    // Deliver in a shuffled order: all but the root wait at first.
    let mut rng = Rng::new(7);
    let mut order: Vec<usize> = (0..chain.len()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i + 1));
    }
    let mut b = doc(2);
    let mut last = None;
    for &i in &order {
        last = Some(b.import(&chain[i]).unwrap());
    }
    let last = last.unwrap();
    assert!(last.pending.is_empty(), "{last:?}");
    assert!(b.pending_spans().is_empty());
    assert_eq!(text(&mut b), expected);
    assert_eq!(b.version(), a.version());
    b.assert_invariants();
}

#[test]
fn a_thousand_dependent_updates_delivered_shuffled() {
    // Two peers take turns, so every update depends on the one before it
    // (from the other peer); marks included.
    let mut docs = [doc(1), doc(2)];
    let mut chain = Vec::new();
    for i in 0..1000usize {
        let (a, b) = docs.split_at_mut(1);
        let (me, other) = if i % 2 == 0 {
            (&mut a[0], &mut b[0])
        } else {
            (&mut b[0], &mut a[0])
        };
        let from = me.version();
        let len = me.text("t").len();
        me.text("t")
            .insert(len / 2, ["a", "文", "😀"][i % 3])
            .unwrap();
        if i % 10 == 9 {
            me.text("t")
                .mark(0..len / 3 + 1, "bold", i % 20 == 9)
                .unwrap();
        }
        let update = me.export(ExportMode::Updates { from: &from }).unwrap();
        other.import(&update).unwrap();
        chain.push(update);
    }
    let expected = docs[0].text("t").to_delta();
    assert_eq!(docs[1].text("t").to_delta(), expected);
    let mut rng = Rng::new(11);
    let mut order: Vec<usize> = (0..chain.len()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i + 1));
    }
    let mut c = doc(3);
    for (k, &i) in order.iter().enumerate() {
        let status = c.import(&chain[i]).unwrap();
        if k + 1 < order.len() {
            assert!(
                !status.pending.is_empty() || c.version() != docs[0].version(),
                "nothing may be complete before the last delivery"
            );
        } else {
            assert!(status.pending.is_empty(), "none stuck: {status:?}");
        }
    }
    assert!(c.pending_spans().is_empty());
    assert_eq!(c.text("t").to_delta(), expected);
    assert_eq!(c.version(), docs[0].version());
    c.assert_invariants();
}

/// Found by the `converge` fuzzer: a peer's two backspaces (one backward
/// delete run) imported right after a local forward delete whose targets
/// they continue were recorded as continuing it forward, so this document's
/// own history named the wrong chars and did not import elsewhere.
#[test]
fn regression_imported_backspaces_after_a_forward_delete() {
    let mut a = doc(1);
    a.text("t").insert(0, "xyz ").unwrap();
    let mut b = a.fork();
    b.set_peer_id(2).unwrap();
    b.text("t").delete(3, 1).unwrap();
    b.text("t").delete(2, 1).unwrap();
    a.text("t").delete(0, 3).unwrap();
    let from = a.version();
    a.import(&b.export(ExportMode::Updates { from: &from }).unwrap())
        .unwrap();
    let mut fresh = doc(3);
    fresh.import(&full(&a)).unwrap();
    assert_eq!(text(&mut fresh), text(&mut a));
    assert_eq!(fresh.version(), a.version());
    // And the history still merges with a peer that never saw it.
    b.import(&full(&a)).unwrap();
    assert_eq!(text(&mut b), text(&mut a));
}

#[test]
fn pending_status_names_the_missing_ops() {
    let mut a = doc(1);
    a.text("t").insert(0, "ab").unwrap();
    let v1 = a.version();
    a.commit();
    a.text("t").insert(2, "cd").unwrap();
    let second = a.export(ExportMode::Updates { from: &v1 }).unwrap();
    let mut b = doc(2);
    let status = b.import(&second).unwrap();
    assert!(status.applied.is_empty());
    assert_eq!(status.pending, vec![IdSpan::new(1, 2..4)]);
    assert_eq!(text(&mut b), "");
    let status = b.import(&full(&a)).unwrap();
    assert!(status.pending.is_empty());
    assert_eq!(text(&mut b), "abcd");
}

#[test]
fn importing_known_updates_is_a_no_op() {
    let mut a = doc(1);
    a.text("t").insert(0, "hello").unwrap();
    let bytes = full(&a);
    let status = a.import(&bytes).unwrap();
    assert!(status.applied.is_empty() && status.pending.is_empty());
    assert_eq!(text(&mut a), "hello");
    let mut b = doc(2);
    b.import(&bytes).unwrap();
    let v = b.version();
    b.import(&bytes).unwrap();
    assert_eq!(b.version(), v);
    assert_eq!(text(&mut b), "hello");
}

#[test]
fn several_texts_sync_independently() {
    let mut a = doc(1);
    a.text("title").insert(0, "T").unwrap();
    a.text("body").insert(0, "B").unwrap();
    a.text("title").insert(1, "itle").unwrap();
    let mut b = doc(2);
    sync(&mut a, &mut b);
    assert_eq!(b.text("title").to_string(), "Title");
    assert_eq!(b.text("body").to_string(), "B");
    assert_eq!(b.text_names().collect::<Vec<_>>(), ["title", "body"]);
    b.assert_invariants();
}

/// Three peers type and delete (plain text) and sync in random orders,
/// checked against the reference model whenever what one holds changes
/// (the one random driver); long runs grow multi-level trees with many
/// leaf splits.
#[test]
fn three_peers_match_the_reference_model() {
    fn plain(a: &mut Action) -> bool {
        match a {
            Action::Delete { len, .. } => {
                *len %= 6;
                true
            }
            Action::Insert { .. } | Action::Commit { .. } | Action::Sync { .. } => true,
            _ => false,
        }
    }
    let stats = Random {
        seeds: 30,
        keep: plain,
        ..Random::new(400)
    }
    .run(0);
    assert!(stats.model_checks > 10_000, "{stats:?}");
    Random {
        seeds: 2,
        keep: plain,
        ..Random::new(4000)
    }
    .run(100);
}

#[test]
fn docs_move_between_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Doc>();
    let mut a = doc(1);
    a.text("t").insert(0, "from a thread").unwrap();
    let mut a = std::thread::spawn(move || {
        a.text("t").insert(0, "sent ").unwrap();
        a
    })
    .join()
    .unwrap();
    assert_eq!(text(&mut a), "sent from a thread");
}

/// Peers type and delete while their exports travel through a network
/// that delivers late, in any order, some twice, whole histories, stale
/// and future versions and op ranges; each delivery is checked against
/// the model, and once everything is delivered all peers agree and
/// nothing is left pending.
#[test]
fn reordered_and_duplicated_deliveries_converge() {
    fn network(a: &mut Action) -> bool {
        match a {
            Action::Delete { len, .. } => {
                *len %= 2;
                true
            }
            Action::Insert { .. } | Action::Send { .. } | Action::Deliver { .. } => true,
            _ => false,
        }
    }
    Random {
        seeds: 20,
        keep: network,
        ..Random::new(300)
    }
    .run(500);
}

/// Exporting from a version that no real peer could have (counters that
/// skip ops) still produces bytes that import without panicking.
#[test]
fn export_from_arbitrary_versions_never_panics() {
    let mut rng = Rng::new(3);
    let mut a = doc(1);
    let mut b = doc(2);
    for _ in 0..60 {
        let len = a.text("t").len();
        a.text("t")
            .insert(rng.below(len + 1), &rng.text(3))
            .unwrap();
        let len = b.text("t").len();
        if len > 0 && rng.chance(40) {
            b.text("t").delete(rng.below(len), 1).unwrap();
        } else {
            b.text("t")
                .insert(rng.below(len + 1), &rng.text(3))
                .unwrap();
        }
        if rng.chance(30) {
            sync(&mut a, &mut b);
        }
    }
    sync(&mut b, &mut a);
    let full = a.version();
    for _ in 0..200 {
        let from: VersionVector = full
            .iter()
            .map(|(p, c)| (p, rng.below(c as usize + 2) as u32))
            .collect();
        let bytes = a.export(ExportMode::Updates { from: &from }).unwrap();
        let mut fresh = doc(3);
        if fresh.import(&bytes).is_ok() {
            fresh.assert_invariants();
        }
        let mut copy = b.clone();
        if copy.import(&bytes).is_ok() {
            copy.assert_invariants();
        }
    }
}

#[test]
fn thousands_of_texts_sync() {
    let mut a = doc(1);
    for i in 0..3000 {
        a.text(&format!("note-{i}")).insert(0, "x").unwrap();
    }
    let mut b = doc(2);
    sync(&mut a, &mut b);
    assert_eq!(b.text_names().count(), 3000);
    assert_eq!(b.text("note-2999").to_string(), "x");
    b.text("note-7").insert(1, "y").unwrap();
    sync(&mut b, &mut a);
    assert_eq!(a.text("note-7").to_string(), "xy");
}

/// Thousands of peers editing concurrently: their changes all stay heads
/// until a later edit merges them, and one update carries them all.
#[test]
fn thousands_of_concurrent_peers_merge() {
    let mut base = doc(1);
    base.text("t").insert(0, &"x".repeat(3000)).unwrap();
    let v = base.version();
    let mut all = base.clone();
    for p in 0..3000 {
        let mut d = doc(10 + p);
        d.import(
            &base
                .export(ExportMode::Updates { from: &d.version() })
                .unwrap(),
        )
        .unwrap();
        d.text("t").insert(p as usize, "y").unwrap();
        let bytes = d.export(ExportMode::Updates { from: &v }).unwrap();
        all.import(&bytes).unwrap();
    }
    assert_eq!(all.frontiers().len(), 3000);
    assert_eq!(all.version().len(), 3001);
    let mut fresh = doc(2);
    fresh
        .import(
            &all.export(ExportMode::Updates {
                from: &VersionVector::new(),
            })
            .unwrap(),
        )
        .unwrap();
    assert_eq!(text(&mut fresh), text(&mut all));
    fresh.text("t").insert(0, "!").unwrap();
    assert_eq!(fresh.frontiers().len(), 1);
    fresh.assert_invariants();
}

#[test]
fn two_stale_updates_that_each_need_the_other_both_apply() {
    // a1 <- b1 <- a2: b typed on a1, a typed on b1.
    let mut a = doc(1);
    a.text("t").insert(0, "a1 ").unwrap();
    let mut b = doc(2);
    sync(&mut a, &mut b);
    b.text("t").insert(3, "b1 ").unwrap();
    sync(&mut b, &mut a);
    a.text("t").insert(6, "a2").unwrap();
    a.commit();
    b.commit();
    // Exports for versions the receiver does not have (a relay asked
    // with others' versions): u1 = {a1, a2} (asked with b1 known), u2 =
    // {b1} (asked with a1 known). u1's a2 needs u2's b1, and u2's b1
    // needs u1's a1.
    let mut asked1 = VersionVector::new();
    asked1.set(2, 3);
    let u1 = a.export(ExportMode::Updates { from: &asked1 }).unwrap();
    let mut asked2 = VersionVector::new();
    asked2.set(1, 3);
    let u2 = b.export(ExportMode::Updates { from: &asked2 }).unwrap();
    for order in [[&u1, &u2], [&u2, &u1]] {
        let mut r = Doc::new();
        let first = r.import(order[0]).unwrap();
        let second = r.import(order[1]).unwrap();
        assert!(second.pending.is_empty(), "{first:?} {second:?}");
        assert!(r.pending_spans().is_empty());
        assert_eq!(r.text("t").to_string(), "a1 b1 a2");
        assert_eq!(r.history_runs(), a.history_runs());
    }
}

/// An update from an older writer that left out the text of an insert
/// its own delete removes is applied whole or not at all: applied in
/// part, the version in between would lack that text. (Found by an
/// outside attack once waiting updates were applied in part.)
#[test]
fn a_legacy_update_without_deleted_text_waits_whole() {
    use weft_testkit::{body, wrap};
    // Change 0: peer 7 inserts 'a' (text left out) and 'b'. Change 1:
    // peer 7 deletes 'a', after op 0@8 (missing).
    let changes = [2, 0, 1, 2, 0, 0, 0, 1, 3, 1, 0];
    let ops = [0x14, 0, 0, 0x10, 1, 0, 0x12, 5];
    let legacy = wrap(&body(&[7, 8], &["t"], &changes, &ops, "b"));
    let mut p8 = doc(8);
    p8.text("t").insert(0, "z").unwrap();
    let z = full(&p8);
    let mut whole = Doc::new();
    whole.import(&z).unwrap();
    whole.import(&legacy).unwrap();
    let mut part = Doc::new();
    let status = part.import(&legacy).unwrap();
    assert!(status.applied.is_empty(), "{status:?}");
    assert_eq!(part.version(), VersionVector::new());
    part.import(&z).unwrap();
    assert_eq!(part.text("t").to_delta(), whole.text("t").to_delta());
    assert_eq!(part.history_runs(), whole.history_runs());
}

/// One update of B's changes, each typed after one of A's ops, waits for
/// all of them; A's ops then arrive one by one, in random order (some
/// twice, and with the pending set carried through a snapshot halfway).
/// Each arrival releases exactly the B changes whose A op is now there
/// (those after a gap wait for the gap), and the end matches B.
#[test]
fn one_update_waiting_on_many_ops_releases_change_by_change() {
    for seed in 0..20u64 {
        let mut rng = Rng::new(seed);
        let n = 30;
        let (mut a, mut b) = (doc(1), doc(2));
        let mut a_updates = Vec::new();
        for _ in 0..n {
            let v = a.version();
            a.text("t").insert(0, "a").unwrap();
            let u = a.export(ExportMode::Updates { from: &v }).unwrap();
            b.import(&u).unwrap();
            a_updates.push(u);
            let len = b.text("t").len();
            b.text("t").insert(len, "b").unwrap();
            b.commit();
        }
        let mut only_a = VersionVector::new();
        only_a.set(1, n as u32);
        let b_update = b.export(ExportMode::Updates { from: &only_a }).unwrap();
        let mut d = doc(3);
        let status = d.import(&b_update).unwrap();
        assert!(status.applied.is_empty(), "seed {seed}");
        let mut order: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            order.swap(i, rng.below(i + 1));
        }
        let mut arrived = vec![false; n];
        for (k, &i) in order.iter().enumerate() {
            if k == n / 2 {
                // The pending set travels in a snapshot.
                let snap = d.export(ExportMode::Snapshot).unwrap();
                d = doc(3);
                d.import(&snap).unwrap();
            }
            d.import(&a_updates[i]).unwrap();
            if rng.chance(20) {
                d.import(&a_updates[i]).unwrap();
            }
            arrived[i] = true;
            // B's change j needs A's ops 0..=j (A's ops chain), and B's
            // change j - 1.
            let a_known = arrived.iter().take_while(|&&x| x).count();
            let b_known = a_known as u32;
            assert_eq!(d.version().get(2), b_known, "seed {seed} step {k}");
            assert_eq!(d.version().get(1), b_known, "seed {seed} step {k}");
            // Pending: B's other changes, and A's ops after a gap.
            let waiting_a = arrived.iter().filter(|&&x| x).count() - a_known;
            let pending: usize = d.pending_spans().iter().map(|s| s.counters.len()).sum();
            assert_eq!(pending, n - a_known + waiting_a, "seed {seed} step {k}");
        }
        assert_eq!(text(&mut d), text(&mut b), "seed {seed}");
        assert!(d.pending_spans().is_empty());
    }
}

/// Issue 25: an update parked for an op of a third peer, whose own ops
/// then came in a snapshot from a document reusing their peer id, left
/// `pending_spans()` empty but stayed parked, and every snapshot of the
/// document carried it as a pending update that was ready, which every
/// reader refuses. Ops that become known any way now resolve the parked
/// changes that hold them.
#[test]
fn a_parked_change_whose_ops_arrive_another_way_leaves_the_pending_set() {
    for whole in [false, true] {
        let mut c = doc(3);
        c.text("t").insert(0, "cc").unwrap();
        c.commit();
        let mut b = doc(2);
        b.import(&c.export(ExportMode::Snapshot).unwrap()).unwrap();
        b.text("t").insert(1, "bbb").unwrap();
        b.commit();
        // a gets b's change alone: it waits for c's ops.
        let mut a = doc(1);
        a.text("t").insert(0, "a").unwrap();
        a.commit();
        let parked = b
            .export(ExportMode::Updates { from: &c.version() })
            .unwrap();
        a.import(&parked).unwrap();
        assert_eq!(a.pending_spans(), vec![IdSpan::new(2, 0..3)]);
        // Another document that uses peer id 2 (a copy, a misconfigured
        // app) types three ops, and a imports its snapshot or update.
        let mut twin = doc(2);
        twin.text("t").insert(0, "xyz").unwrap();
        twin.commit();
        let bytes = if whole {
            twin.export(ExportMode::Snapshot).unwrap()
        } else {
            twin.export(ExportMode::Updates {
                from: &VersionVector::new(),
            })
            .unwrap()
        };
        a.import(&bytes).unwrap();
        assert_eq!(a.pending_spans(), vec![]);
        a.assert_exports_reopen();
        // c's ops arriving later change nothing more.
        a.import(&c.export(ExportMode::Snapshot).unwrap()).unwrap();
        a.assert_exports_reopen();
        a.assert_invariants();
    }
}

/// Found by an outside attack (issue 25): a document that edits under the
/// peer id a parked change builds on (another document's id, reused)
/// made the ops that change waited for; it stayed parked, ready, and the
/// document's snapshot no longer imported. A local change now releases
/// what it unblocks, as an import would.
#[test]
fn local_ops_under_a_reused_peer_id_release_what_they_unblock() {
    let mut a = doc(1);
    a.text("t").insert(0, "abc").unwrap();
    a.commit();
    let v = a.version();
    a.text("t").insert(3, "def").unwrap();
    a.commit();
    let mut b = doc(2);
    let events = std::sync::Arc::new(std::sync::Mutex::new(0));
    let seen = events.clone();
    let _sub = b.subscribe(move |_| *seen.lock().unwrap() += 1);
    b.import(&a.export(ExportMode::Updates { from: &v }).unwrap())
        .unwrap();
    assert_eq!(b.pending_spans(), vec![IdSpan::new(1, 3..6)]);
    b.set_peer_id(1).unwrap();
    b.text("t").insert(0, "xyz").unwrap();
    b.commit();
    assert_eq!(b.pending_spans(), vec![]);
    assert_eq!(b.version().get(1), 6);
    b.assert_exports_reopen();
    b.assert_invariants();
    // The local change and the released ops were both reported.
    assert_eq!(*events.lock().unwrap(), 2);
}

/// Found by a second outside attack (issue 25): local ops that made the
/// first part of a parked change known (the peer id reused) left its rest
/// parked behind a blocker the document would never need, while every
/// reader of its snapshot saw that rest as ready and refused it.
#[test]
fn local_ops_that_cover_part_of_a_parked_change_release_the_rest() {
    let mut a = doc(1);
    a.text("t").insert(0, "abc").unwrap();
    a.commit();
    let mut b = doc(2);
    b.import(&a.export(ExportMode::Snapshot).unwrap()).unwrap();
    let mut c = doc(3);
    c.import(&a.export(ExportMode::Snapshot).unwrap()).unwrap();
    c.text("t").insert(0, "Z").unwrap();
    c.commit(); // 3:0, which b never gets
    a.import(
        &c.export(ExportMode::Updates { from: &a.version() })
            .unwrap(),
    )
    .unwrap();
    a.text("t").insert(4, "def").unwrap();
    a.commit(); // 1:3..6, after 3:0
    b.import(
        &a.export(ExportMode::UpdatesInRange(&[IdSpan::new(1, 3..6)]))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(b.pending_spans(), vec![IdSpan::new(1, 3..6)]);
    b.set_peer_id(1).unwrap();
    b.text("t").insert(0, "xy").unwrap();
    b.commit(); // 1:3..5
    assert_eq!(b.pending_spans(), vec![]);
    assert_eq!(b.version().get(1), 6);
    b.assert_exports_reopen();
    b.assert_invariants();
}

/// Whether `version` holds every op of `spans`.
fn covers(version: &VersionVector, spans: &[IdSpan]) -> bool {
    spans.iter().all(|s| version.get(s.peer) >= s.counters.end)
}

#[test]
fn spans_in_names_what_an_update_or_snapshot_holds_without_importing_it() {
    let mut rng = Rng::new(7);
    let mut docs: Vec<Doc> = (1..=3).map(doc).collect();
    let mut sent = Vec::new();
    for step in 0..300 {
        let i = rng.below(3);
        let d = &mut docs[i];
        let len = d.text("t").len();
        d.text("t").insert(rng.below(len + 1), "xy").unwrap();
        if len > 2 && rng.below(3) == 0 {
            d.text("t").delete(rng.below(len - 1), 1).unwrap();
        }
        let from = sent
            .get(rng.below(sent.len() + 1))
            .cloned()
            .unwrap_or_default();
        let update = docs[i].export(ExportMode::Updates { from: &from }).unwrap();
        let spans = Doc::spans_in(&update).unwrap();
        // Everything an import adds is inside the spans...
        let mut fresh = Doc::new();
        fresh.import(&update).unwrap();
        let added = fresh.version();
        for (peer, end) in added.iter() {
            assert!(
                spans
                    .iter()
                    .any(|s| s.peer == peer && s.counters.end >= end),
                "step {step}: {peer}..{end} is not in {spans:?}"
            );
        }
        // ... and a peer that holds all of them gains nothing from it.
        let j = rng.below(3);
        if covers(&docs[j].version(), &spans) {
            assert!(docs[j].import(&update).unwrap().applied.is_empty());
        }
        sent.push(docs[i].version());
        sync_pair(&mut docs, i, (i + 1) % 3);
    }
    // A snapshot names its version and the updates it holds back.
    let (mut a, mut b) = (doc(1), doc(2));
    b.text("t").insert(0, "one").unwrap();
    let first = b
        .export(ExportMode::Updates {
            from: &VersionVector::new(),
        })
        .unwrap();
    let at = b.version();
    b.text("t").insert(3, "two").unwrap();
    let second = b.export(ExportMode::Updates { from: &at }).unwrap();
    a.text("t").insert(0, "a").unwrap();
    assert!(a.import(&second).unwrap().applied.is_empty(), "pending");
    let snapshot = a.export(ExportMode::Snapshot).unwrap();
    let spans = Doc::spans_in(&snapshot).unwrap();
    assert_eq!(spans, [IdSpan::new(1, 0..1), IdSpan::new(2, 3..6)]);
    a.import(&first).unwrap();
    assert!(covers(&a.version(), &spans));
    // Bytes that are not an export are an error, as for an import.
    assert!(Doc::spans_in(b"not an export").is_err());
    let mut cut = second.clone();
    cut.truncate(cut.len() - 1);
    assert!(Doc::spans_in(&cut).is_err());
}
