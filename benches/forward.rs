//! Forward-mode benchmarks (criterion). Ratios to read off one run:
//! - `rosenbrock_100k`: `jvp_w1` / `primal` (target ≤ 2.0);
//! - `pendulum` and `mlp`: `jvp_w8` / `jvp_w1` (8 directions in one sweep; target ≤ 2.5);
//! - `jacobian_16x16`: batched forward mode vs central finite differences (the max error is
//!   printed before the group runs).

use criterion::{Criterion, criterion_group, criterion_main};
use jitdiff::ForwardFn;
use jitdiff::ir::{ArgValue, ExternRegistry, Module, RuntimeValue, parse_module};
use jitdiff::jit::{Arg, CompiledFn, JitOptions, compile};
use jitdiff_problems::{Mlp, Pendulum, Problem, Rosenbrock, coupled};
use std::hint::black_box;

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

fn primal(module: &Module, name: &str) -> (jitdiff::jit::CompiledModule, CompiledFn) {
    let compiled = compile(module, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    let f = compiled.function(name).unwrap();
    (compiled, f)
}

/// Tangents for every active parameter of `problem`, `width` lanes each.
fn tangents(problem: &dyn Problem, args: &[ArgValue], width: usize) -> Vec<Vec<f64>> {
    problem
        .active_params()
        .iter()
        .map(|&i| {
            let n = match &args[i] {
                ArgValue::F64(_) => 1,
                other => other.as_slice().unwrap().len(),
            };
            (0..n * width).map(|k| ((k * 7919) % 13) as f64 / 13.0 - 0.5).collect()
        })
        .collect()
}

fn sweep_benches(c: &mut Criterion, group_name: &str, problem: &dyn Problem, widths: &[u8], with_primal: bool) {
    let module = parse_module(problem.ir()).unwrap();
    let args = problem.args();
    let wrt: Vec<bool> = (0..args.len()).map(|i| problem.active_params().contains(&i)).collect();
    let mut group = c.benchmark_group(group_name);
    if with_primal {
        let (_m, f) = primal(&module, problem.entry());
        let mut out = [RuntimeValue::F64(0.0)];
        group.bench_function("primal", |b| b.iter(|| f.call_into(&mut args_of(&args), &mut out).unwrap()));
    }
    for &w in widths {
        let forward = ForwardFn::builder(&module, problem.entry()).wrt_mask(&wrt).width(w).build().unwrap();
        let t = tangents(problem, &args, w as usize);
        let views: Vec<&[f64]> = t.iter().map(Vec::as_slice).collect();
        let mut out = forward.output();
        group.bench_function(format!("jvp_w{w}"), |b| {
            b.iter(|| forward.jvp_into(&mut args_of(&args), black_box(&views), &mut out).unwrap())
        });
    }
    group.finish();
}

fn rosenbrock(c: &mut Criterion) {
    sweep_benches(c, "rosenbrock_100k", &Rosenbrock::new(100_000), &[1], true);
}

fn pendulum(c: &mut Criterion) {
    sweep_benches(c, "pendulum", &Pendulum::standard(), &[1, 8], true);
}

fn mlp(c: &mut Criterion) {
    sweep_benches(c, "mlp", &Mlp::standard(), &[1, 8], true);
}

fn jacobian(c: &mut Criterion) {
    let (pendulums, steps, dt) = (8, 100, 0.01);
    let module = coupled::coupled_module(pendulums, steps, dt);
    let s0 = coupled::initial_state(pendulums);
    let n = s0.len();
    let (_m, f) = primal(&module, coupled::ENTRY);
    let mut out = vec![RuntimeValue::F64(0.0); n];
    let fd_jacobian = |out: &mut [RuntimeValue]| -> Vec<f64> {
        let mut jac = vec![0.0; n * n];
        let mut x = s0.clone();
        for col in 0..n {
            let h = 1e-6 * s0[col].abs().max(1.0);
            let eval = |x: &[f64], out: &mut [RuntimeValue]| -> Vec<f64> {
                let mut args: Vec<Arg<'_>> = x.iter().map(|&v| Arg::F64(v)).collect();
                f.call_into(&mut args, out).unwrap();
                out.iter().map(|v| v.as_f64().unwrap()).collect()
            };
            x[col] = s0[col] + h;
            let plus = eval(&x, out);
            x[col] = s0[col] - h;
            let minus = eval(&x, out);
            x[col] = s0[col];
            for row in 0..n {
                jac[row * n + col] = (plus[row] - minus[row]) / (2.0 * h);
            }
        }
        jac
    };
    let wrt = vec![true; n];
    let mut group = c.benchmark_group("jacobian_16x16");
    let fd = fd_jacobian(&mut out);
    for w in [8u8, 16] {
        let forward = ForwardFn::builder(&module, coupled::ENTRY).wrt_mask(&wrt).width(w).build().unwrap();
        let mut args: Vec<Arg<'_>> = s0.iter().map(|&v| Arg::F64(v)).collect();
        let ad = forward.jacobian(&mut args).unwrap();
        let max_error = ad.data.iter().zip(&fd).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        let max_entry = ad.data.iter().map(|a| a.abs()).fold(0.0, f64::max);
        eprintln!("jacobian 16x16, width {w}: max |AD - central FD| = {max_error:.3e} (max |entry| {max_entry:.3})");
        group.bench_function(format!("forward_w{w}"), |b| {
            b.iter(|| {
                let mut args: Vec<Arg<'_>> = s0.iter().map(|&v| Arg::F64(v)).collect();
                forward.jacobian(&mut args).unwrap()
            })
        });
    }
    group.bench_function("central_fd", |b| b.iter(|| fd_jacobian(&mut out)));
    group.finish();
}

criterion_group!(benches, rosenbrock, pendulum, mlp, jacobian);
criterion_main!(benches);
