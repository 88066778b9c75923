//! Minimising a failing case with proptest's shrinking: the generator's choice streams are a
//! `ValueTree` (`StreamsTree`) whose `simplify`/`complicate` steps drop functions, statements
//! and choices; the predicate is "the same check still fails".

use super::case::Case;
use super::checks::{Failure, check};
use jitdiff::ir::arbitrary::StreamsTree;
use proptest::strategy::ValueTree;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Run the checks on `case`, turning a panic (in a transform, the JIT or the generator) into a
/// failure of check `"no panic"`.
pub fn run_checks(case: impl FnOnce() -> Case, strict: bool) -> Result<super::checks::Coverage, Failure> {
    match catch_unwind(AssertUnwindSafe(|| check(&case(), strict))) {
        Ok(r) => r,
        Err(payload) => {
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a panic with a non-string payload".into());
            Err(Failure { check: "no panic", message })
        }
    }
}

/// Shrink `tree` (whose current value made `make` build a case failing with `failure`) to a
/// smallest case that fails the same check. Returns its choice streams, its failure and the
/// number of candidates tried. Panic messages are silenced while shrinking.
pub fn minimise(
    mut tree: StreamsTree,
    failure: Failure,
    make: impl Fn(&[Vec<u32>]) -> Case,
    max_steps: usize,
    strict: bool,
) -> (Vec<Vec<u32>>, Failure, usize) {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut best = (tree.current(), failure);
    let mut steps = 0;
    if tree.simplify() {
        while steps < max_steps {
            steps += 1;
            let streams = tree.current();
            let outcome = run_checks(|| make(&streams), strict);
            let more = match outcome {
                Err(f) if f.check == best.1.check => {
                    best = (streams, f);
                    tree.simplify()
                }
                _ => tree.complicate(),
            };
            if !more {
                break;
            }
        }
    }
    std::panic::set_hook(hook);
    (best.0, best.1, steps)
}
