//! Blocks and statements: `let` (with patterns, annotations, deferred initialisation),
//! assignments and compound assignments to variables, slice elements and tuples of places.

use crate::error::{FrontError, FrontErrorKind, Result, invalid, unsupported};
use crate::expr::{arith_opcode, type_error};
use crate::lower::{Lowered, Lowerer, Operand};
use crate::scope::SlotKind;
use crate::types::{Ty, TypePlace, parse_type};
use proc_macro2::Span;
use syn::spanned::Spanned;

impl Lowerer<'_> {
    /// A `{ ... }` block in a scope of its own: the value of its tail expression, `()` without
    /// one, `!` when it cannot finish.
    pub(crate) fn lower_block(&mut self, block: &syn::Block, expect: Option<&Ty>) -> Result<Lowered> {
        self.scopes.push();
        let result = self.lower_stmts(&block.stmts, expect);
        self.scopes.pop();
        result
    }

    fn lower_stmts(&mut self, stmts: &[syn::Stmt], expect: Option<&Ty>) -> Result<Lowered> {
        let mut value = Lowered::Unit;
        for (k, stmt) in stmts.iter().enumerate() {
            let is_tail = k + 1 == stmts.len();
            value = Lowered::Unit;
            match stmt {
                syn::Stmt::Local(local) => self.lower_let(local)?,
                syn::Stmt::Item(item) => return Err(item_in_body(item)),
                syn::Stmt::Macro(m) => {
                    let v = self.lower_macro(&m.mac)?;
                    if is_tail && m.semi_token.is_none() {
                        value = v;
                    }
                }
                syn::Stmt::Expr(e, semi) => {
                    let tail = is_tail && semi.is_none();
                    let v = self.lower_expr(e, if tail { expect } else { None })?;
                    if tail {
                        value = v;
                    }
                }
            }
        }
        Ok(if self.ssa.reachable { value } else { Lowered::Never })
    }

    fn lower_let(&mut self, local: &syn::Local) -> Result<()> {
        if let Some(init) = &local.init
            && let Some((else_token, _)) = &init.diverge
        {
            return Err(unsupported(else_token.span(), "`let ... else` statements", "use `if`/`else` and `return`"));
        }
        // `let v = &x[a..b];` (`: &[f64]` or `: &mut [f64]` allowed): a view, not a value.
        let (plain, slice_annotation) = match &local.pat {
            syn::Pat::Type(pt) => (&*pt.pat, is_slice_reference(&pt.ty)),
            other => (other, true),
        };
        if let (syn::Pat::Ident(_), Some(init), true) = (plain, &local.init, slice_annotation)
            && let syn::Expr::Reference(r) = crate::iter::peel_parens(&init.expr)
            && let syn::Expr::Index(index) = crate::iter::peel_parens(&r.expr)
            && matches!(crate::iter::peel_parens(&index.index), syn::Expr::Range(range) if range.start.is_some() || range.end.is_some())
        {
            let (name, _) = binding(plain)?;
            let view = self.sub_slice_view(&r.expr, r.mutability.is_some())?;
            self.declare_view(&name, view);
            return Ok(());
        }
        if let (syn::Pat::Ident(_), Some(init)) = (plain, &local.init)
            && (self.bind_row(plain, &init.expr)? || self.bind_growing(plain, &init.expr)?)
        {
            return Ok(());
        }
        if let (syn::Pat::Tuple(_), Some(init)) = (plain, &local.init)
            && self.bind_split(plain, &init.expr)?
        {
            return Ok(());
        }
        if let (syn::Pat::Ident(_), Some(init)) = (plain, &local.init)
            && self.bind_filtered_collect(local, plain, &init.expr)?
        {
            return Ok(());
        }
        let (pat, annotated) = match &local.pat {
            syn::Pat::Type(pt) => {
                let place = if matches!(*pt.pat, syn::Pat::Tuple(_)) { TypePlace::Result } else { TypePlace::Local };
                (&*pt.pat, Some(parse_type(&pt.ty, place)?))
            }
            other => (other, None),
        };
        // `let mut a = Y;` copies a constant array in Rust; here it would alias the read-only table.
        if let (syn::Pat::Ident(p), Some(init)) = (pat, &local.init)
            && p.mutability.is_some()
            && let Some(e) = self.constant_array_write(&init.expr)
        {
            return Err(e);
        }
        if let (syn::Pat::Ident(_), Some(init), None) = (pat, &local.init, &annotated)
            && let syn::Expr::Closure(closure) = crate::iter::peel_parens(&init.expr)
        {
            let (name, _) = binding(pat)?;
            return self.declare_closure(&name, closure);
        }
        let init = match &local.init {
            Some(init) => Some(self.lower_expr(&init.expr, annotated.as_ref())?),
            None => None,
        };
        if let (Some(value), Some(ty)) = (&init, &annotated)
            && !value.ty().fits(ty)
        {
            let expr = local.init.as_ref().map(|i| &*i.expr);
            return Err(type_error(expr.map_or(local.span(), |e| e.span()), ty, &value.ty(), expr));
        }
        let is_array =
            local.init.as_ref().is_some_and(|i| matches!(*i.expr, syn::Expr::Array(_) | syn::Expr::Repeat(_)));
        match pat {
            syn::Pat::Wild(_) => Ok(()),
            syn::Pat::Ident(_) => {
                let (name, mutable) = binding(pat)?;
                match init {
                    None if matches!(annotated, Some(Ty::Struct(_))) => Err(unsupported(
                        pat.span(),
                        "struct variables declared without a value",
                        "initialise the struct where it is declared: `let s = Name { ... };`",
                    )),
                    None => {
                        self.declare(&name, annotated.unwrap_or(Ty::Never), mutable, None);
                        Ok(())
                    }
                    Some(Lowered::Struct(ty, items)) => {
                        let values: Vec<_> = items.iter().map(|o| o.value).collect();
                        self.declare_struct(&name, &ty, mutable, &values);
                        Ok(())
                    }
                    Some(Lowered::Value(op)) => {
                        let ty = match (&op.ty, annotated) {
                            (Ty::Slice { .. }, _) if is_array => Ty::Slice { mutable },
                            (Ty::Int(_), Some(t @ Ty::Int(_))) => t,
                            (t, _) => t.clone(),
                        };
                        let slot = self.declare(&name, ty, mutable, Some(op.value));
                        if matches!(op.ty, Ty::Slice { .. })
                            && local.init.as_ref().is_some_and(|i| crate::arrays::makes_an_array(&i.expr))
                        {
                            self.scopes.slot_mut(slot).kind = SlotKind::OwnedArray;
                        }
                        // An array of arrays: its row length from the type written or the
                        // expression that makes it.
                        let written = match &local.pat {
                            syn::Pat::Type(pt) => crate::rows::row_length_of_type(&pt.ty),
                            _ => None,
                        };
                        let cols = match (written, &local.init) {
                            (Some(cols), _) => Some(crate::consts::const_int(self.ctx, cols, "the length of a row")?),
                            (None, Some(init)) => crate::rows::row_length_of_expr(self.ctx, &init.expr),
                            _ => None,
                        };
                        if let (Some(cols), Ty::Slice { .. }) = (cols, &op.ty) {
                            self.scopes.slot_mut(slot).kind = SlotKind::Rows { cols };
                        }
                        Ok(())
                    }
                    Some(Lowered::Never) => {
                        let op = self.placeholder(&annotated.unwrap_or(Ty::F64));
                        self.declare(&name, op.ty, mutable, Some(op.value));
                        Ok(())
                    }
                    Some(Lowered::Tuple(items)) => {
                        self.declare_tuple(&name, &items, mutable);
                        Ok(())
                    }
                    Some(Lowered::Unit) => {
                        Err(unsupported(pat.span(), "variables of type `()`", "call the function as a statement"))
                    }
                }
            }
            syn::Pat::Slice(pattern) => match init {
                Some(Lowered::Value(op)) if matches!(op.ty, Ty::Slice { .. }) => {
                    self.bind_array_pattern(pattern, op.value)
                }
                Some(Lowered::Never) => Ok(()),
                other => Err(invalid(
                    pat.span(),
                    format!("an array pattern needs an array value, found `{}`", other.map_or(Ty::Unit, |v| v.ty())),
                )),
            },
            syn::Pat::TupleStruct(pattern) => match init {
                Some(Lowered::Struct(ty, items)) if ty.tuple => self.bind_tuple_struct_pattern(pattern, &ty, &items),
                Some(Lowered::Never) => Ok(()),
                other => Err(invalid(
                    pat.span(),
                    format!(
                        "a tuple struct pattern needs a tuple struct value, found `{}`",
                        other.map_or(Ty::Unit, |v| v.ty())
                    ),
                )),
            },
            syn::Pat::Struct(pattern) => match init {
                Some(Lowered::Struct(ty, items)) => self.bind_struct_pattern(pattern, &ty, &items),
                Some(Lowered::Never) => Ok(()),
                other => Err(invalid(
                    pat.span(),
                    format!("a struct pattern needs a struct value, found `{}`", other.map_or(Ty::Unit, |v| v.ty())),
                )),
            },
            syn::Pat::Tuple(tuple) => {
                let items = match init {
                    Some(Lowered::Tuple(items)) => items,
                    Some(Lowered::Never) => {
                        let n = tuple.elems.len();
                        (0..n).map(|_| self.placeholder(&Ty::F64)).collect()
                    }
                    Some(other) => {
                        return Err(invalid(
                            local.init.as_ref().map_or(pat.span(), |i| i.expr.span()),
                            format!(
                                "a tuple pattern needs a tuple value, found `{}`; bind it with `let name = ...`",
                                other.ty()
                            ),
                        ));
                    }
                    None => {
                        return Err(unsupported(
                            pat.span(),
                            "tuple patterns without a value",
                            "declare each variable with its own `let`",
                        ));
                    }
                };
                if items.len() != tuple.elems.len() {
                    return Err(invalid(
                        pat.span(),
                        format!(
                            "this pattern has {} elements but the value has {}; write one name (or `_`) per element",
                            tuple.elems.len(),
                            items.len()
                        ),
                    ));
                }
                for (elem, item) in tuple.elems.iter().zip(items) {
                    if matches!(elem, syn::Pat::Wild(_)) {
                        continue;
                    }
                    let (name, mutable) = binding(elem)?;
                    self.declare(&name, item.ty, mutable, Some(item.value));
                }
                Ok(())
            }
            other => Err(unsupported(
                other.span(),
                "patterns of this kind",
                "bind a name (`let x = ...`) or a tuple of names (`let (a, b) = ...`)",
            )),
        }
    }

    /// `place = value`.
    pub(crate) fn lower_assign(&mut self, assign: &syn::ExprAssign) -> Result<Lowered> {
        if let syn::Expr::Tuple(places) = &*assign.left {
            let value = self.lower_expr(&assign.right, None)?;
            let items = match value {
                Lowered::Tuple(items) if items.len() == places.elems.len() => items,
                Lowered::Never => return Ok(Lowered::Never),
                other => {
                    return Err(invalid(
                        assign.right.span(),
                        format!(
                            "cannot assign `{}` to a tuple of {} places; assign a tuple of as many values",
                            other.ty(),
                            places.elems.len()
                        ),
                    ));
                }
            };
            for (place, item) in places.elems.iter().zip(items) {
                if !matches!(place, syn::Expr::Infer(_)) {
                    self.store_place(place, item, None)?;
                }
            }
            return Ok(Lowered::Unit);
        }
        if matches!(&*assign.left, syn::Expr::Infer(_)) {
            self.lower_expr(&assign.right, None)?;
            return Ok(Lowered::Unit);
        }
        let expect = self.place_type(&assign.left);
        let value = self.lower_expr(&assign.right, expect.as_ref())?;
        let operand = match value {
            Lowered::Value(op) => op,
            Lowered::Never => return Ok(Lowered::Never),
            Lowered::Tuple(items) => {
                // `t = (a, b)` or `t = f(x)` for a tuple variable `t`.
                let found = Lowered::Tuple(items.clone()).ty();
                return match self.struct_place(&assign.left)? {
                    Some((first, place_ty @ Ty::Tuple(_))) if found.fits(&place_ty) => {
                        self.assign_struct(first, items, assign.left.span(), &assign.right)?;
                        Ok(Lowered::Unit)
                    }
                    _ => Err(invalid(
                        assign.right.span(),
                        format!(
                            "cannot assign a value of type `{found}` here; assign it to a tuple variable of that type, or destructure it"
                        ),
                    )),
                };
            }
            Lowered::Struct(ty, items) => {
                let found = Ty::Struct(ty);
                return match self.struct_place(&assign.left)? {
                    Some((first, place_ty)) if place_ty == found => {
                        self.assign_struct(first, items, assign.left.span(), &assign.right)?;
                        Ok(Lowered::Unit)
                    }
                    Some((_, place_ty)) => Err(type_error(assign.right.span(), &place_ty, &found, Some(&assign.right))),
                    None => Err(invalid(
                        assign.left.span(),
                        format!(
                            "cannot assign a `{found}` here; assign it to a variable of that struct or a field of that type"
                        ),
                    )),
                };
            }
            other => {
                return Err(invalid(
                    assign.right.span(),
                    format!("cannot assign a value of type `{}`; assign a scalar", other.ty()),
                ));
            }
        };
        self.store_place(&assign.left, operand, Some(&assign.right))?;
        Ok(Lowered::Unit)
    }

    /// `place op= value` (syn parses it as a binary expression with an assigning operator).
    pub(crate) fn lower_compound_assign(&mut self, expr: &syn::ExprBinary) -> Result<Lowered> {
        use syn::BinOp::*;
        if let Some((first, Ty::Struct(ty))) = self.struct_place(&expr.left)? {
            return self.lower_overloaded_assign(expr, first, &ty);
        }
        let op = match expr.op {
            AddAssign(_) => syn::BinOp::Add(Default::default()),
            SubAssign(_) => syn::BinOp::Sub(Default::default()),
            MulAssign(_) => syn::BinOp::Mul(Default::default()),
            DivAssign(_) => syn::BinOp::Div(Default::default()),
            RemAssign(_) => syn::BinOp::Rem(Default::default()),
            _ => return self.lower_bit_assign(expr),
        };
        let expect = self.place_type(&expr.left);
        // Rust evaluates the right operand of a compound assignment on primitives first.
        let rhs = match self.lower_expr(&expr.right, expect.as_ref())? {
            Lowered::Value(op) if op.ty.is_scalar() => op,
            Lowered::Never => return Ok(Lowered::Never),
            other => {
                return Err(invalid(
                    expr.right.span(),
                    format!("cannot use `{}` in a compound assignment; use a number", other.ty()),
                ));
            }
        };
        let place = self.resolve_place(&expr.left)?;
        let current = self.read_place(&place, expr.left.span())?;
        if !current.ty.is_scalar() {
            return Err(invalid(
                expr.left.span(),
                format!("cannot update a value of type `{}` in place; update a number", current.ty),
            ));
        }
        let ty = match (&current.ty, &rhs.ty) {
            (a, b) if b.fits(a) && a.is_scalar() => {
                if let Ty::Int(k) = a {
                    Ty::Int(k.unify(*other_kind(b)).unwrap_or(*k))
                } else {
                    a.clone()
                }
            }
            (a, _) => return Err(type_error(expr.right.span(), a, &rhs.ty, Some(&expr.right))),
        };
        let opcode = arith_opcode(&op, &ty, expr.op.span())?;
        let value = self.ssa.op(opcode, &[current.value, rhs.value]);
        self.write_place(&place, Operand { value, ty }, expr.left.span(), None)?;
        Ok(Lowered::Unit)
    }

    /// `place &= value` (`|=`, `^=` on integers or `bool`s), `place <<= k`, `place >>= k`.
    fn lower_bit_assign(&mut self, expr: &syn::ExprBinary) -> Result<Lowered> {
        use syn::BinOp::*;
        let shift = matches!(expr.op, ShlAssign(_) | ShrAssign(_));
        let expect = self.place_type(&expr.left);
        let rhs = self.scalar(&expr.right, if shift { None } else { expect.as_ref() })?;
        let place = self.resolve_place(&expr.left)?;
        let current = self.read_place(&place, expr.left.span())?;
        let value = match (&current.ty, &rhs.ty) {
            (Ty::Int(kind), Ty::Int(_)) if shift || rhs.ty.fits(&current.ty) => {
                self.int_bit_op(&expr.op, *kind, current.value, rhs.value)
            }
            (Ty::Bool, Ty::Bool) if !shift => match expr.op {
                BitAndAssign(_) => self.ssa.op(jitdiff_ir::Opcode::And, &[current.value, rhs.value]),
                BitOrAssign(_) => self.ssa.op(jitdiff_ir::Opcode::Or, &[current.value, rhs.value]),
                _ => {
                    let not_rhs = self.ssa.op(jitdiff_ir::Opcode::Not, &[rhs.value]);
                    self.ssa.select(current.value, not_rhs, rhs.value)
                }
            },
            (a, _) => return Err(type_error(expr.right.span(), a, &rhs.ty, Some(&expr.right))),
        };
        self.write_place(&place, Operand { value, ty: current.ty }, expr.left.span(), None)?;
        Ok(Lowered::Unit)
    }

    /// The type of a place, when it can be known before its value is lowered (so that literals
    /// on the right take it).
    fn place_type(&self, place: &syn::Expr) -> Option<Ty> {
        self.place_type_within(place, 8)
    }

    fn place_type_within(&self, place: &syn::Expr, depth: usize) -> Option<Ty> {
        let depth = depth.checked_sub(1)?;
        match place {
            syn::Expr::Path(p) => {
                let ident = p.path.get_ident()?;
                let slot = self.scopes.slot(self.scopes.lookup(&crate::types::name_of(ident))?);
                (slot.ty != Ty::Never).then(|| slot.ty.clone())
            }
            syn::Expr::Index(_) => Some(Ty::F64),
            syn::Expr::Field(_) => self.struct_place(place).ok().flatten().map(|(_, ty)| ty),
            syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => self.place_type_within(&u.expr, depth),
            syn::Expr::Paren(p) => self.place_type_within(&p.expr, depth),
            _ => None,
        }
    }

    /// Write `value` to `place`.
    fn store_place(&mut self, place: &syn::Expr, value: Operand, rhs: Option<&syn::Expr>) -> Result<()> {
        let resolved = self.resolve_place(place)?;
        self.write_place(&resolved, value, place.span(), rhs)
    }

    /// Which variable or element `place` denotes; an index expression is evaluated here, once.
    fn resolve_place(&mut self, place: &syn::Expr) -> Result<Place> {
        match place {
            syn::Expr::Paren(p) => self.resolve_place(&p.expr),
            syn::Expr::Path(p) if p.path.get_ident().is_some() && p.qself.is_none() => {
                let name = p.path.get_ident().map(crate::types::name_of).unwrap_or_default();
                match self.scopes.lookup(&name) {
                    Some(slot) => Ok(Place::Slot(slot)),
                    None => Err(FrontError::new(
                        place.span(),
                        FrontErrorKind::Unknown {
                            what: "variable".into(),
                            name,
                            instead: "declare it first with `let mut`".into(),
                        },
                    )),
                }
            }
            syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => {
                let slot = match &*u.expr {
                    syn::Expr::Path(p) => {
                        p.path.get_ident().and_then(|i| self.scopes.lookup(&crate::types::name_of(i)))
                    }
                    _ => None,
                };
                match slot {
                    Some(slot) if matches!(self.scopes.slot(slot).kind, SlotKind::Element { .. }) => {
                        Ok(Place::Slot(slot))
                    }
                    _ => Err(unsupported(
                        place.span(),
                        "writes through references other than `iter_mut` elements",
                        "index the slice: `x[i] = ...`",
                    )),
                }
            }
            syn::Expr::Index(index) => {
                let (slice, i) = self.lower_element(index)?;
                if slice.ty != (Ty::Slice { mutable: true }) {
                    if let Some(e) = self.constant_array_write(&index.expr) {
                        return Err(e);
                    }
                    return Err(invalid(
                        index.expr.span(),
                        "cannot write to an element of a read-only slice; take the parameter as `&mut [f64]` (or declare the local array `let mut`)",
                    ));
                }
                Ok(Place::Element { slice: slice.value, index: i.value, pos: self.ssa.pos })
            }
            syn::Expr::Field(_) => match self.struct_place(place)? {
                Some((slot, ty)) if ty.is_scalar() => Ok(Place::Slot(slot)),
                Some(_) => Err(invalid(
                    place.span(),
                    "this field is a struct; assign a whole struct to it (`s.inner = Inner { ... }`) or assign its fields",
                )),
                None => Err(unsupported(
                    place.span(),
                    "assignments to tuple fields",
                    "destructure the tuple into variables with `let (mut a, mut b) = ...`",
                )),
            },
            other => Err(invalid(
                other.span(),
                "cannot assign to this expression; assign to a variable, `slice[index]` or a tuple of those",
            )),
        }
    }

    /// The current value of a place (for compound assignment).
    fn read_place(&mut self, place: &Place, span: Span) -> Result<Operand> {
        match *place {
            Place::Slot(slot) => self.read_slot(slot, span),
            Place::Element { slice, index, pos } => {
                self.ssa.pos = pos;
                Ok(Operand { value: self.ssa.op(jitdiff_ir::Opcode::Load, &[slice, index]), ty: Ty::F64 })
            }
        }
    }

    fn write_place(&mut self, place: &Place, value: Operand, span: Span, rhs: Option<&syn::Expr>) -> Result<()> {
        match *place {
            Place::Slot(slot) => self.assign_slot(slot, value, span, rhs),
            Place::Element { slice, index, pos } => {
                if !value.ty.fits(&Ty::F64) {
                    return Err(type_error(rhs.map_or(span, |e| e.span()), &Ty::F64, &value.ty, rhs));
                }
                self.ssa.pos = pos;
                self.ssa.store(slice, index, value.value);
                Ok(())
            }
        }
    }

    pub(crate) fn assign_slot(
        &mut self,
        index: usize,
        value: Operand,
        span: Span,
        rhs: Option<&syn::Expr>,
    ) -> Result<()> {
        let slot = self.scopes.slot(index).clone();
        // A closure lowered inline assigns the enclosing function's variable itself, as an
        // `FnMut` does; a `move` closure would assign its own copy, kept between its calls.
        if self.closure_moves && self.closure_floor.is_some_and(|floor| index < floor) {
            return Err(unsupported(
                span,
                "`move` closures that assign a captured variable",
                "drop `move` (the closure then updates the variable itself), or use a `for` loop",
            ));
        }
        if let SlotKind::Element { slice, index: i } = slot.kind {
            if !value.ty.fits(&Ty::F64) {
                return Err(type_error(rhs.map_or(span, |e| e.span()), &Ty::F64, &value.ty, rhs));
            }
            self.ssa.store(slice, i, value.value);
            return Ok(());
        }
        if slot.kind == SlotKind::OwnedArray && matches!(value.ty, Ty::Slice { .. }) {
            if !slot.mutable {
                return Err(FrontError::new(span, FrontErrorKind::Immutable { name: slot.name.clone() }));
            }
            return self.copy_into_owned_array(&slot.name, value, span);
        }
        if matches!(slot.ty, Ty::Slice { .. }) {
            return Err(unsupported(
                span,
                "assignments to slice variables",
                "bind each slice to its own name, or assign its elements (`x[i] = ...`)",
            ));
        }
        if !slot.mutable && slot.state.maybe_init {
            // A struct's field slot (`s.x`) is declared `mut` with its variable (`s`).
            let variable = slot.name.split('.').next().unwrap_or(&slot.name).to_string();
            return Err(FrontError::new(span, FrontErrorKind::Immutable { name: variable }));
        }
        let ty = if slot.ty == Ty::Never {
            value.ty.clone()
        } else {
            match value.ty.unify(&slot.ty).filter(|_| value.ty.fits(&slot.ty)) {
                Some(t) => t,
                None => return Err(type_error(rhs.map_or(span, |e| e.span()), &slot.ty, &value.ty, rhs)),
            }
        };
        if !ty.is_scalar() {
            return Err(invalid(span, format!("cannot assign a value of type `{ty}` to a variable; assign a number")));
        }
        self.ssa.name_value(value.value, &slot.name);
        let slot = self.scopes.slot_mut(index);
        if !slot.mutable {
            slot.assigned_at = Some(span);
        }
        slot.ty = ty;
        slot.state.value = Some(value.value);
        slot.state.maybe_init = true;
        Ok(())
    }
}

/// A place assigned to: a variable (or `iter_mut` element binding) or `slice[index]`.
enum Place {
    Slot(usize),
    /// `pos`: where `slice[index]` is written, for the store emitted after the right side.
    Element {
        slice: jitdiff_ir::Value,
        index: jitdiff_ir::Value,
        pos: jitdiff_ir::Pos,
    },
}

fn other_kind(ty: &Ty) -> &crate::types::IntKind {
    match ty {
        Ty::Int(k) => k,
        _ => &crate::types::IntKind::Literal,
    }
}

/// The name and mutability a simple binding pattern (`x`, `mut x`) introduces.
pub(crate) fn binding(pat: &syn::Pat) -> Result<(String, bool)> {
    match pat {
        syn::Pat::Ident(p) if p.subpat.is_none() => {
            if p.by_ref.is_some() {
                return Err(unsupported(p.span(), "`ref` bindings", "bind the value: `let x = ...`"));
            }
            Ok((crate::types::name_of(&p.ident), p.mutability.is_some()))
        }
        syn::Pat::Wild(_) => Ok(("_".into(), false)),
        syn::Pat::Type(t) => Err(unsupported(
            t.span(),
            "type annotations inside patterns",
            "annotate the whole pattern: `let (a, b): (f64, f64) = ...`",
        )),
        other => Err(unsupported(other.span(), "nested patterns", "bind plain names (`x` or `mut x`) or `_`")),
    }
}

fn item_in_body(item: &syn::Item) -> FrontError {
    unsupported(
        item.span(),
        "items inside function bodies (`fn`, `const`, `use`, ...)",
        "move them to the top level of the source",
    )
}

/// Is `ty` `&[f64]` or `&mut [f64]`?
fn is_slice_reference(ty: &syn::Type) -> bool {
    match ty {
        syn::Type::Paren(p) => is_slice_reference(&p.elem),
        syn::Type::Reference(r) => {
            matches!(&*r.elem, syn::Type::Slice(s) if matches!(&*s.elem, syn::Type::Path(p) if p.path.is_ident("f64")))
        }
        _ => false,
    }
}
