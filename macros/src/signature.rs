//! What the generated handles need to know of one lowered function: its Rust parameters (names,
//! types, how each becomes an `Arg`), its Rust result type, and from the IR which parameters
//! can be differentiated and which results are floats.

use jitdiff_ir::{Module, Type};
use proc_macro2::{Ident, Span};
use quote::format_ident;
use syn::ext::IdentExt as _;

/// One parameter of the Rust function.
pub(crate) struct Param {
    /// The name the generated methods give it (the Rust name; `argK` for `_`).
    pub ident: Ident,
    /// The name in the IR (the Rust name; `_` for `_`).
    pub name: String,
    /// The Rust type as written.
    pub ty: syn::Type,
    /// `[f64; N]` taken by value: passed on as `&x`.
    pub array_by_value: bool,
    /// An IR `f64`, `slice` or `mslice`: can be differentiated.
    pub differentiable: bool,
    /// Its IR type.
    pub ir: Type,
}

/// One lowered function, as the generated handles see it.
pub(crate) struct Signature {
    /// The function's name.
    pub ident: Ident,
    /// Its visibility (the generated module gets the same).
    pub vis: syn::Visibility,
    /// Its `#[cfg(...)]` attributes (the generated module gets them too).
    pub cfgs: Vec<syn::Attribute>,
    /// Its parameters.
    pub params: Vec<Param>,
    /// Its result type (`()` when it has none).
    pub ret: syn::Type,
    /// It returns exactly one `f64`: gradients, value-and-gradient and HVPs apply.
    pub scalar: bool,
    /// It has outputs to differentiate: `f64` results or `&mut [f64]` parameters.
    pub float_outputs: bool,
    /// The IR result types.
    pub returns: Vec<Type>,
}

impl Signature {
    /// The signature of `item`, lowered into `module` (which has a function of its name).
    pub(crate) fn of(item: &syn::ItemFn, module: &Module) -> Option<Signature> {
        let name = item.sig.ident.unraw().to_string();
        let func = module.func_by_name(&name)?;
        let ir_params = func.param_types();
        let mut params = vec![];
        for (k, (input, &ir)) in item.sig.inputs.iter().zip(&ir_params).enumerate() {
            let syn::FnArg::Typed(typed) = input else { return None };
            let (ident, name) = match &*typed.pat {
                syn::Pat::Ident(p) => (p.ident.clone(), p.ident.unraw().to_string()),
                _ => (format_ident!("arg{}", k), "_".to_string()),
            };
            params.push(Param {
                ident,
                name,
                ty: (*typed.ty).clone(),
                array_by_value: matches!(&*typed.ty, syn::Type::Array(_)),
                differentiable: ir == Type::F64 || ir.is_slice(),
                ir,
            });
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
            params,
            ret,
            scalar,
            float_outputs,
            returns: func.returns.clone(),
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
        while self.params.iter().any(|p| p.ident.unraw() == name) {
            name.push('_');
        }
        Ident::new(&name, Span::call_site())
    }
}
