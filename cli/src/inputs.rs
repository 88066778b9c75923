//! Deterministic inputs for `check` without `--args` and for `bench --sizes`.
//!
//! **The rule.** A function whose name and signature are those of a benchmark problem's entry
//! (`jitdiff_problems`) gets that problem's instance, scaled by the size `n`:
//!
//! | entry | size `n` means | `check` default |
//! |---|---|---|
//! | `@rosenbrock(x)` | `x = standard_start(n)` = (-1.2, 1, -1.2, ...) | n = 100 |
//! | `@gmm(...)` | n data points, d = 2, K = 5 | n = 1000 |
//! | `@pendulum(...)` | n RK4 steps | n = 300 (see below) |
//! | `@mlp(...)` | batch of n samples, 32 → 64 → 1 | n = 64 |
//!
//! and is differentiated with respect to the problem's active parameters. The pendulum's check
//! point has 300 steps, not the benchmark's 1000: by 10 s the Coulomb friction term (a jump in
//! the acceleration at ω = 0) makes the pendulum chatter around rest, and the loss then jumps on
//! parameter scales below the difference step (e.g. by 3e-6 between g/L = 9.81 and 9.81001),
//! where central differences measure the jumps, not the derivative. Any other function
//! gets: every slice parameter `n` elements and every `f64` parameter a value, drawn uniformly
//! from `[0.5, 1.5)` by `SplitMix64` seeded with [`GENERIC_SEED`] (positive and away from 0, so
//! `ln`, `sqrt` and divisions are smooth there); every `i64` parameter the value `n`; every
//! `bool` `false`; `check`'s default is `n = 8`. The generic rule suits functions whose slices
//! all have length `n` and whose integers are lengths.

use super::load::Loaded;
use jitdiff::ir::{ArgValue, Type};
use jitdiff_problems::{Gmm, Mlp, Pendulum, Problem, Rosenbrock, SplitMix64, gmm, mlp};

/// The seed of the generic rule.
pub const GENERIC_SEED: u64 = 0x006a_6974_6469_6666;

/// Inputs chosen for a function.
pub struct Inputs {
    /// One argument per parameter.
    pub args: Vec<ArgValue>,
    /// The problem's active parameters, when a problem instance was used.
    pub wrt: Option<Vec<bool>>,
    /// What was chosen, for the output.
    pub description: String,
}

/// The benchmark problem whose entry `loaded`'s function is, at size `n` (the `check` default
/// when `None`).
pub fn known_problem(loaded: &Loaded, n: Option<usize>) -> Option<Box<dyn Problem>> {
    let problem: Box<dyn Problem> = match loaded.name.as_str() {
        "rosenbrock" => Box::new(Rosenbrock::new(n.unwrap_or(100))),
        "gmm" => Box::new(Gmm::generate(2, 5, n.unwrap_or(1000), gmm::DEFAULT_SEED)),
        "pendulum" => Box::new(Pendulum::with_steps(n.unwrap_or(300))),
        "mlp" => Box::new(Mlp::generate(32, 64, n.unwrap_or(64), mlp::DEFAULT_SEED)),
        _ => return None,
    };
    let params = loaded.params();
    let args = problem.args();
    let fits = args.len() == params.len()
        && args.iter().zip(&params).all(|(a, (_, t))| {
            matches!(
                (a, t),
                (ArgValue::F64(_), Type::F64)
                    | (ArgValue::I64(_), Type::I64)
                    | (ArgValue::Bool(_), Type::Bool)
                    | (ArgValue::Slice(_), Type::Slice)
            )
        })
        && loaded.func().returns == [Type::F64];
    fits.then_some(problem)
}

/// Inputs of size `n` (the `check` default when `None`) by the module's rule.
pub fn default_inputs(loaded: &Loaded, n: Option<usize>) -> Inputs {
    if let Some(problem) = known_problem(loaded, n) {
        let mut wrt = vec![false; loaded.params().len()];
        for &p in problem.active_params() {
            wrt[p] = true;
        }
        return Inputs {
            args: problem.args(),
            wrt: Some(wrt),
            description: format!("the benchmark instance {}", problem.label()),
        };
    }
    let n = n.unwrap_or(8);
    let mut rng = SplitMix64::new(GENERIC_SEED);
    let args = loaded
        .params()
        .iter()
        .map(|(_, t)| match t {
            Type::F64 => ArgValue::F64(rng.uniform_in(0.5, 1.5)),
            Type::I64 => ArgValue::I64(n as i64),
            Type::Bool => ArgValue::Bool(false),
            Type::Slice => ArgValue::Slice((0..n).map(|_| rng.uniform_in(0.5, 1.5)).collect()),
            Type::SliceMut => ArgValue::SliceMut((0..n).map(|_| rng.uniform_in(0.5, 1.5)).collect()),
            Type::F64x(w) => ArgValue::Vector((0..*w).map(|_| rng.uniform_in(0.5, 1.5)).collect()),
        })
        .collect();
    Inputs {
        args,
        wrt: None,
        description: format!("generic inputs of size n = {n} (slices of n values in [0.5, 1.5), integers n)"),
    }
}
