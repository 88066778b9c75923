//! The `f64` methods and functions, with Rust's semantics at the special values.

use crate::support::{Rng, SPECIAL, lower};
use crate::{dual, same};

dual! { UNARY:
    fn unary_a(x: f64) -> (f64, f64, f64) {
        (x.sin(), x.cos(), x.tan())
    }
    fn unary_b(x: f64) -> (f64, f64, f64) {
        (x.asin(), x.acos(), x.atan())
    }
    fn unary_c(x: f64) -> (f64, f64, f64) {
        (x.sinh(), x.cosh(), x.tanh())
    }
    fn unary_d(x: f64) -> (f64, f64, f64) {
        (x.exp(), x.exp_m1(), x.ln())
    }
    fn unary_e(x: f64) -> (f64, f64, f64) {
        (x.ln_1p(), x.sqrt(), x.abs())
    }
    fn unary_f(x: f64) -> (f64, f64, f64) {
        (x.floor(), x.ceil(), x.recip())
    }
    fn unary_g(x: f64) -> (f64, f64, f64) {
        (x.signum(), x.to_degrees(), x.to_radians())
    }
    fn unary_i(x: f64) -> (f64, f64, f64) {
        (x.asinh(), x.acosh(), x.atanh())
    }
    fn unary_h(x: f64) -> (bool, bool, bool) {
        (x.is_nan(), x.is_finite(), x.is_infinite())
    }
    fn call_syntax(x: f64) -> f64 {
        f64::sin(x) + f64::sqrt(f64::abs(x)) + f64::max(x, 1.0) + f64::powi(x, 3) + std::f64::consts::PI.cos()
    }
    fn sin_cos(x: f64) -> (f64, f64) {
        let (s, c) = x.sin_cos();
        (s, c)
    }
}

#[test]
fn unary_math_matches_std() {
    let m = lower(UNARY);
    let mut rng = Rng::new(17);
    let mut inputs: Vec<f64> = SPECIAL.to_vec();
    inputs.extend((0..200).map(|_| rng.range(-4.0, 4.0)));
    inputs.extend((0..50).map(|_| rng.range(-800.0, 800.0)));
    for &x in &inputs {
        same!(m, unary_a(x));
        same!(m, unary_b(x));
        same!(m, unary_c(x));
        same!(m, unary_d(x));
        same!(m, unary_e(x));
        same!(m, unary_f(x));
        same!(m, unary_g(x));
        same!(m, unary_h(x));
        same!(m, unary_i(x));
        same!(m, unary_i(x / 4.0));
        same!(m, unary_i(1.0 + x.abs()));
        same!(m, call_syntax(x));
        same!(m, sin_cos(x));
    }
}

dual! { SIGNS_AND_REMAINDERS:
    fn remainders(x: f64, y: f64) -> (f64, f64, f64) {
        (x % y, x.rem_euclid(y), x.div_euclid(y))
    }
    fn signs(x: f64, y: f64) -> (f64, bool, bool) {
        (x.copysign(y), y.is_sign_negative(), y.is_sign_positive())
    }
    fn int_powers(n: i64, m: u32) -> (i64, i64, u32) {
        (n.pow(0), n.pow(5), m.pow(3) + 2u32.pow(10))
    }
}

#[test]
fn remainders_signs_and_integer_powers_match_std() {
    let m = lower(SIGNS_AND_REMAINDERS);
    let mut rng = Rng::new(23);
    let mut inputs: Vec<f64> = SPECIAL.iter().copied().filter(|v| !v.is_nan()).collect();
    inputs.extend((0..40).map(|_| rng.range(-9.0, 9.0)));
    inputs.extend([7.5, -7.5, 2.5, -2.5, 1e300, -1e-300]);
    for &x in &inputs {
        for &y in &inputs {
            same!(m, remainders(x, y));
            same!(m, signs(x, y));
        }
    }
    for (n, k) in [(0i64, 0u32), (3, 2), (-7, 11), (1 << 12, 4), (-2, 7)] {
        same!(m, int_powers(n, k));
    }
}

dual! { BINARY:
    fn binary_a(x: f64, y: f64) -> (f64, f64, f64) {
        (x.atan2(y), x.hypot(y), x.powf(y))
    }
    fn binary_b(x: f64, y: f64) -> (f64, f64) {
        (x.min(y), x.max(y))
    }
    fn logs(x: f64, y: f64) -> f64 {
        x.log(y)
    }
    fn clamped(x: f64, lo: f64, hi: f64) -> f64 {
        x.clamp(lo, hi)
    }
    fn powers(x: f64, n: i32) -> (f64, f64, f64) {
        (x.powi(n), x.powi(2), x.powi(-3))
    }
}

#[test]
fn binary_math_matches_std() {
    let m = lower(BINARY);
    let mut rng = Rng::new(23);
    let mut inputs: Vec<f64> = SPECIAL.to_vec();
    inputs.extend((0..12).map(|_| rng.range(-3.0, 3.0)));
    for &x in &inputs {
        for &y in &inputs {
            same!(m, binary_a(x, y));
            same!(m, logs(x, y));
            // Rust leaves min/max of +0.0 and -0.0, and of two NaNs, unspecified.
            let zeros = x == 0.0 && y == 0.0;
            if !zeros && !(x.is_nan() && y.is_nan()) {
                same!(m, binary_b(x, y));
            }
        }
        for n in [-4i32, -1, 0, 1, 2, 5, 17] {
            same!(m, powers(x, n));
        }
        for (lo, hi) in [(-1.0, 1.0), (0.0, 0.0), (-f64::INFINITY, 2.0)] {
            same!(m, clamped(x, lo, hi));
        }
    }
}

dual! { INT_METHODS:
    fn int_methods(a: i64, b: i64, n: usize, k: usize) -> (i64, i64, usize) {
        (a.min(b) + a.max(b), a.abs() - i64::max(b, 0), n.min(k) * n.max(k))
    }
}

#[test]
fn integer_min_max_abs() {
    let m = lower(INT_METHODS);
    for (a, b) in [(0i64, 0i64), (-5, 3), (7, -9), (4, 4)] {
        for (n, k) in [(0usize, 1usize), (6, 2)] {
            same!(m, int_methods(a, b, n, k));
        }
    }
}

dual! { NEW_PRIMITIVES:
    fn logs_and_roots(x: f64) -> (f64, f64, f64) {
        (x.exp2(), x.log2(), x.log10())
    }
    fn roundings(x: f64) -> (f64, f64, f64) {
        (x.cbrt(), x.round(), x.trunc())
    }
    fn fused(x: f64, a: f64, b: f64) -> (f64, f64) {
        (x.mul_add(a, b), x.fract())
    }
}

#[test]
fn exp2_log2_log10_cbrt_round_trunc_fract_mul_add() {
    let m = lower(NEW_PRIMITIVES);
    let mut rng = Rng::new(29);
    let mut inputs: Vec<f64> = SPECIAL.to_vec();
    inputs.extend([0.5, -0.5, 1.5, -1.5, 2.5, 4503599627370495.5, -4503599627370497.0]);
    inputs.extend((0..100).map(|_| rng.range(-50.0, 50.0)));
    for &x in &inputs {
        same!(m, logs_and_roots(x));
        same!(m, roundings(x));
        for &(a, b) in &[(1.0, 0.0), (0.1, -0.3), (f64::INFINITY, 1.0), (1e308, -1e308)] {
            same!(m, fused(x, a, b));
        }
    }
}
