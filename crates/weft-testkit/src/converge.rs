//! The one random multi-peer driver ([`run_converge`] for the fuzz
//! target, [`Random`] for seeded tests). Peers edit, mark, write maps,
//! embeds and blocks, delete containers, undo and redo (each replica's
//! `UndoManager` against a model of its stacks, `crate::undo`), and sync
//! through updates and snapshots, sent directly or through a network
//! that reorders, delays, duplicates and re-sends; every replica is
//! compared with the reference model whenever what it holds changes, and
//! at the end they must all agree.
//!
//! The model of a replica is kept as every network keeps it: one pool
//! ([`RefDoc`]) logs every op any peer ever made, in the order they were
//! made (a causal order); whenever a replica's version changes (a local
//! edit, an import, the release of a pending update) its own model takes
//! from the pool the ops that version holds ([`RefDoc::catch_up`]).
//! Whatever way the ops arrived (pending, stale, duplicated, a snapshot
//! into a live document, a fork), the replica must then show what the
//! model shows.

use weft::{
    CommitOptions, Cursor, Delta, Doc, ExportMode, Frontiers, OpId, Side, Value, VersionVector,
};

use crate::action::{config, edit, new_doc, Action};
use crate::network::{corrupt, deliver, snapshot_round_trip, sync, sync_all, Network};
use crate::random::{random_actions_where, Stats};
use crate::undo::Undoer;
use crate::{full, map_contents, Mirror, RefDoc, Rng};

/// What a run checks besides convergence and the event mirrors.
#[derive(Debug, Clone, Copy)]
pub struct Checks {
    /// Every replica equals the reference model (text, styles, embeds,
    /// blocks, maps, version) whenever what it holds changes.
    pub model: bool,
    /// Cursors made at random places resolve on every replica where the
    /// model puts their char.
    pub cursors: bool,
    /// Replicas check out versions they held and stay detached for a
    /// while, receiving imports, then come back.
    pub checkouts: bool,
    /// At the end, the versions replicas held are shown again through
    /// `fork_at`, `checkout`, `SnapshotAt`, diffs, version math,
    /// `revert_to` and the history re-sent change by change, each against
    /// the model at that version.
    pub versions: bool,
    /// After the actions, two shallow replicas (one trimmed at a version
    /// replicas held, one trimmed from it) join, edit and sync with the
    /// others for a while: all converge, with the same history after the
    /// root; the shallow one shows the versions after its root as the
    /// full replica does, or refuses what needs the trimmed history.
    pub shallow: bool,
}

impl Checks {
    /// Every check.
    pub fn all() -> Checks {
        Checks {
            model: true,
            cursors: true,
            checkouts: true,
            versions: true,
            shallow: true,
        }
    }

    /// Only the reference model (besides convergence and the event
    /// mirrors).
    pub fn model_only() -> Checks {
        Checks {
            model: true,
            cursors: false,
            checkouts: false,
            versions: false,
            shallow: false,
        }
    }
}

/// The fuzz target's question: `peers` (2..=5 by `2 + peers % 4`)
/// documents run `actions` with every [`Checks`] on (the random choices
/// the checks make come from the input's size).
///
/// # Panics
///
/// When a replica differs from the model, from its events or from the
/// others: that is the bug the fuzzer looks for.
pub fn run_converge(peers: u8, actions: &[Action]) {
    let seed = u64::from(peers) | (actions.len() as u64) << 8;
    drive(2 + usize::from(peers % 4), actions, Checks::all(), seed);
}

/// `peers` documents run `actions` and sync through updates and
/// snapshots, sent directly or through a network that reorders, delays,
/// duplicates and re-sends (whole histories, stale and future versions,
/// op ranges), and through damaged bytes that must be refused without a
/// trace; `checks` say what else is checked, `seed` drives the random
/// choices the checks make. At the end all must hold identical text,
/// deltas, maps, versions, frontiers, commit messages and history (every
/// op's id, Lamport timestamp and deps), with their internal invariants
/// intact, and no update may be left pending unless the ops it waits for
/// were lost with a replaced peer.
///
/// # Panics
///
/// When they do not.
pub fn drive(peers: usize, actions: &[Action], checks: Checks, seed: u64) -> Stats {
    assert!(peers >= 2, "at least two peers");
    let mut d = Driver::new(peers, checks, seed);
    for (step, action) in actions.iter().enumerate() {
        d.step = step;
        d.act(action);
    }
    if checks.shallow && checks.model {
        d.join_shallow();
    }
    d.stats.set(Stats {
        actions: actions.len(),
        ..d.stats.get()
    });
    d.finish()
}

/// What a replica held when it committed: its version and what the model
/// showed then (the replica was checked to show the same).
#[derive(Clone)]
pub(crate) struct Recorded {
    pub(crate) version: VersionVector,
    pub(crate) delta: Vec<Delta>,
    pub(crate) maps: Vec<(String, Vec<(String, Value)>)>,
    pub(crate) utf16_len: usize,
}

impl Recorded {
    fn of(version: VersionVector, model: &RefDoc) -> Recorded {
        Recorded {
            version,
            delta: model.to_delta(),
            maps: model.map_contents(),
            utf16_len: model.len_utf16(),
        }
    }
}

/// Most versions kept per peer (for checkouts) and in all (for the end).
const PAST_CAP: usize = 8;
const RECORDED_CAP: usize = 24;
/// Most cursors followed at once.
const CURSOR_CAP: usize = 6;

pub(crate) struct Driver {
    pub(crate) docs: Vec<Doc>,
    pub(crate) models: Vec<RefDoc>,
    /// Per replica, how far into the pool's log its model caught up.
    caught: Vec<usize>,
    mirrors: Vec<Mirror>,
    /// Per replica, its undo manager and the model of its stacks.
    pub(crate) undoers: Vec<Undoer>,
    /// Every op any peer made, in the order they were made.
    pub(crate) pool: RefDoc,
    net: Network,
    checks: Checks,
    rng: Rng,
    /// Cursors and the id of the char each sticks to (per the model).
    cursors: Vec<(Cursor, Option<(u64, u32)>)>,
    /// Per replica, versions it held (with what it showed).
    past: Vec<Vec<Recorded>>,
    /// Versions any replica held, for the end.
    recorded: Vec<Recorded>,
    /// Per replica, the version a shallow one was trimmed at.
    roots: Vec<Option<VersionVector>>,
    next_peer: u64,
    pub(crate) step: usize,
    stats: std::cell::Cell<Stats>,
}

impl Driver {
    pub(crate) fn new(n: usize, checks: Checks, seed: u64) -> Driver {
        let mut docs: Vec<Doc> = (1..=n as u64).map(new_doc).collect();
        let mirrors = docs.iter_mut().map(Mirror::attach).collect();
        let models: Vec<RefDoc> = (1..=n as u64).map(RefDoc::new).collect();
        let undoers = docs
            .iter_mut()
            .zip(&models)
            .map(|(d, m)| Undoer::attach(d, m))
            .collect();
        Driver {
            docs,
            models,
            undoers,
            caught: vec![0; n],
            mirrors,
            pool: RefDoc::new(0),
            net: Network::default(),
            checks,
            rng: Rng::new(seed ^ 0xd21e_5eed),
            cursors: Vec::new(),
            past: (0..n).map(|_| Vec::new()).collect(),
            recorded: Vec::new(),
            roots: vec![None; n],
            next_peer: 100,
            step: 0,
            stats: std::cell::Cell::default(),
        }
    }

    fn n(&self) -> usize {
        self.docs.len()
    }

    pub(crate) fn act(&mut self, action: &Action) {
        if self.checks.cursors && self.rng.chance(10) {
            self.new_cursor();
        }
        if self.checks.checkouts && self.rng.chance(4) {
            self.toggle_checkout();
        }
        self.note_commits();
        self.act_on(action);
        self.note_commits();
    }

    /// Each replica's own ops committed since the last call become a step
    /// of its model undo stack (see [`Undoer::note`]).
    pub(crate) fn note_commits(&mut self) {
        if !self.checks.model {
            return;
        }
        for (u, m) in self.undoers.iter_mut().zip(&self.models) {
            u.note(m);
        }
    }

    /// Peer `i`'s undo manager undoes (`undo`) or redoes its last step,
    /// checked against the model of its stacks.
    pub(crate) fn undo(&mut self, i: usize, undo: bool, action: &dyn std::fmt::Debug) {
        self.attach(i);
        self.docs[i].commit();
        self.note_commits();
        let start = self.models[i].log_len();
        let check = self.checks.model;
        if self.undoers[i].apply(&mut self.docs[i], &mut self.models[i], undo, check) {
            self.count(|s| s.undos += 1);
        }
        if check {
            self.pool.merge_since(&self.models[i], start);
        }
        self.settle(i, action);
        self.record(i);
    }

    /// Peer `i` reverts some of its own ops (see [`Action::Revert`]) on
    /// the document and on the model.
    fn revert(&mut self, i: usize, from: u16, len: u8, action: &Action) {
        self.attach(i);
        let made = self.docs[i].version().get(self.docs[i].peer_id());
        if made == 0 {
            return;
        }
        let start = u32::from(from) % made;
        let ops = start..made.min(start + 1 + u32::from(len % 8));
        self.docs[i]
            .revert_ops(std::slice::from_ref(&ops))
            .expect("a peer reverts ops it made");
        if self.checks.model {
            let at = self.models[i].log_len();
            self.models[i].revert_ops(std::slice::from_ref(&ops));
            self.pool.merge_since(&self.models[i], at);
        }
        self.count(|s| s.undos += 1);
        self.compare(i, action);
    }

    /// Runs one action.
    fn act_on(&mut self, action: &Action) {
        let n = self.n();
        match *action {
            Action::Send { from, to, payload } => {
                let (from, to) = (from as usize % n, to as usize % n);
                if from != to {
                    if let Some(got) = self.net.send(&mut self.docs, from, to, payload) {
                        self.settle(got, action);
                    }
                }
            }
            Action::Deliver { index, duplicate } => {
                if !self.net.waiting.is_empty() {
                    let i = index as usize % self.net.waiting.len();
                    let (to, bytes) = if duplicate {
                        self.net.waiting[i].clone()
                    } else {
                        self.net.waiting.swap_remove(i)
                    };
                    deliver(&mut self.docs, to, &bytes);
                    self.settle(to, action);
                }
            }
            Action::Corrupt {
                from,
                to,
                cut,
                snapshot,
            } => corrupt(
                &mut self.docs,
                from as usize % n,
                to as usize % n,
                cut,
                snapshot,
            ),
            Action::Insert { peer, .. }
            | Action::Delete { peer, .. }
            | Action::Mark { peer, .. }
            | Action::Unmark { peer, .. }
            | Action::MapSet { peer, .. }
            | Action::Embed { peer, .. }
            | Action::Block { peer, .. }
            | Action::DeleteContainer { peer, .. } => {
                let i = peer as usize % n;
                self.attach(i);
                let done = edit(&mut self.docs[i], action);
                if let (Some(done), true) = (done, self.checks.model) {
                    let start = self.models[i].log_len();
                    done.apply(&mut self.models[i]);
                    self.pool.merge_since(&self.models[i], start);
                }
                self.compare(i, action);
            }
            Action::Undo { peer } => self.undo(peer as usize % n, true, action),
            Action::Redo { peer } => self.undo(peer as usize % n, false, action),
            Action::Revert { peer, from, len } => self.revert(peer as usize % n, from, len, action),
            Action::Commit { peer } => {
                let i = peer as usize % n;
                self.commit(i);
                self.settle(i, action);
                self.record(i);
            }
            Action::Sync { from, to } => {
                let (from, to) = (from as usize % n, to as usize % n);
                if from != to {
                    sync(&mut self.docs, from, to);
                    self.settle(to, action);
                }
            }
            Action::SyncAll => {
                sync_all(&mut self.docs);
                for i in 0..n {
                    self.settle(i, action);
                }
            }
            Action::Reimport { peer } => {
                let i = peer as usize % n;
                self.attach(i);
                let bytes = full(&self.docs[i]);
                let mut fresh = new_doc(self.docs[i].peer_id());
                self.mirrors[i] = Mirror::attach(&mut fresh);
                if let Err(e) = fresh.import(&bytes) {
                    panic!(
                        "a full history does not import: {e:?}\n{}",
                        self.docs[i].debug_changes()
                    );
                }
                assert_eq!(
                    fresh.text("t").to_delta(),
                    self.docs[i].text("t").to_delta()
                );
                assert_eq!(fresh.version(), self.docs[i].version());
                self.docs[i] = fresh;
                self.undoers[i] = Undoer::attach(&mut self.docs[i], &self.models[i]);
                self.settle(i, action);
            }
            Action::Snapshot { peer } => {
                let i = peer as usize % n;
                self.attach(i);
                self.docs[i] = snapshot_round_trip(&mut self.docs[i]);
                self.mirrors[i] = Mirror::attach(&mut self.docs[i]);
                self.undoers[i] = Undoer::attach(&mut self.docs[i], &self.models[i]);
                self.settle(i, action);
            }
            Action::SyncSnapshot { from, to } => {
                let (from, to) = (from as usize % n, to as usize % n);
                if from != to {
                    let bytes = self.docs[from]
                        .export(ExportMode::Snapshot)
                        .expect("exports do not fail");
                    self.docs[to]
                        .import(&bytes)
                        .expect("a peer's snapshot imports");
                    self.docs[to].assert_exports_reopen();
                    self.settle(to, action);
                }
            }
            Action::Fork { from, to } => {
                let (from, to) = (from as usize % n, to as usize % n);
                self.attach(from);
                let mut f = self.docs[from].fork();
                f.set_peer_id(self.next_peer).expect("valid id");
                f.config_text_style(config());
                let mut model = self.models[from].clone();
                model.peer = self.next_peer;
                self.next_peer += 1;
                self.mirrors[to] = Mirror::attach(&mut f);
                self.undoers[to] = Undoer::attach(&mut f, &model);
                self.docs[to] = f;
                self.models[to] = model;
                self.caught[to] = self.caught[from];
                self.past[to] = self.past[from].clone();
                self.roots[to] = self.roots[from].clone();
                self.settle(to, action);
            }
        }
    }

    /// Commits peer `i` (now and then with a message and a timestamp).
    fn commit(&mut self, i: usize) {
        if self.rng.chance(15) {
            let k = self.rng.below(1000) as i64;
            let mut options = CommitOptions::new().message(format!("m{k}"));
            if self.rng.chance(50) {
                options = options.timestamp(k - 500);
            }
            self.docs[i].commit_with(options);
        } else {
            self.docs[i].commit();
        }
    }

    /// Brings the model of replica `i` to the version it now holds, then
    /// checks the replica (and its mirrors and cursors) against it.
    fn settle(&mut self, i: usize, what: &dyn std::fmt::Debug) {
        if self.checks.model {
            let latest = self.docs[i].latest_version();
            self.models[i].catch_up(&self.pool, &latest, &mut self.caught[i]);
        }
        self.compare(i, what);
        self.mirrors[i].check(&self.docs[i], what);
        if self.checks.cursors {
            self.check_cursors(i);
        }
    }

    /// Replica `i` against its model (which holds what `i` holds).
    fn compare(&self, i: usize, what: &dyn std::fmt::Debug) {
        if !self.checks.model {
            return;
        }
        self.count(|s| s.model_checks += 1);
        let (doc, model) = (&self.docs[i], &self.models[i]);
        let step = self.step;
        if plain(&doc.latest_version()) != plain(&model.version_vector())
            && std::env::var("TRACE").is_ok()
        {
            eprintln!(
                "weft:\n{}\n{:?}",
                doc.debug_changes(),
                doc.get_text("t").map(|t| t.to_delta())
            );
            eprintln!("model delta: {:?}", model.to_delta());
            eprintln!("model:\n{}", model.dump());
        }
        assert_eq!(
            plain(&doc.latest_version()),
            plain(&model.version_vector()),
            "step {step}, {what:?}: version of replica {i}"
        );
        if doc.is_detached() {
            return;
        }
        let delta = doc.get_text("t").map_or_else(Vec::new, |t| t.to_delta());
        let want = model.to_delta();
        if delta != want && std::env::var("TRACE").is_ok() {
            eprintln!("model:\n{}", model.dump());
        }
        assert_eq!(
            delta, want,
            "step {step}, {what:?}: replica {i} vs the model"
        );
        assert_eq!(
            map_contents(doc),
            model.map_contents(),
            "step {step}, {what:?}: maps of replica {i} vs the model"
        );
    }

    /// Replica `i` back at its latest version, if it was detached.
    fn attach(&mut self, i: usize) {
        if self.docs[i].is_detached() {
            self.docs[i]
                .checkout_to_latest()
                .expect("back to latest works");
            self.settle(i, &"back to latest");
        }
    }

    /// A random replica comes back to its latest version, or checks out
    /// one it held earlier.
    fn toggle_checkout(&mut self) {
        let i = self.rng.below(self.n());
        if self.docs[i].is_detached() {
            self.attach(i);
            return;
        }
        if self.past[i].is_empty() {
            return;
        }
        self.docs[i].commit();
        let k = self.rng.below(self.past[i].len());
        let r = &self.past[i][k];
        let doc = &mut self.docs[i];
        let frontiers = doc.vv_to_frontiers(&r.version).expect("a version it held");
        match doc.checkout(&frontiers) {
            Ok(()) => {}
            // A shallow replica cannot place ops concurrent to its root.
            Err(weft::Error::TrimmedHistory) if self.roots[i].is_some() => return,
            Err(e) => panic!("a version it held: {e:?}"),
        }
        assert_eq!(doc.version(), r.version, "checked out");
        assert_eq!(doc.frontiers(), frontiers, "checked out");
        let delta = doc.get_text("t").map_or_else(Vec::new, |t| t.to_delta());
        assert_eq!(
            delta, r.delta,
            "step {}: checkout of replica {i}",
            self.step
        );
        assert_eq!(map_contents(doc), r.maps, "checkout: maps of replica {i}");
        self.count(|s| s.checkouts += 1);
        self.settle(i, &"checkout");
    }

    /// Records what replica `i` holds after a commit.
    fn record(&mut self, i: usize) {
        if !self.checks.model || self.docs[i].is_detached() {
            return;
        }
        let version = self.docs[i].version();
        let past = &mut self.past[i];
        if past.len() == PAST_CAP {
            past.remove(0);
        }
        past.push(Recorded::of(version.clone(), &self.models[i]));
        let r = Recorded::of(version, &self.models[i]);
        if self.recorded.len() < RECORDED_CAP {
            self.recorded.push(r);
        } else {
            let k = self.rng.below(RECORDED_CAP);
            self.recorded[k] = r;
        }
    }

    /// A cursor at a random place of a random attached replica, checked
    /// to name the char the model puts there and to round-trip its bytes.
    fn new_cursor(&mut self) {
        let i = self.rng.below(self.n());
        if self.docs[i].is_detached() || !self.checks.model {
            return;
        }
        let model = &self.models[i];
        let len = model.len();
        let pos = self.rng.below(len + 1);
        let side = if self.rng.chance(50) {
            Side::Before
        } else {
            Side::After
        };
        let doc = &mut self.docs[i];
        let cursor = match doc.get_text("t") {
            Some(view) if self.rng.chance(50) => view.cursor(pos, side),
            _ => doc.text("t").cursor(pos, side),
        }
        .expect("a cursor in bounds");
        let id = match side {
            Side::Before => pos.checked_sub(1).map(|p| model.char_id(p)),
            Side::After => (pos < len).then(|| model.char_id(pos)),
        };
        assert_eq!(cursor.id(), id.map(|(p, c)| OpId::new(p, c)), "cursor id");
        assert_eq!(
            Cursor::decode(&cursor.encode()).expect("a cursor's bytes decode"),
            cursor
        );
        if self.cursors.len() == CURSOR_CAP {
            let k = self.rng.below(CURSOR_CAP);
            self.cursors[k] = (cursor, id);
        } else {
            self.cursors.push((cursor, id));
        }
    }

    /// Every cursor resolves on attached replica `i` where its model puts
    /// the char (an error where the char is not there).
    fn check_cursors(&self, i: usize) {
        let (doc, model) = (&self.docs[i], &self.models[i]);
        if doc.is_detached() {
            return;
        }
        for (cursor, id) in &self.cursors {
            self.count(|s| s.cursor_checks += 1);
            let got = doc.cursor_pos(cursor);
            if doc.get_text("t").is_none() {
                let unknown = Err(weft::Error::UnknownText("t".into()));
                assert_eq!(got, unknown, "{cursor:?}");
                continue;
            }
            let expected = match (id, cursor.side()) {
                (None, Side::Before) => Some(0),
                (None, Side::After) => Some(model.len()),
                (Some(id), side) => model.cursor_pos(*id, side == Side::Before),
            };
            match expected {
                Some(pos) => assert_eq!(got, Ok(pos), "step {}: {cursor:?}", self.step),
                None => assert!(got.is_err(), "step {}: {cursor:?} at {got:?}", self.step),
            }
        }
    }

    /// Everything arrives everywhere; then a shallow copy of replica 0,
    /// trimmed at a version it held, and a shallow copy of that one join
    /// as two more peers, and everyone edits and syncs for a while.
    fn join_shallow(&mut self) {
        self.deliver_everything();
        let latest = self.docs[0].version();
        let held: Vec<&Recorded> = self
            .recorded
            .iter()
            .filter(|r| latest.includes_all(&r.version))
            .collect();
        // The older of two held versions (more versions come after it).
        let size = |v: &VersionVector| v.iter().map(|(_, c)| u64::from(c)).sum::<u64>();
        let root = if held.is_empty() || self.rng.chance(20) {
            latest
        } else {
            let a = &held[self.rng.below(held.len())].version;
            let b = &held[self.rng.below(held.len())].version;
            if size(a) <= size(b) { a } else { b }.clone()
        };
        let frontiers = self.docs[0].vv_to_frontiers(&root).expect("a held version");
        let Some(first) = shallow_copy(&self.docs[0], &frontiers) else {
            return;
        };
        let shown = crate::time_travel::shallow_views(&self.docs[0], &first, &root, &self.recorded);
        self.count(|s| s.shallow_versions += shown);
        let second = shallow_copy(&first, &first.frontiers())
            .expect("a shallow snapshot at the latest version is never refused");
        for mut s in [first, second] {
            assert_eq!(s.version(), self.docs[0].version(), "a shallow copy");
            s.set_peer_id(self.next_peer).expect("a valid id");
            s.config_text_style(config());
            let mut model = self.models[0].clone();
            model.peer = self.next_peer;
            self.next_peer += 1;
            // Trimmed at nothing, a copy is not shallow.
            let own_root = s.shallow_since().map(|since| {
                self.docs[0]
                    .frontiers_to_vv(&since)
                    .expect("a held version")
            });
            self.roots.push(own_root);
            self.mirrors.push(Mirror::attach(&mut s));
            self.undoers.push(Undoer::attach(&mut s, &model));
            self.docs.push(s);
            self.models.push(model);
            self.caught.push(self.caught[0]);
            self.past.push(Vec::new());
            self.settle(self.n() - 1, &"a shallow copy joins");
        }
        // Edits and syncs only: no export from below the root (and no
        // SyncAll: among five, the end does that). Undo, redo and revert
        // only by the shallow copies: the others' steps may hold ops below
        // the root, which a shallow copy refuses to see cancelled
        // (`TrimmedHistory`, as for ops concurrent to its root).
        let tail = random_actions_where(self.rng.next_u64(), 40, |a: &mut Action| {
            !matches!(
                a,
                Action::Send { .. }
                    | Action::Deliver { .. }
                    | Action::Corrupt { .. }
                    | Action::Fork { .. }
                    | Action::SyncSnapshot { .. }
                    | Action::SyncAll
            )
        });
        let n = self.n();
        for mut action in tail {
            if let Action::Undo { peer } | Action::Redo { peer } | Action::Revert { peer, .. } =
                &mut action
            {
                *peer = (n - 2 + usize::from(*peer) % 2) as u8;
            }
            self.act(&action);
        }
    }

    /// What is still in flight arrives, and everyone gets everything.
    pub(crate) fn deliver_everything(&mut self) {
        for (to, bytes) in std::mem::take(&mut self.net.waiting) {
            deliver(&mut self.docs, to, &bytes);
        }
        for i in 0..self.n() {
            self.attach(i);
        }
        sync_all(&mut self.docs);
        for i in 0..self.n() {
            self.docs[i].commit();
            self.settle(i, &"everything delivered");
        }
    }

    /// What is still in flight arrives, then everyone syncs; all must
    /// agree, with the model too.
    pub(crate) fn finish(mut self) -> Stats {
        self.deliver_everything();
        let roots = std::mem::take(&mut self.roots);
        let (first, rest) = self.docs.split_first_mut().expect("at least two peers");
        first.assert_invariants();
        let delta = first.text("t").to_delta();
        let text = first.text("t").to_string();
        let version = first.version();
        let frontiers: Frontiers = first.frontiers();
        let maps = map_contents(first);
        let names: Vec<String> = first.text_names().map(str::to_owned).collect();
        let history = first.history_runs().expect("a peer's history loads");
        let infos = crate::history::commit_infos(first);
        // Ops lost with a replaced peer are in the pool but nowhere else;
        // without such ops, nothing may be left pending.
        let lost = self.pool.version().iter().any(|&(p, c)| version.get(p) < c);
        for (d, root) in rest.iter_mut().zip(&roots[1..]) {
            d.assert_invariants();
            assert_eq!(d.text("t").to_string(), text, "text diverged");
            assert_eq!(d.text("t").to_delta(), delta, "delta diverged");
            let view = d.get_text("t").map_or_else(Vec::new, |t| t.to_delta());
            assert_eq!(view, delta, "a view reads differently");
            assert_eq!(d.version(), version, "version diverged");
            assert_eq!(d.frontiers(), frontiers, "frontiers diverged");
            assert_eq!(map_contents(d), maps, "maps diverged");
            assert_eq!(d.text_names().collect::<Vec<_>>(), names, "names diverged");
            // A shallow replica holds the history after its root.
            let after = |infos: &crate::history::Infos| match root {
                Some(root) => infos
                    .iter()
                    .filter(|((p, c), _)| *c >= root.get(*p))
                    .map(|(k, v)| (*k, v.clone()))
                    .collect(),
                None => infos.clone(),
            };
            assert_eq!(
                after(&crate::history::commit_infos(d)),
                after(&infos),
                "commit infos diverged"
            );
            // Updates may stay pending when the ops they wait for are gone
            // with a replaced peer, but none that could apply: a snapshot
            // carries the pending set, and its import refuses a ready one.
            let snapshot = d.export(ExportMode::Snapshot).expect("exports do not fail");
            let reopened = Doc::new().import(&snapshot);
            assert!(reopened.is_ok(), "a pending update is ready: {reopened:?}");
            match root {
                Some(root) => {
                    assert_eq!(
                        ops_after(d, root),
                        ops_after(first, root),
                        "history after the root diverged"
                    );
                    // A full replica at the root takes the rest from the
                    // shallow one.
                    let at = first.vv_to_frontiers(root).expect("a held version");
                    let mut full = Doc::new();
                    full.import(
                        &first
                            .export(ExportMode::SnapshotAt(&at))
                            .expect("a held version"),
                    )
                    .expect("a snapshot imports");
                    full.import(
                        &d.export(ExportMode::Updates { from: root })
                            .expect("the history after the root exports"),
                    )
                    .expect("an update imports");
                    assert_eq!(full.text("t").to_delta(), delta, "from a shallow replica");
                    assert_eq!(ops_after(&full, root), ops_after(first, root));
                }
                None => {
                    let h = d.history_runs().expect("a peer's history loads");
                    assert!(h == history, "history diverged:\n{h:?}\n{history:?}");
                }
            }
        }
        for d in &self.docs {
            assert!(
                lost || d.pending_spans().is_empty(),
                "pending with no op lost: {:?}",
                d.pending_spans()
            );
        }
        assert_eq!(
            delta
                .iter()
                .map(|r| match r {
                    Delta::Insert { insert, .. } => insert.as_str(),
                    Delta::Embed { .. } | Delta::Block { .. } => "\u{FFFC}",
                    _ => "",
                })
                .collect::<String>(),
            text
        );
        check_blocks(&self.docs[0]);
        if self.checks.versions && self.checks.model {
            let recorded: Vec<Recorded> = std::mem::take(&mut self.recorded)
                .into_iter()
                .filter(|r| version.includes_all(&r.version))
                .collect();
            crate::time_travel::check(&self.docs, &recorded, &mut self.rng);
            self.count(|s| s.versions += recorded.len());
        }
        self.stats.get()
    }

    pub(crate) fn count(&self, f: impl FnOnce(&mut Stats)) {
        let mut s = self.stats.get();
        f(&mut s);
        self.stats.set(s);
    }
}

/// `doc` trimmed at `at`: its shallow snapshot, imported; `None` when the
/// export refuses that root because [`root_below_a_later_cancel`].
fn shallow_copy(doc: &Doc, at: &Frontiers) -> Option<Doc> {
    let bytes = match doc.export(ExportMode::ShallowSnapshot(at)) {
        Ok(bytes) => bytes,
        Err(e) if root_below_a_later_cancel(&e) => return None,
        Err(e) => panic!("a held version: {e:?}"),
    };
    let mut copy = Doc::new();
    copy.import(&bytes).expect("a shallow snapshot imports");
    Some(copy)
}

/// Whether `e` is the one refusal a shallow snapshot at a held version may
/// give: its root is below an op that a later cancel (an undo or redo made
/// after the root) targets, which the root's stand-in ops cannot show
/// (documented at `ExportMode::ShallowSnapshot`).
pub(crate) fn root_below_a_later_cancel(e: &weft::Error) -> bool {
    matches!(
        e,
        weft::Error::Unsupported { what } if what.contains("a later cancel")
    )
}

/// Every op of `doc` from `since` on: id -> (Lamport, deps), however the
/// changes are cut.
pub(crate) fn ops_after(
    doc: &Doc,
    since: &VersionVector,
) -> std::collections::BTreeMap<(u64, u32), (u32, Vec<OpId>)> {
    let mut out = std::collections::BTreeMap::new();
    for c in doc.changes().expect("a history loads") {
        for (k, counter) in c.id.counters.clone().enumerate() {
            if counter < since.get(c.id.peer) {
                continue;
            }
            let deps = if k == 0 {
                c.deps.iter().collect()
            } else {
                vec![OpId::new(c.id.peer, counter - 1)]
            };
            out.insert((c.id.peer, counter), (c.lamport + k as u32, deps));
        }
    }
    out
}

/// A version vector without zero entries.
fn plain(v: &VersionVector) -> Vec<(u64, u32)> {
    let mut out: Vec<(u64, u32)> = v.iter().filter(|e| e.1 > 0).collect();
    out.sort_unstable();
    out
}

/// The blocks of text "t" cover it in order, and each marker's attributes
/// are its block's.
fn check_blocks(doc: &Doc) {
    let Some(t) = doc.get_text("t") else {
        return;
    };
    let mut at = 0;
    for b in t.blocks() {
        assert_eq!(b.range.start, at, "blocks cover the text");
        at = b.range.end + usize::from(b.marker.is_some());
        if let Some(m) = b.marker {
            assert_eq!(t.block_at(m), Ok(Some(b.attributes.clone())));
        }
    }
    assert_eq!(at, t.len(), "blocks cover the text");
}
