//! [`SeqBits`]: one bit per seq an update numbers, for the plan (which
//! planned ops are inserts) and the fast-forward (split points, deleted
//! chars).

use std::ops::Range;

use crate::id::Seq;

/// One bit per seq of `base..`, a fixed number of words.
#[derive(Debug)]
pub(super) struct SeqBits {
    base: Seq,
    words: Vec<u64>,
}

impl SeqBits {
    /// Bits for the seqs `seqs` of an update of `runs` op runs, unless
    /// that takes far more words than the update has runs: a few bytes
    /// can name billions of ops, and then callers keep a list instead.
    pub fn for_update(seqs: Range<Seq>, runs: usize) -> Option<SeqBits> {
        let words = seqs.end.saturating_sub(seqs.start).div_ceil(64) as usize;
        (words <= runs.saturating_mul(8).max(1024)).then(|| SeqBits {
            base: seqs.start,
            words: vec![0; words],
        })
    }

    /// The bit indexes of `seqs`, if they are all in range.
    #[inline]
    fn bits(&self, seqs: Range<Seq>) -> Option<Range<usize>> {
        let start = seqs.start.checked_sub(self.base)? as usize;
        let end = seqs.end.checked_sub(self.base)? as usize;
        (end <= self.words.len() * 64).then_some(start..end)
    }

    /// Calls `f` with each word index and the mask of the bits `bits` in
    /// it, until `f` returns `false`; whether it never did.
    #[inline]
    fn each_word(bits: Range<usize>, mut f: impl FnMut(usize, u64) -> bool) -> bool {
        let mut bit = bits.start;
        while bit < bits.end {
            let n = (64 - bit % 64).min(bits.end - bit);
            let ones = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
            if !f(bit / 64, ones << (bit % 64)) {
                return false;
            }
            bit += n;
        }
        true
    }

    /// Sets the bits of `seqs`; `false` (setting nothing) if they are not
    /// all in range.
    pub fn set(&mut self, seqs: Range<Seq>) -> bool {
        let Some(bits) = self.bits(seqs) else {
            return false;
        };
        let words = &mut self.words;
        Self::each_word(bits, |w, mask| {
            if let Some(word) = words.get_mut(w) {
                *word |= mask;
            }
            true
        })
    }

    /// Whether every bit of `seqs` is set (and in range).
    pub fn all_set(&self, seqs: Range<Seq>) -> bool {
        self.bits(seqs).is_some_and(|bits| {
            Self::each_word(bits, |w, mask| {
                self.words.get(w).is_some_and(|&word| word & mask == mask)
            })
        })
    }

    /// Whether the bit of `seq` is set (`false` out of range).
    #[inline]
    pub fn get(&self, seq: Seq) -> bool {
        let bit = seq.wrapping_sub(self.base) as usize;
        self.words
            .get(bit / 64)
            .is_some_and(|w| w >> (bit % 64) & 1 == 1)
    }

    /// The first seq in `from..to` whose bit is `value`, else `to`.
    #[inline]
    pub fn next_with(&self, from: Seq, to: Seq, value: bool) -> Seq {
        let mut bit = from.wrapping_sub(self.base) as usize;
        let stop = to.wrapping_sub(self.base) as usize;
        while bit < stop {
            let Some(&w) = self.words.get(bit / 64) else {
                break;
            };
            let w = if value { w } else { !w } >> (bit % 64);
            if w != 0 {
                bit += w.trailing_zeros() as usize;
                break;
            }
            bit = (bit / 64 + 1) * 64;
        }
        self.base.wrapping_add(bit.min(stop) as Seq)
    }
}
