//! The per-call fast path of the handles: [`ArgFrame`] packs a call's arguments straight into a
//! slot buffer on the stack as they are given, one type check per argument, with no argument
//! list to build and no result values to decode; [`FrameResults`] hands back the result slots.
//! The handles of the `jitdiff` crate use it for their own argument lists (the user's arguments
//! followed by differential slices) on calls whose slots fit [`FRAME_SLOTS`].

use crate::abi::slot_count;
use crate::arg::Arg;
use crate::direct::{self, Registers};
use crate::error::CallError;
use crate::handle::{CompiledFn, pack_one};
use jitdiff_ir::{RuntimeValue, Tape, Type};
use std::marker::PhantomData;

/// The most argument slots, and result slots, of a call through an [`ArgFrame`] (a slice takes
/// two, a scalar one, an `f64xW` W).
pub const FRAME_SLOTS: usize = 16;

/// The arguments of one call of a [`CompiledFn`], packed as they are pushed (see
/// [`CompiledFn::frame`]). Each push is checked against the next parameter's type; the slices
/// stay borrowed (mutably, for an `mslice`) for `'a`, which outlives the call.
///
/// ```
/// use jitdiff_ir::{parse_module, ExternRegistry, Tape};
/// use jitdiff_jit::{compile, Arg, FrameResults, JitOptions};
/// let ir = parse_module("func @f(x: slice, y: f64) -> f64 {\nentry:\n    i = iconst 0\n    v = load x, i\n    p = fmul v, y\n    ret p\n}\n").unwrap();
/// let f = compile(&ir, &ExternRegistry::new(), &JitOptions::new()).unwrap().function("f").unwrap();
/// let x = [3.0];
/// let mut frame = f.frame().unwrap();
/// frame.push(Arg::Slice(&x)).unwrap();
/// frame.push(Arg::F64(2.0)).unwrap();
/// let mut results = FrameResults::new();
/// frame.call(&mut Tape::new(), &mut results).unwrap();
/// assert_eq!(results.f64(f.result_slot(0)), 6.0);
/// // A push of the wrong kind is refused before any native code runs.
/// assert!(f.frame().unwrap().push(Arg::F64(1.0)).is_err());
/// ```
pub struct ArgFrame<'f, 'a> {
    f: &'f CompiledFn,
    /// The parameter types (the handle's copy: a push need not reach them through the module).
    params: &'f [Type],
    /// The arguments: in slot layout for the entry trampoline, or for a direct call (the
    /// function's `FramePlan::direct`) its parts by class.
    packed: Packed,
    /// The next free slot, or the next integer part of a direct call.
    at: usize,
    /// The next float part of a direct call.
    float_at: usize,
    /// The next parameter.
    next: usize,
    _borrows: PhantomData<&'a mut [f64]>,
}

/// An argument frame's packed arguments.
union Packed {
    slots: [u64; FRAME_SLOTS],
    registers: Registers,
}

/// The result slots of a call through an [`ArgFrame`]; result `k` starts at slot
/// [`CompiledFn::result_slot`]`(k)`. The caller owns them (so that a call need not move them).
#[derive(Clone, Copy, Debug, Default)]
pub struct FrameResults {
    slots: [u64; FRAME_SLOTS],
}

impl FrameResults {
    /// Zeroed slots.
    #[inline]
    pub fn new() -> FrameResults {
        FrameResults::default()
    }
    /// The raw bits of slot `slot` (0 past the results).
    #[inline]
    pub fn bits(&self, slot: usize) -> u64 {
        self.slots.get(slot).copied().unwrap_or(0)
    }
    /// The slots, for native code to write.
    #[inline(always)]
    pub(crate) fn slots_mut(&mut self) -> &mut [u64; FRAME_SLOTS] {
        &mut self.slots
    }
    /// Slot `slot` as an `f64` (an `f64` result, or a lane of an `f64xW` result).
    #[inline]
    pub fn f64(&self, slot: usize) -> f64 {
        f64::from_bits(self.bits(slot))
    }
    /// The result of type `ty` starting at slot `slot`, as a value.
    ///
    /// ```
    /// use jitdiff_ir::{RuntimeValue, Type};
    /// let results = jitdiff_jit::FrameResults::new();
    /// assert_eq!(results.value(Type::I64, 0), RuntimeValue::I64(0));
    /// ```
    pub fn value(&self, ty: Type, slot: usize) -> RuntimeValue {
        match ty {
            Type::I64 => RuntimeValue::I64(self.bits(slot) as i64),
            Type::Bool => RuntimeValue::Bool(self.bits(slot) != 0),
            Type::F64x(w) => RuntimeValue::Vector((slot..slot + w as usize).map(|k| self.f64(k)).collect()),
            _ => RuntimeValue::F64(self.f64(slot)),
        }
    }
}

impl CompiledFn {
    /// An empty argument frame for a call of this function, or `None` when its arguments or its
    /// results need more than [`FRAME_SLOTS`] slots (call through [`CompiledFn::call_into`] then).
    #[inline(always)]
    pub fn frame<'a>(&self) -> Option<ArgFrame<'_, 'a>> {
        self.plan.framed.then(|| ArgFrame {
            f: self,
            params: self.plan.params(),
            // Zeroed slots cover `registers` too (and zero is a valid value of every part).
            packed: Packed { slots: [0; FRAME_SLOTS] },
            at: 0,
            float_at: 0,
            next: 0,
            _borrows: PhantomData,
        })
    }

    /// The first slot of result `k` in [`FrameResults`] (results are laid out in order: one slot
    /// per scalar, W per `f64xW`).
    pub fn result_slot(&self, k: usize) -> usize {
        self.returns().iter().take(k).map(|&t| slot_count(t)).sum()
    }
}

impl<'a> ArgFrame<'_, 'a> {
    /// Append the next argument, checked against its parameter's type.
    #[inline(always)]
    pub fn push(&mut self, mut arg: Arg<'a>) -> Result<(), CallError> {
        let Some(&ty) = self.params.get(self.next) else {
            let info = self.f.info();
            return Err(CallError::ArgCount {
                function: info.name.clone(),
                expected: info.params.len(),
                got: self.next + 1,
            });
        };
        if self.f.plan.direct {
            // SAFETY: a direct plan's frame was made with `registers` (all bits of both fields
            // are valid for any value).
            let registers = unsafe { &mut self.packed.registers };
            // The plan counted the parts: these indices are in bounds.
            match (arg, ty) {
                (Arg::F64(x), Type::F64) => {
                    registers.floats[self.float_at] = x;
                    self.float_at += 1;
                }
                (Arg::I64(x), Type::I64) => {
                    registers.ints[self.at] = x as u64;
                    self.at += 1;
                }
                (Arg::Bool(x), Type::Bool) => {
                    registers.ints[self.at] = u64::from(x);
                    self.at += 1;
                }
                (Arg::Slice(v), Type::Slice) => {
                    registers.ints[self.at..self.at + 2].copy_from_slice(&[v.as_ptr() as u64, v.len() as u64]);
                    self.at += 2;
                }
                (Arg::SliceMut(v), Type::Slice | Type::SliceMut) => {
                    registers.ints[self.at..self.at + 2].copy_from_slice(&[v.as_mut_ptr() as u64, v.len() as u64]);
                    self.at += 2;
                }
                (arg, _) => {
                    return Err(CallError::ArgType {
                        function: self.f.name().into(),
                        index: self.next,
                        expected: ty,
                        got: arg.kind_name(),
                    });
                }
            }
        } else {
            let n = slot_count(ty);
            // SAFETY: a trampoline plan's frame was made with `slots`.
            let slots = unsafe { &mut self.packed.slots };
            // `frame` checked that all parameters' slots fit, so this range is in bounds.
            pack_one(self.f, self.next, &mut arg, ty, &mut slots[self.at..self.at + n])?;
            self.at += n;
        }
        self.next += 1;
        Ok(())
    }

    /// Call the function on `tape` (see [`CompiledFn::call_with_tape`]) with the pushed
    /// arguments, its results into `results`: an error unless every parameter got one. (Taking
    /// `&mut self` rather than `self` spares a copy of the slots; calling again repeats the call
    /// with the same arguments.)
    #[inline]
    pub fn call(&mut self, tape: &mut Tape, results: &mut FrameResults) -> Result<(), CallError> {
        self.check_complete()?;
        let f = self.f;
        // SAFETY: see `raw_call_checked`.
        let status = f.with_given_tape(tape, |state| unsafe { self.raw_call_checked(results, state) });
        self.finish(status, results)
    }

    /// [`call`](Self::call) without a tape of the caller's, as [`CompiledFn::call`] makes it: a
    /// scratch tape of the thread, or none when the function needs none
    /// ([`CompiledFn::needs_tape`]).
    #[inline]
    pub fn call_scratch(&mut self, results: &mut FrameResults) -> Result<(), CallError> {
        self.check_complete()?;
        let f = self.f;
        // SAFETY: see `raw_call_checked`.
        let status = f.with_call_tape(|state| unsafe { self.raw_call_checked(results, state) });
        self.finish(status, results)
    }

    /// The function's [`CompiledFn::needs_tape`].
    #[inline]
    pub fn needs_tape(&self) -> bool {
        self.f.needs_tape()
    }

    /// An error unless every parameter got an argument.
    #[inline(always)]
    fn check_complete(&self) -> Result<(), CallError> {
        if self.next != self.params.len() {
            let info = self.f.info();
            return Err(CallError::ArgCount {
                function: info.name.clone(),
                expected: info.params.len(),
                got: self.next,
            });
        }
        Ok(())
    }

    /// Call the native code on the pushed arguments and `state`.
    ///
    /// # Safety
    ///
    /// [`check_complete`](Self::check_complete) must have passed, and `state` must be lent as
    /// `CompiledFn::raw_call` requires.
    #[inline(always)]
    unsafe fn raw_call_checked(&self, results: &mut FrameResults, state: *mut crate::tape::TapeState) -> i32 {
        // SAFETY: every parameter was pushed and checked against its type, and its parts
        // written in order: for a direct plan by class into `registers` (`push`), else by
        // `pack_one` into `slots` in slot layout; every slice pointer and length among them was
        // taken from a borrow of lifetime `'a` (a `&mut` one for an `mslice`), which outlives
        // `self` and so this call; `frame` checked that the results (and the two failure-detail
        // slots) fit in `FRAME_SLOTS`; the caller lends `state`; a direct plan's function is
        // System V and its parts fit `direct::call` (`FramePlan::new`), and `internal_address`
        // is its live internal function.
        unsafe {
            if self.f.plan.direct {
                direct::call(
                    self.f.internal_address(),
                    results.slots.as_mut_ptr(),
                    state,
                    self.packed.registers.reread(),
                    self.at > 3,
                )
            } else {
                self.f.raw_call(self.packed.slots.as_ptr(), results.slots.as_mut_ptr(), state)
            }
        }
    }

    /// The call's outcome from its status.
    #[inline(always)]
    fn finish(&self, status: i32, results: &FrameResults) -> Result<(), CallError> {
        if status != 0 {
            return Err(self.f.runtime_error(status, [results.slots[0], results.slots[1]]));
        }
        Ok(())
    }
}

impl std::fmt::Debug for ArgFrame<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArgFrame").field("function", &self.f).field("pushed", &self.next).finish()
    }
}

// `frame` initialises `Packed` through `slots`, which must cover `registers`.
const _: () = assert!(std::mem::size_of::<Registers>() <= std::mem::size_of::<[u64; FRAME_SLOTS]>());
