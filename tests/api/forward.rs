//! Forward mode against central finite differences, and batched lanes against scalar sweeps, on
//! the benchmark problems (at small sizes), all in the reference interpreter.

use jitdiff::ad::derive_forward;
use jitdiff::ir::{ArgValue, Interpreter, Module, RuntimeValue, parse_module};
use jitdiff_problems::{Gmm, Mlp, Pendulum, Problem, Rosenbrock, SplitMix64, relative_error};

/// Random tangent directions shaped like the active arguments (`None` for inactive ones).
fn directions(args: &[ArgValue], active: &[usize], rng: &mut SplitMix64) -> Vec<Option<Vec<f64>>> {
    args.iter()
        .enumerate()
        .map(|(i, a)| {
            if !active.contains(&i) {
                return None;
            }
            let n = match a {
                ArgValue::F64(_) => 1,
                ArgValue::Slice(v) | ArgValue::SliceMut(v) => v.len(),
                other => panic!("argument {i} ({other:?}) cannot be differentiated"),
            };
            Some((0..n).map(|_| rng.uniform_in(-1.0, 1.0)).collect())
        })
        .collect()
}

/// `args + h * direction`.
fn shifted(args: &[ArgValue], dirs: &[Option<Vec<f64>>], h: f64) -> Vec<ArgValue> {
    args.iter()
        .zip(dirs)
        .map(|(a, d)| match (a, d) {
            (ArgValue::F64(x), Some(d)) => ArgValue::F64(x + h * d[0]),
            (ArgValue::Slice(x), Some(d)) => ArgValue::Slice(x.iter().zip(d).map(|(x, d)| x + h * d).collect()),
            (ArgValue::SliceMut(x), Some(d)) => ArgValue::SliceMut(x.iter().zip(d).map(|(x, d)| x + h * d).collect()),
            (a, _) => a.clone(),
        })
        .collect()
}

fn value(module: &Module, entry: &str, mut args: Vec<ArgValue>) -> f64 {
    match Interpreter::new(module).call(entry, &mut args).expect("primal runs").first() {
        Some(RuntimeValue::F64(v)) => *v,
        other => panic!("expected an f64 result, got {other:?}"),
    }
}

/// The JVP in `lanes` directions at once: primal args, then per active arg its tangent with
/// `lanes` lanes per element (lane-major within an element).
fn jvp(module: &Module, entry: &str, args: &[ArgValue], dirs: &[Vec<Option<Vec<f64>>>]) -> Vec<f64> {
    let lanes = dirs.len();
    let wrt: Vec<bool> = dirs[0].iter().map(Option::is_some).collect();
    let derived = derive_forward(module, entry, &wrt, lanes as u8).expect("derivation succeeds");
    let mut call_args = args.to_vec();
    for (i, a) in args.iter().enumerate() {
        let Some(first) = &dirs[0][i] else { continue };
        let interleaved: Vec<f64> =
            (0..first.len()).flat_map(|e| dirs.iter().map(move |d| d[i].as_ref().unwrap()[e])).collect();
        call_args.push(match (a, lanes) {
            (ArgValue::F64(_), 1) => ArgValue::F64(interleaved[0]),
            (ArgValue::F64(_), _) => ArgValue::Vector(interleaved),
            _ => ArgValue::Slice(interleaved),
        });
    }
    let out = Interpreter::new(&derived.module).call(&derived.name, &mut call_args).expect("derived function runs");
    match &out[1] {
        RuntimeValue::F64(t) => vec![*t],
        RuntimeValue::Vector(t) => t.clone(),
        other => panic!("unexpected tangent {other:?}"),
    }
}

fn check_problem(problem: &dyn Problem, seed: u64) {
    let module = parse_module(problem.ir()).expect("example parses");
    let args = problem.args();
    let mut rng = SplitMix64::new(seed);
    let dirs: Vec<_> = (0..4).map(|_| directions(&args, problem.active_params(), &mut rng)).collect();

    // Scalar sweeps against central differences.
    let scalar: Vec<f64> =
        dirs.iter().map(|d| jvp(&module, problem.entry(), &args, std::slice::from_ref(d))[0]).collect();
    for (d, &ad) in dirs.iter().zip(&scalar) {
        let h = 1e-6;
        let plus = value(&module, problem.entry(), shifted(&args, d, h));
        let minus = value(&module, problem.entry(), shifted(&args, d, -h));
        let fd = (plus - minus) / (2.0 * h);
        let scale = ad.abs().max(fd.abs()).max(1e-3);
        assert!(
            (ad - fd).abs() / scale < 1e-6,
            "{}: JVP {ad} vs central difference {fd} (relative {:.2e})",
            problem.label(),
            (ad - fd).abs() / scale
        );
    }
    // One batched sweep of width 4 equals the four scalar sweeps, lane by lane.
    let batched = jvp(&module, problem.entry(), &args, &dirs);
    for (lane, (b, s)) in batched.iter().zip(&scalar).enumerate() {
        assert!(
            relative_error(*b, *s) <= 2.0 * f64::EPSILON,
            "{}: lane {lane}: batched {b} vs scalar {s}",
            problem.label()
        );
    }
}

#[test]
fn rosenbrock_jvp_matches_finite_differences() {
    for n in [2, 10, 100] {
        check_problem(&Rosenbrock::new(n), n as u64);
    }
}

#[test]
fn gmm_jvp_matches_finite_differences() {
    check_problem(&Gmm::generate(2, 3, 20, 7), 1);
    check_problem(&Gmm::generate(3, 2, 10, 8), 2);
}

#[test]
fn pendulum_jvp_matches_finite_differences() {
    check_problem(&Pendulum::with_steps(100), 3);
}

#[test]
fn mlp_jvp_matches_finite_differences() {
    check_problem(&Mlp::generate(4, 5, 6, 11), 4);
}

#[test]
fn output_independent_of_an_input_has_an_exactly_zero_tangent() {
    let m = parse_module("func @f(x: f64, y: f64) -> f64 {\nentry:\n    s = sin x\n    ret s\n}").unwrap();
    let d = derive_forward(&m, "f", &[true, true], 1).unwrap();
    let out = Interpreter::new(&d.module)
        .call(&d.name, &mut [ArgValue::F64(0.3), ArgValue::F64(2.0), ArgValue::F64(0.0), ArgValue::F64(1.0)])
        .unwrap();
    assert_eq!(out[1], RuntimeValue::F64(0.0));
}
