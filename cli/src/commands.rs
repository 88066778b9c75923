//! The evaluating subcommands: `run`, `grad`, `jvp`, `jacobian`, `check`.

use super::error::CliError;
use super::inputs::default_inputs;
use super::load::load;
use super::values::{
    coordinate_labels, format_value, output_labels, parse_args, parse_tangents, parse_wrt, scalars_in,
};
use jitdiff::fd::FdOptions;
use jitdiff::ir::{ArgValue, InterpError, Interpreter};
use jitdiff::jit::Arg;
use jitdiff::{ForwardFn, GradientFn, JacobianFn, PrimalFn};

/// `jitdiff run`: call the function (JIT-compiled, or the interpreter with `interp`).
pub fn run(file: &str, name: Option<&str>, texts: &[String], interp: bool) -> Result<(), CliError> {
    let loaded = load(file, name)?;
    let mut args = parse_args(&loaded, texts)?;
    let results = if interp {
        // A Rust file runs as written (the same program), whose instructions know their line.
        let (module, spans) = match &loaded.rust.as_written {
            Some((module, spans)) => (module, spans),
            None => (&loaded.module, &loaded.spans),
        };
        match Interpreter::new(module).call(&loaded.name, &mut args) {
            Err(InterpError::Fault(fault)) => {
                let position = spans.site(module, fault.site());
                let (function, fault) = (loaded.name.clone(), Box::new(fault));
                return Err(jitdiff::Error::Fault { function, fault, position, in_derivative: false }.into());
            }
            other => other?,
        }
    } else {
        // Through the handle, so that a fault names the line and column of the IR text.
        let primal = PrimalFn::builder(&loaded.module, &loaded.name)
            .source_map(&loaded.spans)
            .rust_source(&loaded.rust)
            .build()?;
        let mut native_args: Vec<Arg<'_>> = args.iter_mut().map(Arg::from).collect();
        primal.call(&mut native_args)?
    };
    println!("@{}{}", loaded.name, loaded.signature());
    for (i, r) in results.iter().enumerate() {
        println!("result {i}: {}", format_value(r));
    }
    for ((name, _), a) in loaded.params().iter().zip(&args) {
        if let ArgValue::SliceMut(v) = a {
            println!("{name} after the call: [{}]", v.iter().map(|x| format!("{x:?}")).collect::<Vec<_>>().join(", "));
        }
    }
    Ok(())
}

/// `jitdiff grad`: value and gradient (`GradientMode::Auto`: forward lanes for at most 4 inputs,
/// reverse mode otherwise).
pub fn grad(file: &str, name: Option<&str>, texts: &[String], wrt: Option<&str>) -> Result<(), CliError> {
    let loaded = load(file, name)?;
    let mut args = parse_args(&loaded, texts)?;
    let wrt = parse_wrt(&loaded, wrt)?;
    let f = GradientFn::builder(&loaded.module, &loaded.name)
        .wrt_mask(&wrt)
        .source_map(&loaded.spans)
        .rust_source(&loaded.rust)
        .build()?;
    let labels = coordinate_labels(&loaded, &wrt, &args);
    let mut gradient = vec![0.0; labels.len()];
    let mut native: Vec<Arg<'_>> = args.iter_mut().map(Arg::from).collect();
    let value = f.value_and_grad(&mut native, &mut gradient)?;
    let norm = gradient.iter().fold(0.0, |acc: f64, g| acc + g * g).sqrt();
    println!("value: {value:?}");
    println!("gradient ({} entries, norm {norm:.6e}):", gradient.len());
    for (label, g) in labels.iter().zip(&gradient) {
        println!("  {label} = {g:?}");
    }
    Ok(())
}

/// `jitdiff jvp`: one forward sweep with W tangent lanes.
pub fn jvp(
    file: &str,
    name: Option<&str>,
    texts: &[String],
    wrt: Option<&str>,
    width: u8,
    tangent_texts: &[String],
) -> Result<(), CliError> {
    let loaded = load(file, name)?;
    let mut args = parse_args(&loaded, texts)?;
    let wrt = parse_wrt(&loaded, wrt)?;
    let w = width as usize;
    let labels = coordinate_labels(&loaded, &wrt, &args);
    let (tangents, seeded) = if tangent_texts.is_empty() {
        // Lane l seeds the l-th differentiated scalar: the first W columns of the Jacobian.
        let mut tangents: Vec<Vec<f64>> =
            (0..wrt.len()).filter(|&p| wrt[p]).map(|p| vec![0.0; scalars_in(&args[p]) * w]).collect();
        let mut seeded = vec![];
        let (mut param, mut element) = (0, 0);
        for lane in 0..w.min(labels.len()) {
            while element >= tangents[param].len() / w {
                param += 1;
                element = 0;
            }
            tangents[param][element * w + lane] = 1.0;
            seeded.push(labels[lane].clone());
            element += 1;
        }
        (tangents, Some(seeded))
    } else {
        (parse_tangents(&loaded, &wrt, w, &args, tangent_texts)?, None)
    };
    let f = ForwardFn::builder(&loaded.module, &loaded.name)
        .wrt_mask(&wrt)
        .source_map(&loaded.spans)
        .rust_source(&loaded.rust)
        .width(width)
        .build()?;
    let views: Vec<&[f64]> = tangents.iter().map(Vec::as_slice).collect();
    let mut native: Vec<Arg<'_>> = args.iter_mut().map(Arg::from).collect();
    let (values, out) = f.jvp(&mut native, &views)?;
    drop(native);
    for (i, v) in values.iter().enumerate() {
        println!("result {i}: {}", format_value(v));
    }
    match &seeded {
        Some(seeded) => println!("tangents: W = {w}, lane l seeds one input: {}", seeded.join(", ")),
        None => println!("tangents: W = {w}, as given by --tangents"),
    }
    let list = |xs: &[f64]| xs.iter().map(|x| format!("{x:?}")).collect::<Vec<_>>().join(", ");
    let float_results = loaded.func().returns.iter().filter(|t| **t == jitdiff::ir::Type::F64).count();
    let (results, mut slices) = out.split_at(float_results * w);
    for (k, lanes) in results.chunks(w).enumerate() {
        println!("tangent of f64 result {k}: [{}]", list(lanes));
    }
    // An mslice's final contents are outputs too, with their tangents.
    for ((name, _), a) in loaded.params().iter().zip(&args) {
        if let ArgValue::SliceMut(v) = a {
            let (t, rest) = slices.split_at(v.len() * w);
            slices = rest;
            println!("{name} after the call: [{}]", list(v));
            println!("tangent of {name} after the call (W = {w} lanes per element): [{}]", list(t));
        }
    }
    Ok(())
}

/// `jitdiff jacobian`: the Jacobian by batched forward or reverse sweeps, whichever fits.
pub fn jacobian(
    file: &str,
    name: Option<&str>,
    texts: &[String],
    wrt: Option<&str>,
    width: u8,
) -> Result<(), CliError> {
    let loaded = load(file, name)?;
    let mut args = parse_args(&loaded, texts)?;
    let wrt = parse_wrt(&loaded, wrt)?;
    let labels = coordinate_labels(&loaded, &wrt, &args);
    let f = JacobianFn::builder(&loaded.module, &loaded.name)
        .wrt_mask(&wrt)
        .source_map(&loaded.spans)
        .rust_source(&loaded.rust)
        .width(width)
        .build()?;
    let mut native: Vec<Arg<'_>> = args.iter_mut().map(Arg::from).collect();
    let mode = f.mode_for(&native);
    let j = f.jacobian(&mut native)?;
    let sweeps = match mode {
        jitdiff::JacobianMode::Reverse => {
            format!("one forward run and {} reverse sweep(s)", j.rows.div_ceil(width as usize))
        }
        _ => format!("{} forward sweep(s)", j.cols.div_ceil(width as usize)),
    };
    println!("Jacobian: {} output(s) × {} input(s), {sweeps} of width {width}", j.rows, j.cols);
    let outputs = output_labels(&loaded, &args);
    for (r, output) in outputs.iter().enumerate() {
        println!("d({output}):");
        for (c, label) in labels.iter().enumerate() {
            println!("  d/d{label} = {:?}", j.get(r, c));
        }
    }
    Ok(())
}

/// Options of `jitdiff check`.
pub struct CheckArgs<'a> {
    /// `--args`, if given.
    pub texts: Option<&'a [String]>,
    /// `--wrt`, if given.
    pub wrt: Option<&'a str>,
    /// `--tol`.
    pub tolerance: f64,
    /// `--rows`.
    pub rows: usize,
}

/// `jitdiff check`: AD against central differences (the gradient, or the Jacobian of a function
/// whose outputs are `mslice` contents); an error above the tolerance fails.
pub fn check(file: &str, name: Option<&str>, options: CheckArgs<'_>) -> Result<(), CliError> {
    let loaded = load(file, name)?;
    let (args, problem_wrt, description) = match options.texts {
        Some(texts) => (parse_args(&loaded, texts)?, None, "the point given by --args".to_string()),
        None => {
            let inputs = default_inputs(&loaded, None);
            (inputs.args, inputs.wrt, inputs.description)
        }
    };
    let wrt = match (options.wrt, problem_wrt) {
        (None, Some(w)) => w,
        (spec, _) => parse_wrt(&loaded, spec)?,
    };
    let grad = GradientFn::builder(&loaded.module, &loaded.name)
        .wrt_mask(&wrt)
        .source_map(&loaded.spans)
        .rust_source(&loaded.rust)
        .build()?;
    let mut args = args;
    let mut native: Vec<Arg<'_>> = args.iter_mut().map(Arg::from).collect();
    // A function without an `f64` result (its outputs are `mslice` contents): its Jacobian.
    let vector_valued = !loaded.func().returns.contains(&jitdiff::ir::Type::F64);
    let options_fd = FdOptions::central().parallel(true);
    let report = if vector_valued {
        jitdiff::check::jacobian(&grad, &mut native, options_fd)?
    } else {
        jitdiff::check::gradient(&grad, &mut native, options_fd)?
    };
    println!("point: {description}");
    println!("{}", report.table(options.rows));
    println!("tolerance on the relative error: {:.1e}", options.tolerance);
    if !report.passes(options.tolerance) {
        return Err(CliError::CheckFailed { max_rel: report.max_rel_err, tolerance: options.tolerance });
    }
    println!("OK");
    Ok(())
}
