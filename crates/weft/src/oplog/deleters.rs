//! [`Deleters`]: which delete runs name which chars, so that the deletes
//! of a char are found without scanning the history. When an undo cancels
//! a delete, its char shows again only if no other delete in force covers
//! it ([`OpLog::not_deleted`](super::OpLog::not_deleted)).
//!
//! Per page of [`PAGE`] seqs, the indexes of the delete runs whose targets
//! touch it. The index is built the first time it is needed (an undo
//! manager asks for it when it is attached) and then catches up with the
//! runs added since, each run read once: after an import, the import pays
//! for its own runs (see [`OpLog::keep_deleters`](super::OpLog::keep_deleters)),
//! so one undo costs what its step names, however long the history since.
//! A document that never undoes never builds it.

use std::ops::Range;

use crate::id::Seq;

use super::Runs;

/// Target seqs per page (a power of two).
const PAGE_BITS: u32 = 10;
#[cfg(test)]
const PAGE: Seq = 1 << PAGE_BITS;

/// See the module doc.
#[derive(Debug, Clone, Default)]
pub(crate) struct Deleters {
    /// Per page of target seqs (`seq >> PAGE_BITS`), the indexes of the
    /// delete runs whose targets touch it, ascending.
    pages: Vec<Vec<u32>>,
    /// The runs read so far (the last of them may have grown since: it is
    /// read again).
    runs: usize,
}

impl Deleters {
    /// Reads the runs of `runs` added (or grown) since the last call.
    pub fn catch_up(&mut self, runs: &Runs) {
        let from = self.runs.saturating_sub(1);
        for (k, r) in runs.iter_from(from).enumerate() {
            if let Some(targets) = r.delete_targets(0, r.len) {
                self.add(from + k, targets);
            }
        }
        self.runs = runs.len();
    }

    /// Adds delete run `i`, naming `targets`, to each page they touch
    /// (once: a run is read again only while it is the last one read, so
    /// it is the last entry of a page it is in already).
    fn add(&mut self, i: usize, targets: Range<Seq>) {
        let Some(end) = targets.end.checked_sub(1).filter(|_| !targets.is_empty()) else {
            return;
        };
        let (first, last) = (
            (targets.start >> PAGE_BITS) as usize,
            (end >> PAGE_BITS) as usize,
        );
        if self.pages.len() <= last {
            self.pages.resize_with(last + 1, Vec::new);
        }
        let i = i as u32;
        for page in &mut self.pages[first..=last] {
            if page.last() != Some(&i) {
                page.push(i);
            }
        }
    }

    /// The indexes of the delete runs (read so far) that may name char
    /// `seq`: a superset, ascending, each to check against its targets.
    #[inline]
    pub fn of(&self, seq: Seq) -> &[u32] {
        self.pages
            .get((seq >> PAGE_BITS) as usize)
            .map_or(&[], Vec::as_slice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::TextIdx;
    use crate::oplog::{OpKind, OpRun};

    fn delete(seq: u32, target: u32, len: u32) -> OpRun {
        OpRun {
            seq,
            len,
            text: TextIdx::new(0),
            kind: OpKind::Delete {
                target,
                reversed: false,
            },
        }
    }

    fn insert(seq: u32, len: u32) -> OpRun {
        OpRun {
            seq,
            len,
            text: TextIdx::new(0),
            kind: OpKind::Insert {
                origin_left: crate::id::UNKNOWN_ORIGIN,
                origin_right: crate::id::UNKNOWN_ORIGIN,
                byte_start: crate::oplog::NO_CONTENT,
                bytes: 0,
            },
        }
    }

    /// Brute force: the delete runs whose targets contain `c`.
    fn naming(runs: &Runs, c: Seq) -> Vec<u32> {
        (0..runs.len() as u32)
            .filter(|&i| {
                let r = runs.get(i as usize).expect("a run");
                r.delete_targets(0, r.len).is_some_and(|t| t.contains(&c))
            })
            .collect()
    }

    fn check(d: &Deleters, runs: &Runs) {
        for c in (0..9 * PAGE)
            .step_by(7)
            .chain([2 * PAGE - 2, 2 * PAGE + 1, 7 * PAGE + 2])
        {
            let want = naming(runs, c);
            let found: Vec<u32> = d
                .of(c)
                .iter()
                .copied()
                .filter(|i| want.contains(i))
                .collect();
            assert_eq!(found, want, "char {c}");
        }
    }

    #[test]
    fn every_delete_run_is_found_from_its_chars_as_runs_come_and_grow() {
        let mut runs = Runs::default();
        let mut d = Deleters::default();
        d.catch_up(&runs);
        // Spanning pages; then a backspace run growing down across a page
        // boundary, read between growths; then one growing up.
        runs.push(insert(0, 9 * PAGE));
        runs.push(delete(9 * PAGE, 5, 3 * PAGE));
        d.catch_up(&runs);
        check(&d, &runs);
        runs.push(delete(12 * PAGE, 2 * PAGE + 1, 1));
        for k in 1..4 {
            let next = OpRun {
                seq: 12 * PAGE + k,
                len: 1,
                text: TextIdx::new(0),
                kind: OpKind::Delete {
                    target: 2 * PAGE + 1 - k,
                    reversed: false,
                },
            };
            let last = runs.last_mut().expect("a run");
            assert!(last.try_append(&next));
            d.catch_up(&runs);
            check(&d, &runs);
        }
        runs.push(delete(12 * PAGE + 4, 7 * PAGE - 2, 5));
        runs.push(insert(12 * PAGE + 9, 3));
        d.catch_up(&runs);
        check(&d, &runs);
        assert_eq!(d.of(2 * PAGE - 2), &[1, 2]);
        assert_eq!(d.of(100 * PAGE), &[] as &[u32]);
    }
}
