//! [`run_converge`]: the random multi-peer driver. Peers edit, mark,
//! write maps, embeds and blocks, and sync through updates and snapshots,
//! sent directly or through a network that reorders, delays, duplicates
//! and re-sends; at the end they must all agree.

use std::sync::{Arc, Mutex};

use weft::{Delta, Doc, ExportMode, Frontiers, Unit, VersionVector};

use crate::action::{config, edit, map_entries, new_doc, Action, Payload};
use crate::full;
use crate::import::observe;

/// `doc`'s snapshot imported into a fresh document with the same peer id
/// and config, checked to read like `doc` before anything loads and to
/// re-export byte for byte.
fn snapshot_round_trip(doc: &mut Doc) -> Doc {
    let bytes = doc
        .export(ExportMode::Snapshot)
        .expect("exports do not fail");
    let mut fresh = new_doc(doc.peer_id());
    fresh.import(&bytes).expect("a document's snapshot imports");
    assert_eq!(fresh.version(), doc.version(), "lazy version");
    assert_eq!(fresh.frontiers(), doc.frontiers(), "lazy frontiers");
    for name in doc.text_names().map(str::to_owned).collect::<Vec<_>>() {
        assert_eq!(
            fresh.text_len(&name, Unit::Utf16),
            doc.text_len(&name, Unit::Utf16)
        );
        // Through `&Doc` first: a text with marks is loaded on the side,
        // and the handles below take that copy over.
        let view = fresh.get_text(&name).expect("the snapshot names the text");
        assert_eq!(view.to_string(), doc.text(&name).to_string(), "lazy view");
        assert_eq!(
            view.to_delta(),
            doc.text(&name).to_delta(),
            "lazy view delta"
        );
        assert_eq!(
            fresh.text(&name).to_string(),
            doc.text(&name).to_string(),
            "lazy text"
        );
        assert_eq!(
            fresh.text(&name).to_delta(),
            doc.text(&name).to_delta(),
            "lazy delta"
        );
    }
    let loaded = fresh.clone();
    let again = loaded
        .export(ExportMode::Snapshot)
        .expect("exports do not fail");
    assert!(
        again == bytes,
        "export -> import -> export is not byte-identical"
    );
    loaded.assert_invariants();
    fresh
}

fn sync(docs: &mut [Doc], from: usize, to: usize) {
    if from == to {
        return;
    }
    let v = docs[to].version();
    let bytes = docs[from]
        .export(ExportMode::Updates { from: &v })
        .expect("exports do not fail");
    docs[to].import(&bytes).expect("a peer's update imports");
    docs[to].assert_exports_reopen();
}

/// Messages in flight, and the versions each peer had when messages were
/// sent to it (for stale exports).
#[derive(Default)]
struct Network {
    /// (receiver, bytes) waiting to be delivered.
    waiting: Vec<(usize, Vec<u8>)>,
    /// Per peer, versions it had earlier (the latest few).
    past: Vec<Vec<VersionVector>>,
}

/// Most messages in flight and past versions kept per peer.
const NETWORK_CAP: usize = 64;
const PAST_CAP: usize = 8;

impl Network {
    fn send(&mut self, docs: &mut [Doc], from: usize, to: usize, payload: Payload) {
        let version = docs[to].version();
        if self.past.len() <= to {
            self.past.resize_with(to + 1, Vec::new);
        }
        let from_version = match payload {
            Payload::Delta => Some(version.clone()),
            Payload::Whole => Some(VersionVector::new()),
            Payload::Stale(k) => {
                let past = &self.past[to];
                Some(if past.is_empty() {
                    VersionVector::new()
                } else {
                    past[k as usize % past.len()].clone()
                })
            }
            Payload::Future(k) => {
                let mut v = version.clone();
                let peers: Vec<_> = v.iter().map(|(p, _)| p).collect();
                if !peers.is_empty() {
                    let p = peers[k as usize % peers.len()];
                    v.set(p, v.get(p) + 1 + u32::from(k % 4));
                }
                Some(v)
            }
            Payload::UnknownPeer => {
                let mut v = version.clone();
                v.set(999_999, 7);
                Some(v)
            }
            Payload::Snapshot => None,
        };
        let bytes = match &from_version {
            Some(v) => docs[from].export(ExportMode::Updates { from: v }),
            None => docs[from].export(ExportMode::Snapshot),
        }
        .expect("exports do not fail");
        let past = &mut self.past[to];
        if past.len() == PAST_CAP {
            past.remove(0);
        }
        past.push(version);
        if self.waiting.len() == NETWORK_CAP {
            let (to, bytes) = self.waiting.remove(0);
            deliver(docs, to, &bytes);
        }
        self.waiting.push((to, bytes));
    }
}

/// Imports a message; every export of a peer must import.
fn deliver(docs: &mut [Doc], to: usize, bytes: &[u8]) {
    if let Some(doc) = docs.get_mut(to) {
        if let Err(e) = doc.import(bytes) {
            panic!("a peer's export does not import: {e:?}");
        }
        doc.assert_exports_reopen();
    }
}

/// Peer `to` imports an export of `from` (a snapshot or an update) cut at
/// `cut` with its checksum recomputed: the import must fail and change
/// nothing.
fn corrupt(docs: &mut [Doc], from: usize, to: usize, cut: u16, snapshot: bool) {
    let version = docs[to].version();
    let mut bytes = if snapshot {
        docs[from].export(ExportMode::Snapshot)
    } else {
        docs[from].export(ExportMode::Updates { from: &version })
    }
    .expect("exports do not fail");
    let body = bytes.len() - 16;
    if body > 0 {
        bytes.truncate(16 + cut as usize % body);
        let sum = xxhash_rust::xxh3::xxh3_64(&bytes[16..]);
        bytes[8..16].copy_from_slice(&sum.to_le_bytes());
        let before = observe(&docs[to]);
        assert!(docs[to].import(&bytes).is_err(), "a cut export imported");
        assert_eq!(
            observe(&docs[to]),
            before,
            "a failed import changed the doc"
        );
        docs[to].assert_exports_reopen();
    }
}

/// `peers` (2..=5) documents run `actions` and sync through updates and
/// snapshots, sent directly or through a network that reorders, delays,
/// duplicates and re-sends (whole histories, stale and future versions),
/// and through damaged bytes that must be refused without a trace. At the
/// end all must hold identical text, deltas, versions, frontiers and
/// history (every op's id, Lamport timestamp and deps), with their
/// internal invariants intact.
///
/// # Panics
///
/// When they do not: that is the bug the fuzzer looks for.
pub fn run_converge(peers: u8, actions: &[Action]) {
    let n = 2 + usize::from(peers % 4);
    let mut docs: Vec<Doc> = (1..=n as u64).map(new_doc).collect();
    let mut mirrors: Vec<Mirror> = docs.iter_mut().map(Mirror::attach).collect();
    let mut next_peer = 100u64;
    let mut net = Network::default();
    for action in actions {
        // The peer whose state the action commits or imports into.
        let mut settled = None;
        match *action {
            Action::Send { from, to, payload } => {
                let (from, to) = (from as usize % n, to as usize % n);
                if from != to {
                    net.send(&mut docs, from, to, payload);
                }
            }
            Action::Deliver { index, duplicate } => {
                if !net.waiting.is_empty() {
                    let i = index as usize % net.waiting.len();
                    let (to, bytes) = if duplicate {
                        net.waiting[i].clone()
                    } else {
                        net.waiting.swap_remove(i)
                    };
                    deliver(&mut docs, to, &bytes);
                    settled = Some(to);
                }
            }
            Action::Corrupt {
                from,
                to,
                cut,
                snapshot,
            } => {
                // The import may fail before it commits: no check here.
                corrupt(&mut docs, from as usize % n, to as usize % n, cut, snapshot);
            }
            Action::Insert { peer, .. }
            | Action::Delete { peer, .. }
            | Action::Mark { peer, .. }
            | Action::Unmark { peer, .. }
            | Action::MapSet { peer, .. }
            | Action::Embed { peer, .. }
            | Action::Block { peer, .. }
            | Action::DeleteContainer { peer, .. } => edit(&mut docs[peer as usize % n], action),
            Action::Commit { peer } => {
                docs[peer as usize % n].commit();
                settled = Some(peer as usize % n);
            }
            Action::Sync { from, to } => {
                let (from, to) = (from as usize % n, to as usize % n);
                sync(&mut docs, from, to);
                settled = (from != to).then_some(to);
            }
            Action::SyncAll => sync_all(&mut docs),
            Action::Reimport { peer } => {
                let i = peer as usize % n;
                let bytes = full(&docs[i]);
                let mut fresh = new_doc(docs[i].peer_id());
                mirrors[i] = Mirror::attach(&mut fresh);
                if let Err(e) = fresh.import(&bytes) {
                    panic!(
                        "a full history does not import: {e:?}\n{}",
                        docs[i].debug_changes()
                    );
                }
                assert_eq!(fresh.text("t").to_delta(), docs[i].text("t").to_delta());
                assert_eq!(fresh.version(), docs[i].version());
                docs[i] = fresh;
                settled = Some(i);
            }
            Action::Snapshot { peer } => {
                let i = peer as usize % n;
                docs[i] = snapshot_round_trip(&mut docs[i]);
                mirrors[i] = Mirror::attach(&mut docs[i]);
            }
            Action::SyncSnapshot { from, to } => {
                let (from, to) = (from as usize % n, to as usize % n);
                if from != to {
                    let bytes = docs[from]
                        .export(ExportMode::Snapshot)
                        .expect("exports do not fail");
                    docs[to].import(&bytes).expect("a peer's snapshot imports");
                    docs[to].assert_exports_reopen();
                    settled = Some(to);
                }
            }
            Action::Fork { from, to } => {
                let mut f = docs[from as usize % n].fork();
                f.set_peer_id(next_peer).expect("valid id");
                f.config_text_style(config());
                next_peer += 1;
                let to = to as usize % n;
                mirrors[to] = Mirror::attach(&mut f);
                docs[to] = f;
            }
        }
        match settled {
            Some(i) => mirrors[i].check(&docs[i], action),
            None if matches!(action, Action::SyncAll) => {
                for (m, d) in mirrors.iter().zip(&docs) {
                    m.check(d, &"sync all");
                }
            }
            None => {}
        }
    }
    // Whatever is still in flight arrives, in order, then a full sync.
    for (to, bytes) in std::mem::take(&mut net.waiting) {
        deliver(&mut docs, to, &bytes);
    }
    sync_all(&mut docs);
    for (m, d) in mirrors.iter().zip(&docs) {
        m.check(d, &"at the end");
    }
    let (first, rest) = docs.split_first_mut().expect("at least two peers");
    first.assert_invariants();
    let delta = first.text("t").to_delta();
    let text = first.text("t").to_string();
    let version = first.version();
    let frontiers: Frontiers = first.frontiers();
    let maps = map_entries(first);
    let history = first.history_runs().expect("a peer's history loads");
    for d in rest {
        d.assert_invariants();
        assert_eq!(d.text("t").to_string(), text, "text diverged");
        assert_eq!(d.text("t").to_delta(), delta, "delta diverged");
        let view = d.get_text("t").map_or_else(Vec::new, |t| t.to_delta());
        assert_eq!(view, delta, "a view reads differently");
        assert_eq!(d.version(), version, "version diverged");
        assert_eq!(d.frontiers(), frontiers, "frontiers diverged");
        assert_eq!(map_entries(d), maps, "maps diverged");
        // Updates may stay pending when the ops they wait for are gone
        // with a replaced peer, but none that could apply: a snapshot
        // carries the pending set, and its import refuses a ready one.
        let snapshot = d.export(ExportMode::Snapshot).expect("exports do not fail");
        let reopened = Doc::new().import(&snapshot);
        assert!(reopened.is_ok(), "a pending update is ready: {reopened:?}");
        let h = d.history_runs().expect("a peer's history loads");
        assert!(h == history, "history diverged:\n{h:?}\n{history:?}");
    }
    assert_eq!(
        delta
            .iter()
            .map(|r| match r {
                Delta::Insert { insert, .. } => insert.as_str(),
                Delta::Embed { .. } | Delta::Block { .. } => "\u{FFFC}",
                _ => "",
            })
            .collect::<String>(),
        text
    );
}

/// A copy of text "t" of a document kept only from its change events, in
/// chars and in UTF-16 units.
struct Mirror {
    deltas: Arc<Mutex<[Vec<Delta>; 2]>>,
    _subs: [weft::Subscription; 2],
}

impl Mirror {
    /// Starts mirroring `doc` (committing its open change) from its text
    /// as it is now.
    fn attach(doc: &mut Doc) -> Mirror {
        doc.commit();
        let now = doc.get_text("t").map_or_else(Vec::new, |t| t.to_delta());
        let deltas = Arc::new(Mutex::new([now.clone(), now]));
        let sub = |slot: usize| {
            let deltas = Arc::clone(&deltas);
            move |event: &weft::DocEvent| {
                let mut d = deltas.lock().unwrap_or_else(|e| e.into_inner());
                for diff in event.texts.iter().filter(|t| t.name == "t") {
                    if let Err(e) = diff.apply_to(&mut d[slot], event.unit) {
                        panic!("an event does not apply to the mirror: {e}\n{diff:?}");
                    }
                }
            }
        };
        let chars = doc.subscribe(sub(0));
        let utf16 = doc.subscribe_in(Unit::Utf16, sub(1));
        Mirror {
            deltas,
            _subs: [chars, utf16],
        }
    }

    /// Checks the mirror against `doc`, which must have no open change.
    fn check(&self, doc: &Doc, what: &dyn std::fmt::Debug) {
        let now = doc.get_text("t").map_or_else(Vec::new, |t| t.to_delta());
        let d = self.deltas.lock().unwrap_or_else(|e| e.into_inner());
        assert_eq!(d[0], now, "{what:?}: the mirror (chars) differs");
        assert_eq!(d[1], now, "{what:?}: the mirror (UTF-16) differs");
    }
}

fn sync_all(docs: &mut [Doc]) {
    for _ in 0..2 {
        for i in 0..docs.len() {
            for j in 0..docs.len() {
                sync(docs, i, j);
            }
        }
    }
}
