//! The module `GradientFn` compiles for `value_and_grad`: the fused function with its forward
//! function and pullback inlined, so that the state passed once per call from one to the other
//! (a loop's trip count, values recorded outside loops) never goes through the tape.
//!
//! The derived `f_value_and_grad` calls `f_fwd` and then `f_pullback`: every call pays two
//! calls and lends the thread's tape, and the pullback pops what the forward function pushed
//! just before returning. Inlined, those pushes and pops lie on one straight stretch of code
//! and [`passes::forward_tape_entries`] pairs them; a gradient whose state is all once per call
//! (Extended Rosenbrock: its loop's trip count) then needs no tape, and a call costs what its
//! arithmetic costs (Rosenbrock n = 10: 52 → 41 ns per call through `CompiledFn::call_into`).

use crate::ad::{self, ReverseDerivative};
use jitdiff_ir::passes::{self, retain_reachable};
use jitdiff_ir::{Callee, FuncId, Function, Imm, Module, Opcode};

/// Inline only while forward function and pullback together stay below this many
/// instructions: the register allocator and optimisation level are chosen by the size of the
/// largest function (`RegAlloc::Auto`), and beyond it a call's cost does not matter.
const INLINE_LIMIT: usize = 1_000;

/// The module to compile for the fused `value_and_grad` (named `name`), and the shadow-slice
/// declarations of its differential parameters, `(function, differential, primal)` as
/// [`JitOptions::shadow_slice`](crate::jit::JitOptions::shadow_slice) takes them.
pub(crate) fn value_and_grad_module(derived: &ReverseDerivative, name: &str) -> (Module, Vec<(String, usize, usize)>) {
    let mut module = retain_reachable(&derived.module, &[name]);
    let ids = (module.func_id(name), module.func_id(&derived.forward), module.func_id(&derived.pullback));
    let (Some(fused), Some(forward), Some(pullback)) = ids else { return (module, vec![]) };
    let shadows = shadows(&module, fused, pullback, derived);
    // The pullback as it was before its accumulations were tied to reverse order, finished
    // below: in the fused function where its loops fuse with the forward loops, else alone.
    let in_order = derived.pullback_in_order.as_ref().and_then(|f| import(&derived.module, &module, f));
    let has_in_order = in_order.is_some();
    if let Some(function) = in_order {
        module.functions[pullback.index()] = function;
    }
    // The calls the forward function and pullback make (of the derivatives of the functions
    // the user's function calls: in GMM, per data point and cluster, 10,000 calls per gradient
    // at d = 2) are inlined where they fit: a call costs more than a small body.
    passes::inline_calls(&mut module, |callee, _| callee != forward && callee != pullback, passes::INLINE_LIMIT);
    let size = |id: FuncId| module.func(id).blocks.iter().map(|b| b.insts.len() + 1).sum::<usize>();
    if size(forward) + size(pullback) <= INLINE_LIMIT {
        passes::inline_sites(
            &mut module,
            |site| site.caller_id == fused && (site.callee_id == forward || site.callee_id == pullback),
            2 * INLINE_LIMIT,
        );
        let Module { tables, functions, .. } = &mut module;
        let function = &mut functions[fused.index()];
        if passes::forward_tape_entries(function) {
            passes::optimize_function_in(function, tables);
        }
        if has_in_order {
            if ad::fuse_reversed_loops(function) {
                // The reversed body loads again what the forward body loaded.
                passes::optimize_function_in(function, tables);
                if passes::remove_redundant_loads(function) {
                    passes::optimize_function_in(function, tables);
                }
            }
            ad::finish_pullback(function);
        }
        module = retain_reachable(&module, &[name]);
    }
    if has_in_order && let Some(pullback) = module.func_id(&derived.pullback) {
        ad::finish_pullback(&mut module.functions[pullback.index()]);
    }
    (module, shadows)
}

/// What [`GradientFn`](crate::GradientFn) compiles for `value_and_grad` of a reverse-mode
/// derivative: the fused function, with its forward function and pullback inlined where they
/// are small enough, the once-per-call tape entries passed directly, and a forward loop fused
/// with its reversed loop where the reversed iterations commute (docs/reverse.md); `None` when
/// the function has no `f64` result (or building it failed, which `GradientFn::prepare`
/// reports). `jitdiff show --mode vjp` prints it.
///
/// ```
/// use jitdiff::ad::derive_reverse;
/// use jitdiff::ir::parse_module;
/// let src = "func @f(x: slice) -> f64 {\nentry:\n    n = len x\n    zero = iconst 0\n    one = iconst 1\n    s0 = fconst 0.0\n    jump head(zero, s0)\nhead(i: i64, s: f64):\n    more = icmp lt i, n\n    br more, body, done\nbody:\n    xi = load x, i\n    sq = fmul xi, xi\n    s2 = fadd s, sq\n    i2 = iadd i, one\n    jump head(i2, s2)\ndone:\n    ret s\n}\n";
/// let derived = derive_reverse(&parse_module(src).unwrap(), "f", &[true]).unwrap();
/// let compiled = jitdiff::value_and_grad_ir(&derived).unwrap();
/// let text = jitdiff::ir::print_module(&compiled);
/// // One sweep: the sum and its gradient in the same loop, no call, no tape.
/// assert!(!text.contains("call") && !text.contains("tpush"), "{text}");
/// ```
pub fn value_and_grad_ir(derived: &ReverseDerivative) -> Option<Module> {
    let name = derived.value_and_grad.as_ref()?;
    // `None` too if building it panicked (a bug, which `GradientFn::prepare` reports as an
    // error naming the function).
    jitdiff_ir::contain_panics(|| value_and_grad_module(derived, name).0).ok()
}

/// `function`, whose calls and table reads refer to `source`, with them referring to the same
/// functions, externs and tables of `target` (found by name); `None` when one is missing.
fn import(source: &Module, target: &Module, function: &Function) -> Option<Function> {
    let mut function = function.clone();
    for inst in function.blocks.iter_mut().flat_map(|b| &mut b.insts) {
        inst.imm = match inst.imm {
            Imm::Callee(Callee::Func(id)) => Imm::Callee(Callee::Func(target.func_id(&source.func(id).name)?)),
            Imm::Callee(Callee::Extern(id)) => {
                Imm::Callee(Callee::Extern(target.extern_id(&source.externs.get(id.index())?.name)?))
            }
            Imm::Table(id) => Imm::Table(target.table_id(&source.table(id)?.name)?),
            other => other,
        };
    }
    Some(function)
}

/// The fused function passes its differential slices straight to the pullback, whose
/// differentials `derived.differentials` lists: each is a shadow of the primal slice the call
/// passes in the matching position, when both are the fused function's own parameters.
fn shadows(
    module: &Module,
    fused: FuncId,
    pullback: FuncId,
    derived: &ReverseDerivative,
) -> Vec<(String, usize, usize)> {
    let function = module.func(fused);
    let Some(call) = function
        .blocks
        .iter()
        .flat_map(|b| &b.insts)
        .find(|inst| inst.op == Opcode::Call && inst.imm == Imm::Callee(Callee::Func(pullback)))
    else {
        return vec![];
    };
    let position = |k: usize| call.args.get(k).and_then(|a| function.params.iter().position(|p| p == a));
    derived
        .differentials
        .iter()
        .filter(|(f, _, _)| *f == derived.pullback)
        .filter_map(|&(_, differential, primal)| {
            Some((function.name.clone(), position(differential)?, position(primal)?))
        })
        .collect()
}
