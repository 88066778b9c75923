//! The forward-mode transform (IR → IR), after Mooncake's design: statement by statement, every
//! active value gets a tangent; branches test the primal; block parameters get tangent
//! parameters; calls go to the callee's derived rule, built once and cached.
//!
//! With tangent width W, a tangent is an `f64xW` (W directional derivatives in one sweep); with
//! W = 1 it is a plain `f64`. The tangent of a differentiated slice is a second slice the caller
//! supplies, holding W lanes per element (`vload`/`vstore` lanes `W*i .. W*i+W`).
//!
//! The derived function of `@f` takes `f`'s parameters, then one tangent per differentiated
//! parameter (in parameter order), and returns `f`'s results, then one tangent per `f64` result.

use super::activity::Activity;
use super::calls::derived_call;
use super::custom::CustomRules;
use super::error::AdError;
use super::preaccumulate::{LaneOp, preaccumulate};
use super::request::{check_no_aliased_slices, checked_function, derive_from_source, optimize_derived};
use super::singular::Singular;
use jitdiff_ir::{
    Block, BlockCall, Callee, FuncId, Function, Imm, InstData, Module, Opcode, Terminator, Type, Value, verify_module,
    verify_module_from,
};
use jitdiff_rules::{BlockEmitter, Coef, Emit, Linearization, RuleSet, linearize};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::cell::RefCell;

/// A derived forward-mode function inside a module that also holds the original functions.
#[derive(Clone, Debug)]
pub struct ForwardDerivative {
    /// The original functions followed by every derived function the request needed.
    pub module: Module,
    /// The name of the derived function of the requested one.
    pub name: String,
    /// The tangent width W.
    pub width: u8,
    /// Which parameters of the original function are differentiated.
    pub wrt: Vec<bool>,
}

/// Derive the forward-mode (JVP) function of `@func` for the differentiated parameters `wrt`
/// (one flag per parameter; only `f64` and slice parameters may be set) and tangent width
/// `width` ∈ {1, 2, 4, 8, 16}. The result is optimised (folding, CSE, DCE) and verified.
///
/// ```
/// use jitdiff_ad::derive_forward;
/// use jitdiff_ir::{parse_module, interpret, ArgValue, RuntimeValue};
/// let m = parse_module("func @f(x: f64) -> f64 {\nentry:\n    y = sin x\n    ret y\n}").unwrap();
/// let d = derive_forward(&m, "f", &[true], 1).unwrap();
/// let out = interpret(&d.module, &d.name, &mut [ArgValue::F64(0.5), ArgValue::F64(1.0)]).unwrap();
/// assert_eq!(out[1], RuntimeValue::F64(0.5f64.cos()));
/// ```
pub fn derive_forward(module: &Module, func: &str, wrt: &[bool], width: u8) -> Result<ForwardDerivative, AdError> {
    derive_forward_with_rules(module, func, wrt, width, &RuleSet::new())
}

/// [`derive_forward`] with custom rules: a call of a function or extern that has a rule in
/// `rules` uses the rule's partials instead of the callee's derivative.
pub fn derive_forward_with_rules(
    module: &Module,
    func: &str,
    wrt: &[bool],
    width: u8,
    rules: &RuleSet,
) -> Result<ForwardDerivative, AdError> {
    let (module, rules) = crate::nested::expanded(module, rules)?;
    let (module, rules) = (module.as_ref(), rules.as_ref());
    // A panic in the transform is a bug; it reaches the caller as an error naming the function.
    jitdiff_ir::contain_panics(|| derive_forward_unguarded(module, func, wrt, width, rules, false))
        .unwrap_or_else(|message| Err(AdError::Internal { func: func.into(), message }))
}

/// Forward mode over a *pullback* (`f_pullback` of a [`ReverseDerivative`](crate::ReverseDerivative))
/// whose tape was filled by the plain forward run: the tape holds constants, popped values carry
/// no tangent and no tangent lanes travel on the tape. Differentiating the pullback with
/// respect to its cotangents and differential slices gives, since it is linear in them, W
/// pullbacks in one sweep: lane `l` of the tangent outputs is the pullback of lane `l` of the
/// seeded cotangents (W rows of a Jacobian per sweep).
pub fn derive_forward_over_pullback(
    module: &Module,
    func: &str,
    wrt: &[bool],
    width: u8,
    rules: &RuleSet,
) -> Result<ForwardDerivative, AdError> {
    jitdiff_ir::contain_panics(|| derive_forward_unguarded(module, func, wrt, width, rules, true))
        .unwrap_or_else(|message| Err(AdError::Internal { func: func.into(), message }))
}

fn derive_forward_unguarded(
    module: &Module,
    func: &str,
    wrt: &[bool],
    width: u8,
    rules: &RuleSet,
    constant_tape: bool,
) -> Result<ForwardDerivative, AdError> {
    verify_module(module)?;
    if !matches!(width, 1 | 2 | 4 | 8 | 16) {
        return Err(AdError::BadWidth(width));
    }
    let id = checked_function(module, func, wrt)?;
    check_no_aliased_slices(module, id, rules)?;
    let (derived, mut out) = derive_from_source(module, |source| {
        let custom = CustomRules::new(rules);
        let mut deriver = Deriver {
            source,
            out: module.clone(),
            cache: HashMap::default(),
            width,
            tape_users: if constant_tape { HashSet::default() } else { super::activity::tape_users(source) },
            constant_tape,
            singular: Singular::analyse(source, &custom, id),
            custom,
            lane_ops: RefCell::default(),
        };
        let derived = deriver.derive(id, wrt)?;
        Ok((derived, deriver.out))
    })?;
    optimize_derived(&mut out, module.functions.len());
    // The functions `out` shares with `module` were verified above.
    verify_module_from(&out, module.functions.len()).map_err(|e| AdError::DerivedInvalid(Box::new(e)))?;
    let name = out.func(derived).name.clone();
    Ok(ForwardDerivative { module: out, name, width, wrt: wrt.to_vec() })
}

/// Derives functions into `out`, caching by (function, differentiated parameters) so that each
/// derived rule is built once and recursion terminates: the cache entry exists before the body.
struct Deriver<'m> {
    source: &'m Module,
    out: Module,
    cache: HashMap<(FuncId, Vec<bool>), FuncId>,
    width: u8,
    /// Functions that use the tape (see [`super::activity::tape_users`]).
    tape_users: HashSet<FuncId>,
    /// The tape holds constants: no tangents travel on it (see [`derive_forward_over_pullback`]).
    constant_tape: bool,
    /// Where partials can be infinite, and so which products need strong zeros.
    singular: Singular,
    custom: CustomRules<'m>,
    /// The tangent arithmetic emitted into the function being derived, for
    /// [`preaccumulate`] (saved and restored around a callee's derivation).
    lane_ops: RefCell<HashMap<Value, LaneOp>>,
}

impl Deriver<'_> {
    fn tangent_type(&self) -> Type {
        if self.width == 1 { Type::F64 } else { Type::F64x(self.width) }
    }

    fn derive(&mut self, id: FuncId, wrt: &[bool]) -> Result<FuncId, AdError> {
        if let Some(&done) = self.cache.get(&(id, wrt.to_vec())) {
            return Ok(done);
        }
        let source = self.source.func(id);
        let name = self.derived_name(source, wrt);
        // Reserve the slot with the final signature so recursive calls can refer to it.
        let mut derived = Function::new(name, vec![]);
        for &p in &source.params {
            derived.add_param(source.ty(p), source.values[p.index()].name.as_deref());
        }
        let mut tangent_params = HashMap::default();
        for (&p, &on) in source.params.iter().zip(wrt) {
            if on {
                let ty = if source.ty(p).is_slice() { source.ty(p) } else { self.tangent_type() };
                let label = format!("d_{}", source.value_label(p));
                tangent_params.insert(p, derived.add_param(ty, Some(&label)));
            }
        }
        derived.returns = source.returns.clone();
        let float_returns = source.returns.iter().filter(|t| **t == Type::F64).count();
        derived.returns.extend(std::iter::repeat_n(self.tangent_type(), float_returns));
        let new_id = self.out.push_function(derived);
        self.cache.insert((id, wrt.to_vec()), new_id);

        let callers_ops = self.lane_ops.take();
        let body = self.transform_body(id, wrt, new_id, tangent_params);
        let lane_ops = self.lane_ops.replace(callers_ops);
        let mut body = body?;
        preaccumulate(&mut body, &lane_ops);
        body.canonicalize();
        self.out.functions[new_id.index()] = body;
        Ok(new_id)
    }

    fn derived_name(&self, source: &Function, wrt: &[bool]) -> String {
        let mut name = format!("{}_jvp", source.name);
        if self.width > 1 {
            name.push_str(&format!("_w{}", self.width));
        }
        if wrt.iter().any(|on| !on) {
            name.push('_');
            name.extend(wrt.iter().map(|&on| if on { '1' } else { '0' }));
        }
        let mut unique = name.clone();
        let mut k = 2;
        while self.out.func_id(&unique).is_some() {
            unique = format!("{name}{k}");
            k += 1;
        }
        unique
    }

    /// Build the derived body. `tangent_params` maps source parameters to their tangent params
    /// in the (already reserved) derived function.
    fn transform_body(
        &mut self,
        id: FuncId,
        wrt: &[bool],
        new_id: FuncId,
        tangent_params: HashMap<Value, Value>,
    ) -> Result<Function, AdError> {
        let source = self.source.func(id);
        let activity = if self.constant_tape {
            Activity::analyse_constant_tape(source, wrt)
        } else {
            Activity::analyse_with_tape(source, wrt, &self.tape_users)
        };
        let mut func = self.out.functions[new_id.index()].clone();
        let mut primal: HashMap<Value, Value> =
            source.params.iter().copied().zip(func.params.iter().copied()).collect();
        let mut tangent = Tangents { values: tangent_params, negated: HashSet::default() };
        // Blocks first (same labels, same order), with tangent parameters for active block params.
        for block in &source.blocks {
            let b = func.add_block(&block.name);
            for &p in &block.params {
                let np = func.add_block_param(b, source.ty(p), source.values[p.index()].name.as_deref());
                primal.insert(p, np);
            }
            for &p in &block.params {
                if activity.is_active(p) {
                    let label = format!("d_{}", source.value_label(p));
                    let tp = func.add_block_param(b, self.tangent_type(), Some(&label));
                    tangent.values.insert(p, tp);
                }
            }
        }
        // Instruction results may be used before their definition in block order (back edges),
        // so create every primal result value up front.
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
        // Tangent values of instruction results are created when their instruction is reached,
        // but block order need not be dominance order: walk in reverse post-order.
        let cfg = jitdiff_ir::analysis::ControlFlow::new(source);
        let order: Vec<Block> = cfg.reverse_post_order().to_vec();
        let mut pending_terms: Vec<(Block, Terminator)> = vec![];
        for &b in &order {
            let block = source.block(b);
            let mut em = BlockEmitter::new(&mut func, b);
            for (index, inst) in block.insts.iter().enumerate() {
                let site = Site { func: &source.name, index: id.index(), block: &block.name, inst: index };
                let args: Vec<Value> = inst.args.iter().map(|a| primal[a]).collect();
                let results: Vec<Value> = inst.results.iter().map(|r| primal[r]).collect();
                let is_active_call = self.is_derived_call(inst, &activity);
                // A popped `f64` is emitted after its tangent's lanes (see `tape_tangent`).
                let is_float_pop = !self.constant_tape && inst.op == Opcode::TPop && inst.imm == Imm::Type(Type::F64);
                // A skip guard on an active value is rebuilt by `tangent_of_inst`.
                let is_active_guard = inst.op == Opcode::IsZero && activity.is_active(inst.args[0]);
                if !is_active_call && !is_float_pop && !is_active_guard {
                    em.func().block_mut(b).insts.push(InstData {
                        op: inst.op,
                        args: args.as_slice().into(),
                        imm: inst.imm,
                        results: results.as_slice().into(),
                    });
                }
                self.tangent_of_inst(&mut em, source, inst, &args, &results, &activity, &mut tangent, site)?;
            }
            if let Some(term) = &block.term {
                pending_terms.push((b, term.clone()));
            }
        }
        // Terminators last, once every tangent exists.
        for (b, term) in pending_terms {
            let new_term = self.transform_terminator(&mut func, b, source, &term, &primal, &tangent, &activity);
            func.block_mut(b).term = Some(new_term);
        }
        Ok(func)
    }
}

/// The tangents of a function's values. A tangent may be held negated (`negated` says which),
/// so that `fsub c, x` costs nothing and its negation folds into the next sum as an `fsub`; a
/// negated tangent is materialised (one `fneg`, once) only where it leaves an instruction: a
/// jump argument, a return value, a store or a call argument.
struct Tangents {
    values: HashMap<Value, Value>,
    negated: HashSet<Value>,
}

/// Where an instruction is, for error messages.
#[derive(Clone, Copy)]
struct Site<'a> {
    func: &'a str,
    /// The function's index in the source module.
    index: usize,
    block: &'a str,
    inst: usize,
}

impl Deriver<'_> {
    /// Note how the tangent arithmetic computed `v`; returns `v`.
    fn record(&self, v: Value, op: LaneOp) -> Value {
        self.lane_ops.borrow_mut().insert(v, op);
        v
    }

    /// A zero tangent emitted at the current position.
    fn zero(&self, em: &mut BlockEmitter<'_>) -> Value {
        let z = em.fconst(0.0);
        if self.width == 1 { z } else { em.emit(Opcode::Splat, &[z], Imm::Type(self.tangent_type())) }
    }

    /// The tangent of `v` as it must leave an instruction: negation materialised, zero for an
    /// inactive value. (The `fneg` is emitted at each such use rather than cached: the use may be
    /// in a block that does not dominate later uses. CSE merges repeats within a block.)
    fn tangent_or_zero(&self, em: &mut BlockEmitter<'_>, tangent: &Tangents, v: Value) -> Value {
        match tangent.values.get(&v) {
            Some(&t) if tangent.negated.contains(&v) => self.record(em.un(Opcode::FNeg, t), LaneOp::Neg(t)),
            Some(&t) => t,
            None => self.zero(em),
        }
    }

    /// `coef · t` for one term. Products are strong-zero products (`fmulsz`) where an infinite
    /// factor can occur (see `singular.rs`); `singular` says whether this instruction's
    /// [`Coef::ScaleStrong`] partials can really be infinite.
    fn scaled(&self, em: &mut BlockEmitter<'_>, coef: Coef, t: Value, singular: bool) -> Value {
        let broadcast = |em: &mut BlockEmitter<'_>, p: Value| {
            if self.width == 1 { p } else { em.emit(Opcode::Splat, &[p], Imm::Type(self.tangent_type())) }
        };
        match coef {
            Coef::One => t,
            Coef::MinusOne => self.record(em.un(Opcode::FNeg, t), LaneOp::Neg(t)),
            Coef::Scale(p) | Coef::ScaleStrong(p) => {
                let strong = self.singular.guards_every_product() || (singular && matches!(coef, Coef::ScaleStrong(_)));
                let lanes = broadcast(em, p);
                if strong {
                    em.bin(Opcode::FMulSz, lanes, t)
                } else {
                    self.record(em.bin(Opcode::FMul, lanes, t), LaneOp::Scale { coef: p, lane: t })
                }
            }
            Coef::When(c) => {
                let zero = self.zero(em);
                em.emit(Opcode::Select, &[c, t, zero], Imm::None)
            }
            Coef::Unless(c) => {
                let zero = self.zero(em);
                em.emit(Opcode::Select, &[c, zero, t], Imm::None)
            }
        }
    }

    /// The factor of a term whose product is a plain `fmul` (see [`Deriver::scaled`]).
    fn plain_factor(&self, coef: Coef, singular: bool) -> Option<Value> {
        match coef {
            Coef::Scale(p) if !self.singular.guards_every_product() => Some(p),
            Coef::ScaleStrong(p) if !self.singular.guards_every_product() && !singular => Some(p),
            _ => None,
        }
    }

    /// `acc + p·t` with one rounding (`p` broadcast to the lanes).
    fn multiply_add(&self, em: &mut BlockEmitter<'_>, p: Value, t: Value, acc: Value) -> Value {
        let lanes = if self.width == 1 { p } else { em.emit(Opcode::Splat, &[p], Imm::Type(self.tangent_type())) };
        let v = em.emit(Opcode::Fma, &[lanes, t, acc], Imm::None);
        self.record(v, LaneOp::MulAdd { coef: p, lane: t, acc })
    }

    /// Emit the tangent computation of one instruction (after its primal copy).
    #[allow(clippy::too_many_arguments)]
    fn tangent_of_inst(
        &mut self,
        em: &mut BlockEmitter<'_>,
        source: &Function,
        inst: &InstData,
        args: &[Value],
        results: &[Value],
        activity: &Activity,
        tangent: &mut Tangents,
        site: Site<'_>,
    ) -> Result<(), AdError> {
        let active: Vec<bool> = inst.args.iter().map(|a| activity.is_active(*a)).collect();
        let unsupported = || AdError::Unsupported {
            func: site.func.into(),
            block: site.block.into(),
            inst: site.inst,
            op: inst.op.spelling(),
        };
        match inst.op {
            Opcode::Load if active[0] => {
                let t = if self.width == 1 {
                    em.emit(Opcode::Load, &[tangent.values[&inst.args[0]], args[1]], Imm::None)
                } else {
                    em.emit(Opcode::VLoad, &[tangent.values[&inst.args[0]], args[1]], Imm::Type(self.tangent_type()))
                };
                tangent.values.insert(inst.results[0], t);
            }
            Opcode::Store => {
                let (slice, value) = (inst.args[0], inst.args[2]);
                if activity.is_active(slice) {
                    let t = self.tangent_or_zero(em, tangent, value);
                    let op = if self.width == 1 { Opcode::Store } else { Opcode::VStore };
                    em.emit_multi(op, &[tangent.values[&slice], args[1], t], Imm::None, &[]);
                } else if activity.is_active(value) {
                    return Err(AdError::StoreIntoInactiveSlice {
                        func: site.func.into(),
                        block: site.block.into(),
                        inst: site.inst,
                        slice: source.value_label(slice),
                    });
                }
            }
            // An active local array's tangent is another, with W lanes per element.
            Opcode::Alloc if activity.is_active(inst.results[0]) => {
                let len = if self.width == 1 {
                    args[0]
                } else {
                    let width = em.emit(Opcode::IConst, &[], Imm::I64(i64::from(self.width)));
                    em.bin(Opcode::IMul, args[0], width)
                };
                let t = em.emit(Opcode::Alloc, &[len], Imm::None);
                tangent.values.insert(inst.results[0], t);
            }
            // `iszero x` guards code skipped when `x` is zero (`reverse/skip.rs`): that code's
            // effect is zero only to first order if the tangent of `x` is zero too, so the
            // derived guard asks both (one derivative order per transform, so HVPs stay exact).
            Opcode::IsZero if active[0] => {
                let primal_zero = em.emit(Opcode::IsZero, &[args[0]], Imm::None);
                let tangent_zero = match tangent.values.get(&inst.args[0]) {
                    // A negated tangent is zero exactly when the tangent is.
                    Some(&t) => em.emit(Opcode::IsZero, &[t], Imm::None),
                    None => return Err(unsupported()),
                };
                em.push(InstData {
                    op: Opcode::And,
                    args: [primal_zero, tangent_zero].as_slice().into(),
                    imm: Imm::None,
                    results: [results[0]].as_slice().into(),
                });
            }
            Opcode::Call if self.is_derived_call(inst, activity) => {
                self.active_call(em, source, inst, args, results, activity, tangent, site)?
            }
            Opcode::TPush | Opcode::TPop if !self.constant_tape => self.tape_tangent(em, inst, args, results, tangent),
            Opcode::TPush | Opcode::TPop => {}
            Opcode::VLoad | Opcode::VStore | Opcode::Splat | Opcode::Extract | Opcode::Insert => {
                if active.iter().any(|&a| a) {
                    return Err(unsupported());
                }
            }
            Opcode::Fma if source.ty(inst.args[0]) != Type::F64 && active.iter().any(|&a| a) => {
                return Err(unsupported());
            }
            _ => {
                if inst.results.len() != 1 || !activity.is_active(inst.results[0]) {
                    return Ok(());
                }
                // An active operand without a tangent: a value of a kind forward mode does not
                // carry tangents for (a vector result of a call), refused like `splat` is.
                if inst.args.iter().zip(&active).any(|(a, &on)| on && !tangent.values.contains_key(a)) {
                    return Err(unsupported());
                }
                let first_new_value = em.func().values.len();
                let linearization = match (inst.op, inst.imm) {
                    (Opcode::Call, Imm::Callee(callee)) => {
                        let Some(rule) = self.custom.rule_for(self.source, callee) else { return Err(unsupported()) };
                        self.custom.linearize_call(
                            &mut self.out,
                            self.source,
                            callee,
                            rule,
                            em,
                            (args, results[0], &active),
                        )?
                    }
                    _ => linearize(inst.op, em, args, results[0], &active),
                };
                let singular = self.singular.is_singular(site.index, inst.results[0]);
                match linearization {
                    Linearization::Terms(terms) => {
                        // Each part carries a sign: negations are folded into `fsub`s and only
                        // materialised where a tangent leaves (see `Tangents`).
                        let mut sum: Option<(Value, bool)> = None;
                        let mut terms_seen: smallvec::SmallVec<[Value; 3]> = smallvec::SmallVec::new();
                        for term in terms {
                            let operand = inst.args[term.operand];
                            let (t, negated) = (tangent.values[&operand], tangent.negated.contains(&operand));
                            // A product after the first term is added with one rounding, keeping
                            // the sum's sign: `acc ± p·t` is `fma ±p, t, acc`. Not for a tangent
                            // summed twice (`x · x`): `p·t + p·t` stays two equal products, which
                            // `preaccumulate` merges into `2p·t`.
                            let repeated = terms_seen.contains(&t);
                            terms_seen.push(t);
                            if let (Some((acc, acc_negated)), Some(p), false) =
                                (sum, self.plain_factor(term.coef, singular), repeated)
                            {
                                let p = if acc_negated == negated { p } else { em.un(Opcode::FNeg, p) };
                                sum = Some((self.multiply_add(em, p, t, acc), acc_negated));
                                continue;
                            }
                            let (part, part_negated) = match term.coef {
                                Coef::One => (t, negated),
                                Coef::MinusOne => (t, !negated),
                                coef => (self.scaled(em, coef, t, singular), negated),
                            };
                            sum = Some(match sum {
                                None => (part, part_negated),
                                Some((acc, acc_negated)) if acc_negated == part_negated => {
                                    (self.record(em.bin(Opcode::FAdd, acc, part), LaneOp::Add(acc, part)), acc_negated)
                                }
                                Some((acc, false)) => {
                                    (self.record(em.bin(Opcode::FSub, acc, part), LaneOp::Sub(acc, part)), false)
                                }
                                Some((acc, true)) => {
                                    (self.record(em.bin(Opcode::FSub, part, acc), LaneOp::Sub(part, acc)), false)
                                }
                            });
                        }
                        let (t, negated) = match sum {
                            Some(s) => s,
                            None => (self.zero(em), false),
                        };
                        // Name the tangent after its primal when it is a value of its own.
                        if t.index() >= first_new_value
                            && let Some(name) = &source.values[inst.results[0].index()].name
                        {
                            let prefix = if negated { "minus_d_" } else { "d_" };
                            em.func().set_value_name(t, &format!("{prefix}{name}"));
                        }
                        tangent.values.insert(inst.results[0], t);
                        if negated {
                            tangent.negated.insert(inst.results[0]);
                        }
                    }
                    Linearization::Zero | Linearization::NoTangent => {}
                    Linearization::Structural => return Err(unsupported()),
                }
            }
        }
        Ok(())
    }

    /// Does this instruction call the callee's derived rule: a call with active arguments, or any
    /// call of a function that uses the tape?
    fn is_derived_call(&self, inst: &InstData, activity: &Activity) -> bool {
        inst.op == Opcode::Call
            && !self.ruled_call(inst)
            && (inst.args.iter().any(|a| activity.is_active(*a))
                || matches!(inst.imm, Imm::Callee(Callee::Func(id)) if self.tape_users.contains(&id)))
    }

    /// Is this a call of a function or extern with a custom rule?
    fn ruled_call(&self, inst: &InstData) -> bool {
        matches!(inst.imm, Imm::Callee(c) if inst.op == Opcode::Call && self.custom.rule_for(self.source, c).is_some())
    }

    /// Forward mode over a reverse-mode derivative (e.g. Hessian-vector products): the tangent
    /// of every `f64` on the tape travels on the tape right after it, one `f64` per lane — zero
    /// for an inactive value, so that pushes and pops stay paired whatever the activity of the
    /// function that pops. `tpush x` is followed by the pushes of `x`'s lanes; `tpop.f64` pops
    /// the lanes (last first) and then the value. Integer and boolean entries carry nothing.
    fn tape_tangent(
        &self,
        em: &mut BlockEmitter<'_>,
        inst: &InstData,
        args: &[Value],
        results: &[Value],
        tangent: &mut Tangents,
    ) {
        let lanes = self.width;
        match inst.op {
            Opcode::TPush if em.ty(args[0]) == Type::F64 => {
                let t = self.tangent_or_zero(em, tangent, inst.args[0]);
                for lane in 0..lanes {
                    let part = if lanes == 1 { t } else { em.emit(Opcode::Extract, &[t], Imm::Lane(lane)) };
                    em.emit_multi(Opcode::TPush, &[part], Imm::None, &[]);
                }
            }
            Opcode::TPop if inst.imm == Imm::Type(Type::F64) => {
                // Popped last lane first.
                let mut parts: Vec<Value> =
                    (0..lanes).map(|_| em.emit(Opcode::TPop, &[], Imm::Type(Type::F64))).collect();
                parts.reverse();
                let block = em.block();
                em.func().block_mut(block).insts.push(InstData {
                    op: Opcode::TPop,
                    args: smallvec::smallvec![],
                    imm: inst.imm,
                    results: jitdiff_ir::ValueList::from_slice(results),
                });
                let t = if lanes == 1 {
                    parts[0]
                } else {
                    let mut v = self.zero(em);
                    for (lane, &part) in parts.iter().enumerate() {
                        v = em.emit(Opcode::Insert, &[v, part], Imm::Lane(lane as u8));
                    }
                    v
                };
                tangent.values.insert(inst.results[0], t);
            }
            _ => {}
        }
    }

    /// A call with active arguments goes to the callee's derived rule.
    #[allow(clippy::too_many_arguments)]
    fn active_call(
        &mut self,
        em: &mut BlockEmitter<'_>,
        source: &Function,
        inst: &InstData,
        args: &[Value],
        results: &[Value],
        activity: &Activity,
        tangent: &mut Tangents,
        site: Site<'_>,
    ) -> Result<(), AdError> {
        let call = derived_call(self.source, inst, activity, (site.func, site.block, site.inst))?;
        let (callee_id, mask) = (call.callee, call.mask);
        let derived = self.derive(callee_id, &mask)?;
        let mut call_args = args.to_vec();
        for (a, &on) in inst.args.iter().zip(&mask) {
            if on {
                call_args.push(self.tangent_or_zero(em, tangent, *a));
            }
        }
        let mut result_types: Vec<Type> = inst.results.iter().map(|r| source.ty(*r)).collect();
        let float_results: Vec<Value> = inst.results.iter().copied().filter(|r| source.ty(*r) == Type::F64).collect();
        result_types.extend(std::iter::repeat_n(self.tangent_type(), float_results.len()));
        let all = em.emit_multi(Opcode::Call, &call_args, Imm::Callee(Callee::Func(derived)), &result_types);
        // The primal results keep their pre-created values: rebind the call's first results.
        let block = em.block();
        let last = em.func().block_mut(block).insts.last_mut().expect("the call was just pushed");
        last.results[..results.len()].copy_from_slice(results);
        for (r, t) in float_results.iter().zip(&all[results.len()..]) {
            tangent.values.insert(*r, *t);
        }
        Ok(())
    }

    /// Jumps pass tangents to active block parameters (zero when the argument is inactive);
    /// returns add one tangent per `f64` result.
    #[allow(clippy::too_many_arguments)]
    fn transform_terminator(
        &self,
        func: &mut Function,
        b: Block,
        source: &Function,
        term: &Terminator,
        primal: &HashMap<Value, Value>,
        tangent: &Tangents,
        activity: &Activity,
    ) -> Terminator {
        let mut em = BlockEmitter::new(func, b);
        let edge = |em: &mut BlockEmitter<'_>, call: &BlockCall| {
            let mut args: Vec<Value> = call.args.iter().map(|a| primal[a]).collect();
            let params = &source.block(call.block).params;
            for (a, p) in call.args.iter().zip(params) {
                if activity.is_active(*p) {
                    args.push(self.tangent_or_zero(em, tangent, *a));
                }
            }
            BlockCall { block: call.block, args: args.into() }
        };
        match term {
            Terminator::Jump(call) => Terminator::Jump(edge(&mut em, call)),
            Terminator::Branch { cond, then_dest, else_dest } => Terminator::Branch {
                cond: primal[cond],
                then_dest: edge(&mut em, then_dest),
                else_dest: edge(&mut em, else_dest),
            },
            Terminator::Return(vals) => {
                let mut out: Vec<Value> = vals.iter().map(|v| primal[v]).collect();
                for v in vals {
                    if source.ty(*v) == Type::F64 {
                        out.push(self.tangent_or_zero(&mut em, tangent, *v));
                    }
                }
                Terminator::Return(out)
            }
        }
    }
}
