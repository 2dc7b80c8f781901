//! Where Weft reads the clock and fresh randomness, so that it runs where
//! the standard library has neither.
//!
//! Weft reads the wall clock for presence timeouts, undo's merge interval
//! and [`crate::CommitOptions::timestamp_now`], and mixes fresh entropy
//! into the random peer id of [`crate::Doc::new`] and [`crate::Doc::fork`].
//! On every target with an operating system it uses `std::time::SystemTime`
//! and the hasher keys of `std`. On `wasm32-unknown-unknown` (a browser
//! or Node.js) the standard library has no clock (`SystemTime::now`
//! panics there) and no randomness, so the embedder installs both: the
//! `weft-wasm` crate installs JavaScript's `Date.now` and
//! `crypto.getRandomValues` before anything else runs. Until it does,
//! the clock reads 0 and peer ids come from a counter, so two pages
//! would pick the same ids: install a source before creating documents.
//!
//! A source set here replaces the default on every target, which also
//! serves tests that want a fixed clock. Both are process-wide.
//!
//! # Examples
//!
//! ```
//! fn fixed_clock() -> u64 {
//!     1_700_000_000_000
//! }
//! weft::platform::set_clock(fixed_clock);
//! assert_eq!(weft::platform::now_ms(), 1_700_000_000_000);
//! ```

use std::sync::RwLock;

/// A source of milliseconds since the Unix epoch.
pub type ClockFn = fn() -> u64;
/// A source of 64 fresh random bits.
pub type EntropyFn = fn() -> u64;

static CLOCK: RwLock<Option<ClockFn>> = RwLock::new(None);
static ENTROPY: RwLock<Option<EntropyFn>> = RwLock::new(None);

/// Makes Weft read the wall clock (milliseconds since the Unix epoch)
/// from `clock` from now on, in place of the system clock.
pub fn set_clock(clock: ClockFn) {
    *CLOCK.write().unwrap_or_else(|e| e.into_inner()) = Some(clock);
}

/// Makes Weft mix 64 bits from `entropy` into every random peer id it
/// picks from now on (with the process-local sources it always uses).
pub fn set_entropy(entropy: EntropyFn) {
    *ENTROPY.write().unwrap_or_else(|e| e.into_inner()) = Some(entropy);
}

/// Milliseconds since the Unix epoch: by the clock set with
/// [`set_clock`], else by the system clock (0 before the epoch, and 0 on
/// `wasm32-unknown-unknown`, which has none).
pub fn now_ms() -> u64 {
    if let Some(clock) = *CLOCK.read().unwrap_or_else(|e| e.into_inner()) {
        return clock();
    }
    system_now_ms()
}

/// 64 bits from the source set with [`set_entropy`], if one is.
pub(crate) fn entropy() -> Option<u64> {
    let source = *ENTROPY.read().unwrap_or_else(|e| e.into_inner());
    source.map(|f| f())
}

/// Nanoseconds since the Unix epoch by the system clock, a cheap source
/// of varying bits for peer ids (0 where there is no clock).
pub(crate) fn system_now_nanos() -> u128 {
    #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
    {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    }
    #[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
    {
        0
    }
}

fn system_now_ms() -> u64 {
    u64::try_from(system_now_nanos() / 1_000_000).unwrap_or(u64::MAX)
}
