//! L2-regularised logistic regression: the mean of `ln(1 + exp(-y_i w·x_i))` over `n` samples
//! of `d` features (labels ±1), plus `lambda/2 |w|^2`, with the loss evaluated stably.

/// `ln(1 + e^m)` without overflow for large `m`.
fn softplus(m: f64) -> f64 {
    if m > 0.0 { m + (-m).exp().ln_1p() } else { m.exp().ln_1p() }
}

/// The loss; `x` is `n x d`, row-major.
pub fn logistic(w: &[f64], x: &[f64], y: &[f64], n: usize, d: usize, lambda: f64) -> f64 {
    let mut loss = 0.0;
    for i in 0..n {
        let mut z = 0.0;
        for j in 0..d {
            z += w[j] * x[i * d + j];
        }
        loss += softplus(-y[i] * z);
    }
    let regulariser: f64 = w.iter().map(|v| v * v).sum();
    loss / n as f64 + 0.5 * lambda * regulariser
}
