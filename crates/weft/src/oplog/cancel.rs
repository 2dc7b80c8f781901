//! Which ops are cancelled: the history half of [`OpKind::Cancel`].
//!
//! A cancel op names one earlier op of its peer: a delete, a mark's start
//! op or another cancel. An op is *cancelled* while at least one cancel
//! of it is not cancelled itself, so:
//! - undo cancels a delete (its char shows again, unless another delete
//!   that is not cancelled covers it) or a mark (it styles nothing);
//! - redo cancels that cancel, and the op takes effect again;
//! - two peers cancelling the same op concurrently both hold it
//!   cancelled: one of them redoing leaves the other's cancel in force.
//!
//! The log keeps, per cancelled op, the number of cancels of it that are
//! in force; a cancel op that arrives (or is cancelled in turn) changes
//! that count, which may flip what its target does, which for a cancel
//! flips its own target, and so on down the chain. [`OpLog::record_cancels`]
//! does that and reports the deletes and marks whose effect flipped; the
//! texts then show it (`merge::cancel`). The state depends only on which
//! ops are in the history, not on the order they arrived.

use std::collections::HashMap;

use rustc_hash::FxBuildHasher;

use crate::error::{Error, Result};
use crate::id::{MarkIdx, Seq, TextIdx};

use super::{OpKind, OpLog, OpRun};

/// Per cancelled op (by seq), the number of cancels of it in force
/// (never 0: an op back in force leaves the map).
pub(crate) type Cancels = HashMap<Seq, u32, FxBuildHasher>;

/// A delete or a mark whose effect a cancel switched off, or back on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Flip {
    /// The text it is in.
    pub text: TextIdx,
    /// Whether it takes effect now (else it is cancelled now).
    pub active: bool,
    pub what: Flipped,
}

/// What a [`Flip`] switched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flipped {
    /// The delete of char `seq`.
    Delete(Seq),
    /// A mark (its start op was cancelled or is in force again).
    Mark(MarkIdx),
}

/// Where the log keeps the text of one char: its insert's bytes in
/// [`OpLog::content`] (see [`OpLog::char_text`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CharText {
    pub byte_start: u32,
    pub bytes: u32,
    pub utf16: u32,
}

/// A broken invariant of the log: only a bug of ours gets here (the
/// rules of `check.rs` admit only cancels of deletes, mark starts and
/// cancels, each made before it).
fn broken(what: &'static str) -> Error {
    debug_assert!(false, "cancel: {what}");
    Error::Internal { what }
}

impl OpLog {
    /// Whether op `seq` is cancelled.
    #[inline]
    pub fn is_cancelled(&self, seq: Seq) -> bool {
        !self.cancels.is_empty() && self.cancels.contains_key(&seq)
    }

    /// Sets mark `mark`'s cancelled flag (for reading styles as they were
    /// before a flip; the counts of [`OpLog::record_cancels`] decide).
    pub fn set_mark_cancelled(&mut self, mark: MarkIdx, cancelled: bool) {
        if let Some(m) = self.marks.get_mut(mark.as_usize()) {
            m.cancelled = cancelled;
        }
    }

    /// Puts the cancels of `run` (a cancel run already in the log) in
    /// force, and returns the deletes and marks whose effect flipped, for
    /// the texts to show. Marks' [`super::Mark::cancelled`] are updated
    /// here.
    ///
    /// # Errors
    ///
    /// [`Error::Internal`] if a target is not a delete, a mark start or a
    /// cancel in the log (the rules make sure it is).
    pub fn record_cancels(&mut self, run: &OpRun) -> Result<Vec<Flip>> {
        let targets = run
            .cancel_targets(0, run.len)
            .ok_or_else(|| broken("not a cancel run"))?;
        // (op, whether it gains a cancel in force, else loses one)
        let mut work: Vec<(Seq, bool)> = targets.rev().map(|t| (t, true)).collect();
        let mut flips = Vec::new();
        while let Some((seq, gains)) = work.pop() {
            let count = self.cancels.get(&seq).copied().unwrap_or(0);
            let now = if gains {
                count + 1
            } else {
                count.checked_sub(1).ok_or_else(|| broken("uncancel"))?
            };
            if now == 0 {
                self.cancels.remove(&seq);
            } else {
                self.cancels.insert(seq, now);
            }
            if (count == 0) == (now == 0) {
                continue;
            }
            // Op `seq` flipped: cancelled now (`now > 0`) or in force again.
            let active = now == 0;
            let i = self.op_index(seq);
            let target = *self
                .ops()
                .get(i)
                .filter(|r| r.seq <= seq && seq < r.end())
                .ok_or_else(|| broken("cancel target"))?;
            let offset = seq - target.seq;
            match target.kind {
                OpKind::Cancel { .. } => {
                    let next = target
                        .cancel_targets(offset, 1)
                        .ok_or_else(|| broken("cancel target"))?;
                    // A cancel in force again cancels its target again.
                    work.push((next.start, active));
                }
                OpKind::Delete { .. } => {
                    let char = target
                        .delete_targets(offset, 1)
                        .ok_or_else(|| broken("delete target"))?;
                    flips.push(Flip {
                        text: target.text,
                        active,
                        what: Flipped::Delete(char.start),
                    });
                }
                OpKind::MarkStart { mark, .. } => {
                    let m = self
                        .marks
                        .get_mut(mark.as_usize())
                        .ok_or_else(|| broken("mark"))?;
                    m.cancelled = !active;
                    flips.push(Flip {
                        text: target.text,
                        active,
                        what: Flipped::Mark(mark),
                    });
                }
                _ => return Err(broken("cancel target kind")),
            }
        }
        Ok(flips)
    }

    /// The text of char `seq` in [`OpLog::content`], from its insert:
    /// `None` if `seq` is no insert or the document never received its
    /// text. For showing a char again whose item has no text (a text
    /// built from a snapshot's segments keeps none for deleted chars).
    /// O(log n + chars before it in its run).
    pub fn char_text(&self, seq: Seq) -> Option<CharText> {
        let run = self
            .ops()
            .get(self.op_index(seq))
            .filter(|r| r.seq <= seq && seq < r.end())?;
        let OpKind::Insert { byte_start, .. } = run.kind else {
            return None;
        };
        let text = run.content(self.content())?.as_bytes();
        let (skip, _) = crate::unit::prefix_units(text, seq - run.seq);
        let (bytes, utf16) = crate::unit::prefix_units(text.get(skip as usize..)?, 1);
        Some(CharText {
            byte_start: byte_start + skip,
            bytes,
            utf16,
        })
    }

    /// Builds the index of which delete runs name which chars, or brings
    /// it up to date with the runs added since (each run is read once).
    /// An undo manager asks for it when attached; after that, imports keep
    /// it up to date (see [`OpLog::keep_deleters`]).
    pub fn index_deleters(&mut self) {
        let runs = &self.ops;
        self.deleters.get_or_insert_default().catch_up(runs);
    }

    /// Brings the index of [`OpLog::index_deleters`] up to date if there
    /// is one (after an import: the import pays for reading its runs, not
    /// the next undo).
    pub fn keep_deleters(&mut self) {
        if self.deleters.is_some() {
            self.index_deleters();
        }
    }

    /// Of the chars `chars` of `text` (sorted, distinct), those no delete
    /// in force (not cancelled) removes. O(chars x the delete runs whose
    /// targets are near each char), however long the history (the first
    /// call reads every run once, see [`OpLog::index_deleters`]).
    pub fn not_deleted(&mut self, text: TextIdx, chars: &[Seq]) -> Vec<Seq> {
        self.index_deleters();
        let Some(index) = self.deleters.as_deref() else {
            return chars.to_vec();
        };
        // A shallow document's root ops are stand-ins (see `trimmed.rs`)
        // without targets: skipped. A char a root op deleted for good (no
        // op after the root cancels a root op) may be returned here when
        // a delete concurrent to the root, of it too, is cancelled; it
        // has no text in a shallow document (its snapshot keeps none), so
        // `TextState::revive` leaves it deleted.
        let root = self.trimmed_end();
        let runs = self.ops();
        let deleted = |c: Seq| {
            index.of(c).iter().any(|&i| {
                let Some(r) = runs.get(i as usize) else {
                    return false;
                };
                let OpKind::Delete { reversed, .. } = r.kind else {
                    return false;
                };
                let Some(targets) = r.delete_targets(0, r.len) else {
                    return false;
                };
                if r.text != text || !targets.contains(&c) {
                    return false;
                }
                let offset = if reversed {
                    targets.end - 1 - c
                } else {
                    c - targets.start
                };
                r.seq + offset >= root && !self.is_cancelled(r.seq + offset)
            })
        };
        chars.iter().copied().filter(|&c| !deleted(c)).collect()
    }
}
