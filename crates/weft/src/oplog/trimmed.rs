//! The trimmed history of a shallow document (one opened from
//! `ExportMode::ShallowSnapshot`): what it keeps of the ops before its
//! root, and the checks that keep it from needing more.
//!
//! A shallow document numbers the ops of its root version first: seqs
//! below [`Trimmed::end`] are exactly the root's ops. It keeps the whole
//! change table (ids, Lamport timestamps, deps), so ids of trimmed ops
//! still map to seqs, but their op runs are stand-ins made from the
//! texts: inserts without origins (and without text when deleted), the
//! mark ops of marks that started before the root (with their glue),
//! deletes without targets. Nothing reads what the stand-ins lack:
//! - a remote op is merged only if its causal past holds the whole root
//!   ([`OpLog::covers_root`]), so every char it is ordered against (a
//!   char it did not know) came after the root, with its origins kept;
//! - exports need versions that hold the root ([`OpLog::check_trimmed`]);
//! - a version after the root is rebuilt from the root: its log
//!   ([`OpLog::root_log`]) and its state, the current one without the
//!   later chars and with the root's chars deleted since visible again
//!   ([`OpLog::revivable`]: a shallow snapshot keeps their text), then the
//!   ops up to that version merged in.
//!
//! Cancels: a root's cancels are stand-ins too (deletes without
//! targets), their effect baked into the root's state (the chars the
//! segments show, the root marks' cancelled flags, key "C"). No op after
//! the root cancels a root op: a writer refuses such a root
//! ([`OpLog::cancel_below`]), the loader such a cancel, and a shallow
//! document such a remote or local cancel (`TrimmedHistory`). So what is
//! in force at the root is what is in force now, and a cancel after the
//! root works on kept ops only: [`OpLog::not_deleted`] skips the
//! stand-ins, and a char a root delete removed has no text, so no cancel
//! shows it again.

use std::collections::BTreeSet;
use std::ops::Range;

use crate::error::{Error, Result};
use crate::id::Seq;
use crate::version::VersionVector;

use super::OpLog;

/// What a shallow document knows about the history it trimmed.
#[derive(Debug, Clone)]
pub(crate) struct Trimmed {
    /// The root's ops are the seqs below this one.
    pub end: Seq,
    /// The root version.
    pub version: VersionVector,
    /// The root's heads, as seqs, sorted.
    pub heads: Vec<Seq>,
    /// Indexes of the kept changes (from `end` on) whose causal past
    /// lacks part of the root: changes concurrent to it that the
    /// snapshot kept. Every other kept change, and every change merged
    /// since, has the whole root in its past.
    pub partial: BTreeSet<usize>,
    /// The root's chars visible at the root and deleted when the snapshot
    /// was taken (see [`OpLog::revivable`]).
    pub later: Vec<Range<Seq>>,
    /// The ops the snapshot held.
    pub loaded_end: Seq,
}

impl OpLog {
    /// The seqs below which ops are trimmed (0 for a full history).
    #[inline]
    pub fn trimmed_end(&self) -> Seq {
        self.trimmed.as_ref().map_or(0, |t| t.end)
    }

    /// The trimmed part of a shallow document's history, if it is one.
    pub fn trimmed(&self) -> Option<&Trimmed> {
        self.trimmed.as_deref()
    }

    /// Marks the ops below seq `end` as a shallow root (their runs are
    /// stand-ins): computes the root version, its heads, and which kept
    /// changes do not have it all in their past.
    pub fn set_trimmed(&mut self, end: Seq) {
        if end == 0 {
            self.trimmed = None;
            return;
        }
        let mut version = VersionVector::new();
        let mut below = Vec::new();
        for c in &self.changes {
            if c.seq >= end {
                break;
            }
            let n = c.len.min(end - c.seq);
            let peer = self.peers.get(c.peer);
            version.set(peer, version.get(peer).max(c.counter + n));
            below.extend(self.deps(c).iter().copied().filter(|&d| d < end));
        }
        below.sort_unstable();
        below.dedup();
        // Heads: the root's last op of each peer that no root op depends
        // on (the op after it in its change is not in the root).
        let mut heads: Vec<Seq> = version
            .iter()
            .filter_map(|(p, n)| self.id_to_seq(crate::id::OpId::new(p, n.checked_sub(1)?)))
            .filter(|s| below.binary_search(s).is_err())
            .collect();
        heads.sort_unstable();
        self.trimmed = Some(Box::new(Trimmed {
            end,
            version,
            heads,
            partial: BTreeSet::new(),
            later: Vec::new(),
            loaded_end: self.next_seq,
        }));
        let first = self.change_index(end);
        for ci in first..self.changes.len() {
            let Some(c) = self.changes.get(ci) else { break };
            if !self.covers_root(&self.past_of_change(c)) {
                if let Some(t) = self.trimmed.as_mut() {
                    t.partial.insert(ci);
                }
            }
        }
    }

    /// Whether a change on top of `deps` (seqs of this log; a seq from
    /// [`OpLog::next_seq`] on is an op merged in the same update, which
    /// was checked already) has the whole root in its causal past. Always
    /// true for a full history. O(1) unless no dep is a change known to
    /// come after the root; then a walk over the kept changes concurrent
    /// to it.
    pub fn covers_root(&self, deps: &[Seq]) -> bool {
        let Some(t) = self.trimmed.as_deref() else {
            return true;
        };
        let after = |s: Seq| s >= self.next_seq || !t.partial.contains(&self.change_index(s));
        if deps.iter().any(|&d| d >= t.end && after(d)) {
            return true;
        }
        // The root's heads this past holds: a root op holds a head only
        // by being it (heads are the root's maximal ops).
        let mut need: Vec<Seq> = t.heads.clone();
        let mut stack: Vec<Seq> = deps.to_vec();
        let mut seen: BTreeSet<usize> = BTreeSet::new();
        while let Some(s) = stack.pop() {
            if s < t.end {
                need.retain(|&h| h != s);
                continue;
            }
            if after(s) {
                return true;
            }
            let ci = self.change_index(s);
            if seen.insert(ci) {
                if let Some(c) = self.changes.get(ci) {
                    stack.extend(self.past_of_change(c));
                }
            }
        }
        need.is_empty()
    }

    /// What the first kept op of change `c` depends on: the change's deps,
    /// plus its last root op when the change starts in the root.
    fn past_of_change(&self, c: &super::Change) -> Vec<Seq> {
        let end = self.trimmed_end();
        let mut deps = self.deps(c).to_vec();
        if c.seq < end {
            deps.push(end - 1);
        }
        deps
    }

    /// The targets of the delete ops `seqs` that are below `below`,
    /// sorted and joined.
    pub fn targets_in(&self, seqs: Range<Seq>, below: Seq) -> Vec<Range<Seq>> {
        if seqs.is_empty() || below == 0 {
            return Vec::new();
        }
        let ranges = self.runs_in(seqs).filter_map(|(r, part)| {
            let t = r.delete_targets(part.start - r.seq, part.end - part.start)?;
            (t.start < below).then(|| t.start..t.end.min(below))
        });
        joined(ranges.collect())
    }

    /// As [`OpLog::targets_in`], only the deletes in force (not
    /// cancelled). O(runs) without cancels in force, else one range per
    /// delete op, sorted: O(d log d) for d delete ops.
    pub fn targets_in_force(&self, seqs: Range<Seq>, below: Seq) -> Vec<Range<Seq>> {
        if self.cancels.is_empty() {
            // A run at a time.
            return self.targets_in(seqs, below);
        }
        if seqs.is_empty() || below == 0 {
            return Vec::new();
        }
        let mut ranges = Vec::new();
        for (r, part) in self.runs_in(seqs) {
            if !matches!(r.kind, super::OpKind::Delete { .. }) {
                continue;
            }
            for op in part {
                if self.is_cancelled(op) {
                    continue;
                }
                if let Some(t) = r.delete_targets(op - r.seq, 1) {
                    if t.start < below {
                        ranges.push(t);
                    }
                }
            }
        }
        joined(ranges)
    }

    /// The chars of this shallow document's root that were visible at
    /// the root and are deleted now: those the snapshot named (key "e"),
    /// and those deleted by ops merged since it loaded (made on top of
    /// the root, they delete only chars visible there).
    pub fn revivable(&self) -> Vec<Range<Seq>> {
        let Some(t) = self.trimmed.as_deref() else {
            return Vec::new();
        };
        let mut all = t.later.clone();
        all.extend(self.targets_in(t.loaded_end..self.next_seq, t.end));
        joined(all)
    }

    /// The chars below seq `at` (at least this document's own root) that
    /// are visible at the version of the ops below `at` and deleted now:
    /// what a shallow snapshot rooted there keeps the text of (key "e").
    /// Whether a delete is in force is read now: the caller made sure
    /// that no op from `at` on cancels one below it
    /// ([`OpLog::cancel_below`]), so it was the same at that version.
    pub fn visible_later(&self, at: Seq) -> Vec<Range<Seq>> {
        let own = self.trimmed_end().min(at);
        let dead = self.targets_in_force(own..at, at);
        // Deleted now: by a delete in force (one whose cancel showed
        // its chars again leaves them visible, with their text).
        let deleted = self.targets_in_force(own..self.next_seq, at);
        let mut all = self.revivable();
        all.extend(
            self.targets_in(at..self.next_seq, at)
                .into_iter()
                .filter_map(|r| {
                    let start = r.start.max(own);
                    (start < r.end).then_some(start..r.end)
                }),
        );
        let visible = minus(&joined(all), &dead);
        minus(&visible, &minus(&visible, &deleted))
    }

    /// Records the root's chars a loaded snapshot says were visible at
    /// the root and are deleted (key "e").
    pub fn set_revivable(&mut self, later: Vec<Range<Seq>>) {
        if let Some(t) = self.trimmed.as_mut() {
            t.later = later;
        }
    }

    /// Whether an op outside `root` (a causally closed version) cancels
    /// one inside it: a shallow snapshot rooted there cannot be written,
    /// since its root's ops are stand-ins that a cancel cannot switch
    /// off (see [`crate::ExportMode::ShallowSnapshot`]). O(cancel ops x
    /// log n).
    pub fn cancel_below(&self, root: &VersionVector) -> bool {
        self.ops().iter().any(|r| {
            let Some(targets) = r.cancel_targets(0, r.len) else {
                return false;
            };
            (r.seq..r.end()).zip(targets).any(|(op, target)| {
                !root.includes(self.seq_to_id(op)) && root.includes(self.seq_to_id(target))
            })
        })
    }

    /// The history of a shallow document's root version alone: the same
    /// stand-ins for the root's ops, the changes cut at the root, the
    /// marks started in it (ending in it, or open). `None` for a full
    /// history. What [`crate::Doc`] rebuilds versions after the root on.
    pub fn root_log(&self) -> Option<OpLog> {
        let t = self.trimmed.as_deref()?;
        let end = t.end;
        let n = self.change_index(end);
        let mut changes: Vec<super::Change> = self.changes.get(..n)?.to_vec();
        if let Some(c) = self.changes.get(n).filter(|c| c.seq < end) {
            changes.push(super::Change {
                len: end - c.seq,
                ..*c
            });
        }
        let count = changes.len() as u32;
        let by_peer = self
            .by_peer
            .iter()
            .map(|list| list.iter().copied().filter(|&c| c < count).collect())
            .collect();
        let next_lamport = changes.iter().map(|c| c.lamport + c.len).max().unwrap_or(0);
        let mut ops = super::Runs::default();
        for (run, seqs) in self.runs_in(0..end) {
            let mut run = *run;
            if seqs.end < run.end() {
                // Only a delete run joins across the root (a stand-in's
                // and a later one's targets continue each other).
                run.len = seqs.end - run.seq;
            }
            ops.push(run);
        }
        let mut marks: Vec<super::Mark> = self
            .marks
            .iter()
            .take_while(|m| m.start < end)
            .cloned()
            .collect();
        for m in &mut marks {
            if m.end >= end {
                m.end = crate::id::NO_SEQ;
            }
        }
        let commit_infos = self
            .commit_infos
            .values()
            .filter_map(|i| {
                let known = t.version.get(i.peer);
                (i.start < known).then(|| {
                    let mut i = i.clone();
                    i.end = i.end.min(known);
                    ((i.peer, i.start), i)
                })
            })
            .collect();
        Some(OpLog {
            peers: self.peers.clone(),
            changes,
            dep_pool: self.dep_pool.clone(),
            by_peer,
            ops,
            ops_from: 0,
            content: self.content.clone(),
            marks,
            keys: self.keys.clone(),
            map_sets: self
                .map_sets
                .iter()
                .filter(|m| m.seq < end)
                .cloned()
                .collect(),
            map_names: self.map_names.clone(),
            objects: self.objects.before(end),
            version: t.version.clone(),
            heads: t.heads.iter().copied().collect(),
            next_seq: end,
            next_lamport,
            open: false,
            read_only: false,
            commit_infos,
            trimmed: Some(Box::new(Trimmed {
                end,
                version: t.version.clone(),
                heads: t.heads.clone(),
                partial: BTreeSet::new(),
                // At the root those chars are visible again.
                later: Vec::new(),
                loaded_end: end,
            })),
            // The root's ops are stand-ins, none a cancel; the marks keep
            // the cancelled flags they had at the root (no op after the
            // root cancels a root op).
            cancels: Default::default(),
            deleters: None,
        })
    }

    /// [`Error::TrimmedHistory`] if one of `pieces` (change index, seqs)
    /// holds a trimmed op: their op runs cannot be exported.
    pub fn check_pieces(&self, pieces: &[(usize, std::ops::Range<Seq>)]) -> Result<()> {
        let end = self.trimmed_end();
        if pieces.iter().any(|(_, seqs)| seqs.start < end) {
            return Err(Error::TrimmedHistory);
        }
        Ok(())
    }

    /// [`Error::TrimmedHistory`] unless `version` holds the whole root
    /// of a shallow document (always `Ok` for a full history): the ops
    /// a version lacks can be exported, and a version shown, only then.
    pub fn check_trimmed(&self, version: &VersionVector) -> Result<()> {
        match self.trimmed.as_deref() {
            Some(t) if !version.includes_all(&t.version) => Err(Error::TrimmedHistory),
            _ => Ok(()),
        }
    }
}

/// `ranges` sorted, with overlapping and touching ones joined.
fn joined(mut ranges: Vec<Range<Seq>>) -> Vec<Range<Seq>> {
    ranges.sort_unstable_by_key(|r| r.start);
    let mut out: Vec<Range<Seq>> = Vec::with_capacity(ranges.len());
    for r in ranges.into_iter().filter(|r| !r.is_empty()) {
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

/// The seqs of `a` not in `b` (both sorted and joined).
pub(crate) fn minus(a: &[Range<Seq>], b: &[Range<Seq>]) -> Vec<Range<Seq>> {
    let mut out = Vec::new();
    let mut j = 0;
    for r in a {
        let mut start = r.start;
        while j < b.len() && b[j].end <= start {
            j += 1;
        }
        let mut k = j;
        while start < r.end {
            match b.get(k) {
                Some(cut) if cut.start < r.end => {
                    if cut.start > start {
                        out.push(start..cut.start);
                    }
                    start = start.max(cut.end);
                    k += 1;
                }
                _ => {
                    out.push(start..r.end);
                    break;
                }
            }
        }
    }
    out
}
