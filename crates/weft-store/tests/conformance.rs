//! One suite, every backend: each test takes a [`Db`] and opens stores on it.

use std::sync::Arc;
use std::time::Duration;

use weft::{Doc, VersionVector};
use weft_store::{Error, Store, StoreOptions};

use crate::common::{text_of_doc, Db, Typist};

/// Options that never compact by themselves.
fn manual() -> StoreOptions {
    StoreOptions::new().compaction_ratio(None)
}

fn text_of(store: &Store, id: &str) -> String {
    store.read(id, text_of_doc).expect("load")
}

pub fn create_list_delete_and_epochs(db: &dyn Db) {
    let store = db.open(manual());
    let a1 = store.create("a").unwrap();
    store.create("b").unwrap();
    assert!(matches!(store.create("a"), Err(Error::AlreadyExists { document }) if document == "a"));
    let ids: Vec<String> = store.list().unwrap().into_iter().map(|i| i.id).collect();
    assert_eq!(ids, ["a", "b"]);
    assert_eq!(store.epoch("a").unwrap(), a1);

    let mut p = Typist::new(1);
    store.append("a", &p.type_at(0, "old")).unwrap();
    store.delete("a").unwrap();
    assert!(matches!(store.load("a"), Err(Error::UnknownDocument { document }) if document == "a"));
    let a2 = store.create("a").unwrap();
    assert_ne!(a1, a2, "a document created again gets a new epoch");
    assert_eq!(
        text_of(&store, "a"),
        "",
        "nothing of the deleted document remains"
    );
    assert!(matches!(
        store.delete("zz"),
        Err(Error::UnknownDocument { .. })
    ));
    assert!(matches!(store.create(""), Err(Error::InvalidId { len: 0 })));
    let long = "x".repeat(weft_store::MAX_ID_LEN + 1);
    assert!(matches!(
        store.append(&long, b"x"),
        Err(Error::InvalidId { .. })
    ));
}

pub fn appends_survive_reopening(db: &dyn Db) {
    let (mut p1, mut p2) = (Typist::new(1), Typist::new(2));
    {
        let store = db.open(manual());
        store.create("doc").unwrap();
        for i in 0..20 {
            let a = store.append("doc", &p1.type_at(i, "a")).unwrap();
            assert!(a.seq.is_some());
            assert!(a.version.includes_all(&p1.doc.version()));
        }
        p2.doc.import(&p1.all()).unwrap();
        store.append("doc", &p2.type_at(0, "B")).unwrap();
    }
    let store = db.open(manual());
    let doc = store.load("doc").unwrap();
    doc.assert_invariants();
    p1.doc.import(&p2.all()).unwrap();
    assert_eq!(text_of_doc(&doc), p1.text());
    assert_eq!(doc.version(), p1.doc.version());
    // The loaded copy edits as a peer of its own.
    assert_ne!(doc.peer_id(), 1);
    assert_ne!(doc.peer_id(), 2);
}

pub fn pending_updates_are_stored_and_stay_pending(db: &dyn Db) {
    let mut p = Typist::new(7);
    let first = p.type_at(0, "Hello");
    let second = p.type_at(5, " world");
    {
        let store = db.open(manual());
        store.create("doc").unwrap();
        let a = store.append("doc", &second).unwrap();
        assert!(a.pending, "its dependencies are missing");
        assert!(a.seq.is_some(), "stored anyway");
    }
    {
        let store = db.open(manual());
        let doc = store.load("doc").unwrap();
        assert_eq!(text_of_doc(&doc), "");
        assert!(
            !doc.pending_spans().is_empty(),
            "still pending after reopening"
        );
        // Compaction keeps pending updates pending.
        store.compact("doc").unwrap().expect("one row to compact");
        let doc = store.load("doc").unwrap();
        assert!(!doc.pending_spans().is_empty());
    }
    let store = db.open(manual());
    let a = store.append("doc", &first).unwrap();
    assert!(!a.pending);
    assert_eq!(text_of(&store, "doc"), "Hello world");
    drop(store);
    let store = db.open(manual());
    assert_eq!(text_of(&store, "doc"), "Hello world");
    store.load("doc").unwrap().assert_invariants();
}

pub fn bytes_that_do_not_import_store_nothing(db: &dyn Db) {
    let store = db.open(manual());
    store.create("doc").unwrap();
    let mut p = Typist::new(3);
    store.append("doc", &p.type_at(0, "keep")).unwrap();
    let mut forged = p.type_at(4, "!");
    let last = forged.len() - 1;
    forged[last] ^= 0x55;
    for bad in [&b""[..], b"garbage", &forged[..forged.len() / 2], &forged] {
        match store.append("doc", bad) {
            Err(Error::Import { document, .. }) => assert_eq!(document, "doc"),
            other => panic!("expected an import error, got {other:?}"),
        }
    }
    assert!(matches!(
        store.append("nope", &p.all()),
        Err(Error::UnknownDocument { .. })
    ));
    assert_eq!(store.stats().rows_appended, 1);
    drop(store);
    let store = db.open(manual());
    assert_eq!(text_of(&store, "doc"), "keep");
    let report = store.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    assert_eq!(report.rows, 1, "only the good row is stored");
}

/// Imports every update of `updates` into `doc`.
fn import_all(doc: &mut Doc, updates: &[Vec<u8>]) {
    for u in updates {
        doc.import(u).expect("an update from the store imports");
    }
}

pub fn updates_since_gives_what_a_peer_lacks(db: &dyn Db) {
    let store = db.open(manual());
    store.create("doc").unwrap();
    let mut p = Typist::new(4);
    for i in 0..10 {
        store.append("doc", &p.type_at(i, "x")).unwrap();
    }
    let mut peer = Doc::new();
    import_all(
        &mut peer,
        &store.updates_since("doc", &VersionVector::new()).unwrap(),
    );
    assert_eq!(text_of_doc(&peer), "xxxxxxxxxx");
    assert!(store
        .updates_since("doc", &peer.version())
        .unwrap()
        .is_empty());
    store.compact("doc").unwrap();
    // Peers that stopped at different points after the snapshot.
    let mut peers = vec![Doc::new(), peer.fork()];
    let mut q = Typist::new(5);
    for i in 0..6 {
        store.append("doc", &p.type_at(0, "yz")).unwrap();
        q.doc.import(&p.all()).unwrap();
        store.append("doc", &q.type_at(i, "Q")).unwrap();
        p.doc.import(&q.all()).unwrap();
        if i == 2 || i == 5 {
            peers.push(p.doc.fork());
        }
    }
    // Cold (the peers that hold the snapshot's ops get rows, and the
    // snapshot is not read), then cached: each peer gets what it lacks.
    for cold in [true, false] {
        if cold {
            store.clear_cache();
        }
        let loads = store.stats().loads;
        for (i, peer) in peers.iter().enumerate().rev() {
            let sent = store.updates_since("doc", &peer.version()).unwrap();
            if cold && i > 0 {
                assert_eq!(store.stats().loads, loads, "rows only, peer {i}");
                let bytes: usize = sent.iter().map(Vec::len).sum();
                assert!(bytes < 2_000, "not the snapshot: {bytes} bytes");
            }
            let mut peer = peer.fork();
            import_all(&mut peer, &sent);
            assert_eq!(text_of_doc(&peer), p.text(), "peer {i}, cold: {cold}");
            assert_eq!(peer.version(), p.doc.version());
            assert_eq!(sent.is_empty(), i == peers.len() - 1, "peer {i}");
        }
    }
}

/// A read while an append is in flight waits for its commit: it never
/// shows an edit the database does not hold yet.
pub fn reads_show_only_durable_edits(db: &dyn Db) {
    let store = Arc::new(db.open(manual().commit_pause(Duration::from_millis(300))));
    store.create("doc").unwrap();
    let mut p = Typist::new(6);
    store.append("doc", &p.type_at(0, "a")).unwrap();
    let update = p.type_at(1, "b");
    let appender = {
        let store = Arc::clone(&store);
        std::thread::spawn(move || store.append("doc", &update).map(|a| a.seq))
    };
    std::thread::sleep(Duration::from_millis(100));
    let shown = text_of(&store, "doc");
    let other = db.open(manual());
    let stored = text_of(&other, "doc");
    assert_eq!(shown, "ab", "the read waited for the append");
    assert_eq!(stored, shown, "what a read shows is in the database");
    assert!(appender.join().unwrap().unwrap().is_some());
}

pub fn save_appends_only_what_the_store_lacks(db: &dyn Db) {
    let store = db.open(manual());
    store.create("doc").unwrap();
    let mut doc = Doc::new();
    doc.text("t").insert(0, "draft").unwrap();
    assert!(store.save("doc", &doc).unwrap().seq.is_some());
    assert_eq!(store.save("doc", &doc).unwrap().seq, None, "nothing new");
    doc.text("t").insert(5, "!").unwrap();
    assert!(store.save("doc", &doc).unwrap().seq.is_some());
    drop(store);
    let store = db.open(manual());
    assert_eq!(text_of(&store, "doc"), "draft!");
    assert_eq!(store.check().unwrap().rows, 2);
}

pub fn compaction_replaces_rows_with_a_snapshot(db: &dyn Db) {
    let store = db.open(manual());
    store.create("doc").unwrap();
    store.create("other").unwrap();
    let mut p = Typist::new(5);
    for i in 0..50 {
        store.append("doc", &p.type_at(i, "c")).unwrap();
    }
    store
        .append("other", &Typist::new(6).type_at(0, "o"))
        .unwrap();
    let c = store.compact("doc").unwrap().expect("rows to compact");
    assert_eq!((c.generation, c.rows), (1, 50));
    assert!(
        store.compact("doc").unwrap().is_none(),
        "nothing left to compact"
    );
    let report = store.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    assert_eq!((report.rows, report.snapshots), (1, 1), "other's row stays");
    for i in 0..5 {
        store.append("doc", &p.type_at(i, "d")).unwrap();
    }
    let c = store.compact("doc").unwrap().expect("rows to compact");
    assert_eq!((c.generation, c.rows), (2, 5));
    drop(store);
    let store = db.open(manual());
    let doc = store.load("doc").unwrap();
    doc.assert_invariants();
    assert_eq!(text_of_doc(&doc), p.text());
    assert_eq!(text_of(&store, "other"), "o");
}

pub fn compaction_runs_in_the_background_by_the_size_rule(db: &dyn Db) {
    let options = StoreOptions::new()
        .compaction_ratio(Some(1.0))
        .compaction_min_bytes(0);
    let store = db.open(options.clone());
    store.create("doc").unwrap();
    let mut p = Typist::new(8);
    for i in 0..200 {
        store.append("doc", &p.type_at(i, "k")).unwrap();
    }
    assert!(store.wait_for_compactions(Duration::from_secs(30)));
    let stats = store.stats();
    assert!(stats.compactions >= 2, "{stats:?}");
    assert_eq!(stats.failed_compactions, 0);
    let report = store.check().unwrap();
    assert!(report.is_ok());
    assert!(
        report.rows < 200,
        "rows were folded into snapshots: {}",
        report.rows
    );
    assert_eq!(text_of(&store, "doc"), p.text());
    drop(store);
    assert_eq!(text_of(&db.open(options), "doc"), p.text());
}

pub fn group_commit_shares_transactions(db: &dyn Db) {
    const THREADS: u64 = 8;
    const APPENDS: usize = 40;
    let store = Arc::new(db.open(manual()));
    for d in 0..4 {
        store.create(&format!("d{d}")).unwrap();
    }
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                let mut typists: Vec<Typist> =
                    (0..4).map(|d| Typist::new(100 + t * 10 + d)).collect();
                for i in 0..APPENDS {
                    let d = (i + t as usize) % 4;
                    let update = typists[d].type_at(0, "z");
                    let a = store.append(&format!("d{d}"), &update).unwrap();
                    assert!(a.version.includes_all(&typists[d].doc.version()));
                }
                typists
            })
        })
        .collect();
    let typists: Vec<Vec<Typist>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let stats = store.stats();
    assert_eq!(stats.rows_appended, THREADS * APPENDS as u64);
    assert!(
        stats.commits < stats.rows_appended,
        "appends shared commits: {stats:?}"
    );
    drop(store);
    let store = db.open(manual());
    for d in 0..4 {
        let doc = store.load(&format!("d{d}")).unwrap();
        doc.assert_invariants();
        for t in &typists {
            assert!(doc.version().includes_all(&t[d].doc.version()));
        }
    }
}

pub fn the_cache_stays_within_its_budget(db: &dyn Db) {
    let store = db.open(manual().cache_bytes(2_000));
    for d in 0..30 {
        let id = format!("d{d}");
        store.create(&id).unwrap();
        let mut p = Typist::new(200 + d);
        for i in 0..5 {
            store.append(&id, &p.type_at(i, "abcdefghij")).unwrap();
        }
    }
    let cached = store.stats().cached_documents;
    assert!(cached < 30, "the cache evicted: {cached} documents cached");
    for d in 0..30 {
        assert_eq!(text_of(&store, &format!("d{d}")).len(), 50);
    }
    assert!(store.stats().cached_documents < 30);
}

pub fn a_second_store_sees_rows_of_the_first(db: &dyn Db) {
    let one = db.open(manual());
    let two = db.open(manual());
    one.create("doc").unwrap();
    let (mut p1, mut p2) = (Typist::new(11), Typist::new(12));
    one.append("doc", &p1.type_at(0, "one ")).unwrap();
    assert_eq!(text_of(&two, "doc"), "one ");
    two.append("doc", &p2.type_at(0, "two ")).unwrap();
    one.append("doc", &p1.type_at(4, "again")).unwrap();
    // Compaction by one store, then the other reads and appends.
    one.compact("doc").unwrap().expect("rows");
    two.append("doc", &p2.type_at(0, "2")).unwrap();
    let a = one.load("doc").unwrap();
    let b = two.load("doc").unwrap();
    assert_eq!(text_of_doc(&a), text_of_doc(&b));
    assert_eq!(a.version(), b.version());
    assert_eq!(a.version().op_count(), 4 + 4 + 5 + 1);
}

pub fn appends_after_delete_fail_cleanly(db: &dyn Db) {
    let store = db.open(manual());
    store.create("doc").unwrap();
    let mut p = Typist::new(13);
    store.append("doc", &p.type_at(0, "a")).unwrap();
    store.delete("doc").unwrap();
    assert!(matches!(
        store.append("doc", &p.type_at(0, "b")),
        Err(Error::UnknownDocument { .. })
    ));
    store.create("doc").unwrap();
    assert_eq!(text_of(&store, "doc"), "");
    let mut q = Typist::new(14);
    store.append("doc", &q.type_at(0, "new")).unwrap();
    assert_eq!(text_of(&store, "doc"), "new");
}

/// Store `a` caches a document; store `b` deletes it (and creates it
/// again): `a` never acknowledges an update it did not store in the
/// document now under that id. (An outside attack found both: the append
/// failed although the id existed again, and its retry returned `Ok`
/// with nothing stored.)
pub fn a_document_deleted_elsewhere_is_never_acknowledged_into(db: &dyn Db) {
    let (a, b) = (db.open(manual()), db.open(manual()));
    a.create("d").unwrap();
    let mut p = Typist::new(1);
    a.append("d", &p.type_at(0, "old")).unwrap();
    b.delete("d").unwrap();
    // Deleted only: every append is refused, retries too.
    let mut q = Typist::new(2);
    let u = q.type_at(0, "new");
    for _ in 0..2 {
        assert!(matches!(
            a.append("d", &u),
            Err(Error::UnknownDocument { .. })
        ));
    }
    // Re-sending what the deleted document held is refused too.
    assert!(matches!(
        a.append("d", &p.all()),
        Err(Error::UnknownDocument { .. })
    ));
    // Created again: the update goes to the new document, at once.
    b.create("d").unwrap();
    let appended = a.append("d", &u).unwrap();
    assert!(appended.seq.is_some());
    assert_eq!(text_of(&b, "d"), "new");
    assert_eq!(text_of(&a, "d"), "new");
    // What only the deleted document held is stored anew, not taken as
    // known.
    assert!(a.append("d", &p.all()).unwrap().seq.is_some());
    assert_eq!(text_of(&b, "d").len(), "oldnew".len());
}

/// An append whose commit fails, and one after it that built on it: the
/// second is stored, and what it reports is the stored document's state
/// (its ops held back), not the state that included the failed one.
pub fn an_append_built_on_a_failed_one_reports_the_stored_state(db: &dyn Db) {
    let store = Arc::new(
        db.open(
            manual()
                .max_batch(1)
                .commit_pause(Duration::from_millis(300)),
        ),
    );
    store.create("doc").unwrap();
    let mut p = Typist::new(7);
    store.append("doc", &p.type_at(0, "base")).unwrap();
    let first = p.type_at(4, "ONE");
    let second = p.type_at(7, "TWO");
    db.fail_inserts_of(&first);
    let s = Arc::clone(&store);
    let one = std::thread::spawn(move || s.append("doc", &first));
    std::thread::sleep(Duration::from_millis(100));
    let two = store.append("doc", &second).unwrap();
    assert!(one.join().unwrap().is_err(), "the injected failure");
    assert!(two.seq.is_some(), "stored");
    assert!(two.pending, "its dependency is not stored: held back");
    let loaded = store.load("doc").unwrap();
    assert_eq!(text_of_doc(&loaded), "base");
    assert!(!loaded.pending_spans().is_empty());
    assert!(
        two.version.includes_all(&loaded.version()) && loaded.version().includes_all(&two.version)
    );
}

/// One `#[test]` per suite function and backend.
macro_rules! suite {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(#[test]
            fn $name() {
                super::$name(&crate::common::SqliteDb::new());
            })*
        }
        mod postgres {
            $(#[test]
            fn $name() {
                super::$name(&crate::pg::PgDb::new());
            })*
        }
    };
}

suite!(
    create_list_delete_and_epochs,
    appends_survive_reopening,
    pending_updates_are_stored_and_stay_pending,
    bytes_that_do_not_import_store_nothing,
    updates_since_gives_what_a_peer_lacks,
    reads_show_only_durable_edits,
    save_appends_only_what_the_store_lacks,
    compaction_replaces_rows_with_a_snapshot,
    compaction_runs_in_the_background_by_the_size_rule,
    group_commit_shares_transactions,
    the_cache_stays_within_its_budget,
    a_second_store_sees_rows_of_the_first,
    appends_after_delete_fail_cleanly,
    a_document_deleted_elsewhere_is_never_acknowledged_into,
    an_append_built_on_a_failed_one_reports_the_stored_state,
);
