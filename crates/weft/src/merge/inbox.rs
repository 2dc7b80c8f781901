//! The inbox: every update that enters a document goes through
//! [`Inbox::import`], which applies what is ready, parks in [`Pending`]
//! what waits for ops the document lacks, and releases what the applied
//! ops unblock, until nothing more can apply. The document calls it once
//! per import (and [`Inbox::release`] after local ops that parked
//! updates waited for).

use crate::error::{Error, Result};
use crate::event::Draft;
use crate::id::IdSpan;
use crate::map::MapTable;
use crate::oplog::OpLog;
use crate::text::TextTable;
use crate::version::VersionVector;

use super::apply::apply;
use super::pending::{missing_spans, unknown_part, Parked, Pending, Waiting, WHOLE};
use super::plan::{missing_parts, plan, plan_parts, ready_changes, Plan, Readiness};
use super::update::Update;

/// The parts of a document an import changes.
pub(crate) struct Inbox<'a> {
    pub log: &'a mut OpLog,
    pub texts: &'a mut TextTable,
    pub maps: &'a mut MapTable,
    pub pending: &'a mut Pending,
}

/// What [`Inbox::import`] did.
#[derive(Debug, Default)]
pub(crate) struct Imported {
    /// Ops added (including pending updates released), a span per change.
    pub applied: Vec<IdSpan>,
    /// Ops of the import held back because ops they build on are missing.
    pub pending: Vec<IdSpan>,
}

impl Inbox<'_> {
    /// Applies `update` (and the pending updates it releases), or parks
    /// it when ops it builds on are missing (then `bytes` gives the
    /// update as bytes, which a snapshot of the pending set stores). The
    /// document must be loaded and committed.
    ///
    /// # Errors
    ///
    /// As [`plan`] for an invalid update (nothing changed then);
    /// [`Error::Internal`] from [`apply`] (a bug).
    pub fn import(
        &mut self,
        update: Update,
        bytes: impl FnOnce() -> Box<[u8]>,
        mut draft: Option<&mut Draft>,
    ) -> Result<Imported> {
        let mut status = Imported::default();
        match plan(self.log, self.texts, &update)? {
            Readiness::Missing => {
                // Its changes that can apply do (an error there leaves the
                // document as it was); the update waits for the rest.
                if !self.apply_ready_part(&update, &mut status.applied, draft.as_deref_mut())? {
                    return Err(Error::Internal {
                        what: "the ready part of an update is not ready",
                    });
                }
                // Parked before releasing what the applied part unblocks,
                // which may in turn unblock the rest of it.
                let spans = missing_spans(&update, &|_| 0);
                self.park_rest(update, bytes);
                self.release(&mut status.applied, draft)?;
                let log = &*self.log;
                status.pending = spans
                    .into_iter()
                    .filter_map(|s| unknown_part(s, &|p| log.known_end(p)))
                    .collect();
            }
            Readiness::Ready(plan) => {
                status.applied = self.apply(&update, plan, draft.as_deref_mut())?;
                self.release(&mut status.applied, draft)?;
            }
        }
        Ok(status)
    }

    /// [`apply`] into this document.
    fn apply(
        &mut self,
        update: &Update,
        plan: Plan,
        draft: Option<&mut Draft>,
    ) -> Result<Vec<IdSpan>> {
        apply(self.log, self.texts, self.maps, update, plan, draft)
    }

    /// Applies the changes of `update` (not ready as a whole) that can
    /// apply now (see [`ready_changes`]), appending their spans to
    /// `applied`: a parked update never holds back ops that could apply,
    /// so two updates that each wait for ops of the other both apply.
    /// Returns `Ok(false)` if that part turns out not to be ready (then
    /// nothing changed).
    ///
    /// # Errors
    ///
    /// As [`plan`] for an invalid part (nothing changed then);
    /// [`Error::Internal`] from [`apply`] (a bug).
    fn apply_ready_part(
        &mut self,
        update: &Update,
        applied: &mut Vec<IdSpan>,
        draft: Option<&mut Draft>,
    ) -> Result<bool> {
        let log = &*self.log;
        let (ready, _) = ready_changes(update, |p| log.known_end(p));
        // An update from an older writer that left out the text of
        // inserts its own deletes remove applies whole or not at all: in
        // part, a version in between would lack that text.
        if ready.is_empty() || update.leaves_out_text() {
            return Ok(true);
        }
        let part = update.subset(&ready);
        match plan(self.log, self.texts, &part)? {
            Readiness::Missing => Ok(false),
            Readiness::Ready(plan) => {
                applied.extend(self.apply(&part, plan, draft)?);
                Ok(true)
            }
        }
    }

    /// Parks `update` (whose changes that could apply did, see
    /// [`Inbox::apply_ready_part`]), each change that waits filed under an
    /// op it needs; `bytes` gives it as received. Nothing when none
    /// waits. An update that applies only whole waits whole.
    fn park_rest(&mut self, update: Update, bytes: impl FnOnce() -> Box<[u8]>) {
        let log = &*self.log;
        let (_, mut waits) = ready_changes(&update, |p| log.known_end(p));
        if waits.is_empty() {
            return;
        }
        if update.leaves_out_text() {
            for w in &mut waits {
                w.1 = WHOLE;
            }
        }
        let bytes = bytes();
        self.pending
            .park(Parked { update, bytes }, &waits, |p| log.known_end(p));
    }

    /// Applies the pending changes that the ops in `applied` (and those
    /// they release in turn) unblock, appending their spans. A woken
    /// change is looked at alone: applied when ready, else filed under
    /// its next blocker; O(its size + log P). An update that turns out
    /// to be invalid once its dependencies are known is dropped.
    ///
    /// # Errors
    ///
    /// [`Error::Internal`] from [`apply`] (a bug).
    pub fn release(
        &mut self,
        applied: &mut Vec<IdSpan>,
        mut draft: Option<&mut Draft>,
    ) -> Result<()> {
        let mut i = 0;
        while let Some(span) = applied.get(i).cloned() {
            i += 1;
            // Parked changes waiting for their blockers, and those whose
            // own first ops this span made known (another update or local
            // edits held them: they may wait for less now).
            let mut woken = self.pending.wake_holding(span.peer, span.counters.end);
            woken.extend(self.pending.wake(span.peer, span.counters.end));
            for w in woken {
                if w.change == WHOLE {
                    if let Some(parked) = self.pending.take(&w) {
                        self.release_whole(parked, applied, draft.as_deref_mut())?;
                    }
                    continue;
                }
                self.release_change(w, applied, draft.as_deref_mut())?;
            }
        }
        Ok(())
    }

    /// [`Inbox::release`] for change `w.change` of a parked update.
    fn release_change(
        &mut self,
        w: Waiting,
        applied: &mut Vec<IdSpan>,
        draft: Option<&mut Draft>,
    ) -> Result<()> {
        let Some(parked) = self.pending.get(&w) else {
            return Ok(()); // stale: its update left
        };
        let Some(change) = parked.update.changes.get(w.change) else {
            self.pending.take(&w);
            return Ok(());
        };
        let log = &*self.log;
        let known = log.known_end(change.peer);
        if known >= change.counter + change.len {
            self.pending.resolved(&w);
            return Ok(());
        }
        if let Some(blocker) = change.waits_for(|p| log.known_end(p)) {
            self.pending.refile(w, blocker);
            return Ok(());
        }
        let parts = vec![(w.change, known - change.counter)];
        match plan_parts(self.log, self.texts, &parked.update, parts) {
            Ok(plan) => {
                // The fields, not `self.apply`: `parked` borrows the
                // pending set.
                applied.extend(apply(
                    self.log,
                    self.texts,
                    self.maps,
                    &parked.update,
                    plan,
                    draft,
                )?);
                self.pending.resolved(&w);
            }
            Err(_) => {
                self.pending.take(&w);
            }
        }
        Ok(())
    }

    /// [`Inbox::release`] for a parked update taken out whole: applied if
    /// ready, else what can apply does and the rest waits again.
    fn release_whole(
        &mut self,
        parked: Parked,
        applied: &mut Vec<IdSpan>,
        mut draft: Option<&mut Draft>,
    ) -> Result<()> {
        match plan(self.log, self.texts, &parked.update) {
            Ok(Readiness::Missing) => {
                // What can apply does (an invalid part drops the update);
                // the rest waits again.
                if !matches!(
                    self.apply_ready_part(&parked.update, applied, draft.as_deref_mut()),
                    Ok(true)
                ) {
                    return Ok(());
                }
                let Parked { update, bytes } = parked;
                self.park_rest(update, || bytes);
            }
            Ok(Readiness::Ready(plan)) => {
                applied.extend(self.apply(&parked.update, plan, draft)?);
            }
            Err(_) => {}
        }
        Ok(())
    }
}

/// Parks the pending updates of a snapshot imported lazily into an empty
/// document (whose history is not loaded yet: `version` is the
/// snapshot's); returns the spans of the ops they hold that the snapshot
/// lacks. Each is looked at whole when woken: a snapshot from before
/// updates were applied in part may hold changes that are ready (they
/// apply once one of these arrives), and the history is not loaded to
/// tell.
///
/// # Errors
///
/// [`Error::Inconsistent`] when one of them does not wait for anything (a
/// snapshot never holds such a one: it was forged); nothing is parked
/// then.
pub(crate) fn park_snapshot_pending(
    pending: &mut Pending,
    parked: &[Parked],
    version: &VersionVector,
) -> Result<Vec<IdSpan>> {
    let mut blockers = Vec::with_capacity(parked.len());
    for p in parked {
        match missing_parts(&p.update, |peer| version.get(peer)) {
            Err(blocker) => blockers.push(blocker),
            Ok(_) => {
                return Err(Error::Inconsistent {
                    what: "snapshot pending update that is ready",
                })
            }
        }
    }
    let mut spans = Vec::new();
    for (p, blocker) in parked.iter().zip(blockers) {
        spans.extend(missing_spans(&p.update, &|peer| version.get(peer)));
        let (_, mut waits) = ready_changes(&p.update, |peer| version.get(peer));
        waits.push((blocker, WHOLE));
        for w in &mut waits {
            w.1 = WHOLE;
        }
        pending.park(p.clone(), &waits, |peer| version.get(peer));
    }
    Ok(spans)
}
