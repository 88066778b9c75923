//! Activity analysis: which values carry a tangent (or cotangent).
//!
//! A value is *active* when it is a float (or, for slices, a differentiated slice parameter)
//! that depends on a differentiated input through operations whose derivative is not identically
//! zero. A data table (`table @y`) is a constant: never active, nor is anything loaded from it. Integers and booleans are never active (`NoTangent`); piecewise-constant results such as
//! `floor x` are not active either (`ZeroTangent`), so nothing downstream of them pays for
//! derivatives. A local array (`alloc`) is active when an active value is stored into it, or when
//! it is passed to a call that has an active argument (the callee may store into it).

use jitdiff_ir::{Callee, FuncId, Function, Imm, Module, Opcode, Terminator, Type, Value};
use rustc_hash::FxHashSet as HashSet;

/// The active values of one function, given which parameters are differentiated.
#[derive(Clone, Debug, Default)]
pub struct Activity {
    active: HashSet<Value>,
}

impl Activity {
    /// Analyse `func` with `wrt[i]` saying whether parameter `i` is differentiated. Only `f64`
    /// and slice parameters can be; other flags are ignored here (the transforms reject them).
    pub fn analyse(func: &Function, wrt: &[bool]) -> Activity {
        Activity::analyse_with_tape(func, wrt, &HashSet::default())
    }

    /// [`Activity::analyse`] for forward mode over a reverse-mode derivative: every `f64`
    /// popped from the tape is active (its tangent was pushed with it), and so are the results
    /// of calls to `tape_users` (functions that touch the tape, see [`tape_users`]) — a pullback
    /// called with constant cotangents still returns values that depend on the tape.
    pub fn analyse_with_tape(func: &Function, wrt: &[bool], tape_users: &HashSet<FuncId>) -> Activity {
        Activity::analyse_in(func, wrt, tape_users, true)
    }

    /// [`Activity::analyse`] for forward mode over a pullback whose tape holds constants (the
    /// forward run that filled it is not differentiated): popped values are inactive.
    pub fn analyse_constant_tape(func: &Function, wrt: &[bool]) -> Activity {
        Activity::analyse_in(func, wrt, &HashSet::default(), false)
    }

    fn analyse_in(func: &Function, wrt: &[bool], tape_users: &HashSet<FuncId>, pops_active: bool) -> Activity {
        let mut active: HashSet<Value> = HashSet::default();
        for (&p, &on) in func.params.iter().zip(wrt) {
            if on && (func.ty(p) == Type::F64 || func.ty(p).is_slice()) {
                active.insert(p);
            }
        }
        let allocs: HashSet<Value> = func
            .blocks
            .iter()
            .flat_map(|b| &b.insts)
            .filter(|i| i.op == Opcode::Alloc)
            .flat_map(|i| i.results.clone())
            .collect();
        // `powi x, 0` and `pow x, ±0.0` are 1 whatever x is (even infinite or NaN): constants,
        // whose derivative is 0 in both modes, also where x's own derivative is not finite.
        let zero_exponents: HashSet<Value> = func
            .blocks
            .iter()
            .flat_map(|b| &b.insts)
            .filter(|i| {
                matches!(i.imm, Imm::I64(0)) && i.op == Opcode::IConst
                    || matches!(i.imm, Imm::F64(z) if z == 0.0) && i.op == Opcode::FConst
            })
            .flat_map(|i| i.results.clone())
            .collect();
        let constant_power = |inst: &jitdiff_ir::InstData| {
            matches!(inst.op, Opcode::Powi | Opcode::Pow)
                && inst.args.get(1).is_some_and(|e| zero_exponents.contains(e))
        };
        // Forward data flow to a fixpoint; loops need several rounds.
        let mut changed = true;
        while changed {
            changed = false;
            for block in &func.blocks {
                for inst in &block.insts {
                    // A local array becomes active through what is written into it — by a
                    // callee with active arguments, or one whose tape reads are active (a
                    // pullback under forward mode, called with constant cotangents, still
                    // writes active values into the adjoint array it is given).
                    let writes_active = match (inst.op, inst.imm) {
                        (Opcode::Store | Opcode::VStore, _) => active.contains(&inst.args[2]),
                        (Opcode::Call, Imm::Callee(Callee::Func(id))) if tape_users.contains(&id) => true,
                        (Opcode::Call, _) => inst.args.iter().any(|a| active.contains(a)),
                        _ => false,
                    };
                    if writes_active {
                        for a in inst.args.iter().filter(|a| allocs.contains(a)) {
                            changed |= active.insert(*a);
                        }
                    }
                    if inst.results.is_empty()
                        || inst.results.iter().all(|r| active.contains(r))
                        || constant_power(inst)
                    {
                        continue;
                    }
                    let tape_value = match (inst.op, inst.imm) {
                        (Opcode::TPop, _) => pops_active,
                        (Opcode::Call, Imm::Callee(Callee::Func(id))) => tape_users.contains(&id),
                        _ => false,
                    };
                    if tape_value || produces_active(inst.op, &inst.args, &active) {
                        for &r in &inst.results {
                            if func.ty(r).is_float_like() && active.insert(r) {
                                changed = true;
                            }
                        }
                    }
                }
                if let Some(term) = &block.term {
                    for call in term.successors() {
                        let params = &func.block(call.block).params;
                        for (&arg, &param) in call.args.iter().zip(params) {
                            if active.contains(&arg) && func.ty(param).is_float_like() && active.insert(param) {
                                changed = true;
                            }
                        }
                    }
                }
            }
        }
        Activity { active }
    }

    /// Does `v` carry a tangent?
    pub fn is_active(&self, v: Value) -> bool {
        self.active.contains(&v)
    }

    /// For reverse mode: keep active only the values whose cotangent can be non-zero — those
    /// that reach a returned value, a stored value, a call or another side effect through
    /// differentiable operations. The others (a float loaded only to be converted to an index
    /// with `ftoi`, `sin x` feeding only a comparison) become inactive, so the pullback
    /// neither reverses them nor records their partials or load indices. Parameters and slices
    /// stay as they are (their differentials are the pullback's interface).
    pub fn keep_useful(mut self, func: &Function) -> Activity {
        let mut useful: HashSet<Value> = HashSet::default();
        for block in &func.blocks {
            for inst in block.insts.iter().filter(|i| i.op.has_side_effects()) {
                useful.extend(inst.args.iter().filter(|a| self.active.contains(a)));
            }
            if let Some(Terminator::Return(values)) = &block.term {
                useful.extend(values.iter().filter(|v| self.active.contains(v)));
            }
        }
        // Backward data flow to a fixpoint: an instruction whose result is useful makes its
        // active operands useful, a useful block parameter the arguments jumps pass to it.
        let mut changed = true;
        while changed {
            changed = false;
            for block in func.blocks.iter().rev() {
                if let Some(term) = &block.term {
                    for call in term.successors() {
                        let params = &func.block(call.block).params;
                        for (&arg, param) in call.args.iter().zip(params) {
                            if useful.contains(param) && self.active.contains(&arg) && useful.insert(arg) {
                                changed = true;
                            }
                        }
                    }
                }
                for inst in block.insts.iter().rev() {
                    if inst.results.iter().any(|r| useful.contains(r)) {
                        for &a in &inst.args {
                            if self.active.contains(&a) && useful.insert(a) {
                                changed = true;
                            }
                        }
                    }
                }
            }
        }
        let params: HashSet<Value> = func.params.iter().copied().collect();
        self.active.retain(|v| useful.contains(v) || params.contains(v) || !func.ty(*v).is_float_like());
        self
    }
}

/// Would an instruction with these operands produce active results?
fn produces_active(op: Opcode, args: &[Value], active: &HashSet<Value>) -> bool {
    let any = |vals: &[Value]| vals.iter().any(|v| active.contains(v));
    match op {
        // Piecewise constant or not float-valued: never active.
        op if jitdiff_rules::is_piecewise_constant(op) => false,
        Opcode::IToF | Opcode::FToI | Opcode::Len => false,
        Opcode::FCmp | Opcode::ICmp | Opcode::And | Opcode::Or | Opcode::Not => false,
        Opcode::FConst | Opcode::IConst | Opcode::BConst | Opcode::Table => false,
        // select: the condition carries no derivative; the arms do.
        Opcode::Select => any(&args[1..]),
        Opcode::Load | Opcode::VLoad => any(&args[..1]),
        _ => any(args),
    }
}

/// The functions of `module` that push or pop the tape, directly or through calls. Forward mode
/// always calls their derived versions (with zero tangents if need be), so that every `f64` on
/// the tape has its tangent beside it.
pub fn tape_users(module: &Module) -> HashSet<FuncId> {
    let mut users: HashSet<FuncId> = HashSet::default();
    let mut changed = true;
    while changed {
        changed = false;
        for (id, f) in module.func_ids().zip(&module.functions) {
            if users.contains(&id) {
                continue;
            }
            let uses = f.blocks.iter().flat_map(|b| &b.insts).any(|i| match (i.op, i.imm) {
                (Opcode::TPush | Opcode::TPop | Opcode::TSplit | Opcode::TRejoin, _) => true,
                (Opcode::Call, Imm::Callee(Callee::Func(callee))) => users.contains(&callee),
                _ => false,
            });
            if uses {
                users.insert(id);
                changed = true;
            }
        }
    }
    users
}

#[cfg(test)]
mod tests {
    use super::Activity;
    use jitdiff_ir::{Value, parse_module};

    #[test]
    fn values_whose_cotangent_is_zero_are_not_kept() {
        let src = "func @f(x: f64, a: mslice) -> f64 {\nentry:\n    s = sin x\n    z = fconst 0.0\n    c = fcmp gt s, z\n    i = iconst 0\n    t = load a, i\n    k = ftoi t\n    y = fmul x, x\n    r = select c, y, x\n    jump next(r, s)\nnext(p: f64, q: f64):\n    ret p\n}\n";
        let m = parse_module(src).unwrap();
        let f = &m.functions[0];
        let defined: Vec<Value> = f
            .params
            .iter()
            .copied()
            .chain(
                f.blocks.iter().flat_map(|b| b.params.iter().chain(b.insts.iter().flat_map(|i| &i.results))).copied(),
            )
            .collect();
        let value = |name: &str| {
            *defined.iter().find(|v| f.values[v.index()].name.as_deref() == Some(name)).expect("a named value")
        };
        let all = Activity::analyse(f, &[true, true]);
        assert!(["s", "t", "q", "y", "r", "p"].iter().all(|v| all.is_active(value(v))));
        let useful = all.keep_useful(f);
        for v in ["s", "t", "q"] {
            assert!(!useful.is_active(value(v)), "{v} reaches no result");
        }
        for v in ["x", "a", "y", "r", "p"] {
            assert!(useful.is_active(value(v)), "{v} reaches the result or is a parameter");
        }
    }
}
