//! Derivatives of the programs written in Rust against the hand-written IR of the same
//! computations in `jitdiff_problems` (gradient, 4-lane JVP, HVP: 1e-13 relative), and, for the
//! two programs without hand-written IR, against analytic derivatives (logistic regression) and
//! across modes and finite differences (Lotka–Volterra).

use super::assert_close;
use super::programs::{gmm_model, logistic_model, lotka_volterra_model, mlp, pendulum_model, rosenbrock};
use jitdiff::ir::parse_module;
use jitdiff::{Arg, ForwardFn, GradientFn, HvpFn, SplitMix64};
use jitdiff_problems::{gmm::GMM_IR, mlp::MLP_IR, pendulum::PENDULUM_IR, rosenbrock::ROSENBROCK_IR};

/// Tangent lanes of the JVPs compared.
const W: u8 = 4;
/// Agreement with the hand-written IR.
const TOL: f64 = 1e-13;

/// The derivatives of the typed handles at one point.
struct Typed {
    value: f64,
    grad: Vec<f64>,
    /// The W lanes of the result's tangent (then those of any `&mut [f64]` output).
    jvp: Vec<f64>,
    hvp: Vec<f64>,
}

/// The untyped handles of the hand-written IR.
struct Reference {
    grad: GradientFn,
    forward: ForwardFn,
    hvp: HvpFn,
}

impl Reference {
    fn new(ir: &str, name: &str, wrt: &[&str]) -> Reference {
        let m = parse_module(ir).unwrap();
        Reference {
            grad: GradientFn::builder(&m, name).wrt(wrt.iter().copied()).build().unwrap(),
            forward: ForwardFn::builder(&m, name).wrt(wrt.iter().copied()).width(W).build().unwrap(),
            hvp: HvpFn::builder(&m, name).wrt(wrt.iter().copied()).build().unwrap(),
        }
    }

    /// The IR's value, gradient, JVP (same `tangents`) and HVP (same `v`) at `args` against
    /// `typed`.
    fn check(&self, what: &str, args: &mut [Arg<'_>], typed: &Typed, tangents: &[Vec<f64>], v: &[f64]) {
        let mut grad = vec![0.0; typed.grad.len()];
        let value = self.grad.value_and_grad(args, &mut grad).unwrap();
        assert_close(&[typed.value], &[value], TOL, &format!("{what}: value"));
        assert_close(&typed.grad, &grad, TOL, &format!("{what}: gradient"));
        let views: Vec<&[f64]> = tangents.iter().map(Vec::as_slice).collect();
        let (_, jvp) = self.forward.jvp(args, &views).unwrap();
        assert_close(&typed.jvp[..W as usize], &jvp[..W as usize], TOL, &format!("{what}: JVP"));
        let mut hvp = vec![0.0; v.len()];
        self.hvp.hvp(args, v, &mut hvp).unwrap();
        assert_close(&typed.hvp, &hvp, TOL, &format!("{what}: HVP"));
    }
}

/// Random tangents of W lanes for parameters of these sizes.
fn tangents(rng: &mut SplitMix64, sizes: &[usize]) -> Vec<Vec<f64>> {
    sizes.iter().map(|&n| rng.normals(W as usize * n)).collect()
}

fn views(tangents: &[Vec<f64>]) -> Vec<&[f64]> {
    tangents.iter().map(Vec::as_slice).collect()
}

#[test]
fn rosenbrock_derivatives_match_the_hand_written_ir() {
    let reference = Reference::new(ROSENBROCK_IR, "rosenbrock", &["x"]);
    let (g, f, h) = (rosenbrock::gradient().unwrap(), rosenbrock::forward(W).unwrap(), rosenbrock::hvp().unwrap());
    let mut rng = SplitMix64::new(11);
    for n in [2usize, 3, 10, 100] {
        let x: Vec<f64> = (0..n).map(|_| rng.uniform_in(-2.0, 2.0)).collect();
        let (t, v) = (tangents(&mut rng, &[n]), rng.normals(n));
        let (value, grad) = g.value_and_grad(&x).unwrap();
        assert_eq!(value.to_bits(), rosenbrock(&x).to_bits());
        let (primal, jvp) = f.jvp(&x, &views(&t)).unwrap();
        assert_eq!(primal.to_bits(), value.to_bits());
        let mut hvp = vec![0.0; n];
        assert_eq!(h.hvp(&x, &v, &mut hvp).unwrap().to_bits(), value.to_bits());
        let typed = Typed { value, grad, jvp, hvp };
        reference.check(&format!("rosenbrock n={n}"), &mut jitdiff::args![&x], &typed, &t, &v);
    }
}

#[test]
fn pendulum_derivatives_match_the_hand_written_ir_in_every_friction_branch() {
    use pendulum_model::pendulum;
    // Every f64 and slice parameter: params, theta0, omega0, dt (the handles' default).
    let reference = Reference::new(PENDULUM_IR, "pendulum", &["params", "theta0", "omega0", "dt"]);
    let (g, f, h) = (pendulum::gradient().unwrap(), pendulum::forward(W).unwrap(), pendulum::hvp().unwrap());
    let mut rng = SplitMix64::new(12);
    // Swinging both ways (omega changes sign, so both friction arms run), and at rest.
    let starts = [(0.8, 0.3, 200usize), (-0.5, -1.0, 300), (0.1, 0.0, 50), (0.0, 0.0, 10)];
    for (theta0, omega0, steps) in starts {
        let params = [9.81, 0.2, 0.15];
        let dt = 0.01;
        let (t, v) = (tangents(&mut rng, &[3, 1, 1, 1]), rng.normals(6));
        let (value, grad) = g.value_and_grad(&params, theta0, omega0, dt, steps).unwrap();
        let (_, jvp) = f.jvp(&params, theta0, omega0, dt, steps, &views(&t)).unwrap();
        let mut hvp = vec![0.0; 6];
        h.hvp(&params, theta0, omega0, dt, steps, &v, &mut hvp).unwrap();
        let typed = Typed { value, grad, jvp, hvp };
        let mut args = jitdiff::args![&params, theta0, omega0, dt, steps as i64];
        reference.check(&format!("pendulum from ({theta0}, {omega0})"), &mut args, &typed, &t, &v);
    }
}

#[test]
fn gmm_derivatives_match_the_hand_written_ir() {
    use gmm_model::gmm;
    let wrt = ["alphas", "means", "icf"];
    let reference = Reference::new(GMM_IR, "gmm", &wrt);
    let (g, f, h) = (gmm::gradient_wrt(&wrt).unwrap(), gmm::forward_wrt(W, &wrt).unwrap(), gmm::hvp_wrt(&wrt).unwrap());
    let mut rng = SplitMix64::new(13);
    for (d, k, n) in [(1usize, 1usize, 1usize), (2, 3, 5), (3, 2, 7)] {
        let p = jitdiff_problems::Gmm::generate(d, k, n, 7);
        let (gamma, m, lgt) = (1.5, 2, 0.25);
        let sizes = [k, k * d, k * d * (d + 1) / 2];
        let (t, v) = (tangents(&mut rng, &sizes), rng.normals(sizes.iter().sum()));
        let (value, grad) = g.value_and_grad(&p.alphas, &p.means, &p.icf, &p.x, d, gamma, m, lgt).unwrap();
        let (_, jvp) = f.jvp(&p.alphas, &p.means, &p.icf, &p.x, d, gamma, m, lgt, &views(&t)).unwrap();
        let mut hvp = vec![0.0; v.len()];
        h.hvp(&p.alphas, &p.means, &p.icf, &p.x, d, gamma, m, lgt, &v, &mut hvp).unwrap();
        let typed = Typed { value, grad, jvp, hvp };
        let mut args = jitdiff::args![&p.alphas, &p.means, &p.icf, &p.x, d as i64, gamma, m, lgt];
        reference.check(&format!("gmm d={d} K={k} n={n}"), &mut args, &typed, &t, &v);
    }
}

#[test]
fn mlp_derivatives_match_the_hand_written_ir() {
    // The IR's `b2` is a slice of one; the layouts of gradients and tangents are the same.
    let wrt = ["w1", "b1", "w2", "b2"];
    let reference = Reference::new(MLP_IR, "mlp", &wrt);
    let (g, f, h) = (mlp::gradient_wrt(&wrt).unwrap(), mlp::forward_wrt(W, &wrt).unwrap(), mlp::hvp_wrt(&wrt).unwrap());
    let mut rng = SplitMix64::new(14);
    for (inputs, hidden, batch) in [(1usize, 1usize, 1usize), (3, 4, 5), (8, 16, 10)] {
        let p = jitdiff_problems::Mlp::generate(inputs, hidden, batch, 3);
        let sizes = [hidden * inputs, hidden, hidden, 1];
        let (t, v) = (tangents(&mut rng, &sizes), rng.normals(sizes.iter().sum()));
        let (value, grad) = g.value_and_grad(&p.w1, &p.b1, &p.w2, p.b2, &p.x, &p.y).unwrap();
        let (_, jvp) = f.jvp(&p.w1, &p.b1, &p.w2, p.b2, &p.x, &p.y, &views(&t)).unwrap();
        let mut hvp = vec![0.0; v.len()];
        h.hvp(&p.w1, &p.b1, &p.w2, p.b2, &p.x, &p.y, &v, &mut hvp).unwrap();
        let typed = Typed { value, grad, jvp, hvp };
        let b2 = [p.b2];
        let mut args = jitdiff::args![&p.w1, &p.b1, &p.w2, &b2, &p.x, &p.y];
        reference.check(&format!("mlp {inputs}-{hidden}-1 batch {batch}"), &mut args, &typed, &t, &v);
    }
}

/// Logistic regression has no hand-written IR: its gradient and Hessian are short enough to
/// write out. `L = mean_i softplus(-y_i w·x_i) + λ/2 |w|²`, so with `s_i = σ(-y_i w·x_i)`:
/// `∇L = mean_i(-y_i s_i x_i) + λ w` and `H = mean_i(s_i (1 - s_i) x_i x_iᵀ) + λ I`.
#[test]
fn logistic_derivatives_match_the_analytic_ones_and_forward_matches_reverse() {
    use logistic_model::logistic;
    let (g, f, h) = (
        logistic::gradient_wrt(&["w"]).unwrap(),
        logistic::forward_wrt(1, &["w"]).unwrap(),
        logistic::hvp_wrt(&["w"]).unwrap(),
    );
    let mut rng = SplitMix64::new(15);
    for (n, d) in [(1usize, 1usize), (5, 3), (40, 8)] {
        let (w, x) = (rng.normals(d), rng.normals(n * d));
        let y: Vec<f64> = (0..n).map(|_| if rng.uniform() < 0.5 { -1.0 } else { 1.0 }).collect();
        let lambda = rng.uniform();
        let (mut grad, mut hessian) = (vec![0.0; d], vec![0.0; d * d]);
        for i in 0..n {
            let row = &x[i * d..(i + 1) * d];
            let z: f64 = w.iter().zip(row).map(|(a, b)| a * b).sum();
            let s = 1.0 / (1.0 + (y[i] * z).exp());
            for j in 0..d {
                grad[j] += -y[i] * s * row[j] / n as f64;
                for l in 0..d {
                    hessian[j * d + l] += s * (1.0 - s) * row[j] * row[l] / n as f64;
                }
            }
        }
        for j in 0..d {
            grad[j] += lambda * w[j];
            hessian[j * d + j] += lambda;
        }
        let (value, ad) = g.value_and_grad(&w, &x, &y, n, d, lambda).unwrap();
        assert_eq!(value.to_bits(), logistic(&w, &x, &y, n, d, lambda).to_bits());
        assert_close(&ad, &grad, 1e-12, "logistic gradient");
        assert_close(&h.hessian(&w, &x, &y, n, d, lambda).unwrap(), &hessian, 1e-12, "logistic Hessian");
        let t = rng.normals(d);
        let (_, jvp) = f.jvp(&w, &x, &y, n, d, lambda, &[&t]).unwrap();
        let dot: f64 = ad.iter().zip(&t).map(|(a, b)| a * b).sum();
        assert_close(&jvp, &[dot], 1e-12, "logistic JVP vs gradient · t");
    }
}

/// Lotka–Volterra has no hand-written IR: reverse mode against forward mode (Jacobians of the
/// trajectory, JVPs of the fit against gradient · t) and both against central differences.
#[test]
fn lotka_volterra_modes_agree_with_each_other_and_with_finite_differences() {
    use jitdiff::{check, fd::FdOptions};
    use lotka_volterra_model::{lotka_volterra, lotka_volterra_fit};
    let wrt = ["params", "x0", "y0"];
    let params = [1.1, 0.4, 0.4, 0.1];
    let steps = 50;
    // The trajectory (no result: `&mut [f64]` output) by reverse, forward and either mode.
    let (g, f, j) = (
        lotka_volterra::gradient_wrt(&wrt).unwrap(),
        lotka_volterra::forward_wrt(W, &wrt).unwrap(),
        lotka_volterra::jacobian_wrt(&wrt).unwrap(),
    );
    let mut out = vec![0.0; 2 * steps];
    let reverse = g.jacobian(&params, 10.0, 5.0, 0.01, &mut out).unwrap();
    let forward = f.jacobian(&params, 10.0, 5.0, 0.01, &mut out).unwrap();
    let either = j.jacobian(&params, 10.0, 5.0, 0.01, &mut out).unwrap();
    assert_eq!((reverse.rows, reverse.cols), (2 * steps, 6));
    assert_close(&reverse.data, &forward.data, TOL, "trajectory Jacobian, reverse vs forward");
    assert_close(&either.data, &forward.data, TOL, "trajectory Jacobian, JacobianFn vs forward");
    let report = check::jacobian(
        g.handle(),
        &mut lotka_volterra::args(&params, 10.0, 5.0, 0.01, &mut out),
        FdOptions::central(),
    )
    .unwrap();
    assert!(report.passes(1e-6), "{report}");
    // The fit: gradient, JVP and HVP.
    let mut observed = vec![0.0; 2 * steps];
    lotka_volterra(&[1.0, 0.5, 0.3, 0.2], 10.0, 5.0, 0.01, &mut observed);
    let mut work = vec![0.0; 2 * steps];
    let g = lotka_volterra_fit::gradient_wrt(&wrt).unwrap();
    let f = lotka_volterra_fit::forward_wrt(1, &wrt).unwrap();
    // The work array differentiated too (its initial contents, overwritten before they are
    // read, have zero derivatives): zero directions for it, its products dropped.
    let h = lotka_volterra_fit::hvp_wrt(&["params", "x0", "y0", "work"]).unwrap();
    let (value, grad) = g.value_and_grad(&params, 10.0, 5.0, 0.01, &observed, &mut work).unwrap();
    assert_eq!(value.to_bits(), lotka_volterra_fit(&params, 10.0, 5.0, 0.01, &observed, &mut work).to_bits());
    let report = check::gradient(
        g.handle(),
        &mut lotka_volterra_fit::args(&params, 10.0, 5.0, 0.01, &observed, &mut work),
        FdOptions::central(),
    )
    .unwrap();
    assert!(report.passes(1e-6), "{report}");
    let mut rng = SplitMix64::new(16);
    let t = rng.normals(6);
    let (_, jvp) = f.jvp(&params, 10.0, 5.0, 0.01, &observed, &mut work, &[&t[..4], &t[4..5], &t[5..]]).unwrap();
    let dot: f64 = grad.iter().zip(&t).map(|(a, b)| a * b).sum();
    assert_close(&jvp[..1], &[dot], 1e-12, "fit JVP vs gradient · t");
    // H t by central differences of the gradient along t.
    let mut padded = t.clone();
    padded.resize(6 + 2 * steps, 0.0);
    let mut hvp = vec![0.0; padded.len()];
    h.hvp(&params, 10.0, 5.0, 0.01, &observed, &mut work, &padded, &mut hvp).unwrap();
    hvp.truncate(6);
    let e = 1e-5;
    let shifted = |sign: f64| {
        let p: Vec<f64> = (0..4).map(|k| params[k] + sign * e * t[k]).collect();
        let mut work = vec![0.0; 2 * steps];
        g.value_and_grad(&p, 10.0 + sign * e * t[4], 5.0 + sign * e * t[5], 0.01, &observed, &mut work).unwrap().1
    };
    let (plus, minus) = (shifted(1.0), shifted(-1.0));
    let fd: Vec<f64> = plus.iter().zip(&minus).map(|(a, b)| (a - b) / (2.0 * e)).collect();
    assert_close(&hvp, &fd, 1e-5, "fit HVP vs differences of the gradient");
}

/// `take_while` and `skip_while` split a sum where the items cross a threshold: both modes
/// agree with central differences away from the crossing, and the items past it get zero.
#[test]
fn take_while_and_skip_while_split_the_gradient_where_rust_does() {
    use jitdiff::{check, fd::FdOptions};
    let source = "fn f(x: &[f64], t: f64) -> f64 {
    let head: f64 = x.iter().take_while(|&&v| v < t).map(|v| v * v).sum();
    let tail: f64 = x.iter().skip_while(|&&v| v < t).map(|v| (v * t).sin()).sum();
    head + 3.0 * tail
}";
    let m = jitdiff::front::lower_source(source).unwrap();
    let x = [0.1, 0.4, 0.9, 0.2, 1.3];
    let t = 0.7;
    for mode in [jitdiff::GradientMode::Reverse, jitdiff::GradientMode::Forward] {
        let g = GradientFn::builder(&m, "f").wrt_all().gradient_mode(mode).build().unwrap();
        let report = check::gradient(&g, &mut [Arg::Slice(&x), Arg::F64(t)], FdOptions::central()).unwrap();
        assert!(report.passes(1e-7), "{mode:?}: {report}");
        let mut grad = [0.0; 6];
        g.value_and_grad(&mut [Arg::Slice(&x), Arg::F64(t)], &mut grad).unwrap();
        // Before the crossing: 2 x_i; from it on (0.9, 0.2, 1.3): 3 t cos(x_i t).
        for i in 0..2 {
            assert!((grad[i] - 2.0 * x[i]).abs() < 1e-14, "{mode:?}: {grad:?}");
        }
        for i in 2..5 {
            assert!((grad[i] - 3.0 * t * (x[i] * t).cos()).abs() < 1e-14, "{mode:?}: {grad:?}");
        }
    }
}
