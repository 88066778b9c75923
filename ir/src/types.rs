//! Value types of the IR.

use std::fmt;

/// The type of an SSA value.
///
/// Slices are pointer + length views of caller memory; they exist only as function parameters
/// (no instruction produces one and no block parameter may hold one), so every slice value in a
/// function is one of its parameters. That keeps memory easy to reason about for differentiation:
/// the differential of a slice is a second slice the caller supplies.
///
/// ```
/// use jitdiff_ir::Type;
/// assert_eq!(Type::F64.to_string(), "f64");
/// assert_eq!(Type::vector(4).unwrap().to_string(), "f64x4");
/// assert!(Type::SliceMut.is_slice());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    /// A 64-bit IEEE float.
    F64,
    /// A 64-bit two's-complement integer (wrapping arithmetic).
    I64,
    /// A boolean.
    Bool,
    /// A read-only slice of `f64`.
    Slice,
    /// A mutable slice of `f64`.
    SliceMut,
    /// `W` lanes of `f64` (W = 2, 4, 8 or 16): batched tangents.
    F64x(u8),
}

/// Lane counts a vector type may have.
pub const VECTOR_WIDTHS: [u8; 4] = [2, 4, 8, 16];

impl Type {
    /// The vector type with `lanes` lanes, if that width is supported.
    pub fn vector(lanes: u8) -> Option<Type> {
        VECTOR_WIDTHS.contains(&lanes).then_some(Type::F64x(lanes))
    }
    /// Is this `slice` or `mslice`?
    pub fn is_slice(self) -> bool {
        matches!(self, Type::Slice | Type::SliceMut)
    }
    /// Is this `f64` or a vector of `f64`?
    pub fn is_float_like(self) -> bool {
        matches!(self, Type::F64 | Type::F64x(_))
    }
    /// Number of lanes: 1 for scalars, W for `f64xW`.
    pub fn lanes(self) -> u8 {
        match self {
            Type::F64x(w) => w,
            _ => 1,
        }
    }
    /// The text spelling of this type.
    pub fn spelling(self) -> &'static str {
        match self {
            Type::F64 => "f64",
            Type::I64 => "i64",
            Type::Bool => "bool",
            Type::Slice => "slice",
            Type::SliceMut => "mslice",
            Type::F64x(2) => "f64x2",
            Type::F64x(4) => "f64x4",
            Type::F64x(8) => "f64x8",
            Type::F64x(16) => "f64x16",
            Type::F64x(_) => "f64x?",
        }
    }
    /// Parse a type spelling (`f64`, `i64`, `bool`, `slice`, `mslice`, `f64x2` ...).
    pub fn from_spelling(s: &str) -> Option<Type> {
        Some(match s {
            "f64" => Type::F64,
            "i64" => Type::I64,
            "bool" => Type::Bool,
            "slice" => Type::Slice,
            "mslice" => Type::SliceMut,
            "f64x2" => Type::F64x(2),
            "f64x4" => Type::F64x(4),
            "f64x8" => Type::F64x(8),
            "f64x16" => Type::F64x(16),
            _ => return None,
        })
    }
    /// Can a value of type `self` be passed where `expected` is wanted? Identical types, and a
    /// mutable slice where a read-only one is expected.
    pub fn coerces_to(self, expected: Type) -> bool {
        self == expected || (self == Type::SliceMut && expected == Type::Slice)
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.spelling())
    }
}
