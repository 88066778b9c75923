//! Arrays of arrays: `[[f64; C]; R]` locals, `&[[f64; C]]` and `&[[f64; C]; R]` parameters,
//! `vec![[0.0; C]; n]` — a matrix, a list of points. The IR has flat slices only, so one is a
//! flat slice of `R * C` elements, row after row (the layout of `as_flattened()`), and the
//! variable's slot remembers `C` ([`SlotKind::Rows`]):
//!
//! - `m[i][j]` reads and writes element `i * C + j` (`j` past the row's end faults, as Rust
//!   panics, rather than reading the next row);
//! - `m[i]` borrowed (`&m[i]`, `m[i].iter()`, passed to a `&[f64]` or `[f64; C]` parameter) is a
//!   view of the row; `let row = m[i];` copies it, as Rust copies an array;
//! - iterating over `m` (`m.iter()`, `&m`, `iter_mut()`) visits its rows as `chunks_exact(C)`
//!   does, and `m.len()` is `R`.

use crate::error::{Result, invalid, unsupported};
use crate::lower::Lowerer;
use crate::scope::SlotKind;
use crate::stmt::binding;
use crate::types::Ty;
use crate::views::View;
use jitdiff_ir::Opcode;
use syn::spanned::Spanned;

/// The element type of an array of arrays of `f64` written `ty` (`[[f64; C]; R]`, `[[f64; C]]`,
/// also behind `&`/`&mut`): `Some(C)`'s expression.
pub(crate) fn row_length_of_type(ty: &syn::Type) -> Option<&syn::Expr> {
    let outer = match ty {
        syn::Type::Reference(r) => &*r.elem,
        syn::Type::Paren(p) => return row_length_of_type(&p.elem),
        other => other,
    };
    let element = match outer {
        syn::Type::Array(a) => &*a.elem,
        syn::Type::Slice(s) => &*s.elem,
        _ => return None,
    };
    match element {
        syn::Type::Array(row) if matches!(&*row.elem, syn::Type::Path(p) if p.path.is_ident("f64")) => Some(&row.len),
        _ => None,
    }
}

impl Lowerer<'_> {
    /// The row length of the array of arrays `expr` names (a variable, also `&m`, `(m)`).
    pub(crate) fn rows_of(&self, expr: &syn::Expr) -> Option<i64> {
        match self.scopes.slot(self.variable_slot(expr)?).kind {
            SlotKind::Rows { cols } => Some(cols),
            _ => None,
        }
    }

    /// The slot of the variable `expr` names (also `&v`, `(v)`).
    pub(crate) fn variable_slot(&self, expr: &syn::Expr) -> Option<usize> {
        match expr {
            syn::Expr::Paren(p) => self.variable_slot(&p.expr),
            syn::Expr::Reference(r) => self.variable_slot(&r.expr),
            syn::Expr::Path(p) if p.qself.is_none() => self.scopes.lookup(&crate::types::name_of(p.path.get_ident()?)),
            _ => None,
        }
    }

    /// `m[i]` of an array of arrays `m`: the view of row `i` (`None` for anything else). A row
    /// past the end starts at the slice's end, where every read faults.
    pub(crate) fn row_view(&mut self, expr: &syn::Expr) -> Result<Option<View>> {
        let syn::Expr::Index(index) = crate::iter::peel_parens(expr) else { return Ok(None) };
        let Some(cols) = self.rows_of(&index.expr) else { return Ok(None) };
        if matches!(crate::iter::peel_parens(&index.index), syn::Expr::Range(_)) {
            return Err(unsupported(
                index.index.span(),
                "sub-slices of arrays of arrays (`m[a..b]`)",
                "index the rows in a loop: `for i in a..b { let row = &m[i]; ... }`",
            ));
        }
        let slice = match self.lower_expr(&index.expr, None)? {
            crate::lower::Lowered::Value(op) => op,
            other => return Err(invalid(index.expr.span(), format!("cannot index a `{}`", other.ty()))),
        };
        let row = self.usize_arg(&index.index)?;
        let width = self.ssa.iconst(cols);
        let start = self.ssa.op(Opcode::IMul, &[row, width]);
        // Row `row` exists when `start + C <= len` (and `row` is not negative: a `usize` here).
        let end = self.ssa.op(Opcode::IAdd, &[start, width]);
        let len = self.ssa.op(Opcode::Len, &[slice.value]);
        let zero = self.ssa.iconst(0);
        let fits = self.ssa.icmp(jitdiff_ir::CondCode::Le, end, len);
        let not_negative = self.ssa.icmp(jitdiff_ir::CondCode::Ge, row, zero);
        let inside = self.ssa.op(Opcode::And, &[fits, not_negative]);
        let offset = self.ssa.select(inside, start, len);
        let mutable = slice.ty == (crate::types::Ty::Slice { mutable: true });
        Ok(Some(View { slice: slice.value, offset, len: width, mutable }))
    }

    /// `m.len()` / `m.is_empty()` of an array of arrays: rows, not elements.
    pub(crate) fn rows_method(&mut self, m: &syn::ExprMethodCall, cols: i64) -> Result<crate::lower::Lowered> {
        use crate::lower::{Lowered, Operand};
        use crate::types::{IntKind, Ty};
        let name = m.method.to_string();
        if !m.args.is_empty() || !matches!(name.as_str(), "len" | "is_empty") {
            return Err(unsupported(
                m.method.span(),
                format!("calls of `{name}` on an array of arrays"),
                "index its rows (`m[i][j]`, `&m[i]`), iterate over them, or ask its `len()`",
            ));
        }
        let slice = match self.lower_expr(&m.receiver, None)? {
            Lowered::Value(op) => op.value,
            other => return Ok(other),
        };
        let len = self.ssa.op(Opcode::Len, &[slice]);
        let width = self.ssa.iconst(cols);
        let rows = self.ssa.op(Opcode::IDiv, &[len, width]);
        Ok(Lowered::Value(match name.as_str() {
            "len" => Operand { value: rows, ty: Ty::Int(IntKind::Usize) },
            _ => {
                let zero = self.ssa.iconst(0);
                Operand { value: self.ssa.icmp(jitdiff_ir::CondCode::Eq, rows, zero), ty: Ty::Bool }
            }
        }))
    }
}

/// The row length an expression making an array of arrays gives it, read from its syntax:
/// `[[x; C]; R]`, `[[a, b], [c, d]]`, `vec![[x; C]; n]` (`None` for anything else).
pub(crate) fn row_length_of_expr(ctx: &crate::module::ModuleCtx, expr: &syn::Expr) -> Option<i64> {
    let row = match crate::iter::peel_parens(expr) {
        syn::Expr::Array(a) => a.elems.first()?,
        syn::Expr::Repeat(r) => &*r.expr,
        syn::Expr::Macro(m) if m.mac.path.is_ident("vec") => {
            let group = proc_macro2::Group::new(proc_macro2::Delimiter::Bracket, m.mac.tokens.clone());
            let inner: syn::Expr = syn::parse2(proc_macro2::TokenTree::Group(group).into()).ok()?;
            return row_length_of_expr(ctx, &inner);
        }
        _ => return None,
    };
    match crate::iter::peel_parens(row) {
        syn::Expr::Array(a) => Some(a.elems.len() as i64),
        syn::Expr::Repeat(r) => crate::consts::const_int(ctx, &r.len, "the length of a row").ok(),
        _ => None,
    }
}

impl Lowerer<'_> {
    /// The elements of one row written `expr` (`[a, b, c]` or `[x; C]` with a constant `C`),
    /// evaluated in order; `None` where `expr` is no array expression.
    pub(crate) fn row_values(&mut self, expr: &syn::Expr) -> Result<Option<Vec<jitdiff_ir::Value>>> {
        use crate::types::Ty;
        match crate::iter::peel_parens(expr) {
            syn::Expr::Array(a) => {
                let mut values = vec![];
                for elem in &a.elems {
                    values.push(self.scalar_of(elem, &Ty::F64)?.value);
                }
                Ok(Some(values))
            }
            syn::Expr::Repeat(r) => {
                let len = self.const_int(&r.len)?;
                if !(1..=1 << 16).contains(&len) {
                    return Err(invalid(r.len.span(), format!("a row needs a length from 1 to 65536, not {len}")));
                }
                let value = self.scalar_of(&r.expr, &Ty::F64)?.value;
                Ok(Some(vec![value; len as usize]))
            }
            _ => Ok(None),
        }
    }

    /// Store `row` (C values) into rows `0..count` of the flat `slice`, row after row (a
    /// one-element row fills a plain array).
    pub(crate) fn fill_rows(&mut self, slice: jitdiff_ir::Value, count: jitdiff_ir::Value, row: &[jitdiff_ir::Value]) {
        let width = self.ssa.iconst(row.len() as i64);
        let zero = self.ssa.iconst(0);
        let head = self.ssa.new_block("fill_head");
        let r = self.ssa.func.add_block_param(head, jitdiff_ir::Type::I64, None);
        let body = self.ssa.new_block("fill_body");
        let done = self.ssa.new_block("fill_done");
        let reachable = self.ssa.reachable;
        self.ssa.jump(head, vec![zero]);
        self.ssa.switch_to(head, reachable);
        let more = self.ssa.icmp(jitdiff_ir::CondCode::Lt, r, count);
        self.ssa.branch(more, body, done);
        self.ssa.switch_to(body, reachable);
        let start = self.ssa.op(Opcode::IMul, &[r, width]);
        for (j, &value) in row.iter().enumerate() {
            let offset = self.ssa.iconst(j as i64);
            let at = self.ssa.op(Opcode::IAdd, &[start, offset]);
            self.ssa.store(slice, at, value);
        }
        let one = self.ssa.iconst(1);
        let next = self.ssa.op(Opcode::IAdd, &[r, one]);
        self.ssa.jump(head, vec![next]);
        self.ssa.switch_to(done, reachable);
    }
}

impl Lowerer<'_> {
    /// `let row = &m[i];` (a view of the row) or `let row = m[i];` (a copy: arrays are `Copy`
    /// in Rust) of an array of arrays `m`; `false` where `init` is no row.
    pub(crate) fn bind_row(&mut self, plain: &syn::Pat, init: &syn::Expr) -> Result<bool> {
        let (borrowed, place) = match crate::iter::peel_parens(init) {
            syn::Expr::Reference(r) => (Some(r.mutability.is_some()), &*r.expr),
            other => (None, other),
        };
        if let syn::Expr::Index(index) = crate::iter::peel_parens(place)
            && self.rows_of(&index.expr).is_some()
        {
            let (name, mutable) = binding(plain)?;
            match borrowed {
                Some(borrowed_mut) => {
                    let Some(view) = self.row_view(place)? else { return Ok(false) };
                    if borrowed_mut && !view.mutable {
                        return Err(invalid(
                            place.span(),
                            "cannot borrow a row of a read-only array of arrays as mutable",
                        ));
                    }
                    self.declare_view(&name, crate::views::View { mutable: borrowed_mut, ..view });
                }
                None => {
                    let span = place.span();
                    let copy: syn::ExprMethodCall =
                        syn::parse_quote_spanned!(span=> #place.iter().copied().collect::<Vec<f64>>());
                    let (array, _, _) = self.lower_collect(&copy, None)?;
                    let slot = self.declare(&name, Ty::Slice { mutable: true }, mutable, Some(array));
                    self.scopes.slot_mut(slot).kind = SlotKind::OwnedArray;
                }
            }
            return Ok(true);
        }
        Ok(false)
    }
}
