//! Placing a remote insert: FugueMax ordering of concurrent inserts.
//!
//! A new run goes between its left origin `L` and right origin `R`. When
//! other runs were inserted there concurrently, it is ordered among them by
//! the rule of FugueMax (the Fugue paper's variant of YjsMod, which it proves
//! equivalent): scanning right from `L`, for each other run `O`
//!
//! - if `O`'s left origin is before `L`, stop: `O` belongs to an outer run;
//! - if it is after `L`, `O` is nested inside a sibling: keep going;
//! - if it is `L` (a sibling): when both share `R`, chars go before block
//!   markers, then the lower `(peer, counter)` goes first; otherwise the run whose right origin is further
//!   left comes later ("scanning" until that is resolved).
//!
//! Style anchors take no part: they are glued to chars (see
//! [`TextState::place_anchor`]), the scan steps over them, and the new run
//! goes after the anchors glued to the char before it and before those
//! glued to the char after it. So text typed concurrently at a mark's edge
//! lands inside or outside the mark by the mark's expand rule alone,
//! whatever the peer ids, and the order of chars is plain FugueMax.
//!
//! This never interleaves two runs typed concurrently at one place, neither
//! forwards nor backwards. Only the first char of each run decides: later
//! chars have their predecessor as left origin, which is after `L`.

use std::cmp::Ordering;
use std::ops::Range;

use generic_btree::{Cursor, LeafIndex};
use smallvec::SmallVec;

use crate::id::{OpId, Seq, NO_SEQ, UNKNOWN_ORIGIN};
use crate::oplog::OpLog;

use super::chunk::Chunk;
use super::item::Item;
use super::TextState;

/// Up to this many scanned runs are remembered for origin comparisons; a
/// longer scan compares tree positions, so each step stays O(log n).
const SCANNED_SET_MAX: usize = 16;

impl TextState {
    /// The item at `(leaf, index)`, stepping to the next leaf when `index`
    /// is past the end of this one. Returns its actual place too.
    pub(super) fn item_from(
        &self,
        leaf: LeafIndex,
        index: usize,
    ) -> Option<(LeafIndex, usize, Item)> {
        if let Some(item) = self.chunk(leaf).items.get(index) {
            return Some((leaf, index, *item));
        }
        let next = self.next_leaf(leaf)?;
        let item = *self.chunk(next).items.first()?;
        Some((next, 0, item))
    }

    /// The item right before `(leaf, index)`, stepping to the end of the
    /// previous leaf when `index` is 0. Returns its actual place too.
    pub(super) fn item_before(
        &self,
        leaf: LeafIndex,
        index: usize,
    ) -> Option<(LeafIndex, usize, Item)> {
        let (leaf, index) = match index {
            0 => {
                let prev = self.tree.prev_elem(Cursor { leaf, offset: 0 })?.leaf;
                (prev, self.chunk(prev).items.len())
            }
            _ => (leaf, index),
        };
        let item = *self.chunk(leaf).items.get(index.checked_sub(1)?)?;
        Some((leaf, index - 1, item))
    }

    /// Where char `seq` is: its leaf, item index and the seq itself.
    pub(super) fn position_of(&self, seq: Seq) -> (LeafIndex, usize, Seq) {
        // Remote edits usually land next to the previous one.
        if let Some(f) = &self.focus {
            if let Some(index) = self.chunk(f.leaf).find_seq(seq) {
                return (f.leaf, index, seq);
            }
        }
        let leaf = self.index().get(seq).expect("char seqs are indexed");
        let index = self
            .chunk(leaf)
            .find_seq(seq)
            .expect("the index points at the leaf holding the seq");
        (leaf, index, seq)
    }

    /// Whether char `a` comes before char `b` (`NO_SEQ` is the end).
    fn is_before(&self, a: Seq, b: Seq) -> bool {
        if a == b || a == NO_SEQ {
            return false;
        }
        if b == NO_SEQ {
            return true;
        }
        let (la, ia, sa) = self.position_of(a);
        let (lb, ib, sb) = self.position_of(b);
        let order = if la == lb {
            ia.cmp(&ib)
        } else {
            self.tree.compare_pos(
                Cursor {
                    leaf: la,
                    offset: ia,
                },
                Cursor {
                    leaf: lb,
                    offset: ib,
                },
            )
        };
        order.then(sa.cmp(&sb)) == Ordering::Less
    }

    /// Splits the item holding char `seq` right after it and focuses its
    /// leaf; returns the place right after the char.
    #[inline]
    pub(super) fn split_after(&mut self, seq: Seq, content: &str) -> (LeafIndex, usize) {
        let (leaf, i, _) = self.position_of(seq);
        self.set_focus(leaf, None);
        let held = self.chunk(leaf).items[i];
        let o = seq - held.seq;
        if o + 1 == held.len {
            return (leaf, i + 1);
        }
        let (leaf, i) = self.make_room(leaf, i, 2);
        let chunk = self.chunk_mut(leaf);
        let right = chunk.items[i].split(o + 1, content.as_bytes());
        chunk.items.insert(i + 1, right);
        (leaf, i + 1)
    }

    /// Inserts the remote run `item` (origins set, the newest seqs), made by
    /// op `id`. `log` names the peers of other runs for tie-breaks. Returns
    /// where the item ended up.
    pub fn integrate(
        &mut self,
        item: Item,
        id: OpId,
        log: &OpLog,
        content: &str,
    ) -> (LeafIndex, usize) {
        self.build_index();
        let Some(first) = self.tree.first_leaf() else {
            let cursor = self.tree.push(Chunk::new(&[item]));
            self.index_push(item.seq, cursor.leaf);
            return (cursor.leaf, 0);
        };
        // Start right after the left origin, splitting its run there.
        let (leaf, index) = if item.origin_left == NO_SEQ {
            (first, 0)
        } else {
            self.split_after(item.origin_left, content)
        };

        let (mut leaf, mut index) = (leaf, index);
        let mut scanning = false;
        let mut scan_start = (leaf, index);
        // Inserting inside the run at (leaf, index), at this offset.
        let mut inside = None;
        let mut scanned: SmallVec<[Range<Seq>; 8]> = SmallVec::new();
        while let Some((l, i, other)) = self.item_from(leaf, index) {
            if other.seq == item.origin_right {
                break;
            }
            if other.is_anchor() {
                // Style anchors are glued to chars and take no part in the
                // ordering of chars.
                (leaf, index) = (l, i + 1);
                continue;
            }
            if other.origin_right == UNKNOWN_ORIGIN {
                // A char of a shallow document's trimmed root: in the
                // causal past of every op it merges, so only a forged op
                // gets here; stop before it rather than read what is not
                // known.
                break;
            }
            let left = other.origin_left;
            // `O`'s left origin is before it: either before `L`, `L`, or in
            // the part scanned so far.
            let order = if left == item.origin_left {
                Ordering::Equal
            } else if left == NO_SEQ {
                Ordering::Less
            } else if item.origin_left == NO_SEQ {
                // Everything is after the start of the text.
                Ordering::Greater
            } else if scanned.len() < SCANNED_SET_MAX {
                if scanned.iter().any(|r| r.contains(&left)) {
                    Ordering::Greater
                } else {
                    Ordering::Less
                }
            } else if self.is_before(item.origin_left, left) {
                // Long scans compare positions in the tree instead.
                Ordering::Greater
            } else {
                Ordering::Less
            };
            match order {
                Ordering::Less => break,
                Ordering::Greater => {}
                Ordering::Equal => {
                    if other.origin_right == item.origin_right {
                        // Chars before block markers, then by id: text
                        // typed where a block was split concurrently stays
                        // in the block it was typed in.
                        let other_id = log.seq_to_id(other.seq);
                        let mine = (log.is_block(item.seq), id.peer, id.counter);
                        if mine < (log.is_block(other.seq), other_id.peer, other_id.counter) {
                            break;
                        }
                        scanning = false;
                    } else if self.is_before(other.origin_right, item.origin_right) {
                        if !scanning {
                            scanning = true;
                            scan_start = (leaf, index);
                        }
                    } else {
                        scanning = false;
                    }
                }
            }
            if other.contains(item.origin_right) {
                // The right origin is inside this run: stop just before it.
                if !scanning {
                    (leaf, index) = (l, i);
                    inside = Some(item.origin_right - other.seq);
                }
                break;
            }
            if scanned.len() < SCANNED_SET_MAX {
                scanned.push(other.seq..other.end());
            }
            (leaf, index) = (l, i + 1);
        }

        let (leaf, index) = if scanning {
            self.back_over_right_anchors(scan_start.0, scan_start.1)
        } else if let Some(offset) = inside {
            self.set_focus(leaf, None);
            let (leaf, i) = self.make_room(leaf, index, 2);
            let chunk = self.chunk_mut(leaf);
            let right = chunk.items[i].split(offset, content.as_bytes());
            chunk.items.insert(i + 1, right);
            (leaf, i + 1)
        } else {
            self.back_over_right_anchors(leaf, index)
        };
        self.set_focus(leaf, None);
        let (leaf, index) = self.insert_item(leaf, index, item);
        if !self.anchors.is_empty() {
            self.note_chars_added(leaf, index, item.len);
        }
        (leaf, index)
    }
}
