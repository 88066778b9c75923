//! Local arrays: `[x; N]`, `[a, b]` and `vec![...]` (a run-time length at the top of the
//! function), filled, written and passed to calls.

use crate::dual;
use crate::support::{Rng, lower};
use jitdiff_ir::{ArgValue, RuntimeValue};

dual! { VECTORS:
    fn scale_into(factor: f64, x: &[f64], out: &mut [f64]) {
        for i in 0..x.len() {
            out[i] = factor * x[i];
        }
    }
    fn with_vectors(x: &[f64], k: usize) -> f64 {
        let n = x.len();
        let mut work = vec![0.0; n * k + 1];
        let scratch = vec![0.0; k];
        // A fill other than `0.0` is a loop: the last run-time length must come before it.
        let signs = vec![-0.0; n];
        let filled = vec![2.5; 10];
        let pair = vec![x[0], 3.0];
        let fixed = vec![1.5; 3];
        scale_into(pair[1], x, &mut work);
        let mut total = pair[0] + work.len() as f64 + fixed[2] + scratch[k - 1];
        for i in 0..n {
            // `1 / -0.0` is `-inf`: the fill wrote negative zeros over `alloc`'s positive ones.
            total += work[i] + filled[i] + (1.0f64 / signs[i]).max(-1.0);
            let again = vec![0.5; 2];
            total += again[1];
        }
        total + work[n * k] + filled[n]
    }
}

#[test]
fn vectors_of_run_time_length_are_local_arrays() {
    let m = lower(VECTORS);
    let text = jitdiff_ir::print_module(&m);
    assert!(text.contains("alloc"), "{text}");
    let mut rng = Rng::new(17);
    for (n, k) in [(1usize, 1usize), (3, 2), (9, 1), (5, 4)] {
        let x = rng.normals(n);
        let want = with_vectors(&x, k);
        let mut args = [ArgValue::Slice(x), ArgValue::I64(k as i64)];
        let got = crate::support::run(&m, "with_vectors", &mut args);
        assert_eq!(got, vec![RuntimeValue::F64(want)], "n = {n}, k = {k}");
    }
}
