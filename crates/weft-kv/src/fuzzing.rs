//! What the `kv_decode` fuzz target (and the tests replaying its corpus)
//! checks. Not a stable API.

use crate::MemKvStore;

/// Imports arbitrary `data` (checked and unchecked): `Ok` or `Err`, never
/// a panic; a failed import leaves the store empty; a table that imports
/// reads back the same through `get` and `scan` (both directions), and its
/// export imports to the same contents.
///
/// # Panics
///
/// When any of that fails.
#[allow(clippy::expect_used, reason = "a failed check is the fuzzer's finding")]
pub fn run_decode(data: &[u8]) {
    for check in [true, false] {
        let mut s = MemKvStore::new();
        let r = if check {
            s.import_all(data)
        } else {
            s.import_all_unchecked(data)
        };
        if r.is_err() {
            assert!(s.is_empty(), "a failed import left data behind");
            continue;
        }
        let all: Vec<(Vec<u8>, Vec<u8>)> = s.scan(..).map(|(k, v)| (k, v.to_vec())).collect();
        let mut back: Vec<(Vec<u8>, Vec<u8>)> =
            s.scan(..).rev().map(|(k, v)| (k, v.to_vec())).collect();
        back.reverse();
        assert_eq!(back, all, "reverse scan differs");
        for (k, v) in &all {
            assert_eq!(s.get(k), Some(v.as_slice()), "get differs from scan");
        }
        let out = s.export_all();
        let mut t = MemKvStore::new();
        t.import_all(&out).expect("an export imports");
        let again: Vec<(Vec<u8>, Vec<u8>)> = t.scan(..).map(|(k, v)| (k, v.to_vec())).collect();
        assert_eq!(again, all, "export lost data");
    }
}
