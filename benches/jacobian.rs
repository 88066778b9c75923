//! Jacobians of vector outputs (criterion), both shapes of issue #24:
//! - **tall**, 200 × 6: the Lotka–Volterra sensitivities (`examples/models/lotka_volterra.rs`,
//!   `trajectory`: 100 RK4 steps, outputs the 200 populations, inputs the 6 parameters).
//!   `JacobianFn::jacobian` (mode Auto picks one 8-lane forward sweep) against one hand-seeded
//!   8-lane `ForwardFn::jvp_into` sweep with the identity in lanes 0–5 (target: ≤ 1.3×).
//! - **wide**, 6 × 200: six weighted sums of `sin(w x_i) x_i` over 200 inputs. `JacobianFn` in
//!   reverse mode (one forward run, one 8-lane pullback sweep) against six scalar reverse sweeps:
//!   six `GradientFn::vjp` calls, and one recorded `pullback` applied six times (target: faster
//!   than both).
//!
//! Ratios to read off one run: `tall/jacobian` / `tall/one_seeded_sweep`;
//! `wide/reverse_lanes` / `wide/six_vjps` and / `wide/one_pullback_six_applies`.

use criterion::{Criterion, criterion_group, criterion_main};
use jitdiff::front::lower_source;
use jitdiff::{ForwardFn, GradientFn, JacobianFn, JacobianMode, args};
use std::hint::black_box;

const LOTKA_VOLTERRA: &str = include_str!("../examples/models/lotka_volterra.rs");

const WIDE: &str = "
pub fn features(x: &[f64], out: &mut [f64]) {
    for k in 0..out.len() {
        let mut s = 0.0;
        for i in 0..x.len() {
            let w = ((k + 1) * (i + 1)) as f64 * 0.01;
            s += (w * x[i]).sin() * x[i];
        }
        out[k] = s;
    }
}";

fn tall(c: &mut Criterion) {
    let module = lower_source(LOTKA_VOLTERRA).unwrap();
    let theta = [1.0, 0.1, 1.5, 0.075, 10.0, 5.0];
    let mut trajectory = vec![0.0; 200];
    let jacobian = JacobianFn::builder(&module, "trajectory").wrt(["theta"]).build().unwrap();
    let mode = jacobian.mode_for(&args![&theta, 0.1, &mut trajectory]);
    assert_eq!(mode, JacobianMode::Forward, "a tall Jacobian takes forward sweeps");
    let forward = ForwardFn::builder(&module, "trajectory").wrt(["theta"]).width(8).build().unwrap();
    // Lane l of element e is 1 where l == e: the identity in lanes 0-5.
    let seeds: Vec<f64> = (0..6).flat_map(|e| (0..8).map(move |l| f64::from(u8::from(l == e)))).collect();
    let mut out = forward.output();
    // The same numbers both ways.
    let j = jacobian.jacobian(&mut args![&theta, 0.1, &mut trajectory]).unwrap();
    forward.jvp_into(&mut args![&theta, 0.1, &mut trajectory], &[&seeds], &mut out).unwrap();
    for r in 0..200 {
        for col in 0..6 {
            assert_eq!(j.get(r, col), out.slice_tangent(0)[r * 8 + col], "J[{r}][{col}]");
        }
    }
    let mut group = c.benchmark_group("jacobian_tall_200x6");
    group.bench_function("jacobian", |b| {
        b.iter(|| jacobian.jacobian(&mut args![black_box(&theta), 0.1, &mut trajectory]).unwrap())
    });
    group.bench_function("one_seeded_sweep", |b| {
        b.iter(|| forward.jvp_into(&mut args![black_box(&theta), 0.1, &mut trajectory], &[&seeds], &mut out).unwrap())
    });
    group.finish();
}

fn wide(c: &mut Criterion) {
    let module = lower_source(WIDE).unwrap();
    let x: Vec<f64> = (0..200).map(|i| (i as f64 * 0.37).sin()).collect();
    let mut out = vec![0.0; 6];
    let jacobian =
        JacobianFn::builder(&module, "features").wrt(["x"]).build().unwrap().with_mode(JacobianMode::Reverse);
    assert_eq!(
        JacobianFn::builder(&module, "features").wrt(["x"]).build().unwrap().mode_for(&args![&x, &mut out]),
        JacobianMode::Reverse
    );
    let gradient = GradientFn::builder(&module, "features").wrt(["x"]).build().unwrap();
    let units: Vec<Vec<f64>> = (0..6).map(|k| (0..6).map(|j| f64::from(u8::from(j == k))).collect()).collect();
    let mut row = vec![0.0; 200];
    // The same numbers both ways.
    let j = jacobian.jacobian(&mut args![&x, &mut out]).unwrap();
    for (k, unit) in units.iter().enumerate() {
        gradient.vjp(&mut args![&x, &mut out], unit, &mut row).unwrap();
        assert_eq!(j.row(k), &row[..], "row {k}");
    }
    let mut group = c.benchmark_group("jacobian_wide_6x200");
    group.bench_function("reverse_lanes", |b| {
        b.iter(|| jacobian.jacobian(&mut args![black_box(&x), &mut out]).unwrap())
    });
    group.bench_function("six_vjps", |b| {
        b.iter(|| {
            for unit in &units {
                gradient.vjp(&mut args![black_box(&x), &mut out], unit, &mut row).unwrap();
            }
        })
    });
    group.bench_function("one_pullback_six_applies", |b| {
        b.iter(|| {
            let (_, mut pullback) = gradient.pullback(&mut args![black_box(&x), &mut out]).unwrap();
            for unit in &units {
                pullback.apply_into(unit, &mut row).unwrap();
            }
        })
    });
    group.finish();
}

criterion_group!(benches, tall, wide);
criterion_main!(benches);
