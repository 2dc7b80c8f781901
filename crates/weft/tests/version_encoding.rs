//! Version vectors and frontiers as bytes and through serde: they round
//! trip, and damaged or hostile input is an error, never a panic.

use weft::{Doc, ExportMode, Frontiers, OpId, VersionVector};
use weft_testkit::Rng;

/// A random vector: small and huge peer ids, small and huge counters.
fn random_vector(rng: &mut Rng) -> VersionVector {
    let n = rng.below(12);
    (0..n)
        .map(|_| {
            let peer = match rng.below(3) {
                0 => rng.below(10) as u64,
                1 => rng.next_u64() % (u64::MAX - 1),
                _ => u64::MAX - 1 - rng.below(3) as u64,
            };
            let end = if rng.chance(20) {
                u32::MAX
            } else {
                1 + rng.below(1000) as u32
            };
            (peer, end)
        })
        .collect()
}

/// Random frontiers, several heads of one peer included.
fn random_frontiers(rng: &mut Rng) -> Frontiers {
    let n = rng.below(8);
    (0..n)
        .map(|_| {
            let peer = if rng.chance(50) {
                rng.below(3) as u64
            } else {
                rng.next_u64() % (u64::MAX - 1)
            };
            OpId::new(peer, rng.next_u64() as u32)
        })
        .collect()
}

/// Every strict prefix and every single-bit flip of `bytes` is an error.
fn assert_damage_is_detected<T: std::fmt::Debug>(
    bytes: &[u8],
    decode: impl Fn(&[u8]) -> Result<T, weft::Error>,
) {
    for len in 0..bytes.len() {
        assert!(decode(&bytes[..len]).is_err(), "truncated to {len}");
    }
    for i in 0..bytes.len() {
        for bit in 0..8 {
            let mut bad = bytes.to_vec();
            bad[i] ^= 1 << bit;
            assert!(decode(&bad).is_err(), "byte {i} bit {bit}");
        }
    }
    let mut longer = bytes.to_vec();
    longer.push(0);
    assert!(decode(&longer).is_err(), "a byte appended");
}

#[test]
fn versions_of_synced_docs_round_trip() {
    let mut a = Doc::new();
    a.set_peer_id(1).unwrap();
    let mut b = Doc::new();
    b.set_peer_id(u64::MAX - 1).unwrap();
    a.text("t").insert(0, "hello").unwrap();
    b.text("t").insert(0, "world").unwrap();
    let for_b = a
        .export(ExportMode::Updates { from: &b.version() })
        .unwrap();
    b.import(&for_b).unwrap();
    for doc in [&a, &b] {
        let v = doc.version();
        assert_eq!(VersionVector::decode(&v.encode()).unwrap(), v);
        let f = doc.frontiers();
        assert_eq!(Frontiers::decode(&f.encode()).unwrap(), f);
    }
    // A handshake: b sends its version, a exports what b lacks.
    let wire = b.version().encode();
    let their = VersionVector::decode(&wire).unwrap();
    assert_eq!(a.version().spans_missing_from(&their), vec![]);
    assert_eq!(b.frontiers().len(), 2);
}

#[test]
fn random_versions_round_trip_and_stay_small() {
    let mut rng = Rng::new(11);
    for _ in 0..2_000 {
        let v = random_vector(&mut rng);
        let bytes = v.encode();
        assert!(bytes.len() <= 7 + 15 * v.len(), "{} bytes", bytes.len());
        assert_eq!(VersionVector::decode(&bytes).unwrap(), v);
        let f = random_frontiers(&mut rng);
        let bytes = f.encode();
        assert!(bytes.len() <= 7 + 15 * f.len(), "{} bytes", bytes.len());
        assert_eq!(Frontiers::decode(&bytes).unwrap(), f);
    }
    // Small peers and counters take two bytes each.
    let v: VersionVector = [(1, 5), (2, 100), (3, 1)].into_iter().collect();
    assert_eq!(v.encode().len(), 7 + 2 * 3);
}

#[test]
fn every_truncation_and_bit_flip_is_an_error() {
    let mut rng = Rng::new(12);
    for _ in 0..30 {
        let v = random_vector(&mut rng);
        assert_damage_is_detected(&v.encode(), VersionVector::decode);
        let f = random_frontiers(&mut rng);
        assert_damage_is_detected(&f.encode(), Frontiers::decode);
    }
    assert_damage_is_detected(&VersionVector::new().encode(), VersionVector::decode);
    assert_damage_is_detected(&Frontiers::new().encode(), Frontiers::decode);
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng::new(13);
    for _ in 0..20_000 {
        let len = rng.below(48);
        let mut bytes: Vec<u8> = (0..len).map(|_| rng.below(256) as u8).collect();
        if let Some(first) = bytes.first_mut() {
            if rng.chance(50) {
                *first = if rng.chance(50) { 0xC5 } else { 0xC6 };
            }
        }
        let _ = VersionVector::decode(&bytes);
        let _ = Frontiers::decode(&bytes);
        // With a valid checksum the body's own checks must hold too.
        if bytes.len() >= 6 {
            let body_len = bytes.len() - 4;
            let sum = xxhash_rust::xxh3::xxh3_64(&bytes[..body_len]) as u32;
            bytes[body_len..].copy_from_slice(&sum.to_le_bytes());
            let _ = VersionVector::decode(&bytes);
            let _ = Frontiers::decode(&bytes);
        }
    }
}

#[cfg(feature = "serde")]
#[test]
fn versions_travel_through_serde_json() {
    let v: VersionVector = [(1, 3), (7, 1)].into_iter().collect();
    let json = serde_json::to_string(&v).unwrap();
    assert_eq!(json, r#"{"1":3,"7":1}"#);
    assert_eq!(serde_json::from_str::<VersionVector>(&json).unwrap(), v);
    let f: Frontiers = [OpId::new(7, 0), OpId::new(1, 2)].into_iter().collect();
    let json = serde_json::to_string(&f).unwrap();
    assert_eq!(json, "[[1,2],[7,0]]");
    assert_eq!(serde_json::from_str::<Frontiers>(&json).unwrap(), f);
    // Any order in, sorted out.
    assert_eq!(
        serde_json::from_str::<Frontiers>("[[7,0],[1,2]]").unwrap(),
        f
    );

    let mut rng = Rng::new(14);
    for _ in 0..500 {
        let v = random_vector(&mut rng);
        let json = serde_json::to_string(&v).unwrap();
        assert_eq!(serde_json::from_str::<VersionVector>(&json).unwrap(), v);
        let f = random_frontiers(&mut rng);
        let json = serde_json::to_string(&f).unwrap();
        assert_eq!(serde_json::from_str::<Frontiers>(&json).unwrap(), f);
    }

    for bad in [
        r#"{"18446744073709551615":1}"#,
        r#"{"1":1,"1":2}"#,
        r#"{"1":0}"#,
        r#"{"1":4294967296}"#,
        r#"{"x":1}"#,
        "[[1,2]]",
    ] {
        assert!(serde_json::from_str::<VersionVector>(bad).is_err(), "{bad}");
    }
    for bad in [
        "[[18446744073709551615,0]]",
        "[[1,2],[1,2]]",
        "[[1,-2]]",
        "[[1]]",
        r#"{"1":2}"#,
    ] {
        assert!(serde_json::from_str::<Frontiers>(bad).is_err(), "{bad}");
    }
}
