//! Carrying out a [`Plan`]: the one place where remote ops enter the
//! history and the texts.

use std::ops::Range;

use crate::id::{IdSpan, Seq, NO_SEQ};
use crate::oplog::{Mark, OpKind, OpLog, OpRun, NO_CONTENT};
use crate::text::{char_len, utf16_len, Item, TextTable, ANCHOR_END, STICKS_LEFT};

use super::plan::{Plan, PlannedOp};
use super::update::{Update, UpdateKind};

/// Applies a plan made by [`super::plan`] for `update` on the same, unchanged
/// document. Returns the spans of the ops it added.
pub(crate) fn apply(
    log: &mut OpLog,
    texts: &mut TextTable,
    update: &Update,
    plan: Plan,
) -> Vec<IdSpan> {
    log.content.reserve(update.content.len());
    log.ops.reserve(plan.ops.len());
    for name in &plan.new_texts {
        texts.find_or_create(name);
    }
    let touched = plan.touched;
    let drop_focus = |texts: &mut TextTable| {
        for &t in &touched {
            if let Some(state) = texts.get_mut(t as usize) {
                state.drop_focus();
            }
        }
    };
    drop_focus(texts);
    let mut applied = Vec::with_capacity(plan.changes.len());
    for change in plan.changes {
        log.push_remote_change(change.peer, change.counter, change.len, change.deps);
        applied.push(IdSpan::new(
            change.peer,
            change.counter..change.counter + change.len,
        ));
        for op in plan.ops.get(change.ops).unwrap_or(&[]) {
            match op {
                PlannedOp::Insert {
                    id,
                    seq,
                    len,
                    text,
                    left,
                    right,
                    content,
                } => {
                    let (byte_start, bytes, utf16) =
                        match content.as_ref().and_then(|r| update.content.get(r.clone())) {
                            Some(s) => {
                                let start = log.content.len() as u32;
                                log.content.push_str(s);
                                debug_assert_eq!(char_len(s), *len);
                                (start, s.len() as u32, utf16_len(s))
                            }
                            None => (NO_CONTENT, 0, 0),
                        };
                    let item = Item {
                        seq: *seq,
                        len: *len,
                        origin_left: *left,
                        origin_right: *right,
                        byte_start,
                        bytes,
                        utf16,
                        deleted: byte_start == NO_CONTENT,
                        anchor: 0,
                    };
                    if let Some(state) = texts.get_mut(*text as usize) {
                        state.integrate(item, *id, log, &log.content);
                    }
                    log.push_op(OpRun {
                        seq: *seq,
                        len: *len,
                        text: *text,
                        kind: OpKind::Insert {
                            origin_left: *left,
                            origin_right: *right,
                            byte_start,
                            bytes,
                        },
                    });
                }
                PlannedOp::MarkStart {
                    id,
                    seq,
                    text,
                    left,
                    right,
                    run,
                } => {
                    let Some(UpdateKind::MarkStart {
                        key, value, expand, ..
                    }) = update.runs.get(*run).map(|r| &r.kind)
                    else {
                        continue;
                    };
                    let mark = log.marks.len() as u32;
                    let key = log.keys.intern(key);
                    log.marks.push(Mark {
                        key,
                        value: value.clone(),
                        expand: *expand,
                        lamport: log.lamport_of(*seq),
                        peer: id.peer,
                        start: *seq,
                        end: NO_SEQ,
                    });
                    let flags = if expand.anchor_sticks_left(false) {
                        STICKS_LEFT
                    } else {
                        0
                    };
                    let kind = OpKind::MarkStart {
                        origin_left: *left,
                        origin_right: *right,
                        mark,
                    };
                    add_anchor(log, texts, *seq, *text, (*left, *right), mark, flags);
                    log.push_op(OpRun {
                        seq: *seq,
                        len: 1,
                        text: *text,
                        kind,
                    });
                }
                PlannedOp::MarkEnd {
                    seq,
                    text,
                    left,
                    right,
                    start,
                } => {
                    let Some(OpKind::MarkStart { mark, .. }) =
                        log.ops.get(log.op_index(*start)).map(|r| r.kind)
                    else {
                        continue;
                    };
                    let Some(m) = log.marks.get_mut(mark as usize) else {
                        continue;
                    };
                    m.end = *seq;
                    let flags = if m.expand.anchor_sticks_left(true) {
                        ANCHOR_END | STICKS_LEFT
                    } else {
                        ANCHOR_END
                    };
                    add_anchor(log, texts, *seq, *text, (*left, *right), mark, flags);
                    log.push_op(OpRun {
                        seq: *seq,
                        len: 1,
                        text: *text,
                        kind: OpKind::MarkEnd {
                            origin_left: *left,
                            origin_right: *right,
                            mark,
                        },
                    });
                }
                PlannedOp::Delete {
                    seq,
                    text,
                    pieces,
                    reversed,
                } => {
                    let mut at = *seq;
                    let mut record = |log: &mut OpLog, piece: &Range<Seq>| {
                        let n = piece.end - piece.start;
                        log.push_op(OpRun {
                            seq: at,
                            len: n,
                            text: *text,
                            kind: OpKind::Delete {
                                target: if *reversed {
                                    piece.end - 1
                                } else {
                                    piece.start
                                },
                                reversed: *reversed,
                            },
                        });
                        at += n;
                    };
                    if *reversed {
                        pieces.iter().rev().for_each(|p| record(log, p));
                    } else {
                        pieces.iter().for_each(|p| record(log, p));
                    }
                    if let Some(state) = texts.get_mut(*text as usize) {
                        for piece in pieces {
                            state.remote_delete(piece.clone(), &log.content);
                        }
                    }
                }
            }
        }
    }
    drop_focus(texts);
    applied
}

/// Places a remote style anchor in its text and lists it there.
fn add_anchor(
    log: &OpLog,
    texts: &mut TextTable,
    seq: Seq,
    text: u32,
    (left, right): (Seq, Seq),
    mark: u32,
    flags: u8,
) {
    let mut item = Item::anchor(seq, mark, flags);
    item.origin_left = left;
    item.origin_right = right;
    if let Some(state) = texts.get_mut(text as usize) {
        let (leaf, at) = state.place_anchor(item, &log.content);
        state.register_anchor(leaf, at);
    }
}
