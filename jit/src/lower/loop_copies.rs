//! Copies at the edges of a loop that makes no call, for values the code around it keeps across
//! calls.
//!
//! x86-64 keeps no `f64` in a register across a call, so a value used after a loop in code that
//! calls (`exp` per element after a running maximum) lives in a stack slot there; so does any
//! value once the callee-saved registers are taken. Cranelift's register allocator joins a value
//! with the block parameters it flows through, a loop's exits included, into one live range, and
//! when that range must be on the stack at the calls, the part inside the loop often goes there
//! too: every iteration stores the running value (or the slice's base address, which the loop
//! does not even change) to its slot and loads it back at the back edge, a store-to-load round
//! trip on the loop's critical path. In GradBench lse's `value_and_grad` the maximum loop took
//! about as long as its `exp` loop.
//!
//! A copy (`bitcast` to the other 64-bit type and back: two register moves, which Cranelift's
//! optimiser keeps) splits the range: after the loop, of each `f64` it leaves behind for such
//! code; before the loop, of each value it uses that such code keeps. The loop then holds its
//! own values in registers and only the copies outside it are spilled, once. Only loops that run
//! once per call and hold no other loop get copies: inside another loop they cost their moves on
//! every entry, and copying a large nest's inputs crowded its registers (GMM's gradient ran
//! 2-5% slower). Measured: docs/jit.md.

use cranelift_codegen::cursor::{Cursor, FuncCursor};
use cranelift_codegen::dominator_tree::DominatorTree;
use cranelift_codegen::entity::EntityRef;
use cranelift_codegen::flowgraph::ControlFlowGraph;
use cranelift_codegen::ir::{Block, Function, Inst, InstBuilder, MemFlagsData, Opcode, Value, ValueDef, types};
use cranelift_codegen::loop_analysis::{Loop, LoopAnalysis};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// An instruction using a value, and its block.
type Use = (Inst, Block);

/// Every use of every value, grouped by value (counted, then filled: no map, no allocation per
/// value).
struct Uses {
    start: Vec<u32>,
    all: Vec<Use>,
}

impl Uses {
    fn new(func: &Function) -> Self {
        let count = func.dfg.num_values();
        let mut start = vec![0u32; count + 1];
        for block in func.layout.blocks() {
            for inst in func.layout.block_insts(block) {
                for v in func.dfg.inst_values(inst) {
                    start[v.index() + 1] += 1;
                }
            }
        }
        for k in 0..count {
            start[k + 1] += start[k];
        }
        let mut next = start.clone();
        let mut all = vec![(Inst::from_u32(0), Block::from_u32(0)); start[count] as usize];
        for block in func.layout.blocks() {
            for inst in func.layout.block_insts(block) {
                for v in func.dfg.inst_values(inst) {
                    all[next[v.index()] as usize] = (inst, block);
                    next[v.index()] += 1;
                }
            }
        }
        Uses { start, all }
    }

    fn of(&self, v: Value) -> &[Use] {
        let k = v.index();
        &self.all[self.start[k] as usize..self.start[k + 1] as usize]
    }
}

/// Where a copy goes: at the top of a block (after a loop) or before its terminator (ahead of
/// a loop).
enum At {
    Top(Block),
    End(Block),
}

/// Copy the values that call-free loops share with code that keeps them across calls (see
/// the module comment); returns how many copies were made.
pub(super) fn copy_loop_values(func: &mut Function) -> usize {
    let calling: HashSet<Block> =
        func.layout.blocks().filter(|&b| func.layout.block_insts(b).any(|i| is_call(func, i))).collect();
    if calling.is_empty() {
        return 0;
    }
    func.dfg.resolve_all_aliases();
    let cfg = ControlFlowGraph::with_function(func);
    let domtree = DominatorTree::with_function(func, &cfg);
    let mut loops = LoopAnalysis::new();
    loops.compute(func, &cfg, &domtree);
    if loops.loops().next().is_none() {
        return 0;
    }
    let mut calling_loops: HashSet<Loop> = HashSet::default();
    for &b in &calling {
        let mut m = loops.innermost_loop(b);
        while let Some(lp) = m {
            calling_loops.insert(lp);
            m = loops.loop_parent(lp);
        }
    }
    let outer_loops: HashSet<Loop> = loops.loops().filter_map(|lp| loops.loop_parent(lp)).collect();
    // Only loops that run once per call and hold no other loop: a loop in a loop pays for its
    // copies on every entry, and copying a big nest's inputs crowds its registers (GMM's
    // gradient ran 2-5% slower with either).
    let chosen: Vec<Loop> = loops
        .loops()
        .filter(|&lp| !calling_loops.contains(&lp) && loops.loop_parent(lp).is_none() && !outer_loops.contains(&lp))
        .collect();
    if chosen.is_empty() {
        return 0;
    }
    // Removing parameters leaves the control flow, and so the analyses above, as they are.
    let in_chosen: HashSet<Block> =
        func.layout.blocks().filter(|&b| chosen.iter().any(|&lp| loops.is_in_loop(b, lp))).collect();
    remove_constant_params(func, &in_chosen);
    let uses = Uses::new(func);
    let plan = Planner {
        func,
        domtree: &domtree,
        loops: &loops,
        calling: &calling,
        calling_loops: &calling_loops,
        uses: &uses,
    };
    let mut plans = vec![];
    for &lp in &chosen {
        plans.extend(plan.exits(&cfg, lp));
        plans.extend(plan.entries(lp));
    }
    // Two loops may plan one value at one place (the two versions of a versioned loop share
    // their exit and what comes before them): one copy serves both.
    let mut merged: Vec<(Value, At, Vec<Inst>)> = vec![];
    let mut index: HashMap<(Value, Block), usize> = HashMap::default();
    for (v, at, insts) in plans {
        let block = match at {
            At::Top(b) | At::End(b) => b,
        };
        match index.get(&(v, block)) {
            Some(&k) => merged[k].2.extend(insts),
            None => {
                index.insert((v, block), merged.len());
                merged.push((v, at, insts));
            }
        }
    }
    let plans = merged;
    for (v, at, insts) in &plans {
        let mut pos = FuncCursor::new(func);
        match *at {
            At::Top(block) => match pos.layout().first_inst(block) {
                Some(first) => pos.goto_inst(first),
                None => continue,
            },
            At::End(block) => match pos.layout().last_inst(block) {
                Some(last) => pos.goto_inst(last),
                None => continue,
            },
        }
        let ty = pos.func.dfg.value_type(*v);
        let other = if ty == types::F64 { types::I64 } else { types::F64 };
        let bits = pos.ins().bitcast(other, MemFlagsData::new(), *v);
        let copy = pos.ins().bitcast(ty, MemFlagsData::new(), bits);
        for &inst in insts {
            func.dfg.map_inst_values(inst, |x| if x == *v { copy } else { x });
        }
    }
    plans.len()
}

/// Remove each parameter of these `blocks` that can hold one value only — the one value every branch to its
/// block passes but the parameter itself (a loop's tape base, in the copy of a versioned loop
/// that cannot grow the tape) — and use that value in its place; then the value shows as the
/// loop's input that it is. (Cranelift's own pass, run later, keeps such a parameter when the
/// value is itself a block parameter.)
fn remove_constant_params(func: &mut Function, blocks: &HashSet<Block>) {
    let mut incoming: HashMap<Value, Value> = HashMap::default();
    let mut conflicting: HashSet<Value> = HashSet::default();
    let entry = func.layout.entry_block();
    for block in func.layout.blocks() {
        // Branches end blocks.
        if let Some(inst) = func.layout.last_inst(block) {
            let dfg = &func.dfg;
            for call in dfg.insts[inst].branch_destination(&dfg.jump_tables, &dfg.exception_tables) {
                let target = call.block(&dfg.value_lists);
                if !blocks.contains(&target) {
                    continue;
                }
                let params = dfg.block_params(target);
                for (k, arg) in call.args(&dfg.value_lists).enumerate() {
                    let Some(&param) = params.get(k) else { continue };
                    match arg.as_value() {
                        Some(arg) if arg == param => {}
                        Some(arg) if Some(target) != entry => {
                            if *incoming.entry(param).or_insert(arg) != arg {
                                conflicting.insert(param);
                            }
                        }
                        _ => {
                            conflicting.insert(param);
                        }
                    }
                }
            }
        }
    }
    let mut replace: HashMap<Value, Value> =
        incoming.into_iter().filter(|(param, _)| !conflicting.contains(param)).collect();
    // Chains (a parameter whose one value is another such parameter) resolve to their end; a
    // cycle of them, which holds no value from outside, is left alone.
    let params: Vec<Value> = replace.keys().copied().collect();
    for param in params {
        let mut end = replace[&param];
        let mut steps = 0;
        while let Some(&next) = replace.get(&end) {
            end = next;
            steps += 1;
            if steps > replace.len() {
                break;
            }
        }
        if steps > replace.len() {
            replace.remove(&param);
        } else {
            replace.insert(param, end);
        }
    }
    if replace.is_empty() {
        return;
    }
    // Drop the parameters' arguments from every branch, then the parameters.
    let all_blocks: Vec<Block> = func.layout.blocks().collect();
    for &block in &all_blocks {
        if let Some(inst) = func.layout.last_inst(block) {
            let dfg = &mut func.dfg;
            let targets: Vec<Block> = dfg.insts[inst]
                .branch_destination(&dfg.jump_tables, &dfg.exception_tables)
                .iter()
                .map(|call| call.block(&dfg.value_lists))
                .collect();
            for (d, target) in targets.into_iter().enumerate() {
                let drop: Vec<usize> = (dfg.block_params(target).iter().enumerate())
                    .filter(|(_, p)| replace.contains_key(p))
                    .map(|(k, _)| k)
                    .collect();
                let dests = dfg.insts[inst].branch_destination_mut(&mut dfg.jump_tables, &mut dfg.exception_tables);
                for &k in drop.iter().rev() {
                    dests[d].remove(k, &mut dfg.value_lists);
                }
            }
        }
    }
    for &block in blocks {
        let params: Vec<Value> = func.dfg.block_params(block).to_vec();
        for param in params.into_iter().rev() {
            if let Some(&value) = replace.get(&param) {
                func.dfg.remove_block_param(param);
                func.dfg.change_to_alias(param, value);
            }
        }
    }
    func.dfg.resolve_all_aliases();
}

fn is_call(func: &Function, inst: Inst) -> bool {
    matches!(func.dfg.insts[inst].opcode(), Opcode::Call | Opcode::CallIndirect)
}

struct Planner<'a> {
    func: &'a Function,
    domtree: &'a DominatorTree,
    loops: &'a LoopAnalysis,
    calling: &'a HashSet<Block>,
    calling_loops: &'a HashSet<Loop>,
    uses: &'a Uses,
}

impl Planner<'_> {
    /// Copies after `lp` of the `f64` values it defines or passes to its exits, for their uses
    /// after it.
    fn exits(&self, cfg: &ControlFlowGraph, lp: Loop) -> Vec<(Value, At, Vec<Inst>)> {
        let (func, loops) = (self.func, self.loops);
        let mut defined: Vec<Value> = vec![];
        for block in func.layout.blocks() {
            if loops.innermost_loop(block) == Some(lp) {
                defined.extend(func.dfg.block_params(block).iter().copied());
                for inst in func.layout.block_insts(block) {
                    defined.extend(func.dfg.inst_results(inst).iter().copied());
                }
            } else if !loops.is_in_loop(block, lp) && cfg.pred_iter(block).any(|pred| loops.is_in_loop(pred.block, lp))
            {
                // An exit's parameters: what the loop passes out.
                defined.extend(func.dfg.block_params(block).iter().copied());
            }
        }
        let mut plans = vec![];
        for v in defined {
            if func.dfg.value_type(v) != types::F64 {
                continue;
            }
            let list = self.uses.of(v);
            let outside: Vec<Use> = list.iter().copied().filter(|&(_, b)| !loops.is_in_loop(b, lp)).collect();
            let Some(mut at) = outside.iter().map(|&(_, b)| b).reduce(|a, b| common_dominator(self.domtree, a, b))
            else {
                continue;
            };
            // Out of loops the value's own loop is not in, so that the copy runs once per exit.
            while let Some(m) = loops.innermost_loop(at) {
                if loops.is_in_loop(loops.loop_header(lp), m) {
                    break;
                }
                match self.domtree.idom(at) {
                    Some(up) => at = up,
                    None => break,
                }
            }
            // Leaving loops may have climbed above the value's definition: a parameter of an
            // exit block that is itself in another loop (the loop after this one, entered from
            // both copies of a versioned loop) has no place to be copied.
            let defined_at = match func.dfg.value_def(v) {
                ValueDef::Result(def, _) => func.layout.inst_block(def),
                ValueDef::Param(b, _) => Some(b),
                _ => None,
            };
            if !defined_at.is_some_and(|d| self.domtree.block_dominates(d, at)) {
                continue;
            }
            if loops.is_in_loop(at, lp) || !self.kept_across_call(at, &outside) {
                continue;
            }
            plans.push((v, At::Top(at), outside.iter().map(|&(i, _)| i).collect()));
        }
        plans
    }

    /// Copies ahead of `lp` of the values defined before it that it uses, for its uses.
    fn entries(&self, lp: Loop) -> Vec<(Value, At, Vec<Inst>)> {
        let (func, loops) = (self.func, self.loops);
        let header = loops.loop_header(lp);
        let Some(before) = self.domtree.idom(header) else { return vec![] };
        if loops.innermost_loop(before).is_some() {
            // Reached from inside another loop (its header exits straight into this one):
            // a copy there would run on every iteration of that loop.
            return vec![];
        }
        let mut seen: HashSet<Value> = HashSet::default();
        let mut plans = vec![];
        for block in func.layout.blocks().filter(|&b| loops.is_in_loop(b, lp)) {
            for inst in func.layout.block_insts(block) {
                for v in func.dfg.inst_values(inst) {
                    // Only 64-bit values: the copy is a bitcast to the other 64-bit type.
                    if !seen.insert(v) || !matches!(func.dfg.value_type(v), types::F64 | types::I64) {
                        continue;
                    }
                    let def_block = match func.dfg.value_def(v) {
                        ValueDef::Result(def, _) => {
                            if matches!(func.dfg.insts[def].opcode(), Opcode::Iconst | Opcode::F64const) {
                                continue;
                            }
                            func.layout.inst_block(def)
                        }
                        ValueDef::Param(b, _) => Some(b),
                        _ => None,
                    };
                    let Some(def_block) = def_block else { continue };
                    if loops.is_in_loop(def_block, lp) {
                        continue;
                    }
                    let list = self.uses.of(v);
                    let (inside, outside): (Vec<Use>, Vec<Use>) =
                        list.iter().copied().partition(|&(_, b)| loops.is_in_loop(b, lp));
                    // A loop at the top level runs once per call: its copies cost nothing, and
                    // a value used in it is often kept for later calls in ways this does not
                    // see (Cranelift's optimiser merges an address with its slice's base).
                    if loops.loop_parent(lp).is_some() && !self.kept_across_call(def_block, &outside) {
                        continue;
                    }
                    plans.push((v, At::End(before), inside.iter().map(|&(i, _)| i).collect()));
                }
            }
        }
        plans
    }

    /// Is a value that `from` holds kept across a call for one of these `uses`: a use in a loop
    /// that calls and that `from` is outside (the value lives through all of it), a call on the
    /// use's dominator path back to `from`, or the same for a block parameter it is passed to
    /// (a few blocks deep: the two copies of a versioned loop join before what follows)?
    fn kept_across_call(&self, from: Block, uses: &[Use]) -> bool {
        self.kept_across_call_within(from, uses, 3)
    }

    fn kept_across_call_within(&self, from: Block, uses: &[Use], depth: usize) -> bool {
        let (func, loops) = (self.func, self.loops);
        uses.iter().any(|&(use_inst, use_block)| {
            let mut m = loops.innermost_loop(use_block);
            while let Some(outer) = m {
                if loops.is_in_loop(from, outer) {
                    break;
                }
                if self.calling_loops.contains(&outer) {
                    return true;
                }
                m = loops.loop_parent(outer);
            }
            if depth > 0 && self.passed_on_across_call(use_inst, depth - 1) {
                return true;
            }
            let mut block = use_block;
            loop {
                if self.calling.contains(&block) {
                    let before_use = block != use_block
                        || func.layout.block_insts(block).take_while(|&i| i != use_inst).any(|i| is_call(func, i));
                    if before_use {
                        return true;
                    }
                }
                if block == from {
                    return false;
                }
                match self.domtree.idom(block) {
                    Some(up) => block = up,
                    None => return false,
                }
            }
        })
    }

    /// Does branch `inst` pass a value to a block parameter that is kept across a call? Any
    /// parameter of a target counts, not only the one receiving the value: a loose test that
    /// can only add copies (measured as above with it).
    fn passed_on_across_call(&self, inst: Inst, depth: usize) -> bool {
        let dfg = &self.func.dfg;
        let destinations = dfg.insts[inst].branch_destination(&dfg.jump_tables, &dfg.exception_tables);
        destinations.iter().any(|call| {
            let target = call.block(&dfg.value_lists);
            dfg.block_params(target)
                .iter()
                .any(|&param| self.kept_across_call_within(target, self.uses.of(param), depth))
        })
    }
}

fn common_dominator(domtree: &DominatorTree, a: Block, b: Block) -> Block {
    let mut a = a;
    while !domtree.block_dominates(a, b) {
        match domtree.idom(a) {
            Some(up) => a = up,
            None => return a,
        }
    }
    a
}
