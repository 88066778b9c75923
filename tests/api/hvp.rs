//! Hessian-vector products (forward mode over reverse mode, JIT-compiled) against central
//! differences of the JIT-compiled gradient, on the four benchmark problems; batched sweeps
//! against single ones; dense Hessians against a known closed form.

use jitdiff::ir::{ArgValue, parse_module};
use jitdiff::jit::Arg;
use jitdiff::{GradientFn, HvpFn};
use jitdiff_problems::{Gmm, Mlp, Pendulum, Problem, Rosenbrock, SplitMix64};

fn wrt_of(p: &dyn Problem) -> Vec<bool> {
    (0..p.args().len()).map(|i| p.active_params().contains(&i)).collect()
}

/// The arguments with the differentiated coordinates replaced by `x` (flat, gradient layout).
fn with_point(p: &dyn Problem, x: &[f64]) -> Vec<ArgValue> {
    let mut args = p.args();
    let mut at = 0;
    for &i in p.active_params() {
        match &mut args[i] {
            ArgValue::F64(v) => {
                *v = x[at];
                at += 1;
            }
            ArgValue::Slice(s) => {
                let n = s.len();
                s.copy_from_slice(&x[at..at + n]);
                at += n;
            }
            other => panic!("unexpected active argument {other:?}"),
        }
    }
    args
}

fn point_of(p: &dyn Problem) -> Vec<f64> {
    let mut x = vec![];
    for &i in p.active_params() {
        match &p.args()[i] {
            ArgValue::F64(v) => x.push(*v),
            ArgValue::Slice(s) => x.extend(s),
            other => panic!("unexpected active argument {other:?}"),
        }
    }
    x
}

fn gradient_at(p: &dyn Problem, g: &GradientFn, x: &[f64]) -> Vec<f64> {
    let mut args = with_point(p, x);
    let mut call: Vec<Arg<'_>> = args.iter_mut().map(Arg::from).collect();
    let mut grad = vec![0.0; x.len()];
    g.value_and_grad(&mut call, &mut grad).unwrap();
    grad
}

fn hvp_matches_central_differences(p: &dyn Problem) {
    let module = parse_module(p.ir()).unwrap();
    let wrt = wrt_of(p);
    let hvp = HvpFn::builder(&module, p.entry())
        .wrt_mask(&wrt)
        .width(1)
        .build()
        .unwrap_or_else(|e| panic!("{}: {e}", p.label()));
    let grad = GradientFn::builder(&module, p.entry()).wrt_mask(&wrt).build().unwrap();
    let x = point_of(p);
    let n = x.len();
    let mut rng = SplitMix64::new(7);
    let v: Vec<f64> = (0..n).map(|_| rng.uniform_in(-1.0, 1.0)).collect();

    let mut args = p.args();
    let mut call: Vec<Arg<'_>> = args.iter_mut().map(Arg::from).collect();
    let mut product = vec![0.0; n];
    let mut gradient = vec![0.0; n];
    let value = hvp.hvp_with_gradient(&mut call, &v, &mut gradient, &mut product).unwrap();
    drop(call);

    // The value and gradient of the HVP sweep are the reverse-mode ones.
    let reference_grad = gradient_at(p, &grad, &x);
    assert!((value - p.reference()).abs() <= 1e-12 * p.reference().abs().max(1.0), "{}: value", p.label());
    for (a, b) in gradient.iter().zip(&reference_grad) {
        assert!((a - b).abs() <= 1e-12 * b.abs().max(1.0), "{}: gradient {a} vs {b}", p.label());
    }

    // Central differences of the gradient along v.
    let scale = x.iter().fold(1.0f64, |m, xi| m.max(xi.abs()));
    let h = 1e-5 * scale;
    let plus: Vec<f64> = x.iter().zip(&v).map(|(xi, vi)| xi + h * vi).collect();
    let minus: Vec<f64> = x.iter().zip(&v).map(|(xi, vi)| xi - h * vi).collect();
    let (gp, gm) = (gradient_at(p, &grad, &plus), gradient_at(p, &grad, &minus));
    let fd: Vec<f64> = gp.iter().zip(&gm).map(|(a, b)| (a - b) / (2.0 * h)).collect();
    let norm = fd.iter().fold(0.0f64, |m, d| m.max(d.abs())).max(1e-300);
    let worst = product.iter().zip(&fd).map(|(a, b)| (a - b).abs() / norm).fold(0.0, f64::max);
    assert!(worst <= 1e-6, "{}: HVP vs central differences of the gradient: relative error {worst:e}", p.label());
}

#[test]
fn hvp_matches_central_differences_on_rosenbrock() {
    hvp_matches_central_differences(&Rosenbrock::new(10));
}

#[test]
fn hvp_matches_central_differences_on_gmm() {
    hvp_matches_central_differences(&Gmm::generate(2, 3, 20, 11));
}

#[test]
fn hvp_matches_central_differences_on_pendulum() {
    hvp_matches_central_differences(&Pendulum::with_steps(40));
}

#[test]
fn hvp_matches_central_differences_on_mlp() {
    hvp_matches_central_differences(&Mlp::generate(3, 5, 8, 5));
}

/// Every lane of a W = 4 sweep equals a W = 1 sweep in that direction.
#[test]
fn batched_products_equal_single_ones() {
    let p = Mlp::generate(3, 4, 6, 3);
    let module = parse_module(p.ir()).unwrap();
    let wrt = wrt_of(&p);
    let single = HvpFn::builder(&module, p.entry()).wrt_mask(&wrt).width(1).build().unwrap();
    let batched = HvpFn::builder(&module, p.entry()).wrt_mask(&wrt).width(4).build().unwrap();
    let n = point_of(&p).len();
    let mut rng = SplitMix64::new(99);
    let directions: Vec<f64> = (0..4 * n).map(|_| rng.uniform_in(-1.0, 1.0)).collect();
    let mut args = p.args();
    let mut call: Vec<Arg<'_>> = args.iter_mut().map(Arg::from).collect();
    let mut products = vec![0.0; 4 * n];
    batched.hvp(&mut call, &directions, &mut products).unwrap();
    for k in 0..4 {
        let mut one = vec![0.0; n];
        single.hvp(&mut call, &directions[k * n..(k + 1) * n], &mut one).unwrap();
        for (a, b) in one.iter().zip(&products[k * n..(k + 1) * n]) {
            assert!((a - b).abs() <= 4.0 * f64::EPSILON * a.abs().max(1e-300), "lane {k}: {a} vs {b}");
        }
    }
}

/// Rosenbrock's Hessian in closed form: for each term i, with u = x[i+1] - x[i]^2,
/// d2/dx[i]^2 = 2 - 400 u + 800 x[i]^2, d2/dx[i]dx[i+1] = -400 x[i], d2/dx[i+1]^2 = 200.
#[test]
fn dense_hessian_of_rosenbrock_matches_the_closed_form() {
    let x = [-1.2, 1.0, 0.3, -0.7, 2.0];
    let n = x.len();
    let mut expected = vec![0.0; n * n];
    for i in 0..n - 1 {
        let u = x[i + 1] - x[i] * x[i];
        expected[i * n + i] += 2.0 - 400.0 * u + 800.0 * x[i] * x[i];
        expected[i * n + i + 1] += -400.0 * x[i];
        expected[(i + 1) * n + i] += -400.0 * x[i];
        expected[(i + 1) * n + i + 1] += 200.0;
    }
    let module = parse_module(jitdiff_problems::rosenbrock::ROSENBROCK_IR).unwrap();
    for width in [1, 2, 4] {
        let h = HvpFn::builder(&module, "rosenbrock").wrt_mask(&[true]).width(width).build().unwrap();
        let hessian = h.hessian(&mut [Arg::Slice(&x)]).unwrap();
        for (k, (a, b)) in hessian.iter().zip(&expected).enumerate() {
            assert!(
                (a - b).abs() <= 1e-12 * b.abs().max(1.0),
                "W={width}: H[{}][{}] = {a}, expected {b}",
                k / n,
                k % n
            );
        }
    }
}

#[test]
fn wrong_buffer_lengths_are_errors() {
    let module = parse_module(jitdiff_problems::rosenbrock::ROSENBROCK_IR).unwrap();
    let h = HvpFn::builder(&module, "rosenbrock").wrt_mask(&[true]).width(2).build().unwrap();
    let x = [1.0, 2.0, 3.0];
    let mut out = [0.0; 6];
    let err = h.hvp(&mut [Arg::Slice(&x)], &[1.0; 3], &mut out).unwrap_err();
    assert!(err.to_string().contains("directions for @rosenbrock must hold 6 value(s), but it holds 3"), "{err}");
}

/// The Hessian of `(g(x) - g(x0))²` at `x0` is `2 g'(x0)²`: the residual, and so the pullback's
/// cotangent of `g`, is exactly zero there, and the term `g'(x0) · d(cotangent)` must survive
/// forward mode over the strong-zero product (a `select` on `cotangent == 0` loses it).
#[test]
fn hvp_keeps_the_curvature_where_a_residual_vanishes() {
    // (g applied to an operand, x0, g'(x0))
    type Residual = fn(&str) -> String;
    let cases: [(Residual, f64, f64); 8] = [
        (|v| format!("sqrt {v}"), 1.0, 0.5),
        (|v| format!("ln {v}"), 2.0, 0.5),
        (|v| format!("log1p {v}"), 1.0, 0.5),
        (|v| format!("asin {v}"), 0.5, 1.0 / 0.75f64.sqrt()),
        (|v| format!("acos {v}"), 0.5, -1.0 / 0.75f64.sqrt()),
        (|v| format!("pow {v}, c"), 1.5, 2.5 * 1.5f64.powf(1.5)),
        (|v| format!("powi {v}, k"), 1.5, 3.0),
        (|v| format!("fdiv c, {v}"), 2.0, -2.5 / 4.0),
    ];
    for (g, x0, slope) in cases {
        let text = format!(
            "func @f(x: f64) -> f64 {{\nentry:\n    c = fconst 2.5\n    k = iconst 2\n    x0 = fconst {x0:?}\n    gx = {}\n    gx0 = {}\n    r = fsub gx, gx0\n    f = fmul r, r\n    ret f\n}}",
            g("x"),
            g("x0")
        );
        let module = parse_module(&text).unwrap_or_else(|e| panic!("{text}\n{e}"));
        for width in [1, 2] {
            let h = HvpFn::builder(&module, "f").wrt_mask(&[true]).width(width).build().unwrap();
            let hessian = h.hessian(&mut [Arg::F64(x0)]).unwrap();
            let expected = 2.0 * slope * slope;
            assert!(
                (hessian[0] - expected).abs() <= 1e-12 * expected.abs(),
                "{text}\nW = {width}: Hessian {}, expected {expected}",
                hessian[0]
            );
        }
    }
}

/// A function writing a work array (`mslice`): its HVP with respect to the other parameter alone
/// (the work array still carries derivatives), and with the work array differentiated too
/// (whose tangent the derived code writes, so it is passed as a mutable slice). Both were
/// errors once.
#[test]
fn hvp_of_a_function_with_a_work_array() {
    // w[0] = x0^2; returns w[0] * x1: H = [[2 x1, 2 x0], [2 x0, 0]].
    let m = parse_module(
        "func @f(x: slice, w: mslice) -> f64 {
entry:
    i = iconst 0
    j = iconst 1
    a = load x, i
    b = load x, j
    sq = fmul a, a
    store w, i, sq
    c = load w, i
    r = fmul c, b
    ret r
}",
    )
    .unwrap();
    let (x, mut w) = ([3.0, 5.0], [0.0]);
    let h = HvpFn::builder(&m, "f").wrt(["x"]).build().unwrap();
    let mut hv = [0.0; 2];
    let value = h.hvp(&mut [Arg::Slice(&x), Arg::SliceMut(&mut w)], &[1.0, 0.0], &mut hv).unwrap();
    assert_eq!((value, hv), (45.0, [10.0, 6.0]));
    let h = HvpFn::builder(&m, "f").wrt(["x", "w"]).width(2).build().unwrap();
    let mut hv = [0.0; 6];
    h.hvp(&mut [Arg::Slice(&x), Arg::SliceMut(&mut w)], &[0.0, 1.0, 0.0, 1.0, 0.0, 1.0], &mut hv).unwrap();
    // Direction 0 is x1, direction 1 is x0 + w0 (w0 is overwritten: no second derivatives).
    assert_eq!(hv, [6.0, 0.0, 0.0, 10.0, 6.0, 0.0]);
}

/// The k-means cost `Σ_i min_j ‖x_i − c_j‖²`: the Hessian is diagonal, `2 n_j` for the
/// coordinates of a centroid nearest to `n_j` points, and one product with all ones gives it.
/// The product reads the tangents of the gradient only, so the derived code keeps no tangent of
/// the distances it compares (the tangent of the value, which is all they feed): the forward
/// part multiplies as often as the primal does.
#[test]
fn hvp_computes_no_tangent_of_the_value() {
    // The GradBench model (`gradbench/models/kmeans.rs`), as the tool differentiates it.
    let src = include_str!("../../gradbench/models/kmeans.rs");
    let m = jitdiff::front::lower_source(src).unwrap();
    let (d, k, n) = (3, 4, 50);
    let mut rng = SplitMix64::new(11);
    let points: Vec<f64> = (0..n * d).map(|_| rng.uniform()).collect();
    let centroids: Vec<f64> = (0..k * d).map(|_| rng.uniform()).collect();
    let nearest = |i: usize| {
        let dist = |j: usize| (0..d).map(|l| (points[i * d + l] - centroids[j * d + l]).powi(2)).sum::<f64>();
        (0..k).min_by(|&a, &b| dist(a).total_cmp(&dist(b))).unwrap()
    };
    let mut expected_diag = vec![0.0; k * d];
    let mut expected_grad = vec![0.0; k * d];
    for i in 0..n {
        let j = nearest(i);
        for l in 0..d {
            expected_diag[j * d + l] += 2.0;
            expected_grad[j * d + l] += 2.0 * (centroids[j * d + l] - points[i * d + l]);
        }
    }
    for width in [1, 2] {
        let h = HvpFn::builder(&m, "kmeans").wrt(["centroids"]).width(width).build().unwrap();
        let directions = vec![1.0; width as usize * k * d];
        let (mut grad, mut products) = (vec![0.0; k * d], vec![0.0; width as usize * k * d]);
        let mut call = [Arg::Slice(&points), Arg::Slice(&centroids), Arg::I64(d as i64)];
        h.hvp_with_gradient(&mut call, &directions, &mut grad, &mut products).unwrap();
        for lane in products.chunks(k * d) {
            assert_eq!(lane, expected_diag.as_slice(), "W = {width}");
        }
        for (g, e) in grad.iter().zip(&expected_grad) {
            assert!((g - e).abs() <= 1e-12 * (1.0 + e.abs()), "W = {width}: {grad:?} vs {expected_grad:?}");
        }
        let derived = &h.derivative().module;
        let forward = derived
            .functions
            .iter()
            .find(|f| f.name.starts_with("kmeans_fwd") && f.name.contains("_jvp"))
            .expect("the forward function's tangent function");
        let multiplies =
            forward.blocks.iter().flat_map(|b| &b.insts).filter(|i| i.op == jitdiff::ir::Opcode::FMul).count();
        assert_eq!(multiplies, 1, "W = {width}: {}", jitdiff::ir::print_function(derived, forward));
    }
}
