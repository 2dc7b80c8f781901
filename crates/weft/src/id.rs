//! Identifiers of peers and operations.
//!
//! Every op a peer makes gets the next [`Counter`] of that peer, so an op is
//! named by [`OpId`] `(peer, counter)` everywhere, and a run of one peer's ops
//! by [`IdSpan`]. Inside one document, ops are also numbered by [`Seq`], their
//! position in this document's local history; a `Seq` never leaves the
//! document (encodings translate it back to an `OpId`).
//!
//! The document's tables are indexed by small numbers that never leave it
//! either: [`PeerIdx`] (the op log's peer table), [`KeyIdx`] (its style
//! keys), [`MarkIdx`] (its marks), [`TextIdx`] (the document's texts),
//! [`MapIdx`] (its map names) and [`MapSetIdx`] (its map ops).
//! Each is its own type, so an index of one table cannot be passed where
//! another's is expected; encodings convert them to and from plain
//! integers at the boundary.

use std::fmt;
use std::ops::Range;

/// Identifies a peer (a replica that makes edits). Must be unique per editing
/// session; `u64::MAX` is reserved.
pub type PeerId = u64;

/// Counts one peer's ops: its first op has counter 0, the next 1, and so on.
pub type Counter = u32;

/// A Lamport timestamp: one more than the largest timestamp among an op's
/// causal predecessors. Derived from the history, never sent over the wire.
pub type Lamport = u32;

/// An op's position in this document's local history, assigned in the order
/// ops become known here. Internal: two documents number the same op
/// differently.
pub(crate) type Seq = u32;

/// "No op": the start or end of a text when used as an origin.
pub(crate) const NO_SEQ: Seq = Seq::MAX;

/// An origin that is not known: never a seq (seqs stay below it), so no
/// new run ever continues an item with it. Chars built from a snapshot's
/// segments before its history loads have it until the history fills it
/// in; the chars of a shallow document's trimmed root keep it (see
/// `oplog/trimmed.rs`).
pub(crate) const UNKNOWN_ORIGIN: Seq = NO_SEQ - 1;

/// Defines a `u32` index newtype, `$name`: `new` makes one from a plain
/// number, `as_usize` indexes its table, and `u32::from` gives the plain
/// number back (for encodings). `repr(transparent)`: it sits in hot structs
/// at the size of a plain `u32`.
macro_rules! index_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        #[repr(transparent)]
        pub(crate) struct $name(u32);

        impl $name {
            /// The index with number `i`.
            #[inline]
            pub const fn new(i: u32) -> Self {
                $name(i)
            }

            /// The index as a `usize`, to index its table.
            #[inline]
            pub const fn as_usize(self) -> usize {
                self.0 as usize
            }
        }

        impl From<$name> for u32 {
            /// The index as a plain number.
            #[inline]
            fn from(i: $name) -> u32 {
                i.0
            }
        }
    };
}

index_type!(
    /// Index of a peer in the op log's peer table (`PeerTable`), in order
    /// of first appearance in this document.
    PeerIdx
);

index_type!(
    /// Index of a style key in the op log's key table (`KeyTable`), in
    /// order of first use by a mark in this document.
    KeyIdx
);

index_type!(
    /// Index of a mark in the op log's marks (`OpLog::marks`), in the
    /// order their start ops arrived in this document. A style anchor
    /// keeps it in its item's `byte_start`.
    MarkIdx
);

index_type!(
    /// Index of a text in the document's text table (`TextTable`), in
    /// order of creation. Updates and snapshots number texts their own
    /// way (plain `u32`s, indexes into their name lists); decoders map
    /// those to a `TextIdx`.
    TextIdx
);

index_type!(
    /// Index of a map name in the op log's map name table, in order of
    /// first use in this document. Updates and snapshots number maps
    /// their own way, as they do texts.
    MapIdx
);

index_type!(
    /// Index of a map op in the op log's map ops (`OpLog::map_sets`), in
    /// the order they arrived in this document.
    MapSetIdx
);

/// The id of one operation: the peer that made it and its counter.
///
/// # Examples
///
/// ```
/// use weft::OpId;
/// let id = OpId::new(7, 0);
/// assert_eq!(id.to_string(), "0@7");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OpId {
    /// The peer that made the op.
    pub peer: PeerId,
    /// The op's counter within that peer's history.
    pub counter: Counter,
}

impl OpId {
    /// The id of `peer`'s op number `counter`.
    pub const fn new(peer: PeerId, counter: Counter) -> Self {
        OpId { peer, counter }
    }
}

impl fmt::Display for OpId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.counter, self.peer)
    }
}

/// A run of one peer's consecutive ops: `counters.start..counters.end`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdSpan {
    /// The peer that made the ops.
    pub peer: PeerId,
    /// The counters of the ops, end exclusive.
    pub counters: Range<Counter>,
}

impl IdSpan {
    /// The span of `peer`'s ops `counters`.
    pub const fn new(peer: PeerId, counters: Range<Counter>) -> Self {
        IdSpan { peer, counters }
    }

    /// Number of ops in the span.
    pub fn len(&self) -> u32 {
        self.counters.end.saturating_sub(self.counters.start)
    }

    /// Whether the span holds no ops.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `id` lies in the span.
    pub fn contains(&self, id: OpId) -> bool {
        id.peer == self.peer && self.counters.contains(&id.counter)
    }
}

impl fmt::Display for IdSpan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}..{}@{}",
            self.counters.start, self.counters.end, self.peer
        )
    }
}
