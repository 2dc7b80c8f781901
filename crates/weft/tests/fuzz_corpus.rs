//! Replays the committed fuzz corpus and every crash ever found (`fuzz/`)
//! through the same functions the cargo-fuzz targets call, on stable, so
//! `cargo test` checks them on every change.
//!
//! `WEFT_FUZZ_SEED=1 cargo test -p weft --test main fuzz_corpus` (re)writes the
//! hand-made seeds of the `import` corpus: real updates and snapshots,
//! with marks, a pending update, from a document with two texts.

use std::path::{Path, PathBuf};

use weft::{CommitOptions, Doc, EphemeralStore, ExportMode, Side, VersionVector};
use weft_testkit::{
    from_bytes, full, import_target, run_converge, run_import, run_small_decode,
    run_text_vs_string, Action,
};

fn fuzz_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// Every input of `target`: its corpus and its crash artifacts.
fn inputs(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for dir in ["corpus", "artifacts"] {
        let dir = fuzz_dir().join(dir).join(target);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            if path.is_file() {
                let bytes = std::fs::read(&path).expect("readable corpus file");
                out.push((path, bytes));
            }
        }
    }
    out.sort();
    out
}

fn name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[test]
fn converge_corpus() {
    let inputs = inputs("converge");
    assert!(!inputs.is_empty(), "the converge corpus is committed");
    let mut ran = 0;
    for (path, data) in &inputs {
        if let Some((peers, actions)) = from_bytes::<(u8, Vec<Action>)>(data) {
            let r = std::panic::catch_unwind(|| run_converge(peers, &actions));
            assert!(r.is_ok(), "converge failed on {}", name(path));
            ran += 1;
        }
    }
    assert!(ran * 2 >= inputs.len(), "most inputs decode as actions");
}

#[test]
fn text_vs_string_corpus() {
    let inputs = inputs("text_vs_string");
    assert!(!inputs.is_empty(), "the text_vs_string corpus is committed");
    let mut ran = 0;
    for (path, data) in &inputs {
        if let Some(actions) = from_bytes::<Vec<Action>>(data) {
            let r = std::panic::catch_unwind(|| run_text_vs_string(&actions));
            assert!(r.is_ok(), "text_vs_string failed on {}", name(path));
            ran += 1;
        }
    }
    assert!(ran * 2 >= inputs.len(), "most inputs decode as actions");
}

#[test]
fn import_corpus() {
    let inputs = inputs("import");
    assert!(
        inputs.iter().any(|(p, _)| name(p).starts_with("seed-")),
        "the import corpus holds the real-update seeds"
    );
    for (path, data) in inputs {
        let r = std::panic::catch_unwind(|| run_import(&data));
        assert!(r.is_ok(), "import failed on {}", name(&path));
    }
}

/// Real updates and snapshots for the import corpus, so the fuzzer
/// mutates valid structure, not only noise.
fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut target = import_target();
    let mut marked = Doc::new();
    marked.set_peer_id(7).expect("valid id");
    let mut t = marked.text("t");
    t.insert(0, "a😀b文c and more").expect("in bounds");
    t.mark(0..5, "bold", true).expect("in bounds");
    t.mark(2..9, "link", "https://example.com")
        .expect("in bounds");
    t.unmark(1..3, "bold").expect("in bounds");
    t.delete(4, 2).expect("in bounds");
    marked.text("title").insert(0, "T").expect("in bounds");
    let base = marked.version();
    let base_heads = marked.frontiers();
    marked.text("t").insert(0, "new ").expect("in bounds");
    let incremental = marked
        .export(ExportMode::Updates { from: &base })
        .expect("exports do not fail");
    let snapshot = |d: &mut Doc| d.export(ExportMode::Snapshot).expect("exports do not fail");
    let mut committed = Doc::new();
    committed.set_peer_id(8).expect("valid id");
    committed.text("t").insert(0, "ab").expect("in bounds");
    committed.commit_with(CommitOptions::new().message("first").timestamp(-3));
    committed.text("t").insert(2, "c").expect("in bounds");
    committed.commit_with(CommitOptions::new().timestamp(1_764_000_000));
    let mut undone = Doc::new();
    undone.set_peer_id(5).expect("valid id");
    let mut undo = weft::UndoManager::new(&mut undone);
    undone.text("t").insert(0, "abc def").expect("in bounds");
    undone.commit();
    let undo_root = undone.frontiers();
    undone
        .text("t")
        .mark(0..3, "bold", true)
        .expect("in bounds");
    undone.commit();
    undone.text("t").delete(2, 3).expect("in bounds");
    undone.commit();
    for _ in 0..2 {
        undo.undo(&mut undone).expect("undoes");
    }
    undo.redo(&mut undone).expect("redoes");
    vec![
        ("seed-undo-history", full(&undone)),
        ("seed-undo-snapshot", snapshot(&mut undone)),
        (
            // Version 7: cancel runs after the root.
            "seed-undo-shallow",
            undone
                .export(ExportMode::ShallowSnapshot(&undo_root))
                .expect("exports do not fail"),
        ),
        ("seed-commits-history", full(&committed)),
        ("seed-commits-snapshot", snapshot(&mut committed)),
        ("seed-target-history", full(&target)),
        ("seed-marked-history", full(&marked)),
        ("seed-incremental", incremental),
        ("seed-target-snapshot", snapshot(&mut target)),
        ("seed-marked-snapshot", snapshot(&mut marked)),
        ("seed-shallow-revived", {
            // Rooted before deletes of the root's chars: "e" lists them.
            let mut d = Doc::new();
            d.set_peer_id(9).expect("valid id");
            d.text("t").insert(0, "abcdef").expect("in bounds");
            d.text("t").mark(1..4, "bold", true).expect("in bounds");
            let root = d.frontiers();
            d.text("t").delete(2, 3).expect("in bounds");
            d.text("t").insert(0, "x").expect("in bounds");
            d.export(ExportMode::ShallowSnapshot(&root))
                .expect("exports do not fail")
        }),
        ("seed-shallow-compressed", {
            // Big enough that its values are compressed, not stored: the
            // text (LZ4 from the dense compressor), the segments and the
            // deleted text (deflate).
            let mut d = Doc::new();
            d.set_peer_id(11).expect("valid id");
            let line = "the quick brown fox jumps over the lazy dog; ";
            d.text("t").insert(0, &line.repeat(24)).expect("in bounds");
            let root = d.frontiers();
            // Irregular deletes: segments that deflate under the 2x
            // readers take (regular ones compress more, and are stored).
            let mut x = 7u64;
            for i in 0..60 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let (skip, len) = ((x >> 33) % 9, 1 + (x >> 40) % 5);
                d.text("t")
                    .delete(i * 15 + skip as usize, len as usize)
                    .expect("in bounds");
            }
            d.text("t").insert(7, line).expect("in bounds");
            d.export(ExportMode::ShallowSnapshot(&root))
                .expect("exports do not fail")
        }),
        ("seed-maps-embeds-history", full(&maps_embeds(false))),
        (
            "seed-maps-embeds-snapshot",
            snapshot(&mut maps_embeds(false)),
        ),
        ("seed-maps-embeds-shallow", {
            let mut d = maps_embeds(true);
            let root = d.frontiers();
            d.map("m").set("after", 2).expect("writable");
            d.export(ExportMode::ShallowSnapshot(&root))
                .expect("exports do not fail")
        }),
        (
            "seed-marked-shallow",
            marked
                .export(ExportMode::ShallowSnapshot(&base_heads))
                .expect("exports do not fail"),
        ),
    ]
}

/// A document with map writes (sets, a delete, a concurrent write),
/// embeds (one deleted) and block markers (updated by both), written by
/// two peers; `more`: a second map.
fn maps_embeds(more: bool) -> Doc {
    let mut a = Doc::new();
    a.set_peer_id(12).expect("valid id");
    a.text("t").insert(0, "hi there").expect("in bounds");
    a.text("t").insert_embed(2, "img").expect("in bounds");
    a.text("t").insert_embed(0, 7).expect("in bounds");
    a.map("m").set("title", "T").expect("writable");
    a.map("m").set("n", 1).expect("writable");
    a.text("t")
        .split_block(4, [("header", 1)])
        .expect("in bounds");
    a.text("t")
        .split_block(8, [("list", "bullet")])
        .expect("in bounds");
    a.text("u").insert(0, "scratch").expect("in bounds");
    a.map("gone").set("k", 1).expect("writable");
    let mut b = a.fork();
    b.set_peer_id(13).expect("valid id");
    b.map("m").set("n", 2).expect("writable");
    // Deleted containers: a register write each, a text restarted, and
    // edits concurrent to the deletes (kept, hidden).
    a.delete_text("u").expect("a text");
    a.text("u").insert(0, "new").expect("in bounds");
    a.delete_map("gone").expect("a map");
    b.text("u").insert(0, "b:").expect("in bounds");
    b.map("gone").set("k", 2).expect("writable");
    b.text("t")
        .update_block(4, [("header", 2)])
        .expect("a marker");
    a.text("t")
        .update_block(8, [("indent", 1)])
        .expect("a marker");
    a.map("m").delete("title").expect("writable");
    a.text("t").delete(0, 1).expect("in bounds");
    let bytes = b
        .export(ExportMode::Updates { from: &a.version() })
        .expect("exports do not fail");
    a.import(&bytes).expect("a valid update");
    if more {
        a.map("other").set("x", true).expect("writable");
    }
    a
}

/// (Not with the test-only `small-nodes` feature: its smaller snapshot
/// blocks write other, equally valid, bytes.)
#[test]
#[cfg_attr(feature = "small-nodes", ignore = "small blocks write other bytes")]
fn import_seeds_are_current() {
    let dir = fuzz_dir().join("corpus/import");
    for (name, bytes) in seeds() {
        let path = dir.join(name);
        if std::env::var("WEFT_FUZZ_SEED").is_ok() {
            std::fs::create_dir_all(&dir).expect("corpus dir");
            std::fs::write(&path, &bytes).expect("write seed");
        }
        // A seed is a valid update; the committed file is what this
        // build writes (else the seeds are stale: rewrite them).
        run_import(&bytes);
        assert_eq!(std::fs::read(&path).ok(), Some(bytes), "{name} is stale");
    }
}

/// Found by the `import` fuzzer: a snapshot seed mutated (checksum
/// recomputed) into one whose stored order of chars differs from what its
/// history produces. It loads, reads and edits without error; re-importing
/// its history as an update gives the history's order, so the import
/// target no longer requires a snapshot to rebuild identically.
#[test]
fn regression_forged_snapshot_state_differs_from_its_history() {
    let path = fuzz_dir().join("artifacts/import/crash-d4d2e99fb7e01ed888ecf428a1ec5c3d37d51c0e");
    let data = std::fs::read(path).expect("the artifact is committed");
    assert_eq!(data.get(5), Some(&2), "a snapshot");
    run_import(&data);
}

/// Found by the `import` fuzzer: a mutated snapshot (checksum recomputed)
/// whose mark end was glued to chars on both sides. The snapshot loader
/// took it, and the document's own history then failed to import
/// elsewhere (`UnknownId`). The loader now checks the glue side of mark
/// ops as the update importer does, so loading reports the error.
#[test]
fn regression_snapshot_mark_glued_on_both_sides() {
    let path = fuzz_dir().join("artifacts/import/crash-c9397446cae96774d7ac0b1e08178531cf45572b");
    let mut data = std::fs::read(path).expect("the artifact is committed");
    run_import(&data);
    let sum = xxhash_rust::xxh3::xxh3_64(&data[16..]);
    data[8..16].copy_from_slice(&sum.to_le_bytes());
    let mut doc = Doc::new();
    doc.import(&data)
        .expect("lazy: only the header and table are read");
    assert!(
        doc.load().is_err(),
        "the glue is checked when the history loads"
    );
}

/// Valid small messages for the `small_decode` corpus: versions and
/// frontiers of the import target (one its history holds, one it does
/// not), a cursor into it and presence state.
fn small_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut target = import_target();
    let store = EphemeralStore::with_clock(30_000, || 1_000_000);
    store.set("caret", 5);
    store.set("name", "Ada");
    let mut other = VersionVector::new();
    other.set(42, 7);
    let cursor = target.text("t").cursor(3, Side::After).expect("in bounds");
    vec![
        ("seed-version", target.version().encode()),
        ("seed-version-unknown", other.encode()),
        ("seed-frontiers", target.frontiers().encode()),
        ("seed-cursor", cursor.encode()),
        ("seed-presence", store.encode_all()),
    ]
}

#[test]
fn small_decode_corpus_and_seeds() {
    let dir = fuzz_dir().join("corpus/small_decode");
    for (name, bytes) in small_seeds() {
        let path = dir.join(name);
        if std::env::var("WEFT_FUZZ_SEED").is_ok() {
            std::fs::create_dir_all(&dir).expect("corpus dir");
            std::fs::write(&path, &bytes).expect("write seed");
        }
        assert_eq!(std::fs::read(&path).ok(), Some(bytes), "{name} is stale");
    }
    let inputs = inputs("small_decode");
    assert!(inputs.len() >= 5, "the small_decode corpus is committed");
    for (path, data) in inputs {
        let r = std::panic::catch_unwind(|| run_small_decode(&data));
        assert!(r.is_ok(), "small_decode failed on {}", name(&path));
    }
}
