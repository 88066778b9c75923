//! Fit a Lotka–Volterra predator–prey model (RK4, 100 steps) to noisy observations of both
//! populations, then compute the 200 × 6 sensitivity Jacobian of the trajectory with respect to
//! the six parameters for their standard errors.
//!
//! ```sh
//! cargo run --release --example lotka_volterra
//! ```
//!
//! The model is written once, as plain Rust, in `examples/models/lotka_volterra.rs`: rustc
//! compiles it (`mod model`, which simulates the observations) and jitdiff's front end lowers the
//! same text. [`fit`] runs Levenberg–Marquardt on the trajectory's 200 × 6 Jacobian, computed by
//! [`JacobianFn`] (which picks one 8-lane forward sweep for this tall shape); the jitdiff glue is
//! three lines.

#[path = "models/lotka_volterra.rs"]
mod model;

use jitdiff::{JacobianFn, SplitMix64, args, front::lower_source};
use std::time::{Duration, Instant};

/// The model's source, as the front end reads it.
const MODEL: &str = include_str!("models/lotka_volterra.rs");

/// Names of the six parameters, in `theta` order.
pub const NAMES: [&str; 6] = ["alpha", "beta", "gamma", "delta", "x0", "y0"];

/// The experiment: true parameters, sampling, noise and the fit's starting point.
pub struct Experiment {
    /// `[alpha, beta, gamma, delta, x0, y0]`.
    pub truth: [f64; 6],
    /// Step between observations.
    pub dt: f64,
    /// Observations of `(x, y)`.
    pub steps: usize,
    /// Standard deviation of the observation noise.
    pub noise: f64,
    /// Where the fit starts.
    pub start: [f64; 6],
    /// Seed of the noise.
    pub seed: u64,
}

impl Default for Experiment {
    /// 10 time units observed every 0.1, noise 0.3; the fit starts 10–20% off.
    fn default() -> Experiment {
        Experiment {
            truth: [1.0, 0.1, 1.5, 0.075, 10.0, 5.0],
            dt: 0.1,
            steps: 100,
            noise: 0.3,
            start: [1.1, 0.09, 1.35, 0.085, 11.0, 4.5],
            seed: 11,
        }
    }
}

impl Experiment {
    /// The observed populations: the true trajectory (by the rustc-compiled model) plus noise.
    pub fn observe(&self) -> Vec<f64> {
        let mut observed = vec![0.0; 2 * self.steps];
        model::trajectory(&self.truth, self.dt, &mut observed);
        let mut rng = SplitMix64::new(self.seed);
        observed.iter_mut().for_each(|v| *v += self.noise * rng.normal());
        observed
    }
}

/// What the fit reports.
pub struct Fit {
    /// The fitted parameters.
    pub theta: [f64; 6],
    /// Their standard errors, from `s² (JᵀJ)⁻¹` with the sensitivity Jacobian `J`.
    pub standard_errors: [f64; 6],
    /// Root mean square residual (compare with the noise).
    pub rms_residual: f64,
    /// The sensitivity Jacobian at the fit: 200 rows (x, y after each step) × 6 parameters.
    pub jacobian: jitdiff::Jacobian,
    /// Levenberg–Marquardt iterations (accepted or not).
    pub iterations: u64,
    /// Lowering the model and building the handle (a `JacobianFn` derives and compiles the sweep
    /// its first call needs, so that part is in `solve_time`).
    pub compile_time: Duration,
    /// The solve and the Jacobian.
    pub solve_time: Duration,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Fit the six parameters to `observed` by Levenberg–Marquardt on the sensitivity Jacobian, and
/// compute their standard errors.
pub fn fit(experiment: &Experiment, observed: &[f64]) -> Result<Fit, BoxError> {
    let start = Instant::now();
    let sensitivities = JacobianFn::builder(&lower_source(MODEL)?, "trajectory").wrt(["theta"]).build()?;
    let compile_time = start.elapsed();
    let start = Instant::now();
    // The trajectory at `theta` (written to `simulated`), its Jacobian and the sum of squares.
    let mut simulated = vec![0.0; observed.len()];
    let mut evaluate = |theta: &[f64; 6]| -> Result<_, jitdiff::Error> {
        let jacobian = sensitivities.jacobian(&mut args![theta, experiment.dt, &mut simulated])?;
        let residuals: Vec<f64> = simulated.iter().zip(observed).map(|(s, o)| s - o).collect();
        Ok((jacobian, residuals.iter().map(|r| r * r).sum::<f64>(), residuals))
    };
    let mut theta = experiment.start;
    let (mut jacobian, mut cost, mut residuals) = evaluate(&theta)?;
    let (mut damping, mut iterations) = (1e-3, 0);
    while iterations < 200 && damping < 1e12 {
        iterations += 1;
        // (JᵀJ + damping diag(JᵀJ)) step = Jᵀ r
        let mut normal = normal_matrix(&jacobian);
        (0..6).for_each(|i| normal[i][i] *= 1.0 + damping);
        let gradient: [f64; 6] =
            std::array::from_fn(|c| (0..jacobian.rows).map(|r| jacobian.get(r, c) * residuals[r]).sum());
        let inverse = invert(&normal).ok_or("JᵀJ is singular")?;
        let trial: [f64; 6] =
            std::array::from_fn(|i| theta[i] - (0..6).map(|k| inverse[i][k] * gradient[k]).sum::<f64>());
        let (trial_jacobian, trial_cost, trial_residuals) = evaluate(&trial)?;
        if trial_cost < cost {
            let converged = cost - trial_cost <= 1e-12 * cost;
            (theta, jacobian, cost, residuals, damping) =
                (trial, trial_jacobian, trial_cost, trial_residuals, damping * 0.3);
            if converged {
                break;
            }
        } else {
            damping *= 10.0; // a worse or non-finite trial: shorter, more gradient-like steps
        }
    }
    let solve_time = start.elapsed();

    let s2 = cost / (observed.len() - 6) as f64;
    let covariance = invert(&normal_matrix(&jacobian)).ok_or("JᵀJ is singular")?;
    Ok(Fit {
        theta,
        standard_errors: std::array::from_fn(|i| (s2 * covariance[i][i]).sqrt()),
        rms_residual: (cost / observed.len() as f64).sqrt(),
        jacobian,
        iterations,
        compile_time,
        solve_time,
    })
}

/// `JᵀJ` of a `rows × 6` Jacobian.
fn normal_matrix(j: &jitdiff::Jacobian) -> [[f64; 6]; 6] {
    std::array::from_fn(|a| std::array::from_fn(|b| (0..j.rows).map(|r| j.get(r, a) * j.get(r, b)).sum()))
}

/// The inverse of a 6 × 6 matrix by Gauss–Jordan elimination with partial pivoting.
fn invert(m: &[[f64; 6]; 6]) -> Option<[[f64; 6]; 6]> {
    let mut a = *m;
    let mut inv: [[f64; 6]; 6] = std::array::from_fn(|i| std::array::from_fn(|j| f64::from(u8::from(i == j))));
    for col in 0..6 {
        let pivot = (col..6).max_by(|&p, &q| a[p][col].abs().total_cmp(&a[q][col].abs()))?;
        if a[pivot][col] == 0.0 {
            return None;
        }
        a.swap(col, pivot);
        inv.swap(col, pivot);
        let scale = a[col][col];
        for k in 0..6 {
            a[col][k] /= scale;
            inv[col][k] /= scale;
        }
        for row in (0..6).filter(|&r| r != col) {
            let factor = a[row][col];
            for k in 0..6 {
                a[row][k] -= factor * a[col][k];
                inv[row][k] -= factor * inv[col][k];
            }
        }
    }
    Some(inv)
}

fn main() -> Result<(), BoxError> {
    let experiment = Experiment::default();
    let observed = experiment.observe();
    let fit = fit(&experiment, &observed)?;
    println!("Lotka–Volterra, {} observations of (prey, predators), noise {}", experiment.steps, experiment.noise);
    println!("{:<6} {:>10} {:>10} {:>10} {:>10}", "", "truth", "start", "fit", "std err");
    for (i, name) in NAMES.iter().enumerate() {
        println!(
            "{name:<6} {:>10.4} {:>10.4} {:>10.4} {:>10.4}",
            experiment.truth[i], experiment.start[i], fit.theta[i], fit.standard_errors[i]
        );
    }
    println!(
        "rms residual {:.3} after {} Levenberg–Marquardt iterations; Jacobian {} × {}",
        fit.rms_residual, fit.iterations, fit.jacobian.rows, fit.jacobian.cols
    );
    println!(
        "compile {:.2} ms, fit + Jacobian {:.2} ms",
        fit.compile_time.as_secs_f64() * 1e3,
        fit.solve_time.as_secs_f64() * 1e3
    );
    Ok(())
}
