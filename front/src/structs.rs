//! Structs with named fields (or tuple structs) of numbers, `bool`s, `f64` slices and other such
//! structs. A struct value is its scalar fields, flattened in declaration order (nested structs
//! depth first): a variable of a struct type is one slot per scalar field (after a marker slot
//! that carries the type), a parameter or result one IR parameter or result per scalar field, and
//! a struct literal, a field access and an assignment to a field are plain scalar operations on
//! those. Nothing of a struct reaches the IR, so derivatives see ordinary scalar code.
//!
//! ```
//! let src = "struct State { x: f64, v: f64 }
//! fn step(s: State, h: f64) -> State { State { x: s.x + h * s.v, v: s.v - h * s.x } }
//! fn run(x0: f64, n: usize) -> f64 {
//!     let mut s = State { x: x0, v: 0.0 };
//!     for _ in 0..n { s = step(s, 0.1); }
//!     s.x
//! }";
//! let module = jitdiff_front::lower_source(src).unwrap();
//! assert_eq!(module.func_by_name("step").unwrap().returns.len(), 2);
//! ```

use crate::error::{FrontError, Result, invalid, unsupported};
use crate::lower::{Lowered, Lowerer, Operand};
use crate::scope::{Slot, SlotKind, SlotState};
use crate::types::{Ty, TypePlace, parse_type};
use jitdiff_ir::Value;
use proc_macro2::Span;
use rustc_hash::FxHashMap as HashMap;
use std::cell::RefCell;
use std::rc::Rc;
use syn::spanned::Spanned;

/// A struct of the source: its name and its fields in declaration order.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct StructTy {
    pub name: String,
    /// In declaration order; a tuple struct's are named `0`, `1`, ...
    pub fields: Vec<(String, Ty)>,
    /// A tuple struct (`struct V(f64, f64);`): built as `V(a, b)`, read as `v.0`.
    pub tuple: bool,
}

impl StructTy {
    /// The types of the scalar fields, flattened.
    pub(crate) fn leaves(&self) -> Vec<Ty> {
        let mut out = vec![];
        for (_, ty) in &self.fields {
            match ty {
                Ty::Struct(inner) => out.extend(inner.leaves()),
                other => out.push(other.clone()),
            }
        }
        out
    }

    /// Does it hold slices (directly or in a nested struct)?
    pub(crate) fn holds_slices(&self) -> bool {
        self.leaves().iter().any(|t| matches!(t, Ty::Slice { .. }))
    }

    /// The positions among the leaves of those that are not slices: what a `&mut self`
    /// method returns and writes back (a slice field never changes).
    pub(crate) fn changeable(&self) -> Vec<usize> {
        self.leaves().iter().enumerate().filter(|(_, t)| !matches!(t, Ty::Slice { .. })).map(|(k, _)| k).collect()
    }

    /// The paths of the scalar fields (`x`, `inner.a`), flattened as [`StructTy::leaves`].
    pub(crate) fn leaf_names(&self) -> Vec<String> {
        let mut out = vec![];
        for (name, ty) in &self.fields {
            match ty {
                Ty::Struct(inner) => out.extend(inner.leaf_names().into_iter().map(|n| format!("{name}.{n}"))),
                _ => out.push(name.clone()),
            }
        }
        out
    }

    /// Field `name`: the position of its first scalar among the leaves, and its type.
    pub(crate) fn field(&self, name: &str) -> Option<(usize, Ty)> {
        let mut offset = 0;
        for (field, ty) in &self.fields {
            if field == name {
                return Some((offset, ty.clone()));
            }
            offset += leaf_count(ty);
        }
        None
    }
}

/// The IR types a `&mut self` method of a struct of type `ty` returns after its own results:
/// its fields that are not slices.
pub(crate) fn receiver_parts(ty: Option<&Ty>) -> Vec<jitdiff_ir::Type> {
    match ty {
        Some(Ty::Struct(s)) => {
            let leaves = s.leaves();
            s.changeable().into_iter().filter_map(|k| leaves[k].ir()).collect()
        }
        _ => vec![],
    }
}

/// How many scalars a value of type `ty` is.
fn leaf_count(ty: &Ty) -> usize {
    match ty {
        Ty::Struct(s) => s.leaves().len(),
        _ => 1,
    }
}

thread_local! {
    /// The structs of the source being lowered (types are parsed without a context at hand).
    static STRUCTS: RefCell<HashMap<String, Rc<StructTy>>> = RefCell::new(HashMap::default());
}

/// The struct called `name` in the source being lowered.
pub(crate) fn lookup(name: &str) -> Option<Rc<StructTy>> {
    STRUCTS.with(|s| s.borrow().get(name).cloned())
}

/// The structs of a source, visible to [`lookup`] while this lives (lowering may nest: a
/// derivative's source inside a procedural macro, so the previous set comes back on drop).
pub(crate) struct Definitions {
    previous: HashMap<String, Rc<StructTy>>,
}

impl Drop for Definitions {
    fn drop(&mut self) {
        let previous = std::mem::take(&mut self.previous);
        STRUCTS.with(|s| *s.borrow_mut() = previous);
    }
}

/// Run `f` with `Self` naming the struct `ty` (inside an `impl` block), if given.
pub(crate) fn with_self<T>(ty: Option<&str>, f: impl FnOnce() -> T) -> T {
    let Some(st) = ty.and_then(lookup) else { return f() };
    let previous = STRUCTS.with(|s| s.borrow_mut().insert("Self".into(), st));
    let out = f();
    STRUCTS.with(|s| match previous {
        Some(p) => s.borrow_mut().insert("Self".into(), p),
        None => s.borrow_mut().remove("Self"),
    });
    out
}

/// Define the structs among `items`.
pub(crate) fn define(items: &[syn::Item]) -> Result<Definitions> {
    let previous = STRUCTS.with(|s| std::mem::take(&mut *s.borrow_mut()));
    let guard = Definitions { previous };
    let written: HashMap<String, &syn::ItemStruct> = items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Struct(s) => Some((crate::types::name_of(&s.ident), s)),
            _ => None,
        })
        .collect();
    for item in items {
        if let syn::Item::Struct(s) = item {
            resolve(&written, s, &mut vec![])?;
        }
    }
    Ok(guard)
}

/// Define `item` (and first the structs its fields hold); `within` are the structs being
/// defined around it, to reject a struct that contains itself.
fn resolve(
    written: &HashMap<String, &syn::ItemStruct>,
    item: &syn::ItemStruct,
    within: &mut Vec<String>,
) -> Result<Rc<StructTy>> {
    let name = crate::types::name_of(&item.ident);
    if let Some(done) = lookup(&name) {
        return Ok(done);
    }
    if within.contains(&name) {
        return Err(invalid(
            item.ident.span(),
            format!("the struct `{name}` contains itself; it would be infinitely large"),
        ));
    }
    if !item.generics.params.iter().all(|p| matches!(p, syn::GenericParam::Lifetime(_))) {
        return Err(unsupported(item.generics.span(), "generic structs", "write the struct with `f64` fields"));
    }
    let (declared, tuple) = match &item.fields {
        syn::Fields::Named(named) => (&named.named, false),
        syn::Fields::Unnamed(unnamed) if !unnamed.unnamed.is_empty() => (&unnamed.unnamed, true),
        _ => {
            return Err(unsupported(
                item.span(),
                "unit structs (structs without fields)",
                "give the struct fields, or use constants",
            ));
        }
    };
    within.push(name.clone());
    let mut fields = vec![];
    for (k, field) in declared.iter().enumerate() {
        let field_name = field.ident.as_ref().map_or_else(|| k.to_string(), crate::types::name_of);
        let inner = match &field.ty {
            syn::Type::Path(p) if p.qself.is_none() => {
                p.path.get_ident().and_then(|i| written.get(&crate::types::name_of(i)).copied())
            }
            _ => None,
        };
        let ty = match inner {
            Some(inner) => Ty::Struct(resolve(written, inner, within)?),
            None => parse_type(&field.ty, TypePlace::Field)?,
        };
        if !(ty.is_scalar() || matches!(ty, Ty::Struct(_) | Ty::Slice { .. })) {
            return Err(unsupported(
                field.ty.span(),
                "struct fields other than numbers, `bool`, `&[f64]`, `&mut [f64]` and structs",
                "pass other data as parameters of their own",
            ));
        }
        if fields.iter().any(|(seen, _)| *seen == field_name) {
            return Err(invalid(
                field.span(),
                format!("field `{field_name}` is declared twice in `{name}`; rename one"),
            ));
        }
        fields.push((field_name, ty));
    }
    within.pop();
    let defined = Rc::new(StructTy { name: name.clone(), fields, tuple });
    STRUCTS.with(|s| s.borrow_mut().insert(name, defined.clone()));
    Ok(defined)
}

impl Lowerer<'_> {
    /// Declare variable `name` of struct type `ty` holding `values` (one per scalar field): a
    /// marker slot, then one slot per scalar field.
    pub(crate) fn declare_struct(&mut self, name: &str, ty: &Rc<StructTy>, mutable: bool, values: &[Value]) {
        self.scopes.declare(Slot {
            name: name.to_string(),
            ty: Ty::Struct(ty.clone()),
            kind: SlotKind::Struct,
            mutable,
            state: SlotState { value: None, maybe_init: true },
            assigned_at: None,
        });
        for ((leaf, leaf_ty), &value) in ty.leaf_names().iter().zip(ty.leaves()).zip(values) {
            self.declare(&format!("{name}.{leaf}"), leaf_ty, mutable, Some(value));
        }
    }

    /// Declare variable `name` holding the tuple `items`: a marker slot of the tuple's type, then
    /// one slot per element (`t.0`, `t.1`), as for a struct.
    pub(crate) fn declare_tuple(&mut self, name: &str, items: &[Operand], mutable: bool) {
        self.scopes.declare(Slot {
            name: name.to_string(),
            ty: Ty::Tuple(items.iter().map(|o| o.ty.clone()).collect()),
            kind: SlotKind::Struct,
            mutable,
            state: SlotState { value: None, maybe_init: true },
            assigned_at: None,
        });
        for (k, item) in items.iter().enumerate() {
            self.declare(&format!("{name}.{k}"), item.ty.clone(), mutable, Some(item.value));
        }
    }

    /// `let State { x, v: speed, inner: Inner { a, .. }, .. } = value;`: bind each field named
    /// (a nested struct pattern binds its fields in turn; `..` skips the rest).
    pub(crate) fn bind_struct_pattern(
        &mut self,
        pattern: &syn::PatStruct,
        ty: &StructTy,
        items: &[Operand],
    ) -> Result<()> {
        check_pattern_path(&pattern.path, ty)?;
        let mut seen = vec![];
        for field in &pattern.fields {
            let syn::Member::Named(ident) = &field.member else {
                return Err(invalid(field.member.span(), format!("`{}` has named fields", ty.name)));
            };
            let name = crate::types::name_of(ident);
            let Some((offset, field_ty)) = ty.field(&name) else {
                return Err(no_field(ty, &name, ident.span()));
            };
            seen.push(name);
            let count = leaf_count(&field_ty);
            self.bind_field(&field.pat, &field_ty, &items[offset..offset + count])?;
        }
        if pattern.rest.is_none()
            && let Some((missing, _)) = ty.fields.iter().find(|(f, _)| !seen.contains(f))
        {
            return Err(invalid(
                pattern.span(),
                format!(
                    "field `{missing}` of `{}` is not in the pattern; name it, or end the pattern with `..`",
                    ty.name
                ),
            ));
        }
        Ok(())
    }

    /// Bind `pat` to a field of type `ty` whose values are `parts`: a name, `_`, or a nested
    /// struct or tuple struct pattern.
    fn bind_field(&mut self, pat: &syn::Pat, ty: &Ty, parts: &[Operand]) -> Result<()> {
        match (pat, ty) {
            (syn::Pat::Struct(inner), Ty::Struct(inner_ty)) => self.bind_struct_pattern(inner, inner_ty, parts),
            (syn::Pat::TupleStruct(inner), Ty::Struct(inner_ty)) if inner_ty.tuple => {
                self.bind_tuple_struct_pattern(inner, inner_ty, parts)
            }
            (pat, _) => {
                let (binding, mutable) = crate::stmt::binding(pat)?;
                if binding == "_" {
                    return Ok(());
                }
                match ty {
                    Ty::Struct(inner_ty) => {
                        let values: Vec<Value> = parts.iter().map(|o| o.value).collect();
                        self.declare_struct(&binding, inner_ty, mutable, &values);
                    }
                    _ => {
                        self.declare(&binding, parts[0].ty.clone(), mutable, Some(parts[0].value));
                    }
                }
                Ok(())
            }
        }
    }

    /// `let V(a, _, mut c) = v;` or `let V(a, ..) = v;` of a tuple struct.
    pub(crate) fn bind_tuple_struct_pattern(
        &mut self,
        pattern: &syn::PatTupleStruct,
        ty: &StructTy,
        items: &[Operand],
    ) -> Result<()> {
        check_pattern_path(&pattern.path, ty)?;
        let rest = pattern.elems.iter().any(|p| matches!(p, syn::Pat::Rest(_)));
        let named: Vec<&syn::Pat> = pattern.elems.iter().take_while(|p| !matches!(p, syn::Pat::Rest(_))).collect();
        if named.len() > ty.fields.len() || (!rest && named.len() != ty.fields.len()) {
            return Err(invalid(
                pattern.span(),
                format!("`{}` has {} fields; name each (or end the pattern with `..`)", ty.name, ty.fields.len()),
            ));
        }
        let mut offset = 0;
        for (pat, (_, field_ty)) in named.into_iter().zip(&ty.fields) {
            let count = leaf_count(field_ty);
            self.bind_field(pat, field_ty, &items[offset..offset + count])?;
            offset += count;
        }
        Ok(())
    }

    /// The value of struct variable `slot` (its fields' slots follow it).
    pub(crate) fn read_struct(&mut self, slot: usize, span: Span) -> Result<Lowered> {
        let ty = match self.scopes.slot(slot).ty.clone() {
            Ty::Struct(ty) => ty,
            // A tuple variable: its elements' slots follow it too.
            Ty::Tuple(items) => {
                let mut values = vec![];
                for k in 0..items.len() {
                    values.push(self.read_slot(slot + 1 + k, span)?);
                }
                return Ok(Lowered::Tuple(values));
            }
            _ => return Err(invalid(span, "expected a struct variable here")),
        };
        let mut items = vec![];
        for k in 0..ty.leaves().len() {
            items.push(self.read_slot(slot + 1 + k, span)?);
        }
        Ok(Lowered::Struct(ty, items))
    }

    /// `Name { field: value, ... }`, the fields evaluated in the order written.
    pub(crate) fn lower_struct_literal(&mut self, literal: &syn::ExprStruct) -> Result<Lowered> {
        let name = crate::types::path_text(&literal.path);
        let Some(ty) = lookup(&name) else {
            return Err(unsupported(
                literal.path.span(),
                format!("`{name}`, which is not a struct of this source (enums, unions and structs from elsewhere)"),
                "define the struct in the same source, with named fields",
            ));
        };
        if let Some(rest) = &literal.rest {
            return Err(unsupported(rest.span(), "struct updates (`..base`)", "write every field"));
        }
        let mut slots: Vec<Option<Operand>> = vec![None; ty.leaves().len()];
        let mut seen: Vec<String> = vec![];
        for field in &literal.fields {
            let syn::Member::Named(ident) = &field.member else {
                return Err(invalid(field.member.span(), format!("`{name}` has named fields; write `field: value`")));
            };
            let field_name = crate::types::name_of(ident);
            let Some((offset, field_ty)) = ty.field(&field_name) else {
                return Err(no_field(&ty, &field_name, ident.span()));
            };
            if seen.contains(&field_name) {
                return Err(invalid(ident.span(), format!("field `{field_name}` is given twice")));
            }
            seen.push(field_name);
            let parts = match self.lower_expr(&field.expr, Some(&field_ty))? {
                Lowered::Never => return Ok(Lowered::Never),
                value => self.parts_of(value, &field_ty, &field.expr)?,
            };
            for (k, part) in parts.into_iter().enumerate() {
                slots[offset + k] = Some(part);
            }
        }
        if let Some((missing, _)) = ty.fields.iter().find(|(f, _)| !seen.contains(f)) {
            return Err(invalid(literal.span(), format!("field `{missing}` of `{name}` is missing; give every field")));
        }
        Ok(Lowered::Struct(ty, slots.into_iter().flatten().collect()))
    }

    /// `V(a, b)` of a tuple struct, the fields evaluated in order.
    pub(crate) fn lower_tuple_struct_literal(
        &mut self,
        ty: Rc<StructTy>,
        args: &[&syn::Expr],
        span: Span,
    ) -> Result<Lowered> {
        if args.len() != ty.fields.len() {
            return Err(invalid(
                span,
                format!(
                    "`{}` has {} fields, but {} values are given; give one per field",
                    ty.name,
                    ty.fields.len(),
                    args.len()
                ),
            ));
        }
        let mut items = vec![];
        for (arg, (_, field_ty)) in args.iter().zip(ty.fields.clone()) {
            match self.lower_expr(arg, Some(&field_ty))? {
                Lowered::Never => return Ok(Lowered::Never),
                value => items.extend(self.parts_of(value, &field_ty, arg)?),
            }
        }
        Ok(Lowered::Struct(ty, items))
    }

    /// The scalars of `value`, which must have type `ty` (a scalar or a struct).
    pub(crate) fn parts_of(&mut self, value: Lowered, ty: &Ty, expr: &syn::Expr) -> Result<Vec<Operand>> {
        match value {
            Lowered::Struct(found, items) if Ty::Struct(found.clone()) == *ty => Ok(items),
            Lowered::Value(op) if (ty.is_scalar() || matches!(ty, Ty::Slice { .. })) && op.ty.fits(ty) => {
                let ty = if matches!(op.ty, Ty::Int(crate::types::IntKind::Literal)) { ty.clone() } else { op.ty };
                Ok(vec![Operand { value: op.value, ty }])
            }
            other => Err(crate::expr::type_error(expr.span(), ty, &other.ty(), Some(expr))),
        }
    }

    /// `base.name` of a struct value.
    pub(crate) fn struct_field(
        &mut self,
        ty: &StructTy,
        items: Vec<Operand>,
        name: &str,
        span: Span,
    ) -> Result<Lowered> {
        let Some((offset, field_ty)) = ty.field(name) else {
            return Err(no_field(ty, name, span));
        };
        Ok(match field_ty {
            Ty::Struct(inner) => {
                let n = inner.leaves().len();
                Lowered::Struct(inner, items[offset..offset + n].to_vec())
            }
            _ => Lowered::Value(items[offset].clone()),
        })
    }

    /// The slots a struct place (`s`, `s.inner`) or a field of one (`s.x`) stands for: its first
    /// scalar slot and its type. `None` when `place` is not rooted at a struct variable.
    pub(crate) fn struct_place(&self, place: &syn::Expr) -> Result<Option<(usize, Ty)>> {
        match place {
            syn::Expr::Paren(p) => self.struct_place(&p.expr),
            // `*self = ...` in a `&mut self` method.
            syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => self.struct_place(&u.expr),
            syn::Expr::Path(p) if p.qself.is_none() => {
                let Some(slot) = p.path.get_ident().and_then(|i| self.scopes.lookup(&crate::types::name_of(i))) else {
                    return Ok(None);
                };
                let slot_ref = self.scopes.slot(slot);
                Ok((slot_ref.kind == SlotKind::Struct).then(|| (slot + 1, slot_ref.ty.clone())))
            }
            syn::Expr::Field(f) => {
                let ident = match &f.member {
                    syn::Member::Named(ident) => ident,
                    // `v.0` of a tuple struct variable.
                    syn::Member::Unnamed(index) if matches!(self.struct_place(&f.base)?, Some((_, Ty::Struct(ref s))) if s.tuple) =>
                    {
                        let Some((first, Ty::Struct(ty))) = self.struct_place(&f.base)? else { return Ok(None) };
                        let name = index.index.to_string();
                        return match ty.field(&name) {
                            Some((offset, field_ty)) => Ok(Some((first + offset, field_ty))),
                            None => Err(no_field(&ty, &name, index.span)),
                        };
                    }
                    // `t.0` of a tuple variable.
                    syn::Member::Unnamed(index) => {
                        let Some((first, Ty::Tuple(items))) = self.struct_place(&f.base)? else { return Ok(None) };
                        let k = index.index as usize;
                        return match items.get(k) {
                            Some(ty) => Ok(Some((first + k, ty.clone()))),
                            None => Err(invalid(
                                index.span,
                                format!("this tuple has {} elements, so `.{k}` does not exist", items.len()),
                            )),
                        };
                    }
                };
                let Some((first, Ty::Struct(ty))) = self.struct_place(&f.base)? else { return Ok(None) };
                let name = crate::types::name_of(ident);
                match ty.field(&name) {
                    Some((offset, field_ty)) => Ok(Some((first + offset, field_ty))),
                    None => Err(no_field(&ty, &name, ident.span())),
                }
            }
            _ => Ok(None),
        }
    }

    /// `place = value` for a struct-typed place (checked by the caller): every scalar slot.
    pub(crate) fn assign_struct(
        &mut self,
        first: usize,
        items: Vec<Operand>,
        span: Span,
        rhs: &syn::Expr,
    ) -> Result<()> {
        for (k, item) in items.into_iter().enumerate() {
            self.assign_slot(first + k, item, span, Some(rhs))?;
        }
        Ok(())
    }
}

/// A pattern's struct name must be the value's (or `Self`).
fn check_pattern_path(path: &syn::Path, ty: &StructTy) -> Result<()> {
    let written = crate::types::path_text(path);
    if written != ty.name && written != "Self" {
        return Err(invalid(path.span(), format!("this value is a `{}`, not a `{written}`", ty.name)));
    }
    Ok(())
}

/// The error for a field `name` that `ty` does not have.
fn no_field(ty: &StructTy, name: &str, span: Span) -> FrontError {
    let fields: Vec<String> = ty.fields.iter().map(|(f, _)| format!("`{f}`")).collect();
    invalid(span, format!("`{}` has no field `{name}`; its fields are {}", ty.name, fields.join(", ")))
}

/// The error for a struct used where a scalar or slice is needed.
pub(crate) fn struct_as_scalar(name: &str, span: Span) -> FrontError {
    invalid(span, format!("`{name}` is a struct; use one of its fields (`{name}.field`)"))
}
