//! Loop rotation of the lowered Cranelift function: a loop tested at its top (header: compare,
//! branch into the body or out; latch: `jump header`) gets the header's test copied into each
//! latch, so the loop runs as body, test, branch back — one branch per iteration instead of a
//! branch and a jump, and the loop's blocks laid out as one run. The header stays as the guard
//! the loop is entered through.
//!
//! ```text
//! h(i):  c = icmp slt i, n          h(i):  c = icmp slt i, n
//!        brif c, body, exit                brif c, body(i), exit(i)
//! body:  ... i ...            =>    body(i1): ... i1 ...
//!        jump h(i + 1)                     c2 = icmp slt i1 + 1, n
//!                                          brif c2, body(i1 + 1), exit(i1 + 1)
//! exit:  ... i ...                  exit(i2): ... i2 ...
//! ```
//!
//! Values the header defines and other blocks use reach them as new parameters of the body and
//! the exit (each must have the header as its only predecessor, and every such use must be in a
//! block one of them dominates). Only headers of a few instructions that cannot fail or touch
//! memory are copied, so results, errors and their sites are those of the unrotated code.
//! Measured on GradBench kmeans' primal (inner loop of eight iterations per centroid): see
//! docs/jit.md.

use cranelift_codegen::cursor::{Cursor, FuncCursor};
use cranelift_codegen::dominator_tree::DominatorTree;
use cranelift_codegen::flowgraph::ControlFlowGraph;
use cranelift_codegen::ir::{Block, BlockArg, Function, Inst, InstBuilder, InstructionData, Opcode, Value};
use cranelift_codegen::loop_analysis::{Loop, LoopAnalysis};
use rustc_hash::FxHashMap as HashMap;

/// Headers with more instructions than this (besides the branch) are not copied.
const MAX_HEADER_INSTS: usize = 6;

/// Nor loops carrying more values than this around their back edge.
const MAX_HEADER_PARAMS: usize = 8;

/// Rotate every loop of `func` whose header qualifies, innermost loops first; returns how many.
pub(super) fn rotate_loops(func: &mut Function) -> usize {
    if !has_back_edge(func) {
        return 0;
    }
    func.dfg.resolve_all_aliases();
    let mut cfg = ControlFlowGraph::with_function(func);
    let domtree = DominatorTree::with_function(func, &cfg);
    let mut loops = LoopAnalysis::new();
    loops.compute(func, &cfg, &domtree);
    let mut order: Vec<Loop> = loops.loops().collect();
    order.sort_by_key(|&lp| std::cmp::Reverse(loops.loop_level(loops.loop_header(lp)).level()));
    // The uses of what the headers define: only those values are ever renamed.
    let mut uses: HashMap<Value, Vec<Inst>> = HashMap::default();
    for &lp in &order {
        let header = loops.loop_header(lp);
        uses.extend(func.dfg.block_params(header).iter().map(|&p| (p, vec![])));
        for inst in func.layout.block_insts(header) {
            uses.extend(func.dfg.inst_results(inst).iter().map(|&r| (r, vec![])));
        }
    }
    for block in func.layout.blocks() {
        for inst in func.layout.block_insts(block) {
            for v in func.dfg.inst_values(inst) {
                if let Some(list) = uses.get_mut(&v) {
                    list.push(inst);
                }
            }
        }
    }
    let mut rotation = Rotation { func, cfg: &mut cfg, domtree: &domtree, loops: &loops, uses };
    order.into_iter().filter(|&lp| rotation.rotate(lp)).count()
}

/// Does some branch go to a block laid out at or before its own? (Every loop has such an edge:
/// the lowering lays blocks out in the IR's order, where a loop's header comes first.) A
/// function without one skips the analyses.
fn has_back_edge(func: &Function) -> bool {
    let mut position = cranelift_codegen::entity::SecondaryMap::<Block, u32>::new();
    for (k, block) in func.layout.blocks().enumerate() {
        position[block] = k as u32 + 1;
    }
    func.layout.blocks().any(|block| {
        let Some(term) = func.layout.last_inst(block) else { return false };
        let dests = func.dfg.insts[term].branch_destination(&func.dfg.jump_tables, &func.dfg.exception_tables);
        dests.iter().any(|call| position[call.block(&func.dfg.value_lists)] <= position[block])
    })
}

struct Rotation<'a> {
    func: &'a mut Function,
    cfg: &'a mut ControlFlowGraph,
    domtree: &'a DominatorTree,
    loops: &'a LoopAnalysis,
    /// The instructions using each value a loop header defines (some may since have left the
    /// layout, and one may be listed twice).
    uses: HashMap<Value, Vec<Inst>>,
}

/// Instructions a header may have to be copied: pure, cannot trap, cheap.
fn copyable(op: Opcode) -> bool {
    use Opcode::*;
    matches!(op, Icmp | Fcmp | Iconst | F64const | Iadd | Isub | Band | Bor | Bxor | Bnot | Uextend | Sextend | Ireduce)
}

impl Rotation<'_> {
    /// Rotate loop `lp` if it qualifies (true when it did).
    fn rotate(&mut self, lp: Loop) -> bool {
        let header = self.loops.loop_header(lp);
        let Some(term) = self.func.layout.last_inst(header) else { return false };
        let InstructionData::Brif { blocks, .. } = self.func.dfg.insts[term] else { return false };
        let pool = &self.func.dfg.value_lists;
        let (first, second) = (blocks[0].block(pool), blocks[1].block(pool));
        let in_loop = |b: Block| self.loops.is_in_loop(b, lp);
        let (body, exit) = match (in_loop(first), in_loop(second)) {
            (true, false) => (first, second),
            (false, true) => (second, first),
            _ => return false,
        };
        if body == header || first == second {
            return false;
        }
        // A loop carrying vectors (forward mode's tangent lanes) keeps its shape: it is short of
        // registers already, and the back edge's moves would only move into a block of their own.
        let params = self.func.dfg.block_params(header);
        if params.len() > MAX_HEADER_PARAMS || params.iter().any(|&p| self.func.dfg.value_type(p).is_vector()) {
            return false;
        }
        let copied: Vec<Inst> = self.func.layout.block_insts(header).filter(|&i| i != term).collect();
        if copied.len() > MAX_HEADER_INSTS || !copied.iter().all(|&i| copyable(self.func.dfg.insts[i].opcode())) {
            return false;
        }
        let only_from_header = |b: Block| self.cfg.pred_iter(b).all(|p| p.block == header);
        if !only_from_header(body) {
            return false;
        }
        // An exit other blocks also reach (the two copies of a versioned loop share theirs) gets
        // an edge block of its own below: then nothing after the loop can use what the header
        // defines except through the exit's arguments.
        let split_exit = !only_from_header(exit);
        // Back edges: `jump header(args)` from blocks in the loop, with plain value arguments.
        let mut latches = vec![];
        for p in self.cfg.pred_iter(header).filter(|p| in_loop(p.block)) {
            let InstructionData::Jump { destination, .. } = self.func.dfg.insts[p.inst] else { return false };
            if destination.args(&self.func.dfg.value_lists).any(|a| a.as_value().is_none()) {
                return false;
            }
            latches.push((p.block, p.inst));
        }
        if latches.is_empty() {
            return false;
        }
        // What the header defines, and where else it is used: only under the body or the exit.
        let mut defined: Vec<Value> = self.func.dfg.block_params(header).to_vec();
        for &i in &copied {
            defined.extend_from_slice(self.func.dfg.inst_results(i));
        }
        let mut renames: Vec<(Value, Inst, bool)> = vec![];
        for &v in &defined {
            for &inst in self.uses.get(&v).into_iter().flatten() {
                let Some(b) = self.func.layout.inst_block(inst) else { continue };
                if b == header {
                    continue;
                }
                let under_body = self.domtree.block_dominates(body, b);
                if !under_body && (split_exit || !self.domtree.block_dominates(exit, b)) {
                    return false;
                }
                renames.push((v, inst, under_body));
            }
        }
        let exit = if split_exit { self.split_edge(term, exit) } else { exit };
        // The body and the exit receive those values as parameters.
        let mut params: HashMap<(Value, bool), Value> = HashMap::default();
        for (v, inst, under_body) in renames {
            let p = match params.get(&(v, under_body)) {
                Some(&p) => p,
                None => {
                    let target = if under_body { body } else { exit };
                    let ty = self.func.dfg.value_type(v);
                    let p = self.func.dfg.append_block_param(target, ty);
                    self.append_branch_arg(term, target, v);
                    params.insert((v, under_body), p);
                    p
                }
            };
            self.func.dfg.map_inst_values(inst, |x| if x == v { p } else { x });
        }
        // Each latch: the header's instructions on the jump's arguments, then its branch.
        for (latch, jump) in latches {
            let InstructionData::Jump { destination, .. } = self.func.dfg.insts[jump] else { continue };
            let args: Vec<Value> = destination.args(&self.func.dfg.value_lists).filter_map(|a| a.as_value()).collect();
            let mut map: HashMap<Value, Value> = self.func.dfg.block_params(header).iter().copied().zip(args).collect();
            for inst in copied.iter().copied().chain([term]) {
                let copy = self.func.dfg.clone_inst(inst);
                self.func.dfg.map_inst_values(copy, |x| map.get(&x).copied().unwrap_or(x));
                self.func.layout.insert_inst(copy, jump);
                let results = self.func.dfg.inst_results(inst).iter().copied();
                map.extend(results.zip(self.func.dfg.inst_results(copy).iter().copied()));
                self.record_uses(copy);
            }
            self.func.layout.remove_inst(jump);
            self.cfg.recompute_block(self.func, latch);
        }
        true
    }

    /// A new block between `term` (a `brif`) and its successor `exit`, taking the arguments the
    /// branch passed and passing them on; `term` branches to it instead. Returns it.
    fn split_edge(&mut self, term: Inst, exit: Block) -> Block {
        let split = self.func.dfg.make_block();
        self.func.layout.insert_block(split, exit);
        let mut data = self.func.dfg.insts[term];
        let mut forwarded = vec![];
        if let InstructionData::Brif { blocks, .. } = &mut data {
            for call in blocks.iter_mut() {
                if call.block(&self.func.dfg.value_lists) != exit {
                    continue;
                }
                let args: Vec<Value> = call.args(&self.func.dfg.value_lists).filter_map(|a| a.as_value()).collect();
                for v in args {
                    let ty = self.func.dfg.value_type(v);
                    forwarded.push(BlockArg::Value(self.func.dfg.append_block_param(split, ty)));
                }
                call.set_block(split, &mut self.func.dfg.value_lists);
            }
        }
        self.func.dfg.insts[term] = data;
        let jump = FuncCursor::new(self.func).at_bottom(split).ins().jump(exit, &forwarded);
        self.record_uses(jump);
        let header = self.func.layout.inst_block(term).expect("the branch is in the layout");
        self.cfg.recompute_block(self.func, header);
        self.cfg.recompute_block(self.func, split);
        split
    }

    /// Append `v` to the arguments `term` (a `brif`) passes to `target`.
    fn append_branch_arg(&mut self, term: Inst, target: Block, v: Value) {
        let mut data = self.func.dfg.insts[term];
        if let InstructionData::Brif { blocks, .. } = &mut data {
            for call in blocks.iter_mut() {
                if call.block(&self.func.dfg.value_lists) == target {
                    call.append_argument(BlockArg::Value(v), &mut self.func.dfg.value_lists);
                }
            }
        }
        self.func.dfg.insts[term] = data;
        self.record_uses(term);
    }

    /// Note `inst` among the uses of the header values it reads.
    fn record_uses(&mut self, inst: Inst) {
        for v in self.func.dfg.inst_values(inst) {
            if let Some(list) = self.uses.get_mut(&v) {
                list.push(inst);
            }
        }
    }
}
