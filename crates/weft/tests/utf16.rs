//! UTF-16 deltas: events counted in UTF-16 units, replayed into another
//! document with `apply_delta_utf16`, keep it equal (what a JavaScript
//! editor bound to Weft does both ways).

use std::sync::{Arc, Mutex};

use weft::{Delta, Doc, Error, Unit};
use weft_testkit::Rng;

#[test]
fn utf16_events_replayed_with_apply_delta_utf16_keep_a_copy_equal() {
    for seed in 0..40u64 {
        let mut rng = Rng::new(seed);
        let mut doc = Doc::new();
        let mut copy = Doc::new();
        let inbox = Arc::new(Mutex::new(Vec::<Vec<Delta>>::new()));
        let sink = Arc::clone(&inbox);
        let _sub = doc.subscribe_in(Unit::Utf16, move |e| {
            for diff in &e.texts {
                sink.lock().unwrap().push(diff.delta.clone());
            }
        });
        for _ in 0..60 {
            let mut t = doc.text("t");
            let len = t.len();
            match rng.below(6) {
                0..=2 => {
                    let s = ["a", "😀", "é", "🇺🇸x", "\n"][rng.below(5)];
                    t.insert(rng.below(len + 1), s).unwrap();
                }
                3 if len > 0 => {
                    let pos = rng.below(len);
                    t.delete(pos, 1 + rng.below((len - pos).min(3))).unwrap();
                }
                4 if len > 1 => {
                    let pos = rng.below(len - 1);
                    t.mark(pos..len, "bold", rng.chance(50)).unwrap();
                }
                _ => {}
            }
            if rng.chance(40) {
                doc.commit();
                for delta in inbox.lock().unwrap().drain(..) {
                    copy.text("t").apply_delta_utf16(&delta).unwrap();
                }
                assert_eq!(
                    copy.text("t").to_delta(),
                    doc.text("t").to_delta(),
                    "seed {seed}"
                );
            }
        }
    }
}

#[test]
fn utf16_slices_and_bad_counts() {
    let mut doc = Doc::new();
    let mut t = doc.text("t");
    t.insert(0, "a😀b").unwrap();
    t.mark(1..2, "bold", true).unwrap();
    assert_eq!(
        t.slice_delta_utf16(1..3).unwrap(),
        vec![Delta::insert_with("😀", [("bold", true)])]
    );
    assert!(matches!(
        t.slice_delta_utf16(2..3),
        Err(Error::NotCharBoundary { .. })
    ));
    let before = t.to_delta();
    assert!(matches!(
        t.apply_delta_utf16(&[Delta::retain(2), Delta::delete(1)]),
        Err(Error::NotCharBoundary { .. })
    ));
    assert!(matches!(
        t.apply_delta_utf16(&[Delta::retain(1), Delta::delete(9)]),
        Err(Error::RangeOutOfBounds { .. })
    ));
    assert_eq!(t.to_delta(), before, "a refused delta changes nothing");
}
