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
/// An array result: `N` results to the IR, an array to the typed primal, a local array to
/// callers (`area`).
#[jitdiff::module]
mod vectors {
    pub fn cross(a: &[f64], b: &[f64]) -> [f64; 3] {
        [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
    }
    pub fn area(a: &[f64], b: &[f64]) -> f64 {
        let [x, y, z] = cross(a, b);
        0.5 * (x * x + y * y + z * z).sqrt()
    }
}

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
/// The line of `at`'s `x[i]`.
const AT_LINE: u32 = line!() - 3;

/// Seven integer-class parts (three slices and a count: four of them on the stack of a direct
/// native call) around two floats; writes `out`, faults for `n` past `a`'s end.
#[jitdiff::function]
fn spread(a: &[f64], x: f64, n: usize, out: &mut [f64], b: &[f64], y: f64) -> f64 {
    let p = a[n] * x;
    out[0] = p + b[1];
    out[1] = p * y;
    p - y + (a.len() + b.len() + out.len()) as f64
}

/// Two differentiated slices around a count: the macro's `value_and_grad_into` calls the fused
/// reverse-mode function directly, the gradient split into one piece per slice (the pullback
/// recomputes what it needs from the slices: no tape).
#[jitdiff::function]
fn weighted(a: &[f64], n: usize, b: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..n {
        s += a[i] * a[i] * b[i] + 3.0 * a[i] * b[i];
    }
    s
}

/// The same shape with a quotient, which the pullback takes from the tape, and a sum halved
/// every step, so that the reversed loop carries a cotangent that changes from one iteration
/// to the next and cannot run fused with the forward loop: the tape stays, the general path.
#[jitdiff::function]
fn weighted_ratio(a: &[f64], n: usize, b: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..n {
        s = 0.5 * s + a[i] * a[i] * b[i] + a[i] / (1.0 + b[i] * b[i]);
    }
    s
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

/// Rosenbrock with its term as a closure bound with `let`.
#[jitdiff::function]
fn rosenbrock_closure(x: &[f64]) -> f64 {
    let term = |a: f64, b: f64| 100.0 * ((b - a * a) * (b - a * a)) + (1.0 - a) * (1.0 - a);
    let mut sum = 0.0;
    for i in 0..x.len() - 1 {
        sum += term(x[i], x[i + 1]);
    }
    sum
}

/// Rosenbrock over windows of two.
#[jitdiff::function]
fn rosenbrock_windows(x: &[f64]) -> f64 {
    x.windows(2).map(|w| 100.0 * ((w[1] - w[0] * w[0]) * (w[1] - w[0] * w[0])) + (1.0 - w[0]) * (1.0 - w[0])).sum()
}

/// Rosenbrock as iterators over two overlapping sub-slices.
#[jitdiff::function]
fn rosenbrock_pairs(x: &[f64]) -> f64 {
    let n = x.len();
    x[..n - 1].iter().zip(&x[1..]).map(|(a, b)| 100.0 * ((b - a * a) * (b - a * a)) + (1.0 - a) * (1.0 - a)).sum()
}

#[test]
fn sub_slices_windows_and_closures_differentiate_like_index_loops() {
    let x = [-1.2, 1.0, 0.5, 2.0, -0.3];
    let (value, grad) = rosenbrock_pairs::gradient().unwrap().value_and_grad(&x).unwrap();
    assert_eq!(value, rosenbrock_pairs(&x));
    let (loop_value, loop_grad) = rosenbrock::gradient().unwrap().value_and_grad(&x).unwrap();
    super::assert_close(&[value], &[loop_value], 1e-14, "value");
    super::assert_close(&grad, &loop_grad, 1e-14, "gradient");
    let g = rosenbrock_pairs::gradient().unwrap();
    let report = check::gradient(g.handle(), &mut rosenbrock_pairs::args(&x), FdOptions::central()).unwrap();
    assert!(report.passes(1e-6), "{report}");
    let (window_value, window_grad) = rosenbrock_windows::gradient().unwrap().value_and_grad(&x).unwrap();
    assert_eq!(window_value, rosenbrock_windows(&x));
    super::assert_close(&window_grad, &loop_grad, 1e-14, "gradient over windows");
    let (closure_value, closure_grad) = rosenbrock_closure::gradient().unwrap().value_and_grad(&x).unwrap();
    assert_eq!(closure_value, rosenbrock_closure(&x));
    super::assert_close(&closure_grad, &loop_grad, 1e-14, "gradient through a closure");
    // One element: `x[..0]` is empty, the sum `-0.0` as in Rust.
    assert_eq!(rosenbrock_pairs::gradient().unwrap().value_and_grad(&[3.0]).unwrap(), (-0.0, vec![0.0]));
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
    // An array result: the typed primal returns the array, the Jacobian has its rows, and a
    // caller's gradient agrees with central differences.
    let (a, b) = ([1.0, 2.0, 3.0], [0.5, -1.0, 2.0]);
    assert_eq!(vectors::cross::primal().unwrap().call(&a, &b).unwrap(), vectors::cross(&a, &b));
    let j = vectors::cross::gradient().unwrap().jacobian(&a, &b).unwrap();
    assert_eq!((j.rows, j.cols), (3, 6));
    assert_eq!(&j.data[..6], &[0.0, b[2], -b[1], 0.0, -a[2], a[1]], "d cross_x / d (a, b)");
    let g = vectors::area::gradient().unwrap();
    assert_eq!(g.value_and_grad(&a, &b).unwrap().0, vectors::area(&a, &b));
    let report =
        jitdiff::check::gradient(g.handle(), &mut vectors::area::args(&a, &b), jitdiff::fd::FdOptions::central())
            .unwrap();
    assert!(report.passes(1e-7), "{report}");
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
fn primal_calls_agree_with_rust_through_the_typed_native_call() {
    let (a, b) = ([1.5, -2.0, 4.0], [0.5, 3.25]);
    let jit = spread::primal().unwrap();
    for (n, x, y) in [(0, 2.0, 0.75), (2, -1.0, 1e-3)] {
        let (mut out, mut jit_out) = ([0.0; 3], [0.0; 3]);
        let want = spread(&a, x, n, &mut out, &b, y);
        let got = jit.call(&a, x, n, &mut jit_out, &b, y).unwrap();
        assert_eq!((got.to_bits(), jit_out), (want.to_bits(), out));
    }
    // A fault inside the native call: reported in the function's terms.
    let err = jit.call(&a, 1.0, 3, &mut [0.0; 3], &b, 2.0).unwrap_err();
    assert!(matches!(err, Error::Fault { .. }), "{err}");
    assert!(err.to_string().contains("index 3 out of bounds for a slice of length 3"), "{err}");
    // A tuple result, and a `usize` result (which takes the general path).
    let x = [1.0, -2.0, 3.0];
    assert_eq!(moments::primal().unwrap().call(&x).unwrap(), moments(&x));
    assert_eq!(count_positive::primal().unwrap().call(&x).unwrap(), 2);
}

/// The macro's `value_and_grad_into` of a function of two slices and a count, against the
/// forward function and pullback (`vjp`: separate code) bit for bit, with its errors.
macro_rules! check_value_and_grad {
    ($f:ident) => {{
        let g = $f::gradient().unwrap();
        let a = [0.5, -1.25, 2.0, 0.75, -0.5];
        let b = [1.5, 0.25, -3.0, 2.5, 1.0, 9.0];
        for n in [5, 3, 0] {
            let mut grad = [f64::NAN; 11];
            let value = g.value_and_grad_into(&a, n, &b, &mut grad).unwrap();
            assert_eq!(value, $f(&a, n, &b));
            let mut dx = [0.0; 11];
            let results = g.handle().vjp(&mut $f::args(&a, n, &b), &[1.0], &mut dx).unwrap();
            assert_eq!(results, [jitdiff::ir::RuntimeValue::F64(value)]);
            assert_eq!(grad.map(f64::to_bits), dx.map(f64::to_bits), "n = {n}");
        }
        // A gradient of the wrong length: the general path's error.
        let err = g.value_and_grad_into(&a, 2, &b, &mut [0.0; 10]).unwrap_err();
        assert!(matches!(err, Error::BufferLength { expected: 11, got: 10, .. }), "{err}");
        // A fault inside the fused function: in the function's terms.
        let err = g.value_and_grad_into(&a, 6, &b, &mut [0.0; 11]).unwrap_err();
        assert!(matches!(err, Error::Fault { .. }), "{err}");
        assert!(err.to_string().contains("index 5 out of bounds for a slice of length 5"), "{err}");
        // Four inputs: forward lanes (`GradientMode::Auto`), through the general path.
        let mut grad = [0.0; 4];
        let value = g.value_and_grad_into(&a[..2], 2, &b[..2], &mut grad).unwrap();
        let mut dx = [0.0; 4];
        g.handle().vjp(&mut $f::args(&a[..2], 2, &b[..2]), &[1.0], &mut dx).unwrap();
        assert_eq!(value, $f(&a[..2], 2, &b[..2]));
        super::assert_close(&grad, &dx, 1e-15, "forward lanes against the vjp");
        g
    }};
}

#[test]
fn typed_value_and_grad_agrees_with_the_vjp_bit_for_bit() {
    // The last call of each check is by forward lanes; one more in reverse mode reports the
    // tape it used: none for the typed native call.
    let g = check_value_and_grad!(weighted);
    g.value_and_grad_into(&[1.0; 5], 5, &[2.0; 5], &mut [0.0; 10]).unwrap();
    assert_eq!(g.handle().tape_bytes(), 0, "no tape: the typed native call");
    let g = check_value_and_grad!(weighted_ratio);
    g.value_and_grad_into(&[1.0; 5], 5, &[2.0; 5], &mut [0.0; 10]).unwrap();
    assert!(g.handle().tape_bytes() > 0, "a tape: the general path");
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
    // The site is the Rust source's line and column (see `macro_faults_name_the_source_line`).
    assert_eq!(
        err.to_string(),
        format!("@at: index 5 out of bounds for a slice of length 2 at line {AT_LINE}, column 5")
    );
}

/// `weights[k] * x[k + 1]`: faults past the end of either slice.
#[jitdiff::function]
fn shifted_product(weights: &[f64], x: &[f64], k: usize) -> f64 {
    let w = weights[k];
    w * x[k + 1]
}
/// The line of `shifted_product`'s `weights[k]`.
const SHIFTED_PRODUCT_LINE: u32 = line!() - 4;

/// Within a `#[jitdiff::module]`, a fault in a called function names that function's line.
#[jitdiff::module]
mod chained {
    pub fn inner(v: &[f64], i: usize) -> f64 {
        v[i] * v[i]
    }
    pub fn outer(v: &[f64], i: usize) -> f64 {
        inner(v, i + 2)
    }
}
/// The line of `chained::inner`'s `v[i]`.
const CHAINED_INNER_LINE: u32 = line!() - 7;

/// A helper called with sub-slices, windows and a `&mut` sub-slice.
#[jitdiff::module]
mod rows {
    fn dot(a: &[f64], b: &[f64]) -> f64 {
        let mut s = 0.0;
        for i in 0..a.len() {
            s += a[i] * b[i];
        }
        s
    }
    fn at(v: &[f64], i: usize) -> f64 {
        v[i]
    }
    pub fn layer(w: &[f64], x: &[f64]) -> f64 {
        let n = x.len();
        let mut total = 0.0;
        for i in 0..w.len() / n {
            total += dot(&w[i * n..(i + 1) * n], x).tanh();
        }
        total + x.windows(2).map(|p| dot(p, p)).sum::<f64>()
    }
    pub fn last_of_head(x: &[f64], i: usize) -> f64 {
        at(&x[..2], i)
    }
}
/// The line of `rows::at`'s `v[i]`.
const ROWS_AT_LINE: u32 = line!() - 15;

#[test]
fn helpers_called_with_sub_slices_differentiate_and_fault_in_source_terms() {
    let (w, x) = ([0.5, -1.0, 2.0, 0.25, 1.5, -0.75], [0.3, -0.2, 0.9]);
    let g = rows::layer::gradient().unwrap();
    let (value, grad) = g.value_and_grad(&w, &x).unwrap();
    assert_eq!(value, rows::layer(&w, &x));
    let report = check::gradient(g.handle(), &mut rows::layer::args(&w, &x), FdOptions::central()).unwrap();
    assert!(report.passes(1e-6), "{report}");
    assert_eq!(grad.len(), w.len() + x.len());
    // x[..2][2] is past the sub-slice's end (x has the element): a fault at `at`'s `v[i]`,
    // named as the source names it.
    let primal = rows::last_of_head::primal().unwrap();
    assert_eq!(primal.call(&x, 1).unwrap(), x[1]);
    let e = primal.call(&x, 2).unwrap_err();
    assert!(e.to_string().contains(&format!("line {ROWS_AT_LINE}, column 9 of @at,")), "{e}");
}

/// A run-time fault of a function written with the macros names its line and column in this
/// file (the typed handles replay it on the function as written), in the primal and in
/// derivative code, and in a function the faulting one calls.
#[test]
fn macro_faults_name_the_source_line() {
    let (w, x) = ([1.0, 2.0, 3.0], [1.0, 2.0]);
    let weights_at = format!("line {SHIFTED_PRODUCT_LINE}, column 13");
    let x_at = format!("line {}, column 9", SHIFTED_PRODUCT_LINE + 1);
    let primal = shifted_product::primal().unwrap();
    let e = primal.call(&w, &x, 3).unwrap_err();
    assert!(e.to_string().contains(&weights_at), "{e}");
    let e = primal.call(&w, &x, 1).unwrap_err();
    assert!(e.to_string().contains(&x_at), "{e}");
    let gradient = shifted_product::gradient().unwrap();
    let e = gradient.value_and_grad(&w, &x, 1).unwrap_err();
    assert!(matches!(e, Error::Fault { in_derivative: false, .. }) && e.to_string().contains(&x_at), "{e}");
    let e = chained::outer::primal().unwrap().call(&x, 0).unwrap_err();
    assert!(e.to_string().contains(&format!("line {CHAINED_INNER_LINE}, column 9 of @inner")), "{e}");
}

/// `x[0] / x[1]`, asserting a nonzero divisor: a Rust function (which panics there) and typed
/// handles (which report the panic as a fault at the `assert!`).
#[jitdiff::function]
fn checked_ratio(x: &[f64]) -> f64 {
    assert!(x[1] != 0.0, "divisor is zero");
    x[0] / x[1]
}
/// The line of `checked_ratio`'s `assert!`.
const CHECKED_RATIO_LINE: u32 = line!() - 4;

#[test]
fn a_failed_assert_is_a_fault_at_its_line() {
    let g = checked_ratio::gradient().unwrap();
    let (value, grad) = g.value_and_grad(&[3.0, 2.0]).unwrap();
    assert_eq!((value, grad), (checked_ratio(&[3.0, 2.0]), vec![0.5, -0.75]));
    let err = g.value_and_grad(&[3.0, 0.0]).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "@checked_ratio: explicit panic (`panic!`, `unreachable!` or a failed `assert!`) at line {CHECKED_RATIO_LINE}, column 5"
        )
    );
    let err = checked_ratio::primal().unwrap().call(&[3.0, 0.0]).unwrap_err();
    assert!(matches!(err, Error::Fault { .. }), "{err}");
}

/// A function generic over its float type, as written for num-traits or num-dual: the handles
/// take it at `f64`.
#[jitdiff::function]
fn generic_norm<T: num_traits::Float>(x: &[T], scale: T) -> T {
    let mut s = T::zero();
    for &v in x {
        s = s + v * v;
    }
    (s + T::from(1e-12).unwrap()).sqrt() * scale
}

#[test]
fn a_generic_function_gets_handles_at_f64() {
    let x = [3.0, 4.0];
    let (value, grad) = generic_norm::gradient().unwrap().value_and_grad(&x, 2.0).unwrap();
    assert_eq!(value, generic_norm(&x, 2.0));
    let norm = (25.0f64 + 1e-12).sqrt();
    let expected = [2.0 * 3.0 / norm, 2.0 * 4.0 / norm, norm];
    for (g, e) in grad.iter().zip(expected) {
        assert!((g - e).abs() <= 1e-15 * e.abs(), "{grad:?} vs {expected:?}");
    }
}
