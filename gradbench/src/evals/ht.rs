//! `ht`: hand tracking. The Jacobian of the 3P residuals by forward mode with 8 tangent lanes:
//! one direction per `theta` entry and, for the "complicated" variant, the two compressed
//! directions of `us` (all `u0` at once, all `u1` at once: each residual depends on its own
//! point's coordinates only, so the block-diagonal part compresses into two columns, which are
//! GradBench's first two). 28 directions, 4 sweeps.

use jitdiff::{Arg, ForwardFn, PrimalFn, args};
use serde_json::Value;

use super::{Eval, build_both, json_matrix, json_vector, lower, unknown};
use crate::ToolError;
use crate::input::{Runs, field, matrix_cols, require, vector};
use crate::protocol::{Evaluation, repeat};

const LANES: usize = 8;

/// The residuals compiled, and their forward mode.
pub struct Ht {
    objective: PrimalFn,
    forward: ForwardFn,
}

impl Ht {
    /// Lowers and compiles `models/ht.rs`.
    pub fn new() -> Result<Ht, ToolError> {
        let m = lower(include_str!("../../models/ht.rs"))?;
        let (objective, forward) = build_both(
            || Ok(PrimalFn::builder(&m, "ht").build()?),
            || Ok(ForwardFn::builder(&m, "ht").wrt(["theta", "us"]).width(LANES as u8).build()?),
        )?;
        Ok(Ht { objective, forward })
    }
}

/// The input, flattened (integers as floats, as the model reads them).
struct Problem {
    theta: Vec<f64>,
    us: Vec<f64>,
    parents: Vec<f64>,
    base_rel: Vec<f64>,
    inv_base_abs: Vec<f64>,
    base_pos: Vec<f64>,
    weights: Vec<f64>,
    triangles: Vec<f64>,
    corr: Vec<f64>,
    points: Vec<f64>,
    mirrored: bool,
}

/// Work space of the model.
struct Work {
    err: Vec<f64>,
    pp: Vec<f64>,
    rel: Vec<f64>,
    abs: Vec<f64>,
    tr: Vec<f64>,
    pos: Vec<f64>,
}

fn flat3(value: &Value, name: &str) -> Result<Vec<f64>, ToolError> {
    let items =
        value.as_array().ok_or_else(|| ToolError::Input { field: name.into(), reason: "expected an array".into() })?;
    let mut out = Vec::with_capacity(16 * items.len());
    for (i, m) in items.iter().enumerate() {
        let (flat, rows) = matrix_cols(m, &format!("{name}[{i}]"), 4)?;
        require(rows == 4, name, "expected 4 x 4 matrices")?;
        out.extend(flat);
    }
    Ok(out)
}

impl Problem {
    fn read(input: &Value) -> Result<Problem, ToolError> {
        let theta = vector(field(input, "theta")?, "theta")?;
        require(theta.len() == 26, "theta", "expected 26 entries")?;
        let (us, us_rows) = matrix_cols(field(input, "us")?, "us", 2)?;
        let data = field(input, "data")?;
        let model = field(data, "model")?;
        let parents = vector(field(model, "parents")?, "parents")?;
        let b = parents.len();
        require(b == 22, "parents", "expected the 22 bones of the hand model")?;
        require(parents.iter().enumerate().all(|(i, &p)| p < i as f64), "parents", "a parent must come first")?;
        let base_rel = flat3(field(model, "base_relatives")?, "base_relatives")?;
        let inv_base_abs = flat3(field(model, "inverse_base_absolutes")?, "inverse_base_absolutes")?;
        require(base_rel.len() == 16 * b && inv_base_abs.len() == 16 * b, "base_relatives", "expected one per bone")?;
        let (base_pos, v) = matrix_cols(field(model, "base_positions")?, "base_positions", 4)?;
        let (weights, w_rows) = matrix_cols(field(model, "weights")?, "weights", b)?;
        require(w_rows == v, "weights", "expected one row per vertex")?;
        let (triangles, _) = matrix_cols(field(model, "triangles")?, "triangles", 3)?;
        require(triangles.iter().all(|&t| t >= 0.0 && (t as usize) < v), "triangles", "vertex out of range")?;
        let mirrored = field(model, "is_mirrored")?
            .as_bool()
            .ok_or_else(|| ToolError::Input { field: "is_mirrored".into(), reason: "expected a boolean".into() })?;
        let corr = vector(field(data, "correspondences")?, "correspondences")?;
        let (points, p_rows) = matrix_cols(field(data, "points")?, "points", 3)?;
        require(p_rows == corr.len(), "points", "expected one per correspondence")?;
        require(us.is_empty() || us_rows == corr.len(), "us", "expected none or one per correspondence")?;
        let bound = if us.is_empty() { v } else { triangles.len() / 3 };
        require(corr.iter().all(|&c| c >= 0.0 && (c as usize) < bound), "correspondences", "index out of range")?;
        Ok(Problem { theta, us, parents, base_rel, inv_base_abs, base_pos, weights, triangles, corr, points, mirrored })
    }

    fn work(&self) -> Work {
        let b = self.parents.len();
        Work {
            err: vec![0.0; 3 * self.corr.len()],
            pp: vec![0.0; 3 * (b + 3)],
            rel: vec![0.0; 16 * b],
            abs: vec![0.0; 16 * b],
            tr: vec![0.0; 16 * b],
            pos: vec![0.0; 3 * (self.base_pos.len() / 4)],
        }
    }

    fn args<'a>(&'a self, w: &'a mut Work) -> [Arg<'a>; 17] {
        args![
            &self.theta,
            &self.us,
            &self.parents,
            &self.base_rel,
            &self.inv_base_abs,
            &self.base_pos,
            &self.weights,
            &self.triangles,
            &self.corr,
            &self.points,
            self.mirrored,
            &mut w.err,
            &mut w.pp,
            &mut w.rel,
            &mut w.abs,
            &mut w.tr,
            &mut w.pos
        ]
    }
}

impl Eval for Ht {
    fn name(&self) -> &'static str {
        "ht"
    }

    fn evaluate(&self, function: &str, input: &Value, runs: Runs) -> Result<Evaluation, ToolError> {
        let problem = Problem::read(input)?;
        let mut work = problem.work();
        match function {
            "objective" => {
                let ((), timings) = repeat(runs, || {
                    self.objective.call_with(&mut problem.args(&mut work), |_| ())?;
                    Ok(())
                })?;
                Ok(Evaluation { output: json_vector(&work.err), timings })
            }
            "jacobian" => {
                let complicated = !problem.us.is_empty();
                let ncols = problem.theta.len() + if complicated { 2 } else { 0 };
                let rows = work.err.len();
                // Seeds per sweep: lane l of sweep s is direction 8 s + l.
                let sweeps = ncols.div_ceil(LANES);
                let mut seeds = Vec::with_capacity(sweeps);
                for s in 0..sweeps {
                    let mut dtheta = vec![0.0; problem.theta.len() * LANES];
                    let mut dus = vec![0.0; problem.us.len() * LANES];
                    for l in 0..LANES {
                        let d = s * LANES + l;
                        let theta_dir = if complicated { d.checked_sub(2) } else { Some(d) };
                        match theta_dir {
                            Some(t) if t < problem.theta.len() => dtheta[t * LANES + l] = 1.0,
                            Some(_) => {}
                            None => (0..problem.corr.len()).for_each(|i| dus[(2 * i + d) * LANES + l] = 1.0),
                        }
                    }
                    seeds.push((dtheta, dus));
                }
                let mut out = self.forward.output();
                let mut jac = vec![0.0; rows * ncols];
                let ((), timings) = repeat(runs, || {
                    for (s, (dtheta, dus)) in seeds.iter().enumerate() {
                        self.forward.jvp_into(&mut problem.args(&mut work), &[dtheta, dus], &mut out)?;
                        let t = out.slice_tangent(0);
                        for l in 0..LANES.min(ncols - s * LANES) {
                            let d = s * LANES + l;
                            for r in 0..rows {
                                jac[r * ncols + d] = t[r * LANES + l];
                            }
                        }
                    }
                    Ok(())
                })?;
                Ok(Evaluation { output: json_matrix(&jac, ncols), timings })
            }
            other => Err(unknown("ht", other)),
        }
    }
}
