//! The report's "Rust source vs IR" section: each benchmark program written as plain Rust
//! (`jitdiff_problems::rust`, lowered by the front end) against its hand-written IR
//! (`examples/ir/`): derive + compile time of the two modules, the same with the front end
//! against the IR parser included, and `value_and_grad` time per call, on the same inputs.

use super::error::CliError;
use super::timing::human;
use jitdiff::ir::{ArgValue, Module, parse_module};
use jitdiff::jit::Arg;
use jitdiff::{GradientFn, GradientMode};
use jitdiff_problems::{Gmm, Mlp, Pendulum, Problem, Rosenbrock, rust};
use std::fmt::Write;
use std::time::{Duration, Instant};

/// One program: the IR problem, its Rust source and the Rust function's arguments.
struct Program {
    problem: Box<dyn Problem>,
    source: &'static str,
    /// The Rust signature's arguments, from the IR's (they differ for MLP and GMM).
    rust_args: fn(Vec<ArgValue>) -> Vec<ArgValue>,
}

fn same(args: Vec<ArgValue>) -> Vec<ArgValue> {
    args
}

/// `b2` is a one-element slice in the IR and an `f64` in Rust.
fn mlp_args(mut args: Vec<ArgValue>) -> Vec<ArgValue> {
    let b2 = args[3].as_slice().map_or(f64::NAN, |s| s[0]);
    args[3] = ArgValue::F64(b2);
    args
}

fn programs(quick: bool) -> Vec<Program> {
    let scale = |full: usize, small: usize| if quick { small } else { full };
    vec![
        Program { problem: Box::new(Rosenbrock::new(scale(1000, 100))), source: rust::ROSENBROCK, rust_args: same },
        Program { problem: Box::new(Pendulum::with_steps(scale(1000, 100))), source: rust::PENDULUM, rust_args: same },
        Program { problem: Box::new(Mlp::generate(32, 64, scale(256, 16), 1)), source: rust::MLP, rust_args: mlp_args },
        Program { problem: Box::new(Gmm::generate(10, 25, scale(1000, 50), 1)), source: rust::GMM, rust_args: same },
    ]
}

/// Best of `reps` derive + compile times of the gradient of `@entry` (with `make` included), and
/// without `make`.
fn build_time(
    reps: usize,
    make: impl Fn() -> Result<Module, CliError>,
    entry: &str,
    wrt: &[bool],
) -> Result<(f64, f64, GradientFn), CliError> {
    let (mut best, mut best_derive) = (f64::MAX, f64::MAX);
    let mut handle = None;
    for _ in 0..reps {
        let start = Instant::now();
        let module = make()?;
        let made = Instant::now();
        // Reverse mode: `build()` compiles it (in Auto mode the compile may wait for a call).
        let g = GradientFn::builder(&module, entry).wrt_mask(wrt).gradient_mode(GradientMode::Reverse).build()?;
        best = best.min(start.elapsed().as_secs_f64());
        best_derive = best_derive.min(made.elapsed().as_secs_f64());
        handle = Some(g);
    }
    Ok((best, best_derive, handle.expect("reps > 0")))
}

/// Seconds per call of `a` and of `b`: the best of many short blocks of calls, the two
/// alternating, so that load on a shared machine (which only ever adds time) and drift affect
/// both alike.
fn best_interleaved<E>(
    budget: Duration,
    mut a: impl FnMut() -> Result<(), E>,
    mut b: impl FnMut() -> Result<(), E>,
) -> Result<(f64, f64), E> {
    let start = Instant::now();
    a()?;
    b()?;
    // Blocks of about a millisecond.
    let calls = ((1e-3 / start.elapsed().as_secs_f64().max(1e-9)) as usize).clamp(1, 10_000);
    let (mut best_a, mut best_b) = (f64::MAX, f64::MAX);
    let start = Instant::now();
    while start.elapsed() < budget {
        let t = Instant::now();
        for _ in 0..calls {
            a()?;
        }
        best_a = best_a.min(t.elapsed().as_secs_f64() / calls as f64);
        let t = Instant::now();
        for _ in 0..calls {
            b()?;
        }
        best_b = best_b.min(t.elapsed().as_secs_f64() / calls as f64);
    }
    Ok((best_a, best_b))
}

/// The section, as Markdown.
pub fn rust_vs_ir(quick: bool) -> Result<String, CliError> {
    let budget = Duration::from_millis(if quick { 30 } else { 500 });
    let reps = if quick { 2 } else { 7 };
    let mut s = String::new();
    let _ = writeln!(s, "\n## Rust source vs IR\n");
    let _ = writeln!(
        s,
        "Each program written once as plain Rust (`problems/rust/`, lowered by `jitdiff::front`) \
         against its hand-written IR (`examples/ir/`), as ratios Rust / IR: derive + compile time \
         of `value_and_grad` from the module (best of 3 × {reps}), the same with making the module \
         included (the front end lowering the Rust source against the IR parser reading the text), \
         and time per call (best of many short blocks of calls, the two alternating), on the same inputs. The two \
         gradients agree to the relative difference shown.\n"
    );
    let _ = writeln!(
        s,
        "| program | derive + compile Rust / IR | front end + derive + compile / parse + derive + compile | VG Rust / IR | derive + compile IR | VG IR | max rel diff |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|");
    for program in programs(quick) {
        let p = program.problem.as_ref();
        let ir_args = p.args();
        let mut rust_values = (program.rust_args)(ir_args.clone());
        let mut ir_values = ir_args;
        let mut wrt = vec![false; ir_values.len()];
        p.active_params().iter().for_each(|&i| wrt[i] = true);
        let mut rust_wrt = wrt.clone();
        rust_wrt.resize(rust_values.len(), false);
        let parse = || parse_module(p.ir()).map_err(|error| CliError::Parse { path: p.label(), error });
        let lower = || {
            jitdiff::front::lower_source(program.source)
                .map_err(|error| CliError::Front { path: p.label(), error: Box::new(error) })
        };
        // Alternating, best of each: the machine is shared, and drift between two long
        // measurements would show as a difference between the programs.
        let (mut ir_compile, mut rust_compile, mut ir_s, mut rust_s) = (f64::MAX, f64::MAX, f64::MAX, f64::MAX);
        let (mut ir_derive, mut rust_derive) = (f64::MAX, f64::MAX);
        let n = p.gradient_len();
        let (mut g_ir, mut g_rust) = (vec![0.0; n], vec![0.0; n]);
        for _ in 0..3 {
            let (t, derive, ir_grad) = build_time(reps, parse, p.entry(), &wrt)?;
            (ir_compile, ir_derive) = (ir_compile.min(t), ir_derive.min(derive));
            let (t, derive, rust_grad) = build_time(reps, lower, p.entry(), &rust_wrt)?;
            (rust_compile, rust_derive) = (rust_compile.min(t), rust_derive.min(derive));
            let (ir, rust) = best_interleaved(
                budget,
                || {
                    let mut args: Vec<Arg<'_>> = ir_values.iter_mut().map(Arg::from).collect();
                    ir_grad.value_and_grad(&mut args, &mut g_ir).map(|_| ())
                },
                || {
                    let mut args: Vec<Arg<'_>> = rust_values.iter_mut().map(Arg::from).collect();
                    rust_grad.value_and_grad(&mut args, &mut g_rust).map(|_| ())
                },
            )?;
            (ir_s, rust_s) = (ir_s.min(ir), rust_s.min(rust));
        }
        let diff = g_ir.iter().zip(&g_rust).fold(0.0f64, |m, (a, b)| {
            let scale = a.abs().max(b.abs());
            if scale == 0.0 { m } else { m.max((a - b).abs() / scale) }
        });
        let _ = writeln!(
            s,
            "| {} | {:.2} | {:.2} | {:.2} | {} | {} | {:.1e} |",
            p.label(),
            rust_derive / ir_derive,
            rust_compile / ir_compile,
            rust_s / ir_s,
            human(ir_derive),
            human(ir_s),
            diff
        );
    }
    Ok(s)
}
