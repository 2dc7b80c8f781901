//! Carrying out a [`Plan`]: the one place where remote ops enter the
//! history and the texts, one function per kind of op.
//!
//! Everything an op refers to was checked by [`super::plan()`]; should one
//! of those guarantees not hold here, that is a bug of ours: it is
//! reported as [`Error::Internal`] (and asserted in debug builds), never
//! skipped, since a skipped op is one replica quietly holding other data
//! than the rest.

use crate::error::{Error, Result};
use crate::id::{Counter, IdSpan, OpId, PeerId};
use crate::oplog::{AddedChange, Object, OpKind, OpLog, OpRun, EMBED_CHAR, NO_CONTENT};
use crate::style::ExpandType;
use crate::text::{Item, TextTable};
use crate::unit::{char_len, utf16_len};
use std::collections::BTreeMap;

use crate::event::Draft;
use crate::map::MapTable;

use super::deltas;
use super::fast_forward::Linear;
use super::plan::Plan;
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
        match op.kind {
            OpKind::Insert { .. } => inserts += 1,
            // Map ops and cancels too: the fast path takes inserts and
            // deletes only.
            OpKind::MarkStart { .. }
            | OpKind::MarkEnd { .. }
            | OpKind::MapSet { .. }
            | OpKind::Cancel { .. } => marks += 1,
            OpKind::Delete { .. } => {}
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
    // Where the new table entries are in the update, in op order.
    let mut content_from = plan.sources.content.into_iter();
    let mut marks_from = plan.sources.marks.into_iter();
    let mut map_sets_from = plan.sources.map_sets.into_iter();
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
        for run in ops {
            match run.kind {
                OpKind::Insert {
                    byte_start, bytes, ..
                } => {
                    let content = if byte_start == NO_CONTENT {
                        None
                    } else {
                        let from = content_from.next().ok_or_else(|| broken("content"))?;
                        let bytes = from as usize..(from + bytes) as usize;
                        Some(update.content.get(bytes).ok_or_else(|| broken("content"))?)
                    };
                    let id = OpId::new(change.peer, change.counter + (run.seq - first_seq));
                    if let (false, Some(content)) = (objects.is_empty(), content) {
                        let ids =
                            (id.peer, id.counter)..(id.peer, id.counter.saturating_add(run.len));
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
                                log.set_object(run.seq + k, object.clone());
                            }
                        }
                    }
                    let item = new_item(log, run, content, ascii)?;
                    insert(log, texts, &mut linear, id, run, item)?;
                }
                OpKind::MarkStart { mark, .. } => {
                    let (from, expand) = marks_from.next().ok_or_else(|| broken("mark"))?;
                    let set = update
                        .marks
                        .get(from as usize)
                        .ok_or_else(|| broken("mark set"))?;
                    if log.start_mark(&set.key, set.value.clone(), expand, run.seq) != mark {
                        return Err(broken("mark index"));
                    }
                    anchor(log, texts, run, expand)?;
                }
                OpKind::MarkEnd { mark, .. } => {
                    let expand = log
                        .end_mark(mark, run.seq)
                        .ok_or_else(|| broken("open mark"))?
                        .expand;
                    anchor(log, texts, run, expand)?;
                }
                OpKind::Delete { .. } => delete(log, texts, &mut linear, run)?,
                OpKind::Cancel { .. } => {
                    log.push_op(*run);
                    super::cancel(log, texts, run)?;
                }
                OpKind::MapSet { set } => {
                    let from = map_sets_from.next().ok_or_else(|| broken("map write"))?;
                    let write = update
                        .map_sets
                        .get(from as usize)
                        .ok_or_else(|| broken("map write"))?;
                    if log.map_sets().len() != set.as_usize() {
                        return Err(broken("map write index"));
                    }
                    let map = log.intern_map(&write.map);
                    let done = log.push_map_set(run.seq, map, &write.key, write.value.clone());
                    let (lamport, peer) = done.stamp();
                    let change =
                        maps.get_mut(map)
                            .apply(&write.key, lamport, peer, done.value.as_ref());
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

/// The item of insert run `run`, with its text (`None`: the update left
/// it out, the chars are tombstones) added to the log's content where the
/// plan put it. `ascii`: the text is known to be ASCII.
fn new_item(log: &mut OpLog, run: &OpRun, content: Option<&str>, ascii: bool) -> Result<Item> {
    let OpKind::Insert {
        origin_left,
        origin_right,
        byte_start,
        bytes,
    } = run.kind
    else {
        return Err(broken("insert"));
    };
    let utf16 = match content {
        Some(s) => {
            debug_assert_eq!(char_len(s), run.len);
            if log.push_content(s) != byte_start {
                return Err(broken("content offset"));
            }
            if ascii {
                run.len
            } else {
                utf16_len(s)
            }
        }
        None => 0,
    };
    Ok(Item {
        seq: run.seq,
        len: run.len,
        origin_left,
        origin_right,
        byte_start,
        bytes,
        utf16,
        deleted: byte_start == NO_CONTENT,
        anchor: 0,
    })
}

/// Inserts `item` of run `run`, made by op `id`: on the fast-forward
/// while that holds, else by integrating it.
fn insert(
    log: &mut OpLog,
    texts: &mut TextTable,
    linear: &mut Option<Linear>,
    id: OpId,
    run: &OpRun,
    item: Item,
) -> Result<()> {
    let recorded = match linear {
        Some(l) => l.insert(run.text, id, item),
        None => false,
    };
    if !recorded {
        leave_fast_forward(linear, texts, log)?;
        let state = texts.get_mut(run.text).ok_or_else(|| broken("text"))?;
        state.integrate(item, id, log, log.content());
    }
    log.push_op(*run);
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

/// Places the anchor of mark op `run` (under rule `expand`) in its text,
/// lists it there and records the op.
fn anchor(log: &mut OpLog, texts: &mut TextTable, run: &OpRun, expand: ExpandType) -> Result<()> {
    let a = run.kind.anchor().ok_or_else(|| broken("mark op"))?;
    let item = Item::anchor(run.seq, a, expand);
    let state = texts.get_mut(run.text).ok_or_else(|| broken("text"))?;
    let (leaf, at) = state.place_anchor(item, log.content());
    state.register_anchor(leaf, at);
    log.push_op(*run);
    Ok(())
}

/// Records delete run `run` and deletes its chars: on the fast-forward
/// while that holds, else through the text.
fn delete(
    log: &mut OpLog,
    texts: &mut TextTable,
    linear: &mut Option<Linear>,
    run: &OpRun,
) -> Result<()> {
    let OpKind::Delete { target, reversed } = run.kind else {
        return Err(broken("delete"));
    };
    let low = if reversed {
        target + 1 - run.len
    } else {
        target
    };
    let chars = low..low + run.len;
    log.push_op(*run);
    if let Some(l) = linear {
        if l.delete(run.seq, run.text, chars.clone()) {
            return Ok(());
        }
        // Not chars of the update: the general path decides.
        leave_fast_forward(linear, texts, log)?;
    }
    let state = texts.get_mut(run.text).ok_or_else(|| broken("text"))?;
    state.remote_delete(chars, log.content());
    Ok(())
}
