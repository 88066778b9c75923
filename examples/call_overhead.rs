//! Per-call overhead of the compiled handles, as ratios measured in one run: Rosenbrock n = 10
//! (`value_and_grad` against the hand-written gradient, the rustc primal and the JIT primal) and
//! the 3-parameter pendulum gradient (reverse mode against forward lanes).
//!
//! `cargo run --release --example call_overhead [-- ROUNDS]`: each figure is the best of ROUNDS
//! (default 200) blocks of about a millisecond, the blocks of the different rows interleaved,
//! so that load on a shared machine (which preempts long blocks) hits every row alike.

use jitdiff::ir::{ExternRegistry, RuntimeValue, parse_module};
use jitdiff::jit::{Arg, JitOptions, compile};
use jitdiff::{ForwardFn, GradientFn};
use jitdiff_problems::Pendulum;
use jitdiff_problems::pendulum::{PENDULUM_IR, pendulum_loss};
use jitdiff_problems::rosenbrock::{ROSENBROCK_IR, rosenbrock, rosenbrock_gradient, standard_start};
use std::hint::black_box;
use std::time::Instant;

/// The best seconds per call of each row over `rounds` interleaved blocks of `calls` calls
/// (a row makes the number of calls it is given).
fn best_of(rounds: usize, calls: usize, rows: &mut [&mut dyn FnMut(usize)]) -> Vec<f64> {
    let mut best = vec![f64::INFINITY; rows.len()];
    for _ in 0..rounds {
        for (row, b) in rows.iter_mut().zip(&mut best) {
            let start = Instant::now();
            row(calls);
            *b = b.min(start.elapsed().as_secs_f64() / calls as f64);
        }
    }
    best
}

/// A row of [`best_of`]: `body` `n` times.
macro_rules! row {
    ($($body:tt)*) => {
        &mut |n: usize| {
            for _ in 0..n {
                $($body)*
            }
        }
    };
}

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(200);

    // Rosenbrock n = 10.
    let m = parse_module(ROSENBROCK_IR).unwrap();
    let primal = compile(&m, &ExternRegistry::new(), &JitOptions::new()).unwrap().function("rosenbrock").unwrap();
    let g = GradientFn::builder(&m, "rosenbrock").wrt(["x"]).build().unwrap();
    let x = standard_start(10);
    let mut out = [RuntimeValue::F64(0.0)];
    let (mut g1, mut g2) = ([0.0; 10], [0.0; 10]);
    let t = best_of(
        rounds,
        10_000,
        &mut [
            row! {
                black_box(rosenbrock(black_box(&x)));
            },
            row! {
                black_box(rosenbrock_gradient(black_box(&x), black_box(&mut g1)));
            },
            row! { primal.call_into(&mut [Arg::Slice(black_box(&x))], &mut out).unwrap(); },
            row! {
                black_box(g.value_and_grad(&mut [Arg::Slice(black_box(&x))], black_box(&mut g2)).unwrap());
            },
        ],
    );
    let [rust, hand, jit_primal, vg] = t[..] else { unreachable!() };
    assert_eq!(g1, g2);
    println!("rosenbrock n=10 (best of {rounds} blocks of 10,000 calls)");
    println!("  rustc primal             {:8.1} ns", rust * 1e9);
    println!("  hand-written gradient    {:8.1} ns", hand * 1e9);
    println!("  JIT primal call_into     {:8.1} ns   / rustc primal {:.2}", jit_primal * 1e9, jit_primal / rust);
    println!(
        "  value_and_grad           {:8.1} ns   / hand {:.2}   / rustc primal {:.2}",
        vg * 1e9,
        vg / hand,
        vg / rust
    );

    // Pendulum, 1000 steps, 3 differentiated parameters.
    let p = Pendulum::standard();
    let m = parse_module(PENDULUM_IR).unwrap();
    let primal = compile(&m, &ExternRegistry::new(), &JitOptions::new()).unwrap().function("pendulum").unwrap();
    let build = |_mode: u8| GradientFn::builder(&m, "pendulum").wrt(["params"]).build().unwrap();
    let (reverse, forward, auto) = (build(0), build(1), build(2));
    let jvp4 = ForwardFn::builder(&m, "pendulum").wrt(["params"]).width(4).build().unwrap();
    let mut jvp_out = jvp4.output();
    let seed = [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0];
    let steps = p.steps as i64;
    let args = || [Arg::Slice(&p.params), Arg::F64(p.theta0), Arg::F64(p.omega0), Arg::F64(p.dt), Arg::I64(steps)];
    let (mut g1, mut g2, mut g3) = ([0.0; 3], [0.0; 3], [0.0; 3]);
    let t = best_of(
        rounds / 4,
        20,
        &mut [
            row! {
                black_box(pendulum_loss(black_box(&p.params), p.theta0, p.omega0, p.dt, p.steps));
            },
            row! { primal.call_into(&mut args(), &mut out).unwrap(); },
            row! {
                black_box(reverse.value_and_grad(&mut args(), &mut g1).unwrap());
            },
            row! {
                black_box(forward.value_and_grad(&mut args(), &mut g2).unwrap());
            },
            row! {
                black_box(auto.value_and_grad(&mut args(), &mut g3).unwrap());
            },
            row! { jvp4.jvp_into(&mut args(), &[&seed], &mut jvp_out).unwrap(); },
        ],
    );
    let [rust, jit_primal, rev, fwd, auto_t, jvp] = t[..] else { unreachable!() };
    println!("pendulum steps=1000, 3 params (best of {} blocks of 20 calls)", rounds / 4);
    println!("  rustc primal             {:8.2} us", rust * 1e6);
    println!("  JIT primal               {:8.2} us   / rustc primal {:.2}", jit_primal * 1e6, jit_primal / rust);
    println!("  value_and_grad reverse   {:8.2} us   / JIT primal {:.2}", rev * 1e6, rev / jit_primal);
    println!("  value_and_grad forward   {:8.2} us   / JIT primal {:.2}", fwd * 1e6, fwd / jit_primal);
    println!("  value_and_grad auto      {:8.2} us   / JIT primal {:.2}", auto_t * 1e6, auto_t / jit_primal);
    println!("  ForwardFn W=4 jvp_into   {:8.2} us   / JIT primal {:.2}", jvp * 1e6, jvp / jit_primal);
    println!("  forward / reverse        {:8.2}", fwd / rev);
    let diff = g1.iter().zip(&g2).map(|(a, b)| (a - b).abs() / a.abs().max(b.abs())).fold(0.0, f64::max);
    println!("  max rel diff forward vs reverse {diff:.1e}");
}
