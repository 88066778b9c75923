//! The benchmark programs of `problems/rust/`, written once in Rust with the attributes:
//! each `fn` is ordinary Rust (the tests call it as the reference) and the attribute adds its IR
//! and typed handles. The bodies are the files' own, unchanged (`front_sources_lower_to_the_same_modules`
//! checks that the macro and `lower_source` on the files agree).

// Index loops, as the IR's loops are written.
#![allow(clippy::needless_range_loop)]

// Extended Rosenbrock, `sum_{i < n-1} 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2`: a loop over a
// slice with the same operation order as `examples/ir/rosenbrock.ir`.
/// The objective; `x` has at least two elements.
#[jitdiff::function]
pub fn rosenbrock(x: &[f64]) -> f64 {
    let mut sum = 0.0;
    for i in 0..x.len() - 1 {
        let xi = x[i];
        let d = x[i + 1] - xi * xi;
        let e = 1.0 - xi;
        sum += 100.0 * (d * d) + e * e;
    }
    sum
}

// A two-layer perceptron `I -> H -> 1` with tanh hidden units; the loss is the mean squared
// error over a batch (as `examples/ir/mlp.ir`, with `b2` a scalar here).
/// `w1` is `H x I` row-major with `H = b1.len()`, `w2` has `H` entries, `x` is `B x I` with
/// `B = y.len()`.
#[jitdiff::function]
pub fn mlp(w1: &[f64], b1: &[f64], w2: &[f64], b2: f64, x: &[f64], y: &[f64]) -> f64 {
    let hidden = b1.len();
    let inputs = w1.len() / hidden;
    let mut sse = 0.0;
    for (b, &target) in y.iter().enumerate() {
        let mut prediction = b2;
        for h in 0..hidden {
            let mut pre_activation = b1[h];
            for i in 0..inputs {
                pre_activation += w1[h * inputs + i] * x[b * inputs + i];
            }
            prediction += w2[h] * pre_activation.tanh();
        }
        let error = prediction - target;
        sse += error * error;
    }
    sse / y.len() as f64
}

// A damped pendulum with Coulomb friction integrated by classical RK4 (as
// `examples/ir/pendulum.ir`): the friction term is a branch on the sign of the velocity.
#[jitdiff::module]
pub mod pendulum_model {
    /// The angular acceleration; friction opposes the motion, none at rest.
    fn accel(theta: f64, omega: f64, gl: f64, damping: f64, friction: f64) -> f64 {
        let smooth = -(gl * theta.sin() + damping * omega);
        if omega > 0.0 {
            smooth - friction
        } else if omega < 0.0 {
            smooth + friction
        } else {
            smooth
        }
    }

    /// `params = [g/L, damping, friction]`; `steps` RK4 steps of size `dt` from `(theta0, omega0)`;
    /// the loss is `theta^2 + omega^2` at the end.
    pub fn pendulum(params: &[f64], theta0: f64, omega0: f64, dt: f64, steps: usize) -> f64 {
        let (gl, damping, friction) = (params[0], params[1], params[2]);
        let half_dt = dt * 0.5;
        let sixth_dt = dt / 6.0;
        let mut theta = theta0;
        let mut omega = omega0;
        for _ in 0..steps {
            let k1 = accel(theta, omega, gl, damping, friction);
            let omega2 = omega + half_dt * k1;
            let k2 = accel(theta + half_dt * omega, omega2, gl, damping, friction);
            let omega3 = omega + half_dt * k2;
            let k3 = accel(theta + half_dt * omega2, omega3, gl, damping, friction);
            let omega4 = omega + dt * k3;
            let k4 = accel(theta + dt * omega3, omega4, gl, damping, friction);
            let theta_next = theta + sixth_dt * (omega + 2.0 * omega2 + 2.0 * omega3 + omega4);
            omega += sixth_dt * (k1 + 2.0 * k2 + 2.0 * k3 + k4);
            theta = theta_next;
        }
        theta * theta + omega * omega
    }
}

// ADBench's Gaussian mixture model objective with a Wishart prior, the computation of
// `examples/ir/gmm.ir` in the same operation order. The IR allocates its two work arrays
// (`exp(q)` per component, and `Q (x - mu)`); here the caller passes them (`q_diags`: `K d`
// entries, `y`: `d` entries), since local arrays of the subset have constant lengths.
//
// Layout (flat, row-major): `alphas` K, `means` K x d, `icf` K x d(d+1)/2 (per component the d
// logs of the diagonal of Q, then its strictly lower triangle column by column), `x` n x d.
#[jitdiff::module]
pub mod gmm_model {
    // Index loops, as the IR's loops are written.

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
}

// L2-regularised logistic regression: the mean of `ln(1 + exp(-y_i w·x_i))` over `n` samples
// of `d` features (labels ±1), plus `lambda/2 |w|^2`, with the loss evaluated stably.
#[jitdiff::module]
pub mod logistic_model {
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
}

// A Lotka–Volterra predator–prey model integrated by RK4, fitted to observations: the mean
// squared distance between the trajectory and the observed populations after each step.
#[jitdiff::module]
pub mod lotka_volterra_model {
    /// The rates `(dx/dt, dy/dt)` of prey `x` and predators `y`.
    fn rates(x: f64, y: f64, alpha: f64, beta: f64, gamma: f64, delta: f64) -> (f64, f64) {
        (alpha * x - beta * x * y, delta * x * y - gamma * y)
    }

    /// Integrate from `(x0, y0)` with `params = [alpha, beta, gamma, delta]`, writing the state
    /// after each of the `trajectory.len() / 2` steps as pairs `(x, y)`.
    pub fn lotka_volterra(params: &[f64], x0: f64, y0: f64, dt: f64, trajectory: &mut [f64]) {
        let (alpha, beta, gamma, delta) = (params[0], params[1], params[2], params[3]);
        let (mut x, mut y) = (x0, y0);
        let half = 0.5 * dt;
        for step in 0..trajectory.len() / 2 {
            let (k1x, k1y) = rates(x, y, alpha, beta, gamma, delta);
            let (k2x, k2y) = rates(x + half * k1x, y + half * k1y, alpha, beta, gamma, delta);
            let (k3x, k3y) = rates(x + half * k2x, y + half * k2y, alpha, beta, gamma, delta);
            let (k4x, k4y) = rates(x + dt * k3x, y + dt * k3y, alpha, beta, gamma, delta);
            x += dt / 6.0 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x);
            y += dt / 6.0 * (k1y + 2.0 * k2y + 2.0 * k3y + k4y);
            trajectory[2 * step] = x;
            trajectory[2 * step + 1] = y;
        }
    }

    /// The fit: integrate into `work` (as long as `observed`) and compare.
    pub fn lotka_volterra_fit(params: &[f64], x0: f64, y0: f64, dt: f64, observed: &[f64], work: &mut [f64]) -> f64 {
        lotka_volterra(params, x0, y0, dt, work);
        let mut loss = 0.0;
        for (simulated, measured) in work.iter().zip(observed.iter()) {
            let e = simulated - measured;
            loss += e * e;
        }
        loss / (observed.len() / 2) as f64
    }
}
