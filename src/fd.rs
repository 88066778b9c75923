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
//! Derivatives are of the *outputs* — the `f64` results, then the final contents of every
//! `mslice` parameter — with respect to the *inputs* (the differentiated scalars), in the flat
//! layouts of [`GradientFn`](crate::GradientFn) and [`ForwardFn`](crate::ForwardFn).
//!
//! ```
//! use jitdiff::{args, fd::FiniteDiff, ir::parse_module};
//! let m = parse_module("func @f(x: f64, y: f64) -> f64 {\nentry:\n    p = fmul x, y\n    s = sin p\n    ret s\n}").unwrap();
//! let fd = FiniteDiff::builder(&m, "f").wrt(["x", "y"]).build().unwrap();
//! let g = fd.gradient(&args![2.0, 3.0]).unwrap();
//! assert!((g[0] - 3.0 * 6.0f64.cos()).abs() < 1e-9);
//! assert!((g[1] - 2.0 * 6.0f64.cos()).abs() < 1e-9);
//! ```

use crate::builder::{Build, Builder, Spec, sealed};
use crate::error::{Buffer, Error};
use crate::forward::Jacobian;
use crate::user::UserFunction;
use jitdiff_ir::{ArgValue, Module, RuntimeValue};
use jitdiff_jit::{Arg, CompiledFn, compile};
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
    /// building a [`FiniteDiff`] with them is an [`Error::BadStep`]).
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

/// Finite differences of one compiled function with respect to its differentiated parameters.
/// Build with [`FiniteDiff::builder`] (`.fd_options(..)` picks the scheme and step), or from a
/// gradient handle with [`FiniteDiff::of`].
#[derive(Clone)]
pub struct FiniteDiff {
    user: UserFunction,
    primal: CompiledFn,
    options: FdOptions,
}

/// A perturbable scalar: (parameter, element within a slice parameter).
type Coord = (usize, usize);

impl sealed::Sealed for FiniteDiff {}
impl Build for FiniteDiff {
    #[allow(private_interfaces)]
    fn build_from(spec: Spec) -> Result<FiniteDiff, Error> {
        FiniteDiff::from_user(spec.user, &spec.options, spec.fd)
    }
}

impl FiniteDiff {
    /// Start building finite differences of `@name` (see [`Builder`]).
    pub fn builder<'m>(module: &'m Module, name: &str) -> Builder<'m, FiniteDiff> {
        Builder::new(module, name)
    }

    /// Finite differences of the function of `gradient`, with respect to the same parameters.
    pub fn of(gradient: &crate::GradientFn, options: FdOptions) -> Result<FiniteDiff, Error> {
        FiniteDiff::from_user(gradient.user.clone(), &jitdiff_jit::JitOptions::new(), options)
    }

    fn from_user(user: UserFunction, jit: &jitdiff_jit::JitOptions, options: FdOptions) -> Result<FiniteDiff, Error> {
        let step = options.relative_step();
        if !(f64::EPSILON..=1.0).contains(&step) {
            return Err(Error::BadStep(step));
        }
        if user.float_results() == 0 && user.mslices().next().is_none() {
            return Err(Error::NoFloatResult { function: user.name.clone(), what: "derivative to approximate" });
        }
        let compiled = compile(&user.module, &user.externs, jit).map_err(|e| Error::compile(&user.name, e))?;
        let primal = compiled.function(&user.name).map_err(|e| Error::compile(&user.name, e))?;
        Ok(FiniteDiff { user, primal, options })
    }

    /// The options in use.
    pub fn options(&self) -> FdOptions {
        self.options
    }

    /// Which parameters are differentiated.
    pub fn wrt(&self) -> &[bool] {
        &self.user.wrt
    }

    /// The compiled primal.
    pub fn primal(&self) -> &CompiledFn {
        &self.primal
    }

    /// The outputs of one primal call at `args` (`f64` results, then `mslice` contents).
    pub fn values(&self, args: &[Arg<'_>]) -> Result<Vec<f64>, Error> {
        self.user.check_args(args)?;
        let mut work = Work::new(self, args);
        self.eval(&mut work).map(|v| v.to_vec()).map_err(|e| self.fault(args, e))
    }

    /// The gradient of the first `f64` result: one entry per input.
    pub fn gradient(&self, args: &[Arg<'_>]) -> Result<Vec<f64>, Error> {
        self.user.require_float_result("gradient")?;
        let coords = self.coords(args)?;
        let columns = self.columns(args, &coords)?;
        Ok(columns.iter().map(|c| c[0]).collect())
    }

    /// Gradient entries for a subset of the inputs (indices into the flat layout), e.g. to
    /// estimate what a full gradient would cost.
    pub fn gradient_entries(&self, args: &[Arg<'_>], entries: &[usize]) -> Result<Vec<f64>, Error> {
        self.user.require_float_result("gradient")?;
        let all = self.coords(args)?;
        let coords: Vec<Coord> = entries
            .iter()
            .map(|&e| {
                all.get(e).copied().ok_or_else(|| {
                    self.user.length_error(Buffer::Entry, all.len(), e, "an index must be below the number of inputs")
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(self.columns(args, &coords)?.iter().map(|c| c[0]).collect())
    }

    /// The Jacobian of the outputs with respect to the inputs (outputs × inputs).
    pub fn jacobian(&self, args: &[Arg<'_>]) -> Result<Jacobian, Error> {
        let coords = self.coords(args)?;
        let columns = self.columns(args, &coords)?;
        let (rows, cols) = (self.user.outputs(args), coords.len());
        let mut data = self.user.dense_zeros("Jacobian", rows, cols)?;
        for (c, column) in columns.iter().enumerate() {
            for (r, &v) in column.iter().enumerate() {
                data[r * cols + c] = v;
            }
        }
        Ok(Jacobian { rows, cols, data })
    }

    /// The directional derivative of every output along `tangents` (one per differentiated
    /// parameter: one value for an `f64`, `len` values for a slice).
    pub fn jvp(&self, args: &[Arg<'_>], tangents: &[&[f64]]) -> Result<Vec<f64>, Error> {
        let coords = self.coords(args)?;
        let active: Vec<usize> = (0..self.user.params.len()).filter(|&i| self.user.wrt[i]).collect();
        if tangents.len() != active.len() {
            return Err(self.user.length_error(
                Buffer::Tangents,
                active.len(),
                tangents.len(),
                format!(
                    "one per differentiated parameter: {}",
                    active.iter().map(|&p| format!("`{}`", self.user.param_names[p])).collect::<Vec<_>>().join(", ")
                ),
            ));
        }
        let mut direction = Vec::with_capacity(coords.len());
        for (&param, t) in active.iter().zip(tangents) {
            let len = coords.iter().filter(|c| c.0 == param).count();
            if t.len() != len {
                let name = self.user.param_names[param].clone();
                return Err(self.user.length_error(Buffer::Tangent(name), len, t.len(), "one per scalar"));
            }
            direction.extend_from_slice(t);
        }
        let mut work = Work::new(self, args);
        let x0: Vec<f64> = coords.iter().map(|&c| work.get(c)).collect();
        let x_max = x0.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let v_max = direction.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        if v_max == 0.0 {
            return Ok(vec![0.0; self.user.outputs(args)]);
        }
        let t = self.options.relative_step() * x_max.max(1.0) / v_max;
        let shift = |work: &mut Work, sign: f64| {
            for ((&c, &v), &x) in coords.iter().zip(&direction).zip(&x0) {
                work.set(c, x + sign * t * v);
            }
        };
        shift(&mut work, 1.0);
        let plus = self.eval(&mut work).map_err(|e| self.fault(args, e))?;
        let (minus, denominator) = match self.options.scheme {
            FdScheme::Central => {
                shift(&mut work, -1.0);
                (self.eval(&mut work).map_err(|e| self.fault(args, e))?, 2.0 * t)
            }
            FdScheme::Forward => {
                shift(&mut work, 0.0);
                (self.eval(&mut work).map_err(|e| self.fault(args, e))?, t)
            }
        };
        Ok(plus.iter().zip(&minus).map(|(p, m)| (p - m) / denominator).collect())
    }

    /// Number of primal calls a full gradient or Jacobian takes for `n` inputs.
    pub fn calls_for(&self, n: usize) -> usize {
        match self.options.scheme {
            FdScheme::Central => 2 * n,
            FdScheme::Forward => n + 1,
        }
    }

    /// Every input of `args`, in the flat order.
    fn coords(&self, args: &[Arg<'_>]) -> Result<Vec<Coord>, Error> {
        self.user.check_args(args)?;
        let mut coords = vec![];
        for (p, a) in args.iter().enumerate().filter(|(p, _)| self.user.wrt[*p]) {
            match a.as_slice() {
                Some(v) => coords.extend((0..v.len()).map(|e| (p, e))),
                None => coords.push((p, 0)),
            }
        }
        Ok(coords)
    }

    /// For each coordinate, the derivative of every output.
    fn columns(&self, args: &[Arg<'_>], coords: &[Coord]) -> Result<Vec<SmallVec<[f64; 1]>>, Error> {
        let base = match self.options.scheme {
            FdScheme::Forward => Some(self.eval(&mut Work::new(self, args)).map_err(|e| self.fault(args, e))?),
            FdScheme::Central => None,
        };
        let column = |work: &mut Work, &c: &Coord| self.column(work, c, base.as_deref());
        let columns: Result<Vec<_>, jitdiff_jit::CallError> = if self.options.parallel && coords.len() > 1 {
            coords.par_iter().map_init(|| Work::new(self, args), column).collect()
        } else {
            let mut work = Work::new(self, args);
            coords.iter().map(|c| column(&mut work, c)).collect()
        };
        columns.map_err(|e| self.fault(args, e))
    }

    fn column(
        &self,
        work: &mut Work,
        c: Coord,
        base: Option<&[f64]>,
    ) -> Result<SmallVec<[f64; 1]>, jitdiff_jit::CallError> {
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

    /// One primal call on the work copy; returns the outputs.
    fn eval(&self, work: &mut Work) -> Result<SmallVec<[f64; 1]>, jitdiff_jit::CallError> {
        let args = match &mut work.scratch {
            Some(scratch) => {
                scratch.clone_from(&work.input);
                scratch
            }
            None => &mut work.input,
        };
        let mut native: SmallVec<[Arg<'_>; 8]> = args.iter_mut().map(Arg::from).collect();
        self.primal.call_into(&mut native, &mut work.results)?;
        drop(native);
        let mut out: SmallVec<[f64; 1]> =
            work.results.iter().filter_map(|r| if let RuntimeValue::F64(x) = r { Some(*x) } else { None }).collect();
        for p in self.user.mslices() {
            if let ArgValue::SliceMut(v) = &args[p] {
                out.extend_from_slice(v);
            }
        }
        Ok(out)
    }

    /// A primal fault, in the user's terms (perturbed points can fault where the point does not).
    fn fault(&self, args: &[Arg<'_>], e: jitdiff_jit::CallError) -> Error {
        self.user.call_error(args, e)
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
    fn new(fd: &FiniteDiff, args: &[Arg<'_>]) -> Work {
        let results = fd.primal.returns().iter().map(|&t| crate::scratch::zero_of(t)).collect();
        let input: Vec<ArgValue> = args.iter().map(Arg::to_value).collect();
        let scratch = input.iter().any(|a| matches!(a, ArgValue::SliceMut(_))).then(|| input.clone());
        Work { input, scratch, results }
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

impl std::fmt::Debug for FiniteDiff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FiniteDiff")
            .field("function", &self.user.name)
            .field("wrt", &self.user.wrt)
            .finish_non_exhaustive()
    }
}
