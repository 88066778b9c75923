//! Loop versioning for bounds checks. An innermost counted loop — a header parameter `i` that
//! steps by ±1 on every back edge, tested against a loop-invariant bound by the header's branch —
//! whose accesses have indices affine in `i` (`a*i + b`, `a` a constant, `b` a sum of
//! loop-invariant values and constants) is lowered twice: the checked copy, as written, and a
//! *fast* copy in which those accesses have no bounds check. A dispatch block on the edge that
//! enters the loop computes the range of `i` the loop will run through, checks every such
//! access at both ends of that range, and enters the fast copy only when all are in bounds; a
//! failed pre-check (or an empty loop) enters the checked copy, which fails at exactly the
//! access and iteration the program would. Results, stores and errors are therefore those of
//! the checked code; the fast copy just needs fewer registers (no slice lengths) and branches.
//!
//! Other integer header parameters that step by a constant on every back edge run in lockstep
//! with `i` (`j = j0 + c (i - i0)`, `j0` and `i0` the values the loop was entered with), so an
//! index computed from them is affine in `i` too: a reversed loop's index beside its trip count.
//! The dispatch also computes, per access, the address of its element at `i = 0`; the fast copy
//! addresses `base + a i` and needs neither the slice pointer nor the invariant part of the
//! index in a register. A shadow slice with one entry per element of its primal (length checked
//! on entry) shares the primal's checks. Accesses to slice parameters, and to data tables and
//! local arrays defined before the loop, are versioned.
//!
//! The dispatch also checks the tape for the whole loop when it pushes or pops (see
//! [`TapeRun`]): room for every push (growing the buffer once, in a cold block) or enough entries
//! for every pop. The fast copy's `tpush`/`tpop` then skip their own checks — in a reverse
//! sweep's forward function the branch and cold block of each push's capacity check cost the
//! loop time and Cranelift compile time — and a loop the tape cannot serve runs the checked copy.
//!
//! Why the pre-check is exact although indices are wrapping `i64` arithmetic: every operation an
//! affine index goes through (`iadd`, `isub`, `ineg`, `imul` by a constant) is a ring operation
//! modulo 2^64, so the index at iteration value `i` is `min + |a| k (mod 2^64)` with
//! `k ∈ [0, hi - lo]`, where `min` is the index at the range end where it is smallest. When
//! `|a| (hi - lo)` is below 2^64 (checked against a constant), `max = min + |a| (hi - lo)`
//! computed modulo 2^64 is unsigned-not-below `min` exactly when no wrap-around happens, and then
//! every index lies in `[min, max]`: `max < len / width` puts all of them in bounds.

use super::func::FuncLowerer;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{self as clif, BlockArg, InstBuilder};
use jitdiff_ir::analysis::{ControlFlow, LoopBody, NaturalLoop};
use jitdiff_ir::{Block, CondCode, Function, Imm, Opcode, Terminator, Value};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// Loops with more IR instructions than this are not duplicated (compile time).
const MAX_VERSIONED_INSTS: usize = 200;

/// Loops that start and end at constants this close together are not duplicated either.
const MAX_UNVERSIONED_TRIPS: u64 = 4;

/// `coef * i + constant + Σ factor * term (mod 2^64)`, the terms loop-invariant values.
#[derive(Clone, Debug, PartialEq)]
struct Affine {
    coef: i64,
    constant: i64,
    terms: Vec<(i64, Value)>,
}

impl Affine {
    fn constant(k: i64) -> Affine {
        Affine { coef: 0, constant: k, terms: vec![] }
    }
    fn scaled(mut self, by: i64) -> Affine {
        self.coef = self.coef.wrapping_mul(by);
        self.constant = self.constant.wrapping_mul(by);
        for t in &mut self.terms {
            t.0 = t.0.wrapping_mul(by);
        }
        self
    }
    fn plus(mut self, other: Affine) -> Affine {
        self.coef = self.coef.wrapping_add(other.coef);
        self.constant = self.constant.wrapping_add(other.constant);
        self.terms.extend(other.terms);
        self
    }
}

/// One access whose check the fast copy drops.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Access {
    /// The slice: a function parameter, or a data table defined before the loop.
    slice: Value,
    /// Elements per index step (`W` of `vload`/`vstore`, else 1).
    width: u8,
    index: Affine,
}

/// The range the induction variable runs through, by step and in-loop condition `i cc bound`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Range {
    /// Step +1 while `i < bound` (or `i != bound`, entered only when `init < bound`).
    UpBelow,
    /// Step +1 while `i <= bound`.
    UpTo,
    /// Step -1 while `i > bound` (or `i != bound`, entered only when `init > bound`).
    DownAbove,
    /// Step -1 while `i >= bound`.
    DownTo,
}

/// What an innermost loop does to the tape, when its dispatch can check it for the whole loop:
/// it runs each block at most once per iteration and its header once more, so `span + 1`
/// iterations push at most `(span + 1) * (header + body) + header` entries (the dispatch makes
/// room for them). Pops are counted only where every iteration runs each popping block, so that
/// count is exact and a loop near the bottom of the tape is not sent to the checked copy
/// needlessly. A loop that calls a function (which may move the tape too), or that both pushes
/// and pops, or splits or rejoins the tape, gets neither.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct TapeRun {
    pub pops: bool,
    /// Entries per run of the header.
    pub header: usize,
    /// Entries per iteration in the other blocks.
    pub body: usize,
}

impl TapeRun {
    fn plan(f: &Function, cfg: &ControlFlow, l: &NaturalLoop) -> Option<TapeRun> {
        let count = |b: Block, op: Opcode| f.block(b).insts.iter().filter(|i| i.op == op).count();
        let total = |op: Opcode| l.blocks.iter().map(|&b| count(b, op)).sum::<usize>();
        let (pushes, pops) = (total(Opcode::TPush), total(Opcode::TPop));
        let other_moves = l
            .blocks
            .iter()
            .flat_map(|&b| &f.block(b).insts)
            .any(|i| matches!(i.op, Opcode::Call | Opcode::TSplit | Opcode::TRejoin));
        if other_moves || (pushes > 0) == (pops > 0) {
            return None;
        }
        let op = if pops > 0 { Opcode::TPop } else { Opcode::TPush };
        if op == Opcode::TPop {
            let latches: Vec<Block> =
                cfg.predecessors(l.header).iter().copied().filter(|p| l.body[p.index()]).collect();
            let every_iteration = |b: Block| latches.iter().all(|&latch| cfg.dominates(b, latch));
            if !l.blocks.iter().all(|&b| count(b, op) == 0 || every_iteration(b)) {
                return None;
            }
        }
        let header = count(l.header, op);
        Some(TapeRun { pops: pops > 0, header, body: total(op) - header })
    }
}

/// A loop the lowering duplicates.
pub(crate) struct VersionedLoop {
    pub header: Block,
    /// Membership by block index.
    pub body: LoopBody,
    /// The loop's blocks in block order.
    pub blocks: Vec<Block>,
    /// The induction variable's position among the header's parameters.
    iv: usize,
    range: Range,
    /// The bound: a constant or a loop-invariant value.
    bound: Result<i64, Value>,
    accesses: Vec<Access>,
    /// `(block, instruction index)` of each access the fast copy does not check, and which of
    /// `accesses` it is (equal accesses share one entry).
    pub unchecked: HashMap<(Block, u32), usize>,
    /// Per access, computed by the dispatch: the address of the element group at `i = 0`
    /// (pointer plus the invariant part of the index), so that the fast copy addresses it as
    /// `base + (coef i) * 8 width` and needs neither the slice pointer nor the invariant terms
    /// in registers.
    pub bases: Vec<clif::Value>,
    /// The tape entries the loop pushes or pops, when the dispatch checks them for the whole
    /// loop and the fast copy's tape operations skip their own checks.
    pub tape: Option<TapeRun>,
    /// Cranelift blocks: the dispatch, and the fast copy of each body block (by block index).
    pub dispatch: Option<clif::Block>,
    pub fast: HashMap<Block, clif::Block>,
    /// The copy running two iterations at a time, if the loop has one (`pairs.rs`).
    pub pairs: Option<super::pairs::PairPlan>,
}

impl VersionedLoop {
    /// The induction variable's position among the header's parameters.
    pub fn iv(&self) -> usize {
        self.iv
    }
    /// How the induction variable steps and ends.
    pub fn range(&self) -> Range {
        self.range
    }
    /// The bound: a constant or a loop-invariant value.
    pub fn bound(&self) -> Result<i64, Value> {
        self.bound
    }
    /// The accesses the fast copy does not check.
    pub fn accesses(&self) -> &[Access] {
        &self.accesses
    }
}

impl Access {
    /// Elements per index step.
    pub fn width(&self) -> u8 {
        self.width
    }
    /// The index's coefficient of the induction variable.
    pub fn coef(&self) -> i64 {
        self.index.coef
    }
}

/// Where each value is defined: `Ok((block, instruction))` or `Err(block)` for a block
/// parameter (function parameters are the entry block's).
fn definitions(f: &Function) -> Vec<Option<Result<(Block, usize), Block>>> {
    let mut def = vec![None; f.values.len()];
    for &p in &f.params {
        def[p.index()] = Some(Err(Block::ENTRY));
    }
    for (b, block) in f.block_ids().zip(&f.blocks) {
        for &p in &block.params {
            def[p.index()] = Some(Err(b));
        }
        for (k, inst) in block.insts.iter().enumerate() {
            for &r in &inst.results {
                def[r.index()] = Some(Ok((b, k)));
            }
        }
    }
    def
}

/// The loops of `f` worth versioning (see the module docs), innermost only.
pub(crate) fn plan(f: &Function, cfg: &ControlFlow, consts: &HashMap<Value, i64>) -> Vec<VersionedLoop> {
    let loops = cfg.natural_loops();
    let def = definitions(f);
    let mut rpo_position = vec![usize::MAX; f.blocks.len()];
    for (k, &b) in cfg.reverse_post_order().iter().enumerate() {
        rpo_position[b.index()] = k;
    }
    let mut is_header = vec![false; f.blocks.len()];
    for l in &loops {
        is_header[l.header.index()] = true;
    }
    let mut planned = vec![];
    for l in &loops {
        let innermost = !l.blocks.iter().any(|&b| b != l.header && is_header[b.index()]);
        // The dispatch is emitted (and sealed) when the header is reached in reverse post-order,
        // so every edge entering the loop must come from a block lowered before it.
        let entered_in_order = cfg
            .predecessors(l.header)
            .iter()
            .all(|&p| l.body[p.index()] || rpo_position[p.index()] < rpo_position[l.header.index()]);
        if innermost
            && entered_in_order
            && l.header != Block::ENTRY
            && let Some(v) = plan_loop(f, cfg, consts, &def, l)
        {
            planned.push(v);
        }
    }
    planned
}

fn plan_loop(
    f: &Function,
    cfg: &ControlFlow,
    consts: &HashMap<Value, i64>,
    def: &[Option<Result<(Block, usize), Block>>],
    l: &NaturalLoop,
) -> Option<VersionedLoop> {
    let in_loop = |b: Block| l.body.get(b.index()).copied().unwrap_or(false);
    let defined_outside = |v: Value| match def.get(v.index()).copied().flatten() {
        Some(Ok((b, _)) | Err(b)) => !in_loop(b),
        None => false,
    };
    let size: usize = l.blocks.iter().map(|&b| f.block(b).insts.len()).sum();
    if size > MAX_VERSIONED_INSTS {
        return None;
    }
    let header = f.block(l.header);
    // The header's branch: one successor in the loop, the other outside.
    let Some(Terminator::Branch { cond, then_dest, else_dest }) = &header.term else { return None };
    let enters_on_true = match (in_loop(then_dest.block), in_loop(else_dest.block)) {
        (true, false) if then_dest.block != l.header => true,
        (false, true) if else_dest.block != l.header => false,
        _ => return None,
    };
    // The condition: `icmp cc a, b` on a header parameter and an invariant or constant.
    let Some(Ok((cond_block, cond_inst))) = def.get(cond.index()).copied().flatten() else { return None };
    let compare = &f.block(cond_block).insts[cond_inst];
    let (Opcode::ICmp, Imm::Cond(cc), &[a, b]) = (compare.op, compare.imm, &compare.args[..]) else { return None };
    let position = |v: Value| header.params.iter().position(|&p| p == v);
    let invariant = |v: Value| consts.get(&v).map_or_else(|| defined_outside(v).then_some(Err(v)), |&k| Some(Ok(k)));
    let (iv, cc, bound) = match (position(a), position(b)) {
        (Some(iv), _) if invariant(b).is_some() => (iv, cc, invariant(b)?),
        (_, Some(iv)) if invariant(a).is_some() => (iv, cc.swapped(), invariant(a)?),
        _ => return None,
    };
    let cc = if enters_on_true { cc } else { cc.complement() };
    let iv_value = header.params[iv];
    // Every back edge steps the induction variable by the same ±1.
    let mut step = None;
    for &latch in cfg.predecessors(l.header).iter().filter(|&&p| in_loop(p)) {
        for call in f.block(latch).term.as_ref()?.successors().into_iter().filter(|c| c.block == l.header) {
            let this = constant_step(f, def, consts, call.args[iv], iv_value).filter(|s| matches!(s, 1 | -1))?;
            if step.is_some_and(|s| s != this) {
                return None;
            }
            step = Some(this);
        }
    }
    let step = step?;
    // A loop of a few iterations known at compile time (`for k in 0..3` in a 3 x 3 product)
    // gains nothing: its dispatch checks each access about as often as the loop would, and the
    // copy costs compile time (ht's primal: 3.7 ms unversioned, 5.6-7 ms with its small loops
    // versioned).
    if let Ok(end) = bound {
        let mut entries = cfg.predecessors(l.header).iter().filter(|&&p| !in_loop(p)).peekable();
        entries.peek()?;
        let mut short = true;
        for &entry in entries {
            for call in f.block(entry).term.as_ref()?.successors().into_iter().filter(|c| c.block == l.header) {
                let trips = consts.get(&call.args[iv]).map(|&start| end.abs_diff(start));
                short &= trips.is_some_and(|t| t <= MAX_UNVERSIONED_TRIPS);
            }
        }
        if short {
            return None;
        }
    }
    // Other integer header parameters stepping by a constant on every back edge run in lockstep
    // with `i`: at iteration value `i`, `j = j0 + (step_j / step) (i - i0)` with `j0`, `i0` the
    // values the loop was entered with (`step` is ±1, so the division is exact).
    let mut secondary = HashMap::default();
    for (position, &param) in header.params.iter().enumerate() {
        if position == iv || f.ty(param) != jitdiff_ir::Type::I64 {
            continue;
        }
        let mut param_step = None;
        let mut lockstep = true;
        for &latch in cfg.predecessors(l.header).iter().filter(|&&p| in_loop(p)) {
            for call in f.block(latch).term.as_ref()?.successors().into_iter().filter(|c| c.block == l.header) {
                match constant_step(f, def, consts, call.args[position], param) {
                    Some(s) if param_step.is_none_or(|known| known == s) && s.unsigned_abs() <= 1 << 16 => {
                        param_step = Some(s)
                    }
                    _ => lockstep = false,
                }
            }
        }
        if let (true, Some(param_step)) = (lockstep, param_step) {
            secondary.insert(param, param_step * step);
        }
    }
    let range = match (step, cc) {
        (1, CondCode::Lt | CondCode::Ne) => Range::UpBelow,
        (1, CondCode::Le) => Range::UpTo,
        (-1, CondCode::Gt | CondCode::Ne) => Range::DownAbove,
        (-1, CondCode::Ge) => Range::DownTo,
        _ => return None,
    };
    // Accesses outside the header (which runs once more, with the failing value) and with an
    // affine index.
    let mut accesses = vec![];
    let mut unchecked = HashMap::default();
    let mut memo = HashMap::default();
    for &b in &l.blocks {
        if b == l.header {
            continue;
        }
        for (k, inst) in f.block(b).insts.iter().enumerate() {
            let width = match (inst.op, inst.imm) {
                (Opcode::Load | Opcode::Store, _) => 1,
                (Opcode::VLoad, Imm::Type(t)) => t.lanes(),
                (Opcode::VStore, _) => inst.args.get(2).map_or(0, |&v| f.ty(v).lanes()),
                _ => continue,
            };
            let (Some(&slice), Some(&index)) = (inst.args.first(), inst.args.get(1)) else { continue };
            // A table or a local array defined before the loop is a slice like a parameter there:
            // its pointer and length are known in the dispatch block (its definition dominates
            // the header), and its length never changes.
            let fixed_before_loop = defined_outside(slice)
                && matches!(def.get(slice.index()).copied().flatten(), Some(Ok((b, k))) if matches!(f.block(b).insts[k].op, Opcode::Table | Opcode::Alloc));
            if !(f.params.contains(&slice) || fixed_before_loop) || !width.is_power_of_two() {
                continue;
            }
            let lockstep = Lockstep { iv: iv_value, secondary: &secondary };
            let Some(index) = affine(f, def, consts, &in_loop, &lockstep, index, &mut memo, 0) else { continue };
            if index.coef.unsigned_abs() > 1 << 32 {
                continue;
            }
            let access = Access { slice, width, index };
            let position = accesses.iter().position(|a| *a == access).unwrap_or_else(|| {
                accesses.push(access);
                accesses.len() - 1
            });
            unchecked.insert((b, k as u32), position);
        }
    }
    if accesses.is_empty() {
        return None;
    }
    Some(VersionedLoop {
        header: l.header,
        body: l.body.clone(),
        blocks: l.blocks.clone(),
        iv,
        range,
        bound,
        accesses,
        unchecked,
        bases: vec![],
        tape: TapeRun::plan(f, cfg, l),
        dispatch: None,
        fast: HashMap::default(),
        pairs: None,
    })
}

/// `Some(k)` when `next` is `iv + k`, `k + iv` or `iv - (-k)` for a constant `k`.
fn constant_step(
    f: &Function,
    def: &[Option<Result<(Block, usize), Block>>],
    consts: &HashMap<Value, i64>,
    next: Value,
    iv: Value,
) -> Option<i64> {
    let Some(Ok((b, k))) = def.get(next.index()).copied().flatten() else { return None };
    let inst = &f.block(b).insts[k];
    let step = match (inst.op, &inst.args[..]) {
        (Opcode::IAdd, &[x, c]) if x == iv => *consts.get(&c)?,
        (Opcode::IAdd, &[c, x]) if x == iv => *consts.get(&c)?,
        (Opcode::ISub, &[x, c]) if x == iv => consts.get(&c)?.checked_neg()?,
        _ => return None,
    };
    Some(step)
}

/// The induction variable and the header parameters that step in lockstep with it (each with
/// its coefficient in `i`).
struct Lockstep<'a> {
    iv: Value,
    secondary: &'a HashMap<Value, i64>,
}

/// `v` as an affine function of the induction variable, if it is one. A lockstep parameter `j`
/// becomes `c i + j0 - c i0`, its terms `j` and `i` standing for the values the loop was entered
/// with (the dispatch block's parameters).
#[allow(clippy::too_many_arguments)]
fn affine(
    f: &Function,
    def: &[Option<Result<(Block, usize), Block>>],
    consts: &HashMap<Value, i64>,
    in_loop: &dyn Fn(Block) -> bool,
    lockstep: &Lockstep,
    v: Value,
    memo: &mut HashMap<Value, Option<Affine>>,
    depth: u32,
) -> Option<Affine> {
    if v == lockstep.iv {
        return Some(Affine { coef: 1, constant: 0, terms: vec![] });
    }
    if let Some(&c) = lockstep.secondary.get(&v) {
        return Some(Affine { coef: c, constant: 0, terms: vec![(1, v), (c.wrapping_neg(), lockstep.iv)] });
    }
    if let Some(&k) = consts.get(&v) {
        return Some(Affine::constant(k));
    }
    if let Some(known) = memo.get(&v) {
        return known.clone();
    }
    let result = match def.get(v.index()).copied().flatten()? {
        Err(b) | Ok((b, _)) if !in_loop(b) => Some(Affine { coef: 0, constant: 0, terms: vec![(1, v)] }),
        Err(_) => None,
        Ok(_) if depth > 16 => None,
        Ok((b, k)) => {
            let inst = &f.block(b).insts[k];
            let mut of = |x: Value| affine(f, def, consts, in_loop, lockstep, x, memo, depth + 1);
            match (inst.op, &inst.args[..]) {
                (Opcode::IAdd, &[x, y]) => Some(of(x)?.plus(of(y)?)),
                (Opcode::ISub, &[x, y]) => Some(of(x)?.plus(of(y)?.scaled(-1))),
                (Opcode::INeg, &[x]) => Some(of(x)?.scaled(-1)),
                (Opcode::IMul, &[x, y]) => match (consts.get(&x), consts.get(&y)) {
                    (_, Some(&c)) => Some(of(x)?.scaled(c)),
                    (Some(&c), _) => Some(of(y)?.scaled(c)),
                    _ => None,
                },
                _ => None,
            }
        }
    };
    memo.insert(v, result.clone());
    result
}

/// Which values escape which versioned loop (variables are declared by the caller); `around`
/// lists the versioned loops containing each block.
pub(crate) fn escaping_values(f: &Function, loops: &[VersionedLoop], around: &[Vec<usize>]) -> Vec<(Value, usize)> {
    let def = definitions(f);
    let mut out = vec![];
    let mut seen = HashSet::default();
    for (bi, block) in f.blocks.iter().enumerate() {
        let uses =
            block.insts.iter().flat_map(|i| i.args.iter().copied()).chain(block.term.iter().flat_map(|t| t.uses()));
        for v in uses {
            let Some(Ok((b, _)) | Err(b)) = def.get(v.index()).copied().flatten() else { continue };
            for &k in around.get(b.index()).map_or(&[][..], Vec::as_slice) {
                if !loops[k].body[bi] && seen.insert(v) {
                    out.push((v, k));
                }
            }
        }
    }
    out
}

/// Per block, the versioned loops containing it, in order.
pub(crate) fn loops_around(blocks: usize, loops: &[VersionedLoop]) -> Vec<Vec<usize>> {
    let mut around = vec![vec![]; blocks];
    for (k, l) in loops.iter().enumerate() {
        for &b in &l.blocks {
            around[b.index()].push(k);
        }
    }
    around
}

impl FuncLowerer<'_, '_> {
    /// In the fast copy of loop `k`, the address of the access planned as `(block, inst)`:
    /// the dispatch's base plus `coef i` element groups, `i` the induction variable's value in
    /// this iteration. Equal to `ptr + index * 8 width` modulo 2^64, as the index is.
    pub(super) fn fast_address(&mut self, k: usize, at: (Block, u32)) -> Option<clif::Value> {
        let l = &self.versioned[k];
        let access = *l.unchecked.get(&at)?;
        let (base, coef, width) = (*l.bases.get(access)?, l.accesses[access].index.coef, l.accesses[access].width);
        let iv = self.f.block(l.header).params[l.iv];
        let i = self.scalar(iv);
        let shift = i64::from(width.trailing_zeros());
        let scaled = match coef {
            1 => i,
            -1 => self.b.ins().ineg(i),
            _ => self.b.ins().imul_imm_s(i, coef),
        };
        let offset = self.b.ins().ishl_imm_u(scaled, 3 + shift);
        Some(self.b.ins().iadd(base, offset))
    }

    /// Emit the dispatch block of loop `k` (the current block is filled): the pre-check, then
    /// the fast or the checked header with the entering edge's arguments.
    pub(super) fn emit_dispatch(&mut self, k: usize) -> Result<(), crate::error::JitError> {
        let (dispatch, fast_header) = {
            let l = &self.versioned[k];
            (l.dispatch.expect("dispatch block created"), l.fast[&l.header])
        };
        let checked_header = self.blocks[self.versioned[k].header.index()];
        self.b.switch_to_block(dispatch);
        let params = self.b.block_params(dispatch).to_vec();
        let header = self.f.block(self.versioned[k].header);
        // A header parameter's (first) part among the dispatch block's parameters: its value on
        // entry.
        let entry_value = |param: Value| {
            let position = header.params.iter().position(|&p| p == param)?;
            let part: usize = header.params[..position].iter().map(|&p| crate::abi::part_count(self.f.ty(p))).sum();
            Some(params[part])
        };
        let init =
            entry_value(header.params[self.versioned[k].iv]).expect("the induction variable is a header parameter");
        let bound = match self.versioned[k].bound {
            Ok(c) => self.iconst(c),
            Err(v) => self.scalar_outside(v),
        };
        let (nonempty, lo, hi) = match self.versioned[k].range {
            Range::UpBelow => {
                let ok = self.b.ins().icmp(IntCC::SignedLessThan, init, bound);
                (ok, init, self.b.ins().iadd_imm_s(bound, -1))
            }
            Range::UpTo => {
                let ok = self.b.ins().icmp(IntCC::SignedLessThanOrEqual, init, bound);
                let not_max = self.b.ins().icmp_imm_s(IntCC::NotEqual, bound, i64::MAX);
                (self.b.ins().band(ok, not_max), init, bound)
            }
            Range::DownAbove => {
                let ok = self.b.ins().icmp(IntCC::SignedGreaterThan, init, bound);
                (ok, self.b.ins().iadd_imm_s(bound, 1), init)
            }
            Range::DownTo => {
                let ok = self.b.ins().icmp(IntCC::SignedGreaterThanOrEqual, init, bound);
                let not_min = self.b.ins().icmp_imm_s(IntCC::NotEqual, bound, i64::MIN);
                (self.b.ins().band(ok, not_min), bound, init)
            }
        };
        let span = self.b.ins().isub(hi, lo);
        let mut ok = nonempty;
        let mut bases = vec![];
        // A shadow slice with one entry per element has its primal's length (checked on entry):
        // an access to either proves the same index of the other, so one check serves both.
        let (function, shadows) = (self.f, self.facts.shadows().to_vec());
        let same_length_as = |slice: Value| {
            let param = function.params.iter().position(|&p| p == slice);
            let primal = shadows.iter().find(|s| s.lanes == 1 && Some(s.shadow) == param);
            primal.map_or(slice, |s| function.params[s.primal])
        };
        let mut checked: Vec<(Value, u8, Affine)> = vec![];
        for access in self.versioned[k].accesses.clone() {
            let Affine { coef, constant, terms } = access.index;
            // The invariant part of the index, then its value at the range end where it is
            // smallest.
            let mut invariant = self.iconst(constant);
            for &(factor, term) in &terms {
                let t = match entry_value(term) {
                    Some(on_entry) => on_entry,
                    None => self.scalar_outside(term),
                };
                let t = self.b.ins().imul_imm_s(t, factor);
                invariant = self.b.ins().iadd(invariant, t);
            }
            let shift = i64::from(access.width.trailing_zeros());
            let ptr = self.get(access.slice)[0];
            let byte_offset = self.b.ins().ishl_imm_u(invariant, 3 + shift);
            bases.push(self.b.ins().iadd(ptr, byte_offset));
            let key = (same_length_as(access.slice), access.width, Affine { coef, constant, terms: terms.clone() });
            if checked.contains(&key) {
                continue;
            }
            checked.push(key);
            let at = if coef >= 0 { lo } else { hi };
            let scaled = self.b.ins().imul_imm_s(at, coef);
            let min = self.b.ins().iadd(scaled, invariant);
            let magnitude = coef.unsigned_abs();
            let width = if magnitude <= 1 {
                span
            } else {
                // |a| (hi - lo) must not wrap: hi - lo <= u64::MAX / |a|.
                let fits = self.b.ins().icmp_imm_s(IntCC::UnsignedLessThanOrEqual, span, (u64::MAX / magnitude) as i64);
                ok = self.b.ins().band(ok, fits);
                self.b.ins().imul_imm_s(span, magnitude as i64)
            };
            let width = if magnitude == 0 { self.iconst(0) } else { width };
            let max = self.b.ins().iadd(min, width);
            let len = self.get(access.slice)[1];
            let groups = if shift == 0 { len } else { self.b.ins().ushr_imm_u(len, shift) };
            let below = self.b.ins().icmp(IntCC::UnsignedLessThan, max, groups);
            let no_wrap = self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, min, max);
            let both = self.b.ins().band(below, no_wrap);
            ok = self.b.ins().band(ok, both);
        }
        self.versioned[k].bases = bases;
        let args: Vec<BlockArg> = params.iter().map(|&p| BlockArg::from(p)).collect();
        // The paired copy, where the loop has one, tests its own count and falls back to the fast.
        let first = self.versioned[k].pairs.as_ref().and_then(|p| p.first_block()).unwrap_or(fast_header);
        if let Some(run) = self.versioned[k].tape {
            // The loop's entries (see `TapeRun`). A loop too long to count them (over 2^32
            // iterations), or a tape that cannot grow that far or holds fewer entries than the
            // loop pops, runs the checked copy, which fails at exactly the operation the program
            // would.
            let countable = self.b.ins().icmp_imm_u(IntCC::UnsignedLessThanOrEqual, span, 1 << 32);
            ok = self.b.ins().band(ok, countable);
            let per_iteration = (run.header + run.body) as i64;
            let entries = self.b.ins().imul_imm_s(span, per_iteration);
            let entries = self.b.ins().iadd_imm_s(entries, per_iteration + run.header as i64);
            if run.pops {
                let enough = self.tape_holds(entries)?;
                ok = self.b.ins().band(ok, enough);
                self.b.ins().brif(ok, first, &args, checked_header, &args);
            } else {
                let reserve = self.b.create_block();
                self.b.ins().brif(ok, reserve, &[], checked_header, &args);
                self.b.seal_block(reserve);
                self.b.switch_to_block(reserve);
                self.reserve_or(entries, first, checked_header, &args)?;
            }
        } else {
            self.b.ins().brif(ok, first, &args, checked_header, &args);
        }
        // An edge entering from inside another versioned loop (its exit straight into this
        // header) is added again when that loop's fast copy is lowered, after this: the
        // dispatch then waits for the seal of every block at the end.
        let header = self.versioned[k].header;
        let entered_from_a_copy = self
            .cfg
            .predecessors(header)
            .iter()
            .any(|&p| !self.versioned[k].body[p.index()] && !self.versioned_around[p.index()].is_empty());
        if !entered_from_a_copy {
            self.b.seal_block(dispatch);
        }
        Ok(())
    }
}
