//! Scale: in a store of 10,000 documents with 100 updates each, loading
//! one costs what it costs in a store of 10.
//!
//! The rows are written straight into the database in one transaction
//! (every document gets the same 100 one-keystroke updates, checksummed
//! as the store does): a million durable appends would only measure
//! fsync. `WEFT_STORE_SCALE_DOCS` changes the 10,000. On SQLite and on
//! PostgreSQL.

use std::time::{Duration, Instant};

use rusqlite::params;
use weft_store::{Store, StoreOptions};

use crate::common::{Db, Rng, SqliteDb, Typist};
use crate::pg::PgDb;

const UPDATES: usize = 100;

/// A store of `docs` documents of the same 100 updates.
fn store_of(docs: usize, updates: &[Vec<u8>]) -> SqliteDb {
    let db = SqliteDb::new();
    drop(Store::open_sqlite(db.file(), StoreOptions::new()).expect("create the schema"));
    let mut conn = rusqlite::Connection::open(db.file()).unwrap();
    let tx = conn.transaction().unwrap();
    {
        let mut doc = tx
            .prepare("INSERT INTO weft_documents (id, epoch, next_seq) VALUES (?1, ?2, ?3)")
            .unwrap();
        let mut row = tx
            .prepare("INSERT INTO weft_updates (doc, seq, checksum, bytes) VALUES (?1, ?2, ?3, ?4)")
            .unwrap();
        for d in 0..docs {
            doc.execute(params![
                format!("doc{d}"),
                &(d as u128).to_le_bytes()[..],
                UPDATES as i64 + 1
            ])
            .unwrap();
            let key = tx.last_insert_rowid();
            for (seq, u) in updates.iter().enumerate() {
                let sum = xxhash_rust::xxh3::xxh3_64(u) as i64;
                row.execute(params![key, seq as i64 + 1, sum, u]).unwrap();
            }
        }
    }
    tx.commit().unwrap();
    db
}

/// A PostgreSQL database of `docs` documents of the same 100 updates,
/// each document's rows written together (as SQLite's table, clustered
/// by document, always keeps them). Rows of documents appended
/// interleaved lie one per heap page in PostgreSQL, so a load then reads
/// a page per row since the last snapshot: still the document's cost
/// (compaction bounds the rows), but measured about 4x slower here than
/// rows written together.
fn pg_store_of(docs: usize, updates: &[Vec<u8>]) -> PgDb {
    let db = PgDb::new();
    drop(db.open(StoreOptions::new()));
    let mut client = postgres::Client::connect(&db.config(), postgres::NoTls).unwrap();
    let mut tx = client.transaction().unwrap();
    tx.execute(
        "INSERT INTO weft_documents (id, epoch, next_seq)
         SELECT 'doc' || g, int8send(g) || int8send(0::bigint), $1::bigint
         FROM generate_series(0::bigint, $2::bigint - 1) g",
        &[&(UPDATES as i64 + 1), &(docs as i64)],
    )
    .unwrap();
    let seqs: Vec<i64> = (1..=updates.len() as i64).collect();
    let sums: Vec<i64> = updates
        .iter()
        .map(|u| xxhash_rust::xxh3::xxh3_64(u) as i64)
        .collect();
    tx.execute(
        "INSERT INTO weft_updates (doc, seq, checksum, bytes)
         SELECT d.key, u.seq, u.checksum, u.bytes FROM weft_documents d
         CROSS JOIN unnest($1::bigint[], $2::bigint[], $3::bytea[]) AS u(seq, checksum, bytes)
         ORDER BY d.key, u.seq",
        &[&seqs, &sums, &updates],
    )
    .unwrap();
    tx.commit().unwrap();
    client.batch_execute("ANALYZE").unwrap();
    db
}

/// The median time of a cold load (cache cleared) of a random document.
fn median_load(store: &Store, docs: usize, rng: &mut Rng, expect: &str) -> Duration {
    let mut times: Vec<Duration> = (0..200)
        .map(|_| {
            let id = format!("doc{}", rng.below(docs as u64));
            store.clear_cache();
            let start = Instant::now();
            let text = store
                .read(&id, |d| d.get_text("t").map(|t| t.to_string()))
                .expect("load");
            let t = start.elapsed();
            assert_eq!(text.as_deref(), Some(expect));
            t
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

fn scale_docs() -> usize {
    std::env::var("WEFT_STORE_SCALE_DOCS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000)
}

/// Loads in `small` (10 documents) against `big` (`docs`), after
/// warming both; panics unless the big one costs under twice as much.
fn compare(backend: &str, small: &Store, big: &Store, docs: usize, text: &str, build: Duration) {
    let mut rng = Rng::new(7);
    // Warm both (connections, page cache), then measure each twice,
    // interleaved, and keep the better median of each.
    median_load(small, 10, &mut rng, text);
    median_load(big, docs, &mut rng, text);
    let s = median_load(small, 10, &mut rng, text).min(median_load(small, 10, &mut rng, text));
    let b = median_load(big, docs, &mut rng, text).min(median_load(big, docs, &mut rng, text));
    eprintln!(
        "scale ({backend}): load of one document (100 rows): {:.3} ms among 10, {:.3} ms among {docs} ({:.2}x); stores built in {:.1} s",
        s.as_secs_f64() * 1e3,
        b.as_secs_f64() * 1e3,
        b.as_secs_f64() / s.as_secs_f64(),
        build.as_secs_f64()
    );
    assert!(
        b < s * 2,
        "{backend}: loading among {docs} documents ({b:?}) costs more than twice loading among 10 ({s:?})"
    );
    assert_eq!(big.list().unwrap().len(), docs);
}

/// The 100 updates every document gets, and the text they type.
fn updates() -> (Vec<Vec<u8>>, String) {
    let mut typist = Typist::new(1);
    let updates: Vec<Vec<u8>> = (0..UPDATES).map(|i| typist.type_at(i, "k")).collect();
    (updates, typist.text())
}

#[test]
fn loading_one_document_costs_the_same_among_10_or_10000() {
    let docs = scale_docs();
    let (updates, text) = updates();
    let start = Instant::now();
    let small = store_of(10, &updates);
    let big = store_of(docs, &updates);
    let build = start.elapsed();
    let options = StoreOptions::new().compaction_ratio(None);
    let small_store = Store::open_sqlite(small.file(), options.clone()).unwrap();
    let big_store = Store::open_sqlite(big.file(), options).unwrap();
    compare("SQLite", &small_store, &big_store, docs, &text, build);
}

#[test]
fn loading_one_document_costs_the_same_among_10_or_10000_on_postgres() {
    let docs = scale_docs();
    let (updates, text) = updates();
    let start = Instant::now();
    let small = pg_store_of(10, &updates);
    let big = pg_store_of(docs, &updates);
    let build = start.elapsed();
    let options = StoreOptions::new().compaction_ratio(None);
    compare(
        "PostgreSQL",
        &small.open(options.clone()),
        &big.open(options),
        docs,
        &text,
        build,
    );
}
