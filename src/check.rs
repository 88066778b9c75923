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
//! use jitdiff::check::check_gradient;
//! use jitdiff::ir::{parse_module, ArgValue};
//! let m = parse_module(jitdiff_problems::rosenbrock::ROSENBROCK_IR).unwrap();
//! let report = check_gradient(&m, "rosenbrock", &[true], &[ArgValue::Slice(vec![-1.2, 1.0, 0.5])]).unwrap();
//! assert_eq!(report.coords.len(), 3);
//! assert!(report.max_rel_err < 1e-6, "{report}");
//! ```

use crate::GradientFn;
use crate::error::Error;
use crate::fd::{FdError, FdOptions, FiniteDiff};
use jitdiff_ir::{ArgValue, Module};
use jitdiff_jit::Arg;
use smallvec::SmallVec;
use std::fmt;

/// Entries smaller than this fraction of the largest AD entry are measured against it.
pub const RELATIVE_FLOOR: f64 = 1e-3;

/// What can go wrong in a gradient check.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// Building or calling the AD gradient failed.
    #[error(transparent)]
    Ad(#[from] Error),
    /// Finite differences failed.
    #[error(transparent)]
    Fd(#[from] FdError),
    /// The function is not in the module.
    #[error("no function @{0} in the module")]
    UnknownFunction(String),
}

/// One differentiated scalar: where it is, its value, both derivatives and their errors.
#[derive(Clone, Debug, PartialEq)]
pub struct CoordCheck {
    /// Position in the flat gradient.
    pub index: usize,
    /// The parameter's name, with `[element]` for a slice parameter.
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
            "@{}: f = {:?}, {} coordinate(s); AD (reverse mode) vs {} differences (relative step {:.2e})",
            self.function,
            self.value,
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
pub fn check_gradient(
    module: &Module,
    name: &str,
    wrt: &[bool],
    args: &[ArgValue],
) -> Result<GradientCheck, CheckError> {
    let mut grad = GradientFn::new(module, name, wrt)?;
    let fd = FiniteDiff::new(module, name, wrt, FdOptions::central().parallel(true))?;
    let labels = coordinate_labels(module, name, wrt, args)?;
    check_with(&mut grad, &fd, args, labels)
}

/// Check with an already built gradient and finite-difference handle; `labels` names each
/// coordinate (see [`coordinate_labels`]).
pub fn check_with(
    grad: &mut GradientFn,
    fd: &FiniteDiff,
    args: &[ArgValue],
    labels: Vec<String>,
) -> Result<GradientCheck, CheckError> {
    let numeric = fd.gradient(args)?;
    let mut owned = args.to_vec();
    let mut native: SmallVec<[Arg<'_>; 8]> = owned.iter_mut().map(Arg::from).collect();
    let mut ad = vec![0.0; numeric.len()];
    let value = grad.value_and_grad(&mut native, &mut ad)?;
    drop(native);
    let values = flat_values(args, fd.wrt());
    let scale = ad.iter().fold(0.0f64, |m, g| m.max(g.abs())) * RELATIVE_FLOOR;
    let coords: Vec<CoordCheck> = ad
        .iter()
        .zip(&numeric)
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
    Ok(GradientCheck {
        function: fd.primal().name().into(),
        value,
        coords,
        max_abs_err,
        max_rel_err,
        worst,
        fd_options: fd.options(),
    })
}

/// Names of the differentiated scalars: `x[3]` for element 3 of slice parameter `x`, `y` for an
/// `f64` parameter (or `#p` when the parameter is unnamed).
pub fn coordinate_labels(
    module: &Module,
    name: &str,
    wrt: &[bool],
    args: &[ArgValue],
) -> Result<Vec<String>, CheckError> {
    let func = module.func_by_name(name).ok_or_else(|| CheckError::UnknownFunction(name.into()))?;
    let mut labels = vec![];
    for (p, (&param, a)) in func.params.iter().zip(args).enumerate() {
        if !wrt.get(p).copied().unwrap_or(false) {
            continue;
        }
        let pname = func.values[param.index()].name.clone().unwrap_or_else(|| format!("#{p}"));
        match a {
            ArgValue::Slice(v) | ArgValue::SliceMut(v) => labels.extend((0..v.len()).map(|e| format!("{pname}[{e}]"))),
            _ => labels.push(pname),
        }
    }
    Ok(labels)
}

/// The differentiated scalars' values, in the flat order.
fn flat_values(args: &[ArgValue], wrt: &[bool]) -> Vec<f64> {
    let mut out = vec![];
    for (_, a) in args.iter().enumerate().filter(|(p, _)| wrt.get(*p).copied().unwrap_or(false)) {
        match a {
            ArgValue::Slice(v) | ArgValue::SliceMut(v) => out.extend_from_slice(v),
            ArgValue::F64(x) => out.push(*x),
            _ => {}
        }
    }
    out
}

fn nan_high(x: f64) -> f64 {
    if x.is_nan() { f64::INFINITY } else { x }
}
