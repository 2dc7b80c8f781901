//! [`UndoManager`]: undo and redo of one peer's local edits, leaving what
//! other peers did in place.
//!
//! Each local commit's event carries the inverse of its edits (a change
//! delta per text, recorded by the edits themselves). A step is such an
//! inverse. Whatever happens to the document afterwards that the step did
//! not cause (imports, and local commits with an excluded origin) is a
//! change the inverse must be rebased over: every stored step is
//! transformed past it (operational transformation of Quill deltas), so
//! that undoing applies exactly this peer's step to the document as it is
//! now. Applying a step makes ordinary new ops, which sync like any edit;
//! its own event, with its inverse, becomes the redo step.
//!
//! The selection an app registers for a step is kept as positions in the
//! document the step's inverse produces, transformed alongside it, and
//! handed back as fresh [`Cursor`]s after the undo or redo.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::cursor::{Cursor, Side};
use crate::doc::Doc;
use crate::error::Result;
use crate::event::{
    compose, transform, transform_position, transform_with, DocEvent, EventTrigger, Inverse,
    Subscription,
};
use crate::style::Delta;
use crate::unit::Unit;
use crate::value::Value;

/// A position of the selection registered for a step.
#[derive(Debug, Clone)]
struct Spot {
    text: String,
    pos: usize,
    side: Side,
}

/// One undo or redo step: per text, the change that reverts it, and the
/// selection to restore.
#[derive(Debug, Clone, Default)]
struct Step {
    texts: Vec<(String, Vec<Delta>)>,
    /// Per map, the value (`None`: absent) each key the step changed
    /// goes back to.
    maps: BTreeMap<String, BTreeMap<String, Option<Value>>>,
    selection: Vec<Spot>,
    /// When it was pushed (ms), for merging.
    at: u64,
}

impl Step {
    /// An empty step.
    fn new(selection: Vec<Spot>, at: u64) -> Step {
        Step {
            texts: Vec::new(),
            maps: BTreeMap::new(),
            selection,
            at,
        }
    }

    /// Adds `inverse` (of later edits) in front of the step's changes.
    fn prepend(&mut self, inverse: &Inverse) {
        for diff in &inverse.texts {
            match self.texts.iter_mut().find(|(n, _)| *n == diff.name) {
                Some((_, d)) => *d = compose(&diff.delta, d, Unit::Char),
                None => self.texts.push((diff.name.clone(), diff.delta.clone())),
            }
        }
        // A key's earlier value wins: it is what the whole step goes
        // back to.
        for diff in &inverse.maps {
            let keys = self.maps.entry(diff.name.clone()).or_default();
            for (k, v) in &diff.changes {
                keys.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
    }

    /// A change of map `map` that is not this step's (a peer's write, an
    /// excluded commit) takes the keys it wrote out of the step: undo
    /// leaves other peers' work in place.
    fn rebase_map(&mut self, map: &str, keys: &BTreeMap<String, Option<Value>>) {
        if let Some(step_keys) = self.maps.get_mut(map) {
            step_keys.retain(|k, _| !keys.contains_key(k));
        }
    }

    /// Rebases the step over `change` of text `name`, made on the state
    /// the step's inverse applies to. Returns the change as it applies
    /// after the inverse: what the step below this one must be rebased
    /// over (its inverse applies after this one's).
    fn rebase(&mut self, name: &str, change: Vec<Delta>) -> Vec<Delta> {
        let Some((_, inverse)) = self.texts.iter_mut().find(|(n, _)| n == name) else {
            return change;
        };
        let moved = transform(inverse, &change, false, Unit::Char);
        // The selection lives in what the inverse produces.
        for m in self.selection.iter_mut().filter(|m| m.text == name) {
            m.pos = transform_position(&moved, m.pos, m.side == Side::After, Unit::Char);
        }
        *inverse = transform_with(&change, inverse, true, true, Unit::Char);
        moved
    }
}

type Clock = Box<dyn Fn() -> u64 + Send + Sync>;

struct State {
    undo: Vec<Step>,
    redo: Vec<Step>,
    merge_interval_ms: u64,
    max_steps: usize,
    exclude: Vec<String>,
    /// The next local step starts a new step even within the interval.
    checkpoint: bool,
    /// The selection to attach to the next step.
    next_selection: Vec<Spot>,
    /// The selection of the step being undone or redone, for the step its
    /// event pushes on the other stack.
    moving: Vec<Spot>,
    /// This manager is undoing or redoing now: undo and redo events are
    /// its own (another manager's are rebased past, as imports are).
    applying: bool,
    clock: Clock,
}

impl State {
    fn excluded(&self, origin: Option<&str>) -> bool {
        origin.is_some_and(|o| self.exclude.iter().any(|p| o.starts_with(p.as_str())))
    }

    fn on_event(&mut self, event: &DocEvent, inverse: &Inverse) {
        match event.trigger {
            EventTrigger::Local if !self.excluded(event.origin.as_deref()) => {
                self.push_local(inverse);
            }
            EventTrigger::Undo if self.applying => {
                let mut step = Step::new(std::mem::take(&mut self.moving), (self.clock)());
                step.prepend(inverse);
                self.redo.push(step);
            }
            EventTrigger::Redo if self.applying => {
                let mut step = Step::new(std::mem::take(&mut self.moving), (self.clock)());
                step.prepend(inverse);
                self.undo.push(step);
                self.trim();
            }
            // The steps were made on the latest version; a checked-out one
            // cannot be edited, and what comes back on returning may hold
            // imports: the steps no longer fit.
            EventTrigger::Checkout => {
                self.undo.clear();
                self.redo.clear();
            }
            // Imports, excluded local commits, another manager's undo or
            // redo: not ours to undo, and every
            // step must be rebased past them. The top step of each stack
            // applies to the document as it is; each step below applies
            // after the one above it, so the change travels down the stack,
            // rebased past each inverse on the way.
            _ => {
                for diff in &event.texts {
                    for stack in [&mut self.undo, &mut self.redo] {
                        let mut change = diff.delta.clone();
                        for step in stack.iter_mut().rev() {
                            change = step.rebase(&diff.name, change);
                        }
                    }
                }
                for diff in &event.maps {
                    for step in self.undo.iter_mut().chain(self.redo.iter_mut()) {
                        step.rebase_map(&diff.name, &diff.changes);
                    }
                }
            }
        }
    }

    fn push_local(&mut self, inverse: &Inverse) {
        if inverse.texts.is_empty() && inverse.maps.is_empty() {
            return;
        }
        let now = (self.clock)();
        self.redo.clear();
        let merge = !self.checkpoint
            && self.merge_interval_ms > 0
            && self
                .undo
                .last()
                .is_some_and(|s| now.saturating_sub(s.at) < self.merge_interval_ms);
        self.checkpoint = false;
        if merge {
            if let Some(top) = self.undo.last_mut() {
                top.prepend(inverse);
                top.at = now;
                self.next_selection.clear();
                return;
            }
        }
        let mut step = Step::new(std::mem::take(&mut self.next_selection), now);
        step.prepend(inverse);
        self.undo.push(step);
        self.trim();
    }

    fn trim(&mut self) {
        if self.undo.len() > self.max_steps {
            let extra = self.undo.len() - self.max_steps;
            self.undo.drain(..extra);
        }
    }
}

/// Undo and redo of one document's local edits (Loro's and Yjs' model):
/// undoing reverts only this peer's step, leaving edits other peers made
/// concurrently or later in place, and is itself a set of ordinary new ops
/// that sync to every peer. Marks and unmarks are undone too.
///
/// Consecutive commits within a merge interval form one step (unless a
/// [`UndoManager::checkpoint`] separates them); commits whose origin
/// starts with an excluded prefix are not undone (they are treated like a
/// peer's edits). The app may register the selection before a step
/// ([`UndoManager::set_selection`]); undo and redo return it as fresh
/// cursors at the right places.
///
/// # Examples
///
/// ```
/// use weft::{Doc, ExportMode, UndoManager};
///
/// let mut alice = Doc::new();
/// alice.set_peer_id(2)?;
/// alice.text("t").insert(0, "world")?;
/// alice.commit();
/// let mut bob = alice.fork();
/// bob.set_peer_id(1)?;
/// let mut undo = UndoManager::new(&mut alice);
///
/// alice.text("t").insert(0, "Hello ")?;
/// alice.commit();
/// bob.text("t").insert(0, "Bob: ")?;
/// alice.import(&bob.export(ExportMode::Updates { from: &alice.version() })?)?;
/// assert_eq!(alice.text("t").to_string(), "Bob: Hello world");
///
/// assert!(undo.undo(&mut alice)?.is_some());
/// assert_eq!(alice.text("t").to_string(), "Bob: world"); // Bob's edit stays
/// assert!(undo.redo(&mut alice)?.is_some());
/// assert_eq!(alice.text("t").to_string(), "Bob: Hello world");
/// # Ok::<(), weft::Error>(())
/// ```
pub struct UndoManager {
    state: Arc<Mutex<State>>,
    _subscription: Subscription,
}

impl std::fmt::Debug for UndoManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.lock();
        f.debug_struct("UndoManager")
            .field("undo", &s.undo.len())
            .field("redo", &s.redo.len())
            .finish()
    }
}

impl UndoManager {
    /// An undo manager for `doc`'s local edits from now on (commits the
    /// open change first: it is not undoable). Each commit is one step
    /// (merge interval 0), at most 100 steps are kept.
    pub fn new(doc: &mut Doc) -> UndoManager {
        UndoManager::with_clock(doc, crate::platform::now_ms)
    }

    /// [`UndoManager::new`] with a clock (ms) for the merge interval, for
    /// tests and replays.
    pub fn with_clock(doc: &mut Doc, clock: impl Fn() -> u64 + Send + Sync + 'static) -> Self {
        let state = Arc::new(Mutex::new(State {
            undo: Vec::new(),
            redo: Vec::new(),
            merge_interval_ms: 0,
            max_steps: 100,
            exclude: Vec::new(),
            checkpoint: false,
            next_selection: Vec::new(),
            moving: Vec::new(),
            applying: false,
            clock: Box::new(clock),
        }));
        let s = Arc::clone(&state);
        let subscription = doc.subscribe_inverse(Arc::new(move |event, inverse| {
            s.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .on_event(event, inverse);
        }));
        UndoManager {
            state,
            _subscription: subscription,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Commits within `ms` of the previous step join it (0: never).
    pub fn set_merge_interval(&mut self, ms: u64) {
        self.lock().merge_interval_ms = ms;
    }

    /// Keeps at most `steps` undo steps (the oldest go first).
    pub fn set_max_steps(&mut self, steps: usize) {
        let mut s = self.lock();
        s.max_steps = steps;
        s.trim();
    }

    /// Local commits whose origin ([`crate::CommitOptions::origin`])
    /// starts with `prefix` are not undone: they stay, like a peer's edits.
    pub fn add_exclude_origin_prefix(&mut self, prefix: impl Into<String>) {
        self.lock().exclude.push(prefix.into());
    }

    /// Ends the current step: the next commit starts a new one even within
    /// the merge interval.
    pub fn checkpoint(&mut self) {
        self.lock().checkpoint = true;
    }

    /// Registers the selection before the next step (resolved in `doc`
    /// now): undoing that step returns it, and redoing it returns it too.
    ///
    /// # Errors
    ///
    /// As [`Doc::cursor_pos`] for a cursor that does not resolve.
    pub fn set_selection(&mut self, doc: &Doc, cursors: &[Cursor]) -> Result<()> {
        let mut marks = Vec::with_capacity(cursors.len());
        for c in cursors {
            marks.push(Spot {
                text: c.text().to_owned(),
                pos: doc.cursor_pos(c)?,
                side: c.side(),
            });
        }
        self.lock().next_selection = marks;
        Ok(())
    }

    /// Whether there is a step to undo.
    pub fn can_undo(&self) -> bool {
        !self.lock().undo.is_empty()
    }

    /// Whether there is a step to redo.
    pub fn can_redo(&self) -> bool {
        !self.lock().redo.is_empty()
    }

    /// Number of undo steps.
    pub fn undo_count(&self) -> usize {
        self.lock().undo.len()
    }

    /// Number of redo steps.
    pub fn redo_count(&self) -> usize {
        self.lock().redo.len()
    }

    /// Reverts the last step of this peer's edits (committing the open
    /// change first, which may be that step). Returns `None` if there was
    /// nothing to undo, else the selection registered for the step, as
    /// cursors where it is now. O(size of the step), plus O(n) of each text
    /// it restyles.
    ///
    /// # Errors
    ///
    /// As [`crate::Text::apply_delta`] ([`crate::Error::HistoryFull`]);
    /// the step stays on the stack then.
    pub fn undo(&mut self, doc: &mut Doc) -> Result<Option<Vec<Cursor>>> {
        self.apply(doc, true)
    }

    /// Re-applies the last undone step. As [`UndoManager::undo`].
    ///
    /// # Errors
    ///
    /// As [`UndoManager::undo`].
    pub fn redo(&mut self, doc: &mut Doc) -> Result<Option<Vec<Cursor>>> {
        self.apply(doc, false)
    }

    fn apply(&mut self, doc: &mut Doc, undo: bool) -> Result<Option<Vec<Cursor>>> {
        doc.commit();
        let step = {
            let mut s = self.lock();
            let stack = if undo { &mut s.undo } else { &mut s.redo };
            match stack.pop() {
                Some(step) => {
                    s.moving = step.selection.clone();
                    s.applying = true;
                    step
                }
                None => return Ok(None),
            }
        };
        let out = self.apply_step(doc, step, undo);
        self.lock().applying = false;
        out
    }

    fn apply_step(&mut self, doc: &mut Doc, step: Step, undo: bool) -> Result<Option<Vec<Cursor>>> {
        let trigger = if undo {
            EventTrigger::Undo
        } else {
            EventTrigger::Redo
        };
        for (i, (name, delta)) in step.texts.iter().enumerate() {
            if let Err(e) = doc.text(name).apply_delta(delta) {
                // `apply_delta` is atomic: the texts before this one were
                // reverted, this one and the rest were not. The part done
                // is reported (and can be redone); the rest stays.
                doc.commit_as(trigger, None);
                let mut rest = step.clone();
                rest.texts.drain(..i);
                let mut s = self.lock();
                let stack = if undo { &mut s.undo } else { &mut s.redo };
                stack.push(rest);
                return Err(e);
            }
        }
        for (name, keys) in &step.maps {
            for (key, value) in keys {
                let mut map = doc.map(name);
                // Writes of a checked-out document fail before the first
                // (nothing was done); no other error is possible here.
                match value {
                    Some(v) => map.set(key, v.clone())?,
                    None => map.delete(key)?,
                }
            }
        }
        doc.commit_as(trigger, None);
        let mut cursors = Vec::with_capacity(step.selection.len());
        for m in &step.selection {
            let mut text = doc.text(&m.text);
            let pos = m.pos.min(text.len());
            cursors.push(text.cursor(pos, m.side)?);
        }
        Ok(Some(cursors))
    }
}
