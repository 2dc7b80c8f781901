//! `Presence`: Weft's `EphemeralStore` for JavaScript.

use js_sys::{Function, Object, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;

use crate::convert::{
    bytes_from_js, err, map_to_js, value_to_js, value_within, whole, PRESENCE_DEPTH,
};
use crate::shared::unsubscriber;
use crate::shared::{pop, push, Listeners, Queue};
use std::rc::Rc;

struct Inner {
    store: weft::EphemeralStore,
    events: Queue<weft::EphemeralStoreEvent>,
    updates: Queue<Vec<u8>>,
    event_listeners: Listeners,
    update_listeners: Listeners,
    subs: Vec<weft::Subscription>,
    /// Listeners are being called: a listener's own `set` leaves its event
    /// to the loop running (in order) instead of recursing.
    flushing: std::cell::Cell<bool>,
}

/// Who is here and where their cursors are: per-key values shared with
/// peers next to the document (never part of its history). Keys not
/// refreshed expire after the timeout.
///
/// ```js
/// const presence = new Presence(30000);
/// presence.set("user:ana", { name: "Ana", color: "#e33" });
/// const bytes = presence.encodeAll(); // for other.apply(bytes)
/// ```
#[wasm_bindgen]
pub struct Presence {
    inner: Rc<Inner>,
}

#[wasm_bindgen]
impl Presence {
    /// A store whose keys expire `timeoutMs` after their last refresh.
    #[wasm_bindgen(constructor)]
    pub fn new(timeout_ms: f64) -> Result<Presence, JsError> {
        let store = weft::EphemeralStore::new(whole(timeout_ms, "timeoutMs")? as u64);
        let events: Queue<weft::EphemeralStoreEvent> = Queue::default();
        let updates: Queue<Vec<u8>> = Queue::default();
        let (e, u) = (events.clone(), updates.clone());
        let subs = vec![
            store.subscribe(move |ev| push(&e, ev.clone())),
            store.subscribe_local_updates(move |b| push(&u, b.to_vec())),
        ];
        Ok(Presence {
            inner: Rc::new(Inner {
                store,
                events,
                updates,
                event_listeners: Listeners::default(),
                update_listeners: Listeners::default(),
                subs,
                flushing: std::cell::Cell::new(false),
            }),
        })
    }

    fn flush(&self) {
        let i = &self.inner;
        let _ = &i.subs;
        if i.flushing.replace(true) {
            return;
        }
        loop {
            if let Some(ev) = pop(&i.events) {
                let o = Object::new();
                let by = match ev.by {
                    weft::EphemeralEventTrigger::Local => "local",
                    weft::EphemeralEventTrigger::Import => "import",
                    weft::EphemeralEventTrigger::Timeout => "timeout",
                    #[allow(unreachable_patterns)]
                    _ => "other",
                };
                let list = |v: &Vec<String>| -> js_sys::Array {
                    v.iter().map(|s| JsValue::from_str(s)).collect()
                };
                let _ = Reflect::set(&o, &"by".into(), &by.into());
                let _ = Reflect::set(&o, &"added".into(), &list(&ev.added));
                let _ = Reflect::set(&o, &"updated".into(), &list(&ev.updated));
                let _ = Reflect::set(&o, &"removed".into(), &list(&ev.removed));
                i.event_listeners.call(&o);
            } else if let Some(bytes) = pop(&i.updates) {
                i.update_listeners
                    .call(&Uint8Array::from(bytes.as_slice()).into());
            } else {
                break;
            }
        }
        i.flushing.set(false);
    }

    /// Sets `key` to `value` (a refresh when unchanged).
    pub fn set(
        &self,
        key: &str,
        #[wasm_bindgen(unchecked_param_type = "Value")] value: JsValue,
    ) -> Result<(), JsError> {
        // Deeper values would not decode on peers (and would spoil
        // `encodeAll` for every key).
        let v = value_within(&value, PRESENCE_DEPTH)?;
        self.inner.store.set(key, v);
        self.flush();
        Ok(())
    }

    /// Deletes `key`.
    pub fn delete(&self, key: &str) {
        self.inner.store.delete(key);
        self.flush();
    }

    /// The value of `key` (`undefined` when absent).
    #[wasm_bindgen(unchecked_return_type = "Value | undefined")]
    pub fn get(&self, key: &str) -> JsValue {
        self.inner
            .store
            .get(key)
            .map_or(JsValue::UNDEFINED, |v| value_to_js(&v))
    }

    /// The keys that have a value.
    pub fn keys(&self) -> Vec<String> {
        self.inner.store.keys()
    }

    /// Every key and its value, as a plain object.
    #[wasm_bindgen(js_name = getAllStates, unchecked_return_type = "Record<string, Value>")]
    pub fn get_all_states(&self) -> Object {
        let all = self.inner.store.get_all_states();
        map_to_js(&all.into_iter().collect())
    }

    /// The bytes of one key's state, for peers' `apply`.
    pub fn encode(&self, key: &str) -> Uint8Array {
        Uint8Array::from(self.inner.store.encode(key).as_slice())
    }

    /// The bytes of every key's state.
    #[wasm_bindgen(js_name = encodeAll)]
    pub fn encode_all(&self) -> Uint8Array {
        Uint8Array::from(self.inner.store.encode_all().as_slice())
    }

    /// Merges a peer's bytes; throws on malformed bytes (nothing changes).
    pub fn apply(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Uint8Array")] bytes: JsValue,
    ) -> Result<(), JsError> {
        let out = self.inner.store.apply(&bytes_from_js(&bytes)?).map_err(err);
        self.flush();
        out
    }

    /// Removes the keys whose timeout passed (call it on a timer).
    #[wasm_bindgen(js_name = removeOutdated)]
    pub fn remove_outdated(&self) {
        self.inner.store.remove_outdated();
        self.flush();
    }

    /// Calls `listener({by, added, updated, removed})` when keys change.
    /// Returns a function that unsubscribes.
    #[wasm_bindgen(unchecked_return_type = "() => void")]
    pub fn subscribe(
        &self,
        #[wasm_bindgen(unchecked_param_type = "(event: PresenceEvent) => void")] listener: Function,
    ) -> Function {
        let id = self.inner.event_listeners.add(listener);
        let weak = Rc::downgrade(&self.inner);
        unsubscriber(move || {
            if let Some(i) = weak.upgrade() {
                i.event_listeners.remove(id);
            }
        })
    }

    /// Calls `listener(bytes)` after each local `set` or `delete`: the
    /// bytes to send to peers. Returns a function that unsubscribes.
    #[wasm_bindgen(js_name = subscribeLocalUpdates, unchecked_return_type = "() => void")]
    pub fn subscribe_local_updates(
        &self,
        #[wasm_bindgen(unchecked_param_type = "(update: Uint8Array) => void")] listener: Function,
    ) -> Function {
        let id = self.inner.update_listeners.add(listener);
        let weak = Rc::downgrade(&self.inner);
        unsubscriber(move || {
            if let Some(i) = weak.upgrade() {
                i.update_listeners.remove(id);
            }
        })
    }
}
