//! Gradient checks: reverse-mode AD ([`GradientFn`]) against central finite differences
//! ([`FiniteDiff`]) at one point, coordinate by coordinate.
//!
//! The **relative error** of coordinate `i` is `|AD_i − FD_i| / max(|AD_i|, |FD_i|, floor)` with
//! `floor = 1e-3 · max_j |AD_j|`: each entry is measured against its own size, except entries
//! a thousand times smaller than the largest, which are measured against that thousandth. (The
//! error of a difference quotient scales with `|f|` and the step, not with the entry itself, so a
//! pure relative error of an entry that is zero up to rounding is noise; the floor keeps such
//! entries from hiding the real comparison.)
//!
//! ```
//! use jitdiff::{GradientFn, args, ir::parse_module};
//! let m = parse_module(jitdiff_problems::rosenbrock::ROSENBROCK_IR).unwrap();
//! let grad = GradientFn::builder(&m, "rosenbrock").wrt(["x"]).build().unwrap();
//! let report = grad.check(&mut args![&[-1.2, 1.0, 0.5]]).unwrap();
//! assert_eq!(report.coords.len(), 3);
//! assert!(report.max_rel_err < 1e-6, "{report}");
//! ```
//!
//! [`jacobian`] checks every entry of a Jacobian the same way (vector outputs: `f64` results
//! and `mslice` contents).

use crate::GradientFn;
use crate::builder::ParamRef;
use crate::error::Error;
use crate::fd::{FdOptions, FiniteDiff};
use jitdiff_ir::Module;
use jitdiff_jit::Arg;
use std::fmt;

/// Entries smaller than this fraction of the largest AD entry are measured against it.
pub const RELATIVE_FLOOR: f64 = 1e-3;

/// One differentiated scalar: where it is, its value, both derivatives and their errors.
#[derive(Clone, Debug, PartialEq)]
pub struct CoordCheck {
    /// Position in the flat gradient (row-major position in a Jacobian).
    pub index: usize,
    /// The parameter's name, with `[element]` for a slice parameter (`output / input` in a
    /// Jacobian).
    pub label: String,
    /// The input's value.
    pub value: f64,
    /// The derivative by reverse-mode AD.
    pub ad: f64,
    /// The derivative by finite differences.
    pub fd: f64,
    /// `|ad − fd|`.
    pub abs_err: f64,
    /// The relative error (see the module docs).
    pub rel_err: f64,
}

/// The result of a gradient check. `Display` prints a table (at most [`GradientCheck::ROWS`]
/// rows: all coordinates, or the worst ones).
#[derive(Clone, Debug, PartialEq)]
pub struct GradientCheck {
    /// The function checked.
    pub function: String,
    /// The function's value at the point (the first `f64` result).
    pub value: f64,
    /// One entry per differentiated scalar, in the flat gradient order.
    pub coords: Vec<CoordCheck>,
    /// The largest absolute error.
    pub max_abs_err: f64,
    /// The largest relative error.
    pub max_rel_err: f64,
    /// The index in `coords` of the coordinate with the largest relative error.
    pub worst: Option<usize>,
    /// The finite-difference options used.
    pub fd_options: FdOptions,
}

impl GradientCheck {
    /// The most rows `Display` prints.
    pub const ROWS: usize = 12;

    /// Does every coordinate's relative error stay within `tolerance`? (NaN never passes.)
    pub fn passes(&self, tolerance: f64) -> bool {
        self.coords.iter().all(|c| c.rel_err <= tolerance)
    }

    /// The coordinates `Display` shows: all of them when there are at most `rows`, otherwise the
    /// `rows` worst by relative error, in gradient order.
    pub fn shown(&self, rows: usize) -> Vec<&CoordCheck> {
        if self.coords.len() <= rows {
            return self.coords.iter().collect();
        }
        let mut order: Vec<&CoordCheck> = self.coords.iter().collect();
        order.sort_by(|a, b| b.rel_err.total_cmp(&a.rel_err));
        order.truncate(rows);
        order.sort_by_key(|c| c.index);
        order
    }
}

impl fmt::Display for GradientCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.table(Self::ROWS))
    }
}

impl GradientCheck {
    /// The report as a table of at most `rows` coordinates (see [`GradientCheck::shown`]),
    /// with a header line and a summary line naming the worst coordinate.
    pub fn table(&self, rows: usize) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        let shown = self.shown(rows);
        let _ = writeln!(
            out,
            "@{}: {}{} coordinate(s); AD (reverse mode) vs {} differences (relative step {:.2e})",
            self.function,
            // A Jacobian check has no single value.
            if self.value.is_nan() { String::new() } else { format!("f = {:?}, ", self.value) },
            self.coords.len(),
            match self.fd_options.scheme {
                crate::fd::FdScheme::Central => "central",
                crate::fd::FdScheme::Forward => "forward",
            },
            self.fd_options.relative_step()
        );
        if shown.len() < self.coords.len() {
            let _ = writeln!(out, "showing the {} worst of {} coordinates", shown.len(), self.coords.len());
        }
        let width = shown.iter().map(|c| c.label.len()).max().unwrap_or(0).max(10);
        let _ = writeln!(
            out,
            "{:>width$}  {:>12}  {:>22}  {:>22}  {:>10}  {:>10}",
            "coordinate", "value", "AD", "FD", "abs err", "rel err"
        );
        for c in shown {
            let _ = writeln!(
                out,
                "{:>width$}  {:>12.5e}  {:>22.14e}  {:>22.14e}  {:>10.3e}  {:>10.3e}",
                c.label, c.value, c.ad, c.fd, c.abs_err, c.rel_err
            );
        }
        let _ = match self.worst.map(|w| &self.coords[w]) {
            Some(w) => write!(
                out,
                "max abs err {:.3e}, max rel err {:.3e} (worst coordinate: {})",
                self.max_abs_err, self.max_rel_err, w.label
            ),
            None => write!(out, "no differentiated coordinates"),
        };
        out
    }
}

/// Check the gradient of the first `f64` result of `@name` with respect to `wrt` at `args`,
/// with central differences at the default step.
///
/// ```
/// use jitdiff::{args, check::check_gradient, ir::parse_module};
/// let m = parse_module(jitdiff_problems::rosenbrock::ROSENBROCK_IR).unwrap();
/// let report = check_gradient(&m, "rosenbrock", ["x"], &mut args![&[-1.2, 1.0]]).unwrap();
/// assert!(report.passes(1e-6), "{report}");
/// ```
pub fn check_gradient<P: Into<ParamRef>>(
    module: &Module,
    name: &str,
    wrt: impl IntoIterator<Item = P>,
    args: &mut [Arg<'_>],
) -> Result<GradientCheck, Error> {
    GradientFn::builder(module, name).wrt(wrt).build()?.check(args)
}

impl GradientFn {
    /// Check this gradient at `args` against central finite differences at the default step
    /// (in parallel over coordinates).
    pub fn check(&self, args: &mut [Arg<'_>]) -> Result<GradientCheck, Error> {
        gradient(self, args, FdOptions::central().parallel(true))
    }
}

/// Check `grad` at `args` against finite differences with `options`.
pub fn gradient(grad: &GradientFn, args: &mut [Arg<'_>], options: FdOptions) -> Result<GradientCheck, Error> {
    let fd = FiniteDiff::of(grad, options)?;
    let numeric = fd.gradient(args)?;
    let mut ad = vec![0.0; numeric.len()];
    let value = grad.value_and_grad(args, &mut ad)?;
    let labels = grad.user.input_labels(args);
    let values = grad.user.input_values(args);
    Ok(compare(grad.name(), value, &ad, &numeric, labels, values, options))
}

/// Check the reverse-mode Jacobian of `grad` (outputs × inputs) at `args` against finite
/// differences with `options`, entry by entry (the relative floor is a thousandth of the largest
/// AD entry of the whole Jacobian).
///
/// ```
/// use jitdiff::{GradientFn, args, check, fd::FdOptions, ir::parse_module};
/// let m = parse_module("func @f(x: slice, out: mslice) {\nentry:\n    i = iconst 0\n    a = load x, i\n    e = exp a\n    store out, i, e\n    ret\n}").unwrap();
/// let f = GradientFn::builder(&m, "f").wrt(["x"]).build().unwrap();
/// let report = check::jacobian(&f, &mut args![&[0.5], &mut [0.0]], FdOptions::central()).unwrap();
/// assert!(report.passes(1e-6), "{report}");
/// assert_eq!(report.coords[0].label, "out[0] / x[0]");
/// ```
pub fn jacobian(grad: &GradientFn, args: &mut [Arg<'_>], options: FdOptions) -> Result<GradientCheck, Error> {
    let fd = FiniteDiff::of(grad, options)?;
    // Finite differences first: they leave the arguments alone, and the AD Jacobian then leaves
    // the mslices as one call does.
    let numeric = fd.jacobian(args)?;
    let ad = grad.jacobian(args)?;
    let (inputs, outputs) = (grad.user.input_labels(args), grad.user.output_labels(args));
    let labels = outputs.iter().flat_map(|o| inputs.iter().map(move |i| format!("{o} / {i}"))).collect();
    let values = grad.user.input_values(args);
    let values = (0..ad.rows).flat_map(|_| values.iter().copied()).collect();
    Ok(compare(grad.name(), f64::NAN, &ad.data, &numeric.data, labels, values, options))
}

fn compare(
    function: &str,
    value: f64,
    ad: &[f64],
    numeric: &[f64],
    labels: Vec<String>,
    values: Vec<f64>,
    fd_options: FdOptions,
) -> GradientCheck {
    let scale = ad.iter().fold(0.0f64, |m, g| m.max(g.abs())) * RELATIVE_FLOOR;
    let coords: Vec<CoordCheck> = ad
        .iter()
        .zip(numeric)
        .enumerate()
        .map(|(index, (&a, &n))| {
            let abs_err = (a - n).abs();
            let denominator = a.abs().max(n.abs()).max(scale);
            let rel_err = if abs_err == 0.0 { 0.0 } else { abs_err / denominator };
            let label = labels.get(index).cloned().unwrap_or_else(|| format!("#{index}"));
            CoordCheck {
                index,
                label,
                value: values.get(index).copied().unwrap_or(f64::NAN),
                ad: a,
                fd: n,
                abs_err,
                rel_err,
            }
        })
        .collect();
    let max_abs_err = coords.iter().fold(0.0f64, |m, c| if c.abs_err.is_nan() { f64::NAN } else { m.max(c.abs_err) });
    let worst = (0..coords.len()).max_by(|&a, &b| nan_high(coords[a].rel_err).total_cmp(&nan_high(coords[b].rel_err)));
    let max_rel_err = worst.map_or(0.0, |w| coords[w].rel_err);
    GradientCheck { function: function.into(), value, coords, max_abs_err, max_rel_err, worst, fd_options }
}

fn nan_high(x: f64) -> f64 {
    if x.is_nan() { f64::INFINITY } else { x }
}
