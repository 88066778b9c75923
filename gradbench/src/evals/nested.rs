//! `particle` and `saddle`: gradient descent whose objective itself takes a gradient (nested
//! AD). Each model (`models/particle.rs`, `models/saddle.rs`) is one plain-Rust program with
//! `jitdiff::grad_forward`/`grad_reverse` at both levels; the function name's two letters
//! (`ff`, `fr`, `rf`, `rr`) choose the outer and the inner mode, passed as two flags.

use jitdiff::{PrimalFn, args};
use serde_json::Value;

use super::{Eval, json_number, lower, unknown};
use crate::ToolError;
use crate::input::{Runs, field, number, vector};
use crate::protocol::{Evaluation, repeat};

/// The outer and inner modes of a variant name: `true` for forward.
fn modes(module: &'static str, function: &str) -> Result<(bool, bool), ToolError> {
    match function {
        "ff" => Ok((true, true)),
        "fr" => Ok((true, false)),
        "rf" => Ok((false, true)),
        "rr" => Ok((false, false)),
        other => Err(unknown(module, other)),
    }
}

/// `particle`: the control `w` that makes the particle cross the x axis at the origin.
pub struct Particle {
    argmin: PrimalFn,
}

impl Particle {
    /// Lowers the model; building the handle expands the nested gradients (derivation and
    /// compilation of all four variants: one program).
    pub fn new() -> Result<Particle, ToolError> {
        let m = lower(include_str!("../../models/particle.rs"))?;
        Ok(Particle { argmin: PrimalFn::builder(&m, "particle").build()? })
    }
}

impl Eval for Particle {
    fn name(&self) -> &'static str {
        "particle"
    }

    fn evaluate(&self, function: &str, input: &Value, runs: Runs) -> Result<Evaluation, ToolError> {
        let (outer, inner) = modes("particle", function)?;
        let w0 = number(field(input, "w")?, "w")?;
        let (w, timings) = repeat(runs, || {
            let out = self.argmin.call(&mut args![w0, outer, inner])?;
            out.first().and_then(|v| v.as_f64()).ok_or_else(|| ToolError::Message("no result".into()))
        })?;
        Ok(Evaluation { output: json_number(w), timings })
    }
}

/// `saddle`: the saddle point (x, y) from a start point.
pub struct Saddle {
    saddle: PrimalFn,
}

impl Saddle {
    /// Lowers the model and builds its handle (as for [`Particle`]).
    pub fn new() -> Result<Saddle, ToolError> {
        let m = lower(include_str!("../../models/saddle.rs"))?;
        Ok(Saddle { saddle: PrimalFn::builder(&m, "saddle").build()? })
    }
}

impl Eval for Saddle {
    fn name(&self) -> &'static str {
        "saddle"
    }

    fn evaluate(&self, function: &str, input: &Value, runs: Runs) -> Result<Evaluation, ToolError> {
        let (outer, inner) = modes("saddle", function)?;
        let start = vector(field(input, "start")?, "start")?;
        let [s0, s1] = start[..] else {
            return Err(ToolError::Message(format!("`start` must hold 2 numbers, not {}", start.len())));
        };
        let (point, timings) = repeat(runs, || {
            let out = self.saddle.call(&mut args![s0, s1, outer, inner])?;
            out.iter()
                .map(|v| v.as_f64().ok_or_else(|| ToolError::Message("a result is not a number".into())))
                .collect::<Result<Vec<f64>, ToolError>>()
        })?;
        Ok(Evaluation { output: Value::from(point), timings })
    }
}
