//! [`IdIndex`]: which leaf holds the char inserted by a given op.
//!
//! An interval map over seqs: key `k` with leaf `L` means "the chars with
//! seqs from `k` up to the next key live in `L`". Seqs in that range that
//! are not chars of this text (deletes, other texts) map to an arbitrary leaf
//! and are never looked up. New items get the newest seqs, so typing only
//! touches the map when it moves to another leaf; when a leaf splits, the
//! seq ranges of the moved items are reassigned.

use std::collections::BTreeMap;
use std::ops::Range;

use generic_btree::LeafIndex;

use crate::id::Seq;

/// Seq -> leaf map. See the module doc.
#[derive(Debug, Clone, Default)]
pub(crate) struct IdIndex {
    map: BTreeMap<Seq, LeafIndex>,
}

impl IdIndex {
    /// The leaf holding char `seq` (which must be a char of this text).
    #[inline]
    pub fn get(&self, seq: Seq) -> Option<LeafIndex> {
        self.map.range(..=seq).next_back().map(|(_, &leaf)| leaf)
    }

    /// Records that new chars from `seq` on (higher than every seq recorded
    /// so far) live in `leaf`.
    #[inline]
    pub fn push(&mut self, seq: Seq, leaf: LeafIndex) {
        if self.map.last_key_value().map(|(_, &l)| l) != Some(leaf) {
            self.map.insert(seq, leaf);
        }
    }

    /// Records that chars `range` now live in `leaf`.
    pub fn assign(&mut self, range: Range<Seq>, leaf: LeafIndex) {
        if range.is_empty() {
            return;
        }
        // What the seqs after the range map to must not change.
        let after = match self.map.range(..=range.end).next_back() {
            Some((&k, _)) if k == range.end => None,
            Some((_, &l)) => Some(l),
            None => None,
        };
        if let Some(after) = after {
            self.map.insert(range.end, after);
        }
        while let Some((&k, _)) = self.map.range(range.start + 1..range.end).next() {
            self.map.remove(&k);
        }
        let before = self.map.range(..range.start).next_back().map(|(_, &l)| l);
        if before == Some(leaf) {
            self.map.remove(&range.start);
        } else {
            self.map.insert(range.start, leaf);
        }
        if after == Some(leaf) || (after.is_none() && self.map.get(&range.end) == Some(&leaf)) {
            self.map.remove(&range.end);
        }
    }
}
