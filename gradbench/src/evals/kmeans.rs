//! `kmeans`: the cost, and the Newton direction `J / H` of the centroids (gradient over the
//! Hessian's diagonal, elementwise). The cost is a sum of squares separable per coordinate, so
//! the Hessian is diagonal and one Hessian-vector product with all ones gives its diagonal,
//! with the gradient from the same sweep.

use jitdiff::{HvpFn, PrimalFn, args};
use serde_json::Value;

use super::{Eval, build_both, first_f64, json_matrix, json_number, lower, unknown};
use crate::ToolError;
use crate::input::{Runs, field, matrix, matrix_cols, require};
use crate::protocol::{Evaluation, repeat};

/// The cost compiled, and its Hessian-vector product.
pub struct Kmeans {
    cost: PrimalFn,
    hvp: HvpFn,
}

impl Kmeans {
    /// Lowers and compiles `models/kmeans.rs`.
    pub fn new() -> Result<Kmeans, ToolError> {
        let m = lower(include_str!("../../models/kmeans.rs"))?;
        let (cost, hvp) = build_both(
            || Ok(PrimalFn::builder(&m, "kmeans").build()?),
            || Ok(HvpFn::builder(&m, "kmeans").wrt(["centroids"]).width(1).build()?),
        )?;
        Ok(Kmeans { cost, hvp })
    }
}

impl Eval for Kmeans {
    fn name(&self) -> &'static str {
        "kmeans"
    }

    fn evaluate(&self, function: &str, input: &Value, runs: Runs) -> Result<Evaluation, ToolError> {
        let (points, n, d) = matrix(field(input, "points")?, "points")?;
        let d = d.unwrap_or(0);
        require(n > 0 && d > 0, "points", "expected a non-empty matrix")?;
        let (centroids, k) = matrix_cols(field(input, "centroids")?, "centroids", d)?;
        require(k > 0, "centroids", "expected at least one centroid")?;
        let (output, timings) = match function {
            "cost" => {
                let (v, t) = repeat(runs, || first_f64(&self.cost.call(&mut args![&points, &centroids, d])?))?;
                (json_number(v), t)
            }
            "dir" => {
                let ones = vec![1.0; k * d];
                let (mut grad, mut diag, mut dir) = (vec![0.0; k * d], vec![0.0; k * d], vec![0.0; k * d]);
                let ((), t) = repeat(runs, || {
                    self.hvp.hvp_with_gradient(&mut args![&points, &centroids, d], &ones, &mut grad, &mut diag)?;
                    for ((o, g), h) in dir.iter_mut().zip(&grad).zip(&diag) {
                        *o = g / h;
                    }
                    Ok(())
                })?;
                (json_matrix(&dir, d), t)
            }
            other => return Err(unknown("kmeans", other)),
        };
        Ok(Evaluation { output, timings })
    }
}
