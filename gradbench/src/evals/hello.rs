//! `hello`: `square` (x²) and `double`, its derivative.

use jitdiff::{GradientFn, PrimalFn, args};
use serde_json::Value;

use super::{Eval, first_f64, json_number, lower, unknown};
use crate::ToolError;
use crate::input::{Runs, number};
use crate::protocol::{Evaluation, repeat};

const SOURCE: &str = include_str!("../../models/hello.rs");

/// `square` compiled, and its gradient.
pub struct Hello {
    square: PrimalFn,
    double: GradientFn,
}

impl Hello {
    /// Lowers and compiles the model.
    pub fn new() -> Result<Hello, ToolError> {
        let m = lower(SOURCE)?;
        let square = PrimalFn::builder(&m, "square").build()?;
        let double = GradientFn::builder(&m, "square").wrt(["x"]).build()?;
        // Compiled here, as `define` is timed (Auto mode would compile at the first call).
        double.prepare()?;
        // One input: `value_and_grad` uses forward lanes, compiled at the first call; make that
        // call here so that the compilation counts as `define`'s.
        double.value_and_grad(&mut args![1.0], &mut [0.0])?;
        Ok(Hello { square, double })
    }
}

impl Eval for Hello {
    fn name(&self) -> &'static str {
        "hello"
    }

    fn evaluate(&self, function: &str, input: &Value, runs: Runs) -> Result<Evaluation, ToolError> {
        let x = number(input, "input")?;
        let (y, timings) = match function {
            "square" => repeat(runs, || first_f64(&self.square.call(&mut args![x])?))?,
            "double" => repeat(runs, || {
                let mut g = [0.0];
                self.double.value_and_grad(&mut args![x], &mut g)?;
                Ok(g[0])
            })?,
            other => return Err(unknown("hello", other)),
        };
        Ok(Evaluation { output: json_number(y), timings })
    }
}
