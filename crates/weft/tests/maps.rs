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
use weft_testkit::net::{deliver_to_model, Network};
use weft_testkit::{doc, full, map_contents, observe, sync};

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

/// Three peers write a few keys of two maps (and type a little) while a
/// network delivers their exports late, out of order, twice, as whole
/// histories, as stale exports, as snapshots into live documents and as
/// range exports. Once everything is delivered, every replica holds the
/// same maps, text and history, the reference model's maps, and what its
/// events said.
fn random_deliveries(seed: u64, steps: usize) {
    let mut rng = weft_testkit::Rng::new(seed ^ 0x3a95);
    let mut docs: Vec<Doc> = (1..=3).map(doc).collect();
    let mut models: Vec<weft_testkit::RefDoc> = (1..=3).map(weft_testkit::RefDoc::new).collect();
    let mut old_versions: Vec<Vec<VersionVector>> = vec![vec![VersionVector::new()]; 3];
    let mut network = Network::default();
    type Mirror = BTreeMap<String, BTreeMap<String, Value>>;
    let mirror: Arc<Mutex<Mirror>> = Arc::default();
    let m = Arc::clone(&mirror);
    let _sub = docs[0].subscribe(move |e| {
        let mut m = m.lock().unwrap();
        for d in &e.maps {
            let map = m.entry(d.name.clone()).or_default();
            for (k, v) in &d.changes {
                match v {
                    Some(v) => map.insert(k.clone(), v.clone()),
                    None => map.remove(k),
                };
            }
        }
    });
    for _ in 0..steps {
        let i = rng.below(3);
        match rng.below(12) {
            0..=5 => {
                let map = ["m", "m", "n"][rng.below(3)];
                let key = ["a", "b", "c"][rng.below(3)];
                let value = (!rng.chance(25)).then(|| Value::from(rng.below(5) as i64));
                let mut h = docs[i].map(map);
                match &value {
                    Some(v) => h.set(key, v.clone()).unwrap(),
                    None => h.delete(key).unwrap(),
                }
                models[i].map_set(map, key, value);
            }
            6 => {
                let len = docs[i].text("t").len();
                let pos = rng.below(len + 1);
                docs[i].text("t").insert(pos, "x").unwrap();
                models[i].insert(pos, "x");
            }
            7 => {
                docs[i].commit();
                old_versions[i].push(docs[i].version());
            }
            _ => network.send(&mut rng, &docs, i, &old_versions),
        }
        // Deliver some of what is in flight, in random order; the
        // receiver's model takes what the receiver now holds.
        network.deliver_some(&mut rng, |to, bytes| {
            deliver(&mut docs, &mut models, to, bytes)
        });
    }
    network.deliver_all(|to, bytes| deliver(&mut docs, &mut models, to, bytes));
    let model = weft_testkit::net::sync_everyone(&mut docs, &models);
    for d in &docs {
        assert!(d.pending_spans().is_empty(), "seed {seed}");
        assert_eq!(map_contents(d), model.map_contents(), "seed {seed}: model");
        assert_eq!(
            d.get_text("t").map_or(0, |t| t.len()),
            model.len(),
            "seed {seed}"
        );
        assert_same(d, &docs[0]);
    }
    // Shallow copies, trimmed at the latest version and at an older one,
    // show the same maps and go on merging.
    let old = old_versions[0][rng.below(old_versions[0].len())].clone();
    for root in [docs[0].frontiers(), docs[0].vv_to_frontiers(&old).unwrap()] {
        let bytes = docs[0].export(ExportMode::ShallowSnapshot(&root)).unwrap();
        let mut s = Doc::new();
        s.import(&bytes).unwrap();
        assert_eq!(
            map_contents(&s),
            map_contents(&docs[0]),
            "seed {seed}: shallow"
        );
        assert_eq!(
            map_contents(&s.fork_at(&root).unwrap()),
            map_contents(&docs[0].fork_at(&root).unwrap()),
            "seed {seed}: shallow view"
        );
        s.set_peer_id(9).unwrap();
        s.map("m").set("a", "shallow").unwrap();
        let mut d = docs[1].fork();
        d.import(
            &s.export(ExportMode::Updates { from: &d.version() })
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            d.get_map("m").unwrap().get("a"),
            Some(&Value::from("shallow"))
        );
    }
    let mirrored: Vec<(String, Vec<(String, Value)>)> = mirror
        .lock()
        .unwrap()
        .iter()
        .map(|(n, e)| (n.clone(), e.clone().into_iter().collect::<Vec<_>>()))
        .filter(|(_, e)| !e.is_empty())
        .collect();
    assert_eq!(mirrored, map_contents(&docs[0]), "seed {seed}: events");
}

/// Imports `bytes` into `docs[to]` and brings its model to what it then
/// holds.
fn deliver(docs: &mut [Doc], models: &mut [weft_testkit::RefDoc], to: usize, bytes: &[u8]) {
    deliver_to_model(docs, models, to, bytes);
    assert_eq!(map_contents(&docs[to]), models[to].map_contents());
}

#[test]
fn random_map_writes_converge_under_every_delivery() {
    let extra: u64 = std::env::var("WEFT_STRESS_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    for seed in 0..30 + extra {
        random_deliveries(seed, 200);
    }
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
