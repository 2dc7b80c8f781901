//! Map entries and embeds of a snapshot (format version 3): the map names
//! ("n"), a shallow snapshot's root map ops ("K") and the embeds ("o").
//!
//! ```text
//! "o"  (when some insert is an embed or a block marker) the distinct
//!      objects: varint count, then each as a value (an embed) or tag 8
//!      and a map's body (a block marker's attributes); then varint n,
//!      and per object by seq: varint seq - the previous one's (the
//!      first: its seq), varint index into the distinct objects
//! "n"  varint n, then n x (varint length, UTF-8 name), in the order of
//!      the history's map indexes
//! "K"  (mode 3, when the root has map ops) the root's map ops that
//!      still win their key: varint n, then per op by seq: varint seq -
//!      the previous one's (the first: its seq), varint map index,
//!      varint length + UTF-8 key, u8 0 (delete) or 1 and the value
//! ```
//!
//! A root map op that lost its key to another root op can never win
//! again (every later write is compared with the winner), so a shallow
//! snapshot keeps only the winners, each as itself (same seq, so its
//! Lamport timestamp follows from the change table as before).

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::id::{MapIdx, Seq};
use crate::oplog::{MapSet, OpLog};
use crate::value::Value;

use weft_kv::MemKvStore;

use super::packed::{unpack, Codec, Framing};

use super::value_bytes::{
    read_map_value, read_object_ref, read_object_table, read_string, write_map_value, ObjectTable,
};
use crate::bytes::{bounded_capacity, write_bytes, write_varint, Reader};

/// The map names.
const KEY_MAP_NAMES: &[u8] = b"n";
/// The embeds.
pub(super) const KEY_EMBEDS: &[u8] = b"o";

/// Passes the "n" and "o" entries of `log`'s snapshot (those it has) to
/// `add`, in key order.
pub(super) fn write_entries(log: &OpLog, mut add: impl FnMut(&[u8], Vec<u8>)) {
    if log.map_names().len() > 0 {
        add(KEY_MAP_NAMES, write_names(log));
    }
    if let Some(value) = write_embeds(log) {
        add(KEY_EMBEDS, value);
    }
}

/// Checks a snapshot's "n" and "o" entries against its format `version`
/// (3 has one or both, earlier ones neither, 4 either) and reads the map
/// names.
pub(super) fn read_entries(store: &MemKvStore, version: u8) -> Result<Vec<Box<str>>> {
    let bad = |what| Error::Inconsistent { what };
    let (names, embeds) = (store.get(KEY_MAP_NAMES), store.get(KEY_EMBEDS));
    // Version 4 (a layout change) may hold them or not.
    let has = names.is_some() || embeds.is_some();
    if (version == 3 && !has) || (version < 3 && has) {
        return Err(bad("map names or embeds against the format version"));
    }
    match names {
        Some(value) => {
            let framing = Framing::snapshot(version, Codec::Lz4);
            read_names(&unpack(value, "map names", framing)?)
        }
        None => Ok(Vec::new()),
    }
}

/// The "n" value.
fn write_names(log: &OpLog) -> Vec<u8> {
    let mut out = Vec::new();
    write_varint(&mut out, log.map_names().len() as u64);
    for name in log.map_names().iter() {
        write_bytes(&mut out, name.as_bytes());
    }
    out
}

/// Reads the "n" value.
fn read_names(value: &[u8]) -> Result<Vec<Box<str>>> {
    let mut r = Reader::new(value, 0);
    let n = r.count("map count")?;
    let mut names = Vec::with_capacity(bounded_capacity(n));
    for _ in 0..n {
        names.push(Box::<str>::from(read_string(&mut r)?));
    }
    if !r.is_empty() {
        return Err(r.malformed("trailing map names"));
    }
    Ok(names)
}

/// A root map op of a shallow snapshot, as read from "K".
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RootSet {
    pub seq: Seq,
    pub map: MapIdx,
    pub key: String,
    pub value: Option<Value>,
}

/// The map ops below `trimmed` that win their key, by seq.
fn root_winners(log: &OpLog, trimmed: Seq) -> Vec<&MapSet> {
    let mut best: BTreeMap<(MapIdx, &str), &MapSet> = BTreeMap::new();
    for set in log.map_sets().iter().filter(|s| s.seq < trimmed) {
        let slot = best.entry((set.map, &set.key)).or_insert(set);
        if set.stamp() > slot.stamp() {
            *slot = set;
        }
    }
    let mut out: Vec<&MapSet> = best.into_values().collect();
    out.sort_unstable_by_key(|s| s.seq);
    out
}

/// The "K" value, or `None` when the root has no map op.
pub(super) fn write_root_sets(log: &OpLog, trimmed: Seq) -> Option<Vec<u8>> {
    let sets = root_winners(log, trimmed);
    if sets.is_empty() {
        return None;
    }
    let mut out = Vec::new();
    write_varint(&mut out, sets.len() as u64);
    let mut at = 0;
    for s in sets {
        write_varint(&mut out, u64::from(s.seq - at));
        at = s.seq;
        write_varint(&mut out, u64::from(u32::from(s.map)));
        write_bytes(&mut out, s.key.as_bytes());
        write_map_value(&mut out, s.value.as_ref());
    }
    Some(out)
}

/// Reads the "K" value: ops by increasing seq below `trimmed`, naming
/// one of `maps` maps.
pub(super) fn read_root_sets(value: &[u8], trimmed: Seq, maps: usize) -> Result<Vec<RootSet>> {
    let mut r = Reader::new(value, 0);
    let n = r.count("root map op count")?;
    let mut out: Vec<RootSet> = Vec::with_capacity(bounded_capacity(n));
    let mut at: Seq = 0;
    for _ in 0..n {
        let gap = r.u32("root map op")?;
        let seq = at
            .checked_add(gap)
            .filter(|&s| s < trimmed && (gap > 0 || out.is_empty()))
            .ok_or_else(|| r.malformed("root map op"))?;
        at = seq;
        let map = r.u32("map index")?;
        if map as usize >= maps {
            return Err(r.malformed("map index"));
        }
        let key = read_string(&mut r)?;
        let value = read_map_value(&mut r)?;
        out.push(RootSet {
            seq,
            map: MapIdx::new(map),
            key,
            value,
        });
    }
    if !r.is_empty() {
        return Err(r.malformed("trailing root map ops"));
    }
    Ok(out)
}

/// The "o" value, or `None` without objects: the table of distinct
/// objects, then varint n and per object by seq: varint seq gap, varint
/// table index.
fn write_embeds(log: &OpLog) -> Option<Vec<u8>> {
    if log.objects().is_empty() {
        return None;
    }
    let mut table = ObjectTable::default();
    let mut entries = Vec::new();
    write_varint(&mut entries, log.objects().len() as u64);
    let mut at = 0;
    for (&seq, object) in log.objects().iter() {
        write_varint(&mut entries, u64::from(seq - at));
        at = seq;
        write_varint(&mut entries, u64::from(table.add(object)));
    }
    let mut out = Vec::new();
    table.write(&mut out);
    out.extend_from_slice(&entries);
    Some(out)
}

/// Reads the "o" value into `log`: objects by increasing seq below
/// `limit`.
pub(super) fn read_embeds(value: &[u8], limit: Seq, log: &mut OpLog) -> Result<()> {
    let mut r = Reader::new(value, 0);
    let table = read_object_table(&mut r)?;
    let n = r.count("embed count")?;
    let mut at: Seq = 0;
    for i in 0..n {
        let gap = r.u32("embed")?;
        let seq = at
            .checked_add(gap)
            .filter(|&s| s < limit && (gap > 0 || i == 0))
            .ok_or_else(|| r.malformed("embed"))?;
        at = seq;
        // Its char is not known yet (texts load apart): rendering only
        // looks objects up for U+FFFC chars.
        log.set_object(seq, read_object_ref(&mut r, &table)?);
    }
    if !r.is_empty() {
        return Err(r.malformed("trailing embeds"));
    }
    Ok(())
}
