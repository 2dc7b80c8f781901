//! The document's side of change events: subscribing, committing with an
//! origin, and handing each finished [`Draft`] to the subscribers.

use std::sync::Arc;

use crate::error::Result;
use crate::event::{
    CommitCallback, Committed, DocEvent, Draft, EventTrigger, Observers, Subscription,
};
use crate::id::TextIdx;
use crate::oplog::CommitInfo;
use crate::unit::Unit;
use crate::version::VersionVector;

use super::{Doc, ExportMode, ImportStatus};

/// Options of [`Doc::commit_with`]: an origin for subscribers (local),
/// and a message and a timestamp stored in the history (they travel with
/// the ops in updates and snapshots, and [`Doc::changes`] lists them).
///
/// # Examples
///
/// ```
/// use weft::{CommitOptions, Doc, ExportMode};
///
/// let mut doc = Doc::new();
/// doc.text("t").insert(0, "typed")?;
/// doc.commit_with(
///     CommitOptions::new()
///         .origin("keyboard")
///         .message("First draft")
///         .timestamp(1_700_000_000),
/// );
/// let mut peer = Doc::new();
/// peer.import(&doc.export(ExportMode::Snapshot)?)?;
/// let change = &peer.changes()?[0];
/// assert_eq!(change.message.as_deref(), Some("First draft"));
/// assert_eq!(change.timestamp, Some(1_700_000_000));
/// # Ok::<(), weft::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CommitOptions {
    /// A label for the change, passed to subscribers in
    /// [`DocEvent::origin`] (local only: it does not travel to peers).
    pub origin: Option<String>,
    /// A message stored with the commit's ops in the history.
    pub message: Option<String>,
    /// When the commit was made, in seconds since the Unix epoch, stored
    /// with its ops (only when given: see [`CommitOptions::timestamp_now`]).
    pub timestamp: Option<i64>,
}

impl CommitOptions {
    /// No options.
    pub fn new() -> CommitOptions {
        CommitOptions::default()
    }

    /// Sets the origin.
    pub fn origin(mut self, origin: impl Into<String>) -> CommitOptions {
        self.origin = Some(origin.into());
        self
    }

    /// Sets the message.
    pub fn message(mut self, message: impl Into<String>) -> CommitOptions {
        self.message = Some(message.into());
        self
    }

    /// Sets the timestamp (seconds since the Unix epoch).
    pub fn timestamp(mut self, seconds: i64) -> CommitOptions {
        self.timestamp = Some(seconds);
        self
    }

    /// Sets the timestamp to now, by the system clock.
    pub fn timestamp_now(self) -> CommitOptions {
        let seconds = crate::platform::now_ms() / 1000;
        self.timestamp(i64::try_from(seconds).unwrap_or(i64::MAX))
    }
}

/// The open change's event draft (made if missing) while someone
/// subscribes, for a handle's edits to record into; `None` otherwise.
#[inline]
pub(super) fn open_draft<'a>(
    draft: &'a mut Option<Box<Draft>>,
    observers: &Observers,
) -> Option<&'a mut Draft> {
    let units = observers.event_units();
    if units.is_empty() {
        return None;
    }
    Some(&mut **draft.get_or_insert_with(|| Box::new(Draft::new(units))))
}

impl Doc {
    /// Calls `callback` after every change of the document's state: each
    /// commit of local edits and each import that applied something
    /// (pending updates it released included), with a [`DocEvent`] holding
    /// a Quill change delta per changed text, counted in chars. Commits the
    /// open change first (its edits were made before anyone listened).
    ///
    /// Edits are reported when their change is committed: call
    /// [`Doc::commit`] (imports and [`Doc::set_peer_id`] commit too). The
    /// callback runs on the thread that changed the document, after the
    /// change; it cannot reach the document itself (keep what it needs,
    /// e.g. a mirror, behind a lock). Dropping the returned
    /// [`Subscription`] unsubscribes. With no subscriber, edits record
    /// nothing.
    ///
    /// Cost while subscribed: a local edit records its delta in O(log n); an
    /// import reads back only the tree leaves it changed (O(k log n) for
    /// k changed runs), plus O(n) of a text for an import that marks it.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use weft::{Delta, Doc, EventTrigger, ExportMode};
    ///
    /// let mut alice = Doc::new();
    /// alice.text("t").insert(0, "Hello")?;
    /// let mut bob = alice.fork();
    ///
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let s = Arc::clone(&seen);
    /// let _sub = alice.subscribe(move |event| s.lock().unwrap().push(event.clone()));
    ///
    /// bob.text("t").insert(5, " world")?;
    /// alice.import(&bob.export(ExportMode::Updates { from: &alice.version() })?)?;
    /// let events = seen.lock().unwrap();
    /// assert_eq!(events[0].trigger, EventTrigger::Import);
    /// assert_eq!(events[0].texts[0].delta, vec![Delta::retain(5), Delta::insert(" world")]);
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn subscribe(
        &mut self,
        callback: impl Fn(&DocEvent) + Send + Sync + 'static,
    ) -> Subscription {
        self.subscribe_in(Unit::Char, callback)
    }

    /// [`Doc::subscribe`] with deltas counted in `unit` (e.g.
    /// [`Unit::Utf16`] for Quill and other JavaScript editors).
    pub fn subscribe_in(
        &mut self,
        unit: Unit,
        callback: impl Fn(&DocEvent) + Send + Sync + 'static,
    ) -> Subscription {
        self.commit();
        let sub = self.observers.subscribe(unit, Arc::new(callback));
        self.forget_kept_draft();
        sub
    }

    /// Calls `callback` with the encoded update of each local commit: the
    /// bytes to send to peers ([`Doc::import`] reads them). Commits the
    /// open change first.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use weft::Doc;
    ///
    /// let mut alice = Doc::new();
    /// let outbox = Arc::new(Mutex::new(Vec::new()));
    /// let out = Arc::clone(&outbox);
    /// let _sub = alice.subscribe_local_update(move |bytes| out.lock().unwrap().push(bytes.to_vec()));
    /// alice.text("t").insert(0, "hi")?;
    /// alice.commit();
    ///
    /// let mut bob = Doc::new();
    /// for bytes in outbox.lock().unwrap().iter() {
    ///     bob.import(bytes)?;
    /// }
    /// assert_eq!(bob.text("t").to_string(), "hi");
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn subscribe_local_update(
        &mut self,
        callback: impl Fn(&[u8]) + Send + Sync + 'static,
    ) -> Subscription {
        self.commit();
        self.observers.subscribe_local_update(Arc::new(callback))
    }

    /// Registers an undo manager's callback (commits the open change
    /// first): each local commit's ops and map values before (see
    /// [`Committed`]). No event is drafted for it.
    pub(crate) fn subscribe_commits(&mut self, callback: CommitCallback) -> Subscription {
        self.commit();
        self.observers.subscribe_commits(callback)
    }

    /// Tells the commit listeners about the local commit of this peer's
    /// ops `ops`.
    fn tell_committed(
        &self,
        trigger: EventTrigger,
        origin: Option<&str>,
        ops: std::ops::Range<crate::id::Counter>,
    ) {
        let committed = Committed {
            trigger,
            origin,
            maps: self.map_values_before(ops.clone()),
            ops,
        };
        for callback in self.observers.commit_callbacks() {
            callback(&committed);
        }
    }

    /// Per map key that this peer's map writes `ops` set (register writes
    /// aside), its public map name and the value it had before them: the
    /// winning write among the others (they are all earlier: a commit
    /// comes before any import after it).
    fn map_values_before(
        &self,
        ops: std::ops::Range<crate::id::Counter>,
    ) -> Vec<(String, String, Option<crate::value::Value>)> {
        let sets = self.log.map_sets();
        if ops.is_empty() || sets.is_empty() {
            return Vec::new();
        }
        let (Some(first), Some(last)) = (
            self.log.id_to_seq(crate::OpId::new(self.peer, ops.start)),
            self.log.id_to_seq(crate::OpId::new(self.peer, ops.end - 1)),
        ) else {
            return Vec::new();
        };
        // A commit's ops are consecutive seqs.
        let mine = |seq| (first..=last).contains(&seq);
        let keys = crate::oplog::keys_of(
            sets.iter()
                .rev()
                .take_while(|m| m.seq >= first)
                .filter(|m| mine(m.seq)),
        );
        let mut out = Vec::new();
        for (map, key) in keys {
            let raw = self.log.map_names().name(map);
            if crate::oplog::REGISTERS.contains(&raw) {
                continue;
            }
            let before = self
                .log
                .winning_write(map, key, |seq| !mine(seq))
                .and_then(|m| m.value.clone());
            out.push((
                crate::oplog::public_name(raw).to_owned(),
                key.to_owned(),
                before,
            ));
        }
        out
    }

    /// The op that set `key` of map `name` (as shown) last, if any.
    pub(crate) fn map_key_writer(&self, name: &str, key: &str) -> Option<crate::OpId> {
        let map = self.shown_map(name)?;
        let seq = self.log.winning_write(map, key, |_| true)?.seq;
        Some(self.log.seq_to_id(seq))
    }

    /// Drops the empty draft a commit kept for the next change: it records
    /// the units and inverses wanted before a subscriber that just came.
    fn forget_kept_draft(&mut self) {
        self.draft = None;
    }

    /// [`Doc::commit`] with options: the origin is passed to subscribers;
    /// a message or a timestamp is stored with the ops of the change
    /// closed now (nothing is stored when nothing was edited since the
    /// last commit). Ops of the change that an export already included
    /// (exports include the open change) keep none: peers that have them
    /// would never receive it, so every replica keeps the same history.
    /// Commit before exporting to give a whole change its message.
    pub fn commit_with(&mut self, options: CommitOptions) {
        if options.message.is_some() || options.timestamp.is_some() {
            self.settle();
            // Not the ops an export already sent (see `sent.rs`).
            let start = self.log.committed_version().get(self.peer);
            let start = start.max(self.sent.get());
            let end = self.log.version().get(self.peer);
            if self.log.is_open() && start < end {
                self.log.add_commit_info(CommitInfo {
                    peer: self.peer,
                    start,
                    end,
                    timestamp: options.timestamp,
                    message: options.message.map(Into::into),
                });
            }
        }
        self.commit_as(EventTrigger::Local, options.origin.as_deref());
    }

    /// [`Doc::import`], telling subscribers the change came from `origin`
    /// (e.g. the peer or the channel it arrived on).
    ///
    /// # Errors
    ///
    /// As [`Doc::import`].
    pub fn import_with(&mut self, bytes: &[u8], origin: &str) -> Result<ImportStatus> {
        self.import_from(bytes, Some(origin))
    }

    /// Commits the open change and reports it as caused by `trigger`.
    pub(crate) fn commit_as(&mut self, trigger: EventTrigger, origin: Option<&str>) {
        self.settle();
        let was_open = self.log.is_open();
        let from = (was_open && self.observers.wants_local_updates())
            .then(|| self.log.committed_version().clone());
        // Only a document with parked updates looks at what it committed.
        let start = (was_open && !self.pending.is_empty())
            .then(|| self.log.committed_version().get(self.peer));
        let first = self.log.committed_version().get(self.peer);
        self.log.commit();
        let ops = first..self.log.committed_version().get(self.peer);
        if let Some(mut draft) = self.draft.take() {
            if was_open {
                self.emit(trigger, origin, &mut draft);
            }
            // Kept for the next change (if the subscribers still want the
            // same), so a commit per keystroke allocates no new draft.
            if draft.units() == self.observers.event_units() {
                draft.clear();
                self.draft = Some(draft);
            }
        }
        if was_open && self.observers.wants_commits() {
            self.tell_committed(trigger, origin, ops);
        }
        if let Some(from) = from {
            self.send_local_update(&from);
        }
        if let Some(start) = start {
            self.release_after_local(start);
        }
    }

    /// After a local change of ops `start..` of this document's peer:
    /// parked updates that waited for those ids (another document used
    /// this peer id) apply or leave, as if the ops had been imported, and
    /// subscribers hear of what applied as an import. Without this, a
    /// snapshot would carry a parked update that is ready, which every
    /// reader refuses.
    #[cold]
    fn release_after_local(&mut self, start: crate::id::Counter) {
        // Merging needs the whole history (a lazily imported snapshot
        // with pending updates may not have loaded it yet).
        if self.load().is_err() {
            return;
        }
        let end = self.log.version().get(self.peer);
        let mut applied = vec![crate::IdSpan::new(self.peer, start..end)];
        let mut draft = self.new_draft();
        let released = self.inbox().release(&mut applied, draft.as_mut());
        debug_assert!(released.is_ok(), "releasing parked updates failed");
        let status = ImportStatus {
            applied: applied.split_off(1),
            ..ImportStatus::default()
        };
        self.emit_import(draft, &status, None);
    }

    /// Hands the update since `from` (the change just committed) to the
    /// local-update subscribers.
    fn send_local_update(&self, from: &VersionVector) {
        match self.export(ExportMode::Updates { from }) {
            Ok(bytes) => {
                for callback in self.observers.update_callbacks() {
                    callback(&bytes);
                }
            }
            // The history is loaded (it was just edited): exporting it
            // cannot fail.
            Err(_) => debug_assert!(false, "exporting a local change failed"),
        }
    }

    /// A draft for an import's event, if someone subscribes.
    pub(super) fn new_draft(&self) -> Option<Draft> {
        let units = self.observers.event_units();
        (!units.is_empty()).then(|| Draft::new(units))
    }

    /// The event of an import that applied something.
    pub(super) fn emit_import(
        &self,
        draft: Option<Draft>,
        status: &ImportStatus,
        origin: Option<&str>,
    ) {
        if let Some(mut draft) = draft {
            if !status.applied.is_empty() {
                self.emit(EventTrigger::Import, origin, &mut draft);
            }
        }
    }

    /// Calls each subscriber with the event of `draft` in its unit (undo
    /// managers last: they see the event in chars with its inverse).
    pub(super) fn emit(&self, trigger: EventTrigger, origin: Option<&str>, draft: &mut Draft) {
        if self.log.map_names().has_reserved() || self.texts.has_reserved() {
            self.fold_incarnations(draft);
        }
        let list = self.observers.event_callbacks(draft.callback_cache());
        let callbacks = list.as_deref().map_or(&[][..], Vec::as_slice);
        for unit in draft.units().iter() {
            if !callbacks.iter().any(|(u, _)| *u == unit) {
                continue;
            }
            // The common case (a commit per keystroke): nothing to move.
            if let Some(event) = draft.plain_event(trigger, origin, unit, |t| self.text_name(t)) {
                for (_, callback) in callbacks.iter().filter(|(u, _)| *u == unit) {
                    callback(event);
                }
                continue;
            }
            let event = draft.take_event(
                trigger,
                origin,
                unit,
                |t| self.text_name(t),
                self.log.map_names(),
            );
            for (_, callback) in callbacks.iter().filter(|(u, _)| *u == unit) {
                callback(&event);
            }
            draft.put_back(event);
        }
        // The callbacks are not kept: an unsubscribed one must not live
        // on in the list of an earlier event.
        drop(list);
    }

    /// The public name of text `t` (see `containers.rs`).
    pub(super) fn text_name(&self, t: TextIdx) -> &str {
        self.texts
            .get(t)
            .map_or("", |s| crate::oplog::public_name(s.name()))
    }

    /// The event of a snapshot imported lazily into an empty document:
    /// every text, whole.
    pub(super) fn snapshot_event(&self, texts: &[TextIdx], draft: &mut Draft) {
        for &t in texts {
            if let Some(view) = self.text_view(t) {
                let delta = view.to_delta();
                if !delta.is_empty() {
                    draft.add(t, |_| delta.clone());
                }
            }
        }
        for (map, key, change) in self.maps.as_changes() {
            draft.add_map(map, key, change);
        }
    }
}
