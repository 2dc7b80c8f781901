//! [`Value`]: the value of a style (the `true` of `bold: true`, the URL of a
//! link), of a map entry, of an embed and of a presence key.

use std::collections::BTreeMap;

/// Deepest nesting of lists and maps a value may have: what exports
/// carry and decoders accept.
pub(crate) const MAX_VALUE_DEPTH: u32 = 32;
/// A style value: JSON-like, with integers and floats kept apart.
///
/// Equality is exact and reflexive: floats compare by their bits, so
/// `F64(f64::NAN) == F64(f64::NAN)` and `0.0 != -0.0`. That keeps "is this
/// already the value here?" (which decides whether a mark is redundant)
/// deterministic.
///
/// With the `serde` feature, a `Value` serializes as plain JSON (`null`,
/// `true`, `3`, `1.5`, `"x"`, `[..]`, `{..}`).
///
/// # Examples
///
/// ```
/// use weft::Value;
///
/// assert_eq!(Value::from(true), Value::Bool(true));
/// assert_eq!(Value::from("https://example.com"), Value::String("https://example.com".into()));
/// assert!(Value::Null.is_null());
/// ```
#[derive(Debug, Clone)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(untagged)
)]
pub enum Value {
    /// No value; as a mark's value it removes the style (see
    /// [`crate::Text::unmark`]).
    Null,
    /// A boolean, e.g. `bold: true`.
    Bool(bool),
    /// A signed integer.
    I64(i64),
    /// A float.
    F64(f64),
    /// A string, e.g. a link's URL.
    String(String),
    /// A list of values.
    List(Vec<Value>),
    /// A map of values, sorted by key.
    Map(BTreeMap<String, Value>),
}

impl Value {
    /// Whether this is [`Value::Null`].
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// Checks that the value, itself `depth` levels down in what is
    /// written, nests no deeper than exports carry.
    ///
    /// # Errors
    ///
    /// [`crate::Error::ValueTooDeep`].
    pub(crate) fn check_depth(&self, depth: u32) -> crate::Result<()> {
        let max = MAX_VALUE_DEPTH;
        if depth > max {
            return Err(crate::Error::ValueTooDeep { max });
        }
        match self {
            Value::List(items) => items.iter().try_for_each(|v| v.check_depth(depth + 1)),
            Value::Map(map) => map.values().try_for_each(|v| v.check_depth(depth + 1)),
            _ => Ok(()),
        }
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::I64(a), Value::I64(b)) => a == b,
            (Value::F64(a), Value::F64(b)) => a.to_bits() == b.to_bits(),
            (Value::String(a), Value::String(b)) => a == b,
            (Value::List(a), Value::List(b)) => a == b,
            (Value::Map(a), Value::Map(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Value {}

impl From<bool> for Value {
    fn from(v: bool) -> Value {
        Value::Bool(v)
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Value {
        Value::I64(v)
    }
}

impl From<i32> for Value {
    fn from(v: i32) -> Value {
        Value::I64(v.into())
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value::F64(v)
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Value {
        Value::String(v.to_owned())
    }
}

impl From<String> for Value {
    fn from(v: String) -> Value {
        Value::String(v)
    }
}

impl From<Vec<Value>> for Value {
    fn from(v: Vec<Value>) -> Value {
        Value::List(v)
    }
}

impl From<BTreeMap<String, Value>> for Value {
    fn from(v: BTreeMap<String, Value>) -> Value {
        Value::Map(v)
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Null, Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equality_is_reflexive_for_floats() {
        assert_eq!(Value::F64(f64::NAN), Value::F64(f64::NAN));
        assert_ne!(Value::F64(0.0), Value::F64(-0.0));
        assert_ne!(Value::I64(1), Value::F64(1.0));
        assert_eq!(Value::from(None::<bool>), Value::Null);
    }
}
