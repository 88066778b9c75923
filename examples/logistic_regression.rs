//! L2-regularised logistic regression on 100,000 samples × 50 features, trained with
//! `jitdiff::optim::minimize` (L-BFGS on argmin) on jitdiff's reverse-mode gradient.
//!
//! ```sh
//! cargo run --release --example logistic_regression [-- SAMPLES FEATURES]
//! ```
//!
//! The model is written once, as plain Rust, in `examples/models/logistic.rs`: rustc compiles
//! it (`mod model`, the reference the result is compared with) and jitdiff's front end lowers the
//! same text to IR, differentiates it and JIT-compiles the gradient. The glue is [`train`]: a
//! handle, an objective that *borrows* the 40 MB of data (no copy, no lock), a solver.

#[path = "models/logistic.rs"]
mod model;

use jitdiff::optim::{MinimizeOptions, Objective};
use jitdiff::{GradientFn, SplitMix64, args, front::lower_source};
use std::time::{Duration, Instant};

/// The model's source, as the front end reads it.
const MODEL: &str = include_str!("models/logistic.rs");

/// A data set: `n` samples of `d` features (row-major) with labels ±1.
pub struct Data {
    /// Features, `n × d`.
    pub x: Vec<f64>,
    /// Labels, ±1.
    pub y: Vec<f64>,
    /// Samples.
    pub n: usize,
    /// Features.
    pub d: usize,
}

impl Data {
    /// Standard normal features; labels from a random true weight vector with 10% of them
    /// flipped (so the problem is not separable and the minimum is finite without the
    /// regulariser too).
    pub fn generate(n: usize, d: usize, seed: u64) -> Data {
        let mut rng = SplitMix64::new(seed);
        let truth = rng.normals(d);
        let x = rng.normals(n * d);
        let y = (0..n)
            .map(|i| {
                let z: f64 = (0..d).map(|j| truth[j] * x[i * d + j]).sum();
                let label = if z > 0.0 { 1.0 } else { -1.0 };
                if rng.uniform() < 0.1 { -label } else { label }
            })
            .collect();
        Data { x, y, n, d }
    }
}

/// What training reports.
pub struct Training {
    /// The weights found.
    pub w: Vec<f64>,
    /// The loss there, by the compiled code.
    pub loss: f64,
    /// The loss there by the rustc-compiled model.
    pub rustc_loss: f64,
    /// `|grad|` there.
    pub gradient_norm: f64,
    /// L-BFGS iterations.
    pub iterations: u64,
    /// Lowering, derivation and compilation of the gradient.
    pub compile_time: Duration,
    /// The solve.
    pub solve_time: Duration,
}

/// Train with L-BFGS from `w = 0` for at most `max_iters` iterations, to a gradient whose
/// largest entry is below 1e-10.
pub fn train(data: &Data, lambda: f64, max_iters: u64) -> Result<Training, jitdiff::Error> {
    let start = Instant::now();
    let loss = GradientFn::builder(&lower_source(MODEL)?, "logistic").wrt(["w"]).build()?;
    loss.prepare()?; // compiled now, so that the solve time is the solve's
    let compile_time = start.elapsed();
    let w0 = vec![0.0; data.d];
    let objective = Objective::new(&loss, args![&w0, &data.x, &data.y, data.n, data.d, lambda])?;
    let start = Instant::now();
    let minimum = objective
        .minimize(&w0, &MinimizeOptions::new().gradient_tolerance(1e-10).f_tolerance(0.0).max_iters(max_iters))?;
    let solve_time = start.elapsed();
    let w = minimum.x;

    let mut grad = vec![0.0; data.d];
    let value = loss.value_and_grad(&mut args![&w, &data.x, &data.y, data.n, data.d, lambda], &mut grad)?;
    Ok(Training {
        rustc_loss: model::logistic(&w, &data.x, &data.y, data.n, data.d, lambda),
        loss: value,
        gradient_norm: grad.iter().map(|g| g * g).sum::<f64>().sqrt(),
        iterations: minimum.iterations,
        w,
        compile_time,
        solve_time,
    })
}

fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let mut sizes = std::env::args().skip(1).map(|a| a.parse::<usize>());
    let n = sizes.next().transpose()?.unwrap_or(100_000);
    let d = sizes.next().transpose()?.unwrap_or(50);
    let data = Data::generate(n, d, 2026);
    println!("logistic regression, {n} samples × {d} features, lambda = 1e-3");
    let t = train(&data, 1e-3, 500)?;
    println!(
        "loss {:.12} (rustc model: {:.12}), |grad| {:.2e} after {} L-BFGS iterations",
        t.loss, t.rustc_loss, t.gradient_norm, t.iterations
    );
    println!("compile {:.2} ms, solve {:.1} ms", t.compile_time.as_secs_f64() * 1e3, t.solve_time.as_secs_f64() * 1e3);
    Ok(())
}
