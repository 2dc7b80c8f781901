//! [`Change`]: a run of one peer's consecutive ops with shared dependencies.

use smallvec::SmallVec;

use crate::id::{Counter, Lamport, Seq};

/// Ops `counter..counter + len` of one peer, made one after another on top of
/// the version `deps` (the heads the peer had seen when it started).
///
/// Op `i` of the change has seq `seq + i` and Lamport timestamp
/// `lamport + i`; each op depends on the previous one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Change {
    /// Index of the peer in the log's peer table.
    pub peer: u32,
    pub counter: Counter,
    pub seq: Seq,
    pub len: u32,
    pub lamport: Lamport,
    /// Seqs of the ops the first op depends on; empty for a root change.
    pub deps: SmallVec<[Seq; 2]>,
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
