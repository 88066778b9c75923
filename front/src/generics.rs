//! Generic functions over a float type — `fn f<T: Float>(x: &[T]) -> T`, num-dual's
//! `fn f<D: DualNum<f64> + Copy>(x: &[D]) -> D` — lowered with every type parameter taken as
//! `f64`, the one instance the IR differentiates. The function is rewritten before lowering:
//!
//! - the type parameters (and `where` clauses about them) are dropped, and every use of one as a
//!   type (`&[T]`, `x as T`, `sum::<T>()`, `let a: T`) reads `f64`;
//! - the `num_traits` constructors become constants: `T::zero()` is `0.0`, `T::one()` `1.0`,
//!   `T::from(e).unwrap()`, `T::from(e)` and `T::from_f64(e).unwrap()` are `(e) as f64`,
//!   `T::epsilon()`, `T::infinity()`, `T::nan()`, `T::max_value()`, `T::PI()`, ... the `f64`
//!   constants;
//! - any other associated function `T::sqrt(x)`, `Float::max(a, b)` is `f64`'s;
//! - turbofish arguments of calls (`g::<T>(x)`) are dropped: every generic function has the one
//!   instance.
//!
//! Lifetimes and const generics are left alone (the latter stay unsupported).

use std::borrow::Cow;
use syn::visit_mut::VisitMut;

/// `items` with every generic function instantiated at `f64` (borrowed when there is none).
pub(crate) fn monomorphize(items: &[syn::Item]) -> Cow<'_, [syn::Item]> {
    if !items.iter().any(|item| matches!(item, syn::Item::Fn(f) if !type_params(&f.sig.generics).is_empty())) {
        return Cow::Borrowed(items);
    }
    let mut owned = items.to_vec();
    for item in &mut owned {
        if let syn::Item::Fn(f) = item {
            let params = type_params(&f.sig.generics);
            if params.is_empty() {
                continue;
            }
            f.sig.generics.params =
                f.sig.generics.params.iter().filter(|p| !matches!(p, syn::GenericParam::Type(_))).cloned().collect();
            if let Some(clause) = &mut f.sig.generics.where_clause {
                clause.predicates = clause
                    .predicates
                    .iter()
                    .filter(|p| !matches!(p, syn::WherePredicate::Type(t) if names_a_param(&t.bounded_ty, &params)))
                    .cloned()
                    .collect();
                if clause.predicates.is_empty() {
                    f.sig.generics.where_clause = None;
                }
            }
            let mut rewrite = AtF64 { params };
            rewrite.visit_signature_mut(&mut f.sig);
            rewrite.visit_block_mut(&mut f.block);
        }
    }
    Cow::Owned(owned)
}

/// The names of the type parameters of `generics`.
fn type_params(generics: &syn::Generics) -> Vec<String> {
    generics
        .params
        .iter()
        .filter_map(|p| match p {
            syn::GenericParam::Type(t) => Some(crate::types::name_of(&t.ident)),
            _ => None,
        })
        .collect()
}

/// Is `ty` one of `params`, written alone (`T`)?
fn names_a_param(ty: &syn::Type, params: &[String]) -> bool {
    match ty {
        syn::Type::Path(p) if p.qself.is_none() => {
            p.path.get_ident().is_some_and(|ident| params.contains(&crate::types::name_of(ident)))
        }
        syn::Type::Paren(p) => names_a_param(&p.elem, params),
        syn::Type::Group(g) => names_a_param(&g.elem, params),
        _ => false,
    }
}

/// The rewrite of one function's signature and body.
struct AtF64 {
    params: Vec<String>,
}

impl AtF64 {
    /// `T::name` (or `Float::name`, `num_traits::Float::name`): the associated function's name.
    fn associated<'p>(&self, path: &'p syn::Path) -> Option<&'p syn::Ident> {
        let segments: Vec<&syn::PathSegment> = path.segments.iter().collect();
        let [.., owner, function] = segments[..] else { return None };
        let owner_name = crate::types::name_of(&owner.ident);
        let is_float_type = (segments.len() == 2 && self.params.contains(&owner_name))
            || matches!(owner_name.as_str(), "Float" | "Real" | "FloatCore" | "DualNum");
        is_float_type.then_some(&function.ident)
    }

    /// The `f64` expression for `T::name(args)`, when `name` is a constructor or a constant.
    fn constructor(&self, name: &str, args: &[syn::Expr], span: proc_macro2::Span) -> Option<syn::Expr> {
        let constant = |path: syn::Expr| Some(path);
        match (name, args) {
            ("zero", []) => constant(syn::parse_quote_spanned!(span=> 0.0)),
            ("one", []) => constant(syn::parse_quote_spanned!(span=> 1.0)),
            (
                "from" | "from_f64" | "from_f32" | "from_i32" | "from_i64" | "from_u32" | "from_u64" | "from_usize"
                | "from_isize",
                [e],
            ) => constant(syn::parse_quote_spanned!(span=> ((#e) as f64))),
            ("epsilon", []) => constant(syn::parse_quote_spanned!(span=> f64::EPSILON)),
            ("infinity", []) => constant(syn::parse_quote_spanned!(span=> f64::INFINITY)),
            ("neg_infinity", []) => constant(syn::parse_quote_spanned!(span=> f64::NEG_INFINITY)),
            ("nan", []) => constant(syn::parse_quote_spanned!(span=> f64::NAN)),
            ("max_value", []) => constant(syn::parse_quote_spanned!(span=> f64::MAX)),
            ("min_value", []) => constant(syn::parse_quote_spanned!(span=> f64::MIN)),
            ("min_positive_value", []) => constant(syn::parse_quote_spanned!(span=> f64::MIN_POSITIVE)),
            ("neg_zero", []) => constant(syn::parse_quote_spanned!(span=> -0.0)),
            ("PI" | "E" | "TAU" | "SQRT_2" | "LN_2" | "LN_10" | "FRAC_PI_2" | "FRAC_PI_4" | "FRAC_1_SQRT_2", []) => {
                let ident = syn::Ident::new(name, span);
                constant(syn::parse_quote_spanned!(span=> std::f64::consts::#ident))
            }
            _ => None,
        }
    }
}

impl VisitMut for AtF64 {
    fn visit_type_mut(&mut self, ty: &mut syn::Type) {
        if names_a_param(ty, &self.params) {
            let span = syn::spanned::Spanned::span(ty);
            *ty = syn::parse_quote_spanned!(span=> f64);
            return;
        }
        syn::visit_mut::visit_type_mut(self, ty);
    }

    fn visit_expr_mut(&mut self, expr: &mut syn::Expr) {
        // `T::from(2.0).unwrap()` / `.expect("...")`: the conversion cannot fail for `f64`.
        if let syn::Expr::MethodCall(m) = expr
            && matches!(m.method.to_string().as_str(), "unwrap" | "expect")
            && let syn::Expr::Call(call) = &*m.receiver
            && let syn::Expr::Path(p) = &*call.func
            && let Some(name) = self.associated(&p.path)
            && name.to_string().starts_with("from")
        {
            let inner = (*m.receiver).clone();
            *expr = inner;
        }
        syn::visit_mut::visit_expr_mut(self, expr);
        if let syn::Expr::Call(call) = expr
            && let syn::Expr::Path(p) = &*call.func
            && p.qself.is_none()
        {
            if let Some(name) = self.associated(&p.path) {
                let span = syn::spanned::Spanned::span(&p.path);
                let args: Vec<syn::Expr> = call.args.iter().cloned().collect();
                let name = name.to_string();
                match self.constructor(&name, &args, span) {
                    Some(replacement) => *expr = replacement,
                    None => {
                        let ident = syn::Ident::new(&name, span);
                        let function: syn::Expr = syn::parse_quote_spanned!(span=> f64::#ident);
                        *call.func = function;
                    }
                }
                return;
            }
            // `g::<T>(x)`: every generic function has one instance, taken without arguments.
            if let syn::Expr::Call(call) = expr
                && let syn::Expr::Path(p) = &mut *call.func
                && p.path.segments.len() == 1
                && let Some(last) = p.path.segments.last_mut()
                && matches!(last.arguments, syn::PathArguments::AngleBracketed(_))
            {
                last.arguments = syn::PathArguments::None;
            }
        }
    }
}
