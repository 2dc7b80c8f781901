//! Style anchors in the sequence: placing them, and reading the styles
//! they give the text (see [`crate::style`] for the semantics).

use std::ops::Range;

use generic_btree::{Cursor, LeafIndex, PreviousCache};
use smallvec::SmallVec;

use crate::error::Unit;
use crate::id::{Seq, NO_SEQ};
use crate::oplog::{KeyTable, Mark, OpLog};
use crate::style::{Attributes, Delta, ExpandType};

use super::item::{Item, ANCHOR_END, STICKS_LEFT};
use super::{InsertPoint, TextState};

/// One entry of [`TextState`]'s anchor list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AnchorRef {
    pub seq: Seq,
    /// Index of the mark in the op log.
    pub mark: u32,
    pub end: bool,
}

/// The marks active at some point of a text, built by walking anchors in
/// document order.
#[derive(Debug, Default, Clone)]
pub(crate) struct ActiveMarks {
    active: SmallVec<[u32; 8]>,
    /// Marks whose end anchor came first (only hand-made histories do
    /// that): their start anchor then starts nothing.
    ended: SmallVec<[u32; 2]>,
}

impl ActiveMarks {
    /// Passes anchor `mark`/`end`.
    pub fn step(&mut self, mark: u32, end: bool, marks: &[Mark]) {
        if end {
            if let Some(i) = self.active.iter().position(|&m| m == mark) {
                self.active.swap_remove(i);
            } else {
                self.ended.push(mark);
            }
        } else if !self.ended.contains(&mark)
            && marks.get(mark as usize).is_some_and(|m| m.end != NO_SEQ)
        {
            self.active.push(mark);
        }
    }

    /// The styles in force: per key, the winning mark's value, without
    /// nulls.
    pub fn attributes(&self, marks: &[Mark], keys: &KeyTable) -> Attributes {
        let mut winners: SmallVec<[&Mark; 8]> = SmallVec::new();
        for m in self.active.iter().filter_map(|&m| marks.get(m as usize)) {
            match winners.iter_mut().find(|w| w.key == m.key) {
                Some(w) => {
                    if m.wins_over(w) {
                        *w = m;
                    }
                }
                None => winners.push(m),
            }
        }
        winners
            .into_iter()
            .filter(|m| !m.value.is_null())
            .map(|m| (keys.name(m.key).to_owned(), m.value.clone()))
            .collect()
    }
}

/// Builds a delta run by run, merging neighbours with equal attributes.
struct DeltaBuilder<'a> {
    out: Vec<Delta>,
    active: ActiveMarks,
    attrs: Option<Attributes>,
    marks: &'a [Mark],
    keys: &'a KeyTable,
}

impl DeltaBuilder<'_> {
    fn anchor(&mut self, item: &Item) {
        self.active
            .step(item.mark(), item.anchor & ANCHOR_END != 0, self.marks);
        self.attrs = None;
    }

    fn text(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        let attrs = self
            .attrs
            .get_or_insert_with(|| self.active.attributes(self.marks, self.keys));
        if let Some(Delta::Insert { insert, attributes }) = self.out.last_mut() {
            if attributes == attrs {
                insert.push_str(s);
                return;
            }
        }
        self.out.push(Delta::Insert {
            insert: s.to_owned(),
            attributes: attrs.clone(),
        });
    }
}

impl TextState {
    /// Moves a local insert point (right after a visible char) past the
    /// anchors there that stick to that char: ends of marks that do not
    /// expand after, and starts of marks that expand before, except starts
    /// of marks with no text left (their end is in the same gap), so that
    /// typing where a mark's text was deleted does not bring it back.
    pub(super) fn skip_left_anchors(&mut self, point: InsertPoint) -> InsertPoint {
        let mut point = point;
        let (mut leaf, mut index) = (point.leaf, point.index);
        loop {
            let Some(item) = self.chunk(leaf).items.get(index).copied() else {
                let Some(next) = self.next_leaf(leaf) else {
                    return point;
                };
                let start = self.start_after(leaf);
                self.set_focus(next, start);
                (leaf, index) = (next, 0);
                continue;
            };
            if !item.is_anchor() || item.anchor & STICKS_LEFT == 0 {
                return point;
            }
            if item.anchor & ANCHOR_END == 0 && self.ends_in_gap(leaf, index + 1, item.mark()) {
                return point;
            }
            index += 1;
            point = InsertPoint {
                leaf,
                index,
                origin_left: item.seq,
            };
        }
    }

    /// Whether the end anchor of `mark` comes at or after `(leaf, index)`
    /// before the next visible char.
    fn ends_in_gap(&self, leaf: LeafIndex, index: usize, mark: u32) -> bool {
        let (mut leaf, mut index) = (leaf, index);
        loop {
            let Some(item) = self.chunk(leaf).items.get(index) else {
                match self.next_leaf(leaf) {
                    Some(next) => (leaf, index) = (next, 0),
                    None => return false,
                }
                continue;
            };
            if item.is_visible_text() {
                return false;
            }
            if item.is_anchor() && item.anchor & ANCHOR_END != 0 && item.mark() == mark {
                return true;
            }
            index += 1;
        }
    }

    /// The first element at or after `(leaf, index)` that is not an
    /// anchor, as a seq (`NO_SEQ`: the end).
    fn non_anchor_from(&self, leaf: LeafIndex, index: usize) -> Seq {
        let (mut leaf, mut index) = (leaf, index);
        loop {
            match self.chunk(leaf).items.get(index) {
                Some(item) if item.is_anchor() => index += 1,
                Some(item) => return item.seq,
                None => match self.next_leaf(leaf) {
                    Some(next) => (leaf, index) = (next, 0),
                    None => return NO_SEQ,
                },
            }
        }
    }

    /// The last element before `(leaf, index)` that is not an anchor, as a
    /// seq (`NO_SEQ`: the start).
    fn non_anchor_before(&self, leaf: LeafIndex, index: usize) -> Seq {
        let (mut leaf, mut index) = (leaf, index);
        loop {
            if index == 0 {
                match self.tree.prev_elem(Cursor { leaf, offset: 0 }) {
                    Some(c) => {
                        leaf = c.leaf;
                        index = self.chunk(leaf).items.len();
                    }
                    None => return NO_SEQ,
                }
                continue;
            }
            index -= 1;
            let item = self.chunk(leaf).items[index];
            if !item.is_anchor() {
                return item.end() - 1;
            }
        }
    }

    /// The origins of an anchor sticking to visible char `pos`: right
    /// before it (or at the very end when `pos == len`).
    fn origins_before_char(&mut self, pos: u32) -> (Seq, Seq) {
        if pos == self.len(Unit::Char) {
            let leaf = self.tree.last_leaf().expect("a marked text is not empty");
            let n = self.chunk(leaf).items.len();
            return (self.non_anchor_before(leaf, n), NO_SEQ);
        }
        let (leaf, start) = self.locate(Unit::Char, pos);
        self.set_focus(leaf, Some(start));
        let offset = pos - start.chars;
        let (i, before) = self.chunk(leaf).find_unit(Unit::Char, offset);
        let o = offset - before.chars;
        let item = self.chunk(leaf).items[i];
        if o > 0 {
            return (item.seq + o - 1, item.seq + o);
        }
        (self.non_anchor_before(leaf, i), item.seq)
    }

    /// Places the two anchors of a new local mark over visible chars
    /// `range` (non-empty, in bounds): start anchor `seq`, end anchor
    /// `seq + 1`. Returns the origins of both.
    ///
    /// An anchor's origins are never anchors: one sticking left goes
    /// between the char before it and the next non-anchor element, one
    /// sticking right between the previous non-anchor element and its
    /// char. So an anchor and text typed concurrently at the same place
    /// are siblings, ordered by [`Item::class`]. The anchor is then placed
    /// by the same integration as a remote one, so every peer puts it in
    /// the same place.
    pub fn local_mark(
        &mut self,
        range: Range<u32>,
        seq: Seq,
        mark: u32,
        expand: ExpandType,
        log: &OpLog,
    ) -> [(Seq, Seq); 2] {
        let content = &log.content;
        let mut out = [(NO_SEQ, NO_SEQ); 2];
        for (k, end) in [(0, false), (1, true)] {
            let sticks_left = if end {
                !expand.expands_after()
            } else {
                expand.expands_before()
            };
            let pos = if end { range.end } else { range.start };
            let origins = if sticks_left {
                let point = self.local_insert_point(pos, content);
                (
                    point.origin_left,
                    self.non_anchor_from(point.leaf, point.index),
                )
            } else {
                self.origins_before_char(pos)
            };
            let flags =
                if sticks_left { STICKS_LEFT } else { 0 } | if end { ANCHOR_END } else { 0 };
            let mut item = Item::anchor(seq + k, mark, flags);
            (item.origin_left, item.origin_right) = origins;
            out[k as usize] = origins;
            let (leaf, at) = self.integrate(item, log.seq_to_id(seq + k), log, content);
            self.register_anchor(leaf, at);
            // Integration leaves the focus without known counts.
            self.drop_focus();
        }
        out
    }

    /// Adds the anchor just inserted at `(leaf, at)` to the anchor list.
    pub fn register_anchor(&mut self, leaf: LeafIndex, at: usize) {
        // Anchor counts in the tree are always flushed, so the count of
        // anchors before this one is exact.
        self.flush();
        let mut k = 0u32;
        self.tree
            .visit_previous_caches(Cursor { leaf, offset: 0 }, |c| {
                if let PreviousCache::NodeCache(c) = c {
                    k += c.anchors;
                }
            });
        let chunk = self.chunk(leaf);
        let item = chunk.items[at];
        k += chunk.items[..at].iter().filter(|i| i.is_anchor()).count() as u32;
        self.anchors.insert(
            k as usize,
            AnchorRef {
                seq: item.seq,
                mark: item.mark(),
                end: item.anchor & ANCHOR_END != 0,
            },
        );
        if let Some(f) = &mut self.focus {
            f.extend = None;
        }
    }

    /// The marks active at visible char `pos` (< len).
    fn active_at(&self, pos: u32, marks: &[Mark]) -> ActiveMarks {
        let (leaf, start) = self.locate(Unit::Char, pos);
        let chunk = self.chunk(leaf);
        let (i, _) = chunk.find_unit(Unit::Char, pos - start.chars);
        let k =
            start.anchors as usize + chunk.items[..i].iter().filter(|it| it.is_anchor()).count();
        let mut active = ActiveMarks::default();
        for a in self.anchors.iter().take(k) {
            active.step(a.mark, a.end, marks);
        }
        active
    }

    /// The whole text as runs of equal styles.
    pub fn to_delta(&self, content: &str, marks: &[Mark], keys: &KeyTable) -> Vec<Delta> {
        let mut b = DeltaBuilder {
            out: Vec::new(),
            active: ActiveMarks::default(),
            attrs: None,
            marks,
            keys,
        };
        for chunk in self.tree.iter() {
            for item in &chunk.items {
                if item.is_anchor() {
                    b.anchor(item);
                } else if !item.deleted {
                    let s = item.byte_start as usize;
                    b.text(&content[s..s + item.bytes as usize]);
                }
            }
        }
        b.out
    }

    /// Visible chars `range` (in bounds) as runs of equal styles.
    pub fn slice_delta(
        &self,
        range: Range<u32>,
        content: &str,
        marks: &[Mark],
        keys: &KeyTable,
    ) -> Vec<Delta> {
        if range.is_empty() {
            return Vec::new();
        }
        let active = if self.anchors.is_empty() {
            ActiveMarks::default()
        } else {
            self.active_at(range.start, marks)
        };
        let mut b = DeltaBuilder {
            out: Vec::new(),
            active,
            attrs: None,
            marks,
            keys,
        };
        let (mut leaf, start) = self.locate(Unit::Char, range.start);
        let chunk = self.chunk(leaf);
        let (mut i, before) = chunk.find_unit(Unit::Char, range.start - start.chars);
        let mut skip = range.start - start.chars - before.chars;
        let mut left = range.end - range.start;
        while left > 0 {
            let Some(item) = self.chunk(leaf).items.get(i) else {
                leaf = self.next_leaf(leaf).expect("range is in bounds");
                i = 0;
                continue;
            };
            i += 1;
            if item.is_anchor() {
                b.anchor(item);
                continue;
            }
            if item.deleted {
                continue;
            }
            let take = (item.len - skip).min(left);
            let s = item.byte_start as usize;
            let text = &content[s..s + item.bytes as usize];
            let (a, _) = super::prefix_units(text.as_bytes(), skip);
            let (z, _) = super::prefix_units(text.as_bytes(), skip + take);
            b.text(&text[a as usize..z as usize]);
            left -= take;
            skip = 0;
        }
        b.out
    }
}
