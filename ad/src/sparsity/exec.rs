//! The abstract interpreter behind sparsity detection. It runs the function on concrete
//! arguments — control flow, integer arithmetic, memory and float values exactly as the
//! reference interpreter does — and carries with every `f64` the set of inputs it depends on,
//! plus three flags: [`VARIES`] (the value may change when the inputs change), [`DATA`] (it
//! was computed from `f64` data that are not inputs) and [`MUTABLE_DATA`] (from the initial
//! contents of a buffer the function may write: an `mslice` that is not an input).
//!
//! What the pattern may rely on:
//!
//! - A decision (branch, `select`, load/store index, `alloc` length) on a value that does not
//!   vary is the same for every input, so it is taken as at these arguments. If the value came
//!   from non-input data, the pattern holds for these data only ([`Machine::depends_on_data`]).
//! - A branch on a varying condition runs *both* sides up to their immediate post-dominator and
//!   merges them there: registers and memory written on either side get the union of both
//!   sides' sets (an undo log restores memory between the sides). A side that faults on a value
//!   that does not vary is one no successful call takes and is dropped; the side the arguments
//!   take is run last, so concrete values stay those of the real call. Reaching the same branch
//!   again before the sides meet — a loop whose exit depends on the inputs — is refused.
//! - A load at a varying index depends on the whole slice; a store at one may change any element.
//! - Hessian interactions ("nonlinear interaction domains", Walther 2008): every nonlinear
//!   operation records the pairs of sets whose products its second derivative has (`a * b`:
//!   `A × B`; `sin a`: `A × A`; `a / b`: `A × B` and `B × B`). Linear and piecewise-linear
//!   operations record nothing.

use super::SparsityError;
use super::sets::{EMPTY, SetId, Sets};
use jitdiff_ir::analysis::immediate_post_dominators;
use jitdiff_ir::interp::eval;
use jitdiff_ir::{
    Block, BlockCall, Callee, ExternArg, ExternImpl, ExternRegistry, Fault, Function, Imm, InstData, MAX_CALL_DEPTH,
    Module, Opcode, RuntimeValue, Shape, Site, Terminator, Type,
};
use rustc_hash::FxHashSet as HashSet;
use smallvec::SmallVec;

/// The value may change when the inputs change.
pub(super) const VARIES: u8 = 1;
/// The value was computed from `f64` data that are not inputs.
pub(super) const DATA: u8 = 2;
/// ... from the initial contents of an `mslice` argument that is not an input (a buffer the
/// function may also write: its contents at the next call need not be these).
pub(super) const MUTABLE_DATA: u8 = 4;

/// A value: its concrete bits (`f64` bits, `i64`, `bool` as 0/1, or an array id for a slice),
/// the inputs it depends on and its flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Slot {
    pub bits: u64,
    pub set: SetId,
    pub flags: u8,
}

impl Slot {
    fn varies(self) -> bool {
        self.flags & VARIES != 0
    }
    fn float(self) -> f64 {
        f64::from_bits(self.bits)
    }
    fn of_f64(x: f64, set: SetId, flags: u8) -> Slot {
        Slot { bits: x.to_bits(), set, flags }
    }
    fn of_int(x: i64, flags: u8) -> Slot {
        Slot { bits: x as u64, set: EMPTY, flags }
    }
}

/// A slice's contents.
#[derive(Debug, Default)]
pub(super) struct Array {
    pub slots: Vec<Slot>,
    /// The union of every element's set and flags (for loads at varying indices).
    whole: Option<(SetId, u8)>,
}

/// Why a run stopped.
pub(super) enum Stop {
    /// A run-time fault: real on the side the arguments take; on another side it means no
    /// successful call goes that way.
    Fault(Fault),
    /// The analysis cannot go on.
    Error(SparsityError),
}

impl From<SparsityError> for Stop {
    fn from(e: SparsityError) -> Stop {
        Stop::Error(e)
    }
}

enum Exit {
    /// The stop block was reached.
    Reached,
    /// The function returned.
    Returned(SmallVec<[Slot; 2]>),
}

struct Frame {
    regs: Vec<Slot>,
    /// Branches whose sides are being run (in this frame).
    forks: SmallVec<[Block; 4]>,
    /// Local arrays, freed on return.
    locals: SmallVec<[u32; 2]>,
}

/// One analysis.
pub(super) struct Machine<'m> {
    module: &'m Module,
    externs: Option<&'m ExternRegistry>,
    /// Functions to treat as opaque scalar functions (those with custom rules).
    opaque: Vec<bool>,
    /// Functions that use lane vectors (not supported).
    lanes: Vec<bool>,
    postdoms: Vec<Option<Vec<Option<Block>>>>,
    pub sets: Sets,
    pub arrays: Vec<Array>,
    /// Undo log of memory writes while a branch's sides are run: (array, index, old value).
    log: Vec<(u32, u32, Slot)>,
    open_forks: usize,
    /// How many enclosing branches are on the side the arguments do not take.
    alt_depth: usize,
    depth: usize,
    /// Hessian interactions: pairs of sets, when asked for.
    pub pairs: Option<Vec<(SetId, SetId)>>,
    /// Some decision depended on non-input `f64` data.
    pub depends_on_data: bool,
    /// ... on the initial contents of a non-input `mslice` among them.
    pub depends_on_mutable_data: bool,
    tape: Vec<Slot>,
    cursor: usize,
    pool: Vec<Vec<Slot>>,
}

fn site(func: &Function, block: Block, inst: usize) -> Site {
    Site { func: func.name.clone(), block: func.block(block).name.clone(), inst }
}

fn unsupported(func: &Function, block: Block, inst: usize, message: impl Into<String>) -> Stop {
    Stop::Error(SparsityError::Unsupported { site: site(func, block, inst), message: message.into() })
}

impl<'m> Machine<'m> {
    pub fn new(
        module: &'m Module,
        externs: Option<&'m ExternRegistry>,
        opaque: &[String],
        inputs: usize,
        hessian: bool,
    ) -> Machine<'m> {
        let lanes = module.functions.iter().map(|f| f.values.iter().any(|v| matches!(v.ty, Type::F64x(_)))).collect();
        Machine {
            module,
            externs,
            opaque: module.functions.iter().map(|f| opaque.contains(&f.name)).collect(),
            lanes,
            postdoms: vec![None; module.functions.len()],
            sets: Sets::new(inputs),
            arrays: vec![],
            log: vec![],
            open_forks: 0,
            alt_depth: 0,
            depth: 0,
            pairs: hessian.then(|| Vec::with_capacity(4 * inputs)),
            depends_on_data: false,
            depends_on_mutable_data: false,
            tape: vec![],
            cursor: 0,
            pool: vec![],
        }
    }

    /// A new array; its id.
    pub fn new_array(&mut self, slots: Vec<Slot>) -> u32 {
        self.arrays.push(Array { slots, whole: None });
        (self.arrays.len() - 1) as u32
    }

    /// Run function `fid` on `args` (as the entry call).
    pub fn call_entry(&mut self, fid: usize, args: &[Slot]) -> Result<SmallVec<[Slot; 2]>, Stop> {
        self.run_function(fid, args)
    }

    #[inline]
    fn pair(&mut self, a: SetId, b: SetId) {
        if a == EMPTY || b == EMPTY {
            return;
        }
        let (a, b) = (a.min(b), a.max(b));
        // The same interactions recur within a loop body: skip those of the last few records.
        if let Some(pairs) = &mut self.pairs
            && !pairs[pairs.len().saturating_sub(4)..].contains(&(a, b))
        {
            pairs.push((a, b));
        }
    }

    /// Is this value's concrete content exact for the analysis (the side the arguments take,
    /// or a value that does not vary)?
    fn trusted(&self, slot: Slot) -> bool {
        self.alt_depth == 0 || !slot.varies()
    }

    /// Note a decision on `slot`.
    fn decide(&mut self, slot: Slot) {
        if slot.flags & (DATA | MUTABLE_DATA) != 0 {
            self.depends_on_data = true;
        }
        if slot.flags & MUTABLE_DATA != 0 {
            self.depends_on_mutable_data = true;
        }
    }

    fn write(&mut self, array: u32, index: usize, slot: Slot) {
        let a = &mut self.arrays[array as usize];
        if self.open_forks > 0 {
            self.log.push((array, index as u32, a.slots[index]));
        }
        a.slots[index] = slot;
        a.whole = None;
    }

    fn whole(&mut self, array: u32) -> (SetId, u8) {
        if let Some(w) = self.arrays[array as usize].whole {
            return w;
        }
        let (mut set, mut flags) = (EMPTY, 0);
        for k in 0..self.arrays[array as usize].slots.len() {
            let s = self.arrays[array as usize].slots[k];
            set = self.sets.union(set, s.set);
            flags |= s.flags;
        }
        self.arrays[array as usize].whole = Some((set, flags));
        (set, flags)
    }

    fn merge(&mut self, kept: Slot, other: Slot) -> Slot {
        let set = self.sets.union(kept.set, other.set);
        let mut flags = kept.flags | other.flags;
        if kept.bits != other.bits {
            flags |= VARIES;
        }
        Slot { bits: kept.bits, set, flags }
    }

    fn postdom(&mut self, fid: usize) -> &[Option<Block>] {
        let module = self.module;
        self.postdoms[fid].get_or_insert_with(|| immediate_post_dominators(&module.functions[fid]))
    }

    fn run_function(&mut self, fid: usize, args: &[Slot]) -> Result<SmallVec<[Slot; 2]>, Stop> {
        let module = self.module;
        let func = &module.functions[fid];
        if self.lanes[fid] {
            return Err(unsupported(
                func,
                Block::ENTRY,
                0,
                "lane vectors (f64xW) are not supported by sparsity detection",
            ));
        }
        let mut regs = self.pool.pop().unwrap_or_default();
        regs.clear();
        regs.resize(func.values.len(), Slot::default());
        for (p, a) in func.params.iter().zip(args) {
            regs[p.index()] = *a;
        }
        let mut frame = Frame { regs, forks: SmallVec::new(), locals: SmallVec::new() };
        self.depth += 1;
        let out = self.run(fid, &mut frame, Block::ENTRY, None);
        self.depth -= 1;
        for &id in &frame.locals {
            self.arrays[id as usize] = Array::default();
        }
        self.pool.push(frame.regs);
        match out? {
            Exit::Returned(values) => Ok(values),
            Exit::Reached => Err(Stop::Error(SparsityError::Internal("a function ended without returning".into()))),
        }
    }

    fn jump(func: &Function, frame: &mut Frame, call: &BlockCall) {
        let params = &func.block(call.block).params;
        if let [arg] = call.args[..] {
            frame.regs[params[0].index()] = frame.regs[arg.index()];
            return;
        }
        // Parallel moves (a loop edge may permute its parameters): read all, then write.
        if call.args.len() <= 8 {
            let mut values = [Slot::default(); 8];
            for (v, a) in values.iter_mut().zip(&call.args) {
                *v = frame.regs[a.index()];
            }
            for (p, v) in params.iter().zip(values) {
                frame.regs[p.index()] = v;
            }
        } else {
            let values: Vec<Slot> = call.args.iter().map(|a| frame.regs[a.index()]).collect();
            for (p, v) in params.iter().zip(values) {
                frame.regs[p.index()] = v;
            }
        }
    }

    fn run(&mut self, fid: usize, frame: &mut Frame, mut block: Block, stop: Option<Block>) -> Result<Exit, Stop> {
        let module = self.module;
        let func = &module.functions[fid];
        loop {
            if Some(block) == stop {
                return Ok(Exit::Reached);
            }
            let data = func.block(block);
            for (i, inst) in data.insts.iter().enumerate() {
                self.inst(func, frame, block, i, inst)?;
            }
            match data.term.as_ref() {
                Some(Terminator::Jump(call)) => {
                    Self::jump(func, frame, call);
                    block = call.block;
                }
                Some(Terminator::Branch { cond, then_dest, else_dest }) => {
                    let c = frame.regs[cond.index()];
                    let taken = c.bits != 0;
                    if !c.varies() {
                        self.decide(c);
                        let dest = if taken { then_dest } else { else_dest };
                        Self::jump(func, frame, dest);
                        block = dest.block;
                    } else {
                        match self.fork(fid, frame, block, taken, then_dest, else_dest)? {
                            Exit::Reached => {
                                block = self.postdom(fid)[block.index()].expect("the sides met at a block");
                            }
                            returned => return Ok(returned),
                        }
                    }
                }
                Some(Terminator::Return(values)) => {
                    return Ok(Exit::Returned(values.iter().map(|v| frame.regs[v.index()]).collect()));
                }
                None => return Err(unsupported(func, block, data.insts.len(), "a block without a terminator")),
            }
        }
    }

    /// Both sides of a branch on a varying condition, merged where they meet.
    fn fork(
        &mut self,
        fid: usize,
        frame: &mut Frame,
        block: Block,
        taken: bool,
        then_dest: &BlockCall,
        else_dest: &BlockCall,
    ) -> Result<Exit, Stop> {
        let module = self.module;
        let func = &module.functions[fid];
        if frame.forks.contains(&block) {
            return Err(unsupported(
                func,
                block,
                func.block(block).insts.len(),
                "a loop whose exit depends on the differentiated inputs (the pattern would depend on how many \
                 times it runs); sparsity detection needs trip counts that do not depend on the inputs",
            ));
        }
        let meet = self.postdom(fid)[block.index()];
        let (concrete, alt) = if taken { (then_dest, else_dest) } else { (else_dest, then_dest) };
        frame.forks.push(block);
        self.open_forks += 1;
        let mark = self.log.len();
        let before = frame.regs.clone();
        // The side these arguments do not take, first.
        self.alt_depth += 1;
        Self::jump(func, frame, alt);
        let alt_out = self.run(fid, frame, alt.block, meet);
        self.alt_depth -= 1;
        let alt_regs = std::mem::replace(&mut frame.regs, before);
        let alt_state = match alt_out {
            Ok(exit) => Some((exit, alt_regs, self.finals_since(mark))),
            Err(Stop::Fault(_)) => None,
            Err(e) => {
                frame.forks.pop();
                self.open_forks -= 1;
                return Err(e);
            }
        };
        self.undo_to(mark);
        // Then the side they take. (A fault there is real here, or makes an enclosing branch's
        // side infeasible: either way this branch is done.)
        Self::jump(func, frame, concrete);
        let out = self.run(fid, frame, concrete.block, meet);
        frame.forks.pop();
        self.open_forks -= 1;
        let out = out?;
        let Some((alt_exit, alt_regs, alt_writes)) = alt_state else {
            if self.open_forks == 0 {
                self.log.clear();
            }
            return Ok(out);
        };
        for (kept, &other) in frame.regs.iter_mut().zip(&alt_regs) {
            if *kept != other {
                *kept = self.merge(*kept, other);
            }
        }
        // Memory: a location written on either side may hold either side's value.
        let originals = self.originals_since(mark);
        let mut seen: HashSet<(u32, u32)> = HashSet::with_capacity_and_hasher(alt_writes.len(), Default::default());
        for &(array, index, other) in &alt_writes {
            seen.insert((array, index));
            if let Some(&kept) = self.arrays[array as usize].slots.get(index as usize) {
                let merged = self.merge(kept, other);
                self.write(array, index as usize, merged);
            }
        }
        for &(array, index, other) in &originals {
            if seen.contains(&(array, index)) {
                continue;
            }
            if let Some(&kept) = self.arrays[array as usize].slots.get(index as usize) {
                let merged = self.merge(kept, other);
                self.write(array, index as usize, merged);
            }
        }
        if self.open_forks == 0 {
            self.log.clear();
        }
        match (out, alt_exit) {
            (Exit::Reached, Exit::Reached) => Ok(Exit::Reached),
            (Exit::Returned(kept), Exit::Returned(other)) => {
                Ok(Exit::Returned(kept.iter().zip(&other).map(|(k, o)| self.merge(*k, *o)).collect()))
            }
            _ => Err(Stop::Error(SparsityError::Internal("the two sides of a branch ended differently".into()))),
        }
    }

    /// Every location written since `mark`, with its current value.
    fn finals_since(&self, mark: usize) -> Vec<(u32, u32, Slot)> {
        let mut seen = HashSet::default();
        let mut out = vec![];
        for &(array, index, _) in &self.log[mark..] {
            if seen.insert((array, index))
                && let Some(&now) = self.arrays[array as usize].slots.get(index as usize)
            {
                out.push((array, index, now));
            }
        }
        out
    }

    /// Every location written since `mark`, with its value before the first such write.
    fn originals_since(&self, mark: usize) -> Vec<(u32, u32, Slot)> {
        let mut seen = HashSet::default();
        let mut out = vec![];
        for &(array, index, old) in &self.log[mark..] {
            if seen.insert((array, index)) {
                out.push((array, index, old));
            }
        }
        out
    }

    fn undo_to(&mut self, mark: usize) {
        while self.log.len() > mark {
            let (array, index, old) = self.log.pop().expect("above the mark");
            let a = &mut self.arrays[array as usize];
            if let Some(s) = a.slots.get_mut(index as usize) {
                *s = old;
                a.whole = None;
            }
        }
    }

    fn inst(
        &mut self,
        func: &Function,
        frame: &mut Frame,
        block: Block,
        index: usize,
        inst: &InstData,
    ) -> Result<(), Stop> {
        let arg = |k: usize| frame.regs[inst.args[k].index()];
        let at = || site(func, block, index);
        let op = inst.op;
        let result = match op.shape() {
            Shape::Const => Some(match inst.imm {
                Imm::F64(x) => Slot::of_f64(x, EMPTY, 0),
                Imm::I64(x) => Slot::of_int(x, 0),
                Imm::Bool(x) => Slot::of_int(i64::from(x), 0),
                _ => return Err(unsupported(func, block, index, "a constant without a value")),
            }),
            Shape::FloatUnary { .. } => {
                let a = arg(0);
                let x = eval::float_unary(op, a.float()).unwrap_or(f64::NAN);
                let set = match op {
                    Opcode::FNeg | Opcode::Abs => a.set,
                    _ if jitdiff_rules::is_piecewise_constant(op) => EMPTY,
                    _ => {
                        self.pair(a.set, a.set);
                        a.set
                    }
                };
                Some(Slot::of_f64(x, set, a.flags))
            }
            Shape::FloatBinary { .. } => {
                let (a, b) = (arg(0), arg(1));
                let x = eval::float_binary(op, a.float(), b.float()).unwrap_or(f64::NAN);
                let union = self.sets.union(a.set, b.set);
                match op {
                    Opcode::FAdd | Opcode::FSub | Opcode::Min | Opcode::Max => {}
                    Opcode::FMul | Opcode::FMulSz => self.pair(a.set, b.set),
                    Opcode::FDiv => {
                        self.pair(a.set, b.set);
                        self.pair(b.set, b.set);
                    }
                    _ => self.pair(union, union),
                }
                Some(Slot::of_f64(x, union, a.flags | b.flags))
            }
            Shape::Powi => {
                let (a, n) = (arg(0), arg(1));
                let x = eval::powi(a.float(), n.bits as i64);
                let clean = n.flags == 0;
                let set = match n.bits as i64 {
                    0 if clean => EMPTY,
                    1 if clean => a.set,
                    _ => {
                        self.pair(a.set, a.set);
                        a.set
                    }
                };
                Some(Slot::of_f64(x, set, a.flags | n.flags))
            }
            Shape::FloatTernary => {
                let (a, b, c) = (arg(0), arg(1), arg(2));
                self.pair(a.set, b.set);
                let set = self.sets.union3(a.set, b.set, c.set);
                Some(Slot::of_f64(eval::fma(a.float(), b.float(), c.float()), set, a.flags | b.flags | c.flags))
            }
            Shape::IntUnary => {
                let a = arg(0);
                Some(Slot::of_int(eval::int_unary(op, a.bits as i64).unwrap_or(0), a.flags))
            }
            Shape::IntBinary => {
                let (a, b) = (arg(0), arg(1));
                let flags = a.flags | b.flags;
                match eval::int_binary(op, a.bits as i64, b.bits as i64) {
                    Ok(x) => Some(Slot::of_int(x, flags)),
                    // A divisor that is zero only on a side not taken, at these arguments.
                    Err(_) if !self.trusted(b) => Some(Slot::of_int(0, flags)),
                    Err(_) => return Err(Stop::Fault(Fault::DivisionByZero { site: at() })),
                }
            }
            Shape::BoolUnary => {
                let a = arg(0);
                Some(Slot::of_int(i64::from(eval::bool_unary(op, a.bits != 0).unwrap_or(false)), a.flags))
            }
            Shape::BoolBinary => {
                let (a, b) = (arg(0), arg(1));
                let x = eval::bool_binary(op, a.bits != 0, b.bits != 0).unwrap_or(false);
                Some(Slot::of_int(i64::from(x), a.flags | b.flags))
            }
            // A skip guard: `false`, the path whose dependencies include the skipped ones.
            Shape::FloatTest => Some(Slot::of_int(0, 0)),
            Shape::FloatCompare | Shape::IntCompare => {
                let (a, b) = (arg(0), arg(1));
                let Imm::Cond(cc) = inst.imm else {
                    return Err(unsupported(func, block, index, "a comparison without a condition"));
                };
                let x = if op == Opcode::FCmp {
                    cc.eval_f64(a.float(), b.float())
                } else {
                    cc.eval_i64(a.bits as i64, b.bits as i64)
                };
                Some(Slot::of_int(i64::from(x), a.flags | b.flags))
            }
            Shape::Select => {
                let (c, a, b) = (arg(0), arg(1), arg(2));
                let chosen = if c.bits != 0 { a } else { b };
                if c.varies() {
                    let set = self.sets.union(a.set, b.set);
                    Some(Slot { bits: chosen.bits, set, flags: a.flags | b.flags | c.flags | VARIES })
                } else {
                    self.decide(c);
                    Some(Slot { flags: chosen.flags | c.flags, ..chosen })
                }
            }
            Shape::IntToFloat => {
                let a = arg(0);
                Some(Slot::of_f64(eval::int_to_float(a.bits as i64), EMPTY, a.flags))
            }
            Shape::FloatToInt => {
                let a = arg(0);
                Some(Slot::of_int(eval::float_to_int(a.float()), a.flags))
            }
            Shape::Len => {
                let s = arg(0);
                Some(Slot::of_int(self.arrays[s.bits as usize].slots.len() as i64, 0))
            }
            Shape::Load => {
                let (s, i) = (arg(0), arg(1));
                let array = s.bits as u32;
                let len = self.arrays[array as usize].slots.len();
                let k = i.bits as i64;
                let inside = k >= 0 && (k as usize) < len;
                if !i.varies() {
                    self.decide(i);
                    if !inside {
                        return Err(Stop::Fault(Fault::OutOfBounds { site: at(), index: k, len }));
                    }
                    let loaded = self.arrays[array as usize].slots[k as usize];
                    Some(Slot { flags: loaded.flags | (i.flags & (DATA | MUTABLE_DATA)), ..loaded })
                } else {
                    if !inside && self.trusted(i) {
                        return Err(Stop::Fault(Fault::OutOfBounds { site: at(), index: k, len }));
                    }
                    let bits = if inside { self.arrays[array as usize].slots[k as usize].bits } else { 0 };
                    let (set, flags) = self.whole(array);
                    Some(Slot { bits, set, flags: flags | i.flags | VARIES })
                }
            }
            Shape::Store => {
                let (s, i, x) = (arg(0), arg(1), arg(2));
                let array = s.bits as u32;
                let len = self.arrays[array as usize].slots.len();
                let k = i.bits as i64;
                let inside = k >= 0 && (k as usize) < len;
                if !i.varies() {
                    self.decide(i);
                    if !inside {
                        return Err(Stop::Fault(Fault::OutOfBounds { site: at(), index: k, len }));
                    }
                    self.write(array, k as usize, Slot { flags: x.flags | (i.flags & (DATA | MUTABLE_DATA)), ..x });
                } else {
                    if !inside && self.trusted(i) {
                        return Err(Stop::Fault(Fault::OutOfBounds { site: at(), index: k, len }));
                    }
                    // Any element may be the one written.
                    for e in 0..len {
                        let old = self.arrays[array as usize].slots[e];
                        let set = self.sets.union(old.set, x.set);
                        let bits = if inside && e == k as usize { x.bits } else { old.bits };
                        self.write(array, e, Slot { bits, set, flags: old.flags | x.flags | i.flags | VARIES });
                    }
                }
                None
            }
            Shape::Call => {
                let Imm::Callee(callee) = inst.imm else {
                    return Err(unsupported(func, block, index, "a call without a callee"));
                };
                let args: SmallVec<[Slot; 8]> = inst.args.iter().map(|a| frame.regs[a.index()]).collect();
                let results = match callee {
                    Callee::Func(id) => {
                        if self.depth >= MAX_CALL_DEPTH {
                            return Err(Stop::Fault(Fault::CallDepthExceeded { site: at() }));
                        }
                        let mut results = self.run_function(id.index(), &args)?;
                        if self.opaque[id.index()] {
                            // A custom rule: its derivative is whatever the rule says, so every
                            // result depends on every argument, nonlinearly.
                            let (mut set, mut flags) = (EMPTY, 0);
                            for a in &args {
                                set = self.sets.union(set, a.set);
                                flags |= a.flags;
                            }
                            self.pair(set, set);
                            for r in results.iter_mut() {
                                *r = Slot { bits: r.bits, set, flags: r.flags | flags };
                            }
                        }
                        results
                    }
                    Callee::Extern(id) => self.call_extern(func, block, index, id.index(), &args)?,
                };
                for (r, v) in inst.results.iter().zip(results) {
                    frame.regs[r.index()] = v;
                }
                None
            }
            Shape::Alloc => {
                let n = arg(0);
                if n.varies() {
                    return Err(unsupported(
                        func,
                        block,
                        index,
                        "a local array whose length depends on the differentiated inputs",
                    ));
                }
                self.decide(n);
                let len = n.bits as i64;
                let mut slots = Vec::new();
                if len < 0 || slots.try_reserve_exact(len as usize).is_err() {
                    return Err(Stop::Fault(Fault::AllocFailed { site: at(), len }));
                }
                slots.resize(len as usize, Slot::default());
                let id = self.new_array(slots);
                frame.locals.push(id);
                Some(Slot { bits: u64::from(id), set: EMPTY, flags: 0 })
            }
            Shape::Table => {
                // A data table: constants, which depend on no input.
                let table = match inst.imm {
                    Imm::Table(id) => self.module.table(id),
                    _ => None,
                };
                let Some(table) = table else {
                    return Err(unsupported(func, block, index, "a table the module does not define"));
                };
                let slots = table.data.iter().map(|&x| Slot::of_f64(x, EMPTY, 0)).collect();
                let id = self.new_array(slots);
                frame.locals.push(id);
                Some(Slot { bits: u64::from(id), set: EMPTY, flags: 0 })
            }
            Shape::TapePush | Shape::TapePop | Shape::TapeSplit | Shape::TapeRejoin if self.open_forks > 0 => {
                return Err(unsupported(
                    func,
                    block,
                    index,
                    "the tape (tpush/tpop) under a branch on the differentiated inputs",
                ));
            }
            // A `trap` where the inputs may branch around it: the other side's pattern would
            // have to be merged without this one.
            Shape::Trap if self.open_forks > 0 => {
                return Err(unsupported(
                    func,
                    block,
                    index,
                    "a `trap` (panic) under a branch on the differentiated inputs",
                ));
            }
            Shape::Trap => return Err(Stop::Fault(Fault::Panic { site: at() })),
            Shape::TapeSplit => {
                let top = self.cursor.min(self.tape.len());
                self.cursor = self.tape.len();
                Some(Slot { bits: top as u64, set: EMPTY, flags: 0 })
            }
            Shape::TapeRejoin => {
                let c = arg(0).bits as usize;
                let top = self.cursor.min(self.tape.len());
                if c > top {
                    return Err(Stop::Fault(Fault::TapeUnderflow { site: at() }));
                }
                self.tape.truncate(top);
                self.cursor = c;
                None
            }
            Shape::TapePush => {
                let a = arg(0);
                self.tape.push(a);
                self.cursor = self.tape.len();
                None
            }
            Shape::TapePop => {
                if self.cursor == 0 {
                    return Err(Stop::Fault(Fault::TapeUnderflow { site: at() }));
                }
                self.cursor -= 1;
                let entry = self.tape[self.cursor];
                let is_bool = matches!(inst.imm, Imm::Type(Type::Bool));
                Some(if is_bool { Slot { bits: u64::from(entry.bits != 0), ..entry } } else { entry })
            }
            Shape::VectorLoad | Shape::VectorStore | Shape::Splat | Shape::Extract | Shape::Insert => {
                return Err(unsupported(
                    func,
                    block,
                    index,
                    "lane vectors (f64xW) are not supported by sparsity detection",
                ));
            }
        };
        if let (Some(r), Some(v)) = (inst.results.first(), result) {
            frame.regs[r.index()] = v;
        }
        Ok(())
    }

    /// A call of a native extern: run it on the concrete values; every result (and every
    /// element of every `mslice` argument) depends on everything it was given, nonlinearly.
    fn call_extern(
        &mut self,
        func: &Function,
        block: Block,
        index: usize,
        ext: usize,
        args: &[Slot],
    ) -> Result<SmallVec<[Slot; 2]>, Stop> {
        let module = self.module;
        let decl = &module.externs[ext];
        let Some(imp) = self.externs.and_then(|r| r.get(&decl.name)) else {
            return Err(unsupported(
                func,
                block,
                index,
                format!("extern @{} is not registered; pass its implementation with .externs(...)", decl.name),
            ));
        };
        let (params, returns) = imp.signature();
        if params != decl.params || returns != decl.returns {
            return Err(unsupported(
                func,
                block,
                index,
                format!("extern @{} is registered with a different signature than it is declared with", decl.name),
            ));
        }
        let (mut set, mut flags) = (EMPTY, 0);
        for (a, ty) in args.iter().zip(&decl.params) {
            flags |= a.flags;
            match ty {
                Type::F64 => set = self.sets.union(set, a.set),
                Type::Slice | Type::SliceMut => {
                    let (s, f) = self.whole(a.bits as u32);
                    set = self.sets.union(set, s);
                    flags |= f;
                }
                _ => {}
            }
        }
        self.pair(set, set);
        let mut copies: Vec<Vec<f64>> = args
            .iter()
            .zip(&decl.params)
            .filter(|(_, t)| t.is_slice())
            .map(|(a, _)| self.arrays[a.bits as usize].slots.iter().map(|s| s.float()).collect())
            .collect();
        let outcome: Result<Vec<RuntimeValue>, String> = {
            let mut copies = copies.iter_mut();
            let mut ext_args: Vec<ExternArg<'_>> = args
                .iter()
                .zip(&decl.params)
                .map(|(a, ty)| match ty {
                    Type::F64 => ExternArg::F64(a.float()),
                    Type::I64 => ExternArg::I64(a.bits as i64),
                    Type::Bool => ExternArg::Bool(a.bits != 0),
                    Type::SliceMut => ExternArg::SliceMut(copies.next().expect("one copy per slice")),
                    _ => ExternArg::Slice(copies.next().expect("one copy per slice")),
                })
                .collect();
            let float = |k: usize, a: &[ExternArg<'_>]| a[k].as_f64().unwrap_or(f64::NAN);
            match imp {
                ExternImpl::F1(f) => Ok(vec![RuntimeValue::F64(f(float(0, &ext_args)))]),
                ExternImpl::F2(f) => Ok(vec![RuntimeValue::F64(f(float(0, &ext_args), float(1, &ext_args)))]),
                ExternImpl::F3(f) => {
                    Ok(vec![RuntimeValue::F64(f(float(0, &ext_args), float(1, &ext_args), float(2, &ext_args)))])
                }
                ExternImpl::F4(f) => Ok(vec![RuntimeValue::F64(f(
                    float(0, &ext_args),
                    float(1, &ext_args),
                    float(2, &ext_args),
                    float(3, &ext_args),
                ))]),
                ExternImpl::Closure { f, .. } => match jitdiff_ir::contain_panics(|| f(&mut ext_args)) {
                    Ok(result) => result,
                    Err(panic) => Err(format!("panicked: {panic}")),
                },
            }
        };
        let values = match outcome {
            Ok(values) if values.len() == decl.returns.len() => values,
            Ok(_) => {
                return Err(Stop::Fault(Fault::ExternFailed {
                    name: decl.name.clone(),
                    message: "returned the wrong number of values".into(),
                    site: site(func, block, index),
                }));
            }
            Err(_) if self.alt_depth > 0 && flags & VARIES != 0 => {
                return Err(unsupported(
                    func,
                    block,
                    index,
                    format!("extern @{} fails on a branch these arguments do not take", decl.name),
                ));
            }
            Err(message) => {
                return Err(Stop::Fault(Fault::ExternFailed {
                    name: decl.name.clone(),
                    message,
                    site: site(func, block, index),
                }));
            }
        };
        // Write back the mslices: every element may now depend on everything.
        let mut copies = copies.into_iter();
        for (a, ty) in args.iter().zip(&decl.params) {
            if !ty.is_slice() {
                continue;
            }
            let copy = copies.next().expect("one copy per slice");
            if *ty == Type::SliceMut {
                let array = a.bits as u32;
                for (e, x) in copy.into_iter().enumerate() {
                    let old = self.arrays[array as usize].slots[e];
                    let s = self.sets.union(old.set, set);
                    self.write(array, e, Slot::of_f64(x, s, old.flags | flags));
                }
            }
        }
        Ok(values
            .into_iter()
            .map(|v| match v {
                RuntimeValue::F64(x) => Slot::of_f64(x, set, flags),
                RuntimeValue::I64(x) => Slot::of_int(x, flags),
                RuntimeValue::Bool(x) => Slot::of_int(i64::from(x), flags),
                RuntimeValue::Vector(_) => Slot::of_f64(f64::NAN, set, flags),
            })
            .collect())
    }
}
