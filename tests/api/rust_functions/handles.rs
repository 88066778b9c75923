//! The typed handles with the rest of the library (`check`, `fd`, `optim`, `parallel`), their
//! allocation-free paths, results other than one `f64`, the parameter kinds, names the
//! generated methods must not collide with, recursion, and errors.

use super::programs::{pendulum_model, rosenbrock};
use jitdiff::fd::{FdOptions, FiniteDiff};
use jitdiff::jit::alloc_count::allocations_on_this_thread;
use jitdiff::{Error, check};

/// The mean and the mean square: two results.
#[jitdiff::function]
fn moments(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let (mut s, mut s2) = (0.0, 0.0);
    for &v in x {
        s += v;
        s2 += v * v;
    }
    (s / n, s2 / n)
}

/// An integer result: only a primal.
#[jitdiff::function]
fn count_positive(x: &[f64]) -> usize {
    let mut n = 0;
    for &v in x {
        if v > 0.0 {
            n += 1;
        }
    }
    n
}

/// Element `i`: faults past the end.
#[jitdiff::function]
fn at(x: &[f64], i: usize) -> f64 {
    x[i]
}

/// `x^n` by recursion.
#[jitdiff::function]
fn power(x: f64, n: i64) -> f64 {
    if n == 0 { 1.0 } else { x * power(x, n - 1) }
}

const N: usize = 3;

/// Every parameter kind: arrays by value (with a named length) and by `&mut`, the integer
/// types, `bool`, and an unnamed parameter.
#[allow(clippy::too_many_arguments)]
#[jitdiff::function]
fn kinds(a: [f64; N], out: &mut [f64; 2], _: f64, k: u32, m: i32, big: i64, flag: bool, s: f64) -> f64 {
    out[0] = a[0] * s;
    out[1] = a[1] * s;
    let scale = if flag { (k as i64 + m as i64 + big) as f64 } else { 1.0 };
    scale * (a[0] + a[1] * a[2]) * s
}

/// Parameters named like the extra arguments of the generated methods.
#[jitdiff::function]
fn clash(grad: &[f64], v: f64, cotangents: f64, tangents: f64, products: f64) -> f64 {
    grad[0] * v * cotangents * tangents * products
}

/// One sample's loss for a linear fit `theta[0] s[0] + theta[1] ≈ s[1]`.
#[jitdiff::function]
fn sample_loss(theta: &[f64], sample: &[f64]) -> f64 {
    let e = theta[0] * sample[0] + theta[1] - sample[1];
    e * e
}

#[test]
fn typed_handles_work_with_check_fd_and_the_untyped_api() {
    let x = [-1.2, 1.0, 0.5, 2.0];
    let g = rosenbrock::gradient().unwrap();
    let report = check::gradient(g.handle(), &mut rosenbrock::args(&x), FdOptions::central()).unwrap();
    assert!(report.passes(1e-6), "{report}");
    let fd = FiniteDiff::of(g.handle(), FdOptions::central()).unwrap();
    let (_, grad) = g.value_and_grad(&x).unwrap();
    let numeric = fd.gradient(&rosenbrock::args(&x)).unwrap();
    super::assert_close(&grad, &numeric, 1e-6, "rosenbrock vs central differences");
    // `builder` gives every option; `from_handle` wraps the result.
    let built = rosenbrock::builder::<FiniteDiff>().fd_options(FdOptions::forward()).build().unwrap();
    assert_eq!(built.options(), FdOptions::forward());
    let typed = rosenbrock::GradientFn::from_handle(rosenbrock::builder().build().unwrap());
    assert_eq!(typed.value_and_grad(&x).unwrap(), (rosenbrock(&x), grad));
    let mut args = rosenbrock::args(&x);
    let report = check::gradient(
        &jitdiff::GradientFn::builder(rosenbrock::module(), rosenbrock::NAME).wrt(["x"]).build().unwrap(),
        &mut args,
        FdOptions::central(),
    )
    .unwrap();
    assert!(report.passes(1e-6));
    // The pendulum's friction branches, checked at a point that swings both ways (not with
    // respect to `dt`: central differences are too coarse for its derivative of 1e3).
    let g = pendulum_model::pendulum::gradient_wrt(&["params", "theta0", "omega0"]).unwrap();
    let mut args = pendulum_model::pendulum::args(&[9.81, 0.2, 0.15], 0.8, 0.3, 0.01, 200);
    let report = check::gradient(g.handle(), &mut args, FdOptions::central()).unwrap();
    assert!(report.passes(1e-6), "{report}");
}

#[cfg(feature = "argmin")]
#[test]
fn typed_handles_make_argmin_objectives() {
    use jitdiff::optim::Objective;
    use jitdiff::optim::argmin::core::{Executor, State};
    use jitdiff::optim::argmin::solver::{linesearch::MoreThuenteLineSearch, quasinewton::LBFGS};
    let g = rosenbrock::gradient().unwrap();
    let x0 = jitdiff_problems::rosenbrock::standard_start(20);
    let objective = Objective::new(g.handle(), rosenbrock::args(&x0)).unwrap();
    let mut grad = vec![0.0; 20];
    let value = objective.value_and_grad(&x0, &mut grad).unwrap();
    assert_eq!((value, grad.clone()), g.value_and_grad(&x0).unwrap());
    let solver = LBFGS::new(MoreThuenteLineSearch::new(), 7);
    let result = Executor::new(objective, solver).configure(|s| s.param(x0.clone()).max_iters(500)).run().unwrap();
    assert!(State::get_best_cost(result.state()) < 1e-10);
}

#[test]
fn typed_handles_make_parallel_sample_sums() {
    let g = sample_loss::gradient_wrt(&["theta"]).unwrap();
    let data = [1.0, 3.1, 2.0, 4.9, 3.0, 7.2, 4.0, 8.8];
    let theta = [1.5, 0.5];
    let sum = jitdiff::parallel::SampleSum::new(g.handle(), 2, &data, 2, vec![]).unwrap().with_threads(2).unwrap();
    let mut grad = [0.0; 2];
    let total = sum.value_and_grad(&theta, &mut grad).unwrap();
    let (mut want, mut want_grad) = (0.0, [0.0; 2]);
    for sample in data.chunks(2) {
        let (v, dg) = g.value_and_grad(&theta, sample).unwrap();
        want += v;
        want_grad[0] += dg[0];
        want_grad[1] += dg[1];
    }
    super::assert_close(&[total], &[want], 1e-14, "sum");
    super::assert_close(&grad, &want_grad, 1e-14, "gradient of the sum");
}

#[test]
fn value_and_grad_into_and_the_typed_primal_allocate_nothing() {
    let x = jitdiff_problems::rosenbrock::standard_start(100);
    let (g, p) = (rosenbrock::gradient().unwrap(), rosenbrock::primal().unwrap());
    let mut grad = vec![0.0; 100];
    let count = |f: &mut dyn FnMut() -> f64| {
        f();
        let before = allocations_on_this_thread();
        for _ in 0..1000 {
            f();
        }
        allocations_on_this_thread() - before
    };
    assert_eq!(count(&mut || g.value_and_grad_into(&x, &mut grad).unwrap()), 0);
    assert_eq!(count(&mut || p.call(&x).unwrap()), 0);
    assert_eq!(grad, g.value_and_grad(&x).unwrap().1);
}

#[test]
fn results_other_than_one_f64() {
    let x = [1.0, -2.0, 4.0];
    // Two results: the primal returns the tuple; VJPs and Jacobians apply (value_and_grad does
    // not exist for it, a compile error).
    assert_eq!(moments::primal().unwrap().call(&x).unwrap(), moments(&x));
    let g = moments::gradient().unwrap();
    let mut dx = [0.0; 3];
    assert_eq!(g.vjp(&x, &[1.0, 0.0], &mut dx).unwrap(), moments(&x));
    assert_eq!(dx, [1.0 / 3.0; 3]);
    let j = g.jacobian(&x).unwrap();
    assert_eq!((j.rows, j.cols), (2, 3));
    assert_eq!(&j.data[3..], &[2.0 / 3.0, -4.0 / 3.0, 8.0 / 3.0]);
    // An integer result: the primal only.
    assert_eq!(count_positive::primal().unwrap().call(&x).unwrap(), 2);
    // The untyped API says why there is no gradient.
    let g = jitdiff::GradientFn::builder(count_positive::module(), "count_positive").wrt(["x"]).build().unwrap();
    let err = g.value_and_grad(&mut count_positive::args(&x), &mut [0.0; 3]).unwrap_err();
    assert!(matches!(err, Error::NoFloatResult { .. }), "{err}");
}

#[test]
fn recursion_is_lowered_and_differentiated() {
    let g = power::gradient().unwrap();
    let (value, grad) = g.value_and_grad(1.5, 5).unwrap();
    assert_eq!(value, power(1.5, 5));
    super::assert_close(&grad, &[5.0 * 1.5f64.powi(4)], 1e-14, "d/dx x^5");
    let mut hv = [0.0];
    power::hvp().unwrap().hvp(2.0, 3, &[1.0], &mut hv).unwrap();
    super::assert_close(&hv, &[12.0], 1e-14, "d²/dx² x^3 at 2");
}

#[test]
fn every_parameter_kind_converts() {
    let a = [1.0, 2.0, 3.0];
    let (mut out, mut jit_out) = ([0.0; 2], [0.0; 2]);
    let want = kinds(a, &mut out, 9.0, 2, -3, 5, true, 0.5);
    let got = kinds::primal().unwrap().call(a, &mut jit_out, 9.0, 2, -3, 5, true, 0.5).unwrap();
    assert_eq!((got, jit_out), (want, out));
    assert_eq!(kinds::PARAMS, ["a", "out", "_", "k", "m", "big", "flag", "s"]);
    assert_eq!(kinds::WRT, [0, 1, 2, 7]);
    // d/ds and d/da of `4 (a0 + a1 a2) s` (out's initial contents and `_` do not matter).
    let g = kinds::gradient_wrt(&["a", "s"]).unwrap();
    let (value, grad) = g.value_and_grad(a, &mut jit_out, 9.0, 2, -3, 5, true, 0.5).unwrap();
    assert_eq!(value, want);
    assert_eq!(grad, [4.0 * 0.5, 4.0 * 3.0 * 0.5, 4.0 * 2.0 * 0.5, 4.0 * 7.0]);
}

#[test]
fn extra_arguments_of_generated_methods_do_not_collide_with_parameters() {
    let g = clash::gradient().unwrap();
    let mut grad_ = [0.0; 5];
    let value = g.value_and_grad_into(&[2.0], 3.0, 1.0, 1.0, 1.0, &mut grad_).unwrap();
    assert_eq!((value, grad_), (6.0, [3.0, 2.0, 6.0, 6.0, 6.0]));
    let mut products_ = [0.0; 5];
    clash::hvp().unwrap().hvp(&[2.0], 3.0, 1.0, 1.0, 1.0, &[1.0, 0.0, 0.0, 0.0, 0.0], &mut products_).unwrap();
    assert_eq!(products_, [0.0, 1.0, 3.0, 3.0, 3.0]);
}

#[test]
fn errors_name_the_rust_function_and_parameters() {
    let err = rosenbrock::gradient_wrt(&["y"]).unwrap_err();
    assert!(matches!(err, Error::UnknownParameter { .. }), "{err}");
    assert_eq!(err.to_string(), "@rosenbrock has no parameter named `y`; its parameters are x: slice");
    let err = rosenbrock::forward(3).unwrap_err();
    assert!(err.to_string().contains('3'), "{err}");
    let g = rosenbrock::gradient().unwrap();
    let err = g.value_and_grad_into(&[1.0, 2.0], &mut [0.0; 3]).unwrap_err();
    assert!(matches!(err, Error::BufferLength { expected: 2, got: 3, .. }), "{err}");
    // A run-time fault: indexing past the end.
    let err = at::primal().unwrap().call(&[1.0, 2.0], 2).unwrap_err();
    assert!(matches!(err, Error::Fault { .. }), "{err}");
    assert!(err.to_string().contains("index 2 out of bounds for a slice of length 2"), "{err}");
    let err = at::gradient().unwrap().value_and_grad(&[1.0, 2.0], 5).unwrap_err();
    // No source map from the front end yet: the site is the IR instruction.
    assert_eq!(err.to_string(), "@at: index 5 out of bounds for a slice of length 2 at block entry, instruction 0");
}
