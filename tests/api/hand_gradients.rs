//! The hand-written analytic gradients of the benchmark problems (the speed baseline jitdiff is
//! compared against) are right: they agree with jitdiff's reverse mode (`GradientFn`) to 1e-9
//! relative in every entry and with central differences of the plain-Rust primal.

use jitdiff::GradientFn;
use jitdiff::ir::{ArgValue, parse_module};
use jitdiff::jit::Arg;
use jitdiff_problems::gmm::{Gmm, Wishart, gmm_objective};
use jitdiff_problems::mlp::{Mlp, mlp_loss};
use jitdiff_problems::pendulum::{Pendulum, pendulum_loss};
use jitdiff_problems::rosenbrock::{Rosenbrock, rosenbrock};
use jitdiff_problems::{Problem, relative_error};

fn native_args(values: &[ArgValue]) -> Vec<Arg<'_>> {
    values
        .iter()
        .map(|a| match a {
            ArgValue::F64(x) => Arg::F64(*x),
            ArgValue::I64(x) => Arg::I64(*x),
            ArgValue::Bool(x) => Arg::Bool(*x),
            ArgValue::Vector(v) => Arg::Vector(v),
            ArgValue::Slice(v) | ArgValue::SliceMut(v) => Arg::Slice(v),
        })
        .collect()
}

fn hand(problem: &dyn Problem) -> (f64, Vec<f64>) {
    let mut grad = vec![f64::NAN; problem.gradient_len()];
    let value = problem.hand_value_and_grad(&mut grad).expect("the problem has a hand-written gradient");
    (value, grad)
}

fn jitdiff_gradient(problem: &dyn Problem) -> (f64, Vec<f64>) {
    let module = parse_module(problem.ir()).unwrap();
    let args = problem.args();
    let wrt: Vec<bool> = (0..args.len()).map(|i| problem.active_params().contains(&i)).collect();
    let f = GradientFn::builder(&module, problem.entry()).wrt_mask(&wrt).build().unwrap();
    let mut grad = vec![f64::NAN; problem.gradient_len()];
    let value = f.value_and_grad(&mut native_args(&args), &mut grad).unwrap();
    (value, grad)
}

/// Entry by entry: relative error at most `tol`, or absolute error at most `floor * max|want|`
/// (for central differences, whose rounding error is absolute: entries far below the largest
/// carry little relative accuracy).
fn assert_close(label: &str, what: &str, got: &[f64], want: &[f64], tol: f64, floor: f64) {
    assert_eq!(got.len(), want.len(), "{label}: gradient lengths");
    let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = relative_error(g, w) <= tol || (g - w).abs() <= floor * scale;
        assert!(ok, "{label}: {what} entry {i}: {g} vs {w} (relative {:e})", relative_error(g, w));
    }
}

/// Hand-written against reverse mode, and against central differences of `primal` (the
/// plain-Rust reference as a function of the flat active parameters `flat`).
fn check(problem: &dyn Problem, flat: &[f64], primal: &dyn Fn(&[f64]) -> f64, fd_tol: f64) {
    let label = problem.label();
    let (value, grad) = hand(problem);
    assert!(relative_error(value, problem.reference()) <= 1e-12, "{label}: value {value}");
    assert!(grad.iter().all(|g| g.is_finite()), "{label}: every entry written");
    let (ad_value, ad_grad) = jitdiff_gradient(problem);
    assert!(relative_error(value, ad_value) <= 1e-12, "{label}: {value} vs reverse mode {ad_value}");
    assert_close(&label, "hand vs reverse mode", &grad, &ad_grad, 1e-9, 0.0);
    let mut x = flat.to_vec();
    let fd: Vec<f64> = (0..x.len())
        .map(|i| {
            let x0 = x[i];
            let h = 1e-6 * x0.abs().max(1.0);
            x[i] = x0 + h;
            let plus = primal(&x);
            x[i] = x0 - h;
            let minus = primal(&x);
            x[i] = x0;
            (plus - minus) / (2.0 * h)
        })
        .collect();
    assert_close(&label, "hand vs central differences", &grad, &fd, fd_tol, fd_tol * 1e-3);
}

#[test]
fn rosenbrock_hand_gradient() {
    for n in [2, 10, 1000] {
        let p = Rosenbrock { x: (0..n).map(|i| 0.3 * (i as f64).sin() - 0.1).collect() };
        check(&p, &p.x.clone(), &rosenbrock, 1e-5);
    }
}

fn gmm_flat(g: &Gmm) -> Vec<f64> {
    [&g.alphas[..], &g.means, &g.icf].concat()
}

fn check_gmm(g: &Gmm) {
    let (k, d) = (g.k, g.d);
    let primal = |flat: &[f64]| {
        let (alphas, rest) = flat.split_at(k);
        let (means, icf) = rest.split_at(k * d);
        gmm_objective(d, alphas, means, icf, &g.x, g.wishart)
    };
    check(g, &gmm_flat(g), &primal, 1e-5);
}

#[test]
fn gmm_hand_gradient_small_sizes_and_a_nontrivial_prior() {
    check_gmm(&Gmm::generate(1, 1, 7, 3));
    check_gmm(&Gmm::generate(3, 4, 50, 4));
    let mut g = Gmm::generate(4, 3, 40, 5);
    g.wishart = Wishart { gamma: 1.7, m: 3 };
    check_gmm(&g);
    check_gmm(&Gmm::generate(2, 5, 1000, jitdiff_problems::gmm::DEFAULT_SEED));
}

#[test]
fn gmm_hand_gradient_matches_reverse_mode_at_d10_k25() {
    let g = Gmm::generate(10, 25, 1000, jitdiff_problems::gmm::DEFAULT_SEED);
    let (value, grad) = hand(&g);
    let (ad_value, ad_grad) = jitdiff_gradient(&g);
    assert!(relative_error(value, ad_value) <= 1e-12, "{value} vs {ad_value}");
    assert_close(&g.label(), "hand vs reverse mode", &grad, &ad_grad, 1e-9, 0.0);
}

fn check_pendulum(p: &Pendulum) {
    let primal = |flat: &[f64]| pendulum_loss(&[flat[0], flat[1], flat[2]], p.theta0, p.omega0, p.dt, p.steps);
    check(p, &p.params, &primal, 1e-5);
}

#[test]
fn pendulum_hand_gradient() {
    // The standard 1000-step swing ends sticking: the velocity changes sign from one step to the
    // next, so the loss is piecewise smooth on a scale far below any difference step. There the
    // hand-written gradient is checked against reverse mode only.
    let standard = Pendulum::standard();
    let (hand_value, hand_grad) = hand(&standard);
    let (ad_value, ad_grad) = jitdiff_gradient(&standard);
    assert!(relative_error(hand_value, ad_value) <= 1e-12);
    assert_close(&standard.label(), "hand vs reverse mode", &hand_grad, &ad_grad, 1e-9, 0.0);
    check_pendulum(&Pendulum::with_steps(200));
    check_pendulum(&Pendulum::with_steps(1));
    // Starting at rest with no angle: the friction branch at omega == 0 is taken.
    check_pendulum(&Pendulum { params: [4.0, 0.3, 0.1], theta0: 0.0, omega0: 0.0, dt: 0.05, steps: 20 });
    check_pendulum(&Pendulum { params: [2.0, 0.0, 0.05], theta0: -0.4, omega0: 1.5, dt: 0.02, steps: 300 });
}

fn check_mlp(m: &Mlp) {
    let (hidden, inputs) = (m.hidden, m.inputs);
    let primal = |flat: &[f64]| {
        let (w1, rest) = flat.split_at(hidden * inputs);
        let (b1, rest) = rest.split_at(hidden);
        let (w2, b2) = rest.split_at(hidden);
        mlp_loss(w1, b1, w2, b2[0], &m.x, &m.y)
    };
    let flat = [&m.w1[..], &m.b1, &m.w2, &[m.b2]].concat();
    check(m, &flat, &primal, 1e-5);
}

#[test]
fn mlp_hand_gradient() {
    check_mlp(&Mlp::generate(1, 1, 1, 1));
    check_mlp(&Mlp::generate(3, 4, 5, 2));
    check_mlp(&Mlp::standard());
}

#[test]
fn every_standard_problem_has_a_hand_written_gradient() {
    for p in jitdiff_problems::standard_problems() {
        let mut grad = vec![0.0; p.gradient_len()];
        let value = p.hand_value_and_grad(&mut grad);
        assert!(value.is_some(), "{} has no hand-written gradient", p.label());
        assert!(relative_error(value.unwrap(), p.reference()) <= 1e-12, "{}", p.label());
    }
}
