//! The typed fast path: [`TypedFn<A, R>`] for functions of scalar parameters and results.
//! The signature is checked once when the handle is made, so a call only packs the arguments
//! into a stack buffer, calls the entry trampoline and unpacks the results — no allocation, no
//! per-argument matching.

use crate::error::CallError;
use crate::handle::CompiledFn;
use crate::tape::TapeState;
use jitdiff_ir::Type;
use std::ffi::c_void;
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
    /// How the internal native function receives it (`abi::part_type`: `f64`, `i64`, or `i8`
    /// for a `bool`).
    #[doc(hidden)]
    type Native: Copy;
    /// Convert to [`Scalar::Native`].
    #[doc(hidden)]
    fn to_native(self) -> Self::Native;
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
    type Native = f64;
    fn to_native(self) -> f64 {
        self
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
    type Native = i64;
    fn to_native(self) -> i64 {
        self
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
    type Native = u8;
    fn to_native(self) -> u8 {
        u8::from(self)
    }
}

/// The most scalar parameters or results a typed handle supports.
pub const MAX_TYPED_SLOTS: usize = 8;

/// A tuple of up to 8 [`Scalar`] arguments: `()`, `(f64,)`, `(f64, i64)`, ...
pub trait NativeArgs: sealed::Sealed {
    /// The parameter types.
    fn types() -> Vec<Type>;
    /// Call the internal native function at `code` at depth 1 with these arguments.
    ///
    /// # Safety
    ///
    /// `code` must be the finalized internal function (`abi::internal_signature`) of a live
    /// compiled function whose parameters are exactly these scalars; `out` must have room for
    /// its result slots and at least two; `tape` must be lent as for
    /// [`CompiledFn::raw_call`](crate::CompiledFn).
    #[doc(hidden)]
    unsafe fn call_internal(self, code: usize, out: *mut u64, tape: *mut c_void) -> i32;
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
    /// # Safety
    ///
    /// As [`NativeArgs::call_internal`].
    #[inline]
    unsafe fn call_internal(self, code: usize, out: *mut u64, tape: *mut c_void) -> i32 {
        type Internal = unsafe extern "C" fn(i64, *mut u64, *mut c_void) -> i32;
        // SAFETY: the caller guarantees `code` is an internal function without parameters,
        // whose System V signature is exactly `Internal`.
        unsafe { std::mem::transmute::<usize, Internal>(code)(1, out, tape) }
    }
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
            /// # Safety
            ///
            /// As [`NativeArgs::call_internal`].
            #[inline]
            unsafe fn call_internal(self, code: usize, out: *mut u64, tape: *mut c_void) -> i32 {
                type Internal<$($name),+> = unsafe extern "C" fn(i64, *mut u64, *mut c_void, $($name),+) -> i32;
                // SAFETY: the caller guarantees `code` is the internal function of a function whose
                // parameters are these scalars; its System V signature is `(depth, out, tape)`
                // followed by one part per scalar of exactly the `Native` types.
                unsafe {
                    std::mem::transmute::<usize, Internal<$($name::Native),+>>(code)(1, out, tape, $(self.$idx.to_native()),+)
                }
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
    /// `f`'s internal native function (see [`NativeArgs::call_internal`]) and whether it
    /// needs a tape, copied out of `f` so that a call reads them from here.
    internal: usize,
    needs_tape: bool,
    _signature: PhantomData<fn(A) -> R>,
}

impl<A, R> Clone for TypedFn<A, R> {
    fn clone(&self) -> Self {
        TypedFn { f: self.f.clone(), internal: self.internal, needs_tape: self.needs_tape, _signature: PhantomData }
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
        TypedFn { internal: f.internal_address(), needs_tape: f.needs_tape(), f, _signature: PhantomData }
    }

    /// Call the function.
    #[inline]
    pub fn call(&self, args: A) -> Result<R, CallError> {
        let mut result_slots = [0u64; MAX_TYPED_SLOTS];
        let status = if self.needs_tape {
            self.call_with_scratch_tape(args, &mut result_slots)
        } else {
            let mut unused = TapeState::unused();
            // SAFETY: as in `call_with_scratch_tape`; the function cannot touch a tape, so an
            // unused state is lent.
            unsafe { args.call_internal(self.internal, result_slots.as_mut_ptr(), (&raw mut unused).cast()) }
        };
        if status != 0 {
            return Err(self.f.runtime_error(status, [result_slots[0], result_slots[1]]));
        }
        Ok(R::unpack(&result_slots))
    }

    /// The call of a function that needs a tape: out of line, so that the common call stays
    /// small enough to inline where it is made.
    #[cold]
    #[inline(never)]
    fn call_with_scratch_tape(&self, args: A, result_slots: &mut [u64; MAX_TYPED_SLOTS]) -> i32 {
        // SAFETY: `CompiledFn::typed` checked that the parameters are exactly `A`'s scalar types
        // and the results `R`'s (at most MAX_TYPED_SLOTS slots), and `internal` is that
        // function's internal native function, kept mapped by `self.f`; no slices are
        // involved, so native code touches only `result_slots` and the tape it is lent. Calling
        // it directly skips the entry trampoline's round trip through slot buffers.
        self.f.with_call_tape(|state| unsafe {
            args.call_internal(self.internal, result_slots.as_mut_ptr(), state.cast())
        })
    }

    /// The untyped handle.
    pub fn untyped(&self) -> &CompiledFn {
        &self.f
    }
}
