//! `Map`: a map of values in a document, last writer wins per key.

use std::rc::Rc;

use js_sys::Object;
use wasm_bindgen::prelude::*;

use crate::convert::{err, map_to_js, value_from_js, value_to_js};
use crate::shared::Shared;

/// A map of a document: keys to values (null, booleans, numbers, strings,
/// arrays, plain objects), last writer wins per key.
///
/// ```js
/// const settings = doc.getMap("settings");
/// settings.set("title", "Notes");
/// settings.get("title"); // "Notes"
/// ```
#[wasm_bindgen]
pub struct Map {
    shared: Rc<Shared>,
    name: String,
}

impl Map {
    pub(crate) fn new(shared: Rc<Shared>, name: &str) -> Map {
        Map {
            shared,
            name: name.to_owned(),
        }
    }
}

#[wasm_bindgen]
impl Map {
    /// The map's name.
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// Sets `key` to `value`.
    pub fn set(
        &self,
        key: &str,
        #[wasm_bindgen(unchecked_param_type = "Value")] value: JsValue,
    ) -> Result<(), JsError> {
        let v = value_from_js(&value)?;
        self.shared
            .with(|d| d.map(&self.name).set(key, v).map_err(err))
    }

    /// Deletes `key`.
    pub fn delete(&self, key: &str) -> Result<(), JsError> {
        self.shared
            .with(|d| d.map(&self.name).delete(key).map_err(err))
    }

    /// The value of `key` (`undefined` when absent).
    #[wasm_bindgen(unchecked_return_type = "Value | undefined")]
    pub fn get(&self, key: &str) -> Result<JsValue, JsError> {
        let d = self.shared.doc()?;
        Ok(d.get_map(&self.name)
            .and_then(|m| m.get(key).map(value_to_js))
            .unwrap_or(JsValue::UNDEFINED))
    }

    /// The keys, sorted.
    pub fn keys(&self) -> Result<Vec<String>, JsError> {
        let d = self.shared.doc()?;
        Ok(d.get_map(&self.name)
            .map(|m| m.iter().map(|(k, _)| k.to_owned()).collect())
            .unwrap_or_default())
    }

    /// The number of keys.
    #[wasm_bindgen(getter)]
    pub fn size(&self) -> Result<usize, JsError> {
        let d = self.shared.doc()?;
        Ok(d.get_map(&self.name).map_or(0, |m| m.len()))
    }

    /// The entries as a plain object.
    #[wasm_bindgen(js_name = toJSON, unchecked_return_type = "Record<string, Value>")]
    pub fn to_json(&self) -> Result<Object, JsError> {
        let d = self.shared.doc()?;
        let entries = d
            .get_map(&self.name)
            .map(|m| m.iter().map(|(k, v)| (k.to_owned(), v.clone())).collect())
            .unwrap_or_default();
        Ok(map_to_js(&entries))
    }
}
