//! Second order: Hessian-vector products by forward mode over reverse mode. Derivatives are IR,
//! so the reverse-mode `f_value_and_grad` is itself differentiated in forward mode; the tangent
//! of its gradient output in direction `v` is `H v`. With tangent width W one sweep gives W
//! products, and a dense Hessian takes `ceil(n / W)` sweeps.

use crate::ad::{ForwardDerivative, derive_forward_with_rules, derive_reverse_with_rules};
use crate::builder::{Build, Builder, HasWidth, Spec, sealed};
use crate::error::{Buffer, Error};
use crate::gradient::with_rule_externs;
use crate::scratch::with_scratch;
use crate::user::UserFunction;
use jitdiff_ir::passes::{self, retain_reachable};
use jitdiff_ir::{Module, RuntimeValue, Type};
use jitdiff_jit::{Arg, CompiledFn, CompiledModule, compile};
use smallvec::SmallVec;
use std::sync::Arc;

/// A JIT-compiled Hessian-vector product of a scalar function, `W` directions per sweep.
///
/// Directions and products are flat like gradients (one entry per differentiated `f64`
/// parameter, `len` per differentiated slice, in parameter order), direction-major: direction
/// `k` is `directions[k * n .. (k + 1) * n]`. The products are of the Hessian of the first
/// `f64` result. Evaluation goes through `&self` (per-thread scratch memory).
///
/// ```
/// use jitdiff::{HvpFn, args, ir::parse_module};
/// // f(x, y) = x^2 y: H = [[2y, 2x], [2x, 0]]
/// let m = parse_module("func @f(x: f64, y: f64) -> f64 {\nentry:\n    a = fmul x, x\n    b = fmul a, y\n    ret b\n}").unwrap();
/// let h = HvpFn::builder(&m, "f").wrt(["x", "y"]).build().unwrap();
/// let mut hv = [0.0; 2];
/// let value = h.hvp(&mut args![3.0, 5.0], &[1.0, 0.0], &mut hv).unwrap();
/// assert_eq!((value, hv), (45.0, [10.0, 6.0]));
/// ```
#[derive(Clone)]
pub struct HvpFn {
    user: UserFunction,
    derived: Arc<ForwardDerivative>,
    _compiled: CompiledModule,
    native: CompiledFn,
    /// The results of `f_value_and_grad`: `f`'s results, then one cotangent per `f64` wrt.
    vg_returns: Vec<Type>,
    width: usize,
}

impl sealed::Sealed for HvpFn {}
impl HasWidth for HvpFn {}
impl Build for HvpFn {
    /// The rules' partials functions are differentiated in forward mode in turn, so an HVP
    /// through a ruled call needs the partials in IR (a native rule's extern has no derivative).
    #[allow(private_interfaces)]
    fn build_from(spec: Spec) -> Result<HvpFn, Error> {
        let Spec { user, rules, options, width, .. } = spec;
        let width = width.unwrap_or(1);
        user.require_float_result("Hessian")?;
        // Every `mslice` is differentiated as well (its final contents carry derivatives), as
        // for gradients; the ones outside `wrt` get zero directions.
        let wrt = user.derivation_wrt();
        let reverse = derive_reverse_with_rules(&user.module, &user.name, wrt, &rules)?;
        let vg = reverse.value_and_grad.as_deref().ok_or_else(|| user.internal("no value_and_grad derived"))?;
        // `f_value_and_grad(params..., d_slices...)`: differentiate every original parameter in
        // `wrt` and every d-slice (their tangents are the products).
        let slices = user.params.iter().zip(wrt).filter(|(t, on)| **on && t.is_slice()).count();
        let mut forward_wrt = wrt.to_vec();
        forward_wrt.extend(std::iter::repeat_n(true, slices));
        // Only what `f_value_and_grad` calls: the primal itself, no longer needed, would be
        // cleaned up and analysed for nothing (a third of the work for straight-line code).
        let source = retain_reachable(&reverse.module, &[vg]);
        let mut derived = derive_forward_with_rules(&source, vg, &forward_wrt, width, &rules)?;
        let vg_returns = reverse.module.func_by_name(vg).map(|f| f.returns.clone()).unwrap_or_default();
        let scalar_cotangents = user.params.iter().zip(wrt).filter(|(t, on)| **on && **t == Type::F64).count();
        drop_value_tangents(&mut derived, &vg_returns, vg_returns.len() - scalar_cotangents);
        let needed = retain_reachable(&derived.module, &[&derived.name]);
        let needed = crate::inlining::inline_user_calls(&needed, &derived.name);
        let compiled = compile(&needed, &with_rule_externs(&user.externs, &rules), &options)
            .map_err(|e| Error::compile(&user.name, e))?;
        let native = compiled.function(&derived.name).map_err(|e| Error::compile(&user.name, e))?;
        Ok(HvpFn { user, derived: Arc::new(derived), _compiled: compiled, native, vg_returns, width: width as usize })
    }
}

impl HvpFn {
    /// Start building the Hessian-vector product of `@name` (see [`Builder`]; `.width(W)` sets
    /// the directions per sweep).
    pub fn builder<'m>(module: &'m Module, name: &str) -> Builder<'m, HvpFn> {
        Builder::new(module, name)
    }

    /// Directions per sweep.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Which parameters are differentiated.
    pub fn wrt(&self) -> &[bool] {
        &self.user.wrt
    }

    /// The derived IR (forward mode of `f_value_and_grad`). The tangents of `f`'s own results
    /// (`∇f · v`, which no product needs) are returned as zeros, so that the work feeding only
    /// them is gone.
    pub fn derivative(&self) -> &ForwardDerivative {
        &self.derived
    }

    /// Length of the flat gradient for these arguments.
    pub fn gradient_len(&self, args: &[Arg<'_>]) -> usize {
        self.user.inputs(args)
    }

    /// `H v` for `width()` directions (`directions` and `products` hold `width() * n` entries,
    /// direction-major); returns the function's value.
    pub fn hvp(&self, args: &mut [Arg<'_>], directions: &[f64], products: &mut [f64]) -> Result<f64, Error> {
        self.user.check_args(args)?;
        let n = self.gradient_len(args);
        // The gradient goes to a buffer of this thread's scratch memory (no allocation).
        with_scratch(|s| {
            s.zeroed_buffers(std::iter::once(n));
            let mut gradient = std::mem::take(&mut s.buffers[0]);
            let result = self.hvp_with_gradient(args, directions, &mut gradient, products);
            s.buffers[0] = gradient;
            result
        })
    }

    /// [`HvpFn::hvp`], also writing the gradient (`n` entries).
    pub fn hvp_with_gradient(
        &self,
        args: &mut [Arg<'_>],
        directions: &[f64],
        gradient: &mut [f64],
        products: &mut [f64],
    ) -> Result<f64, Error> {
        self.user.check_args(args)?;
        let sizes = self.user.input_sizes(args);
        let lengths = self.user.scalar_sizes(args);
        let n: usize = sizes.iter().sum();
        let w = self.width;
        let reason = |per: &str| format!("{w} direction(s) of {n} entries{per}: {}", self.user.inputs_reason());
        for (buffer, got, expected, per) in [
            (Buffer::Directions, directions.len(), w * n, ""),
            (Buffer::Products, products.len(), w * n, ""),
            (Buffer::Gradient, gradient.len(), n, " (one)"),
        ] {
            if got != expected {
                let reason = if per.is_empty() { reason("") } else { self.user.inputs_reason() };
                return Err(self.user.length_error(buffer, expected, got, reason));
            }
        }
        let mut offsets: SmallVec<[usize; 8]> = SmallVec::new();
        let mut offset = 0;
        for &s in &sizes {
            offsets.push(offset);
            offset += s;
        }
        let params = &self.user.params;
        // The differentiated parameters of the derivation: `wrt` and every `mslice`.
        let derivation = self.user.derivation_wrt();
        let active: SmallVec<[usize; 8]> = (0..params.len()).filter(|&i| derivation[i]).collect();
        let slice_params: SmallVec<[usize; 8]> = active.iter().copied().filter(|&i| params[i].is_slice()).collect();
        let outcome = with_scratch(|s| {
            s.results_for(self.native.returns());
            // Buffers: the tangents of the differentiated parameters, lane-interleaved (element
            // `i` of a slice's tangent holds lanes `w * i .. w * i + w`), then the d-slices, then
            // their tangents (the products).
            let tangent_sizes = active.iter().map(|&i| w * lengths[i]);
            let d_sizes = slice_params.iter().map(|&i| lengths[i]);
            let dt_sizes = slice_params.iter().map(|&i| w * lengths[i]);
            s.zeroed_buffers(tangent_sizes.chain(d_sizes).chain(dt_sizes));
            let (tangents, rest) = s.buffers.split_at_mut(active.len());
            let (d_slices, d_tangents) = rest.split_at_mut(slice_params.len());
            for (&i, t) in active.iter().zip(tangents.iter_mut()) {
                for e in 0..sizes[i] {
                    for k in 0..w {
                        t[w * e + k] = directions[k * n + offsets[i] + e];
                    }
                }
            }
            let mut all: SmallVec<[Arg<'_>; 32]> = args.iter_mut().map(Arg::reborrow).collect();
            all.extend(d_slices.iter_mut().map(|d| Arg::SliceMut(d)));
            for (&i, t) in active.iter().zip(tangents.iter_mut()) {
                all.push(match (params[i], w) {
                    (Type::F64, 1) => Arg::F64(t[0]),
                    (Type::F64, _) => Arg::Vector(t),
                    (Type::SliceMut, _) => Arg::SliceMut(t),
                    _ => Arg::Slice(t),
                });
            }
            all.extend(d_tangents.iter_mut().map(|d| Arg::SliceMut(d)));
            let called = self.native.call_into_with_tape(&mut all, &mut s.results, &mut s.tape);
            drop(all);
            called?;
            // Slice parameters: gradient from the d-slices, products from their tangents.
            for ((&i, d), t) in slice_params.iter().zip(d_slices.iter()).zip(d_tangents.iter()) {
                let o = offsets[i];
                // (An `mslice` outside `wrt` has no entries: `sizes[i]` is 0.)
                gradient[o..o + sizes[i]].copy_from_slice(&d[..sizes[i]]);
                for e in 0..sizes[i] {
                    for k in 0..w {
                        products[k * n + o + e] = t[w * e + k];
                    }
                }
            }
            // `f64` parameters: the cotangent results of `f_value_and_grad` and their tangents.
            let results = &s.results;
            let returned = self.vg_returns.len();
            let f_results = returned - active.iter().filter(|&&i| params[i] == Type::F64).count();
            let float_return_index = |r: usize| self.vg_returns[..r].iter().filter(|t| **t == Type::F64).count();
            let scalar_params = active.iter().copied().filter(|&i| params[i] == Type::F64);
            for (slot, i) in scalar_params.enumerate() {
                let r = f_results + slot;
                gradient[offsets[i]] = results[r].as_f64().unwrap_or(f64::NAN);
                let lanes = lanes_of(&results[returned + float_return_index(r)]);
                for k in 0..w {
                    products[k * n + offsets[i]] = lanes.get(k).copied().unwrap_or(f64::NAN);
                }
            }
            let value = results[..f_results].iter().zip(&self.vg_returns).find(|(_, t)| **t == Type::F64);
            Ok(value.and_then(|(v, _)| v.as_f64()).unwrap_or(f64::NAN))
        });
        outcome.map_err(|e| self.user.call_error(args, e))
    }

    /// The dense Hessian (row-major, `n × n`) from `ceil(n / width)` sweeps with unit directions.
    pub fn hessian(&self, args: &mut [Arg<'_>]) -> Result<Vec<f64>, Error> {
        self.user.check_args(args)?;
        let n = self.gradient_len(args);
        let w = self.width;
        let mut hessian = self.user.dense_zeros("Hessian", n, n)?;
        let mut directions = vec![0.0; w * n];
        let mut products = vec![0.0; w * n];
        let mut gradient = vec![0.0; n];
        for start in (0..n).step_by(w) {
            directions.fill(0.0);
            let lanes = w.min(n - start);
            for k in 0..lanes {
                directions[k * n + start + k] = 1.0;
            }
            self.hvp_with_gradient(args, &directions, &mut gradient, &mut products)?;
            // Column `start + k` of H is product `k`; H is symmetric, store it as a row too.
            for k in 0..lanes {
                for row in 0..n {
                    hessian[row * n + start + k] = products[k * n + row];
                }
            }
        }
        Ok(hessian)
    }
}

/// Return zeros for the tangents of `f`'s own `f64` results from the derived function (those of
/// the first `f_results` results of `f_value_and_grad`, whose results are `vg_returns`; the
/// tangents follow the results, one per `f64` result), and remove what only they needed, in the
/// callees too. A product is the tangent of the gradient; the tangent of the value, `∇f · v`,
/// is never read, and the work feeding only it can be much: for a cost `Σ_i min_j ‖x_i − c_j‖²`
/// it is the tangent of every distance, where the gradient's tangents need only the nearest
/// centroid's.
fn drop_value_tangents(derived: &mut ForwardDerivative, vg_returns: &[Type], f_results: usize) {
    let Some(top) = derived.module.func_id(&derived.name) else { return };
    let function = &mut derived.module.functions[top.index()];
    let positions: Vec<usize> = (0..f_results.min(vg_returns.len()))
        .filter(|&r| vg_returns[r] == Type::F64)
        .map(|r| vg_returns.len() + vg_returns[..r].iter().filter(|t| **t == Type::F64).count())
        .collect();
    if positions.is_empty() {
        return;
    }
    passes::zero_results(function, &positions);
    passes::optimize_function(function);
    passes::zero_unused_results(&mut derived.module, &[top]);
}

fn lanes_of(v: &RuntimeValue) -> Vec<f64> {
    match v {
        RuntimeValue::F64(x) => vec![*x],
        RuntimeValue::Vector(lanes) => lanes.clone(),
        _ => vec![],
    }
}

impl std::fmt::Debug for HvpFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HvpFn").field("function", &self.user.name).field("wrt", &self.user.wrt).finish_non_exhaustive()
    }
}
