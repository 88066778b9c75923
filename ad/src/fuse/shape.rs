//! The shapes [`fuse_reversed_loops`](super::fuse_reversed_loops) recognises: counters,
//! countdowns, sums carried by a loop, the chain of blocks between two loops.

use jitdiff_ir::analysis::NaturalLoop;
use jitdiff_ir::{Block, CondCode, Function, Imm, InstData, Opcode, Type, Value};
use rustc_hash::FxHashSet as HashSet;

/// Every edge leaving `l` leaves from its header, so each iteration runs the body through to
/// a back edge.
pub(super) fn exits_from_header_only(func: &Function, l: &NaturalLoop) -> bool {
    func.block_ids()
        .zip(&func.blocks)
        .filter(|(b, _)| l.body[b.index()] && *b != l.header)
        .all(|(_, block)| block.term.as_ref().is_some_and(|t| t.successors().iter().all(|c| l.body[c.block.index()])))
}

/// Positions among `from`'s successors of the edges to `to`.
pub(super) fn successor_positions(func: &Function, from: Block, to: Block) -> Vec<usize> {
    let Some(term) = &func.block(from).term else { return vec![] };
    term.successors().iter().enumerate().filter(|(_, c)| c.block == to).map(|(k, _)| k).collect()
}

/// The defining instruction of `v`, if an instruction of `func` defines it.
pub(super) fn def_of(func: &Function, v: Value) -> Option<(Block, usize, &InstData)> {
    func.block_ids().zip(&func.blocks).find_map(|(b, block)| {
        block.insts.iter().enumerate().find(|(_, i)| i.results.contains(&v)).map(|(k, i)| (b, k, i))
    })
}

pub(super) fn constant_of(func: &Function, v: Value) -> Option<i64> {
    match def_of(func, v)?.2 {
        InstData { op: Opcode::IConst, imm: Imm::I64(k), .. } => Some(*k),
        _ => None,
    }
}

/// `cond` is `icmp eq trip, 0` (or `0, trip`), computed in `header`.
pub(super) fn is_compare_to_zero(func: &Function, header: Block, cond: Value, trip: Value) -> bool {
    let Some((b, _, inst)) = def_of(func, cond) else { return false };
    let zero = |v: Value| constant_of(func, v) == Some(0);
    b == header
        && inst.op == Opcode::ICmp
        && inst.imm == Imm::Cond(CondCode::Eq)
        && ((inst.args[0] == trip && zero(inst.args[1])) || (inst.args[1] == trip && zero(inst.args[0])))
}

/// `v` is `isub trip, 1`, computed in `header` (so it is the same value on every back edge).
pub(super) fn is_decrement(func: &Function, header: Block, v: Value, trip: Value) -> bool {
    let Some((b, _, inst)) = def_of(func, v) else { return false };
    b == header && inst.op == Opcode::ISub && inst.args[0] == trip && constant_of(func, inst.args[1]) == Some(1)
}

/// `next` is `iadd counter, 1`.
pub(super) fn is_increment(func: &Function, next: Value, counter: Value) -> bool {
    let Some((_, _, inst)) = def_of(func, next) else { return false };
    let one = |v: Value| constant_of(func, v) == Some(1);
    inst.op == Opcode::IAdd
        && ((inst.args[0] == counter && one(inst.args[1])) || (inst.args[1] == counter && one(inst.args[0])))
}

/// `param` carries a sum through the loop `l`: every back edge passes `param + a` (or `a +
/// param`, `param - a`) for some `a`, and nothing else in the loop reads `param`. The order of
/// the iterations then changes only the order of the additions.
pub(super) fn is_accumulator(
    func: &Function,
    l: &NaturalLoop,
    param: Value,
    mut passed: impl Iterator<Item = Value>,
) -> bool {
    let mut sums = vec![];
    let all_sums = passed.all(|v| {
        let Some((b, _, inst)) = def_of(func, v) else { return false };
        let sum = match inst.op {
            Opcode::FAdd => inst.args.contains(&param) && inst.args[0] != inst.args[1],
            Opcode::FSub => inst.args[0] == param && inst.args[1] != param,
            _ => false,
        };
        sums.push(v);
        sum && l.body[b.index()]
    });
    let reads = func.block_ids().zip(&func.blocks).filter(|(b, _)| l.body[b.index()]).any(|(_, block)| {
        block.insts.iter().any(|i| i.args.contains(&param) && !i.results.iter().any(|r| sums.contains(r)))
            || block.term.as_ref().is_some_and(|t| t.uses().contains(&param))
    });
    func.ty(param) == Type::F64 && all_sums && !reads
}

/// Is a value defined in `defined` (the reversed loop's header) used outside the loop?
pub(super) fn used_outside(func: &Function, l: &NaturalLoop, defined: &HashSet<Value>) -> bool {
    func.block_ids().zip(&func.blocks).filter(|(b, _)| !l.body[b.index()]).any(|(_, block)| {
        block.insts.iter().flat_map(|i| &i.args).any(|a| defined.contains(a))
            || block.term.as_ref().is_some_and(|t| t.uses().iter().any(|a| defined.contains(a)))
    })
}

/// Follow `v` back through the block parameters of `chain` (whose first block the exit edge of
/// `forward_header` enters) to where it is defined.
pub(super) fn resolve_through_chain(
    func: &Function,
    chain: &[Block],
    forward_header: Block,
    mut v: Value,
) -> Option<Value> {
    for (k, &b) in chain.iter().enumerate().rev() {
        let Some(position) = func.block(b).params.iter().position(|&p| p == v) else { continue };
        let pred = if k == 0 { forward_header } else { chain[k - 1] };
        let edges = successor_positions(func, pred, b);
        let &[edge] = edges.as_slice() else { return None };
        v = func.block(pred).term.as_ref()?.successors()[edge].args[position];
    }
    Some(v)
}

/// The trip count `trip` passed to a reversed loop as a function of the forward loop's
/// counter: the counter itself (`Some((counter, None))`), or `counter - start`
/// (`Some((counter, Some(start)))`) for a counter starting at `start`.
pub(super) fn trip_of_counter(func: &Function, forward_header: Block, trip: Value) -> Option<(Value, Option<Value>)> {
    let params = &func.block(forward_header).params;
    if params.contains(&trip) {
        return Some((trip, None));
    }
    let (_, _, inst) = def_of(func, trip)?;
    (inst.op == Opcode::ISub && params.contains(&inst.args[0])).then(|| (inst.args[0], Some(inst.args[1])))
}
