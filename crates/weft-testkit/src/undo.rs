//! A replica's [`UndoManager`] and the model of it the driver checks it
//! against ([`Undoer`]): the model keeps its own stacks of steps, cut
//! where the document committed its own ops, and undoes a step on the
//! reference model by [`RefDoc::revert_ops`] plus the map write-back
//! the manager documents.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use weft::{Doc, Subscription, UndoManager};

use crate::model::MapsBack;
use crate::RefDoc;

/// Most steps a manager keeps (its default).
const MAX_STEPS: usize = 100;

/// One undo or redo step as the model sees it: this peer's ops (counter
/// ranges, in order) and per map key the value it goes back to.
#[derive(Clone, Debug, Default)]
struct ModelStep {
    ops: Vec<Range<u32>>,
    maps: MapsBack,
}

/// A replica's undo manager with the model of its stacks.
pub(crate) struct Undoer {
    manager: UndoManager,
    /// Set when the document commits its own ops (it sends a local
    /// update then).
    committed: Arc<AtomicBool>,
    _local: Subscription,
    /// Where this peer's open (uncommitted) ops start, per the model.
    open: u32,
    undo: Vec<ModelStep>,
    redo: Vec<ModelStep>,
}

impl Undoer {
    /// A new manager for `doc` (committing its open change: from now on
    /// its steps are undoable), whose model is `model`.
    pub(crate) fn attach(doc: &mut Doc, model: &RefDoc) -> Undoer {
        let manager = UndoManager::new(doc);
        let committed = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&committed);
        let local = doc.subscribe_local_update(move |_| flag.store(true, Ordering::SeqCst));
        Undoer {
            manager,
            committed,
            _local: local,
            open: model.own_next(),
            undo: Vec::new(),
            redo: Vec::new(),
        }
    }

    /// If the document committed its own ops since the last call, the
    /// model's new step: those ops (all made since the last commit, so
    /// no own op may be made between a commit and this call), with the
    /// map values they replaced.
    pub(crate) fn note(&mut self, model: &RefDoc) {
        if !self.committed.swap(false, Ordering::SeqCst) {
            return;
        }
        let end = model.own_next();
        if end == self.open {
            return;
        }
        let ops = self.open..end;
        self.open = end;
        self.redo.clear();
        self.undo.push(ModelStep {
            maps: model.step_maps(ops.clone()),
            ops: vec![ops],
        });
        if self.undo.len() > MAX_STEPS {
            self.undo.remove(0);
        }
    }

    /// Undoes (`undo`) or redoes the last step with the manager, and (when
    /// `check`) the same on `model`: the manager must have a step exactly
    /// when the model does. The document is attached and committed, and
    /// [`Undoer::note`] was called since. Returns whether there was a
    /// step.
    pub(crate) fn apply(
        &mut self,
        doc: &mut Doc,
        model: &mut RefDoc,
        undo: bool,
        check: bool,
    ) -> bool {
        let got = if undo {
            self.manager.undo(doc)
        } else {
            self.manager.redo(doc)
        }
        .expect("an attached document undoes and redoes");
        self.committed.store(false, Ordering::SeqCst);
        if !check {
            return got.is_some();
        }
        let top = if undo {
            self.undo.pop()
        } else {
            self.redo.pop()
        };
        assert_eq!(
            got.is_some(),
            top.is_some(),
            "the manager has a step to {} exactly when the model does",
            if undo { "undo" } else { "redo" }
        );
        let Some(step) = top else {
            return false;
        };
        let other = revert(model, &step);
        self.open = model.own_next();
        if undo {
            self.redo.push(other);
        } else {
            self.undo.push(other);
            if self.undo.len() > MAX_STEPS {
                self.undo.remove(0);
            }
        }
        true
    }

    /// The number of steps the model can undo.
    pub(crate) fn undo_count(&self) -> usize {
        self.undo.len()
    }

    /// The number of steps the model can redo.
    pub(crate) fn redo_count(&self) -> usize {
        self.redo.len()
    }
}

/// Reverts `step` on `model` as the manager documents it: its ops by
/// [`RefDoc::revert_ops`], then each map key it changed goes back to its
/// value, unless another peer wrote the key last or it holds that value
/// already. Returns the step that reverts this revert.
fn revert(model: &mut RefDoc, step: &ModelStep) -> ModelStep {
    let first = model.own_next();
    model.revert_ops(&step.ops);
    let mut back = MapsBack::new();
    for (name, keys) in &step.maps {
        for (key, value) in keys {
            if model.map_writer(name, key).is_some_and(|p| p != model.peer) {
                continue;
            }
            let now = model.map_get(name, key);
            if now == *value {
                continue;
            }
            model.map_set(name, key, value.clone());
            back.entry(name.clone())
                .or_default()
                .insert(key.clone(), now);
        }
    }
    let end = model.own_next();
    ModelStep {
        ops: if end > first {
            vec![first..end]
        } else {
            Vec::new()
        },
        maps: back,
    }
}
