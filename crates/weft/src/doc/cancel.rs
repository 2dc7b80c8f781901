//! Cancelling this peer's ops (see [`crate::oplog`]'s `Cancel` op kind):
//! the local way in; undo and redo are made of it.

use std::ops::Range;

use crate::error::{Error, Result};
use crate::event::diff_texts;
use crate::id::{OpId, Seq, TextIdx};
use crate::oplog::{check, OpKind, OpRun};
use crate::unit::Unit;

use super::{events, Doc};

/// A stretch of a text that a local undo, redo or cancel changes:
/// visible chars `lo..hi` before it, the text's length then, and the
/// stretch's delta then.
struct Region {
    text: TextIdx,
    lo: u32,
    hi: u32,
    len: u32,
    before: Vec<crate::Delta>,
}

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
        let pieces = pieces
            .into_iter()
            .map(|(seqs, t)| (seqs, t, true))
            .collect();
        self.apply_local(pieces)
    }

    /// Builds the index of which deletes name which chars (see
    /// `OpLog::index_deleters`), so that undoing a delete costs what the
    /// step names however long the history since: an undo manager asks
    /// for it when attached.
    pub(crate) fn index_deleters(&mut self) {
        self.log.index_deleters();
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
        self.apply_local(pieces)?;
        self.write_back(keys)
    }

    /// For the map writes `writes` (seqs, sorted), each key they set whose
    /// value is still one of theirs, with the value it would have without
    /// them (`None`: none), by map name and key: the write-back ops come in
    /// that order whatever order the document learnt the maps in, so which
    /// op writes which key (and so how it races a concurrent write, by
    /// Lamport and peer) follows from the ops alone.
    fn keys_back(
        &self,
        writes: &[Seq],
    ) -> Vec<(crate::id::MapIdx, Box<str>, Option<crate::value::Value>)> {
        let mine = |seq: Seq| writes.binary_search(&seq).is_ok();
        let keys = crate::oplog::keys_of(self.log.map_sets().iter().filter(|m| mine(m.seq)));
        let mut out = Vec::new();
        for (map, key) in keys {
            let winner = self.log.winning_write(map, key, |_| true);
            if !winner.is_some_and(|w| mine(w.seq)) {
                // A later write outside them took the key.
                continue;
            }
            let before = self
                .log
                .winning_write(map, key, |seq| !mine(seq))
                .and_then(|m| m.value.clone());
            out.push((map, key.into(), before));
        }
        let names = self.log.map_names();
        out.sort_by(|a, b| (names.name(a.0), &a.1).cmp(&(names.name(b.0), &b.1)));
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

    /// Makes `pieces` (seqs, text, cancel them: else delete those chars)
    /// as local ops of the open change and shows them in the texts. With
    /// subscribers, each touched text's event covers only the stretch
    /// between the first and the last place that changed (O(log n) per
    /// changed char or mark, plus that stretch), not the whole text.
    fn apply_local(&mut self, pieces: Vec<(Range<Seq>, TextIdx, bool)>) -> Result<()> {
        let total: u32 = pieces.iter().map(|p| p.0.end - p.0.start).sum();
        if total == 0 {
            return Ok(());
        }
        let mut seq = self.log.reserve_local(self.peer, total)?;
        let mut flips = Vec::new();
        let mut deletes = Vec::new();
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
                flips.extend(self.log.record_cancels(&run)?);
            } else {
                deletes.push((targets, text));
            }
            seq = run.end();
        }
        let touched: Vec<TextIdx> = {
            let mut t: Vec<TextIdx> = flips
                .iter()
                .map(|f| f.text)
                .chain(deletes.iter().map(|d| d.1))
                .collect();
            t.sort_unstable();
            t.dedup();
            t
        };
        for &t in &touched {
            if let Some(state) = self.texts.get_mut(t) {
                state.drop_focus();
            }
        }
        let regions = if self.observers.event_units().is_empty() {
            Vec::new()
        } else {
            self.regions_before(&touched, &deletes, &flips)
        };
        for (targets, text) in deletes {
            let state = self.texts.get_mut(text).ok_or(Error::Internal {
                what: "revert text",
            })?;
            state.remote_delete(targets, self.log.content());
        }
        crate::merge::show_flips(&mut self.log, &mut self.texts, &flips)?;
        for &t in &touched {
            if let Some(state) = self.texts.get_mut(t) {
                // Local positions need a focus whose start is known.
                state.drop_focus();
            }
        }
        self.record_regions(regions);
        Ok(())
    }

    /// Per touched text, the stretch of visible chars `lo..hi` holding
    /// every place `deletes` and `flips` change, its length and its delta
    /// as it is before they show (the marks `flips` switched are read as
    /// they were).
    fn regions_before(
        &mut self,
        touched: &[TextIdx],
        deletes: &[(Range<Seq>, TextIdx)],
        flips: &[crate::oplog::Flip],
    ) -> Vec<Region> {
        let mut regions: Vec<Region> = Vec::new();
        for &t in touched {
            let Some(state) = self.texts.get(t) else {
                continue;
            };
            let (mut lo, mut hi) = (u32::MAX, 0u32);
            let mut see = |seq: Seq| {
                if let Some((at, visible)) = state.chars_before(seq) {
                    lo = lo.min(at);
                    hi = hi.max(at + u32::from(visible));
                }
            };
            for (seqs, _) in deletes.iter().filter(|d| d.1 == t) {
                // The chars of one insert run of the log keep their order:
                // its first and last char bound it (a piece may join runs
                // typed at different places).
                for (_, part) in self.log.runs_in(seqs.clone()) {
                    see(part.start);
                    see(part.end - 1);
                }
            }
            for f in flips.iter().filter(|f| f.text == t) {
                match f.what {
                    crate::oplog::Flipped::Delete(c) => see(c),
                    crate::oplog::Flipped::Mark(m) => {
                        if let Some(mark) = self.log.mark(m) {
                            if mark.end != crate::id::NO_SEQ {
                                let (start, end) = (mark.start, mark.end);
                                see(start);
                                see(end);
                            }
                        }
                    }
                }
            }
            if lo > hi {
                continue;
            }
            regions.push(Region {
                text: t,
                lo,
                hi,
                len: state.len(Unit::Char),
                before: Vec::new(),
            });
        }
        // The marks as they were, for the slices before.
        for f in flips.iter().rev() {
            if let crate::oplog::Flipped::Mark(m) = f.what {
                self.log.set_mark_cancelled(m, f.active);
            }
        }
        for r in &mut regions {
            if let Some(state) = self.texts.get(r.text) {
                r.before = state.slice_delta(
                    r.lo..r.hi,
                    self.log.content(),
                    (self.log.marks(), self.log.keys(), self.log.objects()),
                );
            }
        }
        for f in flips {
            if let crate::oplog::Flipped::Mark(m) = f.what {
                self.log.set_mark_cancelled(m, !f.active);
            }
        }
        regions
    }

    /// Records each region's change (from [`Doc::regions_before`]) in the
    /// event draft.
    fn record_regions(&mut self, regions: Vec<Region>) {
        if regions.is_empty() {
            return;
        }
        let mut changes = Vec::with_capacity(regions.len());
        for r in regions {
            let Some(state) = self.texts.get(r.text) else {
                continue;
            };
            let grown = state.len(Unit::Char) as i64 - i64::from(r.len);
            let end = (i64::from(r.hi) + grown).max(i64::from(r.lo)) as u32;
            let after = state.slice_delta(
                r.lo..end,
                self.log.content(),
                (self.log.marks(), self.log.keys(), self.log.objects()),
            );
            let content = self.log.content();
            let lo: [usize; 3] = Unit::ALL.map(|u| {
                state
                    .convert(r.lo as usize, Unit::Char, u, content)
                    .unwrap_or(0)
            });
            changes.push((r.text, lo, r.before, after));
        }
        if let Some(draft) = events::open_draft(&mut self.draft, &self.observers) {
            for (t, lo, before, after) in &changes {
                if before == after {
                    continue;
                }
                let shifted = |unit: Unit, d: Vec<crate::Delta>| {
                    let mut out = Vec::with_capacity(d.len() + 1);
                    let at = lo[unit.index()];
                    if at > 0 {
                        out.push(crate::Delta::retain(at));
                    }
                    out.extend(d);
                    crate::event::normalize(&mut out);
                    out
                };
                draft.add(*t, |unit: Unit| {
                    shifted(unit, diff_texts(before, after, unit))
                });
            }
        }
    }

    /// Calls `f` with each op run (clipped: the ops it holds of them) of
    /// this peer's ops `ops` (counters), in order.
    fn own_runs(
        &self,
        ops: std::ops::Range<crate::id::Counter>,
        mut f: impl FnMut(&OpRun, Range<Seq>) -> Result<()>,
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
                f(run, part)?;
            }
            counter += k;
        }
        Ok(())
    }

    /// The pieces [`Doc::revert_ops`] makes for this peer's ops `ops`,
    /// appended to `pieces`: (seqs, text, cancel them: else delete the
    /// chars they inserted); the seqs of register writes to `writes`.
    fn revert_pieces(
        &self,
        ops: std::ops::Range<crate::id::Counter>,
        pieces: &mut Vec<(Range<Seq>, TextIdx, bool)>,
        writes: &mut Vec<Seq>,
    ) -> Result<()> {
        self.own_runs(ops, |run, part| {
            let cancel = match run.kind {
                OpKind::Insert { .. } => false,
                OpKind::Delete { .. } | OpKind::MarkStart { .. } | OpKind::Cancel { .. } => true,
                OpKind::MapSet { set } => {
                    let register = self.log.map_set(set).is_some_and(|m| {
                        crate::oplog::REGISTERS.contains(&self.log.map_names().name(m.map))
                    });
                    if register {
                        writes.extend(part);
                    }
                    return Ok(());
                }
                OpKind::MarkEnd { .. } => return Ok(()),
            };
            match pieces.last_mut() {
                Some((last, t, c)) if last.end == part.start && *t == run.text && *c == cancel => {
                    last.end = part.end;
                }
                _ => pieces.push((part, run.text, cancel)),
            }
            Ok(())
        })
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
        self.own_runs(first.counter..end, |run, part| {
            let ok = check::cancel_targets(
                &self.log,
                part.clone(),
                (run.text, before),
                (first.peer, self.peer),
            );
            if !ok {
                let at = self.log.seq_to_id(part.start);
                return Err(Error::NotCancellable(at));
            }
            match pieces.last_mut() {
                Some((last, t)) if last.end == part.start && *t == run.text => {
                    last.end = part.end;
                }
                _ => pieces.push((part, run.text)),
            }
            Ok(())
        })?;
        Ok(pieces)
    }
}
