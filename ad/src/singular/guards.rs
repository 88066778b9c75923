//! Square roots a branch keeps away from zero, the one point where `sqrt`'s partial is infinite
//! while its value is finite.
//!
//! `if r² != 0 { let r = r².sqrt(); … }` (GradBench's `ba`), or `let n = s.sqrt(); if n >= 1e-4
//! { … uses of n … }` (its `ht`): at a point where the root is zero, either the root is not
//! computed at all, or its (possibly infinite) tangent reaches no instruction that runs. Such a
//! root does not oblige every other product of the program to be a strong zero
//! (`Singular::guards_every_product`); its own product stays one.

use jitdiff_ir::analysis::ControlFlow;
use jitdiff_ir::{Block, CondCode, Function, Imm, Opcode, Terminator, Value};
use rustc_hash::FxHashMap as HashMap;

/// Where a function's branches decide something about a float: the blocks entered only from a
/// branch on `fcmp`, with what holds on entry.
pub(super) struct Guards {
    cfg: ControlFlow,
    /// `(guarded block, compare's condition, left operand, right operand, whether it holds)`.
    entered: Vec<(Block, CondCode, Value, Value, bool)>,
    constants: HashMap<Value, f64>,
    /// For each square root, the blocks with a use of it other than a comparison (found in one
    /// pass, so that many roots do not each scan the whole function).
    root_uses: HashMap<Value, Vec<Block>>,
}

impl Guards {
    pub fn of(func: &Function) -> Guards {
        let cfg = ControlFlow::new(func);
        let mut compares = HashMap::default();
        let mut constants = HashMap::default();
        for inst in func.blocks.iter().flat_map(|b| &b.insts) {
            match (inst.op, inst.imm, inst.results.first()) {
                (Opcode::FCmp, Imm::Cond(cc), Some(&r)) if inst.args.len() == 2 => {
                    compares.insert(r, (cc, inst.args[0], inst.args[1]));
                }
                (Opcode::FConst, Imm::F64(c), Some(&r)) => {
                    constants.insert(r, c);
                }
                _ => {}
            }
        }
        let mut entered = vec![];
        for (b, data) in func.block_ids().zip(&func.blocks) {
            let Some(Terminator::Branch { cond, then_dest, else_dest }) = &data.term else { continue };
            let Some(&(cc, a, c)) = compares.get(cond) else { continue };
            for (dest, holds) in [(then_dest.block, true), (else_dest.block, false)] {
                // Entered from this branch alone: what the compare said holds in it and in
                // every block it dominates.
                if then_dest.block != else_dest.block && cfg.predecessors(dest) == [b] {
                    entered.push((dest, cc, a, c, holds));
                }
            }
        }
        let mut root_uses: HashMap<Value, Vec<Block>> = HashMap::default();
        if !entered.is_empty() {
            for inst in func.blocks.iter().flat_map(|b| &b.insts) {
                if inst.op == Opcode::Sqrt && inst.results.len() == 1 {
                    root_uses.insert(inst.results[0], vec![]);
                }
            }
        }
        if !root_uses.is_empty() {
            for (b, data) in func.block_ids().zip(&func.blocks) {
                let insts = data.insts.iter().filter(|inst| inst.op != Opcode::FCmp).flat_map(|inst| &inst.args);
                for v in insts.copied().chain(data.term.as_ref().map(|t| t.uses()).into_iter().flatten()) {
                    if let Some(blocks) = root_uses.get_mut(&v)
                        && blocks.last() != Some(&b)
                    {
                        blocks.push(b);
                    }
                }
            }
        }
        Guards { cfg, entered, constants, root_uses }
    }

    /// Is `v` nonzero (or NaN) wherever block `at` runs, by a branch it is entered under?
    fn nonzero_in(&self, v: Value, at: Block) -> bool {
        self.entered.iter().any(|&(guarded, cc, a, c, holds)| {
            let decided = if a == v {
                self.constants.get(&c).is_some_and(|&k| excludes_zero(cc, k, holds))
            } else if c == v {
                self.constants.get(&a).is_some_and(|&k| excludes_zero(swapped(cc), k, holds))
            } else {
                false
            };
            decided && self.cfg.dominates(guarded, at)
        })
    }

    /// Is the `sqrt` whose result is `root` (operand `x`, in block `at`) kept from its singular
    /// point? Either it runs only where `x` is nonzero, or every instruction that could carry
    /// its tangent on (every use but a comparison) runs only where `root` or `x` is nonzero.
    pub fn keeps_root_from_zero(&self, root: Value, x: Value, at: Block) -> bool {
        if self.entered.is_empty() {
            return false;
        }
        if self.nonzero_in(x, at) {
            return true;
        }
        let nonzero = |b: Block| self.nonzero_in(root, b) || self.nonzero_in(x, b);
        self.root_uses.get(&root).is_some_and(|blocks| blocks.iter().all(|&b| nonzero(b)))
    }
}

/// `cc` with its operands swapped (`c < x` is `x > c`).
fn swapped(cc: CondCode) -> CondCode {
    match cc {
        CondCode::Lt => CondCode::Gt,
        CondCode::Le => CondCode::Ge,
        CondCode::Gt => CondCode::Lt,
        CondCode::Ge => CondCode::Le,
        other => other,
    }
}

/// Whether `(x cc k) == holds` leaves `x` nonzero, or NaN (a NaN operand makes the root NaN:
/// not a finite value with an infinite partial). A compare that fails may have failed on NaN.
fn excludes_zero(cc: CondCode, k: f64, holds: bool) -> bool {
    if k.is_nan() {
        return false;
    }
    match (cc, holds) {
        (CondCode::Ne, true) | (CondCode::Eq, false) => k == 0.0,
        (CondCode::Eq, true) | (CondCode::Ne, false) => k != 0.0,
        // x > k ≥ 0, or x ≥ k > 0; when false: x ≤ k < 0 or x < k ≤ 0 (or NaN).
        (CondCode::Gt, true) | (CondCode::Le, false) => k >= 0.0,
        (CondCode::Ge, true) | (CondCode::Lt, false) => k > 0.0,
        (CondCode::Lt, true) | (CondCode::Ge, false) => k <= 0.0,
        (CondCode::Le, true) | (CondCode::Gt, false) => k < 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jitdiff_ir::parse_module;

    fn guarded(src: &str) -> bool {
        let m = parse_module(src).unwrap();
        let f = &m.functions[0];
        let guards = Guards::of(f);
        let (b, inst) = f
            .block_ids()
            .zip(&f.blocks)
            .find_map(|(b, data)| data.insts.iter().find(|i| i.op == Opcode::Sqrt).map(|i| (b, i)))
            .unwrap();
        guards.keeps_root_from_zero(inst.results[0], inst.args[0], b)
    }

    const INSIDE: &str = "func @f(s: f64) -> f64 {
entry:
    zero = fconst 0.0
    c = fcmp CC s, K
    br c, yes, no
yes:
    r = sqrt s
    ret r
no:
    ret zero
}";

    #[test]
    fn a_root_taken_only_where_its_operand_is_nonzero_is_kept_from_zero() {
        for (cc, k, kept) in [("ne", "0.0", true), ("gt", "0.0", true), ("ge", "0.5", true), ("ge", "0.0", false)] {
            let src = INSIDE
                .replace("CC", cc)
                .replace("K", "k")
                .replace("zero = fconst 0.0", &format!("zero = fconst 0.0\n    k = fconst {k}"));
            assert_eq!(guarded(&src), kept, "{cc} {k}");
        }
        // Taken where the compare failed: `!(s <= 0)` leaves s > 0 or NaN.
        let src = INSIDE.replace("CC", "le").replace("K", "zero").replace("br c, yes, no", "br c, no, yes");
        assert!(guarded(&src));
        let src = INSIDE.replace("CC", "lt").replace("K", "zero").replace("br c, yes, no", "br c, no, yes");
        assert!(!guarded(&src), "!(s < 0) allows s = 0");
    }

    #[test]
    fn a_root_whose_uses_all_run_where_it_is_nonzero_is_kept_from_zero() {
        let src = "func @f(s: f64) -> f64 {
entry:
    small = fconst 0.0001
    n = sqrt s
    c = fcmp ge n, small
    br c, big, other
big:
    q = fdiv s, n
    ret q
other:
    ret s
}";
        assert!(guarded(src));
        // The root also returned where it may be zero: not kept.
        assert!(!guarded(&src.replace("other:\n    ret s", "other:\n    ret n")));
        // A block reached from the guarded one and from elsewhere is not guarded.
        let joined = "func @f(s: f64) -> f64 {
entry:
    small = fconst 0.0001
    n = sqrt s
    c = fcmp ge n, small
    br c, big, join(s)
big:
    jump join(n)
join(v: f64):
    w = fmul v, n
    ret w
}";
        assert!(!guarded(joined));
    }
}
