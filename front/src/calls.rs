//! Calls: to functions of the program and declared externs (IR `call`), with argument checks
//! (count, types, a `&mut` slice passed once), and the path forms of methods (`f64::sin(x)`,
//! `f64::max(a, b)`, `usize::min(a, b)`, `f64::from(i)`).

use crate::error::{FrontError, FrontErrorKind, Result, invalid, unsupported};
use crate::lower::{Lowered, Lowerer, Operand};
use crate::module::FnSig;
use crate::types::{IntKind, Ty};
use jitdiff_ir::{Opcode, Value};
use proc_macro2::Span;
use syn::spanned::Spanned;

impl Lowerer<'_> {
    pub(crate) fn lower_call(&mut self, call: &syn::ExprCall, _expect: Option<&Ty>) -> Result<Lowered> {
        let syn::Expr::Path(path) = &*call.func else {
            return Err(unsupported(
                call.func.span(),
                "calls of computed functions (closures, function pointers)",
                "call a `fn` item by name",
            ));
        };
        if path.qself.is_some() {
            return Err(unsupported(
                path.span(),
                "qualified paths (`<T as Trait>::...`)",
                "call the function directly",
            ));
        }
        let args: Vec<&syn::Expr> = call.args.iter().collect();
        if let Some(ident) = path.path.get_ident() {
            let name = crate::types::name_of(ident);
            // `V(a, b)` (or `Self(a, b)`) builds a tuple struct.
            if let Some(ty) = crate::structs::lookup(&name).filter(|t| t.tuple) {
                return self.lower_tuple_struct_literal(ty, &args, call.span());
            }
            if let Some(slot) = self.scopes.lookup(&name) {
                if matches!(self.scopes.slot(slot).kind, crate::scope::SlotKind::Closure(_)) {
                    return self.call_closure(slot, &args, call.span());
                }
                return Err(invalid(ident.span(), format!("`{name}` is a variable, not a function; call a `fn` item")));
            }
            return match self.ctx.functions.get(&name) {
                Some(sig) => self.call_function(sig, &args, call.span()),
                None => Err(FrontError::new(
                    ident.span(),
                    FrontErrorKind::Unknown {
                        what: "function".into(),
                        name,
                        instead: "define it with `fn` in the same source, or declare it in `extern \"C\" { ... }`"
                            .into(),
                    },
                )),
            };
        }
        let text = crate::types::path_text(&path.path);
        if let Some(sig) = self.associated_function(&text) {
            let sig = sig.clone();
            return self.call_function(&sig, &args, call.span());
        }
        if let Some(mode) = crate::nested::nested_mode(&text) {
            return self.lower_nested_grad(mode, &args, call.span());
        }
        let text = text.strip_prefix("std::").or_else(|| text.strip_prefix("core::")).unwrap_or(&text).to_string();
        let Some((ty, method)) = text.split_once("::") else {
            return Err(unknown_function(path.span(), &text));
        };
        let method_span = path.path.segments.last().map_or(path.span(), |s| s.ident.span());
        if method.contains("::") || (ty != "f64" && IntKind::from_name(ty).is_none()) {
            return Err(unknown_function(path.span(), &text));
        }
        if method == "from" {
            return self.lower_from(ty, &args, call.span());
        }
        // `f64::sin(x)` is `x.sin()`: the first argument is the receiver.
        let Some((first, rest)) = args.split_first() else {
            return Err(FrontError::new(
                call.span(),
                FrontErrorKind::ArgCount { name: text.clone(), expected: 1, found: 0 },
            ));
        };
        let receiver_ty = if ty == "f64" { Ty::F64 } else { Ty::Int(IntKind::from_name(ty).unwrap_or(IntKind::I64)) };
        let receiver = self.scalar_of(first, &receiver_ty)?;
        self.method(method, receiver, rest, method_span, call.span())
    }

    /// `f64::from(x)` for the integer types Rust converts losslessly (`i32`, `u32`).
    fn lower_from(&mut self, ty: &str, args: &[&syn::Expr], span: Span) -> Result<Lowered> {
        if args.len() != 1 {
            return Err(FrontError::new(
                span,
                FrontErrorKind::ArgCount { name: format!("{ty}::from"), expected: 1, found: args.len() },
            ));
        }
        let op = self.scalar(args[0], None)?;
        match (ty, &op.ty) {
            ("f64", Ty::Int(IntKind::I32 | IntKind::U32 | IntKind::Literal)) => {
                Ok(Lowered::Value(Operand { value: self.ssa.op(Opcode::IToF, &[op.value]), ty: Ty::F64 }))
            }
            ("f64", Ty::F64) => Ok(Lowered::Value(op)),
            _ => Err(unsupported(
                span,
                format!("conversions `{ty}::from` of `{}`", op.ty),
                format!("use `as`: `x as {ty}`"),
            )),
        }
    }

    /// A call of a function of the program or an extern.
    pub(crate) fn call_function(&mut self, sig: &FnSig, args: &[&syn::Expr], span: Span) -> Result<Lowered> {
        if args.len() != sig.params.len() {
            return Err(FrontError::new(
                span,
                FrontErrorKind::ArgCount { name: sig.shown.clone(), expected: sig.params.len(), found: args.len() },
            ));
        }
        let mut values: Vec<Value> = vec![];
        // The slices passed so far: value, whether borrowed mutably, and where.
        let mut slices: Vec<(Value, bool)> = vec![];
        // Which slice parameters get a view (a sub-slice, window or chunk): the callee is then
        // a variant taking (slice, offset, length) for each.
        let mut views = vec![false; sig.params.len()];
        for (index, (arg, param)) in args.iter().zip(&sig.params).enumerate() {
            if matches!(param, Ty::Struct(_)) {
                match self.lower_expr(arg, Some(param))? {
                    Lowered::Never => return Ok(Lowered::Never),
                    value => values.extend(self.parts_of(value, param, arg)?.iter().map(|o| o.value)),
                }
                continue;
            }
            let value = match param {
                Ty::Slice { mutable } if self.is_view_argument(arg) => {
                    let view = self.view_argument(arg, *mutable)?;
                    borrow(&mut slices, view.slice, *mutable, arg)?;
                    views[index] = true;
                    values.extend([view.slice, view.offset]);
                    view.len
                }
                Ty::Slice { mutable } => {
                    let op = match self.lower_expr(arg, None)? {
                        Lowered::Value(op) if matches!(op.ty, Ty::Slice { .. }) => op,
                        Lowered::Never => return Ok(Lowered::Never),
                        other => return Err(crate::expr::type_error(arg.span(), param, &other.ty(), Some(arg))),
                    };
                    if *mutable && op.ty != (Ty::Slice { mutable: true }) {
                        return Err(crate::expr::type_error(arg.span(), param, &op.ty, Some(arg)));
                    }
                    borrow(&mut slices, op.value, *mutable, arg)?;
                    op.value
                }
                _ => self.scalar_of(arg, param)?.value,
            };
            values.push(value);
        }
        self.at(span);
        let callee = match sig.callee {
            _ if !views.contains(&true) => sig.callee,
            jitdiff_ir::Callee::Func(_) => self.ctx.variant(&sig.name, &views),
            _ => {
                return Err(unsupported(
                    span,
                    format!("sub-slices, windows and chunks passed to the extern `{}`", sig.name),
                    "pass the whole slice and an offset",
                ));
            }
        };
        let mut result_types = sig.ret.ir_results();
        let own = result_types.len();
        if sig.updates_receiver {
            result_types.extend(crate::structs::receiver_parts(sig.params.first()));
        }
        let mut results = self.ssa.call(callee, values, &result_types);
        if sig.updates_receiver {
            // `&mut self`: the new receiver follows the results; write it back.
            let receiver = results.split_off(own);
            self.write_back_receiver(sig, args[0], receiver)?;
        }
        Ok(match &sig.ret {
            Ty::Unit => Lowered::Unit,
            Ty::Tuple(items) => Lowered::Tuple(
                items.iter().zip(&results).map(|(ty, &value)| Operand { value, ty: ty.clone() }).collect(),
            ),
            Ty::Struct(ty) => Lowered::Struct(
                ty.clone(),
                ty.leaves().into_iter().zip(&results).map(|(ty, &value)| Operand { value, ty }).collect(),
            ),
            ty => match results.first() {
                Some(&value) => Lowered::Value(Operand { value, ty: ty.clone() }),
                None => Lowered::Unit,
            },
        })
    }
}

fn unknown_function(span: Span, name: &str) -> FrontError {
    FrontError::new(
        span,
        FrontErrorKind::Unknown {
            what: "function".into(),
            name: name.to_string(),
            instead: "call functions of the same source, externs, `f64::<method>(x, ...)` or `f64::from(i)`".into(),
        },
    )
}

/// Record that one call borrows `slice` (mutably or not) for argument `arg`: an error if another
/// argument already borrows it and either borrow is mutable, as Rust's borrow checker says.
fn borrow(slices: &mut Vec<(Value, bool)>, slice: Value, mutable: bool, arg: &syn::Expr) -> Result<()> {
    if slices.iter().any(|&(v, was_mutable)| v == slice && (was_mutable || mutable)) {
        return Err(FrontError::new(arg.span(), FrontErrorKind::AliasedMutable { name: slice_name(arg) }));
    }
    slices.push((slice, mutable));
    Ok(())
}

/// The name a slice argument is written with (`x`, `&mut a` → `a`).
fn slice_name(expr: &syn::Expr) -> String {
    let mut at = expr;
    // A few layers of `&`, `*`, `(...)` or `[..]` at most.
    for _ in 0..8 {
        at = match at {
            syn::Expr::Path(p) => return crate::types::path_text(&p.path),
            syn::Expr::Reference(r) => &r.expr,
            syn::Expr::Unary(u) => &u.expr,
            syn::Expr::Paren(p) => &p.expr,
            syn::Expr::Index(i) => &i.expr,
            _ => break,
        };
    }
    "this slice".into()
}
