//! [`OpRun`]: a run of consecutive ops of one kind, the unit the log stores.

use crate::id::{MapSetIdx, MarkIdx, Seq, TextIdx, NO_SEQ};

/// Marks an insert whose text this document never received (the exporter
/// left it out because the same update also deleted it).
pub(crate) const NO_CONTENT: u32 = u32::MAX;

/// What a run of ops does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpKind {
    /// Inserts `len` chars. The first char goes between `origin_left` and
    /// `origin_right` (the ops it was typed between; [`NO_SEQ`] for the start
    /// or end of the text); each later char has the previous one as its left
    /// origin and shares `origin_right`.
    Insert {
        origin_left: Seq,
        origin_right: Seq,
        /// Byte offset of the run's UTF-8 text in [`super::OpLog::content`],
        /// or [`NO_CONTENT`].
        byte_start: u32,
        /// Byte length of that text (0 without content).
        bytes: u32,
    },
    /// Deletes `len` chars. Op `i` of the run deletes the char inserted by
    /// op `target + i` (or `target - i` when `reversed`: backspacing).
    Delete { target: Seq, reversed: bool },
    /// Inserts the start anchor of mark `mark` (an index into
    /// [`super::OpLog::marks`], which holds its key, value and expand
    /// rule) between `origin_left` and `origin_right`. Always one op.
    MarkStart {
        origin_left: Seq,
        origin_right: Seq,
        mark: MarkIdx,
    },
    /// Inserts the end anchor of mark `mark`. Always one op, after the
    /// mark's start in the history.
    MarkEnd {
        origin_left: Seq,
        origin_right: Seq,
        mark: MarkIdx,
    },
    /// Sets (or deletes) a key of a map: [`super::OpLog::map_sets`]
    /// `[set]` says which. Always one op; the run's `text` is unused.
    MapSet { set: MapSetIdx },
    /// Cancels `len` earlier ops of the same peer: op `i` of the run
    /// cancels op `target + i` (all of them before the run's first op), a delete (its char shows again unless
    /// another delete that is not cancelled covers it), a mark's start op
    /// (the mark styles nothing) or a cancel (which then cancels nothing,
    /// so what it cancelled takes effect again, unless another cancel of
    /// it holds). An op is *cancelled* while some cancel of it is not
    /// cancelled itself (see [`super::cancel`]). The run's `text` is its
    /// targets' text. What undo and redo are made of.
    Cancel { target: Seq },
}

/// The fields of a mark op (see [`OpKind::anchor`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AnchorOp {
    pub origin_left: Seq,
    pub origin_right: Seq,
    pub mark: MarkIdx,
    /// The end anchor (else the start).
    pub end: bool,
}

impl OpKind {
    /// The anchor a mark op inserts; `None` for inserts and deletes.
    #[inline]
    pub fn anchor(&self) -> Option<AnchorOp> {
        match *self {
            OpKind::MarkStart {
                origin_left,
                origin_right,
                mark,
            } => Some(AnchorOp {
                origin_left,
                origin_right,
                mark,
                end: false,
            }),
            OpKind::MarkEnd {
                origin_left,
                origin_right,
                mark,
            } => Some(AnchorOp {
                origin_left,
                origin_right,
                mark,
                end: true,
            }),
            _ => None,
        }
    }
}

/// Consecutive ops (seqs `seq..seq + len`) of one kind in one text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OpRun {
    pub seq: Seq,
    pub len: u32,
    /// The text the ops edit, in the document's text table.
    pub text: TextIdx,
    pub kind: OpKind,
}

impl OpRun {
    /// One past the last seq of the run.
    pub fn end(&self) -> Seq {
        self.seq + self.len
    }

    /// The inserted text, if this run inserts and its content is known.
    pub fn content<'a>(&self, arena: &'a str) -> Option<&'a str> {
        match self.kind {
            OpKind::Insert {
                byte_start, bytes, ..
            } if byte_start != NO_CONTENT => {
                arena.get(byte_start as usize..(byte_start + bytes) as usize)
            }
            _ => None,
        }
    }

    /// Tries to append `next` (which must start at `self.end()`) to this run.
    /// Returns false when the two runs cannot be one run.
    #[inline]
    pub fn try_append(&mut self, next: &OpRun) -> bool {
        if next.seq != self.end() || next.text != self.text {
            return false;
        }
        match (&mut self.kind, next.kind) {
            (
                OpKind::Insert {
                    origin_right,
                    byte_start,
                    bytes,
                    ..
                },
                OpKind::Insert {
                    origin_left: next_left,
                    origin_right: next_right,
                    byte_start: next_start,
                    bytes: next_bytes,
                },
            ) => {
                let contiguous = if *byte_start == NO_CONTENT {
                    next_start == NO_CONTENT
                } else {
                    next_start != NO_CONTENT && *byte_start + *bytes == next_start
                };
                if next_left == self.seq + self.len - 1 && next_right == *origin_right && contiguous
                {
                    *bytes += next_bytes;
                    self.len += next.len;
                    true
                } else {
                    false
                }
            }
            (
                OpKind::Delete { target, reversed },
                OpKind::Delete {
                    target: next_target,
                    reversed: next_reversed,
                },
            ) => {
                // `next` must run the same way (or be one op): a backward
                // run appended as a forward one would name the wrong chars.
                let forward_ok = (!*reversed || self.len == 1)
                    && (!next_reversed || next.len == 1)
                    && target.checked_add(self.len) == Some(next_target);
                let backward_ok = (*reversed || self.len == 1)
                    && next.len == 1
                    && target.checked_sub(self.len) == Some(next_target);
                if forward_ok {
                    *reversed = false;
                } else if backward_ok {
                    *reversed = true;
                } else {
                    return false;
                }
                self.len += next.len;
                true
            }
            (
                OpKind::Cancel { target },
                OpKind::Cancel {
                    target: next_target,
                },
            ) => {
                // Every target of a run comes before the run (a redo's
                // targets, the undo's ops, may follow it right away: they
                // stay runs of their own).
                let before_run = next_target
                    .checked_add(next.len)
                    .is_some_and(|end| end <= self.seq);
                if target.checked_add(self.len) != Some(next_target) || !before_run {
                    return false;
                }
                self.len += next.len;
                true
            }
            _ => false,
        }
    }

    /// For a cancel run, the ops that ops `offset..offset + len` cancel.
    pub fn cancel_targets(&self, offset: u32, len: u32) -> Option<std::ops::Range<Seq>> {
        match self.kind {
            OpKind::Cancel { target } => Some(target + offset..target + offset + len),
            _ => None,
        }
    }

    /// For a delete run, the targets of ops `offset..offset + len` as an
    /// ascending range of seqs.
    pub fn delete_targets(&self, offset: u32, len: u32) -> Option<std::ops::Range<Seq>> {
        match self.kind {
            OpKind::Delete { target, reversed } => Some(if reversed {
                let hi = target - offset;
                hi + 1 - len..hi + 1
            } else {
                target + offset..target + offset + len
            }),
            _ => None,
        }
    }
}

/// The origins of char `offset` of an insert run (or of an anchor).
pub(crate) fn origins_at(run: &OpRun, offset: u32) -> (Seq, Seq) {
    match run.kind {
        OpKind::MarkStart {
            origin_left,
            origin_right,
            ..
        }
        | OpKind::MarkEnd {
            origin_left,
            origin_right,
            ..
        } => (origin_left, origin_right),
        OpKind::Insert {
            origin_left,
            origin_right,
            ..
        } => {
            let left = if offset == 0 {
                origin_left
            } else {
                run.seq + offset - 1
            };
            (left, origin_right)
        }
        OpKind::Delete { .. } | OpKind::MapSet { .. } | OpKind::Cancel { .. } => (NO_SEQ, NO_SEQ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn del(seq: Seq, target: Seq) -> OpRun {
        OpRun {
            seq,
            len: 1,
            text: TextIdx::default(),
            kind: OpKind::Delete {
                target,
                reversed: false,
            },
        }
    }

    #[test]
    fn backspaces_form_one_reversed_run() {
        let mut run = del(10, 5);
        assert!(run.try_append(&del(11, 4)));
        assert!(run.try_append(&del(12, 3)));
        assert!(!run.try_append(&del(13, 3)));
        assert_eq!(run.len, 3);
        assert_eq!(run.delete_targets(0, 3), Some(3..6));
        assert_eq!(run.delete_targets(1, 1), Some(4..5));
    }

    /// Found by the `converge` fuzzer: a backward run of two deletes (a
    /// remote peer's backspaces) arriving right after a forward run whose
    /// targets it continues was appended as if it ran forward, so the log
    /// (and every export) named the wrong chars.
    #[test]
    fn regression_a_backward_run_does_not_join_a_forward_one() {
        let mut run = del(10, 0);
        assert!(run.try_append(&del(11, 1)));
        assert!(run.try_append(&del(12, 2)));
        let backward = OpRun {
            seq: 13,
            len: 2,
            text: TextIdx::default(),
            kind: OpKind::Delete {
                target: 3,
                reversed: true,
            },
        };
        assert!(!run.try_append(&backward));
        assert_eq!(run.delete_targets(0, 3), Some(0..3));
    }

    #[test]
    fn forward_deletes_form_one_run() {
        let mut run = del(10, 5);
        assert!(run.try_append(&del(11, 6)));
        assert!(!run.try_append(&del(12, 5)));
        assert_eq!(run.delete_targets(0, 2), Some(5..7));
    }

    #[test]
    fn typing_forms_one_insert_run() {
        let ins = |seq, left, start| OpRun {
            seq,
            len: 1,
            text: TextIdx::default(),
            kind: OpKind::Insert {
                origin_left: left,
                origin_right: NO_SEQ,
                byte_start: start,
                bytes: 1,
            },
        };
        let mut run = ins(0, NO_SEQ, 0);
        assert!(run.try_append(&ins(1, 0, 1)));
        assert!(
            !run.try_append(&ins(2, 0, 2)),
            "left origin must be the previous char"
        );
        assert_eq!(origins_at(&run, 1), (0, NO_SEQ));
    }
}
