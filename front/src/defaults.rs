//! An `Option` made by a pick ([`crate::pick`]) or a slice's `first()`/`last()`, taken apart with
//! a default: `map_or(d, |v| ..)` and `unwrap_or_default()` (the default evaluated at once, as
//! Rust evaluates an argument), `map_or_else(|| d, |v| ..)` and `unwrap_or_else(|| d)` (the
//! default's closure runs only where there was no item, as Rust runs it). The item goes through
//! the `map`s before it and `map_or`'s closure, each run only where there was an item.

use crate::error::{Result, invalid, unsupported};
use crate::lower::{Lowered, Lowerer, Operand};
use crate::types::Ty;
use jitdiff_ir::Value;
use syn::spanned::Spanned;

/// The methods this file lowers, and how many arguments each takes.
pub(crate) const DEFAULTS: [(&str, usize); 4] =
    [("map_or", 2), ("map_or_else", 2), ("unwrap_or_default", 0), ("unwrap_or_else", 1)];

/// Is `method` one of [`DEFAULTS`]?
pub(crate) fn is_default(method: &str) -> bool {
    DEFAULTS.iter().any(|(name, _)| *name == method)
}

impl Lowerer<'_> {
    /// `outer` (one of [`DEFAULTS`]) of the `Option` whose item is `item` (already through the
    /// `map`s before `outer`) and which holds one where `found`.
    pub(crate) fn lower_option_default(
        &mut self,
        outer: &syn::ExprMethodCall,
        item: Lowered,
        found: Value,
    ) -> Result<Lowered> {
        let method = outer.method.to_string();
        let arity = DEFAULTS.iter().find(|(name, _)| *name == method).map_or(0, |(_, n)| *n);
        if outer.args.len() != arity {
            let plural = if arity == 1 { "" } else { "s" };
            return Err(invalid(outer.span(), format!("`{method}` takes {arity} argument{plural}")));
        }
        let args: Vec<&syn::Expr> = outer.args.iter().collect();
        let item = match method.as_str() {
            "map_or" | "map_or_else" => self.map_all(item, found, &[args[1]])?,
            _ => item,
        };
        let Lowered::Value(item) = item else {
            return Err(unsupported(
                outer.span(),
                format!("`{method}` of a pair"),
                "map the pair to one number first: `.map(|(i, v)| ..).unwrap_or(d)`",
            ));
        };
        match method.as_str() {
            "map_or" => {
                let default = self.scalar_of(args[0], &item.ty)?;
                Ok(self.select_item(found, &item, default.value))
            }
            "unwrap_or_default" => {
                let default = match item.ty {
                    Ty::F64 => self.ssa.fconst(0.0),
                    Ty::Bool => self.ssa.bconst(false),
                    _ => self.ssa.iconst(0),
                };
                Ok(self.select_item(found, &item, default))
            }
            _ => {
                let default = args[0];
                let closure = match crate::iter::peel_parens(default) {
                    syn::Expr::Closure(c) if c.inputs.is_empty() => c,
                    _ => {
                        return Err(unsupported(
                            default.span(),
                            format!("this default of `{method}`"),
                            "write the closure in the call, without parameters: `|| 0.0`",
                        ));
                    }
                };
                self.or_else(found, item, closure)
            }
        }
    }

    fn select_item(&mut self, found: Value, item: &Operand, default: Value) -> Lowered {
        Lowered::Value(Operand { value: self.ssa.select(found, item.value, default), ty: item.ty.clone() })
    }

    /// `item` where `found`, else the value of `closure` (run only there).
    fn or_else(&mut self, found: Value, item: Operand, closure: &syn::ExprClosure) -> Result<Lowered> {
        let crate::pick::OptionBranch { none, reachable, before, mut join } = self.enter_some(found);
        self.edge_to(&mut join, vec![item.value]);
        self.ssa.switch_to(none, reachable);
        let default = self.apply_closure(closure, vec![], Some(&item.ty))?;
        let Lowered::Value(default) = default else {
            return Err(invalid(closure.body.span(), format!("the default must be a `{}`", item.ty)));
        };
        if !default.ty.fits(&item.ty) {
            return Err(invalid(
                closure.body.span(),
                format!("the default must be a `{}`, not `{}`", item.ty, default.ty),
            ));
        }
        self.edge_to(&mut join, vec![default.value]);
        self.scopes.restore(&before);
        let results = self.finish_join(join, "or_else", &crate::control::value_types(&item.ty));
        Ok(Lowered::Value(Operand { value: results[0], ty: item.ty }))
    }
}
