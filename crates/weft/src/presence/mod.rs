//! Presence: [`EphemeralStore`], per-key state that peers share while they
//! are online (a user's name and colour, their encoded cursors) and that is
//! never part of a document's history.
//!
//! Each key holds a [`Value`] or a deletion, stamped with the writer's
//! wall-clock time in ms and a per-key clock that orders writes made in
//! the same ms. The later stamp wins (last writer wins, ties broken by the
//! value's bytes), so every store that has received the same messages,
//! in any order and any number of times, holds the same state. Entries
//! expire `timeout` ms after they were written (or received, if the
//! writer's clock is ahead) when [`EphemeralStore::remove_outdated`] runs.
//!
//! The wire format is in `wire.rs`; the events and subscriptions in
//! `event.rs`.

mod event;
mod wire;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use crate::error::Result;
use crate::value::Value;

pub use event::{EphemeralEventTrigger, EphemeralStoreEvent};

use crate::event::Subscription;

use event::{lock, Subscribers};
use wire::{Record, RecordRef};

/// A key's state: its value (or deletion) and its stamp.
#[derive(Debug, Clone)]
struct Entry {
    /// `None`: deleted. The deletion is kept (and sent) until it expires,
    /// so that it reaches the other stores.
    value: Option<Value>,
    /// The writer's time of the write, in ms since the Unix epoch.
    timestamp: u64,
    /// Orders writes of one key made in the same ms (1, 2, ...).
    clock: u64,
    /// When the entry's age counts from here: `timestamp`, or the time it
    /// was received if that is earlier (a writer's clock ahead of ours).
    seen_at: u64,
}

impl Entry {
    fn as_record<'a>(&'a self, key: &'a str) -> RecordRef<'a> {
        RecordRef {
            key,
            value: self.value.as_ref(),
            clock: self.clock,
            timestamp: self.timestamp,
        }
    }
}

/// The bytes that break a tie between two writes with the same stamp.
fn tie_break(value: Option<&Value>) -> Vec<u8> {
    let mut out = Vec::new();
    if let Some(v) = value {
        out.push(1);
        crate::encoding::value_bytes::write_value(&mut out, v);
    }
    out
}

/// Whether `record` is a later write than `entry` (last writer wins).
fn is_later(record: &Record, entry: &Entry) -> bool {
    (record.timestamp, record.clock)
        .cmp(&(entry.timestamp, entry.clock))
        .then_with(|| tie_break(record.value.as_ref()).cmp(&tie_break(entry.value.as_ref())))
        .is_gt()
}

/// Adds `key` to the list of `event` that going from `old` to `new` makes
/// it belong to, if any.
fn classify(event: &mut EphemeralStoreEvent, key: &str, old: Option<&Value>, new: Option<&Value>) {
    let list = match (old, new) {
        (None, Some(_)) => &mut event.added,
        (Some(a), Some(b)) if a != b => &mut event.updated,
        (Some(_), None) => &mut event.removed,
        _ => return,
    };
    list.push(key.to_owned());
}

/// Ephemeral per-key state shared between peers: who is online, their
/// names, their cursors. It is not part of any document's history: peers
/// exchange it as bytes ([`EphemeralStore::encode_all`] /
/// [`EphemeralStore::apply`]) next to their document updates, and an
/// entry expires when its writer stops refreshing it (by setting it
/// again) for longer than the timeout.
///
/// Each key's latest write wins, by the writer's timestamp and a per-key
/// clock, so stale, duplicated and reordered messages never override newer
/// state, and stores that received the same messages agree. Messages are
/// checksummed; bad bytes return an error and change nothing.
///
/// Methods take `&self`; the store is `Send + Sync`, so one store can be
/// shared (e.g. in an `Arc`) by the thread that talks to the network and
/// the one that draws the editor. Subscribers are called on the thread
/// that made the change, after the change, with no lock held.
///
/// Every method is O(log k) for k keys or O(size of its input/output),
/// except [`EphemeralStore::remove_outdated`], which is O(k).
///
/// # Examples
///
/// Alice shares her name and caret; Bob's store shows them and resolves
/// the caret in his copy of the document.
///
/// ```
/// use std::collections::BTreeMap;
/// use weft::{Cursor, Doc, EphemeralStore, ExportMode, Side, Value, VersionVector};
///
/// let mut alice_doc = Doc::new();
/// alice_doc.text("body").insert(0, "Hello world")?;
/// let mut bob_doc = Doc::new();
/// bob_doc.import(&alice_doc.export(ExportMode::Updates { from: &VersionVector::new() })?)?;
///
/// // Alice's presence: her name and her caret (before "world"), the caret
/// // as the hex of its bytes.
/// let caret = alice_doc.text("body").cursor(6, Side::After)?;
/// let hex: String = caret.encode().iter().map(|b| format!("{b:02x}")).collect();
/// let alice = EphemeralStore::new(30_000);
/// let mut state = BTreeMap::new();
/// state.insert("name".to_owned(), Value::from("Alice"));
/// state.insert("caret".to_owned(), Value::from(hex));
/// alice.set("user/alice", Value::Map(state));
///
/// // The bytes travel; Bob applies them.
/// let bob = EphemeralStore::new(30_000);
/// bob.apply(&alice.encode_all())?;
/// let Some(Value::Map(state)) = bob.get("user/alice") else { panic!() };
/// assert_eq!(state["name"], Value::from("Alice"));
/// let Value::String(hex) = &state["caret"] else { panic!() };
/// let bytes: Vec<u8> = (0..hex.len())
///     .step_by(2)
///     .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
///     .collect();
/// assert_eq!(bob_doc.cursor_pos(&Cursor::decode(&bytes)?)?, 6);
///
/// // Applying the same bytes again, or older ones, changes nothing.
/// alice.delete("user/alice");
/// bob.apply(&alice.encode("user/alice"))?;
/// assert_eq!(bob.get("user/alice"), None);
/// # Ok::<(), weft::Error>(())
/// ```
pub struct EphemeralStore {
    timeout_ms: u64,
    /// The current time in ms since the Unix epoch.
    clock: Box<dyn Fn() -> u64 + Send + Sync>,
    entries: Mutex<BTreeMap<String, Entry>>,
    subscribers: Arc<Mutex<Subscribers>>,
}

impl EphemeralStore {
    /// An empty store whose entries expire `timeout_ms` ms after they were
    /// last written (30 000 is a common choice), timed by the system
    /// clock.
    pub fn new(timeout_ms: u64) -> Self {
        Self::with_clock(timeout_ms, crate::platform::now_ms)
    }

    /// An empty store timed by `clock`, which returns the current time in
    /// ms since the Unix epoch: for tests, or an application's own clock.
    /// Peers should use clocks that roughly agree; a message stamped more
    /// than the timeout away from this clock, either way, is ignored.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use std::sync::Arc;
    /// use weft::EphemeralStore;
    ///
    /// let now = Arc::new(AtomicU64::new(1_000));
    /// let clock = Arc::clone(&now);
    /// let store = EphemeralStore::with_clock(100, move || clock.load(Ordering::Relaxed));
    /// store.set("k", 1);
    /// now.store(1_100, Ordering::Relaxed);
    /// store.remove_outdated(); // 100 ms old: not older than the timeout
    /// assert!(store.get("k").is_some());
    /// now.store(1_101, Ordering::Relaxed);
    /// store.remove_outdated();
    /// assert_eq!(store.get("k"), None);
    /// ```
    pub fn with_clock(timeout_ms: u64, clock: impl Fn() -> u64 + Send + Sync + 'static) -> Self {
        EphemeralStore {
            timeout_ms,
            clock: Box::new(clock),
            entries: Mutex::new(BTreeMap::new()),
            subscribers: Arc::new(Mutex::new(Subscribers::default())),
        }
    }

    /// How long, in ms, an entry lives after its last write.
    pub fn timeout_ms(&self) -> u64 {
        self.timeout_ms
    }

    /// Sets `key` to `value`, stamped now. Setting the value a key already
    /// has refreshes it (it expires later, and peers get the refresh)
    /// without a change event.
    pub fn set(&self, key: &str, value: impl Into<Value>) {
        self.write_local(key, Some(value.into()));
    }

    /// Deletes `key`: it has no value here, and the deletion reaches peers
    /// through the next encode. Deleting a key that has no value does
    /// nothing.
    pub fn delete(&self, key: &str) {
        self.write_local(key, None);
    }

    /// The value of `key`, if it has one.
    pub fn get(&self, key: &str) -> Option<Value> {
        lock(&self.entries).get(key)?.value.clone()
    }

    /// The keys that have a value, sorted.
    pub fn keys(&self) -> Vec<String> {
        lock(&self.entries)
            .iter()
            .filter(|(_, e)| e.value.is_some())
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Every key that has a value, with its value.
    pub fn get_all_states(&self) -> BTreeMap<String, Value> {
        lock(&self.entries)
            .iter()
            .filter_map(|(k, e)| Some((k.clone(), e.value.clone()?)))
            .collect()
    }

    /// The state of `key` as bytes for [`EphemeralStore::apply`]: its
    /// value or its deletion with their stamp (a message with no keys if
    /// this store knows nothing of `key`).
    pub fn encode(&self, key: &str) -> Vec<u8> {
        let entries = lock(&self.entries);
        match entries.get_key_value(key) {
            Some((k, e)) => wire::encode(1, std::iter::once(e.as_record(k))),
            None => wire::encode(0, std::iter::empty()),
        }
    }

    /// The state of every key as bytes for [`EphemeralStore::apply`],
    /// deletions that have not expired included: what a peer that just
    /// joined needs.
    pub fn encode_all(&self) -> Vec<u8> {
        let entries = lock(&self.entries);
        wire::encode(entries.len(), entries.iter().map(|(k, e)| e.as_record(k)))
    }

    /// Merges state from another store's [`EphemeralStore::encode`] or
    /// [`EphemeralStore::encode_all`]: each key takes the later of its
    /// write here and the one in `bytes`. Records stamped more than the
    /// timeout away from this store's clock are ignored. Subscribers get
    /// one [`EphemeralEventTrigger::Import`] event listing the keys whose
    /// value changed.
    ///
    /// Runs in O(n log k) for n records and k keys, plus the size of the
    /// values.
    ///
    /// # Errors
    ///
    /// [`crate::Error::BadMagic`] for bytes that are not presence state,
    /// [`crate::Error::UnsupportedVersion`],
    /// [`crate::Error::UnexpectedEof`] when truncated,
    /// [`crate::Error::ChecksumMismatch`] when damaged, and
    /// [`crate::Error::Malformed`] for inconsistent contents. On error
    /// nothing changes.
    pub fn apply(&self, bytes: &[u8]) -> Result<()> {
        let records = wire::decode(bytes)?;
        let now = (self.clock)();
        let mut event = EphemeralStoreEvent::new(EphemeralEventTrigger::Import);
        {
            let mut entries = lock(&self.entries);
            for record in records {
                let skew = now.abs_diff(record.timestamp);
                if skew > self.timeout_ms {
                    continue;
                }
                let old = entries.get(&record.key);
                if old.is_some_and(|e| !is_later(&record, e)) {
                    continue;
                }
                classify(
                    &mut event,
                    &record.key,
                    old.and_then(|e| e.value.as_ref()),
                    record.value.as_ref(),
                );
                let entry = Entry {
                    seen_at: record.timestamp.min(now),
                    value: record.value,
                    timestamp: record.timestamp,
                    clock: record.clock,
                };
                entries.insert(record.key, entry);
            }
        }
        Subscribers::emit_event(&self.subscribers, &event);
        Ok(())
    }

    /// Drops every entry (values and deletions) last written more than
    /// the timeout ago. Subscribers get one
    /// [`EphemeralEventTrigger::Timeout`] event listing the keys that lost
    /// their value. Call it periodically, e.g. every second.
    ///
    /// Runs in O(k) for k keys.
    pub fn remove_outdated(&self) {
        let now = (self.clock)();
        let mut event = EphemeralStoreEvent::new(EphemeralEventTrigger::Timeout);
        lock(&self.entries).retain(|key, e| {
            let outdated = now.saturating_sub(e.seen_at) > self.timeout_ms;
            if outdated && e.value.is_some() {
                event.removed.push(key.clone());
            }
            !outdated
        });
        Subscribers::emit_event(&self.subscribers, &event);
    }

    /// Calls `callback` after every change of a value: local, imported or
    /// expired (see [`EphemeralStoreEvent`]), until the returned
    /// [`Subscription`] is dropped.
    pub fn subscribe(
        &self,
        callback: impl Fn(&EphemeralStoreEvent) + Send + Sync + 'static,
    ) -> Subscription {
        Subscribers::add_event(&self.subscribers, Arc::new(callback))
    }

    /// Calls `callback` with the encoded state of the key after every local
    /// [`EphemeralStore::set`] (refreshes included) and
    /// [`EphemeralStore::delete`]: the bytes to broadcast to peers, for
    /// their [`EphemeralStore::apply`]. Stops when the returned
    /// [`Subscription`] is dropped.
    pub fn subscribe_local_updates(
        &self,
        callback: impl Fn(&[u8]) + Send + Sync + 'static,
    ) -> Subscription {
        Subscribers::add_update(&self.subscribers, Arc::new(callback))
    }

    /// Writes `value` (`None`: a deletion) to `key` with a stamp later
    /// than its current one, and tells the subscribers.
    fn write_local(&self, key: &str, value: Option<Value>) {
        let now = (self.clock)();
        let wants_update = Subscribers::wants_updates(&self.subscribers);
        let mut event = EphemeralStoreEvent::new(EphemeralEventTrigger::Local);
        let update = {
            let mut entries = lock(&self.entries);
            let old = entries.get(key);
            if value.is_none() && old.is_none_or(|e| e.value.is_none()) {
                return;
            }
            classify(
                &mut event,
                key,
                old.and_then(|e| e.value.as_ref()),
                value.as_ref(),
            );
            // Later than the current write, even if that one is stamped
            // ahead of our clock.
            let (timestamp, clock) = match old {
                Some(e) if e.timestamp >= now => match e.clock.checked_add(1) {
                    Some(clock) => (e.timestamp, clock),
                    None => (e.timestamp.saturating_add(1), 1),
                },
                _ => (now, 1),
            };
            let entry = Entry {
                value,
                timestamp,
                clock,
                seen_at: now,
            };
            let update =
                wants_update.then(|| wire::encode(1, std::iter::once(entry.as_record(key))));
            entries.insert(key.to_owned(), entry);
            update
        };
        if let Some(bytes) = update {
            Subscribers::emit_update(&self.subscribers, &bytes);
        }
        Subscribers::emit_event(&self.subscribers, &event);
    }
}

impl fmt::Debug for EphemeralStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EphemeralStore")
            .field("timeout_ms", &self.timeout_ms)
            .field("states", &self.get_all_states())
            .finish_non_exhaustive()
    }
}
