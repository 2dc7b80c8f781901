//! Stable cursors: they follow their char through edits and merges, resolve
//! on every replica that has the char, travel as bytes and through serde,
//! and give an error (never a panic) for anything they cannot name.

use traces::Trace;
use weft::{Cursor, Doc, Error, ExportMode, Side, Unit, VersionVector};
use weft_testkit::{doc, sync, Rng};

#[test]
fn a_caret_follows_its_char_when_a_peer_types_before_it() {
    // The issue's example: "aaaa", caret at 2, a peer types "a" at 0.
    let mut alice = doc(1);
    alice.text("t").insert(0, "aaaa").unwrap();
    let mut bob = doc(2);
    sync(&mut bob, &alice);
    let caret = alice.text("t").cursor(2, Side::After).unwrap();
    let sel_end = alice.text("t").cursor(2, Side::Before).unwrap();
    bob.text("t").insert(0, "a").unwrap();
    sync(&mut alice, &bob);
    assert_eq!(alice.cursor_pos(&caret), Ok(3));
    assert_eq!(alice.cursor_pos(&sel_end), Ok(3));
    // Bob resolves Alice's cursors the same way.
    assert_eq!(bob.cursor_pos(&caret), Ok(3));

    // Typing exactly at the position: an `After` cursor is pushed on, a
    // `Before` one stays.
    alice.text("t").insert(3, "XY").unwrap();
    assert_eq!(alice.text("t").to_string(), "aaaXYaa");
    assert_eq!(alice.cursor_pos(&caret), Ok(5));
    assert_eq!(alice.cursor_pos(&sel_end), Ok(3));
}

#[test]
fn a_cursor_at_a_deleted_char_resolves_to_where_it_was() {
    let mut d = doc(1);
    d.text("t").insert(0, "Hello brave world").unwrap();
    let at_b = d.text("t").cursor(6, Side::After).unwrap();
    let after_e = d.text("t").cursor(11, Side::Before).unwrap();
    let end = d.text("t").cursor(17, Side::After).unwrap();
    let start = d.text("t").cursor(0, Side::Before).unwrap();
    assert_eq!(
        (at_b.id().is_some(), end.id(), start.id()),
        (true, None, None)
    );

    d.text("t").delete(6, 6).unwrap(); // "Hello world"
    assert_eq!(d.cursor_pos(&at_b), Ok(6));
    assert_eq!(d.cursor_pos(&after_e), Ok(6));
    assert_eq!(d.cursor_pos(&end), Ok(11));
    d.text("t").insert(0, ">> ").unwrap();
    assert_eq!(d.cursor_pos(&at_b), Ok(9));
    assert_eq!(d.cursor_pos(&start), Ok(0));
    assert_eq!(d.cursor_pos(&end), Ok(14));
    // Everything deleted: every cursor is at 0.
    d.text("t").delete(0, 14).unwrap();
    for c in [&at_b, &after_e, &end, &start] {
        assert_eq!(d.cursor_pos(c), Ok(0));
    }
    // Marks do not move cursors.
    d.text("t").insert(0, "abc").unwrap();
    let c = d.text("t").cursor(2, Side::After).unwrap();
    d.text("t").mark(0..3, "bold", true).unwrap();
    d.text("t").unmark(1..2, "bold").unwrap();
    assert_eq!(d.cursor_pos(&c), Ok(2));
}

#[test]
fn unknown_texts_and_chars_are_errors() {
    let mut a = doc(1);
    a.text("t").insert(0, "abc").unwrap();
    let c = a.text("t").cursor(1, Side::After).unwrap();
    assert_eq!(
        a.text("t").cursor(4, Side::After),
        Err(Error::OutOfBounds {
            pos: 4,
            len: 3,
            unit: Unit::Char
        })
    );

    // A document without the text, or without the char.
    let mut other = doc(2);
    assert_eq!(other.cursor_pos(&c), Err(Error::UnknownText("t".into())));
    other.text("t").insert(0, "xyz").unwrap();
    assert!(matches!(other.cursor_pos(&c), Err(Error::UnknownId(_))));
    // Once the char arrives the cursor resolves.
    sync(&mut other, &a);
    assert!(other.cursor_pos(&c).is_ok());

    // A cursor naming a char of another text of the same document.
    a.text("u").insert(0, "uvw").unwrap();
    let in_u = a.text("u").cursor(1, Side::After).unwrap();
    let wrong_text = cursor_naming("t", in_u.id().unwrap(), Side::After);
    assert_eq!(wrong_text.text(), "t");
    assert!(matches!(
        a.cursor_pos(&wrong_text),
        Err(Error::UnknownId(_))
    ));
    // A cursor made through a view resolves like one made through the
    // handle.
    let view = a.get_text("t").unwrap().cursor(1, Side::After).unwrap();
    assert_eq!(view, c);
}

/// A cursor in text `text` sticking to char `id` (of whatever text):
/// made in a throwaway document where that id is a char of `text`.
fn cursor_naming(text: &str, id: weft::OpId, side: Side) -> Cursor {
    let mut d = doc(id.peer);
    let mut t = d.text(text);
    t.insert(0, &"x".repeat(id.counter as usize + 1)).unwrap();
    let c = t.cursor(id.counter as usize, Side::After).unwrap();
    assert_eq!(c.id(), Some(id));
    Cursor::decode(
        &t.cursor(
            id.counter as usize + usize::from(side == Side::Before),
            side,
        )
        .unwrap()
        .encode(),
    )
    .unwrap()
}

#[test]
fn damaged_bytes_never_decode_to_a_cursor() {
    let mut d = doc(0x1234_5678_9abc);
    d.text("a text with a longer name")
        .insert(0, "xyz")
        .unwrap();
    for (pos, side) in [(1, Side::After), (3, Side::After), (0, Side::Before)] {
        let c = d
            .text("a text with a longer name")
            .cursor(pos, side)
            .unwrap();
        let bytes = c.encode();
        assert!(bytes.len() <= 8 + 1 + 25 + 10, "{} bytes", bytes.len());
        assert_eq!(Cursor::decode(&bytes).unwrap(), c);
        for len in 0..bytes.len() {
            assert!(Cursor::decode(&bytes[..len]).is_err(), "truncated to {len}");
        }
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut bad = bytes.clone();
                bad[i] ^= 1 << bit;
                assert!(Cursor::decode(&bad).is_err(), "byte {i} bit {bit}");
            }
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(Cursor::decode(&longer).is_err());
    }
    // Random bytes: an error, not a panic.
    let mut rng = Rng::new(7);
    for _ in 0..10_000 {
        let len = rng.below(40);
        let mut bytes: Vec<u8> = (0..len).map(|_| rng.below(256) as u8).collect();
        if rng.chance(50) && !bytes.is_empty() {
            bytes[0] = 0xC7;
        }
        let _ = Cursor::decode(&bytes);
    }
}

#[cfg(feature = "serde")]
#[test]
fn cursors_travel_through_serde() {
    let mut d = doc(3);
    d.text("t").insert(0, "hello").unwrap();
    for c in [
        d.text("t").cursor(2, Side::After).unwrap(),
        d.text("t").cursor(5, Side::After).unwrap(),
        d.text("t").cursor(0, Side::Before).unwrap(),
    ] {
        let json = serde_json::to_string(&c).unwrap();
        let back: Cursor = serde_json::from_str(&json).unwrap();
        assert_eq!(back, c);
        assert_eq!(d.cursor_pos(&back), d.cursor_pos(&c));
    }
    let json = r#"{"text":"t","id":[18446744073709551615,0],"side":"After"}"#;
    assert!(serde_json::from_str::<Cursor>(json).is_err());
}

#[test]
fn utf16_positions() {
    let mut d = doc(1);
    d.text("t").insert(0, "a😀b😀c").unwrap();
    // UTF-16: a=0, 😀=1..3, b=3, 😀=4..6, c=6.
    let at_b = d.text("t").cursor_utf16(3, Side::After).unwrap();
    assert_eq!(d.cursor_pos(&at_b), Ok(2));
    assert_eq!(d.cursor_pos_utf16(&at_b), Ok(3));
    assert_eq!(d.cursor_pos_in(&at_b, Unit::Utf8), Ok(5));
    assert_eq!(
        d.text("t").cursor_utf16(2, Side::After),
        Err(Error::NotCharBoundary {
            pos: 2,
            unit: Unit::Utf16
        })
    );
    d.text("t").insert(0, "😀").unwrap();
    assert_eq!(d.cursor_pos_utf16(&at_b), Ok(5));
}

#[test]
fn cursors_resolve_in_a_lazily_imported_snapshot() {
    let mut a = doc(1);
    a.text("plain").insert(0, "plain text").unwrap();
    a.text("rich").insert(0, "rich text").unwrap();
    a.text("rich").mark(0..4, "bold", true).unwrap();
    let c_plain = a.text("plain").cursor(6, Side::After).unwrap();
    let c_rich = a.text("rich").cursor(5, Side::Before).unwrap();
    let snap = a.export(ExportMode::Snapshot).unwrap();

    let mut b = Doc::new();
    b.import(&snap).unwrap();
    assert!(b.is_lazy());
    let shared: &Doc = &b;
    assert_eq!(shared.cursor_pos(&c_plain), Ok(6));
    assert_eq!(shared.cursor_pos(&c_rich), Ok(5));
    // A cursor made through a view of the lazy document.
    let from_view = shared
        .get_text("plain")
        .unwrap()
        .cursor(6, Side::After)
        .unwrap();
    assert_eq!(from_view, c_plain);
    // Edits after the load move them.
    b.set_peer_id(2).unwrap();
    b.text("plain").insert(0, "> ").unwrap();
    assert_eq!(b.cursor_pos(&c_plain), Ok(8));
    assert_eq!(b.cursor_pos(&c_rich), Ok(5));
}

/// A cursor tracked by hand through a sequential trace: the index of the
/// char it sticks to among the visible chars.
struct Tracked {
    cursor: Cursor,
    char_index: usize,
}

impl Tracked {
    fn expected(&self) -> usize {
        match self.cursor.side() {
            Side::After => self.char_index,
            Side::Before => self.char_index + 1,
        }
    }
}

/// A new cursor at a random char, or (half the time) at a char next to
/// where the trace is typing (`near`), which the trace soon deletes now
/// and then.
fn new_tracked(rng: &mut Rng, doc: &mut Doc, len: usize, near: usize) -> Option<Tracked> {
    if len == 0 {
        return None;
    }
    let char_index = if rng.chance(50) {
        (near + rng.below(5)).saturating_sub(3).min(len - 1)
    } else {
        rng.below(len)
    };
    let (pos, side) = if rng.chance(50) {
        (char_index, Side::After)
    } else {
        (char_index + 1, Side::Before)
    };
    let cursor = doc.text("t").cursor(pos, side).unwrap();
    Some(Tracked { cursor, char_index })
}

/// Replays the B4 trace (automerge-paper) with 16 live cursors, each
/// followed by hand through every patch; every 50 patches each resolves
/// where its char is, and a cursor whose char is deleted resolves to the
/// deletion point (then a new cursor takes its place). At the end the
/// cursors also resolve in a copy that imported the whole history.
#[test]
fn cursors_follow_their_chars_through_the_b4_trace() {
    let trace = Trace::sequential("automerge-paper");
    let mut d = doc(1);
    let mut rng = Rng::new(4);
    let mut len = 0usize;
    let mut live: Vec<Tracked> = Vec::new();
    let mut dead = 0;
    for (n, p) in trace.patches().enumerate() {
        if p.del > 0 {
            d.text("t").delete(p.pos, p.del).unwrap();
            len -= p.del;
            let mut i = 0;
            while i < live.len() {
                let t = &mut live[i];
                if t.char_index >= p.pos + p.del {
                    t.char_index -= p.del;
                } else if t.char_index >= p.pos {
                    assert_eq!(d.cursor_pos(&t.cursor), Ok(p.pos), "patch {n}");
                    live.swap_remove(i);
                    dead += 1;
                    continue;
                }
                i += 1;
            }
        }
        if !p.ins.is_empty() {
            d.text("t").insert(p.pos, &p.ins).unwrap();
            let added = p.ins.chars().count();
            len += added;
            for t in &mut live {
                if t.char_index >= p.pos {
                    t.char_index += added;
                }
            }
        }
        if n % 50 == 0 {
            for t in &live {
                assert_eq!(d.cursor_pos(&t.cursor), Ok(t.expected()), "patch {n}");
            }
            // One cursor retires each time, so that new ones keep landing
            // where the trace types.
            if live.len() == 16 {
                live.swap_remove(rng.below(16));
            }
            while live.len() < 16 {
                match new_tracked(&mut rng, &mut d, len, p.pos) {
                    Some(t) => live.push(t),
                    None => break,
                }
            }
        }
    }
    assert!(dead > 100, "only {dead} cursors saw their char deleted");
    let mut copy = Doc::new();
    copy.import(
        &d.export(ExportMode::Updates {
            from: &VersionVector::new(),
        })
        .unwrap(),
    )
    .unwrap();
    for t in &live {
        assert_eq!(d.cursor_pos(&t.cursor), Ok(t.expected()));
        assert_eq!(copy.cursor_pos(&t.cursor), Ok(t.expected()));
    }
}
