//! Cancelling this peer's ops (see [`crate::oplog`]'s `Cancel` op kind):
//! the local way in; undo and redo are made of it.

use std::ops::Range;

use crate::error::{Error, Result};
use crate::event::diff_texts;
use crate::id::{OpId, Seq, TextIdx};
use crate::oplog::{check, OpKind, OpRun};
use crate::unit::Unit;

use super::{events, Doc};

impl Doc {
    /// Cancels this peer's ops `first.counter..first.counter + len`:
    /// each must be a delete (its char shows again unless another delete
    /// in force still removes it), a mark's start op (the mark styles
    /// nothing, also on text that grew into it) or a cancel (what it
    /// cancelled takes effect again, unless another cancel of it holds).
    /// The cancel is an op of the open change: it syncs, merges and shows
    /// in events like any edit. What undo and redo are built on; not yet
    /// a stable API.
    ///
    /// # Errors
    ///
    /// [`Error::NotCancellable`] (nothing changes) if an op is not this
    /// peer's, or not one of those kinds; [`Error::UnknownOp`] if the
    /// document has no such op; [`Error::Detached`] while checked out;
    /// [`Error::HistoryFull`], [`Error::CounterOverflow`]; as
    /// [`Doc::load`] after a lazy snapshot import.
    #[doc(hidden)]
    pub fn cancel(&mut self, first: OpId, len: u32) -> Result<()> {
        self.load()?;
        self.log.check_writable()?;
        if len == 0 {
            return Ok(());
        }
        if first.peer != self.peer {
            return Err(Error::NotCancellable(first));
        }
        let pieces = self.cancel_pieces(first, len)?;
        // What subscribers are shown: each touched text's change.
        let watched: Option<Vec<(TextIdx, Vec<crate::Delta>)>> =
            (!self.observers.event_units().is_empty()).then(|| {
                let mut texts: Vec<TextIdx> = pieces.iter().map(|p| p.1).collect();
                texts.sort_unstable();
                texts.dedup();
                texts
                    .into_iter()
                    .map(|t| (t, self.text_delta_at(t)))
                    .collect()
            });
        let mut seq = self.log.reserve_local(self.peer, len)?;
        for (targets, text) in pieces {
            let run = OpRun {
                seq,
                len: targets.end - targets.start,
                text,
                kind: OpKind::Cancel {
                    target: targets.start,
                },
            };
            self.log.push_op(run);
            crate::merge::cancel(&mut self.log, &mut self.texts, &run)?;
            seq = run.end();
        }
        if let Some(watched) = watched {
            let after: Vec<_> = watched
                .iter()
                .map(|(t, _)| self.text_delta_at(*t))
                .collect();
            if let Some(draft) = events::open_draft(&mut self.draft, &self.observers) {
                for ((t, before), after) in watched.iter().zip(&after) {
                    if before != after {
                        draft.add(*t, |unit: Unit| diff_texts(before, after, unit));
                        draft.add_inverse(*t, &diff_texts(after, before, Unit::Char));
                    }
                }
            }
        }
        Ok(())
    }

    /// The delta of text `t` as loaded.
    fn text_delta_at(&self, t: TextIdx) -> Vec<crate::Delta> {
        self.texts
            .get(t)
            .map(|s| crate::text::TextRef::new(&self.log, s, None).to_delta())
            .unwrap_or_default()
    }

    /// The ops `first.counter..+len` of this peer as seq ranges, each in
    /// one text and all of kinds a cancel may name (checked by the rules
    /// of `check.rs`).
    fn cancel_pieces(&self, first: OpId, len: u32) -> Result<Vec<(Range<Seq>, TextIdx)>> {
        let end = first
            .counter
            .checked_add(len)
            .ok_or(Error::UnknownOp(first))?;
        let before = self.log.next_seq();
        let mut pieces: Vec<(Range<Seq>, TextIdx)> = Vec::new();
        let mut counter = first.counter;
        while counter < end {
            let here = OpId::new(first.peer, counter);
            let seq = self.log.id_to_seq(here).ok_or(Error::UnknownOp(here))?;
            if seq < self.log.trimmed_end() {
                return Err(Error::TrimmedHistory);
            }
            let change = self
                .log
                .changes()
                .get(self.log.change_index(seq))
                .ok_or(Error::UnknownOp(here))?;
            let k = (end - counter).min(change.counter_end() - counter);
            for (run, part) in self.log.runs_in(seq..seq + k) {
                let ok = check::cancel_targets(
                    &self.log,
                    part.clone(),
                    (run.text, before),
                    (first.peer, self.peer),
                );
                if !ok {
                    let at = OpId::new(first.peer, counter + (part.start - seq));
                    return Err(Error::NotCancellable(at));
                }
                match pieces.last_mut() {
                    Some((last, t)) if last.end == part.start && *t == run.text => {
                        last.end = part.end;
                    }
                    _ => pieces.push((part, run.text)),
                }
            }
            counter += k;
        }
        Ok(pieces)
    }
}
