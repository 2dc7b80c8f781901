//! Group commit: one writer thread turns the appends that queued while
//! the previous transaction was committing into one transaction, so many
//! appends share one fsync.
//!
//! An append enqueues its row and blocks on its own reply; the reply is
//! sent only after the transaction holding the row committed (or failed:
//! then every append of that transaction gets the error and nothing of it
//! is stored). Rows of one document are committed in the order they were
//! enqueued. The queue is bounded, so a flood of appends waits instead of
//! growing memory.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::backend::{Backend, NewRow};
use crate::error::{Error, Result};

/// Appends that may wait in the queue.
const QUEUE: usize = 8192;

struct Request {
    row: NewRow,
    reply: SyncSender<Result<Option<u64>>>,
}

/// The writer thread and its queue.
pub(crate) struct GroupCommit {
    queue: Mutex<Option<SyncSender<Request>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    commits: Arc<AtomicU64>,
}

/// The answer to one enqueued row.
pub(crate) struct Ticket(Receiver<Result<Option<u64>>>);

impl Ticket {
    /// Blocks until the row's transaction committed: its sequence number,
    /// or `None` if its document was deleted meanwhile.
    pub(crate) fn wait(self) -> Result<Option<u64>> {
        self.0.recv().unwrap_or(Err(Error::Closed))
    }
}

impl GroupCommit {
    /// Starts the writer thread; at most `max_batch` rows per transaction.
    pub(crate) fn start(backend: Arc<dyn Backend>, max_batch: usize) -> Result<GroupCommit> {
        let (tx, rx) = mpsc::sync_channel::<Request>(QUEUE);
        let commits = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&commits);
        let thread = std::thread::Builder::new()
            .name("weft-store-commit".into())
            .spawn(move || run(&*backend, &rx, max_batch.max(1), &counter))
            .map_err(|_| Error::Closed)?;
        Ok(GroupCommit {
            queue: Mutex::new(Some(tx)),
            thread: Mutex::new(Some(thread)),
            commits,
        })
    }

    /// Transactions run so far.
    pub(crate) fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }

    /// Enqueues `row`; blocks while the queue is full.
    pub(crate) fn submit(&self, row: NewRow) -> Result<Ticket> {
        let (reply, answer) = mpsc::sync_channel(1);
        let queue = self
            .queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .ok_or(Error::Closed)?;
        queue
            .send(Request { row, reply })
            .map_err(|_| Error::Closed)?;
        Ok(Ticket(answer))
    }
}

impl Drop for GroupCommit {
    fn drop(&mut self) {
        // Closing the queue ends the thread once it answered every request.
        self.queue.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(t) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = t.join();
        }
    }
}

fn run(backend: &dyn Backend, rx: &Receiver<Request>, max_batch: usize, commits: &AtomicU64) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < max_batch {
            match rx.try_recv() {
                Ok(r) => batch.push(r),
                Err(_) => break,
            }
        }
        let (rows, replies): (Vec<NewRow>, Vec<_>) =
            batch.into_iter().map(|r| (r.row, r.reply)).unzip();
        let outcome = backend.insert_batch(&rows);
        commits.fetch_add(1, Ordering::Relaxed);
        match outcome {
            Ok(seqs) => {
                for (reply, seq) in replies.into_iter().zip(seqs) {
                    // The appender may have gone (its thread died): fine.
                    let _ = reply.send(Ok(seq));
                }
            }
            Err(e) => {
                for reply in replies {
                    let _ = reply.send(Err(e.clone()));
                }
            }
        }
    }
}
