//! The small messages and the versions and cursors they carry, as
//! arbitrary bytes: version vectors, frontiers, cursors and presence
//! state decode to `Ok` or `Err`, never panic; what decodes re-encodes to
//! the same value; and what a peer could send in them (a version to check
//! out or diff, a cursor to resolve) gives `Ok` or `Err` on a real
//! document, which an `Err` leaves as it was.

use weft::{Cursor, EphemeralStore, ExportMode, Frontiers, Unit, VersionVector};

use crate::import::{import_target, observe};

/// See the module doc.
///
/// # Panics
///
/// When any of that fails.
pub fn run_small_decode(data: &[u8]) {
    // The frame's checksum would stop most mutations: also try each kind
    // with the checksum recomputed (the low 32 bits of the xxh3-64 of the
    // rest, little-endian, at the end).
    let mut inputs = vec![data.to_vec()];
    if data.len() >= 6 {
        let mut fixed = data.to_vec();
        let n = fixed.len() - 4;
        let sum = xxhash_rust::xxh3::xxh3_64(&fixed[..n]) as u32;
        fixed[n..].copy_from_slice(&sum.to_le_bytes());
        for magic in [0xC5, 0xC6, 0xC7, 0xC8] {
            let mut m = fixed.clone();
            m[0] = magic;
            let sum = xxhash_rust::xxh3::xxh3_64(&m[..n]) as u32;
            m[n..].copy_from_slice(&sum.to_le_bytes());
            inputs.push(m);
        }
        inputs.push(fixed);
    }
    let mut doc = import_target();
    for bytes in &inputs {
        if let Ok(vv) = VersionVector::decode(bytes) {
            assert_eq!(VersionVector::decode(&vv.encode()), Ok(vv.clone()));
            let before = observe(&doc);
            match doc.vv_to_frontiers(&vv) {
                Ok(f) => assert_eq!(doc.frontiers_to_vv(&f), Ok(vv.clone())),
                Err(_) => assert_eq!(observe(&doc), before),
            }
            // An update for a peer that says it is at `vv`.
            let _ = doc.export(ExportMode::Updates { from: &vv });
        }
        if let Ok(f) = Frontiers::decode(bytes) {
            assert_eq!(Frontiers::decode(&f.encode()), Ok(f.clone()));
            let before = observe(&doc);
            match doc.checkout(&f) {
                Ok(()) => {
                    doc.assert_invariants();
                    doc.checkout_to_latest().expect("returns");
                    assert_eq!(observe(&doc), before, "checkout and back");
                    let latest = doc.frontiers();
                    let diff = doc.diff(&f, &latest).expect("both versions known");
                    let _ = diff;
                    doc.fork_at(&f)
                        .expect("a known version")
                        .assert_invariants();
                    let _ = doc.export(ExportMode::SnapshotAt(&f)).expect("known");
                }
                Err(_) => {
                    assert!(!doc.is_detached());
                    assert_eq!(observe(&doc), before, "a failed checkout changed the doc");
                }
            }
        }
        if let Ok(cursor) = Cursor::decode(bytes) {
            assert_eq!(Cursor::decode(&cursor.encode()), Ok(cursor.clone()));
            for unit in [Unit::Char, Unit::Utf16, Unit::Utf8] {
                if let Ok(pos) = doc.cursor_pos_in(&cursor, unit) {
                    assert!(pos <= doc.text_len(cursor.text(), unit));
                }
            }
        }
        let store = EphemeralStore::with_clock(30_000, || 1_000_000);
        if store.apply(bytes).is_ok() {
            let again = EphemeralStore::with_clock(30_000, || 1_000_000);
            again.apply(&store.encode_all()).expect("own state");
            assert_eq!(again.get_all_states(), store.get_all_states());
        } else {
            assert!(store.keys().is_empty(), "a failed apply changed the store");
        }
    }
}
