//! Rich-text conformance: marks, expand rules and deltas, each concurrent
//! scenario merged in both orders, through updates and through a fresh
//! document, with the peer ids both ways round.

use weft::{Attributes, Delta, Doc, Error, ExportMode, Unit, Value};
use weft_testkit::{full, Action, Random};

const T: &str = "t";

fn delta(doc: &mut Doc) -> Vec<Delta> {
    doc.assert_invariants();
    doc.text(T).to_delta()
}

fn ins(s: &str) -> Delta {
    Delta::insert(s)
}

fn ins_with(s: &str, attrs: &[(&str, Value)]) -> Delta {
    Delta::Insert {
        insert: s.into(),
        attributes: attrs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
    }
}

fn bold(s: &str) -> Delta {
    ins_with(s, &[("bold", true.into())])
}

/// A document as peer `peer`, with keys named after each expand rule.
fn doc(peer: u64) -> Doc {
    weft_testkit::styled_doc(peer)
}

/// Runs `setup` on a base document, then `a` and `b` concurrently on two
/// forks, and merges them every way: each side importing the other's
/// update, and fresh documents importing both full histories in both
/// orders; all with A < B and with A > B. Asserts that every result is
/// the same (text, delta, version) and returns the delta.
fn concurrent(setup: impl Fn(&mut Doc), a: impl Fn(&mut Doc), b: impl Fn(&mut Doc)) -> Vec<Delta> {
    let mut results: Vec<(String, Vec<Delta>)> = Vec::new();
    for (pa, pb) in [(10, 20), (20, 10)] {
        let mut base = doc(5);
        setup(&mut base);
        base.commit();
        let mut da = doc(pa);
        da.import(&full(&base)).unwrap();
        let mut db = doc(pb);
        db.import(&full(&base)).unwrap();
        a(&mut da);
        b(&mut db);
        let ua = da
            .export(ExportMode::Updates {
                from: &base.version(),
            })
            .unwrap();
        let ub = db
            .export(ExportMode::Updates {
                from: &base.version(),
            })
            .unwrap();
        let (fa, fb) = (full(&da), full(&db));
        let mut x = da.clone();
        x.import(&ub).unwrap();
        let mut y = db.clone();
        y.import(&ua).unwrap();
        let mut f1 = Doc::new();
        f1.import(&fa).unwrap();
        f1.import(&fb).unwrap();
        let mut f2 = Doc::new();
        f2.import(&fb).unwrap();
        f2.import(&fa).unwrap();
        // And a round trip of a merged document.
        let mut f3 = Doc::new();
        f3.import(&full(&x)).unwrap();
        let version = x.version();
        for (name, d) in [
            ("a+b", &mut x),
            ("b+a", &mut y),
            ("fresh a,b", &mut f1),
            ("fresh b,a", &mut f2),
            ("re-import", &mut f3),
        ] {
            assert_eq!(d.version(), version, "{name}: version");
            let text = d.text(T).to_string();
            results.push((format!("{name} with peers A={pa} B={pb}: {text}"), delta(d)));
        }
    }
    let (first_name, first) = &results[0];
    for (name, r) in &results[1..] {
        assert_eq!(r, first, "{name} differs from {first_name}");
    }
    first.clone()
}

fn setup_text(s: &'static str) -> impl Fn(&mut Doc) {
    move |d: &mut Doc| d.text(T).insert(0, s).unwrap()
}

fn link(s: &str) -> Delta {
    ins_with(s, &[("link", "u".into())])
}

/// No empty runs, no nulls, neighbours differ.
fn assert_clean(delta: &[Delta]) {
    for (i, d) in delta.iter().enumerate() {
        let Delta::Insert { insert, attributes } = d else {
            panic!("to_delta returns inserts only");
        };
        assert!(!insert.is_empty(), "empty run in {delta:?}");
        assert!(
            attributes.values().all(|v| !v.is_null()),
            "null in {delta:?}"
        );
        if i > 0 {
            let Delta::Insert {
                attributes: prev, ..
            } = &delta[i - 1]
            else {
                unreachable!()
            };
            assert_ne!(prev, attributes, "unmerged runs in {delta:?}");
        }
    }
}

#[test]
fn s1_insert_inside_concurrent_bold() {
    let d = concurrent(
        setup_text("Hello World"),
        |a| a.text(T).mark(0..11, "bold", true).unwrap(),
        |b| b.text(T).insert(6, "New ").unwrap(),
    );
    assert_eq!(d, vec![bold("Hello New World")]);
}

#[test]
fn s2_overlapping_bold_merges() {
    let d = concurrent(
        setup_text("Hello World"),
        |a| a.text(T).mark(0..5, "bold", true).unwrap(),
        |b| b.text(T).mark(3..11, "bold", true).unwrap(),
    );
    assert_eq!(d, vec![bold("Hello World")]);
}

#[test]
fn s3_insert_before_bold_is_plain() {
    let d = concurrent(
        setup_text("Hello World"),
        |a| a.text(T).mark(6..11, "bold", true).unwrap(),
        |b| b.text(T).insert(6, "big ").unwrap(),
    );
    assert_eq!(d, vec![ins("Hello big "), bold("World")]);
    // At the very start of the text too.
    let d = concurrent(
        setup_text("Hello World"),
        |a| a.text(T).mark(0..5, "bold", true).unwrap(),
        |b| b.text(T).insert(0, "Oh ").unwrap(),
    );
    assert_eq!(d, vec![ins("Oh "), bold("Hello"), ins(" World")]);
}

#[test]
fn s4_link_survives_retyping_its_tail() {
    let d = concurrent(
        setup_text("Hello World"),
        |a| a.text(T).mark(0..5, "link", "u").unwrap(),
        |b| {
            let mut t = b.text(T);
            t.delete(2, 3).unwrap();
            t.insert(2, "y").unwrap();
        },
    );
    assert_eq!(d, vec![link("Hey"), ins(" World")]);
    // The same edits one after the other.
    let mut a = doc(1);
    let mut t = a.text(T);
    t.insert(0, "Hello World").unwrap();
    t.mark(0..5, "link", "u").unwrap();
    t.delete(2, 3).unwrap();
    t.insert(2, "y").unwrap();
    assert_eq!(t.to_delta(), vec![link("Hey"), ins(" World")]);
}

#[test]
fn s5_typing_at_end_of_bold_link_is_bold_only() {
    let mut a = doc(1);
    let mut t = a.text(T);
    t.insert(0, "Hello World").unwrap();
    t.mark(0..5, "bold", true).unwrap();
    t.mark(0..5, "link", "u").unwrap();
    t.insert(5, "!").unwrap();
    assert_eq!(
        t.to_delta(),
        vec![
            ins_with("Hello", &[("bold", true.into()), ("link", "u".into())]),
            bold("!"),
            ins(" World")
        ]
    );
    // And when a peer types there concurrently.
    let d = concurrent(
        setup_text("Hello World"),
        |a| {
            a.text(T).mark(0..5, "bold", true).unwrap();
            a.text(T).mark(0..5, "link", "u").unwrap();
        },
        |b| b.text(T).insert(5, "!").unwrap(),
    );
    assert_eq!(
        d,
        vec![
            ins_with("Hello", &[("bold", true.into()), ("link", "u".into())]),
            bold("!"),
            ins(" World")
        ]
    );
}

#[test]
fn s6_bold_and_italic_overlap() {
    let d = concurrent(
        setup_text("The fox jumped."),
        |a| a.text(T).mark(0..7, "bold", true).unwrap(),
        |b| b.text(T).mark(4..14, "italic", true).unwrap(),
    );
    assert_eq!(
        d,
        vec![
            bold("The "),
            ins_with("fox", &[("bold", true.into()), ("italic", true.into())]),
            ins_with(" jumped", &[("italic", true.into())]),
            ins("."),
        ]
    );
}

#[test]
fn s7_overlapping_comments_both_survive() {
    let d = concurrent(
        setup_text("Hello World"),
        |a| a.text(T).mark(0..7, "comment:a", "first").unwrap(),
        |b| b.text(T).mark(4..11, "comment:b", "second").unwrap(),
    );
    assert_eq!(
        d,
        vec![
            ins_with("Hell", &[("comment:a", "first".into())]),
            ins_with(
                "o W",
                &[
                    ("comment:a", "first".into()),
                    ("comment:b", "second".into())
                ]
            ),
            ins_with("orld", &[("comment:b", "second".into())]),
        ]
    );
}

/// Whether text typed at each edge of a mark over "bc" in "abcd" joins it,
/// locally and concurrently: (start edge, end edge).
fn edges(key: &str) -> (bool, bool) {
    let inside = |d: &[Delta], s: &str| {
        d.iter().any(|r| matches!(r, Delta::Insert { insert, attributes } if insert.contains(s) && attributes.contains_key(key)))
    };
    let mut local = doc(1);
    let mut t = local.text(T);
    t.insert(0, "abcd").unwrap();
    t.mark(1..3, key, true).unwrap();
    t.insert(3, "Y").unwrap();
    t.insert(1, "X").unwrap();
    let got = (inside(&t.to_delta(), "X"), inside(&t.to_delta(), "Y"));
    let mut round = Doc::new();
    round.import(&full(&local)).unwrap();
    assert_eq!(
        delta(&mut round),
        local.text(T).to_delta(),
        "{key}: round trip"
    );
    for edge in [1, 3] {
        let d = concurrent(
            setup_text("abcd"),
            |a| a.text(T).mark(1..3, key, true).unwrap(),
            |b| b.text(T).insert(edge, "Z").unwrap(),
        );
        let want = if edge == 1 { got.0 } else { got.1 };
        assert_eq!(inside(&d, "Z"), want, "{key}: concurrent insert at {edge}");
    }
    got
}

#[test]
fn s8_expand_rules_at_both_edges() {
    assert_eq!(edges("after"), (false, true));
    assert_eq!(edges("before"), (true, false));
    assert_eq!(edges("both"), (true, true));
    assert_eq!(edges("none"), (false, false));
    // The defaults.
    assert_eq!(edges("bold"), (false, true));
    assert_eq!(edges("link"), (false, false));
    assert_eq!(edges("comment:x"), (false, false));
    assert_eq!(edges("unconfigured"), (false, true));
}

#[test]
fn s9_partial_unmark_over_astral_and_cjk() {
    let mut chars = doc(1);
    let mut t = chars.text(T);
    t.insert(0, "a😀b文c").unwrap();
    t.mark(0..5, "bold", true).unwrap();
    t.unmark(1..4, "bold").unwrap();
    let by_chars = t.to_delta();
    assert_eq!(by_chars, vec![bold("a"), ins("😀b文"), bold("c")]);

    let mut utf16 = doc(1);
    let mut t = utf16.text(T);
    t.insert(0, "a😀b文c").unwrap();
    t.mark_utf16(0..6, "bold", true).unwrap();
    t.unmark_utf16(1..5, "bold").unwrap();
    assert_eq!(t.to_delta(), by_chars);

    let mut utf8 = doc(1);
    let mut t = utf8.text(T);
    t.insert(0, "a😀b文c").unwrap();
    t.mark_utf8(0..10, "bold", true).unwrap();
    t.unmark_utf8(1..9, "bold").unwrap();
    assert_eq!(t.to_delta(), by_chars);

    // The unmark's edges act like the edges of two bold marks: typing at
    // the end of the first bold part extends it.
    let mut t = chars.text(T);
    t.insert(1, "x").unwrap();
    t.insert(5, "y").unwrap();
    assert_eq!(t.to_delta(), vec![bold("ax"), ins("😀b文y"), bold("c")]);
    let mut round = Doc::new();
    round.import(&full(&chars)).unwrap();
    assert_eq!(delta(&mut round), chars.text(T).to_delta());
}

#[test]
fn s10_delete_across_overlapping_boundaries() {
    for (from, len) in [(3, 6), (4, 3), (0, 11), (6, 5), (2, 2)] {
        let mut a = doc(1);
        let mut t = a.text(T);
        t.insert(0, "Hello World").unwrap();
        t.mark(0..7, "bold", true).unwrap();
        t.mark(4..11, "link", "u").unwrap();
        t.delete(from, len).unwrap();
        let d = t.to_delta();
        assert_clean(&d);
        let text: String = d
            .iter()
            .map(|r| match r {
                Delta::Insert { insert, .. } => insert.as_str(),
                _ => "",
            })
            .collect();
        assert_eq!(text, t.to_string());
        a.assert_invariants();
    }
    // Deleting everything leaves an empty delta.
    let mut a = doc(1);
    let mut t = a.text(T);
    t.insert(0, "Hello").unwrap();
    t.mark(0..3, "bold", true).unwrap();
    t.delete(0, 5).unwrap();
    assert_eq!(t.to_delta(), vec![]);
}

#[test]
fn s11_positions_inside_a_char_are_errors() {
    let mut a = doc(1);
    let mut t = a.text(T);
    t.insert(0, "a😀b文c").unwrap();
    assert_eq!(
        t.insert_utf16(2, "x"),
        Err(Error::NotCharBoundary {
            pos: 2,
            unit: Unit::Utf16
        })
    );
    assert_eq!(
        t.insert_utf8(2, "x"),
        Err(Error::NotCharBoundary {
            pos: 2,
            unit: Unit::Utf8
        })
    );
    assert!(matches!(
        t.mark_utf16(0..2, "bold", true),
        Err(Error::NotCharBoundary { .. })
    ));
    assert!(matches!(
        t.mark_utf8(7..10, "bold", true),
        Err(Error::NotCharBoundary { .. })
    ));
    assert!(matches!(
        t.unmark_utf16(2..4, "bold"),
        Err(Error::NotCharBoundary { .. })
    ));
    assert_eq!(t.to_string(), "a😀b文c");
    let version = a.version();
    a.text(T).mark(0..1, "bold", true).unwrap();
    assert_ne!(a.version(), version);
}

#[test]
fn bad_ranges_are_errors() {
    let mut a = doc(1);
    let mut t = a.text(T);
    t.insert(0, "abc").unwrap();
    assert!(matches!(
        t.mark(2..2, "bold", true),
        Err(Error::InvalidRange { .. })
    ));
    #[allow(clippy::reversed_empty_ranges)]
    let reversed = 2..1;
    assert!(matches!(
        t.mark(reversed, "bold", true),
        Err(Error::InvalidRange { .. })
    ));
    assert!(matches!(
        t.mark(1..4, "bold", true),
        Err(Error::RangeOutOfBounds {
            start: 1,
            end: 4,
            len: 3,
            ..
        })
    ));
    assert!(matches!(
        t.unmark(0..9, "bold"),
        Err(Error::RangeOutOfBounds { .. })
    ));
    assert!(matches!(
        t.mark_utf16(0..9, "bold", true),
        Err(Error::RangeOutOfBounds { .. })
    ));
    assert!(t.slice_delta(2..4).is_err());
    assert!(t.attributes_at(3).is_err());
    assert!(t
        .apply_delta(&[Delta::retain(2), Delta::delete(2)])
        .is_err());
    assert_eq!(t.to_string(), "abc");
    assert_eq!(a.version(), {
        let mut b = doc(1);
        b.text(T).insert(0, "abc").unwrap();
        b.version()
    });
}

#[test]
fn redundant_marks_create_no_ops() {
    let mut a = doc(1);
    a.text(T).insert(0, "Hello World").unwrap();
    a.text(T).mark(0..5, "bold", true).unwrap();
    let v = a.version();
    a.text(T).mark(0..5, "bold", true).unwrap();
    a.text(T).mark(1..3, "bold", true).unwrap();
    a.text(T).unmark(6..11, "bold").unwrap();
    a.text(T).unmark(0..11, "italic").unwrap();
    assert_eq!(a.version(), v);
    // A different value, or a wider range, is not redundant.
    a.text(T).mark(0..5, "bold", false).unwrap();
    assert_ne!(a.version(), v);
    let v = a.version();
    a.text(T).mark(0..6, "bold", false).unwrap();
    assert_ne!(a.version(), v);
}

#[test]
fn deleted_marked_text_is_not_resurrected() {
    for key in ["after", "before", "both", "none"] {
        let mut a = doc(1);
        let mut t = a.text(T);
        t.insert(0, "xabcy").unwrap();
        t.mark(1..4, key, true).unwrap();
        t.delete(1, 3).unwrap();
        t.insert(1, "d").unwrap();
        assert_eq!(t.to_delta(), vec![ins("xdy")], "{key}");
        // Also when the marked text was the whole text.
        let mut b = doc(1);
        let mut t = b.text(T);
        t.insert(0, "abc").unwrap();
        t.mark(0..3, key, true).unwrap();
        t.delete(0, 3).unwrap();
        t.insert(0, "d").unwrap();
        assert_eq!(t.to_delta(), vec![ins("d")], "{key}: whole text");
    }
}

#[test]
fn last_mark_wins_on_a_key() {
    let d = concurrent(
        setup_text("Hello"),
        |a| a.text(T).mark(0..5, "color", "red").unwrap(),
        |b| {
            // B made more ops first, so its mark is later (Lamport).
            b.text(T).insert(5, "!").unwrap();
            b.text(T).delete(5, 1).unwrap();
            b.text(T).mark(0..5, "color", "blue").unwrap();
        },
    );
    assert_eq!(d, vec![ins_with("Hello", &[("color", "blue".into())])]);
    // An unmark concurrent with an earlier mark removes it.
    let d = concurrent(
        |s: &mut Doc| {
            s.text(T).insert(0, "Hello").unwrap();
            s.text(T).mark(0..5, "bold", true).unwrap();
        },
        |a| a.text(T).unmark(1..4, "bold").unwrap(),
        |b| b.text(T).insert(2, "X").unwrap(),
    );
    assert_eq!(d, vec![bold("H"), ins("eXll"), bold("o")]);
}

#[test]
fn deltas_round_trip_through_apply_delta() {
    let mut a = doc(1);
    let mut t = a.text(T);
    t.apply_delta(&[
        bold("Hello"),
        ins(" "),
        ins_with("wörld😀", &[("italic", true.into()), ("link", "u".into())]),
    ])
    .unwrap();
    let want = t.to_delta();
    assert_eq!(
        want,
        vec![
            bold("Hello"),
            ins(" "),
            ins_with("wörld😀", &[("italic", true.into()), ("link", "u".into())])
        ]
    );
    // An insert without attributes inside a bold run is not bold.
    t.apply_delta(&[Delta::retain(2), ins("--")]).unwrap();
    assert_eq!(t.to_delta()[..3], [bold("He"), ins("--"), bold("llo")]);
    // Retain with attributes sets and removes.
    t.apply_delta(&[
        Delta::retain(2),
        Delta::delete(2),
        Delta::retain_with(3, [("bold", Value::Null)]),
        Delta::retain_with(1, [("size", 12)]),
    ])
    .unwrap();
    assert_eq!(
        t.to_delta(),
        vec![
            bold("He"),
            ins("llo"),
            ins_with(" ", &[("size", 12.into())]),
            ins_with("wörld😀", &[("italic", true.into()), ("link", "u".into())]),
        ]
    );
    assert_eq!(t.slice_delta(1..4).unwrap(), vec![bold("e"), ins("ll")]);
    assert_eq!(
        t.attributes_at(0).unwrap(),
        Attributes::from([("bold".to_string(), Value::Bool(true))])
    );
    // Replaying a document's delta into a fresh one gives the same delta.
    let delta = t.to_delta();
    let mut b = doc(2);
    b.text(T).apply_delta(&delta).unwrap();
    assert_eq!(b.text(T).to_delta(), delta);
}

#[test]
fn plain_text_has_no_attributes() {
    let mut a = doc(1);
    let mut t = a.text(T);
    assert_eq!(t.to_delta(), vec![]);
    t.insert(0, "plain").unwrap();
    assert_eq!(t.to_delta(), vec![ins("plain")]);
    assert_eq!(t.slice_delta(1..3).unwrap(), vec![ins("la")]);
}

/// Three peers insert, delete, mark and unmark (emoji and CJK text, every
/// expand rule, positions in chars, UTF-8 and UTF-16) and sync in random
/// orders; whenever what a replica holds changes it must equal the
/// reference model (naive per-char FugueMax with anchors, styles
/// recomputed char by char), and cursors made at random places resolve
/// on every replica where the model puts their char. Long runs grow
/// multi-level trees with many leaf splits.
#[test]
fn three_peers_with_marks_match_the_reference_model() {
    fn rich(a: &mut Action) -> bool {
        match a {
            Action::Delete { len, .. } => {
                *len %= 3;
                true
            }
            Action::Insert { .. }
            | Action::Mark { .. }
            | Action::Unmark { .. }
            | Action::Commit { .. }
            | Action::Sync { .. } => true,
            _ => false,
        }
    }
    let stats = Random {
        seeds: 30,
        keep: rich,
        ..Random::new(300)
    }
    .run(0);
    assert!(stats.cursor_checks > 10_000, "{stats:?}");
    Random {
        seeds: 2,
        keep: rich,
        ..Random::new(1500)
    }
    .run(1000);
}
