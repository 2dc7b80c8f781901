//! Helpers the tests share: documents, syncing, whole exports, what a
//! caller can observe of a document, hand-built update bytes, and trace
//! replay into a document (sequential, and concurrent through forks and
//! updates).

use traces::Trace;
use weft::{Doc, ExpandType, ExportMode, Frontiers, IdSpan, Value, VersionVector};
use xxhash_rust::xxh3::xxh3_64;

/// Applies every patch of a sequential trace to text `"t"` of `doc`.
pub fn replay(doc: &mut Doc, trace: &Trace) {
    let mut text = doc.text("t");
    for p in trace.patches() {
        if p.del > 0 {
            text.delete(p.pos, p.del).unwrap();
        }
        if !p.ins.is_empty() {
            text.insert(p.pos, &p.ins).unwrap();
        }
    }
}

/// A document that merges through exported updates.
pub struct Replica(pub Doc);

impl traces::Replica for Replica {
    type Error = weft::Error;

    fn empty() -> Self {
        Replica(Doc::new())
    }

    fn fork(&self) -> Self {
        Replica(self.0.fork())
    }

    fn merge_from(&mut self, other: &mut Self) -> Result<(), weft::Error> {
        let bytes = other.0.export(ExportMode::Updates {
            from: &self.0.version(),
        })?;
        let status = self.0.import(&bytes)?;
        assert!(status.pending.is_empty(), "parents are merged in order");
        Ok(())
    }

    fn apply(&mut self, txn: &traces::Txn) -> Result<(), weft::Error> {
        self.0.set_peer_id(u64::from(txn.agent) + 1)?;
        let mut text = self.0.text("t");
        for p in &txn.patches {
            text.delete(p.pos, p.del)?;
            text.insert(p.pos, &p.ins)?;
        }
        Ok(())
    }
}

/// Everything observable about a document.
#[derive(Debug, PartialEq)]
pub struct Observed {
    /// Name, text and its delta (styles).
    texts: Vec<(String, String, String)>,
    /// Name and entries of each map.
    maps: Vec<(String, Vec<(String, Value)>)>,
    version: VersionVector,
    frontiers: Frontiers,
    pending: Vec<IdSpan>,
    history: Vec<u8>,
    /// Its snapshot, which also carries the pending updates.
    snapshot: Vec<u8>,
}

/// What a caller can observe of `doc`: texts, deltas, version, frontiers,
/// pending set and both exports.
pub fn observe(doc: &Doc) -> Observed {
    Observed {
        texts: doc
            .text_names()
            .map(|n| {
                let text = doc.get_text(n).expect("a listed text exists");
                (
                    n.to_owned(),
                    text.to_string(),
                    format!("{:?}", text.to_delta()),
                )
            })
            .collect(),
        maps: map_contents(doc),
        version: doc.version(),
        frontiers: doc.frontiers(),
        pending: doc.pending_spans(),
        history: doc
            .export(ExportMode::Updates {
                from: &VersionVector::new(),
            })
            .unwrap(),
        snapshot: doc.export(ExportMode::Snapshot).unwrap(),
    }
}

/// Every map of `doc` with its entries, by name.
pub fn map_contents(doc: &Doc) -> Vec<(String, Vec<(String, Value)>)> {
    let mut out: Vec<_> = doc
        .map_names()
        .map(|n| {
            let entries = doc.get_map(n).map_or_else(Vec::new, |m| {
                m.iter().map(|(k, v)| (k.to_owned(), v.clone())).collect()
            });
            (n.to_owned(), entries)
        })
        .filter(|(_, e)| !e.is_empty())
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// `body` behind an update header with its checksum.
pub fn wrap(body: &[u8]) -> Vec<u8> {
    let mut out = b"weft\x01\x01\x00\x00".to_vec();
    out.extend_from_slice(&xxh3_64(body).to_le_bytes());
    out.extend_from_slice(body);
    out
}

/// Appends `v` as a LEB128 varint (weft-kv's, as every format writes it).
pub use weft_kv::varint::write as varint;

/// Appends `bytes` with a varint length prefix.
pub fn section(out: &mut Vec<u8>, bytes: &[u8]) {
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// An update body from raw sections.
pub fn body(peers: &[u64], texts: &[&str], changes: &[u8], ops: &[u8], content: &str) -> Vec<u8> {
    let mut p = Vec::new();
    varint(&mut p, peers.len() as u64);
    for x in peers {
        p.extend_from_slice(&x.to_le_bytes());
    }
    let mut t = Vec::new();
    varint(&mut t, texts.len() as u64);
    for x in texts {
        section(&mut t, x.as_bytes());
    }
    let mut b = Vec::new();
    section(&mut b, &p);
    section(&mut b, &t);
    section(&mut b, changes);
    section(&mut b, ops);
    section(&mut b, content.as_bytes());
    b
}

/// An empty document editing as `peer` with the style config the rich
/// tests use: the default plus keys named after each expand rule.
pub fn styled_doc(peer: u64) -> Doc {
    let mut d = doc(peer);
    let mut c = weft::StyleConfig::default();
    c.set("after", ExpandType::After)
        .set("before", ExpandType::Before)
        .set("both", ExpandType::Both)
        .set("none", ExpandType::None);
    d.config_text_style(c);
    d
}

/// An empty document editing as `peer`.
pub fn doc(peer: u64) -> Doc {
    let mut d = Doc::new();
    d.set_peer_id(peer).unwrap();
    d
}

/// Imports into `to` everything `from` has that it lacks.
pub fn sync(to: &mut Doc, from: &Doc) {
    let bytes = from
        .export(ExportMode::Updates {
            from: &to.version(),
        })
        .unwrap();
    to.import(&bytes).unwrap();
}

/// `a` and `b` get everything the other has: `b` imports from `a` first
/// if `a_first`, else `a` from `b` first.
pub fn exchange(a: &mut Doc, b: &mut Doc, a_first: bool) {
    if a_first {
        sync(b, a);
        sync(a, b);
    } else {
        sync(a, b);
        sync(b, a);
    }
}

/// Everything `doc` can give a peer that has nothing: the whole history
/// as an update, or for a shallow document (which has no whole history)
/// its shallow snapshot.
pub fn full(doc: &Doc) -> Vec<u8> {
    let mode = if doc.shallow_since().is_some() {
        ExportMode::Snapshot
    } else {
        ExportMode::Updates {
            from: &VersionVector::new(),
        }
    };
    doc.export(mode).expect("exports do not fail")
}
