//! L-BFGS (argmin) on Extended Rosenbrock, n = 1,000, from the standard start (-1.2, 1, -1.2, 1, ...)
//! with jitdiff's compiled reverse-mode gradient.
//!
//! ```sh
//! cargo run --release --example rosenbrock_lbfgs [-- N]
//! ```
//!
//! `tests/api/optim_examples.rs` runs [`solve`] in CI.

use jitdiff::front::lower_source;
use jitdiff::optim::Objective;
use jitdiff::optim::argmin::core::{Executor, State, TerminationReason, TerminationStatus};
use jitdiff::optim::argmin::solver::{linesearch::MoreThuenteLineSearch, quasinewton::LBFGS};
use jitdiff::{GradientFn, args};
use jitdiff_problems::rosenbrock::standard_start;
use std::time::{Duration, Instant};

/// What a solve reports.
pub struct Solution {
    /// The minimiser found.
    pub x: Vec<f64>,
    /// The objective there.
    pub cost: f64,
    /// L-BFGS iterations.
    pub iterations: u64,
    /// Gradient evaluations (each also gives the value).
    pub evaluations: u64,
    /// Why the solver stopped.
    pub reason: String,
    /// Derivation and compilation of the gradient.
    pub compile_time: Duration,
    /// The solve.
    pub solve_time: Duration,
}

/// Minimise the n-dimensional Extended Rosenbrock function from the standard start with argmin's
/// L-BFGS (memory 7, More-Thuente line search) on the compiled gradient.
pub fn solve(n: usize) -> Result<Solution, Box<dyn std::error::Error + Send + Sync>> {
    let start = Instant::now();
    let module = lower_source(jitdiff_problems::rust::ROSENBROCK)?; // the model in plain Rust
    let gradient = GradientFn::builder(&module, "rosenbrock").wrt(["x"]).build()?;
    gradient.prepare()?; // compiled now, so that the solve time is the solve's
    let x0 = standard_start(n);
    let objective = Objective::new(&gradient, args![&x0])?;
    let compile_time = start.elapsed();

    let start = Instant::now();
    let solver = LBFGS::new(MoreThuenteLineSearch::new(), 7);
    let result = Executor::new(objective, solver).configure(|state| state.param(x0.clone()).max_iters(10_000)).run()?;
    let solve_time = start.elapsed();

    let state = result.state();
    let reason = match state.get_termination_status() {
        TerminationStatus::Terminated(TerminationReason::SolverConverged) => "converged".to_string(),
        other => format!("{other}"),
    };
    let evaluations = result.problem.problem.as_ref().map_or(0, Objective::evaluations);
    Ok(Solution {
        x: state.get_best_param().cloned().unwrap_or_default(),
        cost: state.get_best_cost(),
        iterations: state.get_iter(),
        evaluations,
        reason,
        compile_time,
        solve_time,
    })
}

fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let n = std::env::args().nth(1).map(|a| a.parse()).transpose()?.unwrap_or(1000);
    let s = solve(n)?;
    let max_error = s.x.iter().fold(0.0f64, |m, &v| m.max((v - 1.0).abs()));
    println!("Extended Rosenbrock, n = {n}, L-BFGS (m = 7) with jitdiff gradients");
    println!("  stopped:          {}", s.reason);
    println!("  iterations:       {}", s.iterations);
    println!("  gradient evals:   {}", s.evaluations);
    println!("  final objective:  {:.3e}", s.cost);
    println!("  max |x_i - 1|:    {max_error:.3e}");
    println!("  compile time:     {:.2} ms", s.compile_time.as_secs_f64() * 1e3);
    println!("  solve time:       {:.2} ms", s.solve_time.as_secs_f64() * 1e3);
    Ok(())
}
