//! Associated constants of a struct's inherent `impl` block (`impl Model { const SCALE: f64 =
//! 2.0; ... }`), hoisted before lowering into module-level constants named `Model__SCALE` (as
//! methods become `Model__method`), and every `Self::SCALE` in the block and `Model::SCALE`
//! anywhere reading that constant. Trait `impl`s (the arithmetic operators) keep theirs, which
//! stay an error.

use std::borrow::Cow;
use std::collections::HashSet;
use syn::visit_mut::VisitMut;

/// `items` with the associated constants hoisted (borrowed when there is none).
pub(crate) fn hoist(items: &[syn::Item]) -> Cow<'_, [syn::Item]> {
    let has_constants = |item: &syn::Item| {
        matches!(item, syn::Item::Impl(block) if block.trait_.is_none()
            && struct_name(&block.self_ty).is_some()
            && block.items.iter().any(|i| matches!(i, syn::ImplItem::Const(_))))
    };
    if !items.iter().any(has_constants) {
        return Cow::Borrowed(items);
    }
    let mut owned = items.to_vec();
    let mut hoisted = vec![];
    let mut known: HashSet<(String, String)> = HashSet::new();
    for item in &mut owned {
        let syn::Item::Impl(block) = item else { continue };
        if block.trait_.is_some() {
            continue;
        }
        let Some(owner) = struct_name(&block.self_ty) else { continue };
        block.items.retain(|impl_item| {
            let syn::ImplItem::Const(c) = impl_item else { return true };
            known.insert((owner.clone(), c.ident.to_string()));
            let ident = syn::Ident::new(&format!("{owner}__{}", c.ident), c.ident.span());
            let (ty, expr, attrs) = (&c.ty, &c.expr, &c.attrs);
            hoisted.push((owner.clone(), syn::parse_quote!(#(#attrs)* const #ident: #ty = #expr;)));
            false
        });
    }
    // Paths inside each block read `Self` as the block's struct.
    for item in &mut owned {
        let owner = match item {
            syn::Item::Impl(block) => struct_name(&block.self_ty),
            _ => None,
        };
        Paths { known: &known, owner }.visit_item_mut(item);
    }
    for (owner, mut constant) in hoisted {
        Paths { known: &known, owner: Some(owner) }.visit_item_mut(&mut constant);
        owned.push(constant);
    }
    Cow::Owned(owned)
}

/// `Model` of `impl Model` / `impl<'a> Model<'a>`.
fn struct_name(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
            Some(p.path.segments[0].ident.to_string())
        }
        _ => None,
    }
}

/// Rewrites `Owner::NAME` (and `Self::NAME` where `Self` is `owner`) of a hoisted constant.
struct Paths<'a> {
    known: &'a HashSet<(String, String)>,
    owner: Option<String>,
}

impl VisitMut for Paths<'_> {
    fn visit_expr_path_mut(&mut self, path: &mut syn::ExprPath) {
        let segments = &path.path.segments;
        if path.qself.is_some() || segments.len() != 2 {
            return;
        }
        let first = segments[0].ident.to_string();
        let owner = if first == "Self" { self.owner.clone() } else { Some(first) };
        let name = segments[1].ident.to_string();
        let Some(owner) = owner.filter(|o| self.known.contains(&(o.clone(), name.clone()))) else { return };
        let ident = syn::Ident::new(&format!("{owner}__{name}"), segments[1].ident.span());
        *path = syn::parse_quote!(#ident);
    }
}
