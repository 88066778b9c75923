//! The library end to end, through its public API: one test binary (each module below was a
//! binary of its own; linking 40-odd binaries dominated a cold `cargo test`). Separate binaries
//! remain for what must run alone: the random-program harness and the IR file tests (their own
//! runners, `harness = false`) and the memory figures of `tests/resources.rs` (process RSS, which
//! other tests running in parallel would disturb).

// Counts this thread's allocations, for the tests that assert a call allocates nothing
// (`no_alloc`, `forward_api`, `reverse_api`); other threads' allocations do not disturb them.
#[global_allocator]
static ALLOCATOR: jitdiff::jit::alloc_count::CountingAllocator = jitdiff::jit::alloc_count::CountingAllocator;

mod fixtures;

mod bad_input;
mod checkpoint;
mod errors;
mod examples;
mod fault_locations;
mod fd;
mod forward;
mod forward_api;
mod forward_jit;
mod forward_shadow;
mod fused;
mod fuzz_corpus;
mod gradient_modes;
mod hand_gradients;
mod hvp;
mod jit_examples;
mod layering;
mod model_examples;
mod nested;
mod no_alloc;
mod no_panic;
mod nondifferentiable;
mod optim;
mod optim_examples;
mod parallel;
mod reverse;
mod reverse_api;
mod reverse_state;
mod rules;
mod rust_functions;
mod skip;
mod sparse;
mod tables;

/// Whether two gradients agree to rounding: each pair of entries within 8 units in the last
/// place of the larger. The fused `value_and_grad` runs a reversed loop forward, fused with the
/// loop it reverses (`ad/src/fuse.rs`), so its sums into one entry come in the other order than
/// `vjp`'s: the same terms, added in another order.
pub(crate) fn agree_to_rounding(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(&x, &y)| x.to_bits() == y.to_bits() || (x - y).abs() <= 8.0 * f64::EPSILON * x.abs().max(y.abs()))
}
