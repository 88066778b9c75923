//! The optimisation examples of `examples/` run in CI: their cores are included here as modules
//! and must reach the results their docs promise.
#![cfg(feature = "argmin")]

#[allow(dead_code)] // the example's `main`
#[path = "../../examples/rosenbrock_lbfgs.rs"]
mod rosenbrock_lbfgs;

#[allow(dead_code)]
#[path = "../../examples/pendulum_fit.rs"]
mod pendulum_fit;

#[allow(dead_code)]
#[path = "../../examples/newton_cg.rs"]
mod newton_cg;

#[test]
fn lbfgs_solves_rosenbrock_1000_from_the_standard_start() {
    let s = rosenbrock_lbfgs::solve(1000).unwrap();
    assert!(s.cost < 1e-10, "final objective {:e} after {} iterations ({})", s.cost, s.iterations, s.reason);
    assert_eq!(s.reason, "converged");
    assert_eq!(s.x.len(), 1000);
    assert!(s.x.iter().all(|v| (v - 1.0).abs() < 1e-4));
    // Every iteration needs at least one gradient; the cache makes cost + gradient one call.
    assert!(s.evaluations > s.iterations && s.evaluations < 3 * s.iterations, "{} evaluations", s.evaluations);
}

#[test]
fn the_pendulum_fit_recovers_the_true_parameters_within_the_noise() {
    let experiment = pendulum_fit::Experiment::default();
    let fit = pendulum_fit::fit(&experiment).unwrap();
    // The residuals look like the noise ...
    let ratio = fit.rms_residual / experiment.noise;
    assert!((0.7..1.3).contains(&ratio), "rms residual {} vs noise {}", fit.rms_residual, experiment.noise);
    for i in 0..3 {
        let (got, truth, se) = (fit.params[i], experiment.truth[i], fit.standard_errors[i]);
        // ... the parameters are determined well (the check below is not vacuous) ...
        assert!(se < 0.1 * truth, "parameter {i}: standard error {se} for {truth}");
        // ... and the estimates lie within 4 standard errors of the truth, having moved from a
        // start many standard errors away.
        assert!((got - truth).abs() < 4.0 * se, "parameter {i}: {got} ± {se}, truth {truth}");
        assert!((experiment.start[i] - truth).abs() > 10.0 * se, "parameter {i}: the start is already a fit");
    }
    // The noiseless data are fitted exactly.
    let exact = pendulum_fit::Experiment { noise: 0.0, ..experiment };
    let fit = pendulum_fit::fit(&exact).unwrap();
    assert!(fit.cost < 1e-12, "noiseless fit: cost {:e}", fit.cost);
    for i in 0..3 {
        assert!((fit.params[i] - exact.truth[i]).abs() < 1e-4 * exact.truth[i], "{:?}", fit.params);
    }
}

#[test]
fn newton_cg_with_exact_hvps_needs_fewer_iterations_than_lbfgs() {
    for n in [2, 3] {
        let [newton, lbfgs] = newton_cg::compare(n).unwrap();
        for r in [&newton, &lbfgs] {
            let at = format!("n = {n}, {}: {} iterations, f = {:e} ({})", r.solver, r.iterations, r.cost, r.reason);
            assert_eq!(r.reason, "converged", "{at}");
            assert!(r.gradient_norm < newton_cg::TOLERANCE, "{at}: |grad f| = {:e}", r.gradient_norm);
            // The global minimum f = 0 at (1, ..., 1), not a stationary point elsewhere.
            assert!(r.cost < 1e-16, "{at}");
            assert!(r.x.iter().all(|v| (v - 1.0).abs() < 1e-7), "{at}: {:?}", r.x);
        }
        // The Newton steps came from Hessian-vector products (at least one per iteration).
        assert!(newton.hvps >= newton.iterations, "n = {n}: {} products", newton.hvps);
        assert_eq!(lbfgs.hvps, 0);
        assert!(
            newton.iterations < lbfgs.iterations,
            "n = {n}: Newton-CG {} iterations, L-BFGS {}",
            newton.iterations,
            lbfgs.iterations
        );
    }
}
