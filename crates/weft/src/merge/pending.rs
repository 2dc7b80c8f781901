//! [`Pending`]: updates that wait for ops they build on.
//!
//! Each change of a parked update that cannot apply is filed under an op
//! it needs (its *blocker*, from [`super::ready_changes`]; the changes
//! that can apply were applied before parking), so it is looked at again,
//! alone, only when the document's version of the blocker's peer passes
//! the blocker's counter. A chain of P updates delivered newest first
//! thus costs O(P log P), not a re-plan of every parked update after each
//! arrival; and one update of n changes that wait for n ops arriving one
//! by one costs O(n log n), not a re-plan of the whole update per op. An
//! update re-sent while parked is kept once.
//!
//! Each such change is also filed under its own first op: its ops can
//! become known another way (an update from, or local edits of, a
//! document that reuses the peer id) before the blocker arrives, if it
//! ever does; a change whose first ops are known waits only for its own
//! previous op, and one whose ops are all known waits for nothing.
//!
//! Invariant: no parked update is ready (its blockers are unknown to the
//! document, and it holds ops the document lacks), which is why a
//! snapshot can carry the parked updates and its reader park them again
//! from the snapshot's version alone.

use std::collections::{BTreeMap, HashMap};

use smallvec::SmallVec;

use crate::id::{Counter, IdSpan, OpId, PeerId};

use super::update::Update;

/// A parked update and the bytes it arrived as (a snapshot stores them).
#[derive(Debug, Clone)]
pub(crate) struct Parked {
    pub update: Update,
    /// The update as received, header included.
    pub bytes: Box<[u8]>,
}

/// An entry filed under a blocker: change `change` of the update in
/// `slot` (or the whole update, [`WHOLE`]) waits for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Waiting {
    slot: usize,
    /// The slot's generation when filed: a slot freed and reused since
    /// makes the entry stale.
    generation: u32,
    /// Index of the waiting change in the update, or [`WHOLE`].
    pub change: usize,
}

/// [`Waiting::change`] for an update that is looked at as a whole when
/// woken: one from an older writer that applies whole or not at all, or
/// one a snapshot carried (which may hold changes that were ready).
pub(crate) const WHOLE: usize = usize::MAX;

#[derive(Debug, Clone)]
struct Slot {
    parked: Parked,
    /// Changes filed on their own that are not known yet.
    left: usize,
    /// Per change of the update, whether it was resolved (a change can be
    /// found known twice: through its blocker and through its own ops).
    resolved: Vec<bool>,
}

/// The pending set. See the module doc.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pending {
    /// Parked updates; `None` marks a free slot (listed in `free`).
    slots: Vec<Option<Slot>>,
    /// Per slot, bumped each time it is freed.
    generations: Vec<u32>,
    free: Vec<usize>,
    /// Entries by blocker: woken once the document knows that op.
    waiting: BTreeMap<(PeerId, Counter), SmallVec<[Waiting; 1]>>,
    /// Entries by their own change's first op: looked at again once the
    /// document knows that op, which it may learn another way (a document
    /// that reuses the peer id) before the blocker arrives, if ever.
    holding: BTreeMap<(PeerId, Counter), SmallVec<[Waiting; 1]>>,
    /// Slots by a hash of their bytes, to keep duplicates out.
    by_hash: HashMap<u64, SmallVec<[usize; 1]>>,
    len: usize,
}

/// The hash a parked update is filed under: the xxh3 checksum of its
/// body, which its header holds (any 8 bytes do for a short input).
fn hash_of(bytes: &[u8]) -> u64 {
    let mut h = [0u8; 8];
    if let Some(sum) = bytes.get(8..16) {
        h.copy_from_slice(sum);
    }
    u64::from_le_bytes(h)
}

impl Pending {
    /// Whether no update waits.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Parks `parked`, each `(blocker, change)` of `waits` filing change
    /// `change` of it (or the whole of it, [`WHOLE`]) until the document
    /// knows op `blocker`. Each change should be filed once: woken, it is
    /// looked at alone, and filed again under its next blocker if it is
    /// still not ready. An update with the same bytes already parked is
    /// not added again. Each change whose first op `known` says the
    /// document lacks is also filed under that op. O(w log P) for w
    /// entries.
    pub fn park(
        &mut self,
        parked: Parked,
        waits: &[(OpId, usize)],
        known: impl Fn(PeerId) -> Counter,
    ) {
        let hash = hash_of(&parked.bytes);
        let dupes = self.by_hash.entry(hash).or_default();
        if dupes.iter().any(|&s| {
            self.slots
                .get(s)
                .and_then(Option::as_ref)
                .is_some_and(|p| p.parked.bytes == parked.bytes)
        }) {
            return;
        }
        let left = waits.iter().filter(|w| w.1 != WHOLE).count();
        // The first op of each change that waits, or of every change of an
        // update that waits whole.
        let mut firsts: SmallVec<[(OpId, usize); 2]> = SmallVec::new();
        for &(_, change) in waits {
            let changes = &parked.update.changes;
            let of = |i: usize| {
                // Only a first op not known yet: its arrival is news (once).
                changes
                    .get(i)
                    .filter(|c| c.len > 0 && c.counter >= known(c.peer))
                    .map(|c| (OpId::new(c.peer, c.counter), change))
            };
            if change == WHOLE {
                firsts.extend((0..changes.len()).filter_map(of));
            } else {
                firsts.extend(of(change));
            }
        }
        let resolved = vec![false; parked.update.changes.len()];
        let slot = Slot {
            parked,
            left,
            resolved,
        };
        let slot = match self.free.pop() {
            Some(i) => {
                self.slots[i] = Some(slot);
                i
            }
            None => {
                self.slots.push(Some(slot));
                self.generations.push(0);
                self.slots.len() - 1
            }
        };
        dupes.push(slot);
        let generation = self.generations.get(slot).copied().unwrap_or(0);
        for &(blocker, change) in waits {
            self.file(
                blocker,
                Waiting {
                    slot,
                    generation,
                    change,
                },
            );
        }
        for (first, change) in firsts {
            let w = Waiting {
                slot,
                generation,
                change,
            };
            let entries = self.holding.entry((first.peer, first.counter)).or_default();
            if !entries.contains(&w) {
                entries.push(w);
            }
        }
        self.len += 1;
    }

    fn file(&mut self, blocker: OpId, w: Waiting) {
        self.waiting
            .entry((blocker.peer, blocker.counter))
            .or_default()
            .push(w);
    }

    /// Takes out every entry waiting for an op of `peer` below counter
    /// `end` (the document now knows `peer`'s ops up to there); their
    /// updates stay parked. O(k log P) for k entries woken.
    pub fn wake(&mut self, peer: PeerId, end: Counter) -> Vec<Waiting> {
        take_below(&mut self.waiting, peer, end)
    }

    /// Takes out every entry whose own change starts below counter `end`
    /// of `peer` (the document now knows its first ops): the caller looks
    /// at each again, as when its blocker is known. O(k log P) for k
    /// entries.
    pub fn wake_holding(&mut self, peer: PeerId, end: Counter) -> Vec<Waiting> {
        take_below(&mut self.holding, peer, end)
    }

    /// The update entry `w` is about, unless it is stale.
    pub fn get(&self, w: &Waiting) -> Option<&Parked> {
        if self.generations.get(w.slot) != Some(&w.generation) {
            return None;
        }
        self.slots.get(w.slot)?.as_ref().map(|s| &s.parked)
    }

    /// Files woken entry `w` again, under `blocker`.
    pub fn refile(&mut self, w: Waiting, blocker: OpId) {
        self.file(blocker, w);
    }

    /// Notes that the change of entry `w` is known now (applied, or it
    /// came another way); the update leaves once all its changes are.
    pub fn resolved(&mut self, w: &Waiting) {
        let done = match self.slots.get_mut(w.slot).and_then(Option::as_mut) {
            Some(slot) if self.generations.get(w.slot) == Some(&w.generation) => {
                if let Some(done @ false) = slot.resolved.get_mut(w.change) {
                    *done = true;
                    slot.left = slot.left.saturating_sub(1);
                }
                slot.left == 0
            }
            _ => false,
        };
        if done {
            self.take(w);
        }
    }

    /// Takes the update of entry `w` out (its other entries go stale).
    pub fn take(&mut self, w: &Waiting) -> Option<Parked> {
        if self.generations.get(w.slot) != Some(&w.generation) {
            return None;
        }
        let slot = self.slots.get_mut(w.slot).and_then(Option::take)?;
        let hash = hash_of(&slot.parked.bytes);
        if let Some(list) = self.by_hash.get_mut(&hash) {
            list.retain(|s| *s != w.slot);
            if list.is_empty() {
                self.by_hash.remove(&hash);
            }
        }
        if let Some(g) = self.generations.get_mut(w.slot) {
            *g = g.wrapping_add(1);
        }
        self.free.push(w.slot);
        self.len -= 1;
        Some(slot.parked)
    }

    /// Takes every parked update out, in no particular order.
    pub fn take_all(&mut self) -> impl Iterator<Item = Parked> {
        let slots = std::mem::take(&mut self.slots);
        *self = Pending::default();
        slots.into_iter().flatten().map(|s| s.parked)
    }

    /// Every parked update, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &Parked> + '_ {
        self.slots
            .iter()
            .filter_map(|s| s.as_ref().map(|s| &s.parked))
    }

    /// The ops of the parked updates a document that knows `known(peer)`
    /// ops of each peer lacks, sorted, overlapping and adjacent spans
    /// joined. O(size of the pending set).
    pub fn spans(&self, known: impl Fn(PeerId) -> Counter) -> Vec<IdSpan> {
        let mut spans: Vec<IdSpan> = self
            .iter()
            .flat_map(|p| missing_spans(&p.update, &known))
            .collect();
        spans.sort_by_key(|s| (s.peer, s.counters.start));
        let mut out: Vec<IdSpan> = Vec::with_capacity(spans.len());
        for s in spans {
            match out.last_mut() {
                Some(last) if last.peer == s.peer && s.counters.start <= last.counters.end => {
                    last.counters.end = last.counters.end.max(s.counters.end);
                }
                _ => out.push(s),
            }
        }
        out
    }
}

/// Takes out of `entries` those filed under an op of `peer` below
/// counter `end`.
fn take_below(
    entries: &mut BTreeMap<(PeerId, Counter), SmallVec<[Waiting; 1]>>,
    peer: PeerId,
    end: Counter,
) -> Vec<Waiting> {
    let mut out = Vec::new();
    while let Some((&key, _)) = entries.range((peer, 0)..(peer, end)).next() {
        out.extend(entries.remove(&key).unwrap_or_default());
    }
    out
}

/// The ops of `update` that a document knowing `known(peer)` ops of each
/// peer lacks.
pub(crate) fn missing_spans(update: &Update, known: &impl Fn(PeerId) -> Counter) -> Vec<IdSpan> {
    update
        .changes
        .iter()
        .filter_map(|c| unknown_part(IdSpan::new(c.peer, c.counter..c.counter + c.len), known))
        .collect()
}

/// The part of `span` that a document knowing `known(peer)` ops of each
/// peer lacks (a peer's ops are known from its first on).
pub(crate) fn unknown_part(span: IdSpan, known: &impl Fn(PeerId) -> Counter) -> Option<IdSpan> {
    let start = span.counters.start.max(known(span.peer));
    (start < span.counters.end).then(|| IdSpan::new(span.peer, start..span.counters.end))
}
