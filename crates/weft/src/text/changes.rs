//! What applying remote ops changed in a text, read back from the tree
//! afterwards: the change events' deltas for imports.
//!
//! An applied plan gave the text new items (seqs from `first_new` on) and
//! turned some visible chars into tombstones (the ranges `remote_delete`
//! recorded). Every other char is unchanged, so only the leaves holding
//! those items need reading: each one's position comes from the tree's
//! caches in O(log n), and the chars between two such leaves are one
//! retain. Cost: O(k log n + size of the k leaves touched), independent of
//! the text's length. Attribute changes of unchanged chars (from marks)
//! are not seen here; the caller diffs styles for plans with marks.

use std::ops::Range;

use generic_btree::{Cursor, LeafIndex, PreviousCache};

use crate::id::Seq;
use crate::oplog::OpLog;
use crate::style::Delta;

use super::chunk::Counts;
use super::TextState;
use crate::unit::prefix_units;

/// One step of a text's change, with its counts in every unit.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Step {
    /// Unchanged chars.
    Retain(Counts),
    /// Chars deleted.
    Delete(Counts),
    /// New text with its attributes.
    Insert(Vec<Delta>),
}

/// `steps` as a delta counted in `unit`.
pub(crate) fn render(steps: &[Step], unit: crate::Unit) -> Vec<Delta> {
    let mut out = Vec::with_capacity(steps.len());
    for s in steps {
        match s {
            Step::Retain(c) => out.push(Delta::retain(c.get(unit) as usize)),
            Step::Delete(c) => out.push(Delta::delete(c.get(unit) as usize)),
            Step::Insert(d) => out.extend(d.iter().cloned()),
        }
    }
    out
}

/// Counts of the `n` chars from char `from` of `text`.
fn counts_of(text: &str, from: u32, n: u32) -> Counts {
    let (b0, u0) = prefix_units(text.as_bytes(), from);
    let (b1, u1) = prefix_units(text.as_bytes(), from + n);
    Counts {
        chars: n,
        utf8: b1 - b0,
        utf16: u1 - u0,
        anchors: 0,
    }
}

/// How many seqs of `range` fall in `sorted` (ascending, disjoint).
fn overlap(range: Range<Seq>, sorted: &[Range<Seq>]) -> u32 {
    let first = sorted.partition_point(|r| r.end <= range.start);
    sorted[first..]
        .iter()
        .take_while(|r| r.start < range.end)
        .map(|r| r.end.min(range.end) - r.start.max(range.start))
        .sum()
}

impl TextState {
    /// Starts recording the chars remote deletes remove (see
    /// [`TextState::take_deletions`]).
    pub fn record_deletions(&mut self) {
        self.deletions = Some(Vec::new());
    }

    /// Stops recording deletions and returns the ranges recorded.
    pub fn take_deletions(&mut self) -> Vec<Range<Seq>> {
        self.deletions.take().unwrap_or_default()
    }

    /// Visible counts before `leaf` (the focus must be dropped).
    fn counts_before(&self, leaf: LeafIndex) -> Counts {
        let mut before = Counts::default();
        self.tree
            .visit_previous_caches(Cursor { leaf, offset: 0 }, |c| {
                if let PreviousCache::NodeCache(c) = c {
                    before.add(*c);
                }
            });
        before
    }

    /// The change made by remote ops applied since the text was as it was
    /// before seq `first_new`: `inserted` are the seq runs of new chars of
    /// this text, `deleted` (ascending, disjoint) the chars that were
    /// visible and are deleted now. Inserts carry their attributes (read
    /// from the text as it is now). Must run with the focus dropped.
    pub fn import_changes(
        &self,
        log: &OpLog,
        first_new: Seq,
        inserted: &[Range<Seq>],
        deleted: &[Range<Seq>],
    ) -> Vec<Step> {
        debug_assert!(self.focus.is_none());
        let content = log.content();
        let mut leaves: Vec<LeafIndex> = Vec::new();
        for r in inserted.iter().chain(deleted) {
            let mut seq = r.start;
            while seq < r.end {
                let (leaf, i, _) = self.position_of(seq);
                leaves.push(leaf);
                seq = self.chunk(leaf).items[i].end();
            }
        }
        // Document order: by visible chars before the leaf, a leaf with no
        // visible char first among equals (it can only hold deletions, which
        // commute with the inserts at the same place), then by the anchors
        // before it (leaves holding only tombstones and anchors).
        let mut keyed: Vec<(u32, bool, u32, LeafIndex)> = Vec::with_capacity(leaves.len());
        leaves.sort_unstable();
        leaves.dedup();
        for leaf in leaves {
            let before = self.counts_before(leaf);
            let visible = self.chunk(leaf).counts.chars > 0;
            keyed.push((before.chars, visible, before.anchors, leaf));
        }
        keyed.sort_unstable_by_key(|&(chars, visible, anchors, _)| (chars, visible, anchors));

        let rich = !self.anchors.is_empty() || !log.objects().is_empty();
        let mut steps = Vec::new();
        let mut now = Counts::default();
        let retain = |steps: &mut Vec<Step>, c: Counts| {
            if c.chars > 0 {
                match steps.last_mut() {
                    Some(Step::Retain(r)) => r.add(c),
                    _ => steps.push(Step::Retain(c)),
                }
            }
        };
        for (_, _, _, leaf) in keyed {
            let mut at = self.counts_before(leaf);
            // Steps count chars only: anchors are zero-width.
            at.anchors = 0;
            let mut gap = at;
            gap.sub(now);
            retain(&mut steps, gap);
            for item in &self.chunk(leaf).items {
                if item.is_anchor() {
                    continue;
                }
                let start = item.byte_start as usize;
                let text = content
                    .get(start..start + item.bytes as usize)
                    .unwrap_or("");
                // Old chars first: seqs grow along an item.
                let split = first_new.clamp(item.seq, item.end());
                let (old, new) = (split - item.seq, item.end() - split);
                if item.deleted {
                    let gone = overlap(item.seq..split, deleted);
                    if gone > 0 {
                        // Tombstones keep their text: count the units of
                        // exactly the chars that went.
                        let c = deleted_counts(text, item.seq, item.seq..split, deleted);
                        debug_assert_eq!(c.chars, gone);
                        steps.push(Step::Delete(c));
                    }
                    continue;
                }
                if old > 0 {
                    let c = counts_of(text, 0, old);
                    retain(&mut steps, c);
                    at.add(c);
                }
                if new > 0 {
                    let c = counts_of(text, old, new);
                    let from = at.chars as usize;
                    let delta = if rich {
                        self.slice_delta(
                            from as u32..from as u32 + new,
                            content,
                            (log.marks(), log.keys(), log.objects()),
                        )
                    } else {
                        let (b0, _) = prefix_units(text.as_bytes(), old);
                        vec![Delta::insert(&text[b0 as usize..])]
                    };
                    steps.push(Step::Insert(delta));
                    at.add(c);
                }
            }
            now = at;
        }
        steps
    }
}

/// Counts of the chars of an item (text `text`, first seq `first`) within
/// `range` that `deleted` holds.
fn deleted_counts(text: &str, first: Seq, range: Range<Seq>, deleted: &[Range<Seq>]) -> Counts {
    let mut c = Counts::default();
    let i = deleted.partition_point(|r| r.end <= range.start);
    for r in deleted[i..].iter().take_while(|r| r.start < range.end) {
        let (s, e) = (r.start.max(range.start), r.end.min(range.end));
        c.add(counts_of(text, s - first, e - s));
    }
    c
}
