//! The op table: every primitive defined once — its name, text spelling, shape (operand and result
//! types) and numeric semantics. The printer, parser, verifier, interpreter and the JIT are driven
//! from this table; the rules crate keys its frules and rrules by [`Opcode`].

use crate::math;
use crate::types::Type;
use std::fmt;

/// The typing and operand shape of an opcode. `F` below is `f64`, or `f64xW` where the shape
/// says lanes are allowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// No operands; the immediate gives the value (`fconst 1.5`, `iconst 3`, `bconst true`).
    Const,
    /// `(F) -> F`.
    FloatUnary {
        /// Whether `f64xW` operands are allowed.
        lanes: bool,
    },
    /// `(F, F) -> F`.
    FloatBinary {
        /// Whether `f64xW` operands are allowed.
        lanes: bool,
    },
    /// `(F, F, F) -> F`, `F` one of `f64` and `f64xW`.
    FloatTernary,
    /// `(f64, i64) -> f64`.
    Powi,
    /// `(i64) -> i64`.
    IntUnary,
    /// `(i64, i64) -> i64`.
    IntBinary,
    /// `(bool) -> bool`.
    BoolUnary,
    /// `(bool, bool) -> bool`.
    BoolBinary,
    /// `(f64, f64) -> bool` with a condition code immediate.
    FloatCompare,
    /// `(F) -> bool`: a test of every lane.
    FloatTest,
    /// `(i64, i64) -> bool` with a condition code immediate.
    IntCompare,
    /// `(bool, T, T) -> T` for any non-slice `T`.
    Select,
    /// `(i64) -> f64`.
    IntToFloat,
    /// `(f64) -> i64`, truncating toward zero, saturating; NaN gives 0 (Rust's `as`).
    FloatToInt,
    /// `(slice) -> i64`.
    Len,
    /// `(slice, i64) -> f64`.
    Load,
    /// `(mslice, i64, f64) -> ()`.
    Store,
    /// `(slice, i64) -> f64xW`: lanes `W*i .. W*i+W`; the immediate is the result type.
    VectorLoad,
    /// `(mslice, i64, f64xW) -> ()`: lanes to `W*i .. W*i+W`.
    VectorStore,
    /// `(f64) -> f64xW`; the immediate is the result type.
    Splat,
    /// `(f64xW) -> f64` with a lane immediate.
    Extract,
    /// `(f64xW, f64) -> f64xW` with a lane immediate.
    Insert,
    /// A call to a module function or a declared extern; the immediate names the callee.
    Call,
    /// `(i64) -> mslice`: a fresh local array.
    Alloc,
    /// `() -> slice`: a read-only data table of the module (the immediate names it).
    Table,
    /// `(T) -> ()` for `T` in `f64`, `i64`, `bool`: append to the call's tape.
    TapePush,
    /// `() -> T` for `T` in `f64`, `i64`, `bool` (the immediate): read the tape backwards.
    TapePop,
    /// `() -> i64`: the read cursor, which moves to the end (a joint call's record starts).
    TapeSplit,
    /// `(i64) -> ()`: drop the entries from the cursor on and move the cursor to the operand.
    TapeRejoin,
    /// `() -> ()`: always fails (the source's `panic!`, a failed `assert!`).
    Trap,
}

/// The numeric semantics of a float primitive: the function the interpreter evaluates and the
/// JIT calls when it has no inline lowering.
#[derive(Clone, Copy, Debug)]
pub enum MathFn {
    /// Not a library-math operation (arithmetic, memory, control ...).
    None,
    /// A one-argument math function.
    Unary(extern "C" fn(f64) -> f64),
    /// A two-argument math function.
    Binary(extern "C" fn(f64, f64) -> f64),
    /// `powi`.
    Powi(extern "C" fn(f64, i64) -> f64),
    /// A three-argument math function (`fma`).
    Ternary(extern "C" fn(f64, f64, f64) -> f64),
}

/// Everything the table says about one opcode.
#[derive(Clone, Copy, Debug)]
pub struct OpInfo {
    /// The opcode.
    pub opcode: Opcode,
    /// The text spelling (`fadd`, `sin`, `vload` ...).
    pub spelling: &'static str,
    /// Operand and result typing.
    pub shape: Shape,
    /// Numeric semantics for library math.
    pub math: MathFn,
    /// A short description, for docs and error messages.
    pub doc: &'static str,
}

macro_rules! op_table {
    ($($variant:ident => $spelling:literal, $shape:expr, $math:expr, $doc:literal;)*) => {
        /// An IR primitive. See [`Opcode::info`] for its table entry.
        ///
        /// ```
        /// use jitdiff_ir::Opcode;
        /// assert_eq!(Opcode::from_spelling("sin"), Some(Opcode::Sin));
        /// assert_eq!(Opcode::Sin.spelling(), "sin");
        /// ```
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Opcode { $(#[doc = $doc] $variant,)* }

        /// The op table, in [`Opcode`] order.
        pub static OP_TABLE: &[OpInfo] = &[
            $(OpInfo { opcode: Opcode::$variant, spelling: $spelling, shape: $shape, math: $math, doc: $doc },)*
        ];
    };
}

use MathFn::{Binary as B, None as N, Unary as U};
use Shape::*;

op_table! {
    FConst => "fconst", Const, N, "A float constant.";
    IConst => "iconst", Const, N, "An integer constant.";
    BConst => "bconst", Const, N, "A boolean constant.";
    FAdd => "fadd", FloatBinary { lanes: true }, N, "Float addition.";
    FSub => "fsub", FloatBinary { lanes: true }, N, "Float subtraction.";
    FMul => "fmul", FloatBinary { lanes: true }, N, "Float multiplication.";
    FMulSz => "fmulsz", FloatBinary { lanes: true }, N, "Strong-zero multiplication: `fmulsz a, b` is `a * b`, but +0 (lane-wise) where `a == 0` or `b == 0`, even when the other factor is infinite or NaN.";
    FDiv => "fdiv", FloatBinary { lanes: true }, N, "Float division.";
    FNeg => "fneg", FloatUnary { lanes: true }, N, "Float negation.";
    Sqrt => "sqrt", FloatUnary { lanes: false }, U(math::sqrt), "Square root.";
    Exp => "exp", FloatUnary { lanes: false }, U(math::exp), "e^x.";
    Ln => "ln", FloatUnary { lanes: false }, U(math::ln), "Natural logarithm.";
    Sin => "sin", FloatUnary { lanes: false }, U(math::sin), "Sine.";
    Cos => "cos", FloatUnary { lanes: false }, U(math::cos), "Cosine.";
    Tan => "tan", FloatUnary { lanes: false }, U(math::tan), "Tangent.";
    Tanh => "tanh", FloatUnary { lanes: false }, U(math::tanh), "Hyperbolic tangent.";
    Abs => "abs", FloatUnary { lanes: false }, U(math::abs), "Absolute value.";
    Log1p => "log1p", FloatUnary { lanes: false }, U(math::log1p), "ln(1 + x), accurate near 0.";
    Expm1 => "expm1", FloatUnary { lanes: false }, U(math::expm1), "e^x - 1, accurate near 0.";
    Floor => "floor", FloatUnary { lanes: false }, U(math::floor), "Round toward -inf.";
    Ceil => "ceil", FloatUnary { lanes: false }, U(math::ceil), "Round toward +inf.";
    Atan => "atan", FloatUnary { lanes: false }, U(math::atan), "Arc tangent.";
    Asin => "asin", FloatUnary { lanes: false }, U(math::asin), "Arc sine.";
    Acos => "acos", FloatUnary { lanes: false }, U(math::acos), "Arc cosine.";
    Sinh => "sinh", FloatUnary { lanes: false }, U(math::sinh), "Hyperbolic sine.";
    Cosh => "cosh", FloatUnary { lanes: false }, U(math::cosh), "Hyperbolic cosine.";
    Asinh => "asinh", FloatUnary { lanes: false }, U(math::asinh), "Inverse hyperbolic sine.";
    Acosh => "acosh", FloatUnary { lanes: false }, U(math::acosh), "Inverse hyperbolic cosine (NaN below 1).";
    Atanh => "atanh", FloatUnary { lanes: false }, U(math::atanh), "Inverse hyperbolic tangent (NaN outside [-1, 1]).";
    Sign => "sign", FloatUnary { lanes: false }, U(math::sign), "-1, 0 or 1.";
    Exp2 => "exp2", FloatUnary { lanes: false }, U(math::exp2), "2^x.";
    Log2 => "log2", FloatUnary { lanes: false }, U(math::log2), "Base-2 logarithm.";
    Log10 => "log10", FloatUnary { lanes: false }, U(math::log10), "Base-10 logarithm.";
    Cbrt => "cbrt", FloatUnary { lanes: false }, U(math::cbrt), "Cube root (of negative numbers too).";
    Round => "round", FloatUnary { lanes: false }, U(math::round), "Round to nearest, half away from zero.";
    Trunc => "trunc", FloatUnary { lanes: false }, U(math::trunc), "Round toward zero.";
    Min => "min", FloatBinary { lanes: false }, B(math::min), "Minimum: `a < b ? a : b`.";
    Max => "max", FloatBinary { lanes: false }, B(math::max), "Maximum: `a > b ? a : b`.";
    Pow => "pow", FloatBinary { lanes: false }, B(math::pow), "x^y for real y.";
    Atan2 => "atan2", FloatBinary { lanes: false }, B(math::atan2), "atan2(y, x).";
    Hypot => "hypot", FloatBinary { lanes: false }, B(math::hypot), "sqrt(x^2 + y^2) without overflow.";
    FRem => "frem", FloatBinary { lanes: false }, B(math::frem), "Remainder x - trunc(x / y) y, exact (Rust's `%`, C's `fmod`).";
    Powi => "powi", Powi, MathFn::Powi(math::powi), "x^n for integer n.";
    Fma => "fma", FloatTernary, MathFn::Ternary(math::fma), "`fma a, b, c`: a * b + c with one rounding (lane-wise for f64xW).";
    IAdd => "iadd", IntBinary, N, "Integer addition (wrapping).";
    ISub => "isub", IntBinary, N, "Integer subtraction (wrapping).";
    IMul => "imul", IntBinary, N, "Integer multiplication (wrapping).";
    IDiv => "idiv", IntBinary, N, "Integer division toward zero; division by zero is an error, MIN / -1 wraps.";
    IRem => "irem", IntBinary, N, "Integer remainder (sign of the dividend); by zero is an error, MIN % -1 is 0.";
    INeg => "ineg", IntUnary, N, "Integer negation (wrapping).";
    IAnd => "iand", IntBinary, N, "Bitwise and of two integers.";
    IOr => "ior", IntBinary, N, "Bitwise or of two integers.";
    IXor => "ixor", IntBinary, N, "Bitwise exclusive or of two integers.";
    IShl => "ishl", IntBinary, N, "`ishl a, k`: a shifted left by `k mod 64` bits (bits shifted out are lost).";
    IShr => "ishr", IntBinary, N, "`ishr a, k`: a shifted right by `k mod 64` bits, copying the sign bit.";
    UShr => "ushr", IntBinary, N, "`ushr a, k`: a shifted right by `k mod 64` bits, filling with zeros.";
    And => "and", BoolBinary, N, "Boolean and.";
    Or => "or", BoolBinary, N, "Boolean or.";
    Not => "not", BoolUnary, N, "Boolean not.";
    FCmp => "fcmp", FloatCompare, N, "Float comparison (false when either operand is NaN, except `ne`).";
    IsZero => "iszero", FloatTest, N, "`iszero x`: `x == 0` (±0; every lane of an `f64xW`). Its forward-mode rule also asks the tangent to be zero: a branch on it may skip code whose effect is zero *to first order* when `x` is (reverse mode's skipped zero-cotangent loops, `ad/src/reverse/skip.rs`); reverse mode treats it as `false`.";
    ICmp => "icmp", IntCompare, N, "Integer comparison.";
    Select => "select", Select, N, "`select c, a, b` is `a` when `c`, else `b`.";
    IToF => "itof", IntToFloat, N, "Integer to float.";
    FToI => "ftoi", FloatToInt, N, "Float to integer, truncating and saturating (NaN gives 0).";
    Len => "len", Len, N, "The length of a slice.";
    Load => "load", Load, N, "`load s, i` reads `s[i]`; out of bounds is an error.";
    Store => "store", Store, N, "`store s, i, x` writes `s[i] = x`; out of bounds is an error.";
    VLoad => "vload", VectorLoad, N, "`vload.f64xW s, i` reads lanes `s[W*i .. W*i+W]`.";
    VStore => "vstore", VectorStore, N, "`vstore s, i, v` writes lanes `s[W*i .. W*i+W]`.";
    Splat => "splat", Splat, N, "`splat.f64xW x`: every lane equal to `x`.";
    Extract => "extract", Extract, N, "`extract v, k`: lane `k` of `v`.";
    Insert => "insert", Insert, N, "`insert v, k, x`: `v` with lane `k` replaced by `x`.";
    Call => "call", Call, N, "`call @f(args)`: a module function or a declared extern.";
    Alloc => "alloc", Alloc, N, "`a = alloc n`: a local array of `n` zeros, an `mslice` owned by this call and freed when it returns. Only in the entry block (so it is allocated once per call and dominates every use); `n < 0` or a failed allocation is an error.";
    Table => "table", Table, N, "`t = table @name`: the module's read-only data table `@name` as a `slice` (a constant: no operands, defined anywhere, never written).";
    TPush => "tpush", TapePush, N, "`tpush x`: append `x` (f64, i64 or bool) to the tape of this call; the tape grows without limit (allocation failure is an error).";
    TPop => "tpop", TapePop, N, "`x = tpop.T`: move the tape's read cursor back one entry and read it as `T`; reading before the start is an error. Entries stay, so a pullback can be run again.";
    TSplit => "tsplit", TapeSplit, N, "`c = tsplit`: return the read cursor and move it to the end of the tape, so that what is pushed next and popped again (a checkpointed segment, recomputed in a pullback) lies above the entries still to be read. Paired with `trejoin c`.";
    TRejoin => "trejoin", TapeRejoin, N, "`trejoin c`: drop the entries from the read cursor on (the segment pushed and popped since `c = tsplit`) and move the cursor back to `c`; `c` above the cursor is an error (underflow).";
    Trap => "trap", Trap, N, "`trap`: stop with an error (a `Panic` fault at this instruction) — the Rust front end's `panic!`, `unreachable!` and failed `assert!`. Never removed, moved or merged; derivatives stop at the same point.";
}

impl Opcode {
    /// This opcode's table entry.
    pub fn info(self) -> &'static OpInfo {
        &OP_TABLE[self as usize]
    }
    /// The text spelling.
    pub fn spelling(self) -> &'static str {
        self.info().spelling
    }
    /// The operand shape.
    pub fn shape(self) -> Shape {
        self.info().shape
    }
    /// Look an opcode up by its text spelling.
    pub fn from_spelling(s: &str) -> Option<Opcode> {
        OP_TABLE.iter().find(|i| i.spelling == s).map(|i| i.opcode)
    }
    /// Every opcode, in table order.
    pub fn all() -> impl Iterator<Item = Opcode> {
        OP_TABLE.iter().map(|i| i.opcode)
    }
    /// Does this instruction write memory or call out (so it must not be removed or merged)?
    pub fn has_side_effects(self) -> bool {
        matches!(
            self,
            Opcode::Store
                | Opcode::VStore
                | Opcode::Call
                | Opcode::TPush
                | Opcode::TPop
                | Opcode::TSplit
                | Opcode::TRejoin
                | Opcode::Alloc
                | Opcode::Trap
        )
    }
    /// Does native code compute it by calling a library function (`exp`, `tanh`, `pow`, ...)?
    /// Such a call keeps no float register, so values live across it are kept on the stack.
    /// The others with a [`MathFn`] (`sqrt`, `abs`, rounding, `min`/`max`, `fma`, `powi` by a
    /// small constant) are machine instructions.
    ///
    /// ```
    /// use jitdiff_ir::Opcode;
    /// assert!(Opcode::Tanh.calls_library() && !Opcode::Sqrt.calls_library() && !Opcode::FMul.calls_library());
    /// ```
    pub fn calls_library(self) -> bool {
        use Opcode::{Abs, Ceil, Floor, Fma, Max, Min, Powi, Sqrt, Trunc};
        matches!(self.info().math, MathFn::Unary(_) | MathFn::Binary(_))
            && !matches!(self, Sqrt | Abs | Floor | Ceil | Trunc | Min | Max | Fma | Powi)
    }
    /// Can this instruction fail at run time (out-of-bounds index, division by zero, a call)?
    /// Such instructions are kept by dead-code elimination even when their result is unused.
    pub fn can_fail(self) -> bool {
        matches!(
            self,
            Opcode::Load
                | Opcode::VLoad
                | Opcode::Store
                | Opcode::VStore
                | Opcode::IDiv
                | Opcode::IRem
                | Opcode::Call
                | Opcode::Alloc
                | Opcode::TPush
                | Opcode::TPop
                | Opcode::TRejoin
                | Opcode::Trap
        )
    }
    /// The result type of a pure, non-call instruction given its argument types and immediate,
    /// or `None` when the operands do not fit the shape. Calls are typed by their callee.
    pub fn result_type(self, args: &[Type], imm: &crate::Imm) -> Option<Option<Type>> {
        use crate::Imm;
        let t = |i: usize| args.get(i).copied();
        let arity_ok = |n: usize| args.len() == n;
        Some(match self.shape() {
            Const => {
                if !arity_ok(0) {
                    return None;
                }
                match (self, imm) {
                    (Opcode::FConst, Imm::F64(_)) => Some(Type::F64),
                    (Opcode::IConst, Imm::I64(_)) => Some(Type::I64),
                    (Opcode::BConst, Imm::Bool(_)) => Some(Type::Bool),
                    _ => return None,
                }
            }
            FloatUnary { lanes } => {
                let a = t(0)?;
                if !arity_ok(1) || !(a == Type::F64 || (lanes && matches!(a, Type::F64x(_)))) {
                    return None;
                }
                Some(a)
            }
            FloatBinary { lanes } => {
                let (a, b) = (t(0)?, t(1)?);
                if !arity_ok(2) || a != b || !(a == Type::F64 || (lanes && matches!(a, Type::F64x(_)))) {
                    return None;
                }
                Some(a)
            }
            Powi => (arity_ok(2) && t(0)? == Type::F64 && t(1)? == Type::I64).then_some(Some(Type::F64))?,
            FloatTernary => {
                let a = t(0)?;
                if !arity_ok(3) || args.iter().any(|&b| b != a) || !matches!(a, Type::F64 | Type::F64x(_)) {
                    return None;
                }
                Some(a)
            }
            IntUnary => (arity_ok(1) && t(0)? == Type::I64).then_some(Some(Type::I64))?,
            IntBinary => (arity_ok(2) && t(0)? == Type::I64 && t(1)? == Type::I64).then_some(Some(Type::I64))?,
            BoolUnary => (arity_ok(1) && t(0)? == Type::Bool).then_some(Some(Type::Bool))?,
            BoolBinary => (arity_ok(2) && t(0)? == Type::Bool && t(1)? == Type::Bool).then_some(Some(Type::Bool))?,
            FloatCompare => (arity_ok(2) && t(0)? == Type::F64 && t(1)? == Type::F64 && matches!(imm, Imm::Cond(_)))
                .then_some(Some(Type::Bool))?,
            FloatTest => {
                (arity_ok(1) && (t(0)? == Type::F64 || matches!(t(0)?, Type::F64x(_)))).then_some(Some(Type::Bool))?
            }
            IntCompare => (arity_ok(2) && t(0)? == Type::I64 && t(1)? == Type::I64 && matches!(imm, Imm::Cond(_)))
                .then_some(Some(Type::Bool))?,
            Select => {
                let (c, a, b) = (t(0)?, t(1)?, t(2)?);
                if !arity_ok(3) || c != Type::Bool || a != b || a.is_slice() {
                    return None;
                }
                Some(a)
            }
            IntToFloat => (arity_ok(1) && t(0)? == Type::I64).then_some(Some(Type::F64))?,
            FloatToInt => (arity_ok(1) && t(0)? == Type::F64).then_some(Some(Type::I64))?,
            Len => (arity_ok(1) && t(0)?.is_slice()).then_some(Some(Type::I64))?,
            Load => (arity_ok(2) && t(0)?.is_slice() && t(1)? == Type::I64).then_some(Some(Type::F64))?,
            Store => {
                (arity_ok(3) && t(0)? == Type::SliceMut && t(1)? == Type::I64 && t(2)? == Type::F64).then_some(None)?
            }
            VectorLoad => match imm {
                Imm::Type(v @ Type::F64x(_)) if arity_ok(2) && t(0)?.is_slice() && t(1)? == Type::I64 => Some(*v),
                _ => return None,
            },
            VectorStore => {
                (arity_ok(3) && t(0)? == Type::SliceMut && t(1)? == Type::I64 && matches!(t(2)?, Type::F64x(_)))
                    .then_some(None)?
            }
            Splat => match imm {
                Imm::Type(v @ Type::F64x(_)) if arity_ok(1) && t(0)? == Type::F64 => Some(*v),
                _ => return None,
            },
            Extract => match (t(0)?, imm) {
                (Type::F64x(w), Imm::Lane(k)) if arity_ok(1) && *k < w => Some(Type::F64),
                _ => return None,
            },
            Insert => match (t(0)?, imm) {
                (v @ Type::F64x(w), Imm::Lane(k)) if arity_ok(2) && *k < w && t(1)? == Type::F64 => Some(v),
                _ => return None,
            },
            Alloc => (arity_ok(1) && t(0)? == Type::I64).then_some(Some(Type::SliceMut))?,
            Table => match imm {
                Imm::Table(_) if arity_ok(0) => Some(Type::Slice),
                _ => return None,
            },
            TapePush => (arity_ok(1) && matches!(t(0)?, Type::F64 | Type::I64 | Type::Bool)).then_some(None)?,
            TapePop => match imm {
                Imm::Type(v @ (Type::F64 | Type::I64 | Type::Bool)) if arity_ok(0) => Some(*v),
                _ => return None,
            },
            TapeSplit => arity_ok(0).then_some(Some(Type::I64))?,
            TapeRejoin => (arity_ok(1) && t(0)? == Type::I64).then_some(None)?,
            Trap => arity_ok(0).then_some(None)?,
            Call => return None,
        })
    }
}

impl fmt::Display for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.spelling())
    }
}

/// A comparison condition for `fcmp` and `icmp`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CondCode {
    /// `==`
    Eq,
    /// `!=` (true for float NaN operands)
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl CondCode {
    /// All conditions.
    pub const ALL: [CondCode; 6] = [CondCode::Eq, CondCode::Ne, CondCode::Lt, CondCode::Le, CondCode::Gt, CondCode::Ge];
    /// Text spelling: `eq ne lt le gt ge`.
    pub fn spelling(self) -> &'static str {
        match self {
            CondCode::Eq => "eq",
            CondCode::Ne => "ne",
            CondCode::Lt => "lt",
            CondCode::Le => "le",
            CondCode::Gt => "gt",
            CondCode::Ge => "ge",
        }
    }
    /// The condition with the operands swapped: `a cc b` is `b cc.swapped() a`.
    ///
    /// ```
    /// use jitdiff_ir::CondCode;
    /// assert_eq!(CondCode::Lt.swapped(), CondCode::Gt);
    /// assert!(CondCode::Le.swapped().eval_i64(5, 3) == CondCode::Le.eval_i64(3, 5));
    /// ```
    pub fn swapped(self) -> CondCode {
        match self {
            CondCode::Lt => CondCode::Gt,
            CondCode::Le => CondCode::Ge,
            CondCode::Gt => CondCode::Lt,
            CondCode::Ge => CondCode::Le,
            other => other,
        }
    }
    /// The integer condition true exactly when this one is false (not for floats, where NaN
    /// makes both false).
    ///
    /// ```
    /// use jitdiff_ir::CondCode;
    /// assert_eq!(CondCode::Lt.complement(), CondCode::Ge);
    /// ```
    pub fn complement(self) -> CondCode {
        match self {
            CondCode::Eq => CondCode::Ne,
            CondCode::Ne => CondCode::Eq,
            CondCode::Lt => CondCode::Ge,
            CondCode::Le => CondCode::Gt,
            CondCode::Gt => CondCode::Le,
            CondCode::Ge => CondCode::Lt,
        }
    }
    /// Parse a spelling.
    pub fn from_spelling(s: &str) -> Option<CondCode> {
        CondCode::ALL.into_iter().find(|c| c.spelling() == s)
    }
    /// Evaluate on floats (IEEE: every comparison with NaN is false except `ne`).
    pub fn eval_f64(self, a: f64, b: f64) -> bool {
        match self {
            CondCode::Eq => a == b,
            CondCode::Ne => a != b,
            CondCode::Lt => a < b,
            CondCode::Le => a <= b,
            CondCode::Gt => a > b,
            CondCode::Ge => a >= b,
        }
    }
    /// Evaluate on integers.
    pub fn eval_i64(self, a: i64, b: i64) -> bool {
        match self {
            CondCode::Eq => a == b,
            CondCode::Ne => a != b,
            CondCode::Lt => a < b,
            CondCode::Le => a <= b,
            CondCode::Gt => a > b,
            CondCode::Ge => a >= b,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn table_is_in_enum_order_and_spellings_are_unique() {
        for (i, info) in OP_TABLE.iter().enumerate() {
            assert_eq!(info.opcode as usize, i, "{:?} out of order", info.opcode);
            assert_eq!(Opcode::from_spelling(info.spelling), Some(info.opcode));
        }
    }
}
