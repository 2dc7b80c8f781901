//! The Map container: local writes, last-writer-wins merges, every way a
//! map travels (updates, snapshots, lazy snapshots, range exports), events,
//! undo, checkout, fork_at, diff and revert_to.

#![expect(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "tests fail loudly on a broken assumption"
)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use weft::{Doc, Error, EventTrigger, ExportMode, MapDiff, UndoManager, Value, VersionVector};
use weft_testkit::{doc, full, map_contents, observe, sync};
use weft_testkit::{Action, Random};

fn entries(d: &Doc, name: &str) -> Vec<(String, Value)> {
    d.get_map(name).map_or_else(Vec::new, |m| {
        m.iter().map(|(k, v)| (k.to_owned(), v.clone())).collect()
    })
}

fn kv(pairs: &[(&str, Value)]) -> Vec<(String, Value)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

#[test]
fn set_get_delete_len_and_key_order() {
    let mut d = doc(1);
    let mut m = d.map("m");
    assert!(m.is_empty());
    m.set("b", 2).unwrap();
    m.set("a", "x").unwrap();
    m.set("c", Value::Null).unwrap();
    assert_eq!(m.len(), 3);
    assert_eq!(m.get("a"), Some(&Value::from("x")));
    assert_eq!(m.get("c"), Some(&Value::Null), "null is a value");
    m.delete("c").unwrap();
    m.delete("missing").unwrap();
    assert_eq!(m.get("c"), None);
    assert_eq!(m.len(), 2);
    assert_eq!(
        entries(&d, "m"),
        kv(&[("a", Value::from("x")), ("b", Value::I64(2))])
    );
    assert_eq!(d.map_names().collect::<Vec<_>>(), ["m"]);
}

#[test]
fn redundant_writes_make_no_op() {
    let mut d = doc(1);
    d.map("m").set("k", 1).unwrap();
    let v = d.version();
    d.map("m").set("k", 1).unwrap();
    d.map("m").delete("absent").unwrap();
    assert_eq!(d.version(), v);
}

#[test]
fn concurrent_writes_of_a_key_converge_on_the_greater_peer() {
    for (pa, pb) in [(1, 2), (2, 1)] {
        let mut a = doc(pa);
        let mut b = doc(pb);
        a.map("m").set("k", "a").unwrap();
        b.map("m").set("k", "b").unwrap();
        sync(&mut a, &b);
        sync(&mut b, &a);
        let winner = if pa > pb { "a" } else { "b" };
        assert_eq!(entries(&a, "m"), kv(&[("k", Value::from(winner))]));
        assert_same(&a, &b);
    }
}

/// The same maps, version and history (as runs with their Lamports).
fn assert_same(a: &Doc, b: &Doc) {
    assert_eq!(map_contents(a), map_contents(b));
    assert_eq!(a.version(), b.version());
    assert_eq!(a.history_runs().unwrap(), b.history_runs().unwrap());
}

#[test]
fn a_later_write_beats_a_higher_peer() {
    let mut a = doc(1);
    let mut b = doc(9);
    b.map("m").set("k", "b").unwrap();
    sync(&mut a, &b);
    a.map("m").set("k", "a").unwrap(); // after b's: a greater Lamport
    sync(&mut b, &a);
    assert_eq!(b.get_map("m").unwrap().get("k"), Some(&Value::from("a")));
}

#[test]
fn a_delete_is_a_write_and_an_older_set_cannot_bring_the_key_back() {
    let mut a = doc(1);
    let mut b = doc(2);
    a.map("m").set("k", 1).unwrap();
    sync(&mut b, &a);
    // b deletes after seeing a's set; a's concurrent, older-stamped set
    // (from a peer with a smaller id, same Lamport) arrives late.
    b.map("m").delete("k").unwrap();
    a.map("m").set("k", 2).unwrap();
    sync(&mut a, &b);
    sync(&mut b, &a);
    assert_eq!(a.get_map("m").unwrap().get("k"), None);
    assert_same(&a, &b);
    // A newer set wins over the delete.
    a.map("m").set("k", 3).unwrap();
    sync(&mut b, &a);
    assert_eq!(b.get_map("m").unwrap().get("k"), Some(&Value::I64(3)));
}

#[test]
fn maps_travel_in_updates_snapshots_and_range_exports() {
    let mut a = doc(1);
    a.text("t").insert(0, "hello").unwrap();
    a.map("meta").set("title", "Notes").unwrap();
    a.map("meta")
        .set("n", Value::List(vec![1.into(), 2.into()]))
        .unwrap();
    a.text("t").insert(5, "!").unwrap();
    a.map("other").set("x", true).unwrap();
    a.map("meta").delete("n").unwrap();
    a.commit();
    let want = map_contents(&a);

    let mut b = Doc::new();
    b.import(&full(&a)).unwrap();
    assert_eq!(map_contents(&b), want);
    assert_eq!(observe(&a), observe(&b));

    // A snapshot into an empty document (lazy) and into a live one.
    let snap = a.export(ExportMode::Snapshot).unwrap();
    let mut c = Doc::new();
    c.import(&snap).unwrap();
    assert_eq!(map_contents(&c), want);
    assert_eq!(c.text("t").to_string(), "hello!");
    assert_eq!(
        c.export(ExportMode::Snapshot).unwrap(),
        snap,
        "deterministic"
    );
    let mut live = doc(3);
    live.map("meta").set("mine", 1).unwrap();
    live.import(&snap).unwrap();
    assert_eq!(
        live.get_map("meta").unwrap().get("mine"),
        Some(&Value::I64(1))
    );
    assert_eq!(
        live.get_map("meta").unwrap().get("title"),
        Some(&Value::from("Notes"))
    );

    // Op by op, in reverse: each waits for what it builds on.
    let mut d = Doc::new();
    for counter in (0..a.version().get(1)).rev() {
        let span = weft::IdSpan::new(1, counter..counter + 1);
        d.import(&a.export(ExportMode::UpdatesInRange(&[span])).unwrap())
            .unwrap();
    }
    assert_eq!(observe(&d), observe(&a));
}

/// Updates without maps keep their format version; snapshots are all
/// version 6 (columnar history, values that name their codec), maps or
/// not.
#[test]
fn exports_without_maps_keep_their_format_version() {
    let mut a = doc(1);
    a.text("t").insert(0, "x").unwrap();
    assert_eq!(full(&a)[4], 1);
    assert_eq!(a.export(ExportMode::Snapshot).unwrap()[4], 6);
    a.map("m").set("k", 1).unwrap();
    assert_eq!(full(&a)[4], 3);
    assert_eq!(a.export(ExportMode::Snapshot).unwrap()[4], 6);
}

#[test]
fn events_report_map_changes_from_edits_imports_and_snapshots() {
    type Seen = Vec<(EventTrigger, Vec<MapDiff>)>;
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let mut a = doc(1);
    let s = Arc::clone(&seen);
    let _sub = a.subscribe(move |e| s.lock().unwrap().push((e.trigger, e.maps.clone())));
    a.map("m").set("k", 1).unwrap();
    a.map("m").set("j", 1).unwrap();
    a.map("m").delete("j").unwrap(); // written and gone within the commit
    a.commit();
    let mut b = doc(2);
    b.map("m").set("k", 2).unwrap();
    a.import(&full(&b)).unwrap();
    let mut fresh = Doc::new();
    let s2 = Arc::clone(&seen);
    let _sub2 = fresh.subscribe(move |e| s2.lock().unwrap().push((e.trigger, e.maps.clone())));
    fresh
        .import(&a.export(ExportMode::Snapshot).unwrap())
        .unwrap();

    let seen = seen.lock().unwrap();
    let changes = |i: usize| -> BTreeMap<String, Option<Value>> {
        assert_eq!(seen[i].1.len(), 1);
        assert_eq!(seen[i].1[0].name, "m");
        seen[i].1[0].changes.clone()
    };
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[0].0, EventTrigger::Local);
    assert_eq!(
        changes(0),
        BTreeMap::from([("k".into(), Some(Value::I64(1)))])
    );
    assert_eq!(seen[1].0, EventTrigger::Import);
    assert_eq!(
        changes(1),
        BTreeMap::from([("k".into(), Some(Value::I64(2)))])
    );
    assert_eq!(
        changes(2),
        BTreeMap::from([("k".into(), Some(Value::I64(2)))])
    );
}

#[test]
fn undo_restores_a_key_and_leaves_a_peers_later_write() {
    let mut a = doc(1);
    let mut undo = UndoManager::new(&mut a);
    a.map("m").set("k", 1).unwrap();
    a.map("m").set("j", 1).unwrap();
    a.commit();
    undo.checkpoint();
    a.map("m").set("k", 2).unwrap();
    a.map("m").delete("j").unwrap();
    a.commit();
    undo.undo(&mut a).unwrap().unwrap();
    assert_eq!(
        entries(&a, "m"),
        kv(&[("j", Value::I64(1)), ("k", Value::I64(1))])
    );
    undo.redo(&mut a).unwrap().unwrap();
    assert_eq!(entries(&a, "m"), kv(&[("k", Value::I64(2))]));

    // A peer overwrites k after the step: undoing leaves its value.
    let mut b = a.fork();
    b.set_peer_id(2).unwrap();
    b.map("m").set("k", "peer").unwrap();
    a.import(
        &b.export(ExportMode::Updates { from: &a.version() })
            .unwrap(),
    )
    .unwrap();
    undo.undo(&mut a).unwrap().unwrap();
    assert_eq!(
        entries(&a, "m"),
        kv(&[("j", Value::I64(1)), ("k", Value::from("peer"))])
    );
    // The first step: the map was empty before it.
    undo.undo(&mut a).unwrap().unwrap();
    assert_eq!(entries(&a, "m"), kv(&[("k", Value::from("peer"))]));
}

#[test]
fn checkout_fork_at_diff_and_revert_show_old_map_states() {
    let mut a = doc(1);
    a.map("m").set("k", 1).unwrap();
    a.text("t").insert(0, "a").unwrap();
    let v1 = a.frontiers();
    a.map("m").set("k", 2).unwrap();
    a.map("m").set("j", true).unwrap();
    let v2 = a.frontiers();
    a.map("m").delete("k").unwrap();
    a.commit();

    let events: Arc<Mutex<Vec<MapDiff>>> = Arc::default();
    let e = Arc::clone(&events);
    let _sub = a.subscribe(move |ev| e.lock().unwrap().extend(ev.maps.clone()));
    a.checkout(&v1).unwrap();
    assert_eq!(entries(&a, "m"), kv(&[("k", Value::I64(1))]));
    assert_eq!(a.map("m").set("x", 1), Err(Error::Detached));
    a.checkout(&v2).unwrap();
    assert_eq!(
        entries(&a, "m"),
        kv(&[("j", Value::Bool(true)), ("k", Value::I64(2))])
    );
    a.checkout_to_latest().unwrap();
    assert_eq!(entries(&a, "m"), kv(&[("j", Value::Bool(true))]));
    {
        let events = events.lock().unwrap();
        assert_eq!(events.len(), 3, "{events:?}");
        assert_eq!(
            events[0].changes,
            BTreeMap::from([("j".into(), None), ("k".into(), Some(Value::I64(1)))])
        );
        assert_eq!(events[2].changes, BTreeMap::from([("k".into(), None)]));
    }

    let old = a.fork_at(&v1).unwrap();
    assert_eq!(entries(&old, "m"), kv(&[("k", Value::I64(1))]));
    let diff = a.diff_maps(&v1, &a.frontiers()).unwrap();
    assert_eq!(diff.len(), 1);
    assert_eq!(
        diff[0].changes,
        BTreeMap::from([("j".into(), Some(Value::Bool(true))), ("k".into(), None)])
    );
    let back = a.diff_maps(&a.frontiers(), &v1).unwrap();
    assert_eq!(
        back[0].changes,
        BTreeMap::from([("j".into(), None), ("k".into(), Some(Value::I64(1)))])
    );

    let mut snap_at = Doc::new();
    snap_at
        .import(&a.export(ExportMode::SnapshotAt(&v2)).unwrap())
        .unwrap();
    assert_eq!(
        map_contents(&snap_at),
        map_contents(&a.fork_at(&v2).unwrap())
    );

    a.revert_to(&v1).unwrap();
    assert_eq!(entries(&a, "m"), kv(&[("k", Value::I64(1))]));
}

#[test]
fn fork_shares_map_state_and_diverges() {
    let mut a = doc(1);
    for i in 0..100 {
        a.map("m").set(&format!("k{i}"), i).unwrap();
    }
    let mut b = a.fork();
    b.map("m").set("k0", "changed").unwrap();
    assert_eq!(a.get_map("m").unwrap().get("k0"), Some(&Value::I64(0)));
    assert_eq!(b.get_map("m").unwrap().len(), 100);
}

#[test]
fn hostile_map_ops_are_refused() {
    let mut a = doc(1);
    a.map("m").set("k", 1).unwrap();
    let bytes = full(&a);
    // Every truncation and every single bit flip (re-checksummed) is
    // refused or applied whole; nothing panics.
    for cut in 0..bytes.len() {
        let mut d = Doc::new();
        assert!(d.import(&bytes[..cut]).is_err());
        assert_eq!(d.version(), VersionVector::new());
    }
    for i in 16..bytes.len() {
        for bit in 0..8 {
            let mut body = bytes[16..].to_vec();
            body[i - 16] ^= 1 << bit;
            let mut forged = bytes[..8].to_vec();
            forged.extend_from_slice(&xxhash_rust::xxh3::xxh3_64(&body).to_le_bytes());
            forged.extend_from_slice(&body);
            let mut d = Doc::new();
            if d.import(&forged).is_err() {
                assert_eq!(d.version(), VersionVector::new());
            }
        }
    }
}

#[test]
fn shallow_snapshots_keep_the_roots_winning_map_writes() {
    let mut a = doc(1);
    let mut b = doc(2);
    a.text("t").insert(0, "abc").unwrap();
    a.map("m").set("k", 1).unwrap();
    a.map("m").set("gone", 1).unwrap();
    b.map("m").set("k", 2).unwrap(); // concurrent: peer 2 wins
    sync(&mut a, &b);
    a.map("m").delete("gone").unwrap();
    a.map("n").set("x", "y").unwrap();
    a.text("t").delete(0, 1).unwrap();
    let root = a.frontiers();
    a.map("m").set("after", true).unwrap();
    a.text("t").insert(0, "z").unwrap();
    a.commit();
    for at in [root.clone(), a.frontiers()] {
        let bytes = a.export(ExportMode::ShallowSnapshot(&at)).unwrap();
        let mut s = Doc::new();
        s.import(&bytes).unwrap();
        assert_eq!(map_contents(&s), map_contents(&a));
        assert_eq!(s.text("t").to_string(), a.text("t").to_string());
        // A view after the root shows the maps as they were.
        let view = s.fork_at(&at).unwrap();
        assert_eq!(map_contents(&view), map_contents(&a.fork_at(&at).unwrap()));
        if at != root {
            assert_eq!(s.fork_at(&root).unwrap_err(), Error::TrimmedHistory);
        }
        // Re-exported, and merging on: later writes still compare with
        // the root's winners.
        let again = s.export(ExportMode::Snapshot).unwrap();
        let mut s2 = Doc::new();
        s2.import(&again).unwrap();
        assert_eq!(map_contents(&s2), map_contents(&a));
        s.set_peer_id(3).unwrap();
        s.map("m").set("k", "shallow").unwrap();
        a.import(
            &s.export(ExportMode::Updates { from: &a.version() })
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            a.get_map("m").unwrap().get("k"),
            Some(&Value::from("shallow"))
        );
        sync(&mut s, &a);
        assert_eq!(map_contents(&s), map_contents(&a));
    }
}

/// Three peers write a few keys of a map, delete and restart it (and
/// type a little) while a network delivers their exports late, out of
/// order, twice, as whole histories, as stale exports, as snapshots into
/// live documents and as range exports. Each replica holds the reference
/// model's maps whenever what it holds changes, and what its events
/// said; once everything is delivered, every replica holds the same maps,
/// text and history, and shallow copies show the same and merge on.
#[test]
fn random_map_writes_converge_under_every_delivery() {
    fn maps(a: &mut Action) -> bool {
        match a {
            Action::DeleteContainer { map, .. } => {
                *map = true;
                true
            }
            Action::MapSet { .. }
            | Action::Insert { .. }
            | Action::Commit { .. }
            | Action::Send { .. }
            | Action::Deliver { .. } => true,
            _ => false,
        }
    }
    Random {
        seeds: 30,
        keep: maps,
        ..Random::new(200)
    }
    .run(0x3a95);
}

#[test]
fn a_lazily_opened_document_reads_maps_that_arrive_later() {
    let mut a = doc(1);
    a.text("t").insert(0, "text only").unwrap();
    let snap = a.export(ExportMode::Snapshot).unwrap();
    let mut b = Doc::new();
    b.import(&snap).unwrap();
    assert!(b.is_lazy());
    assert!(b.get_map("m").is_none());
    assert!(b.is_lazy(), "reading no map loads nothing");
    a.map("m").set("k", 1).unwrap();
    b.import(
        &a.export(ExportMode::Updates { from: &b.version() })
            .unwrap(),
    )
    .unwrap();
    assert_eq!(b.get_map("m").unwrap().get("k"), Some(&Value::I64(1)));
    // And a lazy document written to through a handle.
    let mut c = Doc::new();
    c.import(&snap).unwrap();
    c.map("m").set("x", true).unwrap();
    assert_eq!(c.get_map("m").unwrap().len(), 1);
    assert_eq!(c.text("t").to_string(), "text only");
}
