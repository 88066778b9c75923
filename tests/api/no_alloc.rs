//! The hot path does not touch the heap: after a warm-up call, 10,000 calls of
//! `GradientFn::value_and_grad` into caller-owned buffers make zero allocations on every
//! benchmark problem — and so do `ForwardFn::jvp_into` (widths 1 and 4), a cached argmin
//! `Objective` evaluated at changing points, and the hand-written gradients with their reused
//! scratch buffers.

use jitdiff::ir::{ArgValue, parse_module};
use jitdiff::jit::Arg;
use jitdiff::jit::alloc_count::allocations_on_this_thread;
use jitdiff::{ForwardFn, GradientFn};
use jitdiff_problems::{Gmm, Mlp, Pendulum, Problem, Rosenbrock};

const CALLS: usize = 10_000;

fn native_args(values: &[ArgValue]) -> Vec<Arg<'_>> {
    values
        .iter()
        .map(|a| match a {
            ArgValue::F64(x) => Arg::F64(*x),
            ArgValue::I64(x) => Arg::I64(*x),
            ArgValue::Bool(x) => Arg::Bool(*x),
            ArgValue::Vector(v) => Arg::Vector(v),
            ArgValue::Slice(v) | ArgValue::SliceMut(v) => Arg::Slice(v),
        })
        .collect()
}

/// Small instances of the four problems, so that 10,000 calls take well under a second each.
fn problems() -> Vec<Box<dyn Problem>> {
    vec![
        Box::new(Rosenbrock::new(1000)),
        Box::new(Gmm::generate(2, 5, 50, 1)),
        Box::new(Pendulum::with_steps(100)),
        Box::new(Mlp::generate(8, 16, 16, 2)),
    ]
}

/// Allocations made by `CALLS` runs of `f` after one warm-up run.
fn allocations(mut f: impl FnMut()) -> u64 {
    f();
    let before = allocations_on_this_thread();
    for _ in 0..CALLS {
        f();
    }
    allocations_on_this_thread() - before
}

#[test]
fn value_and_grad_allocates_nothing() {
    for p in problems() {
        let module = parse_module(p.ir()).unwrap();
        let values = p.args();
        let wrt: Vec<bool> = (0..values.len()).map(|i| p.active_params().contains(&i)).collect();
        let f = GradientFn::builder(&module, p.entry()).wrt_mask(&wrt).build().unwrap();
        let mut grad = vec![0.0; p.gradient_len()];
        let mut args = native_args(&values);
        let mut last = 0.0;
        let count = allocations(|| last = f.value_and_grad(&mut args, &mut grad).unwrap());
        assert_eq!(count, 0, "{}: {count} allocations in {CALLS} calls", p.label());
        // The calls did the work: the value is the reference.
        assert!((last - p.reference()).abs() <= 1e-9 * p.reference().abs(), "{}", p.label());
    }
}

#[test]
fn jvp_into_allocates_nothing() {
    for p in problems() {
        let module = parse_module(p.ir()).unwrap();
        let values = p.args();
        let wrt: Vec<bool> = (0..values.len()).map(|i| p.active_params().contains(&i)).collect();
        for width in [1u8, 4] {
            let f = ForwardFn::builder(&module, p.entry()).wrt_mask(&wrt).width(width).build().unwrap();
            let tangents: Vec<Vec<f64>> = p
                .active_params()
                .iter()
                .map(|&i| vec![0.5; values[i].as_slice().map_or(1, <[f64]>::len) * width as usize])
                .collect();
            let tangent_refs: Vec<&[f64]> = tangents.iter().map(Vec::as_slice).collect();
            let mut out = f.output();
            let mut args = native_args(&values);
            let count = allocations(|| f.jvp_into(&mut args, &tangent_refs, &mut out).unwrap());
            assert_eq!(count, 0, "{} at width {width}: {count} allocations in {CALLS} calls", p.label());
            assert!(out.tangent(0).iter().all(|t| t.is_finite()));
        }
    }
}

#[cfg(feature = "argmin")]
#[test]
fn a_cached_objective_allocates_nothing_at_new_points() {
    let module = parse_module(jitdiff_problems::rosenbrock::ROSENBROCK_IR).unwrap();
    let gradient = GradientFn::builder(&module, "rosenbrock").wrt(["x"]).build().unwrap();
    let x0 = vec![0.0; 100];
    let objective = jitdiff::optim::Objective::new(&gradient, jitdiff::args![&x0]).unwrap();
    let points = [vec![0.5; 100], vec![1.5; 100]];
    let mut grad = vec![0.0; 100];
    let mut k = 0;
    let count = allocations(|| {
        k += 1;
        objective.value_and_grad(&points[k % 2], &mut grad).unwrap();
    });
    assert_eq!(count, 0);
    assert_eq!(objective.evaluations(), CALLS as u64 + 1, "every call was at a new point");
}

#[test]
fn hand_written_gradients_with_reused_scratch_allocate_nothing() {
    use jitdiff_problems::{gmm, mlp, pendulum};
    let mut scratch = Vec::new();
    let g = Gmm::generate(2, 5, 50, 1);
    let mut grad = vec![0.0; g.gradient_len()];
    let count = allocations(|| {
        gmm::gmm_gradient(g.d, &g.alphas, &g.means, &g.icf, &g.x, g.wishart, &mut grad, &mut scratch);
    });
    assert_eq!(count, 0, "gmm");
    let p = Pendulum::with_steps(100);
    let mut grad = [0.0; 3];
    let count = allocations(|| {
        pendulum::pendulum_gradient(&p.params, p.theta0, p.omega0, p.dt, p.steps, &mut grad, &mut scratch);
    });
    assert_eq!(count, 0, "pendulum");
    let m = Mlp::generate(8, 16, 16, 2);
    let mut grad = vec![0.0; m.gradient_len()];
    let count = allocations(|| {
        mlp::mlp_gradient(&m.w1, &m.b1, &m.w2, m.b2, &m.x, &m.y, &mut grad, &mut scratch);
    });
    assert_eq!(count, 0, "mlp");
}
