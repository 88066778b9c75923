//! Compiled objectives for [argmin](https://argmin-rs.org) (cargo feature `argmin`, on by
//! default): an [`Objective`] implements argmin's [`CostFunction`] and [`Gradient`] for
//! `Vec<f64>` parameters, so argmin's L-BFGS, nonlinear conjugate gradient, BFGS and the rest run
//! on a jitdiff gradient in a few lines.
//!
//! ```
//! use jitdiff::ir::{ArgValue, parse_module};
//! use jitdiff::optim::Objective;
//! use jitdiff::optim::argmin::core::{Executor, State};
//! use jitdiff::optim::argmin::solver::{linesearch::MoreThuenteLineSearch, quasinewton::LBFGS};
//! use jitdiff_problems::rosenbrock::{ROSENBROCK_IR, standard_start};
//!
//! let module = parse_module(ROSENBROCK_IR).unwrap();
//! // Parameter 0 of @rosenbrock(x: slice) is the variable; its argument only fixes the length.
//! let objective = Objective::new(&module, "rosenbrock", vec![ArgValue::Slice(vec![0.0; 100])], 0).unwrap();
//! let solver = LBFGS::new(MoreThuenteLineSearch::new(), 7);
//! let result = Executor::new(objective, solver)
//!     .configure(|state| state.param(standard_start(100)).max_iters(1000))
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

pub use argmin;
pub use argmin_math;

use crate::error::Error;
use crate::gradient::GradientFn;
use crate::parallel::SampleSum;
use argmin::core::{CostFunction, Gradient};
use jitdiff_ir::{ArgValue, ExternRegistry, Module};
use jitdiff_jit::{Arg, JitOptions};
use smallvec::SmallVec;
use std::sync::{Mutex, PoisonError};

/// What can be wrong when an [`Objective`] is set up.
#[derive(Debug, thiserror::Error)]
pub enum ObjectiveError {
    /// Differentiating or compiling the function failed.
    #[error(transparent)]
    Jitdiff(#[from] Error),
    /// The function is not in the module.
    #[error("no function @{0} in the module: name the function to minimise")]
    NoFunction(String),
    /// The number of arguments does not match the function's parameters.
    #[error(
        "@{function} takes {expected} arguments, {got} were given: give every argument in parameter \
         order, the variable's as a slice of the variable's length"
    )]
    ArgumentCount {
        /// The function.
        function: String,
        /// Its number of parameters.
        expected: usize,
        /// The number of arguments given.
        got: usize,
    },
    /// The variable is not a slice parameter, or its argument is not a slice.
    #[error(
        "the optimisation variable must be a slice parameter of @{function} given a slice argument: \
         parameter {index} {problem}"
    )]
    Variable {
        /// The function.
        function: String,
        /// The variable's parameter index.
        index: usize,
        /// What is wrong with it.
        problem: String,
    },
}

type Evaluate = Box<dyn FnMut(&[f64], &mut [f64]) -> Result<f64, Error> + Send>;

/// Where values and gradients come from.
enum Source {
    /// A compiled reverse-mode derivative with the fixed arguments.
    Compiled { f: Box<GradientFn>, args: Vec<ArgValue>, variable: usize },
    /// A plain-Rust value-and-gradient function (a hand-written or finite-difference baseline).
    Function(Evaluate),
}

impl Source {
    fn evaluate(&mut self, x: &[f64], grad: &mut [f64]) -> Result<f64, Error> {
        match self {
            Source::Compiled { f, args, variable } => {
                let mut native: SmallVec<[Arg<'_>; 8]> = args
                    .iter_mut()
                    .enumerate()
                    .map(|(i, a)| match a {
                        _ if i == *variable => Arg::Slice(x),
                        ArgValue::F64(v) => Arg::F64(*v),
                        ArgValue::I64(v) => Arg::I64(*v),
                        ArgValue::Bool(v) => Arg::Bool(*v),
                        ArgValue::Vector(v) => Arg::Vector(v),
                        ArgValue::Slice(v) => Arg::Slice(v),
                        ArgValue::SliceMut(v) => Arg::SliceMut(v),
                    })
                    .collect();
                f.value_and_grad(&mut native, grad)
            }
            Source::Function(f) => f(x, grad),
        }
    }
}

struct State {
    source: Source,
    x: Vec<f64>,
    value: f64,
    grad: Vec<f64>,
    cached: bool,
    evaluations: u64,
}

impl State {
    /// Bring the cache to `x` (one evaluation unless it is there already).
    fn at(&mut self, x: &[f64]) -> Result<(), Error> {
        if x.len() != self.grad.len() {
            return Err(Error::Shape { what: "point".into(), expected: self.grad.len(), got: x.len() });
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
/// Built from an IR function whose slice parameter `variable` is the optimisation variable (every
/// other argument fixed at construction), or from a plain-Rust value-and-gradient function
/// ([`Objective::from_fn`], for baselines). Thread-safe (`Send + Sync`; a mutex serialises
/// evaluations). See the [module docs](self) for a complete L-BFGS run.
pub struct Objective {
    state: Mutex<State>,
}

impl Objective {
    /// Differentiate and compile `@name` with respect to parameter `variable`. `args` are all of
    /// the function's arguments in parameter order; `args[variable]` must be a slice, whose length
    /// is the dimension of the variable (its values are not used: each evaluation passes the
    /// point instead).
    pub fn new(module: &Module, name: &str, args: Vec<ArgValue>, variable: usize) -> Result<Objective, ObjectiveError> {
        Objective::with_externs(module, name, args, variable, &ExternRegistry::new(), &JitOptions::new())
    }

    /// As [`Objective::new`], with extern implementations and JIT options.
    pub fn with_externs(
        module: &Module,
        name: &str,
        args: Vec<ArgValue>,
        variable: usize,
        externs: &ExternRegistry,
        options: &JitOptions,
    ) -> Result<Objective, ObjectiveError> {
        let function = module.func_by_name(name).ok_or_else(|| ObjectiveError::NoFunction(name.into()))?;
        let params = function.param_types();
        if args.len() != params.len() {
            return Err(ObjectiveError::ArgumentCount {
                function: name.into(),
                expected: params.len(),
                got: args.len(),
            });
        }
        let bad = |problem: String| ObjectiveError::Variable { function: name.into(), index: variable, problem };
        let Some(param) = params.get(variable) else {
            return Err(bad(format!("does not exist (the function has {} parameters)", params.len())));
        };
        if !param.is_slice() {
            return Err(bad(format!("has type {param}")));
        }
        let dim = match &args[variable] {
            ArgValue::Slice(v) | ArgValue::SliceMut(v) => v.len(),
            other => return Err(bad(format!("was given {other:?}"))),
        };
        let wrt: Vec<bool> = (0..params.len()).map(|i| i == variable).collect();
        let f = GradientFn::with_externs(module, name, &wrt, externs, options)?;
        Ok(Objective::from_source(dim, Source::Compiled { f: Box::new(f), args, variable }))
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
    pub fn from_fn(dim: usize, mut f: impl FnMut(&[f64], &mut [f64]) -> f64 + Send + 'static) -> Objective {
        Objective::try_from_fn(dim, move |x, g| Ok(f(x, g)))
    }

    /// As [`Objective::from_fn`], for a function that can fail; its errors reach the solver.
    pub fn try_from_fn(
        dim: usize,
        f: impl FnMut(&[f64], &mut [f64]) -> Result<f64, Error> + Send + 'static,
    ) -> Objective {
        Objective::from_source(dim, Source::Function(Box::new(f)))
    }

    fn from_source(dim: usize, source: Source) -> Objective {
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

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic elsewhere cannot leave the state inconsistent: the cache is only marked valid
        // after a completed evaluation.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The dimension of the variable.
    pub fn dim(&self) -> usize {
        self.lock().grad.len()
    }

    /// The value at `x`, with the gradient written to `grad`. No allocation; answered from the
    /// cache when `x` is the last point evaluated.
    pub fn value_and_grad(&self, x: &[f64], grad: &mut [f64]) -> Result<f64, Error> {
        let mut state = self.lock();
        if grad.len() != state.grad.len() {
            return Err(Error::Shape { what: "gradient buffer".into(), expected: state.grad.len(), got: grad.len() });
        }
        state.at(x)?;
        grad.copy_from_slice(&state.grad);
        Ok(state.value)
    }

    /// How many times the function was evaluated (each evaluation gives value and gradient).
    pub fn evaluations(&self) -> u64 {
        self.lock().evaluations
    }
}

/// A data-parallel sum of per-sample losses as an objective (the sum runs on its own pool or the
/// caller's, as [`SampleSum::value_and_grad`] does).
impl From<SampleSum> for Objective {
    fn from(mut sum: SampleSum) -> Objective {
        Objective::try_from_fn(sum.dim(), move |x, g| sum.value_and_grad(x, g))
    }
}

impl CostFunction for Objective {
    type Param = Vec<f64>;
    type Output = f64;

    fn cost(&self, x: &Vec<f64>) -> Result<f64, argmin::core::Error> {
        let mut state = self.lock();
        state.at(x)?;
        Ok(state.value)
    }
}

impl Gradient for Objective {
    type Param = Vec<f64>;
    type Gradient = Vec<f64>;

    fn gradient(&self, x: &Vec<f64>) -> Result<Vec<f64>, argmin::core::Error> {
        let mut state = self.lock();
        state.at(x)?;
        Ok(state.grad.clone())
    }
}
