//! The Map container: string keys to [`Value`]s, last writer wins per key.
//!
//! A map's state ([`MapState`]) is a persistent ordered map (`im::OrdMap`)
//! from key to the winning write, so copying a document (a fork, a
//! checked-out version) shares the entries instead of copying them. Every
//! write is an op in the document's history (`OpLog::push_map_set`);
//! writes to one key are ordered by (Lamport timestamp, peer) and the
//! greatest wins, deletes included: a delete is kept as a stamped
//! tombstone, so a late, older write cannot bring the key back.

mod handles;

pub use handles::{Map, MapRef};

use im::ordmap::DiffItem;
use im::OrdMap;

use crate::event::KeyChange;
use crate::id::{Lamport, MapIdx, PeerId};
use crate::oplog::OpLog;
use crate::value::Value;

/// The winning write of one key.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    pub lamport: Lamport,
    pub peer: PeerId,
    /// `None`: deleted.
    pub value: Option<Value>,
}

/// One map's state: every key ever written, with its winning write.
#[derive(Debug, Clone, Default)]
pub(crate) struct MapState {
    entries: OrdMap<Box<str>, Entry>,
    /// Number of keys with a value.
    live: usize,
}

impl MapState {
    /// Applies a write of `key` stamped `(lamport, peer)`: it wins if its
    /// stamp is greater than the key's winning write. Returns what others
    /// see change, if anything.
    pub fn apply(
        &mut self,
        key: &str,
        lamport: Lamport,
        peer: PeerId,
        value: Option<&Value>,
    ) -> Option<KeyChange> {
        let old = match self.entries.get(key) {
            Some(e) if (e.lamport, e.peer) >= (lamport, peer) => return None,
            Some(e) => e.value.clone(),
            None => None,
        };
        self.entries.insert(
            key.into(),
            Entry {
                lamport,
                peer,
                value: value.cloned(),
            },
        );
        self.live = self.live + usize::from(value.is_some()) - usize::from(old.is_some());
        (old.as_ref() != value).then(|| KeyChange {
            old,
            new: value.cloned(),
        })
    }

    /// Each key whose value differs in `other`, with its values here and
    /// there. O(changed entries) where the two share structure (a
    /// version and the document it was checked out from).
    pub fn changes_to(&self, other: &MapState) -> Vec<(Box<str>, KeyChange)> {
        let value = |e: &Entry| e.value.clone();
        self.entries
            .diff(&other.entries)
            .filter_map(|d| {
                let (key, old, new) = match d {
                    DiffItem::Add(k, e) => (k, None, value(e)),
                    DiffItem::Update {
                        old: (k, a),
                        new: (_, b),
                    } => (k, value(a), value(b)),
                    DiffItem::Remove(k, e) => (k, value(e), None),
                };
                (old != new).then(|| (key.clone(), KeyChange { old, new }))
            })
            .collect()
    }

    /// The value of `key`, if it has one.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.entries.get(key).and_then(|e| e.value.as_ref())
    }

    /// Number of keys with a value.
    pub fn len(&self) -> usize {
        self.live
    }

    /// The keys with a value and their values, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> + '_ {
        self.entries
            .iter()
            .filter_map(|(k, e)| e.value.as_ref().map(|v| (&**k, v)))
    }
}

/// The state of every map of a document, by [`MapIdx`] (the op log's map
/// name table).
#[derive(Debug, Clone, Default)]
pub(crate) struct MapTable {
    states: Vec<MapState>,
}

impl MapTable {
    /// Map `i`, if it was ever written or asked for.
    pub fn get(&self, i: MapIdx) -> Option<&MapState> {
        self.states.get(i.as_usize())
    }

    /// Map `i`, created empty if missing.
    pub fn get_mut(&mut self, i: MapIdx) -> &mut MapState {
        let at = i.as_usize();
        if self.states.len() <= at {
            self.states.resize_with(at + 1, MapState::default);
        }
        &mut self.states[at]
    }

    /// The state of every map as the map ops of `log` leave it (a
    /// history just loaded from a snapshot). O(map ops).
    pub fn from_log(log: &OpLog) -> MapTable {
        let mut table = MapTable::default();
        for set in log.map_sets() {
            table
                .get_mut(set.map)
                .apply(&set.key, set.lamport, set.peer, set.value.as_ref());
        }
        table
    }

    /// Every map's live keys, as changes from an empty map (the event of
    /// a document opened from a snapshot).
    pub fn as_changes(&self) -> impl Iterator<Item = (MapIdx, &str, KeyChange)> + '_ {
        self.states.iter().enumerate().flat_map(|(i, state)| {
            state.iter().map(move |(k, v)| {
                (
                    MapIdx::new(i as u32),
                    k,
                    KeyChange {
                        old: None,
                        new: Some(v.clone()),
                    },
                )
            })
        })
    }
}
