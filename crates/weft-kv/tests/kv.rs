//! `weft-kv` against its golden fixtures, hostile bytes and a `BTreeMap`.
//!
//! The fixtures in `tests/fixtures/` are the format: a change that makes
//! the writer produce different bytes fails here. Regenerate them only for
//! a deliberate format change, with
//! `WEFT_KV_BLESS=1 cargo test -p weft-kv -- --test-threads=1`.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::PathBuf;

use weft_kv::{Error, MemKvStore, TableWriter};

/// SplitMix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn bytes(&mut self, max: u64) -> Vec<u8> {
        let n = self.below(max + 1);
        (0..n)
            .map(|_| b"abcdxyz/0123"[self.below(12) as usize])
            .collect()
    }
}

/// The entries of each fixture.
fn fixture_entries(name: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    match name {
        "empty" => Vec::new(),
        "small" => vec![
            (b"apple".to_vec(), b"red".to_vec()),
            (b"apricot".to_vec(), b"orange".to_vec()),
            (b"banana".to_vec(), b"yellow".to_vec()),
        ],
        // Several blocks, shared prefixes, an empty value and a value
        // larger than a block.
        "blocks" => {
            let mut v: Vec<(Vec<u8>, Vec<u8>)> = (0..600u32)
                .map(|i| {
                    (
                        format!("key/{i:05}").into_bytes(),
                        format!("value number {i}")
                            .repeat(1 + (i % 3) as usize)
                            .into_bytes(),
                    )
                })
                .collect();
            v.push((b"key/big".to_vec(), vec![7u8; 10_000]));
            v.push((b"zzz".to_vec(), Vec::new()));
            v
        }
        _ => unreachable!(),
    }
}

const FIXTURES: &[&str] = &["empty", "small", "blocks"];

fn fixture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/{name}.sst"))
}

fn write(entries: &[(Vec<u8>, Vec<u8>)]) -> Vec<u8> {
    let mut w = TableWriter::new();
    for (k, v) in entries {
        w.add(k, v).unwrap();
    }
    w.finish()
}

fn fixture(name: &str) -> Vec<u8> {
    let path = fixture_path(name);
    if std::env::var("WEFT_KV_BLESS").is_ok() {
        std::fs::write(&path, write(&fixture_entries(name))).unwrap();
    }
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn contents(store: &MemKvStore) -> Vec<(Vec<u8>, Vec<u8>)> {
    store.scan(..).map(|(k, v)| (k, v.to_vec())).collect()
}

#[test]
fn fixtures_read_back_and_are_what_the_writer_writes() {
    for name in FIXTURES {
        let bytes = fixture(name);
        let entries = fixture_entries(name);
        assert_eq!(
            write(&entries),
            bytes,
            "{name}: the writer's bytes changed (format change?)"
        );
        let mut store = MemKvStore::new();
        store.import_all(&bytes).unwrap();
        assert_eq!(contents(&store), entries, "{name}");
        assert_eq!(store.len(), entries.len());
        for (k, v) in &entries {
            assert_eq!(store.get(k), Some(v.as_slice()));
        }
        // Untouched: re-export is byte-identical.
        assert_eq!(store.export_all(), bytes, "{name}: re-export");
    }
    // The block structure: "blocks" spans several blocks.
    assert!(fixture("blocks").len() > 4 * 4096);
}

#[test]
fn every_truncation_is_an_error() {
    for name in FIXTURES {
        let bytes = fixture(name);
        for len in 0..bytes.len() {
            let mut s = MemKvStore::new();
            assert!(
                s.import_all(&bytes[..len]).is_err(),
                "{name}: truncated to {len}"
            );
            assert!(s.is_empty());
        }
    }
}

#[test]
fn every_byte_flip_is_an_error() {
    for name in FIXTURES {
        let bytes = fixture(name);
        for i in 0..bytes.len() {
            for flip in [0x01u8, 0x80, 0xFF] {
                let mut damaged = bytes.clone();
                damaged[i] ^= flip;
                let mut s = MemKvStore::new();
                assert!(
                    s.import_all(&damaged).is_err(),
                    "{name}: byte {i} ^ {flip:#x}"
                );
            }
        }
    }
}

#[test]
fn unchecked_import_skips_checksums_but_not_structure() {
    let bytes = fixture("small");
    // A flipped value byte keeps the structure: only the checksum sees it.
    let at = bytes.iter().position(|&b| b == b'r').unwrap();
    let mut damaged = bytes.clone();
    damaged[at] = b'R';
    assert!(matches!(
        MemKvStore::new().import_all(&damaged),
        Err(Error::ChecksumMismatch { .. })
    ));
    let mut s = MemKvStore::new();
    s.import_all_unchecked(&damaged).unwrap();
    assert_eq!(s.get(b"apple"), Some(&b"Red"[..]));
    // A broken length is caught either way.
    let mut broken = bytes.clone();
    broken[1] = 200;
    assert!(MemKvStore::new().import_all_unchecked(&broken).is_err());
}

/// Found by the `kv_decode` fuzzer: a table imported unchecked whose block
/// was damaged (structure intact) was re-exported with that block copied
/// as it was, so the export failed its own checksum.
#[test]
fn regression_unchecked_damage_is_not_copied_into_exports() {
    let bytes = fixture("small");
    let at = bytes.iter().position(|&b| b == b'r').unwrap();
    let mut damaged = bytes.clone();
    damaged[at] = b'R';
    let mut s = MemKvStore::new();
    s.import_all_unchecked(&damaged).unwrap();
    let out = s.export_all();
    let mut t = MemKvStore::new();
    t.import_all(&out).unwrap();
    assert_eq!(t.get(b"apple"), Some(&b"Red"[..]));
    // An intact table imported unchecked still re-exports byte for byte.
    let mut u = MemKvStore::new();
    u.import_all_unchecked(&bytes).unwrap();
    assert_eq!(u.export_all(), bytes);
}

#[test]
fn headers_are_checked() {
    let good = fixture("small");
    let n = good.len();
    let mut bad = good.clone();
    bad[n - 1] = b'x';
    assert_eq!(MemKvStore::new().import_all(&bad), Err(Error::BadMagic));
    let mut bad = good.clone();
    bad[n - 8] = 2;
    assert_eq!(
        MemKvStore::new().import_all(&bad),
        Err(Error::UnsupportedVersion(2))
    );
    let mut bad = good.clone();
    bad[n - 7] = 1;
    assert!(matches!(
        MemKvStore::new().import_all(&bad),
        Err(Error::InvalidBlock { .. })
    ));
    assert_eq!(
        MemKvStore::new().import_all(b"wkv1"),
        Err(Error::UnexpectedEof)
    );
}

#[test]
fn writer_rejects_unsorted_keys() {
    let mut w = TableWriter::new();
    w.add(b"b", b"").unwrap();
    assert_eq!(w.add(b"b", b""), Err(Error::UnsortedKey));
    assert_eq!(w.add(b"a", b""), Err(Error::UnsortedKey));
    w.add(b"c", b"").unwrap();
}

#[test]
fn random_operations_match_a_btreemap() {
    for seed in 0..40u64 {
        let mut rng = Rng(seed);
        let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        let mut store = MemKvStore::new();
        for step in 0..400 {
            match rng.below(10) {
                0..=4 => {
                    let k = rng.bytes(6);
                    let max = if rng.below(20) == 0 { 6000 } else { 30 };
                    let v = rng.bytes(max);
                    store.set(&k, &v);
                    model.insert(k, v);
                }
                5..=6 => {
                    let k = rng.bytes(6);
                    store.remove(&k);
                    model.remove(&k);
                }
                7 => {
                    // Round trip through bytes (sometimes stacking tables).
                    let bytes = store.export_all();
                    if rng.below(2) == 0 {
                        store = MemKvStore::new();
                    }
                    store.import_all(&bytes).unwrap();
                }
                _ => {
                    let a = rng.bytes(3);
                    let b = rng.bytes(3);
                    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
                    let got: Vec<(Vec<u8>, Vec<u8>)> = store
                        .scan((
                            Bound::Included(lo.as_slice()),
                            Bound::Excluded(hi.as_slice()),
                        ))
                        .rev()
                        .map(|(k, v)| (k, v.to_vec()))
                        .collect();
                    let want: Vec<(Vec<u8>, Vec<u8>)> = model
                        .range(lo.clone()..hi.clone())
                        .rev()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    assert_eq!(got, want, "seed {seed} step {step}: scan");
                }
            }
            let k = rng.bytes(6);
            assert_eq!(store.get(&k), model.get(&k).map(Vec::as_slice));
        }
        assert_eq!(store.len(), model.len(), "seed {seed}");
        let all: Vec<(Vec<u8>, Vec<u8>)> = model.into_iter().collect();
        assert_eq!(contents(&store), all, "seed {seed}");
        let mut copy = MemKvStore::new();
        copy.import_all(&store.export_all()).unwrap();
        assert_eq!(contents(&copy), all, "seed {seed}: export");
    }
}

#[test]
fn untouched_blocks_are_reused() {
    let bytes = fixture("blocks");
    let mut store = MemKvStore::new();
    store.import_all(&bytes).unwrap();
    store.set(b"key/00001", b"changed");
    let out = store.export_all();
    // Only the first block changed: everything from the second block's
    // bytes on is identical (same length here, so same offsets).
    let mut copy = MemKvStore::new();
    copy.import_all(&out).unwrap();
    assert_eq!(copy.get(b"key/00001"), Some(&b"changed"[..]));
    // The later blocks are copied as they were: a stretch of the old data
    // region reappears verbatim (at a shifted offset).
    let stretch = &bytes[3 * 4096..6 * 4096];
    assert!(
        out.windows(stretch.len()).any(|w| w == stretch),
        "untouched blocks were re-encoded"
    );
    assert_ne!(out, bytes);
}

/// The `kv_decode` fuzz corpus and its crashes, replayed on stable.
#[test]
fn kv_decode_corpus() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut seen = 0;
    for dir in ["corpus/kv_decode", "artifacts/kv_decode"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for e in entries.flatten() {
            let data = std::fs::read(e.path()).unwrap();
            let r = std::panic::catch_unwind(|| weft_kv::fuzzing::run_decode(&data));
            assert!(r.is_ok(), "kv_decode failed on {}", e.path().display());
            seen += 1;
        }
    }
    assert!(seen >= 3, "the kv_decode corpus is committed");
}

/// Thousands of small entries with shared prefixes (as a snapshot's
/// per-text keys): every key is found after a round trip through bytes,
/// from any restart point of its block, and keys between them are not.
#[test]
fn lookups_in_blocks_of_many_small_entries() {
    let key = |tag: u8, i: u32| {
        // Big-endian, so keys sort by the number.
        vec![
            tag,
            (i >> 24) as u8,
            (i >> 16) as u8,
            (i >> 8) as u8,
            i as u8,
        ]
    };
    let mut store = MemKvStore::new();
    for i in 0..5000u32 {
        for tag in [b's', b't'] {
            store.set(&key(tag, i * 2), &i.to_le_bytes()[..(i % 4) as usize + 1]);
        }
    }
    let bytes = store.export_all();
    for checked in [true, false] {
        let mut copy = MemKvStore::new();
        if checked {
            copy.import_all(&bytes).unwrap();
        } else {
            copy.import_all_unchecked(&bytes).unwrap();
        }
        for i in 0..5000u32 {
            for tag in [b's', b't'] {
                let want = &i.to_le_bytes()[..(i % 4) as usize + 1];
                assert_eq!(copy.get(&key(tag, i * 2)), Some(want), "{tag} {i}");
                assert_eq!(copy.get(&key(tag, i * 2 + 1)), None);
            }
        }
        assert_eq!(copy.get(b"r"), None);
        assert_eq!(copy.get(b"u"), None);
    }
}
