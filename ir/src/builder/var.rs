//! [`Var`]: a typed value handle with Rust operators and math methods; [`Operand`] (a `Var` or a
//! literal); [`VarList`] (the shapes loop-carried values and branch results can take).

use super::function::FunctionBuilder;
use crate::function::{Imm, Value};
use crate::opcode::{CondCode, Opcode};
use crate::types::Type;
use std::fmt;
use std::ops::{Add, AddAssign, BitAnd, BitOr, Div, DivAssign, Mul, MulAssign, Neg, Not, Rem, Sub, SubAssign};

/// A value of the function being built: `Copy`, typed, and tied to its [`FunctionBuilder`].
///
/// Arithmetic picks the float or integer opcode by the value's type (`fadd` or `iadd` ...);
/// literals convert to constants (`2.0 * x`, `i + 1`; an `f64` literal next to an `f64xW`
/// value is splatted). Mixing types is recorded as an error, never a panic.
///
/// ```
/// use jitdiff_ir::{Type, builder::ModuleBuilder};
/// let mut mb = ModuleBuilder::new();
/// mb.function("f", &[("x", Type::F64), ("k", Type::I64)], &[Type::F64], |f| {
///     let (x, k) = (f.param(0), f.param(1));
///     let y = (2.0 * x - 1.0).sin() + x.powi(k * 2) / x.exp();
///     f.ret(&[y.max(0.0)]);
/// })?;
/// # Ok::<(), jitdiff_ir::builder::BuildError>(())
/// ```
#[derive(Clone, Copy)]
pub struct Var<'a> {
    value: Value,
    ty: Type,
    fb: &'a FunctionBuilder,
}

impl fmt::Debug for Var<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Var(v{}: {})", self.value.0, self.ty)
    }
}

impl<'a> Var<'a> {
    pub(crate) fn new(value: Value, ty: Type, fb: &'a FunctionBuilder) -> Var<'a> {
        Var { value, ty, fb }
    }
    /// The IR value (its index is final only after
    /// [`ModuleBuilder::finish`](crate::builder::ModuleBuilder::finish) canonicalizes).
    pub fn value(self) -> Value {
        self.value
    }
    /// The value's type.
    pub fn ty(self) -> Type {
        self.ty
    }
    /// The builder this value belongs to.
    pub fn builder(self) -> &'a FunctionBuilder {
        self.fb
    }
    /// Name the value (see [`FunctionBuilder::name`]) and return it.
    pub fn named(self, name: &str) -> Var<'a> {
        self.fb.name_value(self, name)
    }

    fn unary(self, op: Opcode) -> Var<'a> {
        self.fb.op(op, &[self])
    }
    fn binary(self, op: Opcode, rhs: impl Operand<'a>) -> Var<'a> {
        let rhs = rhs.into_var(self.fb, self.ty);
        self.fb.op(op, &[self, rhs])
    }
    /// `+ - * /`: the integer opcode for `i64`, the float one otherwise.
    fn arith(self, rhs: Var<'a>, float_op: Opcode, int_op: Opcode) -> Var<'a> {
        let op = if self.ty == Type::I64 { int_op } else { float_op };
        self.fb.op(op, &[self, rhs])
    }

    /// Compare with `cond`: `icmp` for `i64`, `fcmp` otherwise.
    pub fn cmp(self, cond: CondCode, rhs: impl Operand<'a>) -> Var<'a> {
        let rhs = rhs.into_var(self.fb, self.ty);
        let op = if self.ty == Type::I64 { Opcode::ICmp } else { Opcode::FCmp };
        self.fb
            .inst(op, &[self, rhs], Imm::Cond(cond))
            .first()
            .copied()
            .unwrap_or_else(|| self.fb.placeholder(Type::Bool))
    }
    /// `self < rhs`.
    pub fn lt(self, rhs: impl Operand<'a>) -> Var<'a> {
        self.cmp(CondCode::Lt, rhs)
    }
    /// `self <= rhs`.
    pub fn le(self, rhs: impl Operand<'a>) -> Var<'a> {
        self.cmp(CondCode::Le, rhs)
    }
    /// `self > rhs`.
    pub fn gt(self, rhs: impl Operand<'a>) -> Var<'a> {
        self.cmp(CondCode::Gt, rhs)
    }
    /// `self >= rhs`.
    pub fn ge(self, rhs: impl Operand<'a>) -> Var<'a> {
        self.cmp(CondCode::Ge, rhs)
    }
    /// `self == rhs` (an IR comparison, not Rust equality of handles).
    pub fn eq(self, rhs: impl Operand<'a>) -> Var<'a> {
        self.cmp(CondCode::Eq, rhs)
    }
    /// `self != rhs` (an IR comparison).
    pub fn ne(self, rhs: impl Operand<'a>) -> Var<'a> {
        self.cmp(CondCode::Ne, rhs)
    }

    /// `x^n` for an integer `n` (`powi`).
    pub fn powi(self, n: impl Operand<'a>) -> Var<'a> {
        self.binary(Opcode::Powi, n.into_var(self.fb, Type::I64))
    }
    /// `x^y` for a real `y` (`pow`).
    pub fn powf(self, y: impl Operand<'a>) -> Var<'a> {
        self.binary(Opcode::Pow, y)
    }
    /// `atan2(self, x)`: the angle of the point `(x, self)`.
    pub fn atan2(self, x: impl Operand<'a>) -> Var<'a> {
        self.binary(Opcode::Atan2, x)
    }
    /// `sqrt(self^2 + y^2)`.
    pub fn hypot(self, y: impl Operand<'a>) -> Var<'a> {
        self.binary(Opcode::Hypot, y)
    }
    /// `self * b + c` with one rounding (`fma`), as Rust's `f64::mul_add`.
    pub fn mul_add(self, b: impl Operand<'a>, c: impl Operand<'a>) -> Var<'a> {
        let b = b.into_var(self.fb, Type::F64);
        let c = c.into_var(self.fb, Type::F64);
        self.fb.op(Opcode::Fma, &[self, b, c])
    }
    /// The smaller of two floats (`min`, the `minsd` rule).
    pub fn min(self, y: impl Operand<'a>) -> Var<'a> {
        self.binary(Opcode::Min, y)
    }
    /// The larger of two floats (`max`, the `maxsd` rule).
    pub fn max(self, y: impl Operand<'a>) -> Var<'a> {
        self.binary(Opcode::Max, y)
    }

    /// `select self, a, b` for a `bool` condition.
    pub fn select(self, a: impl Operand<'a>, b: impl Operand<'a>) -> Var<'a> {
        let a = a.into_var(self.fb, Type::F64);
        let b = b.into_var(self.fb, a.ty);
        self.fb.op(Opcode::Select, &[self, a, b])
    }
    /// Integer to float (`itof`).
    pub fn itof(self) -> Var<'a> {
        self.unary(Opcode::IToF)
    }
    /// Float to integer, truncating and saturating (`ftoi`).
    pub fn ftoi(self) -> Var<'a> {
        self.unary(Opcode::FToI)
    }
    /// Lane `lane` of a vector (`extract`).
    pub fn extract(self, lane: u8) -> Var<'a> {
        self.fb.extract(self, lane)
    }
    /// This vector with lane `lane` replaced by `x` (`insert`).
    pub fn insert(self, lane: u8, x: impl Operand<'a>) -> Var<'a> {
        let x = x.into_var(self.fb, Type::F64);
        self.fb.insert(self, lane, x)
    }
}

macro_rules! float_unary_methods {
    ($($name:ident => $op:ident),* $(,)?) => {
        impl<'a> Var<'a> {$(
            #[doc = concat!("`", stringify!($name), "(self)` (opcode `", stringify!($op), "`).")]
            pub fn $name(self) -> Var<'a> {
                self.unary(Opcode::$op)
            }
        )*}
    };
}
float_unary_methods! {
    sqrt => Sqrt, exp => Exp, ln => Ln, sin => Sin, cos => Cos, tan => Tan, tanh => Tanh, abs => Abs,
    log1p => Log1p, expm1 => Expm1, floor => Floor, ceil => Ceil, atan => Atan, asin => Asin,
    acos => Acos, sinh => Sinh, cosh => Cosh, sign => Sign, exp2 => Exp2, log2 => Log2, log10 => Log10,
    cbrt => Cbrt, round => Round, trunc => Trunc, asinh => Asinh, acosh => Acosh, atanh => Atanh,
}

/// A right-hand operand: a [`Var`] or a literal (`f64` becomes `fconst`, splatted next to a
/// vector; `i64`/`i32` become `iconst`; `bool` becomes `bconst`).
pub trait Operand<'a>: Copy {
    /// The operand as a value of `fb`; `like` is the type of the other operand.
    fn into_var(self, fb: &'a FunctionBuilder, like: Type) -> Var<'a>;
}
impl<'a> Operand<'a> for Var<'a> {
    fn into_var(self, _fb: &'a FunctionBuilder, _like: Type) -> Var<'a> {
        self
    }
}
impl<'a> Operand<'a> for f64 {
    fn into_var(self, fb: &'a FunctionBuilder, like: Type) -> Var<'a> {
        let c = fb.float(self);
        match like {
            Type::F64x(w) => fb.splat(w, c),
            _ => c,
        }
    }
}
impl<'a> Operand<'a> for i64 {
    fn into_var(self, fb: &'a FunctionBuilder, _like: Type) -> Var<'a> {
        fb.int(self)
    }
}
impl<'a> Operand<'a> for i32 {
    fn into_var(self, fb: &'a FunctionBuilder, _like: Type) -> Var<'a> {
        fb.int(i64::from(self))
    }
}
impl<'a> Operand<'a> for bool {
    fn into_var(self, fb: &'a FunctionBuilder, _like: Type) -> Var<'a> {
        fb.bool(self)
    }
}

macro_rules! arith_ops {
    ($($trait:ident :: $method:ident, $assign:ident :: $amethod:ident => $fop:ident / $iop:ident;)*) => {$(
        impl<'a, R: Operand<'a>> $trait<R> for Var<'a> {
            type Output = Var<'a>;
            fn $method(self, rhs: R) -> Var<'a> {
                let rhs = rhs.into_var(self.fb, self.ty);
                self.arith(rhs, Opcode::$fop, Opcode::$iop)
            }
        }
        impl<'a, R: Operand<'a>> $assign<R> for Var<'a> {
            fn $amethod(&mut self, rhs: R) {
                *self = $trait::$method(*self, rhs);
            }
        }
        impl<'a> $trait<Var<'a>> for f64 {
            type Output = Var<'a>;
            fn $method(self, rhs: Var<'a>) -> Var<'a> {
                self.into_var(rhs.fb, rhs.ty).arith(rhs, Opcode::$fop, Opcode::$iop)
            }
        }
        impl<'a> $trait<Var<'a>> for i64 {
            type Output = Var<'a>;
            fn $method(self, rhs: Var<'a>) -> Var<'a> {
                self.into_var(rhs.fb, rhs.ty).arith(rhs, Opcode::$fop, Opcode::$iop)
            }
        }
        // Only i64 on the left: with a second integer type `2 * i` would be ambiguous.
    )*};
}
arith_ops! {
    Add::add, AddAssign::add_assign => FAdd / IAdd;
    Sub::sub, SubAssign::sub_assign => FSub / ISub;
    Mul::mul, MulAssign::mul_assign => FMul / IMul;
    Div::div, DivAssign::div_assign => FDiv / IDiv;
}

/// `%` is integer remainder (`irem`); the IR has no float remainder.
impl<'a, R: Operand<'a>> Rem<R> for Var<'a> {
    type Output = Var<'a>;
    fn rem(self, rhs: R) -> Var<'a> {
        let rhs = rhs.into_var(self.fb, self.ty);
        self.fb.op(Opcode::IRem, &[self, rhs])
    }
}

/// `-x`: `ineg` for `i64`, `fneg` otherwise.
impl<'a> Neg for Var<'a> {
    type Output = Var<'a>;
    fn neg(self) -> Var<'a> {
        self.unary(if self.ty == Type::I64 { Opcode::INeg } else { Opcode::FNeg })
    }
}
/// `!b`: boolean `not`.
impl<'a> Not for Var<'a> {
    type Output = Var<'a>;
    fn not(self) -> Var<'a> {
        self.unary(Opcode::Not)
    }
}
/// `a & b`: boolean `and`.
impl<'a, R: Operand<'a>> BitAnd<R> for Var<'a> {
    type Output = Var<'a>;
    fn bitand(self, rhs: R) -> Var<'a> {
        self.binary(Opcode::And, rhs)
    }
}
/// `a | b`: boolean `or`.
impl<'a, R: Operand<'a>> BitOr<R> for Var<'a> {
    type Output = Var<'a>;
    fn bitor(self, rhs: R) -> Var<'a> {
        self.binary(Opcode::Or, rhs)
    }
}

/// The shapes that loop-carried values and branch results take: `()`, one [`Var`], an array
/// `[Var; N]`, a tuple of up to four `Var`s, or a `Vec<Var>` (any length, checked when built).
pub trait VarList<'a> {
    /// The values, in order.
    fn to_vars(&self) -> Vec<Var<'a>>;
    /// Rebuild from values; `vars` has as many values as `to_vars` of a value of this type gave.
    fn from_vars(vars: &[Var<'a>]) -> Self;
}
impl<'a> VarList<'a> for () {
    fn to_vars(&self) -> Vec<Var<'a>> {
        vec![]
    }
    fn from_vars(_: &[Var<'a>]) {}
}
impl<'a> VarList<'a> for Var<'a> {
    fn to_vars(&self) -> Vec<Var<'a>> {
        vec![*self]
    }
    fn from_vars(vars: &[Var<'a>]) -> Var<'a> {
        vars[0]
    }
}
impl<'a, const N: usize> VarList<'a> for [Var<'a>; N] {
    fn to_vars(&self) -> Vec<Var<'a>> {
        self.to_vec()
    }
    fn from_vars(vars: &[Var<'a>]) -> [Var<'a>; N] {
        std::array::from_fn(|k| vars[k])
    }
}
impl<'a> VarList<'a> for Vec<Var<'a>> {
    fn to_vars(&self) -> Vec<Var<'a>> {
        self.clone()
    }
    fn from_vars(vars: &[Var<'a>]) -> Vec<Var<'a>> {
        vars.to_vec()
    }
}
impl<'a> VarList<'a> for (Var<'a>, Var<'a>) {
    fn to_vars(&self) -> Vec<Var<'a>> {
        vec![self.0, self.1]
    }
    fn from_vars(v: &[Var<'a>]) -> Self {
        (v[0], v[1])
    }
}
impl<'a> VarList<'a> for (Var<'a>, Var<'a>, Var<'a>) {
    fn to_vars(&self) -> Vec<Var<'a>> {
        vec![self.0, self.1, self.2]
    }
    fn from_vars(v: &[Var<'a>]) -> Self {
        (v[0], v[1], v[2])
    }
}
impl<'a> VarList<'a> for (Var<'a>, Var<'a>, Var<'a>, Var<'a>) {
    fn to_vars(&self) -> Vec<Var<'a>> {
        vec![self.0, self.1, self.2, self.3]
    }
    fn from_vars(v: &[Var<'a>]) -> Self {
        (v[0], v[1], v[2], v[3])
    }
}
