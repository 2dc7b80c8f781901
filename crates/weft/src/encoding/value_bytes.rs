//! The binary form of a style [`Value`] inside an update.
//!
//! One tag byte, then: nothing (0 null, 1 false, 2 true), a zigzag varint
//! (3 integer), 8 bytes little-endian (4 float), varint length + UTF-8
//! (5 string), varint count + values (6 list), varint count + (string
//! key, value) pairs in key order (7 map). Nesting is limited to
//! [`MAX_DEPTH`] levels so hostile input cannot exhaust the stack.

use std::collections::BTreeMap;

use crate::error::Result;
use crate::oplog::Object;
use crate::value::Value;

use crate::bytes::{bounded_capacity, unzigzag, write_bytes, write_varint, zigzag, Reader};

pub(crate) use crate::value::MAX_VALUE_DEPTH as MAX_DEPTH;

/// Appends `value` to `out`.
pub(crate) fn write_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.push(0),
        Value::Bool(b) => out.push(1 + u8::from(*b)),
        Value::I64(v) => {
            out.push(3);
            write_varint(out, zigzag(*v));
        }
        Value::F64(v) => {
            out.push(4);
            out.extend_from_slice(&v.to_bits().to_le_bytes());
        }
        Value::String(s) => {
            out.push(5);
            write_bytes(out, s.as_bytes());
        }
        Value::List(items) => {
            out.push(6);
            write_varint(out, items.len() as u64);
            for v in items {
                write_value(out, v);
            }
        }
        Value::Map(map) => {
            out.push(7);
            write_varint(out, map.len() as u64);
            for (k, v) in map {
                write_bytes(out, k.as_bytes());
                write_value(out, v);
            }
        }
    }
}

/// Reads a value written by [`write_value`].
/// Writes a map write's value: u8 0 for a delete, else 1 and the value.
pub(crate) fn write_map_value(out: &mut Vec<u8>, value: Option<&Value>) {
    match value {
        None => out.push(0),
        Some(v) => {
            out.push(1);
            write_value(out, v);
        }
    }
}

/// Reads what [`write_map_value`] wrote.
pub(crate) fn read_map_value(r: &mut Reader<'_>) -> Result<Option<Value>> {
    match r.u8()? {
        0 => Ok(None),
        1 => Ok(Some(read_value(r, 0)?)),
        _ => Err(r.malformed("map value")),
    }
}

pub(crate) fn read_value(r: &mut Reader<'_>, depth: u32) -> Result<Value> {
    let tag = r.u8()?;
    read_tagged(r, tag, depth)
}

/// Tag of an object that is a block marker (followed by its attributes as
/// a map's count and pairs); any value tag is an embed of that value.
const BLOCK_TAG: u8 = 8;

/// Appends object `object`: an embed as its value, a block marker as
/// [`BLOCK_TAG`] and its attributes as a map's body.
pub(crate) fn write_object(out: &mut Vec<u8>, object: &Object) {
    match object {
        Object::Embed(value) => write_value(out, value),
        Object::Block(attributes) => {
            out.push(BLOCK_TAG);
            write_varint(out, attributes.len() as u64);
            for (k, v) in attributes.iter() {
                write_bytes(out, k.as_bytes());
                write_value(out, v);
            }
        }
    }
}

/// Reads what [`write_object`] wrote (a block's `Null` attributes are
/// dropped).
pub(crate) fn read_object(r: &mut Reader<'_>) -> Result<Object> {
    let tag = r.u8()?;
    if tag != BLOCK_TAG {
        return Ok(Object::Embed(read_tagged(r, tag, 0)?));
    }
    // The attribute values nest as deep as a style's value may (from 0,
    // not 1 as inside a map value).
    let n = r.count("block attribute count")?;
    let mut attributes = BTreeMap::new();
    for _ in 0..n {
        let k = read_string(r)?;
        let v = read_value(r, 0)?;
        if attributes.insert(k, v).is_some() {
            return Err(r.malformed("duplicate block attribute"));
        }
    }
    attributes.retain(|_, v| !v.is_null());
    Ok(Object::Block(std::sync::Arc::new(attributes)))
}

/// The distinct objects of an export, each written once: entries then
/// name them by index (every paragraph marker of a document has the same
/// attributes; an entry is then a few bytes).
#[derive(Default)]
pub(crate) struct ObjectTable {
    /// Index of each distinct object, by its encoding.
    index: std::collections::HashMap<Vec<u8>, u32>,
    /// The distinct objects, encoded, in index order.
    bytes: Vec<u8>,
}

impl ObjectTable {
    /// The index of `object`, added if new.
    pub fn add(&mut self, object: &Object) -> u32 {
        let mut encoded = Vec::new();
        write_object(&mut encoded, object);
        let next = self.index.len() as u32;
        *self.index.entry(encoded).or_insert_with_key(|k| {
            self.bytes.extend_from_slice(k);
            next
        })
    }

    /// Appends the table: varint count, then the objects.
    pub fn write(&self, out: &mut Vec<u8>) {
        write_varint(out, self.index.len() as u64);
        out.extend_from_slice(&self.bytes);
    }
}

/// Reads what [`ObjectTable::write`] wrote.
pub(crate) fn read_object_table(r: &mut Reader<'_>) -> Result<Vec<Object>> {
    let n = r.count("object count")?;
    let mut out = Vec::with_capacity(bounded_capacity(n));
    for _ in 0..n {
        out.push(read_object(r)?);
    }
    Ok(out)
}

/// Reads an index into `table` and gives its object.
pub(crate) fn read_object_ref(r: &mut Reader<'_>, table: &[Object]) -> Result<Object> {
    let i = r.varint()?;
    usize::try_from(i)
        .ok()
        .and_then(|i| table.get(i))
        .cloned()
        .ok_or_else(|| r.malformed("object index"))
}

/// Reads a value whose tag byte `tag` was read.
fn read_tagged(r: &mut Reader<'_>, tag: u8, depth: u32) -> Result<Value> {
    if depth > MAX_DEPTH {
        return Err(r.malformed("value nesting"));
    }
    Ok(match tag {
        0 => Value::Null,
        1 => Value::Bool(false),
        2 => Value::Bool(true),
        3 => Value::I64(unzigzag(r.varint()?)),
        4 => Value::F64(f64::from_bits(r.u64_le()?)),
        5 => Value::String(read_string(r)?),
        6 => {
            // `count` checks the count against the bytes left.
            let n = r.count("list length")?;
            let mut items = Vec::with_capacity(bounded_capacity(n));
            for _ in 0..n {
                items.push(read_value(r, depth + 1)?);
            }
            Value::List(items)
        }
        7 => {
            let n = r.count("map length")?;
            let mut map = BTreeMap::new();
            for _ in 0..n {
                let k = read_string(r)?;
                let v = read_value(r, depth + 1)?;
                if map.insert(k, v).is_some() {
                    return Err(r.malformed("duplicate map key"));
                }
            }
            Value::Map(map)
        }
        _ => return Err(r.malformed("value tag")),
    })
}

/// Reads a varint length and that many bytes of UTF-8.
pub(crate) fn read_string(r: &mut Reader<'_>) -> Result<String> {
    let bytes = r.bytes()?;
    std::str::from_utf8(bytes)
        .map(str::to_owned)
        .map_err(|_| r.malformed("UTF-8 string"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip() {
        let mut map = BTreeMap::new();
        map.insert(
            "a".to_owned(),
            Value::List(vec![Value::I64(-5), Value::Null]),
        );
        map.insert("b".to_owned(), Value::F64(1.5));
        let values = [
            Value::Null,
            Value::Bool(true),
            Value::Bool(false),
            Value::I64(i64::MIN),
            Value::F64(f64::NAN),
            Value::String("😀 文".into()),
            Value::Map(map),
        ];
        for v in values {
            let mut out = Vec::new();
            write_value(&mut out, &v);
            let mut r = Reader::new(&out, 0);
            assert_eq!(read_value(&mut r, 0).unwrap(), v);
            assert!(r.is_empty());
        }
    }

    #[test]
    fn deep_nesting_is_an_error() {
        let mut out = [6u8, 1].repeat(100);
        out.push(0);
        assert!(read_value(&mut Reader::new(&out, 0), 0).is_err());
    }
}
