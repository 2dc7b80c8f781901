//! [`Pending`]: updates that wait for ops they build on.
//!
//! Each parked update is filed under the ops it needs (its *blockers*, one
//! per change that cannot apply, from [`super::ready_changes`]; the
//! changes that can apply were applied before parking), so it is looked
//! at again only when the document's version of a blocker's peer passes
//! the blocker's counter. A chain of P updates
//! delivered newest first thus costs O(P log P), not a re-plan of every
//! parked update after each arrival. An update re-sent while parked is
//! kept once.
//!
//! Invariant: no parked update is ready (its blockers are unknown to the
//! document), which is why a snapshot can carry the parked updates and
//! its reader park them again from the snapshot's version alone.

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

/// The pending set. See the module doc.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pending {
    /// Parked updates; `None` marks a free slot (listed in `free`).
    slots: Vec<Option<Parked>>,
    free: Vec<usize>,
    /// Slots by blocker: woken once the document knows that op.
    waiting: BTreeMap<(PeerId, Counter), SmallVec<[usize; 1]>>,
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

    /// Parks `parked` until the document knows one of `blockers` (each an
    /// op it waits for; woken by the first to arrive, it is parked again
    /// if still not ready). An update with the same bytes already parked
    /// is not added again. O(b log P) for b blockers.
    pub fn park(&mut self, parked: Parked, blockers: &[OpId]) {
        let hash = hash_of(&parked.bytes);
        let dupes = self.by_hash.entry(hash).or_default();
        if dupes.iter().any(|&s| {
            self.slots
                .get(s)
                .and_then(Option::as_ref)
                .is_some_and(|p| p.bytes == parked.bytes)
        }) {
            return;
        }
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot] = Some(parked);
                slot
            }
            None => {
                self.slots.push(Some(parked));
                self.slots.len() - 1
            }
        };
        dupes.push(slot);
        for blocker in blockers {
            // A slot freed and reused later may still be listed under an
            // old blocker: waking it early only re-plans it.
            self.waiting
                .entry((blocker.peer, blocker.counter))
                .or_default()
                .push(slot);
        }
        self.len += 1;
    }

    /// Takes out every update waiting for an op of `peer` below counter
    /// `end` (the document now knows `peer`'s ops up to there).
    /// O(k log P) for k updates woken.
    pub fn wake(&mut self, peer: PeerId, end: Counter) -> Vec<Parked> {
        let mut out = Vec::new();
        loop {
            let Some((&key, _)) = self.waiting.range((peer, 0)..(peer, end)).next() else {
                return out;
            };
            for slot in self.waiting.remove(&key).unwrap_or_default() {
                let Some(parked) = self.slots.get_mut(slot).and_then(Option::take) else {
                    continue;
                };
                let hash = hash_of(&parked.bytes);
                if let Some(list) = self.by_hash.get_mut(&hash) {
                    list.retain(|s| *s != slot);
                    if list.is_empty() {
                        self.by_hash.remove(&hash);
                    }
                }
                self.free.push(slot);
                self.len -= 1;
                out.push(parked);
            }
        }
    }

    /// Takes every parked update out, in no particular order.
    pub fn take_all(&mut self) -> impl Iterator<Item = Parked> {
        let slots = std::mem::take(&mut self.slots);
        *self = Pending::default();
        slots.into_iter().flatten()
    }

    /// Every parked update, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &Parked> + '_ {
        self.slots.iter().filter_map(Option::as_ref)
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
