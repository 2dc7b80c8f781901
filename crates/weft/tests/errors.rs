//! What a caller reads when something goes wrong: each error names the
//! range, position or input at fault, with the right variant, and its
//! `Display` sentence says so in words.

use weft::{Cursor, Doc, Error, ExportMode, Unit, VersionVector};

/// A document with a seven-char text "content".
fn seven() -> Doc {
    let mut doc = Doc::new();
    doc.text("t").insert(0, "content").unwrap();
    doc
}

fn export(doc: &mut Doc) -> Vec<u8> {
    doc.export(ExportMode::Updates {
        from: &VersionVector::new(),
    })
    .unwrap()
}

/// Checks that `result` is `Err(expected)` and that its sentence contains
/// every one of `words`.
#[track_caller]
fn check<T: std::fmt::Debug>(result: Result<T, Error>, expected: Error, words: &[&str]) {
    let err = result.expect_err("an error");
    assert_eq!(err, expected);
    let msg = err.to_string();
    for w in words {
        assert!(msg.contains(w), "{msg:?} does not mention {w:?}");
    }
    assert!(!msg.ends_with('.'), "{msg:?} ends with a period");
    assert!(
        msg.starts_with(|c: char| !c.is_uppercase()),
        "{msg:?} starts with a capital"
    );
}

#[test]
#[allow(clippy::reversed_empty_ranges)]
fn reversed_ranges_are_invalid_ranges_everywhere() {
    let mut doc = seven();
    let reversed = |unit| Error::InvalidRange {
        start: 5,
        end: 2,
        unit,
    };
    let words = ["5..2", "reversed"];
    let view = doc.get_text("t").unwrap();
    check(view.slice(5..2), reversed(Unit::Char), &words);
    check(view.slice_delta(5..2), reversed(Unit::Char), &words);
    let mut t = doc.text("t");
    check(t.slice(5..2), reversed(Unit::Char), &words);
    check(t.slice_delta(5..2), reversed(Unit::Char), &words);
    check(t.mark(5..2, "bold", true), reversed(Unit::Char), &words);
    check(t.unmark(5..2, "bold"), reversed(Unit::Char), &words);
    check(
        t.mark_utf8(5..2, "bold", true),
        reversed(Unit::Utf8),
        &["5..2", "reversed", "UTF-8"],
    );
    check(
        t.mark_utf16(5..2, "bold", true),
        reversed(Unit::Utf16),
        &["5..2", "reversed", "UTF-16"],
    );
    check(t.unmark_utf8(5..2, "bold"), reversed(Unit::Utf8), &words);
    check(t.unmark_utf16(5..2, "bold"), reversed(Unit::Utf16), &words);
    // Reversed and past the end: reversed is the first thing wrong.
    check(
        t.slice(20..10),
        reversed_at(20, 10),
        &["20..10", "reversed"],
    );
    // An empty range is fine to read, not to mark.
    assert_eq!(t.slice(5..5).unwrap(), "");
    check(
        t.mark(3..3, "bold", true),
        Error::InvalidRange {
            start: 3,
            end: 3,
            unit: Unit::Char,
        },
        &["3..3", "empty"],
    );
    assert_eq!(t.to_string(), "content");
}

fn reversed_at(start: usize, end: usize) -> Error {
    Error::InvalidRange {
        start,
        end,
        unit: Unit::Char,
    }
}

#[test]
fn ranges_past_the_end_name_the_range() {
    let mut doc = seven();
    let past = |start, end, len, unit| Error::RangeOutOfBounds {
        start,
        end,
        len,
        unit,
    };
    let mut t = doc.text("t");
    let err = t.delete(5, 10).unwrap_err();
    assert_eq!(err, past(5, 15, 7, Unit::Char));
    assert_eq!(
        err.to_string(),
        "range 5..15 is out of bounds of a text of 7 chars"
    );
    check(
        t.splice(5, 10, "x"),
        past(5, 15, 7, Unit::Char),
        &["5..15", "7 chars"],
    );
    check(
        t.slice(2..9),
        past(2, 9, 7, Unit::Char),
        &["2..9", "7 chars"],
    );
    check(
        t.mark(2..9, "bold", true),
        past(2, 9, 7, Unit::Char),
        &["2..9", "7 chars"],
    );
    check(
        t.delete_utf8(6, 4),
        past(6, 10, 7, Unit::Utf8),
        &["6..10", "7 UTF-8 bytes"],
    );
    check(
        t.mark_utf16(0..8, "bold", true),
        past(0, 8, 7, Unit::Utf16),
        &["0..8", "7 UTF-16 code units"],
    );
    // A single position is still a position.
    check(
        t.insert(8, "x"),
        Error::OutOfBounds {
            pos: 8,
            len: 7,
            unit: Unit::Char,
        },
        &["position 8", "7 chars"],
    );
    assert_eq!(t.to_string(), "content");
}

#[test]
fn garbage_is_not_a_weft_export() {
    for garbage in [&b"\x00"[..], b"\xff\x13", b"{}\n", b"PK\x03\x04 not weft"] {
        let mut doc = seven();
        check(doc.import(garbage), Error::BadMagic, &["not a weft export"]);
        assert_eq!(doc.text("t").to_string(), "content");
    }
    check(
        Doc::new().import(&[]),
        Error::EmptyInput,
        &["empty", "not a weft export"],
    );
}

#[test]
fn cut_short_exports_say_truncated() {
    let bytes = export(&mut seven());
    for cut in [1, 3, 4, 10, 15] {
        let prefix = bytes.get(..cut).unwrap();
        check(
            Doc::new().import(prefix),
            Error::UnexpectedEof,
            &["truncated"],
        );
    }
}

#[test]
fn checksum_mismatches_say_damaged_or_truncated() {
    let mut bytes = export(&mut seven());
    let last = bytes.len() - 1;
    bytes[last] ^= 0x40;
    let err = Doc::new().import(&bytes).unwrap_err();
    assert!(matches!(err, Error::ChecksumMismatch { .. }), "{err:?}");
    assert!(err.to_string().contains("damaged or truncated"), "{err}");
    // A body cut short (header intact) fails its checksum too.
    let bytes = export(&mut seven());
    let err = Doc::new().import(&bytes[..bytes.len() - 3]).unwrap_err();
    assert!(matches!(err, Error::ChecksumMismatch { .. }), "{err:?}");
}

#[test]
fn cursor_garbage_is_named() {
    check(Cursor::decode(&[]), Error::EmptyInput, &["empty"]);
    check(
        Cursor::decode(&[1, 2, 3]),
        Error::BadMagic,
        &["not a weft export or cursor"],
    );
}
