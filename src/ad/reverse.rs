//! The reverse-mode transform (IR → IR), in the style of ChainRules' `rrule`: for a function `f`
//! it derives
//!
//! - `f_fwd(params) -> results`: the primal computation, which also records on the call's tape
//!   what the pullback needs — the partial derivatives of active operations (their
//!   [`linearize`] coefficients), the indices of active loads and stores, which incoming edge
//!   entered each merge block (branch decisions and, at loop headers, trip counts), and which
//!   block returned;
//! - `f_pullback(d_slices, result cotangents) -> parameter cotangents`: the control flow run
//!   backwards (Slang's "transpose" of the linearized program), popping the tape in reverse
//!   order and accumulating adjoints. Adjoints of values live across blocks travel as block
//!   parameters of the reversed blocks; the differential slices of differentiated slice
//!   parameters are accumulated into (`+=`), and entries overwritten by a `store` are moved to
//!   the stored value's adjoint.
//!
//! A call to a module function records the callee's state nested on the same tape (it calls
//! the callee's `_fwd`) and its reverse calls the callee's `_pullback`. The state of `f` is
//! therefore the tape segment its `_fwd` wrote: fixed-size parts and per-iteration parts alike.

use super::activity::Activity;
use super::custom::CustomRules;
use super::error::AdError;
use super::liveness::Liveness;
use super::request::{checked_function, differentiation_source};
use jitdiff_ir::analysis::ControlFlow;
use jitdiff_ir::{
    Block, BlockCall, Callee, CondCode, FuncId, Function, Imm, InstData, Module, Opcode, Terminator, Type, Value,
    passes, verify_module,
};
use jitdiff_rules::{BlockEmitter, Coef, Emit, Linearization, RuleSet, linearize};
use std::collections::HashMap;

/// The reverse-mode derivative of a function, inside a module that also holds the originals.
#[derive(Clone, Debug)]
pub struct ReverseDerivative {
    /// The original functions followed by every derived function the request needed.
    pub module: Module,
    /// `f_fwd`: same signature as `f`; records the pullback state on the tape.
    pub forward: String,
    /// `f_pullback(d_slices..., cotangents...) -> cotangents`: one mutable differential slice
    /// per differentiated slice parameter, one cotangent per `f64` result; returns one cotangent
    /// per differentiated `f64` parameter.
    pub pullback: String,
    /// `f_value_and_grad(params..., d_slices...) -> (results..., cotangents...)`: `f_fwd` then
    /// `f_pullback` with cotangent 1 for the first `f64` result (0 for the others). Present when
    /// `f` has at least one `f64` result.
    pub value_and_grad: Option<String>,
    /// Which parameters are differentiated.
    pub wrt: Vec<bool>,
}

/// Derive the reverse mode of `@func` for the differentiated parameters `wrt` (only `f64` and
/// slice parameters may be set). The result is optimised and verified.
///
/// ```
/// use jitdiff::ad::derive_reverse;
/// use jitdiff::ir::{parse_module, Interpreter, Tape, ArgValue, RuntimeValue};
/// let m = parse_module("func @f(x: f64, y: f64) -> f64 {\nentry:\n    p = fmul x, y\n    s = sin p\n    ret s\n}").unwrap();
/// let d = derive_reverse(&m, "f", &[true, true]).unwrap();
/// let vg = d.value_and_grad.unwrap();
/// let out = Interpreter::new(&d.module)
///     .call_with_tape(&vg, &mut [ArgValue::F64(2.0), ArgValue::F64(3.0)], &mut Tape::new())
///     .unwrap();
/// // (sin 6, 3 cos 6, 2 cos 6)
/// assert_eq!(out[1], RuntimeValue::F64(3.0 * 6.0f64.cos()));
/// assert_eq!(out[2], RuntimeValue::F64(2.0 * 6.0f64.cos()));
/// ```
pub fn derive_reverse(module: &Module, func: &str, wrt: &[bool]) -> Result<ReverseDerivative, AdError> {
    derive_reverse_with_rules(module, func, wrt, &RuleSet::new())
}

/// [`derive_reverse`] with custom rules: a call of a function or extern that has a rule in
/// `rules` records the rule's partials (its pullback's capture) instead of deriving the callee.
pub fn derive_reverse_with_rules(
    module: &Module,
    func: &str,
    wrt: &[bool],
    rules: &RuleSet,
) -> Result<ReverseDerivative, AdError> {
    verify_module(module)?;
    let id = checked_function(module, func, wrt)?;
    let f = module.func(id);
    let cleaned = differentiation_source(module);
    let mut deriver =
        Deriver { source: &cleaned, out: module.clone(), cache: HashMap::new(), custom: CustomRules::new(rules) };
    let (fwd, pullback) = deriver.derive(id, wrt)?;
    let value_and_grad =
        if f.returns.contains(&Type::F64) { Some(deriver.value_and_grad(id, wrt, fwd, pullback)) } else { None };
    let mut out = deriver.out;
    passes::optimize(&mut out);
    verify_module(&out).map_err(|e| AdError::DerivedInvalid(Box::new(e)))?;
    Ok(ReverseDerivative {
        forward: out.func(fwd).name.clone(),
        pullback: out.func(pullback).name.clone(),
        value_and_grad: value_and_grad.map(|v| out.func(v).name.clone()),
        module: out,
        wrt: wrt.to_vec(),
    })
}

/// What the forward function recorded for one instruction, so the pullback can pop it.
#[derive(Clone, Debug)]
enum Plan {
    /// Nothing recorded, nothing to propagate.
    Inactive,
    /// Pointwise: `terms[k] = (operand, coefficient)`; `pushed` values were pushed in order.
    Terms { terms: Vec<(usize, PlannedCoef)>, pushed: Vec<Type> },
    /// `load` from a differentiated slice: the index is saved.
    Load { index: Saved },
    /// `store` into a differentiated slice: the index is saved. `value_active` says whether
    /// the stored value carries an adjoint.
    Store { index: Saved, value_active: bool },
    /// A call to a derived callee rule.
    Call { pullback: FuncId, mask: Vec<bool> },
}

/// A [`Coef`] whose values the pullback gets back as [`Saved`].
#[derive(Clone, Copy, Debug)]
enum PlannedCoef {
    One,
    MinusOne,
    Scale(Saved),
    ScaleStrong(Saved),
    When(Saved),
    Unless(Saved),
}

/// How the pullback gets back a forward value it needs: from the tape (`Slot` indexes the
/// values one instruction pushed), or — for a constant — by re-creating it, which costs the
/// forward pass no store and the tape no entry (e.g. the `100` of Rosenbrock's `100 * v^2`,
/// which would otherwise be pushed once per loop iteration).
#[derive(Clone, Copy, Debug)]
enum Saved {
    Slot(usize),
    Const(Opcode, Imm),
}

/// Forward values defined by `fconst`/`iconst`, with their opcode and immediate.
type Constants = HashMap<Value, (Opcode, Imm)>;

/// The forward values known to be constants: `fconst`/`iconst` copied from the source (any
/// block), and those a rule just emitted (the last few instructions of the current block).
fn constant_def(em: &mut BlockEmitter<'_>, copied: &Constants, v: Value) -> Option<(Opcode, Imm)> {
    if let Some(&c) = copied.get(&v) {
        return Some(c);
    }
    let block = em.block();
    em.func().block(block).insts.iter().rev().take(8).find_map(|i| match (i.op, i.results.first()) {
        (Opcode::FConst | Opcode::IConst, Some(&r)) if r == v => Some((i.op, i.imm)),
        _ => None,
    })
}

struct Deriver<'m> {
    source: &'m Module,
    out: Module,
    cache: HashMap<(FuncId, Vec<bool>), (FuncId, FuncId)>,
    custom: CustomRules<'m>,
}

impl Deriver<'_> {
    fn derive(&mut self, id: FuncId, wrt: &[bool]) -> Result<(FuncId, FuncId), AdError> {
        if let Some(&done) = self.cache.get(&(id, wrt.to_vec())) {
            return Ok(done);
        }
        let source = self.source.func(id);
        let suffix = if wrt.iter().all(|&on| on) {
            String::new()
        } else {
            format!("_{}", wrt.iter().map(|&on| if on { '1' } else { '0' }).collect::<String>())
        };
        let fwd_name = self.unique_name(&format!("{}_fwd{suffix}", source.name));
        let pb_name = self.unique_name(&format!("{}_pullback{suffix}", source.name));
        // Reserve both slots with their final signatures, so recursive calls can refer to them.
        let mut fwd = Function::new(fwd_name, source.returns.clone());
        for &p in &source.params {
            fwd.add_param(source.ty(p), source.values[p.index()].name.as_deref());
        }
        let mut pullback = Function::new(pb_name, vec![]);
        for (&p, &on) in source.params.iter().zip(wrt) {
            if on && source.ty(p).is_slice() {
                pullback.add_param(Type::SliceMut, Some(&format!("d_{}", source.value_label(p))));
            }
        }
        for (k, &t) in source.returns.iter().enumerate() {
            if t == Type::F64 {
                pullback.add_param(Type::F64, Some(&format!("cot_{k}")));
            }
        }
        pullback.returns = source
            .params
            .iter()
            .zip(wrt)
            .filter(|(p, on)| **on && source.ty(**p) == Type::F64)
            .map(|_| Type::F64)
            .collect();
        let fwd_id = FuncId(self.out.functions.len() as u32);
        let pb_id = FuncId(fwd_id.0 + 1);
        self.out.functions.push(fwd);
        self.out.functions.push(pullback);
        self.cache.insert((id, wrt.to_vec()), (fwd_id, pb_id));

        let activity = Activity::analyse(source, wrt);
        let (fwd, plans, merge_edges, returns) = self.build_forward(source, fwd_id, &activity)?;
        self.out.functions[fwd_id.index()] = fwd;
        let pullback = self.build_pullback(source, pb_id, wrt, &activity, &plans, &merge_edges, &returns);
        self.out.functions[pb_id.index()] = pullback;
        Ok((fwd_id, pb_id))
    }

    fn unique_name(&self, base: &str) -> String {
        let mut name = base.to_string();
        let mut k = 2;
        while self.out.func_id(&name).is_some() {
            name = format!("{base}{k}");
            k += 1;
        }
        name
    }
}

/// The incoming edges of every merge block (a block entered by more than one edge), in a fixed
/// order: `(predecessor, successor slot)`. The forward function pushes the edge's position.
type MergeEdges = HashMap<Block, Vec<(Block, usize)>>;

/// Per source instruction `(block, index)`: what its forward function recorded.
type Plans = HashMap<(Block, usize), Plan>;

impl Deriver<'_> {
    /// `f_fwd`: the primal with tape pushes.
    #[allow(clippy::type_complexity)]
    fn build_forward(
        &mut self,
        source: &Function,
        fwd_id: FuncId,
        activity: &Activity,
    ) -> Result<(Function, Plans, MergeEdges, Vec<Block>), AdError> {
        let cfg = ControlFlow::new(source);
        let mut func = self.out.functions[fwd_id.index()].clone();
        let mut primal: HashMap<Value, Value> =
            source.params.iter().copied().zip(func.params.iter().copied()).collect();
        // Incoming edges per block, and the blocks that return.
        let mut incoming: HashMap<Block, Vec<(Block, usize)>> = HashMap::new();
        let mut returns = vec![];
        for &b in cfg.reverse_post_order() {
            match &source.block(b).term {
                Some(Terminator::Return(_)) => returns.push(b),
                Some(t) => {
                    for (slot, call) in t.successors().into_iter().enumerate() {
                        incoming.entry(call.block).or_default().push((b, slot));
                    }
                }
                None => {}
            }
        }
        let merge_edges: MergeEdges = incoming.into_iter().filter(|(_, edges)| edges.len() > 1).collect();
        let mut from_params: HashMap<Block, Value> = HashMap::new();
        for (index, block) in source.blocks.iter().enumerate() {
            let b = func.add_block(&block.name);
            for &p in &block.params {
                primal.insert(p, func.add_block_param(b, source.ty(p), source.values[p.index()].name.as_deref()));
            }
            if merge_edges.contains_key(&Block(index as u32)) {
                from_params.insert(b, func.add_block_param(b, Type::I64, Some("from")));
            }
        }
        for block in &source.blocks {
            for inst in &block.insts {
                for &r in &inst.results {
                    let nr = func.new_value(source.ty(r));
                    if let Some(n) = &source.values[r.index()].name {
                        func.set_value_name(nr, n);
                    }
                    primal.insert(r, nr);
                }
            }
        }
        let mut plans: Plans = HashMap::new();
        let mut constants = Constants::new();
        for &b in cfg.reverse_post_order() {
            let block = source.block(b);
            let mut em = BlockEmitter::new(&mut func, b);
            if let Some(&from) = from_params.get(&b) {
                em.emit_multi(Opcode::TPush, &[from], Imm::None, &[]);
            }
            for (index, inst) in block.insts.iter().enumerate() {
                let site = (source.name.as_str(), block.name.as_str(), index);
                let plan = self.forward_inst(&mut em, source, inst, (&primal, &mut constants), activity, site)?;
                plans.insert((b, index), plan);
            }
            let Some(term) = &block.term else { continue };
            let edge = |em: &mut BlockEmitter<'_>, slot: usize, call: &BlockCall| {
                let mut args: Vec<Value> = call.args.iter().map(|a| primal[a]).collect();
                if let Some(edges) = merge_edges.get(&call.block) {
                    let position = edges.iter().position(|&e| e == (b, slot)).expect("every edge is recorded");
                    args.push(em.emit(Opcode::IConst, &[], Imm::I64(position as i64)));
                }
                BlockCall { block: call.block, args }
            };
            let new_term = match term {
                Terminator::Jump(call) => Terminator::Jump(edge(&mut em, 0, call)),
                Terminator::Branch { cond, then_dest, else_dest } => Terminator::Branch {
                    cond: primal[cond],
                    then_dest: edge(&mut em, 0, then_dest),
                    else_dest: edge(&mut em, 1, else_dest),
                },
                Terminator::Return(vals) => {
                    if returns.len() > 1 {
                        let position = returns.iter().position(|&r| r == b).expect("a returning block");
                        let id = em.emit(Opcode::IConst, &[], Imm::I64(position as i64));
                        em.emit_multi(Opcode::TPush, &[id], Imm::None, &[]);
                    }
                    Terminator::Return(vals.iter().map(|v| primal[v]).collect())
                }
            };
            func.block_mut(b).term = Some(new_term);
        }
        func.canonicalize();
        Ok((func, plans, merge_edges, returns))
    }

    /// Copy one instruction into `f_fwd` and record what its pullback needs.
    fn forward_inst(
        &mut self,
        em: &mut BlockEmitter<'_>,
        source: &Function,
        inst: &InstData,
        (primal, constants): (&HashMap<Value, Value>, &mut Constants),
        activity: &Activity,
        (func, block, index): (&str, &str, usize),
    ) -> Result<Plan, AdError> {
        let args: Vec<Value> = inst.args.iter().map(|a| primal[a]).collect();
        let results: Vec<Value> = inst.results.iter().map(|r| primal[r]).collect();
        let active: Vec<bool> = inst.args.iter().map(|a| activity.is_active(*a)).collect();
        let unsupported =
            || AdError::Unsupported { func: func.into(), block: block.into(), inst: index, op: inst.op.spelling() };
        let rule = match inst.imm {
            Imm::Callee(callee) if inst.op == Opcode::Call => self.custom.rule_for(self.source, callee),
            _ => None,
        };
        if inst.op == Opcode::Call && rule.is_none() && active.iter().any(|&a| a) {
            let Imm::Callee(callee) = inst.imm else { unreachable!("verified call has a callee") };
            let Callee::Func(callee_id) = callee else {
                return Err(AdError::NoRule {
                    func: func.into(),
                    block: block.into(),
                    inst: index,
                    callee: self.source.callee_name(callee).into(),
                });
            };
            let callee_fn = self.source.func(callee_id);
            let mask: Vec<bool> = inst
                .args
                .iter()
                .zip(&callee_fn.params)
                .map(|(a, p)| activity.is_active(*a) && (callee_fn.ty(*p) == Type::F64 || callee_fn.ty(*p).is_slice()))
                .collect();
            let (fwd, pullback) = self.derive(callee_id, &mask)?;
            em.push(InstData { op: Opcode::Call, args, imm: Imm::Callee(Callee::Func(fwd)), results });
            return Ok(Plan::Call { pullback, mask });
        }
        em.push(InstData { op: inst.op, args: args.clone(), imm: inst.imm, results: results.clone() });
        if let (Opcode::FConst | Opcode::IConst, Some(&r)) = (inst.op, results.first()) {
            constants.insert(r, (inst.op, inst.imm));
        }
        let push = |em: &mut BlockEmitter<'_>, v: Value| em.emit_multi(Opcode::TPush, &[v], Imm::None, &[]);
        let save_index = |em: &mut BlockEmitter<'_>, v: Value| match constant_def(em, constants, v) {
            Some((op, imm)) => Saved::Const(op, imm),
            None => {
                push(em, v);
                Saved::Slot(0)
            }
        };
        match inst.op {
            Opcode::Load if active[0] => Ok(Plan::Load { index: save_index(em, args[1]) }),
            Opcode::Store if active[0] => Ok(Plan::Store { index: save_index(em, args[1]), value_active: active[2] }),
            Opcode::Store if active[2] => Err(AdError::StoreIntoInactiveSlice {
                func: func.into(),
                block: block.into(),
                inst: index,
                slice: source.value_label(inst.args[0]),
            }),
            Opcode::VLoad | Opcode::VStore | Opcode::Splat | Opcode::Extract | Opcode::Insert => {
                if active.iter().any(|&a| a) { Err(unsupported()) } else { Ok(Plan::Inactive) }
            }
            _ if inst.results.len() == 1 && activity.is_active(inst.results[0]) => {
                let linearization = match (rule, inst.imm) {
                    (Some(rule), Imm::Callee(callee)) => self.custom.linearize_call(
                        &mut self.out,
                        self.source,
                        callee,
                        rule,
                        em,
                        (&args, results[0], &active),
                    )?,
                    _ => linearize(inst.op, em, &args, results[0], &active),
                };
                match linearization {
                    Linearization::Terms(terms) => {
                        let mut pushed_values: Vec<Value> = vec![];
                        let mut slot_of = |em: &mut BlockEmitter<'_>, v: Value| {
                            if let Some((op, imm)) = constant_def(em, constants, v) {
                                return Saved::Const(op, imm);
                            }
                            if let Some(slot) = pushed_values.iter().position(|&p| p == v) {
                                return Saved::Slot(slot);
                            }
                            push(em, v);
                            pushed_values.push(v);
                            Saved::Slot(pushed_values.len() - 1)
                        };
                        let planned = terms
                            .iter()
                            .map(|t| {
                                let coef = match t.coef {
                                    Coef::One => PlannedCoef::One,
                                    Coef::MinusOne => PlannedCoef::MinusOne,
                                    Coef::Scale(p) => PlannedCoef::Scale(slot_of(em, p)),
                                    Coef::ScaleStrong(p) => PlannedCoef::ScaleStrong(slot_of(em, p)),
                                    Coef::When(c) => PlannedCoef::When(slot_of(em, c)),
                                    Coef::Unless(c) => PlannedCoef::Unless(slot_of(em, c)),
                                };
                                (t.operand, coef)
                            })
                            .collect();
                        let pushed = pushed_values.iter().map(|&v| em.ty(v)).collect();
                        Ok(Plan::Terms { terms: planned, pushed })
                    }
                    Linearization::Zero | Linearization::NoTangent => Ok(Plan::Inactive),
                    Linearization::Structural => Err(unsupported()),
                }
            }
            _ => Ok(Plan::Inactive),
        }
    }
}

impl Deriver<'_> {
    /// `f_pullback`: the reversed control flow, popping what `f_fwd` pushed.
    #[allow(clippy::too_many_arguments)]
    fn build_pullback(
        &mut self,
        source: &Function,
        pb_id: FuncId,
        wrt: &[bool],
        activity: &Activity,
        plans: &Plans,
        merge_edges: &MergeEdges,
        returns: &[Block],
    ) -> Function {
        let cfg = ControlFlow::new(source);
        let liveness = Liveness::analyse(source, &cfg, activity);
        let mut func = self.out.functions[pb_id.index()].clone();
        // Differential slices, and result cotangents, by position.
        let mut next_param = func.params.iter().copied();
        let mut dslice: HashMap<Value, Value> = HashMap::new();
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
        let mut rev: HashMap<Block, Block> = HashMap::new();
        for &b in cfg.reverse_post_order() {
            let rb = func.add_block(&format!("rev_{}", source.block(b).name));
            for &v in liveness.at_end(b) {
                let label = format!("adj_{}", source.value_label(v));
                func.add_block_param(rb, Type::F64, Some(&label));
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
            seeds.push(BlockCall { block: rev[&r], args });
        }
        let term = if seeds.len() == 1 {
            Terminator::Jump(seeds.pop().expect("one seed"))
        } else {
            let which = em.emit(Opcode::TPop, &[], Imm::Type(Type::I64));
            dispatch(&mut func, start, which, seeds)
        };
        func.block_mut(start).term = Some(term);

        for &b in cfg.reverse_post_order() {
            let rb = rev[&b];
            let block = source.block(b);
            let mut adj: HashMap<Value, Value> =
                liveness.at_end(b).iter().copied().zip(func.block(rb).params.iter().copied()).collect();
            let mut em = BlockEmitter::new(&mut func, rb);
            for (index, inst) in block.insts.iter().enumerate().rev() {
                self.reverse_inst(&mut em, source, inst, &plans[&(b, index)], &mut adj, &dslice);
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
                let targets: Vec<BlockCall> = edges
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
                            .collect();
                        BlockCall { block: rev[&p], args }
                    })
                    .collect();
                if targets.len() == 1 {
                    Terminator::Jump(targets.into_iter().next().expect("one target"))
                } else {
                    let from = em.emit(Opcode::TPop, &[], Imm::Type(Type::I64));
                    dispatch(&mut func, rb, from, targets)
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
        dslice: &HashMap<Value, Value>,
    ) {
        let pop = |em: &mut BlockEmitter<'_>, ty: Type| em.emit(Opcode::TPop, &[], Imm::Type(ty));
        let restore_index = |em: &mut BlockEmitter<'_>, s: Saved| match s {
            Saved::Slot(_) => pop(em, Type::I64),
            Saved::Const(op, imm) => em.emit(op, &[], imm),
        };
        match plan {
            Plan::Inactive => {}
            Plan::Terms { terms, pushed } => {
                let mut popped = vec![Value(0); pushed.len()];
                for slot in (0..pushed.len()).rev() {
                    popped[slot] = pop(em, pushed[slot]);
                }
                let Some(bar) = adj.remove(&inst.results[0]) else { return };
                let saved = |em: &mut BlockEmitter<'_>, s: Saved| restore(em, s, &popped);
                for &(operand, coef) in terms {
                    let contribution = match coef {
                        PlannedCoef::One => bar,
                        PlannedCoef::MinusOne => em.un(Opcode::FNeg, bar),
                        PlannedCoef::Scale(s) => {
                            let partial = saved(em, s);
                            em.bin(Opcode::FMul, partial, bar)
                        }
                        PlannedCoef::ScaleStrong(s) => {
                            // Strong zero: a zero adjoint stays zero even if the partial is infinite.
                            let partial = saved(em, s);
                            let product = em.bin(Opcode::FMul, partial, bar);
                            let zero = em.fconst(0.0);
                            let is_zero = em.emit(Opcode::FCmp, &[bar, zero], Imm::Cond(CondCode::Eq));
                            em.emit(Opcode::Select, &[is_zero, zero, product], Imm::None)
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
                    accumulate(em, adj, inst.args[operand], contribution);
                }
            }
            Plan::Load { index } => {
                let index = restore_index(em, *index);
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
                let index = restore_index(em, *index);
                let d = dslice[&inst.args[0]];
                let bar = em.emit(Opcode::Load, &[d, index], Imm::None);
                if *value_active {
                    accumulate(em, adj, inst.args[2], bar);
                }
                let zero = em.fconst(0.0);
                em.emit_multi(Opcode::Store, &[d, index, zero], Imm::None, &[]);
            }
            Plan::Call { pullback, mask } => {
                let callee = self.out.func(*pullback).clone();
                let mut args = vec![];
                for (a, &on) in inst.args.iter().zip(mask) {
                    if on && source.ty(*a).is_slice() {
                        args.push(dslice[a]);
                    }
                }
                for &r in &inst.results {
                    if source.ty(r) == Type::F64 {
                        let bar = adj.remove(&r).unwrap_or_else(|| em.fconst(0.0));
                        args.push(bar);
                    }
                }
                let grads = em.emit_multi(Opcode::Call, &args, Imm::Callee(Callee::Func(*pullback)), &callee.returns);
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
    fn value_and_grad(&mut self, id: FuncId, wrt: &[bool], fwd: FuncId, pullback: FuncId) -> FuncId {
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
        let mut args = dslices;
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
        self.out.functions.push(func);
        FuncId(self.out.functions.len() as u32 - 1)
    }
}

/// `sum + c`, or `c` when there is no sum yet.
/// A saved forward value in the pullback: popped earlier (`popped`, by slot) or re-created.
fn restore(em: &mut BlockEmitter<'_>, saved: Saved, popped: &[Value]) -> Value {
    match saved {
        Saved::Slot(slot) => popped[slot],
        Saved::Const(op, imm) => em.emit(op, &[], imm),
    }
}

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
            Some(n) => BlockCall { block: n, args: vec![] },
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
