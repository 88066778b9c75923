//! The JIT-compiled primal of each program against the rustc-compiled function it was
//! generated from: bit for bit where only `+ - * /` and comparisons are involved (Rosenbrock,
//! Lotka–Volterra), within 4 ulp where library math is (both call the same `libm`, so in
//! practice they agree exactly too); and the module the attribute lowers at compile time against
//! `jitdiff::front::lower_source` on the program files at run time.

use super::programs::{gmm_model, logistic_model, lotka_volterra_model, mlp, pendulum_model, rosenbrock};
use super::ulps;
use jitdiff::SplitMix64;
use jitdiff::front::lower_source;

#[test]
fn rosenbrock_jit_is_bit_identical_to_rustc() {
    let jit = rosenbrock::primal().unwrap();
    let mut rng = SplitMix64::new(1);
    for n in [2usize, 3, 10, 57] {
        for _ in 0..10 {
            let x: Vec<f64> = (0..n).map(|_| rng.uniform_in(-2.0, 2.0)).collect();
            assert_eq!(jit.call(&x).unwrap().to_bits(), rosenbrock(&x).to_bits(), "n = {n}");
        }
    }
}

#[test]
fn lotka_volterra_jit_is_bit_identical_to_rustc_values_and_trajectory() {
    use lotka_volterra_model::{lotka_volterra, lotka_volterra_fit};
    let (fit, simulate) = (lotka_volterra_fit::primal().unwrap(), lotka_volterra::primal().unwrap());
    let mut rng = SplitMix64::new(6);
    for steps in [1usize, 10, 200] {
        let truth = [1.1, 0.4, 0.4, 0.1];
        let mut observed = vec![0.0; 2 * steps];
        lotka_volterra(&truth, 10.0, 10.0, 0.01, &mut observed);
        let mut jit_observed = vec![0.0; 2 * steps];
        simulate.call(&truth, 10.0, 10.0, 0.01, &mut jit_observed).unwrap();
        assert_eq!(bits(&jit_observed), bits(&observed), "the trajectory written through &mut [f64]");
        for v in observed.iter_mut() {
            *v += 0.1 * rng.normal();
        }
        let params: Vec<f64> = truth.iter().map(|p| p * rng.uniform_in(0.8, 1.2)).collect();
        let (mut work, mut jit_work) = (vec![0.0; 2 * steps], vec![0.0; 2 * steps]);
        let want = lotka_volterra_fit(&params, 10.0, 10.0, 0.01, &observed, &mut work);
        let got = fit.call(&params, 10.0, 10.0, 0.01, &observed, &mut jit_work).unwrap();
        assert_eq!(got.to_bits(), want.to_bits(), "steps = {steps}");
        assert_eq!(bits(&jit_work), bits(&work));
    }
}

#[test]
fn pendulum_jit_matches_rustc_in_every_friction_branch() {
    use pendulum_model::pendulum;
    let jit = pendulum::primal().unwrap();
    let mut rng = SplitMix64::new(3);
    for _ in 0..20 {
        let params = [rng.uniform_in(5.0, 15.0), rng.uniform_in(0.0, 0.5), rng.uniform_in(0.0, 0.3)];
        let (theta0, omega0) = (rng.uniform_in(-1.0, 1.0), rng.uniform_in(-1.0, 1.0));
        let steps = (rng.uniform() * 300.0) as usize;
        let want = pendulum(&params, theta0, omega0, 0.01, steps);
        let got = jit.call(&params, theta0, omega0, 0.01, steps).unwrap();
        assert!(ulps(got, want) <= 4, "got {got:e}, want {want:e}");
    }
    // At rest: the third arm.
    let params = [9.81, 0.1, 0.2];
    assert_eq!(
        jit.call(&params, 0.0, 0.0, 0.01, 10).unwrap().to_bits(),
        pendulum(&params, 0.0, 0.0, 0.01, 10).to_bits()
    );
}

#[test]
fn mlp_gmm_and_logistic_jit_match_rustc_within_4_ulp() {
    let mut rng = SplitMix64::new(4);
    let jit = mlp::primal().unwrap();
    for (inputs, hidden, batch) in [(1usize, 1usize, 1usize), (3, 4, 5), (8, 16, 10)] {
        let (w1, b1, w2) = (rng.normals(hidden * inputs), rng.normals(hidden), rng.normals(hidden));
        let (b2, x, y) = (rng.normal(), rng.normals(batch * inputs), rng.normals(batch));
        let (got, want) = (jit.call(&w1, &b1, &w2, b2, &x, &y).unwrap(), mlp(&w1, &b1, &w2, b2, &x, &y));
        assert!(ulps(got, want) <= 4, "mlp: got {got:e}, want {want:e}");
    }
    let jit = gmm_model::gmm::primal().unwrap();
    for (d, k, n) in [(1usize, 1usize, 1usize), (2, 3, 5), (3, 2, 7), (4, 5, 12)] {
        let p = jitdiff_problems::Gmm::generate(d, k, n, 5);
        let (gamma, m, lgt) = (1.5, 2, rng.normal());
        let (mut q, mut y) = (vec![0.0; k * d], vec![0.0; d]);
        let want = gmm_model::gmm(&p.alphas, &p.means, &p.icf, &p.x, d, gamma, m, lgt, &mut q, &mut y);
        let got = jit.call(&p.alphas, &p.means, &p.icf, &p.x, d, gamma, m, lgt, &mut q, &mut y).unwrap();
        assert!(ulps(got, want) <= 4, "gmm d={d} K={k} n={n}: got {got:e}, want {want:e}");
    }
    let jit = logistic_model::logistic::primal().unwrap();
    for (n, d) in [(1usize, 1usize), (5, 3), (40, 8)] {
        let (w, x) = (rng.normals(d), rng.normals(n * d));
        let y: Vec<f64> = (0..n).map(|_| if rng.uniform() < 0.5 { -1.0 } else { 1.0 }).collect();
        let lambda = rng.uniform();
        let want = logistic_model::logistic(&w, &x, &y, n, d, lambda);
        let got = jit.call(&w, &x, &y, n, d, lambda).unwrap();
        assert!(ulps(got, want) <= 4, "logistic: got {got:e}, want {want:e}");
    }
}

/// The attribute lowers the tokens rustc hands it; `lower_source` lowers the program files'
/// text: the same items, so the same module.
#[test]
fn front_sources_lower_to_the_same_modules_at_run_time() {
    let programs = [
        (include_str!("../../../problems/rust/rosenbrock.rs"), rosenbrock::module()),
        (include_str!("../../../problems/rust/mlp.rs"), mlp::module()),
        (include_str!("../../../problems/rust/pendulum.rs"), pendulum_model::module()),
        (include_str!("../../../problems/rust/gmm.rs"), gmm_model::module()),
        (include_str!("../../../problems/rust/logistic.rs"), logistic_model::module()),
        (include_str!("../../../problems/rust/lotka_volterra.rs"), lotka_volterra_model::module()),
    ];
    for (source, generated) in programs {
        let loaded = lower_source(source).unwrap();
        assert_eq!(&loaded, generated, "{}", jitdiff::ir::print_module(&loaded));
    }
    // `IR` is the module's text; a function of a `#[jitdiff::module]` shares its module.
    assert_eq!(rosenbrock::IR, jitdiff::ir::print_module(rosenbrock::module()));
    assert!(std::ptr::eq(pendulum_model::pendulum::module(), pendulum_model::module()));
    assert_eq!(pendulum_model::pendulum::IR, pendulum_model::IR);
}

fn bits(values: &[f64]) -> Vec<u64> {
    values.iter().map(|v| v.to_bits()).collect()
}
