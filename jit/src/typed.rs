//! The typed fast path: [`TypedFn<A, R>`] for functions of scalar parameters and results.
//! The signature is checked once when the handle is made, so a call only packs the arguments
//! into a stack buffer, calls the entry trampoline and unpacks the results — no allocation, no
//! per-argument matching.

use crate::error::CallError;
use crate::handle::CompiledFn;
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

/// The most scalar parameters or results a typed handle supports.
pub const MAX_TYPED_SLOTS: usize = 8;

/// A tuple of up to 8 [`Scalar`] arguments: `()`, `(f64,)`, `(f64, i64)`, ...
pub trait NativeArgs: sealed::Sealed {
    /// The parameter types.
    fn types() -> Vec<Type>;
    /// Write the arguments into slots.
    fn pack(self, slots: &mut [u64; MAX_TYPED_SLOTS]);
}

/// The results of a typed call: `()`, one [`Scalar`], or a tuple of up to 8.
pub trait NativeResults: sealed::Sealed + Sized {
    /// The result types.
    fn types() -> Vec<Type>;
    /// Read the results from slots.
    fn unpack(slots: &[u64; MAX_TYPED_SLOTS]) -> Self;
}

impl sealed::Sealed for () {}
impl NativeArgs for () {
    fn types() -> Vec<Type> {
        vec![]
    }
    fn pack(self, _: &mut [u64; MAX_TYPED_SLOTS]) {}
}
impl NativeResults for () {
    fn types() -> Vec<Type> {
        vec![]
    }
    fn unpack(_: &[u64; MAX_TYPED_SLOTS]) {}
}

macro_rules! single_result {
    ($($t:ty),*) => {$(
        impl NativeResults for $t {
            fn types() -> Vec<Type> {
                vec![<$t as Scalar>::TYPE]
            }
            fn unpack(slots: &[u64; MAX_TYPED_SLOTS]) -> $t {
                <$t as Scalar>::from_slot(slots[0])
            }
        }
    )*};
}
single_result!(f64, i64, bool);

macro_rules! tuples {
    ($(($($name:ident $idx:tt),+))*) => {$(
        impl<$($name: Scalar),+> sealed::Sealed for ($($name,)+) {}
        impl<$($name: Scalar),+> NativeArgs for ($($name,)+) {
            fn types() -> Vec<Type> {
                vec![$($name::TYPE),+]
            }
            #[inline]
            fn pack(self, slots: &mut [u64; MAX_TYPED_SLOTS]) {
                $(slots[$idx] = self.$idx.to_slot();)+
            }
        }
        impl<$($name: Scalar),+> NativeResults for ($($name,)+) {
            fn types() -> Vec<Type> {
                vec![$($name::TYPE),+]
            }
            #[inline]
            fn unpack(slots: &[u64; MAX_TYPED_SLOTS]) -> Self {
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

/// A compiled function with a statically known scalar signature; see
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
    pub fn call(&self, args: A) -> Result<R, CallError> {
        let mut arg_slots = [0u64; MAX_TYPED_SLOTS];
        let mut result_slots = [0u64; MAX_TYPED_SLOTS];
        args.pack(&mut arg_slots);
        // SAFETY: `CompiledFn::typed` checked that the parameters are exactly `A`'s scalar types
        // (one slot each, at most MAX_TYPED_SLOTS) and the results `R`'s; no slices are involved,
        // so native code touches only these two buffers and the tape it is lent.
        let status = self
            .f
            .with_call_tape(|state| unsafe { self.f.raw_call(arg_slots.as_ptr(), result_slots.as_mut_ptr(), state) });
        if status != 0 {
            return Err(self.f.runtime_error(status, [result_slots[0], result_slots[1]]));
        }
        Ok(R::unpack(&result_slots))
    }

    /// The untyped handle.
    pub fn untyped(&self) -> &CompiledFn {
        &self.f
    }
}
