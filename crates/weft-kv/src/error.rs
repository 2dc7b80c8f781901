//! The crate's one error type.

use std::fmt;

/// Why bytes could not be read as a table (or a writer was misused).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The bytes end before the data they announce.
    UnexpectedEof,
    /// The bytes do not end with the table magic.
    BadMagic,
    /// The table has a format version this build cannot read.
    UnsupportedVersion(u8),
    /// A block or the index does not match its checksum.
    ChecksumMismatch {
        /// The checksum stored in the table.
        expected: u32,
        /// The checksum of the bytes as read.
        actual: u32,
    },
    /// The block (or index) at byte `offset` is structurally invalid.
    InvalidBlock {
        /// Byte offset of the block in the table.
        offset: u64,
    },
    /// [`crate::TableWriter::add`] got a key not greater than the previous
    /// one.
    UnsortedKey,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::UnexpectedEof => f.write_str("the table ended unexpectedly"),
            Error::BadMagic => f.write_str("not a weft-kv table (bad magic)"),
            Error::UnsupportedVersion(v) => write!(f, "table format version {v} is not supported"),
            Error::ChecksumMismatch { expected, actual } => write!(
                f,
                "checksum mismatch: stored {expected:#010x}, computed {actual:#010x}"
            ),
            Error::InvalidBlock { offset } => write!(f, "invalid block at byte {offset}"),
            Error::UnsortedKey => {
                f.write_str("table keys must be added in strictly increasing order")
            }
        }
    }
}

impl std::error::Error for Error {}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
