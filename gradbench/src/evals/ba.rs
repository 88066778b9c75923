//! `ba`: bundle adjustment. The residuals as one function of all cameras, points and weights;
//! the Jacobian by [`SparseJacobianFn`] (pattern detected and coloured once per input, reported
//! as a `"prepare"` timing, then compressed forward sweeps), in CSR. GradBench compares the
//! first 30 entries and the last of the row offsets, columns and values.

use jitdiff::sparse::CsrMatrix;
use jitdiff::{Arg, PrimalFn, SparseJacobianFn, args};
use serde_json::{Value, json};

use super::{Eval, build_both, json_number, lower, unknown};
use crate::ToolError;
use crate::input::{Runs, count, field, number, require, vector};
use crate::protocol::{Evaluation, Timing, repeat};

/// The residuals compiled, and their sparse Jacobian.
pub struct Ba {
    objective: PrimalFn,
    jacobian: SparseJacobianFn,
}

impl Ba {
    /// Lowers and compiles `models/ba.rs`.
    pub fn new() -> Result<Ba, ToolError> {
        let m = lower(include_str!("../../models/ba.rs"))?;
        let (objective, jacobian) = build_both(
            || Ok(PrimalFn::builder(&m, "ba").build()?),
            || Ok(SparseJacobianFn::builder(&m, "ba").wrt(["cams", "xs", "w"]).build()?),
        )?;
        Ok(Ba { objective, jacobian })
    }
}

/// GradBench's input replicated as its reference does: n cameras, m points, p observations,
/// observation i of camera i mod n and point i mod m.
struct Problem {
    cams: Vec<f64>,
    xs: Vec<f64>,
    w: Vec<f64>,
    obs: Vec<f64>,
    feats: Vec<f64>,
}

impl Problem {
    fn read(input: &Value) -> Result<Problem, ToolError> {
        let n = count(field(input, "n")?, "n")?;
        let m = count(field(input, "m")?, "m")?;
        let p = count(field(input, "p")?, "p")?;
        require(n >= 1 && m >= 1 && p >= 1, "n", "expected n, m, p >= 1")?;
        // The replicated arrays are allocated here: refuse sizes no machine holds.
        let limit = 1usize << 31;
        require(n <= limit / 11 && m <= limit / 3 && p <= limit / 3, "p", "expected 11 n, 3 m and 3 p below 2^31")?;
        let cam = vector(field(input, "cam")?, "cam")?;
        require(cam.len() == 11, "cam", "expected 11 entries")?;
        let x = vector(field(input, "x")?, "x")?;
        require(x.len() == 3, "x", "expected 3 entries")?;
        let w = number(field(input, "w")?, "w")?;
        let feat = vector(field(input, "feat")?, "feat")?;
        require(feat.len() == 2, "feat", "expected 2 entries")?;
        let obs = (0..p).flat_map(|i| [(i % n) as f64, (i % m) as f64]).collect();
        Ok(Problem { cams: cam.repeat(n), xs: x.repeat(m), w: vec![w; p], obs, feats: feat.repeat(p) })
    }

    fn args<'a>(&'a self, err: &'a mut [f64]) -> [Arg<'a>; 6] {
        args![&self.cams, &self.xs, &self.w, &self.obs, &self.feats, err]
    }
}

/// The reference's CSR layout of the Jacobian (3p x (11n + 3m + p)): each reprojection row
/// lists all 11 camera columns, the 3 point columns and the weight column (structural zeros
/// included: jitdiff's pattern omits the principal point coordinate a row does not read), each
/// weight row its one column. GradBench compares the first 30 entries and the last of the row
/// offsets, column indices and values; this returns those, reading the values from `csr`.
fn reference_layout(csr: &CsrMatrix, n: usize, m: usize, p: usize) -> (Vec<usize>, Vec<usize>, Vec<f64>) {
    let row_ptr = |r: usize| if r <= 2 * p { 15 * r } else { 30 * p + (r - 2 * p) };
    let row_cols = |r: usize| -> Vec<usize> {
        if r < 2 * p {
            let obs = r / 2;
            let (cam, pt) = (obs % n, obs % m);
            let mut cols: Vec<usize> = (0..11).map(|i| 11 * cam + i).collect();
            cols.extend((0..3).map(|i| 11 * n + 3 * pt + i));
            cols.push(11 * n + 3 * m + obs);
            cols
        } else {
            vec![11 * n + 3 * m + (r - 2 * p)]
        }
    };
    let rows_total = 3 * p;
    let mut rows: Vec<usize> = (0..=rows_total).take(30).map(row_ptr).collect();
    rows.push(row_ptr(rows_total));
    let (mut cols, mut vals) = (Vec::new(), Vec::new());
    for r in 0..rows_total {
        for c in row_cols(r) {
            if cols.len() < 30 {
                cols.push(c);
                vals.push(csr.get(r, c));
            }
        }
        if cols.len() >= 30 {
            break;
        }
    }
    let (last_row, last_col) = (rows_total - 1, 11 * n + 3 * m + p - 1);
    cols.push(last_col);
    vals.push(csr.get(last_row, last_col));
    (rows, cols, vals)
}

fn input_count(input: &Value, name: &str) -> Result<usize, ToolError> {
    count(field(input, name)?, name)
}

impl Eval for Ba {
    fn name(&self) -> &'static str {
        "ba"
    }

    fn evaluate(&self, function: &str, input: &Value, runs: Runs) -> Result<Evaluation, ToolError> {
        let problem = Problem::read(input)?;
        let p = problem.w.len();
        let mut err = vec![0.0; 3 * p];
        match function {
            "objective" => {
                let ((), timings) = repeat(runs, || {
                    self.objective.call_with(&mut problem.args(&mut err), |_| ())?;
                    Ok(())
                })?;
                let output = json!({
                    "reproj_error": { "elements": [json_number(err[0]), json_number(err[1])], "repeated": p },
                    "w_err": { "element": json_number(err[2 * p]), "repeated": p },
                });
                Ok(Evaluation { output, timings })
            }
            "jacobian" => {
                // Sparsity detection and colouring (once per input shape and data), like a tape's
                // preparation: outside the timed runs, reported as `"prepare"`.
                let start = std::time::Instant::now();
                let info = self.jacobian.info(&problem.args(&mut err))?;
                eprintln!(
                    "jitdiff-gradbench: ba: {} x {} Jacobian, {} nonzeros, {} colours, {} sweep(s) of {} lanes",
                    info.rows, info.cols, info.nnz, info.colors, info.sweeps, info.lanes
                );
                let prepare = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
                let mut csr = CsrMatrix::default();
                let ((), mut timings) = repeat(runs, || {
                    self.jacobian.jacobian_into(&mut problem.args(&mut err), &mut csr)?;
                    Ok(())
                })?;
                timings.insert(0, Timing { name: "prepare", nanoseconds: prepare });
                let (n, m) = (input_count(input, "n")?, input_count(input, "m")?);
                let (rows, cols, vals) = reference_layout(&csr, n, m, p);
                let vals: Vec<Value> = vals.into_iter().map(json_number).collect();
                let output = json!({ "rows": rows, "cols": cols, "vals": vals });
                Ok(Evaluation { output, timings })
            }
            other => Err(unknown("ba", other)),
        }
    }
}
