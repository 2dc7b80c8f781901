//! Deleting texts and maps ([`Doc::delete_text`], [`Doc::delete_map`]),
//! and how a name finds the container it shows.
//!
//! A container's name leads to one *incarnation* at a time. The first is
//! the container of that very name. Deleting it writes, in a register
//! (an internal map per kind, last writer wins by (Lamport, peer) like
//! any map key), the name of the next incarnation:
//! `"\u{1}{peer}@{counter}\u{1}{name}"`, after the id of the deleting op.
//! Edits made after the delete go to that new, empty container; edits
//! made concurrently went to the old one, which stays in the history,
//! hidden. Concurrent deletes of one name agree on the one that wins the
//! register, so every replica shows the same incarnation.
//!
//! Names starting with U+0001 are reserved for this: the API refuses to
//! write them ([`Doc::text`], [`Doc::map`]) and reads nothing through
//! them, and containers of such names that arrive from peers are never
//! listed nor reported in events (unless they are an incarnation shown
//! under its name). Register keys that are reserved names resolve
//! nothing: only a forged op writes them.
//!
//! Events name containers by their public name. A change of incarnation
//! is reported (see [`Doc::fold_incarnations`]) as the old incarnation's
//! text deleted and the new one's inserted (for a map: each key's value
//! in the old one replaced by its value in the new one), so mirrors and
//! undo managers follow without knowing about incarnations.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use crate::error::{Error, Result};
use crate::event::KeyChange;
use crate::event::{compose, Draft};
use crate::id::{MapIdx, TextIdx};
use crate::map::{Map, MapState, MapTable};
use crate::oplog::{is_reserved, public_name, OpLog, PublicNames, REGISTERS};
use crate::style::Delta;
use crate::text::{Need, StoredStyles, Text, TextSource, TextState};
use crate::value::Value;

use super::Doc;

/// The first char of reserved names.
const RESERVED: char = '\u{1}';

/// What [`Doc::text`] gives for a reserved name: an empty text, none of
/// the document's, whose every edit returns [`Error::ReservedKey`].
#[derive(Debug, Clone)]
pub(super) struct Refused {
    state: TextState,
    source: Refuse,
}

/// The "snapshot" of a [`Refused`] text: loading it for an edit fails.
#[derive(Debug, Clone)]
struct Refuse {
    name: String,
}

impl TextSource for Refuse {
    fn stored_text<'a>(&'a self, _log: &'a OpLog, _index: u32) -> Result<&'a str> {
        Ok("")
    }

    fn stored_styles(&self, _index: u32) -> Option<&StoredStyles> {
        None
    }

    fn load_text(
        &mut self,
        _log: &mut OpLog,
        _state: &mut TextState,
        _text: TextIdx,
        _need: Need,
    ) -> Result<()> {
        Err(Error::ReservedKey(self.name.clone()))
    }
}

/// The two kinds of containers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Text,
    Map,
}

impl Kind {
    /// Its register's index in [`REGISTERS`].
    fn register(self) -> usize {
        match self {
            Kind::Text => 0,
            Kind::Map => 1,
        }
    }
}

/// The incarnation a register value (`None`: no delete yet) names for
/// `name`. A value no delete writes (only a forged op can) names a
/// container no op creates, the same on every replica.
fn incarnation<'a>(name: &'a str, value: Option<&'a Value>) -> Cow<'a, str> {
    match value {
        None => Cow::Borrowed(name),
        Some(Value::String(s))
            if s.starts_with(RESERVED) && public_name(s) == name && s != name =>
        {
            Cow::Borrowed(s)
        }
        Some(_) => Cow::Owned(format!("{RESERVED}{RESERVED}{name}")),
    }
}

/// The container `name` of `kind` shows: its current incarnation (a
/// reserved name is its own: [`Doc::shown_text`] and [`Doc::shown_map`]
/// read nothing through one, and `Doc::text` refuses it).
pub(crate) fn resolve<'a>(
    log: &'a OpLog,
    maps: &'a MapTable,
    kind: Kind,
    name: &'a str,
) -> Cow<'a, str> {
    if is_reserved(name) {
        return Cow::Borrowed(name);
    }
    match log.map_names().register(kind.register()) {
        None => Cow::Borrowed(name),
        Some(r) => incarnation(name, maps.get(r).and_then(|r| r.get(name))),
    }
}

/// Whether the container of raw name `raw` is shown when its kind's
/// register is `register` (e.g. a version's, before a checkout): it is
/// what its public name resolves to, and not a reserved name.
pub(crate) fn shown_under(register: Option<&MapState>, raw: &str) -> bool {
    let name = public_name(raw);
    if name == raw && is_reserved(raw) {
        return false;
    }
    if is_reserved(name) {
        return name == raw;
    }
    incarnation(name, register.and_then(|r| r.get(name))) == raw
}

impl Doc {
    /// Deletes the text called `name`: it no longer shows (in
    /// [`Doc::get_text`], [`Doc::text_names`], deltas, events), and
    /// [`Doc::text`] of that name starts a new, empty text. The delete is
    /// an op in the open change, like any edit: it travels in updates and
    /// snapshots, subscribers see the text's content deleted, and an
    /// [`crate::UndoManager`] undoes it by putting that content back.
    ///
    /// Concurrent edits: edits a peer made to the text without having
    /// seen the delete are kept in the history but stay hidden with the
    /// deleted text; edits made after it (by any peer that has it) go to
    /// the new text. When peers delete the same text concurrently, the
    /// delete with the greatest (Lamport, peer) wins, and only texts
    /// started after it show. [`Doc::checkout`] and [`Doc::fork_at`]
    /// show the text a version had, deleted or not.
    ///
    /// Names starting with U+0001 are reserved (this is how the deleted
    /// texts are kept): [`Doc::text`] refuses to edit them, and reads
    /// of them show nothing.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownText`] if the document shows no text of that name;
    /// [`Error::Detached`] on a checked-out version; as [`Doc::load`]
    /// after a lazy snapshot import; [`Error::HistoryFull`] or
    /// [`Error::CounterOverflow`] when the op does not fit the id spaces.
    /// Nothing changes then.
    ///
    /// # Examples
    ///
    /// ```
    /// use weft::{Doc, ExportMode};
    ///
    /// let mut a = Doc::new();
    /// a.text("draft").insert(0, "old notes")?;
    /// let mut b = a.fork();
    ///
    /// a.delete_text("draft")?;
    /// assert!(a.get_text("draft").is_none());
    /// a.text("draft").insert(0, "fresh")?; // a new text of that name
    /// b.text("draft").insert(0, "more ")?; // concurrent: stays hidden
    ///
    /// a.import(&b.export(ExportMode::Updates { from: &a.version() })?)?;
    /// b.import(&a.export(ExportMode::Updates { from: &b.version() })?)?;
    /// assert_eq!(a.text("draft").to_string(), "fresh");
    /// assert_eq!(b.text("draft").to_string(), "fresh");
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn delete_text(&mut self, name: &str) -> Result<()> {
        self.delete_container(Kind::Text, name)
    }

    /// Deletes the map called `name`, as [`Doc::delete_text`] deletes a
    /// text: it no longer shows ([`Doc::get_map`], [`Doc::map_names`]),
    /// [`Doc::map`] of that name starts a new, empty map, subscribers see
    /// each of its keys deleted, and writes concurrent to the delete stay
    /// hidden with it.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownMap`] if the document shows no map of that name;
    /// otherwise as [`Doc::delete_text`].
    ///
    /// # Examples
    ///
    /// ```
    /// use weft::{Doc, Value};
    ///
    /// let mut doc = Doc::new();
    /// doc.map("meta").set("title", "Notes")?;
    /// doc.delete_map("meta")?;
    /// assert!(doc.get_map("meta").is_none());
    /// assert_eq!(doc.map("meta").get("title"), None);
    /// doc.map("meta").set("title", "New")?;
    /// assert_eq!(doc.map_names().collect::<Vec<_>>(), ["meta"]);
    /// assert_eq!(doc.get_map("meta").unwrap().get("title"), Some(&Value::from("New")));
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn delete_map(&mut self, name: &str) -> Result<()> {
        self.delete_container(Kind::Map, name)
    }

    fn delete_container(&mut self, kind: Kind, name: &str) -> Result<()> {
        self.log.check_writable()?;
        self.load()?;
        let shown = match kind {
            Kind::Text => self.shown_text(name).is_some(),
            Kind::Map => self.shown_map(name).is_some(),
        };
        if !shown {
            return Err(match kind {
                Kind::Text => Error::UnknownText(name.to_owned()),
                Kind::Map => Error::UnknownMap(name.to_owned()),
            });
        }
        let register = self.log.intern_map(REGISTERS[kind.register()]);
        let draft = super::events::open_draft(&mut self.draft, &self.observers);
        let mut map = Map::new(
            &mut self.log,
            self.maps.get_mut(register),
            register,
            self.peer,
            draft,
            None,
        );
        map.write_as(name, |id| {
            Some(Value::String(format!(
                "{RESERVED}{}@{}{RESERVED}{name}",
                id.peer, id.counter
            )))
        })
    }

    /// The text public name `name` shows, if any: none through a
    /// reserved name.
    pub(super) fn shown_text(&self, name: &str) -> Option<TextIdx> {
        if is_reserved(name) {
            return None;
        }
        self.texts
            .find(&resolve(&self.log, &self.maps, Kind::Text, name))
    }

    /// The map public name `name` shows, if any: none through a reserved
    /// name.
    pub(super) fn shown_map(&self, name: &str) -> Option<MapIdx> {
        if is_reserved(name) {
            return None;
        }
        self.log
            .map_names()
            .find(&resolve(&self.log, &self.maps, Kind::Map, name))
    }

    /// [`Doc::text`] of a reserved name (see [`Refused`]).
    #[cold]
    #[inline(never)]
    pub(super) fn refused_text(&mut self, name: &str) -> Text<'_> {
        let refused = self.refused.insert(Box::new(Refused {
            state: TextState::new(name),
            source: Refuse {
                name: name.to_owned(),
            },
        }));
        Text::new(
            &mut self.log,
            &mut refused.state,
            TextIdx::new(u32::MAX),
            self.peer,
            &mut self.scratch,
            &self.style,
            Some(&mut refused.source),
            None,
        )
    }

    /// The public names of `public` whose container of `kind` shows, in
    /// the order of those containers' indexes (`index` finds a container
    /// by raw name). O(k log k) for k public names: each resolves to the
    /// one incarnation it shows, hidden ones are never visited.
    pub(crate) fn shown_names<'a>(
        &'a self,
        kind: Kind,
        public: &'a PublicNames,
        index: impl Fn(&str) -> Option<usize>,
    ) -> Vec<&'a str> {
        let mut shown: Vec<(usize, &str)> = public
            .iter()
            .filter_map(|name| {
                let raw = resolve(&self.log, &self.maps, kind, name);
                let i = index(&raw)?;
                self.is_shown(kind, &raw).then_some((i, name))
            })
            .collect();
        shown.sort_unstable_by_key(|&(i, _)| i);
        shown.into_iter().map(|(_, name)| name).collect()
    }

    /// Whether the container of raw name `raw` is shown (under its public
    /// name): it is what that name resolves to, and not reserved.
    pub(crate) fn is_shown(&self, kind: Kind, raw: &str) -> bool {
        let register = self
            .log
            .map_names()
            .register(kind.register())
            .and_then(|r| self.maps.get(r));
        shown_under(register, raw)
    }

    /// Rewrites `draft` (the changes of one event, recorded per raw
    /// container) into what subscribers see under public names: changes
    /// to hidden containers go, a name whose incarnation changed gets
    /// the old one's change, then its content deleted and the new one's
    /// inserted (its inverse, if kept: back to the old content), and the
    /// registers' own changes go.
    pub(super) fn fold_incarnations(&self, draft: &mut Draft) {
        let names = self.log.map_names();
        if !names.has_reserved() && !self.texts.has_reserved() {
            // Nothing deleted, no reserved names: nothing is hidden.
            return;
        }
        let mut folded_texts = BTreeSet::new();
        let mut folded_maps = BTreeSet::new();
        for kind in [Kind::Text, Kind::Map] {
            let Some(register) = names.register(kind.register()) else {
                continue;
            };
            for (name, change) in draft.take_map(register) {
                // A reserved name never resolves through the register
                // (only a forged op writes such a key).
                if is_reserved(&name) {
                    continue;
                }
                let old = incarnation(&name, change.old.as_ref());
                let new = incarnation(&name, change.new.as_ref());
                if old == new {
                    continue;
                }
                match kind {
                    Kind::Text => folded_texts.extend(self.fold_text(draft, &old, &new)),
                    Kind::Map => folded_maps.extend(self.fold_map(draft, &old, &new)),
                }
            }
        }
        draft.retain_texts(|t| {
            let raw = self.texts.get(t).map_or("", |s| s.name());
            folded_texts.contains(&t) || self.is_shown(Kind::Text, raw)
        });
        draft.retain_maps(|m| {
            let raw = self.log.map_names().name(m);
            folded_maps.contains(&m) || self.is_shown(Kind::Map, raw)
        });
    }

    /// [`Doc::fold_incarnations`] of one text whose incarnation changed
    /// from `old` to `new`: the text the change is recorded under.
    fn fold_text(&self, draft: &mut Draft, old: &str, new: &str) -> Option<TextIdx> {
        let old_t = self.texts.find(old);
        let new_t = self.texts.find(new);
        let at = old_t.or(new_t)?;
        let old_change = old_t.map(|t| draft.take_text(t)).unwrap_or_default();
        if let Some(t) = new_t {
            draft.take_text(t);
        }
        let new_now = self.raw_delta(new);
        let mut change: [Vec<Delta>; 3] = Default::default();
        for unit in draft.units().iter() {
            let len = old_t
                .and_then(|t| self.texts.get(t))
                .map_or(0, |s| s.visible_len(unit) as usize);
            let mut replace = new_now.clone();
            if len > 0 {
                replace.push(Delta::delete(len));
            }
            let before = &old_change[unit.index()];
            change[unit.index()] = if before.is_empty() {
                replace
            } else {
                compose(before, &replace, unit)
            };
        }
        draft.put_text(at, change);
        Some(at)
    }

    /// [`Doc::fold_incarnations`] of one map whose incarnation changed
    /// from `old` to `new`: the map the change is recorded under.
    fn fold_map(&self, draft: &mut Draft, old: &str, new: &str) -> Option<MapIdx> {
        let names = self.log.map_names();
        let (old_m, new_m) = (names.find(old), names.find(new));
        let at = old_m.or(new_m)?;
        let empty = MapState::default();
        let state = |m: Option<MapIdx>| m.and_then(|m| self.maps.get(m)).unwrap_or(&empty);
        let old_changes = old_m.map(|m| draft.take_map(m)).unwrap_or_default();
        if let Some(m) = new_m {
            draft.take_map(m);
        }
        let (old_now, new_now) = (state(old_m), state(new_m));
        let mut keys: BTreeMap<Box<str>, KeyChange> = BTreeMap::new();
        let before = |key: &str| match old_changes.get(key) {
            Some(c) => c.old.clone(),
            None => old_now.get(key).cloned(),
        };
        let all: BTreeSet<&str> = old_now
            .iter()
            .chain(new_now.iter())
            .map(|(k, _)| k)
            .chain(old_changes.keys().map(|k| &**k))
            .collect();
        for key in all {
            let change = KeyChange {
                old: before(key),
                new: new_now.get(key).cloned(),
            };
            if change.old != change.new {
                keys.insert(key.into(), change);
            }
        }
        draft.put_map(at, keys);
        Some(at)
    }
}
