//! Arrays of arrays: `[[f64; C]; R]` locals, `&[[f64; C]]` / `&[[f64; C]; R]` parameters and
//! `vec![[x; C]; n]`, flat in the IR; rows indexed, borrowed, copied, iterated and passed on.

use crate::dual;
use crate::support::{Rng, lower};
use jitdiff_ir::{ArgValue, RuntimeValue};

dual! { ROWS:
    fn dot(a: &[f64], b: &[f64; 3]) -> f64 {
        a.iter().zip(b.iter()).map(|(x, y)| x * y).sum()
    }
    fn mat_vec(m: &[[f64; 3]; 3], v: &[f64; 3], out: &mut [f64; 3]) {
        for i in 0..3 {
            out[i] = dot(&m[i], v);
        }
    }
    fn energy(points: &[[f64; 3]], k: f64) -> f64 {
        let n = points.len();
        let mut rot = [[0.0; 3]; 3];
        let (c, s) = (k.cos(), k.sin());
        rot[0][0] = c;
        rot[0][1] = -s;
        rot[1][0] = s;
        rot[1][1] = c;
        rot[2][2] = 1.0;
        let weights = [[1.0, 2.0, 0.5], [0.25, 1.0, 3.0]];
        let mut total = 0.0;
        let mut moved = vec![[0.0; 3]; n];
        for (p, q) in points.iter().zip(moved.iter_mut()) {
            let mut r = [0.0; 3];
            mat_vec(&rot, &[p[0], p[1], p[2]], &mut r);
            for j in 0..3 {
                q[j] = r[j];
            }
        }
        for i in 0..n {
            // A copy: changing `moved` afterwards leaves it alone.
            let row = moved[i];
            moved[i][0] += 1.0;
            let w = &weights[i % 2];
            for j in 0..3 {
                total += w[j] * row[j] * row[j] + moved[i][j] * points[i][j];
            }
        }
        for row in &moved {
            total += row.iter().sum::<f64>() * 0.1;
        }
        total += moved.iter().flatten().map(|v| v * v).sum::<f64>() * 0.01;
        for (i, row) in moved.iter().enumerate() {
            total += row[i % 3] * (i as f64);
        }
        total + moved.len() as f64 + if points.is_empty() { 1.0 } else { 0.0 }
    }
    fn cell(m: &[[f64; 2]], i: usize, j: usize) -> f64 {
        m[i][j]
    }
    fn tail(m: &[[f64; 4]], i: usize) -> f64 {
        m[i][1..].iter().sum()
    }
}

fn flat(rows: &[[f64; 3]]) -> Vec<f64> {
    rows.iter().flatten().copied().collect()
}

#[test]
fn arrays_of_arrays_compute_as_rustc_does() {
    let m = lower(ROWS);
    let mut rng = Rng::new(43);
    for n in [0usize, 1, 2, 5] {
        let points: Vec<[f64; 3]> = (0..n).map(|_| [rng.normal(), rng.normal(), rng.normal()]).collect();
        let k = rng.normal();
        let got = crate::support::run(&m, "energy", &mut [ArgValue::Slice(flat(&points)), ArgValue::F64(k)]);
        assert_eq!(got, vec![RuntimeValue::F64(energy(&points, k))], "n = {n}");
    }
    let grid = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]];
    let flat_grid: Vec<f64> = grid.iter().flatten().copied().collect();
    let call = |name: &str, args: &mut [ArgValue]| jitdiff_ir::Interpreter::new(&m).call(name, args);
    for (i, j) in [(0, 0), (1, 1), (2, 0)] {
        let got = call("cell", &mut [ArgValue::Slice(flat_grid.clone()), ArgValue::I64(i), ArgValue::I64(j)]);
        assert_eq!(got.unwrap(), vec![RuntimeValue::F64(cell(&grid, i as usize, j as usize))]);
    }
    // Where Rust panics: a column past the row (not the next row's element), a row past the end.
    for (i, j) in [(0, 2), (3, 0), (2, 2)] {
        let err = call("cell", &mut [ArgValue::Slice(flat_grid.clone()), ArgValue::I64(i), ArgValue::I64(j)]);
        assert_eq!(err.unwrap_err().kind_name(), "OutOfBounds", "m[{i}][{j}]");
    }
    let wide = [[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]];
    let flat_wide: Vec<f64> = wide.iter().flatten().copied().collect();
    let got = call("tail", &mut [ArgValue::Slice(flat_wide.clone()), ArgValue::I64(1)]).unwrap();
    assert_eq!(got, vec![RuntimeValue::F64(tail(&wide, 1))]);
}
