//! [`UndoManager`]: exact undo and redo of one peer's local edits, by op
//! id, leaving what other peers did in place.
//!
//! A step is the ops this peer made in it (ranges of its counters, as
//! each local commit's event reports them). Undoing a step makes the ops
//! that cancel it exactly ([`Doc::revert_ops`]): the chars its inserts
//! made are deleted by id, wherever they are now; its deletes are
//! cancelled, so the very same chars come back in place with the marks
//! they had (unless another delete still removes them); its marks are
//! cancelled, so they style nothing and other marks of their keys show as
//! if they had never been made; a container it deleted shows again. Map
//! writes are written back by value (each key to what it held before the
//! step), unless a later write of another peer or an excluded commit took
//! the key. Redo undoes the undo the same way: its deletes and cancels
//! are cancelled in turn, its map values written back.
//!
//! Nothing is transformed when others edit: a step holds ids, which stay
//! valid, so importing costs nothing per stored step, and the selection of
//! a step is kept as [`Cursor`]s.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use smallvec::SmallVec;

use crate::cursor::Cursor;
use crate::doc::Doc;
use crate::error::{Error, Result};
use crate::event::{Committed, EventTrigger, Subscription};
use crate::id::{Counter, PeerId};
use crate::value::Value;

/// One undo or redo step: this peer's ops to revert, the map values to
/// write back and the selection to restore.
#[derive(Debug, Clone, Default)]
struct Step {
    /// Counter ranges of this peer's ops, in the order they were made.
    ops: SmallVec<[Range<Counter>; 1]>,
    /// Per map, the value (`None`: absent) each key the step changed
    /// goes back to.
    maps: BTreeMap<String, BTreeMap<String, Option<Value>>>,
    selection: Vec<Cursor>,
    /// When it was pushed (ms), for merging.
    at: u64,
}

impl Step {
    /// An empty step.
    fn new(selection: Vec<Cursor>, at: u64) -> Step {
        Step {
            ops: SmallVec::new(),
            maps: BTreeMap::new(),
            selection,
            at,
        }
    }

    /// Adds a later local commit's ops to the step.
    fn add(&mut self, ops: &Range<Counter>) {
        if ops.is_empty() {
            return;
        }
        match self.ops.last_mut() {
            Some(last) if last.end == ops.start => last.end = ops.end,
            _ => self.ops.push(ops.clone()),
        }
    }

    /// Adds the values a later local commit's map writes replaced: a
    /// key's earlier value wins, it is what the whole step goes back to.
    fn add_maps(&mut self, maps: &[(String, String, Option<Value>)]) {
        for (map, key, value) in maps {
            let keys = self.maps.entry(map.clone()).or_default();
            keys.entry(key.clone()).or_insert_with(|| value.clone());
        }
    }
}

type Clock = Box<dyn Fn() -> u64 + Send + Sync>;

struct State {
    /// Oldest first: the oldest go when there are too many.
    undo: VecDeque<Step>,
    redo: Vec<Step>,
    merge_interval_ms: u64,
    max_steps: usize,
    exclude: Vec<String>,
    /// The next local step starts a new step even within the interval.
    checkpoint: bool,
    /// The selection to attach to the next step.
    next_selection: Vec<Cursor>,
    /// This manager is undoing or redoing now: the commit is its own (it
    /// records the step itself).
    applying: bool,
    /// This peer's ops of excluded commits: a map key they wrote last is
    /// not written back.
    excluded_ops: Vec<Range<Counter>>,
    clock: Clock,
}

impl State {
    fn excluded(&self, origin: Option<&str>) -> bool {
        origin.is_some_and(|o| self.exclude.iter().any(|p| o.starts_with(p.as_str())))
    }

    fn on_commit(&mut self, c: &Committed<'_>) {
        match c.trigger {
            EventTrigger::Local if !self.excluded(c.origin) => self.push_local(c),
            // Its own undo or redo: recorded by the manager.
            EventTrigger::Undo | EventTrigger::Redo if self.applying => {}
            // Excluded commits, another manager's undo or redo: not ours
            // to undo; a map key they write is theirs.
            _ => match self.excluded_ops.last_mut() {
                _ if c.ops.is_empty() => {}
                Some(last) if last.end == c.ops.start => last.end = c.ops.end,
                _ => self.excluded_ops.push(c.ops.clone()),
            },
        }
    }

    fn push_local(&mut self, c: &Committed<'_>) {
        if c.ops.is_empty() {
            return;
        }
        // The clock is read only to merge steps.
        let now = if self.merge_interval_ms > 0 {
            (self.clock)()
        } else {
            0
        };
        self.redo.clear();
        let merge = !self.checkpoint
            && self.merge_interval_ms > 0
            && self
                .undo
                .back()
                .is_some_and(|s| now.saturating_sub(s.at) < self.merge_interval_ms);
        self.checkpoint = false;
        if merge {
            if let Some(top) = self.undo.back_mut() {
                top.add(&c.ops);
                top.add_maps(&c.maps);
                top.at = now;
                self.next_selection.clear();
                return;
            }
        }
        let mut step = Step::new(std::mem::take(&mut self.next_selection), now);
        step.add(&c.ops);
        step.add_maps(&c.maps);
        self.undo.push_back(step);
        self.trim();
    }

    fn trim(&mut self) {
        while self.undo.len() > self.max_steps {
            self.undo.pop_front();
        }
    }
}

/// Exact undo and redo of one document's local edits: undoing a step
/// cancels exactly this peer's ops of that step, by id, leaving edits
/// other peers made concurrently or later in place, and is itself a set of
/// ordinary new ops that sync to every peer (see the module doc):
/// - typed text is deleted, wherever it is now;
/// - deleted text comes back in place, with the marks it had, unless
///   another peer deleted it too (it stays deleted then);
/// - a mark or unmark is cancelled: it styles nothing, also on text that
///   grew into it, and other marks of its key show as if it had never
///   been made;
/// - map writes (and container deletes, which write a map) are written
///   back, unless a later write took the key.
///
/// Redo cancels the undo's ops in turn. Consecutive commits within a
/// merge interval form one step (unless a [`UndoManager::checkpoint`]
/// separates them); commits whose origin starts with an excluded prefix
/// are not undone (they are treated like a peer's edits). The app may
/// register the selection before a step ([`UndoManager::set_selection`]);
/// undo and redo return those cursors. Steps hold op ids: importing costs
/// nothing per stored step, and [`Doc::checkout`] keeps the stacks.
///
/// A manager works on the document it was made for: [`UndoManager::undo`]
/// with a document of another peer is [`Error::ForeignDocument`].
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
    /// The peer whose ops the steps are.
    peer: PeerId,
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
            undo: VecDeque::new(),
            redo: Vec::new(),
            merge_interval_ms: 0,
            max_steps: 100,
            exclude: Vec::new(),
            checkpoint: false,
            next_selection: Vec::new(),
            applying: false,
            excluded_ops: Vec::new(),
            clock: Box::new(clock),
        }));
        // Undoing a delete asks which other deletes cover its chars: the
        // index that answers is built now, once, and imports keep it.
        doc.index_deleters();
        let s = Arc::clone(&state);
        let subscription = doc.subscribe_commits(Arc::new(move |committed| {
            s.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .on_commit(committed);
        }));
        UndoManager {
            state,
            peer: doc.peer_id(),
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

    /// Registers the selection before the next step (the cursors must
    /// resolve in `doc` now): undoing that step returns them, and redoing
    /// it returns them too. Cursors name chars by id, so they point where
    /// those chars are when the step comes back.
    ///
    /// # Errors
    ///
    /// As [`Doc::cursor_pos`] for a cursor that does not resolve.
    pub fn set_selection(&mut self, doc: &Doc, cursors: &[Cursor]) -> Result<()> {
        for c in cursors {
            doc.cursor_pos(c)?;
        }
        self.lock().next_selection = cursors.to_vec();
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
    /// nothing to undo, else the selection registered for the step. Costs
    /// what the step holds, whatever happened since (plus, with event
    /// subscribers, O(n) of each text it touches).
    ///
    /// # Errors
    ///
    /// [`Error::ForeignDocument`] if `doc` is not this manager's (another
    /// peer id); [`Error::Detached`] while checked out; as
    /// [`Doc::revert_ops`]. The step stays on the stack then.
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
        if doc.peer_id() != self.peer {
            return Err(Error::ForeignDocument);
        }
        doc.commit();
        let (step, excluded) = {
            let s = self.lock();
            let top = if undo { s.undo.back() } else { s.redo.last() };
            match top {
                Some(step) => (step.clone(), s.excluded_ops.clone()),
                None => return Ok(None),
            }
        };
        // Checked before anything changes: a failure leaves the step.
        let first = doc.version().get(self.peer);
        self.lock().applying = true;
        let done = Self::revert(doc, &step, undo, &excluded);
        self.lock().applying = false;
        let back = done?;
        let mut other = Step::new(step.selection.clone(), 0);
        other.add(&(first..doc.version().get(self.peer)));
        other.maps = back;
        let mut guard = self.lock();
        let s = &mut *guard;
        other.at = (s.clock)();
        if undo {
            s.undo.pop_back();
            s.redo.push(other);
        } else {
            s.redo.pop();
            s.undo.push_back(other);
        }
        s.trim();
        Ok(Some(step.selection))
    }

    /// Makes and commits the ops that revert `step`; returns the values
    /// its map writes replaced (what reverting this revert writes back).
    /// A key another peer or an excluded commit (ops `excluded`) wrote
    /// last is left as it is.
    fn revert(
        doc: &mut Doc,
        step: &Step,
        undo: bool,
        excluded: &[Range<Counter>],
    ) -> Result<BTreeMap<String, BTreeMap<String, Option<Value>>>> {
        let trigger = if undo {
            EventTrigger::Undo
        } else {
            EventTrigger::Redo
        };
        doc.revert_ops(&step.ops)?;
        let mut back: BTreeMap<String, BTreeMap<String, Option<Value>>> = BTreeMap::new();
        for (name, keys) in &step.maps {
            for (key, value) in keys {
                let peer = doc.peer_id();
                let taken = doc.map_key_writer(name, key).is_some_and(|w| {
                    w.peer != peer || excluded.iter().any(|r| r.contains(&w.counter))
                });
                if taken {
                    continue;
                }
                let mut map = doc.map(name);
                let now = map.get(key).cloned();
                if now == *value {
                    continue;
                }
                // Writes of a checked-out document failed above already.
                match value {
                    Some(v) => map.set(key, v.clone())?,
                    None => map.delete(key)?,
                }
                back.entry(name.clone())
                    .or_default()
                    .insert(key.clone(), now);
            }
        }
        doc.commit_as(trigger, None);
        Ok(back)
    }
}
