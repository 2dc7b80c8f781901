//! `UndoManager` and `Cursor`.

use std::rc::Rc;

use js_sys::Uint8Array;
use wasm_bindgen::prelude::*;

use crate::convert::{bytes_from_js, err, whole};
use crate::shared::Shared;
use crate::Doc;

/// A stable position in a text: it moves with the char it sticks to
/// through every later edit. Its bytes travel to other peers (presence).
#[wasm_bindgen]
pub struct Cursor {
    pub(crate) inner: weft::Cursor,
}

#[wasm_bindgen]
impl Cursor {
    /// The cursor's bytes.
    pub fn encode(&self) -> Uint8Array {
        Uint8Array::from(self.inner.encode().as_slice())
    }

    /// Reads [`Cursor::encode`]'s bytes; throws on anything else.
    pub fn decode(
        #[wasm_bindgen(unchecked_param_type = "Uint8Array")] bytes: JsValue,
    ) -> Result<Cursor, JsError> {
        Ok(Cursor {
            inner: weft::Cursor::decode(&bytes_from_js(&bytes)?).map_err(err)?,
        })
    }

    /// The name of the text it is in.
    #[wasm_bindgen(getter)]
    pub fn text(&self) -> String {
        self.inner.text().to_owned()
    }
}

/// Undo and redo of this peer's own edits, one step per commit (commits
/// close together merge into one step). Remote edits are never undone.
/// It belongs to the document it was made for.
///
/// ```js
/// const undo = new UndoManager(doc);
/// doc.getText("t").insert(0, "typo");
/// doc.commit();
/// undo.undo(); // the text is empty again
/// ```
#[wasm_bindgen]
pub struct UndoManager {
    shared: Rc<Shared>,
    inner: weft::UndoManager,
}

#[wasm_bindgen]
impl UndoManager {
    /// An undo manager for `doc`'s local edits from now on.
    #[wasm_bindgen(constructor)]
    pub fn new(doc: &Doc) -> Result<UndoManager, JsError> {
        let inner = weft::UndoManager::new(&mut *doc.shared.doc()?);
        Ok(UndoManager {
            shared: doc.shared.clone(),
            inner,
        })
    }

    /// Undoes the latest step; `false` when there is none.
    pub fn undo(&mut self) -> Result<bool, JsError> {
        let inner = &mut self.inner;
        self.shared
            .with(|d| inner.undo(d).map(|c| c.is_some()).map_err(err))
    }

    /// Redoes the latest undone step; `false` when there is none.
    pub fn redo(&mut self) -> Result<bool, JsError> {
        let inner = &mut self.inner;
        self.shared
            .with(|d| inner.redo(d).map(|c| c.is_some()).map_err(err))
    }

    /// Whether there is a step to undo.
    #[wasm_bindgen(js_name = canUndo)]
    pub fn can_undo(&self) -> bool {
        self.inner.can_undo()
    }

    /// Whether there is a step to redo.
    #[wasm_bindgen(js_name = canRedo)]
    pub fn can_redo(&self) -> bool {
        self.inner.can_redo()
    }

    /// Commits closer than this many milliseconds merge into one step.
    #[wasm_bindgen(js_name = setMergeInterval)]
    pub fn set_merge_interval(&mut self, ms: f64) -> Result<(), JsError> {
        self.inner.set_merge_interval(whole(ms, "ms")? as u64);
        Ok(())
    }

    /// Keeps at most this many steps.
    #[wasm_bindgen(js_name = setMaxSteps)]
    pub fn set_max_steps(&mut self, steps: f64) -> Result<(), JsError> {
        self.inner.set_max_steps(whole(steps, "steps")?);
        Ok(())
    }

    /// Commits whose origin starts with `prefix` are not undone.
    #[wasm_bindgen(js_name = addExcludeOriginPrefix)]
    pub fn add_exclude_origin_prefix(&mut self, prefix: &str) {
        self.inner.add_exclude_origin_prefix(prefix);
    }

    /// Ends the current step: the next commit starts a new one.
    pub fn checkpoint(&mut self) {
        self.inner.checkpoint();
    }
}
