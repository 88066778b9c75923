//! Building `f_pullback`: the reversed control flow of `f`, which restores what the forward
//! function recorded (see [`StatePlan`]) and accumulates adjoints backwards.

use super::loop_state::LoopStatePlan;
use super::{Deriver, Forward, Plan, PlannedCoef};
use crate::activity::Activity;
use crate::liveness::Liveness;
use crate::state::StatePlan;
use jitdiff_ir::analysis::ControlFlow;
use jitdiff_ir::{
    Block, BlockCall, Callee, CondCode, FuncId, Function, Imm, InstData, Opcode, Terminator, Type, Value,
};
use jitdiff_rules::{BlockEmitter, Emit};
use rustc_hash::FxHashMap as HashMap;

impl Deriver<'_> {
    /// `f_pullback`: the reversed control flow, popping what `f_fwd` pushed.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn build_pullback(
        &mut self,
        source: &Function,
        pb_id: FuncId,
        wrt: &[bool],
        stable: &[bool],
        activity: &Activity,
        forward: &Forward,
    ) -> Function {
        let Forward { func: fwd, plans, merge_edges, returns, state, loops, local_arrays, frozen, tables } = forward;
        let cfg = ControlFlow::new(source);
        let liveness = Liveness::analyse(source, &cfg, activity);
        let mut func = self.out.functions[pb_id.index()].clone();
        // Stable primal slices, differential slices, and result cotangents, by position.
        let mut next_param = func.params.iter().copied();
        let mut primal_slice: HashMap<Value, Value> = HashMap::default();
        let mut fwd_slice: HashMap<Value, Value> = HashMap::default();
        for (k, (&p, &on)) in source.params.iter().zip(stable).enumerate() {
            if on {
                let param = next_param.next().expect("one slice per stable slice parameter");
                primal_slice.insert(p, param);
                fwd_slice.insert(fwd.params[k], param);
            }
        }
        let mut dslice: HashMap<Value, Value> = HashMap::default();
        for (&p, &on) in source.params.iter().zip(wrt) {
            if on && source.ty(p).is_slice() {
                dslice.insert(p, next_param.next().expect("one d-slice per differentiated slice"));
            }
        }
        let cotangents: Vec<Option<Value>> = source
            .returns
            .iter()
            .map(|&t| (t == Type::F64).then(|| next_param.next().expect("one cotangent per f64 result")))
            .collect();

        let start = func.add_block("start");
        let mut rev: HashMap<Block, Block> = HashMap::default();
        let mut loop_plan = LoopStatePlan::new(source, &cfg, loops, returns);
        for &b in cfg.reverse_post_order() {
            let rb = func.add_block(&format!("rev_{}", source.block(b).name));
            for &v in liveness.at_end(b) {
                let label = format!("adj_{}", source.value_label(v));
                func.add_block_param(rb, Type::F64, Some(&label));
            }
            // The trip count and the carried values of the counted loops around `b` that it
            // receives as parameters, in the order of `loops`.
            for k in loops.containing(b).into_iter().filter(|&k| loop_plan.has_params(b, k)) {
                func.add_block_param(rb, Type::I64, Some("trip"));
                for (carry, t) in state.carried[k].iter().zip(state.carried_types(k, fwd)) {
                    func.add_block_param(rb, t, fwd.values[carry.value().index()].name.as_deref());
                }
            }
            rev.insert(b, rb);
        }
        // The start: seed the returning block's adjoints with the result cotangents.
        let mut em = BlockEmitter::new(&mut func, start);
        let mut seeds = vec![];
        for &r in returns {
            let Some(Terminator::Return(vals)) = &source.block(r).term else { unreachable!("a returning block") };
            let args: Vec<Value> = liveness
                .at_end(r)
                .iter()
                .map(|&v| {
                    let mut sum: Option<Value> = None;
                    for (k, &rv) in vals.iter().enumerate() {
                        if let (true, Some(c)) = (rv == v, cotangents[k]) {
                            sum = Some(add(&mut em, sum, c));
                        }
                    }
                    sum.unwrap_or_else(|| em.fconst(0.0))
                })
                .collect();
            seeds.push(BlockCall { block: rev[&r], args: args.into() });
        }
        // `f_fwd` pushed the once-per-call values, then which block returned: pop in reverse.
        let which = (seeds.len() > 1).then(|| em.emit(Opcode::TPop, &[], Imm::Type(Type::I64)));
        let global = state.restore_global(&mut em, fwd, fwd_slice);
        // Differentials of active local arrays: zeroed, owned by this call (like the arrays).
        for &(array, len) in local_arrays {
            let len = state.value(&mut em, &global, len);
            dslice.insert(array, em.emit(Opcode::Alloc, &[len], Imm::None));
        }
        // Copies of the frozen local arrays, for the callee pullbacks: lengths, then entries,
        // last array first.
        let mut copies = vec![];
        for &array in frozen.iter().rev() {
            let len = em.emit(Opcode::TPop, &[], Imm::Type(Type::I64));
            let copy = em.emit(Opcode::Alloc, &[len], Imm::None);
            em.func().set_value_name(copy, &source.value_label(array));
            primal_slice.insert(array, copy);
            copies.push((copy, len));
        }
        let mut tail = start;
        for (copy, len) in copies {
            tail = super::frozen::pop_array(&mut func, tail, copy, len);
        }
        let term = match which {
            None => Terminator::Jump(seeds.pop().expect("one seed")),
            Some(which) => dispatch(&mut func, tail, which, seeds),
        };
        func.block_mut(tail).term = Some(term);

        for b in loop_plan.build_order(cfg.reverse_post_order(), loops) {
            let rb = rev[&b];
            let block = source.block(b);
            let params = func.block(rb).params.clone();
            let live = liveness.at_end(b);
            let mut adj: HashMap<Value, Value> = live.iter().copied().zip(params.iter().copied()).collect();
            let mut rest = params[live.len()..].iter().copied();
            let loop_state: Vec<(usize, Value, Vec<Value>)> = loops
                .containing(b)
                .into_iter()
                .map(|k| {
                    if !loop_plan.has_params(b, k) {
                        let (trip, carried) = loop_plan.values(b, k);
                        return (k, trip, carried);
                    }
                    let trip = rest.next().expect("a trip parameter");
                    (k, trip, rest.by_ref().take(state.carried[k].len()).collect())
                })
                .collect();
            let trips: HashMap<Block, Value> =
                loop_state.iter().map(|(k, trip, _)| (loops.loops[*k].header, *trip)).collect();
            let mut em = BlockEmitter::new(&mut func, rb);
            let restored = state.restore_block(&mut em, fwd, b, &global, &loop_state);
            for &(k, _, _) in &loop_state {
                loop_plan.set_latch_values(b, k, || state.carried_values(k, &restored));
            }
            let known = Known { state, restored: &restored, dslice: &dslice, primal_slice: &primal_slice, tables };
            for (index, inst) in block.insts.iter().enumerate().rev() {
                self.reverse_inst(&mut em, source, inst, &plans[&(b, index)], &mut adj, &known);
            }
            let term = if b == Block::ENTRY {
                let grads: Vec<Value> = source
                    .params
                    .iter()
                    .zip(wrt)
                    .filter(|(p, on)| **on && source.ty(**p) == Type::F64)
                    .map(|(p, _)| adj.get(p).copied().unwrap_or_else(|| em.fconst(0.0)))
                    .collect();
                Terminator::Return(grads)
            } else {
                let edges: Vec<(Block, usize)> = match merge_edges.get(&b) {
                    Some(e) => e.clone(),
                    None => {
                        let p = cfg.predecessors(b)[0];
                        let slot = source
                            .block(p)
                            .term
                            .as_ref()
                            .expect("terminated")
                            .successors()
                            .iter()
                            .position(|c| c.block == b)
                            .expect("edge");
                        vec![(p, slot)]
                    }
                };
                let counted = loops.headed_by(b).map(|k| &loops.loops[k]);
                // Running the reversed back edge means one iteration fewer to go.
                let previous_trip = counted.map(|l| {
                    let one = em.emit(Opcode::IConst, &[], Imm::I64(1));
                    em.emit(Opcode::ISub, &[trips[&l.header], one], Imm::None)
                });
                if let (Some(k), Some(trip)) = (loops.headed_by(b), previous_trip) {
                    loop_plan.set_header_values(k, trip, state.carried_values(k, &restored));
                }
                let mut targets: Vec<(BlockCall, Block)> = edges
                    .iter()
                    .map(|&(p, slot)| {
                        let term = source.block(p).term.as_ref().expect("terminated");
                        let call = term.successors()[slot];
                        let args = liveness
                            .at_end(p)
                            .iter()
                            .map(|&v| {
                                // Live through `b` (defined before it), plus what `b`'s parameters
                                // received from `v` on this edge.
                                let mut sum = if block.params.contains(&v) { None } else { adj.get(&v).copied() };
                                for (k, &a) in call.args.iter().enumerate() {
                                    if a == v
                                        && let Some(&c) = adj.get(&block.params[k])
                                    {
                                        sum = Some(add(&mut em, sum, c));
                                    }
                                }
                                sum.unwrap_or_else(|| em.fconst(0.0))
                            })
                            .collect::<Vec<Value>>();
                        let mut args = args;
                        // Trip counts and carried values of the loops around `p`: passed on, or
                        // (for loops this edge left in `f_fwd`) popped on the way, below.
                        for k in loops.containing(p).into_iter().filter(|&k| loop_plan.has_params(p, k)) {
                            let header = loops.loops[k].header;
                            if counted.is_some_and(|l| l.header == header && l.back_edge == (p, slot)) {
                                args.extend(previous_trip);
                                args.extend(state.carried_values(k, &restored));
                            } else if let Some(&trip) = trips.get(&header) {
                                args.push(trip);
                                args.extend(state.carried_values(k, &restored));
                            }
                        }
                        (BlockCall { block: rev[&p], args: args.into() }, p)
                    })
                    .collect();
                // A reversed edge entering loops goes through a block that pops their trip counts
                // and carried values, or takes what this block computes instead.
                let calls: Vec<BlockCall> = targets
                    .drain(..)
                    .map(|(call, p)| {
                        let exited = loops.exited(p, b);
                        if exited.is_empty() {
                            return call;
                        }
                        let mut em = BlockEmitter::new(&mut func, rb);
                        let derived: HashMap<usize, LoopEntry> =
                            exited.iter().map(|&k| (k, state.exit_values(&mut em, &restored, &trips, k))).collect();
                        let carried = |k: usize| state.carried_types(k, fwd);
                        let around: Vec<usize> =
                            loops.containing(p).into_iter().filter(|&k| loop_plan.has_params(p, k)).collect();
                        enter_loops(&mut func, call, &around, &exited, &carried, &derived)
                    })
                    .collect();
                if let Some(l) = counted {
                    let entry = edges.iter().position(|&e| e == l.entry_edge).expect("the entry edge is an edge");
                    let mut em = BlockEmitter::new(&mut func, rb);
                    let zero = em.emit(Opcode::IConst, &[], Imm::I64(0));
                    let first = em.emit(Opcode::ICmp, &[trips[&l.header], zero], Imm::Cond(CondCode::Eq));
                    let mut calls = calls;
                    let then_dest = calls.remove(entry);
                    let else_dest = calls.pop().expect("the back edge");
                    Terminator::Branch { cond: first, then_dest, else_dest }
                } else if calls.len() == 1 {
                    Terminator::Jump(calls.into_iter().next().expect("one target"))
                } else {
                    let from = BlockEmitter::new(&mut func, rb).emit(Opcode::TPop, &[], Imm::Type(Type::I64));
                    dispatch(&mut func, rb, from, calls)
                }
            };
            func.block_mut(rb).term = Some(term);
        }
        func.canonicalize();
        func
    }

    /// The reverse of one instruction: pop what it pushed, propagate its result's adjoint.
    fn reverse_inst(
        &self,
        em: &mut BlockEmitter<'_>,
        source: &Function,
        inst: &InstData,
        plan: &Plan,
        adj: &mut HashMap<Value, Value>,
        known: &Known<'_>,
    ) {
        let saved = |em: &mut BlockEmitter<'_>, v: Value| known.state.value(em, known.restored, v);
        let dslice = known.dslice;
        match plan {
            Plan::Inactive => {}
            Plan::Terms { terms } => {
                let Some(bar) = adj.remove(&inst.results[0]) else { return };
                // An operand used twice (`x - x`, `x * x`) gets its partials summed before they
                // join its adjoint, as forward mode sums its tangents: added one by one, a huge
                // pair that cancels (`+c`, `-c`) would absorb what the adjoint held already.
                let repeated = terms
                    .iter()
                    .enumerate()
                    .any(|(k, &(a, _))| terms[..k].iter().any(|&(b, _)| inst.args[a] == inst.args[b]));
                let mut grouped: Vec<(Value, Value)> = vec![];
                for &(operand, coef) in terms {
                    let contribution = match coef {
                        PlannedCoef::One => bar,
                        PlannedCoef::MinusOne => em.un(Opcode::FNeg, bar),
                        // Strong-zero products where an infinite factor can occur (`singular.rs`).
                        PlannedCoef::Scale(s) => {
                            let partial = saved(em, s);
                            let op = if self.singular.guards_every_product() { Opcode::FMulSz } else { Opcode::FMul };
                            em.bin(op, partial, bar)
                        }
                        PlannedCoef::ScaleStrong(s) => {
                            let partial = saved(em, s);
                            em.bin(Opcode::FMulSz, partial, bar)
                        }
                        PlannedCoef::When(s) => {
                            let (condition, zero) = (saved(em, s), em.fconst(0.0));
                            em.emit(Opcode::Select, &[condition, bar, zero], Imm::None)
                        }
                        PlannedCoef::Unless(s) => {
                            let (condition, zero) = (saved(em, s), em.fconst(0.0));
                            em.emit(Opcode::Select, &[condition, zero, bar], Imm::None)
                        }
                    };
                    let target = inst.args[operand];
                    if !repeated {
                        accumulate(em, adj, target, contribution);
                    } else if let Some((_, sum)) = grouped.iter_mut().find(|(v, _)| *v == target) {
                        *sum = em.bin(Opcode::FAdd, *sum, contribution);
                    } else {
                        grouped.push((target, contribution));
                    }
                }
                for (target, contribution) in grouped {
                    accumulate(em, adj, target, contribution);
                }
            }
            Plan::Load { index } => {
                let index = saved(em, *index);
                if let Some(bar) = adj.remove(&inst.results[0]) {
                    let d = dslice[&inst.args[0]];
                    let old = em.emit(Opcode::Load, &[d, index], Imm::None);
                    let new = em.bin(Opcode::FAdd, old, bar);
                    em.emit_multi(Opcode::Store, &[d, index, new], Imm::None, &[]);
                }
            }
            Plan::Store { index, value_active } => {
                // The stored value received whatever cotangent the location had; the location's
                // earlier content was overwritten, so its cotangent restarts at zero.
                let index = saved(em, *index);
                let d = dslice[&inst.args[0]];
                let bar = em.emit(Opcode::Load, &[d, index], Imm::None);
                if *value_active {
                    accumulate(em, adj, inst.args[2], bar);
                }
                // -0.0, IEEE's additive identity (+0.0 is not: +0 + -0 = +0), so that a later
                // `fadd` of this zero is exactly its other operand and folds away (see
                // `forward_stores.rs`). It compares equal to 0.0; only its sign bit shows.
                let zero = em.fconst(-0.0);
                em.emit_multi(Opcode::Store, &[d, index, zero], Imm::None, &[]);
            }
            Plan::Call { pullback, mask, stable, joint } => {
                let callee = self.out.func(*pullback).clone();
                // Joint mode: record the callee's state now, above the entries still to be read.
                let split = joint.as_ref().map(|(fwd, saved_args)| {
                    let split = em.emit(Opcode::TSplit, &[], Imm::None);
                    let fwd_args: Vec<Value> = saved_args
                        .iter()
                        .zip(&inst.args)
                        .map(|(&a, source_arg)| match source.ty(*source_arg).is_slice() {
                            true => stable_slice(em, known, source_arg),
                            false => saved(em, a),
                        })
                        .collect();
                    let returns = self.out.func(*fwd).returns.clone();
                    em.emit_multi(Opcode::Call, &fwd_args, Imm::Callee(Callee::Func(*fwd)), &returns);
                    split
                });
                let mut args = vec![];
                for (a, &on) in inst.args.iter().zip(stable) {
                    if on {
                        args.push(stable_slice(em, known, a));
                    }
                }
                for (a, &on) in inst.args.iter().zip(mask) {
                    if on && source.ty(*a).is_slice() {
                        args.push(dslice[a]);
                    }
                }
                for &r in &inst.results {
                    if source.ty(r) == Type::F64 {
                        // A joint call's missing cotangent is -0.0, the additive identity, so
                        // that its segment's accumulations match the unbounded pullback's.
                        let zero = if joint.is_some() { -0.0 } else { 0.0 };
                        let bar = adj.remove(&r).unwrap_or_else(|| em.fconst(zero));
                        args.push(bar);
                    }
                }
                let grads = em.emit_multi(Opcode::Call, &args, Imm::Callee(Callee::Func(*pullback)), &callee.returns);
                if let Some(split) = split {
                    em.emit_multi(Opcode::TRejoin, &[split], Imm::None, &[]);
                }
                let mut grads = grads.into_iter();
                for (a, &on) in inst.args.iter().zip(mask) {
                    if on && source.ty(*a) == Type::F64 {
                        let g = grads.next().expect("one cotangent per differentiated f64 argument");
                        accumulate(em, adj, *a, g);
                    }
                }
            }
        }
    }

    /// `f_value_and_grad`: `f_fwd`, then `f_pullback` seeded with 1 for the first `f64` result.
    pub(super) fn value_and_grad(
        &mut self,
        id: FuncId,
        wrt: &[bool],
        stable: &[bool],
        fwd: FuncId,
        pullback: FuncId,
    ) -> FuncId {
        let source = self.source.func(id);
        let name = self.unique_name(&format!("{}_value_and_grad", source.name));
        let mut func = Function::new(name, source.returns.clone());
        let params: Vec<Value> = source
            .params
            .iter()
            .map(|&p| func.add_param(source.ty(p), source.values[p.index()].name.as_deref()))
            .collect();
        let mut dslices = vec![];
        for (&p, &on) in source.params.iter().zip(wrt) {
            if on && source.ty(p).is_slice() {
                dslices.push(func.add_param(Type::SliceMut, Some(&format!("d_{}", source.value_label(p)))));
            }
        }
        let entry = func.add_block("entry");
        let mut em = BlockEmitter::new(&mut func, entry);
        let results = em.emit_multi(Opcode::Call, &params, Imm::Callee(Callee::Func(fwd)), &source.returns);
        let mut args: Vec<Value> = params.iter().zip(stable).filter(|(_, on)| **on).map(|(&p, _)| p).collect();
        args.extend(dslices);
        let mut seeded = false;
        for &t in &source.returns {
            if t == Type::F64 {
                args.push(em.fconst(if seeded { 0.0 } else { 1.0 }));
                seeded = true;
            }
        }
        let grad_types = self.out.func(pullback).returns.clone();
        let grads = em.emit_multi(Opcode::Call, &args, Imm::Callee(Callee::Func(pullback)), &grad_types);
        func.returns.extend(grad_types);
        let mut out = results;
        out.extend(grads);
        func.block_mut(entry).term = Some(Terminator::Return(out));
        func.canonicalize();
        self.out.push_function(func)
    }
}

/// What a reversed block knows besides adjoints: the forward values restored at its start,
/// and the pullback's slices.
struct Known<'a> {
    state: &'a StatePlan,
    /// Forward value → pullback value, for everything restored or recomputed.
    restored: &'a HashMap<Value, Value>,
    /// Differentiated slice parameter (source) → its differential slice.
    dslice: &'a HashMap<Value, Value>,
    /// Stable slice parameter (source) → the pullback's copy of it.
    primal_slice: &'a HashMap<Value, Value>,
    /// The source values that are data tables, with their immediates.
    tables: &'a HashMap<Value, Imm>,
}

/// The pullback's copy of a stable slice of the source: a stable slice parameter or frozen
/// array, or else a table, re-created.
fn stable_slice(em: &mut BlockEmitter<'_>, known: &Known<'_>, slice: &Value) -> Value {
    match (known.primal_slice.get(slice), known.tables.get(slice)) {
        (Some(&copy), _) => copy,
        (None, Some(&table)) => em.emit(Opcode::Table, &[], table),
        (None, None) => unreachable!("a stable callee slice is a parameter, an array or a table"),
    }
}

/// A loop's trip count and carried values where the pullback computed them (`None`: popped).
type LoopEntry = (Option<Value>, Vec<Option<Value>>);

/// A block that pops the state of the loops `exited` — per loop, pushed by `f_fwd` on the edge
/// leaving them in that order: the values the loop carries (of types `carried(k)`), then its
/// trip count, each unless `derived` has it — and continues with `call`. `call` carries the
/// target's adjoints and the state of the loops `around` the target that the edge did not
/// leave; the loops' state goes in its places, in the order of `around`.
fn enter_loops(
    func: &mut Function,
    call: BlockCall,
    around: &[usize],
    exited: &[usize],
    carried: &dyn Fn(usize) -> Vec<Type>,
    derived: &HashMap<usize, LoopEntry>,
) -> BlockCall {
    let label = format!("{}_enter", func.block(call.block).name);
    let block = func.add_block(&label);
    let types: Vec<Type> = call.args.iter().map(|&a| func.ty(a)).collect();
    let params: Vec<Value> = types.into_iter().map(|t| func.add_block_param(block, t, None)).collect();
    let mut em = BlockEmitter::new(func, block);
    let mut popped: HashMap<usize, Vec<Value>> = HashMap::default();
    for &k in exited.iter().rev() {
        let (trip, values) = &derived[&k];
        let trip = trip.unwrap_or_else(|| em.emit(Opcode::TPop, &[], Imm::Type(Type::I64)));
        let mut values: Vec<Value> = carried(k)
            .iter()
            .zip(values)
            .rev()
            .map(|(&t, value)| value.unwrap_or_else(|| em.emit(Opcode::TPop, &[], Imm::Type(t))))
            .collect();
        values.push(trip);
        values.reverse();
        popped.insert(k, values);
    }
    let passed_len: usize = around.iter().filter(|k| !exited.contains(k)).map(|&k| 1 + carried(k).len()).sum();
    let adjoints = params.len() - passed_len;
    let mut passed = params[adjoints..].iter().copied();
    let mut args = params[..adjoints].to_vec();
    for k in around {
        match popped.get(k) {
            Some(values) => args.extend(values),
            None => args.extend(passed.by_ref().take(1 + carried(*k).len())),
        }
    }
    func.block_mut(block).term = Some(Terminator::Jump(BlockCall { block: call.block, args: args.into() }));
    BlockCall { block, args: call.args }
}

/// `sum + c`, or `c` when there is no sum yet.
fn add(em: &mut BlockEmitter<'_>, sum: Option<Value>, c: Value) -> Value {
    match sum {
        Some(s) => em.bin(Opcode::FAdd, s, c),
        None => c,
    }
}

/// `adj[v] += c`.
fn accumulate(em: &mut BlockEmitter<'_>, adj: &mut HashMap<Value, Value>, v: Value, c: Value) {
    let sum = add(em, adj.get(&v).copied(), c);
    adj.insert(v, sum);
}

/// End `from_block` with a dispatch on `selector` (0, 1, ...) to `targets`: a chain of
/// compare-and-branch blocks; the last target needs no compare.
fn dispatch(func: &mut Function, from_block: Block, selector: Value, mut targets: Vec<BlockCall>) -> Terminator {
    let last = targets.pop().expect("at least one target");
    if targets.is_empty() {
        return Terminator::Jump(last);
    }
    let mut terms: Vec<(Block, Terminator)> = vec![];
    let mut current = from_block;
    let count = targets.len();
    for (k, target) in targets.into_iter().enumerate() {
        let mut em = BlockEmitter::new(func, current);
        let id = em.emit(Opcode::IConst, &[], Imm::I64(k as i64));
        let is_k = em.emit(Opcode::ICmp, &[selector, id], Imm::Cond(CondCode::Eq));
        let next = if k + 1 == count { None } else { Some(func.add_block("dispatch")) };
        let else_dest = match next {
            Some(n) => BlockCall { block: n, args: smallvec::smallvec![] },
            None => last.clone(),
        };
        terms.push((current, Terminator::Branch { cond: is_k, then_dest: target, else_dest }));
        if let Some(n) = next {
            current = n;
        }
    }
    let (first_block, first_term) = terms.remove(0);
    debug_assert_eq!(first_block, from_block);
    for (b, t) in terms {
        func.block_mut(b).term = Some(t);
    }
    first_term
}
