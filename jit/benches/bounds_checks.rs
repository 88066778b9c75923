//! What bounds checks cost: Extended Rosenbrock (n = 100,000) as native code with and without
//! checks, against the same function in plain Rust. Prints medians of interleaved runs and the
//! ratios to Rust.
//!
//! Run: `cargo bench -p jitdiff-jit --bench bounds_checks`.

use jitdiff_ir::{ExternRegistry, RuntimeValue, parse_module};
use jitdiff_jit::{Arg, CompiledFn, JitOptions, compile};
use std::hint::black_box;
use std::time::Instant;

const ROSENBROCK_IR: &str = include_str!("../../examples/ir/rosenbrock.ir");

/// The same operation order as the IR (and `jitdiff_problems::rosenbrock`).
fn rosenbrock(x: &[f64]) -> f64 {
    let Some(tail) = x.get(1..) else { return 0.0 };
    x.iter().zip(tail).fold(0.0, |acc, (&xi, &xnext)| {
        let valley = xnext - xi * xi;
        let offset = 1.0 - xi;
        acc + (100.0 * (valley * valley) + offset * offset)
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn time_per_run(reps: usize, mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    for _ in 0..reps {
        f();
    }
    start.elapsed().as_secs_f64() / reps as f64
}

fn jit(options: &JitOptions) -> CompiledFn {
    let module = parse_module(ROSENBROCK_IR).expect("parses");
    compile(&module, &ExternRegistry::new(), options).expect("compiles").function("rosenbrock").expect("@rosenbrock")
}

fn run(f: &CompiledFn, x: &[f64], out: &mut [RuntimeValue; 1]) -> f64 {
    f.call_into(&mut [Arg::Slice(x)], out).expect("in bounds");
    out[0].as_f64().unwrap_or(f64::NAN)
}

fn main() {
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        return;
    }
    let x: Vec<f64> = (0..100_000).map(|i| if i % 2 == 0 { -1.2 } else { 1.0 }).collect();
    let checked = jit(&JitOptions::new());
    // SAFETY: the unchecked function is only ever called below on `x`, for which every index
    // @rosenbrock uses (0 ..= len - 1) is in bounds.
    let unchecked = jit(&unsafe { JitOptions::new().without_bounds_checks() });
    let mut out = [RuntimeValue::F64(0.0)];
    let want = rosenbrock(&x);
    assert_eq!(run(&checked, &x, &mut out).to_bits(), want.to_bits());
    assert_eq!(run(&unchecked, &x, &mut out).to_bits(), want.to_bits());

    let (mut rust_t, mut checked_t, mut unchecked_t) = (vec![], vec![], vec![]);
    for _ in 0..41 {
        rust_t.push(time_per_run(20, || {
            black_box(rosenbrock(black_box(&x)));
        }));
        checked_t.push(time_per_run(20, || {
            black_box(run(&checked, black_box(&x), &mut out));
        }));
        unchecked_t.push(time_per_run(20, || {
            black_box(run(&unchecked, black_box(&x), &mut out));
        }));
    }
    let (r, c, u) = (median(rust_t), median(checked_t), median(unchecked_t));
    println!("rosenbrock n=100000: rust {:.1} µs", r * 1e6);
    println!("  jit, bounds checks on : {:.1} µs, ratio to rust {:.2}", c * 1e6, c / r);
    println!("  jit, bounds checks off: {:.1} µs, ratio to rust {:.2}", u * 1e6, u / r);
    println!("  cost of the checks: {:.1}%", (c / u - 1.0) * 100.0);
}
