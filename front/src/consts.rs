//! Constants: literals (with suffixes, underscores and overflow checks), `std::f64::consts::*`,
//! `f64::INFINITY` and friends, integer `MAX`/`MIN`, and module-level `const` items: scalars are
//! inlined at each use; `f64` arrays (`const Y: [f64; N] = [...]`) are evaluated here and become
//! read-only data tables of the module, read through `table @Y`.

use crate::error::{FrontError, FrontErrorKind, Result, invalid, unsupported};
use crate::lower::{Lowered, Lowerer, Operand};
use crate::module::ModuleCtx;
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

    /// A module-level `const`, inlined: its expression lowered here with no local in scope. A
    /// constant array is the module's table of that name, a read-only slice.
    pub(crate) fn lower_const(&mut self, name: &str, span: Span) -> Result<Lowered> {
        let Some(def) = self.ctx.consts.get(name) else {
            return Err(invalid(span, format!("`{name}` is not a constant")));
        };
        match &def.ty {
            Ty::Slice { .. } => {
                let Some(&table) = self.ctx.tables.get(name) else {
                    return Err(FrontError::new(
                        span,
                        FrontErrorKind::Internal { message: format!("the table of constant `{name}` went missing") },
                    ));
                };
                let value = self.ssa.table(table);
                return Ok(Lowered::Value(Operand { value, ty: Ty::Slice { mutable: false } }));
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

    /// The error for writing to `expr` (a read-only slice), if `expr` names a constant array:
    /// it cannot be written, not even after `let mut a = Y;` (which aliases the table here,
    /// where Rust would copy it).
    pub(crate) fn constant_array_write(&self, expr: &syn::Expr) -> Option<FrontError> {
        let mut expr = expr;
        while let syn::Expr::Paren(p) = expr {
            expr = &p.expr;
        }
        let syn::Expr::Path(p) = expr else { return None };
        let name = crate::types::name_of(p.path.get_ident()?);
        if self.scopes.lookup(&name).is_some() || !self.ctx.tables.contains_key(&name) {
            return None;
        }
        Some(invalid(
            expr.span(),
            format!(
                "cannot write to the constant array `{name}`; to change a copy, make a local array and fill it: `let mut a = [0.0; N]; for i in 0..N {{ a[i] = {name}[i]; }}`"
            ),
        ))
    }

    /// The value of a constant integer expression (a local array's length): literals, `const`s
    /// and `+ - * /` of those.
    pub(crate) fn const_int(&self, expr: &syn::Expr) -> Result<i64> {
        const_int(self.ctx, expr, "the length of a local array")
    }
}

/// The most nested constant expressions are followed (constants defined through constants).
const MAX_CONST_DEPTH: usize = 64;

/// The value of a constant integer expression: literals, `const`s and `+ - * /` of those;
/// `what` names what must be constant, for the error.
pub(crate) fn const_int(ctx: &ModuleCtx, expr: &syn::Expr, what: &str) -> Result<i64> {
    const_int_at(ctx, expr, what, 0)
}

fn const_int_at(ctx: &ModuleCtx, expr: &syn::Expr, what: &str, depth: usize) -> Result<i64> {
    let not_constant = || {
        invalid(expr.span(), format!("{what} must be a constant: an integer literal, a `const` or arithmetic on those"))
    };
    if depth > MAX_CONST_DEPTH {
        return Err(not_constant());
    }
    let at = |e: &syn::Expr| const_int_at(ctx, e, what, depth + 1);
    match expr {
        syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => {
            i.base10_parse::<i64>().map_err(|_| not_constant())
        }
        syn::Expr::Paren(p) => at(&p.expr),
        syn::Expr::Path(p) => {
            let name = p.path.get_ident().map(crate::types::name_of).ok_or_else(not_constant)?;
            let def = ctx.consts.get(&name).ok_or_else(not_constant)?;
            if !matches!(def.ty, Ty::Int(_)) {
                return Err(not_constant());
            }
            at(&def.expr)
        }
        syn::Expr::Binary(b) => {
            let (l, r) = (at(&b.left)?, at(&b.right)?);
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

/// The values of a constant `f64` array (`const Y: [f64; N] = ...`, or `&[f64]` / `&[f64; N]`):
/// `[a, b, c]` or `[x; N]` (behind a `&` for a reference type), each value a constant `f64`
/// expression (see [`const_f64`]). `len` is the declared length, when the type has one; the
/// values must match it, as rustc requires.
pub(crate) fn table_values(ctx: &ModuleCtx, expr: &syn::Expr, len: Option<i64>) -> Result<Vec<f64>> {
    let mut expr = expr;
    while let syn::Expr::Paren(p) = expr {
        expr = &p.expr;
    }
    if let syn::Expr::Reference(r) = expr
        && r.mutability.is_none()
    {
        return table_values(ctx, &r.expr, len);
    }
    let values = match expr {
        syn::Expr::Array(array) => array.elems.iter().map(|e| const_f64(ctx, e)).collect::<Result<Vec<f64>>>()?,
        syn::Expr::Repeat(repeat) => {
            let n = const_int(ctx, &repeat.len, "the length of an array repeat expression")?;
            let n = usize::try_from(n).ok().filter(|&n| n <= MAX_TABLE_LEN).ok_or_else(|| {
                invalid(repeat.len.span(), format!("a constant array holds 0 to {MAX_TABLE_LEN} values, not {n}"))
            })?;
            vec![const_f64(ctx, &repeat.expr)?; n]
        }
        other => {
            return Err(unsupported(
                other.span(),
                "constant arrays given by other expressions",
                "write the values out, `[0.14, 0.18, ...]`, or repeat one, `[0.0; N]`",
            ));
        }
    };
    if values.len() > MAX_TABLE_LEN {
        return Err(invalid(expr.span(), format!("a constant array holds at most {MAX_TABLE_LEN} values")));
    }
    match len {
        Some(n) if n != values.len() as i64 => Err(invalid(
            expr.span(),
            format!("mismatched types: expected an array of {n} values, found one of {}", values.len()),
        )),
        _ => Ok(values),
    }
}

/// The most values one constant array may hold (128 MiB of `f64`s).
const MAX_TABLE_LEN: usize = 1 << 24;

/// The value of a constant `f64` expression, as rustc's constant evaluation gives it: float
/// literals, `-`, parentheses, `const`s of type `f64`, `std::f64::consts::*` and `f64::INFINITY`
/// ..., `as f64` of an integer constant, and `+ - * /` of those (IEEE arithmetic, as at run time).
pub(crate) fn const_f64(ctx: &ModuleCtx, expr: &syn::Expr) -> Result<f64> {
    const_f64_at(ctx, expr, 0)
}

fn const_f64_at(ctx: &ModuleCtx, expr: &syn::Expr, depth: usize) -> Result<f64> {
    let not_constant = || {
        unsupported(
            expr.span(),
            "values of constant arrays other than constant `f64` expressions",
            "write float literals, `const`s and arithmetic on them (`2.0 * PI`, `N as f64`)",
        )
    };
    if depth > MAX_CONST_DEPTH {
        return Err(invalid(expr.span(), "this constant is defined in terms of itself; give it a value"));
    }
    let at = |e: &syn::Expr| const_f64_at(ctx, e, depth + 1);
    match expr {
        syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Float(f), .. }) => {
            if !matches!(f.suffix(), "" | "f64") {
                return Err(unsupported(f.span(), "`f32` values", "use `f64` (drop the suffix)"));
            }
            match float_literal(f.base10_digits(), f.span(), "")? {
                Constant::F64(x) => Ok(x),
                Constant::Int(..) => Err(not_constant()),
            }
        }
        syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) if i.suffix() == "f64" => {
            match float_literal(i.base10_digits(), i.span(), "")? {
                Constant::F64(x) => Ok(x),
                Constant::Int(..) => Err(not_constant()),
            }
        }
        syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => Err(invalid(
            i.span(),
            format!("mismatched types: expected `f64`, found an integer; write `{}.0`", i.base10_digits()),
        )),
        syn::Expr::Paren(p) => at(&p.expr),
        syn::Expr::Group(g) => at(&g.expr),
        syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => Ok(-at(&u.expr)?),
        syn::Expr::Binary(b) => {
            let (l, r) = (at(&b.left)?, at(&b.right)?);
            match b.op {
                syn::BinOp::Add(_) => Ok(l + r),
                syn::BinOp::Sub(_) => Ok(l - r),
                syn::BinOp::Mul(_) => Ok(l * r),
                syn::BinOp::Div(_) => Ok(l / r),
                _ => Err(not_constant()),
            }
        }
        syn::Expr::Cast(c) if matches!(&*c.ty, syn::Type::Path(p) if p.path.is_ident("f64")) => {
            match const_int(ctx, &c.expr, "the integer converted") {
                Ok(k) => Ok(k as f64),
                Err(_) => at(&c.expr),
            }
        }
        syn::Expr::Path(p) => {
            if let Some(ident) = p.path.get_ident() {
                let name = crate::types::name_of(ident);
                if let Some(def) = ctx.consts.get(&name) {
                    return match def.ty {
                        Ty::F64 => at(&def.expr),
                        ref other => Err(invalid(
                            p.span(),
                            format!("mismatched types: expected `f64`, found `{other}`; convert with `as f64`"),
                        )),
                    };
                }
                if let Some(x) = ctx.imported_constant(&name) {
                    return Ok(x);
                }
            }
            match path_constant(&crate::types::path_text(&p.path)) {
                Some(Ok(Constant::F64(x))) => Ok(x),
                Some(Ok(Constant::Int(..))) => {
                    Err(invalid(p.span(), "mismatched types: expected `f64`, found an integer; convert with `as f64`"))
                }
                Some(Err(message)) => Err(invalid(p.span(), message)),
                None => Err(not_constant()),
            }
        }
        _ => Err(not_constant()),
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
