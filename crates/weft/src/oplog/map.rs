//! [`MapSet`]: what a map op writes, kept beside the op log, and the table
//! of map names.

use std::collections::BTreeMap;

use crate::id::{Lamport, MapIdx, PeerId, Seq};
use crate::value::Value;

/// One map op: `key` of map `map` set to `value`, or deleted (`None`).
/// Ops on one key are ordered by `(lamport, peer)`: the greatest wins,
/// deletes included, so a late, older write never brings a key back.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MapSet {
    pub map: MapIdx,
    pub key: Box<str>,
    pub value: Option<Value>,
    pub lamport: Lamport,
    pub peer: PeerId,
    /// The op's seq.
    pub seq: Seq,
}

impl MapSet {
    /// The order of writes to one key: the greatest wins.
    #[inline]
    pub fn stamp(&self) -> (Lamport, PeerId) {
        (self.lamport, self.peer)
    }
}

/// The distinct (map, key) pairs `writes` set, sorted.
pub(crate) fn keys_of<'a>(writes: impl Iterator<Item = &'a MapSet>) -> Vec<(MapIdx, &'a str)> {
    let mut keys: Vec<(MapIdx, &str)> = writes.map(|m| (m.map, &*m.key)).collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// Map names, interned.
#[derive(Debug, Clone, Default)]
pub(crate) struct MapNames {
    names: Vec<Box<str>>,
    index: BTreeMap<Box<str>, MapIdx>,
    /// The maps named [`REGISTERS`], once interned: found in O(1) on
    /// every `Doc::text` call.
    registers: [Option<MapIdx>; 2],
    /// Whether a name starts with U+0001 (the registers, deleted maps'
    /// incarnations).
    reserved: bool,
    /// The public names of the maps.
    public: PublicNames,
}

/// The names of the registers of deleted texts and of deleted maps (see
/// `doc/containers.rs`).
pub(crate) const REGISTERS: [&str; 2] = ["\u{1}t", "\u{1}m"];

/// Whether a text or map name is reserved (starts with U+0001): the
/// registers' and deleted containers' incarnations' (see
/// `doc/containers.rs`).
#[inline]
pub(crate) fn is_reserved(name: &str) -> bool {
    name.starts_with('\u{1}')
}

/// The name a container shows under: `raw` itself, or the name an
/// incarnation (`"\u{1}{peer}@{counter}\u{1}{name}"`, see
/// `doc/containers.rs`) stands for.
#[inline]
pub(crate) fn public_name(raw: &str) -> &str {
    match raw.strip_prefix('\u{1}') {
        Some(rest) => rest.split_once('\u{1}').map_or(raw, |(_, name)| name),
        None => raw,
    }
}

/// The distinct public names (see [`public_name`]) of a table's
/// containers, in order of first use, reserved ones left out (they never
/// show): what lists the names shown in time proportional to them, not to
/// every incarnation a peer ever made.
#[derive(Debug, Clone, Default)]
pub(crate) struct PublicNames {
    names: Vec<Box<str>>,
    seen: std::collections::HashSet<Box<str>>,
}

impl PublicNames {
    /// Notes the public name of container `raw`.
    pub fn add(&mut self, raw: &str) {
        let name = public_name(raw);
        if !is_reserved(name) && !self.seen.contains(name) {
            self.seen.insert(name.into());
            self.names.push(name.into());
        }
    }

    /// The names, in order of first use.
    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        self.names.iter().map(|n| &**n)
    }
}

impl MapNames {
    /// The index of `name`, added to the table if missing.
    pub fn intern(&mut self, name: &str) -> MapIdx {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        let i = MapIdx::new(self.names.len() as u32);
        self.names.push(name.into());
        self.index.insert(name.into(), i);
        self.public.add(name);
        if let Some(k) = REGISTERS.iter().position(|r| *r == name) {
            self.registers[k] = Some(i);
        }
        self.reserved |= is_reserved(name);
        i
    }

    /// Whether some name starts with U+0001.
    #[inline]
    pub fn has_reserved(&self) -> bool {
        self.reserved
    }

    /// The register [`REGISTERS`]`[k]`, if interned.
    #[inline]
    pub fn register(&self, k: usize) -> Option<MapIdx> {
        self.registers.get(k).copied().flatten()
    }

    /// The index of `name`, if the table has it.
    pub fn find(&self, name: &str) -> Option<MapIdx> {
        self.index.get(name).copied()
    }

    /// The name of map `i` (empty for an index this table never gave).
    pub fn name(&self, i: MapIdx) -> &str {
        self.names.get(i.as_usize()).map_or("", |n| n)
    }

    /// Number of names.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// The names, by index.
    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        self.names.iter().map(|n| &**n)
    }

    /// The distinct public names of the maps.
    pub fn public_names(&self) -> &PublicNames {
        &self.public
    }
}
