//! Float results no caller reads.

use smallvec::smallvec;

use crate::function::{Callee, FuncId, Function, Imm, InstData, Module, Terminator, Value};
use crate::opcode::Opcode;
use crate::types::Type;

/// Return `0.0` (a zero vector for `f64xW`) for every `f64` or vector result of a function of
/// `module` that no call site in `module` reads, and optimise the changed functions, so that the
/// work that only fed those results is gone; repeated until nothing changes (a callee's result
/// may have been read only to compute a result now zeroed). The signatures stay as they are.
/// Functions no instruction of `module` calls, and the functions `entries` (called from outside,
/// where any result may be read), are left alone. Returns whether anything changed.
///
/// Differentiation makes such results: a Hessian-vector product differentiates
/// `f_value_and_grad` in forward mode and reads the tangents of the gradient, never that of the
/// value, which `f`'s forward function computes in a callee.
///
/// ```
/// use jitdiff_ir::{parse_module, passes, print_module};
/// let src = "func @f(x: f64) -> f64 {
/// entry:
///     a, b = call @g(x)
///     ret a
/// }
/// func @g(x: f64) -> f64, f64 {
/// entry:
///     y = fmul x, x
///     z = sin x
///     ret y, z
/// }
/// ";
/// let mut m = parse_module(src).unwrap();
/// let f = m.func_id("f").unwrap();
/// assert!(passes::zero_unused_results(&mut m, &[f]));
/// assert!(!print_module(&m).contains("sin"));
/// ```
pub fn zero_unused_results(module: &mut Module, entries: &[FuncId]) -> bool {
    let mut any = false;
    for _ in 0..=module.functions.len() {
        let read = results_read(module);
        let mut changed = false;
        for (k, function) in module.functions.iter_mut().enumerate() {
            let Some(read) = &read[k] else { continue };
            if entries.contains(&FuncId(k as u32)) {
                continue;
            }
            let unread: Vec<usize> = (0..function.returns.len())
                .filter(|&r| {
                    !read.get(r).copied().unwrap_or(true) && matches!(function.returns[r], Type::F64 | Type::F64x(_))
                })
                .filter(|&r| !returns_zero(function, r))
                .collect();
            if unread.is_empty() {
                continue;
            }
            zero_results(function, &unread);
            super::optimize_function(function);
            changed = true;
        }
        if !changed {
            break;
        }
        any = true;
    }
    any
}

/// Per function: `None` when no instruction of `module` calls it, else which of its results
/// some call site reads.
fn results_read(module: &Module) -> Vec<Option<Vec<bool>>> {
    let mut read: Vec<Option<Vec<bool>>> = vec![None; module.functions.len()];
    for caller in &module.functions {
        let mut used = vec![false; caller.values.len()];
        for block in &caller.blocks {
            block.insts.iter().flat_map(|inst| &inst.args).for_each(|&v| used[v.index()] = true);
            if let Some(t) = &block.term {
                t.uses().into_iter().for_each(|v| used[v.index()] = true);
            }
        }
        for inst in caller.blocks.iter().flat_map(|b| &b.insts) {
            let (Opcode::Call, Imm::Callee(Callee::Func(id))) = (inst.op, inst.imm) else { continue };
            let Some(slot) = read.get_mut(id.index()) else { continue };
            let flags = slot.get_or_insert_with(|| vec![false; inst.results.len()]);
            for (flag, &r) in flags.iter_mut().zip(&inst.results) {
                *flag |= used[r.index()];
            }
        }
    }
    read
}

/// Does every `ret` of `function` return a constant zero at position `r` already?
fn returns_zero(function: &Function, r: usize) -> bool {
    let mut zero = vec![false; function.values.len()];
    let insts = || function.blocks.iter().flat_map(|b| &b.insts);
    for inst in insts() {
        if let (Opcode::FConst, Imm::F64(x), [v]) = (inst.op, inst.imm, &inst.results[..]) {
            zero[v.index()] = x.to_bits() == 0;
        }
    }
    for inst in insts() {
        if let (Opcode::Splat, [a], [v]) = (inst.op, &inst.args[..], &inst.results[..]) {
            zero[v.index()] = zero[a.index()];
        }
    }
    function.blocks.iter().all(|b| match &b.term {
        Some(Terminator::Return(values)) => values.get(r).is_some_and(|v| zero[v.index()]),
        _ => true,
    })
}

/// Return zeros at `positions` (results of type `f64` or `f64xW`) from every `ret` of
/// `function`: the constants are added to each returning block; the values they replace stay,
/// for [`dce`](super::dce) to remove with what only they needed.
///
/// ```
/// use jitdiff_ir::{parse_module, passes, print_module};
/// let mut m = parse_module("func @f(x: f64) -> f64, f64 {\nentry:\n    y = sin x\n    ret x, y\n}").unwrap();
/// passes::zero_results(&mut m.functions[0], &[1]);
/// passes::dce(&mut m.functions[0]);
/// assert!(!print_module(&m).contains("sin"));
/// ```
pub fn zero_results(function: &mut Function, positions: &[usize]) {
    for b in 0..function.blocks.len() {
        if !matches!(function.blocks[b].term, Some(Terminator::Return(_))) {
            continue;
        }
        for &r in positions {
            let Some(&ty) = function.returns.get(r) else { continue };
            let zero = zero_in(function, b, ty);
            if let Some(Terminator::Return(values)) = &mut function.blocks[b].term
                && let Some(slot) = values.get_mut(r)
            {
                *slot = zero;
            }
        }
    }
}

/// A zero of type `ty` (`f64` or a vector of them), appended to block `b` of `function`.
fn zero_in(function: &mut Function, b: usize, ty: Type) -> Value {
    let scalar = function.new_value(Type::F64);
    let mut insts =
        vec![InstData { op: Opcode::FConst, args: smallvec![], imm: Imm::F64(0.0), results: smallvec![scalar] }];
    let zero = match ty {
        Type::F64x(_) => {
            let vector = function.new_value(ty);
            insts.push(InstData {
                op: Opcode::Splat,
                args: smallvec![scalar],
                imm: Imm::Type(ty),
                results: smallvec![vector],
            });
            vector
        }
        _ => scalar,
    };
    function.blocks[b].insts.extend(insts);
    zero
}
