//! Nested derivatives: `jitdiff::grad_forward(|y| f(a, y), y0)` and
//! `jitdiff::grad_reverse(|(y1, y2)| f(a, y1, y2), (y1, y2))` — the gradient of a function of
//! the program with respect to some of its `f64` arguments, taken inside another function
//! (`grad_reverse(g, y0)` for a `fn g(y: f64) -> f64` is `grad_reverse(|y| g(y), y0)`).
//!
//! The closure names which arguments are differentiated: its body is one call of a `fn` of the
//! program, each closure parameter passed whole as one argument, the other arguments
//! expressions of the enclosing function (the values the derivative holds fixed). The call
//! lowers to a call of a derivative declaration (`extern @f__grad_reverse_1_2(...) = grad
//! reverse @f wrt 1, 2`, one per function, mode and parameter set), which jitdiff derives when
//! a handle is built; the result is one partial per closure parameter, shaped like the point
//! (an `f64`, or a tuple).

use crate::error::{FrontError, FrontErrorKind, Result, invalid, unsupported};
use crate::lower::{Lowered, Lowerer, Operand};
use crate::types::Ty;
use jitdiff_ir::{Callee, DerivativeOf, DiffMode, ExternDecl, Type, Value};
use proc_macro2::{Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::spanned::Spanned;

/// The mode of `jitdiff::grad_forward` / `jitdiff::grad_reverse` (the path as written, `std::`
/// not applying), if `path` is one of them.
pub(crate) fn nested_mode(path: &str) -> Option<DiffMode> {
    match path {
        "jitdiff::grad_forward" => Some(DiffMode::Forward),
        "jitdiff::grad_reverse" => Some(DiffMode::Reverse),
        _ => None,
    }
}

const SHAPE: &str = "write `jitdiff::grad_reverse(|(y1, y2)| f(x, y1, y2), (y1, y2))`: a closure whose body \
                     calls one `fn` of the program with each closure parameter as one argument, and the point";

impl Lowerer<'_> {
    /// `jitdiff::grad_<mode>(closure, point)`.
    pub(crate) fn lower_nested_grad(&mut self, mode: DiffMode, args: &[&syn::Expr], span: Span) -> Result<Lowered> {
        let [closure, point] = args else {
            return Err(FrontError::new(
                span,
                FrontErrorKind::ArgCount {
                    name: format!("jitdiff::grad_{}", mode.spelling()),
                    expected: 2,
                    found: args.len(),
                },
            ));
        };
        // `grad_reverse(f, x)` for a `fn f(x: f64) -> f64` is `grad_reverse(|x| f(x), x)`.
        let named: syn::Expr;
        let closure = match strip(closure) {
            syn::Expr::Path(path) if path.qself.is_none() && path.path.get_ident().is_some() => {
                let function = &path.path;
                named = syn::parse_quote_spanned!(path.span()=> |point| #function(point));
                &named
            }
            other => other,
        };
        let syn::Expr::Closure(closure) = closure else {
            return Err(unsupported(
                closure.span(),
                "gradients of anything but a closure written in place or a `fn` of one `f64` parameter",
                SHAPE,
            ));
        };
        let (names, tuple) = closure_params(closure)?;
        let syn::Expr::Call(call) = strip(&closure.body) else {
            return Err(unsupported(closure.body.span(), "closure bodies other than one call of a `fn`", SHAPE));
        };
        let callee_name = match &*call.func {
            syn::Expr::Path(p) if p.qself.is_none() => p.path.get_ident().map(crate::types::name_of),
            _ => None,
        };
        let Some(sig) = callee_name.as_ref().and_then(|n| self.ctx.functions.get(n)).cloned() else {
            return Err(unsupported(call.func.span(), "gradients of anything but a `fn` of the program", SHAPE));
        };
        let Callee::Func(_) = sig.callee else {
            return Err(unsupported(
                call.func.span(),
                "gradients of extern functions",
                "differentiate a `fn` of the program",
            ));
        };
        if sig.ret != Ty::F64 {
            return Err(invalid(
                call.func.span(),
                format!("`{}` returns `{}`; a gradient needs a function returning `f64`", sig.name, sig.ret),
            ));
        }
        if call.args.len() != sig.params.len() {
            return Err(FrontError::new(
                call.span(),
                FrontErrorKind::ArgCount { name: sig.name.clone(), expected: sig.params.len(), found: call.args.len() },
            ));
        }
        // Which argument each closure parameter is.
        let mut position = vec![None; names.len()];
        for (p, arg) in call.args.iter().enumerate() {
            let hit = match strip(arg) {
                syn::Expr::Path(path) if path.qself.is_none() => path.path.get_ident().map(crate::types::name_of),
                _ => None,
            }
            .and_then(|n| names.iter().position(|(m, _)| *m == n));
            match hit {
                Some(k) if position[k].is_some() => {
                    return Err(invalid(
                        arg.span(),
                        format!("closure parameter `{}` is passed twice; pass each once", names[k].0),
                    ));
                }
                Some(k) => {
                    if sig.params[p] != Ty::F64 {
                        return Err(invalid(
                            arg.span(),
                            format!(
                                "parameter {p} of `{}` has type `{}`; nested gradients differentiate `f64` parameters",
                                sig.name, sig.params[p]
                            ),
                        ));
                    }
                    position[k] = Some(p);
                }
                None => {
                    if let Some((name, _)) = names.iter().find(|(n, _)| mentions(arg.to_token_stream(), n)) {
                        return Err(unsupported(
                            arg.span(),
                            format!("closure parameters inside an argument expression (`{name}`)"),
                            "pass each closure parameter whole, and compute with it inside the function",
                        ));
                    }
                }
            }
        }
        let mut wrt = Vec::with_capacity(names.len());
        for (k, p) in position.iter().enumerate() {
            match p {
                Some(p) => wrt.push(*p),
                None => {
                    return Err(invalid(
                        names[k].1,
                        format!("closure parameter `{}` is not passed to `{}`", names[k].0, sig.name),
                    ));
                }
            }
        }
        let point = self.point(point, names.len(), tuple)?;
        let mut values = Vec::with_capacity(sig.params.len());
        for (p, (arg, ty)) in call.args.iter().zip(&sig.params).enumerate() {
            values.push(match wrt.iter().position(|&w| w == p) {
                Some(k) => point[k],
                None if matches!(ty, Ty::Slice { .. }) => match self.lower_expr(arg, None)? {
                    Lowered::Value(op) if matches!(op.ty, Ty::Slice { .. }) => op.value,
                    other => return Err(crate::expr::type_error(arg.span(), ty, &other.ty(), Some(arg))),
                },
                None => self.scalar_of(arg, ty)?.value,
            });
        }
        let mut sorted = wrt.clone();
        sorted.sort_unstable();
        let decl = self.declare_derivative(&sig.name, &sig.params, mode, &sorted);
        let partials = self.ssa.call(Callee::Extern(decl), values, &vec![Type::F64; sorted.len()]);
        // Back in the closure's order.
        let mut out: Vec<Operand> = wrt
            .iter()
            .map(|w| Operand { value: partials[sorted.iter().position(|s| s == w).unwrap_or(0)], ty: Ty::F64 })
            .collect();
        Ok(if tuple { Lowered::Tuple(out) } else { Lowered::Value(out.remove(0)) })
    }

    /// The point: one `f64`, or a tuple of `count`.
    fn point(&mut self, point: &syn::Expr, count: usize, tuple: bool) -> Result<Vec<Value>> {
        if !tuple {
            return Ok(vec![self.scalar_of(point, &Ty::F64)?.value]);
        }
        if let syn::Expr::Tuple(items) = strip(point)
            && items.elems.len() == count
        {
            return items.elems.iter().map(|e| Ok(self.scalar_of(e, &Ty::F64)?.value)).collect();
        }
        let expected = Ty::Tuple(vec![Ty::F64; count]);
        match self.lower_expr(point, Some(&expected))? {
            Lowered::Tuple(items) if items.iter().map(|i| &i.ty).eq(vec![Ty::F64; count].iter()) => {
                Ok(items.into_iter().map(|i| i.value).collect())
            }
            other => Err(crate::expr::type_error(point.span(), &expected, &other.ty(), Some(point))),
        }
    }

    /// The extern standing for the derivative of `@of` (declared once per mode and parameters).
    fn declare_derivative(&mut self, of: &str, params: &[Ty], mode: DiffMode, wrt: &[usize]) -> jitdiff_ir::ExternId {
        let derivative = DerivativeOf { of: of.to_string(), mode, wrt: wrt.to_vec() };
        let mut declared = self.ctx.declared.borrow_mut();
        if let Some(id) = declared
            .externs
            .iter()
            .find(|e| e.derivative.as_ref() == Some(&derivative))
            .and_then(|e| declared.extern_id(&e.name))
        {
            return id;
        }
        let suffix: Vec<String> = wrt.iter().map(|p| p.to_string()).collect();
        let base = format!("{of}__grad_{}_{}", mode.spelling(), suffix.join("_"));
        let mut name = base.clone();
        let mut k = 2;
        while self.ctx.functions.contains_key(&name) || declared.externs.iter().any(|e| e.name == name) {
            name = format!("{base}_{k}");
            k += 1;
        }
        declared.push_extern(ExternDecl {
            name,
            params: params.iter().filter_map(Ty::ir).collect(),
            returns: vec![Type::F64; wrt.len()],
            derivative: Some(derivative),
        })
    }
}

/// The closure's parameters: `|y|` or `|(y1, y2)|` (types `f64` optional), with their spans;
/// and whether they form a tuple.
fn closure_params(closure: &syn::ExprClosure) -> Result<(Vec<(String, Span)>, bool)> {
    let [pattern] = closure.inputs.iter().collect::<Vec<_>>()[..] else {
        return Err(unsupported(
            closure.inputs.span(),
            "closures of several parameters here",
            "take one tuple: `|(y1, y2)|`",
        ));
    };
    let pattern = match pattern {
        syn::Pat::Type(typed) => &*typed.pat,
        other => other,
    };
    let ident = |p: &syn::Pat| match p {
        syn::Pat::Ident(i) if i.by_ref.is_none() && i.subpat.is_none() => {
            Ok((crate::types::name_of(&i.ident), i.span()))
        }
        other => Err(unsupported(other.span(), "patterns other than names in the closure's parameters", SHAPE)),
    };
    Ok(match pattern {
        syn::Pat::Tuple(t) if !t.elems.is_empty() => (t.elems.iter().map(ident).collect::<Result<_>>()?, true),
        other => (vec![ident(other)?], false),
    })
}

/// `(e)`, `{ e }` → `e`.
fn strip(expr: &syn::Expr) -> &syn::Expr {
    match expr {
        syn::Expr::Paren(p) => strip(&p.expr),
        syn::Expr::Group(g) => strip(&g.expr),
        syn::Expr::Block(b) if b.block.stmts.len() == 1 => match &b.block.stmts[0] {
            syn::Stmt::Expr(e, None) => strip(e),
            _ => expr,
        },
        _ => expr,
    }
}

/// Whether the tokens mention the identifier `name` anywhere.
fn mentions(tokens: TokenStream, name: &str) -> bool {
    tokens.into_iter().any(|t| match t {
        TokenTree::Ident(i) => i == name,
        TokenTree::Group(g) => mentions(g.stream(), name),
        _ => false,
    })
}
