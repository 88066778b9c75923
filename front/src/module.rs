//! The items of a source: `fn`s (IR functions), `extern "C"` blocks (IR externs), `const`s
//! (scalars inlined where used, `f64` arrays as the module's read-only data tables) and
//! `use std::f64::consts::...`. Signatures are collected first, so functions may call each other
//! in any order and recursively; then every body is lowered, cleaned up by the IR passes and the
//! module verified.

use crate::error::{FrontError, FrontErrorKind, Result, invalid, unsupported};
use crate::types::{Ty, TypePlace, parse_type};
use jitdiff_ir::{Callee, ExternDecl, FuncId, Function, Module, Table, TableId, passes};
use proc_macro2::Span;
use rustc_hash::FxHashMap as HashMap;
use syn::spanned::Spanned;

/// A callable's signature.
#[derive(Clone, Debug)]
pub(crate) struct FnSig {
    /// The IR function's name (`Struct__method` for a method).
    pub name: String,
    /// The name as the source calls it (`Struct::method`), for messages.
    pub shown: String,
    /// A method: its first parameter is `self`.
    pub method: bool,
    /// `&mut self`: the function returns the new `self` after its own results.
    pub updates_receiver: bool,
    pub params: Vec<Ty>,
    pub ret: Ty,
    pub callee: Callee,
}

impl FnSig {
    /// The signature of a free function or extern (not a method), shown by its own name.
    fn plain(name: String, params: Vec<Ty>, ret: Ty, callee: Callee) -> FnSig {
        FnSig { shown: name.clone(), name, method: false, updates_receiver: false, params, ret, callee }
    }
}

/// A module-level `const`.
pub(crate) struct ConstDef {
    pub ty: Ty,
    pub expr: syn::Expr,
}

/// What every function body can refer to.
#[derive(Default)]
pub(crate) struct ModuleCtx {
    pub functions: HashMap<String, FnSig>,
    pub consts: HashMap<String, ConstDef>,
    /// The data table of each constant `f64` array, by the constant's name.
    pub tables: HashMap<String, TableId>,
    /// `use std::f64::consts::{PI, E as EULER}`: local name → constant name.
    imports: HashMap<String, String>,
    /// `use std::f64::consts::*`.
    glob_import: bool,
    /// The module's externs while bodies are lowered, with the derivative declarations that
    /// nested gradients add (`crate::nested`): kept here so that the ids they get are the
    /// module's.
    pub declared: std::cell::RefCell<Module>,
    /// Functions called with sub-slices, windows or chunks for some slice parameters
    /// (`views.rs`): each is lowered again with those parameters as views, as the function
    /// numbered `first_variant` + its index here.
    pub variants: std::cell::RefCell<Vec<(Variant, FuncId)>>,
    /// Placeholders standing for the module's functions, as many as it will have: the id the
    /// next variant gets is the next one pushed here.
    pub function_ids: std::cell::RefCell<Module>,
}

/// A function lowered with some slice parameters taken as views (slice, offset, length).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Variant {
    pub function: String,
    pub views: Vec<bool>,
}

impl ModuleCtx {
    /// The callee of `function` with the parameters marked in `views` passed as views: a
    /// variant lowered after the functions as written (requested once per combination).
    pub(crate) fn variant(&self, function: &str, views: &[bool]) -> Callee {
        let wanted = Variant { function: function.to_string(), views: views.to_vec() };
        let mut variants = self.variants.borrow_mut();
        if let Some((_, id)) = variants.iter().find(|(v, _)| *v == wanted) {
            return Callee::Func(*id);
        }
        let id = self.function_ids.borrow_mut().push_function(Function::new(function, vec![]));
        variants.push((wanted, id));
        Callee::Func(id)
    }

    /// The value of an imported `std::f64::consts` name.
    pub(crate) fn imported_constant(&self, name: &str) -> Option<f64> {
        match self.imports.get(name) {
            Some(original) => crate::consts::std_f64_const(original),
            None if self.glob_import => crate::consts::std_f64_const(name),
            None => None,
        }
    }
}

/// Lower the items of a source file to a verified module.
pub(crate) fn lower_items(items: &[syn::Item]) -> Result<Module> {
    lower_items_as_written(items, false).map(|lowered| lowered.module)
}

/// [`lower_items`], with (when `keep`) the functions as lowered before the clean-up passes and
/// where in the source each of their instructions comes from.
pub(crate) fn lower_items_as_written(items: &[syn::Item], keep: bool) -> Result<crate::SourceModule> {
    // Generic functions, at their one instance: every type parameter `f64`.
    let items = &*crate::generics::monomorphize(items);
    // Associated constants: module-level ones named `Struct__NAME`.
    let items = crate::assoc_consts::hoist(items);
    let items = &*items;
    // Functions returning `[f64; N]`: an `N`-tuple, each call the array of its elements.
    let items = crate::array_results::desugar(items);
    let items = &*items;
    // Structs first: signatures and bodies name them; then their `impl` blocks as functions.
    let _structs = crate::structs::define(items)?;
    let methods = crate::impls::desugar(items)?;
    let self_types: HashMap<String, String> =
        methods.iter().map(|m| (crate::types::name_of(&m.item.sig.ident), m.self_ty.clone())).collect();
    let self_of = |name: &str| self_types.get(name).map(String::as_str);
    let mut module = Module::new();
    let mut ctx = ModuleCtx::default();
    let mut names: HashMap<String, Span> = HashMap::default();
    let mut bodies: Vec<(&syn::ItemFn, FuncId)> = vec![];
    // Constant arrays and their declared lengths, evaluated once every `const` is known.
    let mut arrays: Vec<(&syn::ItemConst, Option<&syn::Expr>)> = vec![];
    let mut claim = |name: &syn::Ident| -> Result<()> {
        let text = crate::types::name_of(name);
        if names.insert(text.clone(), name.span()).is_some() {
            return Err(FrontError::new(name.span(), FrontErrorKind::Duplicate { name: text }));
        }
        Ok(())
    };
    // Methods first: the last function of a source is its last `fn` item (the CLI's default).
    for m in &methods {
        claim(&m.item.sig.ident)?;
        check_ir_name(&m.item.sig.ident, "function")?;
        let (params, ret) = crate::structs::with_self(Some(&m.self_ty), || signature(&m.item.sig))?;
        let name = crate::types::name_of(&m.item.sig.ident);
        let mut results = ret.ir_results();
        if m.updates_receiver {
            results.extend(crate::structs::receiver_parts(params.first()));
        }
        let id = module.push_function(Function::new(&name, results));
        let shown = name.replacen("__", "::", 1);
        let sig = FnSig {
            name,
            shown,
            method: m.method,
            updates_receiver: m.updates_receiver,
            params,
            ret,
            callee: Callee::Func(id),
        };
        ctx.functions.insert(sig.name.clone(), sig);
        bodies.push((&m.item, id));
    }
    for item in items {
        match item {
            // Defined above; the name must not clash with a function or constant.
            syn::Item::Struct(s) => claim(&s.ident)?,
            // Its functions are `methods`, registered below.
            syn::Item::Impl(_) => {}
            syn::Item::Fn(f) => {
                claim(&f.sig.ident)?;
                check_ir_name(&f.sig.ident, "function")?;
                let (params, ret) = signature(&f.sig)?;
                let name = crate::types::name_of(&f.sig.ident);
                let id = module.push_function(Function::new(&name, ret.ir_results()));
                ctx.functions.insert(name.clone(), FnSig::plain(name, params, ret, Callee::Func(id)));
                bodies.push((f, id));
            }
            syn::Item::ForeignMod(block) => {
                let abi = block.abi.name.as_ref().map(|n| n.value());
                if abi.as_deref().is_some_and(|a| a != "C") {
                    return Err(unsupported(
                        block.abi.span(),
                        "extern blocks of ABIs other than \"C\"",
                        "write `extern \"C\" { ... }`",
                    ));
                }
                for foreign in &block.items {
                    let sig = foreign_fn(foreign)?;
                    claim(&sig.ident)?;
                    check_ir_name(&sig.ident, "function")?;
                    let (params, ret) = signature(&sig)?;
                    let name = crate::types::name_of(&sig.ident);
                    let decl = ExternDecl {
                        name: name.clone(),
                        params: params.iter().filter_map(Ty::ir).collect(),
                        returns: ret.ir_results(),
                        derivative: None,
                    };
                    let id = module.push_extern(decl);
                    ctx.functions.insert(name.clone(), FnSig::plain(name, params, ret, Callee::Extern(id)));
                }
            }
            syn::Item::Const(c) => {
                claim(&c.ident)?;
                if !c.generics.params.is_empty() {
                    return Err(unsupported(c.generics.span(), "generic constants", "write one `const` per type"));
                }
                let ty = match const_array(&c.ty)? {
                    Some(len) => {
                        check_ir_name(&c.ident, "constant array")?;
                        arrays.push((c, len));
                        Ty::Slice { mutable: false }
                    }
                    None => parse_type(&c.ty, TypePlace::Local)?,
                };
                ctx.consts.insert(crate::types::name_of(&c.ident), ConstDef { ty, expr: (*c.expr).clone() });
            }
            syn::Item::Use(u) => use_item(&u.tree, &mut ctx, &mut vec![])?,
            syn::Item::Verbatim(tokens) => {
                // syn keeps `fn f(x: f64) -> f64;` (no body) as verbatim tokens.
                if let Ok(f) = syn::parse2::<syn::ForeignItemFn>(tokens.clone()) {
                    return Err(FrontError::new(
                        f.sig.ident.span(),
                        FrontErrorKind::MissingBody { name: crate::types::name_of(&f.sig.ident) },
                    ));
                }
                return Err(unsupported(
                    item.span(),
                    "items of this kind",
                    "write `fn`, `const`, `extern \"C\"` or `use std::f64::consts::...` items",
                ));
            }
            other => return Err(item_error(other)),
        }
    }
    for (item, len) in arrays {
        let len = len.map(|n| crate::consts::const_int(&ctx, n, "the length of a constant array")).transpose()?;
        let values = crate::consts::table_values(&ctx, &item.expr, len)?;
        let name = crate::types::name_of(&item.ident);
        let id = module.push_table(Table::new(name.clone(), values));
        ctx.tables.insert(name, id);
    }
    ctx.declared.borrow_mut().externs = module.externs.clone();
    for _ in 0..module.functions.len() {
        ctx.function_ids.get_mut().push_function(Function::new("", vec![]));
    }
    let items_by_name: HashMap<String, &syn::ItemFn> =
        bodies.iter().map(|(item, _)| (crate::types::name_of(&item.sig.ident), *item)).collect();
    let mut written: Vec<(FuncId, Function, jitdiff_ir::FuncSpans)> = vec![];
    for (item, id) in bodies {
        let Some(sig) = ctx.functions.get(&crate::types::name_of(&item.sig.ident)) else {
            let message = "a function's signature went missing".into();
            return Err(FrontError::new(item.sig.ident.span(), FrontErrorKind::Internal { message }));
        };
        let (mut function, spans) =
            crate::structs::with_self(self_of(&sig.name), || crate::lower::lower_function(&ctx, item, sig, &[]))?;
        if keep {
            written.push((id, function.clone(), spans));
        }
        passes::remove_unreachable_blocks(&mut function);
        passes::optimize_function_in(&mut function, &module.tables);
        function.canonicalize();
        if let Some(slot) = module.functions.get_mut(id.index()) {
            *slot = function;
        }
    }
    // The variants called with views, lowered in the order requested (a variant's body may
    // request more), each pushed as the function its id names.
    let mut next = 0;
    loop {
        // (The borrow ends here: lowering the variant may request more.)
        let requested = ctx.variants.borrow().get(next).cloned();
        let Some((variant, id)) = requested else { break };
        let (Some(item), Some(sig)) = (items_by_name.get(&variant.function), ctx.functions.get(&variant.function))
        else {
            let message = format!("`{}` was called with a view but is not a function of the source", variant.function);
            return Err(FrontError::new(Span::call_site(), FrontErrorKind::Internal { message }));
        };
        let mask: String = variant.views.iter().map(|&v| if v { '1' } else { '0' }).collect();
        let sig = FnSig { name: format!("{}__views_{mask}", sig.name), ..sig.clone() };
        let (mut function, spans) = crate::structs::with_self(self_of(&variant.function), || {
            crate::lower::lower_function(&ctx, item, &sig, &variant.views)
        })?;
        if keep {
            written.push((id, function.clone(), spans));
        }
        passes::remove_unreachable_blocks(&mut function);
        passes::optimize_function_in(&mut function, &module.tables);
        function.canonicalize();
        if module.push_function(function) != id {
            let message = format!("the variant of `{}` taking views got another id", variant.function);
            return Err(FrontError::new(Span::call_site(), FrontErrorKind::Internal { message }));
        }
        next += 1;
    }
    module.externs = std::mem::take(&mut ctx.declared.borrow_mut().externs);
    module.canonicalize();
    jitdiff_ir::verify_module(&module).map_err(|e| {
        FrontError::new(
            Span::call_site(),
            FrontErrorKind::Internal { message: format!("the lowered IR does not verify: {e}") },
        )
    })?;
    if !keep {
        return Ok(crate::SourceModule { module, as_written: None });
    }
    // The module as written: the same externs and tables, each function as lowered. Only
    // for replaying a fault to find its source line; left out should it not verify.
    let mut as_written = module.clone();
    let mut spans = jitdiff_ir::SourceMap {
        externs: vec![],
        tables: vec![],
        funcs: vec![jitdiff_ir::FuncSpans::default(); module.functions.len()],
    };
    for (id, function, function_spans) in written {
        if let (Some(slot), Some(span_slot)) =
            (as_written.functions.get_mut(id.index()), spans.funcs.get_mut(id.index()))
        {
            *slot = function;
            *span_slot = function_spans;
        }
    }
    let as_written = jitdiff_ir::verify_module(&as_written).is_ok().then_some((as_written, spans));
    Ok(crate::SourceModule { module, as_written })
}

/// Function, extern and constant-array names are IR names: `[A-Za-z_][A-Za-z0-9_]*`. `what`
/// names the item: "function", "constant array".
fn check_ir_name(ident: &syn::Ident, what: &str) -> Result<()> {
    let name = crate::types::name_of(ident);
    if name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Ok(());
    }
    let ir_item = if what == "function" { "IR function" } else { "IR table" };
    Err(unsupported(
        ident.span(),
        format!("non-ASCII {what} names"),
        format!("rename `{name}` with ASCII letters, digits and `_` (it becomes the {ir_item}'s name)"),
    ))
}

/// Is a constant's type an `f64` array — `[f64; N]`, `&[f64; N]` or `&[f64]`, a data table? Its
/// declared length, if it has one. Arrays of anything else are errors.
fn const_array(ty: &syn::Type) -> Result<Option<Option<&syn::Expr>>> {
    let (elem, len) = match ty {
        syn::Type::Array(a) => (&*a.elem, Some(&a.len)),
        syn::Type::Reference(r) if r.mutability.is_none() => match &*r.elem {
            syn::Type::Array(a) => (&*a.elem, Some(&a.len)),
            syn::Type::Slice(s) => (&*s.elem, None),
            _ => return Ok(None),
        },
        syn::Type::Paren(p) => return const_array(&p.elem),
        _ => return Ok(None),
    };
    match elem {
        syn::Type::Path(p) if p.qself.is_none() && p.path.is_ident("f64") => Ok(Some(len)),
        syn::Type::Path(p) if p.path.get_ident().is_some_and(|i| is_int_name(&i.to_string())) => Err(FrontError::new(
            elem.span(),
            FrontErrorKind::NotYetSupported {
                construct: "a constant array of integers".into(),
                why: "the IR's data tables hold `f64` values".into(),
                instead: "make it a `[f64; N]` of the same values and convert an element with `as usize`".into(),
            },
        )),
        syn::Type::Array(_) => Err(unsupported(
            elem.span(),
            "constant arrays of arrays",
            "flatten it to one `[f64; R * C]` and index it `[r * C + c]`",
        )),
        _ => Err(unsupported(elem.span(), "constant arrays of anything but `f64`", "use `[f64; N]`")),
    }
}

/// Is `name` an integer type (of the subset or not), for a helpful error on integer arrays?
fn is_int_name(name: &str) -> bool {
    crate::types::IntKind::from_name(name).is_some() || matches!(name, "i8" | "i16" | "u8" | "u16" | "i128" | "u128")
}

/// Parameter and result types of a signature, checked for the subset.
fn signature(sig: &syn::Signature) -> Result<(Vec<Ty>, Ty)> {
    // Type parameters are gone (`generics.rs`: every one is `f64`); lifetimes are ignored.
    if let Some(param) = sig.generics.params.iter().find(|p| !matches!(p, syn::GenericParam::Lifetime(_))) {
        return Err(unsupported(
            param.span(),
            "const generic parameters",
            "pass the length as a `usize` parameter, or take a slice (`&[f64]`)",
        ));
    }
    if let Some(a) = &sig.asyncness {
        return Err(unsupported(a.span(), "`async` functions", "write an ordinary `fn`"));
    }
    if let Some(v) = &sig.variadic {
        return Err(unsupported(v.span(), "variadic functions", "declare a fixed parameter list"));
    }
    let mut params = vec![];
    for input in &sig.inputs {
        match input {
            syn::FnArg::Receiver(r) => {
                return Err(unsupported(
                    r.span(),
                    "methods (`self` parameters)",
                    "write a free `fn` and pass the fields",
                ));
            }
            syn::FnArg::Typed(t) => params.push(parse_type(&t.ty, TypePlace::Parameter)?),
        }
    }
    let ret = match &sig.output {
        syn::ReturnType::Default => Ty::Unit,
        syn::ReturnType::Type(_, ty) => parse_type(ty, TypePlace::Result)?,
    };
    Ok((params, ret))
}

/// The function an `extern` block declares (`fn`, or Rust 2024's `safe fn`/`unsafe fn`).
fn foreign_fn(item: &syn::ForeignItem) -> Result<syn::Signature> {
    match item {
        syn::ForeignItem::Fn(f) => Ok(f.sig.clone()),
        syn::ForeignItem::Verbatim(tokens) => {
            // `safe fn f(x: f64) -> f64;`: drop the `safe` qualifier and parse the rest.
            let filtered: proc_macro2::TokenStream = tokens
                .clone()
                .into_iter()
                .filter(|t| !matches!(t, proc_macro2::TokenTree::Ident(i) if i == "safe"))
                .collect();
            syn::parse2::<syn::ForeignItemFn>(filtered).map(|f| f.sig).map_err(|_| {
                unsupported(
                    item.span(),
                    "extern items other than functions",
                    "declare functions: `fn name(x: f64) -> f64;`",
                )
            })
        }
        other => Err(unsupported(
            other.span(),
            "extern items other than functions",
            "declare functions: `fn name(x: f64) -> f64;`",
        )),
    }
}

/// `use std::f64::consts::{PI, TAU as T}`, `use std::f64::consts::*`; `use std::f64;` is
/// harmless. Anything else brings in names the subset cannot use.
fn use_item(tree: &syn::UseTree, ctx: &mut ModuleCtx, prefix: &mut Vec<String>) -> Result<()> {
    let path = || {
        let p: Vec<&str> = prefix.iter().map(String::as_str).skip_while(|s| *s == "std" || *s == "core").collect();
        p.join("::")
    };
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(crate::types::name_of(&p.ident));
            let result = use_item(&p.tree, ctx, prefix);
            prefix.pop();
            result
        }
        syn::UseTree::Group(g) => g.items.iter().try_for_each(|t| use_item(t, ctx, prefix)),
        syn::UseTree::Glob(_) if path() == "f64::consts" => {
            ctx.glob_import = true;
            Ok(())
        }
        // The traits that bound a generic function's float type (`generics.rs`), and the other
        // std traits a bound names: nothing to import, every type parameter is `f64`.
        _ if is_bound_trait_path(prefix) => Ok(()),
        syn::UseTree::Name(n) => import(path(), &n.ident, &n.ident, ctx),
        syn::UseTree::Rename(r) => import(path(), &r.ident, &r.rename, ctx),
        other => Err(unsupported(
            other.span(),
            "`use` items other than `use std::f64::consts::...`",
            "refer to `std::f64::consts::PI` (or `use std::f64::consts::PI;`) and define everything else in the source",
        )),
    }
}

/// `num_traits::...`, `num_dual::...`, `std::ops::...`, `std::iter::Sum`, `std::fmt::Debug`,
/// `std::marker::Copy`: traits a bound of a generic function names.
fn is_bound_trait_path(prefix: &[String]) -> bool {
    match prefix.first().map(String::as_str) {
        Some("num_traits" | "num_dual" | "num") => true,
        Some("std" | "core") => {
            matches!(prefix.get(1).map(String::as_str), Some("ops" | "iter" | "fmt" | "marker" | "cmp"))
        }
        _ => false,
    }
}

fn import(path: String, original: &syn::Ident, local: &syn::Ident, ctx: &mut ModuleCtx) -> Result<()> {
    let name = original.to_string();
    match (path.as_str(), name.as_str()) {
        ("f64::consts", _) if crate::consts::std_f64_const(&name).is_some() => {
            ctx.imports.insert(local.to_string(), name);
            Ok(())
        }
        ("" | "f64", "f64" | "consts") => Ok(()),
        // The operator traits an `impl` block may implement (`overload.rs`).
        ("ops", name) if crate::overload::OPERATOR_TRAITS.iter().any(|(t, _, _)| *t == name) => Ok(()),
        _ => Err(unsupported(
            original.span(),
            "`use` items other than `use std::f64::consts::...`",
            "refer to `std::f64::consts::PI` (or `use std::f64::consts::PI;`) and define everything else in the source",
        )),
    }
}

fn item_error(item: &syn::Item) -> FrontError {
    let span = item.span();
    match item {
        syn::Item::Struct(_) | syn::Item::Enum(_) | syn::Item::Union(_) => {
            unsupported(span, "enums and unions", "use a struct with named fields, or an integer tag and a `match`")
        }
        syn::Item::Impl(_) => {
            unsupported(span, "`impl` blocks", "write free functions that take the fields as parameters")
        }
        syn::Item::Trait(_) | syn::Item::TraitAlias(_) => {
            unsupported(span, "traits", "write one free function per implementation")
        }
        syn::Item::Static(_) => unsupported(span, "`static` items", "use a `const`"),
        syn::Item::Mod(_) => unsupported(span, "modules", "put every item at the top level of the source"),
        syn::Item::Macro(m) => crate::expr::macro_error(&m.mac),
        syn::Item::Type(_) => unsupported(span, "type aliases", "write the type out"),
        syn::Item::ExternCrate(_) => {
            unsupported(span, "`extern crate` items", "remove it; only the source itself is lowered")
        }
        _ => invalid(
            span,
            "this item is not supported; write `fn`, `const`, `extern \"C\"` or `use std::f64::consts::...` items",
        ),
    }
}
