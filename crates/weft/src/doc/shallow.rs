//! Shallow snapshots: the current state plus only the history after a
//! version (see [`crate::ExportMode::ShallowSnapshot`] and
//! `oplog/trimmed.rs`).

use crate::encoding;
use crate::error::{Error, Result};
use crate::merge::Update;
use crate::oplog::NO_CONTENT;
use crate::text::Item;
use crate::unit::prefix_units;
use crate::version::{Frontiers, VersionVector};

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
        // The root's ops become stand-ins that a cancel cannot switch off
        // (cancels in the root are baked into its state; those after it
        // of ops after it are kept as any op).
        if self.log.cancel_below(&root) {
            return Err(Error::Unsupported {
                what: "a shallow root below an op that a later cancel (undo or redo) targets",
            });
        }
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

    /// A read-only document at a version of this shallow (loaded, latest)
    /// document: its root rebuilt from the current state (every char of
    /// the root is in it; those deleted since have their text), then the
    /// ops up to `target` merged in. [`Error::TrimmedHistory`] if
    /// `target` lacks part of the root, or holds ops concurrent to it
    /// (which only a replica with the trimmed history can place).
    pub(super) fn shallow_doc_at(&self, target: &VersionVector) -> Result<Doc> {
        self.log.check_trimmed(target)?;
        let log = self.log.root_log().ok_or(Error::Internal {
            what: "a shallow view of a full document",
        })?;
        let end = log.next_seq();
        let later = self.log.revivable();
        let content = self.log.content();
        let mut view = Doc::new();
        let mut texts: Vec<Vec<Item>> = Vec::with_capacity(self.texts.len());
        for state in self.texts.iter() {
            let mut items: Vec<Item> = Vec::new();
            for item in state.items() {
                if item.seq >= end {
                    continue;
                }
                let mut item = *item;
                if item.end() > end {
                    item.split(end - item.seq, content.as_bytes());
                }
                if item.anchor != 0 || !item.deleted {
                    items.push(item);
                    continue;
                }
                // A tombstone: visible at the root where an op after it
                // deleted it.
                let mut rest = Some(item);
                while let Some(mut piece) = rest.take() {
                    let r = later.iter().find(|r| r.end > piece.seq);
                    let inside = r.is_some_and(|r| r.start <= piece.seq);
                    let mut cut = match r {
                        Some(r) if inside => r.end,
                        Some(r) => r.start,
                        None => piece.end(),
                    };
                    if inside {
                        // Within one op run, whose text it takes.
                        let run = self.log.ops().get(self.log.op_index(piece.seq));
                        cut = cut.min(run.map_or(cut, |r| r.end()));
                    }
                    if cut < piece.end() {
                        rest = Some(piece.split(cut - piece.seq, content.as_bytes()));
                    }
                    if inside {
                        piece = self.revived(piece)?;
                    }
                    items.push(piece);
                }
            }
            texts.push(items);
        }
        // The root log's runs name texts by this document's indexes, so
        // the view numbers its texts the same: every text up to the last
        // one the root has chars in (an empty one before it is named
        // too); later ones are named when an op touches them, as in a
        // full view.
        let named = texts.iter().rposition(|items| !items.is_empty());
        let named = named.map_or(0, |i| i + 1);
        for (i, (state, items)) in self.texts.iter().zip(texts).take(named).enumerate() {
            let t = view.texts.find_or_create(state.name());
            if t.as_usize() != i {
                return Err(Error::Internal {
                    what: "a shallow view numbers its texts apart from the document",
                });
            }
            if let Some(s) = view.texts.get_mut(t) {
                s.install(items);
            }
        }
        view.log = log;
        view.maps = crate::map::MapTable::from_log(&view.log);
        let root = view.log.version();
        let rest = Update::from_log(&self.log, &self.texts, &root, Some(target))?;
        view.apply_to_view(rest, None)?;
        Ok(view)
    }

    /// Tombstone `piece` of the root (within one op run) made visible,
    /// with its text from that run; [`Error::TrimmedHistory`] if this
    /// document lacks it (an older writer left it out).
    fn revived(&self, piece: Item) -> Result<Item> {
        let mut piece = piece;
        let run = self
            .log
            .ops()
            .get(self.log.op_index(piece.seq))
            .filter(|r| r.seq <= piece.seq && piece.end() <= r.end());
        let Some(text) = run.and_then(|r| r.content(self.log.content()).map(|t| (r, t))) else {
            return Err(Error::TrimmedHistory);
        };
        let (run, text) = text;
        let (skip, _) = prefix_units(text.as_bytes(), piece.seq - run.seq);
        let rest = text.get(skip as usize..).unwrap_or("");
        let (bytes, utf16) = prefix_units(rest.as_bytes(), piece.len);
        let start = match run.kind {
            crate::oplog::OpKind::Insert { byte_start, .. } if byte_start != NO_CONTENT => {
                byte_start
            }
            _ => return Err(Error::TrimmedHistory),
        };
        piece.byte_start = start + skip;
        piece.bytes = bytes;
        piece.utf16 = utf16;
        piece.deleted = false;
        Ok(piece)
    }
}
