//! `gmm`: the objective and its gradient with respect to `alpha`, `mu`, `q` and `l`, returned as
//! GradBench's object `{alpha, mu, q, l}` with the matrices re-nested per component.

use jitdiff::{GradientFn, PrimalFn, args};
use serde_json::{Value, json};

use super::{Eval, build_both, first_f64, json_matrix, json_number, json_vector, lower, unknown};
use crate::ToolError;
use crate::input::{Runs, count, field, integer, matrix_cols, number, require, vector};
use crate::protocol::{Evaluation, repeat};

/// The objective compiled, and its gradient.
pub struct Gmm {
    objective: PrimalFn,
    gradient: GradientFn,
}

impl Gmm {
    /// Lowers and compiles `models/gmm.rs`.
    pub fn new() -> Result<Gmm, ToolError> {
        let m = lower(include_str!("../../models/gmm.rs"))?;
        let (objective, gradient) = build_both(
            || Ok(PrimalFn::builder(&m, "gmm").build()?),
            || {
                let gradient = GradientFn::builder(&m, "gmm").wrt(["alpha", "mu", "q", "l"]).build()?;
                // Compiled here, as `define` is timed (Auto mode would compile at the first call).
                gradient.prepare()?;
                Ok(gradient)
            },
        )?;
        Ok(Gmm { objective, gradient })
    }
}

/// The inputs, flattened.
struct Problem {
    d: usize,
    k: usize,
    gamma: f64,
    m: i64,
    alpha: Vec<f64>,
    mu: Vec<f64>,
    q: Vec<f64>,
    l: Vec<f64>,
    x: Vec<f64>,
}

impl Problem {
    fn read(input: &Value) -> Result<Problem, ToolError> {
        let d = count(field(input, "d")?, "d")?;
        let k = count(field(input, "k")?, "k")?;
        let n = count(field(input, "n")?, "n")?;
        require(d >= 1 && k >= 1 && n >= 1, "d", "expected d, k, n >= 1")?;
        // Bounded before `d (d - 1) / 2` is formed; the arrays' lengths are checked below.
        require(d <= 1 << 20, "d", "expected d <= 2^20")?;
        let gamma = number(field(input, "gamma")?, "gamma")?;
        let m = integer(field(input, "m")?, "m")?;
        let alpha = vector(field(input, "alpha")?, "alpha")?;
        require(alpha.len() == k, "alpha", "expected k entries")?;
        let (mu, mu_rows) = matrix_cols(field(input, "mu")?, "mu", d)?;
        let (q, q_rows) = matrix_cols(field(input, "q")?, "q", d)?;
        let (l, l_rows) = matrix_cols(field(input, "l")?, "l", d * (d - 1) / 2)?;
        require(mu_rows == k && q_rows == k && l_rows == k, "mu", "expected k rows in mu, q and l")?;
        let (x, x_rows) = matrix_cols(field(input, "x")?, "x", d)?;
        require(x_rows == n, "x", "expected n rows")?;
        Ok(Problem { d, k, gamma, m, alpha, mu, q, l, x })
    }
}

/// ln Γ_p(a), the log of the multivariate gamma function (a constant of the prior).
fn log_gamma_distrib(a: f64, p: usize) -> f64 {
    let pf = p as f64;
    let mut out = 0.25 * pf * (pf - 1.0) * std::f64::consts::PI.ln();
    for j in 1..=p {
        out += ln_gamma(a + 0.5 * (1.0 - j as f64));
    }
    out
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, 9 terms: about 15 significant digits).
fn ln_gamma(x: f64) -> f64 {
    const C: [f64; 9] = [
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
        // Reflection: Γ(x) Γ(1 - x) = π / sin(π x).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).abs().ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = C[0];
    for (i, c) in C.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + 7.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

impl Eval for Gmm {
    fn name(&self) -> &'static str {
        "gmm"
    }

    fn evaluate(&self, function: &str, input: &Value, runs: Runs) -> Result<Evaluation, ToolError> {
        let p = Problem::read(input)?;
        let (d, k) = (p.d, p.k);
        let lgd = log_gamma_distrib(0.5 * (d as f64 + p.m as f64 + 1.0), d);
        macro_rules! call_args {
            () => {
                args![&p.alpha, &p.mu, &p.q, &p.l, &p.x, d, p.gamma, p.m, lgd]
            };
        }
        let (output, timings) = match function {
            "objective" => {
                let (v, t) = repeat(runs, || first_f64(&self.objective.call(&mut call_args!())?))?;
                (json_number(v), t)
            }
            "jacobian" => {
                let mut g = vec![0.0; p.alpha.len() + p.mu.len() + p.q.len() + p.l.len()];
                let ((), t) = repeat(runs, || {
                    self.gradient.value_and_grad(&mut call_args!(), &mut g)?;
                    Ok(())
                })?;
                let (ga, rest) = g.split_at(k);
                let (gmu, rest) = rest.split_at(k * d);
                let (gq, gl) = rest.split_at(k * d);
                let l_sz = d * (d - 1) / 2;
                let gl_json = if l_sz == 0 { Value::Array(vec![json!([]); k]) } else { json_matrix(gl, l_sz) };
                let out = json!({ "alpha": json_vector(ga), "mu": json_matrix(gmu, d), "q": json_matrix(gq, d), "l": gl_json });
                (out, t)
            }
            other => return Err(unknown("gmm", other)),
        };
        Ok(Evaluation { output, timings })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ln_gamma_matches_known_values() {
        assert!((super::ln_gamma(1.0)).abs() < 1e-14);
        assert!((super::ln_gamma(5.0) - 24.0f64.ln()).abs() < 1e-13);
        assert!((super::ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-13);
    }
}
