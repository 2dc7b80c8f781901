//! Local editing: one document against a plain `String`, in chars, UTF-8
//! and UTF-16 units, and the errors for bad positions.

use weft::{Doc, Error, Unit};
use weft_testkit::Rng;

/// Byte offset of char `pos` in `s`.
fn byte_of(s: &str, pos: usize) -> usize {
    s.char_indices().nth(pos).map_or(s.len(), |(b, _)| b)
}

/// UTF-16 offset of char `pos` in `s`.
fn utf16_of(s: &str, pos: usize) -> usize {
    s.chars().take(pos).map(char::len_utf16).sum()
}

#[test]
fn random_edits_match_a_string_in_every_unit() {
    for seed in 0..30 {
        let mut rng = Rng::new(seed);
        let mut doc = Doc::new();
        let mut model = String::new();
        for step in 0..1500 {
            let mut text = doc.text("t");
            let chars = model.chars().count();
            match rng.below(6) {
                0 | 1 => {
                    let pos = rng.below(chars + 1);
                    let s = rng.text(6);
                    text.insert(pos, &s).unwrap();
                    model.insert_str(byte_of(&model, pos), &s);
                }
                2 => {
                    let pos = rng.below(chars + 1);
                    let s = rng.text(3);
                    text.insert_utf16(utf16_of(&model, pos), &s).unwrap();
                    model.insert_str(byte_of(&model, pos), &s);
                }
                3 => {
                    let pos = rng.below(chars + 1);
                    let s = rng.text(3);
                    text.insert_utf8(byte_of(&model, pos), &s).unwrap();
                    model.insert_str(byte_of(&model, pos), &s);
                }
                4 if chars > 0 => {
                    let pos = rng.below(chars);
                    let n = 1 + rng.below((chars - pos).min(8));
                    if rng.chance(50) {
                        text.delete(pos, n).unwrap();
                    } else {
                        let a = utf16_of(&model, pos);
                        text.delete_utf16(a, utf16_of(&model, pos + n) - a).unwrap();
                    }
                    model.replace_range(byte_of(&model, pos)..byte_of(&model, pos + n), "");
                }
                5 if chars > 0 => {
                    let pos = rng.below(chars);
                    let n = 1 + rng.below((chars - pos).min(8));
                    let s = rng.text(3);
                    let a = byte_of(&model, pos);
                    let b = byte_of(&model, pos + n);
                    if rng.chance(50) {
                        text.splice(pos, n, &s).unwrap();
                    } else {
                        text.delete_utf8(a, b - a).unwrap();
                        text.insert_utf8(a, &s).unwrap();
                    }
                    model.replace_range(a..b, &s);
                }
                _ => doc.commit(),
            }
            let text = doc.text("t");
            assert_eq!(text.len(), model.chars().count(), "seed {seed} step {step}");
            assert_eq!(text.len_utf8(), model.len());
            assert_eq!(text.len_utf16(), model.encode_utf16().count());
            if step % 50 == 0 {
                assert_eq!(text.to_string(), model, "seed {seed} step {step}");
                let len = model.chars().count();
                let (a, b) = (rng.below(len + 1), rng.below(len + 1));
                let (a, b) = (a.min(b), a.max(b));
                let expected: String = model.chars().skip(a).take(b - a).collect();
                assert_eq!(text.slice(a..b).unwrap(), expected);
                let p = rng.below(len + 1);
                assert_eq!(
                    text.convert_pos(p, Unit::Char, Unit::Utf16).unwrap(),
                    utf16_of(&model, p)
                );
                assert_eq!(
                    text.convert_pos(p, Unit::Char, Unit::Utf8).unwrap(),
                    byte_of(&model, p)
                );
                assert_eq!(
                    text.convert_pos(utf16_of(&model, p), Unit::Utf16, Unit::Utf8)
                        .unwrap(),
                    byte_of(&model, p)
                );
                assert_eq!(
                    text.convert_pos(byte_of(&model, p), Unit::Utf8, Unit::Char)
                        .unwrap(),
                    p
                );
                doc.assert_invariants();
            }
        }
        assert_eq!(doc.text("t").to_string(), model);
        doc.assert_invariants();
    }
}

#[test]
fn positions_past_the_end_are_errors() {
    let mut doc = Doc::new();
    let mut t = doc.text("t");
    t.insert(0, "héllo").unwrap();
    let oob = |pos, len, unit| Err(Error::OutOfBounds { pos, len, unit });
    assert_eq!(t.insert(6, "x"), oob(6, 5, Unit::Char));
    let range = |start, end, len, unit| {
        Err(Error::RangeOutOfBounds {
            start,
            end,
            len,
            unit,
        })
    };
    assert_eq!(t.delete(3, 3), range(3, 6, 5, Unit::Char));
    assert_eq!(
        t.delete(usize::MAX, 2),
        range(usize::MAX, usize::MAX, 5, Unit::Char)
    );
    assert_eq!(t.splice(4, 2, "x"), range(4, 6, 5, Unit::Char));
    assert_eq!(t.insert_utf8(7, "x"), oob(7, 6, Unit::Utf8));
    assert_eq!(t.insert_utf16(6, "x"), oob(6, 5, Unit::Utf16));
    assert_eq!(
        t.delete_utf16(4, usize::MAX),
        range(4, usize::MAX, 5, Unit::Utf16)
    );
    assert_eq!(t.delete_utf8(5, 2), range(5, 7, 6, Unit::Utf8));
    assert_eq!(t.slice(2..9).map(drop), range(2, 9, 5, Unit::Char));
    #[allow(clippy::reversed_empty_ranges)]
    let reversed = t.slice(3..2);
    assert_eq!(
        reversed.map(drop),
        Err(Error::InvalidRange {
            start: 3,
            end: 2,
            unit: Unit::Char
        })
    );
    assert_eq!(
        t.convert_pos(9, Unit::Utf16, Unit::Char).map(drop),
        oob(9, 5, Unit::Utf16)
    );
    // Nothing changed.
    assert_eq!(t.to_string(), "héllo");
    assert_eq!(doc.version().op_count(), 5);
}

#[test]
fn positions_inside_a_char_are_errors() {
    let mut doc = Doc::new();
    let mut t = doc.text("t");
    t.insert(0, "a😀b文c").unwrap();
    let inside = |pos, unit| Err(Error::NotCharBoundary { pos, unit });
    // 😀 is bytes 1..5 and UTF-16 units 1..3; 文 is bytes 6..9.
    assert_eq!(t.insert_utf16(2, "x"), inside(2, Unit::Utf16));
    assert_eq!(t.insert_utf8(3, "x"), inside(3, Unit::Utf8));
    assert_eq!(t.insert_utf8(7, "x"), inside(7, Unit::Utf8));
    assert_eq!(t.delete_utf16(0, 2), inside(2, Unit::Utf16));
    assert_eq!(t.delete_utf8(2, 3), inside(2, Unit::Utf8));
    assert_eq!(
        t.convert_pos(8, Unit::Utf8, Unit::Char).map(drop),
        inside(8, Unit::Utf8)
    );
    assert_eq!(t.to_string(), "a😀b文c");
    t.insert_utf16(3, "|").unwrap();
    t.insert_utf8(10, "|").unwrap();
    assert_eq!(t.to_string(), "a😀|b文|c");
    t.delete_utf16(1, 2).unwrap();
    assert_eq!(t.to_string(), "a|b文|c");
    assert_eq!(t.len_utf16(), 6);
}

#[test]
fn reserved_peer_id_is_rejected() {
    let mut doc = Doc::new();
    assert_eq!(
        doc.set_peer_id(u64::MAX),
        Err(Error::InvalidPeerId(u64::MAX))
    );
    doc.set_peer_id(42).unwrap();
    assert_eq!(doc.peer_id(), 42);
    assert_ne!(Doc::new().peer_id(), Doc::new().peer_id());
}

#[test]
fn fork_copies_history_under_a_new_peer() {
    let mut a = Doc::new();
    a.set_peer_id(1).unwrap();
    a.text("t").insert(0, "abc").unwrap();
    let mut b = a.fork();
    assert_ne!(b.peer_id(), a.peer_id());
    assert_eq!(b.text("t").to_string(), "abc");
    assert_eq!(b.version(), a.version());
    assert_eq!(b.frontiers(), a.frontiers());
    b.text("t").insert(3, "d").unwrap();
    assert_eq!(a.text("t").to_string(), "abc");
}

#[test]
fn commit_groups_ops_and_versions_count_them() {
    let mut doc = Doc::new();
    doc.set_peer_id(3).unwrap();
    assert!(doc.version().is_empty());
    assert!(doc.frontiers().is_empty());
    doc.text("t").insert(0, "ab").unwrap();
    doc.text("t").delete(0, 1).unwrap();
    assert_eq!(doc.version().get(3), 3);
    doc.commit();
    doc.commit();
    assert_eq!(doc.frontiers().as_slice(), &[weft::OpId::new(3, 2)]);
    assert_eq!(doc.text_len("t", Unit::Char), 1);
    assert_eq!(doc.text_len("missing", Unit::Char), 0);
}
