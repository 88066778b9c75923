//! Finite differences (`jitdiff::fd`) and gradient checks (`jitdiff::check`) on the compiled
//! primal: accuracy of both schemes, parallel = sequential, JVPs and Jacobians, functions that
//! store into their arguments, typed errors.

use jitdiff::check::{self, check_gradient};
use jitdiff::fd::{CENTRAL_STEP, FdOptions, FiniteDiff, step_for};
use jitdiff::ir::parse_module;
use jitdiff::{Buffer, Error, GradientFn, SplitMix64, args};
use jitdiff_problems::rosenbrock::{ROSENBROCK_IR, rosenbrock_gradient, standard_start};

/// f(x, y) = sin(x y), g(x, y) = x² + 3y (two results).
const TWO: &str = "func @two(x: f64, y: f64) -> f64, f64 {
entry:
    p = fmul x, y
    s = sin p
    xx = fmul x, x
    three = fconst 3.0
    t = fmul three, y
    q = fadd xx, t
    ret s, q
}";

fn point(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = SplitMix64::new(seed);
    (0..n).map(|_| rng.uniform_in(-1.5, 1.5)).collect()
}

#[test]
fn central_is_accurate_and_forward_less_so() {
    let m = parse_module(TWO).unwrap();
    let args = args![0.7, -1.3];
    let exact = [-1.3 * (-0.91f64).cos(), 0.7 * (-0.91f64).cos()];
    let central = FiniteDiff::builder(&m, "two")
        .wrt(["x", "y"])
        .fd_options(FdOptions::central())
        .build()
        .unwrap()
        .gradient(&args)
        .unwrap();
    let forward = FiniteDiff::builder(&m, "two")
        .wrt(["x", "y"])
        .fd_options(FdOptions::forward())
        .build()
        .unwrap()
        .gradient(&args)
        .unwrap();
    for i in 0..2 {
        let (c, f) = ((central[i] - exact[i]).abs(), (forward[i] - exact[i]).abs());
        assert!(c < 1e-10, "central error {c}");
        assert!(f < 1e-7, "forward error {f}");
        assert!(c < f, "central {c} should beat forward {f}");
    }
}

#[test]
fn rosenbrock_gradient_to_many_digits_and_parallel_equals_sequential() {
    let m = parse_module(ROSENBROCK_IR).unwrap();
    let x = point(200, 7);
    let args = args![&x];
    let sequential =
        FiniteDiff::builder(&m, "rosenbrock").wrt_mask(&[true]).fd_options(FdOptions::central()).build().unwrap();
    let parallel = FiniteDiff::builder(&m, "rosenbrock")
        .wrt_mask(&[true])
        .fd_options(FdOptions::central().parallel(true))
        .build()
        .unwrap();
    let g_seq = sequential.gradient(&args).unwrap();
    let g_par = parallel.gradient(&args).unwrap();
    assert_eq!(g_seq, g_par, "every coordinate is computed the same way on any thread");
    let mut exact = vec![0.0; x.len()];
    rosenbrock_gradient(&x, &mut exact);
    let scale = exact.iter().fold(0.0f64, |m, g| m.max(g.abs()));
    for (i, (a, e)) in g_seq.iter().zip(&exact).enumerate() {
        assert!((a - e).abs() < 1e-7 * scale, "x[{i}]: {a} vs {e}");
    }
    // A subset of the entries is the same as those entries of the full gradient.
    let some = sequential.gradient_entries(&args, &[0, 17, 199]).unwrap();
    assert_eq!(some, vec![g_seq[0], g_seq[17], g_seq[199]]);
    let e = sequential.gradient_entries(&args, &[200]).unwrap_err();
    assert!(matches!(e, Error::BufferLength { buffer: Buffer::Entry, .. }), "{e}");
    assert!(e.to_string().contains("@rosenbrock") && e.to_string().contains("below the number of inputs"), "{e}");
    assert_eq!(sequential.calls_for(200), 400);
}

#[test]
fn jacobian_and_jvp_of_two_results() {
    let m = parse_module(TWO).unwrap();
    let fd = FiniteDiff::builder(&m, "two").wrt(["x", "y"]).fd_options(FdOptions::central()).build().unwrap();
    let (x, y) = (0.4, 2.0);
    let args = args![x, y];
    let j = fd.jacobian(&args).unwrap();
    assert_eq!((j.rows, j.cols), (2, 2));
    let c = (x * y).cos();
    let exact = [[y * c, x * c], [2.0 * x, 3.0]];
    for (r, row) in exact.iter().enumerate() {
        for (col, e) in row.iter().enumerate() {
            assert!((j.get(r, col) - e).abs() < 1e-9, "J[{r}][{col}] = {} vs {e}", j.get(r, col));
        }
    }
    let v = fd.jvp(&args, &[&[1.5], &[-0.5]]).unwrap();
    for r in 0..2 {
        let e = 1.5 * exact[r][0] - 0.5 * exact[r][1];
        assert!((v[r] - e).abs() < 1e-8, "row {r}: {} vs {e}", v[r]);
    }
    assert_eq!(fd.jvp(&args, &[&[0.0], &[0.0]]).unwrap(), vec![0.0, 0.0]);
    let e = fd.jvp(&args, &[&[1.0]]).unwrap_err();
    assert!(matches!(e, Error::BufferLength { expected: 2, got: 1, .. }), "{e}");
    assert!(e.to_string().contains("tangents for @two") && e.to_string().contains("`x`, `y`"), "{e}");
    assert_eq!(fd.values(&args).unwrap(), vec![(x * y).sin(), x * x + 3.0 * y]);
}

#[test]
fn a_function_that_overwrites_its_argument_sees_the_same_input_every_call() {
    // f(m) = m[0] * m[1] after m[0] <- 3 m[0]: df/dm = (3 m[1], 3 m[0]). Without restoring the
    // argument between calls, each call would triple m[0] again.
    let m = parse_module(
        "func @f(m: mslice) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    a = load m, zero
    three = fconst 3.0
    a3 = fmul three, a
    store m, zero, a3
    b = load m, one
    p = fmul a3, b
    ret p
}",
    )
    .unwrap();
    let fd = FiniteDiff::builder(&m, "f").wrt_mask(&[true]).fd_options(FdOptions::central()).build().unwrap();
    let mut values = [2.0, 5.0];
    let g = fd.gradient(&args![&mut values]).unwrap();
    assert_eq!(values, [2.0, 5.0], "finite differences leave the argument as it was");
    assert!((g[0] - 15.0).abs() < 1e-8 && (g[1] - 6.0).abs() < 1e-8, "{g:?}");
}

#[test]
fn steps_are_relative_and_exactly_representable() {
    for x in [0.0, 1e-8, -3.0, 1234.5678, -1e12] {
        let h = step_for(x, CENTRAL_STEP);
        assert_eq!((x + h) - x, h, "x = {x}");
        let expected = CENTRAL_STEP * f64::max(1.0, x.abs());
        assert!((h - expected).abs() <= 1e-3 * expected, "x = {x}: {h} vs {expected}");
    }
    assert_eq!(FdOptions::forward().relative_step(), f64::EPSILON.sqrt());
    assert!((CENTRAL_STEP - f64::EPSILON.cbrt()).abs() < 1e-20);
}

#[test]
fn errors_name_the_function_and_its_parameters() {
    let m = parse_module(
        "func @g(x: f64, n: i64) -> f64 {\nentry:\n    ret x\n}\nfunc @h(x: f64) -> i64 {\nentry:\n    n = iconst 1\n    ret n\n}",
    )
    .unwrap();
    let opts = FdOptions::central();
    let e = FiniteDiff::builder(&m, "nope").wrt([0]).fd_options(opts).build().unwrap_err();
    assert!(matches!(&e, Error::UnknownFunction { name, .. } if name == "nope"), "{e}");
    assert!(e.to_string().contains("@g") && e.to_string().contains("@h"), "lists what there is: {e}");
    let e = FiniteDiff::builder(&m, "g").wrt_mask(&[true]).fd_options(opts).build().unwrap_err();
    assert!(e.to_string().contains("1 flag(s)") && e.to_string().contains("x: f64, n: i64"), "{e}");
    let e = FiniteDiff::builder(&m, "g").wrt(["x", "n"]).fd_options(opts).build().unwrap_err();
    assert!(matches!(&e, Error::NotDifferentiable { param, .. } if param == "n"), "{e}");
    assert!(e.to_string().contains("parameter `n` of @g is i64"), "{e}");
    let e = FiniteDiff::builder(&m, "h").wrt(["x"]).fd_options(opts).build().unwrap_err();
    assert!(matches!(e, Error::NoFloatResult { .. }), "{e}");
    assert!(e.to_string().contains("@h returns no f64 result"), "{e}");
    let fd = FiniteDiff::builder(&m, "g").wrt(["x"]).fd_options(opts).build().unwrap();
    let e = fd.gradient(&args![1.0]).unwrap_err();
    assert!(e.to_string().contains("@g takes 2 argument(s) (x: f64, n: i64), but 1 were given"), "{e}");
    let e = fd.gradient(&args![1.0, 2.0]).unwrap_err();
    assert!(matches!(&e, Error::ArgumentType { index: 1, param, .. } if param == "n"), "{e}");
    assert!(e.to_string().contains("argument 1 of @g (`n: i64`)"), "{e}");
}

/// A step of 0, NaN, ±inf, a negative one, one too small to change `x` or above 1 is refused
/// with the defaults named, for both schemes; the extremes of the range are fine.
#[test]
fn bad_steps_are_errors_not_garbage() {
    let m = parse_module(TWO).unwrap();
    for scheme in [FdOptions::central(), FdOptions::forward()] {
        for step in [0.0, -0.0, -1e-6, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e-300, 1e-17, 1.5] {
            let e = FiniteDiff::builder(&m, "two")
                .wrt(["x", "y"])
                .fd_options(scheme.with_step(step))
                .build()
                .err()
                .unwrap();
            assert!(matches!(e, Error::BadStep(_)), "step {step}: {e}");
            assert!(e.to_string().contains("is not in [2.2e-16, 1]") && e.to_string().contains("6.06e-6"), "{e}");
        }
        for step in [f64::EPSILON, 1.0, 1e-7] {
            let fd = FiniteDiff::builder(&m, "two").wrt(["x", "y"]).fd_options(scheme.with_step(step)).build().unwrap();
            let g = fd.gradient(&args![0.5, 0.25]).unwrap();
            assert!(g.iter().all(|v| v.is_finite()), "step {step}: {g:?}");
        }
    }
}

#[test]
fn gradient_check_passes_for_ad_and_catches_a_bad_derivative() {
    let m = parse_module(ROSENBROCK_IR).unwrap();
    let x = standard_start(30);
    let report = check_gradient(&m, "rosenbrock", ["x"], &mut args![&x]).unwrap();
    assert_eq!(report.coords.len(), 30);
    assert!(report.passes(1e-6), "{report}");
    assert!(report.max_rel_err > 0.0, "central differences are not exact");
    assert_eq!(report.coords[3].label, "x[3]");
    assert_eq!(report.coords[3].value, 1.0);
    // Differences with an absurd step are wrong; the report must say so and name the worst.
    let grad = GradientFn::builder(&m, "rosenbrock").wrt(["x"]).build().unwrap();
    let bad = check::gradient(&grad, &mut args![&x], FdOptions::central().with_step(0.3)).unwrap();
    assert!(!bad.passes(1e-3), "{bad}");
    let worst = &bad.coords[bad.worst.unwrap()];
    assert_eq!(worst.rel_err, bad.max_rel_err);
    assert!(bad.coords.iter().all(|c| c.rel_err <= worst.rel_err));
    let text = bad.to_string();
    assert!(text.contains(&format!("worst coordinate: {}", worst.label)), "{text}");
    assert!(text.contains("showing the 12 worst of 30 coordinates"), "{text}");
}
