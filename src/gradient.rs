//! Reverse mode, compiled: [`GradientFn`] gives `value_and_grad`, seeded vector-Jacobian
//! products for vector outputs, reverse-mode Jacobians, and a [`Pullback`] that owns its state.

use crate::ad::{CheckpointedLoop, ReverseDerivative, derive_reverse_checkpointed};
use crate::builder::{Build, Builder, Spec, sealed};
use crate::error::{Buffer, Error};
use crate::forward::{ForwardFn, Jacobian};
use crate::layout::Layout;
use crate::pullback::{Pullback, run_pullback};
use crate::scratch::with_scratch;
use crate::user::UserFunction;
use crate::vg_direct::DirectGradient;
use jitdiff_ir::passes::retain_reachable;
use jitdiff_ir::{ExternRegistry, Module, RuntimeValue, Type};
use jitdiff_jit::{Arg, CallError, CompiledFn, CompiledModule, FRAME_SLOTS, FrameResults, JitOptions, compile};
use jitdiff_rules::RuleSet;
use smallvec::SmallVec;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// A JIT-compiled reverse-mode derivative of one function.
///
/// Gradients are flat: one entry per differentiated `f64` parameter and `len` entries per
/// differentiated slice parameter, in parameter order (the *inputs*). The *outputs* are the
/// `f64` results, then the final contents of every `mslice` parameter; [`GradientFn::vjp`]
/// seeds a cotangent for each. Evaluation goes through `&self` with per-thread scratch memory,
/// so one handle serves many threads; after the first call on a thread `value_and_grad`
/// allocates nothing.
///
/// ```
/// use jitdiff::{GradientFn, args, ir::parse_module};
/// let m = parse_module(jitdiff_problems::rosenbrock::ROSENBROCK_IR).unwrap();
/// let f = GradientFn::builder(&m, "rosenbrock").wrt(["x"]).build().unwrap();
/// let x = [1.0, 1.0, 1.0];
/// let mut grad = [9.0; 3];
/// let value = f.value_and_grad(&mut args![&x], &mut grad).unwrap();
/// assert_eq!((value, grad), (0.0, [0.0; 3])); // the minimum
/// ```
pub struct GradientFn {
    pub(crate) user: UserFunction,
    derived: Arc<ReverseDerivative>,
    /// Reverse mode's native code: compiled by `build()`, except under [`GradientMode::Auto`]
    /// (no `mslice`), where forward lanes may compute every gradient (a few inputs): then it is
    /// compiled when first needed (a call with more inputs, a non-finite lane gradient, `vjp`,
    /// `pullback`, `jacobian`). Shared by clones.
    reverse: Arc<OnceLock<ReverseCode>>,
    pub(crate) last_tape_bytes: AtomicUsize,
    rules: RuleSet,
    options: JitOptions,
    pub(crate) mode: GradientMode,
    /// The loops reverse mode checkpointed.
    checkpoints: Arc<[CheckpointedLoop]>,
    /// The forward-lane derivatives of `value_and_grad`, compiled on first use, by log2 of the
    /// width (1, 2, 4, 8 lanes); `None` where forward mode could not derive the function.
    /// Shared by clones.
    lanes: Arc<[OnceLock<Option<ForwardLanes>>; 4]>,
}

/// How [`GradientFn::value_and_grad`] computes a gradient; set with
/// [`Builder::gradient_mode`](crate::Builder::gradient_mode).
///
/// Reverse mode costs one forward run that records the pullback state plus one pullback, for any
/// number of inputs. Forward mode with W tangent lanes costs one sweep per W inputs, each
/// somewhat more than a primal run, and records nothing. With a handful of inputs one sweep is
/// the cheaper: on the 1,000-step pendulum (3 inputs) one 4-lane sweep takes about 0.75 of the
/// reverse gradient's time, one 8-lane sweep (5 or 6 inputs) 0.9 to 1.05 (`docs/perf.md`). The
/// lanes' code is compiled with the calls of the derived function inlined. The two agree to
/// rounding (they sum the same partials in different orders), and at the singular points of
/// `docs/rules.md` both follow the same conventions. The other methods of [`GradientFn`]
/// (`vjp`, `pullback`, `jacobian`) are always reverse mode.
///
/// ```
/// use jitdiff::{GradientFn, GradientMode, args, ir::parse_module};
/// let m = parse_module("func @f(x: f64, y: f64) -> f64 {\nentry:\n    p = fmul x, y\n    s = sin p\n    ret s\n}").unwrap();
/// let auto = GradientFn::builder(&m, "f").wrt(["x", "y"]).build().unwrap();
/// let reverse = GradientFn::builder(&m, "f").wrt(["x", "y"]).gradient_mode(GradientMode::Reverse).build().unwrap();
/// assert_eq!(auto.mode_for(&args![2.0, 3.0]), GradientMode::Forward); // 2 inputs: one 2-lane sweep
/// let (mut g1, mut g2) = ([0.0; 2], [0.0; 2]);
/// let v1 = auto.value_and_grad(&mut args![2.0, 3.0], &mut g1).unwrap();
/// let v2 = reverse.value_and_grad(&mut args![2.0, 3.0], &mut g2).unwrap();
/// assert_eq!(v1, v2);
/// assert!((g1[0] - g2[0]).abs() <= 1e-15 && (g1[1] - g2[1]).abs() <= 1e-15);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum GradientMode {
    /// Forward lanes for a call with at most 4 inputs and no `mslice` parameter (one sweep of 1,
    /// 2 or 4 lanes), reverse mode otherwise, and for a function forward mode cannot derive.
    /// A gradient with a non-finite entry is computed again in reverse mode, so that it is
    /// reverse mode's also past an infinite value, where the modes may differ (a NaN partial
    /// times the zero tangent of another input is NaN in every lane; see `docs/rules.md`).
    #[default]
    Auto,
    /// Reverse mode: the fused forward run and pullback.
    Reverse,
    /// Forward lanes: `ceil(inputs / W)` sweeps of W = 8 lanes (W = 1, 2 or 4 for fewer
    /// inputs). A function forward mode cannot derive is an error at the first call. Past an
    /// infinite value a NaN can reach entries that reverse mode gives as finite.
    Forward,
}

/// Reverse mode's compiled functions: the fused `value_and_grad` (its own module, see
/// `fused.rs`), and the forward function and pullback that `vjp`, `pullback` and `jacobian`
/// call, compiled when one of them is first used (or at once, without a fused function).
pub(crate) struct ReverseCode {
    _compiled: Option<CompiledModule>,
    pub(crate) value_and_grad: Option<CompiledFn>,
    /// Where `value_and_grad`'s results are, when its calls fit an argument frame.
    framed: Option<FramedCall>,
    /// The direct call of `value_and_grad`, where the function's shape allows it.
    pub(crate) direct: Option<DirectGradient>,
    pair: OnceLock<PairCode>,
}

/// The forward function and the pullback, compiled together.
struct PairCode {
    _compiled: CompiledModule,
    forward: CompiledFn,
    pullback: CompiledFn,
}

/// The most inputs for which [`GradientMode::Auto`] takes forward lanes: one sweep of at most 4
/// lanes (8 lanes cost about as much as reverse mode on the pendulum, the benchmark with fewest
/// inputs: 0.88 of it with 5 inputs, 1.04 with 6).
pub(crate) const AUTO_FORWARD_INPUTS: usize = 4;

/// A forward-lane derivative for `value_and_grad`, and where its single-sweep frame call finds
/// the value and the tangent lanes.
struct ForwardLanes {
    f: ForwardFn,
    framed: Option<FramedLanes>,
}

/// The result slots of a single-sweep call through an argument frame.
#[derive(Debug)]
struct FramedLanes {
    value_slot: usize,
    tangent_slot: usize,
    /// The W × W identity: input `i`'s tangent is row `i` (lane `i` set), whatever the number
    /// of inputs, so a call seeds by slicing it instead of zeroing and filling a buffer.
    identity: Vec<f64>,
}

impl FramedLanes {
    /// `None` unless a call can go through a frame: no `mslice` (its tangent would need a buffer),
    /// the slots fit, and the derived function takes the user's parameters, then one tangent per
    /// differentiated parameter (an `f64`, an `f64xW` or a slice of W lanes per element).
    fn new(user: &UserFunction, f: &ForwardFn) -> Option<FramedLanes> {
        let native = &f.native;
        native.frame()?;
        if user.mslices().next().is_some() {
            return None;
        }
        let w = f.width();
        let tangents = user.params.iter().zip(&user.wrt).filter(|&(_, &on)| on).map(|(&t, _)| match t {
            Type::F64 if w == 1 => Type::F64,
            Type::F64 => Type::F64x(w as u8),
            other => other,
        });
        if !native.params().iter().copied().eq(user.params.iter().copied().chain(tangents)) {
            return None;
        }
        let value = user.returns.iter().position(|&t| t == Type::F64)?;
        let identity = (0..w * w).map(|k| if k % (w + 1) == 0 { 1.0 } else { 0.0 }).collect();
        Some(FramedLanes {
            value_slot: native.result_slot(value),
            tangent_slot: native.result_slot(user.returns.len()),
            identity,
        })
    }
}

impl Clone for GradientFn {
    fn clone(&self) -> GradientFn {
        GradientFn {
            user: self.user.clone(),
            derived: self.derived.clone(),
            reverse: self.reverse.clone(),
            last_tape_bytes: AtomicUsize::new(self.last_tape_bytes.load(Ordering::Relaxed)),
            rules: self.rules.clone(),
            options: self.options.clone(),
            mode: self.mode,
            checkpoints: self.checkpoints.clone(),
            lanes: self.lanes.clone(),
        }
    }
}

impl sealed::Sealed for GradientFn {}
impl Build for GradientFn {
    #[allow(private_interfaces)]
    fn build_from(spec: Spec) -> Result<GradientFn, Error> {
        let Spec { user, rules, options, gradient_mode, checkpoint, .. } = spec;
        let given_options = options.clone();
        // In Auto mode, with few inputs (known now: `f64` parameters, and slices read only at
        // constant indices, see `speculation.rs`), forward lanes will compute every gradient:
        // build them on another core while reverse mode is derived (the pendulum: its 0.7 ms of
        // derivation no longer adds to the first call).
        let inputs = crate::speculation::likely_inputs(&user).unwrap_or(0);
        let early_lanes = gradient_mode == GradientMode::Auto
            && user.mslices().next().is_none()
            && (1..=AUTO_FORWARD_INPUTS).contains(&inputs);
        let derive =
            || derive_reverse_checkpointed(&user.module, &user.name, user.derivation_wrt(), &rules, checkpoint);
        let (derived, lanes) = if early_lanes {
            let width = inputs.next_power_of_two();
            let (derived, lanes) = rayon::join(derive, || build_lanes(&user, &rules, &given_options, width, true));
            (derived, Some((width, lanes)))
        } else {
            (derive(), None)
        };
        let (derived, checkpoints) = derived?;
        // In Auto mode forward lanes may compute every gradient (a few inputs, `lane_width`):
        // reverse mode's code waits until a call needs it.
        let lazy =
            gradient_mode == GradientMode::Auto && user.mslices().next().is_none() && derived.value_and_grad.is_some();
        let handle = GradientFn {
            user,
            derived: Arc::new(derived),
            reverse: Arc::new(OnceLock::new()),
            last_tape_bytes: AtomicUsize::new(0),
            rules,
            options: given_options,
            mode: gradient_mode,
            checkpoints: checkpoints.into(),
            lanes: Arc::new(Default::default()),
        };
        if let Some((width, Ok(lanes))) = lanes {
            let _ = handle.lanes[width.trailing_zeros() as usize].set(lanes);
        }
        if !lazy {
            handle.reverse()?;
        }
        Ok(handle)
    }
}

impl GradientFn {
    /// Start building the reverse mode of `@name` (see [`Builder`]).
    pub fn builder<'m>(module: &'m Module, name: &str) -> Builder<'m, GradientFn> {
        Builder::new(module, name)
    }

    /// The derived IR (`f_fwd`, `f_pullback`, `f_value_and_grad` and what they call).
    pub fn derivative(&self) -> &ReverseDerivative {
        &self.derived
    }

    /// The loops reverse mode checkpointed (empty unless
    /// [`Builder::checkpoint`](crate::Builder::checkpoint) asked for it and a loop qualified).
    ///
    /// ```
    /// # use jitdiff::{GradientFn, ir::parse_module};
    /// let m = parse_module("func @f(x: f64) -> f64 {\nentry:\n    ret x\n}").unwrap();
    /// assert!(GradientFn::builder(&m, "f").wrt(["x"]).build().unwrap().checkpoints().is_empty());
    /// ```
    pub fn checkpoints(&self) -> &[CheckpointedLoop] {
        &self.checkpoints
    }

    /// Which parameters are differentiated.
    pub fn wrt(&self) -> &[bool] {
        &self.user.wrt
    }

    /// The function's name.
    pub fn name(&self) -> &str {
        &self.user.name
    }

    /// The custom rules the derivative was built with.
    pub fn rules(&self) -> &RuleSet {
        &self.rules
    }

    /// The user's module.
    pub fn module(&self) -> &Module {
        &self.user.module
    }

    /// The extern implementations given to the builder.
    pub fn externs(&self) -> &ExternRegistry {
        &self.user.externs
    }

    /// Number of inputs (differentiated scalars) for these arguments: the gradient's length.
    pub fn inputs(&self, args: &[Arg<'_>]) -> usize {
        self.user.inputs(args)
    }

    /// Number of outputs (`f64` results and `mslice` elements) for these arguments.
    pub fn outputs(&self, args: &[Arg<'_>]) -> usize {
        self.user.outputs(args)
    }

    /// Names of the inputs (`x[3]`, `y`), in the gradient's order.
    pub fn input_labels(&self, args: &[Arg<'_>]) -> Vec<String> {
        self.user.input_labels(args)
    }

    /// Bytes of tape (pullback state) the last call recorded.
    pub fn tape_bytes(&self) -> usize {
        self.last_tape_bytes.load(Ordering::Relaxed)
    }

    /// How `value_and_grad` computes gradients (see [`GradientMode`]).
    pub fn gradient_mode(&self) -> GradientMode {
        self.mode
    }

    /// The mode `value_and_grad` takes for these arguments: [`GradientMode::Reverse`] or
    /// [`GradientMode::Forward`]. (Under [`GradientMode::Auto`], a function that forward mode turns
    /// out not to derive at the first call is then computed in reverse mode.)
    pub fn mode_for(&self, args: &[Arg<'_>]) -> GradientMode {
        match self.lane_width(self.user.inputs(args)) {
            Some(w) if !matches!(self.lanes[w.trailing_zeros() as usize].get(), Some(None)) => GradientMode::Forward,
            _ => GradientMode::Reverse,
        }
    }

    /// The value of the first `f64` result and its gradient, written to `grad` (overwritten,
    /// not accumulated); `mslice` outputs get cotangent zero. One fused native call in reverse
    /// mode, or forward sweeps (see [`GradientMode`]).
    #[inline]
    pub fn value_and_grad(&self, args: &mut [Arg<'_>], grad: &mut [f64]) -> Result<f64, Error> {
        if self.mode != GradientMode::Forward
            && let Some(ReverseCode { value_and_grad: Some(native), direct: Some(direct), .. }) = self.reverse.get()
        {
            // Auto mode leaves few inputs to forward lanes (the general path).
            let forward_up_to = if self.mode == GradientMode::Auto { AUTO_FORWARD_INPUTS } else { 0 };
            if let Some(outcome) = direct.call(native, args, grad, forward_up_to) {
                self.last_tape_bytes.store(0, Ordering::Relaxed);
                return outcome.map_err(|e| self.user.call_error(args, e));
            }
        }
        self.value_and_grad_general(args, grad)
    }

    /// [`value_and_grad`](Self::value_and_grad) for every call the direct path does not take.
    fn value_and_grad_general(&self, args: &mut [Arg<'_>], grad: &mut [f64]) -> Result<f64, Error> {
        let mut lens = [0; FRAME_SLOTS];
        let scanned = scan(&self.user, args, &mut lens);
        if self.mode != GradientMode::Reverse && self.derived.value_and_grad.is_some() {
            let inputs = match scanned {
                Some(inputs) => inputs,
                None => {
                    self.user.check_args(args)?;
                    self.user.inputs(args)
                }
            };
            if let Some(lanes) = self.lanes_for(inputs)? {
                if grad.len() != inputs {
                    return Err(self.user.length_error(
                        Buffer::Gradient,
                        inputs,
                        grad.len(),
                        self.user.inputs_reason(),
                    ));
                }
                let value = if let (Some(framed), Some(_)) = (&lanes.framed, scanned)
                    && inputs <= lanes.f.width()
                {
                    self.value_and_grad_lanes(&lanes.f, framed, args, &lens, grad)?
                } else {
                    self.value_and_grad_sweeps(&lanes.f, args, grad, inputs)?
                };
                // Past an infinite value the modes may differ: a NaN partial times the zero
                // tangent of another input is NaN in every lane. Auto mode then gives reverse
                // mode's gradient (it has no mslice, so running again changes nothing).
                if self.mode == GradientMode::Forward || grad.iter().all(|g| g.is_finite()) {
                    return Ok(value);
                }
            }
        }
        let reverse = self.reverse()?;
        if let (Some(native), Some(framed), Some(inputs)) = (&reverse.value_and_grad, &reverse.framed, scanned) {
            if grad.len() != inputs {
                return Err(self.user.length_error(Buffer::Gradient, inputs, grad.len(), self.user.inputs_reason()));
            }
            return self.value_and_grad_framed(native, framed, args, &lens, grad);
        }
        self.user.check_args(args)?;
        let Some(native) = &reverse.value_and_grad else {
            return Err(Error::NoFloatResult { function: self.user.name.clone(), what: "gradient" });
        };
        let layout = Layout::of(&self.user, args);
        if grad.len() != layout.inputs {
            return Err(self.user.length_error(Buffer::Gradient, layout.inputs, grad.len(), self.user.inputs_reason()));
        }
        grad.fill(0.0);
        let returned = self.user.returns.len();
        let outcome = with_scratch(|s| {
            s.results_for(native.returns());
            s.zeroed_buffers(layout.slices().filter(|p| p.input.is_none()).map(|p| p.len));
            let mut all: SmallVec<[Arg<'_>; 32]> = SmallVec::new();
            all.extend(args.iter_mut().map(Arg::reborrow));
            let (mut rest, mut consumed): (&mut [f64], usize) = (&mut *grad, 0);
            let mut scratch = s.buffers.iter_mut();
            for p in layout.slices() {
                match p.input {
                    Some(start) => {
                        let tail = std::mem::take(&mut rest);
                        let (part, tail) = tail[start - consumed..].split_at_mut(p.len);
                        all.push(Arg::SliceMut(part));
                        (rest, consumed) = (tail, start + p.len);
                    }
                    None => all.push(Arg::SliceMut(scratch.next().expect("one buffer per output slice"))),
                }
            }
            let called = native.call_into_with_tape(&mut all, &mut s.results, &mut s.tape);
            self.last_tape_bytes.store(s.tape.len() * 8, Ordering::Relaxed);
            drop(all);
            called?;
            for (k, p) in layout.scalars().enumerate() {
                grad[p.input.expect("f64 parts are inputs")] = s.results[returned + k].as_f64().unwrap_or(f64::NAN);
            }
            Ok(first_float(&s.results[..returned]))
        });
        outcome.map_err(|e| self.user.call_error(args, e))
    }

    /// The lanes of a forward sweep for a call with `inputs` inputs, when forward lanes are to
    /// compute it.
    fn lane_width(&self, inputs: usize) -> Option<usize> {
        match self.mode {
            GradientMode::Reverse => None,
            GradientMode::Auto => (inputs > 0 && inputs <= AUTO_FORWARD_INPUTS && self.user.mslices().next().is_none())
                .then(|| inputs.next_power_of_two()),
            GradientMode::Forward => Some(inputs.clamp(1, 8).next_power_of_two()),
        }
    }

    /// The forward lanes for a call with `inputs` inputs, compiled on first use; `None` for
    /// reverse mode.
    fn lanes_for(&self, inputs: usize) -> Result<Option<&ForwardLanes>, Error> {
        let Some(w) = self.lane_width(inputs) else { return Ok(None) };
        let slot = &self.lanes[w.trailing_zeros() as usize];
        if let Some(lanes) = slot.get() {
            return Ok(lanes.as_ref());
        }
        let built = build_lanes(&self.user, &self.rules, &self.options, w, self.mode == GradientMode::Auto)?;
        Ok(slot.get_or_init(|| built).as_ref())
    }

    /// One forward sweep through an argument frame, the inputs seeded with the identity:
    /// `inputs <= W`, `args` checked, `grad` of the right length, `lens` each parameter's
    /// scalar count.
    fn value_and_grad_lanes(
        &self,
        f: &ForwardFn,
        framed: &FramedLanes,
        args: &mut [Arg<'_>],
        lens: &[usize; FRAME_SLOTS],
        grad: &mut [f64],
    ) -> Result<f64, Error> {
        let w = f.width();
        // Input i is lane i: its tangent is row i of the identity.
        let seed = &framed.identity;
        let native = &f.native;
        let mut results = FrameResults::new();
        let outcome = (|| -> Result<(), Box<CallError>> {
            let internal = || CallError::ArgCount { function: native.name().into(), expected: 0, got: 0 };
            let mut frame = native.frame().ok_or_else(|| Box::new(internal()))?;
            for a in args.iter_mut() {
                frame.push(a.reborrow())?;
            }
            let mut at = 0;
            for (p, &on) in self.user.wrt.iter().enumerate() {
                if on {
                    let tangent = &seed[at * w..(at + lens[p]) * w];
                    frame.push(match self.user.params[p] {
                        Type::F64 if w == 1 => Arg::F64(tangent[0]),
                        Type::F64 => Arg::Vector(tangent),
                        _ => Arg::Slice(tangent),
                    })?;
                    at += lens[p];
                }
            }
            self.last_tape_bytes.store(0, Ordering::Relaxed);
            if !frame.needs_tape() {
                // No scratch to take: the call is all there is.
                return frame.call_scratch(&mut results).map_err(Box::new);
            }
            with_scratch(|s| frame.call(&mut s.tape, &mut results).map_err(Box::new))
        })();
        outcome.map_err(|e| self.user.call_error(args, *e))?;
        for (i, g) in grad.iter_mut().enumerate() {
            *g = results.f64(framed.tangent_slot + i);
        }
        Ok(results.f64(framed.value_slot))
    }

    /// Forward sweeps of W lanes over the inputs, `mslice` contents restored before each sweep
    /// after the first (so they end as one call leaves them): `grad` of the right length.
    fn value_and_grad_sweeps(
        &self,
        f: &ForwardFn,
        args: &mut [Arg<'_>],
        grad: &mut [f64],
        inputs: usize,
    ) -> Result<f64, Error> {
        let w = f.width();
        let sizes = self.user.input_sizes(args);
        let scalar_sizes = self.user.scalar_sizes(args);
        let differentiated: SmallVec<[usize; 8]> = (0..sizes.len()).filter(|&p| self.user.wrt[p]).collect();
        let mslices: SmallVec<[usize; 4]> = self.user.mslices().collect();
        let sweeps = inputs.div_ceil(w).max(1);
        self.last_tape_bytes.store(0, Ordering::Relaxed);
        with_scratch(|s| {
            let saved = if sweeps > 1 { mslices.len() } else { 0 };
            s.zeroed_buffers(
                differentiated.iter().map(|&p| sizes[p] * w).chain(mslices[..saved].iter().map(|&p| scalar_sizes[p])),
            );
            let (seeds, initial) = s.buffers.split_at_mut(differentiated.len());
            for (copy, &p) in initial.iter_mut().zip(&mslices) {
                copy.copy_from_slice(args[p].as_slice().unwrap_or(&[]));
            }
            let mut out = s.jvp_output.take().unwrap_or_else(|| f.output());
            let result = (|| {
                let mut value = f64::NAN;
                for sweep in 0..sweeps {
                    let start = sweep * w;
                    if start > 0 {
                        for (copy, &p) in initial.iter().zip(&mslices) {
                            if let Arg::SliceMut(v) = &mut args[p] {
                                v.copy_from_slice(copy);
                            }
                        }
                    }
                    // Lane `l` of this sweep seeds input `start + l`.
                    seeds.iter_mut().for_each(|seed| seed.fill(0.0));
                    let lanes = w.min(inputs - start);
                    for lane in 0..lanes {
                        let (mut k, mut col) = (0, start + lane);
                        while col >= sizes[differentiated[k]] {
                            col -= sizes[differentiated[k]];
                            k += 1;
                        }
                        seeds[k][col * w + lane] = 1.0;
                    }
                    let views: SmallVec<[&[f64]; 8]> = seeds.iter().map(Vec::as_slice).collect();
                    f.jvp_into(args, &views, &mut out)?;
                    grad[start..start + lanes].copy_from_slice(&out.tangent(0)[..lanes]);
                    value = first_float(out.values());
                }
                Ok(value)
            })();
            s.jvp_output = Some(out);
            result
        })
    }

    /// [`GradientFn::value_and_grad`] through an argument frame: `args` checked and `grad` of
    /// the right length; `lens` holds each parameter's scalar count.
    fn value_and_grad_framed(
        &self,
        native: &CompiledFn,
        framed: &FramedCall,
        args: &mut [Arg<'_>],
        lens: &[usize; FRAME_SLOTS],
        grad: &mut [f64],
    ) -> Result<f64, Error> {
        grad.fill(0.0);
        let derivation = self.user.derivation_wrt();
        let mut results = FrameResults::new();
        // Errors travel boxed: a large error type moved through the closure's result costs
        // the successful calls too.
        let outcome = (|| -> Result<(), Box<CallError>> {
            let internal = || CallError::ArgCount { function: native.name().into(), expected: 0, got: 0 };
            let mut frame = native.frame().ok_or_else(|| Box::new(internal()))?;
            for a in args.iter_mut() {
                frame.push(a.reborrow())?;
            }
            // The differential slices are the gradient's pieces, in parameter order; an `f64`
            // parameter's piece is its one entry, written from its cotangent result below.
            let mut rest: &mut [f64] = &mut *grad;
            for (p, &on) in derivation.iter().enumerate() {
                if on {
                    let (piece, tail) = std::mem::take(&mut rest).split_at_mut(lens[p]);
                    if self.user.params[p].is_slice() {
                        frame.push(Arg::SliceMut(piece))?;
                    }
                    rest = tail;
                }
            }
            if !frame.needs_tape() {
                // No scratch to take: the call is all there is.
                self.last_tape_bytes.store(0, Ordering::Relaxed);
                return frame.call_scratch(&mut results).map_err(Box::new);
            }
            with_scratch(|s| {
                let called = frame.call(&mut s.tape, &mut results);
                self.last_tape_bytes.store(s.tape.len() * 8, Ordering::Relaxed);
                called.map_err(Box::new)
            })
        })();
        outcome.map_err(|e| self.user.call_error(args, *e))?;
        Ok(self.framed_results(framed, lens, &results, grad))
    }

    /// The value of a framed `value_and_grad` call, and the cotangents of its `f64` inputs
    /// written to their places in `grad`.
    #[inline]
    fn framed_results(
        &self,
        framed: &FramedCall,
        lens: &[usize; FRAME_SLOTS],
        results: &FrameResults,
        grad: &mut [f64],
    ) -> f64 {
        let (mut at, mut scalars) = (0, framed.cotangent_slots.iter());
        for (p, &on) in self.user.derivation_wrt().iter().enumerate() {
            if on {
                if !self.user.params[p].is_slice() {
                    grad[at] = results.f64(*scalars.next().expect("one cotangent per f64 input"));
                }
                at += lens[p];
            }
        }
        results.f64(framed.value_slot)
    }

    /// A vector-Jacobian product: runs the function (its results are returned and its `mslice`
    /// arguments left as one call leaves them) and writes to `input_cotangents` (one per input)
    /// the cotangent of the inputs for `cotangents` (one per output: each `f64` result, then each
    /// element of each `mslice`).
    ///
    /// ```
    /// use jitdiff::{GradientFn, args, ir::parse_module};
    /// // out[i] = x[i]^2 for i < 2, and returns x[0] + x[1].
    /// let m = parse_module("func @f(x: slice, out: mslice) -> f64 {
    /// entry:
    ///     i = iconst 0
    ///     j = iconst 1
    ///     a = load x, i
    ///     b = load x, j
    ///     a2 = fmul a, a
    ///     b2 = fmul b, b
    ///     store out, i, a2
    ///     store out, j, b2
    ///     s = fadd a, b
    ///     ret s
    /// }").unwrap();
    /// let f = GradientFn::builder(&m, "f").wrt(["x"]).build().unwrap();
    /// let (x, mut out, mut dx) = ([3.0, 4.0], [0.0; 2], [0.0; 2]);
    /// // Cotangents: 1 for the result, 10 and 100 for out[0], out[1].
    /// f.vjp(&mut args![&x, &mut out], &[1.0, 10.0, 100.0], &mut dx).unwrap();
    /// assert_eq!(out, [9.0, 16.0]);
    /// assert_eq!(dx, [1.0 + 10.0 * 6.0, 1.0 + 100.0 * 8.0]);
    /// ```
    pub fn vjp(
        &self,
        args: &mut [Arg<'_>],
        cotangents: &[f64],
        input_cotangents: &mut [f64],
    ) -> Result<Vec<RuntimeValue>, Error> {
        self.user.check_args(args)?;
        let layout = Layout::of(&self.user, args);
        self.check_vjp_lengths(&layout, cotangents.len(), input_cotangents.len())?;
        let reverse = self.pair()?;
        let outcome = with_scratch(|s| {
            s.results_for(reverse.forward.returns());
            reverse.forward.call_into_with_tape(args, &mut s.results, &mut s.tape)?;
            self.last_tape_bytes.store(s.tape.len() * 8, Ordering::Relaxed);
            let values = s.results.clone();
            let stable = stable_slices(&self.derived.pullback_slices, args);
            s.tape.reset_cursor();
            run_pullback(&reverse.pullback, s, &stable, &layout, cotangents, input_cotangents)?;
            Ok(values)
        });
        outcome.map_err(|e| self.user.call_error(args, e))
    }

    /// Run the function and keep its pullback state: the results, and a [`Pullback`] that maps
    /// output cotangents to input cotangents as often as wanted (it owns copies of the read-only
    /// slices the pullback reads again).
    pub fn pullback(&self, args: &mut [Arg<'_>]) -> Result<(Vec<RuntimeValue>, Pullback), Error> {
        self.user.check_args(args)?;
        let layout = Layout::of(&self.user, args);
        let reverse = self.pair()?;
        let mut tape = jitdiff_ir::Tape::new();
        let mut values: Vec<RuntimeValue> =
            reverse.forward.returns().iter().map(|&t| crate::scratch::zero_of(t)).collect();
        reverse.forward.call_into_with_tape(args, &mut values, &mut tape).map_err(|e| self.user.call_error(args, e))?;
        self.last_tape_bytes.store(tape.len() * 8, Ordering::Relaxed);
        let slices = stable_slices(&self.derived.pullback_slices, args).iter().map(|s| s.to_vec()).collect();
        Ok((values, Pullback::new(reverse.pullback.clone(), self.user.clone(), tape, slices, layout)))
    }

    /// The Jacobian of the outputs with respect to the inputs by reverse mode: one forward run,
    /// then one pullback per output (row). `mslice` arguments end as one call leaves them.
    pub fn jacobian(&self, args: &mut [Arg<'_>]) -> Result<Jacobian, Error> {
        self.user.check_args(args)?;
        let layout = Layout::of(&self.user, args);
        let (rows, cols) = (layout.outputs, layout.inputs);
        let mut data = self.user.dense_zeros("Jacobian", rows, cols)?;
        let reverse = self.pair()?;
        let outcome = with_scratch(|s| {
            s.results_for(reverse.forward.returns());
            reverse.forward.call_into_with_tape(args, &mut s.results, &mut s.tape)?;
            let stable = stable_slices(&self.derived.pullback_slices, args);
            let mut seed = vec![0.0; rows];
            for (r, row) in data.chunks_mut(cols.max(1)).enumerate().take(rows) {
                seed[r] = 1.0;
                s.tape.reset_cursor();
                run_pullback(&reverse.pullback, s, &stable, &layout, &seed, &mut row[..cols])?;
                seed[r] = 0.0;
            }
            Ok(())
        });
        outcome.map_err(|e| self.user.call_error(args, e))?;
        Ok(Jacobian { rows, cols, data })
    }

    /// Compile reverse mode's code now rather than at the first call that needs it (in
    /// [`GradientMode::Auto`] `build()` only derives it, as forward lanes may compute every
    /// gradient): for a first call without that latency, or to time all of a build. Forward
    /// lanes are compiled by the first call with their number of inputs.
    ///
    /// ```
    /// # use jitdiff::{GradientFn, args, ir::parse_module};
    /// let m = parse_module("func @f(x: f64) -> f64 {\nentry:\n    y = fmul x, x\n    ret y\n}").unwrap();
    /// let f = GradientFn::builder(&m, "f").wrt(["x"]).build().unwrap();
    /// f.prepare().unwrap();
    /// let mut g = [0.0];
    /// assert_eq!(f.value_and_grad(&mut args![3.0], &mut g).unwrap(), 9.0);
    /// assert_eq!(g, [6.0]);
    /// ```
    pub fn prepare(&self) -> Result<(), Error> {
        self.reverse().map(|_| ())
    }

    /// Reverse mode's native code, compiled now if it was not yet (see the `reverse` field).
    pub(crate) fn reverse(&self) -> Result<&ReverseCode, Error> {
        if let Some(code) = self.reverse.get() {
            return Ok(code);
        }
        let (user, derived) = (&self.user, &self.derived);
        let code = match &derived.value_and_grad {
            Some(name) => {
                // The fusing passes run on the user's derived IR: a panic there is a bug of
                // jitdiff, reported as an error naming the user's function.
                let (module, shadows) =
                    jitdiff_ir::contain_panics(|| crate::fused::value_and_grad_module(derived, name)).map_err(
                        |message| Error::Internal {
                            function: user.name.clone(),
                            message: format!("building the fused value_and_grad panicked: {message}"),
                        },
                    )?;
                let compiled = self.compile_reverse(&module, &shadows)?;
                let native = compiled.function(name).map_err(|e| Error::compile(&user.name, e))?;
                let framed = FramedCall::new(user, &native);
                let direct = DirectGradient::new(user, &native);
                ReverseCode {
                    _compiled: Some(compiled),
                    value_and_grad: Some(native),
                    framed,
                    direct,
                    pair: OnceLock::new(),
                }
            }
            None => {
                let pair = OnceLock::new();
                let _ = pair.set(self.compile_pair()?);
                ReverseCode { _compiled: None, value_and_grad: None, framed: None, direct: None, pair }
            }
        };
        Ok(self.reverse.get_or_init(|| code))
    }

    /// The forward function and the pullback, compiled at their first use.
    fn pair(&self) -> Result<&PairCode, Error> {
        let reverse = self.reverse()?;
        if let Some(pair) = reverse.pair.get() {
            return Ok(pair);
        }
        let pair = self.compile_pair()?;
        Ok(reverse.pair.get_or_init(|| pair))
    }

    fn compile_pair(&self) -> Result<PairCode, Error> {
        let (user, derived) = (&self.user, &self.derived);
        // Only what the handles call: the original functions are mostly not needed any more.
        let needed = retain_reachable(&derived.module, &[derived.forward.as_str(), derived.pullback.as_str()]);
        let compiled = self.compile_reverse(&needed, &[])?;
        let function = |name: &str| compiled.function(name).map_err(|e| Error::compile(&user.name, e));
        let (forward, pullback) = (function(&derived.forward)?, function(&derived.pullback)?);
        Ok(PairCode { _compiled: compiled, forward, pullback })
    }

    /// Compile derived code, declaring the differential slices of every pullback in it (and
    /// `extra` ones) as shadows of their primal slices.
    fn compile_reverse(&self, module: &Module, extra: &[(String, usize, usize)]) -> Result<CompiledModule, Error> {
        let mut options = self.options.clone();
        for (function, differential, primal) in self.derived.differentials.iter().chain(extra) {
            if module.func_by_name(function).is_some() {
                options = options.shadow_slice(function, *differential, *primal, 1);
            }
        }
        let externs = with_rule_externs(&self.user.externs, &self.rules);
        compile(module, &externs, &options).map_err(|e| Error::compile(&self.user.name, e))
    }

    fn check_vjp_lengths(&self, layout: &Layout, cotangents: usize, input_cotangents: usize) -> Result<(), Error> {
        if cotangents != layout.outputs {
            return Err(self.user.length_error(
                Buffer::Cotangents,
                layout.outputs,
                cotangents,
                self.user.outputs_reason(),
            ));
        }
        if input_cotangents != layout.inputs {
            return Err(self.user.length_error(
                Buffer::InputCotangents,
                layout.inputs,
                input_cotangents,
                self.user.inputs_reason(),
            ));
        }
        Ok(())
    }
}

/// How a `value_and_grad` call goes through an [`ArgFrame`](jitdiff_jit::ArgFrame): the user's
/// arguments, then the gradient's pieces of the differentiated slices as their differentials;
/// the value and the cotangents of the `f64` inputs come back in result slots.
#[derive(Debug)]
struct FramedCall {
    /// The result slot of the value (the first `f64` result).
    value_slot: usize,
    /// The result slots of the cotangents of the differentiated `f64` parameters, in order.
    cotangent_slots: Vec<usize>,
}

impl FramedCall {
    /// `None` unless every call can go through a frame: the slots fit, and every parameter that
    /// carries a derivative is an input (an `mslice` that is not differentiated needs a zeroed
    /// buffer of its own for its differential).
    fn new(user: &UserFunction, native: &CompiledFn) -> Option<FramedCall> {
        native.frame()?;
        if user.derivation_wrt() != user.wrt.as_slice() || user.params.len() > FRAME_SLOTS {
            return None;
        }
        let value = user.returns.iter().position(|&t| t == Type::F64)?;
        let returned = user.returns.len();
        let scalars = user.params.iter().zip(&user.wrt).filter(|&(&t, &on)| on && t == Type::F64).count();
        Some(FramedCall {
            value_slot: native.result_slot(value),
            cotangent_slots: (0..scalars).map(|k| native.result_slot(returned + k)).collect(),
        })
    }
}

/// Check `args` against `user`'s signature, write each one's scalar count to `lens` and return
/// the number of inputs; `None` when they do not fit (the general path reports why) or there are
/// more parameters than a frame has slots.
#[inline]
/// The forward lanes of width `w` for `user`'s `value_and_grad`; `None` where forward mode
/// cannot derive it and `fall_back` (Auto mode, which then uses reverse mode for good).
fn build_lanes(
    user: &UserFunction,
    rules: &RuleSet,
    options: &JitOptions,
    w: usize,
    fall_back: bool,
) -> Result<Option<ForwardLanes>, Error> {
    // `ForwardFn` inlines the derived calls (`inlining.rs`): a call costs a sweep more than a
    // small body (the pendulum's 4-lane sweep took 0.77 of the time with its acceleration
    // inlined).
    let spec = Spec::inner(user, rules, options, w as u8);
    match ForwardFn::build_from(spec) {
        Ok(f) => Ok(Some(ForwardLanes { framed: FramedLanes::new(user, &f), f })),
        Err(_) if fall_back => Ok(None),
        Err(e) => Err(e),
    }
}

fn scan(user: &UserFunction, args: &[Arg<'_>], lens: &mut [usize; FRAME_SLOTS]) -> Option<usize> {
    if args.len() != user.params.len() || args.len() > FRAME_SLOTS {
        return None;
    }
    let mut inputs = 0;
    for (p, (a, &ty)) in args.iter().zip(&user.params).enumerate() {
        let len = match a {
            Arg::Slice(v) => v.len(),
            Arg::SliceMut(v) => v.len(),
            _ => 1,
        };
        if !a.fits(ty) {
            return None;
        }
        lens[p] = len;
        if user.wrt[p] {
            inputs += len;
        }
    }
    Some(inputs)
}

/// The first `f64` among `results` (NaN if none: callers check there is one).
fn first_float(results: &[RuntimeValue]) -> f64 {
    results
        .iter()
        .find_map(|v| match v {
            RuntimeValue::F64(x) => Some(*x),
            _ => None,
        })
        .unwrap_or(f64::NAN)
}

/// The read-only slices the pullback takes again, borrowed from `args`.
pub(crate) fn stable_slices<'a>(positions: &[usize], args: &'a [Arg<'_>]) -> SmallVec<[&'a [f64]; 8]> {
    positions.iter().map(|&k| args.get(k).and_then(Arg::as_slice).unwrap_or(&[])).collect()
}

/// `externs` plus the externs of `rules`' native rules.
pub(crate) fn with_rule_externs(externs: &ExternRegistry, rules: &RuleSet) -> ExternRegistry {
    let mut all = externs.clone();
    rules.register_externs(&mut all);
    all
}

impl std::fmt::Debug for GradientFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GradientFn")
            .field("function", &self.user.name)
            .field("wrt", &self.user.wrt)
            .finish_non_exhaustive()
    }
}
