//! Nested AD on the generated programs: the case's entry `f` (or, if it has several results,
//! `@nested_first`, which returns its first) gets a declared gradient
//!
//! ```text
//! extern @nested_grad(<f's parameter types>) -> f64, ... = grad <mode> @f wrt i, j, ...
//! func @nested_outer(<f's parameters>) -> f64   ; d_0 + Σ_k d_k · p_{i_k}, d = nested_grad(p)
//! ```
//!
//! with the mode alternating between cases and `i, j, ...` the case's differentiated `f64`
//! parameters (at most three; the first `f64` parameter if it differentiates none). Checked:
//!
//! - the interpreter on the expanded module (`expand_derivatives`) and the JIT on it agree on
//!   `@nested_outer` like on any program (bit for bit, errors included), and `PrimalFn` of the
//!   unexpanded module (which expands it itself) returns the same;
//! - the declared partials equal `GradientFn`'s reverse-mode gradient of `f` to rounding (with
//!   the non-finite conventions of the forward-lanes check for a forward-mode declaration);
//! - the outer derivative of `@nested_outer` (second derivatives of `f`) by `ForwardFn` and,
//!   unless an inner gradient recorded on the tape has no rules (`AdError::NestedDerivative`,
//!   documented), by `GradientFn`'s reverse mode agree with each other, and, for the smooth kinds, with
//!   central differences of `PrimalFn` under the harness's policy (`central_differences`).
//!
//! Cases with an `mslice` or vector parameter or result, or whose first result is not `f64`,
//! are skipped, as are points where `@nested_outer` faults or runs out of steps.

use super::case::Case;
use super::checks::{Check, agree, central_differences, failure, interpret};
use super::probe;
use jitdiff::ad::{AdError, expand_derivatives};
use jitdiff::ir::arbitrary::standard_extern_registry;
use jitdiff::ir::{ArgValue, Module, RuntimeValue, Tape, Type, parse_module, print_module};
use jitdiff::jit::{Agreement, Arg, JitOptions, same_f64, same_value};
use jitdiff::{Error, ForwardFn, GradientFn, GradientMode, PrimalFn};

/// What the nested check did on one case.
#[derive(Clone, Copy, Debug, Default)]
pub struct NestedCoverage {
    /// Cases whose declared gradient was compared (interpreter vs JIT, and against `GradientFn`).
    pub checked: u64,
    /// Cases skipped: no `f64` parameter or first result, `mslice`s, a fault at the point...
    pub skipped: u64,
    /// Entries of the outer derivative compared between forward and reverse mode.
    pub outer_compared: u64,
    /// Outer reverse derivatives refused because an inner gradient records on the tape.
    pub tape_refusals: u64,
    /// Second derivatives compared with central differences.
    pub fd_compared: u64,
}

const AGREE: &str = "nested: interpreter vs JIT";
const PARTIALS: &str = "nested: declared gradient vs GradientFn";
const OUTER: &str = "nested: outer forward vs reverse";
const OUTER_FORWARD: &str = "nested: outer forward derivation";
const FD: &str = "nested: outer forward vs central differences";

/// The modules of the check: `inner` (the case's module, plus `@nested_first` if needed) and
/// `nested` (that plus the declaration and `@nested_outer`), the name of the differentiated
/// function and the declaration's parameters. `None` for a case the check does not apply to.
fn build(case: &Case, forward: bool) -> Option<(Module, Module, String, Vec<usize>)> {
    let entry = case.module.func_by_name(&case.entry)?;
    let types = entry.param_types();
    if entry.returns.first() != Some(&Type::F64)
        || types.iter().chain(&entry.returns).any(|t| matches!(t, Type::F64x(_) | Type::SliceMut))
    {
        return None;
    }
    let floats: Vec<usize> = (0..types.len()).filter(|&i| types[i] == Type::F64).collect();
    let wrt = case.wrt();
    let mut chosen: Vec<usize> = floats.iter().copied().filter(|&i| wrt[i]).take(3).collect();
    if chosen.is_empty() {
        chosen.push(*floats.first()?);
    }
    let params: Vec<String> = types.iter().enumerate().map(|(i, t)| format!("p{i}: {t}")).collect();
    let args: Vec<String> = (0..types.len()).map(|i| format!("p{i}")).collect();
    let mut inner = print_module(&case.module);
    let of = if entry.returns.len() == 1 {
        case.entry.clone()
    } else {
        // A declared gradient needs exactly one f64 result: the first.
        let results: Vec<String> = (0..entry.returns.len()).map(|k| format!("r{k}")).collect();
        inner += &format!(
            "\nfunc @nested_first({}) -> f64 {{\nentry:\n    {} = call @{}({})\n    ret r0\n}}\n",
            params.join(", "),
            results.join(", "),
            case.entry,
            args.join(", ")
        );
        "nested_first".to_string()
    };
    let spelled: Vec<String> = types.iter().map(|t| t.to_string()).collect();
    let partials: Vec<String> = (0..chosen.len()).map(|k| format!("d{k}")).collect();
    let mut outer = format!(
        "extern @nested_grad({}) -> {} = grad {} @{of} wrt {}\n",
        spelled.join(", "),
        vec!["f64"; chosen.len()].join(", "),
        if forward { "forward" } else { "reverse" },
        chosen.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ")
    );
    // d0 + Σ d_k · p_{i_k}: each partial scaled by a parameter, so that the outer derivative
    // mixes second derivatives with the partials themselves.
    outer += &format!(
        "func @nested_outer({}) -> f64 {{\nentry:\n    {} = call @nested_grad({})\n",
        params.join(", "),
        partials.join(", "),
        args.join(", ")
    );
    let mut sum = "d0".to_string();
    for (k, i) in chosen.iter().enumerate() {
        outer += &format!("    t{k} = fmul d{k}, p{i}\n    s{k} = fadd {sum}, t{k}\n");
        sum = format!("s{k}");
    }
    outer += &format!("    ret {sum}\n}}\n");
    let inner_module = parse_module(&inner).ok()?;
    let nested_module = parse_module(&format!("{outer}\n{inner}")).ok()?;
    Some((inner_module, nested_module, of, chosen))
}

/// Run the nested-AD check on `case` at `primal`, where the case's program returned.
pub fn nested(case: &Case, primal: &[ArgValue]) -> Check<NestedCoverage> {
    let mut cov = NestedCoverage::default();
    let skipped = NestedCoverage { skipped: 1, ..NestedCoverage::default() };
    // Forward and reverse declarations alternate (independently of the batch width, seed % 3).
    let forward_inner = (case.seed / 3).is_multiple_of(2);
    let Some((inner, module, of, chosen)) = build(case, forward_inner) else { return Ok(skipped) };
    let externs = standard_extern_registry();
    let options = JitOptions::new();
    let expanded = match expand_derivatives(&module, &Default::default()) {
        Ok(m) => m,
        // Reverse mode refuses a program that uses the tape itself, as the plain checks allow.
        Err(AdError::TapeInReverseMode { .. }) if !forward_inner => return Ok(skipped),
        Err(e) => return failure(AGREE, format!("expand_derivatives: {e}")),
    };

    // (a) The interpreter and the JIT on the expanded module, and PrimalFn on the declaration.
    let (agreement, _) = agree(AGREE, &expanded, &externs, "nested_outer", primal, &Tape::new())?;
    let primal_fn = PrimalFn::builder(&module, "nested_outer")
        .externs(&externs)
        .options(&options)
        .build()
        .or_else(|e| failure(AGREE, format!("PrimalFn::new: {e}")))?;
    let call = |args: &[ArgValue]| {
        let mut owned = args.to_vec();
        let mut args: Vec<Arg<'_>> = owned.iter_mut().map(Arg::from).collect();
        primal_fn.call(&mut args)
    };
    let values = match agreement {
        Agreement::Returned(values) => values,
        Agreement::Failed(kind) => {
            if let Ok(v) = call(primal) {
                return failure(AGREE, format!("PrimalFn returned {v:?} where the interpreter fails ({kind})"));
            }
            return Ok(skipped);
        }
        Agreement::Skipped => return Ok(skipped),
    };
    match call(primal) {
        Ok(v) if v.len() == values.len() && v.iter().zip(&values).all(|(a, b)| same_value(a, b)) => {}
        other => return failure(AGREE, format!("PrimalFn gave {other:?}, the interpreter {values:?}")),
    }
    let value = values[0].as_f64().unwrap_or(f64::NAN);

    // (b) The declared partials against the plain reverse-mode gradient.
    let mut grad_args = primal.to_vec();
    let Some(declared) = interpret(&expanded, "nested_grad", &mut grad_args, &mut Tape::new()) else {
        return failure(PARTIALS, "@nested_grad fails where @nested_outer returns");
    };
    let declared: Vec<f64> = declared.iter().map(|r| r.as_f64().unwrap_or(f64::NAN)).collect();
    let mask: Vec<bool> = (0..primal.len()).map(|i| chosen.contains(&i)).collect();
    let reference = match GradientFn::builder(&inner, &of)
        .wrt_mask(&mask)
        .externs(&externs)
        .options(&options)
        .gradient_mode(GradientMode::Reverse)
        .build()
    {
        Ok(g) => g,
        Err(e) => return failure(PARTIALS, format!("GradientFn of @{of}: {e}")),
    };
    let mut owned = primal.to_vec();
    let mut args: Vec<Arg<'_>> = owned.iter_mut().map(Arg::from).collect();
    let mut want = vec![f64::NAN; chosen.len()];
    let Ok(inner_value) = reference.value_and_grad(&mut args, &mut want) else {
        return Ok(skipped);
    };
    // As in the forward-lanes check: rounding where both are finite; a forward-mode partial may
    // be non-finite where reverse mode's is finite only past a non-finite value — the inner
    // function's, a partial elsewhere, or one on the way (docs/rules.md, "Singular points":
    // tests/regressions/nested_forward_nan_value.ir, forward_lanes_infinite_intermediate_atan.ir).
    let scale = want.iter().chain(&declared).filter(|x| x.is_finite()).fold(1.0f64, |m, x| m.max(x.abs()));
    let reached_infinity = std::cell::OnceCell::new();
    let reached_infinity = || {
        *reached_infinity.get_or_init(|| {
            forward_inner
                && (!inner_value.is_finite()
                    || want.iter().any(|x| !x.is_finite())
                    || probe::reaches_non_finite(&inner, &of, primal))
        })
    };
    let close = |a: f64, b: f64| match (a.is_finite(), b.is_finite()) {
        (true, true) => (a - b).abs() <= 1e-10 * a.abs().max(b.abs()) + 1e-12 * scale,
        (false, true) => reached_infinity(),
        (_, false) => true,
    };
    if declared.len() != want.len() || !declared.iter().zip(&want).all(|(&a, &b)| close(a, b)) {
        return failure(
            PARTIALS,
            format!(
                "grad {} @{of} wrt {chosen:?} gave {declared:?}; GradientFn {want:?}",
                if forward_inner { "forward" } else { "reverse" }
            ),
        );
    }
    cov.checked = 1;

    // (c) Second derivatives: the outer derivative of @nested_outer by both modes.
    let outer_forward = match ForwardFn::builder(&module, "nested_outer")
        .wrt_mask(&mask)
        .width(1)
        .externs(&externs)
        .options(&options)
        .build()
    {
        Ok(f) => f,
        Err(e) => return failure(OUTER_FORWARD, format!("ForwardFn of @nested_outer: {e}")),
    };
    let mut owned = primal.to_vec();
    let mut args: Vec<Arg<'_>> = owned.iter_mut().map(Arg::from).collect();
    let jacobian =
        outer_forward.jacobian(&mut args).or_else(|e| failure(OUTER, format!("ForwardFn::jacobian: {e}")))?;
    let forward: Vec<f64> = (0..chosen.len()).map(|j| jacobian.get(0, j)).collect();
    let reverse = match GradientFn::builder(&module, "nested_outer")
        .wrt_mask(&mask)
        .externs(&externs)
        .options(&options)
        .gradient_mode(GradientMode::Reverse)
        .build()
    {
        Ok(g) => {
            let mut owned = primal.to_vec();
            let mut args: Vec<Arg<'_>> = owned.iter_mut().map(Arg::from).collect();
            let mut grad = vec![f64::NAN; chosen.len()];
            let have = g
                .value_and_grad(&mut args, &mut grad)
                .or_else(|e| failure(OUTER, format!("GradientFn::value_and_grad of @nested_outer: {e}")))?;
            if !same_f64(have, value) {
                return failure(OUTER, format!("GradientFn's value {have}, PrimalFn's {value}"));
            }
            Some(grad)
        }
        // Documented: an inner reverse gradient that keeps its state on the tape and has no
        // Hessian-row rules has no reverse derivative; forward mode (above) differentiates it.
        Err(Error::Ad(AdError::TapeInReverseMode { .. } | AdError::NestedDerivative { .. })) if !forward_inner => {
            cov.tape_refusals = 1;
            None
        }
        Err(e) => return failure(OUTER, format!("GradientFn of @nested_outer: {e}")),
    };
    // Where both are finite, to rounding; non-finite entries follow the singular-point
    // conventions, which the plain checks cover. The absolute floor is 1e-9 times the largest
    // entry (or 1): a second derivative that is zero by cancellation keeps the rounding of its
    // terms, which grow like 1/x² (atan2(hypot(x, x), x) at x = -0.004 has terms near 6e4 and
    // leaves 1e-11 and 3e-11: tests/regressions/dot_product_cancellation_atan2_hypot.ir), while
    // a wrong rule is off by the size of a term; central differences check to 1e-6 anyway.
    if let Some(reverse) = &reverse
        && forward.iter().chain(reverse).all(|x| x.is_finite())
    {
        let scale = forward.iter().chain(reverse).fold(1.0f64, |m, x| m.max(x.abs()));
        for (j, (&f, &r)) in forward.iter().zip(reverse).enumerate() {
            if (f - r).abs() > 1e-9 * f.abs().max(r.abs()) + 1e-9 * scale {
                return failure(
                    OUTER,
                    format!(
                        "d/dp{} of @nested_outer: forward {f}, reverse {r} ({forward:?} vs {reverse:?})",
                        chosen[j]
                    ),
                );
            }
            cov.outer_compared += 1;
        }
    }
    if case.kind.smooth() && value.is_finite() {
        for (j, &i) in chosen.iter().enumerate() {
            let run = |h: f64| {
                let mut args = primal.to_vec();
                if let ArgValue::F64(x) = &mut args[i] {
                    *x += h;
                }
                let out = call(&args).ok()?;
                Some(vec![out.first().and_then(RuntimeValue::as_f64)?])
            };
            let (compared, _) = central_differences(FD, run, &forward[j..j + 1])?;
            cov.fd_compared += compared;
        }
    }
    Ok(cov)
}
