//! What the generated handles need to know of one lowered function: its Rust parameters (names,
//! types, how each becomes an `Arg`), its Rust result type, and from the IR which parameters
//! can be differentiated and which results are floats.

use jitdiff_ir::{Module, Type};
use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};
use syn::ext::IdentExt as _;

/// One parameter of the IR function: a parameter of the Rust function, or a field of a struct
/// parameter (`p: &Params` is one IR parameter per field of `Params`).
pub(crate) struct Param {
    /// The name the generated methods give it (the Rust name; `argK` for `_`; `p_k` for field
    /// `k` of struct parameter `p`).
    pub ident: Ident,
    /// How the generated methods read it from their parameters (`x`, `p.k`).
    pub access: TokenStream,
    /// The name in the IR (the Rust name; `_` for `_`).
    pub name: String,
    /// An IR `f64`, `slice` or `mslice`: can be differentiated.
    pub differentiable: bool,
    /// Its IR type.
    pub ir: Type,
}

/// One parameter of the Rust function, as the generated methods declare it.
pub(crate) struct Declared {
    pub ident: Ident,
    pub ty: syn::Type,
    /// `[f64; N]` taken by value: passed on as `&x`.
    pub array_by_value: bool,
    /// A struct of the module (the generated module needs the parent's items in scope).
    pub is_struct: bool,
}

/// One lowered function, as the generated handles see it.
pub(crate) struct Signature {
    /// The function's name.
    pub ident: Ident,
    /// Its visibility (the generated module gets the same).
    pub vis: syn::Visibility,
    /// Its `#[cfg(...)]` attributes (the generated module gets them too).
    pub cfgs: Vec<syn::Attribute>,
    /// Its parameters as the Rust function declares them.
    pub declared: Vec<Declared>,
    /// Its IR parameters.
    pub params: Vec<Param>,
    /// Its result type (`()` when it has none).
    pub ret: syn::Type,
    /// It returns exactly one `f64`: gradients, value-and-gradient and HVPs apply.
    pub scalar: bool,
    /// It has outputs to differentiate: `f64` results or `&mut [f64]` parameters.
    pub float_outputs: bool,
    /// The IR result types.
    pub returns: Vec<Type>,
    /// How many type parameters the function as written has (it is lowered with each `f64`).
    pub type_params: usize,
}

impl Signature {
    /// The signature of `item`, lowered into `module` (which has a function of its name);
    /// `structs` are the structs it may take (a `#[jitdiff::module]`'s). `None` when a struct
    /// parameter holds a `&mut [f64]` (the generated methods could not pass it on).
    pub(crate) fn of(item: &syn::ItemFn, module: &Module, structs: &[&syn::ItemStruct]) -> Option<Signature> {
        let name = item.sig.ident.unraw().to_string();
        let func = module.func_by_name(&name)?;
        let ir_params = func.param_types();
        let mut params = vec![];
        let mut declared = vec![];
        for (k, input) in item.sig.inputs.iter().enumerate() {
            let syn::FnArg::Typed(typed) = input else { return None };
            let (ident, name) = match &*typed.pat {
                syn::Pat::Ident(p) => (p.ident.clone(), p.ident.unraw().to_string()),
                _ => (format_ident!("arg{}", k), "_".to_string()),
            };
            let array_by_value = matches!(&*typed.ty, syn::Type::Array(_));
            let is_struct = struct_named(&typed.ty, structs).is_some();
            declared.push(Declared { ident: ident.clone(), ty: (*typed.ty).clone(), array_by_value, is_struct });
            let mut leaves = vec![];
            leaf_params(&typed.ty, quote!(#ident), &ident.unraw().to_string(), structs, &mut leaves, 0)?;
            for (access, leaf_name) in leaves {
                let position = params.len();
                let &ir = ir_params.get(position)?;
                if is_struct && ir == Type::SliceMut {
                    return None;
                }
                let (ident, name) = if is_struct {
                    let label = func.params.get(position).map(|&p| func.value_label(p)).unwrap_or(leaf_name);
                    (format_ident!("{}", label), label)
                } else {
                    (ident.clone(), name.clone())
                };
                params.push(Param { ident, access, name, differentiable: ir == Type::F64 || ir.is_slice(), ir });
            }
        }
        if params.len() != ir_params.len() {
            return None;
        }
        let ret = match &item.sig.output {
            syn::ReturnType::Default => syn::parse_quote!(()),
            syn::ReturnType::Type(_, ty) => (**ty).clone(),
        };
        let scalar = func.returns == [Type::F64];
        let float_outputs = func.returns.contains(&Type::F64) || ir_params.contains(&Type::SliceMut);
        let cfgs = item.attrs.iter().filter(|a| a.path().is_ident("cfg")).cloned().collect();
        Some(Signature {
            ident: item.sig.ident.clone(),
            vis: item.vis.clone(),
            cfgs,
            declared,
            params,
            ret,
            scalar,
            float_outputs,
            returns: func.returns.clone(),
            type_params: 0,
        })
    }

    /// The function's name as the IR spells it.
    pub(crate) fn name(&self) -> String {
        self.ident.unraw().to_string()
    }

    /// Whether any parameter can be differentiated.
    pub(crate) fn differentiable(&self) -> bool {
        self.params.iter().any(|p| p.differentiable)
    }

    /// A name for an extra parameter of a generated method (`grad`, `tangents` ...) that no
    /// parameter of the function already has.
    pub(crate) fn fresh(&self, base: &str) -> Ident {
        let mut name = base.to_string();
        while self.params.iter().any(|p| p.ident.unraw() == name)
            || self.declared.iter().any(|d| d.ident.unraw() == name)
        {
            name.push('_');
        }
        Ident::new(&name, Span::call_site())
    }
}

/// The struct of `structs` that `ty` names (`S`, `&S`, `S<'a>`, `&S<'_>`).
fn struct_named<'s>(ty: &syn::Type, structs: &[&'s syn::ItemStruct]) -> Option<&'s syn::ItemStruct> {
    match ty {
        syn::Type::Reference(r) => struct_named(&r.elem, structs),
        syn::Type::Paren(p) => struct_named(&p.elem, structs),
        syn::Type::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
            let ident = &p.path.segments[0].ident;
            structs.iter().copied().find(|s| s.ident.unraw() == ident.unraw())
        }
        _ => None,
    }
}

/// The IR parameters a Rust parameter of type `ty`, read as `access`, stands for: itself, or
/// the fields of a struct depth first (as the front end flattens them): (access, name, type).
/// Whether `ty` is an array of arrays of `f64` (`[[f64; C]; R]`, `&[[f64; C]]`, `&mut ...`):
/// `Some(mutable)`.
fn rows(ty: &syn::Type) -> Option<bool> {
    let (outer, mutable) = match ty {
        syn::Type::Reference(r) => (&*r.elem, r.mutability.is_some()),
        other => (other, false),
    };
    let element = match outer {
        syn::Type::Array(a) => &*a.elem,
        syn::Type::Slice(s) => &*s.elem,
        _ => return None,
    };
    matches!(element, syn::Type::Array(row) if matches!(&*row.elem, syn::Type::Path(p) if p.path.is_ident("f64")))
        .then_some(mutable)
}

fn leaf_params(
    ty: &syn::Type,
    access: TokenStream,
    name: &str,
    structs: &[&syn::ItemStruct],
    out: &mut Vec<(TokenStream, String)>,
    depth: usize,
) -> Option<()> {
    let Some(s) = struct_named(ty, structs) else {
        // A `Vec<f64>` field is passed as the slice it holds.
        let is_vec = matches!(ty, syn::Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Vec"));
        let access = match rows(ty) {
            // An array of arrays (`&[[f64; 3]]`) is the flat slice of its rows.
            Some(true) => quote!(#access.as_flattened_mut()),
            Some(false) => quote!(#access.as_flattened()),
            None if depth > 0 && is_vec => quote!(#access.as_slice()),
            None => access,
        };
        out.push((access, name.to_string()));
        return Some(());
    };
    if depth > 16 {
        return None;
    }
    for (k, field) in s.fields.iter().enumerate() {
        // `p.x` of a struct with named fields, `p.0` of a tuple struct.
        let (member, field_name) = match &field.ident {
            Some(ident) => (quote!(#ident), format!("{name}_{}", ident.unraw())),
            None => {
                let index = syn::Index::from(k);
                (quote!(#index), format!("{name}_{k}"))
            }
        };
        leaf_params(&field.ty, quote!(#access.#member), &field_name, structs, out, depth + 1)?;
    }
    Some(())
}
