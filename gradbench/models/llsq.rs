// GradBench `llsq`: linear least squares with a sign-function target,
// 1/2 Σ_i (s(t_i) - Σ_j x_j t_i^j)², t_i = -1 + 2 i / (n - 1).
fn llsq(x: &[f64], n: usize) -> f64 {
    let m = x.len();
    let mut sum = 0.0;
    for i in 0..n {
        let ti = -1.0 + i as f64 * 2.0 / (n as f64 - 1.0);
        let mut inner = if ti > 0.0 {
            1.0
        } else if ti < 0.0 {
            -1.0
        } else {
            0.0
        };
        let mut mul = 1.0;
        for j in 0..m {
            inner -= x[j] * mul;
            mul *= ti;
        }
        sum += inner * inner;
    }
    sum / 2.0
}
