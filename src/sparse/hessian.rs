//! Sparse Hessians: Hessian-vector products over the colour groups of a star coloring. Each
//! product's direction is the sum of one colour's unit vectors; the star property lets every
//! nonzero be read directly off one product (`jitdiff_ad::coloring::star_recovery`). W
//! directions per sweep make `ceil(colours / W)` sweeps.

use super::csr::CsrMatrix;
use super::plan::{Key, Keyed, PerWidth, PlanCache, SparsityInfo, detect, lanes_for};
use crate::builder::{Build, Builder, HasWidth, Spec, sealed};
use crate::error::{Buffer, Error};
use crate::hvp::HvpFn;
use crate::scratch::with_scratch;
use crate::user::UserFunction;
use jitdiff_ad::coloring::{star_coloring, star_recovery_each};
use jitdiff_ad::sparsity::Pattern;
use jitdiff_ir::Module;
use jitdiff_jit::{Arg, JitOptions};
use jitdiff_rules::RuleSet;
use std::sync::Arc;

/// A JIT-compiled sparse Hessian of a scalar function (its first `f64` result) with respect to
/// the differentiated scalars, in compressed-row form with both triangles stored. The pattern
/// is detected and star-coloured at the first call (and again when a call's shapes or integer
/// arguments differ); every call then takes `ceil(colours / W)` sweeps of W Hessian-vector
/// products (forward over reverse), which also give the value and the gradient. W is the
/// smallest power of two that holds the colours, at most 8 (or `.width(W)`).
///
/// ```
/// use jitdiff::{SparseHessianFn, args, ir::parse_module};
/// // f(x, y, z) = x^2 y + z^2: H = [[2y, 2x, 0], [2x, 0, 0], [0, 0, 2]].
/// let m = parse_module("func @f(x: f64, y: f64, z: f64) -> f64 {
/// entry:
///     a = fmul x, x
///     b = fmul a, y
///     c = fmul z, z
///     r = fadd b, c
///     ret r
/// }").unwrap();
/// let h = SparseHessianFn::builder(&m, "f").wrt_all().build().unwrap();
/// let mut gradient = [0.0; 3];
/// let mut hessian = jitdiff::sparse::CsrMatrix::default();
/// let value = h.hessian_with_gradient(&mut args![3.0, 5.0, 1.0], &mut gradient, &mut hessian).unwrap();
/// assert_eq!((value, gradient), (46.0, [30.0, 9.0, 2.0]));
/// assert_eq!(hessian.to_dense(), [10.0, 6.0, 0.0, 6.0, 0.0, 0.0, 0.0, 0.0, 2.0]);
/// assert_eq!(hessian.nnz(), 4); // (x,x), (x,y), (y,x), (z,z): y enters x^2 y linearly
/// ```
pub struct SparseHessianFn {
    user: UserFunction,
    rules: RuleSet,
    options: JitOptions,
    hvp: PerWidth<HvpFn>,
    width: usize,
    plan: PlanCache<HessianPlan>,
}

#[derive(Debug)]
struct HessianPlan {
    key: Key,
    pattern: Arc<Pattern>,
    info: SparsityInfo,
    /// Per sweep, the directions' ones: `lane * n + input`.
    seeds: Vec<Vec<u32>>,
    /// Per sweep, the reads: (nonzero, `lane * n + row` of the products).
    reads: Vec<Vec<(u32, u32)>>,
}

impl Keyed for HessianPlan {
    fn key(&self) -> &Key {
        &self.key
    }
}

impl sealed::Sealed for SparseHessianFn {}
impl HasWidth for SparseHessianFn {}
impl Build for SparseHessianFn {
    #[allow(private_interfaces)]
    fn build_from(spec: Spec) -> Result<SparseHessianFn, Error> {
        let width = spec.width.unwrap_or(8);
        let (user, rules, options) = (spec.user.clone(), spec.rules.clone(), spec.options.clone());
        // The widest sweep is compiled now (so that build() reports what cannot be derived);
        // a plan with fewer colours compiles its narrower width at its first call.
        let hvp = HvpFn::build_from(Spec { width: Some(width), ..spec })?;
        let width = width as usize;
        Ok(SparseHessianFn { user, rules, options, hvp: PerWidth::with(width, hvp), width, plan: PlanCache::default() })
    }
}

impl SparseHessianFn {
    /// Start building the sparse Hessian of `@name` (see [`Builder`]; `.width(W)` sets the
    /// products per sweep, 8 by default).
    pub fn builder<'m>(module: &'m Module, name: &str) -> Builder<'m, SparseHessianFn> {
        Builder::new(module, name)
    }

    /// The most products (colours) per sweep; a plan with fewer colours sweeps with the
    /// smallest power of two that holds them ([`SparsityInfo::lanes`]).
    pub fn width(&self) -> usize {
        self.width
    }

    /// Which parameters are differentiated.
    pub fn wrt(&self) -> &[bool] {
        &self.user.wrt
    }

    /// The pattern, colours and sweeps for calls like this one (detected and coloured now if
    /// no earlier call had the same shapes).
    pub fn info(&self, args: &[Arg<'_>]) -> Result<SparsityInfo, Error> {
        self.user.check_args(args)?;
        Ok(self.plan(args)?.info)
    }

    /// The Hessian at `args`.
    pub fn hessian(&self, args: &mut [Arg<'_>]) -> Result<CsrMatrix, Error> {
        let mut out = CsrMatrix::default();
        self.hessian_into(args, &mut out)?;
        Ok(out)
    }

    /// The Hessian into `out` (storage reused); returns the function's value.
    pub fn hessian_into(&self, args: &mut [Arg<'_>], out: &mut CsrMatrix) -> Result<f64, Error> {
        self.user.check_args(args)?;
        let n = self.user.inputs(args);
        with_scratch(|s| {
            s.zeroed_buffers(std::iter::once(n));
            let mut gradient = std::mem::take(&mut s.buffers[0]);
            let result = self.hessian_with_gradient(args, &mut gradient, out);
            s.buffers[0] = gradient;
            result
        })
    }

    /// The value, the gradient (`n` entries) and the Hessian (into `out`, storage reused) in
    /// one go: after the first call (on this thread, with these shapes) a call allocates
    /// nothing.
    pub fn hessian_with_gradient(
        &self,
        args: &mut [Arg<'_>],
        gradient: &mut [f64],
        out: &mut CsrMatrix,
    ) -> Result<f64, Error> {
        self.user.check_args(args)?;
        let n = self.user.inputs(args);
        if gradient.len() != n {
            return Err(self.user.length_error(Buffer::Gradient, n, gradient.len(), self.user.inputs_reason()));
        }
        let plan = self.plan(args)?;
        out.reshape(&plan.pattern);
        let w = plan.info.lanes;
        let hvp = self.compiled(w)?;
        with_scratch(|s| {
            s.zeroed_buffers([w * n, w * n].into_iter());
            let (directions, products) = s.buffers.split_at_mut(1);
            let (directions, products) = (&mut directions[0], &mut products[0]);
            let mut value = f64::NAN;
            for (sweep, (seeds, reads)) in plan.seeds.iter().zip(&plan.reads).enumerate() {
                if sweep > 0 {
                    for &k in &plan.seeds[sweep - 1] {
                        directions[k as usize] = 0.0;
                    }
                }
                for &k in seeds {
                    directions[k as usize] = 1.0;
                }
                value = hvp.hvp_with_gradient(args, directions, gradient, products)?;
                let values = out.values_mut();
                for &(nz, at) in reads {
                    values[nz as usize] = products[at as usize];
                }
            }
            Ok(value)
        })
    }

    /// The derivative compiled for `lanes` lanes (compiled now if no plan needed it before).
    fn compiled(&self, lanes: usize) -> Result<&HvpFn, Error> {
        self.hvp.get(lanes, || HvpFn::build_from(Spec::inner(&self.user, &self.rules, &self.options, lanes as u8)))
    }

    fn plan(&self, args: &[Arg<'_>]) -> Result<Arc<HessianPlan>, Error> {
        self.plan.get(&self.user, args, || {
            let (mut found, detect_time) = detect(&self.user, &self.rules, args, true)?;
            let start = std::time::Instant::now();
            let pattern = found.hessian.take().ok_or_else(|| self.user.internal("no Hessian pattern"))?;
            let n = pattern.rows;
            if pattern.nnz().max(self.width * n) >= u32::MAX as usize {
                return Err(Error::Setting(format!(
                    "@{}: a sparse Hessian of {} nonzeros in {n} rows is too large (at most 2^32 / W)",
                    self.user.name,
                    pattern.nnz()
                )));
            }
            let coloring = star_coloring(&pattern);
            let w = lanes_for(coloring.count, self.width);
            // Compiled with the plan, so that the first call's set-up is all in `info`.
            let compiling = std::time::Instant::now();
            self.compiled(w)?;
            let compile_time = compiling.elapsed();
            let sweeps = coloring.count.div_ceil(w).max(1);
            let mut seeds = vec![vec![]; sweeps];
            for (input, &c) in coloring.colors.iter().enumerate() {
                seeds[c / w].push(((c % w) * n + input) as u32);
            }
            let mut reads: Vec<Vec<(u32, u32)>> = vec![vec![]; sweeps];
            if sweeps == 1 {
                reads[0].reserve_exact(pattern.nnz());
            }
            star_recovery_each(&pattern, &coloring, |nz, row, c| {
                reads[c / w].push((nz as u32, ((c % w) * n + row) as u32));
            });
            let info = SparsityInfo {
                rows: n,
                cols: n,
                nnz: pattern.nnz(),
                colors: coloring.count,
                mode: crate::JacobianMode::Forward,
                lanes: w,
                sweeps,
                depends_on_data: found.depends_on_data,
                detect_time,
                color_time: start.elapsed() - compile_time,
                compile_time,
            };
            let key = Key::of(&self.user, args, &found);
            Ok(HessianPlan { key, pattern: Arc::new(pattern), info, seeds, reads })
        })
    }
}

impl std::fmt::Debug for SparseHessianFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SparseHessianFn")
            .field("function", &self.user.name)
            .field("wrt", &self.user.wrt)
            .field("width", &self.width)
            .finish_non_exhaustive()
    }
}
