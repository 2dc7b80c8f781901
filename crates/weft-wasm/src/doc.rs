//! `Doc`, its versions, and its events as JavaScript sees them.

use std::rc::Rc;

use js_sys::{Array, Function, Object, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use weft::{CommitOptions, ExportMode, IdSpan, Unit};

use crate::convert::{
    bytes_from_js, delta_to_js, err, frontiers_from_js, frontiers_to_js, option, peer_from_js,
    peer_to_js, spans_to_js, value_to_js, whole,
};
use crate::shared::{push, Shared};
use crate::{Cursor, Map, Text};

fn weft_err(e: weft::Error) -> JsError {
    err(e)
}

/// A collaborative document: named rich texts and maps, with the history
/// of every edit. Positions are UTF-16 code units, as JavaScript strings
/// count them.
///
/// ```js
/// const doc = new Doc();
/// doc.getText("body").insert(0, "Hello");
/// doc.commit();
/// const other = new Doc();
/// other.import(doc.export({ mode: "snapshot" }));
/// other.getText("body").toString(); // "Hello"
/// ```
#[wasm_bindgen]
pub struct Doc {
    pub(crate) shared: Rc<Shared>,
}

impl Doc {
    pub(crate) fn from_weft(doc: weft::Doc) -> Doc {
        Doc {
            shared: Shared::new(doc),
        }
    }
}

impl Default for Doc {
    fn default() -> Self {
        Doc::new()
    }
}

#[wasm_bindgen]
impl Doc {
    /// An empty document with a random peer id.
    #[wasm_bindgen(constructor)]
    pub fn new() -> Doc {
        Doc::from_weft(weft::Doc::new())
    }

    /// This document's peer id, a decimal string.
    #[wasm_bindgen(getter, js_name = peerId, unchecked_return_type = "string")]
    pub fn peer_id(&self) -> Result<JsValue, JsError> {
        Ok(peer_to_js(self.shared.doc()?.peer_id()))
    }

    /// Sets the peer id (a decimal string or a bigint). Two documents
    /// editing with one id corrupt each other's histories: only set ids
    /// you allocate yourself.
    #[wasm_bindgen(js_name = setPeerId)]
    pub fn set_peer_id(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string | bigint")] peer: JsValue,
    ) -> Result<(), JsError> {
        let peer = peer_from_js(&peer)?;
        self.shared.with(|d| d.set_peer_id(peer).map_err(weft_err))
    }

    /// A handle to the text `name` (created on its first edit).
    #[wasm_bindgen(js_name = getText)]
    pub fn get_text(&self, name: &str) -> Text {
        Text::new(self.shared.clone(), name)
    }

    /// A handle to the map `name` (created on its first write).
    #[wasm_bindgen(js_name = getMap)]
    pub fn get_map(&self, name: &str) -> Map {
        Map::new(self.shared.clone(), name)
    }

    /// The names of the texts that exist.
    #[wasm_bindgen(js_name = textNames)]
    pub fn text_names(&self) -> Result<Vec<String>, JsError> {
        Ok(self.shared.doc()?.text_names().map(str::to_owned).collect())
    }

    /// The names of the maps that exist.
    #[wasm_bindgen(js_name = mapNames)]
    pub fn map_names(&self) -> Result<Vec<String>, JsError> {
        Ok(self.shared.doc()?.map_names().map(str::to_owned).collect())
    }

    /// Deletes the text `name`; the name then starts a new, empty text.
    #[wasm_bindgen(js_name = deleteText)]
    pub fn delete_text(&self, name: &str) -> Result<(), JsError> {
        self.shared.with(|d| d.delete_text(name).map_err(weft_err))
    }

    /// Deletes the map `name`; the name then starts a new, empty map.
    #[wasm_bindgen(js_name = deleteMap)]
    pub fn delete_map(&self, name: &str) -> Result<(), JsError> {
        self.shared.with(|d| d.delete_map(name).map_err(weft_err))
    }

    /// Closes the open change: subscribers hear about it now. `options`
    /// may give `origin` (a string events carry), `message` (kept in the
    /// history) and `timestamp` (seconds; `true` for now).
    ///
    /// Without options (`undefined` or `null`, checked by the glue) it
    /// makes no call back into JavaScript: an editor commits on every
    /// keystroke, and reading three absent options took seven calls
    /// across the boundary, about 4x the commit itself.
    pub fn commit(
        &self,
        #[wasm_bindgen(unchecked_param_type = "CommitOptions")] options: Option<JsValue>,
    ) -> Result<(), JsError> {
        let mut o = CommitOptions::new();
        if let Some(options) = options {
            if let Some(origin) = option(&options, "origin").as_string() {
                o = o.origin(origin);
            }
            if let Some(message) = option(&options, "message").as_string() {
                o = o.message(message);
            }
            let ts = option(&options, "timestamp");
            if ts.as_bool() == Some(true) {
                o = o.timestamp_now();
            } else if let Some(s) = ts.as_f64() {
                o = o.timestamp(s as i64);
            }
        }
        self.shared.with(|d| {
            d.commit_with(o);
            Ok(())
        })
    }

    /// The document's bytes. `mode` is `{mode: "snapshot"}` (the
    /// default), `{mode: "update", from?: VersionVector}` (the ops `from`
    /// lacks; everything without it), `{mode: "snapshot-at", frontiers}`
    /// or `{mode: "shallow-snapshot", frontiers}`.
    pub fn export(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ExportMode | undefined")] mode: JsValue,
    ) -> Result<Uint8Array, JsError> {
        let kind = option(&mode, "mode")
            .as_string()
            .unwrap_or_else(|| "snapshot".into());
        let bytes = self.shared.with(|d| {
            match kind.as_str() {
                "snapshot" => d.export(ExportMode::Snapshot),
                "update" => {
                    let from = option(&mode, "from");
                    let from = if from.is_undefined() || from.is_null() {
                        weft::VersionVector::new()
                    } else {
                        VersionVector::from_js(&from)?.inner
                    };
                    d.export(ExportMode::Updates { from: &from })
                }
                "snapshot-at" | "shallow-snapshot" => {
                    let f = frontiers_from_js(&option(&mode, "frontiers"))?;
                    if kind == "snapshot-at" {
                        d.export(ExportMode::SnapshotAt(&f))
                    } else {
                        d.export(ExportMode::ShallowSnapshot(&f))
                    }
                }
                other => return Err(err(format!("unknown export mode {other:?}"))),
            }
            .map_err(weft_err)
        })?;
        Ok(Uint8Array::from(bytes.as_slice()))
    }

    /// The ops `from` lacks, as updates of at most `limit` bytes each, to
    /// import in order (what the sync client sends when a sync is larger
    /// than the server's message limit). Empty when `from` has
    /// everything.
    #[wasm_bindgen(js_name = exportUpdatesLimited)]
    pub fn export_updates_limited(
        &self,
        from: &VersionVector,
        limit: f64,
    ) -> Result<Vec<Uint8Array>, JsError> {
        let limit = whole(limit, "limit")?;
        let d = self.shared.doc()?;
        let pieces = d.export_updates_within(&from.inner, limit).map_err(err)?;
        Ok(pieces
            .iter()
            .map(|p| Uint8Array::from(p.as_slice()))
            .collect())
    }

    /// Merges an update or snapshot. Atomic: bytes that do not import
    /// throw and change nothing. Ops whose dependencies are missing wait
    /// as pending. Returns `{applied, pending}` (spans `{peer, start,
    /// end}`). `origin` is what the import's event carries.
    #[wasm_bindgen(unchecked_return_type = "{ applied: IdSpan[]; pending: IdSpan[] }")]
    pub fn import(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Uint8Array")] bytes: JsValue,
        origin: Option<String>,
    ) -> Result<Object, JsError> {
        let bytes = bytes_from_js(&bytes)?;
        let status = self.shared.with(|d| {
            match &origin {
                Some(o) => d.import_with(&bytes, o),
                None => d.import(&bytes),
            }
            .map_err(weft_err)
        })?;
        let o = Object::new();
        let _ = Reflect::set(&o, &"applied".into(), &spans_to_js(&status.applied));
        let _ = Reflect::set(&o, &"pending".into(), &spans_to_js(&status.pending));
        Ok(o)
    }

    /// The version: for each peer, how many of its ops this document has.
    pub fn version(&self) -> Result<VersionVector, JsError> {
        Ok(VersionVector {
            inner: self.shared.doc()?.version(),
        })
    }

    /// The latest version, also while a past one is checked out.
    #[wasm_bindgen(js_name = latestVersion)]
    pub fn latest_version(&self) -> Result<VersionVector, JsError> {
        Ok(VersionVector {
            inner: self.shared.doc()?.latest_version(),
        })
    }

    /// The frontiers of the version shown: `[{peer, counter}]`.
    #[wasm_bindgen(unchecked_return_type = "OpId[]")]
    pub fn frontiers(&self) -> Result<Array, JsError> {
        Ok(frontiers_to_js(&self.shared.doc()?.frontiers()))
    }

    /// The ops held pending (their dependencies are missing), as spans.
    #[wasm_bindgen(js_name = pendingSpans, unchecked_return_type = "IdSpan[]")]
    pub fn pending_spans(&self) -> Result<Array, JsError> {
        Ok(spans_to_js(&self.shared.doc()?.pending_spans()))
    }

    /// Shows the version at `frontiers` (read only until
    /// `checkoutToLatest`).
    pub fn checkout(
        &self,
        #[wasm_bindgen(unchecked_param_type = "OpId[]")] frontiers: JsValue,
    ) -> Result<(), JsError> {
        let f = frontiers_from_js(&frontiers)?;
        self.shared.with(|d| d.checkout(&f).map_err(weft_err))
    }

    /// Shows the latest version again.
    #[wasm_bindgen(js_name = checkoutToLatest)]
    pub fn checkout_to_latest(&self) -> Result<(), JsError> {
        self.shared
            .with(|d| d.checkout_to_latest().map_err(weft_err))
    }

    /// Whether a past version is checked out.
    #[wasm_bindgen(js_name = isDetached)]
    pub fn is_detached(&self) -> Result<bool, JsError> {
        Ok(self.shared.doc()?.is_detached())
    }

    /// A copy with a new peer id.
    pub fn fork(&self) -> Result<Doc, JsError> {
        Ok(Doc::from_weft(self.shared.doc()?.fork()))
    }

    /// A new document holding the history up to `frontiers`.
    #[wasm_bindgen(js_name = forkAt)]
    pub fn fork_at(
        &self,
        #[wasm_bindgen(unchecked_param_type = "OpId[]")] frontiers: JsValue,
    ) -> Result<Doc, JsError> {
        let f = frontiers_from_js(&frontiers)?;
        let d = self.shared.doc()?;
        Ok(Doc::from_weft(d.fork_at(&f).map_err(weft_err)?))
    }

    /// Makes the content what it was at `frontiers`, as new ops.
    #[wasm_bindgen(js_name = revertTo)]
    pub fn revert_to(
        &self,
        #[wasm_bindgen(unchecked_param_type = "OpId[]")] frontiers: JsValue,
    ) -> Result<(), JsError> {
        let f = frontiers_from_js(&frontiers)?;
        self.shared.with(|d| d.revert_to(&f).map_err(weft_err))
    }

    /// The changes of the history: `[{peer, start, end, lamport, deps,
    /// timestamp?, message?}]`.
    #[wasm_bindgen(unchecked_return_type = "Change[]")]
    pub fn changes(&self) -> Result<Array, JsError> {
        let changes = self.shared.doc()?.changes().map_err(weft_err)?;
        Ok(changes
            .iter()
            .map(|c| {
                let o = Object::new();
                let _ = Reflect::set(&o, &"peer".into(), &peer_to_js(c.id.peer));
                let _ = Reflect::set(&o, &"start".into(), &c.id.counters.start.into());
                let _ = Reflect::set(&o, &"end".into(), &c.id.counters.end.into());
                let _ = Reflect::set(&o, &"lamport".into(), &c.lamport.into());
                let _ = Reflect::set(&o, &"deps".into(), &frontiers_to_js(&c.deps));
                if let Some(t) = c.timestamp {
                    let _ = Reflect::set(&o, &"timestamp".into(), &(t as f64).into());
                }
                if let Some(m) = &c.message {
                    let _ = Reflect::set(&o, &"message".into(), &JsValue::from_str(m));
                }
                JsValue::from(o)
            })
            .collect())
    }

    /// Where `cursor` is now, in UTF-16 units.
    #[wasm_bindgen(js_name = getCursorPos)]
    pub fn get_cursor_pos(&self, cursor: &Cursor) -> Result<usize, JsError> {
        let d = self.shared.doc()?;
        d.cursor_pos_utf16(&cursor.inner).map_err(weft_err)
    }

    /// Sets how marks of `key` grow when text is typed at their edges:
    /// `config` maps keys to `"after"`, `"before"`, `"both"` or `"none"`.
    #[wasm_bindgen(js_name = configTextStyle)]
    pub fn config_text_style(
        &self,
        #[wasm_bindgen(
            unchecked_param_type = "Record<string, \"after\" | \"before\" | \"both\" | \"none\">"
        )]
        config: JsValue,
    ) -> Result<(), JsError> {
        let mut style = weft::StyleConfig::default();
        if config.is_object() {
            for pair in Object::entries(config.unchecked_ref()).iter() {
                let pair: Array = pair.unchecked_into();
                let key = pair.get(0).as_string().unwrap_or_default();
                let expand = match pair.get(1).as_string().as_deref() {
                    Some("after") => weft::ExpandType::After,
                    Some("before") => weft::ExpandType::Before,
                    Some("both") => weft::ExpandType::Both,
                    Some("none") => weft::ExpandType::None,
                    _ => {
                        return Err(err(format!(
                            "{key}: expand must be after, before, both or none"
                        )))
                    }
                };
                style.set(&key, expand);
            }
        }
        self.shared.doc()?.config_text_style(style);
        Ok(())
    }

    /// Calls `listener(event)` after every commit, import, undo, redo or
    /// checkout that changed something. The event is `{by, origin?,
    /// texts: [{name, delta}], maps: [{name, changes}]}`: `by` is
    /// `"local"`, `"import"`, `"undo"`, `"redo"` or `"checkout"`; each
    /// text's `delta` is a Quill change delta in UTF-16 units; a map's
    /// `changes` maps each key to its new value (`undefined`: deleted).
    /// Returns a function that unsubscribes.
    #[wasm_bindgen(unchecked_return_type = "() => void")]
    pub fn subscribe(
        &self,
        #[wasm_bindgen(unchecked_param_type = "(event: WeftEvent) => void")] listener: Function,
    ) -> Result<Function, JsError> {
        self.shared.listen(
            |s| &s.events,
            listener,
            |d, queue| d.subscribe_in(Unit::Utf16, move |e| push(&queue, e.clone())),
        )
    }

    /// Calls `listener(bytes)` with each local commit's update, the bytes
    /// to send to peers. Returns a function that unsubscribes.
    #[wasm_bindgen(js_name = subscribeLocalUpdates, unchecked_return_type = "() => void")]
    pub fn subscribe_local_updates(
        &self,
        #[wasm_bindgen(unchecked_param_type = "(update: Uint8Array) => void")] listener: Function,
    ) -> Result<Function, JsError> {
        self.shared.listen(
            |s| &s.updates,
            listener,
            |d, queue| d.subscribe_local_update(move |u| push(&queue, u.to_vec())),
        )
    }

    /// The texts as Quill deltas and the maps as objects:
    /// `{texts: {name: delta}, maps: {name: {key: value}}}`.
    #[wasm_bindgen(js_name = toJSON, unchecked_return_type = "{ texts: Record<string, DeltaOp[]>; maps: Record<string, Record<string, Value>> }")]
    pub fn to_json(&self) -> Result<Object, JsError> {
        let mut d = self.shared.doc()?;
        let texts = Object::new();
        let names: Vec<String> = d.text_names().map(str::to_owned).collect();
        for name in names {
            let delta = d.text(&name).to_delta();
            let _ = Reflect::set(&texts, &JsValue::from_str(&name), &delta_to_js(&delta));
        }
        let maps = Object::new();
        let names: Vec<String> = d.map_names().map(str::to_owned).collect();
        for name in names {
            let m = Object::new();
            if let Some(map) = d.get_map(&name) {
                for (k, v) in map.iter() {
                    let _ = Reflect::set(&m, &JsValue::from_str(k), &value_to_js(v));
                }
            }
            let _ = Reflect::set(&maps, &JsValue::from_str(&name), &m);
        }
        let o = Object::new();
        let _ = Reflect::set(&o, &"texts".into(), &texts);
        let _ = Reflect::set(&o, &"maps".into(), &maps);
        Ok(o)
    }

    /// The op spans an update or snapshot holds, read without importing
    /// it: `[{peer, start, end}]`.
    #[wasm_bindgen(js_name = spansIn, unchecked_return_type = "IdSpan[]")]
    pub fn spans_in(
        #[wasm_bindgen(unchecked_param_type = "Uint8Array")] bytes: JsValue,
    ) -> Result<Array, JsError> {
        let bytes = bytes_from_js(&bytes)?;
        let spans: Vec<IdSpan> = weft::Doc::spans_in(&bytes).map_err(weft_err)?;
        Ok(spans_to_js(&spans))
    }
}

/// A document event as JavaScript sees it (see [`Doc::subscribe`]).
pub(crate) fn event_to_js(e: &weft::DocEvent) -> JsValue {
    let o = Object::new();
    let by = match e.trigger {
        weft::EventTrigger::Local => "local",
        weft::EventTrigger::Import => "import",
        weft::EventTrigger::Undo => "undo",
        weft::EventTrigger::Redo => "redo",
        weft::EventTrigger::Checkout => "checkout",
        #[allow(unreachable_patterns)]
        _ => "other",
    };
    let _ = Reflect::set(&o, &"by".into(), &by.into());
    if let Some(origin) = &e.origin {
        let _ = Reflect::set(&o, &"origin".into(), &JsValue::from_str(origin));
    }
    let texts: Array = e
        .texts
        .iter()
        .map(|t| {
            let x = Object::new();
            let _ = Reflect::set(&x, &"name".into(), &JsValue::from_str(&t.name));
            let _ = Reflect::set(&x, &"delta".into(), &delta_to_js(&t.delta));
            JsValue::from(x)
        })
        .collect();
    let maps: Array = e
        .maps
        .iter()
        .map(|m| {
            let x = Object::new();
            let changes = Object::new();
            for (k, v) in &m.changes {
                let v = v.as_ref().map_or(JsValue::UNDEFINED, value_to_js);
                let _ = Reflect::set(&changes, &JsValue::from_str(k), &v);
            }
            let _ = Reflect::set(&x, &"name".into(), &JsValue::from_str(&m.name));
            let _ = Reflect::set(&x, &"changes".into(), &changes);
            JsValue::from(x)
        })
        .collect();
    let _ = Reflect::set(&o, &"texts".into(), &texts);
    let _ = Reflect::set(&o, &"maps".into(), &maps);
    o.into()
}

/// A version vector: for each peer, the counter of the first op of that
/// peer the version lacks.
#[wasm_bindgen]
#[derive(Clone, Default)]
pub struct VersionVector {
    pub(crate) inner: weft::VersionVector,
}

impl VersionVector {
    fn from_js(v: &JsValue) -> Result<VersionVector, JsError> {
        // A `VersionVector` object passed where a plain value is read: go
        // through its encoding.
        let encode = Reflect::get(v, &"encode".into()).unwrap_or(JsValue::UNDEFINED);
        if let Some(f) = encode.dyn_ref::<Function>() {
            let bytes = f
                .call0(v)
                .map_err(|_| err("from must be a VersionVector"))?;
            let bytes: Uint8Array = bytes
                .dyn_into()
                .map_err(|_| err("from must be a VersionVector"))?;
            return VersionVector::decode_bytes(&bytes.to_vec());
        }
        Err(err("from must be a VersionVector"))
    }
}

#[wasm_bindgen]
impl VersionVector {
    /// An empty version (no ops).
    #[wasm_bindgen(constructor)]
    pub fn new() -> VersionVector {
        VersionVector::default()
    }

    /// The counter of `peer`'s first op this version lacks (0: none of
    /// its ops).
    pub fn get(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string | bigint")] peer: JsValue,
    ) -> Result<u32, JsError> {
        Ok(self.inner.get(peer_from_js(&peer)?))
    }

    /// Whether this version has every op `other` has.
    #[wasm_bindgen(js_name = includesAll)]
    pub fn includes_all(&self, other: &VersionVector) -> bool {
        self.inner.includes_all(&other.inner)
    }

    /// Raises this version to include every op of `other`.
    pub fn merge(&mut self, other: &VersionVector) {
        self.inner.merge(&other.inner);
    }

    /// Whether the two versions hold the same ops.
    pub fn equals(&self, other: &VersionVector) -> bool {
        self.inner == other.inner
    }

    /// The number of ops.
    #[wasm_bindgen(js_name = opCount)]
    pub fn op_count(&self) -> f64 {
        self.inner.op_count() as f64
    }

    /// `{peer: counter}`, peers as decimal strings.
    #[wasm_bindgen(js_name = toJSON, unchecked_return_type = "Record<string, number>")]
    pub fn to_json(&self) -> Object {
        let o = Object::new();
        for (peer, counter) in self.inner.iter() {
            let _ = Reflect::set(&o, &peer_to_js(peer), &counter.into());
        }
        o
    }

    /// The bytes of the sync protocol's *version* (see `docs/PROTOCOL.md`):
    /// a count, then each peer (sorted) and its counter, LEB128 varints.
    pub fn encode(&self) -> Uint8Array {
        let mut out = Vec::new();
        let mut entries: Vec<_> = self.inner.iter().collect();
        entries.sort_unstable();
        weft_kv::varint::write(&mut out, entries.len() as u64);
        for (peer, counter) in entries {
            weft_kv::varint::write(&mut out, peer);
            weft_kv::varint::write(&mut out, u64::from(counter));
        }
        Uint8Array::from(out.as_slice())
    }

    /// Reads [`VersionVector::encode`]'s bytes; throws on anything else.
    pub fn decode(
        #[wasm_bindgen(unchecked_param_type = "Uint8Array")] bytes: JsValue,
    ) -> Result<VersionVector, JsError> {
        VersionVector::decode_bytes(&bytes_from_js(&bytes)?)
    }
}

impl VersionVector {
    fn decode_bytes(bytes: &[u8]) -> Result<VersionVector, JsError> {
        let mut at = 0;
        let n = read_varint(bytes, &mut at)?;
        let mut inner = weft::VersionVector::new();
        for _ in 0..n {
            let peer = read_varint(bytes, &mut at)?;
            let counter = u32::try_from(read_varint(bytes, &mut at)?)
                .map_err(|_| err("a counter past 32 bits"))?;
            inner.set(peer, counter);
        }
        if at != bytes.len() {
            return Err(err("trailing bytes after a version"));
        }
        Ok(VersionVector { inner })
    }
}

fn read_varint(bytes: &[u8], at: &mut usize) -> Result<u64, JsError> {
    weft_kv::varint::read(bytes, at).ok_or_else(|| {
        if *at >= bytes.len() {
            err("a version ends too early")
        } else {
            err("a varint past 64 bits")
        }
    })
}
