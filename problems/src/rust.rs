//! The benchmark programs as plain Rust source (`problems/rust/*.rs`): the text the front end
//! lowers (`jitdiff::front::lower_source`), each file also compiled by rustc in the tests. Same
//! computation and operation order as the IR of `examples/ir/`; where a signature differs from
//! the IR's, the file's header says how.

/// `rosenbrock(x: &[f64]) -> f64`, as `@rosenbrock`.
pub const ROSENBROCK: &str = include_str!("../rust/rosenbrock.rs");
/// `pendulum(params: &[f64], theta0, omega0, dt: f64, steps: usize) -> f64`, as `@pendulum`.
pub const PENDULUM: &str = include_str!("../rust/pendulum.rs");
/// `mlp(w1, b1, w2: &[f64], b2: f64, x, y: &[f64]) -> f64`: `@mlp` with `b2` a scalar.
pub const MLP: &str = include_str!("../rust/mlp.rs");
/// `gmm(alphas, means, icf, x: &[f64], d: usize, wishart_gamma: f64, wishart_m: i64,
/// log_gamma_term: f64, q_diags: &mut [f64], y: &mut [f64]) -> f64`: `@gmm` with its two work
/// arrays passed in (`K d` and `d` entries).
pub const GMM: &str = include_str!("../rust/gmm.rs");
/// An L2-regularised logistic regression loss.
pub const LOGISTIC: &str = include_str!("../rust/logistic.rs");
/// A Lotka–Volterra RK4 parameter fit.
pub const LOTKA_VOLTERRA: &str = include_str!("../rust/lotka_volterra.rs");
