//! A compressed-sparse-row matrix: a shared [`Pattern`] and one value per structural nonzero.
//! (Our own small type rather than `sprs`: the structure is computed once per handle and
//! shared by every result through an `Arc`, so filling a result allocates nothing and the
//! handle can check in O(1) that a result buffer already has the right structure.)

use crate::error::Error;
use jitdiff_ad::sparsity::Pattern;
use std::sync::Arc;

/// A sparse matrix in compressed-row form: the nonzeros of row `r` are at positions
/// `row_ptr()[r] .. row_ptr()[r + 1]` of `col_idx()` (ascending) and `values()`.
///
/// ```
/// use jitdiff::ad::sparsity::Pattern;
/// use jitdiff::sparse::CsrMatrix;
/// use std::sync::Arc;
/// let pattern = Arc::new(Pattern::from_rows(3, [vec![0, 2], vec![1]]));
/// let m = CsrMatrix::new(pattern, vec![1.0, 2.0, 3.0]).unwrap();
/// assert_eq!((m.rows(), m.cols(), m.nnz()), (2, 3, 3));
/// assert_eq!(m.get(0, 2), 2.0);
/// assert_eq!(m.get(1, 0), 0.0); // a structural zero
/// assert_eq!(m.to_dense(), [1.0, 0.0, 2.0, 0.0, 3.0, 0.0]);
/// let mut y = [0.0; 2];
/// m.mul_vec(&[1.0, 1.0, 1.0], &mut y).unwrap();
/// assert_eq!(y, [3.0, 3.0]);
/// assert!(m.mul_vec(&[1.0, 1.0], &mut y).is_err()); // x needs one value per column
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CsrMatrix {
    pattern: Arc<Pattern>,
    values: Vec<f64>,
}

impl CsrMatrix {
    /// A matrix with structure `pattern` and `values` (one per nonzero, in pattern order); an
    /// [`Error::Pattern`] when the pattern fails [`Pattern::check`], an
    /// [`Error::MatrixShape`] when the number of values is not the pattern's.
    pub fn new(pattern: Arc<Pattern>, values: Vec<f64>) -> Result<CsrMatrix, Error> {
        pattern.check().map_err(Error::Pattern)?;
        if values.len() != pattern.nnz() {
            return Err(Error::MatrixShape {
                what: "the values (one per structural nonzero)",
                expected: pattern.nnz(),
                got: values.len(),
                rows: pattern.rows,
                cols: pattern.cols,
            });
        }
        Ok(CsrMatrix { pattern, values })
    }

    /// Zeros in the structure `pattern`.
    pub fn zeros(pattern: Arc<Pattern>) -> CsrMatrix {
        let values = vec![0.0; pattern.nnz()];
        CsrMatrix { pattern, values }
    }

    /// Reuse this matrix's storage for `pattern` (no allocation when it already has it).
    pub(crate) fn reshape(&mut self, pattern: &Arc<Pattern>) {
        if !Arc::ptr_eq(&self.pattern, pattern) {
            self.pattern = pattern.clone();
        }
        self.values.resize(pattern.nnz(), 0.0);
    }

    /// The structure.
    pub fn pattern(&self) -> &Arc<Pattern> {
        &self.pattern
    }
    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.pattern.rows
    }
    /// Number of columns.
    pub fn cols(&self) -> usize {
        self.pattern.cols
    }
    /// Number of structural nonzeros.
    pub fn nnz(&self) -> usize {
        self.values.len()
    }
    /// Row offsets (`rows() + 1` of them).
    pub fn row_ptr(&self) -> &[usize] {
        &self.pattern.row_ptr
    }
    /// Column of each nonzero.
    pub fn col_idx(&self) -> &[usize] {
        &self.pattern.col_idx
    }
    /// Value of each nonzero.
    pub fn values(&self) -> &[f64] {
        &self.values
    }
    /// Values, mutably (the structure stays).
    pub fn values_mut(&mut self) -> &mut [f64] {
        &mut self.values
    }
    /// The columns and values of row `r`.
    ///
    /// # Panics
    /// If `r >= rows()`, as indexing a slice out of bounds does.
    pub fn row(&self, r: usize) -> (&[usize], &[f64]) {
        let range = self.pattern.row_ptr[r]..self.pattern.row_ptr[r + 1];
        (&self.pattern.col_idx[range.clone()], &self.values[range])
    }
    /// Entry `(r, c)`: its value, or 0 for a structural zero.
    ///
    /// # Panics
    /// If `r >= rows()`, as indexing a slice out of bounds does.
    pub fn get(&self, r: usize, c: usize) -> f64 {
        let (cols, values) = self.row(r);
        cols.binary_search(&c).map_or(0.0, |k| values[k])
    }
    /// The dense matrix, row-major.
    pub fn to_dense(&self) -> Vec<f64> {
        let n = self.cols();
        let mut dense = vec![0.0; self.rows() * n];
        for r in 0..self.rows() {
            let (cols, values) = self.row(r);
            for (&c, &v) in cols.iter().zip(values) {
                dense[r * n + c] = v;
            }
        }
        dense
    }
    /// `y = A x`; an [`Error::MatrixShape`] unless `x` has a value per column and `y` one per
    /// row. A row without nonzeros gives `+0.0`.
    pub fn mul_vec(&self, x: &[f64], y: &mut [f64]) -> Result<(), Error> {
        let (rows, cols) = (self.rows(), self.cols());
        for (what, expected, got) in
            [("x (one value per column)", cols, x.len()), ("y (one value per row)", rows, y.len())]
        {
            if got != expected {
                return Err(Error::MatrixShape { what, expected, got, rows, cols });
            }
        }
        for (r, out) in y.iter_mut().enumerate() {
            let (columns, values) = self.row(r);
            // A fold from +0.0: `Iterator::sum` of no terms is -0.0.
            *out = columns.iter().zip(values).fold(0.0, |acc, (&c, &v)| acc + v * x[c]);
        }
        Ok(())
    }
}
