//! The benchmark problems of jitdiff, each as IR text and as a plain-Rust reference.
//!
//! | module | IR entry | what it exercises |
//! |---|---|---|
//! | [`rosenbrock`] | `@rosenbrock(x)` | a tight loop over a slice |
//! | [`gmm`] | `@gmm(alphas, means, icf, x, d, ...)` | ADBench's GMM: nested loops, log-sum-exp, calls |
//! | [`pendulum`] | `@pendulum(params, theta0, omega0, dt, steps)` | RK4 with a velocity-sign branch in a long loop |
//! | [`mlp`] | `@mlp(w1, b1, w2, b2, x, y)` | a 32 → 64 → 1 tanh perceptron: many parameters, matrix loops |
//! | [`broyden`] | `@broyden(x, r)` | Broyden tridiagonal residuals into an `mslice`: a banded Jacobian |
//!
//! Every problem module holds: the IR text (`*_IR`, the file under `examples/ir/`), the reference
//! primal as a free function on plain slices (the "hand-written Rust" baseline of the benchmarks),
//! an instance struct with a deterministic input generator at the benchmarked sizes, and the
//! conversion of an instance to interpreter arguments. Hand-written gradients belong in the same
//! module, beside the primal they differentiate.
//!
//! ```
//! use jitdiff_problems::{Problem, Rosenbrock};
//! let p = Rosenbrock::new(3);
//! // (-1.2, 1, -1.2): two terms of 100 (1 - 1.44)^2 + 2.2^2 and 100 (-1.2 - 1)^2 + 0^2
//! assert!((p.reference() - (24.2 + 484.0)).abs() < 1e-9);
//! assert_eq!(p.entry(), "rosenbrock");
//! ```

pub mod broyden;
pub mod coupled;
pub mod gmm;
pub mod mgh;
pub mod mlp;
pub mod pendulum;
pub mod rosenbrock;
pub mod rust;
pub mod scaling;

pub use gmm::Gmm;
pub use jitdiff::SplitMix64;
pub use mlp::Mlp;
pub use pendulum::Pendulum;
pub use rosenbrock::Rosenbrock;

use jitdiff_ir::ArgValue;

/// One instance of a benchmark problem: its IR, its inputs, and its reference value.
///
/// Object safe, so benchmarks can loop over `Vec<Box<dyn Problem>>` (see [`standard_problems`]).
pub trait Problem {
    /// A label naming the problem and its sizes, e.g. `"gmm d=2 K=5 n=1000"`.
    fn label(&self) -> String;
    /// The IR module text (parse it with `jitdiff_ir::parse_module`).
    fn ir(&self) -> &'static str;
    /// The name of the function to call in that module (without `@`).
    fn entry(&self) -> &'static str;
    /// The positions of the entry's parameters that a gradient is taken with respect to.
    fn active_params(&self) -> &'static [usize];
    /// The entry's arguments for this instance, in parameter order.
    fn args(&self) -> Vec<ArgValue>;
    /// The value computed by the plain-Rust reference implementation.
    fn reference(&self) -> f64;
    /// The hand-written analytic gradient in plain Rust (the benchmarks' baseline): writes the
    /// flat gradient with respect to [`Problem::active_params`] — the layout of
    /// `GradientFn::value_and_grad` — into `grad` and returns the value. `None` when the problem
    /// has no hand-written gradient.
    fn hand_value_and_grad(&self, grad: &mut [f64]) -> Option<f64> {
        let _ = grad;
        None
    }
    /// Length of the flat gradient with respect to [`Problem::active_params`].
    fn gradient_len(&self) -> usize {
        let args = self.args();
        self.active_params()
            .iter()
            .map(|&i| match &args[i] {
                ArgValue::Slice(v) => v.len(),
                _ => 1,
            })
            .sum()
    }
}

/// Every problem at the sizes the benchmarks use: Rosenbrock n = 10, 1000, 100 000; GMM
/// (d, K, n) = (2, 5, 1000), (10, 25, 1000), (20, 50, 10 000); the pendulum with 1000 steps; the
/// 32 → 64 → 1 MLP on a batch of 256.
pub fn standard_problems() -> Vec<Box<dyn Problem>> {
    let mut problems: Vec<Box<dyn Problem>> = Vec::new();
    for n in Rosenbrock::STANDARD_SIZES {
        problems.push(Box::new(Rosenbrock::new(n)));
    }
    for (d, k, n) in Gmm::STANDARD_SIZES {
        problems.push(Box::new(Gmm::generate(d, k, n, gmm::DEFAULT_SEED)));
    }
    problems.push(Box::new(Pendulum::standard()));
    problems.push(Box::new(Mlp::standard()));
    problems
}

/// Relative difference `|a - b| / max(|a|, |b|)`, 0 when both are equal (including both zero).
/// Used to compare IR results with the references.
pub fn relative_error(a: f64, b: f64) -> f64 {
    if a == b { 0.0 } else { (a - b).abs() / a.abs().max(b.abs()) }
}
