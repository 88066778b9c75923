//! Graph colorings that compress sparse derivatives (Gebremedhin, Manne and Pothen, "What color
//! is your Jacobian?", SIAM Review 47(4), 2005).
//!
//! - [`column_coloring`]: a partial distance-2 coloring of the columns of a Jacobian pattern —
//!   columns that share a row get different colours — so one forward sweep per colour, seeded
//!   with the sum of the colour's unit vectors, gives every nonzero of those columns directly.
//! - [`star_coloring`]: a star coloring of the adjacency graph of a symmetric (Hessian) pattern —
//!   a distance-1 coloring in which every path on four vertices uses at least three colours — so
//!   one Hessian-vector product per colour gives every nonzero directly ([`star_recovery`] says
//!   where each one is read).
//!
//! Both are greedy in largest-first order (ties by index).
//!
//! The functions take a pattern that passes [`Pattern::check`] (square for the star
//! colourings) and, to recover entries, a colouring of that same pattern; given anything else
//! they panic, as indexing out of bounds does (see each function's `# Panics`). The patterns
//! jitdiff detects always qualify.
//!
//! ```
//! use jitdiff_ad::coloring::{column_coloring, star_coloring};
//! use jitdiff_ad::sparsity::Pattern;
//! // A tridiagonal 6 × 6 pattern.
//! let tri = Pattern::from_rows(6, (0..6usize).map(|i| (i.saturating_sub(1)..(i + 2).min(6)).collect::<Vec<_>>()));
//! assert_eq!(column_coloring(&tri).count, 3);
//! assert_eq!(star_coloring(&tri).count, 3);
//! ```

use crate::sparsity::Pattern;

/// A colour per vertex (column), `0 .. count`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Coloring {
    /// The colour of each column.
    pub colors: Vec<usize>,
    /// Number of colours.
    pub count: usize,
}

impl Coloring {
    /// The columns of each colour, in ascending order.
    ///
    /// ```
    /// use jitdiff_ad::coloring::Coloring;
    /// let c = Coloring { colors: vec![0, 1, 0], count: 2 };
    /// assert_eq!(c.groups(), vec![vec![0, 2], vec![1]]);
    /// ```
    pub fn groups(&self) -> Vec<Vec<usize>> {
        // A colour at or past `count` (the fields are public) gets its group too.
        let count = self.colors.iter().map(|&c| c + 1).max().unwrap_or(0).max(self.count);
        let mut groups = vec![vec![]; count];
        for (v, &c) in self.colors.iter().enumerate() {
            groups[c].push(v);
        }
        groups
    }
}

const NONE: usize = usize::MAX;

/// `0 .. n` by decreasing `degree`, ties by index (a stable counting sort).
fn largest_first(degree: &[usize]) -> Vec<usize> {
    let max = degree.iter().copied().max().unwrap_or(0);
    let mut start = vec![0usize; max + 2];
    for &d in degree {
        start[max - d + 1] += 1;
    }
    for k in 0..=max {
        start[k + 1] += start[k];
    }
    let mut order = vec![0; degree.len()];
    for (v, &d) in degree.iter().enumerate() {
        order[start[max - d]] = v;
        start[max - d] += 1;
    }
    order
}

/// The smallest colour not marked `stamp` in `forbidden` (grown as needed).
fn first_free(forbidden: &mut Vec<usize>, stamp: usize) -> usize {
    match forbidden.iter().position(|&f| f != stamp) {
        Some(c) => c,
        None => {
            forbidden.push(NONE);
            forbidden.len() - 1
        }
    }
}

/// A partial distance-2 coloring of the columns of `pattern` (rows × columns): two columns with
/// a nonzero in the same row get different colours. Columns are taken in decreasing order of
/// `Σ` over their rows of the row's length (a bound on their distance-2 degree).
///
/// ```
/// use jitdiff_ad::coloring::{column_coloring, is_column_coloring};
/// use jitdiff_ad::sparsity::Pattern;
/// // Diagonal plus a dense last row: the last row forces every column apart.
/// let p = Pattern::from_rows(3, [vec![0], vec![1], vec![0, 1, 2]]);
/// let c = column_coloring(&p);
/// assert_eq!(c.count, 3);
/// assert!(is_column_coloring(&p, &c));
/// ```
///
/// # Panics
/// If `pattern` fails [`Pattern::check`].
pub fn column_coloring(pattern: &Pattern) -> Coloring {
    let n = pattern.cols;
    // A full row puts every column in its own colour: no need to look further.
    if (0..pattern.rows).any(|r| pattern.row(r).len() == n) {
        return Coloring { colors: (0..n).collect(), count: n };
    }
    let columns = pattern.transpose();
    let degree: Vec<usize> = (0..n).map(|j| columns.row(j).iter().map(|&r| pattern.row(r).len()).sum()).collect();
    let mut colors = vec![NONE; n];
    let mut forbidden: Vec<usize> = vec![];
    let mut count = 0;
    for j in largest_first(&degree) {
        for &r in columns.row(j) {
            for &k in pattern.row(r) {
                if colors[k] != NONE {
                    forbidden[colors[k]] = j;
                }
            }
        }
        let c = first_free(&mut forbidden, j);
        colors[j] = c;
        count = count.max(c + 1);
    }
    Coloring { colors, count }
}

/// Is `coloring` a valid column coloring of `pattern` (no two columns of one row share a colour)?
pub fn is_column_coloring(pattern: &Pattern, coloring: &Coloring) -> bool {
    let mut seen = vec![NONE; coloring.count];
    coloring.colors.len() == pattern.cols
        && coloring.colors.iter().all(|&c| c < coloring.count)
        && (0..pattern.rows)
            .all(|r| pattern.row(r).iter().all(|&k| std::mem::replace(&mut seen[coloring.colors[k]], r) != r))
}

/// A star coloring of the adjacency graph of the symmetric pattern `pattern` (vertices are the
/// rows; the diagonal is ignored), by Gebremedhin, Manne and Pothen's greedy algorithm
/// (2005, Algorithm 4.1) in largest-first order. The pattern must be square and symmetric.
///
/// ```
/// use jitdiff_ad::coloring::{is_star_coloring, star_coloring};
/// use jitdiff_ad::sparsity::Pattern;
/// // An arrowhead: a dense first row and column and the diagonal.
/// let n = 8;
/// let p = Pattern::from_rows(n, (0..n).map(|i| if i == 0 { (0..n).collect() } else { vec![0, i] }));
/// let c = star_coloring(&p);
/// assert!(c.count <= 3 && is_star_coloring(&p, &c));
/// ```
///
/// # Panics
/// If `pattern` fails [`Pattern::check`] or is not square.
pub fn star_coloring(pattern: &Pattern) -> Coloring {
    let n = pattern.rows;
    let neighbours = |v: usize| pattern.row(v).iter().copied().filter(move |&w| w != v);
    let degree: Vec<usize> = (0..n).map(|v| neighbours(v).count()).collect();
    let mut colors = vec![NONE; n];
    let mut forbidden: Vec<usize> = vec![];
    let mut count = 0;
    for v in largest_first(&degree) {
        for w in neighbours(v) {
            let cw = colors[w];
            if cw != NONE {
                forbidden[cw] = v;
            }
            for x in neighbours(w).filter(|&x| x != v) {
                let cx = colors[x];
                if cx == NONE {
                    continue;
                }
                if cw == NONE {
                    // v and x would be two vertices of one colour around an uncoloured w.
                    forbidden[cx] = v;
                } else if neighbours(x).any(|y| y != w && colors[y] == cw) {
                    // v-w-x-y would be a path on four vertices in two colours.
                    forbidden[cx] = v;
                }
            }
        }
        let c = first_free(&mut forbidden, v);
        colors[v] = c;
        count = count.max(c + 1);
    }
    Coloring { colors, count }
}

/// Is `coloring` a star coloring of the adjacency graph of `pattern`: a distance-1 coloring in
/// which every path on four vertices uses at least three colours? (Equivalently: when a vertex
/// has two neighbours of one colour, those neighbours have no other neighbour of its colour.)
pub fn is_star_coloring(pattern: &Pattern, coloring: &Coloring) -> bool {
    let n = pattern.rows;
    let color = &coloring.colors;
    if color.len() != n || color.iter().any(|&c| c >= coloring.count) {
        return false;
    }
    let neighbours = |v: usize| pattern.row(v).iter().copied().filter(move |&w| w != v);
    let mut count = vec![0usize; coloring.count];
    for v in 0..n {
        if neighbours(v).any(|w| color[w] == color[v]) {
            return false;
        }
        neighbours(v).for_each(|w| count[color[w]] += 1);
        for w in neighbours(v) {
            if count[color[w]] >= 2 && neighbours(w).any(|y| y != v && color[y] == color[v]) {
                return false;
            }
        }
        neighbours(v).for_each(|w| count[color[w]] = 0);
    }
    true
}

/// Where each nonzero of a symmetric matrix with pattern `pattern` is read off the compressed
/// product `B = H S` of a star coloring (`S` has a column per colour, the sum of that colour's
/// unit vectors): for the `k`-th nonzero `(i, j)` in pattern order, `(r, c)` with
/// `H[i][j] = B[r][c]` — `(i, colour(j))` when `j` is the only neighbour of `i` in its colour,
/// else `(j, colour(i))`, which the star property makes exact.
///
/// ```
/// use jitdiff_ad::coloring::{star_coloring, star_recovery};
/// use jitdiff_ad::sparsity::Pattern;
/// let p = Pattern::from_rows(2, [vec![0, 1], vec![0, 1]]);
/// let c = star_coloring(&p);
/// let at = star_recovery(&p, &c);
/// assert_eq!(at.len(), 4);
/// assert_eq!(at[0], (0, c.colors[0])); // a diagonal entry: its own row and colour
/// ```
///
/// # Panics
/// If `pattern` fails [`Pattern::check`] or `coloring` is not a colouring of it.
pub fn star_recovery(pattern: &Pattern, coloring: &Coloring) -> Vec<(usize, usize)> {
    let mut out = Vec::with_capacity(pattern.nnz());
    star_recovery_each(pattern, coloring, |_, row, color| out.push((row, color)));
    out
}

/// [`star_recovery`] without the vector: `each(k, r, c)` for the `k`-th nonzero, in pattern
/// order.
///
/// ```
/// use jitdiff_ad::coloring::{star_coloring, star_recovery, star_recovery_each};
/// use jitdiff_ad::sparsity::Pattern;
/// let p = Pattern::from_rows(3, [vec![0, 1], vec![0, 1, 2], vec![1, 2]]);
/// let c = star_coloring(&p);
/// let mut seen = vec![];
/// star_recovery_each(&p, &c, |k, r, col| seen.push((k, (r, col))));
/// assert!(seen.iter().map(|(_, at)| *at).eq(star_recovery(&p, &c)));
/// ```
///
/// # Panics
/// If `pattern` fails [`Pattern::check`] or `coloring` is not a colouring of it.
pub fn star_recovery_each(pattern: &Pattern, coloring: &Coloring, mut each: impl FnMut(usize, usize, usize)) {
    let color = &coloring.colors;
    let mut count = vec![0usize; coloring.count];
    for i in 0..pattern.rows {
        let row = pattern.row(i);
        row.iter().filter(|&&j| j != i).for_each(|&j| count[color[j]] += 1);
        for (k, &j) in (pattern.row_ptr[i]..).zip(row) {
            let (r, c) = if j == i || count[color[j]] == 1 { (i, color[j]) } else { (j, color[i]) };
            each(k, r, c);
        }
        row.iter().filter(|&&j| j != i).for_each(|&j| count[color[j]] = 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small xorshift generator (tests only).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    fn banded(n: usize, lower: usize, upper: usize) -> Pattern {
        Pattern::from_rows(n, (0..n).map(|i| (i.saturating_sub(lower)..(i + upper + 1).min(n)).collect::<Vec<_>>()))
    }

    fn arrowhead(n: usize) -> Pattern {
        Pattern::from_rows(n, (0..n).map(|i| if i == 0 { (0..n).collect() } else { vec![0, i] }))
    }

    fn random_symmetric(rng: &mut Rng, n: usize, edges: usize) -> Pattern {
        let mut rows = vec![vec![]; n];
        for (i, row) in rows.iter_mut().enumerate() {
            row.push(i);
        }
        for _ in 0..edges {
            let (i, j) = (rng.below(n), rng.below(n));
            rows[i].push(j);
            rows[j].push(i);
        }
        Pattern::from_rows(n, rows)
    }

    #[test]
    fn known_colour_counts() {
        // Banded Jacobians need bandwidth colours (and greedy finds that many).
        assert_eq!(column_coloring(&banded(100, 1, 1)).count, 3);
        assert_eq!(column_coloring(&banded(100, 2, 2)).count, 5);
        assert_eq!(column_coloring(&banded(100, 0, 0)).count, 1);
        // Chained Rosenbrock's Hessian is tridiagonal: a path, star chromatic number 3.
        assert_eq!(star_coloring(&banded(1000, 1, 1)).count, 3);
        // An arrowhead is a star: 2 colours.
        assert_eq!(star_coloring(&arrowhead(500)).count, 2);
        // A diagonal Hessian: 1.
        assert_eq!(star_coloring(&banded(10, 0, 0)).count, 1);
        // Pentadiagonal: at most 5 + a few (greedy), far below n.
        let penta = star_coloring(&banded(1000, 2, 2));
        assert!(penta.count <= 7, "{}", penta.count);
        // A dense row: every column apart.
        let mut rows: Vec<Vec<usize>> = (0..50).map(|i| vec![i]).collect();
        rows.push((0..50).collect());
        assert_eq!(column_coloring(&Pattern::from_rows(50, rows)).count, 50);
    }

    #[test]
    fn random_patterns_get_valid_colorings() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for case in 0..200 {
            let (m, n) = (1 + rng.below(40), 1 + rng.below(40));
            let density = 1 + rng.below(4);
            let rows: Vec<Vec<usize>> = (0..m).map(|_| (0..density).map(|_| rng.below(n)).collect()).collect();
            let p = Pattern::from_rows(n, rows);
            let c = column_coloring(&p);
            assert!(is_column_coloring(&p, &c), "case {case}: {p:?} {c:?}");
            assert!(c.count <= n);

            let edges = rng.below(3 * n);
            let s = random_symmetric(&mut rng, n, edges);
            let c = star_coloring(&s);
            assert!(is_star_coloring(&s, &c), "case {case}: {s:?} {c:?}");
            check_recovery(&mut rng, &s, &c);
        }
    }

    /// Compress a random symmetric matrix with the coloring and read every entry back.
    fn check_recovery(rng: &mut Rng, p: &Pattern, c: &Coloring) {
        let n = p.rows;
        let mut h = vec![0.0; n * n];
        for i in 0..n {
            for &j in p.row(i) {
                if j >= i {
                    let v = 1.0 + rng.below(1000) as f64;
                    h[i * n + j] = v;
                    h[j * n + i] = v;
                }
            }
        }
        // B = H S.
        let mut b = vec![0.0; n * c.count];
        for i in 0..n {
            for k in 0..n {
                b[i * c.count + c.colors[k]] += h[i * n + k];
            }
        }
        let at = star_recovery(p, c);
        let mut k = 0;
        for i in 0..n {
            for &j in p.row(i) {
                let (r, col) = at[k];
                assert_eq!(b[r * c.count + col], h[i * n + j], "entry ({i}, {j})");
                k += 1;
            }
        }
    }

    #[test]
    fn invalid_colorings_are_caught() {
        let path = banded(4, 1, 1);
        // 0-1-2-3 coloured a b a b: a two-coloured path on four vertices.
        let two = Coloring { colors: vec![0, 1, 0, 1], count: 2 };
        assert!(!is_star_coloring(&path, &two));
        let clash = Coloring { colors: vec![0, 0, 1, 2], count: 3 };
        assert!(!is_star_coloring(&path, &clash));
        assert!(!is_column_coloring(&path, &clash));
        assert!(is_star_coloring(&path, &Coloring { colors: vec![0, 1, 0, 2], count: 3 }));
    }
}
