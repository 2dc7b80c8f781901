//! Where the bytes of an export go: a test-only breakdown of B4's
//! whole-history update (by section) and its snapshots (by entry), to
//! profile before changing a layout. Run it with
//! `cargo test --release -p weft --lib sizes -- --ignored --nocapture`.

#![expect(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "a measurement of a known trace"
)]

use std::collections::BTreeMap;

use weft_kv::MemKvStore;

use super::packed::Framing;
use super::HEADER_LEN;
use crate::bytes::Reader;
use crate::{Doc, ExportMode, VersionVector};

/// B4 (the automerge-paper trace) replayed into a document.
fn b4() -> Doc {
    let trace = traces::Trace::sequential("automerge-paper");
    let mut doc = Doc::new();
    doc.set_peer_id(1).unwrap();
    let mut text = doc.text("text");
    for p in trace.patches() {
        if p.del > 0 {
            text.delete(p.pos, p.del).unwrap();
        }
        if !p.ins.is_empty() {
            text.insert(p.pos, &p.ins).unwrap();
        }
    }
    doc
}

/// The byte length of each length-prefixed section of an update body.
fn update_sections(bytes: &[u8]) -> Vec<usize> {
    let mut r = Reader::new(bytes.get(HEADER_LEN..).unwrap(), 0);
    let mut out = Vec::new();
    while !r.is_empty() {
        out.push(r.bytes().unwrap().len());
    }
    out
}

/// The bytes of a snapshot's entries, keys grouped by their tag byte.
fn snapshot_entries(bytes: &[u8]) -> BTreeMap<char, (usize, usize)> {
    let mut store = MemKvStore::new();
    store
        .import_all_unchecked(bytes.get(HEADER_LEN..).unwrap())
        .unwrap();
    let mut out: BTreeMap<char, (usize, usize)> = BTreeMap::new();
    for (k, v) in store.scan::<std::ops::RangeFull>(..) {
        let e = out.entry(char::from(k[0])).or_default();
        e.0 += 1;
        e.1 += v.len();
    }
    out
}

#[test]
#[ignore = "a measurement: prints where B4's export bytes go"]
fn b4_export_sizes() {
    let doc = b4();
    let update = doc
        .export(ExportMode::Updates {
            from: &VersionVector::new(),
        })
        .unwrap();
    println!("update: {} bytes (version {})", update.len(), update[4]);
    let names = [
        "peers", "texts", "changes", "ops", "content", "commits", "maps", "objects",
    ];
    for (i, n) in update_sections(&update).into_iter().enumerate() {
        println!("  {:10} {n:8}", names.get(i).unwrap_or(&"?"));
    }
    for (what, bytes) in [
        ("snapshot", doc.export(ExportMode::Snapshot).unwrap()),
        (
            "shallow",
            doc.export(ExportMode::ShallowSnapshot(&doc.frontiers()))
                .unwrap(),
        ),
    ] {
        println!("{what}: {} bytes (version {})", bytes.len(), bytes[4]);
        let mut values = 0;
        for (tag, (n, len)) in snapshot_entries(&bytes) {
            println!("  {tag:?} x{n:<5} {len:8}");
            values += len;
        }
        println!("  table overhead {}", bytes.len() - HEADER_LEN - values);
    }
}

#[test]
#[ignore = "a measurement: what codecs make of B4's sections"]
fn b4_codec_sizes() {
    use super::lz4hc;
    let doc = b4();
    let update = doc
        .export(ExportMode::Updates {
            from: &VersionVector::new(),
        })
        .unwrap();
    let mut r = Reader::new(&update[HEADER_LEN..], 0);
    let sections: Vec<&[u8]> = (0..5).map(|_| r.bytes().unwrap()).collect();
    let snap = doc.export(ExportMode::Snapshot).unwrap();
    let mut store = MemKvStore::new();
    store.import_all_unchecked(&snap[HEADER_LEN..]).unwrap();
    let get = |k: &[u8]| {
        super::packed::unpack(store.get(k).unwrap(), "x", Framing::Tagged)
            .unwrap()
            .into_owned()
    };
    let text = get(&super::snapshot::key(b't', 0));
    let deleted = super::packed::unpack(store.get(b"d").unwrap(), "x", Framing::Tagged)
        .unwrap()
        .into_owned();
    let segs = get(&super::snapshot::key(b's', 0));
    let deflate = |b: &[u8]| miniz_oxide::deflate::compress_to_vec(b, 6).len();
    let time = |f: &dyn Fn() -> usize| {
        let t = std::time::Instant::now();
        let n = f();
        (n, t.elapsed().as_secs_f64() * 1e3)
    };
    for (name, raw) in [
        ("text t", &text[..]),
        ("deleted d", &deleted[..]),
        ("update content", sections[4]),
        ("update ops", sections[3]),
        ("segments s", &segs[..]),
    ] {
        println!(
            "{name:16} raw {:7}  lz4 {:?}  hc {:?}  deflate {:?}",
            raw.len(),
            time(&|| lz4_flex::block::compress(raw).len()),
            time(&|| lz4hc::compress(raw).len()),
            time(&|| deflate(raw)),
        );
    }
}
