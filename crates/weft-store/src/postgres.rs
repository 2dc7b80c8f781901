//! The PostgreSQL backend (feature `postgres`): for several servers that
//! share one database.
//!
//! Durability: every session sets `synchronous_commit = on`, so a commit
//! returns once the server flushed its WAL: it survives a crash of the
//! client and of the server (`pg_ctl stop -m immediate` included) and,
//! with the server's `fsync = on` (the default), a power loss of its
//! machine.
//!
//! Sequence numbers continue a document's last stored row, under an
//! advisory transaction lock per document (taken in key order, so two
//! servers' batches never deadlock, and by deletes too): the appends of
//! one document commit in sequence order, whichever server made them. A
//! batch is one statement (one round trip, the `weft_append` function); reads are one statement too. One
//! compaction per document runs at a time: a session advisory lock on the
//! document's key, held from its read to its write. Connections that break
//! (a server restart) are dropped and opened again at the next use.
//!
//! A load is one prepared statement in one round trip, with binary
//! results, and snapshots are stored uncompressed (`SET STORAGE
//! EXTERNAL`: Weft compresses what is worth it). Its floor is the query
//! itself: over a unix socket on the test machine, the simplest query
//! returning compacted B4's 118 KB snapshot took 0.56-0.62 ms, 8.4-9.5x
//! importing that snapshot from memory, and a load 1.3-1.5x that query
//! plus the import (`examples --bin store -- --what open`).

use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::sync::Mutex;

use postgres::{Client, NoTls, Statement, Transaction};

use crate::backend::{
    from_sql_u64, to_sql_u64, Backend, Compacted, DocKey, DocumentInfo, Epoch, Head, NewRow,
    StoredDoc, StoredRow,
};
use crate::error::{Error, Result};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS weft_documents (
    key BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    epoch BYTEA NOT NULL,
    next_seq BIGINT NOT NULL DEFAULT 1,
    snapshot_generation BIGINT NOT NULL DEFAULT 0
);
-- Every update row with seq <= covered_through was folded into the
-- snapshot and deleted (see READ); 0 before the first compaction and in
-- databases written before the column existed.
ALTER TABLE weft_documents ADD COLUMN IF NOT EXISTS covered_through BIGINT NOT NULL DEFAULT 0;
CREATE TABLE IF NOT EXISTS weft_snapshots (
    doc BIGINT PRIMARY KEY,
    generation BIGINT NOT NULL,
    checksum BIGINT NOT NULL,
    bytes BYTEA NOT NULL,
    -- Doc::spans_in of the snapshot (backend::covers); NULL in databases
    -- written before the column existed: then the snapshot is read.
    covers BYTEA
);
ALTER TABLE weft_snapshots ADD COLUMN IF NOT EXISTS covers BYTEA;
-- Appends a batch (see INSERT_BATCH). A function, so that its statements
-- run in one round trip and the insert takes its snapshot after the locks.
CREATE OR REPLACE FUNCTION weft_append(docs BIGINT[], sums BIGINT[], bytes BYTEA[])
RETURNS TABLE (out_ord BIGINT, out_seq BIGINT) LANGUAGE plpgsql AS $fn$
BEGIN
    -- One batch per document at a time, taken in key order so that two
    -- servers' batches never deadlock. An advisory lock lives in memory:
    -- unlike a row lock or an update of the head row, it writes no WAL.
    PERFORM pg_advisory_xact_lock(2003135092, (k % 2147483647)::int)
    FROM (SELECT DISTINCT unnest(docs) AS k ORDER BY 1) AS keys;
    -- A new snapshot: it sees every batch of these documents that
    -- committed before this one took their locks, so the sequence numbers
    -- continue theirs (or the floor compaction left in next_seq). The
    -- last stored one is looked up once per document, not once per row:
    -- 8 rows of one document cost 0.27 ms instead of 0.38-0.45 (pgbench).
    RETURN QUERY
    WITH input AS (
        SELECT t.doc, t.checksum, t.bytes, t.ord
        FROM unnest(docs, sums, bytes) WITH ORDINALITY AS t(doc, checksum, bytes, ord)
    ), base AS MATERIALIZED (
        SELECT d.key,
               greatest(d.next_seq - 1,
                        coalesce((SELECT max(u.seq) FROM weft_updates u WHERE u.doc = d.key), 0))
               AS last
        FROM weft_documents d WHERE d.key IN (SELECT DISTINCT unnest(docs))
    ), numbered AS MATERIALIZED (
        SELECT i.ord, i.doc, i.checksum, i.bytes,
               b.last + row_number() OVER (PARTITION BY i.doc ORDER BY i.ord) AS seq
        FROM input i JOIN base b ON b.key = i.doc
    ), inserted AS (
        INSERT INTO weft_updates (doc, seq, checksum, bytes)
        SELECT n.doc, n.seq, n.checksum, n.bytes FROM numbered n
    )
    SELECT n.ord, n.seq FROM numbered n;
END
$fn$;
-- Weft compresses what is worth it: no second try on write or read.
ALTER TABLE weft_snapshots ALTER COLUMN bytes SET STORAGE EXTERNAL;
CREATE TABLE IF NOT EXISTS weft_updates (
    doc BIGINT NOT NULL,
    seq BIGINT NOT NULL,
    checksum BIGINT NOT NULL,
    bytes BYTEA NOT NULL,
    PRIMARY KEY (doc, seq)
);
";

/// The advisory lock key that serializes schema creation between servers
/// ("weftstor" in ASCII).
const SCHEMA_LOCK: i64 = 0x7765_6674_7374_6f72;

/// Idle connections kept.
const POOL: usize = 12;

/// Appends a batch in one statement (one round trip, one transaction):
/// `weft_append` locks the batch's documents (advisory transaction locks
/// in key order, which a delete takes too), numbers each document's rows
/// after its last stored one, and inserts them. Returns, per row whose
/// document exists, its position in the batch (from 1) and seq. Within a
/// document, sequence numbers follow commit order on every server: the
/// lock is held until commit. Measured against the earlier statement that
/// locked and bumped each document's head row (`examples --bin store`, 8
/// writers): see the commit that made this change.
const INSERT_BATCH: &str = "SELECT out_ord, out_seq FROM weft_append($1, $2, $3)";

/// The advisory lock of document `$1`'s appends (as in `weft_append`).
const APPEND_LOCK: &str =
    "SELECT pg_advisory_xact_lock(2003135092, ($1::bigint % 2147483647)::int)";

/// Reads a document in one statement (one snapshot of the database): its
/// head with its snapshot (kind 0; the snapshot's bytes only if `$3`) and
/// its update rows after `$2` (kind 1). Not sorted by the server: a sort
/// would copy the snapshot's bytes once more (measured: a cold load took
/// 1.8x one plain query for the snapshot); [`Postgres::read`] orders the
/// rows.
///
/// The rows' index scan starts after `covered_through`: the rows a
/// compaction deleted stay in the index as dead entries until the table
/// is vacuumed, and a full load of compacted B4 walked all 9,992 of them
/// (41 index pages, 0.24 ms of a 0.34 ms execution, `EXPLAIN ANALYZE`).
/// No live row sits below it: compaction deletes every row it read, and
/// it reads every row up to the highest it sees (a row is numbered, under
/// the document's lock, only after the rows below it committed).
const READ: &str = "
WITH d AS (SELECT key, epoch, snapshot_generation, covered_through FROM weft_documents WHERE id = $1)
SELECT 0 AS kind, d.key AS n, d.epoch, d.snapshot_generation, s.checksum,
       CASE WHEN $3::bool THEN s.bytes END, s.covers
FROM d LEFT JOIN weft_snapshots s ON s.doc = d.key AND d.snapshot_generation > 0
UNION ALL
SELECT 1, u.seq, NULL::bytea, NULL::bigint, u.checksum, u.bytes, NULL::bytea
FROM d JOIN weft_updates u ON u.doc = d.key AND u.seq > greatest($2, d.covered_through)";

/// A connection and the statements prepared on it.
struct Conn {
    client: Client,
    prepared: HashMap<&'static str, Statement>,
}

impl Conn {
    /// `sql` prepared on this connection (once).
    fn prepared(&mut self, sql: &'static str) -> Result<Statement> {
        if let Some(s) = self.prepared.get(sql) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(sql)?;
        self.prepared.insert(sql, s.clone());
        Ok(s)
    }
}

impl Deref for Conn {
    type Target = Client;
    fn deref(&self) -> &Client {
        &self.client
    }
}

impl DerefMut for Conn {
    fn deref_mut(&mut self) -> &mut Client {
        &mut self.client
    }
}

/// A PostgreSQL database.
pub(crate) struct Postgres {
    config: String,
    idle: Mutex<Vec<Conn>>,
}

impl Postgres {
    /// Connects and creates the tables if missing.
    pub(crate) fn connect(config: &str) -> Result<Postgres> {
        let pg = Postgres {
            config: config.to_owned(),
            idle: Mutex::new(Vec::new()),
        };
        pg.with(|c| {
            c.query_one("SELECT pg_advisory_lock($1)", &[&SCHEMA_LOCK])?;
            let created = c.batch_execute(SCHEMA);
            c.query_one("SELECT pg_advisory_unlock($1)", &[&SCHEMA_LOCK])?;
            Ok(created?)
        })?;
        Ok(pg)
    }

    /// Runs `f` on a pooled connection (a new one if none is idle).
    fn with<T>(&self, f: impl FnOnce(&mut Conn) -> Result<T>) -> Result<T> {
        let pooled = {
            let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                match idle.pop() {
                    Some(c) if c.is_closed() => continue,
                    other => break other,
                }
            }
        };
        let mut client = match pooled {
            Some(c) => c,
            None => {
                let mut client = Client::connect(&self.config, NoTls)?;
                client.batch_execute("SET synchronous_commit = on")?;
                Conn {
                    client,
                    prepared: HashMap::new(),
                }
            }
        };
        let out = f(&mut client);
        if !client.is_closed() {
            let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
            if idle.len() < POOL {
                idle.push(client);
            }
        }
        out
    }
}

fn head_of(tx: &mut Transaction<'_>, id: &str) -> Result<Option<Head>> {
    let row = tx.query_opt(
        "SELECT key, epoch, snapshot_generation FROM weft_documents WHERE id = $1",
        &[&id],
    )?;
    let Some(row) = row else { return Ok(None) };
    let epoch: Vec<u8> = row.get(1);
    let epoch = Epoch::from_bytes(&epoch).ok_or_else(|| Error::BadMetadata {
        document: id.to_owned(),
        column: "epoch",
    })?;
    Ok(Some(Head {
        key: row.get(0),
        epoch,
        snapshot_generation: from_sql_u64(row.get(2)),
    }))
}

impl Backend for Postgres {
    fn create(&self, id: &str, epoch: Epoch) -> Result<()> {
        self.with(|c| {
            let n = c.execute(
                "INSERT INTO weft_documents (id, epoch) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING",
                &[&id, &&epoch.to_bytes()[..]],
            )?;
            if n == 0 {
                return Err(Error::AlreadyExists {
                    document: id.to_owned(),
                });
            }
            Ok(())
        })
    }

    fn delete(&self, id: &str) -> Result<()> {
        self.with(|c| {
            let mut tx = c.transaction()?;
            let unknown = || Error::UnknownDocument {
                document: id.to_owned(),
            };
            let key: i64 = tx
                .query_opt("SELECT key FROM weft_documents WHERE id = $1", &[&id])?
                .ok_or_else(unknown)?
                .get(0);
            // After appends in flight to it commit, and before any other:
            // the statements below take their snapshots after the lock.
            tx.query_one(APPEND_LOCK, &[&key])?;
            if tx.execute("DELETE FROM weft_documents WHERE key = $1", &[&key])? == 0 {
                return Err(unknown());
            }
            tx.execute("DELETE FROM weft_updates WHERE doc = $1", &[&key])?;
            tx.execute("DELETE FROM weft_snapshots WHERE doc = $1", &[&key])?;
            tx.commit()?;
            Ok(())
        })
    }

    fn list(&self) -> Result<Vec<DocumentInfo>> {
        self.with(|c| {
            let rows = c.query("SELECT id, epoch FROM weft_documents ORDER BY id", &[])?;
            rows.iter()
                .map(|r| {
                    let id: String = r.get(0);
                    let epoch: Vec<u8> = r.get(1);
                    let epoch = Epoch::from_bytes(&epoch).ok_or_else(|| Error::BadMetadata {
                        document: id.clone(),
                        column: "epoch",
                    })?;
                    Ok(DocumentInfo { id, epoch })
                })
                .collect()
        })
    }

    fn head(&self, id: &str) -> Result<Option<Head>> {
        self.with(|c| {
            let mut tx = c.transaction()?;
            let head = head_of(&mut tx, id)?;
            tx.commit()?;
            Ok(head)
        })
    }

    fn read(&self, id: &str, after: u64, with_snapshot: bool) -> Result<Option<StoredDoc>> {
        self.with(|c| {
            let read = c.prepared(READ)?;
            let mut rows = c.query(&read, &[&id, &to_sql_u64(after), &with_snapshot])?;
            // The head first, then the update rows by sequence number.
            rows.sort_by_key(|r| (r.get::<_, i32>(0), r.get::<_, i64>(1)));
            let Some((first, rest)) = rows.split_first() else {
                return Ok(None);
            };
            let epoch: Vec<u8> = first.get(2);
            let epoch = Epoch::from_bytes(&epoch).ok_or_else(|| Error::BadMetadata {
                document: id.to_owned(),
                column: "epoch",
            })?;
            let generation: i64 = first.get(3);
            let head = Head {
                key: first.get(1),
                epoch,
                snapshot_generation: from_sql_u64(generation),
            };
            let snapshot = match (
                first.get::<_, Option<i64>>(4),
                first.get::<_, Option<Vec<u8>>>(5),
            ) {
                (Some(checksum), Some(bytes)) => Some(StoredRow {
                    seq: head.snapshot_generation,
                    checksum: from_sql_u64(checksum),
                    bytes,
                }),
                _ => None,
            };
            let snapshot_covers = first.get::<_, Option<Vec<u8>>>(6);
            let updates = rest
                .iter()
                .map(|r| StoredRow {
                    seq: from_sql_u64(r.get(1)),
                    checksum: from_sql_u64(r.get::<_, Option<i64>>(4).unwrap_or_default()),
                    bytes: r.get::<_, Option<Vec<u8>>>(5).unwrap_or_default(),
                })
                .collect();
            Ok(Some(StoredDoc {
                head,
                snapshot,
                snapshot_covers,
                updates,
            }))
        })
    }

    fn insert_batch(&self, rows: &[NewRow]) -> Result<Vec<Option<u64>>> {
        let docs: Vec<i64> = rows.iter().map(|r| r.key).collect();
        let checksums: Vec<i64> = rows.iter().map(|r| to_sql_u64(r.checksum)).collect();
        let bytes: Vec<&[u8]> = rows.iter().map(|r| &r.bytes[..]).collect();
        self.with(|c| {
            let insert = c.prepared(INSERT_BATCH)?;
            let mut out = vec![None; rows.len()];
            for r in c.query(&insert, &[&docs, &checksums, &bytes])? {
                let ord: i64 = r.get(0);
                let seq: i64 = r.get(1);
                if let Some(slot) = usize::try_from(ord - 1).ok().and_then(|i| out.get_mut(i)) {
                    *slot = Some(from_sql_u64(seq));
                }
            }
            Ok(out)
        })
    }

    fn write_compaction(&self, c: &Compacted<'_>) -> Result<Option<u64>> {
        self.with(|client| {
            let mut tx = client.transaction()?;
            let row = tx.query_opt(
                "SELECT snapshot_generation FROM weft_documents WHERE key = $1 FOR UPDATE",
                &[&c.key],
            )?;
            let generation = row.map(|r| from_sql_u64(r.get(0)));
            if generation != Some(c.read_generation) {
                return Ok(None);
            }
            let new = c.read_generation + 1;
            tx.execute(
                "INSERT INTO weft_snapshots (doc, generation, checksum, bytes, covers)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (doc) DO UPDATE SET generation = EXCLUDED.generation,
                     checksum = EXCLUDED.checksum, bytes = EXCLUDED.bytes,
                     covers = EXCLUDED.covers",
                &[
                    &c.key,
                    &to_sql_u64(new),
                    &to_sql_u64(crate::backend::checksum(c.bytes)),
                    &c.bytes,
                    &c.covers,
                ],
            )?;
            // The rows it deletes may be a document's last ones: next_seq
            // keeps the numbers of later appends above them. Reads skip
            // the deleted rows' dead index entries (see READ).
            let last = c.covered.iter().copied().max().unwrap_or(0);
            tx.execute(
                "UPDATE weft_documents SET snapshot_generation = $2,
                     next_seq = greatest(next_seq, $3::bigint + 1),
                     covered_through = greatest(covered_through, $3::bigint)
                 WHERE key = $1",
                &[&c.key, &to_sql_u64(new), &to_sql_u64(last)],
            )?;
            let covered: Vec<i64> = c.covered.iter().map(|&s| to_sql_u64(s)).collect();
            tx.execute(
                "DELETE FROM weft_updates WHERE doc = $1 AND seq = ANY($2)",
                &[&c.key, &covered],
            )?;
            tx.commit()?;
            Ok(Some(new))
        })
    }

    fn with_compaction_lock(&self, key: DocKey, f: &mut dyn FnMut() -> Result<()>) -> Result<bool> {
        // The lock lives in this connection's session: it is held while
        // `f` uses other connections, and released if this one breaks.
        self.with(|c| {
            let locked: bool = c
                .query_one("SELECT pg_try_advisory_lock($1)", &[&key])?
                .get(0);
            if !locked {
                return Ok(false);
            }
            let out = f();
            c.query_one("SELECT pg_advisory_unlock($1)", &[&key])?;
            out.map(|()| true)
        })
    }

    fn check_database(&self) -> Result<Vec<String>> {
        // PostgreSQL has no built-in page check short of the amcheck
        // extension; the rows' own checksums are what `check` verifies.
        Ok(Vec::new())
    }

    fn size_on_disk(&self) -> Result<u64> {
        self.with(|c| {
            let size: i64 = c
                .query_one(
                    "SELECT pg_total_relation_size('weft_documents') + pg_total_relation_size('weft_snapshots')
                        + pg_total_relation_size('weft_updates')",
                    &[],
                )?
                .get(0);
            Ok(from_sql_u64(size))
        })
    }
}
