//! Derived forward-mode IR runs identically under the interpreter and the JIT, at every width.

use jitdiff::ForwardFn;
use jitdiff::ad::derive_forward;
use jitdiff::ir::{ArgValue, ExternRegistry, Interpreter, RuntimeValue, parse_module, print_module};
use jitdiff::jit::{Arg, JitOptions, compile};
use jitdiff_problems::{Gmm, Mlp, Pendulum, Problem, Rosenbrock, SplitMix64};

fn check(problem: &dyn Problem, width: u8) {
    let module = parse_module(problem.ir()).unwrap();
    let args = problem.args();
    let wrt: Vec<bool> = (0..args.len()).map(|i| problem.active_params().contains(&i)).collect();
    let derived = derive_forward(&module, problem.entry(), &wrt, width).unwrap();
    let mut rng = SplitMix64::new(u64::from(width));
    let mut all = args.clone();
    for (a, _) in args.iter().zip(&wrt).filter(|(_, on)| **on) {
        let n = match a {
            ArgValue::F64(_) => 1,
            other => other.as_slice().unwrap().len(),
        } * width as usize;
        let t: Vec<f64> = (0..n).map(|_| rng.uniform_in(-1.0, 1.0)).collect();
        all.push(match (a, width) {
            (ArgValue::F64(_), 1) => ArgValue::F64(t[0]),
            (ArgValue::F64(_), _) => ArgValue::Vector(t),
            _ => ArgValue::Slice(t),
        });
    }
    let expected = Interpreter::new(&derived.module).call(&derived.name, &mut all.clone()).unwrap();
    let compiled = compile(&derived.module, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    let f = compiled.function(&derived.name).unwrap();
    let mut native_args: Vec<Arg<'_>> = all
        .iter()
        .map(|a| match a {
            ArgValue::F64(x) => Arg::F64(*x),
            ArgValue::I64(x) => Arg::I64(*x),
            ArgValue::Bool(x) => Arg::Bool(*x),
            ArgValue::Vector(v) => Arg::Vector(v),
            ArgValue::Slice(v) | ArgValue::SliceMut(v) => Arg::Slice(v),
        })
        .collect();
    let got = f.call(&mut native_args).unwrap();
    assert_eq!(got, expected, "{} at width {width}", problem.label());
    assert!(matches!(got.last(), Some(RuntimeValue::F64(_) | RuntimeValue::Vector(_))));
}

#[test]
fn derived_forward_ir_agrees_between_interpreter_and_jit() {
    for width in [1, 2, 4, 8, 16] {
        check(&Rosenbrock::new(50), width);
        check(&Gmm::generate(2, 3, 20, 5), width);
        check(&Pendulum::with_steps(50), width);
        check(&Mlp::generate(4, 5, 6, 9), width);
    }
}

/// Partials that are infinite at the point: `sqrt` at 0, `asin` at 1, and the base of
/// `pow(x - x, z)` at z = -2 (whose base tangent `dx - dx` is 0 in every direction).
const INFINITE_PARTIALS: &str = "
func @f(x: f64, y: f64, z: f64) -> f64, f64 {
entry:
    s = sqrt x
    a = asin y
    d = fsub x, x
    p = pow d, z
    r = fadd s, a
    q = fadd p, x
    ret r, q
}";

/// Directions (dx, dy, dz): each component is +0 in some, -0 in one and non-zero in others;
/// direction 0 is all zero.
const DIRECTIONS: [[f64; 3]; 8] = [
    [0.0, 0.0, 0.0],
    [1.5, 0.0, -1.0],
    [-0.0, 2.0, 0.0],
    [0.0, 0.0, 1.5],
    [0.0, -1.0, -0.0],
    [2.0, -0.0, -0.25],
    [0.0, 1.5, 0.0],
    [-1.0, 0.0, 2.0],
];

#[test]
fn batched_strong_zero_lanes_equal_the_scalar_sweeps_bit_for_bit() {
    let m = parse_module(INFINITE_PARTIALS).unwrap();
    let point = [0.0, 1.0, -2.0];
    let scalar = ForwardFn::builder(&m, "f").wrt_mask(&[true, true, true]).width(1).build().unwrap();
    // Every width multiplies by the strong-zero product (`fmulsz`, lane-wise at W > 1).
    assert!(print_module(&scalar.derivative().module).contains("fmulsz"));
    let sweep = |f: &ForwardFn, tangents: &mut [Vec<f64>]| {
        let views: Vec<&[f64]> = tangents.iter().map(Vec::as_slice).collect();
        let args = &mut [Arg::F64(point[0]), Arg::F64(point[1]), Arg::F64(point[2])];
        f.jvp(args, &views).unwrap().1
    };
    for width in [4usize, 8] {
        let batched = ForwardFn::builder(&m, "f").wrt_mask(&[true, true, true]).width(width as u8).build().unwrap();
        assert!(print_module(&batched.derivative().module).contains("fmulsz"));
        // Tangent of parameter j, lane l: component j of direction l.
        let mut lanes: Vec<Vec<f64>> = (0..3).map(|j| (0..width).map(|l| DIRECTIONS[l][j]).collect()).collect();
        let got = sweep(&batched, &mut lanes);
        let mut zero_lanes = 0;
        for lane in 0..width {
            let d = DIRECTIONS[lane];
            let want = sweep(&scalar, &mut d.map(|t| vec![t]));
            for k in 0..2 {
                let have = got[k * width + lane];
                assert_eq!(have.to_bits(), want[k].to_bits(), "W = {width}, result {k}, lane {lane} ({d:?})");
            }
            // Where every tangent is zero, so is every output tangent (not NaN from 0 · inf).
            if d.iter().all(|&t| t == 0.0) {
                assert_eq!([got[lane].to_bits(), got[width + lane].to_bits()], [0, 0], "W = {width}, lane {lane}");
                zero_lanes += 1;
            }
            // pow's base tangent is dx - dx = 0 in every lane: q's tangent is exactly dx.
            assert_eq!(got[width + lane], d[0], "W = {width}, lane {lane}");
        }
        assert!(zero_lanes >= 1, "W = {width}: no all-zero direction among the lanes");
    }
}
