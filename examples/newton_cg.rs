//! Newton-CG with exact Hessian-vector products against L-BFGS, on the Rosenbrock function from
//! the standard start (-1.2, 1).
//!
//! ```sh
//! cargo run --release --example newton_cg [-- N]
//! ```
//!
//! - **Newton-CG**: argmin's trust-region method with the Steihaug-Toint conjugate-gradient
//!   subproblem (`TrustRegion<Steihaug>`, "trust-region Newton-CG"). Its CG multiplies by the
//!   Hessian through [`HessianAt`]: one JIT-compiled forward-over-reverse product per call
//!   ([`jitdiff::HvpFn`]), exact second derivatives without a dense Hessian or finite differences.
//! - **L-BFGS** (memory 7, More-Thuente line search) on jitdiff's reverse-mode gradient.
//! - For reference, argmin's *line-search* `NewtonCG` on the same products. It does not converge
//!   here, for two reasons in argmin 0.11 (`solver/newton/newton_cg.rs`). Its inner CG stops once
//!   the *squared* residual norm is below `min(1/2, sqrt|g|) |g|`, a squared norm against an
//!   unsquared one, so for small `|g|` it stops after the first CG step and every step is a
//!   steepest-descent step (linear convergence). And where the Hessian is indefinite (for
//!   Rosenbrock, the band `y > x^2 + 0.005` just above the valley floor) it also falls back to the
//!   first CG iterate, so the iterates zig-zag across the valley. The trust region instead follows
//!   negative curvature to its boundary and solves the Newton system to a relative residual of
//!   1e-9, so it converges quadratically.
//!
//! Newton-CG and L-BFGS stop at the same rule, `|grad f| < TOLERANCE`. `N` (default 2) is the
//! dimension of the Extended Rosenbrock function; from N = 4 on it has a second local minimum
//! (f ≈ 3.99 near x1 ≈ -1), which Newton-CG finds from this start while L-BFGS finds the global
//! one. `tests/api/optim_examples.rs` runs [`compare`] in CI.

use jitdiff::front::lower_source;
use jitdiff::optim::Objective;
use jitdiff::optim::argmin::core::{
    CostFunction, Error, Executor, Gradient, Hessian, IterState, KV, Problem, Solver, State, TerminationReason,
    TerminationStatus,
};
use jitdiff::optim::argmin::solver::linesearch::MoreThuenteLineSearch;
use jitdiff::optim::argmin::solver::newton::NewtonCG;
use jitdiff::optim::argmin::solver::quasinewton::LBFGS;
use jitdiff::optim::argmin::solver::trustregion::{Steihaug, TrustRegion};
use jitdiff::optim::argmin_math::ArgminDot;
use jitdiff::{Arg, GradientFn, HvpFn};
use jitdiff_problems::rosenbrock::standard_start;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Both solvers stop when the gradient norm is below this.
pub const TOLERANCE: f64 = 1e-8;

/// Extended Rosenbrock with value, gradient (jitdiff reverse mode) and Hessian-vector products
/// (jitdiff forward over reverse) for argmin.
pub struct Rosenbrock {
    objective: Objective<'static>,
    hvp: Arc<Hvp>,
}

/// The compiled HVP, shared by every [`HessianAt`] the solver holds.
struct Hvp {
    f: HvpFn,
    /// Products computed.
    count: AtomicU64,
    /// The first failed product: argmin's `dot` cannot return an error, so it waits here.
    failure: Mutex<Option<jitdiff::Error>>,
}

/// The Hessian of [`Rosenbrock`] at `x` as an operator: `h.dot(&v)` is the exact `H(x) v`.
#[derive(Clone)]
pub struct HessianAt {
    hvp: Arc<Hvp>,
    x: Vec<f64>,
}

impl ArgminDot<Vec<f64>, Vec<f64>> for HessianAt {
    fn dot(&self, v: &Vec<f64>) -> Vec<f64> {
        let mut product = vec![0.0; v.len()];
        let result = self.hvp.f.hvp(&mut [Arg::Slice(&self.x)], v, &mut product);
        self.hvp.count.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = result {
            // A zero product reads as "no curvature", which ends the CG loops of argmin at once;
            // `run` then reports the error.
            product.fill(0.0);
            self.hvp.failure.lock().unwrap_or_else(PoisonError::into_inner).get_or_insert(e);
        }
        product
    }
}

impl Rosenbrock {
    /// Compile value-and-gradient and the HVP of the n-dimensional Extended Rosenbrock function.
    pub fn new(n: usize) -> Result<Rosenbrock, Box<dyn std::error::Error + Send + Sync>> {
        let module = lower_source(jitdiff_problems::rust::ROSENBROCK)?; // the model in plain Rust
        // The objective owns its handle: a closure over it, with the objective's caching.
        let gradient = GradientFn::builder(&module, "rosenbrock").wrt(["x"]).build()?;
        let objective = Objective::try_from_fn(n, move |x, g| gradient.value_and_grad(&mut [Arg::Slice(x)], g));
        let f = HvpFn::builder(&module, "rosenbrock").wrt(["x"]).build()?;
        let hvp = Hvp { f, count: AtomicU64::new(0), failure: Mutex::new(None) };
        Ok(Rosenbrock { objective, hvp: Arc::new(hvp) })
    }
}

impl CostFunction for Rosenbrock {
    type Param = Vec<f64>;
    type Output = f64;

    fn cost(&self, x: &Vec<f64>) -> Result<f64, Error> {
        self.objective.cost(x)
    }
}

impl Gradient for Rosenbrock {
    type Param = Vec<f64>;
    type Gradient = Vec<f64>;

    fn gradient(&self, x: &Vec<f64>) -> Result<Vec<f64>, Error> {
        self.objective.gradient(x)
    }
}

impl Hessian for Rosenbrock {
    type Param = Vec<f64>;
    type Hessian = HessianAt;

    fn hessian(&self, x: &Vec<f64>) -> Result<HessianAt, Error> {
        Ok(HessianAt { hvp: Arc::clone(&self.hvp), x: x.clone() })
    }
}

/// Stops a solver that keeps the gradient in its state once `|grad f| < tol` (argmin's trust
/// region has no stopping rule of its own).
#[derive(Clone)]
struct UntilStationary<S> {
    solver: S,
    tol: f64,
}

impl<O, S, H> Solver<O, IterState<Vec<f64>, Vec<f64>, (), H, (), f64>> for UntilStationary<S>
where
    S: Solver<O, IterState<Vec<f64>, Vec<f64>, (), H, (), f64>>,
{
    fn name(&self) -> &str {
        self.solver.name()
    }

    fn init(
        &mut self,
        problem: &mut Problem<O>,
        state: IterState<Vec<f64>, Vec<f64>, (), H, (), f64>,
    ) -> Result<(IterState<Vec<f64>, Vec<f64>, (), H, (), f64>, Option<KV>), Error> {
        self.solver.init(problem, state)
    }

    fn next_iter(
        &mut self,
        problem: &mut Problem<O>,
        state: IterState<Vec<f64>, Vec<f64>, (), H, (), f64>,
    ) -> Result<(IterState<Vec<f64>, Vec<f64>, (), H, (), f64>, Option<KV>), Error> {
        self.solver.next_iter(problem, state)
    }

    fn terminate(&mut self, state: &IterState<Vec<f64>, Vec<f64>, (), H, (), f64>) -> TerminationStatus {
        match state.get_gradient() {
            Some(g) if norm(g) < self.tol => TerminationStatus::Terminated(TerminationReason::SolverConverged),
            _ => self.solver.terminate(state),
        }
    }
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|a| a * a).sum::<f64>().sqrt()
}

/// What one solve reports.
pub struct Run {
    /// The solver.
    pub solver: &'static str,
    /// Outer iterations (for the trust region, rejected steps count too).
    pub iterations: u64,
    /// The objective at the end.
    pub cost: f64,
    /// `|grad f|` at the end.
    pub gradient_norm: f64,
    /// The point reached.
    pub x: Vec<f64>,
    /// Why the solver stopped.
    pub reason: String,
    /// Value-and-gradient evaluations.
    pub evaluations: u64,
    /// Hessian-vector products.
    pub hvps: u64,
    /// The solve (compilation excluded).
    pub time: Duration,
}

/// Run `solver` from the standard start for at most `max_iters` iterations.
fn run<S, H>(
    name: &'static str,
    n: usize,
    solver: S,
    max_iters: u64,
) -> Result<Run, Box<dyn std::error::Error + Send + Sync>>
where
    S: Solver<Rosenbrock, IterState<Vec<f64>, Vec<f64>, (), H, (), f64>>,
    IterState<Vec<f64>, Vec<f64>, (), H, (), f64>: State<Param = Vec<f64>, Float = f64>,
{
    let problem = Rosenbrock::new(n)?;
    let start = Instant::now();
    let result = Executor::new(problem, solver).configure(|s| s.param(standard_start(n)).max_iters(max_iters)).run()?;
    let time = start.elapsed();
    let problem = result.problem.problem.as_ref().ok_or("argmin kept the problem")?;
    if let Some(e) = problem.hvp.failure.lock().unwrap_or_else(PoisonError::into_inner).take() {
        return Err(e.into());
    }
    let state = result.state();
    let x = state.get_best_param().cloned().ok_or("no point")?;
    let mut gradient = vec![0.0; n];
    let cost = problem.objective.value_and_grad(&x, &mut gradient)?;
    let reason = match state.get_termination_status() {
        TerminationStatus::Terminated(TerminationReason::SolverConverged) => "converged".to_string(),
        other => format!("{other}"),
    };
    Ok(Run {
        solver: name,
        iterations: state.get_iter(),
        cost,
        gradient_norm: norm(&gradient),
        x,
        reason,
        evaluations: problem.objective.evaluations(),
        hvps: problem.hvp.count.load(Ordering::Relaxed),
        time,
    })
}

/// Trust-region Newton-CG (exact HVPs) on n-dimensional Extended Rosenbrock until
/// `|grad f| < TOLERANCE`.
pub fn newton_cg(n: usize) -> Result<Run, Box<dyn std::error::Error + Send + Sync>> {
    // At most n CG steps per subproblem: in exact arithmetic CG is done after n.
    let subproblem = Steihaug::new().with_max_iters(n as u64);
    let solver = UntilStationary { solver: TrustRegion::new(subproblem), tol: TOLERANCE };
    run("Newton-CG (trust region, exact HVPs)", n, solver, 1_000)
}

/// L-BFGS (memory 7) on the same problem until `|grad f| < TOLERANCE`.
pub fn lbfgs(n: usize) -> Result<Run, Box<dyn std::error::Error + Send + Sync>> {
    let solver =
        LBFGS::new(MoreThuenteLineSearch::new(), 7).with_tolerance_grad(TOLERANCE)?.with_tolerance_cost(0.0)?;
    run("L-BFGS (m = 7)", n, solver, 10_000)
}

/// argmin's line-search `NewtonCG` on the same HVPs, for at most `max_iters` iterations.
pub fn argmin_newton_cg(n: usize, max_iters: u64) -> Result<Run, Box<dyn std::error::Error + Send + Sync>> {
    run("argmin NewtonCG (line search)", n, NewtonCG::new(MoreThuenteLineSearch::new()), max_iters)
}

/// Newton-CG and L-BFGS on the same problem.
pub fn compare(n: usize) -> Result<[Run; 2], Box<dyn std::error::Error + Send + Sync>> {
    Ok([newton_cg(n)?, lbfgs(n)?])
}

fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let n = std::env::args().nth(1).map(|a| a.parse()).transpose()?.unwrap_or(2);
    println!("Extended Rosenbrock, n = {n}, from (-1.2, 1, ...); stop at |grad f| < {TOLERANCE:e}");
    println!(
        "{:<38} {:>6} {:>11} {:>10} {:>6} {:>6} {:>10}  stopped",
        "solver", "iters", "f", "|grad f|", "evals", "HVPs", "time"
    );
    let [newton, lbfgs] = compare(n)?;
    for r in [newton, lbfgs, argmin_newton_cg(n, 200)?] {
        println!(
            "{:<38} {:>6} {:>11.3e} {:>10.2e} {:>6} {:>6} {:>8.2} ms  {}",
            r.solver,
            r.iterations,
            r.cost,
            r.gradient_norm,
            r.evaluations,
            r.hvps,
            r.time.as_secs_f64() * 1e3,
            r.reason
        );
    }
    Ok(())
}
