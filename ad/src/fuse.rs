//! Loop fusion of the fused `value_and_grad`: a forward loop and, right after it, the reversed
//! loop of its pullback become one loop that runs both bodies per iteration, in forward order.
//!
//! Inlined into one function, a gradient is two sweeps: the forward function's loop over
//! `i = 0 .. T`, then the pullback's loop over `k = T - 1 .. 0`, which recomputes or pops what
//! iteration `k` of the forward loop had and adds that iteration's contributions into the
//! differentials. A hand-written gradient is one sweep. The two can be one when the reversed
//! loop's iterations commute, that is when an iteration
//!
//! - carries nothing to the next but its counter (no cotangent that depends on later
//!   iterations: the cotangent of a sum is the same in every iteration, and the pullback passes
//!   it in from outside the loop),
//! - touches a mutable slice only by accumulating into it (`d[j] = d[j] + a`, the `old` value
//!   used by nothing else) or by loads whose value is unused (kept for their bounds check),
//!   and touches no mutable slice the forward loop touches,
//! - uses nothing the forward loop computed but its trip count,
//! - calls nothing.
//!
//! Then iteration `k` of the reversed loop may run right after iteration `k` of the forward
//! loop: what it reads (read-only slices, values from before the loops, the tape record that
//! iteration pushed) is there, what it writes (differentials) the forward loop never reads.
//! Only the order of the additions into each differential entry changes — it is the order a
//! hand-written gradient adds them in; results agree to rounding. Where the loops have tape
//! traffic, the tape still works per iteration: iteration `k` pushes its record and at once pops
//! it, in reverse. A pop only moves the tape's read cursor, so afterwards the cursor is not where
//! later pops expect it: the loops fuse only when every pop of the function is in the reversed
//! loop (and nothing is called). In the end the fusion stands only where each pop then pairs
//! with a push of the same block and the tape goes (see [`fuse_reversed_loops`]).
//!
//! Valid only for what the reverse-mode transform builds: that the reversed loop's iteration
//! `k` pops exactly the record of the forward loop's iteration `k`, and that its trip count is
//! the forward loop's, is known from how the transform writes them, not checked here.

use jitdiff_ir::analysis::{ControlFlow, LoopBody, NaturalLoop};
use jitdiff_ir::{Block, BlockCall, Function, InstData, Opcode, Terminator, Type, Value};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

mod effects;
mod shape;
#[cfg(test)]
mod tests;

use effects::{effects_of, forward_iteration_tape, pops_outside};
use shape::{
    constant_of, def_of, exits_from_header_only, is_accumulator, is_compare_to_zero, is_decrement, is_increment,
    resolve_through_chain, successor_positions, trip_of_counter, used_outside,
};

/// Fuse every forward loop with the reversed loop that follows it where that is valid (see the
/// module documentation); true when something changed. The caller optimises afterwards.
pub fn fuse_reversed_loops(func: &mut Function) -> bool {
    let original = func.clone();
    let (mut changed, mut recorded) = (false, false);
    // One pair at a time: fusing changes the blocks the next search looks at.
    loop {
        let cfg = ControlFlow::new(func);
        let loops = cfg.natural_loops();
        let Some(plan) = loops.iter().find_map(|reversed| plan(func, &cfg, &loops, reversed)) else {
            if changed {
                // The forward latch and the reversed body's first block are one block now.
                jitdiff_ir::passes::merge_blocks(func);
                forward_iteration_tape(func);
            }
            // Fused loops that still push and pop per iteration (the tape of other loops is not
            // their business) measured slower than the two sweeps (GradBench's llsq: 2.1 -> 5.5
            // times its objective; the MLP 1.10 -> 1.34 ms, with the same inner-loop machine
            // code: see docs/reverse.md): keep the two.
            let pushes_and_pops = |f: &Function| {
                let ops = |op: Opcode| f.blocks.iter().flat_map(|b| &b.insts).any(|i| i.op == op);
                ops(Opcode::TPush) && ops(Opcode::TPop)
            };
            if recorded && pushes_and_pops(func) {
                *func = original;
                return false;
            }
            return changed;
        };
        recorded |= plan.records;
        apply(func, plan);
        passes_cleanup(func);
        changed = true;
    }
}

/// Drop the blocks fusion left unreachable and renumber.
fn passes_cleanup(func: &mut Function) {
    jitdiff_ir::passes::remove_unreachable_blocks(func);
    func.canonicalize();
}

/// What [`apply`] needs to fuse one pair.
struct Plan {
    /// The forward loop's header, its latch and the back edge's position among the latch's
    /// successors.
    forward_latch: Block,
    forward_back: usize,
    /// The forward loop's counter `i`, its value at the back edge (`i + 1`), and its start when
    /// that is not 0 (the reversed loop then counts `i - start`).
    counter: Value,
    next_counter: Value,
    start: Option<Value>,
    /// The forward loop's header, the block outside the loop that enters it and which of its
    /// successors does.
    forward_header: Block,
    forward_preheader: Block,
    forward_entry_edge: usize,
    /// The reversed loop's header and its blocks.
    reversed_header: Block,
    reversed_body: LoopBody,
    /// The block that enters the reversed loop, and which of its successors does.
    reversed_preheader: Block,
    reversed_entry_edge: usize,
    /// The reversed header's parameter that counts down, and those that carry sums (see
    /// [`is_accumulator`]), by position.
    trip_at: usize,
    accumulators: Vec<usize>,
    /// Whether the forward loop pushes or the reversed loop pops.
    records: bool,
    /// Instructions of the blocks between the loops the reversed loop needs, by block and
    /// position, in order: they move before the forward loop.
    hoist: Vec<(Block, usize)>,
}

fn plan(func: &Function, cfg: &ControlFlow, loops: &[NaturalLoop], reversed: &NaturalLoop) -> Option<Plan> {
    let header = reversed.header;
    let inside = |b: Block| reversed.body[b.index()];
    let header_data = func.block(header);
    if !exits_from_header_only(func, reversed) {
        return None;
    }
    // The header: pure instructions, `br trip == 0, exit, body`.
    let Some(Terminator::Branch { cond, then_dest, else_dest }) = &header_data.term else { return None };
    // (A reversed loop with no body but its header has nothing to fuse.)
    let exit = match (inside(then_dest.block), inside(else_dest.block)) {
        (false, true) if else_dest.block != header => then_dest,
        _ => return None,
    };
    let trip_at = header_data.params.iter().position(|&p| is_compare_to_zero(func, header, *cond, p))?;
    let trip = header_data.params[trip_at];
    let preds = cfg.predecessors(header);
    let outside: Vec<Block> = preds.iter().copied().filter(|&p| !inside(p)).collect();
    let &[reversed_preheader] = outside.as_slice() else { return None };
    let back_edges: Vec<&BlockCall> = preds
        .iter()
        .filter(|&&p| inside(p))
        .filter_map(|&latch| func.block(latch).term.as_ref())
        .flat_map(|t| t.successors())
        .filter(|call| call.block == header)
        .collect();
    // Every back edge passes `trip - 1`; the other parameters are sums.
    let mut accumulators = vec![];
    for (k, &param) in header_data.params.iter().enumerate() {
        let ok = match k == trip_at {
            true => back_edges.iter().all(|call| is_decrement(func, header, call.args[k], trip)),
            false => is_accumulator(func, reversed, param, back_edges.iter().map(|call| call.args[k])),
        };
        if !ok {
            return None;
        }
        if k != trip_at {
            accumulators.push(k);
        }
    }
    let defined_in_header: HashSet<Value> =
        header_data.insts.iter().flat_map(|i| i.results.iter().copied()).chain([trip]).collect();
    if func.ty(trip) != Type::I64
        || header_data.insts.iter().any(|i| i.op.has_side_effects() || i.op.can_fail())
        || exit.args.iter().any(|a| defined_in_header.contains(a))
        || used_outside(func, reversed, &defined_in_header)
    {
        return None;
    }
    let entry_edges: Vec<usize> = successor_positions(func, reversed_preheader, header);
    let &[reversed_entry_edge] = entry_edges.as_slice() else { return None };
    // The reversed loop's effects: accumulations and unused loads of mutable slices, pops.
    let effects = effects_of(func, &reversed.body)?;
    if effects.pushes || effects.calls || !effects.accumulates_only {
        return None;
    }
    // Walk back from the reversed loop's preheader through a straight chain of blocks to the
    // header of the forward loop, whose exit the chain starts at.
    // Each block of the chain has one predecessor and ends in a jump, so it runs exactly when
    // the forward loop exits.
    let mut chain = vec![];
    let mut at = reversed_preheader;
    let forward = loop {
        if let Some(l) = loops.iter().find(|l| l.header == at) {
            break l;
        }
        let &[pred] = cfg.predecessors(at) else { return None };
        if !matches!(func.block(at).term, Some(Terminator::Jump(_))) || chain.len() > func.blocks.len() {
            return None;
        }
        chain.push(at);
        at = pred;
    };
    if forward.blocks.iter().any(|&b| reversed.body.contains(b)) || !exits_from_header_only(func, forward) {
        return None;
    }
    chain.reverse();
    // The forward loop: counter from 0 by 1, one latch, one preheader.
    let forward_header = forward.header;
    let forward_preds = cfg.predecessors(forward_header);
    let forward_inside = |b: Block| forward.body[b.index()];
    let latches: Vec<Block> = forward_preds.iter().copied().filter(|&p| forward_inside(p)).collect();
    let entries: Vec<Block> = forward_preds.iter().copied().filter(|&p| !forward_inside(p)).collect();
    let (&[forward_latch], &[forward_preheader]) = (latches.as_slice(), entries.as_slice()) else { return None };
    let back_edges = successor_positions(func, forward_latch, forward_header);
    let entry_positions = successor_positions(func, forward_preheader, forward_header);
    let (&[forward_back], &[entry_at]) = (back_edges.as_slice(), entry_positions.as_slice()) else { return None };
    let back = func.block(forward_latch).term.as_ref()?.successors()[forward_back].clone();
    let entry = func.block(forward_preheader).term.as_ref()?.successors()[entry_at].clone();
    // The trip count passed to the reversed loop must be the forward loop's counter.
    let entered = func.block(reversed_preheader).term.as_ref()?.successors()[reversed_entry_edge].clone();
    let passed = entered.args[trip_at];
    // (or the counter minus its start).
    let (counter, start) =
        trip_of_counter(func, forward_header, resolve_through_chain(func, &chain, forward_header, passed)?)?;
    let position = func.block(forward_header).params.iter().position(|&p| p == counter)?;
    let next_counter = back.args[position];
    let initial_counter = entry.args[position];
    let starts_right = match start {
        None => constant_of(func, initial_counter) == Some(0),
        Some(s) => {
            s == initial_counter || constant_of(func, s).is_some_and(|k| constant_of(func, initial_counter) == Some(k))
        }
    };
    if !starts_right || !is_increment(func, next_counter, counter) {
        return None;
    }
    let start = start.map(|_| initial_counter);
    // Effects of the forward loop: no calls, no pops, no mutable slice the reversed loop uses.
    let forward_effects = effects_of(func, &forward.body)?;
    if forward_effects.calls
        || forward_effects.pops
        || forward_effects.mutable.iter().any(|s| effects.mutable.contains(s))
    {
        return None;
    }
    // Tape traffic in the loops: every pop of the function must be in the reversed loop.
    if forward_effects.pushes || effects.pops {
        let all = effects_of(func, &LoopBody::from_blocks(func.block_ids().collect()))?;
        if all.calls || pops_outside(func, &reversed.body) {
            return None;
        }
    }
    // Values the reversed loop uses from outside it: from before the forward loop, or pure
    // instructions of the chain that depend on nothing else (moved before the forward loop).
    let initial: Vec<Value> = accumulators.iter().map(|&k| entered.args[k]).collect();
    let hoist = hoistable(func, cfg, reversed, &initial, &chain, forward, &defined_in_header)?;
    Some(Plan {
        forward_latch,
        forward_back,
        counter,
        next_counter,
        start,
        forward_header,
        forward_preheader,
        forward_entry_edge: entry_at,
        reversed_header: header,
        reversed_body: reversed.body.clone(),
        reversed_preheader,
        reversed_entry_edge,
        trip_at,
        accumulators,
        records: forward_effects.pushes || effects.pops,
        hoist,
    })
}

/// The instructions of `chain` the reversed loop needs, when each is pure, cannot fail and
/// depends only on values from before the forward loop (or on other such instructions); `None`
/// when the reversed loop uses anything else from outside itself but its trip count.
fn hoistable(
    func: &Function,
    cfg: &ControlFlow,
    reversed: &NaturalLoop,
    initial: &[Value],
    chain: &[Block],
    forward: &NaturalLoop,
    header_values: &HashSet<Value>,
) -> Option<Vec<(Block, usize)>> {
    let mut defined_at: HashMap<Value, Block> = HashMap::default();
    for (b, block) in func.block_ids().zip(&func.blocks) {
        for &p in &block.params {
            defined_at.insert(p, b);
        }
        for r in block.insts.iter().flat_map(|i| &i.results) {
            defined_at.insert(*r, b);
        }
    }
    let mut needed: Vec<(Block, usize)> = vec![];
    let mut seen: HashSet<Value> = HashSet::default();
    let mut work: Vec<Value> = initial.to_vec();
    for (b, block) in func.block_ids().zip(&func.blocks) {
        if reversed.body[b.index()] {
            work.extend(block.insts.iter().flat_map(|i| i.args.iter().copied()));
            work.extend(block.term.iter().flat_map(|t| t.uses()));
        }
    }
    while let Some(v) = work.pop() {
        if !seen.insert(v) || header_values.contains(&v) {
            continue;
        }
        let Some(&b) = defined_at.get(&v) else { continue }; // a parameter of the function
        if reversed.body[b.index()] {
            continue;
        }
        if chain.contains(&b) {
            if func.block(b).params.contains(&v) {
                return None;
            }
            let (_, k, inst) = def_of(func, v)?;
            if inst.op.has_side_effects() || inst.op.can_fail() {
                return None;
            }
            needed.push((b, k));
            work.extend(inst.args.iter().copied());
            continue;
        }
        // From before the forward loop: its block dominates the forward header, outside it.
        if forward.body[b.index()] || !cfg.dominates(b, forward.header) {
            return None;
        }
    }
    let order = |site: &(Block, usize)| (chain.iter().position(|&c| c == site.0), site.1);
    needed.sort_by_key(order);
    needed.dedup();
    Some(needed)
}

fn apply(func: &mut Function, plan: Plan) {
    let Plan {
        forward_latch,
        forward_back,
        counter,
        next_counter,
        start,
        forward_header,
        forward_preheader,
        forward_entry_edge,
        reversed_header,
        reversed_body,
        reversed_preheader,
        reversed_entry_edge,
        trip_at,
        accumulators,
        hoist,
        ..
    } = plan;
    // The chain's instructions the reversed loop needs go to the end of the forward preheader.
    let moved: Vec<InstData> = hoist.iter().map(|&(b, k)| func.block(b).insts[k].clone()).collect();
    let mut removed: HashMap<Block, Vec<usize>> = HashMap::default();
    for &(b, k) in &hoist {
        removed.entry(b).or_default().push(k);
    }
    for (b, positions) in removed {
        let mut k = 0;
        func.block_mut(b).insts.retain(|_| {
            k += 1;
            !positions.contains(&(k - 1))
        });
    }
    func.block_mut(forward_preheader).insts.extend(moved);
    // The reversed header's instructions run at the end of each forward iteration, with the
    // trip count the reversed loop would have had there: `i + 1`; its `trip - 1` is `i`.
    let trip = func.block(reversed_header).params[trip_at];
    // Sums carried by the reversed loop are carried by the forward loop now, from the same
    // initial values.
    let entered = func.block(reversed_preheader).term.as_ref().expect("terminated").successors()[reversed_entry_edge]
        .args
        .clone();
    let mut carried: Vec<(Value, Value)> = vec![];
    for &k in &accumulators {
        let old = func.block(reversed_header).params[k];
        let new = func.add_block_param(forward_header, Type::F64, None);
        carried.push((old, new));
        let term = func.block_mut(forward_preheader).term.as_mut().expect("terminated");
        term.successors_mut()[forward_entry_edge].args.push(entered[k]);
    }
    let header_insts = std::mem::take(&mut func.block_mut(reversed_header).insts);
    let decremented: Vec<Value> = header_insts
        .iter()
        .filter(|inst| inst.op == Opcode::ISub && inst.args[0] == trip && constant_of(func, inst.args[1]) == Some(1))
        .map(|inst| inst.results[0])
        .collect();
    // A counter from `start`: the reversed loop's `trip` is `(i + 1) - start` there, and its
    // `trip - 1` is `i - start`.
    let (iteration, trip_there) = match start {
        None => (counter, next_counter),
        Some(start) => {
            let (iteration, trip_there) = (func.new_value(Type::I64), func.new_value(Type::I64));
            let latch = func.block_mut(forward_latch);
            for (result, from) in [(iteration, counter), (trip_there, next_counter)] {
                latch.insts.push(InstData {
                    op: Opcode::ISub,
                    args: smallvec::smallvec![from, start],
                    imm: jitdiff_ir::Imm::None,
                    results: smallvec::smallvec![result],
                });
            }
            (iteration, trip_there)
        }
    };
    let rename = |v: Value| match v {
        v if v == trip => trip_there,
        v if decremented.contains(&v) => iteration,
        v => v,
    };
    let header_insts: Vec<InstData> = header_insts
        .into_iter()
        .filter(|inst| !inst.results.iter().any(|r| decremented.contains(r)))
        .map(|mut inst| {
            inst.args.iter_mut().for_each(|a| *a = rename(*a));
            inst
        })
        .collect();
    func.block_mut(forward_latch).insts.extend(header_insts);
    for (b, block) in func.blocks.iter_mut().enumerate() {
        if reversed_body[b] && b != reversed_header.index() {
            block.insts.iter_mut().flat_map(|i| i.args.iter_mut()).for_each(|a| *a = rename(*a));
            if let Some(term) = &mut block.term {
                term.map_uses(rename);
            }
        }
    }
    let Some(Terminator::Branch { mut then_dest, mut else_dest, .. }) = func.block(reversed_header).term.clone() else {
        unreachable!("checked by plan")
    };
    for call in [&mut then_dest, &mut else_dest] {
        call.args.iter_mut().for_each(|a| *a = rename(*a));
    }
    // The reversed body rebuilds the forward counter as `start + (i - start)`: that is `i`.
    if let Some(start) = start {
        let start_constant = constant_of(func, start);
        let is_start = |v: Value| v == start || (start_constant.is_some() && constant_of(func, v) == start_constant);
        let mut rebuilt: Vec<Value> = vec![];
        for (b, block) in func.blocks.iter().enumerate() {
            if reversed_body[b] {
                for inst in block.insts.iter().filter(|i| i.op == Opcode::IAdd) {
                    let [x, y] = inst.args[..] else { continue };
                    if (x == iteration && is_start(y)) || (y == iteration && is_start(x)) {
                        rebuilt.push(inst.results[0]);
                    }
                }
            }
        }
        let to_counter = |v: Value| if rebuilt.contains(&v) { counter } else { v };
        rename_uses(func, to_counter);
    }
    let (exit, body_entry) =
        if reversed_body[then_dest.block.index()] { (else_dest, then_dest) } else { (then_dest, else_dest) };
    // The forward back edge now enters the reversed body; the reversed back edges return to the
    // forward header with what the forward back edge passed.
    let latch_term = func.block_mut(forward_latch).term.as_mut().expect("terminated");
    let back: BlockCall = std::mem::replace(latch_term.successors_mut()[forward_back], body_entry);
    for (b, block) in func.blocks.iter_mut().enumerate() {
        if !reversed_body[b] {
            continue;
        }
        if let Some(term) = &mut block.term {
            for call in term.successors_mut() {
                if call.block == reversed_header {
                    let sums: Vec<Value> = accumulators.iter().map(|&k| call.args[k]).collect();
                    *call = back.clone();
                    call.args.extend(sums);
                }
            }
        }
    }
    // Whoever entered the reversed loop goes where it exited.
    let term = func.block_mut(reversed_preheader).term.as_mut().expect("terminated");
    *term.successors_mut()[reversed_entry_edge] = exit;
    // The reversed header is unreachable now (the caller drops it); its sums are the forward
    // header's.
    let rename = |v: Value| carried.iter().find(|(old, _)| *old == v).map_or(v, |&(_, new)| new);
    rename_uses(func, rename);
}

/// Replace every use of a value `v` in `func` by `rename(v)`.
pub(super) fn rename_uses(func: &mut Function, rename: impl Fn(Value) -> Value) {
    for block in &mut func.blocks {
        block.insts.iter_mut().flat_map(|i| i.args.iter_mut()).for_each(|a| *a = rename(*a));
        if let Some(term) = &mut block.term {
            term.map_uses(&rename);
        }
    }
}
