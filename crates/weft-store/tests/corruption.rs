//! Damaged databases: a flipped byte, a forged row (with a matching
//! checksum), a truncated row or snapshot give an error naming the
//! document and the row; other documents still load; `check` reports
//! each; nothing else changes.

use rusqlite::{params, Connection};
use weft_store::{Damage, Error, RowId, Store, StoreOptions};

use crate::common::{text_of_doc, Db, SqliteDb, Typist};

fn options() -> StoreOptions {
    StoreOptions::new().compaction_ratio(None)
}

/// A store with documents "good" and "bad", 3 rows each; "bad" also
/// compacted once (snapshot generation 1) if `snapshot`.
fn setup(db: &SqliteDb, snapshot: bool) -> Typist {
    let store = db.open(options());
    let mut bad = Typist::new(1);
    let mut good = Typist::new(2);
    store.create("good").unwrap();
    store.create("bad").unwrap();
    for i in 0..3 {
        store.append("bad", &bad.type_at(i, "b")).unwrap();
        store.append("good", &good.type_at(i, "g")).unwrap();
    }
    if snapshot {
        store.compact("bad").unwrap().expect("rows");
        store.append("bad", &bad.type_at(0, "B")).unwrap();
    }
    bad
}

fn sql(db: &SqliteDb) -> Connection {
    Connection::open(db.file()).unwrap()
}

fn key_of(conn: &Connection, id: &str) -> i64 {
    conn.query_row(
        "SELECT key FROM weft_documents WHERE id = ?1",
        params![id],
        |r| r.get(0),
    )
    .unwrap()
}

/// Loading "bad" fails with `row` damaged as `damage` says; "good" loads;
/// check reports exactly that; appending to "bad" fails and stores
/// nothing.
fn expect_damage(db: &SqliteDb, row: RowId, damage: impl Fn(&Damage) -> bool) {
    let store = db.open(options());
    match store.load("bad") {
        Err(Error::Corrupt {
            document,
            row: r,
            damage: d,
        }) => {
            assert_eq!(document, "bad");
            assert_eq!(r, row);
            assert!(damage(&d), "{d:?}");
            let message = Error::Corrupt {
                document,
                row: r,
                damage: d,
            }
            .to_string();
            assert!(message.contains("\"bad\""), "{message}");
        }
        other => panic!("expected a damaged row, got {other:?}"),
    }
    assert_eq!(store.read("good", text_of_doc).unwrap(), "ggg");
    let report = store.check().unwrap();
    assert!(!report.is_ok());
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    assert_eq!(report.problems[0].document(), Some("bad"));
    let rows_before = report.rows;
    assert!(matches!(
        store.append("bad", &Typist::new(9).type_at(0, "x")),
        Err(Error::Corrupt { .. })
    ));
    assert_eq!(store.check().unwrap().rows, rows_before, "nothing stored");
    assert!(
        store.compact("bad").is_err(),
        "compaction deletes nothing it cannot read"
    );
    assert_eq!(store.check().unwrap().rows, rows_before);
}

#[test]
fn a_flipped_byte_in_a_row_names_the_document_and_row() {
    let db = SqliteDb::new();
    setup(&db, false);
    let conn = sql(&db);
    let key = key_of(&conn, "bad");
    let mut bytes: Vec<u8> = conn
        .query_row(
            "SELECT bytes FROM weft_updates WHERE doc = ?1 AND seq = 2",
            params![key],
            |r| r.get(0),
        )
        .unwrap();
    bytes[3] ^= 1;
    conn.execute(
        "UPDATE weft_updates SET bytes = ?2 WHERE doc = ?1 AND seq = 2",
        params![key, bytes],
    )
    .unwrap();
    expect_damage(&db, RowId::Update { seq: 2 }, |d| {
        matches!(d, Damage::Checksum { .. })
    });
}

#[test]
fn a_forged_row_with_a_matching_checksum_does_not_import() {
    let db = SqliteDb::new();
    setup(&db, false);
    let conn = sql(&db);
    let key = key_of(&conn, "bad");
    let forged = b"not a weft update".to_vec();
    let sum = xxhash_rust::xxh3::xxh3_64(&forged) as i64;
    conn.execute(
        "UPDATE weft_updates SET bytes = ?2, checksum = ?3 WHERE doc = ?1 AND seq = 3",
        params![key, forged, sum],
    )
    .unwrap();
    expect_damage(&db, RowId::Update { seq: 3 }, |d| {
        matches!(d, Damage::Import(_))
    });
}

#[test]
fn a_truncated_snapshot_names_its_generation() {
    let db = SqliteDb::new();
    setup(&db, true);
    let conn = sql(&db);
    let key = key_of(&conn, "bad");
    let bytes: Vec<u8> = conn
        .query_row(
            "SELECT bytes FROM weft_snapshots WHERE doc = ?1",
            params![key],
            |r| r.get(0),
        )
        .unwrap();
    conn.execute(
        "UPDATE weft_snapshots SET bytes = ?2 WHERE doc = ?1",
        params![key, &bytes[..bytes.len() / 2]],
    )
    .unwrap();
    expect_damage(&db, RowId::Snapshot { generation: 1 }, |d| {
        matches!(d, Damage::Checksum { .. })
    });
}

#[test]
fn a_truncated_row_with_its_checksum_does_not_import() {
    let db = SqliteDb::new();
    let _ = setup(&db, false);
    let conn = sql(&db);
    let key = key_of(&conn, "bad");
    let bytes: Vec<u8> = conn
        .query_row(
            "SELECT bytes FROM weft_updates WHERE doc = ?1 AND seq = 1",
            params![key],
            |r| r.get(0),
        )
        .unwrap();
    let cut = bytes[..bytes.len() - 1].to_vec();
    let sum = xxhash_rust::xxh3::xxh3_64(&cut) as i64;
    conn.execute(
        "UPDATE weft_updates SET bytes = ?2, checksum = ?3 WHERE doc = ?1 AND seq = 1",
        params![key, cut, sum],
    )
    .unwrap();
    expect_damage(&db, RowId::Update { seq: 1 }, |d| {
        matches!(d, Damage::Import(_))
    });
}

#[test]
fn a_file_that_is_not_a_database_is_an_error() {
    let db = SqliteDb::new();
    std::fs::write(
        db.file(),
        b"this is not SQLite, just text that is long enough".repeat(100),
    )
    .unwrap();
    match Store::open_sqlite(db.file(), options()) {
        Err(e @ Error::Database { .. }) => assert!(e.to_string().contains("SQLite"), "{e}"),
        other => panic!("expected a database error, got {other:?}"),
    }
}

#[test]
fn a_damaged_record_of_a_snapshots_ops_is_named_not_trusted() {
    let db = SqliteDb::new();
    let bad = setup(&db, true);
    let conn = sql(&db);
    let key = key_of(&conn, "bad");
    let mut covers: Vec<u8> = conn
        .query_row(
            "SELECT covers FROM weft_snapshots WHERE doc = ?1",
            params![key],
            |r| r.get(0),
        )
        .unwrap();
    covers[0] ^= 1;
    conn.execute(
        "UPDATE weft_snapshots SET covers = ?2 WHERE doc = ?1",
        params![key, covers],
    )
    .unwrap();
    let store = db.open(options());
    // A peer holding the snapshot's ops would get rows only: the record
    // that says so is checked first.
    match store.updates_since("bad", &bad.doc.version()) {
        Err(Error::Corrupt {
            document,
            row,
            damage: Damage::Covers,
        }) => {
            assert_eq!(document, "bad");
            assert_eq!(row, RowId::Snapshot { generation: 1 });
        }
        other => panic!("expected a damaged record, got {other:?}"),
    }
    let report = store.check().unwrap();
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    assert!(matches!(
        &report.problems[0],
        Error::Corrupt {
            damage: Damage::Covers,
            ..
        }
    ));
    // Loading does not need the record.
    assert_eq!(text_of_doc(&store.load("bad").unwrap()), bad.text());
}

#[test]
fn a_database_from_before_the_covers_column_opens_and_gains_it() {
    let db = SqliteDb::new();
    let mut bad = setup(&db, true);
    sql(&db)
        .execute_batch("ALTER TABLE weft_snapshots DROP COLUMN covers")
        .unwrap();
    let store = db.open(options());
    // Without the record, the snapshot is read: the answer is the same.
    let mut peer = weft::Doc::new();
    for u in store
        .updates_since("bad", &weft::VersionVector::new())
        .unwrap()
    {
        peer.import(&u).unwrap();
    }
    assert_eq!(text_of_doc(&peer), bad.text());
    store.clear_cache();
    assert!(store
        .updates_since("bad", &bad.doc.version())
        .unwrap()
        .is_empty());
    assert!(store.check().unwrap().is_ok());
    // The next compaction writes the record.
    store.append("bad", &bad.type_at(0, "!")).unwrap();
    store.compact("bad").unwrap().expect("a row to compact");
    let covers: Option<Vec<u8>> = sql(&db)
        .query_row("SELECT covers FROM weft_snapshots", [], |r| r.get(0))
        .unwrap();
    assert!(covers.is_some());
    store.clear_cache();
    assert!(store
        .updates_since("bad", &bad.doc.version())
        .unwrap()
        .is_empty());
}
