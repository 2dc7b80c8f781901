//! Doc-hidden checks and dumps for tests and fuzzing.

use crate::error::Result;
use crate::id::IdSpan;
use crate::text::TextState;
use crate::version::VersionVector;
use crate::ExportMode;

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

    /// Checks that every export of the latest document imports into a
    /// fresh document that shows the same state: every text's delta, every
    /// map, the version and (through a snapshot, which carries it) the
    /// pending set. Panics otherwise. Exports from a copy, since an export
    /// notes what it sent. Tests and fuzzing call it after every import,
    /// successful or not: a document must always be able to reopen its own
    /// exports.
    #[doc(hidden)]
    pub fn assert_exports_reopen(&self) {
        let doc = self.latest().clone();
        let state = |d: &Doc, pending: bool| {
            let mut texts: Vec<_> = d
                .text_names()
                .map(|n| (n.to_owned(), d.get_text(n).map(|t| t.to_delta())))
                .collect();
            let mut maps: Vec<_> = d
                .map_names()
                .map(|n| {
                    let entries: Vec<(String, crate::Value)> = d
                        .get_map(n)
                        .map(|m| m.iter().map(|(k, v)| (k.to_owned(), v.clone())).collect())
                        .unwrap_or_default();
                    (n.to_owned(), entries)
                })
                .collect();
            let pending = if pending {
                d.pending_spans()
            } else {
                Vec::new()
            };
            // Names in any order (an update lists them as its ops use
            // them), and an empty container is no content (an update names
            // only containers its ops touch).
            texts.retain(|t| t.1.as_ref().is_some_and(|d| !d.is_empty()));
            maps.retain(|m| !m.1.is_empty());
            texts.sort_by(|a, b| a.0.cmp(&b.0));
            maps.sort_by(|a, b| a.0.cmp(&b.0));
            (texts, maps, d.version(), pending)
        };
        let bytes = doc.export(ExportMode::Snapshot);
        check_reopens(&doc, bytes, "a snapshot", |d| state(d, true));
        // A shallow document has no full history to send.
        if doc.shallow_since().is_none() {
            let from = VersionVector::new();
            let bytes = doc.export(ExportMode::Updates { from: &from });
            check_reopens(&doc, bytes, "a full update", |d| state(d, false));
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

/// Imports `bytes`, an export of `doc`, into a fresh document and checks
/// that it reads as `doc` does through `state`.
fn check_reopens<S: PartialEq + std::fmt::Debug>(
    doc: &Doc,
    bytes: Result<Vec<u8>>,
    what: &str,
    state: impl Fn(&Doc) -> S,
) {
    let bytes = bytes.unwrap_or_else(|e| panic!("{what} of the document does not export: {e}"));
    let mut fresh = Doc::new();
    fresh.config_text_style(doc.text_style_config().clone());
    if let Err(e) = fresh.import(&bytes) {
        panic!("{what} of the document does not import: {e}");
    }
    assert_eq!(
        state(&fresh),
        state(doc),
        "{what} of the document reads differently"
    );
}
