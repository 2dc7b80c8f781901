//! Random multi-peer histories with the versions the replicas recorded
//! on the way (for the history and checkout tests).

use std::collections::BTreeMap;

use weft::{
    CommitOptions, Delta, Doc, ExportMode, Frontiers, TextDiff, Unit, Value, VersionVector,
};

use crate::{RefDoc, Rng};

/// What a replica held at one moment.
pub struct Recorded {
    /// Its frontiers.
    pub frontiers: Frontiers,
    /// Its version vector.
    pub version: VersionVector,
    /// Text "t" as a delta.
    pub delta: Vec<Delta>,
    /// The length of text "t" in UTF-16 units.
    pub utf16_len: usize,
    /// Every map with its entries ([`crate::map_contents`]).
    pub maps: Vec<(String, Vec<(String, Value)>)>,
}

/// Commits `doc` and records what it holds.
pub fn record(doc: &mut Doc) -> Recorded {
    doc.commit();
    Recorded {
        frontiers: doc.frontiers(),
        version: doc.version(),
        delta: doc.get_text("t").map(|t| t.to_delta()).unwrap_or_default(),
        utf16_len: doc.text_len("t", Unit::Utf16),
        maps: crate::map_contents(doc),
    }
}

/// Imports into `to` what `from` has (everything since `to`'s version, or
/// the whole history when `stale`), and merges `from_ref` into `to_ref`.
pub fn sync(to: &mut Doc, to_ref: &mut RefDoc, from: &Doc, from_ref: &RefDoc, stale: bool) {
    let since = if stale {
        VersionVector::new() // the whole history re-sent
    } else {
        to.version()
    };
    to.import(&from.export(ExportMode::Updates { from: &since }).unwrap())
        .unwrap();
    to_ref.merge_from(from_ref);
}

/// One random local step on `doc` and its `model`: a map write, an
/// insert, a delete or a mark.
pub fn random_edit(rng: &mut Rng, doc: &mut Doc, model: &mut RefDoc) {
    let len = doc.text("t").len();
    if rng.chance(15) {
        // A map write: few keys, so that writes of a key race.
        let map = ["m", "m", "m", "n"][rng.below(4)];
        let key = ["a", "b"][rng.below(2)];
        let value = if rng.chance(30) {
            None
        } else {
            Some(Value::from(rng.below(4) as i64))
        };
        let mut m = doc.map(map);
        match &value {
            Some(v) => m.set(key, v.clone()).unwrap(),
            None => m.delete(key).unwrap(),
        }
        model.map_set(map, key, value);
        return;
    }
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
pub fn apply(diffs: &[TextDiff], mirror: &mut Vec<Delta>, unit: Unit) {
    for d in diffs.iter().filter(|d| d.name == "t") {
        d.apply_to(mirror, unit).unwrap();
    }
}

/// Three replicas editing text "t" at random for `steps` steps, syncing
/// with stale and whole-history deliveries, checked against the reference
/// model; then synced to quiescence. Returns the replicas and what they
/// recorded (the last entry: replica 0 at the end).
pub fn random_history(seed: u64, steps: usize) -> (Vec<Doc>, Vec<Recorded>) {
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
            if rng.chance(15) {
                // A commit with a message and maybe a timestamp.
                let n = rng.below(1000) as i64;
                let mut options = CommitOptions::new().message(format!("m{n}"));
                if rng.chance(50) {
                    options = options.timestamp(n - 500);
                }
                docs[i].commit_with(options);
            }
        }
        if rng.chance(30) {
            let r = record(&mut docs[i]);
            assert_eq!(
                r.delta,
                models[i].to_delta(),
                "seed {seed}: replica vs model"
            );
            assert_eq!(
                crate::map_contents(&docs[i]),
                models[i].map_contents(),
                "seed {seed}: maps, replica vs model"
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
    (docs, recorded)
}

/// Mutable `v[i]` and shared `v[j]` (i != j).
pub fn two<T>(v: &mut [T], i: usize, j: usize) -> (&mut T, &T) {
    assert_ne!(i, j);
    if i < j {
        let (a, b) = v.split_at_mut(j);
        (&mut a[i], &b[0])
    } else {
        let (a, b) = v.split_at_mut(i);
        (&mut b[0], &a[j])
    }
}

/// Per op, its commit's timestamp and message ([`commit_infos`]).
pub type Infos = BTreeMap<(u64, u32), (Option<i64>, Option<String>)>;

/// Per op (peer, counter): the timestamp and message of its commit, as
/// `doc.changes()` lists them (ops without either left out), so that
/// replicas that split their history differently compare equal.
pub fn commit_infos(doc: &Doc) -> Infos {
    let mut out = BTreeMap::new();
    for c in doc.changes().unwrap() {
        if c.timestamp.is_none() && c.message.is_none() {
            continue;
        }
        for counter in c.id.counters.clone() {
            out.insert(
                (c.id.peer, counter),
                (c.timestamp, c.message.as_deref().map(str::to_owned)),
            );
        }
    }
    out
}
