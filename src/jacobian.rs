//! Jacobians by whichever mode fits their shape. [`JacobianFn`] computes outputs × inputs
//! either by forward sweeps (W input columns per sweep) or by reverse sweeps (one forward run,
//! then W output rows per pullback sweep), choosing by the counts of the call at hand; it also
//! gives many vector-Jacobian products at once ([`JacobianFn::vjps`]).
//!
//! The W-lane pullback is forward mode over the pullback ([`derive_forward_over_pullback`]):
//! the pullback is linear in its cotangents, so its tangent in W seeded directions is W
//! pullbacks, computed in SIMD lanes.

use crate::ad::{derive_forward_over_pullback, derive_reverse_with_rules};
use crate::builder::{Build, Builder, HasWidth, Spec, sealed};
use crate::error::{Buffer, Error};
use crate::forward::{ForwardFn, Jacobian};
use crate::gradient::{stable_slices, with_rule_externs};
use crate::layout::Layout;
use crate::scratch::with_scratch;
use crate::user::UserFunction;
use jitdiff_ir::passes::retain_reachable;
use jitdiff_ir::{Module, RuntimeValue};
use jitdiff_jit::{Arg, CompiledFn, CompiledModule, JitOptions, compile};
use jitdiff_rules::RuleSet;
use smallvec::SmallVec;
use std::sync::{Arc, OnceLock};

/// How [`JacobianFn`] computes a Jacobian.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum JacobianMode {
    /// Forward or reverse, whichever needs fewer sweeps for the call's numbers of inputs and
    /// outputs (a reverse sweep counted as twice a forward one, plus the forward run).
    #[default]
    Auto,
    /// `ceil(inputs / W)` forward sweeps.
    Forward,
    /// One forward run and `ceil(outputs / W)` W-lane pullback sweeps.
    Reverse,
}

/// A JIT-compiled Jacobian of one function: outputs (`f64` results, then every `mslice`
/// element) × inputs (differentiated scalars), row-major. Each mode's code is compiled the first
/// time it is used.
///
/// ```
/// use jitdiff::{JacobianFn, JacobianMode, args, ir::parse_module};
/// // out[i] = x[0] * x[i] for the 3 elements.
/// let m = parse_module("func @f(x: slice, out: mslice) {
/// entry:
///     zero = iconst 0
///     three = iconst 3
///     one = iconst 1
///     a = load x, zero
///     jump head(zero)
/// head(i: i64):
///     more = icmp lt i, three
///     br more, body, done
/// body:
///     b = load x, i
///     p = fmul a, b
///     store out, i, p
///     next = iadd i, one
///     jump head(next)
/// done:
///     ret
/// }").unwrap();
/// let forward = JacobianFn::builder(&m, "f").wrt(["x"]).build().unwrap();
/// let reverse = JacobianFn::builder(&m, "f").wrt(["x"]).build().unwrap().with_mode(JacobianMode::Reverse);
/// let (x, mut out) = ([2.0, 3.0, 5.0], [0.0; 3]);
/// let j = forward.jacobian(&mut args![&x, &mut out]).unwrap();
/// assert_eq!(j.data, [4.0, 0.0, 0.0, 3.0, 2.0, 0.0, 5.0, 0.0, 2.0]);
/// assert_eq!(reverse.jacobian(&mut args![&x, &mut out]).unwrap(), j);
/// ```
pub struct JacobianFn {
    user: UserFunction,
    rules: RuleSet,
    options: JitOptions,
    width: u8,
    mode: JacobianMode,
    forward: OnceLock<ForwardFn>,
    reverse: OnceLock<Arc<ReverseLanes>>,
}

/// The forward run and the W-lane pullback.
struct ReverseLanes {
    _compiled: CompiledModule,
    forward: CompiledFn,
    lanes: CompiledFn,
    pullback_slices: Vec<usize>,
}

impl sealed::Sealed for JacobianFn {}
impl HasWidth for JacobianFn {}
impl Build for JacobianFn {
    #[allow(private_interfaces)]
    fn build_from(spec: Spec) -> Result<JacobianFn, Error> {
        let width = spec.width.unwrap_or(8);
        if !matches!(width, 1 | 2 | 4 | 8 | 16) {
            return Err(Error::Ad(crate::ad::AdError::BadWidth(width)));
        }
        Ok(JacobianFn {
            user: spec.user,
            rules: spec.rules,
            options: spec.options,
            width,
            mode: JacobianMode::Auto,
            forward: OnceLock::new(),
            reverse: OnceLock::new(),
        })
    }
}

impl JacobianFn {
    /// Start building the Jacobian of `@name` (see [`Builder`]; `.width(W)` sets the lanes,
    /// 8 by default).
    pub fn builder<'m>(module: &'m Module, name: &str) -> Builder<'m, JacobianFn> {
        Builder::new(module, name)
    }

    /// The same Jacobian computed in mode `mode`.
    pub fn with_mode(mut self, mode: JacobianMode) -> JacobianFn {
        self.mode = mode;
        self
    }

    /// The mode a call with these arguments uses.
    pub fn mode_for(&self, args: &[Arg<'_>]) -> JacobianMode {
        match self.mode {
            JacobianMode::Auto => {
                let w = self.width as usize;
                let (inputs, outputs) = (self.user.inputs(args), self.user.outputs(args));
                let forward_sweeps = inputs.div_ceil(w);
                let reverse_cost = 1 + 2 * outputs.div_ceil(w);
                if reverse_cost < forward_sweeps { JacobianMode::Reverse } else { JacobianMode::Forward }
            }
            mode => mode,
        }
    }

    /// The Jacobian at `args`. `mslice` arguments end as one call leaves them.
    pub fn jacobian(&self, args: &mut [Arg<'_>]) -> Result<Jacobian, Error> {
        self.user.check_args(args)?;
        match self.mode_for(args) {
            JacobianMode::Reverse => {
                let layout = Layout::of(&self.user, args);
                let (rows, cols) = (layout.outputs, layout.inputs);
                let mut seeds = self.user.dense_zeros("Jacobian", rows, rows)?;
                for r in 0..rows {
                    seeds[r * rows + r] = 1.0;
                }
                let mut data = self.user.dense_zeros("Jacobian", rows, cols)?;
                self.vjps(args, &seeds, &mut data)?;
                Ok(Jacobian { rows, cols, data })
            }
            _ => self.forward()?.jacobian(args),
        }
    }

    /// `k` vector-Jacobian products at once: `cotangents` holds `k` rows of one entry per output,
    /// `input_cotangents` receives `k` rows of one entry per input. One forward run, then
    /// `ceil(k / W)` W-lane pullback sweeps.
    pub fn vjps(&self, args: &mut [Arg<'_>], cotangents: &[f64], input_cotangents: &mut [f64]) -> Result<(), Error> {
        self.user.check_args(args)?;
        let layout = Layout::of(&self.user, args);
        let (m, n) = (layout.outputs, layout.inputs);
        let k = cotangents.len().checked_div(m).unwrap_or(0);
        if cotangents.len() != k * m || (m == 0 && !cotangents.is_empty()) {
            return Err(self.user.length_error(
                Buffer::Cotangents,
                k * m,
                cotangents.len(),
                format!("whole rows of {m}: {}", self.user.outputs_reason()),
            ));
        }
        if input_cotangents.len() != k * n {
            return Err(self.user.length_error(
                Buffer::InputCotangents,
                k * n,
                input_cotangents.len(),
                format!("{k} row(s) of {n}: {}", self.user.inputs_reason()),
            ));
        }
        let lanes = self.reverse()?;
        let w = self.width as usize;
        let outcome = with_scratch(|s| {
            s.results_for(lanes.forward.returns());
            lanes.forward.call_into_with_tape(args, &mut s.results, &mut s.tape)?;
            let stable = stable_slices(&lanes.pullback_slices, args);
            for first in (0..k).step_by(w) {
                let rows = w.min(k - first);
                s.tape.reset_cursor();
                sweep(
                    &lanes.lanes,
                    s,
                    &stable,
                    &layout,
                    w,
                    &cotangents[first * m..(first + rows) * m],
                    rows,
                    |r, i, v| {
                        input_cotangents[(first + r) * n + i] = v;
                    },
                )?;
            }
            Ok(())
        });
        outcome.map_err(|e| self.user.call_error(args, e))
    }

    fn forward(&self) -> Result<&ForwardFn, Error> {
        if let Some(f) = self.forward.get() {
            return Ok(f);
        }
        let built = ForwardFn::build_from(Spec::inner(&self.user, &self.rules, &self.options, self.width))?;
        Ok(self.forward.get_or_init(|| built))
    }

    fn reverse(&self) -> Result<Arc<ReverseLanes>, Error> {
        if let Some(r) = self.reverse.get() {
            return Ok(r.clone());
        }
        let user = &self.user;
        let reverse = derive_reverse_with_rules(&user.module, &user.name, user.derivation_wrt(), &self.rules)?;
        let pullback = reverse.module.func_by_name(&reverse.pullback).ok_or_else(|| user.internal("no pullback"))?;
        // The pullback's parameters: stable slices (constant here), then its differential slices
        // and cotangents, which are seeded.
        let stable = reverse.pullback_slices.len();
        let wrt: Vec<bool> = (0..pullback.params.len()).map(|p| p >= stable).collect();
        let derived = derive_forward_over_pullback(&reverse.module, &reverse.pullback, &wrt, self.width, &self.rules)?;
        let both = retain_reachable(&derived.module, &[&derived.name, &reverse.forward]);
        // Bounds checks: the tangents have W lanes per element of their differential slices,
        // which have one per element of their primal slices.
        let mut options = crate::forward::with_tangent_shadows(&derived, &self.options);
        for (pullback, differential, primal) in &reverse.differentials {
            if *pullback == reverse.pullback {
                options = options.shadow_slice(&derived.name, *differential, *primal, 1);
            }
        }
        let externs = with_rule_externs(&user.externs, &self.rules);
        let compiled = compile(&both, &externs, &options).map_err(|e| Error::compile(&user.name, e))?;
        let function = |name: &str| compiled.function(name).map_err(|e| Error::compile(&user.name, e));
        let lanes = ReverseLanes {
            forward: function(&reverse.forward)?,
            lanes: function(&derived.name)?,
            pullback_slices: reverse.pullback_slices.clone(),
            _compiled: compiled,
        };
        Ok(self.reverse.get_or_init(|| Arc::new(lanes)).clone())
    }
}

/// One W-lane pullback sweep for `rows` (≤ W) cotangent rows (`cotangents`: `rows × m`);
/// `emit(r, i, v)` receives input cotangent `i` of row `r`.
#[allow(clippy::too_many_arguments)]
fn sweep(
    lanes_fn: &CompiledFn,
    s: &mut crate::scratch::Scratch,
    stable: &[&[f64]],
    layout: &Layout,
    w: usize,
    cotangents: &[f64],
    rows: usize,
    mut emit: impl FnMut(usize, usize, f64),
) -> Result<(), jitdiff_jit::CallError> {
    let m = layout.outputs;
    let slices: SmallVec<[&crate::layout::Part; 8]> = layout.slices().collect();
    // Buffers: the primal differential slices (zero), then their W-lane tangents (the seeds of
    // the outputs, lane-interleaved), then the cotangent seeds of the f64 results.
    let sizes = slices.iter().map(|p| p.len).chain(slices.iter().map(|p| w * p.len));
    s.zeroed_buffers(sizes.chain((0..layout.float_results).map(|_| w)));
    s.results_for(lanes_fn.returns());
    let (primal, rest) = s.buffers.split_at_mut(slices.len());
    let (tangents, result_seeds) = rest.split_at_mut(slices.len());
    for (p, t) in slices.iter().zip(tangents.iter_mut()) {
        if let Some(o) = p.output {
            for r in 0..rows {
                for e in 0..p.len {
                    t[w * e + r] = cotangents[r * m + o + e];
                }
            }
        }
    }
    for (k, seed) in result_seeds.iter_mut().enumerate() {
        for r in 0..rows {
            seed[r] = cotangents[r * m + k];
        }
    }
    let mut all: SmallVec<[Arg<'_>; 32]> = stable.iter().map(|x| Arg::Slice(x)).collect();
    all.extend(primal.iter_mut().map(|d| Arg::SliceMut(d)));
    all.extend((0..layout.float_results).map(|_| Arg::F64(0.0)));
    all.extend(tangents.iter_mut().map(|t| Arg::SliceMut(t)));
    all.extend(result_seeds.iter().map(|seed| if w == 1 { Arg::F64(seed[0]) } else { Arg::Vector(seed) }));
    lanes_fn.call_into_with_tape(&mut all, &mut s.results, &mut s.tape)?;
    drop(all);
    for (p, t) in slices.iter().zip(tangents.iter()) {
        if let Some(i) = p.input {
            for r in 0..rows {
                for e in 0..p.len {
                    emit(r, i + e, t[w * e + r]);
                }
            }
        }
    }
    // The pullback returns one cotangent per f64 input, then their W-lane tangents.
    let scalars = layout.scalars().count();
    for (k, p) in layout.scalars().enumerate() {
        let lanes: &[f64] = match &s.results[scalars + k] {
            RuntimeValue::F64(x) => std::slice::from_ref(x),
            RuntimeValue::Vector(v) => v,
            _ => &[],
        };
        for r in 0..rows {
            emit(r, p.input.expect("f64 parts are inputs"), lanes.get(r).copied().unwrap_or(f64::NAN));
        }
    }
    Ok(())
}

impl std::fmt::Debug for JacobianFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JacobianFn")
            .field("function", &self.user.name)
            .field("wrt", &self.user.wrt)
            .finish_non_exhaustive()
    }
}
