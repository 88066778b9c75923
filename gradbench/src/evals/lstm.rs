//! `lstm`: the objective and its gradient with respect to the main and extra parameters,
//! flattened and concatenated as GradBench's reference does.

use jitdiff::{GradientFn, PrimalFn, args};
use serde_json::Value;

use super::{Eval, build_both, first_f64, json_number, json_vector, lower, unknown};
use crate::ToolError;
use crate::input::{Runs, field, matrix, matrix_cols, require};
use crate::protocol::{Evaluation, repeat};

/// The objective compiled, and its gradient.
pub struct Lstm {
    objective: PrimalFn,
    gradient: GradientFn,
}

impl Lstm {
    /// Lowers and compiles `models/lstm.rs`.
    pub fn new() -> Result<Lstm, ToolError> {
        let m = lower(include_str!("../../models/lstm.rs"))?;
        let (objective, gradient) = build_both(
            || Ok(PrimalFn::builder(&m, "lstm").build()?),
            || {
                let gradient = GradientFn::builder(&m, "lstm").wrt(["main", "extra"]).build()?;
                // Compiled here, as `define` is timed (Auto mode would compile at the first call).
                gradient.prepare()?;
                Ok(gradient)
            },
        )?;
        Ok(Lstm { objective, gradient })
    }
}

impl Eval for Lstm {
    fn name(&self) -> &'static str {
        "lstm"
    }

    fn evaluate(&self, function: &str, input: &Value, runs: Runs) -> Result<Evaluation, ToolError> {
        let (main, rows, width) = matrix(field(input, "main_params")?, "main_params")?;
        let width = width.unwrap_or(0);
        require(rows >= 2 && rows % 2 == 0, "main_params", "expected 2 l rows, l >= 1")?;
        require(width > 0 && width % 4 == 0, "main_params", "expected rows of 4 b entries")?;
        let (l, b) = (rows / 2, width / 4);
        let (extra, extra_rows) = matrix_cols(field(input, "extra_params")?, "extra_params", b)?;
        require(extra_rows == 3, "extra_params", "expected 3 rows")?;
        let (state0, state_rows) = matrix_cols(field(input, "state")?, "state", b)?;
        require(state_rows == 2 * l, "state", "expected 2 l rows")?;
        let (seq, c) = matrix_cols(field(input, "sequence")?, "sequence", b)?;
        require(c >= 1, "sequence", "expected at least one character")?;
        let (mut state, mut ypred) = (vec![0.0; 2 * l * b], vec![0.0; b]);
        let (output, timings) = match function {
            "objective" => {
                let (v, t) = repeat(runs, || {
                    let mut a = args![&main, &extra, &state0, &seq, l, b, &mut state, &mut ypred];
                    first_f64(&self.objective.call(&mut a)?)
                })?;
                (json_number(v), t)
            }
            "jacobian" => {
                let mut g = vec![0.0; main.len() + extra.len()];
                let ((), t) = repeat(runs, || {
                    let mut a = args![&main, &extra, &state0, &seq, l, b, &mut state, &mut ypred];
                    self.gradient.value_and_grad(&mut a, &mut g)?;
                    Ok(())
                })?;
                (json_vector(&g), t)
            }
            other => return Err(unknown("lstm", other)),
        };
        Ok(Evaluation { output, timings })
    }
}
