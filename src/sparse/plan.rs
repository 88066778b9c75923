//! What a sparse handle computes once and reuses: the pattern, its coloring and the seeding
//! and recovery lists derived from them — valid for calls with the same shapes, the same
//! integer and boolean arguments and, when the pattern depended on them, the same values of the
//! `f64` arguments that are not differentiated. A call with anything else gets a new plan.

use crate::error::Error;
use crate::user::{Sizes, UserFunction};
use jitdiff_ad::sparsity::{ProbeArg, Sparsity, SparsityDetector, SparsityError};
use jitdiff_jit::Arg;
use jitdiff_rules::RuleSet;
use smallvec::SmallVec;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

/// What a sparse handle found for the arguments it was called with.
///
/// ```
/// use jitdiff::{SparseHessianFn, args, ir::parse_module};
/// // f(x) = sum x[i]^3: a diagonal Hessian, one colour.
/// let m = parse_module("func @f(x: slice) -> f64 {
/// entry:
///     n = len x
///     zero = iconst 0
///     one = iconst 1
///     z = fconst 0.0
///     jump head(zero, z)
/// head(i: i64, acc: f64):
///     more = icmp lt i, n
///     br more, body, done(acc)
/// body:
///     v = load x, i
///     three = iconst 3
///     c = powi v, three
///     acc2 = fadd acc, c
///     i2 = iadd i, one
///     jump head(i2, acc2)
/// done(r: f64):
///     ret r
/// }").unwrap();
/// let h = SparseHessianFn::builder(&m, "f").wrt(["x"]).build().unwrap();
/// let info = h.info(&args![&[1.0, 2.0, 3.0]]).unwrap();
/// assert_eq!((info.nnz, info.colors, info.sweeps), (3, 1, 1));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct SparsityInfo {
    /// Rows of the derivative (outputs for a Jacobian, inputs for a Hessian).
    pub rows: usize,
    /// Columns (inputs).
    pub cols: usize,
    /// Structural nonzeros.
    pub nnz: usize,
    /// Colours of the coloring.
    pub colors: usize,
    /// How a Jacobian is compressed: [`JacobianMode::Forward`](crate::JacobianMode::Forward) —
    /// columns of one colour share no row, forward sweeps —, or
    /// [`JacobianMode::Reverse`](crate::JacobianMode::Reverse) — rows of one colour share no
    /// column, one forward run and pullback sweeps. Hessians: always `Forward` (columns, by
    /// Hessian-vector products).
    pub mode: crate::JacobianMode,
    /// Lanes per sweep: the smallest power of two that holds every colour, at most the
    /// handle's width.
    pub lanes: usize,
    /// Sweeps per evaluation: `ceil(colors / lanes)` (at least one).
    pub sweeps: usize,
    /// The pattern depends on the values of non-differentiated `f64` arguments (they are part
    /// of what decides whether a call can reuse it).
    pub depends_on_data: bool,
    /// Time spent detecting the pattern.
    pub detect_time: Duration,
    /// Time spent coloring it and deriving the seeds and recovery lists.
    pub color_time: Duration,
    /// Time spent compiling the derivative at this plan's lane width (zero when the handle
    /// had it already: the widest is compiled by `build()`).
    pub compile_time: Duration,
}

/// What makes a plan valid for a call.
#[derive(Debug)]
pub(crate) struct Key {
    sizes: Sizes,
    /// The bits of every `i64` and `bool` argument.
    scalars: SmallVec<[u64; 8]>,
    /// The bits of every non-differentiated `f64` datum, when the pattern depends on them.
    data: Option<Vec<u64>>,
    /// Whether `data` holds the contents of non-differentiated `mslice` arguments too: only
    /// when the function read them before writing (an output buffer written by the first call
    /// must not make the second miss the plan).
    with_buffers: bool,
}

fn scalars<'a>(args: &'a [Arg<'_>]) -> impl Iterator<Item = u64> + 'a {
    args.iter().filter_map(|a| match a {
        Arg::I64(x) => Some(*x as u64),
        Arg::Bool(x) => Some(u64::from(*x)),
        _ => None,
    })
}

/// The non-differentiated `f64` data, in parameter order (`mslice` contents if `with_buffers`).
fn data<'a>(user: &'a UserFunction, args: &'a [Arg<'_>], with_buffers: bool) -> impl Iterator<Item = u64> + 'a {
    args.iter().zip(&user.wrt).filter(|(_, on)| !**on).flat_map(move |(a, _)| {
        let (single, slice): (Option<f64>, &[f64]) = match a {
            Arg::F64(x) => (Some(*x), &[]),
            Arg::Slice(s) => (None, s),
            Arg::SliceMut(s) if with_buffers => (None, s),
            _ => (None, &[]),
        };
        single.into_iter().chain(slice.iter().copied()).map(f64::to_bits)
    })
}

impl Key {
    pub fn of(user: &UserFunction, args: &[Arg<'_>], found: &Sparsity) -> Key {
        let with_buffers = found.depends_on_mutable_data;
        Key {
            sizes: user.scalar_sizes(args),
            scalars: scalars(args).collect(),
            data: found.depends_on_data.then(|| data(user, args, with_buffers).collect()),
            with_buffers,
        }
    }

    /// Does a call with `args` fit? (No allocation.)
    pub fn matches(&self, user: &UserFunction, args: &[Arg<'_>]) -> bool {
        self.sizes == user.scalar_sizes(args)
            && scalars(args).eq(self.scalars.iter().copied())
            && self.data.as_ref().is_none_or(|d| data(user, args, self.with_buffers).eq(d.iter().copied()))
    }
}

/// A plan and the key it is valid for.
pub(crate) trait Keyed {
    fn key(&self) -> &Key;
}

/// The latest plan of a handle, shared by the threads that call it.
#[derive(Debug)]
pub(crate) struct PlanCache<P> {
    slot: RwLock<Option<Arc<P>>>,
}

impl<P> Default for PlanCache<P> {
    fn default() -> Self {
        PlanCache { slot: RwLock::new(None) }
    }
}

impl<P: Keyed> PlanCache<P> {
    /// The plan for `args`: the cached one if it fits, else `build()`'s (then cached).
    pub fn get(
        &self,
        user: &UserFunction,
        args: &[Arg<'_>],
        build: impl FnOnce() -> Result<P, Error>,
    ) -> Result<Arc<P>, Error> {
        {
            let cached = self.slot.read().unwrap_or_else(|p| p.into_inner());
            if let Some(plan) = cached.as_ref()
                && plan.key().matches(user, args)
            {
                return Ok(plan.clone());
            }
        }
        let plan = Arc::new(build()?);
        *self.slot.write().unwrap_or_else(|p| p.into_inner()) = Some(plan.clone());
        Ok(plan)
    }
}

/// Detect the patterns of `user` at `args` (checked already), in the user's terms.
pub(crate) fn detect(
    user: &UserFunction,
    rules: &RuleSet,
    args: &[Arg<'_>],
    hessian: bool,
) -> Result<(Sparsity, Duration), Error> {
    let start = std::time::Instant::now();
    let probe: SmallVec<[ProbeArg<'_>; 8]> = args
        .iter()
        .map(|a| match a {
            Arg::F64(x) => ProbeArg::F64(*x),
            Arg::I64(x) => ProbeArg::I64(*x),
            Arg::Bool(x) => ProbeArg::Bool(*x),
            Arg::Slice(s) | Arg::Vector(s) => ProbeArg::Slice(s),
            Arg::SliceMut(s) => ProbeArg::Slice(s),
        })
        .collect();
    // Functions with custom rules are opaque: their derivatives are the rule's.
    let opaque = user.module.functions.iter().map(|f| f.name.as_str()).filter(|name| rules.lookup(name).is_some());
    let found = SparsityDetector::new(&user.module, &user.name, &user.wrt)
        .externs(&user.externs)
        .opaque(opaque)
        .jacobian(!hessian)
        .hessian(hessian)
        .run(&probe)
        .map_err(|e| sparsity_error(user, e))?;
    Ok((found, start.elapsed()))
}

fn sparsity_error(user: &UserFunction, e: SparsityError) -> Error {
    let function = user.name.clone();
    match e {
        SparsityError::Fault(fault) => {
            let position = user.position(&fault);
            Error::Fault { function, fault, position, in_derivative: false }
        }
        SparsityError::Unsupported { site, message } => {
            let at = match user.site_position(&site) {
                Some(p) => format!("line {}, column {}", p.line, p.col),
                None => format!("block {}, instruction {}", site.block, site.inst),
            };
            let of = if site.func == function {
                String::new()
            } else {
                format!(" of @{}", jitdiff_front::source_function_name(&site.func))
            };
            Error::Sparsity { function, message: format!("{message}, at {at}{of}") }
        }
        SparsityError::NoFloatResult(_) => Error::NoFloatResult { function, what: "Hessian" },
        other => Error::Sparsity { function, message: other.to_string() },
    }
}

/// The lanes a plan sweeps with: the smallest power of two that holds `colors`, at most `max`.
pub(crate) fn lanes_for(colors: usize, max: usize) -> usize {
    colors.max(1).next_power_of_two().min(max)
}

/// A handle's compiled derivative per lane width (1, 2, 4, 8, 16), each compiled the first time
/// a plan needs it.
pub(crate) struct PerWidth<H> {
    compiled: [OnceLock<H>; 5],
}

impl<H> PerWidth<H> {
    /// With `handle`, compiled for `width`, in place.
    pub fn with(width: usize, handle: H) -> PerWidth<H> {
        let compiled = [OnceLock::new(), OnceLock::new(), OnceLock::new(), OnceLock::new(), OnceLock::new()];
        let _ = compiled[width.trailing_zeros() as usize].set(handle);
        PerWidth { compiled }
    }

    /// The handle for `width`, compiled now by `build` if no call needed it before.
    pub fn get(&self, width: usize, build: impl FnOnce() -> Result<H, Error>) -> Result<&H, Error> {
        let slot = &self.compiled[width.trailing_zeros() as usize];
        if let Some(h) = slot.get() {
            return Ok(h);
        }
        let built = build()?;
        Ok(slot.get_or_init(|| built))
    }
}
