//! Closures bound with `let` and called by name: `let sq = |v: f64| v * v; ... sq(x)`.
//!
//! A closure is never a value: its body is lowered again, inline, at every call, with its
//! parameters bound to the arguments (as `map`'s closures are). The variables it reads are
//! the ones in scope *where it was written*, with their values there: a later `let` that
//! shadows a name does not change what the closure sees, and neither does a later assignment
//! (which Rust allows only for a `move` closure, whose copy is taken at the definition). A
//! closure that assigns a captured variable (an `FnMut`, not `move`) assigns the enclosing
//! function's variable: Rust lets nothing else touch it while the closure lives. A closure may
//! not call itself, or be used other than by a call.

use crate::error::{Result, invalid, unsupported};
use crate::iter::Item;
use crate::lower::{Lowered, Lowerer};
use crate::scope::{Slot, SlotKind, SlotState, Snapshot};
use crate::types::Ty;
use syn::spanned::Spanned;

/// A closure bound to a name: its text, and the state of every slot below it at the definition.
pub(crate) struct LocalClosure {
    pub closure: syn::ExprClosure,
    pub states: Snapshot,
}

impl Lowerer<'_> {
    /// `let name = |..| ..;`: declare `name` as closure number `self.closures.len()`.
    pub(crate) fn declare_closure(&mut self, name: &str, closure: &syn::ExprClosure) -> Result<()> {
        if let Some(a) = &closure.asyncness {
            return Err(unsupported(a.span(), "async closures", "write a plain closure"));
        }
        let states = self.scopes.snapshot();
        self.closures.push(LocalClosure { closure: closure.clone(), states });
        self.scopes.declare(Slot {
            name: name.to_string(),
            ty: Ty::Unit,
            kind: SlotKind::Closure(self.closures.len() - 1),
            mutable: false,
            state: SlotState { value: None, maybe_init: true },
            assigned_at: None,
        });
        Ok(())
    }

    /// `name(args)` where `name` is the closure in `slot`: the arguments are evaluated here, the
    /// body where the closure was written (slots above it hidden, the slots below it in their
    /// state there), then the current scope comes back.
    pub(crate) fn call_closure(
        &mut self,
        slot: usize,
        args: &[&syn::Expr],
        span: proc_macro2::Span,
    ) -> Result<Lowered> {
        let SlotKind::Closure(index) = self.scopes.slot(slot).kind else {
            return Err(invalid(span, "not a closure"));
        };
        let mut items = Vec::with_capacity(args.len());
        for arg in args {
            match self.lower_expr(arg, None)? {
                Lowered::Value(op) => items.push(Item::Scalar(op)),
                Lowered::Never => return Ok(Lowered::Never),
                other => {
                    return Err(unsupported(
                        arg.span(),
                        format!("closure arguments of type `{}`", other.ty()),
                        "pass numbers, `bool`s and slices",
                    ));
                }
            }
        }
        let closure = self.closures[index].closure.clone();
        let definition = std::mem::take(&mut self.closures[index].states);
        let now = self.scopes.snapshot();
        let hidden = self.scopes.hide_from(slot);
        // A `move` closure reads its copies, taken at the definition. Any other reads the
        // variables as they are now: Rust lets no one but the closure assign what it captures
        // while it lives, so they hold what they held at the definition — or what earlier calls
        // of an `FnMut` closure assigned.
        let moves = closure.capture.is_some();
        if moves {
            self.scopes.restore(&definition);
        }
        let value = self.apply_closure(&closure, items, None);
        // What the body assigned stays assigned; the rest of the scope comes back as it was at
        // the call.
        let after = self.scopes.snapshot();
        self.scopes.unhide(hidden);
        self.scopes.restore(&now);
        if !moves {
            for (k, state) in after.iter().enumerate() {
                if now.get(k) != Some(state) {
                    self.scopes.slot_mut(k).state = *state;
                }
            }
        }
        self.closures[index].states = definition;
        value
    }
}

/// The error for a closure used other than by a call.
pub(crate) fn closure_as_value(name: &str, span: proc_macro2::Span) -> crate::error::FrontError {
    unsupported(
        span,
        format!("closures used other than by a call (here `{name}`)"),
        format!("call it where it is needed: `{name}(...)`, or write a `fn` item"),
    )
}
