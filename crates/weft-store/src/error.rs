//! The crate's one error type.
//!
//! Every error about a document names it; every error about a damaged row
//! names the row ([`RowId`]). Database errors keep the driver's error as
//! their [`std::error::Error::source`], shared (`Arc`) because one failed
//! group commit answers every append in it.

use std::fmt;
use std::sync::Arc;

/// A stored row of one document: its snapshot, or one appended update.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RowId {
    /// The document's snapshot, of this generation (1 for the first).
    Snapshot {
        /// How many compactions wrote this document's snapshot so far.
        generation: u64,
    },
    /// The appended update with this sequence number (per document, from 1).
    Update {
        /// The update's sequence number.
        seq: u64,
    },
}

impl fmt::Display for RowId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RowId::Snapshot { generation } => write!(f, "snapshot (generation {generation})"),
            RowId::Update { seq } => write!(f, "update row {seq}"),
        }
    }
}

/// What is wrong with a damaged row.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Damage {
    /// The row's bytes do not match the checksum stored beside them.
    Checksum {
        /// The checksum stored with the row.
        expected: u64,
        /// The checksum of the bytes read.
        actual: u64,
    },
    /// The bytes match their checksum but Weft cannot import them (a row
    /// forged together with its checksum, or written by a newer Weft).
    Import(weft::Error),
    /// The snapshot's record of the ops it holds (kept beside it so that
    /// [`crate::Store::updates_since`] need not read the snapshot) does
    /// not match its own checksum.
    Covers,
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Damage::Checksum { expected, actual } => write!(
                f,
                "checksum mismatch (stored {expected:#018x}, bytes give {actual:#018x})"
            ),
            Damage::Import(e) => write!(f, "it does not import: {e}"),
            Damage::Covers => write!(f, "its record of the ops it holds is damaged"),
        }
    }
}

/// Which database a [`Error::Database`] comes from.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum DatabaseError {
    /// An error of SQLite (through `rusqlite`).
    Sqlite(Arc<rusqlite::Error>),
    /// An error of PostgreSQL (through `postgres`).
    #[cfg(feature = "postgres")]
    Postgres(Arc<postgres::Error>),
}

impl fmt::Display for DatabaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DatabaseError::Sqlite(e) => write!(f, "SQLite: {e}"),
            #[cfg(feature = "postgres")]
            // The client's own text is just "db error"; the server's
            // message says what went wrong.
            DatabaseError::Postgres(e) => match e.as_db_error() {
                Some(db) => write!(f, "PostgreSQL: {}: {}", db.severity(), db.message()),
                None => write!(f, "PostgreSQL: {e}"),
            },
        }
    }
}

/// Errors returned by [`crate::Store`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Error {
    /// No document is stored under this id.
    UnknownDocument {
        /// The id asked for.
        document: String,
    },
    /// A document is already stored under this id.
    AlreadyExists {
        /// The id asked for.
        document: String,
    },
    /// Document ids are 1 to [`crate::MAX_ID_LEN`] bytes long.
    InvalidId {
        /// The length of the id given, in bytes.
        len: usize,
    },
    /// The bytes given to append do not import into the document; nothing
    /// was stored.
    Import {
        /// The document appended to.
        document: String,
        /// Why Weft refused the bytes.
        source: weft::Error,
    },
    /// A stored row is damaged: the document cannot be loaded (other
    /// documents still can).
    Corrupt {
        /// The document the row belongs to.
        document: String,
        /// The damaged row.
        row: RowId,
        /// What is wrong with it.
        damage: Damage,
    },
    /// The database has no space left; nothing of this operation was
    /// stored. Appends work again once space is freed.
    StorageFull {
        /// The document written to, if the operation had one.
        document: Option<String>,
    },
    /// The database failed or refused the operation (I/O error, lost
    /// connection, a server shut down); nothing of it was stored.
    Database {
        /// The document concerned, if the operation had one.
        document: Option<String>,
        /// The driver's error.
        source: DatabaseError,
    },
    /// A stored value other than a row's bytes does not read back (a
    /// version vector or an epoch of the wrong length): the database was
    /// written by something else.
    BadMetadata {
        /// The document concerned.
        document: String,
        /// The column that does not read.
        column: &'static str,
    },
    /// The store's compactor thread could not start (the system's reason).
    ThreadSpawn(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::UnknownDocument { document } => {
                write!(f, "no document {document:?} in the store")
            }
            Error::AlreadyExists { document } => write!(f, "document {document:?} already exists"),
            Error::InvalidId { len } => write!(
                f,
                "a document id is 1 to {} bytes long, not {len}",
                crate::MAX_ID_LEN
            ),
            Error::Import { document, source } => write!(
                f,
                "update for document {document:?} does not import, nothing stored: {source}"
            ),
            Error::Corrupt {
                document,
                row,
                damage,
            } => {
                write!(f, "document {document:?}: {row} is damaged: {damage}")
            }
            Error::StorageFull { document: Some(d) } => {
                write!(
                    f,
                    "no space left in the database, nothing stored for document {d:?}"
                )
            }
            Error::StorageFull { document: None } => {
                write!(f, "no space left in the database, nothing stored")
            }
            Error::Database {
                document: Some(d),
                source,
            } => {
                write!(f, "database error for document {d:?}: {source}")
            }
            Error::Database {
                document: None,
                source,
            } => write!(f, "database error: {source}"),
            Error::BadMetadata { document, column } => write!(
                f,
                "document {document:?}: stored column {column} does not read"
            ),
            Error::ThreadSpawn(why) => {
                write!(f, "the store's compactor thread could not start: {why}")
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Import { source, .. } => Some(source),
            Error::Corrupt {
                damage: Damage::Import(e),
                ..
            } => Some(e),
            Error::Database {
                source: DatabaseError::Sqlite(e),
                ..
            } => Some(&**e),
            #[cfg(feature = "postgres")]
            Error::Database {
                source: DatabaseError::Postgres(e),
                ..
            } => Some(&**e),
            _ => None,
        }
    }
}

impl Error {
    /// The document this error is about, if any.
    pub fn document(&self) -> Option<&str> {
        match self {
            Error::UnknownDocument { document }
            | Error::AlreadyExists { document }
            | Error::Import { document, .. }
            | Error::Corrupt { document, .. }
            | Error::BadMetadata { document, .. } => Some(document),
            Error::StorageFull { document } | Error::Database { document, .. } => {
                document.as_deref()
            }
            Error::InvalidId { .. } | Error::ThreadSpawn(_) => None,
        }
    }

    /// The same error, naming `document` if it named none.
    pub(crate) fn for_document(mut self, id: &str) -> Error {
        if let Error::StorageFull { document } | Error::Database { document, .. } = &mut self {
            if document.is_none() {
                *document = Some(id.to_owned());
            }
        }
        self
    }
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Error {
        if let rusqlite::Error::SqliteFailure(f, _) = &e {
            if f.code == rusqlite::ErrorCode::DiskFull {
                return Error::StorageFull { document: None };
            }
        }
        Error::Database {
            document: None,
            source: DatabaseError::Sqlite(Arc::new(e)),
        }
    }
}

#[cfg(feature = "postgres")]
impl From<postgres::Error> for Error {
    fn from(e: postgres::Error) -> Error {
        if e.code() == Some(&postgres::error::SqlState::DISK_FULL) {
            return Error::StorageFull { document: None };
        }
        Error::Database {
            document: None,
            source: DatabaseError::Postgres(Arc::new(e)),
        }
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
