//! Operators, literals, casts, bindings and constants.

use crate::support::{Rng, SPECIAL, lower};
use crate::{dual, same};

dual! { FLOAT_OPS:
    fn float_ops(a: f64, b: f64) -> f64 {
        let s = a + b * 2.5 - (a - b) / 3.0;
        let t = -s * -(a / b);
        (s + t) * (1.0 - a) / (b + 0.25) - -a
    }
}

#[test]
fn float_arithmetic_is_bit_identical() {
    let m = lower(FLOAT_OPS);
    for &a in &SPECIAL {
        for &b in &SPECIAL {
            same!(m, float_ops(a, b));
        }
    }
}

dual! { INT_OPS:
    fn int_ops(a: i64, b: i64, n: usize) -> i64 {
        let q = a / b;
        let r = a % b;
        let k = n as i64 * 3 - 7;
        let w: i64 = -(q * r) + k % 5 - 0x10 + 1_000;
        w * 2 / 3
    }
}

#[test]
fn integer_arithmetic_divides_toward_zero() {
    let m = lower(INT_OPS);
    for a in [-17i64, -3, 0, 5, 22, 1_000_003] {
        for b in [-4i64, -1, 1, 3, 7] {
            for n in [0usize, 1, 9] {
                same!(m, int_ops(a, b, n));
            }
        }
    }
}

dual! { SATURATING:
    // `saturating_add`/`_sub` at and past each type's bounds.
    fn saturating(a: i64, b: i64, u: usize, v: usize, p: i32, q: i32) -> i64 {
        let s = a.saturating_add(b).saturating_sub(b / 2);
        let t = u.saturating_sub(v) as i64 + v.saturating_sub(u) as i64;
        let w = p.saturating_add(q) as i64 - p.saturating_sub(q) as i64 + q.saturating_sub(i32::MAX) as i64;
        let x = (u as u32).saturating_sub(v as u32) as i64;
        s.wrapping_add(t).wrapping_add(w).wrapping_add(x)
    }
}

#[test]
fn saturating_arithmetic_stops_at_the_types_bounds() {
    let m = lower(SATURATING);
    let wide = [i64::MIN, i64::MIN + 1, -5, 0, 7, i64::MAX - 1, i64::MAX];
    for a in wide {
        for b in wide {
            same!(m, saturating(a, b, 3, 10, 5, -2));
        }
    }
    for (u, v) in [(0usize, 0usize), (3, 10), (10, 3), (1 << 40, 1)] {
        for (p, q) in [(0i32, 0i32), (i32::MAX, 1), (i32::MIN, 1), (i32::MIN, -1), (-7, i32::MAX), (100, -100)] {
            same!(m, saturating(1, 2, u, v, p, q));
        }
    }
}

dual! { SMALL_INTS:
    fn small_ints(a: i32, b: u32, c: isize) -> i32 {
        let x = a * 2 + (b as i32) % 7;
        let y = c as i32;
        (x - y) / 3
    }
}

#[test]
fn narrower_integer_types_are_tracked() {
    let m = lower(SMALL_INTS);
    for (a, b, c) in [(1i32, 2u32, 3isize), (-100, 5, -7), (40_000, 90_000, 12)] {
        same!(m, small_ints(a, b, c));
    }
}

dual! { CASTS:
    fn to_i64(x: f64) -> i64 { x as i64 }
    fn to_i32(x: f64) -> i32 { x as i32 }
    fn to_u32(x: f64) -> u32 { x as u32 }
    fn to_usize(x: f64) -> usize { x as usize }
    fn wrap_i32(x: i64) -> i32 { x as i32 }
    fn wrap_u32(x: i64) -> u32 { x as u32 }
    fn widen(x: i32, y: u32) -> f64 { x as f64 + y as i64 as f64 + 3 as f64 + (2.9 as i64) as f64 }
    fn from_bool(b: bool) -> i64 { b as i64 * 10 + true as i64 }
    fn from_small(x: i32) -> f64 { f64::from(x) }
}

#[test]
fn casts_saturate_and_wrap_like_rust() {
    let m = lower(CASTS);
    let floats =
        [0.0, -0.0, 0.9, -0.9, 2.5, -2.5, 1e10, -1e10, 4.3e9, 1e19, -1e19, f64::INFINITY, f64::NEG_INFINITY, f64::NAN];
    for &x in &floats {
        same!(m, to_i64(x));
        same!(m, to_i32(x));
        same!(m, to_u32(x));
        if x < 9.2e18 {
            same!(m, to_usize(x));
        }
    }
    for x in [0i64, 1, -1, 2_147_483_647, 2_147_483_648, -2_147_483_649, 4_294_967_296 + 5, i64::MAX, i64::MIN, -77] {
        same!(m, wrap_i32(x));
        same!(m, wrap_u32(x));
    }
    for (x, y) in [(3i32, 4u32), (-8, 4_000_000_000)] {
        same!(m, widen(x, y));
        same!(m, from_small(x));
    }
    for b in [false, true] {
        same!(m, from_bool(b));
    }
}

dual! { COMPARE:
    fn compare(a: f64, b: f64, i: i64, j: i64) -> (bool, bool, bool) {
        let lt = a < b || a == b && i <= j;
        let ne = !(a != b) & (i > j) | (a >= b) ^ (i == j);
        let bools = (a > b) == (i < j) && (a <= b) != (i >= j);
        (lt, ne, bools)
    }
}

#[test]
fn comparisons_and_logic_follow_ieee() {
    let m = lower(COMPARE);
    for &a in &[0.0, -0.0, 1.0, f64::NAN, f64::INFINITY] {
        for &b in &[0.0, 1.0, f64::NAN, -3.0] {
            for (i, j) in [(0i64, 0i64), (1, 2), (3, -3)] {
                same!(m, compare(a, b, i, j));
            }
        }
    }
}

dual! { SHORT_CIRCUIT:
    fn positive_at(x: &[f64], i: usize) -> bool {
        i < x.len() && x[i] > 0.0
    }
    fn either(x: &[f64], i: usize) -> bool {
        i >= x.len() || x[i] < 0.0
    }
    fn counted(x: &[f64], n: usize) -> usize {
        let mut hits = 0;
        for i in 0..n {
            if i < x.len() && positive_at(x, i) || i == 100 {
                hits += 1;
            }
        }
        hits
    }
}

#[test]
fn and_or_short_circuit_around_faulting_operands() {
    let m = lower(SHORT_CIRCUIT);
    let x = [1.0, -2.0, 3.0];
    for i in 0..6usize {
        same!(m, positive_at(&x[..], i));
        same!(m, either(&x[..], i));
    }
    same!(m, counted(&x[..], 8));
}

dual! { BINDINGS:
    fn bindings(x: f64, flag: bool) -> f64 {
        let y: f64 = x * 2.0;
        let y = y + 1.0; // shadowing
        let mut z = y;
        z += 3.0;
        z -= 0.5;
        z *= x;
        z /= 4.0;
        let w;
        if flag {
            w = z;
        } else {
            w = -z;
        }
        let (a, b) = (w, y);
        let _ = a;
        let mut q: f64;
        q = a;
        q += b;
        {
            let z = 100.0;
            q += z;
        }
        q + z
    }
}

#[test]
fn let_mut_shadowing_deferred_initialisation() {
    let m = lower(BINDINGS);
    for &x in &[0.0, 1.5, -3.25] {
        same!(m, bindings(x, true));
        same!(m, bindings(x, false));
    }
}

dual! { LITERALS:
    fn literals(k: i64) -> f64 {
        let a = 1_000.5e-2 + 2f64 + 3.0_f64 + 1e3 + 0.1;
        let b = 0xff as f64 + 0o17 as f64 + 0b1010 as f64 + 7u32 as f64;
        let c = -9_223_372_036_854_775_808i64 + k;
        let d = 2_147_483_647i32 as f64 + 18_446_744i64 as f64;
        a + b + c as f64 + d + -0.0
    }
}

#[test]
fn literals_with_suffixes_underscores_and_radixes() {
    let m = lower(LITERALS);
    for k in [0i64, 5, 1 << 40] {
        same!(m, literals(k));
    }
}

dual! { CONSTANTS:
    const SCALE: f64 = 2.5;
    const N: usize = 4;
    const OFFSET: f64 = SCALE * 2.0 + 1.0;
    const NEGATIVE: i64 = -3;
    fn constants(x: f64) -> f64 {
        let special = f64::EPSILON + f64::MIN_POSITIVE + std::f64::consts::PI + core::f64::consts::TAU
            + std::f64::consts::E + std::f64::consts::LN_2 + std::f64::consts::FRAC_1_SQRT_2;
        let huge = if x > 1e308 { f64::INFINITY } else { f64::MAX };
        let ints = (i64::MAX / 1_000_000_000_000) as f64 + i32::MIN as f64 + NEGATIVE as f64;
        x * SCALE + N as f64 + OFFSET + special + huge / 1e300 + ints
    }
    fn not_a_number() -> bool {
        let nan = f64::NAN;
        nan != nan && f64::NEG_INFINITY < -f64::MAX
    }
}

#[test]
fn module_constants_and_std_constants() {
    let m = lower(CONSTANTS);
    for x in [0.0, 2.0, -7.5, f64::INFINITY] {
        same!(m, constants(x));
    }
    same!(m, not_a_number());
}

#[test]
fn use_of_std_consts_is_understood() {
    let source = "use std::f64::consts::{PI, E as EULER};\nuse std::f64::consts;\nfn f(x: f64) -> f64 { x * PI + EULER + consts::TAU }";
    let m = lower(source);
    let got = crate::support::run(&m, "f", &mut [jitdiff_ir::ArgValue::F64(2.0)]);
    let want = 2.0 * std::f64::consts::PI + std::f64::consts::E + std::f64::consts::TAU;
    assert_eq!(got, vec![jitdiff_ir::RuntimeValue::F64(want)]);
    let glob = lower("use std::f64::consts::*;\nfn g() -> f64 { FRAC_PI_2 + LN_10 }");
    let got = crate::support::run(&glob, "g", &mut []);
    assert_eq!(got, vec![jitdiff_ir::RuntimeValue::F64(std::f64::consts::FRAC_PI_2 + std::f64::consts::LN_10)]);
}

dual! { RANDOM_EXPR:
    fn poly(x: f64, y: f64, z: f64) -> f64 {
        let p = x * x * x - 2.0 * x * y + y / (z * z + 1.0);
        let q = (p - z) * (p + z) / (1.0 + (x - y) * (x - y));
        p * 0.5 + q * -1.25 + x / 3.0 - y * y / 7.0
    }
}

#[test]
fn random_expressions_are_bit_identical() {
    let m = lower(RANDOM_EXPR);
    let mut rng = Rng::new(11);
    for _ in 0..500 {
        let (x, y, z) = (rng.range(-10.0, 10.0), rng.range(-10.0, 10.0), rng.normal());
        same!(m, poly(x, y, z));
    }
}

dual! { BITS:
    fn bits64(a: i64, b: i64, k: u32) -> (i64, i64, i64) {
        let mut x = (a & b) ^ (a | 7);
        x <<= k % 64;
        x ^= !b;
        (x, a >> (k % 64), (a << 3) >> 2)
    }
    fn bits32(a: i32, b: u32, k: u32) -> (i32, u32, u32) {
        let s = (a << (k % 32)) >> 1;
        let mut u = (b << (k % 32)) | (b >> 3);
        u ^= !b & 0xff00;
        (s ^ !a, u, b.wrapping_mul(2654435761) >> 16)
    }
    fn xorshift(seed: u64, n: usize) -> f64 {
        // A xorshift generator inside the function, as a Monte Carlo objective would have.
        let mut x = seed | 1;
        let mut s = 0.0;
        for _ in 0..n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            s += (x >> 11) as f64 / (1u64 << 53) as f64;
        }
        s
    }
    fn flags(a: bool, b: bool) -> bool {
        let mut f = a;
        f &= b | a;
        f ^= b;
        f |= a & !b;
        f
    }
}

#[test]
fn bit_operations_match_rust_for_each_integer_type() {
    let m = lower(BITS);
    let mut rng = Rng::new(77);
    for _ in 0..200 {
        let (a, b) = (rng.next_u64() as i64 >> rng.below(60), rng.next_u64() as i64 >> rng.below(60));
        let k = rng.below(100) as u32;
        same!(m, bits64(a, b, k));
        same!(m, bits32(a as i32, b as u32, k));
    }
    for seed in [1u64, 12345, 0x5eed_f00d, (1 << 62) + 3] {
        same!(m, xorshift(seed, 50));
    }
    for (a, b) in [(false, false), (false, true), (true, false), (true, true)] {
        same!(m, flags(a, b));
    }
}
