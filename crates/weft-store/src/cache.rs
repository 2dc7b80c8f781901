//! The cache of loaded documents: least recently used first out, under a
//! budget of stored bytes.
//!
//! A slot's size is its document's stored size (snapshot plus update
//! rows), which the memory of the loaded document follows. Evicting a
//! slot only forgets it: a thread still using the entry finishes with it,
//! and the next use loads the document again from the database.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Condvar, Mutex};

use weft::Doc;

use crate::backend::DocKey;

/// A loaded document and what the store knows about its rows.
pub(crate) struct Loaded {
    pub key: DocKey,
    pub doc: Doc,
    /// The snapshot generation `doc` was built on.
    pub generation: u64,
    /// Every update row with a sequence number up to this one is in `doc`.
    pub seen: u64,
    pub snapshot_len: u64,
    /// Bytes of the update rows after the snapshot (including appends in
    /// flight).
    pub tail_bytes: u64,
    /// Appends imported into `doc` whose commit has not answered yet.
    pub in_flight: usize,
    /// Reads waiting for `in_flight` to reach 0 (new appends wait for
    /// them, so that they wait for one group commit at most).
    pub readers_waiting: usize,
    /// A compaction of this document is queued or running.
    pub compaction_queued: bool,
}

/// One cached document; `None` until loaded.
#[derive(Default)]
pub(crate) struct Entry {
    pub state: Mutex<Option<Loaded>>,
    /// Signalled when `in_flight` or `readers_waiting` of `state` drops
    /// to 0.
    pub settled: Condvar,
    /// Set when `state` may hold what the database does not (a failed
    /// commit) or lack what it does: the next user loads it again.
    pub stale: AtomicBool,
}

struct Slot {
    entry: Arc<Entry>,
    tick: u64,
    size: u64,
}

/// The slots by id, and their order of use.
pub(crate) struct Cache {
    slots: HashMap<String, Slot>,
    by_use: BTreeMap<u64, String>,
    tick: u64,
    bytes: u64,
    budget: u64,
}

impl Cache {
    pub(crate) fn new(budget: u64) -> Cache {
        Cache {
            slots: HashMap::new(),
            by_use: BTreeMap::new(),
            tick: 0,
            bytes: 0,
            budget,
        }
    }

    /// The entry of `id` (a new, unloaded one if none), marked used.
    pub(crate) fn get(&mut self, id: &str) -> Arc<Entry> {
        self.tick += 1;
        let tick = self.tick;
        if let Some(slot) = self.slots.get_mut(id) {
            self.by_use.remove(&slot.tick);
            slot.tick = tick;
            self.by_use.insert(tick, id.to_owned());
            return Arc::clone(&slot.entry);
        }
        let entry = Arc::new(Entry::default());
        self.slots.insert(
            id.to_owned(),
            Slot {
                entry: Arc::clone(&entry),
                tick,
                size: 0,
            },
        );
        self.by_use.insert(tick, id.to_owned());
        entry
    }

    /// Records the size of `id`'s entry (if it is still this one), then
    /// evicts the least recently used others while over budget.
    pub(crate) fn set_size(&mut self, id: &str, entry: &Arc<Entry>, size: u64) {
        if let Some(slot) = self.slots.get_mut(id) {
            if Arc::ptr_eq(&slot.entry, entry) {
                self.bytes = self.bytes - slot.size + size;
                slot.size = size;
            }
        }
        while self.bytes > self.budget && self.slots.len() > 1 {
            let Some((tick, oldest)) = self.by_use.pop_first() else {
                break;
            };
            if oldest == id {
                // Never evict the document in use.
                self.by_use.insert(tick, oldest);
                break;
            }
            if let Some(slot) = self.slots.remove(&oldest) {
                self.bytes -= slot.size;
            }
        }
    }

    /// Forgets `id` if its entry is `entry`.
    pub(crate) fn remove(&mut self, id: &str, entry: &Arc<Entry>) {
        if self
            .slots
            .get(id)
            .is_some_and(|s| Arc::ptr_eq(&s.entry, entry))
        {
            if let Some(slot) = self.slots.remove(id) {
                self.by_use.remove(&slot.tick);
                self.bytes -= slot.size;
            }
        }
    }

    /// Forgets `id` whatever its entry.
    pub(crate) fn forget(&mut self, id: &str) -> Option<Arc<Entry>> {
        let slot = self.slots.remove(id)?;
        self.by_use.remove(&slot.tick);
        self.bytes -= slot.size;
        Some(slot.entry)
    }

    /// The entry of `id`, if cached, without marking it used.
    pub(crate) fn peek(&self, id: &str) -> Option<Arc<Entry>> {
        self.slots.get(id).map(|s| Arc::clone(&s.entry))
    }

    /// Documents cached now.
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_least_recently_used_over_budget() {
        let mut cache = Cache::new(100);
        for id in ["a", "b", "c"] {
            let e = cache.get(id);
            cache.set_size(id, &e, 40);
        }
        // a, b, c = 120 > 100: a (least recent) went.
        assert_eq!(cache.len(), 2);
        assert!(cache.slots.contains_key("b") && cache.slots.contains_key("c"));
        let b = cache.get("b"); // b is now the most recent
        cache.set_size("b", &b, 40);
        let d = cache.get("d");
        cache.set_size("d", &d, 40);
        assert!(cache.slots.contains_key("b") && cache.slots.contains_key("d"));
        assert!(!cache.slots.contains_key("c"));
        assert_eq!(cache.bytes, 80);
    }

    #[test]
    fn a_document_larger_than_the_budget_stays_while_in_use() {
        let mut cache = Cache::new(10);
        let a = cache.get("a");
        cache.set_size("a", &a, 50);
        assert_eq!(cache.len(), 1);
        let b = cache.get("b");
        cache.set_size("b", &b, 50);
        assert_eq!(cache.len(), 1);
        assert!(cache.slots.contains_key("b"));
    }
}
