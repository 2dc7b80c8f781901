//! The state every handle of one document shares: the document, and the
//! events Weft produced that still wait to be handed to JavaScript.
//!
//! Weft calls its subscribers in the middle of a commit or an import,
//! while the document is borrowed. Calling JavaScript there would let a
//! listener call back into the document and find it busy, so the Weft
//! side only queues what happened; every call of the bindings that may
//! produce events hands the queue to the JavaScript listeners once the
//! document is released ([`Shared::flush`]). Listeners may edit the
//! document; what they cause is delivered after the current event, in
//! order.

use std::cell::{Cell, RefCell, RefMut};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use js_sys::Function;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::convert::err;

/// A queue Weft's `Send + Sync` callbacks push into.
pub(crate) type Queue<T> = Arc<Mutex<VecDeque<T>>>;

pub(crate) fn push<T>(queue: &Queue<T>, item: T) {
    queue
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push_back(item);
}

pub(crate) fn pop<T>(queue: &Queue<T>) -> Option<T> {
    queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front()
}

/// JavaScript listeners, each with an id to remove it by.
#[derive(Default)]
pub(crate) struct Listeners {
    next: Cell<u32>,
    list: RefCell<Vec<(u32, Function)>>,
}

impl Listeners {
    pub(crate) fn add(&self, f: Function) -> u32 {
        let id = self.next.get();
        self.next.set(id.wrapping_add(1));
        self.list.borrow_mut().push((id, f));
        id
    }

    pub(crate) fn remove(&self, id: u32) {
        self.list.borrow_mut().retain(|(i, _)| *i != id);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.list.borrow().is_empty()
    }

    /// Calls every listener with `arg`. A listener that throws is
    /// reported on the console; the others still run.
    pub(crate) fn call(&self, arg: &JsValue) {
        let list: Vec<Function> = self.list.borrow().iter().map(|(_, f)| f.clone()).collect();
        for f in list {
            if let Err(e) = f.call1(&JsValue::UNDEFINED, arg) {
                crate::console_error(&e);
            }
        }
    }
}

/// Documents alive now (made and not yet freed), for [`crate::live_documents`].
pub(crate) static LIVE: AtomicU32 = AtomicU32::new(0);

/// What Weft tells about a document, on its way to JavaScript listeners:
/// the queue Weft's callback fills, the listeners, and Weft's
/// subscription, held while there is a listener.
pub(crate) struct Channel<T> {
    pub(crate) queue: Queue<T>,
    pub(crate) listeners: Listeners,
    sub: RefCell<Option<weft::Subscription>>,
}

impl<T> Default for Channel<T> {
    fn default() -> Self {
        Channel {
            queue: Queue::default(),
            listeners: Listeners::default(),
            sub: RefCell::new(None),
        }
    }
}

/// A JavaScript function that runs `f` the first time it is called and
/// does nothing after (unsubscribing twice is harmless, as in yjs and
/// loro-crdt).
pub(crate) fn unsubscriber(f: impl FnOnce() + 'static) -> Function {
    let mut f = Some(f);
    let closure = Closure::<dyn FnMut()>::new(move || {
        if let Some(f) = f.take() {
            f();
        }
    });
    closure.into_js_value().unchecked_into()
}

/// One document and what its handles share.
pub(crate) struct Shared {
    doc: RefCell<weft::Doc>,
    pub(crate) events: Channel<weft::DocEvent>,
    pub(crate) updates: Channel<Vec<u8>>,
    flushing: Cell<bool>,
}

impl Shared {
    pub(crate) fn new(doc: weft::Doc) -> Rc<Shared> {
        LIVE.fetch_add(1, Ordering::Relaxed);
        Rc::new(Shared {
            doc: RefCell::new(doc),
            events: Channel::default(),
            updates: Channel::default(),
            flushing: Cell::new(false),
        })
    }

    /// The document, borrowed for one call. Fails (never panics) if it is
    /// borrowed already, which only a bug in the bindings could cause.
    pub(crate) fn doc(&self) -> Result<RefMut<'_, weft::Doc>, JsError> {
        self.doc
            .try_borrow_mut()
            .map_err(|_| err("the document is busy (called from inside one of its own calls)"))
    }

    /// Runs `f` on the document, then hands the events it caused to the
    /// listeners.
    pub(crate) fn with<T>(
        &self,
        f: impl FnOnce(&mut weft::Doc) -> Result<T, JsError>,
    ) -> Result<T, JsError> {
        let out = {
            let mut doc = self.doc()?;
            f(&mut doc)
        };
        self.flush();
        out
    }

    /// Adds a JavaScript listener to the channel `pick` chooses; the first
    /// one makes Weft's subscription (`subscribe`, given the channel's
    /// queue). Returns the function that removes the listener; removing
    /// the last one drops Weft's subscription, so a document nobody
    /// listens to pays nothing for events.
    pub(crate) fn listen<T: 'static>(
        self: &Rc<Self>,
        pick: fn(&Shared) -> &Channel<T>,
        listener: Function,
        subscribe: impl FnOnce(&mut weft::Doc, Queue<T>) -> weft::Subscription,
    ) -> Result<Function, JsError> {
        let channel = pick(self);
        if channel.sub.borrow().is_none() {
            let sub = subscribe(&mut *self.doc()?, channel.queue.clone());
            *channel.sub.borrow_mut() = Some(sub);
        }
        // Subscribing may commit the open change: hand out what it caused.
        self.flush();
        let id = channel.listeners.add(listener);
        let weak = Rc::downgrade(self);
        Ok(unsubscriber(move || {
            if let Some(s) = weak.upgrade() {
                let channel = pick(&s);
                channel.listeners.remove(id);
                if channel.listeners.is_empty() {
                    channel.sub.borrow_mut().take();
                }
            }
        }))
    }

    /// Hands queued events and local updates to the JavaScript listeners,
    /// in order. Re-entrant calls leave the work to the outer one.
    pub(crate) fn flush(&self) {
        if self.flushing.replace(true) {
            return;
        }
        loop {
            if let Some(event) = pop(&self.events.queue) {
                let js = crate::doc::event_to_js(&event);
                self.events.listeners.call(&js);
            } else if let Some(update) = pop(&self.updates.queue) {
                let js = js_sys::Uint8Array::from(update.as_slice());
                self.updates.listeners.call(&js);
            } else {
                break;
            }
        }
        self.flushing.set(false);
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        LIVE.fetch_sub(1, Ordering::Relaxed);
    }
}
