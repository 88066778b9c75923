//! Redundant loop counters: an induction variable that steps in lockstep with another.

use crate::Imm;
use crate::analysis::{ControlFlow, LoopBody, NaturalLoop, has_back_edge};
use crate::function::{Block, Function, InstData, Terminator, Value};
use crate::opcode::{CondCode, Opcode};
use crate::types::Type;

/// Remove a loop counter `t` that steps by the same constant as another header parameter `r`
/// (or by its negation) on every back edge, when `t` is only tested for equality against a
/// loop-invariant value or used after the loop: the test becomes one on `r` and the uses after
/// the loop read `r - (r0 - t0)` (or `(r0 + t0) - r`), with `r0`, `t0` the values the loop was
/// entered with; `t` and its step are then dead and removed (with anything else dead, by
/// [`dce`](super::dce)).
///
/// Reverse mode makes such pairs: a reversed loop counts its remaining trips down beside the
/// index it steps back, and `f_fwd` counts trips beside the loop's own index to record them.
/// One register and one addition fewer per iteration, and the loop is then tested on the index
/// its accesses use (which lets the JIT version it on that index).
///
/// Exact in wrapping arithmetic: `t_k = t0 + s k` and `r_k = r0 + s k` (mod 2^64), so
/// `t_k = r_k - (r0 - t0)` and `t_k == c` exactly when `r_k == c + (r0 - t0)`; with
/// `r_k = r0 - s k`, `t_k = (r0 + t0) - r_k`. Only loops with one entry edge qualify, so the
/// block it comes from dominates the loop and computes the offset.
///
/// ```
/// use jitdiff_ir::{parse_module, passes, print_module};
/// let src = "func @f(x: slice, n: i64) -> i64 {
/// entry:
///     zero = iconst 0
///     one = iconst 1
///     jump head(n, zero)
/// head(trip: i64, i: i64):
///     done = icmp eq trip, zero
///     br done, exit, body
/// body:
///     v = load x, i
///     trip2 = isub trip, one
///     i2 = iadd i, one
///     jump head(trip2, i2)
/// exit:
///     ret i
/// }
/// ";
/// let mut m = parse_module(src).unwrap();
/// passes::eliminate_counters(&mut m.functions[0]);
/// let text = print_module(&m);
/// assert!(!text.contains("trip") && text.contains("head(i: i64)"));
/// ```
pub fn eliminate_counters(func: &mut Function) {
    if func.blocks.is_empty() {
        return;
    }
    // One counter per loop per round, in every loop whose change touches no block another
    // change of the round touches (a change inserts instructions and rewrites tests by
    // position); the analysis is redone after each round. Redoing it after each single change
    // made a function of many loops cost loops × blocks per change (1,000 loops in a row: the
    // reverse derivation took 3.4 s).
    for _ in 0..func.blocks.len() {
        if !has_back_edge(func) {
            return;
        }
        let cfg = ControlFlow::new(func);
        let def = definitions(func);
        // Built at the first loop with two counters in lockstep: most loops have none, and the
        // use lists are the costliest part of the analysis.
        let uses = std::cell::OnceCell::new();
        let mut claimed = vec![false; func.blocks.len()];
        let mut changes = vec![];
        for l in cfg.natural_loops() {
            let Some(change) = plan(func, &cfg, &def, &uses, &l) else { continue };
            let touched = change.touched();
            if touched.iter().any(|b| claimed[b.index()]) {
                continue;
            }
            touched.iter().for_each(|b| claimed[b.index()] = true);
            changes.push(change);
        }
        if changes.is_empty() {
            return;
        }
        for change in changes {
            apply(func, change);
        }
        func.canonicalize();
        // The counters and their steps are dead now; removing them keeps the next round from
        // taking a kept variable for a counter of a removed one.
        super::dce(func);
    }
}

/// Where each value is defined: the block and, for instruction results, the instruction.
fn definitions(func: &Function) -> Vec<Option<(Block, Option<usize>)>> {
    let mut def = vec![None; func.values.len()];
    for &p in &func.params {
        def[p.index()] = Some((Block::ENTRY, None));
    }
    for (b, block) in func.blocks.iter().enumerate() {
        for &p in &block.params {
            def[p.index()] = Some((Block(b as u32), None));
        }
        for (k, inst) in block.insts.iter().enumerate() {
            for &r in &inst.results {
                def[r.index()] = Some((Block(b as u32), Some(k)));
            }
        }
    }
    def
}

/// Where each value is read: `(block, Some(instruction))`, or `(block, None)` for the block's
/// terminator; one entry per reading instruction or terminator, in block order.
struct Uses(Vec<Vec<(Block, Option<usize>)>>);

impl Uses {
    fn of(func: &Function) -> Uses {
        let mut uses: Vec<Vec<(Block, Option<usize>)>> = vec![vec![]; func.values.len()];
        let mut add = |v: Value, site: (Block, Option<usize>)| {
            if let Some(list) = uses.get_mut(v.index())
                && list.last() != Some(&site)
            {
                list.push(site);
            }
        };
        for (bi, block) in func.blocks.iter().enumerate() {
            let b = Block(bi as u32);
            for (k, inst) in block.insts.iter().enumerate() {
                inst.args.iter().for_each(|&a| add(a, (b, Some(k))));
            }
            if let Some(term) = &block.term {
                term.uses().into_iter().for_each(|a| add(a, (b, None)));
            }
        }
        Uses(uses)
    }

    fn of_value(&self, v: Value) -> &[(Block, Option<usize>)] {
        self.0.get(v.index()).map_or(&[], Vec::as_slice)
    }
}

/// A counter to remove.
struct Change {
    header: Block,
    /// The block entering the loop, and the counter's and the kept variable's positions.
    preheader: Block,
    counter: usize,
    kept: usize,
    /// The kept variable steps the other way (`-s` where the counter steps by `s`).
    opposite: bool,
    /// Equality tests of the counter: `(block, instruction, position of the invariant operand)`.
    tests: Vec<(Block, usize, usize)>,
    /// The reachable blocks after the loop that use the counter.
    after: Vec<Block>,
}

impl Change {
    /// The blocks [`apply`] edits: the preheader (appended to), the blocks of the tests
    /// (rewritten by position), and the blocks after the loop that use the counter (an
    /// instruction inserted first).
    fn touched(&self) -> Vec<Block> {
        let mut blocks = vec![self.preheader];
        blocks.extend(self.tests.iter().map(|&(b, _, _)| b));
        blocks.extend_from_slice(&self.after);
        blocks
    }
}

fn plan(
    func: &Function,
    cfg: &ControlFlow,
    def: &[Option<(Block, Option<usize>)>],
    uses: &std::cell::OnceCell<Uses>,
    l: &NaturalLoop,
) -> Option<Change> {
    let in_loop = |b: Block| l.body.get(b.index()).copied().unwrap_or(false);
    let header = func.block(l.header);
    // Exactly one edge from outside the loop.
    let mut entries = vec![];
    for &p in cfg.predecessors(l.header) {
        if in_loop(p) || entries.iter().any(|&(q, _)| q == p) {
            continue;
        }
        for (slot, call) in func.block(p).term.as_ref()?.successors().iter().enumerate() {
            if call.block == l.header {
                entries.push((p, slot));
            }
        }
    }
    let [(preheader, _)] = entries[..] else { return None };
    let latches: Vec<Block> = cfg.predecessors(l.header).iter().copied().filter(|&p| in_loop(p)).collect();
    // Each i64 header parameter's step, when it is one constant on every back edge; and the
    // instructions computing those steps.
    let mut steps: Vec<Option<i64>> = vec![None; header.params.len()];
    let mut step_insts: Vec<Vec<(Block, usize)>> = vec![vec![]; header.params.len()];
    for (position, &param) in header.params.iter().enumerate() {
        if func.ty(param) != Type::I64 {
            continue;
        }
        let mut step = None;
        let mut all = true;
        for &latch in &latches {
            for call in func.block(latch).term.as_ref()?.successors() {
                if call.block != l.header {
                    continue;
                }
                match constant_step(func, def, call.args[position], param) {
                    Some((s, at)) if step.is_none_or(|known| known == s) => {
                        step = Some(s);
                        step_insts[position].push(at);
                    }
                    _ => all = false,
                }
            }
        }
        if all {
            steps[position] = step;
        }
    }
    for (counter, &param) in header.params.iter().enumerate() {
        let Some(step) = steps[counter] else { continue };
        // (`checked_neg` is None for a step of i64::MIN, whose negation is itself: it must not
        // match a parameter that is no counter at all, whose step is None too.)
        let lockstep =
            |k: usize| k != counter && steps[k].is_some_and(|other| other == step || Some(other) == step.checked_neg());
        let Some(kept) = (0..steps.len()).find(|&k| lockstep(k)) else { continue };
        let uses = uses.get_or_init(|| Uses::of(func));
        let opposite = steps[kept] != Some(step);
        // Every use: its own step (feeding only its back-edge slots), an equality test against
        // an invariant, or a block after the loop.
        let invariant = |v: Value| def.get(v.index()).copied().flatten().is_some_and(|(b, _)| !in_loop(b));
        let mut tests = vec![];
        let mut after = vec![];
        let mut removable = true;
        for &(b, site) in uses.of_value(param) {
            if !in_loop(b) {
                if cfg.is_reachable(b) && after.last() != Some(&b) {
                    after.push(b);
                }
                continue;
            }
            let Some(k) = site else {
                removable = false;
                continue;
            };
            if step_insts[counter].contains(&(b, k)) {
                continue;
            }
            let inst = &func.block(b).insts[k];
            match (inst.op, inst.imm, &inst.args[..]) {
                (Opcode::ICmp, Imm::Cond(CondCode::Eq | CondCode::Ne), &[x, y]) if x == param && invariant(y) => {
                    tests.push((b, k, 1))
                }
                (Opcode::ICmp, Imm::Cond(CondCode::Eq | CondCode::Ne), &[x, y]) if y == param && invariant(x) => {
                    tests.push((b, k, 0))
                }
                _ => removable = false,
            }
        }
        // The step results feed nothing but the counter's own back-edge slots.
        for &(b, k) in &step_insts[counter] {
            let next = func.block(b).insts[k].results[0];
            if !only_feeds_slot(func, uses, &l.body, next, l.header, counter) {
                removable = false;
            }
        }
        if removable {
            return Some(Change { header: l.header, preheader, counter, kept, opposite, tests, after });
        }
    }
    None
}

/// `Some((k, where))` when `next` is `param + k`, `k + param` or `param - (-k)` for a constant
/// `k`, computed by the instruction at `where`.
fn constant_step(
    func: &Function,
    def: &[Option<(Block, Option<usize>)>],
    next: Value,
    param: Value,
) -> Option<(i64, (Block, usize))> {
    let (b, Some(k)) = def.get(next.index()).copied().flatten()? else { return None };
    let inst = &func.block(b).insts[k];
    let constant = |v: Value| {
        let (cb, Some(ck)) = def.get(v.index()).copied().flatten()? else { return None };
        match func.block(cb).insts[ck] {
            InstData { op: Opcode::IConst, imm: Imm::I64(c), .. } => Some(c),
            _ => None,
        }
    };
    let step = match (inst.op, &inst.args[..]) {
        (Opcode::IAdd, &[x, c]) if x == param => constant(c)?,
        (Opcode::IAdd, &[c, x]) if x == param => constant(c)?,
        (Opcode::ISub, &[x, c]) if x == param => constant(c)?.checked_neg()?,
        _ => return None,
    };
    Some((step, (b, k)))
}

/// Is every use of `v` an argument at `slot` of a jump back to `header`?
fn only_feeds_slot(func: &Function, uses: &Uses, body: &LoopBody, v: Value, header: Block, slot: usize) -> bool {
    uses.of_value(v).iter().all(|&(b, site)| {
        if site.is_some() {
            return false;
        }
        let in_body = body.get(b.index()).copied().unwrap_or(false);
        !func.block(b).term.as_ref().is_some_and(|t| match t {
            Terminator::Branch { cond, .. } if *cond == v => true,
            Terminator::Return(values) => values.contains(&v),
            t => t.successors().iter().any(|call| {
                call.args.iter().enumerate().any(|(k, &a)| a == v && !(call.block == header && k == slot && in_body))
            }),
        })
    })
}

fn apply(func: &mut Function, change: Change) {
    let header_params = func.block(change.header).params.clone();
    let (counter, kept) = (header_params[change.counter], header_params[change.kept]);
    let entry_call = func
        .block(change.preheader)
        .term
        .as_ref()
        .and_then(|t| t.successors().into_iter().find(|c| c.block == change.header).cloned())
        .expect("the entry edge");
    let (counter0, kept0) = (entry_call.args[change.counter], entry_call.args[change.kept]);
    // In the preheader: `offset` with the counter `t = r - offset` (same steps: `r0 - t0`) or
    // `t = offset - r` (opposite steps: `r0 + t0`), and each test's invariant `c` turned into
    // the `r` with `t == c`: `c + offset` or `offset - c`.
    let mut new_insts = vec![];
    let mut emit = |func: &mut Function, op: Opcode, args: Vec<Value>| {
        let result = func.new_value(Type::I64);
        new_insts.push(InstData { op, args: args.into(), imm: Imm::None, results: smallvec::smallvec![result] });
        result
    };
    let offset = match change.opposite {
        false => emit(func, Opcode::ISub, vec![kept0, counter0]),
        true => emit(func, Opcode::IAdd, vec![kept0, counter0]),
    };
    for &(b, k, invariant_at) in &change.tests {
        let invariant = func.block(b).insts[k].args[invariant_at];
        let shifted = match change.opposite {
            false => emit(func, Opcode::IAdd, vec![invariant, offset]),
            true => emit(func, Opcode::ISub, vec![offset, invariant]),
        };
        let test = &mut func.block_mut(b).insts[k];
        test.args[invariant_at] = shifted;
        test.args[1 - invariant_at] = kept;
    }
    func.block_mut(change.preheader).insts.extend(new_insts);
    // After the loop: the counter from `r`, computed where it is used.
    for &b in &change.after {
        let value = func.new_value(Type::I64);
        let block = func.block_mut(b);
        for inst in &mut block.insts {
            inst.args.iter_mut().filter(|a| **a == counter).for_each(|a| *a = value);
        }
        if let Some(term) = &mut block.term {
            term.map_uses(|v| if v == counter { value } else { v });
        }
        let args = if change.opposite { vec![offset, kept] } else { vec![kept, offset] };
        block.insts.insert(
            0,
            InstData { op: Opcode::ISub, args: args.into(), imm: Imm::None, results: smallvec::smallvec![value] },
        );
    }
}
