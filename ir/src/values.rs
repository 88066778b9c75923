//! The values calls take and return: [`ArgValue`] (an argument of an interpreted call; slices
//! own their data) and [`RuntimeValue`] (a result), shared by the interpreter, the JIT's safe
//! handles and extern closures.

use crate::function::Imm;
use crate::opcode::Opcode;
use crate::types::Type;
use std::fmt;

/// A value the interpreter returns (and extern closures produce).
#[derive(Clone, Debug)]
pub enum RuntimeValue {
    /// An `f64`.
    F64(f64),
    /// An `i64`.
    I64(i64),
    /// A `bool`.
    Bool(bool),
    /// The lanes of an `f64xW`.
    Vector(Vec<f64>),
}

impl PartialEq for RuntimeValue {
    /// Floats compare by bit pattern: `NaN == NaN` (same payload) and `0.0 != -0.0`, which is what
    /// an oracle comparison wants.
    fn eq(&self, other: &RuntimeValue) -> bool {
        use RuntimeValue as V;
        match (self, other) {
            (V::F64(a), V::F64(b)) => a.to_bits() == b.to_bits(),
            (V::I64(a), V::I64(b)) => a == b,
            (V::Bool(a), V::Bool(b)) => a == b,
            (V::Vector(a), V::Vector(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
            }
            _ => false,
        }
    }
}

impl RuntimeValue {
    /// The `f64`, if this is one.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            RuntimeValue::F64(x) => Some(*x),
            _ => None,
        }
    }
    /// The `i64`, if this is one.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            RuntimeValue::I64(x) => Some(*x),
            _ => None,
        }
    }
    /// The `bool`, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            RuntimeValue::Bool(x) => Some(*x),
            _ => None,
        }
    }
    /// The lanes, if this is a vector.
    pub fn as_vector(&self) -> Option<&[f64]> {
        match self {
            RuntimeValue::Vector(v) => Some(v),
            _ => None,
        }
    }
    /// The IR type of this value (`None` for a vector whose width is not a supported one).
    pub fn ty(&self) -> Option<Type> {
        match self {
            RuntimeValue::F64(_) => Some(Type::F64),
            RuntimeValue::I64(_) => Some(Type::I64),
            RuntimeValue::Bool(_) => Some(Type::Bool),
            RuntimeValue::Vector(v) => u8::try_from(v.len()).ok().and_then(Type::vector),
        }
    }
    /// The constant instruction (`fconst`, `iconst` or `bconst` with its immediate) that
    /// re-creates this value bit for bit, if one does: not a vector (there is no vector
    /// constant), nor a NaN with a payload other than the canonical one (the text form and
    /// the JIT's constants know only that NaN).
    ///
    /// ```
    /// use jitdiff_ir::{Imm, Opcode, RuntimeValue};
    /// assert_eq!(RuntimeValue::F64(0.5).as_constant(), Some((Opcode::FConst, Imm::F64(0.5))));
    /// assert_eq!(RuntimeValue::Vector(vec![1.0, 2.0]).as_constant(), None);
    /// ```
    pub fn as_constant(&self) -> Option<(Opcode, Imm)> {
        match *self {
            RuntimeValue::F64(x) if x.is_nan() && x.to_bits() != f64::NAN.to_bits() => None,
            RuntimeValue::F64(x) => Some((Opcode::FConst, Imm::F64(x))),
            RuntimeValue::I64(x) => Some((Opcode::IConst, Imm::I64(x))),
            RuntimeValue::Bool(x) => Some((Opcode::BConst, Imm::Bool(x))),
            RuntimeValue::Vector(_) => None,
        }
    }
    /// A short description of the kind of value, for error messages.
    pub fn kind(&self) -> String {
        match self {
            RuntimeValue::Vector(v) => format!("vector of {} lanes", v.len()),
            other => other.ty().map_or_else(String::new, |t| t.to_string()),
        }
    }
}

impl fmt::Display for RuntimeValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuntimeValue::F64(x) => write!(f, "{x:?}"),
            RuntimeValue::I64(x) => write!(f, "{x}"),
            RuntimeValue::Bool(x) => write!(f, "{x}"),
            RuntimeValue::Vector(v) => write!(f, "{v:?}"),
        }
    }
}

/// An argument for [`Interpreter::call`]. Slices own their data; an `mslice` argument is updated
/// in place, so after the call the caller reads the final contents from it.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgValue {
    /// An `f64`.
    F64(f64),
    /// An `i64`.
    I64(i64),
    /// A `bool`.
    Bool(bool),
    /// An `f64xW`: exactly W lanes.
    Vector(Vec<f64>),
    /// A read-only `slice`.
    Slice(Vec<f64>),
    /// A mutable `mslice` (also accepted where a `slice` is expected).
    SliceMut(Vec<f64>),
}

impl ArgValue {
    /// A short description of the kind of argument, for error messages.
    pub fn kind(&self) -> String {
        match self {
            ArgValue::F64(_) => "f64".into(),
            ArgValue::I64(_) => "i64".into(),
            ArgValue::Bool(_) => "bool".into(),
            ArgValue::Vector(v) => format!("vector of {} lanes", v.len()),
            ArgValue::Slice(_) => "slice".into(),
            ArgValue::SliceMut(_) => "mslice".into(),
        }
    }
    /// The slice contents, if this is a slice argument.
    pub fn as_slice(&self) -> Option<&[f64]> {
        match self {
            ArgValue::Slice(s) | ArgValue::SliceMut(s) => Some(s),
            _ => None,
        }
    }
}
