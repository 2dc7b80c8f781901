//! Change events: what a document tells its subscribers after each state
//! change (a commit of local edits, an import that applied something),
//! as a Quill change delta per changed text.
//!
//! A [`Draft`] collects the changes of one event while they happen: local
//! edits record their own positions (they are known), and each applied
//! import plan adds the delta the text computes from what the plan changed
//! (see `text/changes.rs`). Deltas are kept per unit that some subscriber
//! asked for, each composed in its own unit, so the UTF-16 delta is exact
//! without re-reading the text. With no subscriber there is no draft and
//! nothing is recorded. A draft whose only change is one plain edit (an
//! unstyled insert or a delete: a commit per keystroke) keeps the edit
//! itself and writes its event straight into the buffers of the event it
//! keeps; anything else first expands it into the deltas above.

mod compose;
mod subscribe;

use std::collections::BTreeMap;

use crate::error::Result;
use crate::id::{MapIdx, TextIdx};
use crate::oplog::MapNames;
use crate::style::{Attributes, Delta};
use crate::unit::Unit;
use crate::value::Value;

pub(crate) use compose::{apply_change, attribute_changes, compose, diff_texts, normalize};
use subscribe::EventListCache;
pub use subscribe::Subscription;
pub(crate) use subscribe::{CommitCallback, Observers};

/// What a write did to a key that others can see: its value before and
/// after (`None`: absent).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct KeyChange {
    pub old: Option<Value>,
    pub new: Option<Value>,
}
/// What caused a [`DocEvent`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EventTrigger {
    /// A commit of this document's own edits ([`crate::Doc::commit`], or
    /// an operation that commits first, such as an import).
    Local,
    /// An import that applied ops (pending updates it released included).
    Import,
    /// [`crate::UndoManager::undo`].
    Undo,
    /// [`crate::UndoManager::redo`].
    Redo,
    /// [`crate::Doc::checkout`] or [`crate::Doc::checkout_to_latest`]:
    /// the document now shows another version.
    Checkout,
}

/// What changed in one text, as a Quill change delta: applied to the
/// text's delta from before the event (see [`TextDiff::apply_to`]) it
/// gives exactly the text's delta after it. Retains carry attributes
/// where styles changed (`Null` removes a key); inserts carry the new
/// text's attributes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TextDiff {
    /// The text's name.
    pub name: String,
    /// The change, counted in the event's [`DocEvent::unit`].
    pub delta: Vec<Delta>,
}

impl TextDiff {
    /// Applies the change to `mirror`, a copy of the text's delta (inserts
    /// only, as [`crate::TextRef::to_delta`] gives) from before the event,
    /// counting in `unit` (the event's). O(|mirror| + |delta|).
    ///
    /// # Errors
    ///
    /// [`crate::Error::OutOfBounds`] or [`crate::Error::InvalidDelta`] if
    /// `mirror` is not the text as it was (then `mirror` is unchanged).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use weft::{Delta, Doc, Unit};
    ///
    /// let mut doc = Doc::new();
    /// let mirror = Arc::new(Mutex::new(Vec::<Delta>::new()));
    /// let m = Arc::clone(&mirror);
    /// let _sub = doc.subscribe(move |event| {
    ///     for diff in &event.texts {
    ///         diff.apply_to(&mut m.lock().unwrap(), event.unit).unwrap();
    ///     }
    /// });
    /// doc.text("t").insert(0, "Hello")?;
    /// doc.text("t").mark(0..5, "bold", true)?;
    /// doc.commit();
    /// assert_eq!(*mirror.lock().unwrap(), doc.text("t").to_delta());
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn apply_to(&self, mirror: &mut Vec<Delta>, unit: Unit) -> Result<()> {
        *mirror = apply_change(mirror, &self.delta, unit)?;
        Ok(())
    }
}

/// A change of a document's state, delivered to the callbacks given to
/// [`crate::Doc::subscribe`] right after it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DocEvent {
    /// What caused it.
    pub trigger: EventTrigger,
    /// The origin given with the commit or import
    /// ([`crate::Doc::commit_with`], [`crate::Doc::import_with`]), if any.
    pub origin: Option<String>,
    /// The unit the deltas count in (as asked when subscribing).
    pub unit: Unit,
    /// Each text that changed, in the order the texts were created.
    pub texts: Vec<TextDiff>,
    /// Each map that changed (see [`crate::Map`]), in the order the
    /// document first saw the maps.
    pub maps: Vec<MapDiff>,
}

/// What an event changed in one map: each key whose value changed, with
/// its new value (`None`: deleted). A key written and changed back within
/// one event is left out.
///
/// # Examples
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use weft::{Doc, Value};
///
/// let mut doc = Doc::new();
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let s = Arc::clone(&seen);
/// let _sub = doc.subscribe(move |event| s.lock().unwrap().extend(event.maps.clone()));
/// doc.map("m").set("k", 1)?;
/// doc.commit();
/// doc.map("m").delete("k")?;
/// doc.commit();
/// let seen = seen.lock().unwrap();
/// assert_eq!(seen[0].changes.get("k"), Some(&Some(Value::I64(1))));
/// assert_eq!(seen[1].changes.get("k"), Some(&None));
/// # Ok::<(), weft::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MapDiff {
    /// The map's name.
    pub name: String,
    /// Key -> its new value, or `None` when it was deleted.
    pub changes: BTreeMap<String, Option<Value>>,
}

/// A local commit, as an undo manager hears of it: what caused it, its
/// origin, the counters of this peer's ops it committed, and per map key
/// its map writes set, the value the key had before (container deletes,
/// register writes, aside).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Committed<'a> {
    pub trigger: EventTrigger,
    pub origin: Option<&'a str>,
    pub ops: std::ops::Range<crate::id::Counter>,
    /// (public map name, key, value before the commit).
    pub maps: Vec<(String, String, Option<Value>)>,
}

/// A set of units (bit [`Unit::index`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Units(pub u8);

impl Units {
    /// Chars only (what [`crate::Doc::subscribe`] asks for).
    pub const CHAR: Units = Units(1 << 0);

    /// Whether `unit` is in the set.
    pub fn has(self, unit: Unit) -> bool {
        self.0 & (1 << unit.index()) != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The units in the set.
    pub fn iter(self) -> impl Iterator<Item = Unit> {
        Unit::ALL.into_iter().filter(move |&u| self.has(u))
    }

    /// The set with `unit` added.
    pub fn with(self, unit: Unit) -> Units {
        Units(self.0 | (1 << unit.index()))
    }
}

/// The changes of one event so far, per text and unit.
///
/// A document keeps its draft from one commit to the next (while the
/// subscribers want the same units), so the buffers below live on: a
/// commit per keystroke builds its event without allocating.
#[derive(Debug, Clone, Default)]
pub(crate) struct Draft {
    units: Units,
    texts: BTreeMap<TextIdx, [Vec<Delta>; 3]>,
    /// Per map and key, its value before the draft and now (the same in
    /// every unit).
    maps: BTreeMap<MapIdx, BTreeMap<Box<str>, KeyChange>>,
    /// The last event handed out, given back by [`Draft::put_back`]: its
    /// texts' names and (empty) delta buffers are reused by the next.
    spare_event: Option<DocEvent>,
    /// The subscribers' callback list of the last event (see
    /// [`Draft::callback_cache`]).
    callbacks: EventListCache,
    /// The texts the event out there names, in its order.
    taken: Vec<TextIdx>,
    /// Plain retains and inserts of cleared deltas, reused by
    /// [`DeltaBuf`] (building and dropping them, their attributes and
    /// strings, cost more than the rest of a keystroke's event).
    spare: SpareOps,
    /// Whether some text's delta may not be in normal form: it was
    /// composed or given whole ([`Draft::add`], [`Draft::put_text`]);
    /// deltas written by [`Draft::record`] alone are normal already.
    composed: bool,
    /// The next delta of a text that already changed in this draft,
    /// before it is composed onto the change so far.
    scratch: Vec<Delta>,
    /// The draft's only change, while it is one plain edit (see
    /// [`Draft::record_plain`]): kept as the edit, not as deltas, so
    /// its event is written straight into the event's buffers.
    single: Option<Single>,
    /// The text a [`Single`] insert inserted (its buffer is reused).
    single_text: String,
    /// Whether `texts` holds a change (its buffers outlive changes, so
    /// its entries say nothing).
    dirty: bool,
}

/// One plain edit of one text: an insert of unstyled text (the draft's
/// `single_text`), or a delete.
#[derive(Debug, Clone)]
struct Single {
    text: TextIdx,
    /// The edit's range in each unit the draft keeps (by
    /// [`Unit::index`]): where the insert goes (empty), or what the
    /// delete removes.
    at: [std::ops::Range<usize>; 3],
    insert: bool,
}

/// The empty attributes of plain ops.
static NO_ATTRIBUTES: Attributes = Attributes::new();

/// Spare ops of each kind a draft keeps at most.
const SPARE_OPS: usize = 8;
/// Capacity (bytes) above which an insert is not kept as a spare.
const SPARE_STRING_BYTES: usize = 64;

/// Ops of cleared deltas kept for the next ones: plain retains and
/// plain inserts (their strings), at most [`SPARE_OPS`] of each.
#[derive(Debug, Clone, Default)]
struct SpareOps {
    retains: Vec<Delta>,
    inserts: Vec<Delta>,
}

impl SpareOps {
    /// Keeps `op` if it is a plain retain or a small plain insert and
    /// there is room; drops it otherwise.
    fn keep(&mut self, op: Delta) {
        match &op {
            Delta::Retain { attributes, .. }
                if attributes.is_empty() && self.retains.len() < SPARE_OPS =>
            {
                self.retains.push(op);
            }
            Delta::Insert { insert, attributes }
                if attributes.is_empty()
                    && insert.capacity() <= SPARE_STRING_BYTES
                    && self.inserts.len() < SPARE_OPS =>
            {
                self.inserts.push(op);
            }
            _ => {}
        }
    }
}

/// Where a local edit writes its change delta (see [`Draft::record`]):
/// an empty buffer of the draft, and the draft's spare ops.
pub(crate) struct DeltaBuf<'a> {
    out: &'a mut Vec<Delta>,
    spare: &'a mut SpareOps,
}

impl DeltaBuf<'_> {
    /// Appends a plain retain of `n` (nothing if `n` is 0, so the delta
    /// stays in normal form).
    pub fn retain(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        let op = match self.spare.retains.pop() {
            Some(Delta::Retain {
                attributes,
                retain: _,
            }) => Delta::Retain {
                retain: n,
                attributes,
            },
            _ => Delta::retain(n),
        };
        self.out.push(op);
    }

    /// Appends `op`.
    pub fn push(&mut self, op: Delta) {
        self.out.push(op);
    }

    /// Appends an insert of `s` with `attributes`, in a spare op if the
    /// draft has one and `attributes` is empty.
    pub fn insert(&mut self, s: &str, attributes: &Attributes) {
        if attributes.is_empty() {
            if let Some(Delta::Insert {
                mut insert,
                attributes,
            }) = self.spare.inserts.pop()
            {
                insert.clear();
                insert.push_str(s);
                self.out.push(Delta::Insert { insert, attributes });
                return;
            }
        }
        self.out.push(Delta::Insert {
            insert: s.to_owned(),
            attributes: attributes.clone(),
        });
    }
}

impl Draft {
    /// An empty draft keeping deltas in `units`.
    pub fn new(units: Units) -> Draft {
        Draft {
            units,
            ..Draft::default()
        }
    }

    /// Records that `key` of map `map` changed (after everything recorded
    /// so far).
    pub fn add_map(&mut self, map: MapIdx, key: &str, change: KeyChange) {
        let keys = self.maps.entry(map).or_default();
        match keys.get_mut(key) {
            Some(c) => c.new = change.new,
            None => {
                keys.insert(key.into(), change);
            }
        }
    }

    /// Per map, each key whose value changed, with `pick` of its change.
    fn map_diffs(
        &self,
        names: &MapNames,
        pick: impl Fn(&KeyChange) -> Option<Value>,
    ) -> Vec<MapDiff> {
        self.maps
            .iter()
            .filter_map(|(&m, keys)| {
                let changes: BTreeMap<String, Option<Value>> = keys
                    .iter()
                    .filter(|(_, c)| c.old != c.new)
                    .map(|(k, c)| (k.to_string(), pick(c)))
                    .collect();
                (!changes.is_empty()).then(|| MapDiff {
                    name: crate::oplog::public_name(names.name(m)).to_owned(),
                    changes,
                })
            })
            .collect()
    }

    /// Takes out everything recorded for map `map` (key -> change).
    pub fn take_map(&mut self, map: MapIdx) -> BTreeMap<Box<str>, KeyChange> {
        self.maps.remove(&map).unwrap_or_default()
    }

    /// Puts back (replacing) what is recorded for map `map`.
    pub fn put_map(&mut self, map: MapIdx, keys: BTreeMap<Box<str>, KeyChange>) {
        if !keys.is_empty() {
            self.maps.insert(map, keys);
        }
    }

    /// Drops what is recorded for the maps `keep` refuses.
    pub fn retain_maps(&mut self, mut keep: impl FnMut(MapIdx) -> bool) {
        self.maps.retain(|&m, _| keep(m));
    }

    /// Drops what is recorded for the texts `keep` refuses.
    pub fn retain_texts(&mut self, mut keep: impl FnMut(TextIdx) -> bool) {
        self.expand_single();
        self.texts.retain(|&t, _| keep(t));
    }

    /// Takes out the change recorded for `text` (per unit).
    pub fn take_text(&mut self, text: TextIdx) -> [Vec<Delta>; 3] {
        self.expand_single();
        self.texts.remove(&text).unwrap_or_default()
    }

    /// Puts back (replacing) the change of `text` (per unit).
    pub fn put_text(&mut self, text: TextIdx, change: [Vec<Delta>; 3]) {
        self.expand_single();
        self.composed = true;
        self.dirty = true;
        self.texts.insert(text, change);
    }

    /// Where the subscribers' callback list is remembered from one event
    /// to the next (see [`Observers::event_callbacks`]).
    pub fn callback_cache(&mut self) -> &mut EventListCache {
        &mut self.callbacks
    }

    /// The units it keeps.
    pub fn units(&self) -> Units {
        self.units
    }

    /// Records that `change(unit)` happened to `text` after everything
    /// recorded so far, for each unit kept.
    pub fn add(&mut self, text: TextIdx, mut change: impl FnMut(Unit) -> Vec<Delta>) {
        self.expand_single();
        self.composed = true;
        self.dirty = true;
        let entry = self.texts.entry(text).or_default();
        for unit in self.units.iter() {
            let acc = &mut entry[unit.index()];
            let next = change(unit);
            // The first edit of a text in a change needs no composing (a
            // change recorded by an edit is in normal form).
            *acc = if acc.is_empty() {
                next
            } else {
                compose(acc, &next, unit)
            };
        }
    }

    /// [`Draft::add`] for a local edit: `change(unit, buf)` writes the
    /// edit's delta (in normal form) into `buf`, straight into the draft's
    /// buffer for the text when it is the text's first change in this
    /// draft (the common case: a commit per edit), so nothing is
    /// allocated or composed.
    pub fn record(&mut self, text: TextIdx, change: impl FnMut(Unit, &mut DeltaBuf<'_>)) {
        self.expand_single();
        self.record_deltas(text, change);
    }

    /// [`Draft::record`] once there is no [`Single`] edit.
    fn record_deltas(&mut self, text: TextIdx, mut change: impl FnMut(Unit, &mut DeltaBuf<'_>)) {
        debug_assert!(self.single.is_none(), "a single edit is expanded first");
        self.dirty = true;
        let entry = self.texts.entry(text).or_default();
        for unit in self.units.iter() {
            let acc = &mut entry[unit.index()];
            if acc.is_empty() {
                change(
                    unit,
                    &mut DeltaBuf {
                        out: acc,
                        spare: &mut self.spare,
                    },
                );
            } else {
                self.scratch.clear();
                change(
                    unit,
                    &mut DeltaBuf {
                        out: &mut self.scratch,
                        spare: &mut self.spare,
                    },
                );
                *acc = compose(acc, &self.scratch, unit);
                self.scratch.clear();
                self.composed = true;
            }
        }
    }

    /// [`Draft::record`] of a plain edit of `text` (made after everything
    /// recorded so far): `s` inserted without styles (`Some`), or chars
    /// deleted (`None`), over `at` in each unit kept (by [`Unit::index`];
    /// empty for an insert). The first change of a draft (a commit per
    /// keystroke) is kept as the edit itself, and its event written
    /// straight into the event's buffers.
    pub fn record_plain(
        &mut self,
        text: TextIdx,
        at: [std::ops::Range<usize>; 3],
        inserted: Option<&str>,
    ) {
        if !self.dirty && self.single.is_none() {
            if let Some(s) = inserted {
                self.single_text.clear();
                self.single_text.push_str(s);
            }
            self.single = Some(Single {
                text,
                at,
                insert: inserted.is_some(),
            });
            return;
        }
        self.expand_single();
        self.record_deltas(text, |unit, buf| {
            let r = &at[unit.index()];
            buf.retain(r.start);
            match inserted {
                Some(s) => buf.insert(s, &NO_ATTRIBUTES),
                None => buf.push(Delta::delete(r.len())),
            }
        });
    }

    /// Turns a [`Single`] edit into deltas in `texts`, as
    /// [`Draft::record`] would have written them, for whatever reads or
    /// composes them.
    fn expand_single(&mut self) {
        let Some(single) = self.single.take() else {
            return;
        };
        let text = std::mem::take(&mut self.single_text);
        self.record_deltas(single.text, |unit, buf| {
            let r = &single.at[unit.index()];
            buf.retain(r.start);
            if single.insert {
                buf.insert(&text, &NO_ATTRIBUTES);
            } else {
                buf.push(Delta::delete(r.len()));
            }
        });
        self.single_text = text;
    }

    /// Empties the draft, keeping its allocations, for the next change.
    pub fn clear(&mut self) {
        self.single = None;
        if std::mem::take(&mut self.dirty) {
            for deltas in self.texts.values_mut() {
                for delta in deltas.iter_mut() {
                    for op in delta.drain(..) {
                        self.spare.keep(op);
                    }
                }
            }
        }
        if !self.maps.is_empty() {
            self.maps.clear();
        }
        self.composed = false;
    }

    /// The event for subscribers of `unit` when the draft is one plain
    /// edit (see [`Draft::record_plain`]) and no map changed: written
    /// into the draft's kept event, whose buffers an event of the same
    /// shape only overwrites. `None` otherwise (then see
    /// [`Draft::take_event`]).
    pub fn plain_event<'n>(
        &mut self,
        trigger: EventTrigger,
        origin: Option<&str>,
        unit: Unit,
        name: impl Fn(TextIdx) -> &'n str,
    ) -> Option<&DocEvent> {
        let single = self.single.as_ref()?;
        if !self.maps.is_empty() {
            return None;
        }
        let event = self
            .spare_event
            .get_or_insert_with(|| blank_event(trigger, unit));
        relabel(event, trigger, origin, unit);
        // (`put_back` left the event's maps empty.)
        if event.texts.len() != 1 {
            event.texts.truncate(1);
            if event.texts.is_empty() {
                event.texts.push(TextDiff {
                    name: String::new(),
                    delta: Vec::new(),
                });
            }
        }
        let diff = event.texts.first_mut()?;
        let text_name = name(single.text);
        if diff.name != text_name {
            diff.name.clear();
            diff.name.push_str(text_name);
        }
        let inserted = single.insert.then_some(self.single_text.as_str());
        write_plain(
            &mut diff.delta,
            &mut self.spare,
            &single.at[unit.index()],
            inserted,
        );
        Some(event)
    }

    /// The event for subscribers of `unit`, its deltas moved out of the
    /// draft (give it back with [`Draft::put_back`]: a draft reused for
    /// the next change keeps its allocations, the event's included).
    pub fn take_event<'n>(
        &mut self,
        trigger: EventTrigger,
        origin: Option<&str>,
        unit: Unit,
        name: impl Fn(TextIdx) -> &'n str,
        maps: &MapNames,
    ) -> DocEvent {
        let mut event = self
            .spare_event
            .take()
            .unwrap_or_else(|| blank_event(trigger, unit));
        relabel(&mut event, trigger, origin, unit);
        self.taken.clear();
        self.expand_single();
        let mut n = 0;
        for (&t, d) in self.texts.iter_mut() {
            let delta = &mut d[unit.index()];
            // Normal form, and a text whose change cancels out is left
            // out.
            if self.composed {
                normalize(delta);
            }
            if delta.is_empty() {
                continue;
            }
            self.taken.push(t);
            let text_name = name(t);
            match event.texts.get_mut(n) {
                Some(diff) => {
                    if diff.name != text_name {
                        diff.name.clear();
                        diff.name.push_str(text_name);
                    }
                    // The diff's buffer is empty (see `put_back`).
                    std::mem::swap(&mut diff.delta, delta);
                }
                None => event.texts.push(TextDiff {
                    name: text_name.to_owned(),
                    delta: std::mem::take(delta),
                }),
            }
            n += 1;
        }
        event.texts.truncate(n);
        // (`put_back` left the event's maps empty.)
        if !self.maps.is_empty() {
            event.maps = self.map_diffs(maps, |c| c.new.clone());
        }
        event
    }

    /// Moves the deltas of an event made by [`Draft::take_event`] back,
    /// and keeps the event's buffers for the next one.
    pub fn put_back(&mut self, mut event: DocEvent) {
        let unit = event.unit;
        for (diff, t) in event.texts.iter_mut().zip(&self.taken) {
            if let Some(d) = self.texts.get_mut(t) {
                std::mem::swap(&mut d[unit.index()], &mut diff.delta);
            }
            for op in diff.delta.drain(..) {
                self.spare.keep(op);
            }
        }
        event.maps.clear();
        self.spare_event = Some(event);
    }
}

/// Writes the delta of a plain edit at `r` (an insert of `inserted`
/// there, or a delete of `r`) into `delta`, which holds an earlier
/// event's: an edit of the same shape only overwrites its numbers and
/// text, so typing allocates nothing.
fn write_plain(
    delta: &mut Vec<Delta>,
    spare: &mut SpareOps,
    r: &std::ops::Range<usize>,
    inserted: Option<&str>,
) {
    let reused = match delta.as_mut_slice() {
        [Delta::Retain {
            retain, attributes, ..
        }, last]
            if r.start > 0 && attributes.is_empty() =>
        {
            *retain = r.start;
            overwrite_plain(last, r, inserted)
        }
        [last] if r.start == 0 => overwrite_plain(last, r, inserted),
        _ => false,
    };
    if reused {
        return;
    }
    for op in delta.drain(..) {
        spare.keep(op);
    }
    let mut buf = DeltaBuf { out: delta, spare };
    buf.retain(r.start);
    match inserted {
        Some(s) => buf.insert(s, &NO_ATTRIBUTES),
        None => buf.push(Delta::delete(r.len())),
    }
}

/// Overwrites `op`, the last op of an earlier plain edit's delta, with
/// the insert of `inserted` or the delete of `r`, if it is of that kind.
#[inline(always)]
fn overwrite_plain(op: &mut Delta, r: &std::ops::Range<usize>, inserted: Option<&str>) -> bool {
    match (op, inserted) {
        (Delta::Insert { insert, attributes }, Some(s)) if attributes.is_empty() => {
            insert.clear();
            insert.push_str(s);
            true
        }
        (Delta::Delete { delete }, None) => {
            *delete = r.len();
            true
        }
        _ => false,
    }
}

/// An empty event, to be filled and kept for reuse.
fn blank_event(trigger: EventTrigger, unit: Unit) -> DocEvent {
    DocEvent {
        trigger,
        origin: None,
        unit,
        texts: Vec::new(),
        maps: Vec::new(),
    }
}

/// Gives a reused event this change's trigger, origin and unit (the
/// origin's string is kept when it is the same).
fn relabel(event: &mut DocEvent, trigger: EventTrigger, origin: Option<&str>, unit: Unit) {
    event.trigger = trigger;
    event.unit = unit;
    if event.origin.as_deref() != origin {
        event.origin = origin.map(str::to_owned);
    }
}
