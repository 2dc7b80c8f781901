//! [`TextRef`]: a read-only view of one text, through a shared `&Doc`.

use std::fmt;
use std::ops::Range;

use crate::cursor::{Cursor, Side};
use crate::error::{Error, Result};
use crate::oplog::OpLog;
use crate::style::{Attributes, Delta};
use crate::unit::Unit;

use super::{TextSource, TextState};

/// What a view of a text that is not loaded yet (after a lazy snapshot
/// import) makes its cursors with: the document, which loads the text
/// on the side. (So this module needs nothing of the document.)
pub(crate) trait LoadsOnSide: Sync {
    /// The cursor at `pos` (in chars) of text `name`, loaded on the side.
    ///
    /// # Errors
    ///
    /// As [`crate::Doc::load`], and [`Error::OutOfBounds`].
    fn cursor_loaded(&self, name: &str, pos: usize, side: Side) -> Result<Cursor>;
}

/// A read-only view of a named text of a [`crate::Doc`].
///
/// Get one with [`crate::Doc::get_text`] (which never creates a text), or
/// from an editing handle with [`crate::Text::view`]. It borrows the
/// document immutably, so several views (of several texts) can be held
/// at once, and a document shared between threads (`&Doc`, e.g. behind
/// an `RwLock`'s read guard) serves them all concurrently. Positions
/// count chars unless the method name says `_utf16` or a [`Unit`] is
/// given.
///
/// # Examples
///
/// ```
/// use weft::{Delta, Doc};
///
/// let mut doc = Doc::new();
/// doc.text("title").insert(0, "Notes")?;
/// doc.text("body").insert(0, "Hello world")?;
/// doc.text("body").mark(0..5, "bold", true)?;
///
/// let doc = &doc; // reads need no `&mut`
/// let (title, body) = (doc.get_text("title").unwrap(), doc.get_text("body").unwrap());
/// assert_eq!(title.to_string(), "Notes");
/// assert_eq!(body.slice(6..11)?, "world");
/// assert_eq!(body.to_delta()[0], Delta::insert_with("Hello", [("bold", true)]));
/// assert!(doc.get_text("missing").is_none());
/// # Ok::<(), weft::Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct TextRef<'a> {
    pub(super) log: &'a OpLog,
    pub(super) state: &'a TextState,
    /// The document's lazily imported snapshot, if the text (or the
    /// history) is not loaded yet.
    lazy: Option<&'a dyn TextSource>,
    /// The document, when the view came from [`crate::Doc::get_text`]:
    /// what a read that needs the text loaded (a cursor) loads it from.
    doc: Option<&'a dyn LoadsOnSide>,
}

impl<'a> TextRef<'a> {
    #[inline]
    pub(crate) fn new(
        log: &'a OpLog,
        state: &'a TextState,
        lazy: Option<&'a dyn TextSource>,
    ) -> TextRef<'a> {
        TextRef {
            log,
            state,
            lazy,
            doc: None,
        }
    }

    /// The view as part of `doc` (see the field).
    pub(crate) fn in_doc(self, doc: &'a dyn LoadsOnSide) -> TextRef<'a> {
        TextRef {
            doc: Some(doc),
            ..self
        }
    }

    /// The text, while it still lives in a lazily imported snapshot (""
    /// if the snapshot's text turns out to be damaged).
    pub(super) fn unloaded_text(&self) -> Option<&'a str> {
        let u = self.state.unloaded()?;
        Some(
            self.lazy
                .and_then(|l| l.stored_text(self.log, u.index).ok())
                .unwrap_or(""),
        )
    }

    /// The stored styles of the text, while it still lives in a lazily
    /// imported snapshot and has marks, if the snapshot has them (see
    /// [`super::StoredStyles`]; without them a text with marks reads from
    /// the loaded document, and from here only if loading failed: then
    /// without its styles).
    fn unloaded_styles(&self) -> Option<&'a super::StoredStyles> {
        let u = self.state.unloaded().filter(|u| u.counts.anchors > 0)?;
        self.lazy?.stored_styles(u.index)
    }

    /// The text's name in its document.
    pub fn name(&self) -> &'a str {
        crate::oplog::public_name(self.state.name())
    }

    /// Length in chars. O(1).
    #[inline]
    pub fn len(&self) -> usize {
        self.state.visible_len(Unit::Char) as usize
    }

    /// Whether the text is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Length in UTF-8 bytes. O(1).
    pub fn len_utf8(&self) -> usize {
        self.state.visible_len(Unit::Utf8) as usize
    }

    /// Length in UTF-16 code units. O(1).
    pub fn len_utf16(&self) -> usize {
        self.state.visible_len(Unit::Utf16) as usize
    }

    /// Length in `unit`. O(1).
    pub fn len_in(&self, unit: Unit) -> usize {
        self.state.visible_len(unit) as usize
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
        if let Some(text) = self.unloaded_text() {
            return super::convert_in_str(text, pos, from, to);
        }
        self.state.convert(pos, from, to, self.log.content())
    }

    /// Checks a char range: not reversed, and within the text.
    fn check_range(&self, range: &Range<usize>) -> Result<()> {
        check_range(range, self.len(), Unit::Char)
    }

    /// The text in char range `range`. O(log n + length of the slice).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRange`] if the range is reversed (`start > end`);
    /// [`Error::RangeOutOfBounds`] if it ends past the end.
    pub fn slice(&self, range: Range<usize>) -> Result<String> {
        self.check_range(&range)?;
        if let Some(text) = self.unloaded_text() {
            return Ok(super::char_slice(text, range).to_owned());
        }
        Ok(self
            .state
            .slice(range.start as u32..range.end as u32, self.log.content()))
    }

    /// The styles of the char at `pos` (< len). O(log n + marks).
    ///
    /// # Errors
    ///
    /// [`Error::OutOfBounds`] if `pos >= len()`.
    pub fn attributes_at(&self, pos: usize) -> Result<Attributes> {
        if pos >= self.len() {
            return Err(Error::OutOfBounds {
                pos,
                len: self.len(),
                unit: Unit::Char,
            });
        }
        let run = self.slice_delta(pos..pos + 1)?;
        Ok(match run.into_iter().next() {
            Some(
                Delta::Insert { attributes, .. }
                | Delta::Embed { attributes, .. }
                | Delta::Block { attributes },
            ) => attributes,
            _ => Attributes::new(),
        })
    }

    /// The whole text as Quill-style runs: [`Delta::Insert`]s whose
    /// neighbours differ in attributes; never an empty run or a `Null`
    /// attribute. O(n).
    pub fn to_delta(&self) -> Vec<Delta> {
        if let Some(text) = self.unloaded_text() {
            if let Some(styles) = self.unloaded_styles() {
                return styles.delta(text, 0..self.len() as u32);
            }
            return if text.is_empty() {
                Vec::new()
            } else {
                vec![Delta::insert(text)]
            };
        }
        self.state.to_delta(
            self.log.content(),
            self.log.marks(),
            self.log.keys(),
            self.log.objects(),
        )
    }

    /// Chars `range` as Quill-style runs (see [`TextRef::to_delta`]).
    /// O(log n + length of the range + marks).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRange`] if the range is reversed (`start > end`);
    /// [`Error::RangeOutOfBounds`] if it ends past the end.
    pub fn slice_delta(&self, range: Range<usize>) -> Result<Vec<Delta>> {
        self.check_range(&range)?;
        if let Some(text) = self.unloaded_text() {
            if let Some(styles) = self.unloaded_styles() {
                return Ok(styles.delta(text, range.start as u32..range.end as u32));
            }
            let s = super::char_slice(text, range);
            return Ok(if s.is_empty() {
                Vec::new()
            } else {
                vec![Delta::insert(s)]
            });
        }
        Ok(self.state.slice_delta(
            range.start as u32..range.end as u32,
            self.log.content(),
            (self.log.marks(), self.log.keys(), self.log.objects()),
        ))
    }

    /// Chars `range`, counted in UTF-16 units, as Quill-style runs (the
    /// same call as [`crate::Text::slice_delta_utf16`]).
    ///
    /// # Errors
    ///
    /// As [`TextRef::slice_delta_in`].
    pub fn slice_delta_utf16(&self, range: Range<usize>) -> Result<Vec<Delta>> {
        self.slice_delta_in(range, Unit::Utf16)
    }

    /// Chars `range`, counted in `unit`, as Quill-style runs (see
    /// [`TextRef::slice_delta`]; e.g. a selection from a JavaScript editor
    /// in UTF-16 units). O(log n + length of the range + marks).
    ///
    /// # Errors
    ///
    /// As [`TextRef::slice_delta`], and [`Error::NotCharBoundary`] when an
    /// end falls inside a char.
    pub fn slice_delta_in(&self, range: Range<usize>, unit: Unit) -> Result<Vec<Delta>> {
        let start = self.convert_pos(range.start, unit, Unit::Char)?;
        let end = self.convert_pos(range.end, unit, Unit::Char)?;
        if start > end {
            return Err(Error::InvalidRange {
                start: range.start,
                end: range.end,
                unit,
            });
        }
        self.slice_delta(start..end)
    }

    /// A change delta whose retains and deletes count `unit` rewritten to
    /// count chars, reading this text (the one the change applies to).
    /// O(k log n) for k ops.
    ///
    /// # Errors
    ///
    /// [`Error::RangeOutOfBounds`] if a retain or delete goes past the end,
    /// [`Error::NotCharBoundary`] if one ends inside a char.
    pub(crate) fn delta_to_chars(&self, delta: &[Delta], unit: Unit) -> Result<Vec<Delta>> {
        let len = self.len_in(unit);
        let (mut at, mut at_char) = (0usize, 0usize);
        let mut out = Vec::with_capacity(delta.len());
        for d in delta {
            match d {
                Delta::Insert { .. } | Delta::Embed { .. } | Delta::Block { .. } => {
                    out.push(d.clone())
                }
                Delta::Retain { retain: n, .. } | Delta::Delete { delete: n } => {
                    let end = at.saturating_add(*n);
                    check_range(&(at..end), len, unit)?;
                    let end_char = self.convert_pos(end, unit, Unit::Char)?;
                    let chars = end_char - at_char;
                    out.push(match d {
                        Delta::Retain { attributes, .. } => Delta::Retain {
                            retain: chars,
                            attributes: attributes.clone(),
                        },
                        _ => Delta::Delete { delete: chars },
                    });
                    (at, at_char) = (end, end_char);
                }
            }
        }
        Ok(out)
    }

    /// A stable cursor at char position `pos` (`<= len`), sticking to the
    /// char on `side` of it (see [`Cursor`] and [`Side`]). O(log n).
    ///
    /// # Errors
    ///
    /// [`Error::OutOfBounds`] if `pos > len()`; after a lazy snapshot
    /// import, as [`crate::Doc::load`] (the text is loaded on the side).
    pub fn cursor(&self, pos: usize, side: Side) -> Result<Cursor> {
        let len = self.len();
        if pos > len {
            return Err(Error::OutOfBounds {
                pos,
                len,
                unit: Unit::Char,
            });
        }
        if self.state.unloaded().is_some() {
            let doc = self.doc.ok_or(Error::Internal {
                what: "a view of an unloaded text outside its document",
            })?;
            return doc.cursor_loaded(self.name(), pos, side);
        }
        let target = match side {
            Side::Before => pos.checked_sub(1),
            Side::After => (pos < len).then_some(pos),
        };
        let id = target.map(|p| self.log.seq_to_id(self.state.char_seq(p as u32)));
        Ok(Cursor::new(self.name(), id, side))
    }

    /// [`TextRef::cursor`] at a position counted in `unit`.
    ///
    /// # Errors
    ///
    /// As [`TextRef::cursor`], and [`Error::NotCharBoundary`] when `pos`
    /// falls inside a char.
    pub fn cursor_in(&self, pos: usize, unit: Unit, side: Side) -> Result<Cursor> {
        self.cursor(self.convert_pos(pos, unit, Unit::Char)?, side)
    }

    /// [`TextRef::cursor`] at a UTF-16 position (a JavaScript offset; the
    /// same call as [`crate::Text::cursor_utf16`]).
    ///
    /// # Errors
    ///
    /// As [`TextRef::cursor_in`].
    pub fn cursor_utf16(&self, pos: usize, side: Side) -> Result<Cursor> {
        self.cursor_in(pos, Unit::Utf16, side)
    }
}

impl fmt::Display for TextRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(text) = self.unloaded_text() {
            return f.write_str(text);
        }
        let mut s = String::with_capacity(self.len_utf8());
        self.state.write_to(self.log.content(), &mut s);
        f.write_str(&s)
    }
}

impl fmt::Debug for TextRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TextRef")
            .field("name", &self.name())
            .field("len", &self.len())
            .finish()
    }
}

/// Checks that `range` (in `unit`) is not reversed and ends within a text
/// `len` long: [`Error::InvalidRange`] or [`Error::RangeOutOfBounds`].
pub(crate) fn check_range(range: &Range<usize>, len: usize, unit: Unit) -> Result<()> {
    if range.start > range.end {
        return Err(Error::InvalidRange {
            start: range.start,
            end: range.end,
            unit,
        });
    }
    if range.end > len {
        return Err(Error::RangeOutOfBounds {
            start: range.start,
            end: range.end,
            len,
            unit,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::{Doc, Side, Unit};

    /// The edit handle and the read view take positions in a unit the
    /// same way, and agree.
    #[test]
    fn both_handles_read_in_any_unit_alike() -> crate::Result<()> {
        let mut doc = Doc::new();
        let mut text = doc.text("t");
        text.insert(0, "a😀b文c")?;
        text.mark(1..4, "bold", true)?;
        let (len, cursor, cursor_16, delta, delta_16) = (
            text.len_in(Unit::Utf16),
            text.cursor_in(3, Unit::Utf16, Side::Before)?,
            text.cursor_utf16(3, Side::Before)?,
            text.slice_delta_in(1..5, Unit::Utf16)?,
            text.slice_delta_utf16(1..5)?,
        );
        let view = doc
            .get_text("t")
            .ok_or(crate::Error::Internal { what: "text" })?;
        assert_eq!(len, view.len_in(Unit::Utf16));
        assert_eq!(len, 6);
        assert_eq!(cursor, view.cursor_in(3, Unit::Utf16, Side::Before)?);
        assert_eq!(cursor_16, view.cursor_utf16(3, Side::Before)?);
        assert_eq!(cursor, cursor_16);
        assert_eq!(delta, view.slice_delta_in(1..5, Unit::Utf16)?);
        assert_eq!(delta_16, view.slice_delta_utf16(1..5)?);
        assert_eq!(delta, delta_16);
        // Inside the surrogate pair.
        assert!(view.cursor_utf16(2, Side::Before).is_err());
        Ok(())
    }
}
