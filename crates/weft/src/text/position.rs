//! Positions of chars named by id, through `&self`: what stable cursors
//! resolve with.

use generic_btree::{Cursor, PreviousCache};

use crate::id::Seq;

use super::chunk::Counts;
use super::TextState;
use crate::unit::prefix_units;

/// Where a char of a text is now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CharPlace {
    /// Visible counts before the char (for a deleted char: before where
    /// it would be).
    pub before: Counts,
    /// Visible counts up to and including the char (`before` for a
    /// deleted one).
    pub through: Counts,
    /// Whether the char is visible.
    pub visible: bool,
}

impl TextState {
    /// The visible chars before item `seq` (a char or an anchor) and
    /// whether it is a visible char; `None` if the text holds no such
    /// item. O(log n). The focus must be dropped.
    pub fn chars_before(&self, seq: Seq) -> Option<(u32, bool)> {
        debug_assert!(self.focus.is_none());
        let leaf = self.index().get(seq)?;
        let chunk = self.tree.get_elem(leaf)?;
        let i = chunk.find_seq(seq)?;
        let item = chunk.items[i];
        let mut before = 0u32;
        self.tree
            .visit_previous_caches(Cursor { leaf, offset: 0 }, |c| {
                if let PreviousCache::NodeCache(c) = c {
                    before += c.chars;
                }
            });
        for it in &chunk.items[..i] {
            before += it.counts().chars;
        }
        let visible = item.is_visible_text();
        if visible {
            before += seq - item.seq;
        }
        Some((before, visible))
    }

    /// Where char `seq` is, or `None` if the text holds no such char.
    /// O(log n) (the first call on a text builds its id index).
    pub fn place_of(&self, seq: Seq, content: &str) -> Option<CharPlace> {
        let leaf = self.index().get(seq)?;
        let chunk = self.tree.get_elem(leaf)?;
        let i = chunk.find_seq(seq)?;
        let item = chunk.items[i];
        if item.is_anchor() {
            return None;
        }
        let mut before = Counts::default();
        self.tree
            .visit_previous_caches(Cursor { leaf, offset: 0 }, |c| {
                if let PreviousCache::NodeCache(c) = c {
                    before.add(*c);
                }
            });
        // The ancestors count the focus leaf with its flushed counts.
        if let Some(f) = &self.focus {
            let focus = Cursor {
                leaf: f.leaf,
                offset: 0,
            };
            if f.leaf != leaf
                && self
                    .tree
                    .compare_pos(focus, Cursor { leaf, offset: 0 })
                    .is_lt()
            {
                before.add(self.chunk(f.leaf).counts);
                before.sub(f.flushed);
            }
        }
        for it in &chunk.items[..i] {
            before.add(it.counts());
        }
        let visible = !item.deleted;
        let mut through = before;
        if visible {
            let offset = seq - item.seq;
            let start = item.byte_start as usize;
            let text = content.get(start..start + item.bytes as usize)?;
            let units = |chars| {
                let (utf8, utf16) = prefix_units(text.as_bytes(), chars);
                Counts {
                    chars,
                    utf8,
                    utf16,
                    anchors: 0,
                }
            };
            before.add(units(offset));
            through.add(units(offset + 1));
        }
        Some(CharPlace {
            before,
            through,
            visible,
        })
    }
}
