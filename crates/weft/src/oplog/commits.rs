//! [`CommitInfo`]: the message and timestamp a commit was made with
//! (see `Doc::commit_with`), kept per span of one peer's ops. Only
//! commits given one are stored, so a history without them costs
//! nothing.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

use crate::id::{Counter, PeerId, Seq};

use super::OpLog;

/// What one commit of `peer`'s ops `start..end` was made with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CommitInfo {
    pub peer: PeerId,
    pub start: Counter,
    pub end: Counter,
    /// Seconds since the Unix epoch, if asked for.
    pub timestamp: Option<i64>,
    pub message: Option<Arc<str>>,
}

/// The commit infos of a history, by (peer, first counter). A peer's
/// commits never overlap, and each covers only ops the history holds.
pub(crate) type CommitInfos = BTreeMap<(PeerId, Counter), CommitInfo>;

/// One change an import added, as [`OpLog::add_imported_commit_info`]
/// checks infos against it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AddedChange {
    pub peer: PeerId,
    pub counter: Counter,
    pub len: u32,
    /// It depends on its peer's previous op and nothing else, as every
    /// part of a commit after its first does.
    pub continues: bool,
}

impl OpLog {
    /// Stores `info` (one already stored for the same ops wins: a commit
    /// is made once, so both are the same).
    pub fn add_commit_info(&mut self, info: CommitInfo) {
        if info.start < info.end {
            self.commit_infos
                .entry((info.peer, info.start))
                .or_insert(info);
        }
    }

    /// Stores `info`, which arrived with an import, if it passes the rule
    /// below; ignores it otherwise (the ops import all the same: a
    /// message is never worth refusing edits for). Returns whether it was
    /// stored.
    ///
    /// The rule: a peer may only tell of commits whose ops it sends now.
    /// So `info` is kept only if
    /// - the import added ops it covers (`added`: the import's changes);
    /// - it is one commit: each added change that starts inside it
    ///   continues the op just before it and depends on nothing else
    ///   ([`AddedChange::continues`]);
    /// - no other commit claims its ops: no stored info overlaps it but
    ///   one with the same first op, timestamp and message (the same
    ///   commit, received in parts), and the ops of it held before this
    ///   import (below `held_before`) are that stored info's.
    ///
    /// A stored info covers only ops the history holds: `info` is cut at
    /// the peer's known end, and grows as the rest of its commit arrives.
    /// Replicas that receive the same commits in any order and in any
    /// parts end with the same infos.
    pub fn add_imported_commit_info(
        &mut self,
        info: &CommitInfo,
        held_before: Counter,
        added: &[AddedChange],
    ) -> bool {
        let (start, end) = (info.start, info.end);
        let mut adds = false;
        for c in added.iter().filter(|c| c.peer == info.peer) {
            if c.counter < end && c.counter.saturating_add(c.len) > start {
                adds = true;
                if c.counter > start && !c.continues {
                    return false;
                }
            }
        }
        let end = end.min(self.known_end(info.peer));
        if !adds || end <= start {
            return false;
        }
        let kept = {
            let mut overlapping = self.commit_infos_in(info.peer, start..end);
            match (overlapping.next(), overlapping.next()) {
                (None, _) => held_before <= start,
                (Some(j), None) => {
                    j.start == start
                        && j.timestamp == info.timestamp
                        && j.message == info.message
                        && held_before <= j.end
                }
                (Some(_), Some(_)) => false,
            }
        };
        if kept {
            match self.commit_infos.get_mut(&(info.peer, start)) {
                // More of a commit partly held: it grows.
                Some(stored) => stored.end = stored.end.max(end),
                None => {
                    let mut info = info.clone();
                    info.end = end;
                    self.commit_infos.insert((info.peer, start), info);
                }
            }
        }
        kept
    }

    /// Stores `info`, read from a snapshot this history was loaded from:
    /// cut to the ops the history holds, and dropped if nothing of it is
    /// left or another stored info overlaps it.
    pub fn add_loaded_commit_info(&mut self, info: &CommitInfo) {
        let end = info.end.min(self.known_end(info.peer));
        if info.start < end
            && self
                .commit_infos_in(info.peer, info.start..end)
                .next()
                .is_none()
        {
            let mut info = info.clone();
            info.end = end;
            self.commit_infos.insert((info.peer, info.start), info);
        }
    }

    /// The infos that hold any op of `pieces` (see
    /// [`OpLog::missing_pieces`]), sorted by peer and counter.
    pub fn commit_infos_for(&self, pieces: &[(usize, Range<Seq>)]) -> Vec<&CommitInfo> {
        let log = self;
        if !log.has_commit_infos() {
            return Vec::new();
        }
        let mut out: Vec<&CommitInfo> = Vec::new();
        for (ci, range) in pieces {
            let Some(change) = log.changes().get(*ci) else {
                continue;
            };
            let peer = log.peers().get(change.peer);
            let start = change.counter + (range.start - change.seq);
            out.extend(log.commit_infos_in(peer, start..start + (range.end - range.start)));
        }
        out.sort_unstable_by_key(|i| (i.peer, i.start));
        out.dedup_by_key(|i| (i.peer, i.start));
        out
    }

    /// Every stored commit info, by peer and counter.
    pub fn commit_infos(&self) -> impl ExactSizeIterator<Item = &CommitInfo> + '_ {
        self.commit_infos.values()
    }

    /// Whether any commit info is stored (then exports carry them: format
    /// version 2).
    pub fn has_commit_infos(&self) -> bool {
        !self.commit_infos.is_empty()
    }

    /// The commit infos of `peer` that hold any of its ops `counters`, by
    /// counter.
    pub fn commit_infos_in(
        &self,
        peer: PeerId,
        counters: Range<Counter>,
    ) -> impl Iterator<Item = &CommitInfo> + '_ {
        // The one starting before the range may reach into it.
        let before = self
            .commit_infos
            .range((peer, 0)..(peer, counters.start))
            .next_back()
            .map(|(_, i)| i)
            .filter(move |i| i.end > counters.start);
        before.into_iter().chain(
            self.commit_infos
                .range((peer, counters.start)..(peer, counters.end.max(counters.start)))
                .map(|(_, i)| i),
        )
    }
}
