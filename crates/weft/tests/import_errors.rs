//! Hostile bytes: every import of damaged or forged input returns an error
//! (never a panic), and a failed import leaves the document exactly as it
//! was.

use weft::{Doc, Error, ExportMode};
use weft_testkit::{body, full, observe as state, section, varint, wrap, Observed as State, Rng};
use xxhash_rust::xxh3::xxh3_64;

/// A document with two peers' concurrent edits and marks in two texts.
fn source() -> Doc {
    let mut a = Doc::new();
    a.set_peer_id(1).unwrap();
    a.text("body").insert(0, "Hello wörld 😀").unwrap();
    a.text("title").insert(0, "T").unwrap();
    a.text("body").mark(0..5, "bold", true).unwrap();
    let mut b = a.fork();
    b.set_peer_id(2).unwrap();
    b.text("body").insert(5, ", dear").unwrap();
    b.text("body").delete(0, 1).unwrap();
    b.text("body")
        .mark(3..9, "link", "https://example.com/ü")
        .unwrap();
    a.text("body").insert(0, "«").unwrap();
    a.text("body").delete(3, 4).unwrap();
    a.text("body").unmark(1..2, "bold").unwrap();
    let bytes = b
        .export(ExportMode::Updates { from: &a.version() })
        .unwrap();
    a.import(&bytes).unwrap();
    a
}

/// A document with content and history of its own, plus a pending update.
fn target() -> Doc {
    let mut d = Doc::new();
    d.set_peer_id(9).unwrap();
    d.text("body").insert(0, "mine").unwrap();
    let mut other = Doc::new();
    other.set_peer_id(5).unwrap();
    other.text("body").insert(0, "x").unwrap();
    let v = other.version();
    other.commit();
    other.text("body").insert(1, "y").unwrap();
    let later = other.export(ExportMode::Updates { from: &v }).unwrap();
    assert!(!d.import(&later).unwrap().pending.is_empty());
    d
}

/// Imports `bytes` into a copy of `doc`: on error the copy must be
/// unchanged, on success it must be internally consistent.
fn import_checked(doc: &Doc, before: &State, bytes: &[u8]) -> Result<(), Error> {
    let mut copy = doc.clone();
    match copy.import(bytes) {
        Ok(_) => {
            copy.assert_invariants();
            Ok(())
        }
        Err(e) => {
            assert_eq!(&state(&copy), before, "failed import changed the doc: {e}");
            Err(e)
        }
    }
}

fn rehash(bytes: &mut [u8]) {
    let sum = xxh3_64(&bytes[16..]);
    bytes[8..16].copy_from_slice(&sum.to_le_bytes());
}

#[test]
fn truncation_at_every_offset_is_an_error() {
    let bytes = full(&source());
    for doc in [Doc::new(), target()] {
        let doc = doc;
        let before = state(&doc);
        for len in 0..bytes.len() {
            assert!(
                import_checked(&doc, &before, &bytes[..len]).is_err(),
                "len {len}"
            );
        }
        import_checked(&doc, &before, &bytes).unwrap();
    }
}

#[test]
fn bit_flips_are_detected_or_harmless() {
    let bytes = full(&source());
    let doc = target();
    let before = state(&doc);
    let bits = (bytes.len() * 8).min(4096 * 8);
    for bit in 0..bits {
        let mut damaged = bytes.clone();
        damaged[bit / 8] ^= 1 << (bit % 8);
        // The checksum (or the header check) catches every flip...
        assert!(
            import_checked(&doc, &before, &damaged).is_err(),
            "bit {bit}"
        );
        // ...and with a forged checksum the decoder still never panics.
        if bit >= 16 * 8 {
            rehash(&mut damaged);
            let _ = import_checked(&doc, &before, &damaged);
        }
    }
}

#[test]
fn random_garbage_with_valid_checksums_never_panics() {
    let bytes = full(&source());
    let doc = target();
    let before = state(&doc);
    let mut rng = Rng::new(99);
    for _ in 0..3000 {
        let mut damaged = bytes.clone();
        for _ in 0..1 + rng.below(4) {
            let i = 16 + rng.below(damaged.len() - 16);
            damaged[i] = rng.next_u64() as u8;
        }
        if rng.chance(20) {
            let cut = 16 + rng.below(damaged.len() - 16);
            damaged.truncate(cut);
        }
        rehash(&mut damaged);
        let _ = import_checked(&doc, &before, &damaged);
    }
}

#[test]
fn headers_are_checked() {
    let doc = target();
    let before = state(&doc);
    let good = full(&source());
    let mut bad = good.clone();
    bad[0] = b'W';
    assert_eq!(import_checked(&doc, &before, &bad), Err(Error::BadMagic));
    let mut bad = good.clone();
    bad[4] = 6;
    assert_eq!(
        import_checked(&doc, &before, &bad),
        Err(Error::UnsupportedVersion(6))
    );
    bad[4] = 0;
    assert_eq!(
        import_checked(&doc, &before, &bad),
        Err(Error::UnsupportedVersion(0))
    );
    // Version 2 expects a commit infos section the body does not have.
    bad[4] = 2;
    assert!(matches!(
        import_checked(&doc, &before, &bad),
        Err(Error::UnexpectedEof | Error::Malformed { .. })
    ));
    let mut bad = good.clone();
    bad[5] = 9;
    assert_eq!(
        import_checked(&doc, &before, &bad),
        Err(Error::UnsupportedMode(9))
    );
    // Reserved bytes set: a later format this build cannot read.
    let mut bad = good.clone();
    bad[7] = 1;
    assert_eq!(
        import_checked(&doc, &before, &bad),
        Err(Error::UnsupportedVersion(good[4]))
    );
    assert_eq!(import_checked(&doc, &before, &[]), Err(Error::EmptyInput));
    assert_eq!(
        import_checked(&doc, &before, &good[..3]),
        Err(Error::UnexpectedEof)
    );
    assert_eq!(
        import_checked(&doc, &before, &good[..10]),
        Err(Error::UnexpectedEof)
    );
    let mut bad = good;
    let last = bad.len() - 1;
    bad[last] ^= 0xFF;
    assert!(matches!(
        import_checked(&doc, &before, &bad),
        Err(Error::ChecksumMismatch { .. })
    ));
}

#[test]
fn huge_length_prefixes_fail_fast_without_allocating() {
    let doc = target();
    let before = state(&doc);
    for huge in [u64::from(u32::MAX), 1 << 60, u64::MAX] {
        // As a section length.
        let mut b = Vec::new();
        varint(&mut b, huge);
        assert!(import_checked(&doc, &before, &wrap(&b)).is_err());
        // As a peer count, text count, change count and name length.
        let mut count = Vec::new();
        varint(&mut count, huge);
        let b = body(&[1], &["t"], &count, &[], "");
        assert!(import_checked(&doc, &before, &wrap(&b)).is_err());
        let mut p = Vec::new();
        section(&mut p, &count);
        assert!(import_checked(&doc, &before, &wrap(&p)).is_err());
        let mut t = Vec::new();
        varint(&mut t, 1);
        varint(&mut t, huge);
        let mut b = Vec::new();
        section(&mut b, &[0]);
        section(&mut b, &t);
        assert!(import_checked(&doc, &before, &wrap(&b)).is_err());
        // As a change length and an op length.
        let mut c = vec![1, 0, 1];
        varint(&mut c, huge);
        c.push(0);
        assert!(import_checked(
            &doc,
            &before,
            &wrap(&body(&[7], &["t"], &c, &[0, 1, 0, 0], "a"))
        )
        .is_err());
        let mut ops = vec![0];
        varint(&mut ops, huge);
        ops.extend([0, 0]);
        assert!(import_checked(
            &doc,
            &before,
            &wrap(&body(&[7], &["t"], &[1, 0, 1, 1, 0], &ops, "a"))
        )
        .is_err());
    }
}

#[test]
fn forged_updates_are_rejected_whole() {
    let doc = target();
    let before = state(&doc);
    // Change 0: peer 7 inserts "ab"; change 1 inserts "c" after op 99@7,
    // which does not exist. Nothing of the batch may be applied.
    let changes = [2, 0, 1, 2, 0, 0, 0, 1, 1];
    let mut ops = vec![2 << 4, 0, 0];
    ops.push(1 << 4);
    // Left origin relative to 1@7: counter 99 -> delta -98.
    varint(&mut ops, (((-98i64 << 1) ^ (-98i64 >> 63)) as u64) << 1 | 1);
    ops.push(0);
    let bytes = wrap(&body(&[7], &["body"], &changes, &ops, "abc"));
    assert_eq!(
        import_checked(&doc, &before, &bytes),
        Err(Error::UnknownId(weft::OpId::new(7, 99)))
    );
    // The same batch with a valid origin (1@7) applies.
    let ops = [2 << 4, 0, 0, 1 << 4, 1, 0];
    let bytes = wrap(&body(&[7], &["body"], &changes, &ops, "abc"));
    import_checked(&doc, &before, &bytes).unwrap();
    let mut copy = doc.clone();
    copy.import(&bytes).unwrap();
    assert_eq!(copy.text("body").to_string(), "abcmine");

    // An origin that names a delete op of the same update.
    let changes = [3, 0, 1, 1, 0, 0, 0, 1, 1, 0, 0, 1, 1];
    let ops = [1 << 4, 0, 0, 1 << 4 | 2, 1, 1 << 4, 3, 0];
    let bytes = wrap(&body(&[7], &["body"], &changes, &ops, "ab"));
    assert_eq!(
        import_checked(&doc, &before, &bytes),
        Err(Error::UnknownId(weft::OpId::new(7, 1)))
    );

    // A reserved peer id, content that does not match the op lengths,
    // invalid UTF-8 and a delete of something that is not a char.
    let cases = [
        wrap(&body(
            &[u64::MAX],
            &["t"],
            &[1, 0, 1, 1, 0],
            &[1 << 4, 0, 0],
            "a",
        )),
        wrap(&body(&[7], &["t"], &[1, 0, 1, 1, 0], &[1 << 4, 0, 0], "ab")),
        wrap(&body(&[7], &["t"], &[1, 0, 1, 1, 0], &[1 << 4, 0, 0], "")),
        wrap(&body(&[7], &["t"], &[1, 0, 1, 1, 0], &[1 << 4 | 2, 1], "")),
    ];
    for bytes in &cases {
        assert!(import_checked(&doc, &before, bytes).is_err());
    }
    let mut bad_utf8 = body(&[7], &["t"], &[1, 0, 1, 1, 0], &[1 << 4, 0, 0], "");
    bad_utf8.pop();
    bad_utf8.extend([1, 0xFF]);
    assert!(import_checked(&doc, &before, &wrap(&bad_utf8)).is_err());
}

/// A valid hand-made update: peer 7 inserts "ab" into text "t" and marks
/// it bold (ops 0-1 insert, 2 mark start glued before 'a', 3 mark end at
/// the end of the text). `patch` edits the change and op bytes first.
fn marked(patch: impl Fn(&mut Vec<u8>, &mut Vec<u8>)) -> Vec<u8> {
    let mut changes = vec![1, 0, 1, 4, 0];
    let mut ops = vec![2 << 4, 0, 0];
    // Start: left none, right 0@7 (2 before its own id), expand after,
    // key "bold", value true.
    ops.extend([0x16, 0, 9, 0, 4, b'b', b'o', b'l', b'd', 2]);
    // End: no glue (end of text), start 2@7 (1 before its own id).
    ops.extend([0x17, 0, 0, 5]);
    patch(&mut changes, &mut ops);
    wrap(&body(&[7], &["t"], &changes, &ops, "ab"))
}

#[test]
fn forged_marks_are_rejected() {
    let doc = target();
    let before = state(&doc);
    let good = marked(|_, _| {});
    import_checked(&doc, &before, &good).unwrap();
    let mut copy = doc.clone();
    copy.import(&good).unwrap();
    assert_eq!(
        copy.text("t").to_delta(),
        vec![weft::Delta::insert_with("ab", [("bold", true)])]
    );

    // The end names an insert, not a mark start.
    let bad = marked(|_, ops| *ops.last_mut().unwrap() = 13);
    assert_eq!(
        import_checked(&doc, &before, &bad),
        Err(Error::UnknownId(weft::OpId::new(7, 0)))
    );
    // The start is glued on both sides.
    let bad = marked(|_, ops| ops[4] = 1);
    assert!(import_checked(&doc, &before, &bad).is_err());
    // A mark op of length 2, an unknown expand rule.
    let bad = marked(|_, ops| ops[3] = 0x26);
    assert!(import_checked(&doc, &before, &bad).is_err());
    let bad = marked(|_, ops| ops[6] = 9);
    assert!(matches!(
        import_checked(&doc, &before, &bad),
        Err(Error::Malformed { .. })
    ));
    // A second end for the same mark.
    let bad = marked(|changes, ops| {
        changes[3] = 5;
        ops.extend([0x17, 0, 0, 9]);
    });
    assert_eq!(
        import_checked(&doc, &before, &bad),
        Err(Error::UnknownId(weft::OpId::new(7, 2)))
    );
    // A value nested deeper than the decoder allows.
    let bad = marked(|_, ops| {
        let at = 12;
        ops.splice(at..at + 1, [6u8, 1].repeat(100).into_iter().chain([0]));
    });
    assert!(matches!(
        import_checked(&doc, &before, &bad),
        Err(Error::Malformed { .. })
    ));
}

/// A 50-byte update naming 2^31 ops (2^30 inserts without content and
/// the 2^30 deletes of them): it imports as one tombstone item, and
/// nothing sized by the op count is allocated. The importer's one-bit-
/// per-op table was 128 MiB here (320 ms) before it fell back to its run
/// list for such updates; the snapshot's history blocks were cut every
/// 32,768 seqs, which made this doc's snapshot 988 KB, before blocks were
/// sized by the bytes of their runs.
#[test]
fn an_update_naming_billions_of_ops_stays_small() {
    let n: u64 = 1 << 30;
    let mut changes = Vec::new();
    for v in [1, 0, 1, 2 * n, 0] {
        varint(&mut changes, v);
    }
    let mut ops = vec![4u8]; // insert without content, length follows
    varint(&mut ops, n);
    ops.extend_from_slice(&[0, 0]); // no origins
    ops.push(2); // delete, length follows
    varint(&mut ops, n);
    // The first insert, relative to the insert run's last op.
    varint(&mut ops, (((n - 1) << 1) << 1) | 1);
    let bytes = wrap(&body(&[5], &["t"], &changes, &ops, ""));
    assert!(bytes.len() < 64);
    let mut doc = Doc::new();
    doc.import(&bytes).unwrap();
    assert_eq!(doc.version().get(5), 2 * n as u32);
    let (ops, runs, changes, items) = doc.debug_sizes();
    assert_eq!((ops as u64, runs, changes, items), (2 * n, 2, 1, 1));
    doc.text("t").insert(0, "x").unwrap();
    let snapshot = doc.export(ExportMode::Snapshot).unwrap();
    assert!(snapshot.len() < 400, "{} bytes", snapshot.len());
    let mut copy = Doc::new();
    copy.import(&snapshot).unwrap();
    copy.load().unwrap();
    assert_eq!(copy.text("t").to_string(), "x");
}

/// Forged cancel runs (update format 5, sub-kind 1) are refused whole:
/// a cancel of an insert, of an op the update does not hold, an empty
/// run, and a cancel in a format version before cancels.
#[test]
fn forged_cancels_are_rejected() {
    let doc = target();
    let before = state(&doc);
    let mut a = Doc::new();
    a.set_peer_id(7).unwrap();
    a.text("t").insert(0, "ab").unwrap(); // ops 0, 1
    a.text("t").delete(1, 1).unwrap(); // op 2
    a.cancel(weft::OpId::new(7, 2), 1).unwrap(); // op 3
    let good = full(&a);
    assert_eq!(good[4], 5, "cancels are format version 5");
    // The cancel run: escape, sub-kind 1, length 1, text 0, target
    // relative to its own id 3@7 (same peer, 1 back: zigzag 2, so 5).
    let at = good
        .windows(6)
        .position(|w| w == [0x06, 0x00, 0x01, 0x01, 0x00, 0x05])
        .expect("the cancel run is in the update");
    let forged = |patch: &dyn Fn(&mut Vec<u8>)| {
        let mut bytes = good.clone();
        patch(&mut bytes);
        let sum = xxh3_64(&bytes[16..]);
        bytes[8..16].copy_from_slice(&sum.to_le_bytes());
        bytes
    };
    // Its target made the insert 0@7 (3 back: zigzag 6, so 13).
    let insert = forged(&|b| b[at + 5] = 13);
    assert_eq!(
        import_checked(&doc, &before, &insert),
        Err(Error::UnknownId(weft::OpId::new(7, 0)))
    );
    // Its target is itself (0 back).
    let itself = forged(&|b| b[at + 5] = 1);
    assert!(import_checked(&doc, &before, &itself).is_err());
    // An empty run.
    let empty = forged(&|b| b[at + 3] = 0);
    assert!(matches!(
        import_checked(&doc, &before, &empty),
        Err(Error::Malformed {
            what: "op length",
            ..
        })
    ));
    // Sub-kind 1 in a version 4 update.
    let old = forged(&|b| b[4] = 4);
    assert!(matches!(
        import_checked(&doc, &before, &old),
        Err(Error::Malformed {
            what: "op kind",
            ..
        })
    ));
    // The unforged update imports.
    let mut copy = doc.clone();
    copy.import(&good).unwrap();
    assert_eq!(copy.text("t").to_string(), "ab");
}
