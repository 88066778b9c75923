//! The numeric semantics of the math primitives, as plain `extern "C"` functions.
//!
//! The interpreter calls these functions and the JIT registers the very same function pointers as
//! native symbols, so library math gives bit-identical results in both. Operations Cranelift has
//! as instructions (sqrt, abs, floor, ceil, min, max) are defined here with the exact semantics the
//! JIT's inline lowering has.

/// `min(a, b) = if a < b { a } else { b }`: the x86 `minsd` rule. With a NaN operand the result
/// is `b`; `min(-0.0, 0.0)` is `0.0` (the second operand), by the same rule.
pub extern "C" fn min(a: f64, b: f64) -> f64 {
    if a < b { a } else { b }
}
/// `max(a, b) = if a > b { a } else { b }`: the x86 `maxsd` rule (see [`min`]).
pub extern "C" fn max(a: f64, b: f64) -> f64 {
    if a > b { a } else { b }
}
/// `x` to the integer power `n` by binary exponentiation; `powi(x, -n) = 1 / powi(x, n)`.
///
/// Defined here, rather than as Rust's `f64::powi`, so that the JIT can expand small constant
/// exponents inline into exactly the same multiplications.
pub extern "C" fn powi(x: f64, n: i64) -> f64 {
    let mut e = n.unsigned_abs();
    let mut base = x;
    let mut acc = 1.0;
    let mut first = true;
    while e > 0 {
        if e & 1 == 1 {
            // The first factor is taken as is, so powi(x, 1) == x and powi(x, 2) == x * x exactly.
            acc = if first { base } else { acc * base };
            first = false;
        }
        e >>= 1;
        if e > 0 {
            base *= base;
        }
    }
    if n < 0 { 1.0 / acc } else { acc }
}
/// `sign(x)`: -1, 0 or 1 (0 keeps the sign of zero; NaN gives NaN).
pub extern "C" fn sign(x: f64) -> f64 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else {
        x
    }
}

macro_rules! unary_std {
    ($($name:ident => $method:ident),* $(,)?) => {$(
        #[doc = concat!("`", stringify!($name), "(x)`, as Rust's `f64::", stringify!($method), "`.")]
        pub extern "C" fn $name(x: f64) -> f64 { x.$method() }
    )*};
}
unary_std! {
    sqrt => sqrt, exp => exp, ln => ln, sin => sin, cos => cos, tan => tan, tanh => tanh,
    abs => abs, log1p => ln_1p, expm1 => exp_m1, floor => floor, ceil => ceil, atan => atan,
    asin => asin, acos => acos, sinh => sinh, cosh => cosh, asinh => asinh, acosh => acosh, atanh => atanh,
    exp2 => exp2, log2 => log2, log10 => log10, cbrt => cbrt, round => round, trunc => trunc,
}

/// `fma(a, b, c) = a * b + c` with one rounding, as Rust's `f64::mul_add`.
pub extern "C" fn fma(a: f64, b: f64, c: f64) -> f64 {
    a.mul_add(b, c)
}
/// `pow(x, y)`, as Rust's `f64::powf`.
pub extern "C" fn pow(x: f64, y: f64) -> f64 {
    x.powf(y)
}
/// `atan2(y, x)`, as Rust's `f64::atan2`.
pub extern "C" fn atan2(y: f64, x: f64) -> f64 {
    y.atan2(x)
}
/// `frem(x, y)`: Rust's `x % y` (C's `fmod`): `x - trunc(x / y) * y` computed exactly, with the
/// sign of `x`; NaN for `y = 0` or infinite `x`.
pub extern "C" fn frem(x: f64, y: f64) -> f64 {
    x % y
}
/// `hypot(x, y)`, as Rust's `f64::hypot`.
pub extern "C" fn hypot(x: f64, y: f64) -> f64 {
    x.hypot(y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn powi_small_exponents_are_plain_products() {
        let x = 1.2345678901234567_f64;
        assert_eq!(powi(x, 0), 1.0);
        assert_eq!(powi(x, 1), x);
        assert_eq!(powi(x, 2), x * x);
        assert_eq!(powi(x, 3), x * (x * x));
        assert_eq!(powi(x, -2), 1.0 / (x * x));
        assert!((powi(x, 7) - x.powi(7)).abs() < 1e-14);
    }

    #[test]
    fn min_max_follow_the_minsd_rule() {
        assert_eq!(min(1.0, 2.0), 1.0);
        assert_eq!(max(1.0, 2.0), 2.0);
        assert!(min(f64::NAN, 1.0) == 1.0);
        assert!(min(1.0, f64::NAN).is_nan());
        assert!(max(-0.0, 0.0).is_sign_positive());
    }
}
