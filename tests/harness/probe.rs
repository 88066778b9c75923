//! Does a run of a program compute an infinite or NaN `f64` anywhere — not only in its results?
//! docs/rules.md lets forward and reverse mode differ past such a value ("Singular points"):
//! `atan(x / 0)` is finite, but forward mode's tangent of `x / 0` is NaN, and forward lanes
//! multiply atan's partial 0 by it where reverse mode's strong zero drops it.

use jitdiff::ir::arbitrary::standard_extern_registry;
use jitdiff::ir::{ArgValue, Callee, Imm, InstData, Interpreter, Module, Opcode, Type, Value};

/// Run `entry` of `module` on `args` in the interpreter, with every function probed: after each
/// instruction with an `f64` result `r`, `probe[0] += r - r` (0 for a finite `r`, NaN
/// otherwise), `probe` a slice every function gets as its last parameter and passes on at its
/// calls. True when the probe ends NaN; false when it ends finite or the run fails (the
/// primal ran, so a failure is unexpected: it excuses nothing).
pub fn reaches_non_finite(module: &Module, entry: &str, args: &[ArgValue]) -> bool {
    let mut probed = module.clone();
    for function in &mut probed.functions {
        let probe = function.add_param(Type::SliceMut, Some("probe"));
        for b in 0..function.blocks.len() {
            let old = std::mem::take(&mut function.blocks[b].insts);
            let zero = function.new_value(Type::I64);
            let mut insts = vec![inst(Opcode::IConst, vec![], Imm::I64(0), Some(zero))];
            for mut instruction in old {
                if instruction.op == Opcode::Call && matches!(instruction.imm, Imm::Callee(Callee::Func(_))) {
                    instruction.args.push(probe);
                }
                let floats: Vec<Value> =
                    instruction.results.iter().copied().filter(|&r| function.ty(r) == Type::F64).collect();
                insts.push(instruction);
                for r in floats {
                    let (nan_if_not_finite, sum, so_far) =
                        (function.new_value(Type::F64), function.new_value(Type::F64), function.new_value(Type::F64));
                    insts.push(inst(Opcode::FSub, vec![r, r], Imm::None, Some(nan_if_not_finite)));
                    insts.push(inst(Opcode::Load, vec![probe, zero], Imm::None, Some(so_far)));
                    insts.push(inst(Opcode::FAdd, vec![so_far, nan_if_not_finite], Imm::None, Some(sum)));
                    insts.push(inst(Opcode::Store, vec![probe, zero, sum], Imm::None, None));
                }
            }
            function.blocks[b].insts = insts;
        }
    }
    let mut args = args.to_vec();
    args.push(ArgValue::SliceMut(vec![0.0]));
    let externs = standard_extern_registry();
    let run = Interpreter::new(&probed).with_externs(&externs).with_step_limit(50_000_000).call(entry, &mut args);
    match (run, args.last()) {
        (Ok(_), Some(ArgValue::SliceMut(probe))) => probe[0].is_nan(),
        _ => false,
    }
}

fn inst(op: Opcode, args: Vec<Value>, imm: Imm, result: Option<Value>) -> InstData {
    InstData { op, args: args.into_iter().collect(), imm, results: result.into_iter().collect() }
}
