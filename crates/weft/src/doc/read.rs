//! Reads through `&Doc`: text views, and the fully loaded copy of a lazily
//! imported document that reads needing more than is loaded use.

use std::sync::OnceLock;

use crate::cursor::{Cursor, Side};
use crate::error::{Error, Result};
use crate::text::{LoadsOnSide, TextRef, TextSource, TextState};
use crate::unit::Unit;

use super::Doc;

impl Doc {
    /// A read-only view of text `name`, or `None` if the document has no
    /// such text (this never creates one). Any number of views, of any
    /// texts, can be held at once; see [`TextRef`]. O(number of texts).
    ///
    /// After a lazy snapshot import, a text is read straight from the
    /// snapshot, its styles too if the snapshot stores them (format
    /// version 5: see `docs/FORMAT.md`). A text with marks in an older
    /// snapshot needs the history:
    /// the first such read loads the document on the side (as
    /// [`Doc::load`] would, without `&mut`) and keeps that copy, which the
    /// document's next `&mut` operation takes over, so the work is done
    /// once. If that load fails (only a forged snapshot does this), the
    /// text reads without its styles.
    ///
    /// # Examples
    ///
    /// ```
    /// use weft::Doc;
    ///
    /// let mut doc = Doc::new();
    /// doc.text("a").insert(0, "one")?;
    /// doc.text("b").insert(0, "two")?;
    /// let shared: &Doc = &doc;
    /// let (a, b) = (shared.get_text("a").unwrap(), shared.get_text("b").unwrap());
    /// assert_eq!(format!("{a} {b}"), "one two");
    /// assert!(shared.get_text("c").is_none());
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn get_text(&self, name: &str) -> Option<TextRef<'_>> {
        self.text_view(self.shown_text(name)?)
    }

    /// [`Doc::get_text`] of the text of raw name `raw` (see
    /// `containers.rs`), shown or not.
    pub(crate) fn get_text_raw(&self, raw: &str) -> Option<TextRef<'_>> {
        self.text_view(self.texts.find(raw)?)
    }

    /// The delta of the text of raw name `raw`, empty if there is none.
    pub(super) fn raw_delta(&self, raw: &str) -> Vec<crate::Delta> {
        self.get_text_raw(raw)
            .map(|t| t.to_delta())
            .unwrap_or_default()
    }

    /// A view of text `t` (from the loaded copy if reading its styles
    /// needs the history).
    pub(super) fn text_view(&self, t: crate::id::TextIdx) -> Option<TextRef<'_>> {
        let state = self.texts.get(t)?;
        if self.needs_history_to_read(state) {
            if let Ok(full) = self.loaded() {
                if !std::ptr::eq(full, self) {
                    return full.text_view(t);
                }
            }
        }
        let lazy = self.lazy.as_deref().map(|l| l as &dyn TextSource);
        Some(TextRef::new(&self.log, state, lazy).in_doc(self))
    }

    /// Whether reading text `state` needs the history: it still lives in
    /// a lazily imported snapshot and has marks, whose styles the
    /// snapshot does not store (before format version 5).
    pub(super) fn needs_history_to_read(&self, state: &TextState) -> bool {
        let Some(u) = state.unloaded().filter(|u| u.counts.anchors > 0) else {
            return false;
        };
        self.lazy
            .as_deref()
            .is_none_or(|l| l.styles(u.index).is_none())
    }

    /// The loaded document (see [`Doc::loaded`]) and its text `name`.
    fn loaded_state(&self, name: &str) -> Result<(&Doc, &TextState)> {
        let doc = self.loaded()?;
        let state = doc
            .shown_text(name)
            .and_then(|i| doc.texts.get(i))
            .ok_or_else(|| Error::UnknownText(name.to_owned()))?;
        Ok((doc, state))
    }

    /// A view of text `name` with its tree and the history loaded (from
    /// the loaded copy of a lazily imported document).
    pub(crate) fn loaded_text(&self, name: &str) -> Result<TextRef<'_>> {
        let (doc, state) = self.loaded_state(name)?;
        if state.unloaded().is_some() {
            return Err(Error::Internal {
                what: "a loaded document has an unloaded text",
            });
        }
        Ok(TextRef::new(&doc.log, state, None))
    }

    /// Where `cursor` is now, in chars: the position of the char it sticks
    /// to (after it for [`Side::Before`]), or where that char would be if
    /// it was deleted. O(log n) (the first cursor of a text builds an id
    /// index of it, O(n log n), kept up to date from then on).
    ///
    /// # Errors
    ///
    /// [`Error::UnknownText`] if the document has no text of the cursor's
    /// name; [`Error::UnknownId`] if the document does not have the char
    /// (a cursor from another document, or from a peer whose edit has not
    /// arrived yet: try again once it has) or it is not a char of that
    /// text; after a lazy snapshot import, as [`Doc::load`].
    ///
    /// # Examples
    ///
    /// ```
    /// use weft::{Doc, Side};
    ///
    /// let mut doc = Doc::new();
    /// doc.text("t").insert(0, "Hello world")?;
    /// let start = doc.text("t").cursor(6, Side::After)?; // at "world"
    /// let end = doc.text("t").cursor(11, Side::Before)?; // after "world"
    /// doc.text("t").insert(0, "Oh, ")?;
    /// doc.text("t").delete(4, 6)?; // "Oh, world"
    /// assert_eq!(doc.cursor_pos(&start)?..doc.cursor_pos(&end)?, 4..9);
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn cursor_pos(&self, cursor: &Cursor) -> Result<usize> {
        self.cursor_pos_in(cursor, Unit::Char)
    }

    /// [`Doc::cursor_pos`] in UTF-16 code units (JavaScript offsets).
    ///
    /// # Errors
    ///
    /// As [`Doc::cursor_pos`].
    pub fn cursor_pos_utf16(&self, cursor: &Cursor) -> Result<usize> {
        self.cursor_pos_in(cursor, Unit::Utf16)
    }

    /// [`Doc::cursor_pos`] in `unit`.
    ///
    /// # Errors
    ///
    /// As [`Doc::cursor_pos`].
    pub fn cursor_pos_in(&self, cursor: &Cursor, unit: Unit) -> Result<usize> {
        let (doc, state) = self.loaded_state(cursor.text())?;
        let Some(id) = cursor.id() else {
            return Ok(match cursor.side() {
                Side::Before => 0,
                Side::After => state.visible_len(unit) as usize,
            });
        };
        let place = doc
            .log
            .id_to_seq(id)
            .filter(|_| state.unloaded().is_none())
            .and_then(|seq| state.place_of(seq, doc.log.content()))
            .ok_or(Error::UnknownId(id))?;
        let at = match cursor.side() {
            Side::Before => place.through,
            Side::After => place.before,
        };
        Ok(at.get(unit) as usize)
    }

    /// This document if nothing of a lazily imported snapshot is left to
    /// load, else its fully loaded copy (made on first use, then kept
    /// until [`Doc::settle`] takes it over).
    pub(super) fn loaded(&self) -> Result<&Doc> {
        let Some(lazy) = self.lazy.as_deref().filter(|l| !l.is_done()) else {
            return Ok(self);
        };
        let full = lazy.full.get_or_init(|| {
            let mut copy = self.clone();
            if let Some(l) = copy.lazy.as_deref_mut() {
                l.full = OnceLock::new();
            }
            copy.load().map(|()| Box::new(copy))
        });
        full.as_deref().map_err(Clone::clone)
    }

    /// Takes over the loaded copy a read made (see [`Doc::loaded`]), if
    /// any: every `&mut` operation that changes the history, the texts or
    /// what is loaded calls this first, so the copy is never stale. Only
    /// what loading changes is taken (the copy's other fields are the
    /// same as this document's).
    #[inline]
    pub(super) fn settle(&mut self) {
        let Some(lazy) = self.lazy.as_deref_mut() else {
            return;
        };
        if let Some(Ok(full)) = lazy.full.take() {
            let full = *full;
            self.log = full.log;
            self.texts = full.texts;
            self.maps = full.maps;
            self.lazy = full.lazy;
        }
    }
}

impl LoadsOnSide for Doc {
    fn cursor_loaded(&self, name: &str, pos: usize, side: Side) -> Result<Cursor> {
        self.loaded_text(name)?.cursor(pos, side)
    }
}
