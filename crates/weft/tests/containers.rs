//! Deleting texts and maps (`Doc::delete_text`, `Doc::delete_map`): what
//! a deleted container shows, edits concurrent to a delete, concurrent
//! deletes, recreating a name, events, undo, every way a document travels
//! and time travel; a random run under every delivery against the model.

#![expect(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "tests fail loudly on a broken assumption"
)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use weft::{
    Delta, Doc, Error, ExportMode, Side, Subscription, UndoManager, Unit, Value, VersionVector,
};
use weft_testkit::{doc, map_contents, sync};
use weft_testkit::{Action, Random};

/// The delta of text `name` (empty if `d` shows none).
fn delta(d: &Doc, name: &str) -> Vec<Delta> {
    d.get_text(name).map(|t| t.to_delta()).unwrap_or_default()
}

fn text(d: &Doc, name: &str) -> String {
    d.get_text(name).map(|t| t.to_string()).unwrap_or_default()
}

const UNITS: [Unit; 3] = [Unit::Char, Unit::Utf16, Unit::Utf8];

/// Every text and map of a document, kept only from its events (texts in
/// every unit).
#[derive(Default)]
struct Seen {
    texts: [BTreeMap<String, Vec<Delta>>; 3],
    maps: BTreeMap<String, BTreeMap<String, Value>>,
}

struct DocMirror {
    seen: Arc<Mutex<Seen>>,
    _subs: Vec<Subscription>,
}

impl DocMirror {
    fn attach(d: &mut Doc) -> DocMirror {
        let seen: Arc<Mutex<Seen>> = Arc::default();
        let mut subs = Vec::new();
        for (k, unit) in UNITS.into_iter().enumerate() {
            let s = Arc::clone(&seen);
            subs.push(d.subscribe_in(unit, move |e| {
                let mut s = s.lock().unwrap();
                for diff in &e.texts {
                    let mirror = s.texts[k].entry(diff.name.clone()).or_default();
                    diff.apply_to(mirror, unit).unwrap();
                }
                if k == 0 {
                    for diff in &e.maps {
                        let map = s.maps.entry(diff.name.clone()).or_default();
                        for (key, value) in &diff.changes {
                            match value {
                                Some(v) => map.insert(key.clone(), v.clone()),
                                None => map.remove(key),
                            };
                        }
                    }
                }
            }));
        }
        DocMirror { seen, _subs: subs }
    }

    /// Panics unless the mirrors equal what `d` shows.
    fn check(&self, d: &Doc, what: &str) {
        let s = self.seen.lock().unwrap();
        for (k, unit) in UNITS.into_iter().enumerate() {
            let mut names: Vec<String> = s.texts[k].keys().cloned().collect();
            names.extend(d.text_names().map(str::to_owned));
            for name in names {
                let mirror = s.texts[k].get(&name).cloned().unwrap_or_default();
                assert_eq!(mirror, delta(d, &name), "{what}: {unit:?} text {name:?}");
            }
        }
        let mirrored: Vec<(String, Vec<(String, Value)>)> = s
            .maps
            .iter()
            .map(|(n, m)| {
                let entries = m.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                (n.clone(), entries)
            })
            .filter(|(_, e): &(String, Vec<_>)| !e.is_empty())
            .collect();
        assert_eq!(mirrored, map_contents(d), "{what}: maps");
    }
}

#[test]
fn a_deleted_text_is_gone_and_its_name_starts_over() {
    let mut d = doc(1);
    d.text("t").insert(0, "Hello").unwrap();
    d.text("u").insert(0, "other").unwrap();
    let cursor = d.text("t").cursor(2, Side::After).unwrap();
    d.delete_text("t").unwrap();
    assert!(d.get_text("t").is_none());
    assert_eq!(d.text_names().collect::<Vec<_>>(), ["u"]);
    assert_eq!(d.text_len("t", Unit::Char), 0);
    assert_eq!(d.delete_text("t"), Err(Error::UnknownText("t".into())));
    assert_eq!(
        d.delete_text("none"),
        Err(Error::UnknownText("none".into()))
    );
    // A cursor into the deleted text no longer finds its char.
    assert_eq!(d.cursor_pos(&cursor), Err(Error::UnknownText("t".into())));

    let mut t = d.text("t");
    assert_eq!(t.to_string(), "");
    assert_eq!(t.name(), "t");
    t.insert(0, "again").unwrap();
    assert_eq!(d.get_text("t").unwrap().name(), "t");
    assert_eq!(d.text_names().collect::<Vec<_>>(), ["u", "t"]);
    assert_eq!(text(&d, "t"), "again");
    assert_eq!(text(&d, "u"), "other");
    // Deleted twice: the third text of that name.
    d.delete_text("t").unwrap();
    d.text("t").insert(0, "third").unwrap();
    assert_eq!(text(&d, "t"), "third");

    // Reserved names: the registers cannot be written through the API.
    assert!(matches!(
        d.map("\u{1}t").set("t", "x"),
        Err(Error::ReservedKey(_))
    ));
    assert!(d.map_names().next().is_none());
    assert_eq!(
        d.delete_map("m"),
        Err(Error::UnknownMap("m".into())),
        "never written"
    );

    // Checked out: refused, nothing changes.
    let v = d.frontiers();
    d.checkout(&v).unwrap();
    assert_eq!(d.delete_text("u"), Err(Error::Detached));
    d.checkout_to_latest().unwrap();
    assert_eq!(d.frontiers(), v);

    // The whole story syncs.
    let mut e = doc(2);
    sync(&mut e, &d);
    assert_eq!(e.text_names().collect::<Vec<_>>(), ["u", "t"]);
    assert_eq!(text(&e, "t"), "third");
}

/// Peer `pa` deletes text "t" and starts it over while peer `pb` types
/// in the old one; the deliveries happen in `order`.
fn concurrent_edit_and_delete(pa: u64, pb: u64, a_first: bool) {
    let mut a = doc(pa);
    a.text("t").insert(0, "shared").unwrap();
    let mut b = doc(pb);
    sync(&mut b, &a);
    a.delete_text("t").unwrap();
    a.text("t").insert(0, "new").unwrap();
    b.text("t").insert(6, " edit").unwrap();
    b.text("t").delete(0, 1).unwrap();
    if a_first {
        sync(&mut a, &b);
        sync(&mut b, &a);
    } else {
        sync(&mut b, &a);
        sync(&mut a, &b);
    }
    for d in [&a, &b] {
        assert_eq!(text(d, "t"), "new", "peers {pa}/{pb}");
        assert_eq!(d.text_names().collect::<Vec<_>>(), ["t"]);
    }
    // The hidden edits are in the history: same versions, same runs.
    assert_eq!(a.version(), b.version());
    assert_eq!(a.history_runs().unwrap(), b.history_runs().unwrap());
    // After the merge, b's edits go to the new text, for everyone.
    b.text("t").insert(3, "!").unwrap();
    sync(&mut a, &b);
    assert_eq!(text(&a, "t"), "new!");
}

#[test]
fn edits_concurrent_to_a_delete_stay_hidden_under_both_peer_orders() {
    for (pa, pb) in [(1, 2), (2, 1)] {
        for a_first in [true, false] {
            concurrent_edit_and_delete(pa, pb, a_first);
        }
    }
}

#[test]
fn concurrent_deletes_agree_on_the_winner_under_both_peer_orders() {
    for (pa, pb) in [(1, 2), (2, 1)] {
        let mut a = doc(pa);
        a.text("t").insert(0, "old").unwrap();
        a.map("m").set("k", 1).unwrap();
        let mut b = doc(pb);
        sync(&mut b, &a);
        for (d, what) in [(&mut a, "a"), (&mut b, "b")] {
            d.delete_text("t").unwrap();
            d.text("t").insert(0, what).unwrap();
            d.delete_map("m").unwrap();
            d.map("m").set("by", what).unwrap();
        }
        sync(&mut a, &b);
        sync(&mut b, &a);
        // Equal Lamport timestamps: the greater peer's delete wins.
        let winner = if pa > pb { "a" } else { "b" };
        for d in [&a, &b] {
            assert_eq!(text(d, "t"), winner, "peers {pa}/{pb}");
            assert_eq!(
                map_contents(d),
                [("m".to_owned(), vec![("by".to_owned(), Value::from(winner))])]
            );
        }
        // A later delete beats both.
        a.delete_text("t").unwrap();
        a.text("t").insert(0, "later").unwrap();
        sync(&mut b, &a);
        assert_eq!(text(&b, "t"), "later");
    }
}

#[test]
fn a_deleted_map_hides_its_keys_and_concurrent_writes() {
    for (pa, pb) in [(1, 2), (2, 1)] {
        let mut a = doc(pa);
        a.map("m").set("x", 1).unwrap();
        a.map("m").set("y", 2).unwrap();
        a.map("keep").set("z", 3).unwrap();
        let mut b = doc(pb);
        sync(&mut b, &a);
        a.delete_map("m").unwrap();
        assert!(a.get_map("m").is_none());
        assert_eq!(a.map_names().collect::<Vec<_>>(), ["keep"]);
        b.map("m").set("x", 10).unwrap(); // concurrent: hidden
        b.map("m").set("w", 4).unwrap();
        sync(&mut a, &b);
        sync(&mut b, &a);
        for d in [&a, &b] {
            assert!(d.get_map("m").is_none(), "peers {pa}/{pb}");
            assert_eq!(
                map_contents(d),
                [("keep".to_owned(), vec![("z".to_owned(), Value::I64(3))])]
            );
        }
        // Recreated by a write after the delete.
        b.map("m").set("x", 5).unwrap();
        assert_eq!(b.map("m").name(), "m");
        sync(&mut a, &b);
        assert_eq!(a.get_map("m").unwrap().get("x"), Some(&Value::I64(5)));
        assert_eq!(a.get_map("m").unwrap().len(), 1);
        assert_eq!(a.map_names().collect::<Vec<_>>(), ["keep", "m"]);
    }
}

#[test]
fn events_report_a_delete_as_content_deleted_and_inserted() {
    let mut a = doc(1);
    let ma = DocMirror::attach(&mut a);
    a.text("t").insert(0, "Hé😀 world").unwrap();
    a.text("t").mark(0..3, "bold", true).unwrap();
    a.map("m").set("k", 1).unwrap();
    a.commit();
    ma.check(&a, "created");
    let mut b = doc(2);
    let mb = DocMirror::attach(&mut b);
    sync(&mut b, &a);
    mb.check(&b, "synced");
    let before_delete = a.frontiers();

    // Deleted and started over within one change.
    a.delete_text("t").unwrap();
    a.text("t").insert(0, "fresh").unwrap();
    a.delete_map("m").unwrap();
    a.map("m").set("j", 2).unwrap();
    a.commit();
    ma.check(&a, "local delete");
    // b edits the old text concurrently; its own mirror follows.
    b.text("t").insert(0, "b: ").unwrap();
    b.map("m").set("k", 3).unwrap();
    b.commit();
    mb.check(&b, "concurrent edit");
    sync(&mut b, &a);
    mb.check(&b, "remote delete");
    sync(&mut a, &b);
    ma.check(&a, "edits to the hidden text");
    assert_eq!(text(&a, "t"), "fresh");
    assert_eq!(text(&b, "t"), "fresh");

    // Checkout before the delete and back.
    a.checkout(&before_delete).unwrap();
    assert_eq!(text(&a, "t"), "Hé😀 world");
    ma.check(&a, "checkout before the delete");
    a.checkout_to_latest().unwrap();
    ma.check(&a, "back to latest");

    // A snapshot into a subscribed empty document, lazily and eagerly.
    let mut c = Doc::new();
    let mc = DocMirror::attach(&mut c);
    c.import(&a.export(ExportMode::Snapshot).unwrap()).unwrap();
    mc.check(&c, "snapshot");
    assert_eq!(text(&c, "t"), "fresh");
}

#[test]
fn undo_of_a_delete_puts_the_content_back() {
    let mut d = doc(1);
    d.text("t").insert(0, "Hello world").unwrap();
    d.text("t").mark(0..5, "bold", true).unwrap();
    d.text("t").split_block(5, [("type", "h1")]).unwrap();
    d.map("m").set("k", 1).unwrap();
    d.commit();
    let before_t = delta(&d, "t");
    let before_m = map_contents(&d);
    let mut undo = UndoManager::new(&mut d);
    d.delete_text("t").unwrap();
    d.delete_map("m").unwrap();
    d.commit();
    undo.checkpoint();
    assert!(d.get_text("t").is_none());
    undo.undo(&mut d).unwrap().unwrap();
    assert_eq!(delta(&d, "t"), before_t);
    assert_eq!(map_contents(&d), before_m);
    undo.redo(&mut d).unwrap().unwrap();
    assert_eq!(delta(&d, "t"), []);
    assert!(map_contents(&d).is_empty());
    undo.undo(&mut d).unwrap().unwrap();
    assert_eq!(delta(&d, "t"), before_t);

    // Undo of typing into a started-over text, and of the delete before.
    d.delete_text("t").unwrap();
    d.text("t").insert(0, "x").unwrap();
    d.commit();
    undo.checkpoint();
    undo.undo(&mut d).unwrap().unwrap();
    assert_eq!(delta(&d, "t"), before_t);
}

#[test]
fn deleted_containers_travel_and_time_travel() {
    let mut a = doc(1);
    a.text("t").insert(0, "first").unwrap();
    a.map("m").set("k", 1).unwrap();
    let v1 = a.frontiers();
    a.delete_text("t").unwrap();
    a.delete_map("m").unwrap();
    a.text("t").insert(0, "second").unwrap();
    let v2 = a.frontiers();
    let mut b = doc(2);
    sync(&mut b, &a);
    b.text("t").insert(0, "x").unwrap(); // a concurrent-free edit after
    let v3 = b.frontiers();
    sync(&mut a, &b);
    let shows = |d: &Doc| (text(d, "t"), map_contents(d), d.text_names().count());
    let want = shows(&a);
    assert_eq!(want.0, "xsecond");

    // Snapshots: lazily into an empty document, into a live one, shallow.
    let snap = a.export(ExportMode::Snapshot).unwrap();
    let mut c = Doc::new();
    c.import(&snap).unwrap();
    assert_eq!(shows(&c), want);
    let mut live = doc(3);
    live.text("t").insert(0, "mine").unwrap();
    live.import(&snap).unwrap();
    // live's own text is concurrent to the delete: hidden.
    assert_eq!(text(&live, "t"), "xsecond");
    assert!(live.version() >= a.version());
    let mut s = Doc::new();
    s.import(&a.export(ExportMode::ShallowSnapshot(&v2)).unwrap())
        .unwrap();
    assert_eq!(shows(&s), want);
    s.text("t").insert(0, "s").unwrap();
    sync(&mut a, &s);
    assert_eq!(text(&a, "t"), "sxsecond");

    // Old versions show what they had.
    let old = a.fork_at(&v1).unwrap();
    assert_eq!(text(&old, "t"), "first");
    assert_eq!(
        map_contents(&old),
        [("m".to_owned(), vec![("k".to_owned(), Value::I64(1))])]
    );
    let mut at = Doc::new();
    at.import(&a.export(ExportMode::SnapshotAt(&v1)).unwrap())
        .unwrap();
    assert_eq!(text(&at, "t"), "first");
    assert_eq!(text(&a.fork_at(&v3).unwrap(), "t"), "xsecond");

    // Diffs across the delete, both ways.
    for (from, to) in [(&v1, &v3), (&v3, &v1)] {
        let mut mirror = delta(&a.fork_at(from).unwrap(), "t");
        for d in a.diff(from, to).unwrap() {
            assert_eq!(d.name, "t");
            d.apply_to(&mut mirror, Unit::Char).unwrap();
        }
        assert_eq!(mirror, delta(&a.fork_at(to).unwrap(), "t"));
        let maps = a.diff_maps(from, to).unwrap();
        let want = map_contents(&a.fork_at(to).unwrap());
        let got: Vec<_> = maps
            .iter()
            .map(|m| {
                let e: Vec<_> = m
                    .changes
                    .iter()
                    .filter_map(|(k, v)| v.clone().map(|v| (k.clone(), v)))
                    .collect();
                (m.name.clone(), e)
            })
            .filter(|(_, e)| !e.is_empty())
            .collect();
        assert_eq!(got, want);
    }

    // revert_to before the delete brings the content back (in the text
    // now shown), and syncs.
    a.revert_to(&v1).unwrap();
    assert_eq!(text(&a, "t"), "first");
    assert_eq!(
        map_contents(&a),
        [("m".to_owned(), vec![("k".to_owned(), Value::I64(1))])]
    );
    sync(&mut b, &a);
    assert_eq!(text(&b, "t"), "first");
}

/// Three peers type, write maps, delete and restart text "t" and map
/// "m" while a network delivers their exports in every way, and check
/// out versions they held (imports arrive meanwhile, events follow on
/// return). Each replica equals the model whenever what it holds
/// changes, and its event mirrors (texts in every unit, maps) equal what
/// it shows; at the end all agree, and old versions and shallow copies
/// show what the model had.
#[test]
fn random_deletes_converge_under_every_delivery_and_match_the_model() {
    fn deletes(a: &mut Action) -> bool {
        match a {
            Action::Delete { len, .. } => {
                *len %= 4;
                true
            }
            Action::Insert { .. }
            | Action::MapSet { .. }
            | Action::DeleteContainer { .. }
            | Action::Commit { .. }
            | Action::Send { .. }
            | Action::Deliver { .. } => true,
            _ => false,
        }
    }
    let stats = Random {
        seeds: 30,
        keep: deletes,
        ..Random::new(200)
    }
    .run(0xde1e7e);
    assert!(stats.checkouts > 30, "{stats:?}");
}

/// `update` with every `from` in its body replaced by `to` (as long) and
/// its checksum recomputed: what a peer running a modified build sends.
fn forge(update: &[u8], from: &str, to: &str) -> Vec<u8> {
    assert_eq!(from.len(), to.len());
    let (head, body) = update.split_at(16);
    let mut body = body.to_vec();
    let mut found = 0;
    let mut i = 0;
    while i + from.len() <= body.len() {
        if &body[i..i + from.len()] == from.as_bytes() {
            body[i..i + from.len()].copy_from_slice(to.as_bytes());
            found += 1;
            i += from.len();
        } else {
            i += 1;
        }
    }
    assert!(found > 0, "{from:?} is in the update");
    let mut out = head[..8].to_vec();
    out.extend_from_slice(&xxhash_rust::xxh3::xxh3_64(&body).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

/// Found by an outside attack: a forged register write under a reserved
/// key (the raw name of the container shown, or the other register's
/// name) made events report a delete the document never made, and leaked
/// a register into events as a map. Reserved keys never resolve, so they
/// change nothing anyone sees.
#[test]
fn forged_register_writes_under_reserved_keys_change_nothing_shown() {
    let mut a = doc(1);
    a.text("t").insert(0, "old").unwrap();
    a.map("m").set("k", 1).unwrap();
    a.delete_text("t").unwrap();
    a.delete_map("m").unwrap();
    a.text("t").insert(0, "fresh").unwrap();
    a.map("m").set("k2", 2).unwrap();
    a.commit();
    let base = a.frontiers();
    let mut victim = Doc::new();
    let mirror = DocMirror::attach(&mut victim);
    victim
        .import(&a.export(ExportMode::Snapshot).unwrap())
        .unwrap();
    let shown = |d: &Doc| (text(d, "t"), map_contents(d));
    let before = shown(&victim);
    // The forger writes registers through a map it may write ("Q…"),
    // renamed in the bytes. Its keys: each shown container's raw name,
    // and the other register's name.
    let mut forger = a.fork();
    forger.set_peer_id(9).unwrap();
    forger.map("Qt").set("Q1@3Qt", "x").unwrap();
    forger.map("Qm").set("Q1@4Qm", "x").unwrap();
    forger.map("Qm").set("Qt", "x").unwrap();
    let update = forger
        .export(ExportMode::Updates { from: &a.version() })
        .unwrap();
    let mut forged = forge(&update, "Q1@3Qt", "\u{1}1@3\u{1}t");
    forged = forge(&forged, "Q1@4Qm", "\u{1}1@4\u{1}m");
    forged = forge(&forged, "Qt", "\u{1}t");
    forged = forge(&forged, "Qm", "\u{1}m");
    victim.import(&forged).unwrap();
    assert_eq!(shown(&victim), before);
    assert_eq!(shown(&victim).0, "fresh");
    mirror.check(&victim, "forged import");
    victim.checkout(&base).unwrap();
    mirror.check(&victim, "checkout before the forged writes");
    victim.checkout_to_latest().unwrap();
    mirror.check(&victim, "back");
    victim.text("t").insert(5, "!").unwrap();
    victim.commit();
    mirror.check(&victim, "a local edit after");
    assert_eq!(victim.map_names().collect::<Vec<_>>(), ["m"]);
}

/// Found by an outside attack: `Doc::text` of a reserved name wrote to
/// it, so a peer could fill a predictable next incarnation before the
/// delete that starts it; reads showed hidden containers and registers.
#[test]
fn reserved_names_are_refused_and_never_read() {
    let mut a = doc(1);
    a.text("t").insert(0, "text").unwrap();
    a.map("m").set("k", 1).unwrap();
    a.commit();
    let mut b = doc(2);
    sync(&mut b, &a);
    let next = b.version().get(2);
    let raw = format!("\u{1}2@{next}\u{1}t");
    let before = a.version();
    let mut t = a.text(&raw);
    assert_eq!(t.to_string(), "");
    for r in [
        t.insert(0, "EVIL"),
        t.insert_utf16(0, "EVIL"),
        t.insert_embed(0, 1),
        t.split_block(0, [("h", 1)]),
        t.apply_delta(&[Delta::insert("EVIL")]),
        t.cursor(0, Side::After).map(|_| ()),
    ] {
        assert_eq!(r, Err(Error::ReservedKey(raw.clone())));
    }
    assert_eq!(a.version(), before);
    sync(&mut b, &a);
    b.delete_text("t").unwrap();
    assert_eq!(text(&b, "t"), "", "a new, empty text");
    // Reads of reserved names show nothing.
    b.text("t").insert(0, "new").unwrap();
    assert!(b.get_text(&raw).is_none());
    assert!(b.get_text("t").is_some());
    assert_eq!(b.text_len(&raw, Unit::Char), 0);
    assert!(b.get_map("\u{1}t").is_none());
    assert!(b.get_text("\u{1}x").is_none());
    assert_eq!(
        b.delete_text("\u{1}x"),
        Err(Error::UnknownText("\u{1}x".into()))
    );
    assert_eq!(b.text_names().collect::<Vec<_>>(), ["t"]);
}

/// Found by an outside attack: a text deleted and restarted that arrived
/// while the document was checked out gave, on return, an event deleting
/// the old text's content, which the mirrors never had (the old text,
/// absent before and hidden now, had its change left out of the event).
#[test]
fn a_delete_imported_while_checked_out_shows_on_return() {
    let mut b = doc(2);
    b.text("u").insert(0, "abc").unwrap();
    b.delete_text("u").unwrap();
    b.text("u").insert(0, "new").unwrap();
    b.map("m").set("k", 1).unwrap();
    b.delete_map("m").unwrap();
    b.map("m").set("j", 2).unwrap();
    b.commit();
    let update = b
        .export(ExportMode::Updates {
            from: &VersionVector::new(),
        })
        .unwrap();
    let mut a = doc(1);
    let mirror = DocMirror::attach(&mut a);
    a.text("t").insert(0, "x").unwrap();
    a.commit();
    let f = a.frontiers();
    a.checkout(&f).unwrap();
    a.import(&update).unwrap();
    mirror.check(&a, "detached");
    a.checkout_to_latest().unwrap();
    assert_eq!(text(&a, "u"), "new");
    mirror.check(&a, "back to latest");
    a.checkout(&f).unwrap();
    mirror.check(&a, "before the import again");
}

/// Issue 25: `text_names` / `map_names` walked every incarnation ever
/// made (a peer that deleted and recreated one text 16,000 times made
/// each call cost 1.5 ms); they now visit one incarnation per name, and
/// list the same names in the same order (a name created again counts
/// as created then), on every replica.
#[test]
fn names_after_many_deletes_list_each_shown_container_once_in_order() {
    let mut a = doc(1);
    for name in ["a", "b", "c"] {
        a.text(name).insert(0, name).unwrap();
        a.map(name).set("k", name).unwrap();
    }
    for _ in 0..300 {
        a.delete_text("a").unwrap();
        a.text("a").insert(0, "again").unwrap();
        a.delete_map("b").unwrap();
        a.map("b").set("k", 1).unwrap();
    }
    a.delete_text("c").unwrap();
    a.delete_map("c").unwrap();
    a.commit();
    let texts = |d: &Doc| d.text_names().map(str::to_owned).collect::<Vec<_>>();
    let maps = |d: &Doc| d.map_names().map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(texts(&a), ["b", "a"]);
    assert_eq!(maps(&a), ["a", "b"]);
    // The deleted "c" comes back last when written again.
    a.text("c").insert(0, "new").unwrap();
    a.map("c").set("k", 2).unwrap();
    assert_eq!(texts(&a), ["b", "a", "c"]);
    assert_eq!(maps(&a), ["a", "b", "c"]);
    // Replicas agree, through an update and through a snapshot.
    let mut b = doc(2);
    sync(&mut b, &a);
    let mut s = Doc::new();
    s.import(&a.export(ExportMode::Snapshot).unwrap()).unwrap();
    for d in [&b, &s] {
        assert_eq!(texts(d), texts(&a));
        assert_eq!(maps(d), maps(&a));
    }
}
