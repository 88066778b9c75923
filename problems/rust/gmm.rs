//! ADBench's Gaussian mixture model objective with a Wishart prior, the computation of
//! `examples/ir/gmm.ir` in the same operation order. The IR allocates its two work arrays
//! (`exp(q)` per component, and `Q (x - mu)`); here the caller passes them (`q_diags`: `K d`
//! entries, `y`: `d` entries), since local arrays of the subset have constant lengths.
//!
//! Layout (flat, row-major): `alphas` K, `means` K x d, `icf` K x d(d+1)/2 (per component the d
//! logs of the diagonal of Q, then its strictly lower triangle column by column), `x` n x d.

// Index loops, as the IR's loops are written.
#![allow(clippy::needless_range_loop)]

/// The objective. `log_gamma_term` is `ln Gamma_d((d + m + 1) / 2)`, computed by the caller.
#[allow(clippy::too_many_arguments)]
pub fn gmm(
    alphas: &[f64],
    means: &[f64],
    icf: &[f64],
    x: &[f64],
    d: usize,
    wishart_gamma: f64,
    wishart_m: i64,
    log_gamma_term: f64,
    q_diags: &mut [f64],
    y: &mut [f64],
) -> f64 {
    let k = alphas.len();
    let n = x.len() / d;
    let icf_size = d * (d + 1) / 2;
    for c in 0..k {
        for j in 0..d {
            q_diags[c * d + j] = icf[c * icf_size + j].exp();
        }
    }

    // Sum over points of the log-sum-exp over components, in one pass: keep the running maximum
    // and the sum of exp(term - max), rescaled when a larger term arrives.
    let mut slse = 0.0;
    for p in 0..n {
        let mut run_max = main_term(alphas, means, icf, x, q_diags, y, p, 0, d);
        let mut run_sum = 1.0;
        for c in 1..k {
            let term = main_term(alphas, means, icf, x, q_diags, y, p, c, d);
            if term > run_max {
                run_sum = run_sum * (run_max - term).exp() + 1.0;
                run_max = term;
            } else {
                run_sum += (term - run_max).exp();
            }
        }
        slse += run_sum.ln() + run_max;
    }

    // logsumexp(alphas), two passes.
    let mut alpha_max = alphas[0];
    for a in 1..k {
        alpha_max = alpha_max.max(alphas[a]);
    }
    let mut alpha_sum = 0.0;
    for a in 0..k {
        alpha_sum += (alphas[a] - alpha_max).exp();
    }
    let lse_alphas = alpha_sum.ln() + alpha_max;

    // The Wishart prior: sum_k 1/2 gamma^2 ||Q_k||_F^2 - m sum(q_k), minus K C.
    let mut prior = 0.0;
    for c in 0..k {
        let base = c * icf_size;
        let mut diag_sq = 0.0;
        let mut sum_q = 0.0;
        for j in 0..d {
            let q = icf[base + j];
            let q_diag = q.exp();
            diag_sq += q_diag * q_diag;
            sum_q += q;
        }
        let mut ltri_sq = 0.0;
        for l in base + d..base + icf_size {
            ltri_sq += icf[l] * icf[l];
        }
        let frobenius = diag_sq + ltri_sq;
        prior = prior + 0.5 * wishart_gamma * wishart_gamma * frobenius - wishart_m as f64 * sum_q;
    }
    let wishart_n = d as i64 + wishart_m + 1;
    let prior_const = (wishart_n * d as i64) as f64 * (wishart_gamma.ln() - 0.5 * 2.0f64.ln()) - log_gamma_term;
    let log_wishart_prior = prior - k as f64 * prior_const;

    let normal_const = -((n * d) as i64) as f64 * 0.5 * std::f64::consts::TAU.ln();
    let likelihood = normal_const + slse - n as f64 * lse_alphas;
    likelihood + log_wishart_prior
}

/// `alphas[c] + sum(q_c) - 1/2 |Q_c (x_p - mu_c)|^2`, forming `Q_c (x_p - mu_c)` in `y`: first
/// the diagonal, then column `i` of the strictly lower triangle adds `L[r, i] xc_i` to `y[r]`.
#[allow(clippy::too_many_arguments)]
fn main_term(
    alphas: &[f64],
    means: &[f64],
    icf: &[f64],
    x: &[f64],
    q_diags: &[f64],
    y: &mut [f64],
    p: usize,
    c: usize,
    d: usize,
) -> f64 {
    let icf_size = d * (d + 1) / 2;
    let q_base = c * icf_size;
    let x_base = p * d;
    let mu_base = c * d;
    let mut sum_q = 0.0;
    for j in 0..d {
        sum_q += icf[q_base + j];
        let centered = x[x_base + j] - means[mu_base + j];
        y[j] = q_diags[mu_base + j] * centered;
    }
    // Column i holds rows i+1 .. d and starts at `column`.
    let mut column = q_base + d;
    for i in 0..d {
        let centered = x[x_base + i] - means[mu_base + i];
        for r in i + 1..d {
            y[r] += icf[column + r - (i + 1)] * centered;
        }
        column += d - 1 - i;
    }
    let mut mahal_sq = 0.0;
    for s in 0..d {
        mahal_sq += y[s] * y[s];
    }
    alphas[c] + sum_q - 0.5 * mahal_sq
}
