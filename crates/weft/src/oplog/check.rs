//! The rules every op must meet, whichever way it enters the history:
//! an update (`merge::plan`), a snapshot's history (`encoding::load`) or
//! a shallow snapshot's root (`encoding::root`). Each of those reads ids
//! in its own form and resolves them to seqs its own way, then asks the
//! functions here whether the op may be taken; no other copy of a rule
//! exists. (Commit infos have their rule beside their table:
//! [`OpLog::add_imported_commit_info`].)
//!
//! The rules:
//! - an **origin** (a char an insert or an anchor was typed beside) is
//!   none, or a char of the same text made before the op ([`origin`]);
//! - **delete targets** are chars of the same text made before the
//!   delete ([`targets`]);
//! - a mark's anchor is **glued** to the char on the side its expand rule
//!   sticks to, and names nothing on the other side ([`glue`]);
//! - a **mark end** names the start anchor of a mark of the same text,
//!   made before it, that has no end yet ([`mark_end`]);
//! - a **cancel** names ops of its own peer made before it, each a delete,
//!   a mark's start or a cancel, of the text the cancel is in
//!   ([`cancel_targets`]).
//!
//! A char here is an insert op: marks' anchors and map ops are not chars.

use std::ops::Range;

use crate::id::{Seq, TextIdx, NO_SEQ};
use crate::style::ExpandType;

use super::{OpKind, OpLog, OpRun};

/// What the rules need to know of the ops made before the one checked.
/// The log answers for the ops it holds; the update importer also for
/// the ops it planned earlier in the same update.
pub(crate) trait Earlier {
    /// Whether the ops `seqs` (a non-empty range) are all inserts into
    /// `text`.
    fn inserts_into(&self, seqs: Range<Seq>, text: TextIdx) -> bool;

    /// Whether op `seq` is an insert into `text`.
    #[inline(always)]
    fn insert_into(&self, seq: Seq, text: TextIdx) -> bool {
        self.inserts_into(seq..seq + 1, text)
    }

    /// Whether the ops `seqs` (a non-empty range) are all ops of `text`
    /// a cancel may name: deletes, mark starts and cancels.
    fn cancellable(&self, seqs: Range<Seq>, text: TextIdx) -> bool;
}

/// Whether an op of kind `kind` may be cancelled.
#[inline]
pub(crate) fn cancellable(kind: &OpKind) -> bool {
    matches!(
        kind,
        OpKind::Delete { .. } | OpKind::MarkStart { .. } | OpKind::Cancel { .. }
    )
}

/// Whether the ops `seqs`, made by `target_peer`, may be cancelled by
/// cancel op `op` of `text`, made by `peer`: ops of the same peer and
/// text, made before it, each a delete, a mark start or a cancel.
#[inline]
pub(crate) fn cancel_targets<P: PartialEq>(
    earlier: &impl Earlier,
    seqs: Range<Seq>,
    (text, op): (TextIdx, Seq),
    (target_peer, peer): (P, P),
) -> bool {
    target_peer == peer
        && seqs.start < seqs.end
        && seqs.end <= op
        && earlier.cancellable(seqs, text)
}

/// Ops as [`Earlier`] sees them: a slice of runs in seq order (the ops an
/// update planned so far).
pub(crate) struct Runs<'a>(pub &'a [OpRun]);

impl Runs<'_> {
    /// Whether the runs cover `seqs` with runs of `text` that `ok` takes.
    fn all(&self, seqs: Range<Seq>, text: TextIdx, ok: impl Fn(&OpKind) -> bool) -> bool {
        let mut i = self.0.partition_point(|r| r.end() <= seqs.start);
        let mut at = seqs.start;
        while at < seqs.end {
            match self.0.get(i) {
                Some(run) if run.seq <= at && run.text == text && ok(&run.kind) => {
                    at = run.end();
                    i += 1;
                }
                _ => return false,
            }
        }
        true
    }
}

impl Earlier for Runs<'_> {
    fn inserts_into(&self, seqs: Range<Seq>, text: TextIdx) -> bool {
        self.all(seqs, text, |k| matches!(k, OpKind::Insert { .. }))
    }

    fn cancellable(&self, seqs: Range<Seq>, text: TextIdx) -> bool {
        self.all(seqs, text, cancellable)
    }
}

/// Whether `origin` may be the origin of op `op` of `text`: none
/// ([`NO_SEQ`]), or a char of `text` made before `op`.
#[inline(always)]
pub(crate) fn origin(earlier: &impl Earlier, origin: Seq, text: TextIdx, op: Seq) -> bool {
    origin == NO_SEQ || (origin < op && earlier.insert_into(origin, text))
}

/// Whether the chars `seqs` may be deleted by delete op `op` of `text`:
/// chars of `text` made before `op` (a non-empty range).
#[inline]
pub(crate) fn targets(earlier: &impl Earlier, seqs: Range<Seq>, text: TextIdx, op: Seq) -> bool {
    seqs.start < seqs.end && seqs.end <= op && earlier.inserts_into(seqs, text)
}

/// Checks that a mark's start (`end` false) or end anchor under rule
/// `expand`, naming the origins `left` and `right` (`None`: none named),
/// is glued as the rule says: to the char before it when it sticks left
/// (see [`ExpandType::anchor_sticks_left`]), else to the char after it,
/// with nothing named on the other side. (The glued side may name none:
/// the start or the end of the text.) Else returns what the other side
/// names.
#[inline]
pub(crate) fn glue<T>(
    expand: ExpandType,
    end: bool,
    left: Option<T>,
    right: Option<T>,
) -> Result<(), T> {
    let other = if expand.anchor_sticks_left(end) {
        right
    } else {
        left
    };
    other.map_or(Ok(()), Err)
}

/// An origin seq as named: `None` for [`NO_SEQ`] (what [`glue`] takes).
#[inline]
pub(crate) fn named(origin: Seq) -> Option<Seq> {
    (origin != NO_SEQ).then_some(origin)
}

/// Whether a mark's start anchor at `start`, of `start_text` and still
/// without an end (`open`), may be ended by op `op` of `text`.
#[inline]
pub(crate) fn mark_end(
    start: Seq,
    start_text: TextIdx,
    open: bool,
    text: TextIdx,
    op: Seq,
) -> bool {
    open && start < op && start_text == text
}

impl Earlier for OpLog {
    /// Walks the runs holding `seqs`, starting with the last few runs
    /// (most references are to what was just made).
    #[inline]
    fn inserts_into(&self, seqs: Range<Seq>, text: TextIdx) -> bool {
        let mut i = self.op_index_recent(seqs.start);
        let mut at = seqs.start;
        while at < seqs.end {
            match self.ops().get(i) {
                Some(run)
                    if run.seq <= at
                        && run.text == text
                        && matches!(run.kind, OpKind::Insert { .. }) =>
                {
                    at = run.end();
                    i += 1;
                }
                _ => return false,
            }
        }
        true
    }

    #[inline]
    fn insert_into(&self, seq: Seq, text: TextIdx) -> bool {
        // The run found holds `seq` (or there is none).
        self.ops()
            .get(self.op_index_recent(seq))
            .is_some_and(|r| r.text == text && matches!(r.kind, OpKind::Insert { .. }))
    }

    fn cancellable(&self, seqs: Range<Seq>, text: TextIdx) -> bool {
        let mut i = self.op_index(seqs.start);
        let mut at = seqs.start;
        while at < seqs.end {
            match self.ops().get(i) {
                Some(run) if run.seq <= at && run.text == text && cancellable(&run.kind) => {
                    at = run.end();
                    i += 1;
                }
                _ => return false,
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log of runs: inserts 0..5 into text 0, a delete 5..7, inserts
    /// 7..9 into text 1 (pushed as they are, as the loader does).
    fn log() -> OpLog {
        let mut log = OpLog::default();
        let insert = |seq, len, text| OpRun {
            seq,
            len,
            text: TextIdx::new(text),
            kind: OpKind::Insert {
                origin_left: NO_SEQ,
                origin_right: NO_SEQ,
                byte_start: crate::oplog::NO_CONTENT,
                bytes: 0,
            },
        };
        log.push_op_unmerged(insert(0, 5, 0));
        log.push_op_unmerged(OpRun {
            seq: 5,
            len: 2,
            text: TextIdx::new(0),
            kind: OpKind::Delete {
                target: 0,
                reversed: false,
            },
        });
        log.push_op_unmerged(insert(7, 2, 1));
        log
    }

    #[test]
    fn origins_are_earlier_chars_of_the_same_text() {
        let log = log();
        let (t0, t1) = (TextIdx::new(0), TextIdx::new(1));
        assert!(origin(&log, NO_SEQ, t0, 9));
        assert!(origin(&log, 4, t0, 9));
        assert!(origin(&log, 8, t1, 9));
        // Another text, a delete, the op itself, a later op, past the log.
        assert!(!origin(&log, 4, t1, 9));
        assert!(!origin(&log, 5, t0, 9));
        assert!(!origin(&log, 8, t1, 8));
        assert!(!origin(&log, 8, t1, 7));
        assert!(!origin(&log, 9, t1, 20));
        assert!(!origin(&log, 100, t1, 200));
    }

    #[test]
    fn targets_are_earlier_chars_of_the_same_text() {
        let log = log();
        let (t0, t1) = (TextIdx::new(0), TextIdx::new(1));
        assert!(targets(&log, 0..5, t0, 9));
        assert!(targets(&log, 7..9, t1, 9));
        // Empty, across a delete, into another text, not before the op,
        // past the log.
        assert!(!targets(&log, 3..3, t0, 9));
        assert!(!targets(&log, 3..6, t0, 9));
        assert!(!targets(&log, 0..5, t1, 9));
        assert!(!targets(&log, 7..9, t1, 8));
        assert!(!targets(&log, 8..12, t1, 20));
        assert!(!targets(&log, 9..10, t1, 20));
    }

    #[test]
    fn anchors_are_glued_on_their_rules_side() {
        // A start sticks left when its mark expands before.
        assert_eq!(glue(ExpandType::Before, false, Some(1), None), Ok(()));
        assert_eq!(glue::<u32>(ExpandType::Before, false, None, None), Ok(()));
        assert_eq!(glue(ExpandType::Before, false, None, Some(2)), Err(2));
        assert_eq!(glue(ExpandType::After, false, None, Some(2)), Ok(()));
        assert_eq!(glue(ExpandType::After, false, Some(1), None), Err(1));
        // An end sticks left when its mark does not expand after.
        assert_eq!(glue(ExpandType::Before, true, Some(1), None), Ok(()));
        assert_eq!(glue(ExpandType::Before, true, Some(1), Some(2)), Err(2));
        assert_eq!(glue(ExpandType::Both, true, None, Some(2)), Ok(()));
        assert_eq!(glue(ExpandType::Both, true, Some(1), None), Err(1));
        assert_eq!(named(NO_SEQ), None);
        assert_eq!(named(3), Some(3));
    }

    #[test]
    fn mark_ends_name_an_open_earlier_start_of_the_same_text() {
        let (t0, t1) = (TextIdx::new(0), TextIdx::new(1));
        assert!(mark_end(3, t0, true, t0, 4));
        assert!(!mark_end(3, t0, false, t0, 4));
        assert!(!mark_end(3, t0, true, t1, 4));
        assert!(!mark_end(4, t0, true, t0, 4));
    }
}
