//! Version math on the history: the version vector a set of heads stands
//! for (its causal closure), and the heads of a version vector.

use crate::error::{Error, Result};
use crate::id::{OpId, Seq};
use crate::version::{Frontiers, VersionVector};

use super::OpLog;

impl OpLog {
    /// The seq of op `id`, or [`Error::UnknownOp`].
    fn known_seq(&self, id: OpId) -> Result<Seq> {
        self.id_to_seq(id).ok_or(Error::UnknownOp(id))
    }

    /// The version made of the ops `seqs` and everything they depend on.
    /// Each change is visited at most once: O(changes visited).
    fn closure_of(&self, mut stack: Vec<Seq>) -> VersionVector {
        let mut vv = VersionVector::new();
        while let Some(seq) = stack.pop() {
            let ci = self.change_index(seq);
            let change = &self.changes[ci];
            let peer = self.peers.get(change.peer);
            let end = change.counter + (seq - change.seq) + 1;
            let had = vv.get(peer);
            if had >= end {
                continue;
            }
            vv.set(peer, end);
            // The peer's changes whose first op is newly included bring
            // their deps (a change's later ops depend on its earlier ones;
            // changes starting below `had` were walked when it was set).
            let list = &self.by_peer[change.peer.as_usize()];
            let mut i = list.partition_point(|&c| {
                self.changes[c as usize].counter_end() <= seq - change.seq + change.counter
            });
            loop {
                let c = &self.changes[list[i] as usize];
                if c.counter < had {
                    break;
                }
                stack.extend_from_slice(self.deps(c));
                if i == 0 {
                    break;
                }
                i -= 1;
            }
        }
        vv
    }

    /// The version `frontiers` stand for: its heads and everything they
    /// depend on.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownOp`] if a head is not in the history.
    pub fn frontiers_to_vv(&self, frontiers: &Frontiers) -> Result<VersionVector> {
        let seqs = frontiers
            .iter()
            .map(|id| self.known_seq(id))
            .collect::<Result<Vec<_>>>()?;
        Ok(self.closure_of(seqs))
    }

    /// The heads of `vv`: its ops that no other op of it depends on.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownOp`] if `vv` names an op the history lacks;
    /// [`Error::InvalidVersion`] if it holds an op without an op that op
    /// depends on (not a version any replica can be at).
    pub fn vv_to_frontiers(&self, vv: &VersionVector) -> Result<Frontiers> {
        let mut last = Vec::with_capacity(vv.len());
        let mut below = Vec::new();
        for (peer, end) in vv.iter() {
            if end == 0 {
                continue;
            }
            let id = OpId::new(peer, end - 1);
            let seq = self.known_seq(id)?;
            last.push(id);
            // What the op depends on: its predecessor in its change, or
            // the change's deps.
            let change = &self.changes[self.change_index(seq)];
            if seq > change.seq {
                below.push(seq - 1);
            } else {
                below.extend_from_slice(self.deps(change));
            }
        }
        let past = self.closure_of(below);
        if !vv.includes_all(&past) {
            return Err(Error::InvalidVersion {
                what: "it holds an op but not every op that op depends on",
            });
        }
        Ok(last.into_iter().filter(|&id| !past.includes(id)).collect())
    }
}
