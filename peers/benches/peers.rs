//! jitdiff against the Rust AD crates on the pendulum (3 parameters, 1,000 RK4 steps) and
//! Rosenbrock n = 10 gradients (criterion; read ratios off one run):
//! - jitdiff `value_and_grad` (Auto: forward lanes for the pendulum, reverse mode for
//!   Rosenbrock n = 10) and in reverse mode;
//! - num-dual `DualSVec64<N>` (forward mode, N lanes);
//! - echidna `DualVec<f64, N>` (forward mode, N lanes) and `echidna::grad` (reverse, tape);
//! - the hand-written gradient and the plain f64 primal.
//!
//! Every implementation is one generic function over [`Ad`] in the operation order of the IR and
//! of `jitdiff_problems`; each gradient is checked against jitdiff's before timing.
//!
//! Before criterion's groups, a break-even table: after how many calls jitdiff's derive +
//! compile time is repaid by its faster calls against the fastest peer (its own timing, best of
//! interleaved blocks, so that the ratios come from one run).

use criterion::{Criterion, criterion_group};
use jitdiff::ir::parse_module;
use jitdiff::jit::Arg;
use jitdiff::{GradientFn, GradientMode};
use jitdiff_problems::Pendulum;
use jitdiff_problems::pendulum::{PENDULUM_IR, pendulum_gradient, pendulum_loss};
use jitdiff_problems::rosenbrock::{ROSENBROCK_IR, rosenbrock, rosenbrock_gradient, standard_start};
use std::hint::black_box;
use std::ops::{Add, Div, Mul, Neg, Sub};
use std::time::{Duration, Instant};

/// The arithmetic the two problems need, for f64 and every peer's number type.
trait Ad:
    Copy + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Div<Output = Self> + Neg<Output = Self>
{
    fn c(x: f64) -> Self;
    fn sin(self) -> Self;
    fn re(&self) -> f64;
}

impl Ad for f64 {
    fn c(x: f64) -> f64 {
        x
    }
    fn sin(self) -> f64 {
        f64::sin(self)
    }
    fn re(&self) -> f64 {
        *self
    }
}

type NumDual<const N: usize> = num_dual::DualSVec64<N>;
impl<const N: usize> Ad for NumDual<N> {
    fn c(x: f64) -> Self {
        NumDual::from_re(x)
    }
    fn sin(self) -> Self {
        num_dual::DualNum::sin(&self)
    }
    fn re(&self) -> f64 {
        self.re
    }
}

type Echidna<const N: usize> = echidna::DualVec<f64, N>;
impl<const N: usize> Ad for Echidna<N> {
    fn c(x: f64) -> Self {
        Echidna::constant(x)
    }
    fn sin(self) -> Self {
        num_traits_sin(self)
    }
    fn re(&self) -> f64 {
        self.re
    }
}

impl Ad for echidna::Reverse<f64> {
    fn c(x: f64) -> Self {
        <echidna::Reverse<f64> as echidna::Scalar>::from_f(x)
    }
    fn sin(self) -> Self {
        num_traits_sin(self)
    }
    fn re(&self) -> f64 {
        echidna::Scalar::value(self)
    }
}

fn num_traits_sin<T: echidna::Scalar>(x: T) -> T {
    x.sin()
}

/// The pendulum's acceleration and loss (as `jitdiff_problems::pendulum`).
fn accel<T: Ad>(theta: T, omega: T, p: &[T; 3]) -> T {
    let smooth = p[0] * theta.sin() + p[1] * omega;
    if omega.re() > 0.0 {
        -smooth - p[2]
    } else if omega.re() < 0.0 {
        p[2] - smooth
    } else {
        -smooth
    }
}

fn pendulum<T: Ad>(p: &[T; 3], theta0: f64, omega0: f64, dt: f64, steps: usize) -> T {
    let (half_dt, sixth_dt) = (T::c(dt * 0.5), T::c(dt / 6.0));
    let (dt, two) = (T::c(dt), T::c(2.0));
    let (mut theta, mut omega) = (T::c(theta0), T::c(omega0));
    for _ in 0..steps {
        let k1 = accel(theta, omega, p);
        let (theta2, omega2) = (theta + half_dt * omega, omega + half_dt * k1);
        let k2 = accel(theta2, omega2, p);
        let (theta3, omega3) = (theta + half_dt * omega2, omega + half_dt * k2);
        let k3 = accel(theta3, omega3, p);
        let (theta4, omega4) = (theta + dt * omega3, omega + dt * k3);
        let k4 = accel(theta4, omega4, p);
        let next_theta = theta + sixth_dt * (omega + two * omega2 + two * omega3 + omega4);
        omega = omega + sixth_dt * (k1 + two * k2 + two * k3 + k4);
        theta = next_theta;
    }
    theta * theta + omega * omega
}

fn rosen<T: Ad>(x: &[T]) -> T {
    let mut total = T::c(0.0);
    for i in 0..x.len().saturating_sub(1) {
        let valley = x[i + 1] - x[i] * x[i];
        let offset = T::c(1.0) - x[i];
        total = total + T::c(100.0) * (valley * valley) + offset * offset;
    }
    total
}

fn num_dual_grad<const N: usize>(f: impl Fn(&[NumDual<N>; N]) -> NumDual<N>, x: &[f64; N]) -> (f64, [f64; N]) {
    let vars: [NumDual<N>; N] = std::array::from_fn(|i| NumDual::from_re(x[i]).derivative(i));
    let y = f(&vars);
    let g = y.eps.unwrap_generic(nalgebra::Const::<N>, nalgebra::U1);
    (y.re, std::array::from_fn(|i| g[i]))
}

fn echidna_grad<const N: usize>(f: impl Fn(&[Echidna<N>; N]) -> Echidna<N>, x: &[f64; N]) -> (f64, [f64; N]) {
    let vars: [Echidna<N>; N] = std::array::from_fn(|i| Echidna::with_tangent(x[i], i));
    let y = f(&vars);
    (y.re, y.eps)
}

fn close(a: &[f64], b: &[f64], what: &str) {
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= 1e-9 * x.abs().max(1.0), "{what}: {a:?} vs {b:?}");
    }
}

fn pendulum_group(c: &mut Criterion) {
    let p = Pendulum::standard();
    let (t0, w0, dt, n) = (p.theta0, p.omega0, p.dt, p.steps);
    let m = parse_module(PENDULUM_IR).unwrap();
    let build = |mode| GradientFn::builder(&m, "pendulum").wrt(["params"]).gradient_mode(mode).build().unwrap();
    let (auto, reverse) = (build(GradientMode::Auto), build(GradientMode::Reverse));
    let steps = n as i64;
    let args = || [Arg::Slice(&p.params), Arg::F64(t0), Arg::F64(w0), Arg::F64(dt), Arg::I64(steps)];
    let mut g = [0.0; 3];
    auto.value_and_grad(&mut args(), &mut g).unwrap();
    close(&num_dual_grad(|q| pendulum(q, t0, w0, dt, n), &p.params).1, &g, "num-dual");
    close(&echidna_grad(|q| pendulum(q, t0, w0, dt, n), &p.params).1, &g, "echidna DualVec");
    let tape = echidna::grad(|q| pendulum(&[q[0], q[1], q[2]], t0, w0, dt, n), &p.params);
    close(&tape, &g, "echidna tape");

    let mut group = c.benchmark_group("pendulum_1000_steps_3_params");
    group.bench_function("f64 primal", |b| b.iter(|| pendulum_loss(black_box(&p.params), t0, w0, dt, n)));
    let mut scratch = Vec::new();
    group.bench_function("hand-written", |b| {
        b.iter(|| pendulum_gradient(black_box(&p.params), t0, w0, dt, n, black_box(&mut g), &mut scratch))
    });
    group.bench_function("jitdiff auto (forward lanes)", |b| {
        b.iter(|| auto.value_and_grad(&mut args(), black_box(&mut g)).unwrap())
    });
    group.bench_function("jitdiff reverse", |b| {
        b.iter(|| reverse.value_and_grad(&mut args(), black_box(&mut g)).unwrap())
    });
    group.bench_function("num-dual DualSVec64<3>", |b| {
        b.iter(|| num_dual_grad(|q| pendulum(q, t0, w0, dt, n), black_box(&p.params)))
    });
    group.bench_function("echidna DualVec<3>", |b| {
        b.iter(|| echidna_grad(|q| pendulum(q, t0, w0, dt, n), black_box(&p.params)))
    });
    group.bench_function("echidna grad (tape)", |b| {
        b.iter(|| echidna::grad(|q| pendulum(&[q[0], q[1], q[2]], t0, w0, dt, n), black_box(&p.params)))
    });
    group.finish();
}

fn rosenbrock_group(c: &mut Criterion) {
    let x: [f64; 10] = standard_start(10).try_into().unwrap();
    let m = parse_module(ROSENBROCK_IR).unwrap();
    let f = GradientFn::builder(&m, "rosenbrock").wrt(["x"]).build().unwrap();
    let mut g = [0.0; 10];
    f.value_and_grad(&mut [Arg::Slice(&x)], &mut g).unwrap();
    close(&num_dual_grad(|v| rosen(v), &x).1, &g, "num-dual");
    close(&echidna_grad(|v| rosen(v), &x).1, &g, "echidna DualVec");
    close(&echidna::grad(rosen, &x), &g, "echidna tape");

    let mut group = c.benchmark_group("rosenbrock_10");
    group.bench_function("f64 primal", |b| b.iter(|| rosenbrock(black_box(&x))));
    group.bench_function("hand-written", |b| b.iter(|| rosenbrock_gradient(black_box(&x), black_box(&mut g))));
    group.bench_function("jitdiff", |b| b.iter(|| f.value_and_grad(&mut [Arg::Slice(black_box(&x))], &mut g).unwrap()));
    group.bench_function("num-dual DualSVec64<10>", |b| b.iter(|| num_dual_grad(|v| rosen(v), black_box(&x))));
    group.bench_function("echidna DualVec<10>", |b| b.iter(|| echidna_grad(|v| rosen(v), black_box(&x))));
    group.bench_function("echidna grad (tape)", |b| b.iter(|| echidna::grad(rosen, black_box(&x))));
    group.finish();
}

/// Seconds per call of each row: the best of `rounds` blocks of about a millisecond each, the
/// rows' blocks interleaved so that load on a shared machine hits every row alike.
fn best_per_call(rounds: usize, rows: &mut [(&str, &mut dyn FnMut())]) -> Vec<f64> {
    let mut best = vec![f64::INFINITY; rows.len()];
    for _ in 0..rounds {
        for ((_, row), b) in rows.iter_mut().zip(&mut best) {
            let (start, mut calls) = (Instant::now(), 0u32);
            while calls < 10 || start.elapsed() < Duration::from_millis(1) {
                row();
                calls += 1;
            }
            *b = b.min(start.elapsed().as_secs_f64() / f64::from(calls));
        }
    }
    best
}

/// Seconds to build a handle and make its first call (which compiles what `Auto` defers), best of
/// three fresh handles.
fn best_build(mut build: impl FnMut()) -> f64 {
    (0..3)
        .map(|_| {
            let start = Instant::now();
            build();
            start.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

/// One row of the break-even table: jitdiff's build time and call, against the fastest peer row.
fn break_even_row(problem: &str, build: f64, times: &[f64], names: &[&str]) -> String {
    let (jitdiff, peers) = (times[0], &times[1..]);
    let (best, &peer) = peers.iter().enumerate().min_by(|a, b| a.1.total_cmp(b.1)).expect("peers");
    let repay = if jitdiff < peer {
        format!("{:.0}", (build / (peer - jitdiff)).ceil())
    } else {
        format!("never ({:.2}x the peer per call)", jitdiff / peer)
    };
    let time = |s: f64| if s < 1e-6 { format!("{:.1} ns", s * 1e9) } else { format!("{:.1} µs", s * 1e6) };
    format!(
        "| {problem} | {:.2} ms | {} | {} | {} | {:.2} | {repay} |",
        build * 1e3,
        time(jitdiff),
        names[best + 1],
        time(peer),
        jitdiff / peer
    )
}

/// Print after how many calls derive + compile of jitdiff's `value_and_grad` is repaid against the
/// fastest peer crate, per problem.
fn break_even() {
    let mut lines = vec![
        "| problem | derive + compile (build + first call) | jitdiff value_and_grad | fastest peer | its time | jitdiff / peer | calls to repay |".to_string(),
        "|---|---:|---:|---|---:|---:|---:|".to_string(),
    ];
    // The pendulum: 3 parameters, forward lanes under `Auto`.
    let p = Pendulum::standard();
    let (t0, w0, dt, n) = (p.theta0, p.omega0, p.dt, p.steps);
    let m = parse_module(PENDULUM_IR).unwrap();
    let steps = n as i64;
    let args = || [Arg::Slice(&p.params), Arg::F64(t0), Arg::F64(w0), Arg::F64(dt), Arg::I64(steps)];
    let mut g = [0.0; 3];
    let build = best_build(|| {
        let f = GradientFn::builder(&m, "pendulum").wrt(["params"]).build().unwrap();
        f.value_and_grad(&mut args(), &mut g).unwrap();
    });
    let auto = GradientFn::builder(&m, "pendulum").wrt(["params"]).build().unwrap();
    let names = ["jitdiff", "num-dual DualSVec64<3>", "echidna DualVec<3>", "echidna grad (tape)"];
    let times = best_per_call(
        30,
        &mut [
            (names[0], &mut || {
                auto.value_and_grad(&mut args(), black_box(&mut g)).unwrap();
            }),
            (names[1], &mut || {
                black_box(num_dual_grad(|q| pendulum(q, t0, w0, dt, n), black_box(&p.params)));
            }),
            (names[2], &mut || {
                black_box(echidna_grad(|q| pendulum(q, t0, w0, dt, n), black_box(&p.params)));
            }),
            (names[3], &mut || {
                black_box(echidna::grad(|q| pendulum(&[q[0], q[1], q[2]], t0, w0, dt, n), black_box(&p.params)));
            }),
        ],
    );
    lines.push(break_even_row("pendulum, 1,000 steps, 3 parameters", build, &times, &names));
    // Rosenbrock n = 10: reverse mode.
    let x: [f64; 10] = standard_start(10).try_into().unwrap();
    let m = parse_module(ROSENBROCK_IR).unwrap();
    let mut g = [0.0; 10];
    let build = best_build(|| {
        let f = GradientFn::builder(&m, "rosenbrock").wrt(["x"]).build().unwrap();
        f.value_and_grad(&mut [Arg::Slice(&x)], &mut g).unwrap();
    });
    let f = GradientFn::builder(&m, "rosenbrock").wrt(["x"]).build().unwrap();
    let names = ["jitdiff", "num-dual DualSVec64<10>", "echidna DualVec<10>", "echidna grad (tape)"];
    let times = best_per_call(
        30,
        &mut [
            (names[0], &mut || {
                f.value_and_grad(&mut [Arg::Slice(black_box(&x))], &mut g).unwrap();
            }),
            (names[1], &mut || {
                black_box(num_dual_grad(|v| rosen(v), black_box(&x)));
            }),
            (names[2], &mut || {
                black_box(echidna_grad(|v| rosen(v), black_box(&x)));
            }),
            (names[3], &mut || {
                black_box(echidna::grad(rosen, black_box(&x)));
            }),
        ],
    );
    lines.push(break_even_row("Rosenbrock n = 10", build, &times, &names));
    println!("Break-even against the fastest peer crate (one run):\n\n{}\n", lines.join("\n"));
}

criterion_group!(peers, pendulum_group, rosenbrock_group);

fn main() {
    break_even();
    peers();
    Criterion::default().configure_from_args().final_summary();
}
