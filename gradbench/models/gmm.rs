// GradBench `gmm`: ADBench's Gaussian mixture model log-likelihood with a Wishart prior, in
// the operation order of GradBench's C++ reference. Layout (flat, row-major): `alpha` k,
// `mu` k x d, `q` k x d (logs of the diagonal of Q), `l` k x d(d-1)/2 (the strictly lower
// triangle of Q, column by column), `x` n x d. `log_gamma_d` is ln Γ_d((d + m + 1) / 2),
// computed by the caller.
fn gmm(
    alpha: &[f64],
    mu: &[f64],
    q: &[f64],
    l: &[f64],
    x: &[f64],
    d: usize,
    gamma: f64,
    m: i64,
    log_gamma_d: f64,
) -> f64 {
    let k = alpha.len();
    let n = x.len() / d;
    let l_sz = d * (d - 1) / 2;
    let constant = -((n * d) as f64) * 0.5 * (2.0 * std::f64::consts::PI).ln();
    let mut qdiag = vec![0.0; d * k];
    let mut qx = vec![0.0; d];
    let mut main_term = vec![0.0; k];
    for i in 0..d * k {
        qdiag[i] = q[i].exp();
    }
    let mut slse = 0.0;
    for ix in 0..n {
        for ik in 0..k {
            let mut sum_q = 0.0;
            for j in 0..d {
                sum_q += q[ik * d + j];
            }
            for id in 0..d {
                qx[id] = qdiag[ik * d + id] * (x[ix * d + id] - mu[ik * d + id]);
            }
            let mut idx = ik * l_sz;
            for i in 0..d {
                let xc = x[ix * d + i] - mu[ik * d + i];
                for j in i + 1..d {
                    qx[j] += l[idx] * xc;
                    idx += 1;
                }
            }
            let mut sq = 0.0;
            for id in 0..d {
                sq += qx[id] * qx[id];
            }
            main_term[ik] = alpha[ik] + sum_q - 0.5 * sq;
        }
        slse += logsumexp(&main_term, k);
    }
    let lse_alpha = logsumexp(alpha, k);
    let mut out = constant + slse - n as f64 * lse_alpha;

    // The Wishart prior.
    let wn = d as i64 + m + 1;
    let c = (wn * d as i64) as f64 * (gamma.ln() - 0.5 * 2.0f64.ln()) - log_gamma_d;
    let mut prior = 0.0;
    for ik in 0..k {
        let mut frobenius = 0.0;
        let mut sum_q = 0.0;
        for j in 0..d {
            frobenius += qdiag[ik * d + j] * qdiag[ik * d + j];
            sum_q += q[ik * d + j];
        }
        for j in 0..l_sz {
            frobenius += l[ik * l_sz + j] * l[ik * l_sz + j];
        }
        prior += 0.5 * gamma * gamma * frobenius - m as f64 * sum_q;
    }
    out += -prior + k as f64 * c;
    out
}

fn logsumexp(v: &[f64], k: usize) -> f64 {
    let mut mx = v[0];
    for i in 1..k {
        if v[i] > mx {
            mx = v[i];
        }
    }
    let mut s = 0.0;
    for i in 0..k {
        s += (v[i] - mx).exp();
    }
    s.ln() + mx
}
