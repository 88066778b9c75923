//! Reassociation of integer index arithmetic, so that its loop-invariant part can leave the loop.

use crate::analysis::ControlFlow;
use crate::function::{Block, Function, Imm, InstData, Value};
use crate::opcode::Opcode;
use crate::types::Type;
use rustc_hash::FxHashMap as HashMap;

/// Rewrite `(a + r) - b` (and the other orders of `iadd`/`isub` of two instructions, the inner
/// one used only by the outer) where `r` changes in the innermost loop around them and `a`, `b`
/// do not, into `r + (a - b)`: the new `a - b` is loop-invariant, and
/// [`licm`](super::licm) then moves it out. Integer addition wraps and is exactly associative,
/// so every result is the same.
///
/// Source indexes this way: `icf[column + r - (i + 1)]` in a loop over `r` computes two
/// operations per iteration — and reverse mode recomputes them — where one would do.
///
/// ```
/// use jitdiff_ir::{parse_module, passes, print_module};
/// let src = "func @f(x: slice, c: i64, n: i64) -> f64 {
/// entry:
///     zero = iconst 0
///     one = iconst 1
///     acc0 = fconst 0.0
///     jump head(zero, acc0)
/// head(r: i64, acc: f64):
///     more = icmp lt r, n
///     br more, body, done
/// body:
///     t = iadd c, r
///     k = isub t, one
///     v = load x, k
///     acc2 = fadd acc, v
///     r2 = iadd r, one
///     jump head(r2, acc2)
/// done:
///     ret acc
/// }
/// ";
/// let mut m = parse_module(src).unwrap();
/// passes::reassociate(&mut m.functions[0]);
/// passes::licm(&mut m.functions[0]);
/// passes::dce(&mut m.functions[0]);
/// let text = print_module(&m);
/// assert!(text.find("isub c, one").unwrap() < text.find("head(").unwrap(), "{text}");
/// ```
pub fn reassociate(func: &mut Function) -> bool {
    if func.blocks.is_empty() {
        return false;
    }
    let cfg = ControlFlow::new(func);
    let loops = cfg.natural_loops();
    if loops.is_empty() {
        return false;
    }
    let n = func.blocks.len();
    // Per block, its innermost loop.
    let mut containing = cfg.loops_containing(&loops);
    containing.resize(n, vec![]);
    let innermost: Vec<Option<usize>> =
        containing.iter().map(|around| around.iter().copied().min_by_key(|&k| loops[k].size)).collect();
    let mut def_block: Vec<Block> = vec![Block::ENTRY; func.values.len()];
    let mut uses: HashMap<Value, usize> = HashMap::default();
    let mut defs: HashMap<Value, (Opcode, Value, Value)> = HashMap::default();
    for (b, block) in func.blocks.iter().enumerate() {
        for &p in &block.params {
            def_block[p.index()] = Block(b as u32);
        }
        for inst in &block.insts {
            for &r in &inst.results {
                def_block[r.index()] = Block(b as u32);
            }
            for &a in &inst.args {
                *uses.entry(a).or_default() += 1;
            }
            if matches!(inst.op, Opcode::IAdd | Opcode::ISub) && inst.args.len() == 2 {
                defs.insert(inst.results[0], (inst.op, inst.args[0], inst.args[1]));
            }
        }
        for a in block.term.as_ref().map(|t| t.uses()).unwrap_or_default() {
            *uses.entry(a).or_default() += 1;
        }
    }
    // Values this pass made from operands invariant in a loop (defined in it until LICM runs).
    let mut made_invariant: HashMap<Value, usize> = HashMap::default();
    let mut changed = false;
    for (b, &inner_loop) in innermost.iter().enumerate() {
        let Some(l) = inner_loop else { continue };
        let invariant = |v: Value, made: &HashMap<Value, usize>| {
            made.get(&v) == Some(&l) || def_block.get(v.index()).is_some_and(|d| !loops[l].body[d.index()])
        };
        let insts = std::mem::take(&mut func.blocks[b].insts);
        let mut out = Vec::with_capacity(insts.len());
        for mut inst in insts {
            let rewrite = match (inst.op, inst.args.as_slice()) {
                (Opcode::IAdd | Opcode::ISub, &[inner, outer_operand])
                    if uses.get(&inner) == Some(&1) && invariant(outer_operand, &made_invariant) =>
                {
                    defs.get(&inner).copied().and_then(|(inner_op, x, y)| {
                        let outer_sign = inst.op == Opcode::IAdd;
                        let y_sign = inner_op == Opcode::IAdd;
                        match (invariant(x, &made_invariant), invariant(y, &made_invariant)) {
                            // (a ± r) ± b: a ± b, then ± r.
                            (true, false) => Some((x, (outer_operand, outer_sign), (y, y_sign))),
                            // (r ± a) ± b: r is added; the invariant part is ±a ± b.
                            (false, true) if y_sign => Some((y, (outer_operand, outer_sign), (x, true))),
                            // (r - a) + b: b - a, then + r.
                            (false, true) if outer_sign => Some((outer_operand, (y, false), (x, true))),
                            _ => None,
                        }
                    })
                }
                _ => None,
            };
            if let Some((first, (second, second_sign), (variant, variant_sign))) = rewrite {
                // w = first ± second (invariant); the result is w + variant or w - variant.
                let w = func.new_value(Type::I64);
                let op = if second_sign { Opcode::IAdd } else { Opcode::ISub };
                out.push(InstData {
                    op,
                    args: smallvec::smallvec![first, second],
                    imm: Imm::None,
                    results: smallvec::smallvec![w],
                });
                made_invariant.insert(w, l);
                if let Some(count) = uses.get_mut(&inst.args[0]) {
                    *count -= 1;
                }
                let op = if variant_sign { Opcode::IAdd } else { Opcode::ISub };
                inst.op = op;
                inst.args = smallvec::smallvec![w, variant];
                *uses.entry(variant).or_default() += 1;
                defs.insert(inst.results[0], (op, w, variant));
                changed = true;
            }
            out.push(inst);
        }
        func.blocks[b].insts = out;
    }
    if changed {
        super::dce(func);
    }
    changed
}
