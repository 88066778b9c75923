//! Loop-invariant code motion.

use crate::analysis::ControlFlow;
use crate::function::{Block, Function, InstData};
use rustc_hash::FxHashMap as HashMap;

/// Move pure, non-failing instructions whose operands are all defined outside a loop to the
/// end of the loop header's immediate dominator, so they run once per entry into the loop
/// instead of once per iteration. An instruction invariant in several nested loops leaves the
/// outermost of them.
///
/// Loops are the natural loops of back edges (an edge to a block that dominates its source).
/// Only instructions that cannot fail and have no effect move (arithmetic, comparisons,
/// `select`, `len`, library math; not loads, stores, divisions, calls or tape operations), so
/// executing one where the loop is not entered changes nothing but time. The header's immediate
/// dominator lies outside the loop and every operand defined outside the loop dominates it, so
/// the function stays in SSA form. Cranelift has its own loop-invariant code motion, but it
/// loses track of the loop once it has visited a block outside it (a bounds-check failure
/// block, a loop exit), which in practice is before most of a loop body.
///
/// ```
/// use jitdiff_ir::{parse_module, passes, print_module};
/// let src = "func @f(n: i64, c: f64) -> f64 {
/// entry:
///     zero = iconst 0
///     one = iconst 1
///     acc0 = fconst 0.0
///     jump head(zero, acc0)
/// head(i: i64, acc: f64):
///     more = icmp lt i, n
///     br more, body, exit
/// body:
///     e = exp c
///     acc2 = fadd acc, e
///     i2 = iadd i, one
///     jump head(i2, acc2)
/// exit:
///     ret acc
/// }
/// ";
/// let mut m = parse_module(src).unwrap();
/// passes::licm(&mut m.functions[0]);
/// let text = print_module(&m);
/// assert!(text.find("exp c").unwrap() < text.find("head(").unwrap());
/// ```
pub fn licm(func: &mut Function) {
    if func.blocks.is_empty() {
        return;
    }
    let cfg = ControlFlow::new(func);
    let loops = cfg.natural_loops();
    if loops.is_empty() {
        return;
    }
    // Per block: the loops containing it, outermost (largest) first.
    let mut containing = cfg.loops_containing(&loops);
    containing.resize(func.blocks.len(), vec![]);
    for list in &mut containing {
        list.sort_by_key(|&k| std::cmp::Reverse(loops[k].size));
    }
    // The block defining each value (function parameters: the entry block).
    let mut def_block: Vec<Block> = vec![Block::ENTRY; func.values.len()];
    for (b, block) in func.blocks.iter().enumerate() {
        for &p in &block.params {
            def_block[p.index()] = Block(b as u32);
        }
        for inst in &block.insts {
            for &r in &inst.results {
                def_block[r.index()] = Block(b as u32);
            }
        }
    }
    let mut hoisted: HashMap<Block, Vec<InstData>> = HashMap::default();
    let mut moved = false;
    // Reverse post-order: an operand's definition (moved or not) is settled before its uses.
    for &b in cfg.reverse_post_order() {
        if containing[b.index()].is_empty() {
            continue;
        }
        let insts = std::mem::take(&mut func.blocks[b.index()].insts);
        let mut kept = Vec::with_capacity(insts.len());
        for inst in insts {
            let target = movable(&inst)
                .then(|| {
                    containing[b.index()].iter().find(|&&k| {
                        inst.args.iter().all(|a| def_block.get(a.index()).is_some_and(|d| !loops[k].body[d.index()]))
                    })
                })
                .flatten()
                .and_then(|&k| cfg.immediate_dominator(loops[k].header));
            match target {
                Some(t) => {
                    for &r in &inst.results {
                        def_block[r.index()] = t;
                    }
                    hoisted.entry(t).or_default().push(inst);
                    moved = true;
                }
                None => kept.push(inst),
            }
        }
        func.blocks[b.index()].insts = kept;
    }
    if !moved {
        return;
    }
    // Appended in the order they were moved: a moved operand precedes its moved uses.
    for &b in cfg.reverse_post_order() {
        if let Some(list) = hoisted.remove(&b) {
            func.blocks[b.index()].insts.extend(list);
        }
    }
    func.canonicalize();
}

/// Pure, cannot fail, one result, and not a constant (constants are hoisted to the entry block
/// already; see [`hoist_constants`](super::hoist_constants)).
fn movable(inst: &InstData) -> bool {
    use crate::opcode::Opcode::{BConst, FConst, IConst, Table};
    inst.results.len() == 1
        && !inst.op.has_side_effects()
        && !inst.op.can_fail()
        && !matches!(inst.op, FConst | IConst | BConst | Table)
}
