//! Deferred accumulation: in a reversed loop where iteration `k` adds into `d[i]` and iteration
//! `k + 1` adds into the same `d[i]` again — the pullback of a stencil such as Extended
//! Rosenbrock's `x[i]`, `x[i+1]` — the first addition is carried to the next iteration in a
//! register instead of going through memory.
//!
//! Reversing `load x, i` and `load x, i + 1` gives two read-modify-writes of the differential
//! per iteration, `d[i+1] += a` and `d[i] += b`, and the next (earlier) iteration starts with
//! `d[i] += a'`: a store followed at once by a load of the same address, on the critical path.
//! Deferring `b` turns the two into one:
//!
//! ```text
//! head(..., pending, at):                 ; pending = b of the last iteration, at = its index
//!     ...
//!     old = load d, i + 1
//!     old2 = fadd old, pending            ; what the deferred `d[i+1] += b` would have stored
//!     new = fadd old2, a
//!     store d, i + 1, new
//!     load d, i                           ; kept: the bounds check of the deferred access
//!     jump head(..., b, i)
//! ```
//!
//! and on leaving the loop the last pending value is added into `d[at]` (when the loop ran at
//! all). The additions happen in the same order as before on the same operands — the identity
//! `pending` of the first iteration is `-0.0` for an addition (`x + -0.0` is `x`, zeros
//! included) and `+0.0` for a subtraction — so results are bit-identical, and every index is
//! still checked where it was.
//!
//! It applies to pullbacks only, because only there is it known that nothing else reads the
//! differential slice in between: a pullback's `slice` parameters are primal slices, which never
//! share memory with a differential slice; two differential slices may (a callee's pullback gets
//! the same one twice when the primal was passed twice), so the loop must touch no `mslice` but
//! `d`, and call nothing.

use jitdiff_ir::analysis::{ControlFlow, NaturalLoop};
use jitdiff_ir::{Block, BlockCall, CondCode, Function, Imm, InstData, Opcode, Terminator, Type, Value};
use rustc_hash::FxHashMap as HashMap;

/// Defer what can be deferred in the loops of the pullback `func`; true when something was.
pub(crate) fn defer_accumulations(func: &mut Function) -> bool {
    let mut changed = false;
    // One loop at a time: a transformation changes the blocks and values the next one reads.
    loop {
        let cfg = ControlFlow::new(func);
        let loops = cfg.natural_loops();
        let depths = cfg.loop_depths(&loops);
        let constants = Constants::of(func);
        let uses = use_counts(func);
        let Some(found) = loops.iter().find_map(|l| find_pair(func, &cfg, l, &depths, &constants, &uses)) else {
            return changed;
        };
        apply(func, found);
        changed = true;
    }
}

/// A read-modify-write `old = load d, index; new = op old, amount; store d, index, new`.
#[derive(Clone, Copy, Debug)]
struct Accumulate {
    block: Block,
    /// Positions of the load, the addition and the store in `block`.
    load: usize,
    op_at: usize,
    store: usize,
    op: Opcode,
    index: Value,
    amount: Value,
    old: Value,
}

/// Two accumulations into `d` such that `next` in iteration `k + 1` hits the index `deferred`
/// hit in iteration `k`.
struct Pair {
    header: Block,
    latch: Block,
    slice: Value,
    next: Accumulate,
    deferred: Accumulate,
}

/// `coef * iv + offset + base`: an index as a function of a loop's induction variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Affine {
    iv: Option<Value>,
    coef: i64,
    offset: i64,
    base: Option<Value>,
}

/// How often each value is read (an instruction or terminator reading it twice counts twice).
fn use_counts(func: &Function) -> Vec<u32> {
    let mut counts = vec![0u32; func.values.len()];
    let mut count = |v: Value| {
        if let Some(c) = counts.get_mut(v.index()) {
            *c += 1;
        }
    };
    for block in &func.blocks {
        block.insts.iter().flat_map(|i| &i.args).for_each(|&a| count(a));
        if let Some(term) = &block.term {
            term.uses().into_iter().for_each(&mut count);
        }
    }
    counts
}

/// The value of every `iconst` of a function (looked up per loop: scanning the function for
/// each made a function of many loops quadratic).
struct Constants(HashMap<Value, i64>);

impl Constants {
    fn of(func: &Function) -> Constants {
        let constants =
            func.blocks.iter().flat_map(|b| &b.insts).filter_map(|i| match (i.op, i.imm, i.results.first()) {
                (Opcode::IConst, Imm::I64(k), Some(&r)) => Some((r, k)),
                _ => None,
            });
        Constants(constants.collect())
    }

    fn get(&self, v: Value) -> Option<i64> {
        self.0.get(&v).copied()
    }
}

fn find_pair(
    func: &Function,
    cfg: &ControlFlow,
    l: &NaturalLoop,
    depths: &[u32],
    constants: &Constants,
    uses: &[u32],
) -> Option<Pair> {
    let header = l.header;
    let inside = |b: Block| l.body.get(b.index()).copied().unwrap_or(false);
    let latches: Vec<Block> = cfg.predecessors(header).iter().copied().filter(|&p| inside(p)).collect();
    let &[latch] = latches.as_slice() else { return None };
    // Every exit leaves from the header, so each body block dominating the latch runs exactly
    // once per iteration that is not the last header visit.
    for &b in &l.blocks {
        if b == header {
            continue;
        }
        let term = func.block(b).term.as_ref()?;
        if term.successors().iter().any(|c| !inside(c.block)) {
            return None;
        }
    }
    // The loop's memory traffic: no calls, one mslice only.
    let mut slice: Option<Value> = None;
    let mut defs: HashMap<Value, &InstData> = HashMap::default();
    for &b in &l.blocks {
        for inst in &func.block(b).insts {
            if inst.op == Opcode::Call {
                return None;
            }
            if matches!(inst.op, Opcode::Load | Opcode::Store | Opcode::VLoad | Opcode::VStore)
                && func.ty(inst.args[0]) == Type::SliceMut
            {
                match slice {
                    None => slice = Some(inst.args[0]),
                    Some(s) if s == inst.args[0] => {}
                    Some(_) => return None,
                }
                if matches!(inst.op, Opcode::VLoad | Opcode::VStore) {
                    return None;
                }
            }
            for &r in &inst.results {
                defs.insert(r, inst);
            }
        }
    }
    let slice = slice?;
    // Induction variables: header parameters stepped by a constant on the back edge.
    let back = func.block(latch).term.as_ref()?.successors().into_iter().find(|c| c.block == header)?.clone();
    let mut steps: HashMap<Value, i64> = HashMap::default();
    for (&param, &arg) in func.block(header).params.iter().zip(&back.args) {
        if let Some(step) = step_of(constants, &defs, param, arg) {
            steps.insert(param, step);
        }
    }
    // The accumulations into `slice`, in blocks that run once per iteration.
    let mut accumulations = vec![];
    let mut accesses = 0;
    for &b in &l.blocks {
        let block = func.block(b);
        accesses += block.insts.iter().filter(|i| i.args.first() == Some(&slice)).count();
        if b == header || depths[b.index()] != depths[header.index()] || !cfg.dominates(b, latch) {
            continue;
        }
        accumulations.extend(accumulations_in(func, b, slice, uses));
    }
    // Exactly two accumulations (a load and a store each) and nothing else touches the slice.
    let [first, second] = accumulations.as_slice() else { return None };
    if accesses != 4 {
        return None;
    }
    let index_of = |a: &Accumulate| affine(func, constants, &defs, &steps, &l.blocks, a.index);
    let (fa, sa) = (index_of(first)?, index_of(second)?);
    for (next, deferred, n, d) in [(first, second, fa, sa), (second, first, sa, fa)] {
        let Some(iv) = n.iv else { continue };
        let step = steps[&iv];
        let moved = n.coef.checked_mul(step).and_then(|m| m.checked_add(n.offset));
        let same_line = n.iv == d.iv && n.coef == d.coef && n.base == d.base;
        if same_line && n.coef.checked_mul(step) != Some(0) && moved == Some(d.offset) {
            return Some(Pair { header, latch, slice, next: *next, deferred: *deferred });
        }
    }
    None
}

/// The constant step of induction variable `param` when the back edge passes `arg`.
fn step_of(constants: &Constants, defs: &HashMap<Value, &InstData>, param: Value, arg: Value) -> Option<i64> {
    let inst = defs.get(&arg)?;
    let constant = |v: Value| constants.get(v);
    match (inst.op, inst.args.as_slice()) {
        (Opcode::IAdd, &[a, b]) if a == param => constant(b),
        (Opcode::IAdd, &[a, b]) if b == param => constant(a),
        (Opcode::ISub, &[a, b]) if a == param => constant(b)?.checked_neg(),
        _ => None,
    }
}

/// `v` as an affine function of one induction variable, with at most one loop-invariant term.
fn affine(
    func: &Function,
    constants: &Constants,
    defs: &HashMap<Value, &InstData>,
    steps: &HashMap<Value, i64>,
    blocks: &[Block],
    v: Value,
) -> Option<Affine> {
    if steps.contains_key(&v) {
        return Some(Affine { iv: Some(v), coef: 1, offset: 0, base: None });
    }
    let Some(inst) = defs.get(&v) else {
        // Defined outside the loop (or a parameter of another loop block, which is not an
        // induction variable: refuse those).
        let is_loop_param = blocks.iter().any(|&b| func.block(b).params.contains(&v));
        if is_loop_param {
            return None;
        }
        return Some(match constants.get(v) {
            Some(k) => Affine { iv: None, coef: 0, offset: k, base: None },
            None => Affine { iv: None, coef: 0, offset: 0, base: Some(v) },
        });
    };
    let of = |x: Value| affine(func, constants, defs, steps, blocks, x);
    match (inst.op, inst.args.as_slice(), inst.imm) {
        (Opcode::IConst, _, Imm::I64(k)) => Some(Affine { iv: None, coef: 0, offset: k, base: None }),
        (Opcode::IAdd, &[a, b], _) => combine(of(a)?, of(b)?, 1),
        (Opcode::ISub, &[a, b], _) => combine(of(a)?, of(b)?, -1),
        (Opcode::IMul, &[a, b], _) => {
            let (x, y) = (of(a)?, of(b)?);
            let (scale, term) = match (x, y) {
                (Affine { iv: None, coef: 0, base: None, offset }, t) => (offset, t),
                (t, Affine { iv: None, coef: 0, base: None, offset }) => (offset, t),
                _ => return None,
            };
            if term.base.is_some() && scale != 1 {
                return None;
            }
            Some(Affine {
                iv: term.iv,
                coef: term.coef.checked_mul(scale)?,
                offset: term.offset.checked_mul(scale)?,
                base: term.base,
            })
        }
        _ => None,
    }
}

/// `x + sign * y`, when the result is still affine in one induction variable with at most one
/// invariant term.
fn combine(x: Affine, y: Affine, sign: i64) -> Option<Affine> {
    let iv = match (x.iv, y.iv) {
        (Some(a), Some(b)) if a != b => return None,
        (a, b) => a.or(b),
    };
    let base = match (x.base, y.base) {
        (Some(_), Some(_)) => return None,
        (None, Some(_)) if sign < 0 => return None,
        (a, b) => a.or(b),
    };
    Some(Affine {
        iv,
        coef: x.coef.checked_add(y.coef.checked_mul(sign)?)?,
        offset: x.offset.checked_add(y.offset.checked_mul(sign)?)?,
        base,
    })
}

/// The read-modify-writes of `slice` in block `b`.
fn accumulations_in(func: &Function, b: Block, slice: Value, use_counts: &[u32]) -> Vec<Accumulate> {
    let insts = &func.block(b).insts;
    let uses = |v: Value| use_counts.get(v.index()).copied().unwrap_or(0);
    let mut found = vec![];
    for (load, inst) in insts.iter().enumerate() {
        if inst.op != Opcode::Load || inst.args.first() != Some(&slice) {
            continue;
        }
        let (index, old) = (inst.args[1], inst.results[0]);
        let Some(op_at) =
            insts.iter().position(|i| matches!(i.op, Opcode::FAdd | Opcode::FSub) && i.args.first() == Some(&old))
        else {
            continue;
        };
        let new = insts[op_at].results[0];
        let Some(store) = insts.iter().position(|i| i.op == Opcode::Store && i.args[..] == [slice, index, new]) else {
            continue;
        };
        if op_at < load || store < op_at || uses(old) != 1 || uses(new) != 1 || insts[op_at].args[1] == old {
            continue;
        }
        found.push(Accumulate {
            block: b,
            load,
            op_at,
            store,
            op: insts[op_at].op,
            index,
            amount: insts[op_at].args[1],
            old,
        });
    }
    found
}

/// Rewrite the loop of `pair` (see the module documentation).
fn apply(func: &mut Function, pair: Pair) {
    let Pair { header, latch, slice, next, deferred } = pair;
    // Constants in the entry block: the identity of the deferred operation, and "no index".
    let identity = if deferred.op == Opcode::FAdd { -0.0 } else { 0.0 };
    let none = func.new_value(Type::I64);
    let zero = func.new_value(Type::F64);
    let entry = func.block_mut(Block::ENTRY);
    entry.insts.push(InstData {
        op: Opcode::FConst,
        args: smallvec::smallvec![],
        imm: Imm::F64(identity),
        results: smallvec::smallvec![zero],
    });
    entry.insts.push(InstData {
        op: Opcode::IConst,
        args: smallvec::smallvec![],
        imm: Imm::I64(-1),
        results: smallvec::smallvec![none],
    });
    let pending = func.add_block_param(header, Type::F64, Some("pending"));
    let at = func.add_block_param(header, Type::I64, Some("pending_at"));
    // Edges into the header: the back edge carries this iteration's deferred amount and index.
    for (b, block) in func.block_ids().zip(func.blocks.iter_mut()) {
        let Some(term) = &mut block.term else { continue };
        for call in term.successors_mut().into_iter().filter(|c| c.block == header) {
            if b == latch {
                call.args.extend([deferred.amount, deferred.index]);
            } else {
                call.args.extend([zero, none]);
            }
        }
    }
    // The deferred accumulation keeps only its load (the bounds check); `next` first applies
    // what was deferred to it.
    let combined = func.new_value(Type::F64);
    let remove = [deferred.op_at, deferred.store];
    let insts = &mut func.block_mut(deferred.block).insts;
    let mut k = 0;
    insts.retain(|_| {
        k += 1;
        !remove.contains(&(k - 1))
    });
    // Positions in `next.block` shift if it is the same block and the removals came first.
    let shift = |p: usize| if next.block == deferred.block { p - remove.iter().filter(|&&r| r < p).count() } else { p };
    let (load_at, op_at) = (shift(next.load), shift(next.op_at));
    let insts = &mut func.block_mut(next.block).insts;
    insts[op_at].args[0] = combined;
    insts.insert(
        load_at + 1,
        InstData {
            op: deferred.op,
            args: smallvec::smallvec![next.old, pending],
            imm: Imm::None,
            results: smallvec::smallvec![combined],
        },
    );
    // Edges leaving the loop (all from the header) go through a block that applies what is
    // still pending.
    let exits: Vec<usize> = {
        let term = func.block(header).term.as_ref().expect("terminated");
        let body = loop_body(func, header, latch);
        term.successors().iter().enumerate().filter(|(_, c)| !body[c.block.index()]).map(|(k, _)| k).collect()
    };
    for k in exits {
        let target = func.block(header).term.as_ref().expect("terminated").successors()[k].clone();
        let check = func.add_block("flush_check");
        let flush = func.add_block("flush");
        let ran = func.new_value(Type::Bool);
        func.block_mut(check).insts.push(InstData {
            op: Opcode::ICmp,
            args: smallvec::smallvec![at, none],
            imm: Imm::Cond(CondCode::Ne),
            results: smallvec::smallvec![ran],
        });
        func.block_mut(check).term = Some(Terminator::Branch {
            cond: ran,
            then_dest: BlockCall { block: flush, args: smallvec::smallvec![] },
            else_dest: target.clone(),
        });
        let (old, new) = (func.new_value(Type::F64), func.new_value(Type::F64));
        let insts = &mut func.block_mut(flush).insts;
        insts.push(InstData {
            op: Opcode::Load,
            args: smallvec::smallvec![slice, at],
            imm: Imm::None,
            results: smallvec::smallvec![old],
        });
        insts.push(InstData {
            op: deferred.op,
            args: smallvec::smallvec![old, pending],
            imm: Imm::None,
            results: smallvec::smallvec![new],
        });
        insts.push(InstData {
            op: Opcode::Store,
            args: smallvec::smallvec![slice, at, new],
            imm: Imm::None,
            results: smallvec::smallvec![],
        });
        func.block_mut(flush).term = Some(Terminator::Jump(target));
        let term = func.block_mut(header).term.as_mut().expect("terminated");
        *term.successors_mut()[k] = BlockCall { block: check, args: smallvec::smallvec![] };
    }
    func.canonicalize();
}

/// The blocks of the natural loop of `header` with back edge from `latch`.
fn loop_body(func: &Function, header: Block, latch: Block) -> Vec<bool> {
    let cfg = ControlFlow::new(func);
    let mut body = vec![false; func.blocks.len()];
    body[header.index()] = true;
    let mut work = vec![latch];
    while let Some(b) = work.pop() {
        if !body[b.index()] {
            body[b.index()] = true;
            work.extend(cfg.predecessors(b).iter().copied());
        }
    }
    body
}
