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

/// Exports in flight between peers, as a network without losses but with
/// no order delivers them: late, in any order, some twice. The random
/// delivery tests share it: each step may send, then some waiting
/// messages arrive; at the end the rest arrive.
#[derive(Debug, Default)]
pub struct Network {
    /// (receiver, bytes) waiting to be delivered.
    waiting: Vec<(usize, Vec<u8>)>,
}

impl Network {
    /// Peer `from` sends another peer (picked at random) a
    /// [`random_export`] from its version and the versions it had earlier
    /// (`old_versions[to]`); one time in five the message goes out twice.
    pub fn send(
        &mut self,
        rng: &mut Rng,
        docs: &[Doc],
        from: usize,
        old_versions: &[Vec<VersionVector>],
    ) {
        let to = (from + 1 + rng.below(docs.len() - 1)) % docs.len();
        let bytes = random_export(rng, &docs[from], &docs[to].version(), &old_versions[to]);
        if rng.chance(20) {
            self.waiting.push((to, bytes.clone()));
        }
        self.waiting.push((to, bytes));
    }

    /// While a 40% chance holds, one waiting message (any of them) arrives:
    /// `deliver(receiver, bytes)`.
    pub fn deliver_some(&mut self, rng: &mut Rng, mut deliver: impl FnMut(usize, &[u8])) {
        while !self.waiting.is_empty() && rng.chance(40) {
            let (to, bytes) = self.waiting.swap_remove(rng.below(self.waiting.len()));
            deliver(to, &bytes);
        }
    }

    /// Every waiting message arrives, in the order it was sent.
    pub fn deliver_all(&mut self, mut deliver: impl FnMut(usize, &[u8])) {
        for (to, bytes) in std::mem::take(&mut self.waiting) {
            deliver(to, &bytes);
        }
    }
}

/// Imports `bytes` into `docs[to]` (a peer's export must import, and the
/// document must then re-export what it holds) and brings `models[to]` to
/// what the document now holds (its latest version, when checked out).
pub fn deliver_to_model(docs: &mut [Doc], models: &mut [crate::RefDoc], to: usize, bytes: &[u8]) {
    docs[to].import(bytes).unwrap();
    docs[to].assert_exports_reopen();
    let version = docs[to].latest_version();
    for k in 0..models.len() {
        if k != to {
            let src = models[k].clone();
            models[to].merge_upto(&src, &version);
        }
    }
}
