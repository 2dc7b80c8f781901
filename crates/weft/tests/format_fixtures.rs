//! Frozen formats: updates and snapshots committed under
//! `tests/fixtures/` must still import into the documents they were
//! written from, and today's encoder must write them byte for byte, so
//! any change of either format is deliberate. After such a change (and a
//! format version bump where old bytes no longer read), rewrite them with
//! `WEFT_BLESS_FIXTURES=1 cargo test -p weft --test main format_fixtures`.
//!
//! The layouts are specified in `docs/FORMAT.md`: updates in its
//! section 2 (versions 1-5), snapshots in section 4 (versions 1-3 in
//! 4.5, versions 4 to 6 in 4.6, styles (5 on) in 4.7, 6's compressed
//! values in 3.1), shallow snapshots in section 5; its section 10 lists which fixture covers which version and
//! section, and `tests/fixtures/README.md` says the same beside the files.

use std::path::PathBuf;

use weft::{CommitOptions, Doc, ExportMode, Frontiers};
use weft_testkit::history::commit_infos;
use weft_testkit::{doc, full};

/// Two peers' concurrent edits, marks (expanding and not, overlapping
/// comments), an unmark, deletes (forward and backspaces) and non-ASCII text in two texts.
/// Also returns the document as it was before peer 2's edits arrived.
fn rich() -> (Doc, Doc) {
    let mut a = doc(1);
    a.text("body").insert(0, "Hello wörld 😀, 文字").unwrap();
    a.text("title").insert(0, "Title").unwrap();
    a.text("body").mark(0..5, "bold", true).unwrap();
    let mut b = a.fork();
    b.set_peer_id(2).unwrap();
    b.text("body").insert(5, ", dear").unwrap();
    b.text("body")
        .mark(3..9, "link", "https://example.com/ü")
        .unwrap();
    b.text("body").mark(1..4, "comment:7", 7).unwrap();
    a.text("body").insert(0, "« ").unwrap();
    a.text("body").delete(4, 3).unwrap();
    for _ in 0..3 {
        let len = a.text("title").len();
        a.text("title").delete(len - 1, 1).unwrap();
    }
    a.text("body").unmark(2..3, "bold").unwrap();
    a.commit();
    let earlier = a.clone();
    let v = a.version();
    a.import(&b.export(ExportMode::Updates { from: &v }).unwrap())
        .unwrap();
    a.text("body").insert(0, "!").unwrap();
    (a, earlier)
}

/// A document holding a pending update (its snapshot carries it).
fn with_pending() -> Doc {
    let mut a = doc(3);
    a.text("t").insert(0, "ab").unwrap();
    let v = a.version();
    a.text("t").insert(2, "cd").unwrap();
    let later = a.export(ExportMode::Updates { from: &v }).unwrap();
    let mut d = doc(4);
    d.text("t").insert(0, "mine").unwrap();
    d.import(&later).unwrap();
    d
}

/// Commits with messages and timestamps (format version 2), between and
/// around commits without, from two peers.
fn with_commit_infos() -> Doc {
    let mut a = doc(5);
    a.text("t").insert(0, "ab").unwrap();
    a.commit_with(CommitOptions::new().message("Première").timestamp(-5));
    a.text("t").insert(2, "c").unwrap();
    a.commit();
    a.text("t").insert(3, "d").unwrap();
    a.commit_with(CommitOptions::new().timestamp(1_764_000_000));
    let mut b = a.fork();
    b.set_peer_id(6).unwrap();
    b.text("t").mark(0..2, "bold", true).unwrap();
    b.commit_with(CommitOptions::new().message("bold 😀"));
    a.import(
        &b.export(ExportMode::Updates { from: &a.version() })
            .unwrap(),
    )
    .unwrap();
    a
}

/// (file name, the bytes today's encoder writes, the document they hold).
/// Format version 3: map writes (one concurrent), an embed, block markers
/// with attributes updated by both peers, and one joined.
fn document_model() -> Doc {
    let mut a = doc(4);
    a.map("meta").set("title", "Notes").unwrap();
    let mut t = a.text("body");
    t.insert(0, "Title first item second").unwrap();
    t.split_block(5, [("header", 1)]).unwrap();
    t.split_block(17, [("list", "bullet")]).unwrap();
    t.split_block(24, [("list", "bullet")]).unwrap();
    t.insert_embed(
        6,
        weft::Value::Map([("image".to_owned(), "a.png".into())].into()),
    )
    .unwrap();
    a.commit();
    let mut b = a.fork();
    b.set_peer_id(5).unwrap();
    b.text("body").update_block(5, [("header", 2)]).unwrap();
    b.map("meta").set("title", "Trip").unwrap();
    a.text("body").update_block(18, [("indent", 1)]).unwrap();
    a.text("body").join_block(25).unwrap();
    a.commit();
    let v = a.version();
    a.import(&b.export(ExportMode::Updates { from: &v }).unwrap())
        .unwrap();
    a
}

/// Deleted containers: a text deleted and restarted, a map deleted, each
/// edited concurrently by another peer (kept, hidden), and a text deleted
/// by two peers at once (peer 6's, later in Lamport time, wins).
fn deleted_containers() -> Doc {
    let mut a = doc(6);
    a.text("draft").insert(0, "old draft").unwrap();
    a.text("notes").insert(0, "notes").unwrap();
    a.map("old").set("k", 1).unwrap();
    a.commit();
    let mut b = a.fork();
    b.set_peer_id(7).unwrap();
    a.delete_text("draft").unwrap();
    a.text("draft").insert(0, "new draft").unwrap();
    a.delete_map("old").unwrap();
    a.delete_text("notes").unwrap();
    a.text("notes").insert(0, "a's").unwrap();
    b.text("draft").insert(0, "b: ").unwrap();
    b.map("old").set("k", 2).unwrap();
    b.delete_text("notes").unwrap();
    b.text("notes").insert(0, "b's").unwrap();
    a.commit();
    let v = a.version();
    a.import(&b.export(ExportMode::Updates { from: &v }).unwrap())
        .unwrap();
    assert_eq!(a.text("draft").to_string(), "new draft");
    assert_eq!(a.text("notes").to_string(), "a's");
    a
}

/// Undo and redo by an `UndoManager`: cancels of deletes, of a mark and
/// of a cancel, and deletes of typed text by id (docs/FORMAT.md 2.2
/// sub-kind 1, 4.6 kind 6).
fn undone() -> Doc {
    let mut a = doc(6);
    let mut undo = weft::UndoManager::new(&mut a);
    a.text("t").insert(0, "Hello brave world").unwrap();
    a.commit();
    a.text("t").mark(0..5, "bold", true).unwrap();
    a.commit();
    a.text("t").delete(5, 6).unwrap();
    a.commit();
    a.text("t").insert(5, " new").unwrap();
    a.commit();
    for _ in 0..3 {
        undo.undo(&mut a).unwrap().unwrap();
    }
    undo.redo(&mut a).unwrap().unwrap();
    assert_eq!(
        a.text("t").to_delta(),
        vec![
            weft::Delta::insert_with("Hello", [("bold", true)]),
            weft::Delta::insert(" brave world"),
        ]
    );
    a
}

/// A history with undo and redo, and the version a shallow snapshot of
/// it is rooted at: an italic mark undone before the root (cancelled
/// there: key "C"), a delete after it undone and redone (cancel runs
/// after the root), docs/FORMAT.md 5.5.
fn undone_shallow() -> (Doc, Frontiers) {
    let mut a = doc(6);
    let mut undo = weft::UndoManager::new(&mut a);
    a.text("t").insert(0, "Hello brave world").unwrap();
    a.commit();
    a.text("t").mark(0..5, "bold", true).unwrap();
    a.commit();
    a.text("t").mark(6..11, "italic", true).unwrap();
    a.commit();
    undo.undo(&mut a).unwrap().unwrap();
    a.commit();
    let root = a.frontiers();
    a.text("t").delete(5, 6).unwrap();
    a.commit();
    undo.undo(&mut a).unwrap().unwrap();
    a.commit();
    undo.redo(&mut a).unwrap().unwrap();
    a.commit();
    assert_eq!(
        a.text("t").to_delta(),
        vec![
            weft::Delta::insert_with("Hello", [("bold", true)]),
            weft::Delta::insert(" world"),
        ]
    );
    (a, root)
}

/// Prose long enough to compress, typed with corrections: its update has
/// format version 4 (compressed content).
fn prose() -> Doc {
    let mut a = doc(8);
    let line = "The quick brown fox jumps over the lazy dog, and ";
    for i in 0..8 {
        let mut t = a.text("t");
        let len = t.len();
        t.insert(len, line).unwrap();
        t.delete(len + 4, 6).unwrap();
        t.insert(len + 4, ["slow ", "red ", "tired "][i % 3])
            .unwrap();
    }
    a.commit();
    a
}

/// What today's encoder writes: updates of versions 1-3 and 5
/// (docs/FORMAT.md section 2; the version follows from the content, 2.6)
/// and snapshots (4.6, 4.7) and shallow snapshots (section 5) of version
/// 6, whose compressed values name their codec (3.1), or 7 for a shallow
/// snapshot holding cancels (5.5).
fn fixtures() -> Vec<(&'static str, Vec<u8>, Doc)> {
    let model = document_model();
    let deleted = deleted_containers();
    let (rich, earlier) = rich();
    let incremental = rich
        .export(ExportMode::Updates {
            from: &earlier.version(),
        })
        .unwrap();
    let pending = with_pending();
    let commits = with_commit_infos();
    let prose = prose();
    let undone = undone();
    let (undone_shallow, undone_root) = undone_shallow();
    vec![
        (
            "undo-shallow.v7.snapshot",
            undone_shallow
                .export(ExportMode::ShallowSnapshot(&undone_root))
                .unwrap(),
            undone_shallow,
        ),
        ("undo.v5.update", full(&undone), undone.clone()),
        (
            "undo.v6.snapshot",
            undone.export(ExportMode::Snapshot).unwrap(),
            undone,
        ),
        ("prose.v5.update", full(&prose), prose.clone()),
        (
            "prose.v6.snapshot",
            prose.export(ExportMode::Snapshot).unwrap(),
            prose.clone(),
        ),
        ("deleted-containers.update", full(&deleted), deleted.clone()),
        (
            "deleted-containers.v6.snapshot",
            deleted.export(ExportMode::Snapshot).unwrap(),
            deleted.clone(),
        ),
        ("document-model.update", full(&model), model.clone()),
        (
            "document-model.v6.snapshot",
            model.export(ExportMode::Snapshot).unwrap(),
            model.clone(),
        ),
        (
            "commits.update",
            commits
                .export(ExportMode::Updates {
                    from: &Default::default(),
                })
                .unwrap(),
            commits.clone(),
        ),
        (
            "commits.v6.snapshot",
            commits.export(ExportMode::Snapshot).unwrap(),
            commits.clone(),
        ),
        ("rich.update", full(&rich), rich.clone()),
        ("incremental.update", incremental, rich.clone()),
        (
            "rich.v6.snapshot",
            rich.export(ExportMode::Snapshot).unwrap(),
            rich.clone(),
        ),
        (
            "pending.v6.snapshot",
            pending.export(ExportMode::Snapshot).unwrap(),
            pending,
        ),
        (
            // Rooted before peer 2's concurrent edits: the marks started
            // in the root, and history concurrent to it, are kept.
            "rich-shallow.v6.snapshot",
            rich.export(ExportMode::ShallowSnapshot(&earlier.frontiers()))
                .unwrap(),
            rich.clone(),
        ),
    ]
}

/// Exports of older format versions, frozen: they must keep importing
/// into the documents they hold. Snapshots of versions 1-3, written
/// before version 4 (columnar history, deflated deleted text); of version
/// 4 with marks, written before version 5 (stored styles); of versions 4
/// and 5, written before version 6 (compressed values that name their
/// codec); and the version 4 update, written before version 5 (the
/// same). Layouts: docs/FORMAT.md 3.1, 4.5, 4.6 and 4.9 (shallow:
/// section 5).
fn legacy_fixtures() -> Vec<(&'static str, Doc)> {
    let (rich, _) = rich();
    vec![
        ("deleted-containers.snapshot", deleted_containers()),
        ("document-model.snapshot", document_model()),
        ("commits.snapshot", with_commit_infos()),
        ("rich.snapshot", rich.clone()),
        ("pending.snapshot", with_pending()),
        ("rich-shallow.snapshot", rich.clone()),
        // Version 4 with marks (now written as version 5).
        ("commits.v4.snapshot", with_commit_infos()),
        ("document-model.v4.snapshot", document_model()),
        ("rich.v4.snapshot", rich.clone()),
        ("rich-shallow.v4.snapshot", rich.clone()),
        // Versions 4 and 5 (now written as version 6).
        ("prose.update", prose()),
        ("prose.v4.snapshot", prose()),
        ("deleted-containers.v4.snapshot", deleted_containers()),
        ("pending.v4.snapshot", with_pending()),
        ("commits.v5.snapshot", with_commit_infos()),
        ("document-model.v5.snapshot", document_model()),
        ("rich.v5.snapshot", rich.clone()),
        ("rich-shallow.v5.snapshot", rich),
    ]
}

fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// (Not with the test-only `small-nodes` feature: its smaller snapshot
/// blocks write other, equally valid, bytes.)
#[test]
#[cfg_attr(feature = "small-nodes", ignore = "small blocks write other bytes")]
fn fixtures_are_what_the_encoder_writes() {
    for (name, bytes, _) in fixtures() {
        if std::env::var("WEFT_BLESS_FIXTURES").is_ok() {
            std::fs::write(path(name), &bytes).unwrap();
        }
        let stored = std::fs::read(path(name)).unwrap();
        assert!(stored == bytes, "{name}: the format changed");
    }
}

#[test]
fn fixtures_import_into_the_documents_they_hold() {
    let (_, earlier) = rich();
    let current = fixtures().into_iter().map(|(name, _, doc)| (name, doc));
    for (name, mut expected) in current.chain(legacy_fixtures()) {
        let stored = std::fs::read(path(name)).unwrap();
        let mut d = if name == "incremental.update" {
            earlier.clone() // the rest of the history is already there
        } else {
            doc(9)
        };
        d.import(&stored).unwrap();
        d.load().unwrap();
        d.assert_invariants();
        assert_eq!(d.version(), expected.version(), "{name}");
        assert_eq!(d.frontiers(), expected.frontiers(), "{name}");
        assert_eq!(d.pending_spans(), expected.pending_spans(), "{name}");
        assert_eq!(commit_infos(&d), commit_infos(&expected), "{name}");
        // Version 2 only where there are commit infos to carry, 3 where
        // there are maps, embeds or blocks.
        let version = if name.ends_with(".v7.snapshot") {
            7
        } else if name.ends_with(".v6.snapshot") {
            6
        } else if name.ends_with(".v5.snapshot") || name.ends_with(".v5.update") {
            5
        } else if name.starts_with("prose") || name.ends_with(".v4.snapshot") {
            4
        } else if name.starts_with("commits") {
            2
        } else if name.starts_with("document-model") || name.starts_with("deleted") {
            3
        } else {
            1
        };
        assert_eq!(stored[4], version, "{name}: format version");
        assert_eq!(
            d.history_runs().unwrap(),
            expected.history_runs().unwrap(),
            "{name}"
        );
        let names: Vec<String> = expected.text_names().map(str::to_owned).collect();
        assert_eq!(d.text_names().collect::<Vec<_>>(), names, "{name}");
        for n in &names {
            assert_eq!(
                d.text(n).to_delta(),
                expected.text(n).to_delta(),
                "{name} {n}"
            );
        }
        assert_eq!(
            weft_testkit::map_contents(&d),
            weft_testkit::map_contents(&expected),
            "{name}"
        );
    }
}

/// Exports written before they kept deleted text (updates: the inserts a
/// delete of the same update removes carry no text; snapshots: no "d"
/// entry) still import, into the same history and texts (only the
/// versions holding that text lack it). Layouts: docs/FORMAT.md 2.5, 4.7.
#[test]
fn exports_without_deleted_text_still_import() {
    let (rich, _) = rich();
    for name in [
        "rich-deleted-text-left-out.update",
        "rich-deleted-text-left-out.snapshot",
    ] {
        let stored = std::fs::read(path(name)).unwrap();
        let mut d = doc(9);
        d.import(&stored).unwrap();
        d.load().unwrap();
        d.assert_invariants();
        assert_eq!(d.version(), rich.version(), "{name}");
        assert_eq!(d.history_runs().unwrap(), rich.history_runs().unwrap());
        for n in ["body", "title"] {
            assert_eq!(
                d.get_text(n).unwrap().to_delta(),
                rich.get_text(n).unwrap().to_delta(),
                "{name} {n}"
            );
        }
    }
}

/// A document opened from a snapshot shows every version, deleted text
/// included, as the document it was written from does.
#[test]
fn snapshots_show_every_version() {
    let (mut rich, _) = rich();
    for name in [
        "rich.snapshot",
        "rich.v4.snapshot",
        "rich.v5.snapshot",
        "rich.v6.snapshot",
    ] {
        let stored = std::fs::read(path(name)).unwrap();
        show_every_version(&stored, &mut rich);
    }
}

/// Checks that a document opened from snapshot `stored` of `rich` shows
/// each version as `rich` does.
fn show_every_version(stored: &[u8], rich: &mut Doc) {
    let mut d = doc(9);
    d.import(stored).unwrap();
    let changes = rich.changes().unwrap();
    for c in &changes {
        for end in [c.id.counters.start + 1, c.id.counters.end] {
            let v: weft::Frontiers = [weft::OpId::new(c.id.peer, end - 1)].into_iter().collect();
            let want = rich.fork_at(&v).unwrap();
            let got = d.fork_at(&v).unwrap();
            for n in ["body", "title"] {
                let delta = |x: &Doc| x.get_text(n).map(|t| t.to_delta()).unwrap_or_default();
                assert_eq!(delta(&got), delta(&want), "{n} at {v:?}");
            }
        }
    }
    rich.commit();
}
