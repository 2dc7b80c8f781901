//! [`Change`]: a run of one peer's consecutive ops with shared dependencies.

use crate::id::{Counter, Lamport, PeerIdx, Seq};

/// Ops `counter..counter + len` of one peer, made one after another on top of
/// the version named by its deps (the heads the peer had seen when it started).
///
/// Op `i` of the change has seq `seq + i` and Lamport timestamp
/// `lamport + i`; each op depends on the previous one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Change {
    /// Index of the peer in the log's peer table.
    pub peer: PeerIdx,
    pub counter: Counter,
    pub seq: Seq,
    pub len: u32,
    pub lamport: Lamport,
    /// Where the seqs of the ops the first op depends on start in the log's
    /// dependency pool; none for a root change.
    pub deps_start: u32,
    pub deps_len: u32,
}

impl Change {
    /// One past the last seq of the change.
    pub fn seq_end(&self) -> Seq {
        self.seq + self.len
    }

    /// One past the last counter of the change.
    pub fn counter_end(&self) -> Counter {
        self.counter + self.len
    }
}
