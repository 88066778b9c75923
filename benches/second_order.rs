//! Second-order benchmarks (criterion): Hessian-vector product (forward over reverse, one
//! direction) against `value_and_grad` on Rosenbrock (n = 100,000) and the MLP. Ratio to read
//! off one run: `hvp` / `value_and_grad` (target ≤ 4).

use criterion::{Criterion, criterion_group, criterion_main};
use jitdiff::ir::{ArgValue, parse_module};
use jitdiff::jit::Arg;
use jitdiff::{GradientFn, HvpFn};
use jitdiff_problems::{Mlp, Problem, Rosenbrock};
use std::hint::black_box;

fn hvp_vs_gradient(c: &mut Criterion, name: &str, p: &dyn Problem) {
    let module = parse_module(p.ir()).unwrap();
    let mut args = p.args();
    let wrt: Vec<bool> = (0..args.len()).map(|i| p.active_params().contains(&i)).collect();
    let grad_fn = GradientFn::builder(&module, p.entry()).wrt_mask(&wrt).build().unwrap();
    let hvp_fn = HvpFn::builder(&module, p.entry()).wrt_mask(&wrt).width(1).build().unwrap();
    let n = p.gradient_len();
    let direction: Vec<f64> = (0..n).map(|i| ((i % 7) as f64 - 3.0) / 3.0).collect();
    let (mut grad, mut product) = (vec![0.0; n], vec![0.0; n]);
    let mut group = c.benchmark_group(name);
    group.bench_function("value_and_grad", |b| {
        b.iter(|| {
            let mut call: Vec<Arg<'_>> = args.iter_mut().map(as_arg).collect();
            grad_fn.value_and_grad(&mut call, black_box(&mut grad)).unwrap()
        })
    });
    group.bench_function("hvp", |b| {
        b.iter(|| {
            let mut call: Vec<Arg<'_>> = args.iter_mut().map(as_arg).collect();
            hvp_fn.hvp_with_gradient(&mut call, &direction, &mut grad, black_box(&mut product)).unwrap()
        })
    });
    group.finish();
}

fn as_arg(a: &mut ArgValue) -> Arg<'_> {
    Arg::from(a)
}

fn rosenbrock(c: &mut Criterion) {
    hvp_vs_gradient(c, "hvp_rosenbrock_100k", &Rosenbrock::new(100_000));
}

fn mlp(c: &mut Criterion) {
    hvp_vs_gradient(c, "hvp_mlp", &Mlp::standard());
}

criterion_group!(benches, rosenbrock, mlp);
criterion_main!(benches);
