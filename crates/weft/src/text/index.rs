//! [`IdIndex`]: which leaf holds the char inserted by a given op.
//!
//! An interval map over seqs: a change point `(s, L)` means "the chars with
//! seqs from `s` up to the next change point live in `L`". Seqs in such a
//! range that are not chars of this text (deletes, other texts) map to an
//! arbitrary leaf and are never looked up. New items get the newest seqs, so
//! typing only adds a point when it moves to another leaf; when a leaf
//! splits, the seq ranges of the moved items are reassigned.
//!
//! The map is paged: page `p` covers seqs `p * PAGE..(p + 1) * PAGE` and
//! stores the leaf at its first seq plus its change points, sorted. A
//! lookup is one page access and a short binary search, an update touches
//! only the pages its range covers.

use std::ops::Range;

use generic_btree::LeafIndex;

use crate::id::Seq;

const PAGE_BITS: u32 = 10;
const PAGE: u32 = 1 << PAGE_BITS;

#[derive(Debug, Clone)]
struct Page {
    /// The leaf of the page's first seq.
    first: LeafIndex,
    /// Change points `(offset in page, leaf)`, offsets > 0, sorted.
    points: Vec<(u16, LeafIndex)>,
}

impl Page {
    /// The leaf at `offset` and the index of the first point after it.
    #[inline]
    fn at(&self, offset: u16) -> (LeafIndex, usize) {
        let i = self.points.partition_point(|p| p.0 <= offset);
        let leaf = match i {
            0 => self.first,
            _ => self.points[i - 1].1,
        };
        (leaf, i)
    }

    /// Makes `offset..` (up to the next point) map to `leaf`.
    fn set(&mut self, offset: u16, leaf: LeafIndex) {
        if offset == 0 {
            self.first = leaf;
            return;
        }
        match self.points.binary_search_by_key(&offset, |p| p.0) {
            Ok(i) => self.points[i].1 = leaf,
            Err(i) => self.points.insert(i, (offset, leaf)),
        }
    }
}

/// Seq -> leaf map. See the module doc.
#[derive(Debug, Clone, Default)]
pub(crate) struct IdIndex {
    pages: Vec<Page>,
}

fn split(seq: Seq) -> (usize, u16) {
    ((seq >> PAGE_BITS) as usize, (seq & (PAGE - 1)) as u16)
}

impl IdIndex {
    /// The leaf of the last recorded seq (what every later seq maps to).
    fn last(&self) -> Option<LeafIndex> {
        self.pages
            .last()
            .map(|p| p.points.last().map_or(p.first, |x| x.1))
    }

    /// Adds pages up to `page`, continuing the last leaf.
    fn extend_to(&mut self, page: usize) {
        if let Some(last) = self.last() {
            while self.pages.len() <= page {
                self.pages.push(Page {
                    first: last,
                    points: Vec::new(),
                });
            }
        }
    }

    /// The leaf holding char `seq` (which must be a char of this text).
    #[inline]
    pub fn get(&self, seq: Seq) -> Option<LeafIndex> {
        let (page, offset) = split(seq);
        match self.pages.get(page) {
            Some(p) => Some(p.at(offset).0),
            None => self.last(),
        }
    }

    /// Records that new chars from `seq` on (higher than every seq recorded
    /// so far) live in `leaf`.
    #[inline]
    pub fn push(&mut self, seq: Seq, leaf: LeafIndex) {
        let (page, offset) = split(seq);
        match self.last() {
            Some(last) if last == leaf => {}
            Some(_) => {
                self.extend_to(page);
                self.pages[page].set(offset, leaf);
            }
            None => self.pages.resize_with(page + 1, || Page {
                first: leaf,
                points: Vec::new(),
            }),
        }
    }

    /// Records that chars `range` now live in `leaf`.
    pub fn assign(&mut self, range: Range<Seq>, leaf: LeafIndex) {
        if range.is_empty() {
            return;
        }
        let (first_page, first_offset) = split(range.start);
        let (end_page, end_offset) = split(range.end);
        // What the seqs after the range map to must not change.
        let after = self.get(range.end);
        self.extend_to(end_page);
        for p in first_page..=end_page {
            let Some(page) = self.pages.get_mut(p) else {
                break;
            };
            let lo = if p == first_page { first_offset } else { 0 };
            if p == end_page && end_offset <= lo {
                break;
            }
            let hi = if p == end_page {
                usize::from(end_offset)
            } else {
                PAGE as usize
            };
            page.points.retain(|&(o, _)| o < lo || usize::from(o) >= hi);
            page.set(lo, leaf);
        }
        if let (Some(after), Some(page)) = (after, self.pages.get_mut(end_page)) {
            if page.at(end_offset).0 != after {
                page.set(end_offset, after);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A naive model: one entry per seq.
    fn check(index: &IdIndex, model: &[Option<u32>], leaves: &[LeafIndex]) {
        for (seq, want) in model.iter().enumerate() {
            if let Some(w) = want {
                assert_eq!(
                    index.get(seq as Seq),
                    Some(leaves[*w as usize]),
                    "seq {seq}"
                );
            }
        }
    }

    #[test]
    fn random_pushes_and_assignments_match_a_flat_map() {
        let leaves = distinct_leaves(8);
        let mut index = IdIndex::default();
        let mut model: Vec<Option<u32>> = Vec::new();
        let mut state = 12345u64;
        let mut rand = |n: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % n
        };
        for _ in 0..3000 {
            if rand(3) > 0 || model.is_empty() {
                let seq = model.len() as Seq + rand(3) as Seq;
                let len = 1 + rand(40) as Seq;
                let leaf = rand(8) as u32;
                index.push(seq, leaves[leaf as usize]);
                model.resize(seq as usize, None);
                model.extend((0..len).map(|_| Some(leaf)));
            } else {
                let a = rand(model.len() as u64) as usize;
                let b = (a + 1 + rand(3000) as usize).min(model.len());
                let leaf = rand(8) as u32;
                index.assign(a as Seq..b as Seq, leaves[leaf as usize]);
                for m in &mut model[a..b] {
                    if m.is_some() {
                        *m = Some(leaf);
                    }
                }
            }
            check(&index, &model, &leaves);
        }
    }

    /// Distinct leaf indexes from a real tree.
    fn distinct_leaves(n: usize) -> Vec<LeafIndex> {
        use super::super::chunk::{Chunk, ChunkTree};
        let mut tree: generic_btree::BTree<ChunkTree> = generic_btree::BTree::new();
        (0..n).map(|_| tree.push(Chunk::new(&[])).leaf).collect()
    }
}
