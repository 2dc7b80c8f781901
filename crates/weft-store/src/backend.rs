//! What a database must do for the store: the `Backend` trait and the rows
//! that cross it.
//!
//! A backend stores three things per document: a head row (id, key,
//! epoch, the next update sequence number, the snapshot generation), at
//! most one snapshot, and the appended update rows. Keys are never reused,
//! so a write meant for a deleted document can never land in a new
//! document of the same id. Sequence numbers are taken from the head row
//! inside the inserting transaction, so within one document they follow
//! commit order on every backend.
//!
//! Every row carries an xxh3 checksum of its bytes, checked on every read.

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

use weft::{IdSpan, VersionVector};

use crate::error::Result;

/// The database key of one incarnation of a document.
pub(crate) type DocKey = i64;

/// A random id of a document's history: new each time a document is
/// created, so a client that synced with a document that was deleted and
/// created again can tell that its history is not this one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Epoch(pub u128);

impl Epoch {
    /// A fresh random epoch.
    pub(crate) fn random() -> Epoch {
        static CALLS: AtomicU64 = AtomicU64::new(0);
        let mut halves = [0u64; 2];
        for half in &mut halves {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u64(CALLS.fetch_add(1, Ordering::Relaxed));
            h.write_u32(std::process::id());
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            h.write_u128(now);
            *half = h.finish();
        }
        Epoch(u128::from(halves[0]) << 64 | u128::from(halves[1]))
    }

    /// The 16 bytes stored in the database (little-endian).
    pub(crate) fn to_bytes(self) -> [u8; 16] {
        self.0.to_le_bytes()
    }

    /// Reads [`Epoch::to_bytes`]; `None` if not 16 bytes long.
    pub(crate) fn from_bytes(bytes: &[u8]) -> Option<Epoch> {
        Some(Epoch(u128::from_le_bytes(bytes.try_into().ok()?)))
    }
}

impl std::fmt::Display for Epoch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

/// The checksum stored beside every row's bytes.
pub(crate) fn checksum(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

/// The `covers` column of a snapshot: for each peer, the end of the ops
/// the snapshot holds ([`weft::Doc::spans_in`]), as an encoded
/// [`VersionVector`], then its xxh3 checksum (8 bytes, little-endian),
/// so that a damaged column is found rather than trusted. A peer whose
/// version includes it lacks nothing of the snapshot.
pub(crate) fn covers(spans: &[IdSpan]) -> Vec<u8> {
    let mut ends = VersionVector::new();
    for s in spans {
        if s.counters.end > ends.get(s.peer) {
            ends.set(s.peer, s.counters.end);
        }
    }
    let mut out = ends.encode();
    let sum = checksum(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// Reads [`covers`]; `None` if the bytes are damaged.
pub(crate) fn read_covers(bytes: &[u8]) -> Option<VersionVector> {
    let split = bytes.len().checked_sub(8)?;
    let (vector, sum) = bytes.split_at(split);
    if checksum(vector).to_le_bytes() != sum {
        return None;
    }
    VersionVector::decode(vector).ok()
}

/// A checksum or sequence number as the databases' signed 64-bit
/// integers store it, bit for bit.
pub(crate) fn to_sql_u64(v: u64) -> i64 {
    v as i64
}

/// What [`to_sql_u64`] stored.
pub(crate) fn from_sql_u64(v: i64) -> u64 {
    v as u64
}

/// A document's head row.
#[derive(Debug, Clone)]
pub(crate) struct Head {
    pub key: DocKey,
    pub epoch: Epoch,
    /// 0 while the document has no snapshot.
    pub snapshot_generation: u64,
}

/// A row as read, before its checksum is checked.
#[derive(Debug, Clone)]
pub(crate) struct StoredRow {
    /// The update's sequence number, or the snapshot's generation.
    pub seq: u64,
    pub checksum: u64,
    pub bytes: Vec<u8>,
}

/// Everything stored for one document, read in one transaction.
#[derive(Debug, Clone)]
pub(crate) struct StoredDoc {
    pub head: Head,
    pub snapshot: Option<StoredRow>,
    /// The snapshot's [`covers`] column (read even when its bytes are
    /// not); `None` without a snapshot, or for one written before the
    /// column existed.
    pub snapshot_covers: Option<Vec<u8>>,
    /// In sequence order.
    pub updates: Vec<StoredRow>,
}

/// An update to insert, for the group commit.
#[derive(Debug, Clone)]
pub(crate) struct NewRow {
    pub key: DocKey,
    pub checksum: u64,
    pub bytes: Vec<u8>,
}

/// What a compaction writes.
#[derive(Debug)]
pub(crate) struct Compacted<'a> {
    pub key: DocKey,
    /// The snapshot generation the compaction read; the write is refused
    /// if another compaction replaced it since.
    pub read_generation: u64,
    pub bytes: &'a [u8],
    /// What the snapshot holds ([`covers`]).
    pub covers: &'a [u8],
    /// The update rows the compaction read (and imported): exactly these
    /// are deleted.
    pub covered: &'a [u64],
}

/// A summary of one document for [`crate::Store::list`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentInfo {
    /// The document's id.
    pub id: String,
    /// The random id of its history (see [`Epoch`]).
    pub epoch: Epoch,
}

/// A database that holds documents. Implementations are blocking and
/// used from several threads; each call is one transaction.
pub(crate) trait Backend: Send + Sync + 'static {
    /// Creates the head row; `AlreadyExists` if the id is taken.
    fn create(&self, id: &str, epoch: Epoch) -> Result<()>;
    /// Deletes the head row, the snapshot and the updates of `id`.
    fn delete(&self, id: &str) -> Result<()>;
    /// Every document, by id.
    fn list(&self) -> Result<Vec<DocumentInfo>>;
    /// The head row of `id`, if any.
    fn head(&self, id: &str) -> Result<Option<Head>>;
    /// The head, the snapshot and the update rows with `seq > after`, in
    /// one read transaction; `None` if there is no such document.
    /// `with_snapshot: false` skips the snapshot's bytes.
    fn read(&self, id: &str, after: u64, with_snapshot: bool) -> Result<Option<StoredDoc>>;
    /// Inserts the rows in one transaction (one fsync) and returns, per
    /// row, its sequence number, or `None` if its document is gone. An
    /// `Err` means nothing was stored.
    fn insert_batch(&self, rows: &[NewRow]) -> Result<Vec<Option<u64>>>;
    /// Writes a compaction's snapshot and deletes the rows it covers in
    /// one transaction. Returns the new generation, or `None` (nothing
    /// written) if the document is gone or another compaction wrote a
    /// snapshot since this one read.
    fn write_compaction(&self, compacted: &Compacted<'_>) -> Result<Option<u64>>;
    /// Runs `f` holding this document's compaction lock (a PostgreSQL
    /// advisory lock, so that one server compacts a document at a time);
    /// `false` without running it if someone else holds the lock.
    /// Without such a lock (SQLite: one compactor per store, and the
    /// generation check of `write_compaction` across processes) it just
    /// runs `f`.
    fn with_compaction_lock(&self, key: DocKey, f: &mut dyn FnMut() -> Result<()>) -> Result<bool>;
    /// The database's own consistency check (SQLite `PRAGMA
    /// quick_check`); the problems it names.
    fn check_database(&self) -> Result<Vec<String>>;
    /// Bytes the database uses on disk (pages in use).
    fn size_on_disk(&self) -> Result<u64>;
}
