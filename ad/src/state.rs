//! The pullback state of one `f_fwd`: for every forward value a reversed block needs (a rule's
//! partials, the index of a load or store), whether the pullback gets it back from the tape or
//! recomputes it.
//!
//! A reversed block gets each value it needs in one of four ways, cheapest first:
//!
//! - a **constant** is re-created (`100` in Rosenbrock's `100 * v^2`), and so is a data table
//!   (`table @y`, constant too) and what a pure instruction computes from constants alone
//!   (the partial `1 / 6` of `x / 6`, folded at derivation time);
//! - a **recomputed** value: a cheap pure instruction of the same block (float and integer
//!   arithmetic, comparisons, `select`, `len`, and loads from a *stable* slice — a `slice`
//!   parameter nothing can write while the forward function and its pullback run, or a data
//!   table), replayed
//!   at the start of the reversed block from its operands. A value is recomputed only when
//!   that costs at most one recorded entry: Rosenbrock's loop body records `i` alone and
//!   recomputes `x[i]`, `x[i+1]` and every partial from it, instead of recording five values.
//!   A value that would cost more waits until the block's other values are planned, since
//!   what they record may be what it needs (`f64::min`'s partials are recomputed from its two
//!   operands once the NaN test has recorded one of them);
//! - a loop's **induction variable** (`i` stepping by a constant from a constant or global
//!   start) is `init + trip * step`, from the trip count the reversed loop carries (see
//!   [`loops`](super::loops));
//! - a **global** value: a scalar parameter, or a value of the entry block needed in another
//!   block (a loop-invariant base index, say), recorded once per call — pushed just before the
//!   function returns and popped first by the pullback — instead of once per loop iteration;
//! - a value **carried** by a counted loop: a value defined before the loop (an *invariant*,
//!   such as a base index computed in an enclosing loop), or a *recurrence* (an integer the
//!   loop steps by a varying amount, see [`loops`](super::loops)), recorded once each time the
//!   loop ends — beside its trip count — and carried by the reversed loop as a block parameter;
//!   a recurrence is stepped back once per reversed iteration. Where a loop nested in another
//!   ends, its trip count, its induction variables' final values and its integer invariants are
//!   often integer arithmetic on what the reversed exit block has: then nothing is recorded
//!   and the pullback computes them (see [`exits`]);
//! - anything else is in the block's **frame**: pushed at the end of the forward block (after
//!   any state its calls nested on the tape) and popped at the start of the reversed block.
//!
//! Recomputing rather than recording trades a few arithmetic instructions for a store and a
//! load of tape memory, which is what bounds a reverse sweep over a long loop.

mod exits;

pub(super) use exits::ExitPlan;

use super::loops::{ExitTest, Induction, Loops, Step};
use jitdiff_ir::analysis::ControlFlow;
use jitdiff_ir::interp::eval_pure;
use jitdiff_ir::{Block, Function, Imm, InstData, Opcode, RuntimeValue, Type, Value};
use jitdiff_rules::{BlockEmitter, Emit};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// At most this many instructions are recomputed for one needed value; beyond that, recording
/// the value is cheaper.
const RECOMPUTE_LIMIT: usize = 16;

/// What one block records in its frame and recomputes in its reverse.
#[derive(Clone, Debug, Default)]
pub(super) struct BlockState {
    /// Forward values pushed at the end of the block, in push order.
    pub frame: Vec<Value>,
    /// Forward values recomputed at the start of the reversed block, in forward order.
    pub recompute: Vec<Value>,
    /// Induction variables recomputed from their loop's trip count, before `recompute`.
    pub inductions: Vec<Value>,
    /// Every value of the three lists above, for constant-time membership (a straight-line
    /// block of 100,000 instructions has a frame of tens of thousands).
    planned: HashSet<Value>,
}

/// A value a reversed counted loop carries as a block parameter, popped once per run of the
/// loop (the forward function pushes it, beside the trip count, on every edge leaving the loop).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Carry {
    /// Defined before the loop: the same in every iteration.
    Invariant(Value),
    /// A header parameter stepped on the back edge by `step` (added, or subtracted when
    /// `subtract`); the reversed latch steps it back.
    Recurrence { param: Value, subtract: bool, step: Step },
}

impl Carry {
    /// The forward value carried.
    pub fn value(&self) -> Value {
        match self {
            Carry::Invariant(v) => *v,
            Carry::Recurrence { param, .. } => *param,
        }
    }
}

/// Values carried by counted loops, with the index of their loop.
type Carries = Vec<(usize, Carry)>;

/// What the plan knows about one counted loop (forward blocks and values).
#[derive(Debug)]
struct LoopFacts {
    header: Block,
    latch: Block,
    body: HashSet<Block>,
    /// Recurrences: `(param, subtract, step)`.
    recurrences: Vec<(Value, bool, Step)>,
    /// The loop's exit test (forward values), if its trip count follows from start and bound.
    exit_test: Option<ExitTest>,
}

/// The pullback state of one forward function, planned block by block while it is built.
#[derive(Debug)]
pub(super) struct StatePlan {
    /// Slice parameters of `f_fwd` that nothing writes: the pullback receives them too.
    stable_slices: HashSet<Value>,
    /// Scalar parameters of `f_fwd`.
    scalar_params: HashSet<Value>,
    /// Values defined in the entry block (known once the entry block is planned).
    entry_values: HashSet<Value>,
    /// Whether the entry block runs once per call (it is not a loop header).
    entry_runs_once: bool,
    /// Induction variables of counted loops, by forward header parameter: the loop's header
    /// and the induction (forward values).
    inductions: HashMap<Value, (Block, Induction)>,
    /// The counted loops, in the order of [`Loops`].
    loops: Vec<LoopFacts>,
    /// Per block, the counted loops containing it (indices into `loops`, in order).
    containing: HashMap<Block, Vec<usize>>,
    /// Per counted loop: the values its reversed loop carries, in push order.
    pub carried: Vec<Vec<Carry>>,
    /// Every instruction of the blocks planned so far, by result.
    defs: HashMap<Value, InstData>,
    /// The block defining each value in `defs` and each block parameter planned so far.
    def_block: HashMap<Value, Block>,
    /// Values recorded once per call, in push order.
    pub global: Vec<Value>,
    /// Per block: its frame and recomputed values.
    pub blocks: HashMap<Block, BlockState>,
    /// Immediate dominators of the source's reachable blocks (the entry has none).
    idom: HashMap<Block, Block>,
    /// Per block: the headers of the natural loops containing it (any loop, counted or not).
    loop_headers: HashMap<Block, Vec<Block>>,
    /// Per counted loop: what the pullback computes where the loop ends instead of popping it.
    pub exits: Vec<ExitPlan>,
    /// The type of every parameter and of every value in `defs`.
    types: HashMap<Value, Type>,
    /// Values of pure instructions whose operands are all constants, as the constant
    /// instruction that re-creates each: the reciprocal `1 / 6` that the rule of `x / 6` computes
    /// in a loop body is re-created by the pullback, not pushed on every iteration.
    folded: HashMap<Value, (Opcode, Imm)>,
}

/// A tentative recomputation: what it would add to the block's state.
#[derive(Default)]
struct Trial {
    recompute: Vec<Value>,
    frame: Vec<Value>,
    global: Vec<Value>,
    inductions: Vec<Value>,
    carried: Vec<(usize, Carry)>,
}

impl StatePlan {
    /// A plan for `fwd` whose stable slice parameters are `stable_slices`, with the counted
    /// `loops` of its source and their `inductions` (forward values).
    /// `primal` maps the source values of `loops` to forward values.
    pub fn new(
        fwd: &Function,
        cfg: &ControlFlow,
        stable_slices: HashSet<Value>,
        entry_runs_once: bool,
        loops: &Loops,
        primal: &HashMap<Value, Value>,
    ) -> StatePlan {
        let scalar_params = fwd.params.iter().copied().filter(|&p| !fwd.ty(p).is_slice()).collect();
        let inductions = loops
            .loops
            .iter()
            .flat_map(|l| {
                l.inductions.iter().map(|i| {
                    let forward = Induction {
                        iv: primal[&i.iv],
                        init: primal[&i.init],
                        step: primal[&i.step],
                        subtract: i.subtract,
                    };
                    (forward.iv, (l.header, forward))
                })
            })
            .collect();
        let facts: Vec<LoopFacts> = loops
            .loops
            .iter()
            .map(|l| LoopFacts {
                header: l.header,
                latch: l.back_edge.0,
                body: l.body.clone(),
                recurrences: l
                    .recurrences
                    .iter()
                    .map(|r| (primal[&r.param], r.subtract, r.step.map(|a| primal[&a])))
                    .collect(),
                exit_test: l.exit_test.map(|e| ExitTest {
                    induction: Induction {
                        iv: primal[&e.induction.iv],
                        init: primal[&e.induction.init],
                        step: primal[&e.induction.step],
                        subtract: e.induction.subtract,
                    },
                    bound: primal[&e.bound],
                    ..e
                }),
            })
            .collect();
        let mut containing: HashMap<Block, Vec<usize>> = HashMap::default();
        for (k, l) in facts.iter().enumerate() {
            for &b in &l.body {
                containing.entry(b).or_default().push(k);
            }
        }
        let reachable = cfg.reverse_post_order();
        let idom = reachable.iter().filter_map(|&b| Some((b, cfg.immediate_dominator(b)?))).collect();
        let mut loop_headers: HashMap<Block, Vec<Block>> = reachable.iter().map(|&b| (b, vec![])).collect();
        for l in cfg.natural_loops() {
            for b in &l.blocks {
                if let Some(headers) = loop_headers.get_mut(b) {
                    headers.push(l.header);
                }
            }
        }
        StatePlan {
            stable_slices,
            scalar_params,
            entry_values: HashSet::default(),
            entry_runs_once,
            inductions,
            carried: vec![vec![]; loops.loops.len()],
            loops: facts,
            defs: HashMap::default(),
            def_block: HashMap::default(),
            global: vec![],
            blocks: HashMap::default(),
            idom,
            loop_headers,
            containing,
            exits: vec![ExitPlan::default(); loops.loops.len()],
            types: fwd.params.iter().map(|&p| (p, fwd.ty(p))).collect(),
            folded: HashMap::default(),
        }
    }

    /// Decide how the reverse of block `b` (already emitted into `fwd`) gets each of `needs`.
    /// Blocks must be planned in an order where definitions come first (reverse post-order).
    pub fn plan_block(&mut self, fwd: &Function, b: Block, needs: &[Value]) {
        for &p in &fwd.block(b).params {
            self.def_block.insert(p, b);
            self.types.insert(p, fwd.ty(p));
        }
        for inst in &fwd.block(b).insts {
            if let Some(constant) = self.fold(inst) {
                self.folded.insert(inst.results[0], constant);
            }
            for &r in &inst.results {
                self.defs.insert(r, inst.clone());
                self.def_block.insert(r, b);
                self.types.insert(r, fwd.ty(r));
                if b == Block::ENTRY {
                    self.entry_values.insert(r);
                }
            }
        }
        let mut state = BlockState::default();
        // Each value is recomputed when that records at most one entry, else recorded. A value
        // whose recomputation needs more is put off while others are planned: what they record
        // may be what it needs. (`min`'s partials, selects of constants on `a < b` and
        // `a == b`, are recomputed from `a` and `b` once `b` is recorded for the NaN test:
        // two entries, not three.)
        let mut pending: Vec<Value> = needs.to_vec();
        loop {
            let before = pending.len();
            pending.retain(|&v| !self.require(b, v, &mut state));
            if pending.is_empty() || pending.len() == before {
                break;
            }
        }
        // The rest are recorded, in order; each one recorded may let a later one be recomputed.
        for v in pending {
            if !self.require(b, v, &mut state) {
                state.planned.insert(v);
                state.frame.push(v);
            }
        }
        self.blocks.insert(b, state);
    }

    /// Plan `v` for block `b` when that records at most one entry (true), else leave it (false).
    fn require(&mut self, b: Block, v: Value, state: &mut BlockState) -> bool {
        if self.available(v, state) || self.is_constant(v) {
            return true;
        }
        // A value that is not recomputed lands in the trial as one frame entry, an induction
        // variable or a global; a recomputed one brings what its operands need.
        let mut trial = Trial::default();
        self.try_recompute(b, v, state, &mut trial);
        if trial.frame.len() <= 1 && trial.recompute.len() <= RECOMPUTE_LIMIT {
            state.planned.extend(trial.recompute.iter().chain(&trial.frame).chain(&trial.inductions));
            state.recompute.extend(std::mem::take(&mut trial.recompute));
            state.frame.extend(std::mem::take(&mut trial.frame));
            state.inductions.extend(std::mem::take(&mut trial.inductions));
            self.commit(trial);
            true
        } else {
            false
        }
    }

    /// Record the once-per-call values and carried values of `trial` (each once).
    fn commit(&mut self, trial: Trial) {
        for v in trial.global {
            if !self.global.contains(&v) {
                self.global.push(v);
            }
        }
        for (k, carry) in trial.carried {
            if !self.carried[k].contains(&carry) {
                self.carried[k].push(carry);
            }
        }
    }

    /// `(init, step)` when `v` is an induction variable of a counted loop containing `b` whose
    /// start and step are constants or once-per-call values.
    fn induction(&self, b: Block, v: Value) -> Option<(Value, Value)> {
        let &(header, Induction { init, step, .. }) = self.inductions.get(&v)?;
        let known = |x: Value| self.is_constant(x) || self.is_global(b, x);
        // The loop headed by `header` is among those containing `b` when `b` is in it.
        let inside = self.loops_containing(b).iter().any(|&k| self.loops[k].header == header);
        (inside && known(init) && known(step)).then_some((init, step))
    }

    /// Add to `trial` what recomputing `v` needs, recomputing cheap operands in turn.
    fn try_recompute(&self, b: Block, v: Value, state: &BlockState, trial: &mut Trial) {
        let known = [&trial.recompute, &trial.frame, &trial.global, &trial.inductions].iter().any(|l| l.contains(&v))
            || trial.carried.iter().any(|(_, c)| c.value() == v);
        if known || self.available(v, state) || self.is_constant(v) || self.carried_in(b, v) {
            return;
        }
        if self.recomputable(b, v) && trial.recompute.len() < RECOMPUTE_LIMIT {
            for &a in &self.defs[&v].args {
                self.try_recompute(b, a, state, trial);
            }
            trial.recompute.push(v);
        } else if let Some((init, step)) = self.induction(b, v) {
            for x in [init, step] {
                if !self.is_constant(x) && !self.global.contains(&x) && !trial.global.contains(&x) {
                    trial.global.push(x);
                }
            }
            trial.inductions.push(v);
        } else if self.is_global(b, v) {
            trial.global.push(v);
        } else if let Some((carried, global)) = self.recurrence(b, v) {
            trial.carried.extend(carried);
            trial.global.extend(global.into_iter().filter(|g| !self.global.contains(g)));
        } else if let Some(k) = self.invariant_loop(b, v) {
            trial.carried.push((k, Carry::Invariant(v)));
        } else {
            trial.frame.push(v);
        }
    }

    /// Is `v` carried by a counted loop containing `b` already?
    fn carried_in(&self, b: Block, v: Value) -> bool {
        self.loops_containing(b).iter().any(|&k| self.carried[k].iter().any(|c| c.value() == v))
    }

    /// The counted loops containing `b`, in order.
    fn loops_containing(&self, b: Block) -> &[usize] {
        self.containing.get(&b).map_or(&[], Vec::as_slice)
    }

    /// The outermost counted loop that contains `b` but not the definition of `v`: `v` does not
    /// change while it runs, so its reversed loop can carry it.
    fn invariant_loop(&self, b: Block, v: Value) -> Option<usize> {
        let def = self.def_block.get(&v)?;
        self.loops_containing(b)
            .iter()
            .copied()
            .filter(|&k| !self.loops[k].body.contains(def))
            .max_by_key(|&k| self.loops[k].body.len())
    }

    /// When `v` is an invertible recurrence of a counted loop containing `b`: the carries that
    /// recover it — the recurrence itself and the invariants its step needs, with their loop's
    /// index — and the step operands recorded once per call instead.
    fn recurrence(&self, b: Block, v: Value) -> Option<(Carries, Vec<Value>)> {
        let (k, &(param, subtract, step)) = self
            .loops_containing(b)
            .iter()
            .find_map(|&k| self.loops[k].recurrences.iter().find(|r| r.0 == v).map(|r| (k, r)))?;
        let latch = self.loops[k].latch;
        // Each step operand must be recoverable in the reversed latch without the tape, before
        // the latch steps the loop's recurrences back.
        let mut trial = Trial::default();
        for x in step.operands() {
            if !self.derivable(latch, x, exits::Scope::Latch(k), &mut trial, 0) {
                return None;
            }
        }
        let mut carries = vec![(k, Carry::Recurrence { param, subtract, step })];
        carries.extend(trial.carried);
        Some((carries, trial.global))
    }

    fn available(&self, v: Value, state: &BlockState) -> bool {
        self.stable_slices.contains(&v) || state.planned.contains(&v) || self.global.contains(&v)
    }

    /// A constant the pullback re-creates rather than gets back: `fconst`, `iconst`, `bconst`,
    /// `table` (a table is constant data), and what a pure instruction computes from constants
    /// (see `folded`).
    fn is_constant(&self, v: Value) -> bool {
        self.folded.contains_key(&v)
            || self
                .defs
                .get(&v)
                .is_some_and(|i| matches!(i.op, Opcode::FConst | Opcode::IConst | Opcode::BConst | Opcode::Table))
    }

    /// The constant `inst` computes, when it is a pure instruction of one result whose operands
    /// are constants (evaluated as the interpreter does, so the re-created value is the same
    /// bit for bit; nothing that fails, such as an integer division by zero, is folded).
    fn fold(&self, inst: &InstData) -> Option<(Opcode, Imm)> {
        if inst.results.len() != 1 || inst.args.is_empty() || inst.op.has_side_effects() {
            return None;
        }
        let operands = inst
            .args
            .iter()
            .map(|&a| {
                let (op, imm) = self.constant(a)?;
                match (op, imm) {
                    (Opcode::FConst, Imm::F64(x)) => Some(RuntimeValue::F64(x)),
                    (Opcode::IConst, Imm::I64(x)) => Some(RuntimeValue::I64(x)),
                    (Opcode::BConst, Imm::Bool(x)) => Some(RuntimeValue::Bool(x)),
                    _ => None,
                }
            })
            .collect::<Option<Vec<_>>>()?;
        eval_pure(inst.op, &inst.imm, &operands)?.as_constant()
    }

    /// A cheap pure instruction of block `b` whose replay gives the same value.
    fn recomputable(&self, b: Block, v: Value) -> bool {
        let Some(inst) = self.defs.get(&v) else { return false };
        if self.def_block.get(&v) != Some(&b) || inst.results.len() != 1 {
            return false;
        }
        match inst.op {
            Opcode::FAdd
            | Opcode::FSub
            | Opcode::FMul
            | Opcode::FMulSz
            | Opcode::FNeg
            | Opcode::Abs
            | Opcode::Min
            | Opcode::Max
            | Opcode::IAdd
            | Opcode::ISub
            | Opcode::IMul
            | Opcode::INeg
            | Opcode::IAnd
            | Opcode::IOr
            | Opcode::IXor
            | Opcode::IShl
            | Opcode::IShr
            | Opcode::UShr
            | Opcode::And
            | Opcode::Or
            | Opcode::Not
            | Opcode::FCmp
            | Opcode::ICmp
            | Opcode::Select
            | Opcode::IToF => true,
            // The pullback has the stable slices and the tables only; an `mslice` may have
            // changed since.
            Opcode::Len | Opcode::Load => self.stable_slices.contains(&inst.args[0]) || self.is_constant(inst.args[0]),
            _ => false,
        }
    }

    /// Recorded once per call: scalar parameters anywhere, entry-block values elsewhere.
    fn is_global(&self, b: Block, v: Value) -> bool {
        self.entry_runs_once
            && (self.scalar_params.contains(&v) || (b != Block::ENTRY && self.entry_values.contains(&v)))
    }

    /// The constant instruction defining `v`, if any.
    pub fn constant(&self, v: Value) -> Option<(Opcode, Imm)> {
        if let Some(&folded) = self.folded.get(&v) {
            return Some(folded);
        }
        self.defs.get(&v).filter(|_| self.is_constant(v)).map(|i| (i.op, i.imm))
    }

    /// Emit into the pullback's first block: pop the global values (pushed last by `f_fwd`).
    /// `slices` maps each stable slice parameter of `f_fwd` to the pullback's parameter.
    pub fn restore_global(
        &self,
        em: &mut BlockEmitter<'_>,
        fwd: &Function,
        slices: HashMap<Value, Value>,
    ) -> HashMap<Value, Value> {
        let mut env = slices;
        for &v in self.global.iter().rev() {
            env.insert(v, em.emit(Opcode::TPop, &[], Imm::Type(fwd.ty(v))));
        }
        env
    }

    /// Emit at the start of the reversed block `b`: pop its frame, then recompute. `loop_state`
    /// holds, for each counted loop containing `b` (by index), its trip count and the values it
    /// carries (the reversed block's parameters). Returns the forward values available to the
    /// reversed block, mapped to pullback values.
    pub fn restore_block(
        &self,
        em: &mut BlockEmitter<'_>,
        fwd: &Function,
        b: Block,
        global: &HashMap<Value, Value>,
        loop_state: &[(usize, Value, Vec<Value>)],
    ) -> HashMap<Value, Value> {
        let mut env = global.clone();
        let mut trips: HashMap<Block, Value> = HashMap::default();
        for (k, trip, params) in loop_state {
            trips.insert(self.loops[*k].header, *trip);
            for (carry, &p) in self.carried[*k].iter().zip(params) {
                env.insert(carry.value(), p);
            }
        }
        let empty = BlockState::default();
        let state = self.blocks.get(&b).unwrap_or(&empty);
        for &v in state.frame.iter().rev() {
            env.insert(v, em.emit(Opcode::TPop, &[], Imm::Type(fwd.ty(v))));
        }
        let induction = |em: &mut BlockEmitter<'_>, env: &HashMap<Value, Value>, v: Value| {
            let (header, Induction { init, step, subtract, .. }) = self.inductions[&v];
            let (init, step) = (self.value(em, env, init), self.value(em, env, step));
            let offset = em.emit(Opcode::IMul, &[trips[&header], step], Imm::None);
            em.emit(if subtract { Opcode::ISub } else { Opcode::IAdd }, &[init, offset], Imm::None)
        };
        for &v in &state.inductions {
            let value = induction(em, &env, v);
            env.insert(v, value);
        }
        // The reversed latch of a loop steps its recurrences back to this iteration's values.
        for (k, _, _) in loop_state {
            let l = &self.loops[*k];
            if l.latch != b || l.header == b {
                continue;
            }
            for carry in &self.carried[*k] {
                let Carry::Recurrence { param, subtract, step } = *carry else { continue };
                let args: Vec<Value> = step.operands().iter().map(|&x| self.derive(em, &env, &trips, x)).collect();
                let step = match step {
                    Step::Value(_) => args[0],
                    Step::Op(op, _) => em.emit(op, &args, Imm::None),
                };
                let undo = if subtract { Opcode::IAdd } else { Opcode::ISub };
                let previous = em.emit(undo, &[env[&param], step], Imm::None);
                env.insert(param, previous);
            }
        }
        for &v in &state.recompute {
            let inst = &self.defs[&v];
            let args: Vec<Value> = inst.args.iter().map(|&a| self.value(em, &env, a)).collect();
            let r = em.emit_multi(inst.op, &args, inst.imm, &[fwd.ty(v)])[0];
            env.insert(v, r);
        }
        env
    }

    /// The values the reversed loop `k` carries, as the reversed block whose restored values are
    /// `env` passes them on (a reversed latch passes its recurrences stepped back).
    pub fn carried_values(&self, k: usize, env: &HashMap<Value, Value>) -> Vec<Value> {
        self.carried[k].iter().map(|c| env[&c.value()]).collect()
    }

    /// The types of the values the reversed loop `k` carries.
    pub fn carried_types(&self, k: usize, fwd: &Function) -> Vec<Type> {
        self.carried[k].iter().map(|c| fwd.ty(c.value())).collect()
    }

    /// The pullback value of the forward value `v` in a reversed block whose restored values
    /// are `env`: restored, or a constant re-created here.
    pub fn value(&self, em: &mut BlockEmitter<'_>, env: &HashMap<Value, Value>, v: Value) -> Value {
        if let Some(&r) = env.get(&v) {
            return r;
        }
        // Every need was planned by `plan_block`, so anything not restored is a constant.
        let (op, imm) = self.constant(v).expect("a needed value is restored, recomputed or constant");
        em.emit(op, &[], imm)
    }

    /// Record `v` (a forward value of the entry block) once per call, unless it is a constant:
    /// the pullback needs it before any reversed block runs (the length of a local array's
    /// differential, which its first block allocates).
    pub fn require_global(&mut self, v: Value) {
        if !self.is_constant(v) && !self.global.contains(&v) {
            self.global.push(v);
        }
    }

    /// The values pushed at the end of block `b`, in push order.
    pub fn frame(&self, b: Block) -> &[Value] {
        self.blocks.get(&b).map_or(&[], |s| &s.frame)
    }
}
