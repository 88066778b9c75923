//! Singular partials: which instructions of a program can have an infinite partial derivative at
//! finite operands, and so how derivative code must multiply partials by (co)tangents.
//!
//! The convention (docs/rules.md, "Singular points"): a product of a partial by a (co)tangent is
//! a *strong zero* product (`fmulsz`, zero when either factor is zero). Forward mode computes
//! `p₂ ⊙ (p₁ ⊙ ẋ)` and reverse mode `(ȳ ⊙ p₂) ⊙ p₁`; with `⊙` both give the sum over paths of
//! products of partials in which a zero factor zeroes the path, so they agree at singular points
//! too (`sqrt(x)·sqrt(x)` at 0, `√(x² + y²)` at the origin, `x + sqrt(y)` at y = 0 in the
//! direction of `x`). With plain `fmul` one mode would give `0 · ∞ = NaN` where the other gives 0.
//!
//! Strong zeros cost a compare or two per product (30–40% of a GMM or MLP gradient if every
//! product had them), so they are used only where an infinite factor can occur in a program
//! whose values are finite: the partials of singular primitives always
//! ([`Coef::ScaleStrong`]), and every other partial only in a program with a primitive whose
//! partial is infinite where its value is finite (`sqrt`, `pow`, `asin`, `acos`, custom rules):
//! an infinite tangent or cotangent can then reach any product. Rosenbrock, GMM (`ln`), an MLP
//! (`fdiv`) and the pendulum keep plain products, and so does a program whose square roots a
//! branch keeps from zero (`guards.rs`): taken only where the operand is nonzero, or with every
//! use of the root behind a test that it is (GradBench's `ba` and `ht`).
//!
//! [`Coef::ScaleStrong`]: jitdiff_rules::Coef::ScaleStrong

mod guards;

use super::custom::CustomRules;
use jitdiff_ir::{Callee, FuncId, Function, Imm, InstData, Module, Opcode, Value};
use jitdiff_rules::has_singular_partials;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// The singular instructions of every function of a module, by result value.
pub(super) struct Singular {
    /// `by_function[f]`: the results of `f`'s instructions whose partials can be infinite.
    by_function: Vec<HashSet<Value>>,
    /// Whether some instruction's partial can be infinite where its value is finite.
    finite_valued: bool,
}

impl Singular {
    /// Find them in `module`, whose calls with a custom rule in `custom` count as singular (a
    /// user's partials may be infinite). Whether every product is guarded depends on the
    /// program that differentiating `root` runs: `root` and the functions it calls, not
    /// functions of the module it never reaches (so the same function gets the same derivative
    /// in any module, a nested derivative's included).
    pub fn analyse(module: &Module, custom: &CustomRules<'_>, root: FuncId) -> Singular {
        let by_function: Vec<HashSet<Value>> = module
            .functions
            .iter()
            .map(|func| {
                let constants = constants(func);
                func.blocks
                    .iter()
                    .flat_map(|b| &b.insts)
                    .filter(|inst| inst.results.len() == 1 && is_singular(module, &constants, inst, custom))
                    .map(|inst| inst.results[0])
                    .collect()
            })
            .collect();
        let reached = reachable(module, root);
        let finite_valued = module.functions.iter().zip(&by_function).zip(&reached).any(|((func, set), &reached)| {
            // Built only for a function with a square root to look at.
            let mut guards = None;
            reached
                && func.block_ids().zip(&func.blocks).any(|(b, data)| {
                    data.insts.iter().any(|inst| {
                        let singular =
                            inst.results.len() == 1 && set.contains(&inst.results[0]) && finite_where_singular(inst.op);
                        singular
                            && !(inst.op == Opcode::Sqrt
                                && guards.get_or_insert_with(|| guards::Guards::of(func)).keeps_root_from_zero(
                                    inst.results[0],
                                    inst.args[0],
                                    b,
                                ))
                    })
                })
        });
        Singular { by_function, finite_valued }
    }

    /// Whether every partial is multiplied with a strong zero, not only the singular ones: when
    /// some instruction has an infinite partial where its own value is finite (`sqrt` at 0),
    /// an infinite (co)tangent can meet a zero partial in a program whose values are all finite.
    /// (`ln` at 0, `fdiv` by 0 and `powi 0, -n` are infinite there themselves: the strong zeros
    /// of their own products keep zero seeds and dead branches exact, and past a non-finite
    /// value the modes may differ — which spares GMM and an MLP's mean a compare per product.)
    pub fn guards_every_product(&self) -> bool {
        self.finite_valued
    }

    /// Whether the instruction of function `func` (by index) with result `result` is singular.
    /// A [`Coef::ScaleStrong`](jitdiff_rules::Coef::ScaleStrong) term of an instruction that is
    /// not (an `fdiv` by a nonzero constant, a `powi` by a constant ≥ 0) is an ordinary product.
    pub fn is_singular(&self, func: usize, result: Value) -> bool {
        self.by_function.get(func).is_some_and(|set| set.contains(&result))
    }
}

/// Whether a singular primitive's value is finite at a point where its partial is infinite.
/// (`min` and `max` count as singular only so that the operand they do not pick contributes a
/// strong zero; their partials are 0, ½ or 1, never infinite.)
fn finite_where_singular(op: Opcode) -> bool {
    !matches!(
        op,
        Opcode::Ln
            | Opcode::Log1p
            | Opcode::Log2
            | Opcode::Log10
            | Opcode::Atanh
            | Opcode::FDiv
            | Opcode::Powi
            | Opcode::Min
            | Opcode::Max
    )
}

/// The constant operands a function defines.
fn constants(func: &Function) -> HashMap<Value, Imm> {
    func.blocks
        .iter()
        .flat_map(|b| &b.insts)
        .filter(|inst| matches!(inst.op, Opcode::FConst | Opcode::IConst) && inst.results.len() == 1)
        .map(|inst| (inst.results[0], inst.imm))
        .collect()
}

fn is_singular(module: &Module, constants: &HashMap<Value, Imm>, inst: &InstData, custom: &CustomRules<'_>) -> bool {
    let constant = |k: usize| inst.args.get(k).and_then(|a| constants.get(a)).copied();
    match inst.op {
        // 1/b and a/b² are finite for a nonzero finite constant b.
        Opcode::FDiv => !matches!(constant(1), Some(Imm::F64(b)) if b != 0.0 && b.is_finite()),
        // n x^(n-1) is finite for finite x when n ≥ 0 (n = 0 gives 0 · x^(-1) = 0 strongly).
        Opcode::Powi => !matches!(constant(1), Some(Imm::I64(n)) if n >= 0),
        // They pick: the other operand's partial is 0, and must stay 0 against an infinite or
        // NaN (co)tangent (a quotient by zero on the side not picked).
        Opcode::Min | Opcode::Max => true,
        Opcode::Call => match inst.imm {
            Imm::Callee(callee) => custom.rule_for(module, callee).is_some(),
            _ => false,
        },
        op => has_singular_partials(op),
    }
}

/// Which functions of `module` `root` calls, directly or not (`root` included).
fn reachable(module: &Module, root: FuncId) -> Vec<bool> {
    let mut reached = vec![false; module.functions.len()];
    let mut stack = vec![root];
    while let Some(f) = stack.pop() {
        match reached.get_mut(f.index()) {
            Some(seen) if !*seen => *seen = true,
            _ => continue,
        }
        for inst in module.func(f).blocks.iter().flat_map(|b| &b.insts) {
            if let (Opcode::Call, Imm::Callee(Callee::Func(callee))) = (inst.op, &inst.imm) {
                stack.push(*callee);
            }
        }
    }
    reached
}
