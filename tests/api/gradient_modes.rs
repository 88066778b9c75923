//! `GradientFn::value_and_grad` by forward lanes (`GradientMode::Forward`, and `Auto` for calls
//! with at most 4 inputs) equals reverse mode to rounding: on the benchmark problems, with `f64`
//! and slice inputs in any order (tangent lanes as `f64xW` vectors and as slices), with `mslice`
//! outputs over several sweeps, through the frame path and the general one; `Auto` picks as
//! documented; errors and faults are the user's; no allocation after warm-up.

use jitdiff::ir::{ArgValue, parse_module, parse_module_with_spans};
use jitdiff::jit::Arg;
use jitdiff::jit::alloc_count::allocations_on_this_thread;
use jitdiff::{Error, GradientFn, GradientMode, args};
use jitdiff_problems::{Gmm, Mlp, Pendulum, Problem, Rosenbrock};

fn native_args(values: &mut [ArgValue]) -> Vec<Arg<'_>> {
    values.iter_mut().map(Arg::from).collect()
}

fn wrt_of(p: &dyn Problem) -> Vec<bool> {
    (0..p.args().len()).map(|i| p.active_params().contains(&i)).collect()
}

/// Relative difference of two gradients, scaled by the larger entry (entries that cancel to
/// almost zero differ by rounding of the terms, not of the result).
fn max_rel_diff(a: &[f64], b: &[f64]) -> f64 {
    let scale = a.iter().chain(b).fold(f64::MIN_POSITIVE, |m, x| m.max(x.abs()));
    a.iter().zip(b).fold(0.0, |m, (x, y)| m.max((x - y).abs() / scale))
}

/// `(value, gradient)` of `p` in `mode`, and the mode the call took.
fn gradient(p: &dyn Problem, mode: GradientMode) -> (f64, Vec<f64>, GradientMode) {
    let module = parse_module(p.ir()).unwrap();
    let f = GradientFn::builder(&module, p.entry()).wrt_mask(&wrt_of(p)).gradient_mode(mode).build().unwrap();
    let mut values = p.args();
    let mut args = native_args(&mut values);
    let mut grad = vec![f64::NAN; p.gradient_len()];
    let value = f.value_and_grad(&mut args, &mut grad).unwrap();
    (value, grad, f.mode_for(&args))
}

#[test]
fn forward_lanes_equal_reverse_mode_on_the_benchmark_problems() {
    let problems: Vec<Box<dyn Problem>> = vec![
        Box::new(Rosenbrock::new(1)),
        Box::new(Rosenbrock::new(2)),
        Box::new(Rosenbrock::new(3)),
        Box::new(Rosenbrock::new(4)),
        Box::new(Rosenbrock::new(5)),
        Box::new(Rosenbrock::new(8)),
        Box::new(Rosenbrock::new(21)),
        Box::new(Pendulum::standard()),
        Box::new(Gmm::generate(2, 3, 20, 1)),
        Box::new(Mlp::generate(3, 4, 5, 2)),
    ];
    for p in &problems {
        let (value, want, mode) = gradient(p.as_ref(), GradientMode::Reverse);
        assert_eq!(mode, GradientMode::Reverse);
        assert!((value - p.reference()).abs() <= 1e-12 * p.reference().abs().max(1.0), "{}", p.label());
        for chosen in [GradientMode::Forward, GradientMode::Auto] {
            let (v, grad, mode) = gradient(p.as_ref(), chosen);
            let inputs = p.gradient_len();
            let expected = if chosen == GradientMode::Forward || inputs <= 4 {
                GradientMode::Forward
            } else {
                GradientMode::Reverse
            };
            assert_eq!(mode, expected, "{} ({inputs} inputs) in {chosen:?}", p.label());
            assert!((v - value).abs() <= 1e-14 * value.abs(), "{}: value {v} vs {value}", p.label());
            let diff = max_rel_diff(&grad, &want);
            assert!(diff <= 1e-12, "{} in {chosen:?}: {diff:e}\n{grad:?}\n{want:?}", p.label());
        }
    }
}

/// f64 and slice inputs in any order: the tangents of f64 inputs are `f64xW` vectors (or plain
/// `f64` with one lane), those of slices W lanes per element; 1 to 10 inputs, so one sweep of
/// 1, 2, 4 or 8 lanes, or two of 8.
#[test]
fn f64_and_slice_inputs_in_any_order_give_the_reverse_gradient() {
    let src = "func @f(a: f64, x: slice, n: i64, b: f64, y: slice) -> i64, f64 {
entry:
    zero = iconst 0
    one = iconst 1
    acc0 = fmul a, b
    jump head(zero, acc0)
head(i: i64, acc: f64):
    more = icmp lt i, n
    br more, body, done
body:
    xi = load x, i
    yi = load y, i
    p = fmul xi, yi
    s = sin p
    t = fmul s, a
    u = fdiv t, b
    acc2 = fadd acc, u
    i2 = iadd i, one
    jump head(i2, acc2)
done:
    e = fmul acc, b
    ret n, e
}";
    let module = parse_module(src).unwrap();
    for len in [1, 2, 4] {
        let x: Vec<f64> = (0..len).map(|k| 0.3 - 0.4 * k as f64).collect();
        let y: Vec<f64> = (0..len).map(|k| 1.1 + 0.2 * k as f64).collect();
        for wrt in [vec!["a"], vec!["b", "a"], vec!["x"], vec!["a", "x"], vec!["y", "b"], vec!["a", "x", "b", "y"]] {
            let build = |mode| GradientFn::builder(&module, "f").wrt(wrt.clone()).gradient_mode(mode).build().unwrap();
            let (reverse, forward, auto) =
                (build(GradientMode::Reverse), build(GradientMode::Forward), build(GradientMode::Auto));
            let mut args = args![0.8, &x, len as i64, -1.3, &y];
            let inputs = reverse.inputs(&args);
            let mut want = vec![0.0; inputs];
            let value = reverse.value_and_grad(&mut args, &mut want).unwrap();
            for (f, mode) in [(&forward, "forward"), (&auto, "auto")] {
                let mut grad = vec![f64::NAN; inputs];
                let v = f.value_and_grad(&mut args, &mut grad).unwrap();
                assert!((v - value).abs() <= 1e-15 * value.abs(), "{wrt:?} len {len} {mode}");
                let diff = max_rel_diff(&grad, &want);
                assert!(diff <= 1e-14, "{wrt:?} len {len} {mode}: {grad:?} vs {want:?}");
            }
            assert_eq!(auto.mode_for(&args) == GradientMode::Forward, inputs <= 4, "{wrt:?} len {len}");
        }
    }
}

/// An `mslice` output keeps Auto in reverse mode; forced forward lanes run several sweeps and
/// restore the slice before each, so it ends as one call leaves it.
#[test]
fn mslice_outputs_end_as_one_call_leaves_them_over_several_sweeps() {
    // out[i] = out[i] + x[i]^2 for every i; returns sum x[i] * out[i] (the new out).
    let src = "func @f(x: slice, out: mslice) -> f64 {
entry:
    n = len x
    zero = iconst 0
    one = iconst 1
    acc0 = fconst 0.0
    jump head(zero, acc0)
head(i: i64, acc: f64):
    more = icmp lt i, n
    br more, body, done
body:
    xi = load x, i
    oi = load out, i
    sq = fmul xi, xi
    o2 = fadd oi, sq
    store out, i, o2
    p = fmul xi, o2
    acc2 = fadd acc, p
    i2 = iadd i, one
    jump head(i2, acc2)
done:
    ret acc
}";
    let module = parse_module(src).unwrap();
    let x: Vec<f64> = (0..19).map(|k| 0.5 + 0.1 * k as f64).collect();
    let start: Vec<f64> = (0..19).map(|k| 1.0 - 0.05 * k as f64).collect();
    for wrt in [vec!["x"], vec!["x", "out"]] {
        let build = |mode| GradientFn::builder(&module, "f").wrt(wrt.clone()).gradient_mode(mode).build().unwrap();
        let (reverse, forward, auto) =
            (build(GradientMode::Reverse), build(GradientMode::Forward), build(GradientMode::Auto));
        let (mut out_r, mut out_f) = (start.clone(), start.clone());
        let inputs = reverse.inputs(&args![&x, &mut out_r]);
        let (mut want, mut grad) = (vec![0.0; inputs], vec![f64::NAN; inputs]);
        let value = reverse.value_and_grad(&mut args![&x, &mut out_r], &mut want).unwrap();
        let v = forward.value_and_grad(&mut args![&x, &mut out_f], &mut grad).unwrap();
        assert_eq!(out_f, out_r, "{wrt:?}");
        assert!((v - value).abs() <= 1e-15 * value.abs());
        assert!(max_rel_diff(&grad, &want) <= 1e-15, "{wrt:?}: {grad:?} vs {want:?}");
        // Three inputs and an mslice: Auto stays in reverse mode.
        let mut short = [1.0, 2.0, 3.0];
        assert_eq!(auto.mode_for(&args![&x[..3], &mut short]), GradientMode::Reverse);
        assert_eq!(forward.mode_for(&args![&x[..3], &mut short]), GradientMode::Forward);
    }
}

#[test]
fn the_modes_are_chosen_as_documented() {
    let module = parse_module(jitdiff_problems::rosenbrock::ROSENBROCK_IR).unwrap();
    let build = |mode| GradientFn::builder(&module, "rosenbrock").wrt(["x"]).gradient_mode(mode).build().unwrap();
    let auto = GradientFn::builder(&module, "rosenbrock").wrt(["x"]).build().unwrap();
    assert_eq!(auto.gradient_mode(), GradientMode::Auto);
    let (reverse, forward) = (build(GradientMode::Reverse), build(GradientMode::Forward));
    for n in [0, 1, 3, 4, 5, 40] {
        let x = vec![0.5; n];
        let args = args![&x];
        let small = (1..=4).contains(&n);
        assert_eq!(auto.mode_for(&args), if small { GradientMode::Forward } else { GradientMode::Reverse }, "n = {n}");
        assert_eq!(reverse.mode_for(&args), GradientMode::Reverse);
        assert_eq!(forward.mode_for(&args), GradientMode::Forward);
        // Clones share the lanes compiled so far, and give the same.
        let (mut a, mut b) = (vec![0.0; n], vec![0.0; n]);
        let clone = auto.clone();
        assert_eq!(
            auto.value_and_grad(&mut args![&x], &mut a).unwrap(),
            clone.value_and_grad(&mut args![&x], &mut b).unwrap()
        );
        assert_eq!(a, b);
        // Forward mode records no pullback state.
        forward.value_and_grad(&mut args![&x], &mut a).unwrap();
        assert_eq!(forward.tape_bytes(), 0);
    }
}

/// The user's errors and faults, by forward lanes as by reverse mode.
#[test]
fn errors_and_faults_are_the_users_in_forward_mode() {
    let text = "func @f(x: f64, s: slice, k: i64) -> f64 {
entry:
    v = load s, k
    p = fmul v, x
    ret p
}";
    let (module, spans) = parse_module_with_spans(text).unwrap();
    for mode in [GradientMode::Auto, GradientMode::Forward] {
        let f =
            GradientFn::builder(&module, "f").wrt(["x", "s"]).source_map(&spans).gradient_mode(mode).build().unwrap();
        let s = [1.0, 2.0, 3.0];
        let mut grad = [0.0; 4];
        assert_eq!(f.value_and_grad(&mut args![2.0, &s, 1i64], &mut grad).unwrap(), 4.0);
        assert_eq!(grad, [2.0, 0.0, 2.0, 0.0]);
        let e = f.value_and_grad(&mut args![2.0, &s, 7i64], &mut grad).unwrap_err();
        let message = e.to_string();
        assert!(message.contains("index 7 out of bounds for a slice of length 3"), "{message}");
        assert!(message.contains("line 3, column 5"), "{message}");
        assert!(!message.contains("_fwd") && !message.contains("_tangent"), "{message}");
        let e = f.value_and_grad(&mut args![2.0, &s, 1i64], &mut [0.0; 3]).unwrap_err();
        assert!(matches!(e, Error::BufferLength { expected: 4, got: 3, .. }), "{e}");
        let e = f.value_and_grad(&mut args![2.0, 1.0, 1i64], &mut grad).unwrap_err();
        assert!(matches!(e, Error::ArgumentType { index: 1, .. }), "{e}");
        let e = f.value_and_grad(&mut args![2.0, &s], &mut grad).unwrap_err();
        assert!(matches!(e, Error::ArgumentCount { .. }), "{e}");
    }
    // No f64 result: the same error in every mode.
    let m = parse_module("func @g(x: f64) -> i64 {\nentry:\n    k = iconst 1\n    ret k\n}").unwrap();
    for mode in [GradientMode::Auto, GradientMode::Forward, GradientMode::Reverse] {
        let f = GradientFn::builder(&m, "g").wrt(["x"]).gradient_mode(mode).build().unwrap();
        let e = f.value_and_grad(&mut args![1.0], &mut [0.0]).unwrap_err();
        assert!(matches!(e, Error::NoFloatResult { .. }), "{e}");
    }
}

#[test]
fn forward_lanes_allocate_nothing_after_warm_up() {
    let problems: Vec<(Box<dyn Problem>, GradientMode)> = vec![
        (Box::new(Rosenbrock::new(3)), GradientMode::Auto),
        (Box::new(Pendulum::with_steps(100)), GradientMode::Auto),
        (Box::new(Rosenbrock::new(20)), GradientMode::Forward),
        (Box::new(Gmm::generate(2, 2, 10, 1)), GradientMode::Forward),
    ];
    for (p, mode) in problems {
        let module = parse_module(p.ir()).unwrap();
        let f =
            GradientFn::builder(&module, p.entry()).wrt_mask(&wrt_of(p.as_ref())).gradient_mode(mode).build().unwrap();
        let mut values = p.args();
        let mut args = native_args(&mut values);
        assert_eq!(f.mode_for(&args), GradientMode::Forward);
        let mut grad = vec![0.0; p.gradient_len()];
        f.value_and_grad(&mut args, &mut grad).unwrap();
        let before = allocations_on_this_thread();
        for _ in 0..1_000 {
            f.value_and_grad(&mut args, &mut grad).unwrap();
        }
        assert_eq!(allocations_on_this_thread() - before, 0, "{}", p.label());
    }
}

/// Past an infinite value the modes may differ: `atan2(ln 0, s[0])` has a NaN partial for
/// `s[0]`, which forward lanes multiply into the lane of `s[1]` too. Forced forward lanes give
/// NaN there; Auto sees the non-finite entry and gives reverse mode's gradient.
#[test]
fn auto_mode_gives_reverse_modes_gradient_past_an_infinite_value() {
    let src = "func @f(s: slice) -> f64 {
entry:
    zero = fconst 0.0
    y = ln zero
    i = iconst 0
    x = load s, i
    r = atan2 y, x
    ret r
}";
    let module = parse_module(src).unwrap();
    let s = [-2.0, -2.0];
    let run = |mode| {
        let f = GradientFn::builder(&module, "f").wrt(["s"]).gradient_mode(mode).build().unwrap();
        let mut grad = [7.0; 2];
        let value = f.value_and_grad(&mut args![&s], &mut grad).unwrap();
        (value, grad)
    };
    let (value, reverse) = run(GradientMode::Reverse);
    assert_eq!(value, -std::f64::consts::FRAC_PI_2);
    assert!(reverse[0].is_nan() && reverse[1] == 0.0, "{reverse:?}");
    let (_, forward) = run(GradientMode::Forward);
    assert!(forward[0].is_nan() && forward[1].is_nan(), "{forward:?}");
    let (v, auto) = run(GradientMode::Auto);
    assert_eq!(v, value);
    assert!(auto[0].is_nan() && auto[1] == 0.0, "{auto:?}");
}

/// With only `f64` inputs, at most 4, Auto mode builds its forward lanes while reverse mode is
/// derived (on another core): calls take the lanes, their gradient is reverse mode's, and a
/// function reverse mode cannot derive is still an error of `build` (`tests/api/errors.rs`,
/// `GradientFn::builder` / `NoRule`).
#[test]
fn scalar_inputs_get_forward_lanes_at_build() {
    let m = parse_module(
        "func @f(x: f64, y: f64, n: i64) -> f64 {\nentry:\n    p = fmul x, y\n    s = sin x\n    r = fadd p, s\n    \
         k = itof n\n    t = fmul r, k\n    ret t\n}",
    )
    .unwrap();
    let auto = GradientFn::builder(&m, "f").wrt(["x", "y"]).build().unwrap();
    let reverse = GradientFn::builder(&m, "f").wrt(["x", "y"]).gradient_mode(GradientMode::Reverse).build().unwrap();
    assert_eq!(auto.mode_for(&args![0.5, 2.0, 3i64]), GradientMode::Forward);
    for (x, y) in [(0.5, 2.0), (-1.25, 0.0), (3.0, -7.5)] {
        let (mut lanes, mut adjoint) = ([0.0; 2], [0.0; 2]);
        let v = auto.value_and_grad(&mut args![x, y, 3i64], &mut lanes).unwrap();
        let w = reverse.value_and_grad(&mut args![x, y, 3i64], &mut adjoint).unwrap();
        assert_eq!(v, w);
        let want = [3.0 * (y + x.cos()), 3.0 * x];
        for k in 0..2 {
            assert!((lanes[k] - want[k]).abs() <= 1e-15 * want[k].abs().max(1.0), "{lanes:?} {want:?}");
            assert!((adjoint[k] - want[k]).abs() <= 1e-15 * want[k].abs().max(1.0), "{adjoint:?} {want:?}");
        }
    }
    // Forward lanes record no pullback state: the call did not run reverse mode.
    assert_eq!(auto.tape_bytes(), 0);
}

/// A slice read only at constant indices (the pendulum's parameters) counts as long as its
/// largest index plus one, so Auto mode builds those lanes at build too; a call with a longer
/// slice has more inputs than that guess and takes reverse mode. Both give reverse mode's
/// gradient.
#[test]
fn slices_read_at_constant_indices_get_forward_lanes_at_build() {
    let m = parse_module(
        "func @f(p: slice, x: f64) -> f64 {\nentry:\n    zero = iconst 0\n    two = iconst 2\n    \
         a = load p, zero\n    b = load p, two\n    s = sin a\n    t = fmul s, b\n    r = fmul t, x\n    ret r\n}",
    )
    .unwrap();
    let auto = GradientFn::builder(&m, "f").wrt(["p", "x"]).build().unwrap();
    let reverse = GradientFn::builder(&m, "f").wrt(["p", "x"]).gradient_mode(GradientMode::Reverse).build().unwrap();
    for (p, mode) in
        [(vec![0.5, 9.0, -1.5], GradientMode::Forward), (vec![0.5, 9.0, -1.5, 2.0, 3.0], GradientMode::Reverse)]
    {
        let n = p.len() + 1;
        assert_eq!(auto.mode_for(&args![&p[..], 1.25]), mode);
        let (mut got, mut want) = (vec![0.0; n], vec![0.0; n]);
        let v = auto.value_and_grad(&mut args![&p[..], 1.25], &mut got).unwrap();
        let w = reverse.value_and_grad(&mut args![&p[..], 1.25], &mut want).unwrap();
        assert_eq!(v, w);
        for k in 0..n {
            assert!((got[k] - want[k]).abs() <= 1e-15 * want[k].abs().max(1.0), "{got:?} {want:?}");
        }
        assert_eq!(got[1], 0.0, "an element never read");
    }
}
