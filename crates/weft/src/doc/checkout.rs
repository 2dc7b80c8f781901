//! Checkout: showing the document as it was at an old version.
//!
//! While checked out ("detached") the document's own state (its op log
//! and texts) is a *view*: the history up to the checked-out version,
//! built from the latest history, with local ops refused. The latest
//! document waits in [`Doc::detached`]; imports go there, and exports and
//! the history queries read it. Returning swaps it back.
//!
//! Moving the view forward (to a version that includes the one shown)
//! merges only the ops in between into it; any other move rebuilds it.

use crate::error::{Error, Result};
use crate::event::{diff_texts, Draft, EventTrigger};
use crate::id::{MapIdx, TextIdx};
use crate::map::MapState;
use crate::merge::Update;
use crate::style::Delta;
use crate::unit::Unit;
use crate::version::{Frontiers, VersionVector};

use crate::oplog::REGISTERS;

use super::containers::{shown_under, Kind};
use super::Doc;

/// What a document showed before a checkout: every text's delta and
/// every map's state, by name.
type Before = (Vec<(String, Vec<Delta>)>, Vec<(String, MapState)>);

impl Doc {
    /// Shows the document as it was at version `frontiers`: every read
    /// (texts, deltas, lengths, cursors, [`Doc::version`],
    /// [`Doc::frontiers`]) answers for that version until
    /// [`Doc::checkout_to_latest`]. Subscribers get an event
    /// ([`EventTrigger::Checkout`]) with the change from what was shown to
    /// that version, so a mirror follows.
    ///
    /// While checked out ("detached", [`Doc::is_detached`]):
    /// - local edits are refused with [`Error::Detached`] (edit a
    ///   [`Doc::fork_at`] instead, or [`Doc::revert_to`] after returning);
    /// - imports are kept, applied to the latest document (without events),
    ///   and shown after returning;
    /// - exports, [`Doc::changes`], [`Doc::fork_at`], [`Doc::diff`] and the
    ///   version math work on the whole latest history;
    ///   [`Doc::latest_version`] and [`Doc::latest_frontiers`] give its
    ///   version.
    ///
    /// Texts are named as in the latest document; one that did not exist
    /// yet at that version reads as empty.
    ///
    /// Cost: O(size of that version) for the first checkout and for moving
    /// back in history; moving forward from a checked-out version to a
    /// later one costs O(ops in between). With subscribers, an event of a
    /// rebuild also costs O(size of the texts).
    ///
    /// # Errors
    ///
    /// [`Error::UnknownOp`] if `frontiers` name an op this document does not
    /// have (the document is unchanged then); as [`Doc::load`] after a lazy
    /// snapshot import.
    ///
    /// # Examples
    ///
    /// ```
    /// use weft::{Doc, Error};
    ///
    /// let mut doc = Doc::new();
    /// doc.text("t").insert(0, "Hello")?;
    /// let v1 = doc.frontiers();
    /// doc.text("t").insert(5, " world")?;
    ///
    /// doc.checkout(&v1)?;
    /// assert!(doc.is_detached());
    /// assert_eq!(doc.text("t").to_string(), "Hello");
    /// assert_eq!(doc.frontiers(), v1);
    /// assert_eq!(doc.text("t").insert(0, "x"), Err(Error::Detached));
    ///
    /// doc.checkout_to_latest()?;
    /// assert_eq!(doc.text("t").to_string(), "Hello world");
    /// doc.text("t").insert(0, "Oh, ")?;
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn checkout(&mut self, frontiers: &Frontiers) -> Result<()> {
        self.commit();
        match self.detached.as_deref_mut() {
            Some(latest) => latest.load()?,
            None => self.load()?,
        }
        let target = self.latest().log.frontiers_to_vv(frontiers)?;
        self.latest().log.check_trimmed(&target)?;
        let mut draft = self.new_draft();
        if self.detached.is_some() && self.log.version() <= target {
            // Forward: merge the ops in between into the view.
            let latest = self.detached.as_deref().expect("detached");
            let update = Update::from_log(
                &latest.log,
                &latest.texts,
                &self.log.version(),
                Some(&target),
            )?;
            self.apply_to_view(update, draft.as_mut())?;
        } else {
            let before = draft.as_ref().map(|_| (self.all_deltas(), self.all_maps()));
            let mut view = self.build_view(&target)?;
            if self.detached.is_none() {
                self.swap_state(&mut view);
                view.peer = self.peer;
                view.style = self.style.clone();
                self.detached = Some(Box::new(view));
            } else {
                self.log = view.log;
                self.texts = view.texts;
                self.maps = view.maps;
            }
            if let (Some(draft), Some(before)) = (draft.as_mut(), before) {
                self.draft_diff(draft, &before);
            }
        }
        if let Some(mut draft) = draft {
            self.emit(EventTrigger::Checkout, None, &mut draft);
        }
        Ok(())
    }

    /// Returns from [`Doc::checkout`] to the latest version, imports made
    /// while checked out included; subscribers get an event
    /// ([`EventTrigger::Checkout`]) with the change from the version shown.
    /// A no-op when not checked out. O(1), plus O(size of the texts) with
    /// subscribers.
    ///
    /// # Errors
    ///
    /// None today; the `Result` leaves room for a latest document that
    /// must load a lazily imported snapshot.
    pub fn checkout_to_latest(&mut self) -> Result<()> {
        let Some(mut latest) = self.detached.take() else {
            return Ok(());
        };
        let mut draft = self.new_draft();
        let before = draft.as_ref().map(|_| (self.all_deltas(), self.all_maps()));
        self.swap_state(&mut latest);
        if let (Some(draft), Some(before)) = (draft.as_mut(), before) {
            self.draft_diff(draft, &before);
            self.emit(EventTrigger::Checkout, None, draft);
        }
        Ok(())
    }

    /// Whether the document shows an old version (see [`Doc::checkout`]).
    pub fn is_detached(&self) -> bool {
        self.detached.is_some()
    }

    /// The version of the whole history: [`Doc::version`], also while
    /// checked out (when that gives the version shown).
    pub fn latest_version(&self) -> VersionVector {
        self.latest().version()
    }

    /// The heads of the whole history: [`Doc::frontiers`], also while
    /// checked out (when that gives the version shown).
    pub fn latest_frontiers(&self) -> Frontiers {
        self.latest().frontiers()
    }

    /// Swaps the state (history, texts, pending set, what a lazily
    /// imported snapshot holds back) with `other`'s: between the latest
    /// document and a view.
    fn swap_state(&mut self, other: &mut Doc) {
        std::mem::swap(&mut self.log, &mut other.log);
        std::mem::swap(&mut self.texts, &mut other.texts);
        std::mem::swap(&mut self.maps, &mut other.maps);
        std::mem::swap(&mut self.pending, &mut other.pending);
        std::mem::swap(&mut self.lazy, &mut other.lazy);
    }

    /// The latest document: this one, or while checked out the one put
    /// aside.
    pub(super) fn latest(&self) -> &Doc {
        self.detached.as_deref().unwrap_or(self)
    }

    /// A read-only document holding the history of the latest document up
    /// to `target` (a causally closed version of it) and its texts at that
    /// version, every text of the latest document named (in its order).
    fn build_view(&self, target: &VersionVector) -> Result<Doc> {
        let mut view = self.latest().doc_at(target, true)?;
        view.log.set_read_only();
        Ok(view)
    }

    /// A new document (with a random peer id and the default style)
    /// holding the history of this one up to `target` (a causally closed
    /// version of it) and its texts at that version; if `name_all`, every
    /// text of this document is named (in its order), also those that did
    /// not exist yet. The history must be loaded.
    pub(super) fn doc_at(&self, target: &VersionVector, name_all: bool) -> Result<Doc> {
        let mut view = Doc::new();
        if self.log.trimmed().is_some() {
            if *target != self.log.version() {
                let mut view = self.shallow_doc_at(target)?;
                if name_all {
                    for t in self.texts.iter() {
                        view.texts.find_or_create(t.name());
                    }
                    for name in self.log.map_names().iter() {
                        view.log.intern_map(name);
                    }
                }
                return Ok(view);
            }
            view.log = self.log.clone();
            view.texts = self.texts.clone();
            view.maps = self.maps.clone();
            view.log.commit();
            return Ok(view);
        }
        if name_all {
            for t in self.texts.iter() {
                view.texts.find_or_create(t.name());
            }
            for name in self.log.map_names().iter() {
                view.log.intern_map(name);
            }
        }
        let update = Update::from_log(&self.log, &self.texts, &VersionVector::new(), Some(target))?;
        view.apply_to_view(update, None)?;
        Ok(view)
    }

    /// Merges `update` (ops of the latest history, causally ready here)
    /// into this view, recording the change in `draft`.
    pub(super) fn apply_to_view(
        &mut self,
        update: Update,
        draft: Option<&mut Draft>,
    ) -> Result<()> {
        let status = self.import_update(update, || Box::new([]), draft)?;
        if !status.pending.is_empty() || !self.pending.is_empty() {
            return Err(Error::Internal {
                what: "a checked-out version's ops are not causally closed",
            });
        }
        Ok(())
    }

    /// Every shown text's delta, in chars, by raw name (hidden texts
    /// are not reported: see `containers.rs`).
    fn all_deltas(&self) -> Vec<(String, Vec<Delta>)> {
        self.texts
            .iter()
            .filter(|t| self.is_shown(Kind::Text, t.name()))
            .map(|t| (t.name().to_owned(), self.raw_delta(t.name())))
            .collect()
    }

    /// Every map's state, by name (shared, not copied).
    fn all_maps(&self) -> Vec<(String, MapState)> {
        self.log
            .map_names()
            .iter()
            .enumerate()
            .filter_map(|(i, name)| {
                let state = self.maps.get(MapIdx::new(i as u32))?;
                Some((name.to_owned(), state.clone()))
            })
            .collect()
    }

    /// Records in `draft` the change of every text and map from `before`
    /// (texts' deltas and maps' states, as [`Doc::all_deltas`] and
    /// [`Doc::all_maps`] gave them) to now.
    fn draft_diff(&self, draft: &mut Draft, (before, maps_before): &Before) {
        let no_map = MapState::default();
        let maps_before: std::collections::HashMap<&str, &MapState> =
            maps_before.iter().map(|(n, m)| (n.as_str(), m)).collect();
        for (i, name) in self.log.map_names().iter().enumerate() {
            let map = MapIdx::new(i as u32);
            let old = maps_before.get(name).copied().unwrap_or(&no_map);
            let new = self.maps.get(map).unwrap_or(&no_map);
            for (key, change) in old.changes_to(new) {
                draft.add_map(map, &key, change);
            }
        }
        let empty = Vec::new();
        let register_before = maps_before.get(REGISTERS[0]).copied();
        let before: std::collections::HashMap<&str, &Vec<Delta>> =
            before.iter().map(|(n, d)| (n.as_str(), d)).collect();
        for (i, state) in self.texts.iter().enumerate() {
            // Shown neither before (where a text that did not exist yet
            // was empty) nor now: nothing to report. The text shown
            // before keeps its change even when hidden now: the event
            // deletes what it holds now (see `containers.rs`).
            let raw = state.name();
            if !before.contains_key(raw)
                && !self.is_shown(Kind::Text, raw)
                && !shown_under(register_before, raw)
            {
                continue;
            }
            let old = before.get(raw).copied().unwrap_or(&empty);
            let new = self.raw_delta(raw);
            if *old != new {
                draft.add(TextIdx::new(i as u32), |unit: Unit| {
                    diff_texts(old, &new, unit)
                });
            }
        }
    }
}
