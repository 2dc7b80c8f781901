//! Cancels in the reference model, by their naive definition (not by
//! Weft's counting): an op is cancelled while some cancel of it is not
//! itself cancelled; a char is deleted while some delete of it is not
//! cancelled; a mark styles while its start is not cancelled. Also what
//! `Doc::revert_ops` makes of a peer's ops, and the map reads and writes
//! an undo manager needs, all by the documented semantics.
//!
//! A "ghost" peer (see [`RefDoc::with_ghost`]) is one whose ops all count
//! as cancelled and whose chars as deleted: the document the other peers'
//! ops make alone, with the ghost's chars kept (invisible) only as the
//! places the others' ops name.

use std::collections::BTreeMap;
use std::ops::Range;

use weft::Value;

use super::{public, Id, RefDoc, RefOp, MAP_REGISTER, TEXT_REGISTER};

/// Per map (public name), the value each key goes back to.
pub type MapsBack = BTreeMap<String, BTreeMap<String, Option<Value>>>;

impl RefDoc {
    /// A replica whose peer `ghost`'s ops count as never made (see the
    /// module doc).
    pub fn with_ghost(ghost: u64) -> RefDoc {
        RefDoc {
            ghost: Some(ghost),
            ..RefDoc::default()
        }
    }

    /// Whether op `op` is cancelled: some cancel of it is not itself
    /// cancelled (or it is the ghost's).
    pub(super) fn is_cancelled(&self, op: Id) -> bool {
        self.ghost == Some(op.0)
            || self
                .cancels
                .get(&op)
                .is_some_and(|cs| cs.iter().any(|&c| !self.is_cancelled(c)))
    }

    /// Whether char `id` is deleted: some delete of it is not cancelled
    /// (or it is the ghost's).
    pub(super) fn char_deleted(&self, id: Id) -> bool {
        self.ghost == Some(id.0)
            || self
                .deleters
                .get(&id)
                .is_some_and(|ds| ds.iter().any(|&d| !self.is_cancelled(d)))
    }

    /// Whether mark `mark` (its start op's id) styles: its end arrived
    /// and its start is not cancelled.
    pub(super) fn live(&self, mark: Id) -> bool {
        self.ended.contains(&mark) && !self.is_cancelled(mark)
    }

    /// Recomputes every char's deleted flag (after a cancel).
    pub(super) fn refresh_deleted(&mut self) {
        let mut items = std::mem::take(&mut self.items);
        let mut hidden = std::mem::take(&mut self.hidden);
        for item in items
            .iter_mut()
            .chain(hidden.values_mut().flatten())
            .filter(|i| i.is_char())
        {
            item.deleted = self.char_deleted(item.id);
        }
        self.items = items;
        self.hidden = hidden;
    }

    /// The op with id `id`, if this replica has it.
    fn op(&self, id: Id) -> Option<&RefOp> {
        self.log.iter().map(|(op, _)| op).find(|op| op.id() == id)
    }

    /// The next counter of this replica's own peer.
    pub fn own_next(&self) -> u32 {
        self.next_id().1
    }

    /// Undoes this peer's ops `ops` (counter ranges) as `Doc::revert_ops`
    /// documents it: in order, each insert's char is deleted by id (a new
    /// delete op, in the text it went to), each delete, mark start (block
    /// attribute writes are marks too) and cancel is cancelled (a new
    /// cancel op); mark ends go with their starts. Then each register
    /// key (a container delete) they wrote and still hold gets the value
    /// the other writes give it. Other map writes are left alone.
    ///
    /// # Panics
    ///
    /// On a counter this replica does not have.
    pub fn revert_ops(&mut self, ops: &[Range<u32>]) {
        let peer = self.peer;
        let mut made = Vec::new();
        let mut registers: Vec<Id> = Vec::new();
        for range in ops {
            for counter in range.clone() {
                let id = (peer, counter);
                match self.op(id).expect("an op of this peer") {
                    RefOp::Insert { text, .. } => made.push((Some(text.clone()), id)),
                    RefOp::Delete { .. } | RefOp::Cancel { .. } | RefOp::BlockStart { .. } => {
                        made.push((None, id))
                    }
                    RefOp::Anchor { anchor, .. } if !anchor.end => made.push((None, id)),
                    RefOp::MapSet { map, .. } if map == TEXT_REGISTER || map == MAP_REGISTER => {
                        registers.push(id)
                    }
                    RefOp::Anchor { .. } | RefOp::BlockSet { .. } | RefOp::MapSet { .. } => {}
                }
            }
        }
        let back = self.registers_back(&registers);
        for (text, target) in made {
            let id = self.next_id();
            match text {
                Some(text) => self.apply(RefOp::Delete { id, text, target }),
                None => self.apply(RefOp::Cancel { id, target }),
            }
        }
        for (map, key, value) in back {
            self.map_set(&map, &key, value);
        }
    }

    /// For the register writes `mine`, each (map, key) they wrote whose
    /// greatest write is one of them, with the value of the greatest
    /// other write (`None`: none), sorted by map name and key, the order
    /// Weft writes them back in.
    fn registers_back(&self, mine: &[Id]) -> Vec<(String, String, Option<Value>)> {
        let mut keys: Vec<(String, String)> = mine
            .iter()
            .filter_map(|&id| match self.op(id) {
                Some(RefOp::MapSet { map, key, .. }) => Some((map.clone(), key.clone())),
                _ => None,
            })
            .collect();
        keys.sort();
        keys.dedup();
        let mut out = Vec::new();
        for (map, key) in keys {
            let writes: Vec<(u32, u64, Id, Option<Value>)> = self
                .log
                .iter()
                .filter_map(|(op, lamport)| match op {
                    RefOp::MapSet {
                        id,
                        map: m,
                        key: k,
                        value,
                        ..
                    } if *m == map && *k == key => Some((*lamport, id.0, *id, value.clone())),
                    _ => None,
                })
                .collect();
            let greatest = |w: &&(u32, u64, Id, Option<Value>)| (w.0, w.1);
            let winner = writes.iter().max_by_key(greatest);
            if !winner.is_some_and(|w| mine.contains(&w.2)) {
                continue;
            }
            let before = writes
                .iter()
                .filter(|w| !mine.contains(&w.2))
                .max_by_key(greatest)
                .and_then(|w| w.3.clone());
            out.push((map, key, before));
        }
        out
    }

    /// What an undo manager records for a local step of this peer's ops
    /// `ops`: per map key its writes set, the value it had before the
    /// first of them (container deletes aside).
    pub fn step_maps(&self, ops: Range<u32>) -> MapsBack {
        let mut out = MapsBack::new();
        for (op, _) in &self.log {
            if let RefOp::MapSet {
                id,
                map,
                key,
                before: Some(before),
                ..
            } = op
            {
                if id.0 == self.peer && ops.contains(&id.1) {
                    out.entry(public(map).to_owned())
                        .or_default()
                        .entry(key.clone())
                        .or_insert_with(|| before.clone());
                }
            }
        }
        out
    }

    /// The peer whose write of `key` in map `name` (its shown
    /// incarnation) wins, if any.
    pub fn map_writer(&self, name: &str, key: &str) -> Option<u64> {
        let raw = self.map_raw(name);
        self.maps.get(&raw).and_then(|m| m.get(key)).map(|e| e.1)
    }

    /// The value of `key` in map `name` (its shown incarnation).
    pub fn map_get(&self, name: &str, key: &str) -> Option<Value> {
        let raw = self.map_raw(name);
        self.maps
            .get(&raw)
            .and_then(|m| m.get(key))
            .and_then(|e| e.2.clone())
    }

    /// Per (map, key) of the maps shown, the peer whose write wins.
    pub fn map_winners(&self) -> BTreeMap<(String, String), u64> {
        let mut out = BTreeMap::new();
        for (raw, m) in &self.maps {
            for (key, e) in m {
                out.insert((public(raw).to_owned(), key.clone()), e.1);
            }
        }
        out
    }

    /// Per (map, key) peer `peer` wrote locally, the value the key had
    /// before its first write of it.
    pub fn first_befores(&self, peer: u64) -> BTreeMap<(String, String), Option<Value>> {
        let mut out = BTreeMap::new();
        for (op, _) in &self.log {
            if let RefOp::MapSet {
                id,
                map,
                key,
                before: Some(before),
                ..
            } = op
            {
                if id.0 == peer {
                    out.entry((public(map).to_owned(), key.clone()))
                        .or_insert_with(|| before.clone());
                }
            }
        }
        out
    }
}
