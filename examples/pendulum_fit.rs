//! Fitting the pendulum's parameters `[g/L, damping, friction]` to noisy observations of its
//! angle, with argmin's L-BFGS on the compiled gradient of a least-squares loss written in IR
//! (`examples/ir/pendulum_fit.ir`: RK4 as in the benchmark problem, a residual every few steps).
//!
//! The observations are simulated in plain Rust from known parameters plus Gaussian noise
//! (SplitMix64), so the fit can be judged: the estimates should lie within a few standard errors
//! (from the Gauss-Newton approximation `σ² (JᵀJ)⁻¹`) of the truth.
//!
//! ```sh
//! cargo run --release --example pendulum_fit
//! ```
//!
//! `tests/api/optim_examples.rs` runs [`fit`] in CI.

use jitdiff::ir::parse_module;
use jitdiff::optim::Objective;
use jitdiff::optim::argmin::core::{Executor, State};
use jitdiff::optim::argmin::solver::{linesearch::MoreThuenteLineSearch, quasinewton::LBFGS};
use jitdiff::{GradientFn, args};
use jitdiff_problems::SplitMix64;
use jitdiff_problems::pendulum::rk4_step;
use std::time::{Duration, Instant};

/// The least-squares loss in IR.
pub const FIT_IR: &str = include_str!("ir/pendulum_fit.ir");

/// The experiment: true parameters, observation schedule, noise and the fit's starting point.
#[derive(Clone, Debug)]
pub struct Experiment {
    /// The parameters the observations are simulated from.
    pub truth: [f64; 3],
    /// Where the fit starts.
    pub start: [f64; 3],
    /// Initial angle and angular velocity (known).
    pub theta0: f64,
    /// Initial angular velocity (known).
    pub omega0: f64,
    /// RK4 step.
    pub dt: f64,
    /// Steps between observations.
    pub steps_per_obs: usize,
    /// Number of observations.
    pub observations: usize,
    /// Standard deviation of the Gaussian noise on each observed angle (radians).
    pub noise: f64,
    /// Seed of the noise.
    pub seed: u64,
}

impl Default for Experiment {
    /// 6 s of swinging observed every 0.1 s with 0.02 rad of noise; the fit starts 8% off in g/L, without damping and with a fifth of the friction.
    fn default() -> Experiment {
        Experiment {
            truth: [9.81, 0.25, 0.5],
            start: [9.0, 0.0, 0.1],
            theta0: 1.0,
            omega0: 0.0,
            dt: 0.01,
            steps_per_obs: 10,
            observations: 60,
            noise: 0.02,
            seed: 0x70656e64,
        }
    }
}

impl Experiment {
    /// The noiseless angles at the observation times for `params` (plain Rust, same RK4 as the IR).
    pub fn predict(&self, params: &[f64; 3]) -> Vec<f64> {
        let mut state = (self.theta0, self.omega0);
        (0..self.observations)
            .map(|_| {
                for _ in 0..self.steps_per_obs {
                    state = rk4_step(state, params, self.dt);
                }
                state.0
            })
            .collect()
    }

    /// The noisy observations.
    pub fn observe(&self) -> Vec<f64> {
        let mut rng = SplitMix64::new(self.seed);
        self.predict(&self.truth).into_iter().map(|theta| theta + self.noise * rng.normal()).collect()
    }
}

/// The outcome of a fit.
#[derive(Clone, Debug)]
pub struct Fit {
    /// The estimated parameters.
    pub params: [f64; 3],
    /// Their standard errors, `sqrt(diag(s² (JᵀJ)⁻¹))` with `s² = SSE / (observations - 3)`.
    pub standard_errors: [f64; 3],
    /// The sum of squared residuals at the estimate.
    pub cost: f64,
    /// Root mean square residual (compare with the noise level).
    pub rms_residual: f64,
    /// L-BFGS iterations.
    pub iterations: u64,
    /// Loss-and-gradient evaluations.
    pub evaluations: u64,
    /// Derivation and compilation of the gradient.
    pub compile_time: Duration,
    /// The solve.
    pub solve_time: Duration,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Simulate the observations of `experiment` and fit the parameters to them.
pub fn fit(experiment: &Experiment) -> Result<Fit, BoxError> {
    let observed = experiment.observe();
    let start = Instant::now();
    let module = parse_module(FIT_IR)?;
    let loss = GradientFn::builder(&module, "pendulum_fit").wrt(["params"]).build()?;
    loss.prepare()?; // compiled now, so that the solve time is the solve's
    let steps = experiment.steps_per_obs as i64;
    let objective = Objective::new(
        &loss,
        args![&experiment.start, experiment.theta0, experiment.omega0, experiment.dt, steps, &observed],
    )?;
    let compile_time = start.elapsed();

    let start = Instant::now();
    let solver = LBFGS::new(MoreThuenteLineSearch::new(), 5);
    let result =
        Executor::new(objective, solver).configure(|s| s.param(experiment.start.to_vec()).max_iters(500)).run()?;
    let solve_time = start.elapsed();
    let state = result.state();
    let best = state.get_best_param().ok_or("the solver returned no parameters")?;
    let params = [best[0], best[1], best[2]];
    let cost = state.get_best_cost();
    let evaluations = result.problem.problem.as_ref().map_or(0, Objective::evaluations);

    let dof = (experiment.observations - 3) as f64;
    let s2 = cost / dof;
    let covariance = invert3(&gauss_newton(experiment, &params)).ok_or("JᵀJ is singular")?;
    let standard_errors = [0, 1, 2].map(|i| (s2 * covariance[i][i]).sqrt());
    Ok(Fit {
        params,
        standard_errors,
        cost,
        rms_residual: (cost / experiment.observations as f64).sqrt(),
        iterations: state.get_iter(),
        evaluations,
        compile_time,
        solve_time,
    })
}

/// `JᵀJ` of the predictions' Jacobian at `params`, by central differences (three parameters).
fn gauss_newton(experiment: &Experiment, params: &[f64; 3]) -> [[f64; 3]; 3] {
    let columns: Vec<Vec<f64>> = (0..3)
        .map(|j| {
            let h = 1e-6 * params[j].abs().max(1e-2);
            let (mut plus, mut minus) = (*params, *params);
            plus[j] += h;
            minus[j] -= h;
            let (p, m) = (experiment.predict(&plus), experiment.predict(&minus));
            p.iter().zip(&m).map(|(a, b)| (a - b) / (2.0 * h)).collect()
        })
        .collect();
    [0, 1, 2].map(|i| [0, 1, 2].map(|j| columns[i].iter().zip(&columns[j]).map(|(a, b)| a * b).sum()))
}

/// The inverse of a symmetric 3×3 matrix by cofactors; `None` when singular.
fn invert3(m: &[[f64; 3]; 3]) -> Option<[[f64; 3]; 3]> {
    let cofactor = |i: usize, j: usize| {
        let (r0, r1) = ((i + 1) % 3, (i + 2) % 3);
        let (c0, c1) = ((j + 1) % 3, (j + 2) % 3);
        m[r0][c0] * m[r1][c1] - m[r0][c1] * m[r1][c0]
    };
    let det = m[0][0] * cofactor(0, 0) + m[0][1] * cofactor(0, 1) + m[0][2] * cofactor(0, 2);
    (det.abs() > 0.0).then(|| [0, 1, 2].map(|i| [0, 1, 2].map(|j| cofactor(j, i) / det)))
}

fn main() -> Result<(), BoxError> {
    let experiment = Experiment::default();
    let f = fit(&experiment)?;
    println!(
        "Pendulum fit: {} observations every {} s, noise {} rad, L-BFGS (m = 5) with jitdiff gradients",
        experiment.observations,
        experiment.dt * experiment.steps_per_obs as f64,
        experiment.noise
    );
    println!("  iterations:       {}", f.iterations);
    println!("  evaluations:      {}", f.evaluations);
    println!("  final objective:  {:.6e} (sum of squared residuals)", f.cost);
    println!("  rms residual:     {:.4} rad (noise {})", f.rms_residual, experiment.noise);
    for (i, name) in ["g/L", "damping", "friction"].iter().enumerate() {
        println!(
            "  {name:9} true {:7.4}  start {:7.4}  fit {:7.4} ± {:.4}  ({:+.1} σ)",
            experiment.truth[i],
            experiment.start[i],
            f.params[i],
            f.standard_errors[i],
            (f.params[i] - experiment.truth[i]) / f.standard_errors[i]
        );
    }
    println!("  compile time:     {:.2} ms", f.compile_time.as_secs_f64() * 1e3);
    println!("  solve time:       {:.2} ms", f.solve_time.as_secs_f64() * 1e3);
    Ok(())
}
