//! Marked texts read straight from a snapshot: format version 5 stores
//! each marked text's styles, so reading one after a lazy import loads
//! nothing. Those reads (texts, deltas, slices in chars and UTF-16,
//! attributes) must equal the reads of the document the snapshot was
//! written from and of a fully loaded copy, and every edit, import and
//! export after them must give what it gives after a full load.

use std::ops::Range;

use traces::Trace;
use weft::{Attributes, Delta, Doc, Error, ExportMode, TextRef, Unit, Value};
use weft_testkit::{doc, full, styled_doc, Rng};

/// What a reader sees of one text.
#[derive(Debug, PartialEq)]
struct Reads {
    string: String,
    delta: Vec<Delta>,
    slices: Vec<Result<Vec<Delta>, Error>>,
    slices_utf16: Vec<Result<Vec<Delta>, Error>>,
    attributes: Vec<Result<Attributes, Error>>,
}

/// Where to read: char ranges, UTF-16 ranges (some inside a surrogate
/// pair: an error either way) and char positions.
struct Probes {
    chars: Vec<Range<usize>>,
    utf16: Vec<Range<usize>>,
    positions: Vec<usize>,
}

impl Probes {
    /// Random places in a text of `len` chars and `len16` UTF-16 units,
    /// its ends included.
    fn new(seed: u64, len: usize, len16: usize) -> Probes {
        let mut rng = Rng::new(seed);
        let mut range = |n: usize| {
            let a = rng.below(n + 1);
            let b = a + rng.below(n - a + 1);
            a..b
        };
        let mut chars: Vec<Range<usize>> = (0..24).map(|_| range(len)).collect();
        let utf16 = (0..24).map(|_| range(len16)).collect();
        chars.extend([0..len, 0..0, len..len]);
        let positions = (0..24).map(|_| rng.below(len + 1)).collect();
        Probes {
            chars,
            utf16,
            positions,
        }
    }
}

fn reads(view: TextRef<'_>, p: &Probes) -> Reads {
    Reads {
        string: view.to_string(),
        delta: view.to_delta(),
        slices: p
            .chars
            .iter()
            .map(|r| view.slice_delta(r.clone()))
            .collect(),
        slices_utf16: p
            .utf16
            .iter()
            .map(|r| view.slice_delta_utf16(r.clone()))
            .collect(),
        attributes: p.positions.iter().map(|&i| view.attributes_at(i)).collect(),
    }
}

/// Opens `snapshot` (of `source`) twice: reads every text of one through
/// `&Doc` views and edit handles without loading anything, and of the
/// other after loading everything; both must read as `source` does.
/// Returns the two documents, editing as the same peer.
fn check_reads(source: &Doc, snapshot: &[u8], seed: u64) -> (Doc, Doc) {
    assert_eq!(snapshot[4], 6, "snapshots are version 6");
    let mut lazy = doc(99);
    lazy.import(snapshot).unwrap();
    let mut loaded = doc(99);
    loaded.import(snapshot).unwrap();
    loaded.load().unwrap();
    let names: Vec<String> = source.text_names().map(str::to_owned).collect();
    for (k, name) in names.iter().enumerate() {
        let want_view = source.get_text(name).unwrap();
        let p = Probes::new(seed + k as u64, want_view.len(), want_view.len_utf16());
        let want = reads(want_view, &p);
        assert_eq!(
            reads(lazy.get_text(name).unwrap(), &p),
            want,
            "{name}: view"
        );
        assert_eq!(reads(lazy.text(name).view(), &p), want, "{name}: handle");
        assert_eq!(reads(loaded.get_text(name).unwrap(), &p), want, "{name}");
    }
    assert!(lazy.is_lazy(), "the reads loaded the history");
    (lazy, loaded)
}

/// The same edits, local and remote, on a document that read its marked
/// texts from the snapshot and one that loaded everything first: the
/// same texts, histories and exports.
fn check_edits(mut lazy: Doc, mut loaded: Doc, name: &str) {
    let mut remote = loaded.fork();
    remote.set_peer_id(98).unwrap();
    let len = remote.text(name).len();
    remote.text(name).insert(len / 3, "remote ✓").unwrap();
    remote
        .text(name)
        .mark(0..len / 2 + 1, "italic", true)
        .unwrap();
    let update = remote
        .export(ExportMode::Updates {
            from: &loaded.version(),
        })
        .unwrap();
    for d in [&mut lazy, &mut loaded] {
        let mut t = d.text(name);
        let len = t.len();
        t.insert(len / 2, "local😀").unwrap();
        t.mark(len / 4..len / 2 + 3, "bold", Value::Null).unwrap();
        t.mark(len / 2..len / 2 + 5, "link", "https://example.com")
            .unwrap();
        if len > 10 {
            t.delete(3, 4).unwrap();
        }
        d.commit();
        d.import(&update).unwrap();
        d.assert_invariants();
    }
    assert_eq!(lazy.text(name).to_delta(), loaded.text(name).to_delta());
    assert_eq!(lazy.version(), loaded.version());
    assert_eq!(lazy.history_runs().unwrap(), loaded.history_runs().unwrap());
    assert_eq!(
        lazy.export(ExportMode::Snapshot).unwrap(),
        loaded.export(ExportMode::Snapshot).unwrap()
    );
    // The whole history (of a shallow document: its snapshot).
    assert_eq!(full(&lazy), full(&loaded));
}

/// B4 (the automerge-paper trace) with a bold mark over a random tenth
/// of the text every 1,000 patches, an unmark, links and comments with
/// keys of their own (overlapping), as `replay --rich` marks it.
fn marked_b4() -> Doc {
    let trace = Trace::sequential("automerge-paper");
    let mut d = doc(1);
    let mut text = d.text("t");
    let mut rng = Rng::new(31);
    for (i, p) in trace.patches().enumerate() {
        if p.del > 0 {
            text.delete(p.pos, p.del).unwrap();
        }
        if !p.ins.is_empty() {
            text.insert(p.pos, &p.ins).unwrap();
        }
        if i % 1000 == 999 {
            let len = text.len();
            let span = (len / 10).max(1);
            let start = rng.below(len - span + 1);
            let range = start..start + span;
            match (i / 1000) % 7 {
                0 => text.unmark(range, "bold").unwrap(),
                1 => text.mark(range, "link", format!("#{i}")).unwrap(),
                2 => text.mark(range, &format!("comment:{i}"), true).unwrap(),
                _ => text.mark(range, "bold", true).unwrap(),
            }
        }
    }
    assert_eq!(text.to_string(), trace.end_content);
    d
}

#[test]
fn marked_b4_reads_from_its_snapshot_as_after_a_full_load() {
    let source = marked_b4();
    assert!(source.get_text("t").unwrap().to_delta().len() > 20);
    let snapshot = source.export(ExportMode::Snapshot).unwrap();
    let (lazy, loaded) = check_reads(&source, &snapshot, 1);
    check_edits(lazy, loaded, "t");
}

/// Three peers typing (emoji and CJK), deleting, marking and unmarking
/// two texts (keys of every expand rule, overlapping comments) and
/// syncing at random; returns peer 0 synced with the others.
fn random_marked_doc(seed: u64, steps: usize) -> Doc {
    let mut rng = Rng::new(seed);
    let mut docs: Vec<Doc> = (1..=3).map(styled_doc).collect();
    for _ in 0..steps {
        let i = rng.below(3);
        if rng.chance(15) {
            let j = (i + 1 + rng.below(2)) % 3;
            let bytes = docs[j]
                .export(ExportMode::Updates {
                    from: &docs[i].version(),
                })
                .unwrap();
            docs[i].import(&bytes).unwrap();
            continue;
        }
        let mut t = docs[i].text(["t", "t", "u"][rng.below(3)]);
        let len = t.len();
        match rng.below(10) {
            0..=4 => t.insert(rng.below(len + 1), &rng.text(5)).unwrap(),
            5..=6 if len > 0 => {
                let pos = rng.below(len);
                t.delete(pos, 1 + rng.below((len - pos).min(4))).unwrap()
            }
            _ if len > 0 => {
                let start = rng.below(len);
                let range = start..start + 1 + rng.below(len - start);
                let key = ["bold", "after", "before", "both", "none", "link"][rng.below(6)];
                let key = if rng.chance(10) {
                    format!("comment:{}", rng.below(5))
                } else {
                    key.to_owned()
                };
                let value = match rng.below(5) {
                    0 => Value::Null,
                    1 => Value::from(rng.below(3) as i64),
                    _ => Value::Bool(true),
                };
                t.mark(range, &key, value).unwrap();
            }
            _ => {}
        }
    }
    let [mut a, b, c] = <[Doc; 3]>::try_from(docs).ok().unwrap();
    for other in [&b, &c] {
        let bytes = other
            .export(ExportMode::Updates { from: &a.version() })
            .unwrap();
        a.import(&bytes).unwrap();
    }
    a
}

#[test]
fn random_marked_docs_read_from_their_snapshots_as_after_a_full_load() {
    for seed in 0..16 {
        let source = &random_marked_doc(seed, 250);
        let snapshot = source.export(ExportMode::Snapshot).unwrap();
        let (lazy, loaded) = check_reads(source, &snapshot, seed);
        check_edits(lazy, loaded, "t");
        // A shallow snapshot stores the same styles.
        let mut shallow = doc(97);
        shallow
            .import(
                &source
                    .export(ExportMode::ShallowSnapshot(&source.frontiers()))
                    .unwrap(),
            )
            .unwrap();
        let bytes = shallow.export(ExportMode::Snapshot).unwrap();
        let (lazy, loaded) = check_reads(source, &bytes, seed + 100);
        check_edits(lazy, loaded, "t");
    }
}

/// A text read before its first edit: the edit loads the history and
/// builds the tree, and goes on from the same state.
#[test]
fn a_marked_text_edited_after_reading_it_from_a_snapshot_loads_first() {
    let mut source = doc(1);
    let mut t = source.text("t");
    t.insert(0, "Hello wörld 😀 again").unwrap();
    t.mark(0..5, "bold", true).unwrap();
    t.mark(3..12, "link", "x").unwrap();
    t.delete(1, 2).unwrap();
    t.unmark(2..4, "bold").unwrap();
    source.text("plain").insert(0, "no marks").unwrap();
    let snapshot = source.export(ExportMode::Snapshot).unwrap();
    let mut d = doc(1);
    d.import(&snapshot).unwrap();
    let before = d.text("t").to_delta();
    assert_eq!(before, source.text("t").to_delta());
    assert!(d.is_lazy());
    d.text("t").insert(2, "é").unwrap();
    source.text("t").insert(2, "é").unwrap();
    assert_eq!(d.text("t").to_delta(), source.text("t").to_delta());
    assert_eq!(d.history_runs().unwrap(), source.history_runs().unwrap());
    d.assert_invariants();
}

/// Version 4 snapshots (no stored styles) still read a marked text, from
/// the history, as version 5 reads it from its styles; and a version
/// byte that does not match the styles entries is refused.
#[test]
fn version_4_reads_marks_from_the_history_and_versions_must_match_styles() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let v4 = std::fs::read(dir.join("rich.v4.snapshot")).unwrap();
    let v5 = std::fs::read(dir.join("rich.v5.snapshot")).unwrap();
    let (mut old, mut new) = (Doc::new(), Doc::new());
    old.import(&v4).unwrap();
    new.import(&v5).unwrap();
    assert_eq!(
        old.get_text("body").unwrap().to_delta(),
        new.get_text("body").unwrap().to_delta()
    );
    assert!(!old.is_lazy(), "version 4: the history loaded");
    assert!(new.is_lazy(), "version 5: read from the styles");
    let mut relabelled = v5.clone();
    relabelled[4] = 4;
    assert!(matches!(
        Doc::new().import(&relabelled),
        Err(Error::Inconsistent { .. })
    ));
    let mut plain = doc(1);
    plain.text("t").insert(0, "no marks").unwrap();
    let mut relabelled = plain.export(ExportMode::Snapshot).unwrap();
    assert_eq!(relabelled[4], 6, "every snapshot: version 6");
    relabelled[4] = 5;
    assert!(matches!(
        Doc::new().import(&relabelled),
        Err(Error::Inconsistent { .. })
    ));
}

/// The stored styles read in UTF-16 as the tree does, around surrogate
/// pairs.
#[test]
fn stored_styles_count_utf16_as_the_tree_does() {
    let mut source = doc(1);
    let mut t = source.text("t");
    t.insert(0, "😀a😀b文c😀").unwrap();
    t.mark(1..4, "bold", true).unwrap();
    t.mark(0..2, "em", 1).unwrap();
    let snapshot = source.export(ExportMode::Snapshot).unwrap();
    let mut d = Doc::new();
    d.import(&snapshot).unwrap();
    let (view, want) = (d.get_text("t").unwrap(), source.get_text("t").unwrap());
    for a in 0..=want.len_utf16() {
        for b in a..=want.len_utf16() {
            assert_eq!(
                view.slice_delta_in(a..b, Unit::Utf16),
                want.slice_delta_in(a..b, Unit::Utf16),
                "{a}..{b}"
            );
        }
    }
    assert!(d.is_lazy());
}

/// Stored styles that differ from what the history gives (a body forged
/// with a recomputed checksum) read as stored, but the text's tree is
/// never built from them: loading checks them and refuses.
#[test]
fn forged_stored_styles_are_refused_when_the_text_loads() {
    let mut source = doc(1);
    source.text("t").insert(0, "Hello world").unwrap();
    source.text("t").mark(0..5, "bold", true).unwrap();
    let mut bytes = source.export(ExportMode::Snapshot).unwrap();
    // The "a" value, stored: one span, from char 0, 5 chars, "bold",
    // true.
    let span = [0, 1, 0, 5, 4, b'b', b'o', b'l', b'd', 2];
    let at = bytes.windows(span.len()).position(|w| w == span).unwrap();
    bytes[at + 3] = 3;
    let sum = xxhash_rust::xxh3::xxh3_64(&bytes[16..]);
    bytes[8..16].copy_from_slice(&sum.to_le_bytes());
    let mut d = Doc::new();
    d.import(&bytes).unwrap();
    assert_eq!(
        d.get_text("t").unwrap().to_delta(),
        vec![
            Delta::insert_with("Hel", [("bold", true)]),
            Delta::insert("lo world")
        ]
    );
    assert!(matches!(
        d.load(),
        Err(Error::Inconsistent {
            what: "snapshot styles"
        })
    ));
    assert!(d.text("t").insert(0, "x").is_err());
}
