//! Functions written with `Vec`s and `Option`-giving iterators, as Rust code often is:
//! `&Vec<f64>` parameters, `collect`, `to_vec`, `vec!` inside a loop, `u = next;` double
//! buffering, `max_by`/`min_by`, arrays of arrays (`&[[f64; 3]]`). Their values against the rustc-compiled functions, their
//! derivatives against analytic ones (softmax cross-entropy, where a tie sends the derivative)
//! or finite differences and the other mode (an explicit heat-equation solver).

use super::assert_close;
use jitdiff::SplitMix64;

/// The cross-entropy of `softmax(logits)` against the class `target`, shifted by the largest
/// logit as numerically careful code does.
// `&Vec<f64>` as beginners write it (clippy prefers `&[f64]`; the front end takes both).
#[allow(clippy::ptr_arg)]
#[jitdiff::function]
pub fn cross_entropy(logits: &Vec<f64>, target: usize) -> f64 {
    let max = logits.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v));
    let exps: Vec<f64> = logits.iter().map(|v| (v - max).exp()).collect();
    let total: f64 = exps.iter().sum();
    -(exps[target] / total).ln()
}

/// `steps` explicit Euler steps of `u_t = u_xx` (diffusion number `k`, fixed ends) from `u0`,
/// each into a fresh `Vec`, then the squared distance to a sine profile.
#[jitdiff::function]
pub fn diffuse(u0: &[f64], steps: usize, k: f64) -> f64 {
    let n = u0.len();
    let mut u = u0.to_vec();
    for _ in 0..steps {
        let mut next = vec![0.0; n];
        next[0] = u[0];
        next[n - 1] = u[n - 1];
        for i in 1..n - 1 {
            next[i] = u[i] + k * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
        }
        u = next;
    }
    let target: Vec<f64> = (0..n).map(|i| (i as f64 / n as f64).sin()).collect();
    u.iter().zip(&target).map(|(a, b)| (a - b) * (a - b)).sum()
}

/// The largest element (by `partial_cmp`) three times, plus the smallest (by `total_cmp`).
#[jitdiff::function]
pub fn extremes(x: &[f64]) -> f64 {
    let hi = x.iter().copied().max_by(|a, b| a.partial_cmp(b).unwrap()).unwrap();
    let lo = x.iter().copied().min_by(f64::total_cmp).unwrap();
    3.0 * hi + lo
}

#[test]
fn max_by_and_min_by_send_the_derivative_where_rust_picks_at_a_tie() {
    let (g, f) = (extremes::gradient().unwrap(), extremes::forward(4).unwrap());
    // `max_by` picks the last of equal maxima, `min_by` the first of equal minima.
    for (x, want) in [
        (vec![1.0, 5.0, 2.0, 5.0, 1.0], vec![1.0, 0.0, 0.0, 3.0, 0.0]),
        (vec![2.0, -1.0, 7.0], vec![0.0, 1.0, 3.0]),
        (vec![4.0], vec![4.0]),
    ] {
        let (value, grad) = g.value_and_grad(&x).unwrap();
        assert_eq!(value, extremes(&x), "{x:?}");
        assert_eq!(grad, want, "{x:?}");
        // Forward lanes seeding each coordinate give the same.
        let n = x.len();
        let mut grad_by_lanes: Vec<f64> = vec![];
        for first in (0..n).step_by(4) {
            let tangent: Vec<f64> = (0..n * 4).map(|k| if k / 4 == first + k % 4 { 1.0 } else { 0.0 }).collect();
            let (_, jvp) = f.jvp(&x, &[&tangent]).unwrap();
            grad_by_lanes.extend(&jvp[..(n - first).min(4)]);
        }
        assert_eq!(grad_by_lanes, want, "{x:?}: forward mode");
    }
    // A NaN meets `partial_cmp(..).unwrap()`: Rust panics there, the handle fails.
    assert!(g.value_and_grad(&[1.0, f64::NAN]).is_err());
}

#[test]
fn cross_entropy_has_the_softmax_gradient_and_hessian() {
    let (g, h) = (cross_entropy::gradient().unwrap(), cross_entropy::hvp().unwrap());
    let mut rng = SplitMix64::new(31);
    for n in [1usize, 2, 5, 40] {
        let logits: Vec<f64> = rng.normals(n).iter().map(|v| 3.0 * v).collect();
        let target = n / 2;
        let (value, grad) = g.value_and_grad(&logits, target).unwrap();
        assert_close(&[value], &[cross_entropy(&logits, target)], 1e-15, "value");
        let max = logits.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v));
        let exps: Vec<f64> = logits.iter().map(|v| (v - max).exp()).collect();
        let p: Vec<f64> = exps.iter().map(|e| e / exps.iter().sum::<f64>()).collect();
        let want: Vec<f64> = (0..n).map(|i| p[i] - if i == target { 1.0 } else { 0.0 }).collect();
        for (k, (got, want)) in grad.iter().zip(&want).enumerate() {
            assert!((got - want).abs() <= 1e-14, "n = {n}: gradient[{k}] = {got}, want {want}");
        }
        // H = diag(p) - p p^T.
        let v = rng.normals(n);
        let p_dot_v: f64 = p.iter().zip(&v).map(|(a, b)| a * b).sum();
        let want: Vec<f64> = (0..n).map(|i| p[i] * v[i] - p[i] * p_dot_v).collect();
        let mut hvp = vec![0.0; n];
        h.hvp(&logits, target, &v, &mut hvp).unwrap();
        for (k, (got, want)) in hvp.iter().zip(&want).enumerate() {
            assert!((got - want).abs() <= 1e-13, "n = {n}: hvp[{k}] = {got}, want {want}");
        }
    }
}

#[test]
fn double_buffered_diffusion_differentiates_in_every_mode() {
    let (g, f, h) = (diffuse::gradient().unwrap(), diffuse::forward(2).unwrap(), diffuse::hvp().unwrap());
    let mut rng = SplitMix64::new(32);
    for (n, steps) in [(3usize, 1usize), (8, 5), (20, 30)] {
        let u0 = rng.normals(n);
        let k = 0.3;
        let (value, grad) = g.value_and_grad(&u0, steps, k).unwrap();
        assert_close(&[value], &[diffuse(&u0, steps, k)], 1e-14, "value");
        // Central differences of the rustc-compiled function (quadratic in u0: exact up to rounding).
        let mut fd = vec![];
        for c in 0..=n {
            let at = |step: f64| {
                let mut x = u0.clone();
                let mut kk = k;
                if c < n {
                    x[c] += step
                } else {
                    kk += step
                }
                diffuse(&x, steps, kk)
            };
            fd.push((at(1e-5) - at(-1e-5)) / 2e-5);
        }
        assert_close(&grad, &fd, 1e-6, &format!("n = {n}: gradient vs FD"));
        // Two forward lanes (`tangent[e * 2 + lane]`): the gradient's dot products with the tangents.
        let tangents = [rng.normals(2 * n), rng.normals(2)];
        let (_, jvp) = f.jvp(&u0, steps, k, &[&tangents[0], &tangents[1]]).unwrap();
        for lane in 0..2 {
            let dot: f64 =
                (0..n).map(|i| grad[i] * tangents[0][i * 2 + lane]).sum::<f64>() + grad[n] * tangents[1][lane];
            assert_close(&[jvp[lane]], &[dot], 1e-12, &format!("n = {n}: JVP lane {lane}"));
        }
        // The HVP against differences of the gradient.
        let v = rng.normals(n + 1);
        let mut hvp = vec![0.0; n + 1];
        h.hvp(&u0, steps, k, &v, &mut hvp).unwrap();
        let grad_at = |t: f64| {
            let x: Vec<f64> = (0..n).map(|i| u0[i] + t * v[i]).collect();
            g.value_and_grad(&x, steps, k + t * v[n]).unwrap().1
        };
        let (plus, minus) = (grad_at(1e-6), grad_at(-1e-6));
        let fd: Vec<f64> = plus.iter().zip(&minus).map(|(a, b)| (a - b) / 2e-6).collect();
        assert_close(&hvp, &fd, 1e-5, &format!("n = {n}: HVP vs differences of the gradient"));
    }
}

/// A chain of springs of rest length `rest` between consecutive points.
#[jitdiff::function]
pub fn chain_energy(points: &[[f64; 3]], rest: f64) -> f64 {
    let mut total = 0.0;
    for i in 1..points.len() {
        let a = &points[i - 1];
        let b = &points[i];
        let length = (0..3).map(|j| (b[j] - a[j]) * (b[j] - a[j])).sum::<f64>().sqrt();
        total += (length - rest) * (length - rest);
    }
    total
}

#[test]
fn arrays_of_points_differentiate_as_their_flat_elements() {
    let (g, h) = (chain_energy::gradient().unwrap(), chain_energy::hvp().unwrap());
    let mut rng = SplitMix64::new(33);
    for n in [2usize, 3, 10] {
        let points: Vec<[f64; 3]> = (0..n).map(|_| [rng.normal(), rng.normal(), rng.normal()]).collect();
        let rest = 0.7;
        let (value, grad) = g.value_and_grad(&points, rest).unwrap();
        assert_close(&[value], &[chain_energy(&points, rest)], 1e-15, "value");
        assert_eq!(grad.len(), 3 * n + 1, "one entry per coordinate, row after row, then `rest`");
        let at = |c: usize, step: f64| {
            let mut p = points.clone();
            let mut r = rest;
            if c < 3 * n {
                p[c / 3][c % 3] += step
            } else {
                r += step
            }
            chain_energy(&p, r)
        };
        let fd: Vec<f64> = (0..=3 * n).map(|c| (at(c, 1e-6) - at(c, -1e-6)) / 2e-6).collect();
        assert_close(&grad, &fd, 1e-6, &format!("n = {n}: gradient vs FD"));
        let v = rng.normals(3 * n + 1);
        let mut hvp = vec![0.0; 3 * n + 1];
        h.hvp(&points, rest, &v, &mut hvp).unwrap();
        let grad_at = |t: f64| {
            let p: Vec<[f64; 3]> = (0..n).map(|i| [0, 1, 2].map(|j| points[i][j] + t * v[3 * i + j])).collect();
            g.value_and_grad(&p, rest + t * v[3 * n]).unwrap().1
        };
        let (plus, minus) = (grad_at(1e-6), grad_at(-1e-6));
        let fd: Vec<f64> = plus.iter().zip(&minus).map(|(a, b)| (a - b) / 2e-6).collect();
        assert_close(&hvp, &fd, 1e-5, &format!("n = {n}: HVP vs differences of the gradient"));
    }
}

/// The mean without the smallest and the largest value (a sort, then a sub-slice).
#[jitdiff::function]
pub fn trimmed_mean(x: &[f64]) -> f64 {
    let mut v = x.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    v[1..n - 1].iter().sum::<f64>() / (n - 2) as f64
}

#[test]
fn a_sorted_copy_sends_the_derivative_back_through_the_permutation() {
    let (g, f) = (trimmed_mean::gradient().unwrap(), trimmed_mean::forward(1).unwrap());
    let mut rng = SplitMix64::new(34);
    for n in [3usize, 4, 9, 17] {
        let x = rng.normals(n);
        let (value, grad) = g.value_and_grad(&x).unwrap();
        assert_close(&[value], &[trimmed_mean(&x)], 1e-15, "value");
        let (lo, hi) =
            (x.iter().copied().fold(f64::INFINITY, f64::min), x.iter().copied().fold(f64::NEG_INFINITY, f64::max));
        let want: Vec<f64> = x.iter().map(|&v| if v == lo || v == hi { 0.0 } else { 1.0 / (n - 2) as f64 }).collect();
        assert_close(&grad, &want, 1e-15, &format!("n = {n}: gradient"));
        for (k, want_k) in want.iter().enumerate() {
            let tangent: Vec<f64> = (0..n).map(|i| if i == k { 1.0 } else { 0.0 }).collect();
            let (_, jvp) = f.jvp(&x, &[&tangent]).unwrap();
            assert_close(&jvp[..1], &[*want_k], 1e-15, &format!("n = {n}: JVP along x[{k}]"));
        }
    }
    assert!(g.value_and_grad(&[1.0, f64::NAN, 2.0]).is_err(), "a NaN meets `partial_cmp(..).unwrap()`");
}

/// Least squares over the observations that pass a test, collected with `push`.
#[jitdiff::function]
pub fn kept_residuals(x: &[f64], y: &[f64], a: f64, b: f64) -> f64 {
    let mut kept = Vec::with_capacity(x.len());
    for i in 0..x.len() {
        if y[i] > 0.0 {
            kept.push(a * x[i] + b - y[i]);
        }
    }
    kept.iter().map(|r| r * r).sum::<f64>() / kept.len().max(1) as f64
}

#[test]
fn pushed_residuals_differentiate_with_respect_to_the_parameters() {
    let g = kept_residuals::gradient_wrt(&["a", "b"]).unwrap();
    let mut rng = SplitMix64::new(35);
    for n in [1usize, 6, 30] {
        let (x, y) = (rng.normals(n), rng.normals(n));
        let (a, b) = (0.7, -0.2);
        let (value, grad) = g.value_and_grad(&x, &y, a, b).unwrap();
        assert_close(&[value], &[kept_residuals(&x, &y, a, b)], 1e-15, "value");
        // d/da = 2/m sum r_i x_i, d/db = 2/m sum r_i over the kept i.
        let kept: Vec<usize> = (0..n).filter(|&i| y[i] > 0.0).collect();
        let m = kept.len().max(1) as f64;
        let r = |i: usize| a * x[i] + b - y[i];
        let want = [
            kept.iter().map(|&i| 2.0 * r(i) * x[i]).sum::<f64>() / m,
            kept.iter().map(|&i| 2.0 * r(i)).sum::<f64>() / m,
        ];
        assert_close(&grad, &want, 1e-13, &format!("n = {n}: gradient"));
    }
}

/// The largest element times its index (the argmax idiom: `enumerate().max_by(..).map(..)`).
#[jitdiff::function]
pub fn weighted_max(x: &[f64]) -> f64 {
    x.iter().enumerate().max_by(|a, b| a.1.partial_cmp(b.1).unwrap()).map(|(i, v)| v * (i + 1) as f64).unwrap_or(0.0)
}

#[test]
fn the_argmax_idiom_differentiates_at_the_index_rust_picks() {
    let (g, f) = (weighted_max::gradient().unwrap(), weighted_max::forward(1).unwrap());
    for (x, k) in [(vec![0.5, 3.0, -1.0, 3.0, 2.0], 3usize), (vec![2.0], 0), (vec![-1.0, -3.0], 0)] {
        let (value, grad) = g.value_and_grad(&x).unwrap();
        assert_eq!(value, weighted_max(&x), "{x:?}");
        let want: Vec<f64> = (0..x.len()).map(|i| if i == k { (k + 1) as f64 } else { 0.0 }).collect();
        assert_eq!(grad, want, "{x:?}");
        let tangent: Vec<f64> = (0..x.len()).map(|i| if i == k { 1.0 } else { 0.0 }).collect();
        assert_eq!(f.jvp(&x, &[&tangent]).unwrap().1[0], (k + 1) as f64, "{x:?}: forward mode");
    }
    assert_eq!(g.value_and_grad(&[]).unwrap(), (0.0, vec![]));
}
