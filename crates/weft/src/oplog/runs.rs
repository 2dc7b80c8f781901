//! [`Runs`]: the log's op runs, in seq order, stored in fixed-size chunks.
//!
//! A `Vec` doubles as it grows: at its last doubling it holds up to twice
//! the runs it needs, and every doubling copies all runs into a new buffer
//! and frees the old one, which the allocator keeps as heap the process has
//! touched (B4: 13,622 runs in a 16,384-run buffer, after freeing buffers
//! of 8,192, 4,096, ... runs). Here only the first chunk grows like a
//! `Vec` (so a small history stays small); every later chunk is allocated
//! once at its full size, [`CHUNK`] runs, and never moves.

use super::OpRun;

/// Runs per chunk (a power of two).
const CHUNK_BITS: u32 = 11;
const CHUNK: usize = 1 << CHUNK_BITS;

/// Op runs by index, in chunks of [`CHUNK`] runs. See the module doc.
#[derive(Debug, Clone, Default)]
pub(crate) struct Runs {
    /// Full chunks, [`CHUNK`] runs each.
    full: Vec<Vec<OpRun>>,
    /// The runs after them (at most [`CHUNK`]): the newest runs, which
    /// typing reads and extends, one indirection away as in a `Vec`.
    tail: Vec<OpRun>,
}

impl Runs {
    /// Index of the first run of `tail`.
    #[inline]
    fn tail_start(&self) -> usize {
        self.full.len() << CHUNK_BITS
    }

    /// Number of runs.
    #[inline]
    pub fn len(&self) -> usize {
        self.tail_start() + self.tail.len()
    }

    /// Whether there are no runs.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.tail.is_empty()
    }

    /// Run `i`, if there is one.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&OpRun> {
        match i.checked_sub(self.tail_start()) {
            Some(t) => self.tail.get(t),
            None => self.full.get(i >> CHUNK_BITS)?.get(i & (CHUNK - 1)),
        }
    }

    /// The last run.
    #[inline]
    pub fn last(&self) -> Option<&OpRun> {
        self.tail.last()
    }

    /// The last run, to extend it.
    #[inline]
    pub fn last_mut(&mut self) -> Option<&mut OpRun> {
        self.tail.last_mut()
    }

    /// Appends a run.
    #[inline]
    pub fn push(&mut self, run: OpRun) {
        if self.tail.len() == self.tail.capacity() {
            self.make_room();
        }
        self.tail.push(run);
    }

    /// Makes room in `tail` for one more run: the first chunk grows like a
    /// `Vec` up to [`CHUNK`] runs; a full chunk moves to `full` (the
    /// vector, not its runs) and a new one takes its full size at once.
    #[cold]
    fn make_room(&mut self) {
        if self.tail.len() < CHUNK {
            let more = self.tail.capacity().max(4).min(CHUNK - self.tail.len());
            self.tail.reserve_exact(more);
        } else {
            let chunk = std::mem::replace(&mut self.tail, Vec::with_capacity(CHUNK));
            self.full.push(chunk);
        }
    }

    /// Makes room for `more` runs (those that fit the current chunk; later
    /// chunks are allocated as they fill).
    pub fn reserve(&mut self, more: usize) {
        let fits = more.min(CHUNK.saturating_sub(self.tail.len()));
        self.tail.reserve_exact(fits);
    }

    /// The index of the first run for which `pred` is false, as
    /// `slice::partition_point` (`pred` must be true for a prefix).
    #[inline]
    pub fn partition_point(&self, mut pred: impl FnMut(&OpRun) -> bool) -> usize {
        // The first full chunk whose last run fails `pred` holds the point.
        let c = self
            .full
            .partition_point(|chunk| chunk.last().is_some_and(&mut pred));
        match self.full.get(c) {
            Some(chunk) => (c << CHUNK_BITS) + chunk.partition_point(pred),
            None => self.tail_start() + self.tail.partition_point(pred),
        }
    }

    /// The runs in order.
    #[inline]
    pub fn iter(&self) -> Iter<'_> {
        self.full.iter().flatten().chain(self.tail.iter())
    }

    /// The runs from index `from` on (none if `from` is past the end).
    #[inline]
    pub fn iter_from(&self, from: usize) -> Iter<'_> {
        let c = from >> CHUNK_BITS;
        if c < self.full.len() {
            let mut it = self.full[c..].iter().flatten().chain(self.tail.iter());
            let skip = from & (CHUNK - 1);
            if skip > 0 {
                it.nth(skip - 1);
            }
            it
        } else {
            let rest = self.tail.get(from - self.tail_start()..).unwrap_or(&[]);
            self.full[..0].iter().flatten().chain(rest.iter())
        }
    }
}

/// An iterator over runs (see [`Runs::iter`]).
pub(crate) type Iter<'a> = std::iter::Chain<
    std::iter::Flatten<std::slice::Iter<'a, Vec<OpRun>>>,
    std::slice::Iter<'a, OpRun>,
>;

impl<'a> IntoIterator for &'a Runs {
    type Item = &'a OpRun;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl Extend<OpRun> for Runs {
    fn extend<I: IntoIterator<Item = OpRun>>(&mut self, runs: I) {
        for run in runs {
            self.push(run);
        }
    }
}

impl FromIterator<OpRun> for Runs {
    fn from_iter<I: IntoIterator<Item = OpRun>>(runs: I) -> Runs {
        let mut out = Runs::default();
        out.extend(runs);
        out
    }
}

impl IntoIterator for Runs {
    type Item = OpRun;
    type IntoIter = std::iter::Chain<
        std::iter::Flatten<std::vec::IntoIter<Vec<OpRun>>>,
        std::vec::IntoIter<OpRun>,
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.full.into_iter().flatten().chain(self.tail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::TextIdx;
    use crate::oplog::OpKind;

    fn run(seq: u32) -> OpRun {
        OpRun {
            seq,
            len: 1,
            text: TextIdx::new(0),
            kind: OpKind::Delete {
                target: 0,
                reversed: false,
            },
        }
    }

    #[test]
    fn chunks_index_search_and_iterate_as_a_vec() {
        for n in [0, 1, 5, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 7] {
            let mut runs = Runs::default();
            runs.reserve(3);
            let vec: Vec<OpRun> = (0..n as u32).map(run).collect();
            runs.extend(vec.iter().copied());
            assert_eq!(runs.len(), n);
            assert_eq!(runs.is_empty(), n == 0);
            assert_eq!(runs.last(), vec.last());
            assert_eq!(runs.iter().copied().collect::<Vec<_>>(), vec);
            for i in [0, 1, CHUNK - 1, CHUNK, n.saturating_sub(1), n, n + 1] {
                assert_eq!(runs.get(i), vec.get(i));
                assert_eq!(
                    runs.iter_from(i).count(),
                    vec.get(i..).map_or(0, <[_]>::len)
                );
                let seq = i as u32;
                assert_eq!(
                    runs.partition_point(|r| r.end() <= seq),
                    vec.partition_point(|r| r.end() <= seq)
                );
            }
            for (i, r) in (&runs).into_iter().enumerate() {
                assert_eq!(r.seq, i as u32);
            }
            let back: Runs = runs.clone().into_iter().collect();
            assert_eq!(back.len(), n);
        }
    }
}
