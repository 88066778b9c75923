//! The evals of one slice and a scalar objective: `llsq`, `lse` and `ode`.

use jitdiff::{GradientFn, PrimalFn, args};
use serde_json::Value;

use super::{Eval, build_both, first_f64, json_number, json_vector, lower, unknown};
use crate::ToolError;
use crate::input::{Runs, count, field, require, vector};
use crate::protocol::{Evaluation, repeat};

/// The compiled `primal` and the gradient of `gradient` with respect to its slice `x`, built on
/// two threads (`define` is timed).
fn primal_and_gradient(
    m: &jitdiff::ir::Module,
    primal: &str,
    gradient: &str,
) -> Result<(PrimalFn, GradientFn), ToolError> {
    build_both(
        || Ok(PrimalFn::builder(m, primal).build()?),
        || {
            let gradient = GradientFn::builder(m, gradient).wrt(["x"]).build()?;
            // Compiled here, as `define` is timed (Auto mode would compile at the first call).
            gradient.prepare()?;
            Ok(gradient)
        },
    )
}

/// `llsq`: `primal` and `gradient` of the least-squares objective.
pub struct Llsq {
    primal: PrimalFn,
    gradient: GradientFn,
}

impl Llsq {
    /// Lowers and compiles `models/llsq.rs`.
    pub fn new() -> Result<Llsq, ToolError> {
        let m = lower(include_str!("../../models/llsq.rs"))?;
        let (primal, gradient) = primal_and_gradient(&m, "llsq", "llsq")?;
        Ok(Llsq { primal, gradient })
    }
}

impl Eval for Llsq {
    fn name(&self) -> &'static str {
        "llsq"
    }

    fn evaluate(&self, function: &str, input: &Value, runs: Runs) -> Result<Evaluation, ToolError> {
        let x = vector(field(input, "x")?, "x")?;
        let n = count(field(input, "n")?, "n")?;
        require(n >= 2, "n", "expected at least 2 points")?;
        let (output, timings) = match function {
            "primal" => {
                let (v, t) = repeat(runs, || first_f64(&self.primal.call(&mut args![&x, n])?))?;
                (json_number(v), t)
            }
            "gradient" => {
                let mut g = vec![0.0; x.len()];
                let ((), t) = repeat(runs, || {
                    self.gradient.value_and_grad(&mut args![&x, n], &mut g)?;
                    Ok(())
                })?;
                (json_vector(&g), t)
            }
            other => return Err(unknown("llsq", other)),
        };
        Ok(Evaluation { output, timings })
    }
}

/// `lse`: `primal` and `gradient` of log-sum-exp.
pub struct Lse {
    primal: PrimalFn,
    gradient: GradientFn,
}

impl Lse {
    /// Lowers and compiles `models/lse.rs`.
    pub fn new() -> Result<Lse, ToolError> {
        let m = lower(include_str!("../../models/lse.rs"))?;
        let (primal, gradient) = primal_and_gradient(&m, "lse", "lse")?;
        Ok(Lse { primal, gradient })
    }
}

impl Eval for Lse {
    fn name(&self) -> &'static str {
        "lse"
    }

    fn evaluate(&self, function: &str, input: &Value, runs: Runs) -> Result<Evaluation, ToolError> {
        let x = vector(field(input, "x")?, "x")?;
        require(!x.is_empty(), "x", "expected at least one entry")?;
        let (output, timings) = match function {
            "primal" => {
                let (v, t) = repeat(runs, || first_f64(&self.primal.call(&mut args![&x])?))?;
                (json_number(v), t)
            }
            "gradient" => {
                let mut g = vec![0.0; x.len()];
                let ((), t) = repeat(runs, || {
                    self.gradient.value_and_grad(&mut args![&x], &mut g)?;
                    Ok(())
                })?;
                (json_vector(&g), t)
            }
            other => return Err(unknown("lse", other)),
        };
        Ok(Evaluation { output, timings })
    }
}

/// `ode`: the RK4 solution (`primal`) and the gradient of its last component.
pub struct Ode {
    primal: PrimalFn,
    gradient: GradientFn,
}

impl Ode {
    /// Lowers and compiles `models/ode.rs`.
    pub fn new() -> Result<Ode, ToolError> {
        let m = lower(include_str!("../../models/ode.rs"))?;
        let (primal, gradient) = primal_and_gradient(&m, "ode", "ode_last")?;
        Ok(Ode { primal, gradient })
    }
}

impl Eval for Ode {
    fn name(&self) -> &'static str {
        "ode"
    }

    fn evaluate(&self, function: &str, input: &Value, runs: Runs) -> Result<Evaluation, ToolError> {
        let x = vector(field(input, "x")?, "x")?;
        let s = count(field(input, "s")?, "s")?;
        require(!x.is_empty(), "x", "expected at least one entry")?;
        require(s >= 1, "s", "expected at least one step")?;
        let n = x.len();
        let mut yf = vec![0.0; n];
        let (output, timings) = match function {
            "primal" => {
                let ((), t) = repeat(runs, || {
                    self.primal.call_with(&mut args![&x, s, &mut yf], |_| ())?;
                    Ok(())
                })?;
                (json_vector(&yf), t)
            }
            "gradient" => {
                let mut g = vec![0.0; n];
                let ((), t) = repeat(runs, || {
                    self.gradient.value_and_grad(&mut args![&x, s, &mut yf], &mut g)?;
                    Ok(())
                })?;
                (json_vector(&g), t)
            }
            other => return Err(unknown("ode", other)),
        };
        Ok(Evaluation { output, timings })
    }
}
