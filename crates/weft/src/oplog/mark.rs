//! [`Mark`]: what a mark op sets, kept beside the op log, and the key table.

use std::collections::BTreeMap;

use crate::id::{KeyIdx, Lamport, PeerId, Seq};
use crate::style::ExpandType;
use crate::value::Value;

/// A mark: key = value over the chars between its two anchors.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Mark {
    /// The mark's style key, in the [`KeyTable`].
    pub key: KeyIdx,
    pub value: Value,
    pub expand: ExpandType,
    /// Of the start op: with `peer`, orders marks of one key (last wins).
    pub lamport: Lamport,
    pub peer: PeerId,
    /// Seq of the start anchor op.
    pub start: Seq,
    /// Seq of the end anchor op; `NO_SEQ` while it has not arrived (only
    /// a hand-made update can send a start without its end).
    pub end: Seq,
    /// Whether its start op is cancelled (see [`super::OpKind::Cancel`]):
    /// then it styles nothing, as if it had never been made.
    pub cancelled: bool,
}

impl Mark {
    /// Whether the mark styles the chars between its anchors: both are
    /// in, and it is not cancelled.
    #[inline]
    pub fn is_live(&self) -> bool {
        self.end != crate::id::NO_SEQ && !self.cancelled
    }
}

impl Mark {
    /// Whether this mark beats `other` on the same key.
    #[inline]
    pub fn wins_over(&self, other: &Mark) -> bool {
        (self.lamport, self.peer) > (other.lamport, other.peer)
    }
}

/// Style keys, interned.
#[derive(Debug, Clone, Default)]
pub(crate) struct KeyTable {
    names: Vec<Box<str>>,
    index: BTreeMap<Box<str>, KeyIdx>,
}

impl KeyTable {
    /// The index of `key`, added to the table if missing.
    pub fn intern(&mut self, key: &str) -> KeyIdx {
        if let Some(&i) = self.index.get(key) {
            return i;
        }
        let i = KeyIdx::new(self.names.len() as u32);
        self.names.push(key.into());
        self.index.insert(key.into(), i);
        i
    }

    /// Whether `key` sets a block attribute (see
    /// [`super::object::block_key`]).
    #[inline]
    pub fn is_block(&self, key: KeyIdx) -> bool {
        self.name(key).starts_with(super::BLOCK_KEY_PREFIX)
    }

    /// Number of keys interned.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether no key is interned.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The index of `key`, if a mark ever used it.
    pub fn find(&self, key: &str) -> Option<KeyIdx> {
        self.index.get(key).copied()
    }

    /// The name of key `i` (which this table gave out).
    pub fn name(&self, i: KeyIdx) -> &str {
        self.names.get(i.as_usize()).map_or("", |n| n)
    }
}
