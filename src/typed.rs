//! What the typed handles of [`#[jitdiff::function]`](crate::function) and
//! [`#[jitdiff::module]`](crate::module) are made of. The macros emit thin wrappers — one method
//! per operation, taking the Rust function's own parameters — that convert the parameters with
//! [`ToArg`], call a function of this module with the [`Arg`] list, and convert results with
//! [`FromResults`]. Everything here is also usable by hand.
//!
//! ```
//! use jitdiff::typed::{FromResults, ToArg};
//! use jitdiff::{Arg, ir::RuntimeValue};
//! let x = [1.0, 2.0];
//! assert!(matches!(ToArg::to_arg(&x[..]), Arg::Slice(_)));
//! assert!(matches!(ToArg::to_arg(3usize), Arg::I64(3)));
//! let results = [RuntimeValue::F64(0.5), RuntimeValue::I64(7)];
//! assert_eq!(<(f64, usize)>::from_results(&results), Some((0.5, 7)));
//! ```
//!
//! Which handles a function gets depends on its signature: `primal()` always; `gradient()`,
//! `forward(width)` and `jacobian()` when it has an `f64` or `f64`-slice parameter and an
//! output (`f64` results or `&mut [f64]` parameters); `value_and_grad` and `hvp()` only when it
//! returns exactly one `f64`. Anything else is a compile error:
//!
//! ```compile_fail,E0599
//! #[jitdiff::function]
//! fn moments(x: &[f64]) -> (f64, f64) {
//!     (x[0], x[0] * x[0])
//! }
//! let g = moments::gradient().unwrap(); // VJPs and Jacobians: fine
//! let (value, grad) = g.value_and_grad(&[1.0]).unwrap(); // two results: no such method
//! ```

use crate::builder::{Build, Builder};
use crate::error::Error;
use crate::{ForwardFn, GradientFn, PrimalFn};
use jitdiff_ir::{Module, RuntimeValue, Type, parse_module};
use jitdiff_jit::{Arg, FrameResults};

/// A Rust parameter value as the [`Arg`] of its IR parameter: `f64`; the integer types (as an
/// IR `i64`: `u64`/`usize` above `i64::MAX` wrap, as in the front end); `bool`; `&[f64]`,
/// `&[f64; N]` (a `slice`); `&mut [f64]`, `&mut [f64; N]` (an `mslice`).
pub trait ToArg<'a> {
    /// The argument.
    fn to_arg(self) -> Arg<'a>;
}

impl<'a> ToArg<'a> for f64 {
    fn to_arg(self) -> Arg<'a> {
        Arg::F64(self)
    }
}

impl<'a> ToArg<'a> for bool {
    fn to_arg(self) -> Arg<'a> {
        Arg::Bool(self)
    }
}

macro_rules! int_to_arg {
    ($($t:ty),*) => {$(
        impl<'a> ToArg<'a> for $t {
            #[allow(clippy::cast_possible_wrap, clippy::cast_lossless)]
            fn to_arg(self) -> Arg<'a> {
                Arg::I64(self as i64)
            }
        }
    )*};
}
int_to_arg!(i64, isize, i32, u64, usize, u32);

impl<'a> ToArg<'a> for &'a [f64] {
    fn to_arg(self) -> Arg<'a> {
        Arg::Slice(self)
    }
}

impl<'a, const N: usize> ToArg<'a> for &'a [f64; N] {
    fn to_arg(self) -> Arg<'a> {
        Arg::Slice(self)
    }
}

impl<'a> ToArg<'a> for &'a Vec<f64> {
    fn to_arg(self) -> Arg<'a> {
        Arg::Slice(self)
    }
}

impl<'a> ToArg<'a> for &'a mut Vec<f64> {
    fn to_arg(self) -> Arg<'a> {
        Arg::SliceMut(self)
    }
}

impl<'a> ToArg<'a> for &'a mut [f64] {
    fn to_arg(self) -> Arg<'a> {
        Arg::SliceMut(self)
    }
}

impl<'a, const N: usize> ToArg<'a> for &'a mut [f64; N] {
    fn to_arg(self) -> Arg<'a> {
        Arg::SliceMut(self)
    }
}

/// One IR result as a Rust value: `f64`, the integer types (converted with `as`), `bool`.
pub trait FromValue: Sized {
    /// The value, if it has the right kind.
    fn from_value(value: &RuntimeValue) -> Option<Self>;
    /// The value from the raw slot of a result of type `ty`, if that is the right kind.
    fn from_slot(bits: u64, ty: Type) -> Option<Self>;
}

impl FromValue for f64 {
    fn from_value(value: &RuntimeValue) -> Option<f64> {
        match value {
            RuntimeValue::F64(x) => Some(*x),
            _ => None,
        }
    }
    fn from_slot(bits: u64, ty: Type) -> Option<f64> {
        (ty == Type::F64).then_some(f64::from_bits(bits))
    }
}

impl FromValue for bool {
    fn from_value(value: &RuntimeValue) -> Option<bool> {
        match value {
            RuntimeValue::Bool(b) => Some(*b),
            _ => None,
        }
    }
    fn from_slot(bits: u64, ty: Type) -> Option<bool> {
        (ty == Type::Bool).then_some(bits != 0)
    }
}

macro_rules! int_from_value {
    ($($t:ty),*) => {$(
        impl FromValue for $t {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            fn from_value(value: &RuntimeValue) -> Option<$t> {
                match value {
                    RuntimeValue::I64(n) => Some(*n as $t),
                    _ => None,
                }
            }
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            fn from_slot(bits: u64, ty: Type) -> Option<$t> {
                (ty == Type::I64).then_some(bits as i64 as $t)
            }
        }
    )*};
}
int_from_value!(i64, isize, i32, u64, usize, u32);

/// A Rust function's result from the IR function's results: `()` (none), one [`FromValue`], or
/// a tuple of them (one result each).
pub trait FromResults: Sized {
    /// The value, if the results have the right number and kinds.
    fn from_results(values: &[RuntimeValue]) -> Option<Self>;
    /// The value from the result slots of a native call whose results have `types`, if they
    /// have the right number and kinds (all scalars, so result `k` is slot `k`).
    fn from_slots(slots: &FrameResults, types: &[Type]) -> Option<Self>;
}

impl FromResults for () {
    fn from_results(values: &[RuntimeValue]) -> Option<()> {
        values.is_empty().then_some(())
    }
    fn from_slots(_: &FrameResults, types: &[Type]) -> Option<()> {
        types.is_empty().then_some(())
    }
}

macro_rules! scalar_from_results {
    ($($t:ty),*) => {$(
        impl FromResults for $t {
            fn from_results(values: &[RuntimeValue]) -> Option<$t> {
                match values {
                    [v] => <$t>::from_value(v),
                    _ => None,
                }
            }
            fn from_slots(slots: &FrameResults, types: &[Type]) -> Option<$t> {
                match types {
                    [ty] => <$t>::from_slot(slots.bits(0), *ty),
                    _ => None,
                }
            }
        }
    )*};
}
scalar_from_results!(f64, bool, i64, isize, i32, u64, usize, u32);

macro_rules! tuple_from_results {
    ($($n:literal: ($($t:ident $k:tt),+);)*) => {$(
        impl<$($t: FromValue),+> FromResults for ($($t,)+) {
            fn from_results(values: &[RuntimeValue]) -> Option<Self> {
                if values.len() != $n {
                    return None;
                }
                Some(($($t::from_value(&values[$k])?,)+))
            }
            fn from_slots(slots: &FrameResults, types: &[Type]) -> Option<Self> {
                if types.len() != $n {
                    return None;
                }
                Some(($($t::from_slot(slots.bits($k), types[$k])?,)+))
            }
        }
    )*};
}
tuple_from_results! {
    1: (A 0);
    2: (A 0, B 1);
    3: (A 0, B 1, C 2);
    4: (A 0, B 1, C 2, D 3);
    5: (A 0, B 1, C 2, D 3, E 4);
    6: (A 0, B 1, C 2, D 3, E 4, F 5);
    7: (A 0, B 1, C 2, D 3, E 4, F 5, G 6);
    8: (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
}

/// `[f64; N]`: a function returning an array returns its `N` elements (see `docs/rust.md`).
impl<const N: usize> FromResults for [f64; N] {
    fn from_results(values: &[RuntimeValue]) -> Option<Self> {
        if values.len() != N {
            return None;
        }
        let mut out = [0.0; N];
        for (o, v) in out.iter_mut().zip(values) {
            *o = f64::from_value(v)?;
        }
        Some(out)
    }
    fn from_slots(slots: &FrameResults, types: &[Type]) -> Option<Self> {
        if types.len() != N {
            return None;
        }
        let mut out = [0.0; N];
        for (k, (o, ty)) in out.iter_mut().zip(types).enumerate() {
            *o = f64::from_slot(slots.bits(k), *ty)?;
        }
        Some(out)
    }
}

/// A builder of any handle kind for `@name` of `module` (what the generated `builder::<K>()`
/// starts from; `GradientFn::builder` and the like are the same for one kind).
///
/// ```
/// use jitdiff::{GradientFn, ir::parse_module, typed};
/// let m = parse_module("func @sq(x: f64) -> f64 {\nentry:\n    y = fmul x, x\n    ret y\n}").unwrap();
/// let g: GradientFn = typed::builder(&m, "sq").wrt(["x"]).build().unwrap();
/// assert_eq!(g.name(), "sq");
/// ```
pub fn builder<'m, K: Build>(module: &'m Module, name: &str) -> Builder<'m, K> {
    Builder::new(module, name)
}

/// Parse the IR text a macro generated. It was printed by the same `jitdiff-ir` at compile time
/// (and the printer and parser round-trip), so it always parses; if it does not, that is a bug
/// of jitdiff, reported by a panic naming the function. For the macros' generated code only.
#[doc(hidden)]
pub fn parse_generated(ir: &str, name: &str) -> Module {
    match parse_module(ir) {
        Ok(module) => module,
        Err(e) => {
            panic!("internal error in jitdiff: the IR generated for `{name}` does not parse ({e}); please report it")
        }
    }
}

/// The functions as written that a macro generated (IR text, and per instruction `[function,
/// block, instruction, line, column]`), for [`Builder::rust_source`](crate::Builder::rust_source):
/// run-time faults then name the line in the user's file. Text that does not parse (a bug)
/// gives no positions rather than a failure. For the macros' generated code only.
#[doc(hidden)]
pub fn source_generated(module: &Module, as_written: &str, positions: &[[u32; 5]]) -> crate::front::SourceModule {
    let parsed = if as_written.is_empty() { None } else { parse_module(as_written).ok() };
    let as_written = parsed.map(|written| {
        let mut spans = jitdiff_ir::SourceMap::default();
        for (f, function) in written.functions.iter().enumerate() {
            let mut func = jitdiff_ir::FuncSpans::default();
            for block in &function.blocks {
                func.blocks.push(jitdiff_ir::Pos::default());
                func.insts.push(vec![jitdiff_ir::Pos::default(); block.insts.len()]);
                func.terms.push(None);
            }
            spans.funcs.push(func);
            for &[_, b, i, line, col] in positions.iter().filter(|p| p[0] as usize == f) {
                let slot = spans.funcs[f].insts.get_mut(b as usize).and_then(|insts| insts.get_mut(i as usize));
                if let Some(slot) = slot {
                    *slot = jitdiff_ir::Pos { line, col };
                }
            }
        }
        (written, spans)
    });
    crate::front::SourceModule { module: module.clone(), as_written }
}

/// Call `f` and convert its results to `R`.
#[inline]
pub fn call<R: FromResults>(f: &PrimalFn, args: &mut [Arg<'_>]) -> Result<R, Error> {
    match f.call_framed(args, R::from_slots) {
        Some(done) => done?,
        None => f.call_with(args, R::from_results)?,
    }
    .ok_or_else(|| mismatch(f.name()))
}

/// The value and a freshly allocated gradient (see [`GradientFn::value_and_grad`]).
pub fn value_and_grad(g: &GradientFn, args: &mut [Arg<'_>]) -> Result<(f64, Vec<f64>), Error> {
    let mut grad = vec![0.0; g.inputs(args)];
    let value = g.value_and_grad(args, &mut grad)?;
    Ok((value, grad))
}

/// A vector-Jacobian product (see [`GradientFn::vjp`]), with the function's results as `R`.
pub fn vjp<R: FromResults>(
    g: &GradientFn,
    args: &mut [Arg<'_>],
    cotangents: &[f64],
    input_cotangents: &mut [f64],
) -> Result<R, Error> {
    let values = g.vjp(args, cotangents, input_cotangents)?;
    R::from_results(&values).ok_or_else(|| mismatch(g.name()))
}

/// A JVP (see [`ForwardFn::jvp`]): the function's results as `R` and the output tangents.
pub fn jvp<R: FromResults>(f: &ForwardFn, args: &mut [Arg<'_>], tangents: &[&[f64]]) -> Result<(R, Vec<f64>), Error> {
    let (values, tangent) = f.jvp(args, tangents)?;
    let values = R::from_results(&values).ok_or_else(|| mismatch(f.name()))?;
    Ok((values, tangent))
}

/// The results do not have the Rust result type: the generated code and the module disagree,
/// which the macro rules out.
fn mismatch(function: &str) -> Error {
    Error::Internal {
        function: function.into(),
        message: "the results do not match the Rust function's result type".into(),
    }
}
