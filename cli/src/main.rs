//! The `jitdiff` command. With no arguments it runs the demo: Extended Rosenbrock (n = 1,000)
//! from embedded IR — parsed, verified, interpreted, JIT-compiled, differentiated, checked
//! against finite differences and optimised. Subcommands work on IR files and Rust source files
//! (`.rs`): `jitdiff --help`.
//! This file: argument definitions (clap) and dispatch to the subcommands.

mod bench;
mod commands;
mod compile_curve;
mod demo;
mod error;
mod inputs;
mod load;
mod plot;
mod report;
mod rust_vs_ir;
mod show;
mod timing;
mod values;

use clap::{Args, Parser, Subcommand};
use error::CliError;
use show::{Mode, ShowArgs};
use std::process::ExitCode;

/// JIT-compiled automatic differentiation of jitdiff IR files and Rust source files (`.rs`, the
/// subset of docs/rust.md). With no subcommand, runs the demo
/// (Extended Rosenbrock, n = 1000).
///
/// Arguments (`--args`) are given one per parameter, in order: `2.5` (f64), `3` (i64), `true`
/// (bool), `[1, 2, 3]` or `@file` (slice; a file of numbers separated by commas, spaces or
/// newlines). Put FILE before the options: `--args` takes every value up to the next option.
#[derive(Parser, Debug)]
#[command(name = "jitdiff", version, about, long_about)]
pub struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

/// The IR or Rust file and the function in it.
#[derive(Args, Debug)]
struct Target {
    /// The IR text file, or a Rust source file (`.rs`).
    file: String,
    /// The function (without `@`); default: an IR file's first function, a Rust file's last.
    #[arg(long = "fn", value_name = "NAME")]
    func: Option<String>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Evaluate the function (JIT-compiled, or with --interp the reference interpreter).
    Run {
        #[command(flatten)]
        target: Target,
        /// One value per parameter.
        #[arg(long, num_args = 1.., allow_negative_numbers = true)]
        args: Vec<String>,
        /// Use the reference interpreter instead of native code.
        #[arg(long)]
        interp: bool,
    },
    /// Value and gradient of the first f64 result (reverse mode).
    Grad {
        #[command(flatten)]
        target: Target,
        /// One value per parameter.
        #[arg(long, num_args = 1.., allow_negative_numbers = true)]
        args: Vec<String>,
        /// Parameters to differentiate (names or positions, comma-separated); default: every
        /// f64 and slice parameter.
        #[arg(long)]
        wrt: Option<String>,
    },
    /// One forward-mode sweep with W tangent lanes (default tangents: lane l seeds the l-th
    /// differentiated scalar).
    Jvp {
        #[command(flatten)]
        target: Target,
        /// One value per parameter.
        #[arg(long, num_args = 1.., allow_negative_numbers = true)]
        args: Vec<String>,
        /// Parameters to differentiate.
        #[arg(long)]
        wrt: Option<String>,
        /// Tangent lanes: 1, 2, 4, 8 or 16.
        #[arg(long, default_value_t = 1)]
        width: usize,
        /// One tangent per differentiated parameter: W numbers per scalar, lane-interleaved
        /// (`[t0_lane0, t0_lane1, t1_lane0, ...]`).
        #[arg(long, num_args = 1.., allow_negative_numbers = true)]
        tangents: Vec<String>,
    },
    /// The Jacobian of the f64 results by batched forward mode.
    Jacobian {
        #[command(flatten)]
        target: Target,
        /// One value per parameter.
        #[arg(long, num_args = 1.., allow_negative_numbers = true)]
        args: Vec<String>,
        /// Parameters to differentiate.
        #[arg(long)]
        wrt: Option<String>,
        /// Tangent lanes per sweep: 1, 2, 4, 8 or 16.
        #[arg(long, default_value_t = 8)]
        width: usize,
    },
    /// Compare the reverse-mode gradient with central finite differences; exit status 1 when
    /// the largest relative error is above --tol. Without --args, a deterministic point: the
    /// benchmark instance for the example problems, generic inputs otherwise.
    Check {
        #[command(flatten)]
        target: Target,
        /// One value per parameter (optional).
        #[arg(long, num_args = 1.., allow_negative_numbers = true)]
        args: Option<Vec<String>>,
        /// Parameters to differentiate.
        #[arg(long)]
        wrt: Option<String>,
        /// Tolerance on the relative error.
        #[arg(long, default_value_t = 1e-6)]
        tol: f64,
        /// Coordinates to list (the worst ones when there are more).
        #[arg(long, default_value_t = 12)]
        rows: usize,
    },
    /// Print the IR of the function or of its derivatives (and optionally machine code).
    Show {
        #[command(flatten)]
        target: Target,
        /// primal, jvp (forward mode) or vjp (reverse mode: forward function, state, pullback).
        #[arg(long, value_enum, default_value_t = Mode::Primal)]
        mode: Mode,
        /// Tangent lanes for --mode jvp.
        #[arg(long, default_value_t = 1)]
        width: usize,
        /// Parameters to differentiate.
        #[arg(long)]
        wrt: Option<String>,
        /// Checkpoint loops in --mode vjp: off, segments (ceil(sqrt(bound)) iterations), a
        /// segment length, snapshots:K (at most K segment starts recorded), binomial:K (Revolve
        /// with K snapshots) or bytes:N (a tape budget, e.g. bytes:1MiB).
        #[arg(long, default_value = "off")]
        checkpoint: String,
        /// Also print Cranelift IR and x86-64 machine code of every compiled function.
        #[arg(long)]
        asm: bool,
        /// Only compile (used by --asm).
        #[arg(long, hide = true)]
        compile_only: bool,
    },
    /// Time primal, JVP, batched JVP (W = 8), value_and_grad and central FD at several sizes;
    /// print a table of ratios and write CSV, JSON and an SVG plot. Size n means: for
    /// @rosenbrock x = standard_start(n); @gmm n points (d = 2, K = 5); @pendulum n steps; @mlp a
    /// batch of n; any other function: every slice n values in [0.5, 1.5), every integer n.
    Bench {
        #[command(flatten)]
        target: Target,
        /// Sizes, comma-separated.
        #[arg(long, default_value = "10,100,1000,10000")]
        sizes: String,
        /// Parameters to differentiate.
        #[arg(long)]
        wrt: Option<String>,
        /// Directory for bench_NAME.csv, .json and .svg.
        #[arg(long, default_value = "jitdiff-bench")]
        out: String,
        /// Shorter timing (less stable numbers).
        #[arg(long)]
        quick: bool,
    },
    /// Regenerate the benchmark report (the problems of jitdiff_problems against hand-written
    /// Rust and finite differences) as Markdown.
    Report {
        /// The Markdown file to write.
        #[arg(long, default_value = "docs/perf.md")]
        out: String,
        /// Shorter timing and the smaller sizes only (for trying it out).
        #[arg(long)]
        quick: bool,
        /// Only the problems whose label contains this (e.g. `rosenbrock`, `gmm d=2`).
        #[arg(long)]
        only: Option<String>,
        /// Measure and print one of the later sections only, writing no file: `rust-vs-ir`,
        /// `per-call`, `pendulum-modes` or `compile-curve`.
        #[arg(long, conflicts_with = "only")]
        section: Option<report::Section>,
    },
    /// The demo (also what `jitdiff` with no subcommand runs).
    Demo,
}

/// Parse the command line, run, and turn errors into a message and exit status 1.
fn main() -> ExitCode {
    let cli = Cli::parse();
    match dispatch(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn dispatch(cli: Cli) -> Result<(), CliError> {
    let Some(command) = cli.command else { return demo::demo() };
    match command {
        Command::Run { target, args, interp } => commands::run(&target.file, target.func.as_deref(), &args, interp),
        Command::Grad { target, args, wrt } => {
            commands::grad(&target.file, target.func.as_deref(), &args, wrt.as_deref())
        }
        Command::Jvp { target, args, wrt, width, tangents } => {
            let width = values::check_width(width)?;
            commands::jvp(&target.file, target.func.as_deref(), &args, wrt.as_deref(), width, &tangents)
        }
        Command::Jacobian { target, args, wrt, width } => {
            let width = values::check_width(width)?;
            commands::jacobian(&target.file, target.func.as_deref(), &args, wrt.as_deref(), width)
        }
        Command::Check { target, args, wrt, tol, rows } => commands::check(
            &target.file,
            target.func.as_deref(),
            commands::CheckArgs { texts: args.as_deref(), wrt: wrt.as_deref(), tolerance: tol, rows },
        ),
        Command::Show { target, mode, width, wrt, checkpoint, asm, compile_only } => {
            let a = ShowArgs {
                file: &target.file,
                name: target.func.as_deref(),
                mode,
                width: values::check_width(width)?,
                wrt: wrt.as_deref(),
                checkpoint: values::parse_checkpoint(&checkpoint)?,
            };
            if compile_only { show::compile_only(&a) } else { show::show(&a, asm) }
        }
        Command::Bench { target, sizes, wrt, out, quick } => bench::bench(&bench::BenchArgs {
            file: &target.file,
            name: target.func.as_deref(),
            sizes: values::parse_sizes(&sizes)?,
            wrt: wrt.as_deref(),
            out: &out,
            quick,
        }),
        Command::Report { section: Some(section), quick, .. } => report::section(section, quick),
        Command::Report { out, quick, only, section: None } => report::report(&out, quick, only.as_deref()),
        Command::Demo => demo::demo(),
    }
}
