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
//!
//! It can also make large allocations fail on one thread ([`fail_allocations_over`]), to test
//! that running out of memory is reported as an error rather than an abort.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    // `const` initialisation: reading it never allocates (which would recurse into the allocator).
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    static LIMIT: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// Does this thread refuse allocations of `size` bytes?
fn refused(size: usize) -> bool {
    LIMIT.try_with(|l| size > l.get()).unwrap_or(false)
}

/// The system allocator, counting allocations (and reallocations) per thread.
pub struct CountingAllocator;

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, or returns
// null (which the `GlobalAlloc` contract allows to signal failure) without touching memory, so
// the contract holds exactly as it does for `System`; the counter and the limit are thread-local
// `Cell`s with const initialisation, so reading them neither allocates nor races.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        if refused(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded unchanged; the caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` through this allocator with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        if refused(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded unchanged; the caller upholds `alloc_zeroed`'s contract.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        if refused(new_size) {
            // A failed `realloc` leaves the old block untouched, as the contract requires.
            return std::ptr::null_mut();
        }
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

/// Make every allocation or reallocation of more than `bytes` bytes on this thread fail (return
/// null) until the returned guard drops. Only while [`CountingAllocator`] is the global
/// allocator. Code that does not expect failure (`Vec::push`) aborts on a refused allocation, so
/// keep the guard around exactly the code under test.
///
/// ```
/// use jitdiff_jit::alloc_count::{CountingAllocator, fail_allocations_over};
/// #[global_allocator]
/// static ALLOCATOR: CountingAllocator = CountingAllocator;
///
/// let mut v: Vec<u8> = Vec::new();
/// {
///     let _limit = fail_allocations_over(1024);
///     assert!(v.try_reserve(4096).is_err());
/// }
/// assert!(v.try_reserve(4096).is_ok());
/// ```
pub fn fail_allocations_over(bytes: usize) -> AllocationLimit {
    let previous = LIMIT.with(|l| l.replace(bytes));
    AllocationLimit { previous }
}

/// Restores the previous limit when dropped; see [`fail_allocations_over`].
#[derive(Debug)]
#[must_use = "the limit is lifted when the guard drops"]
pub struct AllocationLimit {
    previous: usize,
}

impl Drop for AllocationLimit {
    fn drop(&mut self) {
        let previous = self.previous;
        let _ = LIMIT.try_with(|l| l.set(previous));
    }
}
