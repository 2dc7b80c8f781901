//! Style anchors in the sequence: placing them, and reading the styles
//! they give the text (see [`crate::style`] for the semantics).

use std::ops::Range;

use generic_btree::{Cursor, LeafIndex, PreviousCache};
use smallvec::SmallVec;

use crate::id::{KeyIdx, MarkIdx, Seq, NO_SEQ};
use crate::oplog::{AnchorOp, KeyTable, Mark};
use crate::style::{Attributes, Delta, ExpandType};
use crate::unit::Unit;
use crate::value::Value;

use super::anchors::{set_insert, set_remove, Anchor};
use super::item::{Item, ANCHOR_END, STICKS_LEFT};
use super::{InsertPoint, TextState};
use crate::oplog::object::{block_attributes, Object, Objects, EMBED_CHAR};

/// Whether mark `mark` has its end anchor (a mark whose end has not
/// arrived styles nothing).
fn is_live(marks: &[Mark], mark: MarkIdx) -> bool {
    marks.get(mark.as_usize()).is_some_and(Mark::is_live)
}

/// The marks active at some point of a text, built by walking anchors in
/// document order (or by [`super::anchors::AnchorTree::active`]).
#[derive(Debug, Default, Clone)]
pub(crate) struct ActiveMarks {
    /// Sorted.
    active: SmallVec<[MarkIdx; 8]>,
    /// Marks whose end anchor came first (only hand-made histories do
    /// that): their start anchor then starts nothing. Sorted.
    ended: SmallVec<[MarkIdx; 2]>,
}

impl ActiveMarks {
    /// Passes anchor `mark`/`end`.
    pub fn step(&mut self, mark: MarkIdx, end: bool, marks: &[Mark]) {
        if end {
            self.close(mark);
        } else {
            self.open(mark, is_live(marks, mark));
        }
    }

    /// Passes the start anchor of `mark`, which starts it if `live` (its
    /// end anchor exists) and its end did not come first.
    pub fn open(&mut self, mark: MarkIdx, live: bool) {
        if live && self.ended.binary_search(&mark).is_err() {
            set_insert(&mut self.active, mark);
        }
    }

    /// Passes the end anchor of `mark`.
    pub fn close(&mut self, mark: MarkIdx) {
        if !set_remove(&mut self.active, mark) {
            set_insert(&mut self.ended, mark);
        }
    }

    /// The active marks, sorted.
    pub fn marks(&self) -> &[MarkIdx] {
        &self.active
    }

    /// Whether `mark` is active.
    pub fn contains(&self, mark: MarkIdx) -> bool {
        self.active.binary_search(&mark).is_ok()
    }

    /// The active mark that wins on `key`.
    pub fn winner(&self, key: KeyIdx, marks: &[Mark]) -> Option<MarkIdx> {
        let mut best: Option<(MarkIdx, &Mark)> = None;
        for &i in &self.active {
            let Some(m) = marks.get(i.as_usize()).filter(|m| m.key == key) else {
                continue;
            };
            if best.is_none_or(|(_, b)| m.wins_over(b)) {
                best = Some((i, m));
            }
        }
        best.map(|b| b.0)
    }

    /// The styles in force: per key, the winning mark's value, without
    /// nulls.
    pub fn attributes(&self, marks: &[Mark], keys: &KeyTable) -> Attributes {
        let mut winners: SmallVec<[&Mark; 8]> = SmallVec::new();
        for m in self.active.iter().filter_map(|&m| marks.get(m.as_usize())) {
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
            .filter(|m| !m.value.is_null() && !keys.is_block(m.key))
            .map(|m| (keys.name(m.key).to_owned(), m.value.clone()))
            .collect()
    }
}

impl PartialEq for ActiveMarks {
    /// Equal when the same marks are active.
    fn eq(&self, other: &ActiveMarks) -> bool {
        self.active == other.active
    }
}

/// Builds a delta run by run, merging neighbours with equal attributes.
struct DeltaBuilder<'a> {
    out: Vec<Delta>,
    active: ActiveMarks,
    attrs: Option<Attributes>,
    marks: &'a [Mark],
    keys: &'a KeyTable,
    /// The document's embeds and block markers, by seq.
    embeds: &'a Objects,
}

impl DeltaBuilder<'_> {
    fn anchor(&mut self, item: &Item) {
        self.active
            .step(item.mark(), item.anchor & ANCHOR_END != 0, self.marks);
        self.attrs = None;
    }

    /// Chars `s`, the first of them inserted by op `seq`: text, but
    /// each embed on its own.
    fn chars(&mut self, s: &str, seq: Seq) {
        if self.embeds.is_empty() || !s.contains(EMBED_CHAR) {
            return self.text(s);
        }
        let mut from = 0;
        for (k, (i, c)) in s.char_indices().enumerate() {
            if c != EMBED_CHAR {
                continue;
            }
            if let Some(object) = self.embeds.get(&(seq + k as u32)) {
                self.text(&s[from..i]);
                self.out.push(match object {
                    Object::Embed(value) => Delta::Embed {
                        insert: value.clone(),
                        attributes: self
                            .attrs
                            .get_or_insert_with(|| self.active.attributes(self.marks, self.keys))
                            .clone(),
                    },
                    Object::Block(base) => Delta::Block {
                        attributes: block_attributes(
                            base,
                            self.active.marks(),
                            self.marks,
                            self.keys,
                        ),
                    },
                });
                from = i + c.len_utf8();
            }
        }
        self.text(&s[from..]);
    }

    fn text(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        let fresh = self.attrs.is_none();
        let attrs = self
            .attrs
            .get_or_insert_with(|| self.active.attributes(self.marks, self.keys));
        if let Some(Delta::Insert { insert, attributes }) = self.out.last_mut() {
            // Attributes only change at anchors: compare them only then.
            if !fresh || attributes == attrs {
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
    /// The first element at or after `(leaf, index)` that is not an
    /// anchor, as a seq (`NO_SEQ`: the end).
    pub(super) fn non_anchor_from(&self, leaf: LeafIndex, index: usize) -> Seq {
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

    /// Moves a place back over the right-sticky anchors right before it
    /// (they belong to the element after them): new text goes before them.
    pub(super) fn back_over_right_anchors(
        &self,
        leaf: LeafIndex,
        index: usize,
    ) -> (LeafIndex, usize) {
        let (mut leaf, mut index) = (leaf, index);
        while let Some((l, i, item)) = self.item_before(leaf, index) {
            if !item.is_anchor() || item.anchor & STICKS_LEFT != 0 {
                // Right after it (at the end of its leaf).
                return (l, i + 1);
            }
            (leaf, index) = (l, i);
        }
        (leaf, index)
    }

    /// Inserts the anchor `item` next to the char it is glued to: a
    /// left-sticky one (glued to `origin_left`, `NO_SEQ` for the start)
    /// after that char and its other left-sticky anchors, a right-sticky
    /// one (glued to `origin_right`, `NO_SEQ` for the end) right before
    /// that char. Local and remote anchors go through here, so every peer
    /// places them alike. Leaves the focus without known counts.
    pub fn place_anchor(&mut self, item: Item, content: &str) -> (LeafIndex, usize) {
        self.build_index();
        let Some(first) = self.tree.first_leaf() else {
            let cursor = self.tree.push(super::chunk::Chunk::new(&[item]));
            self.index_push(item.seq, cursor.leaf);
            return (cursor.leaf, 0);
        };
        let (leaf, index) = if item.anchor & STICKS_LEFT != 0 {
            let (leaf, index) = if item.origin_left == NO_SEQ {
                (first, 0)
            } else {
                self.split_after(item.origin_left, content)
            };
            let mut p = InsertPoint {
                leaf,
                index,
                origin_left: NO_SEQ,
            };
            self.set_focus(leaf, None);
            // Walk the left-sticky anchors already glued there.
            let (mut l, mut i) = (p.leaf, p.index);
            loop {
                match self.chunk(l).items.get(i) {
                    Some(it) if it.is_anchor() && it.anchor & STICKS_LEFT != 0 => {
                        i += 1;
                        p.leaf = l;
                        p.index = i;
                    }
                    Some(_) => break,
                    None => match self.next_leaf(l) {
                        Some(next) => (l, i) = (next, 0),
                        None => break,
                    },
                }
            }
            (p.leaf, p.index)
        } else if item.origin_right == NO_SEQ {
            let last = self.tree.last_leaf().expect("the tree is not empty");
            (last, self.chunk(last).items.len())
        } else {
            let (leaf, i, seq) = self.position_of(item.origin_right);
            let o = seq - self.chunk(leaf).items[i].seq;
            if o > 0 {
                self.split_after(item.origin_right - 1, content)
            } else {
                (leaf, i)
            }
        };
        self.set_focus(leaf, None);
        self.insert_item(leaf, index, item)
    }

    /// The seq of visible char `pos` (< len).
    pub(crate) fn char_seq(&self, pos: u32) -> Seq {
        let (leaf, start) = self.locate(Unit::Char, pos);
        let chunk = self.chunk(leaf);
        let (i, before) = chunk.find_unit(Unit::Char, pos - start.chars);
        chunk.items[i].seq + (pos - start.chars - before.chars)
    }

    /// Places the two anchors of a new local mark over visible chars
    /// `range` (non-empty, in bounds): start anchor `seq`, end anchor
    /// `seq + 1`. Returns the chars they are glued to, as (left, right)
    /// origins with `NO_SEQ` on the side not used.
    pub fn local_mark(
        &mut self,
        range: Range<u32>,
        seq: Seq,
        mark: MarkIdx,
        expand: ExpandType,
        content: &str,
    ) -> [(Seq, Seq); 2] {
        let mut out = [(NO_SEQ, NO_SEQ); 2];
        let len = self.len(Unit::Char);
        for (k, end) in [(0, false), (1, true)] {
            let sticks_left = expand.anchor_sticks_left(end);
            let pos = if end { range.end } else { range.start };
            let origins = if sticks_left {
                let glue = if pos == 0 {
                    NO_SEQ
                } else {
                    self.char_seq(pos - 1)
                };
                (glue, NO_SEQ)
            } else {
                let glue = if pos == len {
                    NO_SEQ
                } else {
                    self.char_seq(pos)
                };
                (NO_SEQ, glue)
            };
            let a = AnchorOp {
                origin_left: origins.0,
                origin_right: origins.1,
                mark,
                end,
            };
            let item = Item::anchor(seq + k, a, expand);
            out[k as usize] = origins;
            let (leaf, at) = self.place_anchor(item, content);
            self.register_anchor(leaf, at);
            self.drop_focus();
        }
        out
    }

    /// Adds the anchor just inserted at `(leaf, at)` to the anchor tree.
    /// O(log n).
    pub fn register_anchor(&mut self, leaf: LeafIndex, at: usize) {
        // Anchor counts in the text tree are flushed from here on (see
        // `anchors_before`).
        self.flush();
        let rank = self.anchors_before(leaf, at);
        let item = self.chunk(leaf).items[at];
        let chars_before = self.chars_back(leaf, at);
        self.anchors.insert(
            rank,
            Anchor {
                seq: item.seq,
                mark: item.mark(),
                end: item.anchor & ANCHOR_END != 0,
                sticks_left: item.anchor & STICKS_LEFT != 0,
                chars_before,
            },
        );
        // The next anchor now counts only the chars after this one.
        let (chars, next) = self.chars_ahead(leaf, at + 1);
        if next.is_some() {
            self.anchors.set_chars_before(rank + 1, chars);
        }
        if let Some(f) = &mut self.focus {
            f.extend = None;
        }
    }

    /// Anchors before item `index` of `leaf`. O(log n). Exact whenever no
    /// anchor is being placed: [`TextState::place_anchor`] leaves the
    /// focus leaf's anchor count pending only until
    /// [`TextState::register_anchor`] flushes it.
    pub(super) fn anchors_before(&self, leaf: LeafIndex, index: usize) -> u32 {
        let mut rank = 0u32;
        self.tree
            .visit_previous_caches(Cursor { leaf, offset: 0 }, |c| {
                if let PreviousCache::NodeCache(c) = c {
                    rank += c.anchors;
                }
            });
        let items = &self.chunk(leaf).items;
        rank + items[..index.min(items.len())]
            .iter()
            .filter(|i| i.is_anchor())
            .count() as u32
    }

    /// Anchors before visible char `pos` (< len): its anchor rank.
    pub(super) fn char_anchor_rank(&self, pos: u32) -> u32 {
        let (leaf, start) = self.locate(Unit::Char, pos);
        let chunk = self.chunk(leaf);
        let (i, _) = chunk.find_unit(Unit::Char, pos - start.chars);
        start.anchors + chunk.items[..i].iter().filter(|it| it.is_anchor()).count() as u32
    }

    /// Chars in the items before `(leaf, index)` back to the previous
    /// anchor or the start of the text, counted up to 2.
    fn chars_back(&self, leaf: LeafIndex, index: usize) -> u8 {
        let (mut leaf, mut index) = (leaf, index);
        let mut chars = 0u32;
        while chars < 2 {
            let Some((l, i, item)) = self.item_before(leaf, index) else {
                break;
            };
            if item.is_anchor() {
                break;
            }
            (leaf, index) = (l, i);
            chars += item.len;
        }
        chars.min(2) as u8
    }

    /// Chars in the items from `(leaf, index)` on up to the next anchor,
    /// counted up to 2, and that anchor's place when it comes before a
    /// count of 2.
    fn chars_ahead(&self, leaf: LeafIndex, index: usize) -> (u8, Option<(LeafIndex, usize)>) {
        let (mut leaf, mut index) = (leaf, index);
        let mut chars = 0u32;
        while chars < 2 {
            let Some(item) = self.chunk(leaf).items.get(index) else {
                match self.next_leaf(leaf) {
                    Some(next) => (leaf, index) = (next, 0),
                    None => break,
                }
                continue;
            };
            if item.is_anchor() {
                return (chars as u8, Some((leaf, index)));
            }
            chars += item.len;
            index += 1;
        }
        (chars.min(2) as u8, None)
    }

    /// After `added` chars went into the char item at `(leaf, index)`:
    /// raises the count of chars before the next anchor if it was below 2.
    /// Returns whether that anchor now counts one char: the typing fast
    /// path must then not grow the item without coming back here.
    pub(super) fn note_chars_added(&mut self, leaf: LeafIndex, index: usize, added: u32) -> bool {
        let item = self.chunk(leaf).items[index];
        let mut before = item.len - added;
        if before < 2 {
            before += u32::from(self.chars_back(leaf, index));
        }
        if before >= 2 {
            return false;
        }
        let (ahead, next) = self.chars_ahead(leaf, index + 1);
        before += u32::from(ahead);
        let Some((next_leaf, next_index)) = next.filter(|_| before < 2) else {
            return false;
        };
        let now = (before + added).min(2) as u8;
        let rank = self.anchors_before(next_leaf, next_index);
        self.anchors.set_chars_before(rank, now);
        now < 2
    }

    /// Whether the last local insert left marks for
    /// [`TextState::take_resurrected`].
    #[inline]
    pub fn has_resurrected(&self) -> bool {
        !self.resurrected.is_empty()
    }

    /// Keys to unmark over text just inserted where only marks without
    /// text of their own would style it (see
    /// [`TextState::rich_insert_point`]): per such key, whether one of
    /// those marks is what gives the new text that key. Clears the list.
    pub fn take_resurrected(&mut self, pos: u32, marks: &[Mark]) -> SmallVec<[KeyIdx; 2]> {
        let dead = std::mem::take(&mut self.resurrected);
        let active = self.active_at(pos, marks);
        let mut keys: SmallVec<[KeyIdx; 2]> = SmallVec::new();
        for &d in &dead {
            let Some(m) = marks.get(d.as_usize()) else {
                continue;
            };
            let winner = active.winner(m.key, marks);
            if winner.is_some_and(|w| dead.contains(&w)) && !keys.contains(&m.key) {
                keys.push(m.key);
            }
        }
        keys
    }

    /// The marks active at visible char `pos` (< len). O(log n + the marks
    /// the anchor tree's summaries name on the way).
    fn active_at(&self, pos: u32, marks: &[Mark]) -> ActiveMarks {
        let rank = self.char_anchor_rank(pos);
        self.anchors.active(rank, |m| is_live(marks, m))
    }

    /// The whole text as runs of equal styles.
    pub fn to_delta(
        &self,
        content: &str,
        marks: &[Mark],
        keys: &KeyTable,
        embeds: &Objects,
    ) -> Vec<Delta> {
        let mut b = DeltaBuilder {
            out: Vec::new(),
            active: ActiveMarks::default(),
            attrs: None,
            marks,
            keys,
            embeds,
        };
        for chunk in self.tree.iter() {
            for item in &chunk.items {
                if item.is_anchor() {
                    b.anchor(item);
                } else if !item.deleted {
                    let s = item.byte_start as usize;
                    b.chars(&content[s..s + item.bytes as usize], item.seq);
                }
            }
        }
        b.out
    }

    /// Walks visible chars `range` (in bounds, non-empty) in order: calls
    /// `f` for each piece of an item (with the marks in force, whether an
    /// anchor was passed since the previous piece, the item, the chars
    /// skipped at its start and the chars taken).
    fn walk_range(
        &self,
        range: Range<u32>,
        marks: &[Mark],
        mut f: impl FnMut(&ActiveMarks, bool, &Item, u32, u32),
    ) {
        let (mut leaf, start) = self.locate(Unit::Char, range.start);
        let chunk = self.chunk(leaf);
        let (mut i, before) = chunk.find_unit(Unit::Char, range.start - start.chars);
        let mut active = if self.anchors.is_empty() {
            ActiveMarks::default()
        } else {
            // The anchor rank of the first char, from the same descent.
            let anchors = chunk.items[..i].iter().filter(|it| it.is_anchor()).count();
            let rank = start.anchors + anchors as u32;
            self.anchors.active(rank, |m| is_live(marks, m))
        };
        let mut changed = true;
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
                active.step(item.mark(), item.anchor & ANCHOR_END != 0, marks);
                changed = true;
                continue;
            }
            if item.deleted {
                continue;
            }
            let take = (item.len - skip).min(left);
            f(&active, changed, item, skip, take);
            changed = false;
            left -= take;
            skip = 0;
        }
    }

    /// Visible chars `range` (in bounds) as runs of equal styles.
    pub fn slice_delta(
        &self,
        range: Range<u32>,
        content: &str,
        (marks, keys, embeds): (&[Mark], &KeyTable, &Objects),
    ) -> Vec<Delta> {
        let mut b = DeltaBuilder {
            out: Vec::new(),
            active: ActiveMarks::default(),
            attrs: None,
            marks,
            keys,
            embeds,
        };
        if range.is_empty() {
            return b.out;
        }
        self.walk_range(range, marks, |active, changed, item, skip, take| {
            if changed {
                b.active = active.clone();
                b.attrs = None;
            }
            let s = item.byte_start as usize;
            let text = &content[s..s + item.bytes as usize];
            b.chars(
                &text[item.byte_offset(text, skip)..item.byte_offset(text, skip + take)],
                item.seq + skip,
            );
        });
        b.out
    }

    /// Whether every char of `range` (in bounds, non-empty) has `key` =
    /// `value` by the marks in force (for `Null`: no char has `key`).
    /// Decides whether a mark would change anything, without building
    /// runs.
    pub fn has_everywhere(
        &self,
        range: Range<u32>,
        key: &str,
        value: &Value,
        marks: &[Mark],
        keys: &KeyTable,
    ) -> bool {
        let Some(key) = keys.find(key) else {
            // No mark ever used the key.
            return value.is_null();
        };
        let mut ok = true;
        self.walk_range(range, marks, |active, changed, _, _, _| {
            if changed {
                let current = active
                    .winner(key, marks)
                    .and_then(|w| marks.get(w.as_usize()))
                    .map_or(&Value::Null, |m| &m.value);
                ok &= current == value;
            }
        });
        ok
    }
}
