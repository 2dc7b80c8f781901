//! Helpers shared by the criterion benches: replaying traces into Weft.

use traces::Trace;
use weft::{Doc, ExportMode, VersionVector};

/// The traces every bench runs on.
pub const TRACES: &[&str] = &["automerge-paper", "seph-blog1", "rustcode"];

/// Applies every patch of a sequential trace to text `"text"` of a new
/// document, one call per patch.
///
/// # Panics
///
/// If Weft rejects a patch of a valid trace (a bug).
pub fn replay(trace: &Trace) -> Doc {
    let mut doc = Doc::new();
    let mut text = doc.text("text");
    for p in trace.patches() {
        if p.del > 0 {
            text.delete(p.pos, p.del).expect("delete in bounds");
        }
        if !p.ins.is_empty() {
            text.insert(p.pos, &p.ins).expect("insert in bounds");
        }
    }
    doc
}

/// The whole history of `doc` as one update.
///
/// # Panics
///
/// Never for updates (the `Result` covers other export modes).
pub fn full_update(doc: &mut Doc) -> Vec<u8> {
    doc.export(ExportMode::Updates {
        from: &VersionVector::new(),
    })
    .expect("updates export cannot fail")
}
