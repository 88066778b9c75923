//! Operators: arithmetic, comparisons, `&&`/`||` (short-circuiting where the right operand can
//! have an effect or fail), unary `-`, `!`, `*`, and `as` casts.

use crate::error::{Result, invalid, mismatch, unsupported};
use crate::expr::{arith_opcode, type_error};
use crate::lower::{Lowered, Lowerer, Operand};
use crate::types::{IntKind, Ty, TypePlace, parse_type};
use jitdiff_ir::{CondCode, Opcode, Type};
use syn::spanned::Spanned;

impl Lowerer<'_> {
    pub(crate) fn lower_binary(&mut self, b: &syn::ExprBinary, expect: Option<&Ty>) -> Result<Lowered> {
        use syn::BinOp as B;
        match b.op {
            B::AddAssign(_)
            | B::SubAssign(_)
            | B::MulAssign(_)
            | B::DivAssign(_)
            | B::RemAssign(_)
            | B::BitAndAssign(_)
            | B::BitOrAssign(_)
            | B::BitXorAssign(_)
            | B::ShlAssign(_)
            | B::ShrAssign(_) => self.lower_compound_assign(b),
            B::And(_) => self.lower_logical(b, true),
            B::Or(_) => self.lower_logical(b, false),
            B::Eq(_) => self.lower_compare(b, CondCode::Eq),
            B::Ne(_) => self.lower_compare(b, CondCode::Ne),
            B::Lt(_) => self.lower_compare(b, CondCode::Lt),
            B::Le(_) => self.lower_compare(b, CondCode::Le),
            B::Gt(_) => self.lower_compare(b, CondCode::Gt),
            B::Ge(_) => self.lower_compare(b, CondCode::Ge),
            B::BitAnd(_) | B::BitOr(_) | B::BitXor(_) => self.lower_bitwise(b, expect),
            B::Shl(_) | B::Shr(_) => self.lower_shift(b, expect),
            _ => {
                let numeric = expect.filter(|t| matches!(t, Ty::F64 | Ty::Int(_)));
                let left = self.lower_expr(&b.left, numeric)?;
                if let Lowered::Struct(..) = left {
                    return self.lower_overloaded(b, left, None);
                }
                let lhs = self.scalar_value(left, &b.left, numeric)?;
                let rhs_expect =
                    if lhs.ty == Ty::Int(IntKind::Literal) { numeric.cloned() } else { Some(lhs.ty.clone()) };
                let right = self.lower_expr(&b.right, rhs_expect.as_ref())?;
                if let Lowered::Struct(..) = right {
                    return self.lower_overloaded(b, Lowered::Value(lhs), Some(right));
                }
                let rhs = self.scalar_value(right, &b.right, rhs_expect.as_ref())?;
                let ty = self.common_type(b, &lhs, &rhs)?;
                let opcode = arith_opcode(&b.op, &ty, b.op.span())?;
                self.at(b.op.span());
                let value = self.ssa.op(opcode, &[lhs.value, rhs.value]);
                Ok(Lowered::Value(Operand { value, ty }))
            }
        }
    }

    /// Both operands of a binary operator and their common type; a mismatch is reported at the
    /// operand to convert.
    fn operands(&mut self, b: &syn::ExprBinary, expect: Option<&Ty>) -> Result<(Operand, Operand, Ty)> {
        let lhs = self.scalar(&b.left, expect)?;
        let rhs_expect = if lhs.ty == Ty::Int(IntKind::Literal) { expect.cloned() } else { Some(lhs.ty.clone()) };
        let rhs = self.scalar(&b.right, rhs_expect.as_ref())?;
        let ty = self.common_type(b, &lhs, &rhs)?;
        Ok((lhs, rhs, ty))
    }

    /// The common type of two scalar operands of `b`; a mismatch is reported at the operand to
    /// convert.
    fn common_type(&self, b: &syn::ExprBinary, lhs: &Operand, rhs: &Operand) -> Result<Ty> {
        Ok(match (&lhs.ty, &rhs.ty) {
            (Ty::Never, t) | (t, Ty::Never) => t.clone(),
            (Ty::Int(a), Ty::Int(c)) => match a.unify(*c) {
                Some(k) => Ty::Int(k),
                None => return Err(type_error(b.right.span(), &lhs.ty, &rhs.ty, Some(&b.right))),
            },
            (Ty::Int(_), Ty::F64) => return Err(type_error(b.left.span(), &Ty::F64, &lhs.ty, Some(&b.left))),
            (a, c) if a == c => a.clone(),
            (a, _) => return Err(type_error(b.right.span(), a, &rhs.ty, Some(&b.right))),
        })
    }

    fn lower_compare(&mut self, b: &syn::ExprBinary, cond: CondCode) -> Result<Lowered> {
        let left = self.lower_expr(&b.left, None)?;
        if let Lowered::Struct(..) = left {
            return self.lower_struct_compare(b, cond, left);
        }
        let lhs = self.scalar_value(left, &b.left, None)?;
        let rhs_expect = if lhs.ty == Ty::Int(IntKind::Literal) { None } else { Some(lhs.ty.clone()) };
        let rhs = self.scalar(&b.right, rhs_expect.as_ref())?;
        let ty = self.common_type(b, &lhs, &rhs)?;
        let value = self.compare_scalars(b, cond, &lhs, &rhs, &ty)?;
        Ok(Lowered::Value(Operand { value, ty: Ty::Bool }))
    }

    /// `lhs cond rhs` of two scalars of type `ty`.
    pub(crate) fn compare_scalars(
        &mut self,
        b: &syn::ExprBinary,
        cond: CondCode,
        lhs: &Operand,
        rhs: &Operand,
        ty: &Ty,
    ) -> Result<jitdiff_ir::Value> {
        Ok(match ty {
            Ty::F64 => self.ssa.fcmp(cond, lhs.value, rhs.value),
            Ty::Int(_) => self.ssa.icmp(cond, lhs.value, rhs.value),
            Ty::Bool if matches!(cond, CondCode::Eq | CondCode::Ne) => {
                // a == b is `a ? b : !b`; a != b is `a ? !b : b`.
                let not_rhs = self.ssa.op(Opcode::Not, &[rhs.value]);
                if cond == CondCode::Eq {
                    self.ssa.select(lhs.value, rhs.value, not_rhs)
                } else {
                    self.ssa.select(lhs.value, not_rhs, rhs.value)
                }
            }
            _ => return Err(unsupported(b.op.span(), format!("ordering comparisons of `{ty}`"), "compare numbers")),
        })
    }

    /// `&`, `|`, `^` on `bool` (evaluating both sides, as Rust does) or on integers (`bits.rs`).
    fn lower_bitwise(&mut self, b: &syn::ExprBinary, expect: Option<&Ty>) -> Result<Lowered> {
        let expect = expect.filter(|t| matches!(t, Ty::Bool | Ty::Int(_))).unwrap_or(&Ty::Bool);
        let (lhs, rhs, ty) = self.operands(b, Some(expect))?;
        if let Ty::Int(kind) = ty {
            let value = self.int_bit_op(&b.op, kind, lhs.value, rhs.value);
            return Ok(Lowered::Value(Operand { value, ty }));
        }
        if ty != Ty::Bool {
            return Err(unsupported(
                b.op.span(),
                format!("bitwise operators on `{ty}` values"),
                "use them on integers or `bool`s",
            ));
        }
        let value = match b.op {
            syn::BinOp::BitAnd(_) => self.ssa.op(Opcode::And, &[lhs.value, rhs.value]),
            syn::BinOp::BitOr(_) => self.ssa.op(Opcode::Or, &[lhs.value, rhs.value]),
            _ => {
                let not_rhs = self.ssa.op(Opcode::Not, &[rhs.value]);
                self.ssa.select(lhs.value, not_rhs, rhs.value)
            }
        };
        Ok(Lowered::Value(Operand { value, ty: Ty::Bool }))
    }

    /// `a << k`, `a >> k` on integers: the type is `a`'s, `k` may be any integer type.
    fn lower_shift(&mut self, b: &syn::ExprBinary, expect: Option<&Ty>) -> Result<Lowered> {
        let lhs = self.scalar(&b.left, expect.filter(|t| matches!(t, Ty::Int(_))))?;
        let rhs = self.scalar(&b.right, None)?;
        let (Ty::Int(kind), Ty::Int(_)) = (&lhs.ty, &rhs.ty) else {
            let culprit = if matches!(lhs.ty, Ty::Int(_)) { (&b.right, &rhs.ty) } else { (&b.left, &lhs.ty) };
            return Err(mismatch(culprit.0.span(), "i64", culprit.1, "shift integers (of any integer type)"));
        };
        let value = self.int_bit_op(&b.op, *kind, lhs.value, rhs.value);
        Ok(Lowered::Value(Operand { value, ty: lhs.ty.clone() }))
    }

    fn bool_operand(&mut self, expr: &syn::Expr) -> Result<Operand> {
        let op = self.scalar(expr, Some(&Ty::Bool))?;
        if op.ty != Ty::Bool && op.ty != Ty::Never {
            return Err(type_error(expr.span(), &Ty::Bool, &op.ty, Some(expr)));
        }
        Ok(Operand { value: op.value, ty: Ty::Bool })
    }

    /// `a && b`, `a || b`: IR `and`/`or` when `b` is cheap and cannot fail, else a branch.
    fn lower_logical(&mut self, b: &syn::ExprBinary, is_and: bool) -> Result<Lowered> {
        let lhs = self.bool_operand(&b.left)?;
        if is_simple(&b.right) {
            let rhs = self.bool_operand(&b.right)?;
            let op = if is_and { Opcode::And } else { Opcode::Or };
            return Ok(Lowered::Value(Operand { value: self.ssa.op(op, &[lhs.value, rhs.value]), ty: Ty::Bool }));
        }
        let name = if is_and { "and" } else { "or" };
        let evaluate = self.ssa.new_block(&format!("{name}_rhs"));
        let short = self.ssa.new_block(&format!("{name}_short"));
        if is_and {
            self.ssa.branch(lhs.value, evaluate, short);
        } else {
            self.ssa.branch(lhs.value, short, evaluate);
        }
        let reachable = self.ssa.reachable;
        let before = self.scopes.snapshot();
        let mut join = self.new_join();
        self.ssa.switch_to(evaluate, reachable);
        let rhs = self.bool_operand(&b.right)?;
        self.edge_to(&mut join, vec![rhs.value]);
        self.scopes.restore(&before);
        self.ssa.switch_to(short, reachable);
        let known = self.ssa.bconst(!is_and);
        self.edge_to(&mut join, vec![known]);
        let values = self.finish_join(join, &format!("{name}_done"), &[Type::Bool]);
        Ok(Lowered::Value(Operand { value: values[0], ty: Ty::Bool }))
    }

    pub(crate) fn lower_unary(&mut self, u: &syn::ExprUnary, expect: Option<&Ty>) -> Result<Lowered> {
        match u.op {
            syn::UnOp::Neg(_) => {
                if let Some(lit) = literal(&u.expr) {
                    return self.lower_lit(lit, expect, true);
                }
                let operand = self.lower_expr(&u.expr, expect)?;
                if let Lowered::Struct(ty, items) = operand {
                    return self.lower_overloaded_neg(u, &ty, items);
                }
                let op = self.scalar_value(operand, &u.expr, expect)?;
                let value = match &op.ty {
                    Ty::F64 => self.ssa.op(Opcode::FNeg, &[op.value]),
                    Ty::Int(kind) if kind.is_unsigned() => {
                        return Err(invalid(
                            u.span(),
                            format!(
                                "cannot negate a `{}`, which is unsigned; subtract from zero in a signed type (`-(x as i64)`)",
                                kind.name()
                            ),
                        ));
                    }
                    Ty::Int(_) => self.ssa.op(Opcode::INeg, &[op.value]),
                    Ty::Never => op.value,
                    other => return Err(mismatch(u.expr.span(), "f64", other, "negate a number; use `!` for `bool`")),
                };
                Ok(Lowered::Value(Operand { value, ty: op.ty }))
            }
            syn::UnOp::Not(_) => {
                let op = self.scalar(&u.expr, Some(&Ty::Bool))?;
                match op.ty {
                    Ty::Bool | Ty::Never => {
                        Ok(Lowered::Value(Operand { value: self.ssa.op(Opcode::Not, &[op.value]), ty: Ty::Bool }))
                    }
                    Ty::Int(kind) => {
                        let value = self.int_not(kind, op.value, u.span())?;
                        Ok(Lowered::Value(Operand { value, ty: op.ty }))
                    }
                    other => {
                        Err(mismatch(u.expr.span(), "bool", &other, "use `!` on a `bool`; negate numbers with `-`"))
                    }
                }
            }
            syn::UnOp::Deref(_) => {
                // `*v` of an iterator item or `iter_mut` element is the value itself here.
                match self.lower_expr(&u.expr, expect)? {
                    Lowered::Value(op) => Ok(Lowered::Value(op)),
                    // `*s` of a `&Struct` parameter: the struct's value.
                    value @ Lowered::Struct(..) => Ok(value),
                    other => Err(invalid(u.span(), format!("cannot dereference `{}`; remove the `*`", other.ty()))),
                }
            }
            _ => Err(unsupported(u.span(), "unary operators of this kind", "use `-`, `!` or `*`")),
        }
    }

    /// `expr as T` between `f64`, the integer types and (from) `bool`, with Rust's semantics:
    /// float-to-integer truncates and saturates at the target's bounds (NaN gives 0),
    /// integer-to-narrower-integer wraps.
    pub(crate) fn lower_cast(&mut self, cast: &syn::ExprCast) -> Result<Lowered> {
        let target = parse_type(&cast.ty, TypePlace::Local)?;
        if !target.is_scalar() {
            return Err(unsupported(
                cast.ty.span(),
                "casts to this type",
                "cast to `f64`, an integer type or from `bool`",
            ));
        }
        let src = self.scalar(&cast.expr, None)?;
        let value = match (&src.ty, &target) {
            (Ty::Never, _) => src.value,
            (Ty::F64, Ty::F64) => src.value,
            (Ty::Int(_), Ty::F64) => self.ssa.op(Opcode::IToF, &[src.value]),
            (Ty::F64, Ty::Int(kind)) => {
                let truncated = self.ssa.op(Opcode::FToI, &[src.value]);
                self.clamp_int(truncated, *kind)
            }
            (Ty::Int(from), Ty::Int(to)) => self.int_cast(src.value, *from, *to),
            (Ty::Bool, Ty::Int(_)) => {
                let (one, zero) = (self.ssa.iconst(1), self.ssa.iconst(0));
                self.ssa.select(src.value, one, zero)
            }
            (Ty::Bool, Ty::Bool) => src.value,
            (Ty::Bool, Ty::F64) => {
                return Err(invalid(
                    cast.span(),
                    "Rust cannot cast `bool` as `f64`; write `if b { 1.0 } else { 0.0 }`",
                ));
            }
            (from, to) => {
                return Err(invalid(
                    cast.span(),
                    format!("Rust cannot cast `{from}` as `{to}`; compare instead (e.g. `x != 0.0`)"),
                ));
            }
        };
        Ok(Lowered::Value(Operand { value, ty: target }))
    }

    /// Saturate an `i64` (from `ftoi`, which saturates at the `i64` bounds) to `kind`'s range.
    fn clamp_int(&mut self, value: jitdiff_ir::Value, kind: IntKind) -> jitdiff_ir::Value {
        let (min, max) = kind.range();
        let mut v = value;
        if min > i64::MIN.into() {
            let lo = self.ssa.iconst(min as i64);
            let below = self.ssa.icmp(CondCode::Lt, v, lo);
            v = self.ssa.select(below, lo, v);
        }
        if max < i64::MAX.into() {
            let hi = self.ssa.iconst(max as i64);
            let above = self.ssa.icmp(CondCode::Gt, v, hi);
            v = self.ssa.select(above, hi, v);
        }
        v
    }

    /// Integer-to-integer `as`: wrapping into 32-bit targets exactly (wrapping 64-bit IR
    /// arithmetic keeps residues modulo 2^32); 64-bit targets keep the value (an IR `i64` cannot
    /// hold a `u64` above `i64::MAX`; see docs/rust.md).
    fn int_cast(&mut self, value: jitdiff_ir::Value, from: IntKind, to: IntKind) -> jitdiff_ir::Value {
        let (from_min, from_max) = from.range();
        let (to_min, to_max) = to.range();
        let fits = from != IntKind::Literal && to_min <= from_min && from_max <= to_max;
        if fits || !matches!(to, IntKind::I32 | IntKind::U32) {
            return value;
        }
        let modulus = self.ssa.iconst(1 << 32);
        let offset = if to == IntKind::I32 { 1i64 << 31 } else { 0 };
        let shifted = if offset != 0 {
            let k = self.ssa.iconst(offset);
            self.ssa.op(Opcode::IAdd, &[value, k])
        } else {
            value
        };
        // r = shifted mod 2^32, in 0 .. 2^32 (irem keeps the dividend's sign).
        let rem = self.ssa.op(Opcode::IRem, &[shifted, modulus]);
        let zero = self.ssa.iconst(0);
        let negative = self.ssa.icmp(CondCode::Lt, rem, zero);
        let lifted = self.ssa.op(Opcode::IAdd, &[rem, modulus]);
        let r = self.ssa.select(negative, lifted, rem);
        if offset != 0 {
            let k = self.ssa.iconst(offset);
            self.ssa.op(Opcode::ISub, &[r, k])
        } else {
            r
        }
    }
}

/// The literal `expr` is (through parentheses), if it is one.
fn literal(expr: &syn::Expr) -> Option<&syn::Lit> {
    match expr {
        syn::Expr::Lit(l) => Some(&l.lit),
        syn::Expr::Paren(p) => literal(&p.expr),
        _ => None,
    }
}

/// Can `expr` be evaluated unconditionally — no call, no memory access, no integer division
/// (which can fail), no control flow? Then `a && expr` need not branch.
pub(crate) fn is_simple(expr: &syn::Expr) -> bool {
    simple_within(expr, 16)
}

/// [`is_simple`] for expressions at most `depth` deep (deeper ones branch: cheap either way).
fn simple_within(expr: &syn::Expr, depth: usize) -> bool {
    use syn::Expr as E;
    let Some(depth) = depth.checked_sub(1) else {
        return false;
    };
    let is_simple = |e: &syn::Expr| simple_within(e, depth);
    match expr {
        E::Lit(_) | E::Path(_) => true,
        E::Paren(p) => is_simple(&p.expr),
        E::Unary(u) => is_simple(&u.expr),
        E::Cast(c) => is_simple(&c.expr),
        E::Binary(b) => {
            !matches!(b.op, syn::BinOp::Div(_) | syn::BinOp::Rem(_)) && is_simple(&b.left) && is_simple(&b.right)
        }
        E::MethodCall(m) => {
            const PURE: [&str; 12] =
                ["abs", "sqrt", "sin", "cos", "exp", "ln", "is_nan", "is_finite", "min", "max", "powi", "tanh"];
            PURE.contains(&m.method.to_string().as_str()) && is_simple(&m.receiver) && m.args.iter().all(is_simple)
        }
        _ => false,
    }
}
