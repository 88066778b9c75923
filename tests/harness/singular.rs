//! Checks at points where derivatives are delicate, built around a generated program `g` and
//! its point `x0` (the case's arguments), with `c_k = g_k(x0)` (its `f64` results there):
//!
//! - **zero residuals**: `f(x) = Σ_k (g_k(x) - c_k)²` has Hessian `2 Jᵀ J` at `x0`, where every
//!   residual, and so every cotangent of `g`, is exactly zero. `HvpFn` must give `2 Jᵀ (J v)`
//!   (J v by forward mode, Jᵀ by a pullback) — the curvature a strong-zero product once lost;
//! - **singular points**: `s(x) = Σ_k w_k S_k(g_k(x) - c_k)`, with `S_k` a primitive at its
//!   singular point (`sqrt` at 0, `pow` at a zero base, `asin` at 1, ties of `min`, the origin
//!   of `hypot`/`atan2`, `sqrt(d)·sqrt(d)`, `powi`/`pow` with exponent 0...): forward mode
//!   (`ForwardFn::jacobian`) and reverse mode (`GradientFn`) must agree — both not finite, or
//!   equal to rounding (docs/rules.md, "Singular points").
//!
//! Both wrap `g` in a new function of the same parameters (its differentiated `mslice`s are not
//! differentiated there: their contents are not residuals).

use super::case::Case;
use super::checks::{Check, Failure};
use jitdiff::ir::arbitrary::standard_extern_registry;
use jitdiff::ir::{ArgValue, Module, RuntimeValue, Type, parse_module, print_module};
use jitdiff::jit::{Arg, JitOptions};
use jitdiff::{ForwardFn, GradientFn, GradientMode, HvpFn};
use jitdiff_problems::SplitMix64;

fn failure<T>(check: &'static str, message: impl Into<String>) -> Check<T> {
    Err(Failure { check, message: message.into() })
}

/// The case's module with `func @name` appended: the entry called at the wrapper's parameters,
/// its `f64` results minus their values at `x0`, combined by `body` (which gets the names of
/// the residuals and of the results and returns statements and the returned value).
fn wrap(
    case: &Case,
    name: &str,
    base: &[RuntimeValue],
    body: impl FnOnce(&[String], &[String]) -> (String, String),
) -> Option<Module> {
    let entry = case.module.func_by_name(&case.entry)?;
    let types = entry.param_types();
    if types.iter().chain(&entry.returns).any(|t| matches!(t, Type::F64x(_))) {
        return None;
    }
    let params: Vec<String> = types.iter().enumerate().map(|(i, t)| format!("p{i}: {t}")).collect();
    let args: Vec<String> = (0..types.len()).map(|i| format!("p{i}")).collect();
    let results: Vec<String> = (0..entry.returns.len()).map(|k| format!("r{k}")).collect();
    let mut text = format!("func @{name}({}) -> f64 {{\nentry:\n", params.join(", "));
    if !results.is_empty() {
        text += &format!("    {} = call @{}({})\n", results.join(", "), case.entry, args.join(", "));
    }
    let (mut residuals, mut floats) = (vec![], vec![]);
    for (k, t) in entry.returns.iter().enumerate() {
        let Some(c) = base.get(k).and_then(RuntimeValue::as_f64).filter(|_| *t == Type::F64) else { continue };
        if !c.is_finite() {
            return None;
        }
        text += &format!("    c{k} = fconst {c:?}\n    d{k} = fsub r{k}, c{k}\n");
        residuals.push(format!("d{k}"));
        floats.push(format!("r{k}"));
    }
    if residuals.is_empty() {
        return None;
    }
    let (statements, value) = body(&residuals, &floats);
    text += &statements;
    text += &format!("    ret {value}\n}}\n");
    parse_module(&format!("{}\n{text}", print_module(&case.module))).ok()
}

/// `wrt` without the `mslice` parameters.
fn wrt_without_mslices(case: &Case, wrt: &[bool]) -> Vec<bool> {
    case.param_types().iter().zip(wrt).map(|(t, &w)| w && *t != Type::SliceMut).collect()
}

fn coordinates(primal: &[ArgValue], wrt: &[bool]) -> usize {
    primal.iter().zip(wrt).filter(|(_, w)| **w).map(|(a, _)| a.as_slice().map_or(1, <[f64]>::len)).sum()
}

fn close(a: f64, b: f64, scale: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()) + 1e-12 * scale
}

/// `HvpFn` of `Σ (g_k - c_k)²` at `x0` equals `2 Jᵀ (J v)`. Returns the products compared.
pub fn zero_residual_hvp(case: &Case, wrt: &[bool], primal: &[ArgValue], base: &[RuntimeValue]) -> Check<u64> {
    const CHECK: &str = "HVP where residuals vanish";
    let Some(module) = wrap(case, "zero_residuals", base, |residuals, _| {
        let mut s = String::new();
        let mut sum = String::new();
        for (k, d) in residuals.iter().enumerate() {
            s += &format!("    q{k} = fmul {d}, {d}\n");
            sum = if k == 0 {
                format!("q{k}")
            } else {
                s += &format!("    t{k} = fadd {sum}, q{k}\n");
                format!("t{k}")
            };
        }
        (s, sum)
    }) else {
        return Ok(0);
    };
    let wrt = wrt_without_mslices(case, wrt);
    let n = coordinates(primal, &wrt);
    if n == 0 {
        return Ok(0);
    }
    let externs = standard_extern_registry();
    let options = JitOptions::new();
    // Refusals (stores into an undifferentiated mslice, unsupported constructs) are the other
    // checks' business.
    let Ok(hvp) =
        HvpFn::builder(&module, "zero_residuals").wrt_mask(&wrt).width(1).externs(&externs).options(&options).build()
    else {
        return Ok(0);
    };
    let Ok(forward) = ForwardFn::builder(&case.module, &case.entry)
        .wrt_mask(&wrt)
        .width(1)
        .externs(&externs)
        .options(&options)
        .build()
    else {
        return Ok(0);
    };
    let Ok(reverse) = GradientFn::builder(&case.module, &case.entry)
        .wrt_mask(&wrt)
        .externs(&externs)
        .options(&options)
        .gradient_mode(GradientMode::Reverse)
        .build()
    else {
        return Ok(0);
    };
    let mut rng = SplitMix64::new(case.seed ^ 0x5eed);
    let v: Vec<f64> = (0..n).map(|_| rng.uniform_in(-1.0, 1.0)).collect();

    let mut owned = primal.to_vec();
    let mut args: Vec<Arg<'_>> = owned.iter_mut().map(Arg::from).collect();
    let mut product = vec![f64::NAN; n];
    if hvp.hvp(&mut args, &v, &mut product).is_err() {
        return Ok(0);
    }
    // J v: one direction, split per differentiated parameter.
    let mut owned = primal.to_vec();
    let mut tangent_store: Vec<Vec<f64>> = vec![];
    let mut at = 0;
    for (a, _) in primal.iter().zip(&wrt).filter(|(_, w)| **w) {
        let size = a.as_slice().map_or(1, <[f64]>::len);
        tangent_store.push(v[at..at + size].to_vec());
        at += size;
    }
    let tangents: Vec<&[f64]> = tangent_store.iter().map(Vec::as_slice).collect();
    let mut args: Vec<Arg<'_>> = owned.iter_mut().map(Arg::from).collect();
    let Ok((_, jv)) = forward.jvp(&mut args, &tangents) else { return Ok(0) };
    // The outputs are the `f64` results (the residuals), then the contents of every `mslice`
    // (not residuals: cotangent zero).
    let residuals =
        case.module.func_by_name(&case.entry).map_or(0, |f| f.returns.iter().filter(|t| **t == Type::F64).count());
    let cotangents: Vec<f64> = jv.iter().enumerate().map(|(k, t)| if k < residuals { 2.0 * t } else { 0.0 }).collect();
    let mut owned = primal.to_vec();
    let mut args: Vec<Arg<'_>> = owned.iter_mut().map(Arg::from).collect();
    let Ok((_, mut pullback)) = reverse.pullback(&mut args) else { return Ok(0) };
    let Ok(reference) = pullback.apply(&cotangents) else { return Ok(0) };
    if reference.len() != n || !reference.iter().chain(&product).all(|x| x.is_finite()) {
        return Ok(0);
    }
    let scale = reference.iter().chain(&product).fold(1.0f64, |m, x| m.max(x.abs()));
    if let Some(k) = (0..n).find(|&k| !close(product[k], reference[k], scale)) {
        return failure(CHECK, format!("(H v)[{k}] = {} but 2 Jᵀ J v gives {}", product[k], reference[k]));
    }
    Ok(n as u64)
}

/// Forward and reverse mode agree on `Σ w_k S_k(g_k - c_k)` at `x0`. Returns the gradient
/// entries compared.
pub fn singular_points(case: &Case, wrt: &[bool], primal: &[ArgValue], base: &[RuntimeValue]) -> Check<u64> {
    const CHECK: &str = "forward vs reverse at singular points";
    let mut rng = SplitMix64::new(case.seed ^ 0x51a6);
    let Some(module) = wrap(case, "singular", base, |residuals, floats| {
        let mut s = String::from(
            "    zero = fconst 0.0\n    one = fconst 1.0\n    half = fconst 0.5\n    n0 = iconst 0\n    n1 = iconst 1\n",
        );
        let mut sum = String::from("zero");
        for (k, d) in residuals.iter().enumerate() {
            let other = &residuals[rng.next_u64() as usize % residuals.len()];
            let float = &floats[rng.next_u64() as usize % floats.len()];
            let term = match rng.next_u64() % 13 {
                0 => format!("sqrt {d}"),
                1 => format!("pow {d}, half"),
                2 => format!("abs {d}"),
                3 => format!("min {d}, zero"),
                4 => format!("hypot {d}, {other}"),
                5 => format!("atan2 {d}, {other}"),
                6 => {
                    s += &format!("    a{k} = fadd one, {d}\n");
                    format!("asin a{k}")
                }
                7 => format!("powi {d}, n0"),
                8 => format!("pow {d}, zero"),
                9 => format!("powi {d}, n1"),
                10 => {
                    s += &format!("    h{k} = sqrt {d}\n");
                    format!("fmul h{k}, h{k}")
                }
                11 => {
                    s += &format!("    h{k} = sqrt {d}\n");
                    format!("fmul h{k}, {float}")
                }
                _ => format!("max {d}, {other}"),
            };
            let w = rng.uniform_in(0.5, 2.0);
            s += &format!("    u{k} = {term}\n    w{k} = fconst {w:?}\n    v{k} = fmul w{k}, u{k}\n");
            s += &format!("    s{k} = fadd {sum}, v{k}\n");
            sum = format!("s{k}");
        }
        // The results themselves too, so that most gradients are not zero.
        for (k, r) in floats.iter().enumerate() {
            s += &format!("    e{k} = fadd {sum}, {r}\n");
            sum = format!("e{k}");
        }
        (s, sum)
    }) else {
        return Ok(0);
    };
    let wrt = wrt_without_mslices(case, wrt);
    let n = coordinates(primal, &wrt);
    if n == 0 {
        return Ok(0);
    }
    let externs = standard_extern_registry();
    let options = JitOptions::new();
    let Ok(reverse) = GradientFn::builder(&module, "singular")
        .wrt_mask(&wrt)
        .externs(&externs)
        .options(&options)
        .gradient_mode(GradientMode::Reverse)
        .build()
    else {
        return Ok(0);
    };
    let Ok(forward) =
        ForwardFn::builder(&module, "singular").wrt_mask(&wrt).width(4).externs(&externs).options(&options).build()
    else {
        return failure(CHECK, "reverse mode derived what forward mode refused");
    };
    let mut owned = primal.to_vec();
    let mut args: Vec<Arg<'_>> = owned.iter_mut().map(Arg::from).collect();
    let mut grad = vec![f64::NAN; n];
    let Ok(value) = reverse.value_and_grad(&mut args, &mut grad) else { return Ok(0) };
    if !value.is_finite() {
        return Ok(0);
    }
    let mut owned = primal.to_vec();
    let mut args: Vec<Arg<'_>> = owned.iter_mut().map(Arg::from).collect();
    let jacobian = forward.jacobian(&mut args).or_else(|e| failure(CHECK, format!("jacobian: {e}")))?;
    let scale = grad.iter().filter(|g| g.is_finite()).fold(1.0f64, |m, g| m.max(g.abs()));
    // The residuals' own Jacobian, for the one disagreement the convention allows.
    let mut residual_jacobian = None;
    let mut compared = 0;
    for (j, &g) in grad.iter().enumerate() {
        let f = jacobian.get(0, j);
        let agree = if g.is_finite() && f.is_finite() { close(f, g, scale) } else { !g.is_finite() && !f.is_finite() };
        if agree {
            compared += 1;
            continue;
        }
        // An infinite factor times a derivative that is zero by cancellation (`x - x`): forward
        // mode adds the paths first (0) and the strong zero keeps that term 0; reverse mode
        // multiplies first and adds ∞ - ∞ (docs/rules.md, "Singular points"). Allowed only
        // there: a residual with a zero derivative, forward finite, reverse not.
        if residual_jacobian.is_none() {
            let plain = ForwardFn::builder(&case.module, &case.entry)
                .wrt_mask(&wrt)
                .width(4)
                .externs(&externs)
                .options(&options)
                .build()
                .or_else(|e| failure(CHECK, format!("ForwardFn of the program: {e}")))?;
            let mut owned = primal.to_vec();
            let mut args: Vec<Arg<'_>> = owned.iter_mut().map(Arg::from).collect();
            residual_jacobian = Some(plain.jacobian(&mut args).or_else(|e| failure(CHECK, format!("jacobian: {e}")))?);
        }
        let residuals = residual_jacobian.as_ref().expect("computed above");
        // Zero by cancellation, or zero but for rounding: the program's own forward derivative
        // (plain products) may leave a residue such as 5e-34 of `v + (1 - v)` where the wrapped
        // function's (strong products) cancels to 0.
        let residue = residuals.data.iter().filter(|x| x.is_finite()).fold(1.0f64, |m, x| m.max(x.abs())) * 1e-12;
        let cancelled = (0..residuals.rows).any(|k| residuals.get(k, j).abs() <= residue);
        if !(cancelled && f.is_finite() && !g.is_finite()) {
            return failure(CHECK, format!("entry {j}: forward {f}, reverse {g}"));
        }
    }
    Ok(compared)
}
