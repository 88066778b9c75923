//! Checkpointed reverse mode on the pendulum at 1,000,000 RK4 steps: the time of a gradient with
//! `Checkpoint::Segments`, a 1 MiB tape budget (`Checkpoint::Bytes`, a binomial schedule) and
//! `Checkpoint::Binomial(16)` against the unbounded one (the tape of every step recorded), the
//! tape each leaves at the end, and a check that the gradients are bit-identical.
//!
//! ```sh
//! cargo run --release --example checkpoint_pendulum [steps]
//! ```

use jitdiff::ad::Checkpoint;
use jitdiff::ir::parse_module;
use jitdiff::{Arg, GradientFn, GradientMode};
use jitdiff_problems::pendulum::{ENTRY, PENDULUM_IR};
use std::time::Instant;

static PARAMS: [f64; 3] = [9.81, 0.25, 0.5];

/// Best of `runs` timings of one gradient, in seconds, with the gradient.
fn best(f: &GradientFn, steps: i64, runs: usize) -> (f64, [f64; 6]) {
    let mut grad = [0.0; 6];
    let mut best = f64::INFINITY;
    for _ in 0..runs {
        let mut args = [Arg::Slice(&PARAMS), Arg::F64(1.0), Arg::F64(0.0), Arg::F64(1e-5), Arg::I64(steps)];
        let start = Instant::now();
        f.value_and_grad(&mut args, &mut grad).expect("a gradient");
        best = best.min(start.elapsed().as_secs_f64());
    }
    (best, grad)
}

fn main() -> Result<(), jitdiff::Error> {
    let steps: i64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1_000_000);
    let m = parse_module(PENDULUM_IR)?;
    let build = |checkpoint| {
        GradientFn::builder(&m, ENTRY)
            .wrt(["params", "theta0", "omega0", "dt"])
            .gradient_mode(GradientMode::Reverse)
            .checkpoint(checkpoint)
            .build()
    };
    let plain = build(Checkpoint::Off)?;
    let (t_plain, g_plain) = best(&plain, steps, 5);
    println!("pendulum, {steps} steps (best of 5):");
    println!("  {:<34} {:9.2} ms, tape {:9} KiB", "unbounded", t_plain * 1e3, plain.tape_bytes() / 1024);
    for rule in [Checkpoint::Segments, Checkpoint::Bytes(1 << 20), Checkpoint::Binomial(16)] {
        let bounded = build(rule)?;
        for l in bounded.checkpoints() {
            println!("  {rule}: @{} loop `{}`: {}", l.func, l.header, l.schedule);
        }
        let (t_bounded, g_bounded) = best(&bounded, steps, 5);
        let identical = g_plain.map(f64::to_bits) == g_bounded.map(f64::to_bits);
        println!(
            "  {:<34} {:9.2} ms, tape {:9} KiB at the end; time / unbounded {:.2}; bit-identical: {identical}",
            rule.to_string(),
            t_bounded * 1e3,
            bounded.tape_bytes() / 1024,
            t_bounded / t_plain
        );
    }
    Ok(())
}
