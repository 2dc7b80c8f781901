//! [`Store`]: documents by id on a database, with appends that return once
//! durable, loading through a bounded cache, and background compaction.
//!
//! Invariants:
//! - a row is stored only after its bytes imported into the document (an
//!   import error stores nothing);
//! - an append returns `Ok` only after the transaction holding its row
//!   committed; rows of one document commit in the order they imported;
//! - a cached document holds every row up to `seen` and, beyond it, only
//!   rows that are stored or in flight; a failed commit marks the entry
//!   stale, so it is loaded again from the database;
//! - reads see only what is durable: a read waits until no append of its
//!   document is in flight (appends that arrive meanwhile wait for the
//!   read), so it never shows an edit whose commit may still fail;
//! - compaction builds its snapshot only from rows it read in one read
//!   transaction, and deletes exactly those rows in the transaction that
//!   writes the snapshot, provided no other compaction wrote one since.

use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, SyncSender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use weft::{Doc, ExportMode, VersionVector};

use crate::backend::{
    checksum, covers, read_covers, Backend, Compacted, DocumentInfo, Epoch, NewRow, StoredDoc,
    StoredRow,
};
use crate::cache::{Cache, Entry, Loaded};
use crate::commit::GroupCommit;
use crate::error::{Damage, Error, Result, RowId};
use crate::options::StoreOptions;
use crate::sqlite::Sqlite;

/// The longest document id, in bytes.
pub const MAX_ID_LEN: usize = 1024;

/// Compactions that may wait for the compactor thread.
const COMPACTION_QUEUE: usize = 1024;

/// What [`Store::append`] stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    /// The sequence number of the stored row; `None` when the update
    /// brought nothing new and every earlier append to the document had
    /// answered (so nothing was stored, and all it holds is durable).
    pub seq: Option<u64>,
    /// The document's version once the update imported (ops held back as
    /// pending are not in it).
    pub version: VersionVector,
    /// Whether the document now holds ops back for missing dependencies.
    pub pending: bool,
}

/// What one compaction did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compaction {
    /// The generation of the snapshot written.
    pub generation: u64,
    /// Update rows folded into the snapshot and deleted.
    pub rows: usize,
    /// Their bytes.
    pub row_bytes: u64,
    /// The bytes of the snapshot before and after.
    pub old_snapshot_bytes: u64,
    /// The bytes of the new snapshot.
    pub snapshot_bytes: u64,
}

/// What [`Store::check`] found.
#[derive(Debug, Clone)]
pub struct CheckReport {
    /// Documents checked.
    pub documents: usize,
    /// Update rows checked.
    pub rows: usize,
    /// Snapshots checked.
    pub snapshots: usize,
    /// Every problem found: damaged rows and documents that do not load
    /// (one error each, naming the document and the row).
    pub problems: Vec<Error>,
    /// What the database's own check reported (SQLite `quick_check`),
    /// line by line; empty when it is fine.
    pub database: Vec<String>,
}

impl CheckReport {
    /// Whether nothing is wrong.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty() && self.database.is_empty()
    }
}

/// Counters of a store since it was opened.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Rows stored by appends.
    pub rows_appended: u64,
    /// Transactions the group commit ran (each one fsync).
    pub commits: u64,
    /// Compactions that wrote a snapshot.
    pub compactions: u64,
    /// Compactions that failed (the next append that calls for one
    /// tries again).
    pub failed_compactions: u64,
    /// Documents loaded from the database (cache misses and reloads).
    pub loads: u64,
    /// Documents in the cache now.
    pub cached_documents: usize,
}

#[derive(Default)]
struct Counters {
    rows_appended: AtomicU64,
    compactions: AtomicU64,
    failed_compactions: AtomicU64,
    loads: AtomicU64,
}

/// What the compactor thread shares with the store.
struct Shared {
    backend: Arc<dyn Backend>,
    writer: GroupCommit,
    cache: Mutex<Cache>,
    options: StoreOptions,
    counters: Counters,
    last_compaction_error: Mutex<Option<Error>>,
    /// Background compactions queued or running.
    queued_compactions: AtomicUsize,
}

/// Documents, each under an id, kept on a database: every
/// [`Store::append`] that returns is durable.
///
/// Share one `Store` between threads (`&Store` or an `Arc`): appends from
/// many threads share transactions (group commit), so they cost about
/// one fsync per batch instead of one each.
///
/// # Examples
///
/// ```no_run
/// use weft::{Doc, ExportMode, VersionVector};
/// use weft_store::{Store, StoreOptions};
///
/// let store = Store::open_sqlite("notes.db", StoreOptions::new())?;
/// store.create("readme")?;
///
/// let mut doc = Doc::new();
/// doc.text("body").insert(0, "Hello")?;
/// store.append("readme", &doc.export(ExportMode::Updates { from: &VersionVector::new() })?)?;
/// // Durable now, through kill -9 and power loss.
///
/// let loaded = store.load("readme")?;
/// assert_eq!(loaded.get_text("body").map(|t| t.to_string()).as_deref(), Some("Hello"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Store {
    shared: Arc<Shared>,
    compactor: Option<(SyncSender<String>, JoinHandle<()>)>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("stats", &self.stats())
            .finish()
    }
}

fn check_id(id: &str) -> Result<()> {
    if id.is_empty() || id.len() > MAX_ID_LEN {
        return Err(Error::InvalidId { len: id.len() });
    }
    Ok(())
}

/// Checks a row's bytes against its stored checksum.
fn verify_row(id: &str, row: RowId, stored: &StoredRow) -> Result<()> {
    let actual = checksum(&stored.bytes);
    if actual != stored.checksum {
        return Err(Error::Corrupt {
            document: id.to_owned(),
            row,
            damage: Damage::Checksum {
                expected: stored.checksum,
                actual,
            },
        });
    }
    Ok(())
}

/// Checks a row's checksum and imports it into `doc`.
fn import_row(doc: &mut Doc, id: &str, row: RowId, stored: &StoredRow) -> Result<()> {
    verify_row(id, row, stored)?;
    doc.import(&stored.bytes).map_err(|e| Error::Corrupt {
        document: id.to_owned(),
        row,
        damage: Damage::Import(e),
    })?;
    Ok(())
}

/// Builds the document a read returned. O(its snapshot + rows); the
/// snapshot's history is decoded lazily (see [`Doc::load`]).
fn build(id: &str, stored: &StoredDoc) -> Result<Loaded> {
    let mut doc = Doc::new();
    let mut snapshot_len = 0;
    if let Some(s) = &stored.snapshot {
        import_row(&mut doc, id, RowId::Snapshot { generation: s.seq }, s)?;
        snapshot_len = s.bytes.len() as u64;
    }
    let mut tail_bytes = 0;
    let mut seen = 0;
    for row in &stored.updates {
        import_row(&mut doc, id, RowId::Update { seq: row.seq }, row)?;
        tail_bytes += row.bytes.len() as u64;
        seen = row.seq;
    }
    Ok(Loaded {
        key: stored.head.key,
        doc,
        generation: stored.head.snapshot_generation,
        seen,
        snapshot_len,
        tail_bytes,
        in_flight: 0,
        readers_waiting: 0,
        compaction_queued: false,
    })
}

/// What a use of a cached document needs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Access {
    /// An append: imports into the document as it is (in-flight appends
    /// included), once no read waits.
    Append,
    /// A read: rows other processes stored since are imported first, and
    /// it waits until no append is in flight, so it sees only what is
    /// durable.
    Read,
}

impl Shared {
    /// [`Backend::read`] of a document that must exist.
    fn read_stored(&self, id: &str, after: u64, with_snapshot: bool) -> Result<StoredDoc> {
        self.backend
            .read(id, after, with_snapshot)
            .map_err(|e| e.for_document(id))?
            .ok_or_else(|| Error::UnknownDocument {
                document: id.to_owned(),
            })
    }

    fn load_from_db(&self, id: &str) -> Result<Loaded> {
        self.counters.loads.fetch_add(1, Ordering::Relaxed);
        build(id, &self.read_stored(id, 0, true)?)
    }

    /// Brings a cached document up to date with rows other processes (or
    /// earlier appends) stored: new rows are imported; a new snapshot or
    /// a new incarnation of the id means loading again.
    fn refresh(&self, id: &str, loaded: &mut Loaded) -> Result<()> {
        let stored = self.read_stored(id, loaded.seen, false)?;
        if stored.head.key != loaded.key || stored.head.snapshot_generation != loaded.generation {
            let fresh = self.load_from_db(id)?;
            *loaded = Loaded {
                in_flight: loaded.in_flight,
                readers_waiting: loaded.readers_waiting,
                compaction_queued: loaded.compaction_queued,
                ..fresh
            };
            return Ok(());
        }
        for row in &stored.updates {
            import_row(&mut loaded.doc, id, RowId::Update { seq: row.seq }, row)?;
            loaded.seen = row.seq;
        }
        Ok(())
    }

    /// Runs `f` on the loaded document `id` (loading it if needed) as
    /// `access` needs it; returns its result and the cache entry.
    fn with_loaded<T>(
        &self,
        id: &str,
        access: Access,
        f: impl FnOnce(&mut Loaded) -> Result<T>,
    ) -> Result<(T, Arc<Entry>)> {
        check_id(id)?;
        loop {
            let entry = self.cache.lock().unwrap_or_else(|e| e.into_inner()).get(id);
            let mut state = entry.state.lock().unwrap_or_else(|e| e.into_inner());
            state = settle(&entry, state, access);
            if entry.stale.load(Ordering::Acquire) {
                drop(state);
                self.cache
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(id, &entry);
                continue;
            }
            let fresh = state.is_none();
            if fresh {
                match self.load_from_db(id) {
                    Ok(loaded) => *state = Some(loaded),
                    Err(e) => {
                        drop(state);
                        self.cache
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .remove(id, &entry);
                        return Err(e);
                    }
                }
            }
            let Some(loaded) = state.as_mut() else {
                unreachable!("the entry was loaded just above");
            };
            if access == Access::Read && !fresh {
                if let Err(e) = self.refresh(id, loaded) {
                    entry.stale.store(true, Ordering::Release);
                    return Err(e);
                }
            }
            let out = f(loaded);
            let size = loaded.snapshot_len + loaded.tail_bytes;
            drop(state);
            self.cache
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .set_size(id, &entry, size);
            return out.map(|v| (v, entry));
        }
    }

    /// Compacts `id` now: `None` if there was nothing to compact or
    /// another compaction got there first.
    fn compact(&self, id: &str) -> Result<Option<Compaction>> {
        check_id(id)?;
        let head = self
            .backend
            .head(id)
            .map_err(|e| e.for_document(id))?
            .ok_or_else(|| Error::UnknownDocument {
                document: id.to_owned(),
            })?;
        let mut done = None;
        let mut last_covered = 0;
        let pause = self.options.compaction_pause;
        self.backend
            .with_compaction_lock(head.key, &mut || {
                let Some(stored) = self.backend.read(id, 0, true)? else {
                    return Ok(());
                };
                if stored.head.key != head.key || stored.updates.is_empty() {
                    return Ok(());
                }
                let loaded = build(id, &stored)?;
                pause_for(pause);
                let bytes =
                    loaded
                        .doc
                        .export(ExportMode::Snapshot)
                        .map_err(|e| Error::Corrupt {
                            document: id.to_owned(),
                            row: RowId::Snapshot {
                                generation: stored.head.snapshot_generation,
                            },
                            damage: Damage::Import(e),
                        })?;
                let held = Doc::spans_in(&bytes).map_err(|e| Error::Corrupt {
                    document: id.to_owned(),
                    row: RowId::Snapshot {
                        generation: stored.head.snapshot_generation,
                    },
                    damage: Damage::Import(e),
                })?;
                pause_for(pause);
                let covered: Vec<u64> = stored.updates.iter().map(|r| r.seq).collect();
                let written = self.backend.write_compaction(&Compacted {
                    key: stored.head.key,
                    read_generation: stored.head.snapshot_generation,
                    bytes: &bytes,
                    covers: &covers(&held),
                    covered: &covered,
                })?;
                if let Some(generation) = written {
                    last_covered = covered.iter().copied().max().unwrap_or(0);
                    done = Some(Compaction {
                        generation,
                        rows: covered.len(),
                        row_bytes: stored.updates.iter().map(|r| r.bytes.len() as u64).sum(),
                        old_snapshot_bytes: stored
                            .snapshot
                            .as_ref()
                            .map_or(0, |s| s.bytes.len() as u64),
                        snapshot_bytes: bytes.len() as u64,
                    });
                }
                Ok(())
            })
            .map_err(|e| e.for_document(id))?;
        if let Some(c) = &done {
            self.counters.compactions.fetch_add(1, Ordering::Relaxed);
            self.after_compaction(id, head.key, last_covered, c);
        }
        Ok(done)
    }

    /// Tells the cached document about its new snapshot, so that it need
    /// not load again, if it holds every row the snapshot covers (rows up
    /// to `last_covered`); otherwise its next refresh loads it again.
    fn after_compaction(&self, id: &str, key: i64, last_covered: u64, c: &Compaction) {
        let entry = {
            let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            cache.peek(id)
        };
        let Some(entry) = entry else { return };
        let mut state = entry.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(loaded) = state.as_mut() {
            if loaded.key == key
                && loaded.generation + 1 == c.generation
                && loaded.seen >= last_covered
            {
                loaded.generation = c.generation;
                loaded.snapshot_len = c.snapshot_bytes;
                loaded.tail_bytes = loaded.tail_bytes.saturating_sub(c.row_bytes);
            }
        }
    }
}

/// Waits on `entry` until `access` may use its document: a read until no
/// append is in flight, an append until no read waits. Returns early if
/// the entry turns stale (the caller loads again).
fn settle<'a>(
    entry: &'a Entry,
    mut state: MutexGuard<'a, Option<Loaded>>,
    access: Access,
) -> MutexGuard<'a, Option<Loaded>> {
    let waits = |state: &Option<Loaded>| {
        !entry.stale.load(Ordering::Acquire)
            && state.as_ref().is_some_and(|l| match access {
                Access::Read => l.in_flight > 0,
                Access::Append => l.readers_waiting > 0,
            })
    };
    if !waits(&state) {
        return state;
    }
    if access == Access::Read {
        if let Some(l) = state.as_mut() {
            l.readers_waiting += 1;
        }
    }
    while waits(&state) {
        state = entry.settled.wait(state).unwrap_or_else(|e| e.into_inner());
    }
    if access == Access::Read {
        if let Some(l) = state.as_mut() {
            l.readers_waiting -= 1;
            if l.readers_waiting == 0 {
                entry.settled.notify_all();
            }
        }
    }
    state
}

/// The cached document `id` of `entry` is not the one stored under `id`
/// any more (deleted, perhaps created again): marks the entry stale, then
/// `Ok(None)` (try again, on what is stored now) if a document `exists`
/// under `id`, else [`Error::UnknownDocument`].
fn replaced(id: &str, entry: &Entry, exists: bool) -> Result<Option<Appended>> {
    entry.stale.store(true, Ordering::Release);
    if exists {
        Ok(None)
    } else {
        Err(Error::UnknownDocument {
            document: id.to_owned(),
        })
    }
}

fn pause_for(pause: Duration) {
    if !pause.is_zero() {
        std::thread::sleep(pause);
    }
}

impl Store {
    /// Opens the SQLite database at `path` (created if missing), in WAL
    /// mode with `synchronous=FULL`.
    ///
    /// # Errors
    ///
    /// [`Error::Database`] if the file cannot be opened or is not a
    /// SQLite database; [`Error::ThreadSpawn`] if the compactor thread cannot
    /// start.
    pub fn open_sqlite(path: impl AsRef<Path>, options: StoreOptions) -> Result<Store> {
        let backend = Sqlite::open(path.as_ref())?;
        Store::with_backend(Arc::new(backend), options)
    }

    /// Connects to a PostgreSQL database (`config` as for
    /// `postgres::Config`, e.g. `"host=/tmp port=5432 user=weft
    /// dbname=weft"`) and creates the store's tables if missing.
    ///
    /// # Errors
    ///
    /// [`Error::Database`] if the server cannot be reached or refuses.
    #[cfg(feature = "postgres")]
    pub fn connect_postgres(config: &str, options: StoreOptions) -> Result<Store> {
        let backend = crate::postgres::Postgres::connect(config)?;
        Store::with_backend(Arc::new(backend), options)
    }

    fn with_backend(backend: Arc<dyn Backend>, options: StoreOptions) -> Result<Store> {
        let writer = GroupCommit::new(
            Arc::clone(&backend),
            options.max_batch,
            options.commit_pause,
        );
        let shared = Arc::new(Shared {
            backend,
            writer,
            cache: Mutex::new(Cache::new(options.cache_bytes)),
            options,
            counters: Counters::default(),
            last_compaction_error: Mutex::new(None),
            queued_compactions: AtomicUsize::new(0),
        });
        let (tx, rx) = mpsc::sync_channel::<String>(COMPACTION_QUEUE);
        let worker = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("weft-store-compact".into())
            .spawn(move || {
                while let Ok(id) = rx.recv() {
                    let outcome = worker.compact(&id);
                    if let Err(e) = &outcome {
                        worker
                            .counters
                            .failed_compactions
                            .fetch_add(1, Ordering::Relaxed);
                        *worker
                            .last_compaction_error
                            .lock()
                            .unwrap_or_else(|e| e.into_inner()) = Some(e.clone());
                    }
                    worker.compaction_finished(&id);
                }
            })
            .map_err(|e| Error::ThreadSpawn(e.to_string()))?;
        Ok(Store {
            shared,
            compactor: Some((tx, thread)),
        })
    }

    /// Creates an empty document under `id` and returns its new epoch.
    ///
    /// # Errors
    ///
    /// [`Error::AlreadyExists`], [`Error::InvalidId`], database errors.
    pub fn create(&self, id: &str) -> Result<Epoch> {
        check_id(id)?;
        let epoch = Epoch::random();
        self.shared
            .backend
            .create(id, epoch)
            .map_err(|e| e.for_document(id))?;
        Ok(epoch)
    }

    /// Deletes the document `id` and everything stored for it. Appends to
    /// it still in flight fail with [`Error::UnknownDocument`]; creating
    /// it again gives a new epoch.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownDocument`], [`Error::InvalidId`], database errors.
    pub fn delete(&self, id: &str) -> Result<()> {
        check_id(id)?;
        self.shared
            .backend
            .delete(id)
            .map_err(|e| e.for_document(id))?;
        let entry = self
            .shared
            .cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .forget(id);
        if let Some(entry) = entry {
            entry.stale.store(true, Ordering::Release);
        }
        Ok(())
    }

    /// Every document, by id. O(documents).
    ///
    /// # Errors
    ///
    /// Database errors.
    pub fn list(&self) -> Result<Vec<DocumentInfo>> {
        self.shared.backend.list()
    }

    /// The epoch of document `id` (see [`Epoch`]).
    ///
    /// # Errors
    ///
    /// [`Error::UnknownDocument`], [`Error::InvalidId`], database errors.
    pub fn epoch(&self, id: &str) -> Result<Epoch> {
        check_id(id)?;
        let head = self
            .shared
            .backend
            .head(id)
            .map_err(|e| e.for_document(id))?;
        head.map(|h| h.epoch).ok_or_else(|| Error::UnknownDocument {
            document: id.to_owned(),
        })
    }

    /// Imports `update` (bytes from [`Doc::export`]) into document `id`
    /// and stores it; returns once the row is durable. Updates whose
    /// dependencies are missing are stored too and stay pending, as in a
    /// `Doc`. Appends to one document from several threads are stored in
    /// the order they imported.
    ///
    /// The update goes to the document stored under `id` when it
    /// commits: if another store deleted the cached one and created it
    /// again, this loads the new one and imports into it.
    ///
    /// Cost: the import, plus a share of one commit (fsync) with the other
    /// appends queued meanwhile. Loads the document first if it is not
    /// cached. An update that brings nothing new costs one query (that
    /// the cached document is still the stored one) and stores nothing.
    ///
    /// # Errors
    ///
    /// - [`Error::Import`] if the bytes do not import: nothing is stored;
    /// - [`Error::UnknownDocument`], [`Error::InvalidId`];
    /// - [`Error::StorageFull`], [`Error::Database`]: the commit failed,
    ///   nothing of this append is stored (the document is loaded again
    ///   from the database on its next use);
    /// - [`Error::Corrupt`] if the document had to be loaded and does not.
    pub fn append(&self, id: &str, update: &[u8]) -> Result<Appended> {
        let _inside = self.shared.writer.enter();
        // Twice at most: when the cached document turns out not to be the
        // one under `id` any more (another store deleted it and created it
        // again), the second try loads and imports into the current one.
        match self.append_once(id, update)? {
            Some(appended) => Ok(appended),
            None => self
                .append_once(id, update)?
                .ok_or_else(|| Error::UnknownDocument {
                    document: id.to_owned(),
                }),
        }
    }

    /// One try of [`Store::append`]: `None` if the cached document was
    /// not the one stored under `id` (its entry is then stale, so the
    /// next try loads the current one).
    fn append_once(&self, id: &str, update: &[u8]) -> Result<Option<Appended>> {
        let shared = &*self.shared;
        let ((ticket, version, pending, key), entry) =
            shared.with_loaded(id, Access::Append, |loaded| {
                let status = loaded.doc.import(update).map_err(|e| Error::Import {
                    document: id.to_owned(),
                    source: e,
                })?;
                let version = loaded.doc.version();
                let pending = !loaded.doc.pending_spans().is_empty();
                if status.applied.is_empty() && status.pending.is_empty() && loaded.in_flight == 0 {
                    return Ok((None, version, pending, loaded.key));
                }
                let ticket = shared.writer.submit(NewRow {
                    key: loaded.key,
                    checksum: checksum(update),
                    bytes: update.to_vec(),
                });
                loaded.in_flight += 1;
                loaded.tail_bytes += update.len() as u64;
                Ok((Some(ticket), version, pending, loaded.key))
            })?;
        let Some(ticket) = ticket else {
            // Nothing new for the cached document and nothing of it in
            // flight: all it holds is durable, if it is still the
            // document stored under `id` (one query to make sure).
            let head = shared.backend.head(id).map_err(|e| e.for_document(id))?;
            return match head {
                Some(h) if h.key == key => Ok(Some(Appended {
                    seq: None,
                    version,
                    pending,
                })),
                other => replaced(id, &entry, other.is_some()),
            };
        };
        let outcome = shared.writer.wait(ticket);
        let mut state = entry.state.lock().unwrap_or_else(|e| e.into_inner());
        let Some(loaded) = state.as_mut() else {
            unreachable!("an entry stays loaded once loaded");
        };
        loaded.in_flight -= 1;
        if loaded.in_flight == 0 {
            // Waiting reads go on once this guard drops; a failed commit
            // below marks the entry stale first, so they load again.
            entry.settled.notify_all();
        }
        let seq = match outcome {
            Ok(Some(seq)) => seq,
            Ok(None) => {
                // The cached document was deleted (by this store or
                // another): the next use loads what is under `id` now.
                entry.stale.store(true, Ordering::Release);
                drop(state);
                let head = shared.backend.head(id).map_err(|e| e.for_document(id))?;
                return replaced(id, &entry, head.is_some());
            }
            Err(e) => {
                // The cached document holds an update the database lacks.
                entry.stale.store(true, Ordering::Release);
                return Err(e.for_document(id));
            }
        };
        shared
            .counters
            .rows_appended
            .fetch_add(1, Ordering::Relaxed);
        if seq == loaded.seen + 1 {
            loaded.seen = seq;
        }
        if !loaded.compaction_queued
            && shared
                .options
                .wants_compaction(loaded.snapshot_len, loaded.tail_bytes)
        {
            if let Some((queue, _)) = &self.compactor {
                shared.queued_compactions.fetch_add(1, Ordering::AcqRel);
                loaded.compaction_queued = queue.try_send(id.to_owned()).is_ok();
                if !loaded.compaction_queued {
                    shared.queued_compactions.fetch_sub(1, Ordering::AcqRel);
                }
            }
        }
        if entry.stale.load(Ordering::Acquire) {
            // An append imported before this one failed to commit: this
            // row is stored, but the version and pending state it saw
            // included the failed update. Report the stored document's.
            drop(state);
            let ((version, pending), _) = shared.with_loaded(id, Access::Read, |l| {
                Ok((l.doc.version(), !l.doc.pending_spans().is_empty()))
            })?;
            return Ok(Some(Appended {
                seq: Some(seq),
                version,
                pending,
            }));
        }
        Ok(Some(Appended {
            seq: Some(seq),
            version,
            pending,
        }))
    }

    /// Appends what `doc` has and the stored document lacks (nothing if
    /// it lacks nothing): the way to save a live `Doc`.
    ///
    /// # Errors
    ///
    /// As [`Store::append`].
    pub fn save(&self, id: &str, doc: &Doc) -> Result<Appended> {
        let (stored, _) = self
            .shared
            .with_loaded(id, Access::Read, |l| Ok(l.doc.version()))?;
        let update = doc
            .export(ExportMode::Updates { from: &stored })
            .map_err(|e| Error::Import {
                document: id.to_owned(),
                source: e,
            })?;
        self.append(id, &update)
    }

    /// The document `id`: its latest snapshot plus the rows after it, with
    /// pending updates still pending, as a fork (a new peer id, so edits
    /// to it never clash with another copy's). O(that document), never
    /// O(the store): a cached document costs one query for rows stored
    /// since it was cached, plus the copy.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownDocument`], [`Error::InvalidId`],
    /// [`Error::Corrupt`] naming the damaged row, database errors.
    pub fn load(&self, id: &str) -> Result<Doc> {
        self.read(id, Doc::fork)
    }

    /// Runs `f` on the stored document `id` without copying it (see
    /// [`Store::load`]). The document stays locked while `f` runs.
    ///
    /// # Errors
    ///
    /// As [`Store::load`].
    pub fn read<T>(&self, id: &str, f: impl FnOnce(&Doc) -> T) -> Result<T> {
        self.shared
            .with_loaded(id, Access::Read, |l| Ok(f(&l.doc)))
            .map(|(v, _)| v)
    }

    /// The updates that bring a peer at version `from` up to the stored
    /// document, to import in order (none if it lacks nothing): for sync.
    /// Only durable edits are given.
    ///
    /// A cached document exports one update of exactly what `from`
    /// lacks. Otherwise the snapshot is not read if `from` holds every op
    /// of it (a record of those ops is kept beside it): the answer is the
    /// update rows stored since, less those whose every op `from` holds
    /// ([`Doc::spans_in`]); rows may repeat ops `from` has, which imports
    /// skip. Cost: the rows since the last compaction (bounded by the
    /// compaction ratio), or loading the document when `from` lacks part
    /// of its snapshot.
    ///
    /// # Errors
    ///
    /// As [`Store::load`]; [`Damage::Covers`] for a damaged record of the
    /// snapshot's ops.
    pub fn updates_since(&self, id: &str, from: &VersionVector) -> Result<Vec<Vec<u8>>> {
        check_id(id)?;
        let shared = &*self.shared;
        let cached = {
            let entry = shared
                .cache
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .peek(id);
            entry.is_some_and(|e| e.state.lock().unwrap_or_else(|e| e.into_inner()).is_some())
        };
        if !cached {
            if let Some(rows) = self.rows_since(id, from)? {
                return Ok(rows);
            }
        }
        let (bytes, _) = shared.with_loaded(id, Access::Read, |l| {
            if from.includes_all(&l.doc.version()) && l.doc.pending_spans().is_empty() {
                return Ok(Vec::new());
            }
            l.doc
                .export(ExportMode::Updates { from })
                .map_err(|e| Error::Corrupt {
                    document: id.to_owned(),
                    row: RowId::Snapshot {
                        generation: l.generation,
                    },
                    damage: Damage::Import(e),
                })
        })?;
        Ok(if bytes.is_empty() {
            Vec::new()
        } else {
            vec![bytes]
        })
    }

    /// [`Store::updates_since`] from the stored rows alone: `None` if
    /// `from` lacks some op of the snapshot (the caller loads it).
    fn rows_since(&self, id: &str, from: &VersionVector) -> Result<Option<Vec<Vec<u8>>>> {
        let stored = self.shared.read_stored(id, 0, false)?;
        if stored.head.snapshot_generation > 0 {
            let generation = stored.head.snapshot_generation;
            let Some(column) = &stored.snapshot_covers else {
                return Ok(None); // the load names the missing snapshot
            };
            let held = read_covers(column).ok_or_else(|| Error::Corrupt {
                document: id.to_owned(),
                row: RowId::Snapshot { generation },
                damage: Damage::Covers,
            })?;
            if !from.includes_all(&held) {
                return Ok(None);
            }
        }
        let mut out = Vec::new();
        for row in stored.updates {
            let at = RowId::Update { seq: row.seq };
            verify_row(id, at, &row)?;
            let spans = Doc::spans_in(&row.bytes).map_err(|e| Error::Corrupt {
                document: id.to_owned(),
                row: at,
                damage: Damage::Import(e),
            })?;
            if spans.iter().any(|s| from.get(s.peer) < s.counters.end) {
                out.push(row.bytes);
            }
        }
        Ok(Some(out))
    }

    /// Compacts document `id` now, whatever its size: writes a new
    /// snapshot and deletes the rows it covers, in one transaction.
    /// `None` if there was nothing to compact (or a concurrent compaction
    /// did it). O(the document).
    ///
    /// # Errors
    ///
    /// [`Error::UnknownDocument`], [`Error::InvalidId`],
    /// [`Error::Corrupt`] (nothing is deleted then), database errors.
    pub fn compact(&self, id: &str) -> Result<Option<Compaction>> {
        self.shared.compact(id)
    }

    /// Waits (at most `timeout`) until no background compaction is queued
    /// or running; whether that happened.
    pub fn wait_for_compactions(&self, timeout: Duration) -> bool {
        let start = Instant::now();
        loop {
            if self.shared.compactions_queued() == 0 {
                return true;
            }
            if start.elapsed() >= timeout {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The error of the last background compaction that failed, if any.
    pub fn last_compaction_error(&self) -> Option<Error> {
        self.shared
            .last_compaction_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Reads every document, checks every row's checksum and that it
    /// imports, loads each document fully, and runs the database's own
    /// check. O(the store). Damage is reported, not returned as `Err`.
    ///
    /// # Errors
    ///
    /// Database errors that stop the check itself.
    pub fn check(&self) -> Result<CheckReport> {
        let backend = &self.shared.backend;
        let mut report = CheckReport {
            documents: 0,
            rows: 0,
            snapshots: 0,
            problems: Vec::new(),
            database: backend.check_database()?,
        };
        for info in backend.list()? {
            let Some(stored) = backend.read(&info.id, 0, true)? else {
                continue; // deleted meanwhile
            };
            report.documents += 1;
            report.rows += stored.updates.len();
            report.snapshots += usize::from(stored.snapshot.is_some());
            let mut problems = Vec::new();
            for (row, stored_row) in stored
                .snapshot
                .iter()
                .map(|s| (RowId::Snapshot { generation: s.seq }, s))
                .chain(
                    stored
                        .updates
                        .iter()
                        .map(|r| (RowId::Update { seq: r.seq }, r)),
                )
            {
                if let Err(e) = verify_row(&info.id, row, stored_row) {
                    problems.push(e);
                }
            }
            if let (Some(snapshot), Some(column)) = (&stored.snapshot, &stored.snapshot_covers) {
                // The record must say what the snapshot holds.
                let held = Doc::spans_in(&snapshot.bytes).map(|s| covers(&s));
                let recorded = read_covers(column);
                if recorded.is_none() || held.is_ok_and(|h| read_covers(&h) != recorded) {
                    problems.push(Error::Corrupt {
                        document: info.id.clone(),
                        row: RowId::Snapshot {
                            generation: snapshot.seq,
                        },
                        damage: Damage::Covers,
                    });
                }
            }
            if problems.is_empty() {
                match build(&info.id, &stored) {
                    Ok(mut loaded) => {
                        if let Err(e) = loaded.doc.load() {
                            problems.push(Error::Corrupt {
                                document: info.id.clone(),
                                row: RowId::Snapshot {
                                    generation: stored.head.snapshot_generation,
                                },
                                damage: Damage::Import(e),
                            });
                        }
                    }
                    Err(e) => problems.push(e),
                }
            }
            report.problems.extend(problems);
        }
        Ok(report)
    }

    /// Counters since the store was opened.
    pub fn stats(&self) -> Stats {
        let c = &self.shared.counters;
        Stats {
            rows_appended: c.rows_appended.load(Ordering::Relaxed),
            commits: self.shared.writer.commits(),
            compactions: c.compactions.load(Ordering::Relaxed),
            failed_compactions: c.failed_compactions.load(Ordering::Relaxed),
            loads: c.loads.load(Ordering::Relaxed),
            cached_documents: self
                .shared
                .cache
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .len(),
        }
    }

    /// The bytes the database uses on disk (SQLite: pages in use;
    /// PostgreSQL: the store's tables with their indexes and TOAST).
    ///
    /// # Errors
    ///
    /// Database errors.
    pub fn size_on_disk(&self) -> Result<u64> {
        self.shared.backend.size_on_disk()
    }

    /// Forgets every cached document, so the next use of each loads it
    /// from the database (e.g. to measure a cold load).
    pub fn clear_cache(&self) {
        let mut cache = self.shared.cache.lock().unwrap_or_else(|e| e.into_inner());
        *cache = Cache::new(self.shared.options.cache_bytes);
    }
}

impl Shared {
    /// Background compactions queued or running.
    fn compactions_queued(&self) -> usize {
        self.queued_compactions.load(Ordering::Acquire)
    }

    /// A background compaction of `id` ended (well or not): the next
    /// append that calls for one queues it again.
    fn compaction_finished(&self, id: &str) {
        let entry = self
            .cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .peek(id);
        if let Some(entry) = entry {
            if let Some(loaded) = entry
                .state
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_mut()
            {
                loaded.compaction_queued = false;
            }
        }
        self.queued_compactions.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        if let Some((queue, thread)) = self.compactor.take() {
            drop(queue);
            let _ = thread.join();
        }
    }
}
