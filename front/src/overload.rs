//! Arithmetic on structs through their `std::ops` implementations (`impl Add for V`,
//! `impl Mul<f64> for V`, `impl Mul<V> for f64`, `impl Neg for V`, `impl AddAssign for V`, ...),
//! which `impls.rs` turns into functions named after the trait's method and the right operand's
//! type: `V__add__V`, `V__mul__f64`, `f64__mul__V`, `V__neg`, `V__add_assign__V`. `a + b` with a
//! struct operand calls the one for its operand types; `a += b` on a struct variable or field
//! calls the `_assign` one and writes `a` back.
//!
//! ```
//! let src = "#[derive(Clone, Copy)]
//! struct V { x: f64, y: f64 }
//! impl std::ops::Add for V { type Output = V; fn add(self, o: V) -> V { V { x: self.x + o.x, y: self.y + o.y } } }
//! impl std::ops::Mul<f64> for V { type Output = V; fn mul(self, k: f64) -> V { V { x: self.x * k, y: self.y * k } } }
//! fn f(a: f64) -> f64 { let v = V { x: a, y: 1.0 }; let w = v + v * 2.0; w.x * w.y }";
//! let module = jitdiff_front::lower_source(src).unwrap();
//! assert!(module.func_by_name("V__mul__f64").is_some());
//! ```

use crate::error::{Result, invalid};
use crate::lower::{Lowered, Lowerer, Operand};
use crate::structs::StructTy;
use crate::types::Ty;
use jitdiff_ir::CondCode;
use syn::spanned::Spanned;

/// The `std::ops` traits an `impl` block may implement: (trait, method, has a right operand).
pub(crate) const OPERATOR_TRAITS: [(&str, &str, bool); 9] = [
    ("Add", "add", true),
    ("Sub", "sub", true),
    ("Mul", "mul", true),
    ("Div", "div", true),
    ("Neg", "neg", false),
    ("AddAssign", "add_assign", true),
    ("SubAssign", "sub_assign", true),
    ("MulAssign", "mul_assign", true),
    ("DivAssign", "div_assign", true),
];

/// The function implementing `method` for a left operand of type `left` (and a right one of
/// type `right`).
pub(crate) fn operator_function(left: &str, method: &str, right: Option<&str>) -> String {
    match right {
        Some(right) => format!("{left}__{method}__{right}"),
        None => format!("{left}__{method}"),
    }
}

/// The type name operator functions are keyed by.
fn type_name(value: &Lowered) -> String {
    match value {
        Lowered::Struct(ty, _) => ty.name.clone(),
        other => other.ty().to_string(),
    }
}

/// The trait method of a binary operator, if it is one structs may implement.
fn method_of(op: &syn::BinOp) -> Option<(&'static str, &'static str)> {
    Some(match op {
        syn::BinOp::Add(_) => ("Add", "add"),
        syn::BinOp::Sub(_) => ("Sub", "sub"),
        syn::BinOp::Mul(_) => ("Mul", "mul"),
        syn::BinOp::Div(_) => ("Div", "div"),
        syn::BinOp::AddAssign(_) => ("AddAssign", "add_assign"),
        syn::BinOp::SubAssign(_) => ("SubAssign", "sub_assign"),
        syn::BinOp::MulAssign(_) => ("MulAssign", "mul_assign"),
        syn::BinOp::DivAssign(_) => ("DivAssign", "div_assign"),
        _ => return None,
    })
}

impl Lowerer<'_> {
    /// `left op right` where an operand is a struct (`right` lowered already when given).
    pub(crate) fn lower_overloaded(
        &mut self,
        b: &syn::ExprBinary,
        left: Lowered,
        right: Option<Lowered>,
    ) -> Result<Lowered> {
        let right = match right {
            Some(right) => right,
            None => self.lower_expr(&b.right, None)?,
        };
        if matches!(right, Lowered::Never) {
            return Ok(Lowered::Never);
        }
        let (left_name, right_name) = (type_name(&left), type_name(&right));
        let Some((trait_name, method)) = method_of(&b.op) else {
            return Err(invalid(
                b.op.span(),
                format!(
                    "this operator does not apply to `{left_name}` and `{right_name}`; use `+`, `-`, `*` or `/` with a `std::ops` impl, or operate on the fields"
                ),
            ));
        };
        let name = operator_function(&left_name, method, Some(&right_name));
        let Some(sig) = self.ctx.functions.get(&name).cloned() else {
            return Err(invalid(
                b.op.span(),
                format!(
                    "no `impl {trait_name}<{right_name}> for {left_name}` in the source; write one (`fn {method}(self, rhs: {right_name}) -> ...`) or operate on the fields"
                ),
            ));
        };
        let mut values = left.values();
        values.extend(right.values());
        self.at(b.op.span());
        Ok(self.call_values(&sig, values))
    }

    /// `-v` of a struct: its `impl Neg`.
    pub(crate) fn lower_overloaded_neg(
        &mut self,
        u: &syn::ExprUnary,
        ty: &StructTy,
        items: Vec<Operand>,
    ) -> Result<Lowered> {
        let name = operator_function(&ty.name, "neg", None);
        let Some(sig) = self.ctx.functions.get(&name).cloned() else {
            return Err(invalid(
                u.span(),
                format!(
                    "no `impl Neg for {0}` in the source; write one (`fn neg(self) -> {0}`) or negate the fields",
                    ty.name
                ),
            ));
        };
        self.at(u.span());
        Ok(self.call_values(&sig, items.iter().map(|o| o.value).collect()))
    }

    /// `place op= value` where `place` is a struct variable or field (its first slot and type):
    /// the `_assign` implementation, then the new value written back.
    pub(crate) fn lower_overloaded_assign(
        &mut self,
        expr: &syn::ExprBinary,
        first: usize,
        ty: &StructTy,
    ) -> Result<Lowered> {
        let right = self.lower_expr(&expr.right, None)?;
        if matches!(right, Lowered::Never) {
            return Ok(Lowered::Never);
        }
        let right_name = type_name(&right);
        let Some((trait_name, method)) = method_of(&expr.op) else {
            return Err(invalid(
                expr.op.span(),
                format!("this operator does not apply to `{}`; operate on the fields", ty.name),
            ));
        };
        let name = operator_function(&ty.name, method, Some(&right_name));
        let Some(sig) = self.ctx.functions.get(&name).cloned() else {
            return Err(invalid(
                expr.op.span(),
                format!(
                    "no `impl {trait_name}<{right_name}> for {}` in the source; write one (`fn {method}(&mut self, rhs: {right_name})`) or update the fields",
                    ty.name
                ),
            ));
        };
        let mut values = vec![];
        for k in 0..ty.leaves().len() {
            values.push(self.read_slot(first + k, expr.left.span())?.value);
        }
        values.extend(right.values());
        self.at(expr.op.span());
        let results = self.ssa.call(sig.callee, values, &crate::structs::receiver_parts(sig.params.first()));
        let leaves = ty.leaves();
        for (k, value) in ty.changeable().into_iter().zip(results) {
            let item = Operand { value, ty: leaves[k].clone() };
            self.assign_slot(first + k, item, expr.left.span(), Some(&expr.right))?;
        }
        Ok(Lowered::Unit)
    }

    /// `a == b`, `a != b` of two structs of one type, as `#[derive(PartialEq)]` compares them:
    /// every field equal (`!=`: some field not equal). Ordering comparisons, and structs
    /// holding slices (whose derived `==` compares contents), are errors.
    pub(crate) fn lower_struct_compare(
        &mut self,
        b: &syn::ExprBinary,
        cond: CondCode,
        left: Lowered,
    ) -> Result<Lowered> {
        let right = self.lower_expr(&b.right, None)?;
        let (Lowered::Struct(ty, a), Lowered::Struct(other, c)) = (&left, &right) else {
            if matches!(right, Lowered::Never) {
                return Ok(Lowered::Never);
            }
            return Err(crate::expr::type_error(b.right.span(), &left.ty(), &right.ty(), Some(&b.right)));
        };
        if ty != other {
            return Err(crate::expr::type_error(b.right.span(), &left.ty(), &right.ty(), Some(&b.right)));
        }
        if !matches!(cond, CondCode::Eq | CondCode::Ne) || ty.holds_slices() {
            return Err(crate::error::unsupported(
                b.op.span(),
                format!("comparisons of `{}` other than `==` and `!=` of structs without slices", ty.name),
                "compare the fields",
            ));
        }
        let mut all = None;
        for (x, y) in a.iter().zip(c) {
            let same = self.compare_scalars(b, CondCode::Eq, x, y, &x.ty)?;
            all = Some(match all {
                None => same,
                Some(so_far) => self.ssa.op(jitdiff_ir::Opcode::And, &[so_far, same]),
            });
        }
        let all = all.unwrap_or_else(|| self.ssa.bconst(true));
        let value = if cond == CondCode::Eq { all } else { self.ssa.op(jitdiff_ir::Opcode::Not, &[all]) };
        Ok(Lowered::Value(Operand { value, ty: Ty::Bool }))
    }

    /// Call `sig` with its arguments' IR values, and its result as a value of its type.
    fn call_values(&mut self, sig: &crate::module::FnSig, values: Vec<jitdiff_ir::Value>) -> Lowered {
        let results = self.ssa.call(sig.callee, values, &sig.ret.ir_results());
        match &sig.ret {
            Ty::Struct(ty) => Lowered::Struct(
                ty.clone(),
                ty.leaves().into_iter().zip(results).map(|(ty, value)| Operand { value, ty }).collect(),
            ),
            Ty::Unit | Ty::Never => Lowered::Unit,
            other => match results.first() {
                Some(&value) => Lowered::Value(Operand { value, ty: other.clone() }),
                None => Lowered::Unit,
            },
        }
    }
}
