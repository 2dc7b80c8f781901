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
//! - exports, checkouts and views need versions that hold the root and
//!   ops from the root on ([`OpLog::check_trimmed`]).

use std::collections::BTreeSet;

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
