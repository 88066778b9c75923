//! Reversed loops skipped when their incoming cotangents are zero (`ad/src/reverse/skip.rs`):
//! the guard is placed, the gradient is unchanged, and a Hessian-vector product at a point
//! where a guarded cotangent is zero but its tangent is not keeps the term the guard would
//! skip (`iszero`'s forward rule); reverse mode reads a guard as `false`.

use jitdiff::ad::derive_reverse;
use jitdiff::ir::{parse_module, print_module};
use jitdiff::{ForwardFn, GradientFn, GradientMode, HvpFn, args};

/// `(min(a, b) - t)²` with `a = Σ x²` and `b = 10 + Σ x`, each a loop: the pullback sends
/// `min`'s cotangent to one of them and a zero to the other, whose reversed loop is guarded.
const MIN_OF_LOOPS: &str = "
fn f(x: &[f64], t: f64) -> f64 {
    let mut a = 0.0;
    for l in 0..x.len() {
        a += x[l] * x[l];
    }
    let mut b = 10.0;
    for l in 0..x.len() {
        b += x[l];
    }
    let m = if a < b { a } else { b };
    (m - t) * (m - t)
}
";

/// The same with `f64::min`, whose pullback scales the cotangent of each side by its partial
/// (`fmulsz partial, select(...)`) instead of choosing by a branch.
fn min_method_of_loops() -> String {
    MIN_OF_LOOPS.replace("if a < b { a } else { b }", "a.min(b)")
}

#[test]
fn the_pullback_of_a_choice_between_loops_is_guarded() {
    for source in [MIN_OF_LOOPS.to_string(), min_method_of_loops()] {
        let module = jitdiff::front::lower_source(&source).unwrap();
        let derived = derive_reverse(&module, "f", &[true, false]).unwrap();
        let text = print_module(&derived.module);
        assert_eq!(text.matches("iszero").count(), 2, "both reversed loops guarded:\n{text}");
    }
}

#[test]
fn gradients_and_hvps_agree_with_the_closed_form_on_both_sides_and_at_a_zero_residual() {
    closed_form_check(MIN_OF_LOOPS);
    closed_form_check(&min_method_of_loops());
}

fn closed_form_check(source: &str) {
    let module = jitdiff::front::lower_source(source).unwrap();
    let grad = GradientFn::builder(&module, "f").wrt(["x"]).gradient_mode(GradientMode::Reverse).build().unwrap();
    let hvp = HvpFn::builder(&module, "f").wrt(["x"]).width(1).build().unwrap();
    // (x, t): a < b with a residual, a < b at zero residual (the guarded cotangent of `a` is 0,
    // its tangent is not), and b < a at zero residual.
    for (x, t) in [([1.0, 2.0], 1.5), ([1.0, 2.0], 5.0), ([3.0, 4.0], 17.0)] {
        let a: f64 = x.iter().map(|v| v * v).sum();
        let b: f64 = 10.0 + x.iter().sum::<f64>();
        // ∇m and ∇²m of the chosen side; f = (m - t)², ∇f = 2 (m - t) ∇m,
        // ∇²f v = 2 ∇m (∇m · v) + 2 (m - t) ∇²m v.
        let (m, dm, d2m): (f64, [f64; 2], f64) =
            if a < b { (a, [2.0 * x[0], 2.0 * x[1]], 2.0) } else { (b, [1.0, 1.0], 0.0) };
        let v = [0.5, -1.5];
        let dm_v = dm[0] * v[0] + dm[1] * v[1];
        let mut g = [0.0; 2];
        let value = grad.value_and_grad(&mut args![&x[..], t], &mut g).unwrap();
        assert_eq!(value, (m - t) * (m - t));
        let (mut g2, mut hv) = ([0.0; 2], [0.0; 2]);
        hvp.hvp_with_gradient(&mut args![&x[..], t], &v, &mut g2, &mut hv).unwrap();
        for k in 0..2 {
            let expected_g = 2.0 * (m - t) * dm[k];
            let expected_hv = 2.0 * dm[k] * dm_v + 2.0 * (m - t) * d2m * v[k];
            assert!((g[k] - expected_g).abs() <= 1e-12 * expected_g.abs().max(1.0), "x={x:?} t={t}: grad {g:?}");
            assert_eq!(g2[k], g[k], "x={x:?} t={t}: the HVP sweep's gradient");
            assert!((hv[k] - expected_hv).abs() <= 1e-12 * expected_hv.abs().max(1.0), "x={x:?} t={t}: hvp {hv:?}");
            assert!(expected_hv != 0.0, "the zero-residual cases must test a nonzero curvature");
        }
    }
}

/// A guard in user code: both modes take the path that agrees to first order (the product),
/// not the constant the primal takes at `x = 0`.
#[test]
fn a_guard_reads_false_in_reverse_mode_and_tests_the_tangent_in_forward_mode() {
    let module = parse_module(
        "func @f(x: f64, y: f64) -> f64 {\nentry:\n    z = iszero x\n    p = fmul x, y\n    zero = fconst 0.0\n    r = select z, zero, p\n    ret r\n}\n",
    )
    .unwrap();
    let grad = GradientFn::builder(&module, "f").wrt_all().gradient_mode(GradientMode::Reverse).build().unwrap();
    let mut g = [0.0; 2];
    assert_eq!(grad.value_and_grad(&mut args![0.0, 3.0], &mut g).unwrap(), 0.0);
    assert_eq!(g, [3.0, 0.0]);
    let forward = ForwardFn::builder(&module, "f").wrt_all().width(2).build().unwrap();
    let (_, tangents) = forward.jvp(&mut args![0.0, 3.0], &[&[1.0, 0.0], &[0.0, 1.0]]).unwrap();
    assert_eq!(tangents, [3.0, 0.0]);
    // With a zero tangent the guard holds: the constant, whose tangent is zero.
    let (_, tangents) = forward.jvp(&mut args![0.0, 3.0], &[&[0.0, 0.0], &[1.0, 1.0]]).unwrap();
    assert_eq!(tangents, [0.0, 0.0]);
}
