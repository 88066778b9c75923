//! The chosen derivative at each non-differentiable point (see `rules/src/linearize.rs`), in
//! forward mode and reverse mode, JIT-compiled; and the "dead branch" trap: a zero cotangent
//! times an infinite partial must not poison a sum.

use jitdiff::ir::{parse_module, print_module};
use jitdiff::jit::Arg;
use jitdiff::{ForwardFn, GradientFn};

/// The gradient of `@f` (all parameters `f64`, all differentiated) at `x`, by reverse mode,
/// checked against forward mode (one unit direction per parameter).
fn gradient(text: &str, x: &[f64]) -> Vec<f64> {
    let module = parse_module(text).unwrap();
    let wrt = vec![true; x.len()];
    let reverse = GradientFn::builder(&module, "f").wrt_mask(&wrt).build().unwrap();
    let mut args: Vec<Arg<'_>> = x.iter().map(|&v| Arg::F64(v)).collect();
    let mut grad = vec![0.0; x.len()];
    reverse.value_and_grad(&mut args, &mut grad).unwrap();
    let forward = ForwardFn::builder(&module, "f").wrt_mask(&wrt).width(1).build().unwrap();
    for (i, g) in grad.iter().enumerate() {
        let units: Vec<[f64; 1]> = (0..x.len()).map(|j| [if i == j { 1.0 } else { 0.0 }]).collect();
        let tangents: Vec<&[f64]> = units.iter().map(|u| &u[..]).collect();
        let (_, jvp) = forward.jvp(&mut args, &tangents).unwrap();
        assert!(
            jvp[0].to_bits() == g.to_bits() || (jvp[0].is_nan() && g.is_nan()),
            "{text}: forward {} vs reverse {g} for parameter {i}",
            jvp[0]
        );
    }
    grad
}

fn unary(op: &str) -> String {
    format!("func @f(x: f64) -> f64 {{\nentry:\n    r = {op} x\n    ret r\n}}")
}

fn binary(op: &str) -> String {
    format!("func @f(x: f64, y: f64) -> f64 {{\nentry:\n    r = {op} x, y\n    ret r\n}}")
}

#[test]
fn sqrt_at_zero_is_plus_infinity() {
    assert_eq!(gradient(&unary("sqrt"), &[0.0]), [f64::INFINITY]);
}

#[test]
fn abs_at_zero_is_zero() {
    assert_eq!(gradient(&unary("abs"), &[0.0]), [0.0]);
    assert_eq!(gradient(&unary("abs"), &[-0.0]), [0.0]);
    assert_eq!(gradient(&unary("abs"), &[-2.0]), [-1.0]);
}

#[test]
fn ln_at_zero_is_plus_infinity() {
    assert_eq!(gradient(&unary("ln"), &[0.0]), [f64::INFINITY]);
    assert_eq!(gradient(&unary("log1p"), &[-1.0]), [f64::INFINITY]);
}

/// The inverse hyperbolic functions: exact where the derivative is a simple number, +∞ at the
/// ends of `acosh`'s and `atanh`'s domains (both modes), and `asinh` finite for huge arguments
/// (`1 / hypot(x, 1)`, no overflow of `x²`).
#[test]
fn inverse_hyperbolic_functions() {
    assert_eq!(gradient(&unary("asinh"), &[0.0]), [1.0]);
    assert_eq!(gradient(&unary("atanh"), &[0.0]), [1.0]);
    assert_eq!(gradient(&unary("acosh"), &[1.0]), [f64::INFINITY]);
    assert_eq!(gradient(&unary("atanh"), &[1.0]), [f64::INFINITY]);
    assert_eq!(gradient(&unary("atanh"), &[-1.0]), [f64::INFINITY]);
    assert_eq!(gradient(&unary("asinh"), &[1e200]), [1e-200]);
    let close = |got: f64, want: f64| (got - want).abs() <= 1e-15 * want.abs();
    for x in [-3.0, -0.5, 0.25, 2.0] {
        let d = gradient(&unary("asinh"), &[x])[0];
        assert!(close(d, 1.0 / (x * x + 1.0_f64).sqrt()), "asinh'({x}) = {d}");
    }
    for x in [1.0 + 1e-9, 1.5, 10.0] {
        let d = gradient(&unary("acosh"), &[x])[0];
        assert!(close(d, 1.0 / ((x - 1.0_f64).sqrt() * (x + 1.0_f64).sqrt())), "acosh'({x}) = {d}");
    }
    for x in [-0.999, -0.3, 0.5, 1.0 - 1e-12] {
        let d = gradient(&unary("atanh"), &[x])[0];
        assert!(close(d, 1.0 / ((1.0 - x) * (1.0 + x))), "atanh'({x}) = {d}");
    }
    // Outside the domain the value is NaN; the derivative is the formula's (as JAX and PyTorch):
    // NaN for acosh (a square root of a negative number), -1/3 for atanh at 2.
    assert!(gradient(&unary("acosh"), &[0.5])[0].is_nan());
    assert_eq!(gradient(&unary("atanh"), &[2.0]), [1.0 / ((1.0 - 2.0) * (1.0 + 2.0))]);
}

/// `frem x, y = x - trunc(x / y) y`: 1 for x, -trunc(x / y) for y, at a jump too (JAX's rule).
#[test]
fn float_remainder() {
    assert_eq!(gradient(&binary("frem"), &[7.5, 2.0]), [1.0, -3.0]);
    assert_eq!(gradient(&binary("frem"), &[-7.5, 2.0]), [1.0, 3.0]);
    assert_eq!(gradient(&binary("frem"), &[6.0, 2.0]), [1.0, -3.0]);
    assert_eq!(gradient(&binary("frem"), &[1.0, 4.0]), [1.0, 0.0]);
}

#[test]
fn hypot_at_the_origin_is_zero_to_both() {
    assert_eq!(gradient(&binary("hypot"), &[0.0, 0.0]), [0.0, 0.0]);
    assert_eq!(gradient(&binary("atan2"), &[0.0, 0.0]), [0.0, 0.0]);
}

#[test]
fn pow_with_zero_base() {
    // d/dx x^a = a x^(a-1): 0 for a = 2, +inf for a = 0.5; d/dy = 0 at base 0.
    assert_eq!(gradient(&binary("pow"), &[0.0, 2.0]), [0.0, 0.0]);
    assert_eq!(gradient(&binary("pow"), &[0.0, 0.5]), [f64::INFINITY, 0.0]);
}

#[test]
fn min_and_max_split_a_tie_evenly() {
    assert_eq!(gradient(&binary("min"), &[1.5, 1.5]), [0.5, 0.5]);
    assert_eq!(gradient(&binary("max"), &[1.5, 1.5]), [0.5, 0.5]);
    assert_eq!(gradient(&binary("min"), &[1.0, 2.0]), [1.0, 0.0]);
    assert_eq!(gradient(&binary("max"), &[1.0, 2.0]), [0.0, 1.0]);
}

const DEAD_SELECT: &str = "
func @f(x: f64) -> f64 {
entry:
    zero = fconst 0.0
    positive = fcmp gt x, zero
    root = sqrt x
    r = select positive, root, zero
    ret r
}";

const DEAD_BRANCH: &str = "
func @f(x: f64) -> f64 {
entry:
    zero = fconst 0.0
    positive = fcmp gt x, zero
    br positive, yes, done(zero)
yes:
    root = sqrt x
    jump done(root)
done(r: f64):
    ret r
}";

/// With a branch, the sqrt is not even evaluated at x <= 0; with `select` it is (giving an
/// infinite or NaN partial), and the zero cotangent of the arm not taken must stay zero.
#[test]
fn a_dead_branch_does_not_poison_the_gradient() {
    for text in [DEAD_SELECT, DEAD_BRANCH] {
        for x in [0.0, -1.0, -0.0] {
            let g = gradient(text, &[x]);
            assert_eq!(g, [0.0], "{text}\nat x = {x}");
        }
        let g = gradient(text, &[4.0]);
        assert_eq!(g, [0.25], "{text}");
    }
}

/// The gradient by `ForwardFn::jacobian` at W = 2 (columns of unit lanes), beside the reverse
/// gradient: the two must agree bit for bit at singular points too.
fn jacobian_row(text: &str, x: &[f64]) -> Vec<f64> {
    let module = parse_module(text).unwrap();
    let wrt = vec![true; x.len()];
    let forward = ForwardFn::builder(&module, "f").wrt_mask(&wrt).width(2).build().unwrap();
    let mut args: Vec<Arg<'_>> = x.iter().map(|&v| Arg::F64(v)).collect();
    let jacobian = forward.jacobian(&mut args).unwrap();
    (0..x.len()).map(|j| jacobian.get(0, j)).collect()
}

fn same(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
}

/// A zero partial downstream of an infinite one (`sqrt(x)·sqrt(x)` at 0, the Euclidean norm at
/// the origin) and a zero seed against an infinite partial (`x + sqrt(y)` at y = 0, `x / y` at
/// y = 0 in the direction of `x`): both modes compute the same strong-zero path sums.
#[test]
fn forward_and_reverse_agree_at_singular_points() {
    let cases: [(&str, &[f64], &[f64]); 6] = [
        ("func @f(x: f64) -> f64 {\nentry:\n    s = sqrt x\n    r = fmul s, s\n    ret r\n}", &[0.0], &[0.0]),
        (
            "func @f(x: f64, y: f64) -> f64 {\nentry:\n    a = fmul x, x\n    b = fmul y, y\n    c = fadd a, b\n    r = sqrt c\n    ret r\n}",
            &[0.0, 0.0],
            &[0.0, 0.0],
        ),
        (
            "func @f(x: f64, y: f64) -> f64 {\nentry:\n    s = sqrt y\n    r = fadd x, s\n    ret r\n}",
            &[2.0, 0.0],
            &[1.0, f64::INFINITY],
        ),
        (
            "func @f(x: f64, y: f64) -> f64 {\nentry:\n    r = fdiv x, y\n    ret r\n}",
            &[1.0, 0.0],
            &[f64::INFINITY, f64::NEG_INFINITY],
        ),
        (
            "func @f(x: f64, c: f64) -> f64 {\nentry:\n    s = sqrt x\n    r = fmul c, s\n    ret r\n}",
            &[0.0, 0.0],
            &[0.0, 0.0],
        ),
        (
            "func @f(x: f64) -> f64 {\nentry:\n    h = fconst 0.5\n    p = pow x, h\n    l = ln x\n    e = exp l\n    r = fadd p, e\n    ret r\n}",
            &[0.0],
            &[f64::INFINITY],
        ),
    ];
    for (text, x, expected) in cases {
        let reverse = gradient(text, x);
        assert!(same(&reverse, expected), "{text}\nat {x:?}: reverse {reverse:?}, expected {expected:?}");
        let jacobian = jacobian_row(text, x);
        assert!(same(&jacobian, expected), "{text}\nat {x:?}: jacobian {jacobian:?}, expected {expected:?}");
    }
}

/// `powi x, 0` and `pow x, 0` are constant: derivative 0 at x = 0 too (not `0 · x^(-1) = NaN`);
/// a polynomial `1 + 2x + 3x²` has gradient 2 at 0.
#[test]
fn zero_exponents_have_zero_derivative_at_zero() {
    let powi0 = "func @f(x: f64) -> f64 {\nentry:\n    n = iconst 0\n    r = powi x, n\n    ret r\n}";
    let pow0 = "func @f(x: f64) -> f64 {\nentry:\n    z = fconst 0.0\n    r = pow x, z\n    ret r\n}";
    let poly = "func @f(x: f64) -> f64 {
entry:
    k0 = iconst 0
    k1 = iconst 1
    k2 = iconst 2
    c1 = fconst 1.0
    c2 = fconst 2.0
    c3 = fconst 3.0
    p0 = powi x, k0
    p1 = powi x, k1
    p2 = powi x, k2
    t0 = fmul c1, p0
    t1 = fmul c2, p1
    t2 = fmul c3, p2
    s = fadd t0, t1
    r = fadd s, t2
    ret r
}";
    for x in [0.0, -0.0] {
        assert_eq!(gradient(powi0, &[x]), [0.0]);
        assert_eq!(gradient(pow0, &[x]), [0.0]);
        assert_eq!(gradient(poly, &[x]), [2.0]);
    }
    assert_eq!(gradient(poly, &[1.0]), [8.0]);
    // The exponent as a parameter: the same, without constant folding.
    let powi_n = "func @f(x: f64, n: i64) -> f64 {\nentry:\n    r = powi x, n\n    ret r\n}";
    let module = parse_module(powi_n).unwrap();
    let g = GradientFn::builder(&module, "f").wrt_mask(&[true, false]).build().unwrap();
    let mut grad = [f64::NAN];
    g.value_and_grad(&mut [Arg::F64(0.0), Arg::I64(0)], &mut grad).unwrap();
    assert_eq!(grad, [0.0]);
}

/// With a constant zero exponent the power is a constant, also of an infinite base whose own
/// derivative is NaN (`x / (x - x)` at x = -2 is -inf, its derivative NaN): 0 in both modes and
/// by `jacobian`, where a product of the partial 0 with that NaN gave NaN in forward mode
/// (tests/regressions/powi_zero_exponent_of_infinite.ir).
#[test]
fn a_constant_zero_exponent_makes_a_constant_of_any_base() {
    for (op, zero) in [("powi", "iconst 0"), ("pow", "fconst 0.0"), ("pow", "fconst -0.0")] {
        let text = format!(
            "func @f(x: f64) -> f64 {{\nentry:\n    d = fsub x, x\n    q = fdiv x, d\n    z = {zero}\n    r = {op} q, z\n    ret r\n}}"
        );
        for x in [-2.0, 0.0, 3.0] {
            assert_eq!(gradient(&text, &[x]), [0.0], "{op} by {zero} at {x}");
            assert_eq!(jacobian_row(&text, &[x]), [0.0], "{op} by {zero} at {x}");
        }
    }
}

/// `powi x, i64::MIN`: `n - 1` must not wrap to `i64::MAX`. `d/dx x^n = n x^(n-1)` with
/// `x^(n-1) = x^n / x`: at x = -1 it is `MIN · (-1) = 2^63`, at 2 it underflows to 0.
#[test]
fn powi_by_the_most_negative_exponent_does_not_wrap() {
    let text = "func @f(x: f64) -> f64 {\nentry:\n    n = iconst -9223372036854775808\n    r = powi x, n\n    ret r\n}";
    assert_eq!(gradient(text, &[-1.0]), [2f64.powi(63)]);
    assert_eq!(gradient(text, &[1.0]), [-(2f64.powi(63))]);
    assert_eq!(gradient(text, &[2.0]), [0.0]);
    let as_param = "func @f(x: f64, n: i64) -> f64 {\nentry:\n    r = powi x, n\n    ret r\n}";
    let module = parse_module(as_param).unwrap();
    let g = GradientFn::builder(&module, "f").wrt_mask(&[true, false]).build().unwrap();
    let mut grad = [f64::NAN];
    g.value_and_grad(&mut [Arg::F64(-1.0), Arg::I64(i64::MIN)], &mut grad).unwrap();
    assert_eq!(grad, [2f64.powi(63)]);
}

/// `x·y + (if s != 0 { sqrt(s)·y })` with `s = x² + y²`: the root runs only where `s` is
/// nonzero, and the same with the test on the root (`if sqrt(s) >= 1e-4`). A branch keeps
/// these roots from zero, so the derivatives multiply with plain products (docs/rules.md):
/// both modes must still agree, at the origin (the branch not taken), just beside it and at
/// ordinary points, and equal the analytic gradient.
#[test]
fn square_roots_a_branch_keeps_from_zero_agree_in_both_modes_with_plain_products() {
    let operand_tested = "func @f(x: f64, y: f64) -> f64 {
entry:
    zero = fconst 0.0
    a = fmul x, x
    b = fmul y, y
    s = fadd a, b
    xy = fmul x, y
    nonzero = fcmp ne s, zero
    br nonzero, root, done(xy)
root:
    r = sqrt s
    ry = fmul r, y
    t = fadd xy, ry
    jump done(t)
done(v: f64):
    ret v
}";
    let root_tested = "func @f(x: f64, y: f64) -> f64 {
entry:
    small = fconst 0.0001
    a = fmul x, x
    b = fmul y, y
    s = fadd a, b
    xy = fmul x, y
    r = sqrt s
    big = fcmp ge r, small
    br big, root, done(xy)
root:
    ry = fmul r, y
    t = fadd xy, ry
    jump done(t)
done(v: f64):
    ret v
}";
    for text in [operand_tested, root_tested] {
        let module = parse_module(text).unwrap();
        let forward = ForwardFn::builder(&module, "f").wrt_mask(&[true, true]).width(2).build().unwrap();
        let products = print_module(&forward.derivative().module);
        assert_eq!(products.matches("fmulsz").count(), 1, "only the root's own product is strong:\n{products}");
        let taken =
            |x: f64, y: f64| if text == operand_tested { x * x + y * y != 0.0 } else { (x * x + y * y).sqrt() >= 1e-4 };
        for (x, y) in [(0.0, 0.0), (0.0, -0.0), (1e-200, 0.0), (1e-5, 0.0), (3.0, 4.0), (-0.5, 2.0)] {
            let reverse = gradient(text, &[x, y]);
            assert!(same(&reverse, &jacobian_row(text, &[x, y])), "{text}\nat ({x}, {y})");
            let r = (x * x + y * y).sqrt();
            let expected = if taken(x, y) { [y + x / r * y, x + y / r * y + r] } else { [y, x] };
            for (got, want) in reverse.iter().zip(expected) {
                assert!(
                    (got - want).abs() <= 1e-12 * want.abs().max(1.0),
                    "at ({x}, {y}): {reverse:?} vs {expected:?}"
                );
            }
        }
    }
}
