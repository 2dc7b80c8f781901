//! The SQLite backend: one database file in WAL mode with
//! `synchronous=FULL`.
//!
//! Durability: a transaction that committed survives a crash of the
//! process and, since the WAL is fsynced at every commit, a power loss or
//! an OS crash (on a disk that honours fsync). One writer connection does
//! the group commits and compactions' writes; reads use a small pool of
//! other connections, which WAL lets run beside the writer. Several
//! processes may open one file: SQLite's locks serialize their writers
//! (`busy_timeout` waits for them).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use crate::backend::{
    from_sql_u64, to_sql_u64, Backend, Compacted, DocKey, DocumentInfo, Epoch, Head, NewRow,
    StoredDoc, StoredRow,
};
use crate::error::{Error, Result};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS weft_documents (
    key INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    epoch BLOB NOT NULL,
    next_seq INTEGER NOT NULL DEFAULT 1,
    snapshot_generation INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS weft_snapshots (
    doc INTEGER PRIMARY KEY,
    generation INTEGER NOT NULL,
    checksum INTEGER NOT NULL,
    bytes BLOB NOT NULL,
    -- Doc::spans_in of the snapshot (backend::covers); NULL in databases
    -- written before the column existed: then the snapshot is read.
    covers BLOB
);
CREATE TABLE IF NOT EXISTS weft_updates (
    doc INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    checksum INTEGER NOT NULL,
    bytes BLOB NOT NULL,
    PRIMARY KEY (doc, seq)
) WITHOUT ROWID;
";

/// How many idle read connections are kept.
const READ_POOL: usize = 4;

/// A SQLite database file.
pub(crate) struct Sqlite {
    path: PathBuf,
    writer: Mutex<Connection>,
    readers: Mutex<Vec<Connection>>,
}

fn open_connection(path: &Path) -> Result<Connection> {
    let conn = Connection::open(path)?;
    // Other processes on the same file: wait for their locks rather than fail.
    conn.busy_timeout(Duration::from_secs(30))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    Ok(conn)
}

impl Sqlite {
    /// Opens (creating if needed) the database at `path`.
    pub(crate) fn open(path: &Path) -> Result<Sqlite> {
        let writer = open_connection(path)?;
        writer.execute_batch(SCHEMA)?;
        let has_covers: bool = writer.query_row(
            "SELECT count(*) > 0 FROM pragma_table_info('weft_snapshots') WHERE name = 'covers'",
            [],
            |r| r.get(0),
        )?;
        if !has_covers {
            writer.execute_batch("ALTER TABLE weft_snapshots ADD COLUMN covers BLOB")?;
        }
        Ok(Sqlite {
            path: path.to_owned(),
            writer: Mutex::new(writer),
            readers: Mutex::new(Vec::new()),
        })
    }

    fn writer(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A panic while holding the connection leaves no transaction open
        // (rusqlite rolls back on drop), so the poison carries no meaning.
        self.writer.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` with a read connection from the pool.
    fn read<T>(&self, f: impl FnOnce(&mut Connection) -> Result<T>) -> Result<T> {
        let pooled = self.readers.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut conn = match pooled {
            Some(c) => c,
            None => open_connection(&self.path)?,
        };
        let out = f(&mut conn);
        let mut pool = self.readers.lock().unwrap_or_else(|e| e.into_inner());
        if pool.len() < READ_POOL {
            pool.push(conn);
        }
        out
    }
}

fn head_of(conn: &Connection, id: &str) -> Result<Option<Head>> {
    let row = conn
        .query_row(
            "SELECT key, epoch, snapshot_generation FROM weft_documents WHERE id = ?1",
            params![id],
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, Vec<u8>>(1)?,
                    r.get::<_, i64>(2)?,
                ))
            },
        )
        .optional()?;
    let Some((key, epoch, generation)) = row else {
        return Ok(None);
    };
    let epoch = Epoch::from_bytes(&epoch).ok_or_else(|| Error::BadMetadata {
        document: id.to_owned(),
        column: "epoch",
    })?;
    Ok(Some(Head {
        key,
        epoch,
        snapshot_generation: from_sql_u64(generation),
    }))
}

impl Backend for Sqlite {
    fn create(&self, id: &str, epoch: Epoch) -> Result<()> {
        let conn = self.writer();
        let inserted = conn.execute(
            "INSERT INTO weft_documents (id, epoch) VALUES (?1, ?2) ON CONFLICT (id) DO NOTHING",
            params![id, &epoch.to_bytes()[..]],
        )?;
        if inserted == 0 {
            return Err(Error::AlreadyExists {
                document: id.to_owned(),
            });
        }
        Ok(())
    }

    fn delete(&self, id: &str) -> Result<()> {
        let mut conn = self.writer();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let Some(head) = head_of(&tx, id)? else {
            return Err(Error::UnknownDocument {
                document: id.to_owned(),
            });
        };
        tx.execute("DELETE FROM weft_updates WHERE doc = ?1", params![head.key])?;
        tx.execute(
            "DELETE FROM weft_snapshots WHERE doc = ?1",
            params![head.key],
        )?;
        tx.execute(
            "DELETE FROM weft_documents WHERE key = ?1",
            params![head.key],
        )?;
        tx.commit()?;
        Ok(())
    }

    fn list(&self) -> Result<Vec<DocumentInfo>> {
        self.read(|conn| {
            let mut stmt = conn.prepare("SELECT id, epoch FROM weft_documents ORDER BY id")?;
            let rows = stmt.query_map([], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, Vec<u8>>(1)?))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (id, epoch) = row?;
                let epoch = Epoch::from_bytes(&epoch).ok_or_else(|| Error::BadMetadata {
                    document: id.clone(),
                    column: "epoch",
                })?;
                out.push(DocumentInfo { id, epoch });
            }
            Ok(out)
        })
    }

    fn head(&self, id: &str) -> Result<Option<Head>> {
        self.read(|conn| head_of(conn, id))
    }

    fn read(&self, id: &str, after: u64, with_snapshot: bool) -> Result<Option<StoredDoc>> {
        self.read(|conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Deferred)?;
            let Some(head) = head_of(&tx, id)? else {
                return Ok(None);
            };
            let (snapshot, snapshot_covers) = if head.snapshot_generation > 0 {
                let row = tx
                    .query_row(
                        "SELECT generation, checksum, covers, CASE WHEN ?2 THEN bytes END
                         FROM weft_snapshots WHERE doc = ?1",
                        params![head.key, with_snapshot],
                        |r| {
                            Ok((
                                from_sql_u64(r.get(0)?),
                                from_sql_u64(r.get(1)?),
                                r.get::<_, Option<Vec<u8>>>(2)?,
                                r.get::<_, Option<Vec<u8>>>(3)?,
                            ))
                        },
                    )
                    .optional()?;
                match row {
                    Some((seq, checksum, covers, bytes)) => (
                        bytes.map(|bytes| StoredRow {
                            seq,
                            checksum,
                            bytes,
                        }),
                        covers,
                    ),
                    None => (None, None),
                }
            } else {
                (None, None)
            };
            let mut stmt = tx.prepare_cached(
                "SELECT seq, checksum, bytes FROM weft_updates WHERE doc = ?1 AND seq > ?2 ORDER BY seq",
            )?;
            let rows = stmt.query_map(params![head.key, to_sql_u64(after)], |r| {
                Ok(StoredRow {
                    seq: from_sql_u64(r.get(0)?),
                    checksum: from_sql_u64(r.get(1)?),
                    bytes: r.get(2)?,
                })
            })?;
            let updates = rows.collect::<rusqlite::Result<Vec<_>>>()?;
            drop(stmt);
            tx.commit()?;
            Ok(Some(StoredDoc {
                head,
                snapshot,
                snapshot_covers,
                updates,
            }))
        })
    }

    fn insert_batch(&self, rows: &[NewRow]) -> Result<Vec<Option<u64>>> {
        let mut conn = self.writer();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut out = Vec::with_capacity(rows.len());
        {
            let mut next = tx.prepare_cached(
                "UPDATE weft_documents SET next_seq = next_seq + 1 WHERE key = ?1 RETURNING next_seq - 1",
            )?;
            let mut insert = tx.prepare_cached(
                "INSERT INTO weft_updates (doc, seq, checksum, bytes) VALUES (?1, ?2, ?3, ?4)",
            )?;
            for row in rows {
                let seq: Option<i64> = next.query_row(params![row.key], |r| r.get(0)).optional()?;
                if let Some(seq) = seq {
                    insert.execute(params![row.key, seq, to_sql_u64(row.checksum), row.bytes])?;
                }
                out.push(seq.map(from_sql_u64));
            }
        }
        tx.commit()?;
        Ok(out)
    }

    fn write_compaction(&self, c: &Compacted<'_>) -> Result<Option<u64>> {
        let mut conn = self.writer();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let generation: Option<i64> = tx
            .query_row(
                "SELECT snapshot_generation FROM weft_documents WHERE key = ?1",
                params![c.key],
                |r| r.get(0),
            )
            .optional()?;
        if generation.map(from_sql_u64) != Some(c.read_generation) {
            return Ok(None);
        }
        let new = c.read_generation + 1;
        tx.execute(
            "INSERT OR REPLACE INTO weft_snapshots (doc, generation, checksum, bytes, covers)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                c.key,
                to_sql_u64(new),
                to_sql_u64(crate::backend::checksum(c.bytes)),
                c.bytes,
                c.covers
            ],
        )?;
        tx.execute(
            "UPDATE weft_documents SET snapshot_generation = ?2 WHERE key = ?1",
            params![c.key, to_sql_u64(new)],
        )?;
        {
            let mut delete =
                tx.prepare_cached("DELETE FROM weft_updates WHERE doc = ?1 AND seq = ?2")?;
            for &seq in c.covered {
                delete.execute(params![c.key, to_sql_u64(seq)])?;
            }
        }
        tx.commit()?;
        Ok(Some(new))
    }

    fn with_compaction_lock(
        &self,
        _key: DocKey,
        f: &mut dyn FnMut() -> Result<()>,
    ) -> Result<bool> {
        f()?;
        Ok(true)
    }

    fn check_database(&self) -> Result<Vec<String>> {
        self.read(|conn| {
            let mut stmt = conn.prepare("PRAGMA quick_check")?;
            let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
            let mut problems = Vec::new();
            for row in rows {
                let line = row?;
                if line != "ok" {
                    problems.push(line);
                }
            }
            Ok(problems)
        })
    }

    fn size_on_disk(&self) -> Result<u64> {
        self.read(|conn| {
            let pages: i64 = conn.query_row("PRAGMA page_count", [], |r| r.get(0))?;
            let free: i64 = conn.query_row("PRAGMA freelist_count", [], |r| r.get(0))?;
            let size: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0))?;
            Ok(u64::try_from((pages - free) * size).unwrap_or(0))
        })
    }
}
