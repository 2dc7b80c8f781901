//! Reads through `&Doc`: text views, and the fully loaded copy of a lazily
//! imported document that reads needing more than is loaded use.

use std::sync::OnceLock;

use crate::error::Result;
use crate::text::{TextRef, TextSource};

use super::Doc;

impl Doc {
    /// A read-only view of text `name`, or `None` if the document has no
    /// such text (this never creates one). Any number of views, of any
    /// texts, can be held at once; see [`TextRef`]. O(number of texts).
    ///
    /// After a lazy snapshot import, a text without marks is read
    /// straight from the snapshot. A text with marks needs the history:
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
        let state = self.texts.get(self.texts.find(name)?)?;
        if state.unloaded().is_some_and(|u| u.counts.anchors > 0) {
            if let Ok(full) = self.loaded() {
                if !std::ptr::eq(full, self) {
                    return full.get_text(name);
                }
            }
        }
        let lazy = self.lazy.as_deref().map(|l| l as &dyn TextSource);
        Some(TextRef::new(&self.log, state, lazy))
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
            self.lazy = full.lazy;
        }
    }
}
