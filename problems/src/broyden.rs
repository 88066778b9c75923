//! Broyden tridiagonal residuals (MGH 30's `m = n` residuals, Broyden 1965) written into an
//! `mslice`: the banded residual system of the sparse-Jacobian benchmark and tests.
//!
//! ```
//! use jitdiff_problems::broyden::broyden_residuals;
//! let mut r = [0.0; 3];
//! broyden_residuals(&[-1.0; 3], &mut r);
//! assert_eq!(r, [-2.0, -1.0, -3.0]);
//! ```

/// The IR text (`problems/ir/broyden_residuals.ir`): `@broyden(x: slice, r: mslice)`.
pub const BROYDEN_RESIDUALS_IR: &str = include_str!("../ir/broyden_residuals.ir");

/// The reference: `r[i] = (3 - 2 x[i]) x[i] - x[i-1] - 2 x[i+1] + 1`, with `x[-1] = x[n] = 0`
/// (same operation order as the IR).
pub fn broyden_residuals(x: &[f64], r: &mut [f64]) {
    let n = x.len();
    for i in 0..n {
        let prev = if i == 0 { 0.0 } else { x[i - 1] };
        let next = if i + 1 == n { 0.0 } else { x[i + 1] };
        r[i] = (3.0 - 2.0 * x[i]) * x[i] - prev - 2.0 * next + 1.0;
    }
}
