//! The sequence CRDT of one text: items in a `generic-btree`, a seq -> leaf
//! index, and a cached cursor.
//!
//! [`TextState`] holds every char ever inserted into the text, in document
//! order, as run-length [`Item`]s; deleted chars stay as tombstones. The tree's
//! leaves are [`Chunk`]s of up to [`CHUNK_CAP`] items; internal nodes cache
//! visible counts in chars, UTF-8 bytes and UTF-16 units.
//!
//! **Cached cursor.** The leaf of the last local edit is the *focus*: its
//! counts may be ahead of what its ancestors cache (they are pushed up by
//! [`TextState::flush`] when another leaf is touched), and the counts of
//! everything before it are known (`start`), so edits near the last one
//! never descend from the root. While the focus also remembers the item just
//! typed (`extend`), the next keystroke after it only grows that item.
//!
//! **Styles.** A mark is two zero-width anchor items in the sequence (see
//! [`crate::style`]), each glued to a char: right after it with the other
//! anchors glued there, or right before it. Chars never take anchors as
//! origins, and integration steps over anchors, so the order of chars is
//! FugueMax alone. The tree counts anchors beside the chars (chars +
//! anchors = the entity count), so the anchors before a char are a prefix
//! of the document-order list `anchors` whose length takes O(log n); that
//! list is itself a b-tree ([`anchors`]) whose nodes summarise the marks
//! they open and close, so the marks active at a char take O(log n) too,
//! however many marks come before it.
//!
//! **Plain-text fast path.** While a text has no anchors (`anchors` is
//! empty), a char position maps straight to the visible-char counts the
//! tree caches and a local insert goes right after the char before it; no
//! step looks at styles. The first mark switches that text, and only that
//! text, to the general path.
//!
//! Invariants (checked by [`TextState::assert_invariants`]): no empty leaf;
//! every cached count equals the sum below it, except the focus leaf's
//! pending difference; every char seq maps, through the index, to the leaf
//! holding it.

mod anchors;
mod blocks;
mod changes;
mod chunk;
mod gap;
mod handle;
mod index;
mod integrate;
mod item;
mod position;
mod segments;
mod stored;
mod style;
mod table;
mod view;

use crate::oplog::CharText;
pub use blocks::Block;
pub(crate) use changes::render;
pub(crate) use chunk::{Counts, TreeBuilder};
pub use handle::Text;
pub(crate) use item::{Item, ANCHOR_END, STICKS_LEFT};
pub(crate) use segments::{fill_origins, items_from_history, PlainBuilder, Segment};
pub(crate) use stored::{style_spans, StoredStyles, StyleSpan};
pub(crate) use table::TextTable;
pub(crate) use view::LoadsOnSide;
pub use view::TextRef;

use std::ops::Range;
use std::sync::OnceLock;

use generic_btree::{BTree, Cursor, LeafIndex};
use smallvec::SmallVec;

use crate::error::{Error, Result};
use crate::id::{MarkIdx, Seq, NO_SEQ};
use crate::unit::{char_len, utf16_len, Unit};

use anchors::{Anchor, AnchorTree};
use chunk::{Chunk, ChunkTree, UnitQuery, CHUNK_CAP};
use index::IdIndex;

/// The part of a lazily imported snapshot a [`Text`] handle needs: the
/// stored copy of a text still unloaded, and loading the history and the
/// text's tree before its first edit. The document implements it
/// (`doc::lazy`), so this module knows nothing of how snapshots are
/// stored.
pub(crate) trait TextSource: Sync {
    /// The stored visible text of snapshot text `index`, in document
    /// order (`log` is the document's: once it holds the snapshot's
    /// texts, they are read from there).
    fn stored_text<'a>(&'a self, log: &'a crate::oplog::OpLog, index: u32) -> Result<&'a str>;

    /// The stored styles of snapshot text `index` (see [`StoredStyles`]),
    /// if the snapshot has them and they decode: a text with marks reads
    /// from its stored copy only with them.
    fn stored_styles(&self, index: u32) -> Option<&StoredStyles>;

    /// Loads what an operation of kind `need` on text `text` (whose state
    /// is `state`) needs: the history (or for typing, possibly only its
    /// change table) and the text's tree. On error nothing changed.
    fn load_text(
        &mut self,
        log: &mut crate::oplog::OpLog,
        state: &mut TextState,
        text: crate::id::TextIdx,
        need: Need,
    ) -> Result<()>;
}

/// What a [`Text`] operation needs of a lazily imported snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Need {
    /// Local inserts and deletes: the text's tree and the change table
    /// (not the history's op runs, for a text without marks).
    Typing,
    /// Everything: the history too (marks, anything reading origins).
    Everything,
}

/// The least room a neighbouring leaf needs to take items from a full one
/// (else the full one splits): moving a few items at a time would move
/// them again on the next insert. Half a leaf; with a quarter, B4's leaves
/// were fuller (552 allocations, 1.26 MiB of heap, against 633 and 1.34
/// MiB) but its apply took 1.5% more instructions (0.2% with half).
const SPILL_MIN: usize = if CHUNK_CAP >= 8 { CHUNK_CAP / 2 } else { 1 };

/// Points `index` at `leaf` for the chars of `items` (which moved there).
fn reassign(index: &mut IdIndex, items: &[Item], leaf: LeafIndex) {
    let mut moved: SmallVec<[Range<Seq>; CHUNK_CAP]> =
        items.iter().map(|i| i.seq..i.end()).collect();
    moved.sort_unstable_by_key(|r| r.start);
    let mut i = 0;
    while i < moved.len() {
        let mut range = moved[i].clone();
        i += 1;
        while i < moved.len() && moved[i].start == range.end {
            range.end = moved[i].end;
            i += 1;
        }
        index.assign(range, leaf);
    }
}

/// The focus leaf (see the module doc).
#[derive(Debug, Clone, Copy)]
struct Focus {
    leaf: LeafIndex,
    /// Visible counts of everything before the leaf. `None` while remote
    /// ops are applied (they find items by id, not by position).
    start: Option<Counts>,
    /// The leaf's counts as its ancestors currently cache them.
    flushed: Counts,
    /// Typing at char `pos` can grow item `item` of the leaf.
    extend: Option<(u32, usize)>,
}

/// The CRDT state of one text. See the module doc.
#[derive(Debug, Clone)]
pub(crate) struct TextState {
    name: Box<str>,
    tree: BTree<ChunkTree>,
    /// Built on first use by a remote op: a text only ever edited locally
    /// never needs to find chars by id.
    index: OnceLock<IdIndex>,
    focus: Option<Focus>,
    /// Every style anchor, in document order (their relative order never
    /// changes once placed). Empty for plain text: then no position ever
    /// looks at styles.
    anchors: AnchorTree,
    /// Marks without text that the last local insert could not avoid
    /// (see [`TextState::take_resurrected`]).
    resurrected: SmallVec<[MarkIdx; 2]>,
    /// Set while the text lives only in a lazily imported snapshot (the
    /// tree is empty until it is built from there).
    unloaded: Option<Unloaded>,
    /// While an import's change event is being recorded: the chars remote
    /// deletes turned from visible to deleted (see `changes.rs`).
    deletions: Option<Vec<Range<Seq>>>,
}

/// A text not yet built from its snapshot: which one, and its counts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Unloaded {
    /// Index of the text in the snapshot.
    pub index: u32,
    /// Visible counts (and anchors) of the text.
    pub counts: Counts,
}

/// Items per leaf when a tree is built in bulk: room to type in each
/// leaf before it splits.
const BULK_FILL: usize = CHUNK_CAP * 3 / 4;

/// Where a new local insert goes: after `index - 1` in `leaf`.
#[derive(Debug, Clone, Copy)]
struct InsertPoint {
    leaf: LeafIndex,
    index: usize,
    origin_left: Seq,
}

impl TextState {
    pub fn new(name: &str) -> Self {
        TextState {
            name: name.into(),
            tree: BTree::new(),
            index: OnceLock::new(),
            focus: None,
            anchors: AnchorTree::default(),
            resurrected: SmallVec::new(),
            unloaded: None,
            deletions: None,
        }
    }

    /// The snapshot text this one still waits for, if any.
    #[inline]
    pub fn unloaded(&self) -> Option<Unloaded> {
        self.unloaded
    }

    /// Marks the (empty) text as living in a snapshot until built.
    pub fn set_unloaded(&mut self, unloaded: Unloaded) {
        self.unloaded = Some(unloaded);
    }

    /// Replaces the content with `items` (in document order), building the
    /// tree and the anchor tree bottom-up in one pass. Clears the unloaded
    /// mark.
    pub fn install(&mut self, items: Vec<Item>) {
        let anchors = AnchorTree::from_anchors(anchors_of(&items));
        let tree = items.chunks(BULK_FILL).map(Chunk::new).collect();
        self.replace_tree(tree, anchors);
    }

    /// Replaces the tree with the leaves `built` (chars only).
    pub fn install_built(&mut self, mut built: TreeBuilder) {
        built.flush();
        self.replace_tree(built.leaves.into_iter().collect(), AnchorTree::default());
    }

    /// Makes `tree` (with its anchors) the text's content, dropping what
    /// was derived from the old one. Clears the unloaded mark.
    fn replace_tree(&mut self, tree: BTree<ChunkTree>, anchors: AnchorTree) {
        self.tree = tree;
        self.index = OnceLock::new();
        self.focus = None;
        self.anchors = anchors;
        self.resurrected.clear();
        self.unloaded = None;
    }

    /// Whether the text holds nothing at all: no chars, no tombstones,
    /// no anchors, and no snapshot text waiting to be built.
    pub fn is_blank(&self) -> bool {
        self.unloaded.is_none() && self.anchors.is_empty() && self.items().next().is_none()
    }

    /// Every item in document order.
    pub fn items(&self) -> impl Iterator<Item = &Item> + '_ {
        self.tree.iter().flat_map(|c| c.items.iter())
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    fn chunk(&self, leaf: LeafIndex) -> &Chunk {
        self.tree.get_elem(leaf).expect("leaves are never removed")
    }

    fn chunk_mut(&mut self, leaf: LeafIndex) -> &mut Chunk {
        self.tree
            .get_elem_mut(leaf)
            .expect("leaves are never removed")
    }

    #[inline]
    fn index_push(&mut self, seq: Seq, leaf: LeafIndex) {
        if let Some(index) = self.index.get_mut() {
            index.push(seq, leaf);
        }
    }

    /// The id index, built on first use (also through `&self`: a cursor
    /// resolved through a shared document needs it). O(n log n) once per
    /// text; afterwards every edit keeps it up to date.
    fn index(&self) -> &IdIndex {
        self.index.get_or_init(|| self.new_index())
    }

    /// Builds the seq -> leaf index if it does not exist yet (before remote
    /// ops, which find chars by id).
    pub fn build_index(&mut self) {
        self.index();
    }

    /// A seq -> leaf index of the current tree.
    fn new_index(&self) -> IdIndex {
        let mut runs: Vec<(Seq, LeafIndex)> = Vec::new();
        let mut leaf = self.tree.first_leaf();
        while let Some(l) = leaf {
            runs.extend(self.chunk(l).items.iter().map(|i| (i.seq, l)));
            leaf = self.next_leaf(l);
        }
        runs.sort_unstable_by_key(|r| r.0);
        let mut index = IdIndex::default();
        for (seq, leaf) in runs {
            index.push(seq, leaf);
        }
        index
    }

    /// Visible length in `unit`, also while the text is unloaded (see
    /// [`Unloaded`]).
    #[inline]
    pub fn visible_len(&self, unit: Unit) -> u32 {
        match &self.unloaded {
            Some(u) => u.counts.get(unit),
            None => self.len(unit),
        }
    }

    /// Visible length in `unit` of the tree (0 while unloaded).
    #[inline]
    pub fn len(&self, unit: Unit) -> u32 {
        let mut total = *self.tree.root_cache();
        if let Some(f) = &self.focus {
            total.sub(f.flushed);
            total.add(self.chunk(f.leaf).counts);
        }
        total.get(unit)
    }

    /// Pushes the focus leaf's pending count change up the tree.
    fn flush(&mut self) {
        if let Some(f) = &mut self.focus {
            let counts = self
                .tree
                .get_elem(f.leaf)
                .expect("focus leaf exists")
                .counts;
            if counts != f.flushed {
                let diff = counts.diff(f.flushed);
                f.flushed = counts;
                self.tree
                    .recursive_update_cache(f.leaf.into(), true, Some(diff));
            }
        }
    }

    /// Makes `leaf` the focus; `start` is the visible count before it, if
    /// known.
    fn set_focus(&mut self, leaf: LeafIndex, start: Option<Counts>) {
        match &mut self.focus {
            Some(f) if f.leaf == leaf => {
                f.start = start;
                f.extend = None;
            }
            _ => {
                self.flush();
                self.focus = Some(Focus {
                    leaf,
                    start,
                    flushed: self.chunk(leaf).counts,
                    extend: None,
                });
            }
        }
    }

    /// Forgets the focus after flushing it (before and after remote ops).
    pub fn drop_focus(&mut self) {
        self.flush();
        self.focus = None;
    }

    /// The leaf holding visible unit `target` (< len) and the counts before
    /// it. Accounts for the focus leaf's unflushed counts.
    fn locate(&self, unit: Unit, target: u32) -> (LeafIndex, Counts) {
        let mut target = target;
        let mut adjust = None;
        if let Some(f) = &self.focus {
            let start = f
                .start
                .expect("positions are only used with a known focus start");
            let counts = self.chunk(f.leaf).counts;
            let lo = start.get(unit);
            if target >= lo && target < lo + counts.get(unit) {
                return (f.leaf, start);
            }
            if target >= lo + counts.get(unit) {
                // The ancestors still count the leaf with its flushed size.
                target = target - counts.get(unit) + f.flushed.get(unit);
                adjust = Some((counts, f.flushed));
            }
        }
        let (found, q) = self
            .tree
            .query_with_finder_return::<UnitQuery>(&(unit, target));
        let leaf = found.expect("target is inside a non-empty tree").leaf();
        let mut before = q.before;
        if let Some((counts, flushed)) = adjust {
            before.add(counts);
            before.sub(flushed);
        }
        (leaf, before)
    }

    /// Start counts of the leaf after `leaf` (which must have a known start).
    fn start_after(&self, leaf: LeafIndex) -> Option<Counts> {
        let f = self.focus.as_ref()?;
        debug_assert_eq!(f.leaf, leaf);
        let mut s = f.start?;
        s.add(self.chunk(leaf).counts);
        Some(s)
    }

    fn next_leaf(&self, leaf: LeafIndex) -> Option<LeafIndex> {
        self.tree
            .next_elem(generic_btree::Cursor { leaf, offset: 0 })
            .map(|c| c.leaf)
    }

    /// Splits `leaf` so that items `at..` move to a new leaf right after it;
    /// keeps the index and the focus right. Returns the new leaf.
    fn split_leaf(&mut self, leaf: LeafIndex, at: usize) -> LeafIndex {
        self.flush();
        let (_, split) = self.tree.update_leaf(leaf, |chunk| {
            let tail = chunk.split_off(at);
            (true, Some(tail), None)
        });
        let new_leaf = *split.arr.first().expect("update_leaf inserted the tail");
        self.reassign_all(new_leaf);
        let counts = self.chunk(leaf).counts;
        if let Some(f) = &mut self.focus {
            if f.leaf == leaf {
                f.flushed = counts;
                f.extend = None;
            }
        }
        new_leaf
    }

    /// Points the id index at `leaf` for the chars of all its items (after
    /// they moved there).
    fn reassign_all(&mut self, leaf: LeafIndex) {
        if let Some(index) = self.index.get_mut() {
            let chunk = self.tree.get_elem(leaf).expect("leaf exists");
            reassign(index, &chunk.items, leaf);
        }
    }

    /// Makes room for `needed` more items in `leaf` by moving some of its
    /// last items (those after item `index`) to the start of the next leaf,
    /// when that has room for them; the two leaves share their items about
    /// evenly. Leaves stay fuller than when every full leaf splits in two
    /// (B4: with [`TextState::spill_left`], 633 allocations instead of
    /// 717, nearly all of them leaves, and 1.34 MiB of heap instead of
    /// 1.43 MiB). Returns false (and changes nothing) when the items do not
    /// fit.
    fn spill_right(&mut self, leaf: LeafIndex, index: usize, needed: usize) -> bool {
        let Some(next) = self.next_leaf(leaf) else {
            return false;
        };
        let len = self.chunk(leaf).items.len();
        let next_len = self.chunk(next).items.len();
        let room = CHUNK_CAP - next_len;
        if room < SPILL_MIN {
            return false;
        }
        // Keep `at` items: item `index` and those before it (the place
        // stays here), at most what leaves room for `needed`, and move no
        // more than fit.
        let lo = (index + 1).max(len.saturating_sub(room));
        let hi = CHUNK_CAP.saturating_sub(needed);
        if lo > hi || lo >= len {
            return false;
        }
        let at = ((len + next_len) / 2).clamp(lo, hi);
        self.flush();
        let mut tail = SmallVec::new();
        self.tree.update_leaf(leaf, |chunk| {
            tail = chunk.take_tail(at);
            (true, None, None)
        });
        self.tree.update_leaf(next, |chunk| {
            chunk.prepend(&tail);
            (true, None, None)
        });
        self.after_spill(leaf, next, &tail, true);
        true
    }

    /// As [`TextState::spill_right`], to the end of the previous leaf
    /// (the items before item `index`). Returns the item's new index.
    fn spill_left(&mut self, leaf: LeafIndex, index: usize, needed: usize) -> Option<usize> {
        let prev = self.tree.prev_elem(Cursor { leaf, offset: 0 })?.leaf;
        let len = self.chunk(leaf).items.len();
        let prev_len = self.chunk(prev).items.len();
        let room = CHUNK_CAP - prev_len;
        if room < SPILL_MIN {
            return None;
        }
        // Move `k` items: at most those before item `index` and what fits,
        // at least what leaves room for `needed`.
        let lo = (len + needed).saturating_sub(CHUNK_CAP);
        let hi = index.min(room);
        if lo > hi || hi == 0 {
            return None;
        }
        let k = (len.saturating_sub(prev_len) / 2).clamp(lo.max(1), hi);
        self.flush();
        let mut head = SmallVec::new();
        self.tree.update_leaf(leaf, |chunk| {
            head = chunk.take_head(k);
            (true, None, None)
        });
        self.tree.update_leaf(prev, |chunk| {
            chunk.append(&head);
            (true, None, None)
        });
        self.after_spill(leaf, prev, &head, false);
        Some(index - k)
    }

    /// After `moved` items went from `from` to its neighbour `to` (the
    /// next leaf, to its start, when `rightward`; else the previous leaf,
    /// to its end): the id index and the focus follow. The leaf after the
    /// boundary starts `moved` earlier (rightward) or later.
    fn after_spill(&mut self, from: LeafIndex, to: LeafIndex, moved: &[Item], rightward: bool) {
        if let Some(index) = self.index.get_mut() {
            reassign(index, moved, to);
        }
        let (from_counts, to_counts) = (self.chunk(from).counts, self.chunk(to).counts);
        let Some(f) = &mut self.focus else {
            return;
        };
        // The leaf after the boundary: its start moved.
        let after = if rightward { to } else { from };
        if f.leaf == from {
            f.flushed = from_counts;
        } else if f.leaf == to {
            f.flushed = to_counts;
        } else {
            return;
        }
        f.extend = None;
        if f.leaf == after {
            if let Some(start) = &mut f.start {
                if rightward {
                    start.sub(chunk::counts_of(moved));
                } else {
                    start.add(chunk::counts_of(moved));
                }
            }
        }
    }

    /// Ensures the leaf holding item `(leaf, index)` has room for `needed`
    /// more items, moving items to a neighbouring leaf or splitting it if
    /// not. Returns the item's new place and moves the focus there.
    fn make_room(&mut self, leaf: LeafIndex, index: usize, needed: usize) -> (LeafIndex, usize) {
        let len = self.chunk(leaf).items.len();
        if len + needed <= CHUNK_CAP || self.spill_right(leaf, index, needed) {
            return (leaf, index);
        }
        if let Some(index) = self.spill_left(leaf, index, needed) {
            return (leaf, index);
        }
        // Move as few items as possible (each move updates the id index):
        // split right before the item when it is in the back half.
        let at = if index >= len / 2 && index < len {
            index
        } else {
            len / 2
        };
        let new_leaf = self.split_leaf(leaf, at);
        if index < at {
            (leaf, index)
        } else {
            let start = self.start_after(leaf);
            self.set_focus(new_leaf, start);
            (new_leaf, index - at)
        }
    }

    /// Inserts a new item (with the newest seqs) before item `index` of
    /// `leaf`, the focus. Returns where it ended up (merged into its left
    /// neighbour when it continues it).
    fn insert_item(&mut self, leaf: LeafIndex, index: usize, item: Item) -> (LeafIndex, usize) {
        let chunk = self.chunk(leaf);
        let mergeable = index > 0 && chunk.items[index - 1].can_append(&item);
        let (leaf, index) = if !mergeable && chunk.is_full() {
            if index == chunk.items.len() {
                // Appending at a full leaf: start a new leaf instead of
                // moving half of this one.
                self.flush();
                let (_, split) = self
                    .tree
                    .update_leaf(leaf, |_| (false, Some(Chunk::new(&[item])), None));
                let new_leaf = *split.arr.first().expect("update_leaf inserted the leaf");
                self.index_push(item.seq, new_leaf);
                let start = self.start_after(leaf);
                self.set_focus(new_leaf, start);
                return (new_leaf, 0);
            }
            self.make_room(leaf, index, 1)
        } else {
            (leaf, index)
        };
        let at = self.chunk_mut(leaf).insert(index, item);
        self.index_push(item.seq, leaf);
        (leaf, at)
    }

    /// Where a local insert at visible char `pos` goes: right after the
    /// visible char `pos - 1` (before any tombstones that follow it), or at
    /// the very start. Splits the item holding that char if needed and
    /// focuses the leaf.
    fn local_insert_point(&mut self, pos: u32, content: &str) -> InsertPoint {
        if pos == 0 {
            let leaf = self.tree.first_leaf().expect("tree is not empty");
            self.set_focus(leaf, Some(Counts::default()));
            return InsertPoint {
                leaf,
                index: 0,
                origin_left: NO_SEQ,
            };
        }
        let (leaf, start) = self.locate(Unit::Char, pos - 1);
        self.set_focus(leaf, Some(start));
        let offset = pos - 1 - start.chars;
        let (i, before) = self.chunk(leaf).find_unit(Unit::Char, offset);
        let o = offset - before.chars;
        let item = self.chunk(leaf).items[i];
        let origin_left = item.seq + o;
        if o + 1 < item.len {
            // The new text lands inside the item: split it (and make room
            // for the split and the new item).
            let (leaf, i) = self.make_room(leaf, i, 2);
            let chunk = self.chunk_mut(leaf);
            let right = chunk.items[i].split(o + 1, content.as_bytes());
            chunk.items.insert(i + 1, right);
            return InsertPoint {
                leaf,
                index: i + 1,
                origin_left,
            };
        }
        InsertPoint {
            leaf,
            index: i + 1,
            origin_left,
        }
    }

    /// The first item at or after `(leaf, index)`, as a seq.
    fn seq_at_or_after(&self, leaf: LeafIndex, index: usize) -> Seq {
        if let Some(item) = self.chunk(leaf).items.get(index) {
            return item.seq;
        }
        self.next_leaf(leaf)
            .and_then(|l| self.chunk(l).items.first())
            .map_or(NO_SEQ, |i| i.seq)
    }

    /// Inserts the new local run `item` at visible char `pos` (<= len) and
    /// returns its `(origin_left, origin_right)`.
    // Inlined into `Text::insert` (see there); the styled path is out of
    // line in `styled_insert`.
    #[inline(always)]
    pub fn local_insert(&mut self, pos: u32, item: Item, content: &str) -> (Seq, Seq) {
        if let Some(f) = &mut self.focus {
            if let Some((at, index)) = f.extend {
                if at == pos {
                    let chunk = self.tree.get_elem_mut(f.leaf).expect("focus leaf exists");
                    let prev = &mut chunk.items[index];
                    if prev.end() == item.seq && prev.byte_start + prev.bytes == item.byte_start {
                        let origins = (prev.end() - 1, prev.origin_right);
                        prev.append(&item);
                        chunk.counts.add(item.counts());
                        f.extend = Some((pos + item.len, index));
                        return origins;
                    }
                }
            }
        }
        let mut item = item;
        if self.tree.is_empty() {
            item.origin_left = NO_SEQ;
            item.origin_right = NO_SEQ;
            let cursor = self.tree.push(Chunk::new(&[item]));
            self.index_push(item.seq, cursor.leaf);
            self.focus = Some(Focus {
                leaf: cursor.leaf,
                start: Some(Counts::default()),
                flushed: item.counts(),
                extend: Some((pos + item.len, 0)),
            });
            return (NO_SEQ, NO_SEQ);
        }
        if !self.anchors.is_empty() {
            return self.styled_insert(pos, item, content);
        }
        let point = self.local_insert_point(pos, content);
        item.origin_left = point.origin_left;
        item.origin_right = self.seq_at_or_after(point.leaf, point.index);
        let (leaf, index) = self.insert_item(point.leaf, point.index, item);
        let f = self.focus.as_mut().expect("insert focuses its leaf");
        debug_assert_eq!(f.leaf, leaf);
        f.extend = Some((pos + item.len, index));
        (item.origin_left, item.origin_right)
    }

    /// Marks chars `o..o + k` of item `(leaf, i)` deleted (the item must be
    /// visible), pushing their seqs to `out`. Returns the place right after
    /// them.
    fn delete_in_item(
        &mut self,
        leaf: LeafIndex,
        i: usize,
        o: u32,
        k: u32,
        content: &str,
        out: &mut Vec<Range<Seq>>,
    ) -> (LeafIndex, usize) {
        let chunk = self.chunk_mut(leaf);
        let item = chunk.items[i];
        // Backspacing and forward-deleting grow a neighbouring tombstone of
        // the same run instead of splitting the item.
        if o > 0 && o + k == item.len {
            if let Some(next) = chunk.items.get(i + 1) {
                if next.deleted && item.continues_into(next) {
                    let next = *next;
                    let mut dead = chunk.items[i].split(o, content.as_bytes());
                    chunk.counts.sub(dead.counts());
                    dead.deleted = true;
                    out.push(dead.seq..dead.end());
                    dead.append(&next);
                    chunk.items[i + 1] = dead;
                    return (leaf, i + 1);
                }
            }
        }
        if o == 0 && k < item.len && i > 0 {
            let prev = chunk.items[i - 1];
            if prev.deleted && prev.continues_into(&item) {
                let rest = chunk.items[i].split(k, content.as_bytes());
                let mut dead = chunk.items[i];
                chunk.counts.sub(dead.counts());
                dead.deleted = true;
                out.push(dead.seq..dead.end());
                chunk.items[i - 1].append(&dead);
                chunk.items[i] = rest;
                return (leaf, i);
            }
        }
        let needed = usize::from(o > 0) + usize::from(o + k < item.len);
        let (leaf, mut i) = self.make_room(leaf, i, needed);
        let chunk = self.chunk_mut(leaf);
        if o > 0 {
            let right = chunk.items[i].split(o, content.as_bytes());
            chunk.items.insert(i + 1, right);
            i += 1;
        }
        if k < chunk.items[i].len {
            let right = chunk.items[i].split(k, content.as_bytes());
            chunk.items.insert(i + 1, right);
        }
        let target = &mut chunk.items[i];
        let counts = target.counts();
        target.deleted = true;
        out.push(target.seq..target.end());
        chunk.counts.sub(counts);
        chunk.merge_left(i + 1);
        let i = chunk.merge_left(i);
        (leaf, i + 1)
    }

    /// Deletes visible chars `pos..pos + len` (in bounds), pushing the seqs
    /// of the deleted chars to `out` in document order.
    pub fn local_delete(&mut self, pos: u32, len: u32, content: &str, out: &mut Vec<Range<Seq>>) {
        let (mut leaf, start) = self.locate(Unit::Char, pos);
        self.set_focus(leaf, Some(start));
        let offset = pos - start.chars;
        let (mut i, before) = self.chunk(leaf).find_unit(Unit::Char, offset);
        let mut o = offset - before.chars;
        let mut left = len;
        while left > 0 {
            let Some(item) = self.chunk(leaf).items.get(i).copied() else {
                let next = self.next_leaf(leaf).expect("deleted range is in bounds");
                let start = self.start_after(leaf);
                self.set_focus(next, start);
                leaf = next;
                i = 0;
                continue;
            };
            if !item.is_visible_text() {
                i += 1;
                o = 0;
                continue;
            }
            let k = left.min(item.len - o);
            (leaf, i) = self.delete_in_item(leaf, i, o, k, content, out);
            left -= k;
            o = 0;
        }
    }

    /// Marks the chars with seqs `targets` deleted (remote delete). Chars
    /// already deleted stay so.
    pub fn remote_delete(&mut self, targets: Range<Seq>, content: &str) {
        self.build_index();
        let mut seq = targets.start;
        let mut scratch = Vec::new();
        while seq < targets.end {
            let (leaf, i, _) = self.position_of(seq);
            let item = self.chunk(leaf).items[i];
            let o = seq - item.seq;
            let k = (targets.end - seq).min(item.len - o);
            if item.is_visible_text() {
                if let Some(d) = &mut self.deletions {
                    d.push(seq..seq + k);
                }
                self.set_focus(leaf, None);
                scratch.clear();
                self.delete_in_item(leaf, i, o, k, content, &mut scratch);
            }
            seq += k;
        }
    }

    /// Shows the deleted chars of `chars` (seqs, in any order) again:
    /// what cancelling their deletes does. A deleted item without text
    /// (built from a snapshot's segments) takes it from `text_of` (the
    /// log's inserts). Chars visible already, and chars whose text this
    /// document never received, are left as they are. O(chars x log n).
    pub fn revive(
        &mut self,
        chars: &[Seq],
        content: &str,
        text_of: impl Fn(Seq) -> Option<CharText>,
    ) {
        self.build_index();
        let mut k = 0;
        while let Some(&seq) = chars.get(k) {
            k += 1;
            let (leaf, i, _) = self.position_of(seq);
            let item = self.chunk(leaf).items[i];
            if !item.contains(seq) || item.is_visible_text() || item.is_anchor() {
                continue;
            }
            // A deleted item built from a snapshot's segments has no text:
            // the log's insert has it, char by char.
            if item.byte_start == crate::oplog::NO_CONTENT {
                if let Some(text) = text_of(seq) {
                    self.set_focus(leaf, None);
                    self.revive_in_item(leaf, i, seq - item.seq, 1, content, Some(text));
                }
                continue;
            }
            // The chars after it in `chars` that follow it in the item come
            // back with it (an undone deleted word: one split, one lookup).
            let mut len = 1;
            while chars.get(k) == Some(&(seq + len)) && item.contains(seq + len) {
                len += 1;
                k += 1;
            }
            self.set_focus(leaf, None);
            self.revive_in_item(leaf, i, seq - item.seq, len, content, None);
        }
    }

    /// Makes chars `o..o + len` of deleted item `i` of `leaf` visible,
    /// splitting the item around them and merging them with visible
    /// neighbours of their run; `text` (with `len == 1`) for an item
    /// without text.
    fn revive_in_item(
        &mut self,
        leaf: LeafIndex,
        i: usize,
        o: u32,
        len: u32,
        content: &str,
        text: Option<CharText>,
    ) {
        let item = self.chunk(leaf).items[i];
        debug_assert!(len > 0 && o + len <= item.len && (text.is_none() || len == 1));
        let needed = usize::from(o > 0) + usize::from(o + len < item.len);
        let (leaf, mut i) = self.make_room(leaf, i, needed);
        let chunk = self.chunk_mut(leaf);
        if o > 0 {
            let right = chunk.items[i].split(o, content.as_bytes());
            chunk.items.insert(i + 1, right);
            i += 1;
        }
        if chunk.items[i].len > len {
            let right = chunk.items[i].split(len, content.as_bytes());
            chunk.items.insert(i + 1, right);
        }
        let target = &mut chunk.items[i];
        target.deleted = false;
        if let Some(text) = text {
            target.byte_start = text.byte_start;
            target.bytes = text.bytes;
            target.utf16 = text.utf16;
        }
        let counts = target.counts();
        chunk.counts.add(counts);
        chunk.merge_left(i + 1);
        chunk.merge_left(i);
    }

    /// Appends the visible text to `out`.
    pub fn write_to(&self, content: &str, out: &mut String) {
        for chunk in self.tree.iter() {
            for item in &chunk.items {
                if item.is_visible_text() {
                    let start = item.byte_start as usize;
                    out.push_str(&content[start..start + item.bytes as usize]);
                }
            }
        }
    }

    /// Converts visible position `pos` from unit `from` to unit `to`.
    ///
    /// # Errors
    ///
    /// [`Error::OutOfBounds`] past the end, [`Error::NotCharBoundary`] inside
    /// a char.
    pub fn convert(&self, pos: usize, from: Unit, to: Unit, content: &str) -> Result<usize> {
        let len = self.len(from) as usize;
        if pos > len {
            return Err(Error::OutOfBounds {
                pos,
                len,
                unit: from,
            });
        }
        if from == to {
            return Ok(pos);
        }
        if pos == len {
            return Ok(self.len(to) as usize);
        }
        if len == self.len(to) as usize {
            // Equal totals in two units: every visible char is one unit in
            // both (per char UTF-8 >= UTF-16 >= 1, equal only for ASCII),
            // so positions are the same. The common case of JavaScript
            // editors on ASCII text, in O(1).
            return Ok(pos);
        }
        let pos32 = pos as u32;
        let (leaf, start) = self.locate(from, pos32);
        let chunk = self.chunk(leaf);
        let (i, before) = chunk.find_unit(from, pos32 - start.get(from));
        let item = chunk.items[i];
        let rel = pos32 - start.get(from) - before.get(from);
        let start_byte = item.byte_start as usize;
        let text = &content[start_byte..start_byte + item.bytes as usize];
        let inner =
            units_within(text, from, rel).ok_or(Error::NotCharBoundary { pos, unit: from })?;
        Ok((start.get(to) + before.get(to) + inner.get(to)) as usize)
    }

    /// The visible text in char range `range` (in bounds).
    pub fn slice(&self, range: Range<u32>, content: &str) -> String {
        let mut out = String::new();
        if range.is_empty() {
            return out;
        }
        let (mut leaf, start) = self.locate(Unit::Char, range.start);
        let mut skip = range.start - start.chars;
        let mut left = range.end - range.start;
        loop {
            for item in &self.chunk(leaf).items {
                if !item.is_visible_text() || left == 0 {
                    continue;
                }
                if skip >= item.len {
                    skip -= item.len;
                    continue;
                }
                let take = (item.len - skip).min(left);
                let s = item.byte_start as usize;
                let text = &content[s..s + item.bytes as usize];
                out.push_str(
                    &text[item.byte_offset(text, skip)..item.byte_offset(text, skip + take)],
                );
                left -= take;
                skip = 0;
            }
            if left == 0 {
                return out;
            }
            leaf = self.next_leaf(leaf).expect("range is in bounds");
        }
    }

    /// The items, one per line, with ids (for debugging).
    pub fn dump(&self, log: &crate::oplog::OpLog) -> String {
        let mut out = String::new();
        let id = |s: Seq| (s < log.next_seq()).then(|| log.seq_to_id(s));
        for chunk in self.tree.iter() {
            for item in &chunk.items {
                let what = if item.is_anchor() {
                    format!(
                        "{} of mark {}{}",
                        if item.anchor & ANCHOR_END != 0 {
                            "END"
                        } else {
                            "START"
                        },
                        u32::from(item.mark()),
                        if item.anchor & STICKS_LEFT != 0 {
                            " sticks left"
                        } else {
                            " sticks right"
                        }
                    )
                } else if item.byte_start == crate::oplog::NO_CONTENT {
                    format!("{} chars without content (deleted)", item.len)
                } else {
                    let s = item.byte_start as usize;
                    format!(
                        "{:?}{}",
                        &log.content()[s..s + item.bytes as usize],
                        if item.deleted { " (deleted)" } else { "" }
                    )
                };
                out += &format!(
                    "  {} {what} L={:?} R={:?}\n",
                    log.seq_to_id(item.seq),
                    id(item.origin_left),
                    id(item.origin_right)
                );
            }
        }
        out
    }

    /// Number of items (runs), including tombstones.
    pub fn item_count(&self) -> usize {
        self.tree.iter().map(|c| c.items.len()).sum()
    }

    /// Checks the invariants listed in the module doc; panics on a broken
    /// one.
    pub fn assert_invariants(&self, content: &str) {
        assert!(
            self.resurrected.is_empty(),
            "marks to unmark never outlive the insert that found them"
        );
        let mut total = Counts::default();
        let mut seen = 0;
        for chunk in self.tree.iter() {
            assert!(!chunk.items.is_empty(), "no empty leaves");
            assert!(chunk.items.len() <= CHUNK_CAP);
            let mut counts = Counts::default();
            for item in &chunk.items {
                assert!(item.len > 0);
                if item.is_anchor() {
                    assert!(
                        item.len == 1 && item.deleted,
                        "anchors are single and hold no text"
                    );
                } else if item.byte_start != crate::oplog::NO_CONTENT {
                    let s = item.byte_start as usize;
                    let text = &content[s..s + item.bytes as usize];
                    assert_eq!(char_len(text), item.len, "item char count");
                    assert_eq!(utf16_len(text), item.utf16, "item utf16 count");
                } else {
                    assert!(item.deleted, "items without content are deleted");
                }
                counts.add(item.counts());
            }
            assert_eq!(counts, chunk.counts, "chunk counts");
            total.add(counts);
            seen += chunk.items.len();
        }
        assert_eq!(total.chars, self.len(Unit::Char));
        assert_eq!(total.utf8, self.len(Unit::Utf8));
        assert_eq!(total.utf16, self.len(Unit::Utf16));
        assert_eq!(
            total.anchors,
            self.tree.root_cache().anchors,
            "anchor counts are flushed"
        );
        let mut listed = Vec::new();
        self.anchors.for_each(|a| listed.push(*a));
        assert_eq!(
            listed,
            anchors_of(&self.items().copied().collect::<Vec<_>>()),
            "the anchor tree lists the anchors in document order"
        );
        self.anchors.assert_invariants();
        // Every item is found through the index.
        let mut leaf = self.tree.first_leaf();
        let mut checked = 0;
        while let Some(l) = leaf {
            for item in &self.chunk(l).items {
                for seq in [item.seq, item.end() - 1] {
                    if let Some(index) = self.index.get() {
                        assert_eq!(index.get(seq), Some(l), "index maps seq {seq}");
                    }
                }
                checked += 1;
            }
            leaf = self.next_leaf(l);
        }
        assert_eq!(checked, seen);
        if let Some(f) = &self.focus {
            if let Some(start) = f.start {
                let mut before = Counts::default();
                let mut leaf = self.tree.first_leaf();
                while let Some(l) = leaf {
                    if l == f.leaf {
                        break;
                    }
                    before.add(self.chunk(l).counts);
                    leaf = self.next_leaf(l);
                }
                assert_eq!(before, start, "focus start counts");
            }
        }
    }
}

/// The anchors among `items` (in document order), for the anchor tree.
fn anchors_of(items: &[Item]) -> Vec<Anchor> {
    let mut anchors = Vec::new();
    let mut chars = 0u32;
    for item in items {
        if item.is_anchor() {
            anchors.push(Anchor {
                seq: item.seq,
                mark: item.mark(),
                end: item.anchor & ANCHOR_END != 0,
                sticks_left: item.anchor & STICKS_LEFT != 0,
                chars_before: chars.min(2) as u8,
            });
            chars = 0;
        } else {
            chars = chars.saturating_add(item.len);
        }
    }
    anchors
}

/// Chars `range` of `text` (which must be in bounds).
pub(crate) fn char_slice(text: &str, range: Range<usize>) -> &str {
    let byte = |n: usize| text.char_indices().nth(n).map_or(text.len(), |(b, _)| b);
    if text.is_ascii() {
        return text.get(range).unwrap_or("");
    }
    let start = byte(range.start);
    let end = start
        + text.get(start..).map_or(0, |t| {
            t.char_indices()
                .nth(range.end - range.start)
                .map_or(t.len(), |(b, _)| b)
        });
    text.get(start..end).unwrap_or("")
}

/// Converts `pos` from `from` to `to` units in a plain string (as
/// [`TextState::convert`] does in a tree).
pub(crate) fn convert_in_str(text: &str, pos: usize, from: Unit, to: Unit) -> Result<usize> {
    let total = units_within(text, Unit::Utf8, text.len() as u32).unwrap_or_default();
    let len = total.get(from) as usize;
    if pos > len {
        return Err(Error::OutOfBounds {
            pos,
            len,
            unit: from,
        });
    }
    if from == to {
        return Ok(pos); // as the tree answers it
    }
    match units_within(text, from, pos as u32) {
        Some(c) => Ok(c.get(to) as usize),
        None => Err(Error::NotCharBoundary { pos, unit: from }),
    }
}

/// Counts (chars, UTF-8, UTF-16) of the prefix of `text` that is `rel` long
/// in `unit`, or `None` if that boundary falls inside a char.
fn units_within(text: &str, unit: Unit, rel: u32) -> Option<Counts> {
    let mut c = Counts::default();
    for ch in text.chars() {
        if c.get(unit) == rel {
            return Some(c);
        }
        if c.get(unit) > rel {
            return None;
        }
        c.chars += 1;
        c.utf8 += ch.len_utf8() as u32;
        c.utf16 += ch.len_utf16() as u32;
    }
    (c.get(unit) == rel).then_some(c)
}
