//! Group commit: appends that queue while a transaction is committing
//! share the next transaction, so many appends cost one fsync.
//!
//! There is no writer thread: the first appender that finds no commit
//! running becomes the leader, takes the queue (in order, at most
//! `max_batch` rows), commits it, publishes the outcome of every row in
//! it and wakes the others; one of them leads the next batch. A lone
//! writer thus commits its own row with no thread handoff, and under load
//! each fsync carries every row that arrived while the previous one ran.
//!
//! An append enqueues its row and waits for its own outcome, published
//! only after the transaction holding the row committed (or failed: then
//! every row of that transaction gets the error and none is stored). Rows
//! are committed in the order they were enqueued.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::backend::{Backend, NewRow};
use crate::error::Result;

/// Rows that may wait in the queue; more appenders block until it drains.
const QUEUE: usize = 8192;

#[derive(Default)]
struct State {
    queue: VecDeque<(u64, NewRow)>,
    /// Outcomes not yet picked up, by ticket.
    done: HashMap<u64, Result<Option<u64>>>,
    next_ticket: u64,
    committing: bool,
    commits: u64,
}

/// The queue of rows to commit.
pub(crate) struct GroupCommit {
    backend: Arc<dyn Backend>,
    max_batch: usize,
    state: Mutex<State>,
    changed: Condvar,
}

/// The claim on one enqueued row's outcome.
pub(crate) struct Ticket(u64);

impl GroupCommit {
    /// A queue committing at most `max_batch` rows per transaction.
    pub(crate) fn new(backend: Arc<dyn Backend>, max_batch: usize) -> GroupCommit {
        GroupCommit {
            backend,
            max_batch: max_batch.max(1),
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        }
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
            if state.committing {
                state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
                continue;
            }
            // Lead: commit what is queued (our row is in it or was
            // committed by an earlier leader, whose outcome we took above).
            let n = state.queue.len().min(self.max_batch);
            let (tickets, rows): (Vec<u64>, Vec<NewRow>) = state.queue.drain(..n).unzip();
            state.committing = true;
            drop(state);
            let outcome = self.backend.insert_batch(&rows);
            state = self.lock();
            state.committing = false;
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
