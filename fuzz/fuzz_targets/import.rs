//! Arbitrary bytes imported into an empty and a non-empty document: `Ok`
//! or `Err`, never a panic, and an `Err` changes nothing. A failed import
//! allocates at most 64 times its input plus 4 MiB at its peak, whatever
//! its bytes claim (counts, nesting, compressed sizes).
#![no_main]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use libfuzzer_sys::fuzz_target;

/// The system allocator, counting the bytes live and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` through this allocator.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from `System` through this allocator.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            grew(new_size);
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Imports `bytes` into a fresh document; if that fails, checks its peak.
fn import_bounded(bytes: &[u8]) {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let failed = weft::Doc::new().import(bytes).is_err();
    let peak = PEAK.load(Ordering::Relaxed) - base;
    let bound = 64 * bytes.len() + (4 << 20);
    assert!(
        !failed || peak <= bound,
        "a failed import of {} bytes allocated {peak} bytes at its peak",
        bytes.len()
    );
}

fuzz_target!(|data: &[u8]| {
    import_bounded(data);
    if data.len() >= 16 && data.starts_with(b"weft") {
        let mut fixed = data.to_vec();
        // The checksum recomputed, as `run_import` does: a forged body.
        let sum = xxhash_rust::xxh3::xxh3_64(&fixed[16..]);
        fixed[8..16].copy_from_slice(&sum.to_le_bytes());
        import_bounded(&fixed);
    }
    weft_testkit::run_import(data);
});
