//! Negation folding: `fneg` absorbed into the additions and subtractions that use it.

use super::Aliases;
use crate::analysis::ControlFlow;
use crate::function::{Function, Imm, InstData, Value};
use crate::opcode::Opcode;
use rustc_hash::FxHashMap as HashMap;

/// Fold negations into the arithmetic that consumes them, with rewrites that are exact in IEEE
/// arithmetic (round to nearest is symmetric, so `a * -b` is `-(a * b)` bit for bit, and
/// subtraction *is* addition of the negation):
///
/// | before | after |
/// |---|---|
/// | `fadd a, (fneg b)` | `fsub a, b` |
/// | `fadd (fneg a), b` | `fsub b, a` |
/// | `fsub a, (fneg b)` | `fadd a, b` |
/// | `fneg (fneg a)` | `a` |
/// | `fmul (fneg a), (fneg b)` (or `fdiv`) | `fmul a, b` |
/// | `fmul a, (fneg b)` (or `fdiv`, either side), when every use of it folds a negation | `fneg (fmul a, b)` |
///
/// Results are bit-identical except for the sign of a NaN (negating a NaN flips its sign bit,
/// which a NaN produced further on may or may not inherit). No rewrite can change a sign of
/// zero: `-a - b` would be `-(a + b)` but for `a = -b`, where the two zeros differ, so it is
/// not done. Derivative code is full of negations — the rule for `fsub` hands `-bar` to its
/// second operand — and on x86 each costs a constant load and an `xor` inside the loop.
///
/// ```
/// use jitdiff_ir::{parse_module, passes, print_module};
/// let src = "func @f(a: f64, b: f64) -> f64 {\nentry:\n    n = fneg b\n    r = fadd a, n\n    ret r\n}\n";
/// let mut m = parse_module(src).unwrap();
/// passes::fold_negations(&mut m.functions[0]);
/// passes::dce(&mut m.functions[0]);
/// let text = print_module(&m);
/// assert!(text.contains("fsub a, b") && !text.contains("fneg"));
/// ```
pub fn fold_negations(func: &mut Function) {
    if func.blocks.is_empty() {
        return;
    }
    // Can every use of a value absorb a negation of it? (A use by a terminator cannot.)
    let mut absorbs: Vec<bool> = vec![true; func.values.len()];
    for block in &func.blocks {
        for inst in &block.insts {
            for (k, a) in inst.args.iter().enumerate() {
                let folds = matches!((inst.op, k), (Opcode::FAdd, _) | (Opcode::FSub, 1) | (Opcode::FNeg, 0));
                if let Some(slot) = absorbs.get_mut(a.index()) {
                    *slot &= folds;
                }
            }
        }
        if let Some(term) = &block.term {
            for v in term.uses() {
                if let Some(slot) = absorbs.get_mut(v.index()) {
                    *slot = false;
                }
            }
        }
    }
    let cfg = ControlFlow::new(func);
    let mut aliases = Aliases::new(func);
    // `negated[v] = a` when `v` is `-a`.
    let mut negated: HashMap<Value, Value> = HashMap::default();
    let mut changed = false;
    for &b in cfg.reverse_post_order() {
        let insts = std::mem::take(&mut func.blocks[b.index()].insts);
        let mut out = Vec::with_capacity(insts.len());
        for mut inst in insts {
            inst.args.iter_mut().for_each(|a| *a = aliases.resolve(*a));
            let neg = |v: &Value| negated.get(v).copied();
            match (inst.op, inst.args.as_slice(), inst.results.as_slice()) {
                (Opcode::FNeg, &[a], &[r]) => match neg(&a) {
                    Some(x) => {
                        aliases.set(r, x);
                        changed = true;
                        continue;
                    }
                    None => {
                        negated.insert(r, a);
                    }
                },
                (Opcode::FAdd, &[a, x], _) => {
                    if let Some(y) = neg(&x) {
                        (inst.op, inst.args) = (Opcode::FSub, smallvec::smallvec![a, y]);
                        changed = true;
                    } else if let Some(y) = neg(&a) {
                        (inst.op, inst.args) = (Opcode::FSub, smallvec::smallvec![x, y]);
                        changed = true;
                    }
                }
                (Opcode::FSub, &[a, x], _) => {
                    if let Some(y) = neg(&x) {
                        (inst.op, inst.args) = (Opcode::FAdd, smallvec::smallvec![a, y]);
                        changed = true;
                    }
                }
                (Opcode::FMul | Opcode::FDiv, &[a, x], &[r]) => match (neg(&a), neg(&x)) {
                    (Some(p), Some(q)) => {
                        inst.args = smallvec::smallvec![p, q];
                        changed = true;
                    }
                    (Some(_), None) | (None, Some(_)) if absorbs[r.index()] => {
                        // `r = -(a' op x')`: the product first, then its negation as `r`.
                        let args = vec![neg(&a).unwrap_or(a), neg(&x).unwrap_or(x)];
                        let product = func.new_value(func.ty(r));
                        out.push(InstData {
                            op: inst.op,
                            args: args.into(),
                            imm: Imm::None,
                            results: smallvec::smallvec![product],
                        });
                        (inst.op, inst.args) = (Opcode::FNeg, smallvec::smallvec![product]);
                        negated.insert(r, product);
                        changed = true;
                    }
                    _ => {}
                },
                _ => {}
            }
            out.push(inst);
        }
        func.blocks[b.index()].insts = out;
        if let Some(term) = &mut func.blocks[b.index()].term {
            term.map_uses(|v| aliases.resolve(v));
        }
    }
    if !changed {
        return;
    }
    aliases.apply(func);
    func.canonicalize();
}
