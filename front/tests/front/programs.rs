//! The benchmark programs of `problems/rust/`: each file is compiled by rustc (as a module
//! here) and lowered by the front end (as text); the interpreter must agree with rustc on random
//! inputs — bit for bit where only `+ - * /` and comparisons are involved, within 4 ulp where
//! library math is (in practice they agree exactly: both call the same `libm`). Where
//! `examples/ir/` has the hand-written IR of the same computation, that is run too.

#[path = "../../../problems/rust/gmm.rs"]
mod gmm;
#[path = "../../../problems/rust/logistic.rs"]
mod logistic;
#[path = "../../../problems/rust/lotka_volterra.rs"]
mod lotka_volterra;
#[path = "../../../problems/rust/mlp.rs"]
mod mlp;
#[path = "../../../problems/rust/pendulum.rs"]
mod pendulum;
#[path = "../../../problems/rust/rosenbrock.rs"]
mod rosenbrock;

use crate::support::{Rng, lower, run, ulps};
use jitdiff_ir::{ArgValue, Module, RuntimeValue, parse_module};

const ROSENBROCK: &str = include_str!("../../../problems/rust/rosenbrock.rs");
const LOGISTIC: &str = include_str!("../../../problems/rust/logistic.rs");
const PENDULUM: &str = include_str!("../../../problems/rust/pendulum.rs");
const MLP: &str = include_str!("../../../problems/rust/mlp.rs");
const GMM: &str = include_str!("../../../problems/rust/gmm.rs");
const LOTKA_VOLTERRA: &str = include_str!("../../../problems/rust/lotka_volterra.rs");

/// The hand-written IR of the same computations.
fn example_ir(name: &str) -> Module {
    let path = format!("{}/../examples/ir/{name}.ir", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    parse_module(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn scalar(values: &[RuntimeValue]) -> f64 {
    match values {
        [RuntimeValue::F64(x)] => *x,
        other => panic!("expected one f64, got {other:?}"),
    }
}

/// Within `max_ulps` units in the last place.
fn assert_close(got: f64, want: f64, max_ulps: u64, what: &str) {
    assert!(ulps(got, want) <= max_ulps, "{what}: got {got:e}, want {want:e} ({} ulp apart)", ulps(got, want));
}

#[test]
fn rosenbrock_matches_rustc_bit_for_bit_and_the_hand_written_ir() {
    let m = lower(ROSENBROCK);
    let ir = example_ir("rosenbrock");
    let mut rng = Rng::new(1);
    for n in [2usize, 3, 10, 57] {
        for _ in 0..10 {
            let x: Vec<f64> = (0..n).map(|_| rng.range(-2.0, 2.0)).collect();
            let want = rosenbrock::rosenbrock(&x);
            let got = scalar(&run(&m, "rosenbrock", &mut [ArgValue::Slice(x.clone())]));
            assert_eq!(got.to_bits(), want.to_bits(), "n = {n}");
            let hand = scalar(&run(&ir, "rosenbrock", &mut [ArgValue::Slice(x)]));
            assert_eq!(got.to_bits(), hand.to_bits(), "n = {n}: the front end and the IR example differ");
        }
    }
}

#[test]
fn logistic_regression_loss_matches_rustc() {
    let m = lower(LOGISTIC);
    let mut rng = Rng::new(2);
    for (n, d) in [(1usize, 1usize), (5, 3), (40, 8)] {
        let w = rng.normals(d);
        let x = rng.normals(n * d);
        let y: Vec<f64> = (0..n).map(|_| if rng.uniform() < 0.5 { -1.0 } else { 1.0 }).collect();
        let lambda = rng.uniform();
        let want = logistic::logistic(&w, &x, &y, n, d, lambda);
        let mut args = [
            ArgValue::Slice(w),
            ArgValue::Slice(x),
            ArgValue::Slice(y),
            ArgValue::I64(n as i64),
            ArgValue::I64(d as i64),
            ArgValue::F64(lambda),
        ];
        assert_close(scalar(&run(&m, "logistic", &mut args)), want, 4, "logistic");
    }
}

#[test]
fn pendulum_rk4_with_friction_branch_matches_rustc_and_the_ir() {
    let m = lower(PENDULUM);
    let ir = example_ir("pendulum");
    let mut rng = Rng::new(3);
    for _ in 0..20 {
        let params = vec![rng.range(5.0, 15.0), rng.range(0.0, 0.5), rng.range(0.0, 0.3)];
        let (theta0, omega0) = (rng.range(-1.0, 1.0), rng.range(-1.0, 1.0));
        let dt = 0.01;
        let steps = rng.below(300) as usize;
        let want = pendulum::pendulum(&params, theta0, omega0, dt, steps);
        let args = || {
            [
                ArgValue::Slice(params.clone()),
                ArgValue::F64(theta0),
                ArgValue::F64(omega0),
                ArgValue::F64(dt),
                ArgValue::I64(steps as i64),
            ]
        };
        let got = scalar(&run(&m, "pendulum", &mut args()));
        assert_close(got, want, 4, "pendulum");
        let hand = scalar(&run(&ir, "pendulum", &mut args()));
        assert_close(got, hand, 4, "pendulum vs examples/ir/pendulum.ir");
    }
    // At rest, the friction branch's third arm.
    let params = vec![9.81, 0.1, 0.2];
    let want = pendulum::pendulum(&params, 0.0, 0.0, 0.01, 10);
    let mut args =
        [ArgValue::Slice(params), ArgValue::F64(0.0), ArgValue::F64(0.0), ArgValue::F64(0.01), ArgValue::I64(10)];
    assert_eq!(scalar(&run(&m, "pendulum", &mut args)).to_bits(), want.to_bits());
}

#[test]
fn mlp_loss_matches_rustc_and_the_ir() {
    let m = lower(MLP);
    let ir = example_ir("mlp");
    let mut rng = Rng::new(4);
    for (inputs, hidden, batch) in [(1usize, 1usize, 1usize), (3, 4, 5), (8, 16, 10)] {
        let w1 = rng.normals(hidden * inputs);
        let b1 = rng.normals(hidden);
        let w2 = rng.normals(hidden);
        let b2 = rng.normal();
        let x = rng.normals(batch * inputs);
        let y = rng.normals(batch);
        let want = mlp::mlp(&w1, &b1, &w2, b2, &x, &y);
        let slices = [w1, b1, w2];
        let mut args: Vec<ArgValue> = slices.iter().map(|s| ArgValue::Slice(s.clone())).collect();
        args.extend([ArgValue::F64(b2), ArgValue::Slice(x.clone()), ArgValue::Slice(y.clone())]);
        let got = scalar(&run(&m, "mlp", &mut args));
        assert_close(got, want, 4, "mlp");
        args[3] = ArgValue::Slice(vec![b2]);
        let hand = scalar(&run(&ir, "mlp", &mut args));
        assert_close(got, hand, 4, "mlp vs examples/ir/mlp.ir");
    }
}

#[test]
fn gmm_objective_matches_rustc_and_the_ir() {
    let m = lower(GMM);
    let ir = example_ir("gmm");
    let mut rng = Rng::new(5);
    for (d, k, n) in [(1usize, 1usize, 1usize), (2, 3, 5), (3, 2, 7), (4, 5, 12)] {
        let alphas = rng.normals(k);
        let means: Vec<f64> = (0..k * d).map(|_| rng.uniform()).collect();
        let icf = rng.normals(k * d * (d + 1) / 2);
        let x = rng.normals(n * d);
        let (gamma, wishart_m, log_gamma_term) = (1.0 + rng.uniform(), 1 + rng.below(3) as i64, rng.normal());
        let mut q_diags = vec![0.0; k * d];
        let mut y = vec![0.0; d];
        let want = gmm::gmm(&alphas, &means, &icf, &x, d, gamma, wishart_m, log_gamma_term, &mut q_diags, &mut y);
        let mut args: Vec<ArgValue> = [&alphas, &means, &icf, &x].iter().map(|s| ArgValue::Slice(s.to_vec())).collect();
        args.extend([
            ArgValue::I64(d as i64),
            ArgValue::F64(gamma),
            ArgValue::I64(wishart_m),
            ArgValue::F64(log_gamma_term),
        ]);
        let hand = scalar(&run(&ir, "gmm", &mut args.clone()));
        args.extend([ArgValue::SliceMut(vec![0.0; k * d]), ArgValue::SliceMut(vec![0.0; d])]);
        let got = scalar(&run(&m, "gmm", &mut args));
        assert_close(got, want, 4, "gmm");
        assert_close(got, hand, 4, "gmm vs examples/ir/gmm.ir");
    }
}

#[test]
fn lotka_volterra_fit_matches_rustc() {
    let m = lower(LOTKA_VOLTERRA);
    let mut rng = Rng::new(6);
    for steps in [1usize, 10, 200] {
        let truth = [1.1, 0.4, 0.4, 0.1];
        let mut observed = vec![0.0; 2 * steps];
        lotka_volterra::lotka_volterra(&truth, 10.0, 10.0, 0.01, &mut observed);
        for v in observed.iter_mut() {
            *v += 0.1 * rng.normal();
        }
        let params: Vec<f64> = truth.iter().map(|p| p * rng.range(0.8, 1.2)).collect();
        let mut work = vec![0.0; 2 * steps];
        let want = lotka_volterra::lotka_volterra_fit(&params, 10.0, 10.0, 0.01, &observed, &mut work);
        let mut args = [
            ArgValue::Slice(params),
            ArgValue::F64(10.0),
            ArgValue::F64(10.0),
            ArgValue::F64(0.01),
            ArgValue::Slice(observed),
            ArgValue::SliceMut(vec![0.0; 2 * steps]),
        ];
        let got = scalar(&run(&m, "lotka_volterra_fit", &mut args));
        assert_eq!(got.to_bits(), want.to_bits(), "steps = {steps}");
        assert_eq!(args[5], ArgValue::SliceMut(work), "the trajectory written through `&mut [f64]`");
    }
}
