//! Sinking: computing a value where it is used rather than where it was written.

use crate::analysis::{ControlFlow, immediate_post_dominators, tree_intervals};
use crate::function::{Block, Function, InstData, Value};
use crate::opcode::Opcode;
use crate::types::Type;
use rustc_hash::FxHashMap as HashMap;

/// Move a pure instruction whose uses all lie in one other block down into that block, when the
/// move takes it into no loop it was not already in.
///
/// Source often computes a value early and uses it late: `for (b, &target) in
/// y.iter().enumerate()` reads `y[b]` at the top of the iteration and uses it after two inner
/// loops. Defined early, the value is live across those loops (a register lost to them, or a
/// spill), and reverse mode, which recomputes a cheap value only from operands of the block
/// that needs it, records it instead. Sunk, it is computed beside its use.
///
/// What moves: instructions without effects and with one result (arithmetic, comparisons,
/// `select`, `len`, library math) and loads of read-only slices and tables (nothing writes them
/// while the function runs); not constants (hoisted on purpose), stores, calls, tape operations.
/// An instruction moves from block `D` to block `U` when every use is in `U` (operands or the
/// terminator's arguments), `U` is not `D`, and every loop around `U` is also around `D` — so
/// it runs at most as often as before, and less often where `U` is not always reached. Within
/// a block, each moves to just before its first use (past calls of library functions, which
/// keep no float register).
///
/// An instruction that can fail (a load out of bounds, `idiv` by zero) moves only within its
/// loops and when `U` post-dominates `D`, so it still runs whenever it ran — but later: if something in
/// between fails too, that error comes first. The pass is therefore not part of
/// [`optimize`](super::optimize) (which keeps errors and their order); the differentiation
/// transforms run it on their source, whose run-time errors are reported by replaying the
/// function as written.
///
/// ```
/// use jitdiff_ir::{parse_module, passes, print_module};
/// let src = "func @f(y: slice, n: i64) -> f64 {
/// entry:
///     zero = iconst 0
///     one = iconst 1
///     acc0 = fconst 0.0
///     t = load y, zero
///     jump head(zero, acc0)
/// head(i: i64, acc: f64):
///     more = icmp lt i, n
///     br more, body, done
/// body:
///     acc2 = fadd acc, acc
///     i2 = iadd i, one
///     jump head(i2, acc2)
/// done:
///     r = fsub acc, t
///     ret r
/// }
/// ";
/// let mut m = parse_module(src).unwrap();
/// passes::sink(&mut m.functions[0]);
/// let text = print_module(&m);
/// assert!(text.find("load y").unwrap() > text.find("done:").unwrap());
/// ```
pub fn sink(func: &mut Function) -> bool {
    if func.blocks.is_empty() {
        return false;
    }
    let cfg = ControlFlow::new(func);
    let loops = cfg.natural_loops();
    let n = func.blocks.len();
    // Per block, the loops around it.
    let mut around = cfg.loops_containing(&loops);
    around.resize(n, vec![]);
    let mut post_dominators: Option<PostDominatorTree> = None;
    // Per value, the blocks that use it, once per use.
    let mut uses: HashMap<Value, Vec<Block>> = HashMap::default();
    for (b, block) in func.blocks.iter().enumerate() {
        let here = Block(b as u32);
        for inst in &block.insts {
            for &a in &inst.args {
                uses.entry(a).or_default().push(here);
            }
        }
        for a in block.term.as_ref().map(|t| t.uses()).unwrap_or_default() {
            uses.entry(a).or_default().push(here);
        }
    }
    let mut sunk: HashMap<Block, Vec<InstData>> = HashMap::default();
    let mut moved = false;
    // Later blocks first, and within a block the last instruction first: a use moves before
    // its operand is considered, so chains move together and keep their order.
    for &d in cfg.reverse_post_order().iter().rev() {
        let insts = std::mem::take(&mut func.blocks[d.index()].insts);
        let mut kept = Vec::with_capacity(insts.len());
        for inst in insts.into_iter().rev() {
            let target = sinkable(func, &inst)
                .then(|| single_user(&uses, inst.results[0]))
                .flatten()
                .filter(|&u| u != d && cfg.is_reachable(u))
                .filter(|&u| around[u.index()].iter().all(|&k| loops[k].body[d.index()]))
                .filter(|&u| {
                    // Out of a loop, it would run only for the last iteration: an error of an
                    // earlier one would be lost.
                    !inst.op.can_fail()
                        || around[u.index()].len() == around[d.index()].len() && {
                            let tree = post_dominators.get_or_insert_with(|| PostDominatorTree::new(func));
                            tree.strictly_post_dominates(u, d)
                        }
                });
            match target {
                Some(u) => {
                    for &a in &inst.args {
                        if let Some(site) = uses.get_mut(&a).and_then(|list| list.iter_mut().find(|b| **b == d)) {
                            *site = u;
                        }
                    }
                    sunk.entry(u).or_default().push(inst);
                    moved = true;
                }
                None => kept.push(inst),
            }
        }
        kept.reverse();
        func.blocks[d.index()].insts = kept;
    }
    for (u, mut list) in sunk {
        // Pushed last-first: reversed, operands precede their uses; all of them precede the
        // block's own instructions, which are the uses.
        list.reverse();
        let block = &mut func.blocks[u.index()];
        list.append(&mut block.insts);
        block.insts = list;
    }
    for b in 0..n {
        moved |= schedule_late(func, b);
    }
    if moved {
        func.canonicalize();
    }
    moved
}

/// Within block `b`, move each instruction [`sinkable`] that a call or a library function
/// separates from its first use in the block to just before that use (or to the end, when only
/// the terminator uses it). A value loaded before a call of a
/// library function (`tanh`, `exp`: calls in native code, after which no float register
/// survives) and used after it would otherwise be kept on the stack across the call.
fn schedule_late(func: &mut Function, b: usize) -> bool {
    let block = &func.blocks[b];
    let count = block.insts.len();
    // Per instruction, its users in the block (`count`: the terminator), in order.
    let mut users: Vec<Vec<usize>> = vec![vec![]; count];
    let mut defined_at: HashMap<Value, usize> = HashMap::default();
    for (j, inst) in block.insts.iter().enumerate() {
        for a in &inst.args {
            if let Some(&i) = defined_at.get(a) {
                users[i].push(j);
            }
        }
        for &r in &inst.results {
            defined_at.insert(r, j);
        }
    }
    for a in block.term.as_ref().map(|t| t.uses()).unwrap_or_default() {
        if let Some(&i) = defined_at.get(&a) {
            users[i].push(count);
        }
    }
    // Last first, so that every user is placed before its operands are. An instruction with one
    // user goes just before it; with several, before the whole group of the earliest "root" (an
    // instruction that stays, or the terminator) any of them is placed in front of.
    let mut root = (0..=count).collect::<Vec<usize>>();
    let mut before: Vec<Vec<usize>> = vec![vec![]; count + 1];
    let mut first: Vec<Vec<usize>> = vec![vec![]; count + 1];
    let mut attached = vec![false; count];
    // Calls before each position: an instruction moves only past a call (elsewhere the order
    // is the source's, which later clean-ups of derived code rely on).
    let mut calls_before = Vec::with_capacity(count + 2);
    calls_before.push(0usize);
    for inst in &block.insts {
        let call = inst.op == Opcode::Call || inst.op.calls_library();
        calls_before.push(calls_before.last().copied().unwrap_or(0) + usize::from(call));
    }
    calls_before.push(calls_before.last().copied().unwrap_or(0));
    for i in (0..count).rev() {
        let list = &users[i];
        if list.is_empty() || !sinkable(func, &block.insts[i]) {
            continue;
        }
        let earliest = list.iter().map(|&u| root[u]).min().unwrap_or(count);
        if calls_before[earliest] == calls_before[i + 1] {
            continue;
        }
        attached[i] = true;
        if list.iter().all(|&u| u == list[0]) {
            before[list[0]].push(i);
            root[i] = root[list[0]];
        } else {
            let r = list.iter().map(|&u| root[u]).min().unwrap_or(count);
            first[r].push(i);
            root[i] = r;
        }
    }
    // Siblings placed before the same user do not use each other: library calls go first, so
    // that the others are not live across them. Lists were filled last-first.
    for list in &mut before {
        list.reverse();
        list.sort_by_key(|&i| !block.insts[i].op.calls_library());
    }
    for (list, extra) in before.iter_mut().zip(&mut first) {
        if !extra.is_empty() {
            extra.reverse();
            extra.append(list);
            std::mem::swap(list, extra);
        }
    }
    let mut order = Vec::with_capacity(count);
    // Depth-first with an explicit stack: a chain of uses can be as long as the block.
    let mut stack: Vec<(usize, usize)> = vec![];
    for start in (0..=count).filter(|&j| j == count || !attached[j]) {
        stack.push((start, 0));
        while let Some((j, next)) = stack.last_mut() {
            if let Some(&i) = before[*j].get(*next) {
                *next += 1;
                stack.push((i, 0));
            } else {
                if *j < count {
                    order.push(*j);
                }
                stack.pop();
            }
        }
    }
    if order.iter().enumerate().all(|(k, &i)| k == i) {
        return false;
    }
    let mut slots: Vec<Option<InstData>> = std::mem::take(&mut func.blocks[b].insts).into_iter().map(Some).collect();
    func.blocks[b].insts = order.into_iter().filter_map(|i| slots[i].take()).collect();
    true
}

/// The one block all uses of `v` lie in, if there is one.
fn single_user(uses: &HashMap<Value, Vec<Block>>, v: Value) -> Option<Block> {
    let list = uses.get(&v)?;
    let first = *list.first()?;
    list.iter().all(|&b| b == first).then_some(first)
}

/// Pure with one result, not a constant; a load only from a read-only slice or a table.
fn sinkable(func: &Function, inst: &InstData) -> bool {
    use Opcode::{BConst, FConst, IConst, Load, Table};
    inst.results.len() == 1
        && !inst.op.has_side_effects()
        && !matches!(inst.op, FConst | IConst | BConst | Table)
        && match inst.op {
            Load => inst.args.first().is_some_and(|&s| func.ty(s) == Type::Slice),
            op => !op.can_fail() || op == Opcode::IDiv || op == Opcode::IRem,
        }
}

/// The post-dominator tree with each block's interval of a depth-first numbering, so that
/// "does `u` lie on every path from `d` to a return" is two comparisons (walking up the tree
/// instead made sinking quadratic in a long chain of blocks).
struct PostDominatorTree {
    /// `(first, last)` clock of each block's subtree; `(0, 0)` for a block outside the tree.
    interval: Vec<(u32, u32)>,
}

impl PostDominatorTree {
    fn new(func: &Function) -> PostDominatorTree {
        let ipdom = immediate_post_dominators(func);
        let n = ipdom.len();
        let mut children: Vec<Vec<Block>> = vec![vec![]; n];
        let mut roots = vec![];
        for (b, parent) in ipdom.iter().enumerate() {
            match parent {
                Some(p) if p.index() < n => children[p.index()].push(Block(b as u32)),
                _ => roots.push(Block(b as u32)),
            }
        }
        PostDominatorTree { interval: tree_intervals(&children, roots) }
    }

    /// Does `u` lie on every path from `d` to a return, `u` ≠ `d`?
    fn strictly_post_dominates(&self, u: Block, d: Block) -> bool {
        let (Some(&(u_first, u_last)), Some(&(d_first, d_last))) =
            (self.interval.get(u.index()), self.interval.get(d.index()))
        else {
            return false;
        };
        u_first != 0 && d_first != 0 && u_first < d_first && d_last < u_last
    }
}

#[cfg(test)]
mod tests {
    use super::PostDominatorTree;
    use crate::analysis::immediate_post_dominators;
    use crate::function::{Block, Function};
    use crate::parse_module;

    /// The definition: `u` is met walking up the immediate post-dominators from `d`.
    fn by_walking(func: &Function, u: Block, d: Block) -> bool {
        let ipdom = immediate_post_dominators(func);
        let mut at = ipdom[d.index()];
        for _ in 0..ipdom.len() {
            match at {
                Some(b) if b == u => return true,
                Some(b) => at = ipdom[b.index()],
                None => return false,
            }
        }
        false
    }

    #[test]
    fn intervals_answer_as_walking_the_tree_does() {
        let sources = [
            // A diamond, a loop, and two returns.
            "func @f(x: f64, n: i64) -> f64 {\nentry:\n    zero = fconst 0.0\n    c = fcmp gt x, zero\n    br c, l, r\nl:\n    a = fneg x\n    jump join(a)\nr:\n    jump join(x)\njoin(v: f64):\n    i0 = iconst 0\n    one = iconst 1\n    jump head(i0, v)\nhead(i: i64, s: f64):\n    more = icmp lt i, n\n    br more, body, out\nbody:\n    s2 = fmul s, s\n    i2 = iadd i, one\n    big = fcmp gt s2, x\n    br big, early, head(i2, s2)\nearly:\n    ret s2\nout:\n    ret s\n}\n",
            // A loop no return follows.
            "func @f(x: f64) -> f64 {\nentry:\n    zero = fconst 0.0\n    c = fcmp gt x, zero\n    br c, spin, done\nspin:\n    jump spin\ndone:\n    ret x\n}\n",
        ];
        let chain = crate::text::parse_module(&{
            let mut text = String::from("func @f(x: f64) -> f64 {\nentry:\n    zero = fconst 0.0\n    jump b0\n");
            for k in 0..40 {
                text += &format!(
                    "b{k}:\n    c{k} = fcmp gt x, zero\n    br c{k}, l{k}, b{}\nl{k}:\n    jump b{}\n",
                    k + 1,
                    k + 1
                );
            }
            text += "b40:\n    ret x\n}\n";
            text
        })
        .unwrap();
        let mut functions: Vec<Function> =
            sources.iter().map(|s| parse_module(s).unwrap().functions[0].clone()).collect();
        functions.push(chain.functions[0].clone());
        for func in &functions {
            let tree = PostDominatorTree::new(func);
            for u in func.block_ids() {
                for d in func.block_ids() {
                    assert_eq!(
                        tree.strictly_post_dominates(u, d),
                        by_walking(func, u, d),
                        "{} over {}",
                        u.index(),
                        d.index()
                    );
                }
            }
        }
    }
}
