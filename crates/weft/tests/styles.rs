//! Styles over long histories: typing where the text of many marks was
//! deleted does not bring any of them back, and reading or making styles
//! costs about the same however many marks come before.

use weft::{Delta, Doc, ExportMode, Value, VersionVector};
use weft_testkit::{full, RefDoc};

const T: &str = "t";

/// A document as peer `peer`, with keys named after each expand rule.
fn doc(peer: u64) -> Doc {
    weft_testkit::styled_doc(peer)
}

/// `x`, then `n` chars `m` each under its own mark of `key`, then `y`;
/// all the `m`s deleted.
fn dead_marks(peer: u64, n: usize, key: &str) -> Doc {
    let mut d = doc(peer);
    let mut t = d.text(T);
    t.insert(0, &format!("x{}y", "m".repeat(n))).unwrap();
    for i in 0..n {
        t.mark(1 + i..2 + i, key, true).unwrap();
    }
    t.delete(1, n).unwrap();
    d
}

#[test]
fn typing_where_many_marks_were_deleted_revives_none() {
    let plain = vec![Delta::insert("xZy")];
    for key in ["after", "before", "both", "none"] {
        // The gap of tombstones and anchors between `x` and `y` holds 3n
        // items: up to 21 marks it was read item by item before, from 22
        // on it is searched in the anchor tree.
        for n in [21, 22, 100, 10_000] {
            let what = format!("{key} over {n} deleted marks");
            let mut d = dead_marks(1, n, key);
            let snapshot = d.export(ExportMode::Snapshot).unwrap();
            d.text(T).insert(1, "Z").unwrap();
            d.assert_invariants();
            assert_eq!(d.text(T).to_delta(), plain, "{what}");
            // A replica agrees.
            let mut fresh = Doc::new();
            fresh.import(&full(&d)).unwrap();
            assert_eq!(fresh.text(T).to_delta(), plain, "{what}: replica");
            // And a document loaded from a snapshot types the same way.
            let mut loaded = doc(2);
            loaded.import(&snapshot).unwrap();
            loaded.text(T).insert(1, "Z").unwrap();
            loaded.assert_invariants();
            assert_eq!(loaded.text(T).to_delta(), plain, "{what}: from a snapshot");
            // The reference model (a full scan of the gap) agrees, op for op.
            if n <= 100 {
                let mut r = RefDoc::new(1);
                r.insert(0, &format!("x{}y", "m".repeat(n)));
                for i in 0..n {
                    r.mark(1 + i..2 + i, key, Value::Bool(true));
                }
                r.delete(1, n);
                r.insert(1, "Z");
                assert_eq!(r.to_delta(), plain, "{what}: model");
                let mut version = VersionVector::new();
                for (peer, ops) in r.version() {
                    version.set(peer, ops);
                }
                assert_eq!(d.version(), version, "{what}: ops against the model");
            }
        }
    }
}

/// A text of 40,000 chars with `marks` one-char bold marks spread over
/// its first 90%.
fn marked(marks: usize) -> Doc {
    let mut d = doc(1);
    let mut t = d.text(T);
    t.insert(0, &"abcdefghij".repeat(4_000)).unwrap();
    let step = 36_000 / marks;
    for i in 0..marks {
        t.mark(i * step..i * step + 1, "bold", true).unwrap();
    }
    d
}

/// Right of 16,000 earlier marks, new marks and style reads answer as
/// the whole delta says (their cost, which no longer grows with the marks
/// before them, is measured by the `marks_scaling` benchmark, not here).
#[test]
fn styles_right_of_many_marks_read_correctly() {
    let mut d = marked(16_000);
    let mut t = d.text(T);
    for k in 0..50 {
        let at = 37_000 + 20 * k;
        t.mark(at..at + 2, "italic", true).unwrap();
    }
    let delta = t.to_delta();
    // The char at each position, with its attributes, from the delta.
    let mut expected = Vec::new();
    for run in &delta {
        if let Delta::Insert { insert, attributes } = run {
            expected.extend(insert.chars().map(|_| attributes.clone()));
        }
    }
    assert_eq!(expected.len(), 40_000);
    for pos in (0..40_000).step_by(7).chain(36_990..37_100) {
        assert_eq!(t.attributes_at(pos).unwrap(), expected[pos], "at {pos}");
    }
    let italic = expected.iter().filter(|a| a.contains_key("italic")).count();
    assert_eq!(italic, 100);
    let bold = expected.iter().filter(|a| a.contains_key("bold")).count();
    assert_eq!(bold, 16_000);
}
