//! Helpers shared by the criterion benches: replaying traces into Weft.

use traces::Trace;
use weft::{Delta, Doc, ExportMode, VersionVector};

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

/// Applies the trace `times` times to text `"text"` of a new document,
/// each copy appended at the end of the text (as `replay --times N`).
///
/// # Panics
///
/// If Weft rejects a patch of a valid trace (a bug).
pub fn replay_times(trace: &Trace, times: usize) -> Doc {
    let mut doc = Doc::new();
    let mut text = doc.text("text");
    for _ in 0..times {
        let offset = text.len();
        for p in trace.patches() {
            if p.del > 0 {
                text.delete(offset + p.pos, p.del)
                    .expect("delete in bounds");
            }
            if !p.ins.is_empty() {
                text.insert(offset + p.pos, &p.ins)
                    .expect("insert in bounds");
            }
        }
    }
    doc
}

/// Applies a Quill change delta counted in chars (an event's
/// [`weft::TextDiff::delta`]) to a rope mirror of the text, in
/// O(|delta| log n).
///
/// # Panics
///
/// If the delta reaches past the end of the rope (the mirror is not the
/// text the event was computed against).
pub fn apply_to_rope(rope: &mut jumprope::JumpRope, delta: &[Delta]) {
    let mut pos = 0;
    for d in delta {
        match d {
            Delta::Retain { retain, .. } => pos += retain,
            Delta::Insert { insert, .. } => {
                assert!(pos <= rope.len_chars(), "insert past the mirror's end");
                rope.insert(pos, insert);
                pos += insert.chars().count();
            }
            Delta::Delete { delete } => {
                assert!(
                    pos + delete <= rope.len_chars(),
                    "delete past the mirror's end"
                );
                rope.remove(pos..pos + delete);
            }
            // An embed is U+FFFC in the text.
            _ => {
                rope.insert(pos, "\u{FFFC}");
                pos += 1;
            }
        }
    }
}

/// Patches between two marks in [`replay_rich`].
pub const MARK_EVERY: usize = 1000;

/// Types every patch of `trace` into text `"text"` of `doc`, with a
/// commit after each (as an editor commits per keystroke).
pub fn type_committing(doc: &mut Doc, trace: &Trace) {
    for p in trace.patches() {
        let mut text = doc.text("text");
        if p.del > 0 {
            text.delete(p.pos, p.del).expect("delete in bounds");
        }
        if !p.ins.is_empty() {
            text.insert(p.pos, &p.ins).expect("insert in bounds");
        }
        doc.commit();
    }
}

/// As [`replay`], plus one bold mark over a pseudo-random tenth of the
/// text every [`MARK_EVERY`] patches (the same marks every time).
///
/// # Panics
///
/// If Weft rejects a patch or mark of a valid trace (a bug).
pub fn replay_rich(trace: &Trace) -> Doc {
    let mut doc = Doc::new();
    let mut text = doc.text("text");
    let mut rng = 0x2545_f491_4f6c_dd1d_u64;
    for (i, p) in trace.patches().enumerate() {
        if p.del > 0 {
            text.delete(p.pos, p.del).expect("delete in bounds");
        }
        if !p.ins.is_empty() {
            text.insert(p.pos, &p.ins).expect("insert in bounds");
        }
        if i % MARK_EVERY == MARK_EVERY - 1 {
            let len = text.len();
            let span = len / 10;
            if span > 0 {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let start = (rng % (len - span + 1) as u64) as usize;
                text.mark(start..start + span, "bold", true)
                    .expect("mark in bounds");
            }
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
