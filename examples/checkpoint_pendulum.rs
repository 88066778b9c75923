//! Checkpointed reverse mode on the pendulum at 1,000,000 RK4 steps: the time of a gradient with
//! `Checkpoint::Segments` against the unbounded one (the tape of every step recorded), the tape
//! each leaves at the end, and a check that the two gradients are bit-identical.
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
    let (plain, bounded) = (build(Checkpoint::Off)?, build(Checkpoint::Segments)?);
    for l in bounded.checkpoints() {
        println!("checkpointed: @{} loop `{}` -> @{} ({})", l.func, l.header, l.steps, l.rule);
    }
    let (t_plain, g_plain) = best(&plain, steps, 5);
    let tape_plain = plain.tape_bytes();
    let (t_bounded, g_bounded) = best(&bounded, steps, 5);
    let tape_bounded = bounded.tape_bytes();
    let identical = g_plain.map(f64::to_bits) == g_bounded.map(f64::to_bits);
    println!("pendulum, {steps} steps (best of 5):");
    println!("  unbounded     {:8.2} ms, tape {:9} KiB", t_plain * 1e3, tape_plain / 1024);
    println!(
        "  checkpointed  {:8.2} ms, tape {:9} KiB at the end (one segment's record on top while it runs)",
        t_bounded * 1e3,
        tape_bounded / 1024
    );
    println!("  time ratio checkpointed / unbounded: {:.2}; gradients bit-identical: {identical}", t_bounded / t_plain);
    Ok(())
}
