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

/// Sine and cosine of one argument, returned in registers (a struct of two doubles comes back
/// in `xmm0:xmm1` under the System V ABI, where Cranelift puts a function's two `f64` results).
#[repr(C)]
pub(crate) struct SinCos {
    sin: f64,
    cos: f64,
}

/// `(sin x, cos x)` by one call of glibc's `sincos`, which shares the argument reduction of the
/// two (elsewhere: the two math functions).
pub(crate) extern "C" fn sin_cos(x: f64) -> SinCos {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: the declaration is glibc's (`math.h`: `void sincos(double, double *,
        // double *)`), from the libm every Rust program on this target links.
        unsafe extern "C" {
            fn sincos(x: f64, sin: *mut f64, cos: *mut f64);
        }
        let (mut sin, mut cos) = (0.0, 0.0);
        // SAFETY: glibc's `sincos` writes one `f64` through each pointer; both point to locals
        // that live across the call.
        unsafe { sincos(x, &mut sin, &mut cos) };
        SinCos { sin, cos }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    SinCos { sin: jitdiff_ir::math::sin(x), cos: jitdiff_ir::math::cos(x) }
}

/// Does [`sin_cos`] give bit for bit what the interpreter's `sin` and `cos` give? Checked once
/// per process on arguments that take every path of the argument reduction (tiny, ordinary,
/// large, huge, special); the lowering fuses `sin`/`cos` pairs only if so, so that native code
/// and interpreter never differ.
pub(crate) fn sin_cos_is_exact() -> bool {
    static EXACT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *EXACT.get_or_init(|| {
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let special = [0.0, -0.0, 1e-300, 5e-324, 1e-8, 0.5, 1.0, 3.0, 1e5, 1e22, 1e300, f64::MAX, f64::INFINITY];
        let random = (0..4096).map(|k| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let unit = (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
            match k % 4 {
                0 => f64::from_bits(state),
                1 => unit * 20.0,
                2 => unit * 1e6,
                _ => unit * 1e-3,
            }
        });
        special.into_iter().chain(special.map(|x| -x)).chain([f64::NAN]).chain(random).all(|x| {
            let both = sin_cos(x);
            let same = |a: f64, b: f64| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
            same(both.sin, jitdiff_ir::math::sin(x)) && same(both.cos, jitdiff_ir::math::cos(x))
        })
    })
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
    jb.symbol(crate::lower::SIN_COS_SYMBOL, sin_cos as extern "C" fn(f64) -> SinCos as *const u8);
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_fused_sine_and_cosine_are_the_math_functions() {
        assert!(super::sin_cos_is_exact());
        let both = super::sin_cos(0.5);
        assert_eq!((both.sin, both.cos), (0.5f64.sin(), 0.5f64.cos()));
    }
}
