//! Calls of the user's own functions inlined before a handle compiles them. A call costs more
//! than a short body: arguments and results pass by the calling convention, every float
//! register is caller-saved, and the caller checks a status. The JIT inlines only calls whose
//! callee cannot fail (`jitdiff_jit::compile` keeps every fault at the interpreter's site); a
//! handle may inline any call, because it reports a fault by replaying the user's function in
//! the interpreter (`replay.rs`), never by the site the native code names.
//!
//! [`PrimalFn`](crate::PrimalFn), [`ForwardFn`](crate::ForwardFn) and [`HvpFn`](crate::HvpFn)
//! use it (reverse mode inlines after derivation, `fused.rs`). GMM's objective calls
//! `@main_term` once per data point and component (5,000 calls per evaluation at d = 2, K = 5):
//! inlined, its primal runs 1.12-1.40× faster, its JVP and HVP up to 1.6× (docs/jit.md).

use jitdiff_ir::passes::{has_recursion, inline_calls, retain_reachable};
use jitdiff_ir::{Callee, Imm, MAX_CALL_DEPTH, Module, Opcode};
use jitdiff_jit::RegAlloc;
use std::borrow::Cow;

/// A caller grows to at most this many instructions by inlining: well below the size at which
/// the JIT switches the whole module to its single-pass register allocator and no mid-end
/// ([`RegAlloc::AUTO_SINGLE_PASS_THRESHOLD`], which also counts terminators and the values
/// crossing calls), where its code would run several times slower.
const GROWTH_LIMIT: usize = RegAlloc::AUTO_SINGLE_PASS_THRESHOLD / 2;

/// `module` with the calls of `root` and of what it calls inlined where they fit, and the
/// functions no longer called dropped; `module` itself when it has no call to inline.
///
/// Only in a module without recursion and with fewer functions than [`MAX_CALL_DEPTH`]: then no
/// chain of calls can reach the call-depth limit, so removing frames changes no run (with
/// recursion, a run that fails at the limit in the interpreter could succeed natively).
pub(crate) fn inline_user_calls<'m>(module: &'m Module, root: &str) -> Cow<'m, Module> {
    let calls_a_function = module
        .functions
        .iter()
        .flat_map(|f| &f.blocks)
        .flat_map(|b| &b.insts)
        .any(|i| matches!((i.op, i.imm), (Opcode::Call, Imm::Callee(Callee::Func(_)))));
    if !calls_a_function || module.functions.len() >= MAX_CALL_DEPTH || has_recursion(module) {
        return Cow::Borrowed(module);
    }
    let mut inlined = module.clone();
    inline_calls(&mut inlined, |_, _| true, GROWTH_LIMIT);
    Cow::Owned(retain_reachable(&inlined, &[root]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use jitdiff_ir::parse_module;

    const CALLS: &str = "func @f(x: slice) -> f64 {\nentry:\n    i = iconst 0\n    a = call @g(x, i)\n    b = call @g(x, i)\n    c = fadd a, b\n    ret c\n}\nfunc @g(x: slice, i: i64) -> f64 {\nentry:\n    v = load x, i\n    ret v\n}\n";

    #[test]
    fn calls_of_a_function_that_can_fail_are_inlined() {
        let m = parse_module(CALLS).unwrap();
        let inlined = inline_user_calls(&m, "f");
        assert!(matches!(inlined, Cow::Owned(_)));
        assert_eq!(inlined.functions.len(), 1, "{}", jitdiff_ir::print_module(&inlined));
        assert!(!jitdiff_ir::print_module(&inlined).contains("call"));
    }

    #[test]
    fn recursion_anywhere_keeps_every_call() {
        let text = format!(
            "{CALLS}func @r(n: i64) -> i64 {{\nentry:\n    z = iconst 0\n    c = icmp le n, z\n    br c, done, more\nmore:\n    one = iconst 1\n    m = isub n, one\n    k = call @r(m)\n    ret k\ndone:\n    ret z\n}}\n"
        );
        let m = parse_module(&text).unwrap();
        assert!(matches!(inline_user_calls(&m, "f"), Cow::Borrowed(_)));
    }
}
