//! Primal (non-differentiated) performance of JIT-compiled code:
//!
//! - Extended Rosenbrock, n = 100,000: the JIT (bounds-checked, through the safe handle) against
//!   the plain-Rust reference `jitdiff_problems::rosenbrock::rosenbrock`.
//! - Call overhead of a 2-argument scalar function through the safe handles (`typed`,
//!   `call_into`, `call`), against an indirect call of a Rust `extern "C"` function.
//! - Compile latency: generated straight-line functions of 1,000 and 10,000 instructions, and
//!   the four example programs.
//!
//! After criterion's report, a summary measures the ratios the project tracks in one interleaved
//! run (the machine is shared, so ratios are steadier than absolute times). The cost of bounds
//! checks (checked vs unchecked code) is measured by `jit/benches/bounds_checks.rs`, because
//! turning checks off is an explicit opt-in that only the jit crate may use.
//!
//! Run: `cargo bench --bench primal -- --warm-up-time 1 --measurement-time 3`.

use criterion::{BenchmarkId, Criterion};
use jitdiff_ir::{ExternRegistry, Module, RuntimeValue, parse_module};
use jitdiff_jit::{Arg, CompiledFn, JitOptions, compile};
use jitdiff_problems::rosenbrock::rosenbrock;
use jitdiff_problems::{Gmm, Mlp, Pendulum, Problem, Rosenbrock};
use std::hint::black_box;
use std::time::{Duration, Instant};

const ROSENBROCK_N: usize = 100_000;

fn compile_module(module: &Module) -> jitdiff_jit::CompiledModule {
    compile(module, &ExternRegistry::new(), &JitOptions::new()).expect("compiles")
}

fn rosenbrock_jit() -> CompiledFn {
    let module = parse_module(Rosenbrock::new(2).ir()).expect("parses");
    compile_module(&module).function("rosenbrock").expect("has @rosenbrock")
}

fn run_rosenbrock(f: &CompiledFn, x: &[f64], out: &mut [RuntimeValue; 1]) -> f64 {
    f.call_into(&mut [Arg::Slice(x)], out).expect("in bounds");
    out[0].as_f64().unwrap_or(f64::NAN)
}

/// A 2-argument scalar function: `(a + b) * a`.
fn scalar_module() -> Module {
    parse_module("func @f(a: f64, b: f64) -> f64 {\nentry:\n    s = fadd a, b\n    p = fmul s, a\n    ret p\n}\n")
        .expect("parses")
}

extern "C" fn rust_scalar(a: f64, b: f64) -> f64 {
    (a + b) * a
}

/// A straight-line function of `n` float instructions whose operands are recent values (short
/// live ranges, like ordinary expression code): `v_k = op(v_{k-1}, v_{k-1-r})`, r < 8.
fn straight_line(n: usize) -> Module {
    let mut text =
        String::from("func @line(x: f64, y: f64) -> f64 {\nentry:\n    v0 = fadd x, y\n    v1 = fmul x, y\n");
    for k in 2..n {
        let op = ["fadd", "fmul", "fsub", "fadd", "fmul", "fdiv"][k % 6];
        let r = (k * 7 + 3) % 8;
        let other = k.saturating_sub(2 + r).min(k - 2);
        text.push_str(&format!("    v{k} = {op} v{}, v{other}\n", k - 1));
    }
    text.push_str(&format!("    ret v{}\n}}\n", n - 1));
    parse_module(&text).expect("parses")
}

fn example_modules() -> Vec<(String, Module)> {
    let problems: Vec<Box<dyn Problem>> = vec![
        Box::new(Rosenbrock::new(2)),
        Box::new(Gmm::generate(2, 2, 2, 1)),
        Box::new(Pendulum::with_steps(1)),
        Box::new(Mlp::generate(2, 2, 2, 1)),
    ];
    problems.iter().map(|p| (p.entry().to_string(), parse_module(p.ir()).expect("parses"))).collect()
}

fn bench_rosenbrock(c: &mut Criterion) {
    let x = Rosenbrock::new(ROSENBROCK_N).x;
    let f = rosenbrock_jit();
    let mut out = [RuntimeValue::F64(0.0)];
    assert_eq!(run_rosenbrock(&f, &x, &mut out).to_bits(), rosenbrock(&x).to_bits());
    let mut group = c.benchmark_group(format!("primal/rosenbrock n={ROSENBROCK_N}"));
    group.bench_function("rust", |b| b.iter(|| rosenbrock(black_box(&x))));
    group.bench_function("jit checked", |b| b.iter(|| run_rosenbrock(&f, black_box(&x), &mut out)));
    group.finish();
}

fn bench_call_overhead(c: &mut Criterion) {
    let f = compile_module(&scalar_module()).function("f").expect("has @f");
    let typed = f.typed::<(f64, f64), f64>().expect("(f64, f64) -> f64");
    let rust: extern "C" fn(f64, f64) -> f64 = black_box(rust_scalar);
    let mut out = [RuntimeValue::F64(0.0)];
    let mut group = c.benchmark_group("call overhead (a + b) * a");
    group.bench_function("rust fn pointer", |b| b.iter(|| rust(black_box(1.5), black_box(2.0))));
    group.bench_function("typed", |b| b.iter(|| typed.call((black_box(1.5), black_box(2.0)))));
    group.bench_function("call_into", |b| {
        b.iter(|| f.call_into(&mut [Arg::F64(black_box(1.5)), Arg::F64(black_box(2.0))], &mut out))
    });
    group.bench_function("call", |b| b.iter(|| f.call(&mut [Arg::F64(black_box(1.5)), Arg::F64(black_box(2.0))])));
    group.finish();
}

fn bench_compile(c: &mut Criterion) {
    let mut group = c.benchmark_group("compile");
    group.sample_size(20);
    for n in [1_000, 10_000] {
        let module = straight_line(n);
        group.bench_with_input(BenchmarkId::new("straight-line", n), &module, |b, m| b.iter(|| compile_module(m)));
    }
    for (name, module) in example_modules() {
        group.bench_with_input(BenchmarkId::new("example", &name), &module, |b, m| b.iter(|| compile_module(m)));
    }
    group.finish();
}

/// Median seconds per run of `f` over `rounds` rounds of `reps` runs each.
fn median_time(rounds: usize, reps: usize, mut f: impl FnMut()) -> f64 {
    let mut times: Vec<f64> = (0..rounds)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..reps {
                f();
            }
            start.elapsed().as_secs_f64() / reps as f64
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// Ratios measured in one run, interleaving the variants compared.
fn summary() {
    let x = Rosenbrock::new(ROSENBROCK_N).x;
    let f = rosenbrock_jit();
    let mut out = [RuntimeValue::F64(0.0)];
    let (mut rust_times, mut jit_times) = (vec![], vec![]);
    for _ in 0..15 {
        rust_times.push(median_time(3, 20, || {
            black_box(rosenbrock(black_box(&x)));
        }));
        jit_times.push(median_time(3, 20, || {
            black_box(run_rosenbrock(&f, black_box(&x), &mut out));
        }));
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (rust_t, jit_t) = (median(&mut rust_times), median(&mut jit_times));
    println!(
        "summary: rosenbrock n={ROSENBROCK_N}: rust {:.1} µs, jit (checked) {:.1} µs, ratio {:.2} (target <= 1.3)",
        rust_t * 1e6,
        jit_t * 1e6,
        jit_t / rust_t
    );

    let scalar = compile_module(&scalar_module()).function("f").expect("has @f");
    let typed = scalar.typed::<(f64, f64), f64>().expect("typed");
    let rust: extern "C" fn(f64, f64) -> f64 = black_box(rust_scalar);
    let per_call = |g: &mut dyn FnMut()| median_time(11, 200_000, g) * 1e9;
    let rust_ns = per_call(&mut || {
        black_box(rust(black_box(1.5), black_box(2.0)));
    });
    let typed_ns = per_call(&mut || {
        black_box(typed.call((black_box(1.5), black_box(2.0))).ok());
    });
    let into_ns = per_call(&mut || {
        black_box(scalar.call_into(&mut [Arg::F64(black_box(1.5)), Arg::F64(black_box(2.0))], &mut out).ok());
    });
    let call_ns = per_call(&mut || {
        black_box(scalar.call(&mut [Arg::F64(black_box(1.5)), Arg::F64(black_box(2.0))]).ok());
    });
    println!(
        "summary: 2-arg scalar call: rust fn pointer {rust_ns:.1} ns; typed {typed_ns:.1} ns, call_into {into_ns:.1} ns, call {call_ns:.1} ns (target overhead <= 15 ns)"
    );

    for n in [1_000, 10_000] {
        let module = straight_line(n);
        let t = median_time(if n > 1_000 { 7 } else { 21 }, 1, || {
            black_box(compile_module(&module));
        });
        println!(
            "summary: compile straight-line {n} instructions: {:.2} ms{}",
            t * 1e3,
            if n == 1_000 { " (target <= 5 ms)" } else { "" }
        );
    }
    for (name, module) in example_modules() {
        let t = median_time(21, 1, || {
            black_box(compile_module(&module));
        });
        println!("summary: compile example @{name}: {:.2} ms", t * 1e3);
    }
}

fn main() {
    let mut criterion = Criterion::default().warm_up_time(Duration::from_secs(1)).configure_from_args();
    bench_rosenbrock(&mut criterion);
    bench_call_overhead(&mut criterion);
    bench_compile(&mut criterion);
    criterion.final_summary();
    // `cargo test --benches` runs benches in test mode: skip the timing summary there.
    if !std::env::args().any(|a| a == "--test" || a == "--list") {
        summary();
    }
}
