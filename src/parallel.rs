//! Data-parallel objectives: a sum of per-sample losses `L(θ) = Σ_s f(θ, sample_s, ...)`
//! evaluated across threads with rayon.
//!
//! [`SampleSum`] splits the samples into one contiguous block per thread; each block is summed by
//! its own worker holding its own [`GradientFn`] clone (its own tape, so the workers share only
//! the read-only native code), and the workers' values and gradients are added at the end.
//!
//! ```
//! use jitdiff::ir::parse_module;
//! use jitdiff::parallel::SampleSum;
//!
//! // f(θ, sample) = (θ0 x + θ1 - y)^2 for sample = [x, y]
//! let module = parse_module("
//! func @residual_sq(theta: slice, sample: slice) -> f64 {
//! entry:
//!     zero = iconst 0
//!     one = iconst 1
//!     a = load theta, zero
//!     b = load theta, one
//!     x = load sample, zero
//!     y = load sample, one
//!     ax = fmul a, x
//!     p = fadd ax, b
//!     r = fsub p, y
//!     sq = fmul r, r
//!     ret sq
//! }").unwrap();
//! let data = vec![0.0, 1.0, 1.0, 3.0, 2.0, 5.0]; // y = 2x + 1
//! let mut loss = SampleSum::new(&module, "residual_sq", 2, data, 2, vec![]).unwrap().with_threads(2).unwrap();
//! let mut grad = [0.0; 2];
//! assert_eq!(loss.value_and_grad(&[2.0, 1.0], &mut grad).unwrap(), 0.0);
//! assert_eq!(grad, [0.0, 0.0]);
//! ```

use crate::error::Error;
use crate::gradient::GradientFn;
use jitdiff_ir::{ArgValue, ExternRegistry, Module};
use jitdiff_jit::{Arg, JitOptions};
use rayon::prelude::*;
use smallvec::SmallVec;

/// What can be wrong when a [`SampleSum`] is set up.
#[derive(Debug, thiserror::Error)]
pub enum SampleSumError {
    /// Differentiating or compiling the per-sample loss failed.
    #[error(transparent)]
    Jitdiff(#[from] Error),
    /// The function's signature does not fit.
    #[error(
        "@{function} must take (params: slice, sample: slice, ...) followed by the {fixed} fixed argument(s) \
         given, and return an f64: {problem}"
    )]
    Signature {
        /// The function.
        function: String,
        /// Number of fixed arguments given.
        fixed: usize,
        /// What does not fit.
        problem: String,
    },
    /// The data are not a whole number of samples.
    #[error("the data ({len} values) must be a non-empty whole number of samples of {sample_len} values")]
    Data {
        /// Length of the data.
        len: usize,
        /// Length of one sample.
        sample_len: usize,
    },
    /// The thread pool could not be built.
    #[error("could not start a thread pool of {threads} threads: {source}")]
    Pool {
        /// The requested number of threads.
        threads: usize,
        /// Why.
        source: rayon::ThreadPoolBuildError,
    },
}

/// One thread's share: its own derivative handle (tape) and accumulators. Aligned to two cache
/// lines so that neighbouring workers, written by different threads, never share one.
#[derive(Clone)]
#[repr(align(128))]
struct Worker {
    f: GradientFn,
    grad: Vec<f64>,
    sum: Vec<f64>,
    value: f64,
}

/// `L(θ) = Σ_s f(θ, sample_s, fixed...)` over samples stored back to back, with its gradient,
/// evaluated in parallel. See the [module docs](self).
///
/// Runs on the rayon pool given by [`SampleSum::with_threads`], or else on the pool it is called
/// from (rayon's global pool by default), with one worker per thread. The order of the final
/// summation depends on the number of threads, so results with different thread counts agree to
/// rounding, not bit for bit.
pub struct SampleSum {
    template: GradientFn,
    workers: Vec<Worker>,
    data: Vec<f64>,
    sample_len: usize,
    fixed: Vec<ArgValue>,
    dim: usize,
    pool: Option<rayon::ThreadPool>,
}

impl SampleSum {
    /// The sum of `@name(params, sample, fixed...)` over the samples of `data` (each
    /// `sample_len` values, back to back), differentiated with respect to `params`, a slice of
    /// `dim` values.
    pub fn new(
        module: &Module,
        name: &str,
        dim: usize,
        data: Vec<f64>,
        sample_len: usize,
        fixed: Vec<ArgValue>,
    ) -> Result<SampleSum, SampleSumError> {
        let bad = |problem: String| SampleSumError::Signature { function: name.into(), fixed: fixed.len(), problem };
        let function = module.func_by_name(name).ok_or_else(|| bad("no such function in the module".into()))?;
        let params = function.param_types();
        if params.len() != 2 + fixed.len() {
            return Err(bad(format!("it has {} parameters", params.len())));
        }
        if !params[0].is_slice() || !params[1].is_slice() {
            return Err(bad(format!("its first two parameters are {} and {}", params[0], params[1])));
        }
        if sample_len == 0 || data.is_empty() || !data.len().is_multiple_of(sample_len) {
            return Err(SampleSumError::Data { len: data.len(), sample_len });
        }
        let wrt: Vec<bool> = (0..params.len()).map(|i| i == 0).collect();
        let template = GradientFn::with_externs(module, name, &wrt, &ExternRegistry::new(), &JitOptions::new())?;
        Ok(SampleSum { template, workers: vec![], data, sample_len, fixed, dim, pool: None })
    }

    /// Run on a dedicated rayon pool of `threads` threads (`threads = 1` runs on one pool thread).
    pub fn with_threads(mut self, threads: usize) -> Result<SampleSum, SampleSumError> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .map_err(|source| SampleSumError::Pool { threads, source })?;
        self.pool = Some(pool);
        Ok(self)
    }

    /// Number of samples.
    pub fn samples(&self) -> usize {
        self.data.len() / self.sample_len
    }

    /// Length of the parameter vector.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// `L(params)`, with its gradient written to `grad` (overwritten).
    pub fn value_and_grad(&mut self, params: &[f64], grad: &mut [f64]) -> Result<f64, Error> {
        for (what, len) in [("parameters", params.len()), ("gradient buffer", grad.len())] {
            if len != self.dim {
                return Err(Error::Shape { what: what.into(), expected: self.dim, got: len });
            }
        }
        match self.pool.take() {
            Some(pool) => {
                let result = pool.install(|| self.sum(params, grad));
                self.pool = Some(pool);
                result
            }
            None => self.sum(params, grad),
        }
    }

    /// The parallel sum on the current rayon pool.
    fn sum(&mut self, params: &[f64], grad: &mut [f64]) -> Result<f64, Error> {
        let samples = self.samples();
        let threads = rayon::current_num_threads().clamp(1, samples);
        if self.workers.len() != threads {
            let worker =
                Worker { f: self.template.clone(), grad: vec![0.0; self.dim], sum: vec![0.0; self.dim], value: 0.0 };
            self.workers = vec![worker; threads];
        }
        // Contiguous, balanced blocks: the first `samples % threads` blocks get one sample more.
        let (per, extra) = (samples / threads, samples % threads);
        let (data, sample_len, fixed) = (&self.data, self.sample_len, &self.fixed);
        self.workers.par_iter_mut().enumerate().try_for_each(|(t, worker)| {
            let first = t * per + t.min(extra);
            let count = per + usize::from(t < extra);
            let block = &data[first * sample_len..(first + count) * sample_len];
            let mut value = 0.0;
            worker.sum.fill(0.0);
            for sample in block.chunks_exact(sample_len) {
                let mut args: SmallVec<[Arg<'_>; 8]> = SmallVec::new();
                args.push(Arg::Slice(params));
                args.push(Arg::Slice(sample));
                args.extend(fixed.iter().map(fixed_arg));
                value += worker.f.value_and_grad(&mut args, &mut worker.grad)?;
                for (s, g) in worker.sum.iter_mut().zip(&worker.grad) {
                    *s += g;
                }
            }
            worker.value = value;
            Ok::<(), Error>(())
        })?;
        grad.fill(0.0);
        let mut value = 0.0;
        for worker in &self.workers {
            value += worker.value;
            for (g, s) in grad.iter_mut().zip(&worker.sum) {
                *g += s;
            }
        }
        Ok(value)
    }
}

fn fixed_arg(a: &ArgValue) -> Arg<'_> {
    match a {
        ArgValue::F64(v) => Arg::F64(*v),
        ArgValue::I64(v) => Arg::I64(*v),
        ArgValue::Bool(v) => Arg::Bool(*v),
        ArgValue::Vector(v) => Arg::Vector(v),
        ArgValue::Slice(v) | ArgValue::SliceMut(v) => Arg::Slice(v),
    }
}
