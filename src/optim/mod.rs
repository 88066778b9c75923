//! Minimisation (cargo feature `argmin`, on by default): [`minimize`], an L-BFGS that always
//! returns, and compiled objectives for [argmin](https://argmin-rs.org).
//!
//! The short way from a [`GradientFn`] to a minimum is [`Objective::minimize`] (docs/optimization.md
//! has a guide and the Moré–Garbow–Hillstrom test set):
//!
//! ```
//! use jitdiff::optim::{MinimizeOptions, Objective};
//! use jitdiff::{GradientFn, args, ir::parse_module};
//! use jitdiff_problems::rosenbrock::{ROSENBROCK_IR, standard_start};
//!
//! let module = parse_module(ROSENBROCK_IR).unwrap();
//! let grad = GradientFn::builder(&module, "rosenbrock").wrt(["x"]).build().unwrap();
//! let x0 = standard_start(10);
//! let min = Objective::new(&grad, args![&x0]).unwrap().minimize(&x0, &MinimizeOptions::new()).unwrap();
//! assert!(min.converged && min.value < 1e-10, "{min:?}");
//! ```
//!
//! [`minimize`] takes any value-and-gradient closure. Unlike argmin's solvers run directly, it
//! never hands a NaN or an infinity to a line search (where argmin's More–Thuente search loops for
//! ever), scales its first step, restarts after a failed line search and stops after a bounded
//! number of evaluations; see its documentation.
//!
//! An [`Objective`] also implements argmin's [`CostFunction`] and [`Gradient`] for `Vec<f64>`
//! parameters, so argmin's L-BFGS, nonlinear conjugate gradient, BFGS and the rest run on a
//! jitdiff gradient in a few lines:
//!
//! ```
//! use jitdiff::{GradientFn, args, ir::parse_module};
//! use jitdiff::optim::Objective;
//! use jitdiff::optim::argmin::core::{Executor, State};
//! use jitdiff::optim::argmin::solver::{linesearch::MoreThuenteLineSearch, quasinewton::LBFGS};
//! use jitdiff_problems::rosenbrock::{ROSENBROCK_IR, standard_start};
//!
//! let module = parse_module(ROSENBROCK_IR).unwrap();
//! let grad = GradientFn::builder(&module, "rosenbrock").wrt(["x"]).build().unwrap();
//! let x0 = standard_start(100);
//! // The differentiated parameter is the variable; its argument gives its length.
//! let objective = Objective::new(&grad, args![&x0]).unwrap();
//! let solver = LBFGS::new(MoreThuenteLineSearch::new(), 7);
//! let result = Executor::new(objective, solver)
//!     .configure(|state| state.param(x0.clone()).max_iters(1000))
//!     .run()
//!     .unwrap();
//! assert!(result.state().get_best_cost() < 1e-10);
//! ```
//!
//! argmin asks for the cost and the gradient at a point in separate calls. An [`Objective`]
//! answers both from one fused `value_and_grad` call: it keeps the last point with its value and
//! gradient, so a cost followed by a gradient at the same point (what line searches do) costs one
//! native call. A cost alone also costs a full `value_and_grad` (about 2-3 primal evaluations);
//! the solvers above always want the gradient too.

mod minimize;

pub use argmin;
pub use argmin_math;
pub use minimize::{MinimizeOptions, Minimum, minimize};

use crate::error::{Buffer, Error};
use crate::gradient::GradientFn;
use crate::parallel::SampleSum;
use argmin::core::{CostFunction, Gradient};
use jitdiff_jit::Arg;
use smallvec::SmallVec;
use std::sync::{Mutex, PoisonError};

type Evaluate<'a> = Box<dyn FnMut(&[f64], &mut [f64]) -> Result<f64, Error> + Send + 'a>;

/// Where values and gradients come from.
enum Source<'a> {
    /// A compiled reverse-mode derivative with the fixed arguments (borrowed, not copied).
    Compiled { f: &'a GradientFn, args: Vec<Arg<'a>>, variable: usize },
    /// A plain-Rust value-and-gradient function (a hand-written or finite-difference baseline).
    Function(Evaluate<'a>),
}

impl Source<'_> {
    fn evaluate(&mut self, x: &[f64], grad: &mut [f64]) -> Result<f64, Error> {
        match self {
            Source::Compiled { f, args, variable } => {
                let mut native: SmallVec<[Arg<'_>; 8]> = args
                    .iter()
                    .enumerate()
                    .map(|(i, a)| if i == *variable { Arg::Slice(x) } else { a.shared() })
                    .collect();
                f.value_and_grad(&mut native, grad)
            }
            Source::Function(f) => f(x, grad),
        }
    }
}

struct State<'a> {
    source: Source<'a>,
    x: Vec<f64>,
    value: f64,
    grad: Vec<f64>,
    cached: bool,
    evaluations: u64,
}

impl State<'_> {
    /// Bring the cache to `x` (one evaluation unless it is there already).
    fn at(&mut self, x: &[f64]) -> Result<(), Error> {
        if x.len() != self.grad.len() {
            return Err(Error::BufferLength {
                function: "objective".into(),
                buffer: Buffer::Point,
                expected: self.grad.len(),
                got: x.len(),
                reason: "the variable's length".into(),
            });
        }
        if self.cached && self.x == x {
            return Ok(());
        }
        self.cached = false;
        self.value = self.source.evaluate(x, &mut self.grad)?;
        self.evaluations += 1;
        // A solver handed NaN or ±inf does not stop (argmin's More–Thuente search loops at
        // ±inf for ever): stop it with an error instead.
        if !self.value.is_finite() {
            return Err(Error::NonFinite { what: "value".into(), value: self.value });
        }
        if let Some((k, &g)) = self.grad.iter().enumerate().find(|(_, g)| !g.is_finite()) {
            return Err(Error::NonFinite { what: format!("gradient entry {k}"), value: g });
        }
        self.x.copy_from_slice(x);
        self.cached = true;
        Ok(())
    }
}

/// A differentiable objective `x ↦ f(x)` over `f64` vectors, for argmin.
///
/// Built from a [`GradientFn`] whose one differentiated parameter (a slice) is the optimisation
/// variable, with every other argument fixed and *borrowed* (large data are not copied), or
/// from a plain-Rust value-and-gradient function ([`Objective::from_fn`], for baselines).
/// `Send + Sync`; the cache of the last point sits behind an uncontended mutex. See the
/// [module docs](self) for a complete L-BFGS run.
pub struct Objective<'a> {
    state: Mutex<State<'a>>,
}

impl<'a> Objective<'a> {
    /// The objective of `f`'s first `f64` result over its differentiated parameter. `args` are
    /// all of the function's arguments in parameter order; the variable's argument gives its
    /// length (its values are not used: each evaluation passes the point instead). The other
    /// arguments are borrowed for the objective's lifetime; they must not be `mslice`s.
    pub fn new(f: &'a GradientFn, args: impl IntoIterator<Item = Arg<'a>>) -> Result<Objective<'a>, Error> {
        let args: Vec<Arg<'a>> = args.into_iter().collect();
        let user = &f.user;
        user.check_args(&args)?;
        user.require_float_result("objective value")?;
        let differentiated: Vec<usize> = (0..user.params.len()).filter(|&p| user.wrt[p]).collect();
        let variable = match differentiated[..] {
            [p] if user.params[p].is_slice() => p,
            _ => {
                return Err(Error::Setting(format!(
                    "an objective has one variable: differentiate exactly one slice parameter of @{} (the handle differentiates {})",
                    user.name,
                    differentiated.iter().map(|&p| format!("`{}`", user.param_names[p])).collect::<Vec<_>>().join(", ")
                )));
            }
        };
        if let Some(p) = args.iter().position(|a| matches!(a, Arg::SliceMut(_))) {
            return Err(Error::Setting(format!(
                "an objective cannot pass the mutable slice `{}` of @{} (it evaluates through &self); make the parameter a read-only `slice`",
                user.param_names[p], user.name
            )));
        }
        let dim = args[variable].as_slice().map_or(0, <[f64]>::len);
        Ok(Objective::from_source(dim, Source::Compiled { f, args, variable }))
    }

    /// An objective of dimension `dim` from a function that writes the gradient at `x` into its
    /// second argument and returns the value: the same caching and argmin plumbing as a compiled
    /// objective, for hand-written or finite-difference baselines.
    ///
    /// ```
    /// use jitdiff::optim::Objective;
    /// use jitdiff_problems::rosenbrock::rosenbrock_gradient;
    /// let objective = Objective::from_fn(2, |x, g| rosenbrock_gradient(x, g));
    /// let mut g = [0.0; 2];
    /// assert_eq!(objective.value_and_grad(&[1.0, 1.0], &mut g).unwrap(), 0.0);
    /// ```
    pub fn from_fn(dim: usize, mut f: impl FnMut(&[f64], &mut [f64]) -> f64 + Send + 'a) -> Objective<'a> {
        Objective::try_from_fn(dim, move |x, g| Ok(f(x, g)))
    }

    /// As [`Objective::from_fn`], for a function that can fail; its errors reach the solver.
    pub fn try_from_fn(
        dim: usize,
        f: impl FnMut(&[f64], &mut [f64]) -> Result<f64, Error> + Send + 'a,
    ) -> Objective<'a> {
        Objective::from_source(dim, Source::Function(Box::new(f)))
    }

    fn from_source(dim: usize, source: Source<'a>) -> Objective<'a> {
        Objective {
            state: Mutex::new(State {
                source,
                x: vec![0.0; dim],
                value: f64::NAN,
                grad: vec![0.0; dim],
                cached: false,
                evaluations: 0,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State<'a>> {
        // A panic elsewhere cannot leave the state inconsistent: the cache is only marked valid
        // after a completed evaluation.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The dimension of the variable.
    pub fn dim(&self) -> usize {
        self.lock().grad.len()
    }

    /// The value at `x`, with the gradient written to `grad`. No allocation; answered from the
    /// cache when `x` is the last point evaluated. A NaN or infinite value or gradient entry is
    /// an [`Error::NonFinite`].
    pub fn value_and_grad(&self, x: &[f64], grad: &mut [f64]) -> Result<f64, Error> {
        let mut state = self.lock();
        if grad.len() != state.grad.len() {
            return Err(Error::BufferLength {
                function: "objective".into(),
                buffer: Buffer::Gradient,
                expected: state.grad.len(),
                got: grad.len(),
                reason: "the variable's length".into(),
            });
        }
        state.at(x)?;
        grad.copy_from_slice(&state.grad);
        Ok(state.value)
    }

    /// How many times the function was evaluated (each evaluation gives value and gradient).
    pub fn evaluations(&self) -> u64 {
        self.lock().evaluations
    }

    /// Minimise the objective from `x0` with [`minimize`] (L-BFGS that always returns; see its
    /// documentation for what happens at non-finite values and when it stops). `x0` must have the
    /// variable's length. The module docs have an example.
    pub fn minimize(&self, x0: &[f64], options: &MinimizeOptions) -> Result<Minimum, Error> {
        let dim = self.dim();
        if x0.len() != dim {
            return Err(Error::BufferLength {
                function: "objective".into(),
                buffer: Buffer::Point,
                expected: dim,
                got: x0.len(),
                reason: "the variable's length".into(),
            });
        }
        minimize(|x, g| self.value_and_grad(x, g), x0, options)
    }
}

/// A data-parallel sum of per-sample losses as an objective (the sum runs on its own pool or the
/// caller's, as [`SampleSum::value_and_grad`] does).
impl<'a> From<SampleSum<'a>> for Objective<'a> {
    fn from(sum: SampleSum<'a>) -> Objective<'a> {
        Objective::try_from_fn(sum.dim(), move |x, g| sum.value_and_grad(x, g))
    }
}

impl CostFunction for Objective<'_> {
    type Param = Vec<f64>;
    type Output = f64;

    fn cost(&self, x: &Vec<f64>) -> Result<f64, argmin::core::Error> {
        let mut state = self.lock();
        state.at(x)?;
        Ok(state.value)
    }
}

impl Gradient for Objective<'_> {
    type Param = Vec<f64>;
    type Gradient = Vec<f64>;

    fn gradient(&self, x: &Vec<f64>) -> Result<Vec<f64>, argmin::core::Error> {
        let mut state = self.lock();
        state.at(x)?;
        Ok(state.grad.clone())
    }
}
