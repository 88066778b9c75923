//! `jitdiff report`: the benchmark report `docs/perf.md` — every problem of
//! `jitdiff_problems::standard_problems()` timed in one run: jitdiff's primal, JVP, batched JVP,
//! VJP and value_and_grad against the hand-written Rust primal and gradient and central finite
//! differences, as ratios.

use super::bench::{time_fd, time_forward};
use super::error::CliError;
use super::timing::{human, machine_line, seconds_per_call};
use jitdiff::fd::{FdOptions, FiniteDiff};
use jitdiff::ir::{ExternRegistry, RuntimeValue, parse_module};
use jitdiff::jit::{Arg, JitOptions, compile};
use jitdiff::{ForwardFn, GradientFn};
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
    if only.is_none() {
        text += &super::rust_vs_ir::rust_vs_ir(quick)?;
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

    let compiled = compile(&module, &ExternRegistry::new(), &JitOptions::new())?;
    let primal = compiled.function(p.entry())?;
    let mut results: Vec<RuntimeValue> = primal.returns().iter().map(|_| RuntimeValue::F64(0.0)).collect();
    let primal_s = seconds_per_call(budget, 5, || {
        let mut native: SmallVec<[Arg<'_>; 8]> = args.iter_mut().map(Arg::from).collect();
        primal.call_into(&mut native, &mut results)
    })?;
    let rust_primal_s = seconds_per_call::<CliError>(budget, 5, || {
        std::hint::black_box(p.reference());
        Ok(())
    })?;

    let f1 = ForwardFn::builder(&module, p.entry()).wrt_mask(&wrt).width(1).build()?;
    let jvp_s = time_forward(&f1, &wrt, &mut args, budget)?;
    let f8 = ForwardFn::builder(&module, p.entry()).wrt_mask(&wrt).width(8).build()?;
    let jvp8_s = time_forward(&f8, &wrt, &mut args, budget)?;

    let start = Instant::now();
    let grad = GradientFn::builder(&module, p.entry()).wrt_mask(&wrt).build()?;
    let compile_s = start.elapsed().as_secs_f64();
    let vjp_s = seconds_per_call(budget, 5, || {
        let mut native: SmallVec<[Arg<'_>; 8]> = args.iter_mut().map(Arg::from).collect();
        let (_, mut pullback) = grad.pullback(&mut native)?;
        pullback.apply(&[1.0]).map(|_| ())
    })?;
    let mut g = vec![0.0; n];
    let value_and_grad_s = seconds_per_call(budget, 5, || {
        let mut native: SmallVec<[Arg<'_>; 8]> = args.iter_mut().map(Arg::from).collect();
        grad.value_and_grad(&mut native, &mut g).map(|_| ())
    })?;

    let mut hand = vec![0.0; n];
    let (hand_grad_s, hand_diff) = match p.hand_value_and_grad(&mut hand) {
        None => (None, None),
        Some(_) => {
            let diff = g.iter().zip(&hand).fold(0.0f64, |m, (a, b)| {
                let scale = a.abs().max(b.abs());
                if scale == 0.0 { m } else { m.max((a - b).abs() / scale) }
            });
            let t = seconds_per_call::<CliError>(budget, 5, || {
                std::hint::black_box(p.hand_value_and_grad(&mut hand));
                Ok(())
            })?;
            (Some(t), Some(diff))
        }
    };

    drop(primal);
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
        "Every figure is a ratio of times measured in this one run (the median of a few samples of \
         wall-clock time, single-threaded), because the machine is shared and absolute times drift. \
         *P* is jitdiff's JIT-compiled primal; *Rust P* the plain-Rust reference primal \
         (`Problem::reference`); *hand grad* the hand-written Rust value and gradient \
         (`Problem::hand_value_and_grad`, n/a where a problem has none yet). JVP is one forward \
         sweep with one tangent, JVP×8 one sweep with 8 tangent lanes, VJP a forward run recording \
         the pullback state plus one pullback (allocating its result), VG the fused \
         `value_and_grad`. FD is a full central-difference gradient (2 primal calls per input); \
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
            "| {} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {} | {} | {mark}{:.0} | {mark}{:.0} |",
            r.label,
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
