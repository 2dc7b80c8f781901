//! The history as a feature: version math, the list of changes, a fork of
//! the document as it was at a version, the change between two versions,
//! and reverting to one.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::event::{diff_texts, Draft, EventTrigger, MapDiff, TextDiff, Units};
use crate::id::{Counter, IdSpan, Lamport, OpId};
use crate::map::MapState;
use crate::merge::Update;
use crate::oplog::CommitInfo;
use crate::style::Delta;
use crate::unit::Unit;
use crate::value::Value;
use crate::version::{Frontiers, VersionVector};

use super::Doc;

/// One change of the history (see [`Doc::changes`]): a run of one peer's
/// consecutive ops made on top of the version its deps name.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChangeMeta {
    /// The ops of the change.
    pub id: IdSpan,
    /// The Lamport timestamp of its first op (op `i` has `lamport + i`).
    pub lamport: Lamport,
    /// The ops its first op depends on (empty for the first change of a
    /// document; a change that continues its peer's previous one names
    /// that op).
    pub deps: Frontiers,
    /// When its commit was made (seconds since the Unix epoch), if the
    /// commit gave one ([`crate::CommitOptions::timestamp`]).
    pub timestamp: Option<i64>,
    /// Its commit's message, if any ([`crate::CommitOptions::message`]).
    pub message: Option<Arc<str>>,
}

impl Doc {
    /// The version vector `frontiers` stand for: the heads and every op
    /// they depend on. O(changes visited).
    ///
    /// # Errors
    ///
    /// [`crate::Error::UnknownOp`] if a head is not in this document's
    /// history; as [`Doc::load`] after a lazy snapshot import.
    ///
    /// # Examples
    ///
    /// ```
    /// use weft::Doc;
    ///
    /// let mut doc = Doc::new();
    /// doc.text("t").insert(0, "abc")?;
    /// let f = doc.frontiers();
    /// assert_eq!(doc.frontiers_to_vv(&f)?, doc.version());
    /// assert_eq!(doc.vv_to_frontiers(&doc.version())?, f);
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn frontiers_to_vv(&self, frontiers: &Frontiers) -> Result<VersionVector> {
        self.latest().loaded()?.log.frontiers_to_vv(frontiers)
    }

    /// The heads of version `vv`: its ops no other op of it depends on.
    ///
    /// # Errors
    ///
    /// [`crate::Error::UnknownOp`] if `vv` names an op this document does
    /// not have; [`crate::Error::InvalidVersion`] if it holds an op but not
    /// every op that op depends on; as [`Doc::load`].
    pub fn vv_to_frontiers(&self, vv: &VersionVector) -> Result<Frontiers> {
        self.latest().loaded()?.log.vv_to_frontiers(vv)
    }

    /// How version `a` relates to version `b`: `Less` if `b` includes
    /// every op of `a` and more, `Greater` the other way round, `Equal`,
    /// or `None` when each holds ops the other lacks (concurrent).
    ///
    /// # Errors
    ///
    /// As [`Doc::frontiers_to_vv`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::cmp::Ordering;
    /// use weft::{Doc, ExportMode};
    ///
    /// let mut a = Doc::new();
    /// a.text("t").insert(0, "x")?;
    /// let mut b = a.fork();
    /// let start = a.frontiers();
    /// a.text("t").insert(1, "y")?;
    /// b.text("t").insert(0, "z")?;
    /// a.import(&b.export(ExportMode::Updates { from: &a.version() })?)?;
    /// assert_eq!(a.cmp_frontiers(&start, &a.frontiers())?, Some(Ordering::Less));
    /// assert_eq!(a.cmp_frontiers(&a.frontiers(), &a.frontiers())?, Some(Ordering::Equal));
    /// assert_eq!(a.cmp_frontiers(&b.frontiers(), &start)?, Some(Ordering::Greater));
    /// let mine = a.vv_to_frontiers(&{
    ///     let mut v = a.version();
    ///     v.set(b.peer_id(), 0); // a's ops only
    ///     v
    /// })?;
    /// assert_eq!(a.cmp_frontiers(&mine, &b.frontiers())?, None);
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn cmp_frontiers(&self, a: &Frontiers, b: &Frontiers) -> Result<Option<Ordering>> {
        let log = &self.latest().loaded()?.log;
        let (a, b) = (log.frontiers_to_vv(a)?, log.frontiers_to_vv(b)?);
        Ok(a.partial_cmp(&b))
    }

    /// Every change of the history, in the order this document received
    /// them (each change after the changes it depends on). Two replicas
    /// with the same history may split it into changes differently (a
    /// change that arrived in parts is listed in parts).
    ///
    /// # Errors
    ///
    /// As [`Doc::load`] after a lazy snapshot import.
    ///
    /// # Examples
    ///
    /// ```
    /// use weft::{Doc, ExportMode, IdSpan, OpId};
    ///
    /// let mut a = Doc::new();
    /// a.set_peer_id(1)?;
    /// a.text("t").insert(0, "ab")?;
    /// let mut b = a.fork();
    /// b.set_peer_id(2)?;
    /// b.text("t").insert(2, "c")?;
    /// a.import(&b.export(ExportMode::Updates { from: &a.version() })?)?;
    /// let changes = a.changes()?;
    /// assert_eq!(changes.len(), 2);
    /// assert_eq!(changes[1].id, IdSpan::new(2, 0..1));
    /// assert_eq!(changes[1].lamport, 2);
    /// assert!(changes[1].deps.contains(OpId::new(1, 1)));
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn changes(&self) -> Result<Vec<ChangeMeta>> {
        let log = &self.latest().loaded()?.log;
        let mut out = Vec::with_capacity(log.changes().len());
        for c in log.changes() {
            let peer = log.peers().get(c.peer);
            let part = |from: Counter, to: Counter, info: Option<&CommitInfo>| ChangeMeta {
                id: IdSpan::new(peer, from..to),
                lamport: c.lamport + (from - c.counter),
                deps: if from == c.counter {
                    log.deps(c).iter().map(|&d| log.seq_to_id(d)).collect()
                } else {
                    std::iter::once(OpId::new(peer, from - 1)).collect()
                },
                timestamp: info.and_then(|i| i.timestamp),
                message: info.and_then(|i| i.message.clone()),
            };
            // Split where commits with a message or timestamp start and
            // end: each part carries its commit's.
            let (mut at, end) = (c.counter, c.counter_end());
            for info in log.commit_infos_in(peer, c.counter..end) {
                let (s, e) = (info.start.max(at), info.end.min(end));
                if s > at {
                    out.push(part(at, s, None));
                }
                if e > s {
                    out.push(part(s, e, Some(info)));
                    at = e;
                }
            }
            if at < end {
                out.push(part(at, end, None));
            }
        }
        Ok(out)
    }

    /// A new document holding exactly the history up to `frontiers` (the
    /// version's ops, texts and marks, as this document had them then),
    /// with this document's style configuration and a new random peer id.
    /// It is editable and merges back with this document like any
    /// replica. Pending updates are not carried over. O(size of that
    /// history).
    ///
    /// # Errors
    ///
    /// [`crate::Error::UnknownOp`] if `frontiers` name an op this document
    /// does not have; as [`Doc::load`].
    ///
    /// # Examples
    ///
    /// ```
    /// use weft::{Doc, ExportMode};
    ///
    /// let mut doc = Doc::new();
    /// doc.text("t").insert(0, "Hello")?;
    /// let draft = doc.frontiers();
    /// doc.text("t").insert(5, " world")?;
    ///
    /// let mut old = doc.fork_at(&draft)?;
    /// assert_eq!(old.text("t").to_string(), "Hello");
    /// old.text("t").insert(0, "Oh, ")?;
    /// doc.import(&old.export(ExportMode::Updates { from: &doc.version() })?)?;
    /// assert_eq!(doc.text("t").to_string(), "Oh, Hello world");
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn fork_at(&self, frontiers: &Frontiers) -> Result<Doc> {
        let doc = self.latest().loaded()?;
        let upto = doc.log.frontiers_to_vv(frontiers)?;
        let mut fork = doc.doc_at(&upto, false)?;
        fork.style = self.style.clone();
        // As for `fork`: the open change's ops it holds count as sent.
        if self.detached.is_none() {
            self.note_sent(doc, &crate::ExportMode::SnapshotAt(frontiers));
        }
        Ok(fork)
    }

    /// What changed from version `from` to version `to`, per text, as
    /// change deltas in chars (the type events carry): applied to a
    /// text's delta at `from`, each gives its delta at `to`. A text that
    /// does not exist at one side counts as empty there; texts that are
    /// equal at both are left out. O(size of both versions).
    ///
    /// # Errors
    ///
    /// As [`Doc::fork_at`].
    ///
    /// # Examples
    ///
    /// ```
    /// use weft::{Delta, Doc};
    ///
    /// let mut doc = Doc::new();
    /// doc.text("t").insert(0, "Hello world")?;
    /// let v1 = doc.frontiers();
    /// doc.text("t").mark(0..5, "bold", true)?;
    /// doc.text("t").delete(5, 6)?;
    /// let diff = doc.diff(&v1, &doc.frontiers())?;
    /// assert_eq!(diff[0].name, "t");
    /// assert_eq!(
    ///     diff[0].delta,
    ///     vec![Delta::retain_with(5, [("bold", true)]), Delta::delete(6)]
    /// );
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn diff(&self, from: &Frontiers, to: &Frontiers) -> Result<Vec<TextDiff>> {
        self.diff_in(from, to, Unit::Char)
    }

    /// [`Doc::diff`] counted in `unit` (e.g. [`Unit::Utf16`] for Quill).
    ///
    /// # Errors
    ///
    /// As [`Doc::fork_at`].
    pub fn diff_in(&self, from: &Frontiers, to: &Frontiers, unit: Unit) -> Result<Vec<TextDiff>> {
        let doc = self.latest().loaded()?;
        let (a, b) = (doc.log.frontiers_to_vv(from)?, doc.log.frontiers_to_vv(to)?);
        let mut view = doc.doc_at(&a, true)?;
        if a <= b {
            // The ops in between merge into the view, which records what
            // they change as an event would.
            let mut draft = Draft::new(Units::default().with(unit));
            let update = Update::from_log(&doc.log, &doc.texts, &a, Some(&b))?;
            match view.apply_to_view(update, Some(&mut draft)) {
                Ok(()) => {
                    view.fold_incarnations(&mut draft);
                    let event = draft.take_event(
                        EventTrigger::Checkout,
                        None,
                        unit,
                        |t| view.text_name(t),
                        view.log.map_names(),
                    );
                    return Ok(event.texts);
                }
                // A shallow document cannot place ops concurrent to its
                // root on a view (the import changed nothing): compare
                // the two versions instead, the later one as it holds.
                Err(Error::TrimmedHistory) => {}
                Err(e) => return Err(e),
            }
        }
        let other = doc.doc_at(&b, true)?;
        let mut out = Vec::new();
        for name in shown_names(view.text_names(), other.text_names()) {
            let delta = diff_texts(&text_delta(&view, name), &text_delta(&other, name), unit);
            if !delta.is_empty() {
                out.push(TextDiff {
                    name: name.to_owned(),
                    delta,
                });
            }
        }
        Ok(out)
    }

    /// What changed in the maps from version `from` to version `to` (in
    /// either direction): per map, each key whose value differs, with its
    /// value at `to` (`None`: absent). O(entries of the maps at both
    /// versions, plus rebuilding them).
    ///
    /// # Errors
    ///
    /// As [`Doc::fork_at`].
    ///
    /// # Examples
    ///
    /// ```
    /// use weft::{Doc, Value};
    ///
    /// let mut doc = Doc::new();
    /// doc.map("m").set("k", 1)?;
    /// let v1 = doc.frontiers();
    /// doc.map("m").set("k", 2)?;
    /// let diff = doc.diff_maps(&v1, &doc.frontiers())?;
    /// assert_eq!(diff[0].changes.get("k"), Some(&Some(Value::I64(2))));
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn diff_maps(&self, from: &Frontiers, to: &Frontiers) -> Result<Vec<MapDiff>> {
        let doc = self.latest().loaded()?;
        let (a, b) = (doc.log.frontiers_to_vv(from)?, doc.log.frontiers_to_vv(to)?);
        let (old, new) = (doc.doc_at(&a, true)?, doc.doc_at(&b, true)?);
        let empty = MapState::default();
        let state = |d: &Doc, name: &str| {
            d.shown_map(name)
                .and_then(|i| d.maps.get(i))
                .cloned()
                .unwrap_or_else(|| empty.clone())
        };
        let mut out = Vec::new();
        for name in shown_names(old.map_names(), new.map_names()) {
            let changes: std::collections::BTreeMap<String, Option<Value>> = state(&old, name)
                .changes_to(&state(&new, name))
                .into_iter()
                .map(|(k, c)| (k.into(), c.new))
                .collect();
            if !changes.is_empty() {
                out.push(MapDiff {
                    name: name.to_owned(),
                    changes,
                });
            }
        }
        Ok(out)
    }

    /// Makes every text (content and marks) and every map equal to what
    /// it was at version `frontiers`, by new local ops in the open
    /// change: history is kept, and peers' concurrent edits merge with
    /// the revert like with any edit. Texts created after that version
    /// are emptied, and keys written after it deleted.
    /// O(size of the document and of that version).
    ///
    /// # Errors
    ///
    /// [`crate::Error::Detached`] while checked out; as [`Doc::fork_at`];
    /// as [`crate::Text::apply_delta`] when the
    /// document runs out of ids (then nothing has changed in that text).
    ///
    /// # Examples
    ///
    /// ```
    /// use weft::{Delta, Doc};
    ///
    /// let mut doc = Doc::new();
    /// doc.text("t").insert(0, "Hello world")?;
    /// let good = doc.frontiers();
    /// doc.text("t").delete(0, 6)?;
    /// doc.text("t").mark(0..5, "bold", true)?;
    /// doc.revert_to(&good)?;
    /// assert_eq!(doc.text("t").to_delta(), vec![Delta::insert("Hello world")]);
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn revert_to(&mut self, frontiers: &Frontiers) -> Result<()> {
        if self.is_detached() {
            return Err(crate::Error::Detached);
        }
        let old = self.fork_at(frontiers)?;
        let names: Vec<String> = shown_names(self.text_names(), old.text_names())
            .into_iter()
            .map(str::to_owned)
            .collect();
        for name in names {
            let now = self.text(&name).to_delta();
            let change = diff_texts(&now, &text_delta(&old, &name), Unit::Char);
            if !change.is_empty() {
                self.text(&name).apply_delta(&change)?;
            }
        }
        let frontiers_now = self.frontiers();
        for diff in self.diff_maps(&frontiers_now, frontiers)? {
            let mut map = self.map(&diff.name);
            for (key, value) in diff.changes {
                match value {
                    Some(v) => map.set(&key, v)?,
                    None => map.delete(&key)?,
                }
            }
        }
        Ok(())
    }
}

/// The names of `a` followed by those of `b` that `a` lacks.
fn shown_names<'a>(
    a: impl Iterator<Item = &'a str>,
    b: impl Iterator<Item = &'a str>,
) -> Vec<&'a str> {
    let mut names: Vec<&str> = a.collect();
    let seen: std::collections::HashSet<&str> = names.iter().copied().collect();
    names.extend(b.filter(|n| !seen.contains(n)));
    names
}

/// The delta of text `name` of `doc`, empty if it has none.
pub(super) fn text_delta(doc: &Doc, name: &str) -> Vec<Delta> {
    doc.get_text(name).map(|t| t.to_delta()).unwrap_or_default()
}
