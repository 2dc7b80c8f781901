//! A replica's [`UndoManager`] and the model of it the driver checks it
//! against ([`Undoer`]): the model keeps its own stacks of steps, cut
//! where the document committed its own ops, and undoes a step on the
//! reference model by [`RefDoc::revert_ops`] plus the map write-back
//! the manager documents.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use weft::{Delta, Doc, Subscription, UndoManager, Value};

use crate::converge::{Checks, Driver};
use crate::model::MapsBack;
use crate::{Action, RefDoc, Stats};

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
            ops: std::iter::once(ops).collect(),
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
    fn undo_count(&self) -> usize {
        self.undo.len()
    }

    /// The number of steps the model can redo.
    fn redo_count(&self) -> usize {
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
            std::iter::once(first..end).collect()
        } else {
            Vec::new()
        },
        maps: back,
    }
}

/// The undo-all property: `peers` replicas run `actions` (with every
/// delivery of [`crate::drive`], the model checked throughout; undo and
/// redo actions of replica 0 are dropped, the others' are made), then
/// everything is delivered; replica 0 (peer P) undoes every one of its
/// steps with its [`UndoManager`], everything is delivered again, then
/// it redoes them all and everything is delivered once more.
///
/// After the undos every replica must show exactly the document the
/// other peers' ops make alone, defined on the reference model as:
/// - text and marks: the pool of every op replayed with every op of P
///   counting as never made ([`RefDoc::with_ghost`]): P's chars are
///   hidden but keep their places, so that the others' ops, which may
///   name them (text typed inside P's text, a mark glued to P's char),
///   land where they did; P's deletes, marks and cancels do nothing;
/// - maps: a key P never wrote, or whose latest write (before the undos)
///   is another peer's, shows the greatest write of the other peers; a
///   key P wrote last shows what P saw before its first write of it (the
///   manager writes values back; when no write of another peer was
///   concurrent with P's, that is the other peers' writes alone too).
///
/// After the redos every replica must show exactly what replica 0
/// showed before the undos. Then the run ends as [`crate::drive`] does
/// (all agree, with the model and their event mirrors).
///
/// # Panics
///
/// When any of that does not hold.
pub fn undo_all(peers: usize, actions: &[Action], seed: u64) -> Stats {
    let checks = Checks::model_only();
    let mut d = Driver::new(peers, checks, seed);
    for (step, action) in actions.iter().enumerate() {
        d.step = step;
        let mine = matches!(
            *action,
            Action::Undo { peer } | Action::Redo { peer } if usize::from(peer) % peers == 0
        );
        if !mine {
            d.act(action);
        }
    }
    d.count(|s| s.actions += actions.len());
    d.deliver_everything();
    d.note_commits();
    let before = shown(&mut d.docs[0]);
    let p = d.docs[0].peer_id();
    let winners = d.pool.map_winners();
    let firsts = d.pool.first_befores(p);
    let steps = d.undoers[0].undo_count();
    assert!(steps < MAX_STEPS, "every step of P is kept");
    while d.undoers[0].undo_count() > 0 {
        d.undo(0, true, &"undo all");
    }
    assert!(!d.undoers[0].manager.can_undo(), "the manager undid all");
    d.deliver_everything();
    let mut ghost = RefDoc::with_ghost(p);
    ghost.merge_from(&d.pool);
    let mut maps: BTreeMap<String, BTreeMap<String, Value>> = ghost
        .map_contents()
        .into_iter()
        .map(|(name, entries)| (name, entries.into_iter().collect()))
        .collect();
    for ((name, key), writer) in winners {
        if writer != p {
            continue;
        }
        let value = firsts
            .get(&(name.clone(), key.clone()))
            .expect("P wrote the key")
            .clone();
        let map = maps.entry(name).or_default();
        match value {
            Some(v) => map.insert(key, v),
            None => map.remove(&key),
        };
    }
    maps.retain(|_, m| !m.is_empty());
    let alone = (ghost.to_delta(), maps);
    for (k, doc) in d.docs.iter_mut().enumerate() {
        assert_eq!(
            shown(doc),
            alone,
            "replica {k} after P undid its {steps} steps vs the others' ops alone"
        );
    }
    while d.undoers[0].redo_count() > 0 {
        d.undo(0, false, &"redo all");
    }
    assert!(!d.undoers[0].manager.can_redo(), "the manager redid all");
    d.deliver_everything();
    for (k, doc) in d.docs.iter_mut().enumerate() {
        assert_eq!(shown(doc), before, "replica {k} after P redid its steps");
    }
    d.finish()
}

/// What `doc` shows: text "t" as a delta, and its maps.
fn shown(doc: &mut Doc) -> (Vec<Delta>, BTreeMap<String, BTreeMap<String, Value>>) {
    let delta = doc.get_text("t").map_or_else(Vec::new, |t| t.to_delta());
    let maps = crate::map_contents(doc)
        .into_iter()
        .map(|(name, entries)| (name, entries.into_iter().collect()))
        .collect();
    (delta, maps)
}
