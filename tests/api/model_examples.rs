//! The examples whose models are plain Rust (`examples/models/`) run in CI: their cores are
//! included here as modules and must reach what their docs promise.
#![cfg(feature = "argmin")]

#[allow(dead_code)] // the example's `main`
#[path = "../../examples/logistic_regression.rs"]
mod logistic_regression;

use jitdiff::front::lower_source;
use jitdiff::{GradientFn, args, check, fd::FdOptions};
use logistic_regression::Data;

/// The gradient of the logistic loss by hand: `(1/n) Σ -y_i σ(-y_i z_i) x_i + λ w`.
fn hand_gradient(w: &[f64], data: &Data, lambda: f64) -> Vec<f64> {
    let mut g: Vec<f64> = w.iter().map(|v| lambda * v).collect();
    for i in 0..data.n {
        let row = &data.x[i * data.d..(i + 1) * data.d];
        let z: f64 = row.iter().zip(w).map(|(a, b)| a * b).sum();
        let s = 1.0 / (1.0 + (data.y[i] * z).exp());
        for (gj, xj) in g.iter_mut().zip(row) {
            *gj -= data.y[i] * s * xj / data.n as f64;
        }
    }
    g
}

#[test]
fn logistic_regression_trains_to_a_stationary_point_equal_to_the_rustc_model() {
    let data = Data::generate(3000, 12, 5);
    let t = logistic_regression::train(&data, 1e-3, 500).unwrap();
    assert!(t.gradient_norm < 1e-6, "|grad| {:e} after {} iterations", t.gradient_norm, t.iterations);
    assert!((t.loss - t.rustc_loss).abs() <= 1e-13 * t.rustc_loss, "{} vs rustc {}", t.loss, t.rustc_loss);
    // The stationary point is the hand-written gradient's too.
    let hand = hand_gradient(&t.w, &data, 1e-3);
    assert!(hand.iter().map(|g| g * g).sum::<f64>().sqrt() < 1e-6, "{hand:?}");
}

#[test]
fn the_logistic_gradient_equals_the_hand_written_one_and_finite_differences() {
    let data = Data::generate(500, 7, 9);
    let module = lower_source(include_str!("../../examples/models/logistic.rs")).unwrap();
    let loss = GradientFn::builder(&module, "logistic").wrt(["w"]).build().unwrap();
    let w: Vec<f64> = (0..7).map(|j| 0.3 * j as f64 - 0.8).collect();
    let mut grad = vec![0.0; 7];
    loss.value_and_grad(&mut args![&w, &data.x, &data.y, data.n, data.d, 0.01], &mut grad).unwrap();
    for (a, b) in grad.iter().zip(hand_gradient(&w, &data, 0.01)) {
        assert!((a - b).abs() <= 1e-13 * b.abs().max(1e-3), "{a} vs {b}");
    }
    let report =
        check::gradient(&loss, &mut args![&w, &data.x, &data.y, data.n, data.d, 0.01], FdOptions::central()).unwrap();
    assert!(report.passes(1e-7), "{report}");
    assert_eq!(report.coords[3].label, "w[3]");
}

#[allow(dead_code)]
#[path = "../../examples/lotka_volterra.rs"]
mod lotka_volterra;

#[test]
fn the_lotka_volterra_fit_recovers_the_parameters_within_their_standard_errors() {
    let experiment = lotka_volterra::Experiment::default();
    let observed = experiment.observe();
    let fit = lotka_volterra::fit(&experiment, &observed).unwrap();
    assert_eq!((fit.jacobian.rows, fit.jacobian.cols), (200, 6));
    let ratio = fit.rms_residual / experiment.noise;
    assert!((0.7..1.3).contains(&ratio), "rms residual {} vs noise {}", fit.rms_residual, experiment.noise);
    for i in 0..6 {
        let (got, truth, start, se) = (fit.theta[i], experiment.truth[i], experiment.start[i], fit.standard_errors[i]);
        assert!(se < 0.05 * truth, "{}: standard error {se} for {truth}", lotka_volterra::NAMES[i]);
        assert!((got - truth).abs() < 4.0 * se, "{}: {got} vs {truth} ± {se}", lotka_volterra::NAMES[i]);
        assert!(
            (start - truth).abs() > 4.0 * se,
            "{}: the start is already within the noise",
            lotka_volterra::NAMES[i]
        );
    }
}

#[test]
fn the_lotka_volterra_jacobian_matches_finite_differences_in_both_modes() {
    use jitdiff::{JacobianFn, JacobianMode};
    let module = lower_source(include_str!("../../examples/models/lotka_volterra.rs")).unwrap();
    let theta = [1.0, 0.1, 1.5, 0.075, 10.0, 5.0];
    let mut trajectory = vec![0.0; 200];
    let reverse = GradientFn::builder(&module, "trajectory").wrt(["theta"]).build().unwrap();
    let report = check::jacobian(&reverse, &mut args![&theta, 0.1, &mut trajectory], FdOptions::central()).unwrap();
    // 100 RK4 steps amplify the differences' truncation error to ~1e-7.
    assert!(report.passes(1e-5), "{report}");
    assert!(report.max_rel_err > 0.0, "central differences are not exact");
    assert_eq!(report.coords[7].label, "trajectory[1] / theta[1]");
    let jacobian = JacobianFn::builder(&module, "trajectory").wrt(["theta"]).build().unwrap();
    let forward = jacobian.jacobian(&mut args![&theta, 0.1, &mut trajectory]).unwrap();
    let by_lanes =
        jacobian.with_mode(JacobianMode::Reverse).jacobian(&mut args![&theta, 0.1, &mut trajectory]).unwrap();
    for (a, b) in forward.data.iter().zip(&by_lanes.data) {
        assert!((a - b).abs() <= 1e-12 * a.abs().max(1.0), "{a} vs {b}");
    }
}
