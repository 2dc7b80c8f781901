//! `weft-store`: Weft documents kept on a database, where every update
//! that [`Store::append`] acknowledged survives `kill -9` (and, with the
//! database's durability on, a power loss).
//!
//! # The model
//!
//! - A [`Store`] holds many documents, each under an id (1 to
//!   [`MAX_ID_LEN`] bytes). [`Store::create`] gives a document a random
//!   [`Epoch`], the id of its history: deleting a document and creating it
//!   again gives a new one, so a client can tell it must not sync its old
//!   copy into the new document.
//! - [`Store::append`] imports an update (bytes of [`weft::Doc::export`])
//!   into the document first, atomically: bytes that do not import are an
//!   `Err` and nothing is stored. Then it stores the bytes as one row and
//!   returns once the row's transaction committed. Updates whose
//!   dependencies are missing are stored and stay pending, as in a `Doc`.
//!   [`Store::save`] appends what a live `Doc` has and the store lacks.
//! - **Group commit**: appends from many threads queue while a commit
//!   runs and then share one transaction, so 8 writers cost far fewer
//!   fsyncs than 8 x appends, and each `append` still returns only once
//!   durable.
//! - [`Store::load`] builds a document from its latest snapshot plus the
//!   rows after it; [`Store::updates_since`] gives what a peer at some
//!   version lacks, from the rows alone when the peer holds the
//!   snapshot's ops. Both cost that document, never the store. Reads show
//!   only durable edits: they wait for the document's appends in flight
//!   (one group commit at most). Loaded
//!   documents stay in a cache bounded in bytes (least recently used go
//!   first, [`StoreOptions::cache_bytes`]).
//! - **Compaction**: once the bytes of a document's rows since its
//!   snapshot reach the snapshot's size ([`StoreOptions::compaction_ratio`],
//!   the automerge-repo rule), a background thread reads the snapshot and
//!   the rows, writes a new snapshot and deletes exactly the rows it read,
//!   in one transaction. A crash at any point leaves the old state or the
//!   new; appends never wait for it; a failed compaction is tried again at
//!   the next append that calls for one.
//! - **Integrity**: every row is stored with an xxh3 checksum. A damaged
//!   row or snapshot is an [`Error::Corrupt`] naming the document and the
//!   row ([`RowId`]); other documents still load; [`Store::check`] reads
//!   everything and reports.
//!
//! # Durability, per backend
//!
//! - **SQLite** (the default, compiled in): WAL journal with
//!   `synchronous=FULL`, so the WAL is fsynced at every commit. A returned
//!   append survives a crash of the process and a power loss or OS crash
//!   (on storage that honours fsync). Several processes may share one
//!   file; SQLite serializes their commits.
//! - **PostgreSQL** (feature `postgres`): each commit waits for the
//!   server's WAL flush (`synchronous_commit = on`, set per session by the
//!   store). A returned append survives a crash of the client, of the
//!   server (even `pg_ctl stop -m immediate`) and, with the server's
//!   `fsync = on` (its default), a power loss of the server's machine.
//!   Several servers may share one database; one compaction per document
//!   runs at a time (an advisory lock).
//!
//! # Cost, measured
//!
//! `cargo run --release -p examples --features postgres --bin store --
//! --runs 7 --no-sqlite --postgres "host=... dbname=..."` (PostgreSQL 15
//! over a unix socket on the same 2-core machine, an fsync of 3-10 ms
//! that session; medians of 7 rounds, each with its own baselines):
//!
//! - 8 writers appending one-keystroke updates: 7.9 rows per commit,
//!   4.8-7.2x the rate of one plain connection inserting the same bytes
//!   one transaction each, and 0.58-1.04x the rate of 8 plain
//!   connections, whose commits the server flushes together: with each
//!   append waiting for its own durable commit, 8 writers never hold more
//!   than 8 rows for one fsync, which is what 8 plain connections get too.
//! - Opening a compacted B4 document (cache empty) and reading its text:
//!   0.9-1.3 ms, 1.3-1.5x one plain query of the snapshot's bytes followed
//!   by the same import, and 14.7-18.4x importing the snapshot from memory;
//!   the plain query alone already takes 8.4-9.5x the import from memory.
//!
//! # Example
//!
//! ```
//! use weft::{Doc, ExportMode, VersionVector};
//! use weft_store::{Store, StoreOptions};
//!
//! let dir = std::env::temp_dir().join(format!("weft-store-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let store = Store::open_sqlite(dir.join("docs.db"), StoreOptions::new())?;
//! store.create("notes")?;
//!
//! let mut alice = Doc::new();
//! alice.text("t").insert(0, "Hello")?;
//! store.save("notes", &alice)?; // durable when it returns
//!
//! // Another peer catches up from its version.
//! let mut bob = Doc::new();
//! for update in store.updates_since("notes", &bob.version())? {
//!     bob.import(&update)?;
//! }
//! assert_eq!(bob.get_text("t").map(|t| t.to_string()).as_deref(), Some("Hello"));
//!
//! // Bad bytes are refused and change nothing.
//! assert!(store.append("notes", b"not an update").is_err());
//! assert_eq!(store.read("notes", |d| d.get_text("t").map(|t| t.to_string()))?.as_deref(), Some("Hello"));
//! # drop(store);
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Features
//!
//! - `postgres`: the PostgreSQL backend, `Store::connect_postgres`.

#![forbid(unsafe_code)]

mod backend;
mod cache;
mod commit;
mod error;
mod options;
#[cfg(feature = "postgres")]
mod postgres;
mod sqlite;
mod store;

pub use backend::{DocumentInfo, Epoch};
pub use error::{Damage, DatabaseError, Error, Result, RowId};
pub use options::StoreOptions;
pub use store::{Appended, CheckReport, Compaction, Stats, Store, MAX_ID_LEN};
