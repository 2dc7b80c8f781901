//! The change events of an applied plan: what each touched text looked
//! like before ([`watch`]) and the delta from there to after ([`record`]).
//!
//! Structure (inserts, deletes) comes from the text's tree, reading only
//! the leaves the plan changed (`TextState::import_changes`). A plan with
//! marks may also restyle unchanged chars: for such a text the delta from
//! before is kept and the attribute changes are diffed over the whole
//! text, O(n) (only while someone subscribes).

use std::collections::BTreeMap;
use std::ops::Range;

use crate::event::{apply_change, attribute_changes, compose, diff_texts, normalize, Draft};
use crate::id::{Seq, TextIdx};
use crate::oplog::{OpKind, OpLog};
use crate::style::Delta;
use crate::text::{render, TextRef, TextTable};
use crate::unit::Unit;

use super::plan::Plan;

/// A touched text as it was before the plan.
struct Watched {
    text: TextIdx,
    /// Its length in every unit kept (empty before: the event is the
    /// whole text after).
    old_len: [usize; 3],
    /// Its delta, for a text the plan marks or cancels ops in.
    old: Option<Vec<Delta>>,
    /// Whether the plan cancels ops in it: chars may show again, which
    /// the tree does not record, so the event is the whole text diffed.
    cancels: bool,
}

/// The touched texts before a plan is applied.
pub(super) struct Watch {
    first_new: Seq,
    texts: Vec<Watched>,
}

/// Notes the touched texts before `plan` is applied and has their remote
/// deletes recorded.
pub(super) fn watch(log: &OpLog, texts: &mut TextTable, plan: &Plan) -> Watch {
    let mut marked: Vec<TextIdx> = plan
        .ops
        .iter()
        // A mark's end alone (its start arrived earlier) restyles too:
        // the mark takes effect when both anchors are in.
        .filter_map(|op| op.kind.anchor().map(|_| op.text))
        .collect();
    marked.sort_unstable();
    marked.dedup();
    let mut cancelled: Vec<TextIdx> = plan
        .ops
        .iter()
        .filter(|op| matches!(op.kind, OpKind::Cancel { .. }))
        .map(|op| op.text)
        .collect();
    cancelled.sort_unstable();
    cancelled.dedup();
    let mut watched = Vec::with_capacity(plan.touched.len());
    for &text in &plan.touched {
        let Some(state) = texts.get_mut(text) else {
            watched.push(Watched {
                text,
                old_len: [0; 3],
                old: None,
                cancels: false,
            });
            continue;
        };
        let old_len = Unit::ALL.map(|u| state.visible_len(u) as usize);
        let cancels = cancelled.binary_search(&text).is_ok();
        let old = (cancels || (old_len[0] > 0 && marked.binary_search(&text).is_ok()))
            .then(|| TextRef::new(log, state, None).to_delta());
        if old_len[0] > 0 {
            state.record_deletions();
        }
        watched.push(Watched {
            text,
            old_len,
            old,
            cancels,
        });
    }
    Watch {
        first_new: log.next_seq(),
        texts: watched,
    }
}

/// Adds to `draft` what the plan applied since [`watch`] changed.
pub(super) fn record(watch: Watch, log: &OpLog, texts: &mut TextTable, draft: &mut Draft) {
    let mut inserted: BTreeMap<TextIdx, Vec<Range<Seq>>> = BTreeMap::new();
    let from = log.op_index(watch.first_new);
    for op in log.ops().iter_from(from) {
        if matches!(op.kind, OpKind::Insert { .. }) {
            inserted.entry(op.text).or_default().push(op.seq..op.end());
        }
    }
    for w in watch.texts {
        let Some(state) = texts.get_mut(w.text) else {
            continue;
        };
        let mut deleted = state.take_deletions();
        if let (true, Some(old)) = (w.cancels, &w.old) {
            let now = TextRef::new(log, state, None).to_delta();
            draft.add(w.text, |unit| diff_texts(old, &now, unit));
            continue;
        }
        if w.old_len[0] == 0 {
            let now = TextRef::new(log, state, None).to_delta();
            draft.add(w.text, |_| now.clone());
            continue;
        }
        deleted.sort_unstable_by_key(|r| r.start);
        let steps = state.import_changes(
            log,
            watch.first_new,
            inserted.get(&w.text).map_or(&[], Vec::as_slice),
            &deleted,
        );
        let view = TextRef::new(log, state, None);
        let now = w.old.as_ref().map(|_| view.to_delta());
        draft.add(w.text, |unit| {
            let mut delta = render(&steps, unit);
            // Deletes of neighbouring leaves may come out of document
            // order; merged, their total is the same.
            normalize(&mut delta);
            let (Some(old), Some(now)) = (&w.old, &now) else {
                return delta;
            };
            match apply_change(old, &delta, unit) {
                Ok(mid) => compose(&delta, &attribute_changes(&mid, now, unit), unit),
                Err(_) => {
                    // A bug: the structure read back does not fit the text
                    // as it was. The whole text replaced is still exact.
                    debug_assert!(false, "import delta does not fit the text");
                    let mut all = vec![Delta::delete(w.old_len[unit.index()])];
                    all.extend(now.iter().cloned());
                    all
                }
            }
        });
    }
}
