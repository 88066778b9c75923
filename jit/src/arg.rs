//! [`Arg`]: the one borrowed argument type of every native call, and of every handle of the
//! `jitdiff` crate built on top.

use jitdiff_ir::{ArgValue, Type};

/// An argument of a native call. Slices are borrowed for the duration of the call; a
/// `SliceMut` is written in place.
///
/// A `SliceMut` is accepted where the function takes a read-only `slice`; a `Slice` is not
/// accepted for an `mslice` parameter. Plain Rust values convert with `From`: `f64`, `i64`,
/// `i32`, `bool`, `&[f64]` / `&Vec<f64>` / `&[f64; N]` (a `slice`) and their `&mut` forms (an
/// `mslice`).
///
/// ```
/// use jitdiff_jit::Arg;
/// let (x, mut out) = (vec![1.0, 2.0], [0.0; 3]);
/// let args = [Arg::from(&x), Arg::from(2.5), Arg::from(3), Arg::from(&mut out)];
/// assert_eq!(args.map(|a| a.kind_name()), ["Arg::Slice", "Arg::F64", "Arg::I64", "Arg::SliceMut"]);
/// ```
#[derive(Debug)]
pub enum Arg<'a> {
    /// An `f64`.
    F64(f64),
    /// An `i64`.
    I64(i64),
    /// A `bool`.
    Bool(bool),
    /// An `f64xW`: exactly W lanes.
    Vector(&'a [f64]),
    /// A read-only `slice`.
    Slice(&'a [f64]),
    /// A mutable `mslice`.
    SliceMut(&'a mut [f64]),
}

impl Arg<'_> {
    /// The variant's name, for error messages.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Arg::F64(_) => "Arg::F64",
            Arg::I64(_) => "Arg::I64",
            Arg::Bool(_) => "Arg::Bool",
            Arg::Vector(_) => "Arg::Vector",
            Arg::Slice(_) => "Arg::Slice",
            Arg::SliceMut(_) => "Arg::SliceMut",
        }
    }

    /// A shorter-lived copy: scalars copied, slices reborrowed (an `mslice` stays mutable).
    ///
    /// ```
    /// use jitdiff_jit::Arg;
    /// let mut out = [0.0; 2];
    /// let mut a = Arg::SliceMut(&mut out);
    /// if let Arg::SliceMut(s) = a.reborrow() { s[0] = 1.0; }
    /// drop(a);
    /// assert_eq!(out, [1.0, 0.0]);
    /// ```
    pub fn reborrow(&mut self) -> Arg<'_> {
        match self {
            Arg::F64(x) => Arg::F64(*x),
            Arg::I64(x) => Arg::I64(*x),
            Arg::Bool(x) => Arg::Bool(*x),
            Arg::Vector(v) => Arg::Vector(v),
            Arg::Slice(v) => Arg::Slice(v),
            Arg::SliceMut(v) => Arg::SliceMut(v),
        }
    }

    /// A read-only copy: scalars copied, slices (mutable ones too) borrowed shared.
    pub fn shared(&self) -> Arg<'_> {
        match self {
            Arg::F64(x) => Arg::F64(*x),
            Arg::I64(x) => Arg::I64(*x),
            Arg::Bool(x) => Arg::Bool(*x),
            Arg::Vector(v) => Arg::Vector(v),
            Arg::Slice(v) => Arg::Slice(v),
            Arg::SliceMut(v) => Arg::Slice(v),
        }
    }

    /// The slice's contents, for `Slice` and `SliceMut`.
    pub fn as_slice(&self) -> Option<&[f64]> {
        match self {
            Arg::Slice(v) => Some(v),
            Arg::SliceMut(v) => Some(v),
            _ => None,
        }
    }

    /// An owned copy, as the interpreter takes it.
    pub fn to_value(&self) -> ArgValue {
        match self {
            Arg::F64(x) => ArgValue::F64(*x),
            Arg::I64(x) => ArgValue::I64(*x),
            Arg::Bool(x) => ArgValue::Bool(*x),
            Arg::Vector(v) => ArgValue::Vector(v.to_vec()),
            Arg::Slice(v) => ArgValue::Slice(v.to_vec()),
            Arg::SliceMut(v) => ArgValue::SliceMut(v.to_vec()),
        }
    }

    /// Does this argument fit a parameter of type `ty`? (A `SliceMut` fits a `slice`; a vector
    /// must have the parameter's lane count.)
    pub fn fits(&self, ty: Type) -> bool {
        match (self, ty) {
            (Arg::F64(_), Type::F64) | (Arg::I64(_), Type::I64) | (Arg::Bool(_), Type::Bool) => true,
            (Arg::Vector(v), Type::F64x(w)) => v.len() == w as usize,
            (Arg::Slice(_) | Arg::SliceMut(_), Type::Slice) | (Arg::SliceMut(_), Type::SliceMut) => true,
            _ => false,
        }
    }
}

/// Borrow an interpreter argument as a native one (slices and vectors are borrowed, an
/// `ArgValue::SliceMut` mutably), so the same argument list can drive both.
impl<'a> From<&'a mut ArgValue> for Arg<'a> {
    fn from(value: &'a mut ArgValue) -> Arg<'a> {
        match value {
            ArgValue::F64(x) => Arg::F64(*x),
            ArgValue::I64(x) => Arg::I64(*x),
            ArgValue::Bool(x) => Arg::Bool(*x),
            ArgValue::Vector(v) => Arg::Vector(v),
            ArgValue::Slice(v) => Arg::Slice(v),
            ArgValue::SliceMut(v) => Arg::SliceMut(v),
        }
    }
}

/// Borrow an interpreter argument read-only. An `ArgValue::SliceMut` becomes a read-only
/// `Arg::Slice`, which an `mslice` parameter refuses: borrow it mutably (`&mut ArgValue`) there.
impl<'a> From<&'a ArgValue> for Arg<'a> {
    fn from(value: &'a ArgValue) -> Arg<'a> {
        match value {
            ArgValue::F64(x) => Arg::F64(*x),
            ArgValue::I64(x) => Arg::I64(*x),
            ArgValue::Bool(x) => Arg::Bool(*x),
            ArgValue::Vector(v) => Arg::Vector(v),
            ArgValue::Slice(v) | ArgValue::SliceMut(v) => Arg::Slice(v),
        }
    }
}

impl From<f64> for Arg<'_> {
    fn from(x: f64) -> Self {
        Arg::F64(x)
    }
}
impl From<i64> for Arg<'_> {
    fn from(x: i64) -> Self {
        Arg::I64(x)
    }
}
/// An integer literal (`i32` by default in Rust) is an `i64` argument.
impl From<i32> for Arg<'_> {
    fn from(x: i32) -> Self {
        Arg::I64(i64::from(x))
    }
}
/// A count or index as the IR's `i64` (a value above `i64::MAX` saturates; no slice is that long).
impl From<usize> for Arg<'_> {
    fn from(x: usize) -> Self {
        Arg::I64(i64::try_from(x).unwrap_or(i64::MAX))
    }
}

impl From<bool> for Arg<'_> {
    fn from(x: bool) -> Self {
        Arg::Bool(x)
    }
}
impl<'a> From<&'a [f64]> for Arg<'a> {
    fn from(x: &'a [f64]) -> Self {
        Arg::Slice(x)
    }
}
impl<'a> From<&'a Vec<f64>> for Arg<'a> {
    fn from(x: &'a Vec<f64>) -> Self {
        Arg::Slice(x)
    }
}
impl<'a, const N: usize> From<&'a [f64; N]> for Arg<'a> {
    fn from(x: &'a [f64; N]) -> Self {
        Arg::Slice(x)
    }
}
impl<'a> From<&'a mut [f64]> for Arg<'a> {
    fn from(x: &'a mut [f64]) -> Self {
        Arg::SliceMut(x)
    }
}
impl<'a> From<&'a mut Vec<f64>> for Arg<'a> {
    fn from(x: &'a mut Vec<f64>) -> Self {
        Arg::SliceMut(x)
    }
}
impl<'a, const N: usize> From<&'a mut [f64; N]> for Arg<'a> {
    fn from(x: &'a mut [f64; N]) -> Self {
        Arg::SliceMut(x)
    }
}
