//! Unused function parameters.

use crate::function::{Callee, FuncId, Function, Imm, Module, Value};
use crate::opcode::Opcode;

/// Remove the parameters that the functions `candidates` never use, and the arguments bound to
/// them at every call site in `module`. Repeated until nothing changes, so a parameter that
/// was only passed on to a removed parameter goes too. Returns, per changed function, the
/// original positions of the parameters it keeps.
///
/// For functions only the module calls (reverse mode's callee pullbacks, which receive every
/// read-only slice of the primal call whether they read it or not): every argument of an
/// internal call costs a register or a stack slot on both sides of the call.
///
/// ```
/// use jitdiff_ir::{parse_module, passes, print_module};
/// let src = "func @f(x: f64, s: slice) -> f64 {
/// entry:
///     y = call @g(s, x)
///     ret y
/// }
/// func @g(unused: slice, a: f64) -> f64 {
/// entry:
///     b = fmul a, a
///     ret b
/// }
/// ";
/// let mut m = parse_module(src).unwrap();
/// let g = m.func_id("g").unwrap();
/// let kept = passes::remove_unused_params(&mut m, &[g]);
/// assert_eq!(kept, vec![(g, vec![1])]);
/// assert!(print_module(&m).contains("call @g(x)"));
/// ```
pub fn remove_unused_params(module: &mut Module, candidates: &[FuncId]) -> Vec<(FuncId, Vec<usize>)> {
    let mut kept: Vec<(FuncId, Vec<usize>)> = vec![];
    for _ in 0..=module.functions.len() {
        let mut changed = false;
        for &id in candidates {
            let Some(function) = module.functions.get(id.index()) else { continue };
            let used = used_values(function);
            let keep: Vec<bool> =
                function.params.iter().map(|&p| used.get(p.index()).copied().unwrap_or(true)).collect();
            if keep.iter().all(|&k| k) {
                continue;
            }
            changed = true;
            let function = &mut module.functions[id.index()];
            function.params = function.params.iter().zip(&keep).filter(|(_, k)| **k).map(|(&p, _)| p).collect();
            for caller in &mut module.functions {
                for inst in caller.blocks.iter_mut().flat_map(|b| b.insts.iter_mut()) {
                    if inst.op == Opcode::Call
                        && inst.imm == Imm::Callee(Callee::Func(id))
                        && inst.args.len() == keep.len()
                    {
                        inst.args = inst.args.iter().zip(&keep).filter(|(_, k)| **k).map(|(&a, _)| a).collect();
                    }
                }
            }
            match kept.iter_mut().find(|(f, _)| *f == id) {
                Some((_, positions)) => {
                    *positions = positions.iter().zip(&keep).filter(|(_, k)| **k).map(|(&p, _)| p).collect();
                }
                None => kept.push((id, (0..keep.len()).filter(|&k| keep[k]).collect())),
            }
        }
        if !changed {
            break;
        }
    }
    for (id, _) in &kept {
        module.functions[id.index()].canonicalize();
    }
    kept
}

/// Which values some instruction or terminator of `function` uses (one pass, not one per
/// parameter: a call with 100,000 arguments made that quadratic).
fn used_values(function: &Function) -> Vec<bool> {
    let mut used = vec![false; function.values.len()];
    let mut mark = |v: Value| {
        if let Some(slot) = used.get_mut(v.index()) {
            *slot = true;
        }
    };
    for block in &function.blocks {
        block.insts.iter().flat_map(|inst| &inst.args).for_each(|&v| mark(v));
        if let Some(t) = &block.term {
            t.uses().into_iter().for_each(&mut mark);
        }
    }
    used
}
