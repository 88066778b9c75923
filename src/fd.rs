//! Finite differences on the JIT-compiled primal: gradients, JVPs and Jacobians, the yardstick
//! every AD result is checked against (and the baseline AD's speed is compared with).
//!
//! **Steps.** Coordinate `i` is perturbed by `h_i = s · max(1, |x_i|)`, rounded so that
//! `x_i + h_i` is exactly representable (`h_i = (x_i + h_i) - x_i`), where the relative step `s`
//! defaults to [`CENTRAL_STEP`] `= ε^(1/3) ≈ 6.06e-6` for central differences (error
//! `O(h²) + O(ε/h)`, balanced at `h ~ ε^(1/3)`) and to [`FORWARD_STEP`] `= √ε ≈ 1.49e-8` for
//! forward differences (`O(h) + O(ε/h)`). A directional derivative along `v` uses the step
//! `t = s · max(1, max_i |x_i|) / max_i |v_i|` for the whole direction.
//!
//! **Cost.** A gradient or Jacobian over `n` differentiated scalars costs `2n` primal calls
//! (central) or `n + 1` (forward); with [`FdOptions::parallel`] the coordinates are spread over
//! rayon's threads, each calling the same compiled function on its own copy of the arguments.
//!
//! ```
//! use jitdiff::fd::{FdOptions, FiniteDiff};
//! use jitdiff::ir::{parse_module, ArgValue};
//! let m = parse_module("func @f(x: f64, y: f64) -> f64 {\nentry:\n    p = fmul x, y\n    s = sin p\n    ret s\n}").unwrap();
//! let fd = FiniteDiff::new(&m, "f", &[true, true], FdOptions::central()).unwrap();
//! let g = fd.gradient(&[ArgValue::F64(2.0), ArgValue::F64(3.0)]).unwrap();
//! assert!((g[0] - 3.0 * 6.0f64.cos()).abs() < 1e-9);
//! assert!((g[1] - 2.0 * 6.0f64.cos()).abs() < 1e-9);
//! ```

use crate::forward::Jacobian;
use jitdiff_ir::{ArgValue, ExternRegistry, Module, RuntimeValue, Type};
use jitdiff_jit::{Arg, CallError, CompiledFn, JitError, JitOptions, compile};
use rayon::prelude::*;
use smallvec::SmallVec;

/// The default relative step of central differences: `ε^(1/3)`.
pub const CENTRAL_STEP: f64 = 6.055_454_452_393_343e-6;
/// The default relative step of forward differences: `√ε`.
pub const FORWARD_STEP: f64 = 1.490_116_119_384_765_6e-8;

/// Which difference quotient.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FdScheme {
    /// `(f(x + h) - f(x)) / h`: `n + 1` calls, error `O(h)`.
    Forward,
    /// `(f(x + h) - f(x - h)) / 2h`: `2n` calls, error `O(h²)`.
    Central,
}

/// How finite differences are taken. `FdOptions::central()` is the default.
///
/// ```
/// use jitdiff::fd::{FdOptions, FdScheme, CENTRAL_STEP};
/// let o = FdOptions::default();
/// assert_eq!((o.scheme, o.relative_step()), (FdScheme::Central, CENTRAL_STEP));
/// assert_eq!(FdOptions::forward().with_step(1e-7).relative_step(), 1e-7);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FdOptions {
    /// Forward or central differences.
    pub scheme: FdScheme,
    /// The relative step `s`; `None` picks the scheme's default.
    pub step: Option<f64>,
    /// Spread coordinates over rayon's thread pool.
    pub parallel: bool,
}

impl Default for FdOptions {
    fn default() -> FdOptions {
        FdOptions::central()
    }
}

impl FdOptions {
    /// Central differences with the default step, sequential.
    pub fn central() -> FdOptions {
        FdOptions { scheme: FdScheme::Central, step: None, parallel: false }
    }
    /// Forward differences with the default step, sequential.
    pub fn forward() -> FdOptions {
        FdOptions { scheme: FdScheme::Forward, step: None, parallel: false }
    }
    /// The same options with relative step `step`, which must lie in `[f64::EPSILON, 1]` (else
    /// building a [`FiniteDiff`] with them is a [`FdError::BadStep`]).
    pub fn with_step(self, step: f64) -> FdOptions {
        FdOptions { step: Some(step), ..self }
    }
    /// The same options, parallel over coordinates or not.
    pub fn parallel(self, parallel: bool) -> FdOptions {
        FdOptions { parallel, ..self }
    }
    /// The relative step in use.
    pub fn relative_step(&self) -> f64 {
        self.step.unwrap_or(match self.scheme {
            FdScheme::Forward => FORWARD_STEP,
            FdScheme::Central => CENTRAL_STEP,
        })
    }
}

/// The step for a coordinate of value `x`: `s · max(1, |x|)`, rounded so that `x + h` is exact.
///
/// ```
/// use jitdiff::fd::step_for;
/// let h = step_for(1000.0, 1e-6);
/// assert_eq!((1000.0 + h) - 1000.0, h);
/// assert!((h - 1e-3).abs() < 1e-12);
/// ```
pub fn step_for(x: f64, relative: f64) -> f64 {
    let h = relative * x.abs().max(1.0);
    (x + h) - x
}

/// What can go wrong taking finite differences. Each message says what to fix.
#[derive(Debug, thiserror::Error)]
pub enum FdError {
    /// The primal could not be compiled.
    #[error(transparent)]
    Jit(Box<JitError>),
    /// A primal call failed (wrong arguments, or a run-time fault such as an out-of-bounds index).
    #[error(transparent)]
    Call(#[from] CallError),
    /// The requested function is not in the module.
    #[error("no function @{0} in the module")]
    UnknownFunction(String),
    /// The function returns no `f64`, so there is nothing to differentiate.
    #[error("@{0} returns no f64 result, so it has no derivative to approximate")]
    NoFloatResult(String),
    /// The `wrt` mask does not fit the function.
    #[error("@{function} has {expected} parameter(s), but the wrt mask has {got} flag(s)")]
    WrtLength {
        /// The function.
        function: String,
        /// Its parameter count.
        expected: usize,
        /// The mask's length.
        got: usize,
    },
    /// A parameter that cannot be differentiated was marked.
    #[error("parameter {index} of @{function} is {ty}; only f64 and slice parameters can be differentiated")]
    WrtType {
        /// The function.
        function: String,
        /// The parameter position.
        index: usize,
        /// Its type.
        ty: Type,
    },
    /// An argument does not match the parameter it is passed for.
    #[error("argument {index} of @{function} must be {expected}, but a {got} was given")]
    ArgType {
        /// The function.
        function: String,
        /// The argument position.
        index: usize,
        /// The parameter type.
        expected: Type,
        /// What was given.
        got: String,
    },
    /// The relative step is not a finite number in `[f64::EPSILON, 1]`: a zero, negative, NaN
    /// or tiny step makes `x + h == x`, and a step above 1 is no longer a difference quotient.
    #[error(
        "the finite-difference step {0:e} is not in [2.2e-16, 1]; use a small positive relative step (the defaults are 6.06e-6 for central and 1.49e-8 for forward differences)"
    )]
    BadStep(f64),
    /// Wrong number of arguments or tangents.
    #[error("{what}: expected {expected}, got {got}")]
    Shape {
        /// Which list.
        what: String,
        /// The length it must have.
        expected: usize,
        /// The length given.
        got: usize,
    },
}

impl From<JitError> for FdError {
    fn from(e: JitError) -> FdError {
        FdError::Jit(Box::new(e))
    }
}

/// Finite differences of one compiled function with respect to the parameters marked in `wrt`.
///
/// Derivatives are of the function's `f64` results (a gradient is of the first one), with
/// respect to every differentiated scalar in parameter order — the flat layout of
/// [`GradientFn`](crate::GradientFn) and [`ForwardFn::jacobian`](crate::ForwardFn::jacobian).
#[derive(Clone)]
pub struct FiniteDiff {
    primal: CompiledFn,
    wrt: Vec<bool>,
    float_results: Vec<usize>,
    options: FdOptions,
}

/// A perturbable scalar: (parameter, element within a slice parameter).
type Coord = (usize, usize);

impl FiniteDiff {
    /// Compile `@name` of `module` and take differences with respect to `wrt`.
    pub fn new(module: &Module, name: &str, wrt: &[bool], options: FdOptions) -> Result<FiniteDiff, FdError> {
        if module.func_by_name(name).is_none() {
            return Err(FdError::UnknownFunction(name.into()));
        }
        let compiled = compile(module, &ExternRegistry::new(), &JitOptions::new())?;
        FiniteDiff::from_compiled(compiled.function(name)?, wrt, options)
    }

    /// Take differences of an already compiled function (it keeps its native code alive).
    pub fn from_compiled(primal: CompiledFn, wrt: &[bool], options: FdOptions) -> Result<FiniteDiff, FdError> {
        let params = primal.params();
        if wrt.len() != params.len() {
            return Err(FdError::WrtLength { function: primal.name().into(), expected: params.len(), got: wrt.len() });
        }
        for (index, (&ty, &on)) in params.iter().zip(wrt).enumerate() {
            if on && !(ty == Type::F64 || ty.is_slice()) {
                return Err(FdError::WrtType { function: primal.name().into(), index, ty });
            }
        }
        let float_results: Vec<usize> =
            primal.returns().iter().enumerate().filter(|(_, t)| **t == Type::F64).map(|(i, _)| i).collect();
        if float_results.is_empty() {
            return Err(FdError::NoFloatResult(primal.name().into()));
        }
        let step = options.relative_step();
        if !(f64::EPSILON..=1.0).contains(&step) {
            return Err(FdError::BadStep(step));
        }
        Ok(FiniteDiff { primal, wrt: wrt.to_vec(), float_results, options })
    }

    /// The options in use.
    pub fn options(&self) -> FdOptions {
        self.options
    }

    /// Which parameters are differentiated.
    pub fn wrt(&self) -> &[bool] {
        &self.wrt
    }

    /// The compiled primal.
    pub fn primal(&self) -> &CompiledFn {
        &self.primal
    }

    /// The `f64` results of one primal call at `args`.
    pub fn values(&self, args: &[ArgValue]) -> Result<Vec<f64>, FdError> {
        self.check_args(args)?;
        let mut work = Work::new(self, args);
        self.eval(&mut work).map(|v| v.to_vec())
    }

    /// The gradient of the first `f64` result: one entry per differentiated scalar.
    pub fn gradient(&self, args: &[ArgValue]) -> Result<Vec<f64>, FdError> {
        let coords = self.coords(args)?;
        let columns = self.columns(args, &coords)?;
        Ok(columns.iter().map(|c| c[0]).collect())
    }

    /// Gradient entries for a subset of the differentiated scalars (indices into the flat
    /// layout), e.g. to estimate what a full gradient would cost.
    pub fn gradient_entries(&self, args: &[ArgValue], entries: &[usize]) -> Result<Vec<f64>, FdError> {
        let all = self.coords(args)?;
        let coords: Vec<Coord> = entries
            .iter()
            .map(|&e| {
                all.get(e).copied().ok_or(FdError::Shape {
                    what: "gradient entry index (number of differentiated scalars)".into(),
                    expected: all.len(),
                    got: e,
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(self.columns(args, &coords)?.iter().map(|c| c[0]).collect())
    }

    /// The Jacobian of every `f64` result with respect to every differentiated scalar.
    pub fn jacobian(&self, args: &[ArgValue]) -> Result<Jacobian, FdError> {
        let coords = self.coords(args)?;
        let columns = self.columns(args, &coords)?;
        let (rows, cols) = (self.float_results.len(), coords.len());
        let mut data = vec![0.0; rows * cols];
        for (c, column) in columns.iter().enumerate() {
            for (r, &v) in column.iter().enumerate() {
                data[r * cols + c] = v;
            }
        }
        Ok(Jacobian { rows, cols, data })
    }

    /// The directional derivative of every `f64` result along `tangents` (one per differentiated
    /// parameter: one value for an `f64`, `len` values for a slice).
    pub fn jvp(&self, args: &[ArgValue], tangents: &[&[f64]]) -> Result<Vec<f64>, FdError> {
        let coords = self.coords(args)?;
        let active: Vec<usize> = (0..self.wrt.len()).filter(|&i| self.wrt[i]).collect();
        if tangents.len() != active.len() {
            return Err(FdError::Shape {
                what: "tangents (one per differentiated parameter)".into(),
                expected: active.len(),
                got: tangents.len(),
            });
        }
        let mut direction = Vec::with_capacity(coords.len());
        for (&param, t) in active.iter().zip(tangents) {
            let len = coords.iter().filter(|c| c.0 == param).count();
            if t.len() != len {
                return Err(FdError::Shape {
                    what: format!("tangent of parameter {param}"),
                    expected: len,
                    got: t.len(),
                });
            }
            direction.extend_from_slice(t);
        }
        let mut work = Work::new(self, args);
        let x0: Vec<f64> = coords.iter().map(|&c| work.get(c)).collect();
        let x_max = x0.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let v_max = direction.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        if v_max == 0.0 {
            return Ok(vec![0.0; self.float_results.len()]);
        }
        let t = self.options.relative_step() * x_max.max(1.0) / v_max;
        let shift = |work: &mut Work, sign: f64| {
            for ((&c, &v), &x) in coords.iter().zip(&direction).zip(&x0) {
                work.set(c, x + sign * t * v);
            }
        };
        shift(&mut work, 1.0);
        let plus = self.eval(&mut work)?;
        let (minus, denominator) = match self.options.scheme {
            FdScheme::Central => {
                shift(&mut work, -1.0);
                (self.eval(&mut work)?, 2.0 * t)
            }
            FdScheme::Forward => {
                shift(&mut work, 0.0);
                (self.eval(&mut work)?, t)
            }
        };
        Ok(plus.iter().zip(&minus).map(|(p, m)| (p - m) / denominator).collect())
    }

    /// Number of primal calls a full gradient or Jacobian takes for `n` differentiated scalars.
    pub fn calls_for(&self, n: usize) -> usize {
        match self.options.scheme {
            FdScheme::Central => 2 * n,
            FdScheme::Forward => n + 1,
        }
    }

    fn check_args(&self, args: &[ArgValue]) -> Result<(), FdError> {
        let params = self.primal.params();
        if args.len() != params.len() {
            return Err(FdError::Shape {
                what: format!("arguments of @{}", self.primal.name()),
                expected: params.len(),
                got: args.len(),
            });
        }
        for (index, (a, &ty)) in args.iter().zip(params).enumerate() {
            let fits = matches!(
                (a, ty),
                (ArgValue::F64(_), Type::F64)
                    | (ArgValue::I64(_), Type::I64)
                    | (ArgValue::Bool(_), Type::Bool)
                    | (ArgValue::Vector(_), Type::F64x(_))
                    | (ArgValue::Slice(_) | ArgValue::SliceMut(_), Type::Slice)
                    | (ArgValue::SliceMut(_), Type::SliceMut)
            );
            if !fits {
                return Err(FdError::ArgType {
                    function: self.primal.name().into(),
                    index,
                    expected: ty,
                    got: a.kind(),
                });
            }
        }
        Ok(())
    }

    /// Every differentiated scalar of `args`, in the flat order.
    fn coords(&self, args: &[ArgValue]) -> Result<Vec<Coord>, FdError> {
        self.check_args(args)?;
        let mut coords = vec![];
        for (p, a) in args.iter().enumerate().filter(|(p, _)| self.wrt[*p]) {
            match a {
                ArgValue::Slice(v) | ArgValue::SliceMut(v) => coords.extend((0..v.len()).map(|e| (p, e))),
                _ => coords.push((p, 0)),
            }
        }
        Ok(coords)
    }

    /// For each coordinate, the derivative of every `f64` result.
    fn columns(&self, args: &[ArgValue], coords: &[Coord]) -> Result<Vec<SmallVec<[f64; 1]>>, FdError> {
        let base = match self.options.scheme {
            FdScheme::Forward => Some(self.eval(&mut Work::new(self, args))?),
            FdScheme::Central => None,
        };
        let column = |work: &mut Work, &c: &Coord| self.column(work, c, base.as_deref());
        if self.options.parallel && coords.len() > 1 {
            coords.par_iter().map_init(|| Work::new(self, args), column).collect()
        } else {
            let mut work = Work::new(self, args);
            coords.iter().map(|c| column(&mut work, c)).collect()
        }
    }

    fn column(&self, work: &mut Work, c: Coord, base: Option<&[f64]>) -> Result<SmallVec<[f64; 1]>, FdError> {
        let x = work.get(c);
        let h = step_for(x, self.options.relative_step());
        work.set(c, x + h);
        let plus = self.eval(work);
        let result = match (plus, base) {
            (Err(e), _) => Err(e),
            (Ok(plus), Some(base)) => Ok(plus.iter().zip(base).map(|(p, b)| (p - b) / h).collect()),
            (Ok(plus), None) => {
                work.set(c, x - h);
                self.eval(work).map(|minus| plus.iter().zip(&minus).map(|(p, m)| (p - m) / (2.0 * h)).collect())
            }
        };
        work.set(c, x);
        result
    }

    /// One primal call on the work copy; returns the `f64` results.
    fn eval(&self, work: &mut Work) -> Result<SmallVec<[f64; 1]>, FdError> {
        let args = match &mut work.scratch {
            Some(scratch) => {
                scratch.clone_from(&work.input);
                scratch
            }
            None => &mut work.input,
        };
        let mut native: SmallVec<[Arg<'_>; 8]> = args.iter_mut().map(Arg::from).collect();
        self.primal.call_into(&mut native, &mut work.results)?;
        Ok(self.float_results.iter().map(|&i| work.results[i].as_f64().unwrap_or(f64::NAN)).collect())
    }
}

/// One caller's copy of the arguments (perturbed in place) and result buffer.
struct Work {
    input: Vec<ArgValue>,
    /// When the function takes `mslice`s it may store into them, so every call gets a fresh copy
    /// of `input` instead: each evaluation must see the same input but for the perturbation.
    scratch: Option<Vec<ArgValue>>,
    results: Vec<RuntimeValue>,
}

impl Work {
    fn new(fd: &FiniteDiff, args: &[ArgValue]) -> Work {
        let results = fd
            .primal
            .returns()
            .iter()
            .map(|t| match t {
                Type::I64 => RuntimeValue::I64(0),
                Type::Bool => RuntimeValue::Bool(false),
                Type::F64x(w) => RuntimeValue::Vector(vec![0.0; *w as usize]),
                _ => RuntimeValue::F64(0.0),
            })
            .collect();
        let scratch = args.iter().any(|a| matches!(a, ArgValue::SliceMut(_))).then(|| args.to_vec());
        Work { input: args.to_vec(), scratch, results }
    }

    fn get(&self, (p, e): Coord) -> f64 {
        match &self.input[p] {
            ArgValue::F64(x) => *x,
            ArgValue::Slice(v) | ArgValue::SliceMut(v) | ArgValue::Vector(v) => v[e],
            _ => f64::NAN,
        }
    }

    fn set(&mut self, (p, e): Coord, value: f64) {
        match &mut self.input[p] {
            ArgValue::F64(x) => *x = value,
            ArgValue::Slice(v) | ArgValue::SliceMut(v) | ArgValue::Vector(v) => v[e] = value,
            // `coords` lists only f64 and slice parameters.
            ArgValue::I64(_) | ArgValue::Bool(_) => {}
        }
    }
}
