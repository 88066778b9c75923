//! Constant folding, with the interpreter's own evaluation ([`eval_pure`]).

use super::{Aliases, remove_marked};
use crate::analysis::ControlFlow;
use crate::function::{Function, InstData, Terminator, Value};
use crate::interp::{RuntimeValue, eval_pure};
use crate::opcode::Opcode;

/// Evaluate instructions whose operands are all constants and replace them by constants;
/// resolve `select` and `br` on constant conditions (`br` becomes `jump`); a `select` or `br`
/// whose two choices are the same becomes that choice.
///
/// Evaluation is [`eval_pure`] — the very code the interpreter runs — so a folded function
/// computes bit-identical results. Nothing that would fail at run time is folded (`idiv` by
/// zero stays and still fails), and the only algebraic identities used are exact ones:
/// `x + (-0.0) = x - 0.0 = x * 1.0 = x / 1.0 = x` (IEEE's additive identity is -0.0; `x + 0.0`
/// is not `x` for `x = -0.0`; the one bit that can differ is a signalling NaN's, which the
/// arithmetic would have quieted), and `x + 0 = x - 0 = x * 1 = x` on integers.
/// Vector results are not materialised (there is no vector constant), but their lanes still
/// fold through `extract`.
///
/// ```
/// use jitdiff_ir::{parse_module, passes, print_module};
/// let src = "func @f() -> i64 {\nentry:\n    a = iconst 7\n    b = iconst 2\n    c = imul a, b\n    ret c\n}\n";
/// let mut m = parse_module(src).unwrap();
/// passes::fold_constants(&mut m.functions[0]);
/// assert!(print_module(&m).contains("iconst 14"));
/// ```
pub fn fold_constants(func: &mut Function) {
    if func.blocks.is_empty() {
        return;
    }
    let cfg = ControlFlow::new(func);
    let mut known: Vec<Option<RuntimeValue>> = vec![None; func.values.len()];
    let mut aliases = Aliases::new(func);
    let mut dead: Vec<Vec<bool>> = func.blocks.iter().map(|b| vec![false; b.insts.len()]).collect();
    // Reverse post-order: every definition is visited before the uses it dominates.
    for &b in cfg.reverse_post_order() {
        let block = &mut func.blocks[b.index()];
        for (i, inst) in block.insts.iter_mut().enumerate() {
            inst.args.iter_mut().for_each(|a| *a = aliases.resolve(*a));
            if inst.op.has_side_effects() || inst.results.len() != 1 {
                continue;
            }
            let result = inst.results[0];
            if inst.op == Opcode::Select && inst.args.len() == 3 {
                let choice = match known.get(inst.args[0].index()).cloned().flatten() {
                    Some(RuntimeValue::Bool(c)) => Some(if c { inst.args[1] } else { inst.args[2] }),
                    _ => (inst.args[1] == inst.args[2]).then_some(inst.args[1]),
                };
                if let Some(v) = choice {
                    aliases.set(result, v);
                    let k = known.get(v.index()).cloned().flatten();
                    if let Some(slot) = known.get_mut(result.index()) {
                        *slot = k;
                    }
                    dead[b.index()][i] = true;
                    continue;
                }
            }
            if let Some(v) = identity(inst, &known) {
                aliases.set(result, v);
                let k = known.get(v.index()).cloned().flatten();
                if let Some(slot) = known.get_mut(result.index()) {
                    *slot = k;
                }
                dead[b.index()][i] = true;
                continue;
            }
            let operands: Option<Vec<RuntimeValue>> =
                inst.args.iter().map(|a| known.get(a.index()).cloned().flatten()).collect();
            let Some(value) = operands.and_then(|ops| eval_pure(inst.op, &inst.imm, &ops)) else { continue };
            if let Some(constant) = value.as_constant() {
                *inst = InstData {
                    op: constant.0,
                    args: smallvec::smallvec![],
                    imm: constant.1,
                    results: smallvec::smallvec![result],
                };
            }
            if let Some(slot) = known.get_mut(result.index()) {
                *slot = Some(value);
            }
        }
        if let Some(term) = &mut block.term {
            term.map_uses(|v| aliases.resolve(v));
            if let Terminator::Branch { cond, then_dest, else_dest } = term {
                let taken = match known.get(cond.index()).cloned().flatten() {
                    Some(RuntimeValue::Bool(c)) => Some(if c { then_dest.clone() } else { else_dest.clone() }),
                    _ => (then_dest == else_dest).then(|| then_dest.clone()),
                };
                if let Some(dest) = taken {
                    *term = Terminator::Jump(dest);
                }
            }
        }
    }
    remove_marked(func, &dead);
    aliases.apply(func);
    func.canonicalize();
}

/// The operand `inst` returns unchanged, by an exact identity: `x + (-0.0)` (IEEE's additive
/// identity is -0; +0 is not, since +0 + -0 = +0), and in wrapping integer arithmetic `x + 0`,
/// `x - 0` and `x * 1`.
fn identity(inst: &InstData, known: &[Option<RuntimeValue>]) -> Option<Value> {
    let is = |v: Value, want: &RuntimeValue| match (known.get(v.index()).cloned().flatten(), want) {
        (Some(RuntimeValue::F64(x)), RuntimeValue::F64(y)) => x.to_bits() == y.to_bits(),
        (Some(RuntimeValue::I64(x)), RuntimeValue::I64(y)) => x == *y,
        _ => false,
    };
    let (zero, one, negative_zero) = (RuntimeValue::I64(0), RuntimeValue::I64(1), RuntimeValue::F64(-0.0));
    let (float_zero, float_one) = (RuntimeValue::F64(0.0), RuntimeValue::F64(1.0));
    match (inst.op, &inst.args[..]) {
        (Opcode::FAdd, &[x, y]) if is(y, &negative_zero) => Some(x),
        (Opcode::FAdd, &[x, y]) if is(x, &negative_zero) => Some(y),
        (Opcode::FSub, &[x, y]) if is(y, &float_zero) => Some(x),
        (Opcode::FMul, &[x, y]) if is(y, &float_one) => Some(x),
        (Opcode::FMul, &[x, y]) if is(x, &float_one) => Some(y),
        (Opcode::FDiv, &[x, y]) if is(y, &float_one) => Some(x),
        (Opcode::IAdd, &[x, y]) if is(y, &zero) => Some(x),
        (Opcode::IAdd, &[x, y]) if is(x, &zero) => Some(y),
        (Opcode::ISub, &[x, y]) if is(y, &zero) => Some(x),
        (Opcode::IMul, &[x, y]) if is(y, &one) => Some(x),
        (Opcode::IMul, &[x, y]) if is(x, &one) => Some(y),
        _ => None,
    }
}
