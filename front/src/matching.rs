//! `match` on an integer or `bool`: arms with literal, constant and range patterns (`1`, `-2`,
//! `N`, `1..=5`, `..0`, `10..`), or-patterns, bindings (`n`, `n @ 1..=9`), `_` and guards. It
//! lowers to a chain of tests, each arm's body joining at the end, as an `if`/`else if` chain
//! would; the last arm must match everything (`_` or a binding without a guard, or both `true`
//! and `false`), since the front end does not prove integer patterns exhaustive.

use crate::control::{assemble, value_types};
use crate::error::{Result, invalid, unsupported};
use crate::expr::type_error;
use crate::lower::{Lowered, Lowerer, Operand};
use crate::types::Ty;
use jitdiff_ir::{CondCode, Opcode, Value};
use syn::spanned::Spanned;

/// The most alternatives one pattern may have (a bound on the recursion over or-patterns).
const MAX_ALTERNATIVES: usize = 256;

impl Lowerer<'_> {
    pub(crate) fn lower_match(&mut self, m: &syn::ExprMatch, expect: Option<&Ty>) -> Result<Lowered> {
        // `match option { Some(v) => a, None => b }` is `if let Some(v) = option { a } else { b }`.
        if let Some(rewritten) = option_match_as_if_let(m) {
            let syn::Expr::Let(l) = &*rewritten.cond else { return Err(invalid(m.span(), "a front-end bug")) };
            return self.lower_if_let(&rewritten, l, expect);
        }
        let scrutinee = self.scalar(&m.expr, None)?;
        if !matches!(scrutinee.ty, Ty::Int(_) | Ty::Bool | Ty::Never) {
            return Err(unsupported(
                m.expr.span(),
                format!("`match` on `{}` values", scrutinee.ty),
                "match on integers or `bool`, or use `if` / `else if` / `else` with comparisons",
            ));
        }
        check_exhaustive(m, &scrutinee.ty)?;
        let mut join = self.new_join();
        let mut ty: Option<Ty> = None;
        for arm in &m.arms {
            let before = self.scopes.snapshot();
            let test = self.pattern_test(&arm.pat, &scrutinee, MAX_ALTERNATIVES)?;
            let body = self.ssa.new_block("arm");
            let next = self.ssa.new_block("next_arm");
            let reachable = self.ssa.reachable;
            match test {
                Some(matches) => self.ssa.branch(matches, body, next),
                None => self.ssa.jump(body, vec![]),
            }
            self.ssa.switch_to(body, reachable);
            // A failed guard goes on with the next arm, from a second edge into `next`: a join
            // of its own, in case the guard changed variables.
            let mut next_join = self.new_join();
            self.scopes.push();
            self.bind_pattern(&arm.pat, &scrutinee)?;
            if let Some((_, guard)) = &arm.guard {
                let holds = self.scalar(guard, Some(&Ty::Bool))?;
                if holds.ty != Ty::Bool && holds.ty != Ty::Never {
                    return Err(type_error(guard.span(), &Ty::Bool, &holds.ty, Some(guard)));
                }
                let guarded = self.ssa.new_block("guarded");
                let failed = self.ssa.new_block("guard_failed");
                let reachable = self.ssa.reachable;
                self.ssa.branch(holds.value, guarded, failed);
                let after_guard = self.scopes.snapshot();
                self.ssa.switch_to(failed, reachable);
                self.edge_to(&mut next_join, vec![]);
                self.scopes.restore(&after_guard);
                self.ssa.switch_to(guarded, reachable);
            }
            let value = self.lower_expr(&arm.body, ty.as_ref().or(expect))?;
            if let Lowered::Value(op) = &value
                && matches!(op.ty, Ty::Slice { .. })
            {
                return Err(unsupported(
                    arm.body.span(),
                    "slices chosen by `match`",
                    "branch around the code that uses the slice",
                ));
            }
            let merged = match &ty {
                None => Some(value.ty()),
                Some(previous) => previous.unify(&value.ty()),
            };
            match merged {
                Some(t) => ty = Some(t),
                None => {
                    let previous = ty.clone().unwrap_or(Ty::Unit);
                    return Err(type_error(arm.body.span(), &previous, &value.ty(), Some(&arm.body)));
                }
            }
            self.scopes.pop();
            self.edge_to(&mut join, value.values());
            // The next arm starts where this one's pattern (or guard) failed.
            self.scopes.restore(&before);
            self.ssa.switch_to(next, reachable && test.is_some());
            self.edge_to(&mut next_join, vec![]);
            self.finish_join(next_join, "match_next", &[]);
        }
        // Every value matched some arm (checked above): what is left is dead.
        self.ssa.reachable = false;
        let ty = ty.unwrap_or(Ty::Never);
        let results = self.finish_join(join, "match_end", &value_types(&ty));
        Ok(assemble(&ty, &results))
    }

    /// Whether `pat` matches `scrutinee` (`None`: always).
    fn pattern_test(&mut self, pat: &syn::Pat, scrutinee: &Operand, depth: usize) -> Result<Option<Value>> {
        let Some(depth) = depth.checked_sub(1) else {
            return Err(unsupported(pat.span(), "patterns this large", "split the arm"));
        };
        match pat {
            syn::Pat::Wild(_) => Ok(None),
            syn::Pat::Paren(p) => self.pattern_test(&p.pat, scrutinee, depth),
            syn::Pat::Ident(p) if p.by_ref.is_none() => match &p.subpat {
                Some((_, sub)) => self.pattern_test(sub, scrutinee, depth),
                // A name that is a constant compares with it; any other name binds.
                None if self.ctx.consts.contains_key(&crate::types::name_of(&p.ident)) => {
                    let path =
                        syn::Expr::Path(syn::ExprPath { attrs: vec![], qself: None, path: p.ident.clone().into() });
                    Ok(Some(self.compare_with(&path, scrutinee, CondCode::Eq)?))
                }
                None => Ok(None),
            },
            syn::Pat::Lit(lit) => {
                let expr = syn::Expr::Lit(lit.clone());
                Ok(Some(self.compare_with(&expr, scrutinee, CondCode::Eq)?))
            }
            syn::Pat::Path(path) => {
                let expr = syn::Expr::Path(path.clone());
                Ok(Some(self.compare_with(&expr, scrutinee, CondCode::Eq)?))
            }
            syn::Pat::Range(range) => {
                let mut test: Option<Value> = None;
                if let Some(start) = &range.start {
                    test = Some(self.compare_with(start, scrutinee, CondCode::Le)?);
                }
                if let Some(end) = &range.end {
                    let cond =
                        if matches!(range.limits, syn::RangeLimits::Closed(_)) { CondCode::Ge } else { CondCode::Gt };
                    let below = self.compare_with(end, scrutinee, cond)?;
                    test = Some(match test {
                        Some(t) => self.ssa.op(Opcode::And, &[t, below]),
                        None => below,
                    });
                }
                Ok(test)
            }
            syn::Pat::Or(or) => {
                let mut any: Option<Value> = None;
                for case in &or.cases {
                    let Some(test) = self.pattern_test(case, scrutinee, depth)? else {
                        return Ok(None);
                    };
                    any = Some(match any {
                        Some(a) => self.ssa.op(Opcode::Or, &[a, test]),
                        None => test,
                    });
                }
                Ok(any)
            }
            other => Err(unsupported(
                other.span(),
                "patterns of this kind in `match`",
                "use literals, constants, ranges (`1..=5`), `|`, a name or `_`",
            )),
        }
    }

    /// `bound cond scrutinee` with `bound` (a literal, constant or path) of the scrutinee's type.
    fn compare_with(&mut self, bound: &syn::Expr, scrutinee: &Operand, cond: CondCode) -> Result<Value> {
        let expect = if scrutinee.ty == Ty::Never { Ty::Bool } else { scrutinee.ty.clone() };
        let value = self.scalar_of(bound, &expect)?;
        Ok(match expect {
            Ty::Bool => {
                // b == true is b; b == false is !b.
                let not_value = self.ssa.op(Opcode::Not, &[value.value]);
                self.ssa.select(scrutinee.value, value.value, not_value)
            }
            _ => self.ssa.icmp(cond, value.value, scrutinee.value),
        })
    }

    /// Bind the names a pattern introduces (`n`, `n @ 1..=9`) to the scrutinee.
    fn bind_pattern(&mut self, pat: &syn::Pat, scrutinee: &Operand) -> Result<()> {
        match pat {
            syn::Pat::Paren(p) => self.bind_pattern(&p.pat, scrutinee),
            syn::Pat::Ident(p) if !self.ctx.consts.contains_key(&crate::types::name_of(&p.ident)) => {
                let name = crate::types::name_of(&p.ident);
                self.declare(&name, scrutinee.ty.clone(), p.mutability.is_some(), Some(scrutinee.value));
                Ok(())
            }
            syn::Pat::Or(or) if or.cases.iter().any(|c| matches!(c, syn::Pat::Ident(_))) => {
                Err(unsupported(or.span(), "bindings inside or-patterns", "bind the whole pattern: `n @ (1 | 2)`"))
            }
            _ => Ok(()),
        }
    }
}

/// The last arm must match every value (Rust requires exhaustive matches; the front end does
/// not prove integer patterns cover everything, so it asks for a catch-all).
fn check_exhaustive(m: &syn::ExprMatch, ty: &Ty) -> Result<()> {
    let catch_all = |arm: &syn::Arm| {
        arm.guard.is_none()
            && match &arm.pat {
                syn::Pat::Wild(_) => true,
                syn::Pat::Ident(p) => {
                    p.subpat.is_none() && p.ident.to_string().starts_with(|c: char| c.is_lowercase() || c == '_')
                }
                _ => false,
            }
    };
    let bools_covered = *ty == Ty::Bool && {
        let covered = |v: bool| m.arms.iter().any(|arm| arm.guard.is_none() && pattern_mentions_bool(&arm.pat, v));
        covered(true) && covered(false)
    };
    if m.arms.last().is_some_and(catch_all) || bools_covered {
        return Ok(());
    }
    Err(invalid(m.span(), "this `match` may not cover every value; end it with a catch-all arm `_ => ...`"))
}

fn pattern_mentions_bool(pat: &syn::Pat, value: bool) -> bool {
    match pat {
        syn::Pat::Lit(syn::ExprLit { lit: syn::Lit::Bool(b), .. }) => b.value == value,
        syn::Pat::Or(or) => or.cases.iter().any(|c| pattern_mentions_bool(c, value)),
        syn::Pat::Paren(p) => pattern_mentions_bool(&p.pat, value),
        _ => false,
    }
}

/// `match e { Some(p) => a, None => b }` (either order; `_` for `None`) as
/// `if let Some(p) = e { a } else { b }`; `None` for any other `match`.
fn option_match_as_if_let(m: &syn::ExprMatch) -> Option<syn::ExprIf> {
    let [first, second] = &m.arms[..] else { return None };
    let is_some = |arm: &syn::Arm| {
        arm.guard.is_none()
            && matches!(&arm.pat, syn::Pat::TupleStruct(t) if t.path.is_ident("Some") && t.elems.len() == 1)
    };
    let is_none = |arm: &syn::Arm| {
        arm.guard.is_none()
            && match &arm.pat {
                syn::Pat::Ident(p) => p.ident == "None" && p.subpat.is_none(),
                syn::Pat::Path(p) => p.path.is_ident("None"),
                syn::Pat::Wild(_) => true,
                _ => false,
            }
    };
    let (some, none) = match (is_some(first), is_some(second)) {
        (true, false) if is_none(second) => (first, second),
        (false, true) if is_none(first) && !matches!(first.pat, syn::Pat::Wild(_)) => (second, first),
        _ => return None,
    };
    let span = m.match_token.span;
    let (pat, expr) = (&some.pat, &m.expr);
    let (then_body, else_body) = (&some.body, &none.body);
    Some(syn::parse_quote_spanned!(span=> if let #pat = #expr { #then_body } else { #else_body }))
}
