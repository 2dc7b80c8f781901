//! `weft-kv`: a small, sorted, immutable key-value table (an SSTable) with
//! checksummed blocks, and [`MemKvStore`], an in-memory store over such
//! tables. It knows nothing about CRDTs; Weft stores snapshots in it.
//!
//! # Format (version 1)
//!
//! All integers are little-endian fixed width or LEB128 varints; nothing
//! on disk is a `usize`.
//!
//! ```text
//! table  := data block* , index block , footer
//!
//! data block (about 4 KiB; an entry too large for one gets a block alone)
//!   entries, in strictly increasing key order, each:
//!     varint shared     bytes shared with the previous key of the block
//!                       (0 for the block's first entry)
//!     varint unshared   bytes of key that follow
//!     varint value_len
//!     unshared key bytes, then value bytes
//!   u32 entry count     (>= 1)
//!   u32 checksum        xxhash32 (seed 0) of the block bytes before it
//!
//! index block
//!   varint block count
//!   per block: varint key length, first key, varint offset, varint length
//!              (offset and length of the data block, checksum included)
//!   u32 checksum        xxhash32 (seed 0) of the index bytes before it
//!
//! footer (20 bytes)
//!   0   8  index offset   u64
//!   8   4  index length   u32 (checksum included)
//!   12  1  format version 1
//!   13  3  reserved       0, 0, 0
//!   16  4  magic          "wkv1" (77 6b 76 31)
//! ```
//!
//! Blocks follow each other from offset 0 without gaps, in key order, and
//! the index lists them in that order; the first key of each block is
//! greater than every key of the blocks before it.
//!
//! # Checking
//!
//! [`MemKvStore::import_all`] checks the footer, the index checksum and
//! **every** block checksum, and walks every block's structure (lengths in
//! bounds, keys strictly increasing across the table), so a table that
//! imports is fully readable: lookups never fail later.
//! [`MemKvStore::import_all_unchecked`] does the same walk but skips the
//! checksums, for callers that already verified a checksum covering the
//! same bytes. Decoding never panics and never allocates from a length it
//! has not checked against the bytes at hand.
//!
//! # Example
//!
//! ```
//! use weft_kv::MemKvStore;
//!
//! let mut store = MemKvStore::new();
//! store.set(b"apple", b"red");
//! store.set(b"banana", b"yellow");
//! let bytes = store.export_all();
//!
//! let mut copy = MemKvStore::new();
//! copy.import_all(&bytes)?;
//! assert_eq!(copy.get(b"apple"), Some(&b"red"[..]));
//! let keys: Vec<Vec<u8>> = copy.scan(..).rev().map(|(k, _)| k).collect();
//! assert_eq!(keys, [b"banana".to_vec(), b"apple".to_vec()]);
//! # Ok::<(), weft_kv::Error>(())
//! ```

#![forbid(unsafe_code)]
#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod block;
mod error;
#[doc(hidden)]
pub mod fuzzing;
mod store;
mod table;

pub use error::{Error, Result};
pub use store::MemKvStore;
pub use table::TableWriter;
pub mod varint;

/// The last four bytes of every table.
pub const MAGIC: [u8; 4] = *b"wkv1";
/// The format version this build writes and reads.
pub const FORMAT_VERSION: u8 = 1;
/// Data blocks are closed once they reach this many bytes (64 with the
/// test-only `small-blocks` feature).
pub const BLOCK_SIZE: usize = if cfg!(feature = "small-blocks") {
    64
} else {
    4096
};
