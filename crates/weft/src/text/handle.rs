//! [`Text`]: the handle through which callers read and edit one text.

use std::fmt;
use std::mem;
use std::ops::Range;

use crate::error::{Error, Result, Unit};
use crate::id::{PeerId, Seq};
use crate::oplog::{OpKind, OpLog, OpRun};

use super::item::{char_len, utf16_len, Item};
use super::TextState;

/// A named text of a [`crate::Doc`], borrowed for reading and editing.
///
/// Get one with [`crate::Doc::text`]; it borrows the document mutably, so
/// edits go straight to the document's state and history with no lock or
/// reference count on the way. Positions count chars (Unicode scalar
/// values) unless the method name says `_utf8` or `_utf16`.
///
/// Each edit becomes ops in the document's open change (see
/// [`crate::Doc::commit`]).
///
/// # Examples
///
/// ```
/// use weft::Doc;
///
/// let mut doc = Doc::new();
/// let mut text = doc.text("body");
/// text.insert(0, "Hello world")?;
/// text.splice(6, 5, "Weft")?;
/// text.delete(5, 1)?;
/// assert_eq!(text.to_string(), "HelloWeft");
/// assert_eq!(text.len(), 9);
/// assert_eq!(text.slice(5..9)?, "Weft");
/// # Ok::<(), weft::Error>(())
/// ```
pub struct Text<'a> {
    log: &'a mut OpLog,
    state: &'a mut TextState,
    text: u32,
    peer: PeerId,
    /// Reused buffer for the seqs a delete removes.
    deleted: &'a mut Vec<Range<Seq>>,
}

impl<'a> Text<'a> {
    #[inline]
    pub(crate) fn new(
        log: &'a mut OpLog,
        state: &'a mut TextState,
        text: u32,
        peer: PeerId,
        deleted: &'a mut Vec<Range<Seq>>,
    ) -> Self {
        Text {
            log,
            state,
            text,
            peer,
            deleted,
        }
    }

    /// The text's name in its document.
    pub fn name(&self) -> &str {
        self.state.name()
    }

    /// Length in chars. O(1).
    #[inline]
    pub fn len(&self) -> usize {
        self.state.len(Unit::Char) as usize
    }

    /// Whether the text is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Length in UTF-8 bytes. O(1).
    pub fn len_utf8(&self) -> usize {
        self.state.len(Unit::Utf8) as usize
    }

    /// Length in UTF-16 code units. O(1).
    pub fn len_utf16(&self) -> usize {
        self.state.len(Unit::Utf16) as usize
    }

    /// Converts a position from one unit to another, e.g. a JavaScript
    /// (UTF-16) offset to a char position. O(log n).
    ///
    /// # Errors
    ///
    /// [`Error::OutOfBounds`] past the end; [`Error::NotCharBoundary`] when
    /// `pos` falls inside a char (inside a UTF-8 sequence or a surrogate
    /// pair).
    pub fn convert_pos(&self, pos: usize, from: Unit, to: Unit) -> Result<usize> {
        self.state.convert(pos, from, to, &self.log.content)
    }

    /// Inserts `s` at char position `pos`. O(log n), O(1) when typing right
    /// after the previous insert.
    ///
    /// # Errors
    ///
    /// [`Error::OutOfBounds`] if `pos > len()`; [`Error::HistoryFull`] or
    /// [`Error::CounterOverflow`] if the document has no ids left.
    #[inline]
    pub fn insert(&mut self, pos: usize, s: &str) -> Result<()> {
        let len = self.len();
        if pos > len {
            return Err(Error::OutOfBounds {
                pos,
                len,
                unit: Unit::Char,
            });
        }
        if s.is_empty() {
            return Ok(());
        }
        let byte_start = self.log.content.len();
        let total_bytes = byte_start.checked_add(s.len());
        if total_bytes.is_none_or(|t| t >= u32::MAX as usize) || len + s.len() >= u32::MAX as usize
        {
            return Err(Error::HistoryFull);
        }
        let n = char_len(s);
        let seq = self.log.reserve_local(self.peer, n)?;
        self.log.content.push_str(s);
        let item = Item {
            seq,
            len: n,
            origin_left: 0,
            origin_right: 0,
            byte_start: byte_start as u32,
            bytes: s.len() as u32,
            utf16: utf16_len(s),
            deleted: false,
        };
        let (origin_left, origin_right) =
            self.state.local_insert(pos as u32, item, &self.log.content);
        self.log.push_insert(
            self.text,
            seq,
            n,
            origin_left,
            origin_right,
            item.byte_start,
            item.bytes,
        );
        Ok(())
    }

    /// Deletes `len` chars starting at char position `pos`. O(log n + k)
    /// for k runs touched.
    ///
    /// # Errors
    ///
    /// [`Error::OutOfBounds`] if `pos + len > len()` (reporting the end
    /// position); [`Error::HistoryFull`] or [`Error::CounterOverflow`] if the
    /// document has no ids left.
    #[inline]
    pub fn delete(&mut self, pos: usize, len: usize) -> Result<()> {
        let total = self.len();
        let end = pos.saturating_add(len);
        if end > total {
            return Err(Error::OutOfBounds {
                pos: end,
                len: total,
                unit: Unit::Char,
            });
        }
        if len == 0 {
            return Ok(());
        }
        let mut seq = self.log.reserve_local(self.peer, len as u32)?;
        let mut deleted = mem::take(self.deleted);
        deleted.clear();
        self.state
            .local_delete(pos as u32, len as u32, &self.log.content, &mut deleted);
        for range in deleted.drain(..) {
            let n = range.end - range.start;
            self.log.push_op(OpRun {
                seq,
                len: n,
                text: self.text,
                kind: OpKind::Delete {
                    target: range.start,
                    reversed: false,
                },
            });
            seq += n;
        }
        *self.deleted = deleted;
        Ok(())
    }

    /// Deletes `del` chars at `pos`, then inserts `s` there.
    ///
    /// # Errors
    ///
    /// As [`Text::delete`] and [`Text::insert`]; nothing changes on error.
    pub fn splice(&mut self, pos: usize, del: usize, s: &str) -> Result<()> {
        if pos.checked_add(del).is_none_or(|end| end > self.len()) {
            return self.delete(pos, del);
        }
        self.delete(pos, del)?;
        self.insert(pos, s)
    }

    fn to_chars(&self, pos: usize, unit: Unit) -> Result<usize> {
        self.convert_pos(pos, unit, Unit::Char)
    }

    /// Inserts `s` at UTF-8 byte offset `pos`.
    ///
    /// # Errors
    ///
    /// [`Error::OutOfBounds`] past the end, [`Error::NotCharBoundary`] inside
    /// a char, and as [`Text::insert`].
    pub fn insert_utf8(&mut self, pos: usize, s: &str) -> Result<()> {
        let pos = self.to_chars(pos, Unit::Utf8)?;
        self.insert(pos, s)
    }

    /// Deletes the UTF-8 byte range `pos..pos + len`.
    ///
    /// # Errors
    ///
    /// [`Error::OutOfBounds`] past the end, [`Error::NotCharBoundary`] if an
    /// end of the range is inside a char, and as [`Text::delete`].
    pub fn delete_utf8(&mut self, pos: usize, len: usize) -> Result<()> {
        let end = pos.saturating_add(len);
        let start = self.to_chars(pos, Unit::Utf8)?;
        let end = self.to_chars(end, Unit::Utf8)?;
        self.delete(start, end - start)
    }

    /// Inserts `s` at UTF-16 offset `pos` (a JavaScript string index).
    ///
    /// # Errors
    ///
    /// [`Error::OutOfBounds`] past the end, [`Error::NotCharBoundary`] inside
    /// a surrogate pair, and as [`Text::insert`].
    pub fn insert_utf16(&mut self, pos: usize, s: &str) -> Result<()> {
        let pos = self.to_chars(pos, Unit::Utf16)?;
        self.insert(pos, s)
    }

    /// Deletes the UTF-16 range `pos..pos + len`.
    ///
    /// # Errors
    ///
    /// [`Error::OutOfBounds`] past the end, [`Error::NotCharBoundary`] if an
    /// end of the range is inside a surrogate pair, and as [`Text::delete`].
    pub fn delete_utf16(&mut self, pos: usize, len: usize) -> Result<()> {
        let end = pos.saturating_add(len);
        let start = self.to_chars(pos, Unit::Utf16)?;
        let end = self.to_chars(end, Unit::Utf16)?;
        self.delete(start, end - start)
    }

    /// The text in char range `range`. O(log n + length of the slice).
    ///
    /// # Errors
    ///
    /// [`Error::OutOfBounds`] if the range ends past the end or starts after
    /// it ends.
    pub fn slice(&self, range: Range<usize>) -> Result<String> {
        let len = self.len();
        if range.end > len || range.start > range.end {
            return Err(Error::OutOfBounds {
                pos: range.end.max(range.start),
                len,
                unit: Unit::Char,
            });
        }
        Ok(self
            .state
            .slice(range.start as u32..range.end as u32, &self.log.content))
    }
}

impl fmt::Display for Text<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::with_capacity(self.len_utf8());
        self.state.write_to(&self.log.content, &mut s);
        f.write_str(&s)
    }
}

impl fmt::Debug for Text<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Text")
            .field("name", &self.name())
            .field("len", &self.len())
            .finish()
    }
}
