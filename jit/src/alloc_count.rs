//! A counting global allocator for tests and benchmarks that assert "no heap allocation per
//! call". It lives here because implementing `GlobalAlloc` needs `unsafe`, which jitdiff keeps
//! inside this crate; a test installs it without writing `unsafe` itself:
//!
//! ```
//! use jitdiff_jit::alloc_count::{CountingAllocator, allocations_on_this_thread};
//! #[global_allocator]
//! static ALLOCATOR: CountingAllocator = CountingAllocator;
//!
//! let before = allocations_on_this_thread();
//! let v = vec![1.0f64; 4];
//! assert!(allocations_on_this_thread() > before);
//! # drop(v);
//! ```
//!
//! Counts are per thread, so tests running in parallel do not see each other's allocations.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    // `const` initialisation: reading it never allocates (which would recurse into the allocator).
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

/// The system allocator, counting allocations (and reallocations) per thread.
pub struct CountingAllocator;

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so the
// `GlobalAlloc` contract holds exactly as it does for `System`; the counter is a thread-local
// `Cell` with const initialisation, so counting neither allocates nor races.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded unchanged; the caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` through this allocator with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded unchanged; the caller upholds `alloc_zeroed`'s contract.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: `ptr` was allocated by `System` with `layout`; forwarded unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

fn count() {
    // `try_with`: during thread teardown the slot may be gone; then the allocation is not counted.
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

/// How many allocations this thread has made since it started (only while
/// [`CountingAllocator`] is the global allocator; otherwise always 0).
pub fn allocations_on_this_thread() -> u64 {
    ALLOCATIONS.try_with(Cell::get).unwrap_or(0)
}
