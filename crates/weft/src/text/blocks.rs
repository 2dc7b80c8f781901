//! Reading a text as blocks: [`Block`], [`TextRef::blocks`] and
//! [`TextRef::block_at`].

use std::ops::Range;

use crate::error::{Error, Result};
use crate::style::{Attributes, Delta};
use crate::unit::Unit;

use super::TextRef;
use crate::oplog::object::Object;

/// One block of a text (a paragraph, a heading, a list item): the runs
/// up to a block marker, and the attributes of that marker, as Quill reads
/// a line and the `"\n"` that ends it. See [`crate::Text::split_block`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Block {
    /// The chars of its content (its marker excluded).
    pub range: Range<usize>,
    /// The position of the marker that ends it; `None` for the text after
    /// the last marker.
    pub marker: Option<usize>,
    /// Its attributes: its marker's (none after the last marker).
    pub attributes: Attributes,
    /// Its content: [`Delta::Insert`]s and [`Delta::Embed`]s, as
    /// [`TextRef::to_delta`] gives them.
    pub content: Vec<Delta>,
}

impl TextRef<'_> {
    /// The text as blocks, in order: each block marker ends one, and the
    /// text after the last marker, if any, is a last block without marker
    /// or attributes (an empty text has no block). O(n).
    ///
    /// # Examples
    ///
    /// ```
    /// use weft::Doc;
    ///
    /// let mut doc = Doc::new();
    /// let mut text = doc.text("t");
    /// text.insert(0, "Title body")?;
    /// text.split_block(5, [("header", 1)])?; // "Title" is a heading
    /// text.delete(6, 1)?; // the space
    /// let blocks = text.view().blocks();
    /// assert_eq!(blocks.len(), 2);
    /// assert_eq!(blocks[0].range, 0..5);
    /// assert_eq!(blocks[0].marker, Some(5));
    /// assert_eq!(blocks[0].attributes["header"], 1.into());
    /// assert_eq!(blocks[1].range, 6..10);
    /// assert!(blocks[1].attributes.is_empty());
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn blocks(&self) -> Vec<Block> {
        let mut out = Vec::new();
        let (mut start, mut pos) = (0usize, 0usize);
        let mut content = Vec::new();
        for run in self.to_delta() {
            match run {
                Delta::Block { attributes } => {
                    out.push(Block {
                        range: start..pos,
                        marker: Some(pos),
                        attributes,
                        content: std::mem::take(&mut content),
                    });
                    pos += 1;
                    start = pos;
                }
                Delta::Insert { ref insert, .. } => {
                    pos += crate::unit::char_len(insert) as usize;
                    content.push(run);
                }
                other => {
                    pos += 1;
                    content.push(other);
                }
            }
        }
        if pos > start {
            out.push(Block {
                range: start..pos,
                marker: None,
                attributes: Attributes::new(),
                content,
            });
        }
        out
    }

    /// Chars `range` cut into maximal pieces of block markers (`true`) and
    /// of other chars (`false`), in order. O(log n + length of the range).
    pub(crate) fn marker_pieces(&self, range: Range<usize>) -> Result<Vec<(Range<usize>, bool)>> {
        let mut pieces: Vec<(Range<usize>, bool)> = Vec::new();
        let mut at = range.start;
        for run in self.slice_delta(range)? {
            let (n, marker) = match &run {
                Delta::Insert { insert, .. } => (crate::unit::char_len(insert) as usize, false),
                Delta::Block { .. } => (1, true),
                _ => (1, false),
            };
            match pieces.last_mut() {
                Some((r, m)) if *m == marker => r.end += n,
                _ => pieces.push((at..at + n, marker)),
            }
            at += n;
        }
        Ok(pieces)
    }

    /// The attributes of the block marker at char `pos`, or `None` when
    /// the char there is not a block marker. O(log n + marks).
    ///
    /// # Errors
    ///
    /// [`Error::OutOfBounds`] if `pos >= len()`.
    pub fn block_at(&self, pos: usize) -> Result<Option<Attributes>> {
        let len = self.len();
        if pos >= len {
            return Err(Error::OutOfBounds {
                pos,
                len,
                unit: Unit::Char,
            });
        }
        if self.log.objects().is_empty() || self.unloaded_text().is_some() {
            return Ok(None);
        }
        let seq = self.state.char_seq(pos as u32);
        if !matches!(self.log.objects().get(&seq), Some(Object::Block(_))) {
            return Ok(None);
        }
        Ok(match self.slice_delta(pos..pos + 1)?.pop() {
            Some(Delta::Block { attributes }) => Some(attributes),
            _ => None,
        })
    }
}
