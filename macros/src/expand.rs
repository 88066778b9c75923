//! The two attributes' expansions, and the guard that turns any failure — a front-end error, a
//! misuse of the attribute, a panic — into a compile error beside the item, emitted unchanged
//! (so that the rest of the crate still sees the function and reports nothing spurious).

use crate::emit::{self, Ir};
use crate::errors::{SpanIndex, front_error};
use crate::signature::Signature;
use jitdiff_ir::{Module, parse_module, print_module};
use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{ToTokens, quote};
use std::panic::{AssertUnwindSafe, catch_unwind};
use syn::ext::IdentExt;

/// An expansion: the attribute's arguments and the item, to the output.
type Expansion = fn(TokenStream, TokenStream) -> syn::Result<TokenStream>;

/// Run `expand`; on an error or a panic, emit the item unchanged and a compile error.
pub(crate) fn guarded(which: &str, attr: TokenStream, item: TokenStream, expand: Expansion) -> TokenStream {
    let original = item.clone();
    let error = match catch_unwind(AssertUnwindSafe(|| expand(attr, item))) {
        Ok(Ok(tokens)) => return tokens,
        Ok(Err(error)) => error,
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            let name = item_name(&original).unwrap_or_else(|| "this item".into());
            syn::Error::new(
                Span::call_site(),
                format!(
                    "internal error in #[jitdiff::{which}] while lowering `{name}`: {message}; please report it with the source"
                ),
            )
        }
    };
    let mut out = original;
    out.extend(error.to_compile_error());
    out
}

/// `#[jitdiff::function]`: the `fn` unchanged, and `mod name { ... }` beside it.
pub(crate) fn function(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    no_arguments(attr, "function")?;
    let f: syn::ItemFn = syn::parse2(item.clone()).map_err(|_| {
        syn::Error::new(
            Span::call_site(),
            "#[jitdiff::function] applies to a `fn`; for several functions that call each other, put them in a `#[jitdiff::module] mod`",
        )
    })?;
    let index = SpanIndex::of(&item);
    let name_span = f.sig.ident.span();
    let lowered = jitdiff_front::lower_items_as_written(&[syn::Item::Fn(f.clone())])
        .map_err(|e| front_error(&e, &index, name_span, true))?;
    let module = &lowered.module;
    let ir = checked_text(module, name_span)?;
    // The handles spell the lowered function's types: a generic one's at `f64`.
    let instance = match jitdiff_front::instantiate_generics(&[syn::Item::Fn(f.clone())]).pop() {
        Some(syn::Item::Fn(instance)) => instance,
        _ => return Err(internal(name_span, "the function vanished while instantiating its generics")),
    };
    let mut sig = Signature::of(&instance, module, &[])
        .ok_or_else(|| internal(name_span, "the function is missing from its module"))?;
    sig.type_params = f.sig.generics.type_params().count();
    let handles = emit::handles(&sig, Ir::Own(&ir, as_written_items(&lowered)));
    Ok(quote!(#item #handles))
}

/// `#[jitdiff::module]`: the `mod` with its items unchanged, plus `IR`, `module()` and one
/// module of handles per `fn`.
pub(crate) fn module(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    no_arguments(attr, "module")?;
    let mut m: syn::ItemMod = syn::parse2(item.clone()).map_err(|_| {
        syn::Error::new(
            Span::call_site(),
            "#[jitdiff::module] applies to an inline `mod name { ... }`; for one function, use #[jitdiff::function]",
        )
    })?;
    let Some((_, items)) = &mut m.content else {
        return Err(syn::Error::new(
            m.ident.span(),
            "#[jitdiff::module] needs the module's items inline (`mod name { ... }`): an attribute cannot read `mod name;` from its file",
        ));
    };
    reserved_names(items)?;
    let index = SpanIndex::of(&item);
    let name_span = m.ident.span();
    let lowered =
        jitdiff_front::lower_items_as_written(items).map_err(|e| front_error(&e, &index, name_span, false))?;
    let module = &lowered.module;
    let ir = checked_text(module, name_span)?;
    let source = as_written_items(&lowered);
    let mut handles = vec![];
    let struct_items: Vec<&syn::ItemStruct> =
        items.iter().filter_map(|i| if let syn::Item::Struct(s) = i { Some(s) } else { None }).collect();
    let structs: Vec<String> = struct_items.iter().map(|s| s.ident.unraw().to_string()).collect();
    let instances = jitdiff_front::instantiate_generics(items);
    let generic_counts: std::collections::HashMap<String, usize> = items
        .iter()
        .filter_map(|i| {
            if let syn::Item::Fn(f) = i {
                Some((f.sig.ident.to_string(), f.sig.generics.type_params().count()))
            } else {
                None
            }
        })
        .collect();
    for f in instances.iter().filter_map(|i| if let syn::Item::Fn(f) = i { Some(f) } else { None }) {
        // A function returning a struct is a helper of the others: its IR results are the
        // struct's fields, which no typed handle spells.
        if returns_struct(f, &structs) {
            continue;
        }
        let sig = match Signature::of(f, module, &struct_items) {
            Some(sig) => {
                Signature { type_params: generic_counts.get(&f.sig.ident.to_string()).copied().unwrap_or(0), ..sig }
            }
            // A struct parameter holding a `&mut [f64]`: a helper too.
            None if takes_struct(f, &structs) => continue,
            None => return Err(internal(f.sig.ident.span(), "a function is missing from the module")),
        };
        handles.push(emit::handles(&sig, Ir::Parent));
    }
    items.push(syn::Item::Verbatim(quote! {
        /// Every item of this module lowered together, as jitdiff IR text (generated by
        /// `#[jitdiff::module]`; `jitdiff::ir::parse_module` reads it).
        pub const IR: &str = #ir;

        /// The lowered module, parsed from [`IR`] on first use and kept.
        pub fn module() -> &'static ::jitdiff::ir::Module {
            static MODULE: ::std::sync::OnceLock<::jitdiff::ir::Module> = ::std::sync::OnceLock::new();
            MODULE.get_or_init(|| ::jitdiff::typed::parse_generated(IR, ::core::module_path!()))
        }

        #source

        #(#handles)*
    }));
    Ok(m.into_token_stream())
}

/// The attributes take no arguments.
fn no_arguments(attr: TokenStream, which: &str) -> syn::Result<()> {
    match attr.into_iter().next() {
        None => Ok(()),
        Some(token) => Err(syn::Error::new(token.span(), format!("#[jitdiff::{which}] takes no arguments"))),
    }
}

/// `IR` and `module` are what `#[jitdiff::module]` adds to the module.
fn reserved_names(items: &[syn::Item]) -> syn::Result<()> {
    for item in items {
        let ident = match item {
            syn::Item::Fn(f) => &f.sig.ident,
            syn::Item::Const(c) => &c.ident,
            _ => continue,
        };
        if ident == "IR" || ident == "module" {
            return Err(syn::Error::new(
                ident.span(),
                format!(
                    "`{ident}` is a name #[jitdiff::module] adds to the module (its IR text and `module()`); rename this item"
                ),
            ));
        }
    }
    Ok(())
}

/// `AS_WRITTEN` (the functions as lowered before the clean-up passes, as IR text),
/// `AS_WRITTEN_SPANS` (per instruction `[function, block, instruction, line, column]` in the
/// user's file) and `source()`, which `builder()` hands to every handle so that run-time faults
/// name the user's line. Without positions (text that would not read back with the same
/// layout) `source()` has none, and faults name the IR site as before.
fn as_written_items(lowered: &jitdiff_front::SourceModule) -> TokenStream {
    let written = lowered.as_written.as_ref().and_then(|(written, spans)| {
        let text = print_module(written);
        let back = parse_module(&text).ok()?;
        let layout = |m: &Module| -> Vec<Vec<usize>> {
            m.functions.iter().map(|f| f.blocks.iter().map(|b| b.insts.len()).collect()).collect()
        };
        (layout(&back) == layout(written)).then_some((text, spans))
    });
    let (text, positions) = match written {
        Some((text, spans)) => {
            let mut positions = vec![];
            for (f, func) in spans.funcs.iter().enumerate() {
                for (b, insts) in func.insts.iter().enumerate() {
                    for (i, pos) in insts.iter().enumerate().filter(|(_, p)| p.line > 0) {
                        let entry = [f as u32, b as u32, i as u32, pos.line, pos.col];
                        positions.push(quote!([#(#entry),*]));
                    }
                }
            }
            (text, positions)
        }
        None => (String::new(), vec![]),
    };
    quote! {
        #[doc(hidden)]
        pub const AS_WRITTEN: &str = #text;
        #[doc(hidden)]
        pub const AS_WRITTEN_SPANS: &[[u32; 5]] = &[#(#positions),*];
        #[doc(hidden)]
        pub fn source() -> &'static ::jitdiff::front::SourceModule {
            static SOURCE: ::std::sync::OnceLock<::jitdiff::front::SourceModule> = ::std::sync::OnceLock::new();
            SOURCE.get_or_init(|| ::jitdiff::typed::source_generated(module(), AS_WRITTEN, AS_WRITTEN_SPANS))
        }
    }
}

/// The module's IR text, checked to read back as the same module (the run-time `module()`
/// parses it).
fn checked_text(module: &Module, span: Span) -> syn::Result<String> {
    let text = print_module(module);
    match parse_module(&text) {
        Ok(back) if back == *module => Ok(text),
        Ok(_) => Err(internal(span, "the printed IR reads back as a different module")),
        Err(e) => Err(internal(span, &format!("the printed IR does not parse: {e}"))),
    }
}

fn internal(span: Span, what: &str) -> syn::Error {
    syn::Error::new(span, format!("internal error of jitdiff's macros: {what}; please report it with the source"))
}

/// The name after the first `fn` or `mod` of an item, for messages.
fn item_name(item: &TokenStream) -> Option<String> {
    let mut tokens = item.clone().into_iter();
    while let Some(token) = tokens.next() {
        if let TokenTree::Ident(i) = &token
            && (i == "fn" || i == "mod")
        {
            return tokens.next().map(|t| t.to_string());
        }
    }
    None
}

/// Does `ty` name one of `structs` (directly, behind `&`, in a tuple)?
fn names_struct(ty: &syn::Type, structs: &[String]) -> bool {
    match ty {
        syn::Type::Reference(r) => names_struct(&r.elem, structs),
        syn::Type::Paren(p) => names_struct(&p.elem, structs),
        syn::Type::Tuple(t) => t.elems.iter().any(|e| names_struct(e, structs)),
        syn::Type::Path(p) => {
            p.path.segments.len() == 1 && structs.contains(&p.path.segments[0].ident.unraw().to_string())
        }
        _ => false,
    }
}

/// Does `f` return one of `structs`?
fn returns_struct(f: &syn::ItemFn, structs: &[String]) -> bool {
    matches!(&f.sig.output, syn::ReturnType::Type(_, ty) if names_struct(ty, structs))
}

/// Does `f` take one of `structs`?
fn takes_struct(f: &syn::ItemFn, structs: &[String]) -> bool {
    f.sig.inputs.iter().any(|input| matches!(input, syn::FnArg::Typed(t) if names_struct(&t.ty, structs)))
}
