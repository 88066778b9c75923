//! Functions returning `[f64; N]` (`fn grad(x: f64, y: f64) -> [f64; 2]`), rewritten before
//! lowering into what the front end has: a function returning an `N`-tuple, whose every call is
//! the local array of the tuple's elements.
//!
//! - The result type becomes `(f64, ..., f64)`, and each value the function returns (its tail
//!   expression, through `if`, `match` and blocks, and every `return e`) becomes a tuple: an
//!   array literal `[a, b]` is `(a, b)`, `[v; N]` repeats `v`, any other array `e` is
//!   `{ let r = e; (r[0], r[1]) }`.
//! - A call `grad(x, y)` becomes `({ let (r0, r1) = grad(x, y); [r0, r1] })`: a local array,
//!   indexed, iterated, passed on or destructured (`let [gx, gy] = grad(x, y);`) as any.
//!
//! `N` (2 to 64) is an integer literal or a `const` item of the source holding one. Methods
//! returning arrays are left as they are (and stay an error).
//!
//! And `let a: [f64; N] = std::array::from_fn(|i| ..);` is `(0..N).map(|i| ..).collect()`.

use std::borrow::Cow;
use std::collections::HashMap;
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;

/// `items` with its array-returning functions rewritten (borrowed when there is none).
pub(crate) fn desugar(items: &[syn::Item]) -> Cow<'_, [syn::Item]> {
    let constants: HashMap<String, usize> = items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Const(c) => Some((c.ident.to_string(), literal_length(&c.expr)?)),
            _ => None,
        })
        .collect();
    let lengths: HashMap<String, usize> = items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Fn(f) => Some((f.sig.ident.to_string(), array_result(&f.sig.output, &constants)?)),
            _ => None,
        })
        .collect();
    let mut owned = items.to_vec();
    let mut from_fn = FromFn { constants: &constants, found: false };
    owned.iter_mut().for_each(|item| from_fn.visit_item_mut(item));
    if lengths.is_empty() && !from_fn.found {
        return Cow::Borrowed(items);
    }
    for item in &mut owned {
        let syn::Item::Fn(f) = item else {
            // Calls inside methods too.
            CallsAsArrays { lengths: &lengths }.visit_item_mut(item);
            continue;
        };
        CallsAsArrays { lengths: &lengths }.visit_block_mut(&mut f.block);
        let Some(&n) = lengths.get(&f.sig.ident.to_string()) else { continue };
        let span = f.sig.output.span();
        let elements = std::iter::repeat_n(quote::quote_spanned!(span=> f64), n);
        f.sig.output = syn::parse_quote_spanned!(span=> -> (#(#elements),*));
        ReturnsAsTuples { n }.visit_block_mut(&mut f.block);
        tail_as_tuple(&mut f.block, n);
    }
    Cow::Owned(owned)
}

/// `N` of `-> [f64; N]`.
fn array_result(output: &syn::ReturnType, constants: &HashMap<String, usize>) -> Option<usize> {
    let syn::ReturnType::Type(_, ty) = output else { return None };
    array_length(ty, constants)
}

/// `N` of `[f64; N]`, from 2 to 64, a literal or a `const`.
fn array_length(ty: &syn::Type, constants: &HashMap<String, usize>) -> Option<usize> {
    let syn::Type::Array(array) = ty else { return None };
    let syn::Type::Path(elem) = &*array.elem else { return None };
    if !elem.path.is_ident("f64") {
        return None;
    }
    let n = match &array.len {
        syn::Expr::Path(p) => constants.get(&p.path.get_ident()?.to_string()).copied(),
        other => literal_length(other),
    }?;
    // One element (no tuple of one in the front end), zero or absurd lengths stay an error.
    (2..=64).contains(&n).then_some(n)
}

fn literal_length(expr: &syn::Expr) -> Option<usize> {
    match expr {
        syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => i.base10_parse().ok(),
        _ => None,
    }
}

/// The names `r0 .. r{n-1}` of a call's results (not names user code can write: `__` and a
/// number, as the front end's other hidden names).
fn result_names(n: usize, span: proc_macro2::Span) -> Vec<syn::Ident> {
    (0..n).map(|k| syn::Ident::new(&format!("array_result__{k}"), span)).collect()
}

/// Every call of an array-returning function becomes the local array of its results.
struct CallsAsArrays<'a> {
    lengths: &'a HashMap<String, usize>,
}

impl VisitMut for CallsAsArrays<'_> {
    fn visit_expr_mut(&mut self, expr: &mut syn::Expr) {
        syn::visit_mut::visit_expr_mut(self, expr);
        let syn::Expr::Call(call) = expr else { return };
        let syn::Expr::Path(path) = &*call.func else { return };
        let Some(&n) = path.path.get_ident().and_then(|name| self.lengths.get(&name.to_string())) else { return };
        let span = call.span();
        let names = result_names(n, span);
        *expr = syn::parse_quote_spanned!(span=> ({ let (#(#names),*) = #call; [#(#names),*] }));
    }
}

/// Every `return e` of an array-returning function returns the tuple of `e`'s elements.
struct ReturnsAsTuples {
    n: usize,
}

impl VisitMut for ReturnsAsTuples {
    fn visit_expr_mut(&mut self, expr: &mut syn::Expr) {
        // A closure's `return` leaves the closure, not the function.
        if matches!(expr, syn::Expr::Closure(_)) {
            return;
        }
        syn::visit_mut::visit_expr_mut(self, expr);
        if let syn::Expr::Return(ret) = expr
            && let Some(value) = &mut ret.expr
        {
            as_tuple(value, self.n);
        }
    }

    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}

/// The block's tail expression as a tuple (see [`as_tuple`]).
fn tail_as_tuple(block: &mut syn::Block, n: usize) {
    if let Some(syn::Stmt::Expr(tail, None)) = block.stmts.last_mut() {
        as_tuple(tail, n);
    }
}

/// The array `expr` evaluates to, as a tuple of its `n` elements: through `if`, `match`, blocks
/// and parentheses to the values themselves.
fn as_tuple(expr: &mut syn::Expr, n: usize) {
    let span = expr.span();
    match expr {
        syn::Expr::Paren(p) => as_tuple(&mut p.expr, n),
        syn::Expr::Block(b) => tail_as_tuple(&mut b.block, n),
        syn::Expr::If(i) => {
            tail_as_tuple(&mut i.then_branch, n);
            if let Some((_, other)) = &mut i.else_branch {
                as_tuple(other, n);
            }
        }
        syn::Expr::Match(m) => m.arms.iter_mut().for_each(|arm| as_tuple(&mut arm.body, n)),
        syn::Expr::Array(a) if a.elems.len() == n => {
            let elems = &a.elems;
            *expr = syn::parse_quote_spanned!(span=> (#elems));
        }
        syn::Expr::Repeat(r) => {
            let value = &r.expr;
            let names = vec![syn::Ident::new("array_element__", span); n];
            *expr = syn::parse_quote_spanned!(span=> { let array_element__ = #value; (#(#names),*) });
        }
        // `return`, `panic!(..)`, `loop` without a value: nothing to convert.
        syn::Expr::Return(_) | syn::Expr::Macro(_) => {}
        other => {
            let indices = (0..n).map(syn::Index::from);
            *other = syn::parse_quote_spanned!(span=> { let array_value__ = #other; (#(array_value__[#indices]),*) });
        }
    }
}

/// `let a: [f64; N] = std::array::from_fn(f);` (also `core::`, `array::from_fn`): the array of
/// `f(0) .. f(N - 1)`, as `(0..N).map(f).collect::<Vec<f64>>()` makes it. `found` says whether
/// there was one.
struct FromFn<'a> {
    constants: &'a HashMap<String, usize>,
    found: bool,
}

impl VisitMut for FromFn<'_> {
    fn visit_local_mut(&mut self, local: &mut syn::Local) {
        syn::visit_mut::visit_local_mut(self, local);
        let syn::Pat::Type(typed) = &local.pat else { return };
        let Some(n) = array_length(&typed.ty, self.constants).or_else(|| one_element(&typed.ty)) else { return };
        let Some(init) = &mut local.init else { return };
        let syn::Expr::Call(call) = &*init.expr else { return };
        let syn::Expr::Path(path) = &*call.func else { return };
        let names: Vec<String> = path.path.segments.iter().map(|s| s.ident.to_string()).collect();
        let is_from_fn = matches!(
            names.iter().map(String::as_str).collect::<Vec<_>>()[..],
            ["std" | "core", "array", "from_fn"] | ["array", "from_fn"]
        );
        let [f] = &call.args.iter().collect::<Vec<_>>()[..] else { return };
        if !is_from_fn {
            return;
        }
        let span = call.span();
        *init.expr = syn::parse_quote_spanned!(span=> (0..#n).map(#f).collect::<Vec<f64>>());
        self.found = true;
    }
}

/// `[f64; 1]`: 1 (a one-element array is fine as a local).
fn one_element(ty: &syn::Type) -> Option<usize> {
    let syn::Type::Array(array) = ty else { return None };
    (literal_length(&array.len) == Some(1)).then_some(1)
}
