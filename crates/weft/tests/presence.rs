//! Presence: EphemeralStore keeps the latest write per key through stale,
//! duplicated and reordered messages, expires entries on an injected
//! clock, tells subscribers what changed, and refuses bad bytes without
//! changing anything.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use weft::{
    Cursor, Doc, EphemeralEventTrigger, EphemeralStore, EphemeralStoreEvent, Error, Side,
    Subscription, Value,
};
use weft_testkit::Rng;
use xxhash_rust::xxh3::xxh3_64;

/// A clock the test moves by hand, in ms since the epoch.
#[derive(Clone)]
struct Clock(Arc<AtomicU64>);

impl Clock {
    fn new(now: u64) -> Self {
        Clock(Arc::new(AtomicU64::new(now)))
    }

    fn set(&self, now: u64) {
        self.0.store(now, Ordering::Relaxed);
    }

    fn advance(&self, ms: u64) {
        self.0.fetch_add(ms, Ordering::Relaxed);
    }

    fn store(&self, timeout_ms: u64) -> EphemeralStore {
        let now = Arc::clone(&self.0);
        EphemeralStore::with_clock(timeout_ms, move || now.load(Ordering::Relaxed))
    }
}

/// Records every event of `store`.
fn record(store: &EphemeralStore) -> (Subscription, Arc<Mutex<Vec<EphemeralStoreEvent>>>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    let sub = store.subscribe(move |e| sink.lock().unwrap().push(e.clone()));
    (sub, events)
}

/// Takes the events recorded so far.
fn take(events: &Mutex<Vec<EphemeralStoreEvent>>) -> Vec<EphemeralStoreEvent> {
    std::mem::take(&mut *events.lock().unwrap())
}

fn event(
    by: EphemeralEventTrigger,
    added: &[&str],
    updated: &[&str],
    removed: &[&str],
) -> EphemeralStoreEvent {
    let own = |keys: &[&str]| keys.iter().map(|k| k.to_string()).collect();
    EphemeralStoreEvent {
        by,
        added: own(added),
        updated: own(updated),
        removed: own(removed),
    }
}

#[test]
fn set_get_delete_and_list_keys() {
    let clock = Clock::new(1_000);
    let s = clock.store(30_000);
    assert_eq!(s.get("a"), None);
    assert!(s.keys().is_empty());
    s.set("b", "Bob");
    s.set("a", 1);
    s.set("a", 2);
    assert_eq!(s.get("a"), Some(Value::I64(2)));
    assert_eq!(s.keys(), ["a", "b"]);
    s.delete("a");
    s.delete("never set");
    assert_eq!(s.get("a"), None);
    assert_eq!(s.keys(), ["b"]);
    let mut all = BTreeMap::new();
    all.insert("b".to_owned(), Value::from("Bob"));
    assert_eq!(s.get_all_states(), all);
    // Null is a value, not a deletion.
    s.set("n", Value::Null);
    assert_eq!(s.get("n"), Some(Value::Null));
    assert_eq!(s.timeout_ms(), 30_000);
}

#[test]
fn two_stores_sync_both_ways() {
    let clock = Clock::new(1_000);
    let a = clock.store(30_000);
    let b = clock.store(30_000);
    a.set("user/a", "Alice");
    b.set("user/b", "Bob");
    b.apply(&a.encode_all()).unwrap();
    a.apply(&b.encode_all()).unwrap();
    assert_eq!(a.get_all_states(), b.get_all_states());
    assert_eq!(a.keys(), ["user/a", "user/b"]);

    // A deletion travels too, as does a single key.
    clock.advance(5);
    a.delete("user/a");
    a.set("user/a2", true);
    b.apply(&a.encode("user/a")).unwrap();
    assert_eq!(b.keys(), ["user/b"]);
    b.apply(&a.encode("user/a2")).unwrap();
    assert_eq!(b.get("user/a2"), Some(Value::Bool(true)));
    // A key the store never saw encodes as an empty message.
    b.apply(&a.encode("unknown")).unwrap();
    assert_eq!(b.keys(), ["user/a2", "user/b"]);
}

#[test]
fn a_stale_message_does_not_override_newer_state() {
    let clock = Clock::new(1_000);
    let a = clock.store(30_000);
    let b = clock.store(30_000);
    a.set("k", 1);
    let old = a.encode("k");
    clock.advance(10);
    a.set("k", 2);
    let new = a.encode("k");
    let (_sub, events) = record(&b);
    b.apply(&new).unwrap();
    b.apply(&old).unwrap();
    assert_eq!(b.get("k"), Some(Value::I64(2)));
    assert_eq!(
        take(&events),
        [event(EphemeralEventTrigger::Import, &["k"], &[], &[])]
    );
    // An old value does not come back after a deletion either.
    clock.advance(10);
    a.delete("k");
    b.apply(&a.encode("k")).unwrap();
    b.apply(&new).unwrap();
    b.apply(&old).unwrap();
    assert_eq!(b.get("k"), None);
}

#[test]
fn writes_in_the_same_ms_are_ordered_by_the_key_clock() {
    let clock = Clock::new(1_000);
    let a = clock.store(30_000);
    let b = clock.store(30_000);
    let mut messages = Vec::new();
    for v in 0..5 {
        a.set("k", v);
        messages.push(a.encode("k"));
    }
    for m in messages.iter().rev() {
        b.apply(m).unwrap();
    }
    assert_eq!(b.get("k"), Some(Value::I64(4)));
}

#[test]
fn a_restarted_writer_wins_with_its_later_timestamp() {
    let clock = Clock::new(1_000);
    let a = clock.store(30_000);
    let b = clock.store(30_000);
    for v in 0..10 {
        a.set("user/a", v);
    }
    b.apply(&a.encode_all()).unwrap();
    // A reloads: a new store whose key clock starts again at 1.
    clock.advance(1);
    let a2 = clock.store(30_000);
    a2.set("user/a", "back");
    b.apply(&a2.encode_all()).unwrap();
    assert_eq!(b.get("user/a"), Some(Value::from("back")));
}

#[test]
fn duplicated_and_reordered_messages_converge() {
    let mut rng = Rng::new(21);
    for _ in 0..50 {
        let clock = Clock::new(1_000_000);
        let writers = [clock.store(60_000), clock.store(60_000)];
        let mut messages = Vec::new();
        for _ in 0..40 {
            if rng.chance(30) {
                clock.advance(rng.below(3) as u64);
            }
            let w = &writers[rng.below(2)];
            let key = ["x", "y", "z"][rng.below(3)];
            if rng.chance(20) {
                w.delete(key);
            } else {
                w.set(key, rng.below(4) as i64);
            }
            messages.push(if rng.chance(20) {
                w.encode_all()
            } else {
                w.encode(key)
            });
        }
        // Every writer's final state, and each receiver gets every message
        // in a random order, some twice.
        let mut receivers: Vec<EphemeralStore> = (0..3).map(|_| clock.store(60_000)).collect();
        for w in &writers {
            messages.push(w.encode_all());
        }
        for r in &mut receivers {
            let mut order: Vec<usize> = (0..messages.len()).collect();
            order.extend((0..10).map(|_| rng.below(messages.len())));
            for i in (1..order.len()).rev() {
                order.swap(i, rng.below(i + 1));
            }
            for i in order {
                r.apply(&messages[i]).unwrap();
            }
        }
        for w in &writers {
            for other in &writers {
                w.apply(&other.encode_all()).unwrap();
            }
        }
        let states = writers[0].get_all_states();
        assert_eq!(writers[1].get_all_states(), states);
        for r in &receivers {
            assert_eq!(r.get_all_states(), states);
        }
    }
}

#[test]
fn entries_expire_on_the_injected_clock() {
    let clock = Clock::new(10_000);
    let a = clock.store(100);
    let b = clock.store(100);
    a.set("k", 1);
    a.set("gone", 1);
    a.delete("gone");
    b.apply(&a.encode_all()).unwrap();
    let (_sub, events) = record(&b);

    clock.set(10_100);
    b.remove_outdated();
    assert_eq!(b.get("k"), Some(Value::I64(1)));
    assert!(take(&events).is_empty());
    clock.set(10_101);
    b.remove_outdated();
    assert_eq!(b.get("k"), None);
    // The deletion of "gone" expired silently: it had no value.
    assert_eq!(
        take(&events),
        [event(EphemeralEventTrigger::Timeout, &[], &[], &["k"])]
    );
    // Refreshing keeps a key alive.
    a.set("k", 1);
    clock.advance(90);
    a.set("k", 1);
    clock.advance(90);
    a.remove_outdated();
    assert_eq!(a.get("k"), Some(Value::I64(1)));
}

#[test]
fn messages_stamped_beyond_the_timeout_are_ignored() {
    let writer_clock = Clock::new(10_000);
    let a = writer_clock.store(100);
    a.set("k", 1);
    let bytes = a.encode_all();
    let reader_clock = Clock::new(10_101);
    let b = reader_clock.store(100);
    b.apply(&bytes).unwrap();
    assert_eq!(b.get("k"), None, "101 ms old");
    reader_clock.set(9_899);
    b.apply(&bytes).unwrap();
    assert_eq!(b.get("k"), None, "101 ms in the future");
    reader_clock.set(9_900);
    b.apply(&bytes).unwrap();
    assert_eq!(b.get("k"), Some(Value::I64(1)));
    // Stamped ahead of the reader: its age counts from its arrival.
    reader_clock.set(10_000);
    b.remove_outdated();
    assert_eq!(b.get("k"), Some(Value::I64(1)));
    reader_clock.set(10_001);
    b.remove_outdated();
    assert_eq!(b.get("k"), None);
}

#[test]
fn callbacks_get_the_changed_keys_until_unsubscribed() {
    let clock = Clock::new(1_000);
    let s = clock.store(30_000);
    let (sub, events) = record(&s);
    s.set("a", 1);
    s.set("a", 2);
    s.set("a", 2); // same value: a refresh, no event
    s.delete("a");
    s.delete("a");
    use EphemeralEventTrigger::*;
    assert_eq!(
        take(&events),
        [
            event(Local, &["a"], &[], &[]),
            event(Local, &[], &["a"], &[]),
            event(Local, &[], &[], &["a"]),
        ]
    );

    let other = clock.store(30_000);
    clock.advance(1);
    other.set("a", 1);
    other.set("b", 1);
    other.set("c", 1);
    s.set("b", 0);
    s.set("c", 1);
    take(&events);
    s.apply(&other.encode_all()).unwrap();
    assert_eq!(take(&events), [event(Import, &["a"], &["b"], &[])]);
    clock.advance(1);
    other.delete("b");
    s.apply(&other.encode_all()).unwrap();
    assert_eq!(take(&events), [event(Import, &[], &[], &["b"])]);

    drop(sub);
    s.set("z", 1);
    s.apply(&other.encode_all()).unwrap();
    clock.advance(60_000);
    s.remove_outdated();
    assert!(take(&events).is_empty());
}

#[test]
fn a_detached_subscription_keeps_its_callback() {
    let s = EphemeralStore::new(30_000);
    let (sub, events) = record(&s);
    sub.detach();
    s.set("k", 1);
    assert_eq!(take(&events).len(), 1);
}

#[test]
fn callbacks_may_use_the_store() {
    let s = Arc::new(EphemeralStore::new(30_000));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (store, sink) = (Arc::downgrade(&s), Arc::clone(&seen));
    let sub = s.subscribe(move |e| {
        if let Some(store) = store.upgrade() {
            sink.lock().unwrap().push(store.keys());
            if e.added.iter().any(|k| k == "ping") {
                store.set("pong", true);
            }
        }
    });
    s.set("ping", true);
    assert_eq!(s.get("pong"), Some(Value::Bool(true)));
    assert_eq!(*seen.lock().unwrap(), [vec!["ping"], vec!["ping", "pong"]]);
    drop(sub);
}

#[test]
fn local_update_bytes_keep_a_peer_in_sync() {
    let clock = Clock::new(1_000);
    let a = clock.store(30_000);
    let b = Arc::new(clock.store(30_000));
    let peer = Arc::clone(&b);
    let sent = Arc::new(AtomicU64::new(0));
    let count = Arc::clone(&sent);
    let sub = a.subscribe_local_updates(move |bytes| {
        count.fetch_add(1, Ordering::Relaxed);
        peer.apply(bytes).unwrap();
    });
    a.set("x", 1);
    a.set("x", 1); // a refresh is sent too
    a.set("y", "hi");
    a.delete("x");
    a.delete("x"); // nothing to delete: nothing sent
    assert_eq!(sent.load(Ordering::Relaxed), 4);
    assert_eq!(b.get_all_states(), a.get_all_states());
    drop(sub);
    a.set("z", 1);
    assert_eq!(b.get("z"), None);
}

#[test]
fn a_cursor_travels_in_presence_state() {
    let mut doc = Doc::new();
    doc.set_peer_id(0x1234_5678_9abc_def0).unwrap();
    doc.text("body").insert(0, "Hello world").unwrap();
    let caret = doc.text("body").cursor(6, Side::After).unwrap();
    let clock = Clock::new(1_700_000_000_000);
    let a = clock.store(30_000);
    let mut state = BTreeMap::new();
    state.insert("name".to_owned(), Value::from("Alice"));
    let bytes: Vec<Value> = caret
        .encode()
        .into_iter()
        .map(|b| Value::I64(b.into()))
        .collect();
    state.insert("caret".to_owned(), Value::List(bytes));
    a.set("user/alice", Value::Map(state));
    // The caret is 22 bytes, 2 or 3 each in a list of byte values; the
    // name, key, stamp and frame take the rest.
    assert_eq!(caret.encode().len(), 22);
    let wire = a.encode_all();
    assert_eq!(wire.len(), 108);

    let b = clock.store(30_000);
    b.apply(&wire).unwrap();
    let Some(Value::Map(state)) = b.get("user/alice") else {
        panic!("no state");
    };
    let Some(Value::List(bytes)) = state.get("caret") else {
        panic!("no caret");
    };
    let bytes: Vec<u8> = bytes
        .iter()
        .map(|v| match v {
            Value::I64(b) => *b as u8,
            _ => panic!("not a byte"),
        })
        .collect();
    assert_eq!(doc.cursor_pos(&Cursor::decode(&bytes).unwrap()), Ok(6));
}

/// A store with some state, and a message for it that changes it.
fn store_and_message(clock: &Clock) -> (EphemeralStore, Vec<u8>) {
    let s = clock.store(30_000);
    s.set("a", "old");
    s.set("b", 1);
    let other = clock.store(30_000);
    clock.advance(1);
    let mut map = BTreeMap::new();
    map.insert(
        "x".to_owned(),
        Value::List(vec![Value::F64(1.5), Value::Null]),
    );
    other.set("a", "new");
    other.set("c", Value::Map(map));
    other.delete("c");
    other.set("d", "é😀");
    (s, other.encode_all())
}

/// Applies `bytes`, which must fail, and checks that nothing changed.
fn assert_refused(s: &EphemeralStore, events: &Mutex<Vec<EphemeralStoreEvent>>, bytes: &[u8]) {
    let before = s.encode_all();
    assert!(s.apply(bytes).is_err());
    assert_eq!(s.encode_all(), before);
    assert!(take(events).is_empty());
}

#[test]
fn damaged_messages_are_errors_and_change_nothing() {
    let clock = Clock::new(1_000);
    let (s, bytes) = store_and_message(&clock);
    let (_sub, events) = record(&s);
    for len in 0..bytes.len() {
        assert_refused(&s, &events, &bytes[..len]);
    }
    for i in 0..bytes.len() {
        for bit in 0..8 {
            let mut bad = bytes.clone();
            bad[i] ^= 1 << bit;
            assert_refused(&s, &events, &bad);
        }
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert_refused(&s, &events, &longer);
    assert_eq!(s.apply(&[]), Err(Error::EmptyInput));
    assert_eq!(
        s.apply(&weft::VersionVector::new().encode()),
        Err(Error::BadMagic)
    );

    // Fails at its last record, with a valid checksum: the records before
    // it are not applied either.
    let mut one_more = bytes[..bytes.len() - 4].to_vec();
    assert_eq!(one_more[2], 3, "the record count");
    one_more[2] = 4;
    let sum = xxh3_64(&one_more) as u32;
    one_more.extend_from_slice(&sum.to_le_bytes());
    assert_refused(&s, &events, &one_more);

    s.apply(&bytes).unwrap();
    assert_eq!(s.get("a"), Some(Value::from("new")));
    assert_eq!(s.keys(), ["a", "b", "d"]);
}

#[test]
fn random_bytes_never_panic() {
    let clock = Clock::new(1_000);
    let (s, message) = store_and_message(&clock);
    let (_sub, events) = record(&s);
    let mut rng = Rng::new(22);
    for round in 0..20_000 {
        take(&events);
        let mut bytes: Vec<u8> = if round % 2 == 0 {
            (0..rng.below(64)).map(|_| rng.below(256) as u8).collect()
        } else {
            // The real message with a few bytes changed.
            let mut m = message.clone();
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(m.len());
                m[i] = rng.below(256) as u8;
            }
            m
        };
        if let Some(first) = bytes.first_mut() {
            if rng.chance(70) {
                *first = 0xC8;
            }
        }
        // Mostly with a valid checksum, so the body's checks run.
        if bytes.len() >= 6 && rng.chance(80) {
            let body_len = bytes.len() - 4;
            let sum = xxh3_64(&bytes[..body_len]) as u32;
            bytes[body_len..].copy_from_slice(&sum.to_le_bytes());
        }
        let before = s.encode_all();
        if s.apply(&bytes).is_err() {
            assert_eq!(s.encode_all(), before);
            assert!(take(&events).is_empty());
        }
    }
}

#[test]
fn a_store_is_shared_between_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<EphemeralStore>();
    send_sync::<Subscription>();

    let s = Arc::new(EphemeralStore::new(30_000));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let s = Arc::clone(&s);
            std::thread::spawn(move || {
                for i in 0..100 {
                    s.set(&format!("user/{t}"), i);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(s.keys().len(), 4);
    assert_eq!(s.get("user/3"), Some(Value::I64(99)));
}
