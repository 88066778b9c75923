//! The reverse-mode transform (IR → IR), in the style of ChainRules' `rrule`: for a function `f`
//! it derives
//!
//! - `f_fwd(params) -> results`: the primal computation, which also records on the call's tape
//!   what the pullback needs — the partial derivatives of active operations (their
//!   [`linearize`] coefficients), the indices of active loads and stores, which incoming edge
//!   entered each merge block (branch decisions and, at loop headers, trip counts), and which
//!   block returned;
//! - `f_pullback(stable slices, d_slices, result cotangents) -> parameter cotangents`: the control flow run
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
use super::loops::Loops;
use super::request::{checked_function, differentiation_source};
use super::state::StatePlan;
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
    /// `f_pullback(slices..., d_slices..., cotangents...) -> cotangents`: first the primal
    /// slices named by [`pullback_slices`](Self::pullback_slices) (read again rather than
    /// recorded), then one mutable differential slice per differentiated slice parameter, then
    /// one cotangent per `f64` result; returns one cotangent per differentiated `f64` parameter.
    pub pullback: String,
    /// The parameters (by position) whose primal slices the pullback takes first: every `slice`
    /// (read-only) parameter, since nothing can change it between the forward run and the
    /// pullback.
    pub pullback_slices: Vec<usize>,
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
    // A `slice` parameter cannot be written by `f` or anything it calls (only `mslice` can), and
    // the safe API cannot alias it with an `mslice`: it is stable, and the pullback reads it again.
    let stable: Vec<bool> = f.params.iter().map(|&p| f.ty(p) == Type::Slice).collect();
    let (fwd, pullback) = deriver.derive(id, wrt, &stable)?;
    let value_and_grad = if f.returns.contains(&Type::F64) {
        Some(deriver.value_and_grad(id, wrt, &stable, fwd, pullback))
    } else {
        None
    };
    let mut out = deriver.out;
    passes::optimize(&mut out);
    verify_module(&out).map_err(|e| AdError::DerivedInvalid(Box::new(e)))?;
    Ok(ReverseDerivative {
        forward: out.func(fwd).name.clone(),
        pullback: out.func(pullback).name.clone(),
        value_and_grad: value_and_grad.map(|v| out.func(v).name.clone()),
        module: out,
        pullback_slices: stable.iter().enumerate().filter(|(_, on)| **on).map(|(k, _)| k).collect(),
        wrt: wrt.to_vec(),
    })
}

/// What the forward function recorded for one instruction, so the pullback can pop it.
#[derive(Clone, Debug)]
enum Plan {
    /// Nothing recorded, nothing to propagate.
    Inactive,
    /// Pointwise: `terms[k] = (operand, coefficient)`.
    Terms { terms: Vec<(usize, PlannedCoef)> },
    /// `load` from a differentiated slice, at forward index `index`.
    Load { index: Value },
    /// `store` into a differentiated slice, at forward index `index`. `value_active` says
    /// whether the stored value carries an adjoint.
    Store { index: Value, value_active: bool },
    /// A call to a derived callee rule; `stable` marks the callee's stable slice parameters.
    Call { pullback: FuncId, mask: Vec<bool>, stable: Vec<bool> },
}

/// A [`Coef`] whose values are forward values the pullback gets back through the
/// [`StatePlan`] (restored from the tape, recomputed or re-created).
#[derive(Clone, Copy, Debug)]
enum PlannedCoef {
    One,
    MinusOne,
    Scale(Value),
    ScaleStrong(Value),
    When(Value),
    Unless(Value),
}

/// Derived rules are cached per function, differentiated parameters and stable slices.
type CacheKey = (FuncId, Vec<bool>, Vec<bool>);

struct Deriver<'m> {
    source: &'m Module,
    out: Module,
    cache: HashMap<CacheKey, (FuncId, FuncId)>,
    custom: CustomRules<'m>,
}

impl Deriver<'_> {
    fn derive(&mut self, id: FuncId, wrt: &[bool], stable: &[bool]) -> Result<(FuncId, FuncId), AdError> {
        let key = (id, wrt.to_vec(), stable.to_vec());
        if let Some(&done) = self.cache.get(&key) {
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
        for (&p, &on) in source.params.iter().zip(stable) {
            if on {
                pullback.add_param(Type::Slice, Some(&source.value_label(p)));
            }
        }
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
        self.cache.insert(key, (fwd_id, pb_id));

        let activity = Activity::analyse(source, wrt);
        let forward = self.build_forward(source, fwd_id, &activity, stable)?;
        let pullback = self.build_pullback(source, pb_id, wrt, stable, &activity, &forward);
        let mut fwd = forward.func;
        // Plans name forward values, so renumbering waits until the pullback is built.
        fwd.canonicalize();
        self.out.functions[fwd_id.index()] = fwd;
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

/// A built `f_fwd` and what its pullback needs to know about it.
struct Forward {
    /// `f_fwd` (not yet renumbered: plans name its values).
    func: Function,
    plans: Plans,
    merge_edges: MergeEdges,
    /// The returning blocks, in the order `f_fwd` numbers them.
    returns: Vec<Block>,
    /// What is recorded, recomputed and re-created.
    state: StatePlan,
    /// The counted loops (their headers take a trip count instead of an edge index).
    loops: Loops,
}

impl Deriver<'_> {
    /// `f_fwd`: the primal with tape pushes.
    fn build_forward(
        &mut self,
        source: &Function,
        fwd_id: FuncId,
        activity: &Activity,
        stable: &[bool],
    ) -> Result<Forward, AdError> {
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
        let entry_runs_once = !incoming.contains_key(&Block::ENTRY);
        let loops = Loops::analyse(source, &cfg, &incoming, &returns);
        let merge_edges: MergeEdges = incoming.into_iter().filter(|(_, edges)| edges.len() > 1).collect();
        // Merge blocks get a parameter saying which edge entered them: the trip count at the
        // header of a counted loop, else the edge's position (pushed on entry).
        let mut from_params: HashMap<Block, Value> = HashMap::new();
        let mut trip_params: HashMap<Block, Value> = HashMap::new();
        for (index, block) in source.blocks.iter().enumerate() {
            let b = func.add_block(&block.name);
            for &p in &block.params {
                primal.insert(p, func.add_block_param(b, source.ty(p), source.values[p.index()].name.as_deref()));
            }
            if loops.headed_by(b).is_some() {
                trip_params.insert(b, func.add_block_param(b, Type::I64, Some("trip")));
            } else if merge_edges.contains_key(&Block(index as u32)) {
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
        let stable_slices = func.params.iter().zip(stable).filter(|(_, on)| **on).map(|(&p, _)| p).collect();
        let inductions = loops
            .loops
            .iter()
            .flat_map(|l| {
                l.inductions.iter().map(|&(iv, init, step)| (primal[&iv], (l.header, primal[&init], primal[&step])))
            })
            .collect();
        let mut state = StatePlan::new(&func, stable_slices, entry_runs_once, &loops, inductions);
        let mut plans: Plans = HashMap::new();
        for &b in cfg.reverse_post_order() {
            let block = source.block(b);
            let mut em = BlockEmitter::new(&mut func, b);
            if let Some(&from) = from_params.get(&b) {
                em.emit_multi(Opcode::TPush, &[from], Imm::None, &[]);
            }
            let mut needs = vec![];
            for (index, inst) in block.insts.iter().enumerate() {
                let site = (source.name.as_str(), block.name.as_str(), index);
                let plan = self.forward_inst(&mut em, source, inst, &primal, (activity, stable), &mut needs, site)?;
                plans.insert((b, index), plan);
            }
            state.plan_block(&func, b, &needs);
            let mut em = BlockEmitter::new(&mut func, b);
            for &v in state.frame(b) {
                em.emit_multi(Opcode::TPush, &[v], Imm::None, &[]);
            }
            let Some(term) = &block.term else { continue };
            // An edge leaving counted loops goes through a new block that pushes their trip counts.
            let edge = |func: &mut Function, slot: usize, call: &BlockCall| {
                let target = call.block;
                let exited = loops.exited(b, target);
                let at = if exited.is_empty() {
                    b
                } else {
                    let label = unique_label(func, &format!("{}_leave", block.name));
                    func.add_block(&label)
                };
                let mut em = BlockEmitter::new(func, at);
                for &k in &exited {
                    em.emit_multi(Opcode::TPush, &[trip_params[&loops.loops[k].header]], Imm::None, &[]);
                }
                let mut args: Vec<Value> = call.args.iter().map(|a| primal[a]).collect();
                if let Some(k) = loops.headed_by(target) {
                    args.push(if loops.loops[k].entry_edge == (b, slot) {
                        em.emit(Opcode::IConst, &[], Imm::I64(0))
                    } else {
                        let one = em.emit(Opcode::IConst, &[], Imm::I64(1));
                        em.emit(Opcode::IAdd, &[trip_params[&target], one], Imm::None)
                    });
                } else if let Some(edges) = merge_edges.get(&target) {
                    let position = edges.iter().position(|&e| e == (b, slot)).expect("every edge is recorded");
                    args.push(em.emit(Opcode::IConst, &[], Imm::I64(position as i64)));
                }
                let call = BlockCall { block: target, args };
                if exited.is_empty() {
                    call
                } else {
                    func.block_mut(at).term = Some(Terminator::Jump(call));
                    BlockCall { block: at, args: vec![] }
                }
            };
            let new_term = match term {
                Terminator::Jump(call) => Terminator::Jump(edge(&mut func, 0, call)),
                Terminator::Branch { cond, then_dest, else_dest } => Terminator::Branch {
                    cond: primal[cond],
                    then_dest: edge(&mut func, 0, then_dest),
                    else_dest: edge(&mut func, 1, else_dest),
                },
                Terminator::Return(vals) => Terminator::Return(vals.iter().map(|v| primal[v]).collect()),
            };
            func.block_mut(b).term = Some(new_term);
        }
        // Returning blocks push the once-per-call values last (every block has been planned
        // now), then which block returned, so the pullback pops both first.
        for (position, &b) in returns.iter().enumerate() {
            let mut em = BlockEmitter::new(&mut func, b);
            for &v in &state.global {
                em.emit_multi(Opcode::TPush, &[v], Imm::None, &[]);
            }
            if returns.len() > 1 {
                let id = em.emit(Opcode::IConst, &[], Imm::I64(position as i64));
                em.emit_multi(Opcode::TPush, &[id], Imm::None, &[]);
            }
        }
        Ok(Forward { func, plans, merge_edges, returns, state, loops })
    }

    /// Copy one instruction into `f_fwd` and add the forward values its pullback needs to
    /// `needs` (the block's [`StatePlan`] decides how each is got back).
    #[allow(clippy::too_many_arguments)]
    fn forward_inst(
        &mut self,
        em: &mut BlockEmitter<'_>,
        source: &Function,
        inst: &InstData,
        primal: &HashMap<Value, Value>,
        (activity, stable): (&Activity, &[bool]),
        needs: &mut Vec<Value>,
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
            // A callee's slice parameter is stable when the caller passes one of its own stable
            // `slice` parameters to a `slice` parameter (an `mslice` the caller may write later is not).
            let callee_stable: Vec<bool> = inst
                .args
                .iter()
                .zip(&callee_fn.params)
                .map(|(a, p)| {
                    callee_fn.ty(*p) == Type::Slice
                        && source.params.iter().position(|q| q == a).is_some_and(|k| stable[k])
                })
                .collect();
            let (fwd, pullback) = self.derive(callee_id, &mask, &callee_stable)?;
            em.push(InstData { op: Opcode::Call, args, imm: Imm::Callee(Callee::Func(fwd)), results });
            return Ok(Plan::Call { pullback, mask, stable: callee_stable });
        }
        em.push(InstData { op: inst.op, args: args.clone(), imm: inst.imm, results: results.clone() });
        let mut need = |v: Value| {
            if !needs.contains(&v) {
                needs.push(v);
            }
            v
        };
        match inst.op {
            Opcode::Load if active[0] => Ok(Plan::Load { index: need(args[1]) }),
            Opcode::Store if active[0] => Ok(Plan::Store { index: need(args[1]), value_active: active[2] }),
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
                        let planned = terms
                            .iter()
                            .map(|t| {
                                let coef = match t.coef {
                                    Coef::One => PlannedCoef::One,
                                    Coef::MinusOne => PlannedCoef::MinusOne,
                                    Coef::Scale(p) => PlannedCoef::Scale(need(p)),
                                    Coef::ScaleStrong(p) => PlannedCoef::ScaleStrong(need(p)),
                                    Coef::When(c) => PlannedCoef::When(need(c)),
                                    Coef::Unless(c) => PlannedCoef::Unless(need(c)),
                                };
                                (t.operand, coef)
                            })
                            .collect();
                        Ok(Plan::Terms { terms: planned })
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
        stable: &[bool],
        activity: &Activity,
        forward: &Forward,
    ) -> Function {
        let Forward { func: fwd, plans, merge_edges, returns, state, loops } = forward;
        let cfg = ControlFlow::new(source);
        let liveness = Liveness::analyse(source, &cfg, activity);
        let mut func = self.out.functions[pb_id.index()].clone();
        // Stable primal slices, differential slices, and result cotangents, by position.
        let mut next_param = func.params.iter().copied();
        let mut primal_slice: HashMap<Value, Value> = HashMap::new();
        let mut fwd_slice: HashMap<Value, Value> = HashMap::new();
        for (k, (&p, &on)) in source.params.iter().zip(stable).enumerate() {
            if on {
                let param = next_param.next().expect("one slice per stable slice parameter");
                primal_slice.insert(p, param);
                fwd_slice.insert(fwd.params[k], param);
            }
        }
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
            // The trip count of every counted loop around `b`, in the order of `loops`.
            for _ in loops.containing(b) {
                func.add_block_param(rb, Type::I64, Some("trip"));
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
        // `f_fwd` pushed the once-per-call values, then which block returned: pop in reverse.
        let which = (seeds.len() > 1).then(|| em.emit(Opcode::TPop, &[], Imm::Type(Type::I64)));
        let global = state.restore_global(&mut em, fwd, fwd_slice);
        let term = match which {
            None => Terminator::Jump(seeds.pop().expect("one seed")),
            Some(which) => dispatch(&mut func, start, which, seeds),
        };
        func.block_mut(start).term = Some(term);

        for &b in cfg.reverse_post_order() {
            let rb = rev[&b];
            let block = source.block(b);
            let params = func.block(rb).params.clone();
            let live = liveness.at_end(b);
            let mut adj: HashMap<Value, Value> = live.iter().copied().zip(params.iter().copied()).collect();
            let trips: HashMap<Block, Value> = loops
                .containing(b)
                .into_iter()
                .map(|k| loops.loops[k].header)
                .zip(params[live.len()..].to_vec())
                .collect();
            let mut em = BlockEmitter::new(&mut func, rb);
            let restored = state.restore_block(&mut em, fwd, b, &global, &trips);
            let known = Known { state, restored: &restored, dslice: &dslice, primal_slice: &primal_slice };
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
                        // Trip counts of the loops around `p`: carried along, or (for loops
                        // this edge left in `f_fwd`) popped on the way, below.
                        for k in loops.containing(p) {
                            let header = loops.loops[k].header;
                            if counted.is_some_and(|l| l.header == header && l.back_edge == (p, slot)) {
                                args.extend(previous_trip);
                            } else if let Some(&trip) = trips.get(&header) {
                                args.push(trip);
                            }
                        }
                        (BlockCall { block: rev[&p], args }, p)
                    })
                    .collect();
                // A reversed edge entering loops goes through a block that pops their trip counts.
                let calls: Vec<BlockCall> = targets
                    .drain(..)
                    .map(|(call, p)| {
                        let exited = loops.exited(p, b);
                        if exited.is_empty() {
                            call
                        } else {
                            enter_loops(&mut func, call, &loops.containing(p), &exited)
                        }
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
                let zero = em.fconst(0.0);
                em.emit_multi(Opcode::Store, &[d, index, zero], Imm::None, &[]);
            }
            Plan::Call { pullback, mask, stable } => {
                let callee = self.out.func(*pullback).clone();
                let mut args = vec![];
                for (a, &on) in inst.args.iter().zip(stable) {
                    if on {
                        args.push(known.primal_slice[a]);
                    }
                }
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
    fn value_and_grad(&mut self, id: FuncId, wrt: &[bool], stable: &[bool], fwd: FuncId, pullback: FuncId) -> FuncId {
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
        self.out.functions.push(func);
        FuncId(self.out.functions.len() as u32 - 1)
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
}

/// A block that pops the trip counts of the loops `exited` (pushed in that order by `f_fwd` on
/// the edge leaving them), then continues with `call`. `call` carries the target's adjoints and
/// the trip counts of the loops `around` the target that the edge did not leave; the popped
/// counts go in their places, in the order of `around`.
fn enter_loops(func: &mut Function, call: BlockCall, around: &[usize], exited: &[usize]) -> BlockCall {
    let label = unique_label(func, &format!("{}_enter", func.block(call.block).name));
    let block = func.add_block(&label);
    let types: Vec<Type> = call.args.iter().map(|&a| func.ty(a)).collect();
    let params: Vec<Value> = types.into_iter().map(|t| func.add_block_param(block, t, None)).collect();
    let mut em = BlockEmitter::new(func, block);
    let mut popped: HashMap<usize, Value> = HashMap::new();
    for &k in exited.iter().rev() {
        popped.insert(k, em.emit(Opcode::TPop, &[], Imm::Type(Type::I64)));
    }
    let adjoints = params.len() + exited.len() - around.len();
    let mut carried = params[adjoints..].iter().copied();
    let mut args = params[..adjoints].to_vec();
    for k in around {
        args.push(popped.get(k).copied().unwrap_or_else(|| carried.next().expect("a carried trip count")));
    }
    func.block_mut(block).term = Some(Terminator::Jump(BlockCall { block: call.block, args }));
    BlockCall { block, args: call.args }
}

/// `base`, or `base` with a number appended, whichever no block of `func` is called yet.
fn unique_label(func: &Function, base: &str) -> String {
    let taken = |label: &str| func.blocks.iter().any(|b| b.name == label);
    let mut label = base.to_string();
    let mut k = 2;
    while taken(&label) {
        label = format!("{base}{k}");
        k += 1;
    }
    label
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
