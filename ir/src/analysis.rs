//! Control-flow analysis: successors, predecessors, reverse post-order and dominators.
//!
//! Shared by the verifier (SSA dominance), the passes (CSE, unreachable-block removal) and the
//! differentiation transforms (which walk blocks in reverse post-order).

use crate::function::{Block, Function};

mod postdom;
pub use postdom::immediate_post_dominators;

/// The control-flow graph of a function, with its reverse post-order and dominator tree.
///
/// ```
/// use jitdiff_ir::{analysis::ControlFlow, Block, Function, Terminator, Type};
/// let mut f = Function::new("f", vec![]);
/// let entry = f.add_block("entry");
/// f.block_mut(entry).term = Some(Terminator::Return(vec![]));
/// let cfg = ControlFlow::new(&f);
/// assert!(cfg.dominates(Block::ENTRY, Block::ENTRY));
/// assert_eq!(cfg.reverse_post_order(), &[Block::ENTRY]);
/// ```
#[derive(Clone, Debug)]
pub struct ControlFlow {
    /// Successors and distinct predecessors of every block, flat: those of block `b` are
    /// `successors[succ_start[b]..succ_start[b + 1]]` (one allocation each, not one per block).
    successors: Vec<Block>,
    succ_start: Vec<u32>,
    predecessors: Vec<Block>,
    pred_start: Vec<u32>,
    rpo: Vec<Block>,
    /// Position of each block in `rpo`, `usize::MAX` when unreachable.
    rpo_index: Vec<usize>,
    /// Immediate dominator of each reachable block (the entry is its own).
    idom: Vec<Option<Block>>,
    /// Entry and exit times of each reachable block in a depth-first walk of the dominator
    /// tree: `a` dominates `b` exactly when `b`'s interval nests in `a`'s, an O(1) test (a
    /// walk up the tree would be O(depth), quadratic over a long chain of blocks).
    dom_interval: Vec<(u32, u32)>,
}

/// Does some block jump to itself or to a block before it? Every cycle has such an edge (block
/// indices cannot increase all the way round), so without one `f` has no loop and a pass can
/// skip its loop analyses.
///
/// ```
/// use jitdiff_ir::{analysis::has_back_edge, parse_module};
/// let m = parse_module("func @f(x: f64) -> f64 {\nentry:\n    ret x\n}").unwrap();
/// assert!(!has_back_edge(&m.functions[0]));
/// ```
pub fn has_back_edge(f: &Function) -> bool {
    f.blocks
        .iter()
        .enumerate()
        .any(|(b, data)| data.term.as_ref().is_some_and(|t| t.successors().iter().any(|c| c.block.index() <= b)))
}

impl ControlFlow {
    /// Analyse `func`. Jumps to blocks that do not exist are ignored (the verifier reports them).
    pub fn new(func: &Function) -> ControlFlow {
        let n = func.blocks.len();
        let mut successors = Vec::with_capacity(2 * n);
        let mut succ_start = Vec::with_capacity(n + 1);
        let mut pred_count = vec![0u32; n + 1];
        for b in &func.blocks {
            succ_start.push(successors.len() as u32);
            if let Some(t) = &b.term {
                for call in t.successors() {
                    if call.block.index() < n {
                        // A branch to one block twice counts it once as a predecessor.
                        if !successors[*succ_start.last().unwrap_or(&0) as usize..].contains(&call.block) {
                            pred_count[call.block.index()] += 1;
                        }
                        successors.push(call.block);
                    }
                }
            }
        }
        succ_start.push(successors.len() as u32);
        // Predecessors by counting sort: block order, so each list is ascending.
        let mut pred_start = vec![0u32; n + 1];
        for b in 0..n {
            pred_start[b + 1] = pred_start[b] + pred_count[b];
        }
        let mut fill = pred_start.clone();
        let mut predecessors = vec![Block::ENTRY; pred_start[n] as usize];
        for from in 0..n {
            let outs = &successors[succ_start[from] as usize..succ_start[from + 1] as usize];
            for (k, &to) in outs.iter().enumerate() {
                if !outs[..k].contains(&to) {
                    predecessors[fill[to.index()] as usize] = Block(from as u32);
                    fill[to.index()] += 1;
                }
            }
        }
        let successors_of = |b: usize| &successors[succ_start[b] as usize..succ_start[b + 1] as usize];
        // Iterative depth-first search for the post-order (no recursion: functions can be large).
        let mut rpo = Vec::with_capacity(n);
        if n > 0 {
            let mut visited = vec![false; n];
            let mut stack: Vec<(Block, usize)> = vec![(Block::ENTRY, 0)];
            visited[0] = true;
            while let Some((b, next)) = stack.pop() {
                if let Some(&s) = successors_of(b.index()).get(next) {
                    stack.push((b, next + 1));
                    if !visited[s.index()] {
                        visited[s.index()] = true;
                        stack.push((s, 0));
                    }
                } else {
                    rpo.push(b);
                }
            }
            rpo.reverse();
        }
        let mut rpo_index = vec![usize::MAX; n];
        for (i, b) in rpo.iter().enumerate() {
            rpo_index[b.index()] = i;
        }
        let predecessors_of = |b: usize| &predecessors[pred_start[b] as usize..pred_start[b + 1] as usize];
        let idom = compute_idoms(&rpo, &rpo_index, &predecessors_of);
        let dom_interval = dominator_intervals(&rpo, &idom);
        ControlFlow { successors, succ_start, predecessors, pred_start, rpo, rpo_index, idom, dom_interval }
    }

    /// Successor blocks of `b` (a branch to the same block twice lists it twice).
    pub fn successors(&self, b: Block) -> &[Block] {
        let i = b.index();
        &self.successors[self.succ_start[i] as usize..self.succ_start[i + 1] as usize]
    }
    /// Distinct predecessor blocks of `b`, in block order.
    pub fn predecessors(&self, b: Block) -> &[Block] {
        let i = b.index();
        &self.predecessors[self.pred_start[i] as usize..self.pred_start[i + 1] as usize]
    }
    /// Reachable blocks in reverse post-order (entry first; a block before its successors
    /// except along back edges).
    pub fn reverse_post_order(&self) -> &[Block] {
        &self.rpo
    }
    /// Is `b` reachable from the entry?
    pub fn is_reachable(&self, b: Block) -> bool {
        self.rpo_index.get(b.index()).is_some_and(|&i| i != usize::MAX)
    }
    /// The immediate dominator of `b` (`None` for the entry and for unreachable blocks).
    pub fn immediate_dominator(&self, b: Block) -> Option<Block> {
        if b == Block::ENTRY { None } else { self.idom.get(b.index()).copied().flatten() }
    }
    /// Does `a` dominate `b`? Every block dominates itself; unreachable blocks are dominated by
    /// every block (vacuously), so uses inside dead code are not reported as dominance errors.
    pub fn dominates(&self, a: Block, b: Block) -> bool {
        if !self.is_reachable(b) {
            return true;
        }
        if !self.is_reachable(a) {
            return false;
        }
        let (a_in, a_out) = self.dom_interval[a.index()];
        let (b_in, b_out) = self.dom_interval[b.index()];
        a_in <= b_in && b_out <= a_out
    }
    /// Is the edge `from -> to` a back edge (its target dominates its source)?
    pub fn is_back_edge(&self, from: Block, to: Block) -> bool {
        self.is_reachable(from) && self.dominates(to, from)
    }
}

/// The blocks of a natural loop, asked like a `Vec<bool>` by block index (`body[b.index()]`)
/// but holding only the loop's own blocks, sorted: `O(log size)` per question, and memory for
/// the loop's blocks only.
///
/// ```
/// use jitdiff_ir::{analysis::ControlFlow, parse_module};
/// let m = parse_module("func @f(n: i64) -> i64 {\nentry:\n    jump head(n)\nhead(i: i64):\n    \
///     z = iconst 0\n    more = icmp gt i, z\n    br more, body, done\nbody:\n    \
///     one = iconst 1\n    j = isub i, one\n    jump head(j)\ndone:\n    ret i\n}\n").unwrap();
/// let loops = ControlFlow::new(&m.functions[0]).natural_loops();
/// let body = &loops[0].body;
/// assert!(!body[0] && body[1] && body[2] && !body[3] && !body[99]);
/// assert_eq!(body.get(2), Some(&true));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoopBody {
    blocks: Vec<Block>,
}

impl LoopBody {
    /// The body made of `blocks` (in any order).
    pub fn from_blocks(mut blocks: Vec<Block>) -> LoopBody {
        blocks.sort_unstable();
        blocks.dedup();
        LoopBody { blocks }
    }
    /// Does block `b` belong to the loop?
    pub fn contains(&self, b: Block) -> bool {
        self.blocks.binary_search(&b).is_ok()
    }
    /// `Some(&membership)` of the block with this index (any index: `Some(&false)` outside).
    pub fn get(&self, index: usize) -> Option<&bool> {
        Some(&self[index])
    }
    /// The loop's blocks, in block order.
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }
}

impl std::ops::Index<usize> for LoopBody {
    type Output = bool;
    fn index(&self, index: usize) -> &bool {
        let inside = u32::try_from(index).is_ok_and(|i| self.contains(Block(i)));
        if inside { &true } else { &false }
    }
}

/// A natural loop: a header and the blocks that reach one of its back edges without passing it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NaturalLoop {
    /// The loop's header: the target of its back edges; it dominates every block of the loop.
    pub header: Block,
    /// `body[b]` says whether block `b` belongs to the loop (the header does).
    pub body: LoopBody,
    /// How many blocks belong to the loop.
    pub size: usize,
    /// The blocks of the loop in block order, so that a pass can visit them without scanning
    /// the whole function per loop (quadratic in a function of many loops).
    pub blocks: Vec<Block>,
}

impl ControlFlow {
    /// The natural loops, one per header (back edges to the same header share a loop), in
    /// reverse post-order of their headers, so an enclosing loop comes before the loops inside
    /// it. Blocks of an irreducible cycle (one with no dominating header) belong to no loop.
    ///
    /// ```
    /// use jitdiff_ir::{analysis::ControlFlow, parse_module, Block};
    /// let m = parse_module("func @f(c: bool) {\nentry:\n    jump head\nhead:\n    br c, head, exit\nexit:\n    ret\n}\n").unwrap();
    /// let cfg = ControlFlow::new(&m.functions[0]);
    /// let loops = cfg.natural_loops();
    /// assert_eq!((loops.len(), loops[0].header.index(), loops[0].size), (1, 1, 1));
    /// assert_eq!(cfg.loop_depths(&loops), vec![0, 1, 0]);
    /// ```
    pub fn natural_loops(&self) -> Vec<NaturalLoop> {
        let mut loops = vec![];
        let mut member = vec![false; self.rpo_index.len()];
        for &header in &self.rpo {
            let latches: Vec<Block> =
                self.predecessors(header).iter().copied().filter(|&p| self.is_back_edge(p, header)).collect();
            if latches.is_empty() {
                continue;
            }
            // One membership vector for every loop, cleared after each: a vector per loop made
            // a function of many loops cost loops times blocks in time and memory.
            member[header.index()] = true;
            let mut blocks = vec![header];
            let mut work = latches;
            while let Some(b) = work.pop() {
                if !member[b.index()] {
                    member[b.index()] = true;
                    blocks.push(b);
                    work.extend(self.predecessors(b).iter().copied().filter(|&p| self.is_reachable(p)));
                }
            }
            for b in &blocks {
                member[b.index()] = false;
            }
            blocks.sort_unstable();
            let body = LoopBody { blocks: blocks.clone() };
            loops.push(NaturalLoop { header, body, size: blocks.len(), blocks });
        }
        loops
    }

    /// For every block, how many of `loops` contain it.
    pub fn loop_depths(&self, loops: &[NaturalLoop]) -> Vec<u32> {
        let mut depth = vec![0; self.rpo_index.len()];
        for b in loops.iter().flat_map(|l| &l.blocks) {
            depth[b.index()] += 1;
        }
        depth
    }

    /// For every block, the indices into `loops` of the loops containing it, in increasing
    /// order: the sum of the loops' sizes, not blocks times loops.
    ///
    /// ```
    /// use jitdiff_ir::{analysis::ControlFlow, parse_module};
    /// let m = parse_module("func @f(n: i64) -> i64 {\nentry:\n    jump head(n)\nhead(i: i64):\n    \
    ///     z = iconst 0\n    more = icmp gt i, z\n    br more, body, done\nbody:\n    \
    ///     one = iconst 1\n    j = isub i, one\n    jump head(j)\ndone:\n    ret i\n}\n").unwrap();
    /// let cfg = ControlFlow::new(&m.functions[0]);
    /// let loops = cfg.natural_loops();
    /// assert_eq!(cfg.loops_containing(&loops), vec![vec![], vec![0], vec![0], vec![]]);
    /// ```
    pub fn loops_containing(&self, loops: &[NaturalLoop]) -> Vec<Vec<usize>> {
        let mut containing = vec![vec![]; self.rpo_index.len()];
        for (k, l) in loops.iter().enumerate() {
            for b in &l.blocks {
                containing[b.index()].push(k);
            }
        }
        containing
    }
}

/// Depth-first entry and exit times in the dominator tree (`(0, 0)` for unreachable blocks,
/// which are never asked about).
fn dominator_intervals(rpo: &[Block], idom: &[Option<Block>]) -> Vec<(u32, u32)> {
    let mut children: Vec<Vec<Block>> = vec![vec![]; idom.len()];
    for &b in rpo.iter().skip(1) {
        if let Some(parent) = idom[b.index()] {
            children[parent.index()].push(b);
        }
    }
    tree_intervals(&children, rpo.first().copied())
}

/// Depth-first entry and exit times of each node of the forest given by `children`, visiting
/// the trees of `roots` in order: `a` is an ancestor of `b` (or `b` itself) exactly when
/// `a.0 <= b.0 && b.1 <= a.1`. Times start at 1, so `(0, 0)` marks a node no root reaches.
/// Iterative, so deep trees (long chains of blocks) cannot overflow the stack.
pub(crate) fn tree_intervals(children: &[Vec<Block>], roots: impl IntoIterator<Item = Block>) -> Vec<(u32, u32)> {
    let mut interval = vec![(0u32, 0u32); children.len()];
    let mut clock = 0u32;
    for root in roots {
        clock += 1;
        interval[root.index()].0 = clock;
        let mut stack: Vec<(Block, usize)> = vec![(root, 0)];
        while let Some((b, next)) = stack.pop() {
            if let Some(&child) = children[b.index()].get(next) {
                stack.push((b, next + 1));
                clock += 1;
                interval[child.index()].0 = clock;
                stack.push((child, 0));
            } else {
                clock += 1;
                interval[b.index()].1 = clock;
            }
        }
    }
    interval
}

/// Cooper, Harvey and Kennedy's "A Simple, Fast Dominance Algorithm".
fn compute_idoms<'p>(
    rpo: &[Block],
    rpo_index: &[usize],
    predecessors: &impl Fn(usize) -> &'p [Block],
) -> Vec<Option<Block>> {
    let n = rpo_index.len();
    let mut idom: Vec<Option<Block>> = vec![None; n];
    let Some(&entry) = rpo.first() else { return idom };
    idom[entry.index()] = Some(entry);
    let intersect = |idom: &Vec<Option<Block>>, mut a: Block, mut b: Block| -> Block {
        while a != b {
            while rpo_index[a.index()] > rpo_index[b.index()] {
                a = idom[a.index()].expect("processed block has an idom");
            }
            while rpo_index[b.index()] > rpo_index[a.index()] {
                b = idom[b.index()].expect("processed block has an idom");
            }
        }
        a
    };
    let mut changed = true;
    while changed {
        changed = false;
        for &b in rpo.iter().skip(1) {
            let mut new_idom: Option<Block> = None;
            for &p in predecessors(b.index()) {
                if rpo_index[p.index()] == usize::MAX || idom[p.index()].is_none() {
                    continue;
                }
                new_idom = Some(match new_idom {
                    None => p,
                    Some(cur) => intersect(&idom, p, cur),
                });
            }
            if new_idom.is_some() && idom[b.index()] != new_idom {
                idom[b.index()] = new_idom;
                changed = true;
            }
        }
    }
    idom
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::function::{BlockCall, Terminator};
    use crate::types::Type;

    fn jump(b: u32) -> Terminator {
        Terminator::Jump(BlockCall { block: Block(b), args: smallvec::smallvec![] })
    }

    /// entry -> head; head -> body | exit; body -> head (a loop); plus an unreachable block.
    fn loop_function() -> Function {
        let mut f = Function::new("f", vec![]);
        for name in ["entry", "head", "body", "exit", "dead"] {
            f.add_block(name);
        }
        let c = f.add_block_param(Block(1), Type::Bool, None);
        f.block_mut(Block(0)).term = Some(jump(1));
        f.block_mut(Block(1)).term = Some(Terminator::Branch {
            cond: c,
            then_dest: BlockCall { block: Block(2), args: smallvec::smallvec![] },
            else_dest: BlockCall { block: Block(3), args: smallvec::smallvec![] },
        });
        f.block_mut(Block(2)).term = Some(jump(1));
        f.block_mut(Block(3)).term = Some(Terminator::Return(vec![]));
        f.block_mut(Block(4)).term = Some(jump(3));
        f
    }

    #[test]
    fn loop_dominators_and_back_edges() {
        let cfg = ControlFlow::new(&loop_function());
        assert_eq!(cfg.reverse_post_order()[0], Block(0));
        assert_eq!(cfg.reverse_post_order().len(), 4);
        assert_eq!(cfg.immediate_dominator(Block(2)), Some(Block(1)));
        assert_eq!(cfg.immediate_dominator(Block(3)), Some(Block(1)));
        assert!(cfg.dominates(Block(1), Block(2)));
        assert!(!cfg.dominates(Block(2), Block(3)));
        assert!(cfg.is_back_edge(Block(2), Block(1)));
        assert!(!cfg.is_back_edge(Block(1), Block(2)));
        assert!(!cfg.is_reachable(Block(4)));
        assert_eq!(cfg.predecessors(Block(3)), &[Block(1), Block(4)]);
    }
}
