//! Data-parallel objective benchmark (criterion): `SampleSum::value_and_grad` of the per-sample
//! MLP loss (`examples/ir/mlp_sample.ir`, 32 → 64 → 1, 4,096 samples) on a dedicated rayon pool
//! of 1 and of 2 threads. The speedup is `jitdiff_threads_1` / `jitdiff_threads_2` (this machine
//! has 2 cores). As a control for what the machine gives at the moment (other processes share
//! the cores), `hand_written_threads_N` splits the same samples the same way over the hand-written
//! batch gradient `mlp_gradient`.

use criterion::{Criterion, criterion_group, criterion_main};
use jitdiff::GradientFn;
use jitdiff::ir::parse_module;
use jitdiff::parallel::SampleSum;
use jitdiff_problems::Mlp;
use jitdiff_problems::mlp::mlp_gradient;
use rayon::prelude::*;
use std::hint::black_box;

const MLP_SAMPLE_IR: &str = include_str!("../examples/ir/mlp_sample.ir");

fn parallel(c: &mut Criterion) {
    let m = Mlp::generate(32, 64, 4096, 1);
    let theta = [&m.w1[..], &m.b1, &m.w2, &[m.b2]].concat();
    let data: Vec<f64> =
        m.x.chunks_exact(m.inputs).zip(&m.y).flat_map(|(x, &y)| x.iter().copied().chain([y])).collect();
    let module = parse_module(MLP_SAMPLE_IR).unwrap();
    let sample_loss = GradientFn::builder(&module, "mlp_sample").wrt([0]).build().unwrap();
    let mut group = c.benchmark_group("sample_sum_mlp_4096");
    group.sample_size(20);
    for threads in [1, 2] {
        let sum = SampleSum::new(&sample_loss, theta.len(), &data, m.inputs + 1, vec![])
            .unwrap()
            .with_threads(threads)
            .unwrap();
        let mut grad = vec![0.0; theta.len()];
        group.bench_function(format!("jitdiff_threads_{threads}"), |b| {
            b.iter(|| sum.value_and_grad(black_box(&theta), &mut grad).unwrap())
        });
    }
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let per = m.batch / threads;
        let mut partial = vec![(vec![0.0; theta.len()], Vec::new()); threads];
        group.bench_function(format!("hand_written_threads_{threads}"), |b| {
            b.iter(|| {
                pool.install(|| {
                    partial.par_iter_mut().enumerate().for_each(|(t, (grad, scratch))| {
                        let (x, y) = (&m.x[t * per * m.inputs..(t + 1) * per * m.inputs], &m.y[t * per..(t + 1) * per]);
                        black_box(mlp_gradient(&m.w1, &m.b1, &m.w2, m.b2, x, y, grad, scratch));
                    })
                })
            })
        });
    }
    group.finish();
}

criterion_group!(benches, parallel);
criterion_main!(benches);
