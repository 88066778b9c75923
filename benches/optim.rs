//! End-to-end optimisation benchmarks (criterion): argmin's L-BFGS (memory 7, More-Thuente) on
//! Extended Rosenbrock n = 1,000 from the standard start, with the same solver and the same
//! caching `Objective` plumbing fed by three gradient sources:
//! - `jitdiff`: the compiled reverse-mode gradient (compiled once, outside the timing);
//! - `hand_written`: `rosenbrock_gradient` in plain Rust;
//! - `central_fd`: central differences of the JIT-compiled primal (2n primal calls per gradient).
//!
//! Ratios to read off one run: `solve/jitdiff` / `solve/hand_written` (target ≤ 1.3), and
//! `200_iterations/central_fd` / `200_iterations/jitdiff` (the speedup over finite differences;
//! a full solve with finite differences would take minutes, so that group stops every solver
//! after 200 iterations). Iteration counts and final objectives are printed before the groups.

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use jitdiff::GradientFn;
use jitdiff::ir::{ExternRegistry, RuntimeValue, parse_module};
use jitdiff::jit::{Arg, JitOptions, compile};
use jitdiff::optim::Objective;
use jitdiff::optim::argmin::core::{Executor, State};
use jitdiff::optim::argmin::solver::{linesearch::MoreThuenteLineSearch, quasinewton::LBFGS};
use jitdiff_problems::rosenbrock::{ROSENBROCK_IR, rosenbrock_gradient, standard_start};
use std::sync::OnceLock;
use std::time::Duration;

const N: usize = 1000;

/// The compiled gradient, built once: an `Objective` borrows it.
fn rosenbrock_gradient_fn() -> &'static GradientFn {
    static GRADIENT: OnceLock<GradientFn> = OnceLock::new();
    GRADIENT.get_or_init(|| {
        let module = parse_module(ROSENBROCK_IR).unwrap();
        GradientFn::builder(&module, "rosenbrock").wrt(["x"]).build().unwrap()
    })
}

fn jitdiff_objective() -> Objective<'static> {
    static START: [f64; N] = [0.0; N];
    Objective::new(rosenbrock_gradient_fn(), [Arg::from(&START[..])]).unwrap()
}

fn hand_written_objective() -> Objective<'static> {
    Objective::from_fn(N, rosenbrock_gradient)
}

fn finite_difference_objective() -> Objective<'static> {
    let module = parse_module(ROSENBROCK_IR).unwrap();
    let compiled = compile(&module, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    let primal = compiled.function("rosenbrock").unwrap();
    let mut point = vec![0.0; N];
    let mut out = [RuntimeValue::F64(0.0)];
    Objective::from_fn(N, move |x, grad| {
        let mut at = |p: &[f64]| {
            primal.call_into(&mut [Arg::Slice(p)], &mut out).unwrap();
            out[0].as_f64().unwrap()
        };
        point.copy_from_slice(x);
        for i in 0..N {
            let h = 1e-6 * x[i].abs().max(1.0);
            point[i] = x[i] + h;
            let plus = at(&point);
            point[i] = x[i] - h;
            let minus = at(&point);
            point[i] = x[i];
            grad[i] = (plus - minus) / (2.0 * h);
        }
        at(x)
    })
}

/// L-BFGS from the standard start: (final objective, iterations).
fn solve(objective: Objective<'static>, max_iters: u64) -> (f64, u64) {
    let solver = LBFGS::new(MoreThuenteLineSearch::new(), 7);
    let result =
        Executor::new(objective, solver).configure(|s| s.param(standard_start(N)).max_iters(max_iters)).run().unwrap();
    (result.state().get_best_cost(), result.state().get_iter())
}

fn full_solve(c: &mut Criterion) {
    for (name, make) in
        [("jitdiff", jitdiff_objective as fn() -> Objective<'static>), ("hand_written", hand_written_objective)]
    {
        let (cost, iterations) = solve(make(), 10_000);
        eprintln!("full solve, {name}: f = {cost:.3e} after {iterations} iterations");
    }
    let mut group = c.benchmark_group("lbfgs_rosenbrock_1000_solve");
    group.sample_size(10).measurement_time(Duration::from_secs(10));
    group.bench_function("jitdiff", |b| {
        b.iter_batched(jitdiff_objective, |o| solve(o, 10_000), BatchSize::PerIteration)
    });
    group.bench_function("hand_written", |b| {
        b.iter_batched(hand_written_objective, |o| solve(o, 10_000), BatchSize::PerIteration)
    });
    group.finish();
}

fn capped_solve(c: &mut Criterion) {
    let sources = [
        ("jitdiff", jitdiff_objective as fn() -> Objective<'static>),
        ("hand_written", hand_written_objective),
        ("central_fd", finite_difference_objective),
    ];
    for (name, make) in sources {
        let (cost, iterations) = solve(make(), 200);
        eprintln!("200-iteration solve, {name}: f = {cost:.3e} after {iterations} iterations");
    }
    let mut group = c.benchmark_group("lbfgs_rosenbrock_1000_200_iterations");
    group.sample_size(10).measurement_time(Duration::from_secs(10));
    for (name, make) in sources {
        group.bench_function(name, |b| b.iter_batched(make, |o| solve(o, 200), BatchSize::PerIteration));
    }
    group.finish();
}

criterion_group!(benches, full_solve, capped_solve);
criterion_main!(benches);
