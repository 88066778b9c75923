//! The table of problems: sizes, starting points, published values.

// The minimisers are MINPACK-1's printed digits, kept as printed (some have one digit more than an
// f64 holds).
#![allow(clippy::excessive_precision)]

use super::values as v;
use super::{MghProblem, problem};

/// `(j / (n + 1)) (j / (n + 1) - 1)`, j = 1 .. n: the start of problems 28 and 29.
fn grid_start(n: usize) -> Vec<f64> {
    let h = 1.0 / (n as f64 + 1.0);
    (1..=n).map(|j| (j as f64 * h) * (j as f64 * h - 1.0)).collect()
}

/// `pattern` repeated to length `n`.
fn repeat(pattern: &[f64], n: usize) -> Vec<f64> {
    pattern.iter().copied().cycle().take(n).collect()
}

macro_rules! ir {
    ($file:literal) => {
        include_str!(concat!("../../ir/mgh/", $file))
    };
}

/// The table: 35 problems of the paper, in its order, at the sizes of its tests (variable
/// dimensions at n = 10 unless noted; the linear functions at n = 5, m = 10 as in MINPACK-1).
pub fn problems() -> Vec<MghProblem> {
    vec![
        problem(
            1,
            "Rosenbrock",
            ir!("01_rosenbrock.ir"),
            vec![-1.2, 1.0],
            Some(24.2),
            0.0,
            "0 at (1, 1)",
            Some(vec![1.0, 1.0]),
            v::rosenbrock,
        ),
        // MINPACK-1: initial norm 0.200124960962e2, final 0.699887517585e1 at the local minimiser.
        problem(
            2,
            "Freudenstein and Roth",
            ir!("02_freudenstein_roth.ir"),
            vec![0.5, -2.0],
            Some(400.5),
            48.9842,
            "0 at (5, 4); 48.9842... at (11.41..., -0.8968...) (local)",
            Some(vec![11.41248446549937, -0.8968279137315035]),
            v::freudenstein_roth,
        )
        .or_stops_at(&[0.0]),
        // Closed form: f1 = -1, f2 = 1 + e^-1 - 1.0001.
        problem(
            3,
            "Powell badly scaled",
            ir!("03_powell_badly_scaled.ir"),
            vec![0.0, 1.0],
            Some(1.0 + ((-1f64).exp() - 1e-4).powi(2)),
            0.0,
            "0 at (1.098...e-5, 9.106...)",
            None,
            v::powell_badly_scaled,
        ),
        // Closed form: (1 - 1e6)^2 + (1 - 2e-6)^2 + 1.
        problem(
            4,
            "Brown badly scaled",
            ir!("04_brown_badly_scaled.ir"),
            vec![1.0, 1.0],
            Some(999998000002.999996),
            0.0,
            "0 at (1e6, 2e-6)",
            Some(vec![1e6, 2e-6]),
            v::brown_badly_scaled,
        ),
        // Closed form: the model x1 (1 - x2^i) vanishes at x2 = 1, so F = 1.5^2 + 2.25^2 + 2.625^2.
        problem(
            5,
            "Beale",
            ir!("05_beale.ir"),
            vec![1.0, 1.0],
            Some(14.203125),
            0.0,
            "0 at (3, 0.5)",
            Some(vec![3.0, 0.5]),
            v::beale,
        ),
        problem(
            6,
            "Jennrich and Sampson (m = 10)",
            ir!("06_jennrich_sampson.ir"),
            vec![0.3, 0.4],
            None,
            124.362,
            "124.362 at x1 = x2 = 0.2578",
            Some(vec![0.2578199266367936, 0.2578299767645596]),
            v::jennrich_sampson,
        ),
        // MINPACK-1: initial norm 50.
        problem(
            7,
            "Helical valley",
            ir!("07_helical_valley.ir"),
            vec![-1.0, 0.0, 0.0],
            Some(2500.0),
            0.0,
            "0 at (1, 0, 0)",
            Some(vec![1.0, 0.0, 0.0]),
            v::helical_valley,
        ),
        // MINPACK-1: initial norm 0.6456136295159668e1, final 0.9063596033904667e-1.
        problem(
            8,
            "Bard",
            ir!("08_bard.ir"),
            vec![1.0; 3],
            Some(6.456136295159668f64.powi(2)),
            8.21487e-3,
            "8.21487e-3; 17.4286 at (0.8406, -inf, -inf)",
            Some(vec![0.8241057657583339e-1, 0.1133036653471504e1, 0.2343694638941154e1]),
            v::bard,
        )
        .or_stops_at(&[17.4286]),
        problem(
            9,
            "Gaussian",
            ir!("09_gaussian.ir"),
            vec![0.4, 1.0, 0.0],
            None,
            1.12793e-8,
            "1.12793e-8",
            None,
            v::gaussian,
        ),
        // MINPACK-1: initial norm 0.4115346655430312e5, final 0.9377945146518742e1.
        problem(
            10,
            "Meyer",
            ir!("10_meyer.ir"),
            vec![0.02, 4000.0, 250.0],
            Some(0.4115346655430312e5f64.powi(2)),
            87.9458,
            "87.9458",
            Some(vec![0.5609636471026654e-2, 0.6181346346286586e4, 0.3452236346241439e3]),
            v::meyer,
        ),
        problem(
            11,
            "Gulf research and development (m = 99)",
            ir!("11_gulf.ir"),
            vec![5.0, 2.5, 0.15],
            None,
            0.0,
            "0 at (50, 25, 1.5)",
            Some(vec![50.0, 25.0, 1.5]),
            v::gulf,
        ),
        problem(
            12,
            "Box three-dimensional (m = 10)",
            ir!("12_box_3d.ir"),
            vec![0.0, 10.0, 20.0],
            None,
            0.0,
            "0 at (1, 10, 1), (10, 1, -1) and wherever x1 = x2, x3 = 0",
            Some(vec![1.0, 10.0, 1.0]),
            v::box_3d,
        ),
        // Closed form: 49 + 5 + 1 + 160.
        problem(
            13,
            "Powell singular",
            ir!("13_powell_singular.ir"),
            vec![3.0, -1.0, 0.0, 1.0],
            Some(215.0),
            0.0,
            "0 at the origin",
            Some(vec![0.0; 4]),
            v::powell_singular,
        ),
        // Closed form: 10000 + 16 + 9000 + 16 + 160 + 0.
        problem(
            14,
            "Wood",
            ir!("14_wood.ir"),
            vec![-3.0, -1.0, -3.0, -1.0],
            Some(19192.0),
            0.0,
            "0 at (1, 1, 1, 1)",
            Some(vec![1.0; 4]),
            v::wood,
        ),
        // MINPACK-1: initial norm 0.7289151028829448e-1, final 0.1753583772112895e-1.
        problem(
            15,
            "Kowalik and Osborne",
            ir!("15_kowalik_osborne.ir"),
            vec![0.25, 0.39, 0.415, 0.39],
            Some(0.7289151028829448e-1f64.powi(2)),
            3.07505e-4,
            "3.07505e-4; 1.02734e-3 at (+inf, -14.07..., -inf, -inf)",
            Some(vec![0.1928078104762493, 0.1912626533540709, 0.1230528010469309, 0.1360532211505167]),
            v::kowalik_osborne,
        )
        .or_stops_at(&[1.02734e-3]),
        problem(
            16,
            "Brown and Dennis (m = 20)",
            ir!("16_brown_dennis.ir"),
            vec![25.0, 5.0, -5.0, -1.0],
            None,
            85822.2,
            "85822.2",
            Some(vec![-0.1159125521567487e2, 0.1320248976116189e2, -0.4035744915102742, 0.2367363118370096]),
            v::brown_dennis,
        ),
        problem(
            17,
            "Osborne 1",
            ir!("17_osborne1.ir"),
            vec![0.5, 1.5, -1.0, 0.01, 0.02],
            None,
            5.46489e-5,
            "5.46489e-5",
            Some(vec![
                0.3754100492440257,
                0.1935846545431133e1,
                -0.1464686767487213e1,
                0.1286753391104403e-1,
                0.2212270118130737e-1,
            ]),
            v::osborne1,
        ),
        // The paper's 5.65565e-3 for m = 13 is the local minimum (near x1 = x5, x3 = x6) that
        // quasi-Newton methods reach from x0; the zero at (1, 10, 1, 5, 4, 3) is global.
        problem(
            18,
            "Biggs EXP6 (m = 13)",
            ir!("18_biggs_exp6.ir"),
            vec![1.0, 2.0, 1.0, 1.0, 1.0, 1.0],
            None,
            5.65565e-3,
            "5.65565e-3 (m = 13); 0 at (1, 10, 1, 5, 4, 3)",
            None,
            v::biggs_exp6,
        )
        .or_stops_at(&[0.0]),
        problem(
            19,
            "Osborne 2",
            ir!("19_osborne2.ir"),
            vec![1.3, 0.65, 0.65, 0.7, 0.6, 3.0, 5.0, 7.0, 2.0, 4.5, 5.5],
            None,
            4.01377e-2,
            "4.01377e-2",
            Some(vec![
                0.1309976638100963e1,
                0.4315524807599996,
                0.6336612616028594,
                0.5994285609916951,
                0.7541797682724486,
                0.9043000823785187,
                0.1365799495210074e1,
                0.4823731997481072e1,
                0.2398684751048711e1,
                0.4568875547914517e1,
                0.5675342062730520e1,
            ]),
            v::osborne2,
        ),
        // MINPACK-1: initial norm 0.5477225575051661e1 (F = 30), final 0.4782959390976008e-1.
        problem(
            20,
            "Watson (n = 6)",
            ir!("20_watson.ir"),
            vec![0.0; 6],
            Some(30.0),
            2.28767e-3,
            "2.28767e-3 (n = 6); 1.39976e-6 (n = 9); 4.72238e-10 (n = 12)",
            Some(vec![
                -0.1572496150837821e-1,
                0.1012434882329655e1,
                -0.2329917223876743,
                0.1260431011028187e1,
                -0.1513730313944210e1,
                0.9929972729184218,
            ]),
            v::watson,
        ),
        // MINPACK-1: initial norm 0.5477225575051661e1 (F = 30), final 0.1183114592124197e-2.
        problem(
            20,
            "Watson (n = 9)",
            ir!("20_watson.ir"),
            vec![0.0; 9],
            Some(30.0),
            1.39976e-6,
            "2.28767e-3 (n = 6); 1.39976e-6 (n = 9); 4.72238e-10 (n = 12)",
            Some(vec![
                -0.1530706441663782e-4,
                0.9997897039345963,
                0.1476396349113067e-1,
                0.1463423301456550,
                0.1000821094549679e1,
                -0.2617731120708589e1,
                0.4104403139437982e1,
                -0.3143612262365286e1,
                0.1052626403788335e1,
            ]),
            v::watson,
        ),
        // Closed form: 5 pairs of 24.2.
        problem(
            21,
            "Extended Rosenbrock (n = 10)",
            ir!("21_extended_rosenbrock.ir"),
            repeat(&[-1.2, 1.0], 10),
            Some(121.0),
            0.0,
            "0 at (1, ..., 1)",
            Some(vec![1.0; 10]),
            v::extended_rosenbrock,
        ),
        // Closed form: 3 blocks of 215.
        problem(
            22,
            "Extended Powell singular (n = 12)",
            ir!("22_extended_powell.ir"),
            repeat(&[3.0, -1.0, 0.0, 1.0], 12),
            Some(645.0),
            0.0,
            "0 at the origin",
            Some(vec![0.0; 12]),
            v::extended_powell,
        ),
        // Closed form: 1e-5 * 285 + (385 - 1/4)^2.
        problem(
            23,
            "Penalty I (n = 10)",
            ir!("23_penalty1.ir"),
            (1..=10).map(f64::from).collect(),
            Some(1e-5 * 285.0 + 384.75f64.powi(2)),
            7.08765e-5,
            "2.24997e-5 (n = 4); 7.08765e-5 (n = 10)",
            None,
            v::penalty1,
        ),
        problem(
            24,
            "Penalty II (n = 10)",
            ir!("24_penalty2.ir"),
            vec![0.5; 10],
            None,
            2.93660e-4,
            "9.37629e-6 (n = 4); 2.93660e-4 (n = 10)",
            None,
            v::penalty2,
        ),
        // Closed form: sum (j/10)^2 + v^2 + v^4 with v = -38.5.
        problem(
            25,
            "Variably dimensioned (n = 10)",
            ir!("25_variably_dimensioned.ir"),
            (1..=10).map(|j| 1.0 - f64::from(j) / 10.0).collect(),
            Some(3.85 + 38.5f64.powi(2) + 38.5f64.powi(4)),
            0.0,
            "0 at (1, ..., 1)",
            Some(vec![1.0; 10]),
            v::variably_dimensioned,
        ),
        // The paper gives only the zero. From x0, BFGS stops at a local minimum of 2.795056e-5
        // (gradient below 3e-9; checked when this table was written).
        problem(
            26,
            "Trigonometric (n = 10)",
            ir!("26_trigonometric.ir"),
            vec![0.1; 10],
            None,
            0.0,
            "0; from x0 quasi-Newton methods stop at the local minimum 2.79506e-5 (n = 10; not in the paper)",
            None,
            v::trigonometric,
        )
        .or_stops_at(&[2.79506e-5]),
        // Closed form: 9 * 5.5^2 + (2^-10 - 1)^2.
        problem(
            27,
            "Brown almost-linear (n = 10)",
            ir!("27_brown_almost_linear.ir"),
            vec![0.5; 10],
            Some(9.0 * 30.25 + (1.0 - 0.5f64.powi(10)).powi(2)),
            0.0,
            "0 at (a, ..., a, a^(1-n)), n a^n - (n+1) a^(n-1) + 1 = 0; 1 at (0, ..., 0, n+1)",
            Some(repeat(&[0.9794303033498624], 9).into_iter().chain([0.1205696966501376e1]).collect()),
            v::brown_almost_linear,
        )
        .or_stops_at(&[1.0]),
        problem(
            28,
            "Discrete boundary value (n = 10)",
            ir!("28_discrete_boundary_value.ir"),
            grid_start(10),
            None,
            0.0,
            "0",
            None,
            v::discrete_boundary_value,
        ),
        problem(
            29,
            "Discrete integral equation (n = 10)",
            ir!("29_discrete_integral_equation.ir"),
            grid_start(10),
            None,
            0.0,
            "0",
            None,
            v::discrete_integral_equation,
        ),
        problem(
            30,
            "Broyden tridiagonal (n = 10)",
            ir!("30_broyden_tridiagonal.ir"),
            vec![-1.0; 10],
            None,
            0.0,
            "0",
            None,
            v::broyden_tridiagonal,
        ),
        problem(
            31,
            "Broyden banded (n = 10)",
            ir!("31_broyden_banded.ir"),
            vec![-1.0; 10],
            None,
            0.0,
            "0",
            None,
            v::broyden_banded,
        ),
        // MINPACK-1: initial norm 5 (F = 25), final 0.2236068e1 (F = 5).
        problem(
            32,
            "Linear function - full rank (n = 5, m = 10)",
            ir!("32_linear_full_rank.ir"),
            vec![1.0; 5],
            Some(25.0),
            5.0,
            "m - n at (-1, ..., -1)",
            Some(vec![-1.0; 5]),
            v::linear_full_rank,
        ),
        // MINPACK-1: initial norm 0.2915218688e3, final 0.1463850109e1; f* = m(m-1)/(2(2m+1)).
        problem(
            33,
            "Linear function - rank 1 (n = 5, m = 10)",
            ir!("33_linear_rank1.ir"),
            vec![1.0; 5],
            Some(0.2915218688e3f64.powi(2)),
            90.0 / 42.0,
            "m(m-1)/(2(2m+1)) where sum j x_j = 3/(2m+1)",
            Some(vec![3.0 / 21.0, 0.0, 0.0, 0.0, 0.0]),
            v::linear_rank1,
        ),
        // MINPACK-1: initial norm 0.1260396763e3, final 0.1909727421e1; f* = (m^2+3m-6)/(2(2m-3)).
        problem(
            34,
            "Linear function - rank 1, zero columns and rows (n = 5, m = 10)",
            ir!("34_linear_rank1_zero.ir"),
            vec![1.0; 5],
            Some(0.1260396763e3f64.powi(2)),
            124.0 / 34.0,
            "(m^2+3m-6)/(2(2m-3)) where sum_{j=2..n-1} j x_j = 3/(2m-3)",
            Some(vec![0.0, 3.0 / 34.0, 0.0, 0.0, 0.0]),
            v::linear_rank1_zero,
        ),
        problem(
            35,
            "Chebyquad (n = 8)",
            ir!("35_chebyquad.ir"),
            (1..=8).map(|j| f64::from(j) / 9.0).collect(),
            None,
            3.51687e-3,
            "0 (n = 1 .. 7, 9); 3.51687e-3 (n = 8); 6.50395e-3 (n = 10)",
            Some(vec![
                0.4315366485873882e-1,
                0.1930916378432737,
                0.2663285938126948,
                0.4999993346289514,
                0.5000006653710486,
                0.7336714061873052,
                0.8069083621567262,
                0.9568463351412612,
            ]),
            v::chebyquad,
        ),
    ]
}
