//! Carrying out a [`Plan`]: the one place where remote ops enter the
//! history and the texts, one function per kind of op.
//!
//! Everything an op refers to was checked by [`super::plan()`]; should one
//! of those guarantees not hold here, that is a bug of ours: it is
//! reported as [`Error::Internal`] (and asserted in debug builds), never
//! skipped, since a skipped op is one replica quietly holding other data
//! than the rest.

use std::collections::BTreeMap;
use std::ops::Range;

use crate::error::{Error, Result};
use crate::id::{Counter, IdSpan, OpId, PeerId, Seq, TextIdx};
use crate::oplog::{AddedChange, Object, OpKind, OpLog, OpRun, EMBED_CHAR, NO_CONTENT};
use crate::style::ExpandType;
use crate::text::{Item, TextTable};
use crate::unit::{char_len, utf16_len};

use crate::event::Draft;
use crate::map::MapTable;

use super::deltas;
use super::fast_forward::Linear;
use super::plan::{Plan, PlannedOp};
use super::update::Update;

/// A guarantee of the plan that does not hold.
pub(super) fn broken(what: &'static str) -> Error {
    debug_assert!(false, "plan guarantee broken: {what}");
    Error::Internal { what }
}

/// Applies a plan made by [`super::plan()`] for `update` on the same,
/// unchanged document. Returns the spans of the ops it added. With a
/// `draft`, adds to it the change of every text it touched.
///
/// # Errors
///
/// [`Error::Internal`] only if the plan's guarantees do not hold (a bug).
pub(crate) fn apply(
    log: &mut OpLog,
    texts: &mut TextTable,
    maps: &mut MapTable,
    update: &Update,
    plan: Plan,
    draft: Option<&mut Draft>,
) -> Result<Vec<IdSpan>> {
    log.reserve(plan.ops.len(), update.content.len());
    // Commit infos are checked against the ops they arrive with (see
    // `OpLog::add_imported_commit_info`): what each peer held before, and
    // the changes added.
    let held_before: Vec<Counter> = update
        .commits
        .iter()
        .map(|i| log.known_end(i.peer))
        .collect();
    let mut added = Vec::new();
    let watch = draft.is_some().then(|| deltas::watch(log, texts, &plan));
    for name in &plan.new_texts {
        texts.find_or_create(name);
    }
    let touched = plan.touched;
    let drop_focus = |texts: &mut TextTable| {
        for &t in &touched {
            if let Some(state) = texts.get_mut(t) {
                state.drop_focus();
            }
        }
    };
    drop_focus(texts);
    // Marks take the general path.
    let (mut inserts, mut marks) = (0, 0);
    for op in &plan.ops {
        match op {
            PlannedOp::Insert { .. } => inserts += 1,
            // Map ops too: the fast path takes inserts and deletes only.
            PlannedOp::MarkStart { .. } | PlannedOp::MarkEnd { .. } | PlannedOp::MapSet { .. } => {
                marks += 1
            }
            PlannedOp::Delete { .. } => {}
        }
    }
    let mut linear = if marks == 0 {
        let start = log.next_seq();
        let len: u32 = plan.changes.iter().map(|c| c.len).sum();
        let seqs = start..start.saturating_add(len);
        Linear::new(texts, &touched, (plan.ops.len(), inserts), seqs)
    } else {
        None
    };
    // One pass over the content instead of one per insert.
    let ascii = update.content.is_ascii();
    let mut applied = Vec::with_capacity(plan.changes.len());
    // What map ops changed, for the draft.
    let mut map_changes = Vec::new();
    // The update's embeds and block markers, registered as their inserts
    // arrive (integration orders a block marker after concurrent text).
    let objects: BTreeMap<(PeerId, Counter), &Object> = update
        .embeds
        .iter()
        .map(|(id, o)| ((id.peer, id.counter), o))
        .collect();
    for change in plan.changes {
        // The change's ops get seqs from here (as the plan numbered them).
        let first_seq = log.next_seq();
        if !update.commits.is_empty() {
            let previous = change
                .counter
                .checked_sub(1)
                .and_then(|c| log.id_to_seq(OpId::new(change.peer, c)));
            added.push(AddedChange {
                peer: change.peer,
                counter: change.counter,
                len: change.len,
                continues: previous.is_some_and(|p| change.deps.iter().all(|&d| d == p)),
            });
        }
        log.push_remote_change(change.peer, change.counter, change.len, change.deps);
        applied.push(IdSpan::new(
            change.peer,
            change.counter..change.counter + change.len,
        ));
        let ops = plan
            .ops
            .get(change.ops)
            .ok_or_else(|| broken("planned ops"))?;
        for op in ops {
            match op {
                PlannedOp::Insert {
                    seq,
                    len,
                    text,
                    left,
                    right,
                    content,
                } => {
                    let content = match content {
                        Some(r) => Some(
                            update
                                .content
                                .get(r.start as usize..r.end as usize)
                                .ok_or_else(|| broken("content"))?,
                        ),
                        None => None,
                    };
                    let id = OpId::new(change.peer, change.counter + (seq - first_seq));
                    if let (false, Some(content)) = (objects.is_empty(), content) {
                        let ids = (id.peer, id.counter)..(id.peer, id.counter.saturating_add(*len));
                        // One pass over the run's chars (objects come in
                        // counter order).
                        let mut chars = content.chars();
                        let mut at = 0u32;
                        for (&(_, counter), &object) in objects.range(ids) {
                            let k = counter - id.counter;
                            let c = chars.nth((k - at) as usize);
                            at = k + 1;
                            // Only an insert of one U+FFFC char is an object.
                            if c == Some(EMBED_CHAR) {
                                log.set_object(seq + k, object.clone());
                            }
                        }
                    }
                    let item = new_item(log, *seq, *len, (*left, *right), content, ascii);
                    insert(log, texts, &mut linear, id, *text, item)?;
                }
                PlannedOp::MarkStart {
                    seq,
                    text,
                    left,
                    right,
                    mark,
                    expand,
                } => {
                    let set = update
                        .marks
                        .get(*mark as usize)
                        .ok_or_else(|| broken("mark set"))?;
                    let mark = log.start_mark(&set.key, set.value.clone(), *expand, *seq);
                    let kind = OpKind::MarkStart {
                        origin_left: *left,
                        origin_right: *right,
                        mark,
                    };
                    anchor(log, texts, *seq, *text, kind, *expand)?;
                }
                PlannedOp::MarkEnd {
                    seq,
                    text,
                    left,
                    right,
                    start,
                } => mark_end(log, texts, *seq, *text, (*left, *right), *start)?,
                PlannedOp::Delete {
                    seq,
                    text,
                    pieces,
                    reversed,
                } => {
                    let pieces = plan
                        .pieces
                        .get(pieces.start as usize..pieces.end as usize)
                        .ok_or_else(|| broken("delete pieces"))?;
                    delete(log, texts, &mut linear, *seq, *text, pieces, *reversed)?;
                }
                PlannedOp::MapSet { seq, set } => {
                    let write = update
                        .map_sets
                        .get(*set as usize)
                        .ok_or_else(|| broken("map write"))?;
                    let map = log.intern_map(&write.map);
                    let set = log.push_map_set(*seq, map, &write.key, write.value.clone());
                    let (lamport, peer) = set.stamp();
                    let change =
                        maps.get_mut(map)
                            .apply(&write.key, lamport, peer, set.value.as_ref());
                    if let (Some(change), true) = (change, watch.is_some()) {
                        map_changes.push((map, write.key.clone(), change));
                    }
                }
            }
        }
    }
    for (info, &held) in update.commits.iter().zip(&held_before) {
        log.add_imported_commit_info(info, held, &added);
    }
    if let Some(linear) = linear {
        linear.finish(texts, &touched, log.content())?;
    }
    drop_focus(texts);
    if let (Some(draft), Some(watch)) = (draft, watch) {
        deltas::record(watch, log, texts, draft);
        for (map, key, change) in map_changes {
            draft.add_map(map, &key, change);
        }
    }
    Ok(applied)
}

/// The item of `len` new chars (seqs `seq..`) between `origins`, with
/// their text added to the log's content, or tombstones when the update
/// left it out. `ascii`: the text is known to be ASCII.
fn new_item(
    log: &mut OpLog,
    seq: Seq,
    len: u32,
    (left, right): (Seq, Seq),
    content: Option<&str>,
    ascii: bool,
) -> Item {
    let (byte_start, bytes, utf16) = match content {
        Some(s) => {
            debug_assert_eq!(char_len(s), len);
            let utf16 = if ascii { len } else { utf16_len(s) };
            (log.push_content(s), s.len() as u32, utf16)
        }
        None => (NO_CONTENT, 0, 0),
    };
    Item {
        seq,
        len,
        origin_left: left,
        origin_right: right,
        byte_start,
        bytes,
        utf16,
        deleted: byte_start == NO_CONTENT,
        anchor: 0,
    }
}

/// Inserts `item`, made by op `id`, into `text`: on the fast-forward while
/// that holds, else by integrating it.
fn insert(
    log: &mut OpLog,
    texts: &mut TextTable,
    linear: &mut Option<Linear>,
    id: OpId,
    text: TextIdx,
    item: Item,
) -> Result<()> {
    let recorded = match linear {
        Some(l) => l.insert(text, id, item),
        None => false,
    };
    if !recorded {
        leave_fast_forward(linear, texts, log)?;
        let state = texts.get_mut(text).ok_or_else(|| broken("text"))?;
        state.integrate(item, id, log, log.content());
    }
    log.push_op(OpRun {
        seq: item.seq,
        len: item.len,
        text,
        kind: OpKind::Insert {
            origin_left: item.origin_left,
            origin_right: item.origin_right,
            byte_start: item.byte_start,
            bytes: item.bytes,
        },
    });
    Ok(())
}

/// Hands what the fast-forward recorded (if it is still on) to the
/// general path, which takes the rest of the update.
fn leave_fast_forward(
    linear: &mut Option<Linear>,
    texts: &mut TextTable,
    log: &OpLog,
) -> Result<()> {
    match linear.take() {
        Some(l) => l.replay(texts, log),
        None => Ok(()),
    }
}

/// Ends the mark whose start op is `start` at op `seq`.
fn mark_end(
    log: &mut OpLog,
    texts: &mut TextTable,
    seq: Seq,
    text: TextIdx,
    (left, right): (Seq, Seq),
    start: Seq,
) -> Result<()> {
    let Some(OpKind::MarkStart { mark, .. }) = log.ops().get(log.op_index(start)).map(|r| r.kind)
    else {
        return Err(broken("mark start op"));
    };
    let expand = log
        .end_mark(mark, seq)
        .ok_or_else(|| broken("open mark"))?
        .expand;
    let kind = OpKind::MarkEnd {
        origin_left: left,
        origin_right: right,
        mark,
    };
    anchor(log, texts, seq, text, kind, expand)
}

/// Places the anchor of mark op `kind` (seq `seq`) in its text, lists it
/// there and records the op.
fn anchor(
    log: &mut OpLog,
    texts: &mut TextTable,
    seq: Seq,
    text: TextIdx,
    kind: OpKind,
    expand: ExpandType,
) -> Result<()> {
    let a = kind.anchor().ok_or_else(|| broken("mark op"))?;
    let item = Item::anchor(seq, a, expand);
    let state = texts.get_mut(text).ok_or_else(|| broken("text"))?;
    let (leaf, at) = state.place_anchor(item, log.content());
    state.register_anchor(leaf, at);
    log.push_op(OpRun {
        seq,
        len: 1,
        text,
        kind,
    });
    Ok(())
}

/// Deletes the chars `pieces` (ascending seqs) with ops `seq..`, backwards
/// (`reversed`: op by op from the last char) or forwards.
fn delete(
    log: &mut OpLog,
    texts: &mut TextTable,
    linear: &mut Option<Linear>,
    seq: Seq,
    text: TextIdx,
    pieces: &[Range<Seq>],
    reversed: bool,
) -> Result<()> {
    let mut at = seq;
    let mut record = |log: &mut OpLog, piece: &Range<Seq>| {
        let n = piece.end - piece.start;
        log.push_op(OpRun {
            seq: at,
            len: n,
            text,
            kind: OpKind::Delete {
                target: if reversed { piece.end - 1 } else { piece.start },
                reversed,
            },
        });
        at += n;
    };
    if reversed {
        pieces.iter().rev().for_each(|p| record(log, p));
    } else {
        pieces.iter().for_each(|p| record(log, p));
    }
    if let Some(l) = linear {
        if pieces.iter().all(|p| l.delete(seq, text, p.clone())) {
            return Ok(());
        }
        // Not chars of the update: the general path decides.
        leave_fast_forward(linear, texts, log)?;
    }
    let state = texts.get_mut(text).ok_or_else(|| broken("text"))?;
    for piece in pieces {
        state.remote_delete(piece.clone(), log.content());
    }
    Ok(())
}
