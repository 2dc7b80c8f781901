//! The deliveries of the driver: syncs, snapshot round trips, damaged
//! bytes, and a network that holds exports until they are delivered, in
//! any order, some twice.

use weft::{Doc, ExportMode, IdSpan, Unit, VersionVector};

use crate::action::{new_doc, Payload};
use crate::import::observe;

/// `doc`'s snapshot imported into a fresh document with the same peer id
/// and config, checked to read like `doc` before anything loads and to
/// re-export byte for byte.
pub(crate) fn snapshot_round_trip(doc: &mut Doc) -> Doc {
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

pub(crate) fn sync(docs: &mut [Doc], from: usize, to: usize) {
    if from == to {
        return;
    }
    let v = docs[to].latest_version();
    let bytes = docs[from]
        .export(ExportMode::Updates { from: &v })
        .expect("exports do not fail");
    let status = docs[to].import(&bytes).expect("a peer's update imports");
    // (An import that changed nothing needs no second look.)
    if !status.applied.is_empty() || !status.pending.is_empty() {
        docs[to].assert_exports_reopen();
    }
}

/// Messages in flight, and the versions each peer had when messages were
/// sent to it (for stale exports).
#[derive(Default)]
pub(crate) struct Network {
    /// (receiver, bytes) waiting to be delivered.
    pub(crate) waiting: Vec<(usize, Vec<u8>)>,
    /// Per peer, versions it had earlier (the latest few).
    past: Vec<Vec<VersionVector>>,
}

/// Most messages in flight and past versions kept per peer.
const NETWORK_CAP: usize = 64;
const NETWORK_PAST_CAP: usize = 8;

impl Network {
    /// Puts an export of `from` for `to` on the network; returns the
    /// receiver of the oldest message when the network was full (it is
    /// delivered to make room).
    pub(crate) fn send(
        &mut self,
        docs: &mut [Doc],
        from: usize,
        to: usize,
        payload: Payload,
    ) -> Option<usize> {
        let version = docs[to].latest_version();
        if self.past.len() <= to {
            self.past.resize_with(to + 1, Vec::new);
        }
        let stale = |k: u8| {
            let past = &self.past[to];
            if past.is_empty() {
                VersionVector::new()
            } else {
                past[k as usize % past.len()].clone()
            }
        };
        let bytes = match payload {
            Payload::Delta => docs[from].export(ExportMode::Updates { from: &version }),
            Payload::Whole => docs[from].export(ExportMode::Updates {
                from: &VersionVector::new(),
            }),
            // The high bit asks for op ranges instead: from the stale
            // version's counters, some cut further at random places (not
            // a version any peer held: what follows a cut waits).
            Payload::Stale(k) if k >= 0x80 => {
                let since = stale(k);
                let spans: Vec<IdSpan> = docs[from]
                    .version()
                    .iter()
                    .enumerate()
                    .map(|(j, (p, end))| {
                        let start = since.get(p).min(end);
                        let cut = (u32::from(k) >> (j % 4)) % 4;
                        let start = start + (end - start) * cut / 4;
                        IdSpan::new(p, start..end)
                    })
                    .collect();
                docs[from].export(ExportMode::UpdatesInRange(&spans))
            }
            Payload::Stale(k) => docs[from].export(ExportMode::Updates { from: &stale(k) }),
            Payload::Future(k) => {
                let mut v = version.clone();
                let peers: Vec<_> = v.iter().map(|(p, _)| p).collect();
                if !peers.is_empty() {
                    let p = peers[k as usize % peers.len()];
                    v.set(p, v.get(p) + 1 + u32::from(k % 4));
                }
                docs[from].export(ExportMode::Updates { from: &v })
            }
            Payload::UnknownPeer => {
                let mut v = version.clone();
                v.set(999_999, 7);
                docs[from].export(ExportMode::Updates { from: &v })
            }
            Payload::Snapshot => docs[from].export(ExportMode::Snapshot),
        }
        .expect("exports do not fail");
        let past = &mut self.past[to];
        if past.len() == NETWORK_PAST_CAP {
            past.remove(0);
        }
        past.push(version);
        let mut got = None;
        if self.waiting.len() == NETWORK_CAP {
            let (to, bytes) = self.waiting.remove(0);
            deliver(docs, to, &bytes);
            got = Some(to);
        }
        self.waiting.push((to, bytes));
        got
    }
}

/// Imports a message; every export of a peer must import.
pub(crate) fn deliver(docs: &mut [Doc], to: usize, bytes: &[u8]) {
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
pub(crate) fn corrupt(docs: &mut [Doc], from: usize, to: usize, cut: u16, snapshot: bool) {
    let version = docs[to].latest_version();
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

pub(crate) fn sync_all(docs: &mut [Doc]) {
    for _ in 0..2 {
        for i in 0..docs.len() {
            for j in 0..docs.len() {
                sync(docs, i, j);
            }
        }
    }
}
