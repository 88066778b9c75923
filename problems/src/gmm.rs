//! ADBench's Gaussian mixture model objective with a Wishart prior (`gmm_objective` of
//! ADBench's `src/cpp/shared/gmm.h`, Srajer et al. 2018), including its constants.
//!
//! Layout (flat, row-major as in ADBench): `alphas` K, `means` K×d, `icf` K×d(d+1)/2 (per
//! component first the d logs of the diagonal of the inverse Cholesky factor Q, then its strictly
//! lower triangle column by column), `x` n×d.

use super::{Problem, SplitMix64};
use jitdiff_ir::ArgValue;

/// The IR text of `@gmm(alphas, means, icf, x: slice, d: i64, wishart_gamma: f64,
/// wishart_m: i64, log_gamma_term: f64) -> f64` and its helper `@main_term`
/// (`examples/ir/gmm.ir`).
pub const GMM_IR: &str = include_str!("../../examples/ir/gmm.ir");

/// The entry function of [`GMM_IR`].
pub const ENTRY: &str = "gmm";

/// The seed [`Gmm`] instances of [`super::standard_problems`] are generated from.
pub const DEFAULT_SEED: u64 = 0x6a69_7464_6966_6601;

/// The Wishart prior's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Wishart {
    /// The scale γ.
    pub gamma: f64,
    /// The extra degrees of freedom m (N = d + m + 1).
    pub m: i64,
}

/// `ln Γ(x)` for `x > 0` (Lanczos approximation, g = 7, 9 terms; relative error ~1e-15), with the
/// reflection formula below 1/2. Rust's `f64::ln_gamma` is not stable.
///
/// ```
/// use jitdiff_problems::gmm::ln_gamma;
/// assert!((ln_gamma(5.0) - 24f64.ln()).abs() < 1e-13);
/// ```
pub fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const COEFFS: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin().abs()).ln() - ln_gamma(1.0 - x);
    }
    let z = x - 1.0;
    let series = COEFFS[1..].iter().enumerate().fold(COEFFS[0], |acc, (i, c)| acc + c / (z + (i + 1) as f64));
    let t = z + G + 0.5;
    0.5 * std::f64::consts::TAU.ln() + (z + 0.5) * t.ln() - t + series.ln()
}

/// ADBench's `log_gamma_distrib(a, p)`: the log of the multivariate gamma function,
/// `p(p-1)/4 ln π + sum_{j=1}^{p} ln Γ(a + (1 - j)/2)`.
pub fn log_gamma_distrib(a: f64, p: usize) -> f64 {
    let p_float = p as f64;
    (1..=p).fold(0.25 * p_float * (p_float - 1.0) * std::f64::consts::PI.ln(), |acc, j| {
        acc + ln_gamma(a + 0.5 * (1.0 - j as f64))
    })
}

/// The constant the IR takes as `log_gamma_term`: `log_gamma_distrib((d + m + 1) / 2, d)`.
pub fn log_gamma_term(d: usize, wishart: Wishart) -> f64 {
    log_gamma_distrib(0.5 * (d as i64 + wishart.m + 1) as f64, d)
}

/// Numerically stable `ln sum_i exp(v_i)` of a non-empty slice (two passes: max, then sum).
pub fn logsumexp(v: &[f64]) -> f64 {
    let max = v[1..].iter().fold(v[0], |m, &x| if m > x { m } else { x });
    v.iter().fold(0.0, |acc, &x| acc + (x - max).exp()).ln() + max
}

/// The reference primal: ADBench's GMM objective for `d`-dimensional data.
///
/// `K = alphas.len()`, `n = x.len() / d`. Requires `d >= 1` and `K >= 1`, `means.len() == K d`,
/// `icf.len() == K d(d+1)/2`. Precomputes `exp(q)` per component (as the IR does, in a local
/// array) and forms `Q (x - mu)` column by column as ADBench does (the IR: row by row); the sums
/// run in the same order as the IR's, only the log-sum-exp over components differs (two-pass
/// here, one-pass in the IR).
pub fn gmm_objective(d: usize, alphas: &[f64], means: &[f64], icf: &[f64], x: &[f64], wishart: Wishart) -> f64 {
    let k = alphas.len();
    let n = x.len() / d;
    let icf_size = d * (d + 1) / 2;

    let mut q_diags = vec![0.0; k * d];
    let mut sum_qs = vec![0.0; k];
    for c in 0..k {
        let q = &icf[c * icf_size..c * icf_size + d];
        sum_qs[c] = q.iter().fold(0.0, |acc, &v| acc + v);
        for (diag, &v) in q_diags[c * d..(c + 1) * d].iter_mut().zip(q) {
            *diag = v.exp();
        }
    }

    let mut centered = vec![0.0; d];
    let mut q_centered = vec![0.0; d];
    let mut main_terms = vec![0.0; k];
    let mut slse = 0.0;
    for point in x.chunks_exact(d).take(n) {
        for (c, main_term) in main_terms.iter_mut().enumerate() {
            let mean = &means[c * d..(c + 1) * d];
            let q_diag = &q_diags[c * d..(c + 1) * d];
            let ltri = &icf[c * icf_size + d..(c + 1) * icf_size];
            for j in 0..d {
                centered[j] = point[j] - mean[j];
                q_centered[j] = q_diag[j] * centered[j];
            }
            // Column i of the strict lower triangle holds rows i+1 .. d.
            let mut columns = ltri;
            for (i, &centered_i) in centered.iter().enumerate() {
                let (column, rest) = columns.split_at(d - 1 - i);
                for (out, &l) in q_centered[i + 1..].iter_mut().zip(column) {
                    *out += l * centered_i;
                }
                columns = rest;
            }
            let mahal_sq = q_centered.iter().fold(0.0, |acc, &v| acc + v * v);
            *main_term = alphas[c] + sum_qs[c] - 0.5 * mahal_sq;
        }
        slse += logsumexp(&main_terms);
    }

    let constant = -((n * d) as f64) * 0.5 * std::f64::consts::TAU.ln();
    let likelihood = constant + slse - n as f64 * logsumexp(alphas);
    likelihood + log_wishart_prior(d, &q_diags, &sum_qs, icf, wishart)
}

/// ADBench's `log_wishart_prior`: `sum_k (γ²/2 ||Q_k||_F² - m sum(q_k)) - K C` with
/// `C = N d (ln γ - ln 2 / 2) - log_gamma_distrib(N/2, d)`, `N = d + m + 1`.
fn log_wishart_prior(d: usize, q_diags: &[f64], sum_qs: &[f64], icf: &[f64], wishart: Wishart) -> f64 {
    let k = sum_qs.len();
    let icf_size = d * (d + 1) / 2;
    let wishart_n = d as i64 + wishart.m + 1;
    let c = (wishart_n * d as i64) as f64 * (wishart.gamma.ln() - 0.5 * 2f64.ln()) - log_gamma_term(d, wishart);
    let square_sum = |v: &[f64]| v.iter().fold(0.0, |acc, &x| acc + x * x);
    let mut out = 0.0;
    for comp in 0..k {
        let frobenius = square_sum(&q_diags[comp * d..(comp + 1) * d])
            + square_sum(&icf[comp * icf_size + d..(comp + 1) * icf_size]);
        out = out + 0.5 * wishart.gamma * wishart.gamma * frobenius - wishart.m as f64 * sum_qs[comp];
    }
    out - k as f64 * c
}

/// The hand-written analytic gradient of [`gmm_objective`] (the benchmarks' baseline), in the
/// manner of ADBench's manual reverse pass: per point, one forward sweep over the components
/// keeps `x - mu_k` and `Q_k (x - mu_k)` for every component, then the softmax weights of the
/// main terms scatter the per-component partials into the gradient.
///
/// `grad` (overwritten) is laid out as `[alphas (K) | means (K d) | icf (K d(d+1)/2)]`, the flat
/// layout of `GradientFn::value_and_grad` for parameters 0, 1 and 2 of `@gmm`. `scratch` is
/// resized as needed and can be reused between calls so that they do not allocate. Returns the
/// objective. Same requirements as [`gmm_objective`]; `grad.len()` must be
/// `K (1 + d + d(d+1)/2)`.
///
/// ```
/// use jitdiff_problems::gmm::{Gmm, gmm_gradient};
/// let g = Gmm::generate(2, 3, 10, 7);
/// let mut grad = vec![0.0; 3 * (1 + 2 + 3)];
/// let value = gmm_gradient(g.d, &g.alphas, &g.means, &g.icf, &g.x, g.wishart, &mut grad, &mut Vec::new());
/// assert!((value - g.objective()).abs() < 1e-9 * value.abs());
/// ```
#[allow(clippy::too_many_arguments)] // the objective's own parameters, plus the two buffers
pub fn gmm_gradient(
    d: usize,
    alphas: &[f64],
    means: &[f64],
    icf: &[f64],
    x: &[f64],
    wishart: Wishart,
    grad: &mut [f64],
    scratch: &mut Vec<f64>,
) -> f64 {
    let k = alphas.len();
    let n = x.len() / d;
    let icf_size = d * (d + 1) / 2;
    grad.fill(0.0);
    let (d_alphas, rest) = grad.split_at_mut(k);
    let (d_means, d_icf) = rest.split_at_mut(k * d);

    // Scratch: exp(q) and sum(q) per component; per point, x - mu_k, Q_k (x - mu_k) and the main
    // term of every component.
    scratch.clear();
    scratch.resize(k * d + k + 2 * k * d + k, 0.0);
    let (q_diags, rest) = scratch.split_at_mut(k * d);
    let (sum_qs, rest) = rest.split_at_mut(k);
    let (centered, rest) = rest.split_at_mut(k * d);
    let (q_centered, main_terms) = rest.split_at_mut(k * d);
    for c in 0..k {
        let q = &icf[c * icf_size..c * icf_size + d];
        sum_qs[c] = q.iter().sum();
        for (diag, &v) in q_diags[c * d..(c + 1) * d].iter_mut().zip(q) {
            *diag = v.exp();
        }
    }

    let mut slse = 0.0;
    for point in x.chunks_exact(d).take(n) {
        for c in 0..k {
            let mean = &means[c * d..(c + 1) * d];
            let q_diag = &q_diags[c * d..(c + 1) * d];
            let ltri = &icf[c * icf_size + d..(c + 1) * icf_size];
            let xc = &mut centered[c * d..(c + 1) * d];
            let y = &mut q_centered[c * d..(c + 1) * d];
            for j in 0..d {
                xc[j] = point[j] - mean[j];
                y[j] = q_diag[j] * xc[j];
            }
            // Column i of the strict lower triangle holds rows i+1 .. d.
            let mut columns = ltri;
            for i in 0..d {
                let (column, rest) = columns.split_at(d - 1 - i);
                for (out, &l) in y[i + 1..].iter_mut().zip(column) {
                    *out += l * xc[i];
                }
                columns = rest;
            }
            let mahal_sq: f64 = y.iter().map(|v| v * v).sum();
            main_terms[c] = alphas[c] + sum_qs[c] - 0.5 * mahal_sq;
        }
        let lse = logsumexp(main_terms);
        slse += lse;
        // Reverse: d lse / d main_term_c = softmax weight w_c; main_term_c = alpha_c + sum(q_c)
        // - |y|^2 / 2 with y = Q_c (x - mu_c).
        for c in 0..k {
            let w = (main_terms[c] - lse).exp();
            d_alphas[c] += w;
            let xc = &centered[c * d..(c + 1) * d];
            let y = &q_centered[c * d..(c + 1) * d];
            let q_diag = &q_diags[c * d..(c + 1) * d];
            let ltri = &icf[c * icf_size + d..(c + 1) * icf_size];
            let (d_q, d_ltri) = d_icf[c * icf_size..(c + 1) * icf_size].split_at_mut(d);
            let d_mean = &mut d_means[c * d..(c + 1) * d];
            let mut columns = ltri;
            let mut d_columns = d_ltri;
            for i in 0..d {
                // y_j = e^{q_j} xc_j + sum_{i<j} L_ji xc_i; dmu_i = w (Q^T y)_i.
                let y_diag = y[i] * q_diag[i];
                d_q[i] += w * (1.0 - y_diag * xc[i]);
                let (column, rest) = columns.split_at(d - 1 - i);
                let (d_column, d_rest) = std::mem::take(&mut d_columns).split_at_mut(d - 1 - i);
                let mut qty = y_diag;
                let w_xc = w * xc[i];
                for ((dl, &l), &yj) in d_column.iter_mut().zip(column).zip(&y[i + 1..]) {
                    qty += l * yj;
                    *dl -= w_xc * yj;
                }
                d_mean[i] += w * qty;
                columns = rest;
                d_columns = d_rest;
            }
        }
    }

    // -n logsumexp(alphas)
    let lse_alphas = logsumexp(alphas);
    for (da, &a) in d_alphas.iter_mut().zip(alphas) {
        *da -= n as f64 * (a - lse_alphas).exp();
    }
    // The prior: gamma^2/2 (|exp q|^2 + |L|^2) - m sum(q) per component.
    let gamma_sq = wishart.gamma * wishart.gamma;
    for c in 0..k {
        let (d_q, d_ltri) = d_icf[c * icf_size..(c + 1) * icf_size].split_at_mut(d);
        for (dq, &e) in d_q.iter_mut().zip(&q_diags[c * d..(c + 1) * d]) {
            *dq += gamma_sq * e * e - wishart.m as f64;
        }
        for (dl, &l) in d_ltri.iter_mut().zip(&icf[c * icf_size + d..(c + 1) * icf_size]) {
            *dl += gamma_sq * l;
        }
    }

    let constant = -((n * d) as f64) * 0.5 * std::f64::consts::TAU.ln();
    let likelihood = constant + slse - n as f64 * lse_alphas;
    likelihood + log_wishart_prior(d, q_diags, sum_qs, icf, wishart)
}

/// A GMM instance: parameters, data and prior.
#[derive(Clone, Debug, PartialEq)]
pub struct Gmm {
    /// Dimension of the data.
    pub d: usize,
    /// Number of mixture components.
    pub k: usize,
    /// Number of data points.
    pub n: usize,
    /// K unnormalised log mixture weights.
    pub alphas: Vec<f64>,
    /// K×d component means.
    pub means: Vec<f64>,
    /// K×d(d+1)/2 inverse covariance factors (log diagonal, then strict lower triangle by column).
    pub icf: Vec<f64>,
    /// n×d data points.
    pub x: Vec<f64>,
    /// The Wishart prior.
    pub wishart: Wishart,
}

impl Gmm {
    /// The (d, K, n) sizes of the benchmarks (ADBench's).
    pub const STANDARD_SIZES: [(usize, usize, usize); 3] = [(2, 5, 1000), (10, 25, 1000), (20, 50, 10_000)];

    /// Deterministic pseudo-random data in the manner of ADBench's generator: alphas, icf and x
    /// standard normal, means uniform in [0, 1), Wishart γ = 1, m = 0.
    pub fn generate(d: usize, k: usize, n: usize, seed: u64) -> Gmm {
        let mut rng = SplitMix64::new(seed);
        let alphas = rng.normals(k);
        let means = (0..k * d).map(|_| rng.uniform()).collect();
        let icf = rng.normals(k * d * (d + 1) / 2);
        let x = rng.normals(n * d);
        Gmm { d, k, n, alphas, means, icf, x, wishart: Wishart { gamma: 1.0, m: 0 } }
    }

    /// The reference objective of this instance ([`gmm_objective`]).
    pub fn objective(&self) -> f64 {
        gmm_objective(self.d, &self.alphas, &self.means, &self.icf, &self.x, self.wishart)
    }
}

impl Problem for Gmm {
    fn label(&self) -> String {
        format!("gmm d={} K={} n={}", self.d, self.k, self.n)
    }
    fn ir(&self) -> &'static str {
        GMM_IR
    }
    fn entry(&self) -> &'static str {
        ENTRY
    }
    /// alphas, means and icf.
    fn active_params(&self) -> &'static [usize] {
        &[0, 1, 2]
    }
    fn args(&self) -> Vec<ArgValue> {
        vec![
            ArgValue::Slice(self.alphas.clone()),
            ArgValue::Slice(self.means.clone()),
            ArgValue::Slice(self.icf.clone()),
            ArgValue::Slice(self.x.clone()),
            ArgValue::I64(self.d as i64),
            ArgValue::F64(self.wishart.gamma),
            ArgValue::I64(self.wishart.m),
            ArgValue::F64(log_gamma_term(self.d, self.wishart)),
        ]
    }
    fn reference(&self) -> f64 {
        self.objective()
    }
    fn hand_value_and_grad(&self, grad: &mut [f64]) -> Option<f64> {
        let g = self;
        Some(gmm_gradient(g.d, &g.alphas, &g.means, &g.icf, &g.x, g.wishart, grad, &mut Vec::new()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f64::consts::PI;

    #[test]
    fn ln_gamma_matches_factorials_and_half_integers() {
        let mut factorial = 1.0f64;
        for n in 1..30 {
            // Γ(n) = (n-1)!
            assert!((ln_gamma(n as f64) - factorial.ln()).abs() <= 1e-13 * factorial.ln().abs().max(1.0), "n={n}");
            factorial *= n as f64;
        }
        assert!((ln_gamma(0.5) - 0.5 * PI.ln()).abs() < 1e-14);
        // Γ(7/2) = 15/8 √π
        assert!((ln_gamma(3.5) - (15.0 / 8.0 * PI.sqrt()).ln()).abs() < 1e-14);
        // reflection branch: Γ(1/4) Γ(3/4) = π √2
        assert!((ln_gamma(0.25) + ln_gamma(0.75) - (PI * 2f64.sqrt()).ln()).abs() < 1e-13);
    }

    #[test]
    fn logsumexp_is_stable_and_exact_on_equal_terms() {
        assert!((logsumexp(&[1000.0, 1000.0]) - (1000.0 + 2f64.ln())).abs() < 1e-12);
        assert!((logsumexp(&[0.0, 3f64.ln()]) - 4f64.ln()).abs() < 1e-15);
    }

    #[test]
    fn one_isotropic_component_is_a_standard_normal_log_density() {
        // d = 1, K = 1, q = 0 (Q = 1), mean 0: sum_i ln N(x_i; 0, 1) plus the prior.
        let x = [0.3, -1.2, 2.0];
        let wishart = Wishart { gamma: 1.0, m: 0 };
        let value = gmm_objective(1, &[0.7], &[0.0], &[0.0], &x, wishart);
        let log_density: f64 = x.iter().map(|v| -0.5 * v * v - 0.5 * (2.0 * PI).ln()).sum();
        // prior with Q = 1: γ²/2 - C, C = 2 (0 - ln2 / 2) - ln Γ(1)
        let prior = 0.5 - (2.0 * (-0.5 * 2f64.ln()) - ln_gamma(1.0));
        assert!((value - (log_density + prior)).abs() < 1e-12, "{value} vs {}", log_density + prior);
    }

    #[test]
    fn generated_sizes_match_the_layout() {
        let g = Gmm::generate(3, 4, 10, 1);
        assert_eq!((g.alphas.len(), g.means.len(), g.icf.len(), g.x.len()), (4, 12, 24, 30));
        assert_ne!(g, Gmm::generate(3, 4, 10, 2));
        assert!(g.objective().is_finite());
    }
}
