//! Consumers that give an `Option`, taken apart where it is made: `position(|v| ...)`,
//! `find(|v| ...)`, `max_by(|a, b| ...)`, `min_by(|a, b| ...)`, `reduce(|acc, v| ...)` and an
//! iterator's `last()` and `nth(k)`, followed by `unwrap()` /
//! `expect(..)` (a `Panic` fault where there is no item, as Rust panics), `unwrap_or(d)`,
//! `is_some()` or `is_none()`; `copied()` / `cloned()` before them change nothing.
//!
//! `max_by` and `min_by` fold as Rust's `cmp::max_by` / `cmp::min_by` do — the later of equal
//! items is the maximum, the earlier the minimum, which decides where a derivative goes at a tie.
//! Their comparator must be one of the forms float code writes, `|a, b| A.partial_cmp(B)`
//! followed by `.unwrap()` / `.expect(..)` (a `Panic` fault when it meets a NaN, as Rust panics)
//! or `.unwrap_or(Ordering::X)`, or `A.total_cmp(B)` / `f64::total_cmp` (in which -0 < +0 and a
//! NaN is above every number, as a NaN with its sign bit clear is; the IR cannot see a NaN's
//! sign bit). `A` and `B` are any expressions of `a` and `b`, such as `a.abs()` or `(b - t).powi(2)`.

use crate::error::{Result, invalid, unsupported};
use crate::forloop::{Consumer, Leave};
use crate::iter::{closure_or_function, parse_chain};
use crate::lower::{Lowered, Lowerer, Operand};
use crate::types::Ty;
use jitdiff_ir::{CondCode, Opcode, Value};
use std::borrow::Cow;
use syn::spanned::Spanned;

/// The consumers this file lowers.
const PICKS: [&str; 7] = ["position", "find", "max_by", "min_by", "reduce", "last", "nth"];

/// What the loop picks.
// One per loop lowered, built once: boxing the comparator would buy nothing.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Pick<'e> {
    /// The first item the closure accepts.
    Find(Cow<'e, syn::ExprClosure>),
    /// The largest (`max`) or smallest item by the comparator.
    Extreme { compare: Comparator, max: bool },
    /// `reduce(|acc, v| ...)`: the first item, then the closure of the result so far and each
    /// later one.
    Reduce(Cow<'e, syn::ExprClosure>),
    /// `last()` of an iterator: every item in turn.
    Last,
}

/// A comparator `|a, b| left.partial_cmp(right)...` as two closures of `(a, b)`, one for each side.
pub(crate) struct Comparator {
    left: syn::ExprClosure,
    right: syn::ExprClosure,
    unordered: Unordered,
    /// Where the comparator is (a NaN that makes it panic is reported there).
    span: proc_macro2::Span,
}

/// What the comparator makes of a NaN.
enum Unordered {
    /// `partial_cmp(..).unwrap()`: Rust panics.
    Panics,
    /// `partial_cmp(..).unwrap_or(Ordering::X)`: `X` (`Less`, `Equal` or `Greater` as -1, 0, 1).
    Is(i8),
    /// `total_cmp`: the total order of IEEE 754 (a NaN above every number).
    Total,
}

/// `m` (the receiver of `unwrap`, `is_some`, ...) if it is a call of one of [`PICKS`] on an
/// iterator chain, perhaps followed by `copied()`, `cloned()` and `map(..)` of the `Option` (those
/// `map` arguments, in the order they apply).
pub(crate) fn option_source(m: &syn::Expr) -> Option<(&syn::ExprMethodCall, Vec<&syn::Expr>)> {
    let syn::Expr::MethodCall(call) = crate::iter::peel_parens(m) else { return None };
    match (call.method.to_string().as_str(), &call.args.iter().collect::<Vec<_>>()[..]) {
        ("copied" | "cloned", []) => return option_source(&call.receiver),
        ("map", [f]) if !crate::iter::is_iterator(&call.receiver) => {
            let (inner, mut maps) = option_source(&call.receiver)?;
            maps.push(f);
            return Some((inner, maps));
        }
        _ => {}
    }
    (PICKS.contains(&call.method.to_string().as_str()) && crate::iter::is_iterator(&call.receiver))
        .then_some((call, vec![]))
}

impl Lowerer<'_> {
    /// `inner` (one of [`PICKS`] on a chain) taken apart at once by `outer`: `unwrap()` /
    /// `expect(..)`, `unwrap_or(d)`, `is_some()`, `is_none()`, or with a default
    /// ([`crate::defaults`]).
    pub(crate) fn lower_option_consumer(
        &mut self,
        outer: &syn::ExprMethodCall,
        inner: &syn::ExprMethodCall,
        maps: &[&syn::Expr],
    ) -> Result<Lowered> {
        let (item, found) = self.option_parts(inner)?;
        let item = self.map_all(item, found, maps)?;
        let method = outer.method.to_string();
        if crate::defaults::is_default(&method) {
            return self.lower_option_default(outer, item, found);
        }
        let arity = if method == "unwrap_or" || method == "expect" { 1 } else { 0 };
        if outer.args.len() != arity {
            return Err(invalid(
                outer.span(),
                format!("`{method}` takes {arity} argument{}", if arity == 1 { "" } else { "s" }),
            ));
        }
        Ok(match method.as_str() {
            "is_some" => Lowered::Value(Operand { value: found, ty: Ty::Bool }),
            "is_none" => Lowered::Value(Operand { value: self.ssa.op(Opcode::Not, &[found]), ty: Ty::Bool }),
            "unwrap_or" => match item {
                Lowered::Value(item) => {
                    let default = self.scalar_of(&outer.args[0], &item.ty)?;
                    Lowered::Value(Operand { value: self.ssa.select(found, item.value, default.value), ty: item.ty })
                }
                Lowered::Tuple(items) => {
                    // `(7, &0.5)`: the pair's parts, references dropped as the item has none.
                    let syn::Expr::Tuple(default) = crate::iter::peel_parens(&outer.args[0]) else {
                        return Err(invalid(outer.args[0].span(), "the default of a pair is a pair: `(0, &0.0)`"));
                    };
                    if default.elems.len() != items.len() {
                        return Err(invalid(default.span(), "the default of a pair is a pair: `(0, &0.0)`"));
                    }
                    let mut defaults = vec![];
                    for (elem, item) in default.elems.iter().zip(&items) {
                        defaults.push(self.scalar_of(&without_reference(elem), &item.ty)?);
                    }
                    let chosen = items
                        .iter()
                        .zip(&defaults)
                        .map(|(i, d)| Operand { value: self.ssa.select(found, i.value, d.value), ty: i.ty.clone() })
                        .collect();
                    Lowered::Tuple(chosen)
                }
                other => other,
            },
            _ => {
                // `unwrap`/`expect`: Rust panics when there was no item.
                self.trap_unless(found, outer.span(), ("not_found", "found"));
                item
            }
        })
    }

    /// `item` through each `map` of its `Option` in turn.
    pub(crate) fn map_all(&mut self, mut item: Lowered, found: Value, maps: &[&syn::Expr]) -> Result<Lowered> {
        for f in maps {
            let Some(closure) = closure_or_function(f, 1) else {
                return Err(unsupported(
                    f.span(),
                    "`map` of an `Option` without a closure written in place or a function's name",
                    "write the closure in the call: `.map(|(i, _)| i)`",
                ));
            };
            item = self.map_option(item, found, &closure)?;
        }
        Ok(item)
    }

    /// The item `inner` (one of [`PICKS`] on a chain) picks (a number, or a pair of
    /// `enumerate`/`zip`), and whether there was one.
    pub(crate) fn option_parts(&mut self, inner: &syn::ExprMethodCall) -> Result<(Lowered, Value)> {
        let name = inner.method.to_string();
        // `nth(k)` is the last item of `skip(k).take(1)`.
        if name == "nth" {
            let [k] = &inner.args.iter().collect::<Vec<_>>()[..] else {
                return Err(invalid(inner.span(), "`nth` takes 1 argument; pass 1"));
            };
            let receiver = &inner.receiver;
            let span = inner.span();
            let last: syn::ExprMethodCall = syn::parse_quote_spanned!(span=> #receiver.skip(#k).take(1).last());
            return self.option_parts(&last);
        }
        let chain = parse_chain(&inner.receiver)?;
        let arity = if name == "position" || name == "find" { 1 } else { 2 };
        let closure = match &inner.args.iter().collect::<Vec<_>>()[..] {
            [arg] => closure_or_function(arg, arity),
            _ => None,
        };
        let consumer = if name == "last" {
            if !inner.args.is_empty() {
                return Err(invalid(inner.span(), "`last` takes no arguments"));
            }
            Consumer::Pick(Pick::Last)
        } else {
            let Some(closure) = closure else {
                let example = if arity == 1 { "|v| *v > 0.0" } else { "|a, b| a.partial_cmp(b).unwrap()" };
                return Err(unsupported(
                    inner.span(),
                    format!("`{name}` calls without one closure written in place or a function's name"),
                    format!("write the closure in the call: `.{name}({example})`"),
                ));
            };
            match name.as_str() {
                "position" => Consumer::Position(closure),
                "find" => Consumer::Pick(Pick::Find(closure)),
                "reduce" => Consumer::Pick(Pick::Reduce(closure)),
                _ => Consumer::Pick(Pick::Extreme { compare: comparator(&closure)?, max: name == "max_by" }),
            }
        };
        let span = inner.span();
        let Lowered::Tuple(mut parts) = self.counted_loop(&chain, consumer, None, span)? else {
            return Err(invalid(span, format!("`{name}` gave no item (a front-end bug)")));
        };
        let Some(found) = parts.pop() else {
            return Err(invalid(span, format!("`{name}` gave no item (a front-end bug)")));
        };
        let item = match parts.len() {
            1 => Lowered::Value(parts.remove(0)),
            _ => Lowered::Tuple(parts),
        };
        Ok((item, found.value))
    }

    /// `if let Some(v) = option { .. } else { .. }` where `option` is one of [`PICKS`] on a
    /// chain, or a slice's `first()` / `last()` (`copied()` / `cloned()` after it or not): the
    /// branch on whether there was an item, with `v` bound to it in the first.
    pub(crate) fn lower_if_let(&mut self, e: &syn::ExprIf, l: &syn::ExprLet, expect: Option<&Ty>) -> Result<Lowered> {
        let refused = || {
            unsupported(
                l.span(),
                "`if let` other than `if let Some(v) = ...` of `find`, `max_by`, `min_by`, `position`, `reduce`, an iterator's `last`/`nth`, or a slice's `first()`/`last()`/`get(k)`",
                "take the `Option` apart with `.unwrap_or(..)`, `.is_some()`, or test with a `bool` condition",
            )
        };
        let syn::Pat::TupleStruct(some) = &*l.pat else { return Err(refused()) };
        let [binding] = &some.elems.iter().collect::<Vec<_>>()[..] else { return Err(refused()) };
        if !some.path.is_ident("Some") {
            return Err(refused());
        }
        // `Some(v)`, `Some(&v)`, `Some(mut v)`, `Some((i, &v))`: the references dropped (the
        // item is a value here).
        let binding = without_reference_patterns(binding).ok_or_else(refused)?;
        // A slice's `first()`, `last()` or `get(k)`: the iterator pick it is.
        let as_pick = crate::ends::as_pick(&l.expr);
        let option = as_pick.as_ref().unwrap_or(&l.expr);
        let Some((inner, maps)) = option_source(option) else { return Err(refused()) };
        let (item, found) = self.option_parts(inner)?;
        let item = self.map_all(item, found, &maps)?;
        self.scopes.push();
        self.declare("_jitdiff_some", Ty::Bool, false, Some(found));
        match &item {
            Lowered::Value(op) => {
                self.declare("_jitdiff_item", op.ty.clone(), false, Some(op.value));
            }
            Lowered::Tuple(items) => self.declare_tuple("_jitdiff_item", items, false),
            other => return Err(invalid(l.span(), format!("cannot bind a `{}`", other.ty()))),
        }
        let then_branch = &e.then_branch;
        let span = e.if_token.span;
        let cond: syn::Expr = syn::parse_quote_spanned!(span=> _jitdiff_some);
        let bind: syn::Stmt = syn::parse_quote_spanned!(span=> let #binding = _jitdiff_item;);
        let mut then_branch = then_branch.clone();
        then_branch.stmts.insert(0, bind);
        let rewritten = syn::ExprIf { cond: Box::new(cond), then_branch, ..e.clone() };
        let lowered = self.lower_if(&rewritten, expect);
        self.scopes.pop();
        lowered
    }

    /// A `Panic` fault at `span` where `cond` is false.
    pub(crate) fn trap_unless(&mut self, cond: Value, span: proc_macro2::Span, labels: (&str, &str)) {
        let fail = self.ssa.new_block(labels.0);
        let fine = self.ssa.new_block(labels.1);
        let reachable = self.ssa.reachable;
        self.ssa.branch(cond, fine, fail);
        self.ssa.switch_to(fail, reachable);
        self.at(span);
        self.ssa.push(Opcode::Trap, vec![], jitdiff_ir::Imm::None);
        self.ssa.jump(fine, vec![]);
        self.ssa.switch_to(fine, reachable);
    }

    /// One item (its `parts`: a number, or a pair's two) of a `find`/`max_by`/`min_by`/`reduce`/
    /// `last` loop whose picked item is the slots from `slot` and its flag the slot after them.
    /// `false` where the closure diverges (the rest of the iteration never runs).
    pub(crate) fn pick_item(&mut self, pick: &Pick<'_>, parts: &[Operand], slot: usize) -> Result<bool> {
        let width = parts.len();
        let found_slot = slot + width;
        let take = |this: &mut Self, values: &[Operand]| {
            for (k, part) in values.iter().enumerate() {
                this.set_accumulator(slot + k, part.value, part.ty.clone());
            }
        };
        let take_first = |this: &mut Self| {
            take(this, parts);
            let yes = this.ssa.bconst(true);
            this.set_accumulator(found_slot, yes, Ty::Bool);
        };
        let span = proc_macro2::Span::call_site();
        let (compare, max) = match pick {
            Pick::Last => {
                take_first(self);
                return Ok(true);
            }
            Pick::Find(closure) => {
                let Some(accepted) = self.predicate(closure, item_of(parts)?)? else { return Ok(false) };
                self.leave_where(accepted, true, Leave::Break, ("found", "not_found"), take_first);
                return Ok(true);
            }
            Pick::Reduce(closure) => {
                if width != 1 {
                    return Err(unsupported(closure.span(), "`reduce` of pairs", "`map` the pairs to numbers first"));
                }
                let found = self.read_slot(found_slot, span)?.value;
                self.leave_where(found, false, Leave::Continue, ("first", "later"), take_first);
                let so_far = self.read_slot(slot, span)?;
                match self.apply_closure(closure, vec![item_of(&[so_far])?, item_of(parts)?], Some(&Ty::F64))? {
                    Lowered::Value(op) if op.ty == Ty::F64 => self.set_accumulator(slot, op.value, Ty::F64),
                    Lowered::Never => return Ok(false),
                    other => {
                        return Err(crate::expr::type_error(
                            closure.body.span(),
                            &Ty::F64,
                            &other.ty(),
                            Some(&closure.body),
                        ));
                    }
                }
                return Ok(true);
            }
            Pick::Extreme { compare, max } => (compare, *max),
        };
        // The first item is the pick so far; later ones are compared with it.
        let found = self.read_slot(found_slot, span)?.value;
        self.leave_where(found, false, Leave::Continue, ("first", "later"), take_first);
        let mut best = vec![];
        for k in 0..width {
            best.push(self.read_slot(slot + k, span)?);
        }
        let side = |this: &mut Self, closure: &syn::ExprClosure| -> Result<Option<Value>> {
            match this.apply_closure(closure, vec![item_of(&best)?, item_of(parts)?], Some(&Ty::F64))? {
                Lowered::Value(op) if op.ty == Ty::F64 => Ok(Some(op.value)),
                Lowered::Never => Ok(None),
                other => Err(crate::expr::type_error(closure.body.span(), &Ty::F64, &other.ty(), Some(&closure.body))),
            }
        };
        let Some(left) = side(self, &compare.left)? else { return Ok(false) };
        let Some(right) = side(self, &compare.right)? else { return Ok(false) };
        // `compare(best, item)` is `Greater`: `min_by` takes the item, `max_by` keeps the best.
        let greater = self.compares_greater(left, right, compare)?;
        let take_new = if max { self.ssa.op(Opcode::Not, &[greater]) } else { greater };
        let next: Vec<Operand> = parts
            .iter()
            .zip(&best)
            .map(|(new, old)| Operand { value: self.ssa.select(take_new, new.value, old.value), ty: old.ty.clone() })
            .collect();
        take(self, &next);
        Ok(true)
    }

    /// The parts of a loop's `item` for [`Lowerer::pick_item`]: an `f64`, or a pair's two numbers.
    pub(crate) fn pick_parts(&mut self, item: crate::iter::Item, span: proc_macro2::Span) -> Result<Vec<Operand>> {
        use crate::iter::Item;
        match item {
            Item::Pair(a, b)
                if !matches!(*a, Item::Pair(..) | Item::View(_)) && !matches!(*b, Item::Pair(..) | Item::View(_)) =>
            {
                Ok(vec![self.item_value(*a), self.item_value(*b)])
            }
            Item::Pair(..) | Item::View(_) => Err(pairs_refused(span)),
            scalar => {
                let value = self.item_value(scalar);
                if value.ty != Ty::F64 {
                    return Err(unsupported(
                        span,
                        format!("`find`, `max_by`, `min_by`, `reduce` and `last` of `{}` items", value.ty),
                        "pick `f64` items (`.map(|i| i as f64)`), or count with `position`",
                    ));
                }
                Ok(vec![value])
            }
        }
    }

    /// Branch on `found` into a block where there is an item (the current block on return)
    /// and one where there is none, for code that runs on one side only (Rust runs `map`'s and
    /// `unwrap_or_else`'s closures only there) and a join of the two.
    pub(crate) fn enter_some(&mut self, found: Value) -> OptionBranch {
        let (some, none) = (self.ssa.new_block("some"), self.ssa.new_block("none"));
        self.ssa.branch(found, some, none);
        let reachable = self.ssa.reachable;
        let before = self.scopes.snapshot();
        let join = self.new_join();
        self.ssa.switch_to(some, reachable);
        OptionBranch { none, reachable, before, join }
    }

    /// `option.map(closure)` of a picked `item`: the closure applied where there was one
    /// (`found`), behind a branch, as Rust calls it only then.
    fn map_option(&mut self, item: Lowered, found: Value, closure: &syn::ExprClosure) -> Result<Lowered> {
        let parts = match &item {
            Lowered::Value(op) => vec![op.clone()],
            Lowered::Tuple(items) => items.clone(),
            other => return Err(invalid(closure.span(), format!("cannot `map` a `{}`", other.ty()))),
        };
        let OptionBranch { none, reachable, before, mut join } = self.enter_some(found);
        let mapped = self.apply_closure(closure, vec![item_of(&parts)?], None)?;
        let ty = match &mapped {
            Lowered::Value(op) if op.ty.is_scalar() => op.ty.clone(),
            Lowered::Tuple(items) if items.len() == 2 => mapped.ty(),
            other => {
                return Err(invalid(
                    closure.body.span(),
                    format!("`map` of a picked item must give a number or a pair, not `{}`", other.ty()),
                ));
            }
        };
        self.edge_to(&mut join, mapped.values());
        self.scopes.restore(&before);
        self.ssa.switch_to(none, reachable);
        let placeholders: Vec<Value> = match &ty {
            Ty::Tuple(items) => items.iter().map(|t| self.placeholder(t).value).collect(),
            scalar => vec![self.placeholder(scalar).value],
        };
        self.edge_to(&mut join, placeholders);
        let results = self.finish_join(join, "mapped", &crate::control::value_types(&ty));
        Ok(crate::control::assemble(&ty, &results))
    }

    /// Whether `left.partial_cmp(&right)` (or `total_cmp`) is `Greater` as the comparator reads it.
    fn compares_greater(&mut self, left: Value, right: Value, compare: &Comparator) -> Result<Value> {
        let gt = self.ssa.fcmp(CondCode::Gt, left, right);
        let left_nan = self.ssa.fcmp(CondCode::Ne, left, left);
        let right_nan = self.ssa.fcmp(CondCode::Ne, right, right);
        let unordered = self.ssa.op(Opcode::Or, &[left_nan, right_nan]);
        Ok(match compare.unordered {
            Unordered::Panics => {
                let ordered = self.ssa.op(Opcode::Not, &[unordered]);
                self.trap_unless(ordered, compare.span, ("unordered", "ordered"));
                gt
            }
            Unordered::Is(ordering) => {
                let as_greater = self.ssa.bconst(ordering > 0);
                self.ssa.select(unordered, as_greater, gt)
            }
            Unordered::Total => {
                // A NaN is above every number (and equal to a NaN); -0 is below +0.
                let right_number = self.ssa.op(Opcode::Not, &[right_nan]);
                let nan_above = self.ssa.op(Opcode::And, &[left_nan, right_number]);
                let zero = self.ssa.fconst(0.0);
                let one = self.ssa.fconst(1.0);
                let both_zero = {
                    let left_zero = self.ssa.fcmp(CondCode::Eq, left, zero);
                    let right_zero = self.ssa.fcmp(CondCode::Eq, right, zero);
                    self.ssa.op(Opcode::And, &[left_zero, right_zero])
                };
                // The sign of a zero: 1 / -0 is -inf.
                let negative = |this: &mut Self, x: Value| {
                    let inverse = this.ssa.op(Opcode::FDiv, &[one, x]);
                    this.ssa.fcmp(CondCode::Lt, inverse, zero)
                };
                let (left_negative, right_negative) = (negative(self, left), negative(self, right));
                let left_positive = self.ssa.op(Opcode::Not, &[left_negative]);
                let signs = self.ssa.op(Opcode::And, &[left_positive, right_negative]);
                let zeros_greater = self.ssa.op(Opcode::And, &[both_zero, signs]);
                let numbers_greater = self.ssa.op(Opcode::Or, &[gt, zeros_greater]);
                self.ssa.op(Opcode::Or, &[nan_above, numbers_greater])
            }
        })
    }
}

/// The comparator of `max_by`/`min_by` in one of the forms this file reads.
fn comparator(closure: &syn::ExprClosure) -> Result<Comparator> {
    let span = closure.span();
    let refused = || {
        unsupported(
            closure.body.span(),
            "comparators other than `|a, b| A.partial_cmp(B).unwrap()`, `.unwrap_or(Ordering::..)` and `A.total_cmp(B)`",
            "compare numbers computed from `a` and `b`: `.max_by(|a, b| a.abs().partial_cmp(&b.abs()).unwrap())`",
        )
    };
    if closure.inputs.len() != 2 {
        return Err(invalid(span, "a comparator takes two parameters: `|a, b| a.partial_cmp(b).unwrap()`"));
    }
    let body = single_expression(&closure.body).ok_or_else(refused)?;
    let (left, right, unordered) = match body {
        // `A.total_cmp(B)` and `f64::total_cmp(A, B)` (also what `max_by(f64::total_cmp)` becomes).
        syn::Expr::MethodCall(m) if m.method == "total_cmp" && m.args.len() == 1 => {
            (&*m.receiver, &m.args[0], Unordered::Total)
        }
        syn::Expr::Call(c) if c.args.len() == 2 && path_ends_with(&c.func, "total_cmp") => {
            (&c.args[0], &c.args[1], Unordered::Total)
        }
        syn::Expr::MethodCall(outer) => {
            let syn::Expr::MethodCall(m) = crate::iter::peel_parens(&outer.receiver) else { return Err(refused()) };
            if m.method != "partial_cmp" || m.args.len() != 1 {
                return Err(refused());
            }
            let unordered = match (outer.method.to_string().as_str(), outer.args.first()) {
                ("unwrap", None) | ("expect", Some(_)) => Unordered::Panics,
                ("unwrap_or", Some(ordering)) => Unordered::Is(ordering_value(ordering).ok_or_else(refused)?),
                _ => return Err(refused()),
            };
            (&*m.receiver, &m.args[0], unordered)
        }
        _ => return Err(refused()),
    };
    let side = |expr: &syn::Expr| syn::ExprClosure { body: Box::new(without_reference(expr)), ..closure.clone() };
    Ok(Comparator { left: side(left), right: side(right), unordered, span: body.span() })
}

/// The one expression a closure body is (`{ e }` is `e`).
fn single_expression(body: &syn::Expr) -> Option<&syn::Expr> {
    match body {
        syn::Expr::Block(b) if b.block.stmts.len() == 1 => match &b.block.stmts[0] {
            syn::Stmt::Expr(e, None) => single_expression(e),
            _ => None,
        },
        syn::Expr::Paren(p) => single_expression(&p.expr),
        other => Some(other),
    }
}

/// `&e` and `&&e` as `e` (the comparator's sides are compared by reference in Rust).
fn without_reference(expr: &syn::Expr) -> syn::Expr {
    match expr {
        syn::Expr::Reference(r) => without_reference(&r.expr),
        other => other.clone(),
    }
}

fn path_ends_with(expr: &syn::Expr, name: &str) -> bool {
    matches!(expr, syn::Expr::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == name))
}

/// `Ordering::Less` / `Equal` / `Greater` (any path ending so) as -1, 0, 1.
fn ordering_value(expr: &syn::Expr) -> Option<i8> {
    let syn::Expr::Path(p) = expr else { return None };
    let segments: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
    match segments.iter().rev().take(2).collect::<Vec<_>>()[..] {
        [last, ordering] if ordering == "Ordering" => match last.as_str() {
            "Less" => Some(-1),
            "Equal" => Some(0),
            "Greater" => Some(1),
            _ => None,
        },
        _ => None,
    }
}

/// `compare(x, y) == Ordering::Greater` for the comparator `closure` (one of the forms
/// [`comparator`] reads) as a Rust expression over the variables `x` and `y`: for lowerings
/// written as Rust, such as `sort_by`'s.
pub(crate) fn greater_expr(closure: &syn::ExprClosure, x: &syn::Ident, y: &syn::Ident) -> Result<syn::Expr> {
    let compare = comparator(closure)?;
    let names: Vec<syn::Ident> = closure.inputs.iter().map(parameter_name).collect::<Result<_>>()?;
    let [a, b] = &names[..] else {
        return Err(invalid(closure.span(), "a comparator takes two parameters: `|a, b| a.partial_cmp(b).unwrap()`"));
    };
    let span = compare.span;
    let (left, right) = (&compare.left.body, &compare.right.body);
    let side =
        |body: &syn::Expr| -> syn::Expr { syn::parse_quote_spanned!(span=> { let #a = #x; let #b = #y; #body }) };
    let (left, right) = (side(left), side(right));
    let greater: syn::Expr = match compare.unordered {
        Unordered::Panics => syn::parse_quote_spanned!(span=> {
            assert!(!(left__.is_nan() || right__.is_nan()));
            left__ > right__
        }),
        Unordered::Is(ordering) => {
            let as_greater = ordering > 0;
            syn::parse_quote_spanned!(span=> if left__.is_nan() || right__.is_nan() { #as_greater } else { left__ > right__ })
        }
        Unordered::Total => syn::parse_quote_spanned!(span=>
            (left__.is_nan() && !right__.is_nan())
                || left__ > right__
                || (left__ == 0.0 && right__ == 0.0 && 1.0 / left__ > 0.0 && 1.0 / right__ < 0.0)
        ),
    };
    Ok(syn::parse_quote_spanned!(span=> {
        let left__: f64 = #left;
        let right__: f64 = #right;
        #greater
    }))
}

/// The name a comparator's parameter binds (`a`, `&a`, `a: &f64`).
fn parameter_name(pat: &syn::Pat) -> Result<syn::Ident> {
    match pat {
        syn::Pat::Ident(p) if p.subpat.is_none() => Ok(p.ident.clone()),
        syn::Pat::Reference(r) => parameter_name(&r.pat),
        syn::Pat::Type(t) => parameter_name(&t.pat),
        other => Err(unsupported(other.span(), "comparator parameters other than names", "name them: `|a, b| ...`")),
    }
}

/// An item made of `parts`: a number, or a pair.
fn item_of(parts: &[Operand]) -> Result<crate::iter::Item> {
    use crate::iter::Item;
    match parts {
        [a, b] => Ok(Item::Pair(Box::new(Item::Scalar(a.clone())), Box::new(Item::Scalar(b.clone())))),
        [one] => Ok(Item::Scalar(one.clone())),
        _ => Err(invalid(
            proc_macro2::Span::call_site(),
            "a picked item of other than one or two parts (a front-end bug)",
        )),
    }
}

/// `pat` with its reference patterns (`&v`) replaced by what they match, where it is made of
/// names, `_`, references and tuples of those; `None` for anything else.
fn without_reference_patterns(pat: &syn::Pat) -> Option<syn::Pat> {
    match pat {
        syn::Pat::Reference(r) => without_reference_patterns(&r.pat),
        syn::Pat::Ident(p) if p.subpat.is_none() => Some(pat.clone()),
        syn::Pat::Wild(_) => Some(pat.clone()),
        syn::Pat::Tuple(t) => {
            let mut t = t.clone();
            for elem in t.elems.iter_mut() {
                *elem = without_reference_patterns(elem)?;
            }
            Some(syn::Pat::Tuple(t))
        }
        _ => None,
    }
}

/// The error for items `find`/`max_by`/... cannot pick.
pub(crate) fn pairs_refused(span: proc_macro2::Span) -> crate::error::FrontError {
    unsupported(
        span,
        "`find`, `max_by`, `min_by`, `reduce` and `last` of windows, chunks, nested pairs or pairs made by `map`",
        "pick numbers, or pairs straight from `enumerate` / `zip` (`.enumerate().max_by(|a, b| a.1.total_cmp(b.1))`)",
    )
}

/// What [`Lowerer::enter_some`] leaves to its caller: the block where there is no item, whether
/// the branch was reachable, the variables before it and the join of the two sides.
pub(crate) struct OptionBranch {
    pub none: jitdiff_ir::Block,
    pub reachable: bool,
    pub before: crate::scope::Snapshot,
    pub join: crate::join::Join,
}
