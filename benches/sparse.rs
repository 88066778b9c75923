//! Sparse derivatives (criterion), issue #28 part 1:
//!
//! - **Hessian**, chained Rosenbrock, n = 100,000 (tridiagonal, 3 colours): the sparse Hessian
//!   with value and gradient (`SparseHessianFn`: 3 colours fit one sweep of W = 4 products)
//!   against one HVP sweep of 4 and of 8 lanes and one single-direction HVP (`HvpFn`), so
//!   `sparse_hessian / hvp_w1` reads off the "time ≈ colours × HVP" relation and
//!   `sparse_hessian / hvp_w4` the overhead over the one sweep. The dense route would take
//!   `n / 8` = 12,500 sweeps; it is timed at n = 2,000 (`*_2k` groups).
//! - **Jacobian**, Broyden tridiagonal residuals, n = 100,000 (3 colours): the sparse Jacobian
//!   (`SparseJacobianFn`, one 4-lane forward sweep) against one 4- and one 8-lane `ForwardFn`
//!   sweep, and at n = 2,000 against the dense `JacobianFn` (250 sweeps of 8).
//! - **Set-up** at n = 100,000: `build` (derivation and JIT of the 8-lane sweep) plus the first
//!   `info` (detection, coloring and the JIT of the plan's narrower sweep), for both handles;
//!   the split is printed once before the runs.
//!
//! - **Row compression**, n = 10,000: `out[0] = sum(x)`, `out[i + 1] = x[i]^2` — one dense row,
//!   so columns need n colours (1,250 forward sweeps of 8) while rows need 2 (one forward run and
//!   one pullback sweep): `rows_10k/by_columns` / `rows_10k/by_rows`, and the dense reverse
//!   `JacobianFn` for reference.
//!
//! Ratios to read off one run: `hessian_100k/sparse_hessian` / `hessian_100k/hvp_w4` (one sweep
//! plus seeding and recovery) and / `hessian_100k/hvp_w1` (≈ colours = 3);
//! `jacobian_100k/sparse_jacobian` / `jacobian_100k/jvp_w4`; the `*_2k` dense / sparse ratios;
//! `setup_100k/*` against the 50 ms target.

use criterion::{Criterion, criterion_group, criterion_main};
use jitdiff::ir::parse_module;
use jitdiff::sparse::CsrMatrix;
use jitdiff::{ForwardFn, HvpFn, JacobianFn, SparseHessianFn, SparseJacobianFn, args};
use std::hint::black_box;
use std::time::{Duration, Instant};

use jitdiff_problems::broyden::BROYDEN_RESIDUALS_IR as BROYDEN_RESIDUALS;
use jitdiff_problems::rosenbrock::ROSENBROCK_IR as CHAINED_ROSENBROCK;

const N: usize = 100_000;

fn start(n: usize) -> Vec<f64> {
    (0..n).map(|i| if i % 2 == 0 { -1.2 } else { 1.0 }).collect()
}

fn hessian(c: &mut Criterion) {
    let m = parse_module(CHAINED_ROSENBROCK).unwrap();
    let x = start(N);
    let sparse = SparseHessianFn::builder(&m, "rosenbrock").wrt(["x"]).build().unwrap();
    let hvp8 = HvpFn::builder(&m, "rosenbrock").wrt(["x"]).width(8).build().unwrap();
    let hvp1 = HvpFn::builder(&m, "rosenbrock").wrt(["x"]).width(1).build().unwrap();
    let hvp4 = HvpFn::builder(&m, "rosenbrock").wrt(["x"]).width(4).build().unwrap();
    let (d4, mut p4) = (vec![0.5; 4 * N], vec![0.0; 4 * N]);
    let info = sparse.info(&args![&x]).unwrap();
    eprintln!(
        "hessian_100k: {} nonzeros, {} colours, {} sweep(s) of {} lanes",
        info.nnz, info.colors, info.sweeps, info.lanes
    );
    let (mut g, mut h) = (vec![0.0; N], CsrMatrix::default());
    let (d8, mut p8) = (vec![0.5; 8 * N], vec![0.0; 8 * N]);
    let (d1, mut p1) = (vec![0.5; N], vec![0.0; N]);
    let mut group = c.benchmark_group("hessian_100k");
    group.bench_function("sparse_hessian", |b| {
        b.iter(|| sparse.hessian_with_gradient(&mut args![&x], &mut g, black_box(&mut h)).unwrap())
    });
    group.bench_function("hvp_w8", |b| {
        b.iter(|| hvp8.hvp_with_gradient(&mut args![&x], &d8, &mut g, black_box(&mut p8)).unwrap())
    });
    group.bench_function("hvp_w4", |b| {
        b.iter(|| hvp4.hvp_with_gradient(&mut args![&x], &d4, &mut g, black_box(&mut p4)).unwrap())
    });
    group.bench_function("hvp_w1", |b| {
        b.iter(|| hvp1.hvp_with_gradient(&mut args![&x], &d1, &mut g, black_box(&mut p1)).unwrap())
    });
    group.finish();

    let n = 2000;
    let x = start(n);
    let mut g = vec![0.0; n];
    let mut group = c.benchmark_group("hessian_2k");
    group.bench_function("sparse_hessian", |b| {
        b.iter(|| sparse.hessian_with_gradient(&mut args![&x], &mut g, black_box(&mut h)).unwrap())
    });
    group.sample_size(10);
    group.bench_function("dense_hessian", |b| b.iter(|| black_box(hvp8.hessian(&mut args![&x]).unwrap())));
    group.finish();
}

fn jacobian(c: &mut Criterion) {
    let m = parse_module(BROYDEN_RESIDUALS).unwrap();
    let x = start(N);
    let mut r = vec![0.0; N];
    let sparse = SparseJacobianFn::builder(&m, "broyden").wrt(["x"]).build().unwrap();
    let forward = ForwardFn::builder(&m, "broyden").wrt(["x"]).width(8).build().unwrap();
    let forward4 = ForwardFn::builder(&m, "broyden").wrt(["x"]).width(4).build().unwrap();
    let seeds4 = vec![0.5; 4 * N];
    let mut out4 = forward4.output();
    let info = sparse.info(&args![&x, &mut r]).unwrap();
    eprintln!(
        "jacobian_100k: {} nonzeros, {} colours, {} sweep(s) of {} lanes",
        info.nnz, info.colors, info.sweeps, info.lanes
    );
    let mut j = CsrMatrix::default();
    let seeds = vec![0.5; 8 * N];
    let mut out = forward.output();
    let mut group = c.benchmark_group("jacobian_100k");
    group.bench_function("sparse_jacobian", |b| {
        b.iter(|| sparse.jacobian_into(&mut args![&x, &mut r], black_box(&mut j)).unwrap())
    });
    group.bench_function("jvp_w8", |b| {
        b.iter(|| forward.jvp_into(&mut args![&x, &mut r], &[&seeds], black_box(&mut out)).unwrap())
    });
    group.bench_function("jvp_w4", |b| {
        b.iter(|| forward4.jvp_into(&mut args![&x, &mut r], &[&seeds4], black_box(&mut out4)).unwrap())
    });
    group.finish();

    let n = 2000;
    let x = start(n);
    let mut r = vec![0.0; n];
    let dense = JacobianFn::builder(&m, "broyden").wrt(["x"]).build().unwrap();
    let mut group = c.benchmark_group("jacobian_2k");
    group.bench_function("sparse_jacobian", |b| {
        b.iter(|| sparse.jacobian_into(&mut args![&x, &mut r], black_box(&mut j)).unwrap())
    });
    group.sample_size(10);
    group.bench_function("dense_jacobian", |b| b.iter(|| black_box(dense.jacobian(&mut args![&x, &mut r]).unwrap())));
    group.finish();
}

fn setup(c: &mut Criterion) {
    let rosenbrock = parse_module(CHAINED_ROSENBROCK).unwrap();
    let broyden = parse_module(BROYDEN_RESIDUALS).unwrap();
    let x = start(N);
    let mut r = vec![0.0; N];
    // The split, once.
    let t = Instant::now();
    let h = SparseHessianFn::builder(&rosenbrock, "rosenbrock").wrt(["x"]).build().unwrap();
    let jit = t.elapsed();
    let info = h.info(&args![&x]).unwrap();
    eprintln!(
        "hessian set-up at n = {N}: build (JIT of 8 lanes) {jit:?}, detect {:?}, colour {:?}, JIT of {} lanes {:?}",
        info.detect_time, info.color_time, info.lanes, info.compile_time
    );
    let t = Instant::now();
    let j = SparseJacobianFn::builder(&broyden, "broyden").wrt(["x"]).build().unwrap();
    let jit = t.elapsed();
    let info = j.info(&args![&x, &mut r]).unwrap();
    eprintln!(
        "jacobian set-up at n = {N}: build (JIT of 8 lanes) {jit:?}, detect {:?}, colour {:?}, JIT of {} lanes {:?}",
        info.detect_time, info.color_time, info.lanes, info.compile_time
    );

    let mut group = c.benchmark_group("setup_100k");
    group.sample_size(10).measurement_time(Duration::from_secs(5));
    group.bench_function("sparse_hessian_build_detect_colour", |b| {
        b.iter(|| {
            let h = SparseHessianFn::builder(&rosenbrock, "rosenbrock").wrt(["x"]).build().unwrap();
            black_box(h.info(&args![&x]).unwrap())
        })
    });
    group.bench_function("sparse_jacobian_build_detect_colour", |b| {
        b.iter(|| {
            let j = SparseJacobianFn::builder(&broyden, "broyden").wrt(["x"]).build().unwrap();
            black_box(j.info(&args![&x, &mut r]).unwrap())
        })
    });
    group.finish();
}

/// A dense first row over a diagonal: `out[0] = sum(x)`, `out[i + 1] = x[i]^2`.
const DENSE_ROW: &str = "func @f(x: slice, out: mslice) {
entry:
    n = len x
    zero = iconst 0
    one = iconst 1
    acc0 = fconst 0.0
    jump head(zero, acc0)
head(i: i64, acc: f64):
    more = icmp lt i, n
    br more, body, done(acc)
body:
    a = load x, i
    sq = fmul a, a
    j = iadd i, one
    store out, j, sq
    acc2 = fadd acc, a
    jump head(j, acc2)
done(sum: f64):
    store out, zero, sum
    ret
}";

fn rows(c: &mut Criterion) {
    let m = parse_module(DENSE_ROW).unwrap();
    let n = 10_000;
    let x = start(n);
    let mut out = vec![0.0; n + 1];
    let by_rows = SparseJacobianFn::builder(&m, "f").wrt(["x"]).build().unwrap();
    let by_columns =
        SparseJacobianFn::builder(&m, "f").wrt(["x"]).build().unwrap().with_mode(jitdiff::JacobianMode::Forward);
    let dense = JacobianFn::builder(&m, "f").wrt(["x"]).build().unwrap().with_mode(jitdiff::JacobianMode::Reverse);
    for (name, f) in [("by_rows", &by_rows), ("by_columns", &by_columns)] {
        let info = f.info(&args![&x, &mut out]).unwrap();
        eprintln!(
            "rows_10k {name}: {:?}, {} colours, {} sweep(s) of {} lanes, set-up: detect {:?}, colour {:?}",
            info.mode, info.colors, info.sweeps, info.lanes, info.detect_time, info.color_time
        );
    }
    let (mut a, mut b) = (CsrMatrix::default(), CsrMatrix::default());
    by_rows.jacobian_into(&mut args![&x, &mut out], &mut a).unwrap();
    by_columns.jacobian_into(&mut args![&x, &mut out], &mut b).unwrap();
    assert_eq!(a, b);
    let mut group = c.benchmark_group("rows_10k");
    group.bench_function("by_rows", |bench| {
        bench.iter(|| by_rows.jacobian_into(&mut args![&x, &mut out], black_box(&mut a)).unwrap())
    });
    group.sample_size(10);
    group.bench_function("by_columns", |bench| {
        bench.iter(|| by_columns.jacobian_into(&mut args![&x, &mut out], black_box(&mut b)).unwrap())
    });
    group.bench_function("dense_reverse", |bench| {
        bench.iter(|| black_box(dense.jacobian(&mut args![&x, &mut out]).unwrap()))
    });
    group.finish();
}

criterion_group!(benches, setup, hessian, jacobian, rows);
criterion_main!(benches);
