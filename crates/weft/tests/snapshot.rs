//! Snapshots: round trips of every stored trace, lazy import, merging with
//! peers that never saw the snapshot, byte-identical re-export, and
//! damaged or forged snapshots.

use traces::Trace;
use weft::{Delta, Doc, ExportMode, VersionVector};
use weft_testkit::{replay, varint, Replica, Rng};

fn snapshot(doc: &mut Doc) -> Vec<u8> {
    doc.export(ExportMode::Snapshot).unwrap()
}

fn updates(doc: &mut Doc, from: &VersionVector) -> Vec<u8> {
    doc.export(ExportMode::Updates { from }).unwrap()
}

/// Everything a reader can observe of a document: per text (name, text,
/// delta), the version and the frontiers.
type Observed = (Vec<(String, String, Vec<Delta>)>, VersionVector, String);

fn observe(doc: &mut Doc) -> Observed {
    let names: Vec<String> = doc.text_names().map(str::to_owned).collect();
    let texts = names
        .into_iter()
        .map(|n| {
            let mut t = doc.text(&n);
            let s = t.to_string();
            let d = t.to_delta();
            let _ = &mut t;
            (n, s, d)
        })
        .collect();
    (texts, doc.version(), format!("{:?}", doc.frontiers()))
}

/// Snapshot round trip of one document: the lazy copy reads the same,
/// re-exports the same bytes, and loads into the same state.
fn check_round_trip(doc: &mut Doc, what: &str) -> Vec<u8> {
    let bytes = snapshot(doc);
    assert!(snapshot(doc) == bytes, "{what}: exporting twice differs");
    let expected = observe(doc);

    let mut copy = Doc::new();
    copy.import(&bytes).unwrap();
    assert_eq!(copy.version(), doc.version(), "{what}: lazy version");
    assert_eq!(copy.frontiers(), doc.frontiers(), "{what}: lazy frontiers");
    assert_eq!(observe(&mut copy), expected, "{what}: lazy reads");
    assert!(
        snapshot(&mut copy) == bytes,
        "{what}: export, import, export is not byte-identical"
    );
    assert!(!copy.is_lazy());
    copy.assert_invariants();
    assert_eq!(observe(&mut copy), expected, "{what}: loaded reads");
    // The loaded history exports as updates that rebuild the document.
    let mut fresh = Doc::new();
    fresh
        .import(&updates(&mut copy, &VersionVector::new()))
        .unwrap();
    // (Updates carry no texts without ops: compare text by text.)
    for (name, text, delta) in &expected.0 {
        let t = fresh.text(name);
        assert_eq!(
            (&t.to_string(), &t.to_delta()),
            (text, delta),
            "{what}: history re-exported"
        );
    }
    assert_eq!(fresh.version(), expected.1, "{what}: history re-exported");
    bytes
}

#[test]
fn every_sequential_trace_round_trips() {
    for name in traces::sequential_names() {
        let trace = Trace::sequential(&name);
        let mut doc = Doc::new();
        doc.set_peer_id(1).unwrap();
        replay(&mut doc, &trace);
        let bytes = check_round_trip(&mut doc, &name);
        let mut copy = Doc::new();
        copy.import(&bytes).unwrap();
        assert_eq!(copy.text("t").to_string(), trace.end_content, "{name}");
    }
}

#[test]
fn concurrent_trace_round_trips() {
    let trace = Trace::concurrent("friendsforever");
    let Replica(mut doc) = trace.replay_concurrent::<Replica>().unwrap();
    let bytes = check_round_trip(&mut doc, "friendsforever");
    let mut copy = Doc::new();
    copy.import(&bytes).unwrap();
    assert_eq!(copy.text("t").to_string(), trace.end_content);
}

fn b4() -> Doc {
    let trace = Trace::sequential("automerge-paper");
    let mut doc = Doc::new();
    doc.set_peer_id(1).unwrap();
    replay(&mut doc, &trace);
    doc
}

#[test]
fn a_lazy_import_reads_without_loading() {
    let mut doc = b4();
    let bytes = snapshot(&mut doc);
    let expected = doc.text("t").to_string();

    let mut copy = Doc::new();
    let status = copy.import(&bytes).unwrap();
    assert!(copy.is_lazy());
    assert_eq!(status.applied.len(), 1);
    assert!(status.pending.is_empty());
    assert_eq!(copy.version(), doc.version());
    assert_eq!(copy.frontiers(), doc.frontiers());
    {
        let t = copy.text("t");
        assert_eq!(t.to_string(), expected);
        assert_eq!(t.len(), expected.chars().count());
        assert_eq!(t.len_utf8(), expected.len());
        assert_eq!(
            t.slice(10..20).unwrap(),
            doc.text("t").slice(10..20).unwrap()
        );
        assert_eq!(t.to_delta(), vec![Delta::insert(expected.as_str())]);
        assert_eq!(
            t.convert_pos(100, weft::Unit::Char, weft::Unit::Utf16)
                .unwrap(),
            doc.text("t")
                .convert_pos(100, weft::Unit::Char, weft::Unit::Utf16)
                .unwrap()
        );
        assert!(t.slice(0..expected.len() + 1).is_err());
    }
    assert!(copy.is_lazy(), "reading loads nothing");

    // The first edit builds the tree, not the history; an export needs
    // (and loads) everything.
    copy.text("t").insert(5, "!").unwrap();
    assert!(copy.is_lazy());
    doc.text("t").insert(5, "!").unwrap();
    assert_eq!(copy.text("t").to_string(), doc.text("t").to_string());
    copy.assert_invariants();
    updates(&mut copy, &VersionVector::new());
    assert!(!copy.is_lazy());
    copy.assert_invariants();
}

/// After a lazy import, the first edit of one text moves every text
/// into the op log (one read before straight from its cached copy, the
/// others decompressed there); texts not built yet are then read from
/// the log, and typing into them (ASCII or not) builds the same document
/// as loading everything first.
#[test]
fn texts_read_after_another_texts_first_edit_come_from_the_log() {
    let mut doc = Doc::new();
    doc.set_peer_id(3).unwrap();
    let texts = [
        ("a", "plain ascii text"),
        ("b", "typed into first"),
        ("c", "naïve 😀 text, never read"),
    ];
    for (name, text) in texts {
        doc.text(name).insert(0, text).unwrap();
        doc.text(name).delete(2, 3).unwrap();
    }
    let bytes = snapshot(&mut doc);
    let expected: Vec<String> = texts.iter().map(|(n, _)| doc.text(n).to_string()).collect();

    let mut lazy = Doc::new();
    lazy.import(&bytes).unwrap();
    lazy.set_peer_id(4).unwrap();
    assert_eq!(lazy.text("a").to_string(), expected[0]);
    lazy.text("b").insert(1, "!").unwrap();
    assert!(lazy.is_lazy(), "the first edit loads no history");
    assert_eq!(lazy.text("a").to_string(), expected[0]);
    assert_eq!(lazy.text("c").to_string(), expected[2]);
    assert_eq!(lazy.text("c").len_utf16(), doc.text("c").len_utf16());
    lazy.text("c").insert(7, "ß").unwrap();
    lazy.text("a").delete(0, 2).unwrap();
    lazy.assert_invariants();

    let mut eager = Doc::new();
    eager.import(&bytes).unwrap();
    eager.load().unwrap();
    eager.set_peer_id(4).unwrap();
    eager.text("b").insert(1, "!").unwrap();
    eager.text("c").insert(7, "ß").unwrap();
    eager.text("a").delete(0, 2).unwrap();
    assert_eq!(weft_testkit::observe(&lazy), weft_testkit::observe(&eager));
}

/// The owner reopening a document and typing on where it left off: its
/// new ops continue the history's last run, in the same op run and the
/// same bytes whether the history loaded before the typing or after
/// (found by an outside review: the lazy copy's update export was a byte
/// or two longer).
#[test]
fn typing_on_after_a_lazy_import_exports_the_same_bytes() {
    type Edit = fn(&mut Doc);
    let cases: [(&str, Edit, Edit); 3] = [
        (
            "abc",
            |d| d.text("t").insert(3, "d").unwrap(),
            |d| d.text("t").insert(4, "e").unwrap(),
        ),
        (
            "abc",
            |d| d.text("t").delete(1, 1).unwrap(),
            |d| d.text("t").delete(0, 1).unwrap(),
        ),
        (
            "abcdef",
            |d| d.text("t").delete(4, 1).unwrap(),
            |d| d.text("t").delete(3, 1).unwrap(),
        ),
    ];
    for (text, before, after) in cases {
        let mut doc = Doc::new();
        doc.set_peer_id(1).unwrap();
        doc.text("t").insert(0, text).unwrap();
        before(&mut doc);
        let bytes = snapshot(&mut doc);
        let mut lazy = Doc::new();
        lazy.import(&bytes).unwrap();
        lazy.set_peer_id(1).unwrap();
        after(&mut lazy);
        let mut loaded = Doc::new();
        loaded.import(&bytes).unwrap();
        loaded.load().unwrap();
        loaded.set_peer_id(1).unwrap();
        after(&mut loaded);
        assert_eq!(
            weft_testkit::observe(&lazy),
            weft_testkit::observe(&loaded),
            "{text}"
        );
        // Ops, op runs and changes (tree items may be split differently).
        let (a, b) = (lazy.debug_sizes(), loaded.debug_sizes());
        assert_eq!((a.0, a.1, a.2), (b.0, b.1, b.2), "{text}");
    }
}

/// Typing into a lazily imported snapshot builds the edited text's tree
/// from the snapshot without decoding the history (its chars' origins
/// unknown); the history loads, and fills them in, when an operation needs
/// it: a mark, a merge, an export. Whichever it is, the document ends
/// exactly as one that loaded everything before the same edits.
#[test]
fn typing_after_a_lazy_import_defers_the_history() {
    let trace = Trace::sequential("automerge-paper");
    let mut doc = Doc::new();
    doc.set_peer_id(7).unwrap();
    replay(&mut doc, &trace);
    doc.text("s").insert(0, "styled text, marked").unwrap();
    doc.text("s").mark(0..6, "bold", true).unwrap();
    let bytes = snapshot(&mut doc);
    let mut rng = Rng::new(0x1a2b);
    for round in 0..5 {
        let mut lazy = Doc::new();
        lazy.import(&bytes).unwrap();
        lazy.set_peer_id(7).unwrap();
        let mut eager = Doc::new();
        eager.import(&bytes).unwrap();
        eager.load().unwrap();
        eager.set_peer_id(7).unwrap();
        for step in 0..300 {
            let len = lazy.text("t").len();
            let pos = rng.below(len + 1);
            if rng.chance(30) && pos < len {
                let n = 1 + rng.below(8.min(len - pos));
                lazy.text("t").delete(pos, n).unwrap();
                eager.text("t").delete(pos, n).unwrap();
            } else {
                let s = rng.text(4);
                lazy.text("t").insert(pos, &s).unwrap();
                eager.text("t").insert(pos, &s).unwrap();
            }
            if step % 50 == 49 {
                lazy.commit();
                eager.commit();
            }
        }
        // Typing right after the snapshot's last typed char too.
        let end = trace.end_content.chars().count().min(lazy.text("t").len());
        lazy.text("t").insert(end, "z").unwrap();
        eager.text("t").insert(end, "z").unwrap();
        assert!(lazy.is_lazy(), "typing decodes no history");
        lazy.assert_invariants();
        assert_eq!(lazy.text("t").to_string(), eager.text("t").to_string());
        assert_eq!(lazy.version(), eager.version());
        assert_eq!(lazy.frontiers(), eager.frontiers());
        match round {
            0 => {}
            1 => {
                // Marking the typed text needs the history.
                lazy.text("t").mark(3..40, "italic", true).unwrap();
                eager.text("t").mark(3..40, "italic", true).unwrap();
                lazy.text("t").insert(10, "ab").unwrap();
                eager.text("t").insert(10, "ab").unwrap();
            }
            2 => {
                // A concurrent remote edit merges into the typed text.
                let mut remote = Doc::new();
                remote.import(&bytes).unwrap();
                remote.set_peer_id(9).unwrap();
                remote.text("t").insert(100, "remote").unwrap();
                remote.text("t").delete(2_000, 300).unwrap();
                let update = updates(&mut remote, &doc.version());
                lazy.import(&update).unwrap();
                eager.import(&update).unwrap();
            }
            3 => {
                // Another text's styles, read and edited.
                assert_eq!(lazy.text("s").to_delta(), eager.text("s").to_delta());
                lazy.text("s").insert(3, "x").unwrap();
                eager.text("s").insert(3, "x").unwrap();
            }
            _ => lazy.load().unwrap(),
        }
        lazy.assert_invariants();
        assert_eq!(
            lazy.history_runs().unwrap(),
            eager.history_runs().unwrap(),
            "round {round}"
        );
        assert_eq!(
            weft_testkit::observe(&lazy),
            weft_testkit::observe(&eager),
            "round {round}"
        );
        assert!(!lazy.is_lazy());
        lazy.assert_invariants();
    }
}

/// A document with two styled texts (every expand rule, an unmark,
/// emoji and CJK) and a plain one, edited by two peers.
fn rich_doc() -> Doc {
    let mut a = Doc::new();
    a.set_peer_id(1).unwrap();
    let mut config = weft::StyleConfig::default();
    config
        .set("before", weft::ExpandType::Before)
        .set("both", weft::ExpandType::Both);
    a.config_text_style(config.clone());
    let mut t = a.text("body");
    t.insert(0, "Hello wörld 😀, 你好 there").unwrap();
    t.mark(0..5, "bold", true).unwrap();
    t.mark(6..11, "link", "https://example.com").unwrap();
    t.mark(3..14, "before", 1).unwrap();
    t.mark(12..18, "both", "x").unwrap();
    t.unmark(1..3, "bold").unwrap();
    a.text("notes").insert(0, "plain notes").unwrap();
    let mut b = a.fork();
    b.set_peer_id(2).unwrap();
    b.config_text_style(config);
    b.text("body").insert(5, " big").unwrap();
    b.text("body").mark(0..9, "italic", true).unwrap();
    a.text("body").delete(6, 3).unwrap();
    a.text("title").insert(0, "Title").unwrap();
    a.text("title").mark(0..5, "both", true).unwrap();
    let to_a = b
        .export(ExportMode::Updates { from: &a.version() })
        .unwrap();
    a.import(&to_a).unwrap();
    a
}

#[test]
fn rich_text_round_trips() {
    let mut doc = rich_doc();
    check_round_trip(&mut doc, "rich");

    // Typing at mark edges behaves the same after a snapshot.
    let bytes = snapshot(&mut doc);
    let mut copy = Doc::new();
    copy.set_peer_id(1).unwrap();
    copy.config_text_style(doc.text_style_config().clone());
    copy.import(&bytes).unwrap();
    for d in [&mut doc, &mut copy] {
        let mut t = d.text("body");
        t.insert(5, "X").unwrap();
        t.insert(0, "Y").unwrap();
        let len = t.len();
        t.insert(len, "Z").unwrap();
        d.text("title").insert(5, "!").unwrap();
    }
    assert_eq!(observe(&mut copy), observe(&mut doc));
}

#[test]
fn edits_after_import_merge_with_peers_that_never_saw_the_snapshot() {
    let mut a = rich_doc();
    let mut b = a.fork();
    b.set_peer_id(7).unwrap();
    let mut c = Doc::new();
    c.set_peer_id(8).unwrap();
    c.import(&snapshot(&mut a)).unwrap();

    // Concurrent edits: c on the lazily imported doc, a and b on theirs.
    c.text("body").insert(2, "[c]").unwrap();
    c.text("body").mark(0..4, "bold", true).unwrap();
    b.text("body").delete(0, 2).unwrap();
    b.text("notes").insert(0, "b: ").unwrap();
    a.text("title").insert(0, "A ").unwrap();

    let mut docs = [a, b, c];
    for _ in 0..2 {
        for i in 0..3 {
            for j in 0..3 {
                if i != j {
                    let v = docs[j].version();
                    let u = docs[i].export(ExportMode::Updates { from: &v }).unwrap();
                    docs[j].import(&u).unwrap();
                }
            }
        }
    }
    let [a, b, c] = &mut docs;
    let expected = observe(a);
    assert_eq!(observe(b), expected);
    assert_eq!(observe(c), expected);
    for d in [a, b, c] {
        d.assert_invariants();
    }
}

#[test]
fn a_snapshot_into_a_non_empty_doc_merges_like_an_update() {
    let mut a = rich_doc();
    let mut b = a.fork();
    b.set_peer_id(9).unwrap();
    a.text("body").insert(0, "a ").unwrap();
    b.text("body").insert(0, "b ").unwrap();
    let mut via_updates = b.clone();
    via_updates
        .import(&updates(&mut a, &VersionVector::new()))
        .unwrap();
    b.import(&snapshot(&mut a)).unwrap();
    assert_eq!(observe(&mut b), observe(&mut via_updates));
    // Importing it again changes nothing.
    let before = observe(&mut b);
    b.import(&snapshot(&mut a)).unwrap();
    assert_eq!(observe(&mut b), before);
    b.assert_invariants();
}

#[test]
fn empty_documents_round_trip() {
    let mut empty = Doc::new();
    check_round_trip(&mut empty, "empty");
    let mut named = Doc::new();
    named.text("a");
    named.text("b");
    let bytes = check_round_trip(&mut named, "texts without ops");
    let mut copy = Doc::new();
    copy.import(&bytes).unwrap();
    assert_eq!(copy.text_names().collect::<Vec<_>>(), ["a", "b"]);
}

/// A small snapshot with marks, deletes and two peers.
fn small() -> (Doc, Vec<u8>) {
    let mut doc = rich_doc();
    let bytes = snapshot(&mut doc);
    (doc, bytes)
}

pub(crate) fn with_checksum(mut bytes: Vec<u8>) -> Vec<u8> {
    let sum = xxhash_rust::xxh3::xxh3_64(&bytes[16..]);
    bytes[8..16].copy_from_slice(&sum.to_le_bytes());
    bytes
}

/// Imports `bytes` into an empty doc and into a doc with content,
/// expecting `Err` with the doc unchanged and usable afterwards.
fn rejected(bytes: &[u8], what: &str) {
    for mut doc in [Doc::new(), rich_doc()] {
        let before = observe(&mut doc);
        assert!(doc.import(bytes).is_err(), "{what}: imported");
        assert_eq!(observe(&mut doc), before, "{what}: the doc changed");
        assert!(!doc.is_lazy());
        doc.text("body").insert(0, "ok").unwrap();
        doc.assert_invariants();
    }
}

#[test]
fn damaged_snapshots_are_rejected_atomically() {
    let (_, bytes) = small();
    for len in 0..bytes.len() {
        rejected(&bytes[..len], &format!("truncated to {len}"));
    }
    for bit in 0..(bytes.len().min(4096) * 8) {
        let mut damaged = bytes.clone();
        damaged[bit / 8] ^= 1 << (bit % 8);
        let mut doc = Doc::new();
        assert!(doc.import(&damaged).is_err(), "bit {bit} flipped: imported");
        assert_eq!(observe(&mut doc), observe(&mut Doc::new()));
    }
    let mut newer = bytes.clone();
    newer[4] = 7;
    assert_eq!(
        Doc::new().import(&newer).unwrap_err(),
        weft::Error::UnsupportedVersion(7)
    );
    // Version 2 always has commit infos; this body has none.
    newer[4] = 2;
    rejected(&newer, "version 2 without commit infos");
    let mut mode = bytes.clone();
    mode[5] = 4;
    assert_eq!(
        Doc::new().import(&mode).unwrap_err(),
        weft::Error::UnsupportedMode(4)
    );
    // A full snapshot's body under the shallow mode (3) lacks its root.
    mode[5] = 3;
    rejected(&mode, "full snapshot as a shallow one");
    let mut reserved = bytes;
    reserved[6] = 1;
    rejected(&reserved, "reserved byte set");
}

/// The body's weft-kv table: where its blocks and index are.
fn table_layout(body: &[u8]) -> (usize, usize) {
    let footer = body.len() - 20;
    let index_len = u32::from_le_bytes(body[footer + 8..footer + 12].try_into().unwrap()) as usize;
    (footer - index_len, footer)
}

#[test]
fn a_damaged_inner_block_with_a_recomputed_checksum_is_rejected() {
    let (_, bytes) = small();
    let body_at = 16;
    let (index_at, footer_at) = table_layout(&bytes[body_at..]);
    // Damage the table's structure: the index, the footer, each block's
    // entry count (the first bytes of the trailer): the document checksum
    // is recomputed, so only the table's own structure checks can tell.
    let mut positions: Vec<usize> = (index_at..footer_at + 20).collect();
    // The first block's first entry header (shared/key/value lengths).
    positions.extend(0..3);
    for at in positions {
        for flip in [0x01u8, 0x80, 0xFF] {
            let mut damaged = bytes.clone();
            damaged[body_at + at] ^= flip;
            let damaged = with_checksum(damaged);
            if damaged == bytes {
                continue;
            }
            let mut doc = Doc::new();
            if doc.import(&damaged).is_ok() {
                // The damage hit a byte the structure does not pin down
                // (a key's text, say): then loading must still fail
                // cleanly or give a consistent document.
                match doc.load() {
                    Ok(()) => doc.assert_invariants(),
                    Err(_) => assert!(doc.is_lazy()),
                }
                continue;
            }
            rejected(&damaged, &format!("table byte {at} ^ {flip:#x}"));
        }
    }
}

#[test]
fn forged_bodies_never_panic_and_fail_cleanly_when_they_load() {
    let (doc, bytes) = small();
    let mut outcomes = [0usize; 3]; // import Err, load Err, loaded
    for at in 16..bytes.len() {
        let mut damaged = bytes.clone();
        damaged[at] = damaged[at].wrapping_add(1 + (at % 7) as u8);
        let damaged = with_checksum(damaged);
        let mut copy = Doc::new();
        copy.set_peer_id(55).unwrap();
        if copy.import(&damaged).is_err() {
            outcomes[0] += 1;
            continue;
        }
        // Reading a lazily imported doc never panics, whatever it holds.
        for name in copy.text_names().map(str::to_owned).collect::<Vec<_>>() {
            let t = copy.text(&name);
            let _ = (t.to_string(), t.to_delta(), t.len(), t.slice(0..t.len()));
        }
        // Typing before the history loads (trees built from the segments
        // alone) never panics either; what it could not check fails when
        // the history loads.
        let mut typed = copy.clone();
        for name in copy.text_names().map(str::to_owned).collect::<Vec<_>>() {
            let mut t = typed.text(&name);
            let n = t.len();
            let _ = t.insert(n / 2, "typed");
            let _ = t.delete(0, n.min(3));
        }
        if typed.load().is_ok() {
            typed.assert_invariants();
            let _ = typed.export(ExportMode::Snapshot);
        }
        let before = observe(&mut copy);
        match copy.load() {
            Err(_) => {
                outcomes[1] += 1;
                assert_eq!(
                    observe(&mut copy),
                    before,
                    "byte {at}: a failed load changed the doc"
                );
                // Edits report the error or (for a text that did build)
                // work; nothing panics.
                let _ = copy.text("body").insert(0, "x");
                let _ = copy.export(ExportMode::Snapshot);
            }
            Ok(()) => {
                outcomes[2] += 1;
                copy.assert_invariants();
                copy.text("body").insert(0, "x").unwrap();
                let again = snapshot(&mut copy);
                Doc::new().import(&again).unwrap();
            }
        }
    }
    let _ = doc;
    // Most forged bytes are caught, at import or when the history loads.
    assert!(outcomes[0] + outcomes[1] > outcomes[2], "{outcomes:?}");
    eprintln!(
        "forged bytes: import Err {}, load Err {}, loaded {}",
        outcomes[0], outcomes[1], outcomes[2]
    );
}

/// `bytes` with entry `key` of its table replaced by `value` (a forged
/// but well-formed snapshot: its checksum is recomputed).
pub(crate) fn with_entry(bytes: &[u8], key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut kv = weft_kv::MemKvStore::new();
    kv.import_all(&bytes[16..]).unwrap();
    assert!(kv.get(key).is_some(), "the snapshot has entry {key:?}");
    kv.set(key, value);
    let mut out = bytes[..16].to_vec();
    out.extend_from_slice(&kv.export_all());
    with_checksum(out)
}

#[test]
fn huge_declared_lengths_are_refused_without_allocating() {
    let (_, bytes) = small();
    let text_key = [b't', 0, 0, 0, 0];
    for len in [u64::from(u32::MAX), 1 << 60, u64::MAX] {
        let mut value = Vec::new();
        let mut v = len;
        while v >= 0x80 {
            value.push((v as u8) | 0x80);
            v >>= 7;
        }
        value.push(v as u8);
        value.extend_from_slice(&[0x10, b'x']);
        let forged = with_entry(&bytes, &text_key, &value);
        let mut doc = Doc::new();
        doc.import(&forged).unwrap(); // lazy: the text is not read yet
        let names: Vec<String> = doc.text_names().map(str::to_owned).collect();
        // The damaged text reads as empty; loading reports the error.
        assert_eq!(doc.text(&names[0]).to_string(), "");
        assert!(doc.load().is_err());
        assert!(doc.is_lazy());
    }
    // A change table claiming 2^32 - 1 changes.
    let forged = with_entry(&bytes, b"c", &[0, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F]);
    let mut doc = Doc::new();
    doc.import(&forged).unwrap();
    assert!(doc.load().is_err());
}

/// The fuzz model on fixed seeds: random edits, marks and syncs with
/// snapshot round trips and snapshot merges among them, and a network
/// that delays, reorders and duplicates messages, re-sends whole
/// histories, exports from stale, future and unknown-peer versions and
/// delivers damaged bytes; every replica must equal the reference model
/// whenever what it holds changes, and all peers must converge
/// (`run_converge` checks text, deltas, versions, frontiers, every op's
/// id, Lamport timestamp and deps, the pending set and invariants, every
/// snapshot's lazy reads and byte-identical re-export, and everything
/// [`weft_testkit::Checks`] lists).
#[test]
fn random_actions_with_snapshots_converge() {
    use weft_testkit::{random_actions, run_converge, Action};
    let seeds: u64 = 40
        + std::env::var("WEFT_STRESS_SEEDS")
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(0);
    let (mut snapshots, mut network, mut total) = (0, 0, 0);
    for seed in 0..seeds {
        let actions = random_actions(seed, 3000);
        total += actions.len();
        snapshots += actions
            .iter()
            .filter(|a| matches!(a, Action::Snapshot { .. } | Action::SyncSnapshot { .. }))
            .count();
        network += actions
            .iter()
            .filter(|a| {
                matches!(
                    a,
                    Action::Send { .. } | Action::Deliver { .. } | Action::Corrupt { .. }
                )
            })
            .count();
        let run = std::panic::catch_unwind(|| run_converge(seed as u8, &actions));
        assert!(
            run.is_ok(),
            "seed {seed} failed ({} actions)",
            actions.len()
        );
    }
    assert!(
        snapshots > seeds as usize,
        "the seeds exercise snapshots ({snapshots})"
    );
    assert!(
        network > seeds as usize,
        "the seeds exercise the network ({network})"
    );
    eprintln!(
        "{seeds} seeds, {total} actions, {snapshots} snapshot round trips or merges, \
         {network} network sends, deliveries or damaged imports"
    );
}

/// A hand-made snapshot (valid checksum) whose history is one insert run
/// of 2^31 chars, all deleted: a few dozen bytes that name billions of
/// ops. It must load without memory that grows with the op count.
#[test]
fn a_tiny_snapshot_naming_billions_of_ops_loads_in_bounded_memory() {
    let ops: u64 = 1 << 31;
    let peer: u64 = 5;
    let mut meta = Vec::new();
    varint(&mut meta, ops);
    varint(&mut meta, 1);
    meta.extend_from_slice(&peer.to_le_bytes());
    varint(&mut meta, 1);
    varint(&mut meta, 1);
    meta.push(b't');
    for _ in 0..4 {
        varint(&mut meta, 0);
    }
    varint(&mut meta, 1);
    varint(&mut meta, 0);
    varint(&mut meta, ops);
    varint(&mut meta, 1);
    varint(&mut meta, 0);
    varint(&mut meta, ops - 1);
    let mut changes = vec![0];
    for v in [1, 0, 0, ops, 0] {
        varint(&mut changes, v);
    }
    let mut block = vec![0, 1, 0];
    varint(&mut block, ops);
    block.extend_from_slice(&[0, 0]);
    let mut segments = vec![0, 1];
    varint(&mut segments, (ops << 1) | 1);
    segments.push(0);
    let mut w = weft_kv::TableWriter::new();
    w.add(b"c", &changes).unwrap();
    w.add(b"h\0\0\0\0", &block).unwrap();
    w.add(b"m", &meta).unwrap();
    w.add(b"s\0\0\0\0", &segments).unwrap();
    w.add(b"t\0\0\0\0", &[0]).unwrap();
    let mut bytes = b"weft\x01\x02\0\0".to_vec();
    bytes.extend_from_slice(&[0; 8]);
    bytes.extend_from_slice(&w.finish());
    let bytes = with_checksum(bytes);

    let mut doc = Doc::new();
    doc.import(&bytes).unwrap();
    assert_eq!(doc.text("t").to_string(), "");
    doc.load().unwrap();
    doc.text("t").insert(0, "still works").unwrap();
    assert_eq!(doc.text("t").to_string(), "still works");
    doc.assert_invariants();
}

/// Positions on a lazily read text convert (and fail) exactly as on the
/// loaded tree, in every unit, past the end and inside chars.
#[test]
fn lazy_position_conversion_matches_the_tree() {
    use weft::Unit;
    let mut doc = Doc::new();
    doc.text("t").insert(0, "aé😀文b🇫🇷").unwrap();
    let bytes = snapshot(&mut doc);
    let mut lazy = Doc::new();
    lazy.import(&bytes).unwrap();
    let units = [Unit::Char, Unit::Utf8, Unit::Utf16];
    for pos in (0..24).chain([usize::MAX, 1 << 32]) {
        for from in units {
            for to in units {
                let want = doc.text("t").convert_pos(pos, from, to);
                assert_eq!(
                    lazy.text("t").convert_pos(pos, from, to),
                    want,
                    "{pos} {from:?} {to:?}"
                );
                assert!(lazy.is_lazy());
            }
        }
    }
    for start in 0..9 {
        for end in 0..9 {
            let want = doc.text("t").slice(start..end);
            assert_eq!(lazy.text("t").slice(start..end), want, "{start}..{end}");
            let want = doc.text("t").slice_delta(start..end);
            assert_eq!(
                lazy.text("t").slice_delta(start..end),
                want,
                "{start}..{end}"
            );
        }
    }
    assert!(lazy.is_lazy());
}

/// Readers refuse values that claim to expand more than 16x (LZ4) or 8x
/// (deflate), so writers store a value that would raw: a text of one
/// repeated char still round-trips through every snapshot kind.
#[test]
fn a_text_that_compresses_past_the_readers_limit_is_stored_raw() {
    let mut d = Doc::new();
    d.text("t").insert(0, &"a".repeat(200_000)).unwrap();
    d.text("t").delete(50_000, 100_000).unwrap();
    d.commit();
    let frontiers = d.frontiers();
    for mode in [
        ExportMode::Snapshot,
        ExportMode::ShallowSnapshot(&frontiers),
        ExportMode::SnapshotAt(&frontiers),
    ] {
        let bytes = d.export(mode).unwrap();
        assert!(bytes.len() > 100_000 / 16, "{}", bytes.len());
        let mut e = Doc::new();
        e.import(&bytes).unwrap();
        e.load().unwrap();
        assert_eq!(e.text("t").to_string(), d.text("t").to_string());
        e.assert_invariants();
    }
    d.assert_exports_reopen();
}
