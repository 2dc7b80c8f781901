//! [`CommitInfo`]: the message and timestamp a commit was made with
//! (see `Doc::commit_with`), kept per span of one peer's ops. Only
//! commits given one are stored, so a history without them costs
//! nothing.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

use crate::id::{Counter, PeerId};

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
/// commits never overlap.
pub(crate) type CommitInfos = BTreeMap<(PeerId, Counter), CommitInfo>;

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
