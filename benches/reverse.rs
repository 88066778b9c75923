//! Reverse-mode benchmarks (criterion). Ratios to read off one run:
//! - `value_and_grad` / `primal` on each problem (target ≤ 3);
//! - `value_and_grad` / `hand_written` on Rosenbrock and GMM (target ≤ 1.5; reported for all four);
//! - `central_fd` / `value_and_grad` on Rosenbrock n = 1,000 (target ≥ 300);
//! - compile latency of `value_and_grad` per problem is printed before the groups run.

use criterion::{Criterion, criterion_group, criterion_main};
use jitdiff::ir::{ArgValue, ExternRegistry, RuntimeValue, parse_module};
use jitdiff::jit::{Arg, JitOptions, compile};
use jitdiff::{GradientFn, GradientMode};
use jitdiff_problems::{Gmm, Mlp, Pendulum, Problem, Rosenbrock};
use std::hint::black_box;
use std::time::Instant;

fn args_of(values: &[ArgValue]) -> Vec<Arg<'_>> {
    values
        .iter()
        .map(|a| match a {
            ArgValue::F64(x) => Arg::F64(*x),
            ArgValue::I64(x) => Arg::I64(*x),
            ArgValue::Bool(x) => Arg::Bool(*x),
            ArgValue::Vector(v) | ArgValue::Slice(v) | ArgValue::SliceMut(v) => Arg::Slice(v),
        })
        .collect()
}

fn problem_group(c: &mut Criterion, name: &str, p: &dyn Problem) {
    let module = parse_module(p.ir()).unwrap();
    let args = p.args();
    let wrt: Vec<bool> = (0..args.len()).map(|i| p.active_params().contains(&i)).collect();
    let start = Instant::now();
    // Reverse mode: `build()` compiles it (in Auto mode the first call would).
    let f =
        GradientFn::builder(&module, p.entry()).wrt_mask(&wrt).gradient_mode(GradientMode::Reverse).build().unwrap();
    eprintln!("{name}: value_and_grad derived and compiled in {:.2} ms", start.elapsed().as_secs_f64() * 1e3);
    let size: usize = p.active_params().iter().map(|&i| args[i].as_slice().map_or(1, <[f64]>::len)).sum();
    let mut grad = vec![0.0; size];
    let compiled = compile(&module, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    let primal = compiled.function(p.entry()).unwrap();
    let mut out = [RuntimeValue::F64(0.0)];
    let mut group = c.benchmark_group(name);
    group.bench_function("primal", |b| b.iter(|| primal.call_into(&mut args_of(&args), &mut out).unwrap()));
    group.bench_function("value_and_grad", |b| {
        b.iter(|| f.value_and_grad(&mut args_of(&args), black_box(&mut grad)).unwrap())
    });
    // The plain-Rust analytic gradient of the same instance (`Problem::hand_value_and_grad`).
    if p.hand_value_and_grad(&mut grad).is_some() {
        group.bench_function("hand_written", |b| b.iter(|| p.hand_value_and_grad(black_box(&mut grad))));
    }
    group.finish();
}

fn rosenbrock_100k(c: &mut Criterion) {
    problem_group(c, "rosenbrock_100k", &Rosenbrock::new(100_000));
}

fn rosenbrock_fd(c: &mut Criterion) {
    let p = Rosenbrock::new(1_000);
    let module = parse_module(p.ir()).unwrap();
    let compiled = compile(&module, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    let f = compiled.function("rosenbrock").unwrap();
    let ad = GradientFn::builder(&module, "rosenbrock").wrt_mask(&[true]).build().unwrap();
    let mut grad = vec![0.0; 1000];
    let mut out = [RuntimeValue::F64(0.0)];
    let mut group = c.benchmark_group("rosenbrock_1000_vs_fd");
    group.bench_function("value_and_grad", |b| {
        b.iter(|| ad.value_and_grad(&mut [Arg::Slice(&p.x)], &mut grad).unwrap())
    });
    group.bench_function("central_fd", |b| {
        b.iter(|| {
            let mut x = p.x.clone();
            for i in 0..x.len() {
                let h = 1e-6 * x[i].abs().max(1.0);
                let x0 = x[i];
                x[i] = x0 + h;
                f.call_into(&mut [Arg::Slice(&x)], &mut out).unwrap();
                let plus = out[0].as_f64().unwrap();
                x[i] = x0 - h;
                f.call_into(&mut [Arg::Slice(&x)], &mut out).unwrap();
                let minus = out[0].as_f64().unwrap();
                x[i] = x0;
                grad[i] = (plus - minus) / (2.0 * h);
            }
        })
    });
    group.finish();
}

fn gmm(c: &mut Criterion) {
    problem_group(c, "gmm_d10_k25_n1000", &Gmm::generate(10, 25, 1000, jitdiff_problems::gmm::DEFAULT_SEED));
}

fn pendulum(c: &mut Criterion) {
    problem_group(c, "pendulum", &Pendulum::standard());
}

fn mlp(c: &mut Criterion) {
    problem_group(c, "mlp", &Mlp::standard());
}

criterion_group!(benches, rosenbrock_100k, rosenbrock_fd, gmm, pendulum, mlp);
criterion_main!(benches);
