//! The crate's one error type.
//!
//! Every public function that takes a position, range, id or bytes returns
//! [`Result`]; input from callers and remote peers never panics.

use std::fmt;

use crate::id::{OpId, PeerId};
use crate::unit::Unit;

/// Errors returned by [`crate::Doc`] and its texts.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// `pos` is past the end of a text that is `len` long (both in `unit`).
    OutOfBounds {
        /// The requested position.
        pos: usize,
        /// The text's length.
        len: usize,
        /// The unit of `pos` and `len`.
        unit: Unit,
    },
    /// `pos` falls inside a character: in the middle of a multi-byte UTF-8
    /// sequence, or between the two halves of a UTF-16 surrogate pair.
    NotCharBoundary {
        /// The requested position.
        pos: usize,
        /// The unit of `pos`.
        unit: Unit,
    },
    /// A range is reversed (`start > end`), or empty where an operation
    /// needs at least one char (a mark), in `unit`.
    InvalidRange {
        /// The range's start.
        start: usize,
        /// The range's end.
        end: usize,
        /// The unit of both.
        unit: Unit,
    },
    /// The range `start..end` ends past the end of a text that is `len`
    /// long (all in `unit`).
    RangeOutOfBounds {
        /// The range's start.
        start: usize,
        /// The range's end.
        end: usize,
        /// The text's length.
        len: usize,
        /// The unit of the range and `len`.
        unit: Unit,
    },
    /// The peer id is reserved (`u64::MAX`).
    InvalidPeerId(PeerId),
    /// The peer has used up its counter space (2^32 ops).
    CounterOverflow {
        /// The peer whose counter would overflow.
        peer: PeerId,
    },
    /// The document holds 2^32 - 1 ops, the most one document can number.
    HistoryFull,
    /// The bytes were empty: there is no export (or cursor) to read.
    EmptyInput,
    /// The bytes end before the data they announce: they were cut short.
    UnexpectedEof,
    /// The bytes do not start with Weft's magic number: they are not an
    /// export (or cursor) written by Weft.
    BadMagic,
    /// The bytes use a format version this build cannot read.
    UnsupportedVersion(u8),
    /// The bytes hold a kind of export this build cannot read.
    UnsupportedMode(u8),
    /// The checksum over the body does not match: the bytes were damaged
    /// or truncated on the way.
    ChecksumMismatch {
        /// The checksum stored in the header.
        expected: u64,
        /// The checksum of the body as received.
        actual: u64,
    },
    /// The body is structurally invalid at byte `offset` (which field:
    /// `what`). Bytes written by Weft never produce this.
    Malformed {
        /// Byte offset where decoding failed: into the body, or into the
        /// snapshot value (decompressed) that holds the field
        /// (`docs/FORMAT.md` section 9 lists each case).
        offset: usize,
        /// The field that was invalid.
        what: &'static str,
    },
    /// Every field decodes, but the parts of the input contradict each
    /// other or the rules of its format version, with no single byte at
    /// fault: a snapshot entry missing or not allowed in its version, a
    /// text whose length differs from its meta, segments that do not fit
    /// the history, an op naming a text the update does not list. Bytes
    /// written by Weft never produce this.
    Inconsistent {
        /// What disagrees.
        what: &'static str,
    },
    /// An op refers to an op id this document has never seen, although the
    /// op's declared dependencies are all known.
    UnknownId(OpId),
    /// A version (e.g. [`crate::Frontiers`] given to
    /// [`crate::Doc::fork_at`]) names an op this document does not have.
    UnknownOp(OpId),
    /// A version vector that no replica can be at (`what` says why).
    InvalidVersion {
        /// What is wrong with it.
        what: &'static str,
    },
    /// The document has no text of this name (e.g. a [`crate::Cursor`]
    /// into a text that does not exist here).
    UnknownText(String),
    /// The document shows no map of this name (e.g. to
    /// [`crate::Doc::delete_map`]).
    UnknownMap(String),
    /// A delta does not fit what it is applied to (`what` says how), e.g.
    /// a text's delta that holds a retain.
    InvalidDelta {
        /// What does not fit.
        what: &'static str,
    },
    /// No block marker at char position `pos` (see
    /// [`crate::Text::update_block`]).
    NotABlock {
        /// The position.
        pos: usize,
    },
    /// A value nested deeper than exports can carry (lists and maps
    /// inside each other more than `max` levels): refused when written,
    /// since no peer could read it.
    ValueTooDeep {
        /// The deepest nesting allowed.
        max: u32,
    },
    /// A style key that [`crate::Text::mark`] does not take, or a map name
    /// that [`crate::Doc::map`] does not write: keys starting with U+0001
    /// are how block attributes are stored (set them with
    /// [`crate::Text::update_block`]), and names starting with it how
    /// deleted containers are kept (see [`crate::Doc::delete_text`]).
    ReservedKey(String),
    /// A local edit while the document shows an old version (see
    /// [`crate::Doc::checkout`]): return with
    /// [`crate::Doc::checkout_to_latest`] first, or edit a
    /// [`crate::Doc::fork_at`] of that version.
    Detached,
    /// The operation needs history that this shallow document trimmed
    /// (see [`crate::ExportMode::ShallowSnapshot`]): exporting the ops a
    /// version without the shallow root lacks, showing such a version
    /// (or one holding ops concurrent to the root), or merging ops whose
    /// causal past lacks part of the root (edits concurrent to it). Such
    /// ops need a replica with the full history.
    TrimmedHistory,
    /// Op `0` cannot be cancelled: it is not an op of this peer, or not a
    /// delete, a mark's start op or a cancel.
    NotCancellable(OpId),
    /// An [`crate::UndoManager`] was given a document other than the one
    /// it was made for (another peer id).
    ForeignDocument,
    /// This build cannot do this yet (`what` says what).
    Unsupported {
        /// What is not supported.
        what: &'static str,
    },
    /// The key-value table inside a snapshot is damaged.
    Storage(weft_kv::Error),
    /// One op exports to more bytes than [`crate::Doc::export_updates_within`]
    /// may write in one update (a larger op cannot be cut).
    OpTooLarge {
        /// The bytes of the update holding only that op.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// A bug in Weft: a check it made earlier does not hold (`what` names
    /// it). Please report it.
    Internal {
        /// What did not hold.
        what: &'static str,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::OpTooLarge { bytes, limit } => write!(
                f,
                "one op exports to {bytes} bytes, over the limit of {limit} bytes per update"
            ),
            Error::OutOfBounds { pos, len, unit } => {
                write!(
                    f,
                    "position {pos} is out of bounds for a text of {len} {unit}"
                )
            }
            Error::NotCharBoundary { pos, unit } => {
                write!(f, "position {pos} ({unit}) is inside a character")
            }
            Error::InvalidRange { start, end, unit } => {
                let what = if start > end {
                    "is reversed (its start is after its end)"
                } else {
                    "is empty"
                };
                write!(f, "range {start}..{end} ({unit}) {what}")
            }
            Error::RangeOutOfBounds {
                start,
                end,
                len,
                unit,
            } => write!(
                f,
                "range {start}..{end} is out of bounds of a text of {len} {unit}"
            ),
            Error::InvalidPeerId(peer) => write!(f, "peer id {peer} is reserved"),
            Error::CounterOverflow { peer } => {
                write!(f, "peer {peer} has used all 2^32 op counters")
            }
            Error::HistoryFull => f.write_str("the document cannot hold more ops"),
            Error::EmptyInput => f.write_str("the input is empty, not a weft export or cursor"),
            Error::UnexpectedEof => f.write_str(
                "the input ended before the data it announces: it was truncated or damaged",
            ),
            Error::BadMagic => f.write_str(
                "the input is not a weft export or cursor (it does not start with weft's magic number)",
            ),
            Error::UnsupportedVersion(v) => write!(f, "format version {v} is not supported"),
            Error::UnsupportedMode(m) => write!(f, "export mode {m} is not supported"),
            Error::ChecksumMismatch { expected, actual } => write!(
                f,
                "the bytes were damaged or truncated: checksum mismatch \
                 (header says {expected:#018x}, body hashes to {actual:#018x})"
            ),
            Error::Malformed { offset, what } => {
                write!(f, "malformed input at body offset {offset}: invalid {what}")
            }
            Error::Inconsistent { what } => write!(f, "inconsistent input: {what}"),
            Error::NotCancellable(id) => write!(f, "op {id} cannot be cancelled"),
            Error::ForeignDocument => {
                write!(f, "an undo manager was given another document than its own")
            }
            Error::Unsupported { what } => write!(f, "not supported yet: {what}"),
            Error::UnknownId(id) => write!(f, "an op refers to unknown op {id}"),
            Error::UnknownOp(id) => write!(f, "the document has no op {id}"),
            Error::InvalidVersion { what } => write!(f, "invalid version: {what}"),
            Error::UnknownText(name) => write!(f, "the document has no text named {name:?}"),
            Error::UnknownMap(name) => write!(f, "the document has no map named {name:?}"),
            Error::InvalidDelta { what } => write!(f, "invalid delta: {what}"),
            Error::NotABlock { pos } => write!(f, "no block marker at position {pos}"),
            Error::ValueTooDeep { max } => {
                write!(f, "a value nested more than {max} levels deep")
            }
            Error::ReservedKey(key) => write!(f, "style key {key:?} is reserved for block attributes"),
            Error::Detached => write!(
                f,
                "the document shows an old version (checked out): it cannot be edited"
            ),
            Error::TrimmedHistory => write!(
                f,
                "the operation needs history that this shallow document does not have"
            ),
            Error::Storage(e) => write!(f, "snapshot storage: {e}"),
            Error::Internal { what } => write!(f, "internal error (a bug in weft): {what}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Storage(e) => Some(e),
            _ => None,
        }
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
