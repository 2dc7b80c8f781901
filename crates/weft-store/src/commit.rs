//! Group commit: appends that queue while a transaction is committing
//! share the next transaction, so many appends cost one fsync.
//!
//! There is no writer thread: an appender that finds no commit running
//! becomes the leader, takes the queued rows (in order, at most
//! `max_batch`), commits them, publishes the outcome of every row and
//! wakes the others. A lone writer thus commits its own row with no thread
//! handoff, and under load each fsync carries every row that arrived while
//! the previous one ran. One commit runs at a time, so the rows of one
//! document commit in queue order. (Measured on PostgreSQL, whose server
//! could flush concurrent commits together, with 8 writers: one commit at
//! a time gave about 10,000-11,000 rows/s in batches of 6.2-6.8; two at
//! once 6,200-8,200 rows/s in batches of 3.5; eight at once 5,100 rows/s,
//! one row each; `examples --bin store`.)
//!
//! A leader gathers before it commits: while some appender is on its way
//! (inside [`GroupCommit::enter`] with no row queued or committing:
//! importing, or answered, its outcome published but not yet picked up,
//! and about to append again), it waits for that row, at most as long as
//! the last commit took (and never more than [`MAX_GATHER`]). A lone
//! writer never waits; eight writers fill one batch instead of
//! alternating between half-full ones. Counting the answered ones is what
//! fills the batch: the leader is the first of a commit's appenders to
//! come back, while the others still sit with their outcomes. Leaving them
//! out gave 5.3-5.6 rows per commit with 8 writers on PostgreSQL (0.45-
//! 0.51x the rate of 8 plain connections); counting them, 7.9 (0.83-0.88x;
//! `examples --bin store`, the same disk and hour).
//!
//! Two commits at once (on two connections, a document's rows never in
//! both) were measured again with this gathering, 8 writers on a
//! document each, medians of 5 rounds: with an fsync of several
//! milliseconds the batches shrink to 5.3 rows and the rate against the
//! same rounds' baselines drops (0.74x 8 plain connections and 5.6x one,
//! against 0.83x and 7.2x one commit at a time); only on a server whose
//! fsync costs nothing (tmpfs, not durable) do they win. One commit at a
//! time stays.
//!
//! An append enqueues its row and waits for its own outcome, published
//! only after the transaction holding the row committed (or failed: then
//! every row of that transaction gets the error and none is stored). Rows
//! are committed in the order they were enqueued.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::backend::{Backend, NewRow};
use crate::error::Result;

/// Rows that may wait in the queue; more appenders block until it drains.
const QUEUE: usize = 8192;

/// The longest a leader waits for appenders on their way.
pub(crate) const MAX_GATHER: Duration = Duration::from_millis(2);

#[derive(Default)]
struct State {
    queue: VecDeque<(u64, NewRow)>,
    /// Outcomes not yet picked up, by ticket.
    done: HashMap<u64, Result<Option<u64>>>,
    next_ticket: u64,
    /// A commit is running.
    committing: bool,
    /// Rows in the running commit.
    in_commit: usize,
    /// Appenders between [`GroupCommit::enter`] and the drop of its guard.
    inside: usize,
    /// A leader is waiting for appenders on their way.
    gathering: bool,
    /// How long the last commit took.
    last_commit: Duration,
    commits: u64,
}

impl State {
    /// Takes the rows of the next batch: the first `max` in queue order.
    fn take(&mut self, max: usize) -> (Vec<u64>, Vec<NewRow>) {
        let n = self.queue.len().min(max);
        self.queue.drain(..n).unzip()
    }

    /// Appenders inside with no row queued or committing: the rows a
    /// leader may still gather. Each appender has at most one row out at
    /// a time. One whose outcome is published but not yet picked up
    /// counts: it is about to append again or to leave (which wakes the
    /// leader), and right after a commit that is most of them.
    fn on_their_way(&self) -> usize {
        self.inside
            .saturating_sub(self.queue.len() + self.in_commit)
    }
}

/// The queue of rows to commit.
pub(crate) struct GroupCommit {
    backend: Arc<dyn Backend>,
    max_batch: usize,
    /// A test knob: sleep before each transaction.
    pause: Duration,
    state: Mutex<State>,
    /// Outcomes were published, a commit slot freed or the queue drained.
    changed: Condvar,
    /// A row was queued or an appender left (for a gathering leader).
    arrived: Condvar,
}

/// The claim on one enqueued row's outcome.
pub(crate) struct Ticket(u64);

/// An appender inside the group commit (see [`GroupCommit::enter`]).
pub(crate) struct Inside<'a>(&'a GroupCommit);

impl Drop for Inside<'_> {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.inside -= 1;
        drop(state);
        self.0.arrived.notify_all();
    }
}

impl GroupCommit {
    /// A queue committing at most `max_batch` rows per transaction,
    /// sleeping `pause` before each (a test knob; zero otherwise).
    pub(crate) fn new(backend: Arc<dyn Backend>, max_batch: usize, pause: Duration) -> GroupCommit {
        GroupCommit {
            pause,
            backend,
            max_batch: max_batch.max(1),
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            arrived: Condvar::new(),
        }
    }

    /// Marks the calling thread as an appender on its way to
    /// [`GroupCommit::submit`] until the guard drops: a leader waits a
    /// little for its row. Hold it for the whole append.
    pub(crate) fn enter(&self) -> Inside<'_> {
        self.lock().inside += 1;
        Inside(self)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is consistent between statements; a panic elsewhere
        // while holding it leaves nothing half-done.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Transactions run so far.
    pub(crate) fn commits(&self) -> u64 {
        self.lock().commits
    }

    /// Enqueues `row`; blocks while the queue is full.
    pub(crate) fn submit(&self, row: NewRow) -> Ticket {
        let mut state = self.lock();
        while state.queue.len() >= QUEUE {
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        state.queue.push_back((ticket, row));
        drop(state);
        self.arrived.notify_all();
        Ticket(ticket)
    }

    /// Blocks until the row's transaction committed: its sequence number,
    /// or `None` if its document was deleted meanwhile. Leads commits
    /// while no one else does.
    pub(crate) fn wait(&self, ticket: Ticket) -> Result<Option<u64>> {
        let mut state = self.lock();
        loop {
            if let Some(outcome) = state.done.remove(&ticket.0) {
                return outcome;
            }
            if state.committing || state.gathering || state.queue.is_empty() {
                state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
                continue;
            }
            // Lead: gather the rows of appenders on their way, then commit
            // the queue (our row is in it, or in a later batch, or was
            // committed by an earlier leader, whose outcome we took above).
            state.gathering = true;
            let deadline = Instant::now() + state.last_commit.min(MAX_GATHER);
            while state.on_their_way() > 0 && state.queue.len() < self.max_batch {
                let now = Instant::now();
                if now >= deadline {
                    break;
                }
                state = self
                    .arrived
                    .wait_timeout(state, deadline - now)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
            state.gathering = false;
            let (tickets, rows) = state.take(self.max_batch);
            state.committing = true;
            state.in_commit += rows.len();
            drop(state);
            if !self.pause.is_zero() {
                std::thread::sleep(self.pause);
            }
            let started = Instant::now();
            let outcome = self.backend.insert_batch(&rows);
            let took = started.elapsed();
            state = self.lock();
            state.committing = false;
            state.in_commit -= rows.len();
            state.last_commit = took;
            state.commits += 1;
            match outcome {
                Ok(seqs) => {
                    for (t, seq) in tickets.into_iter().zip(seqs) {
                        state.done.insert(t, Ok(seq));
                    }
                }
                Err(e) => {
                    for t in tickets {
                        state.done.insert(t, Err(e.clone()));
                    }
                }
            }
            self.changed.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(key: crate::backend::DocKey) -> NewRow {
        NewRow {
            key,
            checksum: 0,
            bytes: Vec::new(),
        }
    }

    #[test]
    fn answered_appenders_are_on_their_way_until_they_leave() {
        let mut state = State {
            inside: 8,
            ..State::default()
        };
        // A commit of 8 rows just published its outcomes; one appender
        // picked up its own and queued its next row.
        for t in 0..7 {
            state.done.insert(t, Ok(Some(t)));
        }
        state.queue.push_back((8, row(1)));
        assert_eq!(state.on_their_way(), 7);
        // Two pick up their outcomes and queue again; one leaves.
        state.done.remove(&0);
        state.done.remove(&1);
        state.queue.push_back((9, row(2)));
        state.queue.push_back((10, row(3)));
        state.done.remove(&2);
        state.inside -= 1;
        assert_eq!(state.on_their_way(), 4);
        // Rows being committed are not on their way.
        let (_, rows) = state.take(8);
        state.in_commit += rows.len();
        assert_eq!(state.on_their_way(), 4);
    }

    #[test]
    fn a_batch_takes_the_queue_in_order_up_to_its_size() {
        let mut state = State::default();
        for (t, key) in [(0, 1), (1, 2), (2, 1), (3, 3)] {
            state.queue.push_back((t, row(key)));
        }
        assert_eq!(state.take(3).0, [0, 1, 2]);
        assert_eq!(state.take(3).0, [3]);
        assert!(state.take(3).0.is_empty());
    }
}
