//! Fast-forward: merging into texts that hold nothing yet.
//!
//! When an update's ops go into texts that are empty in the receiver and
//! carry no marks, and each insert lands where its origins say with
//! nothing between them (no op of the update is concurrent with one it
//! would have to be ordered against), FugueMax has nothing to decide:
//! each run goes right after its left origin. Then the chars' order is a
//! linked list, kept here with one entry per run end and per split point,
//! and each text's tree is built once, leaf by leaf, at the end, instead of
//! finding, splitting and indexing items op by op. This is what importing
//! a whole history into a new document does (diamond-types takes the same
//! shortcut).
//!
//! The check is exact: an insert fast-forwards only if the char after its
//! left origin is its right origin, which is precisely when the FugueMax
//! scan of [`crate::text::TextState::integrate`] would stop at once. The
//! first insert that fails it replays everything recorded so far through
//! the general path, which then takes the rest of the update.

use std::collections::HashMap;
use std::ops::Range;

use crate::error::Result;
use crate::id::{OpId, Seq, TextIdx, NO_SEQ};
use crate::oplog::OpLog;
use crate::text::{Item, TextTable, TreeBuilder};

use super::apply::broken;
use super::bits::SeqBits;

/// A char and the index of its run in [`Linear::runs`].
type Place = (Seq, u32);

/// Seqs are dense and the map is internal to one import: a multiply
/// hash (rustc-hash's, already built for generic-btree) serves.
type SeqMap = HashMap<Seq, Place, rustc_hash::FxBuildHasher>;

/// An insert run recorded for the build (and for a replay).
#[derive(Debug, Clone, Copy)]
struct Run {
    text: TextIdx,
    id: OpId,
    /// The char after the run's last char.
    after: Place,
    /// The run; while the trees are built, the part of it not reached
    /// yet. A run's chars come in document order in its own order, so the
    /// build cuts pieces off its front ([`Item::split`]; O(run length) in
    /// all, also for text that is not ASCII).
    item: Item,
}

/// A delete recorded for a replay: op `seq` deletes chars `targets` of
/// `text`.
#[derive(Debug, Clone)]
struct Deletion {
    seq: Seq,
    text: TextIdx,
    targets: Range<Seq>,
}

/// The chars of the update's texts as linked lists. See the module doc.
#[derive(Debug)]
pub(super) struct Linear {
    /// Per text of the document, its first char (`NO_SEQ`: none yet).
    heads: Vec<Place>,
    /// Char -> the char after it, for every char a run was inserted after
    /// that is not the last of its run (the last is followed by
    /// [`Run::after`], any other char by the next char of its run).
    next: SeqMap,
    /// The run that held the last left origin looked up: inserts cluster.
    hint: usize,
    /// Chars a run was inserted after that are not the last of their run.
    splits: SeqBits,
    /// Deleted chars.
    dead: SeqBits,
    /// Insert runs, ascending seqs.
    runs: Vec<Run>,
    deletions: Vec<Deletion>,
}

impl Linear {
    /// A fast-forward for an update of `ops` op runs (`inserts` of them
    /// insert runs) that numbers its ops `seqs`, into texts `touched`, if
    /// every one of them is empty. `None` otherwise, or when `seqs` is far
    /// larger than the update (a few bytes can name billions of ops, and
    /// one bit per op is kept here).
    pub fn new(
        texts: &TextTable,
        touched: &[TextIdx],
        (ops, inserts): (usize, usize),
        seqs: Range<Seq>,
    ) -> Option<Linear> {
        let blank = touched
            .iter()
            .all(|&t| texts.get(t).is_some_and(|s| s.is_blank()));
        if !blank {
            return None;
        }
        let splits = SeqBits::for_update(seqs.clone(), ops)?;
        let dead = SeqBits::for_update(seqs, ops)?;
        // About a quarter of B4's insert runs go inside a run.
        let mut next = SeqMap::default();
        next.reserve(inserts / 2);
        Some(Linear {
            heads: vec![(NO_SEQ, 0); texts.len()],
            next,
            hint: 0,
            splits,
            dead,
            runs: Vec::with_capacity(inserts),
            deletions: Vec::with_capacity(ops.saturating_sub(inserts)),
        })
    }

    /// Records the insert run `item` (op `id`) into `text`, if it goes
    /// right after its left origin; `false` (recording nothing) if it
    /// does not.
    #[inline]
    pub fn insert(&mut self, text: TextIdx, id: OpId, item: Item) -> bool {
        let left = item.origin_left;
        let here = (item.seq, self.runs.len() as u32);
        // The char after the left origin, and where to link the new run.
        let old = if left == NO_SEQ {
            match self.heads.get(text.as_usize()) {
                Some(&h) if h.0 == item.origin_right => {
                    self.heads[text.as_usize()] = here;
                    h
                }
                _ => return false,
            }
        } else {
            let Some(r) = self.run_of(left) else {
                return false;
            };
            let run = &mut self.runs[r];
            if left + 1 == run.item.end() {
                // The run's last char.
                if run.after.0 != item.origin_right {
                    return false;
                }
                std::mem::replace(&mut run.after, here)
            } else if self.splits.get(left) {
                // Something was inserted after it before.
                match self.next.get_mut(&left) {
                    Some(n) if n.0 == item.origin_right => std::mem::replace(n, here),
                    _ => return false,
                }
            } else {
                // Inside a run: the insert splits it.
                if left + 1 != item.origin_right || !self.splits.set(left..left + 1) {
                    return false;
                }
                self.next.insert(left, here);
                (left + 1, r as u32)
            }
        };
        self.runs.push(Run {
            text,
            id,
            after: old,
            item,
        });
        true
    }

    /// The index of the recorded run holding char `seq`.
    #[inline]
    fn run_of(&mut self, seq: Seq) -> Option<usize> {
        let holds = |r: &Run| r.item.seq <= seq && seq < r.item.end();
        let last = self.runs.len().checked_sub(1)?;
        for i in [last, self.hint] {
            if self.runs.get(i).is_some_and(holds) {
                self.hint = i;
                return Some(i);
            }
        }
        let i = self.runs.partition_point(|r| r.item.end() <= seq);
        self.hint = i;
        self.runs.get(i).filter(|r| holds(r)).map(|_| i)
    }

    /// Records that op `seq` deletes chars `targets` of `text`; `false`
    /// (recording nothing) if they are not chars of the update.
    pub fn delete(&mut self, seq: Seq, text: TextIdx, targets: Range<Seq>) -> bool {
        if !self.dead.set(targets.clone()) {
            return false;
        }
        self.deletions.push(Deletion { seq, text, targets });
        true
    }

    /// Carries out everything recorded through the general path instead,
    /// in op order (the update turned out to need it).
    pub fn replay(self, texts: &mut TextTable, log: &OpLog) -> Result<()> {
        let mut deletions = self.deletions.into_iter().peekable();
        for run in self.runs {
            while let Some(d) = deletions.next_if(|d| d.seq < run.item.seq) {
                delete_slow(texts, log, d)?;
            }
            let state = texts.get_mut(run.text).ok_or_else(|| broken("text"))?;
            state.integrate(run.item, run.id, log, log.content());
        }
        for d in deletions {
            delete_slow(texts, log, d)?;
        }
        Ok(())
    }

    /// Builds the trees of the texts `touched` from what was recorded.
    ///
    /// # Errors
    ///
    /// [`Error::Internal`] if the lists do not hold what the plan
    /// guaranteed (a bug).
    pub fn finish(
        mut self,
        texts: &mut TextTable,
        touched: &[TextIdx],
        content: &str,
    ) -> Result<()> {
        let total: u64 = self.runs.iter().map(|r| u64::from(r.item.len)).sum();
        let mut seen = 0u64;
        for &t in touched {
            let mut built = TreeBuilder::default();
            let mut last: Option<Item> = None;
            let (mut x, mut r) = self.heads.get(t.as_usize()).copied().unwrap_or((NO_SEQ, 0));
            while x != NO_SEQ {
                // Each char is reached once, as the front of what is left
                // of its run (so the lists cannot cycle).
                let run = match self.runs.get_mut(r as usize) {
                    Some(run) if run.item.seq == x && run.item.len > 0 && run.text == t => run,
                    _ => return Err(broken("linked char")),
                };
                let (rest_end, after) = (run.item.end(), run.after);
                // The piece ends after the first char something was
                // inserted after (the char after that is listed), at the
                // run's end (listed too), or where deletion starts or stops
                // (the run goes on).
                let split = self.splits.next_with(x, rest_end, true);
                let listed = if split < rest_end { split + 1 } else { split };
                let deleted = self.dead.get(x);
                let end = self.dead.next_with(x, listed, !deleted);
                let mut item = run.item;
                run.item = if end < rest_end {
                    item.split(end - x, content.as_bytes())
                } else {
                    Item {
                        seq: end,
                        len: 0,
                        ..item
                    }
                };
                item.deleted |= deleted;
                seen += u64::from(item.len);
                match &mut last {
                    Some(prev) if prev.can_append(&item) => prev.append(&item),
                    _ => {
                        if let Some(prev) = last.replace(item) {
                            built.push(prev);
                        }
                    }
                }
                (x, r) = if end == rest_end {
                    after
                } else if end == listed {
                    *self
                        .next
                        .get(&(end - 1))
                        .ok_or_else(|| broken("split point"))?
                } else {
                    (end, r)
                };
            }
            if let Some(prev) = last {
                built.push(prev);
            }
            let state = texts.get_mut(t).ok_or_else(|| broken("text"))?;
            state.install_built(built);
        }
        if seen != total {
            return Err(broken("chars missing from the lists"));
        }
        Ok(())
    }
}

/// Deletes through the general path.
fn delete_slow(texts: &mut TextTable, log: &OpLog, d: Deletion) -> Result<()> {
    let state = texts.get_mut(d.text).ok_or_else(|| broken("text"))?;
    state.remote_delete(d.targets, log.content());
    Ok(())
}

#[cfg(test)]
mod tests {
    use smallvec::smallvec;

    use super::*;
    use crate::merge::apply::apply;
    use crate::merge::plan::{plan, Readiness};
    use crate::merge::{Update, UpdateChange, UpdateKind, UpdateRun};
    use crate::unit::Unit;

    /// One change of peer 1 in text "t": `runs` (len, kind), `content`.
    fn update(counter: u32, runs: Vec<(u32, UpdateKind)>, content: &str) -> Update {
        let len = runs.iter().map(|r| r.0).sum();
        let deps = match counter {
            0 => smallvec![],
            c => smallvec![OpId::new(1, c - 1)],
        };
        Update {
            texts: vec!["t".into()],
            changes: vec![UpdateChange {
                peer: 1,
                counter,
                len,
                deps,
                runs: 0..runs.len(),
            }],
            runs: runs
                .into_iter()
                .map(|(len, kind)| UpdateRun { len, text: 0, kind })
                .collect(),
            content: content.into(),
            marks: Vec::new(),
            map_sets: Vec::new(),
            embeds: Vec::new(),
            commits: Vec::new(),
        }
    }

    fn import(log: &mut OpLog, texts: &mut TextTable, u: &Update) {
        let Readiness::Ready(p) = plan(log, texts, u).unwrap() else {
            panic!("the update builds on nothing missing");
        };
        apply(log, texts, &mut crate::map::MapTable::default(), u, p, None).unwrap();
    }

    /// The text "t" of a document: its content, its UTF-16 length, and
    /// which of its chars (by seq) are deleted.
    fn shown(log: &OpLog, texts: &TextTable) -> (String, u32, Vec<(Seq, bool)>) {
        let state = texts.get(TextIdx::new(0)).unwrap();
        state.assert_invariants(log.content());
        let mut out = String::new();
        state.write_to(log.content(), &mut out);
        let chars = state
            .items()
            .flat_map(|i| (i.seq..i.end()).map(move |s| (s, i.deleted)))
            .collect();
        (out, state.len(Unit::Utf16), chars)
    }

    /// Our exporter leaves out the text of chars the same update deletes,
    /// so only other encoders send an update that carries text it also
    /// deletes (and inserts inside it). Imported at once into an empty
    /// doc (the fast-forward, deleted bits and all) it must equal the same
    /// ops imported in two updates, the second taking the general path.
    #[test]
    fn deleted_text_carried_by_the_same_update_is_cut_out() {
        let id = |c| Some(OpId::new(1, c));
        // "aé😀bc文d" (ops 0..7), "XY" after "😀" (7..9), delete "é😀X"
        // (ops 9..12: targets 1, 2, 7), delete "文" (12).
        let typed = vec![
            (
                7,
                UpdateKind::Insert {
                    left: None,
                    right: None,
                    content: Some(0..13),
                },
            ),
            (
                2,
                UpdateKind::Insert {
                    left: id(2),
                    right: id(3),
                    content: Some(13..15),
                },
            ),
        ];
        let deletes = vec![
            (
                2,
                UpdateKind::Delete {
                    target: OpId::new(1, 1),
                    reversed: false,
                },
            ),
            (
                1,
                UpdateKind::Delete {
                    target: OpId::new(1, 7),
                    reversed: false,
                },
            ),
            (
                1,
                UpdateKind::Delete {
                    target: OpId::new(1, 5),
                    reversed: false,
                },
            ),
        ];
        let content = "aé😀bc文dXY";

        let mut at_once = (OpLog::default(), TextTable::default());
        let all: Vec<_> = typed.iter().chain(&deletes).cloned().collect();
        import(&mut at_once.0, &mut at_once.1, &update(0, all, content));

        let mut in_two = (OpLog::default(), TextTable::default());
        import(&mut in_two.0, &mut in_two.1, &update(0, typed, content));
        import(&mut in_two.0, &mut in_two.1, &update(9, deletes, ""));

        let want = shown(&in_two.0, &in_two.1);
        assert_eq!(want.0, "aYbcd");
        assert_eq!(want.1, 5);
        assert_eq!(shown(&at_once.0, &at_once.1), want);
    }

    /// Peers 2 and 3 both insert after the "a" of peer 1's "abc", not
    /// knowing of each other. Delivered in one update into an empty doc,
    /// the second insert finds something already inserted after its left
    /// origin and must leave the fast-forward; the result must equal the
    /// same ops delivered in two updates (the second into a non-empty
    /// text, the general path), whichever peer comes first.
    #[test]
    fn concurrent_inserts_after_one_char_inside_a_run_leave_the_fast_forward() {
        let insert =
            |left: Option<OpId>, right: Option<OpId>, content: Range<usize>| UpdateKind::Insert {
                left,
                right,
                content: Some(content),
            };
        let change = |peer, len, runs: Range<usize>, deps| UpdateChange {
            peer,
            counter: 0,
            len,
            deps,
            runs,
        };
        let (a, b) = (Some(OpId::new(1, 0)), Some(OpId::new(1, 1)));
        let after_abc = || smallvec![OpId::new(1, 2)];
        for (first, second) in [(2, 3), (3, 2)] {
            let all = Update {
                texts: vec!["t".into()],
                changes: vec![
                    change(1, 3, 0..1, smallvec![]),
                    change(first, 1, 1..2, after_abc()),
                    change(second, 2, 2..3, after_abc()),
                ],
                runs: [
                    insert(None, None, 0..3),
                    insert(a, b, 3..4),
                    insert(a, b, 4..6),
                ]
                .into_iter()
                .zip([3, 1, 2])
                .map(|(kind, len)| UpdateRun { len, text: 0, kind })
                .collect(),
                content: "abcXYZ".into(),
                marks: Vec::new(),
                map_sets: Vec::new(),
                embeds: Vec::new(),
                commits: Vec::new(),
            };
            let mut at_once = (OpLog::default(), TextTable::default());
            import(&mut at_once.0, &mut at_once.1, &all);

            let mut head = all.clone();
            head.changes.truncate(2);
            head.runs.truncate(2);
            head.content.truncate(4);
            let mut tail = all.clone();
            tail.changes = vec![change(second, 2, 0..1, after_abc())];
            tail.runs = vec![UpdateRun {
                len: 2,
                text: 0,
                kind: insert(a, b, 0..2),
            }];
            tail.content = "YZ".into();
            let mut in_two = (OpLog::default(), TextTable::default());
            import(&mut in_two.0, &mut in_two.1, &head);
            import(&mut in_two.0, &mut in_two.1, &tail);

            let want = shown(&in_two.0, &in_two.1);
            assert_eq!(want.0.len(), 6);
            assert_eq!(
                shown(&at_once.0, &at_once.1),
                want,
                "peers {first}, {second}"
            );
        }
    }
}
