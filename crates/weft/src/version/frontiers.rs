//! [`Frontiers`]: the heads of a version's history.

use std::fmt;

use smallvec::SmallVec;

use crate::id::OpId;

/// The ops of a version that no other op of the version depends on.
///
/// A linear history has one head; concurrent edits that have not been merged
/// by a later edit leave several. Kept sorted and free of duplicates.
///
/// They travel as bytes ([`Frontiers::encode`]) and, with the `serde`
/// feature, as a list of `[peer, counter]` pairs.
///
/// # Examples
///
/// ```
/// use weft::{Frontiers, OpId};
///
/// let f: Frontiers = [OpId::new(2, 4), OpId::new(1, 9), OpId::new(2, 4)].into_iter().collect();
/// assert_eq!(f.len(), 2);
/// assert!(f.contains(OpId::new(1, 9)));
/// assert_eq!(f.iter().next(), Some(OpId::new(1, 9)));
/// ```
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Frontiers {
    heads: SmallVec<[OpId; 2]>,
}

impl Frontiers {
    /// The frontiers of the empty version.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether `id` is one of the heads.
    pub fn contains(&self, id: OpId) -> bool {
        self.heads.binary_search(&id).is_ok()
    }

    /// Adds a head (no-op if present).
    pub fn insert(&mut self, id: OpId) {
        if let Err(i) = self.heads.binary_search(&id) {
            self.heads.insert(i, id);
        }
    }

    /// Removes a head (no-op if absent).
    pub fn remove(&mut self, id: OpId) {
        if let Ok(i) = self.heads.binary_search(&id) {
            self.heads.remove(i);
        }
    }

    /// Iterates over the heads in sorted order.
    pub fn iter(&self) -> impl Iterator<Item = OpId> + '_ {
        self.heads.iter().copied()
    }

    /// The heads, sorted.
    pub fn as_slice(&self) -> &[OpId] {
        &self.heads
    }

    /// Number of heads.
    pub fn len(&self) -> usize {
        self.heads.len()
    }

    /// Whether this is the empty version.
    pub fn is_empty(&self) -> bool {
        self.heads.is_empty()
    }
}

impl FromIterator<OpId> for Frontiers {
    fn from_iter<I: IntoIterator<Item = OpId>>(iter: I) -> Self {
        let mut heads: SmallVec<[OpId; 2]> = iter.into_iter().collect();
        heads.sort_unstable();
        heads.dedup();
        Frontiers { heads }
    }
}

impl fmt::Debug for Frontiers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.heads.iter()).finish()
    }
}

/// [`Frontiers`] serialize as a list of `[peer, counter]` pairs, sorted;
/// deserializing takes them in any order and refuses the reserved peer
/// `u64::MAX` and a repeated head.
#[cfg(feature = "serde")]
impl serde::Serialize for Frontiers {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter().map(|id| (id.peer, id.counter)))
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for Frontiers {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;

        let pairs = Vec::<(crate::id::PeerId, crate::id::Counter)>::deserialize(deserializer)?;
        let mut heads: SmallVec<[OpId; 2]> = SmallVec::with_capacity(pairs.len());
        for (peer, counter) in pairs {
            if peer == crate::id::PeerId::MAX {
                return Err(D::Error::custom(crate::Error::InvalidPeerId(peer)));
            }
            heads.push(OpId::new(peer, counter));
        }
        heads.sort_unstable();
        for pair in heads.windows(2) {
            if let [a, b] = pair {
                if a == b {
                    return Err(D::Error::custom(format_args!("head {a} is repeated")));
                }
            }
        }
        Ok(Frontiers { heads })
    }
}
