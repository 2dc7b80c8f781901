//! Block markers: splitting, updating and joining blocks, through edits,
//! deltas (Quill's line formats), events, undo, sync, snapshots and
//! history, and concurrent edits at and on blocks under both peer orders.

#![expect(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "tests fail loudly on a broken assumption"
)]

use weft::{Attributes, Delta, Doc, Error, ExportMode, UndoManager, Unit, Value};
use weft_testkit::{doc, exchange, full, sync};
use weft_testkit::{Action, Mirror, Random};

fn delta(d: &Doc) -> Vec<Delta> {
    d.get_text("t").map(|t| t.to_delta()).unwrap_or_default()
}

fn attrs<const N: usize>(kv: [(&str, Value); N]) -> Attributes {
    kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

fn heading(level: i64) -> Attributes {
    attrs([("header", level.into())])
}

/// "Title" as a heading, then "body".
fn titled(peer: u64) -> Doc {
    let mut d = doc(peer);
    let mut t = d.text("t");
    t.insert(0, "Titlebody").unwrap();
    t.split_block(5, heading(1)).unwrap();
    d.commit();
    d
}

#[test]
fn a_block_marker_is_one_position_ending_its_block() {
    let mut d = titled(1);
    let mut t = d.text("t");
    assert_eq!(t.to_string(), "Title\u{FFFC}body");
    assert_eq!((t.len(), t.len_utf16(), t.len_utf8()), (10, 10, 12));
    assert_eq!(
        t.to_delta(),
        vec![
            Delta::insert("Title"),
            Delta::block(heading(1)),
            Delta::insert("body")
        ]
    );
    assert_eq!(t.block_at(5).unwrap(), Some(heading(1)));
    assert_eq!(t.block_at(4).unwrap(), None);
    assert!(matches!(t.block_at(10), Err(Error::OutOfBounds { .. })));
    let blocks = t.blocks();
    assert_eq!(blocks.len(), 2);
    assert_eq!(
        (
            blocks[0].range.clone(),
            blocks[0].marker,
            &blocks[0].attributes
        ),
        (0..5, Some(5), &heading(1))
    );
    assert_eq!(blocks[0].content, vec![Delta::insert("Title")]);
    assert_eq!((blocks[1].range.clone(), blocks[1].marker), (6..10, None));

    // Per key: set, change, remove; equal values make no op.
    t.update_block(5, [("align", "center")]).unwrap();
    t.update_block(5, [("header", 2)]).unwrap();
    let v = d.version();
    d.text("t").update_block(5, [("header", 2)]).unwrap();
    assert_eq!(d.version(), v, "an equal value makes no op");
    assert_eq!(
        d.text("t").block_at(5).unwrap(),
        Some(attrs([("align", "center".into()), ("header", 2.into())]))
    );
    d.text("t")
        .update_block(5, [("align", Value::Null)])
        .unwrap();
    assert_eq!(d.text("t").block_at(5).unwrap(), Some(heading(2)));

    // Block attributes never style text, and marks never show on markers.
    let mut t = d.text("t");
    t.mark(0..10, "bold", true).unwrap();
    t.insert(5, "!").unwrap(); // at the end of the heading
    t.insert(7, "?").unwrap(); // at the start of the body
    assert_eq!(
        t.to_delta(),
        vec![
            Delta::insert_with("Title!", [("bold", true)]),
            Delta::block(heading(2)),
            Delta::insert_with("?body", [("bold", true)]),
        ]
    );
    // Errors.
    assert!(matches!(
        t.update_block(0, [("a", 1)]),
        Err(Error::NotABlock { pos: 0 })
    ));
    assert!(matches!(t.join_block(1), Err(Error::NotABlock { pos: 1 })));
    assert!(matches!(
        t.update_block(99, [("a", 1)]),
        Err(Error::OutOfBounds { .. })
    ));
    assert!(matches!(
        t.split_block(99, heading(1)),
        Err(Error::OutOfBounds { .. })
    ));
    assert!(matches!(
        t.mark(0..1, "\u{1}header", 1),
        Err(Error::ReservedKey(_))
    ));
    // Joining: the marker goes, the next block keeps its (no) attributes.
    t.join_block(6).unwrap();
    assert_eq!(t.to_string(), "Title!?body");
    assert_eq!(t.blocks().len(), 1);
    assert!(t.blocks()[0].attributes.is_empty());
    // A typed U+FFFC is text.
    t.insert(0, "\u{FFFC}").unwrap();
    assert_eq!(t.block_at(0).unwrap(), None);
}

/// Text typed where another peer splits a block, at the same moment,
/// stays in the block it was typed in (before the marker) whichever peer
/// has the lower id; at the start of the next block it stays there.
#[test]
fn typing_at_a_block_edge_is_independent_of_peer_order() {
    for (pa, pb) in [(1, 2), (2, 1)] {
        let mut a = doc(pa);
        a.text("t").insert(0, "onetwo").unwrap();
        a.commit();
        let mut b = doc(pb);
        sync(&mut b, &a);
        // A splits at 3; B types at 3 and at the end, concurrently.
        a.text("t").split_block(3, heading(1)).unwrap();
        b.text("t").insert(3, "X").unwrap();
        b.text("t").insert(7, "Y").unwrap();
        a.text("t").split_block(7, [("list", "bullet")]).unwrap();
        a.commit();
        b.commit();
        exchange(&mut a, &mut b, true);
        assert_eq!(delta(&a), delta(&b), "peers {pa}, {pb}");
        assert_eq!(
            delta(&a),
            vec![
                Delta::insert("oneX"),
                Delta::block(heading(1)),
                Delta::insert("twoY"),
                Delta::block([("list", "bullet")]),
            ],
            "peers {pa}, {pb}"
        );

        // Both split at the same place: two markers, one empty block
        // between them, the same on both.
        a.text("t").split_block(2, heading(3)).unwrap();
        b.text("t").split_block(2, heading(4)).unwrap();
        a.commit();
        b.commit();
        exchange(&mut a, &mut b, true);
        assert_eq!(delta(&a), delta(&b));
        assert_eq!(a.text("t").blocks().len(), 4);
    }
}

#[test]
fn concurrent_updates_joins_and_retyping_of_one_block_converge() {
    for (pa, pb) in [(1, 2), (2, 1)] {
        let mut a = titled(pa);
        let mut b = doc(pb);
        sync(&mut b, &a);
        // Same key: last writer by (Lamport, peer); other keys: both.
        a.text("t").update_block(5, [("header", 2)]).unwrap();
        // (B's header has A's Lamport time: the peer decides.)
        b.text("t").update_block(5, [("header", 3)]).unwrap();
        b.text("t").update_block(5, [("align", "right")]).unwrap();
        a.commit();
        b.commit();
        exchange(&mut a, &mut b, true);
        assert_eq!(delta(&a), delta(&b));
        let winner = if pa > pb { 2 } else { 3 };
        assert_eq!(
            a.text("t").block_at(5).unwrap(),
            Some(attrs([
                ("align", "right".into()),
                ("header", winner.into())
            ]))
        );

        // A heading becomes a list item while the other peer types in it.
        a.text("t")
            .update_block(5, [("header", Value::Null), ("list", "ordered".into())])
            .unwrap();
        b.text("t").insert(2, "--").unwrap();
        b.text("t").insert(7, "!").unwrap();
        a.commit();
        b.commit();
        exchange(&mut a, &mut b, true);
        assert_eq!(delta(&a), delta(&b));
        assert_eq!(
            delta(&a),
            vec![
                Delta::insert("Ti--tle!"),
                Delta::block([("align", "right"), ("list", "ordered")]),
                Delta::insert("body"),
            ]
        );

        // One joins the block while the other updates it: joined (the
        // update names a deleted marker and shows nowhere).
        a.text("t").join_block(8).unwrap();
        b.text("t").update_block(8, [("header", 1)]).unwrap();
        b.text("t").split_block(10, heading(2)).unwrap();
        a.commit();
        b.commit();
        exchange(&mut a, &mut b, true);
        assert_eq!(delta(&a), delta(&b));
        assert_eq!(
            delta(&a),
            vec![
                Delta::insert("Ti--tle!b"),
                Delta::block(heading(2)),
                Delta::insert("ody"),
            ]
        );
        // Both join the same block: one marker deleted twice.
        a.text("t").join_block(9).unwrap();
        b.text("t").join_block(9).unwrap();
        exchange(&mut a, &mut b, true);
        assert_eq!(delta(&a), vec![Delta::insert("Ti--tle!body")]);
        assert_eq!(delta(&a), delta(&b));
    }
}

#[test]
fn events_and_undo_carry_blocks() {
    let mut a = doc(1);
    let mirrors = Mirror::attach(&mut a);
    let check = |a: &Doc| mirrors.check(a, &"local");
    let mut undo = UndoManager::new(&mut a);
    a.text("t").insert(0, "héllo wörld").unwrap();
    a.commit();
    undo.checkpoint();
    a.text("t").split_block(5, heading(1)).unwrap();
    a.commit();
    undo.checkpoint();
    check(&a);
    a.text("t").update_block(5, [("header", 2)]).unwrap();
    a.commit();
    undo.checkpoint();
    check(&a);
    a.text("t").join_block(5).unwrap();
    a.commit();
    check(&a);
    let split = vec![
        Delta::insert("héllo"),
        Delta::block(heading(2)),
        Delta::insert(" wörld"),
    ];
    undo.undo(&mut a).unwrap().unwrap(); // the join
    assert_eq!(delta(&a), split);
    check(&a);
    undo.undo(&mut a).unwrap().unwrap(); // the update
    assert_eq!(a.text("t").block_at(5).unwrap(), Some(heading(1)));
    check(&a);
    undo.undo(&mut a).unwrap().unwrap(); // the split
    assert_eq!(delta(&a), vec![Delta::insert("héllo wörld")]);
    check(&a);
    undo.redo(&mut a).unwrap().unwrap();
    assert_eq!(a.text("t").block_at(5).unwrap(), Some(heading(1)));
    undo.redo(&mut a).unwrap().unwrap();
    assert_eq!(delta(&a), split);
    check(&a);

    // An import's event shows blocks and their attribute changes.
    let mut b = doc(2);
    sync(&mut b, &a);
    b.text("t").split_block(0, [("list", "bullet")]).unwrap();
    b.text("t").update_block(6, [("align", "center")]).unwrap();
    b.commit();
    a.import(&full(&b)).unwrap();
    check(&a);
    assert_eq!(delta(&a), delta(&b));
    // A style over a marker shows on the text around it, not on it; a
    // marker placed inside a dead mark of a key its attributes also name
    // keeps that attribute (found by an outside attack: both made the
    // local events differ from the text).
    let len = a.text("t").len();
    a.text("t").mark(0..len, "bold", true).unwrap();
    a.commit();
    check(&a);
    undo.checkpoint();
    undo.undo(&mut a).unwrap().unwrap();
    assert_eq!(delta(&a), delta(&b));
    check(&a);
    a.text("t").insert(0, "xyz").unwrap();
    a.text("t").mark(1..2, "both", true).unwrap();
    a.text("t").delete(1, 1).unwrap();
    a.text("t").split_block(1, [("both", true)]).unwrap();
    a.commit();
    check(&a);
    assert_eq!(
        a.text("t").block_at(1).unwrap(),
        Some(attrs([("both", true.into())]))
    );
}

#[test]
fn blocks_sync_through_updates_snapshots_and_history() {
    let mut a = titled(1);
    let v1 = a.frontiers();
    a.text("t").update_block(5, [("header", 2)]).unwrap();
    a.text("t").split_block(10, [("list", "bullet")]).unwrap();
    a.commit();
    let want = delta(&a);

    let mut b = doc(2);
    b.import(&full(&a)).unwrap();
    assert_eq!(delta(&b), want);
    let snap = a.export(ExportMode::Snapshot).unwrap();
    let mut c = Doc::new();
    c.import(&snap).unwrap();
    assert_eq!(delta(&c), want);
    assert_eq!(c.export(ExportMode::Snapshot).unwrap(), snap);
    // A snapshot into a live document with its own edits.
    let mut live = doc(3);
    live.text("t").insert(0, "L").unwrap();
    live.import(&snap).unwrap();
    sync(&mut b, &live);
    assert_eq!(delta(&live), delta(&b));

    // Old versions.
    let old = a.fork_at(&v1).unwrap();
    assert_eq!(
        old.get_text("t").unwrap().block_at(5).unwrap(),
        Some(heading(1))
    );
    let mut at = Doc::new();
    at.import(&a.export(ExportMode::SnapshotAt(&v1)).unwrap())
        .unwrap();
    assert_eq!(delta(&at), delta(&old));
    let diff = a.diff(&v1, &a.frontiers()).unwrap();
    let mut mirror = delta(&old);
    diff[0].apply_to(&mut mirror, Unit::Char).unwrap();
    assert_eq!(mirror, want);
    for root in [v1.clone(), a.frontiers()] {
        let mut s = Doc::new();
        s.import(&a.export(ExportMode::ShallowSnapshot(&root)).unwrap())
            .unwrap();
        assert_eq!(delta(&s), delta(&a));
        s.text("t").update_block(5, [("header", 4)]).unwrap();
        a.import(
            &s.export(ExportMode::Updates { from: &a.version() })
                .unwrap(),
        )
        .unwrap();
        assert_eq!(delta(&s), delta(&a));
    }
    a.checkout(&v1).unwrap();
    assert_eq!(delta(&a), delta(&old));
    a.checkout_to_latest().unwrap();
    a.revert_to(&v1).unwrap();
    assert_eq!(delta(&a), delta(&old));
}

#[test]
fn apply_delta_maps_quill_line_formats_to_blocks() {
    let mut d = doc(1);
    let mut t = d.text("t");
    t.apply_delta(&[
        Delta::insert("Title"),
        Delta::block(heading(1)),
        Delta::insert_with("bold", [("bold", true)]),
        Delta::insert(" text"),
        Delta::block(Attributes::new()),
    ])
    .unwrap();
    assert_eq!(t.to_string(), "Title\u{FFFC}bold text\u{FFFC}");
    assert_eq!(t.block_at(15).unwrap(), Some(Attributes::new()));
    // A retain's attributes: block attributes on markers, styles on text.
    t.apply_delta(&[
        Delta::retain(5),
        Delta::retain_with(1, [("header", 2)]),
        Delta::retain_with(10, [("italic", true)]),
    ])
    .unwrap();
    assert_eq!(
        t.to_delta(),
        vec![
            Delta::insert("Title"),
            Delta::block(heading(2)),
            Delta::insert_with("bold", [("bold", true), ("italic", true)]),
            Delta::insert_with(" text", [("italic", true)]),
            Delta::block([("italic", true)]),
        ]
    );
    let copy = t.to_delta();
    let mut e = doc(2);
    e.text("t").apply_delta(&copy).unwrap();
    assert_eq!(delta(&e), copy);
}

#[test]
fn quill_json_with_line_formats_and_embeds_round_trips() {
    let json = r#"[{"insert":"Weft"},{"insert":"\n","attributes":{"header":1}},{"insert":"fast","attributes":{"bold":true}},{"insert":" and "},{"insert":{"image":"cat.png"}},{"insert":"\n","attributes":{"list":"bullet"}},{"insert":"end"},{"insert":"\n","attributes":{}}]"#;
    let ops: Vec<Delta> = serde_json::from_str(json).unwrap();
    assert_eq!(ops[1], Delta::block(heading(1)));
    assert_eq!(ops[7], Delta::block(Attributes::new()));
    let mut d = doc(1);
    d.text("t").apply_delta(&ops).unwrap();
    assert_eq!(d.text("t").blocks().len(), 3);
    assert_eq!(
        d.text("t").blocks()[1].attributes,
        attrs([("list", "bullet".into())])
    );
    let back = serde_json::to_string(&d.text("t").to_delta()).unwrap();
    assert_eq!(back, json);
    // A plain "\n" is text, as ever.
    let plain: Vec<Delta> = serde_json::from_str(r#"[{"insert":"a\nb\n"}]"#).unwrap();
    assert_eq!(plain, vec![Delta::insert("a\nb\n")]);
    // Bad input: an error, not a panic.
    for bad in [
        r#"[{"insert":"\n","attributes":3}]"#,
        r#"[{"insert":"\n","attributes":{"header":1}"#,
        r#"[{"insert":"\n","attributes":[1]}]"#,
    ] {
        assert!(serde_json::from_str::<Vec<Delta>>(bad).is_err(), "{bad}");
    }
    // Maps of maps are kept whole (a nesting path, as Automerge's
    // `parents`).
    let nested = Delta::block([(
        "parents",
        Value::List(vec![Value::from("ordered"), Value::from("bullet")]),
    )]);
    let s = serde_json::to_string(std::slice::from_ref(&nested)).unwrap();
    assert_eq!(
        serde_json::from_str::<Vec<Delta>>(&s).unwrap(),
        vec![nested]
    );
}

/// Three peers type, mark, split, update and join blocks; their exports
/// sit in a network and arrive late, out of order, twice, stale, whole,
/// as snapshots into live documents and as range exports. Whenever what
/// a replica holds changes it equals its reference model (which orders
/// chars before markers and keeps block attributes per key by (Lamport,
/// peer)); once all is delivered every replica holds the same delta,
/// blocks (covering the text), version and history, and event-fed
/// mirrors (chars, UTF-16, UTF-8) equal the text.
#[test]
fn random_blocks_converge_under_every_delivery_and_match_the_model() {
    fn blocks(a: &mut Action) -> bool {
        match a {
            Action::Delete { len, .. } => {
                *len %= 4;
                true
            }
            Action::Insert { .. }
            | Action::Block { .. }
            | Action::Mark { .. }
            | Action::Commit { .. }
            | Action::Send { .. }
            | Action::Deliver { .. } => true,
            _ => false,
        }
    }
    Random {
        seeds: 30,
        keep: blocks,
        ..Random::new(200)
    }
    .run(0xb10c);
}

/// A value nested `n` levels deep.
fn nested(n: usize) -> Value {
    let mut v = Value::from(1);
    for _ in 0..n {
        v = Value::List(vec![v]);
    }
    v
}

/// Found by an outside attack: bad attributes were refused halfway
/// through `apply_delta` (after earlier steps had applied), a huge retain
/// over a text with markers overflowed, and values too deep for any peer
/// to read were accepted (and broke every later export).
#[test]
fn bad_input_is_refused_before_anything_changes() {
    let mut d = titled(1);
    let before = (delta(&d), d.version());
    let mut t = d.text("t");
    for bad in [
        vec![
            Delta::insert("XY"),
            Delta::retain_with(2, [("\u{1}header", 1)]),
        ],
        vec![Delta::insert_with("XY", [("\u{1}header", 1)])],
        vec![Delta::insert("XY"), Delta::block([("\u{1}x", 1)])],
        vec![Delta::insert("XY"), Delta::block([("deep", nested(40))])],
        vec![Delta::insert("XY"), Delta::embed(nested(40))],
        vec![
            Delta::retain(1),
            Delta::retain_with(usize::MAX, [("header", 1)]),
        ],
    ] {
        assert!(t.apply_delta(&bad).is_err(), "{bad:?}");
    }
    assert!(matches!(
        t.split_block(0, [("\u{1}x", 1)]),
        Err(Error::ReservedKey(_))
    ));
    assert!(matches!(
        t.update_block(5, [("\u{1}x", 1)]),
        Err(Error::ReservedKey(_))
    ));
    for r in [
        t.split_block(0, [("deep", nested(40))]),
        t.update_block(5, [("deep", nested(40))]),
        t.insert_embed(0, nested(40)),
        t.mark(0..2, "bold", nested(40)),
        d.map("m").set("k", nested(40)),
    ] {
        assert!(matches!(r, Err(Error::ValueTooDeep { max: 32 })), "{r:?}");
    }
    assert_eq!((delta(&d), d.version()), before);
    // As deep as exports carry: accepted, and it syncs.
    d.text("t").update_block(5, [("deep", nested(32))]).unwrap();
    d.text("t").split_block(0, [("deep", nested(32))]).unwrap();
    d.text("t").mark(1..3, "bold", nested(32)).unwrap();
    d.map("m").set("k", nested(32)).unwrap();
    let mut e = doc(2);
    sync(&mut e, &d);
    assert_eq!(delta(&e), delta(&d));
    let mut f = Doc::new();
    f.import(&d.export(ExportMode::Snapshot).unwrap()).unwrap();
    assert_eq!(delta(&f), delta(&d));
    // What the API took, apply_delta takes too: copies, undo (found by a
    // second attack: a style at the limit made undo fail for good).
    let mut c = doc(3);
    c.text("t").apply_delta(&delta(&d)).unwrap();
    assert_eq!(delta(&c), delta(&d));
    let mut undo = UndoManager::new(&mut d);
    let before = delta(&d);
    d.text("t").delete(0, 4).unwrap();
    d.commit();
    undo.checkpoint();
    undo.undo(&mut d).unwrap().unwrap();
    assert_eq!(delta(&d), before);
}

/// A block marker typed where a both-ways mark's text was all deleted
/// left that mark on the list of marks to unmark after an insert (only
/// chars and embeds took it), so the next insert, even an empty one at
/// the end, asked for the styles past the end: `unreachable!` (issue 25).
#[test]
fn split_block_where_a_both_ways_mark_died_leaves_no_mark_to_unmark() {
    for embed in [false, true] {
        let mut d = doc(1);
        let mut config = weft::StyleConfig::default();
        config.set("both", weft::ExpandType::Both);
        d.config_text_style(config);
        let mut t = d.text("t");
        t.insert(0, "ab").unwrap();
        t.mark(0..1, "both", true).unwrap();
        t.delete(0, 1).unwrap();
        if embed {
            t.insert_embed(0, "img").unwrap();
        } else {
            t.split_block(0, heading(1)).unwrap();
        }
        let len = t.len();
        t.insert(len, "").unwrap();
        t.insert(len, "c").unwrap();
        t.insert(0, "d").unwrap();
        d.commit();
        d.assert_invariants();
        // The dead mark styles nothing: not the marker, not the typing.
        let shown = delta(&d);
        assert!(
            shown.iter().all(|x| !format!("{x:?}").contains("both")),
            "{shown:?}"
        );
        let mut e = doc(2);
        sync(&mut e, &d);
        assert_eq!(delta(&e), shown);
    }
}
