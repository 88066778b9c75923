//! `x.first()` and `x.last()` of a slice or view, their `Option` taken apart where it is made —
//! `.unwrap()`, `.expect("..")`, `.unwrap_or(d)`, `.is_some()`, `.is_none()`, with `.copied()` or
//! `.cloned()` between — lowered as the Rust they stand for:
//!
//! - `x.last().unwrap()` is `{ assert!(!x.is_empty()); x[x.len() - 1] }` (a `Panic` fault on an
//!   empty slice, where Rust panics), `x.first().unwrap()` the same with `x[0]`;
//! - `x.last().copied().unwrap_or(d)` is `if x.is_empty() { d } else { x[x.len() - 1] }`;
//! - `x.first().is_some()` is `!x.is_empty()`.
//!
//! Through `map`, with a default (`map_or`, ...), in `if let Some(v) = ..`, and for `x.get(k)`,
//! they are written as the iterator picks they are (`x.iter().take(1).last()`, ...), which
//! `pick.rs` lowers.

use crate::error::{Result, invalid};
use crate::lower::{Lowered, Lowerer};
use syn::spanned::Spanned;

/// `outer` is a method taking an `Option` apart, and its receiver `x.first()` / `x.last()`
/// (through `copied`/`cloned`): the slice expression and whether it is `last`.
pub(crate) fn end_of(outer: &syn::ExprMethodCall) -> Option<(&syn::Expr, bool)> {
    if !matches!(outer.method.to_string().as_str(), "unwrap" | "expect" | "unwrap_or" | "is_some" | "is_none") {
        return None;
    }
    let mut at = crate::iter::peel_parens(&outer.receiver);
    while let syn::Expr::MethodCall(m) = at
        && matches!(m.method.to_string().as_str(), "copied" | "cloned")
        && m.args.is_empty()
    {
        at = crate::iter::peel_parens(&m.receiver);
    }
    let syn::Expr::MethodCall(end) = at else { return None };
    let last = match end.method.to_string().as_str() {
        "first" => false,
        "last" => true,
        _ => return None,
    };
    end.args.is_empty().then_some((&*end.receiver, last))
}

/// `outer` with the `x.first()`, `x.last()` or `x.get(k)` its receiver chain (through `copied`,
/// `cloned` and `map`) ends in written as the iterator pick it is (see [`as_pick`]), so that
/// every way of taking a pick's `Option` apart applies (`.map(|v| ..).unwrap_or(d)`,
/// `.map_or(d, |v| ..)`, ...). `None` when the chain does not end in one.
pub(crate) fn as_iterator_pick(outer: &syn::ExprMethodCall) -> Option<syn::ExprMethodCall> {
    let mut rewritten = outer.clone();
    rewrite_end(&mut rewritten.receiver).then_some(rewritten)
}

/// The `Option` expression `option` (`x.first()`, `x.get(k).copied()`, `x.last().map(..)`) with
/// its slice end written as an iterator pick: the only item of `x.iter().take(1)`, of
/// `x.iter().rev().take(1)` or of `x.iter().skip(k).take(1)`, each `.last()`.
pub(crate) fn as_pick(option: &syn::Expr) -> Option<syn::Expr> {
    let mut rewritten = option.clone();
    rewrite_end(&mut rewritten).then_some(rewritten)
}

/// Replace the slice end `expr` (a chain of `copied`, `cloned` and `map`) ends in.
fn rewrite_end(expr: &mut syn::Expr) -> bool {
    let pick: syn::Expr = match expr {
        syn::Expr::Paren(p) => return rewrite_end(&mut p.expr),
        syn::Expr::MethodCall(call) if !crate::iter::is_iterator(&call.receiver) => {
            let (slice, span) = (&call.receiver, call.span());
            match (call.method.to_string().as_str(), &call.args.iter().collect::<Vec<_>>()[..]) {
                ("copied" | "cloned", []) | ("map", [_]) => return rewrite_end(&mut call.receiver),
                ("first", []) => syn::parse_quote_spanned!(span=> #slice.iter().take(1).last()),
                ("last", []) => syn::parse_quote_spanned!(span=> #slice.iter().rev().take(1).last()),
                ("get", [k]) => syn::parse_quote_spanned!(span=> #slice.iter().skip(#k).take(1).last()),
                _ => return false,
            }
        }
        _ => return false,
    };
    *expr = pick;
    true
}

impl Lowerer<'_> {
    /// `x.first()` / `x.last()` (`slice`, `last`) taken apart by `outer` (see the module doc).
    pub(crate) fn lower_slice_end(
        &mut self,
        outer: &syn::ExprMethodCall,
        slice: &syn::Expr,
        last: bool,
    ) -> Result<Lowered> {
        let span = outer.span();
        let method = outer.method.to_string();
        let arity = usize::from(matches!(method.as_str(), "unwrap_or" | "expect"));
        if outer.args.len() != arity {
            let plural = if arity == 1 { "" } else { "s" };
            return Err(invalid(span, format!("`{method}` takes {arity} argument{plural}")));
        }
        let element: syn::Expr = if last {
            syn::parse_quote_spanned!(span=> #slice[#slice.len() - 1])
        } else {
            syn::parse_quote_spanned!(span=> #slice[0])
        };
        let expr: syn::Expr = match method.as_str() {
            "is_some" => syn::parse_quote_spanned!(span=> !#slice.is_empty()),
            "is_none" => syn::parse_quote_spanned!(span=> #slice.is_empty()),
            "unwrap_or" => {
                let default = &outer.args[0];
                syn::parse_quote_spanned!(span=> if #slice.is_empty() { #default } else { #element })
            }
            _ => syn::parse_quote_spanned!(span=> { assert!(!#slice.is_empty()); #element }),
        };
        self.lower_expr(&expr, None)
    }
}
