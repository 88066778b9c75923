//! Sparsity detection: which outputs depend on which inputs (the Jacobian pattern), and which
//! pairs of inputs interact nonlinearly in the first `f64` result (the Hessian pattern).
//!
//! The analysis runs the function on concrete arguments in an abstract interpreter that executes
//! control flow and integer arithmetic exactly and carries, with every `f64`, the set of inputs
//! it depends on (see `sparsity/exec.rs` for the rules). So it is exact wherever loads and stores
//! are at indices that do not depend on the inputs — affine in loop counters or computed from
//! integer arguments and data alike — and conservative elsewhere: a branch on the inputs runs both
//! sides and merges them, a load or store at an index that depends on the inputs touches the
//! whole slice. A loop whose trip count depends on the inputs is refused with an error naming it.
//!
//! The pattern holds for every value of the inputs with the same shapes (slice lengths), the same
//! integer and boolean arguments and — when [`Sparsity::depends_on_data`] says so — the same
//! values of the `f64` arguments that are not differentiated.
//!
//! *Inputs* and *outputs* are those of `docs/api.md`: the inputs are the differentiated scalars
//! (each differentiated `f64` parameter and each element of each differentiated slice, in
//! parameter order); the outputs are the `f64` results, then the final contents of every
//! `mslice` parameter.
//!
//! ```
//! use jitdiff_ad::sparsity::{ProbeArg, SparsityDetector};
//! use jitdiff_ir::parse_module;
//! // out[i] = x[i] * x[i + 1]
//! let m = parse_module("func @f(x: slice, out: mslice) {
//! entry:
//!     n = len out
//!     zero = iconst 0
//!     one = iconst 1
//!     jump head(zero)
//! head(i: i64):
//!     more = icmp lt i, n
//!     br more, body, done
//! body:
//!     a = load x, i
//!     j = iadd i, one
//!     b = load x, j
//!     p = fmul a, b
//!     store out, i, p
//!     jump head(j)
//! done:
//!     ret
//! }").unwrap();
//! let (x, out) = ([1.0; 4], [0.0; 3]);
//! let found = SparsityDetector::new(&m, "f", &[true, false])
//!     .run(&[ProbeArg::Slice(&x), ProbeArg::Slice(&out)])
//!     .unwrap();
//! let jacobian = found.jacobian.unwrap();
//! assert_eq!(jacobian.row(0), &[0, 1]);
//! assert_eq!(jacobian.row(2), &[2, 3]);
//! assert_eq!(jacobian.nnz(), 6);
//! ```

mod exec;
mod sets;

use exec::{DATA, MUTABLE_DATA, Machine, Slot, Stop, VARIES};
use jitdiff_ir::{ExternRegistry, Fault, Module, Site, Type, VerifyError};
use sets::{EMPTY, Sets};

/// A sparsity pattern in compressed-row form: the columns of row `r` are
/// `col_idx[row_ptr[r] .. row_ptr[r + 1]]`, ascending.
///
/// ```
/// use jitdiff_ad::sparsity::Pattern;
/// let p = Pattern::from_rows(3, [vec![2, 0], vec![], vec![1, 1]]);
/// assert_eq!((p.rows, p.cols, p.nnz()), (3, 3, 3));
/// assert_eq!(p.row(0), &[0, 2]);
/// assert!(p.contains(2, 1) && !p.contains(1, 1));
/// assert_eq!(p.transpose().row(1), &[2]);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pattern {
    /// Number of rows.
    pub rows: usize,
    /// Number of columns.
    pub cols: usize,
    /// `rows + 1` offsets into `col_idx`.
    pub row_ptr: Vec<usize>,
    /// Column indices, ascending within each row.
    pub col_idx: Vec<usize>,
}

impl Pattern {
    /// A pattern from the columns of each row (sorted and deduplicated here). A column at or
    /// beyond `cols` makes a pattern that [`Pattern::check`] refuses.
    pub fn from_rows<R: IntoIterator<Item = usize>>(cols: usize, rows: impl IntoIterator<Item = R>) -> Pattern {
        let mut p = Pattern { rows: 0, cols, row_ptr: vec![0], col_idx: vec![] };
        for row in rows {
            let start = p.col_idx.len();
            p.col_idx.extend(row);
            p.col_idx[start..].sort_unstable();
            let mut kept = start;
            for k in start..p.col_idx.len() {
                if kept == start || p.col_idx[k] != p.col_idx[kept - 1] {
                    p.col_idx[kept] = p.col_idx[k];
                    kept += 1;
                }
            }
            p.col_idx.truncate(kept);
            p.row_ptr.push(kept);
            p.rows += 1;
        }
        p
    }

    /// Number of structural nonzeros.
    pub fn nnz(&self) -> usize {
        self.col_idx.len()
    }

    /// Is the pattern consistent — `rows + 1` offsets from 0, non-decreasing, ending at
    /// `nnz()`; every column below `cols`; columns ascending within a row? What is wrong
    /// otherwise. The fields are public, so a pattern built by hand may not be; the patterns
    /// jitdiff detects always are.
    ///
    /// ```
    /// use jitdiff_ad::sparsity::Pattern;
    /// assert!(Pattern::from_rows(3, [vec![0, 2], vec![1]]).check().is_ok());
    /// let wide = Pattern::from_rows(2, [vec![5]]);
    /// assert_eq!(wide.check().unwrap_err(), "row 0 has column 5, but the pattern has 2 columns");
    /// ```
    pub fn check(&self) -> Result<(), String> {
        if self.row_ptr.len() != self.rows + 1 || self.row_ptr.first() != Some(&0) {
            return Err(format!("{} rows need {} row offsets starting at 0", self.rows, self.rows + 1));
        }
        if self.row_ptr.last() != Some(&self.col_idx.len()) {
            return Err(format!("the last row offset must be the number of nonzeros, {}", self.col_idx.len()));
        }
        for r in 0..self.rows {
            let (start, end) = (self.row_ptr[r], self.row_ptr[r + 1]);
            if start > end {
                return Err(format!("the row offsets decrease at row {r}"));
            }
            let columns = &self.col_idx[start..end];
            if let Some(&c) = columns.iter().find(|&&c| c >= self.cols) {
                return Err(format!("row {r} has column {c}, but the pattern has {} columns", self.cols));
            }
            if columns.windows(2).any(|w| w[0] >= w[1]) {
                return Err(format!("the columns of row {r} are not strictly ascending"));
            }
        }
        Ok(())
    }

    /// The columns of row `r`.
    pub fn row(&self, r: usize) -> &[usize] {
        &self.col_idx[self.row_ptr[r]..self.row_ptr[r + 1]]
    }

    /// Is `(r, c)` a structural nonzero?
    pub fn contains(&self, r: usize, c: usize) -> bool {
        r < self.rows && self.row(r).binary_search(&c).is_ok()
    }

    /// The transposed pattern (columns become rows).
    pub fn transpose(&self) -> Pattern {
        let mut count = vec![0usize; self.cols + 1];
        for &c in &self.col_idx {
            count[c + 1] += 1;
        }
        for c in 0..self.cols {
            count[c + 1] += count[c];
        }
        let row_ptr = count.clone();
        let mut col_idx = vec![0; self.nnz()];
        for r in 0..self.rows {
            for &c in self.row(r) {
                col_idx[count[c]] = r;
                count[c] += 1;
            }
        }
        Pattern { rows: self.cols, cols: self.rows, row_ptr, col_idx }
    }
}

/// An argument of the analysed call, borrowed: the analysis works on its own copies.
#[derive(Clone, Copy, Debug)]
pub enum ProbeArg<'a> {
    /// An `f64`.
    F64(f64),
    /// An `i64`.
    I64(i64),
    /// A `bool`.
    Bool(bool),
    /// A `slice` or `mslice` (its initial contents).
    Slice(&'a [f64]),
}

/// What [`SparsityDetector::run`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sparsity {
    /// Outputs × inputs (unless turned off with [`SparsityDetector::jacobian`]).
    pub jacobian: Option<Pattern>,
    /// Inputs × inputs, symmetric: the Hessian of the first `f64` result, when asked for.
    pub hessian: Option<Pattern>,
    /// Some decision (a branch, an index, a `select`) depended on the values of `f64` arguments
    /// that are not differentiated: the pattern holds for those values only.
    pub depends_on_data: bool,
    /// Among those, the initial contents of an `mslice` argument (not differentiated) that the
    /// function read before writing: a caller keying a pattern on its data must include them.
    pub depends_on_mutable_data: bool,
}

/// Why sparsity detection failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SparsityError {
    /// No function of that name.
    #[error("no function @{0} in the module")]
    UnknownFunction(String),
    /// The module does not verify.
    #[error("the module does not verify: {0}")]
    Verify(Box<VerifyError>),
    /// The arguments or the differentiation flags do not fit the signature.
    #[error("@{function}: {message}")]
    Arguments {
        /// The function.
        function: String,
        /// What does not fit.
        message: String,
    },
    /// The function faults at these arguments.
    #[error(transparent)]
    Fault(Box<Fault>),
    /// Something the analysis does not handle, at the user's instruction.
    #[error("{message}, at {site}")]
    Unsupported {
        /// Where.
        site: Site,
        /// What.
        message: String,
    },
    /// A Hessian pattern was asked for a function without an `f64` result.
    #[error("@{0} returns no f64 result, so it has no Hessian")]
    NoFloatResult(String),
    /// The pattern has more nonzeros than the limit ([`SparsityDetector::max_nonzeros`]).
    #[error(
        "the {what} of @{function} has more than {limit} structural nonzeros: it is (nearly) dense; use the dense route"
    )]
    TooDense {
        /// The function.
        function: String,
        /// `Jacobian` or `Hessian`.
        what: &'static str,
        /// The limit.
        limit: usize,
    },
    /// A bug in the analysis.
    #[error("internal error in sparsity detection: {0} (a bug in jitdiff; please report it with the IR)")]
    Internal(String),
}

/// Sparsity detection for one function and one choice of differentiated parameters.
///
/// ```
/// use jitdiff_ad::sparsity::{ProbeArg, SparsityDetector};
/// use jitdiff_ir::parse_module;
/// // f(x, y, z) = sin(x * y) + z: H has (x,x), (x,y), (y,y) and (y,x); z enters linearly.
/// let m = parse_module("func @f(x: f64, y: f64, z: f64) -> f64 {
/// entry:
///     p = fmul x, y
///     s = sin p
///     r = fadd s, z
///     ret r
/// }").unwrap();
/// let found = SparsityDetector::new(&m, "f", &[true; 3]).hessian(true)
///     .run(&[ProbeArg::F64(1.0), ProbeArg::F64(2.0), ProbeArg::F64(3.0)])
///     .unwrap();
/// let h = found.hessian.unwrap();
/// assert_eq!((h.row(0), h.row(1), h.row(2)), (&[0, 1][..], &[0, 1][..], &[][..]));
/// assert_eq!(found.jacobian.unwrap().row(0), &[0, 1, 2]);
/// ```
#[derive(Clone, Debug)]
pub struct SparsityDetector<'a> {
    module: &'a Module,
    function: String,
    wrt: Vec<bool>,
    externs: Option<&'a ExternRegistry>,
    opaque: Vec<String>,
    jacobian: bool,
    hessian: bool,
    limit: usize,
}

impl<'a> SparsityDetector<'a> {
    /// Detection for `@function` of `module`, differentiating the parameters flagged in `wrt`
    /// (one flag per parameter; `f64`, `slice` and `mslice` parameters only).
    pub fn new(module: &'a Module, function: &str, wrt: &[bool]) -> SparsityDetector<'a> {
        SparsityDetector {
            module,
            function: function.into(),
            wrt: wrt.to_vec(),
            externs: None,
            opaque: vec![],
            jacobian: true,
            hessian: false,
            limit: 50_000_000,
        }
    }

    /// The implementations of the module's externs (they are called on the concrete values;
    /// each result depends on every argument).
    pub fn externs(mut self, externs: &'a ExternRegistry) -> Self {
        self.externs = Some(externs);
        self
    }

    /// Functions to treat as opaque (those with custom rules, whose derivatives are the rule's):
    /// each result depends on every argument, nonlinearly.
    pub fn opaque<S: Into<String>>(mut self, functions: impl IntoIterator<Item = S>) -> Self {
        self.opaque = functions.into_iter().map(Into::into).collect();
        self
    }

    /// Find the Jacobian pattern (on by default; a Hessian alone is found faster without it).
    pub fn jacobian(mut self, on: bool) -> Self {
        self.jacobian = on;
        self
    }

    /// Also find the Hessian pattern of the first `f64` result.
    pub fn hessian(mut self, on: bool) -> Self {
        self.hessian = on;
        self
    }

    /// Fail with [`SparsityError::TooDense`] beyond this many nonzeros in either pattern
    /// (default 50 million).
    pub fn max_nonzeros(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// Run the function on `args` and read off the patterns.
    pub fn run(&self, args: &[ProbeArg<'_>]) -> Result<Sparsity, SparsityError> {
        let module = self.module;
        let fid =
            module.func_id(&self.function).ok_or_else(|| SparsityError::UnknownFunction(self.function.clone()))?;
        jitdiff_ir::verify_module(module).map_err(|e| SparsityError::Verify(Box::new(e)))?;
        let func = module.func(fid);
        let params = func.param_types();
        let bad = |message: String| SparsityError::Arguments { function: self.function.clone(), message };
        if self.wrt.len() != params.len() {
            return Err(bad(format!("{} differentiation flag(s) for {} parameter(s)", self.wrt.len(), params.len())));
        }
        if args.len() != params.len() {
            return Err(bad(format!("{} argument(s) for {} parameter(s)", args.len(), params.len())));
        }
        let mut inputs = 0;
        for (p, (a, &ty)) in args.iter().zip(&params).enumerate() {
            let fits = matches!(
                (a, ty),
                (ProbeArg::F64(_), Type::F64)
                    | (ProbeArg::I64(_), Type::I64)
                    | (ProbeArg::Bool(_), Type::Bool)
                    | (ProbeArg::Slice(_), Type::Slice | Type::SliceMut)
            );
            if !fits {
                return Err(bad(format!("argument {p} does not fit its parameter of type {ty}")));
            }
            if self.wrt[p] {
                inputs += match a {
                    ProbeArg::F64(_) => 1,
                    ProbeArg::Slice(s) => s.len(),
                    _ => return Err(bad(format!("parameter {p} has type {ty}, which cannot be differentiated"))),
                };
            }
        }
        let mut machine = Machine::new(module, self.externs, &self.opaque, inputs, self.hessian);
        let mut next_input = 0;
        let mut slots = Vec::with_capacity(args.len());
        let mut mslices = vec![];
        for (p, a) in args.iter().enumerate() {
            let on = self.wrt[p];
            let data = if params[p] == Type::SliceMut { MUTABLE_DATA } else { DATA };
            let input = |k: usize| if on { (Sets::singleton(k), VARIES) } else { (EMPTY, data) };
            slots.push(match *a {
                ProbeArg::F64(x) => {
                    let (set, flags) = input(next_input);
                    next_input += usize::from(on);
                    Slot { bits: x.to_bits(), set, flags }
                }
                ProbeArg::I64(x) => Slot { bits: x as u64, set: EMPTY, flags: 0 },
                ProbeArg::Bool(x) => Slot { bits: u64::from(x), set: EMPTY, flags: 0 },
                ProbeArg::Slice(s) => {
                    let contents = s
                        .iter()
                        .enumerate()
                        .map(|(e, x)| {
                            let (set, flags) = input(next_input + e);
                            Slot { bits: x.to_bits(), set, flags }
                        })
                        .collect();
                    if on {
                        next_input += s.len();
                    }
                    let id = machine.new_array(contents);
                    if params[p] == Type::SliceMut {
                        mslices.push(id);
                    }
                    Slot { bits: u64::from(id), set: EMPTY, flags: 0 }
                }
            });
        }
        let results = machine.call_entry(fid.index(), &slots).map_err(|stop| match stop {
            Stop::Fault(f) => SparsityError::Fault(Box::new(f)),
            Stop::Error(e) => e,
        })?;
        let too_dense = |what| SparsityError::TooDense { function: self.function.clone(), what, limit: self.limit };
        // The Jacobian: one row per f64 result, then per element of every mslice.
        let float_results: Vec<Slot> =
            results.iter().zip(&func.returns).filter(|(_, t)| **t == Type::F64).map(|(s, _)| *s).collect();
        let jacobian = if self.jacobian {
            let mut rows = float_results.iter().map(|s| s.set).collect::<Vec<_>>();
            for &id in &mslices {
                rows.extend(machine.arrays[id as usize].slots.iter().map(|s| s.set));
            }
            let mut jacobian = Pattern { rows: rows.len(), cols: inputs, row_ptr: vec![0], col_idx: vec![] };
            let mut buffer = vec![];
            for set in rows {
                machine.sets.collect(set, &mut buffer);
                jacobian.col_idx.extend(buffer.iter().map(|&k| k as usize));
                jacobian.row_ptr.push(jacobian.col_idx.len());
                if jacobian.col_idx.len() > self.limit {
                    return Err(too_dense("Jacobian"));
                }
            }
            Some(jacobian)
        } else {
            None
        };
        let hessian = match machine.pairs.take() {
            None => None,
            Some(_) if float_results.is_empty() => return Err(SparsityError::NoFloatResult(self.function.clone())),
            Some(pairs) => Some(
                hessian_pattern(&mut machine.sets, &pairs, inputs, self.limit).ok_or_else(|| too_dense("Hessian"))?,
            ),
        };
        Ok(Sparsity {
            jacobian,
            hessian,
            depends_on_data: machine.depends_on_data,
            depends_on_mutable_data: machine.depends_on_mutable_data,
        })
    }
}

/// The symmetric pattern of every recorded interaction `A × B` (and `B × A`); `None` beyond
/// `limit` entries.
fn hessian_pattern(sets: &mut Sets, pairs: &[(sets::SetId, sets::SetId)], n: usize, limit: usize) -> Option<Pattern> {
    // The upper triangle (i <= j) of every product, bucketed by row, then mirrored.
    let mut entries: Vec<(u32, u32)> = Vec::with_capacity(2 * pairs.len());
    let (mut a, mut b) = (vec![], vec![]);
    // Interactions recur from one loop iteration to the next: a small direct-mapped cache of
    // recent entries drops most repeats before they are stored.
    let mut recent = [(u32::MAX, u32::MAX); 64];
    let mut add = |x: &[u32], y: &[u32], entries: &mut Vec<(u32, u32)>| {
        if entries.len() + x.len() * y.len() > limit {
            return false;
        }
        let same = x == y;
        for (k, &i) in x.iter().enumerate() {
            // For A × A only the upper triangle: pairs (x[k], x[l]) with l >= k.
            let ys = if same { &y[k..] } else { y };
            for &j in ys {
                let entry = (i.min(j), i.max(j));
                let slot = &mut recent[((entry.0 ^ entry.1.rotate_left(3)) & 63) as usize];
                if *slot != entry {
                    *slot = entry;
                    entries.push(entry);
                }
            }
        }
        true
    };
    for &(x, y) in pairs {
        let fits = match (sets.as_slice(x), sets.as_slice(y)) {
            (Some(xs), Some(ys)) => add(xs, ys, &mut entries),
            _ => {
                sets.collect(x, &mut a);
                sets.collect(y, &mut b);
                add(&a, &b, &mut entries)
            }
        };
        if !fits {
            return None;
        }
    }
    // Count both triangles per row, fill, then sort and deduplicate each (short) row.
    let mut row_ptr = vec![0usize; n + 1];
    for &(i, j) in &entries {
        row_ptr[i as usize + 1] += 1;
        if i != j {
            row_ptr[j as usize + 1] += 1;
        }
    }
    for i in 0..n {
        row_ptr[i + 1] += row_ptr[i];
    }
    let mut fill = row_ptr.clone();
    let mut cols = vec![0u32; row_ptr[n]];
    for &(i, j) in &entries {
        cols[fill[i as usize]] = j;
        fill[i as usize] += 1;
        if i != j {
            cols[fill[j as usize]] = i;
            fill[j as usize] += 1;
        }
    }
    drop(entries);
    let mut out =
        Pattern { rows: n, cols: n, row_ptr: Vec::with_capacity(n + 1), col_idx: Vec::with_capacity(cols.len() / 2) };
    out.row_ptr.push(0);
    for i in 0..n {
        let row = &mut cols[row_ptr[i]..row_ptr[i + 1]];
        row.sort_unstable();
        let start = out.col_idx.len();
        for &j in row.iter() {
            if out.col_idx.len() == start || *out.col_idx.last().expect("nonempty") != j as usize {
                out.col_idx.push(j as usize);
            }
        }
        out.row_ptr.push(out.col_idx.len());
    }
    (out.nnz() <= limit).then_some(out)
}

#[cfg(test)]
mod tests;
