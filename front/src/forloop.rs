//! Counted loops over iterator chains: `for` loops, and the consumers `sum`, `product`, `fold`
//! and `count`, whose closures (`map`, `filter`, `fold`) are lowered inline into the loop body.

use crate::error::{Result, invalid, unsupported};
use crate::expr::type_error;
use crate::iter::{Adapter, Chain, Item, Plan, closure_or_function, parse_chain};
use crate::lower::{LoopCtx, Lowered, Lowerer, Operand};
use crate::pick::Pick;
use crate::types::{IntKind, Ty};
use jitdiff_ir::{Block, CondCode, Opcode, Value};
use std::borrow::Cow;
use syn::spanned::Spanned;

/// How [`Lowerer::leave_where`] leaves an iteration.
#[derive(Clone, Copy)]
pub(crate) enum Leave {
    Break,
    Continue,
}

/// What the loop does with each item.
// One per loop lowered: the size of its largest variant does not matter.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Consumer<'e> {
    For {
        pat: &'e syn::Pat,
        body: &'e syn::Block,
    },
    Sum {
        product: bool,
        turbofish: Option<Ty>,
    },
    Fold {
        init: &'e syn::Expr,
        closure: Cow<'e, syn::ExprClosure>,
    },
    Count,
    /// `any(|v| ...)` (`all: false`) or `all(|v| ...)`: a `bool` accumulator from `all`, and the
    /// loop left at the first item that decides it, as Rust stops there.
    Any {
        closure: Cow<'e, syn::ExprClosure>,
        all: bool,
    },
    /// `position(|v| ...)`: a `usize` counting the items before the first that satisfies the
    /// closure, and a `bool` whether one did (the loop is left there); the `Option` it stands
    /// for is taken apart at once (`unwrap`, `unwrap_or`, `is_some` ..., see [`Lowerer::lower_option_consumer`]).
    Position(Cow<'e, syn::ExprClosure>),
    /// `find(|v| ...)`, `max_by(|a, b| ...)`, `min_by(|a, b| ...)`: the item picked, and
    /// whether there was one (see `pick.rs`).
    Pick(Pick<'e>),
    /// `for_each(|v| ...)`: the closure applied to each item, for its effects.
    ForEach(Cow<'e, syn::ExprClosure>),
    /// `collect::<Vec<f64>>()`: each item stored in a local array as long as the chain's
    /// source (see [`Lowerer::lower_collect`]), and a `usize` counting them.
    Collect,
}

impl Lowerer<'_> {
    pub(crate) fn lower_for(&mut self, f: &syn::ExprForLoop) -> Result<Lowered> {
        let chain = parse_chain(&f.expr)?;
        let label = f.label.as_ref().map(|l| crate::types::name_of(&l.name.ident));
        self.counted_loop(&chain, Consumer::For { pat: &f.pat, body: &f.body }, label, f.span())?;
        Ok(Lowered::Unit)
    }

    /// `chain.sum()`, `.product()`, `.fold(init, |acc, v| ...)`, `.count()`.
    pub(crate) fn lower_iter_consumer(&mut self, m: &syn::ExprMethodCall, expect: Option<&Ty>) -> Result<Lowered> {
        let chain = parse_chain(&m.receiver)?;
        let name = m.method.to_string();
        let arity = |n: usize| -> Result<()> {
            if m.args.len() == n {
                Ok(())
            } else {
                Err(invalid(
                    m.span(),
                    format!("`{name}` takes {n} argument{}; pass {n}", if n == 1 { "" } else { "s" }),
                ))
            }
        };
        let consumer = match name.as_str() {
            // `(a..b).len()`, `x.iter().skip(1).len()`: the count of a chain without closures
            // (an `ExactSizeIterator`), computed without a loop.
            "len" if chain.adapters.is_empty() => {
                arity(0)?;
                let plan = self.plan(&chain.source)?;
                let count = self.item_count(&plan);
                return Ok(Lowered::Value(Operand { value: count, ty: Ty::Int(IntKind::Usize) }));
            }
            "sum" | "product" => {
                arity(0)?;
                let turbofish = match &m.turbofish {
                    None => expect.filter(|t| matches!(t, Ty::F64 | Ty::Int(_))).cloned(),
                    Some(generics) => match generics.args.first() {
                        Some(syn::GenericArgument::Type(t)) if generics.args.len() == 1 => {
                            Some(crate::types::parse_type(t, crate::types::TypePlace::Local)?)
                        }
                        _ => return Err(invalid(generics.span(), format!("write `{name}::<f64>()`"))),
                    },
                };
                Consumer::Sum { product: name == "product", turbofish }
            }
            "fold" => {
                arity(2)?;
                let Some(closure) = closure_or_function(&m.args[1], 2) else {
                    return Err(unsupported(
                        m.args[1].span(),
                        "`fold` calls without a closure written in place or a function's name",
                        "write the closure in the call: `.fold(0.0, |acc, v| acc + v)`",
                    ));
                };
                Consumer::Fold { init: &m.args[0], closure }
            }
            "count" => {
                arity(0)?;
                Consumer::Count
            }
            "any" | "all" => {
                arity(1)?;
                let Some(closure) = closure_or_function(&m.args[0], 1) else {
                    return Err(unsupported(
                        m.args[0].span(),
                        format!("`{name}` calls without a closure written in place or a function's name"),
                        format!("write the closure in the call: `.{name}(|v| *v > 0.0)`"),
                    ));
                };
                Consumer::Any { closure, all: name == "all" }
            }
            "for_each" => {
                arity(1)?;
                let Some(closure) = closure_or_function(&m.args[0], 1) else {
                    return Err(unsupported(
                        m.args[0].span(),
                        "`for_each` calls without a closure written in place or a function's name",
                        "write the closure in the call: `.for_each(|v| total += v)`",
                    ));
                };
                Consumer::ForEach(closure)
            }
            "collect" => {
                let (buffer, _, filtered) = self.lower_collect(m, expect)?;
                if filtered {
                    return Err(unsupported(
                        m.span(),
                        "`collect` after `filter` other than as the value of a `let`",
                        "bind it first: `let kept: Vec<f64> = x.iter().filter(..).copied().collect();`",
                    ));
                }
                return Ok(Lowered::Value(Operand { value: buffer, ty: Ty::Slice { mutable: true } }));
            }
            "position" | "find" | "max_by" | "min_by" | "reduce" | "last" | "nth" => {
                return Err(unsupported(
                    m.method.span(),
                    format!("`{name}` whose `Option` is kept"),
                    format!(
                        "take it apart where it is made: `.{name}(..).unwrap()`, `.expect(\"...\")`, `.unwrap_or(default)`, `.is_some()` or `.is_none()`"
                    ),
                ));
            }
            other => {
                return Err(unsupported(
                    m.method.span(),
                    format!("iterator methods such as `{other}`"),
                    "consume iterators with `sum`, `product`, `fold`, `count`, `any`, `all`, `for_each`, `collect` or a `for` loop",
                ));
            }
        };
        self.counted_loop(&chain, consumer, None, m.span())
    }

    pub(crate) fn counted_loop(
        &mut self,
        chain: &Chain<'_>,
        consumer: Consumer<'_>,
        label: Option<String>,
        span: proc_macro2::Span,
    ) -> Result<Lowered> {
        let plan = self.plan(&chain.source)?;
        let outer = self.scopes.len();
        self.scopes.push();
        // The accumulator of sum/product/fold/count: a variable user code cannot name.
        let mut pick_width = 1;
        let accumulator = match &consumer {
            Consumer::For { .. } | Consumer::ForEach(_) => None,
            Consumer::Sum { product, turbofish } => {
                let ty = turbofish.clone().unwrap_or(Ty::F64);
                let value = match (&ty, product) {
                    // Rust's float `sum` starts at -0.0 (so that an empty sum of -0.0s is -0.0).
                    (Ty::F64, false) => self.ssa.fconst(-0.0),
                    (Ty::F64, true) => self.ssa.fconst(1.0),
                    (Ty::Int(_), product) => self.ssa.iconst(i64::from(*product)),
                    (other, _) => {
                        return Err(unsupported(span, format!("sums of `{other}`"), "sum `f64` or integer items"));
                    }
                };
                Some(self.declare(if *product { "product#" } else { "sum#" }, ty, true, Some(value)))
            }
            // A pair accumulator (`fold((0, f64::NEG_INFINITY), |(bi, bv), (i, &v)| ...)`, an
            // argmax): a tuple variable, its elements in the two slots after it.
            Consumer::Fold { init: syn::Expr::Tuple(pair), .. } if pair.elems.len() == 2 => {
                let mut items = vec![];
                for elem in &pair.elems {
                    items.push(self.scalar(elem, None)?);
                }
                let marker = self.scopes.len();
                self.declare_tuple("fold#", &items, true);
                Some(marker)
            }
            Consumer::Fold { init, .. } => {
                let init = self.scalar(init, None)?;
                Some(self.declare("fold#", init.ty, true, Some(init.value)))
            }
            Consumer::Count => {
                let zero = self.ssa.iconst(0);
                Some(self.declare("count#", Ty::Int(IntKind::Usize), true, Some(zero)))
            }
            Consumer::Any { all, .. } => {
                let start = self.ssa.bconst(*all);
                Some(self.declare("any#", Ty::Bool, true, Some(start)))
            }
            Consumer::Collect => {
                let count = self.item_count(&plan);
                let buffer = if self.ssa.current == Block::ENTRY {
                    self.ssa.op(Opcode::Alloc, &[count])
                } else {
                    self.array_allocated_at_entry(count, span)?
                };
                let zero = self.ssa.iconst(0);
                let count = self.declare("_collected#", Ty::Int(IntKind::Usize), true, Some(zero));
                self.declare("_collect_into#", Ty::Slice { mutable: true }, false, Some(buffer));
                Some(count)
            }
            Consumer::Pick(_) => {
                // The picked item's parts (a number, or a pair of `enumerate`/`zip`), then
                // whether there was one.
                let shape = match &plan {
                    Plan::Indexed(stream) if !chain.adapters.iter().any(|a| matches!(a, Adapter::Map(_))) => {
                        stream.item_types().unwrap_or(vec![Ty::F64])
                    }
                    _ => vec![Ty::F64],
                };
                pick_width = shape.len();
                let first = self.scopes.len();
                for (k, ty) in shape.iter().enumerate() {
                    let placeholder = self.placeholder(ty).value;
                    self.declare(&format!("_picked{k}#"), ty.clone(), true, Some(placeholder));
                }
                let no = self.ssa.bconst(false);
                self.declare("_found#", Ty::Bool, true, Some(no));
                Some(first)
            }
            Consumer::Position(_) => {
                let zero = self.ssa.iconst(0);
                let index = self.declare("position#", Ty::Int(IntKind::Usize), true, Some(zero));
                let no = self.ssa.bconst(false);
                self.declare("found#", Ty::Bool, true, Some(no));
                Some(index)
            }
        };
        // Each `skip_while`'s flag: still skipping (see `Adapter::SkipWhile`).
        for (k, adapter) in chain.adapters.iter().enumerate() {
            if matches!(adapter, Adapter::SkipWhile(_)) {
                let yes = self.ssa.bconst(true);
                self.declare(&crate::skip_while::skipping_flag(k), Ty::Bool, true, Some(yes));
            }
        }
        let (counter_init, bound, cond, step) = match &plan {
            Plan::Direct { start, bound, cond, step, .. } => (*start, *bound, *cond, *step),
            Plan::Indexed(stream) => {
                let zero = self.ssa.iconst(0);
                let one = self.ssa.iconst(1);
                (zero, stream.count(), CondCode::Lt, one)
            }
        };
        let header = self.open_header("for_head", &[counter_init]);
        let counter = header.hidden.first().copied().unwrap_or(counter_init);
        let slots = self.scopes.len();
        let at_head = self.scopes.snapshot();
        let break_join = self.new_join();
        let continue_join = self.new_join();
        self.loops.push(LoopCtx { label, continue_join, break_join, break_ty: None, allows_value: false });
        let body = self.ssa.new_block("for_body");
        let exit = self.ssa.new_block("for_exit");
        let reachable = self.ssa.reachable;
        let more = self.ssa.icmp(cond, counter, bound);
        self.ssa.branch(more, body, exit);
        self.ssa.switch_to(exit, reachable);
        self.break_edge();
        self.scopes.restore(&at_head);
        self.ssa.switch_to(body, reachable);
        let in_range = crate::iter::counts_from_zero_below_bound(&chain.source, &plan);
        if in_range {
            self.counters.push((counter, bound));
        }
        let result = self.loop_body(chain, &plan, counter, &consumer, accumulator);
        if in_range {
            self.counters.pop();
        }
        let ctx = self.loops.pop();
        result?;
        self.scopes.truncate(slots);
        self.scopes.restore(&at_head);
        if let Some(ctx) = ctx {
            self.close_loop_with(header, ctx, &[], |this, header| {
                let counter = header.hidden.first().copied().unwrap_or(counter);
                vec![this.ssa.op(Opcode::IAdd, &[counter, step])]
            })?;
        }
        let result = match accumulator {
            // The item's parts, then whether there was one.
            Some(slot) if matches!(consumer, Consumer::Position(_) | Consumer::Pick(_)) => {
                let mut parts = vec![];
                for k in 0..=pick_width {
                    parts.push(self.read_slot(slot + k, span)?);
                }
                Lowered::Tuple(parts)
            }
            Some(slot) if matches!(consumer, Consumer::Collect) => {
                Lowered::Tuple(vec![self.read_slot(slot + 1, span)?, self.read_slot(slot, span)?])
            }
            Some(slot) if matches!(self.scopes.slot(slot).ty, Ty::Tuple(_)) => self.read_struct(slot, span)?,
            Some(slot) => Lowered::Value(self.read_slot(slot, span)?),
            None => Lowered::Unit,
        };
        self.scopes.truncate(outer);
        self.scopes.pop();
        Ok(result)
    }

    fn break_edge(&mut self) {
        if let Some(mut ctx) = self.loops.pop() {
            self.edge_to(&mut ctx.break_join, vec![]);
            self.loops.push(ctx);
        }
    }

    fn continue_edge(&mut self) {
        if let Some(mut ctx) = self.loops.pop() {
            self.edge_to(&mut ctx.continue_join, vec![]);
            self.loops.push(ctx);
        }
    }

    /// One iteration: the item, the adapters, the consumer.
    fn loop_body(
        &mut self,
        chain: &Chain<'_>,
        plan: &Plan,
        counter: Value,
        consumer: &Consumer<'_>,
        accumulator: Option<usize>,
    ) -> Result<()> {
        self.scopes.push();
        let mut item = match plan {
            Plan::Direct { kind, .. } => Item::Scalar(Operand { value: counter, ty: Ty::Int(*kind) }),
            Plan::Indexed(stream) => self.item_at(stream, counter),
        };
        for (k, adapter) in chain.adapters.iter().enumerate() {
            match adapter {
                Adapter::Map(closure) => {
                    let value = self.apply_closure(closure, vec![item], None)?;
                    item = match value {
                        Lowered::Value(op) if op.ty.is_scalar() => Item::Scalar(op),
                        Lowered::Tuple(items) if items.len() == 2 => Item::Pair(
                            Box::new(Item::Scalar(items[0].clone())),
                            Box::new(Item::Scalar(items[1].clone())),
                        ),
                        Lowered::Never => return Ok(()),
                        other => {
                            return Err(invalid(
                                closure.body.span(),
                                format!("`map` must give a number (or a pair), not `{}`", other.ty()),
                            ));
                        }
                    };
                }
                Adapter::Filter(closure) => {
                    let Some(keep) = self.predicate(closure, item.clone())? else { return Ok(()) };
                    self.leave_where(keep, false, Leave::Continue, ("skipped", "kept"), |_| {});
                }
                Adapter::TakeWhile(closure) => {
                    let Some(keep) = self.predicate(closure, item.clone())? else { return Ok(()) };
                    self.leave_where(keep, false, Leave::Break, ("taken_all", "taking"), |_| {});
                }
                Adapter::SkipWhile(closure) => {
                    if !self.skip_while(closure, item.clone(), k)? {
                        return Ok(());
                    }
                }
            }
        }
        match consumer {
            Consumer::For { pat, body } => {
                self.bind_item(pat, item)?;
                self.lower_block(body, Some(&Ty::Unit))?;
            }
            Consumer::ForEach(closure) => {
                self.apply_closure(closure, vec![item], Some(&Ty::Unit))?;
            }
            Consumer::Sum { product, .. } => {
                let slot = accumulator.unwrap_or_default();
                let acc = self.read_slot(slot, proc_macro2::Span::call_site())?;
                if matches!(item, Item::Pair(..)) {
                    return Err(invalid(
                        chain_span(chain),
                        "cannot sum pairs; `map` them to a number first: `.map(|(a, b)| a * b)`",
                    ));
                }
                if matches!(item, Item::View(_)) {
                    return Err(invalid(
                        chain_span(chain),
                        "cannot sum windows or chunks; `map` them to a number first: `.map(|w| w[1] - w[0])`",
                    ));
                }
                let value = self.item_value(item);
                let ty = match acc.ty.unify(&value.ty).filter(|_| value.ty.fits(&acc.ty)) {
                    Some(t) => t,
                    None => return Err(type_error(chain_span(chain), &acc.ty, &value.ty, None)),
                };
                let opcode = match (&ty, product) {
                    (Ty::F64, false) => Opcode::FAdd,
                    (Ty::F64, true) => Opcode::FMul,
                    (_, false) => Opcode::IAdd,
                    (_, true) => Opcode::IMul,
                };
                let next = self.ssa.op(opcode, &[acc.value, value.value]);
                self.set_accumulator(slot, next, ty);
            }
            Consumer::Fold { closure, .. }
                if accumulator.is_some_and(|s| matches!(self.scopes.slot(s).ty, Ty::Tuple(_))) =>
            {
                let slot = accumulator.unwrap_or_default();
                let span = proc_macro2::Span::call_site();
                let (first, second) = (self.read_slot(slot + 1, span)?, self.read_slot(slot + 2, span)?);
                let pair = Item::Pair(Box::new(Item::Scalar(first.clone())), Box::new(Item::Scalar(second.clone())));
                match self.apply_closure(closure, vec![pair, item], None)? {
                    Lowered::Tuple(items) if items.len() == 2 => {
                        for (k, (acc, op)) in [first, second].iter().zip(&items).enumerate() {
                            let Some(ty) = acc.ty.unify(&op.ty).filter(|_| op.ty.fits(&acc.ty) || acc.ty.fits(&op.ty))
                            else {
                                return Err(type_error(closure.body.span(), &acc.ty, &op.ty, Some(&closure.body)));
                            };
                            self.set_accumulator(slot + 1 + k, op.value, ty);
                        }
                    }
                    Lowered::Never => {}
                    other => {
                        let expected = Ty::Tuple(vec![Ty::F64, Ty::F64]);
                        return Err(type_error(closure.body.span(), &expected, &other.ty(), Some(&closure.body)));
                    }
                }
            }
            Consumer::Fold { closure, .. } => {
                let slot = accumulator.unwrap_or_default();
                let acc = self.read_slot(slot, proc_macro2::Span::call_site())?;
                let value = self.apply_closure(closure, vec![Item::Scalar(acc.clone()), item], Some(&acc.ty))?;
                match value {
                    Lowered::Value(op) if op.ty.fits(&acc.ty) => self.set_accumulator(slot, op.value, acc.ty),
                    Lowered::Never => {}
                    other => return Err(type_error(closure.body.span(), &acc.ty, &other.ty(), Some(&closure.body))),
                }
            }
            Consumer::Pick(pick) => {
                let parts = self.pick_parts(item, chain_span(chain))?;
                let slot = accumulator.unwrap_or_default();
                let width = (0..).find(|k| self.scopes.slot(slot + k).name == "_found#").unwrap_or(0);
                if parts.len() != width {
                    return Err(crate::pick::pairs_refused(chain_span(chain)));
                }
                if !self.pick_item(pick, &parts, slot)? {
                    return Ok(());
                }
            }
            Consumer::Position(closure) => {
                let slot = accumulator.unwrap_or_default();
                let Some(found) = self.predicate(closure, item)? else { return Ok(()) };
                self.leave_where(found, true, Leave::Break, ("found", "not_found"), |this| {
                    let yes = this.ssa.bconst(true);
                    this.set_accumulator(slot + 1, yes, Ty::Bool);
                });
                let index = self.read_slot(slot, proc_macro2::Span::call_site())?;
                let one = self.ssa.iconst(1);
                let next = self.ssa.op(Opcode::IAdd, &[index.value, one]);
                self.set_accumulator(slot, next, index.ty);
            }
            Consumer::Any { closure, all } => {
                let slot = accumulator.unwrap_or_default();
                let Some(decided) = self.predicate(closure, item)? else { return Ok(()) };
                // `any` stops at the first `true`, `all` at the first `false`.
                self.leave_where(decided, !*all, Leave::Break, ("decided", "undecided"), |this| {
                    let answer = this.ssa.bconst(!*all);
                    this.set_accumulator(slot, answer, Ty::Bool);
                });
            }
            Consumer::Collect => {
                let slot = accumulator.unwrap_or_default();
                let span = proc_macro2::Span::call_site();
                let (count, buffer) = (self.read_slot(slot, span)?, self.read_slot(slot + 1, span)?);
                if matches!(item, Item::Pair(..) | Item::View(_)) {
                    return Err(invalid(
                        chain_span(chain),
                        "cannot collect pairs, windows or chunks; `map` them to a number first",
                    ));
                }
                let value = self.item_value(item);
                if value.ty != Ty::F64 {
                    return Err(unsupported(
                        chain_span(chain),
                        format!("vectors of `{}` (a `Vec` holds `f64` here)", value.ty),
                        "`map` the items to `f64`: `.map(|i| i as f64)`",
                    ));
                }
                self.ssa.store(buffer.value, count.value, value.value);
                let one = self.ssa.iconst(1);
                let next = self.ssa.op(Opcode::IAdd, &[count.value, one]);
                self.set_accumulator(slot, next, count.ty);
            }
            Consumer::Count => {
                let slot = accumulator.unwrap_or_default();
                let acc = self.read_slot(slot, proc_macro2::Span::call_site())?;
                let one = self.ssa.iconst(1);
                let next = self.ssa.op(Opcode::IAdd, &[acc.value, one]);
                self.set_accumulator(slot, next, acc.ty);
            }
        }
        self.scopes.pop();
        self.continue_edge();
        Ok(())
    }

    /// The `bool` the closure gives for `item` (`None` where its body diverges).
    pub(crate) fn predicate(&mut self, closure: &syn::ExprClosure, item: Item) -> Result<Option<Value>> {
        match self.apply_closure(closure, vec![item], Some(&Ty::Bool))? {
            Lowered::Value(op) if op.ty == Ty::Bool => Ok(Some(op.value)),
            Lowered::Never => Ok(None),
            other => Err(type_error(closure.body.span(), &Ty::Bool, &other.ty(), Some(&closure.body))),
        }
    }

    /// Leave the iteration (by `break` or `continue`) where `cond == when`, after `on_leave`
    /// ran there; go on where it does not. `labels` name the two blocks (leaving, going on).
    pub(crate) fn leave_where(
        &mut self,
        cond: Value,
        when: bool,
        how: Leave,
        labels: (&str, &str),
        on_leave: impl FnOnce(&mut Self),
    ) {
        let leave = self.ssa.new_block(labels.0);
        let stay = self.ssa.new_block(labels.1);
        let reachable = self.ssa.reachable;
        if when {
            self.ssa.branch(cond, leave, stay);
        } else {
            self.ssa.branch(cond, stay, leave);
        }
        let before = self.scopes.snapshot();
        self.ssa.switch_to(leave, reachable);
        on_leave(self);
        match how {
            Leave::Break => self.break_edge(),
            Leave::Continue => self.continue_edge(),
        }
        self.scopes.restore(&before);
        self.ssa.switch_to(stay, reachable);
    }

    pub(crate) fn set_accumulator(&mut self, slot: usize, value: Value, ty: Ty) {
        let slot = self.scopes.slot_mut(slot);
        slot.ty = ty;
        slot.state.value = Some(value);
    }

    /// Lower a closure's body inline with its parameters bound to `args`. The body may read the
    /// enclosing function's variables but not assign them, and cannot `return`, `break` or
    /// `continue` out.
    pub(crate) fn apply_closure(
        &mut self,
        closure: &syn::ExprClosure,
        args: Vec<Item>,
        expect: Option<&Ty>,
    ) -> Result<Lowered> {
        if closure.inputs.len() != args.len() {
            return Err(invalid(
                closure.span(),
                format!(
                    "this closure takes {} parameter{} but is given {}; write `|{}| ...`",
                    closure.inputs.len(),
                    if closure.inputs.len() == 1 { "" } else { "s" },
                    args.len(),
                    if args.len() == 2 { "acc, v" } else { "v" }
                ),
            ));
        }
        if let Some(a) = &closure.asyncness {
            return Err(unsupported(a.span(), "async closures", "write a plain closure"));
        }
        let expect = match &closure.output {
            syn::ReturnType::Type(_, ty) => Some(crate::types::parse_type(ty, crate::types::TypePlace::Local)?),
            syn::ReturnType::Default => expect.cloned(),
        };
        let floor = self.scopes.len();
        self.scopes.push();
        let outer_floor = self.closure_floor.replace(floor);
        let outer_moves = std::mem::replace(&mut self.closure_moves, closure.capture.is_some());
        let outer_loops = std::mem::take(&mut self.loops);
        let mut result = Ok(());
        for (pat, item) in closure.inputs.iter().zip(args) {
            result = result.and_then(|()| self.bind_item(pat, item));
        }
        let value = result.and_then(|()| self.lower_expr(&closure.body, expect.as_ref()));
        self.loops = outer_loops;
        self.closure_floor = outer_floor;
        self.closure_moves = outer_moves;
        self.scopes.truncate(floor);
        self.scopes.pop();
        let value = value?;
        if let (Some(want), Lowered::Value(op)) = (&expect, &value)
            && !op.ty.fits(want)
        {
            return Err(type_error(closure.body.span(), want, &op.ty, Some(&closure.body)));
        }
        // Put the result type back on the value (integer literals take the expected type).
        Ok(match (value, expect) {
            (Lowered::Value(op), Some(want)) if want.is_scalar() => {
                Lowered::Value(Operand { value: op.value, ty: want })
            }
            (value, _) => value,
        })
    }
}

fn chain_span(chain: &Chain<'_>) -> proc_macro2::Span {
    crate::iter::source_start(&chain.source)
}
