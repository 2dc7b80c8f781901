//! [`VersionVector`]: per peer, the number of its ops a version includes.

use std::cmp::Ordering;
use std::fmt;

use std::collections::BTreeMap;

use crate::id::{Counter, IdSpan, OpId, PeerId};

/// For each peer, how many of its ops (counters `0..n`) a version includes.
///
/// Kept sorted by peer with no zero entries, so equal versions compare equal.
/// Lookups and updates are O(log p) for p peers.
/// `PartialOrd` is the causal order: `a < b` when `b` includes every op of `a`
/// and more; concurrent versions are unordered.
///
/// It travels as bytes ([`VersionVector::encode`], a few bytes per peer)
/// and, with the `serde` feature, as a map from peer to counter.
///
/// # Examples
///
/// ```
/// use weft::{OpId, VersionVector};
///
/// let mut a = VersionVector::new();
/// a.set(1, 3); // ops 0, 1, 2 of peer 1
/// let mut b = a.clone();
/// b.set(2, 1);
/// assert!(a < b);
/// assert!(b.includes(OpId::new(1, 2)));
/// assert!(!a.includes(OpId::new(2, 0)));
/// assert_eq!(b.get(2), 1);
/// ```
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct VersionVector {
    entries: BTreeMap<PeerId, Counter>,
}

impl VersionVector {
    /// The empty version (no ops).
    pub fn new() -> Self {
        Self::default()
    }

    /// How many of `peer`'s ops the version includes (its next counter).
    pub fn get(&self, peer: PeerId) -> Counter {
        self.entries.get(&peer).copied().unwrap_or(0)
    }

    /// Sets how many of `peer`'s ops the version includes. Setting 0 removes
    /// the peer.
    pub fn set(&mut self, peer: PeerId, end: Counter) {
        if end == 0 {
            self.entries.remove(&peer);
        } else {
            self.entries.insert(peer, end);
        }
    }

    /// Raises `peer`'s entry to at least `end`. One lookup (every commit
    /// calls it).
    pub fn extend_to(&mut self, peer: PeerId, end: Counter) {
        // An absent entry is 0, which `end == 0` does not raise.
        if end == 0 {
            return;
        }
        self.entries
            .entry(peer)
            .and_modify(|e| *e = (*e).max(end))
            .or_insert(end);
    }

    /// Whether the version includes the op `id`.
    pub fn includes(&self, id: OpId) -> bool {
        id.counter < self.get(id.peer)
    }

    /// Whether the version includes every op of `other`.
    pub fn includes_all(&self, other: &VersionVector) -> bool {
        other.iter().all(|(p, c)| self.get(p) >= c)
    }

    /// Adds every op of `other` (the least upper bound of both versions).
    pub fn merge(&mut self, other: &VersionVector) {
        for (peer, end) in other.iter() {
            self.extend_to(peer, end);
        }
    }

    /// The ops this version has and `other` lacks, one span per peer.
    pub fn spans_missing_from(&self, other: &VersionVector) -> Vec<IdSpan> {
        self.iter()
            .filter_map(|(peer, end)| {
                let start = other.get(peer);
                (start < end).then(|| IdSpan::new(peer, start..end))
            })
            .collect()
    }

    /// Iterates over `(peer, next counter)` pairs, sorted by peer.
    pub fn iter(&self) -> impl Iterator<Item = (PeerId, Counter)> + '_ {
        self.entries.iter().map(|(&p, &c)| (p, c))
    }

    /// Number of peers with at least one op in the version.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the version holds no ops at all.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Total number of ops in the version.
    pub fn op_count(&self) -> u64 {
        self.entries.values().map(|&c| u64::from(c)).sum()
    }
}

impl PartialOrd for VersionVector {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        match (self.includes_all(other), other.includes_all(self)) {
            (true, true) => Some(Ordering::Equal),
            (true, false) => Some(Ordering::Greater),
            (false, true) => Some(Ordering::Less),
            (false, false) => None,
        }
    }
}

impl FromIterator<(PeerId, Counter)> for VersionVector {
    fn from_iter<I: IntoIterator<Item = (PeerId, Counter)>>(iter: I) -> Self {
        let mut v = VersionVector::new();
        for (peer, end) in iter {
            v.extend_to(peer, end);
        }
        v
    }
}

impl fmt::Debug for VersionVector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// A [`VersionVector`] serializes as a map from peer to counter end
/// (`{"1":3,"7":1}` in JSON, whose keys are strings); deserializing refuses
/// the reserved peer `u64::MAX`, a repeated peer and a zero counter.
#[cfg(feature = "serde")]
impl serde::Serialize for VersionVector {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter())
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for VersionVector {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;

        struct Visitor;

        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = VersionVector;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map from peer id to counter")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<VersionVector, A::Error> {
                let mut v = VersionVector::new();
                while let Some((peer, end)) = map.next_entry::<PeerId, Counter>()? {
                    if peer == PeerId::MAX {
                        return Err(A::Error::custom(crate::Error::InvalidPeerId(peer)));
                    }
                    if end == 0 {
                        return Err(A::Error::custom(format_args!(
                            "peer {peer} has a zero counter"
                        )));
                    }
                    if v.entries.insert(peer, end).is_some() {
                        return Err(A::Error::custom(format_args!("peer {peer} is repeated")));
                    }
                }
                Ok(v)
            }
        }

        deserializer.deserialize_map(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_entries_are_not_stored() {
        let mut v = VersionVector::new();
        v.set(5, 0);
        assert!(v.is_empty());
        v.set(5, 2);
        v.set(5, 0);
        assert_eq!(v, VersionVector::new());
    }

    #[test]
    fn concurrent_versions_are_unordered() {
        let a: VersionVector = [(1, 2), (2, 1)].into_iter().collect();
        let b: VersionVector = [(1, 1), (2, 2)].into_iter().collect();
        assert_eq!(a.partial_cmp(&b), None);
        let mut c = a.clone();
        c.merge(&b);
        assert!(a < c && b < c);
        assert_eq!(c.spans_missing_from(&a), vec![IdSpan::new(2, 1..2)]);
        assert_eq!(c.op_count(), 4);
    }
}
