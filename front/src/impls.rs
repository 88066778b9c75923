//! `impl` blocks of the source's structs: each method or associated function becomes a free
//! function `Struct__name` whose first parameter, for a method, is `self` of the struct's type
//! (`self`, `mut self`, `&self`; `&mut self` also returns the new `self` after its own results,
//! which the call writes back to the receiver). `Self` names the struct inside the block.
//! `s.energy(k)` calls `State__energy(s, k)`, `State::new(x)` and `Self::new(x)` call
//! `State__new(x)`.
//!
//! ```
//! let src = "struct P { x: f64, y: f64 }
//! impl P {
//!     fn new(x: f64) -> Self { P { x, y: 2.0 * x } }
//!     fn norm2(&self) -> f64 { self.x * self.x + self.y * self.y }
//!     fn scale(&mut self, k: f64) { self.x *= k; self.y *= k; }
//! }
//! fn f(x: f64) -> f64 { let mut p = P::new(x); p.scale(3.0); p.norm2() }";
//! let module = jitdiff_front::lower_source(src).unwrap();
//! assert!(module.func_by_name("P__norm2").is_some());
//! ```

use crate::error::{Result, invalid, unsupported};
use proc_macro2::Span;
use syn::spanned::Spanned;

/// A method or associated function of a struct, as the free function it lowers to.
pub(crate) struct Method {
    /// The function, named `Struct__name`, with `self` as a typed first parameter.
    pub item: syn::ItemFn,
    /// The struct (`Self` inside the function).
    pub self_ty: String,
    /// A method (it has a `self` parameter), not an associated function.
    pub method: bool,
    /// `&mut self`: the function also returns the new `self`.
    pub updates_receiver: bool,
}

/// The IR name of `method` of `ty`.
pub(crate) fn ir_name(ty: &str, method: &str) -> String {
    format!("{ty}__{method}")
}

/// The functions of every `impl` block among `items` (the structs must be defined already).
pub(crate) fn desugar(items: &[syn::Item]) -> Result<Vec<Method>> {
    let mut methods = vec![];
    for item in items {
        let syn::Item::Impl(block) = item else { continue };
        let operator = match &block.trait_ {
            None => None,
            Some((_, path, _)) => Some(operator_trait(path)?),
        };
        if !block.generics.params.iter().all(|p| matches!(p, syn::GenericParam::Lifetime(_))) {
            return Err(unsupported(
                block.generics.span(),
                "generic `impl` blocks",
                "implement the methods for one struct",
            ));
        }
        // `impl Data`, `impl<'a> Data<'a>`, `impl Data<'_>`.
        let self_ty = match &*block.self_ty {
            syn::Type::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
                let segment = &p.path.segments[0];
                let lifetimes_only = match &segment.arguments {
                    syn::PathArguments::None => true,
                    syn::PathArguments::AngleBracketed(a) => {
                        a.args.iter().all(|g| matches!(g, syn::GenericArgument::Lifetime(_)))
                    }
                    syn::PathArguments::Parenthesized(_) => false,
                };
                lifetimes_only.then(|| crate::types::name_of(&segment.ident))
            }
            _ => None,
        };
        // An operator may also be implemented for `f64` (`impl Mul<V> for f64`).
        let allowed = |name: &String| crate::structs::lookup(name).is_some() || (operator.is_some() && name == "f64");
        let Some(self_ty) = self_ty.filter(allowed) else {
            return Err(unsupported(
                block.self_ty.span(),
                "`impl` blocks for anything but a struct of this source",
                "define the struct, with named fields, in the same source",
            ));
        };
        for impl_item in &block.items {
            // `type Output = V;` of an operator: the function's result type says it again.
            if operator.is_some() && matches!(impl_item, syn::ImplItem::Type(_)) {
                continue;
            }
            let syn::ImplItem::Fn(f) = impl_item else {
                return Err(unsupported(
                    impl_item.span(),
                    "`impl` items other than functions and constants (associated types, macros, and constants of operator `impl`s)",
                    "use the type itself, or a module-level `const` or a constant of a plain `impl Struct` block",
                ));
            };
            let mut m = method(&self_ty, f)?;
            if let Some((method_name, right)) = &operator {
                if crate::types::name_of(&f.sig.ident) != *method_name {
                    return Err(invalid(
                        f.sig.ident.span(),
                        format!("this `impl` implements `{method_name}`; no other function belongs in it"),
                    ));
                }
                let right = right.clone().unwrap_or_else(|| self_ty.clone());
                let binary = crate::overload::OPERATOR_TRAITS.iter().any(|&(_, m, b)| m == *method_name && b);
                check_operator_signature(&f.sig, method_name, binary, &right)?;
                let name = crate::overload::operator_function(&self_ty, method_name, binary.then_some(right.as_str()));
                m.item.sig.ident = syn::Ident::new(&name, f.sig.ident.span());
            }
            methods.push(m);
        }
    }
    Ok(methods)
}

/// An operator's function takes what its `std::ops` trait declares: `self` by value (`add`,
/// `neg`, ...) or `&mut self` (`add_assign`, ...), and one right operand when binary. A call
/// of the operator assumes that shape (an `_assign` call writes the receiver back).
fn check_operator_signature(sig: &syn::Signature, method: &str, binary: bool, right: &str) -> Result<()> {
    let assign = method.ends_with("_assign");
    let receiver = match sig.inputs.first() {
        Some(syn::FnArg::Receiver(r)) => Some(r),
        _ => None,
    };
    let receiver_ok = receiver
        .is_some_and(|r| if assign { r.reference.is_some() && r.mutability.is_some() } else { r.reference.is_none() });
    let arity_ok = sig.inputs.len() == if binary { 2 } else { 1 };
    if receiver_ok && arity_ok {
        return Ok(());
    }
    let expected = match (assign, binary) {
        (true, _) => format!("fn {method}(&mut self, rhs: {right})"),
        (false, true) => format!("fn {method}(self, rhs: {right}) -> Self::Output"),
        (false, false) => format!("fn {method}(self) -> Self::Output"),
    };
    let span = match receiver {
        Some(r) if !receiver_ok => r.span(),
        _ if sig.inputs.is_empty() => sig.ident.span(),
        _ => sig.inputs.span(),
    };
    Err(invalid(span, format!("`{method}` must have the signature its `std::ops` trait declares: `{expected}`")))
}

/// The `std::ops` trait `path` names (`Add`, `std::ops::Mul<f64>`): its method and the right
/// operand's type when written (`None`: `Self`).
fn operator_trait(path: &syn::Path) -> Result<(&'static str, Option<String>)> {
    let not_operator = || {
        unsupported(
            path.span(),
            "trait implementations other than the arithmetic operators of `std::ops`",
            "write the methods in a plain `impl Struct` block",
        )
    };
    let segments: Vec<String> = path.segments.iter().map(|s| crate::types::name_of(&s.ident)).collect();
    let Some((last, prefix)) = segments.split_last() else { return Err(not_operator()) };
    if !matches!(prefix.iter().map(String::as_str).collect::<Vec<_>>()[..], [] | ["ops"] | ["std" | "core", "ops"]) {
        return Err(not_operator());
    }
    let Some(&(_, method, _)) = crate::overload::OPERATOR_TRAITS.iter().find(|(t, _, _)| t == last) else {
        return Err(not_operator());
    };
    let right = match path.segments.last().map(|s| &s.arguments) {
        Some(syn::PathArguments::AngleBracketed(args)) => match args.args.first() {
            Some(syn::GenericArgument::Type(syn::Type::Path(p))) if args.args.len() == 1 && p.qself.is_none() => {
                p.path.get_ident().map(crate::types::name_of)
            }
            _ => return Err(not_operator()),
        },
        _ => None,
    };
    Ok((method, right))
}

/// `fn name(&self, ...)` of `self_ty` as `fn Struct__name(self: Struct, ...)`.
fn method(self_ty: &str, f: &syn::ImplItemFn) -> Result<Method> {
    let mut sig = f.sig.clone();
    let name = crate::types::name_of(&sig.ident);
    sig.ident = syn::Ident::new(&ir_name(self_ty, &name), sig.ident.span());
    let mut updates_receiver = false;
    let is_method = matches!(sig.inputs.first(), Some(syn::FnArg::Receiver(_)));
    if let Some(syn::FnArg::Receiver(receiver)) = sig.inputs.first() {
        if receiver.colon_token.is_some() {
            return Err(unsupported(
                receiver.span(),
                "`self` parameters with a written type (`self: Box<Self>`)",
                "write `self`, `&self` or `&mut self`",
            ));
        }
        let by_mut_ref = receiver.reference.is_some() && receiver.mutability.is_some();
        updates_receiver = by_mut_ref;
        let mutable = receiver.mutability.is_some();
        let span = receiver.self_token.span;
        let typed = syn::PatType {
            attrs: vec![],
            pat: Box::new(syn::Pat::Ident(syn::PatIdent {
                attrs: vec![],
                by_ref: None,
                mutability: mutable.then(|| syn::Token![mut](span)),
                ident: syn::Ident::new("self", span),
                subpat: None,
            })),
            colon_token: syn::Token![:](span),
            ty: Box::new(struct_type(self_ty, span)),
        };
        sig.inputs[0] = syn::FnArg::Typed(typed);
    }
    if let Some(receiver) = sig.inputs.iter().skip(1).find(|a| matches!(a, syn::FnArg::Receiver(_))) {
        return Err(invalid(receiver.span(), "`self` must be the first parameter"));
    }
    let item = syn::ItemFn { attrs: f.attrs.clone(), vis: f.vis.clone(), sig, block: Box::new(f.block.clone()) };
    Ok(Method { item, self_ty: self_ty.to_string(), method: is_method, updates_receiver })
}

/// The type `name` (a path of one identifier).
fn struct_type(name: &str, span: Span) -> syn::Type {
    syn::Type::Path(syn::TypePath { qself: None, path: syn::Path::from(syn::Ident::new(name, span)) })
}

impl crate::lower::Lowerer<'_> {
    /// After a call of the `&mut self` method `sig` on `receiver`: write the new `self` (`values`)
    /// back to the receiver, a struct variable or a field of one (`s`, `&mut s`, `s.inner`).
    pub(crate) fn write_back_receiver(
        &mut self,
        sig: &crate::module::FnSig,
        receiver: &syn::Expr,
        values: Vec<jitdiff_ir::Value>,
    ) -> Result<()> {
        let mut place = receiver;
        while let syn::Expr::Reference(syn::ExprReference { expr: inner, .. })
        | syn::Expr::Paren(syn::ExprParen { expr: inner, .. }) = place
        {
            place = inner;
        }
        let Some((first, ty)) = self.struct_place(place)? else {
            return Err(unsupported(
                receiver.span(),
                format!("calls of the `&mut self` method `{}` on anything but a struct variable or field", sig.shown),
                "bind the struct to a `let mut` variable first",
            ));
        };
        let crate::types::Ty::Struct(ty) = ty else { return Ok(()) };
        // The fields that can change (not the slices), in order.
        let leaves = ty.leaves();
        for (k, value) in ty.changeable().into_iter().zip(values) {
            let item = crate::lower::Operand { value, ty: leaves[k].clone() };
            self.assign_slot(first + k, item, receiver.span(), Some(receiver))?;
        }
        Ok(())
    }
}

impl crate::lower::Lowerer<'_> {
    /// `State::name(args)` or `Self::name(args)`: the function of `impl State`, if there is one.
    pub(crate) fn associated_function(&self, path: &str) -> Option<&crate::module::FnSig> {
        let (ty, name) = path.split_once("::")?;
        let ty = if ty == "Self" { crate::structs::lookup("Self")?.name.clone() } else { ty.to_string() };
        self.ctx.functions.get(&ir_name(&ty, name))
    }

    /// `receiver.name(args)` on a struct variable or field: a call of the method, if the
    /// receiver is one (`None` otherwise, for the other kinds of method calls).
    pub(crate) fn struct_method_call(&mut self, call: &syn::ExprMethodCall) -> Result<Option<crate::lower::Lowered>> {
        let Some((_, crate::types::Ty::Struct(ty))) = self.struct_place(&call.receiver)? else { return Ok(None) };
        let name = crate::types::name_of(&call.method);
        let sig = match self.ctx.functions.get(&ir_name(&ty.name, &name)) {
            Some(sig) if sig.method => sig.clone(),
            Some(_) => {
                return Err(invalid(
                    call.method.span(),
                    format!("`{0}::{name}` has no `self` parameter; call it as `{0}::{name}(...)`", ty.name),
                ));
            }
            // `#[derive(Clone)]`'s `clone()`: the value itself (structs are copied anyway).
            None if name == "clone" && call.args.is_empty() => {
                return self.lower_expr(&call.receiver, None).map(Some);
            }
            None => {
                return Err(invalid(
                    call.method.span(),
                    format!(
                        "`{}` has no method `{name}`; define it in an `impl {}` block of the source",
                        ty.name, ty.name
                    ),
                ));
            }
        };
        // Counted as written: `self` is the receiver, not an argument.
        let expected = sig.params.len().saturating_sub(1);
        if call.args.len() != expected {
            let kind =
                crate::error::FrontErrorKind::ArgCount { name: sig.shown.clone(), expected, found: call.args.len() };
            return Err(crate::error::FrontError::new(call.span(), kind));
        }
        let mut args: Vec<&syn::Expr> = vec![&call.receiver];
        args.extend(call.args.iter());
        self.call_function(&sig, &args, call.span()).map(Some)
    }
}
