//! Constants: literals (with suffixes, underscores and overflow checks), `std::f64::consts::*`,
//! `f64::INFINITY` and friends, integer `MAX`/`MIN`, and module-level `const` items, which are
//! inlined at each use.

use crate::error::{FrontError, FrontErrorKind, Result, invalid, unsupported};
use crate::lower::{Lowered, Lowerer, Operand};
use crate::scope::Scopes;
use crate::types::{IntKind, Ty};
use proc_macro2::Span;
use syn::spanned::Spanned;

/// A constant value known to the front end.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Constant {
    F64(f64),
    Int(i64, IntKind),
}

/// `std::f64::consts::NAME`.
pub(crate) fn std_f64_const(name: &str) -> Option<f64> {
    use std::f64::consts::*;
    Some(match name {
        "PI" => PI,
        "TAU" => TAU,
        "E" => E,
        "SQRT_2" => SQRT_2,
        "FRAC_1_SQRT_2" => FRAC_1_SQRT_2,
        "LN_2" => LN_2,
        "LN_10" => LN_10,
        "LOG2_E" => LOG2_E,
        "LOG10_E" => LOG10_E,
        "LOG2_10" => LOG2_10,
        "LOG10_2" => LOG10_2,
        "FRAC_PI_2" => FRAC_PI_2,
        "FRAC_PI_3" => FRAC_PI_3,
        "FRAC_PI_4" => FRAC_PI_4,
        "FRAC_PI_6" => FRAC_PI_6,
        "FRAC_PI_8" => FRAC_PI_8,
        "FRAC_1_PI" => FRAC_1_PI,
        "FRAC_2_PI" => FRAC_2_PI,
        "FRAC_2_SQRT_PI" => FRAC_2_SQRT_PI,
        _ => return None,
    })
}

/// The constant a multi-segment path names (`std::f64::consts::PI`, `f64::NAN`, `i64::MAX`),
/// `Some(Err(message))` for a known constant the IR cannot hold, `None` for anything else.
pub(crate) fn path_constant(text: &str) -> Option<std::result::Result<Constant, String>> {
    let text = text.strip_prefix("std::").or_else(|| text.strip_prefix("core::")).unwrap_or(text);
    if let Some(name) = text.strip_prefix("f64::consts::").or_else(|| text.strip_prefix("consts::")) {
        return std_f64_const(name).map(|x| Ok(Constant::F64(x)));
    }
    if let Some(name) = text.strip_prefix("f64::") {
        let x = match name {
            "INFINITY" => f64::INFINITY,
            "NEG_INFINITY" => f64::NEG_INFINITY,
            "NAN" => f64::NAN,
            "EPSILON" => f64::EPSILON,
            "MAX" => f64::MAX,
            "MIN" => f64::MIN,
            "MIN_POSITIVE" => f64::MIN_POSITIVE,
            _ => return None,
        };
        return Some(Ok(Constant::F64(x)));
    }
    let (ty, name) = text.split_once("::")?;
    let kind = IntKind::from_name(ty)?;
    let (min, max) = kind.range();
    let value = match name {
        "MAX" if matches!(kind, IntKind::U64 | IntKind::Usize) => {
            return Some(Err(format!(
                "`{ty}::MAX` does not fit the IR's 64-bit signed integers; use `i64::MAX as {ty}`"
            )));
        }
        "MAX" => max,
        "MIN" => min,
        _ => return None,
    };
    Some(Ok(Constant::Int(value as i64, kind)))
}

impl Lowerer<'_> {
    pub(crate) fn constant_operand(&mut self, constant: Constant) -> Operand {
        match constant {
            Constant::F64(x) => Operand { value: self.ssa.fconst(x), ty: Ty::F64 },
            Constant::Int(k, kind) => Operand { value: self.ssa.iconst(k), ty: Ty::Int(kind) },
        }
    }

    /// A literal; `negate` when it is the operand of a unary minus (so that `-128i8`-style
    /// minimum values are in range).
    pub(crate) fn lower_lit(&mut self, lit: &syn::Lit, expect: Option<&Ty>, negate: bool) -> Result<Lowered> {
        let sign = if negate { "-" } else { "" };
        let constant = match lit {
            syn::Lit::Float(f) => {
                if !matches!(f.suffix(), "" | "f64") {
                    return Err(unsupported(f.span(), "`f32` values", "use `f64` (drop the suffix)"));
                }
                float_literal(f.base10_digits(), f.span(), sign)?
            }
            syn::Lit::Int(i) => {
                let kind = match i.suffix() {
                    "" => match expect {
                        Some(Ty::Int(kind)) => *kind,
                        _ => IntKind::Literal,
                    },
                    "f64" => {
                        return Ok(Lowered::Value(self.constant_operand(float_literal(
                            i.base10_digits(),
                            i.span(),
                            sign,
                        )?)));
                    }
                    "f32" => return Err(unsupported(i.span(), "`f32` values", "use `f64`")),
                    suffix => match IntKind::from_name(suffix) {
                        Some(kind) => kind,
                        None => {
                            return Err(unsupported(
                                i.span(),
                                format!("`{suffix}` values"),
                                "use `i64`, `i32`, `isize`, `u64`, `u32` or `usize`",
                            ));
                        }
                    },
                };
                let overflow = || {
                    let ty = if kind == IntKind::Literal { "i64" } else { kind.name() };
                    FrontError::new(
                        i.span(),
                        FrontErrorKind::LiteralOverflow {
                            literal: format!("{sign}{}", i.base10_digits()),
                            ty: ty.into(),
                        },
                    )
                };
                // A negative literal is one token in patterns (`-1 => ...`).
                let (digits, negate) = match i.base10_digits().strip_prefix('-') {
                    Some(digits) => (digits, !negate),
                    None => (i.base10_digits(), negate),
                };
                let magnitude: u128 = digits.parse().map_err(|_| overflow())?;
                let magnitude = i128::try_from(magnitude).map_err(|_| overflow())?;
                let value = if negate { -magnitude } else { magnitude };
                let (min, max) = kind.range();
                if value < min || value > max {
                    return Err(overflow());
                }
                Constant::Int(value as i64, kind)
            }
            syn::Lit::Bool(b) => {
                return Ok(Lowered::Value(Operand { value: self.ssa.bconst(b.value), ty: Ty::Bool }));
            }
            other => {
                return Err(unsupported(
                    other.span(),
                    "string, character and byte literals",
                    "compute with numbers only",
                ));
            }
        };
        Ok(Lowered::Value(self.constant_operand(constant)))
    }

    /// A module-level `const`, inlined: its expression lowered here with no local in scope.
    pub(crate) fn lower_const(&mut self, name: &str, span: Span) -> Result<Lowered> {
        let Some(def) = self.ctx.consts.get(name) else {
            return Err(invalid(span, format!("`{name}` is not a constant")));
        };
        match &def.ty {
            Ty::Slice { .. } => {
                return Err(FrontError::new(
                    span,
                    FrontErrorKind::NotYetSupported {
                        construct: "a constant array".into(),
                        why: "the IR has no read-only data tables yet".into(),
                        instead: "pass the table as a `&[f64]` parameter".into(),
                    },
                ));
            }
            ty if !ty.is_scalar() => {
                return Err(unsupported(span, "constants of this type", "define `f64`, integer or `bool` constants"));
            }
            _ => {}
        }
        if self.const_stack.iter().any(|c| c == name) || self.const_stack.len() > 64 {
            return Err(invalid(span, format!("constant `{name}` is defined in terms of itself; give it a value")));
        }
        let ty = def.ty.clone();
        let mut locals = Scopes::default();
        self.scopes.swap(&mut locals);
        let floor = self.closure_floor.take();
        self.const_stack.push(name.to_string());
        let lowered = self.scalar(&def.expr, Some(&ty));
        self.const_stack.pop();
        self.closure_floor = floor;
        self.scopes.swap(&mut locals);
        let op = lowered?;
        if !op.ty.fits(&ty) {
            return Err(crate::expr::type_error(def.expr.span(), &ty, &op.ty, Some(&def.expr)));
        }
        Ok(Lowered::Value(Operand { value: op.value, ty }))
    }

    /// The value of a constant integer expression (a local array's length): literals, `const`s
    /// and `+ - * /` of those.
    pub(crate) fn const_int(&self, expr: &syn::Expr) -> Result<i64> {
        self.const_int_at(expr, 0)
    }

    fn const_int_at(&self, expr: &syn::Expr, depth: usize) -> Result<i64> {
        let not_constant = || {
            invalid(
                expr.span(),
                "the length of a local array must be a constant: an integer literal, a `const` or arithmetic on those",
            )
        };
        if depth > 64 {
            return Err(not_constant());
        }
        match expr {
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => {
                i.base10_parse::<i64>().map_err(|_| not_constant())
            }
            syn::Expr::Paren(p) => self.const_int_at(&p.expr, depth + 1),
            syn::Expr::Path(p) => {
                let name = p.path.get_ident().map(crate::types::name_of).ok_or_else(not_constant)?;
                let def = self.ctx.consts.get(&name).ok_or_else(not_constant)?;
                if !matches!(def.ty, Ty::Int(_)) {
                    return Err(not_constant());
                }
                self.const_int_at(&def.expr, depth + 1)
            }
            syn::Expr::Binary(b) => {
                let (l, r) = (self.const_int_at(&b.left, depth + 1)?, self.const_int_at(&b.right, depth + 1)?);
                let value = match b.op {
                    syn::BinOp::Add(_) => l.checked_add(r),
                    syn::BinOp::Sub(_) => l.checked_sub(r),
                    syn::BinOp::Mul(_) => l.checked_mul(r),
                    syn::BinOp::Div(_) => l.checked_div(r),
                    _ => None,
                };
                value.ok_or_else(not_constant)
            }
            _ => Err(not_constant()),
        }
    }
}

fn float_literal(digits: &str, span: Span, sign: &str) -> Result<Constant> {
    let value: f64 =
        digits.parse().map_err(|_| invalid(span, format!("`{digits}` is not a number; write a float literal")))?;
    if value.is_infinite() {
        return Err(FrontError::new(
            span,
            FrontErrorKind::LiteralOverflow { literal: format!("{sign}{digits}"), ty: "f64".into() },
        ));
    }
    Ok(Constant::F64(if sign.is_empty() { value } else { -value }))
}
