//! Shared helpers of the replay binaries: a counting allocator, memory
//! readings, flattened traces and timing statistics.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use traces::Trace;

/// Counts heap allocations (alloc and realloc calls) of the whole process,
/// and the bytes they hold (live, and the peak since [`reset_heap_peak`]).
pub struct CountingAlloc;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static LIVE: AtomicU64 = AtomicU64::new(0);
static PEAK: AtomicU64 = AtomicU64::new(0);

/// Adds `grow` bytes to the live count (and the peak); then takes `shrink`.
#[inline]
fn track(grow: usize, shrink: usize) {
    let live = LIVE.fetch_add(grow as u64, Ordering::Relaxed) + grow as u64;
    PEAK.fetch_max(live, Ordering::Relaxed);
    LIVE.fetch_sub(shrink as u64, Ordering::Relaxed);
}

// SAFETY: every method forwards to the system allocator with the caller's
// arguments unchanged; the counter is a relaxed atomic with no effect on
// the memory handed out.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        track(layout.size(), 0);
        // SAFETY: same contract as `GlobalAlloc::alloc`, upheld by our caller.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        track(0, layout.size());
        // SAFETY: `ptr` was returned by `System` through this allocator.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // The old block is held until the new one is filled (a move).
        track(new_size, layout.size());
        // SAFETY: `ptr` was returned by `System` through this allocator.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// Heap allocations made so far by the process.
pub fn allocations() -> u64 {
    ALLOCS.load(Ordering::Relaxed)
}

/// Bytes the process holds on the heap now (as asked for, without the
/// allocator's own overhead).
pub fn heap_live() -> u64 {
    LIVE.load(Ordering::Relaxed)
}

/// Starts a new heap peak at the bytes held now; returns them.
pub fn reset_heap_peak() -> u64 {
    let live = LIVE.load(Ordering::Relaxed);
    PEAK.store(live, Ordering::Relaxed);
    live
}

/// The most bytes the heap held since [`reset_heap_peak`] (a realloc
/// counts its old and new blocks together).
pub fn heap_peak() -> u64 {
    PEAK.load(Ordering::Relaxed)
}

/// A field of `/proc/self/status` in KiB (Linux), e.g. `"VmHWM:"`.
pub fn proc_status_kib(key: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|x| x.parse().ok())
}

/// Returns freed heap to the OS and resets the peak-RSS counter, so that a
/// later `VmHWM` reading is the peak of what follows.
pub fn reset_peak_rss() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> i32;
        }
        // SAFETY: glibc's malloc_trim has no preconditions.
        #[allow(unsafe_code)]
        unsafe {
            malloc_trim(0);
        }
    }
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// One patch of a flattened trace: delete `del` chars at `pos`, then insert
/// `text[ins.0..ins.1]`.
#[derive(Clone, Copy, Debug)]
pub struct FlatPatch {
    /// Char position.
    pub pos: u32,
    /// Chars deleted.
    pub del: u32,
    /// Byte range of the inserted text in [`Flat::text`].
    pub ins: (u32, u32),
}

/// A sequential trace as one array of patches and one string, so replay
/// loops touch little memory besides the document's.
pub struct Flat {
    /// The patches in order.
    pub patches: Vec<FlatPatch>,
    /// All inserted text, concatenated.
    pub text: String,
    /// The expected final text.
    pub end_content: String,
}

impl Flat {
    /// Flattens a sequential trace.
    pub fn new(trace: &Trace) -> Flat {
        let mut text = String::new();
        let patches = trace
            .patches()
            .map(|p| {
                let start = text.len() as u32;
                text.push_str(&p.ins);
                FlatPatch {
                    pos: p.pos as u32,
                    del: p.del as u32,
                    ins: (start, text.len() as u32),
                }
            })
            .collect();
        Flat {
            patches,
            text,
            end_content: trace.end_content.clone(),
        }
    }

    /// The inserted text of `p`.
    #[inline]
    pub fn ins(&self, p: &FlatPatch) -> &str {
        &self.text[p.ins.0 as usize..p.ins.1 as usize]
    }

    /// Chars in the final text.
    pub fn end_chars(&self) -> usize {
        self.end_content.chars().count()
    }
}

/// The value of command-line option `opt`: a whole number of at least 1.
///
/// # Errors
///
/// A message for the user when it is missing, not a number, or 0.
pub fn count_arg(opt: &str, value: Option<String>) -> Result<usize, String> {
    let value = value.ok_or_else(|| format!("{opt} needs a value (a whole number)"))?;
    let n: usize = value
        .parse()
        .map_err(|_| format!("{opt}: not a number: {value}"))?;
    if n == 0 {
        return Err(format!("{opt}: must be at least 1, not 0"));
    }
    Ok(n)
}

/// Runs `f` `runs` times and returns the median, minimum and maximum in
/// milliseconds, with the last run's result.
pub fn time_runs<T>(runs: usize, mut f: impl FnMut() -> T) -> (Stats, T) {
    let mut times = Vec::with_capacity(runs);
    let mut last = None;
    for _ in 0..runs.max(1) {
        let t = Instant::now();
        let out = f();
        times.push(t.elapsed().as_secs_f64() * 1e3);
        last = Some(out);
    }
    (Stats::new(times), last.expect("at least one run"))
}

/// Median, min and max of timings in milliseconds.
#[derive(Clone, Copy, Debug)]
pub struct Stats {
    /// Median.
    pub median: f64,
    /// Fastest run.
    pub min: f64,
    /// Slowest run.
    pub max: f64,
}

impl Stats {
    /// Statistics of `times` (non-empty).
    pub fn new(mut times: Vec<f64>) -> Stats {
        times.sort_by(f64::total_cmp);
        let n = times.len();
        let median = if n % 2 == 1 {
            times[n / 2]
        } else {
            (times[n / 2 - 1] + times[n / 2]) / 2.0
        };
        Stats {
            median,
            min: times[0],
            max: times[n - 1],
        }
    }
}

impl std::fmt::Display for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:9.3} ms (min {:.3} ms, max {:.3} ms)",
            self.median, self.min, self.max
        )
    }
}

/// A Weft document as a [`traces::Replica`]: merging goes through
/// exported updates, transactions through the public text API.
pub struct WeftReplica(pub weft::Doc);

impl traces::Replica for WeftReplica {
    type Error = weft::Error;

    fn empty() -> Self {
        WeftReplica(weft::Doc::new())
    }

    fn fork(&self) -> Self {
        WeftReplica(self.0.fork())
    }

    fn merge_from(&mut self, other: &mut Self) -> Result<(), weft::Error> {
        let bytes = other.0.export(weft::ExportMode::Updates {
            from: &self.0.version(),
        })?;
        self.0.import(&bytes)?;
        Ok(())
    }

    fn apply(&mut self, txn: &traces::Txn) -> Result<(), weft::Error> {
        self.0.set_peer_id(u64::from(txn.agent) + 1)?;
        let mut text = self.0.text("text");
        for p in &txn.patches {
            if p.del > 0 {
                text.delete(p.pos, p.del)?;
            }
            if !p.ins.is_empty() {
                text.insert(p.pos, &p.ins)?;
            }
        }
        self.0.commit();
        Ok(())
    }
}

/// Replays a concurrent trace through the public API only (fork, export,
/// import); see [`Trace::replay_concurrent`]. Returns the final document
/// (text `"text"`).
///
/// # Errors
///
/// Any error from Weft (none is expected on a valid trace).
pub fn replay_concurrent(trace: &Trace) -> Result<weft::Doc, weft::Error> {
    trace.replay_concurrent::<WeftReplica>().map(|r| r.0)
}
