//! Conversions between Weft's values and JavaScript's: values, attributes,
//! Quill deltas, op ids, frontiers and spans.

use std::collections::BTreeMap;

use js_sys::{Array, Object, Reflect};
use wasm_bindgen::prelude::*;
use weft::{Attributes, Delta, Frontiers, IdSpan, OpId, PeerId, Value};

/// How deep a JavaScript value may nest before it is refused (a cyclic
/// object would otherwise recurse for ever). Weft refuses deeper values
/// itself; this bound only keeps the conversion finite.
const MAX_DEPTH: usize = 64;

/// The largest integer a JavaScript number holds exactly.
const MAX_SAFE: i64 = (1 << 53) - 1;

/// The most items an array (a list value, a delta) may have: a sparse
/// JavaScript array can claim 2^32 - 1 of them.
const MAX_ITEMS: u32 = 1 << 24;

/// How deep presence values may nest: what its peers decode.
pub(crate) const PRESENCE_DEPTH: usize = 32;

/// A position, length or count from JavaScript: a whole number from 0 to
/// 2^32 - 1 (wasm-bindgen would wrap larger ones and read NaN as 0).
pub(crate) fn whole(v: f64, what: &str) -> Result<usize, JsError> {
    if v.fract() == 0.0 && (0.0..=u32::MAX as f64).contains(&v) {
        Ok(v as usize)
    } else {
        Err(err(format!(
            "{what} must be a whole number from 0 to 2^32 - 1, not {v}"
        )))
    }
}

/// Bytes from JavaScript: a `Uint8Array`, copied (anything else, an
/// array-like claiming a length, say, is refused before allocating).
pub(crate) fn bytes_from_js(v: &JsValue) -> Result<Vec<u8>, JsError> {
    v.dyn_ref::<js_sys::Uint8Array>()
        .map(js_sys::Uint8Array::to_vec)
        .ok_or_else(|| err("expected a Uint8Array"))
}

/// An array of strings from JavaScript (`undefined` or `null`: none).
pub(crate) fn strings_from_js(v: &JsValue, what: &str) -> Result<Option<Vec<String>>, JsError> {
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    let a = v
        .dyn_ref::<Array>()
        .ok_or_else(|| err(format!("{what} must be an array of strings")))?;
    if a.length() > MAX_ITEMS {
        return Err(err(format!("{what} has more than {MAX_ITEMS} items")));
    }
    a.iter()
        .map(|s| {
            s.as_string()
                .ok_or_else(|| err(format!("{what} must be an array of strings")))
        })
        .collect::<Result<_, _>>()
        .map(Some)
}

/// A JavaScript `Error` with `message`.
pub(crate) fn err(message: impl std::fmt::Display) -> JsError {
    JsError::new(&message.to_string())
}

/// A Weft value as a JavaScript value: `null`, a boolean, a number (a
/// `bigint` for integers past 2^53), a string, an array or a plain object.
pub(crate) fn value_to_js(v: &Value) -> JsValue {
    match v {
        Value::Null => JsValue::NULL,
        Value::Bool(b) => JsValue::from_bool(*b),
        Value::I64(i) if (-MAX_SAFE..=MAX_SAFE).contains(i) => JsValue::from_f64(*i as f64),
        Value::I64(i) => JsValue::from(*i),
        Value::F64(f) => JsValue::from_f64(*f),
        Value::String(s) => JsValue::from_str(s),
        Value::List(items) => items.iter().map(value_to_js).collect::<Array>().into(),
        Value::Map(map) => map_to_js(map).into(),
    }
}

/// A map of values as a plain JavaScript object.
pub(crate) fn map_to_js(map: &BTreeMap<String, Value>) -> Object {
    let o = Object::new();
    for (k, v) in map {
        // Setting a property of a fresh plain object cannot fail.
        let _ = Reflect::set(&o, &JsValue::from_str(k), &value_to_js(v));
    }
    o
}

/// A JavaScript value as a Weft value: `null` and `undefined` are `Null`,
/// integral numbers are integers, other numbers floats, `bigint`s
/// integers (refused past 64 bits), arrays lists, plain objects maps.
pub(crate) fn value_from_js(v: &JsValue) -> Result<Value, JsError> {
    value_at(v, 0, MAX_DEPTH)
}

/// [`value_from_js`] nested at most `max` levels.
pub(crate) fn value_within(v: &JsValue, max: usize) -> Result<Value, JsError> {
    value_at(v, 0, max)
}

fn value_at(v: &JsValue, depth: usize, max: usize) -> Result<Value, JsError> {
    if depth > max {
        return Err(err(format!("value nested deeper than {max} levels")));
    }
    if v.is_null() || v.is_undefined() {
        return Ok(Value::Null);
    }
    if let Some(b) = v.as_bool() {
        return Ok(Value::Bool(b));
    }
    if let Some(f) = v.as_f64() {
        if f.fract() == 0.0 && f.abs() <= MAX_SAFE as f64 {
            return Ok(Value::I64(f as i64));
        }
        return Ok(Value::F64(f));
    }
    if let Some(s) = v.as_string() {
        return Ok(Value::String(s));
    }
    if v.is_bigint() {
        let i = i64::try_from(v.clone()).map_err(|_| err("a bigint past 64 bits"))?;
        return Ok(Value::I64(i));
    }
    if Array::is_array(v) {
        let a: &Array = v.unchecked_ref();
        if a.length() > MAX_ITEMS {
            return Err(err(format!("an array of more than {MAX_ITEMS} items")));
        }
        let mut out = Vec::with_capacity(a.length() as usize);
        for item in a.iter() {
            out.push(value_at(&item, depth + 1, max)?);
        }
        return Ok(Value::List(out));
    }
    if v.is_object() && !v.is_function() {
        return Ok(Value::Map(map_at(v, depth + 1, max)?));
    }
    Err(err(
        "a value must be null, a boolean, a number, a bigint, a string, an array or a plain object",
    ))
}

fn map_at(v: &JsValue, depth: usize, max: usize) -> Result<BTreeMap<String, Value>, JsError> {
    let o: &Object = v.unchecked_ref();
    let mut out = BTreeMap::new();
    for pair in Object::entries(o).iter() {
        let pair: Array = pair.unchecked_into();
        let key = pair
            .get(0)
            .as_string()
            .ok_or_else(|| err("object keys must be strings"))?;
        out.insert(key, value_at(&pair.get(1), depth, max)?);
    }
    Ok(out)
}

/// Attributes from a plain object (`undefined` or `null`: none).
pub(crate) fn attributes_from_js(v: &JsValue) -> Result<Attributes, JsError> {
    if v.is_null() || v.is_undefined() {
        return Ok(Attributes::new());
    }
    if !v.is_object() || Array::is_array(v) {
        return Err(err("attributes must be a plain object"));
    }
    map_at(v, 1, MAX_DEPTH)
}

fn get(o: &JsValue, key: &str) -> JsValue {
    Reflect::get(o, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
}

/// [`whole`] for a JavaScript value (anything but a number is refused).
pub(crate) fn count(v: &JsValue, what: &str) -> Result<usize, JsError> {
    whole(v.as_f64().unwrap_or(f64::NAN), what)
}

/// A delta as Quill's JSON: `{insert, attributes?}`, `{retain,
/// attributes?}`, `{delete}`; a block marker is `{insert: "\n",
/// attributes}` (attributes always present, maybe empty); an embed is
/// `{insert: value}` with a non-string value.
pub(crate) fn delta_to_js(delta: &[Delta]) -> Array {
    delta
        .iter()
        .map(|d| JsValue::from(op_to_js(d, true)))
        .collect()
}

/// One delta op as Quill's JSON; with `empty_block_attributes` false a
/// block marker without attributes is a bare `{insert: "\n"}` (as Quill
/// writes a plain line end).
pub(crate) fn op_to_js(d: &Delta, empty_block_attributes: bool) -> Object {
    let o = Object::new();
    let set = |k: &str, v: &JsValue| {
        let _ = Reflect::set(&o, &JsValue::from_str(k), v);
    };
    let attrs = |a: &Attributes, always: bool| {
        if always || !a.is_empty() {
            set("attributes", &map_to_js(a).into());
        }
    };
    match d {
        Delta::Insert { insert, attributes } => {
            set("insert", &JsValue::from_str(insert));
            attrs(attributes, false);
        }
        Delta::Retain { retain, attributes } => {
            set("retain", &JsValue::from_f64(*retain as f64));
            attrs(attributes, false);
        }
        Delta::Delete { delete } => set("delete", &JsValue::from_f64(*delete as f64)),
        Delta::Embed { insert, attributes } => {
            // Quill's embeds are objects; another kind of value (from a
            // Rust peer) is wrapped, so a string never reads as text.
            let value = match insert {
                Value::Map(_) => value_to_js(insert),
                other => {
                    let o = Object::new();
                    let _ = Reflect::set(&o, &"embed".into(), &value_to_js(other));
                    o.into()
                }
            };
            set("insert", &value);
            attrs(attributes, false);
        }
        Delta::Block { attributes } => {
            set("insert", &JsValue::from_str("\n"));
            attrs(attributes, empty_block_attributes);
        }
        // `Delta` is non-exhaustive; later kinds show as an empty op.
        #[allow(unreachable_patterns)]
        _ => {}
    }
    o
}

/// A delta from Quill's JSON (an array of ops). A lone `"\n"` insert with
/// an `attributes` object is a block marker, as in Weft's serde form.
pub(crate) fn delta_from_js(v: &JsValue) -> Result<Vec<Delta>, JsError> {
    if !Array::is_array(v) {
        return Err(err("a delta must be an array of ops"));
    }
    let a: &Array = v.unchecked_ref();
    if a.length() > MAX_ITEMS {
        return Err(err(format!("a delta of more than {MAX_ITEMS} ops")));
    }
    let mut out = Vec::with_capacity(a.length() as usize);
    for op in a.iter() {
        if !op.is_object() {
            return Err(err("a delta op must be an object"));
        }
        let attributes = attributes_from_js(&get(&op, "attributes"))?;
        let insert = get(&op, "insert");
        let retain = get(&op, "retain");
        let delete = get(&op, "delete");
        let d = if let Some(s) = insert.as_string() {
            let has_attributes = !get(&op, "attributes").is_undefined();
            if s == "\n" && has_attributes {
                Delta::Block { attributes }
            } else {
                Delta::Insert {
                    insert: s,
                    attributes,
                }
            }
        } else if !insert.is_undefined() {
            Delta::Embed {
                insert: embed_from_js(&insert)?,
                attributes,
            }
        } else if !retain.is_undefined() {
            Delta::Retain {
                retain: count(&retain, "retain")?,
                attributes,
            }
        } else if !delete.is_undefined() {
            Delta::Delete {
                delete: count(&delete, "delete")?,
            }
        } else {
            return Err(err("a delta op needs insert, retain or delete"));
        };
        out.push(d);
    }
    Ok(out)
}

/// An embed's value: a plain object, as Quill's embeds (`{image: url}`);
/// another value would read back ambiguously in a delta.
pub(crate) fn embed_from_js(v: &JsValue) -> Result<Value, JsError> {
    match value_from_js(v)? {
        map @ Value::Map(_) => Ok(map),
        _ => Err(err("an embed is a plain object, e.g. {image: url}")),
    }
}

/// A peer id as JavaScript sees it: a decimal string (as loro-crdt's
/// `PeerID`), since ids use all 64 bits.
pub(crate) fn peer_to_js(peer: PeerId) -> JsValue {
    JsValue::from_str(&peer.to_string())
}

/// A peer id from a decimal string or a `bigint`.
pub(crate) fn peer_from_js(v: &JsValue) -> Result<PeerId, JsError> {
    if let Some(s) = v.as_string() {
        return s
            .parse::<PeerId>()
            .map_err(|_| err(format!("not a peer id: {s:?}")));
    }
    if v.is_bigint() {
        return u64::try_from(v.clone()).map_err(|_| err("a peer id is 64 bits, unsigned"));
    }
    if let Some(f) = v.as_f64() {
        if f.fract() == 0.0 && f >= 0.0 && f <= MAX_SAFE as f64 {
            return Ok(f as u64);
        }
    }
    Err(err("a peer id must be a decimal string or a bigint"))
}

/// An op id as `{peer, counter}`.
pub(crate) fn id_to_js(id: OpId) -> Object {
    let o = Object::new();
    let _ = Reflect::set(&o, &"peer".into(), &peer_to_js(id.peer));
    let _ = Reflect::set(&o, &"counter".into(), &JsValue::from(id.counter));
    o
}

/// Frontiers as an array of `{peer, counter}`.
pub(crate) fn frontiers_to_js(f: &Frontiers) -> Array {
    f.iter().map(|id| JsValue::from(id_to_js(id))).collect()
}

/// Frontiers from an array of `{peer, counter}`.
pub(crate) fn frontiers_from_js(v: &JsValue) -> Result<Frontiers, JsError> {
    if !Array::is_array(v) {
        return Err(err("frontiers must be an array of {peer, counter}"));
    }
    let mut f = Frontiers::new();
    for id in v.unchecked_ref::<Array>().iter() {
        let peer = peer_from_js(&get(&id, "peer"))?;
        let counter = count(&get(&id, "counter"), "counter")?;
        f.insert(OpId::new(peer, counter as u32));
    }
    Ok(f)
}

/// Spans as an array of `{peer, start, end}` (counters, end exclusive).
pub(crate) fn spans_to_js(spans: &[IdSpan]) -> Array {
    spans
        .iter()
        .map(|s| {
            let o = Object::new();
            let _ = Reflect::set(&o, &"peer".into(), &peer_to_js(s.peer));
            let _ = Reflect::set(&o, &"start".into(), &JsValue::from(s.counters.start));
            let _ = Reflect::set(&o, &"end".into(), &JsValue::from(s.counters.end));
            JsValue::from(o)
        })
        .collect()
}

/// Reads `key` of an options object (`undefined` when absent or when
/// `options` is not an object).
pub(crate) fn option(options: &JsValue, key: &str) -> JsValue {
    if options.is_object() {
        get(options, key)
    } else {
        JsValue::UNDEFINED
    }
}
