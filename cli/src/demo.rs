//! The demo (`jitdiff` with no arguments): Extended Rosenbrock, n = 1,000, written once as a plain
//! Rust function — rustc compiles it, `#[jitdiff::function]` lowers it to IR at compile time —
//! interpreted and JIT-compiled; its gradient by reverse mode, checked against central
//! differences and timed against them; then a few steps of descent.

use super::error::CliError;
use super::timing::{human, seconds_per_call};
use jitdiff::GradientFn;
use jitdiff::fd::{FdOptions, FiniteDiff};
use jitdiff::ir::{ArgValue, ExternRegistry, Interpreter, RuntimeValue};
use jitdiff::jit::{Arg, JitOptions, compile};
use jitdiff_problems::rosenbrock::standard_start;
use std::time::{Duration, Instant};

/// The model, written once. `#[jitdiff::function]` leaves it an ordinary Rust function and adds
/// the module `rosenbrock` (its IR, typed handles).
#[jitdiff::function]
pub(crate) fn rosenbrock(x: &[f64]) -> f64 {
    let mut sum = 0.0;
    for i in 0..x.len() - 1 {
        let xi = x[i];
        let d = x[i + 1] - xi * xi;
        let e = 1.0 - xi;
        sum += 100.0 * (d * d) + e * e;
    }
    sum
}

const ENTRY: &str = "rosenbrock";

/// Run the demo.
pub fn demo() -> Result<(), CliError> {
    let n = 1_000;
    println!("jitdiff demo: Extended Rosenbrock, n = {n}, at the standard start (-1.2, 1, -1.2, 1, ...)");
    let demo_error = |e: String| CliError::Demo(e);

    let module = rosenbrock::module();
    let func = module.func_by_name(ENTRY).ok_or_else(|| demo_error("the lowered module has no @rosenbrock".into()))?;
    let instructions: usize = func.blocks.iter().map(|b| b.insts.len() + 1).sum();
    println!(
        "  IR          : @{ENTRY} lowered from the Rust fn at compile time: {} blocks, {instructions} instructions",
        func.blocks.len()
    );

    let x = standard_start(n);
    let interpreted = Interpreter::new(module).call(ENTRY, &mut [ArgValue::Slice(x.clone())])?;
    let start = Instant::now();
    let compiled = compile(module, &ExternRegistry::new(), &JitOptions::new())?;
    let native = compiled.function(ENTRY)?;
    let compile_time = start.elapsed();
    let jitted = native.call(&mut [Arg::Slice(&x)])?;
    let (interpreted, jitted) = match (interpreted.as_slice(), jitted.as_slice()) {
        ([RuntimeValue::F64(a)], [RuntimeValue::F64(b)]) => (*a, *b),
        other => return Err(demo_error(format!("unexpected results {other:?}"))),
    };
    let agree = interpreted.to_bits() == jitted.to_bits() && jitted.to_bits() == rosenbrock(&x).to_bits();
    println!(
        "  value       : f(x0) = {jitted:.17e} (JIT compiled in {}; interpreter and plain Rust agree bit for bit: {})",
        human(compile_time.as_secs_f64()),
        if agree { "yes" } else { "NO" }
    );
    if !agree {
        return Err(demo_error("the interpreter, the JIT and plain Rust disagree".into()));
    }

    // Derived by `build()`, compiled by the first call that needs it (1,000 inputs: reverse
    // mode): the time covers both, and the call.
    let start = Instant::now();
    let grad = GradientFn::builder(module, ENTRY).wrt(["x"]).build()?;
    let mut g = vec![0.0; n];
    let value = grad.value_and_grad(&mut [Arg::Slice(&x)], &mut g)?;
    let derive_time = start.elapsed();
    let norm = g.iter().fold(0.0, |acc: f64, v| acc + v * v).sqrt();
    println!(
        "  gradient    : reverse mode (derived, compiled and run in {}): f = {value:.6e}, |grad f| = {norm:.6e}",
        human(derive_time.as_secs_f64())
    );

    drop(native);
    let fd = FiniteDiff::of(&grad, FdOptions::central())?;
    let args = [Arg::Slice(&x)];
    let numeric = fd.gradient(&args)?;
    let max_diff = g.iter().zip(&numeric).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
    let max_entry = g.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    println!(
        "  vs FD       : max |AD - FD| = {max_diff:.3e} (largest gradient entry {max_entry:.3e}; central differences)"
    );
    if max_diff.is_nan() || max_diff > 1e-5 * max_entry.max(1.0) {
        return Err(demo_error(format!("AD and finite differences disagree by {max_diff:e}")));
    }

    let budget = Duration::from_millis(150);
    let ad_time = seconds_per_call(budget, 5, || grad.value_and_grad(&mut [Arg::Slice(&x)], &mut g).map(|_| ()))?;
    let fd_time = seconds_per_call(budget, 3, || fd.gradient(&args).map(|_| ()))?;
    println!(
        "  speed       : value_and_grad {} vs central FD gradient {} ({} primal calls): AD is {:.0}x faster",
        human(ad_time),
        human(fd_time),
        fd.calls_for(n),
        fd_time / ad_time
    );

    let mut x = x;
    let trace = descend(&grad, &mut x, 60)?;
    let line: Vec<String> = trace.iter().map(|(k, f)| format!("{k}: {f:.4e}")).collect();
    println!("  descent     : gradient descent with backtracking, f by iteration — {}", line.join(", "));
    Ok(())
}

/// Gradient descent with an Armijo backtracking line search, `iterations` steps from `x`
/// (updated in place); returns `(iteration, f)` at a few iterations.
pub fn descend(grad: &GradientFn, x: &mut [f64], iterations: usize) -> Result<Vec<(usize, f64)>, CliError> {
    let mut g = vec![0.0; x.len()];
    let mut trial = x.to_vec();
    let mut trial_g = vec![0.0; x.len()];
    let mut f = grad.value_and_grad(&mut [Arg::Slice(x)], &mut g)?;
    let mut trace = vec![(0, f)];
    let mut step = 1.0;
    for k in 1..=iterations {
        let g2: f64 = g.iter().map(|v| v * v).sum();
        // Halve the step until it gives sufficient decrease; start each search from twice the
        // last accepted step so the step can grow again.
        step *= 2.0;
        let f_new = loop {
            for ((t, xi), gi) in trial.iter_mut().zip(x.iter()).zip(&g) {
                *t = xi - step * gi;
            }
            let f_new = grad.value_and_grad(&mut [Arg::Slice(&trial)], &mut trial_g)?;
            if f_new <= f - 1e-4 * step * g2 || step < 1e-20 {
                break f_new;
            }
            step *= 0.5;
        };
        x.copy_from_slice(&trial);
        g.copy_from_slice(&trial_g);
        f = f_new;
        if k % (iterations / 6).max(1) == 0 || k == iterations {
            trace.push((k, f));
        }
    }
    Ok(trace)
}
