//! Map entries of a snapshot (format version 3): the map names ("n") and
//! a shallow snapshot's root map ops ("K").
//!
//! ```text
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
use crate::style::Value;

use super::bytes::{write_bytes, write_varint, Reader};
use super::value::{read_string, read_value, write_value};

/// The "n" value.
pub(super) fn write_names(log: &OpLog) -> Vec<u8> {
    let mut out = Vec::new();
    write_varint(&mut out, log.map_names().len() as u64);
    for name in log.map_names().iter() {
        write_bytes(&mut out, name.as_bytes());
    }
    out
}

/// Reads the "n" value.
pub(super) fn read_names(value: &[u8]) -> Result<Vec<Box<str>>> {
    let mut r = Reader::new(value, 0);
    let n = r.count("map count")?;
    let mut names = Vec::with_capacity(n);
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
        match &s.value {
            None => out.push(0),
            Some(v) => {
                out.push(1);
                write_value(&mut out, v);
            }
        }
    }
    Some(out)
}

/// Reads the "K" value: ops by increasing seq below `trimmed`, naming
/// one of `maps` maps.
pub(super) fn read_root_sets(value: &[u8], trimmed: Seq, maps: usize) -> Result<Vec<RootSet>> {
    let mut r = Reader::new(value, 0);
    let n = r.count("root map op count")?;
    let mut out: Vec<RootSet> = Vec::with_capacity(n);
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
        let value = match r.u8()? {
            0 => None,
            1 => Some(read_value(&mut r, 0)?),
            _ => return Err(r.malformed("map value")),
        };
        out.push(RootSet {
            seq,
            map: MapIdx::new(map),
            key,
            value,
        });
    }
    if !r.is_empty() {
        return Err(Error::Malformed {
            offset: 0,
            what: "trailing root map ops",
        });
    }
    Ok(out)
}
