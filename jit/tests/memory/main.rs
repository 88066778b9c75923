//! Memory figures of native code, in their own binary: they read the process's RSS, which tests
//! running in parallel would disturb, and install the counting allocator (and make it refuse
//! allocations). `SERIAL` keeps these tests from overlapping one another.

use std::sync::Mutex;

#[global_allocator]
static ALLOCATOR: jitdiff_jit::alloc_count::CountingAllocator = jitdiff_jit::alloc_count::CountingAllocator;

/// Held by every test here while it measures.
static SERIAL: Mutex<()> = Mutex::new(());

mod modules;
mod tape;

/// A `/proc/self/status` figure in KiB (`VmRSS:` resident now, `VmHWM:` peak resident).
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status.lines().find(|l| l.starts_with(field)).expect("the field's line");
    line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).expect("a number of KiB")
}

/// Resident memory now, in KiB.
fn rss_kib() -> u64 {
    status_kib("VmRSS:")
}
