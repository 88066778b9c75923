//! Dead-code elimination.

use crate::analysis::ControlFlow;
use crate::function::{Block, Callee, FuncId, Function, Imm, InstData, Terminator, Value};
use crate::opcode::Opcode;

/// Remove unreachable blocks, pure instructions whose results are never needed, and block
/// parameters that are never needed (with the jump arguments feeding them).
///
/// Liveness starts from what has an effect — stores, calls, instructions that can fail (a load
/// may be out of bounds, `idiv` may divide by zero: removing them would remove an error),
/// branch conditions and returned values — and flows backwards through instruction operands and
/// from block parameters to the jump arguments bound to them. So a value that only feeds itself
/// around a loop is dead, which no single "unused?" sweep would find.
///
/// ```
/// use jitdiff_ir::{parse_module, passes, print_module};
/// let mut m = parse_module("func @f(x: f64) -> f64 {\nentry:\n    y = exp x\n    ret x\n}\n").unwrap();
/// passes::dce(&mut m.functions[0]);
/// assert!(!print_module(&m).contains("exp"));
/// ```
pub fn dce(func: &mut Function) {
    dce_with(func, &is_kept);
}

/// [`dce`] that also removes calls of the functions `removable` accepts when their results are
/// not needed. For callers that know such a call has no effect and cannot fail here: in a
/// checkpointed segment's recomputation, a call of a pure function that already ran with the same
/// arguments when the segment first ran.
///
/// ```
/// use jitdiff_ir::{parse_module, passes, print_module};
/// let src = "func @g(x: f64) -> f64 {\nentry:\n    y = exp x\n    ret y\n}\n\
///            func @f(x: f64) -> f64 {\nentry:\n    y = call @g(x)\n    ret x\n}\n";
/// let mut m = parse_module(src).unwrap();
/// passes::dce(&mut m.functions[1]);
/// assert!(print_module(&m).contains("call @g"));
/// passes::dce_with_removable_calls(&mut m.functions[1], &|_| true);
/// assert!(!print_module(&m).contains("call @g"));
/// ```
pub fn dce_with_removable_calls(func: &mut Function, removable: &dyn Fn(FuncId) -> bool) {
    dce_with(func, &|inst: &InstData| match (inst.op, inst.imm) {
        (Opcode::Call, Imm::Callee(Callee::Func(callee))) if removable(callee) => false,
        _ => is_kept(inst),
    });
}

fn dce_with(func: &mut Function, kept: &dyn Fn(&InstData) -> bool) {
    if func.blocks.is_empty() {
        return;
    }
    remove_unreachable_blocks(func);
    let live = live_values(func, kept);
    let is_live = |v: &Value| live.get(v.index()).copied().unwrap_or(true);
    for block in &mut func.blocks {
        block.insts.retain(|inst| kept(inst) || inst.results.iter().any(is_live));
    }
    // Drop dead block parameters together with the jump arguments bound to them.
    super::drop_block_params(func, |p| is_live(&p));
    func.canonicalize();
}

/// Instructions kept regardless of whether their results are used.
fn is_kept(inst: &InstData) -> bool {
    inst.op.has_side_effects() || inst.op.can_fail()
}

/// Where a value is defined.
#[derive(Clone, Copy)]
enum Def {
    Nowhere,
    BlockParam { block: usize, index: usize },
    Inst { block: usize, inst: usize },
}

/// Which values are needed (by index; values defined nowhere count as live).
fn live_values(func: &Function, kept: &dyn Fn(&InstData) -> bool) -> Vec<bool> {
    let n = func.values.len();
    let mut defs = vec![Def::Nowhere; n];
    for (b, block) in func.blocks.iter().enumerate() {
        for (k, p) in block.params.iter().enumerate() {
            if let Some(d) = defs.get_mut(p.index()) {
                *d = Def::BlockParam { block: b, index: k };
            }
        }
        for (i, inst) in block.insts.iter().enumerate() {
            for r in &inst.results {
                if let Some(d) = defs.get_mut(r.index()) {
                    *d = Def::Inst { block: b, inst: i };
                }
            }
        }
    }
    // incoming[b][k]: every value some jump binds to parameter k of block b.
    let mut incoming: Vec<Vec<Vec<Value>>> = func.blocks.iter().map(|b| vec![vec![]; b.params.len()]).collect();
    let mut work: Vec<Value> = vec![];
    for block in &func.blocks {
        for inst in &block.insts {
            if kept(inst) {
                work.extend(&inst.args);
            }
        }
        match &block.term {
            Some(Terminator::Return(values)) => work.extend(values),
            Some(Terminator::Branch { cond, .. }) => work.push(*cond),
            _ => {}
        }
        for call in block.term.iter().flat_map(Terminator::successors) {
            if let Some(params) = incoming.get_mut(call.block.index()) {
                for (slot, &arg) in params.iter_mut().zip(&call.args) {
                    slot.push(arg);
                }
            }
        }
    }
    let mut live = vec![false; n];
    while let Some(v) = work.pop() {
        let Some(flag) = live.get_mut(v.index()) else { continue };
        if *flag {
            continue;
        }
        *flag = true;
        match defs[v.index()] {
            Def::Nowhere => {}
            Def::BlockParam { block, index } => work.extend(&incoming[block][index]),
            Def::Inst { block, inst } => work.extend(&func.blocks[block].insts[inst].args),
        }
    }
    for (flag, def) in live.iter_mut().zip(&defs) {
        if matches!(def, Def::Nowhere) {
            *flag = true;
        }
    }
    live
}

/// Delete blocks the entry cannot reach and renumber jump targets (instructions and the order of
/// the remaining blocks stay as they are; values are not renumbered).
///
/// ```
/// use jitdiff_ir::{parse_module, passes, print_module};
/// let mut m = parse_module("func @f() {\nentry:\n    ret\nlost:\n    ret\n}\n").unwrap();
/// passes::remove_unreachable_blocks(&mut m.functions[0]);
/// assert!(!print_module(&m).contains("lost"));
/// ```
pub fn remove_unreachable_blocks(func: &mut Function) {
    let cfg = ControlFlow::new(func);
    let n = func.blocks.len();
    if (0..n).all(|b| cfg.is_reachable(Block(b as u32))) {
        return;
    }
    let mut new_index = vec![None; n];
    let mut next = 0u32;
    for (b, slot) in new_index.iter_mut().enumerate() {
        if cfg.is_reachable(Block(b as u32)) {
            *slot = Some(Block(next));
            next += 1;
        }
    }
    func.forget_name_indexes();
    let mut b = 0;
    func.blocks.retain(|_| {
        b += 1;
        new_index[b - 1].is_some()
    });
    for block in &mut func.blocks {
        if let Some(term) = &mut block.term {
            for call in term.successors_mut() {
                // Reachable blocks only jump to reachable blocks (or to missing ones, which the
                // verifier reports and which keep their out-of-range index).
                if let Some(Some(to)) = new_index.get(call.block.index()) {
                    call.block = *to;
                }
            }
        }
    }
}
