//! [`Map`] and [`MapRef`]: the handles through which callers write and
//! read one map.

use std::fmt;

use crate::error::{Error, Result};
use crate::event::Draft;
use crate::id::{MapIdx, PeerId};
use crate::oplog::OpLog;
use crate::value::Value;

use super::MapState;

/// A named map of a [`crate::Doc`]: string keys to [`Value`]s, borrowed
/// for reading and writing (get one with [`crate::Doc::map`]).
///
/// Concurrent writes of one key converge on the write with the greatest
/// (Lamport timestamp, peer id): in practice the one made last, ties
/// broken by peer. A delete is a write too, so it beats older sets and
/// loses to newer ones. Each write is an op in the document's open change
/// (see [`crate::Doc::commit`]), travels in updates and snapshots, shows
/// in events and can be undone, checked out and diffed like text edits.
///
/// # Examples
///
/// ```
/// use weft::{Doc, ExportMode, Value};
///
/// let mut a = Doc::new();
/// a.set_peer_id(1)?;
/// a.map("settings").set("title", "Notes")?;
/// a.map("settings").set("zoom", 2)?;
/// let mut b = a.fork();
/// b.set_peer_id(2)?;
///
/// a.map("settings").set("zoom", 3)?; // concurrent writes of one key:
/// b.map("settings").set("zoom", 4)?; // peer 2 wins the tie
/// b.map("settings").delete("title")?;
/// a.import(&b.export(ExportMode::Updates { from: &a.version() })?)?;
/// b.import(&a.export(ExportMode::Updates { from: &b.version() })?)?;
///
/// let settings = a.map("settings");
/// assert_eq!(settings.get("zoom"), Some(&Value::I64(4)));
/// assert_eq!(settings.get("title"), None);
/// assert_eq!(settings.len(), 1);
/// assert_eq!(b.get_map("settings").unwrap().get("zoom"), Some(&Value::I64(4)));
/// # Ok::<(), weft::Error>(())
/// ```
pub struct Map<'a> {
    log: &'a mut OpLog,
    state: &'a mut MapState,
    map: MapIdx,
    peer: PeerId,
    /// The open change's event draft, while someone subscribes.
    events: Option<&'a mut Draft>,
    /// Set when the document could not load what a write needs (a forged
    /// snapshot): every write returns it.
    broken: Option<Error>,
}

impl<'a> Map<'a> {
    pub(crate) fn new(
        log: &'a mut OpLog,
        state: &'a mut MapState,
        map: MapIdx,
        peer: PeerId,
        events: Option<&'a mut Draft>,
        broken: Option<Error>,
    ) -> Self {
        Map {
            log,
            state,
            map,
            peer,
            events,
            broken,
        }
    }

    /// A read-only view of the map.
    pub fn view(&self) -> MapRef<'_> {
        MapRef {
            name: self.name(),
            state: Some(self.state),
        }
    }

    /// Sets `key` to `value`. A no-op (no op recorded) when the key has
    /// that value already.
    ///
    /// # Errors
    ///
    /// [`Error::Detached`] on a checked-out version,
    /// [`Error::HistoryFull`] or [`Error::CounterOverflow`] when the op
    /// does not fit the id spaces; the map is unchanged then.
    pub fn set(&mut self, key: &str, value: impl Into<Value>) -> Result<()> {
        self.write(key, Some(value.into()))
    }

    /// Deletes `key`. A no-op when the key has no value.
    ///
    /// # Errors
    ///
    /// As [`Map::set`].
    pub fn delete(&mut self, key: &str) -> Result<()> {
        self.write(key, None)
    }

    fn write(&mut self, key: &str, value: Option<Value>) -> Result<()> {
        if let Some(e) = &self.broken {
            return Err(e.clone());
        }
        self.log.check_writable()?;
        if let Some(v) = &value {
            v.check_depth(0)?;
        }
        if self.state.get(key) == value.as_ref() {
            return Ok(());
        }
        self.write_as(key, |_| value)
    }

    /// Writes `key` with `value(id)`, given the id of the op that writes
    /// it (a deleted container's next incarnation is named after it),
    /// even when the key has that value already. The value's depth is
    /// not checked: the caller makes a flat one.
    pub(crate) fn write_as(
        &mut self,
        key: &str,
        value: impl FnOnce(crate::OpId) -> Option<Value>,
    ) -> Result<()> {
        if let Some(e) = &self.broken {
            return Err(e.clone());
        }
        let seq = self.log.reserve_local(self.peer, 1)?;
        let value = value(self.log.seq_to_id(seq));
        let set = self.log.push_map_set(seq, self.map, key, value);
        let (lamport, peer) = set.stamp();
        let change = self.state.apply(key, lamport, peer, set.value.as_ref());
        if let (Some(draft), Some(change)) = (self.events.as_deref_mut(), change) {
            draft.add_map(self.map, key, change);
        }
        Ok(())
    }

    /// The value of `key`, if it has one. O(log keys).
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.state.get(key)
    }

    /// Number of keys with a value. O(1).
    pub fn len(&self) -> usize {
        self.state.len()
    }

    /// Whether no key has a value.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The keys with a value and their values, in key order (byte order
    /// of the UTF-8 keys).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> + '_ {
        self.state.iter()
    }

    /// The map's name.
    pub fn name(&self) -> &str {
        crate::oplog::public_name(self.log.map_names().name(self.map))
    }
}

impl fmt::Debug for Map<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.view().fmt(f)
    }
}

/// A read-only view of a map, through `&Doc` ([`crate::Doc::get_map`]) or
/// a [`Map`] handle ([`Map::view`]).
///
/// # Examples
///
/// ```
/// use weft::{Doc, Value};
///
/// let mut doc = Doc::new();
/// doc.map("m").set("b", 2)?;
/// doc.map("m").set("a", 1)?;
/// let view = doc.get_map("m").expect("written above");
/// let pairs: Vec<_> = view.iter().collect();
/// assert_eq!(pairs, [("a", &Value::I64(1)), ("b", &Value::I64(2))]);
/// assert!(doc.get_map("other").is_none());
/// # Ok::<(), weft::Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct MapRef<'a> {
    name: &'a str,
    state: Option<&'a MapState>,
}

impl<'a> MapRef<'a> {
    pub(crate) fn new(name: &'a str, state: Option<&'a MapState>) -> Self {
        MapRef { name, state }
    }

    /// The value of `key`, if it has one. O(log keys).
    pub fn get(&self, key: &str) -> Option<&'a Value> {
        self.state?.get(key)
    }

    /// Number of keys with a value. O(1).
    pub fn len(&self) -> usize {
        self.state.map_or(0, MapState::len)
    }

    /// Whether no key has a value.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The keys with a value and their values, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, &'a Value)> + 'a {
        self.state.into_iter().flat_map(MapState::iter)
    }

    /// The map's name.
    pub fn name(&self) -> &'a str {
        self.name
    }
}

impl fmt::Debug for MapRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}
