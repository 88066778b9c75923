//! Vector outputs through the public handles: `GradientFn::vjp` and the W-lane reverse sweeps of
//! `JacobianFn::vjps` against the forward tangents of `ForwardFn`, by the dot-product identity
//! `<ybar, J xdot> = <J^T ybar, xdot>`, where the outputs are the `f64` results and the final
//! contents of every `mslice` (so an `mslice` output's cotangent is seeded, not zero-filled).

use super::checks::{Check, failure};
use jitdiff::ir::ArgValue;
use jitdiff::ir::arbitrary::standard_extern_registry;
use jitdiff::jit::{Arg, JitOptions};
use jitdiff::{GradientFn, JacobianFn, JacobianMode};

const CHECK: &str = "vector-output VJP vs JVP (dot product)";

/// Output cotangents that do not depend on the case's random stream: row `r`, output `k`.
fn cotangent(r: usize, k: usize) -> f64 {
    ((k as f64 + 1.0) * 0.7 + r as f64 * 1.3).sin()
}

/// Compare `<ybar_r, jv>` with `<J^T ybar_r, xdot>` for two cotangent rows, through `vjp` (row 0)
/// and through `JacobianFn::vjps` in reverse mode (both rows in one W-lane sweep). `jv` is the
/// forward tangent of every output along `xdot`. Returns how many products were compared.
pub fn dot_products(
    module: &jitdiff::ir::Module,
    entry: &str,
    wrt: &[bool],
    primal: &[ArgValue],
    xdot: &[f64],
    jv: &[f64],
) -> Check<u64> {
    let externs = standard_extern_registry();
    let options = JitOptions::new();
    if jv.is_empty() {
        return Ok(0); // no outputs: nothing to seed
    }
    let g = GradientFn::builder(module, entry).wrt_mask(wrt).externs(&externs).options(&options).build();
    let g = g.or_else(|e| failure(CHECK, format!("GradientFn: {e}")))?;
    let (m, n) = (jv.len(), xdot.len());
    let rows: Vec<Vec<f64>> = (0..2).map(|r| (0..m).map(|k| cotangent(r, k)).collect()).collect();
    let mut owned = primal.to_vec();
    let mut args: Vec<Arg<'_>> = owned.iter_mut().map(Arg::from).collect();
    let mut xbar = vec![f64::NAN; n];
    if g.vjp(&mut args, &rows[0], &mut xbar).is_err() {
        // A fault the primal run did not have is the pullback's (the interpreter agreed on the
        // derived IR already); the harness's reverse checks report those.
        return Ok(0);
    }
    let jacobian = JacobianFn::builder(module, entry).wrt_mask(wrt).externs(&externs).options(&options).build();
    let jacobian = jacobian.or_else(|e| failure(CHECK, format!("JacobianFn: {e}")))?.with_mode(JacobianMode::Reverse);
    let mut owned = primal.to_vec();
    let mut args: Vec<Arg<'_>> = owned.iter_mut().map(Arg::from).collect();
    let flat: Vec<f64> = rows.concat();
    let mut lanes = vec![f64::NAN; 2 * n];
    jacobian.vjps(&mut args, &flat, &mut lanes).or_else(|e| failure(CHECK, format!("JacobianFn::vjps: {e}")))?;
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
    let norm = |v: &[f64]| v.iter().map(|x| x.abs()).sum::<f64>();
    let mut compared = 0;
    for (label, row, product) in [
        ("GradientFn::vjp", &rows[0], &xbar[..]),
        ("JacobianFn::vjps row 0", &rows[0], &lanes[..n]),
        ("JacobianFn::vjps row 1", &rows[1], &lanes[n..]),
    ] {
        let (lhs, rhs) = (dot(row, jv), dot(product, xdot));
        if !lhs.is_finite() || !rhs.is_finite() {
            continue;
        }
        let tol = 1e-10 * lhs.abs().max(rhs.abs()) + 1e-12 * norm(row) * norm(xdot);
        if (lhs - rhs).abs() > tol {
            return failure(CHECK, format!("{label}: <ybar, J xdot> = {lhs} but <J^T ybar, xdot> = {rhs}"));
        }
        compared += 1;
    }
    Ok(compared)
}
