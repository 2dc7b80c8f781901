//! Doc-hidden checks and dumps for tests and fuzzing.

use crate::error::Result;
use crate::id::IdSpan;
use crate::text::TextState;

use super::Doc;

impl Doc {
    /// Checks internal invariants of the history and every text; panics on
    /// a broken one. For tests and fuzzing.
    #[doc(hidden)]
    pub fn assert_invariants(&self) {
        if let Some(latest) = &self.detached {
            latest.assert_invariants();
        }
        self.log.assert_invariants();
        for t in self.texts.iter() {
            // A text still in a lazily imported snapshot has no tree yet.
            if t.unloaded().is_none() {
                t.assert_invariants(self.log.content());
            }
        }
    }

    /// The history as canonical runs (for tests that compare replicas):
    /// per run of a peer's consecutive ops where each op after the first
    /// depends only on the previous one, its ids, the first op's Lamport
    /// timestamp and its deps. Replicas that hold the same history return
    /// the same list whatever order, overlap or duplication delivered it.
    /// Loads a lazily imported snapshot first.
    ///
    /// # Errors
    ///
    /// As [`Doc::load`].
    #[doc(hidden)]
    pub fn history_runs(&self) -> Result<Vec<(IdSpan, crate::Lamport, Vec<crate::OpId>)>> {
        Ok(self.latest().loaded()?.log.canonical_runs())
    }

    /// The changes of the history, one per line (for debugging tests).
    #[doc(hidden)]
    pub fn debug_changes(&self) -> String {
        let mut out = String::new();
        for c in self.log.changes() {
            let deps: Vec<String> = self
                .log
                .deps(c)
                .iter()
                .map(|&d| self.log.seq_to_id(d).to_string())
                .collect();
            out += &format!(
                "  peer {} counters {}..{} seqs {}..{} lamport {} deps [{}]\n",
                self.log.peers().get(c.peer),
                c.counter,
                c.counter + c.len,
                c.seq,
                c.seq + c.len,
                c.lamport,
                deps.join(", ")
            );
        }
        out
    }

    /// The items of text `name`, one per line (for debugging tests).
    #[doc(hidden)]
    pub fn debug_dump(&self, name: &str) -> String {
        self.texts
            .find(name)
            .and_then(|i| self.texts.get(i))
            .map_or_else(String::new, |t| t.dump(&self.log))
    }

    /// Internal size figures (for benchmarks): (ops, op runs, changes, text
    /// items).
    #[doc(hidden)]
    pub fn debug_sizes(&self) -> (u32, usize, usize, usize) {
        let d = match self.lazy.as_deref().and_then(|l| l.full.get()) {
            Some(Ok(full)) => full,
            _ => self,
        };
        (
            d.log.next_seq(),
            d.log.ops().len(),
            d.log.changes().len(),
            d.texts.iter().map(TextState::item_count).sum(),
        )
    }
}
