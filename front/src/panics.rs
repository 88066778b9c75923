//! `panic!`, `unreachable!`, `todo!`, `unimplemented!` and the `assert!` family.
//!
//! A panic is the IR's `trap`: the call stops with a `Panic` fault at the macro's line and
//! column, in the interpreter, in native code and in every derivative alike (the derivative runs
//! the primal's code first). Its message arguments are not evaluated (they only format text).
//! `assert!(c, ...)` is `if !(c) { panic!() }`; `assert_eq!(a, b, ...)` and `assert_ne!` compare
//! with `==` / `!=`. The `debug_assert` forms are compiled out, as in a release build.

use crate::error::{Result, invalid};
use crate::lower::{Lowered, Lowerer};
use jitdiff_ir::{Imm, Opcode};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;

/// The macros this file lowers.
pub(crate) const PANIC_MACROS: [&str; 10] = [
    "panic",
    "unreachable",
    "todo",
    "unimplemented",
    "assert",
    "assert_eq",
    "assert_ne",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
];

impl Lowerer<'_> {
    /// A macro of [`PANIC_MACROS`], named `name`.
    pub(crate) fn lower_panic_macro(&mut self, mac: &syn::Macro, name: &str) -> Result<Lowered> {
        let span = mac.span();
        match name {
            "panic" | "unreachable" | "todo" | "unimplemented" => {
                self.at(span);
                self.ssa.push(Opcode::Trap, vec![], Imm::None);
                // What follows cannot run: it goes to a block nothing jumps to, and the block
                // of the trap gets a placeholder `ret` (the passes keep the trap).
                self.ssa.continue_dead();
                Ok(Lowered::Never)
            }
            "debug_assert" | "debug_assert_eq" | "debug_assert_ne" => Ok(Lowered::Unit),
            _ => {
                let args = mac
                    .parse_body_with(Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated)
                    .map_err(|_| invalid(span, format!("`{name}!` takes expressions separated by commas")))?;
                let operands = if name == "assert" { 1 } else { 2 };
                if args.len() < operands {
                    return Err(invalid(
                        span,
                        format!(
                            "`{name}!` takes {operands} operand{} and an optional message",
                            if operands == 1 { "" } else { "s" }
                        ),
                    ));
                }
                let condition: syn::Expr = match name {
                    "assert" => {
                        let c = &args[0];
                        syn::parse_quote_spanned!(span=> (#c))
                    }
                    _ => {
                        let (a, b) = (&args[0], &args[1]);
                        if name == "assert_eq" {
                            syn::parse_quote_spanned!(span=> (#a) == (#b))
                        } else {
                            syn::parse_quote_spanned!(span=> (#a) != (#b))
                        }
                    }
                };
                let check: syn::ExprIf = syn::parse_quote_spanned!(span=> if !(#condition) { panic!() });
                self.lower_if(&check, None)?;
                Ok(Lowered::Unit)
            }
        }
    }
}
