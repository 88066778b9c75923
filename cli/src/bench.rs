//! `jitdiff bench`: primal, JVP, batched JVP, value_and_grad and central finite differences of
//! one function at several sizes (inputs by the rule of [`super::inputs`]); a table of ratios,
//! CSV, JSON and an SVG plot.

use super::error::CliError;
use super::inputs::default_inputs;
use super::load::{Loaded, load};
use super::plot;
use super::timing::{human, machine_line, seconds_per_call};
use super::values::{parse_wrt, scalars_in};
use jitdiff::fd::{FdOptions, FiniteDiff};
use jitdiff::ir::{ArgValue, ExternRegistry, RuntimeValue, Type};
use jitdiff::jit::{Arg, CompiledFn, JitOptions, compile};
use jitdiff::{ForwardFn, GradientFn, PrimalFn};
use smallvec::SmallVec;
use std::time::Duration;

/// The batch width of the batched JVP column.
pub const BATCH: u8 = 8;

/// One size's measurements: seconds per call.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BenchRow {
    /// The size n.
    pub size: usize,
    /// Differentiated scalars (the gradient's length).
    pub inputs: usize,
    /// The JIT-compiled primal.
    pub primal_s: f64,
    /// One forward sweep with one tangent.
    pub jvp_s: f64,
    /// One forward sweep with 8 tangent lanes.
    pub jvp8_s: f64,
    /// The fused reverse-mode value and gradient.
    pub value_and_grad_s: f64,
    /// A full central-difference gradient (2 · inputs primal calls), sequential.
    pub fd_s: f64,
    /// Whether `fd_s` was extrapolated from a subset of the coordinates.
    pub fd_estimated: bool,
}

impl BenchRow {
    /// `time / primal`.
    pub fn ratio(&self, seconds: f64) -> f64 {
        seconds / self.primal_s
    }
}

/// Options of `jitdiff bench`.
pub struct BenchArgs<'a> {
    /// The IR file.
    pub file: &'a str,
    /// `--fn`.
    pub name: Option<&'a str>,
    /// `--sizes`.
    pub sizes: Vec<usize>,
    /// `--wrt`.
    pub wrt: Option<&'a str>,
    /// `--out`: the directory for CSV, JSON and SVG.
    pub out: &'a str,
    /// `--quick`: shorter timing.
    pub quick: bool,
}

/// The FD gradient is measured in full when it is expected to take at most this long.
const FD_FULL_LIMIT: f64 = 0.5;

/// Run the benchmark and write its files.
pub fn bench(a: &BenchArgs<'_>) -> Result<(), CliError> {
    let loaded = load(a.file, a.name)?;
    let budget = Duration::from_millis(if a.quick { 20 } else { 300 });
    let progress = indicatif::ProgressBar::new((a.sizes.len() * 5) as u64);
    if let Ok(style) = indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}") {
        progress.set_style(style);
    }
    let mut rows = vec![];
    for &n in &a.sizes {
        rows.push(measure(&loaded, n, a.wrt, budget, &progress)?);
    }
    progress.finish_and_clear();
    let machine = machine_line();
    println!("@{} from {}, inputs by the size rule (jitdiff bench --help); {machine}", loaded.name, loaded.path);
    print!("{}", table(&rows));
    std::fs::create_dir_all(a.out).map_err(|source| CliError::Write { path: a.out.into(), source })?;
    let stem = format!("{}/bench_{}", a.out.trim_end_matches('/'), loaded.name);
    write(&format!("{stem}.csv"), &csv(&rows))?;
    let json = serde_json::json!({ "function": loaded.name, "file": loaded.path, "machine": machine, "rows": rows });
    write(&format!("{stem}.json"), &format!("{json:#}\n"))?;
    plot::draw(&format!("{stem}.svg"), &loaded.name, &rows)?;
    println!("wrote {stem}.csv, {stem}.json and {stem}.svg");
    Ok(())
}

fn write(path: &str, text: &str) -> Result<(), CliError> {
    std::fs::write(path, text).map_err(|source| CliError::Write { path: path.into(), source })
}

fn measure(
    loaded: &Loaded,
    n: usize,
    wrt: Option<&str>,
    budget: Duration,
    progress: &indicatif::ProgressBar,
) -> Result<BenchRow, CliError> {
    let inputs = default_inputs(loaded, Some(n));
    let wrt = match (wrt, inputs.wrt) {
        (None, Some(w)) => w,
        (spec, _) => parse_wrt(loaded, spec)?,
    };
    let mut args = inputs.args;
    let gradient_len: usize = args.iter().zip(&wrt).filter(|(_, w)| **w).map(|(a, _)| scalars_in(a)).sum();
    let step = |what: &str| {
        progress.set_message(format!("n = {n}: {what}"));
    };

    step("primal");
    let compiled = compile(&loaded.module, &ExternRegistry::new(), &JitOptions::new())?;
    let primal = compiled.function(&loaded.name)?;
    let primal_s = time_primal(&primal, &mut args, budget).map_err(|error| user_terms(loaded, &mut args, error))?;
    progress.inc(1);

    step("JVP");
    let jvp_s = time_jvp(loaded, &wrt, 1, &mut args, budget)?;
    progress.inc(1);
    step("batched JVP");
    let jvp8_s = time_jvp(loaded, &wrt, BATCH, &mut args, budget)?;
    progress.inc(1);

    step("value_and_grad");
    let grad = GradientFn::builder(&loaded.module, &loaded.name)
        .wrt_mask(&wrt)
        .source_map(&loaded.spans)
        .rust_source(&loaded.rust)
        .build()?;
    let mut g = vec![0.0; gradient_len];
    let value_and_grad_s = seconds_per_call(budget, 5, || {
        let mut native: SmallVec<[Arg<'_>; 8]> = args.iter_mut().map(Arg::from).collect();
        grad.value_and_grad(&mut native, &mut g).map(|_| ())
    })?;
    progress.inc(1);

    step("finite differences");
    drop(primal);
    let fd =
        FiniteDiff::builder(&loaded.module, &loaded.name).wrt_mask(&wrt).fd_options(FdOptions::central()).build()?;
    let (fd_s, fd_estimated) = time_fd(&fd, &mut args, gradient_len, primal_s, budget)?;
    progress.inc(1);
    Ok(BenchRow { size: n, inputs: gradient_len, primal_s, jvp_s, jvp8_s, value_and_grad_s, fd_s, fd_estimated })
}

/// `error`, a failed call of the bare compiled primal, as the handles report it (the fault at
/// the user's line and column): the call again through a `PrimalFn`.
fn user_terms(loaded: &Loaded, args: &mut [ArgValue], error: CliError) -> CliError {
    let primal =
        PrimalFn::builder(&loaded.module, &loaded.name).source_map(&loaded.spans).rust_source(&loaded.rust).build();
    let mut native: SmallVec<[Arg<'_>; 8]> = args.iter_mut().map(Arg::from).collect();
    match primal.map(|p| p.call(&mut native)) {
        Ok(Err(e)) | Err(e) => e.into(),
        Ok(Ok(_)) => error,
    }
}

/// Seconds per call of the compiled primal (results into a reused buffer).
pub fn time_primal(primal: &CompiledFn, args: &mut [ArgValue], budget: Duration) -> Result<f64, CliError> {
    let mut results: Vec<RuntimeValue> = primal
        .returns()
        .iter()
        .map(|t| match t {
            Type::I64 => RuntimeValue::I64(0),
            Type::Bool => RuntimeValue::Bool(false),
            _ => RuntimeValue::F64(0.0),
        })
        .collect();
    Ok(seconds_per_call(budget, 5, || {
        let mut native: SmallVec<[Arg<'_>; 8]> = args.iter_mut().map(Arg::from).collect();
        primal.call_into(&mut native, &mut results)
    })?)
}

/// Seconds per forward sweep of width `w` (every tangent lane 1).
pub fn time_jvp(
    loaded: &Loaded,
    wrt: &[bool],
    w: u8,
    args: &mut [ArgValue],
    budget: Duration,
) -> Result<f64, CliError> {
    let f = ForwardFn::builder(&loaded.module, &loaded.name).wrt_mask(wrt).width(w).build()?;
    time_forward(&f, wrt, args, budget)
}

/// Seconds per sweep of a compiled forward function.
pub fn time_forward(f: &ForwardFn, wrt: &[bool], args: &mut [ArgValue], budget: Duration) -> Result<f64, CliError> {
    let w = f.width();
    let tangents: Vec<Vec<f64>> =
        args.iter().zip(wrt).filter(|(_, on)| **on).map(|(a, _)| vec![1.0; scalars_in(a) * w]).collect();
    let views: Vec<&[f64]> = tangents.iter().map(Vec::as_slice).collect();
    let mut out = f.output();
    Ok(seconds_per_call(budget, 5, || {
        let mut native: SmallVec<[Arg<'_>; 8]> = args.iter_mut().map(Arg::from).collect();
        f.jvp_into(&mut native, &views, &mut out)
    })?)
}

/// Seconds per full central-difference gradient (sequential); extrapolated from a subset of the
/// coordinates when the full gradient would take longer than [`FD_FULL_LIMIT`].
pub fn time_fd(
    fd: &FiniteDiff,
    args: &mut [ArgValue],
    gradient_len: usize,
    primal_s: f64,
    budget: Duration,
) -> Result<(f64, bool), CliError> {
    let expected = fd.calls_for(gradient_len) as f64 * primal_s;
    if expected <= FD_FULL_LIMIT {
        let native: Vec<Arg<'_>> = args.iter_mut().map(Arg::from).collect();
        return Ok((seconds_per_call(budget, 3, || fd.gradient(&native).map(|_| ()))?, false));
    }
    // Time enough coordinates (spread over the gradient) for about 0.2 s of calls, then scale.
    let k = ((0.2 / (2.0 * primal_s)).ceil() as usize).clamp(1, gradient_len);
    let entries: Vec<usize> = (0..k).map(|i| i * gradient_len / k).collect();
    let native: Vec<Arg<'_>> = args.iter_mut().map(Arg::from).collect();
    let part = seconds_per_call(budget, 3, || fd.gradient_entries(&native, &entries).map(|_| ()))?;
    Ok((part * gradient_len as f64 / k as f64, true))
}

/// The printed table: times and ratios to the primal.
pub fn table(rows: &[BenchRow]) -> String {
    let mut out = format!(
        "{:>8} {:>8} | {:>11} {:>11} {:>11} {:>11} {:>12} | {:>7} {:>7} {:>7} {:>9} {:>9}\n",
        "n", "inputs", "primal", "JVP", "JVP W=8", "val&grad", "FD grad", "JVP/P", "JVP8/P", "VG/P", "FD/P", "FD/VG"
    );
    for r in rows {
        let mark = if r.fd_estimated { "~" } else { "" };
        out.push_str(&format!(
            "{:>8} {:>8} | {:>11} {:>11} {:>11} {:>11} {:>12} | {:>7.2} {:>7.2} {:>7.2} {:>9.1} {:>9.1}\n",
            r.size,
            r.inputs,
            human(r.primal_s),
            human(r.jvp_s),
            human(r.jvp8_s),
            human(r.value_and_grad_s),
            format!("{mark}{}", human(r.fd_s)),
            r.ratio(r.jvp_s),
            r.ratio(r.jvp8_s),
            r.ratio(r.value_and_grad_s),
            r.ratio(r.fd_s),
            r.fd_s / r.value_and_grad_s,
        ));
    }
    if rows.iter().any(|r| r.fd_estimated) {
        out.push_str(
            "~ FD time extrapolated from a subset of the coordinates (the full gradient would take too long)\n",
        );
    }
    out.push_str(
        "ratios are to the primal (P); FD/VG is how much faster reverse-mode AD is than central differences\n",
    );
    out
}

/// The CSV text: one header line, one line per size.
pub fn csv(rows: &[BenchRow]) -> String {
    let mut out = String::from("size,inputs,primal_s,jvp_s,jvp8_s,value_and_grad_s,fd_s,fd_estimated\n");
    for r in rows {
        out.push_str(&format!(
            "{},{},{:e},{:e},{:e},{:e},{:e},{}\n",
            r.size, r.inputs, r.primal_s, r.jvp_s, r.jvp8_s, r.value_and_grad_s, r.fd_s, r.fd_estimated
        ));
    }
    out
}
