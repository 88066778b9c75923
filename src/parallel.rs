//! Data-parallel objectives: a sum of per-sample losses `L(θ) = Σ_s f(θ, sample_s, ...)`
//! evaluated across threads with rayon.
//!
//! [`SampleSum`] splits the samples into one contiguous block per thread; each block is summed by
//! its own worker calling the same [`GradientFn`] (evaluation through `&self` uses per-thread
//! scratch memory, so the workers share only the read-only native code), and the workers'
//! values and gradients are added at the end. The data are borrowed, not copied.
//!
//! ```
//! use jitdiff::{GradientFn, ir::parse_module};
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
//! let f = GradientFn::builder(&module, "residual_sq").wrt(["theta"]).build().unwrap();
//! let data = [0.0, 1.0, 1.0, 3.0, 2.0, 5.0]; // y = 2x + 1
//! let loss = SampleSum::new(&f, 2, &data, 2, vec![]).unwrap().with_threads(2).unwrap();
//! let mut grad = [0.0; 2];
//! assert_eq!(loss.value_and_grad(&[2.0, 1.0], &mut grad).unwrap(), 0.0);
//! assert_eq!(grad, [0.0, 0.0]);
//! ```

use crate::error::{Buffer, Error};
use crate::gradient::GradientFn;
use jitdiff_jit::Arg;
use rayon::prelude::*;
use smallvec::SmallVec;

/// `L(θ) = Σ_s f(θ, sample_s, fixed...)` over samples stored back to back, with its gradient,
/// evaluated in parallel. See the [module docs](self).
///
/// Runs on the rayon pool given by [`SampleSum::with_threads`], or else on the pool it is called
/// from (rayon's global pool by default), with one worker per thread. The order of the final
/// summation depends on the number of threads, so results with different thread counts agree to
/// rounding, not bit for bit.
pub struct SampleSum<'a> {
    f: &'a GradientFn,
    data: &'a [f64],
    sample_len: usize,
    fixed: Vec<Arg<'a>>,
    dim: usize,
    pool: Option<rayon::ThreadPool>,
}

impl<'a> SampleSum<'a> {
    /// The sum of `f(params, sample, fixed...)` over the samples of `data` (each `sample_len`
    /// values, back to back). `f` must differentiate exactly its first parameter, a slice of
    /// `dim` values; `fixed` are its remaining arguments after the sample (read-only).
    pub fn new(
        f: &'a GradientFn,
        dim: usize,
        data: &'a [f64],
        sample_len: usize,
        fixed: Vec<Arg<'a>>,
    ) -> Result<SampleSum<'a>, Error> {
        let user = &f.user;
        let bad = |problem: String| {
            Error::Setting(format!(
                "@{} must take (params: slice, sample: slice, ...) followed by the {} fixed argument(s) given, return an f64 and be differentiated with respect to its first parameter only: {problem}",
                user.name,
                fixed.len()
            ))
        };
        let params = &user.params;
        if params.len() != 2 + fixed.len() {
            return Err(bad(format!("it has {} parameters ({})", params.len(), user.signature())));
        }
        if !params[0].is_slice() || !params[1].is_slice() {
            return Err(bad(format!("its first two parameters are {} and {}", params[0], params[1])));
        }
        if user.wrt.iter().enumerate().any(|(p, &on)| on != (p == 0)) {
            return Err(bad("it is differentiated with respect to other parameters".into()));
        }
        user.require_float_result("sum of losses")?;
        if sample_len == 0 || data.is_empty() || !data.len().is_multiple_of(sample_len) {
            return Err(Error::Data { len: data.len(), sample_len });
        }
        if fixed.iter().any(|a| matches!(a, Arg::SliceMut(_))) {
            return Err(bad("a fixed argument is a mutable slice".into()));
        }
        Ok(SampleSum { f, data, sample_len, fixed, dim, pool: None })
    }

    /// Run on a dedicated rayon pool of `threads` threads (`threads = 1` runs on one pool thread).
    pub fn with_threads(mut self, threads: usize) -> Result<SampleSum<'a>, Error> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .map_err(|source| Error::ThreadPool { threads, source })?;
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
    pub fn value_and_grad(&self, params: &[f64], grad: &mut [f64]) -> Result<f64, Error> {
        for (buffer, len) in [(Buffer::Point, params.len()), (Buffer::Gradient, grad.len())] {
            if len != self.dim {
                return Err(self.f.user.length_error(buffer, self.dim, len, "the parameters' length"));
            }
        }
        match &self.pool {
            Some(pool) => pool.install(|| self.sum(params, grad)),
            None => self.sum(params, grad),
        }
    }

    /// The parallel sum on the current rayon pool.
    fn sum(&self, params: &[f64], grad: &mut [f64]) -> Result<f64, Error> {
        let samples = self.samples();
        let threads = rayon::current_num_threads().clamp(1, samples);
        // Contiguous, balanced blocks: the first `samples % threads` blocks get one sample more.
        let (per, extra) = (samples / threads, samples % threads);
        let (data, sample_len, dim) = (self.data, self.sample_len, self.dim);
        let partial: Vec<(f64, Vec<f64>)> = (0..threads)
            .into_par_iter()
            .map(|t| {
                let first = t * per + t.min(extra);
                let count = per + usize::from(t < extra);
                let block = &data[first * sample_len..(first + count) * sample_len];
                let (mut value, mut sum, mut g) = (0.0, vec![0.0; dim], vec![0.0; dim]);
                for sample in block.chunks_exact(sample_len) {
                    let mut args: SmallVec<[Arg<'_>; 8]> = SmallVec::new();
                    args.push(Arg::Slice(params));
                    args.push(Arg::Slice(sample));
                    args.extend(self.fixed.iter().map(Arg::shared));
                    value += self.f.value_and_grad(&mut args, &mut g)?;
                    for (s, gi) in sum.iter_mut().zip(&g) {
                        *s += gi;
                    }
                }
                Ok((value, sum))
            })
            .collect::<Result<_, Error>>()?;
        grad.fill(0.0);
        let mut value = 0.0;
        for (v, sum) in &partial {
            value += v;
            for (g, s) in grad.iter_mut().zip(sum) {
                *g += s;
            }
        }
        Ok(value)
    }
}
