//! [`Heads`]: the heads of the committed changes (the ops no other
//! committed op depends on), as seqs.
//!
//! A document that only edits locally has one head, its last op, which
//! every commit moves: that case is kept inline, so a commit per keystroke
//! changes it with one store instead of a remove and an insert in a tree.
//! Invariant: `Many` holds at least two seqs.

use std::collections::BTreeSet;
use std::ops::Range;

use crate::id::Seq;

/// A sorted set of seqs, the committed heads. See the module doc.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) enum Heads {
    /// No change is committed.
    #[default]
    Empty,
    /// One head.
    One(Seq),
    /// Two or more heads.
    Many(BTreeSet<Seq>),
}

impl Heads {
    /// Number of heads.
    pub fn len(&self) -> usize {
        match self {
            Heads::Empty => 0,
            Heads::One(_) => 1,
            Heads::Many(set) => set.len(),
        }
    }

    /// The lowest head.
    pub fn first(&self) -> Option<Seq> {
        match self {
            Heads::Empty => None,
            Heads::One(s) => Some(*s),
            Heads::Many(set) => set.first().copied(),
        }
    }

    /// The heads, ascending.
    pub fn iter(&self) -> impl Iterator<Item = Seq> + '_ {
        let (one, many) = match self {
            Heads::Empty => (None, None),
            Heads::One(s) => (Some(*s), None),
            Heads::Many(set) => (None, Some(set.iter().copied())),
        };
        one.into_iter().chain(many.into_iter().flatten())
    }

    /// The lowest head in `range`.
    pub fn first_in(&self, range: Range<Seq>) -> Option<Seq> {
        match self {
            Heads::Empty => None,
            Heads::One(s) => range.contains(s).then_some(*s),
            Heads::Many(set) => set.range(range).next().copied(),
        }
    }

    /// Adds `seq`.
    pub fn insert(&mut self, seq: Seq) {
        match self {
            Heads::Empty => *self = Heads::One(seq),
            Heads::One(s) if *s == seq => {}
            Heads::One(s) => *self = Heads::Many(BTreeSet::from([*s, seq])),
            Heads::Many(set) => {
                set.insert(seq);
            }
        }
    }

    /// Removes `seq`, if it is a head.
    pub fn remove(&mut self, seq: Seq) {
        match self {
            Heads::Empty => {}
            Heads::One(s) => {
                if *s == seq {
                    *self = Heads::Empty;
                }
            }
            Heads::Many(set) => {
                set.remove(&seq);
                if set.len() == 1 {
                    if let Some(&s) = set.first() {
                        *self = Heads::One(s);
                    }
                }
            }
        }
    }
}

impl FromIterator<Seq> for Heads {
    fn from_iter<I: IntoIterator<Item = Seq>>(iter: I) -> Heads {
        let mut heads = Heads::default();
        for seq in iter {
            heads.insert(seq);
        }
        heads
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_keep_a_sorted_set_through_one_and_many() {
        let mut heads = Heads::default();
        let mut model = BTreeSet::new();
        // A fixed walk over inserts and removes of small seqs.
        let mut x = 7u32;
        for _ in 0..2000 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            let seq = (x >> 16) % 6;
            if x & 0x100 == 0 {
                heads.insert(seq);
                model.insert(seq);
            } else {
                heads.remove(seq);
                model.remove(&seq);
            }
            assert_eq!(heads.len(), model.len());
            assert_eq!(heads.first(), model.first().copied());
            assert!(heads.iter().eq(model.iter().copied()));
            assert_eq!(heads.first_in(2..4), model.range(2..4).next().copied());
            assert!(!matches!(&heads, Heads::Many(set) if set.len() < 2));
        }
    }
}
