//! Native symbols the generated code calls: the IR math library (the very `extern "C"`
//! functions of `jitdiff_ir::math` the interpreter calls, so results are bit-identical) and
//! shims for the libcalls Cranelift emits on hosts without SSE4.1/FMA.
//!
//! Every symbol a module can reference is registered with the `JITBuilder` before any code is
//! defined: `finalize_definitions` panics on an unresolved name instead of returning an error.

use cranelift_jit::JITBuilder;
use jitdiff_ir::{MathFn, OP_TABLE, Opcode};

/// The symbol name under which the math function of `op` is registered.
pub(crate) fn math_symbol(op: Opcode) -> String {
    format!("jitdiff_math_{}", op.spelling())
}

extern "C" fn trunc_shim(x: f64) -> f64 {
    x.trunc()
}
extern "C" fn nearbyint_shim(x: f64) -> f64 {
    x.round_ties_even()
}
extern "C" fn fma_shim(a: f64, b: f64, c: f64) -> f64 {
    a.mul_add(b, c)
}

/// Register the runtime helpers native code calls: the closure trampoline and the tape's grow.
pub(crate) fn register_runtime(jb: &mut JITBuilder) {
    type Trampoline = extern "C" fn(*const crate::closure::ClosureCtx, *const u64, *mut u64) -> i32;
    jb.symbol(crate::closure::TRAMPOLINE_SYMBOL, crate::closure::closure_trampoline as Trampoline as *const u8);
    type Grow = extern "C" fn(*mut crate::tape::TapeState) -> i32;
    jb.symbol(crate::tape::GROW_SYMBOL, crate::tape::tape_grow as Grow as *const u8);
    type Alloc = extern "C" fn(*mut crate::tape::TapeState, i64) -> *mut f64;
    jb.symbol(crate::tape::ALLOC_SYMBOL, crate::tape::local_alloc as Alloc as *const u8);
    type Mark = extern "C" fn(*mut crate::tape::TapeState) -> u64;
    jb.symbol(crate::tape::MARK_SYMBOL, crate::tape::local_mark as Mark as *const u8);
    type Release = extern "C" fn(*mut crate::tape::TapeState, u64);
    jb.symbol(crate::tape::RELEASE_SYMBOL, crate::tape::local_release as Release as *const u8);
}

/// Register every math function of the op table and the float libcalls.
pub(crate) fn register_math(jb: &mut JITBuilder) {
    for info in OP_TABLE {
        let ptr = match info.math {
            MathFn::None => continue,
            MathFn::Unary(f) => f as *const u8,
            MathFn::Binary(f) => f as *const u8,
            MathFn::Powi(f) => f as *const u8,
            MathFn::Ternary(f) => f as *const u8,
        };
        jb.symbol(math_symbol(info.opcode), ptr);
    }
    // Names as `cranelift_module::default_libcall_names` spells them.
    jb.symbol("floor", jitdiff_ir::math::floor as extern "C" fn(f64) -> f64 as *const u8);
    jb.symbol("ceil", jitdiff_ir::math::ceil as extern "C" fn(f64) -> f64 as *const u8);
    jb.symbol("trunc", trunc_shim as extern "C" fn(f64) -> f64 as *const u8);
    jb.symbol("nearbyint", nearbyint_shim as extern "C" fn(f64) -> f64 as *const u8);
    jb.symbol("fma", fma_shim as extern "C" fn(f64, f64, f64) -> f64 as *const u8);
}
