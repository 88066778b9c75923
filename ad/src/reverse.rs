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
use super::calls::derived_call;
use super::custom::CustomRules;
use super::error::AdError;
use super::loops::Loops;
use super::request::{
    check_no_aliased_slices, check_no_tape_use, checked_function, derive_from_source, optimize_derived,
};
use super::shape::Shape;
use super::singular::Singular;
use super::state::StatePlan;

mod defer;
mod forward_stores;
mod frozen;
mod loop_state;
mod pullback;
mod skip;
use jitdiff_ir::{
    Block, BlockCall, Callee, FuncId, Function, Imm, InstData, Module, Opcode, Terminator, Type, Value, passes,
    verify_module, verify_module_from,
};
use jitdiff_rules::{BlockEmitter, Coef, Emit, Linearization, RuleSet, linearize};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

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
    /// Every pullback's differential slices that belong to a primal slice it also takes:
    /// `(pullback, differential parameter, primal parameter)`, by parameter position. The two
    /// always have the same length (the caller sizes a differential like its primal), which
    /// [`GradientFn`](crate::GradientFn) declares to the JIT so that an access to the
    /// differential at an index already checked against the primal needs no bounds check.
    pub differentials: Vec<(String, usize, usize)>,
    /// The pullback before its loops' accumulations were deferred and its stores forwarded
    /// (`reverse/defer.rs`, `reverse/forward_stores.rs`): what the fused `value_and_grad`
    /// inlines, so that a reversed loop can run in forward order fused with the loop it
    /// reverses ([`fuse_reversed_loops`](crate::fuse_reversed_loops)), which deferral would
    /// tie to reverse order. Its calls refer to functions of [`module`](Self::module).
    #[doc(hidden)]
    pub pullback_in_order: Option<Function>,
}

/// Derive the reverse mode of `@func` for the differentiated parameters `wrt` (only `f64` and
/// slice parameters may be set). The result is optimised and verified.
///
/// ```
/// use jitdiff_ad::derive_reverse;
/// use jitdiff_ir::{parse_module, Interpreter, Tape, ArgValue, RuntimeValue};
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
    let (module, rules) = crate::nested::expanded(module, rules)?;
    let (module, rules) = (module.as_ref(), rules.as_ref());
    // A panic in the transform is a bug; it reaches the caller as an error naming the function.
    jitdiff_ir::contain_panics(|| derive_reverse_unguarded(module, func, wrt, rules, &[]))
        .unwrap_or_else(|message| Err(AdError::Internal { func: func.into(), message }))
}

/// The `_fwd` of a joint callee runs only in a pullback, to record a segment again, and its
/// results are dropped there: return constants instead, so that what computed only them goes —
/// in particular a last call of a pure primal function (the second half of a binomial
/// checkpointing split, `checkpoint/binomial.rs`), which would otherwise run again for nothing.
fn drop_joint_results(out: &mut Module, joint_fwds: &[FuncId]) {
    if joint_fwds.is_empty() {
        return;
    }
    let pure = pure_functions(out);
    for &id in joint_fwds {
        let function = &mut out.functions[id.index()];
        let returns = function.returns.clone();
        if returns.iter().any(|t| !matches!(t, Type::F64 | Type::I64 | Type::Bool)) {
            continue;
        }
        for b in function.block_ids().collect::<Vec<_>>() {
            if !matches!(function.block(b).term, Some(Terminator::Return(_))) {
                continue;
            }
            let mut em = BlockEmitter::new(function, b);
            let constants: Vec<Value> = returns
                .iter()
                .map(|&t| match t {
                    Type::F64 => em.fconst(0.0),
                    Type::Bool => em.emit(Opcode::BConst, &[], Imm::Bool(false)),
                    _ => em.emit(Opcode::IConst, &[], Imm::I64(0)),
                })
                .collect();
            function.block_mut(b).term = Some(Terminator::Return(constants));
        }
        passes::dce_with_removable_calls(function, &|callee| pure[callee.index()]);
        passes::optimize_function_in(function, &out.tables);
    }
}

/// Which functions of `m` have no effect: no store, tape traffic or allocation, and calls of
/// such functions only (recursion included).
fn pure_functions(m: &Module) -> Vec<bool> {
    let mut pure = vec![true; m.functions.len()];
    loop {
        let mut changed = false;
        for (k, function) in m.functions.iter().enumerate() {
            if !pure[k] {
                continue;
            }
            let effect = function.blocks.iter().flat_map(|b| &b.insts).any(|inst| match (inst.op, inst.imm) {
                (Opcode::Call, Imm::Callee(Callee::Func(callee))) => !pure[callee.index()],
                (Opcode::Call, _) => true,
                (op, _) => op.has_side_effects(),
            });
            if effect {
                pure[k] = false;
                changed = true;
            }
        }
        if !changed {
            return pure;
        }
    }
}

/// [`derive_reverse_with_rules`] where the calls of the functions `joint` are differentiated in
/// joint mode: `f_fwd` calls the primal callee and records only its arguments, and the
/// pullback runs the callee's `_fwd` and at once its `_pullback`, between `tsplit` and
/// `trejoin`, so the tape holds one such call's record at a time (see `checkpoint.rs`).
pub(crate) fn derive_reverse_joint(
    module: &Module,
    func: &str,
    wrt: &[bool],
    rules: &RuleSet,
    joint: &[FuncId],
) -> Result<ReverseDerivative, AdError> {
    jitdiff_ir::contain_panics(|| derive_reverse_unguarded(module, func, wrt, rules, joint))
        .unwrap_or_else(|message| Err(AdError::Internal { func: func.into(), message }))
}

fn derive_reverse_unguarded(
    module: &Module,
    func: &str,
    wrt: &[bool],
    rules: &RuleSet,
    joint: &[FuncId],
) -> Result<ReverseDerivative, AdError> {
    verify_module(module)?;
    let unguarded = skip::without_guards(module);
    let module = unguarded.as_ref();
    let id = checked_function(module, func, wrt)?;
    check_no_tape_use(module, id, rules)?;
    check_no_aliased_slices(module, id, rules)?;
    let f = module.func(id);
    // A `slice` parameter cannot be written by `f` or anything it calls (only `mslice` can), and
    // the safe API cannot alias it with an `mslice`: it is stable, and the pullback reads it again.
    let stable: Vec<bool> = f.params.iter().map(|&p| f.ty(p) == Type::Slice).collect();
    let run = |source: &Module| {
        let custom = CustomRules::new(rules);
        let shapes = Shape::of_module(source);
        let mut deriver = Deriver {
            source,
            out: module.clone(),
            cache: HashMap::default(),
            shapes: &shapes,
            singular: Singular::analyse(source, &custom, id),
            custom,
            differentials: vec![],
            joint,
        };
        let (fwd, pullback) = deriver.derive(id, wrt, &stable)?;
        let value_and_grad = if f.returns.contains(&Type::F64) {
            Some(deriver.value_and_grad(id, wrt, &stable, fwd, pullback))
        } else {
            None
        };
        let pullbacks: Vec<(FuncId, FuncId)> = deriver.cache.values().copied().collect();
        let joint_fwds: Vec<FuncId> =
            deriver.cache.iter().filter(|(key, _)| joint.contains(&key.0)).map(|(_, &(fwd, _))| fwd).collect();
        Ok((fwd, pullback, value_and_grad, pullbacks, joint_fwds, deriver.differentials, deriver.out))
    };
    // A module with joint callees is already the cleaned source (`checkpoint.rs` outlined its
    // loops from it): cleaning it again could hoist work out of a segment's loop, which would
    // change the order in which adjoints are summed.
    let (fwd, pullback, value_and_grad, pullbacks, joint_fwds, differentials, mut out) =
        if joint.is_empty() { derive_from_source(module, run)? } else { run(module)? };
    let (callee_fwds, pullbacks): (Vec<FuncId>, Vec<FuncId>) = pullbacks.into_iter().unzip();
    optimize_derived(&mut out, module.functions.len());
    drop_joint_results(&mut out, &joint_fwds);
    let mut in_order = None;
    for &pb in &pullbacks {
        let function = &mut out.functions[pb.index()];
        if skip::skip_zero_cotangent_loops(function) {
            passes::optimize_function(function);
        }
        if pb == pullback {
            in_order = Some(function.clone());
        }
        finish_pullback(function);
    }
    // Callee rules only the derived code calls need no parameter they do not read (a callee
    // pullback receives every read-only slice of the call); the differential declarations
    // follow their parameters' new positions.
    let internal: Vec<FuncId> =
        callee_fwds.iter().chain(&pullbacks).copied().filter(|&g| g != fwd && g != pullback).collect();
    let mut differentials = differentials;
    // The copy of the pullback rides along as the module's last function while parameters are
    // trimmed, so that its calls follow their callees' new signatures.
    let in_order_id = in_order.map(|function| out.push_function(function));
    let trimmed = passes::remove_unused_params(&mut out, &internal);
    let pullback_in_order = in_order_id.and_then(|_| out.functions.pop());
    // A slice the pullback re-created only to pass it on (a table) is dead once no callee takes
    // it: clean up the derived callers of trimmed functions.
    let trimmed_ids: Vec<Imm> = trimmed.iter().map(|(id, _)| Imm::Callee(Callee::Func(*id))).collect();
    for function in &mut out.functions[module.functions.len()..] {
        let calls_trimmed = function.blocks.iter().flat_map(|b| &b.insts).any(|i| trimmed_ids.contains(&i.imm));
        let reads_table = function.blocks.iter().flat_map(|b| &b.insts).any(|i| i.op == Opcode::Table);
        if calls_trimmed && reads_table {
            passes::dce(function);
        }
    }
    for (id, kept) in trimmed {
        let name = &out.func(id).name;
        let position = |old: usize| kept.iter().position(|&k| k == old);
        differentials = differentials
            .into_iter()
            .filter_map(|(f, d, p)| match &f == name {
                true => Some((f, position(d)?, position(p)?)),
                false => Some((f, d, p)),
            })
            .collect();
    }
    // The functions `out` shares with `module` were verified above (clearing guards keeps
    // them valid).
    verify_module_from(&out, module.functions.len()).map_err(|e| AdError::DerivedInvalid(Box::new(e)))?;
    Ok(ReverseDerivative {
        forward: out.func(fwd).name.clone(),
        pullback: out.func(pullback).name.clone(),
        value_and_grad: value_and_grad.map(|v| out.func(v).name.clone()),
        module: out,
        pullback_slices: stable.iter().enumerate().filter(|(_, on)| **on).map(|(k, _)| k).collect(),
        wrt: wrt.to_vec(),
        differentials,
        pullback_in_order,
    })
}

/// The last rewrites of a pullback, which tie its loops to reverse order (`reverse/defer.rs`)
/// and assume what a pullback's slices may alias (`reverse/forward_stores.rs`): also valid for
/// a function a caller of the public API calls with its own slices and fresh differentials,
/// as the fused `value_and_grad` (whose loops [`fuse_reversed_loops`](crate::fuse_reversed_loops)
/// fused first). True when something changed (the function is optimised again then).
#[doc(hidden)]
pub fn finish_pullback(function: &mut Function) -> bool {
    if forward_stores::forward_stores(function) | defer::defer_accumulations(function) {
        passes::optimize_function(function);
        // Folding `-0.0 + x` may leave stores that write back what was loaded.
        if forward_stores::forward_stores(function) {
            passes::optimize_function(function);
        }
        return true;
    }
    false
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
    /// `joint`: the call ran the primal callee, and the pullback first runs this `_fwd` on
    /// these (forward) arguments.
    Call { pullback: FuncId, mask: Vec<bool>, stable: Vec<bool>, joint: Option<(FuncId, Vec<Value>)> },
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
    /// See [`ReverseDerivative::differentials`].
    differentials: Vec<(String, usize, usize)>,
    /// Where partials can be infinite, and so which products need strong zeros.
    singular: Singular,
    /// The control-flow shape of every source function, analysed once.
    shapes: &'m [Shape],
    /// The callees whose calls are differentiated in joint mode.
    joint: &'m [FuncId],
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
        for (k, (&p, &on)) in source.params.iter().zip(wrt).enumerate() {
            if on && source.ty(p).is_slice() {
                pullback.add_param(Type::SliceMut, Some(&format!("d_{}", source.value_label(p))));
                if stable[k] {
                    // The primal is the pullback's parameter among the stable slices, in order.
                    let primal = stable[..k].iter().filter(|&&on| on).count();
                    self.differentials.push((pullback.name.clone(), pullback.params.len() - 1, primal));
                }
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
        let fwd_id = self.out.push_function(fwd);
        let pb_id = self.out.push_function(pullback);
        self.cache.insert(key, (fwd_id, pb_id));

        let activity = Activity::analyse(source, wrt).keep_useful(source);
        let forward = self.build_forward(id, fwd_id, &activity, stable)?;
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

/// The forward values a block's pullback needs, in the order first needed, each once (a set
/// beside the list: a block of 100,000 instructions made a search of the list quadratic).
#[derive(Default)]
struct Needs {
    order: Vec<Value>,
    seen: HashSet<Value>,
}

impl Needs {
    fn add(&mut self, v: Value) {
        if self.seen.insert(v) {
            self.order.push(v);
        }
    }
}

/// The values of `func` that are data tables (`v = table @y`), with their immediates.
fn table_values(func: &Function) -> HashMap<Value, Imm> {
    let tables = func.blocks.iter().flat_map(|b| &b.insts).filter(|i| i.op == Opcode::Table);
    tables.flat_map(|i| i.results.iter().map(|&r| (r, i.imm))).collect()
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
    /// The active local arrays: the source `alloc` result and its length in `f_fwd`. The
    /// pullback allocates a zeroed differential of that length in its first block.
    local_arrays: Vec<(Value, Value)>,
    /// The local arrays frozen at some call (source values, in push order): the pullback pops
    /// copies of them first thing and passes those to the callee pullbacks.
    frozen: Vec<Value>,
    /// The source values that are data tables, with their immediates: the pullback re-creates
    /// those it passes to callee pullbacks.
    tables: HashMap<Value, Imm>,
}

impl Deriver<'_> {
    /// `f_fwd`: the primal with tape pushes.
    fn build_forward(
        &mut self,
        id: FuncId,
        fwd_id: FuncId,
        activity: &Activity,
        stable: &[bool],
    ) -> Result<Forward, AdError> {
        let source = self.source.func(id);
        let shape = &self.shapes[id.index()];
        let cfg = &shape.cfg;
        let frozen_at = frozen::FrozenArrays::analyse(self.source, source, cfg);
        let tables = table_values(source);
        // The local arrays some callee receives as stable (frozen at the call), in `alloc` order.
        let mut frozen: Vec<Value> = vec![];
        let mut func = self.out.functions[fwd_id.index()].clone();
        let mut primal: HashMap<Value, Value> =
            source.params.iter().copied().zip(func.params.iter().copied()).collect();
        let (returns, entry_runs_once, loops) = (shape.returns.clone(), shape.entry_runs_once, shape.loops.clone());
        let incoming = shape.incoming.clone();
        let merge_edges: MergeEdges = incoming.into_iter().filter(|(_, edges)| edges.len() > 1).collect();
        // Merge blocks get a parameter saying which edge entered them: the trip count at the
        // header of a counted loop, else the edge's position (pushed on entry).
        let mut from_params: HashMap<Block, Value> = HashMap::default();
        let mut trip_params: HashMap<Block, Value> = HashMap::default();
        for (source_block, block) in source.block_ids().zip(&source.blocks) {
            let b = func.add_block(&block.name);
            for &p in &block.params {
                primal.insert(p, func.add_block_param(b, source.ty(p), source.values[p.index()].name.as_deref()));
            }
            if loops.headed_by(b).is_some() {
                trip_params.insert(b, func.add_block_param(b, Type::I64, Some("trip")));
            } else if merge_edges.contains_key(&source_block) {
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
        let mut state = StatePlan::new(&func, cfg, stable_slices, entry_runs_once, &loops, &primal);
        // Blocks on edges leaving counted loops, with the loops they leave: they record the
        // loops' carried values and trip counts once every block is planned.
        let mut leaves: Vec<(Block, Vec<usize>)> = vec![];
        let mut plans: Plans = HashMap::default();
        for &b in cfg.reverse_post_order() {
            let block = source.block(b);
            let mut em = BlockEmitter::new(&mut func, b);
            if let Some(&from) = from_params.get(&b) {
                em.emit_multi(Opcode::TPush, &[from], Imm::None, &[]);
            }
            let mut needs = Needs::default();
            for (index, inst) in block.insts.iter().enumerate() {
                let site = (source.name.as_str(), block.name.as_str(), index);
                let frozen_here = frozen_at.at(b, index);
                let plan = self.forward_inst(
                    &mut em,
                    source,
                    inst,
                    &primal,
                    (activity, stable, frozen_here, &tables),
                    &mut needs,
                    site,
                )?;
                if let Plan::Call { stable: callee_stable, .. } = &plan {
                    for (a, &on) in inst.args.iter().zip(callee_stable) {
                        if on && frozen_here.contains(a) && !frozen.contains(a) {
                            frozen.push(*a);
                        }
                    }
                }
                plans.insert((b, index), plan);
            }
            state.plan_block(&func, b, &needs.order);
            let mut em = BlockEmitter::new(&mut func, b);
            for &v in state.frame(b) {
                em.emit_multi(Opcode::TPush, &[v], Imm::None, &[]);
            }
            let Some(term) = &block.term else { continue };
            // An edge leaving counted loops goes through a new block that records their state.
            let mut edge = |func: &mut Function, slot: usize, call: &BlockCall| {
                let target = call.block;
                let exited = loops.exited(b, target);
                let at = if exited.is_empty() {
                    b
                } else {
                    let at = func.add_block(&format!("{}_leave", block.name));
                    leaves.push((at, exited.clone()));
                    at
                };
                let mut em = BlockEmitter::new(func, at);
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
                let call = BlockCall { block: target, args: args.into() };
                if exited.is_empty() {
                    call
                } else {
                    func.block_mut(at).term = Some(Terminator::Jump(call));
                    BlockCall { block: at, args: smallvec::smallvec![] }
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
        // An active local array's length is recorded once per call, for its differential.
        let mut local_arrays = vec![];
        for inst in source.block(Block::ENTRY).insts.iter().filter(|i| i.op == Opcode::Alloc) {
            if activity.is_active(inst.results[0]) {
                let len = primal[&inst.args[0]];
                state.require_global(len);
                local_arrays.push((inst.results[0], len));
            }
        }
        // Leaving a loop records, per loop left, the values its reversed loop carries and then its
        // trip count (every block has been planned now, so the carried values are known) — except
        // what the pullback computes where the loop ends.
        state.plan_exits();
        for (at, exited) in &leaves {
            let mut em = BlockEmitter::new(&mut func, *at);
            for &k in exited {
                for (i, carry) in state.carried[k].iter().enumerate() {
                    if !state.exits[k].derives(i) {
                        em.emit_multi(Opcode::TPush, &[carry.value()], Imm::None, &[]);
                    }
                }
                if !state.exits[k].trip {
                    em.emit_multi(Opcode::TPush, &[trip_params[&loops.loops[k].header]], Imm::None, &[]);
                }
            }
        }
        // Returning blocks push the frozen arrays' entries and lengths, the once-per-call
        // values (every block has been planned now), then which block returned: the pullback
        // pops them in reverse, first of all.
        frozen.sort_by_key(|v| v.index());
        for (position, &b) in returns.iter().enumerate() {
            let term = func.block_mut(b).term.take();
            let mut at = b;
            for &array in &frozen {
                at = frozen::push_array(&mut func, at, primal[&array]);
            }
            func.block_mut(at).term = term;
            let mut em = BlockEmitter::new(&mut func, at);
            for &array in &frozen {
                let len = em.emit(Opcode::Len, &[primal[&array]], Imm::None);
                em.emit_multi(Opcode::TPush, &[len], Imm::None, &[]);
            }
            for &v in &state.global {
                em.emit_multi(Opcode::TPush, &[v], Imm::None, &[]);
            }
            if returns.len() > 1 {
                let id = em.emit(Opcode::IConst, &[], Imm::I64(position as i64));
                em.emit_multi(Opcode::TPush, &[id], Imm::None, &[]);
            }
        }
        Ok(Forward { func, plans, merge_edges, returns, state, loops, local_arrays, frozen, tables })
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
        (activity, stable, frozen_here, tables): (&Activity, &[bool], &[Value], &HashMap<Value, Imm>),
        needs: &mut Needs,
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
            let call = derived_call(self.source, inst, activity, (func, block, index))?;
            let (callee_id, mask) = (call.callee, call.mask);
            let callee_fn = self.source.func(callee_id);
            // A callee's slice parameter is stable when the caller passes one of its own stable
            // `slice` parameters to a `slice` parameter (an `mslice` the caller may write later is
            // not), a local array frozen at this call (see `frozen.rs`), or a data table (which
            // nothing writes; the pullback re-creates it).
            let callee_stable: Vec<bool> = inst
                .args
                .iter()
                .zip(&callee_fn.params)
                .map(|(a, p)| {
                    callee_fn.ty(*p) == Type::Slice
                        && (source.params.iter().position(|q| q == a).is_some_and(|k| stable[k])
                            || frozen_here.contains(a)
                            || tables.contains_key(a))
                })
                .collect();
            let (fwd, pullback) = self.derive(callee_id, &mask, &callee_stable)?;
            // Joint mode needs every slice the callee reads to be the same in the pullback: stable.
            let slices_stable =
                callee_fn.params.iter().zip(&callee_stable).all(|(&p, &stable)| !callee_fn.ty(p).is_slice() || stable);
            if self.joint.contains(&callee_id) && slices_stable {
                // Joint mode: the primal callee now, its `_fwd` again in the pullback. Scalars
                // are recorded; the pullback has the stable slices already.
                let saved: Vec<Value> = args
                    .iter()
                    .zip(&inst.args)
                    .map(|(&a, &source_arg)| {
                        if !source.ty(source_arg).is_slice() {
                            needs.add(a);
                        }
                        a
                    })
                    .collect();
                em.push(InstData {
                    op: Opcode::Call,
                    args: args.into(),
                    imm: Imm::Callee(Callee::Func(callee_id)),
                    results: results.into(),
                });
                let joint = Some((fwd, saved));
                return Ok(Plan::Call { pullback, mask, stable: callee_stable, joint });
            }
            em.push(InstData {
                op: Opcode::Call,
                args: args.into(),
                imm: Imm::Callee(Callee::Func(fwd)),
                results: results.into(),
            });
            return Ok(Plan::Call { pullback, mask, stable: callee_stable, joint: None });
        }
        em.push(InstData {
            op: inst.op,
            args: args.as_slice().into(),
            imm: inst.imm,
            results: results.as_slice().into(),
        });
        let mut need = |v: Value| {
            needs.add(v);
            v
        };
        match inst.op {
            // A load whose value reaches no result (an index read as a float) has no cotangent.
            Opcode::Load if active[0] && activity.is_active(inst.results[0]) => Ok(Plan::Load { index: need(args[1]) }),
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
            // Lanes carry no derivatives (forward mode's own tangent arithmetic, differentiated
            // again, is refused where its lanes are made).
            Opcode::Fma if source.ty(inst.args[0]) != Type::F64 && active.iter().any(|&a| a) => Err(unsupported()),
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
                // A strong partial of an instruction that is not singular here (an `fdiv` by a
                // constant) is an ordinary one (see `singular.rs`).
                let singular =
                    self.source.func_id(func).is_some_and(|f| self.singular.is_singular(f.index(), inst.results[0]));
                match linearization {
                    Linearization::Terms(terms) => {
                        let planned = terms
                            .iter()
                            .map(|t| {
                                let coef = match t.coef {
                                    Coef::One => PlannedCoef::One,
                                    Coef::MinusOne => PlannedCoef::MinusOne,
                                    Coef::Scale(p) => PlannedCoef::Scale(need(p)),
                                    Coef::ScaleStrong(p) if singular => PlannedCoef::ScaleStrong(need(p)),
                                    Coef::ScaleStrong(p) => PlannedCoef::Scale(need(p)),
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
