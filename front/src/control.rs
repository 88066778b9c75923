//! `if`/`else` (statement and expression), `while`, `loop`, `break` (with a value from `loop`,
//! with labels), `continue` and `return`. `for` loops are in `iter.rs`.

use crate::error::{Result, invalid, unsupported};
use crate::expr::type_error;
use crate::lower::{LoopCtx, Lowered, Lowerer, Operand};
use crate::types::Ty;
use jitdiff_ir::Type;
use proc_macro2::Span;
use syn::spanned::Spanned;

impl Lowerer<'_> {
    pub(crate) fn lower_if(&mut self, e: &syn::ExprIf, expect: Option<&Ty>) -> Result<Lowered> {
        if let syn::Expr::Let(l) = &*e.cond {
            return self.lower_if_let(e, l, expect);
        }
        let cond = self.scalar(&e.cond, Some(&Ty::Bool))?;
        if cond.ty != Ty::Bool && cond.ty != Ty::Never {
            return Err(type_error(e.cond.span(), &Ty::Bool, &cond.ty, Some(&e.cond)));
        }
        let then_block = self.ssa.new_block("then");
        let else_block = self.ssa.new_block("else");
        self.ssa.branch(cond.value, then_block, else_block);
        let reachable = self.ssa.reachable;
        let before = self.scopes.snapshot();
        let mut join = self.new_join();

        self.ssa.switch_to(then_block, reachable);
        let then_value = self.lower_block(&e.then_branch, expect)?;
        check_branch_value(&then_value, || e.then_branch.span())?;
        let then_ty = then_value.ty();
        self.edge_to(&mut join, then_value.values());

        self.scopes.restore(&before);
        self.ssa.switch_to(else_block, reachable);
        let else_expr = e.else_branch.as_ref().map(|(_, x)| &**x);
        let else_span = || else_expr.map_or_else(|| e.span(), |x| x.span());
        let else_value = match else_expr {
            Some(else_expr) => {
                let expect_else = if then_ty == Ty::Never { expect.cloned() } else { Some(then_ty.clone()) };
                self.lower_expr(else_expr, expect_else.as_ref())?
            }
            None => Lowered::Unit,
        };
        check_branch_value(&else_value, else_span)?;
        let ty = match then_ty.unify(&else_value.ty()) {
            Some(ty) => ty,
            None if e.else_branch.is_none() => {
                return Err(invalid(
                    e.then_branch.span(),
                    format!(
                        "an `if` without `else` has type `()`, but this branch gives `{then_ty}`; add an `else` branch or end the branch with `;`"
                    ),
                ));
            }
            None => return Err(type_error(else_span(), &then_ty, &else_value.ty(), else_expr)),
        };
        self.edge_to(&mut join, else_value.values());
        let results = self.finish_join(join, "endif", &value_types(&ty));
        Ok(assemble(&ty, &results))
    }

    pub(crate) fn lower_while(&mut self, w: &syn::ExprWhile) -> Result<Lowered> {
        let label = w.label.as_ref().map(|l| crate::types::name_of(&l.name.ident));
        let header = self.open_header("while_head", &[]);
        let slots = self.scopes.len();
        let break_join = self.new_join();
        let continue_join = self.new_join();
        self.loops.push(LoopCtx { label, continue_join, break_join, break_ty: None, allows_value: false });
        let body = self.ssa.new_block("while_body");
        let exit = self.ssa.new_block("while_exit");
        let at_head = self.scopes.snapshot();
        let result = (|| -> Result<()> {
            let cond = self.scalar(&w.cond, Some(&Ty::Bool))?;
            if cond.ty != Ty::Bool && cond.ty != Ty::Never {
                return Err(type_error(w.cond.span(), &Ty::Bool, &cond.ty, Some(&w.cond)));
            }
            let reachable = self.ssa.reachable;
            self.ssa.branch(cond.value, body, exit);
            let after_cond = self.scopes.snapshot();
            self.ssa.switch_to(exit, reachable);
            self.edge_to_break(None);
            self.scopes.restore(&after_cond);
            self.ssa.switch_to(body, reachable);
            self.lower_block(&w.body, Some(&Ty::Unit))?;
            self.edge_to_continue();
            Ok(())
        })();
        let ctx = self.pop_loop();
        result?;
        self.scopes.truncate(slots);
        self.scopes.restore(&at_head);
        self.close_loop(header, ctx, &[])?;
        Ok(Lowered::Unit)
    }

    pub(crate) fn lower_loop(&mut self, l: &syn::ExprLoop, _expect: Option<&Ty>) -> Result<Lowered> {
        let label = l.label.as_ref().map(|l| crate::types::name_of(&l.name.ident));
        let header = self.open_header("loop_head", &[]);
        let slots = self.scopes.len();
        let at_head = self.scopes.snapshot();
        let break_join = self.new_join();
        let continue_join = self.new_join();
        self.loops.push(LoopCtx { label, continue_join, break_join, break_ty: None, allows_value: true });
        let result = self.lower_block(&l.body, Some(&Ty::Unit));
        if result.is_ok() {
            self.edge_to_continue();
        }
        let ctx = self.pop_loop();
        result?;
        self.scopes.truncate(slots);
        self.scopes.restore(&at_head);
        let ty = ctx.break_ty.clone().unwrap_or(if ctx.break_join.has_edges() { Ty::Unit } else { Ty::Never });
        let results = self.close_loop(header, ctx, &value_types(&ty))?;
        if ty == Ty::Never {
            return Ok(Lowered::Never);
        }
        Ok(assemble(&ty, &results))
    }

    fn pop_loop(&mut self) -> LoopCtx {
        match self.loops.pop() {
            Some(ctx) => ctx,
            // Pushed by the caller just before; an empty context keeps this total.
            None => LoopCtx {
                label: None,
                continue_join: self.new_join(),
                break_join: self.new_join(),
                break_ty: None,
                allows_value: false,
            },
        }
    }

    /// Finish a loop: the `continue` target jumps back to the header (passing `hidden` header
    /// values computed there by `latch`), and lowering continues after the loop, where `break`s
    /// arrive. Returns the break values.
    pub(crate) fn close_loop(
        &mut self,
        header: crate::join::Header,
        ctx: LoopCtx,
        break_types: &[Type],
    ) -> Result<Vec<Value>> {
        self.close_loop_with(header, ctx, break_types, |_, _| vec![])
    }

    /// [`close_loop`](Self::close_loop) where the latch computes the next hidden header values
    /// (a `for` loop's counter step).
    pub(crate) fn close_loop_with(
        &mut self,
        header: crate::join::Header,
        ctx: LoopCtx,
        break_types: &[Type],
        latch: impl FnOnce(&mut Self, &crate::join::Header) -> Vec<Value>,
    ) -> Result<Vec<Value>> {
        let before = self.scopes.snapshot();
        self.finish_join(ctx.continue_join, "latch", &[]);
        // An immutable variable uninitialised at the header but (maybe) initialised on a back
        // edge was assigned in the loop, and would be assigned again on the next iteration.
        for (slot, at_head) in self.scopes.slots().iter().zip(&before) {
            if !slot.mutable && slot.state.maybe_init && !at_head.maybe_init && self.ssa.reachable {
                let at = slot.assigned_at.unwrap_or_else(proc_macro2::Span::call_site);
                return Err(crate::error::FrontError::new(
                    at,
                    crate::error::FrontErrorKind::Immutable { name: slot.name.clone() },
                ));
            }
        }
        let hidden = latch(self, &header);
        self.jump_back(&header, &hidden);
        self.scopes.restore(&before);
        Ok(self.finish_join(ctx.break_join, "loop_exit", break_types))
    }

    fn edge_to_continue(&mut self) {
        if let Some(mut ctx) = self.loops.pop() {
            self.edge_to(&mut ctx.continue_join, vec![]);
            self.loops.push(ctx);
        }
    }

    fn edge_to_break(&mut self, values: Option<Vec<Value>>) {
        if let Some(mut ctx) = self.loops.pop() {
            self.edge_to(&mut ctx.break_join, values.unwrap_or_default());
            self.loops.push(ctx);
        }
    }

    /// The loop a `break`/`continue` refers to (innermost, or by label).
    fn target_loop(&self, label: Option<&syn::Lifetime>, span: Span, what: &str) -> Result<usize> {
        if self.closure_floor.is_some() && self.loops.is_empty() {
            return Err(unsupported(span, format!("`{what}` expressions inside closures"), "use a `for` loop"));
        }
        match label {
            None => self.loops.len().checked_sub(1).ok_or_else(|| {
                invalid(span, format!("`{what}` outside of a loop; use it inside `loop`, `while` or `for`"))
            }),
            Some(l) => {
                let name = crate::types::name_of(&l.ident);
                self.loops.iter().rposition(|c| c.label.as_deref() == Some(&name)).ok_or_else(|| {
                    invalid(
                        span,
                        format!("no enclosing loop is labelled `'{name}`; label the loop `'{name}: loop {{ ... }}`"),
                    )
                })
            }
        }
    }

    pub(crate) fn lower_break(&mut self, b: &syn::ExprBreak) -> Result<Lowered> {
        let index = self.target_loop(b.label.as_ref(), b.span(), "break")?;
        let values = match &b.expr {
            None => None,
            Some(expr) => {
                if !self.loops[index].allows_value {
                    return Err(invalid(
                        expr.span(),
                        "`break` with a value is only allowed in `loop`; assign the value to a variable declared before the loop",
                    ));
                }
                let expect = self.loops[index].break_ty.clone();
                let value = self.lower_expr(expr, expect.as_ref())?;
                if matches!(value, Lowered::Never) {
                    return Ok(Lowered::Never);
                }
                check_branch_value(&value, || expr.span())?;
                let ty = value.ty();
                let merged = match &self.loops[index].break_ty {
                    None => Some(ty.clone()),
                    Some(previous) => previous.unify(&ty),
                };
                match merged {
                    Some(t) => self.loops[index].break_ty = Some(t),
                    None => {
                        let previous = self.loops[index].break_ty.clone().unwrap_or(Ty::Unit);
                        return Err(type_error(expr.span(), &previous, &ty, Some(expr)));
                    }
                }
                Some(value.values())
            }
        };
        if values.is_none() && self.loops[index].break_ty.as_ref().is_some_and(|t| *t != Ty::Unit) {
            let ty = self.loops[index].break_ty.clone().unwrap_or(Ty::Unit);
            return Err(type_error(b.span(), &ty, &Ty::Unit, None));
        }
        if values.is_none() && self.loops[index].allows_value {
            self.loops[index].break_ty.get_or_insert(Ty::Unit);
        }
        let placeholder = self.new_join();
        let mut join = std::mem::replace(&mut self.loops[index].break_join, placeholder);
        self.edge_to(&mut join, values.unwrap_or_default());
        self.loops[index].break_join = join;
        self.ssa.continue_dead();
        Ok(Lowered::Never)
    }

    pub(crate) fn lower_continue(&mut self, c: &syn::ExprContinue) -> Result<Lowered> {
        let index = self.target_loop(c.label.as_ref(), c.span(), "continue")?;
        let placeholder = self.new_join();
        let mut join = std::mem::replace(&mut self.loops[index].continue_join, placeholder);
        self.edge_to(&mut join, vec![]);
        self.loops[index].continue_join = join;
        self.ssa.continue_dead();
        Ok(Lowered::Never)
    }

    pub(crate) fn lower_return(&mut self, r: &syn::ExprReturn) -> Result<Lowered> {
        if self.closure_floor.is_some() {
            return Err(unsupported(r.span(), "`return` expressions inside closures", "use a `for` loop"));
        }
        let ret = self.ret.clone();
        let value = match &r.expr {
            Some(expr) => self.lower_expr(expr, Some(&ret))?,
            None => Lowered::Unit,
        };
        let at = r.expr.as_ref().map_or(r.span(), |e| e.span());
        self.emit_return(value, at)?;
        self.ssa.continue_dead();
        Ok(Lowered::Never)
    }
}

use jitdiff_ir::Value;

/// Branch results are scalars or tuples of scalars (or nothing).
fn check_branch_value(value: &Lowered, span: impl FnOnce() -> Span) -> Result<()> {
    match value {
        Lowered::Struct(ty, _) if ty.holds_slices() => Err(unsupported(
            span(),
            "structs holding slices chosen by `if` or `break`",
            "branch around the code that uses the struct",
        )),
        Lowered::Value(op) if matches!(op.ty, Ty::Slice { .. }) => Err(unsupported(
            span(),
            "slices chosen by `if` or `break`",
            "branch around the code that uses the slice, or pass both slices and a flag",
        )),
        _ => Ok(()),
    }
}

/// The IR types of a branch result of type `ty`.
pub(crate) fn value_types(ty: &Ty) -> Vec<Type> {
    match ty {
        Ty::Tuple(items) => items.iter().filter_map(Ty::ir).collect(),
        other => other.ir_parts(),
    }
}

/// The value of type `ty` made of `values`.
pub(crate) fn assemble(ty: &Ty, values: &[Value]) -> Lowered {
    match ty {
        Ty::Unit => Lowered::Unit,
        Ty::Never => Lowered::Never,
        Ty::Tuple(items) => {
            Lowered::Tuple(items.iter().zip(values).map(|(t, &value)| Operand { value, ty: t.clone() }).collect())
        }
        Ty::Struct(s) => Lowered::Struct(
            s.clone(),
            s.leaves().into_iter().zip(values).map(|(ty, &value)| Operand { value, ty }).collect(),
        ),
        other => match values.first() {
            Some(&value) => Lowered::Value(Operand { value, ty: other.clone() }),
            None => Lowered::Unit,
        },
    }
}
