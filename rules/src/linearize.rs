//! The linearization of every primitive: for each active operand, the factor by which its tangent
//! contributes to the result's tangent. Forward mode multiplies these factors by tangents;
//! reverse mode multiplies them by the result's cotangent and accumulates into the operands'
//! cotangents (the transpose of the same linear map), so one table serves both modes, as JAX's
//! JVP and transpose rules do.
//!
//! What a reverse-mode pullback *captures* for an operation is exactly the set of [`Coef::Scale`]
//! values of its active operands: `exp` captures its result, `fmul` captures `b` only when `a` is
//! active and `a` only when `b` is.
//!
//! ## Conventions at non-differentiable points
//!
//! | primitive | point | derivative chosen |
//! |---|---|---|
//! | `abs` | 0 | 0 (the middle of the subdifferential [-1, 1]) |
//! | `sqrt` | 0 | +inf |
//! | `ln`, `log1p` | 0, -1 | +inf |
//! | `fdiv a, b` | b = 0 | `1/b` for `a`, `-(a/b)/b` for `b` (infinite or NaN) |
//! | `asin`, `acos` | ±1 | ±inf |
//! | `min`, `max` | a tie `a == b` | 1/2 to each operand |
//! | `hypot` | (0, 0) | 0 to both |
//! | `atan2` | (0, 0) | 0 to both |
//! | `pow x, y` | y = 0 | 0 for `x` (also at x = 0, where `y x^(y-1)` is `0 · inf`) |
//! | `pow x, y` | x = 0 | `y x^(y-1)` for `x` (+inf for 0 < y < 1); 0 for `y` |
//! | `powi x, n` | n = 0 | 0 (also at x = 0); `n = i64::MIN` uses `x^n / x` for `x^(n-1)` |
//! | `log2`, `log10` | 0 | +inf |
//! | `cbrt` | 0 | +inf |
//! | `floor`, `ceil`, `round`, `trunc`, `sign` | everywhere | 0 (piecewise constant: `ZeroTangent`) |
//!
//! ## Strong zeros
//!
//! Every product of a partial by a (co)tangent that may meet an infinite factor is a *strong
//! zero* product (`fmulsz`): zero when either factor is zero. Partials that can be infinite at a
//! finite point are [`Coef::ScaleStrong`] ([`has_singular_partials`] says which primitives have
//! them); the transforms multiply those with `fmulsz` always, and the other partials with
//! `fmulsz` too whenever the program has a primitive whose partial is infinite where its value
//! is finite (an infinite tangent can then reach them in a program whose values are finite). So a zero seed, a zero cotangent of a branch not taken, and a zero partial
//! downstream of an infinite one all give exactly zero, in both modes: forward and reverse mode
//! compute the same sum over paths of products of partials, a path with a zero factor counting
//! zero.

use crate::emit::Emit;
use jitdiff_ir::{CondCode, Imm, Opcode, Value};

/// How an operand's tangent scales into the result's tangent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Coef {
    /// Passes through unchanged.
    One,
    /// Passes through negated.
    MinusOne,
    /// Multiplied by a (scalar `f64`) partial derivative.
    Scale(Value),
    /// Multiplied by a partial that may be infinite at a finite point, with the strong-zero
    /// product `fmulsz` (`0 · p = p · 0 = 0`): a zero tangent (or a zero cotangent from a branch
    /// not taken) never becomes NaN.
    ScaleStrong(Value),
    /// Passes through when the `bool` value is true, else contributes zero (`select`'s first arm).
    When(Value),
    /// Passes through when the `bool` value is false, else contributes zero (`select`'s second arm).
    Unless(Value),
}

/// One operand's contribution to the result's tangent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Term {
    /// The operand index in the instruction's `args`.
    pub operand: usize,
    /// Its factor.
    pub coef: Coef,
}

/// What differentiating one instruction means.
#[derive(Clone, Debug, PartialEq)]
pub enum Linearization {
    /// The result's tangent is the sum of the terms over active operands.
    Terms(Vec<Term>),
    /// The result is a float whose tangent is identically zero (`ZeroTangent`): piecewise-constant
    /// operations such as `floor`.
    Zero,
    /// The result has no tangent at all (`NoTangent`): integers, booleans, no result.
    NoTangent,
    /// Memory, calls and lane shuffles: the transform handles these itself, since their
    /// derivatives read and write tangent slices or callee rules rather than scale operands.
    Structural,
}

/// Is `op` a float operation whose derivative is zero wherever it exists (`floor`, `ceil`,
/// `round`, `trunc`, `sign`)? Activity analysis stops at these: nothing downstream pays.
///
/// ```
/// assert!(jitdiff_rules::is_piecewise_constant(jitdiff_ir::Opcode::Round));
/// assert!(!jitdiff_rules::is_piecewise_constant(jitdiff_ir::Opcode::Exp));
/// ```
pub fn is_piecewise_constant(op: Opcode) -> bool {
    matches!(op, Opcode::Floor | Opcode::Ceil | Opcode::Sign | Opcode::Round | Opcode::Trunc)
}

/// The linearization of `op` applied to `args` with result `result`, emitting whatever partials
/// are needed through `em`. `active[i]` says whether operand `i` carries a tangent; partials are
/// emitted only for active operands.
///
/// ```
/// use jitdiff_ir::{Function, Imm, Opcode, Type};
/// use jitdiff_rules::{BlockEmitter, Emit, Linearization, Coef, linearize};
/// let mut f = Function::new("f", vec![Type::F64]);
/// let entry = f.add_block("entry");
/// let x = f.add_param(Type::F64, Some("x"));
/// let mut em = BlockEmitter::new(&mut f, entry);
/// let y = em.emit(Opcode::Exp, &[x], Imm::None);
/// // exp's derivative is its own result: nothing new is emitted.
/// assert_eq!(linearize(Opcode::Exp, &mut em, &[x], y, &[true]).terms()[0].coef, Coef::Scale(y));
/// ```
pub fn linearize(op: Opcode, em: &mut dyn Emit, args: &[Value], result: Value, active: &[bool]) -> Linearization {
    use Coef::*;
    use Opcode as O;
    let act = |i: usize| active.get(i).copied().unwrap_or(false);
    let mut terms = vec![];
    let mut push = |operand: usize, coef: Coef| terms.push(Term { operand, coef });
    match op {
        O::FConst | O::IConst | O::BConst => return Linearization::Zero,
        O::FAdd => {
            push(0, One);
            push(1, One);
        }
        O::FSub => {
            push(0, One);
            push(1, MinusOne);
        }
        O::FNeg => push(0, MinusOne),
        O::FMul => {
            push(0, Scale(args[1]));
            push(1, Scale(args[0]));
        }
        O::FMulSz => {
            // y = a ⊙ b (0 where either is 0): dy = b ⊙ da + a ⊙ db. Either factor may be
            // infinite (a partial of derivative code), and the other's zero cuts it off, so both
            // terms are strong-zero products: the derivative of a product that is identically
            // zero near a zero factor keeps that zero.
            push(0, ScaleStrong(args[1]));
            push(1, ScaleStrong(args[0]));
        }
        O::FDiv => {
            // y = a / b: dy = da / b - y db / b, both infinite at b = 0.
            if act(0) {
                let one = em.fconst(1.0);
                push(0, ScaleStrong(em.bin(O::FDiv, one, args[1])));
            }
            if act(1) {
                let q = em.bin(O::FDiv, result, args[1]);
                push(1, ScaleStrong(em.un(O::FNeg, q)));
            }
        }
        O::Sqrt => {
            let two_y = em.bin(O::FAdd, result, result);
            let one = em.fconst(1.0);
            push(0, ScaleStrong(em.bin(O::FDiv, one, two_y)));
        }
        O::Exp => push(0, Scale(result)),
        O::Ln => {
            let one = em.fconst(1.0);
            push(0, ScaleStrong(em.bin(O::FDiv, one, args[0])));
        }
        O::Log1p => {
            let one = em.fconst(1.0);
            let d = em.bin(O::FAdd, one, args[0]);
            push(0, ScaleStrong(em.bin(O::FDiv, one, d)));
        }
        O::Expm1 => {
            let one = em.fconst(1.0);
            push(0, Scale(em.bin(O::FAdd, result, one)));
        }
        O::Sin => push(0, Scale(em.un(O::Cos, args[0]))),
        O::Cos => {
            let s = em.un(O::Sin, args[0]);
            push(0, Scale(em.un(O::FNeg, s)));
        }
        O::Tan => {
            // 1 + tan^2, from the result: no second trigonometric call.
            let one = em.fconst(1.0);
            let y2 = em.bin(O::FMul, result, result);
            push(0, Scale(em.bin(O::FAdd, one, y2)));
        }
        O::Tanh => {
            // 1 - tanh^2 from the result; accurate where tanh saturates (it tends to 0, not -0 noise).
            let one = em.fconst(1.0);
            let y2 = em.bin(O::FMul, result, result);
            push(0, Scale(em.bin(O::FSub, one, y2)));
        }
        O::Abs => push(0, Scale(em.un(O::Sign, args[0]))),
        // Kept in step with `is_piecewise_constant` by a test over the op table.
        O::Floor | O::Ceil | O::Sign | O::Round | O::Trunc => return Linearization::Zero,
        O::Exp2 => {
            // d 2^x = ln 2 · 2^x, from the result.
            let ln2 = em.fconst(std::f64::consts::LN_2);
            push(0, Scale(em.bin(O::FMul, ln2, result)));
        }
        O::Log2 | O::Log10 => {
            // 1 / (x ln b): infinite at 0, where the value is -inf.
            let ln_base = em.fconst(if op == O::Log2 { std::f64::consts::LN_2 } else { std::f64::consts::LN_10 });
            let d = em.bin(O::FMul, args[0], ln_base);
            let one = em.fconst(1.0);
            push(0, ScaleStrong(em.bin(O::FDiv, one, d)));
        }
        O::Cbrt => {
            // 1 / (3 y²) from the result y: +inf at 0, where the value is 0.
            let y2 = em.bin(O::FMul, result, result);
            let three = em.fconst(3.0);
            let d = em.bin(O::FMul, three, y2);
            let one = em.fconst(1.0);
            push(0, ScaleStrong(em.bin(O::FDiv, one, d)));
        }
        O::Fma => {
            // a b + c: b for a, a for b, 1 for c.
            push(0, Scale(args[1]));
            push(1, Scale(args[0]));
            push(2, One);
        }
        O::Atan => {
            let one = em.fconst(1.0);
            let x2 = em.bin(O::FMul, args[0], args[0]);
            let d = em.bin(O::FAdd, one, x2);
            push(0, Scale(em.bin(O::FDiv, one, d)));
        }
        O::Asin | O::Acos => {
            let one = em.fconst(1.0);
            let x2 = em.bin(O::FMul, args[0], args[0]);
            let d = em.bin(O::FSub, one, x2);
            let r = em.un(O::Sqrt, d);
            let p = em.bin(O::FDiv, one, r);
            let p = if op == O::Acos { em.un(O::FNeg, p) } else { p };
            push(0, ScaleStrong(p));
        }
        O::Asinh => {
            // 1 / sqrt(x² + 1) as 1 / hypot(x, 1): no overflow for large x, finite everywhere.
            let one = em.fconst(1.0);
            let r = em.bin(O::Hypot, args[0], one);
            push(0, Scale(em.bin(O::FDiv, one, r)));
        }
        O::Acosh => {
            // 1 / sqrt(x² - 1) as 1 / (sqrt(x - 1) sqrt(x + 1)), accurate near 1: +inf at 1.
            let one = em.fconst(1.0);
            let below = em.bin(O::FSub, args[0], one);
            let above = em.bin(O::FAdd, args[0], one);
            let (rb, ra) = (em.un(O::Sqrt, below), em.un(O::Sqrt, above));
            let r = em.bin(O::FMul, rb, ra);
            push(0, ScaleStrong(em.bin(O::FDiv, one, r)));
        }
        O::Atanh => {
            // 1 / (1 - x²) as 1 / ((1 - x)(1 + x)), accurate near ±1: +inf at ±1.
            let one = em.fconst(1.0);
            let below = em.bin(O::FSub, one, args[0]);
            let above = em.bin(O::FAdd, one, args[0]);
            let d = em.bin(O::FMul, below, above);
            push(0, ScaleStrong(em.bin(O::FDiv, one, d)));
        }
        O::Sinh => push(0, Scale(em.un(O::Cosh, args[0]))),
        O::Cosh => push(0, Scale(em.un(O::Sinh, args[0]))),
        O::Min | O::Max => {
            // The operand the primal picks gets 1, the other 0; at a tie each gets 1/2. Strong
            // products: the operand not picked contributes an exact 0 even where its own
            // (co)tangent is infinite or NaN, as `select`'s arm not taken does.
            let cond = if op == O::Min { CondCode::Lt } else { CondCode::Gt };
            let picks_a = em.emit(O::FCmp, &[args[0], args[1]], Imm::Cond(cond));
            let tie = em.emit(O::FCmp, &[args[0], args[1]], Imm::Cond(CondCode::Eq));
            let (one, zero, half) = (em.fconst(1.0), em.fconst(0.0), em.fconst(0.5));
            if act(0) {
                let p = em.emit(O::Select, &[picks_a, one, zero], Imm::None);
                push(0, ScaleStrong(em.emit(O::Select, &[tie, half, p], Imm::None)));
            }
            if act(1) {
                let p = em.emit(O::Select, &[picks_a, zero, one], Imm::None);
                push(1, ScaleStrong(em.emit(O::Select, &[tie, half, p], Imm::None)));
            }
        }
        O::Pow => {
            // y = x^p: dy = p x^(p-1) dx + ln(x) y dp, with d/dp = 0 at x = 0. `p ⊙ x^(p-1)` is 0
            // at p = 0 even where x^(p-1) is infinite (x = 0): x^0 is constant.
            if act(0) {
                let one = em.fconst(1.0);
                let pm1 = em.bin(O::FSub, args[1], one);
                let xp = em.bin(O::Pow, args[0], pm1);
                push(0, ScaleStrong(em.bin(O::FMulSz, args[1], xp)));
            }
            if act(1) {
                let zero = em.fconst(0.0);
                let at_zero = em.emit(O::FCmp, &[args[0], zero], Imm::Cond(CondCode::Eq));
                let l = em.un(O::Ln, args[0]);
                let p = em.bin(O::FMul, l, result);
                push(1, Scale(em.emit(O::Select, &[at_zero, zero, p], Imm::None)));
            }
        }
        O::FRem => {
            // x - trunc(x / y) y between the jumps: 1 for x, -trunc(x / y) for y (as JAX and
            // PyTorch); the jumps, where x / y is an integer, take the same formula.
            push(0, One);
            if act(1) {
                let q = em.bin(O::FDiv, args[0], args[1]);
                let t = em.un(O::Trunc, q);
                push(1, Scale(em.un(O::FNeg, t)));
            }
        }
        O::Atan2 | O::Hypot => {
            // atan2(y, x): (x dy - y dx) / (x^2 + y^2); hypot(x, y): (x dx + y dy) / h. 0 at the origin.
            let zero = em.fconst(0.0);
            let (a, b) = (args[0], args[1]);
            let denominator = if op == O::Hypot {
                result
            } else {
                let a2 = em.bin(O::FMul, a, a);
                let b2 = em.bin(O::FMul, b, b);
                em.bin(O::FAdd, a2, b2)
            };
            let origin = em.emit(O::FCmp, &[denominator, zero], Imm::Cond(CondCode::Eq));
            let partial = |em: &mut dyn Emit, numerator: Value| {
                let q = em.bin(O::FDiv, numerator, denominator);
                em.emit(O::Select, &[origin, zero, q], Imm::None)
            };
            if act(0) {
                let numerator = if op == O::Hypot { a } else { b };
                let p = partial(em, numerator);
                push(0, Scale(p));
            }
            if act(1) {
                let numerator = if op == O::Hypot { b } else { em.un(O::FNeg, a) };
                let p = partial(em, numerator);
                push(1, Scale(p));
            }
        }
        O::Powi => {
            // d/dx x^n = n ⊙ x^(n-1): 0 for n = 0 even at x = 0 (x^0 is constant). For
            // n = i64::MIN, n - 1 would wrap, and x^(n-1) is x^n / x. (With a constant n, as
            // usual, the folder resolves the choice.) The exponent is an integer: no tangent.
            let (x, n) = (args[0], args[1]);
            let one = em.emit(O::IConst, &[], Imm::I64(1));
            let nm1 = em.emit(O::ISub, &[n, one], Imm::None);
            let min = em.emit(O::IConst, &[], Imm::I64(i64::MIN));
            let is_min = em.emit(O::ICmp, &[n, min], Imm::Cond(CondCode::Eq));
            let exponent = em.emit(O::Select, &[is_min, n, nm1], Imm::None);
            let power = em.emit(O::Powi, &[x, exponent], Imm::None);
            let over_x = em.bin(O::FDiv, power, x);
            let xp = em.emit(O::Select, &[is_min, over_x, power], Imm::None);
            let nf = em.emit(O::IToF, &[n], Imm::None);
            push(0, ScaleStrong(em.bin(O::FMulSz, nf, xp)));
        }
        O::Select => {
            push(1, When(args[0]));
            push(2, Unless(args[0]));
        }
        O::IAdd
        | O::ISub
        | O::IMul
        | O::IDiv
        | O::IRem
        | O::INeg
        | O::IAnd
        | O::IOr
        | O::IXor
        | O::IShl
        | O::IShr
        | O::UShr
        | O::And
        | O::Or
        | O::Not
        | O::FCmp
        | O::ICmp => {
            return Linearization::NoTangent;
        }
        // A bool: no tangent of its own, but forward mode extends the test to the operand's
        // tangent (`ad/src/forward.rs`) and reverse mode reads it as `false`.
        O::IsZero => return Linearization::NoTangent,
        O::IToF => return Linearization::Zero,
        // A table is constant: no tangent (and no operand to propagate to).
        O::FToI | O::Len | O::TPush | O::TPop | O::TSplit | O::TRejoin | O::Alloc | O::Table | O::Trap => {
            return Linearization::NoTangent;
        }
        O::Load | O::Store | O::VLoad | O::VStore | O::Splat | O::Extract | O::Insert | O::Call => {
            return Linearization::Structural;
        }
    }
    terms.retain(|t| act(t.operand));
    Linearization::Terms(terms)
}

/// Whether `op` has a partial that can be infinite (or NaN) at a finite point — the primitives
/// whose terms are [`Coef::ScaleStrong`]. A program without any of these (and without custom
/// rules, whose partials are the user's) never produces an infinite (co)tangent from finite
/// inputs, so its derivative code multiplies with plain `fmul`.
///
/// ```
/// use jitdiff_ir::Opcode;
/// assert!(jitdiff_rules::has_singular_partials(Opcode::Sqrt));
/// assert!(!jitdiff_rules::has_singular_partials(Opcode::Exp));
/// ```
pub fn has_singular_partials(op: Opcode) -> bool {
    use Opcode as O;
    matches!(
        op,
        O::Sqrt
            | O::Ln
            | O::Log1p
            | O::Log2
            | O::Log10
            | O::Cbrt
            | O::Pow
            | O::Powi
            | O::Asin
            | O::Acos
            | O::Acosh
            | O::Atanh
            | O::FDiv
            | O::FMulSz
    )
}

impl Linearization {
    /// The terms, or an empty slice for the other forms.
    pub fn terms(&self) -> &[Term] {
        match self {
            Linearization::Terms(t) => t,
            _ => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emit::BlockEmitter;
    use jitdiff_ir::{Function, Shape, Type};

    /// Activity analysis trusts `is_piecewise_constant`; linearization must agree with it for
    /// every float operation of the op table.
    #[test]
    fn piecewise_constant_ops_are_exactly_those_with_a_zero_linearization() {
        for op in Opcode::all() {
            let arity = match op.info().shape {
                Shape::FloatUnary { .. } => 1,
                Shape::FloatBinary { .. } => 2,
                Shape::FloatTernary => 3,
                _ => continue,
            };
            let mut f = Function::new("f", vec![Type::F64]);
            let entry = f.add_block("entry");
            let args: Vec<Value> = (0..arity).map(|_| f.add_param(Type::F64, None)).collect();
            let mut em = BlockEmitter::new(&mut f, entry);
            let y = em.emit(op, &args, Imm::None);
            let zero = matches!(linearize(op, &mut em, &args, y, &vec![true; arity]), Linearization::Zero);
            assert_eq!(zero, is_piecewise_constant(op), "{}", op.spelling());
        }
    }
}
