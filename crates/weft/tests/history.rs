//! History: version math, fork_at, diff and revert_to, checked on random
//! multi-peer runs against what each replica (and the reference model)
//! held when each version was recorded.

mod common;

use std::cmp::Ordering;

use common::{RefDoc, Rng};
use weft::{Delta, Doc, Error, ExportMode, Frontiers, OpId, TextDiff, Unit, Value, VersionVector};

/// What a replica held at one moment.
struct Recorded {
    frontiers: Frontiers,
    version: VersionVector,
    delta: Vec<Delta>,
    utf16_len: usize,
}

fn record(doc: &mut Doc) -> Recorded {
    doc.commit();
    Recorded {
        frontiers: doc.frontiers(),
        version: doc.version(),
        delta: doc.get_text("t").map(|t| t.to_delta()).unwrap_or_default(),
        utf16_len: doc.text_len("t", Unit::Utf16),
    }
}

fn sync(to: &mut Doc, to_ref: &mut RefDoc, from: &Doc, from_ref: &RefDoc, stale: bool) {
    let since = if stale {
        VersionVector::new() // the whole history re-sent
    } else {
        to.version()
    };
    to.import(&from.export(ExportMode::Updates { from: &since }).unwrap())
        .unwrap();
    to_ref.merge_from(from_ref);
}

fn random_edit(rng: &mut Rng, doc: &mut Doc, model: &mut RefDoc) {
    let len = doc.text("t").len();
    match rng.below(10) {
        0..=4 => {
            let pos = rng.below(len + 1);
            let s = rng.text(4);
            doc.text("t").insert(pos, &s).unwrap();
            model.insert(pos, &s);
        }
        5..=7 if len > 0 => {
            let pos = rng.below(len);
            let n = 1 + rng.below((len - pos).min(3));
            doc.text("t").delete(pos, n).unwrap();
            model.delete(pos, n);
        }
        _ if len > 0 => {
            let start = rng.below(len);
            let end = start + 1 + rng.below(len - start);
            let key = ["bold", "italic", "link"][rng.below(3)];
            let value = if rng.chance(25) {
                Value::Null
            } else {
                Value::from(rng.below(3) as i64)
            };
            doc.text("t").mark(start..end, key, value.clone()).unwrap();
            model.mark(start..end, key, value);
        }
        _ => {}
    }
}

/// Applies each diff of text "t" to `mirror`.
fn apply(diffs: &[TextDiff], mirror: &mut Vec<Delta>, unit: Unit) {
    for d in diffs.iter().filter(|d| d.name == "t") {
        d.apply_to(mirror, unit).unwrap();
    }
}

fn run(seed: u64, steps: usize) {
    let mut rng = Rng::new(seed);
    let mut docs: Vec<Doc> = (1..=3)
        .map(|p| {
            let mut d = Doc::new();
            d.set_peer_id(p).unwrap();
            d
        })
        .collect();
    let mut models: Vec<RefDoc> = (1..=3).map(RefDoc::new).collect();
    let mut recorded: Vec<Recorded> = Vec::new();
    for _ in 0..steps {
        let i = rng.below(3);
        if rng.chance(25) {
            let j = (i + 1 + rng.below(2)) % 3;
            let stale = rng.chance(20);
            let (to, from) = two(&mut docs, i, j);
            let (to_ref, from_ref) = two(&mut models, i, j);
            sync(to, to_ref, from, from_ref, stale);
        } else {
            random_edit(&mut rng, &mut docs[i], &mut models[i]);
        }
        if rng.chance(30) {
            let r = record(&mut docs[i]);
            assert_eq!(
                r.delta,
                models[i].to_delta(),
                "seed {seed}: replica vs model"
            );
            recorded.push(r);
        }
    }
    // Quiescence: everyone has everything.
    for _ in 0..2 {
        for i in 0..3 {
            for j in 0..3 {
                if i != j {
                    let (to, from) = two(&mut docs, i, j);
                    let (to_ref, from_ref) = two(&mut models, i, j);
                    sync(to, to_ref, from, from_ref, false);
                }
            }
        }
    }
    recorded.push(record(&mut docs[0]));
    let doc = &docs[0];

    for (k, r) in recorded.iter().enumerate() {
        let ctx = format!("seed {seed}, version {k}");
        assert_eq!(
            doc.frontiers_to_vv(&r.frontiers).unwrap(),
            r.version,
            "{ctx}"
        );
        assert_eq!(
            doc.vv_to_frontiers(&r.version).unwrap(),
            r.frontiers,
            "{ctx}"
        );
        let fork = doc.fork_at(&r.frontiers).unwrap();
        assert_eq!(fork.version(), r.version, "{ctx}: fork_at's version");
        let delta = fork.get_text("t").map(|t| t.to_delta()).unwrap_or_default();
        assert_eq!(delta, r.delta, "{ctx}: fork_at's text");
        assert_eq!(fork.text_len("t", Unit::Utf16), r.utf16_len, "{ctx}");
    }
    for _ in 0..20 {
        let (a, b) = (
            &recorded[rng.below(recorded.len())],
            &recorded[rng.below(recorded.len())],
        );
        let expected = a.version.partial_cmp(&b.version);
        assert_eq!(
            doc.cmp_frontiers(&a.frontiers, &b.frontiers).unwrap(),
            expected
        );
        for unit in [Unit::Char, Unit::Utf16] {
            let diff = doc.diff_in(&a.frontiers, &b.frontiers, unit).unwrap();
            let mut mirror = a.delta.clone();
            apply(&diff, &mut mirror, unit);
            assert_eq!(mirror, b.delta, "seed {seed}: diff in {unit:?}");
        }
    }
    // Revert a fork of the final doc to a random version, concurrently with
    // an edit of another replica: the revert holds, and both merge.
    let target = &recorded[rng.below(recorded.len())];
    let mut reverter = docs[0].fork();
    reverter.set_peer_id(10).unwrap();
    reverter.revert_to(&target.frontiers).unwrap();
    reverter.commit();
    let now = reverter
        .get_text("t")
        .map(|t| t.to_delta())
        .unwrap_or_default();
    assert_eq!(now, target.delta, "seed {seed}: revert_to");
    let mut other = docs[1].fork();
    other.set_peer_id(11).unwrap();
    other.text("t").insert(0, "~").unwrap();
    other.commit();
    let for_other = reverter
        .export(ExportMode::Updates {
            from: &other.version(),
        })
        .unwrap();
    let for_reverter = other
        .export(ExportMode::Updates {
            from: &reverter.version(),
        })
        .unwrap();
    other.import(&for_other).unwrap();
    reverter.import(&for_reverter).unwrap();
    assert_eq!(reverter.text("t").to_delta(), other.text("t").to_delta());
    // The concurrent insert is kept ('~' is not in the random alphabet).
    assert!(reverter.text("t").to_string().contains('~'));
}

/// Mutable `v[i]` and shared `v[j]` (i != j).
fn two<T>(v: &mut [T], i: usize, j: usize) -> (&mut T, &T) {
    assert_ne!(i, j);
    if i < j {
        let (a, b) = v.split_at_mut(j);
        (&mut a[i], &b[0])
    } else {
        let (a, b) = v.split_at_mut(i);
        (&mut b[0], &a[j])
    }
}

#[test]
fn random_runs_match_what_each_version_held() {
    let extra: u64 = std::env::var("WEFT_STRESS_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    for seed in 0..12 + extra {
        run(seed, 150);
    }
}

#[test]
fn unknown_and_impossible_versions_are_errors() {
    let mut a = Doc::new();
    a.set_peer_id(1).unwrap();
    a.text("t").insert(0, "abc").unwrap();
    let mut b = a.fork();
    b.set_peer_id(2).unwrap();
    b.text("t").insert(0, "x").unwrap();
    a.import(
        &b.export(ExportMode::Updates { from: &a.version() })
            .unwrap(),
    )
    .unwrap();
    let unknown: Frontiers = [OpId::new(9, 0)].into_iter().collect();
    assert!(matches!(a.fork_at(&unknown), Err(Error::UnknownOp(_))));
    assert!(matches!(
        a.frontiers_to_vv(&unknown),
        Err(Error::UnknownOp(_))
    ));
    assert!(matches!(
        a.diff(&unknown, &a.frontiers()),
        Err(Error::UnknownOp(_))
    ));
    assert!(matches!(
        a.cmp_frontiers(&a.frontiers(), &unknown),
        Err(Error::UnknownOp(_))
    ));
    assert!(matches!(
        a.diff_in(&a.frontiers(), &unknown, Unit::Utf16),
        Err(Error::UnknownOp(_))
    ));
    let past_end: Frontiers = [OpId::new(1, 3)].into_iter().collect();
    assert!(matches!(a.revert_to(&past_end), Err(Error::UnknownOp(_))));
    // b's op without the a op it was typed on.
    let mut vv = VersionVector::new();
    vv.set(2, 1);
    assert!(matches!(
        a.vv_to_frontiers(&vv),
        Err(Error::InvalidVersion { .. })
    ));
    vv.set(2, 5);
    assert!(matches!(a.vv_to_frontiers(&vv), Err(Error::UnknownOp(_))));
    // The empty version is fine everywhere.
    let empty = Frontiers::new();
    assert_eq!(a.frontiers_to_vv(&empty).unwrap(), VersionVector::new());
    assert_eq!(a.fork_at(&empty).unwrap().text_names().count(), 0);
    assert_eq!(
        a.cmp_frontiers(&empty, &a.frontiers()).unwrap(),
        Some(Ordering::Less)
    );
}

#[test]
fn fork_at_a_snapshot_imported_lazily_loads_what_it_needs() {
    let mut a = Doc::new();
    a.text("t").insert(0, "one").unwrap();
    let v1 = a.frontiers();
    a.text("t").insert(3, " two").unwrap();
    a.text("t").mark(0..3, "bold", true).unwrap();
    let mut b = Doc::new();
    b.import(&a.export(ExportMode::Snapshot).unwrap()).unwrap();
    assert_eq!(b.fork_at(&v1).unwrap().text("t").to_string(), "one");
    let diff = b.diff(&v1, &b.frontiers()).unwrap();
    let mut mirror = vec![Delta::insert("one")];
    apply(&diff, &mut mirror, Unit::Char);
    assert_eq!(mirror, b.text("t").to_delta());
}
