//! The b-tree leaf: a [`Chunk`] of up to [`CHUNK_CAP`] items, and the
//! `generic-btree` glue ([`ChunkTree`], [`Counts`], [`UnitQuery`]).
//!
//! Every internal node caches, per child, the visible chars, UTF-8 bytes,
//! UTF-16 units and style anchors below it, so a position in any unit maps to a leaf in
//! O(log n). Leaves hold many items (not one) so that typing and deleting
//! near the last edit stay inside one small array.

use generic_btree::rle::{CanRemove, HasLength, Mergeable, Sliceable, TryInsert};
use generic_btree::{BTreeTrait, Child, FindResult, Query};

use smallvec::SmallVec;

use crate::id::Seq;
use crate::unit::Unit;

use super::item::Item;

/// Most items one leaf holds before it splits.
/// (4 with the test-only `small-nodes` feature.)
pub(crate) const CHUNK_CAP: usize = if cfg!(feature = "small-nodes") { 4 } else { 32 };

/// Visible length of a subtree in each unit.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Counts {
    pub chars: u32,
    pub utf8: u32,
    pub utf16: u32,
    /// Style anchors (zero-width); chars + anchors is the entity count.
    pub anchors: u32,
}

impl Counts {
    #[inline]
    pub fn get(&self, unit: Unit) -> u32 {
        match unit {
            Unit::Char => self.chars,
            Unit::Utf8 => self.utf8,
            Unit::Utf16 => self.utf16,
        }
    }

    #[inline]
    pub fn add(&mut self, other: Counts) {
        self.chars += other.chars;
        self.utf8 += other.utf8;
        self.utf16 += other.utf16;
        self.anchors += other.anchors;
    }

    #[inline]
    pub fn sub(&mut self, other: Counts) {
        self.chars -= other.chars;
        self.utf8 -= other.utf8;
        self.utf16 -= other.utf16;
        self.anchors -= other.anchors;
    }

    #[inline]
    pub fn diff(&self, old: Counts) -> CacheDiff {
        CacheDiff {
            chars: self.chars.wrapping_sub(old.chars),
            utf8: self.utf8.wrapping_sub(old.utf8),
            utf16: self.utf16.wrapping_sub(old.utf16),
            anchors: self.anchors.wrapping_sub(old.anchors),
        }
    }
}

/// A change of a [`Counts`], as differences modulo 2^32: adding it back
/// with wrapping arithmetic is exact (caches never go negative), and it is
/// half the size of signed 64-bit differences.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CacheDiff {
    pub chars: u32,
    pub utf8: u32,
    pub utf16: u32,
    pub anchors: u32,
}

impl CacheDiff {
    #[inline]
    fn apply(&self, cache: &mut Counts) {
        cache.chars = cache.chars.wrapping_add(self.chars);
        cache.utf8 = cache.utf8.wrapping_add(self.utf8);
        cache.utf16 = cache.utf16.wrapping_add(self.utf16);
        cache.anchors = cache.anchors.wrapping_add(self.anchors);
    }
}

impl CanRemove for CacheDiff {
    fn can_remove(&self) -> bool {
        *self == CacheDiff::default()
    }
}

/// A b-tree leaf: items in document order and their visible counts.
#[derive(Debug, Default)]
pub(crate) struct Chunk {
    pub items: Vec<Item>,
    pub counts: Counts,
}

impl Chunk {
    /// A leaf holding copies of `items`, with room for [`CHUNK_CAP`] items:
    /// one allocation.
    pub fn new(items: &[Item]) -> Chunk {
        let mut vec = Vec::with_capacity(CHUNK_CAP.max(items.len()));
        vec.extend_from_slice(items);
        Chunk {
            items: vec,
            counts: counts_of(items),
        }
    }

    /// A leaf holding `items`, whose visible counts are `counts`.
    fn from_parts(items: Vec<Item>, counts: Counts) -> Chunk {
        debug_assert_eq!(counts, counts_of(&items));
        Chunk { items, counts }
    }

    /// Whether the leaf holds [`CHUNK_CAP`] items (or more).
    pub fn is_full(&self) -> bool {
        self.items.len() >= CHUNK_CAP
    }

    /// The item holding visible unit `offset` (chunk-relative) and the units
    /// of that item before it: `(index, units before the item)`.
    pub fn find_unit(&self, unit: Unit, offset: u32) -> (usize, Counts) {
        let mut before = Counts::default();
        for (i, item) in self.items.iter().enumerate() {
            let c = item.counts();
            if offset < before.get(unit) + c.get(unit) {
                return (i, before);
            }
            before.add(c);
        }
        unreachable!("offset {offset} {unit} is inside the chunk")
    }

    /// Index of the item holding `seq`.
    pub fn find_seq(&self, seq: Seq) -> Option<usize> {
        self.items.iter().position(|item| item.contains(seq))
    }

    /// Inserts `item` at `index`, merging it into its left neighbour when
    /// possible. Returns the index holding it. The chunk must have room.
    pub fn insert(&mut self, index: usize, item: Item) -> usize {
        self.counts.add(item.counts());
        if index > 0 && self.items[index - 1].can_append(&item) {
            self.items[index - 1].append(&item);
            return index - 1;
        }
        debug_assert!(!self.is_full());
        self.items.insert(index, item);
        index
    }

    /// Merges `items[index]` into `items[index - 1]` if they form one run.
    /// Returns the index now holding the chars of `items[index]`.
    pub fn merge_left(&mut self, index: usize) -> usize {
        if index > 0 && index < self.items.len() {
            let (left, right) = self.items.split_at_mut(index);
            let prev = &mut left[index - 1];
            if prev.can_append(&right[0]) {
                prev.append(&right[0]);
                self.items.remove(index);
                return index - 1;
            }
        }
        index
    }

    /// Takes `items[at..]` out of the chunk (no allocation).
    pub fn take_tail(&mut self, at: usize) -> SmallVec<[Item; CHUNK_CAP]> {
        let tail: SmallVec<[Item; CHUNK_CAP]> = self.items.drain(at..).collect();
        self.counts.sub(counts_of(&tail));
        tail
    }

    /// Takes `items[..at]` out of the chunk (no allocation).
    pub fn take_head(&mut self, at: usize) -> SmallVec<[Item; CHUNK_CAP]> {
        let head: SmallVec<[Item; CHUNK_CAP]> = self.items.drain(..at).collect();
        self.counts.sub(counts_of(&head));
        head
    }

    /// Puts `items` after the chunk's items. The chunk must have room.
    pub fn append(&mut self, items: &[Item]) {
        debug_assert!(self.items.len() + items.len() <= CHUNK_CAP);
        self.items.extend_from_slice(items);
        self.counts.add(counts_of(items));
    }

    /// Puts `items` before the chunk's items. The chunk must have room.
    pub fn prepend(&mut self, items: &[Item]) {
        debug_assert!(self.items.len() + items.len() <= CHUNK_CAP);
        self.items.splice(0..0, items.iter().copied());
        self.counts.add(counts_of(items));
    }

    /// Moves `items[at..]` into a new chunk.
    pub fn split_off(&mut self, at: usize) -> Chunk {
        // Not `Vec::split_off`: its exact-size vector would need a second
        // allocation to grow to a leaf's capacity.
        let tail = Chunk::new(&self.items[at..]);
        self.items.truncate(at);
        self.counts.sub(tail.counts);
        tail
    }
}

impl Clone for Chunk {
    /// A copy with a leaf's full capacity (a derived clone would allocate
    /// an exact-size vector, and grow it again on the next insert).
    fn clone(&self) -> Chunk {
        Chunk::new(&self.items)
    }
}

/// Builds the leaves of a text's tree from its chars in document order,
/// leaf by leaf, without a list of all items in between (what building a
/// big text from a snapshot spends its time on: a few hundred MB of
/// memory touched for a few million chars otherwise). Chars only: a text
/// with style anchors is built with [`super::TextState::install`].
#[derive(Debug, Default)]
pub(crate) struct TreeBuilder {
    pub(super) leaves: Vec<Chunk>,
    leaf: Vec<Item>,
    /// Visible counts of `leaf`.
    leaf_counts: Counts,
    /// Visible counts of `leaves`.
    counts: Counts,
}

impl TreeBuilder {
    /// A builder with room for the leaves of about `items` items.
    pub fn with_capacity(items: usize) -> TreeBuilder {
        TreeBuilder {
            leaves: Vec::with_capacity(items / super::BULK_FILL + 1),
            ..TreeBuilder::default()
        }
    }

    /// Appends the next item (not an anchor).
    #[inline]
    pub fn push(&mut self, item: Item) {
        debug_assert!(!item.is_anchor());
        if self.leaf.capacity() == 0 {
            // Exactly the items it gets: most leaves of a big text are
            // never edited, and touching fresh memory (page faults) was
            // most of building it. An edited leaf grows on its first
            // insert.
            self.leaf = Vec::with_capacity(super::BULK_FILL);
        }
        // Without a branch on `deleted`: in a snapshot's text visible and
        // deleted runs alternate, and mispredicting it cost more than
        // the rest of the sum.
        let visible = 0u32.wrapping_sub(u32::from(!item.deleted));
        self.leaf_counts.chars += item.len & visible;
        self.leaf_counts.utf8 += item.bytes & visible;
        self.leaf_counts.utf16 += item.utf16 & visible;
        self.leaf.push(item);
        if self.leaf.len() == super::BULK_FILL {
            self.flush();
        }
    }

    /// The visible counts of the items pushed so far.
    pub fn counts(&self) -> Counts {
        let mut counts = self.counts;
        counts.add(self.leaf_counts);
        counts
    }

    /// Closes the last, partly filled leaf.
    pub(super) fn flush(&mut self) {
        if !self.leaf.is_empty() {
            let counts = std::mem::take(&mut self.leaf_counts);
            self.counts.add(counts);
            let leaf = Chunk::from_parts(std::mem::take(&mut self.leaf), counts);
            self.leaves.push(leaf);
        }
    }
}

/// The summed counts of `items`.
pub(crate) fn counts_of(items: &[Item]) -> Counts {
    let mut counts = Counts::default();
    for item in items {
        counts.add(item.counts());
    }
    counts
}

impl HasLength for Chunk {
    /// A chunk's length for the b-tree is its item count (offsets into a leaf
    /// are item indexes).
    fn rle_len(&self) -> usize {
        self.items.len()
    }
}

impl Sliceable for Chunk {
    fn _slice(&self, range: std::ops::Range<usize>) -> Self {
        Chunk::new(self.items.get(range).unwrap_or(&[]))
    }
}

impl Mergeable for Chunk {
    // Leaves are never merged by the tree: the id index tracks which leaf
    // holds which item, and moving items is this crate's decision alone.
    fn can_merge(&self, _rhs: &Self) -> bool {
        false
    }
    fn merge_right(&mut self, _rhs: &Self) {
        unreachable!("chunks never merge")
    }
    fn merge_left(&mut self, _left: &Self) {
        unreachable!("chunks never merge")
    }
}

impl TryInsert for Chunk {
    fn try_insert(&mut self, _pos: usize, elem: Self) -> Result<(), Self> {
        Err(elem)
    }
}

impl CanRemove for Chunk {
    fn can_remove(&self) -> bool {
        self.items.is_empty()
    }
}

/// `generic-btree` configuration for the text tree.
#[derive(Debug)]
pub(crate) struct ChunkTree;

impl BTreeTrait for ChunkTree {
    type Elem = Chunk;
    type Cache = Counts;
    type CacheDiff = CacheDiff;
    const USE_DIFF: bool = true;

    fn calc_cache_internal(cache: &mut Counts, children: &[Child<Self>]) -> CacheDiff {
        let mut sum = Counts::default();
        for child in children {
            sum.add(*child.cache());
        }
        let diff = sum.diff(*cache);
        *cache = sum;
        diff
    }

    fn apply_cache_diff(cache: &mut Counts, diff: &CacheDiff) {
        diff.apply(cache);
    }

    fn merge_cache_diff(diff1: &mut CacheDiff, diff2: &CacheDiff) {
        diff1.chars = diff1.chars.wrapping_add(diff2.chars);
        diff1.utf8 = diff1.utf8.wrapping_add(diff2.utf8);
        diff1.utf16 = diff1.utf16.wrapping_add(diff2.utf16);
        diff1.anchors = diff1.anchors.wrapping_add(diff2.anchors);
    }

    fn get_elem_cache(elem: &Chunk) -> Counts {
        elem.counts
    }

    fn new_cache_to_diff(cache: &Counts) -> CacheDiff {
        cache.diff(Counts::default())
    }

    fn sub_cache(lhs: &Counts, rhs: &Counts) -> CacheDiff {
        lhs.diff(*rhs)
    }
}

/// Finds the leaf holding visible unit number `target` (0-based) and sums
/// the counts of everything before that leaf.
pub(crate) struct UnitQuery {
    left: u32,
    pub before: Counts,
}

impl Query<ChunkTree> for UnitQuery {
    type QueryArg = (Unit, u32);

    fn init(&(_, target): &(Unit, u32)) -> Self {
        UnitQuery {
            left: target,
            before: Counts::default(),
        }
    }

    fn find_node(&mut self, &(unit, _): &(Unit, u32), children: &[Child<ChunkTree>]) -> FindResult {
        let last = children.len().saturating_sub(1);
        for (i, child) in children.iter().enumerate() {
            let n = child.cache().get(unit);
            if self.left < n || i == last {
                return FindResult::new_found(i, self.left as usize);
            }
            self.left -= n;
            self.before.add(*child.cache());
        }
        FindResult::new_missing(0, 0)
    }

    fn confirm_elem(&mut self, _: &(Unit, u32), elem: &Chunk) -> (usize, bool) {
        (0, self.left < elem.counts.chars.max(1))
    }
}
