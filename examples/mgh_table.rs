//! The Moré–Garbow–Hillstrom test set (`jitdiff_problems::mgh`: 35 problems, Watson at two sizes)
//! through a compiled `GradientFn` and `Objective::minimize`; prints the markdown table of
//! docs/optimization.md, then how many problems the default options solve.
//!
//! ```sh
//! cargo run --release --example mgh_table
//! ```
//!
//! `tests/api/optim.rs` runs [`solve`] on every problem in CI.

use jitdiff::optim::{MinimizeOptions, Minimum, Objective};
use jitdiff::{Error, GradientFn, args, ir::parse_module};
use jitdiff_problems::mgh::{self, MghProblem};

/// The options of the table: run until the gradient vanishes to 1e-12 or an iteration gains
/// nothing (the tolerance on a zero minimum is 1e-10, tighter than the defaults reach).
pub fn table_options() -> MinimizeOptions {
    MinimizeOptions::new().gradient_tolerance(1e-12).f_tolerance(0.0)
}

/// Compile the gradient of `p` and minimise from its standard start.
pub fn solve(p: &MghProblem, options: &MinimizeOptions) -> Result<Minimum, Error> {
    let module = parse_module(p.ir)?;
    let grad = GradientFn::builder(&module, mgh::ENTRY).wrt(["x"]).build()?;
    Objective::new(&grad, args![&p.x0])?.minimize(&p.x0, options)
}

/// How a run compares with the published minimum: `Ok(true)` within tolerance of `f*`,
/// `Err(m)` at another published minimum `m`, `Ok(false)` neither.
pub fn verdict(p: &MghProblem, min: &Minimum) -> Result<bool, f64> {
    if p.reached(min.value) {
        Ok(true)
    } else if let Some(other) = p.reached_other(min.value) {
        Err(other)
    } else {
        Ok(false)
    }
}

/// A number as the paper prints its minima: 6 significant digits, or a plain 0.
fn short(v: f64) -> String {
    if v == 0.0 { "0".into() } else { format!("{v:.5e}") }
}

/// Why a run stopped, in a word or two.
fn stop(min: &Minimum) -> &str {
    let t = min.termination.as_str();
    if t.starts_with("gradient tolerance") {
        "gradient"
    } else if t.starts_with("f tolerance") {
        "f tolerance"
    } else if t.starts_with("no progress") {
        "no progress"
    } else {
        t
    }
}

fn main() -> Result<(), Error> {
    let problems = mgh::problems();
    let options = table_options();
    println!("| # | problem | n | F(x0) | f* | reached F | iterations | evaluations | stopped by | |");
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---|---|");
    let mut pass = 0;
    for p in &problems {
        let min = solve(p, &options)?;
        let mark = match verdict(p, &min) {
            Ok(true) => {
                pass += 1;
                "✓".to_string()
            }
            Err(other) => format!("✗ (local minimum {other:e})"),
            Ok(false) => format!("✗ ({})", min.termination),
        };
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            p.number,
            p.name,
            p.n(),
            short((p.value)(&p.x0)),
            short(p.f_star),
            short(min.value),
            min.iterations,
            min.evaluations,
            stop(&min),
            mark
        );
    }
    println!("\n{pass} of {} runs reach f* within its tolerance.", problems.len());
    let defaults = MinimizeOptions::new();
    let mut missed = Vec::new();
    for p in &problems {
        if verdict(p, &solve(p, &defaults)?) != Ok(true) {
            missed.push(format!("{} ({})", p.number, p.name));
        }
    }
    println!(
        "With the default options (gradient tolerance 1e-5, f tolerance 2.2e-9): {} of {}; not: {}.",
        problems.len() - missed.len(),
        problems.len(),
        missed.join(", ")
    );
    Ok(())
}
