//! What randomized delivery tests share: event-fed mirrors of a text in
//! every unit, and exports picked as a real sync layer makes them.

use std::sync::{Arc, Mutex};

use weft::{Delta, Doc, ExportMode, IdSpan, Subscription, Unit, VersionVector};

use crate::Rng;

/// Copies of text "t" kept only from a document's change events, in
/// chars, UTF-16 units and UTF-8 bytes.
pub struct Mirrors {
    deltas: Arc<Mutex<[Vec<Delta>; 3]>>,
    _subs: Vec<Subscription>,
}

/// The units mirrors keep, in their order.
const UNITS: [Unit; 3] = [Unit::Char, Unit::Utf16, Unit::Utf8];

impl Mirrors {
    /// Subscribes to `doc`'s events in each unit.
    pub fn attach(doc: &mut Doc) -> Mirrors {
        let deltas: Arc<Mutex<[Vec<Delta>; 3]>> = Arc::default();
        let mut subs = Vec::new();
        for (k, unit) in UNITS.into_iter().enumerate() {
            let m = Arc::clone(&deltas);
            subs.push(doc.subscribe_in(unit, move |e| {
                for d in &e.texts {
                    if d.name == "t" {
                        d.apply_to(&mut m.lock().unwrap()[k], unit).unwrap();
                    }
                }
            }));
        }
        Mirrors {
            deltas,
            _subs: subs,
        }
    }

    /// Panics unless every mirror equals `want` (`what` says where).
    pub fn check(&self, want: &[Delta], what: &str) {
        let m = self.deltas.lock().unwrap();
        for (k, unit) in UNITS.into_iter().enumerate() {
            assert_eq!(m[k], want, "{what}: {unit:?} events");
        }
    }
}

/// What `from` sends `to` (whose version is `to_version`, and which was
/// earlier at each of `to_old`): what it lacks, a stale export from an
/// older version or from nothing, a whole snapshot, or op ranges of
/// random starts.
pub fn random_export(
    rng: &mut Rng,
    from: &Doc,
    to_version: &VersionVector,
    to_old: &[VersionVector],
) -> Vec<u8> {
    let since = match rng.below(5) {
        0 => VersionVector::new(),
        1 => to_old[rng.below(to_old.len())].clone(),
        _ => to_version.clone(),
    };
    match rng.below(6) {
        0 => from.export(ExportMode::Snapshot).unwrap(),
        1 => {
            let spans: Vec<IdSpan> = from
                .version()
                .iter()
                .map(|(p, end)| {
                    let start = rng.below(end as usize + 1) as u32;
                    IdSpan::new(p, start..end)
                })
                .collect();
            from.export(ExportMode::UpdatesInRange(&spans)).unwrap()
        }
        _ => from.export(ExportMode::Updates { from: &since }).unwrap(),
    }
}

/// Brings every document up to date with every other (each imports what
/// it lacks from each, twice round), and returns the model every op of
/// `models` gives: what all replicas must then show.
pub fn sync_everyone(docs: &mut [Doc], models: &[crate::RefDoc]) -> crate::RefDoc {
    for _ in 0..2 {
        for i in 0..docs.len() {
            for j in 0..docs.len() {
                if i != j {
                    let bytes = docs[j]
                        .export(ExportMode::Updates {
                            from: &docs[i].version(),
                        })
                        .unwrap();
                    docs[i].import(&bytes).unwrap();
                }
            }
        }
    }
    let mut model = models[0].clone();
    for m in &models[1..] {
        model.merge_from(m);
    }
    model
}
