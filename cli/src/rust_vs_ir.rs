//! The report's "Rust source vs IR" section: each benchmark program written as plain Rust
//! (`jitdiff_problems::rust`, lowered by the front end) against its hand-written IR
//! (`examples/ir/`), in derive + compile time (the Rust side includes lowering) and in
//! `value_and_grad` time per call, on the same inputs. The gradients must agree to 1e-13.

use super::error::CliError;
use super::timing::{human, seconds_per_call};
use jitdiff::GradientFn;
use jitdiff::ir::{ArgValue, Module, parse_module};
use jitdiff::jit::Arg;
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

/// The Rust function takes its two work arrays (`K d` and `d` entries) as `&mut [f64]`.
fn gmm_args(mut args: Vec<ArgValue>) -> Vec<ArgValue> {
    let k = args[0].as_slice().map_or(0, <[f64]>::len);
    let d = match args[4] {
        ArgValue::I64(d) => d as usize,
        _ => 0,
    };
    args.push(ArgValue::SliceMut(vec![0.0; k * d]));
    args.push(ArgValue::SliceMut(vec![0.0; d]));
    args
}

fn programs(quick: bool) -> Vec<Program> {
    let scale = |full: usize, small: usize| if quick { small } else { full };
    vec![
        Program { problem: Box::new(Rosenbrock::new(scale(1000, 100))), source: rust::ROSENBROCK, rust_args: same },
        Program { problem: Box::new(Pendulum::with_steps(scale(1000, 100))), source: rust::PENDULUM, rust_args: same },
        Program { problem: Box::new(Mlp::generate(32, 64, scale(256, 16), 1)), source: rust::MLP, rust_args: mlp_args },
        Program {
            problem: Box::new(Gmm::generate(10, 25, scale(1000, 50), 1)),
            source: rust::GMM,
            rust_args: gmm_args,
        },
    ]
}

/// Best of `reps` derive + compile times of the gradient of `@entry`, with `make` included.
fn build_time(
    reps: usize,
    make: impl Fn() -> Result<Module, CliError>,
    entry: &str,
    wrt: &[bool],
) -> Result<(f64, GradientFn), CliError> {
    let mut best = f64::MAX;
    let mut handle = None;
    for _ in 0..reps {
        let start = Instant::now();
        let module = make()?;
        let g = GradientFn::builder(&module, entry).wrt_mask(wrt).build()?;
        best = best.min(start.elapsed().as_secs_f64());
        handle = Some(g);
    }
    Ok((best, handle.expect("reps > 0")))
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
         against its hand-written IR (`examples/ir/`): derive + compile time of `value_and_grad` \
         (best of 3 × {reps}; the Rust side includes lowering the source) and time per call (best \
         of 3 alternating measurements), on the same inputs, as ratios Rust / IR. The two gradients agree to the relative difference shown.\n"
    );
    let _ = writeln!(s, "| program | compile Rust / IR | VG Rust / IR | compile IR | VG IR | max rel diff |");
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|");
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
        let n = p.gradient_len();
        let (mut g_ir, mut g_rust) = (vec![0.0; n], vec![0.0; n]);
        for _ in 0..3 {
            let (t, ir_grad) = build_time(reps, parse, p.entry(), &wrt)?;
            ir_compile = ir_compile.min(t);
            let (t, rust_grad) = build_time(reps, lower, p.entry(), &rust_wrt)?;
            rust_compile = rust_compile.min(t);
            let t = seconds_per_call(budget, 5, || {
                let mut args: Vec<Arg<'_>> = ir_values.iter_mut().map(Arg::from).collect();
                ir_grad.value_and_grad(&mut args, &mut g_ir).map(|_| ())
            })?;
            ir_s = ir_s.min(t);
            let t = seconds_per_call(budget, 5, || {
                let mut args: Vec<Arg<'_>> = rust_values.iter_mut().map(Arg::from).collect();
                rust_grad.value_and_grad(&mut args, &mut g_rust).map(|_| ())
            })?;
            rust_s = rust_s.min(t);
        }
        let diff = g_ir.iter().zip(&g_rust).fold(0.0f64, |m, (a, b)| {
            let scale = a.abs().max(b.abs());
            if scale == 0.0 { m } else { m.max((a - b).abs() / scale) }
        });
        let _ = writeln!(
            s,
            "| {} | {:.2} | {:.2} | {} | {} | {:.1e} |",
            p.label(),
            rust_compile / ir_compile,
            rust_s / ir_s,
            human(ir_compile),
            human(ir_s),
            diff
        );
    }
    Ok(s)
}
