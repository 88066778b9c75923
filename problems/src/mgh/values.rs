//! Plain-Rust values of the Moré–Garbow–Hillstrom problems: `F(x)`, the sum of squared residuals,
//! computed in the operation order of the IR under `problems/ir/mgh/`, so that the two agree to
//! rounding (the tests check it). Fixed-size problems read the first `n` entries of `x` (and panic
//! on a shorter slice, as the IR faults); the others take `n` from `x.len()`.

/// Bard's data `y_i`, i = 1 .. 15.
pub const BARD_Y: [f64; 15] =
    [0.14, 0.18, 0.22, 0.25, 0.29, 0.32, 0.35, 0.39, 0.37, 0.58, 0.73, 0.96, 1.34, 2.10, 4.39];
/// The Gaussian problem's data `y_i`, i = 1 .. 15.
pub const GAUSSIAN_Y: [f64; 15] = [
    0.0009, 0.0044, 0.0175, 0.0540, 0.1295, 0.2420, 0.3521, 0.3989, 0.3521, 0.2420, 0.1295, 0.0540, 0.0175, 0.0044,
    0.0009,
];
/// Meyer's data `y_i`, i = 1 .. 16.
pub const MEYER_Y: [f64; 16] = [
    34780.0, 28610.0, 23650.0, 19630.0, 16370.0, 13720.0, 11540.0, 9744.0, 8261.0, 7030.0, 6005.0, 5147.0, 4427.0,
    3820.0, 3307.0, 2872.0,
];
/// Kowalik and Osborne's data `y_i`, i = 1 .. 11.
pub const KOWALIK_Y: [f64; 11] =
    [0.1957, 0.1947, 0.1735, 0.1600, 0.0844, 0.0627, 0.0456, 0.0342, 0.0323, 0.0235, 0.0246];
/// Kowalik and Osborne's data `u_i`, i = 1 .. 11.
pub const KOWALIK_U: [f64; 11] = [4.0, 2.0, 1.0, 0.5, 0.25, 0.167, 0.125, 0.1, 0.0833, 0.0714, 0.0625];
/// Osborne 1's data `y_i`, i = 1 .. 33.
pub const OSBORNE1_Y: [f64; 33] = [
    0.844, 0.908, 0.932, 0.936, 0.925, 0.908, 0.881, 0.850, 0.818, 0.784, 0.751, 0.718, 0.685, 0.658, 0.628, 0.603,
    0.580, 0.558, 0.538, 0.522, 0.506, 0.490, 0.478, 0.467, 0.457, 0.448, 0.438, 0.431, 0.424, 0.420, 0.414, 0.411,
    0.406,
];
/// Osborne 2's data `y_i`, i = 1 .. 65.
pub const OSBORNE2_Y: [f64; 65] = [
    1.366, 1.191, 1.112, 1.013, 0.991, 0.885, 0.831, 0.847, 0.786, 0.725, 0.746, 0.679, 0.608, 0.655, 0.616, 0.606,
    0.602, 0.626, 0.651, 0.724, 0.649, 0.649, 0.694, 0.644, 0.624, 0.661, 0.612, 0.558, 0.533, 0.495, 0.500, 0.423,
    0.395, 0.375, 0.372, 0.391, 0.396, 0.405, 0.428, 0.429, 0.523, 0.562, 0.607, 0.653, 0.672, 0.708, 0.633, 0.668,
    0.645, 0.632, 0.591, 0.559, 0.597, 0.625, 0.739, 0.710, 0.729, 0.720, 0.636, 0.581, 0.428, 0.292, 0.162, 0.098,
    0.054,
];

fn sq(v: f64) -> f64 {
    v * v
}

/// MGH 1, Rosenbrock.
pub fn rosenbrock(x: &[f64]) -> f64 {
    let f1 = 10.0 * (x[1] - x[0] * x[0]);
    let f2 = 1.0 - x[0];
    sq(f1) + sq(f2)
}

/// MGH 2, Freudenstein and Roth.
pub fn freudenstein_roth(x: &[f64]) -> f64 {
    let (x1, x2) = (x[0], x[1]);
    let f1 = (-13.0 + x1) + ((5.0 - x2) * x2 - 2.0) * x2;
    let f2 = (-29.0 + x1) + ((x2 + 1.0) * x2 - 14.0) * x2;
    sq(f1) + sq(f2)
}

/// MGH 3, Powell badly scaled.
pub fn powell_badly_scaled(x: &[f64]) -> f64 {
    let f1 = 10000.0 * x[0] * x[1] - 1.0;
    let f2 = ((-x[0]).exp() + (-x[1]).exp()) - 1.0001;
    sq(f1) + sq(f2)
}

/// MGH 4, Brown badly scaled.
pub fn brown_badly_scaled(x: &[f64]) -> f64 {
    sq(x[0] - 1e6) + sq(x[1] - 2e-6) + sq(x[0] * x[1] - 2.0)
}

/// MGH 5, Beale.
pub fn beale(x: &[f64]) -> f64 {
    [1.5, 2.25, 2.625].iter().zip(1..).fold(0.0, |acc, (y, i)| acc + sq(y - x[0] * (1.0 - x[1].powi(i))))
}

/// MGH 6, Jennrich and Sampson (m = 10).
pub fn jennrich_sampson(x: &[f64]) -> f64 {
    (1..=10).fold(0.0, |acc, i| {
        let fi = i as f64;
        acc + sq((2.0 + 2.0 * fi) - ((fi * x[0]).exp() + (fi * x[1]).exp()))
    })
}

/// MGH 7, Helical valley.
pub fn helical_valley(x: &[f64]) -> f64 {
    let (x1, x2, x3) = (x[0], x[1], x[2]);
    let shift = if x1 < 0.0 { 0.5 } else { 0.0 };
    let theta = (x2 / x1).atan() / std::f64::consts::TAU + shift;
    let f1 = 10.0 * (x3 - 10.0 * theta);
    let f2 = 10.0 * ((x1 * x1 + x2 * x2).sqrt() - 1.0);
    sq(f1) + sq(f2) + sq(x3)
}

/// MGH 8, Bard.
pub fn bard(x: &[f64]) -> f64 {
    BARD_Y.iter().zip(1..).fold(0.0, |acc, (&y, i)| {
        let u = i as f64;
        let v = 16.0 - u;
        let w = u.min(v);
        acc + sq(y - (x[0] + u / (v * x[1] + w * x[2])))
    })
}

/// MGH 9, Gaussian.
pub fn gaussian(x: &[f64]) -> f64 {
    GAUSSIAN_Y.iter().zip(1..).fold(0.0, |acc, (&y, i)| {
        let t = f64::from(8 - i) / 2.0;
        let d = t - x[2];
        acc + sq(x[0] * (-0.5 * x[1] * (d * d)).exp() - y)
    })
}

/// MGH 10, Meyer.
pub fn meyer(x: &[f64]) -> f64 {
    MEYER_Y.iter().zip(1..).fold(0.0, |acc, (&y, i)| {
        let t = 45.0 + 5.0 * f64::from(i);
        acc + sq(x[0] * (x[1] / (t + x[2])).exp() - y)
    })
}

/// MGH 11, Gulf research and development (m = 99).
pub fn gulf(x: &[f64]) -> f64 {
    (1..=99).fold(0.0, |acc, i| {
        let t = f64::from(i) / 100.0;
        let y = 25.0 + (-50.0 * t.ln()).powf(0.6666666666666666);
        let w = (y - x[1]).abs().powf(x[2]);
        acc + sq((-(w / x[0])).exp() - t)
    })
}

/// MGH 12, Box three-dimensional (m = 10).
pub fn box_3d(x: &[f64]) -> f64 {
    (1..=10).fold(0.0, |acc, i| {
        let nt = -(0.1 * f64::from(i));
        let k = nt.exp() - (10.0 * nt).exp();
        acc + sq(((nt * x[0]).exp() - (nt * x[1]).exp()) - x[2] * k)
    })
}

/// One block of Powell's singular function: `f1^2 + f2^2 + f3^2 + f4^2` at `(a, b, c, d)`.
fn powell_block(a: f64, b: f64, c: f64, d: f64) -> f64 {
    let f1 = a + 10.0 * b;
    let q2 = 5.0 * sq(c - d);
    let f3 = sq(b - 2.0 * c);
    let q4 = 10.0 * sq(sq(a - d));
    sq(f1) + q2 + sq(f3) + q4
}

/// MGH 13, Powell singular.
pub fn powell_singular(x: &[f64]) -> f64 {
    powell_block(x[0], x[1], x[2], x[3])
}

/// MGH 14, Wood.
pub fn wood(x: &[f64]) -> f64 {
    let (x1, x2, x3, x4) = (x[0], x[1], x[2], x[3]);
    100.0 * sq(x2 - x1 * x1)
        + sq(1.0 - x1)
        + 90.0 * sq(x4 - x3 * x3)
        + sq(1.0 - x3)
        + 10.0 * sq((x2 + x4) - 2.0)
        + 0.1 * sq(x2 - x4)
}

/// MGH 15, Kowalik and Osborne.
pub fn kowalik_osborne(x: &[f64]) -> f64 {
    KOWALIK_U.iter().zip(&KOWALIK_Y).fold(0.0, |acc, (&u, &y)| {
        let u2 = u * u;
        acc + sq(y - (x[0] * (u2 + u * x[1])) / ((u2 + u * x[2]) + x[3]))
    })
}

/// MGH 16, Brown and Dennis (m = 20).
pub fn brown_dennis(x: &[f64]) -> f64 {
    (1..=20).fold(0.0, |acc, i| {
        let t = f64::from(i) / 5.0;
        let a = (x[0] + t * x[1]) - t.exp();
        let b = (x[2] + x[3] * t.sin()) - t.cos();
        acc + sq(sq(a) + sq(b))
    })
}

/// MGH 17, Osborne 1.
pub fn osborne1(x: &[f64]) -> f64 {
    OSBORNE1_Y.iter().zip(0..).fold(0.0, |acc, (&y, i)| {
        let t = 10.0 * f64::from(i);
        acc + sq(y - ((x[0] + x[1] * (-(t * x[3])).exp()) + x[2] * (-(t * x[4])).exp()))
    })
}

/// MGH 18, Biggs EXP6 (m = 13).
pub fn biggs_exp6(x: &[f64]) -> f64 {
    (1..=13).fold(0.0, |acc, i| {
        let nt = -(0.1 * f64::from(i));
        let y = (nt.exp() - 5.0 * (10.0 * nt).exp()) + 3.0 * (4.0 * nt).exp();
        let model = (x[2] * (nt * x[0]).exp() - x[3] * (nt * x[1]).exp()) + x[5] * (nt * x[4]).exp();
        acc + sq(model - y)
    })
}

/// MGH 19, Osborne 2.
pub fn osborne2(x: &[f64]) -> f64 {
    let bump = |t: f64, a: usize, b: usize, c: usize| x[a] * (-(sq(t - x[c]) * x[b])).exp();
    OSBORNE2_Y.iter().zip(0..).fold(0.0, |acc, (&y, i)| {
        let t = f64::from(i) / 10.0;
        let model = ((x[0] * (-(t * x[4])).exp() + bump(t, 1, 5, 8)) + bump(t, 2, 6, 9)) + bump(t, 3, 7, 10);
        acc + sq(y - model)
    })
}

/// MGH 20, Watson (n = `x.len()`).
pub fn watson(x: &[f64]) -> f64 {
    let rows = (1..=29).fold(0.0, |acc, i| {
        let t = f64::from(i) / 29.0;
        let (mut p, mut q, mut s1, mut s2) = (1.0, 0.0, 0.0, 0.0);
        for (j, &xj) in x.iter().enumerate() {
            s1 += (j as f64 * q) * xj;
            s2 += xj * p;
            q = p;
            p *= t;
        }
        acc + sq((s1 - s2 * s2) - 1.0)
    });
    let q30 = x[0] * x[0];
    (rows + q30) + sq((x[1] - q30) - 1.0)
}

/// MGH 21, Extended Rosenbrock (n = `x.len()`, even).
pub fn extended_rosenbrock(x: &[f64]) -> f64 {
    x.chunks_exact(2).fold(0.0, |acc, p| acc + (sq(10.0 * (p[1] - p[0] * p[0])) + sq(1.0 - p[0])))
}

/// MGH 22, Extended Powell singular (n = `x.len()`, a multiple of 4).
pub fn extended_powell(x: &[f64]) -> f64 {
    x.chunks_exact(4).fold(0.0, |acc, p| acc + powell_block(p[0], p[1], p[2], p[3]))
}

/// MGH 23, Penalty function I (n = `x.len()`).
pub fn penalty1(x: &[f64]) -> f64 {
    let (pen, s) = x.iter().fold((0.0, 0.0), |(pen, s), &xi| (pen + sq(xi - 1.0), s + xi * xi));
    1e-5 * pen + sq(s - 0.25)
}

/// MGH 24, Penalty function II (n = `x.len()` >= 2).
pub fn penalty2(x: &[f64]) -> f64 {
    let n = x.len() as f64;
    let eneg = (-0.1f64).exp();
    let mut g = (x[0] * 0.1).exp();
    let (mut s, mut t, mut w) = (0.0, 0.0, n * x[0] * x[0]);
    for (i, &xi) in x.iter().enumerate().skip(1) {
        let gi = (xi * 0.1).exp();
        let fi = i as f64;
        let y = ((fi + 1.0) * 0.1).exp() + (fi * 0.1).exp();
        s += sq((gi + g) - y);
        t += sq(gi - eneg);
        w += (n - fi) * xi * xi;
        g = gi;
    }
    (sq(x[0] - 0.2) + 1e-5 * (s + t)) + sq(w - 1.0)
}

/// MGH 25, Variably dimensioned (n = `x.len()`).
pub fn variably_dimensioned(x: &[f64]) -> f64 {
    let (q, v) = x.iter().zip(1..).fold((0.0, 0.0), |(q, v), (&xi, j)| {
        let d = xi - 1.0;
        (q + d * d, v + f64::from(j) * d)
    });
    let v2 = v * v;
    (q + v2) + v2 * v2
}

/// MGH 26, Trigonometric (n = `x.len()`).
pub fn trigonometric(x: &[f64]) -> f64 {
    let n = x.len() as f64;
    let c = x.iter().fold(0.0, |c, xi| c + xi.cos());
    x.iter().zip(1..).fold(0.0, |acc, (&xk, k)| acc + sq(((n - c) + f64::from(k) * (1.0 - xk.cos())) - xk.sin()))
}

/// MGH 27, Brown almost-linear (n = `x.len()`).
pub fn brown_almost_linear(x: &[f64]) -> f64 {
    let n = x.len();
    let (s, p) = x.iter().fold((0.0, 1.0), |(s, p), &xi| (s + xi, p * xi));
    let np1 = n as f64 + 1.0;
    let rows = x[..n - 1].iter().fold(0.0, |acc, &xk| acc + sq((xk + s) - np1));
    rows + sq(p - 1.0)
}

/// `x[i]`, or 0 outside `x` (the boundary values of MGH 28 and 30).
fn at(x: &[f64], i: usize) -> f64 {
    x.get(i).copied().unwrap_or(0.0)
}

/// MGH 28, Discrete boundary value (n = `x.len()`).
pub fn discrete_boundary_value(x: &[f64]) -> f64 {
    let h = 1.0 / (x.len() as f64 + 1.0);
    let h2 = h * h;
    (0..x.len()).fold(0.0, |acc, i| {
        let prev = if i == 0 { 0.0 } else { x[i - 1] };
        let t = (i + 1) as f64 * h;
        let u = (x[i] + t) + 1.0;
        let w = h2 * (u * u * u) * 0.5;
        acc + sq(((2.0 * x[i] - prev) - at(x, i + 1)) + w)
    })
}

/// MGH 29, Discrete integral equation (n = `x.len()`), with running sums.
pub fn discrete_integral_equation(x: &[f64]) -> f64 {
    let h = 1.0 / (x.len() as f64 + 1.0);
    let cube = |j: usize| {
        let t = (j + 1) as f64 * h;
        let u = (x[j] + t) + 1.0;
        (t, u * u * u)
    };
    let mut b = (0..x.len()).fold(0.0, |b, j| {
        let (t, c) = cube(j);
        b + (1.0 - t) * c
    });
    let mut a = 0.0;
    (0..x.len()).fold(0.0, |acc, i| {
        let (t, c) = cube(i);
        a += t * c;
        b -= (1.0 - t) * c;
        acc + sq(x[i] + h * ((1.0 - t) * a + t * b) * 0.5)
    })
}

/// MGH 30, Broyden tridiagonal (n = `x.len()`).
pub fn broyden_tridiagonal(x: &[f64]) -> f64 {
    (0..x.len()).fold(0.0, |acc, i| {
        let prev = if i == 0 { 0.0 } else { x[i - 1] };
        acc + sq((((3.0 - 2.0 * x[i]) * x[i] - prev) - 2.0 * at(x, i + 1)) + 1.0)
    })
}

/// MGH 31, Broyden banded (n = `x.len()`).
pub fn broyden_banded(x: &[f64]) -> f64 {
    let n = x.len();
    (0..n).fold(0.0, |acc, i| {
        let band =
            (i.saturating_sub(5)..(i + 2).min(n)).fold(0.0, |s, j| if j == i { s } else { s + x[j] * (1.0 + x[j]) });
        acc + sq((x[i] * (2.0 + 5.0 * (x[i] * x[i])) + 1.0) - band)
    })
}

/// MGH 32, Linear function - full rank (n = `x.len()`, m = 2n).
pub fn linear_full_rank(x: &[f64]) -> f64 {
    let m = 2.0 * x.len() as f64;
    let s = x.iter().sum::<f64>();
    let c = (2.0 * s) / m + 1.0;
    let rows = x.iter().fold(0.0, |acc, &xk| acc + sq(xk - c));
    rows + (m - x.len() as f64) * (c * c)
}

/// MGH 33, Linear function - rank 1 (n = `x.len()`, m = 2n).
pub fn linear_rank1(x: &[f64]) -> f64 {
    let s = x.iter().zip(1..).fold(0.0, |s, (&xj, j)| s + f64::from(j) * xj);
    (1..=2 * x.len()).fold(0.0, |acc, i| acc + sq(i as f64 * s - 1.0))
}

/// MGH 34, Linear function - rank 1 with zero columns and rows (n = `x.len()`, m = 2n).
pub fn linear_rank1_zero(x: &[f64]) -> f64 {
    let n = x.len();
    let s = (1..n - 1).fold(0.0, |s, j| s + (j + 1) as f64 * x[j]);
    (2..2 * n).fold(0.0, |acc, i| acc + sq((i - 1) as f64 * s - 1.0)) + 2.0
}

/// MGH 35, Chebyquad (n = `x.len()`, m = n).
pub fn chebyquad(x: &[f64]) -> f64 {
    let n = x.len();
    (1..=n).fold(0.0, |acc, i| {
        let sum = x.iter().fold(0.0, |s, &xj| {
            let y = 2.0 * xj - 1.0;
            let (mut a, mut b) = (1.0, y);
            for _ in 1..i {
                (a, b) = (b, (2.0 * y) * b - a);
            }
            s + b
        });
        let exact = if i % 2 == 1 { 0.0 } else { -(1.0 / ((i * i) as f64 - 1.0)) };
        acc + sq(sum / n as f64 - exact)
    })
}
