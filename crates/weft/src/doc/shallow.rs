//! Shallow snapshots: the current state plus only the history after a
//! version (see [`crate::ExportMode::ShallowSnapshot`] and
//! `oplog/shallow.rs`).

use crate::encoding;
use crate::error::Result;
use crate::merge::Update;
use crate::version::Frontiers;

use super::Doc;

impl Doc {
    /// The root of a shallow document (one opened from
    /// [`crate::ExportMode::ShallowSnapshot`]): the version whose history
    /// it does not have. `None` for a document with its whole history
    /// (or one whose lazily imported snapshot fails to load).
    ///
    /// # Examples
    ///
    /// ```
    /// use weft::{Doc, ExportMode};
    ///
    /// let mut doc = Doc::new();
    /// doc.text("t").insert(0, "abc")?;
    /// assert_eq!(doc.shallow_since(), None);
    /// let mut shallow = Doc::new();
    /// shallow.import(&doc.export(ExportMode::ShallowSnapshot(&doc.frontiers()))?)?;
    /// assert_eq!(shallow.shallow_since(), Some(doc.frontiers()));
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn shallow_since(&self) -> Option<Frontiers> {
        let doc = self.latest().loaded().ok()?;
        let trimmed = doc.log.trimmed()?;
        Some(
            trimmed
                .heads
                .iter()
                .map(|&s| doc.log.seq_to_id(s))
                .collect(),
        )
    }

    /// [`crate::ExportMode::ShallowSnapshot`] of this (loaded, latest)
    /// document at `frontiers`.
    pub(super) fn shallow_snapshot(&self, frontiers: &Frontiers) -> Result<Vec<u8>> {
        let root = self.log.frontiers_to_vv(frontiers)?;
        self.log.check_trimmed(&root)?;
        let pending: Vec<&[u8]> = self.pending.iter().map(|p| &*p.bytes).collect();
        if root == self.log.version() {
            return Ok(encoding::encode_shallow(
                &self.log,
                &self.texts,
                &pending,
                self.log.next_seq(),
            ));
        }
        if self.log.trimmed().is_some_and(|t| t.version == root) {
            return Ok(encoding::encode_snapshot(&self.log, &self.texts, &pending));
        }
        // The root's ops must come first in the snapshot's history: a
        // view at the root, then the rest merged into it.
        let mut doc = self.doc_at(&root, true)?;
        let trimmed = doc.log.next_seq();
        let rest = Update::from_log(&self.log, &self.texts, &root, None)?;
        doc.apply_to_view(rest, None)?;
        Ok(encoding::encode_shallow(
            &doc.log, &doc.texts, &pending, trimmed,
        ))
    }
}
