//! Vectors that grow by `push`: `let mut v = Vec::with_capacity(n);` then `v.push(x)`. The IR's
//! arrays keep the length they are allocated with, so the capacity is the array (allocated as a
//! `vec!` of that length would be: see `arrays.rs`) and the vector is its first `len` elements,
//! `len` a hidden `usize` variable (`v#len`) that loops carry like any other. Wherever `v` is
//! used — indexed, measured, iterated, passed on — it is the view of those `len` elements
//! ([`crate::views::View`]), so `v[i]` past `len` faults as Rust panics.
//!
//! `push` past the capacity is a `Panic` fault, where Rust would grow the vector: give
//! `with_capacity` the most elements the code pushes. `Vec::new()` has no capacity to allocate
//! and is an error that says so. `clear()` and `truncate(k)` shorten it.

use crate::error::{Result, invalid, unsupported};
use crate::lower::{Lowered, Lowerer, Operand};
use crate::scope::SlotKind;
use crate::types::{IntKind, Ty};
use jitdiff_ir::{Block, CondCode, Opcode, Value};
use syn::spanned::Spanned;

/// `Vec::with_capacity(e)` (also `Vec::<f64>::with_capacity(e)`): `e`.
fn with_capacity(expr: &syn::Expr) -> Option<&syn::Expr> {
    let syn::Expr::Call(call) = crate::iter::peel_parens(expr) else { return None };
    let syn::Expr::Path(path) = &*call.func else { return None };
    let names: Vec<String> = path.path.segments.iter().map(|s| s.ident.to_string()).collect();
    match (&names[..], &call.args.iter().collect::<Vec<_>>()[..]) {
        ([vec, f], [capacity]) if vec == "Vec" && f == "with_capacity" => Some(capacity),
        _ => None,
    }
}

/// `Vec::new()` (or `Vec::<f64>::new()`, `Vec::default()`).
fn vec_new(expr: &syn::Expr) -> bool {
    let syn::Expr::Call(call) = crate::iter::peel_parens(expr) else { return false };
    let syn::Expr::Path(path) = &*call.func else { return false };
    let names: Vec<String> = path.path.segments.iter().map(|s| s.ident.to_string()).collect();
    call.args.is_empty() && matches!(&names[..], [vec, f] if vec == "Vec" && (f == "new" || f == "default"))
}

impl Lowerer<'_> {
    /// `let mut v = Vec::with_capacity(n);`: declare the growing vector (`false` where `init`
    /// is not such a call).
    pub(crate) fn bind_growing(&mut self, plain: &syn::Pat, init: &syn::Expr) -> Result<bool> {
        if vec_new(init) {
            return Err(unsupported(
                init.span(),
                "`Vec::new()` (a vector here cannot grow past the array it is given)",
                "allocate the most elements it will hold: `Vec::with_capacity(n)` and `push`, or build it with \
                 `collect()` or `vec![0.0; n]`",
            ));
        }
        let Some(capacity) = with_capacity(init) else { return Ok(false) };
        let (name, mutable) = crate::stmt::binding(plain)?;
        let capacity = self.scalar_of(capacity, &Ty::Int(IntKind::Usize))?.value;
        self.at(init.span());
        let buffer = if self.ssa.current == Block::ENTRY {
            self.ssa.op(Opcode::Alloc, &[capacity])
        } else {
            self.array_allocated_at_entry(capacity, init.span())?
        };
        let zero = self.ssa.iconst(0);
        // The length first, so that the vector's slot knows it is the one before it.
        self.declare(&format!("{name}#len"), Ty::Int(IntKind::Usize), true, Some(zero));
        let slot = self.declare(&name, Ty::Slice { mutable: true }, mutable, Some(buffer));
        self.scopes.slot_mut(slot).kind = SlotKind::Growing { buffer, zero };
        Ok(true)
    }

    /// The growing vector `expr` names (a variable, also `&v`, `(v)`): its slot.
    pub(crate) fn growing_of(&self, expr: &syn::Expr) -> Option<usize> {
        let slot = self.variable_slot(expr)?;
        matches!(self.scopes.slot(slot).kind, SlotKind::Growing { .. }).then_some(slot)
    }

    /// `v.push(x)`, `v.clear()`, `v.truncate(k)` of the growing vector in `slot`; `None` for
    /// its other methods (`len`, `iter`, ... of the view it is).
    pub(crate) fn growing_method(&mut self, m: &syn::ExprMethodCall, slot: usize) -> Result<Option<Lowered>> {
        let name = m.method.to_string();
        let SlotKind::Growing { buffer, .. } = self.scopes.slot(slot).kind else { return Ok(None) };
        let len_slot = slot - 1;
        let args: Vec<&syn::Expr> = m.args.iter().collect();
        let span = m.span();
        let len = self.read_slot(len_slot, span)?.value;
        let new_len = match (name.as_str(), &args[..]) {
            ("push", [x]) => {
                let x = self.scalar_of(x, &Ty::F64)?.value;
                let capacity = self.ssa.op(Opcode::Len, &[buffer]);
                let room = self.ssa.icmp(CondCode::Lt, len, capacity);
                self.trap_unless(room, m.method.span(), ("past_capacity", "pushed"));
                self.at(m.method.span());
                self.ssa.store(buffer, len, x);
                let one = self.ssa.iconst(1);
                self.ssa.op(Opcode::IAdd, &[len, one])
            }
            ("clear", []) => self.ssa.iconst(0),
            ("truncate", [k]) => {
                let k = self.scalar_of(k, &Ty::Int(IntKind::Usize))?.value;
                let shorter = self.ssa.icmp(CondCode::Lt, k, len);
                self.ssa.select(shorter, k, len)
            }
            ("push" | "clear" | "truncate", _) => {
                return Err(invalid(span, format!("`{name}` takes {} argument(s)", usize::from(name != "clear"))));
            }
            ("pop" | "insert" | "remove" | "extend" | "extend_from_slice" | "resize", _) => {
                return Err(unsupported(
                    m.method.span(),
                    format!("calls of `{name}` on a vector"),
                    "`push` one element at a time, and read the last one as `v[v.len() - 1]` before `truncate(v.len() - 1)`",
                ));
            }
            _ => return Ok(None),
        };
        let ty = Ty::Int(IntKind::Usize);
        self.assign_slot(len_slot, Operand { value: new_len, ty }, span, None)?;
        Ok(Some(Lowered::Unit))
    }

    /// The view a growing vector is now: its first `len` elements.
    pub(crate) fn growing_view(&self, slot: usize) -> Option<crate::views::View> {
        let SlotKind::Growing { buffer, zero } = self.scopes.slot(slot).kind else { return None };
        let len: Value = self.scopes.slot(slot - 1).state.value?;
        Some(crate::views::View { slice: buffer, offset: zero, len, mutable: true })
    }
}
