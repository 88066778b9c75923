//! The typed fast path: [`TypedFn<A, R>`] for functions of scalar and slice parameters and
//! scalar results. The signature is checked once when the handle is made, so a call puts the
//! arguments straight into the registers of the native function (`direct.rs`) — no argument
//! list, no per-argument matching, no allocation.

use crate::direct::{self, Registers};
use crate::error::CallError;
use crate::frame::FRAME_SLOTS;
use crate::handle::CompiledFn;
use crate::tape::TapeState;
use jitdiff_ir::Type;
use std::marker::PhantomData;

mod sealed {
    pub trait Sealed {}
}

/// A scalar that crosses the native boundary in one slot: `f64`, `i64` or `bool`.
pub trait Scalar: sealed::Sealed + Copy {
    /// Its IR type.
    const TYPE: Type;
    /// Its slot encoding.
    fn to_slot(self) -> u64;
    /// Decode a slot.
    fn from_slot(slot: u64) -> Self;
}

impl sealed::Sealed for f64 {}
impl Scalar for f64 {
    const TYPE: Type = Type::F64;
    fn to_slot(self) -> u64 {
        self.to_bits()
    }
    fn from_slot(slot: u64) -> f64 {
        f64::from_bits(slot)
    }
}
impl sealed::Sealed for i64 {}
impl Scalar for i64 {
    const TYPE: Type = Type::I64;
    fn to_slot(self) -> u64 {
        self as u64
    }
    fn from_slot(slot: u64) -> i64 {
        slot as i64
    }
}
impl sealed::Sealed for bool {}
impl Scalar for bool {
    const TYPE: Type = Type::Bool;
    fn to_slot(self) -> u64 {
        u64::from(self)
    }
    fn from_slot(slot: u64) -> bool {
        slot != 0
    }
}

/// The parameter type `slice` in a typed signature: a call passes a `&[f64]`.
#[derive(Clone, Copy, Debug)]
pub enum Slice {}
/// The parameter type `mslice` in a typed signature: a call passes a `&mut [f64]`.
#[derive(Clone, Copy, Debug)]
pub enum SliceMut {}

/// One parameter of a typed signature: a [`Scalar`], [`Slice`] or [`SliceMut`].
pub trait Param: sealed::Sealed {
    /// Its IR type.
    const TYPE: Type;
    /// How many integer-class parts it has (a float has none, a slice two).
    #[doc(hidden)]
    const INT_PARTS: usize;
    /// What a call passes for it: the scalar, `&'a [f64]` or `&'a mut [f64]`.
    type Value<'a>;
    /// Write its parts by class — integer-class parts at `ints[*at_int..]`, a float at
    /// `floats[*at_float]` — and advance the positions.
    #[doc(hidden)]
    fn place(value: Self::Value<'_>, ints: &mut [u64], floats: &mut [f64], at_int: &mut usize, at_float: &mut usize);
    /// Write its slots (slot layout, see the crate docs) at `slots[*at..]` and advance `at`.
    #[doc(hidden)]
    fn pack(value: Self::Value<'_>, slots: &mut [u64], at: &mut usize);
}

impl<S: Scalar> Param for S {
    const TYPE: Type = S::TYPE;
    const INT_PARTS: usize = if matches!(S::TYPE, Type::F64) { 0 } else { 1 };
    type Value<'a> = S;
    #[inline(always)]
    fn place(value: S, ints: &mut [u64], floats: &mut [f64], at_int: &mut usize, at_float: &mut usize) {
        if matches!(S::TYPE, Type::F64) {
            floats[*at_float] = f64::from_bits(value.to_slot());
            *at_float += 1;
        } else {
            ints[*at_int] = value.to_slot();
            *at_int += 1;
        }
    }
    #[inline(always)]
    fn pack(value: S, slots: &mut [u64], at: &mut usize) {
        slots[*at] = value.to_slot();
        *at += 1;
    }
}

impl sealed::Sealed for Slice {}
impl Param for Slice {
    const TYPE: Type = Type::Slice;
    const INT_PARTS: usize = 2;
    type Value<'a> = &'a [f64];
    #[inline(always)]
    fn place(value: &[f64], ints: &mut [u64], _: &mut [f64], at_int: &mut usize, _: &mut usize) {
        ints[*at_int] = value.as_ptr() as u64;
        ints[*at_int + 1] = value.len() as u64;
        *at_int += 2;
    }
    #[inline(always)]
    fn pack(value: &[f64], slots: &mut [u64], at: &mut usize) {
        slots[*at] = value.as_ptr() as u64;
        slots[*at + 1] = value.len() as u64;
        *at += 2;
    }
}

impl sealed::Sealed for SliceMut {}
impl Param for SliceMut {
    const TYPE: Type = Type::SliceMut;
    const INT_PARTS: usize = 2;
    type Value<'a> = &'a mut [f64];
    #[inline(always)]
    fn place(value: &mut [f64], ints: &mut [u64], _: &mut [f64], at_int: &mut usize, _: &mut usize) {
        ints[*at_int] = value.as_mut_ptr() as u64;
        ints[*at_int + 1] = value.len() as u64;
        *at_int += 2;
    }
    #[inline(always)]
    fn pack(value: &mut [f64], slots: &mut [u64], at: &mut usize) {
        slots[*at] = value.as_mut_ptr() as u64;
        slots[*at + 1] = value.len() as u64;
        *at += 2;
    }
}

/// The most parameters or scalar results of a typed handle.
pub const MAX_TYPED_SLOTS: usize = 8;

/// The parameters of a typed signature: a tuple of up to 8 [`Param`]s — `()`, `(f64,)`,
/// `(Slice, f64)`, ...; a call passes [`NativeArgs::Values`] (`(&x, 2.0)` for `(Slice, f64)`).
pub trait NativeArgs: sealed::Sealed {
    /// What a call passes: the tuple of each parameter's [`Param::Value`].
    type Values<'a>;
    /// Do its integer-class parts overflow the three registers a direct call leaves them?
    #[doc(hidden)]
    const ON_STACK: bool;
    /// The parameter types.
    fn types() -> Vec<Type>;
    /// Write the arguments' parts by class (see [`Param::place`]).
    #[doc(hidden)]
    fn place(values: Self::Values<'_>, registers: &mut Registers);
    /// Write the arguments in slot layout (see [`Param::pack`]).
    #[doc(hidden)]
    fn pack(values: Self::Values<'_>, slots: &mut [u64; FRAME_SLOTS]);
}

/// The results of a typed call: `()`, one [`Scalar`], or a tuple of up to 8.
pub trait NativeResults: sealed::Sealed + Sized {
    /// The result types.
    fn types() -> Vec<Type>;
    /// Read the results from slots.
    fn unpack(slots: &[u64; FRAME_SLOTS]) -> Self;
}

impl sealed::Sealed for () {}
impl NativeArgs for () {
    type Values<'a> = ();
    const ON_STACK: bool = false;
    fn types() -> Vec<Type> {
        vec![]
    }
    #[inline(always)]
    fn place((): (), _: &mut Registers) {}
    #[inline(always)]
    fn pack((): (), _: &mut [u64; FRAME_SLOTS]) {}
}
impl NativeResults for () {
    fn types() -> Vec<Type> {
        vec![]
    }
    fn unpack(_: &[u64; FRAME_SLOTS]) {}
}

macro_rules! single_result {
    ($($t:ty),*) => {$(
        impl NativeResults for $t {
            fn types() -> Vec<Type> {
                vec![<$t as Scalar>::TYPE]
            }
            #[inline(always)]
            fn unpack(slots: &[u64; FRAME_SLOTS]) -> $t {
                <$t as Scalar>::from_slot(slots[0])
            }
        }
    )*};
}
single_result!(f64, i64, bool);

macro_rules! tuples {
    ($(($($name:ident $idx:tt),+))*) => {$(
        impl<$($name: Param),+> sealed::Sealed for ($($name,)+) {}
        impl<$($name: Param),+> NativeArgs for ($($name,)+) {
            type Values<'a> = ($($name::Value<'a>,)+);
            const ON_STACK: bool = 0 $(+ $name::INT_PARTS)+ > 3;
            fn types() -> Vec<Type> {
                vec![$($name::TYPE),+]
            }
            #[inline(always)]
            fn place(values: Self::Values<'_>, registers: &mut Registers) {
                let (mut at_int, mut at_float) = (0, 0);
                $($name::place(values.$idx, &mut registers.ints, &mut registers.floats, &mut at_int, &mut at_float);)+
            }
            #[inline(always)]
            fn pack(values: Self::Values<'_>, slots: &mut [u64; FRAME_SLOTS]) {
                let mut at = 0;
                $($name::pack(values.$idx, slots, &mut at);)+
            }
        }
        impl<$($name: Scalar),+> NativeResults for ($($name,)+) {
            fn types() -> Vec<Type> {
                vec![$($name::TYPE),+]
            }
            #[inline(always)]
            fn unpack(slots: &[u64; FRAME_SLOTS]) -> Self {
                ($($name::from_slot(slots[$idx]),)+)
            }
        }
    )*};
}
tuples! {
    (A 0)
    (A 0, B 1)
    (A 0, B 1, C 2)
    (A 0, B 1, C 2, D 3)
    (A 0, B 1, C 2, D 3, E 4)
    (A 0, B 1, C 2, D 3, E 4, F 5)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7)
}

/// A compiled function with a statically known signature of scalars and slices; see
/// [`CompiledFn::typed`]. Cheap to clone, `Send + Sync`.
pub struct TypedFn<A, R> {
    f: CompiledFn,
    _signature: PhantomData<fn(A) -> R>,
}

impl<A, R> Clone for TypedFn<A, R> {
    fn clone(&self) -> Self {
        TypedFn { f: self.f.clone(), _signature: PhantomData }
    }
}

impl<A, R> std::fmt::Debug for TypedFn<A, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TypedFn({:?})", self.f)
    }
}

impl<A: NativeArgs, R: NativeResults> TypedFn<A, R> {
    /// Only `CompiledFn::typed` makes these, after checking the signature.
    pub(crate) fn new(f: CompiledFn) -> TypedFn<A, R> {
        TypedFn { f, _signature: PhantomData }
    }

    /// Call the function.
    #[inline]
    pub fn call(&self, args: A::Values<'_>) -> Result<R, CallError> {
        let mut result_slots = [0u64; FRAME_SLOTS];
        let status = if self.f.plan.direct && !self.f.needs_tape() {
            let mut registers = Registers::default();
            A::place(args, &mut registers);
            let mut unused = TapeState::unused();
            // SAFETY: `CompiledFn::typed` checked that the parameters are exactly `A`'s types
            // and the results `R`'s (which fit `FRAME_SLOTS`); the plan is direct (System V,
            // parts that fit `direct::call`) and `place` wrote every part by class in order,
            // the slices' from borrows (mutable for an `mslice`) that outlive the call; the
            // function cannot touch a tape, so an unused state is lent; `internal_address` is
            // its live internal function.
            unsafe {
                direct::call(
                    self.f.internal_address(),
                    result_slots.as_mut_ptr(),
                    &raw mut unused,
                    registers,
                    A::ON_STACK,
                )
            }
        } else {
            self.call_slow(args, &mut result_slots)
        };
        if status != 0 {
            return Err(self.f.runtime_error(status, [result_slots[0], result_slots[1]]));
        }
        Ok(R::unpack(&result_slots))
    }

    /// The call of a function that needs a tape, or whose parts do not fit a direct call:
    /// through the entry trampoline, out of line so that the common call stays small enough to
    /// inline where it is made.
    #[cold]
    #[inline(never)]
    fn call_slow(&self, args: A::Values<'_>, result_slots: &mut [u64; FRAME_SLOTS]) -> i32 {
        let mut slots = [0u64; FRAME_SLOTS];
        A::pack(args, &mut slots);
        // SAFETY: `CompiledFn::typed` checked that the parameters are exactly `A`'s types (whose
        // slots fit `FRAME_SLOTS`) and the results `R`'s; `pack` wrote every parameter's slots
        // in order, the slices' from borrows (mutable for an `mslice`) that outlive the call;
        // `with_call_tape` lends the tape state.
        self.f.with_call_tape(|state| unsafe { self.f.raw_call(slots.as_ptr(), result_slots.as_mut_ptr(), state) })
    }

    /// The untyped handle.
    pub fn untyped(&self) -> &CompiledFn {
        &self.f
    }
}
