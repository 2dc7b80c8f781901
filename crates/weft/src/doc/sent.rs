//! What exports have sent of the open local change.
//!
//! An export includes the open change (see [`Doc::export`]), and a peer
//! that receives those ops never asks for them again. A commit message or
//! timestamp given afterwards ([`Doc::commit_with`]) would then stay on
//! this replica alone, and replicas' histories would differ for good
//! depending on when they synced. So a commit's info covers only the ops
//! of the change that no export has included yet; the ones sent before
//! keep none, on every replica (as if the export had closed the change,
//! as Loro's export does).

use std::sync::atomic::{AtomicU32, Ordering};

use crate::id::{Counter, IdSpan};

use super::{Doc, ExportMode};

/// The end (exclusive counter) of this document's peer's ops that an
/// export included, for the peer it has now (reset when that changes).
/// Atomic because exports take `&Doc`.
#[derive(Debug, Default)]
pub(super) struct Sent(AtomicU32);

impl Clone for Sent {
    fn clone(&self) -> Self {
        Sent(AtomicU32::new(self.get()))
    }
}

impl Sent {
    /// The end of the local ops exports included.
    pub(super) fn get(&self) -> Counter {
        self.0.load(Ordering::Relaxed)
    }

    /// Forgets what was sent (the document's peer changed).
    pub(super) fn reset(&mut self) {
        *self.0.get_mut() = 0;
    }

    /// Records that an export included this peer's ops up to `end`.
    fn raise(&self, end: Counter) {
        self.0.fetch_max(end, Ordering::Relaxed);
    }
}

impl Doc {
    /// Records which ops of the open change the export `mode` included;
    /// `doc` is this document, loaded (what the export read).
    pub(super) fn note_sent(&self, doc: &Doc, mode: &ExportMode<'_>) {
        let log = &doc.log;
        if !log.is_open() {
            return;
        }
        let peer = self.peer;
        let start = log.committed_version().get(peer);
        let end = log.version().get(peer);
        let upto = match mode {
            ExportMode::Updates { from } => {
                if from.get(peer) < end {
                    end
                } else {
                    0
                }
            }
            ExportMode::UpdatesInRange(spans) => spans
                .iter()
                .filter(|s: &&IdSpan| s.peer == peer)
                .map(|s| s.counters.end.min(end))
                .max()
                .unwrap_or(0),
            // A snapshot of an old version holds the ops up to it.
            ExportMode::SnapshotAt(frontiers) => log
                .frontiers_to_vv(frontiers)
                .map_or(end, |v| v.get(peer).min(end)),
            ExportMode::Snapshot | ExportMode::ShallowSnapshot(_) => end,
        };
        if upto > start {
            self.sent.raise(upto);
        }
    }
}
