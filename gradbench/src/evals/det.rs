//! `det`: the determinant of an ℓ x ℓ matrix (flat, row-major) and its gradient.

use jitdiff::{GradientFn, PrimalFn, args};
use serde_json::Value;

use super::{Eval, first_f64, json_number, json_vector, lower, unknown};
use crate::ToolError;
use crate::input::{Runs, count, field, require, vector};
use crate::protocol::{Evaluation, repeat};

/// The determinant compiled, and its gradient.
pub struct Det {
    primal: PrimalFn,
    gradient: GradientFn,
}

impl Det {
    /// Lowers and compiles `models/det.rs`.
    pub fn new() -> Result<Det, ToolError> {
        let m = lower(include_str!("../../models/det.rs"))?;
        let primal = PrimalFn::builder(&m, "det").build()?;
        // Reverse mode records every call of the recursion by minors: ℓ = 11 makes about 740
        // million tape entries (5.9 GB), past the default 4 GiB limit.
        let options = jitdiff::jit::JitOptions::new().tape_limit(8 << 30);
        let gradient = GradientFn::builder(&m, "det").wrt(["a"]).options(&options).build()?;
        // Compiled here, as `define` is timed (Auto mode would compile at the first call).
        gradient.prepare()?;
        Ok(Det { primal, gradient })
    }
}

impl Eval for Det {
    fn name(&self) -> &'static str {
        "det"
    }

    fn evaluate(&self, function: &str, input: &Value, runs: Runs) -> Result<Evaluation, ToolError> {
        let a = vector(field(input, "A")?, "A")?;
        let ell = count(field(input, "ell")?, "ell")?;
        require(ell >= 1 && ell.checked_mul(ell) == Some(a.len()), "A", "expected ell * ell entries, ell >= 1")?;
        let (mut r, mut c) = (vec![0.0; ell + 1], vec![0.0; ell + 1]);
        let (output, timings) = match function {
            "primal" => {
                let (v, t) = repeat(runs, || first_f64(&self.primal.call(&mut args![&a, ell, &mut r, &mut c])?))?;
                (json_number(v), t)
            }
            "gradient" => {
                let mut g = vec![0.0; a.len()];
                let ((), t) = repeat(runs, || {
                    self.gradient.value_and_grad(&mut args![&a, ell, &mut r, &mut c], &mut g)?;
                    Ok(())
                })?;
                eprintln!("jitdiff-gradbench: det: ell = {ell}: {} bytes of tape", self.gradient.tape_bytes());
                (json_vector(&g), t)
            }
            other => return Err(unknown("det", other)),
        };
        Ok(Evaluation { output, timings })
    }
}
