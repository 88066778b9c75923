//! Data-parallel objectives: a `SampleSum` of per-sample MLP losses equals the batch loss and its
//! hand-written gradient, gives the same result on 1, 2 and 3 threads, feeds argmin, and rejects
//! bad setups with typed errors.

use jitdiff::ir::parse_module;
use jitdiff::parallel::SampleSum;
use jitdiff::{Arg, Error, GradientFn};
use jitdiff_problems::mlp::{Mlp, mlp_gradient};
use jitdiff_problems::relative_error;

const MLP_SAMPLE_IR: &str = include_str!("../../examples/ir/mlp_sample.ir");

/// The MLP instance's weights as one vector and its data as `[x | y]` samples.
fn flatten(m: &Mlp) -> (Vec<f64>, Vec<f64>) {
    let theta = [&m.w1[..], &m.b1, &m.w2, &[m.b2]].concat();
    let data = m.x.chunks_exact(m.inputs).zip(&m.y).flat_map(|(x, &y)| x.iter().copied().chain([y])).collect();
    (theta, data)
}

/// The per-sample loss, differentiated with respect to the weights.
fn sample_loss() -> GradientFn {
    let module = parse_module(MLP_SAMPLE_IR).unwrap();
    GradientFn::builder(&module, "mlp_sample").wrt(["theta"]).build().unwrap()
}

fn sample_sum<'a>(f: &'a GradientFn, m: &Mlp, data: &'a [f64], threads: usize) -> SampleSum<'a> {
    let dim = flatten(m).0.len();
    SampleSum::new(f, dim, data, m.inputs + 1, vec![]).unwrap().with_threads(threads).unwrap()
}

#[test]
fn the_sum_is_the_batch_loss_with_its_gradient_on_any_number_of_threads() {
    let m = Mlp::generate(8, 16, 101, 5); // 101 samples: blocks of unequal size
    let (theta, data) = flatten(&m);
    let f = sample_loss();
    let batch = m.batch as f64;
    let mut want = vec![0.0; theta.len()];
    let want_value = batch * mlp_gradient(&m.w1, &m.b1, &m.w2, m.b2, &m.x, &m.y, &mut want, &mut Vec::new());
    for threads in [1, 2, 3] {
        let sum = sample_sum(&f, &m, &data, threads);
        assert_eq!(sum.samples(), 101);
        let mut grad = vec![f64::NAN; theta.len()];
        // Twice: the second call reuses the workers and must overwrite, not accumulate.
        for _ in 0..2 {
            let value = sum.value_and_grad(&theta, &mut grad).unwrap();
            assert!(relative_error(value, want_value) < 1e-12, "{threads} threads: {value} vs {want_value}");
            for (i, (g, w)) in grad.iter().zip(&want).enumerate() {
                assert!(relative_error(*g, batch * w) < 1e-9, "{threads} threads, entry {i}: {g} vs {}", batch * w);
            }
        }
    }
}

#[test]
fn fewer_samples_than_threads_and_the_callers_pool() {
    let m = Mlp::generate(3, 4, 2, 9);
    let (theta, data) = flatten(&m);
    let f = sample_loss();
    let sum = SampleSum::new(&f, theta.len(), &data, 4, vec![]).unwrap();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
    let mut grad = vec![0.0; theta.len()];
    let value = pool.install(|| sum.value_and_grad(&theta, &mut grad)).unwrap();
    let mut want = vec![0.0; theta.len()];
    let mean = mlp_gradient(&m.w1, &m.b1, &m.w2, m.b2, &m.x, &m.y, &mut want, &mut Vec::new());
    assert!(relative_error(value, 2.0 * mean) < 1e-12);
    assert!(grad.iter().zip(&want).all(|(g, w)| relative_error(*g, 2.0 * w) < 1e-9));
}

#[test]
fn fixed_arguments_follow_the_sample() {
    // f(θ, sample, scale) = scale (θ0 - sample0)^2
    let module = parse_module(
        "func @f(theta: slice, sample: slice, scale: f64) -> f64 {
entry:
    zero = iconst 0
    t = load theta, zero
    s = load sample, zero
    d = fsub t, s
    sq = fmul d, d
    r = fmul scale, sq
    ret r
}",
    )
    .unwrap();
    let f = GradientFn::builder(&module, "f").wrt(["theta"]).build().unwrap();
    let data = [1.0, 2.0, 4.0];
    let sum = SampleSum::new(&f, 1, &data, 1, vec![Arg::F64(3.0)]).unwrap();
    let mut grad = [0.0];
    let value = sum.value_and_grad(&[0.0], &mut grad).unwrap();
    assert_eq!(value, 3.0 * (1.0 + 4.0 + 16.0));
    assert_eq!(grad, [3.0 * -2.0 * (1.0 + 2.0 + 4.0)]);
}

#[cfg(feature = "argmin")]
#[test]
fn a_sample_sum_is_an_argmin_objective() {
    use jitdiff::optim::Objective;
    use jitdiff::optim::argmin::core::Executor;
    use jitdiff::optim::argmin::solver::{linesearch::MoreThuenteLineSearch, quasinewton::LBFGS};
    let m = Mlp::generate(4, 8, 64, 3);
    let (theta, data) = flatten(&m);
    let f = sample_loss();
    let objective = Objective::from(sample_sum(&f, &m, &data, 2));
    let solver = LBFGS::new(MoreThuenteLineSearch::new(), 7);
    let result = Executor::new(objective, solver).configure(|s| s.param(theta.clone()).max_iters(50)).run().unwrap();
    let start = 64.0 * m.loss();
    let best = result.state().get_best_cost();
    assert!(best < 0.2 * start, "training loss {start} -> {best}");
}

#[test]
fn bad_setups_and_calls_are_errors_in_the_users_terms() {
    let f = sample_loss();
    let err = SampleSum::new(&f, 3, &[1.0; 7], 2, vec![]).err().unwrap();
    assert!(matches!(err, Error::Data { len: 7, sample_len: 2 }), "{err}");
    assert!(err.to_string().contains("whole number of samples"), "{err}");
    let err = SampleSum::new(&f, 3, &[], 2, vec![]).err().unwrap();
    assert!(matches!(err, Error::Data { .. }), "{err}");
    let err = SampleSum::new(&f, 3, &[1.0; 4], 2, vec![Arg::F64(1.0)]).err().unwrap();
    assert!(err.to_string().contains("it has 2 parameters") && err.to_string().contains("@mlp_sample"), "{err}");
    let module = parse_module(MLP_SAMPLE_IR).unwrap();
    let by_sample = GradientFn::builder(&module, "mlp_sample").wrt(["theta", "sample"]).build().unwrap();
    let err = SampleSum::new(&by_sample, 3, &[1.0; 4], 2, vec![]).err().unwrap();
    assert!(err.to_string().contains("other parameters"), "{err}");

    // One input, one hidden unit: W1, b1, w2 and b2 are one value each.
    let data = [0.5, 1.0];
    let sum = SampleSum::new(&f, 4, &data, 2, vec![]).unwrap();
    let err = sum.value_and_grad(&[0.0; 3], &mut [0.0; 4]).unwrap_err();
    assert!(matches!(err, Error::BufferLength { expected: 4, got: 3, .. }), "{err}");
    assert!(err.to_string().contains("@mlp_sample"), "{err}");
    let err = sum.value_and_grad(&[0.0; 4], &mut [0.0; 5]).unwrap_err();
    assert!(matches!(err, Error::BufferLength { expected: 4, got: 5, .. }), "{err}");
    assert!(sum.value_and_grad(&[0.1; 4], &mut [0.0; 4]).is_ok());
}
