//! What both transforms check about a differentiation request, and the source they read.

use super::error::AdError;
use jitdiff_ir::analysis::ControlFlow;
use jitdiff_ir::{BlockCall, Callee, FuncId, Function, Imm, Module, Opcode, Terminator, Type, ValueList, passes};
use jitdiff_rules::RuleSet;

/// Find `@func` and check `wrt`: one flag per parameter, set only on `f64` and slice
/// parameters. The module is assumed verified.
pub(super) fn checked_function(module: &Module, func: &str, wrt: &[bool]) -> Result<FuncId, AdError> {
    let id = module.func_id(func).ok_or_else(|| AdError::UnknownFunction(func.to_string()))?;
    let f = module.func(id);
    if wrt.len() != f.params.len() {
        return Err(AdError::WrongMaskLength { func: func.into(), expected: f.params.len(), found: wrt.len() });
    }
    for (index, (&p, &on)) in f.params.iter().zip(wrt).enumerate() {
        let ty = f.ty(p);
        if on && !(ty == Type::F64 || ty.is_slice()) {
            return Err(AdError::NotDifferentiable { func: func.into(), index, ty });
        }
    }
    Ok(id)
}

/// Call `check` on `@id` and every function it may call, each once — the functions a derivative
/// of `@id` differentiates (a callee with a custom rule is not differentiated, so neither it nor
/// what it calls is visited) — stopping at the first error.
fn for_each_differentiated(
    module: &Module,
    id: FuncId,
    rules: &RuleSet,
    mut check: impl FnMut(&Function) -> Result<(), AdError>,
) -> Result<(), AdError> {
    let mut seen = vec![false; module.functions.len()];
    let mut stack = vec![id];
    while let Some(f) = stack.pop() {
        if std::mem::replace(&mut seen[f.index()], true) {
            continue;
        }
        let func = module.func(f);
        check(func)?;
        for data in func.blocks.iter().flat_map(|b| &b.insts) {
            if let (Opcode::Call, Imm::Callee(Callee::Func(callee))) = (data.op, data.imm)
                && (rules.is_empty() || rules.lookup(&module.func(callee).name).is_none())
            {
                stack.push(callee);
            }
        }
    }
    Ok(())
}

/// Derivatives read a `slice` parameter again after the code that might write memory (the
/// pullback reads the primal's inputs; passes merge repeated loads of a `slice`), which holds
/// only if nothing writes it: reject a call, in `@id` or any function it may call (but callees
/// with a custom rule), that passes one `mslice` both to a `slice` parameter and to an `mslice`
/// parameter — an in-place call the interpreter and the JIT run, but no derivative follows.
pub(super) fn check_no_aliased_slices(module: &Module, id: FuncId, rules: &RuleSet) -> Result<(), AdError> {
    for_each_differentiated(module, id, rules, |func| {
        for block in &func.blocks {
            for (inst, data) in block.insts.iter().enumerate() {
                let (Opcode::Call, Imm::Callee(Callee::Func(callee))) = (data.op, data.imm) else { continue };
                let target = module.func(callee);
                if !rules.is_empty() && rules.lookup(&target.name).is_some() {
                    continue;
                }
                let param_ty = |k: usize| target.params.get(k).map(|&p| target.ty(p));
                for (k, &arg) in data.args.iter().enumerate() {
                    let read_only = func.ty(arg) == Type::SliceMut && param_ty(k) == Some(Type::Slice);
                    let written = |j: usize| data.args[j] == arg && param_ty(j) == Some(Type::SliceMut);
                    if read_only && (0..data.args.len()).any(written) {
                        return Err(AdError::AliasedSlices {
                            func: func.name.clone(),
                            block: block.name.clone(),
                            inst,
                            callee: target.name.clone(),
                            slice: func.value_label(arg).to_string(),
                        });
                    }
                }
            }
        }
        Ok(())
    })
}

/// Reverse mode keeps the pullback state on the call's tape: reject `tpush`/`tpop` in `@id` or
/// any function it may call, naming the first one (as written). A callee with a custom rule is
/// not differentiated, so what it does inside does not matter.
pub(super) fn check_no_tape_use(module: &Module, id: FuncId, rules: &RuleSet) -> Result<(), AdError> {
    for_each_differentiated(module, id, rules, |func| {
        for (b, block) in func.blocks.iter().enumerate() {
            for (inst, data) in block.insts.iter().enumerate() {
                match data.op {
                    // The fence nested AD puts around a recorded gradient (`nested.rs`) that no
                    // rule covers: say so in those terms, not as tape traffic the user wrote.
                    Opcode::TSplit
                        if b == 0 && inst == 0 && func.value_label(data.results[0]) == crate::nested::FENCE =>
                    {
                        return Err(AdError::NestedDerivative {
                            name: func.name.clone(),
                            reason: "its reverse-mode gradient keeps a loop's state on the tape, and the \
                                     differentiated function takes a `mslice`, so reverse mode cannot \
                                     differentiate it again; declare it `grad forward` (in Rust, \
                                     `jitdiff::grad_forward`), or take the outer derivative by forward mode"
                                .into(),
                        });
                    }
                    Opcode::TPush | Opcode::TPop | Opcode::TSplit | Opcode::TRejoin => {
                        return Err(AdError::TapeInReverseMode {
                            func: func.name.clone(),
                            block: block.name.clone(),
                            inst,
                            op: data.op.spelling(),
                        });
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    })
}

/// Optimise the derived functions of `out` (those from index `first_derived` on) and the
/// original functions they call; the other originals are left as they are — nothing derived
/// reaches them, and long ones would double the cost of a derivation.
pub(super) fn optimize_derived(out: &mut Module, first_derived: usize) {
    let mut reached = vec![false; out.functions.len()];
    let mut stack: Vec<usize> = (first_derived..out.functions.len()).collect();
    while let Some(f) = stack.pop() {
        if std::mem::replace(&mut reached[f], true) {
            continue;
        }
        for inst in out.functions[f].blocks.iter().flat_map(|b| &b.insts) {
            if let (Opcode::Call, Imm::Callee(Callee::Func(callee))) = (inst.op, inst.imm) {
                stack.push(callee.index());
            }
        }
    }
    let Module { tables, functions, .. } = out;
    for (function, _) in functions.iter_mut().zip(&reached).filter(|(_, r)| **r) {
        passes::optimize_function_in(function, tables);
    }
}

/// The module the transforms read: unreachable blocks have nothing to differentiate, and
/// dropping them first keeps derived functions free of blocks that were never visited. Work
/// that does not change inside a loop is moved out of it first (after moving constants to the
/// entry block, merging repeated computations and dropping block parameters that carry one
/// value around a loop), so that reverse mode records it once per entry into the loop rather
/// than once per iteration, and forward mode computes its tangent once; work used only in a
/// later block is moved down to it, so that it is not live across loops in between (nor
/// recorded because of them). None of this changes
/// the arithmetic: every value is computed by the same operations.
pub(super) fn differentiation_source(module: &Module) -> Module {
    let mut cleaned = module.clone();
    for function in &mut cleaned.functions {
        passes::dce(function);
        passes::hoist_constants(function);
        passes::remove_redundant_params(function);
        passes::cse(function);
        passes::remove_redundant_loads(function);
        passes::reassociate(function);
        passes::licm(function);
        passes::sink(function);
        passes::dce(function);
        passes::merge_blocks(function);
        give_loops_one_entry(function);
        split_exits_into_enclosing_headers(function);
    }
    cleaned
}

/// Give each loop entered by more than one edge (its header also the join of an `if`, as in
/// `let mut acc = if t > 0.0 { 1.0 } else { -1.0 }; for j in 0..m { .. }`) a block of its own
/// that the entering edges join first: `enter(args): jump header(args)`. The header is then a
/// loop header only: reverse mode records which edge was taken once per entry into the loop
/// (in `enter`), not at every iteration, and counts the reversed loop down itself instead of
/// recording its index (a counted loop needs a single entry edge, `loops.rs`).
fn give_loops_one_entry(function: &mut Function) {
    let cfg = ControlFlow::new(function);
    let mut plans = vec![];
    for l in cfg.natural_loops() {
        let inside = |b: jitdiff_ir::Block| l.body.get(b.index()).copied().unwrap_or(false);
        let mut outside: Vec<jitdiff_ir::Block> =
            cfg.predecessors(l.header).iter().copied().filter(|&p| !inside(p)).collect();
        outside.sort_unstable();
        outside.dedup();
        let edges: usize = outside
            .iter()
            .filter_map(|&p| function.block(p).term.as_ref())
            .map(|t| t.successors().iter().filter(|c| c.block == l.header).count())
            .sum();
        if edges > 1 && l.header.index() != 0 {
            plans.push((l.header, outside));
        }
    }
    for (header, outside) in plans {
        let name = format!("{}_enter", function.block(header).name);
        let enter = function.add_block(&name);
        let types: Vec<Type> = function.block(header).params.iter().map(|&p| function.ty(p)).collect();
        let args: ValueList = types.into_iter().map(|ty| function.add_block_param(enter, ty, None)).collect();
        for p in outside {
            if let Some(term) = &mut function.block_mut(p).term {
                for call in term.successors_mut() {
                    if call.block == header {
                        call.block = enter;
                    }
                }
            }
        }
        function.block_mut(enter).term = Some(Terminator::Jump(BlockCall { block: header, args }));
    }
}

/// Give each loop that exits straight into an enclosing loop's header (`br more, body,
/// outer_head(...)`, what jump threading leaves of `for i { for j in i + 1..d { .. } }`) an
/// exit block of its own: `br more, body, exit` and `exit: jump outer_head(...)`. Reverse mode
/// can then compute where the inner loop ended — its trip count and final indices, integer
/// arithmetic on the outer loop's — in the reversed exit block, instead of recording them at
/// every run of the inner loop (`state/exits.rs` needs an exit block that is not an enclosing
/// header: a back edge of the outer loop is not a place the reversed inner loop can start from).
fn split_exits_into_enclosing_headers(function: &mut Function) {
    let cfg = ControlFlow::new(function);
    let headers: Vec<bool> = {
        let mut h = vec![false; function.blocks.len()];
        for l in cfg.natural_loops() {
            h[l.header.index()] = true;
        }
        h
    };
    let mut splits = vec![];
    for b in function.block_ids() {
        let Some(Terminator::Branch { then_dest, else_dest, .. }) = &function.block(b).term else { continue };
        if !headers[b.index()] {
            continue;
        }
        for (slot, call) in [then_dest, else_dest].into_iter().enumerate() {
            let h = call.block;
            if h != b && headers[h.index()] && cfg.is_back_edge(b, h) {
                splits.push((b, slot));
            }
        }
    }
    for (b, slot) in splits {
        let name = format!("{}_exit", function.block(b).name);
        let exit = function.add_block(&name);
        let Some(Terminator::Branch { then_dest, else_dest, .. }) = &mut function.block_mut(b).term else { continue };
        let call = if slot == 0 { then_dest } else { else_dest };
        let onward = std::mem::replace(call, BlockCall { block: exit, args: ValueList::new() });
        function.block_mut(exit).term = Some(Terminator::Jump(onward));
    }
}

/// Run a derivation on the [`differentiation_source`]; when it fails at an instruction, run it
/// again on the source with only unreachable blocks removed, so the error names the
/// instruction by its position in the function as written (the cleanup moves and merges
/// instructions). Errors are the rare path, so the second run costs nothing in general.
pub(super) fn derive_from_source<T>(
    module: &Module,
    derive: impl Fn(&Module) -> Result<T, AdError>,
) -> Result<T, AdError> {
    match derive(&differentiation_source(module)) {
        Err(e) if e.names_instruction() => {
            let mut as_written = module.clone();
            as_written.functions.iter_mut().for_each(passes::remove_unreachable_blocks);
            Err(derive(&as_written).err().unwrap_or(e))
        }
        result => result,
    }
}
