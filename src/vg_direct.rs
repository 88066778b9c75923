//! The direct `value_and_grad` call: for the common shape — every differentiated parameter a
//! slice, no `mslice` — the fused reverse-mode function is called with the arguments and the
//! gradient's pieces in registers ([`CompiledFn::call_direct`]), with what the general path
//! works out per call (which pieces go where, which result is the value) worked out once.

use crate::error::Error;
use crate::gradient::{AUTO_FORWARD_INPUTS, GradientFn, GradientMode};
use crate::user::UserFunction;
use jitdiff_ir::Type;
use jitdiff_jit::{Arg, CallError, CompiledFn, FrameResults, NativeArgs, NativeResults, TypedFn};
use smallvec::SmallVec;
use std::sync::atomic::Ordering;

/// A direct `value_and_grad` plan for one fused function.
#[derive(Debug)]
pub(crate) struct DirectGradient {
    /// Per parameter: is it differentiated (a slice whose piece of the gradient follows the
    /// arguments)?
    wrt: SmallVec<[bool; 8]>,
    /// The result slot of the value.
    value_slot: usize,
}

impl DirectGradient {
    /// The plan for `native`, the fused `value_and_grad` of `user`; `None` unless every
    /// differentiated parameter is a slice, no parameter is an `mslice`, the fused function
    /// needs no tape (a call then lends none, and has no tape size to report), and its
    /// parameters fit a direct call.
    pub(crate) fn new(user: &UserFunction, native: &CompiledFn) -> Option<DirectGradient> {
        let shape_fits = user.derivation_wrt() == user.wrt.as_slice()
            && user.params.iter().all(|&t| t != Type::SliceMut)
            && user.params.iter().zip(&user.wrt).all(|(&t, &on)| !on || t == Type::Slice);
        if !shape_fits || native.needs_tape() || !native.calls_direct() {
            return None;
        }
        let value = user.returns.iter().position(|&t| t == Type::F64)?;
        Some(DirectGradient { wrt: user.wrt.iter().copied().collect(), value_slot: native.result_slot(value) })
    }

    /// Call `native` on `args`, the gradient into `grad`: the value, or `None` — before any
    /// native code runs — when the call does not take this path (arguments that do not match,
    /// a `grad` of the wrong length, or at most `forward_up_to` inputs, which forward lanes
    /// compute).
    #[inline]
    pub(crate) fn call(
        &self,
        native: &CompiledFn,
        args: &mut [Arg<'_>],
        grad: &mut [f64],
        forward_up_to: usize,
    ) -> Option<Result<f64, CallError>> {
        if args.len() != self.wrt.len() {
            return None;
        }
        let mut inputs = 0;
        for (a, &on) in args.iter().zip(&self.wrt) {
            if on {
                inputs += a.as_slice()?.len();
            }
        }
        if inputs != grad.len() || inputs <= forward_up_to {
            return None;
        }
        // The pullback adds into the pieces.
        grad.fill(0.0);
        let mut pieces: SmallVec<[&mut [f64]; 4]> = SmallVec::new();
        let mut rest: &mut [f64] = grad;
        for (a, &on) in args.iter().zip(&self.wrt) {
            if on {
                let (piece, tail) = std::mem::take(&mut rest).split_at_mut(a.as_slice()?.len());
                pieces.push(piece);
                rest = tail;
            }
        }
        let mut results = FrameResults::new();
        let status = native.call_direct(args, &mut pieces, &mut results)?;
        Some(if status == 0 { Ok(results.f64(self.value_slot)) } else { Err(native.status_error(status, &results)) })
    }
}

/// What the typed handles of `#[jitdiff::function]` call: `value_and_grad` as one typed native
/// call of the fused function, whose parameters are the function's followed by one `mslice`
/// per differentiated slice (that slice's piece of the gradient, which the call adds into).
impl GradientFn {
    /// Does `value_and_grad` compute a gradient of `inputs` inputs by the fused reverse-mode
    /// function (not by forward lanes)? When it does, a typed call of that function is what
    /// `value_and_grad` would make, and is counted as such (no tape used).
    #[doc(hidden)]
    #[inline]
    pub fn takes_typed_reverse(&self, inputs: usize) -> bool {
        let reverse = match self.mode {
            GradientMode::Reverse => true,
            GradientMode::Auto => inputs > AUTO_FORWARD_INPUTS,
            GradientMode::Forward => false,
        };
        if reverse {
            self.last_tape_bytes.store(0, Ordering::Relaxed);
        }
        reverse
    }

    /// The fused `value_and_grad` function as a typed handle of parameters `A` and results
    /// `R` (reverse mode compiled now if it was not yet), or `None` when there is none of that
    /// signature, or it can use the tape, or no direct plan covers the function's shape (the
    /// general path then computes every gradient).
    #[doc(hidden)]
    pub fn typed_value_and_grad<A: NativeArgs, R: NativeResults>(&self) -> Result<Option<TypedFn<A, R>>, Error> {
        let reverse = self.reverse()?;
        Ok(match (&reverse.value_and_grad, &reverse.direct) {
            (Some(native), Some(_)) => native.typed().ok(),
            _ => None,
        })
    }

    /// The error a failed native call of the fused function with `args` reports, in the user's
    /// terms (see [`PrimalFn::call_error`](crate::PrimalFn::call_error)).
    #[doc(hidden)]
    pub fn call_error(&self, args: &[Arg<'_>], error: CallError) -> Error {
        self.user.call_error(args, error)
    }
}
