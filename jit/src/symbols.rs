//! Native symbols the generated code calls: the IR math library (the very `extern "C"`
//! functions of `jitdiff_ir::math` the interpreter calls, or the C math library's functions
//! they wrap where those give the same bits, so results are bit-identical) and shims for the
//! libcalls Cranelift emits on hosts without SSE4.1/FMA.
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
    type Grow = extern "C" fn(*mut crate::tape::TapeState, u64) -> i32;
    jb.symbol(crate::tape::GROW_SYMBOL, crate::tape::tape_grow as Grow as *const u8);
    type Alloc = extern "C" fn(*mut crate::tape::TapeState, i64) -> *mut f64;
    jb.symbol(crate::tape::ALLOC_SYMBOL, crate::tape::local_alloc as Alloc as *const u8);
    type Mark = extern "C" fn(*mut crate::tape::TapeState) -> u64;
    jb.symbol(crate::tape::MARK_SYMBOL, crate::tape::local_mark as Mark as *const u8);
    type Release = extern "C" fn(*mut crate::tape::TapeState, u64);
    jb.symbol(crate::tape::RELEASE_SYMBOL, crate::tape::local_release as Release as *const u8);
}

/// A function of the C math library the generated code may call in place of the op table's.
#[derive(Clone, Copy)]
enum Libm {
    Unary(unsafe extern "C" fn(f64) -> f64),
    Binary(unsafe extern "C" fn(f64, f64) -> f64),
}

/// The C math library's own functions for the op table's math functions that are thin wrappers
/// of them (`jitdiff_ir::math::exp` is `f64::exp`, which is a call of libm's `exp`): called
/// directly, a call skips the wrapper's jump — on `exp`-bound code such as a log-sum-exp, 10%
/// of the primal's time. Only those that give the op table's function's bits on a spread of
/// arguments (checked once per process, [`libm_direct`]), so that native code and interpreter
/// still never differ.
impl Libm {
    /// The function at `x` (a unary one) or `(x, y)`.
    fn at(self, x: f64, y: f64) -> f64 {
        match self {
            // SAFETY: a C math library function of this signature (`libm_candidates`): a pure
            // function of its arguments, defined for every `f64`.
            Libm::Unary(g) => unsafe { g(x) },
            // SAFETY: as above.
            Libm::Binary(g) => unsafe { g(x, y) },
        }
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn libm_candidates() -> Vec<(Opcode, Libm)> {
    // SAFETY: the declarations are the C standard's (`math.h`), from the libm every Rust
    // program on this target links: pure functions of their arguments.
    unsafe extern "C" {
        fn exp(x: f64) -> f64;
        fn log(x: f64) -> f64;
        fn sin(x: f64) -> f64;
        fn cos(x: f64) -> f64;
        fn tan(x: f64) -> f64;
        fn tanh(x: f64) -> f64;
        fn log1p(x: f64) -> f64;
        fn expm1(x: f64) -> f64;
        fn atan(x: f64) -> f64;
        fn asin(x: f64) -> f64;
        fn acos(x: f64) -> f64;
        fn sinh(x: f64) -> f64;
        fn cosh(x: f64) -> f64;
        fn exp2(x: f64) -> f64;
        fn log2(x: f64) -> f64;
        fn log10(x: f64) -> f64;
        fn cbrt(x: f64) -> f64;
        fn pow(x: f64, y: f64) -> f64;
        fn atan2(y: f64, x: f64) -> f64;
        fn hypot(x: f64, y: f64) -> f64;
    }
    use Libm::{Binary, Unary};
    vec![
        (Opcode::Exp, Unary(exp)),
        (Opcode::Ln, Unary(log)),
        (Opcode::Sin, Unary(sin)),
        (Opcode::Cos, Unary(cos)),
        (Opcode::Tan, Unary(tan)),
        (Opcode::Tanh, Unary(tanh)),
        (Opcode::Log1p, Unary(log1p)),
        (Opcode::Expm1, Unary(expm1)),
        (Opcode::Atan, Unary(atan)),
        (Opcode::Asin, Unary(asin)),
        (Opcode::Acos, Unary(acos)),
        (Opcode::Sinh, Unary(sinh)),
        (Opcode::Cosh, Unary(cosh)),
        (Opcode::Exp2, Unary(exp2)),
        (Opcode::Log2, Unary(log2)),
        (Opcode::Log10, Unary(log10)),
        (Opcode::Cbrt, Unary(cbrt)),
        (Opcode::Pow, Binary(pow)),
        (Opcode::Atan2, Binary(atan2)),
        (Opcode::Hypot, Binary(hypot)),
    ]
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn libm_candidates() -> Vec<(Opcode, Libm)> {
    vec![]
}

/// The libm functions (of [`libm_candidates`]) that agree bit for bit with the op table's on
/// arguments across every range their implementations distinguish (signed zeros, tiny,
/// ordinary, large, huge, infinite, NaN); computed once per process.
fn libm_direct() -> &'static [(Opcode, Libm)] {
    static DIRECT: std::sync::OnceLock<Vec<(Opcode, Libm)>> = std::sync::OnceLock::new();
    DIRECT.get_or_init(|| {
        const ARGS: [f64; 22] = [
            0.0,
            -0.0,
            1e-310,
            -2.5e-300,
            1e-9,
            0.25,
            -0.5,
            0.7,
            1.0,
            -1.0,
            1.5,
            2.0,
            -3.75,
            7.0,
            33.3,
            -100.5,
            709.5,
            -745.2,
            1e22,
            -3e300,
            f64::INFINITY,
            f64::NAN,
        ];
        let same = |a: f64, b: f64| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
        libm_candidates()
            .into_iter()
            .filter(|&(op, libm)| {
                let Some(info) = OP_TABLE.iter().find(|i| i.opcode == op) else { return false };
                match (info.math, libm) {
                    (MathFn::Unary(f), Libm::Unary(_)) => {
                        ARGS.iter().chain(&ARGS.map(|x| -x)).all(|&x| same(f(x), libm.at(x, 0.0)))
                    }
                    (MathFn::Binary(f), Libm::Binary(_)) => {
                        ARGS.iter().all(|&x| ARGS.iter().all(|&y| same(f(x, y), libm.at(x, y))))
                    }
                    _ => false,
                }
            })
            .collect()
    })
}

/// Register every math function of the op table and the float libcalls.
pub(crate) fn register_math(jb: &mut JITBuilder) {
    let direct = libm_direct();
    for info in OP_TABLE {
        let ptr = match (direct.iter().find(|(op, _)| *op == info.opcode), info.math) {
            (_, MathFn::None) => continue,
            (Some((_, Libm::Unary(g))), _) => *g as *const u8,
            (Some((_, Libm::Binary(g))), _) => *g as *const u8,
            (None, MathFn::Unary(f)) => f as *const u8,
            (None, MathFn::Binary(f)) => f as *const u8,
            (None, MathFn::Powi(f)) => f as *const u8,
            (None, MathFn::Ternary(f)) => f as *const u8,
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
    fn the_math_library_is_called_directly_where_it_is_the_op_tables() {
        let direct: Vec<_> = super::libm_direct().iter().map(|(op, _)| *op).collect();
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        for op in [jitdiff_ir::Opcode::Exp, jitdiff_ir::Opcode::Ln, jitdiff_ir::Opcode::Pow] {
            assert!(direct.contains(&op), "{op:?} is not called directly: {direct:?}");
        }
        // Every one agrees with the op table's function (what the interpreter calls) beyond the
        // arguments it was chosen on: bit patterns spread over every exponent and sign.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            f64::from_bits(state ^ (state >> 29))
        };
        for &(op, libm) in super::libm_direct() {
            let info = jitdiff_ir::OP_TABLE.iter().find(|i| i.opcode == op).expect("in the op table");
            for _ in 0..20_000 {
                let (x, y) = (next(), next());
                // Also arguments where the functions do most of their work.
                let (x, y) = if x.to_bits() % 3 == 0 { (x.abs().log2() % 40.0, y.abs().log2() % 4.0) } else { (x, y) };
                let (ours, theirs) = match (info.math, libm) {
                    (jitdiff_ir::MathFn::Unary(f), super::Libm::Unary(_)) => (f(x), libm.at(x, 0.0)),
                    (jitdiff_ir::MathFn::Binary(f), super::Libm::Binary(_)) => (f(x, y), libm.at(x, y)),
                    _ => panic!("{op:?}: arity"),
                };
                assert!(
                    ours.to_bits() == theirs.to_bits() || (ours.is_nan() && theirs.is_nan()),
                    "{op:?}({x:e}, {y:e}): {ours:e} vs {theirs:e}"
                );
            }
        }
    }

    #[test]
    fn the_fused_sine_and_cosine_are_the_math_functions() {
        assert!(super::sin_cos_is_exact());
        let both = super::sin_cos(0.5);
        assert_eq!((both.sin, both.cos), (0.5f64.sin(), 0.5f64.cos()));
    }
}
