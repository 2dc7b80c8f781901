//! [`StoreOptions`]: compaction rule, cache budget, batch size.

use std::time::Duration;

/// How a [`crate::Store`] compacts, caches and batches.
///
/// # Examples
///
/// ```
/// use weft_store::StoreOptions;
///
/// let options = StoreOptions::new()
///     .compaction_ratio(Some(2.0)) // compact when the rows reach 2x the snapshot
///     .cache_bytes(16 << 20);      // keep about 16 MB of documents loaded
/// # let _ = options;
/// ```
#[derive(Debug, Clone)]
pub struct StoreOptions {
    pub(crate) compaction_ratio: Option<f64>,
    pub(crate) compaction_min_bytes: u64,
    pub(crate) cache_bytes: u64,
    pub(crate) max_batch: usize,
    pub(crate) compaction_pause: Duration,
    pub(crate) commit_pause: Duration,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            compaction_ratio: Some(1.0),
            compaction_min_bytes: 16 << 10,
            cache_bytes: 64 << 20,
            max_batch: 1024,
            compaction_pause: Duration::ZERO,
            commit_pause: Duration::ZERO,
        }
    }
}

impl StoreOptions {
    /// The defaults: compact when the rows since the snapshot reach the
    /// snapshot's size (and at least 16 KiB), a 64 MB cache, up to 1024
    /// appends per commit.
    pub fn new() -> Self {
        StoreOptions::default()
    }

    /// Compact a document in the background once the bytes of its rows
    /// since the snapshot reach `ratio` times the snapshot's size (the
    /// automerge-repo rule is 1.0); `None` never compacts by itself
    /// ([`crate::Store::compact`] still does).
    pub fn compaction_ratio(mut self, ratio: Option<f64>) -> Self {
        self.compaction_ratio = ratio.filter(|r| r.is_finite() && *r >= 0.0);
        self
    }

    /// Do not compact while the rows since the snapshot hold fewer bytes
    /// than this (small documents stay a few rows).
    pub fn compaction_min_bytes(mut self, bytes: u64) -> Self {
        self.compaction_min_bytes = bytes;
        self
    }

    /// The budget of the cache of loaded documents, in stored bytes
    /// (snapshot plus rows) of the documents held; the least recently
    /// used go first. A document in use stays, even if larger.
    pub fn cache_bytes(mut self, bytes: u64) -> Self {
        self.cache_bytes = bytes;
        self
    }

    /// At most this many appends share one transaction (at least 1).
    pub fn max_batch(mut self, rows: usize) -> Self {
        self.max_batch = rows.max(1);
        self
    }

    /// For tests only: sleep this long between the steps of each
    /// compaction (read, build, write), so that a test can kill the
    /// process in the middle of one.
    #[doc(hidden)]
    pub fn compaction_pause(mut self, pause: Duration) -> Self {
        self.compaction_pause = pause;
        self
    }

    /// For tests only: sleep this long before each group commit's
    /// transaction, so that a test can act while appends are in flight.
    #[doc(hidden)]
    pub fn commit_pause(mut self, pause: Duration) -> Self {
        self.commit_pause = pause;
        self
    }

    /// Whether rows of `tail` bytes after a snapshot of `snapshot` bytes
    /// call for a compaction.
    pub(crate) fn wants_compaction(&self, snapshot: u64, tail: u64) -> bool {
        let Some(ratio) = self.compaction_ratio else {
            return false;
        };
        tail >= self.compaction_min_bytes && tail as f64 >= ratio * snapshot as f64
    }
}
