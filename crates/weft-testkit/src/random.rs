//! Seeded runs of the driver for tests ([`Random`]): which actions, how
//! many peers and steps, over how many seeds, and what they checked
//! ([`Stats`]).

use crate::converge::{drive, Checks};
use crate::{Action, Rng};

/// What a run checked, counted (a test asserts that its seeds reach
/// what it means to check).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    /// Actions run.
    pub actions: usize,
    /// Replicas compared with the model.
    pub model_checks: usize,
    /// Cursors resolved and compared with the model.
    pub cursor_checks: usize,
    /// Versions checked out during the run.
    pub checkouts: usize,
    /// Versions shown again at the end (`fork_at` and the rest).
    pub versions: usize,
    /// Versions after its root a shallow copy showed at the end.
    pub shallow_versions: usize,
    /// Undo and redo steps made by undo managers, and reverts of ranges
    /// of a peer's ops (each checked against the model).
    pub undos: usize,
}

impl std::ops::AddAssign for Stats {
    fn add_assign(&mut self, o: Stats) {
        self.actions += o.actions;
        self.model_checks += o.model_checks;
        self.cursor_checks += o.cursor_checks;
        self.checkouts += o.checkouts;
        self.versions += o.versions;
        self.shallow_versions += o.shallow_versions;
        self.undos += o.undos;
    }
}

/// Seeded runs of the driver: `seeds` seeds from a first one (plus
/// `WEFT_STRESS_SEEDS` more), each `steps` random actions of the kinds
/// `keep` lets through, among `peers` peers.
#[derive(Debug, Clone, Copy)]
pub struct Random {
    /// Number of peers (2 or more).
    pub peers: usize,
    /// Actions per seed.
    pub steps: usize,
    /// Seeds run (`WEFT_STRESS_SEEDS=n` adds n).
    pub seeds: u64,
    /// Which actions a run takes (the others are drawn and dropped); it
    /// may also reshape the ones it keeps (shorten deletes so that texts
    /// grow, say).
    pub keep: fn(&mut Action) -> bool,
    /// What is checked.
    pub checks: Checks,
}

impl Random {
    /// Three peers, `steps` actions of every kind, ten seeds, every check.
    pub fn new(steps: usize) -> Random {
        Random {
            peers: 3,
            steps,
            seeds: 10,
            keep: |_| true,
            checks: Checks::all(),
        }
    }

    /// Runs seeds `first..first + seeds` (plus `WEFT_STRESS_SEEDS`), and
    /// returns what they checked.
    ///
    /// # Panics
    ///
    /// When a run fails, naming the seed (`TRACE=1` prints its actions).
    pub fn run(&self, first: u64) -> Stats {
        let mut stats = Stats::default();
        let extra: u64 = std::env::var("WEFT_STRESS_SEEDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        for seed in first..first + self.seeds + extra {
            let actions = random_actions_where(seed, self.steps, self.keep);
            if std::env::var("TRACE").is_ok() {
                eprintln!("seed {seed}: {actions:#?}");
            }
            let run = std::panic::catch_unwind(|| drive(self.peers, &actions, self.checks, seed));
            match run {
                Ok(s) => stats += s,
                Err(_) => panic!("seed {seed} failed (TRACE=1 prints its actions)"),
            }
        }
        eprintln!("seeds {first}..: {stats:?}");
        stats
    }
}

/// `steps` random actions from `seed` that `keep` lets through, as it
/// reshapes them (at most 64 times as many are drawn).
pub fn random_actions_where(seed: u64, steps: usize, keep: fn(&mut Action) -> bool) -> Vec<Action> {
    let mut out = Vec::with_capacity(steps);
    let mut rng = Rng::new(seed);
    let mut drawn = 0;
    while out.len() < steps && drawn < steps * 64 {
        let batch = crate::random_actions(rng.next_u64(), 4096);
        drawn += batch.len().max(1);
        out.extend(
            batch
                .into_iter()
                .filter_map(|mut a| keep(&mut a).then_some(a)),
        );
    }
    out.truncate(steps);
    out
}

/// A [`Random::keep`] for history tests: text edits (deletes of at most
/// three chars, so texts grow), marks, map writes, commits and the
/// deliveries of updates (no snapshots, forks or damaged bytes).
pub fn history_actions(a: &mut Action) -> bool {
    match a {
        Action::Delete { len, .. } => {
            *len %= 4;
            true
        }
        Action::Insert { .. }
        | Action::Mark { .. }
        | Action::Unmark { .. }
        | Action::MapSet { .. }
        | Action::Commit { .. }
        | Action::Sync { .. }
        | Action::Send { .. }
        | Action::Deliver { .. } => true,
        _ => false,
    }
}
