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
        let watched = self.watch_texts(pieces.iter().map(|p| p.1));
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
        self.record_watched(watched);
        Ok(())
    }

    /// Undoes this peer's ops `ops` (counters) exactly: the chars its
    /// inserts made are deleted (by id: wherever they are now, also those
    /// another peer deleted meanwhile), its deletes, mark starts and
    /// cancels are cancelled; mark ends go with their starts. A container
    /// delete (a write of a register map) is undone: the register key
    /// gets the value it would have without the writes of `ops`, unless a
    /// write outside them took it since. Other map writes are left to the
    /// caller (the undo manager writes values back). The new ops are in
    /// the open change. What [`crate::UndoManager`] does for undo and for
    /// redo alike.
    ///
    /// # Errors
    ///
    /// As [`Doc::cancel`]; [`Error::UnknownOp`] for a counter this peer
    /// has not made. Nothing changes then.
    #[doc(hidden)]
    pub fn revert_ops(&mut self, ops: &[std::ops::Range<crate::id::Counter>]) -> Result<()> {
        self.load()?;
        self.log.check_writable()?;
        // (seqs, text, cancel: else delete the chars)
        let mut pieces: Vec<(Range<Seq>, TextIdx, bool)> = Vec::new();
        let mut writes: Vec<Seq> = Vec::new();
        for ops in ops {
            self.revert_pieces(ops.clone(), &mut pieces, &mut writes)?;
        }
        writes.sort_unstable();
        let keys = self.keys_back(&writes);
        let total: u32 = pieces.iter().map(|p| p.0.end - p.0.start).sum();
        if total == 0 {
            return self.write_back(keys);
        }
        let watched = self.watch_texts(pieces.iter().map(|p| p.1));
        let mut seq = self.log.reserve_local(self.peer, total)?;
        for (targets, text, cancel) in pieces {
            let len = targets.end - targets.start;
            let kind = if cancel {
                OpKind::Cancel {
                    target: targets.start,
                }
            } else {
                OpKind::Delete {
                    target: targets.start,
                    reversed: false,
                }
            };
            let run = OpRun {
                seq,
                len,
                text,
                kind,
            };
            self.log.push_op(run);
            if cancel {
                crate::merge::cancel(&mut self.log, &mut self.texts, &run)?;
            } else {
                let state = self.texts.get_mut(text).ok_or(Error::Internal {
                    what: "revert text",
                })?;
                state.remote_delete(targets, self.log.content());
                // Local positions need a focus whose start is known.
                state.drop_focus();
            }
            seq = run.end();
        }
        self.record_watched(watched);
        self.write_back(keys)
    }

    /// For the map writes `writes` (seqs, sorted), each key they set whose
    /// value is still one of theirs, with the value it would have without
    /// them (`None`: none).
    fn keys_back(
        &self,
        writes: &[Seq],
    ) -> Vec<(crate::id::MapIdx, Box<str>, Option<crate::value::Value>)> {
        let mine = |seq: Seq| writes.binary_search(&seq).is_ok();
        let mut keys: Vec<(crate::id::MapIdx, &str)> = self
            .log
            .map_sets()
            .iter()
            .filter(|m| mine(m.seq))
            .map(|m| (m.map, &*m.key))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        let mut out = Vec::new();
        for (map, key) in keys {
            let writes_of_key: Vec<&crate::oplog::MapSet> = self
                .log
                .map_sets()
                .iter()
                .filter(|m| m.map == map && &*m.key == key)
                .collect();
            let winner = writes_of_key.iter().max_by_key(|m| m.stamp());
            if !winner.is_some_and(|w| mine(w.seq)) {
                // A later write outside them took the key.
                continue;
            }
            let before = writes_of_key
                .iter()
                .filter(|m| !mine(m.seq))
                .max_by_key(|m| m.stamp())
                .and_then(|m| m.value.clone());
            out.push((map, key.into(), before));
        }
        out
    }

    /// Writes each key of `keys` (from [`Doc::keys_back`]) back.
    fn write_back(
        &mut self,
        keys: Vec<(crate::id::MapIdx, Box<str>, Option<crate::value::Value>)>,
    ) -> Result<()> {
        for (map, key, value) in keys {
            let draft = events::open_draft(&mut self.draft, &self.observers);
            let mut handle = crate::map::Map::new(
                &mut self.log,
                self.maps.get_mut(map),
                map,
                self.peer,
                draft,
                None,
            );
            match value {
                Some(v) => handle.set(&key, v)?,
                None => handle.delete(&key)?,
            }
        }
        Ok(())
    }

    /// Each text of `texts` with its delta now, if someone subscribes to
    /// events (for [`Doc::record_watched`]).
    fn watch_texts(
        &self,
        texts: impl Iterator<Item = TextIdx>,
    ) -> Option<Vec<(TextIdx, Vec<crate::Delta>)>> {
        if self.observers.event_units().is_empty() {
            return None;
        }
        let mut texts: Vec<TextIdx> = texts.collect();
        texts.sort_unstable();
        texts.dedup();
        Some(
            texts
                .into_iter()
                .map(|t| (t, self.text_delta_at(t)))
                .collect(),
        )
    }

    /// Records in the event draft the change of each watched text since
    /// [`Doc::watch_texts`] (and its inverse).
    fn record_watched(&mut self, watched: Option<Vec<(TextIdx, Vec<crate::Delta>)>>) {
        let Some(watched) = watched else {
            return;
        };
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

    /// The pieces [`Doc::revert_ops`] makes for this peer's ops `ops`,
    /// appended to `pieces`: (seqs, text, cancel them: else delete the
    /// chars they inserted).
    fn revert_pieces(
        &self,
        ops: std::ops::Range<crate::id::Counter>,
        pieces: &mut Vec<(Range<Seq>, TextIdx, bool)>,
        writes: &mut Vec<Seq>,
    ) -> Result<()> {
        let mut counter = ops.start;
        while counter < ops.end {
            let here = OpId::new(self.peer, counter);
            let seq = self.log.id_to_seq(here).ok_or(Error::UnknownOp(here))?;
            if seq < self.log.trimmed_end() {
                return Err(Error::TrimmedHistory);
            }
            let change = self
                .log
                .changes()
                .get(self.log.change_index(seq))
                .ok_or(Error::UnknownOp(here))?;
            let k = (ops.end - counter).min(change.counter_end() - counter);
            for (run, part) in self.log.runs_in(seq..seq + k) {
                let cancel = match run.kind {
                    OpKind::Insert { .. } => false,
                    OpKind::Delete { .. } | OpKind::MarkStart { .. } | OpKind::Cancel { .. } => {
                        true
                    }
                    OpKind::MapSet { set } => {
                        let register = self.log.map_set(set).is_some_and(|m| {
                            crate::oplog::REGISTERS.contains(&self.log.map_names().name(m.map))
                        });
                        if register {
                            writes.extend(part);
                        }
                        continue;
                    }
                    OpKind::MarkEnd { .. } => continue,
                };
                match pieces.last_mut() {
                    Some((last, t, c))
                        if last.end == part.start && *t == run.text && *c == cancel =>
                    {
                        last.end = part.end;
                    }
                    _ => pieces.push((part, run.text, cancel)),
                }
            }
            counter += k;
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
