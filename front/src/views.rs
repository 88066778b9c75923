//! Windows and chunks: the items of `x.windows(k)`, `x.chunks(k)` and `x.chunks_exact(k)`.
//!
//! The IR has no slice views, so an item is never a value: a variable bound to one (`w` of
//! `for w in x.windows(2)`, or of `.map(|w| ...)`) stands for the `len` elements of `x` from
//! `offset`, and the three things Rust code does with such a slice are lowered on the spot:
//! `w[j]` reads `x[offset + j]`, `w.len()` / `w.is_empty()` test `len`, and iterating over `w`
//! (`w.iter()`, `&w`, `for &v in w`) counts over those elements. Anything else (passing `w` to
//! a function, binding it to another name) is an error that says so.
//!
//! `w[j]` past the item's end is an `OutOfBounds` fault, where Rust panics: the read is
//! redirected to index `len(x)`, which is always out of bounds, rather than reading a
//! neighbouring element of `x`.

use crate::error::{Result, invalid, unsupported};
use crate::lower::Lowerer;
use crate::scope::{Slot, SlotKind, SlotState};
use crate::types::Ty;
use jitdiff_ir::{CondCode, Opcode, Value};
use syn::spanned::Spanned;

/// A window or chunk: `len` elements of `slice` from `offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct View {
    pub slice: Value,
    pub offset: Value,
    pub len: Value,
    /// Whether its elements may be written (`let v = &mut x[a..b];` of a mutable slice).
    pub mutable: bool,
}

/// Which iterator made the items.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Chunking {
    /// `windows(k)`: items start at every index, `k` long, `len - k + 1` of them.
    Windows,
    /// `chunks(k)`: items start every `k`; the last may be shorter.
    Chunks,
    /// `chunks_exact(k)`: items start every `k`, all `k` long; a shorter rest is left out.
    ChunksExact,
}

impl Chunking {
    pub(crate) fn from_method(name: &str) -> Option<Chunking> {
        match name {
            "windows" => Some(Chunking::Windows),
            "chunks" => Some(Chunking::Chunks),
            "chunks_exact" => Some(Chunking::ChunksExact),
            _ => None,
        }
    }
}

impl Lowerer<'_> {
    /// Declare `name` as the view `view` (a read-only slice type, never read as a value).
    pub(crate) fn declare_view(&mut self, name: &str, view: View) {
        self.scopes.declare(Slot {
            name: name.to_string(),
            ty: Ty::Slice { mutable: false },
            kind: SlotKind::View(view),
            mutable: false,
            state: SlotState { value: None, maybe_init: true },
            assigned_at: None,
        });
    }

    /// The view `expr` names, if it is a variable bound to a window or chunk (also `&w`, `(w)`).
    pub(crate) fn view_of(&self, expr: &syn::Expr) -> Option<View> {
        let slot = self.variable_slot(expr)?;
        match self.scopes.slot(slot).kind {
            SlotKind::View(view) => Some(view),
            SlotKind::Growing { .. } => self.growing_view(slot),
            _ => None,
        }
    }

    /// Is `arg` a view passed on (a variable bound to one) or a sub-slice `&x[a..b]`?
    pub(crate) fn is_view_argument(&self, arg: &syn::Expr) -> bool {
        if self.view_of(arg).is_some() {
            return true;
        }
        // A row `m[i]` (or `&m[i]`) of an array of arrays.
        let place = match crate::iter::peel_parens(arg) {
            syn::Expr::Reference(r) => &*r.expr,
            other => other,
        };
        if matches!(crate::iter::peel_parens(place), syn::Expr::Index(i) if self.rows_of(&i.expr).is_some()) {
            return true;
        }
        matches!(crate::iter::peel_parens(arg), syn::Expr::Reference(r) if crate::iter::sub_slice(&r.expr).1.is_some())
    }

    /// The view an argument for a slice parameter (`&mut [f64]` when `mutable`) passes.
    pub(crate) fn view_argument(&mut self, arg: &syn::Expr, mutable: bool) -> Result<View> {
        let inner = match crate::iter::peel_parens(arg) {
            syn::Expr::Reference(r) if crate::iter::sub_slice(&r.expr).1.is_some() => &*r.expr,
            syn::Expr::Reference(r) if matches!(crate::iter::peel_parens(&r.expr), syn::Expr::Index(i) if self.rows_of(&i.expr).is_some()) => {
                &*r.expr
            }
            other => other,
        };
        self.slice_source(inner, Some(mutable))
    }

    /// `let v = &x[a..b];` (or `&mut`, of a slice or another view): the view of those elements.
    pub(crate) fn sub_slice_view(&mut self, expr: &syn::Expr, mutable: bool) -> Result<View> {
        self.slice_source(expr, Some(mutable))
    }

    /// The elements an iterator over `expr` visits, or a `let` of a sub-slice binds: a slice,
    /// a view, or a sub-slice `x[a..b]` of either (`a..`, `..b`, `a..=b` too); `mutable` is
    /// what the iteration asks for (`iter_mut`, `&mut`), `None` the slice's own kind.
    ///
    /// A sub-slice has `max(b - a, 0)` elements from `a`. Rust panics up front when `a > b` or
    /// `b` is past the end; here a reversed range is empty and reading past the end faults
    /// (`OutOfBounds`): past a slice's end by itself, past a view's end because the view of an
    /// out-of-range sub-slice starts at the slice's end (see docs/rust.md).
    pub(crate) fn slice_source(&mut self, expr: &syn::Expr, mutable: Option<bool>) -> Result<View> {
        let (base, range) = crate::iter::sub_slice(expr);
        if range.is_some() && self.rows_of(base).is_some() {
            return Err(unsupported(
                base.span(),
                "sub-slices of arrays of arrays (`m[a..b]`)",
                "index the rows in a loop: `for i in a..b { let row = &m[i]; ... }`",
            ));
        }
        let row = self.row_view(base)?;
        let whole = match self.view_of(base).or(row) {
            Some(view) => view,
            None => {
                let slice = match self.lower_expr(base, None)? {
                    crate::lower::Lowered::Value(op) if matches!(op.ty, Ty::Slice { .. }) => op,
                    other => {
                        return Err(invalid(
                            base.span(),
                            format!(
                                "cannot iterate over a `{}`; iterate over a slice, an array or a range",
                                other.ty()
                            ),
                        ));
                    }
                };
                let len = self.ssa.op(Opcode::Len, &[slice.value]);
                let offset = self.ssa.iconst(0);
                View { slice: slice.value, offset, len, mutable: slice.ty == (Ty::Slice { mutable: true }) }
            }
        };
        let wanted = mutable.unwrap_or(whole.mutable);
        if wanted && !whole.mutable {
            if let Some(e) = self.constant_array_write(base) {
                return Err(e);
            }
            return Err(invalid(
                base.span(),
                "cannot iterate mutably over (or mutably borrow) a read-only slice, window or chunk; take the parameter as `&mut [f64]` (or declare the local array `let mut`)",
            ));
        }
        let Some(range) = range else {
            return Ok(View { mutable: wanted, ..whole });
        };
        let start = match &range.start {
            Some(start) => self.usize_arg(start)?,
            None => self.ssa.iconst(0),
        };
        let end = match &range.end {
            Some(end) => {
                let end = self.usize_arg(end)?;
                if matches!(range.limits, syn::RangeLimits::Closed(_)) {
                    let one = self.ssa.iconst(1);
                    self.ssa.op(Opcode::IAdd, &[end, one])
                } else {
                    end
                }
            }
            None => whole.len,
        };
        let diff = self.ssa.op(Opcode::ISub, &[end, start]);
        let len = self.clamp_at_zero(diff);
        let at = self.ssa.op(Opcode::IAdd, &[whole.offset, start]);
        // Within a view the slice goes on past its end: an end past the view's moves the
        // sub-slice to the slice's end, where every read faults. (A whole slice needs no
        // check: reading past its end faults by itself.)
        let offset = if self.view_of(base).is_some() || row.is_some() {
            let inside = self.ssa.icmp(CondCode::Le, end, whole.len);
            let past_end = self.ssa.op(Opcode::Len, &[whole.slice]);
            self.ssa.select(inside, at, past_end)
        } else {
            at
        };
        Ok(View { slice: whole.slice, offset, len, mutable: wanted })
    }

    /// The index into the viewed slice of the view's element `j`: `offset + j` when
    /// `0 <= j < len`, else `len(slice)` (so that the read faults).
    ///
    /// Inside a counted loop whose counter `j` runs from 0 below its bound, `j >= 0` is known,
    /// and so is `j < len` when the bound is the view's length (`for i in 0..v.len()`): those
    /// comparisons are left out.
    pub(crate) fn view_index(&mut self, view: View, j: Value) -> Value {
        let at = self.ssa.op(Opcode::IAdd, &[view.offset, j]);
        let counter_bound = self.counters.iter().rev().find(|(counter, _)| *counter == j).map(|&(_, bound)| bound);
        let inside = match counter_bound {
            Some(bound) if bound == view.len => return at,
            Some(_) => self.ssa.icmp(CondCode::Lt, j, view.len),
            None => {
                let zero = self.ssa.iconst(0);
                let not_negative = self.ssa.icmp(CondCode::Ge, j, zero);
                let below_len = self.ssa.icmp(CondCode::Lt, j, view.len);
                self.ssa.op(Opcode::And, &[not_negative, below_len])
            }
        };
        let past_end = self.ssa.op(Opcode::Len, &[view.slice]);
        self.ssa.select(inside, at, past_end)
    }

    /// `w.len()` and `w.is_empty()` of a view; other methods are errors.
    pub(crate) fn view_method(&mut self, view: View, m: &syn::ExprMethodCall) -> Result<crate::lower::Lowered> {
        use crate::lower::{Lowered, Operand};
        use crate::types::IntKind;
        if !m.args.is_empty() {
            return Err(invalid(m.span(), format!("`{}` of a window or chunk takes no arguments", m.method)));
        }
        match m.method.to_string().as_str() {
            "len" => Ok(Lowered::Value(Operand { value: view.len, ty: Ty::Int(IntKind::Usize) })),
            "is_empty" => {
                let zero = self.ssa.iconst(0);
                Ok(Lowered::Value(Operand { value: self.ssa.icmp(CondCode::Eq, view.len, zero), ty: Ty::Bool }))
            }
            other => Err(unsupported(
                m.method.span(),
                format!("methods of windows and chunks other than `len` and `is_empty` (here `{other}`)"),
                "index it (`w[j]`), take `w.len()`, or iterate over it (`w.iter()`)",
            )),
        }
    }

    /// The number of items and the view of item `k`, for chunking `len` elements of `slice`
    /// from `base` by `size`. A zero `size` divides by zero (Rust panics).
    pub(crate) fn chunk_count(&mut self, chunking: Chunking, len: Value, size: Value) -> Value {
        let one = self.ssa.iconst(1);
        match chunking {
            Chunking::Windows => {
                // max(len - size + 1, 0), times size / size: the division faults at size 0.
                let shorter = self.ssa.op(Opcode::ISub, &[len, size]);
                let starts = self.ssa.op(Opcode::IAdd, &[shorter, one]);
                let zero = self.ssa.iconst(0);
                let positive = self.ssa.icmp(CondCode::Gt, starts, zero);
                let count = self.ssa.select(positive, starts, zero);
                let unit = self.ssa.op(Opcode::IDiv, &[size, size]);
                self.ssa.op(Opcode::IMul, &[count, unit])
            }
            Chunking::Chunks => {
                // ceil(len / size)
                let size_less_one = self.ssa.op(Opcode::ISub, &[size, one]);
                let padded = self.ssa.op(Opcode::IAdd, &[len, size_less_one]);
                self.ssa.op(Opcode::IDiv, &[padded, size])
            }
            Chunking::ChunksExact => self.ssa.op(Opcode::IDiv, &[len, size]),
        }
    }

    /// Item `k` of the chunking of `len` elements of `slice` from `base` by `size`.
    pub(crate) fn chunk_at(
        &mut self,
        chunking: Chunking,
        slice: Value,
        base: Value,
        len: Value,
        size: Value,
        k: Value,
    ) -> View {
        match chunking {
            Chunking::Windows => {
                View { slice, offset: self.ssa.op(Opcode::IAdd, &[base, k]), len: size, mutable: false }
            }
            Chunking::Chunks | Chunking::ChunksExact => {
                let start = self.ssa.op(Opcode::IMul, &[k, size]);
                let offset = self.ssa.op(Opcode::IAdd, &[base, start]);
                let view_len = match chunking {
                    Chunking::ChunksExact => size,
                    _ => {
                        let rest = self.ssa.op(Opcode::ISub, &[len, start]);
                        let short = self.ssa.icmp(CondCode::Lt, rest, size);
                        self.ssa.select(short, rest, size)
                    }
                };
                View { slice, offset, len: view_len, mutable: false }
            }
        }
    }
}
