//! Expressions: the dispatch over syn's expression kinds, variables, literals, indexing, tuples,
//! references and local arrays. Operators are in `operators.rs`, control flow in `control.rs`
//! and `iter.rs`, calls and methods in `calls.rs` and `methods.rs`.

use crate::error::{FrontError, FrontErrorKind, Result, invalid, mismatch, unsupported};
use crate::lower::{Lowered, Lowerer, Operand};
use crate::scope::SlotKind;
use crate::types::{IntKind, Ty};
use jitdiff_ir::Opcode;
use proc_macro2::Span;
use syn::spanned::Spanned;

impl Lowerer<'_> {
    /// Lower `expr`; `expect` is the type the context wants, if known (it types literals).
    pub(crate) fn lower_expr(&mut self, expr: &syn::Expr, expect: Option<&Ty>) -> Result<Lowered> {
        self.nested(|| expr.span(), |this| this.lower_expr_inner(expr, expect))
    }

    fn lower_expr_inner(&mut self, expr: &syn::Expr, expect: Option<&Ty>) -> Result<Lowered> {
        use syn::Expr as E;
        match expr {
            E::Lit(lit) => self.lower_lit(&lit.lit, expect, false),
            E::Path(path) => self.lower_path(path),
            E::Paren(p) => self.lower_expr(&p.expr, expect),
            E::Group(g) => self.lower_expr(&g.expr, expect),
            E::Binary(b) => self.lower_binary(b, expect),
            E::Unary(u) => self.lower_unary(u, expect),
            E::Cast(c) => self.lower_cast(c),
            E::Index(index) => {
                let (slice, i) = self.lower_element(index)?;
                Ok(Lowered::Value(Operand { value: self.ssa.op(Opcode::Load, &[slice.value, i.value]), ty: Ty::F64 }))
            }
            E::If(e) => self.lower_if(e, expect),
            E::Block(b) => {
                if let Some(label) = &b.label {
                    return Err(unsupported(
                        label.span(),
                        "labelled blocks",
                        "use a labelled `loop` with `break 'label value`",
                    ));
                }
                self.lower_block(&b.block, expect)
            }
            // `unsafe { ... }` is where Rust 2024 calls externs; it lowers like any block.
            E::Unsafe(u) => self.lower_block(&u.block, expect),
            E::While(w) => self.lower_while(w),
            E::Loop(l) => self.lower_loop(l, expect),
            E::ForLoop(f) => self.lower_for(f),
            E::Break(b) => self.lower_break(b),
            E::Continue(c) => self.lower_continue(c),
            E::Return(r) => self.lower_return(r),
            E::Assign(a) => self.lower_assign(a),
            E::Call(c) => self.lower_call(c, expect),
            E::MethodCall(m) => self.lower_method_call(m, expect),
            E::Tuple(t) => self.lower_tuple(t),
            E::Field(f) => self.lower_field(f),
            E::Reference(r) => self.lower_reference(r),
            E::Array(a) => self.lower_array_literal(a),
            E::Repeat(r) => self.lower_array_repeat(r),
            E::Closure(c) => Err(invalid(
                c.span(),
                "closures are supported only as the argument of `map`, `filter` or `fold` on an iterator, or bound with `let` and called; write a `fn` item and call it",
            )),
            E::Macro(m) => self.lower_macro(&m.mac),
            E::Match(m) => self.lower_match(m, expect),
            E::Let(l) => Err(unsupported(
                l.span(),
                "`while let` and `let` expressions other than an `if let Some(v) = ...` condition",
                "test with a `bool` condition",
            )),
            E::Range(r) => Err(unsupported(
                r.span(),
                "ranges outside `for` loops",
                "iterate over the range directly: `for i in a..b { ... }`",
            )),
            E::Struct(s) => self.lower_struct_literal(s),
            E::Try(t) => Err(unsupported(t.span(), "`?` operators", "return plain values and test them with `if`")),
            E::Async(_) | E::Await(_) => {
                Err(unsupported(expr.span(), "`async` and `.await`", "write ordinary synchronous code"))
            }
            E::Const(c) => Err(unsupported(c.span(), "inline `const` blocks", "define a module-level `const`")),
            _ => Err(unsupported(
                expr.span(),
                "expressions of this kind",
                "use arithmetic, calls, `if`, loops, indexing and the supported methods (see docs/rust.md)",
            )),
        }
    }

    /// Lower `expr` to a scalar (a placeholder of the expected type if it diverges).
    pub(crate) fn scalar(&mut self, expr: &syn::Expr, expect: Option<&Ty>) -> Result<Operand> {
        let value = self.lower_expr(expr, expect)?;
        self.scalar_value(value, expr, expect)
    }

    /// `value`, lowered from `expr`, as a scalar (see [`Lowerer::scalar`]).
    pub(crate) fn scalar_value(&mut self, value: Lowered, expr: &syn::Expr, expect: Option<&Ty>) -> Result<Operand> {
        match value {
            Lowered::Value(op) if op.ty.is_scalar() => Ok(op),
            Lowered::Never => Ok(self.placeholder(expect.unwrap_or(&Ty::F64))),
            other => Err(invalid(
                expr.span(),
                format!("expected a number or `bool` here, found `{}`; use a scalar expression", other.ty()),
            )),
        }
    }

    /// Lower `expr`, which must have type `ty` (integer literals take `ty`).
    pub(crate) fn scalar_of(&mut self, expr: &syn::Expr, ty: &Ty) -> Result<Operand> {
        let op = self.scalar(expr, Some(ty))?;
        if !op.ty.fits(ty) {
            return Err(type_error(expr.span(), ty, &op.ty, Some(expr)));
        }
        let ty = match (&op.ty, ty) {
            (Ty::Int(IntKind::Literal), t) => t.clone(),
            (t, _) => t.clone(),
        };
        Ok(Operand { value: op.value, ty })
    }

    /// The value of variable `index`.
    pub(crate) fn read_slot(&mut self, index: usize, span: Span) -> Result<Operand> {
        let slot = self.scopes.slot(index);
        if let SlotKind::Element { slice, index } = slot.kind {
            return Ok(Operand { value: self.ssa.op(Opcode::Load, &[slice, index]), ty: Ty::F64 });
        }
        if let SlotKind::Closure(_) = slot.kind {
            return Err(crate::closures::closure_as_value(&slot.name, span));
        }
        if slot.kind == SlotKind::Struct {
            return Err(crate::structs::struct_as_scalar(&slot.name, span));
        }
        if let SlotKind::Growing { .. } = slot.kind {
            return Err(unsupported(
                span,
                format!(
                    "vectors that `push` used other than indexed, measured, iterated or passed on (here `{}`)",
                    slot.name
                ),
                "index it, iterate over it, or pass `&v` to a function taking a slice",
            ));
        }
        if let SlotKind::View(_) = slot.kind {
            return Err(unsupported(
                span,
                format!(
                    "windows, chunks and sub-slices used other than indexed, measured with `len()` or iterated (here `{}`)",
                    slot.name
                ),
                "index its elements (`w[j]`) or pass the slice and the start index",
            ));
        }
        match slot.state.value {
            Some(value) => Ok(Operand { value, ty: slot.ty.clone() }),
            None => Err(FrontError::new(span, FrontErrorKind::Uninitialised { name: slot.name.clone() })),
        }
    }

    fn lower_path(&mut self, path: &syn::ExprPath) -> Result<Lowered> {
        let span = path.span();
        if path.qself.is_some() {
            return Err(unsupported(
                span,
                "qualified paths (`<T as Trait>::...`)",
                "call the function or method directly",
            ));
        }
        if let Some(ident) = path.path.get_ident() {
            let name = crate::types::name_of(ident);
            if let Some(slot) = self.scopes.lookup(&name) {
                if self.scopes.slot(slot).kind == SlotKind::Struct {
                    return self.read_struct(slot, span);
                }
                return Ok(Lowered::Value(self.read_slot(slot, span)?));
            }
            if self.ctx.consts.contains_key(&name) {
                return self.lower_const(&name, span);
            }
            if let Some(value) = self.ctx.imported_constant(&name) {
                return Ok(Lowered::Value(Operand { value: self.ssa.fconst(value), ty: Ty::F64 }));
            }
            if self.ctx.functions.contains_key(&name) {
                return Err(unsupported(span, "functions as values", format!("call it: `{name}(...)`")));
            }
            return Err(FrontError::new(
                span,
                FrontErrorKind::Unknown {
                    what: "value".into(),
                    name,
                    instead: "declare it with `let`, make it a parameter, or define a module-level `const`".into(),
                },
            ));
        }
        let text = crate::types::path_text(&path.path);
        match crate::consts::path_constant(&text) {
            Some(Ok(op)) => Ok(Lowered::Value(self.constant_operand(op))),
            Some(Err(message)) => Err(invalid(span, message)),
            None => Err(FrontError::new(
                span,
                FrontErrorKind::Unknown {
                    what: "value".into(),
                    name: text,
                    instead: "use a local, a parameter, a `const`, `std::f64::consts::*` or `f64::INFINITY`, `f64::NAN`, `f64::EPSILON`, `i64::MAX` ...".into(),
                },
            )),
        }
    }

    /// `slice[index]`: the slice and the index (a `usize`).
    pub(crate) fn lower_element(&mut self, index: &syn::ExprIndex) -> Result<(Operand, Operand)> {
        if let syn::Expr::Range(r) = &*index.index {
            return Err(unsupported(
                r.span(),
                "sub-slices (`x[a..b]`) other than iterated, bound with `let` or passed to a function (`x[a..b].iter()`, `let v = &x[a..];`, `f(&x[a..])`)",
                "pass the whole slice and an offset, and index `x[offset + i]`",
            ));
        }
        if self.rows_of(&index.expr).is_some() {
            return Err(invalid(
                index.span(),
                "a row of an array of arrays is not a number: index its element (`m[i][j]`), borrow it (`&m[i]`) or copy it (`let row = m[i];`)",
            ));
        }
        let view = match self.view_of(&index.expr) {
            Some(view) => Some(view),
            None => self.row_view(&index.expr)?,
        };
        let slice = match view {
            Some(view) => Operand { value: view.slice, ty: Ty::Slice { mutable: view.mutable } },
            None => into_slice(self.lower_expr(&index.expr, None)?, &index.expr)?,
        };
        let usize_ty = Ty::Int(IntKind::Usize);
        let i = self.scalar(&index.index, Some(&usize_ty))?;
        if !matches!(i.ty, Ty::Int(IntKind::Usize | IntKind::Literal)) {
            return Err(mismatch(
                index.index.span(),
                "usize",
                &i.ty,
                if matches!(i.ty, Ty::Int(_) | Ty::F64) {
                    "slices are indexed by `usize`: add `as usize`"
                } else {
                    "index with a `usize`"
                },
            ));
        }
        let i = match view {
            Some(view) => Operand { value: self.view_index(view, i.value), ty: i.ty },
            None => i,
        };
        // The load or store of the element is attributed to the expression `slice[index]`.
        self.at(index.expr.span());
        Ok((slice, i))
    }

    fn lower_tuple(&mut self, tuple: &syn::ExprTuple) -> Result<Lowered> {
        if tuple.elems.is_empty() {
            return Ok(Lowered::Unit);
        }
        let mut items = vec![];
        for elem in &tuple.elems {
            match self.lower_expr(elem, None)? {
                Lowered::Value(op) if op.ty.is_scalar() => items.push(op),
                Lowered::Never => return Ok(Lowered::Never),
                other => {
                    return Err(unsupported(
                        elem.span(),
                        format!("tuples holding `{}`", other.ty()),
                        "build tuples of `f64`, integers and `bool`",
                    ));
                }
            }
        }
        Ok(Lowered::Tuple(items))
    }

    fn lower_field(&mut self, field: &syn::ExprField) -> Result<Lowered> {
        let index = match &field.member {
            syn::Member::Unnamed(index) => index,
            syn::Member::Named(ident) => {
                let name = crate::types::name_of(ident);
                return match self.lower_expr(&field.base, None)? {
                    Lowered::Struct(ty, items) => self.struct_field(&ty, items, &name, ident.span()),
                    Lowered::Never => Ok(Lowered::Never),
                    other => Err(invalid(
                        ident.span(),
                        format!("`.{name}` needs a struct, found `{}`; remove it", other.ty()),
                    )),
                };
            }
        };
        match self.lower_expr(&field.base, None)? {
            Lowered::Struct(ty, items) if ty.tuple => {
                self.struct_field(&ty, items, &index.index.to_string(), index.span)
            }
            Lowered::Tuple(items) => match items.get(index.index as usize) {
                Some(item) => Ok(Lowered::Value(item.clone())),
                None => Err(invalid(
                    index.span(),
                    format!(
                        "this tuple has {} elements, so `.{}` does not exist; use `.0` .. `.{}`",
                        items.len(),
                        index.index,
                        items.len().saturating_sub(1)
                    ),
                )),
            },
            Lowered::Never => Ok(Lowered::Never),
            other => Err(invalid(
                field.span(),
                format!("`.{}` needs a tuple, found `{}`; remove it", index.index, other.ty()),
            )),
        }
    }

    /// `&slice`, `&mut array`, `&x[..]`: slices pass by reference; other references are not
    /// supported.
    fn lower_reference(&mut self, reference: &syn::ExprReference) -> Result<Lowered> {
        let mutable = reference.mutability.is_some();
        let inner: &syn::Expr = match &*reference.expr {
            syn::Expr::Index(index) if matches!(&*index.index, syn::Expr::Range(r) if r.start.is_none() && r.end.is_none()) => {
                &index.expr
            }
            syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => &u.expr,
            other => other,
        };
        match self.lower_expr(inner, None)? {
            Lowered::Value(op) if matches!(op.ty, Ty::Slice { .. }) => {
                if mutable && op.ty == (Ty::Slice { mutable: false }) {
                    if let Some(e) = self.constant_array_write(inner) {
                        return Err(e);
                    }
                    return Err(invalid(
                        reference.span(),
                        "cannot borrow a read-only slice as mutable; take the parameter as `&mut [f64]` (or declare the local array `let mut`)",
                    ));
                }
                Ok(Lowered::Value(Operand { value: op.value, ty: Ty::Slice { mutable } }))
            }
            Lowered::Never => Ok(Lowered::Never),
            // `&s` for a `&Struct` parameter: the struct's value (it cannot change during the call);
            // `&mut s` for the `self` of a `&mut self` method, which writes `s` back after the call
            // (no other parameter takes a struct by `&mut`).
            value @ Lowered::Struct(..) => Ok(value),
            other => Err(unsupported(
                reference.span(),
                format!("references to `{}` values", other.ty()),
                "pass the value itself, and return new values instead of writing through references",
            )),
        }
    }
}

/// A type mismatch at `span`, with the fix for the common cases.
pub(crate) fn type_error(span: Span, expected: &Ty, found: &Ty, expr: Option<&syn::Expr>) -> FrontError {
    let literal = expr.and_then(literal_text);
    let instead = match (expected, found) {
        (Ty::F64, Ty::Int(_)) => match literal {
            Some(text) => format!("write the literal as a float: `{text}.0`"),
            None => "add `as f64`".into(),
        },
        (Ty::Int(k), Ty::F64) => match literal {
            Some(_) => "write an integer literal (no `.`)".into(),
            None => format!("add `as {}`", target_int(*k)),
        },
        (Ty::Int(k), Ty::Int(_)) => format!("add `as {}`", target_int(*k)),
        (Ty::F64, Ty::Bool) => "use `if b { 1.0 } else { 0.0 }`".into(),
        (Ty::Int(_), Ty::Bool) => "use `b as i64`, or `if b { 1 } else { 0 }`".into(),
        (Ty::Bool, Ty::F64 | Ty::Int(_)) => "compare instead, e.g. `x != 0.0`".into(),
        (Ty::Slice { mutable: true }, Ty::Slice { mutable: false }) => {
            "pass a mutable slice: a `&mut [f64]` parameter or `&mut local_array`".into()
        }
        (Ty::Slice { .. }, _) => "pass a slice (a `&[f64]` parameter or a local array)".into(),
        (_, Ty::Unit) => "give the expression a value (remove the trailing `;`)".into(),
        (Ty::Unit, _) => "end the statement with `;` to discard the value".into(),
        (Ty::Struct(s), _) => format!("build a `{0}` from the fields it needs: `{0} {{ ... }}`", s.name),
        _ => "convert the value to the expected type".into(),
    };
    mismatch(span, expected, found, instead)
}

fn target_int(kind: IntKind) -> &'static str {
    if kind == IntKind::Literal { "i64" } else { kind.name() }
}

/// The text of an integer or float literal expression (`-2`, `3.5`), if `expr` is one.
fn literal_text(expr: &syn::Expr) -> Option<String> {
    literal_text_within(expr, 8)
}

fn literal_text_within(expr: &syn::Expr, depth: usize) -> Option<String> {
    let depth = depth.checked_sub(1)?;
    let literal_text = |e: &syn::Expr| literal_text_within(e, depth);
    match expr {
        syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => Some(i.base10_digits().to_string()),
        syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Float(f), .. }) => Some(f.base10_digits().to_string()),
        syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => literal_text(&u.expr).map(|t| format!("-{t}")),
        syn::Expr::Paren(p) => literal_text(&p.expr),
        syn::Expr::Block(b) => match b.block.stmts.as_slice() {
            [syn::Stmt::Expr(e, None)] => literal_text(e),
            _ => None,
        },
        _ => None,
    }
}

/// The opcode of an arithmetic operator on operands of type `ty`.
pub(crate) fn arith_opcode(op: &syn::BinOp, ty: &Ty, span: Span) -> Result<Opcode> {
    use syn::BinOp as B;
    Ok(match (op, ty) {
        (B::Add(_), Ty::F64) => Opcode::FAdd,
        (B::Sub(_), Ty::F64) => Opcode::FSub,
        (B::Mul(_), Ty::F64) => Opcode::FMul,
        (B::Div(_), Ty::F64) => Opcode::FDiv,
        (B::Rem(_), Ty::F64) => Opcode::FRem,
        (B::Add(_), Ty::Int(_)) => Opcode::IAdd,
        (B::Sub(_), Ty::Int(_)) => Opcode::ISub,
        (B::Mul(_), Ty::Int(_)) => Opcode::IMul,
        (B::Div(_), Ty::Int(_)) => Opcode::IDiv,
        (B::Rem(_), Ty::Int(_)) => Opcode::IRem,
        (_, Ty::Bool) => {
            return Err(unsupported(
                span,
                "arithmetic operators on `bool` values",
                "convert with `if b { 1.0 } else { 0.0 }` first",
            ));
        }
        _ => {
            return Err(unsupported(span, "operators of this kind", "use `+`, `-`, `*`, `/` or `%` on numbers"));
        }
    })
}

/// The error for a macro call (`println!`, `vec!`, `assert!` ...).
pub(crate) fn macro_error(mac: &syn::Macro) -> FrontError {
    let name = mac.path.segments.last().map(|s| crate::types::name_of(&s.ident)).unwrap_or_default();
    let instead = match name.as_str() {
        "vec" => {
            "use `vec![x; n]` or `vec![a, b, c]` as the value of a `let` (a run-time `n` before any loop or branch)"
                .to_string()
        }
        _ => format!("remove the `{name}!` call (the IR has no I/O or text)"),
    };
    unsupported(mac.span(), format!("macros such as `{name}!`"), instead)
}

/// The slice `lowered` is, or the error for indexing something else (`expr`).
fn into_slice(lowered: Lowered, expr: &syn::Expr) -> Result<Operand> {
    match lowered {
        Lowered::Value(op) if matches!(op.ty, Ty::Slice { .. }) => Ok(op),
        other => Err(invalid(
            expr.span(),
            format!("cannot index a value of type `{}`; only slices and arrays of `f64` can be indexed", other.ty()),
        )),
    }
}
