//! `Text`: a rich text of a document, in UTF-16 positions; and the Quill
//! line mapping (`applyQuillDelta`, `toQuillDelta`).

use std::ops::Range;
use std::rc::Rc;

use js_sys::{Array, Object, Reflect};
use wasm_bindgen::prelude::*;
use weft::{Attributes, Delta, Side, TextRef, Unit};

thread_local! {
    /// A document with one empty text, read in place of a text that does
    /// not exist.
    static EMPTY: weft::Doc = {
        let mut d = weft::Doc::new();
        let _ = d.text("").insert(0, "");
        d
    };
}

use crate::convert::{
    attributes_from_js, count, delta_from_js, delta_to_js, embed_from_js, err, map_to_js, op_to_js,
    option, strings_from_js, value_from_js, whole,
};
use crate::shared::Shared;
use crate::Cursor;

/// Quill's block (line) formats: on a `"\n"` they format its line; every
/// other key is an inline format of text.
pub(crate) const QUILL_BLOCK_KEYS: [&str; 7] = [
    "header",
    "list",
    "blockquote",
    "code-block",
    "align",
    "indent",
    "direction",
];

/// A rich text of a document. Positions and lengths are UTF-16 code units
/// (JavaScript string offsets). Edits are recorded in the document's open
/// change; `doc.commit()` closes it and tells subscribers.
///
/// ```js
/// const text = doc.getText("body");
/// text.insert(0, "Hello world");
/// text.mark({ start: 0, end: 5 }, "bold", true);
/// text.toDelta(); // [{insert: "Hello", attributes: {bold: true}}, {insert: " world"}]
/// ```
#[wasm_bindgen]
pub struct Text {
    shared: Rc<Shared>,
    name: String,
}

impl Text {
    pub(crate) fn new(shared: Rc<Shared>, name: &str) -> Text {
        Text {
            shared,
            name: name.to_owned(),
        }
    }

    fn edit<T>(
        &self,
        f: impl FnOnce(&mut weft::Text<'_>) -> weft::Result<T>,
    ) -> Result<T, JsError> {
        self.shared
            .with(|d| f(&mut d.text(&self.name)).map_err(err))
    }

    /// Reads the text without creating it: a name with no text reads as
    /// an empty one (so reading never changes `textNames` or `toJSON`).
    fn read<T>(&self, f: impl FnOnce(TextRef<'_>) -> weft::Result<T>) -> Result<T, JsError> {
        let d = self.shared.doc()?;
        match d.get_text(&self.name) {
            Some(t) => f(t).map_err(err),
            None => EMPTY.with(|e| {
                let t = e.get_text("").ok_or_else(|| err("no empty text"))?;
                f(t).map_err(err)
            }),
        }
    }
}

fn range(v: &JsValue) -> Result<Range<usize>, JsError> {
    let n = |k: &str| count(&option(v, k), &format!("range.{k}"));
    let (start, end) = (n("start")?, n("end")?);
    if start > end {
        return Err(err(format!("range {start}..{end} ends before it starts")));
    }
    Ok(start..end)
}

fn u16_to_char(t: TextRef<'_>, pos: usize) -> weft::Result<usize> {
    t.convert_pos(pos, Unit::Utf16, Unit::Char)
}

fn char_to_u16(t: TextRef<'_>, pos: usize) -> weft::Result<usize> {
    t.convert_pos(pos, Unit::Char, Unit::Utf16)
}

fn attribute_pairs(a: Attributes) -> Vec<(String, weft::Value)> {
    a.into_iter().collect()
}

#[wasm_bindgen]
impl Text {
    /// The text's name.
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// The length in UTF-16 units.
    #[wasm_bindgen(getter)]
    pub fn length(&self) -> Result<usize, JsError> {
        self.read(|t| Ok(t.len_utf16()))
    }

    /// The text as a string (block markers and embeds show as U+FFFC).
    #[wasm_bindgen(js_name = toString)]
    pub fn to_string_js(&self) -> Result<String, JsError> {
        self.read(|t| Ok(t.to_string()))
    }

    /// The text between two UTF-16 positions.
    pub fn slice(&self, start: f64, end: f64) -> Result<String, JsError> {
        let start = whole(start, "start")?;
        let end = whole(end, "end")?;
        self.read(|t| {
            let (s, e) = (u16_to_char(t, start)?, u16_to_char(t, end)?);
            t.slice(s..e)
        })
    }

    /// Inserts `s` at `pos`.
    pub fn insert(&self, pos: f64, s: &str) -> Result<(), JsError> {
        let pos = whole(pos, "pos")?;
        self.edit(|t| t.insert_utf16(pos, s))
    }

    /// Deletes `len` units from `pos`.
    pub fn delete(&self, pos: f64, len: f64) -> Result<(), JsError> {
        let pos = whole(pos, "pos")?;
        let len = whole(len, "len")?;
        self.edit(|t| t.delete_utf16(pos, len))
    }

    /// Sets the style `key` to `value` on `range` (`{start, end}`).
    pub fn mark(
        &self,
        #[wasm_bindgen(unchecked_param_type = "{ start: number; end: number }")] range_: JsValue,
        key: &str,
        #[wasm_bindgen(unchecked_param_type = "Value")] value: JsValue,
    ) -> Result<(), JsError> {
        let r = range(&range_)?;
        let v = value_from_js(&value)?;
        self.edit(|t| t.mark_utf16(r, key, v))
    }

    /// Removes the style `key` from `range`.
    pub fn unmark(
        &self,
        #[wasm_bindgen(unchecked_param_type = "{ start: number; end: number }")] range_: JsValue,
        key: &str,
    ) -> Result<(), JsError> {
        let r = range(&range_)?;
        self.edit(|t| t.unmark_utf16(r, key))
    }

    /// The styles at `pos` (of the char there).
    #[wasm_bindgen(js_name = getAttributes, unchecked_return_type = "Record<string, Value>")]
    pub fn get_attributes(&self, pos: f64) -> Result<Object, JsError> {
        let pos = whole(pos, "pos")?;
        self.read(|t| {
            let p = u16_to_char(t, pos)?;
            t.attributes_at(p)
        })
        .map(|a| map_to_js(&a))
    }

    /// The content as a Quill delta of inserts (block markers as `{insert:
    /// "\n", attributes}`).
    #[wasm_bindgen(js_name = toDelta, unchecked_return_type = "DeltaOp[]")]
    pub fn to_delta(&self) -> Result<Array, JsError> {
        self.read(|t| Ok(t.to_delta())).map(|d| delta_to_js(&d))
    }

    /// Applies a Quill delta (UTF-16 units). Atomic: a delta that does
    /// not fit throws and changes nothing.
    #[wasm_bindgen(js_name = applyDelta)]
    pub fn apply_delta(
        &self,
        #[wasm_bindgen(unchecked_param_type = "DeltaOp[]")] delta: JsValue,
    ) -> Result<(), JsError> {
        let d = delta_from_js(&delta)?;
        self.edit(|t| t.apply_delta_utf16(&d))
    }

    /// Inserts an embed (an image, a mention: any value) at `pos`. It
    /// counts as one unit.
    #[wasm_bindgen(js_name = insertEmbed)]
    pub fn insert_embed(
        &self,
        pos: f64,
        #[wasm_bindgen(unchecked_param_type = "Value")] value: JsValue,
    ) -> Result<(), JsError> {
        let pos = whole(pos, "pos")?;
        let v = embed_from_js(&value)?;
        self.edit(|t| {
            let p = u16_to_char(t.view(), pos)?;
            t.insert_embed(p, v)
        })
    }

    /// Inserts a block marker at `pos`, ending a block (a line) with
    /// `attributes` (e.g. `{header: 1}`), as Quill's `"\n"`.
    #[wasm_bindgen(js_name = splitBlock)]
    pub fn split_block(
        &self,
        pos: f64,
        #[wasm_bindgen(unchecked_param_type = "Record<string, Value> | undefined")]
        attributes: JsValue,
    ) -> Result<(), JsError> {
        let pos = whole(pos, "pos")?;
        let a = attribute_pairs(attributes_from_js(&attributes)?);
        self.edit(|t| {
            let p = u16_to_char(t.view(), pos)?;
            t.split_block(p, a)
        })
    }

    /// Sets attributes of the block marker at `pos` (`null` removes one).
    #[wasm_bindgen(js_name = updateBlock)]
    pub fn update_block(
        &self,
        pos: f64,
        #[wasm_bindgen(unchecked_param_type = "Record<string, Value>")] attributes: JsValue,
    ) -> Result<(), JsError> {
        let pos = whole(pos, "pos")?;
        let a = attribute_pairs(attributes_from_js(&attributes)?);
        self.edit(|t| {
            let p = u16_to_char(t.view(), pos)?;
            t.update_block(p, a)
        })
    }

    /// Deletes the block marker at `pos`, joining its block with the next.
    #[wasm_bindgen(js_name = joinBlock)]
    pub fn join_block(&self, pos: f64) -> Result<(), JsError> {
        let pos = whole(pos, "pos")?;
        self.edit(|t| {
            let p = u16_to_char(t.view(), pos)?;
            t.join_block(p)
        })
    }

    /// The blocks: `[{start, end, marker?, attributes}]` in UTF-16 units
    /// (`marker`: the position of the marker ending the block; the last
    /// block may have none).
    #[wasm_bindgen(unchecked_return_type = "Block[]")]
    pub fn blocks(&self) -> Result<Array, JsError> {
        self.read(|t| {
            let out = Array::new();
            for b in t.blocks() {
                let o = Object::new();
                let _ = Reflect::set(&o, &"start".into(), &char_to_u16(t, b.range.start)?.into());
                let _ = Reflect::set(&o, &"end".into(), &char_to_u16(t, b.range.end)?.into());
                if let Some(m) = b.marker {
                    let _ = Reflect::set(&o, &"marker".into(), &char_to_u16(t, m)?.into());
                }
                let _ = Reflect::set(&o, &"attributes".into(), &map_to_js(&b.attributes));
                out.push(&o);
            }
            Ok(out)
        })
    }

    /// A stable cursor at `pos`: it stays with the char after it (`side`
    /// `"after"`, the default) or before it (`"before"`) through every
    /// later edit, local or remote.
    pub fn cursor(&self, pos: f64, side: Option<String>) -> Result<Cursor, JsError> {
        let pos = whole(pos, "pos")?;
        let side = match side.as_deref() {
            None | Some("after") => Side::After,
            Some("before") => Side::Before,
            Some(s) => {
                return Err(err(format!(
                    "side must be \"before\" or \"after\", not {s:?}"
                )))
            }
        };
        self.edit(|t| t.cursor_utf16(pos, side))
            .map(|inner| Cursor { inner })
    }

    /// Applies a change delta from Quill's `text-change` event, mapping
    /// Quill's lines onto block markers so line formats never leak: every
    /// `"\n"` Quill inserts becomes a block marker (with the block
    /// formats, `blockKeys`, default Quill's: header, list, blockquote,
    /// code-block, align, indent, direction), other formats become marks
    /// of text, and a format over a line end goes to its marker. Quill's
    /// document is this text plus one final `"\n"` that Weft does not
    /// store; formatting that last line makes it a marker, and then this
    /// returns `true`: the caller appends a new final `"\n"` to Quill
    /// (silently) so the two stay one position apart. Atomic.
    #[wasm_bindgen(js_name = applyQuillDelta)]
    pub fn apply_quill_delta(
        &self,
        #[wasm_bindgen(unchecked_param_type = "DeltaOp[]")] delta: JsValue,
        block_keys: Option<JsValue>,
    ) -> Result<bool, JsError> {
        let quill = delta_from_js(&delta)?;
        let keys: Vec<String> =
            strings_from_js(&block_keys.unwrap_or(JsValue::UNDEFINED), "blockKeys")?
                .unwrap_or_else(|| QUILL_BLOCK_KEYS.iter().map(|k| (*k).to_owned()).collect());
        self.shared.with(|d| {
            let mut t = d.text(&self.name);
            let (weft_delta, trailing) = quill_to_weft(t.view(), &quill, &keys).map_err(err)?;
            t.apply_delta_utf16(&weft_delta).map_err(err)?;
            Ok(trailing)
        })
    }

    /// The content as Quill shows it: line ends as `"\n"` (with their block
    /// formats), then Quill's final `"\n"`.
    #[wasm_bindgen(js_name = toQuillDelta, unchecked_return_type = "DeltaOp[]")]
    pub fn to_quill_delta(&self) -> Result<Array, JsError> {
        let delta = self.read(|t| Ok(t.to_delta()))?;
        let out: Array = delta
            .iter()
            .map(|d| JsValue::from(op_to_js(d, false)))
            .collect();
        out.push(&op_to_js(&Delta::insert("\n"), false));
        Ok(out)
    }
}

/// Splits attributes into block formats and inline ones.
fn split_keys(a: &Attributes, keys: &[String]) -> (Attributes, Attributes) {
    a.iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .partition(|(k, _)| keys.iter().any(|b| b == k))
}

/// Weft's delta for a Quill change delta (see
/// [`Text::apply_quill_delta`]), and whether Quill's final line end became
/// a marker.
fn quill_to_weft(
    t: TextRef<'_>,
    quill: &[Delta],
    keys: &[String],
) -> weft::Result<(Vec<Delta>, bool)> {
    let len = t.len_utf16();
    // Markers of the text before the change, in UTF-16 units; read only
    // when a format needs them.
    let mut markers: Option<Vec<usize>> = None;
    let mut out = Vec::with_capacity(quill.len());
    let mut old = 0usize; // position in the text before the change
    let mut trailing = false;
    for op in quill {
        match op {
            Delta::Insert { .. } | Delta::Block { .. } => {
                let (text, attributes) = match op {
                    Delta::Insert { insert, attributes } => (insert.as_str(), attributes),
                    Delta::Block { attributes } => ("\n", attributes),
                    _ => continue,
                };
                let (block, inline) = split_keys(attributes, keys);
                for (i, piece) in text.split('\n').enumerate() {
                    if i > 0 {
                        out.push(Delta::Block {
                            attributes: block.clone(),
                        });
                    }
                    if !piece.is_empty() {
                        out.push(Delta::Insert {
                            insert: piece.to_owned(),
                            attributes: inline.clone(),
                        });
                    }
                }
            }
            Delta::Embed { insert, attributes } => {
                let (_, inline) = split_keys(attributes, keys);
                out.push(Delta::Embed {
                    insert: insert.clone(),
                    attributes: inline,
                });
            }
            Delta::Delete { delete } => {
                // Quill's final line end is not stored: deleting it is
                // nothing to Weft.
                let n = (*delete).min(len.saturating_sub(old));
                if n > 0 {
                    out.push(Delta::Delete { delete: n });
                }
                old = old.saturating_add(*delete);
            }
            Delta::Retain { retain, attributes } => {
                let end = old.saturating_add(*retain);
                let stored = end.min(len);
                if attributes.is_empty() {
                    if stored > old {
                        out.push(Delta::retain(stored - old));
                    }
                } else {
                    let (block, inline) = split_keys(attributes, keys);
                    let markers = match &mut markers {
                        Some(m) => &*m,
                        None => markers.insert(marker_positions(t)?),
                    };
                    let mut at = old;
                    let first = markers.partition_point(|&m| m < old);
                    for &m in markers[first..].iter().take_while(|&&m| m < stored) {
                        if m > at {
                            out.push(Delta::Retain {
                                retain: m - at,
                                attributes: inline.clone(),
                            });
                        }
                        out.push(Delta::Retain {
                            retain: 1,
                            attributes: block.clone(),
                        });
                        at = m + 1;
                    }
                    if stored > at {
                        out.push(Delta::Retain {
                            retain: stored - at,
                            attributes: inline.clone(),
                        });
                    }
                    if end > len && old <= len && !block.is_empty() {
                        // The format reaches Quill's final line end: it
                        // becomes a marker with the line's formats.
                        let set: Attributes =
                            block.into_iter().filter(|(_, v)| !v.is_null()).collect();
                        if !set.is_empty() {
                            out.push(Delta::Block { attributes: set });
                            trailing = true;
                        }
                    }
                }
                old = end;
            }
            _ => {}
        }
    }
    Ok((out, trailing))
}

/// The UTF-16 positions of the text's block markers, in order.
fn marker_positions(t: TextRef<'_>) -> weft::Result<Vec<usize>> {
    let mut out = Vec::new();
    for b in t.blocks() {
        if let Some(m) = b.marker {
            out.push(char_to_u16(t, m)?);
        }
    }
    Ok(out)
}
