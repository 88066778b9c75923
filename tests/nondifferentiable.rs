//! The chosen derivative at each non-differentiable point (see `rules/src/linearize.rs`), in
//! forward mode and reverse mode, JIT-compiled; and the "dead branch" trap: a zero cotangent
//! times an infinite partial must not poison a sum.

use jitdiff::ir::parse_module;
use jitdiff::jit::Arg;
use jitdiff::{ForwardFn, GradientFn};

/// The gradient of `@f` (all parameters `f64`, all differentiated) at `x`, by reverse mode,
/// checked against forward mode (one unit direction per parameter).
fn gradient(text: &str, x: &[f64]) -> Vec<f64> {
    let module = parse_module(text).unwrap();
    let wrt = vec![true; x.len()];
    let mut reverse = GradientFn::new(&module, "f", &wrt).unwrap();
    let mut args: Vec<Arg<'_>> = x.iter().map(|&v| Arg::F64(v)).collect();
    let mut grad = vec![0.0; x.len()];
    reverse.value_and_grad(&mut args, &mut grad).unwrap();
    let forward = ForwardFn::new(&module, "f", &wrt, 1).unwrap();
    for (i, g) in grad.iter().enumerate() {
        let mut units: Vec<[f64; 1]> = (0..x.len()).map(|j| [if i == j { 1.0 } else { 0.0 }]).collect();
        let mut tangents: Vec<&mut [f64]> = units.iter_mut().map(|u| &mut u[..]).collect();
        let (_, jvp) = forward.jvp(&mut args, &mut tangents).unwrap();
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
