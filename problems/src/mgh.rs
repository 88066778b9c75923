//! The unconstrained test problems of Moré, Garbow and Hillstrom, "Testing unconstrained
//! optimization software", ACM TOMS 7(1), 17–41 (1981), as IR text with plain-Rust references.
//!
//! Every problem is a sum of squares `F(x) = Σ f_i(x)²` written as `func @f(x: slice) -> f64`
//! (the file `problems/ir/mgh/NN_name.ir`, NN the paper's number; data tables as `fconst`s, one
//! row per call of a helper); problems of variable dimension take `n` from `len x`. Each
//! [`MghProblem`] holds the standard starting point of the paper, the published minimum `f*` that a
//! local method reaches from it (with the other published minima in [`MghProblem::minima`]), a
//! tolerance on the reached value and the reason for it, and the plain-Rust value
//! ([`values`]). `docs/optimization.md` has the table of a real L-BFGS run.
//!
//! Sources of the numbers: the minima are the paper's (except the trigonometric function's local
//! minimum, which a BFGS run from the start found); F(x0) and the high-precision minimisers
//! used to check them come from the MINPACK-1 test results (Moré, Garbow and Hillstrom, ANL-80-74,
//! 1980: the initial and final residual norms and solutions of the `lmder` driver) or from a closed
//! form, as noted per problem.
//!
//! ```
//! use jitdiff_problems::mgh;
//! let problems = mgh::problems();
//! let wood = problems.iter().find(|p| p.name == "Wood").unwrap();
//! assert_eq!((wood.value)(&wood.x0), 19192.0);
//! assert!(wood.reached(1e-12));
//! ```

mod table;
#[cfg(test)]
mod tests;
pub mod values;

pub use table::problems;

/// The entry function of every problem's IR.
pub const ENTRY: &str = "f";

/// One test problem of the table.
#[derive(Clone, Debug)]
pub struct MghProblem {
    /// The problem's number in the paper (1–35).
    pub number: u32,
    /// The paper's name, with the size where the paper's dimension is variable.
    pub name: &'static str,
    /// The IR text of `func @f(x: slice) -> f64` (parse with `jitdiff_ir::parse_module`).
    pub ir: &'static str,
    /// The standard starting point; its length is the dimension `n`.
    pub x0: Vec<f64>,
    /// An independently known `F(x0)` (MINPACK-1's initial residual norm squared, or a closed
    /// form), when there is one.
    pub f_x0: Option<f64>,
    /// The published minimum that a local method reaches from `x0` (see [`MghProblem::minima`]).
    /// Where the paper lists a local minimum beside the global one, this is the one local methods
    /// reach (Freudenstein and Roth, Biggs EXP6); the trigonometric function has only the paper's
    /// 0, which they miss (its [`MghProblem::other_minima`] has the value they stop at).
    pub f_star: f64,
    /// Every minimum the paper lists, in its words, including the one above (anything else is
    /// marked as not from the paper).
    pub minima: &'static str,
    /// Other minima a local method may stop at from `x0` instead of `f_star` (the paper's other
    /// values, or as noted in [`MghProblem::minima`]); empty for most problems.
    pub other_minima: &'static [f64],
    /// A published minimiser at which `F = f_star` (to the published digits), when there is one.
    pub minimiser: Option<Vec<f64>>,
    /// How far the reached value may be from `f_star`: pass iff `|f - f_star| <= tolerance`.
    pub tolerance: f64,
    /// Why the tolerance is what it is.
    pub tolerance_reason: &'static str,
    /// The plain-Rust value `F(x)`, in the IR's operation order.
    pub value: fn(&[f64]) -> f64,
}

impl MghProblem {
    /// The dimension `n`.
    pub fn n(&self) -> usize {
        self.x0.len()
    }

    /// Whether `f` is within the tolerance of the published minimum.
    pub fn reached(&self, f: f64) -> bool {
        (f - self.f_star).abs() <= self.tolerance
    }

    /// The entry of [`MghProblem::other_minima`] that `f` is within tolerance of (the same rule
    /// as for `f_star`: 1e-5 relative, 1e-10 absolute on zero), if any.
    pub fn reached_other(&self, f: f64) -> Option<f64> {
        self.other_minima.iter().copied().find(|&m| (f - m).abs() <= tolerance(m).0)
    }

    /// The same problem with other minima a local method may stop at.
    pub(crate) fn or_stops_at(mut self, other_minima: &'static [f64]) -> Self {
        self.other_minima = other_minima;
        self
    }
}

/// Relative tolerance on a non-zero published minimum: the paper prints 6 significant digits, so
/// the printed value is itself up to 5e-6 relative from the true minimum.
const REL: f64 = 1e-5;
const REL_REASON: &str = "1e-5 relative: f* is published to 6 significant digits";
/// Absolute tolerance on a zero minimum.
const ZERO: f64 = 1e-10;
const ZERO_REASON: &str = "1e-10 absolute on a zero minimum";

#[allow(clippy::too_many_arguments)]
pub(crate) fn problem(
    number: u32,
    name: &'static str,
    ir: &'static str,
    x0: Vec<f64>,
    f_x0: Option<f64>,
    f_star: f64,
    minima: &'static str,
    minimiser: Option<Vec<f64>>,
    value: fn(&[f64]) -> f64,
) -> MghProblem {
    let (tolerance, tolerance_reason) = tolerance(f_star);
    MghProblem {
        number,
        name,
        ir,
        x0,
        f_x0,
        f_star,
        minima,
        other_minima: &[],
        minimiser,
        tolerance,
        tolerance_reason,
        value,
    }
}

/// The tolerance on reaching a published minimum, and why.
fn tolerance(minimum: f64) -> (f64, &'static str) {
    if minimum == 0.0 { (ZERO, ZERO_REASON) } else { (REL * minimum.abs(), REL_REASON) }
}
