//! The semantics of the pure primitives, shared by the interpreter and constant folding so the
//! two can never disagree. Float math goes through the op table's [`MathFn`] entries, i.e. the
//! very functions of [`crate::math`] the JIT calls.

use super::RuntimeValue;
use crate::function::Imm;
use crate::opcode::{MathFn, Opcode, Shape};

/// A pure operation that cannot produce a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EvalError {
    /// `idiv`/`irem` with a zero divisor.
    DivisionByZero,
    /// The opcode is not of the kind asked for (a caller bug or unverified IR).
    WrongOpcode,
}

/// A float unary op on one lane: `fneg` or a library function (`sqrt`, `sin` ...).
#[inline]
pub fn float_unary(op: Opcode, x: f64) -> Result<f64, EvalError> {
    match (op, op.info().math) {
        (Opcode::FNeg, _) => Ok(-x),
        (_, MathFn::Unary(f)) => Ok(f(x)),
        _ => Err(EvalError::WrongOpcode),
    }
}

/// A float binary op on one lane: IEEE `fadd fsub fmul fdiv`, the strong-zero product
/// `fmulsz` or a library function (`min max pow atan2 hypot`).
#[inline]
pub fn float_binary(op: Opcode, a: f64, b: f64) -> Result<f64, EvalError> {
    match op {
        Opcode::FAdd => Ok(a + b),
        Opcode::FSub => Ok(a - b),
        Opcode::FMul => Ok(a * b),
        // The strong zero of derivative code: a zero factor (either one; -0 counts) gives +0,
        // even against an infinite or NaN factor.
        Opcode::FMulSz => Ok(if a == 0.0 || b == 0.0 { 0.0 } else { a * b }),
        Opcode::FDiv => Ok(a / b),
        _ => match op.info().math {
            MathFn::Binary(f) => Ok(f(a, b)),
            _ => Err(EvalError::WrongOpcode),
        },
    }
}

/// `powi x, n`.
#[inline]
pub fn powi(x: f64, n: i64) -> f64 {
    match Opcode::Powi.info().math {
        MathFn::Powi(f) => f(x, n),
        _ => crate::math::powi(x, n),
    }
}

/// `fma a, b, c`: `a * b + c` with one rounding.
#[inline]
pub fn fma(a: f64, b: f64, c: f64) -> f64 {
    match Opcode::Fma.info().math {
        MathFn::Ternary(f) => f(a, b, c),
        _ => crate::math::fma(a, b, c),
    }
}

/// An integer binary op. Arithmetic wraps; `idiv`/`irem` by zero is an error; `MIN / -1` wraps to
/// `MIN` and `MIN % -1` is 0.
#[inline]
pub fn int_binary(op: Opcode, a: i64, b: i64) -> Result<i64, EvalError> {
    match op {
        Opcode::IAdd => Ok(a.wrapping_add(b)),
        Opcode::ISub => Ok(a.wrapping_sub(b)),
        Opcode::IMul => Ok(a.wrapping_mul(b)),
        Opcode::IDiv if b == 0 => Err(EvalError::DivisionByZero),
        Opcode::IDiv => Ok(a.wrapping_div(b)),
        Opcode::IRem if b == 0 => Err(EvalError::DivisionByZero),
        Opcode::IRem => Ok(a.wrapping_rem(b)),
        Opcode::IAnd => Ok(a & b),
        Opcode::IOr => Ok(a | b),
        Opcode::IXor => Ok(a ^ b),
        // The shift amount modulo 64, as Rust's `wrapping_shl` (and Cranelift's `ishl`).
        Opcode::IShl => Ok(a.wrapping_shl(b as u32)),
        Opcode::IShr => Ok(a.wrapping_shr(b as u32)),
        Opcode::UShr => Ok(((a as u64).wrapping_shr(b as u32)) as i64),
        _ => Err(EvalError::WrongOpcode),
    }
}

/// `ineg` (wrapping).
#[inline]
pub fn int_unary(op: Opcode, a: i64) -> Result<i64, EvalError> {
    match op {
        Opcode::INeg => Ok(a.wrapping_neg()),
        _ => Err(EvalError::WrongOpcode),
    }
}

/// `and`/`or`.
#[inline]
pub fn bool_binary(op: Opcode, a: bool, b: bool) -> Result<bool, EvalError> {
    match op {
        Opcode::And => Ok(a && b),
        Opcode::Or => Ok(a || b),
        _ => Err(EvalError::WrongOpcode),
    }
}

/// `not`.
#[inline]
pub fn bool_unary(op: Opcode, a: bool) -> Result<bool, EvalError> {
    match op {
        Opcode::Not => Ok(!a),
        _ => Err(EvalError::WrongOpcode),
    }
}

/// `itof`: Rust's `as f64`.
#[inline]
pub fn int_to_float(i: i64) -> f64 {
    i as f64
}

/// `ftoi`: Rust's `as i64` (truncating, saturating, NaN gives 0).
#[inline]
pub fn float_to_int(x: f64) -> i64 {
    x as i64
}

/// Evaluate a pure, memory-free instruction on known operands: the single definition of every
/// such op's result. Returns `None` for ops that read memory, call out or use the tape (`len load
/// vload store vstore call tpush tpop alloc table`; reads of tables fold in
/// [`fold_table_reads`](crate::passes::fold_table_reads)), when the evaluation would fail (`idiv` by zero) and when the operands do not
/// fit the op's shape.
///
/// ```
/// use jitdiff_ir::interp::eval_pure;
/// use jitdiff_ir::{Imm, Opcode, RuntimeValue};
/// let r = eval_pure(Opcode::FAdd, &Imm::None, &[RuntimeValue::F64(1.5), RuntimeValue::F64(2.0)]);
/// assert_eq!(r, Some(RuntimeValue::F64(3.5)));
/// assert_eq!(eval_pure(Opcode::IDiv, &Imm::None, &[RuntimeValue::I64(1), RuntimeValue::I64(0)]), None);
/// ```
pub fn eval_pure(op: Opcode, imm: &Imm, args: &[RuntimeValue]) -> Option<RuntimeValue> {
    use RuntimeValue as V;
    let lanewise = |f: &dyn Fn(f64, f64) -> Result<f64, EvalError>| -> Option<RuntimeValue> {
        match args {
            [V::F64(a), V::F64(b)] => f(*a, *b).ok().map(V::F64),
            [V::Vector(a), V::Vector(b)] if a.len() == b.len() => {
                a.iter().zip(b).map(|(x, y)| f(*x, *y)).collect::<Result<Vec<_>, _>>().ok().map(V::Vector)
            }
            _ => None,
        }
    };
    match op.shape() {
        Shape::Const => match (op, imm, args) {
            (Opcode::FConst, Imm::F64(x), []) => Some(V::F64(*x)),
            (Opcode::IConst, Imm::I64(x), []) => Some(V::I64(*x)),
            (Opcode::BConst, Imm::Bool(x), []) => Some(V::Bool(*x)),
            _ => None,
        },
        Shape::FloatUnary { lanes } => match args {
            [V::F64(x)] => float_unary(op, *x).ok().map(V::F64),
            [V::Vector(v)] if lanes => {
                v.iter().map(|x| float_unary(op, *x)).collect::<Result<_, _>>().ok().map(V::Vector)
            }
            _ => None,
        },
        Shape::FloatBinary { lanes } => match args {
            [V::Vector(_), V::Vector(_)] if !lanes => None,
            _ => lanewise(&|a, b| float_binary(op, a, b)),
        },
        Shape::Powi => match args {
            [V::F64(x), V::I64(n)] => Some(V::F64(powi(*x, *n))),
            _ => None,
        },
        Shape::FloatTernary => match args {
            [V::F64(a), V::F64(b), V::F64(c)] => Some(V::F64(fma(*a, *b, *c))),
            [V::Vector(a), V::Vector(b), V::Vector(c)] if a.len() == b.len() && a.len() == c.len() => {
                Some(V::Vector(a.iter().zip(b.iter()).zip(c.iter()).map(|((a, b), c)| fma(*a, *b, *c)).collect()))
            }
            _ => None,
        },
        Shape::IntUnary => match args {
            [V::I64(a)] => int_unary(op, *a).ok().map(V::I64),
            _ => None,
        },
        Shape::IntBinary => match args {
            [V::I64(a), V::I64(b)] => int_binary(op, *a, *b).ok().map(V::I64),
            _ => None,
        },
        Shape::BoolUnary => match args {
            [V::Bool(a)] => bool_unary(op, *a).ok().map(V::Bool),
            _ => None,
        },
        Shape::BoolBinary => match args {
            [V::Bool(a), V::Bool(b)] => bool_binary(op, *a, *b).ok().map(V::Bool),
            _ => None,
        },
        Shape::FloatCompare => match (args, imm) {
            ([V::F64(a), V::F64(b)], Imm::Cond(cc)) => Some(V::Bool(cc.eval_f64(*a, *b))),
            _ => None,
        },
        Shape::FloatTest => match args {
            [V::F64(a)] => Some(V::Bool(*a == 0.0)),
            [V::Vector(v)] => Some(V::Bool(v.iter().all(|&x| x == 0.0))),
            _ => None,
        },
        Shape::IntCompare => match (args, imm) {
            ([V::I64(a), V::I64(b)], Imm::Cond(cc)) => Some(V::Bool(cc.eval_i64(*a, *b))),
            _ => None,
        },
        Shape::Select => match args {
            [V::Bool(c), a, b] if std::mem::discriminant(a) == std::mem::discriminant(b) => {
                Some(if *c { a.clone() } else { b.clone() })
            }
            _ => None,
        },
        Shape::IntToFloat => match args {
            [V::I64(i)] => Some(V::F64(int_to_float(*i))),
            _ => None,
        },
        Shape::FloatToInt => match args {
            [V::F64(x)] => Some(V::I64(float_to_int(*x))),
            _ => None,
        },
        Shape::Splat => match (args, imm) {
            ([V::F64(x)], Imm::Type(crate::Type::F64x(w))) => Some(V::Vector(vec![*x; *w as usize])),
            _ => None,
        },
        Shape::Extract => match (args, imm) {
            ([V::Vector(v)], Imm::Lane(k)) => v.get(*k as usize).map(|x| V::F64(*x)),
            _ => None,
        },
        Shape::Insert => match (args, imm) {
            ([V::Vector(v), V::F64(x)], Imm::Lane(k)) if (*k as usize) < v.len() => {
                let mut v = v.clone();
                v[*k as usize] = *x;
                Some(V::Vector(v))
            }
            _ => None,
        },
        Shape::Len
        | Shape::Alloc
        | Shape::Load
        | Shape::Store
        | Shape::VectorLoad
        | Shape::VectorStore
        | Shape::Call
        | Shape::TapePush
        | Shape::TapePop
        | Shape::TapeSplit
        | Shape::TapeRejoin
        | Shape::Trap
        | Shape::Table => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CondCode;
    use RuntimeValue as V;

    #[test]
    fn integer_edge_cases() {
        assert_eq!(int_binary(Opcode::IDiv, i64::MIN, -1), Ok(i64::MIN));
        assert_eq!(int_binary(Opcode::IRem, i64::MIN, -1), Ok(0));
        assert_eq!(int_binary(Opcode::IRem, -7, 2), Ok(-1));
        assert_eq!(int_binary(Opcode::IDiv, 3, 0), Err(EvalError::DivisionByZero));
        assert_eq!(int_binary(Opcode::IAdd, i64::MAX, 1), Ok(i64::MIN));
        assert_eq!(int_unary(Opcode::INeg, i64::MIN), Ok(i64::MIN));
    }

    #[test]
    fn eval_pure_covers_vectors_and_rejects_memory_ops() {
        let a = V::Vector(vec![1.0, 2.0]);
        let b = V::Vector(vec![3.0, -4.0]);
        assert_eq!(eval_pure(Opcode::FMul, &Imm::None, &[a.clone(), b]), Some(V::Vector(vec![3.0, -8.0])));
        assert_eq!(eval_pure(Opcode::Sin, &Imm::None, std::slice::from_ref(&a)), None);
        assert_eq!(eval_pure(Opcode::Extract, &Imm::Lane(1), std::slice::from_ref(&a)), Some(V::F64(2.0)));
        assert_eq!(eval_pure(Opcode::Len, &Imm::None, &[]), None);
        let nan = eval_pure(Opcode::FCmp, &Imm::Cond(CondCode::Ne), &[V::F64(f64::NAN), V::F64(1.0)]);
        assert_eq!(nan, Some(V::Bool(true)));
        assert_eq!(eval_pure(Opcode::FToI, &Imm::None, &[V::F64(f64::NAN)]), Some(V::I64(0)));
        assert_eq!(eval_pure(Opcode::FToI, &Imm::None, &[V::F64(1e300)]), Some(V::I64(i64::MAX)));
    }
}
