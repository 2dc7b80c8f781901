//! Subscriptions: the callbacks a document calls after each change, held
//! in a registry shared with the [`Subscription`] handles, so dropping a
//! handle unsubscribes from any thread without touching the document.

use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use crate::unit::Unit;

use super::{Committed, DocEvent, Units};

/// A callback of [`crate::Doc::subscribe`].
pub(crate) type EventCallback = Arc<dyn Fn(&DocEvent) + Send + Sync>;
/// A callback of [`crate::Doc::subscribe_local_update`].
pub(crate) type UpdateCallback = Arc<dyn Fn(&[u8]) + Send + Sync>;
/// An undo manager's callback: each local commit (no event is drafted
/// for it).
pub(crate) type CommitCallback = Arc<dyn Fn(&Committed<'_>) + Send + Sync>;

enum Callback {
    Event(Unit, EventCallback),
    LocalUpdate(UpdateCallback),
    Commit(CommitCallback),
}

#[derive(Default)]
struct Registry {
    next_id: AtomicU64,
    /// The units event subscribers asked for (a [`Units`] set), and bit 7
    /// when a local-update subscriber exists: read on every commit without
    /// taking the lock.
    wanted: AtomicU8,
    callbacks: Mutex<Vec<(u64, Callback)>>,
    /// The event callbacks with their units, in subscription order: a
    /// copy of those in `callbacks`, made when they change, so that an
    /// event takes one reference to the list instead of one per callback.
    /// `None` while there are none (a document without subscribers
    /// allocates nothing for it).
    events: Mutex<Option<EventList>>,
}

/// A list of event callbacks with their units.
pub(crate) type EventList = Arc<Vec<(Unit, EventCallback)>>;

/// What an event sender remembers of the registry's [`EventList`]
/// between events: a weak reference, which upgrades while the registry
/// still holds that list (it drops it when the callbacks change), so the
/// list is found without taking the lock, and an unsubscribed callback
/// is not kept alive by it.
///
/// A clone remembers nothing: a cloned document has its own (empty)
/// registry, and must never reach the callbacks of the original's.
#[derive(Debug, Default)]
pub(crate) struct EventListCache(Weak<Vec<(Unit, EventCallback)>>);

impl Clone for EventListCache {
    fn clone(&self) -> Self {
        EventListCache::default()
    }
}

/// Bit of [`Registry::wanted`] for local-update subscribers.
const LOCAL_UPDATES: u8 = 1 << 7;
/// Bit of [`Registry::wanted`] for commit (undo manager) subscribers.
const COMMITS: u8 = 1 << 6;

impl Registry {
    fn lock(&self) -> MutexGuard<'_, Vec<(u64, Callback)>> {
        // A callback that panicked poisons nothing we rely on: the list is
        // only pushed to and removed from.
        self.callbacks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Recomputes `wanted` and `events` from `list` (under its lock),
    /// returning the old `events` to drop once that lock is released.
    #[must_use = "the old list is dropped outside the lock"]
    fn recompute(&self, list: &[(u64, Callback)]) -> Option<EventList> {
        let mut wanted = Units::default();
        let mut flags = 0;
        let mut events = Vec::new();
        for (_, c) in list {
            match c {
                Callback::Event(unit, f) => {
                    wanted = wanted.with(*unit);
                    events.push((*unit, Arc::clone(f)));
                }
                Callback::LocalUpdate(_) => flags |= LOCAL_UPDATES,
                Callback::Commit(_) => flags |= COMMITS,
            }
        }
        // Replaced while `callbacks` is locked, so the copy follows every
        // change in order.
        let events = (!events.is_empty()).then(|| Arc::new(events));
        let old = std::mem::replace(&mut *self.lock_events(), events);
        self.wanted.store(wanted.0 | flags, Ordering::Release);
        old
    }

    fn lock_events(&self) -> MutexGuard<'_, Option<EventList>> {
        // As `lock`: the list is only ever replaced whole.
        self.events.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn remove(&self, id: u64) {
        let removed = {
            let mut list = self.lock();
            let removed: Vec<_> = list
                .iter()
                .position(|(i, _)| *i == id)
                .map(|at| list.remove(at))
                .into_iter()
                .collect();
            let old = self.recompute(&list);
            (removed, old)
        };
        // Dropped outside the lock: a callback may own a subscription of
        // the same document.
        drop(removed);
    }
}

/// A document's subscribers. Cloning a document does not clone them: a
/// clone (or fork) starts with none.
#[derive(Default)]
pub(crate) struct Observers(Arc<Registry>);

impl Clone for Observers {
    fn clone(&self) -> Self {
        Observers::default()
    }
}

impl fmt::Debug for Observers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Observers({})", self.0.lock().len())
    }
}

impl Observers {
    /// The units event subscribers want (empty: record nothing).
    #[inline]
    pub fn event_units(&self) -> Units {
        Units(self.0.wanted.load(Ordering::Acquire) & !(LOCAL_UPDATES | COMMITS))
    }

    /// Whether an undo manager listens to local commits.
    #[inline]
    pub fn wants_commits(&self) -> bool {
        self.0.wanted.load(Ordering::Acquire) & COMMITS != 0
    }

    /// Whether someone wants the bytes of each local commit.
    #[inline]
    pub fn wants_local_updates(&self) -> bool {
        self.0.wanted.load(Ordering::Acquire) & LOCAL_UPDATES != 0
    }

    fn add(&self, callback: Callback) -> Subscription {
        let id = self.0.next_id.fetch_add(1, Ordering::Relaxed);
        let old = {
            let mut list = self.0.lock();
            list.push((id, callback));
            self.0.recompute(&list)
        };
        drop(old);
        let registry = Arc::downgrade(&self.0);
        Subscription::new(move || {
            if let Some(registry) = registry.upgrade() {
                registry.remove(id);
            }
        })
    }

    /// Adds an event callback wanting deltas in `unit`.
    pub fn subscribe(&self, unit: Unit, callback: EventCallback) -> Subscription {
        self.add(Callback::Event(unit, callback))
    }

    /// Adds a commit (undo manager) callback.
    pub fn subscribe_commits(&self, callback: CommitCallback) -> Subscription {
        self.add(Callback::Commit(callback))
    }

    /// Adds a local-update callback.
    pub fn subscribe_local_update(&self, callback: UpdateCallback) -> Subscription {
        self.add(Callback::LocalUpdate(callback))
    }

    /// The event callbacks with their units, in subscription order, as
    /// one shared list taken out of the lock (a callback may drop a
    /// subscription, which takes the lock): the one `cache` names if the
    /// registry still holds it, else the registry's (then remembered in
    /// `cache`); `None` if there are none. O(1).
    pub fn event_callbacks(&self, cache: &mut EventListCache) -> Option<EventList> {
        if let Some(list) = cache.0.upgrade() {
            return Some(list);
        }
        let list = self.0.lock_events().clone()?;
        cache.0 = Arc::downgrade(&list);
        Some(list)
    }

    /// The commit callbacks, copied out of the lock.
    pub fn commit_callbacks(&self) -> smallvec::SmallVec<[CommitCallback; 2]> {
        self.0
            .lock()
            .iter()
            .filter_map(|(_, c)| match c {
                Callback::Commit(f) => Some(Arc::clone(f)),
                _ => None,
            })
            .collect()
    }

    /// The local-update callbacks, copied out of the lock.
    pub fn update_callbacks(&self) -> Vec<UpdateCallback> {
        self.0
            .lock()
            .iter()
            .filter_map(|(_, c)| match c {
                Callback::LocalUpdate(f) => Some(Arc::clone(f)),
                Callback::Event(..) | Callback::Commit(_) => None,
            })
            .collect()
    }
}

/// A subscription to a document's events (or a presence store's):
/// dropping it, or calling [`Subscription::unsubscribe`], removes the
/// callback. It can be dropped on any thread, also after the document is
/// gone; a callback running at that moment finishes that call.
#[must_use = "dropping a Subscription unsubscribes at once"]
pub struct Subscription {
    /// Removes the callback; `None` once detached.
    cancel: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl Subscription {
    /// A subscription that runs `cancel` when dropped.
    pub(crate) fn new(cancel: impl FnOnce() + Send + Sync + 'static) -> Subscription {
        Subscription {
            cancel: Some(Box::new(cancel)),
        }
    }

    /// Removes the callback (the same as dropping the subscription).
    pub fn unsubscribe(self) {}

    /// Keeps the callback for as long as the document (or store) lives,
    /// without a handle to hold.
    pub fn detach(mut self) {
        self.cancel = None;
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(cancel) = self.cancel.take() {
            cancel();
        }
    }
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscription")
            .field("active", &self.cancel.is_some())
            .finish()
    }
}
