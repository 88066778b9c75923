//! `jitdiff report`: the benchmark report `docs/perf.md` — every problem of
//! `jitdiff_problems::standard_problems()` timed in one run: jitdiff's primal, JVP, batched JVP,
//! VJP and value_and_grad against the hand-written Rust primal and gradient and central finite
//! differences, as ratios.

use super::bench::time_fd;
use super::error::CliError;
use super::timing::{TimedRow, best_interleaved, best_interleaved_calibrated, human, machine_line, seconds_per_call};
use super::values::scalars_in;
use jitdiff::fd::{FdOptions, FiniteDiff};
use jitdiff::ir::{ExternRegistry, RuntimeValue, parse_module};
use jitdiff::jit::{Arg, JitOptions, compile};
use jitdiff::{ForwardFn, GradientFn, GradientMode, PrimalFn};
use jitdiff_problems::{Problem, standard_problems};
use smallvec::SmallVec;
use std::fmt::Write;
use std::time::{Duration, Instant};

/// One problem's measurements, seconds per call.
struct Row {
    label: String,
    inputs: usize,
    compile_s: f64,
    primal_s: f64,
    rust_primal_s: f64,
    jvp_s: f64,
    jvp8_s: f64,
    vjp_s: f64,
    value_and_grad_s: f64,
    hand_grad_s: Option<f64>,
    /// Largest relative difference between jitdiff's and the hand-written gradient.
    hand_diff: Option<f64>,
    fd_s: f64,
    fd_estimated: bool,
    /// The mode `value_and_grad` took (`GradientMode::Auto`).
    mode: GradientMode,
}

/// A section of the report that can be measured on its own (`jitdiff report --section`).
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Section {
    /// Each benchmark program as plain Rust against its hand-written IR.
    RustVsIr,
    /// A compiled handle's cost over plain Rust at Rosenbrock n = 10.
    PerCall,
    /// The pendulum's gradient by forward lanes against reverse mode.
    PendulumModes,
    /// Derive + compile time against program size.
    CompileCurve,
}

/// Measure one section and print it (no file is written).
pub fn section(section: Section, quick: bool) -> Result<(), CliError> {
    let budget = Duration::from_millis(if quick { 30 } else { 1000 });
    let text = match section {
        Section::RustVsIr => super::rust_vs_ir::rust_vs_ir(quick)?,
        Section::PerCall => per_call_overhead(budget)?,
        Section::PendulumModes => pendulum_modes(budget)?,
        Section::CompileCurve => super::compile_curve::compile_curve(quick)?,
    };
    print!("{text}");
    Ok(())
}

/// Measure every standard problem and write the Markdown report to `out`.
/// `only` keeps the problems whose label contains it.
pub fn report(out: &str, quick: bool, only: Option<&str>) -> Result<(), CliError> {
    let budget = Duration::from_millis(if quick { 30 } else { 1000 });
    let problems: Vec<Box<dyn Problem>> = standard_problems()
        .into_iter()
        .filter(|p| !quick || p.gradient_len() <= 5_000 && !p.label().contains("100000"))
        .filter(|p| only.is_none_or(|o| p.label().contains(o)))
        .collect();
    if problems.is_empty() {
        return Err(CliError::Usage(format!("--only {}: no benchmark problem matches", only.unwrap_or(""))));
    }
    let progress = indicatif::ProgressBar::new(problems.len() as u64);
    let mut rows = vec![];
    for p in &problems {
        progress.set_message(p.label());
        rows.push(measure(p.as_ref(), budget)?);
        progress.inc(1);
    }
    progress.finish_and_clear();
    let mut text = markdown(&rows, quick || only.is_some());
    text += &break_even(&rows);
    if only.is_none() {
        text += &super::rust_vs_ir::rust_vs_ir(quick)?;
        progress.set_message("per-call overhead");
        text += &per_call_overhead(budget)?;
        text += &pendulum_modes(budget)?;
        text += &super::compile_curve::compile_curve(quick)?;
    }
    if let Some(dir) = std::path::Path::new(out).parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| CliError::Write { path: dir.display().to_string(), source })?;
    }
    std::fs::write(out, &text).map_err(|source| CliError::Write { path: out.into(), source })?;
    print!("{text}");
    println!("\nwrote {out}");
    Ok(())
}

fn measure(p: &dyn Problem, budget: Duration) -> Result<Row, CliError> {
    let module = parse_module(p.ir()).map_err(|error| CliError::Parse { path: p.label(), error })?;
    let mut args = p.args();
    let mut wrt = vec![false; args.len()];
    for &i in p.active_params() {
        wrt[i] = true;
    }
    let n = p.gradient_len();

    // The primal as a user builds it (`PrimalFn`: the user's calls inlined), called natively.
    let primal_handle = PrimalFn::builder(&module, p.entry()).build()?;
    let primal = primal_handle.native();
    let f1 = ForwardFn::builder(&module, p.entry()).wrt_mask(&wrt).width(1).build()?;
    let f8 = ForwardFn::builder(&module, p.entry()).wrt_mask(&wrt).width(8).build()?;

    // Derive + compile with the first call (where `GradientMode::Auto` compiles what the call
    // needs: forward lanes for few inputs, else reverse mode), best of 3 fresh handles; one
    // call's time is taken off below. In reverse mode, `prepare` compiles what the call needs
    // and is timed on its own too: a long call's noise (GMM d=20: 0.3 s) would swamp the
    // difference.
    let mut built_and_called_s = f64::INFINITY;
    let mut built_and_prepared_s = f64::INFINITY;
    let mut handle = None;
    for _ in 0..3 {
        let start = Instant::now();
        let grad = GradientFn::builder(&module, p.entry()).wrt_mask(&wrt).build()?;
        let native: SmallVec<[Arg<'_>; 8]> = args.iter_mut().map(Arg::from).collect();
        if grad.mode_for(&native) == GradientMode::Reverse {
            grad.prepare()?;
            built_and_prepared_s = built_and_prepared_s.min(start.elapsed().as_secs_f64());
        }
        drop(native);
        {
            let mut native: SmallVec<[Arg<'_>; 8]> = args.iter_mut().map(Arg::from).collect();
            grad.value_and_grad(&mut native, &mut vec![0.0; n])?;
        }
        built_and_called_s = built_and_called_s.min(start.elapsed().as_secs_f64());
        handle = Some(grad);
    }
    let grad = handle.expect("three builds");

    // Every kind of call timed together, interleaved (see `best_interleaved_calibrated`), each
    // on its own copy of the arguments.
    let mut results: Vec<RuntimeValue> = primal.returns().iter().map(|_| RuntimeValue::F64(0.0)).collect();
    let (mut primal_args, mut vg_args) = (p.args(), p.args());
    let tangents = |w: usize| -> Vec<Vec<f64>> {
        args.iter().zip(&wrt).filter(|(_, on)| **on).map(|(a, _)| vec![1.0; scalars_in(a) * w]).collect()
    };
    let (tangents1, tangents8) = (tangents(1), tangents(8));
    let (views1, views8): (Vec<&[f64]>, Vec<&[f64]>) =
        (tangents1.iter().map(Vec::as_slice).collect(), tangents8.iter().map(Vec::as_slice).collect());
    let (mut out1, mut out8) = (f1.output(), f8.output());
    let (mut jvp1_args, mut jvp8_args) = (p.args(), p.args());
    let mut g = vec![0.0; n];
    let mut hand = vec![0.0; n];
    let has_hand = p.hand_value_and_grad(&mut hand).is_some();
    let mut primal_row = || -> Result<(), CliError> {
        let mut native: SmallVec<[Arg<'_>; 8]> = primal_args.iter_mut().map(Arg::from).collect();
        Ok(primal.call_into(&mut native, &mut results)?)
    };
    let mut rust_row = || -> Result<(), CliError> {
        std::hint::black_box(p.reference());
        Ok(())
    };
    let mut jvp1_row = || -> Result<(), CliError> {
        let mut native: SmallVec<[Arg<'_>; 8]> = jvp1_args.iter_mut().map(Arg::from).collect();
        Ok(f1.jvp_into(&mut native, &views1, &mut out1)?)
    };
    let mut jvp8_row = || -> Result<(), CliError> {
        let mut native: SmallVec<[Arg<'_>; 8]> = jvp8_args.iter_mut().map(Arg::from).collect();
        Ok(f8.jvp_into(&mut native, &views8, &mut out8)?)
    };
    let mut vg_row = || -> Result<(), CliError> {
        let mut native: SmallVec<[Arg<'_>; 8]> = vg_args.iter_mut().map(Arg::from).collect();
        Ok(grad.value_and_grad(&mut native, &mut g).map(|_| ())?)
    };
    let mut hand_row = || -> Result<(), CliError> {
        std::hint::black_box(p.hand_value_and_grad(&mut hand));
        Ok(())
    };
    let mut rows: Vec<TimedRow<'_, CliError>> =
        vec![&mut primal_row, &mut rust_row, &mut jvp1_row, &mut jvp8_row, &mut vg_row];
    if has_hand {
        rows.push(&mut hand_row);
    }
    let times = best_interleaved_calibrated(budget, &mut rows)?;
    drop(rows);
    let [primal_s, rust_primal_s, jvp_s, jvp8_s, value_and_grad_s] = [times[0], times[1], times[2], times[3], times[4]];
    // Timed on its own: a VJP allocates its pullback state on every call (GMM d = 20: about
    // 200 MB), which would disturb the rows interleaved with it.
    let vjp_s = seconds_per_call(budget, 5, || {
        let mut native: SmallVec<[Arg<'_>; 8]> = args.iter_mut().map(Arg::from).collect();
        let (_, mut pullback) = grad.pullback(&mut native)?;
        pullback.apply(&[1.0]).map(|_| ())
    })?;

    let compile_s = if built_and_prepared_s.is_finite() {
        built_and_prepared_s
    } else {
        (built_and_called_s - value_and_grad_s).max(0.0)
    };
    let mode = grad.mode_for(&args.iter_mut().map(Arg::from).collect::<SmallVec<[Arg<'_>; 8]>>());

    let (hand_grad_s, hand_diff) = match has_hand {
        false => (None, None),
        true => {
            let diff = g.iter().zip(&hand).fold(0.0f64, |m, (a, b)| {
                let scale = a.abs().max(b.abs());
                if scale == 0.0 { m } else { m.max((a - b).abs() / scale) }
            });
            (Some(times[5]), Some(diff))
        }
    };

    drop(primal_handle);
    let fd = FiniteDiff::builder(&module, p.entry()).wrt_mask(&wrt).fd_options(FdOptions::central()).build()?;
    let (fd_s, fd_estimated) = time_fd(&fd, &mut args, n, primal_s, budget)?;
    Ok(Row {
        label: p.label(),
        inputs: n,
        compile_s,
        primal_s,
        rust_primal_s,
        jvp_s,
        jvp8_s,
        vjp_s,
        value_and_grad_s,
        hand_grad_s,
        hand_diff,
        fd_s,
        fd_estimated,
        mode,
    })
}

fn markdown(rows: &[Row], quick: bool) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Performance report\n");
    let _ = writeln!(
        s,
        "Generated by `cargo run --release -- report --out docs/perf.md`{} — do not edit by hand.\n",
        if quick { " (with `--quick` or `--only`: a partial run, not the committed report)" } else { "" }
    );
    let _ = writeln!(s, "Machine: {}\n", machine_line());
    let _ = writeln!(
        s,
        "Every figure is a ratio of times measured in this one run (wall-clock, single-threaded), \
         because the machine is shared and absolute times drift. A problem's P, Rust P, JVP, \
         JVP×8, VG and hand grad are the best of 5-10 rounds in which each takes its turn for \
         a tenth to a third of a second, so that load hits them alike; VJP and FD are medians of a \
         few samples taken after them. \
         *P* is jitdiff's JIT-compiled primal (`PrimalFn`); *Rust P* the plain-Rust reference primal \
         (`Problem::reference`); *hand grad* the hand-written Rust value and gradient \
         (`Problem::hand_value_and_grad`, n/a where a problem has none yet). JVP is one forward \
         sweep with one tangent, JVP×8 one sweep with 8 tangent lanes, VJP a forward run recording \
         the pullback state plus one pullback (allocating its result), VG `value_and_grad` (the \
         default `GradientMode::Auto`: forward lanes for at most 4 inputs, marked †, else the \
         fused reverse-mode call). FD is a full central-difference gradient (2 primal calls per input); \
         `~` marks an FD time extrapolated from a subset of the coordinates where the full \
         gradient would take too long.\n"
    );
    let _ = writeln!(s, "## Ratios\n");
    let _ = writeln!(
        s,
        "| problem | inputs | P / Rust P | JVP / P | JVP×8 / P | VJP / P | VG / P | hand grad / Rust P | VG / hand grad | FD / P | FD / VG |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        let na = |x: Option<f64>, f: &dyn Fn(f64) -> String| x.map_or("n/a".to_string(), f);
        let mark = if r.fd_estimated { "~" } else { "" };
        let _ = writeln!(
            s,
            "| {}{} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {} | {} | {mark}{:.0} | {mark}{:.0} |",
            r.label,
            if r.mode == GradientMode::Forward { " †" } else { "" },
            r.inputs,
            r.primal_s / r.rust_primal_s,
            r.jvp_s / r.primal_s,
            r.jvp8_s / r.primal_s,
            r.vjp_s / r.primal_s,
            r.value_and_grad_s / r.primal_s,
            na(r.hand_grad_s, &|h| format!("{:.2}", h / r.rust_primal_s)),
            na(r.hand_grad_s, &|h| format!("{:.2}", r.value_and_grad_s / h)),
            r.fd_s / r.primal_s,
            r.fd_s / r.value_and_grad_s,
        );
    }
    let _ = writeln!(s, "\n## Times per call\n");
    let _ = writeln!(
        s,
        "| problem | P | Rust P | JVP | JVP×8 | VJP | VG | hand grad | FD | derive + compile VG | max rel diff VG vs hand |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {}{} | {} | {} |",
            r.label,
            human(r.primal_s),
            human(r.rust_primal_s),
            human(r.jvp_s),
            human(r.jvp8_s),
            human(r.vjp_s),
            human(r.value_and_grad_s),
            r.hand_grad_s.map_or("n/a".into(), human),
            if r.fd_estimated { "~" } else { "" },
            human(r.fd_s),
            human(r.compile_s),
            r.hand_diff.map_or("n/a".into(), |d| format!("{d:.1e}")),
        );
    }
    s
}

/// Calls after which derive + compile of `value_and_grad` is repaid: against central finite
/// differences of the compiled primal (which need only the primal compiled) and against the
/// hand-written gradient (which needs nothing compiled): `compile / (their time − VG's time)`,
/// when VG is the faster per call.
fn break_even(rows: &[Row]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "\n## Break-even\n");
    let _ = writeln!(
        s,
        "After how many calls derive + compile of `value_and_grad` (`build` and `prepare` where \
         reverse mode computes the gradient; where forward lanes do, `build` and what the first \
         call takes beyond a call, which compiles them; best of 3 fresh handles, compiled on all \
         the machine's cores) is repaid by its faster calls: against central finite \
         differences of the JIT-compiled primal, and against the hand-written gradient (`never` \
         where that is faster per call: the ratio says by how much). The compile time of FD's primal \
         is not counted against FD.\n"
    );
    let _ = writeln!(
        s,
        "| problem | derive + compile VG | VG | FD | calls to repay vs FD | hand grad | calls to repay vs hand grad |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|");
    let repay = |other: f64, vg: f64, compile: f64| {
        if other > vg {
            format!("{:.0}", (compile / (other - vg)).ceil())
        } else {
            format!("never (VG {:.2}×)", vg / other)
        }
    };
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {}{} | {} | {} | {} |",
            r.label,
            human(r.compile_s),
            human(r.value_and_grad_s),
            if r.fd_estimated { "~" } else { "" },
            human(r.fd_s),
            repay(r.fd_s, r.value_and_grad_s, r.compile_s),
            r.hand_grad_s.map_or("n/a".into(), human),
            r.hand_grad_s.map_or("n/a".into(), |h| repay(h, r.value_and_grad_s, r.compile_s)),
        );
    }
    s
}

/// `x` behind an optimisation barrier as a thin reference. A slice reference (pointer and
/// length) through `black_box` is stored to memory and copied back with one 16-byte load, a
/// store-forwarding stall of several nanoseconds charged to whichever call is being timed.
#[inline(always)]
fn opaque_vec(x: &Vec<f64>) -> &Vec<f64> {
    std::hint::black_box(x)
}

/// [`opaque_vec`] for an array.
#[inline(always)]
fn opaque_array(x: &[f64; 10]) -> &[f64; 10] {
    std::hint::black_box(x)
}

/// The cost of a call on a small problem, Rosenbrock n = 10: rustc's primal and hand-written
/// gradient against the JIT primal (`CompiledFn::call_into`) and `value_and_grad` (an argument
/// frame), with the difference to the hand-written gradient.
fn per_call_overhead(budget: Duration) -> Result<String, CliError> {
    use jitdiff_problems::rosenbrock::{ENTRY, ROSENBROCK_IR, rosenbrock, rosenbrock_gradient, standard_start};
    let module = parse_module(ROSENBROCK_IR).map_err(|error| CliError::Parse { path: "rosenbrock".into(), error })?;
    let primal = compile(&module, &ExternRegistry::new(), &JitOptions::new())?.function(ENTRY)?;
    let grad = GradientFn::builder(&module, ENTRY).wrt(["x"]).build()?;
    let x = standard_start(10);
    let typed_primal = PrimalFn::builder(&module, ENTRY).build()?;
    // The demo's model: Extended Rosenbrock written as Rust, the same computation.
    let (macro_primal, macro_gradient) = (super::demo::rosenbrock::primal()?, super::demo::rosenbrock::gradient()?);
    let (mut g, mut g_macro, mut g_hand, mut out) = ([0.0; 10], [0.0; 10], [0.0; 10], [RuntimeValue::F64(0.0)]);
    // Blocks of 2,000 calls (tens of microseconds), as many rounds as the budget allows.
    let rounds = ((budget.as_secs_f64() / 2e-3) as usize).clamp(20, 1000);
    let times = best_interleaved(
        rounds,
        2000,
        &mut [
            &mut || {
                std::hint::black_box(rosenbrock(opaque_vec(&x)));
            },
            &mut || {
                std::hint::black_box(rosenbrock_gradient(opaque_vec(&x), &mut g_hand));
            },
            &mut || {
                let _ = primal.call_into(&mut [Arg::Slice(opaque_vec(&x))], &mut out);
            },
            &mut || {
                if let Ok(y) = jitdiff::typed::call::<f64>(&typed_primal, &mut [Arg::Slice(opaque_vec(&x))]) {
                    std::hint::black_box(y);
                }
            },
            &mut || {
                if let Ok(y) = macro_primal.call(opaque_vec(&x)) {
                    std::hint::black_box(y);
                }
            },
            &mut || {
                if let Ok(y) = grad.value_and_grad(&mut [Arg::Slice(opaque_vec(&x))], &mut g) {
                    std::hint::black_box(y);
                }
            },
            &mut || {
                if let Ok(y) = macro_gradient.value_and_grad_into(opaque_vec(&x), &mut g_macro) {
                    std::hint::black_box(y);
                }
            },
        ],
    );
    let [rust, hand, jit, typed, macro_call, vg, macro_vg] = times[..] else { unreachable!("seven rows timed") };
    let mut s = String::new();
    let _ = writeln!(s, "\n## Per-call overhead at n = 10\n");
    let _ = writeln!(
        s,
        "Rosenbrock n = 10, where a call does little work (best of many short blocks of calls, the \
         rows' blocks interleaved): what a compiled handle costs over plain Rust. The macro's rows \
         call the same function written as Rust (`#[jitdiff::function]`), through its typed \
         handles: a typed native call, arguments straight into registers.\n"
    );
    let _ = writeln!(s, "| call | time | / rustc primal | / hand grad |");
    let _ = writeln!(s, "|---|---:|---:|---:|");
    for (name, t) in [
        ("rustc primal", rust),
        ("hand-written gradient", hand),
        ("JIT primal (`CompiledFn::call_into`)", jit),
        ("JIT primal (`jitdiff::typed::call`, an `Arg` list)", typed),
        ("JIT primal (`#[jitdiff::function]`'s `primal().call`)", macro_call),
        ("`GradientFn::value_and_grad`", vg),
        ("`#[jitdiff::function]`'s `value_and_grad_into`", macro_vg),
    ] {
        let _ = writeln!(s, "| {name} | {} | {:.2} | {:.2} |", human(t), t / rust, t / hand);
    }
    let _ = writeln!(
        s,
        "\n`value_and_grad` costs {:.1} ns more than the hand-written gradient through `GradientFn`, {:.1} ns through the macro's handle.",
        (vg - hand) * 1e9,
        (macro_vg - hand) * 1e9
    );
    s.push_str(&handle_cost(budget)?);
    Ok(s)
}

/// `first_squared` of [`handle_cost`], written as Rust for the macro's handles.
#[jitdiff::function]
fn first_squared_rs(x: &[f64]) -> f64 {
    x[0] * x[0]
}

/// What a handle itself costs per call: a function of one multiply (nothing to compute), called
/// through each kind of handle, against a call of the same function compiled by rustc.
fn handle_cost(budget: Duration) -> Result<String, CliError> {
    #[inline(never)]
    fn square(x: f64) -> f64 {
        x * x
    }
    #[inline(never)]
    fn first_squared(x: &[f64]) -> f64 {
        x[0] * x[0]
    }
    const IR: &str = "func @square(x: f64) -> f64 {\nentry:\n    y = fmul x, x\n    ret y\n}\n\
                      func @first_squared(x: slice) -> f64 {\nentry:\n    i = iconst 0\n    v = load x, i\n    y = fmul v, v\n    ret y\n}\n";
    let module = parse_module(IR).map_err(|error| CliError::Parse { path: "square".into(), error })?;
    let compiled = compile(&module, &ExternRegistry::new(), &JitOptions::new())?;
    let native = compiled.function("square")?;
    let typed_native = native.typed::<(f64,), f64>()?;
    let sliced = compiled.function("first_squared")?;
    let typed_sliced = sliced.typed::<(jitdiff::jit::Slice,), f64>()?;
    let macro_primal = first_squared_rs::primal()?;
    let macro_gradient = first_squared_rs::gradient()?;
    let primal = PrimalFn::builder(&module, "first_squared").build()?;
    let grad = GradientFn::builder(&module, "square").wrt(["x"]).build()?;
    let grad_sliced = GradientFn::builder(&module, "first_squared").wrt(["x"]).build()?;
    let x = [1.5; 10];
    let (mut g1, mut g10, mut g10_macro, mut out) = ([0.0; 1], [0.0; 10], [0.0; 10], [RuntimeValue::F64(0.0)]);
    use std::hint::black_box;
    let names = [
        "rustc `fn(f64) -> f64`, not inlined",
        "rustc `fn(&[f64]) -> f64`, not inlined",
        "`TypedFn::call` (`f64 -> f64`)",
        "`TypedFn::call` (`&[f64] -> f64`)",
        "`#[jitdiff::function]`'s `primal().call` (`&[f64] -> f64`)",
        "`jitdiff::typed::call` (`&[f64] -> f64`)",
        "`CompiledFn::call_into` (`&[f64] -> f64`)",
        "`value_and_grad` (`f64`, forward lanes)",
        "`value_and_grad` (`&[f64]` of 10, reverse)",
        "`#[jitdiff::function]`'s `value_and_grad_into` (`&[f64]` of 10)",
    ];
    // Blocks of 2,000 calls (microseconds each), as many rounds as the budget allows.
    let rounds = ((budget.as_secs_f64() / 4e-4) as usize).clamp(20, 2000);
    let times = best_interleaved(
        rounds,
        2000,
        &mut [
            &mut || {
                black_box(square(black_box(1.5)));
            },
            &mut || {
                black_box(first_squared(opaque_array(&x)));
            },
            &mut || {
                if let Ok(y) = typed_native.call(black_box((1.5,))) {
                    black_box(y);
                }
            },
            &mut || {
                if let Ok(y) = typed_sliced.call((opaque_array(&x),)) {
                    black_box(y);
                }
            },
            &mut || {
                if let Ok(y) = macro_primal.call(opaque_array(&x)) {
                    black_box(y);
                }
            },
            &mut || {
                if let Ok(y) = jitdiff::typed::call::<f64>(&primal, &mut [Arg::Slice(opaque_array(&x))]) {
                    black_box(y);
                }
            },
            &mut || {
                let _ = sliced.call_into(&mut [Arg::Slice(opaque_array(&x))], &mut out);
            },
            &mut || {
                if let Ok(y) = grad.value_and_grad(&mut [Arg::F64(black_box(1.5))], &mut g1) {
                    black_box(y);
                }
            },
            &mut || {
                if let Ok(y) = grad_sliced.value_and_grad(&mut [Arg::Slice(opaque_array(&x))], &mut g10) {
                    black_box(y);
                }
            },
            &mut || {
                if let Ok(y) = macro_gradient.value_and_grad_into(opaque_array(&x), &mut g10_macro) {
                    black_box(y);
                }
            },
        ],
    );
    let rows: Vec<(&str, f64)> = names.into_iter().zip(times).collect();
    let rust = rows[0].1.min(rows[1].1);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nWhat a handle itself costs per call, on functions that do one multiply (`x * x`, `x[0] * x[0]`), against the same compiled by rustc and called without inlining (best of many short blocks of calls, the rows' blocks interleaved; each call's value is consumed as a caller would, `if let Ok(y) = f.call(..)`: passing the whole `Result` to `black_box` adds about 5 ns of its own, writing out the 104-byte error type):\n"
    );
    let _ = writeln!(s, "| call | time | over rustc |");
    let _ = writeln!(s, "|---|---:|---:|");
    for (name, t) in rows {
        let _ = writeln!(s, "| {name} | {} | {:.1} ns |", human(t), (t - rust) * 1e9);
    }
    Ok(s)
}

/// The 3-parameter pendulum's gradient by forward lanes (one 4-lane sweep, what
/// `GradientMode::Auto` takes) against reverse mode, and the same against the primal.
fn pendulum_modes(budget: Duration) -> Result<String, CliError> {
    let p = jitdiff_problems::Pendulum::standard();
    let module = parse_module(p.ir()).map_err(|error| CliError::Parse { path: p.label(), error })?;
    let primal = compile(&module, &ExternRegistry::new(), &JitOptions::new())?.function(p.entry())?;
    let build = |mode| GradientFn::builder(&module, p.entry()).wrt(["params"]).gradient_mode(mode).build();
    let (reverse, forward) = (build(GradientMode::Reverse)?, build(GradientMode::Forward)?);
    let steps = p.steps as i64;
    let args = || [Arg::Slice(&p.params), Arg::F64(p.theta0), Arg::F64(p.omega0), Arg::F64(p.dt), Arg::I64(steps)];
    let (mut g1, mut g2, mut out) = ([0.0; 3], [0.0; 3], [RuntimeValue::F64(0.0)]);
    let rust = seconds_per_call::<CliError>(budget, 9, || {
        std::hint::black_box(p.reference());
        Ok(())
    })?;
    let jit = seconds_per_call(budget, 9, || primal.call_into(&mut args(), &mut out).map_err(CliError::from))?;
    let rev = seconds_per_call(budget, 9, || reverse.value_and_grad(&mut args(), &mut g1).map(|_| ()))?;
    let fwd = seconds_per_call(budget, 9, || forward.value_and_grad(&mut args(), &mut g2).map(|_| ()))?;
    let mut hand = [0.0; 3];
    let hand_s = match p.hand_value_and_grad(&mut hand) {
        Some(_) => Some(seconds_per_call::<CliError>(budget, 9, || {
            std::hint::black_box(p.hand_value_and_grad(&mut hand));
            Ok(())
        })?),
        None => None,
    };
    let diff = g1.iter().zip(&g2).fold(0.0f64, |m, (a, b)| m.max((a - b).abs() / a.abs().max(b.abs())));
    let mut s = String::new();
    let _ = writeln!(s, "\n## The pendulum's gradient: forward lanes against reverse mode\n");
    let _ = writeln!(
        s,
        "{} with 3 differentiated parameters: `value_and_grad` in reverse mode (one forward run \
         recording the pullback state, one pullback) and by forward lanes (one sweep of 4 lanes, \
         what `GradientMode::Auto` takes for at most 4 inputs). Largest relative difference of the \
         two gradients: {diff:.1e}. The same against num-dual and echidna, and Rosenbrock n = 10, \
         with the calls it takes to repay derive + compile against the fastest of them: \
         `cargo bench -p jitdiff-peers`.\n",
        p.label()
    );
    let _ = writeln!(s, "| call | time | / P | / Rust P | / reverse |");
    let _ = writeln!(s, "|---|---:|---:|---:|---:|");
    let mut rows = vec![
        ("JIT primal P", jit),
        ("value_and_grad, reverse mode", rev),
        ("value_and_grad, forward lanes (W = 4)", fwd),
    ];
    if let Some(h) = hand_s {
        rows.push(("hand-written gradient", h));
    }
    for (name, t) in rows {
        let _ = writeln!(s, "| {name} | {} | {:.2} | {:.2} | {:.2} |", human(t), t / jit, t / rust, t / rev);
    }
    Ok(s)
}
