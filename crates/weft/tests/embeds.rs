//! Embeds: one position of a text holding a value, through edits, marks,
//! deltas (Quill's JSON), events, undo, sync, snapshots and history.

#![expect(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "tests fail loudly on a broken assumption"
)]

use std::collections::BTreeMap;

use weft::{Delta, Doc, ExportMode, Side, UndoManager, Unit, Value};
use weft_testkit::{doc, full, sync};
use weft_testkit::{Action, Mirror, Random};

fn image(name: &str) -> Value {
    Value::Map(BTreeMap::from([("image".to_owned(), Value::from(name))]))
}

fn delta(d: &Doc) -> Vec<Delta> {
    d.get_text("t").map(|t| t.to_delta()).unwrap_or_default()
}

#[test]
fn an_embed_is_one_position_shown_as_u_fffc() {
    let mut d = doc(1);
    let mut t = d.text("t");
    t.insert(0, "ab😀").unwrap();
    t.insert_embed(1, image("a.png")).unwrap();
    t.insert_embed(0, "@ann").unwrap();
    assert_eq!(t.to_string(), "\u{FFFC}a\u{FFFC}b😀");
    assert_eq!(t.len(), 5);
    assert_eq!(t.len_utf16(), 6);
    assert_eq!(t.len_utf8(), 3 + 1 + 3 + 1 + 4);
    assert_eq!(
        t.to_delta(),
        vec![
            Delta::embed("@ann"),
            Delta::insert("a"),
            Delta::embed(image("a.png")),
            Delta::insert("b😀"),
        ]
    );
    assert_eq!(
        t.slice_delta(2..4).unwrap(),
        vec![Delta::embed(image("a.png")), Delta::insert("b")]
    );
    // Marks style it, cursors name it.
    t.mark(1..4, "bold", true).unwrap();
    assert_eq!(
        t.slice_delta(2..3).unwrap(),
        vec![Delta::Embed {
            insert: image("a.png"),
            attributes: BTreeMap::from([("bold".to_owned(), Value::Bool(true))]),
        }]
    );
    let c = t.cursor(2, Side::Before).unwrap();
    t.insert(0, "xy").unwrap();
    assert_eq!(d.cursor_pos(&c).unwrap(), 4);
    // Out of range: an error, and nothing changes.
    let v = d.version();
    let mut t = d.text("t");
    let len = t.len();
    assert!(matches!(
        t.insert_embed(len + 1, "x"),
        Err(weft::Error::OutOfBounds { pos, .. }) if pos == len + 1
    ));
    assert_eq!(d.version(), v);
    // A typed U+FFFC is text.
    let mut t = d.text("t");
    t.insert(0, "\u{FFFC}").unwrap();
    assert_eq!(t.to_delta()[0], Delta::insert("\u{FFFC}xy"));
}

#[test]
fn embeds_sync_through_updates_snapshots_and_history() {
    let mut a = doc(1);
    a.text("t").insert(0, "hello").unwrap();
    a.text("t").insert_embed(2, image("1")).unwrap();
    let v1 = a.frontiers();
    a.text("t").insert_embed(0, image("2")).unwrap();
    a.text("t").delete(3, 1).unwrap(); // the first embed
    a.commit();
    let want = delta(&a);
    assert_eq!(want, vec![Delta::embed(image("2")), Delta::insert("hello")]);

    let mut b = doc(2);
    b.text("t").insert(0, "B").unwrap();
    b.import(&full(&a)).unwrap();
    let mut b2 = doc(3);
    sync(&mut b2, &b);
    assert_eq!(delta(&b2), delta(&b));
    assert!(delta(&b).contains(&Delta::embed(image("2"))));

    let snap = a.export(ExportMode::Snapshot).unwrap();
    assert_eq!(snap[4], 6, "format version 6: every snapshot");
    let mut c = Doc::new();
    c.import(&snap).unwrap();
    assert_eq!(delta(&c), want);
    assert_eq!(c.export(ExportMode::Snapshot).unwrap(), snap);

    // Old versions show the embed that is deleted now.
    let old = a.fork_at(&v1).unwrap();
    assert_eq!(
        delta(&old),
        vec![
            Delta::insert("he"),
            Delta::embed(image("1")),
            Delta::insert("llo")
        ]
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
        assert_eq!(delta(&s), want);
        assert_eq!(
            delta(&s.fork_at(&root).unwrap()),
            delta(&a.fork_at(&root).unwrap())
        );
    }

    a.checkout(&v1).unwrap();
    assert_eq!(delta(&a), delta(&old));
    a.checkout_to_latest().unwrap();
    a.revert_to(&v1).unwrap();
    assert_eq!(delta(&a), delta(&old));
}

#[test]
fn events_and_undo_carry_embeds() {
    let mut a = doc(1);
    let mirrors = Mirror::attach(&mut a);
    let mut undo = UndoManager::new(&mut a);
    a.text("t").insert(0, "xyz").unwrap();
    a.commit();
    undo.checkpoint();
    a.text("t").insert_embed(1, image("e")).unwrap();
    a.commit();
    undo.checkpoint();
    a.text("t").delete(0, 3).unwrap(); // x, the embed, y
    a.commit();
    let check = |a: &Doc| mirrors.check(a, &"local");
    check(&a);
    undo.undo(&mut a).unwrap().unwrap();
    assert_eq!(
        delta(&a),
        vec![
            Delta::insert("x"),
            Delta::embed(image("e")),
            Delta::insert("yz")
        ]
    );
    check(&a);
    undo.undo(&mut a).unwrap().unwrap();
    assert_eq!(delta(&a), vec![Delta::insert("xyz")]);
    undo.redo(&mut a).unwrap().unwrap();
    assert!(delta(&a).contains(&Delta::embed(image("e"))));
    check(&a);

    // An import's event shows the embed too.
    let mut b = doc(2);
    b.text("t").insert_embed(0, "@b").unwrap();
    a.import(&full(&b)).unwrap();
    check(&a);
}

#[test]
fn apply_delta_inserts_embeds_with_attributes() {
    let mut d = doc(1);
    let mut t = d.text("t");
    t.insert(0, "ab").unwrap();
    let change = vec![
        Delta::retain(1),
        Delta::Embed {
            insert: image("x"),
            attributes: BTreeMap::from([("link".to_owned(), Value::from("u"))]),
        },
    ];
    t.apply_delta(&change).unwrap();
    assert_eq!(
        t.to_delta(),
        vec![
            Delta::insert("a"),
            Delta::Embed {
                insert: image("x"),
                attributes: BTreeMap::from([("link".to_owned(), Value::from("u"))]),
            },
            Delta::insert("b")
        ]
    );
}

#[test]
fn quill_json_with_embeds_round_trips() {
    let json = r#"[{"insert":"Hi "},{"insert":{"image":"cat.png"},"attributes":{"width":"40"}},{"insert":{"mention":{"id":7}}},{"insert":"\n"}]"#;
    let ops: Vec<Delta> = serde_json::from_str(json).unwrap();
    assert!(matches!(ops[1], Delta::Embed { .. }));
    let mut d = doc(1);
    d.text("t").apply_delta(&ops).unwrap();
    assert_eq!(d.text("t").to_string(), "Hi \u{FFFC}\u{FFFC}\n");
    let back = serde_json::to_string(&d.text("t").to_delta()).unwrap();
    assert_eq!(back, json);
    // Bad input: an error, not a panic.
    assert!(
        serde_json::from_str::<Vec<Delta>>(r#"[{"insert":{"image":"x"},"attributes":3}]"#).is_err()
    );
    assert!(serde_json::from_str::<Vec<Delta>>(r#"[{"retain":-1}]"#).is_err());
}

/// Peers type, insert embeds, mark and delete at random, syncing through
/// updates and snapshots; each stays equal to the reference model (which
/// shows an embed as `Delta::Embed` with its styles) and, synced, all
/// hold the same deltas, embeds included.
#[test]
fn random_embeds_converge_and_match_the_model() {
    fn embeds(a: &mut Action) -> bool {
        match a {
            Action::Delete { len, .. } => {
                *len %= 4;
                true
            }
            Action::Insert { .. }
            | Action::Embed { .. }
            | Action::Mark { .. }
            | Action::Sync { .. }
            | Action::SyncSnapshot { .. } => true,
            _ => false,
        }
    }
    Random {
        seeds: 30,
        keep: embeds,
        ..Random::new(150)
    }
    .run(0xe4be);
}
