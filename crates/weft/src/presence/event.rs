//! What [`super::EphemeralStore`] tells its subscribers: change events and
//! the bytes of local updates, and the [`Subscription`] handles that stop
//! them when dropped.
//!
//! Callbacks are kept behind their own lock, apart from the store's state,
//! and are called after both locks are released, so a callback may read
//! or change the store, subscribe or drop a subscription.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::event::Subscription;

/// What caused an [`EphemeralStoreEvent`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EphemeralEventTrigger {
    /// A local [`super::EphemeralStore::set`] or
    /// [`super::EphemeralStore::delete`].
    Local,
    /// Bytes from another store, through [`super::EphemeralStore::apply`].
    Import,
    /// [`super::EphemeralStore::remove_outdated`] expired the keys.
    Timeout,
}

/// The keys one operation on an [`super::EphemeralStore`] changed, each
/// list sorted. A key is listed only when what `get` returns for it
/// changed: setting a key to the value it has refreshes its timestamp
/// without an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EphemeralStoreEvent {
    /// What made the change.
    pub by: EphemeralEventTrigger,
    /// Keys that had no value and now have one.
    pub added: Vec<String>,
    /// Keys whose value changed.
    pub updated: Vec<String>,
    /// Keys that had a value and now have none (deleted or expired).
    pub removed: Vec<String>,
}

impl EphemeralStoreEvent {
    pub(super) fn new(by: EphemeralEventTrigger) -> Self {
        EphemeralStoreEvent {
            by,
            added: Vec::new(),
            updated: Vec::new(),
            removed: Vec::new(),
        }
    }

    /// Whether no key changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.updated.is_empty() && self.removed.is_empty()
    }
}

/// A change callback.
type EventCallback = Arc<dyn Fn(&EphemeralStoreEvent) + Send + Sync>;
/// A local-update callback: gets the encoded state of what changed.
type UpdateCallback = Arc<dyn Fn(&[u8]) + Send + Sync>;

/// The callbacks of one store, by subscription id.
#[derive(Default)]
pub(super) struct Subscribers {
    next_id: u64,
    events: BTreeMap<u64, EventCallback>,
    updates: BTreeMap<u64, UpdateCallback>,
}

/// Locks `m`, also after a panic elsewhere: the state behind it is only
/// ever changed by our code, which does not panic while holding it.
pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Subscribers {
    fn next_id(&mut self) -> u64 {
        self.next_id = self.next_id.wrapping_add(1);
        self.next_id
    }

    pub(super) fn add_event(this: &Arc<Mutex<Self>>, f: EventCallback) -> Subscription {
        let mut s = lock(this);
        let id = s.next_id();
        s.events.insert(id, f);
        subscription(this, id)
    }

    pub(super) fn add_update(this: &Arc<Mutex<Self>>, f: UpdateCallback) -> Subscription {
        let mut s = lock(this);
        let id = s.next_id();
        s.updates.insert(id, f);
        subscription(this, id)
    }

    /// Whether anyone listens for local updates (so they need encoding).
    pub(super) fn wants_updates(this: &Mutex<Self>) -> bool {
        !lock(this).updates.is_empty()
    }

    /// Calls every change callback with `event` (unless it is empty),
    /// outside the lock.
    pub(super) fn emit_event(this: &Mutex<Self>, event: &EphemeralStoreEvent) {
        if event.is_empty() {
            return;
        }
        let callbacks: Vec<EventCallback> = lock(this).events.values().cloned().collect();
        for f in callbacks {
            f(event);
        }
    }

    /// Calls every local-update callback with `bytes`, outside the lock.
    pub(super) fn emit_update(this: &Mutex<Self>, bytes: &[u8]) {
        let callbacks: Vec<UpdateCallback> = lock(this).updates.values().cloned().collect();
        for f in callbacks {
            f(bytes);
        }
    }
}

/// A subscription to a store for `id`: dropping it removes the callback.
fn subscription(subscribers: &Arc<Mutex<Subscribers>>, id: u64) -> Subscription {
    let subscribers = Arc::downgrade(subscribers);
    Subscription::new(move || {
        if let Some(subscribers) = subscribers.upgrade() {
            let removed = {
                let mut s = lock(&subscribers);
                (s.events.remove(&id), s.updates.remove(&id))
            };
            // Dropped outside the lock: a callback may own a subscription
            // of this store.
            drop(removed);
        }
    })
}

impl fmt::Debug for Subscribers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscribers")
            .field("events", &self.events.len())
            .field("updates", &self.updates.len())
            .finish()
    }
}
