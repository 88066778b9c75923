// GradBench `lse`: log Σ exp(x_i), shifted by the maximum.
fn lse(x: &[f64]) -> f64 {
    let n = x.len();
    let mut a = x[0];
    for i in 1..n {
        if x[i] > a {
            a = x[i];
        }
    }
    let mut s = 0.0;
    for i in 0..n {
        s += (x[i] - a).exp();
    }
    s.ln() + a
}
