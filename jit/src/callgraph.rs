//! Facts about a module's call graph: which call sites need a call-depth check, and which
//! functions touch the call's tape.
//!
//! Call-depth checks:
//! Every internal function receives its frame depth (entry = 1) and passes `depth + 1` to its
//! callees. A call from `g` can only exceed `MAX_CALL_DEPTH` if some chain of calls reaching `g`
//! is at least `MAX_CALL_DEPTH` frames long — always the case when `g` is in, or is reachable
//! from, a recursive cycle, and never for the shallow acyclic call graphs of ordinary programs.
//! Only calls in such functions get the compare-and-branch.

use jitdiff_ir::{Callee, Module, Opcode};

/// For every function: can a call made from it exceed `max_depth` frames?
pub(crate) fn needs_depth_check(module: &Module, max_depth: usize) -> Vec<bool> {
    let n = module.functions.len();
    let edges = call_edges(module);
    // Longest chain of frames ending at each function, saturated at `max_depth`: relaxation
    // converges after at most `max_depth` rounds because every round that changes something
    // raises some depth by at least one.
    let mut depth_to = vec![1usize; n];
    loop {
        let mut changed = false;
        for &(caller, callee) in &edges {
            let through = (depth_to[caller] + 1).min(max_depth);
            if through > depth_to[callee] {
                depth_to[callee] = through;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    // A call from `g` at depth d makes frame d + 1, which fails when d + 1 > max_depth.
    depth_to.into_iter().map(|d| d >= max_depth).collect()
}

/// Every `(caller, callee)` pair of a direct call between module functions.
fn call_edges(module: &Module) -> Vec<(usize, usize)> {
    let n = module.functions.len();
    let mut edges: Vec<(usize, usize)> = vec![];
    for (caller, f) in module.functions.iter().enumerate() {
        for block in &f.blocks {
            for inst in &block.insts {
                if let (Opcode::Call, jitdiff_ir::Imm::Callee(Callee::Func(callee))) = (inst.op, inst.imm)
                    && callee.index() < n
                {
                    edges.push((caller, callee.index()));
                }
            }
        }
    }
    edges
}

/// For every function: can its native code, or that of a function it calls, read or write the
/// call's tape state (tape operations, local arrays)? A call of a function that cannot is made
/// without lending it a tape, which saves a small call most of its overhead.
pub(crate) fn needs_tape(module: &Module) -> Vec<bool> {
    let mut needs: Vec<bool> = module
        .functions
        .iter()
        // The lowering's own tests of what makes a function load the state.
        .map(|f| crate::lower::uses_tape(f) || f.allocates())
        .collect();
    let edges = call_edges(module);
    // A caller needs the tape when a callee does; each round that changes something sets a
    // flag, so this ends after at most one round per function.
    loop {
        let mut changed = false;
        for &(caller, callee) in &edges {
            if needs[callee] && !needs[caller] {
                needs[caller] = true;
                changed = true;
            }
        }
        if !changed {
            return needs;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jitdiff_ir::{BlockData, Function, Imm, InstData, Terminator};

    fn calling(name: &str, callees: &[u32]) -> Function {
        let mut f = Function::new(name, vec![]);
        let insts = callees
            .iter()
            .map(|&c| InstData {
                op: Opcode::Call,
                args: smallvec::smallvec![],
                imm: Imm::Callee(Callee::Func(jitdiff_ir::FuncId::from_index(c as usize))),
                results: smallvec::smallvec![],
            })
            .collect();
        f.blocks.push(BlockData {
            name: "entry".into(),
            params: vec![],
            insts,
            term: Some(Terminator::Return(vec![])),
        });
        f
    }

    #[test]
    fn only_recursion_and_long_chains_are_checked() {
        let mut m = Module::new();
        m.functions.push(calling("leaf", &[]));
        m.functions.push(calling("caller", &[0]));
        m.functions.push(calling("selfrec", &[2, 0]));
        m.functions.push(calling("calls_rec", &[2]));
        // leaf is reachable from the recursive function, so it may run deep (it calls nothing,
        // so its flag costs nothing).
        assert_eq!(needs_depth_check(&m, 256), vec![true, false, true, false]);
        let mut chain = Module::new();
        for i in 0..5u32 {
            let callees: Vec<u32> = if i < 4 { vec![i + 1] } else { vec![] };
            chain.functions.push(calling(&format!("f{i}"), &callees));
        }
        // depths 1..=5; with a limit of 3, calls from depth >= 3 need a check.
        assert_eq!(needs_depth_check(&chain, 3), vec![false, false, true, true, true]);
    }

    #[test]
    fn the_tape_is_needed_by_its_users_and_their_callers_only() {
        let mut m = Module::new();
        m.functions.push(calling("leaf", &[]));
        m.functions.push(calling("caller", &[0]));
        m.functions.push(calling("pusher", &[]));
        m.functions.push(calling("calls_pusher", &[1, 2]));
        let x = m.functions[2].add_param(jitdiff_ir::Type::F64, Some("x"));
        m.functions[2].blocks[0].insts.push(InstData {
            op: Opcode::TPush,
            args: smallvec::smallvec![x],
            imm: Imm::None,
            results: smallvec::smallvec![],
        });
        assert_eq!(needs_tape(&m), vec![false, false, true, true]);
    }
}
